"""DeepEval datasets: the JSON files of goldens and test cases that ``EvaluationDataset.save_as``
writes and ``add_goldens_from_json_file`` / ``add_test_cases_from_json_file`` read.

| DeepEval field | ragframe column |
| --- | --- |
| ``input`` | ``question`` |
| ``actual_output`` | ``answer`` |
| ``expected_output`` | ``ground_truth`` |
| ``retrieval_context`` | ``contexts`` |
| ``context`` (the ideal context) | ``reference_contexts`` |

Other fields (``name``, ``comments``, ``additional_metadata``, ``source_file``, ``tools_called``,
...) are kept as columns under their own names.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.exceptions import InputFileError, SchemaError
from ragframe.io.datasets.common import check_records, frame_rows, load_json, load_jsonl, records_frame, write_json

__all__ = ["read_deepeval", "write_deepeval", "DEEPEVAL_FIELDS", "GOLDEN_EXTRAS"]

#: DeepEval field: (kind, ragframe column).
DEEPEVAL_FIELDS: dict[str, tuple[str, str]] = {
    "input": ("str", "question"),
    "actual_output": ("str", "answer"),
    "expected_output": ("str", "ground_truth"),
    "retrieval_context": ("list[str]", "contexts"),
    "context": ("list[str]", "reference_contexts"),
}
_OUT = {c: f for f, (_, c) in DEEPEVAL_FIELDS.items()}
#: DeepEval's other golden fields, in the order ``save_as`` writes them: written back when the frame has them.
GOLDEN_EXTRAS: tuple[str, ...] = (
    "name",
    "comments",
    "source_file",
    "tools_called",
    "expected_tools",
    "token_cost",
    "input_token_count",
    "output_token_count",
    "additional_metadata",
    "custom_column_key_values",
    "expectations",
)


def read_deepeval(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a DeepEval dataset file (a JSON list of goldens or test cases; ``.jsonl``: one per line).

    Parameters
    ----------
    path : str or os.PathLike
        The file. ``.jsonl`` is read one object per line, anything else as one JSON list (or
        ``{"goldens": [...]}`` / ``{"test_cases": [...]}``).

    Returns
    -------
    polars.DataFrame
        One row per golden or test case, columns as the module's table says.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "goldens.json"
    >>> _ = p.write_text(json.dumps([{"input": "q", "expected_output": "a", "context": ["c"]}]))
    >>> read_deepeval(p).select("question", "ground_truth", "reference_contexts").row(0)
    ('q', 'a', ['c'])
    """
    if Path(path).suffix.lower() == ".jsonl":
        records = load_jsonl(path)
    else:
        value = load_json(path)
        if isinstance(value, dict):
            lists = [value[k] for k in ("goldens", "test_cases") if isinstance(value.get(k), list)]
            value = lists[0] if len(lists) == 1 else value
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise InputFileError(f"{str(path)!r} must hold a JSON list of goldens or test cases")
        records = [(f"record {i + 1}", v) for i, v in enumerate(value)]
    kinds = {f: k for f, (k, _) in DEEPEVAL_FIELDS.items()}
    check_records(records, kinds, path)
    return records_frame(records, kinds, {f: c for f, (_, c) in DEEPEVAL_FIELDS.items()})


def write_deepeval(frame: Any, path: str | os.PathLike[str], **columns: str) -> Path:
    """Write a frame as a DeepEval dataset JSON file (a list of goldens / test cases).

    Parameters
    ----------
    frame : polars/pandas/pyarrow frame
        Rows in the contract; ``question`` is required (DeepEval's ``input``); ``answer``,
        ``ground_truth``, ``contexts``, ``reference_contexts`` are written when present, a null
        value as JSON null, then DeepEval's other golden fields (``GOLDEN_EXTRAS``: ``name``,
        ``comments``, ``additional_metadata``, ...) that the frame has. Other columns are not
        written.
    path : str or os.PathLike
        The JSON file.
    **columns : str
        The frame's name of a role, e.g. ``question="query"``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import polars as pl, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "goldens.json"
    >>> _ = write_deepeval(pl.DataFrame({"question": ["q"], "ground_truth": ["a"]}), p)
    >>> read_deepeval(p).select("question", "ground_truth").row(0)
    ('q', 'a')
    """
    df = frame_rows(frame)
    names = {role: columns.get(role, role) for role in _OUT}
    if names["question"] not in df.columns:
        raise SchemaError("the question column is required", column=names["question"], available=df.columns)
    present = [pl.col(names[role]).alias(_OUT[role]) for role in _OUT if names[role] in df.columns]
    present += [pl.col(f) for f in GOLDEN_EXTRAS if f in df.columns]
    return write_json(df.select(present).to_dicts(), path, indent=4)
