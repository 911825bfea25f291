"""Resampling kernels over many segments at once: bootstrap means and sign-flip nulls.

Segments are runs of a flat value array (``starts``, ``counts``), for example the
paired differences of every (metric, slice) of a comparison. Resamples are weight
matrices shared by all segments (segment ``g`` uses the first ``counts[g]`` columns),
so one matrix product per block of resamples and columns scores every segment:
the work is rows x resamples multiply-adds in BLAS, never a loop over rows.
Sharing the weights makes segments over the same rows (two metrics of one sample)
resampled jointly; each segment's own resampling distribution is unchanged.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bootstrap_means", "sign_flip_means", "exact_sign_flip_means"]

_RESAMPLE_BLOCK = 256
_COLUMN_BLOCK = 16_384


def _blocks(values: np.ndarray, starts: np.ndarray, counts: np.ndarray, column_start: int, column_stop: int):
    """Rows of the active segments' values in columns [start, stop), zero-padded, and their segment numbers."""
    active = np.flatnonzero(counts > column_start)
    width = column_stop - column_start
    block = np.zeros((active.size, width))
    if active.size:
        length = np.minimum(counts[active], column_stop) - column_start
        rows = np.repeat(np.arange(active.size), length)
        cols = np.arange(length.sum()) - np.repeat(np.cumsum(length) - length, length)
        block[rows, cols] = values[np.repeat(starts[active] + column_start, length) + cols]
    return active, block


def _resample(values, starts, counts, n_resamples, draw, with_denominator):
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    n_segments = counts.size
    total = np.zeros((n_segments, n_resamples))
    weight = np.zeros((n_segments, n_resamples))
    n_max = int(counts.max()) if n_segments else 0
    column_blocks = [(c, min(c + _COLUMN_BLOCK, n_max)) for c in range(0, n_max, _COLUMN_BLOCK)]
    for r0 in range(0, n_resamples, _RESAMPLE_BLOCK):
        r1 = min(r0 + _RESAMPLE_BLOCK, n_resamples)
        for c0, c1 in column_blocks:
            weights = draw((r1 - r0, c1 - c0))
            active, block = _blocks(values, starts, counts, c0, c1)
            total[active, r0:r1] += block @ weights.T
            if with_denominator:
                # sum of each active segment's weights inside this column block
                prefix = np.cumsum(weights, axis=1)
                last = np.minimum(counts[active], c1) - c0 - 1
                weight[active, r0:r1] += prefix[:, last].T
    return total, weight


def bootstrap_means(
    values: np.ndarray, starts: np.ndarray, counts: np.ndarray, n_resamples: int, seed: int | None
) -> np.ndarray:
    """Bootstrap means of each segment, shape (segments, n_resamples); NaN for an empty resample.

    Each resample weights every value by an independent Poisson(1) count (the Poisson
    bootstrap, the large-sample form of drawing n values with replacement) and takes
    the weighted mean. A resample whose weights are all zero (probability e^-n) is NaN.

    Examples
    --------
    >>> import numpy as np
    >>> means = bootstrap_means(np.array([0.0, 1.0, 5.0]), np.array([0, 2]), np.array([2, 1]), 1000, seed=1)
    >>> means.shape, bool(np.nanmax(means[0]) <= 1.0), set(np.unique(means[1][~np.isnan(means[1])]).tolist())
    ((2, 1000), True, {5.0})
    """
    rng = np.random.default_rng(seed)
    total, weight = _resample(
        values, starts, counts, n_resamples, lambda shape: rng.poisson(1.0, size=shape).astype(np.float64), True
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight > 0, total / weight, np.nan)


def sign_flip_means(
    values: np.ndarray, starts: np.ndarray, counts: np.ndarray, n_resamples: int, seed: int | None
) -> np.ndarray:
    """Means of each segment under random sign flips, shape (segments, n_resamples).

    Examples
    --------
    >>> import numpy as np
    >>> null = sign_flip_means(np.array([1.0, 1.0]), np.array([0]), np.array([2]), 500, seed=0)
    >>> sorted(set(null[0].tolist()))
    [-1.0, 0.0, 1.0]
    """
    rng = np.random.default_rng(seed)

    def draw(shape: tuple[int, int]) -> np.ndarray:
        return rng.integers(0, 2, size=shape, dtype=np.int8).astype(np.float64) * 2.0 - 1.0

    total, _ = _resample(values, starts, counts, n_resamples, draw, False)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / np.asarray(counts, dtype=np.float64)[:, None]


def exact_sign_flip_means(values: np.ndarray) -> np.ndarray:
    """Means of one small segment under all 2^n sign vectors .

    Examples
    --------
    >>> import numpy as np
    >>> exact_sign_flip_means(np.array([1.0, 3.0])).tolist()
    [2.0, -1.0, 1.0, -2.0]
    """
    n = values.size
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[::-1]) & 1
    signs = 1.0 - 2.0 * bits
    return signs @ values / n
