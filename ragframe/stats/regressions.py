"""Regressions between a baseline and a current evaluation, with or without significance.

Two summaries (from :func:`ragframe.summarize` or :func:`ragframe.summarize_batch`): the
seed's rule, a metric regressed when its mean dropped by more than ``threshold``.
Two per-row scored frames with ids: the same rule on the means, plus the paired test of
:func:`ragframe.stats.compare`; a regression then has to be both larger than the threshold and
significant (the rule ``ragframe gate`` applies).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.schema import column_names, frame_kind, to_polars
from ragframe.stats.compare import compare

__all__ = ["regressions"]


def _is_summary(columns: list[str]) -> bool:
    return "metric" in columns and "mean" in columns


def regressions(
    baseline: Any,
    current: Any,
    /,
    threshold: float = 0.05,
    on: str | Sequence[str] = "id",
    metrics: str | Sequence[str] | None = None,
    by: str | Sequence[str] | None = None,
    test: str = "t",
    alpha: float = 0.05,
    correction: str | None = "holm",
    how: str = "error",
    n_resamples: int = 9999,
    seed: int | None = 0,
) -> pl.DataFrame:
    """Which metrics dropped from ``baseline`` to ``current``.

    Parameters
    ----------
    baseline, current : frame
        Two summaries (columns ``metric`` and ``mean``, plus any ``by`` columns), or two
        per-row scored frames with the id column(s) ``on``.
    threshold : float
        A drop of the mean by more than this is a regression (``delta < -threshold``).
    on, metrics, by, test, alpha, correction, how, n_resamples, seed
        Passed to :func:`ragframe.stats.compare` for per-row frames.

    Returns
    -------
    polars.DataFrame
        Summaries: ``by`` columns, ``metric, baseline, current, delta, regressed``, one
        row per metric (and group) present in both. Per-row frames: ``by`` columns,
        ``metric, n, baseline, current, delta, p_value, p_adjusted, significant,
        exceeds_threshold`` (delta < -threshold) and ``regressed`` (exceeds the threshold
        and significant).

    Examples
    --------
    >>> import polars as pl
    >>> base = pl.DataFrame({"metric": ["faithfulness", "mrr"], "mean": [0.8, 0.5]})
    >>> now = pl.DataFrame({"metric": ["faithfulness", "mrr"], "mean": [0.7, 0.49]})
    >>> regressions(base, now, threshold=0.05).select("metric", "regressed").rows()
    [('faithfulness', True), ('mrr', False)]
    """
    function = "regressions"
    if not isinstance(threshold, (int, float)) or threshold < 0:
        raise InvalidParameterError(f"{function}: threshold={threshold!r} must be a number >= 0")
    group_by = [by] if isinstance(by, str) else list(by or [])
    base_columns = column_names(baseline, function)
    current_columns = column_names(current, function)
    if _is_summary(base_columns) != _is_summary(current_columns):
        raise SchemaError(
            "baseline and current must both be summaries (metric, mean) or both per-row scored frames",
            function=function,
            column="metric",
            available=current_columns,
        )
    if not _is_summary(base_columns):
        compared = compare(
            baseline,
            current,
            on=on,
            metrics=metrics,
            test=test,
            alpha=alpha,
            correction=correction,
            by=by,
            how=how,
            n_resamples=n_resamples,
            seed=seed,
        )
        exceeds = pl.col("delta") < -threshold
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
            exceeds.fill_null(False).alias("exceeds_threshold"),
            (exceeds & pl.col("significant")).fill_null(False).alias("regressed"),
        )
    frames = []
    for frame in (baseline, current):
        frames.append(frame.collect() if frame_kind(frame, function) == "lazy" else to_polars(frame, function=function))
    keys = [*group_by, "metric"]
    for frame in frames:
        for name in keys:
            if name not in frame.columns:
                raise SchemaError("missing column", function=function, column=name, available=frame.columns)
    base, now = (f.select(*keys, pl.col("mean").cast(pl.Float64)) for f in frames)
    if metrics is not None:
        wanted = [metrics] if isinstance(metrics, str) else list(metrics)
        base = base.filter(pl.col("metric").is_in(wanted))
    joined = base.join(now, on=keys, how="inner", suffix="_current", maintain_order="left", nulls_equal=True)
    delta = pl.col("mean_current") - pl.col("mean")
    return joined.select(
        *keys,
        pl.col("mean").alias("baseline"),
        pl.col("mean_current").alias("current"),
        delta.alias("delta"),
        (delta < -threshold).fill_null(False).alias("regressed"),
    )
