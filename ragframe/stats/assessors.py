"""Agreement between two sets of relevance labels on the same (query, document) pairs.

Two qrels (people against people, people against an LLM assessor) are compared on the
pairs both judged (``docs/assessors.md``): exact agreement and Cohen's kappa, plain and
weighted, overall or per query, optionally on labels binarised at a relevance threshold.
The kappas equal ``sklearn.metrics.cohen_kappa_score`` on the paired labels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.kernels.groups import dense_code
from ragframe.public import public
from ragframe.schema import check_same_id_kind, first_true_row, id_dtype_ok, integer_grades, to_polars
from ragframe.stats.agreement import _kappa_kernel

__all__ = ["assessor_agreement"]

_A, _B, _GROUP = "__rf_label_a", "__rf_label_b", "__rf_group"


def _qrels(frame: Any, side: str, *, query_id: str, doc_id: str, relevance: str) -> pl.DataFrame:
    """One side's (query, doc, grade) with the ids checked, grades integer and no pair twice."""
    df = to_polars(frame, [query_id, doc_id, relevance])
    for column in (query_id, doc_id):
        dtype = df.schema[column]
        if not id_dtype_ok(dtype):
            raise SchemaError(
                f"wrong dtype in qrels {side}",
                column=column,
                expected="str or int ids",
                found=str(dtype),
            )
    for column in (query_id, doc_id, relevance):
        at = first_true_row(df.get_column(column).is_null())
        if at is not None:
            raise SchemaError(
                f"null value in qrels {side}",
                column=column,
                row=at,
                expected="a value on every row (a pair that was not judged has no row)",
                found="null",
            )
    grades = integer_grades(df.get_column(relevance), relevance)
    df = df.with_columns(grades.alias(relevance))
    duplicated = df.select(~pl.struct(query_id, doc_id).is_first_distinct()).to_series()
    at = first_true_row(duplicated)
    if at is not None:
        raise SchemaError(
            f"the same (query, document) pair is judged twice in qrels {side}",
            column=doc_id,
            row=at,
            expected="one label per pair",
            found=f"{df[at, query_id]!r}, {df[at, doc_id]!r}",
        )
    return df


@public
def assessor_agreement(
    a: Any,
    b: Any,
    /,
    *,
    binarize_at: int | None = None,
    by: str | None = None,
    confusion: bool = False,
    query_id: str = "query_id",
    doc_id: str = "doc_id",
    relevance: str = "relevance",
) -> pl.DataFrame:
    """Agreement between two qrels on the (query, document) pairs both judged.

    The labels of the pairs in common are compared as they are (``binarize_at=None``) or as
    "relevant" (``grade >= binarize_at``) against "not relevant". Cohen's kappa follows
    ``sklearn.metrics.cohen_kappa_score``: the labels are the grades either side used, sorted,
    and the weighted kappas weigh a disagreement by ``|i - j|`` (linear) or ``(i - j) ** 2``
    (quadratic) of those labels' indexes. Where chance agreement is 1 (both sides use one
    and the same grade throughout, which happens per query) the kappa is 1.0 if the sides
    agree on every pair and 0.0 otherwise (sklearn gives nan), as :func:`ragframe.cohen_kappa`.

    Parameters
    ----------
    a, b : frame
        Qrels, one row per judged pair, as :func:`ragframe.read_qrels` gives them (any frame
        kind). ``a`` is the reference (people), ``b`` the other assessor; only the confusion
        matrix and ``only_a``/``only_b`` depend on the order.
    binarize_at : int, optional
        Compare ``grade >= binarize_at`` instead of the grades.
    by : str, optional
        ``query_id`` (the name given to ``query_id=``): one row per query judged on either side.
    confusion : bool
        Return the confusion matrix instead: one row per (``label_a``, ``label_b``) that occurs
        (per query with ``by``), with its ``count``.
    query_id, doc_id, relevance : str
        Column names (the same in ``a`` and ``b``).

    Returns
    -------
    polars.DataFrame
        ``pairs`` (judged by both), ``only_a``, ``only_b`` (judged by one side only),
        ``agreement`` (share of pairs with the same label), ``kappa``, ``kappa_linear``,
        ``kappa_quadratic``; the query column first with ``by``. Statistics of a query
        without a pair in common are null.

    Raises
    ------
    SchemaError
        A missing column, a null, ids that are not str/int (or of different kinds in ``a``
        and ``b``), a grade that is not a whole number, or a pair judged twice on one side.
    InvalidParameterError
        A bad ``binarize_at``/``by``, or no pair in common.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> nist = pl.DataFrame({"query_id": ["q1"] * 4, "doc_id": ["d1", "d2", "d3", "d4"], "relevance": [0, 1, 2, 3]})
    >>> llm = pl.DataFrame({"query_id": ["q1"] * 4, "doc_id": ["d1", "d2", "d3", "d4"], "relevance": [0, 2, 2, 3]})
    >>> rf.assessor_agreement(nist, llm).select("pairs", "agreement", "kappa").row(0)
    (4, 0.75, 0.6666666666666667)
    >>> rf.assessor_agreement(nist, llm, binarize_at=2)["kappa"].item()
    0.5
    """
    if binarize_at is not None:
        binarize_at = validate.integer(binarize_at, "binarize_at")
    if by is not None and by != query_id:
        raise InvalidParameterError(f"by must be None or the query column {query_id!r}, found {by!r}")
    confusion = validate.flag(confusion, "confusion")
    names = {"query_id": query_id, "doc_id": doc_id, "relevance": relevance}
    left = _qrels(a, "a", **names)
    right = _qrels(b, "b", **names)
    for column in (query_id, doc_id):
        check_same_id_kind(("qrels a", left.schema[column]), ("qrels b", right.schema[column]), column=column)
        if left.schema[column] != right.schema[column]:  # int widths differ: one width to join on
            left = left.with_columns(pl.col(column).cast(pl.Int64))
            right = right.with_columns(pl.col(column).cast(pl.Int64))
    keys = [query_id, doc_id]
    pairs = left.rename({relevance: _A}).join(right.rename({relevance: _B}), on=keys, how="inner")
    if pairs.height == 0:
        raise InvalidParameterError("the two qrels share no judged (query, document) pair")
    if binarize_at is not None:
        pairs = pairs.with_columns(
            (pl.col(_A) >= int(binarize_at)).cast(pl.Int64), (pl.col(_B) >= int(binarize_at)).cast(pl.Int64)
        )
    group = [query_id] if by is not None else []
    if confusion:
        out = pairs.group_by([*group, _A, _B]).agg(pl.len().cast(pl.Int64).alias("count"))
        return out.rename({_A: "label_a", _B: "label_b"}).sort([*group, "label_a", "label_b"])
    pairs = pairs.with_columns(dense_code(group).alias(_GROUP) if group else pl.lit(0, dtype=pl.Int64).alias(_GROUP))
    # one code per grade, in sorted order over both sides (the kernel keeps each group's observed ones)
    values = np.unique(np.concatenate([pairs.get_column(_A).to_numpy(), pairs.get_column(_B).to_numpy()]))
    code_a = np.searchsorted(values, pairs.get_column(_A).to_numpy())
    code_b = np.searchsorted(values, pairs.get_column(_B).to_numpy())
    code = pairs.get_column(_GROUP).to_numpy().astype(np.int64)
    n_groups = int(code.max()) + 1
    kappas = {
        f"kappa{suffix}": _kappa_kernel(code, code_a, code_b, n_groups, weights)
        for suffix, weights in (("", None), ("_linear", "linear"), ("_quadratic", "quadratic"))
    }
    stats = (
        pairs.group_by(_GROUP)
        .agg(
            *(pl.col(c).first() for c in group),
            pl.len().cast(pl.Int64).alias("pairs"),
            (pl.col(_A) == pl.col(_B)).mean().alias("agreement"),
        )
        .sort(_GROUP)
        .with_columns(pl.Series(name, value) for name, value in kappas.items())
        .drop(_GROUP)
    )
    only_a = left.join(right, on=keys, how="anti")
    only_b = right.join(left, on=keys, how="anti")
    if not group:
        return stats.with_columns(
            pl.lit(only_a.height, dtype=pl.Int64).alias("only_a"), pl.lit(only_b.height, dtype=pl.Int64).alias("only_b")
        ).select("pairs", "only_a", "only_b", "agreement", "kappa", "kappa_linear", "kappa_quadratic")
    queries = pl.concat([left.select(query_id), right.select(query_id)]).unique()
    counts = [
        side.group_by(query_id).agg(pl.len().cast(pl.Int64).alias(name))
        for side, name in ((only_a, "only_a"), (only_b, "only_b"))
    ]
    out = queries.join(stats, on=query_id, how="left")
    for frame in counts:
        out = out.join(frame, on=query_id, how="left")
    return (
        out.with_columns(pl.col("pairs", "only_a", "only_b").fill_null(0))
        .select(query_id, "pairs", "only_a", "only_b", "agreement", "kappa", "kappa_linear", "kappa_quadratic")
        .sort(query_id)
    )
