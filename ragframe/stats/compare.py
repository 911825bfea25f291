"""Paired comparison of two scored frames, with multiple-testing correction.

:func:`compare` joins two scored frames on their sample ids and, for every metric
(and slice with ``by=``), tests whether the mean paired difference ``b - a`` is zero.
Differences of all metrics and slices are laid out as segments of one flat array and
every statistic is computed per segment at once (bincount, segment ranks, shared
resampling matrices), never in a loop over rows: the kernel is
:mod:`ragframe.stats.paired_tests`, the id checks and the join :mod:`ragframe.stats.pairing`.
:func:`compare_runs` is the seed's A/B test of two retrievers, on every ranking measure at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.kernels.groups import group_codes
from ragframe.public import parameter_name, public
from ragframe.schema import first_true_row, to_polars
from ragframe.stats.options import DEFAULTS, ComparisonOptions
from ragframe.stats.paired_tests import (
    COMPARE_COLUMNS,
    CORRECTIONS,
    TESTS,
    Segments,
    adjust_p_values,
    result_frame,
    run_test,
)
from ragframe.stats.pairing import check_ids, compared_metrics, pair_frames, same_id_types
from ragframe.stats.summary import prepare_scores

__all__ = ["compare", "compare_runs", "adjust_p_values", "TESTS", "CORRECTIONS"]


@public
def compare(
    a: Any,
    b: Any,
    /,
    *,
    on: str | Sequence[str] = DEFAULTS.on,
    metrics: str | Sequence[str] | None = DEFAULTS.metrics,
    by: str | Sequence[str] | None = DEFAULTS.by,
    test: str = DEFAULTS.test,
    alpha: float = DEFAULTS.alpha,
    correction: str | None = DEFAULTS.correction,
    how: str = DEFAULTS.how,
    n_resamples: int = DEFAULTS.n_resamples,
    seed: int | None = DEFAULTS.seed,
    samples: str | None = None,
) -> pl.DataFrame:
    """Paired comparison of two scored frames per metric (and slice): is ``b`` different from ``a``?

    The frames come first, ``a`` (the reference) then ``b``; every option is keyword-only,
    named, defaulted and checked as in :class:`ragframe.stats.options.ComparisonOptions`
    (the vocabulary of :func:`compare_runs`, :func:`ragframe.regressions`,
    :func:`ragframe.gate` and :func:`ragframe.distributed.compare_datasets`).

    Parameters
    ----------
    a, b : frame
        Scored frames of two pipelines on the same samples (any frame kind).
    on : str or list of str
        Sample id column(s); ids must be unique and non-null on each side, and of one dtype
        on both (integer widths are widened to Int64; other mismatches raise :class:`SchemaError`).
    metrics : str or list of str, optional
        Score columns to compare, each on both sides. Default: every ragframe score
        column; a score column on one side only raises :class:`SchemaError` naming it (pass
        ``metrics=[...]`` to compare the shared ones), so no metric is dropped unseen.
    by : str or list of str, optional
        Slice columns, taken from ``a``.
    test : {"t", "wilcoxon", "permutation", "bootstrap"}
        Paired Student t (scipy.stats.ttest_rel), Wilcoxon signed-rank
        (scipy.stats.wilcoxon, zero_method="wilcox", method "auto"), the sign-flip
        randomisation test of the mean difference (exact when 2^n <= n_resamples), or
        the expanded percentile bootstrap of the mean difference (Poisson weights; no p below 2 pairs).
    alpha : float
        Significance level, strictly between 0 and 1; also sets the interval's coverage (1 - alpha).
    correction : {"holm", "bonferroni", "fdr_bh", None}
        Multiple-testing correction over every (metric, slice) row of this call.
    how : {"error", "inner"}
        Ids present on one side only raise :class:`SchemaError` (default) or are left out.
    n_resamples, seed : int
        Resamples (>= 1) and random seed (>= 0 or None) of the permutation and bootstrap tests.
    samples : str, optional
        For frames holding several judge samples (or repeated evaluations) of each row, one
        row per sample: the column numbering the samples. Samples are paired on ``on`` +
        ``samples``; the row (``on``), not the sample, is then the unit of every test: each
        row's paired differences are averaged over the samples both sides scored, and the test
        runs on those row means (a cluster-level test: the samples of a row share its answer,
        so they are not independent pairs, and testing them as pairs calls runs different
        that differ by chance). Slice columns must be constant within a row. Frames of
        ragframe's judges with ``n_samples > 1`` (one row per row, the mean of its samples and
        ``<metric>_std``) need nothing: their row means already carry the judge's noise.

    Returns
    -------
    polars.DataFrame
        ``by`` columns, then ``metric, n`` (pairs with both scores non-null; with ``samples``,
        rows with at least one sample scored on both sides),
        ``mean_a, mean_b, delta`` (= mean_b - mean_a), ``ci_low, ci_high`` (of the mean
        difference: t interval, or the bootstrap percentiles for ``test="bootstrap"``),
        ``statistic`` (t, Wilcoxon's min(W+, W-), or the mean difference), ``p_value``,
        ``p_adjusted``, ``significant`` (p_adjusted < alpha), ``winner`` ("a", "b" or
        "tie"; higher scores are better) and ``effect_size`` (Cohen's d_z = delta / sd of
        the differences), then ``test``.

    Notes
    -----
    When every difference is equal, the t statistic is undefined: p is 1 when they are
    all 0 and 0 otherwise (scipy gives NaN). A cell of all-zero differences has p = 1 for
    every test. With fewer than 2 pairs (1 for the resampling tests) p is null; null
    p-values are left out of the correction family and are never significant.
    A resampled p-value is never below 2 / (n_resamples + 1): with Holm or Bonferroni
    over m cells nothing can be significant unless n_resamples > 2m / alpha (20,000
    for 500 cells at alpha 0.05); raise n_resamples, or use the t or Wilcoxon test.

    Judge noise: the paired test on per-row scores counts a noisy judge's variance, since
    each row's difference holds the noise of both sides' scores; two runs that differ only
    by the judge's sampling are called different at rate ``alpha``. It cannot count noise
    shared by every row of a run (a judge model or prompt that changed between the runs).
    ``benchmarks/calibration.py`` measures both layouts (docs/statistics.md, "Judge noise").

    Examples
    --------
    >>> import polars as pl
    >>> a = pl.DataFrame({"id": [1, 2, 3, 4], "mrr": [0.2, 0.5, 0.4, 0.1]})
    >>> b = pl.DataFrame({"id": [1, 2, 3, 4], "mrr": [0.6, 0.9, 0.7, 0.6]})
    >>> row = compare(a, b).row(0, named=True)
    >>> row["n"], round(row["delta"], 3), row["winner"]
    (4, 0.4, 'b')
    """
    options = ComparisonOptions.check(
        on=on,
        metrics=metrics,
        by=by,
        test=test,
        alpha=alpha,
        correction=correction,
        how=how,
        n_resamples=n_resamples,
        seed=seed,
    )
    on_cols, group_by = list(options.on), list(options.by or [])
    wanted = None if options.metrics is None else list(options.metrics)
    sample_col = _samples_column(samples, on_cols, group_by)
    paired, names, group_by = _paired_frame(a, b, on_cols, wanted, group_by, options.how, sample_col)
    if sample_col is not None:
        paired = _row_means(paired, on_cols, names, group_by)
    seg, keys = _segments(paired, names, group_by)
    confidence = 1 - options.alpha
    statistic, p, ci_low, ci_high = run_test(seg, options.test, confidence, options.n_resamples, options.seed)
    adjusted = adjust_p_values(p, options.correction)
    out = result_frame(seg, names, statistic, p, adjusted, ci_low, ci_high, options.alpha).with_columns(
        pl.lit(options.test).alias("test")
    )
    if group_by:
        out = out.join(keys.rename({"_code": "_group"}), on="_group", how="left", maintain_order="left")
    return out.select(*group_by, *COMPARE_COLUMNS, "test")


def _read_side(frame: Any) -> pl.DataFrame:
    return to_polars(frame)


def _samples_column(samples: Any, on: list[str], group_by: list[str]) -> str | None:
    """The ``samples`` column name, checked: not an id or slice column."""
    if samples is None:
        return None
    name = validate.column_name(samples, "samples")
    if name in on or name in group_by:
        raise validate.fail("samples", "a column other than the on and by columns", samples)
    return name


def _paired_frame(
    a: Any, b: Any, on: list[str], metrics: Any, group_by: list[str], how: str, samples: str | None = None
) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Both sides checked and joined on the ids (and samples): ids, slices, each metric of a and ``<metric>__b``."""
    keys = on if samples is None else [*on, samples]
    left, right = _read_side(a), _read_side(b)
    check_ids(left, keys, parameter_name("a"))
    check_ids(right, keys, parameter_name("b"))
    names = compared_metrics(left, right, metrics, [*keys, *group_by])
    left, names, group_by = prepare_scores(left, names, group_by)
    right, _, _ = prepare_scores(right, names, None)
    left, right = same_id_types(left, right, keys)
    paired = pair_frames(
        left.select(*keys, *[g for g in group_by if g not in keys], *names),
        right.select(*keys, *names),
        keys,
        how,
    )
    return paired, names, group_by


def _row_means(paired: pl.DataFrame, on: list[str], names: list[str], group_by: list[str]) -> pl.DataFrame:
    """One row per id: each metric's mean over the samples scored on both sides, for a and b (null if none).

    The mean of b minus the mean of a over those samples is the mean of their paired differences.
    """
    slices = [g for g in group_by if g not in on]
    grouped = paired.group_by(on, maintain_order=True)
    if slices:
        counts = grouped.agg(pl.col(slices).n_unique())
        for name in slices:
            row = first_true_row(counts[name] > 1)
            if row is not None:
                found = counts.select(on).row(row)
                raise SchemaError(
                    "slice column differs between the samples of one row ({by} needs one value per row)",
                    column=name,
                    found=f"row {found[0] if len(found) == 1 else found!r}",
                    mentions={"by": ""},
                )
    means = []
    for name in names:
        both = pl.col(name).is_not_null() & pl.col(f"{name}__b").is_not_null()
        means += [pl.col(c).cast(pl.Float64).filter(both).mean().alias(c) for c in (name, f"{name}__b")]
    return grouped.agg(*[pl.col(g).first() for g in slices], *means)


def _segments(paired: pl.DataFrame, names: list[str], group_by: list[str]) -> tuple[Segments, pl.DataFrame]:
    """The paired differences of every (metric, slice) cell, and the slice keys by code."""
    if group_by:
        codes, keys = group_codes(paired, group_by, code_column="_code")
        n_groups = keys.height
    else:
        codes = np.zeros(paired.height, dtype=np.int64)
        keys = pl.DataFrame()
        n_groups = 1
    # cells are metric-major (cell = metric * groups + group): rows sorted once by group (a stable
    # radix sort of the small codes) make every metric's cells come out in order, with no 10M-row sort
    by_group = np.argsort(codes.astype(np.int16 if n_groups < 2**15 else np.int64), kind="stable")
    sorted_codes = codes[by_group]
    seg = Segments(len(names), n_groups)
    for index, name in enumerate(names):  # one segment per (metric, group)
        va = paired[name].cast(pl.Float64).to_numpy()[by_group]
        vb = paired[f"{name}__b"].cast(pl.Float64).to_numpy()[by_group]
        both = ~(np.isnan(va) | np.isnan(vb))
        seg.add(index, sorted_codes[both], va[both], vb[both])
    return seg.finish(), keys


@public
def compare_runs(
    run_a: Any,
    run_b: Any,
    qrels: Any,
    /,
    *,
    metrics: Sequence[str] | None = DEFAULTS.metrics,
    test: str = DEFAULTS.test,
    alpha: float = DEFAULTS.alpha,
    correction: str | None = DEFAULTS.correction,
    n_resamples: int = DEFAULTS.n_resamples,
    seed: int | None = DEFAULTS.seed,
    k: int | Sequence[int] = (5, 10, 100),
    relevance_level: int = 1,
) -> pl.DataFrame:
    """A/B test of two TREC runs on every ranking measure at once, paired by query.

    Both runs are scored with :func:`ragframe.evaluate_run` with ``complete=True``: every
    judged query counts, a query a run misses scores 0, so the pairs are the judged
    queries. Then :func:`compare` runs on the per-query frames joined on ``query_id``.
    Options are keyword-only, in the order and with the defaults of :func:`compare`
    (:class:`ragframe.stats.options.ComparisonOptions`), then the scoring's own.

    Parameters
    ----------
    run_a, run_b : frame
        TREC runs (columns ``query_id, doc_id, score``), as :func:`ragframe.read_trec_run`
        reads them; ``b`` is compared with ``a``.
    qrels : frame
        Judgments (columns ``query_id, doc_id, relevance``), as :func:`ragframe.read_qrels`
        reads them.
    metrics : list of str, optional
        Names from :data:`ragframe.RETRIEVAL_METRICS`; by default the ranking family's default set.
    test : {"t", "wilcoxon", "permutation", "bootstrap"}
        The paired test, as in :func:`compare`.
    alpha : float
        Significance level, strictly between 0 and 1.
    correction : {"holm", "bonferroni", "fdr_bh", None}
        Multiple-testing correction over every measure compared.
    n_resamples, seed : int
        Resamples and random seed of the permutation and bootstrap tests.
    k : int or list of int
        Cutoffs for the ``*_at_k`` measures.
    relevance_level : int
        Minimum grade of a relevant document (trec_eval ``-l``), >= 0.

    Returns
    -------
    polars.DataFrame
        One row per measure (``ndcg_at_10``, ``mrr``, ...), with the columns of
        :func:`compare`: ``metric, n`` (judged queries), ``mean_a, mean_b, delta``, the
        interval, ``statistic, p_value, p_adjusted, significant, winner, effect_size, test``.

    Examples
    --------
    BM25 against its GPT-3.5 rerank on the bundled TREC DL 2019 queries:

    >>> import ragframe as rf
    >>> from ragframe.datasets import example_paths
    >>> paths = example_paths()
    >>> bm25, rerank = rf.read_trec_run(paths["bm25"]), rf.read_trec_run(paths["bm25+gpt3.5-rerank"])
    >>> result = compare_runs(bm25, rerank, rf.read_qrels(paths["qrels"]), k=10, metrics=["ndcg_at_k", "mrr"])
    >>> for row in result.iter_rows(named=True):
    ...     print(row["metric"], row["n"], round(row["mean_a"], 4), round(row["mean_b"], 4), row["winner"])
    ndcg_at_10 43 0.5058 0.6868 b
    mrr 43 0.8245 0.9698 b
    """
    from ragframe.run.trec_run import evaluate_run

    options = ComparisonOptions.check(
        on="query_id",
        metrics=metrics,
        test=test,
        alpha=alpha,
        correction=correction,
        n_resamples=n_resamples,
        seed=seed,
    )
    measures = None if options.metrics is None else list(options.metrics)
    kwargs = {"k": k, "metrics": measures, "complete": True, "relevance_level": relevance_level}
    per_query_a = evaluate_run(run_a, qrels, **kwargs)
    per_query_b = evaluate_run(run_b, qrels, **kwargs)
    return compare(per_query_a, per_query_b, **options.paired_test())
