"""Helpers written once: dense group codes, to_polars of a LazyFrame, the no-null-inside-a-list check."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe.kernels.groups import dense_code, group_codes
from ragframe.kernels.matching import contains_to_ids
from ragframe.metrics.text_engine import contexts_column
from ragframe.schema import check_id_list_column, check_no_null_inside, to_polars

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- dense group codes
def test_group_codes_number_groups_in_sorted_key_order_nulls_first():
    df = pl.DataFrame({"s": ["b", None, "a", "b", "a"], "t": [2, 1, 1, 1, 1]})
    codes, keys = group_codes(df, ["s", "t"])
    # sorted keys: (None, 1) < ("a", 1) < ("b", 1) < ("b", 2): codes 0, 1, 2, 3
    assert codes.tolist() == [3, 0, 1, 2, 1] and codes.dtype == np.int64
    assert keys.rows() == [(None, 1), ("a", 1), ("b", 1), ("b", 2)]
    _, with_code = group_codes(df, ["s"], code_column="_group")
    assert with_code.rows() == [(None, 0), ("a", 1), ("b", 2)] and with_code.schema["_group"] == pl.Int64


def test_group_codes_without_by_and_with_a_by_column_named_like_the_code():
    codes, keys = group_codes(pl.DataFrame({"x": [1, 2, 3]}), [])
    assert codes.tolist() == [0, 0, 0] and keys.shape == (0, 0)
    codes, keys = group_codes(pl.DataFrame({"_code": ["y", "x", "y"]}), ["_code"])  # no clash with the code
    assert codes.tolist() == [1, 0, 1] and keys.rows() == [("x",), ("y",)]


def test_dense_code_of_columns_and_of_an_expression():
    df = pl.DataFrame({"a": [3.0, 1.0, 3.0, 2.0]})
    assert df.select(dense_code(["a"])).to_series().to_list() == [2, 0, 2, 1]
    assert df.select(dense_code(-pl.col("a"))).to_series().to_list() == [0, 2, 0, 1]


def test_summary_slices_keep_their_order_and_codes():
    scores = pl.DataFrame({"s": ["b", "a", "b", None], "mrr": [1.0, 0.5, 0.0, 0.25]})
    out = rf.summarize(scores, by="s")
    assert out["s"].to_list() == [None, "a", "b"] and out["mean"].to_list() == [0.25, 0.5, 0.5]


# ----------------------------------------------------------------------------- to_polars of a LazyFrame
def test_to_polars_of_a_lazy_frame_reads_only_the_columns_asked_and_conforms_text():
    def never(_: pl.DataFrame) -> pl.DataFrame:
        raise AssertionError("a column not asked for was computed")

    lazy = pl.LazyFrame({"id": [1, 2], "s": ["x", "y"]}, schema_overrides={"s": pl.Categorical}).with_columns(
        pl.col("id").map_batches(never, return_dtype=pl.Int64).alias("costly")
    )
    out = to_polars(lazy, ["s"])
    assert out.rows() == [("x",), ("y",)] and out.schema["s"] == pl.String  # as for an eager frame
    assert to_polars(lazy.drop("costly")).schema == to_polars(lazy.drop("costly").collect()).schema
    with pytest.raises(rf.SchemaError, match=r"missing column \[column 'absent'\]"):
        to_polars(lazy, ["absent"])


@pytest.mark.parametrize(
    "call",
    [
        lambda f: rf.summarize(f, metrics=["mrr"]),
        lambda f: rf.compare(f, f, on="id", metrics=["mrr"]),
        lambda f: rf.regressions(rf.summarize(f), rf.summarize(f)),
        lambda f: rf.gate(baseline=f, current=f, on="id"),
    ],
    ids=["summarize", "compare", "regressions", "gate"],
)
def test_lazy_and_eager_inputs_give_the_same_frame(call):
    eager = pl.DataFrame({"id": [1, 2, 3, 4], "mrr": [1.0, 0.5, 0.25, 0.0]})
    assert call(eager.lazy()).equals(call(eager))


# ----------------------------------------------------------------------------- a null inside a list
@pytest.mark.parametrize(
    ("check", "message"),
    [
        (lambda df: check_id_list_column(df, "ids"), r"null id inside a list \[column 'ids', row 2\]"),
        (lambda df: contains_to_ids(df, "ids", "gold"), r"null text inside a list \[column 'ids', row 2\]"),
        (lambda df: contexts_column(df, "ids"), r"null chunk inside a contexts list \[column 'ids', row 2\]"),
    ],
    ids=["ids", "matching", "contexts"],
)
def test_a_null_inside_a_list_is_named_by_row(check, message):
    df = pl.DataFrame({"ids": [["a"], None, ["b", None], [None]], "gold": [["a"], ["a"], ["a"], ["a"]]})
    with pytest.raises(rf.SchemaError, match=message):
        check(df)
    check(df.slice(0, 2))  # a null list is not a null inside one


def test_check_no_null_inside_finds_the_first_row_only_when_there_is_one():
    check_no_null_inside(pl.Series([[], None, ["x"]], dtype=pl.List(pl.String)), "c")
    with pytest.raises(rf.SchemaError, match=r"^null inside a list \[column 'c', row 1\]; expected no null"):
        check_no_null_inside(pl.Series([["x"], [None], [None]]), "c")


# ----------------------------------------------------------------------------- written once
@pytest.mark.parametrize(
    ("pattern", "home"),
    [
        (r'rank\("dense"\)', {"kernels/groups.py"}),
        (r'collect\(\) if .*== "lazy"', set()),
        (r"first_true_row\(\w+\.list\.eval\(pl\.element\(\)\.is_null\(\)\)", {"schema.py"}),
    ],
    ids=["dense-codes", "lazy-branch", "null-inside"],
)
def test_each_helper_is_written_once(pattern, home):
    """The null-inside check that raises is schema.check_no_null_inside (row masks, as io/row_checks', differ)."""
    package = ROOT / "ragframe"
    found = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if re.search(pattern, path.read_text(encoding="utf-8"))
    }
    assert found <= home, found - home
