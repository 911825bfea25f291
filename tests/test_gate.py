"""rf.gate: the CI rule as a frame of checks; every check that cannot check fails and says why."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

import ragframe as rf
from ragframe.stats.gate import GATE_SCHEMA


def _frames(n: int = 30, seed: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    """faithfulness drops clearly (0.2 on every row); mrr barely moves."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.3, 0.7, n)
    base = pl.DataFrame({"id": range(n), "faithfulness": a, "mrr": a})
    current = base.with_columns(
        faithfulness=pl.Series(a - 0.2 + rng.normal(0, 0.01, n)), mrr=pl.Series(a + rng.normal(0, 0.01, n))
    )
    return base, current


def _by_metric(checks: pl.DataFrame, kind: str = "regression") -> dict[str, dict]:
    return {r["metric"]: r for r in checks.filter(pl.col("check") == kind).iter_rows(named=True)}


def test_paired_gate_applies_the_regressions_rule():
    base, current = _frames()
    checks = rf.gate(baseline=base, current=current, max_drop=0.05)
    assert checks.schema == pl.Schema(GATE_SCHEMA)
    assert checks["mode"].unique().to_list() == ["paired"]
    rows = _by_metric(checks)
    assert list(rows) == ["faithfulness", "mrr"]  # the baseline's order
    want = {r["metric"]: r for r in rf.regressions(base, current, max_drop=0.05).iter_rows(named=True)}
    for metric, row in rows.items():
        for key in ("baseline", "current", "delta", "n", "p_value", "p_adjusted", "significant", "exceeds_max_drop"):
            assert row[key] == want[metric][key], (metric, key)
        assert row["passed"] is not want[metric]["regressed"]
    reference = stats.ttest_rel(current["faithfulness"], base["faithfulness"])
    assert rows["faithfulness"]["p_value"] == pytest.approx(reference.pvalue, rel=1e-9)
    assert rows["faithfulness"]["passed"] is False and "significant" in rows["faithfulness"]["reason"]
    assert rows["mrr"]["passed"] is True and "within the allowed drop 0.05" in rows["mrr"]["reason"]


def test_significance_decides_a_noisy_drop():
    base = pl.DataFrame({"id": range(10), "faithfulness": [0.5] * 10})
    current = base.with_columns(faithfulness=pl.Series([0.0, 0.8] * 5))  # mean -0.1, p ~ 0.47
    strict = rf.gate(baseline=base, current=current).row(0, named=True)
    assert strict["exceeds_max_drop"] and not strict["significant"] and strict["passed"] is True
    assert "not significant" in strict["reason"]
    loose = rf.gate(baseline=base, current=current, significance=False).row(0, named=True)
    assert loose["passed"] is False and loose["p_value"] == strict["p_value"]


def test_summary_gate_uses_the_seed_rule_and_summarises_a_per_row_side():
    base, current = _frames()
    base_summary = rf.summarize(base)
    checks = rf.gate(baseline=base_summary, current=current, max_drop=0.05)
    assert checks["mode"].unique().to_list() == ["summary"]
    rows = _by_metric(checks)
    assert rows["faithfulness"]["passed"] is False and rows["mrr"]["passed"] is True
    assert rows["faithfulness"]["baseline"] == pytest.approx(base["faithfulness"].mean(), rel=1e-12)
    assert rows["faithfulness"]["n"] is None and rows["faithfulness"]["p_value"] is None
    both = rf.gate(baseline=base_summary, current=rf.summarize(current), max_drop=0.05)
    assert both.select("metric", "passed", "delta").equals(checks.select("metric", "passed", "delta"))
    # a drop of exactly max_drop passes (strict rule), a larger one fails
    base_one = pl.DataFrame({"metric": ["mrr"], "mean": [0.75]})
    assert rf.gate(baseline=base_one, current=pl.DataFrame({"metric": ["mrr"], "mean": [0.5]}), max_drop=0.25)[
        "passed"
    ].item()
    assert not rf.gate(baseline=base_one, current=pl.DataFrame({"metric": ["mrr"], "mean": [0.4]}), max_drop=0.25)[
        "passed"
    ].item()


def test_minimums_check_the_current_mean():
    _, current = _frames()
    mean = current["mrr"].mean()
    checks = rf.gate(current=current, minimums={"mrr": mean, "faithfulness": 0.9})
    rows = _by_metric(checks, "minimum")
    assert checks["mode"].unique().to_list() == ["none"]
    assert rows["mrr"]["passed"] is True and rows["mrr"]["current"] == pytest.approx(mean, rel=1e-12)  # >= is a pass
    assert rows["faithfulness"]["passed"] is False and "is below the minimum 0.9" in rows["faithfulness"]["reason"]
    assert rows["faithfulness"]["minimum"] == 0.9
    summary = rf.gate(current=rf.summarize(current), minimums={"mrr": mean})
    assert summary["passed"].item() is True


def test_a_metric_of_the_baseline_missing_from_current_fails():
    base, current = _frames()
    for b, c in ((base, current.drop("mrr")), (rf.summarize(base), rf.summarize(current.drop("mrr")))):
        rows = _by_metric(rf.gate(baseline=b, current=c))
        assert rows["mrr"]["passed"] is False
        assert rows["mrr"]["reason"] == "mrr: in the baseline but not in current"
        assert rows["faithfulness"]["passed"] is False  # still checked
    # a metric asked for but absent from the baseline fails too; a new metric in current is not checked
    rows = _by_metric(rf.gate(baseline=base.drop("mrr"), current=current, metrics=["faithfulness", "mrr"]))
    assert rows["mrr"]["passed"] is False and "not in the baseline" in rows["mrr"]["reason"]
    assert list(_by_metric(rf.gate(baseline=base.drop("mrr"), current=current))) == ["faithfulness"]


def test_an_all_null_metric_fails():
    base, current = _frames()
    null_current = current.with_columns(mrr=pl.lit(None, pl.Float64))
    rows = _by_metric(rf.gate(baseline=base, current=null_current))
    assert rows["mrr"]["passed"] is False and rows["mrr"]["n"] == 0
    assert "no id has a non-null score on both sides" in rows["mrr"]["reason"]
    rows = _by_metric(rf.gate(baseline=rf.summarize(base), current=rf.summarize(null_current)))
    assert rows["mrr"]["passed"] is False and rows["mrr"]["reason"] == "mrr: no non-null value in the current"
    minimum = rf.gate(current=null_current, minimums={"mrr": 0.0}).row(0, named=True)
    assert minimum["passed"] is False and minimum["reason"] == "mrr: no non-null value in current"


def test_no_shared_ids_fails_every_regression_check():
    base, current = _frames()
    checks = rf.gate(baseline=base, current=current.with_columns(pl.col("id") + 1000), how="inner")
    assert checks["passed"].to_list() == [False, False]
    assert all("no id is in both baseline and current" in r for r in checks["reason"])
    with pytest.raises(rf.SchemaError, match="missing from"):  # how="error": ids on one side are an error
        rf.gate(baseline=base, current=current.with_columns(pl.col("id") + 1000))


def test_a_drop_too_small_a_sample_to_test_fails():
    base = pl.DataFrame({"id": [1], "mrr": [0.9]})
    row = rf.gate(baseline=base, current=pl.DataFrame({"id": [1], "mrr": [0.2]})).row(0, named=True)
    assert row["passed"] is False and "1 pair(s) are too few to test it" in row["reason"]
    # without the significance requirement, the drop alone decides
    assert (
        rf.gate(baseline=base, current=pl.DataFrame({"id": [1], "mrr": [0.2]}), significance=False)["passed"].item()
        is False
    )
    assert rf.gate(baseline=base, current=pl.DataFrame({"id": [1], "mrr": [0.9]}))["passed"].item() is True


def test_a_minimums_metric_absent_fails():
    _, current = _frames()
    row = rf.gate(current=current, minimums={"nosuch": 0.5}).row(0, named=True)
    assert row["passed"] is False and row["reason"] == "nosuch: not in current" and row["minimum"] == 0.5
    row = rf.gate(current=rf.summarize(current), minimums={"nosuch": 0.5}).row(0, named=True)
    assert row["passed"] is False and row["reason"] == "nosuch: not in current"


def test_a_gate_that_checks_nothing_is_an_error():
    base, current = _frames()
    with pytest.raises(rf.InvalidParameterError, match="nothing to check"):
        rf.gate(current=current)
    with pytest.raises(rf.SchemaError, match="nothing to check"):
        rf.gate(baseline=base.select("id", x=pl.lit(1.0)), current=current.select("id"))
    grouped = rf.summarize(base.with_columns(g=pl.col("id") % 2), by="g")
    with pytest.raises(rf.SchemaError, match="several rows for metric"):
        rf.gate(baseline=grouped, current=rf.summarize(current))


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"max_drop": -1}, "max_drop"),
        ({"minimums": [("mrr", 0.5)]}, "minimums"),
        ({"minimums": {"mrr": "high"}}, "minimums['mrr']"),
        ({"minimums": {"": 0.5}}, "minimums"),
        ({"significance": "yes"}, "significance"),
        ({"metrics": []}, "metrics"),
        ({"test": "z"}, "test"),
        ({"alpha": 2}, "alpha"),
        ({"how": "outer"}, "how"),
    ],
)
def test_bad_parameters_are_named(options, parameter):
    base, current = _frames()
    with pytest.raises(rf.InvalidParameterError, match=rf"\b{parameter} must be".replace("[", r"\[")):
        rf.gate(baseline=base, current=current, **options)


def test_paths_are_read_with_read_scores(tmp_path):
    base, current = _frames()
    base.write_parquet(tmp_path / "base.parquet")
    current.write_csv(tmp_path / "current.csv")
    from_files = rf.gate(baseline=tmp_path / "base.parquet", current=str(tmp_path / "current.csv"))
    assert from_files.drop("reason").equals(rf.gate(baseline=base, current=current).drop("reason"))
