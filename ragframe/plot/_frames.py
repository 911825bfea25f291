"""Reading the frames the plots take: any frame kind in, one polars DataFrame out, columns checked."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import polars as pl

from ragframe.exceptions import SchemaError
from ragframe.schema import to_polars

__all__ = ["read_frame", "require_columns", "require_rows"]


def read_frame(frame: Any, columns: Iterable[str] | None = None) -> pl.DataFrame:
    """``frame`` (polars DataFrame/LazyFrame, pyarrow Table/RecordBatch, pandas) as a polars DataFrame.

    Only ``columns`` are converted (or collected, for a LazyFrame) when given; a missing one
    is a :class:`SchemaError` naming it.

    Examples
    --------
    >>> import pyarrow as pa
    >>> read_frame(pa.table({"a": [1], "b": [2]}), ["b"]).columns
    ['b']
    """
    return to_polars(frame, None if columns is None else list(columns))


def require_columns(available: Iterable[str], needed: Iterable[str], what: str = "") -> None:
    """A :class:`SchemaError` naming the first of ``needed`` not in ``available``.

    Examples
    --------
    >>> try:
    ...     require_columns(["metric"], ["metric", "ci_low"], "a comparison")
    ... except SchemaError as error:
    ...     print(error.column, error.available)
    ci_low ['metric']
    """
    names = list(available)
    for name in needed:
        if name not in names:
            message = f"missing column of {what}" if what else "missing column"
            raise SchemaError(message, column=name, available=names)


def require_rows(df: pl.DataFrame, what: str) -> None:
    """A :class:`SchemaError` when ``df`` has no row: a plot of nothing is refused, never drawn empty.

    Examples
    --------
    >>> require_rows(pl.DataFrame({"metric": []}), "comparison")
    Traceback (most recent call last):
    ...
    ragframe.exceptions.SchemaError: the comparison frame has no rows: nothing to plot
    """
    if df.height == 0:
        raise SchemaError(f"the {what} frame has no rows: nothing to plot")
