"""rf.estimate_systems: PPI estimates per system, of differences (= ppi_py on the paired differences) and a ranking."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import ragframe as rf

ppi_py = pytest.importorskip("ppi_py")


def _systems(seed: int = 0, n_queries: int = 300, n_labeled: int = 60) -> pl.DataFrame:
    """Three systems whose true success rates are 0.8, 0.6, 0.55, a judge that is noisy and biased upwards."""
    rng = np.random.default_rng(seed)
    labeled = np.zeros(n_queries, dtype=bool)
    labeled[rng.choice(n_queries, n_labeled, replace=False)] = True
    difficulty = rng.normal(0, 1, n_queries)
    rows = []
    for name, base in (("good", 1.4), ("mid", 0.45), ("weak", 0.2)):
        truth = (rng.normal(0, 0.6, n_queries) + base - 0.5 * difficulty) > 0
        judge = np.clip(0.25 + 0.5 * truth + rng.normal(0, 0.2, n_queries), 0, 1)
        label = np.where(labeled, truth.astype(float), np.nan)
        rows.append(pl.DataFrame({"run_id": name, "query_id": np.arange(n_queries), "judge": judge, "human": label}))
    return pl.concat(rows).with_columns(pl.col("human").fill_nan(None))


@pytest.mark.parametrize(("method", "lam"), [("ppi++", None), ("ppi", 1.0)])
def test_difference_equals_ppi_py_on_paired_differences(method, lam) -> None:
    df = _systems()
    got = rf.estimate_systems(df, prediction="judge", label="human", method=method, pairs=True)
    assert got.select("system_1", "system_2").rows() == [("good", "mid"), ("good", "weak"), ("mid", "weak")]
    for row in got.iter_rows(named=True):
        one = df.filter(pl.col("run_id") == row["system_1"]).sort("query_id")
        two = df.filter(pl.col("run_id") == row["system_2"]).sort("query_id")
        y = (one["human"] - two["human"]).to_numpy()
        f = (one["judge"] - two["judge"]).to_numpy()
        mask = ~np.isnan(y)
        point = ppi_py.ppi_mean_pointestimate(y[mask], f[mask], f[~mask], lam=lam)
        low, high = ppi_py.ppi_mean_ci(y[mask], f[mask], f[~mask], alpha=0.05, lam=lam)
        assert row["estimate"] == pytest.approx(float(np.ravel(point)[0]), abs=1e-10)
        assert row["ci_low"] == pytest.approx(float(np.ravel(low)[0]), abs=1e-10)
        assert row["ci_high"] == pytest.approx(float(np.ravel(high)[0]), abs=1e-10)
        assert (row["n_labeled"], row["n_unlabeled"]) == (60, 240)
        assert row["significant"] == (row["ci_low"] > 0 or row["ci_high"] < 0)
        classical = ppi_py.classical_mean_ci(y[mask], alpha=0.05)
        assert row["classical_ci_low"] == pytest.approx(float(np.ravel(classical[0])[0]), abs=1e-10)


def test_per_system_rows_are_rf_estimate_and_the_ranking_is_consistent() -> None:
    df = _systems()
    ranked = rf.estimate_systems(df, prediction="judge", label="human")
    assert ranked["run_id"].to_list() == ["good", "mid", "weak"]
    want = rf.estimate(df, prediction="judge", label="human", by="run_id").sort("estimate", descending=True)
    assert ranked.select(want.columns).equals(want)
    pairs = rf.estimate_systems(df, prediction="judge", label="human", pairs=True)
    sig = {(a, b) for a, b, s in pairs.select("system_1", "system_2", "significant").iter_rows() if s}
    assert ("good", "mid") in sig and ("good", "weak") in sig
    best = dict(ranked.select("run_id", "rank_best").iter_rows())
    worst = dict(ranked.select("run_id", "rank_worst").iter_rows())
    assert best["good"] == worst["good"] == 1  # significantly above both others
    assert best["mid"] == 2 and worst["weak"] == 3
    assert all(best[s] <= r <= worst[s] for s, r in ranked.select("run_id", "rank").iter_rows())


def test_row_order_and_frame_kind_do_not_matter() -> None:
    df = _systems(n_queries=80, n_labeled=20)
    want = rf.estimate_systems(df, prediction="judge", label="human", pairs=True)
    shuffled = df.sample(fraction=1.0, shuffle=True, seed=4)
    assert rf.estimate_systems(shuffled.to_pandas(), prediction="judge", label="human", pairs=True).equals(want)


def test_bad_inputs() -> None:
    df = _systems(n_queries=20, n_labeled=6)
    with pytest.raises(rf.SchemaError, match="no row for a query"):
        rf.estimate_systems(df.slice(1), prediction="judge", label="human")
    with pytest.raises(rf.SchemaError, match="twice"):
        rf.estimate_systems(pl.concat([df, df.head(1)]), prediction="judge", label="human")
    with pytest.raises(rf.InvalidParameterError, match="two systems"):
        rf.estimate_systems(df.filter(pl.col("run_id") == "good"), prediction="judge", label="human")
    with pytest.raises(rf.SchemaError):  # any real label is a mean's label (issue 36); a NaN is not
        rf.estimate_systems(df.with_columns(pl.col("human") / 0.0 * 0.0), prediction="judge", label="human")


