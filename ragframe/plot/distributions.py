"""Distribution of each score: a histogram or an ECDF per metric, its pass threshold marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.metrics import column_keys, metric_for_column
from ragframe.plot._matplotlib import WIDTH, new_figure
from ragframe.public import public
from ragframe.stats.summary import prepare_scores, score_bounds

__all__ = ["distributions", "threshold_of"]
_KINDS = ("hist", "ecdf")


@public
def distributions(
    scores: Any,
    metrics: str | Sequence[str] | None = None,
    *,
    kind: str = "hist",
    bins: int = 20,
    thresholds: Mapping[str, float | None] | None = None,
    sample: int | None = None,
    seed: int | None = 0,
    title: str | None = None,
) -> Any:
    """One histogram (or ECDF) per score column, with its pass threshold and its null count.

    Parameters
    ----------
    scores : frame
        A scored frame (polars DataFrame or LazyFrame, pyarrow Table or RecordBatch, pandas).
    metrics : str or list of str, optional
        Score columns to draw; default every ragframe score column (:func:`ragframe.score_columns`).
    kind : {"hist", "ecdf"}
        Histogram (``bins`` equal bins over the metric's bounds, [0, 1] for every
        ragframe score; over the values' range for an unbounded column) or empirical CDF.
    bins : int
        Number of histogram bins (>= 1).
    thresholds : dict, optional
        Threshold lines keyed by score column, unprefixed output name or metric name; a
        value of None draws no line. Default: the metric's registered threshold
        (:func:`ragframe.list_metrics`), none for metrics without one.
    sample : int, optional
        Draw at most this many rows (uniformly, without replacement, with ``seed``) for the
        picture; the suptitle says so. ``n`` and ``nulls`` in the titles always count every row.
    seed : int or None
        Seed of the sample (an int >= 0, or None for a fresh one).
    title : str, optional
        Figure title (suptitle).

    Returns
    -------
    matplotlib.figure.Figure
        One axes per metric, titled ``"<metric>\\nn=<non-null>, nulls=<null>"``; a dashed
        vertical line (gid ``"threshold"``) at the threshold.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> scored = pl.DataFrame({"faithfulness": [0.1, 0.5, 0.9, None], "mrr": [1.0, 0.5, 0.0, 1.0]})
    >>> fig = rf.plot.distributions(scored)
    >>> len(fig.axes), fig.axes[0].get_title()
    (2, 'faithfulness\\nn=3, nulls=1')
    >>> [line.get_xdata()[0] for line in fig.axes[0].lines if line.get_gid() == "threshold"]
    [0.4]
    """
    validate.choice(kind, "kind", _KINDS)
    bins = validate.positive_int(bins, "bins")
    sample = None if sample is None else validate.positive_int(sample, "sample")
    seed = validate.seed(seed, "seed")
    df, names, _ = prepare_scores(scores, metrics, None)
    cuts = _thresholds(thresholds, names)
    counts = df.select(pl.col(names).count()).row(0)
    if not any(counts):
        raise SchemaError(
            "every score is null: nothing to plot",
            column=names[0],
            expected=f"a non-null value in one of {names}",
            found=f"{df.height} rows, all null",
        )
    drawn = _sample(df, sample, seed)
    ncols = min(len(names), 3)
    nrows = -(-len(names) // ncols)
    width = WIDTH if ncols > 1 else 7.0
    fig, axes = new_figure(nrows, ncols, width=width, height=0.6 + 2.6 * nrows, n_axes=len(names))
    for ax, name, count in zip(axes, names, counts):
        values = drawn[name].drop_nulls().cast(pl.Float64).to_numpy()
        _draw(ax, values, name, kind, bins)
        ax.set_title(f"{name}\nn={count:,}, nulls={df.height - count:,}", fontsize=10)
        if cuts[name] is not None:
            ax.axvline(cuts[name], color="tab:red", linestyle="--", linewidth=1.2, gid="threshold")
            ax.legend([ax.lines[-1]], [f"threshold {cuts[name]:g}"], fontsize=8, loc="best")
    heading = [title] if title else []
    if drawn.height < df.height:
        drawn_text = f"sample of {drawn.height:,} of {df.height:,} rows drawn (seed {seed})"
        heading.append(f"{drawn_text}; n and nulls count all rows")
    if heading:
        fig.suptitle("\n".join(heading), fontsize=11)
    return fig


def _sample(df: pl.DataFrame, sample: int | None, seed: int | None) -> pl.DataFrame:
    if sample is None or df.height <= sample:
        return df
    rows = np.sort(np.random.default_rng(seed).choice(df.height, size=sample, replace=False))
    return df[rows]


def _draw(ax: Any, values: np.ndarray, name: str, kind: str, bins: int) -> None:
    bounds = score_bounds(name)
    if values.size == 0:
        ax.text(0.5, 0.5, "no values (all null)", ha="center", va="center", transform=ax.transAxes)
    elif kind == "hist":
        span = bounds if bounds is not None else (float(values.min()), float(values.max()))
        ax.hist(values, bins=bins, range=span if span[0] < span[1] else None, color="tab:blue", alpha=0.8)
        ax.set_ylabel("rows")
    else:
        ordered = np.sort(values)
        share = np.arange(1, ordered.size + 1) / ordered.size
        ax.step(np.r_[ordered[0], ordered], np.r_[0.0, share], where="post", color="tab:blue", gid="ecdf")
        ax.set_ylabel("share of rows <= x")
        ax.set_ylim(0, 1.02)
    if bounds is not None:
        ax.set_xlim(bounds[0] - 0.02 * (bounds[1] - bounds[0]), bounds[1] + 0.02 * (bounds[1] - bounds[0]))
    ax.set_xlabel("score")


def threshold_of(column: str, given: Mapping[str, float | None] | None = None) -> float | None:
    """The pass threshold of a score column: from ``given`` (by column, output or metric name), else the registry.

    Parameters
    ----------
    column : str
        A score column (``"v2_faithfulness"``).
    given : dict, optional
        Thresholds keyed by column, unprefixed output name or metric name; None means no threshold.

    Returns
    -------
    float or None

    Examples
    --------
    >>> threshold_of("v2_faithfulness"), threshold_of("mrr"), threshold_of("faithfulness", {"faithfulness": 0.7})
    (0.4, None, 0.7)
    """
    given = {} if given is None else given
    for key in column_keys(column):
        if key in given:
            return None if given[key] is None else float(given[key])
    metric = metric_for_column(column)
    return None if metric is None or metric.threshold is None else float(metric.threshold)


def _thresholds(given: Any, names: list[str]) -> dict[str, float | None]:
    if given is None:
        given = {}
    if not isinstance(given, Mapping):
        raise validate.fail("thresholds", "a dict {metric: threshold or None}", given)
    known = {key for name in names for key in column_keys(name)}
    for key, value in given.items():
        if key not in known:
            raise validate.fail("thresholds", f"keyed by the metrics drawn ({names})", key)
        if value is not None:
            validate.number(value, f"thresholds[{key!r}]")
    return {name: threshold_of(name, given) for name in names}
