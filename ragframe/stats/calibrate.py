"""Calibration: map a score to the probability that a person labels the row good.

:func:`calibrate` fits scikit-learn's ``IsotonicRegression`` (monotone, no shape assumed)
or an unpenalised ``LogisticRegression`` on one feature (Platt scaling) to the labelled rows
of a frame, and returns a picklable :class:`Calibrator`: ``.predict(frame)`` adds
``<score>_calibrated`` to any frame of the same kind (row by row, so batches of
``evaluate_parquet`` or Ray give the same values as one frame), ``.report`` holds the Brier
score and expected calibration error before and after, and ``.threshold(precision=...)``
or ``.threshold(recall=...)`` picks a pass mark on the score for a target.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.metrics import metric_for_column
from ragframe.public import public
from ragframe.schema import apply_to_frame, first_true_row
from ragframe.stats.estimate import check_labels, read_columns

__all__ = ["calibrate", "Calibrator", "CALIBRATION_METHODS", "ECE_BINS", "SELECTIONS", "expected_calibration_error"]
#: The methods of :func:`calibrate`, the default first.
CALIBRATION_METHODS = ("isotonic", "logistic")
#: Equal-width probability bins of the expected calibration error.
ECE_BINS = 10
#: How :meth:`Calibrator.threshold` chooses, the default first.
SELECTIONS = ("cross-validated", "in-sample")
#: The margins over the target :meth:`Calibrator.threshold` tries, in this step.
_MARGIN_STEP = 0.0025

Frame = TypeVar("Frame")


@dataclass(frozen=True, repr=False, eq=False)
class Calibrator:
    """A fitted map from a score to P(label = 1); made by :func:`calibrate`, not by hand.

    Parameters
    ----------
    score, label : str
        The score column it reads and the label column it was fit to.
    method : str
        ``"isotonic"`` or ``"logistic"``.
    model : object
        The fitted scikit-learn estimator.
    increasing : bool
        Whether a higher score means a better row (the metric's registered direction).
    report : polars.DataFrame
        ``stage`` (``"before"``, ``"after"``), ``n``, ``brier``, ``ece`` on the rows fit.
    curve : tuple of numpy.ndarray
        The pass marks tried by :meth:`threshold` and the precision and recall of each.
    data : tuple of numpy.ndarray
        The scores and labels of the rows fit (what the cross-validation of
        :meth:`threshold` and :meth:`check` resamples).

    Examples
    --------
    >>> import pickle
    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({"score": [0.1, 0.4, 0.35, 0.8, 0.9, 0.7], "human": [0, 0, 1, 1, 1, 0]})
    >>> calibrator = rf.calibrate(df, score="score", label="human")
    >>> calibrator
    Calibrator(score='score', label='human', method='isotonic', n=6)
    >>> pickle.loads(pickle.dumps(calibrator)).predict(df)["score_calibrated"].round(3).to_list()
    [0.0, 0.333, 0.333, 1.0, 1.0, 0.333]
    """

    score: str
    label: str
    method: str
    model: Any
    increasing: bool
    report: pl.DataFrame
    curve: tuple[np.ndarray, np.ndarray, np.ndarray] = field(default=(np.empty(0), np.empty(0), np.empty(0)))
    data: tuple[np.ndarray, np.ndarray] = field(default=(np.empty(0), np.empty(0)))

    @property
    def output(self) -> str:
        """The column :meth:`predict` adds: ``<score>_calibrated``.

        Returns
        -------
        str
            The column name.

        Examples
        --------
        >>> import polars as pl
        >>> import ragframe as rf
        >>> rf.calibrate(pl.DataFrame({"s": [0.2, 0.8], "y": [0, 1]}), score="s", label="y").output
        's_calibrated'
        """
        return f"{self.score}_calibrated"

    def __repr__(self) -> str:
        n = int(self.report["n"][0])
        return f"Calibrator(score={self.score!r}, label={self.label!r}, method={self.method!r}, n={n})"

    @public(name="Calibrator.predict")
    def predict(self, frame: Frame) -> Frame:
        """Add ``<score>_calibrated``, P(label = 1) given the score, to a frame of any kind.

        Parameters
        ----------
        frame : frame
            Holds the ``score`` column (polars DataFrame or LazyFrame, pyarrow Table or
            RecordBatch, pandas DataFrame). A null score gives a null probability; NaN or
            infinite is a :class:`~ragframe.exceptions.SchemaError` naming the row.

        Returns
        -------
        frame
            The same kind of frame with the column added (replaced if present); a LazyFrame
            stays lazy.

        Examples
        --------
        >>> import polars as pl
        >>> import ragframe as rf
        >>> calibrator = rf.calibrate(pl.DataFrame({"s": [0.2, 0.4, 0.8], "y": [0, 1, 1]}), score="s", label="y")
        >>> calibrator.predict(pl.DataFrame({"s": [0.1, None, 0.9]}))["s_calibrated"].to_list()
        [0.0, None, 1.0]
        """
        return apply_to_frame(frame, self._column, columns=[self.score])

    @public(name="Calibrator.threshold")
    def threshold(
        self,
        *,
        precision: float | None = None,
        recall: float | None = None,
        selection: str = "cross-validated",
        folds: int = 5,
        seed: int = 0,
    ) -> float:
        """A pass mark on the score meeting a precision or a recall target, chosen by cross-validation.

        Parameters
        ----------
        precision : float, optional
            Target precision of "pass" against ``label == 1``: the pass mark with the most
            recall among those reaching it (the lowest, for a higher-is-better score).
        recall : float, optional
            Target recall: the pass mark with the most precision-friendly (highest) cut among
            those reaching it. Give exactly one of the two.
        selection : {"cross-validated", "in-sample"}
            ``"in-sample"``: the rule above on the rows fit, whose precision (recall) there
            flatters it: the loosest cut that reaches the target on those rows falls short on
            new rows more often than not. ``"cross-validated"`` (default): the same rule with
            the target raised by a margin ``m``, the smallest ``m`` (steps of 0.0025) for which
            the rule, applied on ``folds - 1`` folds and scored on the fold left out, reaches
            the target over the out-of-fold rows pooled
            (``sklearn.model_selection.StratifiedKFold(folds, shuffle=True,
            random_state=seed)``); then that rule on all rows.
        folds, seed : int
            The cross-validation's folds (2 or more; fewer when a class has fewer rows, at
            least 2) and its shuffle seed.

        Returns
        -------
        float
            A score value ``t``: rows pass when ``score >= t`` (``score <= t`` for a metric
            registered as lower-is-better). An unreachable target is an
            :class:`~ragframe.exceptions.InvalidParameterError` naming the best reachable;
            too few labels of a class to cross-validate is one too (use
            ``selection="in-sample"``, knowing it is optimistic).

        Examples
        --------
        >>> import polars as pl
        >>> import ragframe as rf
        >>> df = pl.DataFrame({"s": [0.1, 0.3, 0.4, 0.6, 0.8, 0.9], "y": [0, 0, 1, 0, 1, 1]})
        >>> calibrator = rf.calibrate(df, score="s", label="y")
        >>> calibrator.threshold(precision=0.9, selection="in-sample")
        0.8
        >>> calibrator.threshold(recall=1.0, selection="in-sample")
        0.4
        """
        name, target = _target(precision, recall)
        selection = validate.choice(selection, "selection", SELECTIONS)
        cuts, precisions, recalls = self.curve
        margin = 0.0
        if selection == "cross-validated":
            folds = validate.integer(folds, "folds", minimum=2)
            seed = validate.seed(seed, "seed")
            margin = _cross_validated_margin(self, name, target, folds, seed)
        reached = (precisions if name == "precision" else recalls) >= min(target + margin, 1.0) - 1e-12
        if not reached.any():
            best = float((precisions if name == "precision" else recalls).max())
            raise InvalidParameterError(
                f"Calibrator.threshold: no pass mark on {self.score!r} reaches {name} {target} "
                f"on the {int(self.report['n'][0])} labelled rows; the best is {best:.4g}"
            )
        # cuts run from the loosest (most rows pass) to the strictest
        at = int(np.flatnonzero(reached)[-1 if name == "recall" else 0])
        return float(cuts[at])

    @public(name="Calibrator.check")
    def check(self, frame: Any = None, *, folds: int = 5, seed: int = 0) -> pl.DataFrame:
        """The report (Brier score, ECE before and after) on other labelled rows, or cross-validated.

        Parameters
        ----------
        frame : frame, optional
            Any frame kind holding the ``score`` and ``label`` columns (rows with a null label
            are left out). Use rows the calibrator was not fit on: an honest "after". Without
            a frame: the cross-validated report on the rows fit, each row's "after" from a
            calibrator fit on the other folds (``StratifiedKFold(folds, shuffle=True,
            random_state=seed)``), pooled over the folds.
        folds, seed : int
            The cross-validation's folds and shuffle seed (without a frame only).

        Returns
        -------
        polars.DataFrame
            ``stage, n, brier, ece`` as :attr:`report`.

        Examples
        --------
        >>> import polars as pl
        >>> import ragframe as rf
        >>> calibrator = rf.calibrate(pl.DataFrame({"s": [0.2, 0.4, 0.8], "y": [0, 1, 1]}), score="s", label="y")
        >>> calibrator.check(pl.DataFrame({"s": [0.3, 0.9], "y": [0, 1]}))["brier"].round(4).to_list()  # 0.3 -> 0.5
        [0.05, 0.125]
        """
        if frame is None:
            folds = validate.integer(folds, "folds", minimum=2)
            seed = validate.seed(seed, "seed")
            x, y = self.data
            fitted = np.empty(y.size)
            for train, test in _splits(y, folds, seed, self.label):
                fitted[test] = _probabilities(
                    _fit(self.method, x[train], y[train], self.increasing), self.method, x[test]
                )
            return _report(x, y, fitted, self.increasing)
        x, y = _labelled(frame, self.score, self.label)
        if y.size == 0:
            raise SchemaError("no labelled row to check against", column=self.label)
        return _report(x, y, _probabilities(self.model, self.method, x), self.increasing)

    def _column(self, view: pl.DataFrame) -> pl.DataFrame:
        values = view[self.score]
        _check_scores(values, self.score, allow_null=True)
        x = values.cast(pl.Float64).to_numpy()
        known = ~np.isnan(x)
        out = np.full(x.size, np.nan)
        if known.any():
            out[known] = _probabilities(self.model, self.method, x[known])
        return pl.DataFrame({self.output: out}).with_columns(pl.col(self.output).fill_nan(None))


@public
def calibrate(frame: Any, /, *, score: str, label: str, method: str = "isotonic") -> Calibrator:
    """Fit a map from ``score`` to P(``label`` = 1) on the labelled rows of ``frame``.

    Parameters
    ----------
    frame : frame
        polars DataFrame or LazyFrame, pyarrow Table or RecordBatch, or pandas DataFrame.
    score : str
        A numeric score column; every labelled row needs a finite one.
    label : str
        The 0/1 (or Boolean) label; rows where it is null are not used.
    method : {"isotonic", "logistic"}
        ``"isotonic"``: ``sklearn.isotonic.IsotonicRegression(increasing=...,
        out_of_bounds="clip")`` (its values lie in [0, 1]: means of 0/1 labels), increasing unless the score's metric is
        registered as lower-is-better. ``"logistic"``: ``LogisticRegression(C=inf, tol=1e-10)`` on the
        score alone (Platt scaling, no penalty).

    Returns
    -------
    Calibrator
        Picklable: ``.predict(frame)``, ``.report``, ``.threshold(...)``.

    Notes
    -----
    ``report`` is in-sample (on the rows fit): isotonic regression fits those rows closely,
    so its "after" figures flatter it; fit on one labelled sample and check on another to
    measure. "before" reads the score itself as the probability (``1 - score`` for a
    lower-is-better metric); null when a score lies outside [0, 1]. The expected calibration
    error uses :data:`ECE_BINS` equal-width bins binned as
    ``sklearn.calibration.calibration_curve(strategy="uniform")`` does.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({"score": [0.1, 0.4, 0.35, 0.8, 0.9, 0.7, 0.2], "human": [0, 0, 1, 1, 1, 0, None]})
    >>> calibrator = rf.calibrate(df, score="score", label="human")
    >>> calibrator.report.select("stage", "n", pl.col("brier").round(4))
    shape: (2, 3)
    ┌────────┬─────┬────────┐
    │ stage  ┆ n   ┆ brier  │
    │ ---    ┆ --- ┆ ---    │
    │ str    ┆ i64 ┆ f64    │
    ╞════════╪═════╪════════╡
    │ before ┆ 6   ┆ 0.1888 │
    │ after  ┆ 6   ┆ 0.1111 │
    └────────┴─────┴────────┘
    """
    method = validate.choice(method, "method", CALIBRATION_METHODS)
    score = validate.column_name(score, "score")
    label = validate.column_name(label, "label")
    if score == label:
        raise validate.fail("label", f"a column other than score ({score!r})", label)
    x, y = _labelled(frame, score, label)
    if np.unique(y).size < 2:
        raise SchemaError(
            "the labelled rows hold one class only; calibration needs both 0 and 1",
            column=label,
            expected="labels 0 and 1",
            found=f"{y.size} labels, all {y[0] if y.size else 'null'}",
        )
    metric = metric_for_column(score)
    increasing = metric is None or metric.higher_is_better
    model = _fit(method, x, y, increasing)
    report = _report(x, y, _probabilities(model, method, x), increasing)
    return Calibrator(score, label, method, model, increasing, report, _curve(x, y, increasing), (x, y))


# --------------------------------------------------------------------------- pieces


def _labelled(frame: Any, score: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Scores and 0/1 labels of the labelled rows (each with a finite score), as float arrays."""
    df = read_columns(frame, [score, label])
    y = check_labels(df[label], label, binary=True)
    known = ~np.isnan(y)
    _check_scores(df[score].filter(pl.Series(known)), score, allow_null=False, rows=np.flatnonzero(known))
    return df[score].cast(pl.Float64).to_numpy()[known], y[known]


def _report(x: np.ndarray, y: np.ndarray, fitted: np.ndarray, increasing: bool) -> pl.DataFrame:
    """Brier score and ECE of the raw score read as a probability ("before") and of ``fitted`` ("after")."""
    raw = x if increasing else 1.0 - x
    before = raw if bool(np.all((raw >= 0) & (raw <= 1))) else None
    return pl.DataFrame(
        {
            "stage": ["before", "after"],
            "n": [y.size, y.size],
            "brier": [None if before is None else _brier(y, before), _brier(y, fitted)],
            "ece": [
                None if before is None else expected_calibration_error(y, before),
                expected_calibration_error(y, fitted),
            ],
        },
        schema={"stage": pl.String, "n": pl.Int64, "brier": pl.Float64, "ece": pl.Float64},
    )


def _target(precision: Any, recall: Any) -> tuple[str, float]:
    """The one target given, a number in (0, 1]."""
    if (precision is None) == (recall is None):
        raise InvalidParameterError(
            f"Calibrator.threshold: give exactly one of precision= or recall=, found {precision=}, {recall=}"
        )
    name, value = ("precision", precision) if precision is not None else ("recall", recall)
    target = validate.probability(value, name)
    if target == 0:
        raise validate.fail(name, "a number in (0, 1]", value)
    return name, target


def _check_scores(values: pl.Series, column: str, *, allow_null: bool, rows: Any = None) -> None:
    """A numeric score column, finite where non-null (non-null everywhere unless ``allow_null``)."""
    dtype = values.dtype
    if not ((dtype.is_numeric() and dtype != pl.Boolean) or (allow_null and dtype == pl.Null)):
        raise SchemaError("score column is not numeric", column=column, found=str(dtype))
    floats = values.cast(pl.Float64)
    bad = ~floats.is_finite() if allow_null else floats.is_null() | ~floats.is_finite()
    at = first_true_row(bad)
    if at is not None:
        raise SchemaError(
            "score is NaN or infinite" + ("" if allow_null else " or null on a labelled row"),
            column=column,
            row=int(rows[at]) if rows is not None else at,
            expected="a finite number",
            found=str(values[at]),
        )


def _fit(method: str, x: np.ndarray, y: np.ndarray, increasing: bool) -> Any:
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        return IsotonicRegression(increasing=increasing, out_of_bounds="clip").fit(x, y)
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=np.inf, tol=1e-10, max_iter=10_000).fit(x.reshape(-1, 1), y.astype(np.int64))


def _probabilities(model: Any, method: str, x: np.ndarray) -> np.ndarray:
    if method == "isotonic":
        return np.asarray(model.predict(x), dtype=np.float64)
    return np.asarray(model.predict_proba(x.reshape(-1, 1))[:, 1], dtype=np.float64)


def _brier(y: np.ndarray, p: np.ndarray) -> float:
    return float(np.mean((p - y) ** 2))


def expected_calibration_error(y: np.ndarray, p: np.ndarray, bins: int = ECE_BINS) -> float:
    """Bin-weighted mean of ``|mean(y) - mean(p)|`` over equal-width bins of ``p`` in [0, 1].

    Bins as ``sklearn.calibration.calibration_curve(strategy="uniform")``: ``(a, b]``, the
    first ``[0, b]``.

    Examples
    --------
    >>> expected_calibration_error(np.array([0, 1, 1, 1]), np.array([0.05, 0.05, 0.95, 0.95]))
    0.25
    """
    edges = np.linspace(0.0, 1.0, bins + 1)
    ids = np.searchsorted(edges[1:-1], p)
    counts = np.bincount(ids, minlength=bins)
    gaps = np.abs(np.bincount(ids, y, bins) - np.bincount(ids, p, bins))  # sum(y) - sum(p) per bin
    return float(gaps.sum() / counts.sum())


def _curve(x: np.ndarray, y: np.ndarray, increasing: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pass marks (each distinct score, loosest first) with the precision and recall of passing at each."""
    oriented = x if increasing else -x
    order = np.argsort(-oriented, kind="stable")
    ranked, positive = oriented[order], y[order] == 1
    last = np.r_[ranked[1:] != ranked[:-1], True]  # the last row of each run of equal scores
    true_pos = np.cumsum(positive)[last]
    passed = (np.arange(ranked.size) + 1)[last]
    cuts = ranked[last] if increasing else -ranked[last]
    precision, recall = true_pos / passed, true_pos / max(int(positive.sum()), 1)
    return cuts[::-1].copy(), precision[::-1].copy(), recall[::-1].copy()


def _splits(y: np.ndarray, folds: int, seed: int, label: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified folds of the labelled rows; fewer folds when a class is small, an error below 2 of each."""
    from sklearn.model_selection import StratifiedKFold

    smallest = int(min((y == 1).sum(), (y == 0).sum()))
    if smallest < 2:
        raise InvalidParameterError(
            f"cannot cross-validate on {y.size} labels with {smallest} of a class in {label!r} "
            "(2 of each needed); pass a frame of other labelled rows, or selection='in-sample' (optimistic)"
        )
    splitter = StratifiedKFold(min(folds, smallest), shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(y.size), y.astype(np.int64)))


def _cross_validated_margin(calibrator: Calibrator, name: str, target: float, folds: int, seed: int) -> float:
    """The smallest margin m whose rule (the cut reaching target + m in-fold) reaches the target out of fold."""
    (x, y), increasing, score = calibrator.data, calibrator.increasing, calibrator.score
    margins = np.arange(0.0, 1.0 - target + _MARGIN_STEP / 2, _MARGIN_STEP)
    wanted = np.minimum(target + margins, 1.0) - 1e-12
    hits = np.zeros(margins.size)  # true positives among the passed held-out rows, pooled
    base = np.zeros(margins.size)  # passed held-out rows (precision) or held-out positives (recall)
    oriented = x if increasing else -x
    for train, test in _splits(y, folds, seed, calibrator.label):
        cuts, precisions, recalls = _curve(x[train], y[train], increasing)
        reached = (precisions if name == "precision" else recalls)[None, :] >= wanted[:, None]
        found = reached.any(axis=1)
        at = np.where(
            name == "recall", reached.shape[1] - 1 - np.argmax(reached[:, ::-1], axis=1), np.argmax(reached, axis=1)
        )
        cut = np.where(found, (cuts if increasing else -cuts)[at], np.inf)  # no cut reaches: nothing passes
        passes = oriented[test][None, :] >= cut[:, None]
        positive = y[test] == 1
        hits += (passes & positive[None, :]).sum(axis=1)
        base += passes.sum(axis=1) if name == "precision" else positive.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        achieved = hits / base
    ok = np.flatnonzero(achieved >= target - 1e-12)
    if ok.size == 0:
        raise InvalidParameterError(
            f"Calibrator.threshold: no margin makes the pass mark on {score!r} reach {name} {target} on held-out "
            f"folds (the best is {np.nanmax(np.r_[achieved, 0.0]):.4g}); lower the target, label more rows, "
            "or use selection='in-sample' (optimistic)"
        )
    return float(margins[ok[0]])
