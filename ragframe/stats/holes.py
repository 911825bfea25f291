"""Holes in the qrels: how much of a run's top k is judged, and filling the rest with LLM labels.

A run scored against qrels that do not judge its top documents counts them as not relevant;
``judged@k`` (the share of the top k that has a label) says how far to trust the numbers.
:func:`fill_holes` judges only the unjudged documents of the top k with
:func:`ragframe.judge_relevance`, keeps every human label, and marks each label's source
(``docs/assessors.md``).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.metrics.relevance import judge_relevance
from ragframe.public import public
from ragframe.schema import check_same_id_kind, first_true_row, integer_grades, to_polars

__all__ = ["judged_at_k", "fill_holes"]


def _top_k(run: Any, k: int, query_id: str, doc_id: str, score: str) -> pl.DataFrame:
    """The run's first ``k`` documents per query in trec_eval order (score descending, then doc id descending)."""
    df = to_polars(run, [query_id, doc_id, score])
    for column in (query_id, doc_id, score):
        at = first_true_row(df.get_column(column).is_null())
        if at is not None:
            raise SchemaError("null value in the run", column=column, row=at, found="null")
    return (
        df.sort([query_id, score, doc_id], descending=[False, True, True])
        .with_columns((pl.int_range(pl.len()).over(query_id) + 1).alias("rank"))
        .filter(pl.col("rank") <= k)
        .select(query_id, doc_id, "rank")
    )


def _labels(qrels: Any, query_id: str, doc_id: str, relevance: str) -> pl.DataFrame:
    """The qrels with whole-number grades (Int64): a null or fractional grade is an error, never truncated."""
    df = to_polars(qrels, [query_id, doc_id, relevance])
    at = first_true_row(df.get_column(relevance).is_null())
    if at is not None:
        raise SchemaError("null grade in the qrels", column=relevance, row=at, found="null")
    return df.with_columns(integer_grades(df.get_column(relevance), relevance))


@public
def judged_at_k(
    run: Any,
    qrels: Any,
    /,
    *,
    k: int = 10,
    by: str | None = None,
    query_id: str = "query_id",
    doc_id: str = "doc_id",
    score: str = "score",
) -> pl.DataFrame:
    """Share of each query's top ``k`` documents that the qrels judge (ir_measures' ``Judged@k``).

    Parameters
    ----------
    run : frame
        A long run (``rf.read_trec_run``): query, document, score.
    qrels : frame
        Long qrels (``rf.read_qrels``); any label counts as judged, 0 included.
    k : int
        Depth; a query with fewer than ``k`` documents is divided by ``k`` all the same.
    by : str, optional
        ``query_id``: one row per query instead of the mean.
    query_id, doc_id, score : str
        Column names (``query_id`` and ``doc_id`` the same in both frames).

    Returns
    -------
    polars.DataFrame
        ``queries``, ``holes`` (unjudged documents in the top k), ``judged_at_k`` (mean over
        the run's queries); per query: ``query_id``, ``holes``, ``judged_at_k``.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> run = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query_id": ["q"], "doc_id": ["b"], "relevance": [0]})
    >>> rf.judged_at_k(run, qrels, k=2).row(0)
    (1, 1, 0.5)
    """
    k = validate.positive_int(k, "k")
    if by is not None and by != query_id:
        raise InvalidParameterError(f"by must be None or the query column {query_id!r}, found {by!r}")
    top = _top_k(run, k, query_id, doc_id, score)
    labels = to_polars(qrels, [query_id, doc_id]).unique()
    for column in (query_id, doc_id):
        check_same_id_kind(("the run", top.schema[column]), ("the qrels", labels.schema[column]), column=column)
    marked = top.join(labels.with_columns(pl.lit(True).alias("__rf_judged")), on=[query_id, doc_id], how="left")
    per_query = (
        marked.group_by(query_id)
        .agg(
            pl.col("__rf_judged").is_null().sum().cast(pl.Int64).alias("holes"),
            (pl.col("__rf_judged").is_not_null().sum() / k).alias("judged_at_k"),
        )
        .sort(query_id)
    )
    if by is not None:
        return per_query
    return per_query.select(
        pl.len().cast(pl.Int64).alias("queries"), pl.col("holes").sum().cast(pl.Int64), pl.col("judged_at_k").mean()
    )


@public
def fill_holes(
    run: Any,
    qrels: Any,
    /,
    *,
    judge: Any,
    queries: Any,
    passages: Any,
    k: int = 10,
    query_id: str = "query_id",
    doc_id: str = "doc_id",
    score: str = "score",
    relevance: str = "relevance",
    query: str = "query",
    passage: str = "passage",
    **options: Any,
) -> pl.DataFrame:
    """Judge the unjudged documents of a run's top ``k`` with an LLM; keep every human label.

    Parameters
    ----------
    run, qrels : frame
        A long run and long qrels, as :func:`judged_at_k` reads them.
    judge : callable, Judge, str or mapping
        The judge (:func:`ragframe.judge_relevance`).
    queries : frame
        Query texts: ``query_id`` and ``query`` columns.
    passages : frame
        Passage texts: ``doc_id`` and ``passage`` columns; a hole without a text is
        ``skipped`` (``relevance_error`` says so), never guessed.
    k : int
        Depth of the top the holes are taken from.
    query_id, doc_id, score, relevance, query, passage : str
        Column names.
    **options
        :func:`ragframe.judge_relevance`'s options: ``passages_per_call``, ``max_calls``
        (the holes are sent by rank, then query: the top holes first), ``prefilter``,
        ``cache``, ``dry_run`` (the plan and its estimated tokens, no call), ``parse_retries``,
        ``prompt``.

    Returns
    -------
    polars.DataFrame
        One row per human label and per hole: ``query_id``, ``doc_id``, ``relevance`` (null
        for a hole that got no grade), ``source`` (``human``, ``llm`` or ``lexical``),
        ``status``, ``error``, ``input_tokens``, ``output_tokens``. Qrels to score with:
        ``out.drop_nulls("relevance")``.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> run = pl.DataFrame({"query_id": ["q"] * 2, "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [3]})
    >>> out = rf.fill_holes(run, qrels, judge=lambda p: "Grade 1: 1", cache=False, k=2,
    ...                     queries=pl.DataFrame({"query_id": ["q"], "query": ["what is b?"]}),
    ...                     passages=pl.DataFrame({"doc_id": ["a", "b"], "passage": ["a text", "b text"]}))
    >>> out.select("doc_id", "relevance", "source").rows()
    [('a', 3, 'human'), ('b', 1, 'llm')]
    """
    k = validate.positive_int(k, "k")
    unknown = sorted(
        set(options) - {"passages_per_call", "max_calls", "prefilter", "cache", "dry_run", "parse_retries", "prompt"}
    )
    if unknown:
        raise InvalidParameterError(f"unknown option(s) {unknown}; see judge_relevance")
    top = _top_k(run, k, query_id, doc_id, score)
    human = _labels(qrels, query_id, doc_id, relevance)
    for column in (query_id, doc_id):
        check_same_id_kind(("the run", top.schema[column]), ("the qrels", human.schema[column]), column=column)
    texts_q = to_polars(queries, [query_id, query]).unique(query_id, keep="first", maintain_order=True)
    texts_p = to_polars(passages, [doc_id, passage]).unique(doc_id, keep="first", maintain_order=True)
    holes = (
        top.join(human.select(query_id, doc_id), on=[query_id, doc_id], how="anti")
        .join(texts_q, on=query_id, how="left")
        .join(texts_p, on=doc_id, how="left")
        .sort(["rank", query_id])
    )
    graded = judge_relevance(holes, judge=judge, query=query, passage=passage, query_id=query_id, **options)
    missing_text = graded.get_column(query).is_null() | graded.get_column(passage).is_null()
    llm = graded.select(
        query_id,
        doc_id,
        pl.col("relevance").alias(relevance),
        pl.col("relevance_source").alias("source"),
        pl.col("relevance_status").alias("status"),
        pl.when(pl.Series(missing_text))
        .then(pl.lit("no query or passage text for this hole: not judged"))
        .otherwise(pl.col("relevance_error"))
        .alias("error"),
        pl.col("relevance_input_tokens").alias("input_tokens"),
        pl.col("relevance_output_tokens").alias("output_tokens"),
    )
    people = human.select(
        query_id,
        doc_id,
        pl.col(relevance),
        pl.lit("human").alias("source"),
        pl.lit("ok").alias("status"),
        pl.lit(None, dtype=pl.String).alias("error"),
        pl.lit(None, dtype=pl.Int64).alias("input_tokens"),
        pl.lit(None, dtype=pl.Int64).alias("output_tokens"),
    )
    return pl.concat([people, llm.cast(people.schema)])
