"""Score Parquet logs larger than memory: batches in, a Parquet dataset out, resumable.

:func:`evaluate_parquet` reads a file, a folder or a glob of Parquet files in batches of
``batch_rows`` rows, scores each batch with the same kernels as in memory
(:meth:`ragframe.Evaluator.scores`: one run configuration for every batch, in this
process or a child), and writes::

    OUT/scores/part-00000.parquet ...   one part per batch: kept columns + scores
    OUT/rejects/part-00003.parquet      rows that broke the column contract: source_file,
                                        source_row (0-based row of the file) and a one-line
                                        reason (see ragframe.io.row_checks)
    OUT/state/part-00000.parquet        each batch's mergeable summary reducers
    OUT/summary.parquet                 the summary of all rows (merged reducers)
    OUT/manifest.json                   source fingerprint, options, finished parts (each
                                        with its row, reject and judge status counts),
                                        and the run's totals once complete

Every file is written to a temporary name and renamed, and the manifest is updated after
each part, so a killed run restarted with the same arguments skips the finished parts and
ends with byte-identical files. Memory is bounded by the batch size, not the file size:
the heap is trimmed after every batch (:func:`ragframe.io.memory.trim_heap`). Every part has
one schema (see ``source`` in :func:`evaluate_parquet`).

Where the batches run is the ``runner``'s business (:class:`BatchRunner`): by default in this
process, or in child processes ``batches_per_process`` at a time; a runner such as
:class:`ragframe.distributed.RayRunner` runs each batch (:meth:`BatchJob.run`: read, score,
write its part) as a task on a cluster, and the plan, the manifest, resuming and the merged
summary stay the ones described here.

A judge budget (``budget=``, :mod:`ragframe.judges.budget`) caps the whole run: a first pass
over the batches finds every candidate row and draws the run's rows from all of them (the
manifest's ``budget_plan``, so the rows chosen do not depend on the batches), then the
batches, one after another, share one hard stop; each part records what it spent.

A run that scored or judged nothing is not a success: once its output is complete (and
readable by ``ragframe summary``), :func:`evaluate_parquet` raises
:class:`~ragframe.exceptions.RunFailedError` when the log has no rows, when every row was
rejected, when a judge metric scored no row because its calls failed, or when more judge rows
failed than ``max_failure_rate`` allows (see :data:`NOT_FAILED`).
"""

from __future__ import annotations

import glob
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from ragframe import secrets, validate
from ragframe.exceptions import (
    InputFileError,
    InvalidParameterError,
    RagframeError,
    ResumeError,
    RunFailedError,
    SchemaError,
)
from ragframe.io.memory import trim_heap
from ragframe.io.row_checks import (
    CONTRACT_DTYPES,
    conform_null_types,
    has_null_type,
    lossless_cast,
    one_line_reason,
    row_problems,
    value_text,
)
from ragframe.io.traces import FORMATS as TRACE_FORMATS
from ragframe.io.traces.assemble import RETRIEVAL
from ragframe.io.traces.stage import TRACE_REJECTS, stage_traces
from ragframe.judges.base import NOT_FAILED_STATUSES
from ragframe.judges.usage import recording_usage, usage_frame
from ragframe.public import public
from ragframe.run.evaluator import BY_ROLE, CLASH_HINT, Evaluator
from ragframe.schema import check_output_columns
from ragframe.stats.summary import SummaryState, merge_summary_states, summary_state

__all__ = [
    "evaluate_parquet",
    "ParquetEvaluation",
    "ResumeError",
    "RunFailedError",
    "NOT_FAILED",
    "source_files",
    "score_with_rejects",
    "manifest_options",
    "manifest_value",
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_BATCHES_PER_PROCESS",
    "Batch",
    "BatchJob",
    "BatchRunner",
]

DEFAULT_BATCH_ROWS = 100_000
DEFAULT_BATCHES_PER_PROCESS = 10
MANIFEST = "manifest.json"
_FORMAT_VERSION = 3  # 2: the manifest holds the Evaluator's options; 3: and each batch's judge statuses
#: Statuses of a judge row that are not failures: ``ok`` (scored) and ``skipped`` (not sent to the
#: judge on purpose: a null input, a row hybrid routing left to its heuristic score, a dry run).
#: Every other status (``http_error``, ``rate_limited``, ``timeout``, ``parse_error``, ...) is a failure.
NOT_FAILED = NOT_FAILED_STATUSES
#: The most frequent error messages kept per judge metric (per batch in the manifest, and merged).
_TOP_ERRORS = 3
_ERROR_CHARACTERS = 300
#: The names of the files a run writes in scores/, rejects/ and state/ (and their temporaries).


@dataclass
class ParquetEvaluation:
    """What :func:`evaluate_parquet` did.

    Returned by :func:`evaluate_parquet` (not made by hand); the parameters are its
    attributes.

    Parameters
    ----------
    out : Path
        The output folder; ``out / "scores"`` is the scored Parquet dataset.
    rows, scored, rejected : int
        Input rows, rows scored, rows written to ``rejects/``.
    batches, resumed : int
        Batches in the plan, and how many were already done by an earlier run.
    seconds : float
        Wall time of this call.
    summary : polars.DataFrame
        :func:`ragframe.summarize`-style table of every score column over all rows.
    statuses : dict of str to dict of str to int
        Per judge score column (``judge_faithfulness``; ``faithfulness`` in ``mode="llm"``),
        the rows of each ``<column>_status`` value over all scored rows (``{"ok": 28,
        "http_error": 2}``); empty when no metric is judged. Also in the manifest.
    errors : dict of str to dict of str to int
        Per judge score column, its commonest failure messages (``_error`` of the rows whose
        status is a failure, see :data:`NOT_FAILED`) and their row counts, at most three.
    budget : dict, optional
        With a judge budget: ``budget`` (in words), the plan (``planned_calls``,
        ``planned_cost``, ``candidates`` and ``chosen`` rows per judge metric) and what the
        run spent (``calls``, ``cost``: the requests sent and the cost the replies report,
        over every batch). Also in the manifest.
    traces_rejected : int
        With ``input_format`` other than ``"parquet"``: the traces that could not become
        rows (in ``rejects/traces.parquet``, not counted in ``rows``).
    usage : polars.DataFrame, optional
        The judge usage of the run's batches (those of an earlier, resumed run included),
        summed per metric: the columns of :func:`ragframe.judge_usage` (calls, cache hits,
        retries, failures, tokens, cost), also from child processes; empty when nothing was
        judged. Also in the manifest (``judge_usage``). None from the ``ray`` engine.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> log = pl.DataFrame({"id": [1, 2], "retrieved_ids": [["a", "b"], ["c"]], "relevant_ids": [["b"], ["c"]]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     source, out = pathlib.Path(tmp) / "log.parquet", pathlib.Path(tmp) / "out"
    ...     log.write_parquet(source)
    ...     first = evaluate_parquet(source, out, metrics=["mrr"], progress=False)
    ...     again = evaluate_parquet(source, out, metrics=["mrr"], progress=False)
    >>> first.rows, first.scored, first.rejected, first.batches, first.resumed
    (2, 2, 0, 1, 0)
    >>> again.resumed  # the second call found the batch done
    1
    >>> first.summary.select("metric", "count", "mean").row(0)
    ('mrr', 2, 0.75)
    >>> first.statuses  # no judge metric in this run
    {}
    """

    out: Path
    rows: int
    scored: int
    rejected: int
    batches: int
    resumed: int
    seconds: float
    summary: pl.DataFrame = field(repr=False)
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)
    errors: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    budget: dict[str, Any] | None = field(default=None, repr=False)
    usage: pl.DataFrame | None = field(default=None, repr=False)
    traces_rejected: int = 0

    def failures(self) -> dict[str, int]:
        """Per judge score column, the rows whose status is a failure (not ``ok`` or ``skipped``).

        Examples
        --------
        >>> import polars as pl
        >>> ParquetEvaluation(Path("out"), 3, 3, 0, 1, 0, 0.1, pl.DataFrame(),
        ...                   statuses={"faithfulness": {"ok": 2, "timeout": 1}}).failures()
        {'faithfulness': 1}
        """
        return {
            name: sum(n for status, n in counts.items() if status not in NOT_FAILED)
            for name, counts in self.statuses.items()
        }

    def failure_rates(self) -> dict[str, float | None]:
        """Per judge score column, failed rows over the rows sent to the judge (``skipped`` ones are not).

        None for a column whose every row was skipped.

        Examples
        --------
        >>> import polars as pl
        >>> ParquetEvaluation(Path("out"), 5, 5, 0, 1, 0, 0.1, pl.DataFrame(),
        ...                   statuses={"faithfulness": {"ok": 3, "timeout": 1, "skipped": 1}}).failure_rates()
        {'faithfulness': 0.25}
        """
        rates: dict[str, float | None] = {}
        for name, failed in self.failures().items():
            sent = failed + self.statuses[name].get("ok", 0)
            rates[name] = failed / sent if sent else None
        return rates


@dataclass(frozen=True)
class Batch:
    """Rows ``offset`` .. ``offset + rows - 1`` of the Parquet file ``file``: the run's part number ``index``."""

    index: int
    file: str
    offset: int
    rows: int


def source_files(source: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """The Parquet files of ``source``: a file, a folder (searched recursively) or a glob; sorted.

    A folder or a glob never yields the files of a ragframe output folder (a folder holding
    the ``manifest.json`` of an :func:`evaluate_parquet` run, such as an output folder placed
    inside the log's folder): those are scores, not a log. A file named on its own is read.

    Examples
    --------
    >>> source_files("no/such/*.parquet")
    Traceback (most recent call last):
    ragframe.exceptions.InputFileError: no Parquet file matches 'no/such/*.parquet'
    """
    sources = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not sources:
        raise InvalidParameterError("source is an empty list: give a Parquet file, a folder or a glob")
    files: list[Path] = []
    outputs: dict[Path, bool] = {}  # folder -> holds a ragframe manifest (each folder read once)
    for item in sources:
        path = Path(item)
        if path.is_dir():
            if _is_output_folder(path, outputs):
                raise InputFileError(
                    f"{str(item)!r} is a ragframe output folder (it holds {MANIFEST}), not a log; "
                    f"name its files to score them again (such as {str(path / 'scores' / '*.parquet')!r})"
                )
            found = _parquet_files_under(path, outputs)
        elif path.is_file():
            found = [path]
        else:
            found, inside = _glob_outside_outputs(str(item), outputs)
            if not found and inside:
                raise InputFileError(_only_output_files(str(item), inside, outputs))
        if not found:
            raise InputFileError(f"no Parquet file matches {str(item)!r}")
        files.extend(found)
    return files


def _is_output_folder(folder: Path, seen: dict[Path, bool]) -> bool:
    """Whether ``folder`` holds the manifest of an evaluate_parquet run (JSON with ``finished``)."""
    if folder not in seen:
        manifest = folder / MANIFEST
        try:
            content = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else None
        except (OSError, ValueError):  # another program's manifest.json: not ours
            content = None
        seen[folder] = isinstance(content, dict) and "finished" in content
    return seen[folder]


def _parquet_files_under(root: Path, outputs: dict[Path, bool]) -> list[Path]:
    """Every ``*.parquet`` file under ``root``, leaving out ragframe output folders."""
    found: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        here = Path(folder)
        if _is_output_folder(here, outputs):
            subfolders[:] = []
            continue
        found += [here / name for name in names if name.endswith(".parquet") and (here / name).is_file()]
    return sorted(found)


def _only_output_files(pattern: str, inside: list[Path], outputs: dict[Path, bool]) -> str:
    """Why a glob whose every match lies in a ragframe output folder reads nothing, and what to name instead."""
    folders = sorted({folder for path in inside for folder in [path.parent, *path.parents] if outputs.get(folder)})
    logs = [p for p in inside if outputs.get(p.parent) and p.name != "summary.parquet"]  # a log left beside the outputs
    message = (
        f"{pattern!r} matches only files inside the ragframe output folder {str(folders[0])!r} (it holds "
        f"{MANIFEST}: scores, not a log)"
    )
    if logs:
        named = ", ".join(repr(str(p)) for p in logs[:3]) + (", ..." if len(logs) > 3 else "")
        message += f"; name the log's files themselves to read them ({named}) and write outputs to another folder"
    return message


def _glob_outside_outputs(pattern: str, outputs: dict[Path, bool]) -> tuple[list[Path], list[Path]]:
    """The files ``pattern`` matches outside ragframe output folders below its fixed part, and those inside."""
    parts = Path(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), len(parts))
    root = Path(*parts[:fixed]) if fixed else Path()
    found, inside = [], []
    for match in glob.glob(pattern, recursive=True):
        path = Path(match)
        if not path.is_file():
            continue
        try:
            inner = path.parent.relative_to(root).parts
        except ValueError:  # a match outside the fixed part (``..`` in the pattern): check its folder alone
            inner, root_of_match = (), path.parent
        else:
            root_of_match = root
        folders = [root_of_match / Path(*inner[:i]) for i in range(len(inner) + 1)]
        if not any(_is_output_folder(folder, outputs) for folder in folders):
            found.append(path)
        else:
            inside.append(path)
    return sorted(found), sorted(inside)


def _plan(files: list[Path], batch_rows: int) -> tuple[list[Batch], list[dict[str, Any]], list[pl.Schema]]:
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


def _output_schema(
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
                "every file of a run needs the same columns (or choose the columns to copy with keep=[...])"
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
                    "(or leave the column out with keep=[...])"
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
        return self.evaluator._scores(df, "evaluate_parquet", self.budget)

    def read_batch(self, batch: Batch) -> pl.DataFrame:
        """The batch's rows, cast to the output's dtypes."""
        try:
            frame = pl.scan_parquet(batch.file).select(self.read).slice(batch.offset, batch.rows).collect()
        except Exception as exc:  # a damaged page: name the file, keep what is written
            raise InputFileError(f"cannot read rows {batch.offset}.. of {batch.file!r}: {exc}") from exc
        return frame.with_columns(  # lossless casts (checked by _output_schema before the run)
            pl.col(name).cast(dtype) for name, dtype in self.schema.items() if frame.schema[name] != dtype
        )

    def candidates(self, batch: Batch) -> Any:
        """A judge budget's candidates in the batch's rows that are not rejected (the plan's first pass)."""

        def find(good: pl.DataFrame) -> Any:
            return self.evaluator._budget_candidates(good, "evaluate_parquet")

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
            _write_atomic(rejects, self.out / "rejects" / name)
        if state is not None:
            path = self.out / "state" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            state.write_parquet(_temporary(path))
            os.replace(_temporary(path), path)
        _write_atomic(part, self.out / "scores" / name)
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
        raise RagframeError(f"evaluate_parquet: too many bad rows in {source} at row {offset}")
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


def _temporary(path: Path) -> Path:
    """A hidden name beside ``path``, unique to this process (two writers never share one)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _write_atomic(frame: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary(path)
    frame.write_parquet(temporary)
    os.replace(temporary, path)


def _write_json_atomic(payload: dict[str, Any], path: Path) -> None:
    temporary = _temporary(path)
    temporary.write_text(json.dumps(payload, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


def _open_output(out: Path, expected: dict[str, Any], resume: bool, overwrite: bool) -> dict[str, Any]:
    """The manifest to continue from (fresh unless a matching one exists)."""
    manifest_path = out / MANIFEST
    fresh = {**expected, "finished": {}, "complete": False}
    ours = [out / "scores", out / "rejects", out / "state", out / "summary.parquet", manifest_path]
    if overwrite:
        remove_output(out)
        return fresh
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        words = {"source": "a different source", "options": "different options", "format": "an older output format"}
        seen = {**manifest, "options": secrets.comparable(manifest.get("options"))}  # the key is not the run's identity
        wanted = {**expected, "options": secrets.comparable(expected["options"])}
        changed = [words[k] for k in ("source", "options", "format") if seen.get(k) != wanted[k]]
        if changed:
            raise ResumeError(
                f"{out} holds a run made with {' and '.join(changed)}; "
                "pass overwrite=True to replace it, or choose another output folder"
            )
        if not resume:
            raise ResumeError(
                f"{out} already holds a run and resume=False was given; resume=True continues it, "
                "overwrite=True replaces it"
            )
        for leftover in [*out.glob(".*.tmp"), *out.glob("*/.*.tmp")]:  # half-written files of a killed run
            leftover.unlink()
        return {
            **manifest,
            "options": expected["options"],
            "batches": expected.get("batches"),
        }  # rewritten redacted (an older run's may hold a key)
    if any(path.exists() for path in ours):
        raise ResumeError(
            f"{out} holds files named as ragframe's but no ragframe manifest: overwrite=True removes only the "
            "files a ragframe run's manifest lists; move them away, or choose another output folder"
        )
    return fresh


#: What a run writes in its output folder besides the part folders (a temporary of each too).
_RUN_FILES = (MANIFEST, "summary.parquet")
#: The part folders; ``_ray_scored`` is the ray engine's temporary folder (see ragframe.distributed.parquet).
_PART_FOLDERS = ("scores", "rejects", "state")
_RAY_TEMPORARY = "_ray_scored"
_RUN_TEMPORARY = re.compile(r"\.(manifest\.json|summary\.parquet)\.\d+\.tmp")
_PART_TEMPORARY = re.compile(r"\.(part-\d{5}\.parquet)\.\d+\.tmp")


def is_run_manifest(content: Any) -> bool:
    """Whether ``content`` (a parsed ``manifest.json``) is a ragframe run's manifest.

    A run's manifest is a JSON object with an integer ``format``, a ``source`` and
    ``options``, and the parts it wrote: ``finished`` (the local engine's batches, with
    ``batches``, their number, since format 3) or ``files`` (the ray engine's part files).

    Examples
    --------
    >>> is_run_manifest({"format": 3, "source": {}, "options": {}, "finished": {}, "batches": 2})
    True
    >>> is_run_manifest({"files": ["scores/part-00000.parquet"]})  # another program's manifest
    False
    """
    return (
        isinstance(content, dict)
        and isinstance(content.get("format"), int)
        and "source" in content
        and "options" in content
        and (isinstance(content.get("finished"), dict) or isinstance(content.get("files"), list))
    )


def check_overwrite(out: Path, function: str = "evaluate_parquet") -> dict[str, Any]:
    """The manifest of the run in ``out`` that ``overwrite=True`` may replace; {} for an empty or absent folder.

    Raises
    ------
    ResumeError
        ``out`` holds files but no ragframe run's manifest (:func:`is_run_manifest`): nothing
        proves that ragframe wrote them, so none is removed.
    """
    out = Path(out)
    if not out.is_dir() or not any(out.iterdir()):
        return {}
    manifest = _stored_manifest(out)
    if not is_run_manifest(manifest):
        raise ResumeError(
            f"{function}: {str(out)!r} holds files but no ragframe manifest ({MANIFEST} of a ragframe run): "
            "overwrite=True removes only the files a ragframe run's manifest lists, and nothing proves that "
            "ragframe wrote these; move them away, or choose another output folder"
        )
    return manifest


def _listed(manifest: dict[str, Any]) -> set[str]:
    """The part files (``folder/name``) a run's manifest lists: every batch's parts, or the ray engine's files."""
    files = manifest.get("files")
    if isinstance(files, list):
        return {f for f in files if isinstance(f, str) and f.count("/") == 1 and f.split("/")[0] in _PART_FOLDERS}
    batches = manifest.get("batches")
    numbers = set(range(batches)) if isinstance(batches, int) else set()
    numbers |= {int(k) for k in manifest.get("finished", {}) if str(k).isdigit()}
    return {f"{folder}/part-{n:05d}.parquet" for folder in _PART_FOLDERS for n in numbers}


def remove_output(out: Path, function: str = "evaluate_parquet") -> None:
    """Remove what an earlier run wrote in ``out`` (``overwrite=True``), as its manifest lists, and nothing else.

    A folder that holds files but no ragframe run's manifest is refused (:func:`check_overwrite`).
    Ragframe's files are the parts the manifest lists (every batch of a local run, or the files
    of a ray-engine run) and their temporaries (``.part-00000.parquet.<pid>.tmp``),
    ``summary.parquet``, ``manifest.json`` and theirs. Any other file in ``scores/``,
    ``rejects/`` or ``state/`` is an error naming it, raised before anything is removed: those
    folders are read as a whole, so it cannot stay there. Files beside them are kept.
    """
    manifest = check_overwrite(out, function)
    if not manifest:
        return
    listed = _listed(manifest)
    ours: list[Path] = []
    foreign: list[Path] = []
    for name in _PART_FOLDERS:
        folder = out / name
        if not folder.is_dir():
            foreign += [folder] if folder.exists() else []
            continue
        for path in sorted(folder.iterdir()):
            temporary = _PART_TEMPORARY.fullmatch(path.name)
            listed_as = f"{name}/{temporary[1]}" if temporary else f"{name}/{path.name}"
            mine = path.is_file() and (listed_as in listed or f"{name}/{path.name}" == TRACE_REJECTS)
            (ours if mine else foreign).append(path)
    for name in _RUN_FILES:
        if (out / name).exists():
            (ours if (out / name).is_file() else foreign).append(out / name)
    if foreign:
        raise ResumeError(
            f"{function}: {str(foreign[0])!r} is not a file ragframe wrote; overwrite=True removes only "
            f"ragframe's files from {str(out)!r}: move it away, or choose another output folder"
        )
    temporaries = [p for p in out.glob(".*.tmp") if _RUN_TEMPORARY.fullmatch(p.name)]
    for path in [*ours, *temporaries]:
        path.unlink()
    for name in _PART_FOLDERS:
        if (out / name).is_dir():
            (out / name).rmdir()
    if (out / _RAY_TEMPORARY).is_dir():  # the ray engine's own temporary folder: all of it is ours
        shutil.rmtree(out / _RAY_TEMPORARY)


def _stored_manifest(out: Path) -> dict[str, Any]:
    """The manifest of the run in ``out``; empty when there is none or it is not a run's."""
    try:
        content = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return content if isinstance(content, dict) else {}


class _Progress:
    """rows done, rows/s and ETA on a terminal; silent otherwise.

    tqdm's bar when tqdm is installed and can draw on this terminal, else ragframe's own
    counter line: a terminal that reports no width (a pseudo-terminal without a window
    size, as in ``script`` or some containers) makes tqdm trim its line to nothing.
    """

    #: narrower than this, tqdm's line is trimmed to (almost) nothing: the counter is used
    MIN_BAR_COLUMNS = 20

    def __init__(self, enabled: bool, total: int, done: int) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.total, self.done, self.start = total, done, time.perf_counter()
        self.first = done
        self.bar = self._tqdm_bar(total, done) if self.enabled else None

    @classmethod
    def _tqdm_bar(cls, total: int, done: int) -> Any:
        """tqdm's bar on stderr, or None when tqdm is missing or cannot draw a visible line here."""
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        try:
            columns = os.get_terminal_size(sys.stderr.fileno()).columns
        except (OSError, ValueError):
            columns = 0
        if columns < cls.MIN_BAR_COLUMNS:
            return None
        try:
            bar = tqdm(total=total, initial=done, unit="rows", unit_scale=True, desc="ragframe eval", file=sys.stderr)
        except Exception:  # a tqdm that breaks on this stream: progress is not worth failing the run for
            return None
        if bar.disable or not str(bar).strip():  # disabled (TQDM_DISABLE) or a line trimmed to nothing
            bar.leave = False
            bar.close()
            return None
        return bar

    def update(self, rows: int) -> None:
        self.done += rows
        if self.bar is not None:
            self.bar.update(rows)
        elif self.enabled:
            elapsed = max(time.perf_counter() - self.start, 1e-9)
            rate = (self.done - self.first) / elapsed
            eta = (self.total - self.done) / rate if rate else float("inf")
            print(f"\r{self.done:,}/{self.total:,} rows  {rate:,.0f} rows/s  ETA {eta:,.0f} s", end="", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            print(file=sys.stderr)


@public
def evaluate_parquet(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    out: str | os.PathLike,
    /,
    evaluator: Evaluator | None = None,
    *,
    metrics: str | Iterable[str] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    keep: Iterable[str] | None = None,
    resume: bool = True,
    overwrite: bool = False,
    progress: bool = True,
    batches_per_process: int | None = DEFAULT_BATCHES_PER_PROCESS,
    on_start: Callable[[list[str]], None] | None = None,
    max_failure_rate: float | None = None,
    runner: BatchRunner | None = None,
    input_format: str = "parquet",
    retrieval: str = "reranker",
    **options: Any,
) -> ParquetEvaluation:
    """Score a Parquet log in batches and write the scores as a Parquet dataset (see the module doc).

    Parameters
    ----------
    source : path, folder, glob, or a list of them
        The log; a folder is searched recursively for ``*.parquet``. Every file needs the
        columns of the first; a kept column has one dtype in every output part: the first
        file's (where that is null-typed, the first later file's), to which another file's
        column is cast when no value can change (Int32 to Int64, null-typed to any); any
        other difference is an :class:`~ragframe.exceptions.InputFileError` naming both
        files, the column and both dtypes, raised before anything is written.
    out : path
        Output folder (created).
    evaluator : Evaluator, optional
        The run configuration (metrics and options); or give ``metrics`` and ``**options``
        and one is made, as :func:`ragframe.evaluate` does.
    metrics : str or list of str, optional
        As in :func:`ragframe.evaluate`: metric, output or family names; ``"auto"`` for every
        metric whose input columns the log has; default each of the seven heuristic metrics
        whose input columns the log has (one SkippedMetricWarning per metric skipped). A
        metric named whose input column is missing is an error naming both, before anything
        is written; so is a log holding some of the columns the run writes (a ``prefix``
        writes beside them).
    batch_rows : int
        Rows per batch (and per output part); bounds memory.
    keep : list of str, optional
        Input columns copied to the output; default every column that is not a metric
        input (the id and metadata, not the long texts).
    resume, overwrite : bool
        Continue a run with the same source and options (default), or replace the
        folder's previous output: only the files its manifest lists are removed, and a
        folder that holds files but no ragframe manifest is refused (:func:`remove_output`).
    progress : bool
        Show a progress bar on a terminal (tqdm when installed); never in a pipe or CI.
    batches_per_process : int or None
        A run with more batches to do than this hands them to fresh child processes
        (``python -c`` importing :mod:`ragframe.io.batch_worker`), this many batches each: the
        memory an allocator keeps between batches goes back to the system when each child
        exits, so the peak is that of ``batches_per_process`` batches whatever the log's
        size. Shorter runs, and ``None``, score in this process (use ``None`` where
        ``sys.executable`` cannot start a Python child, as in a frozen application).
        Results do not depend on it.
    on_start : callable, optional
        Called with the score columns the run writes once the plan is checked and the
        output folder opened, before the first batch (``ragframe eval`` prints them).
    max_failure_rate : float, optional
        The largest share of failed judge rows a judge score column may have (failed over
        the rows sent to the judge: ``skipped`` rows are neither, see :data:`NOT_FAILED`);
        above it the run raises :class:`~ragframe.exceptions.RunFailedError` once its output
        is written. Default None: no limit, but a judge column with failed rows and no ``ok``
        row always fails the run.
    runner : BatchRunner, optional
        Runs the batches elsewhere: :class:`ragframe.distributed.RayRunner` runs each as a
        Ray task (what ``ragframe eval --engine ray`` does for local files). The output,
        its manifest (``engine`` names the runner) and resuming are the same; a judge
        budget needs the default (the batches share one hard stop in one process).
    input_format : {"parquet", "openinference", "phoenix", "langsmith", "otlp", "otlp-proto", "auto"}
        ``"parquet"`` (default): ``source`` is a Parquet log. Any other value: ``source``
        holds trace files (docs/traces.md), made into one row per trace in bounded memory
        (:mod:`ragframe.io.traces.stage`, rows in ``OUT/traces/rows``) and scored as a
        Parquet log; the traces that cannot be rows go to ``OUT/rejects/traces.parquet``
        (``trace_id, source_file, source_row, reason``).
    retrieval : {"reranker", "last", "first", "all"}
        With trace files: which retriever or reranker span gives the documents
        (:func:`ragframe.read_traces`).
    **options
        The :class:`~ragframe.Evaluator`'s options (column names such as
        ``answer="response"``, ``k``, ``thresholds``, ``relevance_level``, ...), when no
        ``evaluator`` is given.

    Returns
    -------
    ParquetEvaluation
        The counts (``rows``, ``scored``, ``rejected``, ``statuses`` of the judge columns)
        and the summary; the manifest records the same counts.

    Raises
    ------
    RunFailedError
        After writing the complete output, when the run scored or judged nothing: the log
        has no rows (the output is a valid empty one), every row was rejected (the message
        gives the first reason), a judge score column has failed rows and no ``ok`` row (the
        message names it and its commonest error), or a column's failure rate is above
        ``max_failure_rate``. The error's ``result`` is the :class:`ParquetEvaluation`.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> log = pl.DataFrame({"id": [1], "retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
    >>> log.write_parquet(folder / "log.parquet")
    >>> result = evaluate_parquet(folder / "log.parquet", folder / "out", metrics=["mrr"], progress=False)
    >>> pl.read_parquet(folder / "out" / "scores").select("id", "mrr").row(0)
    (1, 0.5)
    """
    started = time.perf_counter()
    function = "evaluate_parquet"
    batch_rows = validate.positive_int(batch_rows, "batch_rows", function)
    if batches_per_process is not None:
        batches_per_process = validate.positive_int(batches_per_process, "batches_per_process", function)
    resume, overwrite = validate.flag(resume, "resume", function), validate.flag(overwrite, "overwrite", function)
    progress = validate.flag(progress, "progress", function)
    if not isinstance(out, (str, os.PathLike)) or os.fspath(out) == "":
        raise validate.fail(function, "out", "a folder path (str or os.PathLike, not empty)", out)
    if evaluator is None:
        evaluator = Evaluator._make(metrics, options, function)
    elif not isinstance(evaluator, Evaluator):
        raise validate.fail(function, "evaluator", "an rf.Evaluator", evaluator)
    elif metrics is not None or options:
        raise InvalidParameterError(f"{function}: pass an Evaluator or metrics and options, not both")
    if runner is not None and evaluator.option("budget") is not None:
        raise InvalidParameterError(
            f"{function}: a judge budget (budget=) needs the default runner, which scores the batches in turn and "
            f"stops at the budget; the {runner.engine} runner scores them at once"
        )
    input_format = validate.choice(input_format, "input_format", function, ("parquet", *TRACE_FORMATS))
    retrieval = validate.choice(retrieval, "retrieval", function, RETRIEVAL)
    staged = None
    if input_format != "parquet":  # trace files: rows staged in OUT/traces, then scored as a Parquet log
        if runner is not None:
            raise InvalidParameterError(f"{function}: input_format={input_format!r} needs the default runner")
        staged = stage_traces(source, Path(out) / "traces", input_format, retrieval, overwrite=overwrite)
        source = staged.rows
    batches, job, expected = _plan_run(source, Path(out), evaluator, batch_rows, keep)
    limit = failure_limit(max_failure_rate, function)
    if limit is not None:
        check_judged(job.evaluator, job.read, limit, function)
    manifest = _start_output(
        job.out, {**expected, "batches": len(batches)}, resume, overwrite, runner.engine if runner else "local"
    )
    _plan_budget(job, batches, manifest)
    if on_start is not None:
        on_start(job.evaluator.outputs(job.read))
    resumed = _run_batches(job, batches, manifest, progress, batches_per_process, runner)
    result = _finish(job.out, batches, manifest, resumed, time.perf_counter() - started)
    if staged is not None:
        (job.out / "rejects").mkdir(exist_ok=True)
        shutil.copyfile(staged.rejects, job.out / TRACE_REJECTS)
        result.traces_rejected = staged.rejected
    check_outcome(result, limit, [b.file for b in batches])
    return result


def _plan_run(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    out: Path,
    evaluator: Evaluator,
    batch_rows: int,
    keep: Iterable[str] | None,
) -> tuple[list[Batch], BatchJob, dict[str, Any]]:
    """The batches, the job that scores each one, and what the manifest must hold (source, options, format).

    Every file is read (its footer) and checked here, before anything is written.
    """
    function = "evaluate_parquet"
    kept_given = None if keep is None else validate.column_list(keep, "keep", function, allow_empty=True)
    files = source_files(source)
    batches, fingerprint, schemas = _plan(files, batch_rows)
    if not batches:  # a log without rows: one empty batch writes a valid empty output (scores with their dtypes)
        batches = [Batch(0, str(files[0]), 0, 0)]
    schema = schemas[0]
    _, roles = evaluator.plan(schema.names(), function=function)
    written = evaluator.written_columns(schema, function=function)
    replaced = check_output_columns(schema.names(), written, function, hint=CLASH_HINT)  # as evaluate's rule
    by = [c for role, c in roles.items() if role.startswith(BY_ROLE)]  # a budget's strata: read, and kept by default
    inputs = {c for role, c in roles.items() if not role.startswith(BY_ROLE)}
    kept = kept_given if kept_given is not None else [c for c in schema.names() if c not in inputs]
    kept = [c for c in kept if c not in replaced]
    missing = [c for c in kept if c not in schema.names()]
    if missing:
        raise SchemaError("missing column to keep", function=function, column=missing[0], available=schema.names())
    read = [c for c in schema.names() if c in inputs or c in kept or c in by]
    output_schema = _output_schema(files, schemas, read, kept, keep is None)
    settings = {"evaluator": evaluator.to_dict(), "batch_rows": batch_rows, "keep": kept}
    expected = {"source": fingerprint, "options": manifest_options(settings), "format": _FORMAT_VERSION}
    checked = {role: name for role, name in roles.items() if role in CONTRACT_DTYPES}
    job = BatchJob(out, read, kept, evaluator, output_schema, checked)
    return batches, job, expected


def manifest_options(settings: dict[str, Any]) -> Any:
    """The JSON form of a run's settings for its manifest: objects by :func:`manifest_value`, no secret left.

    Keys are ``'***'`` (or named by their ``api_key_env`` variable): :func:`ragframe.secrets.redact`.

    Examples
    --------
    >>> manifest_options({"evaluator": {"judge": {"model": "m", "api_key": "sk-0123456789"}}, "keep": ["id"]})
    {'evaluator': {'judge': {'model': 'm', 'api_key': '***'}}, 'keep': ['id']}
    """
    return secrets.redact(json.loads(json.dumps(secrets.redact(settings), default=manifest_value)))


def manifest_value(value: Any) -> Any:
    """A JSON form of an option that is an object: a judge by its identity (stable across runs), else its text.

    The ``default=`` of the manifest's ``json.dumps`` (:func:`manifest_options`); every engine's
    manifest uses it.

    Examples
    --------
    >>> from pathlib import PurePosixPath
    >>> manifest_value(PurePosixPath("cache.sqlite"))
    'cache.sqlite'
    """
    from ragframe.judges import as_judge

    if callable(value) or hasattr(value, "identity"):
        try:
            return dict(as_judge(value).identity())
        except RagframeError:
            pass
    return str(value)


def _start_output(out: Path, expected: dict[str, Any], resume: bool, overwrite: bool, engine: str) -> dict[str, Any]:
    """Create ``out`` and write the manifest to continue from (before any part: a kill leaves it resumable).

    ``engine`` (the runner) is recorded, not compared: a run resumes on another engine (the parts are the same).
    """
    if out.exists() and not out.is_dir():
        raise InputFileError(f"evaluate_parquet: the output folder {str(out)!r} is a file")
    out.mkdir(parents=True, exist_ok=True)
    manifest = _open_output(out, expected, resume, overwrite)
    manifest["complete"] = False
    manifest["engine"] = engine
    _write_json_atomic(manifest, out / MANIFEST)
    return manifest


def _run_batches(
    job: BatchJob,
    batches: list[Batch],
    manifest: dict[str, Any],
    progress: bool,
    per_process: int | None,
    runner: BatchRunner | None = None,
) -> int:
    """Score the batches the manifest does not list as finished, recording each; the number already finished."""
    finished: dict[str, Any] = manifest["finished"]
    pending = [b for b in batches if str(b.index) not in finished]
    total = sum(b.rows for b in batches)
    bar = _Progress(progress, total, total - sum(b.rows for b in pending))

    def record(index: int, entry: dict[str, int]) -> None:
        finished[str(index)] = entry
        _write_json_atomic(manifest, job.out / MANIFEST)
        bar.update(entry["rows"])

    try:
        if runner is not None:
            runner(job, pending, record)
        elif per_process is None or len(pending) <= per_process:
            job = _with_budget_state(job, manifest)  # one gate for every batch of this process
            for batch in pending:
                record(batch.index, job.run(batch))  # job.run trims the heap after each batch
        else:
            _run_in_child_processes(lambda: _with_budget_state(job, manifest), pending, per_process, record)
    finally:
        bar.close()
    return len(batches) - len(pending)


def _finish(
    out: Path, batches: list[Batch], manifest: dict[str, Any], resumed: int, seconds: float
) -> ParquetEvaluation:
    """Merge the batches' summary states into ``summary.parquet`` and mark the manifest complete."""
    states = [
        SummaryState.read_parquet(out / "state" / f"part-{b.index:05d}.parquet")
        for b in batches
        if (out / "state" / f"part-{b.index:05d}.parquet").exists()
    ]
    summary = merge_summary_states(states).finalize() if states else pl.DataFrame()
    _write_atomic(summary, out / "summary.parquet")
    finished = list(manifest["finished"].values())
    rejected = sum(v["rejected"] for v in finished)
    scored = sum(v["scored"] for v in finished)
    judge = merge_judge_outcomes([v.get("judge", {}) for v in finished])
    statuses = {name: counts["statuses"] for name, counts in judge.items()}
    errors = {name: counts["errors"] for name, counts in judge.items()}
    manifest.update(rows=scored + rejected, scored=scored, rejected=rejected, statuses=statuses, complete=True)
    budget = _budget_totals(manifest)
    if budget is not None:
        manifest["budget"] = budget
    usage = usage_frame(v.get("usage", []) for v in finished)
    manifest["judge_usage"] = usage.to_dicts()
    _write_json_atomic(manifest, out / MANIFEST)
    return ParquetEvaluation(
        out=out,
        rows=scored + rejected,
        scored=scored,
        rejected=rejected,
        batches=len(batches),
        resumed=resumed,
        seconds=seconds,
        summary=summary,
        statuses=statuses,
        errors=errors,
        budget=budget,
        usage=usage,
    )


# ----------------------------------------------------------------------------- judge budgets


def _plan_budget(job: BatchJob, batches: list[Batch], manifest: dict[str, Any]) -> None:
    """A judge budget's plan for the whole run, in the manifest before the first batch (a first pass over the log).

    Each batch's candidates are found as its scoring finds them (the heuristic of a hybrid
    metric included), truncated to those any plan could choose, and merged: the plan is the
    one the whole log in memory would give, whatever the batches. A resumed run reads it back.
    """
    if job.evaluator.option("budget") is None or "budget_plan" in manifest:
        return
    from ragframe.budgeting import merged_plan

    checked = job.evaluator._checked("evaluate_parquet")
    parts = [job.candidates(batch) for batch in batches if batch.rows]
    manifest["budget_plan"] = merged_plan(parts, checked).to_json()
    _write_json_atomic(manifest, job.out / MANIFEST)


def _with_budget_state(job: BatchJob, manifest: dict[str, Any]) -> BatchJob:
    """``job`` with its budget's state as the next batches start: the plan, and what the finished batches spent."""
    if "budget_plan" not in manifest:
        return job
    import dataclasses

    from ragframe.budgeting import BudgetState
    from ragframe.judges.budget import BudgetPlan

    plan = BudgetPlan.from_json(manifest["budget_plan"])
    spent = [entry.get("budget", {}) for entry in manifest["finished"].values()]
    state = BudgetState(
        job.evaluator._checked("evaluate_parquet")["budget"],
        plan,
        spent_calls=sum(int(s.get("calls", 0)) for s in spent),
        spent_cost=sum(float(s.get("cost", 0.0)) for s in spent),
        planned_calls=max(0, plan.planned_calls - sum(int(s.get("planned_calls", 0)) for s in spent)),
        planned_cost=max(0.0, plan.planned_cost - sum(float(s.get("planned_cost", 0.0)) for s in spent)),
    )
    return dataclasses.replace(job, budget=state)


def _budget_totals(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """The plan and what every batch spent (the manifest's and :class:`ParquetEvaluation`'s ``budget``)."""
    plan = manifest.get("budget_plan")
    if plan is None:
        return None
    from ragframe.judges.budget import check_budget

    spent = [entry.get("budget", {}) for entry in manifest["finished"].values()]
    options = manifest["options"]["evaluator"]
    budget = check_budget(options.get("budget"), options.get("budget_seed", 0), options.get("by"), "evaluate_parquet")
    return {
        "budget": budget.describe() if budget is not None else None,
        "planned_calls": plan["planned_calls"],
        "planned_cost": plan["planned_cost"],
        "candidates": plan["candidates"],
        "chosen": plan["chosen"],
        "calls": sum(int(s.get("calls", 0)) for s in spent),
        "cost": sum(float(s.get("cost", 0.0)) for s in spent),
    }


# ----------------------------------------------------------------------------- run outcomes


def judge_outcomes(scores: pl.DataFrame) -> dict[str, dict[str, dict[str, int]]]:
    """Per judge score column of ``scores``: its rows by ``_status`` and its commonest failure messages.

    A judge score column is one with a String ``<column>_status`` beside it (the judge
    metrics and the metrics ``mode="llm"``/``"hybrid"`` routes to the judge write one).

    Examples
    --------
    >>> import polars as pl
    >>> scores = pl.DataFrame({"f": [1.0, None, None], "f_status": ["ok", "timeout", "timeout"],
    ...                        "f_error": [None, "no reply within 5 s", "no reply within 5 s"]})
    >>> judge_outcomes(scores)
    {'f': {'statuses': {'ok': 1, 'timeout': 2}, 'errors': {'no reply within 5 s': 2}}}
    """
    out: dict[str, dict[str, dict[str, int]]] = {}
    for column, dtype in scores.schema.items():
        name = column.removesuffix("_status")
        if name == column or name not in scores.columns or dtype != pl.String:
            continue
        status = pl.col(column).fill_null("(no status)")
        counts = scores.group_by(status.alias("status")).len().sort("status")
        errors: dict[str, int] = {}
        if f"{name}_error" in scores.columns:
            message = pl.col(f"{name}_error").fill_null("(no message)").str.slice(0, _ERROR_CHARACTERS)
            errors = dict(
                scores.filter(~status.is_in(NOT_FAILED))
                .group_by(message.alias("error"))
                .len()
                .sort(["len", "error"], descending=[True, False])
                .head(_TOP_ERRORS)
                .iter_rows()
            )
        out[name] = {"statuses": dict(counts.iter_rows()), "errors": errors}
    return out


def merge_judge_outcomes(parts: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """The sum of several :func:`judge_outcomes` (the batches of a run), the commonest messages kept.

    Examples
    --------
    >>> merge_judge_outcomes([{"f": {"statuses": {"ok": 1}, "errors": {}}},
    ...                       {"f": {"statuses": {"ok": 2, "timeout": 1}, "errors": {"slow": 1}}}])
    {'f': {'statuses': {'ok': 3, 'timeout': 1}, 'errors': {'slow': 1}}}
    """
    merged: dict[str, dict[str, dict[str, int]]] = {}
    for part in parts:
        for name, outcome in part.items():
            target = merged.setdefault(name, {"statuses": {}, "errors": {}})
            for kind in ("statuses", "errors"):
                for key, count in outcome.get(kind, {}).items():
                    target[kind][key] = target[kind].get(key, 0) + int(count)
    for outcome in merged.values():
        outcome["statuses"] = dict(sorted(outcome["statuses"].items()))
        commonest = sorted(outcome["errors"].items(), key=lambda item: (-item[1], item[0]))[:_TOP_ERRORS]
        outcome["errors"] = dict(commonest)
    return merged


def failure_limit(value: Any, function: str) -> float | None:
    """``max_failure_rate``: None or a number in [0, 1]."""
    if value is None:
        return None
    return validate.number(value, "max_failure_rate", function, minimum=0.0, maximum=1.0)


def check_judged(evaluator: Evaluator, columns: Sequence[str], limit: float, function: str) -> None:
    """``max_failure_rate`` limits the share of failed judge calls: a run without a judged metric has none to limit."""
    written = evaluator.written_columns(dict.fromkeys(columns, pl.String()), function=function)
    if not any(c.endswith("_status") for c in written):
        raise InvalidParameterError(
            f"{function}: max_failure_rate={limit:g} limits the share of failed judge calls, and this run has no "
            "judge metric (judge_*, or mode='llm'/'hybrid' with a judge); drop it, or add a judge metric"
        )


def check_outcome(result: ParquetEvaluation, max_failure_rate: float | None, files: Sequence[str]) -> None:
    """Raise :class:`RunFailedError` when the finished run scored or judged nothing (see :func:`evaluate_parquet`).

    ``files`` are the log's files (named when the log has no rows).
    """
    function = "evaluate_parquet"
    if result.rows == 0 and result.traces_rejected:
        first = pl.read_parquet(result.out / TRACE_REJECTS).row(0, named=True)
        raise RunFailedError(
            f"{function}: every trace was rejected ({result.traces_rejected:,} traces); the first, trace "
            f"{first['trace_id']} of {first['source_file']!r}: {first['reason']}; every reason is in "
            f"{str(result.out / TRACE_REJECTS)!r}",
            result,
        )
    if result.rows == 0:
        named = ", ".join(repr(str(f)) for f in dict.fromkeys(files)) or "the log"
        raise RunFailedError(
            f"{function}: the log has no rows ({named}); wrote an empty output (0 rows) to {str(result.out)!r}",
            result,
        )
    if result.scored == 0:
        raise RunFailedError(
            f"{function}: every row of the log was rejected ({result.rejected:,} rows); the first: "
            f"{_first_reject(result.out)}; every reason is in {str(result.out / 'rejects')!r}",
            result,
        )
    failures, rates = result.failures(), result.failure_rates()
    for name, counts in result.statuses.items():
        if failures[name] and not counts.get("ok"):
            raise RunFailedError(
                f"{function}: the judge scored no row of {name!r} ({_counts_text(counts)}); "
                f"{_commonest_error(result, name)}",
                result,
            )
    for name, rate in rates.items():
        if max_failure_rate is not None and rate is not None and rate > max_failure_rate:
            sent = failures[name] + result.statuses[name].get("ok", 0)
            raise RunFailedError(
                f"{function}: {failures[name]:,} of the {sent:,} rows of {name!r} sent to the judge failed "
                f"({rate:.1%}), above max_failure_rate={max_failure_rate:g} ({_counts_text(result.statuses[name])}); "
                f"{_commonest_error(result, name)}",
                result,
            )


def status_lines(result: ParquetEvaluation) -> list[str]:
    """One line per judge score column: its rows by status and its commonest failure (what ``ragframe eval`` prints).

    Examples
    --------
    >>> import polars as pl
    >>> result = ParquetEvaluation(Path("out"), 3, 3, 0, 1, 0, 0.1, pl.DataFrame(),
    ...                            statuses={"f": {"ok": 2, "timeout": 1}}, errors={"f": {"no reply": 1}})
    >>> status_lines(result)
    ["judge 'f': 2 ok, 1 timeout (1 of 3 rows sent failed, 33.3%); commonest error (1 row): no reply"]
    """
    lines = []
    rates = result.failure_rates()
    for name, counts in result.statuses.items():
        failed = result.failures()[name]
        line = f"judge {name!r}: {_counts_text(counts)}"
        if rates[name] is not None:
            line += f" ({failed:,} of {failed + counts.get('ok', 0):,} rows sent failed, {rates[name]:.1%})"
        if failed:
            line += f"; {_commonest_error(result, name)}"
        lines.append(line)
    return lines


def _counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n:,} {status}" for status, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _commonest_error(result: ParquetEvaluation, name: str) -> str:
    errors = result.errors.get(name) or {}
    if not errors:
        return "no error message"
    message, count = next(iter(errors.items()))
    return f"commonest error ({count:,} row{'s' if count != 1 else ''}): {' '.join(message.split())}"


def _first_reject(out: Path) -> str:
    """The first reject's reason (the first part's first row), with its source row when recorded."""
    parts = sorted((out / "rejects").glob("*.parquet"))
    if not parts:
        return "(no reject part found)"
    first = pl.read_parquet(parts[0]).row(0, named=True)
    where = f"in {first['source_file']!r}, " if "source_file" in first else ""  # the reason names the row
    return where + str(first["reason"])


def _run_in_child_processes(
    make_job: Callable[[], BatchJob],
    pending: list[Batch],
    per_process: int,
    record: Callable[[int, dict[str, int]], None],
) -> None:
    """Score ``pending`` in child processes, ``per_process`` batches each, recording each finished batch.

    The children run one after another; each gets ``make_job()`` as its group starts (so a
    judge budget's state includes what the groups before it spent).
    A child gets ``(job, batches)`` pickled on its stdin and answers a pickled message per
    batch on its stdout (see :mod:`ragframe.io.batch_worker`); its stderr is this process's.
    An error in a child is raised here, with its type when it can be pickled.
    """
    package_root = str(Path(__file__).resolve().parents[2])
    # appended, not prepended: an installed ragframe is found first, a source checkout still works
    code = f"import sys; sys.path.append({package_root!r}); from ragframe.io.batch_worker import main; sys.exit(main())"
    for start in range(0, len(pending), per_process):
        group = pending[start : start + per_process]
        # a session of its own: Ctrl-C reaches only this process, which stops the child (no second traceback)
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
        )
        done = 0
        try:
            assert child.stdin is not None and child.stdout is not None
            try:
                with secrets.carrying():  # the child needs the judge's key: through the pipe, never a file
                    pickle.dump((make_job(), group, os.getpid()), child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                child.stdin.close()
            except BrokenPipeError:  # the child died before reading its job: reported below with its exit status
                pass
            while True:
                try:
                    kind, *payload = pickle.load(child.stdout)
                except EOFError:
                    break
                if kind == "error":
                    raise payload[0]
                index, entry = payload
                record(index, entry)
                done += 1
            status = child.wait()
            if done < len(group):
                batch = group[done]
                raise RagframeError(
                    f"evaluate_parquet: the child process scoring rows {batch.offset}.. of {batch.file!r} "
                    f"stopped with exit status {status} (killed, or out of memory?); finished parts are kept, "
                    "run again to resume"
                )
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()


def _score_names(scores: pl.DataFrame) -> list[str]:
    from ragframe.metrics import score_columns

    return score_columns(scores.schema)
