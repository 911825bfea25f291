"""Real OpenTelemetry spans for the trace tests, the shipped example and the benchmark.

Spans are made by ``opentelemetry-sdk`` (a TracerProvider with an in-memory exporter, a
seeded id generator and explicit timestamps, so a file is reproducible) with the
attribute names of ``openinference-semantic-conventions``; the OTLP encoding is the SDK's
own (``opentelemetry-exporter-otlp-proto-common``). Nothing here writes an attribute name
by hand: every name comes from the semantic-conventions package.

One source row becomes one trace: a CHAIN root (``input.value`` = question,
``output.value`` = answer, ``metadata``, ``session.id``, ``tag.tags``), a RETRIEVER child
(``retrieval.documents.{i}.document.{content,id,score}``), optionally a RERANKER child
(input and output documents), and an LLM child (messages, model, token counts).
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from openinference.semconv.trace import (
    DocumentAttributes,
    EmbeddingAttributes,
    MessageAttributes,
    OpenInferenceSpanKindValues,
    RerankerAttributes,
    SpanAttributes,
)
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
T0 = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z in ns


class SeededIds(IdGenerator):
    """Reproducible trace and span ids."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def generate_span_id(self) -> int:
        return self.random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self.random.getrandbits(128) or 1


def _documents(prefix: str, docs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i, doc in enumerate(docs):
        if doc.get("content") is not None:
            attributes[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}"] = doc["content"]
        if doc.get("id") is not None:
            attributes[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_ID}"] = doc["id"]
        if doc.get("score") is not None:
            attributes[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_SCORE}"] = float(doc["score"])
    return attributes


def make_spans(rows: Iterable[Mapping[str, Any]], seed: int = 0, attribute_limit: int | None = 10_000) -> list[Any]:
    """The SDK's finished spans (``ReadableSpan``) of ``rows``, one trace per row.

    A row: ``question, answer, documents`` (list of {content, id, score}) and optionally
    ``reranked`` (documents), ``metadata`` (dict), ``session_id``, ``tags``, ``model``,
    ``prompt_tokens``, ``completion_tokens``, ``retrievers`` (a list of document lists:
    several RETRIEVER spans instead of one), ``llm`` (False: no LLM span), ``embedding``
    (True: an EMBEDDING span of the question, before the retriever), ``root_io``
    (False: the root has no input/output values). ``attribute_limit``: the SDK's
    attributes per span (its default, 128, holds about 40 documents; None keeps it).
    """
    exporter = InMemorySpanExporter()
    limits = SpanLimits(max_span_attributes=attribute_limit) if attribute_limit else None
    provider = TracerProvider(id_generator=SeededIds(seed), span_limits=limits)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("ragframe-tests")
    for n, row in enumerate(rows):
        t = T0 + n * 1_000_000_000
        root_attributes: dict[str, Any] = {KIND: OpenInferenceSpanKindValues.CHAIN.value}
        if row.get("root_io", True):
            root_attributes[SpanAttributes.INPUT_VALUE] = row["question"]
            root_attributes[SpanAttributes.OUTPUT_VALUE] = row["answer"]
        if row.get("metadata") is not None:
            root_attributes[SpanAttributes.METADATA] = json.dumps(row["metadata"])
        if row.get("session_id") is not None:
            root_attributes[SpanAttributes.SESSION_ID] = row["session_id"]
        if row.get("tags") is not None:
            root_attributes[SpanAttributes.TAG_TAGS] = list(row["tags"])
        root = tracer.start_span("query", start_time=t, attributes=root_attributes)
        context = trace.set_span_in_context(root)
        clock = t + 1_000_000
        for docs in row.get("retrievers", [row["documents"]]):
            attributes = {
                KIND: OpenInferenceSpanKindValues.RETRIEVER.value,
                SpanAttributes.INPUT_VALUE: row["question"],
            }
            attributes.update(_documents(SpanAttributes.RETRIEVAL_DOCUMENTS, docs))
            span = tracer.start_span("retrieve", context=context, start_time=clock, attributes=attributes)
            span.end(end_time=clock + 5_000_000)
            clock += 10_000_000
        if row.get("reranked") is not None:
            attributes = {KIND: OpenInferenceSpanKindValues.RERANKER.value}
            attributes.update(_documents(RerankerAttributes.RERANKER_INPUT_DOCUMENTS, row["documents"]))
            attributes.update(_documents(RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS, row["reranked"]))
            span = tracer.start_span("rerank", context=context, start_time=clock, attributes=attributes)
            span.end(end_time=clock + 5_000_000)
            clock += 10_000_000
        if row.get("embedding"):
            attributes = {
                KIND: OpenInferenceSpanKindValues.EMBEDDING.value,
                SpanAttributes.EMBEDDING_MODEL_NAME: "text-embedding-3-small",
                f"{SpanAttributes.EMBEDDING_EMBEDDINGS}.0.{EmbeddingAttributes.EMBEDDING_TEXT}": row["question"],
            }
            span = tracer.start_span("embed", context=context, start_time=t + 100_000, attributes=attributes)
            span.end(end_time=t + 900_000)
        if row.get("llm", True):
            attributes = {
                KIND: OpenInferenceSpanKindValues.LLM.value,
                f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}": "system",
                f"{SpanAttributes.LLM_INPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}": "Use the context.",
                f"{SpanAttributes.LLM_INPUT_MESSAGES}.1.{MessageAttributes.MESSAGE_ROLE}": "user",
                f"{SpanAttributes.LLM_INPUT_MESSAGES}.1.{MessageAttributes.MESSAGE_CONTENT}": row["question"],
                f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_ROLE}": "assistant",
                f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.0.{MessageAttributes.MESSAGE_CONTENT}": row["answer"],
            }
            if row.get("model") is not None:
                attributes[SpanAttributes.LLM_MODEL_NAME] = row["model"]
            if row.get("prompt_tokens") is not None:
                attributes[SpanAttributes.LLM_TOKEN_COUNT_PROMPT] = row["prompt_tokens"]
                attributes[SpanAttributes.LLM_TOKEN_COUNT_COMPLETION] = row["completion_tokens"]
                attributes[SpanAttributes.LLM_TOKEN_COUNT_TOTAL] = row["prompt_tokens"] + row["completion_tokens"]
            span = tracer.start_span("generate", context=context, start_time=clock, attributes=attributes)
            span.end(end_time=clock + 200_000_000)
            clock += 210_000_000
        root.end(end_time=clock)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _hex_ids(value: Any) -> Any:
    """The protobuf JSON mapping's base64 ids as the collector writes them (hex)."""
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def write_otlp_json(spans: Sequence[Any], path: Path, spans_per_line: int = 50) -> Path:
    """The spans as the collector's file exporter writes them: one ExportTraceServiceRequest per line."""
    from google.protobuf import json_format

    opener = __import__("gzip").open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as handle:
        for start in range(0, len(spans), spans_per_line):
            request = encode_spans(spans[start : start + spans_per_line])
            handle.write(json.dumps(_hex_ids(json_format.MessageToDict(request)), separators=(",", ":")) + "\n")
    return path


def write_otlp_proto(spans: Sequence[Any], path: Path, spans_per_request: int = 50) -> Path:
    """The spans as OTLP protobuf requests, each preceded by its 4-byte big-endian length."""
    with open(path, "wb") as handle:
        for start in range(0, len(spans), spans_per_request):
            data = encode_spans(spans[start : start + spans_per_request]).SerializeToString()
            handle.write(len(data).to_bytes(4, "big") + data)
    return path


def _nested_documents(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    """Phoenix's layout of a document list: a list of dicts keyed ``document.content`` etc."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith(prefix + "."):
            index, field = key[len(prefix) + 1 :].split(".", 1)
            found.setdefault(int(index), {})[field] = value
    return [found[i] for i in sorted(found)] if found else None


def phoenix_table(spans: Sequence[Any]) -> pl.DataFrame:
    """The spans as a Phoenix span table: ``context.trace_id``, ``context.span_id``, ``parent_id``,
    ``span_kind``, ``name``, ``start_time``, ``end_time`` and ``attributes.*`` columns (document and
    message lists nested as Phoenix's ``get_spans_dataframe`` gives them)."""
    records = []
    for span in spans:
        a = dict(span.attributes)
        messages = _nested_documents(a, SpanAttributes.LLM_INPUT_MESSAGES)
        outputs = _nested_documents(a, SpanAttributes.LLM_OUTPUT_MESSAGES)
        records.append(
            {
                "name": span.name,
                "span_kind": a.get(KIND),
                "parent_id": None if span.parent is None else f"{span.parent.span_id:016x}",
                "start_time": span.start_time,
                "end_time": span.end_time,
                "status_code": "UNSET",
                "context.span_id": f"{span.context.span_id:016x}",
                "context.trace_id": f"{span.context.trace_id:032x}",
                "attributes.openinference.span.kind": a.get(KIND),
                "attributes.input.value": a.get(SpanAttributes.INPUT_VALUE),
                "attributes.output.value": a.get(SpanAttributes.OUTPUT_VALUE),
                "attributes.metadata": a.get(SpanAttributes.METADATA),
                "attributes.session.id": a.get(SpanAttributes.SESSION_ID),
                "attributes.tag.tags": list(a[SpanAttributes.TAG_TAGS]) if SpanAttributes.TAG_TAGS in a else None,
                "attributes.llm.model_name": a.get(SpanAttributes.LLM_MODEL_NAME),
                "attributes.llm.token_count.prompt": a.get(SpanAttributes.LLM_TOKEN_COUNT_PROMPT),
                "attributes.llm.token_count.completion": a.get(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION),
                "attributes.llm.token_count.total": a.get(SpanAttributes.LLM_TOKEN_COUNT_TOTAL),
                "attributes.llm.input_messages": messages,
                "attributes.llm.output_messages": outputs,
                "attributes.retrieval.documents": _nested_documents(a, SpanAttributes.RETRIEVAL_DOCUMENTS),
                "attributes.reranker.input_documents": _nested_documents(
                    a, RerankerAttributes.RERANKER_INPUT_DOCUMENTS
                ),
                "attributes.reranker.output_documents": _nested_documents(
                    a, RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS
                ),
            }
        )
    doc = pl.Struct({"document.content": pl.String, "document.id": pl.String, "document.score": pl.Float64})
    message = pl.Struct({"message.role": pl.String, "message.content": pl.String})
    frame = pl.DataFrame(
        records,
        schema_overrides={
            "attributes.retrieval.documents": pl.List(doc),
            "attributes.reranker.input_documents": pl.List(doc),
            "attributes.reranker.output_documents": pl.List(doc),
            "attributes.llm.input_messages": pl.List(message),
            "attributes.llm.output_messages": pl.List(message),
            "attributes.tag.tags": pl.List(pl.String),
        },
        infer_schema_length=None,
    )
    return frame.with_columns(pl.col("start_time", "end_time").cast(pl.Datetime("ns", "UTC")))


def ares_rows(log: pl.DataFrame, version: str = "v1") -> list[dict[str, Any]]:
    """Trace rows of the ARES log: one document per row (the passage, id = source URL + row id)."""
    return [
        {
            "question": r["question"],
            "answer": r["answer"],
            "documents": [{"content": c, "id": f"{r['source_url']}#{r['id']}"} for c in r["contexts"]],
            "metadata": {"version": version, "row": r["id"]},
            "session_id": f"ares-{r['id'] % 20}",
        }
        for r in log.iter_rows(named=True)
    ]
