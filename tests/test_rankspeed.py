"""The fast paths of ranking evaluation (issue 22 item 3, issue 23 item 6) give the slow paths' answers.

Each shortcut taken for speed is checked against a plain reference: the windowed check for a
document listed twice in one query (:func:`ragframe.kernels.ranking.maybe_repeated`) against an
exact search, on random groups and on the window edges it must not miss; the matching of retrieved rows to
judgments by sorting each query's keys in a row (:func:`ragframe.kernels.ranking._pairs_in_rows`) against the
hash join, with a hash that collides on purpose.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe as rf
from ragframe.kernels import ranking


def exact_repeat(lengths: list[int], docs: list[str]) -> bool:
    """Whether some document appears twice within one group, by a plain search."""
    start = 0
    for length in lengths:
        group = docs[start : start + length]
        if len(set(group)) != len(group):
            return True
        start += length
    return False


groups = st.lists(st.lists(st.sampled_from("abcdefghij"), min_size=1, max_size=12), min_size=0, max_size=30)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(groups=groups, block=st.sampled_from([1, 4, 16, 1 << 20]), max_window=st.sampled_from([8, 4096]))
def test_maybe_repeated_equals_an_exact_search(groups, block, max_window):
    """Random groups, blocks of any size (keys made a block at a time) and the hash-set path for long groups."""
    lengths = [len(g) for g in groups]
    docs = [d for g in groups for d in g]
    saved = ranking._WINDOW_BLOCK, ranking._MAX_WINDOW
    ranking._WINDOW_BLOCK, ranking._MAX_WINDOW = block, max_window
    try:
        got = ranking.maybe_repeated(np.array(lengths, dtype=np.int64), pl.Series(docs, dtype=pl.String))
    finally:
        ranking._WINDOW_BLOCK, ranking._MAX_WINDOW = saved
    assert got == exact_repeat(lengths, docs)


def distinct(n: int, prefix: str) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


@pytest.mark.parametrize(
    ("lengths", "first", "second"),
    [
        # longest group 3: windows of 8 rows; tiling A cuts at 8, 16, ...; tiling B at 4, 12, ...
        pytest.param([3, 3, 3], 6, 8, id="across-a-boundary-of-tiling-A"),
        pytest.param([2, 3, 3], 2, 4, id="across-a-boundary-of-tiling-B"),
        pytest.param([3, 3, 3, 3], 9, 11, id="in-the-last-rows"),
        pytest.param([3, 3, 3], 0, 2, id="in-the-first-rows"),
        pytest.param([1] * 5 + [3], 5, 7, id="after-single-row-groups"),
        # longest group 4: windows of 8 (a width of 4 would cut rows 1 and 4 apart in both tilings)
        pytest.param([1, 4], 1, 4, id="first-and-last-row-of-the-longest-group"),
    ],
)
def test_maybe_repeated_finds_a_repeat_wherever_it_lies(lengths, first, second):
    docs = distinct(sum(lengths), "d")
    docs[second] = docs[first]
    assert ranking.maybe_repeated(np.array(lengths), pl.Series(docs)) is True
    assert ranking.maybe_repeated(np.array(lengths), pl.Series(distinct(sum(lengths), "d"))) is False


def test_maybe_repeated_ignores_one_document_in_two_groups():
    """The same document in the last row of a query and the first of the next is no repeat."""
    assert ranking.maybe_repeated(np.array([2, 2, 2]), pl.Series(["a", "b", "b", "c", "c", "a"])) is False


def test_maybe_repeated_long_groups_use_the_hash_set():
    lengths = np.array([3000, 3000])
    docs = distinct(6000, "d")
    assert ranking.maybe_repeated(lengths, pl.Series(docs)) is False
    docs[5999] = docs[3000]
    assert ranking.maybe_repeated(lengths, pl.Series(docs)) is True


@pytest.mark.parametrize("grouped", [True, False], ids=["grouped-run", "interleaved-run"])
def test_evaluate_run_names_the_repeated_row_of_a_large_run(grouped):
    """A repeat deep in a run of 300 queries is named by its row, whether the run is grouped by query or not."""
    n_queries, depth = 300, 20
    qid = [f"q{q:03d}" for q in range(n_queries) for _ in range(depth)]
    doc = [f"d{r}" for _ in range(n_queries) for r in range(depth)]
    score = [float(depth - r) for _ in range(n_queries) for r in range(depth)]
    run = pl.DataFrame({"query_id": qid, "doc_id": doc, "score": score})
    if not grouped:
        run = run.sort("doc_id", "query_id")
    row = 4321
    repeat_of = run.row(row - 1, named=True) if grouped else run.row(row - n_queries, named=True)
    assert repeat_of["query_id"] == run.item(row, "query_id")
    run = run.with_columns(
        pl.when(pl.int_range(pl.len()) == row)
        .then(pl.lit(repeat_of["doc_id"]))
        .otherwise(pl.col("doc_id"))
        .alias("doc_id"),
    )
    qrels = pl.DataFrame({"query_id": ["q000"], "doc_id": ["d0"], "relevance": [1]})
    with pytest.raises(rf.SchemaError, match="a document listed twice for one query") as error:
        rf.evaluate_run(run, qrels, k=[5])
    assert (error.value.column, error.value.row) == ("doc_id", row)
    assert error.value.found == f"{repeat_of['doc_id']!r} again for query {repeat_of['query_id']!r}"


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(groups=groups, equal=st.booleans(), empty=st.integers(0, 3))
def test_repeated_in_groups_equals_an_exact_search(groups, equal, empty):
    """Groups of one length (a row each) and of many (windows), with empty groups anywhere."""
    if equal and groups:
        groups = [(g * 12)[:5] for g in groups]  # every group 5 long
    sizes = [len(g) for g in groups]
    lengths = [0] * empty + sizes if empty % 2 else sizes + [0] * empty  # empty groups first or last
    docs = [d for g in groups for d in g]
    keys = ranking.pair_keys(np.repeat(np.arange(len(groups)), sizes), pl.Series(docs, dtype=pl.String))
    assert ranking.repeated_in_groups(keys, np.array(lengths, dtype=np.int64)) == exact_repeat(lengths, docs)


def _run_with_a_repeat(n_queries: int = 30, depth: int = 10, row: int = 123) -> pl.DataFrame:
    qid = [f"q{q:03d}" for q in range(n_queries) for _ in range(depth)]
    doc = [f"d{r}" for _ in range(n_queries) for r in range(depth)]
    doc[row] = doc[row - 1]
    score = [float(depth - r) for _ in range(n_queries) for r in range(depth)]
    return pl.DataFrame({"query_id": qid, "doc_id": doc, "score": score})


@pytest.mark.parametrize("max_docs", [None, 3, 100], ids=["scored-check", "cut-run", "uncut-run"])
@pytest.mark.parametrize("chunks", [None, 4])
def test_a_repeat_is_named_whether_checked_while_scoring_or_before(monkeypatch, max_docs, chunks):
    """Without -M the repeat is found by the scoring threads, with it before the cut: one error, one row."""
    if chunks is not None:
        monkeypatch.setattr(ranking, "rank_measures", _forcing_chunks(ranking.rank_measures, chunks))
        from ragframe.run import trec_run

        monkeypatch.setattr(trec_run, "rank_measures", ranking.rank_measures)
    qrels = pl.DataFrame({"query_id": ["q000", "q012"], "doc_id": ["d0", "d3"], "relevance": [1, 2]})
    with pytest.raises(rf.SchemaError, match="a document listed twice for one query") as error:
        rf.evaluate_run(_run_with_a_repeat(), qrels, k=[5], max_docs=max_docs)
    assert (error.value.column, error.value.row) == ("doc_id", 123)


def _forcing_chunks(function, chunks):
    def forced(*args, **kwargs):
        return function(*args, **{**kwargs, "chunks": chunks})

    return forced


def test_a_repeat_is_named_before_an_err_grade_or_a_conflicting_judgment():
    """The repeated document is refused first, as when the run was checked before anything else."""
    from ragframe.kernels.trec_measures import TrecMeasure, TrecOptions
    from ragframe.run.trec_run import trec_eval_run

    run = _run_with_a_repeat()
    high = pl.DataFrame({"query_id": ["q000"], "doc_id": ["d0"], "relevance": [9]})
    conflicting = pl.DataFrame({"query_id": ["q000", "q000"], "doc_id": ["d0", "d0"], "relevance": [1, 2]})
    calls = [
        lambda: rf.evaluate_run(run, high, metrics=["err_at_k"], k=[5], err_max_grade=4),
        lambda: rf.evaluate_run(run, conflicting, k=[5]),
        # no err check before the scoring here: the kernel's own error, after the repeat
        lambda: trec_eval_run(run, high, TrecOptions((TrecMeasure("err", (4, (5,)), ("err_at_5",)),))),
    ]
    for call in calls:
        with pytest.raises(rf.SchemaError, match="a document listed twice for one query") as error:
            call()
        assert error.value.row == 123
    fixed = run.with_columns(pl.Series("doc_id", [f"d{r % 10}" for r in range(run.height)]))
    with pytest.raises(rf.SchemaError, match="err_max_grade"):
        rf.evaluate_run(fixed, high, metrics=["err_at_k"], k=[5], err_max_grade=4)
    with pytest.raises(rf.InvalidParameterError, match="err_max_grade"):
        trec_eval_run(fixed, high, TrecOptions((TrecMeasure("err", (4, (5,)), ("err_at_5",)),)))


@settings(max_examples=200, deadline=None)
@given(judgments=st.lists(st.tuples(st.integers(0, 5), st.sampled_from([-1, 0, 1, 2, 3, 64, 65, 1000])), max_size=40))
def test_top_level_is_each_querys_highest_judged_grade(judgments):
    """rbp's gain range: the highest grade >= 0 of each query (few levels: one write per level; else ufunc.at)."""
    from ragframe.kernels.trec_measures import TrecOptions, _Context

    jq = np.array([q for q, _ in judgments], dtype=np.int64)
    jg = np.array([g for _, g in judgments], dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    ctx = _Context(
        np.zeros(6, dtype=np.int64), empty, empty, empty, jq, jg, level=1, options=TrecOptions(), virtual=None
    )
    expected = [max([g for q, g in judgments if q == query and g >= 0], default=-1) for query in range(6)]
    assert ctx.top_level.tolist() == expected


def _coarse_hash(original):
    """polars' hash with most bits dropped: documents collide often (exactness rests on the string check)."""

    def coarse(self, *args, **kwargs):
        return original(self, *args, **kwargs) & 0xE000_0000_0000_0000

    return coarse


rankings = st.lists(st.lists(st.sampled_from("abcdefghij"), min_size=0, max_size=9), min_size=1, max_size=12)
qrel_lists = st.lists(st.lists(st.tuples(st.sampled_from("abcdefghijkl"), st.integers(-1, 3)), max_size=8), max_size=12)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(ranked=rankings, qrel_lists=qrel_lists, depth=st.sampled_from([None, 4]), chunks=st.sampled_from([1, 3]))
def test_matching_by_rows_and_by_join_agree_under_hash_collisions(ranked, qrel_lists, depth, chunks):
    """The row sort, its fallbacks (three equal keys, padding met, repeats) and the join give one answer.

    Documents may repeat in a ranking (wide rankings count the first), queries may be empty, judged
    twice with one grade, or have a run of one depth; the hash keeps 3 bits, so most keys collide.
    """
    if depth is not None:
        ranked = [(r * depth)[:depth] for r in ranked]
    qrel_lists = (qrel_lists + [[]] * len(ranked))[: len(ranked)]
    counts = np.array([len(r) for r in ranked], dtype=np.int64)
    run_doc = pl.Series([d for r in ranked for d in r], dtype=pl.String)
    jq = np.array([q for q, judged in enumerate(qrel_lists) for _ in judged], dtype=np.int64)
    jdoc = pl.Series([d for judged in qrel_lists for d, _ in judged], dtype=pl.String)
    grade = np.array([g for judged in qrel_lists for _, g in judged], dtype=np.int64)
    keep = pl.DataFrame({"q": jq, "d": jdoc}).select(pl.struct("q", "d").is_first_distinct()).to_series().to_numpy()
    judged = np.array([bool(j) for j in qrel_lists])
    judgments = ranking.Judgments(jq[keep], jdoc.filter(pl.Series(keep)), grade[keep], judged)
    names = [*ranking.CUT_MEASURES, *ranking.FULL_MEASURES, *ranking.COUNT_MEASURES]
    options = {"ks": [1, 3], "measures": names, "chunks": chunks}
    exact = ranking.rank_measures(run_doc, counts, judgments, **options)
    original = pl.Series.hash
    pl.Series.hash = _coarse_hash(original)
    try:
        coarse = ranking.rank_measures(run_doc, counts, judgments, **options)
        checked = ranking.rank_measures(run_doc, counts, judgments, check_unique=True, check_repeats=True, **options)
    finally:
        pl.Series.hash = original
    for name in exact:
        np.testing.assert_array_equal(coarse[name], exact[name], err_msg=name)
    repeats = any(len(set(r)) != len(r) for r in ranked)
    assert (checked is None) or not repeats  # a repeat is always reported (collisions may report more)
    if checked is not None:
        for name in exact:
            np.testing.assert_array_equal(checked[name], exact[name], err_msg=name)


def test_matching_by_rows_falls_back_when_judgments_are_not_grouped():
    """Judgments out of query order (one chunk takes them as given) are matched by the join: same values."""
    run_doc = pl.Series(["a", "b", "c", "d"])
    counts = np.array([2, 2])
    grouped = ranking.Judgments(np.array([0, 1]), pl.Series(["b", "c"]), np.array([1, 2]), np.ones(2, dtype=bool))
    shuffled = ranking.Judgments(np.array([1, 0]), pl.Series(["c", "b"]), np.array([2, 1]), np.ones(2, dtype=bool))
    options = {"ks": [1], "measures": ["mrr", "ndcg"], "chunks": 1}
    a = ranking.rank_measures(run_doc, counts, grouped, **options)
    b = ranking.rank_measures(run_doc, counts, shuffled, **options)
    assert a["mrr"].tolist() == b["mrr"].tolist() == [0.5, 1.0]
    assert (
        ranking._pairs_in_rows(counts, np.arange(4, dtype=np.uint64), shuffled.q, np.arange(2, dtype=np.uint64)) is None
    )


def _hashes(values: list[int], bits: int) -> np.ndarray:
    """Document hashes whose key bits (rows up to 256 wide: the high 32 bits above the low ``bits``) are ``values``."""
    return np.array(values, dtype=np.uint64) << np.uint64(32 + bits)


def test_rows_ignore_a_key_equal_to_padding():
    """Row 1 has a retrieved key and one pad; the key's hash bits equal the pad's: no pair, no flag."""
    lengths, jq = np.array([1, 1]), np.array([0])  # row 0: retrieved, judged; row 1: retrieved, pad
    pad_bits = (1 << 31) - 1 - 1  # the pad at position 1 (width 2: 1 low bit)
    found = ranking._pairs_in_rows(lengths, _hashes([5, pad_bits], 1), jq, _hashes([6], 1))
    assert (found.unsettled, found.retrieved_twice, found.judged_twice, found.q.size) == (False, False, False, 0)


def test_rows_ignore_equal_keys_across_two_rows():
    """The last key of query 0 and the first of query 1 agree: not a pair of one query."""
    lengths, jq = np.array([2, 2]), np.array([0, 1])  # width 3, 2 low bits
    found = ranking._pairs_in_rows(lengths, _hashes([1, 2, 5, 7], 2), jq, _hashes([5, 8], 2))
    assert not (found.unsettled or found.retrieved_twice or found.judged_twice) and found.q.size == 0
    settled = ranking._pairs_in_rows(lengths, _hashes([1, 2, 6, 7], 2), jq, _hashes([2, 8], 2))
    assert (settled.q.tolist(), settled.rank.tolist(), settled.row.tolist(), settled.j.tolist()) == ([0], [1], [1], [0])


def test_rows_flag_keys_twice_in_one_query():
    lengths, jq = np.array([3]), np.array([0, 0])
    twice = ranking._pairs_in_rows(lengths, _hashes([1, 2, 1], 3), jq, _hashes([4, 5], 3))
    assert twice.retrieved_twice and not twice.judged_twice
    judged = ranking._pairs_in_rows(lengths, _hashes([1, 2, 3], 3), jq, _hashes([4, 4], 3))
    assert judged.judged_twice and not judged.retrieved_twice


def test_rows_flag_only_full_hashes_twice():
    """Keys agree (the high 32 bits) but the 64-bit hashes differ: a chance agreement, not a repeat."""
    lengths, jq = np.array([3]), np.array([0, 0])
    run = _hashes([1, 2, 1], 3) | np.array([0, 0, 1], dtype=np.uint64)
    judged = _hashes([4, 4], 3) | np.array([0, 1], dtype=np.uint64)
    found = ranking._pairs_in_rows(lengths, run, jq, judged)
    assert not (found.retrieved_twice or found.judged_twice or found.unsettled)


def test_rows_pair_every_key_of_a_run_of_equal_keys():
    """Three retrieved keys and two judged ones share their hash bits: all six (retrieved, judged) pairs."""
    lengths, jq = np.array([4]), np.array([0, 0])
    run = _hashes([7, 7, 3, 7], 3) | np.arange(4, dtype=np.uint64)
    judged = _hashes([7, 7], 3) | np.array([8, 9], dtype=np.uint64)
    found = ranking._pairs_in_rows(lengths, run, jq, judged)
    pairs = sorted(zip(found.rank.tolist(), found.j.tolist(), strict=True))
    assert pairs == [(0, 0), (0, 1), (1, 0), (1, 1), (3, 0), (3, 1)]
    assert not (found.retrieved_twice or found.judged_twice or found.unsettled)


def test_rows_leave_a_long_run_of_equal_keys_to_the_join(monkeypatch):
    """More than ``_MAX_RUN`` keys of one row with equal hash bits: unsettled (the hash join decides)."""
    monkeypatch.setattr(ranking, "_MAX_RUN", 3)
    lengths, jq = np.array([3]), np.array([0])
    run = _hashes([7, 7, 7], 3) | np.arange(3, dtype=np.uint64)
    assert ranking._pairs_in_rows(lengths, run, jq, _hashes([7], 3) | np.uint64(5)).unsettled
    assert not ranking._pairs_in_rows(lengths, run, jq, _hashes([8], 3)).unsettled


def _brute_pairs(lengths, run_hash, jq, jhash):
    """(query, rank, judgment) of every pair whose key bits agree, and the repeat flags, by a plain search."""
    width = int((lengths + np.bincount(jq, minlength=lengths.size)).max())
    bits = (width - 1).bit_length()
    key = (lambda h: (int(h) >> 32) >> bits) if bits <= 8 else (lambda h: int(h) >> bits)
    pairs, retrieved_twice, judged_twice = set(), False, False
    start = np.concatenate(([0], np.cumsum(lengths)))
    for q in range(lengths.size):
        run = [int(h) for h in run_hash[start[q] : start[q + 1]]]
        judged = [(j, int(jhash[j])) for j in np.flatnonzero(jq == q)]
        retrieved_twice |= len(set(run)) < len(run)
        judged_twice |= len({h for _, h in judged}) < len(judged)
        pairs |= {(q, rank, j) for rank, h in enumerate(run) for j, g in judged if key(h) == key(g)}
    return pairs, retrieved_twice, judged_twice


@pytest.mark.parametrize("seed", range(40))
def test_rows_find_the_pairs_of_a_plain_search(seed):
    """Random rows (32-bit keys, the first 128 keys sorted apart, 64-bit keys) against a plain search.

    Hashes take few values, so keys agree by chance, in runs, with padding, and across rows.
    """
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(1, 40))
    shape = seed % 4  # depths: short, one depth with up to 40 judgments (some rows over 128 keys), ragged wide, > 256
    lengths = {
        0: rng.integers(0, 12, nq),
        1: np.full(nq, 100),
        2: rng.integers(90, 120, nq),
        3: rng.integers(200, 300, nq),
    }[shape]
    jcount = rng.integers(0, 12 if shape == 0 else 40, nq)
    jq = np.repeat(np.arange(nq), jcount)
    pool = rng.integers(0, 2**63, int(rng.integers(2, 400)), dtype=np.uint64)  # few distinct hashes
    noise = rng.integers(0, 4, lengths.sum() + jq.size).astype(np.uint64)  # low bits: keys agree, hashes differ
    hashes = rng.choice(pool, noise.size) ^ noise
    if shape == 2:  # hash bits of the last pad of a row (32-bit keys, 8 low bits)
        width = int((lengths + jcount).max())
        hashes[rng.integers(0, hashes.size, 5)] = np.uint64(((1 << 24) - 1 - (width - 1)) << 40)
    run_hash, jhash = hashes[: lengths.sum()], hashes[lengths.sum() :]
    found = ranking._pairs_in_rows(lengths, run_hash, jq, jhash)
    if found is None:
        assert lengths.sum() == 0 or jq.size == 0 or (lengths + jcount).max() < 2
        return
    pairs, retrieved_twice, judged_twice = _brute_pairs(lengths, run_hash, jq, jhash)
    assert not found.unsettled
    assert (found.retrieved_twice, found.judged_twice) == (retrieved_twice, judged_twice)
    got = list(zip(found.q.tolist(), found.rank.tolist(), found.j.tolist(), strict=True))
    assert len(got) == len(set(got)) and set(got) == pairs
    assert [(q, r) for q, r, _ in got] == sorted((q, r) for q, r, _ in got)  # by query then rank
    np.testing.assert_array_equal(found.row, (np.cumsum(lengths) - lengths)[found.q] + found.rank)


@pytest.mark.parametrize("chunks", [1, 3])
def test_judgments_by_count_per_query_score_as_by_codes(chunks):
    """Judgments given as counts per query (grouped, no code array; grades a Series) give what their codes give."""
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 6, 12)
    run_doc = pl.Series([f"q{q}-d{d}" for q, c in enumerate(counts) for d in rng.choice(8, c, replace=False)])
    per_query = rng.integers(0, 5, 12)
    jq = np.repeat(np.arange(12), per_query)
    jdoc = pl.Series([f"q{q}-d{d}" for q, c in enumerate(per_query) for d in rng.choice(8, c, replace=False)])
    grade = rng.integers(-1, 4, jq.size)
    judged = per_query > 0
    options = {"ks": [1, 3], "measures": [*ranking.CUT_MEASURES, *ranking.FULL_MEASURES], "chunks": chunks}
    by_codes = ranking.rank_measures(run_doc, counts, ranking.Judgments(jq, jdoc, grade, judged), **options)
    lazy = ranking.Judgments(None, jdoc, pl.Series(grade), judged, per_query=per_query)  # grades as a Series
    by_count = ranking.rank_measures(run_doc, counts, lazy, check_unique=True, check_repeats=True, **options)
    for name in by_codes:
        np.testing.assert_array_equal(by_count[name], by_codes[name], err_msg=name)
    np.testing.assert_array_equal(lazy.q, jq)
    with pytest.raises(ValueError, match="q or per_query"):
        ranking.Judgments(None, jdoc, grade, judged)


def test_qrels_in_the_run_order_score_as_in_another_order():
    """evaluate_run: qrels in the run's query order (counted per query) and reversed (coded by a join) agree."""
    rng = np.random.default_rng(3)
    n = 40
    run = pl.DataFrame(
        {
            "query_id": np.repeat([f"q{i:02d}" for i in range(n)], 10),
            "doc_id": [f"d{int(x)}" for x in rng.permutation(n * 10)],
            "score": np.tile(np.arange(10, 0, -1), n).astype(float),
        }
    )
    qrels = run.sample(fraction=0.3, seed=1).sort("query_id").select("query_id", "doc_id")
    qrels = qrels.with_columns(relevance=pl.Series(rng.integers(0, 4, qrels.height)))
    in_order = rf.evaluate_run(run, qrels, k=[1, 5])
    reversed_ = rf.evaluate_run(run, qrels.sort("query_id", descending=True), k=[1, 5])
    assert in_order.equals(reversed_)


@pytest.mark.parametrize("seed", range(12))
def test_judged_counts_from_one_histogram_equal_the_direct_ones(seed):
    """R and the ideal DCG from one (query, grade) count equal R counted and the ideal DCG by grade blocks.

    Grades -1..3 (and a wide spread, counted the direct way), levels 0..4, queries without judgments.
    """
    rng = np.random.default_rng(seed)
    nq = int(rng.integers(1, 30))
    jq = np.sort(rng.integers(0, nq, int(rng.integers(0, 200))))
    low, high = [(-1, 4), (1, 3), (-1, 1), (0, 1), (-5, 200)][seed % 5]
    jg = rng.integers(low, high, jq.size)
    for level in range(5):
        num_rel, ideal = ranking._judged_per_query(jq, jg, nq, level)
        np.testing.assert_array_equal(num_rel, np.bincount(jq[jg >= level], minlength=nq))
        direct = ranking._ideal_dcg(jq, jg, nq)
        for k in (None, 1, 3, 10):
            np.testing.assert_array_equal(ideal(k), direct(k))


@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_a_run_in_several_chunks_scores_as_in_one(chunks):
    """The matches are gathered from each chunk of the run's doc ids in turn: the values of one chunk."""
    rng = np.random.default_rng(11)
    counts = rng.integers(0, 9, 40)
    docs = [f"q{q}-d{d}" for q, c in enumerate(counts) for d in rng.choice(12, c, replace=False)]
    cuts = np.sort(rng.choice(len(docs), 6, replace=False))  # chunk boundaries anywhere, queries cut across
    pieces = [pl.Series(part, dtype=pl.String) for part in np.split(np.array(docs), cuts)]
    run_doc = pl.concat(pieces, rechunk=False)
    assert run_doc.n_chunks() > 1
    per_query = rng.integers(0, 6, 40)
    jdoc = pl.Series([f"q{q}-d{d}" for q, c in enumerate(per_query) for d in rng.choice(12, c, replace=False)])
    judgments = ranking.Judgments(None, jdoc, rng.integers(0, 4, jdoc.len()), per_query > 0, per_query=per_query)
    options = {"ks": [1, 3], "measures": [*ranking.CUT_MEASURES, *ranking.FULL_MEASURES], "chunks": chunks}
    split = ranking.rank_measures(run_doc, counts, judgments, **options)
    whole = ranking.rank_measures(run_doc.rechunk(), counts, judgments, **options)
    for name in whole:
        np.testing.assert_array_equal(split[name], whole[name], err_msg=name)


def test_chunks_whose_values_differ_in_dtype_are_concatenated(monkeypatch):
    """Each chunk copies its values into one array; a chunk whose dtype differs is concatenated instead."""
    rng = np.random.default_rng(5)
    counts = rng.integers(1, 6, 30)
    run_doc = pl.Series([f"q{q}-d{d}" for q, c in enumerate(counts) for d in rng.choice(8, c, replace=False)])
    per_query = rng.integers(1, 5, 30)
    jdoc = pl.Series([f"q{q}-d{d}" for q, c in enumerate(per_query) for d in rng.choice(8, c, replace=False)])
    judgments = ranking.Judgments(None, jdoc, rng.integers(0, 4, jdoc.len()), per_query > 0, per_query=per_query)
    options = {"ks": [1, 3], "measures": ["mrr", "ndcg", "num_ret"], "chunks": 3}
    expected = ranking.rank_measures(run_doc, counts, judgments, **options)
    original, calls = ranking.compute_measures, itertools.count()

    def one_chunk_in_float32(*args, **kwargs):
        out = original(*args, **kwargs)
        if next(calls) == 1:
            out["mrr"] = out["mrr"].astype(np.float32)
        return out

    monkeypatch.setattr(ranking, "compute_measures", one_chunk_in_float32)
    got = ranking.rank_measures(run_doc, counts, judgments, **options)
    assert list(got) == list(expected) and got["mrr"].dtype == np.float64
    np.testing.assert_allclose(got["mrr"], expected["mrr"], rtol=1e-6)
    np.testing.assert_array_equal(got["ndcg"], expected["ndcg"])
    np.testing.assert_array_equal(got["num_ret"], expected["num_ret"])
