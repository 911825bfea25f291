"""ragframe's default heuristic methods, chosen and calibrated against human labels.

Chosen on the development sets only (ARES: 200 RAG answers with human labels; RAGChecker:
280 human preferences between two answers), with the Unicode text rules
(:data:`ragframe.kernels.text.UNICODE_RULES`); ``benchmarks/validity.py`` prints their
agreement with people next to the seed's, held-out sets included. Formulas, thresholds and
how each was chosen: ``docs/metrics.md``.

Building blocks, all over the shared n-gram tables (so a row's score depends on that row only):

- the *support* of an answer sentence: the share of its distinct word bigrams found in its
  best context (unigrams for a one-word sentence), ``pair_containment``;
- *content words*: tokens not in scikit-learn's English stop-word list (:data:`CONTENT`);
- a *refusal*: an answer that declines or hedges instead of answering (:data:`REFUSALS`).
"""

from __future__ import annotations

import numpy as np

from ragframe.metrics.heuristic_kernels import HeuristicKernel, Options
from ragframe.metrics.heuristic_seed import SEED_KERNELS
from ragframe.metrics.text_engine import (
    CONTENT,
    RowSlice,
    Signals,
    chunk_signals,
    group_max,
    mean_by_row,
    row_warnings,
    sentence_signals,
)

__all__ = ["DEFAULT_KERNELS", "DEFAULT_THRESHOLDS", "REFUSALS", "SUPPORTED", "SHORT_ANSWER_WORDS"]

#: A sentence is supported when at least this share of its bigrams is in some context.
SUPPORTED = 0.4
#: Answers with fewer distinct content words get proportionally less answer relevance.
SHORT_ANSWER_WORDS = 10
#: Answers that decline or hedge instead of answering (matched case-insensitively; a typographic
#: apostrophe, U+2019, is read as ').
REFUSALS: tuple[str, ...] = (
    r"\bi (?:do not|don't|dont) know\b",
    r"\bi(?:'m| am) (?:sorry|afraid|not sure|unable)\b",
    r"\b(?:cannot|can't|can ?not|unable to) (?:answer|help|find|determine|provide)\b",
    r"\bnot (?:provided|mentioned|stated|specified|covered|included) in the (?:given |provided )?"
    r"(?:context|documentation|document|text|passage|sources?)\b",
    r"\bas an ai\b",
    r"\bnot (?:explicitly|directly|clearly) (?:provided|mentioned|stated|specified|covered|addressed|discussed)\b",
    r"\b(?:no|not enough|insufficient) (?:clear |direct |relevant |specific )?"
    r"(?:information|answer|details?|mention)\b",
    r"\bdoes(?: not|n't) (?:provide|contain|mention|include|specify|address) (?:any )?"
    r"(?:information|details?|answer)\b",
    r"\bnot relevant to the question\b",
)
_REFUSAL = "(?i)" + "|".join(REFUSALS)
_ANSWER_SENTENCES = "answer_sentences-contexts"
_TRUTH_SENTENCES = "ground_truth_sentences-contexts"


def _refusals(batch: RowSlice) -> np.ndarray:
    """Rows whose answer is a refusal or a hedge."""

    def compute() -> np.ndarray:
        text = batch.row_text["answer"].fill_null("").str.replace_all("\u2019", "'", literal=True)
        return text.str.contains(_REFUSAL).to_numpy()

    return batch.memo("refusals", compute)


def _support(batch: RowSlice, tag: str, role: str) -> tuple[np.ndarray, np.ndarray]:
    """Each sentence's best support by a context, and whether it has any token."""
    return batch.memo(f"support {tag}", lambda: _best_support(batch, tag, role))


def _best_support(batch: RowSlice, tag: str, role: str) -> tuple[np.ndarray, np.ndarray]:
    _, _, per_sentence = batch.pair_list(tag)
    tokens = batch.token_count(batch.ids(f"{role}_sentences"))
    use_bigrams = np.repeat(tokens >= 2, per_sentence)
    values = np.where(use_bigrams, batch.values("containment", 2, tag), batch.values("containment", 1, tag))
    return group_max(values, per_sentence), tokens > 0


def _sentence_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {_ANSWER_SENTENCES: frozenset({1, 2})}


def _faithfulness(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    best, real = _support(batch, _ANSWER_SENTENCES, "answer")
    rows = batch.sentences["answer"][0]
    mean, count = mean_by_row(rows[real], best[real], batch.n)
    answered = (batch.ctx_count > 0) & ~_refusals(batch) & (count > 0)
    values = np.where(answered, mean, 0.0)
    if not explain:
        return values, None
    low = np.flatnonzero(real & (best < SUPPORTED) & answered[rows])
    template = "Answer sentence has low context support (bigram containment={})."
    return values, sentence_signals(
        batch.sentences["answer"], low, "faithfulness-low-support", "warning", template, best
    )


def _hallucination_rate(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    best, real = _support(batch, _ANSWER_SENTENCES, "answer")
    rows = batch.sentences["answer"][0]
    supported = (best >= SUPPORTED).astype(np.float64)
    share, count = mean_by_row(rows[real], supported[real], batch.n)
    answered = (batch.ctx_count > 0) & ~_refusals(batch) & (count > 0)
    values = np.where(answered, share, 0.0)
    if not explain:
        return values, None
    low = np.flatnonzero(real & (best < SUPPORTED) & answered[rows])
    template = "Answer sentence appears unsupported by any context (bigram containment={})."
    signals = sentence_signals(batch.sentences["answer"], low, "hallucination-unsupported", "critical", template, best)
    return values, signals


def _answer_relevance_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {"answer-question": frozenset({CONTENT})}


def _answer_relevance(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    words = batch.gram_count(CONTENT, batch.ids("answer")).astype(np.float64)
    echo = batch.values("containment", CONTENT, "answer-question")  # share of the answer's words in the question
    refused = _refusals(batch)
    values = np.where(refused | (words == 0), 0.0, (1.0 - echo) * np.minimum(1.0, words / SHORT_ANSWER_WORDS))
    if not explain:
        return values, None
    low = np.flatnonzero(values < 0.5)
    template = "Answer may not address the question: it refuses, repeats the question or says little (score={})."
    return values, row_warnings(low, "answer-relevance-low", template, values[low])


def _chunk_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {"question-contexts": frozenset({CONTENT})}


def _chunk_relevance(batch: RowSlice) -> np.ndarray:
    """Cosine of each chunk's content words with the question's (sublinear tf, no idf)."""
    return batch.values("cosine", CONTENT, "question-contexts")


def _context_relevance(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    mean, _ = mean_by_row(batch.ctx_row, _chunk_relevance(batch), batch.n)
    return np.where(batch.ctx_count > 0, mean, 0.0), None


def _context_precision(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    relevance = _chunk_relevance(batch)
    weight = 1.0 / np.log2(batch.ctx_index + 2.0)  # rank 1 weighs 1, rank 2 0.63, ... (DCG discounts)
    num = np.bincount(batch.ctx_row, weights=weight * relevance, minlength=batch.n)
    den = np.bincount(batch.ctx_row, weights=weight, minlength=batch.n)
    values = np.divide(num, den, out=np.zeros(batch.n), where=den > 0)
    if not explain:
        return values, None
    low = relevance < DEFAULT_THRESHOLDS["context_relevance"]
    return values, chunk_signals(batch, low, "Context chunk(s) with low relevance to the question: indices")


def _context_recall_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {_TRUTH_SENTENCES: frozenset({1, 2})}


def _context_recall(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    best, real = _support(batch, _TRUTH_SENTENCES, "ground_truth")
    rows = batch.sentences["ground_truth"][0]
    mean, count = mean_by_row(rows[real], best[real], batch.n)
    value = np.where((batch.ctx_count > 0) & (count > 0), mean, 0.0)
    truth = batch.row_text["ground_truth"]
    missing = (truth.is_null() | (truth == "")).to_numpy()
    return np.where(missing, np.nan, value), None


#: The default kernel of each metric.
DEFAULT_KERNELS: dict[str, HeuristicKernel] = {
    "faithfulness": HeuristicKernel(_sentence_pairs, _faithfulness),
    "answer_relevance": HeuristicKernel(_answer_relevance_pairs, _answer_relevance),
    "context_precision": HeuristicKernel(_chunk_pairs, _context_precision),
    "context_recall": HeuristicKernel(_context_recall_pairs, _context_recall),
    "context_relevance": HeuristicKernel(_chunk_pairs, _context_relevance),
    # token F1 with the seed's formula already agrees with people (RAGChecker AUROC 0.82); not beaten
    "answer_correctness": SEED_KERNELS["answer_correctness"],
    "hallucination_rate": HeuristicKernel(_sentence_pairs, _hallucination_rate),
}
#: Default pass thresholds: Youden's J on ARES, rounded (see docs/metrics.md); context_recall by
#: analogy with faithfulness and answer_correctness the seed's (no labels to calibrate them).
DEFAULT_THRESHOLDS: dict[str, float] = {
    "faithfulness": 0.4,
    "answer_relevance": 0.5,
    "context_precision": 0.25,
    "context_recall": 0.4,
    "context_relevance": 0.25,
    "answer_correctness": 0.6,
    "hallucination_rate": 0.5,
}
