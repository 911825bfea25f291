"""The judge metrics: prompts, reading replies (decomposed verdicts), samples, statuses, cache, registry, streaming.

Judges here are deterministic: plain callables of the prompt, a sample-aware Judge object, and
the fake OpenAI-compatible server of ``tests/judge_server.py`` behind ``rf.OpenAIJudge``.
Expected values are hand arithmetic, scikit-learn (average precision) or ``statistics.stdev``.
"""

from __future__ import annotations

import json
import pickle
import statistics
import threading

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from judge_server import verdict_reply
from polars.testing import assert_frame_equal
from sklearn.metrics import average_precision_score

import ragframe as rf
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.judges import JudgeReply, JudgeTimeout
from ragframe.judges.scoring import JudgeSpec, score_reply
from ragframe.judges.templates import format_contexts, load_template
from ragframe.metrics.judge import JUDGE_METRICS

RAG = pl.DataFrame(
    {
        "id": [1, 2, 3],
        "question": ["What is the capital of France?", "Who wrote Hamlet?", None],
        "answer": ["Paris is the capital of France.", "Hamlet was written by Marlowe.", "Nothing."],
        "contexts": [["Paris is the capital of France.", "Lyon is a city."], ["Hamlet is by Shakespeare."], []],
        "ground_truth": ["Paris", "William Shakespeare", ""],
    }
)


class Recorder:
    """A callable judge that records every prompt and answers ``reply(prompt)``."""

    def __init__(self, reply):
        self.reply = reply
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
        return self.reply(prompt) if callable(self.reply) else self.reply


class PerSample:
    """A Judge whose reply depends on the sample index (what a sampling model does)."""

    def __init__(self, replies):
        self.replies = replies

    async def complete(self, prompt: str, sample: int) -> JudgeReply:
        return JudgeReply(self.replies[sample])

    def identity(self):
        return {"test": "per-sample", "replies": list(self.replies)}


def fixed(text):
    return lambda prompt: text


def scoring(score, reason="fake judge."):
    """A judge whose reply to every prompt reads as ``score`` (the verdicts its template asks for)."""
    return lambda prompt: verdict_reply(prompt, score, reason)


# ----------------------------------------------------------------------------- prompts


def test_prompt_is_the_packaged_template_with_the_row_values():
    judge = Recorder(scoring(1))
    rf.judge_faithfulness(RAG.head(1), judge=judge, cache=False)
    expected = (
        load_template("faithfulness")
        .replace("{contexts}", "[1] Paris is the capital of France.\n\n[2] Lyon is a city.")
        .replace("{answer}", "Paris is the capital of France.")
    )
    assert judge.prompts == [expected]
    assert "atomic factual claims" in expected and "Verdict: yes" in expected  # decomposed (RAGAS)


def test_values_with_braces_are_not_templates():
    judge = Recorder("Score: 1")
    df = pl.DataFrame({"question": ["what is {answer}?"], "answer": ["{question} {x}"]})
    rf.judge_answer_relevance(df, judge=judge, cache=False)
    assert "what is {answer}?" in judge.prompts[0] and "{question} {x}" in judge.prompts[0]


def test_prompt_override_str_and_dict():
    judge = Recorder("Score: 0.5")
    out = rf.judge_answer_relevance(RAG.head(1), judge=judge, cache=False, prompt="Q={question} A={answer} Score?")
    assert judge.prompts == ["Q=What is the capital of France? A=Paris is the capital of France. Score?"]
    assert out["judge_answer_relevance"].to_list() == [0.5]
    judge.prompts.clear()
    rf.evaluate(
        RAG.head(1),
        ["judge_answer_relevance", "judge_context_recall"],
        judge=judge,
        cache=False,
        prompt={"answer_relevance": "only {question} {answer}"},  # the heuristic name stands for its counterpart
    )
    assert "only What is the capital of France? Paris is the capital of France." in judge.prompts
    assert any(p.startswith("You check how much of a reference answer") for p in judge.prompts)


@pytest.mark.parametrize(
    ("metrics", "prompt", "match"),
    [
        (["judge_faithfulness"], "no placeholders", r"never uses \{answer\}"),
        (["judge_faithfulness"], "{answer} {contexts} {question}", r"uses \{question\}, which is not among"),
        (["judge_faithfulness", "judge_answer_relevance"], "{answer}", "one template but this run judges"),
        (["judge_faithfulness"], {"judge_context_recall": "{ground_truth} {contexts}"}, "does not judge"),
        (["judge_faithfulness"], {"mrr": "x"}, "not a judge metric"),
        (["judge_faithfulness"], 3, "prompt"),
    ],
)
def test_bad_prompts_are_refused_before_any_call(metrics, prompt, match):
    judge = Recorder("Score: 1")
    with pytest.raises(InvalidParameterError, match=match):
        rf.evaluate(RAG, metrics, judge=judge, cache=False, prompt=prompt)
    assert judge.prompts == []


def test_format_contexts_numbers_the_passages():
    assert format_contexts(["a", "b"]) == "[1] a\n\n[2] b"
    assert format_contexts([]) == "(no passages)"


# ----------------------------------------------------------------------------- reading replies


def test_faithfulness_counts_verdicts_not_the_models_arithmetic():
    reply = (
        "Claim: Paris is a capital.\nVerdict: yes\n"
        "Claim: It is in France.\n**Verdict:** Yes\n"
        "Claim: It has 10 million people.\nVerdict: no\n"
        "Score: 1/1\nReason: two of three claims are supported."
    )
    out = rf.judge_faithfulness(RAG.head(1), judge=fixed(reply), cache=False)
    row = out.select("judge_faithfulness", "judge_faithfulness_reason", "judge_faithfulness_status").row(0)
    assert row == (pytest.approx(2 / 3), "two of three claims are supported.", "ok")


def test_without_verdicts_the_score_line_is_read_only_for_a_template_of_ones_own():
    reply = fixed("Score: 3/4\nReason: mostly")
    packaged = rf.judge_faithfulness(RAG.head(1), judge=reply, cache=False, parse_retries=0)
    assert packaged.select("judge_faithfulness", "judge_faithfulness_status").row(0) == (None, "parse_error")
    own = rf.judge_faithfulness(RAG.head(1), judge=reply, cache=False, prompt="Rate {answer} by {contexts}.")
    assert own["judge_faithfulness"].to_list() == [0.75]


@pytest.mark.parametrize("verdicts", [[False, True, True], [True, False, True, False], [False, False], [True]])
def test_context_precision_is_average_precision_of_the_verdicts(verdicts):
    contexts = [f"passage {i}" for i in range(len(verdicts))]
    reply = "\n".join(f"Verdict {i + 1}: {'yes' if v else 'no'}" for i, v in enumerate(verdicts)) + "\nScore: 0"
    df = pl.DataFrame({"question": ["q"], "contexts": [contexts]})
    got = rf.judge_context_precision(df, judge=fixed(reply), cache=False)["judge_context_precision"][0]
    if any(verdicts):
        ranks = list(range(len(verdicts), 0, -1))  # the first passage ranks highest
        assert got == pytest.approx(average_precision_score(verdicts, ranks))
    else:
        assert got == 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=24))
def test_context_precision_is_the_trec_kernels_average_precision_summed_in_rank_order(verdicts):
    """One AP kernel (kernels.ranking.average_precision): exactly the sequential sum trec_eval and RAGAS compute."""
    reply = "\n".join(f"Verdict {i + 1}: {'yes' if v else 'no'}" for i, v in enumerate(verdicts))
    got = score_reply(JudgeSpec("", "ranked"), reply, len(verdicts))
    total, hits = 0.0, 0
    for rank, relevant in enumerate(verdicts, start=1):  # trec_eval's loop: precision at each relevant rank
        if relevant:
            hits += 1
            total += hits / rank
    assert (got.status, got.score) == ("ok", total / hits if hits else 0.0)  # ==, not approx


def test_context_precision_needs_one_verdict_per_passage():
    df = pl.DataFrame({"question": ["q"], "contexts": [["a", "b", "c"]]})
    out = rf.judge_context_precision(
        df, judge=fixed("Verdict 1: yes\nVerdict 2: no\nScore: 1/2"), cache=False, parse_retries=0
    )
    assert out.select("judge_context_precision", "judge_context_precision_status").row(0) == (None, "parse_error")
    assert out["judge_context_precision_error"][0] == "no verdict for passage 3 (the row has 3 passages)"
    unnumbered = rf.judge_context_precision(df, judge=fixed("Verdict: yes\nVerdict: no"), cache=False, parse_retries=0)
    assert unnumbered["judge_context_precision_error"][0] == "2 verdict lines for 3 passages (one per passage expected)"


def test_context_relevance_and_recall_are_shares():
    reply = "Verdict 1: yes\nVerdict 2: no\nVerdict 3: no\nVerdict 4: yes\nScore: 1"
    df = pl.DataFrame({"question": ["q"], "contexts": [["a", "b", "c", "d"]], "ground_truth": ["g"]})
    assert rf.judge_context_relevance(df, judge=fixed(reply), cache=False)["judge_context_relevance"][0] == 0.5
    claims = "Claim: a\nVerdict: yes\nClaim: b\nVerdict: no\nClaim: c\nVerdict: no\nClaim: d\nVerdict: yes\nScore: 1"
    assert rf.judge_context_recall(df, judge=fixed(claims), cache=False)["judge_context_recall"][0] == 0.5
    # recall's verdicts are per claim of the reference: passage verdicts without claims are not an answer
    out = rf.judge_context_recall(df, judge=fixed(reply), cache=False, parse_retries=0)
    assert out.select("judge_context_recall", "judge_context_recall_status").row(0) == (None, "parse_error")


def test_answer_correctness_is_f1_of_claim_verdicts():
    reply = (
        "Answer claim: a\nVerdict: yes\nAnswer claim: b\nVerdict: no\n"
        "Reference claim: a\nCovered: yes\nReference claim: c\nCovered: yes\nReference claim: d\nCovered: no\n"
        "Score: 0.9"
    )
    out = rf.judge_answer_correctness(RAG.head(1), judge=fixed(reply), cache=False)
    precision, recall = 1 / 2, 2 / 3  # hand: 1 of 2 answer claims supported, 2 of 3 reference claims covered
    assert out["judge_answer_correctness"][0] == pytest.approx(2 * precision * recall / (precision + recall))
    missing = score_reply(JudgeSpec("", "f1"), "Answer claim: a\nVerdict: yes\nScore: 1")
    assert (missing.score, missing.status) == (None, "parse_error")
    no_claims = score_reply(JudgeSpec("", "f1"), "Reference claim: a\nCovered: yes\nScore: 1")
    assert no_claims.score == 0.0  # an answer without claims (a refusal) is not correct


@pytest.mark.parametrize(
    ("reply", "status", "error"),
    [
        ("I think it is fine.", "parse_error", "no 'Score:' line in the reply: 'I think it is fine.'"),
        ("Score: high", "parse_error", "no readable score"),
        ("Score: 1/0", "parse_error", "no readable score"),
    ],
)
def test_unreadable_replies_are_parse_errors_not_exceptions(reply, status, error):
    out = rf.judge_answer_relevance(RAG.head(2), judge=fixed(reply), cache=False)
    assert out["judge_answer_relevance"].to_list() == [None, None]
    assert out["judge_answer_relevance_status"].to_list() == [status, status]
    assert out["judge_answer_relevance_error"][0].startswith(error)
    assert out["judge_answer_relevance_passed"].to_list() == [None, None]


# ----------------------------------------------------------------------------- statuses


def test_null_inputs_are_skipped_without_a_call():
    judge = Recorder(scoring(1))
    out = rf.evaluate(RAG, ["judge_answer_relevance", "judge_context_recall"], judge=judge, cache=False)
    assert out["judge_answer_relevance_status"].to_list() == ["ok", "ok", "skipped"]
    assert out["judge_answer_relevance_error"].to_list() == [None, None, "null question: not judged"]
    # an empty ground truth is no reference, as the heuristics read it
    assert out["judge_context_recall_status"].to_list() == ["ok", "ok", "skipped"]
    assert out["judge_context_recall_error"][2] == "null or empty ground_truth: not judged"
    assert len(judge.prompts) == 4


def test_a_failing_call_is_a_status_and_the_other_rows_go_on():
    def judge(prompt):
        if "Marlowe" in prompt:
            raise ConnectionError("the judge is down")
        if "Nothing." in prompt:
            raise JudgeTimeout("no reply within 1 s")
        return verdict_reply(prompt, 0.8)

    out = rf.judge_faithfulness(RAG, judge=judge, cache=False)
    assert out["judge_faithfulness"].to_list() == [0.8, None, None]
    assert out["judge_faithfulness_status"].to_list() == ["ok", "judge_error", "timeout"]  # the callable's own error
    assert out["judge_faithfulness_error"].to_list() == [
        None,
        "ConnectionError: the judge is down",
        "no reply within 1 s",
    ]


@pytest.mark.slow
def test_fake_server_faults_end_as_statuses():
    pytest.importorskip("httpx")
    from judge_server import FakeJudgeServer, expected_score

    df = pl.DataFrame(
        {
            "question": ["q1", "q2", "q3", "q4", "q5", "q6"],
            "answer": ["fine", "ROW500", "ROW429", "SLOW", "BAD", "MALFORMED"],
        }
    )
    with FakeJudgeServer(slow_seconds=3.0) as server:
        server.rules.update({"ROW500": "500", "ROW429": "429", "SLOW": "slow", "BAD": "bad_score"})
        server.rules["MALFORMED"] = "malformed"
        judge = rf.OpenAIJudge(
            "fake",
            base_url=server.base_url,
            api_key="sk-test",
            max_retries=0,
            timeout=0.5,
            rate_limit_budget=0.5,  # a row refused for good ends rate_limited after half a second
        )
        out = rf.judge_answer_relevance(df, judge=judge, cache=False)
        first_prompt = next(p for p in server.prompts() if p and "fine" in p)
    assert out["judge_answer_relevance_status"].to_list() == [
        "ok",
        "http_error",
        "rate_limited",
        "timeout",
        "parse_error",
        "http_error",
    ]
    assert out["judge_answer_relevance"][0] == pytest.approx(expected_score(first_prompt))
    assert out["judge_answer_relevance"].null_count() == 5
    assert out["judge_answer_relevance_error"][0] is None and out["judge_answer_relevance_error"][1:].null_count() == 0
    assert "sk-test" not in " ".join(out["judge_answer_relevance_error"].drop_nulls())


# ----------------------------------------------------------------------------- samples


def test_n_samples_mean_and_std_over_the_samples_read():
    judge = PerSample(["Score: 0.2", "Score: 0.4", "Score: 0.9"])
    out = rf.judge_answer_relevance(RAG.head(2), judge=judge, cache=False, n_samples=3)
    assert out["judge_answer_relevance"].to_list() == pytest.approx([0.5, 0.5])
    assert out["judge_answer_relevance_std"].to_list() == pytest.approx([statistics.stdev([0.2, 0.4, 0.9])] * 2)
    assert out.columns[-1] == "judge_answer_relevance_std"


def test_n_samples_some_unreadable_still_ok_all_unreadable_first_failure():
    some = rf.judge_answer_relevance(
        RAG.head(1), judge=PerSample(["Score: 0.2", "no idea", "Score: 0.6"]), cache=False, n_samples=3
    )
    assert some.select("judge_answer_relevance", "judge_answer_relevance_status", "judge_answer_relevance_std").row(
        0
    ) == (pytest.approx(0.4), "ok", pytest.approx(statistics.stdev([0.2, 0.6])))
    reasons = PerSample(["Score: 0.2\nReason: first", "Score: 0.6\nReason: second"])
    first = rf.judge_answer_relevance(RAG.head(1), judge=reasons, cache=False, n_samples=2)
    assert first["judge_answer_relevance_reason"].to_list() == ["first"]  # the first sample read
    one = rf.judge_answer_relevance(RAG.head(1), judge=PerSample(["x", "Score: 0.7"]), cache=False, n_samples=2)
    assert one.select("judge_answer_relevance", "judge_answer_relevance_std").row(0) == (0.7, None)
    none = rf.judge_answer_relevance(RAG.head(1), judge=PerSample(["x", "y"]), cache=False, n_samples=2)
    assert none.select("judge_answer_relevance", "judge_answer_relevance_status").row(0) == (None, "parse_error")
    # each sample asked again twice (parse_retries=2): the reply stays unreadable
    assert (
        none["judge_answer_relevance_error"][0] == "no 'Score:' line in the reply: 'x' [3 replies read, none readable]"
    )


def test_n_samples_one_has_no_std_column():
    out = rf.judge_answer_relevance(RAG.head(1), judge=fixed("Score: 1"), cache=False)
    assert out.columns[RAG.width :] == [
        "judge_answer_relevance",
        "judge_answer_relevance_passed",
        "judge_answer_relevance_reason",
        "judge_answer_relevance_status",
        "judge_answer_relevance_error",
    ]


# ----------------------------------------------------------------------------- cache, dry run


def test_cache_file_answers_a_rerun_without_calls(tmp_path):
    judge = Recorder(lambda prompt: verdict_reply(prompt, len(prompt) % 10 / 10))
    path = tmp_path / "judge.sqlite3"
    first = rf.judge_faithfulness(RAG, judge=judge, cache=path, n_samples=2)
    calls = len(judge.prompts)
    assert calls == 3 * 2
    again = rf.judge_faithfulness(RAG, judge=judge, cache=path, n_samples=2)
    assert len(judge.prompts) == calls
    assert_frame_equal(first, again)


def test_dry_run_calls_nothing():
    judge = Recorder("Score: 1")
    out = rf.judge_faithfulness(RAG, judge=judge, cache=False, dry_run=True)
    assert judge.prompts == []
    assert out["judge_faithfulness_status"].to_list() == ["skipped"] * 3
    assert out["judge_faithfulness"].null_count() == 3
    assert out["judge_faithfulness_error"][0] == "dry run: not called"


# ----------------------------------------------------------------------------- registry, evaluate, statistics


def test_judge_metrics_are_in_the_registry():
    table = rf.list_metrics().filter(pl.col("family") == "judge")
    assert set(JUDGE_METRICS) <= set(table["name"])
    row = table.filter(pl.col("name") == "judge_context_recall").row(0, named=True)
    assert (row["inputs"], row["threshold"], row["lower"], row["upper"]) == (["ground_truth", "contexts"], 0.5, 0, 1)
    assert rf.score_columns(["judge_faithfulness", "v2_judge_faithfulness", "judge_faithfulness_reason"]) == [
        "judge_faithfulness",
        "v2_judge_faithfulness",
    ]


def test_judge_family_in_evaluate_with_heuristics_and_the_statistics():
    out = rf.evaluate(RAG, ["faithfulness", "judge"], judge=scoring(0.6), cache=False, prefix="v1_")
    assert "v1_faithfulness" in out.columns and "v1_judge_answer_correctness_status" in out.columns
    summary = rf.summarize(out, stats=["count", "mean"])
    assert "v1_judge_faithfulness" in summary["metric"].to_list()
    assert not any(m.endswith(("_reason", "_status", "_error")) for m in summary["metric"])
    mean = summary.filter(pl.col("metric") == "v1_judge_faithfulness")["mean"][0]
    assert mean == pytest.approx(0.6)


def test_a_judge_metric_without_a_judge_is_refused():
    with pytest.raises(InvalidParameterError, match=r"scored by an LLM judge; pass judge="):
        rf.evaluate(RAG, ["judge_faithfulness"])
    with pytest.raises(InvalidParameterError, match="judge must be a callable"):
        rf.evaluate(RAG, ["judge_faithfulness"], judge=42)


def test_wrong_dtypes_name_the_column():
    with pytest.raises(SchemaError) as err:
        rf.judge_faithfulness(RAG.with_columns(pl.lit(1.5).alias("answer")), judge=fixed("Score: 1"), cache=False)
    assert (err.value.column, err.value.found) == ("answer", "Float64")


def test_column_overrides_and_prefix():
    df = RAG.rename({"answer": "response"})
    out = rf.judge_faithfulness(df, judge=scoring(1), cache=False, answer="response", prefix="v2_")
    assert out["v2_judge_faithfulness"].to_list() == [1.0, 1.0, 1.0]


def test_evaluator_with_a_judge_pickles_and_round_trips():
    from metric_cases import fake_judge

    ev = rf.Evaluator(
        ["judge_faithfulness"],
        judge=fake_judge,
        cache=False,
        n_samples=2,
        prompt={"faithfulness": "{answer}{contexts}"},
    )
    again = pickle.loads(pickle.dumps(ev))
    assert again == ev and rf.Evaluator.from_dict(ev.to_dict()) == ev
    assert ev.to_dict()["prompt"] == {"faithfulness": "{answer}{contexts}"}
    assert_frame_equal(again.evaluate(RAG), ev.evaluate(RAG))


def test_judge_given_as_openai_judge_options():
    pytest.importorskip("httpx")
    from judge_server import FakeJudgeServer

    with FakeJudgeServer() as server:
        config = {"model": "fake", "base_url": server.base_url, "api_key": "sk-x", "max_retries": 0}
        ev = rf.Evaluator(["judge_answer_relevance"], judge=config, cache=False)
        out = ev.evaluate(RAG.head(2))
        assert len(server.prompts()) == 2
    assert out["judge_answer_relevance_status"].to_list() == ["ok", "ok"]
    assert ev.to_dict()["judge"] == {**config, "api_key": "***"}  # plain data, never the key: what a manifest holds


@pytest.mark.slow
def test_streaming_in_child_processes_and_the_cli(tmp_path, capsys):
    pytest.importorskip("httpx")
    from judge_server import FakeJudgeServer

    from ragframe.cli.main import main

    log = tmp_path / "log.parquet"
    rows = pl.concat([RAG] * 4).with_columns(pl.int_range(pl.len()).alias("id"))
    rows.with_columns(pl.format("{} ({})", "answer", "id").alias("answer")).write_parquet(log)  # 12 distinct prompts
    with FakeJudgeServer() as server:
        # retries on: a child's first connection can be refused on a loaded 2-core machine
        judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key="sk-x", max_retries=3)
        result = rf.evaluate_parquet(
            log, tmp_path / "out", metrics=["judge_faithfulness"], judge=judge, cache=tmp_path / "c.sqlite3",
            batch_rows=3, batches_per_process=2, progress=False, keep=["id"],
        )  # fmt: skip
        answered = {r.prompt for r in server.log if r.status == 200}
        assert result.scored == 12 and len(answered) == 12  # every row, in 2 child processes
        scores = pl.read_parquet(tmp_path / "out" / "scores").sort("id")
        assert scores["judge_faithfulness_status"].to_list() == ["ok"] * 12
        config = tmp_path / "ragframe.toml"
        config.write_text(
            f'metrics = ["judge_faithfulness"]\ncache = "{tmp_path / "c.sqlite3"}"\nkeep = ["id"]\n'
            f'[judge]\nmodel = "fake"\nbase_url = "{server.base_url}"\nmax_retries = 3\n',
            encoding="utf-8",
        )
        before = len(server.log)
        code = main(["eval", str(log), "-o", str(tmp_path / "cli"), "--config", str(config), "--no-progress"])
        assert code == 0, capsys.readouterr().err
        assert len(server.log) == before  # the CLI run was answered by the cache
    cli = pl.read_parquet(tmp_path / "cli" / "scores").sort("id")
    assert_frame_equal(cli.select(scores.columns), scores)


def test_aevaluate_keeps_the_event_loop_free():
    import asyncio
    import threading

    ticked = threading.Event()

    def slow_judge(prompt):
        # works until the caller's loop has ticked 5 times: it can only if aevaluate left the loop free
        assert ticked.wait(60), "the event loop did not run while the judge worked"
        return "Score: 1"

    async def server():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1
                if ticks >= 5:
                    ticked.set()

        task = asyncio.create_task(ticker())
        out = await rf.aevaluate(RAG.head(1), ["judge_answer_relevance"], judge=slow_judge, cache=False)
        task.cancel()
        return out, ticks

    out, ticks = asyncio.run(server())
    assert out["judge_answer_relevance"].to_list() == [1.0]
    assert ticks >= 5  # the loop ran the ticker while the judge slept
    with pytest.raises(InvalidParameterError, match="aevaluate: unknown option"):
        asyncio.run(rf.aevaluate(RAG, ["faithfulness"], bogus=1))


# ----------------------------------------------------------------------------- usage returned with the run


def _calls(usage: pl.DataFrame) -> dict[str, int]:
    return dict(usage.select("metric", "calls").iter_rows())


def test_recording_usage_is_one_runs_usage_nested_blocks_and_aevaluate_included():
    import asyncio

    from ragframe.judges import recording_usage

    before = _calls(rf.judge_usage()).get("judge_answer_relevance", 0)
    with recording_usage() as outer:
        rf.judge_answer_relevance(RAG.head(2), judge=fixed("Score: 1"), cache=False)
        with recording_usage() as inner:
            rf.judge_answer_relevance(RAG.head(1), judge=fixed("Score: 0.5"), cache=False)
            asyncio.run(rf.aevaluate(RAG.head(2), ["judge_answer_relevance"], judge=fixed("Score: 0"), cache=False))
        elsewhere = threading.Thread(
            target=lambda: rf.judge_answer_relevance(RAG.head(1), judge=fixed("Score: 0.2"), cache=False)
        )
        elsewhere.start()
        elsewhere.join()  # another thread's run is not this block's
    rf.judge_answer_relevance(RAG.head(1), judge=fixed("Score: 1"), cache=False)  # after the block
    assert _calls(outer.frame()) == {"judge_answer_relevance": 2 + 1 + 2}
    assert _calls(inner.frame()) == {"judge_answer_relevance": 1 + 2}
    # the process-wide view still counts everything
    assert _calls(rf.judge_usage())["judge_answer_relevance"] - before == 2 + 1 + 2 + 1 + 1


@pytest.mark.slow
def test_usage_is_returned_with_a_parquet_run_child_processes_and_resumes_included(tmp_path):
    pytest.importorskip("httpx")
    from judge_server import FakeJudgeServer

    log = tmp_path / "log.parquet"
    rows = pl.concat([RAG.head(2)] * 6).with_columns(pl.int_range(pl.len()).alias("id"))
    rows.with_columns(pl.format("{} ({})", "answer", "id").alias("answer")).write_parquet(log)  # 12 distinct prompts
    options = {"metrics": ["judge_answer_relevance"], "batch_rows": 3, "progress": False}
    with FakeJudgeServer() as server:
        judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key="sk-x", max_retries=3)
        first = rf.evaluate_parquet(log, tmp_path / "out", judge=judge, cache=False, batches_per_process=2, **options)
        prompts = {r.prompt for r in server.log if r.status == 200}
        again = rf.evaluate_parquet(log, tmp_path / "out", judge=judge, cache=False, **options)  # all 4 batches done
        assert len(prompts) == 12 and again.resumed == 4
    row = first.usage.row(0, named=True)
    assert first.usage.height == 1 and row["metric"] == "judge_answer_relevance"
    # counted in the 2 child processes that judged, which the parent's rf.judge_usage() never sees
    assert (row["calls"], row["cache_hits"], row["failures"], row["dry_run"]) == (12, 0, 0, False)
    assert row["input_tokens"] == sum(len(p.split()) for p in prompts)  # the server's count (words)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["judge_usage"] == first.usage.to_dicts()
    assert_frame_equal(again.usage, first.usage)  # read back from the finished batches


# ----------------------------------------------------------------------------- the judge in one place


def test_judges_is_a_lower_floor_than_metrics():
    """ragframe/judges/ (transport, templates, reply scoring) imports nothing of metrics/ or any floor above it."""
    import ast
    from pathlib import Path

    allowed = ("ragframe.judges", "ragframe.kernels", "ragframe.exceptions", "ragframe.validate", "ragframe.public")
    allowed += ("ragframe.progress",)
    allowed += ("ragframe.secrets", "ragframe.concurrency", "ragframe.extras", "ragframe.schema")
    found = {}
    for path in sorted(Path(rf.__file__).parent.joinpath("judges").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:  # from ragframe import secrets: ragframe.secrets
                names += [f"ragframe.{a.name}" for a in node.names] if node.module == "ragframe" else [node.module]
            found[path.name] = found.get(path.name, set()) | {n for n in names if n.startswith("ragframe")}
    upward = {name: sorted(m for m in mods if not m.startswith(allowed)) for name, mods in found.items()}
    assert {name: mods for name, mods in upward.items() if mods} == {}
    assert "ragframe.kernels.ranking" in found["scoring.py"]  # the one average-precision kernel
