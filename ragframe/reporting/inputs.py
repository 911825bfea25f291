"""What a report reads: a frame, or anything :func:`ragframe.read_scores` reads, as a lazy frame.

A path is opened with :func:`ragframe.io.scores.scan_scores`: Parquet inputs (a file, a
folder, a glob, a URL, a ``ragframe eval`` output folder) are scanned lazily, so that the
report reads only the columns it shows (a million-row log's texts are read for the few
rows it prints, not held in memory); CSV and JSON are read whole. The files are the ones
:func:`ragframe.read_scores` reads, checked the same way (a run must be complete, files
must agree on their columns); an output folder also gives its manifest.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.exceptions import InputFileError
from ragframe.io.output import MANIFEST
from ragframe.io.scores import scan_scores
from ragframe.schema import frame_kind, to_polars

__all__ = ["IN_MEMORY", "Source", "load_source"]

#: How the provenance names a frame passed in memory.
IN_MEMORY = "in-memory frame"


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


def load_source(scores: Any, role: str) -> Source:
    """Open ``scores`` (a frame, or a path :func:`ragframe.read_scores` reads) without reading its columns.

    Parameters
    ----------
    scores : frame or str or os.PathLike
        A polars DataFrame or LazyFrame, pyarrow Table or RecordBatch, pandas DataFrame, or
        a path.
    role : str
        The argument's name, for error messages (``"scores"``, ``"compare"``).

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
    ragframe.exceptions.InputFileError: scores: no such file or folder: 'no-such-file.parquet'
    """
    if isinstance(scores, (str, os.PathLike)):
        frame, manifest = _open_path(os.fspath(scores), role)
        label = os.fspath(scores)
    else:
        kind = frame_kind(scores)
        frame = scores if kind == "lazy" else to_polars(scores).lazy()
        label, manifest = IN_MEMORY, None
    try:
        schema = frame.collect_schema()
        rows = int(frame.select(pl.len()).collect().item())
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputFileError(f"{role}: cannot read {label!r}: {_first_line(exc)}") from exc
    return Source(frame, label, schema, rows, manifest)


def _open_path(text: str, role: str) -> tuple[pl.LazyFrame, dict[str, Any] | None]:
    """:func:`scan_scores` of the path (its errors name ``role``), and an output folder's manifest."""
    try:
        frame = scan_scores(text)
    except InputFileError as error:
        raise error.about(role) from None
    local = Path(text)
    return frame, (_manifest(local) if "://" not in text and local.is_dir() else None)


def _manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of an evaluate_parquet output folder (scan_scores has checked it is complete), else None."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    content = json.loads(path.read_text(encoding="utf-8"))
    return content if isinstance(content, dict) and "finished" in content else None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
