"""The span frame every trace format is read into, before spans become rows.

Each reader (:mod:`.otlp`, :mod:`.phoenix`, :mod:`.langsmith`) turns its files into one
frame of :data:`SPAN_SCHEMA`: one row per span, the OpenInference attributes the rows need
already pulled out into typed columns (documents as lists of :data:`DOCUMENT` structs in
rank order). A reranker's input documents are not kept: they are the retriever's output, and
no policy reads them. :mod:`.assemble` turns that frame into rows, whatever the source format.
"""

from __future__ import annotations

import polars as pl

__all__ = [
    "DOCUMENT",
    "SPAN_SCHEMA",
    "KINDS",
    "conform",
    "empty_spans",
    "document_list",
    "unwrapped",
    "INPUT_KEYS",
    "OUTPUT_KEYS",
]

#: The keys whose string value is the question (answer) when ``input.value`` (``output.value``) is a JSON object.
INPUT_KEYS = ("question", "input", "query")
OUTPUT_KEYS = ("answer", "output", "result", "text")

#: One retrieved document: OpenInference's ``document.content``, ``document.id``, ``document.score``.
DOCUMENT = pl.Struct({"content": pl.String, "id": pl.String, "score": pl.Float64})

#: The span frame: one row per span.
SPAN_SCHEMA = pl.Schema(
    {
        "trace_id": pl.String,
        "span_id": pl.String,
        "parent_id": pl.String,  # null: no parent
        "name": pl.String,
        "kind": pl.String,  # OpenInference span kind, upper case: CHAIN, RETRIEVER, RERANKER, LLM, ...
        "start_ns": pl.Int64,  # Unix time, nanoseconds
        "end_ns": pl.Int64,
        "input": pl.String,  # input.value
        "output": pl.String,  # output.value
        "user_message": pl.String,  # the last user message among llm.input_messages
        "llm_output": pl.String,  # the last of llm.output_messages (else output.value)
        "model": pl.String,  # llm.model_name, else gen_ai.response.model, else gen_ai.request.model
        "prompt_tokens": pl.Int64,  # llm.token_count.prompt, else gen_ai.usage.input_tokens
        "completion_tokens": pl.Int64,  # llm.token_count.completion, else gen_ai.usage.output_tokens
        "total_tokens": pl.Int64,  # llm.token_count.total
        "session_id": pl.String,  # session.id
        "metadata": pl.String,  # the metadata attribute: a JSON object
        "tags": pl.List(pl.String),  # tag.tags
        "documents": pl.List(DOCUMENT),  # retrieval.documents
        "reranker_output": pl.List(DOCUMENT),  # reranker.output_documents
        "dropped_attributes": pl.Int64,  # attributes the SDK dropped at its limit (OTLP droppedAttributesCount)
        "source_file": pl.String,
        "source_row": pl.Int64,  # 0-based line (JSON lines) or row (tables) the span was read from
    }
)

#: The span kinds of OpenInference (``openinference.span.kind``).
KINDS = ("CHAIN", "RETRIEVER", "RERANKER", "LLM", "EMBEDDING", "TOOL", "AGENT", "GUARDRAIL", "EVALUATOR")


def empty_spans() -> pl.DataFrame:
    """A span frame without rows.

    Examples
    --------
    >>> empty_spans().width == len(SPAN_SCHEMA)
    True
    """
    return pl.DataFrame(schema=SPAN_SCHEMA)


def conform(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame``'s columns as :data:`SPAN_SCHEMA` (missing ones null, in its order, cast).

    Examples
    --------
    >>> conform(pl.DataFrame({"trace_id": ["t"], "span_id": ["s"]})).select("trace_id", "kind").row(0)
    ('t', None)
    """
    return frame.select(
        (pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype)).alias(name)
        for name, dtype in SPAN_SCHEMA.items()
    )


def unwrapped(value: pl.Expr, mime: pl.Expr, keys: tuple[str, ...]) -> pl.Expr:
    """``value``, or where ``mime`` is ``application/json``, the string at the first of ``keys`` in that JSON
    object (a LangChain chain's ``{"question": ...}``); JSON without such a key stays as it is.

    Examples
    --------
    >>> frame = pl.DataFrame({"v": ['{"question": "q?", "k": 1}', "plain", '{"x": 1}'],
    ...                       "m": ["application/json", None, "application/json"]})
    >>> frame.select(unwrapped(pl.col("v"), pl.col("m"), INPUT_KEYS)).to_series().to_list()
    ['q?', 'plain', '{"x": 1}']
    """
    found = pl.coalesce(value.str.json_path_match(f"$.{key}") for key in keys)
    return pl.when(mime == "application/json").then(pl.coalesce(found, value)).otherwise(value)


def document_list(content: pl.Expr, ident: pl.Expr, score: pl.Expr) -> pl.Expr:
    """A :data:`DOCUMENT` struct of three expressions (used inside ``list.eval`` and aggregations).

    Examples
    --------
    >>> frame = pl.DataFrame({"c": ["text"], "i": ["d1"], "s": [0.5]})
    >>> frame.select(document_list(pl.col("c"), pl.col("i"), pl.col("s")).alias("d")).item()
    {'content': 'text', 'id': 'd1', 'score': 0.5}
    """
    return pl.struct(
        content.cast(pl.String).alias("content"),
        ident.cast(pl.String).alias("id"),
        score.cast(pl.Float64).alias("score"),
    )
