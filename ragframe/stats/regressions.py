"""Regressions between a baseline and a current evaluation, with or without significance.

Two summaries (from :func:`ragframe.summarize` or :func:`ragframe.summarize_batch`): the
seed's rule, a metric regressed when its mean dropped by more than ``max_drop``.
Two per-row scored frames with ids: the same rule on the means, plus the paired test of
:func:`ragframe.stats.compare`; a regression then has to be both larger than ``max_drop`` and
significant (the rule ``ragframe gate`` applies).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ragframe.exceptions import SchemaError
from ragframe.metrics import score_columns
from ragframe.public import public
from ragframe.schema import column_names, frame_schema, to_polars
from ragframe.stats.compare import compare
from ragframe.stats.options import DEFAULTS, ComparisonOptions, max_drop_from
from ragframe.stats.summary import is_summary

__all__ = ["regressions"]


@public(rename={"a": "baseline", "b": "current"})
def regressions(
    baseline: Any,
    current: Any,
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
    max_drop: float = DEFAULTS.max_drop,
    significance: bool = DEFAULTS.significance,
    threshold: float | None = None,
) -> pl.DataFrame:
    """Which metrics dropped from ``baseline`` to ``current``: the seed's rule, or with significance.

    Two summaries (:func:`ragframe.stats.summary.is_summary`): the seed's mean-drop rule, a
    metric regressed when its mean dropped by more than ``max_drop``. Two per-row scored
    frames with ids: the same rule on the paired means, and (``significance=True``, the
    default) the drop must also be significant in the paired test of
    :func:`ragframe.compare`. The frames come first, baseline then current (as ``a`` then
    ``b`` in :func:`ragframe.compare`; they may also be named); every option is
    keyword-only, named, defaulted and checked as in
    :class:`ragframe.stats.options.ComparisonOptions`.

    Parameters
    ----------
    baseline, current : frame
        Two summaries (columns ``metric`` and ``mean``, plus any ``by`` columns; one row
        per metric and group), or two per-row scored frames with the id column(s) ``on``.
    metrics : str or list of str, optional
        Metrics to check; each must be on both sides. Default: every metric of both
        sides (score columns of per-row frames, ``metric`` rows of summaries); a metric on
        one side only is not reported (:func:`ragframe.gate` fails on it).
    on, by, test, alpha, correction, how, n_resamples, seed
        As in :func:`ragframe.compare` (per-row frames); ``by`` also keys summaries.
    max_drop : float
        The largest drop of a mean that is not a regression (>= 0): a drop of more
        (``delta < -max_drop``) exceeds it.
    significance : bool
        Per-row frames: True (default) makes ``regressed`` need a significant drop;
        False makes any drop beyond ``max_drop`` a regression (the test still reports p).
        Summaries carry no rows to test: the seed's rule applies.
    threshold : float, optional
        Deprecated name of ``max_drop`` (a :class:`DeprecationWarning`; removed in the next
        release): ``threshold`` now means a pass mark only, as in ``score_*``.

    Returns
    -------
    polars.DataFrame
        One schema whatever the input: ``by`` columns, ``metric, n, baseline, current, delta,
        p_value, p_adjusted, significant, exceeds_max_drop`` (delta < -max_drop) and
        ``regressed`` (exceeds ``max_drop``, and significant when ``significance``), one row
        per metric (and group) present in both. Summaries carry no pairs: ``n``,
        ``p_value``, ``p_adjusted`` and ``significant`` are null there, and ``regressed`` is
        ``exceeds_max_drop``. A null mean or p-value never regresses.

    Examples
    --------
    >>> import polars as pl
    >>> base = pl.DataFrame({"metric": ["faithfulness", "mrr"], "mean": [0.8, 0.5]})
    >>> now = pl.DataFrame({"metric": ["faithfulness", "mrr"], "mean": [0.7, 0.49]})
    >>> regressions(base, now, max_drop=0.05).select("metric", "regressed").rows()
    [('faithfulness', True), ('mrr', False)]
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
        max_drop=max_drop_from(max_drop, threshold),
        significance=significance,
    )
    group_by = list(options.by or [])
    wanted = None if options.metrics is None else list(options.metrics)
    base_columns, current_columns = column_names(baseline), column_names(current)
    if is_summary(base_columns) != is_summary(current_columns):
        raise SchemaError(
            "baseline and current must both be summaries (metric, mean) or both per-row scored frames",
            column="metric",
            available=current_columns,
        )
    if is_summary(base_columns):
        return _summary_regressions(baseline, current, options.max_drop, wanted, group_by)
    if wanted is None:  # every score column of both sides
        ids = set(options.on) | set(group_by)
        wanted = [c for c in score_columns(frame_schema(baseline)) if c in current_columns and c not in ids]
        if not wanted:
            raise SchemaError(
                "no ragframe score column is present in both frames; pass {metrics}",
                available=base_columns,
                mentions={"metrics": "[...]"},
            )
    compared = compare(baseline, current, metrics=wanted, by=group_by or None, **options.paired_test())
    exceeds = (pl.col("delta") < -options.max_drop).fill_null(False)
    regressed = (exceeds & pl.col("significant")).fill_null(False) if options.significance else exceeds
    return compared.select(
        *group_by,
        "metric",
        "n",
        pl.col("mean_a").alias("baseline"),
        pl.col("mean_b").alias("current"),
        "delta",
        "p_value",
        "p_adjusted",
        "significant",
        exceeds.alias("exceeds_max_drop"),
        regressed.alias("regressed"),
    )


def _summary_frame(frame: Any, keys: list[str], side: str) -> pl.DataFrame:
    """``keys`` and ``mean`` of a summary, checked: keys present, one row per key."""
    df = to_polars(frame)
    for name in keys:
        if name not in df.columns:
            raise SchemaError(f"missing column in {side}", column=name, available=df.columns)
    out = df.select(*keys, pl.col("mean").cast(pl.Float64))
    repeated = out.select(keys).is_duplicated()
    if repeated.any():
        row = int(repeated.arg_max())
        raise SchemaError(
            f"the {side} summary has several rows for one metric (grouped by columns not in by?)",
            column="metric",
            row=row,
            found=repr(out.row(row)[: len(keys)]),
        )
    return out


def _summary_regressions(
    baseline: Any, current: Any, max_drop: float, wanted: list[str] | None, group_by: list[str]
) -> pl.DataFrame:
    """The seed's rule on two summaries: a mean dropped by more than ``max_drop``."""
    keys = [*group_by, "metric"]
    base, now = _summary_frame(baseline, keys, "baseline"), _summary_frame(current, keys, "current")
    if wanted is not None:
        for side, frame in (("baseline", base), ("current", now)):
            missing = [m for m in wanted if m not in frame["metric"].to_list()]
            if missing:
                has = frame["metric"].unique(maintain_order=True).to_list()
                raise SchemaError(
                    f"the {side} summary has no row for metric {missing[0]!r} (it has {has})",
                    column="metric",
                )
        base = base.filter(pl.col("metric").is_in(wanted))
    joined = base.join(now, on=keys, how="inner", suffix="_current", maintain_order="left", nulls_equal=True)
    delta = pl.col("mean_current") - pl.col("mean")
    exceeds = (delta < -max_drop).fill_null(False)
    return joined.select(  # the per-row schema: summaries carry no pairs, so no n and no test
        *keys,
        pl.lit(None, pl.Int64).alias("n"),
        pl.col("mean").alias("baseline"),
        pl.col("mean_current").alias("current"),
        delta.alias("delta"),
        pl.lit(None, pl.Float64).alias("p_value"),
        pl.lit(None, pl.Float64).alias("p_adjusted"),
        pl.lit(None, pl.Boolean).alias("significant"),
        exceeds.alias("exceeds_max_drop"),
        exceeds.alias("regressed"),
    )
