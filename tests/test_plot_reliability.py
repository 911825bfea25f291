"""``rf.plot.calibration(..., kind="reliability")``: the reliability diagram's points are scikit-learn's.

Each drawn point is checked against ``sklearn.calibration.calibration_curve`` (both bin
strategies), the legend's Brier score against ``sklearn.metrics.brier_score_loss`` and its
ECE against hand arithmetic and :func:`ragframe.stats.calibrate.expected_calibration_error`.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

pytest.importorskip("matplotlib")

from matplotlib.figure import Figure
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

import ragframe as rf
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.plot.calibration import reliability_points
from ragframe.stats.calibrate import expected_calibration_error

HEURISTICS = ["faithfulness", "answer_relevance", "context_relevance"]
LABELS = {m: f"human_{m}" for m in HEURISTICS}


@pytest.fixture(scope="module")
def scored(ares_log) -> pl.DataFrame:
    return rf.evaluate(ares_log, HEURISTICS)


def _line(fig: Figure, gid: str):
    found = [line for ax in fig.axes for line in ax.lines if line.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def _stairs(fig: Figure, gid: str):
    found = [patch for ax in fig.axes for patch in ax.patches if patch.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [5, 10])
def test_points_equal_sklearn_calibration_curve(scored, strategy, n_bins):
    fig = rf.plot.calibration(scored, LABELS, kind="reliability", n_bins=n_bins, strategy=strategy)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[-1] == "perfectly calibrated"
    for i, (metric, label) in enumerate(LABELS.items()):
        y, p = scored[label].to_numpy(), scored[metric].to_numpy()
        prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
        line = _line(fig, f"reliability:{metric}")
        np.testing.assert_allclose(line.get_xdata(), prob_pred, rtol=0, atol=1e-12)
        np.testing.assert_allclose(line.get_ydata(), prob_true, rtol=0, atol=1e-12)
        brier = brier_score_loss(y, p)
        assert f"Brier {brier:.3f} (n=200, {int(y.sum())} positive)" in texts[i]
        assert texts[i].startswith(f"{metric} vs {label}: ECE ")
        counts = _stairs(fig, f"counts:{metric}")
        assert counts.get_data().values.sum() == 200  # every row in a bin
    perfect = _line(fig, "perfect")
    assert list(perfect.get_xdata()) == [0, 1] and list(perfect.get_ydata()) == [0, 1]


def test_ece_is_the_bin_weighted_gap_of_the_calibrator_s_report(scored):
    fig = rf.plot.calibration(scored, "human_faithfulness", metrics="faithfulness", kind="reliability")
    y, p = scored["human_faithfulness"].to_numpy(), scored["faithfulness"].to_numpy()
    ece = expected_calibration_error(y, p)
    text = fig.legends[0].get_texts()[0].get_text()
    assert text.startswith(f"faithfulness: ECE {ece:.3f}, Brier ")  # one label: not named again
    # by hand: a two-bin diagram of six rows
    df = pl.DataFrame({"faithfulness": [0.9, 0.8, 0.3, 0.6, 0.2, 0.7], "human": [1, 1, 0, 1, 0, 0]})
    fig = rf.plot.calibration(df, "human", kind="reliability", n_bins=2)
    # bin [0, 0.5]: 0.3, 0.2 (mean 0.25, no 1): gap 0.25 on 2 rows; bin (0.5, 1]: mean 0.75, three 1 of 4: gap 0
    # ECE 0.5 / 6; Brier (0.01 + 0.04 + 0.09 + 0.16 + 0.04 + 0.49) / 6
    assert fig.legends[0].get_texts()[0].get_text() == "faithfulness: ECE 0.083, Brier 0.138 (n=6, 3 positive)"
    line = _line(fig, "reliability:faithfulness")
    assert line.get_xdata().tolist() == pytest.approx([0.25, 0.75]) and line.get_ydata().tolist() == [0.0, 0.75]
    stairs = _stairs(fig, "counts:faithfulness").get_data()
    assert stairs.values.tolist() == [2, 4] and stairs.edges.tolist() == [0.0, 0.5, 1.0]


def test_a_calibrated_score_lies_closer_to_the_diagonal(scored):
    calibrator = rf.calibrate(scored, score="faithfulness", label="human_faithfulness")
    frame = calibrator.predict(scored)
    labels = {"faithfulness": "human_faithfulness", "faithfulness_calibrated": "human_faithfulness"}
    fig = rf.plot.calibration(frame, labels, kind="reliability")
    raw, fitted = (t.get_text() for t in fig.legends[0].get_texts()[:2])
    report = calibrator.report
    assert f"ECE {report['ece'][0]:.3f}, Brier {report['brier'][0]:.3f}" in raw  # "before"
    assert f"ECE {report['ece'][1]:.3f}, Brier {report['brier'][1]:.3f}" in fitted  # "after", in-sample
    assert report["ece"][1] < report["ece"][0]


def test_points_match_sklearn_on_ties_and_edges():
    rng = np.random.default_rng(11)
    for _ in range(20):
        p = rng.integers(0, 11, size=80) / 10  # scores on the bin edges, many ties
        y = rng.integers(0, 2, size=80)
        for strategy in ("uniform", "quantile"):
            prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy=strategy)
            mean, share, count, _ = reliability_points(p, y == 1, 10, strategy)
            np.testing.assert_allclose(mean, prob_pred, rtol=0, atol=1e-12)
            np.testing.assert_allclose(share, prob_true, rtol=0, atol=1e-12)
            assert count.sum() == 80


def test_a_lower_is_better_score_is_read_as_one_minus_it():
    rf.register_metric(
        rf.Metric(
            "plot_rel_chars",
            "custom",
            ("answer",),
            "Characters.",
            kernel=lambda view: view["answer"].str.len_chars().cast(pl.Float64),
            higher_is_better=False,
        )
    )
    try:
        rng = np.random.default_rng(5)
        y = rng.integers(0, 2, 60)
        s = np.round(rng.random(60), 2)
        fig = rf.plot.calibration(pl.DataFrame({"plot_rel_chars": s, "human": y}), "human", kind="reliability")
        prob_true, prob_pred = calibration_curve(y, 1 - s, n_bins=10)
        line = _line(fig, "reliability:plot_rel_chars")
        np.testing.assert_allclose(line.get_xdata(), prob_pred, rtol=0, atol=1e-12)
        np.testing.assert_allclose(line.get_ydata(), prob_true, rtol=0, atol=1e-12)
        assert fig.legends[0].get_texts()[0].get_text().startswith("1 - plot_rel_chars: ECE ")
    finally:
        rf.unregister_metric("plot_rel_chars")


def test_one_class_is_drawn_and_bad_input_is_refused(scored):
    all_good = scored.with_columns(pl.lit(1).alias("all_good"))
    fig = rf.plot.calibration(all_good, "all_good", metrics="faithfulness", kind="reliability")
    assert set(_line(fig, "reliability:faithfulness").get_ydata().tolist()) == {1.0}
    with pytest.raises(SchemaError, match=r"outside its metric's bounds") as error:  # a registered [0, 1] metric
        rf.plot.calibration(pl.DataFrame({"mrr": [0.2, 1.5], "y": [0, 1]}), "y", kind="reliability")
    assert error.value.column == "mrr" and error.value.row == 1 and "1.5" in error.value.found
    with pytest.raises(SchemaError, match=r"into \[0, 1\] first \(rf.calibrate\)") as error:  # any other column
        rf.plot.calibration(pl.DataFrame({"logit": [0.2, 1.5], "y": [0, 1]}), "y", metrics="logit", kind="reliability")
    assert error.value.column == "logit" and "1 outside, e.g. 1.5" in error.value.found
    with pytest.raises(SchemaError, match="no row has both the score and the label"):
        rf.plot.calibration(pl.DataFrame({"mrr": [0.2, None], "y": [None, 1]}), "y", kind="reliability")
    with pytest.raises(SchemaError, match="not 0/1"):
        rf.plot.calibration(scored.with_columns(grade=pl.lit(2)), "grade", metrics="faithfulness", kind="reliability")
    for options, name in (({"kind": "pr"}, "kind"), ({"n_bins": 0}, "n_bins"), ({"strategy": "kmeans"}, "strategy")):
        with pytest.raises(InvalidParameterError, match=name):
            rf.plot.calibration(scored, LABELS, kind=options.pop("kind", "reliability"), **options)
