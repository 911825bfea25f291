"""Spans into rows: one row per trace in ragframe's column contract, and the traces that cannot be one.

The policy (docs/traces.md):

- The **root** is the trace's span without a parent in the trace. A trace with two such
  spans, or with none (every span has a parent: a cycle), or whose spans do not all lead up
  to its root (a cycle below it), is rejected.
- **Documents** come from the trace's RETRIEVER and RERANKER spans, in rank order (the
  ``retrieval.documents.{i}`` / ``reranker.output_documents.{i}`` index), by ``retrieval``:
  ``"reranker"`` (default) the output documents of the last RERANKER span, else the
  documents of the last RETRIEVER span (a reranker's output wins over its input);
  ``"last"`` / ``"first"`` the last / first RETRIEVER span (by start time); ``"all"`` the
  documents of every RETRIEVER span in start order, concatenated (``document_span_ids``
  says which span each came from). No such span, or a document without content: rejected.
- The **LLM span** is the last LLM span (by start time). ``question`` is the root's
  ``input.value``, else the LLM span's last user message; ``answer`` the root's
  ``output.value``, else the LLM span's last output message.
- A trace with a span whose SDK dropped attributes (OTLP's ``droppedAttributesCount``:
  the SDK keeps 128 attributes a span by default, about 40 documents, and drops the
  oldest, the span kind first) is rejected: its documents may be incomplete.
- Token counts are summed over the trace's LLM spans; ``model`` is the LLM span's.
"""

from __future__ import annotations

import polars as pl

from ragframe.io.traces.spans import DOCUMENT

__all__ = ["RETRIEVAL", "ROW_SCHEMA", "REJECT_SCHEMA", "assemble"]

#: The values of ``retrieval=``.
RETRIEVAL = ("reranker", "last", "first", "all")

#: The columns of a row (``metadata.<key>`` columns follow, one per key of the root's metadata).
ROW_SCHEMA = pl.Schema(
    {
        "trace_id": pl.String,
        "root_span_id": pl.String,
        "retriever_span_id": pl.String,
        "llm_span_id": pl.String,
        "name": pl.String,
        "question": pl.String,
        "answer": pl.String,
        "contexts": pl.List(pl.String),
        "retrieved_ids": pl.List(pl.String),
        "retrieved_scores": pl.List(pl.Float64),
        "document_span_ids": pl.List(pl.String),
        "start_time": pl.Datetime("ns", "UTC"),
        "latency_ms": pl.Float64,
        "model": pl.String,
        "prompt_tokens": pl.Int64,
        "completion_tokens": pl.Int64,
        "total_tokens": pl.Int64,
        "session_id": pl.String,
        "tags": pl.List(pl.String),
        "metadata": pl.String,
    }
)
#: The columns of a rejected trace.
REJECT_SCHEMA = pl.Schema(
    {"trace_id": pl.String, "source_file": pl.String, "source_row": pl.Int64, "reason": pl.String}
)


def _roots(spans: pl.DataFrame) -> pl.DataFrame:
    """``spans`` with ``has_parent`` (the parent is a span of the same trace) and ``reaches_root``."""
    ids = spans.select("trace_id", pl.col("span_id").alias("parent_id"), pl.lit(True).alias("has_parent")).unique(
        ["trace_id", "parent_id"]
    )
    linked = spans.join(ids, on=["trace_id", "parent_id"], how="left", maintain_order="left").with_columns(
        pl.col("has_parent").fill_null(False)
    )
    # pointer doubling: each span's furthest known ancestor; a root points at itself
    up = linked.select(
        "trace_id",
        "span_id",
        pl.when("has_parent").then("parent_id").otherwise("span_id").alias("up"),
        (~pl.col("has_parent")).alias("is_root"),
    ).unique(["trace_id", "span_id"])
    roots = up.filter("is_root").select("trace_id", pl.col("span_id").alias("up"), pl.lit(True).alias("done"))
    for _ in range(64):  # 2**64 levels: any trace
        step = up.select("trace_id", pl.col("span_id").alias("up"), pl.col("up").alias("next"))
        moved = up.join(step, on=["trace_id", "up"], how="left").with_columns(pl.coalesce("next", "up").alias("next"))
        if moved.select((pl.col("next") == pl.col("up")).all()).item():
            break
        up = moved.select("trace_id", "span_id", pl.col("next").alias("up"), "is_root")
    reach = up.join(roots, on=["trace_id", "up"], how="left").select(
        "trace_id", "span_id", pl.col("done").fill_null(False).alias("reaches_root")
    )
    return linked.join(reach, on=["trace_id", "span_id"], how="left", maintain_order="left")


def _last(column: str, where: pl.Expr, order: str = "order") -> pl.Expr:
    return pl.col(column).filter(where).sort_by(pl.col(order).filter(where)).last()


def _first_of(column: str, where: pl.Expr, order: str = "order") -> pl.Expr:
    return pl.col(column).filter(where).sort_by(pl.col(order).filter(where)).first()


def assemble(spans: pl.DataFrame, retrieval: str = "reranker") -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rows (:data:`ROW_SCHEMA` + ``metadata.*``) and rejects (:data:`REJECT_SCHEMA`) of a span frame.

    Every trace of ``spans`` must be complete in it (the caller groups spans by trace).

    Examples
    --------
    >>> from ragframe.io.traces.spans import conform
    >>> spans = conform(pl.DataFrame({
    ...     "trace_id": ["t", "t"], "span_id": ["a", "b"], "parent_id": [None, "a"],
    ...     "kind": ["CHAIN", "RETRIEVER"], "input": ["q?", None], "output": ["ans", None],
    ...     "start_ns": [0, 1], "end_ns": [2_000_000, 1],
    ...     "documents": [None, [{"content": "p", "id": "d1", "score": 1.0}]]}))
    >>> rows, rejects = assemble(spans)
    >>> rows.select("question", "answer", "contexts", "retrieved_ids", "latency_ms").row(0)
    ('q?', 'ans', ['p'], ['d1'], 2.0)
    """
    if spans.height == 0:
        return pl.DataFrame(schema=ROW_SCHEMA), pl.DataFrame(schema=REJECT_SCHEMA)
    spans = _roots(spans.with_row_index("order"))
    spans = spans.with_columns(pl.struct("start_ns", "order").rank("ordinal").alias("order"))  # start time, then file
    is_root = ~pl.col("has_parent")
    retriever = pl.col("kind") == "RETRIEVER"
    reranker = pl.col("kind") == "RERANKER"
    llm = pl.col("kind") == "LLM"
    if retrieval == "reranker":
        chosen = pl.when(reranker.any()).then(_last("span_id", reranker)).otherwise(_last("span_id", retriever))
        docs = pl.when(reranker.any()).then(_last("reranker_output", reranker)).otherwise(_last("documents", retriever))
    elif retrieval == "last":
        chosen, docs = _last("span_id", retriever), _last("documents", retriever)
    elif retrieval == "first":
        chosen, docs = _first_of("span_id", retriever), _first_of("documents", retriever)
    else:  # all
        chosen, docs = _last("span_id", retriever), pl.lit(None, pl.List(DOCUMENT))
    per_trace = spans.group_by("trace_id", maintain_order=True).agg(
        pl.col("source_file").first(),
        pl.col("source_row").min(),
        is_root.sum().alias("roots"),
        pl.col("span_id").filter(is_root).alias("root_ids"),
        (~pl.col("reaches_root")).sum().alias("unreachable"),
        pl.len().alias("spans"),
        pl.col("span_id").n_unique().alias("unique_spans"),
        (retriever | reranker).any().alias("has_retrieval"),
        retriever.any().alias("has_retriever"),
        pl.col("span_id").filter(is_root).first().alias("root_span_id"),
        pl.col("name").filter(is_root).first().alias("name"),
        pl.col("input").filter(is_root).first().alias("root_input"),
        pl.col("output").filter(is_root).first().alias("root_output"),
        pl.col("start_ns").filter(is_root).first().alias("start_ns"),
        pl.col("end_ns").filter(is_root).first().alias("end_ns"),
        pl.col("metadata").filter(is_root).first().alias("metadata"),
        pl.col("tags").filter(is_root).first().alias("tags"),
        pl.col("session_id").filter(is_root).first().alias("root_session"),
        pl.col("session_id").drop_nulls().first().alias("any_session"),
        chosen.alias("retriever_span_id"),
        docs.alias("docs"),
        pl.col("dropped_attributes").fill_null(0).max().alias("dropped"),
        pl.col("span_id").filter(pl.col("dropped_attributes").fill_null(0) > 0).first().alias("dropping_span"),
        _last("span_id", llm).alias("llm_span_id"),
        _last("user_message", llm).alias("user_message"),
        _last("llm_output", llm).alias("llm_output"),
        _last("model", llm).alias("model"),
        pl.col("prompt_tokens").filter(llm).sum().alias("prompt_tokens"),
        pl.col("completion_tokens").filter(llm).sum().alias("completion_tokens"),
        pl.col("total_tokens").filter(llm).sum().alias("total_tokens"),
        (pl.col("prompt_tokens").filter(llm).is_not_null().any()).alias("has_prompt"),
        (pl.col("completion_tokens").filter(llm).is_not_null().any()).alias("has_completion"),
        (pl.col("total_tokens").filter(llm).is_not_null().any()).alias("has_total"),
    )
    if retrieval == "all":
        every = (
            spans.filter(retriever)
            .sort("order")
            .select("trace_id", "span_id", "documents")
            .explode("documents")
            .drop_nulls("documents")
            .group_by("trace_id", maintain_order=True)
            .agg(pl.col("documents").alias("docs"), pl.col("span_id").alias("document_span_ids"))
        )
        per_trace = per_trace.drop("docs").join(every, on="trace_id", how="left", maintain_order="left")
        per_trace = per_trace.with_columns(
            pl.when("has_retriever").then(pl.col("docs").fill_null(pl.lit([], pl.List(DOCUMENT)))).alias("docs")
        )
    content_missing = pl.col("docs").list.eval(pl.element().struct.field("content").is_null()).list.arg_max()
    has_missing = pl.col("docs").list.eval(pl.element().struct.field("content").is_null()).list.any()
    wanted = {"reranker": "RETRIEVER or RERANKER", "last": "RETRIEVER", "first": "RETRIEVER", "all": "RETRIEVER"}
    has_chosen = pl.col("has_retrieval") if retrieval == "reranker" else pl.col("has_retriever")
    reason = (
        pl.when(pl.col("unique_spans") < pl.col("spans"))
        .then(pl.lit("a span id occurs twice in the trace"))
        .when(pl.col("roots") == 0)
        .then(pl.lit("parent cycle: every span has a parent in the trace, none is its root"))
        .when(pl.col("roots") > 1)
        .then(
            pl.format("{} root spans (spans without a parent in the trace): ", pl.col("roots"))
            + pl.col("root_ids").list.join(", ")
        )
        .when(pl.col("unreachable") > 0)
        .then(pl.format("parent cycle: {} spans do not lead up to the root span", pl.col("unreachable")))
        .when(pl.col("dropped") > 0)
        .then(
            pl.format(
                "span {} dropped {} attributes at the SDK's attribute limit: its documents or kind may be lost "
                "(raise OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT)",
                pl.col("dropping_span"),
                pl.col("dropped"),
            )
        )
        .when(~has_chosen)
        .then(pl.lit(f"no {wanted[retrieval]} span (retrieval={retrieval!r})"))
        .when(pl.col("docs").is_null())
        .then(pl.format("span {} holds no documents attribute", pl.col("retriever_span_id")))
        .when(has_missing)
        .then(pl.format("document {} of span {} has no content", content_missing, pl.col("retriever_span_id")))
    )
    per_trace = per_trace.with_columns(reason.alias("reason"))
    rejects = per_trace.filter(pl.col("reason").is_not_null()).select(*REJECT_SCHEMA.names())
    good = per_trace.filter(pl.col("reason").is_null())
    if retrieval != "all":  # every document from the one chosen span
        good = good.with_columns(
            pl.col("retriever_span_id").repeat_by(pl.col("docs").list.len()).alias("document_span_ids")
        )
    ids = pl.col("docs").list.eval(pl.element().struct.field("id"))
    scores = pl.col("docs").list.eval(pl.element().struct.field("score"))
    rows = good.select(
        "trace_id",
        "root_span_id",
        "retriever_span_id",
        "llm_span_id",
        "name",
        pl.coalesce("root_input", "user_message").alias("question"),
        pl.coalesce("root_output", "llm_output").alias("answer"),
        pl.col("docs").list.eval(pl.element().struct.field("content")).alias("contexts"),
        pl.when(ids.list.eval(pl.element().is_not_null()).list.any()).then(ids).alias("retrieved_ids"),
        pl.when(scores.list.eval(pl.element().is_not_null()).list.any()).then(scores).alias("retrieved_scores"),
        "document_span_ids",
        pl.col("start_ns").cast(pl.Datetime("ns", "UTC")).alias("start_time"),
        ((pl.col("end_ns") - pl.col("start_ns")) / 1e6).alias("latency_ms"),
        "model",
        pl.when("has_prompt").then("prompt_tokens").alias("prompt_tokens"),
        pl.when("has_completion").then("completion_tokens").alias("completion_tokens"),
        pl.when("has_total")
        .then("total_tokens")
        .when(pl.col("has_prompt") & pl.col("has_completion"))
        .then(pl.col("prompt_tokens") + pl.col("completion_tokens"))
        .alias("total_tokens"),
        pl.coalesce("root_session", "any_session").alias("session_id"),
        "tags",
        "metadata",
    )
    return rows.cast(dict(ROW_SCHEMA)), rejects.cast(dict(REJECT_SCHEMA))
