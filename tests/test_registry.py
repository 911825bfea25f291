"""The metric registry, the one entry point (``rf.evaluate``) and the run configuration (``rf.Evaluator``).

The bad-input part iterates every registered metric (``metric_cases.CASES``): a metric
registered later joins it without an edit here.
"""

from __future__ import annotations

import pickle

import numpy as np
import polars as pl
import pytest
from frames import make_frame
from metric_cases import CASES
from polars.testing import assert_frame_equal

import ragframe as rf
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.metrics.heuristic import HEURISTIC_METRICS
from ragframe.metrics.registry import metric_for_column, parse_column, passed_column, score_columns
from ragframe.metrics.retrieval import RETRIEVAL_METRICS

RAG = pl.DataFrame(
    {
        "id": [1, 2],
        "question": ["What is the capital of France?", "Who wrote Hamlet?"],
        "answer": ["Paris is the capital of France.", "Hamlet was written by Shakespeare."],
        "contexts": [["Paris is the capital and largest city of France."], ["Shakespeare wrote Hamlet."]],
        "ground_truth": ["Paris", "William Shakespeare"],
        "retrieved_ids": [["d3", "d1", "d7"], ["d2", "d9"]],
        "relevant_ids": [["d1", "d4"], ["d9"]],
    }
)


# ----------------------------------------------------------------------------- the registry


def test_list_metrics_describes_every_builtin_metric():
    table = rf.list_metrics()
    assert {"name", "family", "inputs", "higher_is_better", "threshold", "description"} <= set(table.columns)
    assert set(HEURISTIC_METRICS) | set(RETRIEVAL_METRICS) <= set(table["name"])
    row = table.filter(pl.col("name") == "faithfulness").row(0, named=True)
    assert (row["family"], row["inputs"], row["threshold"], row["higher_is_better"]) == (
        "heuristic",
        ["answer", "contexts"],
        0.4,  # the default method's (0.7 under compat="rag-eval-node-ts")
        True,
    )
    assert table.filter(pl.col("family") == "retrieval")["threshold"].null_count() == len(RETRIEVAL_METRICS)
    assert table["description"].str.len_chars().min() > 10


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        ("ndcg_at_10", ("", "ndcg_at_k", 10)),
        ("bm25_ndcg_at_10", ("bm25_", "ndcg_at_k", 10)),
        ("run.a/mrr", ("run.a/", "mrr", None)),
        ("r_precision", ("", "r_precision", None)),
        ("context_recall", ("", "context_recall", None)),
        ("v2-hallucination_rate", ("v2-", "hallucination_rate", None)),
        ("composite_score", ("", None, None)),
    ],
)
def test_score_columns_are_parsed_through_the_registry(column, expected):
    parsed = parse_column(column)
    assert (parsed.prefix, parsed.metric.name if parsed.metric else None, parsed.k) == expected


@pytest.mark.parametrize(
    "column", ["xmrr", "mrr_passed", "faithfulness_signals", "ndcg_at_0", "ndcg_at_k", "num_ret", "id", "recall_at_"]
)
def test_non_scores_are_never_taken_for_scores(column):
    assert parse_column(column) is None
    assert score_columns([column]) == []


def test_passed_column_follows_the_prefix():
    assert passed_column("bm25_composite_score") == "bm25_passed"
    assert passed_column("bm25_faithfulness") == "bm25_faithfulness_passed"
    assert metric_for_column("bm25_recall_at_100").name == "recall_at_k"


def test_registered_custom_metric_joins_evaluate_and_the_statistics():
    def answer_words(view):
        return view["answer"].str.count_matches(r"\S+").cast(pl.Float64)

    # a count: unbounded (the default bounds (0, 1) would make rf.summarize refuse its values)
    metric = rf.Metric("answer_words", "custom", ("answer",), "Words in the answer.", kernel=answer_words, bounds=None)
    rf.register_metric(metric)
    try:
        out = rf.evaluate(RAG.rename({"answer": "response"}), ["answer_words"], answer="response", prefix="a_")
        assert out["a_answer_words"].to_list() == [6.0, 5.0]
        assert "a_answer_words" in score_columns(out.columns)
        assert "answer_words" in rf.list_metrics()["name"].to_list()
        summary = rf.summarize(out)
        assert summary["metric"].to_list() == ["a_answer_words"]
        assert summary["mean"][0] == pytest.approx(5.5)
    finally:
        rf.unregister_metric("answer_words")
    assert "answer_words" not in rf.list_metrics()["name"].to_list()


@pytest.mark.parametrize(
    ("metric", "match"),
    [
        (rf.Metric("ndcg", "custom", ("answer",), "clash"), "already registered"),
        (rf.Metric("Bad-Name", "custom", ("answer",), "x"), "lower_snake_case"),
        (rf.Metric("x_at_k", "custom", ("answer",), "x"), "cutoff"),
        (rf.Metric("retrieval", "custom", ("answer",), "x"), "reserved"),
        (rf.Metric("toy", "nosuchfamily", ("answer",), "x"), "family"),
    ],
)
def test_register_metric_refuses_bad_metrics(metric, match):
    with pytest.raises(InvalidParameterError, match=match):
        rf.register_metric(metric)


def test_builtin_metrics_cannot_be_unregistered():
    with pytest.raises(InvalidParameterError, match="built in"):
        rf.unregister_metric("mrr")


# ----------------------------------------------------------------------------- one entry point


def test_evaluate_mixes_families_and_accepts_output_and_family_names():
    out = rf.evaluate(RAG, ["faithfulness", "ndcg_at_10", "mrr"])
    assert out.columns[RAG.width :] == [
        "faithfulness",
        "faithfulness_passed",
        "ndcg_at_10",
        "mrr",
        "composite_score",
        "passed",
    ]
    # the same numbers as each family alone
    alone = rf.score_retrieval(RAG, k=10, metrics=["ndcg_at_k", "mrr"])
    assert_frame_equal(out.select("ndcg_at_10", "mrr"), alone.select("ndcg_at_10", "mrr"))
    assert out["mrr"].to_list() == [0.5, 0.5]  # hand: d1 at rank 2; d9 at rank 2
    # composite covers only the metrics with thresholds (faithfulness here)
    assert_frame_equal(out.select(pl.col("faithfulness").alias("composite_score")), out.select("composite_score"))
    families = rf.evaluate(RAG, ["retrieval"], k=[3]).columns[RAG.width :]
    assert families[:2] == ["precision_at_3", "recall_at_3"] and "composite_score" not in families


def test_thresholds_on_ranking_outputs_add_pass_flags_and_join_the_composite():
    out = rf.evaluate(RAG, ["mrr", "ndcg_at_3"], thresholds={"mrr": 0.5, "ndcg_at_3": 0.9}, weights={"mrr": 3})
    assert out["mrr_passed"].to_list() == [True, True]
    ndcg = out["ndcg_at_3"].to_numpy()
    assert out["ndcg_at_3_passed"].to_list() == list(ndcg >= 0.9)
    np.testing.assert_allclose(out["composite_score"].to_numpy(), (3 * 0.5 + ndcg) / 4)
    assert out["passed"].to_list() == [False, False]  # ndcg_at_3 below 0.9 in both rows


def test_auto_scores_what_the_columns_allow():
    out = rf.evaluate(RAG.select("id", "retrieved_ids", "relevant_ids"), "auto", k=[1])
    assert "mrr" in out.columns and "faithfulness" not in out.columns
    with pytest.raises(SchemaError, match="no metric"):
        rf.evaluate(RAG.select("id"), "auto")


def test_missing_input_names_the_metric_and_the_column():
    with pytest.raises(SchemaError) as err:
        rf.evaluate(RAG.drop("contexts"), ["answer_relevance", "faithfulness"])
    assert err.value.column == "contexts" and "faithfulness" in str(err.value)


def test_prefix_on_every_score_function():
    out = rf.score_faithfulness(RAG, prefix="v1_", explain=True)
    assert out.columns[RAG.width :] == ["v1_faithfulness", "v1_faithfulness_passed", "v1_faithfulness_signals"]
    assert_frame_equal(
        out["v1_faithfulness"].rename("faithfulness").to_frame(), rf.score_faithfulness(RAG).select("faithfulness")
    )
    with pytest.raises(InvalidParameterError, match="prefix"):
        rf.score_retrieval(RAG, prefix="bm25")  # no separator: its columns would not be recognisable


def test_score_retrieval_refuses_other_families():
    with pytest.raises(InvalidParameterError, match="not a ranking metric"):
        rf.score_retrieval(RAG, metrics=["faithfulness"])


# ----------------------------------------------------------------------------- the run configuration


def test_evaluator_is_immutable_picklable_and_equal_after_a_round_trip():
    ev = rf.Evaluator(["faithfulness", "mrr"], k=[5, 10], thresholds={"mrr": 0.2}, answer="response")
    again = pickle.loads(pickle.dumps(ev))
    assert again == ev and hash(again) == hash(ev)
    assert rf.Evaluator.from_dict(ev.to_dict()) == ev
    with pytest.raises(AttributeError):
        ev.metrics = ("mrr",)
    assert ev.replace(k=[3]) != ev and ev.option("k") == [5, 10]
    assert ev.outputs() == ["faithfulness", "mrr"]


def test_evaluator_checks_everything_at_construction():
    with pytest.raises(InvalidParameterError, match="unknown option"):
        rf.Evaluator(["mrr"], kk=3)
    with pytest.raises(InvalidParameterError, match="unknown metric"):
        rf.Evaluator(["ndcg@10"])
    with pytest.raises(InvalidParameterError, match="weights"):
        rf.Evaluator(weights={"faithfulness": -1})
    with pytest.raises(InvalidParameterError, match="thresholds names unknown metric"):
        rf.Evaluator(thresholds={"faithfulnes": 0.5})


def test_evaluator_evaluate_equals_evaluate():
    ev = rf.Evaluator(["heuristic", "retrieval"], k=[2], explain=True)
    assert_frame_equal(ev.evaluate(RAG), rf.evaluate(RAG, ["heuristic", "retrieval"], k=[2], explain=True))
    assert_frame_equal(RAG.pipe(ev), ev.evaluate(RAG))


# ----------------------------------------------------------------------------- bad input, for every metric


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_metric_names_a_missing_input_column(case):
    frame = make_frame(case.inputs, 3, 1)
    for column in case.inputs:
        if column == "retrieved_scores":  # optional: without it, list order ranks
            assert case.score(frame.drop(column)).height == 3
            continue
        with pytest.raises(SchemaError) as err:
            case.score(frame.drop(column))
        # without graded judgments the binary ones are read, unless a metric counts judged non-relevant documents
        inputs = dict(rf.list_metrics().select("name", "inputs").iter_rows())
        graded_only = any("relevance" in inputs.get(name, []) for name in case.metrics)
        expected = "relevant_ids" if column == "relevance" and not graded_only else column
        assert err.value.column == expected and err.value.available == [c for c in frame.columns if c != column]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_metric_names_a_wrong_dtype(case):
    frame = make_frame(case.inputs, 3, 1)
    for column in case.inputs:
        with pytest.raises(SchemaError) as err:
            case.score(frame.with_columns(pl.lit(1.5).alias(column)))
        assert err.value.column == column and err.value.found == "Float64", column


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize(("option", "value"), [("prefix", 3), ("composite_threshold", "high"), ("no_such_option", 1)])
def test_every_metric_refuses_bad_options(case, option, value):
    with pytest.raises(InvalidParameterError, match=option):
        rf.evaluate(make_frame(case.inputs, 2, 0), list(case.metrics), **{**case.options, option: value})


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_metric_refuses_a_non_frame(case):
    with pytest.raises(InvalidParameterError, match="expected a polars DataFrame"):
        case.score({c: [] for c in case.inputs})


def test_metadata_columns_that_parse_are_not_taken_for_scores_given_a_schema():
    """The bundled ARES log's human labels (Int8) end like metric names; only float columns are scores."""
    from ragframe.datasets import example_rag_log

    log = pl.read_parquet(example_rag_log())
    assert "human_faithfulness" in [c for c in log.columns if parse_column(c) is not None]  # the name parses
    assert score_columns(log.schema) == []
    scored = rf.evaluate(log, ["faithfulness"], prefix="v2_")
    assert rf.summarize(scored)["metric"].to_list() == ["v2_faithfulness", "v2_composite_score"]
    per_query = pl.DataFrame(
        {"query_id": ["a", "b"], "mrr": [1.0, 0.5], "latency": [3.0, 5.0], "bm25_ndcg": [0.5, 1.0]}
    )
    assert rf.run_summary(per_query).columns == ["num_q", "mrr", "bm25_ndcg"]  # latency is not a measure


def test_an_unbounded_thresholded_metric_unclips_the_composite_interval():
    from ragframe.stats.summary import score_bounds

    assert score_bounds("composite_score") == (0.0, 1.0)
    rf.register_metric(
        rf.Metric("answer_chars", "custom", ("answer",), "Characters.", kernel=_chars, bounds=None, threshold=10.0)
    )
    try:
        assert score_bounds("composite_score") is None  # the composite can now exceed 1: no clipping
    finally:
        rf.unregister_metric("answer_chars")
    assert score_bounds("composite_score") == (0.0, 1.0)


def _chars(view):
    return view["answer"].str.len_chars().cast(pl.Float64)
