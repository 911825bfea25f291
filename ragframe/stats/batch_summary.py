"""The seed's batch functions (rag-eval-node-ts 0.3.2), as thin aliases of the one way.

:func:`summarize_batch` is :func:`ragframe.summarize` with ``stats="seed"``;
:func:`detect_regressions` is :func:`ragframe.regressions` on two seed summaries;
:func:`batch_passed` says whether a batch passes. Their columns and numbers are the
seed's, which differ from the one way by documented post-steps only: the median is
named ``median`` (``p50`` in :func:`ragframe.summarize`), a statistic that is undefined
(an all-null metric, an empty frame, no pass flag column) is 0.0 (null in
:func:`ragframe.summarize`), and the regression columns are ``baseline_mean`` and
``current_mean`` (``baseline`` and ``current`` in :func:`ragframe.regressions`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.metrics import score_columns
from ragframe.public import public
from ragframe.schema import column_names, to_polars
from ragframe.stats.regressions import regressions
from ragframe.stats.summary import SEED_STATS, is_summary, summarize

__all__ = ["summarize_batch", "batch_passed", "detect_regressions"]

_COMPOSITE = "composite_score"
#: the seed's names for columns that summarize and regressions name otherwise
_SEED_SUMMARY_NAMES = {"p50": "median"}
_SEED_REGRESSION_NAMES = {"baseline": "baseline_mean", "current": "current_mean"}


@public
def summarize_batch(scored: Any, /, metrics: Iterable[str] | None = None) -> pl.DataFrame:
    """The seed's batch aggregates: ``summarize(scored, stats="seed")`` in the seed's form.

    One row per metric: ``metric, count, mean, median, min, max, std_pop, pass_rate,
    null_rate``, computed by :func:`ragframe.summarize` (``median`` is its ``p50``).
    Statistics are over the non-null scores; ``pass_rate`` is rows with
    ``<metric>_passed == True`` over all rows, ``null_rate`` null scores over all rows,
    ``std_pop`` divides by n (the seed's stdDev). Seed post-step: a statistic that is
    undefined (a metric with no non-null score, an empty frame, no pass flag column) is
    0.0 instead of null. The last row is ``composite_score`` (its pass_rate from
    ``passed``) when present.

    Parameters
    ----------
    scored : frame
        A scored frame (any frame kind).
    metrics : list of str, optional
        Score columns; default every score column (:func:`ragframe.metrics.score_columns`).

    Returns
    -------
    polars.DataFrame
        The seed's summary columns above, one row per metric, ``composite_score`` last.

    Examples
    --------
    >>> import polars as pl
    >>> scored = pl.DataFrame({"faithfulness": [0.2, None, 1.0], "faithfulness_passed": [False, None, True]})
    >>> summarize_batch(scored).select("metric", "count", "mean", "pass_rate", "null_rate").row(0)
    ('faithfulness', 2, 0.6, 0.3333333333333333, 0.3333333333333333)
    """
    return _seed_form(summarize(scored, metrics=_seed_metrics(scored, metrics), stats="seed"))


def _seed_metrics(scored: Any, metrics: Iterable[str] | None) -> list[str]:
    """The seed's metric rows: the metrics asked (default every score column), then ``composite_score``."""
    columns = column_names(scored)
    if metrics is None:
        names = [c for c in score_columns(columns) if c != _COMPOSITE]
    else:
        names = validate.column_list(metrics, "metrics", allow_empty=True)
        missing = [m for m in names if m not in columns]
        if missing:
            raise SchemaError("missing column", column=missing[0], available=columns)
    if _COMPOSITE in columns and _COMPOSITE not in names:
        names.append(_COMPOSITE)
    if not names:
        raise SchemaError("no score columns to summarize", available=columns)
    return names


def _seed_form(summary: pl.DataFrame) -> pl.DataFrame:
    """The seed's post-step: ``p50`` named ``median``, undefined statistics 0.0 instead of null."""
    undefined = [name for name in SEED_STATS if name != "count"]
    return summary.with_columns(pl.col(undefined).fill_null(0.0)).rename(_SEED_SUMMARY_NAMES)


@public
def batch_passed(scored: Any, /) -> bool:
    """The seed's batch verdict: every row passed and the composite pass rate is >= 0.5.

    Parameters
    ----------
    scored : frame
        A frame from :func:`ragframe.evaluate` (it needs the ``passed`` column; null counts as failed).

    Returns
    -------
    bool
        True when the batch passes; an empty batch fails.

    Examples
    --------
    >>> import polars as pl
    >>> batch_passed(pl.DataFrame({"passed": [True, True]})), batch_passed(pl.DataFrame({"passed": []}))
    (True, False)
    """
    df = to_polars(scored)
    if "passed" not in df.columns:
        raise SchemaError("missing column", column="passed", available=df.columns)
    if df.height == 0:
        return False
    passed = df.get_column("passed").fill_null(False)
    return bool(passed.all()) and float(passed.sum()) / df.height >= 0.5


@public(rename={"a": "baseline", "b": "current"})
def detect_regressions(baseline: Any, current: Any, /, threshold: float = 0.05) -> pl.DataFrame:
    """The seed's regression rule: :func:`ragframe.regressions` on two seed summaries.

    ``baseline`` and ``current`` are summaries (:func:`ragframe.stats.summary.is_summary`)
    or scored frames, summarised first by :func:`summarize_batch` (so an all-null
    metric's mean is the seed's 0.0). A metric regressed when its mean dropped by more
    than ``threshold``. Seed post-steps: the composite row is not compared, and the mean
    columns are named ``baseline_mean`` and ``current_mean``.

    Parameters
    ----------
    baseline, current : frame
        Two summaries or two scored frames (or one of each).
    threshold : float
        A drop of the mean by more than this (>= 0) is a regression (the seed's
        ``regressionThreshold``; :func:`ragframe.regressions` calls it ``max_drop``).

    Returns
    -------
    polars.DataFrame
        ``metric, baseline_mean, current_mean, delta, regressed``, one row per metric in both
        (the baseline's order).

    Examples
    --------
    >>> import polars as pl
    >>> a = pl.DataFrame({"faithfulness": [0.9, 0.7]})
    >>> b = pl.DataFrame({"faithfulness": [0.6, 0.7]})
    >>> detect_regressions(a, b).select("metric", "regressed").row(0)
    ('faithfulness', True)
    """
    threshold = validate.number(threshold, "threshold", minimum=0.0)
    frames = (baseline, current)
    base, now = (f if is_summary(column_names(f)) else summarize_batch(f) for f in frames)
    found = regressions(base, now, max_drop=threshold)
    seed = found.select("metric", "baseline", "current", "delta", "regressed")  # the seed's five columns
    return seed.filter(pl.col("metric") != _COMPOSITE).rename(_SEED_REGRESSION_NAMES)
