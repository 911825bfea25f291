"""regressions (the seed's mean-drop rule and the significance-aware rule) and its seed alias."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

import ragframe as rf
from ragframe.stats.summary import is_summary


def test_regressions_on_summaries_follow_the_seed_rule():
    base = pl.DataFrame({"metric": ["a", "b", "c"], "mean": [0.75, 0.5, 0.4]})
    now = pl.DataFrame({"metric": ["a", "b", "d"], "mean": [0.5, 0.125, 0.9]})
    out = rf.regressions(base, now, max_drop=0.25)
    assert out.columns == [
        "metric", "n", "baseline", "current", "delta", "p_value", "p_adjusted", "significant",
        "exceeds_max_drop", "regressed",
    ]  # fmt: skip: the per-row schema, n and the test null (summaries carry no pairs)
    assert out["metric"].to_list() == ["a", "b"]
    assert out["regressed"].to_list() == [False, True]  # strict: a drop of exactly max_drop is not one
    assert out["delta"].to_list() == [-0.25, -0.375]


def test_regressions_on_summaries_name_what_they_cannot_compare():
    base = pl.DataFrame({"metric": ["a", "b"], "mean": [0.75, 0.5]})
    now = pl.DataFrame({"metric": ["a"], "mean": [0.5]})
    with pytest.raises(rf.SchemaError, match="current summary has no row for metric 'b'"):
        rf.regressions(base, now, metrics=["a", "b"])
    grouped = pl.DataFrame({"metric": ["a", "a"], "mean": [0.75, 0.5], "split": ["x", "y"]})
    with pytest.raises(rf.SchemaError, match="several rows for one metric"):
        rf.regressions(grouped, now)
    assert rf.regressions(grouped, grouped, by="split")["regressed"].to_list() == [False, False]


def _noisy_drop() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Ten pairs whose mean drops by 0.1 (beyond a max_drop of 0.05) with differences of +-0.8: not significant."""
    base_scores = np.full(10, 0.5)
    differences = np.array([-0.5, 0.3] * 5)  # mean -0.1, sd 0.42
    base = pl.DataFrame({"id": range(10), "faithfulness": base_scores})
    current = pl.DataFrame({"id": range(10), "faithfulness": base_scores + differences})
    return base, current


def test_a_drop_beyond_max_drop_that_is_not_significant_is_not_a_regression():
    base, current = _noisy_drop()
    reference = stats.ttest_rel(current["faithfulness"].to_numpy(), base["faithfulness"].to_numpy())
    row = rf.regressions(base, current, max_drop=0.05).row(0, named=True)
    assert row["delta"] == pytest.approx(-0.1) and row["exceeds_max_drop"]
    assert row["p_value"] == pytest.approx(reference.pvalue, rel=1e-9) and reference.pvalue > 0.4
    assert not row["significant"]
    assert row["regressed"] is False  # the significance rule: this fails if regressed = exceeds_max_drop
    # without the significance requirement the same drop is a regression
    loose = rf.regressions(base, current, max_drop=0.05, significance=False).row(0, named=True)
    assert loose["regressed"] is True and loose["p_value"] == row["p_value"]


def test_regressions_on_rows_need_significance():
    rng = np.random.default_rng(4)
    a = rng.random(200)
    base = pl.DataFrame({"id": range(200), "mrr": a, "faithfulness": a})
    current = base.with_columns(
        mrr=pl.Series(np.clip(a - 0.1 + rng.normal(0, 0.01, 200), 0, 1)),  # a clear, consistent drop
        faithfulness=pl.Series(np.clip(a + rng.normal(-0.06, 0.6, 200), 0, 1)),  # noisy
    )
    out = {r["metric"]: r for r in rf.regressions(base, current, max_drop=0.05).iter_rows(named=True)}
    assert out["mrr"]["regressed"] and out["mrr"]["exceeds_max_drop"] and out["mrr"]["significant"]
    assert out["faithfulness"]["baseline"] == pytest.approx(a.mean())
    # a significant drop smaller than max_drop is not a regression either
    small = rf.regressions(base, current, max_drop=0.2, metrics="mrr").row(0, named=True)
    assert small["significant"] and not small["exceeds_max_drop"] and not small["regressed"]


def test_regressions_on_rows_compare_the_metrics_of_both_sides():
    base, current = _noisy_drop()
    out = rf.regressions(base.with_columns(mrr=pl.lit(0.5)), current, max_drop=0.05)
    assert out["metric"].to_list() == ["faithfulness"]  # mrr is only in the baseline (gate fails on it)
    with pytest.raises(rf.SchemaError, match="missing column"):
        rf.regressions(base.with_columns(mrr=pl.lit(0.5)), current, metrics=["faithfulness", "mrr"])


def test_regressions_mixed_inputs_error():
    with pytest.raises(rf.SchemaError, match="both be summaries"):
        rf.regressions(pl.DataFrame({"metric": ["a"], "mean": [0.1]}), pl.DataFrame({"id": [1], "mrr": [0.1]}))


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"max_drop": -0.1}, "max_drop"),
        ({"max_drop": "0.1"}, "max_drop"),
        ({"max_drop": float("nan")}, "max_drop"),
        ({"significance": 1}, "significance"),
        ({"metrics": []}, "metrics"),
    ],
)
def test_bad_parameters_are_named(options, parameter):
    base, current = _noisy_drop()
    with pytest.raises(rf.InvalidParameterError, match=f"regressions: {parameter} must be"):
        rf.regressions(base, current, **options)


def test_is_summary_is_the_one_test():
    assert is_summary(["metric", "mean", "count"]) and is_summary(iter(["mean", "metric"]))
    assert not is_summary(["id", "mrr"]) and not is_summary(["metric", "p50"])
    assert is_summary(rf.summarize(pl.DataFrame({"mrr": [0.5]})).columns)
    assert is_summary(rf.summarize_batch(pl.DataFrame({"mrr": [0.5]})).columns)


def test_detect_regressions_is_the_seed_alias():
    base = pl.DataFrame({"faithfulness": [0.9, 0.7], "mrr": [None, None], "composite_score": [0.9, 0.9]})
    now = pl.DataFrame({"faithfulness": [0.6, 0.7], "mrr": [0.5, None], "composite_score": [0.1, 0.1]})
    out = rf.detect_regressions(base, now, threshold=0.05)
    assert out.columns == ["metric", "baseline_mean", "current_mean", "delta", "regressed"]
    # the seed: an all-null metric's mean is 0.0; the composite row is not compared
    assert out.rows() == [
        ("faithfulness", 0.8, pytest.approx(0.65), pytest.approx(-0.15), True),
        ("mrr", 0.0, 0.5, 0.5, False),
    ]
    # summaries or scored frames, mixed: the same result
    assert rf.detect_regressions(rf.summarize_batch(base), now, threshold=0.05).equals(out)
    with pytest.raises(rf.InvalidParameterError, match="detect_regressions: threshold"):
        rf.detect_regressions(base, now, threshold=None)


def test_one_schema_whatever_the_input():
    # per-row frames (paired, tested) and summaries (the seed's rule) give the same columns and dtypes
    base = pl.DataFrame({"id": [1, 2, 3, 4], "team": ["a", "a", "b", "b"], "mrr": [0.5, 0.2, 0.9, 0.4]})
    now = base.with_columns(pl.col("mrr") - 0.1)
    for by in (None, "team"):
        paired = rf.regressions(base, now, by=by)
        summaries = rf.regressions(rf.summarize(base, by=by), rf.summarize(now, by=by), by=by)
        assert paired.schema == summaries.schema
        assert paired.columns[-10:] == [
            "metric", "n", "baseline", "current", "delta", "p_value", "p_adjusted", "significant",
            "exceeds_max_drop", "regressed",
        ]  # fmt: skip
        assert summaries["n"].null_count() == summaries.height  # summaries carry no pairs
        assert summaries["regressed"].to_list() == summaries["exceeds_max_drop"].to_list() == [True] * summaries.height
