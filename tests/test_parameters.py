"""Every public function's every numeric parameter: a wrong type or an out-of-range value is a RagframeError.

The property: whatever value a caller passes, ragframe either accepts it or raises a
:class:`~ragframe.exceptions.RagframeError` (never an IndexError, a TypeError from inside
NumPy, a ZeroDivisionError, ...). Hypothesis draws the values; the table below names each
function, a valid call and its numeric parameters.
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragframe as rf
from ragframe.exceptions import RagframeError

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

#: (name, call taking the keyword overrides, numeric parameter names)
CALLS = [
    ("evaluate", lambda **kw: rf.evaluate(RAG, ["faithfulness", "context_relevance", "mrr"], **kw),
     ["composite_threshold", "slice_rows", "k", "relevance_level", "claim_support_threshold",
      "chunk_relevance_threshold", "ngram_sizes", "ngram_weights"]),
    ("score_faithfulness", lambda **kw: rf.score_faithfulness(RAG, **kw), ["threshold", "slice_rows"]),
    ("score_retrieval", lambda **kw: rf.score_retrieval(RAG, **kw), ["k", "relevance_level"]),
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
