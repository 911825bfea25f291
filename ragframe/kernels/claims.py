"""Labelled lists and label matrices, flattened into arrays: the shape claim-level metrics are computed on.

A claim-level metric reads, per row, a list of labels (one verdict per claim, one assignment
per nugget) or a matrix of them (claims x passages). Both are held flattened: one array entry
per label, with the row (and claim, and passage) it belongs to, so every per-row quantity is a
segment sum over the whole column (``np.bincount``), never a Python loop per row.

:func:`label_list` reads a ``list[str]`` column, :func:`label_matrix` a ``list[list[str]]``
column (rectangular in each row: every claim judged against the same passages). Both check
the labels against a closed vocabulary and name the first row that breaks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from ragframe.exceptions import SchemaError

__all__ = ["LabelList", "LabelMatrix", "label_codes", "label_list", "label_matrix", "segment_count"]


@dataclass(frozen=True)
class LabelList:
    """A ``list[label]`` column, flattened.

    Attributes
    ----------
    codes : numpy.ndarray
        The label of each element as its index in the vocabulary (int8).
    row : numpy.ndarray
        The row of each element (int64), non-decreasing.
    lengths : numpy.ndarray
        Elements per row (int64; 0 for a null row).
    null : numpy.ndarray
        True where the row's list is null (bool).
    """

    codes: np.ndarray
    row: np.ndarray
    lengths: np.ndarray
    null: np.ndarray

    def count(self, mask: np.ndarray) -> np.ndarray:
        """Per row, how many elements ``mask`` (one bool per element) marks (float64)."""
        return segment_count(self.row, mask, self.lengths.size)


@dataclass(frozen=True)
class LabelMatrix:
    """A ``list[list[label]]`` column (per row a claims x passages matrix), flattened.

    Attributes
    ----------
    codes : numpy.ndarray
        The label of each cell as its index in the vocabulary (int8).
    row, claim, passage : numpy.ndarray
        Each cell's row, global claim number (0 .. total claims - 1, in row order) and passage
        position within its row (int64).
    claims, passages : numpy.ndarray
        Claims (outer length) and passages (the common inner length; 0 without claims) per row.
    claim_row : numpy.ndarray
        The row of each claim (int64).
    null : numpy.ndarray
        True where the row's matrix is null.
    """

    codes: np.ndarray
    row: np.ndarray
    claim: np.ndarray
    passage: np.ndarray
    claims: np.ndarray
    passages: np.ndarray
    claim_row: np.ndarray
    null: np.ndarray

    def claim_any(self, mask: np.ndarray) -> np.ndarray:
        """Per claim, whether any of its cells is marked by ``mask`` (bool, one per claim)."""
        return segment_count(self.claim, mask, self.claim_row.size) > 0

    def passage_offsets(self) -> np.ndarray:
        """Where each row's passages start in a per-row-passage array (int64, one per row)."""
        return np.concatenate(([0], np.cumsum(self.passages)[:-1])).astype(np.int64)

    def passage_any(self, mask: np.ndarray) -> np.ndarray:
        """Per (row, passage), whether any claim's cell is marked: one bool per passage, rows in order."""
        key = self.passage_offsets()[self.row] + self.passage
        return segment_count(key, mask, int(self.passages.sum())) > 0


def segment_count(segment: np.ndarray, mask: np.ndarray, n: int) -> np.ndarray:
    """How many marked elements each segment 0 .. n-1 holds (float64).

    Examples
    --------
    >>> segment_count(np.array([0, 0, 2]), np.array([True, True, False]), 3).tolist()
    [2.0, 0.0, 0.0]
    """
    return np.bincount(segment, weights=mask.astype(np.float64), minlength=n)[:n]


def _check_dtype(series: pl.Series, column: str, expected: str, depth: int) -> None:
    dtype: pl.DataType = series.dtype
    for _ in range(depth):
        if dtype == pl.Null:
            return
        if not isinstance(dtype, pl.List):
            raise SchemaError("wrong dtype", column=column, expected=expected, found=str(dtype))
        dtype = dtype.inner
    if dtype not in (pl.String, pl.Null):
        raise SchemaError("wrong dtype", column=column, expected=expected, found=str(series.dtype))


def label_codes(values: pl.Series, rows: np.ndarray, labels: Sequence[str], column: str, what: str) -> np.ndarray:
    """Each value's index in ``labels`` (int8); a null or unknown label is a SchemaError naming its row.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> label_codes(pl.Series(["no", "yes"]), np.array([0, 3]), ("yes", "no"), "v", "label").tolist()
    [1, 0]
    """
    codes = values.cast(pl.String).replace_strict(
        list(labels), list(range(len(labels))), default=-1, return_dtype=pl.Int8
    )
    codes = codes.fill_null(-1).to_numpy(writable=True)
    codes[values.is_null().to_numpy()] = -2
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        first = int(bad[0])
        found = "null" if codes[first] == -2 else repr(values[first])
        raise SchemaError(
            f"unknown {what}", column=column, row=int(rows[first]), expected=" or ".join(labels),
            found=found,
        )  # fmt: skip
    return codes


def label_list(series: pl.Series, column: str, labels: Sequence[str], *, what: str = "label") -> LabelList:
    """Flatten a ``list[str]`` column whose elements are labels of ``labels``.

    Parameters
    ----------
    series : polars.Series
        One list per row; a null list is kept as a null row (``null``), an empty one has length 0.
    column, function : str
        Named in errors.
    labels : sequence of str
        The vocabulary; an element outside it (or null) is a :class:`SchemaError` naming the row.
    what : str
        What a label is, for errors (``"verdict"``).

    Returns
    -------
    LabelList

    Examples
    --------
    >>> import polars as pl
    >>> flat = label_list(pl.Series([["yes", "no"], None, []]), "v", ("yes", "no"))
    >>> flat.codes.tolist(), flat.row.tolist(), flat.lengths.tolist(), flat.null.tolist()
    ([0, 1], [0, 0], [2, 0, 0], [False, True, False])
    """
    _check_dtype(series, column, "list[str]", 1)
    null = series.is_null().to_numpy()
    lengths = (
        series.list.len().fill_null(0).to_numpy().astype(np.int64)
        if series.dtype != pl.Null
        else np.zeros(series.len(), np.int64)
    )
    row = np.repeat(np.arange(series.len(), dtype=np.int64), lengths)
    if not row.size:
        return LabelList(np.zeros(0, np.int8), row, lengths, null)
    values = series.filter(pl.Series(lengths > 0)).explode()
    return LabelList(label_codes(values, row, labels, column, what), row, lengths, null)


def label_matrix(series: pl.Series, column: str, labels: Sequence[str], *, what: str = "label") -> LabelMatrix:
    """Flatten a ``list[list[str]]`` column: per row, one inner list of labels per claim, all of one length.

    Parameters
    ----------
    series : polars.Series
        One matrix per row, indexed [claim][passage]; a null matrix is a null row, an empty one
        has no claims. A null inner list, or inner lists of different lengths in one row, is a
        :class:`SchemaError` naming the row.
    column, function : str
        Named in errors.
    labels : sequence of str
        The vocabulary of the cells.
    what : str
        What a label is, for errors.

    Returns
    -------
    LabelMatrix

    Examples
    --------
    >>> import polars as pl
    >>> m = label_matrix(pl.Series([[["a", "b"], ["b", "b"]], [], None]), "m", ("a", "b"))
    >>> m.claims.tolist(), m.passages.tolist(), m.passage.tolist(), m.claim.tolist()
    ([2, 0, 0], [2, 0, 0], [0, 1, 0, 1], [0, 0, 1, 1])
    >>> m.claim_any(m.codes == 0).tolist(), m.passage_any(m.codes == 0).tolist()
    ([True, False], [True, False])
    """
    _check_dtype(series, column, "list[list[str]] (indexed [claim][passage])", 2)
    n = series.len()
    empty = np.zeros(0, np.int64)
    null = series.is_null().to_numpy()
    if series.dtype == pl.Null:
        zeros = np.zeros(n, np.int64)
        return LabelMatrix(np.zeros(0, np.int8), empty, empty, empty, zeros, zeros, empty, null)
    claims = series.list.len().fill_null(0).to_numpy().astype(np.int64)
    claim_row = np.repeat(np.arange(n, dtype=np.int64), claims)
    inner = (
        series.filter(pl.Series(claims > 0)).explode() if claim_row.size else pl.Series([], dtype=series.dtype.inner)
    )
    if inner.null_count():
        first = int(np.flatnonzero(inner.is_null().to_numpy())[0])
        raise SchemaError(
            f"null {what} list of a claim", column=column, row=int(claim_row[first]),
            expected="one list per claim", found="null",
        )  # fmt: skip
    widths = inner.list.len().to_numpy().astype(np.int64) if claim_row.size else empty
    passages = np.zeros(n, np.int64)
    if claim_row.size:
        starts = np.concatenate(([0], np.cumsum(claims)[:-1]))[claims > 0]
        wide, narrow = np.maximum.reduceat(widths, starts), np.minimum.reduceat(widths, starts)
        ragged = np.flatnonzero(wide != narrow)
        if ragged.size:
            row = int(np.flatnonzero(claims > 0)[ragged[0]])
            raise SchemaError(
                f"ragged {what} matrix", column=column, row=row,
                expected="the same number of passages for every claim",
                found=f"{int(narrow[ragged[0]])} to {int(wide[ragged[0]])}",
            )  # fmt: skip
        passages[claims > 0] = wide
    claim = np.repeat(np.arange(claim_row.size, dtype=np.int64), widths)
    row = claim_row[claim]
    cell_start = np.concatenate(([0], np.cumsum(widths)[:-1])).astype(np.int64)
    passage = np.arange(claim.size, dtype=np.int64) - cell_start[claim] if claim.size else empty
    if not claim.size:
        return LabelMatrix(np.zeros(0, np.int8), row, claim, passage, claims, passages, claim_row, null)
    values = inner.filter(pl.Series(widths > 0)).explode()
    codes = label_codes(values, row, labels, column, what)
    return LabelMatrix(codes, row, claim, passage, claims, passages, claim_row, null)
