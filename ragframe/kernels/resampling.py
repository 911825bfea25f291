"""Resampling kernels over many segments at once: bootstrap means and sign-flip nulls.

Segments are runs of a flat value array (``starts``, ``counts``), for example the
paired differences of every (metric, slice) of a comparison. Bootstrap resamples are
weight matrices shared by all segments (segment ``g`` uses the first ``counts[g]``
columns), so one matrix product per block of resamples and columns scores every
segment: rows x resamples multiply-adds in BLAS, never a loop over rows. Sign flips
do the same where many segments share a column block, and use random bytes with table
look-ups (eight values a look-up) where few do.
Sharing the weights makes segments over the same rows (two metrics of one sample)
resampled jointly; each segment's own resampling distribution is unchanged.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bootstrap_means", "percentile_interval", "poisson_weights", "sign_flip_means", "exact_sign_flip_means"]

_RESAMPLE_BLOCK = 256
#: Bootstrap weights drawn at a time: resamples x columns (1 MB of float64, kept in cache).
_BOOT_RESAMPLE_BLOCK = 64
_BOOT_COLUMN_BLOCK = 2048
_COLUMN_BLOCK = 16_384
#: Sign flips: a column block reached by at most this many segments uses byte tables, else a +-1 matrix product.
_TABLE_MAX_SEGMENTS = 8
_LOOKUP_BLOCK = 4_194_304  # table look-ups per resample step
#: Bit j of byte b, shape (8, 256): a group of eight values @ this = the sum of the values under each byte's bits.
_BYTE_BITS = ((np.arange(256)[None, :] >> np.arange(8)[:, None]) & 1).astype(np.float64)


def _poisson_tables() -> tuple[np.ndarray, np.ndarray]:
    """Poisson(1) by inversion of a 32-bit uniform: the CDF cut points, and a table by the uniform's high 16 bits.

    ``cuts[k]`` is ``round(2**32 P(K <= k))``, so ``K = #{k: u >= cuts[k]}`` for a uniform
    32-bit ``u``: every probability exact to 2**-32, K at most 12. ``table[h]`` is K for every
    ``u`` whose high 16 bits are ``h``, or NaN for the 8 of 65,536 values of ``h`` where a cut
    point falls inside (then the low 16 bits decide).
    """
    from math import exp, factorial

    cdf = np.cumsum([exp(-1.0) / factorial(k) for k in range(20)])
    cuts = np.minimum(np.round(cdf * 2.0**32), 2.0**32).astype(np.uint64)
    cuts = cuts[: int(np.searchsorted(cuts, 2**32)) + 1]
    first = np.arange(65536, dtype=np.uint64) << np.uint64(16)
    low, high = np.searchsorted(cuts, first, side="right"), np.searchsorted(cuts, first + 65535, side="right")
    return cuts, np.where(low == high, low, np.nan)


_POISSON_CUTS, _POISSON_TABLE = _poisson_tables()


def poisson_weights(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Independent Poisson(1) counts as float64 (inversion of 32-bit uniforms, :func:`_poisson_tables`).

    One uniform 16-bit draw and one table look-up per weight; the 2**-13 of draws whose
    high bits straddle a cut point draw their low 16 bits too. About 6x as fast as
    ``Generator.poisson(1.0)``, the same distribution to 2**-32 per count.

    Examples
    --------
    >>> w = poisson_weights(np.random.default_rng(0), (1000, 1000))
    >>> round(float(w.mean()), 2), round(float(w.var()), 2), bool((w == np.round(w)).all())
    (1.0, 1.0, True)
    """
    high = rng.integers(0, 65536, size=shape, dtype=np.uint16)
    weights = _POISSON_TABLE[high]
    straddle = np.flatnonzero(np.isnan(weights))
    if straddle.size:
        full = (high.ravel()[straddle].astype(np.uint64) << np.uint64(16)) | rng.integers(
            0, 65536, size=straddle.size, dtype=np.uint64
        )
        weights.ravel()[straddle] = np.searchsorted(_POISSON_CUTS, full, side="right")
    return weights


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


def _poisson_resample(values, starts, counts, n_resamples, rng):
    """Poisson-weighted sums of each segment and the sums of its weights, both (segments, n_resamples).

    Column blocks outside, resample blocks inside, both small (:data:`_BOOT_COLUMN_BLOCK` x
    :data:`_BOOT_RESAMPLE_BLOCK` weights, 1 MB): the weights are drawn, multiplied and summed
    while in cache, which on a loaded machine is several times faster than larger blocks.
    """
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    n_segments = counts.size
    total = np.zeros((n_segments, n_resamples))
    weight = np.zeros((n_segments, n_resamples))
    n_max = int(counts.max()) if n_segments else 0
    for c0 in range(0, n_max, _BOOT_COLUMN_BLOCK):
        c1 = min(c0 + _BOOT_COLUMN_BLOCK, n_max)
        active, block = _blocks(values, starts, counts, c0, c1)
        # each active segment's weights inside this block: one row of ones per distinct length
        lengths, which = np.unique(np.minimum(counts[active], c1) - c0, return_inverse=True)
        ones = (np.arange(c1 - c0)[None, :] < lengths[:, None]).astype(np.float64)
        for r0 in range(0, n_resamples, _BOOT_RESAMPLE_BLOCK):
            r1 = min(r0 + _BOOT_RESAMPLE_BLOCK, n_resamples)
            weights = poisson_weights(rng, (r1 - r0, c1 - c0))
            total[active, r0:r1] += block @ weights.T
            weight[active, r0:r1] += (ones @ weights.T)[which]
    return total, weight


def bootstrap_means(
    values: np.ndarray, starts: np.ndarray, counts: np.ndarray, n_resamples: int, seed: int | None
) -> np.ndarray:
    """Bootstrap means of each segment, shape (segments, n_resamples); NaN for an empty resample.

    Each resample weights every value by an independent Poisson(1) count (the Poisson
    bootstrap, the large-sample form of drawing n values with replacement; counts from
    :func:`poisson_weights`) and takes the weighted mean. A resample whose weights are all
    zero (probability e^-n) is NaN.

    Examples
    --------
    >>> import numpy as np
    >>> means = bootstrap_means(np.array([0.0, 1.0, 5.0]), np.array([0, 2]), np.array([2, 1]), 1000, seed=1)
    >>> means.shape, bool(np.nanmax(means[0]) <= 1.0), set(np.unique(means[1][~np.isnan(means[1])]).tolist())
    ((2, 1000), True, {5.0})
    """
    total, weight = _poisson_resample(values, starts, counts, n_resamples, np.random.default_rng(seed))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight > 0, total / weight, np.nan)


def percentile_interval(means: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each row of bootstrap means: (low, high), NaN resamples left out.

    The ``(1 - confidence) / 2`` and ``0.5 + confidence / 2`` quantiles (numpy's linear
    method) of each segment's resampled means, as :func:`bootstrap_means` returns them; a
    row of NaN only gives NaN.

    Examples
    --------
    >>> import numpy as np
    >>> low, high = percentile_interval(np.array([[0.0, 1.0, 2.0, 3.0, 4.0, np.nan]]), 0.5)
    >>> low.tolist(), high.tolist()
    ([1.0], [3.0])
    """
    if not means.size:
        return np.zeros(0), np.zeros(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.nanquantile(means, (1 - confidence) / 2, axis=1)
        high = np.nanquantile(means, 0.5 + confidence / 2, axis=1)
    return low, high


def sign_flip_means(
    values: np.ndarray, starts: np.ndarray, counts: np.ndarray, n_resamples: int, seed: int | None
) -> np.ndarray:
    """Means of each segment under random sign flips, shape (segments, n_resamples).

    Each resample flips every value's sign with probability 1/2, the signs shared by the
    segments (as :func:`bootstrap_means` shares its weights). Columns are taken in blocks;
    in a block that few segments reach (one long cell: a matrix-vector product, bound by
    drawing the signs) the signs are random bytes, eight values a byte, and a 256-entry
    table per group of eight values holds the sum of the values under each byte's bits, so
    a flipped sum is one look-up per eight values (``sum(sign * x) = sum(x) - 2 * sum(x
    where bit set)``); in a block that many segments share, a matrix of +-1 weights times
    the segments' values (one BLAS product scores them all).

    Examples
    --------
    >>> import numpy as np
    >>> null = sign_flip_means(np.array([1.0, 1.0]), np.array([0]), np.array([2]), 500, seed=0)
    >>> sorted(set(null[0].tolist()))
    [-1.0, 0.0, 1.0]
    """
    rng = np.random.default_rng(seed)
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    signed = np.zeros((counts.size, n_resamples))
    n_max = int(counts.max()) if counts.size else 0
    for c0 in range(0, n_max, _COLUMN_BLOCK):
        active, block = _blocks(values, starts, counts, c0, min(c0 + _COLUMN_BLOCK, n_max))
        flip = _flip_by_table if active.size <= _TABLE_MAX_SEGMENTS else _flip_by_product
        signed[active] += flip(block, n_resamples, rng)
    with np.errstate(invalid="ignore", divide="ignore"):
        return signed / counts.astype(np.float64)[:, None]


def _flip_by_product(block: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Sign-flipped sums of each row of ``block`` (rows x resamples): +-1 weight matrices, one product per block."""
    out = np.empty((block.shape[0], n_resamples))
    for r0 in range(0, n_resamples, _RESAMPLE_BLOCK):
        r1 = min(r0 + _RESAMPLE_BLOCK, n_resamples)
        weights = rng.integers(0, 2, size=(r1 - r0, block.shape[1]), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        out[:, r0:r1] = block @ weights.T
    return out


def _flip_by_table(block: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Sign-flipped sums of each row of ``block`` (rows x resamples): random bytes and 256-entry tables."""
    rows, width = block.shape
    groups = -(-width // 8)
    padded = np.zeros((rows, groups * 8))
    padded[:, :width] = block
    tables = (padded.reshape(rows, groups, 8) @ _BYTE_BITS).reshape(rows, groups * 256)
    offsets = np.arange(groups) * 256
    out = np.empty((rows, n_resamples))
    step = max(1, _LOOKUP_BLOCK // max(1, rows * groups))
    for r0 in range(0, n_resamples, step):
        r1 = min(r0 + step, n_resamples)
        signs = rng.integers(0, 256, size=(r1 - r0, groups), dtype=np.uint8)
        out[:, r0:r1] = np.take(tables, offsets + signs, axis=1).sum(axis=2)
    return block.sum(axis=1)[:, None] - 2.0 * out


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
