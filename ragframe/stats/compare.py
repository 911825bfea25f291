"""Paired comparison of two scored frames, with multiple-testing correction.

:func:`compare` joins two scored frames on their sample ids and, for every metric
(and slice with ``by=``), tests whether the mean paired difference ``b - a`` is zero.
Differences of all metrics and slices are laid out as segments of one flat array and
every statistic is computed per segment at once (bincount, segment ranks, shared
resampling matrices), never in a loop over rows. :func:`compare_runs` is the seed's
A/B test of two retrievers, on every ranking measure at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.kernels.groups import group_codes
from ragframe.kernels.resampling import bootstrap_means, exact_sign_flip_means, sign_flip_means
from ragframe.metrics import score_columns
from ragframe.schema import first_true_row, to_polars
from ragframe.stats.summary import prepare_scores

__all__ = ["compare", "compare_runs", "adjust_p_values", "TESTS", "CORRECTIONS"]

TESTS = ("t", "wilcoxon", "permutation", "bootstrap")
CORRECTIONS = (None, "holm", "bonferroni", "fdr_bh")
COMPARE_COLUMNS = [
    "metric",
    "n",
    "mean_a",
    "mean_b",
    "delta",
    "ci_low",
    "ci_high",
    "statistic",
    "p_value",
    "p_adjusted",
    "significant",
    "winner",
    "effect_size",
]
_EPS = np.finfo(np.float64).eps * 100  # scipy's tolerance for ties in a null distribution
_RANK_CHUNK = 1 << 20  # pairs per sort when ranking |d| within cells


def adjust_p_values(p_values: np.ndarray, method: str | None) -> np.ndarray:
    """Adjust a family of p-values like ``statsmodels.stats.multitest.multipletests``.

    NaN entries are left out of the family and stay NaN.

    Parameters
    ----------
    p_values : array-like of float
        The family of p-values (NaN for a test that gave none).
    method : {"holm", "bonferroni", "fdr_bh", None}
        Holm's step-down, Bonferroni, or Benjamini-Hochberg's step-up false discovery
        rate; None returns the p-values unchanged.

    Returns
    -------
    numpy.ndarray
        Float64 adjusted p-values (at most 1), in the input's order; a new array.

    Examples
    --------
    >>> import numpy as np
    >>> adjust_p_values(np.array([0.01, 0.04, 0.03]), "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_p_values(np.array([0.01, 0.04, 0.03]), "fdr_bh").round(4).tolist()
    [0.03, 0.04, 0.04]
    >>> adjust_p_values(np.array([0.01, np.nan, 0.03]), "bonferroni").round(4).tolist()
    [0.02, nan, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = p.copy()
    if method is None:
        return out
    validate.choice(method, "correction", "adjust_p_values", CORRECTIONS)
    keep = ~np.isnan(p)
    family = p[keep]
    m = family.size
    if m == 0:
        return out
    if method == "bonferroni":
        adjusted = np.minimum(family * m, 1.0)
    else:
        order = np.argsort(family, kind="stable")
        ranked = family[order]
        if method == "holm":
            stepped = np.maximum.accumulate(np.minimum((m - np.arange(m)) * ranked, 1.0))
        else:  # fdr_bh: step-up from the largest p-value
            stepped = np.minimum.accumulate((m / np.arange(1, m + 1) * ranked)[::-1])[::-1]
            stepped = np.minimum(stepped, 1.0)
        adjusted = np.empty(m)
        adjusted[order] = stepped
    out[keep] = adjusted
    return out


def _check_ids(df: pl.DataFrame, on: list[str], side: str, function: str) -> None:
    for name in on:
        if name not in df.columns:
            raise SchemaError(f"missing id column in {side}", function=function, column=name, available=df.columns)
        row = first_true_row(df[name].is_null())
        if row is not None:
            raise SchemaError(f"null id in {side}", function=function, column=name, row=row, expected="an id")
    duplicated = df.select(~pl.struct(on).is_first_distinct()).to_series()
    row = first_true_row(duplicated)
    if row is not None:
        found = df.select(on).row(row)
        raise SchemaError(
            f"duplicate id in {side}: each sample must appear once",
            function=function,
            column=on[0],
            row=row,
            found=repr(found[0] if len(found) == 1 else found),
        )


def _same_id_types(a: pl.DataFrame, b: pl.DataFrame, on: list[str], function: str) -> tuple[pl.DataFrame, ...]:
    """The two sides with id columns of one dtype: integers widen to Int64, other differences are errors."""
    for name in on:
        left, right = a.schema[name], b.schema[name]
        if left == right:
            continue
        if left.is_integer() and right.is_integer() and pl.UInt64 not in (left, right):
            a, b = a.with_columns(pl.col(name).cast(pl.Int64)), b.with_columns(pl.col(name).cast(pl.Int64))
            continue
        raise SchemaError(
            "the id column has different types in a and b; cast one side so the ids can match",
            function=function,
            column=name,
            expected=f"{left} (as in a)",
            found=f"{right} in b",
        )
    return a, b


def _pair(a: pl.DataFrame, b: pl.DataFrame, on: list[str], how: str, function: str) -> pl.DataFrame:
    """Inner join of the two sides on ``on``; with ``how='error'`` an id on one side only is an error."""
    if how == "error":
        for left, right, name in ((a, b, "a"), (b, a, "b")):
            only = left.select(on).join(right.select(on), on=on, how="anti", nulls_equal=False)
            if only.height:
                sample = [r[0] if len(r) == 1 else r for r in only.head(5).rows()]
                other = "b" if name == "a" else "a"
                raise SchemaError(
                    f"{only.height} id(s) of {name} are missing from {other}, e.g. {sample}; "
                    "pass how='inner' to compare the shared ids only",
                    function=function,
                    column=on[0],
                )
    return a.join(b, on=on, how="inner", suffix="__b")


@cache
def _wilcoxon_pmf(n: int) -> np.ndarray:
    """Null distribution of the signed-rank sum W+ for n untied, non-zero differences."""
    pmf = np.ones(1)
    for k in range(1, n + 1):
        previous = pmf
        pmf = np.zeros(k * (k + 1) // 2 + 1)
        pmf[: previous.size] = previous * 0.5
        pmf[-previous.size :] += previous * 0.5
    return pmf


def _wilcoxon_exact_p(r_plus: float, n: int) -> float:
    pmf = _wilcoxon_pmf(n)
    mean = n * (n + 1) / 4
    k_sf, k_cdf = int(np.floor(r_plus)), int(np.ceil(r_plus))
    sf = pmf[k_sf:].sum() if k_sf <= mean else 1 - pmf[:k_sf].sum()
    cdf = pmf[: k_cdf + 1].sum() if k_cdf <= mean else 1 - pmf[k_cdf + 1 :].sum()
    return float(np.clip(2 * min(sf, cdf), 0, 1))


def _two_sided_p(null: np.ndarray, observed: np.ndarray, adjustment: int, scale: np.ndarray) -> np.ndarray:
    """scipy.stats.permutation_test's two-sided p-value from null rows (segments x resamples).

    Null values within a relative 1e-14 of the observed statistic count as ties, as in scipy,
    but relative to the larger of the statistic and the cell's mean |difference|: a statistic
    that is 0 up to rounding (paired differences summing to 0) ties with null values that
    are 0 up to another rounding, so such a cell gets p = 1 whatever the summation order.
    """
    gamma = (_EPS * np.maximum(np.abs(observed), scale))[:, None]
    total = null.shape[1] if null.ndim == 2 else 0
    less = (np.count_nonzero(null <= observed[:, None] + gamma, axis=1) + adjustment) / (total + adjustment)
    greater = (np.count_nonzero(null >= observed[:, None] - gamma, axis=1) + adjustment) / (total + adjustment)
    return np.clip(2 * np.minimum(less, greater), 0.0, 1.0)


class _Segments:
    """Paired differences of every (metric, group) cell, laid out cell after cell, with per-cell moments.

    Built one metric at a time (:meth:`add`), so only the differences of all metrics
    are kept (not both sides), and the per-cell sums come from small bincounts.
    """

    def __init__(self, n_metrics: int, n_groups: int) -> None:
        self.n_groups = n_groups
        self.n_cells = n_metrics * n_groups
        self.n = np.zeros(self.n_cells, dtype=np.int64)
        self.mean_a = np.full(self.n_cells, np.nan)
        self.mean_b = np.full(self.n_cells, np.nan)
        self.delta = np.full(self.n_cells, np.nan)
        self.sd = np.full(self.n_cells, np.nan)
        self._cells: list[np.ndarray] = []
        self._differences: list[np.ndarray] = []

    def add(self, metric: int, group: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Add one metric's pairs; ``group`` is the (non-decreasing) group code of each pair."""
        groups = self.n_groups
        cells = slice(metric * groups, (metric + 1) * groups)
        d = b - a
        n = np.bincount(group, minlength=groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.mean_a[cells] = np.bincount(group, a, groups) / n
            self.mean_b[cells] = np.bincount(group, b, groups) / n
            delta = np.bincount(group, d, groups) / n
            centred = d - delta[group]
            sd = np.sqrt(np.bincount(group, centred * centred, groups) / (n - 1))
        sd[n < 2] = np.nan
        self.n[cells], self.delta[cells], self.sd[cells] = n, delta, sd
        self._cells.append((group + metric * groups).astype(np.int32))
        self._differences.append(d)

    def finish(self) -> _Segments:
        """Concatenate the metrics: ``cell`` (non-decreasing), ``d`` and each cell's ``starts``."""
        self.cell = np.concatenate(self._cells) if self._cells else np.zeros(0, dtype=np.int32)
        self.d = np.concatenate(self._differences) if self._differences else np.zeros(0)
        self._cells, self._differences = [], []
        self.starts = np.concatenate([[0], np.cumsum(self.n)[:-1]]).astype(np.int64)
        return self


def _t_test(seg: _Segments, confidence: float) -> tuple[np.ndarray, ...]:
    from scipy import stats  # imported on use: scipy.stats takes ~0.8 s to import

    n = seg.n.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = seg.sd / np.sqrt(n)
        statistic = seg.delta / se
        p = 2 * stats.t.sf(np.abs(statistic), n - 1)
        half = stats.t.ppf(0.5 + confidence / 2, n - 1) * se
    constant = (seg.sd == 0) & (seg.n >= 2)
    statistic[constant] = np.nan
    p[constant] = np.where(seg.delta[constant] == 0, 1.0, 0.0)
    p[seg.n < 2] = np.nan
    return statistic, p, seg.delta - half, seg.delta + half


def _wilcoxon(seg: _Segments) -> tuple[np.ndarray, np.ndarray]:
    """Wilcoxon signed-rank (zero_method='wilcox'), choosing exact/permutation/normal as scipy's 'auto'."""
    from scipy import stats  # imported on use: scipy.stats takes ~0.8 s to import

    nonzero = seg.d != 0
    n_cells = seg.n_cells
    differences = seg.d[nonzero]
    cells_in = seg.cell[nonzero]
    # sort by (cell, |d|) in chunks of whole cells: each chunk by |d| (multithreaded), then a stable
    # radix sort by its cell offsets; runs of equal (cell, |d|) are then the ties
    per_cell = np.bincount(cells_in, minlength=n_cells)
    first_row = np.r_[0, np.cumsum(per_cell)]
    chunk_of_cell = first_row[:-1] // _RANK_CHUNK
    edges = np.r_[first_row[np.r_[0, np.flatnonzero(np.diff(chunk_of_cell)) + 1]], differences.size]
    order = np.empty(differences.size, dtype=np.int64)
    for lo, hi in itertools.pairwise(edges):  # a few chunks of about a million pairs
        if hi <= lo:
            continue
        by_value = pl.Series(np.abs(differences[lo:hi])).arg_sort().to_numpy()
        offsets = cells_in[lo:hi][by_value] - cells_in[lo]
        by_cell = np.argsort(offsets.astype(np.int16 if offsets[-1] < 2**15 else np.int64), kind="stable")
        order[lo:hi] = lo + by_value[by_cell]
    cells = cells_in[order]
    values = np.abs(differences[order])
    positive = differences[order] > 0
    size = values.size
    new_run = np.r_[True, (cells[1:] != cells[:-1]) | (values[1:] != values[:-1])] if size else np.zeros(0, bool)
    run_start = np.flatnonzero(new_run)
    run_length = np.diff(np.r_[run_start, size]).astype(np.float64)
    count = np.bincount(cells, minlength=n_cells).astype(np.float64)
    cell_first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    run_rank = run_start - cell_first[cells[run_start]] + (run_length + 1) / 2  # average rank of a tie run
    ranks = np.repeat(run_rank, run_length.astype(np.int64))
    r_plus = np.bincount(cells, ranks * positive, n_cells).astype(np.float64)
    r_minus = np.bincount(cells, ranks * ~positive, n_cells).astype(np.float64)
    tie_correct = np.bincount(cells[run_start], run_length**3 - run_length, n_cells)
    has_ties = np.bincount(cells[run_start], run_length > 1, n_cells) > 0
    has_zeros = count < seg.n
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((count * (count + 1) * (2 * count + 1) - tie_correct / 2) / 24)
        z = (r_plus - count * (count + 1) / 4) / se
        p = 2 * stats.norm.sf(np.abs(z))
    small = np.flatnonzero((seg.n <= 50) & (count > 0))
    for c in small:  # exact or enumerated p for the few cells of at most 50 pairs, as scipy's method='auto'
        if not (has_ties[c] or has_zeros[c]):
            p[c] = _wilcoxon_exact_p(r_plus[c], int(count[c]))
        elif seg.n[c] <= 13:
            cell_ranks = ranks[cell_first[c] : cell_first[c] + int(count[c])]
            bits = (np.arange(2**cell_ranks.size)[:, None] >> np.arange(cell_ranks.size)) & 1
            null = bits @ cell_ranks
            p[c] = _two_sided_p(null[None, :], np.array([r_plus[c]]), 0, np.zeros(1))[0]
    p[(count == 0) & (seg.n > 0)] = 1.0  # every difference is zero
    p[seg.n == 0] = np.nan
    statistic = np.minimum(r_plus, r_minus)
    statistic[seg.n == 0] = np.nan
    return statistic, p


def _permutation(seg: _Segments, n_resamples: int, seed: int | None) -> np.ndarray:
    """Two-sided sign-flip test of the mean difference; exact when 2^n <= n_resamples."""
    p = np.full(seg.n_cells, np.nan)
    cumulative = np.concatenate([[0.0], np.cumsum(np.abs(seg.d))])
    scale = (cumulative[seg.starts + seg.n] - cumulative[seg.starts]) / np.maximum(seg.n, 1)  # mean |d| per cell
    exact = (seg.n > 0) & (2.0 ** np.minimum(seg.n, 60) <= n_resamples)
    for c in np.flatnonzero(exact):  # cells of at most log2(n_resamples) pairs
        values = seg.d[seg.starts[c] : seg.starts[c] + seg.n[c]]
        p[c] = _two_sided_p(exact_sign_flip_means(values)[None, :], np.array([seg.delta[c]]), 0, scale[c : c + 1])[0]
    sampled = np.flatnonzero((seg.n > 0) & ~exact)
    if sampled.size:
        null = sign_flip_means(seg.d, seg.starts[sampled], seg.n[sampled], n_resamples, seed)
        p[sampled] = _two_sided_p(null, seg.delta[sampled], 1, scale[sampled])
    return p


def _bootstrap(seg: _Segments, n_resamples: int, seed: int | None, confidence: float) -> tuple[np.ndarray, ...]:
    """Percentile bootstrap of the mean difference; p = 2 min(P*(<= 0), P*(>= 0)) with the +1 rule."""
    means = bootstrap_means(seg.d, seg.starts, seg.n, n_resamples, seed)
    valid = ~np.isnan(means)
    total = valid.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        less = ((means <= 0) & valid).sum(axis=1)
        greater = ((means >= 0) & valid).sum(axis=1)
        p = np.clip(2 * np.minimum(less + 1, greater + 1) / (total + 1), 0.0, 1.0)
        low = np.nanquantile(np.where(valid, means, np.nan), 0.5 - confidence / 2, axis=1)
        high = np.nanquantile(np.where(valid, means, np.nan), 0.5 + confidence / 2, axis=1)
    p[seg.n == 0] = np.nan
    return p, low, high


def compare(
    a: Any,
    b: Any,
    /,
    on: str | Sequence[str] = "id",
    metrics: str | Sequence[str] | None = None,
    test: str = "t",
    alpha: float = 0.05,
    correction: str | None = "holm",
    by: str | Sequence[str] | None = None,
    how: str = "error",
    n_resamples: int = 9999,
    seed: int | None = 0,
    samples: str | None = None,
) -> pl.DataFrame:
    """Paired comparison of two scored frames per metric (and slice): is ``b`` different from ``a``?

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
    test : {"t", "wilcoxon", "permutation", "bootstrap"}
        Paired Student t (scipy.stats.ttest_rel), Wilcoxon signed-rank
        (scipy.stats.wilcoxon, zero_method="wilcox", method "auto"), the sign-flip
        randomisation test of the mean difference (exact when 2^n <= n_resamples), or
        the percentile bootstrap of the mean difference (Poisson weights).
    alpha : float
        Significance level, strictly between 0 and 1; also sets the interval's coverage (1 - alpha).
    correction : {"holm", "bonferroni", "fdr_bh", None}
        Multiple-testing correction over every (metric, slice) row of this call.
    by : str or list of str, optional
        Slice columns, taken from ``a``.
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
    function = "compare"
    validate.choice(test, "test", function, TESTS)
    validate.choice(correction, "correction", function, CORRECTIONS)
    alpha = validate.confidence(alpha, "alpha", function)
    validate.choice(how, "how", function, ("error", "inner"))
    n_resamples = validate.resamples(n_resamples, "n_resamples", function)
    seed = validate.seed(seed, "seed", function)
    on_cols = validate.column_list(on, "on", function)
    group_by = [] if by is None else validate.column_list(by, "by", function, allow_empty=True)
    sample_col = _samples_column(samples, on_cols, group_by, function)
    paired, names, group_by = _paired_frame(a, b, on_cols, metrics, group_by, how, sample_col)
    if sample_col is not None:
        paired = _row_means(paired, on_cols, names, group_by, function)
    seg, keys = _segments(paired, names, group_by)
    statistic, p, ci_low, ci_high = _run_test(seg, test, 1 - alpha, n_resamples, seed)
    adjusted = adjust_p_values(p, correction)
    out = _result_frame(seg, names, statistic, p, adjusted, ci_low, ci_high, alpha).with_columns(
        pl.lit(test).alias("test")
    )
    if group_by:
        out = out.join(keys.rename({"_code": "_group"}), on="_group", how="left", maintain_order="left")
    return out.select(*group_by, *COMPARE_COLUMNS, "test")


def _read_side(frame: Any, function: str) -> pl.DataFrame:
    return to_polars(frame, function=function)


def _compared_metrics(
    left: pl.DataFrame, right: pl.DataFrame, metrics: Any, exclude: list[str], function: str
) -> list[str]:
    """The metrics asked, or every score column of both sides; a score column on one side only is an error."""
    if metrics is not None:
        return validate.column_list(metrics, "metrics", function)
    in_a = [c for c in score_columns(left.schema) if c not in exclude]
    in_b = [c for c in score_columns(right.schema) if c not in exclude]
    only_a, only_b = [c for c in in_a if c not in in_b], [c for c in in_b if c not in in_a]
    if only_a or only_b:
        raise SchemaError(
            f"score column(s) {only_a} only in a and {only_b} only in b: each metric needs both sides; "
            "pass metrics=[...] to compare the shared ones",
            function=function,
            column=(only_a or only_b)[0],
        )
    if not in_a:
        raise SchemaError(
            "no ragframe score column is present in both frames; pass metrics=[...]",
            function=function,
            available=left.columns,
        )
    return in_a


def _samples_column(samples: Any, on: list[str], group_by: list[str], function: str) -> str | None:
    """The ``samples`` column name, checked: not an id or slice column."""
    if samples is None:
        return None
    name = validate.column_name(samples, "samples", function)
    if name in on or name in group_by:
        raise validate.fail(function, "samples", "a column other than the on and by columns", samples)
    return name


def _paired_frame(
    a: Any, b: Any, on: list[str], metrics: Any, group_by: list[str], how: str, samples: str | None = None
) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Both sides checked and joined on the ids (and samples): ids, slices, each metric of a and ``<metric>__b``."""
    function = "compare"
    keys = on if samples is None else [*on, samples]
    left, right = _read_side(a, function), _read_side(b, function)
    _check_ids(left, keys, "a", function)
    _check_ids(right, keys, "b", function)
    names = _compared_metrics(left, right, metrics, [*keys, *group_by], function)
    left, names, group_by = prepare_scores(left, names, group_by, function)
    right, _, _ = prepare_scores(right, names, None, function)
    left, right = _same_id_types(left, right, keys, function)
    paired = _pair(
        left.select(*keys, *[g for g in group_by if g not in keys], *names),
        right.select(*keys, *names),
        keys,
        how,
        function,
    )
    return paired, names, group_by


def _row_means(
    paired: pl.DataFrame, on: list[str], names: list[str], group_by: list[str], function: str
) -> pl.DataFrame:
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
                    "slice column differs between the samples of one row (by= needs one value per row)",
                    function=function,
                    column=name,
                    found=f"row {found[0] if len(found) == 1 else found!r}",
                )
    means = []
    for name in names:
        both = pl.col(name).is_not_null() & pl.col(f"{name}__b").is_not_null()
        means += [pl.col(c).cast(pl.Float64).filter(both).mean().alias(c) for c in (name, f"{name}__b")]
    return grouped.agg(*[pl.col(g).first() for g in slices], *means)


def _segments(paired: pl.DataFrame, names: list[str], group_by: list[str]) -> tuple[_Segments, pl.DataFrame]:
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
    seg = _Segments(len(names), n_groups)
    for index, name in enumerate(names):  # one segment per (metric, group)
        va = paired[name].cast(pl.Float64).to_numpy()[by_group]
        vb = paired[f"{name}__b"].cast(pl.Float64).to_numpy()[by_group]
        both = ~(np.isnan(va) | np.isnan(vb))
        seg.add(index, sorted_codes[both], va[both], vb[both])
    return seg.finish(), keys


def _run_test(
    seg: _Segments, test: str, confidence: float, n_resamples: int, seed: int | None
) -> tuple[np.ndarray, ...]:
    """(statistic, p, ci_low, ci_high) of every cell; the interval is t's except for the bootstrap."""
    statistic, p, ci_low, ci_high = _t_test(seg, confidence)
    if test == "wilcoxon":
        statistic, p = _wilcoxon(seg)
    elif test == "permutation":
        statistic, p = seg.delta.copy(), _permutation(seg, n_resamples, seed)
    elif test == "bootstrap":
        statistic = seg.delta.copy()
        p, ci_low, ci_high = _bootstrap(seg, n_resamples, seed, confidence)
    return statistic, p, ci_low, ci_high


def _result_frame(
    seg: _Segments,
    names: list[str],
    statistic: np.ndarray,
    p: np.ndarray,
    adjusted: np.ndarray,
    ci_low: np.ndarray,
    ci_high: np.ndarray,
    alpha: float,
) -> pl.DataFrame:
    """One row per cell, group-major with metrics in the order asked; ``_group`` holds the slice code."""
    n_groups = seg.n_groups
    significant = np.nan_to_num(adjusted, nan=1.0) < alpha
    winner = np.where(significant & (seg.delta > 0), "b", np.where(significant & (seg.delta < 0), "a", "tie"))
    with np.errstate(invalid="ignore", divide="ignore"):
        effect = np.where(seg.sd > 0, seg.delta / seg.sd, np.nan)
    out = pl.DataFrame(
        {
            "_group": np.tile(np.arange(n_groups), len(names)),
            "_metric": np.repeat(np.arange(len(names)), n_groups),
            "metric": np.repeat(np.array(names, dtype=object), n_groups).astype(str),
            "n": seg.n.astype(np.int64),
            "mean_a": seg.mean_a,
            "mean_b": seg.mean_b,
            "delta": seg.delta,
            "ci_low": ci_low,
            "ci_high": ci_high,
            "statistic": statistic,
            "p_value": p,
            "p_adjusted": adjusted,
            "significant": significant,
            "winner": winner.astype(str),
            "effect_size": effect,
        }
    ).with_columns(pl.col(pl.Float64).fill_nan(None))
    return out.sort("_group", "_metric")  # rows group-major, metrics in the order asked


def compare_runs(
    run_a: Any,
    run_b: Any,
    qrels: Any,
    /,
    k: int | Sequence[int] = (5, 10, 100),
    metrics: Sequence[str] | None = None,
    test: str = "t",
    alpha: float = 0.05,
    correction: str | None = "holm",
    relevance_level: int = 1,
    n_resamples: int = 9999,
    seed: int | None = 0,
) -> pl.DataFrame:
    """A/B test of two TREC runs on every ranking measure at once, paired by query.

    Both runs are scored with :func:`ragframe.evaluate_run` with ``complete=True``: every
    judged query counts, a query a run misses scores 0, so the pairs are the judged
    queries. Then :func:`compare` runs on the per-query frames joined on ``query_id``.

    Parameters
    ----------
    run_a, run_b : frame
        TREC runs (columns ``query_id, doc_id, score``), as :func:`ragframe.read_trec_run`
        reads them; ``b`` is compared with ``a``.
    qrels : frame
        Judgments (columns ``query_id, doc_id, relevance``), as :func:`ragframe.read_qrels`
        reads them.
    k : int or list of int
        Cutoffs for the ``*_at_k`` measures.
    metrics : list of str, optional
        Names from :data:`ragframe.RETRIEVAL_METRICS`; by default the ranking family's default set.
    test : {"t", "wilcoxon", "permutation", "bootstrap"}
        The paired test, as in :func:`compare`.
    alpha : float
        Significance level, strictly between 0 and 1.
    correction : {"holm", "bonferroni", "fdr_bh", None}
        Multiple-testing correction over every measure compared.
    relevance_level : int
        Minimum grade of a relevant document (trec_eval ``-l``), >= 0.
    n_resamples, seed : int
        Resamples and random seed of the permutation and bootstrap tests.

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
    from ragframe.metrics.retrieval import evaluate_run

    kwargs = {"k": k, "metrics": metrics, "complete": True, "relevance_level": relevance_level}
    per_query_a = evaluate_run(run_a, qrels, **kwargs)
    per_query_b = evaluate_run(run_b, qrels, **kwargs)
    return compare(
        per_query_a,
        per_query_b,
        on="query_id",
        test=test,
        alpha=alpha,
        correction=correction,
        n_resamples=n_resamples,
        seed=seed,
    )
