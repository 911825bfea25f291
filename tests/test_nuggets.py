"""The nuggets family equals nuggetizer's ``calculate_nugget_scores``: on random nugget lists and by hand."""

from __future__ import annotations

import polars as pl
import pytest
from claims_oracles import nuggetizer_metrics
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe as rf
from ragframe.metrics.nuggets import NUGGET_DTYPE, NUGGET_METRICS

ORACLE_FIELDS = {"nugget_strict_vital": "strict_vital_score", "nugget_strict_all": "strict_all_score",
                 "nugget_vital": "vital_score", "nugget_all": "all_score"}  # fmt: skip

NUGGET = st.fixed_dictionaries(
    {
        "text": st.text(max_size=8),
        "importance": st.sampled_from(["vital", "okay"]),
        "assignment": st.sampled_from(["support", "partial_support", "not_support"]),
    }
)


def _scores(rows: list) -> pl.DataFrame:
    frame = pl.DataFrame({"nuggets": pl.Series("nuggets", rows, dtype=NUGGET_DTYPE)})
    return rf.evaluate(frame, list(NUGGET_METRICS)).select(NUGGET_METRICS)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(rows=st.lists(st.lists(NUGGET, max_size=12), min_size=1, max_size=25))
def test_random_nugget_lists_equal_nuggetizer(rows):
    oracle = nuggetizer_metrics().calculate_nugget_scores
    scored = _scores(rows)
    for i, nuggets in enumerate(rows):
        expected = oracle(str(i), nuggets)
        got = {name: scored[name][i] for name in NUGGET_METRICS}
        assert got == {name: getattr(expected, field) for name, field in ORACLE_FIELDS.items()}, nuggets


def test_hand_worked_row_and_the_empty_rules():
    v, o = "vital", "okay"
    row = [
        {"text": "a", "importance": v, "assignment": "support"},
        {"text": "b", "importance": v, "assignment": "partial_support"},
        {"text": "c", "importance": o, "assignment": "partial_support"},
        {"text": "d", "importance": o, "assignment": "not_support"},
    ]
    all_okay = [{"text": "e", "importance": o, "assignment": "support"}]
    scored = _scores([row, [], all_okay, None])
    # strict vital 1/2, strict all 1/4, vital (1 + 0.5)/2, all (1 + 0.5 + 0.5)/4
    assert scored.row(0) == (0.5, 0.25, 0.75, 0.5)
    assert scored.row(1) == (0.0, 0.0, 0.0, 0.0)  # no nuggets: 0, as nuggetizer
    assert scored.row(2) == (0.0, 1.0, 0.0, 1.0)  # no vital nugget: the vital scores are 0, as nuggetizer
    assert scored.row(3) == (None,) * 4  # a null list: no score
    oracle = nuggetizer_metrics().calculate_nugget_scores
    assert oracle("q", all_okay).vital_score == 0.0 and oracle("q", []).all_score == 0.0


def test_renamed_column_and_extra_struct_fields():
    frame = pl.DataFrame({"n": [[{"text": "a", "importance": "vital", "assignment": "support", "docid": "d1"}]]})
    assert rf.evaluate(frame, ["nugget_all"], nuggets="n")["nugget_all"].to_list() == [1.0]


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        (
            [
                [{"text": "a", "importance": "vital", "assignment": "support"}],
                [{"text": "b", "importance": "Vital", "assignment": "support"}],
            ],
            r"unknown nugget importance \[column 'nuggets', row 1\].*found 'Vital'",
        ),
        (
            [[], [{"text": "b", "importance": "okay", "assignment": "supported"}]],
            r"unknown nugget assignment \[column 'nuggets', row 1\]",
        ),
        (
            [[], [{"text": "b", "importance": "okay", "assignment": None}]],
            r"nugget without an assignment.*\[column 'nuggets', row 1\]",
        ),
        ([[], [{"text": "b", "importance": None, "assignment": "support"}]], r"row 1\].*found null"),
    ],
)
def test_wrong_nuggets_are_typed_errors_naming_the_row(rows, match):
    frame = pl.DataFrame({"nuggets": pl.Series("nuggets", rows, dtype=NUGGET_DTYPE)})
    with pytest.raises(rf.SchemaError, match=match):
        rf.evaluate(frame, ["nugget_all"])


@pytest.mark.parametrize("values", [["a nugget"], [["a nugget"]], [[{"text": "a"}]]])
def test_a_wrong_shaped_nuggets_column_is_a_schema_error(values):
    with pytest.raises(rf.SchemaError, match=r"wrong dtype \[column 'nuggets'\]"):
        rf.evaluate(pl.DataFrame({"nuggets": values}), ["nugget_all"])


def test_explain_names_the_nuggets_the_answer_misses():
    row = [
        {"text": "a", "importance": "vital", "assignment": "support"},
        {"text": "b", "importance": "vital", "assignment": "partial_support"},
        {"text": "c", "importance": "okay", "assignment": "not_support"},
    ]
    frame = pl.DataFrame({"nuggets": pl.Series("nuggets", [row, [], None], dtype=NUGGET_DTYPE)})
    out = rf.evaluate(frame, ["nugget_strict_vital", "nugget_all"], explain=True)
    assert out["nugget_all_signals"][0].to_list() == [  # in the nuggets' order
        {"id": "partially_supported_nugget", "severity": "info", "message": "nugget 2: the answer supports part of it",
         "evidence": "b"},
        {"id": "unsupported_nugget", "severity": "warning", "message": "nugget 3: the answer does not support it",
         "evidence": "c"},
    ]  # fmt: skip
    assert [s["evidence"] for s in out["nugget_strict_vital_signals"][0]] == ["b"]  # okay nuggets do not count
    assert out["nugget_all_signals"].to_list()[1:] == [[], []]
