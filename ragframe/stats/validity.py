"""Does a metric agree with people? Scores against human labels, one tidy row per pair.

:func:`agreement_with_labels` pairs every score column with every human-label column (or
the pairs you name) and reports how well the score separates or tracks the label: ROC AUC
with a percentile-bootstrap interval, Spearman and Kendall correlation, the Youden cut,
and the accuracy and Cohen's kappa of the metric's configured pass threshold.

Each (slice, metric, label) cell is computed from its non-null pairs sorted once by
(score, label): AUROC is the Mann-Whitney U from average ranks of the score ties, the
bootstrap redraws the same sorted pairs with replacement (the classic multinomial
bootstrap: AUROC is not a mean, so :mod:`ragframe.kernels.resampling`'s Poisson means do
not apply; each resample's counts per run of equal pairs come from one cumulative sum, and
the weighted U is summed over the tie groups in integers), and Youden's J comes from the
cumulative class counts over the tie groups. The Python loop runs over cells and blocks
of resamples, never over rows.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.kernels.groups import group_codes
from ragframe.metrics import column_keys, metric_for_column, score_columns
from ragframe.public import public
from ragframe.schema import first_true_row, to_polars
from ragframe.stats.pairing import check_ids
from ragframe.stats.summary import prepare_scores

__all__ = ["agreement_with_labels", "VALIDITY_COLUMNS"]
#: The output columns after the ``by`` columns, in order.
VALIDITY_COLUMNS = [
    "metric",
    "label",
    "n",
    "positives",
    "auroc",
    "auroc_low",
    "auroc_high",
    "spearman",
    "spearman_p",
    "kendall",
    "kendall_p",
    "youden_threshold",
    "youden_j",
    "threshold",
    "accuracy",
    "cohen_kappa",
]
_SCHEMA = {
    "metric": pl.String,
    "label": pl.String,
    "n": pl.Int64,
    "positives": pl.Int64,
    **{name: pl.Float64 for name in VALIDITY_COLUMNS[4:]},
}
#: Draws held at once by one block of bootstrap resamples (resamples x pairs).
_BLOCK_CELLS = 1 << 21


@public
def agreement_with_labels(
    scored: Any,
    labels: Any = None,
    /,
    *,
    metrics: str | Sequence[str] | None = None,
    label_columns: str | Sequence[str] | Mapping[str, str | Sequence[str]] | None = None,
    by: str | Sequence[str] | None = None,
    on: str | Sequence[str] | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int | None = 0,
    thresholds: Mapping[str, float | None] | None = None,
    ordinal: str | Sequence[str] | None = None,
) -> pl.DataFrame:
    """How well each score agrees with each human label: AUROC, rank correlations, cut-offs.

    Parameters
    ----------
    scored : frame
        A scored frame (polars DataFrame or LazyFrame, pyarrow Table or RecordBatch, pandas
        DataFrame) holding the score columns, and the label columns when ``labels`` is None.
    labels : frame, optional
        Human labels in a second frame, joined to ``scored`` on ``on``. Ids must be unique
        and non-null in both frames; every labelled id must be in ``scored`` (scored rows
        without a label are simply unlabelled).
    metrics : str or list of str, optional
        Score columns. Default: every ragframe score column of ``scored`` (prefixed ones
        too), except ``by``, ``on`` and label columns. Any numeric column may be named.
    label_columns : str, list of str, or dict, optional
        Label columns: every metric is paired with every one of them; or a dict
        ``{metric: label}`` / ``{metric: [labels]}`` pairing each metric with its own label
        (then ``metrics`` must be None). Required when ``labels`` is None; default with a
        ``labels`` frame: every column of it except ``on``.
    by : str or list of str, optional
        Slice columns of ``scored``; one row per slice, metric and label.
    on : str or list of str, optional
        Id column(s) joining ``labels`` to ``scored``; default ``"id"``. Only with ``labels``.
    n_resamples : int
        Bootstrap resamples of the AUROC interval (1 to 10,000,000; default 2000).
    confidence : float
        Coverage of the AUROC interval, strictly between 0 and 1.
    seed : int or None
        Seed of the bootstrap (an int >= 0, or None for a fresh one).
    thresholds : dict, optional
        Pass thresholds keyed by score column, unprefixed output name or metric name (as
        :class:`ragframe.Evaluator` takes them); a value of None means "no threshold".
        Default: the metric's registered threshold (null for none).
    ordinal : str or list of str, optional
        Label columns that are rank scales (e.g. -2..2): only ``spearman`` and ``kendall``
        are reported for them. Any other label must be binary (see Notes).

    Returns
    -------
    polars.DataFrame
        The ``by`` columns, then ``metric, label, n, positives, auroc, auroc_low,
        auroc_high, spearman, spearman_p, kendall, kendall_p, youden_threshold, youden_j,
        threshold, accuracy, cohen_kappa``; one row per (slice, metric, label), metrics and
        labels in the order given, slices sorted (nulls first) within each pair.
        ``n`` counts the rows with both the score and the label non-null; every
        statistic is over those pairs. See Notes for each rule.

    Notes
    -----
    - A label column is *binary* when it is Boolean or all its non-null values (over the
      whole column, not per slice) are 0 or 1; positive means ``label == 1``. Any other
      label is a :class:`SchemaError` naming the column and the values found (a -1/1 or
      1..5 label would otherwise get a null AUROC without a word): recode it as 0/1, or
      name it in ``ordinal`` to read it as a rank scale: then only ``spearman`` and
      ``kendall`` are reported and the binary statistics (``positives``, AUROC, Youden,
      accuracy, kappa) are null.
    - ``auroc`` equals ``sklearn.metrics.roc_auc_score`` (ties count one half); null when
      one class has no pair. ``auroc_low, auroc_high``: percentile bootstrap, each
      resample ``n`` pairs drawn with replacement from the pairs sorted by (score, label),
      so the interval depends on the pairs only (not on row order, not on other slices or
      metrics); resamples missing a class are left out.
    - ``spearman``, ``spearman_p``, ``kendall`` (tau-b), ``kendall_p``: as
      ``scipy.stats.spearmanr`` and ``scipy.stats.kendalltau``; null for fewer than 2
      pairs or a constant score or label.
    - ``youden_threshold``: the score ``t`` maximising ``TPR - FPR`` when predicting
      positive for ``score >= t``, over the thresholds of ``sklearn.metrics.roc_curve``
      (J computed as ``tpr - fpr`` in floating point, as scikit-learn does; among equal J
      the highest ``t``, as ``argmax`` over the descending thresholds picks); ``youden_j``
      is that maximum.
      When no cut beats chance (``youden_j`` 0) the threshold is null.
    - ``accuracy`` and ``cohen_kappa``: of ``score >= threshold`` against ``label == 1``
      (``sklearn.metrics.accuracy_score`` / ``cohen_kappa_score``; a kappa whose chance
      agreement is 1 is 1.0 when every pair agrees and 0.0 otherwise, where scikit-learn
      gives NaN); null without a threshold or for an ordinal label.
    - Direction: a metric registered with ``higher_is_better=False`` is negated before
      everything, so AUROC above 0.5 and positive correlations always mean agreement; its
      ``youden_threshold`` is in the score's own units with the rule ``score <= t``, and
      accuracy and kappa use ``score <= threshold``. Unregistered columns are taken as
      higher-is-better.
    - A cell with no pair, or one class only, gives null statistics, not an error; but
      when no (metric, label) has a single non-null pair anywhere, a :class:`SchemaError`
      is raised (nothing can be checked).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame(
    ...     {
    ...         "faithfulness": [0.9, 0.8, 0.3, 0.6, 0.2, 0.7],
    ...         "human_faithfulness": [1, 1, 0, 1, 0, 0],
    ...     }
    ... )
    >>> out = agreement_with_labels(df, label_columns="human_faithfulness", n_resamples=200)
    >>> row = out.row(0, named=True)
    >>> row["n"], row["positives"], round(row["auroc"], 4), row["youden_threshold"], row["youden_j"]
    (6, 3, 0.8889, 0.6, 0.6666666666666667)
    >>> row["threshold"], round(row["accuracy"], 4), round(row["cohen_kappa"], 4)  # faithfulness passes at 0.4
    (0.4, 0.8333, 0.6667)
    >>> row["auroc_low"], row["auroc_high"]  # 6 pairs: a wide interval
    (0.5, 1.0)
    """
    n_resamples = validate.resamples(n_resamples, "n_resamples")
    confidence = validate.confidence(confidence, "confidence")
    seed = validate.seed(seed, "seed")
    frame, pairs, group_by = _inputs(scored, labels, metrics, label_columns, by, on)
    metric_names = list(dict.fromkeys(m for m, _ in pairs))
    cuts = _thresholds(thresholds, metric_names)
    binary = _binary_labels(frame, list(dict.fromkeys(lbl for _, lbl in pairs)), ordinal)
    codes, keys = _groups(frame, group_by)
    order = np.argsort(codes, kind="stable")
    codes = codes[order]
    n_groups = max(keys.height, 1)
    rows: list[dict[str, Any]] = []
    for metric, label in pairs:
        score = frame[metric].cast(pl.Float64).to_numpy()[order]
        truth = frame[label].cast(pl.Float64).to_numpy()[order]
        lower = _lower_is_better(metric)
        if lower:
            score = -score  # oriented: higher always means "more likely positive"
        both = ~(np.isnan(score) | np.isnan(truth))
        counts = np.bincount(codes[both], minlength=n_groups)
        edges = np.r_[0, np.cumsum(counts)]
        score, truth = score[both], truth[both]
        for g in range(n_groups):
            cell = _cell(score[edges[g] : edges[g + 1]], truth[edges[g] : edges[g + 1]], binary[label], lower)
            cell.update(_bootstrap_interval(cell.pop("_sorted"), n_resamples, seed, confidence))
            cell.update(_at_threshold(cell.pop("_pairs"), cuts[metric], lower))
            cell.update(metric=metric, label=label, _group=g)
            rows.append(cell)
    out = pl.DataFrame(rows, schema={**_SCHEMA, "_group": pl.Int64})
    if not (out["n"] > 0).any():
        raise SchemaError(
            f"no (score, label) pair has both values non-null, for any of {pairs}; nothing can be checked",
            column=pairs[0][1],
        )
    if group_by:
        out = out.join(keys, on="_group", how="left", maintain_order="left")
    return out.select(*group_by, *VALIDITY_COLUMNS)


# --------------------------------------------------------------------------- inputs


def _read(frame: Any) -> pl.DataFrame:
    return to_polars(frame)


def _inputs(
    scored: Any, labels: Any, metrics: Any, label_columns: Any, by: Any, on: Any
) -> tuple[pl.DataFrame, list[tuple[str, str]], list[str]]:
    """The frame holding metrics, labels and slices; the (metric, label) pairs; the slice columns."""
    df = _read(scored)
    group_by = [] if by is None else validate.column_list(by, "by", allow_empty=True)
    if labels is None:
        if on is not None:
            raise validate.fail("on", "None when labels is None (the labels are columns of scored)", on)
        if label_columns is None:
            raise validate.fail(
                "label_columns", "given when labels is None (which columns of scored are labels?)", None
            )
        keys: list[str] = []
        source = df
    else:
        keys = validate.column_list("id" if on is None else on, "on")
        source = _read(labels)
        if label_columns is None:
            label_columns = [c for c in source.columns if c not in keys]
    pairs = _pairs(df, metrics, label_columns, [*group_by, *keys])
    label_names = list(dict.fromkeys(lbl for _, lbl in pairs))
    for name in label_names:
        _check_label(source, name, "labels" if labels is not None else "scored")
    metric_names = list(dict.fromkeys(m for m, _ in pairs))
    df, _, group_by = prepare_scores(df, metric_names, group_by)
    if labels is None:
        return df, pairs, group_by
    return _join(df, source, keys, metric_names, label_names, group_by), pairs, group_by


def _pairs(df: pl.DataFrame, metrics: Any, label_columns: Any, exclude: list[str]) -> list[tuple[str, str]]:
    """(metric, label) pairs from ``metrics`` x ``label_columns`` or a ``{metric: labels}`` dict."""
    if isinstance(label_columns, Mapping):
        if metrics is not None:
            raise validate.fail("metrics", "None when label_columns is a dict (its keys are the metrics)", metrics)
        validate.column_list(list(label_columns), "label_columns")
        return [
            (metric, label)
            for metric, wanted in label_columns.items()
            for label in validate.column_list(wanted, f"label_columns[{metric!r}]")
        ]
    label_names = validate.column_list(label_columns, "label_columns")
    if metrics is not None:
        names = validate.column_list(metrics, "metrics")
    else:
        names = [c for c in score_columns(df.schema) if c not in exclude and c not in label_names]
        if not names:
            raise SchemaError(
                "no ragframe score columns found; pass {metrics} to name them",
                available=df.columns,
                mentions={"metrics": "[...]"},
            )
    return [(metric, label) for metric in names for label in label_names]


def _check_label(df: pl.DataFrame, name: str, side: str) -> None:
    """A label column exists, is numeric or Boolean, and holds no NaN or infinite value."""
    if name not in df.columns:
        raise SchemaError(f"missing label column in {side}", column=name, available=df.columns)
    dtype = df.schema[name]
    if not (dtype.is_numeric() or dtype in (pl.Boolean, pl.Null)):
        raise SchemaError(
            "label column is not numeric or boolean (pass label_columns=[...] to choose the labels)",
            column=name,
            expected="0/1, a Boolean, or an ordinal number",
            found=str(dtype),
        )
    if dtype.is_float():
        row = first_true_row(df[name].is_nan() | df[name].is_infinite())
        if row is not None:
            raise SchemaError(
                "label is NaN or infinite",
                column=name,
                row=row,
                expected="a finite number or null",
                found=str(df[name][row]),
            )


def _join(
    df: pl.DataFrame, source: pl.DataFrame, keys: list[str], metrics: list[str], labels: list[str], by: list[str]
) -> pl.DataFrame:
    """Scores left-joined with the labels on ``keys``; every labelled id must be scored."""
    check_ids(df, keys, "scored")
    check_ids(source, keys, "labels")
    left = list(dict.fromkeys([*keys, *by, *metrics]))
    for name in labels:
        if name in left:
            raise SchemaError(
                "a label column of labels has the name of an id, slice or score column of scored; rename it",
                column=name,
            )
    for name in keys:
        if df.schema[name] != source.schema[name]:
            raise SchemaError(
                "the id column has different types in scored and labels; cast one side so the ids can match",
                column=name,
                expected=f"{df.schema[name]} (as in scored)",
                found=f"{source.schema[name]} in labels",
            )
    right = source.select(*keys, *labels)
    missing = right.select(keys).join(df.select(keys), on=keys, how="anti")
    if missing.height:
        sample = [r[0] if len(r) == 1 else r for r in missing.head(5).rows()]
        raise SchemaError(
            f"{missing.height} labelled id(s) are not in scored, e.g. {sample}; filter labels to the scored ids",
            column=keys[0],
        )
    return df.select(left).join(right, on=keys, how="left", maintain_order="left")


def _thresholds(given: Any, metrics: list[str]) -> dict[str, float | None]:
    """The pass threshold of each metric: given by column, output name or metric name, else the registry's."""
    given = {} if given is None else given
    if not isinstance(given, Mapping):
        raise validate.fail("thresholds", "a dict {metric: threshold or None}", given)
    names: dict[str, list[str]] = {m: column_keys(m) for m in metrics}
    known = {key for keys in names.values() for key in keys}
    for key, value in given.items():
        if key not in known:
            raise validate.fail("thresholds", f"keyed by the metrics compared ({metrics})", key)
        if value is not None:
            validate.number(value, f"thresholds[{key!r}]")
    cuts: dict[str, float | None] = {}
    for metric, keys in names.items():
        found = next((k for k in keys if k in given), None)
        registered = metric_for_column(metric)
        default = None if registered is None else registered.threshold
        value = default if found is None else given[found]
        cuts[metric] = None if value is None else float(value)
    return cuts


def _lower_is_better(column: str) -> bool:
    metric = metric_for_column(column)
    return metric is not None and not metric.higher_is_better


def _binary_labels(frame: pl.DataFrame, labels: list[str], ordinal: Any) -> dict[str, bool]:
    """Each label: binary (True) or a rank scale named in ``ordinal`` (False); another label is an error."""
    scales = [] if ordinal is None else validate.column_list(ordinal, "ordinal")
    for name in scales:
        if name not in labels:
            raise validate.fail("ordinal", f"label columns of this call ({labels})", name)
    binary = {}
    for label in labels:
        binary[label] = label not in scales
        if binary[label] and not _is_binary(frame[label]):
            values = frame[label].drop_nulls().unique().sort()
            shown = values.head(10).to_list()
            more = f" and {values.len() - 10} more" if values.len() > 10 else ""
            raise SchemaError(
                f"label is not binary; recode it as 0/1 (e.g. pl.col({label!r}) == 1), or pass "
                f"ordinal=[{label!r}] to read it as a rank scale (rank correlations only)",
                column=label,
                expected="0/1 or a Boolean",
                found=f"values {shown}{more}",
            )
    return binary


def _is_binary(series: pl.Series) -> bool:
    if series.dtype in (pl.Boolean, pl.Null):
        return True
    values = series.drop_nulls()
    return bool(((values == 0) | (values == 1)).all())


def _groups(df: pl.DataFrame, by: list[str]) -> tuple[np.ndarray, pl.DataFrame]:
    """Dense slice code of each row (slices sorted, nulls first) and the slice keys with ``_group``."""
    return group_codes(df, by, code_column="_group")


# --------------------------------------------------------------------------- one cell


def _null_if_nan(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _cell(score: np.ndarray, truth: np.ndarray, binary: bool, lower: bool) -> dict[str, Any]:
    """Statistics of one (slice, metric, label) from its non-null pairs (score already oriented)."""
    n = score.size
    order = np.lexsort((truth, score))  # by score, then label: the pairs' canonical order
    score, truth = score[order], truth[order]
    cell: dict[str, Any] = {"n": n, "positives": int((truth == 1).sum()) if binary else None}
    cell.update(_correlations(score, truth))
    cell["_pairs"] = (score, truth) if binary else None
    cell["_sorted"] = None
    cell.update(auroc=None, youden_threshold=None, youden_j=None)
    positives = int(cell["positives"] or 0)
    if binary and 0 < positives < n:
        positive = truth == 1
        starts = np.flatnonzero(np.r_[True, score[1:] != score[:-1]])
        cell["_sorted"] = (score, positive)
        lengths = np.diff(np.r_[starts, n])
        ranks = np.repeat(starts + (lengths + 1) / 2, lengths)  # average rank of each tie group
        u = ranks[positive].sum() - positives * (positives + 1) / 2
        cell["auroc"] = float(u / (positives * (n - positives)))
        cell.update(_youden(score, positive, starts))
        if lower and cell["youden_threshold"] is not None:
            cell["youden_threshold"] = -cell["youden_threshold"]  # back to the score's own units
    return cell


def _correlations(score: np.ndarray, truth: np.ndarray) -> dict[str, float | None]:
    from scipy import stats  # imported on use: scipy.stats takes ~0.8 s to import

    out: dict[str, float | None] = {"spearman": None, "spearman_p": None, "kendall": None, "kendall_p": None}
    if score.size < 2 or score[0] == score[-1] or np.all(truth == truth[0]):
        return out  # a constant side: no correlation is defined
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho, rho_p = stats.spearmanr(score, truth)
        tau, tau_p = stats.kendalltau(score, truth)
    out.update(
        spearman=_null_if_nan(rho),
        spearman_p=_null_if_nan(rho_p),
        kendall=_null_if_nan(tau),
        kendall_p=_null_if_nan(tau_p),
    )
    return out


def _youden(score: np.ndarray, positive: np.ndarray, starts: np.ndarray) -> dict[str, float | None]:
    """Youden's J over the cuts ``score >= t`` at each distinct score (ascending ``score``)."""
    pos = np.add.reduceat(positive.astype(np.int64), starts)
    neg = np.add.reduceat((~positive).astype(np.int64), starts)
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    tp = n_pos - (np.cumsum(pos) - pos)  # positives scoring >= each distinct value
    fp = n_neg - (np.cumsum(neg) - neg)
    j = tp / n_pos - fp / n_neg
    best = j.size - 1 - int(np.argmax(j[::-1]))  # the highest cut among ties, as argmax over roc_curve
    if j[best] <= 0:
        return {"youden_threshold": None, "youden_j": 0.0}
    return {"youden_threshold": float(score[starts[best]]), "youden_j": float(j[best])}


def _bootstrap_interval(
    sorted_pairs: tuple[np.ndarray, np.ndarray] | None, n_resamples: int, seed: int | None, confidence: float
) -> dict[str, float | None]:
    """Percentile interval of the AUROC over multinomial resamples of the (score, label)-sorted pairs.

    A resample is ``n`` draws with replacement (``rng.integers(0, n)``, counted by
    ``np.bincount``). Only the counts per run of equal (score, label) matter: their sums
    come from one cumulative sum per resample, and the weighted U from the tie groups'
    negative and positive counts, in integers.
    """
    if sorted_pairs is None:
        return {"auroc_low": None, "auroc_high": None}
    score, positive = sorted_pairs
    n = score.size
    new_score = np.r_[True, score[1:] != score[:-1]]
    run_start = np.flatnonzero(new_score | np.r_[True, positive[1:] != positive[:-1]])
    run_group = np.cumsum(new_score)[run_start] - 1  # the tie group of each run
    run_positive = positive[run_start]
    n_groups = int(run_group[-1]) + 1
    bounds = np.r_[run_start, n]
    rng = np.random.default_rng(seed)
    block = max(1, min(n_resamples, _BLOCK_CELLS // n))
    aucs = np.empty(n_resamples)
    for r0 in range(0, n_resamples, block):
        size = min(block, n_resamples - r0)
        draws = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * n).reshape(size, n)
        cumulative = np.zeros((size, n + 1), dtype=np.int64)
        np.cumsum(counts, axis=1, out=cumulative[:, 1:])
        in_runs = cumulative[:, bounds[1:]] - cumulative[:, bounds[:-1]]
        w_pos = np.zeros((size, n_groups), dtype=np.int64)
        w_neg = np.zeros((size, n_groups), dtype=np.int64)
        w_pos[:, run_group[run_positive]] = in_runs[:, run_positive]
        w_neg[:, run_group[~run_positive]] = in_runs[:, ~run_positive]
        below = np.cumsum(w_neg, axis=1) - w_neg  # negatives strictly below each tie group
        twice_u = (w_pos * (2 * below + w_neg)).sum(axis=1)
        total = w_pos.sum(axis=1) * w_neg.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            aucs[r0 : r0 + size] = np.where(total > 0, twice_u / (2.0 * total), np.nan)
    aucs = aucs[~np.isnan(aucs)]
    if aucs.size == 0:
        return {"auroc_low": None, "auroc_high": None}
    low, high = np.quantile(aucs, [0.5 - confidence / 2, 0.5 + confidence / 2])
    return {"auroc_low": float(low), "auroc_high": float(high)}


def _at_threshold(
    pairs: tuple[np.ndarray, np.ndarray] | None, threshold: float | None, lower: bool
) -> dict[str, float | None]:
    """Accuracy and Cohen's kappa of the pass rule against ``label == 1`` (binary labels only)."""
    out: dict[str, float | None] = {"threshold": threshold, "accuracy": None, "cohen_kappa": None}
    if pairs is None or threshold is None or pairs[0].size == 0:
        return out
    score, truth = pairs
    predicted = score >= (-threshold if lower else threshold)  # oriented score: -s >= -t is s <= t
    actual = truth == 1
    n, agree = predicted.size, int(np.count_nonzero(predicted == actual))
    n_pred, n_true = int(np.count_nonzero(predicted)), int(np.count_nonzero(actual))
    # n^2 x the chance agreement, in integers: a kappa of exactly 0 (a constant score) comes out 0.0
    chance = n_pred * n_true + (n - n_pred) * (n - n_true)
    if chance == n * n:
        kappa = 1.0 if agree == n else 0.0
    else:
        kappa = (n * agree - chance) / (n * n - chance)
    out.update(accuracy=agree / n, cohen_kappa=kappa)
    return out
