"""Batch aggregates and regression detection with the seed's semantics (``docs/statistics.md``).

:func:`summarize_batch` reduces a scored frame to one row per metric (plus
``composite_score``); :func:`batch_passed` says whether the batch passes;
:func:`detect_regressions` compares two summaries. The statistics issue generalises the
summary (groups, confidence intervals); these keep the seed's numbers exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.metrics.heuristic import HEURISTIC_METRICS
from ragframe.schema import to_polars

__all__ = ["summarize_batch", "batch_passed", "detect_regressions"]

_STATS = ["count", "mean", "median", "min", "max", "std_pop", "pass_rate", "null_rate"]


def summarize_batch(scored: Any, /, metrics: Iterable[str] | None = None) -> pl.DataFrame:
    """One row per metric: count, mean, median, min, max, std_pop, pass_rate, null_rate.

    Statistics are over the non-null scores (all 0 when there is none); ``pass_rate`` is
    rows with ``<metric>_passed == True`` over all rows and ``null_rate`` null scores over
    all rows (both 0 for an empty frame). ``std_pop`` divides by n (the seed's stdDev).
    The last row is ``composite_score`` (its pass_rate from ``passed``) when present.

    Examples
    --------
    >>> import polars as pl
    >>> scored = pl.DataFrame({"faithfulness": [0.2, None, 1.0], "faithfulness_passed": [False, None, True]})
    >>> summarize_batch(scored).select("metric", "count", "mean", "pass_rate", "null_rate").row(0)
    ('faithfulness', 2, 0.6, 0.3333333333333333, 0.3333333333333333)
    """
    df = to_polars(scored, function="summarize_batch")
    if metrics is None:
        names = [m for m in HEURISTIC_METRICS if m in df.columns]
    else:
        names = list(metrics)
        missing = [m for m in names if m not in df.columns]
        if missing:
            raise SchemaError("missing column", function="summarize_batch", column=missing[0], available=df.columns)
    pairs = [(m, f"{m}_passed") for m in names]
    if "composite_score" in df.columns:
        pairs.append(("composite_score", "passed"))
    if not pairs:
        raise SchemaError("no score columns to summarize", function="summarize_batch", available=df.columns)
    rows = []
    n = df.height
    for score_col, pass_col in pairs:  # one small aggregation per metric column, not per row
        score = pl.col(score_col)
        passed = pl.col(pass_col) if pass_col in df.columns else pl.lit(None, dtype=pl.Boolean)
        rows.append(
            df.select(
                pl.lit(score_col).alias("metric"),
                score.count().cast(pl.Int64).alias("count"),
                score.mean().fill_null(0.0).alias("mean"),
                score.median().fill_null(0.0).alias("median"),
                score.min().cast(pl.Float64).fill_null(0.0).alias("min"),
                score.max().cast(pl.Float64).fill_null(0.0).alias("max"),
                score.std(ddof=0).fill_null(0.0).alias("std_pop"),
                (passed.fill_null(False).sum() / n if n else pl.lit(0.0)).cast(pl.Float64).alias("pass_rate"),
                (score.null_count() / n if n else pl.lit(0.0)).cast(pl.Float64).alias("null_rate"),
            )
        )
    return pl.concat(rows)


def batch_passed(scored: Any, /) -> bool:
    """True when every row passed and the composite pass rate is >= 0.5; an empty batch fails.

    Examples
    --------
    >>> import polars as pl
    >>> batch_passed(pl.DataFrame({"passed": [True, True]})), batch_passed(pl.DataFrame({"passed": []}))
    (True, False)
    """
    df = to_polars(scored, function="batch_passed")
    if "passed" not in df.columns:
        raise SchemaError("missing column", function="batch_passed", column="passed", available=df.columns)
    if df.height == 0:
        return False
    passed = df.get_column("passed").fill_null(False)
    return bool(passed.all()) and float(passed.sum()) / df.height >= 0.5


def detect_regressions(baseline: Any, current: Any, /, threshold: float = 0.05) -> pl.DataFrame:
    """Per metric present in both: baseline_mean, current_mean, delta, regressed (delta < -threshold).

    ``baseline`` and ``current`` are summaries from :func:`summarize_batch` or scored frames
    (summarised first). The composite row is not compared (the seed compares metrics only).

    Examples
    --------
    >>> import polars as pl
    >>> a = pl.DataFrame({"faithfulness": [0.9, 0.7]})
    >>> b = pl.DataFrame({"faithfulness": [0.6, 0.7]})
    >>> detect_regressions(a, b).select("metric", "regressed").row(0)
    ('faithfulness', True)
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise InvalidParameterError(f"detect_regressions: threshold must be a number, found {threshold!r}")
    base, cur = _as_summary(baseline), _as_summary(current)
    joined = base.select("metric", pl.col("mean").alias("baseline_mean")).join(
        cur.select("metric", pl.col("mean").alias("current_mean")), on="metric", how="inner", maintain_order="left"
    )
    joined = joined.filter(pl.col("metric") != "composite_score")
    delta = pl.col("current_mean") - pl.col("baseline_mean")
    return joined.with_columns(delta.alias("delta"), (delta < -float(threshold)).alias("regressed"))


def _as_summary(frame: Any) -> pl.DataFrame:
    df = to_polars(frame, function="detect_regressions")
    if "metric" in df.columns and "mean" in df.columns:
        return df
    return summarize_batch(df)
