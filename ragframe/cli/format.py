"""Text renderings of small result frames (summaries, comparisons) for the command line.

:func:`format_frame` renders a polars DataFrame as an aligned text table, CSV, JSON
(a list of records) or a Markdown pipe table. The table and Markdown forms are for
people: floats with 4 decimals, nulls as ``-``. CSV and JSON keep every digit, so they
can be read back and compared with the library's results; the table and Markdown
forms show a positive p-value (a ``p_...`` column) that would round to zero as ``<0.0001``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl

from ragframe.exceptions import InvalidParameterError

__all__ = ["FORMATS", "format_frame", "format_value"]

#: The formats :func:`format_frame` knows.
FORMATS = ("table", "csv", "json", "markdown")


def format_value(value: Any, decimals: int = 4) -> str:
    """A cell for people: floats with ``decimals`` decimals, booleans lower case, nulls ``-``.

    Examples
    --------
    >>> format_value(0.123456), format_value(3), format_value(None), format_value(True)
    ('0.1235', '3', '-', 'true')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.{decimals}f}"
    return str(value)


def _numeric(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() and dtype != pl.Boolean


def _cells(df: pl.DataFrame, decimals: int) -> tuple[list[str], list[list[str]], list[bool]]:
    header = list(df.columns)
    tiny = 0.5 * 10.0**-decimals
    small = f"<{10.0**-decimals:.{decimals}f}"
    p_columns = {i for i, c in enumerate(header) if c.startswith("p_") and df.schema[c].is_float()}
    # formatting cells of a summary table (one row per metric x group): reporting, not a hot path
    rows = [
        [
            small if i in p_columns and v is not None and 0.0 < v < tiny else format_value(v, decimals)
            for i, v in enumerate(row)
        ]
        for row in df.iter_rows()
    ]
    right = [_numeric(df.schema[c]) for c in header]
    return header, rows, right


def _table(df: pl.DataFrame, decimals: int) -> str:
    header, rows, right = _cells(df, decimals)
    # column widths over a summary table's few rows: reporting, not a hot path
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    out = [line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


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
        ``table``: aligned columns (numbers right-aligned), a rule under the header, p-values
        (columns ``p_...``) that would round to zero shown as ``<0.0001``;
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
