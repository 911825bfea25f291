"""Summaries of a Ray Dataset's scores: each block reduces to a mergeable state, merged on the driver.

:func:`summarize_dataset` runs :func:`ragframe.summary_state` on every block (inside
``map_batches``), ships each state as one Arrow row (the state frame in Arrow IPC bytes),
and merges them on the driver with :func:`ragframe.merge_summary_states`, the code
:func:`ragframe.evaluate_parquet` uses: per-row scores never reach the driver. The contract is
the local merge's: count, null count, min, max and pass rate equal :func:`ragframe.summarize`'s
exactly; mean, std and ``gm`` (trec_eval's geometric mean of ``average_precision`` and
``bpref``, from merged sums of the floored logarithms) to floating-point rounding (sums in
another order; relative 1e-12 in the tests); percentiles within
:data:`ragframe.stats.summary.SKETCH_ERROR` (1e-4; exact for discrete scores; null for scores
outside [0, 1]).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe import validate
from ragframe.distributed.runtime import compute_strategy, empty_frame, original_errors, prepared, require_ray
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.public import public
from ragframe.stats.summary import (
    STATS,
    SummaryState,
    check_stats,
    merge_summary_states,
    prepare_scores,
    summary_state,
)

__all__ = ["summarize_dataset", "BlockState", "frame_to_bytes", "frame_from_bytes"]

#: States merged on the driver at a time (bounds the driver's memory).
MERGE_EVERY = 64


def frame_to_bytes(frame: pl.DataFrame) -> bytes:
    """A polars frame as Arrow IPC bytes (how a block's small result travels as one value).

    Examples
    --------
    >>> frame_from_bytes(frame_to_bytes(pl.DataFrame({"a": [1]}))).rows()
    [(1,)]
    """
    buffer = io.BytesIO()
    frame.write_ipc(buffer)
    return buffer.getvalue()


def frame_from_bytes(data: bytes) -> pl.DataFrame:
    """The frame :func:`frame_to_bytes` wrote."""
    return pl.read_ipc(io.BytesIO(data))


def without_row(error: SchemaError) -> SchemaError:
    """The same error without its row number (a position within a Ray block means nothing to the caller)."""
    message = getattr(error, "_message", str(error))
    return SchemaError(
        f"{message} (in a row of the dataset)",
        column=error.column,
        expected=error.expected,
        found=error.found,
    )


@dataclass(frozen=True)
class BlockState:
    """The batch function of :func:`summarize_dataset`: a block of scores in, its summary state out as one row.

    Parameters
    ----------
    metrics : tuple of str
        Score columns.
    by : tuple of str
        Group columns.

    Examples
    --------
    >>> import pyarrow as pa
    >>> row = BlockState(("mrr",), ())(pa.table({"mrr": [1.0, 0.5]}))
    >>> frame_from_bytes(row.column("state")[0].as_py()).select("count", "mean").row(0)
    (2, 0.75)
    """

    metrics: tuple[str, ...]
    by: tuple[str, ...] = ()

    def __call__(self, batch: pa.Table) -> pa.Table:
        """One row: ``rows`` and ``state`` (the state frame's IPC bytes); no row for an empty block."""
        if batch.num_rows == 0:
            return pa.table({"rows": pa.array([], pa.int64()), "state": pa.array([], pa.binary())})
        frame = pl.from_arrow(batch.select([*self.by, *self.metrics, *self._flags(batch.column_names)]))
        try:
            state = summary_state(frame, metrics=list(self.metrics), by=list(self.by) or None)
        except SchemaError as error:
            raise without_row(error) from None
        return pa.table({"rows": [batch.num_rows], "state": pa.array([frame_to_bytes(state.frame)], pa.binary())})

    def _flags(self, columns: Sequence[str]) -> list[str]:
        from ragframe.metrics import passed_column

        return [f for f in dict.fromkeys(passed_column(m) for m in self.metrics) if f in columns and f not in self.by]


def merged_state(ds: Any, metrics: Sequence[str], by: Sequence[str], **map_options: Any) -> SummaryState:
    """The merged summary state of every block of ``ds`` (states merged MERGE_EVERY at a time on the driver)."""
    states = ds.map_batches(BlockState(tuple(metrics), tuple(by)), batch_format="pyarrow", **map_options)
    pending: list[SummaryState] = []
    with original_errors():
        for batch in prepared(states).iter_batches(batch_format="pyarrow", batch_size=None):
            for data in batch.column("state").to_pylist():
                pending.append(SummaryState(frame_from_bytes(data), tuple(by)))
            if len(pending) >= MERGE_EVERY:
                pending = [merge_summary_states(pending)]
    if not pending:
        raise SchemaError("the dataset has no rows to summarize")
    return merge_summary_states(pending)


@public
def summarize_dataset(
    ds: Any,
    /,
    metrics: str | Sequence[str] | None = None,
    by: str | Sequence[str] | None = None,
    *,
    ci: str = "t",
    confidence: float = 0.95,
    percentile_method: str = "linear",
    stats: str | Iterable[str] = "all",
    batch_size: int | None = None,
    concurrency: int | None = None,
) -> pl.DataFrame:
    """:func:`ragframe.summarize` of a Ray Dataset's scores, from per-block mergeable states.

    Parameters
    ----------
    ds : ray.data.Dataset
        Scored rows (what :func:`score_dataset` returns, or scores read from Parquet).
    metrics : str or list of str, optional
        Score columns; default every score column ragframe wrote (found on the schema).
    by : str or list of str, optional
        Group columns; one row per metric per group.
    ci : {"t"}
        The interval of the mean: Student t (a state keeps no values to bootstrap).
    confidence : float
        Coverage of the interval.
    percentile_method : str
        numpy's method name for p50/p90/p95/p99, applied to the sketch.
    stats : "all", "seed" or list of str
        The statistic columns, as in :func:`ragframe.summarize`.
    batch_size : int, optional
        Rows per state (None: one state per block; smaller batches mean more, smaller states).
    concurrency : int, optional
        Tasks running at once.

    Returns
    -------
    polars.DataFrame
        The table of :func:`ragframe.summarize` (see the module doc for what is exact).

    Examples
    --------
    >>> import ray  # doctest: +SKIP
    >>> summarize_dataset(ray.data.read_parquet("s3://bucket/scores/"), by="split")  # doctest: +SKIP
    """
    require_ray()
    if ci != "t":
        raise InvalidParameterError(f"ci must be 't' (a merged state keeps no values to bootstrap), found {ci!r}")
    confidence = validate.confidence(confidence, "confidence")
    chosen = check_stats(stats)
    if batch_size is not None:
        batch_size = validate.positive_int(batch_size, "batch_size")
    with original_errors():
        empty = empty_frame(ds)
    _, names, group_by = prepare_scores(empty, metrics, by)
    state = merged_state(ds, names, group_by, batch_size=batch_size, **compute_strategy(concurrency))
    table = state.finalize(ci="t", confidence=confidence, percentile_method=percentile_method)
    return table.select(*group_by, "metric", *[s for s in chosen if s in STATS])
