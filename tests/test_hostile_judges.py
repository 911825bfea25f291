"""Hostile judges (issue 20 parts 3, 4 and the LazyFrame item of 6; the judge items of issue 19).

Each case the issues list has its own test here: half-answered and parroted replies are
``parse_error`` rows naming what is missing, unreadable replies are asked again (each attempt
cached under its own key, reruns re-ask unless ``retry_parse_errors=False``), damaged cache
rows are misses, an unusable cache folder is a clear error, a raising judge is a
``judge_error``, and a LazyFrame judges each row once however often it is collected.
Expected values are hand arithmetic; cache keys are recomputed with ``cache_key``.
"""

from __future__ import annotations

import re
import sqlite3
import threading

import polars as pl
import pytest

import ragframe as rf
from ragframe.exceptions import InputFileError
from ragframe.judges import FAILED_STATUSES, STATUSES, CallableJudge, JudgeCache, cache_key, judge_prompts
from ragframe.judges.runner import REASK_REMINDER
from ragframe.judges.templates import load_template
from ragframe.metrics.judge import JUDGE_METRICS
from ragframe.metrics.registry import get_metric

HALF = "Claim: a\nClaim: b\nVerdict: yes (supported)"
WHOLE = "Claim: a\nVerdict: yes\nClaim: b\nVerdict: no\nReason: b is not in the passages."
ONE_ROW = pl.DataFrame({"answer": ["a. b."], "contexts": [["x"]]})


class Recorder:
    """A named callable judge (a stable cache identity) that records prompts and answers ``reply(prompt)``."""

    def __init__(self, reply):
        self.reply = reply
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
        return self.reply(prompt) if callable(self.reply) else self.reply


def named(recorder: Recorder, name: str = "hostile-judge") -> CallableJudge:
    return CallableJudge(recorder, name=name)


def faithfulness_prompt(answer: str = "a. b.", contexts: tuple[str, ...] = ("x",)) -> str:
    passages = "\n\n".join(f"[{i}] {c}" for i, c in enumerate(contexts, start=1))
    return load_template("faithfulness").replace("{contexts}", passages).replace("{answer}", answer)


def reminder(error: str) -> str:
    return REASK_REMINDER.format(error=error)


def stored_keys(path) -> set[str]:
    connection = sqlite3.connect(path)
    try:
        return {key for (key,) in connection.execute("SELECT key FROM replies")}
    finally:
        connection.close()


# ----------------------------------------------------------------------------- issue 20.3: strict reading


def test_the_issues_half_answered_reply_is_a_parse_error_naming_the_missing_claim():
    judge = Recorder(HALF)
    out = rf.judge_faithfulness(ONE_ROW, judge=judge, cache=False)
    row = out.select("judge_faithfulness", "judge_faithfulness_status", "judge_faithfulness_error").row(0)
    assert row == (None, "parse_error", "claim 1 'a' has no 'Verdict:' line [3 replies read, none readable]")
    assert len(judge.prompts) == 3  # asked, then re-asked twice (parse_retries=2)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        pytest.param(
            "Claim: Paris is big.\nVerdict: yes (supported) or Verdict: no (not supported)\nScore: 1/1",
            "a line with more than one verdict: 'Verdict: yes (supported) or Verdict: no (not supported)'",
            id="verdict-instruction-line",
        ),
        pytest.param(
            "Claim: <the claim>\nVerdict: yes\nScore: 1/1",
            "a claim that is the prompt's placeholder: 'Claim: <the claim>'",
            id="claim-placeholder",
        ),
        pytest.param(
            "Verdict: yes\nVerdict: yes\nScore: 2/2", "a verdict before any claim: 'Verdict: yes'", id="no-claims"
        ),
        pytest.param(
            "Claim: a\nVerdict: yes\nVerdict: yes\nClaim: b\nVerdict: no",
            "claim 1 'a' has more than one 'Verdict:' line",
            id="duplicated-verdict",
        ),
    ],
)
def test_parroted_and_miscounted_faithfulness_replies_are_parse_errors(reply, error):
    out = rf.judge_faithfulness(ONE_ROW, judge=lambda prompt: reply, cache=False, parse_retries=0)
    assert out.select("judge_faithfulness", "judge_faithfulness_status", "judge_faithfulness_error").row(0) == (
        None,
        "parse_error",
        error,
    )


def _format_lines(template: str) -> str:
    """What a small model does: parrots the template's own format lines (from 'Instructions:' on)."""
    return template.split("Instructions:", 1)[1] if "Instructions:" in template else template


@pytest.mark.parametrize("metric", JUDGE_METRICS)
@pytest.mark.parametrize("part", ["format-lines", "whole-prompt"])
def test_a_parroted_template_is_never_a_score(metric, part):
    template = get_metric(metric).kernel.template
    reply = _format_lines(template) if part == "format-lines" else template
    df = pl.DataFrame({"question": ["q"], "answer": ["a"], "contexts": [["c1", "c2"]], "ground_truth": ["g"]})
    out = rf.evaluate(df, [metric], judge=lambda prompt: reply, cache=False, parse_retries=0)
    assert out.select(metric, f"{metric}_status").row(0) == (None, "parse_error"), out[f"{metric}_error"][0]


def test_a_parroted_judge_metric_template_is_never_a_score():
    rf.judge_metric("hostile_polite", "Is this polite? {answer}\nScore: <0 to 1>\nReason: <one sentence>", ["answer"])
    try:
        template = get_metric("hostile_polite").kernel.template
        out = rf.evaluate(ONE_ROW, ["hostile_polite"], judge=lambda p: template, cache=False, parse_retries=0)
    finally:
        rf.unregister_metric("hostile_polite")
    assert out.select("hostile_polite", "hostile_polite_status").row(0) == (None, "parse_error")
    assert (
        out["hostile_polite_error"][0]
        == "no readable score: 'Score:' followed by '<0 to 1>' (expected a number or x/y, y != 0)"
    )


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        pytest.param(
            "Score: 0.2\nScore: 0.9",
            "2 'Score:' lines give different scores (0.2, 0.9); one score expected",
            id="two-scores",
        ),
        pytest.param(
            "Score: <a number between 0 and 1>\nScore: 0.9",
            "2 'Score:' lines and '<a number between 0 and 1>' is not a score "
            "(one score expected: a number or x/y, y != 0)",
            id="parroted-score-line",
        ),
    ],
)
def test_answer_relevance_needs_one_score(reply, error):
    df = pl.DataFrame({"question": ["q"], "answer": ["a"]})
    out = rf.judge_answer_relevance(df, judge=lambda p: reply, cache=False, parse_retries=0)
    assert out.select("judge_answer_relevance_status", "judge_answer_relevance_error").row(0) == ("parse_error", error)
    agreeing = rf.judge_answer_relevance(df, judge=lambda p: "Score: 8/10\nScore: 0.8", cache=False)
    assert agreeing["judge_answer_relevance"].to_list() == [0.8]  # the same score twice is one score


def test_reordered_numbering_is_matched_by_number():
    reply = "Claim 2: b\nVerdict 2: no\nClaim 1: a\nVerdict 1: yes\nClaim 3: c\nVerdict 3: yes"
    out = rf.judge_faithfulness(ONE_ROW, judge=lambda p: reply, cache=False)
    assert out["judge_faithfulness"][0] == pytest.approx(2 / 3)
    # context precision: passage 1 useful, passage 2 not, written out of order; AP = (1/1) / 1
    df = pl.DataFrame({"question": ["q"], "contexts": [["p1", "p2"]]})
    precision = rf.judge_context_precision(df, judge=lambda p: "Verdict 2: no\nVerdict 1: yes", cache=False)
    assert precision["judge_context_precision"].to_list() == [1.0]


def test_the_readme_reply_still_scores_one_half():
    df = pl.DataFrame({"answer": ["Paris is big. It has 9 moons."], "contexts": [["Paris is a big city."]]})
    out = rf.judge_faithfulness(df, judge=lambda prompt: WHOLE, cache=False)
    assert out.select("judge_faithfulness", "judge_faithfulness_status").row(0) == (0.5, "ok")


# ----------------------------------------------------------------------------- issue 20.4: re-asking


def test_an_unreadable_reply_is_asked_again_with_a_reminder_each_attempt_cached_under_its_own_key(tmp_path):
    judge = Recorder(lambda prompt: WHOLE if "could not be read" in prompt else HALF)
    path = tmp_path / "judge.sqlite3"
    out = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path)
    assert out.select("judge_faithfulness", "judge_faithfulness_status").row(0) == (0.5, "ok")
    prompt = faithfulness_prompt()
    reasked = prompt + reminder("claim 1 'a' has no 'Verdict:' line")
    assert judge.prompts == [prompt, reasked]
    assert reasked.endswith(
        "\n\nYour previous reply to this prompt could not be read: claim 1 'a' has no 'Verdict:' line. "
        "Reply again, in exactly the format asked above."
    )
    identity = named(judge).identity()
    first, second = cache_key(identity, prompt, 0), cache_key(identity, reasked, 0, attempt=1)
    assert first != cache_key(identity, reasked, 0) and stored_keys(path) == {first, second}
    cache = JudgeCache(path)
    assert (cache.get(first).text, cache.get(second).text) == (HALF, WHOLE)
    cache.close()
    again = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path)  # the chain, read from the cache
    assert len(judge.prompts) == 2 and again["judge_faithfulness"].to_list() == [0.5]


def test_parse_retries_bounds_the_calls_of_a_run():
    for retries, calls in ((0, 1), (1, 2), (4, 5)):
        judge = Recorder(HALF)
        out = rf.judge_faithfulness(ONE_ROW, judge=judge, cache=False, parse_retries=retries)
        assert len(judge.prompts) == calls and out["judge_faithfulness_status"][0] == "parse_error"
    with pytest.raises(rf.InvalidParameterError, match="parse_retries must be an int >= 0, found -1"):
        rf.judge_faithfulness(ONE_ROW, judge=judge, cache=False, parse_retries=-1)


def test_a_rerun_re_asks_rows_whose_cached_reply_was_unreadable(tmp_path):
    replies = {"text": HALF}
    judge = Recorder(lambda prompt: replies["text"])
    path = tmp_path / "judge.sqlite3"
    first = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path, parse_retries=0)
    assert first["judge_faithfulness_status"][0] == "parse_error" and len(judge.prompts) == 1
    second = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path, parse_retries=0)
    assert second["judge_faithfulness_status"][0] == "parse_error" and len(judge.prompts) == 2  # asked again
    assert second["judge_faithfulness_error"][0] == "claim 1 'a' has no 'Verdict:' line [2 replies read, none readable]"
    replies["text"] = WHOLE  # the judge now answers in the format
    third = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path, parse_retries=0)
    assert third.select("judge_faithfulness", "judge_faithfulness_status").row(0) == (0.5, "ok")
    assert len(judge.prompts) == 3 and len(stored_keys(path)) == 3  # attempts 0, 1, 2: three keys
    fourth = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path, parse_retries=0)
    assert fourth["judge_faithfulness"].to_list() == [0.5] and len(judge.prompts) == 3  # all from the cache


def test_retry_parse_errors_false_keeps_the_cached_parse_error(tmp_path):
    judge = Recorder(HALF)
    path = tmp_path / "judge.sqlite3"
    first = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path)
    assert len(judge.prompts) == 3
    again = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path, retry_parse_errors=False)
    assert len(judge.prompts) == 3  # no call
    columns = ["judge_faithfulness", "judge_faithfulness_status", "judge_faithfulness_error"]
    assert again.select(columns).row(0) == first.select(columns).row(0)
    rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path)  # the default re-asks
    assert len(judge.prompts) == 6


def test_judge_prompts_reports_attempts_and_summed_tokens():
    def check(row, reply):
        return None if reply.startswith("Score") else "no 'Score:' line"

    judge = Recorder(lambda prompt: "Score: 1" if "could not be read" in prompt else "nothing")
    out = judge_prompts(judge, ["p"], metric="m", cache=False, check=check)
    row = out.row(0, named=True)
    assert (row["status"], row["text"], row["attempts"], row["cached"]) == ("ok", "Score: 1", 2, False)
    reasked = "p" + reminder("no 'Score:' line")
    assert row["input_tokens"] == -(-len("p") // 4) + -(-len(reasked) // 4)  # characters / 4, both calls
    assert row["output_tokens"] == -(-len("nothing") // 4) + -(-len("Score: 1") // 4)


# ----------------------------------------------------------------------------- issue 19: the cache


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param("UPDATE replies SET text = X'00ff10' WHERE key = ?", id="text-is-a-blob"),
        pytest.param("UPDATE replies SET text = CAST(X'fffe41' AS TEXT) WHERE key = ?", id="text-not-utf8"),
        pytest.param("UPDATE replies SET input_tokens = 'many' WHERE key = ?", id="tokens-not-int"),
        pytest.param("UPDATE replies SET output_tokens = -3 WHERE key = ?", id="tokens-negative"),
    ],
)
def test_a_damaged_cache_row_is_a_miss_asked_again_and_replaced(tmp_path, damage):
    judge = Recorder(WHOLE)
    path = tmp_path / "judge.sqlite3"
    first = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path)
    key = cache_key(named(judge).identity(), faithfulness_prompt(), 0)
    connection = sqlite3.connect(path)
    connection.execute(damage, (key,))
    connection.commit()
    connection.close()
    again = rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path)
    assert len(judge.prompts) == 2  # the damaged row was asked again
    assert again.equals(first)
    rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path)
    assert len(judge.prompts) == 2  # and replaced: the next run reads it
    cache = JudgeCache(path)
    assert cache.get(key).text == WHOLE
    cache.close()


def test_a_file_that_is_not_a_database_is_an_input_file_error_naming_it(tmp_path):
    path = tmp_path / "judge.sqlite3"
    path.write_bytes(b"not a database " * 200)
    with pytest.raises(InputFileError, match=re.escape(str(path))):
        rf.judge_faithfulness(ONE_ROW, judge=lambda p: WHOLE, cache=path)


def test_an_unwritable_default_cache_folder_is_a_clear_error(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # the default folder would be inside a file
    judge = Recorder(WHOLE)
    with pytest.raises(InputFileError) as error:
        rf.judge_faithfulness(ONE_ROW, judge=judge)  # cache=True: the default file
    message = str(error.value)
    assert f"its folder {str(blocker / 'ragframe')!r} cannot be created" in message
    assert "cache=" in message and "cache=False" in message
    assert judge.prompts == []  # before any call
    with pytest.raises(InputFileError, match=r"cache=.*cache=False"):
        rf.judge_faithfulness(ONE_ROW, judge=judge, cache=blocker / "judge.sqlite3")


def test_the_cache_is_trusted_a_rewritten_reply_changes_the_score(tmp_path):
    judge = Recorder(WHOLE)
    path = tmp_path / "judge.sqlite3"
    assert rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path)["judge_faithfulness"][0] == 0.5
    connection = sqlite3.connect(path)
    connection.execute("UPDATE replies SET text = ?", ("Claim: a\nVerdict: yes",))
    connection.commit()
    connection.close()
    assert rf.judge_faithfulness(ONE_ROW, judge=named(judge), cache=path)["judge_faithfulness"][0] == 1.0
    assert len(judge.prompts) == 1  # documented: the stored reply is read as it is


# ----------------------------------------------------------------------------- issue 19: judge_error


def test_a_raising_judge_is_a_judge_error_with_the_exception_type():
    def judge(prompt):
        raise KeyError("model-config")

    out = rf.judge_faithfulness(ONE_ROW, judge=judge, cache=False)
    assert out.select("judge_faithfulness", "judge_faithfulness_status", "judge_faithfulness_error").row(0) == (
        None,
        "judge_error",
        "KeyError: 'model-config'",
    )
    wrong = rf.judge_faithfulness(ONE_ROW, judge=lambda p: 42, cache=False)  # not text: not read as "42"
    assert wrong.select("judge_faithfulness_status", "judge_faithfulness_error").row(0) == (
        "judge_error",
        "the judge returned a int, not text",
    )


def test_the_status_lists():
    assert STATUSES == ("ok", "parse_error", "timeout", "http_error", "rate_limited", "judge_error", "skipped")
    assert FAILED_STATUSES == ("parse_error", "timeout", "http_error", "rate_limited", "judge_error")
    assert set(FAILED_STATUSES) == set(STATUSES) - {"ok", "skipped"}


# ----------------------------------------------------------------------------- issue 20.6: LazyFrame


def test_a_lazyframe_collected_twice_calls_the_judge_once_per_row():
    judge = Recorder(WHOLE)
    df = pl.DataFrame({"answer": ["a. b.", "c. d.", "e. f."], "contexts": [["x"], ["y"], ["z"]]})
    lazy = rf.judge_faithfulness(df.lazy(), judge=judge, cache=False)
    assert judge.prompts == []  # lazy: nothing is judged before collect
    first = lazy.collect()
    second = lazy.collect()
    assert len(judge.prompts) == 3 and sorted(judge.prompts) == sorted(set(judge.prompts))
    assert first.equals(second) and first["judge_faithfulness"].to_list() == [0.5, 0.5, 0.5]
    hybrid = rf.evaluate(df.lazy(), ["faithfulness"], mode="hybrid", judge=judge, cache=False, hybrid_band=(0.0, 1.0))
    hybrid.collect()
    hybrid.collect()
    assert len(judge.prompts) == 6  # a new plan asks again; its second collect does not


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"parse_retries": -1}, "parse_retries must be an int >= 0, found -1"),
        ({"parse_retries": 1.5}, "parse_retries must be an int >= 0, found 1.5"),
        ({"retry_parse_errors": "no"}, "retry_parse_errors must be True or False"),
        ({"check": 3}, "check must be a callable"),
        ({"memo": []}, "memo must be a dict"),
    ],
)
def test_the_new_runner_options_are_checked_before_any_call(arguments, message):
    judge = Recorder("Score: 1")
    with pytest.raises(rf.InvalidParameterError, match=message):
        judge_prompts(judge, ["p"], metric="m", cache=False, **arguments)
    assert judge.prompts == []


def test_a_re_ask_that_fails_gives_its_status_and_says_what_came_before():
    def judge(prompt):
        if "could not be read" in prompt:
            raise ConnectionResetError("gone")
        return HALF

    out = rf.judge_faithfulness(ONE_ROW, judge=judge, cache=False)
    assert out.select("judge_faithfulness_status", "judge_faithfulness_error").row(0) == (
        "judge_error",
        "ConnectionResetError: gone (when asked again after an unreadable reply: claim 1 'a' has no 'Verdict:' line)",
    )


# ----------------------------------------------------------------------------- a Score: line is not a decomposition

FULL_ROW = pl.DataFrame({"question": ["q?"], "answer": ["a. b."], "contexts": [["x", "y"]], "ground_truth": ["a. b."]})
SCORE_ONLY = "Reason: looks fine.\nScore: 0.8"
NOT_DECOMPOSED = {
    "judge_faithfulness": "no 'Claim:' or 'Verdict:' line: the template asks one 'Verdict:' per claim"
    " (a reply without them must say 'Score: 0')",
    "judge_context_recall": "no 'Claim:' or 'Verdict:' line: the template asks one 'Verdict:' per claim",
    "judge_answer_correctness": "no 'Answer claim:' or 'Reference claim:' line: the template asks one 'Verdict:'"
    " per answer claim and one 'Covered:' per reference claim",
    "judge_context_relevance": "no 'Verdict <passage number>:' line: the template asks one per passage"
    " (the row has 2 passages)",
    "judge_context_precision": "no 'Verdict <passage number>:' line: the template asks one per passage"
    " (the row has 2 passages)",
}


@pytest.mark.parametrize("metric", sorted(NOT_DECOMPOSED))
def test_a_score_only_reply_to_a_built_in_decomposed_template_is_a_parse_error(metric):
    judge = Recorder(SCORE_ONLY)
    out = rf.evaluate(FULL_ROW, [metric], judge=judge, cache=False, parse_retries=0)
    assert out.select(metric, f"{metric}_status", f"{metric}_error").row(0) == (
        None,
        "parse_error",
        NOT_DECOMPOSED[metric],
    )
    assert len(judge.prompts) == 1


@pytest.mark.parametrize("metric", sorted(NOT_DECOMPOSED))
def test_the_same_reply_to_a_custom_prompt_is_read_by_its_score_line(metric):
    inputs = get_metric(metric).inputs
    template = "Rate this from 0 to 1. " + " ".join(f"{{{role}}}" for role in inputs) + " Reply 'Score: <x>'."
    out = rf.evaluate(FULL_ROW, [metric], judge=Recorder(SCORE_ONLY), cache=False, parse_retries=0, prompt=template)
    assert out.select(metric, f"{metric}_status", f"{metric}_reason").row(0) == (0.8, "ok", "looks fine.")


@pytest.mark.parametrize(
    ("metric", "frame"),
    [
        ("judge_faithfulness", FULL_ROW),  # the template: an answer without claims gets "Score: 0"
        ("judge_context_relevance", FULL_ROW.with_columns(contexts=pl.Series([[]], dtype=pl.List(pl.String)))),
        ("judge_context_precision", FULL_ROW.with_columns(contexts=pl.Series([[]], dtype=pl.List(pl.String)))),
    ],
    ids=["faithfulness without claims", "relevance without passages", "precision without passages"],
)
def test_score_zero_without_verdicts_is_read_where_the_template_asks_for_it(metric, frame):
    out = rf.evaluate(frame, [metric], judge=Recorder("Score: 0\nReason: nothing to judge."), cache=False)
    assert out.select(metric, f"{metric}_status").row(0) == (0.0, "ok")


@pytest.mark.parametrize(
    ("metric", "frame"),
    [
        ("judge_context_recall", FULL_ROW),  # its template never asks for "Score: 0"
        ("judge_answer_correctness", FULL_ROW),  # a refusal lists the reference claims, not "Score: 0"
        ("judge_context_relevance", FULL_ROW),  # the row has passages: each needs its verdict
        ("judge_context_precision", FULL_ROW),
    ],
)
def test_score_zero_without_verdicts_is_an_error_where_the_template_does_not_ask_for_it(metric, frame):
    out = rf.evaluate(frame, [metric], judge=Recorder("Score: 0"), cache=False, parse_retries=0)
    assert out.select(metric, f"{metric}_status").row(0) == (None, "parse_error")
    assert out[f"{metric}_error"][0] == NOT_DECOMPOSED[metric]


def test_a_score_only_reply_is_asked_again_with_the_reminder_naming_the_missing_verdicts():
    judge = Recorder(lambda prompt: WHOLE if "could not be read" in prompt else SCORE_ONLY)
    out = rf.judge_faithfulness(ONE_ROW, judge=judge, cache=False)
    assert out.select("judge_faithfulness", "judge_faithfulness_status").row(0) == (0.5, "ok")
    error = NOT_DECOMPOSED["judge_faithfulness"]
    assert judge.prompts == [faithfulness_prompt(), faithfulness_prompt() + reminder(error)]


@pytest.mark.parametrize("metric", ["faithfulness", "context_recall", "answer_correctness", "context_precision",
                                    "context_relevance"])  # fmt: skip
def test_a_json_mode_judge_with_a_packaged_decomposed_template_is_refused_before_any_call(metric):
    judge = rf.OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", api_key="x", json_mode=True)  # never called
    df = pl.DataFrame({"question": ["q"], "answer": ["a"], "contexts": [["a"]], "ground_truth": ["a"]})
    with pytest.raises(rf.InvalidParameterError, match=f"judge_{metric}.*json_mode=True"):
        rf.evaluate(df, [f"judge_{metric}"], judge=judge, cache=False)


def test_a_json_mode_judge_reads_its_own_json_template_and_answer_relevance():
    from judge_server import FakeJudgeServer, expected_score

    df = pl.DataFrame({"question": ["q"], "answer": ["a"], "contexts": [["a"]]})
    template = 'Is {answer} supported by {contexts}? Reply {"score": x, "reason": y}.'
    with FakeJudgeServer() as server:
        judge = rf.OpenAIJudge("m", base_url=server.base_url, api_key="x", json_mode=True)
        own = rf.evaluate(df, ["judge_faithfulness"], judge=judge, cache=False, prompt=template)
        relevance = rf.evaluate(df, ["judge_answer_relevance"], judge=judge, cache=False)
        prompts = [request.prompt for request in server.log]
    assert own["judge_faithfulness"].to_list() == [expected_score(prompts[0])]
    assert relevance["judge_answer_relevance"].to_list() == [expected_score(prompts[1])]
    assert own["judge_faithfulness_status"].to_list() == relevance["judge_answer_relevance_status"].to_list() == ["ok"]
