"""trec_eval 10.0's measures as kernels over whole runs: flat per-query arrays in, per-query values out.

The inputs are those of :func:`ragframe.kernels.ranking.compute_measures`: the number of
retrieved rows of each query and the *judged* retrieved rows (query code, 0-based rank,
grade), ordered by query then rank. A retrieved document without a judgment is trec_eval's
"not in the pool" (``RELVALUE_NONPOOL``); a judgment with a negative grade is "in the pool
but unjudged" (``RELVALUE_UNJUDGED``, the ``-1`` lines of a qrels file). A judged document is
relevant when its grade >= the relevance level (``-l``).

Every measure is a ``bincount``/``cumsum``/``searchsorted`` over the flat arrays, or a
per-query cumulative sum done by polars (``cum_sum().over``): no Python loop over queries.
Each rule below was learned from trec_eval's documentation and source (``m_*.c``) and
written anew; ``docs/metrics.md`` states each formula.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from ragframe.exceptions import InvalidParameterError

__all__ = [
    "RECALL_POINTS",
    "R_MULTIPLES",
    "UTILITY_COEFFICIENTS",
    "MIN_GEO_MEAN",
    "INFAP_EPSILON",
    "TrecMeasure",
    "TrecOptions",
    "trec_measures",
    "TREC_KERNELS",
]

#: trec_eval's floor before the logarithm of the geometric means (gm_map, gm_bpref).
#: trec_eval's default recall levels (iprec_at_recall, 11pt_avg).
RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: trec_eval's default multiples of R (Rprec_mult).
R_MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
#: trec_eval's default utility coefficients (relevant and non-relevant retrieved, relevant and non-relevant missed).
UTILITY_COEFFICIENTS = (1.0, -1.0, 0.0, 0.0)
MIN_GEO_MEAN = 0.00001


def geometric_logs(values: np.ndarray) -> np.ndarray:
    """log(max(value, MIN_GEO_MEAN)): trec_eval's geometric means (gm_map, gm_bpref) are exp of their mean.

    Examples
    --------
    >>> round(float(np.exp(geometric_logs(np.array([0.5, 0.0, 0.02])).mean())), 12)  # (0.5 * 1e-5 * 0.02) ** (1/3)
    0.004641588834
    """
    return np.log(np.maximum(np.asarray(values, dtype=np.float64), MIN_GEO_MEAN))


#: trec_eval's smoothing constant of infAP.
INFAP_EPSILON = 0.00001


class TrecMeasure(NamedTuple):
    """One trec_eval measure to compute: its root name, parsed parameters and printed names.

    ``params`` depends on the measure: cutoffs (``P``: ints, ``iprec_at_recall``: floats),
    numbers (``utility``: four floats, ``relstring``: the length), or ``(name, value)``
    pairs (``ndcg``: a gain map ``(("1", 3.0), ...)``; ``rbp``: ``(("p", 0.8),)``); empty
    for the defaults. The library's measures beyond trec_eval: ``judged`` takes cutoffs,
    ``err`` ``(max_grade, cutoffs)``. ``names`` holds one output name per value (one per cutoff).
    """

    root: str
    params: tuple[Any, ...]
    names: tuple[str, ...]
    #: trec_eval ``-c``: keep the placeholder's value for a judged query missing from the run (trec_eval
    #: clears ``utility``, ``relstring`` and ``rbp_resid`` by exact name: printed with parameters, it keeps it)
    placeholder_kept: bool = False


@dataclass(frozen=True)
class TrecOptions:
    """What :func:`trec_measures` computes and trec_eval's options that change it.

    Attributes
    ----------
    measures : tuple of TrecMeasure
    judged_only : bool
        trec_eval ``-J``: drop every retrieved document that is not judged (grade >= 0)
        before computing, ranks closing up.
    num_docs : int
        trec_eval ``-N``: documents in the collection (``utility``'s fourth term).
    """

    measures: tuple[TrecMeasure, ...] = field(default_factory=tuple)
    judged_only: bool = False
    num_docs: int = 0


def _group_starts(q: np.ndarray, nq: int) -> np.ndarray:
    """Index of the first entry of each group in an array sorted by group (nq + 1 long)."""
    starts = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(np.bincount(q, minlength=nq), out=starts[1:])
    return starts


def _position_in_group(q: np.ndarray, nq: int) -> np.ndarray:
    """0, 1, 2, ... within each group of an array sorted by group."""
    return np.arange(q.size, dtype=np.int64) - _group_starts(q, nq)[q]


def _count_before(mask: np.ndarray, q: np.ndarray, nq: int) -> np.ndarray:
    """For each entry, how many earlier entries of its group have ``mask`` set (q sorted)."""
    running = np.zeros(mask.size + 1, dtype=np.int64)
    np.cumsum(mask, out=running[1:])
    return running[:-1] - running[_group_starts(q, nq)[q]]


#: Groups longer than this are scanned by polars (one pass per position would be too many passes).
_SCAN_POSITIONS = 4096


def _group_scan(values: np.ndarray, q: np.ndarray, op: np.ufunc, *, reverse: bool = False) -> np.ndarray:
    """Inclusive scan (``op`` = add: cumulative sums; maximum, multiply) within each group of sorted ``q``.

    Each group is combined one element after the other, in order (reversed with ``reverse``),
    as trec_eval's loops do: the values equal a sequential loop's bit for bit. The scan runs
    one vectorised step per position within the groups, over every group that is that long.
    """
    out = values.astype(np.float64, copy=True)
    if out.size < 2:
        return out
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    lengths = np.diff(np.r_[starts, q.size])
    longest = int(lengths.max())
    if longest > _SCAN_POSITIONS:
        return _polars_scan(out, q, op, reverse)
    order = np.argsort(-lengths, kind="stable")  # longest groups first: the ones still going are a prefix
    first, length = (starts + lengths - 1 if reverse else starts)[order], lengths[order]
    going = np.searchsorted(-length, -np.arange(1, longest), side="left")  # groups longer than k
    step = -1 if reverse else 1
    for k in range(1, longest):
        at = first[: going[k - 1]] + step * k
        out[at] = op(out[at - step], out[at])
    return out


def _polars_scan(values: np.ndarray, q: np.ndarray, op: np.ufunc, reverse: bool) -> np.ndarray:
    column = pl.col("v")
    scan = {np.add: column.cum_sum, np.maximum: column.cum_max, np.multiply: column.cum_prod}[op]
    frame = pl.DataFrame({"q": q, "v": values})
    return frame.select(scan(reverse=reverse).over("q")).to_series().to_numpy()


def _group_cumsum(values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Inclusive cumulative sums within each group, summed in order (as trec_eval's loops do)."""
    return _group_scan(values, q, np.add)


def _c_lround(x: np.ndarray) -> np.ndarray:
    """C's ``lround`` for x >= 0: halves round away from zero (numpy's round goes to even)."""
    floor = np.floor(x)
    return np.where(x - floor >= 0.5, floor + 1, floor).astype(np.int64)


def _per_query(q: np.ndarray, weights: np.ndarray | None, nq: int) -> np.ndarray:
    return np.bincount(q, weights=weights, minlength=nq).astype(np.float64, copy=False)


class _Context:
    """The derived arrays the measures share, each computed once when first needed."""

    def __init__(
        self,
        counts: np.ndarray,
        hit_q: np.ndarray,
        hit_rank: np.ndarray,
        hit_grade: np.ndarray,
        judgment_q: np.ndarray,
        judgment_grade: np.ndarray,
        *,
        level: int,
        options: TrecOptions,
        virtual: np.ndarray | None,
    ):
        nq = counts.size
        self.nq = nq
        self.level = level
        self.options = options
        self.virtual = np.zeros(nq, dtype=bool) if virtual is None else virtual
        if options.judged_only:  # trec_eval -J: only judged documents remain, ranks close up
            keep = hit_grade >= 0
            hit_q, hit_grade = hit_q.compress(keep), hit_grade.compress(keep)
            hit_rank = _position_in_group(hit_q, nq)
            counts = np.bincount(hit_q, minlength=nq)
        self.hit_q, self.hit_rank, self.hit_grade = hit_q, hit_rank, hit_grade
        # -c: a query without results is one document that is not in the pool (trec_eval's placeholder);
        # -J drops it with the other documents outside the pool
        self.n_ret = np.where(self.virtual & ~options.judged_only, 1, counts).astype(np.int64)
        self.jq, self.jg = judgment_q, judgment_grade
        self.rel = hit_grade >= level
        self.nonrel = (hit_grade >= 0) & ~self.rel
        self.unjudged = hit_grade < 0  # in the pool but unjudged
        self._gains: dict[tuple[tuple[int, float], ...], _Gains] = {}
        self._top: dict[int, np.ndarray] = {}
        self.shared: dict[str, np.ndarray] = {}
        # trec_eval -c clears num_ret, utility, relstring, unj* and rbp_resid of a placeholder query by
        # exact name: a measure printed with parameters (utility_2,-1,0,0) keeps the placeholder's value
        self.cleared = self.virtual

    def powers(self, p: float) -> np.ndarray:
        """p^0, p^1, ... p^(longest ranking), each multiplied from the one before (as trec_eval's loops do)."""
        key = f"powers {p!r}"
        if key not in self.shared:
            steps = np.full(int(self.n_ret.max(initial=0)) + 1, p)
            steps[0] = 1.0
            self.shared[key] = np.multiply.accumulate(steps)
        return self.shared[key]

    # ----------------------------------------------------------------- counts
    @cached_property
    def num_rel(self) -> np.ndarray:
        return np.bincount(self.jq.compress(self.jg >= self.level), minlength=self.nq).astype(np.int64)

    @cached_property
    def num_nonrel(self) -> np.ndarray:
        """Judged documents below the relevance level (bpref's pool of non-relevant ones)."""
        keep = (self.jg >= 0) & (self.jg < self.level)
        return np.bincount(self.jq.compress(keep), minlength=self.nq).astype(np.int64)

    @cached_property
    def num_rel_ret(self) -> np.ndarray:
        return np.bincount(self.hit_q.compress(self.rel), minlength=self.nq).astype(np.int64)

    @cached_property
    def num_judged_ret(self) -> np.ndarray:
        return np.bincount(self.hit_q.compress(self.hit_grade >= 0), minlength=self.nq).astype(np.int64)

    @cached_property
    def safe_r(self) -> np.ndarray:
        return np.where(self.num_rel > 0, self.num_rel, 1).astype(np.float64)

    # ----------------------------------------------------------------- relevant retrieved rows
    @cached_property
    def rq(self) -> np.ndarray:
        return self.hit_q.compress(self.rel)  # compress: several times faster than a[mask]

    @cached_property
    def rrank(self) -> np.ndarray:
        return self.hit_rank.compress(self.rel)

    @cached_property
    def nth(self) -> np.ndarray:
        """Index of each relevant retrieved row among its query's relevant retrieved rows."""
        return _position_in_group(self.rq, self.nq)

    @cached_property
    def precision_at_rel(self) -> np.ndarray:
        return (self.nth + 1.0) / (self.rrank + 1.0)

    def top(self, depth: np.ndarray | int) -> np.ndarray:
        """Relevant retrieved rows among the first ``depth`` of each query (a cutoff's counts are kept)."""
        if isinstance(depth, np.ndarray):
            return np.bincount(self.rq.compress(self.rrank < depth[self.rq]), minlength=self.nq)
        if depth not in self._top:  # P_k, recall_k, success_k, relative_P_k share the counts at k
            self._top[depth] = np.bincount(self.rq.compress(self.rrank < depth), minlength=self.nq)
        return self._top[depth]

    @cached_property
    def rel_starts(self) -> np.ndarray:
        """The first relevant retrieved row of each query (nq + 1 long)."""
        return _group_starts(self.rq, self.nq)

    @cached_property
    def average_precision(self) -> np.ndarray:
        return _per_query(self.rq, self.precision_at_rel, self.nq) / self.safe_r

    def before(self, mask: np.ndarray) -> np.ndarray:
        """For each relevant retrieved row, the judged rows with ``mask`` ranked above it."""
        return _count_before(mask, self.hit_q, self.nq).compress(self.rel)

    @cached_property
    def nonrel_above(self) -> np.ndarray:
        """For each relevant retrieved row, the judged non-relevant rows above it (bpref and infAP share it)."""
        return self.before(self.nonrel)

    @cached_property
    def top_level(self) -> np.ndarray:
        """The highest judged grade (>= 0) of each query; -1 for a query without one."""
        judged = self.jg >= 0
        q, grade = self.jq.compress(judged), self.jg.compress(judged)
        top = np.full(self.nq, -1, dtype=np.int64)
        if grade.size == 0:
            return top
        if int(grade.max()) > 64:  # grades beyond the usual few levels
            np.maximum.at(top, q, grade)
            return top
        for level in np.flatnonzero(np.bincount(grade)):  # ascending: a query's highest level is written last
            top[q.compress(grade == level)] = level
        return top

    # ----------------------------------------------------------------- gains (ndcg family)
    def gains(self, pairs: tuple[tuple[str, float], ...]) -> _Gains:
        """The gains under a gain map, built once per map (the ndcg family shares them)."""
        mapping = tuple(_gain_map(pairs))
        if mapping not in self._gains:
            self._gains[mapping] = _Gains(self, dict(mapping))
        return self._gains[mapping]

    @cached_property
    def interpolated_max(self) -> np.ndarray:
        """Per relevant retrieved row, the highest precision at it or at a later relevant row of its query."""
        return _group_scan(self.precision_at_rel, self.rq, np.maximum, reverse=True)


def _gain_map(pairs: tuple[tuple[str, float], ...]) -> list[tuple[int, float]]:
    """The ``level=gain`` pairs of a parameter list (other names, like rbp's ``p``, are not gains)."""
    out = []
    for name, value in pairs:
        text = name[1:] if name[:1] in "+-" else name
        if text.isdigit():
            out.append((int(name), float(value)))
    return out


class _Gains:
    """Results and ideal DCG prefixes under one gain map (trec_eval: gain = level unless mapped)."""

    def __init__(self, ctx: _Context, mapping: dict[int, float]):
        self.ctx = ctx
        self.mapping = mapping
        self.hit_gain = self.of(ctx.hit_grade)
        self.judgment_gain = self.of(ctx.jg)

    def of(self, grade: np.ndarray) -> np.ndarray:
        """The gain of each grade; documents unjudged or not in the pool have none."""
        gain = np.where(grade >= 0, grade, 0).astype(np.float64)
        for level, value in self.mapping.items():
            gain[grade == level] = value
        return gain

    # results -------------------------------------------------------------
    @cached_property
    def _gain_hits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Query, rank, gain and inclusive per-query DCG of every retrieved row with a gain."""
        ctx = self.ctx
        keep = self.hit_gain != 0
        q, rank, gain = ctx.hit_q.compress(keep), ctx.hit_rank.compress(keep), self.hit_gain.compress(keep)
        return q, rank, gain, _group_cumsum(gain / np.log2(rank + 2.0), q)

    @cached_property
    def _gain_hit_keys(self) -> tuple[np.ndarray, int]:
        q, rank, _, _ = self._gain_hits
        span = int(self.ctx.n_ret.max(initial=0)) + 2
        return q.astype(np.int64) * span + rank, span

    def dcg_at(self, q: np.ndarray, depth: np.ndarray) -> np.ndarray:
        """DCG of the first ``depth`` retrieved documents of query ``q`` (element-wise)."""
        _, _, _, cum = self._gain_hits
        keys, span = self._gain_hit_keys
        limit = np.minimum(depth, span - 1).astype(np.int64)
        found = np.searchsorted(keys, q.astype(np.int64) * span + limit, side="left")
        first = self._hit_starts[q]
        return np.where(found > first, cum[np.maximum(found - 1, 0)] if cum.size else 0.0, 0.0)

    def dcg(self, depth: np.ndarray | int | None = None) -> np.ndarray:
        """DCG of each query at a depth (None: the whole ranking)."""
        nq = self.ctx.nq
        d = self.ctx.n_ret if depth is None else np.broadcast_to(np.asarray(depth, dtype=np.int64), (nq,))
        return self.dcg_at(np.arange(nq), d)

    # ideal ---------------------------------------------------------------
    @cached_property
    def ideal(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Query, gain, inclusive per-query ideal DCG and position of the positive-gain judged documents.

        Ordered by query, then gain descending: each query's ideal ranking, as far as it gains.
        """
        ctx = self.ctx
        keep = (ctx.jg >= 0) & (self.judgment_gain > 0)
        q, gain = ctx.jq.compress(keep), self.judgment_gain.compress(keep)
        order = _by_query_then_descending(q, gain)
        q, gain = q[order], gain[order]
        position = _position_in_group(q, ctx.nq)
        return q, gain, _group_cumsum(gain / np.log2(position + 2.0), q), position

    @cached_property
    def _ideal_starts(self) -> np.ndarray:
        return _group_starts(self.ideal[0], self.ctx.nq)

    @cached_property
    def _hit_starts(self) -> np.ndarray:
        return _group_starts(self._gain_hits[0], self.ctx.nq)

    @cached_property
    def n_positive(self) -> np.ndarray:
        """Judged documents with a positive gain, per query (the ideal ranking's gaining length)."""
        return np.bincount(self.ideal[0], minlength=self.ctx.nq).astype(np.int64)

    def _ideal_prefix(self, values: np.ndarray, q: np.ndarray, depth: np.ndarray) -> np.ndarray:
        take = np.minimum(depth, self.n_positive[q])
        at = self._ideal_starts[q] + take - 1
        return np.where(take > 0, values[np.maximum(at, 0)] if values.size else 0.0, 0.0)

    def ideal_dcg_at(self, q: np.ndarray, depth: np.ndarray) -> np.ndarray:
        return self._ideal_prefix(self.ideal[2], q, depth)

    def ideal_dcg(self, depth: np.ndarray | int | None = None) -> np.ndarray:
        nq = self.ctx.nq
        d = self.n_positive if depth is None else np.broadcast_to(np.asarray(depth, dtype=np.int64), (nq,))
        return self.ideal_dcg_at(np.arange(nq), d)

    @cached_property
    def ideal_excess(self) -> np.ndarray:
        """Per-query cumulative ``max(gain, 1) - 1`` along the ideal ranking (G's cost beyond 1 a rank)."""
        q, gain, _, _ = self.ideal
        return _group_cumsum(np.maximum(gain, 1.0) - 1.0, q)


def _by_query_then_descending(q: np.ndarray, value: np.ndarray) -> np.ndarray:
    """The stable order by query, then value descending (one integer sort when the values are small whole numbers)."""
    if value.size and np.array_equal(value, np.round(value)):
        low, high = float(value.min()), float(value.max())
        span = high - low + 1
        if span * (float(q.max()) + 1) < 2.0**62:
            key = q.astype(np.int64) * int(span) + (int(high) - value.astype(np.int64))
            return np.argsort(key, kind="stable")
    return np.lexsort((-value, q))


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros(np.shape(num)), where=den > 0)


# --------------------------------------------------------------------------- the measures
# Each takes the context and the measure's parameters and returns one array per printed name.

Kernel = Callable[[_Context, tuple[Any, ...]], list[np.ndarray]]


def _num_ret(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [np.where(ctx.virtual, 0, ctx.n_ret)]


def _num_rel(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [ctx.num_rel]


def _num_rel_ret(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [ctx.num_rel_ret]


def _num_nonrel_judged_ret(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [np.bincount(ctx.hit_q.compress(ctx.nonrel), minlength=ctx.nq).astype(np.int64)]


def _average_precision(ctx: _Context, depth: int | None = None) -> np.ndarray:
    if depth is None:  # map and gm_map share it
        return ctx.average_precision
    keep = ctx.rrank < depth
    return _per_query(ctx.rq.compress(keep), ctx.precision_at_rel.compress(keep), ctx.nq) / ctx.safe_r


def _map(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [_average_precision(ctx)]


def _map_cut(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [_average_precision(ctx, k) for k in params]


def _rprec(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [ctx.top(ctx.num_rel) / ctx.safe_r]


def _recip_rank(ctx: _Context, params: tuple) -> list[np.ndarray]:
    first = ctx.nth == 0
    out = np.zeros(ctx.nq)
    out[ctx.rq.compress(first)] = 1.0 / (ctx.rrank.compress(first) + 1.0)
    return [out]


def _precision(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [ctx.top(k) / float(k) for k in params]


def _recall(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [np.where(ctx.num_rel > 0, ctx.top(k) / ctx.safe_r, 0.0) for k in params]


def _success(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [(ctx.top(k) > 0).astype(np.float64) for k in params]


def _relative_precision(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [_ratio(ctx.top(k).astype(np.float64), np.minimum(k, ctx.num_rel).astype(np.float64)) for k in params]


def _bpref_values(ctx: _Context) -> np.ndarray:
    nonrel_above = ctx.nonrel_above
    r = ctx.num_rel[ctx.rq]
    pool = np.minimum(ctx.num_nonrel[ctx.rq], r)
    safe_pool = np.where(pool > 0, pool, 1)
    term = np.where(nonrel_above > 0, 1.0 - np.minimum(nonrel_above, r) / safe_pool, 1.0)
    return _per_query(ctx.rq, term, ctx.nq) / ctx.safe_r


def _bpref(ctx: _Context, params: tuple) -> list[np.ndarray]:
    if "bpref" not in ctx.shared:  # bpref and gm_bpref share it
        ctx.shared["bpref"] = _bpref_values(ctx)
    return [ctx.shared["bpref"]]


def _infap(ctx: _Context, params: tuple) -> list[np.ndarray]:
    rel_above = ctx.nth.astype(np.float64)
    nonrel_above = ctx.nonrel_above.astype(np.float64)
    unjudged_above = ctx.before(ctx.unjudged).astype(np.float64)
    j = ctx.rrank.astype(np.float64)
    safe_j = np.where(j > 0, j, 1.0)
    eps = INFAP_EPSILON
    later = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rel_above + nonrel_above + unjudged_above) / safe_j) * (
        (rel_above + eps) / (rel_above + nonrel_above + 2 * eps)
    )
    term = np.where(j == 0, 1.0, later)
    return [_per_query(ctx.rq, term, ctx.nq) / ctx.safe_r]


def _interpolated_precision(ctx: _Context, fractions: tuple[float, ...]) -> list[np.ndarray]:
    """Interpolated precision at recall fractions (the cutoff in relevant documents is rounded, trec_eval 10)."""
    suffix_max = ctx.interpolated_max
    starts = ctx.rel_starts[:-1]
    out = []
    for fraction in fractions:
        cut = _c_lround(fraction * ctx.num_rel.astype(np.float64))
        nth = np.maximum(cut, 1)  # recall 0 interpolates from the first relevant document
        reached = (cut <= ctx.num_rel_ret) & (ctx.num_rel_ret > 0)
        at = np.where(reached, starts + nth - 1, 0)
        value = np.where(reached, suffix_max[at] if suffix_max.size else 0.0, 0.0)
        # trec_eval starts from precision num_rel_ret / num_ret: 0/0 when -J left no document, and a
        # cutoff of 0 relevant documents takes it (NaN, printed -nan; see docs/metrics.md). Without -J a
        # ranking is never empty in trec_eval; the library's empty list reads 0 ("nothing retrieved: 0")
        empty = (ctx.n_ret == 0) & (cut == 0) & ctx.options.judged_only
        out.append(np.where(empty, np.nan, value))
    return out


def _iprec_at_recall(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return _interpolated_precision(ctx, params)


def _11pt_avg(ctx: _Context, params: tuple) -> list[np.ndarray]:
    points = _interpolated_precision(ctx, params)
    total = np.zeros(ctx.nq)
    for values in reversed(points):  # summed point by point from the last, as trec_eval does
        total = total + values
    return [total / float(len(params))]


def _rprec_mult(ctx: _Context, params: tuple) -> list[np.ndarray]:
    out = []
    for multiple in params:
        cut = np.trunc(multiple * ctx.num_rel.astype(np.float64) + 0.9).astype(np.int64)
        out.append(_ratio(ctx.top(cut).astype(np.float64), cut.astype(np.float64)))
    return out


def _utility(ctx: _Context, params: tuple) -> list[np.ndarray]:
    a = ctx.num_rel_ret.astype(np.float64)
    ret = ctx.n_ret.astype(np.float64)
    r = ctx.num_rel.astype(np.float64)
    n = float(ctx.options.num_docs)
    value = params[0] * a + params[1] * (ret - a) + params[2] * (r - a) + params[3] * (n + a - ret - r)
    return [np.where(ctx.cleared, 0.0, value)]


def _bin_g(ctx: _Context, params: tuple) -> list[np.ndarray]:
    term = 1.0 / np.log2(2.0 + ctx.rrank - ctx.nth)
    return [_per_query(ctx.rq, term, ctx.nq) / ctx.safe_r]


def _g(ctx: _Context, params: tuple) -> list[np.ndarray]:
    gains = ctx.gains(params)
    q, rank, gain, _ = gains._gain_hits
    results_so_far = _group_cumsum(gain, q)
    cost = (rank + 1.0) + gains._ideal_prefix(gains.ideal_excess, q, rank + 1)
    total = _per_query(q, gain / np.log2(2.0 + cost - results_so_far), ctx.nq)
    ideal_total = _per_query(gains.ideal[0], gains.ideal[1], ctx.nq)
    return [_ratio(total, ideal_total)]


def _ndcg(ctx: _Context, params: tuple) -> list[np.ndarray]:
    gains = ctx.gains(params)
    return [_ratio(gains.dcg(), gains.ideal_dcg())]


def _dcg(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [ctx.gains(params).dcg()]


def _ideal_dcg(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [ctx.gains(params).ideal_dcg()]


def _ndcg_cut(ctx: _Context, params: tuple) -> list[np.ndarray]:
    gains = ctx.gains(())
    return [_ratio(gains.dcg(k), gains.ideal_dcg(k)) for k in params]


def _ndcg_rel(ctx: _Context, params: tuple) -> list[np.ndarray]:
    gains = ctx.gains(params)
    nq = ctx.nq
    gq, rank, gain, cum = gains._gain_hits
    positive = gain > 0
    pq, prank = gq.compress(positive), rank.compress(positive)
    at_rel = _ratio(cum.compress(positive), gains.ideal_dcg_at(pq, prank + 1))
    total = _per_query(pq, at_rel, nq)
    n_pos = gains.n_positive
    missed = (n_pos - np.bincount(pq, minlength=nq)).astype(np.float64)
    total = total + missed * _ratio(gains.dcg(), gains.ideal_dcg())
    return [np.where(total > 0, _ratio(total, n_pos.astype(np.float64)), 0.0)]


def _rndcg(ctx: _Context, params: tuple) -> list[np.ndarray]:
    """nDCG averaged at the ranks where the ideal gain changes (and at the end of the ranking)."""
    gains = ctx.gains(params)
    nq = ctx.nq
    iq, igain, _, position = gains.ideal
    n_pos = gains.n_positive
    # boundaries: a position j >= 1 whose ideal gain differs from j - 1's, and the end of the gains
    change = np.zeros(iq.size, dtype=bool)
    change[1:] = (iq[1:] == iq[:-1]) & (igain[1:] != igain[:-1])
    bq = np.concatenate([iq[change], np.flatnonzero(n_pos > 0)])
    bj = np.concatenate([position[change], n_pos[n_pos > 0]])
    ideal = gains.ideal_dcg_at(bq, bj)
    results = gains.dcg_at(bq, np.minimum(bj, ctx.n_ret[bq]))
    total = _per_query(bq, _ratio(results, ideal), nq)
    count = np.bincount(bq[ideal > 0], minlength=nq).astype(np.float64)
    # trec_eval adds the whole ranking's nDCG when it runs on past the ideal gains by 2 or more ranks
    tail = ctx.n_ret > n_pos + 1
    full_ideal = gains.ideal_dcg()
    tail &= full_ideal > 0
    total = total + np.where(tail, _ratio(gains.dcg(), full_ideal), 0.0)
    count = count + tail
    with np.errstate(invalid="ignore", divide="ignore"):
        value = total / count
    return [np.where(ctx.num_rel > 0, value, 0.0)]


def _set_p(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [_ratio(ctx.num_rel_ret.astype(np.float64), ctx.n_ret.astype(np.float64))]


def _set_recall(ctx: _Context, params: tuple) -> list[np.ndarray]:
    return [_ratio(ctx.num_rel_ret.astype(np.float64), ctx.num_rel.astype(np.float64))]


def _set_relative_p(ctx: _Context, params: tuple) -> list[np.ndarray]:
    den = np.minimum(ctx.n_ret, ctx.num_rel).astype(np.float64)
    return [_ratio(ctx.num_rel_ret.astype(np.float64), den)]


def _set_map(ctx: _Context, params: tuple) -> list[np.ndarray]:
    a = ctx.num_rel_ret.astype(np.float64)
    return [_ratio(a * a, ctx.n_ret.astype(np.float64) * ctx.num_rel.astype(np.float64))]


def _set_f(ctx: _Context, params: tuple) -> list[np.ndarray]:
    x = params[0] if params else 1.0
    a = ctx.num_rel_ret.astype(np.float64)
    p = _ratio(a, ctx.n_ret.astype(np.float64))
    r = _ratio(a, ctx.num_rel.astype(np.float64))
    return [np.where(a > 0, _ratio((x + 1.0) * p * r, x * p + r), 0.0)]


def _persistence(params: tuple) -> float:
    return next((float(value) for name, value in params if name == "p"), 0.9)


def _rbp(ctx: _Context, params: tuple) -> list[np.ndarray]:
    p = _persistence(params)
    gains = ctx.gains(params)
    gain = gains.hit_gain
    # gains outside [0, 1] are rescaled by the query's gain range: levels 0 .. its highest judged level
    # (gain = level unless mapped) and every mapped gain
    top = ctx.top_level
    high_level, low_level = top.copy(), np.where(top >= 0, 0, 1)
    for level in sorted(gains.mapping, reverse=True):  # the highest level that keeps its default gain
        high_level = np.where(high_level == level, high_level - 1, high_level)
    for level in sorted(gains.mapping):  # the lowest one
        low_level = np.where(low_level == level, low_level + 1, low_level)
    has_default = (high_level >= 0) & (low_level <= high_level)
    low = np.where(has_default, low_level, np.inf).astype(np.float64)
    high = np.where(has_default, high_level, -np.inf).astype(np.float64)
    for value in gains.mapping.values():
        low, high = np.minimum(low, value), np.maximum(high, value)
    rescale = (low < 0) | (high > 1)
    hq = ctx.hit_q
    scaled = np.where(rescale[hq], (gain - low[hq]) / np.where(high > low, high - low, 1.0)[hq], gain)
    in_pool = ctx.hit_grade >= 0  # documents unjudged or not in the pool have no gain, scaled or not
    weight = np.where(in_pool, scaled, 0.0) * ctx.powers(p)[ctx.hit_rank]
    return [(1.0 - p) * _per_query(hq, weight, ctx.nq)]


def _rbp_resid(ctx: _Context, params: tuple) -> list[np.ndarray]:
    """p^n + (1 - p) * (sum of p^rank over the unjudged ranks), summed in rank order as trec_eval does."""
    p = _persistence(params)
    powers = ctx.powers(p)
    every_q = np.repeat(np.arange(ctx.nq), ctx.n_ret)
    starts = _group_starts(every_q, ctx.nq)
    unjudged = np.ones(every_q.size, dtype=bool)  # not in the pool, or judged -1
    judged = ctx.hit_grade >= 0
    unjudged[starts[ctx.hit_q.compress(judged)] + ctx.hit_rank.compress(judged)] = False
    uq = every_q.compress(unjudged)
    rank = (np.arange(every_q.size) - starts[every_q]).compress(unjudged)
    total = _per_query(uq, powers[rank], ctx.nq)  # bincount adds in order: rank by rank
    value = powers[ctx.n_ret] + (1.0 - p) * total
    return [np.where((np.bincount(uq, minlength=ctx.nq) > 0) & ~ctx.cleared, value, 0.0)]


def _unjudged(ctx: _Context, params: tuple) -> list[np.ndarray]:
    judged = ctx.hit_grade >= 0
    out = []
    for k in params:
        judged_top = np.bincount(ctx.hit_q[judged & (ctx.hit_rank < k)], minlength=ctx.nq)
        value = (np.minimum(ctx.n_ret, k) - judged_top) / float(k)
        out.append(np.where(ctx.virtual, 0.0, value))
    return out


def _judged(ctx: _Context, params: tuple) -> list[np.ndarray]:
    """Judged documents (grade >= 0) among the first k, over min(k, retrieved) (ir_measures' Judged@k)."""
    judged = ctx.hit_grade >= 0
    shown = np.where(ctx.virtual, 0, ctx.n_ret)
    out = []
    for k in params:
        judged_top = np.bincount(ctx.hit_q[judged & (ctx.hit_rank < k)], minlength=ctx.nq)
        out.append(_ratio(judged_top.astype(np.float64), np.minimum(shown, k).astype(np.float64)))
    return out


def _group_cumprod(values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Inclusive cumulative products within each group, multiplied in order."""
    return _group_scan(values, q, np.multiply)


def _err(ctx: _Context, params: tuple) -> list[np.ndarray]:
    """Expected reciprocal rank at each cutoff (Chapelle et al. 2009), params ``(max_grade, cutoffs)``.

    A document of grade g > 0 satisfies the user with probability (2^g - 1) / 2^max_grade;
    ERR@k = sum over ranks r <= k of that probability / r times the chance that no document
    above r did. Grades <= 0, unjudged and unpooled documents never satisfy.
    """
    max_grade, cutoffs = params
    positive = ctx.hit_grade > 0
    if positive.any() and int(ctx.hit_grade[positive].max()) > max_grade:
        raise InvalidParameterError(
            f"err_at_k: a retrieved document has grade {int(ctx.hit_grade.max())}, above err_max_grade={max_grade}"
        )
    q, rank = ctx.hit_q[positive], ctx.hit_rank[positive]
    stop = (np.exp2(ctx.hit_grade[positive].astype(np.float64)) - 1.0) / 2.0 ** float(max_grade)
    reached = np.ones(q.size)  # the chance that the user reaches each document: no earlier one satisfied
    if q.size > 1:
        survived = _group_cumprod(1.0 - stop, q)
        reached[1:] = np.where(q[1:] == q[:-1], survived[:-1], 1.0)
    term = stop * reached / (rank + 1.0)
    return [_per_query(q[rank < k], term[rank < k], ctx.nq) for k in cutoffs]


def _relstring(ctx: _Context, params: tuple) -> list[np.ndarray]:
    """The first N documents' relevance as characters: digit, '>' above 9, '-' not in the pool, '.' unjudged."""
    length = int(params[0]) if params else 10
    shown = np.where(ctx.cleared, 0, np.minimum(ctx.n_ret, max(length, 0)))
    width = max(int(shown.max(initial=0)), 1)
    # one row of characters per query; NUL (numpy's padding) past the shown ones, so each row reads as its string
    chars = np.zeros((ctx.nq, width), dtype="<U1")
    chars[np.arange(width) < shown[:, None]] = "-"
    keep = ctx.hit_rank < shown[ctx.hit_q]
    grade = ctx.hit_grade[keep]
    symbols = np.array(list("0123456789"))[np.clip(grade, 0, 9)]
    chars[ctx.hit_q[keep], ctx.hit_rank[keep]] = np.where(grade > 9, ">", np.where(grade < 0, ".", symbols))
    return [chars.view(f"<U{width}").ravel().astype(object)]


#: trec_eval measure root -> kernel.
TREC_KERNELS: dict[str, Kernel] = {
    "num_ret": _num_ret,
    "num_rel": _num_rel,
    "num_rel_ret": _num_rel_ret,
    "map": _map,
    "gm_map": _map,
    "Rprec": _rprec,
    "bpref": _bpref,
    "recip_rank": _recip_rank,
    "iprec_at_recall": _iprec_at_recall,
    "P": _precision,
    "relstring": _relstring,
    "recall": _recall,
    "infAP": _infap,
    "gm_bpref": _bpref,
    "Rprec_mult": _rprec_mult,
    "utility": _utility,
    "11pt_avg": _11pt_avg,
    "binG": _bin_g,
    "G": _g,
    "dcg": _dcg,
    "ideal_dcg": _ideal_dcg,
    "ndcg": _ndcg,
    "ndcg_rel": _ndcg_rel,
    "Rndcg": _rndcg,
    "ndcg_cut": _ndcg_cut,
    "map_cut": _map_cut,
    "relative_P": _relative_precision,
    "success": _success,
    "set_P": _set_p,
    "set_relative_P": _set_relative_p,
    "set_recall": _set_recall,
    "set_map": _set_map,
    "set_F": _set_f,
    "num_nonrel_judged_ret": _num_nonrel_judged_ret,
    "rbp": _rbp,
    "rbp_resid": _rbp_resid,
    "unj": _unjudged,
    # -R qrels_jg: one judgment group's value (the caller averages a query's groups)
    "map_avgjg": _map,
    "P_avgjg": _precision,
    "Rprec_mult_avgjg": _rprec_mult,
    # beyond trec_eval (library measures; ``ragframe trec`` does not print them)
    "judged": _judged,
    "err": _err,
}


def trec_measures(
    counts: np.ndarray,
    hit_q: np.ndarray,
    hit_rank: np.ndarray,
    hit_grade: np.ndarray,
    judgment_q: np.ndarray,
    judgment_grade: np.ndarray,
    judged: np.ndarray,
    *,
    options: TrecOptions,
    relevance_level: int = 1,
    virtual: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """trec_eval's measures of every query at once.

    Parameters
    ----------
    counts : numpy.ndarray
        Retrieved rows of each query.
    hit_q, hit_rank, hit_grade : numpy.ndarray
        Query code, 0-based rank and grade of every judged retrieved row, by query then rank.
    judgment_q, judgment_grade : numpy.ndarray
        Query code and grade of every judgment (one per query and document).
    judged : numpy.ndarray
        Bool per query: it has judgments. Other queries get NaN (counts: their value).
    options : TrecOptions
        The measures (with parameters and printed names) and trec_eval's ``-J``/``-N``.
    relevance_level : int
        trec_eval ``-l``.
    virtual : numpy.ndarray, optional
        Bool per query: trec_eval ``-c``'s placeholder for a judged query missing from the
        run (scored as one retrieved document outside the pool, none with ``-J``; ``num_ret``,
        ``unj`` and, printed without parameters, ``utility``, ``relstring`` and ``rbp_resid``
        then read 0 or empty, as in trec_eval).

    Returns
    -------
    dict
        Printed name -> per-query array (float64; int64 for counts; object for ``relstring``).

    Examples
    --------
    >>> import numpy as np
    >>> opts = TrecOptions((TrecMeasure("bpref", (), ("bpref",)), TrecMeasure("P", (2,), ("P_2",))))
    >>> # one query: ranks 0 (non-relevant, judged) and 1 (relevant); judgments: both
    >>> out = trec_measures(np.array([2]), np.array([0, 0]), np.array([0, 1]), np.array([0, 1]),
    ...                     np.array([0, 0]), np.array([0, 1]), np.array([True]), options=opts)
    >>> out["bpref"], out["P_2"]
    (array([0.]), array([0.5]))
    """
    ctx = _Context(
        counts,
        hit_q,
        hit_rank,
        hit_grade,
        judgment_q,
        judgment_grade,
        level=relevance_level,
        options=options,
        virtual=virtual,
    )
    out: dict[str, np.ndarray] = {}
    for measure in options.measures:
        ctx.cleared = ctx.virtual & (not measure.placeholder_kept)
        values = TREC_KERNELS[measure.root](ctx, measure.params)
        for name, array in zip(measure.names, values, strict=True):
            if array.dtype == np.float64:
                array = np.where(judged, array, np.nan)
            out[name] = array
    return out
