"""The run floor (issue 21): generated per-metric functions, df.rf, the public names, registrable families."""

from __future__ import annotations

import inspect
import math
import warnings

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import ragframe as rf
from ragframe.metrics import registry
from ragframe.run import Evaluator, factory
from ragframe.run.functions import __all__ as GENERATED

TEXT = pl.DataFrame(
    {
        "question": ["What is the capital of France?", "Who wrote Hamlet?"],
        "answer": ["Paris is the capital of France.", "Hamlet was written by Marlowe."],
        "contexts": [["Paris is the capital of France."], ["Hamlet is a play by Shakespeare."]],
        "ground_truth": ["Paris", "Shakespeare"],
    }
)
RANKED = pl.DataFrame({"retrieved_ids": [["a", "b", "c"], ["d"]], "relevant_ids": [["b"], ["x"]]})


class CountingJudge:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return "Score: 1"


# ----------------------------------------------------------------------------- the cases


def test_score_faithfulness_refuses_a_ranking_option_naming_itself():
    with pytest.raises(rf.InvalidParameterError, match=r"^score_faithfulness: unexpected option 'k'"):
        rf.score_faithfulness(TEXT, k=3)


def test_score_faithfulness_refuses_a_judge_and_calls_nothing():
    judge = CountingJudge()
    with pytest.raises(rf.InvalidParameterError, match=r"^score_faithfulness: unexpected option 'judge'"):
        rf.score_faithfulness(TEXT, judge=judge)
    with pytest.raises(rf.InvalidParameterError, match=r"^score_faithfulness: unexpected option 'mode'"):
        rf.score_faithfulness(TEXT, mode="llm", judge=judge)
    assert judge.prompts == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rf.score_faithfulness(TEXT, slice_rows=0), r"^score_faithfulness: slice_rows must be an int >= 1"),
        (lambda: rf.score_answer_relevance(TEXT, threshold=2.0), r"^score_answer_relevance: thresholds\['answer_rel"),
        (lambda: rf.score_context_recall(TEXT, prefix="x"), r"^score_context_recall: prefix must be"),
        (lambda: rf.judge_faithfulness(TEXT, judge=CountingJudge(), n_samples=0), r"^judge_faithfulness: n_samples"),
        (lambda: rf.judge_faithfulness(TEXT, k=3), r"^judge_faithfulness: unexpected option 'k'"),
        (lambda: rf.score_retrieval(RANKED, explain=True), r"^score_retrieval: unexpected option 'explain'"),
        (lambda: rf.score_retrieval(RANKED, k=0), r"^score_retrieval: k must be"),
        (lambda: rf.score_faithfulness(TEXT, {"explain": True}), r"^score_faithfulness: takes one frame"),
    ],
    ids=["slice_rows", "threshold", "prefix", "n_samples", "judge-k", "retrieval-explain", "retrieval-k", "positional"],
)
def test_every_error_names_the_function_called(call, message):
    with pytest.raises(rf.InvalidParameterError, match=message):
        call()


def test_the_generated_functions_score_as_evaluate_does():
    out = rf.score_faithfulness(TEXT, threshold=0.5, prefix="v1_")
    direct = rf.evaluate(TEXT, ["faithfulness"], thresholds={"faithfulness": 0.5}, prefix="v1_", composite=False)
    assert_frame_equal(out, direct, check_exact=True)
    assert_frame_equal(
        rf.score_retrieval(RANKED, k=[1, 2]), rf.evaluate(RANKED, "retrieval", k=[1, 2], composite=False)
    )


# ----------------------------------------------------------------------------- signatures, docs and the stub


@pytest.mark.parametrize("name", GENERATED)
def test_a_signature_holds_its_family_options_only(name):
    function = getattr(rf, name)
    family = registry.get_family(
        "retrieval" if name == "score_retrieval" else registry.get_metric(name.removeprefix("score_")).family
    )
    params = inspect.signature(function).parameters
    assert next(iter(params)) == "df" and params["df"].kind is inspect.Parameter.POSITIONAL_ONLY
    expected = set(family.defaults) | {"prefix"} | set(family.run_options)
    expected |= {"metrics"} if family.function == name else {"threshold"}
    assert set(list(params)[1:]) == expected
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(params.values())[1:])
    for option, default in family.defaults.items():
        assert params[option].default == default
        assert f"\n{option} : " in function.__doc__  # documented, from its declaration


def test_the_stub_is_in_sync_with_the_registry():
    """``ragframe/run/functions.pyi`` is what the factory writes: regenerate it after adding a metric or an option."""
    assert factory.STUB.read_text(encoding="utf-8") == factory.stub_text(factory.public_functions())


def test_the_stub_test_can_fail():
    text = factory.stub_text(factory.public_functions())
    assert "    slice_rows: int = 10000," in text
    assert text.replace("slice_rows", "slice_row") != factory.STUB.read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- df.rf


def test_df_rf_has_real_methods_for_every_frame_function_including_the_judges():
    from ragframe.namespace import RagframeNamespace, methods

    listed = set(methods())
    assert set(GENERATED) | {"evaluate", "summarize", "compare", "regressions", "gate", "retrieve"} <= listed
    for name in listed:
        assert inspect.isfunction(vars(RagframeNamespace)[name]), name  # a method of the class, not __getattr__
    assert "judge_faithfulness" in dir(TEXT.rf)


def test_a_df_rf_method_shows_the_function_signature_without_the_frame():
    method = TEXT.rf.score_faithfulness
    assert list(inspect.signature(method).parameters) == list(inspect.signature(rf.score_faithfulness).parameters)[1:]
    assert method.__doc__ == rf.score_faithfulness.__doc__


def test_df_rf_methods_give_what_the_functions_give():
    judge = CountingJudge()
    assert_frame_equal(
        TEXT.rf.judge_faithfulness(judge=judge, cache=False), rf.judge_faithfulness(TEXT, judge=judge, cache=False)
    )
    assert_frame_equal(TEXT.lazy().rf.score_faithfulness().collect(), rf.score_faithfulness(TEXT))
    assert_frame_equal(RANKED.rf.evaluate(["mrr"]), rf.evaluate(RANKED, ["mrr"]))
    with pytest.raises(AttributeError):
        TEXT.rf.no_such_method  # noqa: B018


# ----------------------------------------------------------------------------- public names


@pytest.mark.parametrize(
    ("alias", "family"),
    [("HEURISTIC_METRICS", "heuristic"), ("RETRIEVAL_METRICS", "retrieval"), ("JUDGE_METRICS", "judge")],
)
def test_the_metric_tuples_are_deprecated_aliases_of_list_metrics(alias, family):
    with pytest.warns(DeprecationWarning, match=f"rf.{alias} is deprecated; use rf.list_metrics"):
        value = getattr(rf, alias)
    table = rf.list_metrics()
    assert value == tuple(table.filter(pl.col("family") == family)["name"])
    assert alias not in rf.__all__


def test_all_is_sorted_and_every_name_exists():
    assert rf.__all__ == sorted(rf.__all__)
    assert len(set(rf.__all__)) == len(rf.__all__)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in rf.__all__:
            getattr(rf, name)


def test_the_evaluator_does_not_reach_into_io():
    """Streaming calls the Evaluator, never the reverse: the method that called io is gone."""
    assert not hasattr(Evaluator, "evaluate_parquet")
    assert "evaluator" in inspect.signature(rf.evaluate_parquet).parameters


# ----------------------------------------------------------------------------- families


def _constant(view, requests, options):
    return pl.DataFrame(
        [pl.Series(m.column(k), [options["level"]] * view.height, dtype=pl.Float64) for m, k in requests],
        height=view.height,
    )


def test_a_family_can_be_registered_with_its_options_and_metrics():
    from dataclasses import dataclass

    from ragframe import validate

    @dataclass(frozen=True)
    class ToyOptions:
        level: float = registry.option(0.25, "The constant score.", check=validate.number)

    family = registry.Family(
        name="toyfamily",
        score=_constant,
        options=ToyOptions,
        check=lambda options: registry.check_options(ToyOptions, options),
        columns=lambda requests, options, available: {"answer": "answer"},
    )
    registry.register_family(family)
    try:
        rf.register_metric(rf.Metric("toy_constant", "toyfamily", ("answer",), "A constant.", threshold=0.5))
        out = rf.evaluate(TEXT, ["toy_constant"], level=0.75)
        assert out["toy_constant"].to_list() == [0.75, 0.75]
        assert Evaluator.option_defaults()["level"] == 0.25
        with pytest.raises(rf.InvalidParameterError, match="evaluate: level must be a finite number"):
            rf.evaluate(TEXT, ["toy_constant"], level="high")
        with pytest.raises(rf.InvalidParameterError, match="already registered"):
            registry.register_family(family)
        with pytest.raises(rf.InvalidParameterError, match="reserved name"):
            rf.register_metric(rf.Metric("toyfamily", "toyfamily", ("answer",), "x"))
    finally:
        rf.unregister_metric("toy_constant")
        registry._FAMILIES.pop("toyfamily")


def test_a_metric_of_an_unregistered_family_is_refused():
    with pytest.raises(rf.InvalidParameterError, match="register_metric: family must be one of"):
        rf.register_metric(rf.Metric("toy_orphan", "nosuchfamily", ("answer",), "x"))


# ----------------------------------------------------------------------------- the composite rule


def test_the_composite_is_the_weighted_mean_and_a_failed_metric_fails_the_row():
    """Hand arithmetic: weights a=2, b=1, thresholds 0.5, composite_threshold 0.6.

    row 0: a=0.9, b=0.7 -> (1.8 + 0.7) / 3 = 0.8333; none failed, 0.83 >= 0.6: passed
    row 1: a=0.45, b=0.95 -> (0.9 + 0.95) / 3 = 0.6167 >= 0.6, but a failed (0.45 < 0.5): not passed
    row 2: a=null, b=0.8 -> 0.8 (a null score is left out); passed
    row 3: a=0.55, b=0.55 -> 0.55; none failed, but 0.55 < 0.6: not passed
    """
    rows = ["w", "x", "y", "z"]
    values = {"toy_a": [0.9, 0.45, None, 0.55], "toy_b": [0.7, 0.95, 0.8, 0.55]}

    def kernel(name):
        by_row = dict(zip(rows, values[name]))
        return lambda view: pl.Series([by_row[a] for a in view["answer"]], dtype=pl.Float64)

    for name in values:
        rf.register_metric(rf.Metric(name, "custom", ("answer",), "x", kernel=kernel(name), threshold=0.5))
    try:
        frame = pl.DataFrame({"answer": rows})
        out = rf.evaluate(frame, ["toy_a", "toy_b"], weights={"toy_a": 2.0, "toy_b": 1.0})
    finally:
        rf.unregister_metric("toy_a")
        rf.unregister_metric("toy_b")
    composite = out["composite_score"].to_list()
    assert [math.isclose(c, e) for c, e in zip(composite, [2.5 / 3, 1.85 / 3, 0.8, 0.55])] == [True] * 4
    assert out["passed"].to_list() == [True, False, True, False]
    assert out["toy_a_passed"].to_list() == [True, False, None, True]
