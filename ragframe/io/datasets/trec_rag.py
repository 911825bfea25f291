"""TREC RAG 2024/2025 answer files (the AG and RAG tasks' submissions): JSONL, one topic per line,
the answer as sentences each citing references by their index.

| TREC RAG field | ragframe column |
| --- | --- |
| ``run_id`` | ``run_id`` |
| ``topic_id`` | ``topic_id`` (text) |
| ``topic`` (2025: ``narrative``) | ``question`` |
| ``references`` | ``retrieved_ids`` (rank order) |
| ``answer[i].text`` | ``answer_sentences`` (list[str]) |
| ``answer[i].citations`` | ``sentence_citations`` (list[list[int]]: indices into ``retrieved_ids``) |
| the sentences joined by a space | ``answer`` |
| ``response_length`` | ``response_length`` |

A 2025 file's ``metadata`` object (``team_id, run_id, topic_id, narrative_id, narrative, type``)
is read as top-level fields. A citation outside ``0..len(references)-1`` is a
:class:`~ragframe.exceptions.SchemaError` naming the line, the sentence and the citation.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.exceptions import SchemaError
from ragframe.io.datasets.common import check_records, frame_rows, load_jsonl, records_frame, write_jsonl

__all__ = ["read_trec_rag", "write_trec_rag", "TREC_RAG_FIELDS"]

#: TREC RAG field (after the answer is split): (kind, ragframe column).
TREC_RAG_FIELDS: dict[str, tuple[str, str]] = {
    "run_id": ("str", "run_id"),
    "topic_id": ("id", "topic_id"),
    "topic": ("str", "question"),
    "references": ("list[str]", "retrieved_ids"),
    "answer_sentences": ("list[str]", "answer_sentences"),
    "sentence_citations": ("list[list[int]]", "sentence_citations"),
    "response_length": ("int", "response_length"),
}


def _split(place: str, path: Any, row: int, record: dict[str, Any]) -> dict[str, Any]:
    """The record with ``metadata`` lifted and ``answer`` split into sentences and citations."""
    out = dict(record)
    meta = out.pop("metadata", None)
    if isinstance(meta, dict):
        for key, value in meta.items():
            out.setdefault("topic" if key == "narrative" else key, value)
    elif meta is not None:
        out["metadata"] = meta
    answer = out.pop("answer", None)
    if answer is None:
        return out

    def bad(expected: str, found: Any) -> SchemaError:
        return SchemaError(
            f"{place} of {str(path)!r}: answer is not a list of {{text, citations}}",
            column="answer",
            row=row,
            expected=expected,
            found=repr(found)[:80],
        )

    if not isinstance(answer, list):
        raise bad("a list of {text, citations}", answer)
    texts, cites = [], []
    n_refs = len(out["references"]) if isinstance(out.get("references"), list) else 0
    for i, sentence in enumerate(answer):
        if not isinstance(sentence, dict) or not isinstance(sentence.get("text"), str):
            raise bad(f"sentence {i}: an object with a text", sentence)
        c = sentence.get("citations", [])
        if not isinstance(c, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in c):
            raise bad(f"sentence {i}: citations as a list of ints", c)
        wrong = [x for x in c if not 0 <= x < n_refs]
        if wrong:
            raise SchemaError(
                f"{place} of {str(path)!r}: sentence {i} cites reference {wrong[0]}, which does not exist",
                column="answer",
                row=row,
                expected=f"citations in 0..{n_refs - 1} ({n_refs} references)",
                found=str(wrong[0]),
            )
        texts.append(sentence["text"])
        cites.append(c)
    out["answer_sentences"], out["sentence_citations"] = texts, cites
    return out


def read_trec_rag(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a TREC RAG 2024/2025 answer file (JSONL) into the column contract.

    Parameters
    ----------
    path : str or os.PathLike
        The JSONL file.

    Returns
    -------
    polars.DataFrame
        One row per line, columns as the module's table says.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> line = {"run_id": "r", "topic_id": "1", "topic": "q", "references": ["d1", "d2"],
    ...         "answer": [{"text": "A.", "citations": [1]}, {"text": "B.", "citations": []}]}
    >>> _ = p.write_text(json.dumps(line) + "\\n")
    >>> read_trec_rag(p).select("answer", "answer_sentences", "sentence_citations").row(0)
    ('A. B.', ['A.', 'B.'], [[1], []])
    """
    raw = load_jsonl(path)
    records = [(place, _split(place, path, row, r)) for row, (place, r) in enumerate(raw)]
    kinds = {f: k for f, (k, _) in TREC_RAG_FIELDS.items()}
    check_records(records, kinds, path)
    frame = records_frame(records, kinds, {f: c for f, (_, c) in TREC_RAG_FIELDS.items()})
    if "answer_sentences" in frame.columns:
        frame = frame.with_columns(pl.col("answer_sentences").list.join(" ").alias("answer"))
    first = [c for c in ("run_id", "topic_id", "question", "retrieved_ids", "answer") if c in frame.columns]
    return frame.select(*first, pl.exclude(first))


def write_trec_rag(
    frame: Any,
    path: str | os.PathLike[str],
    *,
    run_id: str | None = None,
    **columns: str,
) -> Path:
    """Write a frame as a TREC RAG 2024 answer file (JSONL).

    Parameters
    ----------
    frame : polars/pandas/pyarrow frame
        ``topic_id`` (or ``id``), ``question``, ``retrieved_ids`` and either ``answer_sentences``
        with ``sentence_citations`` or ``answer`` (written as one sentence without citations).
        ``run_id`` and ``response_length`` are taken from their columns when present;
        ``response_length`` is otherwise the answer's number of whitespace-separated words.
    path : str or os.PathLike
        The JSONL file.
    run_id : str, optional
        The run id of every line (overrides a ``run_id`` column).
    **columns : str
        The frame's name of a role, e.g. ``topic_id="qid"``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> import polars as pl
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> df = pl.DataFrame({"topic_id": ["1"], "question": ["q"], "retrieved_ids": [["d1"]],
    ...                    "answer_sentences": [["A."]], "sentence_citations": [[[0]]]})
    >>> _ = write_trec_rag(df, p, run_id="mine")
    >>> line = json.loads(p.read_text())
    >>> line["run_id"], line["topic_id"], line["references"], line["response_length"], line["answer"]
    ('mine', '1', ['d1'], 1, [{'text': 'A.', 'citations': [0]}])
    """
    df = frame_rows(frame)
    roles = (
        "topic_id",
        "question",
        "retrieved_ids",
        "answer",
        "answer_sentences",
        "sentence_citations",
        "run_id",
        "response_length",
    )
    n = {role: columns.get(role, role) for role in roles}
    if n["topic_id"] not in df.columns and "topic_id" not in columns and "id" in df.columns:
        n["topic_id"] = "id"
    needed = [n["topic_id"], n["question"], n["retrieved_ids"]]
    has_sentences = n["answer_sentences"] in df.columns and n["sentence_citations"] in df.columns
    needed.append(n["answer_sentences"] if has_sentences else n["answer"])
    for col in needed:
        if col not in df.columns:
            raise SchemaError("a column TREC RAG files need is missing", column=col, available=df.columns)
    if has_sentences:
        sentences, citations = pl.col(n["answer_sentences"]), pl.col(n["sentence_citations"])
    else:
        sentences = pl.concat_list(pl.col(n["answer"]))
        citations = pl.lit(pl.Series([[[]]], dtype=pl.List(pl.List(pl.Int64)))).first()
    joined = sentences.list.join(" ")
    if n["response_length"] in df.columns:
        length = pl.col(n["response_length"])
    else:
        length = joined.str.split(" ").list.eval(pl.element().filter(pl.element() != "")).list.len()
    rid = pl.lit(run_id) if run_id is not None else pl.col(n["run_id"]) if n["run_id"] in df.columns else pl.lit(None)
    out = df.select(
        rid.cast(pl.String).alias("run_id"),
        pl.col(n["topic_id"]).cast(pl.String).alias("topic_id"),
        pl.col(n["question"]).alias("topic"),
        pl.col(n["retrieved_ids"]).cast(pl.List(pl.String)).alias("references"),
        length.cast(pl.Int64).alias("response_length"),
        sentences.alias("s"),
        citations.alias("c"),
    )
    if out["s"].list.len().ne(out["c"].list.len()).any():
        row = int(out["s"].list.len().ne(out["c"].list.len()).arg_true()[0])
        raise SchemaError(
            "answer_sentences and sentence_citations differ in length",
            column=n["sentence_citations"],
            row=row,
        )
    records = []
    for r in out.to_dicts():
        refs = r["references"] or []
        for c in r["c"]:
            if c is None or any(x is None or not 0 <= x < len(refs) for x in c):
                raise SchemaError(
                    "a citation is not an index into retrieved_ids",
                    column=n["sentence_citations"],
                    row=len(records),
                    found=str(c),
                )
        record = {k: r[k] for k in ("run_id", "topic_id", "topic", "references", "response_length")}
        if record["run_id"] is None:
            del record["run_id"]
        record["answer"] = [{"text": t, "citations": c} for t, c in zip(r["s"], r["c"], strict=True)]
        records.append(record)
    return write_jsonl(records, path)
