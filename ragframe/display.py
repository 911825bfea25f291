"""How a table cell is shown to people: one rule for the command line's tables and the HTML report.

:func:`cell_text` is the shown text of one value (floats with 4 decimals, a p-value too
small for them with 4 significant digits, nulls ``-``, booleans ``yes``/``no``);
:func:`aligned` lays shown cells out as a text table (numbers right-aligned). Exact values
are not this module's business: the command line's CSV and JSON keep every digit, and the
report carries each number exactly beside its text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["MISSING", "aligned", "cell_text", "is_p_value"]

#: The text of a null.
MISSING = "-"


def is_p_value(column: str) -> bool:
    """True for a p-value column: ``p_...`` (``p_value``, ``p_adjusted``) or ``..._p`` (``spearman_p``).

    Examples
    --------
    >>> is_p_value("p_adjusted"), is_p_value("kendall_p"), is_p_value("p50"), is_p_value("mean")
    (True, True, False, False)
    """
    return column.startswith("p_") or column.endswith("_p")


def cell_text(value: Any, column: str = "", decimals: int = 4) -> str:
    """The shown text of one cell of column ``column``.

    Parameters
    ----------
    value : Any
        The cell's value (a Python scalar, as ``polars`` gives it).
    column : str, default ""
        The column's name: a p-value column (:func:`is_p_value`) shows a positive value
        that would round to zero with ``decimals`` significant digits instead.
    decimals : int, default 4
        Decimals of floats.

    Returns
    -------
    str
        ``-`` for None, ``NaN`` / ``inf`` / ``-inf`` as such, ``yes`` / ``no`` for booleans,
        floats with ``decimals`` decimals, the ``str`` of anything else (a list's values
        joined by ``, ``, its nulls left out).

    Examples
    --------
    >>> cell_text(0.123456), cell_text(3), cell_text(None), cell_text(True), cell_text(float("nan"))
    ('0.1235', '3', '-', 'yes', 'NaN')
    >>> cell_text(1.5e-07, "p_value"), cell_text(1.5e-07, "mean"), cell_text(0.0123456, "p_value")
    ('1.5e-07', '0.0000', '0.0123')
    >>> cell_text(["a", None, "b"])
    'a, b'
    """
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if 0.0 < abs(value) < 0.5 * 10.0**-decimals and is_p_value(column):
            return f"{value:.{decimals}g}"
        return f"{value:.{decimals}f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value if v is not None)
    return str(value)


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    """Shown cells as a text table: a header, a rule of dashes, the rows; two spaces between columns.

    Parameters
    ----------
    header : sequence of str
        The column names.
    rows : sequence of sequences of str
        The cells' texts (:func:`cell_text`), one sequence per row.
    right : sequence of bool
        Per column, whether it is right-aligned (numbers) or left-aligned.

    Returns
    -------
    str
        The lines, without trailing spaces or a trailing newline.

    Examples
    --------
    >>> print(aligned(["metric", "mean"], [["mrr", "0.5000"], ["ndcg_at_10", "1.0000"]], [False, True]))
    metric        mean
    ----------  ------
    mrr         0.5000
    ndcg_at_10  1.0000
    """
    # column widths over a summary table's few rows: display, not a hot path
    widths = [max([len(name), *(len(row[i]) for row in rows)]) for i, name in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(row) for row in rows)])
