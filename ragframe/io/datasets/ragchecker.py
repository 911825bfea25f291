"""RAGChecker's input and output JSON: ``{"results": [{query_id, query, gt_answer, response,
retrieved_context: [{doc_id, text}], ...}]}``; an output file adds, per result, the extracted claims,
the entailment verdicts and RAGChecker's own ``metrics``.

| RAGChecker field | ragframe column |
| --- | --- |
| ``query_id`` | ``id`` (text) |
| ``query`` | ``question`` |
| ``response`` | ``answer`` |
| ``gt_answer`` | ``ground_truth`` |
| ``retrieved_context[i].text`` | ``contexts`` |
| ``retrieved_context[i].doc_id`` | ``retrieved_ids`` |
| ``response_claims``, ``gt_answer_claims`` | same names (list of [subject, relation, object]) |
| ``answer2response``, ``response2answer`` | same names (list[str] of verdicts) |
| ``retrieved2response``, ``retrieved2answer`` | same names (list[list[str]]: [claim][passage]) |
| ``metrics`` (per result) | ``metrics`` (a struct of RAGChecker's 11 values in [0, 1]) |

The verdict columns keep RAGChecker's names because ragframe's RAGChecker metrics read them under
those names. The file-level ``metrics`` of an output file (the means x 100) are not read: they are
the means of the per-result ``metrics``; :func:`write_ragchecker` does not write them either.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.exceptions import InputFileError, SchemaError
from ragframe.io.datasets.common import check_records, frame_rows, load_json, records_frame, write_json

__all__ = ["read_ragchecker", "write_ragchecker", "RAGCHECKER_FIELDS"]

#: RAGChecker field (after retrieved_context is split): (kind, ragframe column).
RAGCHECKER_FIELDS: dict[str, tuple[str, str]] = {
    "query_id": ("id", "id"),
    "query": ("str", "question"),
    "response": ("str", "answer"),
    "gt_answer": ("str", "ground_truth"),
    "retrieved_ids": ("list[id]", "retrieved_ids"),
    "contexts": ("list[str]", "contexts"),
    "response_claims": ("list[list[str]]", "response_claims"),
    "gt_answer_claims": ("list[list[str]]", "gt_answer_claims"),
    "answer2response": ("list[str]", "answer2response"),
    "response2answer": ("list[str]", "response2answer"),
    "retrieved2response": ("list[list[str]]", "retrieved2response"),
    "retrieved2answer": ("list[list[str]]", "retrieved2answer"),
}
_CLAIM_FIELDS = (
    "response_claims",
    "gt_answer_claims",
    "answer2response",
    "response2answer",
    "retrieved2response",
    "retrieved2answer",
    "metrics",
)


def _split(place: str, path: Any, row: int, record: dict[str, Any]) -> dict[str, Any]:
    out = dict(record)
    docs = out.pop("retrieved_context", None)
    if docs is None:
        return out
    if not isinstance(docs, list) or not all(isinstance(d, dict) and isinstance(d.get("text"), str) for d in docs):
        raise SchemaError(
            f"{place} of {str(path)!r}: retrieved_context is not a list of {{doc_id, text}}",
            column="retrieved_context",
            row=row,
            expected="a list of {doc_id, text}",
            found=repr(docs)[:80],
        )
    out["contexts"] = [d["text"] for d in docs]
    ids = [d.get("doc_id") for d in docs]
    if any(i is not None for i in ids):  # doc_id is optional in RAGChecker: no ids, no retrieved_ids
        out["retrieved_ids"] = ids
    return out


def read_ragchecker(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a RAGChecker input or output JSON file into the column contract.

    Parameters
    ----------
    path : str or os.PathLike
        ``{"results": [...]}`` (a bare list of results is read too).

    Returns
    -------
    polars.DataFrame
        One row per result, columns as the module's table says.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "in.json"
    >>> r = {"query_id": "0", "query": "q", "gt_answer": "g", "response": "a",
    ...      "retrieved_context": [{"doc_id": "d1", "text": "t1"}]}
    >>> _ = p.write_text(json.dumps({"results": [r]}))
    >>> read_ragchecker(p).select("id", "question", "retrieved_ids", "contexts").row(0)
    ('0', 'q', ['d1'], ['t1'])
    """
    value = load_json(path)
    results = value.get("results") if isinstance(value, dict) else value
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise InputFileError(f'{str(path)!r} must hold {{"results": [...]}}, a list of result objects')
    records = [(f"result {i}", _split(f"result {i}", path, i, r)) for i, r in enumerate(results)]
    kinds = {f: k for f, (k, _) in RAGCHECKER_FIELDS.items()}
    check_records(records, kinds, path)
    return records_frame(records, kinds, {f: c for f, (_, c) in RAGCHECKER_FIELDS.items()})


def write_ragchecker(frame: Any, path: str | os.PathLike[str], **columns: str) -> Path:
    """Write a frame as RAGChecker's input JSON (with its claim and verdict columns: its output JSON).

    Parameters
    ----------
    frame : polars/pandas/pyarrow frame
        ``question``, ``answer``, ``ground_truth``, ``contexts`` (and ``retrieved_ids``, same
        lengths, as ``doc_id``; without it ``doc_id`` is null); ``id`` (``query_id``) when present,
        else the row number. The claim, verdict and ``metrics`` columns are written when present.
    path : str or os.PathLike
        The JSON file.
    **columns : str
        The frame's name of a role, e.g. ``contexts="passages"``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import polars as pl, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "in.json"
    >>> df = pl.DataFrame({"question": ["q"], "answer": ["a"], "ground_truth": ["g"], "contexts": [["t"]]})
    >>> _ = write_ragchecker(df, p)
    >>> read_ragchecker(p).select("id", "question", "contexts").row(0)
    ('0', 'q', ['t'])
    """
    df = frame_rows(frame)
    roles = ("id", "question", "answer", "ground_truth", "contexts", "retrieved_ids", *_CLAIM_FIELDS)
    n = {role: columns.get(role, role) for role in roles}
    for role in ("question", "answer", "ground_truth", "contexts"):
        if n[role] not in df.columns:
            raise SchemaError("a column RAGChecker needs is missing", column=n[role], available=df.columns)
    ids = pl.col(n["id"]).cast(pl.String) if n["id"] in df.columns else pl.int_range(pl.len()).cast(pl.String)
    has_ids = n["retrieved_ids"] in df.columns
    if has_ids:
        mismatch = df[n["contexts"]].list.len().ne(df[n["retrieved_ids"]].list.len()).fill_null(False)
        if mismatch.any():
            raise SchemaError(
                "contexts and retrieved_ids differ in length",
                column=n["retrieved_ids"],
                row=int(mismatch.arg_true()[0]),
            )
    extra = [pl.col(n[f]).alias(f) for f in _CLAIM_FIELDS if n[f] in df.columns]
    out = df.select(
        ids.alias("query_id"),
        pl.col(n["question"]).alias("query"),
        pl.col(n["ground_truth"]).alias("gt_answer"),
        pl.col(n["answer"]).alias("response"),
        pl.col(n["contexts"]).alias("_texts"),
        (pl.col(n["retrieved_ids"]).cast(pl.List(pl.String)) if has_ids else pl.lit(None)).alias("_ids"),
        *extra,
    )
    results = []
    for r in out.to_dicts():
        texts, doc_ids = r.pop("_texts") or [], r.pop("_ids")
        doc_ids = doc_ids if doc_ids is not None else [None] * len(texts)
        result = {k: r[k] for k in ("query_id", "query", "gt_answer", "response")}
        result["retrieved_context"] = [{"doc_id": d, "text": t} for d, t in zip(doc_ids, texts, strict=True)]
        result.update({f: r[f] for f in _CLAIM_FIELDS if f in r})
        results.append(result)
    return write_json({"results": results}, path)
