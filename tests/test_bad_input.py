"""Bad input gets a typed error naming the column, row and what was found; edge cases a documented result."""

from __future__ import annotations

import polars as pl
import pytest

import ragframe as rf
from ragframe.exceptions import InvalidParameterError, SchemaError

GRADED = pl.List(pl.Struct({"id": pl.String, "grade": pl.Int64}))


def wide(**columns):
    return pl.DataFrame(columns)


def test_missing_column_lists_available():
    df = wide(retrieved_ids=[["a"]], gold=[["a"]])
    with pytest.raises(SchemaError) as err:
        rf.score_retrieval(df)
    assert err.value.column == "relevant_ids"
    assert err.value.available == ["retrieved_ids", "gold"]
    assert "score_retrieval" in str(err.value) and "available columns" in str(err.value)


@pytest.mark.parametrize(
    ("values", "dtype"),
    [(["a"], pl.String), ([[1.5]], pl.List(pl.Float64)), ([1], pl.Int64), ([[True]], pl.List(pl.Boolean))],
)
def test_wrong_dtype_names_expected_and_found(values, dtype):
    df = pl.DataFrame({"retrieved_ids": pl.Series(values, dtype=dtype), "relevant_ids": [["a"]]})
    with pytest.raises(SchemaError) as err:
        rf.score_retrieval(df)
    assert err.value.column == "retrieved_ids"
    assert err.value.expected == "list[str] (or list[int])"
    assert err.value.found == str(dtype)


@pytest.mark.parametrize("column", ["retrieved_ids", "relevant_ids"])
def test_null_inside_a_list_names_the_row(column):
    df = wide(
        retrieved_ids=[["a"], ["b", None] if column == "retrieved_ids" else ["b"]],
        relevant_ids=[["a"], [None] if column == "relevant_ids" else ["b"]],
    )
    with pytest.raises(SchemaError) as err:
        rf.score_retrieval(df)
    assert (err.value.column, err.value.row) == (column, 1)


def test_null_and_empty_lists_have_documented_meaning():
    df = pl.DataFrame(
        {
            "retrieved_ids": [["a"], ["a"], None, []],
            "relevant_ids": [None, [], ["a"], ["a"]],
        },
        schema={"retrieved_ids": pl.List(pl.String), "relevant_ids": pl.List(pl.String)},
    )
    out = rf.score_retrieval(df, k=1, metrics=["precision_at_k", "mrr"])
    # not judged -> null; judged with nothing relevant -> 0; nothing retrieved (null) -> null; empty -> 0
    assert out["precision_at_1"].to_list() == [None, 0.0, None, 0.0]
    assert out["mrr"].to_list() == [None, 0.0, None, 0.0]


def test_empty_frame_returns_empty_outputs():
    df = pl.DataFrame(schema={"retrieved_ids": pl.List(pl.String), "relevant_ids": pl.List(pl.String)})
    out = rf.score_retrieval(df, k=[1, 2], metrics=["ndcg_at_k"])
    assert out.columns == ["retrieved_ids", "relevant_ids", "ndcg_at_1", "ndcg_at_2"]
    assert out.height == 0


@pytest.mark.parametrize("k", [0, -1, [5, 0], [], "5", True, 2.5, [1, None]])
def test_bad_k_is_a_typed_error_naming_k(k):
    with pytest.raises(InvalidParameterError, match="k"):
        rf.score_retrieval(wide(retrieved_ids=[["a"]], relevant_ids=[["a"]]), k=k)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metrics": ["ndcg@10"]}, "unknown metric"),
        ({"metrics": []}, "metrics is empty"),
        ({"relevance_level": 1.5}, "relevance_level"),
        ({"match": "fuzzy"}, "match"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        rf.score_retrieval(wide(retrieved_ids=[["a"]], relevant_ids=[["a"]]), **kwargs)


def test_unsupported_frame_type():
    with pytest.raises(InvalidParameterError, match="expected a polars DataFrame"):
        rf.score_retrieval({"retrieved_ids": [["a"]]})


def test_repeated_retrieved_id_counts_once_at_first_position():
    df = wide(retrieved_ids=[["a", "a", "b"]], relevant_ids=[["a", "b"]])
    out = rf.score_retrieval(df, k=[2, 3], metrics=["precision_at_k", "recall_at_k"]).row(0, named=True)
    assert out["precision_at_2"] == 0.5  # the copy of "a" wastes slot 2
    assert out["recall_at_2"] == 0.5
    assert out["precision_at_3"] == pytest.approx(2 / 3)
    assert out["recall_at_3"] == 1.0


def test_repeated_relevant_id_counts_once():
    out = rf.score_retrieval(wide(retrieved_ids=[["a"]], relevant_ids=[["a", "a"]]), k=1, metrics=["recall_at_k"])
    assert out["recall_at_1"].to_list() == [1.0]


def test_conflicting_grades_for_one_document():
    df = pl.DataFrame(
        {
            "retrieved_ids": [["a"], ["a"]],
            "relevance": [[{"id": "a", "grade": 1}], [{"id": "a", "grade": 1}, {"id": "a", "grade": 2}]],
        },
        schema={"retrieved_ids": pl.List(pl.String), "relevance": GRADED},
    )
    with pytest.raises(SchemaError) as err:
        rf.score_retrieval(df)
    assert (err.value.column, err.value.row) == ("relevance", 1)
    assert "grades [1, 2]" in str(err.value)


def test_integer_ids_are_compared_as_decimal_strings():
    ints = pl.DataFrame({"retrieved_ids": [[3, 1, 2]], "relevant_ids": [[1]]})
    strs = pl.DataFrame({"retrieved_ids": [["3", "1", "2"]], "relevant_ids": [["1"]]})
    assert rf.score_retrieval(ints)["mrr"].to_list() == rf.score_retrieval(strs)["mrr"].to_list() == [0.5]


def test_scores_length_mismatch_and_nan():
    df = pl.DataFrame(
        {
            "retrieved_ids": [["a", "b"], ["a"]],
            "retrieved_scores": [[1.0, 2.0], [1.0, 0.5]],
            "relevant_ids": [["a"], ["a"]],
        }
    )
    with pytest.raises(SchemaError) as err:
        rf.score_retrieval(df)
    assert (err.value.column, err.value.row) == ("retrieved_scores", 1)
    df = pl.DataFrame(
        {"retrieved_ids": [["a", "b"]], "retrieved_scores": [[1.0, float("nan")]], "relevant_ids": [["a"]]}
    )
    with pytest.raises(SchemaError, match="NaN"):
        rf.score_retrieval(df)


def test_scores_rank_with_trec_eval_tie_rule():
    df = pl.DataFrame(
        {"retrieved_ids": [["a", "b", "c"]], "retrieved_scores": [[1.0, 3.0, 3.0]], "relevant_ids": [["b"]]}
    )
    # order: c (3.0, "c" > "b"), b (3.0), a
    assert rf.score_retrieval(df, metrics=["mrr"])["mrr"].to_list() == [0.5]
    assert rf.score_retrieval(df, metrics=["mrr"], retrieved_scores=None)["mrr"].to_list() == [0.5]
    df2 = df.with_columns(retrieved_scores=pl.lit([1.0, 3.0, 2.0]))
    assert rf.score_retrieval(df2, metrics=["mrr"])["mrr"].to_list() == [1.0]


def test_both_judgment_kinds_explicitly_named_is_ambiguous():
    df = pl.DataFrame({"retrieved_ids": [["a"]], "relevant_ids": [["a"]], "relevance": [[{"id": "a", "grade": 2}]]})
    for kwargs in ({"relevant_ids": "relevant_ids"}, {}):  # named or not: ambiguous, never silently ignored
        with pytest.raises(SchemaError, match="both") as err:
            rf.score_retrieval(df, **kwargs)
        assert err.value.function == "score_retrieval" and err.value.column == "relevant_ids"
    # the documented ways to choose
    assert rf.score_retrieval(df.drop("relevant_ids"), k=1, metrics=["ndcg_at_k"])["ndcg_at_1"].to_list() == [1.0]
    assert rf.score_retrieval(df, k=1, metrics=["ndcg_at_k"], relevance=None)["ndcg_at_1"].to_list() == [1.0]


def test_graded_judgments_wrong_struct():
    df = pl.DataFrame({"retrieved_ids": [["a"]], "relevance": [[{"doc": "a", "rel": 1}]]})
    with pytest.raises(SchemaError) as err:
        rf.score_retrieval(df)
    assert err.value.expected == "list[struct{id: str, grade: int}]"


# ----------------------------------------------------------------------------- long tables


def run_qrels():
    run = pl.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
    qrels = pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["b", "x"], "relevance": [1, 1]})
    return run, qrels


def test_evaluate_run_missing_column_and_bad_types():
    run, qrels = run_qrels()
    with pytest.raises(SchemaError) as err:
        rf.evaluate_run(run.rename({"score": "sim"}), qrels)
    assert err.value.column == "score" and "sim" in err.value.available
    assert rf.evaluate_run(run.rename({"score": "sim"}), qrels, score="sim").height == 2
    with pytest.raises(SchemaError, match="expected int"):
        rf.evaluate_run(run, qrels.with_columns(pl.col("relevance").cast(pl.String)))
    with pytest.raises(SchemaError) as err:
        rf.evaluate_run(run.with_columns(query_id=pl.Series(["q1", None, "q2"])), qrels)
    assert (err.value.column, err.value.row) == ("query_id", 1)
    with pytest.raises(SchemaError, match="expected a number"):
        rf.evaluate_run(run.with_columns(pl.col("score").cast(pl.String)), qrels)
    with pytest.raises(InvalidParameterError, match="max_docs"):
        rf.evaluate_run(run, qrels, max_docs=0)


def test_evaluate_run_unjudged_queries_are_null_and_left_out_of_means():
    run, qrels = run_qrels()
    run = pl.concat([run, pl.DataFrame({"query_id": ["q9"], "doc_id": ["a"], "score": [1.0]})])
    per_query = rf.evaluate_run(run, qrels, k=1, metrics=["precision_at_k"])
    assert per_query["query_id"].to_list() == ["q1", "q2", "q9"]
    assert per_query["precision_at_1"].to_list() == [0.0, 0.0, None]
    summary = rf.run_summary(per_query)
    assert summary["num_q"].item() == 2 and summary["num_ret"].item() == 3


def test_evaluate_run_complete_adds_missing_judged_queries_as_zero():
    run, qrels = run_qrels()
    qrels = pl.concat([qrels, pl.DataFrame({"query_id": ["q3"], "doc_id": ["z"], "relevance": [1]})])
    assert rf.evaluate_run(run, qrels)["query_id"].to_list() == ["q1", "q2"]
    full = rf.evaluate_run(run, qrels, complete=True, k=1, metrics=["mrr"])
    assert full["query_id"].to_list() == ["q1", "q2", "q3"]
    assert full["mrr"].to_list() == [0.5, 0.0, 0.0]
    assert full["num_ret"].to_list() == [2, 1, 0]


def test_evaluate_run_empty_inputs():
    run = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64})
    qrels = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})
    out = rf.evaluate_run(run, qrels, k=5)
    assert out.height == 0 and "ndcg_at_5" in out.columns
    assert rf.run_summary(out)["num_q"].item() == 0


def test_malformed_trec_files(tmp_path):
    bad_run = tmp_path / "run.txt"
    bad_run.write_text("q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2\n")
    with pytest.raises(SchemaError, match="malformed line 2"):
        rf.read_trec_run(bad_run)
    bad_score = tmp_path / "run2.txt"
    bad_score.write_text("q1 Q0 d1 1 high tag\n")
    with pytest.raises(SchemaError, match="line 1") as err:
        rf.read_trec_run(bad_score)
    assert err.value.column == "score" and err.value.found == "'high'"
    bad_qrels = tmp_path / "qrels.txt"
    bad_qrels.write_text("q1 0 d1 1\nq1 0 d2 x\n")
    with pytest.raises(SchemaError, match="line 2"):
        rf.read_qrels(bad_qrels)
    with pytest.raises(rf.InputFileError, match="read_qrels"):
        rf.read_qrels(tmp_path / "nope.txt")


def test_duplicate_qrels_lines():
    run, qrels = run_qrels()
    same = pl.concat([qrels, qrels.head(1)])
    assert rf.evaluate_run(run, same)["num_rel"].to_list() == [1, 1]
    conflicting = pl.concat([qrels, qrels.head(1).with_columns(relevance=pl.lit(2, dtype=pl.Int64))])
    with pytest.raises(SchemaError) as err:
        rf.evaluate_run(run, conflicting)
    assert err.value.row == 2 and err.value.column == "doc_id"


def test_repeated_judgments_are_found_in_any_chunk():
    import numpy as np

    from ragframe.kernels.ranking import Judgments, rank_measures

    run_doc = pl.Series(["a", "b"] * 6)
    counts = np.full(6, 2)
    judged = np.ones(6, dtype=bool)
    unique = Judgments(np.arange(6), pl.Series(["a"] * 6), np.ones(6, dtype=np.int64), judged)
    values = rank_measures(run_doc, counts, unique, ks=[1], measures=["mrr"], chunks=3, check_unique=True)
    assert values["mrr"].tolist() == [1.0] * 6
    # query 5 (the last chunk) judges "b" twice
    repeated = Judgments(np.r_[np.arange(6), 5, 5], pl.Series(["a"] * 6 + ["b", "b"]), np.ones(8, np.int64), judged)
    # found on the last chunk's thread: no result, the caller dedupes (no exception as control flow)
    assert rank_measures(run_doc, counts, repeated, ks=[1], measures=["mrr"], chunks=3, check_unique=True) is None
    assert rank_measures(run_doc, counts, repeated, ks=[1], measures=["mrr"], chunks=1, check_unique=True) is None
    # without the check the caller promises unique judgments
    assert rank_measures(run_doc, counts, unique, ks=[1], measures=["mrr"], chunks=3)["mrr"].tolist() == [1.0] * 6


# ----------------------------------------------------------------------------- relevance_level


def test_relevance_level_zero_and_one_by_hand():
    # ranked a, b, c, d; a graded 0, b -1, c 2, e 0 (not retrieved), d unjudged
    run = pl.DataFrame({"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "score": [4.0, 3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "e"], "relevance": [0, -1, 2, 0]})
    metrics = ["precision_at_k", "mrr", "average_precision", "r_precision", "ndcg"]
    zero = rf.evaluate_run(run, qrels, k=[1, 3], metrics=metrics, relevance_level=0).row(0, named=True)
    # level 0 (trec_eval -l0): relevant = judged with grade >= 0 -> a, c, e; never b (grade -1) or d (unjudged)
    assert (zero["num_rel"], zero["num_rel_ret"]) == (3, 2)
    assert (zero["precision_at_1"], zero["precision_at_3"], zero["mrr"]) == (1.0, pytest.approx(2 / 3), 1.0)
    assert zero["average_precision"] == pytest.approx((1 / 1 + 2 / 3) / 3)
    assert zero["r_precision"] == pytest.approx(2 / 3)
    one = rf.evaluate_run(run, qrels, k=[1, 3], metrics=metrics, relevance_level=1).row(0, named=True)
    assert (one["num_rel"], one["num_rel_ret"], one["precision_at_1"], one["mrr"]) == (1, 1, 0.0, pytest.approx(1 / 3))
    assert one["average_precision"] == pytest.approx(1 / 3) and one["r_precision"] == 0.0
    # gains are the grades whatever the level: DCG 2/log2(4) = 1 against the ideal 2/log2(2) = 2
    assert zero["ndcg"] == one["ndcg"] == pytest.approx(0.5)


@pytest.mark.parametrize("level", [-1, -2])
def test_negative_relevance_level_is_refused(level):
    run, qrels = run_qrels()
    with pytest.raises(InvalidParameterError, match="relevance_level must be an int >= 0"):
        rf.evaluate_run(run, qrels, relevance_level=level)
    with pytest.raises(InvalidParameterError, match="relevance_level must be an int >= 0"):
        rf.score_retrieval(wide(retrieved_ids=[["a"]], relevant_ids=[["a"]]), relevance_level=level)
    with pytest.raises(InvalidParameterError, match="relevance_level must be an int >= 0"):
        rf.retrieval_metrics(["a"], {"a": -1}, relevance_level=level)


# ----------------------------------------------------------------------------- silent coercions


def test_float_grades_whole_numbers_accepted_fractions_refused():
    run, qrels = run_qrels()
    as_float = qrels.with_columns(pl.col("relevance").cast(pl.Float64))
    assert rf.evaluate_run(run, as_float).equals(rf.evaluate_run(run, qrels))  # 1.0 is grade 1
    fractional = qrels.with_columns(relevance=pl.Series([1.0, 1.5]))
    with pytest.raises(SchemaError, match="not a whole number") as err:
        rf.evaluate_run(run, fractional)
    assert (err.value.column, err.value.row, err.value.found) == ("relevance", 1, "1.5")
    with pytest.raises(SchemaError, match="not a whole number"):
        rf.evaluate_run(run, qrels.with_columns(relevance=pl.Series([1.0, float("nan")])))
    # wide graded judgments: float grades follow the same rule (row named, never truncated)
    graded = pl.List(pl.Struct({"id": pl.String, "grade": pl.Float64}))
    df = pl.DataFrame(
        {
            "retrieved_ids": [["a", "b"], ["a", "b"]],
            "relevance": pl.Series(
                [[{"id": "b", "grade": 2.0}], [{"id": "a", "grade": 0.0}, {"id": "b", "grade": 2.5}]]
            ),
        }
    ).with_columns(pl.col("relevance").cast(graded))
    ok = rf.score_retrieval(df.head(1), k=1, metrics=["mrr"])
    assert ok["mrr"].to_list() == [0.5]
    with pytest.raises(SchemaError, match="not a whole number") as err:
        rf.score_retrieval(df, k=1, metrics=["mrr"])
    assert (err.value.column, err.value.row, err.value.found) == ("relevance", 1, "2.5")


def test_retrieval_metrics_grades_are_never_truncated():
    assert rf.retrieval_metrics(["a", "b"], {"b": 2.0}, k=1)["mrr"] == 0.5
    with pytest.raises(SchemaError, match="not a whole number") as err:
        rf.retrieval_metrics(["a", "b"], {"a": 0.7, "b": 1}, k=1)  # int(0.7) would make "a" unjudged-like 0
    assert err.value.column == "relevant" and "0.7 for id 'a'" in str(err.value)
    for bad in (True, "2", None, float("inf")):
        with pytest.raises(SchemaError, match="grade"):
            rf.retrieval_metrics(["a"], {"a": bad})


@pytest.mark.parametrize(
    ("retrieved", "relevant", "name"),
    [
        ("ab", ["a"], "retrieved"),  # a string would read as ["a", "b"]
        (["a", "b"], "b", "relevant"),
        (b"ab", ["a"], "retrieved"),
        (5, ["a"], "retrieved"),
        ({"a": 1}, ["a"], "retrieved"),
        (["a", None], ["a"], "retrieved"),
        (["a", 1], ["a"], "retrieved"),
        (["a", True], ["a"], "retrieved"),
        (["a"], [1.5], "relevant"),
    ],
)
def test_retrieval_metrics_refuses_what_is_not_a_list_of_ids(retrieved, relevant, name):
    with pytest.raises(InvalidParameterError, match=f"retrieval_metrics: {name} must be a list of ids"):
        rf.retrieval_metrics(retrieved, relevant)


def test_retrieval_metrics_bad_scores_and_k():
    with pytest.raises(InvalidParameterError, match="scores must be a list of 2 numbers"):
        rf.retrieval_metrics(["a", "b"], ["a"], scores=[1.0])
    with pytest.raises(InvalidParameterError, match="scores must be a list"):
        rf.retrieval_metrics(["a", "b"], ["a"], scores="12")
    with pytest.raises(InvalidParameterError, match="retrieval_metrics: k must be"):
        rf.retrieval_metrics(["a"], ["a"], k=0)
    assert rf.retrieval_metrics(["a", "b"], ["a"], k=[1, 2], scores=[1, 2])["mrr"] == 0.5  # b ranks first


def test_int_and_str_ids_never_match_by_text():
    # list[int] against list[str]: refused, naming both columns and dtypes
    df = pl.DataFrame({"retrieved_ids": [[3, 1, 2]], "relevant_ids": [["1"]]})
    with pytest.raises(SchemaError, match="ids of different types") as err:
        rf.score_retrieval(df)
    message = str(err.value)
    assert "'retrieved_ids' holds Int64 ids" in message and "'relevant_ids' String ids" in message
    assert err.value.column == "relevant_ids"
    graded = pl.DataFrame({"retrieved_ids": [["1"]], "relevance": [[{"id": 1, "grade": 1}]]})
    with pytest.raises(SchemaError, match="'retrieved_ids' holds String ids, 'relevance' Int64 ids"):
        rf.score_retrieval(graded)
    # integer widths are one kind
    widths = pl.DataFrame({"retrieved_ids": [[3, 1]], "relevant_ids": [[1]]}).with_columns(
        pl.col("relevant_ids").cast(pl.List(pl.Int32))
    )
    assert rf.score_retrieval(widths, k=1, metrics=["mrr"])["mrr"].to_list() == [0.5]
    # long tables: the run's and the qrels' ids
    run, qrels = run_qrels()
    int_run = pl.DataFrame({"query_id": ["q1"], "doc_id": [7], "score": [1.0]})
    with pytest.raises(SchemaError, match="the run's 'doc_id' holds Int64 ids, the qrels' 'doc_id' String ids"):
        rf.evaluate_run(int_run, qrels)
    with pytest.raises(SchemaError, match="'query_id'") as err:
        rf.evaluate_run(run, qrels.with_columns(query_id=pl.Series([1, 2])))
    assert err.value.column == "query_id"
    # retrieval_metrics
    with pytest.raises(SchemaError, match="retrieved holds Int64 ids, relevant String ids"):
        rf.retrieval_metrics([1, 2], ["1"])
    assert rf.retrieval_metrics([1, 2], {2: 1}, k=1)["mrr"] == 0.5
    assert rf.retrieval_metrics([], ["a"], k=1)["mrr"] == 0.0


def test_judgment_column_rule():
    from ragframe.metrics.retrieval_inputs import judgment_column

    both = ["retrieved_ids", "relevant_ids", "relevance"]
    # both kinds present: ambiguous whether or not relevant_ids= was named
    for named in (None, "relevant_ids"):
        with pytest.raises(SchemaError, match="both 'relevance' \\(graded\\) and 'relevant_ids' \\(binary\\)") as err:
            judgment_column(both, relevant_ids=named, relevance="relevance")
        assert err.value.column == "relevant_ids" and "relevance=None" in str(err.value)
    assert judgment_column(both, relevant_ids=None, relevance=None) == ("relevant_ids", False)
    assert judgment_column(["relevance"], relevant_ids=None, relevance="relevance") == ("relevance", True)
    assert judgment_column(["gold"], relevant_ids="gold", relevance="relevance") == ("gold", False)
    assert judgment_column(["relevant_ids"], relevant_ids=None, relevance="relevance") == ("relevant_ids", False)
    assert judgment_column(both, relevant_ids=None, relevance="relevance", contains=True) == ("gold_documents", False)


def test_a_repeated_column_name_in_pandas_or_arrow_is_a_schema_error():
    pd = pytest.importorskip("pandas")
    import pyarrow as pa

    frame = pd.DataFrame([[["a"], ["a"], ["b"]]], columns=["retrieved_ids", "relevant_ids", "relevant_ids"])
    table = pa.Table.from_arrays([pa.array([["a"]]), pa.array([["a"]]), pa.array([["b"]])], names=["x", "x", "y"])
    for given, column in ((frame, "relevant_ids"), (table, "x")):
        with pytest.raises(SchemaError, match="repeated column name") as err:
            rf.score_retrieval(given)
        assert err.value.column == column
