"""Every public function's every numeric parameter: a wrong type or an out-of-range value is a RagframeError.

The property: whatever value a caller passes, ragframe either accepts it or raises a
:class:`~ragframe.exceptions.RagframeError` (never an IndexError, a TypeError from inside
NumPy, a ZeroDivisionError, ...). Hypothesis draws the values.

The metric families' options are not listed here: they are read from the families' options
dataclasses (``registry.option`` declarations), so a new option is tested without editing
this file: its numeric parameters get the property, its declared ``invalid`` values must be
refused naming the option, its default must pass its own check, and every generated
function must refuse the options of the other families naming itself. The statistics, which
are no metric family, keep their table (``CALLS``).
"""

from __future__ import annotations

import inspect
import math

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragframe as rf
from ragframe.exceptions import RagframeError
from ragframe.metrics import registry
from ragframe.run import RunOptions
from ragframe.run.factory import public_functions

RAG = pl.DataFrame(
    {
        "id": [1, 2, 3],
        "question": ["What is the capital of France?", "Who wrote Hamlet?", "What is 2+2?"],
        "answer": ["Paris is the capital.", "Shakespeare wrote it.", "Four."],
        "contexts": [["Paris is the capital of France."], ["Hamlet is by Shakespeare."], ["2+2=4"]],
        "ground_truth": ["Paris", "Shakespeare", "4"],
        "retrieved_ids": [["a", "b"], ["c"], ["d", "e"]],
        "relevant_ids": [["b"], ["c"], ["x"]],
    }
)
SCORED = pl.DataFrame(
    {
        "id": [1, 2, 3, 4],
        "model": ["a", "a", "b", "b"],
        "faithfulness": [0.1, 0.5, 0.7, 0.9],
        "faithfulness_passed": [False, False, True, True],
    }
)
OTHER = SCORED.with_columns(pl.col("faithfulness") * 0.5)
RUN = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
QRELS = pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "c"], "relevance": [1, 2]})
JUDGMENTS = pl.DataFrame(
    {
        "query": ["q"] * 6,
        "item_id": ["a", "a", "b", "b", "c", "c"],
        "annotator": ["x", "y"] * 3,
        "grade": [1, 1, 0, 1, 2, 2],
    }
)


def _judge(prompt: str) -> str:
    return "Claim: a\nVerdict: yes\nScore: 1"  # read by every built-in judge template


def _family_call(function: str):
    """A valid call of a generated function, taking keyword overrides (judges get a local judge, no cache)."""
    base = {"judge": _judge, "cache": False} if "judge" in inspect.signature(getattr(rf, function)).parameters else {}
    return lambda **kw: getattr(rf, function)(RAG, **{**base, **kw})


def _is_numeric(value) -> bool:
    values = value if isinstance(value, tuple) else (value,)
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _numeric_options(function: str) -> list[str]:
    """The keyword parameters of a generated function whose default is a number (or numbers), and threshold."""
    params = inspect.signature(getattr(rf, function)).parameters.values()
    numeric = [p.name for p in params if p.name == "threshold" or (p.default is not p.empty and _is_numeric(p.default))]
    return [name for name in numeric if name not in COSTLY]


FUNCTIONS = sorted(public_functions())
#: One generated function per family (a family's functions share its options): the first of each.
ONE_PER_FAMILY = sorted(
    {tuple(inspect.signature(getattr(rf, name)).parameters): name for name in reversed(FUNCTIONS)}.values()
)

#: Every option an rf.evaluate call takes, with every family's declaration (and the run's own).
DECLARED = [
    (family, spec)
    for family in registry.families()
    for spec in registry.declared_options(registry.get_family(family).options)
] + [("run", spec) for spec in registry.declared_options(RunOptions)]
#: Options whose large valid values mean large work (``n_samples=10**12`` judges each row 10**12 times).
COSTLY = {spec.name for _, spec in DECLARED if spec.metadata.get("costly")}
EVALUATE_NUMERIC = sorted({spec.name for _, spec in DECLARED if _is_numeric(spec.default)} - COSTLY)

#: (name, call taking the keyword overrides, numeric parameter names)
CALLS = [
    ("evaluate", lambda **kw: rf.evaluate(RAG, ["faithfulness", "context_relevance", "mrr"], **kw), EVALUATE_NUMERIC),
    *[(name, _family_call(name), _numeric_options(name)) for name in ONE_PER_FAMILY],
    ("evaluate_run", lambda **kw: rf.evaluate_run(RUN, QRELS, **kw), ["k", "relevance_level", "max_docs"]),
    ("retrieval_metrics", lambda **kw: rf.retrieval_metrics(retrieved=["a", "b"], relevant=["b"], **kw),
     ["k", "relevance_level"]),
    ("summarize", lambda **kw: rf.summarize(SCORED, **kw), ["confidence", "n_resamples", "seed"]),
    ("summarize_bootstrap", lambda **kw: rf.summarize(SCORED, ci="bootstrap", **kw),
     ["confidence", "n_resamples", "seed"]),
    ("compare", lambda **kw: rf.compare(SCORED, OTHER, on="id", **kw), ["alpha", "n_resamples", "seed"]),
    ("compare_permutation", lambda **kw: rf.compare(SCORED, OTHER, on="id", test="permutation", **kw),
     ["n_resamples", "seed"]),
    ("compare_runs", lambda **kw: rf.compare_runs(RUN, RUN, QRELS, **kw), ["k", "alpha", "relevance_level"]),
    ("regressions", lambda **kw: rf.regressions(SCORED, OTHER, on="id", **kw),
     ["max_drop", "alpha", "n_resamples", "seed"]),
    ("detect_regressions", lambda **kw: rf.detect_regressions(rf.summarize_batch(SCORED), rf.summarize_batch(OTHER),
                                                              **kw), ["threshold"]),
    ("cohen_kappa", lambda **kw: rf.cohen_kappa(JUDGMENTS.filter(pl.col("annotator") == "x").join(
        JUDGMENTS.filter(pl.col("annotator") == "y"), on=["query", "item_id"]), "grade", "grade_right", **kw), []),
    ("judgments_to_qrels", lambda **kw: rf.judgments_to_qrels(JUDGMENTS, **kw), ["threshold"]),
]  # fmt: skip

BAD_VALUES = st.sampled_from(
    [-1, 0, -0.5, 0.0, 1.0, 1.5, 2, 10**12, math.nan, math.inf, -math.inf, "x", "5", True, False, [], [0], [1, "a"],
     {}, {"a": 1}, b"1", 1j, object()]
)  # fmt: skip
CASES = [(name, call, param) for name, call, params in CALLS for param in params]


@pytest.mark.parametrize(("name", "call", "param"), CASES, ids=[f"{n}-{p}" for n, _, p in CASES])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=BAD_VALUES)
def test_a_bad_numeric_parameter_is_a_ragframe_error(name, call, param, value):
    try:
        call(**{param: value})
    except RagframeError as exc:
        assert param in str(exc) or name in str(exc), str(exc)
    except Exception as exc:  # the property: nothing else escapes
        pytest.fail(f"{name}({param}={value!r}) raised {type(exc).__name__}: {exc}")


@pytest.mark.parametrize(
    ("call", "param", "value"),
    [
        (lambda **kw: rf.summarize(SCORED, ci="bootstrap", **kw), "n_resamples", 0),
        (lambda **kw: rf.summarize(SCORED, ci="bootstrap", **kw), "seed", "x"),
        (lambda **kw: rf.compare(SCORED, OTHER, on="id", test="permutation", **kw), "n_resamples", True),
        (lambda **kw: rf.evaluate(RAG, **kw), "slice_rows", 0),
        (lambda **kw: rf.score_retrieval(RAG, **kw), "k", [5, 0]),
        (lambda **kw: rf.evaluate(RAG, **kw), "weights", {"faithfulness": -1.0}),
        (lambda **kw: rf.evaluate(RAG, **kw), "composite_threshold", math.nan),
    ],
)
def test_the_reported_cases_are_invalid_parameter_errors(call, param, value):
    with pytest.raises(rf.InvalidParameterError, match=param):
        call(**{param: value})


# ----------------------------------------------------------------------------- derived from the declarations

INVALID = [(family, spec.name, value) for family, spec in DECLARED for value in spec.metadata.get("invalid", ())]


def test_the_declarations_hold_invalid_values_to_test():
    """So that the derived cases below cannot be empty: the families declare bad values."""
    assert {family for family, _, _ in INVALID} >= {"heuristic", "retrieval", "judge"}


@pytest.mark.parametrize(("family", "option", "value"), INVALID, ids=[f"{f}-{o}-{v!r}" for f, o, v in INVALID])
def test_a_declared_invalid_value_is_refused_naming_the_option(family, option, value):
    metrics = {"heuristic": ["faithfulness"], "retrieval": ["mrr"], "judge": ["judge_faithfulness"],
               "citations": ["citation_recall"]}[family]  # fmt: skip
    extra = {"judge": _judge, "cache": False} if family == "judge" and option != "judge" else {}
    options = {**extra, option: value}
    if family == "heuristic" and option in _SEED_ONLY:
        options["compat"] = "rag-eval-node-ts"  # the seed's tuning options mean something only there
    with pytest.raises(rf.InvalidParameterError, match=f"evaluate: {option}"):
        rf.evaluate(RAG, metrics, **options)


_SEED_ONLY = {spec.name for _, spec in DECLARED if spec.metadata.get("seed_only")}


@pytest.mark.parametrize(("family", "spec"), DECLARED, ids=[f"{f}-{s.name}" for f, s in DECLARED])
def test_a_declared_default_passes_its_own_check(family, spec):
    check = spec.metadata.get("check")
    if check is not None:
        check(spec.default, spec.name)  # no error


@pytest.mark.parametrize("function", FUNCTIONS)
def test_a_generated_function_shows_its_family_options_and_refuses_the_others(function):
    own = set(inspect.signature(getattr(rf, function)).parameters)
    others = sorted({spec.name for _, spec in DECLARED} - own)
    assert others, function
    call = _family_call(function)
    for option in others:
        with pytest.raises(rf.InvalidParameterError, match=f"^{function}: unexpected option {option!r}"):
            call(**{option: None})
