"""What the retrieval family reads: the judgments of a frame and the order of its rankings.

Which column holds the judgments (``relevance`` or ``relevant_ids``, :func:`judgment_column`),
how they are read into one wide table (:func:`wide_judgments`), and how a ranking with scores is
put in trec_eval's order (:func:`order_by_scores`: score descending, ties by id descending).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import polars as pl

from ragframe.exceptions import SchemaError
from ragframe.kernels.ranking import (
    Judgments,
    dedupe_judgments,
)
from ragframe.kernels.trec_measures import (
    TrecOptions,
)
from ragframe.schema import (
    check_id_list_column,
    first_true_row,
    id_dtype_ok,
    integer_grades,
    value_text,
)

__all__ = [
    "judgment_column",
    "wide_judgments",
    "order_by_scores",
    "check_err_grades",
    "judged_id_dtype",
    "graded_fields",
    "id_column",
    "check_scores",
    "in_trec_order",
    "score_steps",
]


def judgment_column(
    names: Iterable[str], *, relevant_ids: str | None, relevance: str | None, contains: bool = False
) -> tuple[str, bool]:
    """The judgments column a wide frame is scored with, and whether it is graded.

    ``relevant_ids`` and ``relevance`` are the caller's keywords (``relevant_ids=None``: the
    default column ``relevant_ids``, or ``gold_documents`` with ``match="contains"``;
    ``relevance=None``: no graded judgments). The graded column is used when it exists; when
    the frame also holds the binary column, which one to score is ambiguous, so that is a
    :class:`SchemaError` whether or not ``relevant_ids`` was named: pass ``relevance=None``
    to score the binary judgments, or leave the binary column out of the frame to score the
    graded ones. Content matching (``contains``) always reads the binary column.

    Examples
    --------
    >>> judgment_column(["retrieved_ids", "relevance"], relevant_ids=None, relevance="relevance")
    ('relevance', True)
    >>> judgment_column(["retrieved_ids", "relevant_ids", "relevance"], relevant_ids=None, relevance=None)
    ('relevant_ids', False)
    """
    available = set(names)
    binary = relevant_ids or ("gold_documents" if contains else "relevant_ids")
    if contains or not relevance or relevance not in available:
        return binary, False
    if binary in available:
        raise SchemaError(
            f"both {relevance!r} (graded) and {binary!r} (binary) judgments are present; pass relevance=None "
            f"to score the binary ones, or leave {binary!r} out of the frame to score the graded ones",
            column=binary,
        )
    return relevance, True


def check_err_grades(trec: TrecOptions | None, grades: np.ndarray, row_of: Any, column: str) -> None:
    """``err_at_k`` needs every grade <= ``err_max_grade``: an error naming the first row above it."""
    for measure in trec.measures if trec is not None else ():
        if measure.root != "err":
            continue
        above = np.flatnonzero(grades > measure.params[0])
        if above.size:
            raise SchemaError(
                "grade above err_max_grade",
                column=column,
                row=row_of(int(above[0])),
                expected=f"grades <= err_max_grade={measure.params[0]} (err_at_k's stop probabilities)",
                found=str(int(grades[above[0]])),
            )


def order_by_scores(
    view: pl.DataFrame, score_col: str, retrieved: pl.Series, run_q: np.ndarray, run_doc: pl.Series, lengths: np.ndarray
) -> tuple[np.ndarray, pl.Series]:
    scores = view.get_column(score_col)
    dtype = scores.dtype
    if not isinstance(dtype, pl.List) or not dtype.inner.is_numeric():
        raise SchemaError("wrong dtype", column=score_col, expected="list[f64]", found=str(dtype))
    score_len = scores.list.len()
    mismatch = score_len.is_not_null() & retrieved.is_not_null() & (score_len != retrieved.list.len())
    row = first_true_row(mismatch)
    if row is not None:
        raise SchemaError(
            "scores list and ids list differ in length",
            column=score_col,
            row=row,
            expected=f"{retrieved.list.len()[row]} scores",
            found=f"{score_len[row]}",
        )
    bad = scores.cast(pl.List(pl.Float64)).list.eval(pl.element().is_null() | pl.element().is_nan()).list.any()
    row = first_true_row(bad)
    if row is not None:
        raise SchemaError(
            "null or NaN inside a scores list",
            column=score_col,
            row=row,
            expected="numbers",
            found=value_text(view, score_col, row),
        )
    # rows with a null scores list (or a null ids list) keep list order: score = -position
    usable = (scores.is_not_null() & retrieved.is_not_null()).to_numpy()
    flat_scores = (
        scores.filter(pl.Series(usable))
        .cast(pl.List(pl.Float64))
        .explode(empty_as_null=False, keep_nulls=False)
        .to_numpy()
    )
    starts = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    pos = np.arange(run_q.size, dtype=np.int64) - starts[run_q]
    key = -pos.astype(np.float64)
    key[usable[run_q]] = flat_scores
    if in_trec_order(lengths, key, run_doc):
        return run_q, run_doc
    ordered = pl.DataFrame({"q": run_q, "s": key, "doc": run_doc}).sort(
        ["q", "s", "doc"], descending=[False, True, True], maintain_order=True
    )
    return ordered.get_column("q").to_numpy(), ordered.get_column("doc")


def graded_fields(dtype: pl.DataType) -> tuple[str, str] | None:
    """The id and grade field names of a graded judgments dtype, list[struct{id, grade}], or None.

    ``key``/``value`` are accepted for ``id``/``grade`` (a map read from Arrow); the id is a str
    or int, the grade an int or a float (whole numbers only, checked on the values).
    """
    inner = dtype.inner if isinstance(dtype, pl.List) else None
    fields = {f.name: f.dtype for f in inner.fields} if isinstance(inner, pl.Struct) else {}
    id_field = "id" if "id" in fields else "key" if "key" in fields else None
    grade_field = "grade" if "grade" in fields else "value" if "value" in fields else None
    if id_field is None or grade_field is None or not id_dtype_ok(fields[id_field]):
        return None
    if not (fields[grade_field].is_integer() or fields[grade_field].is_float()):
        return None
    return id_field, grade_field


def judged_id_dtype(dtype: pl.DataType, graded: bool) -> pl.DataType:
    """The dtype of the ids in a judgments column (Null when it is not a valid judgments dtype)."""
    if graded:
        fields = graded_fields(dtype)
        return {f.name: f.dtype for f in dtype.inner.fields}[fields[0]] if fields else pl.Null  # type: ignore[union-attr]
    return dtype.inner if isinstance(dtype, pl.List) else pl.Null


def wide_judgments(view: pl.DataFrame, column: str, graded: bool, relevant: pl.Series | None) -> Judgments:
    n = view.height
    if graded:
        series = view.get_column(column)
        fields = graded_fields(series.dtype)
        if fields is None:
            raise SchemaError(
                "wrong dtype",
                column=column,
                expected="list[struct{id: str, grade: int}]",
                found=str(series.dtype),
            )
        flat = series.explode(empty_as_null=False, keep_nulls=False).struct.unnest()
        ids = flat.get_column(fields[0]).cast(pl.String)
        grades = flat.get_column(fields[1])
        lengths = series.list.len().fill_null(0).to_numpy().astype(np.int64)
        row_of = np.repeat(np.arange(n, dtype=np.int64), lengths)
        bad = ids.is_null() | grades.is_null()
        at = first_true_row(bad)
        if at is not None:
            raise SchemaError(
                "null id or grade inside judgments",
                column=column,
                row=int(row_of[at]),
                expected="non-null id and grade",
                found=str(flat.row(at)),
            )
        grade = integer_grades(grades, column, row_of).to_numpy()
    else:
        series = relevant if relevant is not None else check_id_list_column(view, column)
        lengths = series.list.len().fill_null(0).to_numpy().astype(np.int64)
        row_of = np.repeat(np.arange(n, dtype=np.int64), lengths)
        ids = series.explode(empty_as_null=False, keep_nulls=False)
        grade = np.ones(ids.len(), dtype=np.int64)
    q, ids, grade = dedupe_judgments(row_of, ids, grade, column=column, row_of=row_of)
    judged = series.is_not_null().to_numpy()
    return Judgments(q=q, doc=ids.rename("doc"), grade=grade, judged=judged)


def id_column(df: pl.DataFrame, column: str) -> pl.Series:
    series = df.get_column(column)
    if not id_dtype_ok(series.dtype):
        raise SchemaError("wrong dtype", column=column, expected="str or int", found=str(series.dtype))
    if series.null_count():
        row = first_true_row(series.is_null())
        raise SchemaError("null id", column=column, row=row, expected="an id", found="null")
    return series if series.dtype == pl.String else series.cast(pl.String)


def score_pieces(score: np.ndarray | pl.Series) -> list[np.ndarray]:
    """The values as NumPy arrays without copying: one per chunk of a Series."""
    if isinstance(score, np.ndarray):
        return [score]
    return [chunk.to_numpy() for chunk in score.get_chunks() if chunk.len()]


def score_steps(score: np.ndarray | pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose score is above the previous row's (rises) and equal to it (ties).

    A Series is read chunk by chunk (its few Arrow chunks, not its rows), never copied whole.
    """
    rises, ties = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    offset, last = 0, None
    for part in score_pieces(score):
        if last is not None and part[0] >= last:
            (rises if part[0] > last else ties).append(np.array([offset]))
        steps = np.flatnonzero(part[1:] >= part[:-1])  # one pass: >= is > or == (NaN is neither)
        up = part[steps + 1] > part[steps]
        rises.append(steps.compress(up) + (offset + 1))
        ties.append(steps.compress(~up) + (offset + 1))
        offset, last = offset + part.size, part[-1]
    return np.concatenate(rises), np.concatenate(ties)


def in_trec_order(
    lengths: np.ndarray,
    score: np.ndarray | pl.Series,
    doc: pl.Series,
    steps: tuple[np.ndarray, np.ndarray] | None = None,
) -> bool:
    """True when each group of ``lengths`` rows is by score descending, then doc id descending.

    ``steps`` is :func:`score_steps` of ``score``, when already computed.
    """
    if len(score) < 2:
        return True
    boundary = np.cumsum(lengths)[:-1]  # first row of every group but the first (sorted)

    def at_boundary(rows: np.ndarray) -> np.ndarray:  # rows sorted: a binary search each
        found = np.searchsorted(boundary, rows).clip(max=max(boundary.size - 1, 0))
        return boundary[found] == rows if boundary.size else np.zeros(rows.size, dtype=bool)

    rises, tie = steps if steps is not None else score_steps(score)
    if rises.size and not at_boundary(rises).all():
        return False
    tie = tie[~at_boundary(tie)]
    if tie.size == 0:
        return True
    return not bool((doc.gather(tie - 1) < doc.gather(tie)).any())


def has_nan(part: np.ndarray) -> bool:
    with np.errstate(invalid="ignore"):  # inf + -inf is NaN: that alone is not a NaN score
        total = np.add.reduce(part)
    return bool(np.isnan(total) and np.isnan(part).any())


def check_scores(series: pl.Series, column: str) -> pl.Series:
    """The scores as Float64 (not copied when they are Float64); a typed error for null or NaN."""
    if not series.dtype.is_numeric():
        raise SchemaError("wrong dtype", column=column, expected="a number", found=str(series.dtype))
    values = series.cast(pl.Float64)
    # a sum is NaN when a value is NaN (or when +inf and -inf meet, silently: no RuntimeWarning): then look
    # row by row
    if values.null_count() or any(has_nan(part) for part in score_pieces(values)):
        row = first_true_row(values.is_null() | values.is_nan())
        raise SchemaError(
            "null or NaN score",
            column=column,
            row=row,
            expected="a number",
            found=str(values[row]),
        )
    return values
