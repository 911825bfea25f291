"""judge_nugget_assignment: one call per row labels every nugget; strict lines, re-asks, cache, statuses, budget."""

from __future__ import annotations

import polars as pl
import pytest
from claims_oracles import nuggetizer_metrics
from judge_server import FakeJudgeServer, nugget_labels

import ragframe as rf
from ragframe.metrics.nugget_judge import read_nugget_assignments
from ragframe.metrics.nuggets import NUGGET_DTYPE, NUGGET_METRICS

NAME = "judge_nugget_assignment"


def _nuggets(*pairs):
    return [{"text": text, "importance": importance, "assignment": None} for text, importance in pairs]


FRAME = pl.DataFrame(
    {
        "id": [0, 1, 2, 3, 4],
        "question": ["Capital of France?", "Boiling point?", "Tallest peak?", None, "Anything?"],
        "answer": ["Paris, on the Seine.", "100 C.", "K2.", "x", "y"],
        "nuggets": pl.Series(
            [
                _nuggets(("Paris is the capital", "vital"), ("on the Seine", "okay"), ("2.1 million people", "okay")),
                _nuggets(("100 C at sea level", "vital")),
                _nuggets(("Everest", "vital"), ("8,849 m", "okay")),
                _nuggets(("n", "okay")),
                [],
            ],
            dtype=NUGGET_DTYPE,
        ),
    }
)


@pytest.mark.parametrize(
    ("reply", "n", "expected"),
    [
        ("Nugget 1: support\nNugget 2: not_support", 2, ([0, 2], None)),
        ("Here you go.\n**Nugget 2:** Partial-Support\nNugget 1: SUPPORT.", 2, ([0, 1], None)),
        ("Nugget 1: support", 2, (None, "no line for nugget 2")),
        ("Nugget 1: support\nNugget 1: not_support", 1, (None, "nugget 1 answered twice")),
        ("Nugget 1: yes", 1, (None, "nugget 1: unknown label 'yes'")),
        ("Nugget 3: support\nNugget 1: support", 1, (None, "a line for nugget 3, which is not listed")),
        ("Score: 1", 1, (None, "no line for nugget 1")),
    ],
)
def test_the_reading_is_strict(reply, n, expected):
    codes, error = read_nugget_assignments(reply, n)
    assert codes == expected[0]
    assert (error is None) == (expected[1] is None) and (error or "").startswith(expected[1] or "")


def _labels_judge(labels):
    calls = []

    def judge(prompt):
        calls.append(prompt)
        n = len(nugget_labels(prompt))  # the nuggets the prompt lists
        return "\n".join(f"Nugget {i}: {labels[(i - 1) % len(labels)]}" for i in range(1, n + 1))

    judge.calls = calls
    return judge


def test_a_callable_judge_scores_nugget_all_and_fills_the_assignments():
    judge = _labels_judge(["support", "partial_support", "not_support"])
    out = rf.evaluate(FRAME, [NAME], judge=judge, cache=False)
    assert len(judge.calls) == 3  # one call per row with nuggets; the null question and the empty list call nothing
    assert out[f"{NAME}_status"].to_list() == ["ok", "ok", "ok", "skipped", "ok"]
    # row 0: support, partial, not -> (1 + 0.5) / 3; row 1: support; row 2: support, partial -> 1.5 / 2; empty -> 0
    assert out[NAME].to_list() == [0.5, 1.0, 0.75, None, 0.0]
    assert out[f"{NAME}_error"][3] == "null question: not judged"
    filled = out[f"{NAME}_nuggets"]
    assert [n["assignment"] for n in filled[0]] == ["support", "partial_support", "not_support"]
    assert filled[3] is None and filled.to_list()[4] == []
    # the four scores follow without a judge, equal to nuggetizer's on the filled lists
    scored = rf.evaluate(out.filter(pl.col("id") != 3), list(NUGGET_METRICS), nuggets=f"{NAME}_nuggets")
    oracle = nuggetizer_metrics().calculate_nugget_scores
    for row in scored.iter_rows(named=True):
        expected = oracle(str(row["id"]), row[f"{NAME}_nuggets"])
        assert row["nugget_all"] == expected.all_score == row[NAME]
        assert row["nugget_strict_vital"] == expected.strict_vital_score


def test_an_unreadable_reply_is_asked_again_then_a_parse_error():
    replies = iter(["Nugget 1: maybe", "Nugget 1: support"])
    out = rf.evaluate(FRAME.slice(1, 1), [NAME], judge=lambda prompt: next(replies), cache=False)
    assert out.select(NAME, f"{NAME}_status").row(0) == (1.0, "ok")
    out = rf.evaluate(FRAME.slice(1, 1), [NAME], judge=lambda prompt: "Nugget 1: maybe", cache=False, parse_retries=1)
    assert out.select(NAME, f"{NAME}_status").row(0) == (None, "parse_error")
    assert "unknown label 'maybe'" in out[f"{NAME}_error"][0]


def test_the_fake_server_statuses_cache_samples_and_budget(tmp_path):
    pytest.importorskip("httpx")
    with FakeJudgeServer() as server:
        judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key="sk-x", max_retries=0)
        cache = tmp_path / "cache.sqlite3"
        out = rf.evaluate(FRAME, [NAME], judge=judge, cache=cache)
        prompts = [r.prompt for r in server.log]
        assert len(prompts) == 3
        expected = {}
        for prompt in prompts:
            labels = nugget_labels(prompt)
            expected[len(labels)] = (labels.count("support") + 0.5 * labels.count("partial_support")) / len(labels)
        assert out[NAME].to_list()[:3] == [expected[3], expected[1], expected[2]]
        assert out[f"{NAME}_status"].to_list() == ["ok", "ok", "ok", "skipped", "ok"]
        again = rf.evaluate(FRAME, [NAME], judge=judge, cache=cache)  # every reply from the cache
        assert len(server.log) == 3 and again[NAME].to_list() == out[NAME].to_list()
        server.rules["Boiling"] = "500"
        failed = rf.evaluate(FRAME, [NAME], judge=judge, cache=False)
        assert failed[f"{NAME}_status"].to_list()[:2] == ["ok", "http_error"]
        del server.rules["Boiling"]
        sampled = rf.evaluate(FRAME, [NAME], judge=judge, cache=False, n_samples=2)
        assert f"{NAME}_std" in sampled.columns
        before = len(server.log)
        budgeted = rf.evaluate(FRAME, [NAME], judge=judge, cache=False, budget=2)
        assert len(server.log) - before == 2
        assert sorted(budgeted[f"{NAME}_status"].to_list()) == ["ok", "ok", "ok", "skipped", "skipped"]


def test_dry_run_and_no_judge():
    out = rf.evaluate(FRAME, [NAME], judge=lambda p: "x", cache=False, dry_run=True)
    assert out[f"{NAME}_status"].to_list() == ["skipped", "skipped", "skipped", "skipped", "ok"]
    with pytest.raises(rf.InvalidParameterError, match="pass judge="):
        rf.evaluate(FRAME, [NAME], cache=False)


def test_wrong_nuggets_are_typed_errors_naming_the_row():
    bad = FRAME.with_columns(
        pl.Series("nuggets", [[], [{"text": None, "importance": "vital", "assignment": None}], [], [], []],
                  dtype=NUGGET_DTYPE)
    )  # fmt: skip
    with pytest.raises(rf.SchemaError, match=r"nugget without text \[column 'nuggets', row 1\]"):
        rf.evaluate(bad, [NAME], judge=lambda p: "", cache=False)


# ----------------------------------------------------------------------------- nugget creation


PASSAGES = pl.DataFrame(
    {
        "question": ["Capital of France?", "Boiling point?", None],
        "contexts": [["Paris is the capital of France.", "It lies on the Seine."], ["Water boils at 100 C."], ["x"]],
    }
)


def test_create_nuggets_with_a_callable_judge_then_assign_and_score():
    calls = []

    def judge(prompt):
        calls.append(prompt)
        if "Nugget: <the fact>" in prompt:
            return "Nugget: Paris is the capital" if "France" in prompt else "Nugget: none"
        return "Nugget 1: vital"

    out = rf.create_nuggets(PASSAGES, judge, cache=False)
    assert len(calls) == 3  # two creations (the null question calls nothing), one importance call
    assert out["nuggets_status"].to_list() == ["ok", "ok", "skipped"]
    assert out["nuggets"].to_list()[:2] == [[{"text": "Paris is the capital", "importance": "vital",
                                              "assignment": None}], []]  # fmt: skip
    assert out["nuggets_error"][2] == "null question: no nuggets created"
    answered = out.head(2).with_columns(answer=pl.lit("Paris."))
    scored = rf.evaluate(answered, ["judge_nugget_assignment"], judge=lambda p: "Nugget 1: support", cache=False)
    assert scored["judge_nugget_assignment"].to_list() == [1.0, 0.0]


def test_create_nuggets_re_asks_and_reports_the_failing_step():
    replies = {"creation": iter(["no facts here", "Nugget: a\nNugget: b"]), "importance": iter(["Nugget 1: vital"] * 9)}

    def judge(prompt):
        return next(replies["creation" if "Nugget: <the fact>" in prompt else "importance"])

    out = rf.create_nuggets(PASSAGES.head(1), judge, cache=False, parse_retries=1)
    status, error = out.select("nuggets_status", "nuggets_error").row(0)  # creation re-asked once and read
    assert status == "parse_error" and error.startswith("importance: no line for nugget 2")
    assert error.endswith("[2 replies read, none readable]")
    too_many = rf.create_nuggets(PASSAGES.head(1), lambda p: "Nugget: a\nNugget: b", max_nuggets=1, cache=False)
    assert too_many["nuggets_status"][0] == "parse_error" and "more than the 1" in too_many["nuggets_error"][0]


def test_create_nuggets_on_the_fake_server_with_cache_and_frame_kinds(tmp_path):
    pytest.importorskip("httpx")
    with FakeJudgeServer() as server:
        judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key="sk-x", max_retries=0)
        cache = tmp_path / "c.sqlite3"
        out = rf.create_nuggets(PASSAGES, judge, cache=cache)
        assert out["nuggets_status"].to_list() == ["ok", "ok", "skipped"] and len(server.log) == 4
        for nuggets in out["nuggets"].to_list()[:2]:
            assert 1 <= len(nuggets) <= 4 and {n["importance"] for n in nuggets} <= {"vital", "okay"}
        again = rf.create_nuggets(PASSAGES.to_arrow(), judge, cache=cache)  # cached; an Arrow table stays one
        assert len(server.log) == 4 and type(again).__name__ == "Table"
        assert again.column("nuggets").to_pylist() == out["nuggets"].to_list()
        server.rules["Boiling"] = "500"
        failed = rf.create_nuggets(PASSAGES, judge, cache=False)
        assert failed["nuggets_status"].to_list() == ["ok", "http_error", "skipped"]


def test_create_nuggets_checks_its_parameters():
    with pytest.raises(rf.InvalidParameterError, match="create_nuggets: max_nuggets"):
        rf.create_nuggets(PASSAGES, lambda p: "", max_nuggets=0)
    with pytest.raises(rf.SchemaError, match="create_nuggets"):
        rf.create_nuggets(PASSAGES.drop("contexts"), lambda p: "")
    dry = rf.create_nuggets(PASSAGES, lambda p: "", cache=False, dry_run=True)
    assert dry["nuggets_status"].to_list() == ["skipped"] * 3
