"""rf.check_claims: a judge writes RAGChecker's claims and verdicts; the 11 metrics then score them."""

from __future__ import annotations

import re

import polars as pl
import pytest
from claims_oracles import ragchecker_row
from judge_server import FakeJudgeServer

import ragframe as rf
from ragframe.metrics.claim_checking import read_claims, read_verdicts
from ragframe.metrics.ragchecker import RAGCHECKER_METRICS

FRAME = pl.DataFrame(
    {
        "answer": ["Paris is the capital. It has 3 million people.", "No idea.", None],
        "ground_truth": ["Paris is the capital of France. It lies on the Seine.", "Water boils at 100 C.", "x"],
        "contexts": [["Paris is the capital of France.", "The Seine flows through Paris."], [], ["y"]],
    }
)
TRUTH = {  # what a careful judge says about each claim and text
    ("Paris is the capital", "capital of France"): "Entailment",
    ("Paris lies on the Seine", "Seine"): "Entailment",
}


def _claims_of(text: str) -> list[str]:
    return {
        "Paris is the capital. It has 3 million people.": ["Paris is the capital", "Paris has 3 million people"],
        "Paris is the capital of France. It lies on the Seine.": ["Paris is the capital", "Paris lies on the Seine"],
        "No idea.": [],
        "Water boils at 100 C.": ["Water boils at 100 C"],
    }[text]


def judge(prompt: str) -> str:
    text = prompt.split("Text:\n", 1)[1].split("\n\n", 1)[0]
    if "Claim: <the claim>" in prompt:
        claims = _claims_of(text)
        return "\n".join(f"Claim: {c}" for c in claims) if claims else "Claim: none"
    listed = re.findall(r"(?m)^\d+\. (.*)$", prompt.split("Claims:", 1)[1].split("Instructions:", 1)[0])
    lines = []
    for i, claim in enumerate(listed, start=1):
        entailed = claim.lower().rstrip(".") in text.lower() or any(
            claim == c and key in text for (c, key), v in TRUTH.items()
        )
        lines.append(f"Claim {i}: {'Entailment' if entailed else 'Neutral'}")
    return "\n".join(lines)


def test_the_verdicts_then_the_eleven_metrics_equal_ragcheckers_computation():
    calls = []

    def counting(prompt):
        calls.append(prompt)
        return judge(prompt)

    out = rf.check_claims(FRAME, counting, cache=False)
    # row 0: 2 extractions, 2 cross checks, 2 passages; row 1: 2 extractions, 1 cross check, no passage; row 2: none
    assert len(calls) == 6 + 3
    assert out["claims_status"].to_list() == ["ok", "ok", "skipped"]
    row = out.row(0, named=True)
    assert row["response_claims"] == ["Paris is the capital", "Paris has 3 million people"]
    assert row["answer2response"] == ["Entailment", "Neutral"]  # the reference says nothing of 3 million
    assert row["response2answer"] == ["Entailment", "Neutral"]  # the answer misses the Seine
    assert row["retrieved2response"] == [["Entailment", "Neutral"], ["Neutral", "Neutral"]]
    assert row["retrieved2answer"] == [["Entailment", "Neutral"], ["Neutral", "Entailment"]]
    assert out.row(1, named=True)["retrieved2answer"] == [[]]  # a reference claim, no passage
    scored = rf.evaluate(out.head(2), ["ragchecker"])
    for i in range(2):
        verdicts = {c: out[c][i] for c in ("answer2response", "response2answer", "retrieved2response",
                                            "retrieved2answer")}  # fmt: skip
        expected = ragchecker_row(**{c: v.to_list() if hasattr(v, "to_list") else v for c, v in verdicts.items()})
        assert {n: scored[f"ragchecker_{n}"][i] for n in expected} == expected
    assert scored["ragchecker_precision"][0] == 0.5 and scored["ragchecker_claim_recall"][0] == 1.0


def test_failures_name_the_call_and_null_the_verdicts():
    def bad_passage(prompt):
        return "Claim 1: maybe" if "Text:\nThe Seine flows" in prompt else judge(prompt)

    out = rf.check_claims(FRAME.head(1), bad_passage, cache=False, parse_retries=0)
    assert out.select("claims_status", "answer2response").row(0) == ("parse_error", None)
    assert out["claims_error"][0].startswith("passage 2: claim 1: unknown verdict 'maybe'")
    assert out["response_claims"][0].to_list() == ["Paris is the capital", "Paris has 3 million people"]
    dry = rf.check_claims(FRAME, judge, cache=False, dry_run=True)
    assert dry["claims_status"].to_list() == ["skipped"] * 3


def test_the_fake_server_and_the_cache(tmp_path):
    pytest.importorskip("httpx")
    with FakeJudgeServer() as server:
        client = rf.OpenAIJudge("fake", base_url=server.base_url, api_key="sk-x", max_retries=0)
        out = rf.check_claims(FRAME.head(1), client, cache=tmp_path / "c.sqlite3")
        assert out["claims_status"].to_list() == ["ok"]
        sent = len(server.log)
        assert sent == 2 + 2 + 2  # the fake server lists 10 claims per text: both sides, both checks, 2 passages
        again = rf.check_claims(FRAME.head(1), client, cache=tmp_path / "c.sqlite3")
        assert len(server.log) == sent and again.equals(out)
        scored = rf.evaluate(out, list(RAGCHECKER_METRICS))
        assert scored.select(RAGCHECKER_METRICS).null_count().sum_horizontal().item() == 0


def test_the_readers_are_strict():
    assert read_claims("Claim: a\nClaim: b") == (["a", "b"], None)
    assert read_verdicts("Claim 1: Entailment\nClaim 1: Neutral", 1)[1].startswith("claim 1 answered twice")
    assert read_verdicts("Claim 2: Entailment", 1)[1].startswith("a line for claim 2")
    with pytest.raises(rf.InvalidParameterError, match="check_claims: parse_retries"):
        rf.check_claims(FRAME, judge, parse_retries=-1)
