"""rf.judge_relevance (0-3 LLM grades as qrels), rf.judged_at_k and rf.fill_holes, against the fake judge server."""

from __future__ import annotations

import json

import polars as pl
import pytest
from conftest import shared_path
from judge_server import FakeJudgeServer, expected_grades

import ragframe as rf
from ragframe.metrics.relevance import RELEVANCE_TEMPLATE, read_grades


def _judge(server: FakeJudgeServer) -> rf.OpenAIJudge:
    return rf.OpenAIJudge("m", base_url=server.base_url, api_key="x", max_retries=0)


PAIRS = pl.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2"],
        "doc_id": ["a", "b", "c", "a"],
        "query": ["what is the capital of france"] * 3 + ["how tall is mount everest"],
        "passage": [
            "Paris is the capital and largest city of France.",
            "The capital of France has many museums.",
            "Bananas are rich in potassium.",
            "Mount Everest is 8,849 metres tall.",
        ],
    }
)


def test_grades_come_from_the_replies_and_the_cache_answers_a_rerun(server, tmp_path) -> None:
    cache = tmp_path / "judge.sqlite3"
    out = rf.judge_relevance(PAIRS, judge=_judge(server), cache=cache)
    assert out["relevance_status"].to_list() == ["ok"] * 4
    assert out["relevance_source"].to_list() == ["llm"] * 4
    # each prompt's grade is the fake server's for that prompt (one passage per call)
    prompts = [r.prompt for r in server.log]
    assert len(prompts) == 4
    by_passage = {p.split("[1] ", 1)[1].split("\n")[0]: expected_grades(p)[0] for p in prompts}
    assert out["relevance"].to_list() == [by_passage[p] for p in PAIRS["passage"]]
    assert all(p.count("Grade <passage number>:") == 1 for p in prompts)
    again = rf.judge_relevance(PAIRS, judge=_judge(server), cache=cache)
    assert len(server.log) == 4 and again.equals(out)


def test_several_passages_per_call(server) -> None:
    out = rf.judge_relevance(PAIRS, judge=_judge(server), cache=False, passages_per_call=3)
    assert len(server.log) == 2  # q1's three passages in one call, q2's in another
    first = server.log[0].prompt if "[3] " in server.log[0].prompt else server.log[1].prompt
    assert out.filter(pl.col("query_id") == "q1")["relevance"].to_list() == expected_grades(first)
    assert out["relevance_input_tokens"].drop_nulls().len() == 2


def test_prefilter_max_calls_and_statuses(server) -> None:
    out = rf.judge_relevance(PAIRS, judge=_judge(server), cache=False, prefilter=0.3, max_calls=1)
    # "bananas" shares no term with its query: graded 0 without a call
    assert out.row(2, named=True)["relevance"] == 0 and out.row(2, named=True)["relevance_source"] == "lexical"
    assert out["relevance_status"].to_list() == ["ok", "skipped", "ok", "skipped"]
    assert "max_calls" in out.row(1, named=True)["relevance_error"]
    assert len(server.log) == 1
    server.queue("500")
    failed = rf.judge_relevance(PAIRS.head(1), judge=_judge(server), cache=False)
    assert failed.row(0, named=True)["relevance_status"] == "http_error" and failed["relevance"].item() is None


def test_unreadable_reply_is_asked_again_then_a_parse_error() -> None:
    asked = []

    def judge(prompt: str) -> str:
        asked.append(prompt)
        return "Grade 1: 3" if len(asked) == 2 else "Grade 1: very relevant"

    out = rf.judge_relevance(PAIRS.head(1), judge=judge, cache=False)
    assert out["relevance"].item() == 3 and len(asked) == 2
    bad = rf.judge_relevance(PAIRS.head(1), judge=lambda p: "Grade 1: 7", cache=False, parse_retries=1)
    assert bad["relevance_status"].item() == "parse_error" and "not 0, 1, 2 or 3" in bad["relevance_error"].item()


def test_dry_run_calls_nothing_and_estimates_tokens(server) -> None:
    out = rf.judge_relevance(PAIRS, judge=_judge(server), cache=False, dry_run=True)
    assert len(server.log) == 0
    assert out["relevance_status"].to_list() == ["skipped"] * 4
    assert out["relevance_input_tokens"].min() > 50  # the template alone is ~200 words


def test_read_grades() -> None:
    assert read_grades("**Grade 2:** 1\nGrade 1: 0.", 2) == ([0, 1], None)
    assert read_grades("Grade 1: 2\nGrade 1: 3", 1)[1] == "passage 1: two different grades (2 and 3)"
    assert "passage(s) [2]" in read_grades("Grade 1: 2", 2)[1]
    assert "3 passage" not in RELEVANCE_TEMPLATE and "{query}" in RELEVANCE_TEMPLATE


def test_frame_kinds_and_bad_inputs() -> None:
    judge = lambda p: "Grade 1: 2"  # noqa: E731
    for frame in (PAIRS.to_pandas(), PAIRS.to_arrow(), PAIRS.lazy()):
        out = rf.judge_relevance(frame, judge=judge, cache=False)
        assert rf.schema.frame_kind(out) == rf.schema.frame_kind(frame)
    with pytest.raises(rf.InvalidParameterError, match="prefilter"):
        rf.judge_relevance(PAIRS, judge=judge, prefilter=2)
    with pytest.raises(rf.InvalidParameterError, match="passages"):
        rf.judge_relevance(PAIRS, judge=judge, prompt="grade {query}")
    with pytest.raises(rf.SchemaError, match="null query id"):
        rf.judge_relevance(PAIRS.with_columns(pl.lit(None, dtype=pl.String).alias("query_id")), judge=judge)
    with pytest.raises(rf.SchemaError):
        rf.judge_relevance(PAIRS.drop("passage"), judge=judge)
    with pytest.raises(rf.SchemaError, match=r"rename the input's column.*'relevance'"):
        rf.judge_relevance(PAIRS.with_columns(pl.lit(1).alias("relevance")), judge=judge)


def test_a_pair_grade_does_not_depend_on_the_other_rows() -> None:
    def judge(prompt: str) -> str:
        return f"Grade 1: {len(prompt) % 4}"

    whole = rf.judge_relevance(PAIRS, judge=judge, cache=False)
    for i in range(PAIRS.height):
        alone = rf.judge_relevance(PAIRS.slice(i, 1), judge=judge, cache=False)
        assert alone.row(0) == whole.row(i)
    reordered = rf.judge_relevance(PAIRS.reverse(), judge=judge, cache=False)
    assert reordered.reverse().equals(whole)


def test_labels_become_qrels_that_score_a_run(server) -> None:
    out = rf.judge_relevance(PAIRS, judge=_judge(server), cache=False)
    qrels = rf.judgments_to_qrels(
        out.with_columns(pl.lit("llm").alias("annotator")), item=["query_id", "doc_id"], graded=True
    )
    assert qrels["relevance"].to_list() == out["relevance"].to_list()
    run = pl.DataFrame({"query_id": ["q1", "q1", "q1"], "doc_id": ["c", "b", "a"], "score": [3.0, 2.0, 1.0]})
    scored = rf.evaluate_run(run, qrels, k=3, relevance_level=2)
    assert scored.height == 1 and scored["ndcg_at_3"].item() is not None


def test_judged_at_k_and_fill_holes_by_hand() -> None:
    run = pl.DataFrame(
        {"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "score": [4.0, 3.0, 3.0, 1.0]}
    )  # trec_eval order: a, c, b, d (ties: doc id descending)
    qrels = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "d"], "relevance": [2, 0]})
    assert rf.judged_at_k(run, qrels, k=3).row(0) == (1, 2, pytest.approx(1 / 3))
    texts = pl.DataFrame({"doc_id": ["a", "b", "c", "d"], "passage": ["ta", "tb", "tc", "td"]})
    queries = pl.DataFrame({"query_id": ["q"], "query": ["query text"]})
    plan = rf.fill_holes(
        run, qrels, judge=lambda p: "Grade 1: 3", queries=queries, passages=texts, k=3, dry_run=True, cache=False
    )
    assert plan.filter(pl.col("source") != "human")["doc_id"].to_list() == ["c", "b"]  # by rank
    assert plan.filter(pl.col("source") != "human")["status"].to_list() == ["skipped", "skipped"]
    assert plan["input_tokens"].drop_nulls().len() == 2
    filled = rf.fill_holes(
        run, qrels, judge=lambda p: "Grade 1: 3", queries=queries, passages=texts, k=3, cache=False, max_calls=1
    )
    assert filled.select("doc_id", "relevance", "source").rows() == [
        ("a", 2, "human"),
        ("d", 0, "human"),
        ("c", 3, "llm"),
        ("b", None, "llm"),
    ]
    assert rf.judged_at_k(run, filled.drop_nulls("relevance"), k=3)["judged_at_k"].item() == pytest.approx(2 / 3)
    no_text = rf.fill_holes(
        run, qrels, judge=lambda p: "Grade 1: 3", queries=queries, passages=texts.head(2), k=3, cache=False
    )
    assert no_text.filter(pl.col("doc_id") == "c")["error"].item().startswith("no query or passage text")
    with pytest.raises(rf.SchemaError, match="not a whole number"):
        rf.fill_holes(
            run, qrels.with_columns(pl.lit(1.5).alias("relevance")), judge=str, queries=queries, passages=texts
        )


@pytest.mark.slow
def test_fill_holes_on_dl19_bm25(server, tmp_path) -> None:
    """DL19 BM25 with a third of its top-10 labels removed: the holes are judged, judged@10 goes back to 1."""
    hits = json.loads(shared_path("rankllm_dl_runs", "bm25_top100_with_text.dl19.json").read_text())
    passages = pl.DataFrame(
        [{"doc_id": h["docid"], "passage": h["content"]} for q in hits for h in q["hits"][:10]]
    ).unique("doc_id")
    queries = pl.DataFrame([{"query_id": str(q["hits"][0]["qid"]), "query": q["query"]} for q in hits])
    run = rf.read_trec_run(shared_path("rankllm_dl_runs", "run.dl19.BM25.txt"))
    qrels = rf.read_qrels(shared_path("anserini_qrels", "qrels.dl19-passage.txt"))
    before_full = rf.judged_at_k(run, qrels, k=10).row(0, named=True)
    assert before_full["queries"] == 43
    holed = qrels.filter(pl.col("doc_id").str.tail(1).is_in(["1", "4", "7"]).not_())
    before = rf.judged_at_k(run, holed, k=10).row(0, named=True)
    plan = rf.fill_holes(
        run, holed, judge=_judge(server), queries=queries, passages=passages, k=10, dry_run=True, cache=False
    )
    planned = plan.filter(pl.col("source") == "llm")
    assert planned.height == before["holes"] and len(server.log) == 0
    filled = rf.fill_holes(
        run, holed, judge=_judge(server), queries=queries, passages=passages, k=10, cache=tmp_path / "c.sqlite3"
    )
    assert len(server.log) == before["holes"]
    after = rf.judged_at_k(run, filled.drop_nulls("relevance"), k=10).row(0, named=True)
    assert after["holes"] == 0 and after["judged_at_k"] == 1.0 > before["judged_at_k"]
    assert filled.filter(pl.col("source") == "human").height == holed.height
    scored = rf.evaluate_run(run, filled.drop_nulls("relevance").select("query_id", "doc_id", "relevance"), k=10)
    assert scored.height == 43
