"""Other tools' dataset files in and out of the column contract: RAGAS, DeepEval, TREC RAG answer
files and RAGChecker (a module per format; docs/datasets.md has the column tables)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.exceptions import InvalidParameterError
from ragframe.io.datasets.deepeval import read_deepeval, write_deepeval
from ragframe.io.datasets.ragas import read_ragas, write_ragas
from ragframe.io.datasets.ragchecker import read_ragchecker, write_ragchecker
from ragframe.io.datasets.trec_rag import read_trec_rag, write_trec_rag
from ragframe.public import public

__all__ = ["read_dataset", "write_dataset", "DATASET_FORMATS"]

_READERS: dict[str, Callable[..., pl.DataFrame]] = {
    "ragas": read_ragas,
    "deepeval": read_deepeval,
    "trec_rag": read_trec_rag,
    "ragchecker": read_ragchecker,
}
_WRITERS: dict[str, Callable[..., Path]] = {
    "ragas": write_ragas,
    "deepeval": write_deepeval,
    "trec_rag": write_trec_rag,
    "ragchecker": write_ragchecker,
}
#: The formats :func:`read_dataset` and :func:`write_dataset` know.
DATASET_FORMATS: tuple[str, ...] = tuple(_READERS)


def _format(format: Any) -> str:
    if not isinstance(format, str) or format.replace("-", "_").lower() not in _READERS:
        raise InvalidParameterError(f"format must be one of {', '.join(map(repr, DATASET_FORMATS))}, found {format!r}")
    return format.replace("-", "_").lower()


@public
def read_dataset(path: str | os.PathLike[str], /, *, format: str) -> pl.DataFrame:
    """Read another tool's dataset file into ragframe's column contract.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    format : {"ragas", "deepeval", "trec_rag", "ragchecker"}
        - ``"ragas"``: an ``EvaluationDataset`` file: JSONL (``to_jsonl``), CSV (``to_csv``) or a
          JSON list; ragas >= 0.2 names (``user_input, retrieved_contexts, response, reference,
          reference_contexts``) or the legacy ones (``question, contexts, answer,
          ground_truth(s)``);
        - ``"deepeval"``: a JSON list of goldens or test cases (``input, actual_output,
          expected_output, retrieval_context, context``), or JSONL;
        - ``"trec_rag"``: a TREC RAG 2024/2025 answer file (JSONL: ``topic_id, topic,
          references, answer: [{text, citations}]``);
        - ``"ragchecker"``: RAGChecker's input or output JSON (``{"results": [...]}``).

    Returns
    -------
    polars.DataFrame
        One row per sample: ``question``, ``answer``, ``contexts``, ``ground_truth``,
        ``retrieved_ids``, ... as docs/datasets.md maps them (a field no sample of the file has
        gives no column); fields ragframe has no role for are kept as columns under their own
        names.

    Raises
    ------
    InputFileError
        The file is missing, not UTF-8 or not JSON (naming the file and the line).
    SchemaError
        A field has the wrong kind (naming the file, line or record, and the field).
    InvalidParameterError
        An unknown ``format``.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> import ragframe as rf
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ds.jsonl"
    >>> _ = p.write_text(json.dumps({"user_input": "q", "retrieved_contexts": ["c"], "response": "a"}) + "\\n")
    >>> rf.read_dataset(p, format="ragas").columns
    ['question', 'contexts', 'answer']
    """
    return _READERS[_format(format)](path)


@public
def write_dataset(frame: Any, path: str | os.PathLike[str], /, *, format: str, **options: Any) -> Path:
    """Write a frame as another tool's dataset file: the inverse of :func:`read_dataset`.

    Parameters
    ----------
    frame : polars DataFrame or LazyFrame, pandas DataFrame, pyarrow Table
        Rows in the column contract.
    path : str or os.PathLike
        The file (for ``"ragas"``, a ``.csv`` suffix writes CSV, anything else JSONL).
    format : {"ragas", "deepeval", "trec_rag", "ragchecker"}
        As :func:`read_dataset`.
    **options
        A role's column name in ``frame`` (``question="query"``, ``contexts="passages"``);
        for ``"trec_rag"`` also ``run_id="..."``.

    Returns
    -------
    pathlib.Path
        ``path``. ``read_dataset(path, format=format)`` gives back the columns written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({"question": ["q"], "answer": ["a"], "contexts": [["c"]], "ground_truth": ["g"]})
    >>> p = rf.write_dataset(df, pathlib.Path(tempfile.mkdtemp()) / "goldens.json", format="deepeval")
    >>> rf.read_dataset(p, format="deepeval").select(df.columns).equals(df)
    True
    """
    return _WRITERS[_format(format)](frame, path, **options)
