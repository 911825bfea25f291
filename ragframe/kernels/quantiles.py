"""Quantiles of many segments at once, with numpy's method semantics.

Values are sorted within segments and laid out one segment after another
(``starts``, ``counts``); every quantile of every segment is found with one
vectorised gather, never a loop over segments. The continuous methods follow
numpy's virtual-index rules and its two-sided linear interpolation exactly, so the
results equal ``numpy.quantile(segment, q, method=...)`` bit for bit.
"""

from __future__ import annotations

import numpy as np

from ragframe.exceptions import InvalidParameterError

__all__ = ["QUANTILE_METHODS", "segment_quantiles", "check_method", "lerp", "virtual_index"]

# (alpha, beta) of the Hyndman & Fan continuous methods, as numpy defines them
_CONTINUOUS = {
    "linear": (1.0, 1.0),
    "interpolated_inverted_cdf": (0.0, 1.0),
    "hazen": (0.5, 0.5),
    "weibull": (0.0, 0.0),
    "median_unbiased": (1 / 3.0, 1 / 3.0),
    "normal_unbiased": (3 / 8.0, 3 / 8.0),
}
QUANTILE_METHODS: tuple[str, ...] = (*_CONTINUOUS, "lower", "higher", "midpoint", "nearest")


def check_method(method: str) -> str:
    """Return ``method`` or raise :class:`InvalidParameterError` listing the supported ones."""
    if method not in QUANTILE_METHODS:
        raise InvalidParameterError(
            f"{{percentile_method}} is not supported; use one of {list(QUANTILE_METHODS)}",
            mentions={"percentile_method": f"{method!r}"},
        )
    return method


def lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """numpy's interpolation: ``a + (b - a) t``, computed from ``b`` when ``t >= 0.5``."""
    diff = b - a
    out = a + diff * t
    high = t >= 0.5
    out[high] = (b - diff * (1 - t))[high]
    return out


def virtual_index(n: np.ndarray, q: float, method: str) -> np.ndarray:
    if method in _CONTINUOUS:
        if method == "linear":
            return (n - 1) * q
        alpha, beta = _CONTINUOUS[method]
        return n * q + (alpha + q * (1 - alpha - beta)) - 1
    if method == "midpoint":
        return 0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q))
    raise AssertionError(method)  # the index methods are handled by the caller


def segment_quantiles(
    values: np.ndarray, starts: np.ndarray, counts: np.ndarray, q: float, method: str = "linear"
) -> np.ndarray:
    """The ``q`` quantile of each segment ``values[starts[i] : starts[i] + counts[i]]``.

    Each segment must be sorted ascending; empty segments give NaN.

    Examples
    --------
    >>> import numpy as np
    >>> values = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 20.0])
    >>> segment_quantiles(values, np.array([0, 4]), np.array([4, 2]), 0.5).tolist()
    [2.5, 15.0]
    >>> segment_quantiles(values, np.array([0, 4]), np.array([4, 2]), 0.95, "higher").tolist()
    [4.0, 20.0]
    """
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    out = np.full(counts.shape, np.nan)
    has = counts > 0
    if not has.any():
        return out
    n = counts[has].astype(np.float64)
    base = starts[has]
    last = counts[has] - 1
    if method in ("lower", "higher", "nearest"):
        position = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}[method]((n - 1) * q).astype(np.int64)
        out[has] = values[base + np.clip(position, 0, last)]
        return out
    virtual = virtual_index(n, q, method)
    previous = np.floor(virtual)
    above = virtual >= n - 1
    below = virtual < 0
    prev_i = np.where(above, last, np.where(below, 0, previous.astype(np.int64)))
    next_i = np.where(above, last, np.where(below, 0, previous.astype(np.int64) + 1))
    previous_f = np.where(above, -1.0, np.where(below, 0.0, previous))
    gamma = virtual - previous_f
    if method == "midpoint":
        gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
    out[has] = lerp(values[base + prev_i], values[base + next_i], gamma)
    return out
