"""The report's pictures: :mod:`ragframe.plot` figures as PNG data URIs.

Pictures of rows (distributions, calibration) are drawn from the sample; pictures of
aggregates (slices, comparison, ranking curves) from the statistics of every row.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import polars as pl

from ragframe.exceptions import SchemaError
from ragframe.reporting.content import SAMPLE_SEED, Plan, ranking_groups
from ragframe.reporting.images import png_data_uri

__all__ = ["calibration_figures", "comparison_figure", "distribution_figure", "ranking_figures", "slice_figures"]


def _image(draw: Callable[[], Any], title: str, caption: str) -> dict[str, str | None]:
    """A picture for the template: ``uri`` the PNG, or None and ``missing`` the reason the plot gave.

    A plot refuses data it cannot draw (a label with one class, a score without values)
    with a :class:`SchemaError`; the page then shows that reason in the picture's place,
    and the tables are still there.

    Examples
    --------
    >>> def refuse():
    ...     raise SchemaError("label has a single class", function="calibration")
    >>> _image(refuse, "ROC", "caption")["missing"]
    'calibration: label has a single class'
    """
    try:
        figure = draw()
    except SchemaError as exc:
        return {"title": title, "caption": caption, "uri": None, "missing": str(exc)}
    return {"title": title, "caption": caption, "uri": png_data_uri(figure), "missing": None}


def distribution_figure(frame: pl.DataFrame, plan: Plan, sample_rows: int, note: str) -> dict[str, str | None]:
    """``rf.plot.distributions`` of every row, the bars drawn from at most ``sample_rows`` of them.

    The panels' ``n`` and ``nulls`` count every row; the figure's title says when the bars
    are a sample.
    """
    from ragframe import plot

    draw = partial(plot.distributions, frame, metrics=plan.metrics, sample=sample_rows, seed=SAMPLE_SEED)
    return _image(draw, "Distributions", f"Histogram of each score, its pass threshold marked when it has one. {note}")


def slice_figures(summaries: dict[str, pl.DataFrame], plan: Plan) -> dict[str, dict[str, str | None]]:
    """``rf.plot.slices`` of each per-slice summary (every row): the mean of each metric per slice value."""
    from ragframe import plot

    return {
        column: _image(
            partial(plot.slices, summary, column, metrics=plan.metrics),
            f"Mean by {column}",
            f"Mean of each metric per value of {column} (every row; counts in the labels).",
        )
        for column, summary in summaries.items()
    }


def comparison_figure(comparison: pl.DataFrame, a: str, b: str) -> dict[str, str | None]:
    """``rf.plot.compare`` of the comparison table: each metric's mean difference (b minus a) with its interval."""
    from ragframe import plot

    return _image(
        partial(plot.compare, comparison),
        f"Mean difference, b ({b}) minus a ({a})",
        "Each metric's mean paired difference with its interval; significant ones marked (every row).",
    )


def calibration_figures(sample: pl.DataFrame, plan: Plan, note: str) -> list[dict[str, str | None]]:
    """``rf.plot.calibration`` of the sampled scores against the labels: one figure per label column given as a list."""
    from ragframe import plot

    caption = f"ROC curve of each score against the human label, AUROC in the legend. {note}"
    if isinstance(plan.labels, dict):
        return [_image(partial(plot.calibration, sample, plan.labels), "Scores against labels", caption)]
    return [
        _image(
            partial(plot.calibration, sample, label, metrics=plan.metrics),
            f"Scores against {label}",
            caption,
        )
        for label in plan.label_columns
    ]


def ranking_figures(
    frame: pl.DataFrame, plan: Plan, other: pl.LazyFrame | None = None, names: tuple[str, str] = ("a", "b")
) -> list[dict[str, str | None]]:
    """``rf.plot.ranking_curve`` of each cutoff measure with several cutoffs: its mean (every row) over k.

    With ``other`` (the compared scores, read lazily) holding the same columns, its curve is drawn
    beside; ``names`` are the two sides' names, in the legend as ``a: <name>`` and ``b: <name>``.
    """
    from ragframe import plot

    groups = ranking_groups(plan.metrics)
    images = []
    for measure in dict.fromkeys(name for _, name in groups):
        columns = [c for (_, name), group in groups.items() if name == measure for c in group]
        means = frame.select(columns).mean()  # one row: the curve of every prefix, over every row
        runs: pl.DataFrame | dict[str, pl.DataFrame] = means
        caption = f"Mean {measure}@k over the cutoffs k (every row); one line per column prefix."
        if other is not None and set(columns) <= set(other.collect_schema().names()):
            runs = {f"a: {names[0]}": means, f"b: {names[1]}": other.select(columns).mean().collect()}
            caption = f"Mean {measure}@k over the cutoffs k (every row of each side); a: {names[0]}, b: {names[1]}."
        draw = partial(plot.ranking_curve, runs, metric=measure)
        images.append(_image(draw, f"{measure} over k", caption))
    return images
