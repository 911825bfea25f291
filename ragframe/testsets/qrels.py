"""What a generated test set hands to the rest of ragframe: its qrels, and what its filters removed.

Examples
--------
>>> import polars as pl
>>> ts = pl.DataFrame({"id": ["q1", "q2", "q3"], "relevant_ids": [["c1", "c2"], [], None],
...                    "_status": ["ok", "ok", "filtered"],
...                    "_rejections": [["duplicate"], [], ["generic", "duplicate"]]})
>>> generated_qrels(ts).rows()
[('q1', 'c1', 1), ('q1', 'c2', 1)]
>>> generation_rejections(ts).rows()
[('duplicate', 2), ('generic', 1)]
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ragframe.public import public
from ragframe.schema import to_polars

__all__ = ["generated_qrels", "generation_rejections"]


@public
def generated_qrels(testset: Any, *, id: str = "id", relevant_ids: str = "relevant_ids") -> pl.DataFrame:
    """The qrels of a generated set: one row ``(query_id, doc_id, relevance=1)`` per source chunk of each ``ok`` row.

    Feed it to :func:`ragframe.evaluate_run` with a run of your retriever over the set's
    questions (``query_id`` = the set's ``id``). Unanswerable questions have no qrels.

    Parameters
    ----------
    testset : frame
        The result of :func:`ragframe.generate_testset` (or a Parquet file read back).
    id, relevant_ids : str
        Its column names.

    Returns
    -------
    polars.DataFrame
        ``query_id``, ``doc_id``, ``relevance`` (Int64).

    Examples
    --------
    >>> import polars as pl
    >>> ts = pl.DataFrame({"id": ["q1", "q2", "q3"], "relevant_ids": [["c1", "c2"], [], None],
    ...                    "_status": ["ok", "ok", "budget"]})
    >>> generated_qrels(ts).rows()
    [('q1', 'c1', 1), ('q1', 'c2', 1)]
    """
    frame = to_polars(testset, None)
    if "_status" in frame.columns:
        frame = frame.filter(pl.col("_status") == "ok")
    return (
        frame.select(pl.col(id).alias("query_id"), pl.col(relevant_ids).alias("doc_id"))
        .explode("doc_id")
        .drop_nulls("doc_id")
        .with_columns(relevance=pl.lit(1, dtype=pl.Int64))
    )


@public
def generation_rejections(testset: Any) -> pl.DataFrame:
    """How many candidates each filter or failure removed: ``reason``, ``candidates``, most first.

    Parameters
    ----------
    testset : frame
        The result of :func:`ragframe.generate_testset`.

    Returns
    -------
    polars.DataFrame

    Examples
    --------
    >>> import polars as pl
    >>> ts = pl.DataFrame({"_rejections": [["duplicate"], [], ["generic", "duplicate"]]})
    >>> generation_rejections(ts).rows()
    [('duplicate', 2), ('generic', 1)]
    """
    frame = to_polars(testset, ["_rejections"])
    return (
        frame.select(pl.col("_rejections").alias("reason"))
        .explode("reason")
        .drop_nulls()
        .group_by("reason")
        .agg(candidates=pl.len().cast(pl.Int64))
        .sort(["candidates", "reason"], descending=[True, False])
    )
