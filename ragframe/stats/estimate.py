"""Prediction-powered estimates: a rate (or any mean) from a few labels plus a score on every row.

A frame whose ``label`` column is filled on a few rows (people labelled them) and whose
``prediction`` column (a heuristic, a judge, a ``_passed`` flag) is filled on every row
gives the rate of the label over all rows with a valid confidence interval:

- ``"classical"``: the mean of the labels alone, ``mean(Y) +- z * sd(Y) / sqrt(n)``;
- ``"ppi"``: prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic,
  Science 2023): ``mean(f_unlabelled) + mean(Y - f_labelled)``, the predictions' mean over
  the unlabelled rows corrected by the predictions' error measured on the labelled rows;
- ``"ppi++"``: its power-tuned form (Angelopoulos, Duchi, Zrnic 2023), which weights the
  predictions by ``lambda`` in [0, 1] chosen from the data to minimise the variance: never
  (asymptotically) wider than the classical interval, however poor the score.

The formulas are ppi_py's (``ppi_mean_pointestimate`` / ``ppi_mean_ci``, unweighted, one
dimension); every slice of ``by=`` is computed at once from group-by sums (``np.bincount``
over the slice codes), with no Python loop over slices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.kernels.groups import group_codes
from ragframe.public import public
from ragframe.schema import first_true_row, to_polars

__all__ = ["estimate", "ESTIMATE_COLUMNS", "ESTIMATE_METHODS", "Moments", "moments", "read_columns", "check_labels"]
#: The methods of :func:`estimate`, the default first.
ESTIMATE_METHODS = ("ppi++", "ppi", "classical")
#: The intervals of :func:`estimate`, the default first.
INTERVALS = ("normal", "wilson")
#: The output columns after the ``by`` columns, in order.
ESTIMATE_COLUMNS = [
    "estimate",
    "ci_low",
    "ci_high",
    "n_labeled",
    "n_unlabeled",
    "method",
    "lambda",
    "classical_estimate",
    "classical_ci_low",
    "classical_ci_high",
    "effective_n",
    "ess_gain",
]


@public
def estimate(
    frame: Any,
    /,
    *,
    prediction: str,
    label: str,
    method: str = "ppi++",
    alpha: float = 0.05,
    by: str | list[str] | None = None,
    interval: str = "normal",
    finite_population: bool = False,
) -> pl.DataFrame:
    """The rate of ``label`` over all rows, from the labelled rows and ``prediction`` on every row.

    For several systems (one row per system and ``query_id``), their rank intervals and
    differences: :func:`ragframe.estimate_systems` (``docs/assessors.md``).

    Parameters
    ----------
    frame : frame
        polars DataFrame or LazyFrame, pyarrow Table or RecordBatch, or pandas DataFrame.
        Rows whose ``label`` is non-null are the labelled set, the others the unlabelled set.
    prediction : str
        A score column filled on every row (numeric or Boolean; a null is an error: filter or
        fill the rows first), e.g. a heuristic, a judge score or a ``_passed`` flag.
    label : str
        The human label: any finite number (0/1, a Boolean, a grade in [0, 1], a Likert
        grade, a latency, a difference: the estimate is its mean); null where not labelled.
        A NaN, an infinite or a non-numeric label is a
        :class:`~ragframe.exceptions.SchemaError` naming the row and value.
    method : {"ppi++", "ppi", "classical"}
        ``"ppi++"`` (power-tuned ``lambda``), ``"ppi"`` (``lambda`` = 1) or ``"classical"``
        (the labels alone, ``lambda`` = 0).
    alpha : float
        Error level: the intervals target coverage ``1 - alpha``.
    by : str or list of str, optional
        Slice columns: one row per slice (sorted, nulls first), each estimated on its own rows.
    interval : {"normal", "wilson"}
        ``"normal"`` (default): ppi_py's normal (Wald) interval, ``estimate +- z se``.
        ``"wilson"``: for 0/1 labels only (a :class:`~ragframe.exceptions.SchemaError`
        otherwise), the score-type interval that holds its level on few labels: the rates
        ``mu`` with ``(estimate - mu)**2 <= q**2 se(mu)**2``, where ``se(mu)`` puts the
        Bernoulli variance ``mu (1 - mu)`` in place of the labels' sample variance (Wilson
        1927), keeping the labels' correlation with the prediction, and ``q`` is Student's t
        quantile with ``n - 1`` degrees of freedom (as Pan 2002 does for Wilson's interval).
        Without a prediction (``lambda`` 0) it is that t-Wilson interval. Both the method's
        and the classical columns.
    finite_population : bool
        False (default): the rows are a sample of a larger population (ppi_py's model).
        True: the estimate is about exactly the slice's rows and the labelled rows are a
        uniform sample of them without replacement (a budget that labels a large share of a
        log): ``se**2 = (1 - n / (n + N)) S**2 / n`` with ``S**2`` the sample variance
        (``ddof=1``) of ``Y - lambda (1 + n/N) f`` (the exact variance of the estimate under
        sampling without replacement), so the interval shrinks to 0 as every row is labelled.

    Returns
    -------
    polars.DataFrame
        The ``by`` columns, then ``estimate, ci_low, ci_high`` (of ``method``), ``n_labeled,
        n_unlabeled, method, lambda``, the classical estimate and interval from the labels
        alone (``classical_estimate, classical_ci_low, classical_ci_high``), ``ess_gain``
        (classical variance / ``method``'s variance) and ``effective_n`` (``n_labeled *
        ess_gain``: the labels the classical interval would need to be as narrow).

    Notes
    -----
    - Equal to ppi_py's ``ppi_mean_pointestimate`` and ``ppi_mean_ci`` (``lam=None`` for
      ``"ppi++"``, ``lam=1`` for ``"ppi"``) and ``classical_mean_ci``: normal (Wald)
      intervals with population standard deviations; ``lambda`` =
      ``clip(cov(Y, f) / ((1 + n/N) var(f)), 0, 1)`` with ``cov`` over the labelled rows
      (divided by ``n``) and ``var`` the sample variance of all ``n + N`` predictions.
      Intervals are not clipped to [0, 1].
    - Valid when the labelled rows are a uniform random sample of the slice's rows (see
      docs/statistics.md); nothing here can check that.
    - A slice with no labelled row has null estimates; with one, null intervals (a standard
      deviation needs two labels; ppi_py would give a zero-width interval). A slice with no
      unlabelled row has ``lambda`` 0 under ``"ppi++"`` (the limit of its formula: the
      classical estimate) and null ``"ppi"`` columns. Constant predictions give ``lambda``
      0 (any ``lambda`` gives the same estimate and interval then).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame(
    ...     {
    ...         "score": [0.9, 0.2, 0.8, 0.3, 0.7, 0.1, 0.9, 0.8, 0.2, 0.6],
    ...         "human": [1, 0, 1, 0, None, None, None, None, None, None],
    ...     }
    ... )
    >>> out = estimate(df, prediction="score", label="human", method="ppi")
    >>> row = out.row(0, named=True)
    >>> round(row["estimate"], 4), row["n_labeled"], row["n_unlabeled"], row["lambda"]  # 0.55 + (-0.05)
    (0.5, 4, 6, 1.0)
    >>> round(row["classical_estimate"], 4), round(row["ess_gain"], 2)  # worth 2.45 times the 4 labels
    (0.5, 2.45)
    """
    method = validate.choice(method, "method", ESTIMATE_METHODS)
    alpha = validate.confidence(alpha, "alpha")
    interval = validate.choice(interval, "interval", INTERVALS)
    if not isinstance(finite_population, bool):
        raise validate.fail("finite_population", "True or False", finite_population)
    prediction, label, group_by = _column_args(prediction, label, by)
    df = read_columns(frame, [prediction, label, *group_by])
    y = check_labels(df[label], label, real=interval == "normal", binary=interval == "wilson")
    f = _check_predictions(df[prediction], prediction)
    codes, keys = _slices(df, group_by)
    table = _estimates(moments(codes, y, f, max(keys.height, 1)), method, alpha, interval, finite_population)
    return pl.concat([keys, table], how="horizontal") if group_by else table


# --------------------------------------------------------------------------- inputs


def _column_args(prediction: Any, label: Any, by: Any) -> tuple[str, str, list[str]]:
    prediction = validate.column_name(prediction, "prediction")
    label = validate.column_name(label, "label")
    if prediction == label:
        raise validate.fail("label", f"a column other than prediction ({prediction!r})", label)
    group_by = [] if by is None else validate.column_list(by, "by", allow_empty=True)
    clash = next((name for name in group_by if name in (prediction, label)), None)
    if clash is not None:
        raise validate.fail("by", "slice columns other than prediction and label", by)
    return prediction, label, group_by


def read_columns(frame: Any, columns: list[str]) -> pl.DataFrame:
    """The ``columns`` of any supported frame as a polars DataFrame (a LazyFrame collects only those).

    Examples
    --------
    >>> import pyarrow as pa
    >>> read_columns(pa.table({"a": [1], "b": [2]}), ["b"]).columns
    ['b']
    """
    return to_polars(frame, columns)


def check_labels(series: pl.Series, column: str, *, binary: bool = False, real: bool = False) -> np.ndarray:
    """Labels as float64 (NaN where null): 0/1, Boolean, or numbers in [0, 1] (only 0/1 when ``binary``).

    With ``real``, any finite number (a Likert grade, a latency, a difference): a mean needs
    no bounds. A NaN or an infinite label is an error in every mode.

    Examples
    --------
    >>> check_labels(pl.Series([1.0, None, 0.25]), "human").tolist()
    [1.0, nan, 0.25]
    >>> check_labels(pl.Series([1, 2]), "human")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ragframe.exceptions.SchemaError: label out of range [column 'human', row 1]; expected ..., found 2
    >>> check_labels(pl.Series([5.0, None, -2.5]), "grade", real=True).tolist()
    [5.0, nan, -2.5]
    """
    if real:
        expected = "a finite number (or a Boolean), or null"
    elif binary:
        expected = "0 or 1 (or a Boolean), or null"
    else:
        expected = "0/1, a Boolean or a number in [0, 1], or null"
    dtype = series.dtype
    if not (dtype.is_numeric() or dtype in (pl.Boolean, pl.Null)):
        raise SchemaError("label column is not numeric", column=column, expected=expected, found=str(dtype))
    values = series.cast(pl.Float64)
    if real:
        bad = ~values.is_finite()
    else:
        bad = values.is_nan() | ((values != 0) & (values != 1) if binary else (values < 0) | (values > 1))
    row = first_true_row(bad)
    if row is not None:
        found = series[row]
        raise SchemaError(
            "label is NaN or infinite" if real else "label out of range",
            column=column,
            row=row,
            expected=expected,
            found=str(found),
        )
    return values.to_numpy(allow_copy=True).astype(np.float64, copy=False)


def _check_predictions(series: pl.Series, column: str) -> np.ndarray:
    """Predictions as float64: numeric or Boolean, every row non-null and finite."""
    dtype = series.dtype
    if not (dtype.is_numeric() or dtype == pl.Boolean):
        raise SchemaError(
            "prediction column is not numeric", column=column, expected="a number or a Boolean", found=str(dtype)
        )
    values = series.cast(pl.Float64)
    row = first_true_row(values.is_null() | ~values.is_finite())
    if row is not None:
        raise SchemaError(
            "prediction is null, NaN or infinite (every row needs one: filter or fill those rows first)",
            column=column,
            row=row,
            expected="a finite number on every row",
            found=str(series[row]),
        )
    return values.to_numpy()


def _slices(df: pl.DataFrame, by: list[str]) -> tuple[np.ndarray, pl.DataFrame]:
    """Dense slice code of each row (slices sorted, nulls first) and the slice keys in code order."""
    return group_codes(df, by)


# --------------------------------------------------------------------------- group-by sums


@dataclass(frozen=True)
class Moments:
    """Per-slice counts, means and centred sums of squares and products (arrays, one entry per slice).

    ``y`` the labels, ``f`` the predictions on labelled rows, ``u`` on unlabelled rows;
    ``s_yy = sum((y - y_mean)**2)`` and so on. Means of empty sets are NaN.
    """

    n: np.ndarray
    n_unlabeled: np.ndarray
    y_mean: np.ndarray
    f_mean: np.ndarray
    u_mean: np.ndarray
    s_yy: np.ndarray
    s_ff: np.ndarray
    s_yf: np.ndarray
    s_uu: np.ndarray


def moments(codes: np.ndarray, y: np.ndarray, f: np.ndarray, slices: int) -> Moments:
    """Two-pass group-by moments of labels ``y`` (NaN = unlabelled) and predictions ``f``.

    Examples
    --------
    >>> m = moments(np.array([0, 0, 0, 1]), np.array([1.0, 0.0, np.nan, 1.0]), np.array([0.8, 0.4, 0.5, 0.9]), 2)
    >>> m.n.tolist(), m.n_unlabeled.tolist(), m.y_mean.tolist(), m.s_yf.round(4).tolist()
    ([2, 1], [1, 0], [0.5, 1.0], [0.2, 0.0])
    """
    labeled = ~np.isnan(y)
    cl, cu = codes[labeled], codes[~labeled]
    yl, fl, fu = y[labeled], f[labeled], f[~labeled]
    n = np.bincount(cl, minlength=slices)
    n_u = np.bincount(cu, minlength=slices)
    with np.errstate(invalid="ignore", divide="ignore"):
        y_mean = np.bincount(cl, yl, slices) / n
        f_mean = np.bincount(cl, fl, slices) / n
        u_mean = np.bincount(cu, fu, slices) / n_u
    dy, df, du = yl - y_mean[cl], fl - f_mean[cl], fu - u_mean[cu]
    return Moments(
        n=n,
        n_unlabeled=n_u,
        y_mean=y_mean,
        f_mean=f_mean,
        u_mean=u_mean,
        s_yy=np.bincount(cl, dy * dy, slices),
        s_ff=np.bincount(cl, df * df, slices),
        s_yf=np.bincount(cl, dy * df, slices),
        s_uu=np.bincount(cu, du * du, slices),
    )


def ppi_lambda(m: Moments, *, n: np.ndarray | None = None, n_unlabeled: np.ndarray | None = None) -> np.ndarray:
    """PPI++'s power-tuning weight per slice, clipped to [0, 1] (0 without unlabelled rows or spread).

    ``n`` / ``n_unlabeled`` replace the slice's counts in ``1 + n/N`` (the sample-size planner
    asks what ``lambda`` would be with other counts); the covariance and variance stay the pilot's.
    """
    n = m.n if n is None else n
    big_n = m.n_unlabeled if n_unlabeled is None else n_unlabeled
    total = m.n + m.n_unlabeled
    u_mean = np.where(m.n_unlabeled > 0, m.u_mean, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        grand = (m.n * m.f_mean + m.n_unlabeled * u_mean) / total
        spread = m.s_ff + m.s_uu + m.n * (m.f_mean - grand) ** 2 + m.n_unlabeled * (u_mean - grand) ** 2
        var_all = spread / (total - 1)  # np.cov of all predictions (ddof 1)
        lam = (m.s_yf / m.n) / ((1 + n / big_n) * var_all)
    usable = (big_n > 0) & (var_all > 0) & np.isfinite(lam)
    return np.where(usable, np.clip(lam, 0.0, 1.0), 0.0)


def ppi_standard_error(m: Moments, lam: np.ndarray) -> np.ndarray:
    """Standard error of the estimate with weight ``lam`` (ppi_py's: population standard deviations)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rectifier = np.maximum(m.s_yy - 2 * lam * m.s_yf + lam**2 * m.s_ff, 0.0) / m.n**2
        imputed = np.where(lam == 0, 0.0, lam**2 * m.s_uu / m.n_unlabeled**2)
    return np.sqrt(rectifier + imputed)


def _estimates(m: Moments, method: str, alpha: float, interval: str, finite: bool) -> pl.DataFrame:
    from scipy.special import ndtri  # scipy.stats.norm.ppf, without importing scipy.stats

    z = float(ndtri(1 - alpha / 2.0))
    zero = np.zeros(m.n.size)
    lam = {"ppi++": ppi_lambda(m), "ppi": np.where(m.n_unlabeled > 0, 1.0, np.nan), "classical": zero}[method]
    spread = _finite_standard_error if finite else ppi_standard_error
    se_classical = np.where(m.n >= 2, spread(m, zero), np.nan)
    with np.errstate(invalid="ignore"):
        point = m.y_mean + np.where(lam == 0, 0.0, lam * (m.u_mean - m.f_mean))
        se = np.where(m.n >= 2, spread(m, lam), np.nan)
        gain = se_classical**2 / se**2
    gain = np.where(np.isfinite(gain), gain, np.nan)
    if interval == "wilson":
        from scipy.special import stdtrit

        q = stdtrit(np.maximum(m.n - 1, 1), 1 - alpha / 2.0)  # Student t, n - 1 df (Pan 2002), per slice
        low, high = wilson_interval(m, lam, point, q, finite)
        c_low, c_high = wilson_interval(m, zero, m.y_mean, q, finite)
    else:
        low, high = point - z * se, point + z * se
        c_low, c_high = m.y_mean - z * se_classical, m.y_mean + z * se_classical
    columns = {
        "estimate": point,
        "ci_low": low,
        "ci_high": high,
        "n_labeled": m.n,
        "n_unlabeled": m.n_unlabeled,
        "method": [method] * m.n.size,
        "lambda": lam,
        "classical_estimate": m.y_mean,
        "classical_ci_low": c_low,
        "classical_ci_high": c_high,
        "effective_n": m.n * gain,
        "ess_gain": gain,
    }
    table = pl.DataFrame(columns, schema_overrides={"n_labeled": pl.Int64, "n_unlabeled": pl.Int64})
    return table.with_columns(pl.col(pl.Float64).fill_nan(None))


def _finite_standard_error(m: Moments, lam: np.ndarray) -> np.ndarray:
    """Standard error about the slice's own rows: ``(1 - n/M) S**2 / n``, ``S**2`` of ``Y - lam (1 + n/N) f`` (ddof 1).

    The estimate minus the slice's mean is the labelled mean minus the slice's mean of ``g =
    Y - lam (1 + n/N) f``, so under sampling without replacement its variance is the
    textbook ``(1 - n/M) S_g**2 / n`` (Cochran, *Sampling Techniques*, 1977, theorem 2.2).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = _finite_kappa(m, lam)
        s2 = np.maximum(m.s_yy - 2 * kappa * m.s_yf + kappa**2 * m.s_ff, 0.0) / (m.n - 1)
        share = 1 - m.n / (m.n + m.n_unlabeled)
        return np.sqrt(share * s2 / m.n)


def _finite_kappa(m: Moments, lam: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(lam == 0, 0.0, lam * (1 + m.n / m.n_unlabeled))


def wilson_interval(
    m: Moments, lam: np.ndarray, point: np.ndarray, z: float | np.ndarray, finite: bool, steps: int = 64
) -> tuple[np.ndarray, np.ndarray]:
    """Score-type interval of a 0/1 rate: ``{mu: (point - mu)**2 <= z**2 se(mu)**2}``, by bisection per slice.

    ``se(mu)**2 = c V(mu) / n + imputed`` with ``V(mu) = (sigma(mu) - k rho s_f)**2 + k**2 s_f**2 (1
    - rho**2)``, the variance of ``Y - k f`` when ``Y`` is Bernoulli(``mu``): ``sigma(mu)**2 = mu (1
    - mu)``, ``rho`` and ``s_f`` the labelled rows' correlation and the predictions' standard
    deviation (``k = lambda``, ``c = 1`` and ``imputed = lambda**2 var(f_unlabelled) / N`` as
    ppi_py; or, with ``finite``, ``k = lambda (1 + n/N)``, ``c = 1 - n/M``, ``imputed = 0`` and
    ``ddof=1``). With ``lambda`` 0 it is Wilson's (1927) interval (Agresti and Coull, *The
    American Statistician* 52(2), 1998, recommend it over the Wald interval for a proportion).
    Null below 2 labels.

    Examples
    --------
    >>> m = moments(np.zeros(20, dtype=np.int64), np.r_[np.ones(17), np.zeros(3)], np.full(20, 0.5), 1)
    >>> low, high = wilson_interval(m, np.zeros(1), m.y_mean, 1.959963984540054, False)
    >>> round(float(low[0]), 4), round(float(high[0]), 4)  # Wilson's 95% interval for 17 of 20
    (0.6396, 0.9476)
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        ddof = 1 if finite else 0
        kappa = _finite_kappa(m, lam) if finite else lam
        share = 1 - m.n / (m.n + m.n_unlabeled) if finite else np.ones(m.n.size)
        imputed = np.zeros(m.n.size) if finite else np.where(lam == 0, 0.0, lam**2 * m.s_uu / m.n_unlabeled**2)
        s_f = np.sqrt(m.s_ff / (m.n - ddof))
        rho = m.s_yf / np.sqrt(m.s_yy * m.s_ff)
        rho = np.where(np.isfinite(rho), np.clip(rho, -1.0, 1.0), 0.0)
        s_f = np.where(np.isfinite(s_f), s_f, 0.0)
        k_rho, k_rest = kappa * rho * s_f, kappa**2 * s_f**2 * (1 - rho**2)

        def variance(mu: np.ndarray) -> np.ndarray:
            sigma = np.sqrt(np.clip(mu * (1 - mu), 0.0, None))
            return share * ((sigma - k_rho) ** 2 + k_rest) / m.n + imputed

        reach = z * np.sqrt(share * ((0.5 + np.abs(k_rho)) ** 2 + k_rest) / m.n + imputed) + 1e-12
        bounds = []
        for side in (-1.0, 1.0):  # the crossing between point (inside) and point + side * reach (outside)
            inside, outside = point.copy(), point + side * reach
            for _ in range(steps):
                middle = (inside + outside) / 2
                ok = (point - middle) ** 2 <= z**2 * variance(middle)
                inside, outside = np.where(ok, middle, inside), np.where(ok, outside, middle)
            bounds.append(inside)
    usable = (m.n >= 2) & np.isfinite(point)
    return np.where(usable, bounds[0], np.nan), np.where(usable, bounds[1], np.nan)
