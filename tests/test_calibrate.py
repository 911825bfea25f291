"""rf.calibrate: isotonic and logistic calibration against scikit-learn and statsmodels (issue 24, item 2)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.calibration import calibration_curve
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss, precision_recall_curve

import ragframe as rf
from ragframe.datasets import example_rag_log


@pytest.fixture(scope="module")
def ares(ares_log) -> pl.DataFrame:
    """The 200 ARES rows with the heuristic faithfulness score; 40 labels hidden (null)."""
    scored = rf.evaluate(ares_log, metrics=["faithfulness"])
    hidden = np.random.default_rng(0).permutation(scored.height) < 40
    return scored.select("id", "faithfulness", "human_faithfulness").with_columns(
        human=pl.when(pl.Series(~hidden)).then(pl.col("human_faithfulness"))
    )


def _fit_data(df: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    labeled = df.filter(pl.col("human").is_not_null())
    return labeled["faithfulness"].to_numpy(), labeled["human"].to_numpy().astype(float)


def test_isotonic_equals_scikit_learn(ares: pl.DataFrame) -> None:
    x, y = _fit_data(ares)
    calibrator = rf.calibrate(ares, score="faithfulness", label="human")
    reference = IsotonicRegression(out_of_bounds="clip").fit(x, y)
    new = pl.DataFrame({"faithfulness": np.r_[np.linspace(-0.5, 1.5, 41), ares["faithfulness"].to_numpy()]})
    got = calibrator.predict(new)["faithfulness_calibrated"].to_numpy()
    np.testing.assert_array_equal(got, reference.predict(new["faithfulness"].to_numpy()))
    assert calibrator.report["n"].to_list() == [160, 160]


def test_logistic_equals_scikit_learn_and_the_statsmodels_mle(ares: pl.DataFrame) -> None:
    x, y = _fit_data(ares)
    calibrator = rf.calibrate(ares, score="faithfulness", label="human", method="logistic")
    got = calibrator.predict(ares)["faithfulness_calibrated"].to_numpy()
    sk = (
        LogisticRegression(C=np.inf, tol=1e-10, max_iter=10_000)
        .fit(x.reshape(-1, 1), y)
        .predict_proba(ares[["faithfulness"]].to_numpy())[:, 1]
    )
    np.testing.assert_allclose(got, sk, rtol=0, atol=1e-12)
    mle = sm.Logit(y, sm.add_constant(x)).fit(disp=0)  # an independent unpenalised fit
    np.testing.assert_allclose(got, mle.predict(sm.add_constant(ares["faithfulness"].to_numpy())), atol=1e-6)


def test_lower_is_better_metric_fits_a_decreasing_map() -> None:
    metric = rf.Metric(
        "toy_error_rate", "custom", ("answer",), "Errors.", kernel=lambda v: v["answer"], higher_is_better=False
    )
    rf.register_metric(metric)
    try:
        rng = np.random.default_rng(1)
        x = rng.random(300)
        y = (rng.random(300) < 1 - x).astype(float)  # a higher error rate, fewer good rows
        df = pl.DataFrame({"toy_error_rate": x, "human": y})
        calibrator = rf.calibrate(df, score="toy_error_rate", label="human")
        reference = IsotonicRegression(increasing=False, out_of_bounds="clip").fit(x, y)
        got = calibrator.predict(df)["toy_error_rate_calibrated"].to_numpy()
        np.testing.assert_array_equal(got, reference.predict(x))
        assert calibrator.report["brier"][0] == pytest.approx(brier_score_loss(y, 1 - x))  # before reads 1 - score
        order = np.argsort(x)
        assert np.all(np.diff(got[order]) <= 0)
        threshold = calibrator.threshold(precision=0.8)
        passed = x <= threshold
        assert y[passed].mean() >= 0.8
    finally:
        rf.unregister_metric("toy_error_rate")


@pytest.mark.parametrize("method", ["isotonic", "logistic"])
def test_report_equals_scikit_learn(ares: pl.DataFrame, method: str) -> None:
    x, y = _fit_data(ares)
    calibrator = rf.calibrate(ares, score="faithfulness", label="human", method=method)
    fitted = calibrator.predict(ares.filter(pl.col("human").is_not_null()))["faithfulness_calibrated"].to_numpy()
    report = calibrator.report.rows_by_key("stage", named=True, unique=True)
    assert report["before"]["brier"] == pytest.approx(brier_score_loss(y, x), abs=1e-12)
    assert report["after"]["brier"] == pytest.approx(brier_score_loss(y, fitted), abs=1e-12)
    assert report["before"]["ece"] == pytest.approx(_ece_by_hand(y, x), abs=1e-12)
    assert report["after"]["ece"] == pytest.approx(_ece_by_hand(y, fitted), abs=1e-12)
    assert report["after"]["brier"] < report["before"]["brier"]
    assert report["after"]["ece"] < report["before"]["ece"]


def test_check_on_held_out_rows(ares: pl.DataFrame) -> None:
    """The report on rows not fit: equal to scikit-learn on those rows; calibration helps there too."""
    fit, rest = ares.head(100), ares.tail(100)
    calibrator = rf.calibrate(fit, score="faithfulness", label="human")
    checked = calibrator.check(rest.to_pandas()).rows_by_key("stage", named=True, unique=True)
    labelled = rest.filter(pl.col("human").is_not_null())
    y = labelled["human"].to_numpy().astype(float)
    p = calibrator.predict(labelled)["faithfulness_calibrated"].to_numpy()
    assert checked["after"]["n"] == labelled.height
    assert checked["after"]["brier"] == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    assert checked["before"]["brier"] == pytest.approx(brier_score_loss(y, labelled["faithfulness"].to_numpy()))
    assert checked["after"]["ece"] == pytest.approx(_ece_by_hand(y, p), abs=1e-12)
    assert checked["after"]["brier"] < checked["before"]["brier"]
    with pytest.raises(rf.SchemaError, match="no labelled row to check against"):
        calibrator.check(rest.with_columns(human=pl.lit(None, pl.Int64)))


def _ece_by_hand(y: np.ndarray, p: np.ndarray) -> float:
    """ECE from scikit-learn's calibration_curve (bin means) and a plain loop counting each bin."""
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    counts = []
    for b in range(10):
        low, high = b / 10, (b + 1) / 10
        inside = [(low < v <= high) or (b == 0 and v == 0) for v in p]
        if any(inside):
            counts.append(sum(inside))
    assert len(counts) == len(prob_true)
    return float(sum(c * abs(t - q) for c, t, q in zip(counts, prob_true, prob_pred)) / len(p))


def test_ece_by_hand_arithmetic() -> None:
    from ragframe.stats.calibrate import expected_calibration_error

    # bin [0, 0.1]: labels 0, 1 at 0.05 each: |0.5 - 0.05|; bin (0.9, 1]: labels 1, 1 at 0.95: |1 - 0.95|
    got = expected_calibration_error(np.array([0.0, 1, 1, 1]), np.array([0.05, 0.05, 0.95, 0.95]))
    assert got == pytest.approx((2 * 0.45 + 2 * 0.05) / 4)
    # an edge belongs to the bin below it (as calibration_curve bins): 0.05 and 0.1 share [0, 0.1]
    assert expected_calibration_error(np.array([0.0, 1.0]), np.array([0.05, 0.1])) == pytest.approx(0.85 / 2)


def test_before_is_null_for_a_score_outside_0_1() -> None:
    df = pl.DataFrame({"latency": [120.0, 300.0, 80.0, 450.0], "human": [1, 0, 1, 0]})
    report = rf.calibrate(df, score="latency", label="human", method="logistic").report
    assert report["brier"][0] is None and report["ece"][0] is None and report["brier"][1] is not None


# --------------------------------------------------------------------------- thresholds


@pytest.mark.parametrize("target", [0.8, 0.9, 0.95])
def test_threshold_for_precision_equals_scikit_learn(ares: pl.DataFrame, target: float) -> None:
    x, y = _fit_data(ares)
    precision, recall, cuts = precision_recall_curve(y, x)
    ok = precision[:-1] >= target
    best = np.max(recall[:-1][ok])  # the most recall at that precision: the lowest such cut
    expected = cuts[ok & (recall[:-1] == best)].min()
    assert (
        rf.calibrate(ares, score="faithfulness", label="human").threshold(precision=target, selection="in-sample")
        == expected
    )


@pytest.mark.parametrize("target", [0.5, 0.8, 0.9, 1.0])
def test_threshold_for_recall_equals_scikit_learn(ares: pl.DataFrame, target: float) -> None:
    x, y = _fit_data(ares)
    _, recall, cuts = precision_recall_curve(y, x)
    expected = cuts[recall[:-1] >= target].max()  # the strictest cut keeping that recall
    got = rf.calibrate(ares, score="faithfulness", label="human").threshold(recall=target, selection="in-sample")
    assert got == expected
    assert (x[y == 1] >= got).mean() >= target


THRESHOLD_ERRORS = {
    "both": (dict(precision=0.9, recall=0.9), "exactly one of"),
    "none": ({}, "exactly one of"),
    "zero": (dict(precision=0), r"precision must be a number in \(0, 1\]"),
    "above one": (dict(recall=1.5), "recall must be a finite number"),
    "unreachable": (
        dict(precision=1.0, selection="in-sample"),
        "no pass mark on 's' reaches precision 1.0 on the 4 labelled rows",
    ),
}


@pytest.mark.parametrize(("options", "message"), THRESHOLD_ERRORS.values(), ids=THRESHOLD_ERRORS.keys())
def test_threshold_errors(options: dict, message: str) -> None:
    calibrator = rf.calibrate(pl.DataFrame({"s": [0.9, 0.8, 0.2, 0.1], "y": [0, 1, 0, 1]}), score="s", label="y")
    with pytest.raises(rf.InvalidParameterError, match=message):
        calibrator.threshold(**options)


# --------------------------------------------------------------------------- frames, pickling, batches


KINDS = {
    "polars": lambda d: d,
    "lazy": lambda d: d.lazy(),
    "arrow": lambda d: d.to_arrow(),
    "batch": lambda d: d.to_arrow().to_batches()[0],
    "pandas": lambda d: d.to_pandas(),
}


@pytest.mark.parametrize("kind", KINDS)
def test_frame_kind_in_is_kind_out(ares: pl.DataFrame, kind: str) -> None:
    calibrator = rf.calibrate(KINDS[kind](ares), score="faithfulness", label="human")
    expected = rf.calibrate(ares, score="faithfulness", label="human").predict(ares)
    out = calibrator.predict(KINDS[kind](ares))
    assert type(out) is type(KINDS[kind](ares))
    back = {
        "lazy": lambda o: o.collect(),
        "arrow": pl.from_arrow,
        "batch": lambda o: pl.from_arrow(pa.Table.from_batches([o])),
        "pandas": pl.from_pandas,
    }.get(kind, lambda o: o)(out)
    assert back.columns == [*ares.columns, "faithfulness_calibrated"]
    assert back["faithfulness_calibrated"].to_list() == expected["faithfulness_calibrated"].to_list()
    assert isinstance(out, (pl.DataFrame, pl.LazyFrame, pa.Table, pa.RecordBatch, pd.DataFrame))


@pytest.mark.parametrize("method", ["isotonic", "logistic"])
def test_pickles(ares: pl.DataFrame, method: str) -> None:
    calibrator = rf.calibrate(ares, score="faithfulness", label="human", method=method)
    again = pickle.loads(pickle.dumps(calibrator))
    assert again.predict(ares).equals(calibrator.predict(ares))
    assert again.report.equals(calibrator.report) and repr(again) == repr(calibrator)


def _batches(df: pl.DataFrame, size: int) -> Iterator[pl.DataFrame]:
    for start in range(0, df.height, size):
        yield df.slice(start, size)


def test_batches_give_the_same_values_as_one_frame(ares: pl.DataFrame) -> None:
    """Row by row: what evaluate_parquet's batches or Ray's would get."""
    calibrator = rf.calibrate(ares, score="faithfulness", label="human")
    whole = calibrator.predict(ares)
    assert pl.concat([calibrator.predict(b) for b in _batches(ares, 7)]).equals(whole)


def test_pipe_over_evaluate_parquet_output(ares: pl.DataFrame, tmp_path) -> None:
    """The documented pipe: the scored Parquet dataset, scanned lazily, calibrated at collect."""
    calibrator = rf.calibrate(ares, score="faithfulness", label="human")
    result = rf.evaluate_parquet(example_rag_log(), tmp_path / "out", metrics=["faithfulness"], progress=False)
    lazy = calibrator.predict(pl.scan_parquet(result.out / "scores"))
    assert isinstance(lazy, pl.LazyFrame)
    got = lazy.collect().sort("id")
    assert (
        got["faithfulness_calibrated"].to_list()
        == calibrator.predict(ares).sort("id")["faithfulness_calibrated"].to_list()
    )


def test_null_score_gives_null_probability(ares: pl.DataFrame) -> None:
    calibrator = rf.calibrate(ares, score="faithfulness", label="human")
    out = calibrator.predict(pl.DataFrame({"faithfulness": [None, 0.5]}, schema={"faithfulness": pl.Float64}))
    assert out["faithfulness_calibrated"][0] is None and out["faithfulness_calibrated"][1] is not None


# --------------------------------------------------------------------------- bad input


FIT_ERRORS = {
    "fractional label": (
        {"s": [0.1, 0.2, 0.3], "y": [0.0, 0.5, 1.0]},
        {},
        rf.SchemaError,
        r"label out of range \[column 'y', row 1\]; expected 0 or 1.*found 0.5",
    ),
    "null score on a labelled row": (
        {"s": [0.1, 0.5, None, 0.3], "y": [None, 0, 1, 1]},
        {},
        rf.SchemaError,
        r"null on a labelled row \[column 's', row 2\]",
    ),
    "nan score": (
        {"s": [0.1, float("nan"), 0.3], "y": [0, 1, 1]},
        {},
        rf.SchemaError,
        r"\[column 's', row 1\]",
    ),
    "one class": ({"s": [0.1, 0.2], "y": [1, 1]}, {}, rf.SchemaError, "one class only"),
    "no label": ({"s": [0.1, 0.2], "y": [None, None]}, {}, rf.SchemaError, "one class only"),
    "string score": ({"s": ["a", "b"], "y": [0, 1]}, {}, rf.SchemaError, "score column is not numeric"),
    "method": ({"s": [0.1, 0.2], "y": [0, 1]}, {"method": "platt"}, rf.InvalidParameterError, "method must be"),
    "same column": ({"s": [0.1, 0.2], "y": [0, 1]}, {"label": "s"}, rf.InvalidParameterError, "other than score"),
    "missing column": ({"s": [0.1, 0.2], "y": [0, 1]}, {"score": "x"}, rf.SchemaError, "missing column"),
}


@pytest.mark.parametrize(("data", "options", "error", "message"), FIT_ERRORS.values(), ids=FIT_ERRORS.keys())
def test_fit_errors(data: dict, options: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        rf.calibrate(pl.DataFrame(data), **{"score": "s", "label": "y", **options})


def test_predict_rejects_nan_naming_the_row(ares: pl.DataFrame) -> None:
    calibrator = rf.calibrate(ares, score="faithfulness", label="human")
    with pytest.raises(
        rf.SchemaError, match=r"Calibrator.predict: score is NaN or infinite \[column 'faithfulness', row 1\]"
    ):
        calibrator.predict(pl.DataFrame({"faithfulness": [0.2, float("nan")]}))
    with pytest.raises(rf.SchemaError, match="missing column"):
        calibrator.predict(pl.DataFrame({"other": [0.2]}))


@settings(max_examples=40, deadline=None)
@given(
    scores=st.lists(st.floats(0, 1, allow_nan=False), min_size=4, max_size=60),
    seed=st.integers(0, 2**16),
)
def test_isotonic_output_is_a_monotone_probability(scores: list[float], seed: int) -> None:
    y = np.random.default_rng(seed).integers(0, 2, len(scores))
    y[:2] = [0, 1]
    df = pl.DataFrame({"s": scores, "y": y})
    out = rf.calibrate(df, score="s", label="y").predict(df.sort("s"))["s_calibrated"].to_numpy()
    assert np.all((out >= 0) & (out <= 1)) and np.all(np.diff(out) >= 0)
