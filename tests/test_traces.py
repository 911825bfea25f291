"""rf.read_traces: real OpenTelemetry spans (opentelemetry-sdk + OpenInference names) read back as their source rows.

The spans are made by tests/trace_gen.py from the bundled ARES log and the TREC DL 2019
runs; every format (OTLP JSON lines, OTLP protobuf, Phoenix span tables in Parquet, CSV
and JSON) must give back the source rows exactly, rf.evaluate must score them as it
scores the source frame, and ranking metrics from the read ``retrieved_ids`` must be
those of the run file (trec_eval's, through pytrec_eval).
"""

from __future__ import annotations

import json
import random

import polars as pl
import pytest
from conftest import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("openinference.semconv")
import trace_gen

import ragframe as rf
from ragframe.datasets import example_paths, example_traces, wrong_contexts
from ragframe.io.traces import read_spans

FORMATS = ["jsonl", "jsonl.gz", "pb", "parquet", "csv", "json"]


@pytest.fixture(scope="module")
def ares_spans(ares_log):
    return trace_gen.make_spans(trace_gen.ares_rows(ares_log), seed=1)


def write(spans, folder, fmt, name="traces"):
    path = folder / f"{name}.{fmt}"
    if fmt.startswith("jsonl"):
        return trace_gen.write_otlp_json(spans, path, spans_per_line=7)  # traces cut across lines
    if fmt == "pb":
        return trace_gen.write_otlp_proto(spans, path, spans_per_request=7)
    table = trace_gen.phoenix_table(spans)
    if fmt == "parquet":
        table.write_parquet(path)
    elif fmt == "csv":  # lists as JSON text, as a CSV cell holds them
        nested = [c for c, t in table.schema.items() if isinstance(t, pl.List)]
        table.with_columns(
            pl.col(c).map_elements(lambda v: json.dumps(v.to_list()), pl.String) for c in nested
        ).write_csv(path)
    else:
        table.write_json(path)
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_ares_spans_read_back_as_the_source_rows(ares_log, ares_spans, tmp_path, fmt):
    rows = rf.read_traces(write(ares_spans, tmp_path, fmt))
    assert rows.height == 200
    assert rows["question"].to_list() == ares_log["question"].to_list()
    assert rows["answer"].to_list() == ares_log["answer"].to_list()
    assert rows["contexts"].to_list() == ares_log["contexts"].to_list()
    assert rows["retrieved_ids"].to_list() == [[f"{u}#{i}"] for u, i in zip(ares_log["source_url"], ares_log["id"])]
    assert rows["retrieved_scores"].null_count() == 200  # the log has no scores: none invented
    assert rows["metadata.row"].to_list() == ares_log["id"].to_list()
    assert rows["session_id"].to_list() == [f"ares-{i % 20}" for i in ares_log["id"]]
    assert rows["latency_ms"].to_list() == [221.0] * 200  # root: 1 ms + retriever 10 ms + LLM 210 ms
    assert rows["start_time"][0] == pl.Series([trace_gen.T0]).cast(pl.Datetime("ns", "UTC"))[0]
    spans = {(s.context.trace_id, s.name): s for s in ares_spans}
    first = int(rows["trace_id"][0], 16)
    assert rows["root_span_id"][0] == f"{spans[first, 'query'].context.span_id:016x}"
    assert rows["retriever_span_id"][0] == f"{spans[first, 'retrieve'].context.span_id:016x}"
    assert rows["llm_span_id"][0] == f"{spans[first, 'generate'].context.span_id:016x}"
    assert rows["document_span_ids"][0].to_list() == [rows["retriever_span_id"][0]]


def test_rf_evaluate_scores_the_read_rows_as_the_source_frame(ares_log, ares_spans, tmp_path):
    rows = rf.read_traces(write(ares_spans, tmp_path, "jsonl"))
    source = ares_log.select("question", "answer", "contexts")
    from_traces = rf.evaluate(rows.select("question", "answer", "contexts"))
    assert from_traces.equals(rf.evaluate(source))


def test_the_bundled_example_is_the_ares_log(ares_log):
    rows = rf.read_traces(example_traces())
    wrong = wrong_contexts(ares_log)
    assert rows["question"].to_list() == ares_log["question"].to_list()
    assert rows["answer"].to_list() == ares_log["answer"].to_list()
    expected = ares_log["contexts"].head(100).to_list() + wrong["contexts"].tail(100).to_list()
    assert rows["contexts"].to_list() == expected
    assert rows["metadata.version"].to_list() == ["v1"] * 100 + ["v2"] * 100
    by_version = rf.summarize(rf.evaluate(rows, metrics=["faithfulness"]), by="metadata.version")
    means = dict(zip(by_version["metadata.version"], by_version["mean"]))
    assert means["v2"] < means["v1"]  # the passages of v2 belong to other questions


# ----------------------------------------------------------------------------- DL19: ranking


def _dl19_rows():
    hits = json.loads(shared_path("rankllm_dl_runs", "bm25_top100_with_text.dl19.json").read_text())
    rerank = rf.read_trec_run(example_paths()["bm25+gpt3.5-rerank"])
    text = {h["docid"]: h["content"] for q in hits for h in q["hits"]}
    rows = []
    for query in hits:
        qid = str(query["hits"][0]["qid"])
        reranked = rerank.filter(pl.col("query_id") == qid).sort("rank")
        rows.append(
            {
                "question": query["query"],
                "answer": "",
                "documents": [{"content": h["content"], "id": h["docid"], "score": h["score"]} for h in query["hits"]],
                "reranked": [
                    {"content": text[d], "id": d, "score": s} for d, s in zip(reranked["doc_id"], reranked["score"])
                ],
                "metadata": {"qid": qid},
            }
        )
    return rows


@pytest.fixture(scope="module")
def dl19(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dl19")
    return trace_gen.write_otlp_json(trace_gen.make_spans(_dl19_rows(), seed=19), folder / "dl19.jsonl")


def _run_of(rows: pl.DataFrame) -> pl.DataFrame:
    return (
        rows.select(
            pl.col("metadata.qid").alias("query_id"),
            pl.col("retrieved_ids").alias("doc_id"),
            pl.col("retrieved_scores").alias("score"),
        )
        .explode("doc_id", "score")
        .with_columns(pl.int_range(1, pl.len() + 1).over("query_id").alias("rank"))
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("retrieval", "run"), [("reranker", "bm25+gpt3.5-rerank"), ("last", "bm25"), ("first", "bm25")]
)
def test_dl19_rankings_read_back_in_rank_order_and_trec_eval_exact(dl19, retrieval, run):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rows = rf.read_traces(dl19, retrieval=retrieval)
    source = rf.read_trec_run(example_paths()[run])
    read = _run_of(rows)
    assert (
        read.select("query_id", "doc_id", "rank", "score")
        .sort("query_id", "rank")
        .equals(source.select("query_id", "doc_id", "rank", "score").sort("query_id", "rank"))
    )
    qrels = rf.read_qrels(example_paths()["qrels"])
    metrics = ["ndcg_at_k", "average_precision", "mrr"]
    ours = rf.evaluate_run(read, qrels, k=[10], metrics=metrics).sort("query_id")
    assert ours.equals(rf.evaluate_run(source, qrels, k=[10], metrics=metrics).sort("query_id"))
    judged = {}
    for q, d, r in qrels.select("query_id", "doc_id", "relevance").iter_rows():
        judged.setdefault(q, {})[d] = r
    scored = {}
    for q, d, s in read.select("query_id", "doc_id", "score").iter_rows():
        scored.setdefault(q, {})[d] = s
    reference = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut_10", "map"}).evaluate(scored)
    for q, ndcg, ap in ours.select("query_id", "ndcg_at_10", "average_precision").iter_rows():
        assert ndcg == pytest.approx(reference[q]["ndcg_cut_10"], abs=1e-12)
        assert ap == pytest.approx(reference[q]["map"], abs=1e-12)
    # and the published figure for the rerank: nDCG@10 0.6868 (pytrec_eval), BM25 0.5058
    mean = ours["ndcg_at_10"].mean()
    assert round(mean, 4) == (0.6868 if retrieval == "reranker" else 0.5058)


# ----------------------------------------------------------------------------- policy, rejects, errors


def _docs(*names):
    return [{"content": f"text {n}", "id": n, "score": float(10 - i)} for i, n in enumerate(names)]


def test_several_retriever_and_reranker_spans_follow_the_policy(tmp_path):
    row = {
        "question": "q?",
        "answer": "a.",
        "documents": _docs("a", "b"),
        "retrievers": [_docs("a", "b"), _docs("c")],
        "reranked": _docs("b", "a"),
    }
    path = trace_gen.write_otlp_json(trace_gen.make_spans([row]), tmp_path / "t.jsonl")
    ids = {
        policy: rf.read_traces(path, retrieval=policy)["retrieved_ids"][0].to_list()
        for policy in rf.io.traces.RETRIEVAL
    }
    assert ids == {"reranker": ["b", "a"], "first": ["a", "b"], "last": ["c"], "all": ["a", "b", "c"]}
    all_rows = rf.read_traces(path, retrieval="all")
    spans = all_rows["document_span_ids"][0].to_list()
    assert spans[0] == spans[1] != spans[2]
    no_reranker = trace_gen.write_otlp_json(trace_gen.make_spans([{**row, "reranked": None}]), tmp_path / "n.jsonl")
    assert rf.read_traces(no_reranker)["retrieved_ids"][0].to_list() == ["c"]  # the last retriever


def test_broken_traces_go_to_rejects_with_their_reason(tmp_path):
    good = {"question": "q?", "answer": "a.", "documents": _docs("a")}
    rows = [
        good,
        {**good, "retrievers": []},  # no retriever span
        {**good, "documents": [{"id": "x", "score": 1.0}]},  # a document without content
        good,  # made two roots below
        good,  # made a cycle below
    ]
    spans = trace_gen.make_spans(rows)
    table = trace_gen.phoenix_table(spans)
    traces = table["context.trace_id"].unique(maintain_order=True).to_list()
    root = pl.col("parent_id").is_null()
    two_roots = (pl.col("context.trace_id") == traces[3]) & (pl.col("name") == "retrieve")
    cycle_root = (pl.col("context.trace_id") == traces[4]) & root
    child = table.filter((pl.col("context.trace_id") == traces[4]) & (pl.col("name") == "generate"))["context.span_id"][
        0
    ]
    table = table.with_columns(
        pl.when(two_roots).then(None).when(cycle_root).then(pl.lit(child)).otherwise("parent_id").alias("parent_id")
    )
    table.write_parquet(tmp_path / "spans.parquet")
    read, rejects = rf.read_traces(tmp_path / "spans.parquet", rejects=True)
    assert read["trace_id"].to_list() == [traces[0]]
    reasons = dict(zip(rejects["trace_id"], rejects["reason"]))
    assert reasons[traces[1]] == "no RETRIEVER or RERANKER span (retrieval='reranker')"
    assert reasons[traces[2]].startswith("document 0 of span ") and reasons[traces[2]].endswith("has no content")
    assert reasons[traces[3]].startswith("2 root spans")
    assert reasons[traces[4]].startswith("parent cycle")
    assert set(rejects["source_file"]) == {str(tmp_path / "spans.parquet")}
    with pytest.raises(rf.InputFileError, match="4 traces cannot become rows"):
        rf.read_traces(tmp_path / "spans.parquet")


def test_documents_lost_at_the_sdk_attribute_limit_are_rejected_not_truncated(tmp_path):
    row = {"question": "q", "answer": "a", "documents": _docs(*[f"d{i}" for i in range(50)])}
    spans = trace_gen.make_spans([row], attribute_limit=None)  # the SDK's default limit: 128 attributes a span
    path = trace_gen.write_otlp_json(spans, tmp_path / "t.jsonl")
    rows, rejects = rf.read_traces(path, rejects=True)
    assert rows.height == 0
    retriever = next(s for s in spans if s.name == "retrieve")
    assert rejects["reason"][0].startswith(f"span {retriever.context.span_id:016x} dropped 24 attributes")  # 152 - 128


def test_a_cycle_below_the_root_is_rejected(tmp_path):
    spans = trace_gen.make_spans([{"question": "q", "answer": "a", "documents": _docs("a")}])
    table = trace_gen.phoenix_table(spans)
    ids = dict(zip(table["name"], table["context.span_id"]))
    table = table.with_columns(  # retrieve <-> generate point at each other; the root stays
        pl.when(pl.col("name") == "retrieve")
        .then(pl.lit(ids["generate"]))
        .when(pl.col("name") == "generate")
        .then(pl.lit(ids["retrieve"]))
        .otherwise("parent_id")
        .alias("parent_id")
    )
    table.write_parquet(tmp_path / "s.parquet")
    _, rejects = rf.read_traces(tmp_path / "s.parquet", rejects=True)
    assert rejects["reason"].to_list() == ["parent cycle: 2 spans do not lead up to the root span"]


def test_a_file_that_is_not_its_format_names_the_file_and_line(tmp_path, ares_spans):
    path = write(ares_spans[:7], tmp_path, "jsonl")
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(rf.InputFileError, match=r"traces.jsonl' line 2: not JSON"):
        rf.read_traces(path)
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n')
    with pytest.raises(rf.InputFileError, match=r"other.jsonl' line 1: not an OTLP"):
        rf.read_traces(other, format="otlp")
    with pytest.raises(rf.InputFileError, match="cannot tell the format"):
        rf.read_traces(other)
    table = tmp_path / "t.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(table)
    with pytest.raises(rf.InputFileError, match=r"not a Phoenix span table: no column 'context\.trace_id'"):
        rf.read_traces(table)
    with pytest.raises(rf.InvalidParameterError):
        rf.read_traces(path, retrieval="best")


def test_rows_do_not_depend_on_the_order_or_batching_of_spans(ares_spans, tmp_path):
    reference = rf.read_traces(write(ares_spans, tmp_path, "jsonl")).sort("trace_id")
    shuffled = list(ares_spans)
    random.Random(3).shuffle(shuffled)
    path = trace_gen.write_otlp_json(shuffled, tmp_path / "shuffled.jsonl", spans_per_line=1)
    assert rf.read_traces(path).sort("trace_id").equals(reference)


def test_opentelemetry_genai_model_and_usage_attributes(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=trace_gen.SeededIds(5))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("genai")
    root = tracer.start_span("rag", start_time=0, attributes={"openinference.span.kind": "CHAIN", "input.value": "q"})
    from opentelemetry import trace

    context = trace.set_span_in_context(root)
    retriever = tracer.start_span(
        "r", context=context, start_time=1,
        attributes={"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.content": "p",
                    "retrieval.documents.0.document.id": 7},
    )  # fmt: skip
    retriever.end(end_time=2)
    for n, (model, used) in enumerate([("m-1", (10, 3)), ("m-2", (20, 4))]):
        llm = tracer.start_span(
            "chat", context=context, start_time=3 + n,
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                        "gen_ai.usage.input_tokens": used[0], "gen_ai.usage.output_tokens": used[1],
                        "output.value": f"answer {n}"},
        )  # fmt: skip
        llm.end(end_time=5 + n)
    root.end(end_time=10)
    provider.shutdown()
    path = trace_gen.write_otlp_json(list(exporter.get_finished_spans()), tmp_path / "g.jsonl")
    row = rf.read_traces(path).row(0, named=True)
    assert (row["model"], row["prompt_tokens"], row["completion_tokens"], row["total_tokens"]) == ("m-2", 30, 7, 37)
    assert (row["question"], row["answer"], row["retrieved_ids"]) == ("q", "answer 1", ["7"])  # the last LLM output


def test_json_inputs_and_outputs_are_unwrapped(tmp_path):
    from openinference.semconv.trace import OpenInferenceMimeTypeValues, SpanAttributes

    spans = trace_gen.make_spans([{"question": "q", "answer": "a", "documents": _docs("a")}])
    table = trace_gen.phoenix_table(spans).with_columns(
        pl.when(pl.col("parent_id").is_null())
        .then(pl.lit(json.dumps({"question": "What is X?", "chat_history": []})))
        .alias("attributes.input.value"),
        pl.when(pl.col("parent_id").is_null())
        .then(pl.lit(json.dumps({"answer": "X is Y.", "sources": ["a"]})))
        .alias("attributes.output.value"),
        pl.lit(OpenInferenceMimeTypeValues.JSON.value).alias("attributes." + SpanAttributes.INPUT_MIME_TYPE),
        pl.lit(OpenInferenceMimeTypeValues.JSON.value).alias("attributes." + SpanAttributes.OUTPUT_MIME_TYPE),
    )
    table.write_parquet(tmp_path / "s.parquet")
    assert rf.read_traces(tmp_path / "s.parquet").select("question", "answer").row(0) == ("What is X?", "X is Y.")


def test_langsmith_run_exports(tmp_path):
    runs = [
        {"id": "r0", "trace_id": "r0", "parent_run_id": None, "run_type": "chain", "name": "rag",
         "inputs": {"question": "What is X?"}, "outputs": {"answer": "X is Y."},
         "start_time": "2026-01-01T00:00:00.000000", "end_time": "2026-01-01T00:00:01.500000",
         "extra": {"metadata": {"version": "v2", "thread_id": "s1"}}, "tags": ["prod"]},
        {"id": "r1", "trace_id": "r0", "parent_run_id": "r0", "run_type": "retriever", "name": "ret",
         "inputs": {"query": "What is X?"},
         "outputs": {"documents": [
             {"page_content": "X is Y.", "metadata": {"id": "d1", "score": 0.9}, "type": "Document"},
             {"page_content": "Z.", "metadata": {"id": "d2", "score": 0.5}, "type": "Document"}]},
         "start_time": "2026-01-01T00:00:00.100000", "end_time": "2026-01-01T00:00:00.200000"},
        {"id": "r2", "trace_id": "r0", "parent_run_id": "r0", "run_type": "llm", "name": "chat",
         "inputs": {"messages": [[{"lc": 1, "type": "constructor",
                                   "id": ["langchain", "schema", "messages", "HumanMessage"],
                                   "kwargs": {"content": "What is X?"}}]]},
         "outputs": {"generations": [[{"text": "X is Y.", "type": "ChatGeneration"}]]},
         "extra": {"metadata": {"ls_model_name": "gpt-4o-mini"}},
         "prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16,
         "start_time": "2026-01-01T00:00:00.300000", "end_time": "2026-01-01T00:00:01.400000"},
    ]  # fmt: skip
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    row = rf.read_traces(path).row(0, named=True)
    assert row["question"] == "What is X?" and row["answer"] == "X is Y."
    assert row["contexts"] == ["X is Y.", "Z."] and row["retrieved_ids"] == ["d1", "d2"]
    assert row["retrieved_scores"] == [0.9, 0.5]
    assert (row["root_span_id"], row["retriever_span_id"], row["llm_span_id"]) == ("r0", "r1", "r2")
    assert (row["model"], row["total_tokens"], row["latency_ms"]) == ("gpt-4o-mini", 16, 1500.0)
    assert (row["metadata.version"], row["session_id"], row["tags"]) == ("v2", "s1", ["prod"])
    as_list = tmp_path / "runs.json"
    as_list.write_text(json.dumps(runs))
    assert rf.read_traces(as_list).equals(rf.read_traces(path).with_columns(pl.lit(str(as_list)).alias("x")).drop("x"))


def test_read_spans_counts_the_example():
    spans = read_spans(example_traces())
    assert spans.group_by("kind").len().sort("kind").rows() == [("CHAIN", 200), ("LLM", 200), ("RETRIEVER", 200)]


def test_protobuf_without_opentelemetry_proto_names_the_extra(ares_spans, tmp_path, monkeypatch):
    import sys

    path = write(ares_spans[:6], tmp_path, "pb")
    monkeypatch.setitem(sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None)
    with pytest.raises(rf.MissingDependencyError, match=r"ragframe\[traces\]"):
        rf.read_traces(path)


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_traces_row_depends_only_on_its_own_spans(ares_spans, tmp_path_factory, data):
    """Any subset of the traces, in any span order, cut into lines anyhow, gives those traces' rows unchanged."""
    table = trace_gen.phoenix_table(ares_spans[:90])  # 30 traces
    reference = rf.read_traces(_table_file(table, tmp_path_factory)).sort("trace_id")
    traces = reference["trace_id"].to_list()
    kept = data.draw(st.lists(st.sampled_from(traces), min_size=1, unique=True))
    order = data.draw(st.permutations(range(table.height)))
    subset = table[list(order)].filter(pl.col("context.trace_id").is_in(kept))
    rows = rf.read_traces(_table_file(subset, tmp_path_factory)).sort("trace_id")
    expected = reference.filter(pl.col("trace_id").is_in(kept))
    assert rows.drop("source_file", strict=False).equals(expected.drop("source_file", strict=False))
    spans = [s for s in ares_spans[:90] if f"{s.context.trace_id:032x}" in kept]
    per_line = data.draw(st.integers(1, 20))
    path = trace_gen.write_otlp_json(spans, tmp_path_factory.mktemp("o") / "t.jsonl", spans_per_line=per_line)
    assert rf.read_traces(path).sort("trace_id").equals(rows)


def _table_file(table: pl.DataFrame, factory) -> object:
    path = factory.mktemp("t") / "spans.parquet"
    table.write_parquet(path)
    return path
