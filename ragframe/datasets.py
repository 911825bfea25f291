"""The small real example bundled with the package (see ``ragframe/data/README.md``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["example_paths", "example_rag_log"]


def example_paths() -> dict[str, Path]:
    """Paths of the bundled TREC DL 2019 example: ``qrels`` and the runs ``bm25`` and ``bm25+gpt3.5-rerank``.

    Examples
    --------
    >>> sorted(example_paths())
    ['bm25', 'bm25+gpt3.5-rerank', 'qrels']
    """
    root = resources.files("ragframe") / "data"
    return {
        "qrels": Path(str(root / "qrels.dl19-passage.txt")),
        "bm25": Path(str(root / "run.dl19.bm25.txt")),
        "bm25+gpt3.5-rerank": Path(str(root / "run.dl19.bm25-rerank-gpt35.txt")),
    }


def example_rag_log() -> Path:
    """Path of the bundled ARES RAG log: 200 questions, answers and passages with human labels.

    Examples
    --------
    >>> import polars as pl
    >>> pl.read_parquet(example_rag_log()).select("question", "answer", "contexts", "human_faithfulness").shape
    (200, 4)
    """
    return Path(str(resources.files("ragframe") / "data" / "ares_databricks_docs.parquet"))
