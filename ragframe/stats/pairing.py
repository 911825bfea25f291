"""Pairing two scored frames on their ids: the checks and the join every paired statistic shares.

:func:`ragframe.compare`, :func:`ragframe.gate`, :func:`ragframe.validity` and
:func:`ragframe.distributed.compare_datasets` pair rows of two frames on id columns. The
rules are written here once: ids present, non-null and unique on each side
(:func:`check_ids`), of one dtype on both (:func:`same_id_types`), an id on one side only
an error unless asked otherwise (:func:`pair_frames`), and the metrics compared named or
present on both sides (:func:`compared_metrics`). The names are public within the package
(no ``__all__`` export to users).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.metrics import score_columns
from ragframe.public import parameter_name
from ragframe.schema import first_true_row

__all__ = ["check_ids", "same_id_types", "pair_frames", "compared_metrics"]


def check_ids(df: pl.DataFrame, on: list[str], side: str) -> None:
    """Raise :class:`SchemaError` unless the id columns ``on`` of ``df`` are present, non-null and unique.

    Parameters
    ----------
    df : polars.DataFrame
        One side of a pairing.
    on : list of str
        The id column(s).
    side : str
        The side's name in the message ("a", "baseline", "labels", ...).

    Examples
    --------
    >>> import polars as pl
    >>> check_ids(pl.DataFrame({"id": [1, 2]}), ["id"], "a")
    >>> try:
    ...     check_ids(pl.DataFrame({"id": [1, 1]}), ["id"], "a")
    ... except SchemaError as error:
    ...     print(error)
    duplicate id in a: each sample must appear once [column 'id', row 1], found 1
    """
    for name in on:
        if name not in df.columns:
            raise SchemaError(f"missing id column in {side}", column=name, available=df.columns, parameter=side)
        row = first_true_row(df[name].is_null())
        if row is not None:
            raise SchemaError(f"null id in {side}", column=name, row=row, expected="an id", parameter=side)
    duplicated = df.select(~pl.struct(on).is_first_distinct()).to_series()
    row = first_true_row(duplicated)
    if row is not None:
        found = df.select(on).row(row)
        raise SchemaError(
            f"duplicate id in {side}: each sample must appear once",
            parameter=side,
            column=on[0],
            row=row,
            found=repr(found[0] if len(found) == 1 else found),
        )


def same_id_types(a: pl.DataFrame, b: pl.DataFrame, on: list[str]) -> tuple[pl.DataFrame, ...]:
    """The two sides with id columns of one dtype: integers widen to Int64, other differences are errors.

    Examples
    --------
    >>> import polars as pl
    >>> left, right = same_id_types(pl.DataFrame({"id": [1]}, schema={"id": pl.Int8}), pl.DataFrame({"id": [1]}),
    ...                             ["id"])
    >>> left.schema["id"], right.schema["id"]
    (Int64, Int64)
    """
    for name in on:
        left, right = a.schema[name], b.schema[name]
        if left == right:
            continue
        if left.is_integer() and right.is_integer() and pl.UInt64 not in (left, right):
            a, b = a.with_columns(pl.col(name).cast(pl.Int64)), b.with_columns(pl.col(name).cast(pl.Int64))
            continue
        first, second = parameter_name("a"), parameter_name("b")
        raise SchemaError(
            f"the id column has different types in {first} and {second}; cast one side so the ids can match",
            column=name,
            expected=f"{left} (as in {first})",
            found=f"{right} in {second}",
            parameter=second,
        )
    return a, b


def pair_frames(a: pl.DataFrame, b: pl.DataFrame, on: list[str], how: str) -> pl.DataFrame:
    """Inner join of the two sides on ``on`` (b's other columns suffixed ``__b``).

    With ``how="error"`` an id on one side only is a :class:`SchemaError` naming up to 5 of them.

    Examples
    --------
    >>> import polars as pl
    >>> a, b = pl.DataFrame({"id": [1, 2], "x": [0.1, 0.2]}), pl.DataFrame({"id": [2, 1], "x": [0.5, 0.6]})
    >>> pair_frames(a, b, ["id"], "error").sort("id").rows()
    [(1, 0.1, 0.6), (2, 0.2, 0.5)]
    """
    if how == "error":
        sides = parameter_name("a"), parameter_name("b")  # the caller's words: gate's baseline and current
        for left, right, (name, other) in ((a, b, sides), (b, a, sides[::-1])):
            only = left.select(on).join(right.select(on), on=on, how="anti", nulls_equal=False)
            if only.height:
                sample = [r[0] if len(r) == 1 else r for r in only.head(5).rows()]
                raise SchemaError(
                    f"{only.height} id(s) of {name} are missing from {other}, e.g. {sample}; "
                    "pass {how} to compare the shared ids only",
                    column=on[0],
                    parameter=other,
                    mentions={"how": "'inner'"},
                )
    return a.join(b, on=on, how="inner", suffix="__b")


def compared_metrics(left: pl.DataFrame, right: pl.DataFrame, metrics: Any, exclude: list[str]) -> list[str]:
    """The metrics asked, or every score column of both sides; a score column on one side only is an error.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"id": [1], "mrr": [0.5], "note": ["x"]})
    >>> compared_metrics(frame, frame, None, ["id"])
    ['mrr']
    """
    if metrics is not None:
        return validate.column_list(metrics, "metrics")
    in_a = [c for c in score_columns(left.schema) if c not in exclude]
    in_b = [c for c in score_columns(right.schema) if c not in exclude]
    only_a, only_b = [c for c in in_a if c not in in_b], [c for c in in_b if c not in in_a]
    if only_a or only_b:
        raise SchemaError(
            f"score column(s) {only_a} only in {parameter_name('a')} and {only_b} only in {parameter_name('b')}: "
            "each metric needs both sides; "
            "pass {metrics} to compare the shared ones",
            column=(only_a or only_b)[0],
            mentions={"metrics": "[...]"},
        )
    if not in_a:
        raise SchemaError(
            "no ragframe score column is present in both frames; pass {metrics}",
            available=left.columns,
            mentions={"metrics": "[...]"},
        )
    return in_a
