"""Calibrator.threshold chosen by cross-validation and Calibrator.check() cross-validated (issue 36).

Oracles: scikit-learn (StratifiedKFold, IsotonicRegression, LogisticRegression, brier_score_loss)
and held-out rows of the ARES log (benchmarks/few_labels.py prints the full measurement).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss
from sklearn.model_selection import StratifiedKFold

import ragframe as rf


@pytest.fixture(scope="module")
def ares(ares_log) -> pl.DataFrame:
    scored = rf.evaluate(ares_log, ["faithfulness"])
    return scored.select("faithfulness", human=pl.col("human_faithfulness").cast(pl.Int64))


@pytest.mark.parametrize("method", ["isotonic", "logistic"])
@pytest.mark.parametrize(("folds", "seed"), [(5, 0), (3, 7)])
def test_cross_validated_check_equals_scikit_learn(ares: pl.DataFrame, method: str, folds: int, seed: int) -> None:
    calibrator = rf.calibrate(ares, score="faithfulness", label="human", method=method)
    got = calibrator.check(folds=folds, seed=seed).rows_by_key("stage", named=True, unique=True)
    x, y = ares["faithfulness"].to_numpy(), ares["human"].to_numpy()
    out_of_fold = np.empty(y.size)
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(x, y):
        if method == "isotonic":
            model = IsotonicRegression(out_of_bounds="clip").fit(x[train], y[train])
            out_of_fold[test] = model.predict(x[test])
        else:
            model = LogisticRegression(C=np.inf, tol=1e-10, max_iter=10_000).fit(x[train, None], y[train])
            out_of_fold[test] = model.predict_proba(x[test, None])[:, 1]
    assert got["after"]["n"] == y.size
    assert got["after"]["brier"] == pytest.approx(brier_score_loss(y, out_of_fold), abs=1e-9)
    assert got["before"]["brier"] == pytest.approx(brier_score_loss(y, x), abs=1e-12)
    in_sample = calibrator.report.rows_by_key("stage", named=True, unique=True)
    assert got["after"]["brier"] > in_sample["after"]["brier"]  # the in-sample report flatters the fit


def test_cross_validated_threshold_holds_its_target_on_held_out_rows(ares: pl.DataFrame) -> None:
    """100 seeds: fit on 100 ARES rows, pass mark for precision 0.95, precision on the other 100.

    In-sample the mark falls short on average (its choice overfits the rows fit); chosen by
    cross-validation the held-out precision meets the target on average.
    """
    x, y = ares["faithfulness"].to_numpy(), ares["human"].to_numpy().astype(float)
    held = {"in-sample": [], "cross-validated": []}
    for seed in range(100):
        fit = np.random.default_rng(seed).permutation(y.size) < 100
        calibrator = rf.calibrate(pl.DataFrame({"s": x[fit], "y": y[fit]}), score="s", label="y")
        marks = {}
        for selection in held:
            try:
                marks[selection] = calibrator.threshold(precision=0.95, selection=selection)
            except rf.InvalidParameterError:
                continue
        if len(marks) < 2:
            continue
        assert marks["cross-validated"] >= marks["in-sample"]  # a margin only ever makes the mark stricter
        for selection, cut in marks.items():
            passed = x[~fit] >= cut
            held[selection].append(y[~fit][passed].mean() if passed.any() else 1.0)
    assert len(held["in-sample"]) >= 95
    assert np.mean(held["in-sample"]) < 0.95 <= np.mean(held["cross-validated"])


def test_recall_margin_makes_the_mark_looser() -> None:
    rng = np.random.default_rng(3)
    x = rng.random(300)
    y = (rng.random(300) < x).astype(float)
    calibrator = rf.calibrate(pl.DataFrame({"s": x, "y": y}), score="s", label="y")
    loose = calibrator.threshold(recall=0.9)
    assert loose <= calibrator.threshold(recall=0.9, selection="in-sample")
    assert y[x >= loose].sum() / y.sum() >= 0.9


def test_too_few_labels_of_a_class_to_cross_validate() -> None:
    calibrator = rf.calibrate(
        pl.DataFrame({"s": [0.9, 0.8, 0.2, 0.1, 0.5], "y": [1, 1, 0, 0, 0]}), score="s", label="y"
    )
    assert calibrator.threshold(precision=1.0, selection="in-sample") == 0.8
    one = rf.calibrate(pl.DataFrame({"s": [0.9, 0.8, 0.2, 0.1], "y": [1, 0, 0, 0]}), score="s", label="y")
    with pytest.raises(rf.InvalidParameterError, match=r"cannot cross-validate on 4 labels with 1 of a class in 'y'"):
        one.threshold(precision=0.9)
    with pytest.raises(rf.InvalidParameterError, match="cannot cross-validate"):
        one.check()
    with pytest.raises(rf.InvalidParameterError, match="selection must be one of"):
        calibrator.threshold(precision=0.9, selection="cv")
    with pytest.raises(rf.InvalidParameterError, match="folds must be"):
        calibrator.threshold(precision=0.9, folds=1)
