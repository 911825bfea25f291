"""Run a live retriever over a dataset: one call per row, written as ragframe's ranking columns.

The anchor seed's ``ABTestRunner.run(retriever_a, retriever_b, k)`` and
``BatchEvaluator(evaluator, retriever, top_k)`` call retrievers themselves; in ragframe the
retrieval is a frame step of its own, and the A/B test is the usual paired comparison::

    a = rf.evaluate(rf.retrieve(ds, retriever_a), ["ndcg_at_10", "mrr"])
    b = rf.evaluate(rf.retrieve(ds, retriever_b), ["ndcg_at_10", "mrr"])
    rf.compare(a, b, on="id")

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> docs = {"d1": "Paris is the capital of France.", "d2": "Hamlet is by Shakespeare."}
>>> def search(query, k):
...     words = set(query.lower().split())
...     hits = [(doc, float(len(words & set(text.lower().split()))), text) for doc, text in docs.items()]
...     return sorted(hits, key=lambda hit: -hit[1])[:k]
>>> ds = pl.DataFrame({"id": [1], "question": ["the capital of France"], "relevant_ids": [["d1"]]})
>>> out = rf.retrieve(ds, search, k=2)
>>> out.select("retrieved_ids", "retrieved_scores", "retrieve_status").row(0)  # d1 shares 'the', 'capital', 'of'
(['d1', 'd2'], [3.0, 0.0], 'ok')
>>> rf.evaluate(out, ["mrr"])["mrr"].to_list()
[1.0]
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.concurrency import gather_limited, is_async_callable, run_sync
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.public import public
from ragframe.schema import apply_to_frame, column_names, frame_kind

__all__ = ["retrieve", "RETRIEVE_STATUSES"]

Frame = TypeVar("Frame")
logger = logging.getLogger("ragframe.retrieve")

#: Per-row statuses of :func:`retrieve`.
RETRIEVE_STATUSES = ("ok", "timeout", "error", "skipped")


@dataclass
class _Row:
    """What one retriever call gave: ids (and scores, texts when the items carry them), or a failure."""

    status: str
    ids: list[Any] | None = None
    scores: list[float] | None = None
    texts: list[str] | None = None
    error: str | None = None


class _BadItems(ValueError):
    """The retriever returned something that is not a ranking."""


def _item(item: Any, position: int) -> tuple[Any, float | None, str | None]:
    """(id, score or None, text or None) of one returned item."""
    if isinstance(item, (str, int, np.integer)) and not isinstance(item, bool):
        return item, None, None
    if isinstance(item, Mapping):
        if "id" not in item:
            raise _BadItems(f"item {position} is a mapping without 'id'")
        return item["id"], item.get("score"), item.get("text", item.get("content"))
    if isinstance(item, (tuple, list)) and len(item) in (2, 3):
        return item[0], item[1], item[2] if len(item) == 3 else None
    if hasattr(item, "id"):  # anchor's ContextItem and friends
        return item.id, getattr(item, "score", None), getattr(item, "content", getattr(item, "text", None))
    raise _BadItems(
        f"item {position} is a {type(item).__name__}; expected an id, (id, score), (id, score, text) or a dict"
    )


def _ranking(items: Any, k: int) -> _Row:
    """The first ``k`` items as ids, scores and texts; an inconsistent or malformed list is a row error."""
    if items is None or isinstance(items, (str, bytes, Mapping)):
        raise _BadItems(f"the retriever returned a {type(items).__name__}, not a list of items")
    parsed = [_item(item, i) for i, item in enumerate(list(items)[:k])]
    ids = [int(i) if isinstance(i, np.integer) else i for i, _, _ in parsed]
    kinds = {type(i) for i in ids}
    if not kinds <= {str} and not kinds <= {int}:
        raise _BadItems(f"ids must all be str or all be int, found {sorted(t.__name__ for t in kinds)}")
    scores = [s for _, s, _ in parsed]
    texts = [t for _, _, t in parsed]
    for position, score in enumerate(scores):
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float, np.number))):
            raise _BadItems(f"item {position} has score {score!r}, not a number")
        if score is not None and math.isnan(float(score)):  # it has no rank: every ranking metric would refuse it
            raise _BadItems(f"item {position} has score NaN, not a number")
    for position, text in enumerate(texts):
        if text is not None and not isinstance(text, str):
            raise _BadItems(f"item {position} has text of type {type(text).__name__}, not str")
    # one retriever reply (one query's items): per-row by nature, see the note above _columns
    has_scores = any(s is not None for s in scores)
    has_texts = any(t is not None for t in texts)
    if has_scores and not all(s is not None for s in scores):
        raise _BadItems("some items have a score and some do not")
    if has_texts and not all(t is not None for t in texts):
        raise _BadItems("some items have a text and some do not")
    return _Row(
        "ok",
        ids,
        [float(s) for s in scores] if has_scores else None,
        texts if has_texts else None,
    )


def _caller(retriever: Any) -> tuple[Callable[[str, int], Any], bool]:
    """``call(query, k)`` for any retriever form, and whether it returns an awaitable."""
    for method in ("aretrieve", "retrieve"):
        bound = getattr(retriever, method, None)
        if callable(bound) and not inspect.isfunction(retriever):
            return (lambda q, k, m=bound: m(q, k)), is_async_callable(bound)
    if not callable(retriever):
        raise validate.fail("retriever", "a callable query -> items (or (query, k) -> items)", retriever)
    takes_k = True
    try:
        params = inspect.signature(retriever).parameters.values()
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        takes_k = len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)
    except (TypeError, ValueError):  # builtins without a signature: give them (query, k)
        pass
    if takes_k:
        return (lambda q, k: retriever(q, k)), is_async_callable(retriever)
    return (lambda q, k: retriever(q)), is_async_callable(retriever)


@dataclass(frozen=True)
class _Settings:
    k: int
    max_concurrency: int
    max_retries: int
    timeout: float | None
    backoff: float


async def _one(call: Callable[[str, int], Any], is_async: bool, query: str | None, s: _Settings) -> _Row:
    """One row: the call with its timeout, retried with exponential backoff and jitter; a status, never a raise."""
    if query is None:
        return _Row("skipped", error="null query: not retrieved")
    last: _Row = _Row("error")
    for attempt in range(s.max_retries + 1):
        if attempt:
            await asyncio.sleep(random.uniform(0, s.backoff * 2 ** (attempt - 1)))
        try:
            pending = call(query, s.k) if is_async else asyncio.to_thread(call, query, s.k)
            items = await (pending if s.timeout is None else asyncio.wait_for(pending, s.timeout))
            return _ranking(items, s.k)
        except _BadItems as error:  # the same call would return the same thing: no retry
            return _Row("error", error=str(error))
        except (TimeoutError, asyncio.TimeoutError):
            last = _Row("timeout", error=f"no answer within {s.timeout} s")
        except Exception as error:  # the user's retriever failed: retried, then this row's status
            last = _Row("error", error=f"{type(error).__name__}: {error}")
    retried = f" (after {s.max_retries} retries)" if s.max_retries else ""
    return _Row(last.status, error=f"{last.error}{retried}")


# Per-row Python in this module is deliberate: each row is one call of the user's retriever
# (a search service or index, I/O-bound and far slower than any loop here), so building the
# columns from the returned Python lists is not a hot path; scoring the rankings afterwards
# is columnar (rf.evaluate / rf.score_retrieval).
def _columns(rows: list[_Row], names: dict[str, str], scores: bool, texts: bool, id_dtype: Any) -> pl.DataFrame:
    ok = [r.status == "ok" for r in rows]
    out = [pl.Series(names["retrieved_ids"], [r.ids if o else None for r, o in zip(rows, ok)], dtype=pl.List(id_dtype))]
    if scores:
        out.append(pl.Series(names["retrieved_scores"], [r.scores for r in rows], dtype=pl.List(pl.Float64)))
    if texts:
        out.append(pl.Series(names["contexts"], [r.texts for r in rows], dtype=pl.List(pl.String)))
    out.append(pl.Series(names["status"], [r.status for r in rows], dtype=pl.String))
    out.append(pl.Series(names["error"], [r.error for r in rows], dtype=pl.String))
    return pl.DataFrame(out, height=len(rows))


def _id_dtype(rows: list[_Row]) -> Any:
    """Int64 when every returned id is an int (ids of another kind in a row make that row an error), else String."""
    # one look per retriever reply (see the note above _columns): not a hot path
    kinds = Counter(type(r.ids[0]) for r in rows if r.status == "ok" and r.ids)
    if not kinds:
        return pl.String
    chosen = str if str in kinds else int
    for row in rows:
        if row.status == "ok" and row.ids and type(row.ids[0]) is not chosen:
            found, wanted = type(row.ids[0]).__name__, chosen.__name__
            row.status, row.ids, row.scores, row.texts = "error", None, None, None
            row.error = f"{found} ids where other rows have {wanted} ids (an int id never equals a str id)"
    return pl.String if chosen is str else pl.Int64


@public
def retrieve(
    df: Frame,
    retriever: Any,
    /,
    *,
    k: int = 10,
    query: str = "question",
    retrieved_ids: str = "retrieved_ids",
    retrieved_scores: str = "retrieved_scores",
    contexts: str = "contexts",
    status: str = "retrieve_status",
    error: str = "retrieve_error",
    scores: bool | None = None,
    texts: bool | None = None,
    max_concurrency: int = 8,
    max_retries: int = 2,
    timeout: float | None = None,
    backoff: float = 0.5,
) -> Frame:
    """Call ``retriever`` for every row's query and write what it returns as ragframe's ranking columns.

    Parameters
    ----------
    df : frame
        A polars DataFrame, pyarrow Table/RecordBatch or pandas DataFrame with a ``query``
        column (str); the same kind comes back. A LazyFrame is refused: each collect would
        call the retriever again.
    retriever : callable or object
        ``retriever(query, k)`` or ``retriever(query)`` (by its signature), sync or async, or an
        object with ``retrieve(query, top_k)`` / ``aretrieve(query, top_k)`` (anchor's
        ``Retriever``). It returns a ranked list of items: ids (str or int), ``(id, score)``,
        ``(id, score, text)``, dicts with ``id`` (``score``, ``text``/``content``) or objects
        with ``.id`` (``.score``, ``.content``). Only the first ``k`` items are kept.
    k : int
        Passed to the retriever; the ranking is cut at ``k``.
    query : str
        The column holding the queries; a null query is ``skipped`` (no call).
    retrieved_ids, retrieved_scores, contexts : str
        Names of the written columns: the ids (always), the scores and the texts (when the
        items carry them, see ``scores`` and ``texts``).
    status, error : str
        Names of the per-row status (``ok``, ``timeout``, ``error``, ``skipped``) and error
        (null when ok) columns.
    scores, texts : bool, optional
        Write ``retrieved_scores`` / ``contexts``: None (the default) when any row's items
        carry them; True or False to decide.
    max_concurrency : int
        Calls in flight at once (a sync retriever runs in worker threads).
    max_retries : int
        Retries of a call that raised or timed out (exponential backoff with jitter,
        ``backoff * 2**attempt`` seconds at most).
    timeout : float, optional
        Seconds one call may take (None: no limit).
    backoff : float
        Seconds of the first retry's backoff ceiling.

    Returns
    -------
    The same kind of frame with the columns appended (or replaced, when they exist). A row
    whose call failed after its retries has null ids, scores and texts (so null ranking
    scores) and its status; nothing raises for one row's failure. A reply that is not a
    ranking (an item without an id, a score that is not a number or is NaN, ids of two
    kinds) is that row's ``error``, not retried.

    Examples
    --------
    >>> import polars as pl
    >>> async def search(query, k):
    ...     return [("d2", 0.9), ("d1", 0.4)][:k]
    >>> out = retrieve(pl.DataFrame({"question": ["q", None]}), search, k=1)
    >>> out.select("retrieved_ids", "retrieved_scores", "retrieve_status").rows()
    [(['d2'], [0.9], 'ok'), (None, None, 'skipped')]
    """
    kind = frame_kind(df)
    settings = _Settings(
        validate.positive_int(k, "k"),
        validate.positive_int(max_concurrency, "max_concurrency"),
        validate.integer(max_retries, "max_retries", minimum=0),
        None if timeout is None else validate.number(timeout, "timeout", minimum=0.0, inclusive=False),
        validate.number(backoff, "backoff", minimum=0.0),
    )
    names = {
        "retrieved_ids": retrieved_ids,
        "retrieved_scores": retrieved_scores,
        "contexts": contexts,
        "status": status,
        "error": error,
    }
    for role, name in {"query": query, **names}.items():
        validate.column_name(name, role)
    flags = {n: None if v is None else validate.flag(v, n) for n, v in (("scores", scores), ("texts", texts))}
    if kind == "lazy":  # every collect would call the retriever again, for every row
        raise InvalidParameterError("a LazyFrame would call the retriever again at each collect; collect it first")
    call, is_async = _caller(retriever)
    if query not in column_names(df):
        raise SchemaError("missing column", column=query, available=column_names(df))

    def compute(view: pl.DataFrame) -> pl.DataFrame:
        queries = view.get_column(query)
        if queries.dtype not in (pl.String, pl.Null):
            raise SchemaError("wrong dtype", column=query, expected="str", found=str(queries.dtype))
        values = queries.cast(pl.String).to_list()
        calls = [lambda q=q: _one(call, is_async, q, settings) for q in values]
        rows = run_sync(lambda: gather_limited(calls, settings.max_concurrency)) if calls else []
        id_dtype = _id_dtype(rows)
        _log(rows)
        want_scores = flags["scores"] if flags["scores"] is not None else any(r.scores for r in rows)
        want_texts = flags["texts"] if flags["texts"] is not None else any(r.texts for r in rows)
        return _columns(rows, names, want_scores, want_texts, id_dtype)

    return apply_to_frame(df, compute, columns=[query])


def _log(rows: list[_Row]) -> None:
    failed = [r for r in rows if r.status in ("error", "timeout")]
    if failed:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(Counter(r.status for r in failed).items()))
        logger.warning("retrieve: %d of %d calls failed (%s); first error: %s", len(failed), len(rows), counts,
                       failed[0].error)  # fmt: skip
