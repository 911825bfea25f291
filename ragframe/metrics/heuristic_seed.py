"""The rag-eval-node-ts 0.3.2 heuristics, exactly (``compat="rag-eval-node-ts"``).

Each metric is a :class:`~ragframe.metrics.heuristic_kernels.HeuristicKernel` over the
shared text engine (:mod:`ragframe.metrics.text_engine`) with the seed's tokeniser and
sentence rule (:data:`ragframe.kernels.text.SEED_RULES`). 3,000 reference cases of the seed
agree within 1e-9 (``tests/test_heuristics_oracle.py``). Formulas: ``docs/metrics.md``.
"""

from __future__ import annotations

import numpy as np

from ragframe.metrics.heuristic_kernels import HeuristicKernel, HeuristicOptions
from ragframe.metrics.text_engine import (
    RowSlice,
    Signals,
    chunk_signals,
    group_max,
    mean_by_row,
    row_warnings,
    sentence_signals,
)

__all__ = ["SEED_KERNELS", "SEED_THRESHOLDS"]


def _faithfulness_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {"answer_sentences-contexts": frozenset(opts.ngram_sizes)}


def _faithfulness(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    tag = "answer_sentences-contexts"
    s_rows = batch.sentences["answer"][0]
    best = group_max(batch.weighted_values(tag, opts), batch.pair_list(tag)[2])
    mean, count = mean_by_row(s_rows, best, batch.n)
    has_ctx = batch.ctx_count > 0
    values = np.where(has_ctx & (count > 0), mean, 0.0)
    if not explain:
        return values, None
    low = np.flatnonzero((best < 0.3) & has_ctx[s_rows])
    template = "Answer sentence has low context support (overlap={})."
    return values, sentence_signals(
        batch.sentences["answer"], low, "faithfulness-low-support", "warning", template, best
    )


def _hallucination_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {"answer_sentences-contexts": frozenset({1})}


def _hallucination_rate(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    tag = "answer_sentences-contexts"
    s_rows = batch.sentences["answer"][0]
    best = group_max(batch.values("overlap", 1, tag), batch.pair_list(tag)[2])
    unsupported = best < opts.claim_support_threshold
    bad, count = mean_by_row(s_rows, unsupported.astype(np.float64), batch.n)
    has_ctx = batch.ctx_count > 0
    values = np.where(has_ctx, np.where(count > 0, 1.0 - bad, 1.0), 0.0)
    if not explain:
        return values, None
    low = np.flatnonzero(unsupported & has_ctx[s_rows])
    template = "Answer sentence appears unsupported by any context (max overlap={})."
    return values, sentence_signals(
        batch.sentences["answer"], low, "hallucination-unsupported", "critical", template, best
    )


def _answer_relevance_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {"question-answer": frozenset({1})}


def _answer_relevance(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    tag = "question-answer"
    values = (batch.values("tfidf", 1, tag) + batch.values("overlap", 1, tag)) / 2
    if not explain:
        return values, None
    low = np.flatnonzero(values < 0.5)
    template = "Answer may not be relevant to the question (score={})."
    return values, row_warnings(low, "answer-relevance-low", template, values[low])


def _context_precision_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {"question-contexts": frozenset({1})}


def _context_precision(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    sim = batch.values("tfidf", 1, "question-contexts")
    mean, _ = mean_by_row(batch.ctx_row, sim, batch.n)
    values = np.where(batch.ctx_count > 0, mean, 0.0)
    if not explain:
        return values, None
    return values, chunk_signals(batch, sim < 0.3, "Context chunk(s) with low relevance (< 0.3): indices")


def _context_relevance_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {"question-contexts": frozenset(opts.ngram_sizes)}


def _context_relevance(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    relevant = batch.weighted_values("question-contexts", opts) >= opts.chunk_relevance_threshold
    share, _ = mean_by_row(batch.ctx_row, relevant.astype(np.float64), batch.n)
    return np.where(batch.ctx_count > 0, share, 0.0), None


def _missing_ground_truth(batch: RowSlice) -> np.ndarray:
    gt = batch.row_text["ground_truth"]
    return (gt.is_null() | (gt == "")).to_numpy()


def _context_recall_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {"ground_truth_sentences-contexts": frozenset({1})}


def _context_recall(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    tag = "ground_truth_sentences-contexts"
    g_rows = batch.sentences["ground_truth"][0]
    best = group_max(batch.values("overlap", 1, tag), batch.pair_list(tag)[2])
    share, count = mean_by_row(g_rows, (best >= 0.3).astype(np.float64), batch.n)
    value = np.where((batch.ctx_count > 0) & (count > 0), share, 0.0)
    return np.where(_missing_ground_truth(batch), np.nan, value), None


def _answer_correctness_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {"ground_truth-answer": frozenset({1})}


def _answer_correctness(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    tag = "ground_truth-answer"
    score = 0.7 * batch.values("f1", 1, tag) + 0.3 * batch.values("overlap", 1, tag)
    missing = _missing_ground_truth(batch)
    values = np.where(missing, np.nan, score)
    if not explain:
        return values, None
    low = np.flatnonzero(~missing & (score < 0.5))
    return values, row_warnings(low, "answer-correctness-low", "Answer correctness is low (score={}).", score[low])


#: The seed's kernel of each metric.
SEED_KERNELS: dict[str, HeuristicKernel] = {
    "faithfulness": HeuristicKernel(_faithfulness_pairs, _faithfulness),
    "answer_relevance": HeuristicKernel(_answer_relevance_pairs, _answer_relevance),
    "context_precision": HeuristicKernel(_context_precision_pairs, _context_precision),
    "context_recall": HeuristicKernel(_context_recall_pairs, _context_recall),
    "context_relevance": HeuristicKernel(_context_relevance_pairs, _context_relevance),
    "answer_correctness": HeuristicKernel(_answer_correctness_pairs, _answer_correctness),
    "hallucination_rate": HeuristicKernel(_hallucination_pairs, _hallucination_rate),
}
#: The seed's default pass thresholds.
SEED_THRESHOLDS: dict[str, float] = {
    "faithfulness": 0.7,
    "answer_relevance": 0.7,
    "context_precision": 0.7,
    "context_recall": 0.7,
    "context_relevance": 0.6,
    "answer_correctness": 0.6,
    "hallucination_rate": 0.7,
}
