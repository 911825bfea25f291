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
    OUT/manifest.json                   source fingerprint, options, finished parts

Every file is written to a temporary name and renamed, and the manifest is updated after
each part, so a killed run restarted with the same arguments skips the finished parts and
ends with byte-identical files. Memory is bounded by the batch size, not the file size:
the heap is trimmed after every batch (:func:`ragframe.io.memory.trim_heap`). Every part has
one schema (see ``source`` in :func:`evaluate_parquet`).
"""

from __future__ import annotations

import glob
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from ragframe import secrets, validate
from ragframe.evaluator import Evaluator
from ragframe.exceptions import InputFileError, InvalidParameterError, RagframeError, ResumeError, SchemaError
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
from ragframe.stats.summary import SummaryState, merge_summary_states, summary_state

__all__ = [
    "evaluate_parquet",
    "ParquetEvaluation",
    "ResumeError",
    "source_files",
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_BATCHES_PER_PROCESS",
]

DEFAULT_BATCH_ROWS = 100_000
DEFAULT_BATCHES_PER_PROCESS = 10
MANIFEST = "manifest.json"
_FORMAT_VERSION = 2  # 2: the manifest holds the Evaluator's options


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
    """

    out: Path
    rows: int
    scored: int
    rejected: int
    batches: int
    resumed: int
    seconds: float
    summary: pl.DataFrame = field(repr=False)


@dataclass(frozen=True)
class _Batch:
    index: int
    file: str
    offset: int
    rows: int


def source_files(source: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """The Parquet files of ``source``: a file, a folder (searched recursively) or a glob; sorted.

    Examples
    --------
    >>> source_files("no/such/*.parquet")
    Traceback (most recent call last):
    ragframe.exceptions.InputFileError: no Parquet file matches 'no/such/*.parquet'
    """
    sources = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    files: list[Path] = []
    for item in sources:
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.parquet") if p.is_file())
        elif path.is_file():
            found = [path]
        else:
            found = sorted(Path(p) for p in glob.glob(str(item), recursive=True) if Path(p).is_file())
        if not found:
            raise InputFileError(f"no Parquet file matches {str(item)!r}")
        files.extend(found)
    return files


def _plan(files: list[Path], batch_rows: int) -> tuple[list[_Batch], list[dict[str, Any]], list[pl.Schema]]:
    """Batches of at most ``batch_rows`` rows within each file, the source fingerprint and each file's schema."""
    batches: list[_Batch] = []
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
            batches.append(_Batch(len(batches), str(path), offset, min(batch_rows, rows - offset)))
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
class _BatchJob:
    """How to score a batch and where to write it; picklable, so a child process can run it."""

    out: Path
    read: list[str]
    kept: list[str]
    evaluator: Evaluator
    schema: dict[str, pl.DataType]  # dtypes of the kept columns in every part
    checked: dict[str, str]  # role -> column of the inputs the scoring reads: rows are checked on them

    def score(self, df: pl.DataFrame) -> pl.DataFrame:
        """The score columns of one batch (the run configuration's, composite included)."""
        return self.evaluator.scores(df, function="evaluate_parquet")

    def run(self, batch: _Batch) -> dict[str, int]:
        """Read, score and write one batch (rejects, summary state, then the scores part)."""
        try:
            frame = pl.scan_parquet(batch.file).select(self.read).slice(batch.offset, batch.rows).collect()
        except Exception as exc:  # a damaged page: name the file, keep what is written
            raise InputFileError(f"cannot read rows {batch.offset}.. of {batch.file!r}: {exc}") from exc
        frame = frame.with_columns(  # lossless casts (checked by _output_schema before the run)
            pl.col(name).cast(dtype) for name, dtype in self.schema.items() if frame.schema[name] != dtype
        )
        good, scores, rejects = _score_batch(frame, batch, self.score, self.checked)
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
        entry = {"rows": batch.rows, "scored": batch.rows - rejects.height, "rejected": rejects.height}
        del frame, good, scores, kept, part
        trim_heap()  # keeps the peak flat from batch to batch (see ragframe.io.memory)
        return entry


def _score_batch(
    df: pl.DataFrame, batch: _Batch, score: Callable[[pl.DataFrame], pl.DataFrame], checked: Mapping[str, str]
) -> tuple[pl.Series, pl.DataFrame, pl.DataFrame]:
    """(mask of the rows scored, their scores, rejects), scoring once.

    Rows breaking the contract are found in one vectorised pass (:mod:`ragframe.io.row_checks`).
    Should a kernel still refuse a row (a check missing there), that row is rejected and the
    rest scored again: correct, only slower.
    """
    df = conform_null_types(df, checked)
    bad = row_problems(df, checked, offset=batch.offset)
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
            source = int(np.flatnonzero(mask)[exc.row])
            rows = np.append(rows, source)
            message = getattr(exc, "_message", str(exc))
            what = f"{exc.function}: {message}" if exc.function else message
            found = value_text(good, exc.column, exc.row) if exc.column in good.columns else exc.found
            reasons.append(one_line_reason(what, exc.column, batch.offset + source, exc.expected, found))
    else:  # pragma: no cover - a kernel rejecting 10,000 rows one by one
        raise RagframeError(f"evaluate_parquet: too many bad rows in {batch.file} at row {batch.offset}")
    order = np.argsort(rows, kind="stable")
    rejects = pl.DataFrame(
        {
            "source_file": [batch.file] * rows.size,
            "source_row": batch.offset + rows[order].astype(np.int64),
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
        for path in ours:
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
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
                "pass overwrite=True (ragframe eval --overwrite) to replace it, or choose another output folder"
            )
        if not resume:
            raise ResumeError(
                f"{out} already holds a run; pass resume=True to continue it or overwrite=True to replace it"
            )
        for leftover in [*out.glob(".*.tmp"), *out.glob("*/.*.tmp")]:  # half-written files of a killed run
            leftover.unlink()
        return {**manifest, "options": expected["options"]}  # rewritten redacted (an older run's may hold a key)
    if any(path.exists() for path in ours):
        raise ResumeError(f"{out} holds ragframe output without a manifest; pass overwrite=True to replace it")
    return fresh


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
        metric whose input columns the log has; default the seven heuristic metrics. A
        metric whose input column is missing is an error naming both, before anything is
        written.
    batch_rows : int
        Rows per batch (and per output part); bounds memory.
    keep : list of str, optional
        Input columns copied to the output; default every column that is not a metric
        input (the id and metadata, not the long texts).
    resume, overwrite : bool
        Continue a run with the same source and options (default), or replace the
        folder's previous output.
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
    **options
        The :class:`~ragframe.Evaluator`'s options (column names such as
        ``answer="response"``, ``k``, ``thresholds``, ``relevance_level``, ...), when no
        ``evaluator`` is given.

    Returns
    -------
    ParquetEvaluation

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
    if not isinstance(out, (str, os.PathLike)):
        raise validate.fail(function, "out", "a folder path (str or os.PathLike)", out)
    if evaluator is None:
        evaluator = Evaluator._make(metrics, options, function)
    elif not isinstance(evaluator, Evaluator):
        raise validate.fail(function, "evaluator", "an rf.Evaluator", evaluator)
    elif metrics is not None or options:
        raise InvalidParameterError(f"{function}: pass an Evaluator or metrics and options, not both")
    batches, job, expected = _plan_run(source, Path(out), evaluator, batch_rows, keep)
    manifest = _start_output(job.out, expected, resume, overwrite)
    if on_start is not None:
        on_start(job.evaluator.outputs(job.read))
    resumed = _run_batches(job, batches, manifest, progress, batches_per_process)
    return _finish(job.out, batches, manifest, resumed, time.perf_counter() - started)


def _plan_run(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    out: Path,
    evaluator: Evaluator,
    batch_rows: int,
    keep: Iterable[str] | None,
) -> tuple[list[_Batch], _BatchJob, dict[str, Any]]:
    """The batches, the job that scores each one, and what the manifest must hold (source, options, format).

    Every file is read (its footer) and checked here, before anything is written.
    """
    function = "evaluate_parquet"
    kept_given = None if keep is None else validate.column_list(keep, "keep", function, allow_empty=True)
    files = source_files(source)
    batches, fingerprint, schemas = _plan(files, batch_rows)
    schema = schemas[0]
    _, roles = evaluator.plan(schema.names(), function=function)
    inputs = set(roles.values())
    kept = kept_given if kept_given is not None else [c for c in schema.names() if c not in inputs]
    missing = [c for c in kept if c not in schema.names()]
    if missing:
        raise SchemaError("missing column to keep", function=function, column=missing[0], available=schema.names())
    read = [c for c in schema.names() if c in inputs or c in kept]
    output_schema = _output_schema(files, schemas, read, kept, keep is None)
    settings = {"evaluator": evaluator.to_dict(), "batch_rows": batch_rows, "keep": kept}
    expected = {"source": fingerprint, "options": manifest_options(settings), "format": _FORMAT_VERSION}
    checked = {role: name for role, name in roles.items() if role in CONTRACT_DTYPES}
    job = _BatchJob(out, read, kept, evaluator, output_schema, checked)
    return batches, job, expected


def manifest_options(settings: dict[str, Any]) -> Any:
    """The JSON form of a run's settings for its manifest: objects by :func:`_manifest_value`, no secret left.

    Keys are ``'***'`` (or named by their ``api_key_env`` variable): :func:`ragframe.secrets.redact`.

    Examples
    --------
    >>> manifest_options({"evaluator": {"judge": {"model": "m", "api_key": "sk-0123456789"}}, "keep": ["id"]})
    {'evaluator': {'judge': {'model': 'm', 'api_key': '***'}}, 'keep': ['id']}
    """
    return secrets.redact(json.loads(json.dumps(secrets.redact(settings), default=_manifest_value)))


def _manifest_value(value: Any) -> Any:
    """A JSON form of an option that is an object: a judge by its identity (stable across runs)."""
    from ragframe.judges import as_judge

    if callable(value) or hasattr(value, "identity"):
        try:
            return dict(as_judge(value).identity())
        except RagframeError:
            pass
    return str(value)


def _start_output(out: Path, expected: dict[str, Any], resume: bool, overwrite: bool) -> dict[str, Any]:
    """Create ``out`` and write the manifest to continue from (before any part: a kill leaves it resumable)."""
    if out.exists() and not out.is_dir():
        raise InputFileError(f"evaluate_parquet: the output folder {str(out)!r} is a file")
    out.mkdir(parents=True, exist_ok=True)
    manifest = _open_output(out, expected, resume, overwrite)
    manifest["complete"] = False
    _write_json_atomic(manifest, out / MANIFEST)
    return manifest


def _run_batches(
    job: _BatchJob, batches: list[_Batch], manifest: dict[str, Any], progress: bool, per_process: int | None
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
        if per_process is None or len(pending) <= per_process:
            for batch in pending:
                record(batch.index, job.run(batch))  # job.run trims the heap after each batch
        else:
            _run_in_child_processes(job, pending, per_process, record)
    finally:
        bar.close()
    return len(batches) - len(pending)


def _finish(
    out: Path, batches: list[_Batch], manifest: dict[str, Any], resumed: int, seconds: float
) -> ParquetEvaluation:
    """Merge the batches' summary states into ``summary.parquet`` and mark the manifest complete."""
    states = [
        SummaryState.read_parquet(out / "state" / f"part-{b.index:05d}.parquet")
        for b in batches
        if (out / "state" / f"part-{b.index:05d}.parquet").exists()
    ]
    summary = merge_summary_states(states).finalize() if states else pl.DataFrame()
    _write_atomic(summary, out / "summary.parquet")
    manifest["complete"] = True
    _write_json_atomic(manifest, out / MANIFEST)
    finished = manifest["finished"].values()
    rejected = sum(v["rejected"] for v in finished)
    scored = sum(v["scored"] for v in finished)
    return ParquetEvaluation(
        out=out,
        rows=scored + rejected,
        scored=scored,
        rejected=rejected,
        batches=len(batches),
        resumed=resumed,
        seconds=seconds,
        summary=summary,
    )


def _run_in_child_processes(
    job: _BatchJob, pending: list[_Batch], per_process: int, record: Callable[[int, dict[str, int]], None]
) -> None:
    """Score ``pending`` in child processes, ``per_process`` batches each, recording each finished batch.

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
                    pickle.dump((job, group, os.getpid()), child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
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
