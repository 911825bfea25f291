"""OTLP trace files into the span frame: the collector's JSON lines, and OTLP protobuf files.

JSON: the OpenTelemetry collector's file exporter writes one ``ExportTraceServiceRequest``
per line (``resourceSpans`` > ``scopeSpans`` > ``spans``, ids in hex, 64-bit integers as
strings). Protobuf: a file of such requests, each preceded by its length as a 4-byte
big-endian integer (the file exporter's ``proto`` format), or one bare request; parsed with
``opentelemetry-proto`` (``pip install 'ragframe[traces]'``) and then read as the JSON is.

Lines are read in chunks of about :data:`CHUNK_BYTES` with polars' JSON reader against a
fixed schema; the spans and their attributes are exploded and the OpenInference attributes
gathered by one ``group_by`` per chunk (no Python loop per span).
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import polars as pl
import pyarrow as pa
import pyarrow.json as pa_json

from ragframe.exceptions import InputFileError
from ragframe.extras import require
from ragframe.io.traces.spans import DOCUMENT, INPUT_KEYS, OUTPUT_KEYS, conform, document_list, unwrapped

__all__ = ["CHUNK_BYTES", "read_otlp_json", "read_otlp_proto", "otlp_json_chunks", "otlp_proto_chunks"]

#: Bytes of JSON lines parsed at once (bounds memory; a longer line is parsed alone).
CHUNK_BYTES = 32 * 1024 * 1024

_SCALAR = pl.Struct(
    {"stringValue": pl.String, "intValue": pl.String, "doubleValue": pl.Float64, "boolValue": pl.Boolean}
)
_VALUE = pl.Struct(
    {
        "stringValue": pl.String,
        "intValue": pl.String,
        "doubleValue": pl.Float64,
        "boolValue": pl.Boolean,
        "arrayValue": pl.Struct({"values": pl.List(_SCALAR)}),
    }
)
_ATTRIBUTES = pl.List(pl.Struct({"key": pl.String, "value": _VALUE}))
_SPAN = pl.Struct(
    {
        "traceId": pl.String,
        "spanId": pl.String,
        "parentSpanId": pl.String,
        "name": pl.String,
        "kind": pl.String,
        "startTimeUnixNano": pl.String,
        "endTimeUnixNano": pl.String,
        "attributes": _ATTRIBUTES,
        "droppedAttributesCount": pl.Int64,
    }
)
#: The part of an ``ExportTraceServiceRequest`` the reader reads.
REQUEST_SCHEMA = pl.Schema(
    {"resourceSpans": pl.List(pl.Struct({"scopeSpans": pl.List(pl.Struct({"spans": pl.List(_SPAN)}))}))}
)


def _arrow_schema() -> pa.Schema:
    """:data:`REQUEST_SCHEMA` for pyarrow's JSON reader (plain lists and strings, which it can fill)."""
    text = pa.string()
    scalar = [("stringValue", text), ("intValue", text), ("doubleValue", pa.float64()), ("boolValue", pa.bool_())]
    value = pa.struct([*scalar, ("arrayValue", pa.struct([("values", pa.list_(pa.struct(scalar)))]))])
    attributes = pa.list_(pa.struct([("key", text), ("value", value)]))
    fields = [("traceId", text), ("spanId", text), ("parentSpanId", text), ("name", text)]
    fields += [("startTimeUnixNano", text), ("endTimeUnixNano", text), ("attributes", attributes)]
    span = pa.struct([*fields, ("droppedAttributesCount", pa.int64())])
    scope = pa.struct([("spans", pa.list_(span))])
    return pa.schema([("resourceSpans", pa.list_(pa.struct([("scopeSpans", pa.list_(scope))])))])


_ARROW_OPTIONS = pa_json.ParseOptions(explicit_schema=_arrow_schema(), unexpected_field_behavior="ignore")


def _read_requests(data: bytes) -> pl.DataFrame:
    """The requests of ``data``: pyarrow's multithreaded JSON reader, else polars' (which also turns JSON
    numbers written where OTLP has strings, such as ``"intValue": 3``, into text)."""
    try:
        table = pa_json.read_json(
            io.BytesIO(data), read_options=pa_json.ReadOptions(block_size=1 << 24), parse_options=_ARROW_OPTIONS
        )
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return frame.cast(dict(REQUEST_SCHEMA))
    except (pa.ArrowException, ValueError):
        return pl.read_ndjson(io.BytesIO(data), schema=REQUEST_SCHEMA)


_DOCUMENT_KEY = (
    r"^(retrieval\.documents|reranker\.output_documents)"
    r"\.(\d+)\.document\.(content|id|score)$"
)
_DOCUMENT_COLUMNS = {
    "retrieval.documents": "documents",
    "reranker.output_documents": "reranker_output",
}
_INPUT_MESSAGE_KEY = r"^llm\.input_messages\.(\d+)\.message\.(role|content)$"
_OUTPUT_MESSAGE_KEY = r"^llm\.output_messages\.(\d+)\.message\.content$"
_LLM_OPERATIONS = ("chat", "text_completion", "generate_content")


def _open(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def otlp_json_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[pl.DataFrame]:
    """Span frames of ``path``'s OTLP JSON lines, one per chunk of about ``chunk_bytes`` bytes.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> line = '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "spanId": "01", "name": "q"}]}]}]}'
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.jsonl"
    >>> _ = path.write_text(line + "\\n")
    >>> next(otlp_json_chunks(path)).select("trace_id", "span_id", "name").row(0)
    ('ab', '01', 'q')
    """
    lines: list[bytes] = []
    numbers: list[int] = []
    size = 0
    try:
        with _open(path) as handle:
            for number, line in enumerate(handle):
                if not line.strip():
                    continue
                lines.append(line if line.endswith(b"\n") else line + b"\n")
                numbers.append(number)
                size += len(line)
                if size >= chunk_bytes:
                    yield spans_of_requests(b"".join(lines), numbers, path)
                    lines, numbers, size = [], [], 0
    except (OSError, EOFError) as exc:
        if isinstance(exc, InputFileError):
            raise
        raise InputFileError(f"cannot read {str(path)!r}: {exc}") from exc
    if lines:
        yield spans_of_requests(b"".join(lines), numbers, path)


def read_otlp_json(path: Path) -> pl.DataFrame:
    """The span frame of a whole OTLP JSON lines file (see :func:`otlp_json_chunks`).

    Examples
    --------
    >>> from ragframe.datasets import example_traces
    >>> spans = read_otlp_json(example_traces())
    >>> spans.group_by("kind").len().sort("kind").rows()
    [('CHAIN', 200), ('LLM', 200), ('RETRIEVER', 200)]
    """
    chunks = list(otlp_json_chunks(path))
    return pl.concat(chunks) if chunks else conform(pl.DataFrame())


def _requests(path: Path) -> Iterator[bytes]:
    """The serialized requests of a protobuf file: 4-byte big-endian length prefixes, or one bare request."""
    try:
        with _open(path) as handle:
            data = handle.read()
    except OSError as exc:
        raise InputFileError(f"cannot read {str(path)!r}: {exc}") from exc
    position, pieces = 0, []
    while position + 4 <= len(data):
        length = int.from_bytes(data[position : position + 4], "big")
        if position + 4 + length > len(data):
            break
        pieces.append(data[position + 4 : position + 4 + length])
        position += 4 + length
    if position != len(data) or not pieces:  # not length-prefixed: one bare request
        pieces = [data] if data else []
    yield from pieces


def otlp_proto_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[pl.DataFrame]:
    """Span frames of an OTLP protobuf file (needs ``opentelemetry-proto``); ``source_row`` is the request's index.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "empty.pb"
    >>> _ = path.write_bytes(b"")
    >>> list(otlp_proto_chunks(path))
    []
    """
    json_format = require("traces", "google.protobuf.json_format", what="reading an OTLP protobuf file")
    service = require(
        "traces", "opentelemetry.proto.collector.trace.v1.trace_service_pb2", what="reading OTLP protobuf"
    )
    lines: list[bytes] = []
    numbers: list[int] = []
    size = 0
    for number, piece in enumerate(_requests(path)):
        request = service.ExportTraceServiceRequest()
        try:
            request.ParseFromString(piece)
        except Exception as exc:  # protobuf's DecodeError
            raise InputFileError(
                f"{str(path)!r} request {number} is not an OTLP ExportTraceServiceRequest: {exc}"
            ) from exc
        line = json_format.MessageToJson(request, indent=None).encode() + b"\n"
        lines.append(line)
        numbers.append(number)
        size += len(line)
        if size >= chunk_bytes:
            yield spans_of_requests(b"".join(lines), numbers, path)
            lines, numbers, size = [], [], 0
    if lines:
        yield spans_of_requests(b"".join(lines), numbers, path)


def read_otlp_proto(path: Path) -> pl.DataFrame:
    """The span frame of a whole OTLP protobuf file (see :func:`otlp_proto_chunks`)."""
    chunks = list(otlp_proto_chunks(path))
    return pl.concat(chunks) if chunks else conform(pl.DataFrame())


def _first_bad_line(data: bytes, numbers: list[int]) -> tuple[int, str]:
    """The first line that is not a JSON object with ``resourceSpans`` (its file line number and why)."""
    for number, line in zip(numbers, data.split(b"\n")):
        try:
            value: Any = json.loads(line)
        except ValueError as exc:
            return number, f"not JSON ({exc})"
        if not isinstance(value, dict) or not isinstance(value.get("resourceSpans"), list):
            return number, "not an OTLP ExportTraceServiceRequest (no resourceSpans list)"
    return numbers[0], "unreadable"


def _hex_id(column: str) -> pl.Expr:
    """An OTLP id as lower-case hex: hex as written by the collector, base64 (protobuf's JSON mapping) decoded."""
    value = pl.col(column)
    base64 = value.str.ends_with("=") | (value.str.len_chars() % 4 == 0) & value.str.contains(r"[^0-9a-fA-F]")
    decoded = value.str.decode("base64", strict=False).bin.encode("hex")
    hexed = pl.when(base64).then(decoded).otherwise(value.str.to_lowercase())
    return pl.when(value == "").then(None).otherwise(hexed)


def spans_of_requests(data: bytes, numbers: list[int], path: Path) -> pl.DataFrame:
    """The span frame of ``data``: JSON lines of ExportTraceServiceRequests whose file line numbers are ``numbers``."""
    try:
        requests = _read_requests(data)
    except Exception as exc:  # polars' ComputeError: find the line to name
        number, why = _first_bad_line(data, numbers)
        raise InputFileError(f"{str(path)!r} line {number + 1}: {why}") from exc
    requests = requests.with_columns(pl.Series("source_row", numbers, pl.Int64))
    missing = requests.filter(pl.col("resourceSpans").is_null())
    if missing.height:
        number = int(missing["source_row"][0])
        raise InputFileError(
            f"{str(path)!r} line {number + 1}: not an OTLP ExportTraceServiceRequest (no resourceSpans list)"
        )
    spans = (
        requests.explode("resourceSpans")
        .select(pl.col("resourceSpans").struct.field("scopeSpans"), "source_row")
        .explode("scopeSpans")
        .select(pl.col("scopeSpans").struct.field("spans"), "source_row")
        .explode("spans")
        .drop_nulls("spans")
        .unnest("spans")
        .with_row_index("sid")
    )
    attributes = (
        spans.select("sid", "attributes")
        .explode("attributes")
        .drop_nulls("attributes")
        .unnest("attributes")
        .unnest("value")
        .select(
            "sid",
            "key",
            pl.coalesce(
                "stringValue",
                "intValue",
                pl.col("doubleValue").cast(pl.String),
                pl.col("boolValue").cast(pl.String),
            ).alias("text"),
            pl.coalesce(
                pl.col("intValue").cast(pl.Int64, strict=False), pl.col("doubleValue").cast(pl.Int64, strict=False)
            ).alias("int"),
            pl.coalesce("doubleValue", pl.col("intValue").cast(pl.Float64, strict=False)).alias("float"),
            pl.col("arrayValue")
            .struct.field("values")
            .list.eval(pl.element().struct.field("stringValue"))
            .alias("array"),
        )
    )
    base = spans.select(
        "sid",
        _hex_id("traceId").alias("trace_id"),
        _hex_id("spanId").alias("span_id"),
        _hex_id("parentSpanId").alias("parent_id"),
        "name",
        pl.col("startTimeUnixNano").cast(pl.Int64, strict=False).alias("start_ns"),
        pl.col("endTimeUnixNano").cast(pl.Int64, strict=False).alias("end_ns"),
        pl.col("droppedAttributesCount").alias("dropped_attributes"),
        pl.lit(str(path)).alias("source_file"),
        "source_row",
    )
    return conform(base.join(gathered(attributes), on="sid", how="left", maintain_order="left"))


def _first(key: str, value: str = "text") -> pl.Expr:
    return pl.col(value).filter(pl.col("key") == key).first()


def gathered(attributes: pl.DataFrame) -> pl.DataFrame:
    """The span frame's attribute columns from a long attribute table (``sid, key, text, int, float, array``).

    Shared by every format whose attributes are key/value pairs (OTLP; flat span tables).

    Examples
    --------
    >>> long = pl.DataFrame({"sid": [0, 0], "key": ["openinference.span.kind", "input.value"],
    ...     "text": ["chain", "hi"], "int": [None, None], "float": [None, None], "array": [None, None]},
    ...     schema_overrides={"sid": pl.UInt32, "int": pl.Int64, "float": pl.Float64, "array": pl.List(pl.String)})
    >>> gathered(long).select("kind", "input").row(0)
    ('CHAIN', 'hi')
    """
    kind = pl.coalesce(
        _first("openinference.span.kind").str.to_uppercase(),
        pl.when(_first("gen_ai.operation.name").is_in(_LLM_OPERATIONS)).then(pl.lit("LLM")),
    )
    scalars = attributes.group_by("sid").agg(
        kind.alias("kind"),
        unwrapped(_first("input.value"), _first("input.mime_type"), INPUT_KEYS).alias("input"),
        unwrapped(_first("output.value"), _first("output.mime_type"), OUTPUT_KEYS).alias("output"),
        pl.coalesce(_first("llm.model_name"), _first("gen_ai.response.model"), _first("gen_ai.request.model")).alias(
            "model"
        ),
        pl.coalesce(
            _first("llm.token_count.prompt", "int"),
            _first("gen_ai.usage.input_tokens", "int"),
            _first("gen_ai.usage.prompt_tokens", "int"),
        ).alias("prompt_tokens"),
        pl.coalesce(
            _first("llm.token_count.completion", "int"),
            _first("gen_ai.usage.output_tokens", "int"),
            _first("gen_ai.usage.completion_tokens", "int"),
        ).alias("completion_tokens"),
        _first("llm.token_count.total", "int").alias("total_tokens"),
        _first("session.id").alias("session_id"),
        _first("metadata").alias("metadata"),
        _first("tag.tags", "array").alias("tags"),
    )
    keyed = attributes.filter(
        pl.col("key").str.starts_with("retrieval.")
        | pl.col("key").str.starts_with("reranker.")
        | pl.col("key").str.starts_with("llm.")
    )
    documents = (
        keyed.with_columns(parts=pl.col("key").str.extract_groups(_DOCUMENT_KEY))
        .filter(pl.col("parts").struct.field("1").is_not_null())
        .select(
            "sid",
            pl.col("parts").struct.field("1").alias("which"),
            pl.col("parts").struct.field("2").cast(pl.Int64).alias("position"),
            pl.col("parts").struct.field("3").alias("field"),
            "text",
            "float",
        )
        .group_by("sid", "which", "position")
        .agg(
            document_list(
                pl.col("text").filter(pl.col("field") == "content").first(),
                pl.col("text").filter(pl.col("field") == "id").first(),
                pl.col("float").filter(pl.col("field") == "score").first(),
            ).alias("document")
        )
        .group_by("sid", "which")
        .agg(pl.col("document").sort_by("position"))
    )
    messages = (
        keyed.with_columns(parts=pl.col("key").str.extract_groups(_INPUT_MESSAGE_KEY))
        .filter(pl.col("parts").struct.field("1").is_not_null())
        .select(
            "sid",
            pl.col("parts").struct.field("1").cast(pl.Int64).alias("position"),
            pl.col("parts").struct.field("2").alias("field"),
            "text",
        )
        .group_by("sid", "position")
        .agg(
            pl.col("text").filter(pl.col("field") == "role").first().alias("role"),
            pl.col("text").filter(pl.col("field") == "content").first().alias("content"),
        )
        .filter(pl.col("role") == "user")
        .group_by("sid")
        .agg(pl.col("content").sort_by("position").last().alias("user_message"))
    )
    outputs = (
        keyed.with_columns(position=pl.col("key").str.extract(_OUTPUT_MESSAGE_KEY, 1).cast(pl.Int64))
        .filter(pl.col("position").is_not_null())
        .group_by("sid")
        .agg(pl.col("text").sort_by("position").last().alias("llm_output"))
    )
    out = scalars.join(messages, on="sid", how="left").join(outputs, on="sid", how="left")
    for which, column in _DOCUMENT_COLUMNS.items():
        part = documents.filter(pl.col("which") == which).select("sid", pl.col("document").alias(column))
        out = out.join(part, on="sid", how="left")
    return out.with_columns(
        pl.coalesce("llm_output", pl.when(pl.col("kind") == "LLM").then(pl.col("output"))).alias("llm_output"),
        *(pl.col(c).cast(pl.List(DOCUMENT)) for c in _DOCUMENT_COLUMNS.values()),
    )
