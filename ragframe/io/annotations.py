"""Scores back onto the traces they came from: Phoenix span and document annotations, LangSmith
feedback (:func:`to_annotations`), and sending them to a server (:func:`send_annotations`).

A scored frame from traces carries the span ids its rows came from (``root_span_id``,
``retriever_span_id``, ``llm_span_id``, as ``rf.read_traces`` writes them). Each score column
becomes one annotation per row, on the span the metric is about:

- a metric that reads the retrieval only (its registry ``inputs`` have no ``answer``:
  ``context_relevance``, ``context_precision``, ``context_recall``, ``ndcg_at_10``, ...) goes on
  the retriever span;
- every other metric (``faithfulness``, ``answer_relevance``, ``composite_score``, ...) on the
  root span, the one a trace list shows.

The name is the score column, the score its value, the label ``"pass"``/``"fail"`` from its
``<column>_passed`` flag, the explanation its ``<column>_reason`` (a judge's reason), the
annotator kind ``"LLM"`` for judge metrics and ``"CODE"`` for the others. Per-passage scores
become document annotations of the retriever span, one per position of ``retrieved_ids``
(Phoenix's ``document_position``, from 0): the graded qrels of ``relevance``/``relevant_ids``
(as ``"relevance"``) and any list column named in ``documents=``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, RagframeError, SchemaError
from ragframe.extras import require
from ragframe.metrics.registry import metric_for_column, passed_column, score_columns
from ragframe.public import public
from ragframe.schema import to_polars
from ragframe.secrets import from_environment, scrub

__all__ = ["to_annotations", "send_annotations", "write_annotations", "read_annotations", "ANNOTATION_TARGETS"]

#: The targets and the columns of their records.
ANNOTATION_TARGETS: dict[str, tuple[str, ...]] = {
    "phoenix": ("span_id", "name", "annotator_kind", "label", "score", "explanation", "document_position"),
    "langsmith": ("run_id", "key", "score", "value", "comment"),
}
_SPAN_ROLES = ("root_span_id", "retriever_span_id", "llm_span_id")


def _default_span(column: str) -> str:
    metric = metric_for_column(column)
    if metric is not None and "answer" not in metric.inputs:
        return "retriever_span_id"
    return "root_span_id"


def _annotator(column: str, columns: Sequence[str]) -> str:
    """LLM for a judge's score (judge family, or the judge's ``_reason``/``_status`` beside it), else CODE."""
    metric = metric_for_column(column)
    judged = f"{column}_reason" in columns or f"{column}_status" in columns
    return "LLM" if judged or (metric is not None and metric.family == "judge") else "CODE"


def _span_ids(df: pl.DataFrame, column: str, rows: pl.Series, metric: str) -> None:
    """A row that gets an annotation must have its span id."""
    if column not in df.columns:
        raise SchemaError(
            f"the span id column for {metric!r} is missing (pass {metric!r}: COLUMN in spans=, or rename it)",
            column=column,
            available=df.columns,
        )
    missing = (rows & df[column].is_null()).arg_true()
    if missing.len():
        raise SchemaError(
            f"a scored row has no span id for {metric!r}",
            column=column,
            row=int(missing[0]),
            found="null",
        )


def _document_frame(df: pl.DataFrame, span: str, documents: Sequence[str], retrieved_ids: str) -> list[pl.DataFrame]:
    """Document annotations: one row per (row, position) of each per-passage column."""
    out: list[pl.DataFrame] = []
    if retrieved_ids in df.columns and ("relevance" in df.columns or "relevant_ids" in df.columns):
        ids = pl.col(retrieved_ids).cast(pl.List(pl.String))
        if "relevance" in df.columns:
            grades = pl.col("relevance")
            exploded = (
                df.select(pl.int_range(pl.len()).alias("_row"), ids.alias("_id"))
                .explode("_id")
                .with_columns(pl.int_range(pl.len()).over("_row").alias("_pos"))
            )
            judged = (
                df.select(pl.int_range(pl.len()).alias("_row"), grades.alias("_g"))
                .explode("_g")
                .unnest("_g")
                .select("_row", pl.col("id").cast(pl.String).alias("_id"), pl.col("grade").cast(pl.Float64))
                .unique(["_row", "_id"], keep="first")
            )
            per = exploded.join(judged, on=["_row", "_id"], how="left").with_columns(pl.col("grade").fill_null(0.0))
        else:
            exploded = (
                df.select(
                    pl.int_range(pl.len()).alias("_row"),
                    ids.alias("_id"),
                    pl.col("relevant_ids").cast(pl.List(pl.String)).alias("_rel"),
                )
                .explode("_id")
                .with_columns(pl.int_range(pl.len()).over("_row").alias("_pos"))
            )
            per = exploded.with_columns(pl.col("_rel").list.contains(pl.col("_id")).cast(pl.Float64).alias("grade"))
        per = per.filter(pl.col("_id").is_not_null())
        out.append(
            per.select(
                "_row",
                "_pos",
                pl.lit("relevance").alias("name"),
                pl.col("grade").alias("score"),
                pl.lit("HUMAN").alias("annotator_kind"),
            )
        )
    for column in documents:
        if column not in df.columns:
            raise SchemaError(
                "a {documents} column is missing",
                column=column,
                available=df.columns,
                mentions={"documents": ""},
            )
        dtype = df.schema[column]
        if not (isinstance(dtype, pl.List) and (dtype.inner.is_numeric() or dtype.inner == pl.Null)):
            raise SchemaError(
                "a {documents} column must hold one number per retrieved passage",
                column=column,
                expected="list of numbers",
                found=str(dtype),
                mentions={"documents": ""},
            )
        per = (
            df.select(pl.int_range(pl.len()).alias("_row"), pl.col(column).alias("score"))
            .explode("score")
            .with_columns(pl.int_range(pl.len()).over("_row").alias("_pos"))
            .filter(pl.col("score").is_not_null())
        )
        out.append(
            per.select(
                "_row",
                "_pos",
                pl.lit(column).alias("name"),
                pl.col("score").cast(pl.Float64),
                pl.lit("CODE").alias("annotator_kind"),
            )
        )
    if out:
        used = np.zeros(df.height, dtype=bool)
        used[pl.concat(out)["_row"].to_numpy()] = True
        _span_ids(df, span, pl.Series(used), "document annotations")
    return out


@public
def to_annotations(
    scored: Any,
    /,
    *,
    target: str = "phoenix",
    metrics: Sequence[str] | None = None,
    documents: Sequence[str] = (),
    spans: Mapping[str, str] | None = None,
    root_span_id: str = "root_span_id",
    retriever_span_id: str = "retriever_span_id",
    llm_span_id: str = "llm_span_id",
    retrieved_ids: str = "retrieved_ids",
    annotator_kinds: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """The records Phoenix or LangSmith ingest for the scores of a scored frame.

    Parameters
    ----------
    scored : polars/pandas/pyarrow frame
        Scored rows that carry span ids (``rf.read_traces`` output, scored).
    target : {"phoenix", "langsmith"}, default "phoenix"
        ``"phoenix"``: span annotations (``span_id, name, annotator_kind, label, score,
        explanation``, ``document_position`` null) followed by document annotations (the same
        columns, ``document_position`` set). ``"langsmith"``: feedback (``run_id`` = the span id of
        the run, ``key``, ``score``, ``value`` = the pass/fail label, ``comment`` = the reason);
        LangSmith has no per-document feedback, so ``documents`` is not used.
    metrics : list of str, optional
        The score columns to send (default: every ragframe score column of ``scored``).
    documents : list of str, default ()
        List columns holding one score per retrieved passage (same order as ``retrieved_ids``),
        sent as document annotations named after the column. The qrels of ``relevance`` /
        ``relevant_ids``, when present with ``retrieved_ids``, are always sent (``"relevance"``,
        the grade of the passage, 0 when unjudged).
    spans : mapping of str to str, optional
        A score column's span-id column, overriding the default (retriever span for metrics
        that read no answer, root span for the others), e.g. ``{"faithfulness": "llm_span_id"}``.
    root_span_id, retriever_span_id, llm_span_id, retrieved_ids : str
        The frame's names of those columns.
    annotator_kinds : mapping of str to str, optional
        An annotation name's annotator kind (``"LLM"``, ``"CODE"`` or ``"HUMAN"``), overriding the
        default (``"LLM"`` for a judge's score, ``"HUMAN"`` for the qrels' ``relevance``, ``"CODE"``
        otherwise). Phoenix 20 computes its retrieval metrics (nDCG, precision, hit) only from
        document annotations of kind ``"LLM"``: pass ``{"relevance": "LLM"}`` to have it do so from
        the qrels.

    Returns
    -------
    polars.DataFrame
        One record per (row, score column), then one per (row, passage) for document scores;
        columns ``ANNOTATION_TARGETS[target]``.

    Raises
    ------
    SchemaError
        A span-id column is missing, or a row with a score has a null span id.
    InvalidParameterError
        An unknown ``target``, or a ``metrics`` entry that is not a column.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> scored = pl.DataFrame({
    ...     "root_span_id": ["r1"], "retriever_span_id": ["s1"],
    ...     "faithfulness": [0.5], "faithfulness_passed": [False], "faithfulness_reason": ["one claim unsupported"],
    ...     "retrieved_ids": [["d1", "d2"]], "relevant_ids": [["d2"]], "mrr": [0.5]})
    >>> for record in rf.to_annotations(scored).rows():
    ...     print(record)
    ('r1', 'faithfulness', 'LLM', 'fail', 0.5, 'one claim unsupported', None)
    ('s1', 'mrr', 'CODE', None, 0.5, None, None)
    ('s1', 'relevance', 'HUMAN', None, 0.0, None, 0)
    ('s1', 'relevance', 'HUMAN', None, 1.0, None, 1)
    >>> rf.to_annotations(scored, target="langsmith").rows()[0]
    ('r1', 'faithfulness', 0.5, 'fail', 'one claim unsupported')
    """
    validate.choice(target, "target", tuple(ANNOTATION_TARGETS))
    documents = validate.column_list(documents, "documents", allow_empty=True)
    df = to_polars(scored.collect() if isinstance(scored, pl.LazyFrame) else scored)
    names = {"root_span_id": root_span_id, "retriever_span_id": retriever_span_id, "llm_span_id": llm_span_id}
    if metrics is None:
        columns = score_columns(df.schema)
    else:
        metrics = validate.column_list(metrics, "metrics", allow_empty=True)
        missing = [m for m in metrics if m not in df.columns]
        if missing:
            raise InvalidParameterError(f"metrics names a column the frame lacks: {missing[0]!r}")
        columns = list(metrics)
    spans = dict(spans or {})
    parts: list[pl.DataFrame] = []
    for column in columns:
        role = spans.get(column, _default_span(column))
        span = names.get(role, role)
        _span_ids(df, span, pl.Series([True] * df.height, dtype=pl.Boolean), column)
        passed, reason = passed_column(column), f"{column}_reason"
        label = (
            pl.when(pl.col(passed)).then(pl.lit("pass")).when(pl.col(passed).not_()).then(pl.lit("fail"))
            if passed in df.columns and df.schema[passed] == pl.Boolean
            else pl.lit(None, dtype=pl.String)
        )
        parts.append(
            df.select(
                pl.col(span).cast(pl.String).alias("span_id"),
                pl.lit(column).alias("name"),
                pl.lit(_annotator(column, df.columns)).alias("annotator_kind"),
                label.cast(pl.String).alias("label"),
                pl.col(column).cast(pl.Float64).fill_nan(None).alias("score"),  # NaN is not JSON
                (pl.col(reason).cast(pl.String) if reason in df.columns else pl.lit(None, dtype=pl.String)).alias(
                    "explanation"
                ),
                pl.lit(None, dtype=pl.Int64).alias("document_position"),
            )
        )
    if target == "phoenix":
        span = names["retriever_span_id"]
        for per in _document_frame(df, span, list(documents), retrieved_ids):
            ids = df.select(pl.col(span).cast(pl.String).alias("span_id")).with_row_index("_row")
            parts.append(
                per.with_columns(pl.col("_row").cast(pl.UInt32))
                .join(ids, on="_row", how="left")
                .sort("_row", "_pos")
                .select(
                    "span_id",
                    "name",
                    "annotator_kind",
                    pl.lit(None, dtype=pl.String).alias("label"),
                    "score",
                    pl.lit(None, dtype=pl.String).alias("explanation"),
                    pl.col("_pos").cast(pl.Int64).alias("document_position"),
                )
            )
    schema = {
        c: (pl.Int64 if c == "document_position" else pl.Float64 if c == "score" else pl.String)
        for c in ANNOTATION_TARGETS["phoenix"]
    }
    out = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
    if annotator_kinds:
        kinds = dict(annotator_kinds)
        for name, kind in kinds.items():
            validate.choice(kind, f"annotator_kinds[{name!r}]", ("LLM", "CODE", "HUMAN"))
        out = out.with_columns(
            pl.col("name")
            .replace_strict(kinds, default=pl.col("annotator_kind"), return_dtype=pl.String)
            .alias("annotator_kind")
        )
    if target == "langsmith":
        return out.select(
            pl.col("span_id").alias("run_id"),
            pl.col("name").alias("key"),
            "score",
            pl.col("label").alias("value"),
            pl.col("explanation").alias("comment"),
        )
    return out


def write_annotations(annotations: pl.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Write annotation records as JSONL (one record per line; null fields kept as null).

    Examples
    --------
    >>> import pathlib, tempfile, polars as pl
    >>> p = write_annotations(pl.DataFrame({"run_id": ["r"], "key": ["mrr"], "score": [1.0]}),
    ...                       pathlib.Path(tempfile.mkdtemp()) / "a.jsonl")
    >>> p.read_text()
    '{"run_id":"r","key":"mrr","score":1.0}\\n'
    """
    p = Path(path)
    annotations.write_ndjson(p)
    return p


def read_annotations(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read annotation records written by :func:`write_annotations`."""
    return pl.read_ndjson(path)


def _phoenix_payloads(records: pl.DataFrame) -> Iterable[tuple[str, dict[str, Any]]]:
    """Phoenix REST bodies: span annotations, then document annotations (``{"data": [...]}``)."""
    spans = records.filter(pl.col("document_position").is_null())
    docs = records.filter(pl.col("document_position").is_not_null())
    for route, part in (("/v1/span_annotations?sync=true", spans), ("/v1/document_annotations?sync=true", docs)):
        if part.height == 0:
            continue
        body = []
        for r in part.to_dicts():
            item = {
                "span_id": r["span_id"],
                "name": r["name"],
                "annotator_kind": r["annotator_kind"],
                "result": {"label": r["label"], "score": r["score"], "explanation": r["explanation"]},
                "metadata": {"source": "ragframe"},
            }
            if r["document_position"] is not None:
                item["document_position"] = r["document_position"]
            body.append(item)
        for start in range(0, len(body), 1000):
            yield route, {"data": body[start : start + 1000]}


def send_annotations(
    annotations: pl.DataFrame,
    endpoint: str,
    *,
    target: str = "phoenix",
    api_key_env: str | None = None,
    timeout: float = 30.0,
) -> int:
    """POST annotation records to a Phoenix or LangSmith server; the number of records sent.

    Phoenix: ``POST {endpoint}/v1/span_annotations?sync=true`` and ``/v1/document_annotations?sync=true`` with
    ``{"data": [...]}`` (1,000 records a request), key as ``Authorization: Bearer``. LangSmith:
    ``POST {endpoint}/feedback`` one record a request, key as ``x-api-key``. The key is read from
    the environment variable ``api_key_env`` (none sent when not given) and never shown.

    Parameters
    ----------
    annotations : polars.DataFrame
        :func:`to_annotations` of the same ``target``.
    endpoint : str
        The server's base URL (``http://127.0.0.1:6006`` for a local Phoenix).
    target : {"phoenix", "langsmith"}
    api_key_env : str, optional
        The name of the environment variable holding the key.
    timeout : float, default 30
        Seconds per request.

    Returns
    -------
    int

    Raises
    ------
    RagframeError
        The server answered an error status or could not be reached (the message names the URL
        and status, never the key).
    """
    validate.choice(target, "target", tuple(ANNOTATION_TARGETS))
    httpx = require("judge", "httpx")
    key = from_environment(api_key_env) if api_key_env is not None else None
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["authorization" if target == "phoenix" else "x-api-key"] = (
            f"Bearer {key.reveal()}" if target == "phoenix" else key.reveal()
        )
    base = endpoint.rstrip("/")
    if target == "phoenix":
        payloads = list(_phoenix_payloads(annotations))
    else:
        payloads = [("/feedback", {k: v for k, v in r.items()}) for r in annotations.to_dicts()]
    sent = 0
    with httpx.Client(timeout=timeout, headers=headers) as client:
        for path, body in payloads:
            url = base + path
            try:
                reply = client.post(url, content=json.dumps(body))
            except httpx.HTTPError as exc:
                raise RagframeError(scrub(f"cannot reach {url}: {exc}")) from None
            if reply.status_code >= 400:
                raise RagframeError(scrub(f"{url} answered {reply.status_code}: {reply.text[:200]}"))
            sent += len(body["data"]) if target == "phoenix" else 1
    return sent
