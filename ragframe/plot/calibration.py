"""Does a score agree with what people judged? ROC curves against 0/1 labels (AUROC), or reliability diagrams.

``kind="roc"``: does the score *separate* the rows people judged good from the others?
``kind="reliability"``: read as a probability, is the score *calibrated*: of the rows scored
about 0.8, are about 80% labelled 1? (:func:`ragframe.calibrate` maps a score to one that is.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.metrics import metric_for_column, score_columns
from ragframe.plot._frames import read_frame, require_rows
from ragframe.plot._matplotlib import figure_module, new_figure
from ragframe.public import public
from ragframe.schema import frame_schema
from ragframe.stats.summary import prepare_scores
from ragframe.stats.validity import agreement_with_labels

__all__ = ["calibration", "roc_points", "reliability_points", "CALIBRATION_KINDS", "BIN_STRATEGIES"]
#: What :func:`calibration` draws, the default first.
CALIBRATION_KINDS = ("roc", "reliability")
#: How a reliability diagram bins the scores (as ``sklearn.calibration.calibration_curve``'s ``strategy``).
BIN_STRATEGIES = ("uniform", "quantile")


@public
def calibration(
    scores: Any,
    labels: str | Mapping[str, str],
    *,
    metrics: str | Sequence[str] | None = None,
    title: str | None = None,
    kind: str = "roc",
    n_bins: int = 10,
    strategy: str = "uniform",
) -> Any:
    """ROC curve of each score against a 0/1 human label (AUROC in the legend), or its reliability diagram.

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
    kind : {"roc", "reliability"}
        ``"roc"``: how well each score separates the labels (below). ``"reliability"``: the
        score read as the probability that the label is 1 (``1 - score`` for a metric
        registered lower-is-better), binned; per bin the mean score against the share of
        label 1, beside the diagonal of a calibrated score. Scores must lie in [0, 1] (a
        :class:`SchemaError` otherwise: map them with :func:`ragframe.calibrate` first);
        one class among the labels is allowed.
    n_bins : int
        Bins of the reliability diagram (>= 1).
    strategy : {"uniform", "quantile"}
        Bins of the reliability diagram: ``n_bins`` equal-width bins of [0, 1], or bins
        holding about as many rows each (edges at the score's quantiles); as
        ``sklearn.calibration.calibration_curve``'s ``strategy``.

    Returns
    -------
    matplotlib.figure.Figure
        ``kind="reliability"``: two axes. The upper one has a line per (metric, label) (gid
        ``"reliability:<metric>"``) through the non-empty bins' (mean score, share of label 1)
        points, equal to ``sklearn.calibration.calibration_curve(label, score, n_bins=n_bins,
        strategy=strategy)``'s ``(prob_pred, prob_true)``, and the diagonal (gid
        ``"perfect"``); the legend says ``"<metric>: ECE 0.123, Brier 0.145 (n=200, 172
        positive)"``: the expected calibration error over the drawn bins (the bin-weighted
        mean of ``|share of 1 - mean score|``; with uniform bins that of
        :class:`ragframe.Calibrator`'s report) and the Brier score (mean squared error of the
        score as a probability). The lower axes counts the rows per bin (gid
        ``"counts:<metric>"``): a point drawn from few rows says little.

        ``kind="roc"``: one axes: a line per (metric, label) (gid ``"roc:<metric>"``) through the points of
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
    >>> fig = rf.plot.calibration(df, "human", kind="reliability", n_bins=2)
    >>> fig.legends[0].get_texts()[0].get_text()
    'faithfulness: ECE 0.083, Brier 0.138 (n=6, 3 positive)'
    """
    kind = validate.choice(kind, "kind", CALIBRATION_KINDS)
    n_bins = validate.positive_int(n_bins, "n_bins")
    strategy = validate.choice(strategy, "strategy", BIN_STRATEGIES)
    pairs = _pairs(scores, labels, metrics)
    names = list(dict.fromkeys(m for m, _ in pairs))
    label_names = list(dict.fromkeys(lbl for _, lbl in pairs))
    df = read_frame(scores, list(dict.fromkeys([*names, *label_names])))
    require_rows(df, "scores")
    df, _, _ = prepare_scores(df, names, None)
    for metric, label in pairs:
        _check_label(df, metric, label, both_classes=kind == "roc")
    if kind == "reliability":
        return _reliability(df, pairs, len(label_names) > 1, n_bins, strategy, title or _title(label_names, kind))
    agreement = agreement_with_labels(df, label_columns={m: lbl for m, lbl in pairs}, n_resamples=1)
    fig, (ax,) = new_figure(width=7.5, height=6.5 + 0.2 * len(pairs))
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
    ax.set_title(title or _title(label_names, kind), fontsize=11)
    return fig


def _title(label_names: list[str], kind: str) -> str:
    what = "ROC" if kind == "roc" else "Reliability"
    return f"{what} against {label_names[0]}" if len(label_names) == 1 else f"{what} of each score against its label"


def reliability_points(
    probability: np.ndarray, positive: np.ndarray, n_bins: int = 10, strategy: str = "uniform"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Binned calibration of a probability, as ``sklearn.calibration.calibration_curve`` bins it.

    Parameters
    ----------
    probability : numpy.ndarray
        Scores in [0, 1], read as the probability of ``positive``.
    positive : numpy.ndarray of bool
        The label of each score.
    n_bins : int
        Bins (>= 1).
    strategy : {"uniform", "quantile"}
        Equal-width bins of [0, 1], or edges at the scores' quantiles (``np.percentile``);
        a score goes to bin ``searchsorted(inner edges, score)`` (``(a, b]``, the first ``[0, b]``).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray)
        For the non-empty bins in order: the mean score (sklearn's ``prob_pred``), the share of
        positives (``prob_true``) and the row count; then the ``n_bins + 1`` edges.

    Examples
    --------
    >>> import numpy as np
    >>> mean, share, count, edges = reliability_points(np.array([0.1, 0.2, 0.7, 0.9]), np.array([0, 1, 1, 1]) == 1, 2)
    >>> mean.round(2).tolist(), share.tolist(), count.tolist(), edges.tolist()
    ([0.15, 0.8], [0.5, 1.0], [2, 2], [0.0, 0.5, 1.0])
    """
    if strategy == "quantile":
        edges = np.percentile(probability, np.linspace(0, 100, n_bins + 1))
    else:
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    ids = np.searchsorted(edges[1:-1], probability)
    count = np.bincount(ids, minlength=n_bins)
    total = np.bincount(ids, probability, n_bins)
    hits = np.bincount(ids, positive.astype(np.float64), n_bins)
    filled = count > 0
    return total[filled] / count[filled], hits[filled] / count[filled], count[filled], edges


def _reliability(
    df: pl.DataFrame, pairs: list[tuple[str, str]], several_labels: bool, n_bins: int, strategy: str, title: str
) -> Any:
    """The reliability diagram of each (metric, label) pair, with the rows per bin underneath."""
    figure = figure_module()
    fig = figure.Figure(figsize=(7.0, 8.6 + 0.2 * len(pairs)), layout="constrained")
    ax, counts_ax = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3.0, 1.0]})
    ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1, gid="perfect", label="perfectly calibrated")
    for metric, label in pairs:
        probability, positive, shown = _as_probability(df, metric, label)
        mean, share, count, edges = reliability_points(probability, positive, n_bins, strategy)
        ece = float(np.abs(share - mean) @ count) / probability.size
        brier = float(np.mean((probability - positive) ** 2))
        text = shown + (f" vs {label}" if several_labels else "")
        text += f": ECE {ece:.3f}, Brier {brier:.3f} (n={probability.size:,}, {int(positive.sum()):,} positive)"
        (line,) = ax.plot(mean, share, marker="o", markersize=4, linewidth=1.6, label=text, gid=f"reliability:{metric}")
        per_bin = np.bincount(np.searchsorted(edges[1:-1], probability), minlength=n_bins)
        counts_ax.stairs(per_bin, edges, color=line.get_color(), linewidth=1.4, gid=f"counts:{metric}")
    handles, texts = ax.get_legend_handles_labels()
    fig.legend(handles[1:] + handles[:1], texts[1:] + texts[:1], fontsize=8, loc="outside lower center")
    for axes in (ax, counts_ax):
        axes.set_xlim(-0.01, 1.01)
        axes.grid(alpha=0.3)
    ax.set_ylim(-0.01, 1.01)
    ax.set_ylabel("share labelled 1 (per bin)")
    ax.set_title(title, fontsize=11)
    counts_ax.set_xlabel(f"score read as P(label = 1), {n_bins} {strategy} bins (mean per bin)")
    counts_ax.set_ylabel("rows")
    return fig


def _as_probability(df: pl.DataFrame, metric: str, label: str) -> tuple[np.ndarray, np.ndarray, str]:
    """The score as P(label = 1) (``1 - score`` lower-is-better), the labels, the name shown; [0, 1] checked."""
    both = df.filter(pl.col(metric).is_not_null() & pl.col(label).is_not_null())
    score = both[metric].cast(pl.Float64).to_numpy()
    registered = metric_for_column(metric)
    flipped = registered is not None and not registered.higher_is_better
    outside = np.flatnonzero(~((score >= 0) & (score <= 1)))
    if outside.size:
        raise SchemaError(
            "a reliability diagram reads the score as a probability; map it into [0, 1] first (rf.calibrate)",
            column=metric,
            expected="scores in [0, 1]",
            found=f"{outside.size:,} outside, e.g. {float(score[outside[0]])!r}",
        )
    return (
        (1.0 - score if flipped else score),
        both[label].cast(pl.Float64).to_numpy() == 1.0,
        (f"1 - {metric}" if flipped else metric),
    )


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
            raise validate.fail("metrics", "None when labels is a dict (its keys are the metrics)", metrics)
        if not labels:
            raise validate.fail("labels", "a label column or a non-empty dict {metric: label}", labels)
        return [
            (validate.column_name(m, "labels key"), validate.column_name(lbl, f"labels[{m!r}]"))
            for m, lbl in labels.items()
        ]
    label = validate.column_name(labels, "labels")
    if metrics is not None:
        return [(m, label) for m in validate.column_list(metrics, "metrics")]
    schema = frame_schema(scores)
    found = [c for c in score_columns(schema) if c != label]
    if not found:
        raise SchemaError(
            "no ragframe score columns found; pass {metrics} to name them",
            available=schema,
            mentions={"metrics": "[...]"},
        )
    return [(m, label) for m in found]


def _check_label(df: pl.DataFrame, metric: str, label: str, *, both_classes: bool = True) -> None:
    """The label is 0/1 or Boolean, finite, and (``both_classes``) has both classes where ``metric`` is non-null."""
    dtype = df.schema[label]
    if not (dtype.is_numeric() or dtype == pl.Boolean):
        raise SchemaError("label column is not 0/1", column=label, expected="0/1 or Boolean", found=str(dtype))
    values = df.filter(pl.col(metric).is_not_null() & pl.col(label).is_not_null())[label].cast(pl.Float64)
    other = values.filter(~values.is_in([0.0, 1.0]))
    if other.len():
        found = f"values {values.unique().sort().head(6).to_list()}"
        raise SchemaError("label column is not 0/1", column=label, expected="0/1 or Boolean", found=found)
    classes = values.unique().to_list()
    if not classes and not both_classes:
        raise SchemaError(
            "no row has both the score and the label: nothing to plot",
            column=label,
            expected=f"rows where {metric} and {label} are both non-null",
            found="none",
        )
    if len(classes) < 2 and both_classes:
        found = f"{values.len()} pairs with {metric}, " + (f"all {classes[0]:g}" if classes else "none")
        raise SchemaError(
            "label has a single class where the score is non-null: no ROC curve",
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
