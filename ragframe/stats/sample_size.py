"""How many pairs or labels a question needs, before spending on them.

:func:`sample_size` answers two questions:

- **pairs** (``difference=``): how many paired rows a paired t test (:func:`ragframe.compare`'s
  default) needs to detect a mean difference with a given power; the smallest integer ``n``
  whose power (the noncentral t, as ``statsmodels.stats.power.TTestPower``) reaches the target,
  i.e. ``ceil(TTestPower().solve_power(...))``;
- **labels** (``width=``): how many human labels an :func:`ragframe.estimate` interval of a
  given width needs, with the labels alone and with PPI / PPI++, from the spread of the labels
  and their agreement with the prediction in a pilot frame.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.public import public
from ragframe.stats.estimate import Moments, _check_predictions, check_labels, moments, ppi_lambda, read_columns

__all__ = ["sample_size", "paired_t_power", "ALTERNATIVES"]
#: The alternatives of the pairs question, as statsmodels names them.
ALTERNATIVES = ("two-sided", "larger", "smaller")
#: The largest answer searched for the pairs question.
_MAX_PAIRS = 10**12
#: A pilot's differences whose standard deviation is at most this share of the scores' scale are constant.
_NO_SPREAD = 1e-9


@public
def sample_size(
    pilot: Any = None,
    /,
    *,
    difference: float | None = None,
    std: float | None = None,
    a: str | None = None,
    b: str | None = None,
    power: float = 0.8,
    prediction: str | None = None,
    label: str | None = None,
    width: float | None = None,
    rows: int | None = None,
    alpha: float = 0.05,
    alternative: str = "two-sided",
) -> int | pl.DataFrame:
    """Pairs needed to detect a difference, or labels needed for an estimate interval of a width.

    Parameters
    ----------
    pilot : frame, optional
        A pilot run (any frame kind). For pairs: paired score columns ``a`` and ``b`` (the
        standard deviation of ``b - a`` over rows with both, ``ddof=1``). For labels: the
        ``prediction`` on every row and the ``label`` on at least two rows.
    difference : float, optional
        Pairs question: the mean difference (``b - a``) to detect, in the score's units.
    std : float, optional
        Pairs question: the standard deviation of the paired differences (instead of a pilot).
    a, b : str, optional
        Pairs question: the pilot's two score columns.
    power : float
        Pairs question: the probability of detecting ``difference`` (default 0.8).
    prediction, label : str, optional
        Labels question: the pilot's score and label columns, as :func:`ragframe.estimate` reads them.
    width : float, optional
        Labels question: the target width ``ci_high - ci_low`` of the interval.
    rows : int, optional
        Labels question: the rows the estimate will cover (labelled ones included, so ``rows -
        labels`` are unlabelled). Default: unlimited unlabelled rows (the best PPI can do).
    alpha : float
        Significance level of the test, or ``1 -`` coverage of the interval.
    alternative : {"two-sided", "larger", "smaller"}
        Pairs question: the test's alternative (``"larger"`` needs ``difference > 0``).

    Returns
    -------
    int or polars.DataFrame
        Pairs: the number of pairs (at least 2). Labels: one row per method
        (``classical, ppi, ppi++``) with ``labels`` (null when ``rows`` cannot reach the
        width), ``unlabeled`` (``rows - labels``; null without ``rows``) and ``lambda`` (the
        PPI++ weight at that many labels).

    Notes
    -----
    The labels question plans with :func:`ragframe.estimate`'s own standard error:
    ``var(Y - lambda f) / n + lambda**2 var(f) / N`` with population variances, ``var(Y -
    lambda f)`` from the pilot's labelled rows, ``var(f)`` from all its predictions, and the
    PPI++ ``lambda`` recomputed for each ``n`` and ``N``. A pilot is an estimate too: plan
    with a margin.

    Examples
    --------
    >>> sample_size(difference=0.05, std=0.2)  # pairs for a 0.05 shift, sd of differences 0.2
    128
    >>> import polars as pl
    >>> pilot = pl.DataFrame({"score": [0.9, 0.1, 0.8, 0.3, 0.7, 0.2, 0.6, 0.4], "human": [1, 0, 0, 0, 1, 1, 1, 1]})
    >>> sample_size(pilot, prediction="score", label="human", width=0.1, rows=1000)  # a weak score
    shape: (3, 4)
    ┌───────────┬────────┬───────────┬──────────┐
    │ method    ┆ labels ┆ unlabeled ┆ lambda   │
    │ ---       ┆ ---    ┆ ---       ┆ ---      │
    │ str       ┆ i64    ┆ i64       ┆ f64      │
    ╞═══════════╪════════╪═══════════╪══════════╡
    │ classical ┆ 361    ┆ 639       ┆ 0.0      │
    │ ppi       ┆ 458    ┆ 542       ┆ 1.0      │
    │ ppi++     ┆ 342    ┆ 658       ┆ 0.287875 │
    └───────────┴────────┴───────────┴──────────┘
    """
    alpha = validate.confidence(alpha, "alpha")
    if (difference is None) == (width is None):
        raise InvalidParameterError(
            f"give difference= (pairs for a paired test) or width= (labels for an estimate), "
            f"exactly one; found difference={difference!r}, width={width!r}"
        )
    if difference is not None:
        _refuse("the pairs question (difference=)", prediction=prediction, label=label, rows=rows)
        return _pairs(pilot, difference, std, a, b, power, alpha, alternative)
    _refuse("the labels question (width=)", std=std, a=a, b=b)
    return _labels(pilot, prediction, label, width, rows, alpha)


def _refuse(question: str, **unused: Any) -> None:
    for name, value in unused.items():
        if value is not None:
            raise validate.fail(name, f"None for {question}", value)


# --------------------------------------------------------------------------- pairs


def _pairs(pilot: Any, difference: Any, std: Any, a: Any, b: Any, power: Any, alpha: float, alternative: Any) -> int:
    difference = validate.number(difference, "difference")
    power = validate.confidence(power, "power")
    alternative = validate.choice(alternative, "alternative", ALTERNATIVES)
    if difference == 0 or (alternative == "larger" and difference < 0) or (alternative == "smaller" and difference > 0):
        want = {"two-sided": "non-zero", "larger": "> 0", "smaller": "< 0"}[alternative]
        raise validate.fail("difference", f"{want} for alternative={alternative!r}", difference)
    if power <= alpha / (2 if alternative == "two-sided" else 1):
        raise validate.fail("power", "above the test's level (alpha) to be a question", power)
    sd = _difference_std(pilot, std, a, b)
    effect = difference / sd
    return _smallest_n(lambda n: paired_t_power(effect, n, alpha, alternative) >= power, _MAX_PAIRS)


def _difference_std(pilot: Any, std: Any, a: Any, b: Any) -> float:
    if pilot is None:
        _refuse("std= without a pilot", a=a, b=b)
        if std is None:
            raise validate.fail("std", "given (or a pilot frame with a= and b=)", std)
        return validate.number(std, "std", minimum=0.0, inclusive=False)
    _refuse("a pilot frame (its std comes from a and b)", std=std)
    a = validate.column_name(a, "a")
    b = validate.column_name(b, "b")
    if a == b:
        raise validate.fail("b", f"a column other than a ({a!r}): a column minus itself has no spread", b)
    df = read_columns(pilot, [a, b])
    for name in (a, b):
        if not df.schema[name].is_numeric() or df.schema[name] == pl.Boolean:
            raise SchemaError("score column is not numeric", column=name, found=str(df.schema[name]))
    both = df.select(pl.col(a).cast(pl.Float64), pl.col(b).cast(pl.Float64)).drop_nulls()
    diffs = (both[b] - both[a]).to_numpy()
    if diffs.size < 2 or not np.all(np.isfinite(diffs)):
        raise SchemaError(
            "the pilot needs at least 2 finite pairs to plan with",
            column=b,
            expected="at least 2 rows with finite a and b",
            found=f"{diffs.size} pairs" if np.all(np.isfinite(diffs)) else "a NaN or infinite difference",
        )
    sd = float(np.std(diffs, ddof=1))
    scale = float(max(np.abs(both[a].to_numpy()).max(), np.abs(both[b].to_numpy()).max(), np.finfo(float).tiny))
    if sd <= _NO_SPREAD * scale:  # constant differences, up to the rounding of b - a
        raise SchemaError(
            "the pilot's paired differences have no spread: constant (up to rounding), they say nothing of the "
            "spread a "
            "test must overcome; give std= from another source or a pilot whose differences vary",
            column=b,
            expected=f"differences with a standard deviation above {_NO_SPREAD:g} x the scores' scale",
            found=f"standard deviation {sd:.3g} over {diffs.size} pairs",
        )
    return sd


def paired_t_power(effect: float, n: int, alpha: float, alternative: str = "two-sided") -> float:
    """Power of the one-sample (paired) t test with ``n`` pairs: statsmodels' ``ttest_power``.

    The noncentral t's tails come from ``scipy.special.nctdtr``, which returns NaN for some
    large noncentralities (around 38-50 with few degrees of freedom, and beyond 10^9); there
    they come from the other tail (``1 - nctdtr(df, -nc, -t)``) or, when that is NaN too,
    from :func:`_nct_cdf_by_quadrature`, so the power is never NaN.

    Examples
    --------
    >>> round(paired_t_power(0.5, 34, 0.05), 4)
    0.8078
    >>> round(paired_t_power(3.0, 6, 0.01), 4)  # statsmodels: NaN (nctdtr's lower tail is NaN here)
    0.9827
    """
    from scipy.special import stdtrit

    df, nc = n - 1, effect * math.sqrt(n)
    level = alpha / 2 if alternative == "two-sided" else alpha
    result = 0.0
    if alternative in ("two-sided", "larger"):
        result += 1 - _nct_cdf(df, nc, float(stdtrit(df, 1 - level)))
    if alternative in ("two-sided", "smaller"):
        result += _nct_cdf(df, nc, float(stdtrit(df, level)))
    return min(max(result, 0.0), 1.0)


def _nct_cdf(df: float, nc: float, t: float) -> float:
    """P(T <= t) for T noncentral t(df, nc): nctdtr, its mirror image, or quadrature where both are NaN."""
    from scipy.special import nctdtr

    value = float(nctdtr(df, nc, t))
    if math.isfinite(value):
        return min(max(value, 0.0), 1.0)
    value = 1 - float(nctdtr(df, -nc, -t))
    if math.isfinite(value):
        return min(max(value, 0.0), 1.0)
    return _nct_cdf_by_quadrature(df, nc, t)


def _nct_cdf_by_quadrature(df: float, nc: float, t: float) -> float:
    """P(T <= t) = E[Phi(t sqrt(V / df) - nc)], V ~ chi2(df), integrated over V's quantiles u in (0, 1).

    Examples
    --------
    >>> from scipy.special import nctdtr
    >>> abs(_nct_cdf_by_quadrature(4, 2.0, 1.5) - float(nctdtr(4, 2.0, 1.5))) < 1e-8
    True
    """
    from scipy.integrate import quad
    from scipy.special import chdtri, ndtr

    def integrand(u: float) -> float:
        return float(ndtr(t * math.sqrt(float(chdtri(df, u)) / df) - nc))

    value, _ = quad(integrand, 0.0, 1.0, limit=200, epsabs=1e-12, points=[1e-6, 0.5, 1 - 1e-6])
    if not math.isfinite(value):  # cannot check: fail loudly rather than plan with NaN
        raise InvalidParameterError(
            f"the noncentral t distribution cannot be evaluated at df={df}, noncentrality={nc:g}"
        )
    return min(max(value, 0.0), 1.0)


def _smallest_n(enough: Any, most: int) -> int:
    """The smallest n >= 2 with ``enough(n)`` (monotone in n): doubling, then bisection."""
    high = 2
    while not enough(high):
        if high >= most:
            raise InvalidParameterError(f"more than {most:,} pairs needed: the difference is too small")
        high = min(2 * high, most)
    low = high // 2  # the doubling step before: not enough (or 1, below the smallest n)
    while high - low > 1:  # enough(high) and not enough(low)
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


# --------------------------------------------------------------------------- labels


def _labels(pilot: Any, prediction: Any, label: Any, width: Any, rows: Any, alpha: float) -> pl.DataFrame:
    if pilot is None:
        raise validate.fail("pilot", "a frame with prediction and label columns for width=", pilot)
    prediction = validate.column_name(prediction, "prediction")
    label = validate.column_name(label, "label")
    width = validate.number(width, "width", minimum=0.0, inclusive=False)
    rows = None if rows is None else validate.integer(rows, "rows", minimum=2)
    df = read_columns(pilot, [prediction, label])
    y = check_labels(df[label], label, real=True)
    f = _check_predictions(df[prediction], prediction)
    m = moments(np.zeros(y.size, dtype=np.int64), y, f, 1)
    if m.n[0] < 2:
        raise SchemaError("the pilot needs at least 2 labelled rows", column=label, found=f"{m.n[0]}")
    if m.s_yy[0] <= _NO_SPREAD**2 * m.n[0] * max(float(np.nanmax(np.abs(y))), 1.0) ** 2:
        raise SchemaError(
            "the pilot's labels are all equal, so their spread (0) would make any number of labels look "
            "enough; label more pilot rows, until both outcomes (or several values) appear",
            column=label,
            expected="labelled rows that differ",
            found=f"{m.n[0]} labels, all {m.y_mean[0]:g}",
        )
    from scipy.special import ndtri

    half = width / 2 / float(ndtri(1 - alpha / 2))
    plans = [_plan(m, method, half**2, rows) for method in ("classical", "ppi", "ppi++")]
    return pl.DataFrame(
        {
            "method": ["classical", "ppi", "ppi++"],
            "labels": [p[0] for p in plans],
            "unlabeled": [None if rows is None or p[0] is None else rows - p[0] for p in plans],
            "lambda": [p[1] for p in plans],
        },
        schema={"method": pl.String, "labels": pl.Int64, "unlabeled": pl.Int64, "lambda": pl.Float64},
    )


def _plan(m: Moments, method: str, target: float, rows: int | None) -> tuple[int | None, float | None]:
    """(labels, lambda) for ``method``: the fewest labels whose variance is at most ``target``."""
    var_f = (m.s_ff[0] + m.s_uu[0] + _between(m)) / (m.n[0] + m.n_unlabeled[0])  # all predictions, population
    if rows is None:  # unlimited unlabelled rows: the imputed term vanishes, 1 + n/N -> 1
        lam = {"classical": 0.0, "ppi": 1.0, "ppi++": _limit_lambda(m)}[method]
        rectifier = (m.s_yy[0] - 2 * lam * m.s_yf[0] + lam**2 * m.s_ff[0]) / m.n[0]
        return max(2, math.ceil(rectifier / target - 1e-9)), lam
    n = np.arange(2, rows + 1)
    big_n = rows - n
    if method == "classical":
        lam = np.zeros(n.size)
    elif method == "ppi":
        lam = np.where(big_n > 0, 1.0, np.nan)
    else:
        lam = ppi_lambda(m, n=n, n_unlabeled=big_n)
    rectifier = (m.s_yy[0] - 2 * lam * m.s_yf[0] + lam**2 * m.s_ff[0]) / m.n[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = rectifier / n + np.where(lam == 0, 0.0, lam**2 * var_f / big_n)
    ok = np.flatnonzero(variance <= target * (1 + 1e-12))
    return (None, None) if ok.size == 0 else (int(n[ok[0]]), float(lam[ok[0]]))


def _between(m: Moments) -> float:
    """The between-set part of the spread of all predictions (labelled and unlabelled means apart)."""
    if m.n_unlabeled[0] == 0:
        return 0.0
    total = m.n[0] + m.n_unlabeled[0]
    grand = (m.n[0] * m.f_mean[0] + m.n_unlabeled[0] * m.u_mean[0]) / total
    return float(m.n[0] * (m.f_mean[0] - grand) ** 2 + m.n_unlabeled[0] * (m.u_mean[0] - grand) ** 2)


def _limit_lambda(m: Moments) -> float:
    """PPI++'s lambda as the unlabelled rows grow without bound (``n / N`` -> 0)."""
    return float(ppi_lambda(m, n=np.zeros(1), n_unlabeled=np.ones(1))[0])
