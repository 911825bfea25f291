"""Per-metric summaries with confidence intervals, built from mergeable reducers.

:func:`summarize` gives the tidy table of ``docs/statistics.md``: one row per metric
(per group with ``by=``). It is the finalisation of a :class:`SummaryState`, the
mergeable reducers (rows, count, mean, sum of squared deviations, min, max, pass
count, and a quantile sketch) that a stream of batches or a cluster accumulates:
``summary_state(a).merge(summary_state(b)).finalize()`` equals ``summarize(concat(a, b))``
for count, mean, gm, std, min, max and pass rate (to floating-point rounding), and its
percentiles are within :data:`SKETCH_ERROR` of the exact ones.

``gm`` is trec_eval's geometric mean, exp(mean(log(max(value, 0.00001)))), for the metrics
whose registry entry names one (:attr:`ragframe.Metric.geometric_mean`: ``average_precision``
is trec_eval's ``gm_map``, ``bpref`` its ``gm_bpref``); null for every other column.

Percentiles from :func:`summarize` are exact (computed from the values in memory).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.kernels.groups import dense_code, group_codes
from ragframe.kernels.quantiles import QUANTILE_METHODS, lerp, segment_quantiles, virtual_index
from ragframe.kernels.resampling import bootstrap_means, percentile_interval
from ragframe.kernels.trec_measures import geometric_logs
from ragframe.metrics import metric_for_column, passed_column, score_columns
from ragframe.public import public
from ragframe.schema import first_true_row, to_polars

__all__ = [
    "SummaryState",
    "summarize",
    "summary_state",
    "merge_summary_states",
    "is_summary",
    "score_bounds",
    "STATS",
    "SEED_STATS",
    "SKETCH_BINS",
    "SKETCH_ERROR",
]

#: The quantile sketch has this many equal bins over [0, 1] and keeps each bin's count and sum.
SKETCH_BINS = 10_000
#: A percentile finalised from a sketch is within this distance of the exact one
#: (one bin width; exact when every bin holds a single distinct value).
SKETCH_ERROR = 1.0 / SKETCH_BINS

PERCENTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}
SUMMARY_COLUMNS = [
    "metric",
    "count",
    "null_count",
    "null_rate",
    "mean",
    "gm",
    "std",
    "std_pop",
    "min",
    *PERCENTILES,
    "max",
    "pass_rate",
    "ci_low",
    "ci_high",
]
#: The statistics :func:`summarize` can report (``stats=``), in its column order.
STATS: tuple[str, ...] = tuple(SUMMARY_COLUMNS[1:])
#: ``stats="seed"``: rag-eval-node-ts's batch aggregates in its order (its ``median`` is ``p50``).
SEED_STATS: tuple[str, ...] = ("count", "mean", "p50", "min", "max", "std_pop", "pass_rate", "null_rate")
_STATE_COLUMNS = [
    "metric",
    "rows",
    "count",
    "mean",
    "m2",
    "log_sum",
    "min",
    "max",
    "passed",
    "has_passed",
    "bins",
    "bin_counts",
    "bin_sums",
]


def is_summary(columns: Iterable[str]) -> bool:
    """True when ``columns`` are a summary's (``metric`` and ``mean``) rather than per-row scores.

    The one test of "is this a summary?" used by :func:`ragframe.regressions`,
    :func:`ragframe.gate`, :func:`ragframe.detect_regressions` and the command line.

    Examples
    --------
    >>> is_summary(["metric", "count", "mean"]), is_summary(["id", "mrr"])
    (True, False)
    """
    names = set(columns)
    return "metric" in names and "mean" in names


def score_bounds(column: str) -> tuple[float, float] | None:
    """The closed range of a score column's values (its metric's ``bounds``), or None when unbounded.

    Columns that are not scores are unbounded; ``composite_score`` (a weighted mean of the
    thresholded scores) lies in the hull of their bounds: [0, 1] while every registered
    metric with a threshold is bounded by [0, 1] (every built-in one), else unbounded.

    Examples
    --------
    >>> score_bounds("bm25_ndcg_at_10"), score_bounds("latency_ms")
    ((0.0, 1.0), None)
    """
    if not score_columns([column]):
        return None
    metric = metric_for_column(column)
    if metric is None:  # composite_score
        from ragframe.metrics.registry import metrics

        unit = all(m.bounds is not None and tuple(m.bounds) == (0.0, 1.0) for m in metrics() if m.threshold is not None)
        return (0.0, 1.0) if unit else None
    return None if metric.bounds is None else (float(metric.bounds[0]), float(metric.bounds[1]))


#: How far a score may lie outside its metric's bounds before it is an error (floating-point rounding).
BOUNDS_TOLERANCE = 1e-9


def prepare_scores(scores: Any, metrics: Any, by: Any) -> tuple[pl.DataFrame, list[str], list[str]]:
    """Validate and return (frame, metrics, by); checks dtypes, rejects NaN scores and scores outside their bounds.

    A score column of a registered metric (:func:`score_bounds`) holding a value outside its
    metric's closed range (beyond rounding, :data:`BOUNDS_TOLERANCE`) is a :class:`SchemaError`
    naming the column, the row and the value: a 1.5 in a [0, 1] metric is not a score of it
    (a mislabelled column, or a percentage), and its statistics would be wrong.
    """
    df = to_polars(scores)
    group_by = [] if by is None else validate.column_list(by, "by", allow_empty=True)
    for name in group_by:
        if name not in df.columns:
            raise SchemaError("missing column", column=name, available=df.columns)
    if metrics is None:
        names = [c for c in score_columns(df.schema) if c not in group_by]
        if not names:
            raise SchemaError(
                "no ragframe score columns found; pass {metrics} to name them",
                available=df.columns,
                mentions={"metrics": "[...]"},
            )
    else:
        names = validate.column_list(metrics, "metrics")
    for name in names:
        if name not in df.columns:
            raise SchemaError("missing column", column=name, available=df.columns)
        dtype = df.schema[name]
        if not (dtype.is_numeric() and dtype != pl.Boolean) and dtype != pl.Null:
            raise SchemaError(
                "score column is not numeric",
                column=name,
                expected="a numeric column",
                found=str(dtype),
            )
        if dtype.is_float():
            bad = df[name].is_nan() | df[name].is_infinite()
            row = first_true_row(bad)
            if row is not None:
                raise SchemaError(
                    "score is NaN or infinite",
                    column=name,
                    row=row,
                    expected="a finite number or null",
                    found=str(df[name][row]),
                )
        _check_bounds(df, name)
        flag = passed_column(name)
        if flag in df.columns and df.schema[flag] not in (pl.Boolean, pl.Null):
            raise SchemaError(
                "pass flag is not boolean",
                column=flag,
                expected="Boolean",
                found=str(df.schema[flag]),
            )
    return df, names, group_by


def _check_bounds(df: pl.DataFrame, name: str) -> None:
    """A value of a registered metric's column outside its bounds is a SchemaError naming its row."""
    bounds = score_bounds(name)
    if bounds is None or df.schema[name] == pl.Null:
        return
    low, high = bounds
    values = df.get_column(name)
    row = first_true_row((values < low - BOUNDS_TOLERANCE) | (values > high + BOUNDS_TOLERANCE))
    if row is not None:
        metric = metric_for_column(name)
        custom = metric is not None and metric.family == "custom"
        raise SchemaError(
            "score outside its metric's bounds"
            + ("; register the metric with its range (bounds=(low, high), or None)" if custom else ""),
            column=name,
            row=row,
            expected=f"a value in [{low:g}, {high:g}] or null",
            found=repr(values[row]),
        )


def _group_codes(df: pl.DataFrame, by: list[str]) -> tuple[np.ndarray, pl.DataFrame]:
    """Dense group code per row (groups in sorted key order, nulls first) and the key table."""
    return group_codes(df, by)


def _sketch(sorted_values: np.ndarray, counts: np.ndarray) -> list[pl.Series]:
    """Per segment (values sorted within segments, all in [0, 1]): occupied bins, their counts and sums."""
    n_groups = counts.size
    segment = np.repeat(np.arange(n_groups, dtype=np.int64), counts)
    bins = np.minimum((sorted_values * SKETCH_BINS).astype(np.int64), SKETCH_BINS - 1)
    key = segment * SKETCH_BINS + bins  # non-decreasing: values are sorted within segments
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else np.zeros(0, dtype=np.int64)
    cell_counts = np.diff(np.r_[first, key.size])
    cell_sums = np.add.reduceat(sorted_values, first) if first.size else np.zeros(0)
    per_group = np.bincount(segment[first], minlength=n_groups) if first.size else np.zeros(n_groups, dtype=np.int64)
    offsets = np.r_[0, np.cumsum(per_group)]

    def lists(values: np.ndarray, name: str, dtype: pl.DataType) -> pl.Series:
        flat = pl.Series(name, values, dtype=dtype)
        return pl.Series(name, [flat[offsets[g] : offsets[g + 1]] for g in range(n_groups)], dtype=pl.List(dtype))

    return [
        lists(bins[first], "bins", pl.Int64),
        lists(cell_counts, "bin_counts", pl.Int64),
        lists(cell_sums, "bin_sums", pl.Float64),
    ]


@dataclass(frozen=True)
class SummaryState:
    """Mergeable reducers of a summary: one row per (group, metric).

    ``frame`` holds the group columns, then ``metric``, ``rows`` (all rows),
    ``count`` (non-null scores), ``mean``, ``m2`` (sum of squared deviations),
    ``log_sum`` (sum of log(max(value, 0.00001)) for a metric with a geometric mean, else
    null), ``min``, ``max``, ``passed`` (rows passed), ``has_passed`` (a pass flag column
    exists), and the quantile sketch: ``bins`` (occupied bin numbers), ``bin_counts``
    and ``bin_sums`` (values and their sum per bin). The sketch is null for a metric
    with a value outside [0, 1]; merged percentiles of that metric are then null.

    Made by :func:`summary_state`, combined by :meth:`merge` or
    :func:`merge_summary_states`, turned into the summary table by :meth:`finalize`.
    A frozen dataclass: the parameters are its attributes.

    Parameters
    ----------
    frame : polars.DataFrame
        The reducers, one row per (group, metric), with the columns above.
    by : tuple of str
        The group columns of ``frame`` (empty when ungrouped).

    Examples
    --------
    >>> import polars as pl
    >>> a = summary_state(pl.DataFrame({"mrr": [1.0, 0.5]}))
    >>> b = summary_state(pl.DataFrame({"mrr": [0.0, None]}))
    >>> a.merge(b).finalize().select("count", "null_count", "mean", "max").row(0)
    (3, 1, 0.5, 1.0)
    """

    frame: pl.DataFrame
    by: tuple[str, ...] = ()

    def merge(self, other: SummaryState) -> SummaryState:
        """The state of both inputs together.

        Parameters
        ----------
        other : SummaryState
            The state of a disjoint batch, grouped by the same columns.

        Returns
        -------
        SummaryState
            A new state; neither input is changed.

        Examples
        --------
        >>> import polars as pl
        >>> a = summary_state(pl.DataFrame({"mrr": [1.0]}))
        >>> a.merge(summary_state(pl.DataFrame({"mrr": [0.0]}))).frame.select("rows", "count", "mean").row(0)
        (2, 2, 0.5)
        """
        return merge_summary_states([self, other])

    @public(name="SummaryState.finalize")
    def finalize(self, ci: str = "t", confidence: float = 0.95, percentile_method: str = "linear") -> pl.DataFrame:
        """The summary table; percentiles come from the sketch (within :data:`SKETCH_ERROR`).

        The interval is the t interval of :func:`summarize`, clipped to the metric's bounds.

        Parameters
        ----------
        ci : {"t"}
            Confidence interval of the mean: Student t (a state keeps no values to
            bootstrap).
        confidence : float
            Coverage of the interval, strictly between 0 and 1.
        percentile_method : str
            numpy's method name for p50/p90/p95/p99, applied to the sketch.

        Returns
        -------
        polars.DataFrame
            The table of :func:`summarize` with every statistic: the ``by`` columns, then
            ``metric``, ``count, null_count, null_rate, mean, gm, std, std_pop, min, p50, p90,
            p95, p99, max, pass_rate, ci_low, ci_high``.

        Examples
        --------
        >>> import polars as pl
        >>> state = summary_state(pl.DataFrame({"split": ["a", "a", "b"], "mrr": [1.0, 0.5, 0.0]}), by="split")
        >>> state.finalize(confidence=0.9).select("split", "count", "mean", "p50").rows()
        [('a', 2, 0.75, 0.75), ('b', 1, 0.0, 0.0)]
        """
        validate.choice(ci, "ci", ("t",))  # a merged state has no values to resample
        confidence = validate.confidence(confidence, "confidence")
        validate.choice(percentile_method, "percentile_method", QUANTILE_METHODS)
        state = self.frame
        percentiles = _sketch_percentiles(state, percentile_method)
        return _finish(state, list(self.by), percentiles, _t_interval(state, confidence), STATS)

    def write_parquet(self, path: str | Path) -> None:
        """Write the state (its ``by`` columns are recorded in the file's metadata).

        Parameters
        ----------
        path : str or pathlib.Path
            The Parquet file to write (replaced when it exists).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import polars as pl
        >>> state = summary_state(pl.DataFrame({"split": ["a", "b"], "mrr": [1.0, 0.5]}), by="split")
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     state.write_parquet(pathlib.Path(tmp) / "state.parquet")
        ...     SummaryState.read_parquet(pathlib.Path(tmp) / "state.parquet").by
        ('split',)
        """
        self.frame.write_parquet(path, metadata={"ragframe.summary_state.by": "\x1f".join(self.by)})

    @classmethod
    def read_parquet(cls, path: str | Path) -> SummaryState:
        """Read a state written by :meth:`write_parquet`.

        Parameters
        ----------
        path : str or pathlib.Path
            A file written by :meth:`write_parquet`.

        Returns
        -------
        SummaryState
            The state, with the ``by`` columns recorded in the file.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import polars as pl
        >>> state = summary_state(pl.DataFrame({"mrr": [1.0, 0.5]}))
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     state.write_parquet(pathlib.Path(tmp) / "state.parquet")
        ...     read = SummaryState.read_parquet(pathlib.Path(tmp) / "state.parquet")
        >>> read.frame.equals(state.frame), read.by
        (True, ())
        """
        meta = pl.read_parquet_metadata(path)
        joined = meta.get("ragframe.summary_state.by", "")
        return cls(pl.read_parquet(path), tuple(joined.split("\x1f")) if joined else ())


@public
def summary_state(
    scores: Any, /, metrics: str | Sequence[str] | None = None, by: str | Sequence[str] | None = None
) -> SummaryState:
    """The mergeable reducers of ``scores`` (see :class:`SummaryState`).

    Parameters
    ----------
    scores : frame
        Any frame with score columns (polars, LazyFrame, pyarrow, pandas): one batch.
    metrics : str or list of str, optional
        Score columns; default every score column ragframe wrote, as in :func:`summarize`.
    by : str or list of str, optional
        Metadata columns; one state row per metric per group.

    Returns
    -------
    SummaryState
        Its ``finalize()`` is :func:`summarize` of ``scores`` (percentiles from the sketch).

    Examples
    --------
    >>> import polars as pl
    >>> summary_state(pl.DataFrame({"mrr": [1.0, 0.5]})).frame.select("metric", "count", "mean").row(0)
    ('mrr', 2, 0.75)
    """
    df, names, group_by = prepare_scores(scores, metrics, by)
    codes, keys = _group_codes(df, group_by)
    return SummaryState(_state_frame(df, names, group_by, codes, keys), tuple(group_by))


def _state_frame(
    df: pl.DataFrame,
    names: list[str],
    by: list[str],
    codes: np.ndarray,
    keys: pl.DataFrame,
    sketch: bool = True,
    segments: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
) -> pl.DataFrame:
    """Reducers per (group, metric), from each metric's values sorted within groups (one sort per metric)."""
    n_groups = max(keys.height, 1) if by else 1
    rows = np.bincount(codes, minlength=n_groups).astype(np.int64)
    parts = []
    for index, name in enumerate(names):  # a handful of metric columns; every group at once
        values, starts, counts = segments[index] if segments else _sorted_segments(df[name], codes, n_groups)
        segment = np.repeat(np.arange(n_groups), counts)
        filled = counts > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.bincount(segment, values, n_groups) / counts
            m2 = np.bincount(segment, (values - mean[segment]) ** 2, n_groups)
        first = np.minimum(starts, max(values.size - 1, 0))
        last = np.clip(starts + counts - 1, 0, max(values.size - 1, 0))
        declared = metric_for_column(name)
        log_sum = (
            np.bincount(segment, geometric_logs(values), n_groups).astype(np.float64)  # int64 when empty
            if declared is not None and declared.geometric_mean is not None
            else np.full(n_groups, np.nan)
        )
        flag = passed_column(name)
        has_flag = flag in df.columns
        passed = (
            np.bincount(codes, df[flag].fill_null(False).cast(pl.Float64).to_numpy(), n_groups)
            if has_flag
            else np.zeros(n_groups)
        )
        columns = {
            "metric": [name] * n_groups,
            "rows": rows,
            "count": counts,
            "mean": np.where(filled, mean, np.nan),
            "m2": np.where(filled, m2, np.nan),
            "log_sum": log_sum,
            "min": np.where(filled, values[first] if values.size else np.nan, np.nan),
            "max": np.where(filled, values[last] if values.size else np.nan, np.nan),
            "passed": passed.astype(np.int64),
            "has_passed": [has_flag] * n_groups,
        }
        part = pl.DataFrame(columns).with_columns(pl.col("mean", "m2", "log_sum", "min", "max").fill_nan(None))
        in_range = values.size == 0 or (values[0] >= 0.0 and values.max() <= 1.0 and values.min() >= 0.0)
        if sketch and in_range:
            part = part.with_columns(_sketch(values, counts))
        else:
            part = part.with_columns(
                pl.lit(None, pl.List(pl.Int64)).alias("bins"),
                pl.lit(None, pl.List(pl.Int64)).alias("bin_counts"),
                pl.lit(None, pl.List(pl.Float64)).alias("bin_sums"),
            )
        parts.append(part.with_columns(pl.Series("_code", np.arange(n_groups, dtype=np.int64))))
    state = pl.concat(parts).sort("_code", maintain_order=True)
    if by:
        state = state.join(keys.with_row_index("_code").with_columns(pl.col("_code").cast(pl.Int64)), on="_code")
    return state.select(*by, *_STATE_COLUMNS).filter(pl.col("rows") > 0) if by else state.select(_STATE_COLUMNS)


@public
def merge_summary_states(states: Sequence[SummaryState]) -> SummaryState:
    """Merge states of disjoint batches (Chan et al.'s pairwise update for mean and m2).

    Parameters
    ----------
    states : sequence of SummaryState
        At least one state, all grouped by the same columns (an
        :class:`~ragframe.exceptions.InvalidParameterError` otherwise).

    Returns
    -------
    SummaryState
        The state of all the batches together.

    Examples
    --------
    >>> import polars as pl
    >>> parts = [summary_state(pl.DataFrame({"mrr": [v]})) for v in (0.0, 0.5, 1.0)]
    >>> merge_summary_states(parts).finalize()["std"].item()
    0.5
    """
    states = list(states)
    if not states:
        raise InvalidParameterError("no states to merge")
    by = states[0].by
    for state in states[1:]:
        if state.by != by:
            raise InvalidParameterError(f"states grouped by {by} and {state.by} cannot merge")
    keys = [*by, "metric"]
    frame = pl.concat([_with_log_sum(s.frame) for s in states], how="vertical_relaxed")
    count = pl.col("count")
    total = count.sum()
    weighted_mean = (pl.col("mean").fill_null(0.0) * count).sum() / total
    # sum of squared deviations about the merged mean: sum of m2_i + n_i (mean_i - mean)^2
    merged = frame.group_by(keys, maintain_order=True).agg(
        pl.col("rows").sum(),
        total.alias("count"),
        pl.when(total > 0).then(weighted_mean).alias("mean"),
        pl.when(total > 0)
        .then(pl.col("m2").fill_null(0.0).sum() + (count * (pl.col("mean").fill_null(0.0) - weighted_mean) ** 2).sum())
        .alias("m2"),
        pl.when(pl.col("log_sum").is_not_null().all()).then(pl.col("log_sum").sum()).alias("log_sum"),
        pl.col("min").min(),
        pl.col("max").max(),
        pl.col("passed").sum(),
        pl.col("has_passed").any(),
        pl.col("bins"),
        pl.col("bin_counts"),
        pl.col("bin_sums"),
    )
    merged = merged.with_columns(_merge_sketches(merged))
    sort_keys = [*by] if by else []
    order = merged.with_columns(dense_code(pl.col("metric")).alias("_m")) if not by else merged
    if sort_keys:
        metric_order = {m: i for i, m in enumerate(frame["metric"].unique(maintain_order=True).to_list())}
        order = order.with_columns(pl.col("metric").replace_strict(metric_order).alias("_m")).sort(
            [*sort_keys, "_m"], nulls_last=False
        )
    return SummaryState(order.select(*by, *_STATE_COLUMNS), by)


def _with_log_sum(frame: pl.DataFrame) -> pl.DataFrame:
    """A state frame with its ``log_sum`` column (null in a state written before it existed: no ``gm`` then)."""
    if "log_sum" in frame.columns:
        return frame
    order = list(frame.columns)
    order.insert(order.index("m2") + 1, "log_sum")
    return frame.with_columns(pl.lit(None, pl.Float64).alias("log_sum")).select(order)


def _merge_sketches(merged: pl.DataFrame) -> list[pl.Series]:
    """Add up the bin counts and sums gathered in each (group, metric) cell; null if any part is null."""
    cell = pl.int_range(pl.len()).alias("_cell")
    parts = merged.select(cell, "bins", "bin_counts", "bin_sums")
    broken = parts.select(pl.col("bins").list.eval(pl.element().is_null()).list.any().fill_null(True).alias("broken"))[
        "broken"
    ]
    flat = (
        parts.explode("bins", "bin_counts", "bin_sums")
        .explode("bins", "bin_counts", "bin_sums")
        .drop_nulls("bins")
        .group_by("_cell", "bins")
        .agg(pl.col("bin_counts").sum(), pl.col("bin_sums").sum())
        .sort("_cell", "bins")
        .group_by("_cell", maintain_order=True)
        .agg("bins", "bin_counts", "bin_sums")
    )
    out = parts.select("_cell").join(flat, on="_cell", how="left").sort("_cell")
    out = out.with_columns(
        pl.when(~broken).then(pl.col(c).fill_null(pl.lit([], dtype=out.schema[c])))
        for c in ("bins", "bin_counts", "bin_sums")
    )
    return out.select("bins", "bin_counts", "bin_sums").get_columns()


def _sketch_percentiles(state: pl.DataFrame, method: str) -> dict[str, np.ndarray]:
    """Percentiles from the sketches: each order statistic is its bin's mean value."""
    rows = state.height
    out = {name: np.full(rows, np.nan) for name in PERCENTILES}
    if rows == 0:
        return out
    lengths_all = state.select(pl.col("bin_counts").list.len().fill_null(0))["bin_counts"].to_numpy()
    has = lengths_all > 0
    if not has.any():
        return out
    flat = state.select(pl.col("bin_counts").explode(), pl.col("bin_sums").explode()).drop_nulls()
    bin_counts = flat["bin_counts"].cast(pl.Float64).to_numpy()
    bin_means = flat["bin_sums"].to_numpy() / bin_counts
    cum = np.cumsum(bin_counts)
    lengths = lengths_all[has]
    seg_start = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    before = np.where(seg_start > 0, cum[seg_start - 1], 0.0)
    n = state["count"].to_numpy()[has].astype(np.float64)
    lo_clip = state["min"].to_numpy()[has]
    hi_clip = state["max"].to_numpy()[has]

    def order_stat(index: np.ndarray) -> np.ndarray:
        position = np.searchsorted(cum, before + index + 1, side="left")
        return np.clip(bin_means[position], lo_clip, hi_clip)

    for name, q in PERCENTILES.items():
        if method in ("lower", "higher", "nearest"):
            index = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}[method]((n - 1) * q)
            out[name][has] = order_stat(np.clip(index, 0, n - 1))
            continue
        # numpy's virtual index, then interpolation between the two neighbouring order statistics
        virtual = virtual_index(n, q, method)
        previous = np.clip(np.floor(virtual), 0, n - 1)
        following = np.clip(np.floor(virtual) + 1, 0, n - 1)
        gamma = np.clip(virtual - np.floor(virtual), 0.0, 1.0)
        gamma = np.where(virtual >= n - 1, 0.0, np.where(virtual < 0, 0.0, gamma))
        if method == "midpoint":
            gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
        out[name][has] = lerp(order_stat(previous), order_stat(following), gamma)
    return out


def _t_interval(state: pl.DataFrame, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Student t interval of the mean: mean +- t(1 - (1 - c) / 2, n - 1) sd / sqrt(n); null when n < 2.

    The t quantile is ``scipy.special.stdtrit``, the function ``scipy.stats.t.ppf`` calls (the
    same values, bit for bit), without importing ``scipy.stats`` (about 0.5 s, on every run).
    """
    from scipy.special import stdtrit

    n = state["count"].to_numpy().astype(np.float64)
    mean = state["mean"].to_numpy().astype(np.float64)
    m2 = state["m2"].to_numpy().astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt(np.maximum(m2, 0.0) / (n - 1))
        half = stdtrit(n - 1, 0.5 + confidence / 2) * sd / np.sqrt(n)
    half = np.where(n >= 2, half, np.nan)
    return mean - half, mean + half


def _clip_to_bounds(metrics: pl.Series, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Clip each row's interval to its metric's bounds (:func:`score_bounds`); unbounded metrics unchanged."""
    bounds = {name: score_bounds(name) or (-np.inf, np.inf) for name in metrics.unique().to_list()}
    lower = metrics.replace_strict({k: v[0] for k, v in bounds.items()}, return_dtype=pl.Float64).to_numpy()
    upper = metrics.replace_strict({k: v[1] for k, v in bounds.items()}, return_dtype=pl.Float64).to_numpy()
    with np.errstate(invalid="ignore"):
        return np.clip(low, lower, upper), np.clip(high, lower, upper)


def _finish(
    state: pl.DataFrame,
    by: list[str],
    percentiles: dict[str, np.ndarray],
    interval: tuple[np.ndarray, np.ndarray] | None,
    stats: Sequence[str],
) -> pl.DataFrame:
    """The summary columns ``stats`` from the reducers, exact or sketched percentiles and the interval."""
    count = pl.col("count")
    rows = pl.col("rows")
    columns = [pl.Series(name, values).fill_nan(None) for name, values in percentiles.items()]
    if interval is not None:
        low, high = _clip_to_bounds(state["metric"], *interval)
        columns += [pl.Series("ci_low", low).fill_nan(None), pl.Series("ci_high", high).fill_nan(None)]
    out = (
        _with_log_sum(state)
        .with_columns(*columns)
        .with_columns(
            (rows - count).alias("null_count"),
            pl.when(count > 0).then((pl.col("log_sum") / count).exp()).alias("gm"),
            pl.when(rows > 0).then((rows - count) / rows).alias("null_rate"),
            pl.when(count > 1).then((pl.col("m2").clip(0.0) / (count - 1)).sqrt()).alias("std"),
            pl.when(count > 0).then((pl.col("m2").clip(0.0) / count).sqrt()).alias("std_pop"),
            pl.when(pl.col("has_passed") & (rows > 0)).then(pl.col("passed") / rows).alias("pass_rate"),
            pl.col("min").cast(pl.Float64),
            pl.col("max").cast(pl.Float64),
        )
    )
    return out.select(*by, "metric", *stats)


def check_stats(stats: Any) -> list[str]:
    """``"all"``, ``"seed"``, one statistic or a list of them -> the statistic columns, in order.

    Shared with :func:`ragframe.distributed.summarize_dataset` (public within the package).

    Examples
    --------
    >>> check_stats(["mean", "p50"])
    ['mean', 'p50']
    """
    if isinstance(stats, str) and stats in ("all", "seed"):
        return list(STATS if stats == "all" else SEED_STATS)
    if isinstance(stats, str) and stats not in STATS:
        raise validate.fail("stats", f"'all', 'seed' or statistics from {list(STATS)}", stats)
    names = validate.column_list(stats, "stats")
    for name in names:  # the seed's "median" is p50
        validate.choice(name, "stats", STATS)
    return names


@public
def summarize(
    scores: Any,
    /,
    metrics: str | Sequence[str] | None = None,
    by: str | Sequence[str] | None = None,
    ci: str = "t",
    percentile_method: str = "linear",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int | None = 0,
    stats: str | Sequence[str] = "all",
) -> pl.DataFrame:
    """Per-metric (x group) summary of score columns: counts, moments, percentiles, pass rate, CI.

    Parameters
    ----------
    scores : frame
        Any frame with score columns (polars, LazyFrame, pyarrow, pandas).
    metrics : str or list of str, optional
        Score columns; default every score column ragframe wrote (:func:`ragframe.metrics.score_columns`).
    by : str or list of str, optional
        Metadata columns; one row per metric per group (groups sorted, nulls first).
    ci : {"t", "bootstrap"}
        Confidence interval of the mean. ``"t"`` (default): Student t, clipped to the
        metric's bounds (:func:`score_bounds`: [0, 1] for every ragframe score, so a t
        interval never claims a mean above 1; unbounded columns are not clipped; clipping
        only removes impossible values, so coverage is kept). ``"bootstrap"``: the
        percentile bootstrap (``n_resamples`` Poisson-weighted resamples drawn with
        ``seed``), inside the values' range by construction; measured, it covers no better
        than t on skewed or near-boundary scores, and worse on few values (docs/statistics.md).
    percentile_method : str
        numpy's method name for p50/p90/p95/p99 (the anchor seed's p95 is ``"higher"``).
    confidence : float
        Coverage of the interval, strictly between 0 and 1; default 0.95.
    n_resamples : int
        Bootstrap resamples (>= 1), default 2000.
    seed : int or None
        Random seed of the bootstrap (>= 0, or None for a fresh one).
    stats : "all", "seed", or list of str
        The statistic columns to report: ``"all"`` (default, :data:`STATS`), ``"seed"``
        (rag-eval-node-ts's batch aggregates :data:`SEED_STATS`: count, mean, p50, min,
        max, std_pop, pass_rate, null_rate), or any of :data:`STATS` in the order given.
        Percentiles and intervals that are not asked for are not computed.

    Returns
    -------
    polars.DataFrame
        ``by`` columns, then ``metric`` and the ``stats`` columns: ``count, null_count,
        null_rate, mean, gm`` (trec_eval's geometric mean, exp(mean(log(max(value,
        0.00001)))), for the metrics whose registry entry names one: ``average_precision``
        is ``gm_map``, ``bpref`` is ``gm_bpref``; null for the others), ``std`` (ddof=1),
        ``std_pop`` (ddof=0, the seed's stdDev), ``min, p50, p90, p95, p99, max,
        pass_rate`` (rows with ``<metric>_passed`` true over all rows; null without that
        column), ``ci_low, ci_high`` (null when fewer than 2 values). Statistics are over
        the non-null values; a metric with none has null
        statistics (never 0: :func:`ragframe.summarize_batch` reports the seed's 0.0).

    Examples
    --------
    >>> import polars as pl
    >>> scored = pl.DataFrame({"mrr": [1.0, 0.5, 0.0, None], "split": ["a", "a", "b", "b"]})
    >>> summarize(scored, by="split").select("split", "count", "mean", "p50").rows()
    [('a', 2, 0.75, 0.75), ('b', 1, 0.0, 0.0)]
    >>> summarize(pl.DataFrame({"mrr": [1.0, 1.0, 0.5]}))["ci_high"].item()  # t interval clipped to [0, 1]
    1.0
    >>> summarize(scored, stats="seed").columns
    ['metric', 'count', 'mean', 'p50', 'min', 'max', 'std_pop', 'pass_rate', 'null_rate']
    >>> ap = pl.DataFrame({"average_precision": [0.5, 0.125], "mrr": [1.0, 0.5]})
    >>> summarize(ap, stats=["mean", "gm"]).rows()  # gm: trec_eval's gm_map, sqrt(0.5 * 0.125)
    [('average_precision', 0.3125, 0.25), ('mrr', 0.75, None)]
    """
    validate.choice(ci, "ci", ("t", "bootstrap"))
    validate.choice(percentile_method, "percentile_method", QUANTILE_METHODS)
    confidence = validate.confidence(confidence, "confidence")
    n_resamples = validate.resamples(n_resamples, "n_resamples")
    seed = validate.seed(seed, "seed")
    chosen = check_stats(stats)
    df, names, group_by = prepare_scores(scores, metrics, by)
    codes, keys = _group_codes(df, group_by)
    n_groups = max(keys.height, 1) if group_by else 1
    segments = [_sorted_segments(df[name], codes, n_groups) for name in names]
    state = _state_frame(df, names, group_by, codes, keys, sketch=False, segments=segments)
    # the state has rows group-major, metric-minor; the per-segment arrays are metric-major
    order = np.arange(n_groups * len(names)).reshape(len(names), n_groups).T.ravel()
    present = _present_cells(codes, n_groups, len(names)) if group_by else np.ones(len(names), dtype=bool)
    pick = order[present]
    wanted = {label: q for label, q in PERCENTILES.items() if label in chosen}
    percentiles = {  # exact, from the values sorted within groups
        label: np.concatenate([segment_quantiles(*segment, q, percentile_method) for segment in segments])[pick]
        for label, q in wanted.items()
    }
    interval = None
    if "ci_low" in chosen or "ci_high" in chosen:
        if ci == "bootstrap":
            interval = _bootstrap_interval(segments, n_resamples, seed, confidence, pick)
        else:
            interval = _t_interval(state, confidence)
    return _finish(state, group_by, percentiles, interval, chosen)


def _bootstrap_interval(
    segments: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    n_resamples: int,
    seed: int | None,
    confidence: float,
    pick: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of each segment's mean (null below 2 values), in state row order."""
    low, high = [], []
    for sorted_values, starts, counts in segments:  # one resampling matrix per metric, every group at once
        lo, hi = percentile_interval(bootstrap_means(sorted_values, starts, counts, n_resamples, seed), confidence)
        lo[counts < 2] = np.nan
        hi[counts < 2] = np.nan
        low.append(lo)
        high.append(hi)
    return np.concatenate(low)[pick], np.concatenate(high)[pick]


def _present_cells(codes: np.ndarray, n_groups: int, n_metrics: int) -> np.ndarray:
    """Mask of (group, metric) cells, group-major, whose group has at least one row."""
    rows = np.bincount(codes, minlength=n_groups)
    return np.repeat(rows > 0, n_metrics)


def _sorted_segments(column: pl.Series, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Non-null values sorted by group, then value; with each group's start and count."""
    values = column.cast(pl.Float64)
    valid = values.is_not_null().to_numpy()
    values = values.drop_nulls()
    group = codes[valid]
    counts = np.bincount(group, minlength=n_groups).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    if n_groups == 1:
        return values.sort().to_numpy(), starts, counts
    # sort by value (multithreaded), then a stable radix sort by the small group code
    by_value = values.arg_sort().to_numpy()
    code_dtype = np.int16 if n_groups < 2**15 else np.int64
    by_group = np.argsort(group[by_value].astype(code_dtype), kind="stable")
    return values.to_numpy()[by_value[by_group]], starts, counts
