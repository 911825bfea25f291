"""ragframe.plot: the numbers in each figure are the numbers of the frames it was given.

Every plot is read back from its artists (bar heights, line data, image cells, tick labels,
titles) and compared with an independent source: numpy histograms, rf.summarize,
rf.compare, rf.run_summary, scikit-learn's roc_curve / roc_auc_score, the registry.
"""

from __future__ import annotations

import builtins
import subprocess
import sys

import numpy as np
import polars as pl
import pytest
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from sklearn.metrics import roc_auc_score, roc_curve

import ragframe as rf
from ragframe.datasets import example_paths
from ragframe.exceptions import InvalidParameterError, MissingDependencyError, SchemaError

HEURISTICS = ["faithfulness", "answer_relevance", "context_relevance"]
LABELS = {m: f"human_{m}" for m in HEURISTICS}
KINDS = {
    "polars": lambda df: df,
    "lazy": lambda df: df.lazy(),
    "arrow": lambda df: df.to_arrow(),
    "pandas": lambda df: df.to_pandas(),
}


# ----------------------------------------------------------------------------- bundled data


@pytest.fixture(scope="module")
def scored(ares_log) -> pl.DataFrame:
    """The ARES log scored with three heuristics; a few scores nulled so the null counts are tested."""
    out = rf.evaluate(ares_log, HEURISTICS)
    nulled = pl.int_range(pl.len()) < 7  # the first 7 rows lose their faithfulness score
    return out.with_columns(pl.when(nulled).then(None).otherwise(pl.col("faithfulness")).alias("faithfulness"))


@pytest.fixture(scope="module")
def trec() -> dict[str, pl.DataFrame]:
    paths = example_paths()
    qrels = rf.read_qrels(paths["qrels"])
    k = [1, 3, 5, 10, 20, 100]
    return {
        "bm25": rf.evaluate_run(rf.read_trec_run(paths["bm25"]), qrels, k=k),
        "rerank": rf.evaluate_run(rf.read_trec_run(paths["bm25+gpt3.5-rerank"]), qrels, k=k),
    }


@pytest.fixture(scope="module")
def comparison(trec) -> pl.DataFrame:
    metrics = ["ndcg_at_10", "mrr", "precision_at_10", "recall_at_100", "average_precision", "recall_all_at_1"]
    return rf.compare(trec["bm25"], trec["rerank"], on="query_id", metrics=metrics)


def _by_gid(artists, gid):
    return [a for a in artists if a.get_gid() == gid]


# ----------------------------------------------------------------------------- distributions


def test_distributions_one_axes_per_score_column_titled_with_n_and_nulls(scored):
    fig = rf.plot.distributions(scored)
    columns = rf.score_columns(scored.schema)
    assert columns == [*HEURISTICS, "composite_score"]
    assert isinstance(fig, Figure) and len(fig.axes) == len(columns)
    for ax, name in zip(fig.axes, columns):
        nulls = scored[name].null_count()
        assert ax.get_title() == f"{name}\nn={scored.height - nulls:,}, nulls={nulls:,}"
    assert fig.axes[0].get_title() == "faithfulness\nn=193, nulls=7"


def test_distributions_histogram_bars_are_numpys_counts_over_the_unit_interval(scored):
    fig = rf.plot.distributions(scored, ["faithfulness", "context_relevance"], bins=10)
    assert len(fig.axes) == 2
    assert scored["context_relevance"].max() < 0.6  # the bins still span [0, 1], the metric's bounds
    for ax, name in zip(fig.axes, ["faithfulness", "context_relevance"]):
        values = scored[name].drop_nulls().to_numpy()
        counts, edges = np.histogram(values, bins=10, range=(0.0, 1.0))
        heights = [p.get_height() for p in ax.patches]
        assert heights == counts.tolist()
        assert [p.get_x() for p in ax.patches] == pytest.approx(edges[:-1].tolist())


def test_distributions_threshold_line_sits_at_the_registry_default(scored):
    registry = rf.list_metrics()
    default = dict(zip(registry["name"], registry["threshold"]))
    fig = rf.plot.distributions(scored)
    for ax, name in zip(fig.axes, [*HEURISTICS, "composite_score"]):
        lines = _by_gid(ax.lines, "threshold")
        if default.get(name) is None:
            assert lines == []  # composite_score has no registered threshold
        else:
            assert len(lines) == 1 and list(lines[0].get_xdata()) == [default[name], default[name]]
    assert default["faithfulness"] == 0.4


@pytest.mark.slow
def test_distributions_thresholds_given_by_column_output_or_metric_name(scored):
    renamed = scored.select(pl.col("faithfulness").alias("v2_faithfulness"), "answer_relevance")
    fig = rf.plot.distributions(renamed, thresholds={"faithfulness": 0.7, "answer_relevance": None})
    assert _by_gid(fig.axes[0].lines, "threshold")[0].get_xdata()[0] == 0.7
    assert _by_gid(fig.axes[1].lines, "threshold") == []
    ranking = pl.DataFrame({"bm25_ndcg_at_10": [0.1, 0.9], "bm25_mrr": [1.0, 0.5]})
    for key in ("bm25_ndcg_at_10", "ndcg_at_10", "ndcg_at_k"):
        fig = rf.plot.distributions(ranking, thresholds={key: 0.3})
        assert _by_gid(fig.axes[0].lines, "threshold")[0].get_xdata()[0] == 0.3
        assert _by_gid(fig.axes[1].lines, "threshold") == []  # no threshold registered for mrr
    fig = rf.plot.distributions(renamed, thresholds={"v2_faithfulness": 0.2})
    assert _by_gid(fig.axes[0].lines, "threshold")[0].get_xdata()[0] == 0.2
    assert _by_gid(fig.axes[1].lines, "threshold")[0].get_xdata()[0] == 0.5  # the registry's, unprefixed


def test_distributions_ecdf_steps_through_the_sorted_values(scored):
    fig = rf.plot.distributions(scored, "answer_relevance", kind="ecdf")
    (line,) = _by_gid(fig.axes[0].lines, "ecdf")
    values = np.sort(scored["answer_relevance"].to_numpy())
    assert line.get_xdata()[1:].tolist() == values.tolist()
    assert line.get_ydata().tolist() == pytest.approx(np.r_[0.0, np.arange(1, 201) / 200].tolist())


def test_distributions_sample_draws_that_many_rows_seeded_and_says_so(scored):
    fig = rf.plot.distributions(scored, "answer_relevance", sample=50, seed=3)
    assert sum(p.get_height() for p in fig.axes[0].patches) == 50
    assert "sample of 50 of 200 rows" in fig._suptitle.get_text()
    assert fig.axes[0].get_title().endswith("n=200, nulls=0")  # the counts are of every row
    again = rf.plot.distributions(scored, "answer_relevance", sample=50, seed=3)
    assert [p.get_height() for p in again.axes[0].patches] == [p.get_height() for p in fig.axes[0].patches]
    full = [p.get_height() for p in rf.plot.distributions(scored, "answer_relevance").axes[0].patches]
    most = [p.get_height() for p in rf.plot.distributions(scored, "answer_relevance", sample=199).axes[0].patches]
    assert sum(most) == 199 and all(m <= f for m, f in zip(most, full))  # rows drawn without replacement
    whole = rf.plot.distributions(scored, "answer_relevance", sample=500, title="mine")
    assert sum(p.get_height() for p in whole.axes[0].patches) == 200 and whole._suptitle.get_text() == "mine"


def test_distributions_refuses_bad_input(scored):
    with pytest.raises(SchemaError, match="no ragframe score columns") as error:
        rf.plot.distributions(scored.select("id", "question"))
    assert error.value.function == "distributions"
    with pytest.raises(SchemaError) as error:
        rf.plot.distributions(scored, ["question"])
    assert error.value.column == "question" and error.value.found == "String"
    with pytest.raises(SchemaError, match="NaN") as error:
        rf.plot.distributions(pl.DataFrame({"mrr": [0.5, float("nan")]}))
    assert error.value.row == 1
    with pytest.raises(SchemaError, match="nothing to plot"):
        rf.plot.distributions(pl.DataFrame({"mrr": [None, None]}, schema={"mrr": pl.Float64}))
    with pytest.raises(SchemaError, match="missing column"):
        rf.plot.distributions(scored, ["ndcg_at_10"])
    for bad in ({"kind": "box"}, {"bins": 0}, {"sample": 0}, {"seed": -1}, {"thresholds": {"mrr": 0.5}}):
        with pytest.raises(InvalidParameterError, match="distributions"):
            rf.plot.distributions(scored, **bad)
    with pytest.raises(InvalidParameterError, match="thresholds"):
        rf.plot.distributions(scored, thresholds={"faithfulness": "high"})


# ----------------------------------------------------------------------------- slices


def test_slices_cells_are_summarize_means_and_labels_carry_counts(scored):
    fig = rf.plot.slices(scored, by="reaction")
    ax = fig.axes[0]
    summary = rf.summarize(scored, by="reaction")
    expected = summary.pivot(on="reaction", index="metric", values="mean")
    slices = ["no_reaction", "thumb_down", "thumb_up"]  # summarize's order: sorted
    cells = np.asarray(ax.images[0].get_array())
    assert cells.shape == (4, 3)
    assert cells.tolist() == expected.select(slices).to_numpy().tolist()
    assert [t.get_text() for t in ax.get_yticklabels()] == expected["metric"].to_list()
    sizes = dict(scored["reaction"].value_counts().iter_rows())
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"{s}\nn={sizes[s]}" for s in slices]
    assert sizes == {"no_reaction": 185, "thumb_up": 9, "thumb_down": 6}
    annotated = [t.get_text() for t in ax.texts]
    assert annotated[:3] == [f"{v:.3g}" for v in cells[0]]  # row-major: faithfulness first


def test_slices_takes_a_summary_frame_and_other_statistics(scored):
    summary = rf.summarize(scored, by="reaction")
    from_summary = rf.plot.slices(summary, by="reaction")
    from_scores = rf.plot.slices(scored, by="reaction")
    assert np.array_equal(from_summary.axes[0].images[0].get_array(), from_scores.axes[0].images[0].get_array())
    fig = rf.plot.slices(scored, "reaction", ["answer_relevance", "faithfulness"], stat="p50")
    cells = np.asarray(fig.axes[0].images[0].get_array())
    p50 = rf.summarize(scored, metrics=["answer_relevance", "faithfulness"], by="reaction")
    assert cells.tolist() == p50.pivot(on="reaction", index="metric", values="p50").drop("metric").to_numpy().tolist()
    picked = rf.plot.slices(summary, by="reaction", metrics=["context_relevance", "faithfulness"])
    assert [t.get_text() for t in picked.axes[0].get_yticklabels()] == ["context_relevance", "faithfulness"]
    assert picked.axes[0].get_title() == "mean by reaction"


def test_slices_two_columns_and_null_slices(scored):
    frame = scored.with_columns(
        half=pl.when(pl.int_range(pl.len()) < 100).then(pl.lit("first")).otherwise(pl.lit(None, pl.String))
    )
    fig = rf.plot.slices(frame, by=["reaction", "half"], metrics="faithfulness")
    labels = [t.get_text().split("\n")[0] for t in fig.axes[0].get_xticklabels()]
    assert "no_reaction / null" in labels and "thumb_up / first" in labels
    total = sum(int(t.get_text().split("n=")[1]) for t in fig.axes[0].get_xticklabels())
    assert total == 200


def test_slices_refuses_bad_input(scored):
    with pytest.raises(SchemaError, match="missing column") as error:
        rf.plot.slices(scored, by="model")
    assert error.value.column == "model"
    summary = rf.summarize(scored, by="reaction")
    with pytest.raises(SchemaError, match="no rows"):
        rf.plot.slices(summary.clear(), by="reaction")
    with pytest.raises(SchemaError) as error:
        rf.plot.slices(summary.drop("count"), by="reaction")
    assert error.value.column == "count"
    with pytest.raises(SchemaError, match="not in the summary"):
        rf.plot.slices(summary, by="reaction", metrics=["mrr"])
    with pytest.raises(InvalidParameterError, match="stat"):
        rf.plot.slices(scored, by="reaction", stat="median")
    with pytest.raises(InvalidParameterError, match="by"):
        rf.plot.slices(scored, by=[])
    empty = pl.DataFrame({"mrr": [None, None], "g": ["a", "b"]}, schema={"mrr": pl.Float64, "g": pl.String})
    with pytest.raises(SchemaError, match="nothing to plot"):
        rf.plot.slices(empty, by="g")


# ----------------------------------------------------------------------------- compare


def test_compare_forest_plot_draws_compares_deltas_and_intervals(comparison):
    fig = rf.plot.compare(comparison)
    (ax,) = fig.axes
    (bars,) = _by_gid(ax.collections, "ci")
    assert isinstance(bars, LineCollection)
    rows = comparison.with_row_index("y")
    with_ci = rows.filter(pl.col("ci_low").is_not_null())
    segments = np.array([[*s[:, 0].tolist(), s[0, 1]] for s in bars.get_segments()])  # x0, x1, y
    assert segments[:, 0].tolist() == with_ci["ci_low"].to_list()
    assert segments[:, 1].tolist() == with_ci["ci_high"].to_list()
    assert segments[:, 2].tolist() == with_ci["y"].cast(pl.Float64).to_list()
    for gid, flag in (("delta-significant", True), ("delta", False)):
        (points,) = _by_gid(ax.lines, gid)
        part = rows.filter(pl.col("significant") == flag)
        assert points.get_xdata().tolist() == part["delta"].to_list()
        assert points.get_ydata().tolist() == part["y"].cast(pl.Float64).to_list()
    assert comparison["significant"].sum() >= 3 and not comparison["significant"].all()
    flipped = comparison.with_columns(~pl.col("significant"))  # the marks follow the frame's column
    (points,) = _by_gid(rf.plot.compare(flipped).axes[0].lines, "delta-significant")
    assert points.get_xdata().tolist() == comparison.filter(~pl.col("significant"))["delta"].to_list()
    labels = [t.get_text() for t in ax.get_yticklabels()]
    expected = [
        f"{'* ' if sig else ''}{metric} (n={n})"
        for metric, n, sig in comparison.select("metric", "n", "significant").iter_rows()
    ]
    assert labels == expected
    (zero,) = _by_gid(ax.lines, "zero")
    assert list(zero.get_xdata()) == [0.0, 0.0]
    assert ax.get_ylim() == (comparison.height - 0.5, -0.5)  # first row on top
    assert "t test" in ax.get_title()


def test_compare_with_slices_has_one_row_per_metric_and_slice(scored, ares_log):
    broken = ares_log.with_columns(pl.col("contexts").shift(1, fill_value=pl.col("contexts").last()))
    other = rf.evaluate(broken, HEURISTICS)
    by_reaction = rf.compare(scored, other, on="id", by="reaction", metrics=["faithfulness", "answer_relevance"])
    fig = rf.plot.compare(by_reaction, title="wrong contexts")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == by_reaction.height == 6
    n = scored.filter((pl.col("reaction") == "no_reaction") & pl.col("faithfulness").is_not_null()).height
    assert labels[0] == f"* faithfulness | no_reaction (n={n})" and n == by_reaction["n"][0] == 178
    assert fig.axes[0].get_title() == "wrong contexts"
    (points,) = _by_gid(fig.axes[0].lines, "delta-significant")
    assert points.get_xdata().tolist() == by_reaction.filter("significant")["delta"].to_list()


def test_compare_refuses_nothing_to_plot(comparison):
    with pytest.raises(SchemaError, match="no rows") as error:
        rf.plot.compare(comparison.clear())
    assert error.value.function == "compare"
    with pytest.raises(SchemaError) as error:
        rf.plot.compare(comparison.drop("ci_high"))
    assert error.value.column == "ci_high"
    nulls = comparison.with_columns(pl.lit(None, pl.Float64).alias("delta"))
    with pytest.raises(SchemaError, match="every delta is null"):
        rf.plot.compare(nulls)
    with pytest.raises(InvalidParameterError):
        rf.plot.compare([1, 2])


# ----------------------------------------------------------------------------- ranking_curve


def test_ranking_curve_y_values_are_the_run_means(trec):
    fig = rf.plot.ranking_curve(trec, "ndcg")
    (ax,) = fig.axes
    assert [line.get_label() for line in ax.lines] == ["bm25", "rerank"]
    for line, name in zip(ax.lines, ["bm25", "rerank"]):
        summary = rf.run_summary(trec[name])
        assert line.get_xdata().tolist() == [1, 3, 5, 10, 20, 100]
        expected = [summary[f"ndcg_at_{k}"].item() for k in [1, 3, 5, 10, 20, 100]]
        assert line.get_ydata().tolist() == pytest.approx(expected, rel=1e-12)
    assert round(ax.lines[0].get_ydata()[3], 4) == 0.5058  # BM25's published nDCG@10
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "mean ndcg@k"


def test_ranking_curve_reads_run_summary_output_and_selects_k(trec):
    summaries = {name: rf.run_summary(frame) for name, frame in trec.items()}
    fig = rf.plot.ranking_curve(summaries, "precision_at_k", k=[5, 1, 10])
    for line, name in zip(fig.axes[0].lines, trec):
        assert line.get_xdata().tolist() == [1, 5, 10]
        expected = [summaries[name][f"precision_at_{k}"].item() for k in (1, 5, 10)]
        assert line.get_ydata().tolist() == expected
    assert fig.axes[0].get_xscale() == "linear"
    one = rf.plot.ranking_curve(trec["bm25"], "recall", title="BM25")
    assert [line.get_label() for line in one.axes[0].lines] == ["run"] and one.axes[0].get_title() == "BM25"


def test_ranking_curve_leaves_null_queries_out_and_sorts_k():
    per_query = pl.DataFrame(
        {"query_id": ["a", "b", "c"], "ndcg_at_10": [0.5, 1.0, None], "ndcg_at_2": [0.25, 0.5, None]}
    )
    (line,) = rf.plot.ranking_curve(per_query).axes[0].lines
    summary = rf.run_summary(per_query)  # query c has no judgments: left out
    assert line.get_xdata().tolist() == [2, 10]
    assert line.get_ydata().tolist() == [summary["ndcg_at_2"].item(), summary["ndcg_at_10"].item()] == [0.375, 0.75]


def test_ranking_curve_one_curve_per_prefix(trec):
    both = pl.concat(
        [trec["bm25"].select(pl.col("^ndcg_at_.*$").name.prefix("bm25_")), trec["rerank"].select("^ndcg_at_.*$")],
        how="horizontal",
    )
    lines = rf.plot.ranking_curve({"runs": both}).axes[0].lines
    assert [line.get_label() for line in lines] == ["runs bm25_", "runs"]
    assert lines[0].get_ydata()[3] == pytest.approx(rf.run_summary(trec["bm25"])["ndcg_at_10"].item())


def test_ranking_curve_refuses_bad_input(trec):
    with pytest.raises(InvalidParameterError, match="cutoff measure"):
        rf.plot.ranking_curve(trec, "r_precision")
    with pytest.raises(InvalidParameterError, match="k=7"):
        rf.plot.ranking_curve(trec, k=[5, 7])
    with pytest.raises(InvalidParameterError, match="k"):
        rf.plot.ranking_curve(trec, k=0)
    with pytest.raises(InvalidParameterError, match="runs"):
        rf.plot.ranking_curve({})
    with pytest.raises(SchemaError, match="no ndcg_at_<k> column in run 'x'"):
        rf.plot.ranking_curve({"x": trec["bm25"].select("query_id", "mrr")})
    with pytest.raises(SchemaError, match="no rows"):
        rf.plot.ranking_curve(trec["bm25"].clear())
    with pytest.raises(SchemaError, match="nothing to plot"):
        rf.plot.ranking_curve(pl.DataFrame({"ndcg_at_5": [None]}, schema={"ndcg_at_5": pl.Float64}))


# ----------------------------------------------------------------------------- calibration


def test_calibration_roc_points_and_auroc_equal_sklearn_and_agreement(scored):
    fig = rf.plot.calibration(scored, LABELS)
    (ax,) = fig.axes
    agreement = rf.agreement_with_labels(scored, label_columns=LABELS, n_resamples=200)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(texts) == 4 and texts[-1] == "chance (AUROC 0.5)"
    for i, (metric, label) in enumerate(LABELS.items()):
        pairs = scored.select(metric, label).drop_nulls()
        y, s = pairs[label].to_numpy(), pairs[metric].to_numpy()
        fpr, tpr, _ = roc_curve(y, s)
        (line,) = _by_gid(ax.lines, f"roc:{metric}")
        assert line.get_xdata().tolist() == pytest.approx(fpr.tolist(), abs=1e-15)
        assert line.get_ydata().tolist() == pytest.approx(tpr.tolist(), abs=1e-15)
        auc = roc_auc_score(y, s)
        assert np.trapezoid(line.get_ydata(), line.get_xdata()) == pytest.approx(auc, abs=1e-12)
        assert agreement["auroc"][i] == pytest.approx(auc, abs=1e-12)
        positives = int(y.sum())
        assert texts[i] == f"{metric} vs {label}: AUROC {auc:.3f} (n={y.size}, {positives} positive)"
    assert texts[0].startswith("faithfulness vs human_faithfulness: AUROC 0.8")  # nulled rows left out: n=193
    assert "n=193" in texts[0]
    (chance,) = _by_gid(ax.lines, "chance")
    assert list(chance.get_xdata()) == [0, 1] and list(chance.get_ydata()) == [0, 1]


def test_calibration_one_label_for_every_metric_and_booleans(scored):
    frame = scored.with_columns(pl.col("human_faithfulness").cast(pl.Boolean).alias("good"))
    fig = rf.plot.calibration(frame, "good", metrics=["faithfulness", "answer_relevance"], title="t")
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    auc = roc_auc_score(frame["good"].to_numpy(), frame["answer_relevance"].to_numpy())
    assert texts[1] == f"answer_relevance: AUROC {auc:.3f} (n=200, 172 positive)"
    assert fig.axes[0].get_title() == "t"
    default = rf.plot.calibration(frame, "good")  # every score column, composite_score included
    assert len(_by_gid(default.axes[0].lines, "roc:composite_score")) == 1
    assert default.axes[0].get_title() == "ROC against good"


def test_calibration_turns_a_lower_is_better_score_around():
    rf.register_metric(
        rf.Metric(
            "plot_answer_chars",
            "custom",
            ("answer",),
            "Characters.",
            kernel=lambda view: view["answer"].str.len_chars().cast(pl.Float64),
            higher_is_better=False,
            bounds=None,  # a count, and the scores below go negative: unbounded (a bounded metric refuses them)
        )
    )
    try:
        rng = np.random.default_rng(5)
        y = rng.integers(0, 2, 80)
        s = np.round(rng.random(80) - 0.3 * y, 1)  # lower for positives
        fig = rf.plot.calibration(pl.DataFrame({"plot_answer_chars": s, "human": y}), "human")
        (line,) = _by_gid(fig.axes[0].lines, "roc:plot_answer_chars")
        fpr, tpr, _ = roc_curve(y, -s)
        assert line.get_xdata().tolist() == fpr.tolist() and line.get_ydata().tolist() == tpr.tolist()
        text = fig.legends[0].get_texts()[0].get_text()
        assert f"AUROC {roc_auc_score(y, -s):.3f}" in text and roc_auc_score(y, -s) > 0.5
    finally:
        rf.unregister_metric("plot_answer_chars")


def test_roc_points_match_sklearn_on_ties():
    from ragframe.plot.calibration import roc_points

    rng = np.random.default_rng(5)
    for _ in range(20):
        score = rng.integers(0, 6, size=60) / 5  # many ties
        y = rng.integers(0, 2, size=60)
        fpr, tpr, _ = roc_curve(y, score)
        ours = roc_points(score, y == 1)
        assert ours[0].tolist() == fpr.tolist() and ours[1].tolist() == tpr.tolist()


def test_calibration_refuses_labels_it_cannot_use(scored):
    with pytest.raises(SchemaError, match="not 0/1") as error:
        rf.plot.calibration(scored.with_columns(grade=pl.lit(2)), "grade", metrics="faithfulness")
    assert error.value.column == "grade" and "2" in error.value.found
    one_class = scored.with_columns(pl.lit(1).alias("all_good"))
    with pytest.raises(SchemaError, match="single class") as error:
        rf.plot.calibration(one_class, "all_good", metrics="faithfulness")
    assert error.value.column == "all_good"
    with pytest.raises(SchemaError, match="not 0/1"):
        rf.plot.calibration(scored, "question", metrics="faithfulness")
    with pytest.raises(SchemaError, match="missing column") as error:
        rf.plot.calibration(scored, "human_x", metrics="faithfulness")
    assert error.value.column == "human_x"
    with pytest.raises(InvalidParameterError, match="metrics"):
        rf.plot.calibration(scored, LABELS, metrics="faithfulness")
    with pytest.raises(InvalidParameterError, match="labels"):
        rf.plot.calibration(scored, {})
    with pytest.raises(SchemaError, match="no ragframe score columns"):
        rf.plot.calibration(scored.select("id", "human_faithfulness"), "human_faithfulness")
    nan_label = pl.DataFrame({"mrr": [0.1, 0.5, 0.9], "y": [0.0, float("nan"), 1.0]})
    with pytest.raises(SchemaError, match="not 0/1"):
        rf.plot.calibration(nan_label, "y")


# ----------------------------------------------------------------------------- every frame kind


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_frame_kind_gives_the_same_figure(kind, scored, trec, comparison):
    convert = KINDS[kind]
    small = scored.select("id", "reaction", *HEURISTICS, *LABELS.values())

    def data(fig):
        ax = fig.axes[0]
        return (
            [a.get_title() for a in fig.axes],
            [np.asarray(line.get_xydata()).tolist() for line in ax.lines],
            [p.get_height() for p in ax.patches],
            [np.asarray(im.get_array()).tolist() for im in ax.images],
            [t.get_text() for t in ax.get_yticklabels()],
        )

    calls = [
        (rf.plot.distributions, small, {}),
        (rf.plot.slices, small, {"by": "reaction"}),
        (rf.plot.compare, comparison, {}),
        (rf.plot.ranking_curve, trec["rerank"], {}),
        (rf.plot.calibration, small, {"labels": LABELS}),
    ]
    for function, frame, options in calls:
        assert data(function(convert(frame), **options)) == data(function(frame, **options)), function.__name__
    fig = rf.plot.ranking_curve({name: convert(frame) for name, frame in trec.items()})
    assert len(fig.axes[0].lines) == 2


# ----------------------------------------------------------------------------- matplotlib use


@pytest.mark.slow
def test_figures_save_and_leave_no_pyplot_figure_open(scored, trec, comparison, tmp_path):
    figures = [
        rf.plot.distributions(scored, kind="ecdf"),
        rf.plot.slices(scored, by="reaction"),
        rf.plot.compare(comparison),
        rf.plot.ranking_curve(trec),
        rf.plot.calibration(scored, LABELS),
    ]
    for i, fig in enumerate(figures):
        assert type(fig) is Figure
        width, height = fig.get_size_inches()
        assert 6 <= width <= 12 and 2 <= height <= 12
        fig.savefig(tmp_path / f"{i}.png", dpi=50)
        assert (tmp_path / f"{i}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if "matplotlib.pyplot" in sys.modules:
        assert sys.modules["matplotlib.pyplot"].get_fignums() == []


@pytest.mark.slow
def test_importing_ragframe_plot_does_not_import_matplotlib():
    code = (
        "import sys, ragframe, ragframe.plot as p; "
        "assert 'matplotlib' not in sys.modules, 'imported'; "
        "assert callable(p.distributions); print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_missing_matplotlib_raises_naming_the_extra(monkeypatch, scored, trec, comparison):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith(("matplotlib.", "ragframe.plot"))]:
        monkeypatch.delitem(sys.modules, name)
    real_import = builtins.__import__

    def blocked(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
    monkeypatch.delattr(rf, "plot", raising=False)
    import ragframe.plot as plot  # works without matplotlib

    calls = [
        lambda: plot.distributions(scored),
        lambda: plot.slices(scored, by="reaction"),
        lambda: plot.compare(comparison),
        lambda: plot.ranking_curve(trec),
        lambda: plot.calibration(scored, LABELS),
    ]
    for call in calls:
        with pytest.raises(MissingDependencyError, match=r"needs matplotlib: pip install 'ragframe\[plot\]'") as error:
            call()
        assert isinstance(error.value, ImportError)
    assert "matplotlib" not in sys.modules
