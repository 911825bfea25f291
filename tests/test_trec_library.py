"""trec_eval's measures in the library: ``rf.evaluate_run``, ``rf.score_retrieval``, the Evaluator, streaming, CLI.

Every library name of a trec_eval measure (``docs/metrics.md``, "Measures computed only when
named") is checked on trec_eval 10.0's own test fixtures (``tests/data/trec_eval``) against two
references: the values ``ragframe trec`` computes for the trec_eval name (the same kernels:
equal to the last bit) and trec_eval's expected outputs (its printed 4 decimals, an
independent source). A wide frame built from the same run scores the same as the long tables,
and the registry, the Evaluator and the streaming path give the same columns.
"""

from __future__ import annotations

import math
import re

import numpy as np
import polars as pl
import pytest
from conftest import LOCAL_DATA
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from test_trec_property import _frames as random_frames
from test_trec_property import collections as random_collections

import ragframe as rf
from ragframe.cli.main import main
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.io.trec_eval_format import DEFAULT_CUTOFFS, output_measures, parse_measures, summarize
from ragframe.kernels.trec_measures import TrecOptions
from ragframe.metrics.registry import get_metric, metric_for_column
from ragframe.metrics.retrieval import RETRIEVAL_METRICS
from ragframe.run.trec_run import trec_eval_run

TE = LOCAL_DATA / "trec_eval"
STANDARD = DEFAULT_CUTOFFS["P"]  # trec_eval's cutoffs 5 .. 1000

#: library metric -> trec_eval root (a cutoff metric prints ``<root>_<k>``), or the printed name.
TREC_NAMES = {
    "precision_at_k": "P",
    "recall_at_k": "recall",
    "hit_rate_at_k": "success",
    "ndcg_at_k": "ndcg_cut",
    "average_precision_at_k": "map_cut",
    "relative_precision_at_k": "relative_P",
    "unjudged_at_k": "unj",
    "ndcg": "ndcg",
    "mrr": "recip_rank",
    "average_precision": "map",
    "r_precision": "Rprec",
    "bpref": "bpref",
    "infap": "infAP",
    "interpolated_precision_11pt": "11pt_avg",
    "rbp": "rbp",
    "rbp_residual": "rbp_resid",
    "ndcg_rel": "ndcg_rel",
    "rndcg": "Rndcg",
    "normalized_gain": "G",
    "binary_normalized_gain": "binG",
    "set_precision": "set_P",
    "set_recall": "set_recall",
    "set_relative_precision": "set_relative_P",
    "set_average_precision": "set_map",
    "set_f1": "set_F",
    # trec_eval's parameterised measures at its default parameters: the printed name itself
    **{
        f"iprec_at_recall_{x:3.2f}".replace(".", "_"): f"iprec_at_recall_{x:3.2f}"
        for x in DEFAULT_CUTOFFS["iprec_at_recall"]
    },
    **{f"rprec_mult_{x:3.2f}".replace(".", "_"): f"Rprec_mult_{x:3.2f}" for x in DEFAULT_CUTOFFS["Rprec_mult"]},
    "utility": "utility",
}
#: the trec_eval measures registered once per default parameter (and utility at its default coefficients)
PARAMETERISED = [name for name in TREC_NAMES if name.startswith(("iprec_at_recall_", "rprec_mult_"))] + ["utility"]
#: the library's trec_eval measures that are not in the default set
OPT_IN = [name for name in TREC_NAMES if not get_metric(name).by_default]
#: trec_eval's default cutoffs of each cutoff measure: the union, scored at once (trec prints its own subset)
CUTOFFS = sorted({k for root in ("P", "success", "unj") for k in DEFAULT_CUTOFFS[root]})

CONFIGS = {
    # expected output, qrels, run, evaluate_run keywords (trec_eval's -c, -M, -l)
    "aq": ("out.test.aq", "qrels.test", "results.test", {}),
    "aqc": ("out.test.aqc", "qrels.test", "results.trunc", {"complete": True}),
    "aqcM": ("out.test.aqcM", "qrels.test", "results.trunc", {"complete": True, "max_docs": 100}),
    "aql": ("out.test.aql", "qrels.rel_level", "results.test", {"relevance_level": 2}),
}


def _library_columns(metric: str) -> dict[str, str]:
    """The library's output columns of a metric -> the trec_eval printed name, at trec_eval's default cutoffs."""
    root = TREC_NAMES[metric]
    if not get_metric(metric).cutoff:
        return {metric: root}
    return {get_metric(metric).column(k): f"{root}_{k}" for k in DEFAULT_CUTOFFS[root]}


def _expected(path) -> dict[tuple[str, str], str]:
    """trec_eval's printed values: (measure, query) -> text."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        out[measure, qid] = value
    return out


def _tables(config: str):
    _, qrels, run, options = CONFIGS[config]
    return rf.read_trec_run(TE / run), rf.read_qrels(TE / qrels), options


@pytest.fixture(scope="module", params=list(CONFIGS))
def per_query_and_trec(request):
    """(config, evaluate_run's per-query frame, trec_eval_run's per-query frame, trec's printed names)."""
    run, qrels, options = _tables(request.param)
    per_query = rf.evaluate_run(run, qrels, k=CUTOFFS, metrics=list(TREC_NAMES), **options)
    trec = TrecOptions(tuple(parse_measures(["all_trec"])))
    reference = trec_eval_run(run, qrels, trec, **options)
    return request.param, per_query, reference


@pytest.mark.parametrize("metric", list(TREC_NAMES))
def test_evaluate_run_equals_ragframe_trec(per_query_and_trec, metric):
    """The opt-in measures run ``ragframe trec``'s kernels: equal to the last bit. The default set has its
    own kernels (``compute_measures``, kept bit for bit as they were): equal within rounding (graded nDCG
    sums its gains in another order)."""
    config, per_query, reference = per_query_and_trec
    ours = per_query.filter(pl.col("query_id").is_in(reference["query_id"].implode()))
    assert ours["query_id"].to_list() == reference["query_id"].to_list()
    for column, trec_name in _library_columns(metric).items():
        if metric in OPT_IN:
            assert ours[column].to_list() == reference[trec_name].to_list(), (config, column, trec_name)
        else:
            assert ours[column].to_list() == pytest.approx(reference[trec_name].to_list(), rel=1e-14, abs=1e-15)


@pytest.mark.parametrize("metric", list(TREC_NAMES))
def test_evaluate_run_equals_trec_eval_expected_output(per_query_and_trec, metric):
    """Per query and the ``all`` mean, to trec_eval's printed 4 decimals (its own test suite's files)."""
    config, per_query, reference = per_query_and_trec
    expected = _expected(TE / CONFIGS[config][0])
    judged = per_query.filter(pl.col("query_id").is_in(reference["query_id"].implode()))
    summary = rf.run_summary(judged)
    checked = 0
    for column, trec_name in _library_columns(metric).items():
        for qid, value in zip(judged["query_id"], judged[column]):
            assert f"{value:6.4f}" == expected[trec_name, qid], (config, column, qid)
            checked += 1
        assert f"{summary[column][0]:6.4f}" == expected[trec_name, "all"], (config, column)
    assert checked >= 2


@pytest.mark.parametrize(("column", "trec_name"), [("gm_map", "gm_map"), ("gm_bpref", "gm_bpref")])
def test_run_summary_geometric_means_equal_trec_eval(per_query_and_trec, column, trec_name):
    config, per_query, reference = per_query_and_trec
    judged = per_query.filter(pl.col("query_id").is_in(reference["query_id"].implode()))
    summary = rf.run_summary(judged)
    assert f"{summary[column][0]:6.4f}" == _expected(TE / CONFIGS[config][0])[trec_name, "all"]
    printed = output_measures(parse_measures([trec_name]), runid=False, num_q=False)
    trec_value = summarize(reference, printed)[trec_name]
    assert summary[column][0] == pytest.approx(trec_value, rel=1e-12, abs=0)


def test_run_summary_geometric_mean_by_hand():
    """gm_map = exp(mean(log(max(AP, 0.00001)))): AP 0.5, 0 and 0.02 give (0.5 * 0.00001 * 0.02) ** (1/3)."""
    per_query = pl.DataFrame(
        {"query_id": ["a", "b", "c"], "bm25_average_precision": [0.5, 0.0, 0.02], "bm25_bpref": [1.0, 1.0, 0.125]}
    )
    summary = rf.run_summary(per_query).row(0, named=True)
    assert list(summary) == [
        "num_q",
        "bm25_average_precision",
        "bm25_gm_map",
        "bm25_bpref",
        "bm25_gm_bpref",
    ]
    assert summary["bm25_gm_map"] == pytest.approx((0.5 * 0.00001 * 0.02) ** (1 / 3), rel=1e-12)
    assert summary["bm25_gm_bpref"] == pytest.approx(0.5, rel=1e-12)  # (1 * 1 * 1/8) ** (1/3)
    assert summary["bm25_average_precision"] == pytest.approx(0.52 / 3, rel=1e-15)


# ----------------------------------------------------------------------------- wide frames


def _wide(run: pl.DataFrame, qrels: pl.DataFrame) -> pl.DataFrame:
    """One row per query of the run: retrieved ids and scores, graded judgments (null: not judged)."""
    ranked = run.group_by("query_id", maintain_order=True).agg(
        pl.col("doc_id").alias("retrieved_ids"), pl.col("score").alias("retrieved_scores")
    )
    judged = qrels.group_by("query_id", maintain_order=True).agg(
        pl.struct(pl.col("doc_id").alias("id"), pl.col("relevance").alias("grade")).alias("relevance")
    )
    return ranked.join(judged, on="query_id", how="left").sort("query_id")


@pytest.mark.parametrize("config", ["aq", "aql"])
def test_score_retrieval_equals_evaluate_run(config):
    """Every library measure, default set and opt-in, on a wide frame equals the long tables' value."""
    run, qrels, options = _tables(config)
    names = list(RETRIEVAL_METRICS)
    level = options.get("relevance_level", 1)
    long = rf.evaluate_run(run, qrels, k=[1, 5, 20], metrics=names, relevance_level=level)
    wide = rf.score_retrieval(_wide(run, qrels), k=[1, 5, 20], metrics=names, relevance_level=level)
    columns = [c for c in long.columns if c not in ("query_id", "num_ret", "num_rel", "num_rel_ret")]
    assert set(columns) <= set(wide.columns) and len(columns) == 3 * (7 + 5) + 4 + 14 + len(PARAMETERISED)
    assert_frame_equal(wide.select(columns), long.select(columns), check_exact=True)


def test_wide_frame_nulls_and_empties():
    """Null judgments or ids: null; empty ranking: 0; empty judgments: 0 (nothing relevant, nothing judged)."""
    relevance = pl.List(pl.Struct({"id": pl.String, "grade": pl.Int64}))
    frame = pl.DataFrame(
        {
            "retrieved_ids": [["a", "b"], None, [], ["a", "b"]],
            "relevance": pl.Series([None, [{"id": "a", "grade": 1}], [{"id": "a", "grade": 1}], []], dtype=relevance),
        }
    )
    out = rf.score_retrieval(frame, k=2, metrics=[*OPT_IN, "judged_at_k", "err_at_k"])
    scores = out.drop("retrieved_ids", "relevance")
    assert scores.row(0) == (None,) * scores.width
    assert scores.row(1) == (None,) * scores.width
    assert scores.row(2) == (0.0,) * scores.width
    empty_judgments = scores.row(3, named=True)
    assert empty_judgments.pop("utility") == -2.0  # nothing relevant: 0 relevant - 2 non-relevant retrieved
    assert empty_judgments.pop("unjudged_at_2") == 1.0  # both retrieved documents are unjudged
    assert empty_judgments.pop("rbp_residual") == pytest.approx(0.9**2 + 0.1 * (1 + 0.9), rel=1e-15)  # = 1
    assert set(empty_judgments.values()) == {0.0}


def test_measures_of_judged_documents_need_graded_judgments():
    binary = pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevant_ids": [["a"]]})
    for metric in ("bpref", "infap", "judged_at_k", "unjudged_at_k", "rbp_residual"):
        with pytest.raises(SchemaError, match=f"'{metric.replace('_at_k', '_at_1')}' needs the relevance column"):
            rf.score_retrieval(binary, k=1, metrics=[metric])
    assert rf.score_retrieval(binary, k=1, metrics=["rbp", "set_f1"]).row(0)[2:] == pytest.approx((0.1, 2 / 3))
    contains = pl.DataFrame({"contexts": [["a"]], "gold_documents": [["a"]]})
    with pytest.raises(SchemaError, match="'bpref' needs the relevance column"):
        rf.score_retrieval(contains, match="contains", metrics=["bpref"])
    with pytest.raises(InvalidParameterError, match=r"\['bpref'\] count judged non-relevant documents"):
        rf.score_retrieval(contains.with_columns(relevance=pl.lit(None)), match="contains", metrics=["bpref"])
    graded = pl.DataFrame({"retrieved_ids": [["a"]], "relevance": [[{"id": "a", "grade": 1}]]})
    with pytest.raises(InvalidParameterError, match="need graded judgments"):  # relevance=None: binary asked for
        rf.score_retrieval(graded.with_columns(relevant_ids=pl.lit(["a"])), metrics=["bpref", "mrr"], relevance=None)


def test_registry_rows_of_the_new_measures():
    table = rf.list_metrics().filter(pl.col("name").is_in([*OPT_IN, "judged_at_k", "err_at_k"]))
    assert table.height == len(OPT_IN) + 2 == 19 + len(PARAMETERISED)
    assert set(table["family"]) == {"retrieval"} and not table["by_default"].any()
    assert table.filter(~pl.col("higher_is_better"))["name"].sort().to_list() == ["rbp_residual", "unjudged_at_k"]
    bounded = table.filter(pl.col("name") != "utility")  # utility: relevant minus non-relevant retrieved
    assert set(bounded["lower"]) == {0.0} and set(bounded["upper"]) == {1.0} and table["threshold"].null_count() == 41
    assert table.filter(pl.col("name") == "utility").select("lower", "upper").row(0) == (None, None)
    graded = table.filter(pl.col("inputs").list.contains("relevance"))["name"].sort().to_list()
    assert graded == ["bpref", "infap", "judged_at_k", "rbp_residual", "unjudged_at_k"]
    assert table.filter(pl.col("cutoff"))["name"].sort().to_list() == [
        "average_precision_at_k",
        "err_at_k",
        "judged_at_k",
        "relative_precision_at_k",
        "unjudged_at_k",
    ]


def test_family_name_and_defaults_keep_the_default_set():
    """``"retrieval"``, ``"auto"``, score_retrieval's and evaluate_run's defaults: the 11 measures as before."""
    default = ["precision_at_1", "recall_at_1", "f1_at_1", "hit_rate_at_1", "recall_all_at_1", "ndcg_at_1"]
    default += ["mrr_at_1", "ndcg", "mrr", "average_precision", "r_precision"]
    graded = pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevance": [[{"id": "a", "grade": 1}]]})
    assert rf.Evaluator("retrieval", k=[1]).outputs() == default
    assert rf.evaluate(graded, "auto", k=[1]).columns[2:] == default
    assert rf.score_retrieval(graded, k=1).columns[2:] == default
    run = pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0]})
    qrels = pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    assert rf.evaluate_run(run, qrels, k=1).columns == ["query_id", "num_ret", "num_rel", "num_rel_ret", *default]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rbp_persistence": 1.0}, "rbp_persistence"),
        ({"rbp_persistence": 0}, "rbp_persistence"),
        ({"rbp_persistence": float("nan")}, "rbp_persistence"),
        ({"err_max_grade": 0}, "err_max_grade"),
        ({"err_max_grade": 2.5}, "err_max_grade"),
    ],
)
def test_bad_options_are_invalid_parameter_errors(kwargs, match):
    frame = pl.DataFrame({"retrieved_ids": [["a"]], "relevant_ids": [["a"]]})
    run = pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0]})
    qrels = pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    with pytest.raises(InvalidParameterError, match=match):
        rf.score_retrieval(frame, metrics=["rbp"], **kwargs)
    with pytest.raises(InvalidParameterError, match=match):
        rf.evaluate_run(run, qrels, metrics=["rbp"], **kwargs)


def test_a_grade_above_err_max_grade_names_its_row():
    relevance = [[{"id": "a", "grade": 1}], [{"id": "b", "grade": 0}, {"id": "c", "grade": 5}]]
    frame = pl.DataFrame({"retrieved_ids": [["a"], ["b"]], "relevance": relevance})
    with pytest.raises(SchemaError, match=r"grade above err_max_grade \[column 'relevance', row 1\].*found 5"):
        rf.score_retrieval(frame, k=1, metrics=["err_at_k"])
    assert rf.score_retrieval(frame, k=1, metrics=["err_at_k"], err_max_grade=5)["err_at_1"].to_list() == [1 / 32, 0]
    run = pl.DataFrame({"query_id": ["q", "r"], "doc_id": ["a", "b"], "score": [1.0, 1.0]})
    qrels = pl.DataFrame({"query_id": ["q", "r", "r"], "doc_id": ["a", "b", "c"], "relevance": [1, 0, 9]})
    with pytest.raises(SchemaError, match=r"\[column 'relevance', row 2\]"):
        rf.evaluate_run(run, qrels, k=1, metrics=["err_at_k"])
    assert rf.evaluate_run(run, qrels, k=1, metrics=["mrr"])["mrr"].to_list() == [1.0, 0.0]  # other measures: no check


def test_rbp_persistence_reaches_the_kernel():
    """rbp = (1 - p) sum p^(i-1) over relevant ranks i: ranks 1 and 3 relevant, p = 0.5 gives 0.5 * 1.25."""
    frame = pl.DataFrame({"retrieved_ids": [["a", "b", "c"]], "relevant_ids": [["a", "c"]]})
    assert rf.score_retrieval(frame, metrics=["rbp"], rbp_persistence=0.5)["rbp"][0] == 0.625
    assert rf.score_retrieval(frame, metrics=["rbp"])["rbp"][0] == pytest.approx(0.1 * (1 + 0.81), rel=1e-15)
    ev = rf.Evaluator(["rbp"], rbp_persistence=0.5)
    assert ev.evaluate(frame)["rbp"][0] == 0.625 and ev.to_dict()["rbp_persistence"] == 0.5


# ----------------------------------------------------------------------------- the other paths


def _graded_log(rows: int = 40) -> pl.DataFrame:
    rng = np.random.default_rng(7)
    docs = [f"d{i}" for i in range(12)]
    return pl.DataFrame(
        {
            "id": np.arange(rows),
            "retrieved_ids": [list(rng.choice(docs, size=int(rng.integers(0, 9)), replace=False)) for _ in range(rows)],
            "relevance": [
                [{"id": d, "grade": int(g)} for d, g in zip(rng.choice(docs, 5, replace=False), rng.integers(-1, 4, 5))]
                for _ in range(rows)
            ],
        },
        schema_overrides={"retrieved_ids": pl.List(pl.String)},
    )


METRICS = ["bpref", "infap", "judged_at_k", "err_at_k", "rbp", "unjudged_at_k", "ndcg_at_k"]


def test_evaluate_parquet_equals_score_retrieval(tmp_path):
    log = _graded_log()
    log.write_parquet(tmp_path / "log.parquet")
    source, out = tmp_path / "log.parquet", tmp_path / "out"
    rf.evaluate_parquet(source, out, metrics=METRICS, k=[3], batch_rows=7, progress=False)
    expected = rf.score_retrieval(log, k=[3], metrics=METRICS).drop("retrieved_ids", "relevance")
    got = pl.read_parquet(tmp_path / "out" / "scores").sort("id")
    assert_frame_equal(got, expected, check_exact=True)
    assert got["bpref"].null_count() == 0 and got["judged_at_3"].is_between(0, 1).all()


def test_cli_eval_scores_the_named_measures(tmp_path, capsys):
    log = _graded_log()
    log.write_parquet(tmp_path / "log.parquet")
    config = tmp_path / "config.toml"
    config.write_text("rbp_persistence = 0.5\nerr_max_grade = 3\n", encoding="utf-8")
    out = tmp_path / "out"
    argv = ["eval", str(tmp_path / "log.parquet"), "-o", str(out), "--config", str(config), "--k", "3"]
    assert main([*argv, "--metrics", "bpref", "err_at_3", "rbp", "judged_at_k"]) == 0
    printed = capsys.readouterr().out
    assert "bpref" in printed and "err_at_3" in printed
    expected = rf.score_retrieval(
        log, k=[3], metrics=["bpref", "err_at_k", "rbp", "judged_at_k"], rbp_persistence=0.5, err_max_grade=3
    )
    got = pl.read_parquet(out / "scores").sort("id")
    for column in ("bpref", "err_at_3", "rbp", "judged_at_3"):
        assert got[column].to_list() == expected[column].to_list(), column


def test_a_custom_prefix_keeps_the_names_parseable():
    frame = pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevance": [[{"id": "b", "grade": 2}]]})
    out = rf.score_retrieval(frame, k=2, metrics=["bpref", "average_precision_at_k", "set_f1"], prefix="bm25_")
    assert rf.score_columns(out.schema) == ["bm25_average_precision_at_2", "bm25_bpref", "bm25_set_f1"]
    assert metric_for_column("bm25_average_precision_at_2").name == "average_precision_at_k"
    assert math.isclose(out["bm25_set_f1"][0], 2 * 0.5 * 1 / 1.5)


# ----------------------------------------------------------------------------- random runs


def _spec(printed: str) -> str:
    """trec_eval's ``-m`` spelling of a printed name: ``iprec_at_recall_0.50`` is ``iprec_at_recall.0.50``."""
    return re.sub(r"_(\d\.\d\d)$", r".\1", printed)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(random_collections(), st.sampled_from((0, 1, 2)), st.booleans())
def test_library_equals_ragframe_trec_on_random_runs(data, level, complete):
    """Ties, grades -1..3, unjudged and unpooled documents: the library's opt-in measures are ragframe trec's."""
    qrels, run = data
    if not qrels or not run:
        return
    qrels_frame, run_frame = random_frames(qrels, run)
    ks = [1, 2, 5]
    per_query = rf.evaluate_run(run_frame, qrels_frame, k=ks, metrics=OPT_IN, relevance_level=level, complete=complete)
    specs = [_spec(TREC_NAMES[m]) + ("." + ",".join(map(str, ks)) if get_metric(m).cutoff else "") for m in OPT_IN]
    reference = trec_eval_run(
        run_frame, qrels_frame, TrecOptions(tuple(parse_measures(specs))), relevance_level=level, complete=complete
    )
    ours = per_query.filter(pl.col("query_id").is_in(reference["query_id"].implode()))
    assert ours["query_id"].to_list() == reference["query_id"].to_list()
    for metric in OPT_IN:
        columns = {get_metric(metric).column(k): f"{TREC_NAMES[metric]}_{k}" for k in ks}
        for column, trec_name in columns.items() if get_metric(metric).cutoff else {metric: TREC_NAMES[metric]}.items():
            left, right = ours[column].to_numpy(), reference[trec_name].to_numpy()
            assert np.array_equal(left, right, equal_nan=True), (metric, column)
    if not complete:  # a wide frame of the run's queries scores as the long tables
        wide = rf.score_retrieval(_wide(run_frame, qrels_frame), k=ks, metrics=OPT_IN, relevance_level=level)
        columns = [c for c in per_query.columns if c not in ("query_id", "num_ret", "num_rel", "num_rel_ret")]
        assert_frame_equal(wide.select(columns), per_query.select(columns), check_exact=True)
