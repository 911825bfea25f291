"""``rf.evaluate_run`` reads metric names as ``rf.evaluate`` and ``rf.score_retrieval`` do (issue 21).

Metric names (``"ndcg_at_k"``: every k), output names (``"ndcg_at_10"``: that cutoff only) and the
family name ``"retrieval"`` (the default set); anything else is an InvalidParameterError naming
``evaluate_run``. Its default k (5, 10, 100) differs from ``score_retrieval``'s (1, 5, 10) on purpose
(TREC runs are deep, wide frames are a retriever's top few chunks): documented, and pinned here.
"""

from __future__ import annotations

import inspect

import polars as pl
import pytest

import ragframe as rf
from ragframe.exceptions import InvalidParameterError

#: one query, ranking a b c d; a and c relevant (grade 2 and 1), z relevant and never retrieved
RUN = pl.DataFrame({"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "score": [4.0, 3.0, 2.0, 1.0]})
QRELS = pl.DataFrame({"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "z"], "relevance": [2, 0, 1, 1]})
WIDE = pl.DataFrame(
    {
        "retrieved_ids": [["a", "b", "c", "d"]],
        "relevance": pl.Series(
            [[{"id": "a", "grade": 2}, {"id": "b", "grade": 0}, {"id": "c", "grade": 1}, {"id": "z", "grade": 1}]],
            dtype=pl.List(pl.Struct({"id": pl.String, "grade": pl.Int64})),
        ),
    }
)
COUNTS = ["query_id", "num_ret", "num_rel", "num_rel_ret"]


def _measures(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.drop([c for c in [*COUNTS, "retrieved_ids", "relevance"] if c in frame.columns])


def test_an_output_name_is_accepted_and_equals_the_metric_at_that_k():
    """ndcg_at_2: DCG 2/log2(2) + 0 (b has grade 0); ideal grades 2, 1: 2 + 1/log2(3)."""
    out = rf.evaluate_run(RUN, QRELS, metrics=["ndcg_at_2"])
    assert out.columns == [*COUNTS, "ndcg_at_2"]
    assert out["ndcg_at_2"].item() == pytest.approx(2 / (2 + 1 / 1.5849625007211563), rel=1e-12)
    assert out.equals(rf.evaluate_run(RUN, QRELS, k=2, metrics=["ndcg_at_k"]))


def test_an_output_name_ignores_k_as_in_evaluate():
    out = rf.evaluate_run(RUN, QRELS, k=[1, 3], metrics=["precision_at_2", "ndcg_at_k", "mrr"])
    assert out.columns == [*COUNTS, "ndcg_at_1", "precision_at_2", "ndcg_at_3", "mrr"]
    assert out.row(0, named=True)["precision_at_2"] == 0.5
    assert rf.Evaluator(["precision_at_2", "ndcg_at_k", "mrr"], k=[1, 3]).outputs() == out.columns[4:]


@pytest.mark.parametrize(
    "metrics",
    [
        ["ndcg_at_10"],
        ["ndcg_at_k", "mrr"],
        "mrr",
        "retrieval",
        ["retrieval", "bpref", "precision_at_3"],
        ["iprec_at_recall_0_50", "rprec_mult_2_00", "utility", "average_precision_at_2"],
    ],
    ids=["output_name", "metric_names", "one_name", "family", "family_and_more", "trec_parameterised"],
)
def test_evaluate_run_accepts_what_score_retrieval_and_evaluate_accept(metrics):
    """The same names give the same columns, in the same order, with the same values."""
    k = [2, 10]
    long = _measures(rf.evaluate_run(RUN, QRELS, k=k, metrics=metrics))
    wide = _measures(rf.score_retrieval(WIDE, k=k, metrics=metrics))
    assert long.columns == wide.columns == _measures(rf.evaluate(WIDE, metrics, k=k)).columns
    assert long.row(0) == pytest.approx(wide.row(0), rel=1e-14, abs=1e-15)


def test_repeats_are_computed_once():
    out = rf.evaluate_run(RUN, QRELS, k=10, metrics=["ndcg_at_10", "ndcg_at_k", "mrr", "mrr"])
    assert out.columns == [*COUNTS, "ndcg_at_10", "mrr"]


@pytest.mark.parametrize(
    ("metrics", "match"),
    [
        (["faithfulness"], "unknown ranking metric 'faithfulness'"),
        (["bm25_ndcg_at_10"], "unknown ranking metric 'bm25_ndcg_at_10'"),
        (["ndcg_at_0"], "unknown ranking metric 'ndcg_at_0'"),
        (["heuristic"], "unknown ranking metric 'heuristic'"),
        ([], "non-empty list"),
        ([3], "metric names"),
        (42, "a name or a non-empty list"),
    ],
    ids=["other_family", "prefixed", "cutoff_zero", "other_family_name", "empty", "not_a_string", "not_a_list"],
)
def test_other_names_are_refused_naming_evaluate_run(metrics, match):
    with pytest.raises(InvalidParameterError, match=match) as error:
        rf.evaluate_run(RUN, QRELS, metrics=metrics)
    assert "evaluate_run" in str(error.value)


def test_default_k_differs_from_score_retrieval_as_documented():
    """evaluate_run: trec_eval's cutoffs 5, 10, 100 (deep runs); score_retrieval: 1, 5, 10 (a few chunks)."""
    assert inspect.signature(rf.evaluate_run).parameters["k"].default == (5, 10, 100)
    assert inspect.signature(rf.score_retrieval).parameters["k"].default == (1, 5, 10)
    assert "not\n        :func:`score_retrieval`'s 1, 5 and 10 on purpose" in rf.evaluate_run.__doc__
    out = rf.evaluate_run(RUN, QRELS, metrics=["precision_at_k"])
    assert out.columns[4:] == ["precision_at_5", "precision_at_10", "precision_at_100"]
    assert out.row(0)[4:] == (2 / 5, 2 / 10, 2 / 100)


def test_the_default_set_is_unchanged():
    assert rf.evaluate_run(RUN, QRELS).equals(rf.evaluate_run(RUN, QRELS, metrics="retrieval"))
    default = [m.name for m in rf.metrics.registry.metrics("retrieval") if m.by_default]
    assert rf.evaluate_run(RUN, QRELS, k=5).columns[4:] == rf.Evaluator(default, k=[5]).outputs()
