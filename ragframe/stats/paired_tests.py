"""The paired-test kernel: paired differences laid out as segments, and every test on all segments at once.

:class:`Segments` holds the paired differences ``b - a`` of every (metric, slice) cell of a
comparison, cell after cell in one flat array, with each cell's moments. The tests
(:func:`t_test`, :func:`wilcoxon`, :func:`permutation`, :func:`bootstrap`, chosen by
:func:`run_test`) compute every cell's statistic at once (bincount, segment ranks, shared
resampling matrices), never in a loop over rows; :func:`adjust_p_values` corrects the
family and :func:`result_frame` lays out the result. :func:`ragframe.compare` builds the
segments from two frames in memory, :func:`ragframe.distributed.compare_datasets` from
moments merged on a cluster (:meth:`Segments.from_moments`). The names are public within
the package; users call :func:`ragframe.compare`.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.kernels.resampling import bootstrap_means, exact_sign_flip_means, percentile_interval, sign_flip_means
from ragframe.public import public

__all__ = [
    "COMPARE_COLUMNS",
    "CORRECTIONS",
    "TESTS",
    "Segments",
    "adjust_p_values",
    "bootstrap",
    "expanded_tail",
    "permutation",
    "result_frame",
    "run_test",
    "t_test",
    "wilcoxon",
]

#: The paired tests, by name.
TESTS = ("t", "wilcoxon", "permutation", "bootstrap")
#: The multiple-testing corrections (None: none).
CORRECTIONS = (None, "holm", "bonferroni", "fdr_bh")
#: The columns of a comparison, after the slice columns (and before ``test``).
COMPARE_COLUMNS = [
    "metric",
    "n",
    "mean_a",
    "mean_b",
    "delta",
    "ci_low",
    "ci_high",
    "statistic",
    "p_value",
    "p_adjusted",
    "significant",
    "winner",
    "effect_size",
]
_EPS = np.finfo(np.float64).eps * 100  # scipy's tolerance for ties in a null distribution
_RANK_CHUNK = 1 << 20  # pairs per sort when ranking |d| within cells


@public
def adjust_p_values(p_values: np.ndarray, method: str | None) -> np.ndarray:
    """Adjust a family of p-values like ``statsmodels.stats.multitest.multipletests``.

    NaN entries are left out of the family and stay NaN.

    Parameters
    ----------
    p_values : array-like of float
        The family of p-values (NaN for a test that gave none).
    method : {"holm", "bonferroni", "fdr_bh", None}
        Holm's step-down, Bonferroni, or Benjamini-Hochberg's step-up false discovery
        rate; None returns the p-values unchanged.

    Returns
    -------
    numpy.ndarray
        Float64 adjusted p-values (at most 1), in the input's order; a new array.

    Examples
    --------
    >>> import numpy as np
    >>> adjust_p_values(np.array([0.01, 0.04, 0.03]), "holm").round(4).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_p_values(np.array([0.01, 0.04, 0.03]), "fdr_bh").round(4).tolist()
    [0.03, 0.04, 0.04]
    >>> adjust_p_values(np.array([0.01, np.nan, 0.03]), "bonferroni").round(4).tolist()
    [0.02, nan, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = p.copy()
    if method is None:
        return out
    validate.choice(method, "correction", CORRECTIONS)
    keep = ~np.isnan(p)
    family = p[keep]
    m = family.size
    if m == 0:
        return out
    if method == "bonferroni":
        adjusted = np.minimum(family * m, 1.0)
    else:
        order = np.argsort(family, kind="stable")
        ranked = family[order]
        if method == "holm":
            stepped = np.maximum.accumulate(np.minimum((m - np.arange(m)) * ranked, 1.0))
        else:  # fdr_bh: step-up from the largest p-value
            stepped = np.minimum.accumulate((m / np.arange(1, m + 1) * ranked)[::-1])[::-1]
            stepped = np.minimum(stepped, 1.0)
        adjusted = np.empty(m)
        adjusted[order] = stepped
    out[keep] = adjusted
    return out


@cache
def _wilcoxon_pmf(n: int) -> np.ndarray:
    """Null distribution of the signed-rank sum W+ for n untied, non-zero differences."""
    pmf = np.ones(1)
    for k in range(1, n + 1):
        previous = pmf
        pmf = np.zeros(k * (k + 1) // 2 + 1)
        pmf[: previous.size] = previous * 0.5
        pmf[-previous.size :] += previous * 0.5
    return pmf


def _wilcoxon_exact_p(r_plus: float, n: int) -> float:
    pmf = _wilcoxon_pmf(n)
    mean = n * (n + 1) / 4
    k_sf, k_cdf = int(np.floor(r_plus)), int(np.ceil(r_plus))
    sf = pmf[k_sf:].sum() if k_sf <= mean else 1 - pmf[:k_sf].sum()
    cdf = pmf[: k_cdf + 1].sum() if k_cdf <= mean else 1 - pmf[k_cdf + 1 :].sum()
    return float(np.clip(2 * min(sf, cdf), 0, 1))


def _two_sided_p(null: np.ndarray, observed: np.ndarray, adjustment: int, scale: np.ndarray) -> np.ndarray:
    """scipy.stats.permutation_test's two-sided p-value from null rows (segments x resamples).

    Null values within a relative 1e-14 of the observed statistic count as ties, as in scipy,
    but relative to the larger of the statistic and the cell's mean |difference|: a statistic
    that is 0 up to rounding (paired differences summing to 0) ties with null values that
    are 0 up to another rounding, so such a cell gets p = 1 whatever the summation order.
    """
    gamma = (_EPS * np.maximum(np.abs(observed), scale))[:, None]
    total = null.shape[1] if null.ndim == 2 else 0
    less = (np.count_nonzero(null <= observed[:, None] + gamma, axis=1) + adjustment) / (total + adjustment)
    greater = (np.count_nonzero(null >= observed[:, None] - gamma, axis=1) + adjustment) / (total + adjustment)
    return np.clip(2 * np.minimum(less, greater), 0.0, 1.0)


class Segments:
    """Paired differences of every (metric, group) cell, laid out cell after cell, with per-cell moments.

    Built one metric at a time (:meth:`add`), so only the differences of all metrics
    are kept (not both sides), and the per-cell sums come from small bincounts; or, for the
    t test only, from each cell's merged moments (:meth:`from_moments`). Cells are
    metric-major: cell ``metric * n_groups + group``.

    Parameters
    ----------
    n_metrics, n_groups : int
        The metrics compared and the slices (1 without slices).

    Examples
    --------
    >>> import numpy as np
    >>> seg = Segments(1, 1)
    >>> seg.add(0, np.zeros(3, dtype=np.int64), np.array([0.2, 0.5, 0.4]), np.array([0.6, 0.9, 0.7]))
    >>> seg = seg.finish()
    >>> seg.n.tolist(), seg.delta.round(4).tolist(), seg.d.round(4).tolist()
    ([3], [0.3667], [0.4, 0.4, 0.3])
    """

    def __init__(self, n_metrics: int, n_groups: int) -> None:
        self.n_groups = n_groups
        self.n_cells = n_metrics * n_groups
        self.n = np.zeros(self.n_cells, dtype=np.int64)
        self.mean_a = np.full(self.n_cells, np.nan)
        self.mean_b = np.full(self.n_cells, np.nan)
        self.delta = np.full(self.n_cells, np.nan)
        self.sd = np.full(self.n_cells, np.nan)
        self._cells: list[np.ndarray] = []
        self._differences: list[np.ndarray] = []

    def add(self, metric: int, group: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Add one metric's pairs; ``group`` is the (non-decreasing) group code of each pair."""
        groups = self.n_groups
        cells = slice(metric * groups, (metric + 1) * groups)
        d = b - a
        n = np.bincount(group, minlength=groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.mean_a[cells] = np.bincount(group, a, groups) / n
            self.mean_b[cells] = np.bincount(group, b, groups) / n
            delta = np.bincount(group, d, groups) / n
            centred = d - delta[group]
            sd = np.sqrt(np.bincount(group, centred * centred, groups) / (n - 1))
        sd[n < 2] = np.nan
        self.n[cells], self.delta[cells], self.sd[cells] = n, delta, sd
        self._cells.append((group + metric * groups).astype(np.int32))
        self._differences.append(d)

    @classmethod
    def from_moments(
        cls,
        n_metrics: int,
        n_groups: int,
        cells: np.ndarray,
        n: np.ndarray,
        sum_a: np.ndarray,
        sum_b: np.ndarray,
        mean_d: np.ndarray,
        m2_d: np.ndarray,
    ) -> Segments:
        """Segments of the given cells from their moments (pairs, sums of a and b, mean and m2 of ``b - a``).

        The differences themselves are absent (``d`` is empty): only :func:`t_test` can run on them.
        ``mean_d`` and ``m2_d`` are NaN for a cell without pairs.
        """
        seg = cls(n_metrics, n_groups)
        seg.n[cells] = n
        with np.errstate(invalid="ignore", divide="ignore"):
            seg.mean_a[cells] = sum_a / n
            seg.mean_b[cells] = sum_b / n
            seg.delta[cells] = mean_d
            sd = np.sqrt(m2_d / (n - 1))
        sd[n < 2] = np.nan
        seg.sd[cells] = sd
        return seg.finish()

    def finish(self) -> Segments:
        """Concatenate the metrics: ``cell`` (non-decreasing), ``d`` and each cell's ``starts``."""
        self.cell = np.concatenate(self._cells) if self._cells else np.zeros(0, dtype=np.int32)
        self.d = np.concatenate(self._differences) if self._differences else np.zeros(0)
        self._cells, self._differences = [], []
        self.starts = np.concatenate([[0], np.cumsum(self.n)[:-1]]).astype(np.int64)
        return self


def t_test(seg: Segments, confidence: float) -> tuple[np.ndarray, ...]:
    """Paired Student t of every cell (scipy.stats.ttest_rel): (statistic, p, ci_low, ci_high).

    All differences equal: the statistic is NaN and p is 1 when they are 0, else 0 (scipy
    gives NaN); fewer than 2 pairs: p is NaN. The interval covers ``confidence``. The t
    distribution is ``scipy.special``'s ``stdtr``/``stdtrit``, which ``scipy.stats.t.sf``/``ppf``
    call (the same values), without importing ``scipy.stats`` (about 0.5 s).
    """
    from scipy.special import stdtr, stdtrit

    n = seg.n.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = seg.sd / np.sqrt(n)
        statistic = seg.delta / se
        p = 2 * stdtr(n - 1, -np.abs(statistic))
        half = stdtrit(n - 1, 0.5 + confidence / 2) * se
    constant = (seg.sd == 0) & (seg.n >= 2)
    statistic[constant] = np.nan
    p[constant] = np.where(seg.delta[constant] == 0, 1.0, 0.0)
    p[seg.n < 2] = np.nan
    return statistic, p, seg.delta - half, seg.delta + half


def wilcoxon(seg: Segments) -> tuple[np.ndarray, np.ndarray]:
    """Wilcoxon signed-rank (zero_method='wilcox'), choosing exact/permutation/normal as scipy's 'auto'."""
    from scipy import stats  # imported on use: scipy.stats takes ~0.8 s to import

    nonzero = seg.d != 0
    n_cells = seg.n_cells
    differences = seg.d[nonzero]
    cells_in = seg.cell[nonzero]
    # sort by (cell, |d|) in chunks of whole cells: each chunk by |d| (multithreaded), then a stable
    # radix sort by its cell offsets; runs of equal (cell, |d|) are then the ties
    per_cell = np.bincount(cells_in, minlength=n_cells)
    first_row = np.r_[0, np.cumsum(per_cell)]
    chunk_of_cell = first_row[:-1] // _RANK_CHUNK
    edges = np.r_[first_row[np.r_[0, np.flatnonzero(np.diff(chunk_of_cell)) + 1]], differences.size]
    order = np.empty(differences.size, dtype=np.int64)
    for lo, hi in itertools.pairwise(edges):  # a few chunks of about a million pairs
        if hi <= lo:
            continue
        by_value = pl.Series(np.abs(differences[lo:hi])).arg_sort().to_numpy()
        offsets = cells_in[lo:hi][by_value] - cells_in[lo]
        by_cell = np.argsort(offsets.astype(np.int16 if offsets[-1] < 2**15 else np.int64), kind="stable")
        order[lo:hi] = lo + by_value[by_cell]
    cells = cells_in[order]
    values = np.abs(differences[order])
    positive = differences[order] > 0
    size = values.size
    new_run = np.r_[True, (cells[1:] != cells[:-1]) | (values[1:] != values[:-1])] if size else np.zeros(0, bool)
    run_start = np.flatnonzero(new_run)
    run_length = np.diff(np.r_[run_start, size]).astype(np.float64)
    count = np.bincount(cells, minlength=n_cells).astype(np.float64)
    cell_first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    run_rank = run_start - cell_first[cells[run_start]] + (run_length + 1) / 2  # average rank of a tie run
    ranks = np.repeat(run_rank, run_length.astype(np.int64))
    r_plus = np.bincount(cells, ranks * positive, n_cells).astype(np.float64)
    r_minus = np.bincount(cells, ranks * ~positive, n_cells).astype(np.float64)
    tie_correct = np.bincount(cells[run_start], run_length**3 - run_length, n_cells)
    has_ties = np.bincount(cells[run_start], run_length > 1, n_cells) > 0
    has_zeros = count < seg.n
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt((count * (count + 1) * (2 * count + 1) - tie_correct / 2) / 24)
        z = (r_plus - count * (count + 1) / 4) / se
        p = 2 * stats.norm.sf(np.abs(z))
    small = np.flatnonzero((seg.n <= 50) & (count > 0))
    for c in small:  # exact or enumerated p for the few cells of at most 50 pairs, as scipy's method='auto'
        if not (has_ties[c] or has_zeros[c]):
            p[c] = _wilcoxon_exact_p(r_plus[c], int(count[c]))
        elif seg.n[c] <= 13:
            cell_ranks = ranks[cell_first[c] : cell_first[c] + int(count[c])]
            bits = (np.arange(2**cell_ranks.size)[:, None] >> np.arange(cell_ranks.size)) & 1
            null = bits @ cell_ranks
            p[c] = _two_sided_p(null[None, :], np.array([r_plus[c]]), 0, np.zeros(1))[0]
    p[(count == 0) & (seg.n > 0)] = 1.0  # every difference is zero
    p[seg.n == 0] = np.nan
    statistic = np.minimum(r_plus, r_minus)
    statistic[seg.n == 0] = np.nan
    return statistic, p


def permutation(seg: Segments, n_resamples: int, seed: int | None) -> np.ndarray:
    """Two-sided sign-flip test of the mean difference of every cell (p); exact when 2^n <= n_resamples."""
    p = np.full(seg.n_cells, np.nan)
    cumulative = np.concatenate([[0.0], np.cumsum(np.abs(seg.d))])
    scale = (cumulative[seg.starts + seg.n] - cumulative[seg.starts]) / np.maximum(seg.n, 1)  # mean |d| per cell
    exact = (seg.n > 0) & (2.0 ** np.minimum(seg.n, 60) <= n_resamples)
    for c in np.flatnonzero(exact):  # cells of at most log2(n_resamples) pairs
        values = seg.d[seg.starts[c] : seg.starts[c] + seg.n[c]]
        p[c] = _two_sided_p(exact_sign_flip_means(values)[None, :], np.array([seg.delta[c]]), 0, scale[c : c + 1])[0]
    sampled = np.flatnonzero((seg.n > 0) & ~exact)
    if sampled.size:
        null = sign_flip_means(seg.d, seg.starts[sampled], seg.n[sampled], n_resamples, seed)
        p[sampled] = _two_sided_p(null, seg.delta[sampled], 1, scale[sampled])
    return p


def expanded_tail(n: np.ndarray, tail: float) -> np.ndarray:
    """Hesterberg's expanded percentile tail: ``Phi(-sqrt(n / (n - 1)) t_{n-1}(1 - tail))`` (NaN below 2).

    The percentile bootstrap interval of a mean is too narrow on small samples: it uses
    the values' spread divided by ``n`` (not ``n - 1``) and normal rather than t
    quantiles. Reading its quantiles at this smaller tail instead of ``tail`` widens it by
    both factors (Hesterberg, *The American Statistician* 69(4), 2015, section 4.2).

    Examples
    --------
    >>> expanded_tail(np.array([2, 10, 1000]), 0.025).round(6).tolist()  # n = 2: [min, max] of the resamples
    [0.0, 0.008551, 0.024804]
    """
    from scipy.special import ndtr, stdtrit

    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = ndtr(-np.sqrt(n / (n - 1)) * stdtrit(n - 1, 1 - tail))
    return np.where(n >= 2, out, np.nan)


def bootstrap(seg: Segments, n_resamples: int, seed: int | None, confidence: float) -> tuple[np.ndarray, ...]:
    """Expanded percentile bootstrap of the mean difference: (p, ci_low, ci_high); NaN below 2 pairs.

    The interval holds the bootstrap means' quantiles at :func:`expanded_tail` (not
    ``(1 - confidence) / 2``), and p is the matching two-sided level: with ``q = 2
    min(P*(<= 0) + 1, P*(>= 0) + 1) / (n_resamples + 1)`` (the percentile bootstrap's p),
    ``p = 2 stdtr(n - 1, sqrt((n - 1) / n) ndtri(q / 2))``, so ``p < alpha`` exactly when
    the expanded ``1 - alpha`` interval leaves out 0. On many pairs both are the percentile
    bootstrap's; on few they are wider, and one pair gives no p (as the t test). A tail
    below ``1 / (n_resamples + 1)`` lies beyond the resamples' most extreme values, so the
    interval is NaN then (2 pairs always; 3 at the default 9,999 resamples and 95%).
    """
    from scipy.special import ndtri, stdtr

    means = bootstrap_means(seg.d, seg.starts, seg.n, n_resamples, seed)
    valid = ~np.isnan(means)
    total = valid.sum(axis=1)
    n = seg.n.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        less = ((means <= 0) & valid).sum(axis=1)
        greater = ((means >= 0) & valid).sum(axis=1)
        q = np.clip(2 * np.minimum(less + 1, greater + 1) / (total + 1), 0.0, 1.0)
        p = np.clip(2 * stdtr(n - 1, np.sqrt((n - 1) / n) * ndtri(q / 2)), 0.0, 1.0)
    tail = expanded_tail(seg.n, (1 - confidence) / 2)
    tail[tail * (total + 1) < 1] = np.nan  # beyond the resamples' reach (2 or 3 pairs): no interval
    low, high = np.full(seg.n_cells, np.nan), np.full(seg.n_cells, np.nan)
    for level in np.unique(tail[~np.isnan(tail)]).tolist():  # one quantile pair per distinct cell size
        cells = np.flatnonzero(tail == level)
        low[cells], high[cells] = percentile_interval(means[cells], 1 - 2 * level)
    p[seg.n < 2] = np.nan
    return p, low, high


def run_test(seg: Segments, test: str, confidence: float, n_resamples: int, seed: int | None) -> tuple[np.ndarray, ...]:
    """(statistic, p, ci_low, ci_high) of every cell; the interval is t's except for the bootstrap.

    Examples
    --------
    >>> import numpy as np
    >>> seg = Segments(1, 1)
    >>> seg.add(0, np.zeros(4, dtype=np.int64), np.zeros(4), np.array([0.1, 0.2, 0.3, 0.4]))
    >>> statistic, p, low, high = run_test(seg.finish(), "wilcoxon", 0.95, 999, 0)
    >>> float(statistic[0]), float(p[0])  # all four differences positive: exact p = 2 / 2^4
    (0.0, 0.125)
    """
    statistic, p, ci_low, ci_high = t_test(seg, confidence)
    if test == "wilcoxon":
        statistic, p = wilcoxon(seg)
    elif test == "permutation":
        statistic, p = seg.delta.copy(), permutation(seg, n_resamples, seed)
    elif test == "bootstrap":
        statistic = seg.delta.copy()
        p, ci_low, ci_high = bootstrap(seg, n_resamples, seed, confidence)
    return statistic, p, ci_low, ci_high


def result_frame(
    seg: Segments,
    names: list[str],
    statistic: np.ndarray,
    p: np.ndarray,
    adjusted: np.ndarray,
    ci_low: np.ndarray,
    ci_high: np.ndarray,
    alpha: float,
) -> pl.DataFrame:
    """One row per cell, group-major with metrics in the order asked; ``_group`` holds the slice code."""
    n_groups = seg.n_groups
    significant = np.nan_to_num(adjusted, nan=1.0) < alpha
    winner = np.where(significant & (seg.delta > 0), "b", np.where(significant & (seg.delta < 0), "a", "tie"))
    with np.errstate(invalid="ignore", divide="ignore"):
        effect = np.where(seg.sd > 0, seg.delta / seg.sd, np.nan)
    out = pl.DataFrame(
        {
            "_group": np.tile(np.arange(n_groups), len(names)),
            "_metric": np.repeat(np.arange(len(names)), n_groups),
            "metric": np.repeat(np.array(names, dtype=object), n_groups).astype(str),
            "n": seg.n.astype(np.int64),
            "mean_a": seg.mean_a,
            "mean_b": seg.mean_b,
            "delta": seg.delta,
            "ci_low": ci_low,
            "ci_high": ci_high,
            "statistic": statistic,
            "p_value": p,
            "p_adjusted": adjusted,
            "significant": significant,
            "winner": winner.astype(str),
            "effect_size": effect,
        }
    ).with_columns(pl.col(pl.Float64).fill_nan(None))
    return out.sort("_group", "_metric")  # rows group-major, metrics in the order asked
