"""The fast paths of ranking evaluation (issue 22 item 3, issue 23 item 6) give the slow paths' answers.

Each shortcut taken for speed is checked against a plain reference: the windowed check for a
document listed twice in one query (:func:`ragframe.kernels.ranking.maybe_repeated`) against an
exact search, on random groups and on the window edges it must not miss.
"""

from __future__ import annotations

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
        from ragframe.metrics import retrieval

        monkeypatch.setattr(retrieval, "rank_measures", ranking.rank_measures)
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
    from ragframe.metrics.retrieval import trec_eval_run

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
