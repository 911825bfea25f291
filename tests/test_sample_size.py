"""rf.sample_size: pairs for a paired t test (statsmodels) and labels for an estimate's width (issue 24, item 5)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.power import TTestPower, ttest_power

import ragframe as rf
from ragframe.stats.sample_size import paired_t_power

# --------------------------------------------------------------------------- pairs


@pytest.mark.parametrize("effect", [0.1, 0.2, 0.35, 0.5, 0.8, 1.3])
@pytest.mark.parametrize("power", [0.8, 0.9, 0.95])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
@pytest.mark.parametrize("alternative", ["two-sided", "larger"])
def test_pairs_equal_statsmodels_rounded_up(effect: float, power: float, alpha: float, alternative: str) -> None:
    expected = math.ceil(
        TTestPower().solve_power(effect_size=effect, alpha=alpha, power=power, alternative=alternative)
    )
    got = rf.sample_size(difference=effect * 0.2, std=0.2, power=power, alpha=alpha, alternative=alternative)
    assert got == max(expected, 2)


def test_pairs_smaller_alternative_mirrors_larger() -> None:
    expected = math.ceil(TTestPower().solve_power(effect_size=-0.3, alpha=0.05, power=0.8, alternative="smaller"))
    assert rf.sample_size(difference=-0.03, std=0.1, alternative="smaller") == expected


@pytest.mark.parametrize("n", [2, 5, 34, 500])
@pytest.mark.parametrize("alternative", ["two-sided", "larger", "smaller"])
def test_power_equals_statsmodels(n: int, alternative: str) -> None:
    effect = -0.4 if alternative == "smaller" else 0.4
    assert paired_t_power(effect, n, 0.05, alternative) == pytest.approx(
        ttest_power(effect, n, 0.05, alternative=alternative), abs=1e-12
    )


def test_pairs_is_the_smallest_n_reaching_the_power() -> None:
    n = rf.sample_size(difference=0.03, std=0.15, power=0.9)
    assert paired_t_power(0.2, n, 0.05) >= 0.9 > paired_t_power(0.2, n - 1, 0.05)


def test_pairs_from_a_pilot_frame() -> None:
    """The pilot's std of b - a (ddof=1, rows with both scores) stands in for std=."""
    rng = np.random.default_rng(3)
    a = rng.random(80)
    b = np.clip(a + rng.normal(0.02, 0.1, 80), 0, 1)
    pilot = pl.DataFrame({"old": a, "new": b}).with_columns(new=pl.when(pl.int_range(pl.len()) != 5).then("new"))
    diffs = np.delete(b - a, 5)
    expected = math.ceil(TTestPower().solve_power(effect_size=0.02 / np.std(diffs, ddof=1), alpha=0.05, power=0.8))
    assert rf.sample_size(pilot, difference=0.02, a="old", b="new") == expected
    assert rf.sample_size(pilot.to_pandas(), difference=0.02, a="old", b="new") == expected


def test_pairs_hand_arithmetic_normal_approximation() -> None:
    """A large sample: close to the normal formula ((z_0.975 + z_0.8) / d)^2 = 784.9 for d = 0.1."""
    n = rf.sample_size(difference=0.01, std=0.1)
    assert n == 787  # the t test needs a little more than the normal approximation's 785


PAIR_ERRORS = {
    "neither question": (dict(), "give difference= .* or width="),
    "both questions": (dict(difference=0.1, width=0.1), "exactly one"),
    "zero difference": (dict(difference=0, std=0.1), "difference must be non-zero"),
    "larger but negative": (dict(difference=-0.1, std=0.1, alternative="larger"), "difference must be > 0"),
    "no std": (dict(difference=0.1), "std must be given"),
    "zero std": (dict(difference=0.1, std=0.0), "std must be a finite number > 0"),
    "power below alpha": (dict(difference=0.1, std=0.1, power=0.02), "power must be above"),
    "power one": (dict(difference=0.1, std=0.1, power=1.0), "power must be a finite number"),
    "alternative": (dict(difference=0.1, std=0.1, alternative="two"), "alternative must be one of"),
    "label with pairs": (dict(difference=0.1, std=0.1, label="y"), "label must be None for the pairs question"),
    "a without pilot": (dict(difference=0.1, std=0.1, a="x"), "a must be None for std= without a pilot"),
}


@pytest.mark.parametrize(("options", "message"), PAIR_ERRORS.values(), ids=PAIR_ERRORS.keys())
def test_pair_errors(options: dict, message: str) -> None:
    with pytest.raises(rf.InvalidParameterError, match=message):
        rf.sample_size(**options)


def test_pilot_pair_errors() -> None:
    pilot = pl.DataFrame({"old": [0.25, 0.5, 0.75], "new": [0.5, 0.75, 1.0], "text": ["a", "b", "c"]})
    with pytest.raises(rf.SchemaError, match="no spread"):
        rf.sample_size(pilot, difference=0.1, a="old", b="new")
    with pytest.raises(rf.SchemaError, match="score column is not numeric"):
        rf.sample_size(pilot, difference=0.1, a="old", b="text")
    with pytest.raises(rf.InvalidParameterError, match="std must be None for a pilot frame"):
        rf.sample_size(pilot, difference=0.1, std=0.1, a="old", b="new")


def test_a_tiny_difference_is_a_clear_error() -> None:
    with pytest.raises(rf.InvalidParameterError, match="pairs needed: the difference is too small"):
        rf.sample_size(difference=1e-9, std=10.0)


# --------------------------------------------------------------------------- labels


def test_classical_labels_hand_arithmetic() -> None:
    """Labels half 1, half 0 (sd 0.5): a 95% interval 0.1 wide needs (2 * 1.96 * 0.5 / 0.1)^2 = 384.1 -> 385."""
    pilot = pl.DataFrame({"f": [0.2, 0.9, 0.4, 0.6], "y": [0, 1, 0, 1]})
    plan = rf.sample_size(pilot, prediction="f", label="y", width=0.1).rows_by_key("method", named=True, unique=True)
    assert plan["classical"]["labels"] == 385 and plan["classical"]["lambda"] == 0.0
    # PPI (lambda 1), unlimited unlabelled rows: y - f = [-0.2, 0.1, -0.4, 0.4], mean -0.025,
    # population variance 0.37 / 4 - 0.025^2 = 0.091875
    assert plan["ppi"]["labels"] == math.ceil(0.091875 / (0.05 / 1.959963984540054) ** 2) == 142
    assert plan["ppi"]["unlabeled"] is None


def _reference_plan(y: np.ndarray, f: np.ndarray, width: float, rows: int, method: str) -> int | None:
    """A plain loop over n with numpy's var / cov: the first n whose interval is narrow enough.

    ``y`` is NaN on the pilot's unlabelled rows: the label moments come from the labelled rows,
    the predictions' variance from all of them.
    """
    z = 1.959963984540054
    known = ~np.isnan(y)
    yl, fl = y[known], f[known]
    cov = np.mean((yl - yl.mean()) * (fl - fl.mean()))
    var_all = np.var(f, ddof=1)
    for n in range(2, rows + 1):
        big_n = rows - n
        if method == "classical":
            lam = 0.0
        elif method == "ppi":
            if big_n == 0:
                continue
            lam = 1.0
        else:
            lam = 0.0 if big_n == 0 else min(max(cov / ((1 + n / big_n) * var_all), 0.0), 1.0)
        se2 = np.var(yl - lam * fl) / n + (lam**2 * np.var(f) / big_n if lam else 0.0)
        if 2 * z * math.sqrt(se2) <= width * (1 + 1e-12):
            return n
    return None


@pytest.fixture(scope="module")
def ares_pilot(ares_scored: pl.DataFrame) -> pl.DataFrame:
    scored = ares_scored
    return scored.select("faithfulness", "human_faithfulness")


@pytest.mark.parametrize("hidden", [0, 120, -100], ids=["all labelled", "120 unlabelled", "top 100 unlabelled"])
@pytest.mark.parametrize("rows", [300, 1000, 5000])
@pytest.mark.parametrize("width", [0.08, 0.12])
def test_labels_equal_a_plain_loop(ares_pilot: pl.DataFrame, rows: int, width: float, hidden: int) -> None:
    y = ares_pilot["human_faithfulness"].to_numpy().astype(float)
    f = ares_pilot["faithfulness"].to_numpy()
    if hidden > 0:
        y[np.random.default_rng(5).permutation(y.size) < hidden] = np.nan
    else:  # labelled and unlabelled predictions far apart (the spread between the two sets counts)
        y[np.argsort(-f, kind="stable")[:-hidden]] = np.nan
    pilot = pl.DataFrame({"faithfulness": f, "human": y}).with_columns(pl.col("human").fill_nan(None))
    plan = rf.sample_size(pilot, prediction="faithfulness", label="human", width=width, rows=rows)
    for method in ("classical", "ppi", "ppi++"):
        row = plan.filter(pl.col("method") == method).row(0, named=True)
        expected = _reference_plan(y, f, width, rows, method)
        assert row["labels"] == expected, method
        if expected is not None:
            assert row["unlabeled"] == rows - expected


def test_ppi_plus_plus_needs_fewer_labels_on_ares(ares_pilot: pl.DataFrame) -> None:
    plan = rf.sample_size(ares_pilot, prediction="faithfulness", label="human_faithfulness", width=0.08)
    labels = dict(zip(plan["method"], plan["labels"]))
    assert labels["ppi++"] < labels["classical"]
    assert plan.columns == ["method", "labels", "unlabeled", "lambda"]


def test_unreachable_width_is_null(ares_pilot: pl.DataFrame) -> None:
    plan = rf.sample_size(ares_pilot, prediction="faithfulness", label="human_faithfulness", width=0.01, rows=300)
    assert plan["labels"].to_list() == [None, None, None]


def test_planned_labels_give_the_width_in_simulation(ares_pilot: pl.DataFrame) -> None:
    """Label the planned number of rows of 1,000 drawn from the ARES log: estimate's mean width is the target.

    800 draws (one slice each, one call); the planned variance is the pilot's, so the mean width of the
    estimate intervals is within a few percent of the target (seen: classical 186 labels, mean width
    0.0994; ppi++ 150 labels, 0.0990).
    """
    y = ares_pilot["human_faithfulness"].to_numpy().astype(float)
    f = ares_pilot["faithfulness"].to_numpy()
    rows, draws, width = 1000, 800, 0.1
    plan = rf.sample_size(ares_pilot, prediction="faithfulness", label="human_faithfulness", width=width, rows=rows)
    rng = np.random.default_rng(11)
    for method in ("classical", "ppi++"):
        n = plan.filter(pl.col("method") == method)["labels"][0]
        picks = rng.integers(0, y.size, size=(draws, rows))
        labels = y[picks]
        labels[:, n:] = np.nan
        df = pl.DataFrame({"d": np.repeat(np.arange(draws), rows), "f": f[picks].ravel(), "y": labels.ravel()})
        out = rf.estimate(df.with_columns(pl.col("y").fill_nan(None)), prediction="f", label="y", by="d", method=method)
        assert (out["ci_high"] - out["ci_low"]).mean() == pytest.approx(width, rel=0.03), method


LABEL_ERRORS = {
    "no pilot": (None, dict(prediction="f", label="y", width=0.1), rf.InvalidParameterError, "pilot must be a frame"),
    "zero width": ("ok", dict(prediction="f", label="y", width=0), rf.InvalidParameterError, "width must be"),
    "rows one": ("ok", dict(prediction="f", label="y", width=0.1, rows=1), rf.InvalidParameterError, "rows must be"),
    "std with width": ("ok", dict(prediction="f", label="y", width=0.1, std=1.0), rf.InvalidParameterError, "std must"),
    "one label": ("one", dict(prediction="f", label="y", width=0.1), rf.SchemaError, "at least 2 labelled rows"),
    "label inf": ("inf", dict(prediction="f", label="y", width=0.1), rf.SchemaError, r"label is NaN or inf.*row 1"),
}


@pytest.mark.parametrize(("pilot", "options", "error", "message"), LABEL_ERRORS.values(), ids=LABEL_ERRORS.keys())
def test_label_errors(pilot: str | None, options: dict, error: type, message: str) -> None:
    frames = {
        "ok": pl.DataFrame({"f": [0.1, 0.9, 0.5], "y": [0, 1, 1]}),
        "one": pl.DataFrame({"f": [0.1, 0.9, 0.5], "y": [0, None, None]}),
        "inf": pl.DataFrame({"f": [0.1, 0.9, 0.5], "y": [0.0, float("inf"), 1.0]}),
    }
    with pytest.raises(error, match=message):
        rf.sample_size(None if pilot is None else frames[pilot], **options)


# --------------------------------------------------------------------------- issue 36: large effects, degenerate pilots


def _power_by_quadrature(effect: float, n: int, alpha: float, alternative: str) -> float:
    """The paired t test's power from its definition, without the noncentral t's CDF (an independent oracle).

    T = (Z + nc) / sqrt(V / df): P(T > c) = integral over z > -nc of phi(z) P(V < df ((z + nc) / c)^2) for c > 0.
    """
    from scipy import integrate, stats

    df, nc = n - 1, effect * math.sqrt(n)

    def upper(c: float, nc: float) -> float:  # P(T > c), c > 0
        low = max(-nc, -40.0)  # phi is below 1e-300 beyond |z| = 40
        if low >= 40.0:
            return 0.0
        inside = [z for z in (0.0,) if low < z < 40.0]
        value, _ = integrate.quad(
            lambda z: stats.norm.pdf(z) * stats.chi2.cdf(df * ((z + nc) / c) ** 2, df),
            low, 40.0, limit=400, points=inside or None, epsabs=1e-13,
        )  # fmt: skip
        return value

    level = alpha / 2 if alternative == "two-sided" else alpha
    c = stats.t.ppf(1 - level, df)
    power = 0.0
    if alternative in ("two-sided", "larger"):
        power += upper(c, nc)
    if alternative in ("two-sided", "smaller"):
        power += upper(c, -nc)  # P(T < -c) for nc is P(T > c) for -nc
    return power


def test_a_large_effect_is_five_pairs_not_sixteen() -> None:
    """Issue 36: statsmodels' power is NaN at n = 6 (nctdtr's far tail), which broke the search (16)."""
    assert rf.sample_size(difference=3, std=1, alpha=0.01, power=0.8) == 5
    assert math.isnan(ttest_power(3.0, 6, 0.01))  # the oracle's own failure, why the search went astray
    assert ttest_power(3.0, 5, 0.01) >= 0.8 > ttest_power(3.0, 4, 0.01)  # statsmodels where it is finite


DESIGNS = [
    (effect, alpha, power, alternative)
    for effect in (0.05, 0.3, 1.0, 2.0, 3.0, 4.5, 6.0, 10.0, 25.0, 40.0)
    for alpha in (0.001, 0.01, 0.05)
    for power in (0.5, 0.8, 0.99)
    for alternative in ("two-sided", "larger")
]


@pytest.mark.parametrize(("effect", "alpha", "power", "alternative"), DESIGNS)
def test_pairs_are_the_smallest_n_by_an_independent_power(effect: float, alpha: float, power: float, alternative: str):
    n = rf.sample_size(difference=effect, std=1.0, alpha=alpha, power=power, alternative=alternative)
    assert _power_by_quadrature(effect, n, alpha, alternative) >= power - 1e-9
    if n > 2:
        assert _power_by_quadrature(effect, n - 1, alpha, alternative) < power + 1e-9
    for m in (n - 1, n):  # and statsmodels, wherever it gives a number
        if m >= 2:
            reference = ttest_power(effect, m, alpha, alternative=alternative)
            if np.isfinite(reference):
                assert paired_t_power(effect, m, alpha, alternative) == pytest.approx(reference, abs=1e-9)


@pytest.mark.slow
def test_power_is_never_nan_where_nctdtr_is() -> None:
    for n in range(2, 60):
        for effect in (3.0, 10.0, 17.0, 30.0):
            value = paired_t_power(effect, n, 0.01)
            assert 0.0 <= value <= 1.0
            assert value == pytest.approx(_power_by_quadrature(effect, n, 0.01, "two-sided"), abs=1e-7)


def test_the_same_column_twice_is_a_typed_error() -> None:
    pilot = pl.DataFrame({"old": [0.25, 0.5, 0.75]})
    with pytest.raises(rf.InvalidParameterError, match=r"b must be a column other than a \('old'\)"):
        rf.sample_size(pilot, difference=0.1, a="old", b="old")  # was a polars DuplicateError


def test_differences_constant_up_to_rounding_are_a_typed_error() -> None:
    """b - a = 0.1 on every row up to rounding (sd ~1e-17): was 'more than 10^12 pairs'."""
    a = np.linspace(0.0, 0.8, 50)
    pilot = pl.DataFrame({"old": a, "new": a + 0.1})
    assert 0 < np.std((pilot["new"] - pilot["old"]).to_numpy(), ddof=1) < 1e-15
    with pytest.raises(rf.SchemaError, match=r"no spread: constant \(up to rounding\).*found standard deviation"):
        rf.sample_size(pilot, difference=0.05, a="old", b="new")
    spread = pilot.with_columns(new=pl.col("new") + pl.Series(np.resize([0.01, -0.01], 50)))  # a real spread
    sd = np.std((spread["new"] - spread["old"]).to_numpy(), ddof=1)
    expected = math.ceil(TTestPower().solve_power(effect_size=0.05 / sd, alpha=0.05, power=0.8))
    assert rf.sample_size(spread, difference=0.05, a="old", b="new") == expected == 3


def test_all_equal_pilot_labels_are_a_typed_error() -> None:
    """Labels all 1 have spread 0: any plan would claim 2 labels suffice."""
    pilot = pl.DataFrame({"score": [0.9, 0.1, 0.8, 0.3, 0.7, 0.2], "human": [1, 1, 1, 1, None, None]})
    with pytest.raises(rf.SchemaError, match=r"labels are all equal.*found 4 labels, all 1"):
        rf.sample_size(pilot, prediction="score", label="human", width=0.1)
    mixed = pilot.with_columns(human=pl.Series([1, 0, 1, 1, None, None]))
    assert rf.sample_size(mixed, prediction="score", label="human", width=0.1)["labels"][0] > 2
