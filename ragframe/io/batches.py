"""The batches of a Parquet run and the job that scores one: read, check rows, score, write its part.

A :class:`BatchJob` is picklable, so the batches run in this process, in child processes
(:mod:`ragframe.io.batch_worker`) or as Ray tasks (a :class:`BatchRunner`), and every engine
writes the same parts. :func:`score_with_rejects` is the step they share: the rows that break
the column contract are rejected with a reason, the others scored once.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from ragframe.exceptions import (
    InputFileError,
    RagframeError,
    SchemaError,
)
from ragframe.io.memory import trim_heap
from ragframe.io.outcome import judge_outcomes
from ragframe.io.output import temporary_path, write_atomic
from ragframe.io.row_checks import (
    CONTRACT_DTYPES,
    conform_null_types,
    has_null_type,
    lossless_cast,
    one_line_reason,
    row_problems,
    value_text,
)
from ragframe.judges.usage import recording_usage
from ragframe.run.evaluator import Evaluator
from ragframe.stats.summary import summary_state

__all__ = ["Batch", "BatchJob", "BatchRunner", "plan_batches", "output_schema", "score_with_rejects"]


@dataclass(frozen=True)
class Batch:
    """Rows ``offset`` .. ``offset + rows - 1`` of the Parquet file ``file``: the run's part number ``index``."""

    index: int
    file: str
    offset: int
    rows: int


def plan_batches(files: list[Path], batch_rows: int) -> tuple[list[Batch], list[dict[str, Any]], list[pl.Schema]]:
    """Batches of at most ``batch_rows`` rows within each file, the source fingerprint and each file's schema."""
    batches: list[Batch] = []
    fingerprint = []
    schemas: list[pl.Schema] = []
    for path in files:
        try:
            rows = pq.ParquetFile(path).metadata.num_rows
            schemas.append(pl.Schema(pl.read_parquet_schema(path)))
        except Exception as exc:  # any reader failure is reported with the file's name
            raise InputFileError(f"cannot read Parquet file {str(path)!r}: {exc}") from exc
        stat = path.stat()
        fingerprint.append(
            {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "rows": rows}
        )
        for offset in range(0, rows, batch_rows):
            batches.append(Batch(len(batches), str(path), offset, min(batch_rows, rows - offset)))
    return batches, fingerprint, schemas


def output_schema(
    files: list[Path], schemas: list[pl.Schema], read: list[str], kept: list[str], default_keep: bool
) -> dict[str, pl.DataType]:
    """The dtype of each kept column in every output part, checked against every file before anything is written.

    A column's dtype is the first file's (or, where that file's is null-typed, the first
    more specific one a later file has). Each file must have every column read, with a
    dtype that casts to the output's without loss; with the default ``keep``, a later file
    may not have a column the first lacks (it would be dropped without a word).
    """
    first = str(files[0])
    output: dict[str, pl.DataType] = {}
    origin: dict[str, int] = {}
    for index, (path, schema) in enumerate(zip(files, schemas)):
        for column in read:
            if column not in schema:
                raise InputFileError(
                    f"evaluate_parquet: column {column!r} of {first!r} is missing from {str(path)!r}; "
                    "every file of a run needs the same columns"
                )
        extra = [c for c in schema.names() if c not in schemas[0]]
        if extra and default_keep:
            raise InputFileError(
                f"evaluate_parquet: column {extra[0]!r} of {str(path)!r} is not in the first file {first!r}; "
                "every file of a run needs the same columns (or choose the columns to copy with {keep})",
                mentions={"keep": "[...]"},
            )
        for column in kept:
            dtype = schema[column]
            if column not in output or (
                not lossless_cast(dtype, output[column])
                and has_null_type(output[column])
                and lossless_cast(output[column], dtype)
            ):
                output[column], origin[column] = dtype, index
    for path, schema in zip(files, schemas):
        for column in kept:
            if not lossless_cast(schema[column], output[column]):
                raise InputFileError(
                    f"evaluate_parquet: column {column!r} is {schema[column]} in {str(path)!r} but "
                    f"{output[column]} in {str(files[origin[column]])!r}, and {schema[column]} does not cast to "
                    f"{output[column]} without loss; every output part has one schema: make the files agree "
                    "(or leave the column out with {keep})",
                    mentions={"keep": "[...]"},
                )
    return output


@dataclass(frozen=True)
class BatchJob:
    """How to score a batch and where to write it; picklable, so a child process or a Ray task can run it."""

    out: Path
    read: list[str]
    kept: list[str]
    evaluator: Evaluator
    schema: dict[str, pl.DataType]  # dtypes of the kept columns in every part
    checked: dict[str, str]  # role -> column of the inputs the scoring reads: rows are checked on them
    budget: Any = None  # a judge budget's state when this group of batches starts (ragframe.budgeting.BudgetState)

    def score(self, df: pl.DataFrame) -> pl.DataFrame:
        """The score columns of one batch (the run configuration's, composite included)."""
        return self.evaluator.scores(df, budget=self.budget)

    def read_batch(self, batch: Batch) -> pl.DataFrame:
        """The batch's rows, cast to the output's dtypes."""
        try:
            frame = pl.scan_parquet(batch.file).select(self.read).slice(batch.offset, batch.rows).collect()
        except Exception as exc:  # a damaged page: name the file, keep what is written
            raise InputFileError(f"cannot read rows {batch.offset}.. of {batch.file!r}: {exc}") from exc
        return frame.with_columns(  # lossless casts (checked by output_schema before the run)
            pl.col(name).cast(dtype) for name, dtype in self.schema.items() if frame.schema[name] != dtype
        )

    def candidates(self, batch: Batch) -> Any:
        """A judge budget's candidates in the batch's rows that are not rejected (the plan's first pass)."""

        def find(good: pl.DataFrame) -> Any:
            return self.evaluator.budget_candidates(good)

        _, found, _ = score_with_rejects(
            self.read_batch(batch), find, self.checked, source=batch.file, offset=batch.offset
        )
        trim_heap()
        return found

    def run(self, batch: Batch) -> dict[str, int]:
        """Read, score and write one batch (rejects, summary state, then the scores part)."""
        frame = self.read_batch(batch)
        before = self.budget.gate().snapshot() if self.budget is not None else None
        with recording_usage() as usage:  # the batch's judge calls, returned with it (child processes too)
            good, scores, rejects = score_with_rejects(
                frame, self.score, self.checked, source=batch.file, offset=batch.offset
            )
        kept = frame.select(self.kept)
        part = (kept.filter(good) if rejects.height else kept).hstack(scores) if self.kept else scores
        name = f"part-{batch.index:05d}.parquet"
        state = summary_state(part, metrics=_score_names(scores)) if scores.width else None
        if rejects.height:
            write_atomic(rejects, self.out / "rejects" / name)
        if state is not None:
            path = self.out / "state" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            state.write_parquet(temporary_path(path))
            os.replace(temporary_path(path), path)
        write_atomic(part, self.out / "scores" / name)
        entry = {
            "rows": batch.rows,
            "scored": batch.rows - rejects.height,
            "rejected": rejects.height,
            "judge": judge_outcomes(scores),
        }
        if usage.records():
            entry["usage"] = usage.records()
        if before is not None:
            entry["budget"] = _spent_between(before, self.budget.gate().snapshot())
        del frame, good, scores, kept, part
        trim_heap()  # keeps the peak flat from batch to batch (see ragframe.io.memory)
        return entry


class BatchRunner(Protocol):
    """Runs a Parquet run's batches somewhere else than this process (a cluster): ``runner(job, batches, record)``.

    It calls ``job.run(batch)`` for every batch (in any order, at once or not) where the
    files of ``job.out`` can be written, and ``record(batch.index, entry)`` here with what
    each returned, as each finishes; an error stops the run (finished batches stay recorded:
    the run resumes). ``engine`` names it in the manifest.
    """

    engine: str

    def __call__(self, job: BatchJob, batches: Sequence[Batch], record: Callable[[int, dict[str, Any]], None]) -> None:
        """Run ``job.run(batch)`` for every batch and record each result."""


def _spent_between(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """A batch's share of the budget: what it spent and the planned first asks it used (gate snapshots)."""
    return {
        "calls": after["calls"] - before["calls"],
        "cost": after["cost"] - before["cost"],
        "planned_calls": before["planned_calls"] - after["planned_calls"],
        "planned_cost": before["planned_cost"] - after["planned_cost"],
    }


def score_with_rejects(
    frame: pl.DataFrame,
    score: Callable[[pl.DataFrame], Any],
    checked: Mapping[str, str],
    *,
    source: str = "<batch>",
    offset: int = 0,
) -> tuple[pl.Series, Any, pl.DataFrame]:
    """Score a batch's good rows once and name its bad ones: (mask of the rows scored, their scores, rejects).

    The batch-with-rejects step every engine shares (:func:`evaluate_parquet`'s batches,
    :class:`ragframe.distributed.BatchScorer` on Ray). Rows breaking the column contract are
    found in one vectorised pass (:mod:`ragframe.io.row_checks`); should a kernel still refuse
    a row (a check missing there), that row is rejected and the rest scored again: correct,
    only slower. A row's scores never depend on the other rows, so scoring the good rows alone
    gives them the scores of the whole batch.

    Parameters
    ----------
    frame : polars.DataFrame
        The batch.
    score : callable
        Scores a frame of good rows (an Evaluator's score columns, or anything else).
    checked : mapping of str to str
        Role -> column of the inputs whose rows the contract checks.
    source : str
        Named in each reject's ``source_file``.
    offset : int
        Row number of the batch's first row in ``source`` (rejects give ``source_row``).

    Returns
    -------
    tuple
        A boolean Series (True: scored), what ``score`` returned for those rows, and the rejects
        (``source_file``, ``source_row``, ``reason``), sorted by row.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> frame = pl.DataFrame({"retrieved_ids": [["a", "b"], ["a", None]], "relevant_ids": [["b"], ["a"]]})
    >>> checked = {"retrieved_ids": "retrieved_ids", "relevant_ids": "relevant_ids"}
    >>> good, scores, rejects = score_with_rejects(frame, rf.Evaluator(["mrr"]).scores, checked, offset=10)
    >>> good.to_list(), scores["mrr"].to_list(), rejects["source_row"].to_list()
    ([True, False], [0.5], [11])
    """
    df = conform_null_types(frame, checked)
    bad = row_problems(df, checked, offset=offset)
    rows, reasons = bad["row"].to_numpy(), bad["reason"].to_list()
    for _ in range(10_000):  # bounded: each round rejects one more row
        mask = np.ones(df.height, dtype=bool)
        mask[rows] = False
        good = df.filter(pl.Series(mask)) if rows.size else df
        if good.height == 0:  # every row rejected: score an empty frame with the contract's dtypes
            good = good.with_columns(
                pl.lit(None, CONTRACT_DTYPES[role]).alias(name)
                for role, name in checked.items()
                if name in good.columns
            )
        try:
            scores = score(good)
            break
        except SchemaError as exc:
            if exc.row is None:
                raise
            row = int(np.flatnonzero(mask)[exc.row])
            rows = np.append(rows, row)
            message = getattr(exc, "_message", str(exc))
            what = f"{exc.function}: {message}" if exc.function else message
            found = value_text(good, exc.column, exc.row) if exc.column in good.columns else exc.found
            reasons.append(one_line_reason(what, exc.column, offset + row, exc.expected, found))
    else:  # pragma: no cover - a kernel rejecting 10,000 rows one by one
        raise RagframeError(f"too many bad rows in {source} at row {offset}")
    order = np.argsort(rows, kind="stable")
    rejects = pl.DataFrame(
        {
            "source_file": [source] * rows.size,
            "source_row": offset + rows[order].astype(np.int64),
            "reason": [reasons[i] for i in order],
        },
        schema={"source_file": pl.String, "source_row": pl.Int64, "reason": pl.String},
    )
    return pl.Series(mask), scores, rejects


def _score_names(scores: pl.DataFrame) -> list[str]:
    from ragframe.metrics import score_columns

    return score_columns(scores.schema)
