"""rf.retrieve: live retrievers (sync, async, anchor-style objects) over the rows, with statuses, then the A/B test."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest
from scipy import stats

import ragframe as rf
from ragframe.exceptions import InvalidParameterError, SchemaError

DOCS = {
    "d1": "Paris is the capital of France.",
    "d2": "Hamlet is a tragedy by Shakespeare.",
    "d3": "Lyon is a city in France.",
    "d4": "Marlowe wrote Doctor Faustus.",
}
DS = pl.DataFrame(
    {
        "id": [1, 2, 3, 4],
        "question": ["capital of France", "who wrote Hamlet", "Doctor Faustus author", None],
        "relevant_ids": [["d1"], ["d2"], ["d4"], ["d3"]],
    }
)


def overlap(query: str, text: str) -> float:
    return float(len(set(query.lower().split()) & set(text.lower().replace(".", "").split())))


def lexical(query, k):
    """(id, score, text) by word overlap, best first, ties by id."""
    hits = sorted(((d, overlap(query, t), t) for d, t in DOCS.items()), key=lambda h: (-h[1], h[0]))
    return hits[:k]


def reverse(query, k):
    """A bad retriever: the same documents in the opposite order."""
    return [doc for doc, _, _ in reversed(lexical(query, len(DOCS)))][:k]


# ----------------------------------------------------------------------------- shapes of retrievers and items


def test_sync_retriever_with_scores_and_texts():
    out = rf.retrieve(DS, lexical, k=2)
    assert out.columns == [*DS.columns, "retrieved_ids", "retrieved_scores", "contexts", "retrieve_status",
                           "retrieve_error"]  # fmt: skip
    assert out["retrieved_ids"].to_list() == [["d1", "d3"], ["d2", "d4"], ["d4", "d1"], None]  # ties by id
    assert out["retrieved_scores"].to_list()[0] == [3.0, 1.0]  # hand: {capital, of, france}, {france}
    assert out["contexts"].to_list()[0] == [DOCS["d1"], DOCS["d3"]]
    assert out["retrieve_status"].to_list() == ["ok", "ok", "ok", "skipped"]
    assert out["retrieve_error"].to_list() == [None, None, None, "null query: not retrieved"]
    assert out.schema["retrieved_ids"] == pl.List(pl.String)


def test_ids_only_and_a_one_argument_retriever_and_k_cut():
    calls = []

    def ids(query):  # no k parameter: called with the query alone; the ranking is cut at k
        calls.append(query)
        return ["d4", "d3", "d2", "d1"]

    out = rf.retrieve(DS, ids, k=3)
    assert "retrieved_scores" not in out.columns and "contexts" not in out.columns
    assert out["retrieved_ids"].to_list()[:3] == [["d4", "d3", "d2"]] * 3
    assert sorted(calls) == sorted(q for q in DS["question"] if q is not None)


@dataclass
class ContextItem:  # the anchor seed's item: id, content, score
    id: str
    content: str
    score: float


class AnchorRetriever:
    def __init__(self):
        self.top_k = []

    def retrieve(self, query, top_k):
        self.top_k.append(top_k)
        return [ContextItem(d, t, s) for d, s, t in lexical(query, top_k)]


def test_anchor_style_retriever_object_and_dict_items():
    anchor = AnchorRetriever()
    out = rf.retrieve(DS, anchor, k=2)
    assert anchor.top_k == [2, 2, 2]
    expected = rf.retrieve(DS, lexical, k=2)
    assert out.select("retrieved_ids", "retrieved_scores", "contexts").equals(
        expected.select("retrieved_ids", "retrieved_scores", "contexts")
    )
    dicts = rf.retrieve(DS, lambda q, k: [{"id": d, "score": s} for d, s, _ in lexical(q, k)], k=2)
    assert dicts["retrieved_scores"].to_list() == expected["retrieved_scores"].to_list()


def test_async_retriever_runs_concurrently_within_the_limit():
    state = {"now": 0, "max": 0}
    lock = threading.Lock()

    async def slow(query, k):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.02)
        with lock:
            state["now"] -= 1
        return [(d, s) for d, s, _ in lexical(query, k)]

    ds = pl.DataFrame({"question": [f"capital of France {i}" for i in range(20)]})
    out = rf.retrieve(ds, slow, k=1, max_concurrency=4)
    assert out["retrieved_ids"].to_list() == [["d1"]] * 20
    assert state["max"] == 4


def test_int_ids_and_numpy_items():
    out = rf.retrieve(DS.head(2), lambda q, k: np.array([3, 1, 2])[:k], k=2)
    assert out.schema["retrieved_ids"] == pl.List(pl.Int64)
    assert out["retrieved_ids"].to_list() == [[3, 1], [3, 1]]


def test_inside_a_running_event_loop():
    async def cell():
        return rf.retrieve(DS, lexical, k=1)["retrieved_ids"].to_list()

    assert asyncio.run(cell()) == [["d1"], ["d2"], ["d4"], None]


# ----------------------------------------------------------------------------- failures


def test_a_failing_retriever_is_retried_then_a_status():
    calls = {"q": 0}

    def flaky(query, k):
        if "Hamlet" in query:
            calls["q"] += 1
            raise ConnectionError("index offline")
        return lexical(query, k)

    out = rf.retrieve(DS, flaky, k=2, max_retries=2, backoff=0.0)
    assert calls["q"] == 3  # the first call and 2 retries
    assert out["retrieve_status"].to_list() == ["ok", "error", "ok", "skipped"]
    assert out["retrieve_error"][1] == "ConnectionError: index offline (after 2 retries)"
    assert out["retrieved_ids"][1] is None and out["retrieved_scores"][1] is None
    # the failed row's ranking scores are null, not 0
    scored = rf.evaluate(out, ["mrr"])
    assert scored["mrr"].to_list() == [1.0, None, 1.0, None]


def test_a_retry_that_succeeds_is_ok():
    attempts = {"n": 0}

    def once_down(query, k):
        attempts["n"] += 1
        if attempts["n"] == 1:
            raise TimeoutError("busy")
        return ["d1"]

    out = rf.retrieve(DS.head(1), once_down, k=1, backoff=0.0)
    assert out["retrieve_status"].to_list() == ["ok"] and attempts["n"] == 2


def test_timeouts():
    async def stuck(query, k):
        await asyncio.sleep(5)
        return []

    out = rf.retrieve(DS.head(2), stuck, timeout=0.05, max_retries=1, backoff=0.0)
    assert out["retrieve_status"].to_list() == ["timeout", "timeout"]
    assert out["retrieve_error"][0] == "no answer within 0.05 s (after 1 retries)"


@pytest.mark.parametrize(
    ("items", "error"),
    [
        ("d1", "the retriever returned a str, not a list of items"),
        (None, "the retriever returned a NoneType, not a list of items"),
        ([{"score": 1.0}], "item 0 is a mapping without 'id'"),
        ([("d1", "high")], "item 0 has score 'high', not a number"),
        ([("d1", 1.0), "d2"], "some items have a score and some do not"),
        (["d1", 2], "ids must all be str or all be int, found ['int', 'str']"),
        ([{1, 2}], "item 0 is a set; expected an id, (id, score), (id, score, text) or a dict"),
    ],
)
def test_malformed_returns_are_row_errors_without_retry(items, error):
    calls = []

    def bad(query, k):
        calls.append(query)
        return items

    out = rf.retrieve(DS.head(1), bad, max_retries=3)
    assert out.select("retrieve_status", "retrieve_error").row(0) == ("error", error)
    assert len(calls) == 1


def test_rows_with_ids_of_another_kind_are_errors():
    out = rf.retrieve(DS.head(3), lambda q, k: [7] if "Hamlet" in q else ["d1"])
    assert out["retrieve_status"].to_list() == ["ok", "error", "ok"]
    assert out["retrieve_error"][1] == "int ids where other rows have str ids (an int id never equals a str id)"


def test_caller_errors_raise():
    with pytest.raises(SchemaError) as err:
        rf.retrieve(DS, lexical, query="query")
    assert err.value.column == "query"
    with pytest.raises(SchemaError, match="wrong dtype"):
        rf.retrieve(DS, lexical, query="id")
    with pytest.raises(InvalidParameterError, match="k"):
        rf.retrieve(DS, lexical, k=0)
    with pytest.raises(InvalidParameterError, match="retriever"):
        rf.retrieve(DS, "bm25")
    with pytest.raises(InvalidParameterError, match="LazyFrame"):
        rf.retrieve(DS.lazy(), lexical)


def test_scores_and_texts_can_be_chosen():
    out = rf.retrieve(DS, lexical, k=1, texts=False)
    assert "contexts" not in out.columns and "retrieved_scores" in out.columns
    out = rf.retrieve(DS, lambda q, k: ["d1"], scores=True, retrieved_scores="bm25_scores")
    assert out["bm25_scores"].to_list() == [None, None, None, None]


def test_every_eager_frame_kind():
    pd = pytest.importorskip("pandas")
    expected = rf.retrieve(DS, lexical, k=2)
    arrow = rf.retrieve(DS.to_arrow(), lexical, k=2)
    assert pl.DataFrame(pl.from_arrow(arrow)).equals(expected)
    frame = rf.retrieve(DS.to_pandas(), lexical, k=2)
    assert isinstance(frame, pd.DataFrame) and list(frame["retrieve_status"]) == ["ok", "ok", "ok", "skipped"]


# ----------------------------------------------------------------------------- the anchor seed's A/B test


def test_ab_test_of_two_retrievers_is_compare_over_evaluate():
    ds = pl.DataFrame(
        {
            "id": list(range(8)),
            "question": ["capital of France", "who wrote Hamlet", "Doctor Faustus author", "city in France"] * 2,
            "relevant_ids": [["d1"], ["d2"], ["d4"], ["d3"]] * 2,
        }
    )
    a = rf.evaluate(rf.retrieve(ds, lexical, k=4), ["mrr", "ndcg_at_k"], k=[4])
    b = rf.evaluate(rf.retrieve(ds, reverse, k=4), ["mrr", "ndcg_at_k"], k=[4])
    result = rf.compare(a, b, on="id", test="t", correction=None)
    row = result.filter(pl.col("metric") == "mrr").row(0, named=True)
    expected = stats.ttest_rel(a.sort("id")["mrr"].to_numpy(), b.sort("id")["mrr"].to_numpy())
    assert row["p_value"] == pytest.approx(expected.pvalue)
    assert a["mrr"].mean() > b["mrr"].mean()
