"""Text renderings of small result frames (summaries, comparisons) for the command line.

:func:`format_frame` renders a polars DataFrame as an aligned text table, CSV, JSON
(a list of records) or a Markdown pipe table. The table and Markdown forms are for
people, their cells shown as the HTML report shows them (:func:`ragframe.display.cell_text`:
floats with 4 decimals, a p-value too small for them with 4 significant digits, nulls
``-``). CSV and JSON keep every digit, so they can be read back and compared with the
library's results.
"""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl

from ragframe.display import aligned, cell_text
from ragframe.exceptions import InvalidParameterError

__all__ = ["FORMATS", "format_frame"]

#: The formats :func:`format_frame` knows.
FORMATS = ("table", "csv", "json", "markdown")


def _cells(df: pl.DataFrame, decimals: int) -> tuple[list[str], list[list[str]], list[bool]]:
    header = list(df.columns)
    # formatting cells of a summary table (one row per metric x group): display, not a hot path
    rows = [[cell_text(v, c, decimals) for c, v in zip(header, row)] for row in df.iter_rows()]
    right = [df.schema[c].is_numeric() and df.schema[c] != pl.Boolean for c in header]
    return header, rows, right


def _table(df: pl.DataFrame, decimals: int) -> str:
    return aligned(*_cells(df, decimals))


def _markdown(df: pl.DataFrame, decimals: int) -> str:
    header, rows, right = _cells(df, decimals)

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    rule = "|" + "|".join("---:" if r else "---" for r in right) + "|"
    # one Markdown line per summary row: reporting, not a hot path
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _json(df: pl.DataFrame) -> str:
    # a summary table's rows as JSON records: reporting, not a hot path
    records = [{k: _finite(v) for k, v in row.items()} for row in df.iter_rows(named=True)]
    return json.dumps(records, indent=2, default=str)


def format_frame(df: pl.DataFrame, fmt: str = "table", decimals: int = 4) -> str:
    """Render ``df`` as text, without a trailing newline.

    Parameters
    ----------
    df : polars.DataFrame
        A small result frame (one row per metric or slice).
    fmt : {"table", "csv", "json", "markdown"}
        ``table``: aligned columns (numbers right-aligned), a rule under the header, cells as
        :func:`ragframe.display.cell_text` shows them (a p-value that would round to zero
        with 4 significant digits, ``1.5e-07``);
        ``csv``: polars' CSV with full precision, empty cells for nulls; ``json``: a list of
        records, full precision, nulls (and NaN) as ``null``; ``markdown``: a pipe table.
    decimals : int
        Decimals of floats in the table and Markdown forms.

    Returns
    -------
    str

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"metric": ["mrr"], "mean": [0.123456]})
    >>> print(format_frame(df))
    metric    mean
    ------  ------
    mrr     0.1235
    >>> print(format_frame(df, "markdown"))
    | metric | mean |
    |---|---:|
    | mrr | 0.1235 |
    >>> format_frame(df, "json")
    '[\\n  {\\n    "metric": "mrr",\\n    "mean": 0.123456\\n  }\\n]'
    """
    if fmt == "table":
        return _table(df, decimals)
    if fmt == "csv":
        return df.write_csv().rstrip("\n")
    if fmt == "json":
        return _json(df)
    if fmt == "markdown":
        return _markdown(df, decimals)
    raise InvalidParameterError(f"format_frame: fmt={fmt!r}; use one of {list(FORMATS)}")
