"""A run's options are checked once per Evaluator (the RunPlan), and run state never sits in the options."""

from __future__ import annotations

import dataclasses
import pickle

import polars as pl
import pytest

import ragframe as rf
from ragframe import validate
from ragframe.metrics import registry
from ragframe.run import configure
from ragframe.run.plan import RunPlan, all_options

FRAME = pl.DataFrame(
    {
        "id": [1, 2],
        "question": ["What is the capital of France?", "Who wrote Hamlet?"],
        "answer": ["Paris is the capital of France.", "Shakespeare wrote Hamlet."],
        "contexts": [["Paris is the capital of France."], ["Hamlet is a play by Shakespeare."]],
        "retrieved_ids": [["a", "b"], ["c"]],
        "relevant_ids": [["b"], ["c"]],
    }
)


@pytest.fixture
def checks(monkeypatch):
    """Counts every build of a plan and every family check (each registered family replaced by a counting copy)."""
    counted = {"plans": 0, "families": 0}
    build = configure.build_plan

    def counting_build(given):
        counted["plans"] += 1
        return build(given)

    for name in registry.families():
        family = registry.get_family(name)

        def counting_check(options, original=family.check):
            counted["families"] += 1
            return original(options)

        monkeypatch.setitem(registry._FAMILIES, name, dataclasses.replace(family, check=counting_check))
    from ragframe.run import evaluator

    monkeypatch.setattr(evaluator, "build_plan", counting_build)
    return counted


def test_the_options_are_checked_once_per_evaluator(checks):
    families = len(registry.families())
    ev = rf.Evaluator(["faithfulness", "answer_relevance", "mrr", "ndcg_at_10"])
    assert checks == {"plans": 1, "families": families}
    ev.evaluate(FRAME)
    ev.evaluate(FRAME.lazy()).collect()
    ev.scores(FRAME)
    ev.plan(FRAME.columns)
    ev.written_columns(FRAME.schema)
    ev.requests()
    ev.outputs()
    ev.input_columns()
    assert checks == {"plans": 1, "families": families}  # every call read the plan built above
    assert isinstance(ev.run_plan, RunPlan) and ev.run_plan is ev.run_plan


def test_a_parquet_run_checks_once_in_process(checks, tmp_path):
    FRAME.write_parquet(tmp_path / "log.parquet")
    rf.evaluate_parquet(
        tmp_path / "log.parquet", tmp_path / "out", metrics=["mrr"], progress=False, batch_rows=1,
        batches_per_process=None,
    )  # fmt: skip
    assert checks["plans"] == 1  # two batches, one plan


def test_the_requests_are_bound_once_per_schema(monkeypatch, tmp_path):
    """A streaming run's batches share their columns: the requests and input roles are worked out once."""
    from ragframe.run import evaluator

    calls = []
    original = evaluator.input_roles
    monkeypatch.setattr(evaluator, "input_roles", lambda *args: calls.append(args[2]) or original(*args))
    FRAME.write_parquet(tmp_path / "log.parquet")
    result = rf.evaluate_parquet(
        tmp_path / "log.parquet", tmp_path / "out", metrics=["mrr"], progress=False, batch_rows=1,
        batches_per_process=None,
    )  # fmt: skip
    assert result.scored == FRAME.height >= 2 and len(calls) == 1
    ev = rf.Evaluator(["mrr"])
    ev.evaluate(FRAME)
    ev.evaluate(FRAME.lazy()).collect()
    ev.evaluate(FRAME.select(list(reversed(FRAME.columns))))  # another list of columns: bound again
    assert len(calls) == 3
    with pytest.raises(rf.SchemaError):
        ev.evaluate(FRAME.drop("relevant_ids"))  # a schema that fails is not kept: it fails every time
    with pytest.raises(rf.SchemaError):
        ev.evaluate(FRAME.drop("relevant_ids"))


def test_a_pickled_evaluator_checks_once_where_it_lands(checks):
    ev = rf.Evaluator(["mrr"], k=[5])
    back = pickle.loads(pickle.dumps(ev))
    assert back == ev and checks["plans"] == 1  # the plan is not pickled: built on first use there
    back.evaluate(FRAME)
    back.evaluate(FRAME)
    assert checks["plans"] == 2


def test_the_plan_is_typed_and_holds_no_run_state():
    plan = rf.Evaluator(["judge_faithfulness"], judge=lambda prompt: "Score: 1", prefix="v2_").run_plan
    assert (plan.prefix, plan.mode, plan.composite, plan.budget) == ("v2_", "heuristic", True, None)
    for name, options in plan.families.items():
        assert not [key for key in options if key.startswith("_")], name
    with pytest.raises(TypeError):
        plan.thresholds["mrr"] = 0.5  # read-only


def test_a_family_sees_its_declared_options_and_those_it_reads_only():
    plan = rf.Evaluator().run_plan
    retrieval = plan.families["retrieval"]
    declared = set(registry.option_defaults(registry.get_family("retrieval").options))
    assert set(retrieval) == declared | {"contexts"}  # contexts: Family.reads (match="contains")
    assert set(plan.families["nuggets"]) == {"nuggets", "explain"}
    assert retrieval.k == retrieval["k"] == [1, 5, 10]
    with pytest.raises(AttributeError):
        retrieval.k = [1]  # type: ignore[misc]
    with pytest.raises(KeyError, match="the retrieval family reads the option 'explain', which it neither declares"):
        retrieval.get("explain")  # another family's option: an error, not a silent None
    assert retrieval.get("policy", "policy") == "policy"  # no option at all: a column role read as itself
    assert len(plan.families["custom"]) == len(all_options())  # Family.reads None: callbacks map any role


def test_a_family_that_reads_an_undeclared_option_fails_loudly(monkeypatch):
    """A family reading another's option must list it in Family.reads: without it the run stops, naming both."""

    @dataclasses.dataclass(frozen=True)
    class ToyOptions:
        level: float = registry.option(0.5, "The constant.", check=validate.number)

    def score(view, requests, options):
        explain = options.get("explain")  # declared by the heuristic family
        level = float(options["level"]) if not explain else 1.0
        return pl.DataFrame({m.column(k): pl.Series([level] * view.height, dtype=pl.Float64) for m, k in requests})

    def family(**extra):
        return registry.Family(
            name="toyreads",
            score=score,
            options=ToyOptions,
            check=lambda options: registry.check_options(ToyOptions, options),
            columns=lambda requests, options, available: {"answer": "answer"},
            **extra,
        )

    frame = pl.DataFrame({"answer": ["a", "b"]})
    metric = rf.Metric("toy_reads", "toyreads", ("answer",), "A constant.", threshold=0.5)
    for extra, expected in (({}, None), ({"reads": ("explain",)}, [0.5, 0.5])):
        monkeypatch.setitem(registry._FAMILIES, "toyreads", family(**extra))
        rf.register_metric(metric)
        try:
            if expected is None:
                with pytest.raises(KeyError, match="the toyreads family reads the option 'explain'"):
                    rf.evaluate(frame, ["toy_reads"])
            else:
                assert rf.evaluate(frame, ["toy_reads"])["toy_reads"].to_list() == expected
        finally:
            rf.unregister_metric("toy_reads")
