"""What a report reads: a frame, or anything :func:`ragframe.read_scores` reads, as a lazy frame.

Local Parquet inputs (a file, a folder, a glob, a ``ragframe eval`` output folder) are
scanned lazily, so that the report reads only the columns it shows (a million-row log's
texts are read for the few rows it prints, not held in memory). The files are the ones
:func:`ragframe.read_scores` would read, checked the same way (a run must be complete,
files must agree on their columns); an output folder also gives its manifest. URLs, CSV
and JSON go through :func:`ragframe.read_scores` itself, which reads every column.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.exceptions import InputFileError
from ragframe.io import scores as scores_io
from ragframe.io.scores import read_scores
from ragframe.io.streaming import MANIFEST
from ragframe.schema import frame_kind, to_polars

__all__ = ["IN_MEMORY", "Source", "load_source"]

#: How the provenance names a frame passed in memory.
IN_MEMORY = "in-memory frame"
_TEXT_SUFFIXES = (".csv", ".json", ".ndjson", ".jsonl")


@dataclass(frozen=True)
class Source:
    """A report's input: its rows as a lazy frame, where they came from, and the run's manifest.

    Attributes
    ----------
    frame : polars.LazyFrame
        The rows; nothing is read until a column is asked for.
    label : str
        The path given, or ``"in-memory frame"``.
    schema : polars.Schema
        The columns and their dtypes.
    rows : int
        The row count.
    manifest : dict or None
        The ``manifest.json`` of a ``ragframe eval`` / :func:`ragframe.evaluate_parquet`
        output folder, else None.
    """

    frame: pl.LazyFrame
    label: str
    schema: pl.Schema
    rows: int
    manifest: dict[str, Any] | None


def load_source(scores: Any, role: str, function: str = "report") -> Source:
    """Open ``scores`` (a frame, or a path :func:`ragframe.read_scores` reads) without reading its columns.

    Parameters
    ----------
    scores : frame or str or os.PathLike
        A polars DataFrame or LazyFrame, pyarrow Table or RecordBatch, pandas DataFrame, or
        a path.
    role : str
        The argument's name, for error messages (``"scores"``, ``"compare"``).
    function : str
        The public function, for error messages.

    Returns
    -------
    Source

    Raises
    ------
    InputFileError
        The path is missing or unreadable (the message names ``role``).

    Examples
    --------
    >>> import polars as pl
    >>> source = load_source(pl.DataFrame({"id": [1, 2], "mrr": [0.5, 1.0]}), "scores")
    >>> source.label, source.rows, list(source.schema)
    ('in-memory frame', 2, ['id', 'mrr'])
    >>> load_source("no-such-file.parquet", "scores")
    Traceback (most recent call last):
    ...
    ragframe.exceptions.InputFileError: report: scores: no such file or folder: 'no-such-file.parquet'
    """
    if isinstance(scores, (str, os.PathLike)):
        frame, manifest = _open_path(os.fspath(scores), role, function)
        label = os.fspath(scores)
    else:
        kind = frame_kind(scores, function)
        frame = scores if kind == "lazy" else to_polars(scores, function=function).lazy()
        label, manifest = IN_MEMORY, None
    try:
        schema = frame.collect_schema()
        rows = int(frame.select(pl.len()).collect().item())
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputFileError(f"{function}: {role}: cannot read {label!r}: {_first_line(exc)}") from exc
    return Source(frame, label, schema, rows, manifest)


def _open_path(text: str, role: str, function: str) -> tuple[pl.LazyFrame, dict[str, Any] | None]:
    """A lazy scan of local Parquet (file, folder, glob); :func:`read_scores` for URLs, CSV and JSON."""
    local = Path(text)
    try:
        if "://" in text or (local.is_file() and local.suffix.lower() in _TEXT_SUFFIXES):
            return read_scores(text).lazy(), None
        if local.is_file():
            return pl.scan_parquet(local, glob=False), None
        if local.is_dir():
            return _scan_files(scores_io._folder_files(local), text), _manifest(local)
        return _scan_files(_glob_files(text), text), None
    except InputFileError as exc:
        message = str(exc).removeprefix("read_scores: ")
        raise InputFileError(f"{function}: {role}: {message}") from exc


def _glob_files(text: str) -> list[str]:
    """The files a glob matches, as :func:`read_scores` finds them (a plain missing path is named as such)."""
    if not any(c in text for c in scores_io._GLOB_CHARACTERS):
        raise InputFileError(f"read_scores: no such file or folder: {text!r}")
    matches = sorted(p for p in glob.glob(text, recursive=True) if Path(p).is_file())
    if not matches:
        raise InputFileError(f"read_scores: no file matches the glob {text!r}")
    return matches


def _scan_files(files: list[str], source: str) -> pl.LazyFrame:
    """The Parquet ``files`` as one lazy frame; their schemas checked as :func:`read_scores` checks them."""
    schemas = []
    for file in files:  # a footer per file, to name the damaged one
        try:
            schemas.append(pl.read_parquet_schema(file))
        except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
            where = repr(source) if file == source else f"{file!r} of {source!r}"
            raise InputFileError(f"read_scores: cannot read {where}: {_first_line(exc)}") from exc
    target = scores_io._common_schema(files, schemas)
    if all(schema == target for schema in schemas):
        return pl.scan_parquet(files, glob=False)
    return pl.concat([pl.scan_parquet(f, glob=False).cast(dict(target)) for f in files], how="vertical")


def _manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of an evaluate_parquet output folder (read_scores has checked it is complete), else None."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    content = json.loads(path.read_text(encoding="utf-8"))
    return content if isinstance(content, dict) and "finished" in content else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
