"""Forest plot of a paired comparison: each metric's mean difference with its interval."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ragframe.exceptions import SchemaError
from ragframe.plot._frames import read_frame, require_columns, require_rows
from ragframe.plot._matplotlib import WIDTH, new_figure
from ragframe.public import public
from ragframe.stats.compare import COMPARE_COLUMNS

__all__ = ["compare"]
_NEEDED = ["metric", "n", "delta", "ci_low", "ci_high", "significant"]


@public
def compare(comparison: Any, *, title: str | None = None) -> Any:
    """Forest plot of :func:`ragframe.compare` / :func:`ragframe.compare_runs`: delta and interval per metric.

    Parameters
    ----------
    comparison : frame
        The frame ``rf.compare`` or ``rf.compare_runs`` returned (any frame kind): columns
        ``metric, n, delta, ci_low, ci_high, significant`` (others are optional; columns
        before ``metric`` are ``by=`` slices).
    title : str, optional
        Axes title; default names the test and says which side is which.

    Returns
    -------
    matplotlib.figure.Figure
        One axes, one row per metric (x slice), top to bottom in the frame's order:
        a point at ``delta`` (``mean_b - mean_a``; right of zero means b scores higher)
        and a bar from ``ci_low`` to ``ci_high``. Significant rows are filled red points
        (gid ``"delta-significant"``) with a ``*`` before their label; the others hollow
        grey points (gid ``"delta"``); the bars are the LineCollection gid ``"ci"``; a
        dashed line marks zero (gid ``"zero"``). The legend (``fig.legends[0]``) is below
        the axes, so that it covers no bar.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> a = pl.DataFrame({"id": [1, 2, 3, 4], "mrr": [0.2, 0.5, 0.4, 0.1], "ndcg": [0.5, 0.5, 0.4, 0.3]})
    >>> b = pl.DataFrame({"id": [1, 2, 3, 4], "mrr": [0.6, 0.9, 0.7, 0.6], "ndcg": [0.4, 0.6, 0.4, 0.3]})
    >>> fig = rf.plot.compare(rf.compare(a, b))
    >>> [label.get_text() for label in fig.axes[0].get_yticklabels()]
    ['* mrr (n=4)', 'ndcg (n=4)']
    """
    df = read_frame(comparison)
    require_columns(df.columns, _NEEDED, "a comparison (rf.compare's frame)")
    require_rows(df, "comparison")
    if df["delta"].null_count() == df.height:
        raise SchemaError("every delta is null (no pairs): nothing to plot", column="delta")
    by = df.columns[: df.columns.index("metric")]
    extra = [c for c in by if c in COMPARE_COLUMNS]
    if extra:
        raise SchemaError("a slice column has the name of a comparison column", column=extra[0])
    labels = _labels(df, by)
    y = np.arange(df.height, dtype=float)
    delta, low, high = (df[c].cast(pl.Float64).to_numpy() for c in ("delta", "ci_low", "ci_high"))
    significant = df["significant"].fill_null(False).to_numpy().astype(bool)
    fig, (ax,) = new_figure(width=WIDTH, height=float(np.clip(1.4 + 0.3 * df.height, 2.5, 40.0)))
    has_ci = ~(np.isnan(low) | np.isnan(high))
    ax.hlines(y[has_ci], low[has_ci], high[has_ci], color="0.35", linewidth=1.6, gid="ci")
    ax.plot(delta[~significant], y[~significant], "o", mfc="white", mec="0.35", ls="none", gid="delta")
    ax.plot(delta[significant], y[significant], "o", color="tab:red", ls="none", gid="delta-significant")
    ax.axvline(0.0, color="black", linestyle="--", linewidth=0.9, gid="zero")
    ax.set_yticks(y, labels, fontsize=9 if df.height <= 40 else 7)
    ax.set_ylim(df.height - 0.5, -0.5)  # first row on top
    ax.set_xlabel("delta = mean_b - mean_a (bar: confidence interval)")
    handles, texts = _legend(ax, significant)
    fig.legend(handles, texts, fontsize=8, loc="outside lower center", ncols=len(texts))  # below: hides no bar
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or _title(df), fontsize=11)
    return fig


def _labels(df: pl.DataFrame, by: list[str]) -> list[str]:
    mark = pl.when(pl.col("significant").fill_null(False)).then(pl.lit("* ")).otherwise(pl.lit(""))
    parts = [mark, pl.col("metric")]
    if by:
        keys = [pl.col(c).cast(pl.String).fill_null("null") for c in by]
        parts += [pl.lit(" | "), pl.concat_str(keys, separator=" / ")]
    parts += [pl.lit(" (n="), pl.col("n").cast(pl.String).fill_null("?"), pl.lit(")")]
    return df.select(pl.concat_str(parts)).to_series().to_list()


def _legend(ax: Any, significant: np.ndarray) -> tuple[list[Any], list[str]]:
    lines = {line.get_gid(): line for line in ax.lines}
    shown = [("delta-significant", "significant (* : corrected p < alpha)"), ("delta", "not significant")]
    pairs = [(lines[gid], text) for gid, text in shown if len(lines[gid].get_xdata())]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _title(df: pl.DataFrame) -> str:
    test = df["test"][0] if "test" in df.columns and df.height else None
    return "b vs a: paired difference of the means" + (f" ({test} test)" if test else "")
