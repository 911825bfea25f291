"""rf.estimate on few labels (issue 36): the Wilson-type interval and the finite-population correction.

Oracles: statsmodels' Wilson interval, exhaustive enumeration of every labelled sample of a small
population (the exact variance of the estimate under sampling without replacement), and the
coverage measured on the ARES labels (benchmarks/few_labels.py prints the full table).
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

import ragframe as rf
from ragframe.stats.estimate import moments, wilson_interval


@pytest.mark.parametrize(("k", "n"), [(0, 5), (1, 5), (17, 20), (20, 20), (3, 40), (50, 100)])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_wilson_interval_without_a_prediction_is_statsmodels_wilson(k: int, n: int, alpha: float) -> None:
    y = np.r_[np.ones(k), np.zeros(n - k)]
    m = moments(np.zeros(n, dtype=np.int64), y, np.full(n, 0.3), 1)
    z = stats.norm.ppf(1 - alpha / 2)
    low, high = wilson_interval(m, np.zeros(1), m.y_mean, z, False)
    expected = proportion_confint(k, n, alpha=alpha, method="wilson")
    assert (low[0], high[0]) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(("k", "n"), [(1, 6), (17, 20), (28, 30)])
def test_classical_wilson_uses_the_t_quantile(k: int, n: int) -> None:
    """estimate's classical Wilson columns: statsmodels' Wilson at the level whose z is t(0.95, n - 1)."""
    y = [1.0] * k + [0.0] * (n - k) + [None] * 10
    df = pl.DataFrame({"f": np.linspace(0, 1, n + 10), "y": y})
    row = rf.estimate(df, prediction="f", label="y", alpha=0.1, interval="wilson").row(0, named=True)
    level = 2 * stats.norm.sf(stats.t.ppf(0.95, n - 1))
    expected = proportion_confint(k, n, alpha=level, method="wilson")
    assert (row["classical_ci_low"], row["classical_ci_high"]) == pytest.approx(expected, abs=1e-9)
    assert row["ci_low"] <= row["estimate"] <= row["ci_high"]


def test_wilson_refuses_labels_other_than_0_1() -> None:
    df = pl.DataFrame({"f": [0.1, 0.5, 0.9], "y": [0.5, 1.0, None]})
    with pytest.raises(rf.SchemaError, match=r"label out of range \[column 'y', row 0\].*0 or 1"):
        rf.estimate(df, prediction="f", label="y", interval="wilson")
    with pytest.raises(rf.InvalidParameterError, match="interval must be one of"):
        rf.estimate(df, prediction="f", label="y", interval="t")
    with pytest.raises(rf.InvalidParameterError, match="finite_population must be True or False"):
        rf.estimate(df, prediction="f", label="y", finite_population="yes")


@pytest.mark.parametrize("method", ["ppi", "classical"])
@pytest.mark.parametrize("n", [2, 3, 5])
def test_finite_population_variance_is_exact_over_every_sample(method: str, n: int) -> None:
    """Every n-subset of an 8-row population labelled: the mean of se**2 is the estimate's exact variance.

    With lambda fixed (1 for ppi, 0 for classical), the estimate is unbiased for the population
    mean and the sample variance S**2 is unbiased for the population's (Cochran, theorem 2.4), so
    the average squared standard error over all C(8, n) samples equals the variance of the
    estimates over them (theorem 2.2); nothing is approximate.
    """
    rng = np.random.default_rng(n)
    y, f = rng.random(8).round(2), rng.random(8).round(2)
    subsets = list(itertools.combinations(range(8), n))
    rows = []
    for draw, subset in enumerate(subsets):
        labelled = np.isin(np.arange(8), subset)
        rows.append(pl.DataFrame({"draw": [draw] * 8, "f": f, "y": np.where(labelled, y, np.nan)}))
    frame = pl.concat(rows).with_columns(pl.col("y").fill_nan(None))
    out = rf.estimate(frame, prediction="f", label="y", by="draw", method=method, finite_population=True)
    z = stats.norm.ppf(0.975)
    se = (out["ci_high"] - out["ci_low"]).to_numpy() / (2 * z)
    estimates = out["estimate"].to_numpy()
    assert estimates.mean() == pytest.approx(y.mean(), abs=1e-12)
    assert (se**2).mean() == pytest.approx(estimates.var(), rel=1e-9)


def test_finite_population_shrinks_to_nothing_when_every_row_is_labelled() -> None:
    df = pl.DataFrame({"f": [0.1, 0.5, 0.9, 0.4], "y": [0.0, 1.0, 1.0, 0.0]})
    row = rf.estimate(df, prediction="f", label="y", finite_population=True).row(0, named=True)
    assert row["ci_low"] == row["ci_high"] == row["estimate"] == 0.5
    wide = rf.estimate(df, prediction="f", label="y").row(0, named=True)
    assert wide["ci_high"] > wide["ci_low"]


def test_slices_equal_separate_calls() -> None:
    rng = np.random.default_rng(7)
    labels = np.where(rng.random(400) < 0.2, (rng.random(400) < 0.7).astype(float), np.nan)
    df = pl.DataFrame({"s": rng.integers(0, 4, 400), "f": rng.random(400), "y": labels}).with_columns(
        pl.col("y").fill_nan(None)
    )
    options = dict(prediction="f", label="y", interval="wilson", finite_population=True)
    together = rf.estimate(df, by="s", **options)
    for key in range(4):
        alone = rf.estimate(df.filter(pl.col("s") == key), **options)
        assert together.filter(pl.col("s") == key).drop("s").equals(alone)


@pytest.fixture(scope="module")
def ares(ares_log) -> tuple[np.ndarray, np.ndarray]:
    scored = rf.evaluate(ares_log, ["answer_relevance"])
    return scored["answer_relevance"].to_numpy(), scored["human_answer_relevance"].cast(pl.Float64).to_numpy()


@pytest.mark.parametrize("n", [20, 40])
def test_wilson_finite_holds_90_percent_on_few_ares_labels(ares: tuple[np.ndarray, np.ndarray], n: int) -> None:
    """2,000 draws of n of the 200 ARES rows labelled (without replacement); the truth is the 200 rows' rate.

    Seen (seeded): normal 0.857 / 0.888 and normal + finite 0.827 / 0.826 at n = 20 / 40, against
    wilson + finite 0.948 / 0.889; at 4,000 draws the table in docs/statistics.md.
    """
    f, y = ares
    draws = 2000
    rng = np.random.default_rng([36, n])
    labelled = np.argsort(rng.random((draws, y.size)), axis=1) < n
    frame = pl.DataFrame(
        {
            "draw": np.repeat(np.arange(draws), y.size),
            "f": np.tile(f, draws),
            "y": np.where(labelled, y, np.nan).ravel(),
        }
    ).with_columns(pl.col("y").fill_nan(None))
    truth = y.mean()

    def cover(**options) -> float:
        out = rf.estimate(frame, prediction="f", label="y", by="draw", alpha=0.1, **options)
        return float(((out["ci_low"] <= truth) & (out["ci_high"] >= truth)).mean())

    normal = cover(finite_population=True)
    wilson = cover(interval="wilson", finite_population=True)
    assert normal < 0.85  # the normal interval misses its 90% on few labels with a rate near 1
    assert wilson >= 0.865  # within 3 Monte Carlo sd (0.0067) of 0.885 and above
    assert wilson > normal + 0.04


@pytest.mark.slow
def test_budget_expected_width_is_an_estimate_with_the_documented_error() -> None:
    """budget_summary's expected_width against the PPI++ interval rf.estimate gives (the figures in its docstring).

    Issue 36: documented as an upper bound, it was exceeded in 19 of 20 seeds; it is an estimate now,
    and the error quoted in docs/judges.md and the docstring is this measurement.
    """
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "few_labels.py"
    spec = importlib.util.spec_from_file_location("few_labels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    widths = module.budget_widths(module.ares(), 40, 200, 0.1)
    ratio = widths[:, 1] / widths[:, 0]
    assert (round(ratio.mean(), 2), round(ratio.min(), 2), round(ratio.max(), 2)) == (1.03, 0.50, 1.37)
    assert round((ratio > 1).mean(), 2) == 0.63  # not a bound: the PPI++ interval is wider in 63% of the seeds
    assert "an estimate (not a bound)" in " ".join(rf.budget_summary.__doc__.split())


@pytest.mark.slow
def test_summarize_t_covers_skewed_scores_better_than_the_bootstrap() -> None:
    """The measurement behind docs/statistics.md's advice (it advised ci="bootstrap" for skewed scores)."""
    rng = np.random.default_rng([0, 0, 5])
    sims, n, truth = 2000, 5, 0.5 / 5.5
    frame = pl.DataFrame({"sim": np.repeat(np.arange(sims), n), "faithfulness": rng.beta(0.5, 5.0, sims * n)})
    held = {}
    for ci in ("t", "bootstrap"):
        out = rf.summarize(frame, by="sim", ci=ci, seed=0, stats=["ci_low", "ci_high"])
        held[ci] = float(((out["ci_low"] <= truth) & (out["ci_high"] >= truth)).mean())
    assert held["t"] > held["bootstrap"] + 0.02  # 0.849 against 0.805 (benchmarks/summary_intervals.py)
    assert held["t"] < 0.9  # and neither holds 95% on 5 skewed values


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 30), big_n=st.integers(1, 60), finite=st.booleans())
def test_row_order_never_matters_and_the_interval_holds_the_estimate(seed: int, n: int, big_n: int, finite: bool):
    rng = np.random.default_rng(seed)
    y = (rng.random(n + big_n) < rng.random()).astype(float)
    f = np.clip(0.5 * y + rng.random(n + big_n) * 0.5, 0, 1)
    df = pl.DataFrame({"f": f, "y": np.where(np.arange(n + big_n) < n, y, np.nan)}).with_columns(
        pl.col("y").fill_nan(None)
    )
    options = dict(prediction="f", label="y", interval="wilson", finite_population=finite)
    a = rf.estimate(df, **options).row(0, named=True)
    b = rf.estimate(df.sample(fraction=1.0, shuffle=True, seed=seed), **options).row(0, named=True)
    for key, value in a.items():
        assert b[key] == (value if isinstance(value, (str, int)) or value is None else pytest.approx(value, abs=1e-9))
    assert a["ci_low"] <= a["estimate"] + 1e-12 and a["estimate"] <= a["ci_high"] + 1e-12
    assert a["classical_ci_low"] <= a["classical_estimate"] + 1e-12 <= a["classical_ci_high"] + 2e-12
