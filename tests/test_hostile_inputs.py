"""Issue 19, "no crash on a plausible input": each case a correct result or a typed one-line error.

One test (or parametrized id) per case of the issue, per path where the case says "every path",
so that none can come back. CLI cases check exit code 3 and a single line on stderr.
"""

from __future__ import annotations

import argparse
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from judge_server import verdict_reply
from test_streaming import make_log

import ragframe as rf
from ragframe.cli.main import build_parser, main
from ragframe.distributed.scoring import BatchScorer
from ragframe.exceptions import SkippedMetricWarning
from ragframe.io.row_checks import conform_null_types, row_problems

# ----------------------------------------------------------------------------- helpers

#: A frame whose scores are known by hand: faithfulness 0.8 (4 of the answer's 5 bigrams are in the
#: context, ragframe's docstring example), mrr 0.5 (the relevant id at rank 2), ndcg_at_2 1/log2(3).
TEXT = {
    "question": ["What is the capital of France?"],
    "answer": ["Paris is the capital of France."],
    "contexts": [["Paris is the capital and largest city of France."]],
    "ground_truth": ["Paris"],
    "retrieved_ids": [["a", "b"]],
    "relevant_ids": [["b"]],
}
ALL = ["heuristic", "mrr", "ndcg_at_2"]


def base() -> pl.DataFrame:
    return pl.DataFrame(TEXT)


def reference() -> pl.DataFrame:
    out = rf.evaluate(base(), ALL)
    assert out["faithfulness"][0] == pytest.approx(0.8) and out["mrr"][0] == 0.5
    assert out["ndcg_at_2"][0] == pytest.approx(1 / math.log2(3))
    return out


def scores_of(frame) -> pl.DataFrame:
    """The score columns of any frame kind, as polars."""
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if isinstance(frame, (pa.Table, pa.RecordBatch)):
        frame = pl.DataFrame(pl.from_arrow(frame))
    if isinstance(frame, pd.DataFrame):
        frame = pl.from_pandas(frame.reset_index(drop=True))
    return frame.select(rf.score_columns(frame.columns))


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err.rstrip("\n")


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ----------------------------------------------------------------------------- 1. text types are text


def _cat(df: pl.DataFrame, *names: str) -> pl.DataFrame:
    return df.with_columns(pl.col(n).cast(pl.Categorical) for n in names)


def _list_cat(df: pl.DataFrame, *names: str) -> pl.DataFrame:
    return df.with_columns(pl.col(n).cast(pl.List(pl.Categorical)) for n in names)


def _arrow_dictionary(df: pl.DataFrame) -> pa.Table:
    table = df.to_arrow()
    for name in ("question", "answer", "ground_truth"):
        table = table.set_column(table.schema.get_field_index(name), name, pc.dictionary_encode(table[name]))
    ctx = table["contexts"].combine_chunks()
    dict_ctx = pa.ListArray.from_arrays(ctx.offsets, pc.dictionary_encode(ctx.values))
    return table.set_column(table.schema.get_field_index("contexts"), "contexts", dict_ctx)


def _arrow_large(df: pl.DataFrame) -> pa.Table:
    table = df.to_arrow()
    fields = []
    for field in table.schema:
        is_list = pa.types.is_list(field.type) or pa.types.is_large_list(field.type)
        fields.append(pa.field(field.name, pa.large_list(pa.large_string()) if is_list else pa.large_string()))
    return table.cast(pa.schema(fields))


def _arrow_view(df: pl.DataFrame) -> pa.Table:
    table = df.to_arrow()
    for name in ("question", "answer", "ground_truth"):
        table = table.set_column(table.schema.get_field_index(name), name, table[name].cast(pa.string_view()))
    return table


def _pandas_category(df: pl.DataFrame) -> pd.DataFrame:
    pdf = df.to_pandas()
    for name in ("question", "answer", "ground_truth"):
        pdf[name] = pdf[name].astype("category")
    return pdf


def _pandas_pyarrow_string(df: pl.DataFrame) -> pd.DataFrame:
    pdf = df.to_pandas()
    for name in ("question", "answer", "ground_truth"):
        pdf[name] = pdf[name].astype("string[pyarrow]")
    return pdf


TEXT_KINDS = {
    "polars-categorical": lambda df: _cat(df, "question", "answer", "ground_truth"),
    "polars-enum": lambda df: df.with_columns(
        pl.col(n).cast(pl.Enum(df[n].unique().sort().to_list())) for n in ("question", "answer", "ground_truth")
    ),
    "polars-list-categorical": lambda df: _list_cat(df, "contexts", "retrieved_ids", "relevant_ids"),
    "lazy-categorical": lambda df: _list_cat(_cat(df, "question", "answer", "ground_truth"), "contexts").lazy(),
    "arrow-dictionary": _arrow_dictionary,
    "arrow-large_string-large_list": _arrow_large,
    "arrow-string_view": _arrow_view,
    "arrow-recordbatch-dictionary": lambda df: _arrow_dictionary(df).to_batches()[0],
    "pandas-category": _pandas_category,
    "pandas-string-pyarrow": _pandas_pyarrow_string,
}


@pytest.mark.parametrize("kind", TEXT_KINDS)
def test_text_types_score_as_string_in_evaluate(kind):
    frame = TEXT_KINDS[kind](base())
    out = rf.evaluate(frame, ALL)
    assert type(out) is type(frame)
    assert scores_of(out).equals(scores_of(reference()))


@pytest.mark.parametrize("kind", TEXT_KINDS)
def test_text_types_score_as_string_in_score_functions(kind):
    frame = TEXT_KINDS[kind](base())
    out = rf.score_faithfulness(frame)
    assert scores_of(out)["faithfulness"][0] == pytest.approx(0.8)
    ranked = rf.score_retrieval(frame, k=[2], metrics=["mrr"])
    assert scores_of(ranked)["mrr"][0] == 0.5


@pytest.mark.parametrize("kind", TEXT_KINDS)
def test_text_types_reach_a_judge_as_text(kind):
    prompts: list[str] = []

    def judge(prompt: str) -> str:
        prompts.append(prompt)
        return verdict_reply(prompt, 0.7)  # faithfulness reads claim verdicts: 7 of 10 supported

    frame = TEXT_KINDS[kind](base())
    for function in (rf.judge_answer_relevance, rf.judge_faithfulness):
        out = function(frame, judge=judge, cache=False)
        scored = scores_of(out.collect() if isinstance(out, pl.LazyFrame) else out)
        assert scored[function.__name__].to_list() == [0.7]
    relevance, faithfulness = prompts[-2:]
    assert "What is the capital of France?" in relevance and "Paris is the capital of France." in relevance
    assert "Paris is the capital and largest city of France." in faithfulness


def test_text_types_graded_relevance_with_categorical_ids():
    df = pl.DataFrame(
        {"retrieved_ids": [["a", "b"]], "relevance": [[{"id": "b", "grade": 2}]]},
        schema={
            "retrieved_ids": pl.List(pl.Categorical),
            "relevance": pl.List(pl.Struct({"id": pl.Categorical, "grade": pl.Int64})),
        },
    )
    out = rf.evaluate(df, ["mrr", "ndcg_at_2"])
    # one relevant document (grade 2) at rank 2: DCG 2/log2(3), ideal DCG 2/log2(2)
    assert out.row(0, named=True)["ndcg_at_2"] == pytest.approx(1 / math.log2(3))
    assert out["mrr"][0] == 0.5


def test_text_types_pass_the_streaming_row_checks():
    batch = _list_cat(_cat(base(), "question", "answer", "ground_truth"), "contexts", "retrieved_ids", "relevant_ids")
    roles = {r: r for r in ("question", "answer", "contexts", "ground_truth", "retrieved_ids", "relevant_ids")}
    conformed = conform_null_types(batch, roles)
    assert conformed.schema == base().schema
    assert row_problems(conformed, roles).height == 0


def test_text_types_in_a_parquet_log_are_scored_not_rejected(tmp_path, capsys):
    log = make_log(12, seed=4)
    cat = _list_cat(_cat(log, "question", "answer", "ground_truth"), "contexts", "retrieved_ids", "relevant_ids")
    cat.write_parquet(tmp_path / "cat.parquet")
    log.write_parquet(tmp_path / "str.parquet")
    result = rf.evaluate_parquet(tmp_path / "cat.parquet", tmp_path / "py", metrics=BOTH_FAMILIES, progress=False)
    assert (result.scored, result.rejected) == (12, 0)
    expected = rf.evaluate_parquet(tmp_path / "str.parquet", tmp_path / "ref", metrics=BOTH_FAMILIES, progress=False)
    got, want = pl.read_parquet(tmp_path / "py" / "scores"), pl.read_parquet(tmp_path / "ref" / "scores")
    assert scores_of(got).equals(scores_of(want)) and expected.scored == 12
    code, out, _ = run_cli(capsys, "eval", tmp_path / "cat.parquet", "-o", tmp_path / "cli", "--no-progress")
    assert code == 0 and "scored 12 of 12 rows (0 rejected)" in out


BOTH_FAMILIES = ["heuristic", "retrieval"]


@pytest.mark.parametrize("on_bad_rows", ["raise", "reject"])
def test_text_types_in_the_cluster_batch_function(on_bad_rows):
    scorer = BatchScorer(rf.Evaluator(ALL), on_bad_rows=on_bad_rows)
    out = scorer(_arrow_dictionary(base()))
    assert scores_of(out).equals(scores_of(reference()))


# ----------------------------------------------------------------------------- 2. auto and a mapping to nothing


def test_auto_with_a_mapping_to_a_missing_column_is_an_error():
    with pytest.raises(rf.SchemaError, match="the answer option names a column the frame lacks") as error:
        rf.evaluate(base(), "auto", answer="nosuch")
    assert error.value.column == "nosuch"


def test_auto_with_a_mapping_to_a_missing_column_is_an_error_in_the_cli(tmp_path, capsys):
    base().write_parquet(tmp_path / "log.parquet")
    argv = ["eval", tmp_path / "log.parquet", "-o", tmp_path / "out", "--metrics", "auto", "--column", "answer=nosuch"]
    code, _, err = run_cli(capsys, *argv, "--no-progress")
    assert code == 3 and "[column 'nosuch'" in one_line(err)
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- 3. the default metric set


def test_default_metrics_skip_what_the_columns_lack_with_a_warning_each():
    df = base().drop("ground_truth")
    with pytest.warns(SkippedMetricWarning) as caught:
        out = rf.evaluate(df)
    assert [(w.message.metric, w.message.column) for w in caught] == [
        ("context_recall", "ground_truth"),
        ("answer_correctness", "ground_truth"),
    ]
    assert all(str(w.message).startswith("evaluate: skipped ") and "\n" not in str(w.message) for w in caught)
    scored = ["faithfulness", "answer_relevance", "context_precision", "context_relevance", "hallucination_rate"]
    assert rf.score_columns(out.columns) == [*scored, "composite_score"]
    assert out["faithfulness"][0] == pytest.approx(0.8)
    assert rf.Evaluator().skipped_metrics(df.columns) == {
        "context_recall": "ground_truth",
        "answer_correctness": "ground_truth",
    }


def test_default_metrics_warn_once_per_run_of_evaluate_parquet(tmp_path):
    make_log(9, seed=2).drop("ground_truth").write_parquet(tmp_path / "log.parquet")
    with pytest.warns(SkippedMetricWarning) as caught:
        done = rf.evaluate_parquet(tmp_path / "log.parquet", tmp_path / "out", batch_rows=2, progress=False)
    assert done.batches == 5 and done.scored == 9
    assert [w.message.metric for w in caught] == ["context_recall", "answer_correctness"]  # not once per batch
    assert "context_recall" not in pl.read_parquet(tmp_path / "out" / "scores").columns


def test_default_metrics_on_a_complete_frame_warn_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = rf.evaluate(base())
    assert len(rf.score_columns(out.columns)) == 8  # seven metrics and composite_score


def test_default_metrics_with_no_scorable_metric_are_an_error():
    with pytest.raises(rf.SchemaError, match="no default metric can be scored") as error:
        rf.evaluate(pl.DataFrame({"question": ["q?"]}))
    assert error.value.column in ("answer", "contexts", "ground_truth")


def test_metrics_named_explicitly_still_fail_on_a_missing_input():
    with pytest.raises(rf.SchemaError, match="metric 'context_recall' needs the ground_truth column"):
        rf.evaluate(base().drop("ground_truth"), "heuristic")


def test_default_metrics_in_the_cli_print_a_line_per_skipped_metric(tmp_path, capsys):
    base().drop("ground_truth").write_parquet(tmp_path / "log.parquet")
    code, out, err = run_cli(capsys, "eval", tmp_path / "log.parquet", "-o", tmp_path / "out", "--no-progress")
    assert code == 0, err
    assert err.splitlines() == [
        f"skipped {name}: it reads ground_truth from column 'ground_truth', which the log lacks; "
        "name it in --metrics to require it"
        for name in ("context_recall", "answer_correctness")
    ]
    assert out.startswith("scoring faithfulness, answer_relevance, context_precision, context_relevance, ")


def test_default_metrics_in_the_cli_with_no_scorable_metric_exit_3(tmp_path, capsys):
    pl.DataFrame({"id": [1], "question": ["q?"]}).write_parquet(tmp_path / "log.parquet")
    code, _, err = run_cli(capsys, "eval", tmp_path / "log.parquet", "-o", tmp_path / "out", "--no-progress")
    assert code == 3 and "no default metric can be scored" in one_line(err)


# ----------------------------------------------------------------------------- 4. labels that are not 0/1


def test_agreement_with_labels_refuses_a_label_that_is_not_binary():
    df = pl.DataFrame({"faithfulness": [0.9, 0.2, 0.7, 0.1], "human": [1, -1, 1, -1]})
    with pytest.raises(rf.SchemaError, match="label is not binary") as error:
        rf.agreement_with_labels(df, label_columns="human", n_resamples=10)
    assert error.value.column == "human" and error.value.found == "values [-1, 1]"
    recoded = df.with_columns(pl.col("human") == 1)
    assert rf.agreement_with_labels(recoded, label_columns="human", n_resamples=10)["auroc"][0] == 1.0
    ranks = rf.agreement_with_labels(df, label_columns="human", ordinal="human", n_resamples=10).row(0, named=True)
    assert ranks["auroc"] is None and ranks["spearman"] == pytest.approx(0.8944271909999159)  # scipy.stats.spearmanr


# ----------------------------------------------------------------------------- 5. nothing to read


def test_routing_summary_without_source_columns_is_an_error():
    with pytest.raises(rf.SchemaError, match="no routed score column"):
        rf.routing_summary(reference())


# ----------------------------------------------------------------------------- 6. a log holding a score's name

OWN_COLUMN = {
    "polars": lambda df: df,
    "lazy": lambda df: df.lazy(),
    "arrow": lambda df: df.to_arrow(),
    "pandas": lambda df: df.to_pandas(),
}


@pytest.mark.parametrize("kind", OWN_COLUMN)
def test_a_log_with_its_own_score_column_is_refused_naming_it(kind):
    theirs = base().with_columns(faithfulness=pl.lit(0.123))
    frame = OWN_COLUMN[kind](theirs)
    with pytest.raises(rf.SchemaError, match="already has a column this run writes; choose a prefix") as error:
        rf.evaluate(frame, ["faithfulness", "answer_relevance"])
    assert error.value.column == "faithfulness" and "\n" not in str(error.value)
    beside = scores_of(rf.evaluate(frame, ["faithfulness", "answer_relevance"], prefix="rf_"))
    assert beside["rf_faithfulness"][0] == pytest.approx(0.8) and beside["faithfulness"][0] == 0.123


@pytest.mark.parametrize("kind", OWN_COLUMN)
def test_rescoring_the_output_of_the_same_run_replaces_its_columns(kind):
    once = rf.evaluate(base(), ["faithfulness", "mrr"])
    twice = rf.evaluate(OWN_COLUMN[kind](once), ["faithfulness", "mrr"])
    if isinstance(twice, pl.LazyFrame):
        twice = twice.collect()
    names = twice.columns if not isinstance(twice, pa.Table) else twice.column_names
    assert list(names) == once.columns  # replaced in place, not duplicated
    assert scores_of(twice).equals(scores_of(once))


def test_score_function_on_a_log_with_a_passed_column_is_refused():
    with pytest.raises(rf.SchemaError) as error:
        rf.score_faithfulness(base().with_columns(faithfulness_passed=pl.lit(True)))
    assert error.value.column == "faithfulness_passed"


@pytest.mark.parametrize("on_bad_rows", ["raise", "reject"])
def test_the_cluster_batch_function_follows_the_same_rule(on_bad_rows):
    scorer = BatchScorer(rf.Evaluator(["faithfulness", "mrr"]), on_bad_rows=on_bad_rows)
    with pytest.raises(rf.SchemaError, match="choose a prefix") as error:
        scorer(base().with_columns(mrr=pl.lit(0.1)).to_arrow())
    assert error.value.column == "mrr"
    again = scorer(rf.evaluate(base(), ["faithfulness", "mrr"]).to_arrow())
    assert again.column_names.count("mrr") == 1 and again.column("mrr").to_pylist() == [0.5]


def test_evaluate_parquet_with_a_score_named_column_is_a_typed_error(tmp_path):
    base().with_columns(faithfulness=pl.lit(0.5)).write_parquet(tmp_path / "log.parquet")
    with pytest.raises(rf.SchemaError, match="choose a prefix") as error:
        rf.evaluate_parquet(tmp_path / "log.parquet", tmp_path / "out", metrics=["faithfulness"], progress=False)
    assert error.value.column == "faithfulness" and not (tmp_path / "out").exists()
    done = rf.evaluate_parquet(
        tmp_path / "log.parquet", tmp_path / "out", metrics=["faithfulness"], prefix="v2_", progress=False
    )
    scores = pl.read_parquet(done.out / "scores")
    assert scores["faithfulness"][0] == 0.5 and scores["v2_faithfulness"][0] == pytest.approx(0.8)


def test_evaluate_parquet_of_its_own_output_replaces_the_scores(tmp_path):
    rf.evaluate(base(), ["mrr"]).write_parquet(tmp_path / "scored.parquet")
    done = rf.evaluate_parquet(tmp_path / "scored.parquet", tmp_path / "out", metrics=["mrr"], progress=False)
    scores = pl.read_parquet(done.out / "scores")
    assert scores.columns.count("mrr") == 1 and scores["mrr"].to_list() == [0.5]


def test_cli_eval_with_a_score_named_column_exits_3_and_prefix_fixes_it(tmp_path, capsys):
    base().with_columns(faithfulness=pl.lit(0.5)).write_parquet(tmp_path / "log.parquet")
    argv = ["eval", tmp_path / "log.parquet", "--metrics", "faithfulness", "--no-progress", "-o"]
    code, _, err = run_cli(capsys, *argv, tmp_path / "a")
    assert code == 3 and "--prefix" in one_line(err) and "[column 'faithfulness']" in err
    code, _, err = run_cli(capsys, *argv, tmp_path / "b", "--prefix", "run2_")
    assert code == 0, err
    assert pl.read_parquet(tmp_path / "b" / "scores")["run2_faithfulness"][0] == pytest.approx(0.8)


# ----------------------------------------------------------------------------- 7. parameters and run frames


def test_evaluate_parquet_of_an_empty_source_list_is_a_typed_error(tmp_path):
    with pytest.raises(rf.InvalidParameterError, match="source is an empty list"):
        rf.evaluate_parquet([], tmp_path / "out", metrics=["mrr"], progress=False)


def test_evaluate_parquet_into_an_empty_path_is_refused(tmp_path, monkeypatch):
    base().write_parquet(tmp_path / "log.parquet")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(rf.InvalidParameterError, match="out must be a folder path"):
        rf.evaluate_parquet(tmp_path / "log.parquet", "", metrics=["mrr"], progress=False)
    assert sorted(os.listdir(tmp_path)) == ["log.parquet"]  # nothing written into the current folder


def test_score_dataset_of_a_polars_frame_is_a_typed_error():
    pytest.importorskip("ray")
    from ragframe.distributed import score_dataset

    with pytest.raises(
        rf.InvalidParameterError, match=r"ds must be a ray\.data\.Dataset .* found a polars\.\S*DataFrame"
    ):
        score_dataset(base(), ["mrr"])


@pytest.mark.parametrize("threshold", [2, -0.1, 1.0000001])
def test_a_threshold_outside_the_metrics_bounds_is_refused(threshold):
    with pytest.raises(rf.InvalidParameterError, match=r"thresholds\['faithfulness'\] must be a finite number >= 0"):
        rf.score_faithfulness(base(), threshold=threshold)
    with pytest.raises(rf.InvalidParameterError, match=r"thresholds\['ndcg_at_10'\]"):
        rf.Evaluator(["ndcg_at_10"], thresholds={"ndcg_at_10": threshold})
    assert rf.score_faithfulness(base(), threshold=1)["faithfulness_passed"][0] is False  # 0.8 < 1


@pytest.mark.parametrize("value", [1.5, -0.25])
def test_summarize_refuses_a_score_outside_its_bounds(value):
    df = pl.DataFrame({"faithfulness": [0.5, 0.75, value]})
    with pytest.raises(rf.SchemaError, match="score outside its metric's bounds") as error:
        rf.summarize(df)
    assert (error.value.column, error.value.row, error.value.found) == ("faithfulness", 2, repr(value))
    with pytest.raises(rf.SchemaError, match="outside its metric's bounds"):
        rf.compare(df.with_row_index("id"), df.with_row_index("id"), on="id")
    assert rf.summarize(pl.DataFrame({"latency": [1.5]}), metrics=["latency"])["mean"][0] == 1.5  # unbounded


def test_retrieve_refuses_a_nan_retriever_score_as_that_rows_error():
    def search(query, k):
        return [("d1", float("nan")), ("d2", 0.5)] if query == "bad" else [("d1", 0.9), ("d2", 0.5)]

    out = rf.retrieve(pl.DataFrame({"question": ["bad", "good"]}), search, k=2)
    assert out["retrieve_status"].to_list() == ["error", "ok"]
    assert out["retrieve_error"][0] == "item 0 has score NaN, not a number"
    assert out["retrieved_ids"].to_list() == [None, ["d1", "d2"]]


def test_evaluate_run_refuses_a_repeated_query_doc_pair_as_read_trec_run_does(tmp_path):
    run = pl.DataFrame({"query_id": ["q1", "q1", "q1"], "doc_id": ["a", "b", "a"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    with pytest.raises(rf.SchemaError, match="a document listed twice for one query") as error:
        rf.evaluate_run(run, qrels, k=[2])
    assert (error.value.column, error.value.row, error.value.found) == ("doc_id", 2, "'a' again for query 'q1'")
    (tmp_path / "run.txt").write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 a 3 1 t\n", encoding="utf-8")
    with pytest.raises(rf.InputFileError, match="duplicate docno 'a' for query 'q1' at line 3"):
        rf.read_trec_run(tmp_path / "run.txt")
    unique = run.head(2)
    assert rf.evaluate_run(unique, qrels, k=[2], metrics=["mrr"])["mrr"].to_list() == [1.0]


# ----------------------------------------------------------------------------- 8. NaN scores: one line, file lines


@pytest.mark.parametrize("call", ["evaluate", "score_retrieval"])
def test_a_nan_inside_a_scores_list_is_one_line(call):
    df = base().with_columns(retrieved_scores=pl.Series([[1.0, float("nan")]]))
    function = {"evaluate": lambda: rf.evaluate(df, ["mrr"]), "score_retrieval": lambda: rf.score_retrieval(df)}
    with pytest.raises(rf.SchemaError) as error:
        function[call]()
    assert "\n" not in str(error.value) and error.value.found == "[1.0, NaN]" and error.value.row == 0


def test_a_nan_score_of_a_run_frame_is_one_line():
    run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, float("nan")]})
    qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["b"], "relevance": [1]})
    with pytest.raises(rf.SchemaError, match="null or NaN score") as error:
        rf.evaluate_run(run, qrels, k=[1])
    assert "\n" not in str(error.value) and error.value.row == 1


def test_a_nan_score_in_a_run_file_names_its_line(tmp_path, capsys):
    (tmp_path / "run.txt").write_text("# a comment\nq1 Q0 a 1 1.5 t\nq1 Q0 b 2 nan t\n", encoding="utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 b 1\n", encoding="utf-8")
    with pytest.raises(rf.SchemaError, match=r"line 3 of .*run.txt' has a NaN score"):
        rf.read_trec_run(tmp_path / "run.txt")
    code, _, err = run_cli(capsys, "trec", *_trec_files(tmp_path / "run.txt", tmp_path / "qrels.txt"))
    assert code == 3 and "line 3 of" in one_line(err)


def _trec_files(run: Path, qrels: Path) -> list[Path]:
    """The two files in the order ``ragframe trec`` takes them (RUN QRELS, or trec_eval's QRELS RESULTS)."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    first = next(a for a in commands.choices["trec"]._actions if not a.option_strings)
    return [qrels, run] if first.metavar == "QRELS" else [run, qrels]


def test_no_warning_escapes_a_run_with_explicit_metrics():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rf.evaluate(base().drop("ground_truth"), ["faithfulness"])["faithfulness"][0] == pytest.approx(0.8)


def test_every_numeric_check_holds_on_numpy_scalars():
    # a retriever returning numpy floats (the usual case with an index) passes; a numpy NaN does not
    out = rf.retrieve(pl.DataFrame({"question": ["q"]}), lambda q, k: [("d", np.float32(0.5))])
    assert out["retrieve_status"][0] == "ok"
    bad = rf.retrieve(pl.DataFrame({"question": ["q"]}), lambda q, k: [("d", np.float64("nan"))])
    assert bad["retrieve_status"][0] == "error"


def test_path_object_out_still_works(tmp_path):
    base().write_parquet(tmp_path / "log.parquet")
    done = rf.evaluate_parquet(Path(tmp_path / "log.parquet"), Path(tmp_path / "o"), metrics=["mrr"], progress=False)
    assert done.scored == 1
