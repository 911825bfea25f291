"""Running a whole ranked run against judgments: trec_eval's way, one row per query (``rf.evaluate_run``).

The retrieval family (:mod:`ragframe.metrics.retrieval`) defines the measures and scores a frame
with one ranking per row; this module executes them over long tables (a TREC run and its
qrels): it ranks each query's documents by score as trec_eval does, codes the judgments, computes
every measure at once and returns the per-query table (and its summary, :func:`run_summary`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any, NamedTuple, cast

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.kernels.ranking import (
    COUNT_MEASURES,
    Judgments,
    dedupe_judgments,
    maybe_repeated,
    rank_measures,
)
from ragframe.kernels.trec_measures import (
    MIN_GEO_MEAN,
    TrecOptions,
)
from ragframe.metrics import registry
from ragframe.metrics.retrieval import (
    RetrievalOptions,
    check_ks,
    check_level,
    check_persistence,
    chosen_requests,
    classic_requests,
    family_check,
    family_score,
    trec_options,
)
from ragframe.metrics.retrieval_inputs import check_err_grades, check_scores, id_column, in_trec_order, score_steps
from ragframe.public import public
from ragframe.schema import (
    check_same_id_kind,
    first_true_row,
    integer_grades,
    to_polars,
)

__all__ = ["evaluate_run", "trec_eval_run", "run_summary", "retrieval_metrics"]


@public
def evaluate_run(
    run: Any,
    qrels: Any,
    /,
    *,
    k: int | Iterable[int] = (5, 10, 100),
    metrics: Iterable[str] | str | None = None,
    relevance_level: int = 1,
    complete: bool = False,
    max_docs: int | None = None,
    rbp_persistence: float = 0.9,
    err_max_grade: int = 4,
    query_id: str = "query_id",
    doc_id: str = "doc_id",
    score: str = "score",
    relevance: str = "relevance",
) -> pl.DataFrame:
    """Score a TREC-style run against qrels: one row per query, as trec_eval ``-q``.

    Documents are ranked by score descending, ties broken by doc id descending
    (trec_eval; a ``rank`` column is ignored). A run already in that order (the
    usual case) is not sorted again.

    Parameters
    ----------
    run : frame
        Columns ``query_id, doc_id, score`` (names overridable). A document listed twice
        for one query is a :class:`~ragframe.exceptions.SchemaError` naming the row, as
        :func:`~ragframe.io.trec.read_trec_run` refuses such a file (naming its lines) and
        trec_eval stops on it: one rule for files and frames. A null or NaN score is a
        SchemaError naming the row.
    qrels : frame
        Columns ``query_id, doc_id, relevance``: integer grades (a float column is accepted
        when every grade is a whole number, ``2.0``; ``1.5`` is an error naming the row).
        Query and doc ids are str or int, of the same kind as the run's: an int id never
        equals a str id. Categorical and Enum ids (Arrow dictionaries) are str ids and score
        as the same strings. Either frame may be a LazyFrame (``pl.scan_parquet(path)``):
        only the named columns are read.
    k : int or list of int
        Cutoffs for the ``*_at_k`` measures. The default, 5, 10 and 100, is not
        :func:`score_retrieval`'s 1, 5 and 10 on purpose: a TREC run ranks hundreds to
        thousands of documents per query and is read at trec_eval's cutoffs (``P_5``,
        ``P_10``, ``P_100``, ``recall_100``), while a wide frame holds a retriever's top few
        chunks. Pass ``k`` to get the other's.
    metrics : str or list of str, optional
        The names :func:`ragframe.evaluate` and :func:`score_retrieval` accept for the
        ranking family: metric names from :data:`RETRIEVAL_METRICS` (``"ndcg_at_k"``,
        ``"bpref"``, ``"iprec_at_recall_0_50"``, ...; a cutoff metric at every ``k``),
        output names of cutoff metrics (``"ndcg_at_10"``: that cutoff only, whatever ``k``
        is) and ``"retrieval"`` (the default set). Each value equals what ``ragframe trec``
        prints for its trec_eval measure (see ``docs/metrics.md``). By default the
        family's default set (``by_default`` in :func:`ragframe.list_metrics`).
    relevance_level : int
        Minimum grade of a relevant document (trec_eval ``-l``), >= 0: a judged
        document is relevant when its grade >= the level (at 0, grade-0 documents
        too); negative grades and unjudged documents never are.
    complete : bool
        trec_eval ``-c``: queries in the qrels but absent from the run are
        scored 0 instead of being left out.
    max_docs : int, optional
        trec_eval ``-M``: keep at most this many documents per query, after ranking.
    rbp_persistence, err_max_grade
        As in :func:`score_retrieval`.
    query_id, doc_id, score, relevance : str
        Column names: ``query_id`` and ``doc_id`` in both frames, ``score`` in the run,
        ``relevance`` in the qrels. The output's id column is ``query_id`` whatever its name here.

    Returns
    -------
    polars.DataFrame
        ``query_id, num_ret, num_rel, num_rel_ret`` and one Float64 column per
        measure, sorted by ``query_id``. Queries of the run that have no
        judgments are kept with null measures (trec_eval skips them); use
        :func:`run_summary` for the ``all`` line.

    Examples
    --------
    >>> import polars as pl
    >>> run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query_id": ["q1"], "doc_id": ["b"], "relevance": [1]})
    >>> evaluate_run(run, qrels, k=1, metrics=["mrr"])["mrr"].to_list()
    [0.5]
    >>> evaluate_run(run, qrels, metrics=["ndcg_at_2", "rprec_mult_2_00"]).columns[4:]
    ['ndcg_at_2', 'rprec_mult_2_00']
    """
    ks = check_ks(k)
    requests = chosen_requests(metrics, ks)
    level = check_level(relevance_level)
    complete = validate.flag(complete, "complete")
    max_docs = None if max_docs is None else validate.positive_int(max_docs, "max_docs")
    family_options = {
        "rbp_persistence": check_persistence(rbp_persistence),
        "err_max_grade": validate.positive_int(err_max_grade, "err_max_grade"),
    }
    names = {
        name: validate.column_name(value, name)
        for name, value in (("query_id", query_id), ("doc_id", doc_id), ("score", score), ("relevance", relevance))
    }
    tables = _long_tables(run, qrels, **names)
    # the repeated-document check is fused with the scoring, which hashes the doc ids anyway,
    # unless -M drops rows first (a repeat below the cut is still refused)
    fused = max_docs is None
    qids, run_doc, run_counts, qrels_runs = _ranked_run(
        tables, names["score"], names["doc_id"], check_repeats=not fused
    )
    if max_docs is not None:
        run_doc, run_counts = _truncated(run_doc, run_counts, max_docs)
    query_ids, counts, judgments, jrows = _coded_judgments(qids, run_counts, qrels_runs, tables, complete)
    trec = trec_options(requests, family_options)
    refuse_repeats = partial(_refuse_repeats_exactly, tables, names["doc_id"]) if fused else None
    try:
        row_of = (lambda at: at) if jrows is None else (lambda at: int(jrows[at]))
        if trec is not None:  # (the grades are converted only when needed)
            check_err_grades(trec, judgments.grade, row_of, names["relevance"])
    except SchemaError:
        if refuse_repeats is not None:  # a repeated document is named first, as when it is checked first
            refuse_repeats()
        raise
    measures = [*classic_requests(requests)[1], *COUNT_MEASURES]
    virtual = np.arange(counts.size) >= qids.len() if trec is not None else None
    values = _measures(
        run_doc,
        counts,
        judgments,
        jrows,
        ks=sorted({k for _, k in requests if k is not None}) or [1],
        measures=measures,
        level=level,
        column=doc_id,
        trec=trec,
        virtual=virtual,
        refuse_repeats=refuse_repeats,
    )
    return _per_query(query_ids, values, [metric.column(k) for metric, k in requests])


def trec_eval_run(
    run: Any,
    qrels: Any,
    /,
    options: TrecOptions,
    *,
    relevance_level: int = 1,
    complete: bool = False,
    max_docs: int | None = None,
) -> pl.DataFrame:
    """trec_eval's per-query values of a run (the lines ``trec_eval -q`` prints), for ``ragframe trec``.

    Only the queries trec_eval evaluates are returned: those with judgments, and with
    ``complete`` (``-c``) every judged query, a query missing from the run scored as
    trec_eval scores its placeholder. Columns are the printed measure names of
    ``options`` (Int64 counts, Float64 values, String ``relstring``), by ``query_id``.

    Parameters
    ----------
    run, qrels : frame
        As :func:`evaluate_run` takes them (``query_id, doc_id, score`` and
        ``query_id, doc_id, relevance``).
    options : ragframe.kernels.trec_measures.TrecOptions
        The measures and trec_eval's ``-J``/``-N``.
    relevance_level, complete, max_docs
        trec_eval's ``-l``, ``-c`` and ``-M``.

    Returns
    -------
    polars.DataFrame

    Examples
    --------
    >>> import polars as pl
    >>> from ragframe.kernels.trec_measures import TrecMeasure, TrecOptions
    >>> run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [0, 1]})
    >>> opts = TrecOptions((TrecMeasure("bpref", (), ("bpref",)), TrecMeasure("relstring", (), ("relstring",))))
    >>> trec_eval_run(run, qrels, opts).row(0)
    ('q1', 0.0, '01')
    """
    level = check_level(relevance_level)
    complete = validate.flag(complete, "complete")
    max_docs = None if max_docs is None else validate.positive_int(max_docs, "max_docs")
    names = {"query_id": "query_id", "doc_id": "doc_id", "score": "score", "relevance": "relevance"}
    tables = _long_tables(run, qrels, **names)
    fused = max_docs is None  # the repeated-document check is fused with the scoring (see evaluate_run)
    qids, run_doc, run_counts, qrels_runs = _ranked_run(tables, "score", "doc_id", check_repeats=not fused)
    if max_docs is not None:
        run_doc, run_counts = _truncated(run_doc, run_counts, max_docs)
    query_ids, counts, judgments, jrows = _coded_judgments(qids, run_counts, qrels_runs, tables, complete)
    virtual = np.arange(counts.size) >= qids.len()
    values = _measures(
        run_doc,
        counts,
        judgments,
        jrows,
        ks=[1],
        measures=[],
        level=level,
        column="doc_id",
        trec=options,
        virtual=virtual,
        refuse_repeats=partial(_refuse_repeats_exactly, tables, "doc_id") if fused else None,
    )
    columns = [query_ids.rename("query_id")]
    for name, array in values.items():
        if array.dtype == object:
            columns.append(pl.Series(name, array.tolist(), dtype=pl.String))
        elif array.dtype.kind in "iu":
            columns.append(pl.Series(name, array, dtype=pl.Int64))
        else:
            columns.append(pl.Series(name, array, dtype=pl.Float64))
    out = pl.DataFrame(columns).filter(pl.Series(judgments.judged))
    return out if out.get_column("query_id").is_sorted() else out.sort("query_id")


class _LongTables(NamedTuple):
    """The columns :func:`evaluate_run` reads, checked: ids as String, grades as Int64."""

    run_qid: pl.Series
    run_doc: pl.Series
    run_score: pl.Series  # as given (checked on a thread by :func:`_ranked_run`)
    qrels_qid: pl.Series
    qrels_doc: pl.Series
    grades: pl.Series


def _long_tables(run: Any, qrels: Any, *, query_id: str, doc_id: str, score: str, relevance: str) -> _LongTables:
    run_df = to_polars(run, [query_id, doc_id, score])
    qrels_df = to_polars(qrels, [query_id, doc_id, relevance])
    grades = integer_grades(qrels_df.get_column(relevance), relevance)
    row = first_true_row(grades.is_null())
    if row is not None:
        raise SchemaError("null grade", column=relevance, row=row, expected="int", found="null")
    for column in (query_id, doc_id):  # an int id never equals a str id
        check_same_id_kind(
            (f"the run's {column!r}", run_df.schema[column]),
            (f"the qrels' {column!r}", qrels_df.schema[column]),
            column=column,
        )
    return _LongTables(
        run_qid=id_column(run_df, query_id),
        run_doc=id_column(run_df, doc_id),
        run_score=run_df.get_column(score),
        qrels_qid=id_column(qrels_df, query_id),
        qrels_doc=id_column(qrels_df, doc_id),
        grades=grades,
    )


def _ranked_run(
    tables: _LongTables, column: str, doc_column: str, *, check_repeats: bool = True
) -> tuple[pl.Series, pl.Series, np.ndarray, pl.DataFrame]:
    """The run in trec_eval order (:func:`_group_run`) and the qrels' query-id run lengths.

    The scores are checked, the (query, document) pairs checked for repeats (unless
    ``check_repeats`` is False: the caller has :func:`rank_measures` check them), and the run
    lengths of the query ids (both halves of the run, and the qrels') computed, on threads.
    """
    run_qid = tables.run_qid
    with ThreadPoolExecutor(max_workers=2) as pool:  # scores are checked while the query ids are read
        checking = pool.submit(_checked_scores, tables.run_score, column)
        half = run_qid.len() // 2
        first_half = pool.submit(lambda: run_qid.slice(0, half).rle().struct.unnest())
        # qrels come grouped by query: one code lookup per run of equal query ids
        qrels_coding = pool.submit(lambda: tables.qrels_qid.rle().struct.unnest())
        run_runs = _joined_runs(first_half, run_qid.slice(half).rle().struct.unnest())
        if check_repeats:
            repeats = pool.submit(_refuse_repeated_pairs, run_qid, tables.run_doc, run_runs, doc_column)
        qrels_runs = qrels_coding.result()
        run_score, steps = checking.result()
        if check_repeats:
            repeats.result()
    qids, run_doc, run_counts = _group_run(run_qid, tables.run_doc, run_score, run_runs, steps)
    return qids, run_doc, run_counts, qrels_runs


def _truncated(run_doc: pl.Series, run_counts: np.ndarray, max_docs: int) -> tuple[pl.Series, np.ndarray]:
    """trec_eval ``-M``: the first ``max_docs`` documents of each query (the run is in trec_eval order)."""
    if not run_counts.size or int(run_counts.max()) <= max_docs:
        return run_doc, run_counts
    starts = np.cumsum(run_counts) - run_counts
    run_q = np.repeat(np.arange(run_counts.size), run_counts)
    keep = (np.arange(run_q.size) - starts[run_q]) < max_docs
    return run_doc.filter(pl.Series(keep)), np.minimum(run_counts, max_docs)


def _coded_judgments(
    qids: pl.Series, run_counts: np.ndarray, qrels_runs: pl.DataFrame, tables: _LongTables, complete: bool
) -> tuple[pl.Series, np.ndarray, Judgments, np.ndarray | None]:
    """Query codes for the judgments: the run's queries first, then (``complete``) judged-only ones.

    Returns the query ids in code order, the number of retrieved rows of each, the judgments of
    the coded queries (judgments of queries the run does not have are left out unless
    ``complete``) and each judgment's row in the qrels (``None`` when judgment ``i`` is row ``i``).
    """
    qrels_firsts = qrels_runs.get_column("value")
    codes = pl.DataFrame({"qid": qids, "code": np.arange(qids.len(), dtype=np.int64)})
    if qrels_firsts.equals(qids):  # the usual case: the same queries in the same order, no lookup
        per_query = qrels_runs.get_column("len").to_numpy().astype(np.int64)  # a query's judgments: one run
        judged = np.ones(qids.len(), dtype=bool)
        judgments = Judgments(None, tables.qrels_doc, tables.grades, judged, per_query=per_query)
        return codes.get_column("qid"), run_counts.astype(np.int64), judgments, None  # judgment i: qrels row i
    judged_qids = qrels_firsts.unique(maintain_order=True)
    extra = judged_qids.filter(~judged_qids.is_in(qids.implode()))
    if complete and extra.len():
        extra = extra.sort()
        codes = pl.concat([codes, pl.DataFrame({"qid": extra, "code": np.arange(extra.len()) + qids.len()})])
    first_codes = (
        pl.DataFrame({"qid": qrels_firsts})
        .join(codes, on="qid", how="left", maintain_order="left")
        .get_column("code")
        .fill_null(-1)
        .to_numpy()
    )
    j_code = np.repeat(first_codes, qrels_runs.get_column("len").to_numpy())  # -1: a query the run does not have
    if extra.len() == 0 or complete:  # every judged query has a code: nothing to drop
        jq, jdoc, jgrade = j_code, tables.qrels_doc, tables.grades.to_numpy()
        jrows = None  # judgment i is qrels row i
    else:  # judgments of queries the run does not have are left out
        known = j_code >= 0
        jq = j_code[known]
        jdoc = tables.qrels_doc.filter(pl.Series(known))
        jgrade = tables.grades.filter(pl.Series(known)).to_numpy()
        jrows = np.flatnonzero(known)
    n_queries = codes.height
    judged = np.zeros(n_queries, dtype=bool)
    judged[first_codes[first_codes >= 0]] = True  # a code per run of equal query ids, not per judgment
    judged[qids.len() :] = True
    counts = np.zeros(n_queries, dtype=np.int64)
    counts[: run_counts.size] = run_counts
    return codes.get_column("qid"), counts, Judgments(q=jq, doc=jdoc, grade=jgrade, judged=judged), jrows


def _measures(
    run_doc: pl.Series,
    counts: np.ndarray,
    judgments: Judgments,
    jrows: np.ndarray | None,
    *,
    ks: list[int],
    measures: list[str],
    level: int,
    column: str,
    trec: TrecOptions | None = None,
    virtual: np.ndarray | None = None,
    refuse_repeats: Callable[[], None] | None = None,
) -> dict[str, np.ndarray]:
    """:func:`rank_measures`; judgments repeated for a (query, document) are deduped first.

    The usual input, one grade per (query, document), is checked on the scoring threads; only
    when that check fails are the repeats dropped (if they agree) or the first conflicting qrels
    row named (``jrows`` maps judgments to qrels rows, ``None``: row i is judgment i), and the
    measures computed again. With ``refuse_repeats`` (the exact search for a document listed
    twice in the run, which raises), the run is checked for repeats on the scoring threads too,
    and that search runs when they may have found one.
    """
    options: dict[str, Any] = {"ks": ks, "measures": measures, "relevance_level": level, "trec": trec}
    options["virtual"] = virtual
    try:
        values = rank_measures(
            run_doc, counts, judgments, check_unique=True, check_repeats=refuse_repeats is not None, **options
        )
    except Exception:
        if refuse_repeats is not None:  # a repeated document is named first, as when it was checked first
            refuse_repeats()
        raise
    if values is not None:
        return values
    if refuse_repeats is not None:
        refuse_repeats()  # raises on a repeated document; else two keys met by chance, or repeated judgments
    q, doc, grade = dedupe_judgments(judgments.q, judgments.doc, judgments.grade, column=column, row_of=jrows)
    unique = Judgments(q=q, doc=doc, grade=grade, judged=judgments.judged)
    return cast("dict[str, np.ndarray]", rank_measures(run_doc, counts, unique, **options))


def _per_query(query_ids: pl.Series, values: dict[str, np.ndarray], names: list[str]) -> pl.DataFrame:
    """One row per query: ``query_id``, the counts, then the measures (NaN as null), by query id."""
    columns = [query_ids.rename("query_id")]
    columns += [pl.Series(name, values[name], dtype=pl.Int64) for name in COUNT_MEASURES]
    columns += [pl.Series(name, values[name], dtype=pl.Float64, nan_to_null=True) for name in names]
    out = pl.DataFrame(columns)
    return out if out.get_column("query_id").is_sorted() else out.sort("query_id")


def _joined_runs(first: Future[pl.DataFrame], second: pl.DataFrame) -> pl.DataFrame:
    """Run lengths (``rle`` unnested) of two consecutive slices, as those of the whole."""
    head = first.result()
    if head.height and second.height and head.item(-1, "value") == second.item(0, "value"):
        lengths = head.get_column("len").to_numpy().copy()
        lengths[-1] += second.item(0, "len")
        head = head.with_columns(pl.Series("len", lengths, dtype=head.schema["len"]))
        second = second.slice(1)
    return pl.concat([head, second])


def _refuse_repeats_exactly(tables: _LongTables, column: str) -> None:
    """:func:`_refuse_repeated_pairs` of the run as given (the rare path, after a possible repeat)."""
    _refuse_repeated_pairs(tables.run_qid, tables.run_doc, tables.run_qid.rle().struct.unnest(), column)


def _refuse_repeated_pairs(qid: pl.Series, doc: pl.Series, runs: pl.DataFrame, column: str) -> None:
    """A document listed twice for one query is a SchemaError naming the row (as read_trec_run and trec_eval).

    ``runs`` is ``qid.rle()`` unnested. A run grouped by query (the usual case) is checked a query
    at a time (:func:`maybe_repeated`), others by one hash per row; the exact search runs only when
    two hashes agree.
    """
    pairs = pl.DataFrame({"q": qid, "d": doc})
    firsts = runs.get_column("value")
    if firsts.n_unique() == firsts.len():
        if not maybe_repeated(runs.get_column("len").to_numpy(), doc):
            return
    elif pairs.hash_rows().n_unique() == pairs.height:
        return
    row = first_true_row(~pairs.select(pl.struct("q", "d").is_first_distinct()).to_series())
    if row is None:  # two pairs with one hash, no repeat
        return
    raise SchemaError(
        "a document listed twice for one query (read_trec_run and trec_eval refuse such runs)",
        column=column,
        row=row,
        expected="each (query, document) once",
        found=f"{pairs.item(row, 'd')!r} again for query {pairs.item(row, 'q')!r}",
    )


def _checked_scores(scores: pl.Series, column: str) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    score = check_scores(scores, column)
    return score, score_steps(score)


def _group_run(
    qid: pl.Series,
    doc: pl.Series,
    score: pl.Series,
    runs: pl.DataFrame,
    steps: tuple[np.ndarray, np.ndarray],
) -> tuple[pl.Series, pl.Series, np.ndarray]:
    """Rows grouped by query in trec_eval order: the query ids, the doc ids, the rows of each query.

    A run already grouped by query and ranked by score (then doc id, descending) is used as
    it is: only run lengths are computed, no sort. ``runs`` is ``qid.rle()`` unnested and
    ``steps`` is :func:`score_steps` of ``score``, both computed by the caller on threads.
    """
    if qid.len() == 0:
        return qid, doc, np.zeros(0, dtype=np.int64)
    firsts, lengths = runs.get_column("value"), runs.get_column("len").to_numpy().astype(np.int64)
    # grouped: each query id starts one run (ids in sorted order, as runs usually are, need no hash count)
    grouped = firsts.is_sorted() or firsts.n_unique() == firsts.len()
    if not grouped or not in_trec_order(lengths, score, doc, steps):
        ordered = pl.DataFrame({"q": qid, "s": score, "d": doc}).sort(
            ["q", "s", "d"], descending=[False, True, True], maintain_order=True
        )
        doc = ordered.get_column("d")
        runs = ordered.get_column("q").rle().struct.unnest()
        firsts, lengths = runs.get_column("value"), runs.get_column("len").to_numpy().astype(np.int64)
    return firsts, doc, lengths


@public
def run_summary(per_query: Any, /) -> pl.DataFrame:
    """trec_eval's ``all`` line: one row of means over the evaluated queries.

    ``num_q`` counts queries with judgments; ``num_ret``, ``num_rel`` and
    ``num_rel_ret`` are summed over them; every ranking-measure column (``ndcg_at_10``,
    ``bm25_mrr``, ...: the registry's retrieval metrics, any prefix) is the arithmetic mean
    over them. A query whose measures are all null (no judgments) is left out, as trec_eval
    leaves out queries that have no judgments; a query with a value in any measure is
    counted in ``num_q`` and in every mean, as trec_eval counts every evaluated query, and a
    null among its values counts as NaN (trec_eval's ``-nan``): that column's mean is NaN.
    ``average_precision`` and ``bpref`` are also summarised as
    trec_eval's geometric means, ``gm_map`` and ``gm_bpref`` (with their prefix), right
    after them: exp(mean(log(max(value, 0.00001)))). Other columns (ids, metadata, other
    families' scores) are not summarised.

    Parameters
    ----------
    per_query : frame
        One row per query, as :func:`evaluate_run` returns it (polars, pyarrow or pandas):
        Float64 measure columns and the optional count columns.

    Returns
    -------
    polars.DataFrame
        One row: ``num_q``, the count columns present, then the mean of each ranking-measure
        column, in the input's order.

    Examples
    --------
    >>> import polars as pl
    >>> pq = pl.DataFrame({"query_id": ["a", "b", "c"], "num_ret": [1, 1, 2], "mrr": [1.0, 0.0, None]})
    >>> run_summary(pq).row(0, named=True)  # query c has no judgments
    {'num_q': 2, 'num_ret': 2, 'mrr': 0.5}
    >>> pq = pl.DataFrame({"query_id": ["a", "b"], "mrr": [1.0, 0.0], "ndcg": [1.0, None]})
    >>> run_summary(pq).row(0, named=True)  # b counts in num_q and mrr; its null makes ndcg's mean NaN
    {'num_q': 2, 'mrr': 0.5, 'ndcg': nan}
    >>> ap = pl.DataFrame({"query_id": ["a", "b"], "average_precision": [0.5, 0.125]})
    >>> run_summary(ap).row(0, named=True)
    {'num_q': 2, 'average_precision': 0.3125, 'gm_map': 0.25}
    """
    df = to_polars(per_query)
    measures = [
        c
        for c in registry.score_columns(df.schema)
        if (m := registry.metric_for_column(c)) is not None and m.family == "retrieval"
    ]
    evaluated = df.filter(pl.any_horizontal(pl.col(measures).is_not_null())) if measures else df
    exprs = [pl.len().alias("num_q")]
    exprs += [pl.col(c).sum() for c in COUNT_MEASURES if c in df.columns]
    for column in measures:
        exprs.append(pl.col(column).cast(pl.Float64).fill_null(float("nan")).mean().alias(column))
        parsed = registry.parse_column(column)
        geometric = parsed.metric.geometric_mean if parsed is not None and parsed.metric is not None else None
        if geometric is not None:
            floored = pl.col(column).cast(pl.Float64).fill_null(float("nan")).clip(lower_bound=MIN_GEO_MEAN).log()
            exprs.append(floored.mean().exp().alias(parsed.prefix + geometric))
    return evaluated.select(exprs)


@public
def retrieval_metrics(
    retrieved: Sequence[str] | Sequence[int],
    relevant: Sequence[str] | Sequence[int] | Mapping[Any, int],
    k: int | Iterable[int] = 5,
    *,
    scores: Sequence[float] | None = None,
    relevance_level: int = 1,
) -> dict[str, float]:
    """Ranking metrics of one query, as a plain dict (the seeds' single-sample call).

    Parameters
    ----------
    retrieved : list of str or list of int
        Retrieved ids in rank order. A string is refused (it is not a list of ids).
    relevant : list of ids, or dict id -> grade
        Relevant ids, or graded judgments. A grade is an int, or a float that is a whole
        number (``2.0``); ``1.5`` is refused, never truncated. The ids of ``retrieved`` and
        ``relevant`` are of one kind: an int id never equals a str id.
    k : int or list of int
        Cutoffs for the ``*_at_k`` metrics.
    scores : list of float, optional
        One score per retrieved id: the ranking is then by score descending, ties by id
        descending (trec_eval).
    relevance_level : int
        Minimum grade of a relevant document (trec_eval ``-l``), >= 0.

    Returns
    -------
    dict
        Metric name -> value (see :func:`score_retrieval`).

    Examples
    --------
    >>> m = retrieval_metrics(["a", "b", "c"], ["b", "z"], k=2)
    >>> m["precision_at_2"], m["recall_at_2"], m["mrr"]
    (0.5, 0.5, 0.5)
    """
    ks = check_ks(k)
    level = check_level(relevance_level)
    ids, ids_dtype = _id_list(retrieved, "retrieved")
    graded = isinstance(relevant, Mapping)
    judged, judged_dtype = _id_list(list(relevant) if graded else relevant, "relevant")
    check_same_id_kind(("retrieved", ids_dtype), ("relevant", judged_dtype), column="relevant")
    dtype = ids_dtype if ids_dtype != pl.Null else judged_dtype if judged_dtype != pl.Null else pl.String
    data: dict[str, pl.Series] = {"retrieved_ids": pl.Series([ids], dtype=pl.List(dtype))}
    if graded:
        grades = [_whole_grade(value, key) for key, value in relevant.items()]  # type: ignore[union-attr]
        rows = [{"id": key, "grade": grade} for key, grade in zip(judged, grades)]
        data["relevance"] = pl.Series([rows], dtype=pl.List(pl.Struct({"id": dtype, "grade": pl.Int64})))
    else:
        data["relevant_ids"] = pl.Series([judged], dtype=pl.List(dtype))
    if scores is not None:
        data["retrieved_scores"] = pl.Series([_score_list(scores, len(ids))], dtype=pl.List(pl.Float64))
    options = {**registry.option_defaults(RetrievalOptions), "k": ks, "relevance_level": level, "contexts": "contexts"}
    requests = chosen_requests(None, ks)
    scored = family_score(pl.DataFrame(data), requests, family_check(options))
    return {name: scored[name][0] for name in scored.columns}


def _id_list(value: Any, name: str) -> tuple[list[Any], pl.DataType]:
    """The ids of a plain list and their dtype (String, Int64, or Null when empty)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise validate.fail(name, "a list of ids (str or int), not a single string", value)
    ids = list(value)
    is_str = [isinstance(v, str) for v in ids]
    is_int = [isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in ids]
    if all(is_str):
        return ids, (pl.String if ids else pl.Null)
    if all(is_int):
        return [int(v) for v in ids], pl.Int64
    kind = is_str if any(is_str) else is_int
    at = next((i for i, ok in enumerate(kind) if not ok), 0)
    raise validate.fail(name, f"a list of ids of one kind (all str or all int); position {at} is", ids[at])


def _whole_grade(value: Any, key: Any) -> int:
    """A grade of the ``relevant`` dict: an int, or a float that is a whole number."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and number.is_integer() and abs(number) < 2.0**63:
            return int(number)
    raise SchemaError(
        "grade is not a whole number",
        column="relevant",
        expected="an integer grade (a float only when a whole number, never truncated)",
        found=f"{value!r} for id {key!r}",
    )


def _score_list(scores: Any, n: int) -> list[float]:
    """The retrieved ids' scores: one real number each."""
    if isinstance(scores, (str, bytes)) or not isinstance(scores, Iterable):
        raise validate.fail("scores", "a list of numbers, one per retrieved id", scores)
    values = list(scores)
    if len(values) != n or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
        raise validate.fail("scores", f"a list of {n} numbers, one per retrieved id", scores)
    return [float(v) for v in values]
