"""Ranking kernels: flat arrays with per-query codes in, per-query measures out.

A *ranking* is given as flat arrays over all retrieved documents of all queries,
grouped by query and in rank order (CSR style): ``run_q`` holds each row's query
code (0 .. n_queries-1, non-decreasing) and ``run_doc`` its document id. The
*judgments* are flat arrays too: ``judged_q``, ``judged_doc``, ``judged_grade``.
No function here loops over queries in Python: matching a ranking to its
judgments is a hash join on 64-bit keys verified by exact string comparison, and
every measure is a ``bincount``/``cumsum`` over the flat arrays.

Semantics are trec_eval's (``spec/retrieval.md``): a document is relevant when
its grade >= ``relevance_level``; NDCG gains are the grades themselves (grades
<= 0 give no gain); the ideal ranking is built from all judged documents of the
query; a document id repeated within one ranking counts only at its first
position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from ragframe.exceptions import SchemaError

__all__ = [
    "CUT_MEASURES",
    "FULL_MEASURES",
    "COUNT_MEASURES",
    "Judgments",
    "pair_keys",
    "dedupe_judgments",
    "match_judgments",
    "compute_measures",
]

#: Measures computed at each cutoff k; the column is ``<name>`` with ``k`` filled in.
CUT_MEASURES: tuple[str, ...] = (
    "precision_at_k",
    "recall_at_k",
    "f1_at_k",
    "hit_rate_at_k",
    "recall_all_at_k",
    "ndcg_at_k",
    "mrr_at_k",
)
#: Measures over the whole ranking.
FULL_MEASURES: tuple[str, ...] = ("ndcg", "mrr", "average_precision", "r_precision")
#: Integer counts trec_eval reports (summed, not averaged, over queries).
COUNT_MEASURES: tuple[str, ...] = ("num_ret", "num_rel", "num_rel_ret")

_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant: query code * _MIX is a bijection
_SEED = 0x5EED


def pair_keys(q: np.ndarray, doc: pl.Series) -> np.ndarray:
    """64-bit keys of (query code, document id) pairs; equal pairs give equal keys.

    Different pairs may (with probability about 2**-64) share a key, so every
    use of a key match is verified by comparing the strings.
    """
    doc_hash = doc.hash(_SEED).to_numpy()
    return (q.astype(np.uint64) * _MIX) ^ doc_hash


@dataclass(frozen=True)
class Judgments:
    """Deduplicated judgments as flat arrays.

    Attributes
    ----------
    q : numpy.ndarray
        Query code of each judgment (int64).
    doc : polars.Series
        Judged document ids (String).
    grade : numpy.ndarray
        Integer grade of each judgment (int64).
    judged : numpy.ndarray
        Bool per query: the query has judgments (possibly none relevant). Queries
        without judgments get null measures.
    """

    q: np.ndarray
    doc: pl.Series
    grade: np.ndarray
    judged: np.ndarray


def dedupe_judgments(
    q: np.ndarray,
    doc: pl.Series,
    grade: np.ndarray,
    *,
    function: str,
    column: str,
    row_of: np.ndarray | None = None,
) -> tuple[np.ndarray, pl.Series, np.ndarray]:
    """Drop repeated (query, document) judgments that agree; raise on conflicting grades.

    ``row_of`` maps each judgment to the input row it came from (for the error).
    """
    keys = pair_keys(q, doc)
    dup = pl.Series(keys).is_duplicated().to_numpy()
    if not dup.any():
        return q, doc, grade
    idx = np.flatnonzero(dup)
    sub = pl.DataFrame({"i": idx, "q": q[idx], "doc": doc.gather(idx), "grade": grade[idx]})
    # the offending row: the first one whose grade differs from the first grade of its (query, document)
    conflicts = (
        sub.sort("i")
        .group_by("q", "doc")
        .agg(
            pl.col("i").filter(pl.col("grade") != pl.col("grade").first()).first(),
            pl.col("grade").unique().sort().alias("g"),
        )
        .filter(pl.col("i").is_not_null())
    )
    if conflicts.height:
        first = conflicts.sort("i").row(0, named=True)
        row = int(row_of[first["i"]]) if row_of is not None else int(first["i"])
        raise SchemaError(
            f"document {first['doc']!r} is judged more than once with different grades",
            function=function,
            column=column,
            row=row,
            expected="one grade per (query, document)",
            found=f"grades {first['g']}",
        )
    keep = pl.DataFrame({"q": q, "doc": doc}).select(pl.struct("q", "doc").is_first_distinct()).to_series().to_numpy()
    return q[keep], doc.filter(pl.Series(keep)), grade[keep]


def match_judgments(run_q: np.ndarray, run_doc: pl.Series, judgments: Judgments) -> tuple[np.ndarray, np.ndarray]:
    """Find each retrieved row's judgment.

    Returns
    -------
    grade : numpy.ndarray
        int64 grade per retrieved row, 0 where unjudged or a repeat.
    judged : numpy.ndarray
        bool per retrieved row: judged and the first occurrence of its document.
    """
    n = len(run_q)
    grade = np.zeros(n, dtype=np.int64)
    judged = np.zeros(n, dtype=bool)
    if n == 0 or len(judgments.q) == 0:
        return grade, judged
    run_keys = pl.Series("key", pair_keys(run_q, run_doc))
    judged_keys = pl.Series("key", pair_keys(judgments.q, judgments.doc))
    hit = run_keys.is_in(judged_keys.implode()).arg_true()
    if hit.len() == 0:
        return grade, judged
    pairs = (
        pl.DataFrame({"key": run_keys.gather(hit), "i": hit})
        .join(pl.DataFrame({"key": judged_keys}).with_row_index("j"), on="key", how="inner")
        .sort("i")
    )
    i = pairs.get_column("i").to_numpy()
    j = pairs.get_column("j").to_numpy().astype(np.int64)
    same = (run_q[i] == judgments.q[j]) & (run_doc.gather(i) == judgments.doc.gather(j)).to_numpy()
    i, j = i[same], j[same]
    # a document repeated within a ranking counts only at its first position
    first = pl.Series(j).is_first_distinct().to_numpy()
    i, j = i[first], j[first]
    grade[i] = judgments.grade[j]
    judged[i] = True
    return grade, judged


def _rel_in_top(cum: np.ndarray, starts: np.ndarray, counts: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """Count of relevant rows among the first ``depth`` of each query (cum has a leading 0)."""
    take = np.minimum(np.maximum(depth, 0), counts)
    return cum[starts + take] - cum[starts]


def compute_measures(
    run_q: np.ndarray,
    grade: np.ndarray,
    judged_row: np.ndarray,
    judgments: Judgments,
    n_queries: int,
    *,
    ks: Sequence[int],
    measures: Sequence[str],
    relevance_level: int = 1,
) -> dict[str, np.ndarray]:
    """Compute ranking measures for every query at once.

    Parameters
    ----------
    run_q : numpy.ndarray
        Query code per retrieved row, non-decreasing (rows in rank order).
    grade, judged_row : numpy.ndarray
        From :func:`match_judgments`.
    judgments : Judgments
        The query's judgments (for R and the ideal ranking).
    n_queries : int
        Number of queries (codes 0 .. n_queries-1; a query may retrieve nothing).
    ks : sequence of int
        Cutoffs for the ``*_at_k`` measures.
    measures : sequence of str
        Names from :data:`CUT_MEASURES`, :data:`FULL_MEASURES`, :data:`COUNT_MEASURES`.
    relevance_level : int
        Minimum grade of a relevant document (trec_eval ``-l``).

    Returns
    -------
    dict
        Column name -> float64 array (NaN for queries without judgments) or int64
        array (counts). Cut measures are named with k filled in (``ndcg_at_10``).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> j = Judgments(np.array([0]), pl.Series(["b"]), np.array([1]), np.array([True]))
    >>> q = np.array([0, 0]); g, jr = match_judgments(q, pl.Series(["a", "b"]), j)
    >>> compute_measures(q, g, jr, j, 1, ks=[1], measures=["mrr"])["mrr"]
    array([0.5])
    """
    nq = n_queries
    n = len(run_q)
    counts = np.bincount(run_q, minlength=nq).astype(np.int64)
    starts = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    pos = np.arange(n, dtype=np.int64) - starts[run_q]
    rel = judged_row & (grade >= relevance_level)
    cum = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rel, out=cum[1:])
    head = starts[:-1]

    jq, jg = judgments.q, judgments.grade
    num_rel = np.bincount(jq[jg >= relevance_level], minlength=nq).astype(np.int64)
    num_rel_ret = cum[starts[1:]] - cum[head]
    has_rel = num_rel > 0
    safe_r = np.where(has_rel, num_rel, 1).astype(np.float64)
    no_judgments = ~judgments.judged

    rel_pos = np.flatnonzero(rel)
    rel_q = run_q[rel_pos]
    first_rank = np.full(nq, np.iinfo(np.int64).max)  # 0-based rank of the first relevant row
    if rel_pos.size:
        is_first = np.ones(rel_pos.size, dtype=bool)
        is_first[1:] = rel_q[1:] != rel_q[:-1]
        first_rank[rel_q[is_first]] = pos[rel_pos[is_first]]

    gain_pos = np.flatnonzero(judged_row & (grade > 0))
    gain_q = run_q[gain_pos]
    gain_rank = pos[gain_pos]
    gain_disc = grade[gain_pos] / np.log2(gain_rank + 2.0)
    ideal_q, ideal_rank, ideal_disc = _ideal(jq, jg)

    def dcg(q: np.ndarray, rank: np.ndarray, disc: np.ndarray, k: int | None) -> np.ndarray:
        w = disc if k is None else np.where(rank < k, disc, 0.0)
        return np.bincount(q, weights=w, minlength=nq)

    def ndcg(k: int | None) -> np.ndarray:
        ideal = dcg(ideal_q, ideal_rank, ideal_disc, k)
        actual = dcg(gain_q, gain_rank, gain_disc, k)
        return np.divide(actual, ideal, out=np.zeros(nq), where=ideal > 0)

    out: dict[str, np.ndarray] = {}
    wanted = set(measures)
    for k in ks:
        top = _rel_in_top(cum, head, counts, np.full(nq, k))
        precision = top / float(k)
        recall = np.where(has_rel, top / safe_r, 0.0)
        values = {
            "precision_at_k": precision,
            "recall_at_k": recall,
            "hit_rate_at_k": (top > 0).astype(np.float64),
            "recall_all_at_k": (has_rel & (top == num_rel)).astype(np.float64),
            "mrr_at_k": np.where(first_rank < k, 1.0 / (np.minimum(first_rank, k) + 1.0), 0.0),
        }
        if "f1_at_k" in wanted:
            total = precision + recall
            values["f1_at_k"] = np.divide(2 * precision * recall, total, out=np.zeros(nq), where=total > 0)
        if "ndcg_at_k" in wanted:
            values["ndcg_at_k"] = ndcg(k)
        for name in CUT_MEASURES:
            if name in wanted:
                out[name.replace("_at_k", f"_at_{k}")] = values[name]
    if "ndcg" in wanted:
        out["ndcg"] = ndcg(None)
    if "mrr" in wanted:
        found = first_rank < np.iinfo(np.int64).max
        out["mrr"] = np.where(found, 1.0 / (np.where(found, first_rank, 0) + 1.0), 0.0)
    if "average_precision" in wanted:
        precision_at_rel = (cum[rel_pos + 1] - cum[head[rel_q]]) / (pos[rel_pos] + 1.0)
        out["average_precision"] = np.bincount(rel_q, weights=precision_at_rel, minlength=nq) / safe_r
    if "r_precision" in wanted:
        out["r_precision"] = _rel_in_top(cum, head, counts, num_rel) / safe_r
    for name, values_ in out.items():
        values_[no_judgments] = np.nan
        out[name] = values_
    counts_out = {"num_ret": counts, "num_rel": num_rel, "num_rel_ret": num_rel_ret}
    for name in COUNT_MEASURES:
        if name in wanted:
            out[name] = counts_out[name]
    return out


def _ideal(jq: np.ndarray, jg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query code, 0-based rank and discounted gain of each document of the ideal rankings."""
    keep = jg > 0
    ordered = pl.DataFrame({"q": jq[keep], "g": jg[keep]}).sort(["q", "g"], descending=[False, True])
    q = ordered.get_column("q").to_numpy()
    g = ordered.get_column("g").to_numpy()
    if q.size == 0:
        return q, q.copy(), np.zeros(0)
    new = np.ones(q.size, dtype=bool)
    new[1:] = q[1:] != q[:-1]
    group_start = np.flatnonzero(new)
    rank = np.arange(q.size) - np.repeat(group_start, np.diff(np.append(group_start, q.size)))
    return q, rank, g / np.log2(rank + 2.0)
