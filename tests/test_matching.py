"""Content matching (REMem's chunk-to-document rule, spec/retrieval.md) and TREC file round trips."""

from __future__ import annotations

import json

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe as rf
from ragframe.kernels.matching import json_escape, normalize_chunks

TEXTS = pl.List(pl.String)


def contains_frame(chunks, gold):
    return pl.DataFrame(
        {"contexts": chunks, "gold_documents": gold}, schema={"contexts": TEXTS, "gold_documents": TEXTS}
    )


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=20))
def test_json_escape_equals_json_dumps(texts):
    assert json_escape(pl.Series(texts, dtype=pl.String)).to_list() == [json.dumps(t) for t in texts]


def test_normalisation_rules():
    chunks = pl.Series(
        ["Date: 2024-01-01\nuser: what time is it", "assistant: noon", "Date: 2024-01-01", "plain", "user:no space"]
    )
    assert normalize_chunks(chunks).to_list() == ["what time is it", "noon", "", "plain", "user:no space"]


def test_contains_matching_counts_each_gold_document_once():
    gold = ["The cat sat on the mat. It was happy.", "Dogs bark at night."]
    chunks = ["The cat sat", "It was happy.", "nothing here", "user: Dogs bark"]
    out = rf.score_retrieval(contains_frame([chunks], [gold]), match="contains", k=[1, 2, 4]).row(0, named=True)
    assert out["precision_at_1"] == 1.0
    assert out["precision_at_2"] == 0.5  # the second chunk of document 1 is a repeat
    assert out["recall_at_2"] == 0.5
    assert out["recall_at_4"] == 1.0
    assert out["recall_all_at_4"] == 1.0 and out["recall_all_at_2"] == 0.0
    assert out["mrr"] == 1.0
    assert out["average_precision"] == pytest.approx((1 / 1 + 2 / 4) / 2)


def test_empty_and_date_only_chunks_match_nothing():
    # the seed lets a date-only chunk (empty after normalisation) match every document
    out = rf.score_retrieval(contains_frame([["Date: 2024-05-01", ""]], [["any document"]]), match="contains", k=2)
    assert out["hit_rate_at_2"].to_list() == [0.0]


def test_json_escaped_chunk_matches_json_stored_document():
    chunk = 'She said "hi"\nand left café'
    document = json.dumps({"text": chunk})  # the document stores the chunk JSON-escaped
    assert chunk not in document
    out = rf.score_retrieval(contains_frame([[chunk]], [[document]]), match="contains", k=1, metrics=["recall_at_k"])
    assert out["recall_at_1"].to_list() == [1.0]


def test_identical_gold_texts_are_one_document_and_nulls_stay_null():
    df = contains_frame([["abc"], None, ["x"]], [["abc", "abc"], ["abc"], None])
    out = rf.score_retrieval(df, match="contains", k=1, metrics=["recall_at_k"])
    assert out["recall_at_1"].to_list() == [1.0, None, None]


def test_contains_column_overrides_and_type_errors():
    df = pl.DataFrame({"chunks": [["abc"]], "docs": [["xxabcxx"]]})
    out = rf.score_retrieval(df, match="contains", retrieved_ids="chunks", relevant_ids="docs", k=1)
    assert out["precision_at_1"].to_list() == [1.0]
    with pytest.raises(rf.SchemaError, match="list\\[str\\]"):
        rf.score_retrieval(pl.DataFrame({"contexts": [[1]], "gold_documents": [["a"]]}), match="contains")


def test_trec_round_trip(tmp_path):
    run = pl.DataFrame(
        {"query_id": ["2", "1", "1", "1"], "doc_id": ["a", "b", "c", "d"], "score": [0.5, 1.25, 3.0, 1.25]}
    )
    rf.write_trec_run(run, tmp_path / "run.txt", tag="t1")
    back = rf.read_trec_run(tmp_path / "run.txt")
    assert back.select("query_id", "doc_id", "rank", "score").rows() == [
        ("1", "c", 1, 3.0),
        ("1", "d", 2, 1.25),  # tie on 1.25: doc id descending first
        ("1", "b", 3, 1.25),
        ("2", "a", 1, 0.5),
    ]
    assert set(back["tag"]) == {"t1"}
    qrels = pl.DataFrame({"query_id": ["1", "1"], "doc_id": ["c", "x#1"], "relevance": [2, -1]})
    rf.write_qrels(qrels, tmp_path / "qrels.txt")
    assert rf.read_qrels(tmp_path / "qrels.txt").select("query_id", "doc_id", "relevance").rows() == qrels.rows()


def test_qrels_comments_and_gzip(tmp_path):
    import gzip

    path = tmp_path / "qrels.gz"
    path.write_bytes(gzip.compress(b"# header\n\n1 0 doc#1 1\n  # indented comment\n1 0 d2 0\n"))
    assert rf.read_qrels(path).select("doc_id", "relevance").rows() == [("doc#1", 1), ("d2", 0)]


def test_retrieval_metrics_single_sample_dict():
    metrics = rf.retrieval_metrics(["a", "b", "c"], {"b": 2, "c": 1, "z": 3}, k=3)
    assert isinstance(metrics, dict) and all(isinstance(v, float) for v in metrics.values())
    assert metrics["precision_at_3"] == pytest.approx(2 / 3)
    assert metrics["recall_at_3"] == pytest.approx(2 / 3)
    assert metrics["mrr"] == 0.5
    import math

    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    idcg = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert metrics["ndcg_at_3"] == pytest.approx(dcg / idcg)
    scored = rf.retrieval_metrics(["a", "b"], ["a"], k=1, scores=[0.1, 0.9])
    assert scored["mrr"] == 0.5
