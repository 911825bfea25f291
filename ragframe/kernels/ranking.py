"""Ranking kernels: flat arrays with per-query codes in, per-query measures out.

A *ranking* is given as flat arrays over all retrieved documents of all queries,
grouped by query and in rank order (CSR style): ``run_doc`` holds each row's document
id and ``counts`` the number of rows of each query (query codes 0 .. n_queries-1);
where a kernel needs each row's query code it is ``run_q`` (non-decreasing). The
*judgments* are flat arrays too (:class:`Judgments`): query code, document id, grade.
No function here loops over queries in Python: matching a ranking to its
judgments sorts each query's document hashes in a row of a matrix (or, where that
does not suit, is a hash join on 64-bit keys), every match verified by exact string
comparison, and every measure is a ``bincount``/``cumsum`` over the flat arrays.

Semantics are trec_eval's (``docs/metrics.md``): a judged document is relevant when
its grade >= ``relevance_level`` (the level is >= 0, checked by the callers; unjudged
documents are never relevant, and only judged ones count in R); NDCG gains are the grades themselves (grades
<= 0 give no gain); the ideal ranking is built from all judged documents of the
query; a document id repeated within one ranking counts only at its first
position.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, cast

import numpy as np
import polars as pl

from ragframe.concurrency import thread_count
from ragframe.exceptions import SchemaError
from ragframe.kernels.trec_measures import TrecOptions, trec_measures

__all__ = [
    "CUT_MEASURES",
    "FULL_MEASURES",
    "COUNT_MEASURES",
    "Judgments",
    "pair_keys",
    "maybe_repeated",
    "repeated_in_groups",
    "dedupe_judgments",
    "match_judgments",
    "rank_measures",
    "compute_measures",
    "average_precision",
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

_CHUNK_ROWS = 312_500
_MIX = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constant: query code * _MIX is a bijection
_SEED = 0x5EED
_MAX_WINDOW = 4096  # longer groups: a hash set over all keys (sorting windows this wide costs more)
_WINDOW_BLOCK = 1 << 20  # rows sorted at a time (bounded temporaries)
_NETWORK = 128  # rows of at most this many keys sort in registers (numpy's AVX-512 and AVX2 sorts)
_MAX_RUN = 64  # more keys of one row with equal hash bits: the hash join decides


def pair_keys(q: np.ndarray, doc: pl.Series) -> np.ndarray:
    """64-bit keys of (query code, document id) pairs; equal pairs give equal keys.

    Different pairs may (with probability about 2**-64) share a key, so every
    use of a key match is verified by comparing the strings.
    """
    keys = q.astype(np.uint64)
    keys *= _MIX
    keys ^= doc.hash(_SEED).to_numpy()
    return keys


def maybe_repeated(lengths: np.ndarray, doc: pl.Series) -> bool:
    """Whether a document may be listed twice within one group of consecutive rows.

    Group ``g`` is the next ``lengths[g]`` rows of ``doc``. ``False`` is exact: no group
    lists a document twice. ``True`` is almost always a repeat, but may be two documents
    whose 64-bit keys collide: the caller checks the strings.

    The (group, document) keys are sorted within windows of ``w`` rows, ``w`` a power of
    two at least twice the longest group, in two tilings offset by ``w / 2``: two rows of
    one group are less than ``w / 2`` apart, so some window of one tiling holds both.
    Small windows sort in cache: several times faster than a hash set over all rows.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> maybe_repeated(np.array([2, 2]), pl.Series(["a", "b", "b", "c"]))
    False
    >>> maybe_repeated(np.array([3, 1]), pl.Series(["a", "b", "a", "c"]))
    True
    """
    longest = int(lengths.max()) if lengths.size else 0
    ends = np.cumsum(lengths, dtype=np.int64)
    codes = np.arange(lengths.size, dtype=np.uint64)
    codes *= _MIX

    def keys(start: int, stop: int) -> np.ndarray:  # of rows start .. stop - 1
        first = int(np.searchsorted(ends, start, side="right"))
        last = int(np.searchsorted(ends, stop - 1, side="right"))
        group_ends = np.minimum(ends[first : last + 1], stop)
        group_starts = np.maximum(np.concatenate(([start], ends[first:last])), start)
        block = np.repeat(codes[first : last + 1], group_ends - group_starts)
        block ^= doc.slice(start, stop - start).hash(_SEED).to_numpy()
        return block

    return _repeated_keys(keys, doc.len(), longest)


def _repeated_keys(keys: Callable[[int, int], np.ndarray], n: int, longest: int) -> bool:
    """Whether two of ``n`` keys are equal, equal keys lying at most ``longest`` rows apart.

    ``keys(start, stop)`` gives the keys of rows ``start .. stop - 1``. Sorted within windows
    of a power of two ``w`` >= 2 x ``longest`` rows in two tilings offset by ``w / 2`` (two
    equal keys share a window of one tiling); a hash set when the windows would be too wide.
    """
    if longest < 2 or n < 2:
        return False
    width = 1 << (2 * longest - 1).bit_length()
    if width > _MAX_WINDOW:
        every = pl.Series(keys(0, n))
        return bool(every.n_unique() != every.len())
    return _window_repeats(keys, n, width, 0) or _window_repeats(keys, n, width, width // 2)


def _window_repeats(keys: Callable[[int, int], np.ndarray], n: int, width: int, offset: int) -> bool:
    """Whether two equal keys share a window: ``[0, offset)``, then ``width`` rows each, then the rest.

    Keys are made and sorted a block of about a million rows at a time (temporaries stay small).
    """
    bounds = [0, min(offset, n)] if offset else [0]
    block = max(width, _WINDOW_BLOCK - _WINDOW_BLOCK % width)
    bounds += range(bounds[-1] + block, n, block)
    bounds.append(n)
    for start, stop in itertools.pairwise(bounds):
        if start >= stop:
            continue
        part = keys(start, stop)
        whole = part.size - part.size % width
        windows = np.sort(part[:whole].reshape(-1, width), axis=1)
        if bool((windows[:, 1:] == windows[:, :-1]).any()):
            return True
        tail = np.sort(part[whole:])  # the last rows, or the first ``offset`` rows
        if bool((tail[1:] == tail[:-1]).any()):
            return True
    return False


def repeated_in_groups(keys: np.ndarray, lengths: np.ndarray) -> bool:
    """Whether two of ``keys`` are equal within one group of consecutive rows (``False`` is exact).

    Group ``g`` is the next ``lengths[g]`` keys. When every non-empty group has one length
    (a run cut at a fixed depth, the usual TREC run), each group is sorted in a row of its
    own; otherwise windows are sorted as in :func:`maybe_repeated`.

    Examples
    --------
    >>> import numpy as np
    >>> repeated_in_groups(np.array([1, 2, 2, 3], dtype=np.uint64), np.array([2, 2]))
    False
    >>> repeated_in_groups(np.array([1, 2, 3, 1], dtype=np.uint64), np.array([4, 0]))
    True
    """
    longest = int(lengths.max()) if lengths.size else 0
    if longest < 2:
        return False
    if int(lengths[lengths > 0].min()) == longest:  # one sort per group, each group a row
        rows = np.sort(keys.reshape(-1, longest), axis=1)
        return bool((rows[:, 1:] == rows[:, :-1]).any())
    return _repeated_keys(lambda start, stop: keys[start:stop], keys.size, longest)


def _judged_twice(q: np.ndarray, keys: np.ndarray) -> bool:
    """Whether two judgments may share a (query, document) key (``False`` is exact)."""
    if q.size < 2:
        return False
    if bool(np.all(q[1:] >= q[:-1])):  # grouped by query, as qrels are: its keys lie within a query's rows
        return _repeated_keys(lambda start, stop: keys[start:stop], keys.size, int(np.bincount(q).max()))
    return bool(pl.Series(keys).n_unique() != keys.size)


class Judgments:
    """Deduplicated judgments as flat arrays.

    Attributes
    ----------
    q : numpy.ndarray
        Query code of each judgment (int64). When ``per_query`` is given, ``q`` may be ``None``
        and is then made from it on first use (the usual input never needs the whole array).
    doc : polars.Series
        Judged document ids (String).
    grade : numpy.ndarray
        Integer grade of each judgment (int64). May be given as an Int64 Series: converted on
        first use, and :meth:`grades` converts a slice alone (no copy of a whole chunked column).
    judged : numpy.ndarray
        Bool per query: the query has judgments (possibly none relevant). Queries
        without judgments get null measures.
    per_query : numpy.ndarray or None
        The number of judgments of each query when they are grouped by query in code order
        (query 0's first, as qrels usually come): :func:`rank_measures` splits them by it.
        ``None``: not known.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> docs, grades = pl.Series(["a", "b", "c"]), np.array([1, 0, 2])
    >>> j = Judgments(None, docs, grades, np.ones(2, bool), per_query=np.array([2, 1]))
    >>> j.q
    array([0, 0, 1])
    >>> Judgments(None, docs, pl.Series(grades), np.ones(2, bool), per_query=np.array([2, 1])).grades(1, 3)
    array([0, 2])
    """

    __slots__ = ("_grade", "_q", "doc", "judged", "per_query")

    def __init__(
        self,
        q: np.ndarray | None,
        doc: pl.Series,
        grade: np.ndarray | pl.Series,
        judged: np.ndarray,
        *,
        per_query: np.ndarray | None = None,
    ) -> None:
        if q is None and per_query is None:
            raise ValueError("Judgments needs q or per_query")
        self._q, self.doc, self._grade, self.judged, self.per_query = q, doc, grade, judged, per_query

    @property
    def grade(self) -> np.ndarray:
        if isinstance(self._grade, pl.Series):
            self._grade = self._grade.to_numpy()
        return self._grade

    def grades(self, start: int, stop: int) -> np.ndarray:
        """The grades of judgments ``start`` to ``stop - 1``."""
        if isinstance(self._grade, pl.Series):
            return self._grade.slice(start, stop - start).to_numpy()
        return self._grade[start:stop]

    @property
    def q(self) -> np.ndarray:
        if self._q is None:
            per_query = cast("np.ndarray", self.per_query)
            self._q = np.repeat(np.arange(per_query.size, dtype=np.int64), per_query)
        return self._q


def dedupe_judgments(
    q: np.ndarray,
    doc: pl.Series,
    grade: np.ndarray,
    *,
    column: str,
    row_of: np.ndarray | None = None,
) -> tuple[np.ndarray, pl.Series, np.ndarray]:
    """Drop repeated (query, document) judgments that agree; raise on conflicting grades.

    ``row_of`` maps each judgment to the input row it came from (for the error).
    """
    keys = pl.Series(pair_keys(q, doc))
    if keys.n_unique() == keys.len():  # the usual case: no repeated (query, document)
        return q, doc, grade
    dup = keys.is_duplicated().to_numpy()
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
            column=column,
            row=row,
            expected="one grade per (query, document)",
            found=f"grades {first['g']}",
        )
    keep = pl.DataFrame({"q": q, "doc": doc}).select(pl.struct("q", "doc").is_first_distinct()).to_series().to_numpy()
    return q[keep], doc.filter(pl.Series(keep)), grade[keep]


def match_judgments(
    run_q: np.ndarray,
    run_doc: pl.Series,
    judgments: Judgments,
    judged_keys: np.ndarray | None = None,
    run_keys: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Find the retrieved rows that have a judgment.

    Only the matches are materialised (judged rows are a small share of a run), so memory
    stays near the size of the input columns.

    Returns
    -------
    rows : numpy.ndarray
        Sorted positions of the retrieved rows that are judged, first occurrence of their
        document in the ranking only (a repeat counts as unjudged).
    grade : numpy.ndarray
        Their grades (int64).
    """
    empty = np.zeros(0, dtype=np.int64)
    if len(run_q) == 0 or len(judgments.q) == 0:
        return empty, empty
    if run_keys is None:
        run_keys = pair_keys(run_q, run_doc)
    if judged_keys is None:
        judged_keys = pair_keys(judgments.q, judgments.doc)
    retrieved = pl.LazyFrame({"key": run_keys}).with_row_index("i")
    judged = pl.LazyFrame({"key": judged_keys}).with_row_index("j")
    # lazy and unordered: polars' streaming join is about twice as fast as the eager, ordered one
    # (measured: 19 against 34 ms for 1.25M x 250k keys); the few matches are ordered here
    pairs = retrieved.join(judged, on="key", how="inner", maintain_order="none").select("i", "j").collect()
    if pairs.height == 0:
        return empty, empty
    i = pairs.get_column("i").to_numpy().astype(np.int64)
    j = pairs.get_column("j").to_numpy().astype(np.int64)
    order = np.argsort(i, kind="stable")
    i, j = i[order], j[order]
    same = (run_q[i] == judgments.q[j]) & (run_doc.gather(i) == judgments.doc.gather(j)).to_numpy()
    i, j = i[same], j[same]
    # a document repeated within a ranking counts only at its first position
    if j.size and np.bincount(j).max() > 1:  # rare: look for first positions only then
        first = pl.Series(j).is_first_distinct().to_numpy()
        i, j = i[first], j[first]
    return i, judgments.grade[j]


def rank_measures(
    run_doc: pl.Series,
    counts: np.ndarray,
    judgments: Judgments,
    *,
    ks: Sequence[int],
    measures: Sequence[str],
    relevance_level: int = 1,
    chunks: int | None = None,
    check_unique: bool = False,
    check_repeats: bool = False,
    trec: TrecOptions | None = None,
    virtual: np.ndarray | None = None,
) -> dict[str, np.ndarray] | None:
    """Match a ranking to its judgments and compute the measures (see :func:`compute_measures`).

    With ``trec``, trec_eval's measures of :mod:`ragframe.kernels.trec_measures` are computed
    too, from the same matching (``virtual``: its bool per query, trec_eval ``-c``'s
    placeholder); ``measures``/``ks`` then only when ``measures`` is not empty.

    ``run_doc`` holds the retrieved documents grouped by query (query 0's first), each
    query's in rank order, and ``counts`` the number of rows of each query: the rows of
    query ``q`` are ``counts[:q].sum()`` onwards. Queries are independent, so
    large inputs (a million rows or more) are split into ``chunks`` contiguous ranges of
    queries (default: about 300,000 rows each, at least 2 per core) scored on a thread per
    core; an explicit ``chunks`` forces that split whatever the size. The result does not
    depend on the split.

    The judgments must have one grade per (query, document) (:func:`dedupe_judgments`). With
    ``check_unique=True`` that is checked here, a chunk at a time on the threads, and the
    result is ``None`` when it does not hold (the caller then dedupes and calls again: the
    usual input, unique judgments, is checked without a pass of its own). With
    ``check_repeats=True`` the result is also ``None`` when a document may be listed twice
    for one query (:func:`repeated_in_groups` on the keys the matching hashes anyway: the
    caller then looks for the repeat exactly).
    """
    cores = thread_count()
    # chunks of ~300k rows: their sorted rows stay in cache (measured on 10M rows, CPU seconds, 2 cores:
    # 32 chunks 0.33-0.35, 16 chunks 0.36-0.42, 64 chunks 0.35-0.38, 128 chunks 0.39-0.41)
    n_rows = int(counts.sum())
    n_chunks = chunks or max(2 * cores, -(-n_rows // _CHUNK_ROWS))
    if chunks is None and (n_rows < 1_000_000 or counts.size < 2 * n_chunks):
        n_chunks = 1
    nq = counts.size
    starts = np.zeros(nq + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    n_chunks = max(1, min(n_chunks, nq))
    bounds = np.linspace(0, nq, n_chunks + 1).astype(np.int64)

    # judgments grouped by query (the usual qrels layout): each chunk's are one slice, no filter
    per_query = judgments.per_query
    if per_query is not None:  # known grouped, with the count of each query: no pass over the codes
        jstarts = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(per_query, out=jstarts[1:])
    grouped = per_query is not None or (n_chunks > 1 and bool(np.all(judgments.q[1:] >= judgments.q[:-1])))

    def score(q0: int, q1: int) -> dict[str, np.ndarray] | None:
        r0, r1 = int(starts[q0]), int(starts[q1])
        if per_query is not None:
            j0, j1 = int(jstarts[q0]), int(jstarts[q1])
            part = Judgments(
                None,
                judgments.doc.slice(j0, j1 - j0),
                judgments.grades(j0, j1),
                judgments.judged[q0:q1],
                per_query=per_query[q0:q1],
            )
        elif grouped:
            j0, j1 = (int(j) for j in np.searchsorted(judgments.q, [q0, q1]))
            part = Judgments(
                q=judgments.q[j0:j1] - q0,
                doc=judgments.doc.slice(j0, j1 - j0),
                grade=judgments.grade[j0:j1],
                judged=judgments.judged[q0:q1],
            )
        else:
            keep = (judgments.q >= q0) & (judgments.q < q1)
            part = Judgments(
                q=judgments.q[keep] - q0,
                doc=judgments.doc.filter(pl.Series(keep)) if not keep.all() else judgments.doc,
                grade=judgments.grade[keep],
                judged=judgments.judged[q0:q1],
            )
        docs = run_doc.slice(r0, r1 - r0)  # not rechunked: the matches are gathered a chunk at a time
        hits = _hits(docs, counts[q0:q1], part, check_unique=check_unique, check_repeats=check_repeats)
        if hits is None:
            return None  # a (query, document) judged twice, or retrieved twice: the caller looks exactly
        hit_q, hit_rank, grade = hits
        out: dict[str, np.ndarray] = {}
        if trec is None or measures:
            out = compute_measures(
                counts[q0:q1],
                hit_q,
                hit_rank,
                grade,
                part,
                ks=ks,
                measures=measures,
                relevance_level=relevance_level,
            )
        if trec is not None:
            out |= trec_measures(
                counts[q0:q1],
                hit_q,
                hit_rank,
                grade,
                part.q,
                part.grade,
                part.judged,
                options=trec,
                relevance_level=relevance_level,
                virtual=None if virtual is None else virtual[q0:q1],
            )
        return out

    if n_chunks == 1:
        return score(0, nq)
    joined: dict[str, np.ndarray] = {}  # each chunk copies its values in, on its thread
    unlike: list[str] = []  # a value of another dtype or shape than the first chunk's: concatenated at the end

    def score_into(q0: int, q1: int) -> dict[str, np.ndarray] | None:
        part = score(q0, q1)
        for name, values in (part or {}).items():
            if name not in joined:
                joined.setdefault(name, np.empty(nq, dtype=values.dtype))  # one array, whichever thread is first
            target = joined[name]
            if values.dtype == target.dtype and values.shape == (q1 - q0,):
                target[q0:q1] = values
            else:
                unlike.append(name)
        return part

    with ThreadPoolExecutor(max_workers=min(n_chunks, cores)) as pool:
        parts = list(pool.map(score_into, bounds[:-1], bounds[1:]))
    if any(part is None for part in parts):
        return None
    names = cast("dict[str, np.ndarray]", parts[0])
    return {
        name: np.concatenate([part[name] for part in parts]) if name in unlike else joined[name]  # type: ignore[index]
        for name in names
    }


def _hits(
    docs: pl.Series, lengths: np.ndarray, part: Judgments, *, check_unique: bool, check_repeats: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Query, 0-based rank and grade of the judged retrieved rows of one range of queries.

    ``docs`` holds the range's retrieved documents (``lengths[q]`` rows of query ``q``, in rank
    order) and ``part`` its judgments. The matching sorts each query's keys in a row
    (:func:`_pairs_in_rows`); when that does not suit the input or meets a case it does not
    settle (a key twice in one query, padding, a chance collision), a hash join on (query,
    document) keys (:func:`match_judgments`) decides. ``None``: a check asked for failed (a
    (query, document) may be judged twice, or retrieved twice).
    """
    run_hash = docs.hash(_SEED).to_numpy()
    found = _pairs_in_rows(lengths, run_hash, part.q, part.doc.hash(_SEED).to_numpy(), part.per_query)
    if found is not None:
        if (check_unique and found.judged_twice) or (check_repeats and found.retrieved_twice):
            return None
        if not (found.judged_twice or found.retrieved_twice or found.unsettled):
            same = _same_documents(docs, found.row, part.doc, found.j)  # keys verified
            if same.all():  # the usual case: no chance agreement among the pairs
                return found.q, found.rank, part.grade[found.j]
            return found.q.compress(same), found.rank.compress(same), part.grade[found.j.compress(same)]
    keys = pair_keys(part.q, part.doc)
    if check_unique and _judged_twice(part.q, keys):
        return None
    run_q = np.repeat(np.arange(lengths.size, dtype=np.int32), lengths)
    run_keys = np.repeat(np.arange(lengths.size, dtype=np.uint64) * _MIX, lengths)  # pair_keys(run_q, docs)
    run_keys ^= run_hash
    if check_repeats and repeated_in_groups(run_keys, lengths):
        return None
    rows, grade = match_judgments(run_q, docs, part, keys, run_keys)
    hit_q = run_q[rows].astype(np.int64)
    return hit_q, rows - (np.cumsum(lengths) - lengths)[hit_q], grade


def _same_documents(docs: pl.Series, rows: np.ndarray, other: pl.Series, at: np.ndarray) -> np.ndarray:
    """Whether ``docs[rows[i]] == other[at[i]]``, ``rows`` sorted: gathered from each chunk of ``docs`` in turn.

    A gather from one chunk is several times faster than from several, and rechunking a slice
    of a run copies it: the rows that fall in each chunk are gathered from that chunk.

    Examples
    --------
    >>> docs = pl.concat([pl.Series(["a", "b"]), pl.Series(["c"])], rechunk=False)
    >>> _same_documents(docs, np.array([1, 2]), pl.Series(["b", "x"]), np.array([0, 1]))
    array([ True, False])
    """
    parts, start = [], 0
    for chunk in docs.get_chunks():
        low, high = (int(i) for i in np.searchsorted(rows, [start, start + chunk.len()]))
        if high > low:
            parts.append((chunk.gather(rows[low:high] - start) == other.gather(at[low:high])).to_numpy())
        start += chunk.len()
    return parts[0] if len(parts) == 1 else np.concatenate([np.zeros(0, dtype=bool), *parts])


class _RowPairs(NamedTuple):
    """Candidate (retrieved row, judgment) pairs of :func:`_pairs_in_rows`, by query then rank."""

    q: np.ndarray  # the query of each pair
    rank: np.ndarray  # the 0-based rank of its retrieved row
    row: np.ndarray  # that row (among all the retrieved rows)
    j: np.ndarray  # its judgment
    retrieved_twice: bool  # two retrieved rows of a query share a 64-bit document hash
    judged_twice: bool  # two judgments of a query share a 64-bit document hash
    unsettled: bool  # a case left to the hash join: more than _MAX_RUN keys of a row share their hash bits


def _pairs_in_rows(
    lengths: np.ndarray, run_hash: np.ndarray, jq: np.ndarray, jhash: np.ndarray, per_query: np.ndarray | None = None
) -> _RowPairs | None:
    """Pairs of a retrieved row and a judgment of one query whose document hashes agree.

    Each query's keys (retrieved rows first, then judgments) fill a row of a matrix, padded to
    the longest query: part of its document hash with the low bits replaced by the key's position
    in the row (:func:`_keys_in_rows`). Each row is sorted (small, in cache); keys with equal hash
    bits are then next to each other, and their positions tell which rows they came from. Pairs
    with a pad, or across two rows, are no pairs; the hash bits are 24 or more, so a candidate pair
    may be a chance agreement: two retrieved rows (or two judgments) count as one document only when
    their full 64-bit hashes agree, and the caller compares the strings of every (retrieved row,
    judgment) pair. ``None`` when the judgments are not grouped by query or the padding would be large.
    ``per_query``: the number of judgments of each query, when they are known to be grouped (no check).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> h = pl.Series(["a", "b", "c", "b"]).hash(1).to_numpy()  # query 0: a, b; query 1: c; judged: b
    >>> found = _pairs_in_rows(np.array([2, 1]), h[:3], np.array([0]), h[3:])
    >>> found.q, found.rank, found.j, found.unsettled
    (array([0]), array([1]), array([0]), False)
    """
    nq = lengths.size
    if nq == 0 or jq.size == 0 or (per_query is None and not bool(np.all(jq[1:] >= jq[:-1]))):
        return None
    jcount = np.bincount(jq, minlength=nq) if per_query is None else per_query
    used = lengths + jcount  # keys in each row; the rest is padding
    width = int(used.max())
    if width < 2 or width >= 1 << 20 or nq * width > 2 * (run_hash.size + jq.size) + 4096:
        return None
    flat = _keys_in_rows(lengths, run_hash, jq, jhash, used, width).reshape(-1)
    low = flat.dtype.type((1 << (width - 1).bit_length()) - 1)
    left, right, unsettled = _equal_runs(np.flatnonzero((flat[1:] ^ flat[:-1]) <= low))
    q = left // width
    a, b = (flat[left] & low).astype(np.int64), (flat[right] & low).astype(np.int64)  # positions, a < b
    depth = lengths[q]
    real = (right - q * width < width) & (b < used[q])  # one row, no pad
    match = real & (a < depth) & (b >= depth)
    rstart, jstart = np.cumsum(lengths) - lengths, np.cumsum(jcount) - jcount
    retrieved_twice = _same_hash(run_hash, rstart, q, a, b, real & (b < depth))
    judged_twice = _same_hash(jhash, jstart - lengths, q, a, b, real & (a >= depth))
    j = (jstart - lengths)[q] + b
    # by query then rank: one sort of (q, rank, j) packed in an int64 (q * width + rank < 2**40, j < 2**23),
    # the other pairs (a few chance agreements) last and cut off: cheaper than compressing four arrays
    if q.size and int(q[-1]) * width < 1 << 40 and jq.size < 1 << 23:
        packed = ((q * width + a) << 23) | j
        np.putmask(packed, ~match, np.iinfo(np.int64).max)
        packed.sort()
        packed = packed[: np.count_nonzero(match)]
        key = packed >> 23
        q = key // width
        rank, j = key - q * width, packed & ((1 << 23) - 1)
    else:
        q, rank, j = q.compress(match), a.compress(match), j.compress(match)
        order = np.argsort(q * width + rank)
        q, rank, j = q[order], rank[order], j[order]
    return _RowPairs(
        q=q,
        rank=rank,
        row=rstart[q] + rank,
        j=j,
        retrieved_twice=retrieved_twice,
        judged_twice=judged_twice,
        unsettled=unsettled,
    )


def _same_hash(
    hashes: np.ndarray, offset: np.ndarray, q: np.ndarray, a: np.ndarray, b: np.ndarray, among: np.ndarray
) -> bool:
    """Whether ``hashes[offset[q] + a] == hashes[offset[q] + b]`` where ``among`` is set (usually nowhere)."""
    if not among.any():
        return False
    base = offset[q.compress(among)]
    return bool((hashes[base + a.compress(among)] == hashes[base + b.compress(among)]).any())


def _equal_runs(at: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Every pair of positions in the runs of equal keys, from ``at``: positions equal to the next one.

    A run of ``m`` equal keys (``m - 1`` consecutive entries of ``at``) gives all its ``m (m - 1) / 2``
    pairs, ``(left, right)`` with ``left < right``. The flag: a run is longer than ``_MAX_RUN``
    (its pairs are left out).

    Examples
    --------
    >>> left, right, long = _equal_runs(np.array([3, 4, 8]))  # keys 3, 4, 5 are equal, and 8, 9
    >>> left.tolist(), right.tolist(), long
    ([3, 4, 8, 3], [4, 5, 9, 5], False)
    """
    left, right = [at], [at + 1]
    runs = at[1:] == at[:-1] + 1
    if not runs.any():  # the usual case: pairs only
        return at, right[0], False
    start = at[:-1].compress(runs)  # starts of three equal keys: start, +1, +2
    gap = 2
    while start.size and gap < _MAX_RUN:
        left.append(start)
        right.append(start + gap)
        at_gap = np.searchsorted(at, start + gap)  # the run goes on past start + gap (at is sorted; start is short)
        start = start.compress(at.take(at_gap, mode="clip") == start + gap)
        gap += 1
    return np.concatenate(left), np.concatenate(right), bool(start.size)


def _keys_in_rows(
    lengths: np.ndarray, run_hash: np.ndarray, jq: np.ndarray, jhash: np.ndarray, used: np.ndarray, width: int
) -> np.ndarray:
    """The sorted rows of :func:`_pairs_in_rows`: a query's retrieved keys, its judged keys, padding.

    A key is the high half of the document hash (rows up to 256 wide: 32-bit keys, 24 or more hash
    bits, sorted about twice as fast as 64-bit ones) or the whole hash, with its low bits replaced
    by its position in the row. Padding keys are distinct (their hash bits count down from all ones),
    so two never pair. When most rows hold at most ``_NETWORK`` keys, every row's first
    ``_NETWORK`` keys are sorted (numpy sorts that few keys in registers, about twice as fast per key
    as a wider row, measured), then the longer rows whole; the other rows' unsorted tail is padding.
    """
    bits = (width - 1).bit_length()
    dtype = np.uint32 if bits <= 8 else np.uint64
    run_bits, judged_bits = _high_half(run_hash, dtype), _high_half(jhash, dtype)
    low = dtype((1 << bits) - 1)
    slot = np.arange(width, dtype=dtype)
    pad = ((dtype(np.iinfo(dtype).max >> bits) - slot) << dtype(bits)) | slot
    rows = np.empty((lengths.size, width), dtype=dtype)
    depth = int(lengths.max())
    if depth and bool((lengths == depth).all()):  # a run cut at one depth: the retrieved keys are one block
        rows[:, depth:] = pad[depth:]
        np.bitwise_or((run_bits & ~low).reshape(-1, depth), slot[:depth], out=rows[:, :depth])
    else:
        rows[:] = pad
        run_q = np.repeat(np.arange(lengths.size), lengths)
        pos = np.arange(run_q.size) - (np.cumsum(lengths) - lengths)[run_q]
        rows.reshape(-1)[run_q * width + pos] = (run_bits & ~low) | pos.astype(dtype)
    jcount = used - lengths
    jpos = np.arange(jq.size) + (lengths - (np.cumsum(jcount) - jcount))[jq]  # position in the row
    rows.reshape(-1)[jq * width + jpos] = (judged_bits & ~low) | jpos.astype(dtype)
    wide = np.flatnonzero(used > _NETWORK)
    if width > _NETWORK and 2 * wide.size < lengths.size:
        rows[:, :_NETWORK].sort(axis=1)
        rows[wide] = np.sort(rows[wide], axis=1)
    else:
        rows.sort(axis=1)
    return rows


def _high_half(hashes: np.ndarray, dtype: type) -> np.ndarray:
    """The high 32 bits of 64-bit hashes as a uint32 view (no copy), or the hashes themselves."""
    if dtype is np.uint64:
        return hashes
    halves = np.ascontiguousarray(hashes).view(np.uint32)
    return halves[1::2] if sys.byteorder == "little" else halves[0::2]


def compute_measures(
    counts: np.ndarray,
    hit_q: np.ndarray,
    hit_rank: np.ndarray,
    hit_grade: np.ndarray,
    judgments: Judgments,
    *,
    ks: Sequence[int],
    measures: Sequence[str],
    relevance_level: int = 1,
) -> dict[str, np.ndarray]:
    """Compute ranking measures for every query at once, from the judged rows only.

    Parameters
    ----------
    counts : numpy.ndarray
        Number of retrieved rows of each query (n_queries long; may be 0).
    hit_q, hit_rank, hit_grade : numpy.ndarray
        Query code, 0-based rank and grade of every judged retrieved row (first occurrence
        of its document), ordered by query then rank (see :func:`match_judgments`).
    judgments : Judgments
        The queries' judgments (for R and the ideal ranking).
    ks : sequence of int
        Cutoffs for the ``*_at_k`` measures.
    measures : sequence of str
        Names from :data:`CUT_MEASURES`, :data:`FULL_MEASURES`, :data:`COUNT_MEASURES`.
    relevance_level : int
        Minimum grade of a relevant judged document (trec_eval ``-l``), >= 0.

    Returns
    -------
    dict
        Column name -> float64 array (NaN for queries without judgments) or int64
        array (counts). Cut measures are named with k filled in (``ndcg_at_10``).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> j = Judgments(np.array([0]), pl.Series(["b"]), np.array([1]), np.array([True]))
    >>> compute_measures(np.array([2]), np.array([0]), np.array([1]), np.array([1]), j, ks=[1],
    ...                  measures=["mrr"])["mrr"]
    array([0.5])
    """
    nq = counts.size
    rel = hit_grade >= relevance_level
    rq, rrank = hit_q.compress(rel), hit_rank.compress(rel)  # compress: several times faster than a[mask]

    jq, jg = judgments.q, judgments.grade
    num_rel, ideal_dcg = _judged_per_query(jq, jg, nq, relevance_level)
    num_rel_ret = np.bincount(rq, minlength=nq).astype(np.int64)
    has_rel = num_rel > 0
    safe_r = np.where(has_rel, num_rel, 1).astype(np.float64)
    no_judgments = ~judgments.judged

    starts_rel = np.zeros(nq + 1, dtype=np.int64)  # each query's relevant rows: from starts_rel[q] on
    np.cumsum(num_rel_ret, out=starts_rel[1:])
    first_rank = np.full(nq, np.iinfo(np.int64).max)
    found_rel = num_rel_ret > 0
    first_rank[found_rel] = rrank[starts_rel[:-1][found_rel]]  # each query's first relevant row

    gain = rel if relevance_level == 1 else hit_grade > 0  # integer grades: >= 1 is > 0
    gain_q, gain_rank = (rq, rrank) if relevance_level == 1 else (hit_q.compress(gain), hit_rank.compress(gain))
    gain_disc = hit_grade.compress(gain) / np.log2(gain_rank + 2.0)

    def top(depth: np.ndarray | int) -> np.ndarray:
        """Relevant rows among the first ``depth`` of each query."""
        limit = depth[rq] if isinstance(depth, np.ndarray) else depth
        return np.bincount(rq.compress(rrank < limit), minlength=nq)

    def dcg(q: np.ndarray, rank: np.ndarray, disc: np.ndarray, k: int | None) -> np.ndarray:
        w = disc if k is None else np.where(rank < k, disc, 0.0)
        return np.bincount(q, weights=w, minlength=nq).astype(np.float64, copy=False)

    def ndcg(k: int | None) -> np.ndarray:
        ideal = ideal_dcg(k)
        actual = dcg(gain_q, gain_rank, gain_disc, k)
        return np.divide(actual, ideal, out=np.zeros(nq), where=ideal > 0)

    out: dict[str, np.ndarray] = {}
    wanted = set(measures)
    for k in ks:
        found = top(k)
        precision = found / float(k)
        recall = np.where(has_rel, found / safe_r, 0.0)
        values = {
            "precision_at_k": precision,
            "recall_at_k": recall,
            "hit_rate_at_k": (found > 0).astype(np.float64),
            "recall_all_at_k": (has_rel & (found == num_rel)).astype(np.float64),
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
        found_any = first_rank < np.iinfo(np.int64).max
        out["mrr"] = np.where(found_any, 1.0 / (np.where(found_any, first_rank, 0) + 1.0), 0.0)
    if "average_precision" in wanted:
        nth = np.arange(rq.size, dtype=np.int64) - starts_rel[rq]  # index among the query's relevant rows
        out["average_precision"] = average_precision(rq, rrank, nth, safe_r)
    if "r_precision" in wanted:
        out["r_precision"] = top(num_rel) / safe_r
    for name, values_ in out.items():
        values_[no_judgments] = np.nan
        out[name] = values_
    counts_out = {"num_ret": counts.astype(np.int64), "num_rel": num_rel, "num_rel_ret": num_rel_ret}
    for name in COUNT_MEASURES:
        if name in wanted:
            out[name] = counts_out[name]
    return out


def average_precision(rel_q: np.ndarray, rel_rank: np.ndarray, nth: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Average precision of every query at once, from its relevant retrieved rows.

    The sum, over the query's relevant rows in rank order, of the precision at that row
    (``(nth + 1) / (rank + 1)``), divided by R: trec_eval's ``map``, summed in its order.
    The LLM judge's context precision uses it too (a query per reply, a verdict ``yes`` per
    relevant passage).

    Parameters
    ----------
    rel_q, rel_rank : numpy.ndarray
        Query code and 0-based rank of every relevant retrieved row, by query then rank.
    nth : numpy.ndarray
        Each row's index among its query's relevant rows (0, 1, 2, ...).
    r : numpy.ndarray
        Float64, one per query: its number of relevant documents (R), 1 where there are none
        (the query's average precision is then 0).

    Returns
    -------
    numpy.ndarray
        Float64, one per query.

    Examples
    --------
    >>> # relevant at ranks 2 and 3 of 3 (query 0), none (query 1): (1/2 + 2/3) / 2 and 0
    >>> average_precision(np.array([0, 0]), np.array([1, 2]), np.array([0, 1]), np.array([2.0, 1.0]))
    array([0.58333333, 0.        ])
    """
    precision_at_rel = (nth + 1.0) / (rel_rank + 1.0)
    summed = np.bincount(rel_q, weights=precision_at_rel, minlength=r.size).astype(np.float64, copy=False)
    return summed / r


def _ideal_dcg(jq: np.ndarray, jg: np.ndarray, nq: int) -> Callable[[int | None], np.ndarray]:
    """Ideal DCG of each query at a cutoff (None: all judged documents), as a function of the cutoff.

    With few distinct grades (the usual 0..3), no sort: the ideal ranking puts the documents
    of each grade in one block, so a query's ideal DCG is the sum over grades of
    ``grade * (D[block end] - D[block start])``, D being the prefix sums of the discounts.
    """
    keep = jg > 0
    q, g = jq.compress(keep), jg.compress(keep)
    if q.size == 0:
        return lambda k: np.zeros(nq)
    g_max = int(g.max())
    span = g_max - int(g.min()) + 1
    if nq * span > 4 * q.size + 1_000_000:  # many distinct grades: sort the judged documents
        ideal_q, ideal_rank, ideal_disc = _ideal(q, g)

        def by_sorting(k: int | None) -> np.ndarray:
            w = ideal_disc if k is None else np.where(ideal_rank < k, ideal_disc, 0.0)
            return np.bincount(ideal_q, weights=w, minlength=nq).astype(np.float64, copy=False)

        return by_sorting
    counts = np.bincount(q * span + (g_max - g), minlength=nq * span).reshape(nq, span)  # column c: grade g_max - c
    return _ideal_by_counting(counts, g_max)


def _ideal_by_counting(counts: np.ndarray, g_max: int) -> Callable[[int | None], np.ndarray]:
    """:func:`_ideal_dcg` from the number of documents of each query (row) and grade (column ``c``: ``g_max - c``)."""
    span = counts.shape[1]
    ends = np.cumsum(counts, axis=1)
    starts = ends - counts
    grades = (g_max - np.arange(span)).astype(np.float64)
    prefix = np.zeros(int(ends[:, -1].max()) + 1)
    np.cumsum(1.0 / np.log2(np.arange(prefix.size - 1) + 2.0), out=prefix[1:])

    def by_counting(k: int | None) -> np.ndarray:
        end, start = (ends, starts) if k is None else (np.minimum(ends, k), np.minimum(starts, k))
        return (prefix[end] - prefix[start]) @ grades

    return by_counting


def _judged_per_query(
    jq: np.ndarray, jg: np.ndarray, nq: int, level: int
) -> tuple[np.ndarray, Callable[[int | None], np.ndarray]]:
    """The number of relevant judged documents of each query (R) and :func:`_ideal_dcg`.

    With few distinct grades (the usual 0..3), both come from one count of the judgments of
    each (query, grade); the ideal DCG is then computed as :func:`_ideal_dcg` computes it.

    Examples
    --------
    >>> num_rel, ideal = _judged_per_query(np.array([0, 0, 1]), np.array([2, 0, 1]), 2, 1)
    >>> num_rel, ideal(1)
    (array([1, 1]), array([2., 1.]))
    """
    if jg.size:
        g_lo, g_hi = int(jg.min()), int(jg.max())
        span = g_hi - g_lo + 1
        if nq * span <= 4 * jg.size + 1_000_000:
            hist = np.bincount(jq * span + (g_hi - jg), minlength=nq * span).reshape(nq, span)  # column c: g_hi - c
            num_rel = hist[:, : max(g_hi - level + 1, 0)].sum(axis=1)
            positive = hist[:, : max(g_hi, 0)].sum(axis=0)  # documents of grades g_hi, g_hi - 1, ..., 1
            if not positive.any():
                return num_rel, lambda k: np.zeros(nq)
            width = int(np.flatnonzero(positive)[-1]) + 1  # down to the lowest positive grade judged
            if nq * width <= 4 * int(positive.sum()) + 1_000_000:  # :func:`_ideal_dcg` counts too
                return num_rel, _ideal_by_counting(hist[:, :width], g_hi)
            return num_rel, _ideal_dcg(jq, jg, nq)
    return np.bincount(jq.compress(jg >= level), minlength=nq).astype(np.int64), _ideal_dcg(jq, jg, nq)


def _ideal(jq: np.ndarray, jg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query code, 0-based rank and discounted gain of each document of the ideal rankings."""
    keep = jg > 0
    q, g = jq.compress(keep), jg.compress(keep)
    if q.size == 0:
        return q, q.copy(), np.zeros(0)
    g_max, g_min = int(g.max()), int(g.min())
    span = g_max - g_min + 1
    if (int(q.max()) + 1) * span < 2**62:  # one integer key: query ascending, grade descending
        key = q.astype(np.int64) * span + (g_max - g)
        key.sort()
        q, g = key // span, g_max - key % span
    else:
        ordered = pl.DataFrame({"q": q, "g": g}).sort(["q", "g"], descending=[False, True])
        q, g = ordered.get_column("q").to_numpy(), ordered.get_column("g").to_numpy()
    new = np.ones(q.size, dtype=bool)
    new[1:] = q[1:] != q[:-1]
    group_start = np.flatnonzero(new)
    rank = np.arange(q.size) - np.repeat(group_start, np.diff(np.append(group_start, q.size)))
    return q, rank, g / np.log2(rank + 2.0)
