"""Rows that break the column contract, found in one vectorised pass over a batch.

:func:`ragframe.evaluate_parquet` moves such rows to ``OUT/rejects/`` with a one-line
reason and scores the rest once. The checks are those the kernels make row by row (a
kernel raises :class:`~ragframe.exceptions.SchemaError` at the first bad row; here every
bad row of a batch is found at once):

- a column of the wrong dtype (every row of the batch): text roles ``str``; ``contexts``
  ``list[str]`` (Categorical and Enum text, at any depth, is String here, as in
  :func:`ragframe.schema.conform_text`: :func:`conform_null_types` casts it first); id
  lists ``list[str]`` or ``list[int]``; ``retrieved_scores`` a list of
  numbers; ``relevance`` ``list[struct{id: str|int, grade: int}]`` (fields ``key``/``value``
  accepted, float grades when whole numbers, as :func:`ragframe.score_retrieval` does);
- a null inside a list (``contexts``, ``retrieved_ids``, ``relevant_ids``);
- ``retrieved_scores``: a list whose length differs from ``retrieved_ids``'s, a null or NaN
  score;
- ``relevance``: a null judgment, id or grade; a float grade that is not a whole number; a
  document judged twice with different grades;
- retrieved ids and judged ids of different kinds (int and str: every row of the batch).

A reason reads like a :class:`~ragframe.exceptions.SchemaError` on one line: what is wrong,
``[column 'c', row r]`` (``r`` the 0-based row of the source file, the rejects'
``source_row``), what was expected and what was found (the value, cut to 80 characters).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from ragframe.schema import CONTRACT_DTYPES, conform_text, list_text, value_text

__all__ = [
    "CONTRACT_DTYPES",
    "conform_null_types",
    "row_problems",
    "one_line_reason",
    "value_text",
    "lossless_cast",
    "has_null_type",
]

_TEXT_ROLES = ("question", "answer", "ground_truth")
_ID_LIST_ROLES = ("retrieved_ids", "relevant_ids")
_FOUND_CHARS = 80


_INT_BITS = {
    dtype: bits
    for name, bits in [("Int8", 8), ("Int16", 16), ("Int32", 32), ("Int64", 64), ("Int128", 128)]
    if (dtype := getattr(pl, name, None)) is not None
}
_UINT_BITS = {
    dtype: bits
    for name, bits in [("UInt8", 8), ("UInt16", 16), ("UInt32", 32), ("UInt64", 64), ("UInt128", 128)]
    if (dtype := getattr(pl, name, None)) is not None
}
_FLOAT_MANTISSA = {pl.Float32: 24, pl.Float64: 53}


def lossless_cast(source: pl.DataType, target: pl.DataType) -> bool:
    """True when every value of dtype ``source`` is exactly a value of dtype ``target``.

    Null-typed columns (no values) cast to anything; integers to wider integers, and to
    floats whose mantissa holds them; Float32 to Float64; lists and structs field by field
    (same field names in the same order). Anything else (Int64 to String, Float64 to
    Int64, ...) is refused.

    Examples
    --------
    >>> import polars as pl
    >>> lossless_cast(pl.Int32, pl.Int64), lossless_cast(pl.Int64, pl.String), lossless_cast(pl.Null, pl.String)
    (True, False, True)
    >>> lossless_cast(pl.List(pl.UInt8), pl.List(pl.Int16)), lossless_cast(pl.Int64, pl.Float64)
    (True, False)
    """
    if source == target or source == pl.Null:
        return True
    base, goal = source.base_type(), target.base_type()
    if base in _INT_BITS:
        bits = _INT_BITS[base]
        return (goal in _INT_BITS and bits <= _INT_BITS[goal]) or bits - 1 <= _FLOAT_MANTISSA.get(goal, 0)
    if base in _UINT_BITS:
        bits = _UINT_BITS[base]
        fits = (goal in _UINT_BITS and bits <= _UINT_BITS[goal]) or (goal in _INT_BITS and bits < _INT_BITS[goal])
        return fits or bits <= _FLOAT_MANTISSA.get(goal, 0)
    if base == pl.Float32:
        return goal == pl.Float64
    if isinstance(source, pl.List) and isinstance(target, pl.List):
        return lossless_cast(source.inner, target.inner)
    if isinstance(source, pl.Struct) and isinstance(target, pl.Struct):
        names = [f.name for f in source.fields]
        return names == [f.name for f in target.fields] and all(
            lossless_cast(a.dtype, b.dtype) for a, b in zip(source.fields, target.fields)
        )
    return False


def has_null_type(dtype: pl.DataType) -> bool:
    """True for Null and for lists and structs holding a Null type (a column without values)."""
    if dtype == pl.Null:
        return True
    if isinstance(dtype, pl.List):
        return has_null_type(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return any(has_null_type(f.dtype) for f in dtype.fields)
    return False


@dataclass(frozen=True)
class _Check:
    """Rows where ``bad`` is true break the contract: ``what`` is wrong in ``column``."""

    column: str
    what: str
    expected: str
    bad: pl.Expr
    found: pl.Expr


def one_line_reason(what: str, column: str | None, row: int | None, expected: str | None, found: str | None) -> str:
    """A reject's reason on one line, ``found`` cut to 80 characters.

    Examples
    --------
    >>> one_line_reason("null or NaN score", "retrieved_scores", 20, "numbers", "[0.5,\\n NaN]")
    "null or NaN score [column 'retrieved_scores', row 20]; expected numbers, found [0.5, NaN]"
    """
    where = f" [column {column!r}, row {row}]" if column is not None else f" [row {row}]"
    text = " ".join(what.split()) + where
    if expected is not None:
        text += f"; expected {' '.join(expected.split())}"
    if found is not None:
        found = " ".join(found.split())
        text += f", found {found if len(found) <= _FOUND_CHARS else found[: _FOUND_CHARS - 3] + '...'}"
    return text


def conform_null_types(df: pl.DataFrame, roles: Mapping[str, str]) -> pl.DataFrame:
    """``df`` with its role columns in the contract's types: text as String, null-typed columns cast.

    Categorical and Enum text (at any depth) becomes String (:func:`ragframe.schema.conform_text`);
    a null-typed role column (``Null``, ``list[null]``, ...) is cast to its contract dtype. Neither
    cast changes a value; the checks and the kernels then see the contract's dtypes.

    Examples
    --------
    >>> conform_null_types(pl.DataFrame({"ids": [[], []]}), {"retrieved_ids": "ids"}).schema["ids"]
    List(String)
    >>> conform_null_types(pl.DataFrame({"a": ["x"]}, schema={"a": pl.Categorical}), {"answer": "a"}).schema["a"]
    String
    """
    df = conform_text(df, roles.values())
    casts = {}
    for role, name in roles.items():
        dtype, contract = df.schema.get(name), CONTRACT_DTYPES.get(role)
        if dtype is not None and contract is not None and dtype != contract and has_null_type(dtype):
            if lossless_cast(dtype, contract):
                casts[name] = contract
    return df.with_columns(pl.col(name).cast(dtype) for name, dtype in casts.items()) if casts else df


def row_problems(df: pl.DataFrame, roles: Mapping[str, str], *, offset: int = 0) -> pl.DataFrame:
    """The rows of ``df`` that break the contract for ``roles`` (role -> column), with a reason each.

    Parameters
    ----------
    df : polars.DataFrame
        A batch, its role columns already through :func:`conform_null_types`.
    roles : mapping
        The roles the scoring uses and their column names (roles absent from ``df`` are skipped).
    offset : int
        Source row of ``df``'s first row: reasons name source rows.

    Returns
    -------
    polars.DataFrame
        ``row`` (Int64, position in ``df``) and ``reason`` (str; the first check the row
        fails), one row per bad row, in row order.

    Examples
    --------
    >>> batch = pl.DataFrame({"ids": [["a", "b"], ["a"]], "scores": [[1.0, 0.5], [float("nan")]]})
    >>> row_problems(batch, {"retrieved_ids": "ids", "retrieved_scores": "scores"}, offset=10).rows()
    [(1, "null or NaN score [column 'scores', row 11]; expected numbers, found [NaN]")]
    """
    checks = [check for role, name in roles.items() if name in df.columns for check in _checks(df, role, name, roles)]
    checks += _id_kind_check(df, roles)
    if not checks:
        return pl.DataFrame(schema={"row": pl.Int64, "reason": pl.String})
    flags = df.select(check.bad.fill_null(False).alias(f"_bad{i}") for i, check in enumerate(checks))
    flags = flags.with_row_index("row").filter(pl.any_horizontal(pl.exclude("row")))
    if flags.height == 0:  # the usual case: nothing to describe
        return pl.DataFrame(schema={"row": pl.Int64, "reason": pl.String})
    bad = df.select(name for name in roles.values() if name in df.columns).gather(flags["row"]).hstack(flags)
    reasons = [
        pl.when(pl.col(f"_bad{i}")).then(
            pl.concat_str(
                pl.lit(f"{check.what} [column {check.column!r}, row "),
                (pl.col("row").cast(pl.Int64) + offset).cast(pl.String),
                pl.lit(f"]; expected {check.expected}, found "),
                _cut(check.found),
            )
        )
        for i, check in enumerate(checks)
    ]
    return bad.select(pl.col("row").cast(pl.Int64), pl.coalesce(reasons).alias("reason"))


def _cut(found: pl.Expr) -> pl.Expr:
    text = found.fill_null("null")
    cut = text.str.slice(0, _FOUND_CHARS - 3) + "..."
    return pl.when(text.str.len_chars() > _FOUND_CHARS).then(cut).otherwise(text)


def _checks(df: pl.DataFrame, role: str, name: str, roles: Mapping[str, str]) -> list[_Check]:
    """The checks of one role's column, the dtype's first (a wrong dtype marks every row)."""
    dtype = df.schema[name]
    expected, ok = _DTYPE_RULES[role]
    if not ok(dtype):
        return [_Check(name, "wrong dtype", expected, pl.lit(True), pl.lit(str(dtype)))]
    column = pl.col(name)
    if role in ("contexts", *_ID_LIST_ROLES):
        null_inside = column.list.eval(pl.element().is_null()).list.any()
        return [_Check(name, "null inside the list", "no null elements", null_inside, list_text(column, dtype))]
    if role == "retrieved_scores":
        return _score_checks(df, name, roles.get("retrieved_ids", "retrieved_ids"))
    if role == "relevance":
        return _relevance_checks(name, dtype)
    return []


def _score_checks(df: pl.DataFrame, name: str, ids: str) -> list[_Check]:
    column = pl.col(name)
    found = list_text(column, df.schema[name])
    checks = []
    if ids in df.columns and isinstance(df.schema[ids], pl.List):
        lengths = column.list.len() != pl.col(ids).list.len()
        found_length = pl.concat_str(column.list.len().cast(pl.String), pl.lit(" scores: "), found)
        expected = f"one score per id of {ids!r}"
        checks.append(_Check(name, "scores list and ids list differ in length", expected, lengths, found_length))
    not_number = column.cast(pl.List(pl.Float64)).list.eval(pl.element().is_null() | pl.element().is_nan()).list.any()
    checks.append(_Check(name, "null or NaN score", "numbers", not_number, found))
    return checks


def _relevance_checks(name: str, dtype: pl.DataType) -> list[_Check]:
    id_field, grade_field = _judgment_fields(dtype)
    column = pl.col(name)
    judgment_id, grade = pl.element().struct.field(id_field), pl.element().struct.field(grade_field)
    missing = column.list.eval(pl.element().is_null() | judgment_id.is_null() | grade.is_null()).list.any()
    pairs = column.list.eval(pl.struct(judgment_id, grade)).list.n_unique()
    conflict = column.list.eval(judgment_id).list.n_unique() < pairs
    found = list_text(column, dtype)
    checks = [_Check(name, "null judgment, id or grade", "non-null id and grade", missing, found)]
    if _field_dtypes(dtype)[grade_field].is_float():
        # as ragframe.schema.integer_grades: a float grade must be a finite whole number (2.0 is grade 2)
        value = grade.cast(pl.Float64)
        fractional = ~value.is_finite() | (value != value.floor()) | (value.abs() >= 2.0**63)
        not_whole = column.list.eval(fractional.fill_null(False)).list.any()
        checks.append(_Check(name, "grade is not a whole number", "integer grades", not_whole, found))
    checks.append(
        _Check(name, "a document judged twice with different grades", "one grade per document", conflict, found)
    )
    return checks


def _id_kind_check(df: pl.DataFrame, roles: Mapping[str, str]) -> list[_Check]:
    """Retrieved ids and judged ids of different kinds (int and str; ``7`` is not ``"7"``) mark every row.

    As :func:`ragframe.schema.check_same_id_kind`; the judgments are ``relevance`` when present, as
    :func:`ragframe.score_retrieval` reads them.
    """
    retrieved, graded, binary = (roles.get(r) for r in ("retrieved_ids", "relevance", "relevant_ids"))
    if retrieved not in df.columns or not _DTYPE_RULES["retrieved_ids"][1](df.schema[retrieved]):
        return []
    if graded in df.columns and _relevance_ok(df.schema[graded]):
        judged, dtype = graded, _field_dtypes(df.schema[graded])[_judgment_fields(df.schema[graded])[0]]
    elif graded not in df.columns and binary in df.columns and _DTYPE_RULES["relevant_ids"][1](df.schema[binary]):
        judged, dtype = binary, df.schema[binary].inner  # type: ignore[attr-defined]
    else:
        return []
    ids = df.schema[retrieved].inner  # type: ignore[attr-defined]
    if (ids == pl.String) == (dtype == pl.String):
        return []
    expected = f"{'str' if ids == pl.String else 'int'} ids as in {retrieved!r} ({ids})"
    return [_Check(judged, "ids of different types", expected, pl.lit(True), pl.lit(f"{dtype} ids"))]


def _field_dtypes(dtype: pl.DataType) -> dict[str, pl.DataType]:
    """Field name -> dtype of a list[struct] dtype."""
    return {f.name: f.dtype for f in dtype.inner.fields}  # type: ignore[attr-defined]


def _judgment_fields(dtype: pl.DataType) -> tuple[str, str]:
    names = [f.name for f in dtype.inner.fields]  # type: ignore[attr-defined]
    return ("id" if "id" in names else "key"), ("grade" if "grade" in names else "value")


def _is_id(dtype: pl.DataType) -> bool:
    return dtype == pl.String or dtype.is_integer()


def _relevance_ok(dtype: pl.DataType) -> bool:
    if not isinstance(dtype, pl.List) or not isinstance(dtype.inner, pl.Struct):
        return False
    fields = _field_dtypes(dtype)
    id_field, grade_field = _judgment_fields(dtype)
    if id_field not in fields or grade_field not in fields:
        return False
    return _is_id(fields[id_field]) and (fields[grade_field].is_integer() or fields[grade_field].is_float())


_DTYPE_RULES = {
    **{role: ("str", lambda d: d == pl.String) for role in _TEXT_ROLES},
    "contexts": ("list[str]", lambda d: d == pl.List(pl.String)),
    **{
        role: ("list[str] (or list[int])", lambda d: isinstance(d, pl.List) and _is_id(d.inner))
        for role in _ID_LIST_ROLES
    },
    "retrieved_scores": ("a list of numbers", lambda d: isinstance(d, pl.List) and d.inner.is_numeric()),
    "relevance": ("list[struct{id: str, grade: int}] (whole-number float grades accepted)", _relevance_ok),
}
