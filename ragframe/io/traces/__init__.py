"""Traces in: OpenTelemetry/OpenInference spans, Phoenix span tables and LangSmith runs as rows.

:func:`read_traces` reads the files into one span frame (:mod:`.spans`) with the reader of
their format (:mod:`.otlp`, :mod:`.phoenix`, :mod:`.langsmith`) and turns it into one row
per trace (:mod:`.assemble`). :mod:`.stage` does the same in bounded memory for
:func:`ragframe.evaluate_parquet` and ``ragframe eval --input-format``.
"""

from __future__ import annotations

import glob
import gzip
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl

from ragframe import validate
from ragframe.exceptions import InputFileError, InvalidParameterError
from ragframe.io.traces.assemble import REJECT_SCHEMA, RETRIEVAL, ROW_SCHEMA, assemble
from ragframe.io.traces.langsmith import read_langsmith
from ragframe.io.traces.otlp import otlp_json_chunks, otlp_proto_chunks
from ragframe.io.traces.phoenix import phoenix_chunks
from ragframe.io.traces.spans import empty_spans
from ragframe.public import public

__all__ = [
    "FORMATS",
    "RETRIEVAL",
    "ROW_SCHEMA",
    "REJECT_SCHEMA",
    "read_traces",
    "read_spans",
    "checked_spans",
    "span_chunks",
    "trace_files",
    "file_format",
    "with_metadata_columns",
]

#: ``format=`` values: ``openinference`` is OTLP, JSON lines or protobuf by the file's ending.
FORMATS = ("auto", "openinference", "otlp", "otlp-proto", "phoenix", "langsmith")
_PROTO_SUFFIXES = (".pb", ".proto", ".bin", ".otlp", ".protobuf")
_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
_TABLE_SUFFIXES = (".parquet", ".csv")


def _suffix(path: Path) -> str:
    """The ending that says the format (the one before ``.gz``)."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def _files_under(root: Path, known: tuple[str, ...]) -> list[Path]:
    """Files with a known ending under ``root``, leaving out ragframe output folders (a run's ``manifest.json``,
    staged rows' ``stage.json``) and hidden files."""
    found: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        here = Path(folder)
        if here != root and ((here / "manifest.json").is_file() or (here / "stage.json").is_file()):
            subfolders[:] = []
            continue
        found += [here / n for n in names if not n.startswith(".") and _suffix(here / n) in known]
    return sorted(found)


def trace_files(source: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """The trace files of ``source``: a file, a folder (searched recursively for known endings) or a glob; sorted.

    A folder never yields the files of a ragframe output folder below it (one holding
    ``manifest.json`` or ``stage.json``), so ``ragframe eval traces/ -o traces/scored``
    can run again.

    Examples
    --------
    >>> trace_files("no/such/*.jsonl")
    Traceback (most recent call last):
    ragframe.exceptions.InputFileError: no trace file matches 'no/such/*.jsonl'
    """
    sources = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not sources:
        raise InvalidParameterError("source is an empty list: give a trace file, a folder or a glob")
    known = (*_PROTO_SUFFIXES, *_JSON_SUFFIXES, *_TABLE_SUFFIXES)
    files: list[Path] = []
    for item in sources:
        path = Path(item)
        if path.is_dir():
            found = _files_under(path, known)
        elif path.is_file():
            found = [path]
        else:
            found = sorted(Path(p) for p in glob.glob(str(item), recursive=True) if Path(p).is_file())
        if not found:
            raise InputFileError(f"no trace file matches {str(item)!r}")
        files.extend(found)
    return files


def file_format(path: Path, format: str) -> str:
    """The reader of ``path`` under ``format=``: ``otlp``, ``otlp-proto``, ``phoenix`` or ``langsmith``.

    ``auto`` looks at the ending and, for JSON, at the first kilobytes (``resourceSpans``:
    OTLP; ``run_type``: LangSmith; ``context.trace_id``: Phoenix).

    Examples
    --------
    >>> from ragframe.datasets import example_traces
    >>> file_format(example_traces(), "auto")
    'otlp'
    """
    suffix = _suffix(path)
    if format == "openinference":
        return "otlp-proto" if suffix in _PROTO_SUFFIXES else "otlp"
    if format != "auto":
        return format
    if suffix in _PROTO_SUFFIXES:
        return "otlp-proto"
    if suffix in _TABLE_SUFFIXES:
        return "phoenix"
    try:
        with gzip.open(path, "rb") if path.suffix.lower() == ".gz" else open(path, "rb") as handle:
            head = handle.read(65536)
    except OSError as exc:
        raise InputFileError(f"cannot read {str(path)!r}: {exc}") from exc
    for marker, found in (
        (b'"resourceSpans"', "otlp"),
        (b'"run_type"', "langsmith"),
        (b'"context.trace_id"', "phoenix"),
    ):
        if marker in head:
            return found
    raise InputFileError(
        f"cannot tell the format of {str(path)!r} (no resourceSpans, run_type or context.trace_id in "
        "its first 64 KiB); name it with {format} | 'otlp-proto' | 'phoenix' | 'langsmith'",
        mentions={"format": "'otlp'"},
    )


def span_chunks(path: Path, format: str) -> Iterator[pl.DataFrame]:
    """Span frames of one file (OTLP in chunks of lines; tables and LangSmith exports whole)."""
    reader = file_format(path, format)
    if reader == "otlp":
        yield from otlp_json_chunks(path)
    elif reader == "otlp-proto":
        yield from otlp_proto_chunks(path)
    elif reader == "phoenix":
        yield from phoenix_chunks(path)
    else:
        yield read_langsmith(path)


def checked_spans(spans: pl.DataFrame) -> pl.DataFrame:
    """Spans without a trace id or span id are an error naming the file and line."""
    bad = spans.filter(pl.col("trace_id").is_null() | (pl.col("trace_id") == "") | pl.col("span_id").is_null())
    if bad.height:
        first = bad.row(0, named=True)
        what = "trace id" if not first["trace_id"] else "span id"
        raise InputFileError(f"{first['source_file']!r} line {first['source_row'] + 1}: a span without a {what}")
    return spans


def read_spans(source: str | os.PathLike | Sequence[str | os.PathLike], *, format: str = "auto") -> pl.DataFrame:
    """Every span of ``source`` as one span frame (:data:`ragframe.io.traces.spans.SPAN_SCHEMA`).

    Examples
    --------
    >>> from ragframe.datasets import example_traces
    >>> read_spans(example_traces()).height
    600
    """
    format = validate.choice(format, "format", FORMATS)
    frames = [checked_spans(chunk) for path in trace_files(source) for chunk in span_chunks(path, format)]
    return pl.concat(frames) if frames else empty_spans()


def with_metadata_columns(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` with one ``metadata.<key>`` column per key of the JSON objects in ``metadata``.

    Examples
    --------
    >>> rows = pl.DataFrame({"metadata": ['{"version": "v1"}', None]})
    >>> with_metadata_columns(rows)["metadata.version"].to_list()
    ['v1', None]
    """
    if "metadata" not in rows.columns or rows.get_column("metadata").null_count() == rows.height:
        return rows
    try:
        decoded = rows.get_column("metadata").str.json_decode(infer_schema_length=None)
    except Exception:  # metadata that is not JSON: kept as text only
        return rows
    if not isinstance(decoded.dtype, pl.Struct):
        return rows
    fields = decoded.struct.unnest()
    fields = fields.rename({c: f"metadata.{c}" for c in fields.columns})
    return rows.hstack(fields.select(c for c in fields.columns if c not in rows.columns))


@public
def read_traces(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    /,
    *,
    format: str = "auto",
    retrieval: str = "reranker",
    rejects: bool = False,
) -> pl.DataFrame | tuple[pl.DataFrame, pl.DataFrame]:
    """One row per trace in ragframe's column contract, from exported trace files.

    Reads OTLP JSON lines (the OpenTelemetry collector's file exporter), OTLP protobuf
    files, Phoenix span tables (Parquet, CSV, JSON) and LangSmith run exports (JSON,
    JSON lines), with OpenInference attribute names and the OpenTelemetry GenAI model and
    usage attributes. docs/traces.md gives every column and the policy for traces with
    several retriever or reranker spans.

    Parameters
    ----------
    source : path, folder, glob, or a list of them
        Trace files; a folder is searched recursively for ``.jsonl``, ``.json``,
        ``.ndjson``, ``.pb``, ``.parquet``, ``.csv`` (each optionally ``.gz``).
    format : {"auto", "openinference", "otlp", "otlp-proto", "phoenix", "langsmith"}
        ``auto`` tells each file's format by its ending and first bytes;
        ``openinference`` is OTLP (protobuf for ``.pb``/``.bin``/``.otlp``, else JSON).
    retrieval : {"reranker", "last", "first", "all"}
        Which RETRIEVER/RERANKER span gives ``contexts``, ``retrieved_ids`` and
        ``retrieved_scores``: ``reranker`` (default) the last reranker's output
        documents, else the last retriever's; ``last``/``first`` retriever; ``all``
        retrievers concatenated in start order.
    rejects : bool
        Also return the traces that cannot become a row (``trace_id, source_file,
        source_row, reason``); by default a trace that cannot is an error.

    Returns
    -------
    polars.DataFrame, or (rows, rejects)
        ``trace_id, root_span_id, retriever_span_id, llm_span_id, name, question, answer,
        contexts, retrieved_ids, retrieved_scores, document_span_ids, start_time,
        latency_ms, model, prompt_tokens, completion_tokens, total_tokens, session_id,
        tags, metadata`` and one ``metadata.<key>`` column per key of the root's
        metadata; rows in the order of their traces' first spans.

    Raises
    ------
    InputFileError
        A file that is not of its format (naming the file and line), a span without a
        trace or span id, or (``rejects=False``) a trace that cannot become a row.

    Examples
    --------
    >>> import ragframe as rf
    >>> from ragframe.datasets import example_traces
    >>> rows = rf.read_traces(example_traces())
    >>> rows.select("question", "contexts", "metadata.version").shape
    (200, 3)
    >>> rows.group_by("metadata.version").len().sort("metadata.version").rows()
    [('v1', 100), ('v2', 100)]
    """
    retrieval = validate.choice(retrieval, "retrieval", RETRIEVAL)
    rejects = validate.flag(rejects, "rejects")
    rows, bad = assemble(read_spans(source, format=format), retrieval)
    rows = with_metadata_columns(rows)
    if rejects:
        return rows, bad
    if bad.height:
        first = bad.row(0, named=True)
        raise InputFileError(
            f"{bad.height:,} traces cannot become rows; the first, trace {first['trace_id']} of "
            f"{first['source_file']!r}: {first['reason']}; pass rejects=True to get them as a frame"
        )
    return rows
