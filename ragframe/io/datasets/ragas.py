"""RAGAS datasets: ``EvaluationDataset`` files (JSONL, CSV) of single-turn samples, and the legacy
``question/contexts/answer/ground_truth(s)`` names of ragas before 0.2.

| RAGAS field | ragframe column |
| --- | --- |
| ``user_input`` (legacy ``question``) | ``question`` |
| ``response`` (legacy ``answer``) | ``answer`` |
| ``retrieved_contexts`` (legacy ``contexts``) | ``contexts`` |
| ``reference`` (legacy ``ground_truth``) | ``ground_truth`` |
| ``reference_contexts`` | ``reference_contexts`` |
| ``retrieved_context_ids`` | ``retrieved_ids`` (number ids as text) |
| ``reference_context_ids`` | ``relevant_ids`` |
| legacy ``ground_truths`` (list) | ``ground_truths``, and ``ground_truth`` = its first item |

Other fields (``rubrics``, ``multi_responses``, ``persona_name``, ...) are kept as columns.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.exceptions import InputFileError, SchemaError
from ragframe.io.datasets.common import (
    Record,
    check_records,
    frame_rows,
    load_json,
    load_jsonl,
    records_frame,
    write_jsonl,
)

__all__ = ["read_ragas", "write_ragas", "RAGAS_FIELDS", "LEGACY_FIELDS"]

#: ragas >= 0.2 field: (kind, ragframe column).
RAGAS_FIELDS: dict[str, tuple[str, str]] = {  # in the order of ragas's SingleTurnSample, which it writes in
    "user_input": ("str", "question"),
    "retrieved_contexts": ("list[str]", "contexts"),
    "reference_contexts": ("list[str]", "reference_contexts"),
    "retrieved_context_ids": ("list[id]", "retrieved_ids"),
    "reference_context_ids": ("list[id]", "relevant_ids"),
    "response": ("str", "answer"),
    "reference": ("str", "ground_truth"),
}
#: ragas < 0.2 field: (kind, ragframe column).
LEGACY_FIELDS: dict[str, tuple[str, str]] = {
    "question": ("str", "question"),
    "contexts": ("list[str]", "contexts"),
    "answer": ("str", "answer"),
    "ground_truth": ("str", "ground_truth"),
    "ground_truths": ("list[str]", "ground_truths"),
}
_LISTS = {f for f, (k, _) in {**RAGAS_FIELDS, **LEGACY_FIELDS}.items() if k.startswith("list")}


def _csv_records(path: str | os.PathLike[str]) -> list[Record]:
    """CSV rows as records; a list cell is a JSON or Python list literal (pandas writes the latter)."""
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"no such file: {str(p)!r}")
    try:
        text = p.read_bytes().decode("utf-8-sig")  # no newline translation: a "\r" in a cell stays
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{str(p)!r} is not UTF-8 ({exc.reason})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    out: list[Record] = []
    for number, row in enumerate(reader, start=1):
        record: dict[str, Any] = {}
        for key, cell in row.items():
            if key is None:
                raise InputFileError(f"record {number} of {str(p)!r} has more cells than the header")
            if cell == "" or cell is None:
                record[key] = None
            elif key in _LISTS:
                try:
                    record[key] = ast.literal_eval(cell)
                except (ValueError, SyntaxError):
                    record[key] = cell  # not a list: check_records names it
            else:
                record[key] = cell
        out.append((f"record {number}", record))
    return out


def read_ragas(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a RAGAS dataset file (``.jsonl``, ``.json`` array of samples, or ``.csv``) into the column contract.

    Parameters
    ----------
    path : str or os.PathLike
        The file. The suffix says how: ``.csv`` (what ``EvaluationDataset.to_csv`` writes, list
        cells as list literals), ``.json`` (a list of samples, or ``{"samples": [...]}``), else JSONL
        (``EvaluationDataset.to_jsonl``).

    Returns
    -------
    polars.DataFrame
        One row per sample, columns as the module's table says.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ds.jsonl"
    >>> _ = p.write_text(json.dumps({"user_input": "q", "retrieved_contexts": ["c"], "response": "a"}) + "\\n")
    >>> read_ragas(p).select("question", "contexts", "answer").row(0)
    ('q', ['c'], 'a')
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        records = _csv_records(path)
    elif suffix == ".json":
        value = load_json(path)
        if isinstance(value, dict) and isinstance(value.get("samples"), list):
            value = value["samples"]
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise InputFileError(f"{str(path)!r} must hold a JSON list of sample objects")
        records = [(f"record {i + 1}", v) for i, v in enumerate(value)]
    else:
        records = load_jsonl(path)
    keys = {k for _, r in records for k in r}
    modern, legacy = keys & set(RAGAS_FIELDS), keys & set(LEGACY_FIELDS)
    if modern and legacy - {"ground_truths"}:
        raise SchemaError(
            f"{str(path)!r} mixes ragas >= 0.2 fields ({', '.join(sorted(modern))}) and legacy ones "
            f"({', '.join(sorted(legacy))}); use one naming",
        )
    fields = LEGACY_FIELDS if legacy and not modern else RAGAS_FIELDS
    kinds = {f: k for f, (k, _) in fields.items()}
    check_records(records, kinds, path)
    frame = records_frame(records, kinds, {f: c for f, (_, c) in fields.items()})
    if fields is LEGACY_FIELDS and "ground_truths" in keys:
        # ragas 0.1 read ground_truths as its first item (handle_deprecated_ground_truths)
        first = pl.col("ground_truths").list.first()
        frame = frame.with_columns(pl.coalesce(pl.col("ground_truth"), first).alias("ground_truth"))
    return frame


_OUT = {c: f for f, (_, c) in RAGAS_FIELDS.items()}


def write_ragas(frame: Any, path: str | os.PathLike[str], **columns: str) -> Path:
    """Write a frame as a RAGAS ``EvaluationDataset`` file (``.csv`` or JSONL, by the suffix).

    Parameters
    ----------
    frame : polars/pandas/pyarrow frame
        Rows in the contract; ``question`` is required, ``answer``, ``contexts``,
        ``ground_truth``, ``reference_contexts``, ``retrieved_ids``, ``relevant_ids`` are written
        when present. Other columns are not written (ragas's samples have no free fields).
    path : str or os.PathLike
        ``.csv``: list cells as JSON lists (ragas reads them back); anything else: JSONL.
    **columns : str
        The frame's name of a role, e.g. ``question="query"``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import polars as pl, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ds.jsonl"
    >>> _ = write_ragas(pl.DataFrame({"question": ["q"], "answer": ["a"], "contexts": [["c"]]}), p)
    >>> p.read_text()
    '{"user_input": "q", "retrieved_contexts": ["c"], "response": "a"}\\n'
    """
    df = frame_rows(frame)
    names = {role: columns.get(role, role) for role in _OUT}
    if names["question"] not in df.columns:
        raise SchemaError("the question column is required", column=names["question"], available=df.columns)
    present = [(names[role], _OUT[role]) for role in _OUT if names[role] in df.columns]
    rows = df.select([pl.col(src).alias(dst) for src, dst in present]).to_dicts()
    records = [{k: v for k, v in r.items() if v is not None} for r in rows]
    if Path(path).suffix.lower() == ".csv":
        fields = [dst for _, dst in present]
        p = Path(path)
        with p.open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            for r in records:
                writer.writerow(
                    {k: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v for k, v in r.items()}
                )
        return p
    return write_jsonl(records, path)
