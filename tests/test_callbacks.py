"""rf.callback_metric (the anchor seed's callbacks) and rf.judge_metric (langrag's BaseEvaluator) in the registry."""

from __future__ import annotations

import asyncio
import threading

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe as rf
from ragframe.exceptions import InvalidParameterError, RagframeError
from ragframe.judges import ParsedReply

RAG = pl.DataFrame(
    {
        "id": [1, 2, 3],
        "question": ["What is the capital of France?", "Who wrote Hamlet?", "Why?"],
        "answer": ["Paris is the capital of France.", "Hamlet was written by Marlowe.", None],
        "contexts": [["Paris is the capital of France.", "Lyon"], ["Hamlet is by Shakespeare."], ["x"]],
        "ground_truth": ["Paris", "Shakespeare", "because"],
    }
)


def faithfulness_fn(answer: str, contexts: list[str]) -> float:
    """The anchor seed's callback shape: the share of answer words found in some context."""
    words = answer.lower().strip(".").split()
    pool = set(" ".join(contexts).lower().replace(".", "").split())
    return sum(w in pool for w in words) / len(words)


@pytest.fixture
def registered():
    names: list[str] = []
    yield names
    for name in names:
        rf.unregister_metric(name)


# ----------------------------------------------------------------------------- callback_metric


def test_anchor_style_callback_joins_evaluate_and_the_statistics(registered):
    metric = rf.callback_metric("anchor_faithfulness", faithfulness_fn, inputs=["answer", "contexts"], threshold=0.5)
    registered.append("anchor_faithfulness")
    assert (metric.family, metric.inputs, metric.threshold) == ("custom", ("answer", "contexts"), 0.5)
    out = rf.evaluate(RAG, ["anchor_faithfulness", "faithfulness"], prefix="v1_")
    expected = [faithfulness_fn(a, c) if a is not None else None for a, c in zip(RAG["answer"], RAG["contexts"])]
    assert out["v1_anchor_faithfulness"].to_list() == expected == [1.0, 0.4, None]  # hand: 5/5, 2/5 (hamlet, by)
    assert out["v1_anchor_faithfulness_passed"].to_list() == [True, False, None]
    table = rf.list_metrics().filter(pl.col("name") == "anchor_faithfulness").row(0, named=True)
    assert (table["family"], table["inputs"], table["threshold"]) == ("custom", ["answer", "contexts"], 0.5)
    summary = rf.summarize(out, metrics=["v1_anchor_faithfulness"], stats=["count", "mean"])
    assert summary.row(0) == ("v1_anchor_faithfulness", 2, pytest.approx(0.7))


def test_callback_columns_renamed_by_keyword(registered):
    rf.callback_metric("qa_len", lambda question, answer: len(question) + len(answer), ["question", "answer"],
                       bounds=None)  # fmt: skip
    registered.append("qa_len")
    out = rf.evaluate(RAG.rename({"answer": "response"}), ["qa_len"], answer="response")
    assert out["qa_len"].to_list() == [61.0, 47.0, None]


def test_callback_over_any_column_and_in_the_cli(registered, tmp_path, capsys):
    from ragframe.cli.main import main

    rf.callback_metric("id_parity", lambda id: float(id % 2), ["id"])
    registered.append("id_parity")
    log = tmp_path / "log.parquet"
    RAG.write_parquet(log)
    assert main(["eval", str(log), "-o", str(tmp_path / "out"), "--metrics", "id_parity", "--no-progress"]) == 0
    assert pl.read_parquet(tmp_path / "out" / "scores")["id_parity"].to_list() == [1.0, 0.0, 1.0]


def test_async_callback_runs_concurrently_within_its_limit(registered):
    state = {"now": 0, "max": 0}
    lock = threading.Lock()

    async def slow_len(answer):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.02)
        with lock:
            state["now"] -= 1
        return len(answer) / 100

    rf.callback_metric("slow_len", slow_len, ["answer"], max_concurrency=3)
    registered.append("slow_len")
    df = pl.DataFrame({"answer": [f"answer {i}" for i in range(12)]})
    out = rf.evaluate(df, ["slow_len"])
    assert out["slow_len"].to_list() == [len(f"answer {i}") / 100 for i in range(12)]
    assert state["max"] == 3


def test_async_callback_inside_a_running_event_loop(registered):
    async def score(answer):
        return 1.0

    rf.callback_metric("always_one", score, ["answer"])
    registered.append("always_one")

    async def notebook_cell():
        return rf.evaluate(RAG, ["always_one"])["always_one"].to_list()

    assert asyncio.run(notebook_cell()) == [1.0, 1.0, None]


def test_null_inputs_are_not_passed_to_the_callback(registered):
    seen = []
    rf.callback_metric("seen", lambda answer: seen.append(answer) or 1.0, ["answer"])
    registered.append("seen")
    rf.evaluate(RAG, ["seen"])
    assert seen == ["Paris is the capital of France.", "Hamlet was written by Marlowe."]


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda answer: 1 / 0, r"raised ZeroDivisionError at row 0"),
        (lambda answer: 1.5, r"row 0: 1.5 is outside its bounds \[0.0, 1.0\]"),
        (lambda answer: "high", r"row 0: expected a number \(or None\), found str 'high'"),
        (lambda answer: True, "found bool"),
    ],
)
def test_callback_errors_name_the_metric_and_the_row(registered, fn, match):
    rf.callback_metric("broken", fn, ["answer"])
    registered.append("broken")
    with pytest.raises(RagframeError, match=match) as err:
        rf.evaluate(RAG, ["broken"])
    assert "callback metric 'broken'" in str(err.value)


def test_callback_none_and_nan_are_null(registered):
    values = iter([None, float("nan")])
    rf.callback_metric("maybe", lambda answer: next(values), ["answer"])
    registered.append("maybe")
    assert rf.evaluate(RAG, ["maybe"])["maybe"].to_list() == [None, None, None]


def test_registration_rules(registered):
    rf.callback_metric("dup", faithfulness_fn, ["answer", "contexts"])
    registered.append("dup")
    with pytest.raises(InvalidParameterError, match="already registered"):
        rf.callback_metric("dup", faithfulness_fn, ["answer", "contexts"])
    rf.callback_metric("dup", lambda answer, contexts: 0.0, ["answer", "contexts"], replace=True)
    assert rf.evaluate(RAG.head(1), ["dup"])["dup"].to_list() == [0.0]
    with pytest.raises(InvalidParameterError, match="inputs"):
        rf.callback_metric("x1", faithfulness_fn, "answer")
    with pytest.raises(InvalidParameterError, match="inputs"):
        rf.callback_metric("x1", faithfulness_fn, [])
    with pytest.raises(InvalidParameterError, match="bounds"):
        rf.callback_metric("x1", faithfulness_fn, ["answer"], bounds=(1, 0))
    with pytest.raises(InvalidParameterError, match="fn"):
        rf.callback_metric("x1", 3, ["answer"])
    with pytest.raises(InvalidParameterError, match="reserved"):
        rf.callback_metric("retrieval", faithfulness_fn, ["answer"])
    assert "x1" not in rf.list_metrics()["name"].to_list()


def test_unregister_removes_it_everywhere():
    rf.callback_metric("temporary", lambda answer: 1.0, ["answer"])
    assert rf.score_columns(["v2_temporary"]) == ["v2_temporary"]
    rf.unregister_metric("temporary")
    assert rf.score_columns(["v2_temporary"]) == []
    with pytest.raises(InvalidParameterError, match="unknown metric"):
        rf.evaluate(RAG, ["temporary"])


# ----------------------------------------------------------------------------- judge_metric


def test_judge_metric_like_langrag_base_evaluator(registered):
    rf.judge_metric(
        "conciseness",
        "Is this answer concise?\nQuestion: {question}\nAnswer: {answer}\nReply 'Score: <0-1>' and 'Reason: ...'.",
        inputs=["question", "answer"],
        threshold=0.7,
    )
    registered.append("conciseness")
    prompts = []

    def judge(prompt):
        prompts.append(prompt)
        return "Reason: short enough.\nScore: 8/10"

    out = rf.evaluate(RAG, ["conciseness", "faithfulness"], judge=judge, cache=False)
    assert out.select("conciseness", "conciseness_passed", "conciseness_reason", "conciseness_status").row(0) == (
        0.8,
        True,
        "short enough.",
        "ok",
    )
    assert out["conciseness_status"].to_list() == ["ok", "ok", "skipped"]  # null answer: no call
    assert prompts[0].startswith("Is this answer concise?\nQuestion: What is the capital of France?\nAnswer: Paris")
    assert rf.list_metrics().filter(pl.col("name") == "conciseness")["family"][0] == "judge"
    assert "conciseness" in rf.summarize(out, stats=["mean"])["metric"].to_list()


@pytest.mark.parametrize(
    ("parser", "expected"),
    [
        (lambda reply: 0.25, (0.25, None, "ok", None)),
        (lambda reply: (0.5, "half"), (0.5, "half", "ok", None)),
        (lambda reply: ParsedReply(0.75, "why", "ok", None), (0.75, "why", "ok", None)),
        (lambda reply: None, (None, None, "parse_error", "the parser found no score")),
        (lambda reply: 2.0, (None, None, "parse_error", "the parser returned 2.0, outside [0, 1]")),
        (lambda reply: "x", (None, None, "parse_error", "the parser returned 'x', not a number in [0, 1]")),
        (lambda reply: int("x"), (None, None, "parse_error", None)),
    ],
)
def test_judge_metric_parser(registered, parser, expected):
    rf.judge_metric("parsed", "Rate {answer}", ["answer"], parser=parser)
    registered.append("parsed")
    out = rf.evaluate(RAG.head(1), ["parsed"], judge=lambda p: "whatever", cache=False, parse_retries=0)
    got = out.select("parsed", "parsed_reason", "parsed_status", "parsed_error").row(0)
    if expected[3] is None and expected[2] == "parse_error":
        assert got[:3] == expected[:3] and got[3].startswith("parser raised ValueError")
    else:
        assert got == expected


def test_judge_metric_over_a_custom_column(registered):
    rf.judge_metric("follows_policy", "Policy: {policy}\nAnswer: {answer}", ["policy", "answer"])
    registered.append("follows_policy")
    prompts = []
    df = RAG.head(2).with_columns(policy=pl.Series(["be brief", "cite sources"]))
    rf.evaluate(df, ["follows_policy"], judge=lambda p: prompts.append(p) or "Score: 1", cache=False)
    assert sorted(prompts) == sorted([f"Policy: {p}\nAnswer: {a}" for p, a in zip(df["policy"], df["answer"])])


@pytest.mark.parametrize(
    ("template", "inputs", "match"),
    [
        ("no placeholder", ["answer"], r"never uses \{answer\}"),
        ("{answer} {question}", ["answer"], r"uses \{question\}"),
        ("", ["answer"], "template"),
        ("{answer}", [], "inputs"),
    ],
)
def test_judge_metric_template_checks(template, inputs, match):
    with pytest.raises(InvalidParameterError, match=match):
        rf.judge_metric("bad_template", template, inputs)
    assert "bad_template" not in rf.list_metrics()["name"].to_list()


def test_a_judge_metric_can_be_a_heuristic_metrics_counterpart(registered):
    with pytest.raises(InvalidParameterError, match="no judge counterpart"):
        rf.Evaluator(["hallucination_rate"], metric_modes={"hallucination_rate": "llm"})
    rf.judge_metric("judge_hallucination_rate", "Hallucinated? {answer} {contexts}", ["answer", "contexts"],
                    threshold=0.5)  # fmt: skip
    registered.append("judge_hallucination_rate")
    out = rf.evaluate(RAG, ["hallucination_rate"], mode="llm", judge=lambda p: "Score: 0.9", cache=False)
    assert out["hallucination_rate"].to_list() == [0.9, 0.9, None]
    assert out["hallucination_rate_source"].to_list() == ["judge"] * 3


def test_custom_judge_and_callback_metrics_pickle_into_an_evaluator(registered):
    import pickle

    from metric_cases import fake_judge

    rf.callback_metric("anchor_faithfulness", faithfulness_fn, ["answer", "contexts"])
    registered.append("anchor_faithfulness")
    ev = rf.Evaluator(["anchor_faithfulness", "judge_faithfulness"], judge=fake_judge, cache=False)
    assert_frame_equal(pickle.loads(pickle.dumps(ev)).evaluate(RAG), ev.evaluate(RAG))


def test_the_definition_an_evaluator_carries_replaces_an_older_one_of_its_name(registered):
    """A process that kept a user metric from an earlier run (a reused Ray worker) scores with the one carried."""
    import pickle

    rf.register_metric(rf.Metric("carried", "custom", ("answer",), "Answer characters.", kernel=_chars, bounds=None))
    registered.append("carried")
    sent = pickle.dumps(rf.Evaluator(["carried"]))
    rf.register_metric(rf.Metric("carried", "custom", ("answer",), "Stale.", kernel=_zero, bounds=None), replace=True)
    assert rf.evaluate(RAG.head(1), ["carried"])["carried"].to_list() == [0.0]  # this process's stale definition
    received = pickle.loads(sent)
    assert received.evaluate(RAG.head(1))["carried"].to_list() == [31.0]
    assert rf.evaluate(RAG.head(1), ["carried"])["carried"].to_list() == [31.0]  # the registry now holds it


def _chars(view: pl.DataFrame) -> pl.Series:
    return view["answer"].str.len_chars().cast(pl.Float64)


def _zero(view: pl.DataFrame) -> pl.Series:
    return pl.Series([0.0] * view.height)


@pytest.mark.slow
def test_user_metrics_travel_with_the_evaluator_to_child_processes(registered, tmp_path):
    rf.callback_metric("answer_chars", len, ["answer"], bounds=None)  # len: importable in a fresh interpreter
    rf.judge_metric("politeness", "Is this polite? {answer}", ["answer"])
    registered += ["answer_chars", "politeness"]
    log = tmp_path / "log.parquet"
    pl.concat([RAG] * 3).with_columns(pl.int_range(pl.len()).alias("id")).write_parquet(log)
    with pytest.raises(rf.RunFailedError, match="the judge scored no row of 'politeness'") as caught:
        rf.evaluate_parquet(  # 5 batches, 2 per child process: 3 fresh interpreters
            log, tmp_path / "out", metrics=["answer_chars", "politeness"], judge=str.upper, cache=False,
            batch_rows=2, batches_per_process=2, progress=False, keep=["id"],
        )  # fmt: skip
    result = caught.value.result  # every reply unreadable (the upper-cased prompt): the run fails, written
    assert result.scored == 9 and result.statuses == {"politeness": {"parse_error": 6, "skipped": 3}}
    scores = pl.read_parquet(tmp_path / "out" / "scores").sort("id")
    assert scores["answer_chars"].to_list() == [31.0, 30.0, None] * 3
    assert scores["politeness_status"].to_list() == ["parse_error", "parse_error", "skipped"] * 3  # upper-cased prompt
