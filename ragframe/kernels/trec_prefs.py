"""trec_eval 10.0's preference measures (``-R prefs``, ``-R qrels_prefs``) over whole runs.

A preference file says, per query, which documents a judgment group (JG, a user) prefers to
which: within one judgment sub-group (JSG) of a JG, a document of a higher ``rel_level`` is
preferred to every document of a lower one. A JG with one JSG states every such pair (its
documents fall in equivalence classes, ECs, by level); a JG with several JSGs states a
partial order, closed under transitivity (A > B in one JSG and B > C in another give A > C).
``-R qrels_prefs`` reads a qrels file as preferences: the iteration field is the JG, one JSG.

Each judged document of a query gets a *docid rank*: the judged documents the run retrieved
first, in ranking order (score descending, ties by docno ascending: trec_eval's order for
preferences), then the judged documents it did not retrieve, by docno. A preference A > B
is *fulfilled* when A's docid rank is smaller. Counting, per JG, fulfilled and possible
preferences among retrieved pairs (``_ret``), pairs with one retrieved (``_imp``: fulfilled
when the retrieved one is the preferred one) and pairs with none (never fulfilled) gives
the measures of :data:`PREFERENCE_MEASURES`; ``prefs_pair*`` average, over document pairs,
the share of the JGs' preferences on the pair that the ranking fulfils.

The rules were read from trec_eval's documentation and source (``form_prefs_counts.c``,
``m_prefs_*.c``) and written anew over flat arrays: preference pairs are generated with
``repeat``/``cumsum`` index arithmetic, the transitive closure of every partial-order JG at
once is a sparse boolean matrix squared until it stops growing, and every count is a
``bincount`` (no Python loop over queries or judgment groups).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from ragframe.exceptions import SchemaError

__all__ = ["PREFERENCE_MEASURES", "preference_measures"]

#: trec_eval 10.0's preference measures, in its order (``prefs_num_*`` are counts, summed in the summary).
PREFERENCE_MEASURES: tuple[str, ...] = (
    "prefs_num_prefs_poss",
    "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret",
    "prefs_simp",
    "prefs_pair",
    "prefs_avgjg",
    "prefs_avgjg_Rnonrel",
    "prefs_simp_ret",
    "prefs_pair_ret",
    "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp",
    "prefs_pair_imp",
    "prefs_avgjg_imp",
)


def _run_ends(*keys: np.ndarray) -> np.ndarray:
    """For each row of arrays sorted by ``keys``, one past the last row with the same keys."""
    n = keys[0].size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[-1] = True
    for key in keys:
        change[:-1] |= key[1:] != key[:-1]
    ends = np.flatnonzero(change) + 1
    return np.repeat(ends, np.diff(np.concatenate([[0], ends])))


def _run_starts(*keys: np.ndarray) -> np.ndarray:
    """For each row of arrays sorted by ``keys``, the first row with the same keys."""
    n = keys[0].size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for key in keys:
        change[1:] |= key[1:] != key[:-1]
    starts = np.flatnonzero(change)
    return np.repeat(starts, np.diff(np.concatenate([starts, [n]])))


def _pairs_after_block(block_end: np.ndarray, group_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) row pairs: every row a with each row b from the end of a's block to the end of a's group."""
    lengths = group_end - block_end
    a = np.repeat(np.arange(lengths.size), lengths)
    offsets = np.cumsum(lengths) - lengths
    b = np.arange(int(lengths.sum())) - offsets[a] + block_end[a]
    return a, b


def _closure(i: np.ndarray, j: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The transitive closure of the edges i -> j over n nodes (block-diagonal: every JG at once)."""
    if i.size == 0:
        return i, j
    import scipy.sparse as sp  # here: ragframe trec on qrels does not pay for scipy's import

    reach = sp.csr_matrix((np.ones(i.size, dtype=np.int32), (i, j)), shape=(n, n))
    reach.data[:] = 1
    while True:
        grown = reach + reach @ reach
        grown.data[:] = 1
        if grown.nnz == reach.nnz:
            break
        reach = grown
    coo = reach.tocoo()
    return coo.row.astype(np.int64), coo.col.astype(np.int64)


def _sum_in_order(values: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """Per-owner sums of values sorted by owner, added one after another (as trec_eval's loops add them)."""
    out = np.zeros(n)
    if values.size == 0:
        return out
    running = pl.DataFrame({"o": owner, "v": values}).select(pl.col("v").cum_sum().over("o")).to_series().to_numpy()
    last = np.flatnonzero(np.append(owner[1:] != owner[:-1], True))
    out[owner[last]] = running[last]
    return out


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den in doubles, 0/0 giving NaN as in C."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return num.astype(np.float64) / den.astype(np.float64)


def _guarded(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den where den > 0, else 0 (trec_eval's ``if (poss)``)."""
    return np.divide(num, den, out=np.zeros(num.size), where=den > 0)


class _Table(NamedTuple):
    """The preference lines of the evaluated queries, sorted by query, JG, JSG, level descending, docid rank."""

    q: np.ndarray  # query code
    g: np.ndarray  # JG code, in (query, jg) order
    s: np.ndarray  # JSG code, in (query, jg, jsg) order
    level: np.ndarray
    d: np.ndarray  # docid rank within the query
    doc: pl.Series


def _judged_ranks(run: pl.DataFrame, prefs: pl.DataFrame, max_docs: int | None) -> pl.DataFrame:
    """Every judged (query, docno) and its docid rank: the retrieved ones in ranking order, then the others by docno."""
    ranked = run.sort(["q", "score", "doc_id"], descending=[False, True, False]).with_columns(
        pl.int_range(pl.len()).over("q").alias("position")
    )
    if max_docs is not None:
        ranked = ranked.filter(pl.col("position") < max_docs)
    judged = prefs.select("q", "doc_id").unique()
    return (
        judged.join(ranked.select("q", "doc_id", "position"), on=["q", "doc_id"], how="left")
        .sort(["q", "position", "doc_id"], nulls_last=True)
        .with_columns(pl.int_range(pl.len()).over("q").alias("d"), pl.col("position").is_not_null().alias("retrieved"))
    )


def _table(
    run: pl.DataFrame, prefs: pl.DataFrame, max_docs: int | None, complete: bool
) -> tuple[pl.Series, _Table, np.ndarray, np.ndarray]:
    """The evaluated query ids, the sorted preference lines, and each query's judged and judged-retrieved counts."""
    evaluated = prefs.select("query_id").unique()
    if not complete:
        evaluated = evaluated.join(run.select("query_id").unique(), on="query_id")
    evaluated = evaluated.sort("query_id")
    codes = evaluated.with_columns(pl.int_range(pl.len()).alias("q"))
    prefs = prefs.join(codes, on="query_id")
    judged = _judged_ranks(run.join(codes, on="query_id"), prefs, max_docs)
    sizes = judged.group_by("q").agg(pl.len().alias("nj"), pl.col("retrieved").sum().alias("njr"))
    sizes = codes.select("q").join(sizes, on="q", how="left").sort("q").fill_null(0)
    rows = prefs.join(judged.select("q", "doc_id", "d"), on=["q", "doc_id"]).sort(
        ["q", "jg", "jsg", "rel_level", "d"], descending=[False, False, False, True, False]
    )
    new_g = (pl.col("q") != pl.col("q").shift()) | (pl.col("jg") != pl.col("jg").shift())
    new_s = new_g | (pl.col("jsg") != pl.col("jsg").shift())
    rows = rows.with_columns(
        (new_g.fill_null(True).cum_sum() - 1).cast(pl.Int64).alias("g"),
        (new_s.fill_null(True).cum_sum() - 1).cast(pl.Int64).alias("s"),
    )
    table = _Table(
        q=rows.get_column("q").to_numpy().astype(np.int64),
        g=rows.get_column("g").to_numpy().astype(np.int64),
        s=rows.get_column("s").to_numpy().astype(np.int64),
        level=rows.get_column("rel_level").to_numpy().astype(np.float64),
        d=rows.get_column("d").to_numpy().astype(np.int64),
        doc=rows.get_column("doc_id"),
    )
    return (
        evaluated.get_column("query_id"),
        table,
        sizes.get_column("nj").to_numpy().astype(np.int64),
        sizes.get_column("njr").to_numpy().astype(np.int64),
    )


class _Edges(NamedTuple):
    """Preferences i > j (docid ranks) of each JG, with their multiplicity (one row per stated pair)."""

    g: np.ndarray
    i: np.ndarray
    j: np.ndarray
    to_last: np.ndarray  # EC JGs: j is in the JG's lowest equivalence class


def _ec_edges(t: _Table, ec: np.ndarray) -> _Edges:
    """Every pair of an equivalence-class JG's lines whose levels differ, the higher one preferred."""
    rows = np.flatnonzero(ec)
    g, level, d = t.g[rows], t.level[rows], t.d[rows]
    a, b = _pairs_after_block(_run_ends(g, level), _run_ends(g))
    same = d[a] == d[b]
    if same.any():
        at = rows[a[np.argmax(same)]]
        raise SchemaError(
            f"document {t.doc[int(at)]!r} has two relevance levels in one judgment group",
            expected="one level per document within a judgment group",
        )
    lowest = np.full(int(t.g.max()) + 1 if t.g.size else 0, np.inf)
    np.minimum.at(lowest, g, level)
    return _Edges(g[a], d[a], d[b], level[b] == lowest[g[b]])


def _pa_edges(t: _Table, pa: np.ndarray, nj: np.ndarray) -> _Edges:
    """The stated preferences of partial-order JGs (each JSG's pairs), closed under transitivity."""
    rows = np.flatnonzero(pa)
    s, g, level, d = t.s[rows], t.g[rows], t.level[rows], t.d[rows]
    a, b = _pairs_after_block(_run_ends(s, level), _run_ends(s))
    ng = int(t.g.max()) + 1 if t.g.size else 0
    size = np.zeros(ng, dtype=np.int64)
    size[t.g] = nj[t.q]
    base = np.cumsum(size) - size  # node of (JG, docid) = base[JG] + docid
    i, j = _closure(base[g[a]] + d[a], base[g[b]] + d[b], int(size.sum()))
    owner = np.searchsorted(base, i, side="right") - 1
    import scipy.sparse as sp

    conflicted = sp.csr_matrix((np.ones(i.size), (i, j)), shape=(int(size.sum()),) * 2)
    both = conflicted.multiply(conflicted.T)
    both.setdiag(0)
    both.eliminate_zeros()
    if both.nnz:
        raise SchemaError(
            "inconsistent preferences within one judgment group (a document preferred both ways)",
            expected="a consistent partial order per judgment group",
        )
    keep = i != j
    i, j, owner = i[keep], j[keep], owner[keep]
    return _Edges(owner, i - base[owner], j - base[owner], np.zeros(i.size, dtype=bool))


def _pa_levels(t: _Table, pa: np.ndarray) -> pl.DataFrame:
    """Each (JG, docid)'s level in a partial-order JG: the last one its lines give (trec_eval's rel_array)."""
    rows = pl.DataFrame({"g": t.g, "d": t.d, "level": t.level}).filter(pl.Series(pa))
    levels = rows.group_by("g", "d", maintain_order=True).agg(
        pl.col("level").last(), ((pl.col("level") > 0).any() & (pl.col("level") == 0).any()).alias("mixed")
    )
    if levels.get_column("mixed").any():
        raise SchemaError(
            "a document has both level 0 and a level above 0 in one judgment group",
            expected="0 (non-relevant) or above 0, the same in every sub-group",
        )
    return levels.sort("g", "d")


def _per_jg(g: np.ndarray, mask: np.ndarray, ng: int) -> np.ndarray:
    return np.bincount(g[mask], minlength=ng).astype(np.int64)


def _pair_measures(edges: _Edges, group_q: np.ndarray, njr: np.ndarray, nq: int) -> dict[str, np.ndarray]:
    """prefs_pair, _ret and _imp: per document pair, the share of the JGs' preferences on it the ranking fulfils."""
    q = group_q[edges.g]
    lo, hi = np.minimum(edges.i, edges.j), np.maximum(edges.i, edges.j)
    frame = pl.DataFrame({"q": q, "lo": lo, "hi": hi, "forward": edges.i == lo})
    pairs = frame.group_by("q", "lo", "hi").agg(pl.col("forward").sum().alias("f"), pl.len().alias("n"))
    pq = pairs.get_column("q").to_numpy()
    plo, phi = pairs.get_column("lo").to_numpy(), pairs.get_column("hi").to_numpy()
    block = np.where(phi < njr[pq], 0, np.where(plo < njr[pq], 1, 2))  # both retrieved, one, none
    ratio = pairs.get_column("f").to_numpy() / pairs.get_column("n").to_numpy()
    order = np.lexsort((phi, plo, block, pq))
    pq, block, ratio = pq[order], block[order], ratio[order]
    counted = block < 2
    summed_ret = _sum_in_order(ratio[block == 0], pq[block == 0], nq)
    summed = _sum_in_order(ratio[counted], pq[counted], nq)
    n_ret = np.bincount(pq[block == 0], minlength=nq)
    n_imp = np.bincount(pq[counted], minlength=nq)
    n_all = np.bincount(pq, minlength=nq)
    return {
        "prefs_pair": _guarded(summed, n_all),
        "prefs_pair_ret": _guarded(summed_ret, n_ret),
        "prefs_pair_imp": _guarded(summed, n_imp),
    }


class _Counts(NamedTuple):
    """Per JG: fulfilled and possible preferences by kind, and relevant / non-relevant documents."""

    ful_ret: np.ndarray
    poss_ret: np.ndarray
    ful_imp: np.ndarray
    poss_imp: np.ndarray
    notoccur: np.ndarray
    rel: np.ndarray
    rel_ret: np.ndarray
    nonrel: np.ndarray
    nonrel_ret: np.ndarray


def _counts(edges: _Edges, cut: np.ndarray, ng: int) -> tuple[np.ndarray, ...]:
    """Fulfilled/possible preferences per JG: both retrieved, one retrieved (implied), neither."""
    i, j, g = edges.i, edges.j, edges.g
    ful_ret = _per_jg(g, (i < j) & (j < cut), ng)
    ful_imp = _per_jg(g, (i < cut) & (j >= cut), ng)
    notoccur = _per_jg(g, (i >= cut) & (j >= cut), ng)
    poss_ret = ful_ret + _per_jg(g, (i > j) & (i < cut), ng)
    poss_imp = ful_imp + _per_jg(g, (i >= cut) & (j < cut), ng)
    return ful_ret, poss_ret, ful_imp, poss_imp, notoccur


def _relevant_counts(t: _Table, ec: np.ndarray, levels: pl.DataFrame, njr: np.ndarray, ng: int):
    """rel, rel_ret, nonrel, nonrel_ret per JG: EC JGs count their lines, partial-order JGs their documents."""
    cut = njr[t.q]
    rel = _per_jg(t.g, ec & (t.level > 0), ng)
    rel_ret = _per_jg(t.g, ec & (t.level > 0) & (t.d < cut), ng)
    nonrel = _per_jg(t.g, ec & (t.level <= 0), ng)
    nonrel_ret = _per_jg(t.g, ec & (t.level <= 0) & (t.d < cut), ng)
    if levels.height:
        lg, ld = levels.get_column("g").to_numpy(), levels.get_column("d").to_numpy()
        lv = levels.get_column("level").to_numpy()
        group_q = np.zeros(ng, dtype=np.int64)
        group_q[t.g] = t.q
        lcut = njr[group_q[lg]]
        rel += _per_jg(lg, lv > 0, ng)
        rel_ret += _per_jg(lg, (lv > 0) & (ld < lcut), ng)
        nonrel += _per_jg(lg, lv == 0, ng)
        nonrel_ret += _per_jg(lg, (lv == 0) & (ld < lcut), ng)
    return rel, rel_ret, nonrel, nonrel_ret


def _ec_recount(t: _Table, ec: np.ndarray, edges: _Edges, c: _Counts, njr: np.ndarray, ng: int, retrieved: bool):
    """prefs_avgjg_Rnonrel(_ret)'s recount of an EC JG with more non-relevant documents than relevant (R).

    The lowest equivalence class is cut to its first R documents (R relevant retrieved for
    ``_ret``, which also keeps only retrieved documents); pairs among the other classes,
    then every line of the JG against the cut class, count as fulfilled when the first is
    ranked above the second and retrieved: trec_eval's recount, the lowest class included
    on the left.
    """
    group_q = np.zeros(ng, dtype=np.int64)
    group_q[t.g] = t.q
    cut_of = njr[group_q]
    keep = ~edges.to_last
    i, j, g = edges.i[keep], edges.j[keep], edges.g[keep]
    if retrieved:
        inside = (i < cut_of[g]) & (j < cut_of[g])
        i, j, g = i[inside], j[inside], g[inside]
        ful = _per_jg(g, i < j, ng)
    else:
        ful = _per_jg(g, (i < j) & (i < cut_of[g]), ng)
    total = np.bincount(g, minlength=ng).astype(np.int64)
    # the JG's lines (left) and its lowest class's first documents (right)
    rows = np.flatnonzero(ec)
    rg, rd, rlevel = t.g[rows], t.d[rows], t.level[rows]
    left = np.ones(rows.size, dtype=bool) if not retrieved else rd < cut_of[rg]
    lowest_start = _run_starts(rg, rlevel)
    last_block = _run_ends(rg) == _run_ends(rg, rlevel)
    wanted = (c.rel_ret if retrieved else c.rel)[rg]
    right = last_block & (np.arange(rows.size) - lowest_start < wanted)
    if retrieved:
        right &= rd < cut_of[rg]
    span = int(rd.max(initial=0)) + 2
    keys = np.sort(rg[left] * span + rd[left])
    rg_r, rd_r = rg[right], rd[right]
    limit = rd_r if retrieved else np.minimum(rd_r, cut_of[rg_r])
    below = np.searchsorted(keys, rg_r * span + limit) - np.searchsorted(keys, rg_r * span)
    ful = ful + np.bincount(rg_r, weights=below, minlength=ng).astype(np.int64)
    total = total + np.bincount(rg, weights=left, minlength=ng).astype(np.int64) * np.bincount(rg_r, minlength=ng)
    return ful, total


def _pa_recount(
    levels: pl.DataFrame, edges: _Edges, c: _Counts, njr: np.ndarray, group_q: np.ndarray, ng: int, retrieved: bool
):
    """The same recount for a partial-order JG: non-relevant documents after its first R are left out."""
    if levels.height == 0:
        return np.zeros(ng, dtype=np.int64), np.zeros(ng, dtype=np.int64)
    lg, ld = levels.get_column("g").to_numpy(), levels.get_column("d").to_numpy()
    zero = levels.get_column("level").to_numpy() == 0
    cut_of = njr[group_q]
    scanned = zero & (ld < cut_of[lg]) if retrieved else zero
    nth = pl.DataFrame({"g": lg[scanned]}).select(pl.int_range(pl.len()).over("g")).to_series().to_numpy()
    found = nth == c.rel[lg[scanned]]  # the (R + 1)-th non-relevant document: the first one left out
    first_out = np.full(ng, np.iinfo(np.int64).max)
    first_out[lg[scanned][found]] = ld[scanned][found]
    span = int(max(ld.max(initial=0), edges.i.max(initial=0), edges.j.max(initial=0))) + 2
    zero_keys = np.sort(lg[zero] * span + ld[zero])

    def left_out(g: np.ndarray, d: np.ndarray) -> np.ndarray:
        if zero_keys.size == 0:
            return np.zeros(g.size, dtype=bool)
        key = g * span + d
        at = np.searchsorted(zero_keys, key)
        is_zero = (at < zero_keys.size) & (zero_keys[np.minimum(at, max(zero_keys.size - 1, 0))] == key)
        return is_zero & (d >= first_out[g])

    pa = np.zeros(ng, dtype=bool)
    pa[lg] = True
    i, j, g = edges.i, edges.j, edges.g
    keep = pa[g] & ~left_out(g, i) & ~left_out(g, j)
    if retrieved:
        keep &= (i < cut_of[g]) & (j < cut_of[g])
    i, j, g = i[keep], j[keep], g[keep]
    ful = _per_jg(g, (i < j) & (i < cut_of[g]), ng)
    return ful, np.bincount(g, minlength=ng).astype(np.int64)


def preference_measures(
    run: pl.DataFrame, prefs: pl.DataFrame, *, max_docs: int | None = None, complete: bool = False
) -> pl.DataFrame:
    """trec_eval's preference measures of every query in both the run and the preferences.

    Parameters
    ----------
    run : polars.DataFrame
        ``query_id, doc_id, score`` (a run as :func:`ragframe.read_trec_run` reads it).
    prefs : polars.DataFrame
        ``query_id, jg, jsg, doc_id, rel_level`` (Float64): one line of a preference file each.
    max_docs : int, optional
        trec_eval ``-M``.
    complete : bool
        trec_eval ``-c``: every query of the preferences, one the run lacks as an empty ranking.

    Returns
    -------
    polars.DataFrame
        ``query_id`` (sorted) and one column per name of :data:`PREFERENCE_MEASURES` (Int64
        counts, Float64 values).

    Examples
    --------
    >>> run = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> prefs = pl.DataFrame({"query_id": ["q"] * 3, "jg": ["u"] * 3, "jsg": ["1"] * 3,
    ...                       "doc_id": ["a", "b", "c"], "rel_level": [1.0, 2.0, 0.0]})
    >>> row = preference_measures(run, prefs).row(0, named=True)  # b > a, b > c, a > c: two of three fulfilled
    >>> row["prefs_num_prefs_poss"], row["prefs_num_prefs_ful"], round(row["prefs_simp"], 4)
    (3, 2, 0.6667)
    """
    qids, t, nj, njr = _table(run, prefs, max_docs, complete)
    nq = qids.len()
    if nq == 0:  # no query with both results and preferences
        schema = {name: pl.Int64 if name.startswith("prefs_num") else pl.Float64 for name in PREFERENCE_MEASURES}
        return pl.DataFrame(schema={"query_id": qids.dtype, **schema})
    ng = int(t.g.max()) + 1 if t.g.size else 0
    group_q = np.zeros(ng, dtype=np.int64)
    group_q[t.g] = t.q
    first_of_jsg = np.flatnonzero(np.append(True, t.s[1:] != t.s[:-1]))
    partial = np.bincount(t.g[first_of_jsg], minlength=ng) > 1  # several JSGs: a partial order
    pa_row = partial[t.g]
    ec_edges = _ec_edges(t, ~pa_row)
    pa_edges = _pa_edges(t, pa_row, nj)
    edges = _Edges(*(np.concatenate([a, b]) for a, b in zip(ec_edges, pa_edges)))
    order = np.argsort(edges.g, kind="stable")
    edges = _Edges(*(column[order] for column in edges))
    levels = _pa_levels(t, pa_row)
    cut = njr[group_q[edges.g]]
    c = _Counts(*_counts(edges, cut, ng), *_relevant_counts(t, ~pa_row, levels, njr, ng))

    ful = c.ful_ret + c.ful_imp
    poss = c.poss_ret + c.poss_imp + c.notoccur
    by_query = {name: np.bincount(group_q, weights=v, minlength=nq) for name, v in
                (("ful", ful), ("poss", poss), ("ful_ret", c.ful_ret), ("poss_ret", c.poss_ret),
                 ("poss_imp", c.poss_ret + c.poss_imp))}  # fmt: skip
    n_jgs = np.bincount(group_q, minlength=nq).astype(np.float64)

    def averaged(per_jg: np.ndarray) -> np.ndarray:
        total = _sum_in_order(per_jg, group_q, nq)
        with np.errstate(invalid="ignore"):
            return np.where(total > 0, total / np.maximum(n_jgs, 1), 0.0)

    rnonrel = _rnonrel(t, edges, c, njr, group_q, levels, partial, ng, retrieved=False)
    rnonrel_ret = _rnonrel(t, edges, c, njr, group_q, levels, partial, ng, retrieved=True)
    values = {
        "prefs_num_prefs_poss": by_query["poss"].astype(np.int64),
        "prefs_num_prefs_ful": by_query["ful"].astype(np.int64),
        "prefs_num_prefs_ful_ret": by_query["ful_ret"].astype(np.int64),
        "prefs_simp": _guarded(by_query["ful"], by_query["poss"]),
        "prefs_avgjg": averaged(_guarded(ful, poss)),
        "prefs_avgjg_Rnonrel": averaged(rnonrel),
        "prefs_simp_ret": _guarded(by_query["ful_ret"], by_query["poss_ret"]),
        "prefs_avgjg_ret": averaged(_guarded(c.ful_ret, c.poss_ret)),
        "prefs_avgjg_Rnonrel_ret": averaged(rnonrel_ret),
        "prefs_simp_imp": _guarded(by_query["ful"], by_query["poss_imp"]),
        "prefs_avgjg_imp": averaged(_guarded(ful, c.poss_ret + c.poss_imp)),
        **_pair_measures(edges, group_q, njr, nq),
    }
    columns = [qids.rename("query_id")]
    for name in PREFERENCE_MEASURES:
        dtype = pl.Int64 if name.startswith("prefs_num") else pl.Float64
        columns.append(pl.Series(name, values[name], dtype=dtype))
    return pl.DataFrame(columns)


def _rnonrel(t, edges, c, njr, group_q, levels, partial, ng, *, retrieved: bool) -> np.ndarray:
    """Per JG, prefs_avgjg_Rnonrel(_ret)'s ratio: as many non-relevant documents as relevant ones (R)."""
    R = c.rel_ret if retrieved else c.rel
    N = c.nonrel_ret if retrieved else c.nonrel
    if retrieved:
        ful = c.ful_ret + c.rel_ret * (R - N)
        poss = c.poss_ret + c.rel * (R - N)
    else:
        ful = c.ful_ret + c.ful_imp + c.rel_ret * (R - N)
        poss = c.poss_ret + c.poss_imp + c.notoccur + c.rel * (R - N)
    ec_ful, ec_total = _ec_recount(t, ~partial[t.g], edges, c, njr, ng, retrieved)
    pa_ful, pa_total = _pa_recount(levels, edges, c, njr, group_q, ng, retrieved)
    recount_ful = np.where(partial, pa_ful, ec_ful)
    recount_total = np.where(partial, pa_total, ec_total)
    ful = np.where(R >= N, ful, recount_ful)
    poss = np.where(R >= N, poss, recount_total)
    return _ratio(ful, poss)
