"""Test-only code that Ray workers import (tests/ is on their PYTHONPATH): custom metric kernels and data.

Functions defined in a test module cannot be unpickled by workers unless its folder is on
their path; tests/test_distributed.py starts Ray with this folder in ``runtime_env``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import polars as pl

import ragframe as rf
from ragframe.datasets import example_paths, example_rag_log

WORDS = ["the", "cat", "sat", "on", "mat", "paris", "is", "capital", "of", "france", "dog", "ran", "fast", "blue"]


def answer_words(view: pl.DataFrame) -> pl.Series:
    """A custom metric kernel: words in the answer / 20, at most 1."""
    return (view["answer"].str.count_matches(r"\S+").cast(pl.Float64) / 20).clip(0.0, 1.0)


@dataclass(frozen=True)
class KillOnce:
    """A custom metric kernel that kills its worker process the first time it scores rows (marker file present)."""

    marker: str

    def __call__(self, view: pl.DataFrame) -> pl.Series:
        if view.height == 0:  # the driver's check of the schema scores zero rows: not a worker's batch
            return answer_words(view)
        try:
            os.remove(self.marker)
        except FileNotFoundError:
            return answer_words(view)
        os._exit(1)  # the worker dies mid-batch, as an out-of-memory kill would


@dataclass(frozen=True)
class RefuseAnswer:
    """A custom metric kernel that raises a ragframe error on a batch holding ``answer`` while ``marker`` exists."""

    answer: str
    marker: str

    def __call__(self, view: pl.DataFrame) -> pl.Series:
        if os.path.exists(self.marker) and (view["answer"] == self.answer).any():
            raise rf.exceptions.InvalidParameterError(f"refuse: a batch holds the answer {self.answer!r}")
        return answer_words(view)


def rag_log() -> pl.DataFrame:
    """The bundled ARES log (200 real answers), id, question, answer, contexts."""
    return pl.read_parquet(example_rag_log()).select("id", "question", "answer", "contexts")


def trec_wide() -> pl.DataFrame:
    """TREC DL 2019 BM25 run and the official qrels as a wide frame: one row per judged query."""
    paths = example_paths()
    run = rf.read_trec_run(paths["bm25"])
    qrels = rf.read_qrels(paths["qrels"])
    ranked = run.group_by("query_id").agg(
        pl.col("doc_id").alias("retrieved_ids"), pl.col("score").alias("retrieved_scores")
    )
    judged = qrels.group_by("query_id").agg(
        pl.struct(pl.col("doc_id").alias("id"), pl.col("relevance").alias("grade")).alias("relevance")
    )
    return ranked.join(judged, on="query_id", how="inner").rename({"query_id": "id"}).sort("id")


def generated_log(rows: int, seed: int = 0) -> pl.DataFrame:
    """A synthetic RAG log with heuristic and ranking inputs (int ids, a 'split' slice column)."""
    rng = np.random.default_rng(seed)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS, size=n))

    return pl.DataFrame(
        {
            "id": np.arange(rows, dtype=np.int64),
            "split": [["a", "b", "c"][i % 3] for i in range(rows)],
            "question": [text(int(rng.integers(3, 8))) for _ in range(rows)],
            "answer": [text(int(rng.integers(0, 15))) for _ in range(rows)],
            "contexts": [[text(int(rng.integers(4, 20))) for _ in range(int(rng.integers(0, 4)))] for _ in range(rows)],
            "ground_truth": [text(int(rng.integers(1, 6))) for _ in range(rows)],
            "retrieved_ids": [
                [f"d{x}" for x in rng.choice(30, size=int(rng.integers(0, 8)), replace=False)] for _ in range(rows)
            ],
            "relevant_ids": [
                [f"d{x}" for x in rng.choice(30, size=int(rng.integers(1, 4)), replace=False)] for _ in range(rows)
            ],
        }
    )
