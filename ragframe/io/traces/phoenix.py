"""Span tables as Phoenix exports them into the span frame: Parquet, CSV, JSON or JSON lines.

Phoenix's span frame (``get_spans_dataframe``, the UI's export) has one row per span:
``context.trace_id``, ``context.span_id``, ``parent_id``, ``name``, ``span_kind``,
``start_time``, ``end_time`` and one ``attributes.<name>`` column per attribute. Lists of
documents and messages are nested (``attributes.retrieval.documents``: a list of
``{document.content, document.id, document.score}``; ``attributes.llm.input_messages``: a
list of ``{message.role, message.content}``) or, in CSV and some JSON, JSON text of the
same; flattened columns (``attributes.retrieval.documents.0.document.content``) are read
too. Every column is mapped with polars expressions over the whole table.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from ragframe.exceptions import InputFileError
from ragframe.io.traces.otlp import gathered
from ragframe.io.traces.spans import DOCUMENT, INPUT_KEYS, OUTPUT_KEYS, conform, unwrapped

__all__ = ["read_phoenix", "phoenix_chunks", "phoenix_frame_to_spans", "TABLE_SUFFIXES", "CHUNK_ROWS"]

#: Rows of a Parquet span table read at once.
CHUNK_ROWS = 200_000

#: The file endings of span tables.
TABLE_SUFFIXES = (".parquet", ".csv", ".json", ".jsonl", ".ndjson")
_REQUIRED = ("context.trace_id", "context.span_id")
_DOC_FIELDS = {"content": "document.content", "id": "document.id", "score": "document.score"}
_NESTED_DOCUMENTS = {
    "documents": "attributes.retrieval.documents",
    "reranker_output": "attributes.reranker.output_documents",
}
_FLAT = re.compile(
    r"attributes\.(retrieval\.documents|reranker\.(input|output)_documents|llm\.(input|output)_messages)\.\d+\..+"
)
_MESSAGE = pl.List(pl.Struct({"message.role": pl.String, "message.content": pl.String}))


def read_table(path: Path) -> pl.DataFrame:
    """The table in ``path`` (by its ending), or an InputFileError naming it."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return pl.read_parquet(path)
        if suffix == ".csv":
            return pl.read_csv(path, infer_schema_length=None)
        if suffix in (".jsonl", ".ndjson"):
            return pl.read_ndjson(path, infer_schema_length=None)
        return pl.read_json(path, infer_schema_length=None)
    except Exception as exc:  # any reader failure names the file
        raise InputFileError(f"cannot read the span table {str(path)!r}: {exc}") from exc


def read_phoenix(path: Path) -> pl.DataFrame:
    """The span frame of a Phoenix span table file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "spans.csv"
    >>> pl.DataFrame({"context.trace_id": ["t"], "context.span_id": ["s"], "parent_id": [None],
    ...     "span_kind": ["CHAIN"], "attributes.input.value": ["q"]}).write_csv(path)
    >>> read_phoenix(path).select("trace_id", "kind", "input").row(0)
    ('t', 'CHAIN', 'q')
    """
    return phoenix_frame_to_spans(read_table(path), path)


def phoenix_chunks(path: Path) -> Iterator[pl.DataFrame]:
    """Span frames of a span table: a Parquet file in batches of :data:`CHUNK_ROWS` rows, other files whole."""
    if path.suffix.lower() != ".parquet":
        yield read_phoenix(path)
        return
    try:
        handle = pq.ParquetFile(path)
    except Exception as exc:  # not Parquet: name the file
        raise InputFileError(f"cannot read the span table {str(path)!r}: {exc}") from exc
    offset = 0
    with handle:
        for batch in handle.iter_batches(batch_size=CHUNK_ROWS):
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            yield phoenix_frame_to_spans(frame, path, offset)
            offset += frame.height


def _column(frame: pl.DataFrame, *names: str, dtype: pl.DataType = pl.String) -> pl.Expr:
    found = [pl.col(n).cast(dtype, strict=False) for n in names if n in frame.columns]
    return pl.coalesce(found) if found else pl.lit(None, dtype)


def _nanoseconds(frame: pl.DataFrame, name: str) -> pl.Expr:
    """A time column as Unix nanoseconds: a datetime (naive: UTC), ISO text, or an integer of nanoseconds."""
    if name not in frame.columns:
        return pl.lit(None, pl.Int64)
    dtype = frame.schema[name]
    column = pl.col(name)
    if dtype == pl.String:
        column = column.str.to_datetime(time_zone="UTC", time_unit="ns", strict=False)
        dtype = pl.Datetime("ns", "UTC")
    if isinstance(dtype, pl.Datetime):
        column = (column.dt.replace_time_zone("UTC") if dtype.time_zone is None else column).dt.cast_time_unit("ns")
        return column.dt.epoch("ns")
    return column.cast(pl.Int64, strict=False)


def _nested(frame: pl.DataFrame, name: str, dtype: pl.DataType, path: Path) -> pl.Series | None:
    """A nested list column (JSON text decoded), or None when the table lacks it."""
    if name not in frame.columns:
        return None
    column = frame.get_column(name)
    if column.dtype == pl.String:
        try:
            return column.str.json_decode(dtype)
        except Exception as exc:  # polars' ComputeError
            raise InputFileError(
                f"{str(path)!r} column {name!r} is neither a list nor JSON text of one: {exc}"
            ) from exc
    if column.dtype == pl.Null:
        return pl.Series(name, [None] * frame.height, dtype)
    return column


def _documents(series: pl.Series | None) -> pl.Expr:
    if series is None:
        return pl.lit(None, pl.List(DOCUMENT))
    inner = series.dtype.inner if isinstance(series.dtype, pl.List) else None
    fields = {f.name for f in inner.fields} if isinstance(inner, pl.Struct) else set()

    def field(key: str, dtype: pl.DataType) -> pl.Expr:
        name = _DOC_FIELDS[key]
        return pl.element().struct.field(name).cast(dtype, strict=False) if name in fields else pl.lit(None, dtype)

    doc = pl.struct(
        field("content", pl.String).alias("content"),
        field("id", pl.String).alias("id"),
        field("score", pl.Float64).alias("score"),
    )
    return pl.lit(series).list.eval(doc).cast(pl.List(DOCUMENT))


def _messages(series: pl.Series | None, role: str | None) -> pl.Expr:
    """The last message's content (of ``role`` when given)."""
    if series is None:
        return pl.lit(None, pl.String)
    content = pl.element().struct.field("message.content")
    if role is not None:
        content = content.filter(pl.element().struct.field("message.role") == role)
    return pl.lit(series).list.eval(content).list.last()


def phoenix_frame_to_spans(frame: pl.DataFrame, path: Path, offset: int = 0) -> pl.DataFrame:
    """The span frame of a Phoenix span table already in memory (``path`` names it in errors and ``source_file``;
    ``offset`` is the table row of the frame's first row)."""
    missing = [c for c in _REQUIRED if c not in frame.columns]
    if missing:
        raise InputFileError(
            f"{str(path)!r} is not a Phoenix span table: no column {missing[0]!r} (found {frame.columns[:8]})"
        )
    metadata = "attributes.metadata"
    if metadata in frame.columns and isinstance(frame.schema[metadata], pl.Struct):
        frame = frame.with_columns(pl.col(metadata).struct.json_encode())
    tags = _nested(frame, "attributes.tag.tags", pl.List(pl.String), path)
    documents = {
        column: _nested(frame, name, pl.List(pl.Struct({v: pl.String for v in _DOC_FIELDS.values()})), path)
        for column, name in _NESTED_DOCUMENTS.items()
    }
    inputs = _nested(frame, "attributes.llm.input_messages", _MESSAGE, path)
    outputs = _nested(frame, "attributes.llm.output_messages", _MESSAGE, path)
    kind = _column(frame, "attributes.openinference.span.kind", "span_kind").str.to_uppercase()
    spans = frame.select(
        _column(frame, "context.trace_id").alias("trace_id"),
        _column(frame, "context.span_id").alias("span_id"),
        _column(frame, "parent_id").alias("parent_id"),
        _column(frame, "name").alias("name"),
        kind.alias("kind"),
        _nanoseconds(frame, "start_time").alias("start_ns"),
        _nanoseconds(frame, "end_time").alias("end_ns"),
        unwrapped(
            _column(frame, "attributes.input.value"), _column(frame, "attributes.input.mime_type"), INPUT_KEYS
        ).alias("input"),
        unwrapped(
            _column(frame, "attributes.output.value"), _column(frame, "attributes.output.mime_type"), OUTPUT_KEYS
        ).alias("output"),
        _messages(inputs, "user").alias("user_message"),
        pl.coalesce(
            _messages(outputs, None), pl.when(kind == "LLM").then(_column(frame, "attributes.output.value"))
        ).alias("llm_output"),
        _column(
            frame, "attributes.llm.model_name", "attributes.gen_ai.response.model", "attributes.gen_ai.request.model"
        ).alias("model"),
        _column(
            frame, "attributes.llm.token_count.prompt", "attributes.gen_ai.usage.input_tokens", dtype=pl.Int64
        ).alias("prompt_tokens"),
        _column(
            frame, "attributes.llm.token_count.completion", "attributes.gen_ai.usage.output_tokens", dtype=pl.Int64
        ).alias("completion_tokens"),
        _column(frame, "attributes.llm.token_count.total", dtype=pl.Int64).alias("total_tokens"),
        _column(frame, "attributes.session.id").alias("session_id"),
        _column(frame, metadata).alias("metadata"),
        (pl.lit(tags) if tags is not None else pl.lit(None, pl.List(pl.String))).alias("tags"),
        *(_documents(series).alias(column) for column, series in documents.items()),
        pl.lit(str(path)).alias("source_file"),
        (pl.int_range(pl.len(), dtype=pl.Int64) + offset).alias("source_row"),
    )
    flat = [c for c in frame.columns if _FLAT.fullmatch(c)]
    if flat:  # flattened lists: gathered as OTLP's key/value attributes are
        long = (
            frame.select(pl.col(flat).cast(pl.String))
            .with_row_index("sid")
            .unpivot(index="sid", variable_name="key", value_name="text")
            .drop_nulls("text")
            .with_columns(
                pl.col("key").str.strip_prefix("attributes."),
                pl.lit(None, pl.Int64).alias("int"),
                pl.col("text").cast(pl.Float64, strict=False).alias("float"),
                pl.lit(None, pl.List(pl.String)).alias("array"),
            )
        )
        found = gathered(long).select("sid", "documents", "reranker_output", "user_message", "llm_output")
        spans = (
            spans.with_row_index("sid")
            .join(found, on="sid", how="left", suffix="_flat", maintain_order="left")
            .with_columns(pl.coalesce(c, f"{c}_flat").alias(c) for c in found.columns if c != "sid")
        )
    return conform(spans)
