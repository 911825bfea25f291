"""The column contract and the frame adapters.

Every public ``score_*`` function takes a frame first and returns the same kind of
frame: polars DataFrame or LazyFrame, pyarrow Table or RecordBatch, or pandas
DataFrame. Internally the columns a kernel needs are viewed as a polars
DataFrame; the kernel returns only the *new* columns, and the adapter attaches
them to the caller's frame, so input columns are never modified, retyped or
reordered.

Text is text whatever its encoding: the view a kernel sees has every Categorical
and Enum (pandas ``category``, Arrow dictionary-encoded strings), at any depth of a
list, array or struct, as String (:func:`conform_text`). Arrow's ``large_string``
and ``string_view`` and pandas ``string[pyarrow]`` are String in polars already.
Every adapter here applies it (:func:`to_polars`, :func:`frame_schema`,
:func:`apply_to_frame`, also on a LazyFrame), as do the streaming row checks, so no
path sees a Categorical text column.

Output columns and the input's names (:func:`check_output_columns`): a frame that
already holds *some* of the columns a run writes (a log with its own
``faithfulness`` or ``passed`` column) is refused with a
:class:`~ragframe.exceptions.SchemaError` naming the column, rather than having it
replaced or duplicated; a frame that holds *every* column the run writes was scored
before by the same run (re-running a notebook cell), and its columns are replaced in
place. Write beside earlier scores with a ``prefix``.

pandas is optional: it is never imported here; a pandas object is recognised by
its type's module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import polars as pl
import pyarrow as pa

from ragframe.exceptions import InvalidParameterError, SchemaError

__all__ = [
    "list_text",
    "value_text",
    "CONTRACT_DTYPES",
    "DEFAULT_COLUMNS",
    "column_names",
    "conform_text",
    "text_as_string",
    "check_output_columns",
    "frame_schema",
    "frame_kind",
    "to_polars",
    "apply_to_frame",
    "require_columns",
    "check_id_list_column",
    "id_dtype_ok",
    "id_kind",
    "check_same_id_kind",
    "integer_grades",
    "first_true_row",
    "check_no_null_inside",
]

Frame = TypeVar("Frame")

#: Canonical column names (docs/metrics.md says which metric reads which). Every function lets the caller
#: rename them by keyword.
#: The dtype each role has in the column contract (null-typed columns are cast to it).
CONTRACT_DTYPES: dict[str, pl.DataType] = {
    **{role: pl.String() for role in ("question", "answer", "ground_truth")},
    **{role: pl.List(pl.String) for role in ("contexts", "retrieved_ids", "relevant_ids")},
    "retrieved_scores": pl.List(pl.Float64),
    "relevance": pl.List(pl.Struct({"id": pl.String, "grade": pl.Int64})),
}
DEFAULT_COLUMNS: dict[str, str] = {
    "id": "id",
    "question": "question",
    "answer": "answer",
    "contexts": "contexts",
    "ground_truth": "ground_truth",
    "retrieved_ids": "retrieved_ids",
    "retrieved_scores": "retrieved_scores",
    "relevant_ids": "relevant_ids",
    "relevance": "relevance",
    "gold_documents": "gold_documents",
}


def frame_kind(frame: Any) -> str:
    """Name the kind of ``frame``: polars, lazy, arrow_table, arrow_batch or pandas.

    Examples
    --------
    >>> import polars as pl
    >>> frame_kind(pl.DataFrame({"a": [1]}))
    'polars'
    """
    if isinstance(frame, pl.DataFrame):
        return "polars"
    if isinstance(frame, pl.LazyFrame):
        return "lazy"
    if isinstance(frame, pa.Table):
        return "arrow_table"
    if isinstance(frame, pa.RecordBatch):
        return "arrow_batch"
    module = type(frame).__module__ or ""
    if module.startswith("pandas") and type(frame).__name__ == "DataFrame":
        return "pandas"
    raise InvalidParameterError(
        f"expected a polars DataFrame/LazyFrame, pyarrow Table/RecordBatch or "
        f"pandas DataFrame, found {type(frame).__module__}.{type(frame).__name__}"
    )


def column_names(frame: Any) -> list[str]:
    """Column names of any supported frame (a LazyFrame's from its schema, without collecting).

    A pandas DataFrame or an Arrow table may repeat a column name; that is a
    :class:`SchemaError` naming it (polars frames cannot).

    Examples
    --------
    >>> import pyarrow as pa
    >>> column_names(pa.table({"a": [1], "b": [2]}))
    ['a', 'b']
    """
    names = _column_names(frame, frame_kind(frame))
    if len(set(names)) != len(names):
        repeated = next(n for n in names if names.count(n) > 1)
        raise SchemaError("repeated column name", column=repeated, available=names)
    return names


def _column_names(frame: Any, kind: str) -> list[str]:
    if kind == "lazy":
        return list(frame.collect_schema().names())
    if kind in ("polars", "pandas"):
        return [str(c) for c in frame.columns]
    return list(frame.schema.names)


def text_as_string(dtype: pl.DataType) -> pl.DataType:
    """``dtype`` with every Categorical and Enum in it (at any depth) replaced by String.

    Examples
    --------
    >>> import polars as pl
    >>> text_as_string(pl.List(pl.Categorical)), text_as_string(pl.Enum(["a"])), text_as_string(pl.Int64)
    (List(String), String, Int64)
    """
    if dtype == pl.Categorical or isinstance(dtype, pl.Enum) or dtype is pl.Enum:  # instances and bare classes
        return pl.String()
    if isinstance(dtype, pl.List):
        return pl.List(text_as_string(dtype.inner))
    if isinstance(dtype, pl.Array):
        return pl.Array(text_as_string(dtype.inner), dtype.size)
    if isinstance(dtype, pl.Struct):
        return pl.Struct([pl.Field(f.name, text_as_string(f.dtype)) for f in dtype.fields])
    return dtype


FrameOrLazy = TypeVar("FrameOrLazy", pl.DataFrame, pl.LazyFrame)


def conform_text(df: FrameOrLazy, columns: Iterable[str] | None = None) -> FrameOrLazy:
    """``df`` with its Categorical and Enum text (at any depth) cast to String: text is text.

    A dictionary-encoded Arrow string, a pandas ``category`` and a polars Categorical or
    Enum hold the same strings as a String column, so every kernel reads them as String
    (the cast changes no value). Only ``columns`` are cast when given; other dtypes are
    left as they are.

    Parameters
    ----------
    df : polars.DataFrame or polars.LazyFrame
        The frame (a LazyFrame stays lazy).
    columns : iterable of str, optional
        The columns to conform (default: all).

    Returns
    -------
    The same kind of frame.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"answer": ["Paris"], "contexts": [["a"]]}).with_columns(
    ...     pl.col("answer").cast(pl.Categorical), pl.col("contexts").cast(pl.List(pl.Categorical))
    ... )
    >>> dict(conform_text(df).schema)
    {'answer': String, 'contexts': List(String)}
    """
    schema = df.collect_schema() if isinstance(df, pl.LazyFrame) else df.schema
    wanted = schema.names() if columns is None else [c for c in columns if c in schema]
    casts = {name: text_as_string(schema[name]) for name in wanted}
    casts = {name: dtype for name, dtype in casts.items() if dtype != schema[name]}
    return df.with_columns(pl.col(name).cast(dtype) for name, dtype in casts.items()) if casts else df


def check_output_columns(existing: Sequence[str], written: Sequence[str], *, hint: str) -> list[str]:
    """The rule for output names already in the input: all of them are replaced, some of them refused.

    A frame that holds *every* column a run writes was scored before by that same run (a
    notebook cell run twice): those columns are replaced in place, and their names are
    returned. A frame that holds only *some* of them (a log with its own ``faithfulness``,
    ``passed`` or ``mrr`` column) is a :class:`SchemaError` naming the first such column and
    ``hint`` (how to write beside it): replacing the user's column would lose it silently,
    and keeping both is impossible in one frame.

    Parameters
    ----------
    existing : sequence of str
        The input frame's column names.
    written : sequence of str
        The columns the run writes.
    hint : str
        What to do instead (``"pass prefix='v2_'"``).

    Returns
    -------
    list of str
        The columns replaced (empty when none is in the input).

    Examples
    --------
    >>> check_output_columns(["id", "mrr"], ["mrr"], hint="pass prefix='v2_'")
    ['mrr']
    >>> check_output_columns(["id", "passed"], ["mrr", "passed"], hint="use a prefix")
    Traceback (most recent call last):
    ...
    ragframe.exceptions.SchemaError: the frame already has a column this run writes; use a prefix [column 'passed']
    """
    present = set(existing)
    clashes = [name for name in written if name in present]
    if clashes and len(clashes) < len(written):
        message = f"the frame already has a column this run writes; {hint}"
        raise SchemaError(message, column=clashes[0])
    return clashes


def frame_schema(frame: Any) -> pl.Schema:
    """The polars schema of any supported frame, without converting its rows (text types as String).

    Examples
    --------
    >>> import pyarrow as pa
    >>> dict(frame_schema(pa.table({"a": [1.5]})))
    {'a': Float64}
    """
    column_names(frame)  # kind and repeated names checked
    kind = frame_kind(frame)
    if kind == "lazy":
        schema = frame.collect_schema()
    elif kind == "polars":
        schema = frame.schema
    elif kind in ("arrow_table", "arrow_batch"):
        schema = pl.DataFrame(pl.from_arrow(frame.slice(0, 0))).schema
    else:
        schema = pl.from_pandas(frame.iloc[:0].reset_index(drop=True)).schema
    return pl.Schema({name: text_as_string(dtype) for name, dtype in schema.items()})


def to_polars(frame: Any, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """View ``frame`` (any supported kind) as a polars DataFrame, text types as String.

    Only ``columns`` are converted when given (all columns otherwise); a LazyFrame is
    collected, with only ``columns`` when given. Categorical and Enum columns (Arrow
    dictionaries, pandas ``category``), also inside lists and structs, are String in the
    view (:func:`conform_text`), whatever the kind of frame.

    Examples
    --------
    >>> import pyarrow as pa, polars as pl
    >>> to_polars(pa.table({"a": [1, 2]})).height
    2
    >>> dict(to_polars(pl.LazyFrame({"a": [1], "b": ["x"]}, schema_overrides={"b": pl.Categorical}), ["b"]).schema)
    {'b': String}
    """
    kind = frame_kind(frame)
    if kind == "lazy":
        if columns is not None:
            require_columns(column_names(frame), columns)
            frame = frame.select(list(columns))  # the other columns are never read
        frame = frame.collect()
        kind = "polars"
    names = column_names(frame)
    if columns is not None:
        require_columns(names, columns)
    if kind == "polars":
        return conform_text(frame if columns is None else frame.select(list(columns)))
    if kind in ("arrow_table", "arrow_batch"):
        table = frame if columns is None else frame.select(list(columns))
        return conform_text(pl.DataFrame(pl.from_arrow(table)))
    pdf = frame if columns is None else frame[list(columns)]
    return conform_text(pl.from_pandas(pdf.reset_index(drop=True)))


def require_columns(available: Iterable[str], needed: Iterable[str]) -> None:
    """Raise :class:`SchemaError` naming the first column of ``needed`` not in ``available``."""
    have = list(available)
    present = set(have)
    for name in needed:
        if name not in present:
            raise SchemaError(
                "missing column",
                column=name,
                available=have,
            )


def apply_to_frame(
    frame: Frame,
    compute: Callable[[pl.DataFrame], pl.DataFrame],
    *,
    columns: Sequence[str],
    clash_hint: str | None = None,
) -> Frame:
    """Run ``compute`` on the ``columns`` of ``frame`` and attach its result columns.

    ``compute`` receives a polars DataFrame holding ``columns`` (text types as String) and
    returns a DataFrame of new columns with the same number of rows. A LazyFrame stays lazy:
    ``compute`` runs when the caller collects (its output schema is taken from a
    run on zero rows, which also validates the input schema at call time).

    With ``clash_hint``, the names ``compute`` writes (from a run on zero rows, before any
    real work) follow :func:`check_output_columns`: all already in ``frame`` are replaced,
    some are a :class:`SchemaError` naming the first and ``clash_hint``. Without it an
    output column of an existing name replaces it.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"x": [1, 2]})
    >>> apply_to_frame(df, lambda d: d.select(y=pl.col("x") * 2), columns=["x"])["y"].to_list()
    [2, 4]
    """
    kind = frame_kind(frame)
    names = column_names(frame)
    require_columns(names, columns)

    if kind == "lazy":
        lazy: pl.LazyFrame = frame  # type: ignore[assignment]
        empty = pl.DataFrame(schema=lazy.collect_schema())
        written = compute(conform_text(empty.select(list(columns))))
        if clash_hint is not None:
            check_output_columns(names, written.columns, hint=clash_hint)
        out_schema = _attach_polars(empty, written).schema

        def run(df: pl.DataFrame) -> pl.DataFrame:
            new = compute(conform_text(df.select(list(columns))))
            return _attach_polars(df, _checked(new, df.height))

        return lazy.map_batches(run, schema=out_schema, streamable=False)  # type: ignore[return-value]

    view = to_polars(frame, columns)
    if clash_hint is not None:
        check_output_columns(names, compute(view.clear()).columns, hint=clash_hint)
    new = _checked(compute(view), view.height)
    if kind == "polars":
        return _attach_polars(frame, new)  # type: ignore[arg-type,return-value]
    if kind in ("arrow_table", "arrow_batch"):
        return _attach_arrow(frame, new)  # type: ignore[return-value]
    return _attach_pandas(frame, new)  # type: ignore[return-value]


def _checked(new: pl.DataFrame, height: int) -> pl.DataFrame:
    if new.height != height:  # an internal invariant, never a user error
        raise RuntimeError(f"kernel returned {new.height} rows for {height} input rows")
    return new


def _attach_polars(df: pl.DataFrame, new: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(new.get_columns()) if new.width else df


def _attach_arrow(table: Any, new: pl.DataFrame) -> Any:
    arrays = dict(zip(table.schema.names, table.columns))
    order = list(table.schema.names)
    for name, column in zip(new.columns, new.to_arrow().columns):
        if isinstance(table, pa.RecordBatch) and isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if name not in arrays:
            order.append(name)
        arrays[name] = column
    cls = pa.RecordBatch if isinstance(table, pa.RecordBatch) else pa.Table
    return cls.from_arrays([arrays[n] for n in order], names=order)


def _attach_pandas(pdf: Any, new: pl.DataFrame) -> Any:
    out = pdf.copy(deep=False)
    converted = new.to_pandas()
    for name in new.columns:
        out[name] = converted[name].to_numpy() if converted[name].dtype.kind in "fiub" else converted[name].values
    return out


def id_dtype_ok(dtype: pl.DataType) -> bool:
    """True for the id types the contract accepts: strings and integers."""
    return dtype == pl.String or dtype.is_integer()


def id_kind(dtype: pl.DataType) -> str | None:
    """``"str"`` or ``"int"`` for an id dtype (any integer width is ``"int"``), else None.

    Examples
    --------
    >>> import polars as pl
    >>> id_kind(pl.Int32), id_kind(pl.String), id_kind(pl.Float64)
    ('int', 'str', None)
    """
    if dtype == pl.String:
        return "str"
    return "int" if dtype.is_integer() else None


def check_same_id_kind(first: tuple[str, pl.DataType], second: tuple[str, pl.DataType], *, column: str) -> None:
    """Refuse ids of two kinds: ``first`` and ``second`` are (label, dtype of the ids) each.

    An integer id never equals a string id: ``7`` is not ``"7"``, nor ``"07"``. Comparing them
    by their text would be a silent coercion, so mixing kinds is a :class:`SchemaError`
    naming both sides and their dtypes (``column`` is the error's column); integers of any
    width are one kind. Dtypes that are not ids at all are left to each column's own check.

    Examples
    --------
    >>> import polars as pl
    >>> check_same_id_kind(("'retrieved_ids'", pl.Int64), ("'relevant_ids'", pl.Int32), column="relevant_ids")
    >>> check_same_id_kind(
    ...     ("'retrieved_ids'", pl.Int64), ("'relevant_ids'", pl.String), column="relevant_ids"
    ... )  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ragframe.exceptions.SchemaError: ids of different types: 'retrieved_ids' holds Int64 ids, ...
    """
    (label_a, dtype_a), (label_b, dtype_b) = first, second
    kind_a, kind_b = id_kind(dtype_a), id_kind(dtype_b)
    if kind_a is None or kind_b is None or kind_a == kind_b:
        return
    raise SchemaError(
        f"ids of different types: {label_a} holds {dtype_a} ids, {label_b} {dtype_b} ids; "
        "an int id never equals a str id: cast one side",
        column=column,
        expected=f"{dtype_a} ids, as {label_a}",
        found=str(dtype_b),
    )


def integer_grades(grades: pl.Series, column: str, row_of: Any = None) -> pl.Series:
    """Relevance grades as Int64: integer dtypes as they are, floats only when whole numbers.

    A float grade column is accepted when every (non-null) value is a finite whole number
    (``2.0`` is grade 2); ``1.5``, NaN or infinity is a :class:`SchemaError` naming the column
    and the row (``row_of[i]`` is the input row of value ``i`` when the grades were flattened
    from lists). Nothing is truncated. Other dtypes are a ``wrong dtype`` error. Nulls pass
    through (the caller decides what a null grade means).

    Examples
    --------
    >>> import polars as pl
    >>> integer_grades(pl.Series([2.0, 0.0]), "relevance").to_list()
    [2, 0]
    >>> integer_grades(pl.Series([2.0, 1.5]), "relevance")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ragframe.exceptions.SchemaError: grade is not a whole number [column 'relevance', row 1]; ... found 1.5
    """
    dtype = grades.dtype
    if dtype.is_integer():
        return grades if dtype == pl.Int64 else grades.cast(pl.Int64)
    if not dtype.is_float():
        raise SchemaError("wrong dtype", column=column, expected="int", found=str(dtype))
    values = grades.cast(pl.Float64)
    bad = ~values.is_finite() | (values != values.floor()) | (values.abs() >= 2.0**63)
    at = first_true_row(bad)
    if at is not None:
        raise SchemaError(
            "grade is not a whole number",
            column=column,
            row=int(row_of[at]) if row_of is not None else at,
            expected="an integer grade",
            found=str(values[at]),
        )
    return values.cast(pl.Int64)


def first_true_row(mask: pl.Series) -> int | None:
    """Position of the first True in a boolean Series (nulls count as False), or None."""
    hits = mask.fill_null(False).arg_true()
    return int(hits[0]) if hits.len() else None


def check_no_null_inside(
    series: pl.Series,
    column: str,
    *,
    what: str = "null inside a list",
    expected: str = "no null elements",
) -> None:
    """Raise :class:`SchemaError` ``what`` naming the first row whose list holds a null (a null list is fine).

    One vectorized pass (``list.eval(is_null).list.any()``); the row is found only when
    there is one.

    Examples
    --------
    >>> import polars as pl
    >>> check_no_null_inside(pl.Series([["a"], None, []]), "contexts")  # a null list, an empty list: fine
    >>> check_no_null_inside(pl.Series([["a"], ["b", None]]), "ids", what="null id")
    Traceback (most recent call last):
    ...
    ragframe.exceptions.SchemaError: null id [column 'ids', row 1]; expected no null elements, found null
    """
    row = first_true_row(series.list.eval(pl.element().is_null()).list.any())
    if row is not None:
        raise SchemaError(what, column=column, row=row, expected=expected, found="null")


def check_id_list_column(df: pl.DataFrame, column: str) -> pl.Series:
    """Validate a list-of-ids column and return it as ``list[str]``.

    Nulls of the list itself are allowed (their meaning is the caller's);
    a null *inside* a list is an error naming the row. Integer ids are compared
    by their decimal string form.
    """
    series = df.get_column(column)
    dtype = series.dtype
    if not isinstance(dtype, pl.List) or not id_dtype_ok(dtype.inner):
        raise SchemaError(
            "wrong dtype",
            column=column,
            expected="list[str] (or list[int])",
            found=str(dtype),
        )
    if dtype.inner != pl.String:
        series = series.cast(pl.List(pl.String))
    check_no_null_inside(series, column, what="null id inside a list")
    return series


def list_text(column: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A short text of each list, as reasons and errors show it: ``['a', null]``, ``[{id: d1, grade: 2}]``."""
    inner = dtype.inner if isinstance(dtype, pl.List) else pl.Null
    if inner == pl.String:
        element = pl.concat_str(pl.lit("'"), pl.element(), pl.lit("'"))
    elif isinstance(inner, pl.Struct):
        parts = [pl.lit("{")]
        for i, field in enumerate(inner.fields):
            text = pl.element().struct.field(field.name).cast(pl.String).fill_null("null")
            parts += [pl.lit(f"{', ' if i else ''}{field.name}: "), text]
        element = pl.concat_str(*parts, pl.lit("}"))
    else:
        element = pl.element().cast(pl.String)
    joined = column.list.eval(element.fill_null("null")).list.join(", ")
    return pl.concat_str(pl.lit("["), joined, pl.lit("]"))


def value_text(df: pl.DataFrame, column: str, row: int) -> str:
    """A short text of one value of ``df``, as reasons show it: ``['a', null]``, ``[0.5, NaN]``, ``'text'``.

    Examples
    --------
    >>> value_text(pl.DataFrame({"s": [[0.5, float("nan")]]}), "s", 0)
    '[0.5, NaN]'
    """
    dtype = df.schema[column]
    if isinstance(dtype, pl.List):
        text = df.slice(row, 1).select(list_text(pl.col(column), dtype)).item()
    else:
        value = df.get_column(column)[row]
        text = repr(value) if isinstance(value, str) else str(value)
    return "null" if text is None else text
