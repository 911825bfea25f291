"""Does a score separate what people judged good from bad? ROC curves against 0/1 labels, with AUROC."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.metrics import metric_for_column, score_columns
from ragframe.plot._frames import read_frame, require_rows
from ragframe.plot._matplotlib import new_figure
from ragframe.schema import frame_schema
from ragframe.stats.summary import prepare_scores
from ragframe.stats.validity import agreement_with_labels

__all__ = ["calibration", "roc_points"]

_FUNCTION = "calibration"


def calibration(
    scores: Any,
    labels: str | Mapping[str, str],
    *,
    metrics: str | Sequence[str] | None = None,
    title: str | None = None,
) -> Any:
    """ROC curve of each score against a 0/1 human label, its AUROC in the legend.

    Parameters
    ----------
    scores : frame
        A scored frame holding the score and label columns (any frame kind).
    labels : str or dict of str to str
        One label column for every metric, or ``{metric: label_column}``. A label is 0/1
        (or Boolean; positive = 1) and must hold both classes among the rows where the
        score is non-null.
    metrics : str or list of str, optional
        Score columns, with a single label column only; default every ragframe score
        column (label columns excluded). With a dict, its keys are the metrics.
    title : str, optional
        Axes title.

    Returns
    -------
    matplotlib.figure.Figure
        One axes: a line per (metric, label) (gid ``"roc:<metric>"``) through the points of
        ``sklearn.metrics.roc_curve`` (false positive rate, true positive rate, collinear
        points dropped as scikit-learn does), legend ``"<metric>: AUROC 0.852 (n=200, 172
        positive)"`` with the AUROC of :func:`ragframe.agreement_with_labels` (equal to
        ``sklearn.metrics.roc_auc_score``), and the chance diagonal (gid ``"chance"``).
        Rows missing the score or the label are left out (``n`` counts the rest).
        A metric registered lower-is-better is negated first, so the curve is always
        that of "a higher score predicts positive" in the metric's direction.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({"faithfulness": [0.9, 0.8, 0.3, 0.6, 0.2, 0.7], "human": [1, 1, 0, 1, 0, 0]})
    >>> fig = rf.plot.calibration(df, "human")
    >>> fig.legends[0].get_texts()[0].get_text()
    'faithfulness: AUROC 0.889 (n=6, 3 positive)'
    """
    pairs = _pairs(scores, labels, metrics)
    names = list(dict.fromkeys(m for m, _ in pairs))
    label_names = list(dict.fromkeys(lbl for _, lbl in pairs))
    df = read_frame(scores, _FUNCTION, list(dict.fromkeys([*names, *label_names])))
    require_rows(df, _FUNCTION, "scores")
    df, _, _ = prepare_scores(df, names, None, _FUNCTION)
    for metric, label in pairs:
        _check_label(df, metric, label)
    agreement = agreement_with_labels(df, label_columns={m: lbl for m, lbl in pairs}, n_resamples=1)
    fig, (ax,) = new_figure(_FUNCTION, width=7.5, height=6.5 + 0.2 * len(pairs))
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1, gid="chance", label="chance (AUROC 0.5)")
    for row in agreement.iter_rows(named=True):
        score, truth = _oriented(df, row["metric"], row["label"])
        fpr, tpr = roc_points(score, truth)
        text = f"{row['metric']}" + ("" if len(label_names) == 1 else f" vs {row['label']}")
        text += f": AUROC {row['auroc']:.3f} (n={row['n']:,}, {row['positives']:,} positive)"
        ax.plot(fpr, tpr, linewidth=1.6, label=text, gid=f"roc:{row['metric']}")
    handles, texts = ax.get_legend_handles_labels()
    fig.legend(handles[1:] + handles[:1], texts[1:] + texts[:1], fontsize=8, loc="outside lower center")
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    ax.set_aspect("equal")
    ax.set_xlabel("false positive rate (label 0 scored at or above the cut)")
    ax.set_ylabel("true positive rate (label 1 at or above the cut)")
    ax.grid(alpha=0.3)
    ax.set_title(title or _title(label_names), fontsize=11)
    return fig


def _title(label_names: list[str]) -> str:
    return f"ROC against {label_names[0]}" if len(label_names) == 1 else "ROC of each score against its label"


def roc_points(score: np.ndarray, positive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False and true positive rates at each cut, as ``sklearn.metrics.roc_curve`` gives them.

    Cuts at each distinct score (descending, plus one above them all: the point (0, 0)),
    keeping only the points where the curve bends (``drop_intermediate=True``).

    Parameters
    ----------
    score : numpy.ndarray
        Scores, higher meaning more likely positive; no NaN. A constant score gives the chance
        diagonal, (0, 0) to (1, 1).
    positive : numpy.ndarray of bool
        The label of each score; both classes present.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        False positive rates and true positive rates, from (0, 0) to (1, 1).

    Examples
    --------
    >>> import numpy as np
    >>> fpr, tpr = roc_points(np.array([0.1, 0.4, 0.35, 0.8]), np.array([False, False, True, True]))
    >>> fpr.tolist(), tpr.tolist()
    ([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0])
    >>> [points.tolist() for points in roc_points(np.zeros(4), np.array([False, True, True, False]))]  # constant
    [[0.0, 1.0], [0.0, 1.0]]
    """
    order = np.argsort(score, kind="mergesort")[::-1]
    score, positive = score[order], positive[order]
    last = np.r_[np.flatnonzero(np.diff(score)), score.size - 1]  # the last row of each tie group
    tps = np.cumsum(positive)[last]
    fps = 1 + last - tps
    if tps.size > 2:  # as scikit-learn: one or two cuts (a constant score: one) have no point to drop
        bends = np.flatnonzero(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])
        tps, fps = tps[bends], fps[bends]
    tps, fps = np.r_[0, tps], np.r_[0, fps]
    return fps / fps[-1], tps / tps[-1]


def _pairs(scores: Any, labels: Any, metrics: Any) -> list[tuple[str, str]]:
    if isinstance(labels, Mapping):
        if metrics is not None:
            raise validate.fail(_FUNCTION, "metrics", "None when labels is a dict (its keys are the metrics)", metrics)
        if not labels:
            raise validate.fail(_FUNCTION, "labels", "a label column or a non-empty dict {metric: label}", labels)
        return [
            (validate.column_name(m, "labels key", _FUNCTION), validate.column_name(lbl, f"labels[{m!r}]", _FUNCTION))
            for m, lbl in labels.items()
        ]
    label = validate.column_name(labels, "labels", _FUNCTION)
    if metrics is not None:
        return [(m, label) for m in validate.column_list(metrics, "metrics", _FUNCTION)]
    schema = frame_schema(scores, _FUNCTION)
    found = [c for c in score_columns(schema) if c != label]
    if not found:
        raise SchemaError(
            "no ragframe score columns found; pass metrics=[...] to name them", function=_FUNCTION, available=schema
        )
    return [(m, label) for m in found]


def _check_label(df: pl.DataFrame, metric: str, label: str) -> None:
    """The label is 0/1 or Boolean, finite, and has both classes where ``metric`` is non-null."""
    dtype = df.schema[label]
    if not (dtype.is_numeric() or dtype == pl.Boolean):
        raise SchemaError(
            "label column is not 0/1", function=_FUNCTION, column=label, expected="0/1 or Boolean", found=str(dtype)
        )
    values = df.filter(pl.col(metric).is_not_null() & pl.col(label).is_not_null())[label].cast(pl.Float64)
    other = values.filter(~values.is_in([0.0, 1.0]))
    if other.len():
        found = f"values {values.unique().sort().head(6).to_list()}"
        raise SchemaError(
            "label column is not 0/1", function=_FUNCTION, column=label, expected="0/1 or Boolean", found=found
        )
    classes = values.unique().to_list()
    if len(classes) < 2:
        found = f"{values.len()} pairs with {metric}, " + (f"all {classes[0]:g}" if classes else "none")
        raise SchemaError(
            "label has a single class where the score is non-null: no ROC curve",
            function=_FUNCTION,
            column=label,
            expected="both 0 and 1",
            found=found,
        )


def _oriented(df: pl.DataFrame, metric: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    both = df.filter(pl.col(metric).is_not_null() & pl.col(label).is_not_null())
    score = both[metric].cast(pl.Float64).to_numpy()
    registered = metric_for_column(metric)
    if registered is not None and not registered.higher_is_better:
        score = -score
    return score, both[label].cast(pl.Float64).to_numpy() == 1.0
