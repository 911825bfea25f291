"""rf.to_annotations, send_annotations and `ragframe annotations`: scores back onto the spans.

Expected records are worked out by hand from the frames below: which span each metric goes on
(retriever span for metrics that read no answer), the pass/fail label from ``<metric>_passed``, the
judge's reason as the explanation, and one document annotation per retrieved position.
"""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe as rf
from ragframe.cli.main import main
from ragframe.io.annotations import send_annotations

SCORED = pl.DataFrame(
    {
        "trace_id": ["t1", "t2"],
        "root_span_id": ["r1", "r2"],
        "retriever_span_id": ["s1", "s2"],
        "llm_span_id": ["l1", "l2"],
        "retrieved_ids": [["d1", "d2", "d3"], ["d9"]],
        "relevance": [[{"id": "d3", "grade": 2}, {"id": "d1", "grade": 1}], [{"id": "d4", "grade": 1}]],
        "faithfulness": [0.75, None],
        "faithfulness_passed": [True, None],
        "faithfulness_reason": ["3 of 4 claims supported", "judge failed: timeout"],
        "faithfulness_status": ["ok", "error"],
        "context_relevance": [0.5, 1.0],
        "ndcg_at_3": [0.6, 0.0],
    }
)


def test_phoenix_span_annotations():
    got = rf.to_annotations(SCORED, metrics=["faithfulness", "context_relevance", "ndcg_at_3"])
    spans = got.filter(pl.col("document_position").is_null())
    assert spans.rows() == [
        ("r1", "faithfulness", "LLM", "pass", 0.75, "3 of 4 claims supported", None),
        ("r2", "faithfulness", "LLM", None, None, "judge failed: timeout", None),
        ("s1", "context_relevance", "CODE", None, 0.5, None, None),
        ("s2", "context_relevance", "CODE", None, 1.0, None, None),
        ("s1", "ndcg_at_3", "CODE", None, 0.6, None, None),
        ("s2", "ndcg_at_3", "CODE", None, 0.0, None, None),
    ]


def test_phoenix_document_annotations_are_qrels_grades_by_position():
    docs = rf.to_annotations(SCORED, metrics=[]).filter(pl.col("document_position").is_not_null())
    # d1 d2 d3 judged 1, unjudged, 2; d9 unjudged
    assert docs.select("span_id", "name", "document_position", "score").rows() == [
        ("s1", "relevance", 0, 1.0),
        ("s1", "relevance", 1, 0.0),
        ("s1", "relevance", 2, 2.0),
        ("s2", "relevance", 0, 0.0),
    ]
    llm = rf.to_annotations(SCORED, metrics=[], annotator_kinds={"relevance": "LLM"})
    assert llm["annotator_kind"].unique().to_list() == ["LLM"]
    with pytest.raises(rf.InvalidParameterError, match="annotator_kinds"):
        rf.to_annotations(SCORED, annotator_kinds={"relevance": "ROBOT"})
    binary = SCORED.drop("relevance").with_columns(relevant_ids=pl.Series([["d2"], ["d9"]]))
    docs = rf.to_annotations(binary, metrics=[])
    assert docs["score"].to_list() == [0.0, 1.0, 0.0, 1.0]


def test_documents_column_and_span_override():
    df = SCORED.drop("relevance").with_columns(passage_score=pl.Series([[0.9, None, 0.1], [0.4]]))
    got = rf.to_annotations(
        df, metrics=["faithfulness"], documents=["passage_score"], spans={"faithfulness": "llm_span_id"}
    )
    assert got.select("span_id", "name", "score", "document_position").rows() == [
        ("l1", "faithfulness", 0.75, None),
        ("l2", "faithfulness", None, None),
        ("s1", "passage_score", 0.9, 0),
        ("s1", "passage_score", 0.1, 2),  # a null passage score is no annotation; positions stay the list's
        ("s2", "passage_score", 0.4, 0),
    ]


def test_langsmith_feedback():
    got = rf.to_annotations(SCORED, target="langsmith", metrics=["faithfulness"])
    assert got.columns == ["run_id", "key", "score", "value", "comment"]
    assert got.rows() == [
        ("r1", "faithfulness", 0.75, "pass", "3 of 4 claims supported"),
        ("r2", "faithfulness", None, None, "judge failed: timeout"),
    ]


def test_default_metrics_are_every_score_column():
    got = rf.to_annotations(SCORED.drop("relevance"))
    assert got["name"].unique(maintain_order=True).to_list() == ["faithfulness", "context_relevance", "ndcg_at_3"]


def test_renamed_span_columns_and_pandas_input():
    df = SCORED.rename({"root_span_id": "root", "retriever_span_id": "ret"}).to_pandas()
    got = rf.to_annotations(df, metrics=["faithfulness", "ndcg_at_3"], root_span_id="root", retriever_span_id="ret")
    assert got["span_id"].to_list()[:4] == ["r1", "r2", "s1", "s2"]


def test_missing_or_null_span_id_is_an_error():
    with pytest.raises(rf.SchemaError, match="span id column for 'faithfulness' is missing"):
        rf.to_annotations(SCORED.drop("root_span_id"), metrics=["faithfulness"])
    nulls = SCORED.with_columns(retriever_span_id=pl.Series(["s1", None]))
    with pytest.raises(rf.SchemaError, match="no span id for 'ndcg_at_3'") as info:
        rf.to_annotations(nulls, metrics=["ndcg_at_3"])
    assert info.value.row == 1
    with pytest.raises(rf.InvalidParameterError, match="lacks: 'nope'"):
        rf.to_annotations(SCORED, metrics=["nope"])
    with pytest.raises(rf.InvalidParameterError, match="target"):
        rf.to_annotations(SCORED, target="langfuse")


@settings(max_examples=40, deadline=None)
@given(st.permutations(list(range(2))), st.integers(0, 1))
def test_rows_do_not_depend_on_their_batch(order, keep):
    """A row's annotations are the same alone, reordered or with others."""
    whole = rf.to_annotations(SCORED)
    part = rf.to_annotations(SCORED[order])
    assert sorted(part.rows(), key=str) == sorted(whole.rows(), key=str)
    alone = rf.to_annotations(SCORED[keep : keep + 1])
    span_ids = {SCORED["root_span_id"][keep], SCORED["retriever_span_id"][keep]}
    assert sorted(alone.rows(), key=str) == sorted(whole.filter(pl.col("span_id").is_in(span_ids)).rows(), key=str)


# ----------------------------------------------------------------------------- sending to a server


class _Recorder(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.requests.append((self.path, dict(self.headers), body))
        status = self.server.status
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps({"data": []} if status < 400 else {"detail": "span not found"}).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def recording_server():
    """An HTTP server on 127.0.0.1 that records every POST (path, headers, body) and answers ``status``."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    httpd.requests, httpd.status = [], 200
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.slow
def test_send_to_phoenix(recording_server, monkeypatch):
    monkeypatch.setenv("RF_TEST_PHOENIX_KEY", "phx-secret-0123456789")
    records = rf.to_annotations(SCORED, metrics=["faithfulness"])
    url = f"http://127.0.0.1:{recording_server.server_port}"
    assert send_annotations(records, url, api_key_env="RF_TEST_PHOENIX_KEY") == 6
    (p1, h1, b1), (p2, _, b2) = recording_server.requests
    assert p1 == "/v1/span_annotations?sync=true" and p2 == "/v1/document_annotations?sync=true"
    assert h1["authorization"] == "Bearer phx-secret-0123456789"
    assert b1["data"][0] == {
        "span_id": "r1",
        "name": "faithfulness",
        "annotator_kind": "LLM",
        "result": {"label": "pass", "score": 0.75, "explanation": "3 of 4 claims supported"},
        "metadata": {"source": "ragframe"},
    }
    assert [(d["span_id"], d["document_position"], d["result"]["score"]) for d in b2["data"]] == [
        ("s1", 0, 1.0),
        ("s1", 1, 0.0),
        ("s1", 2, 2.0),
        ("s2", 0, 0.0),
    ]


@pytest.mark.slow
def test_send_to_langsmith_and_errors(recording_server, monkeypatch):
    monkeypatch.setenv("RF_TEST_LS_KEY", "lsv2-secret-0123456789")
    records = rf.to_annotations(SCORED, target="langsmith", metrics=["ndcg_at_3"])
    url = f"http://127.0.0.1:{recording_server.server_port}/api/v1"
    assert send_annotations(records, url, target="langsmith", api_key_env="RF_TEST_LS_KEY") == 2
    path, headers, body = recording_server.requests[0]
    assert path == "/api/v1/feedback" and headers["x-api-key"] == "lsv2-secret-0123456789"
    assert body == {"run_id": "s1", "key": "ndcg_at_3", "score": 0.6, "value": None, "comment": None}
    recording_server.status = 404
    with pytest.raises(rf.RagframeError, match="answered 404") as info:
        send_annotations(records, url, target="langsmith", api_key_env="RF_TEST_LS_KEY")
    assert "lsv2-secret" not in str(info.value)
    with pytest.raises(rf.InvalidParameterError, match="not set"):
        send_annotations(records, url, target="langsmith", api_key_env="RF_TEST_NO_SUCH_VARIABLE")


# ----------------------------------------------------------------------------- the command


@pytest.fixture
def eval_output(tmp_path):
    source = tmp_path / "traces.parquet"
    SCORED.select("trace_id", "root_span_id", "retriever_span_id", "retrieved_ids", "relevance").write_parquet(source)
    out = tmp_path / "out"
    rf.evaluate_parquet(
        source,
        out,
        metrics=["ndcg_at_k"],
        k=3,
        keep=["trace_id", "root_span_id", "retriever_span_id", "retrieved_ids", "relevance"],
        progress=False,
        batches_per_process=None,
    )
    return out


@pytest.mark.slow
def test_cli_annotations_from_an_eval_folder(eval_output, tmp_path, capsys, recording_server):
    target = tmp_path / "annotations.jsonl"
    url = f"http://127.0.0.1:{recording_server.server_port}"
    code = main(["annotations", str(eval_output), "-o", str(target), "--endpoint", url])
    out = capsys.readouterr().out
    assert code == 0, out
    records = [json.loads(line) for line in target.read_text().splitlines()]
    spans = [r for r in records if r["document_position"] is None]
    # trec_eval's ndcg_cut (linear gains): DCG = 1/log2(2) + 0 + 2/log2(4) = 2, ideal = 2 + 1/log2(3)
    assert [(r["span_id"], r["name"], r["score"]) for r in spans] == [
        ("s1", "ndcg_at_3", pytest.approx(2 / (2 + 1 / math.log2(3)))),
        ("s2", "ndcg_at_3", 0.0),
    ]
    assert len(records) == 2 + 4 and "6 phoenix annotation records written" in out and "6 sent" in out
    assert len(recording_server.requests) == 2


def test_cli_annotations_usage_errors(eval_output, tmp_path, capsys):
    assert main(["annotations", str(eval_output), "-o", str(tmp_path / "a.jsonl"), "--metrics", "nope"]) == 2
    assert main(["annotations", str(tmp_path / "missing"), "-o", str(tmp_path / "a.jsonl")]) == 3
    assert main(["annotations", str(eval_output), "-o", str(tmp_path / "a.jsonl"), "--api-key-env", "K"]) == 2
    assert "only used with --endpoint" in capsys.readouterr().err


def test_nan_scores_become_null():
    df = SCORED.with_columns(ndcg_at_3=pl.Series([float("nan"), 0.0]))
    assert rf.to_annotations(df.drop("relevance"), metrics=["ndcg_at_3"])["score"].to_list() == [None, 0.0]
