"""Weak slices at a glance: a heatmap of one statistic per metric (rows) and slice (columns)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.plot._frames import read_frame, require_columns, require_rows
from ragframe.plot._matplotlib import new_figure
from ragframe.public import public
from ragframe.schema import column_names
from ragframe.stats.summary import STATS, is_summary, score_bounds, summarize

__all__ = ["slices"]
#: Statistics in the score's own units: the colour scale spans the metrics' bounds.
_IN_UNITS = ("mean", "min", "p50", "p90", "p95", "p99", "max", "pass_rate", "ci_low", "ci_high", "null_rate")
_STATS = tuple(s for s in STATS if s not in ("count", "null_count"))


@public
def slices(
    scores: Any, by: str | Sequence[str], metrics: str | Sequence[str] | None = None, *, stat: str = "mean"
) -> Any:
    """Heatmap of a statistic of each metric (rows) in each slice (columns), values written in the cells.

    Parameters
    ----------
    scores : frame
        A scored frame (summarised here with :func:`ragframe.summarize` ``(..., by=by)``), or
        a frame :func:`ragframe.summarize` ``(..., by=...)`` returned (it holds ``metric``
        and ``mean``; it must hold the ``by`` columns, ``count`` and ``stat``). Any frame kind.
    by : str or list of str
        The slice column(s); several make one slice per combination (``"a / b"``).
    metrics : str or list of str, optional
        Score columns (rows of the heatmap, in this order); default every score column.
    stat : str
        The statistic drawn: one of ``summarize``'s (``"mean"``, ``"p50"``, ``"pass_rate"``,
        ``"std"``, ...); default ``"mean"``.

    Returns
    -------
    matplotlib.figure.Figure
        One heatmap axes (plus its colour bar); each slice label carries its row count
        (``n=``: rows of the slice, null scores included). Null cells are blank, marked "-".

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> scored = pl.DataFrame({"mrr": [1.0, 0.5, 0.0, 0.25], "split": ["a", "a", "b", "b"]})
    >>> fig = rf.plot.slices(scored, by="split")
    >>> fig.axes[0].images[0].get_array().tolist()
    [[0.75, 0.125]]
    >>> [label.get_text() for label in fig.axes[0].get_xticklabels()]
    ['a\\nn=2', 'b\\nn=2']
    """
    group_by = validate.column_list(by, "by")
    validate.choice(stat, "stat", _STATS)
    summary = _summary(scores, group_by, metrics, stat)
    names = summary["metric"].unique(maintain_order=True).to_list()
    label = pl.concat_str([pl.col(c).cast(pl.String).fill_null("null") for c in group_by], separator=" / ")
    summary = summary.with_columns(label.alias("_slice"))
    slices_ = summary["_slice"].unique(maintain_order=True).to_list()
    rows = summary.group_by("_slice", maintain_order=True).agg(pl.col("_rows").max())
    grid = (
        summary.pivot(on="_slice", index="metric", values=stat, aggregate_function=None)
        .join(pl.DataFrame({"metric": names}), on="metric", how="right")
        .select(slices_)
    )
    matrix = grid.cast(pl.Float64).to_numpy()
    if np.isnan(matrix).all():
        raise SchemaError(f"every {stat} is null: nothing to plot", column=stat)
    width = float(np.clip(3.0 + 0.9 * len(slices_), 6.0, 12.0))
    height = float(np.clip(1.8 + 0.45 * len(names), 3.0, 12.0))
    fig, (ax,) = new_figure(width=width, height=height)
    low, high = _scale(matrix, names, stat)
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap="viridis", vmin=low, vmax=high, aspect="auto")
    fig.colorbar(image, ax=ax, label=stat)
    counts = dict(rows.iter_rows())
    ax.set_xticks(range(len(slices_)), [f"{s}\nn={counts[s]:,}" for s in slices_], fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=9)
    ax.set_xlabel(" / ".join(group_by))
    ax.set_title(f"{stat} by {' / '.join(group_by)}", fontsize=11)
    _annotate(ax, matrix, low, high)
    return fig


def _summary(scores: Any, by: list[str], metrics: Any, stat: str) -> pl.DataFrame:
    """The summary frame: ``by, metric, stat`` and ``_rows`` (rows of the slice), from either input."""
    if not is_summary(column_names(scores)):
        summary = summarize(scores, metrics=metrics, by=by, stats=["count", "null_count", stat])
    else:
        summary = read_frame(scores)
        require_columns(summary.columns, [*by, "metric", "count", stat], "a summary")
        if metrics is not None:
            wanted = validate.column_list(metrics, "metrics")
            missing = [m for m in wanted if m not in set(summary["metric"].to_list())]
            if missing:
                raise SchemaError("metric not in the summary", column="metric", found=repr(missing[0]))
            summary = summary.filter(pl.col("metric").is_in(wanted)).sort(
                pl.col("metric").replace_strict(wanted, list(range(len(wanted)))), maintain_order=True
            )
    require_rows(summary, "summary")
    rows = pl.col("count") + (pl.col("null_count") if "null_count" in summary.columns else 0)
    return summary.select(*by, "metric", stat, rows.alias("_rows"))


def _scale(matrix: np.ndarray, names: list[str], stat: str) -> tuple[float, float]:
    bounds = [score_bounds(name) for name in names]
    if stat in _IN_UNITS and all(b == (0.0, 1.0) for b in bounds):
        return 0.0, 1.0
    low, high = float(np.nanmin(matrix)), float(np.nanmax(matrix))
    return (low, high) if low < high else (low - 0.5, high + 0.5)


def _annotate(ax: Any, matrix: np.ndarray, low: float, high: float) -> None:
    """The value in each cell (per cell, not per row of data): dark text on light cells."""
    size = 8 if matrix.size <= 200 else 6
    shade = (matrix - low) / (high - low)
    for (i, j), value in np.ndenumerate(matrix):
        text = "-" if np.isnan(value) else f"{value:.3g}"
        color = "black" if np.isnan(value) or shade[i, j] > 0.6 else "white"
        ax.text(j, i, text, ha="center", va="center", color=color, fontsize=size)
