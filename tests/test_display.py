"""ragframe.display: one shown text per cell, the same in the command line's tables and the HTML report."""

from __future__ import annotations

import polars as pl
import pytest

from ragframe.cli.format import format_frame
from ragframe.display import aligned, cell_text
from ragframe.reporting.tables import table


@pytest.mark.parametrize(
    ("value", "column", "text"),
    [
        (None, "mean", "-"),
        (float("nan"), "mean", "NaN"),
        (float("inf"), "mean", "inf"),
        (True, "significant", "yes"),
        (False, "passed", "no"),
        (12, "n", "12"),
        (0.123456, "mean", "0.1235"),
        (0.00004, "mean", "0.0000"),  # not a p-value: 4 decimals whatever its size
        (0.00004, "p_value", "4e-05"),  # would round to zero: 4 significant digits
        (1.23456e-09, "p_adjusted", "1.235e-09"),
        (0.00005, "p_value", "0.0001"),  # rounds to 0.0001: 4 decimals
        (0.0123456, "spearman_p", "0.0123"),
        (0.0, "p_value", "0.0000"),
        (1.0, "kendall_p", "1.0000"),
        ("tie", "winner", "tie"),
        (["info: a", None, "warn: b"], "signals", "info: a, warn: b"),
    ],
    ids=lambda v: repr(v),
)
def test_cell_text(value, column, text):
    assert cell_text(value, column) == text


def test_the_command_line_and_the_report_show_the_same_text():
    frame = pl.DataFrame(
        {
            "metric": ["faithfulness", "mrr", "ndcg_at_10"],
            "n": [200, 43, None],
            "delta": [-0.16034, 0.0, None],
            "p_value": [2.039e-09, 0.0038, 1.0],
            "significant": [True, False, None],
        }
    )
    lines = format_frame(frame).splitlines()
    shown = [line.split() for line in lines[2:]]
    report = [[c["text"] for c in row] for row in table(frame)["rows"]]
    expected = [
        ["faithfulness", "200", "-0.1603", "2.039e-09", "yes"],
        ["mrr", "43", "0.0000", "0.0038", "no"],
        ["ndcg_at_10", "-", "-", "1.0000", "-"],
    ]
    assert shown == report == expected
    markdown = format_frame(frame, "markdown").splitlines()[2:]
    assert [[c.strip() for c in line.strip("|").split("|")] for line in markdown] == report


def test_aligned_pads_left_and_right_and_keeps_no_trailing_space():
    out = aligned(["name", "value", "note"], [["a", "1.0000", ""], ["longer", "-", "x"]], [False, True, False])
    assert out.splitlines() == [
        "name     value  note",
        "------  ------  ----",
        "a       1.0000",
        "longer       -  x",
    ]
    assert aligned(["only"], [], [True]) == "only\n----"
