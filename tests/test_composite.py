"""The composite rule, by hand: composite_score = weighted mean of the non-null thresholded scores;
passed = no thresholded metric failed, and composite_score is not null and >= composite_threshold.

Three registered metrics pass their input through (so each score is the value written here):
``comp_a`` (threshold 0.5, weight 1), ``comp_b`` (threshold 0.25, weight 3) and ``comp_c`` (no
threshold: not in the composite), with ``composite_threshold=0.625``. Every value is a short
binary fraction, so the weighted means are exact in float64.
"""

from __future__ import annotations

import polars as pl
import pytest

import ragframe as rf

NAMES = ("comp_a", "comp_b", "comp_c")

# (a, b, c) -> composite_score, passed; worked by hand:
CASES = [
    # both pass; c (0.0, no threshold) is left out, else the composite would be 3.375 / 5 = 0.675
    ((0.75, 0.875, 0.0), (0.75 * 1 + 0.875 * 3) / 4, True),  # 3.375 / 4 = 0.84375 >= 0.625
    # a fails (0.375 < 0.5): the row fails although its composite is as high as the first row's
    ((0.375, 1.0, 0.5), (0.375 * 1 + 1.0 * 3) / 4, False),  # 3.375 / 4 = 0.84375
    # nothing fails (0.5 >= 0.5, 0.5 >= 0.25) but the composite is low
    ((0.5, 0.5, 1.0), (0.5 * 1 + 0.5 * 3) / 4, False),  # 2.0 / 4 = 0.5 < 0.625
    # a exactly at its threshold passes
    ((0.5, 0.6875, 1.0), (0.5 * 1 + 0.6875 * 3) / 4, True),  # 2.5625 / 4 = 0.640625
    # a null neither passes nor fails: the mean is over b alone, exactly the composite threshold
    ((None, 0.625, 1.0), (0.625 * 3) / 3, True),  # 1.875 / 3 = 0.625 >= 0.625
    # every thresholded score null: no composite, not passed
    ((None, None, 1.0), None, False),
    # b exactly at its threshold passes, the composite does not
    ((1.0, 0.25, 1.0), (1.0 * 1 + 0.25 * 3) / 4, False),  # 1.75 / 4 = 0.4375
]
HAND = [0.84375, 0.84375, 0.5, 0.640625, 0.625, None, 0.4375]


@pytest.fixture
def passthrough_metrics():
    for name, threshold in zip(NAMES, (0.5, 0.25, None)):
        rf.callback_metric(name, lambda x: x, [f"{name}_in"], threshold=threshold, replace=True)
    yield
    for name in NAMES:
        rf.unregister_metric(name)


def _frame() -> pl.DataFrame:
    rows = [values for values, _, _ in CASES]
    return pl.DataFrame(
        {f"{name}_in": [row[i] for row in rows] for i, name in enumerate(NAMES)},
        schema={f"{name}_in": pl.Float64 for name in NAMES},
    )


def test_the_hand_values_are_the_formulas():
    assert [composite for _, composite, _ in CASES] == HAND


def test_composite_score_and_passed_by_hand(passthrough_metrics):
    out = rf.evaluate(_frame(), list(NAMES), weights={"comp_b": 3.0}, composite_threshold=0.625)
    assert out["composite_score"].to_list() == HAND  # exact: binary fractions
    assert out["passed"].to_list() == [passed for _, _, passed in CASES]
    assert out["comp_a_passed"].to_list() == [True, False, True, True, None, None, True]
    assert out["comp_b_passed"].to_list() == [True, True, True, True, True, None, True]
    assert "comp_c_passed" not in out.columns


def test_a_failed_metric_fails_the_row_whatever_the_composite(passthrough_metrics):
    out = rf.evaluate(_frame(), list(NAMES), weights={"comp_b": 3.0}, composite_threshold=0.0)
    failed = [row["comp_a_passed"] is False or row["comp_b_passed"] is False for row in out.iter_rows(named=True)]
    assert failed == [False, True, False, False, False, False, False]
    # every composite now clears the bar; only the row with a failed metric, and the one without a composite, fail
    assert out["passed"].to_list() == [True, False, True, True, True, False, True]


def test_thresholds_and_prefix_move_the_flags(passthrough_metrics):
    out = rf.evaluate(
        _frame(),
        list(NAMES),
        weights={"comp_b": 3.0},
        thresholds={"comp_a": 0.25},
        composite_threshold=0.625,
        prefix="v_",
    )
    assert out["v_composite_score"].to_list() == HAND  # thresholds move the flags, not the weighted mean
    assert out["v_passed"].to_list() == [True, True, False, True, True, False, False]  # row 2's a (0.375) now passes
