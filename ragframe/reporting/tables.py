"""Frames as plain data for the template: column names and rows of cells (shown text, exact value).

A cell's ``text`` is what the page shows (:func:`ragframe.display.cell_text`, as the
command line's tables show it: 4 decimals, a p-value too small for them with 4
significant digits); its ``value`` is the exact number (``repr`` of the float), which
the template puts in a ``data-value`` attribute so that a reader (or a test) can recover
it. Lists (signals) stay lists. No HTML is made here: the template escapes everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from ragframe.display import cell_text

__all__ = ["cell", "table"]


def cell(value: Any, column: str = "") -> dict[str, Any]:
    """One table cell: ``{"text": shown, "value": exact or None, "entries": list or None}``.

    The text is :func:`ragframe.display.cell_text`'s (as the command line's tables show it).

    Examples
    --------
    >>> cell(0.123456)["text"], cell(0.123456)["value"]
    ('0.1235', '0.123456')
    >>> cell(1.5e-07, "p_value")["text"], cell(None)["text"], cell(True)["text"], cell(12)["text"]
    ('1.5e-07', '-', 'yes', '12')
    >>> cell(["info: short"])["entries"]
    ['info: short']
    """
    if isinstance(value, (list, tuple)):
        return {"text": "", "value": None, "entries": [str(v) for v in value if v is not None]}
    return {"text": cell_text(value, column), "value": _exact(value), "entries": None}


def _exact(value: Any) -> str | None:
    """A number's exact text (``repr`` of a float), for the ``data-value`` attribute; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return repr(value)
    return str(value) if isinstance(value, int) else None


def table(frame: pl.DataFrame, columns: Sequence[str] | None = None) -> dict[str, Any]:
    """``frame`` (its ``columns`` that exist, in that order) as ``{"columns": [...], "rows": [[cell, ...], ...]}``.

    For summary-sized frames (a row per metric, slice or shown row): not a hot path.

    Examples
    --------
    >>> import polars as pl
    >>> out = table(pl.DataFrame({"metric": ["mrr"], "mean": [0.5], "n": [3]}), ["metric", "mean", "absent"])
    >>> out["columns"], [c["text"] for c in out["rows"][0]]
    (['metric', 'mean'], ['mrr', '0.5000'])
    """
    names = list(frame.columns) if columns is None else [c for c in columns if c in frame.columns]
    # template data for display tables (summaries, comparisons, the worst rows; slices capped at 50 values):
    # a few hundred cells, never a scored frame's rows
    rows = [[cell(value, name) for name, value in zip(names, row)] for row in frame.select(names).iter_rows()]
    return {"columns": names, "rows": rows}
