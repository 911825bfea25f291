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
import polars as pl

from ragframe.metrics.heuristic_kernels import HeuristicKernel, HeuristicOptions
from ragframe.metrics.heuristic_seed import SEED_KERNELS
from ragframe.metrics.text_engine import (
    CONTENT,
    SHORT,
    RowSlice,
    Signals,
    chunk_signals,
    fixed3,
    group_max,
    mean_by_row,
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
_REFUSAL_LOWER = "|".join(REFUSALS)  # the same on lower-cased ASCII text (see _is_refusal)
_REFUSAL_WORDS = "(?i)(" + "|".join(REFUSALS) + ")"
_ANSWER_SENTENCES = "answer_sentences-contexts"
_TRUTH_SENTENCES = "ground_truth_sentences-contexts"


def _answers(batch: RowSlice) -> pl.Series:
    """The rows' answers as the refusal patterns read them ("" for null, a typographic apostrophe as ')."""
    return batch.row_text["answer"].fill_null("").str.replace_all("\u2019", "'", literal=True)


def _refusals(batch: RowSlice) -> np.ndarray:
    """Rows whose answer is a refusal or a hedge."""
    return batch.memo("refusals", lambda: _is_refusal(_answers(batch)))


def _is_refusal(answers: pl.Series) -> np.ndarray:
    """Whether each answer matches :data:`REFUSALS` (case-insensitively).

    On ASCII text, matching case-insensitively is matching the lower-cased text with the
    patterns as written (lower-case ASCII; lower-casing ASCII keeps every character's place and
    word-ness, so ``\\b`` is unchanged), which the regex engine does about 5 times faster; the
    other answers are matched as written, with ``(?i)``.

    Examples
    --------
    >>> _is_refusal(pl.Series(["I DON'T KNOW.", "Paris.", "Désolé, I don't know"])).tolist()
    [True, False, True]
    """
    found = answers.str.to_lowercase().str.contains(_REFUSAL_LOWER).to_numpy().copy()
    wide = answers.str.contains(r"[^\x00-\x7F]").to_numpy()
    if wide.any():
        found[wide] = answers.filter(pl.Series(wide)).str.contains(_REFUSAL).to_numpy()
    return found


def _refusal_words(batch: RowSlice) -> pl.Series:
    """The words of each answer that make it a refusal (the first match; null for the others): signal evidence."""
    return batch.memo("refusal words", lambda: _answers(batch).str.extract(_REFUSAL_WORDS, 1))


def _zero_signals(batch: RowSlice, count: np.ndarray, prefix: str, severity: str) -> Signals:
    """Why an answer scored 0.0 without a sentence being checked: one signal per such row.

    ``<prefix>-no-contexts`` (nothing to check against), ``<prefix>-refusal`` (evidence: the
    words that make it one) or ``<prefix>-no-words`` (no sentence with a token), in that order.
    """
    no_contexts = batch.ctx_count == 0
    refused = _refusals(batch) & ~no_contexts
    kinds = (
        (no_contexts, "no-contexts", "No context to check the answer against: score 0.", None),
        (refused, "refusal", "Answer declines or hedges instead of answering: score 0.", _refusal_words(batch)),
        ((count == 0) & ~no_contexts & ~refused, "no-words", "Answer has no sentence with a word: score 0.", None),
    )
    signals = Signals()
    for flagged, kind, message, evidence in kinds:  # three kinds of rows, each added as one column
        rows = np.flatnonzero(flagged)
        found = None if evidence is None else evidence.gather(rows)
        signals.add(
            rows, np.full(rows.size, -1), [f"{prefix}-{kind}"] * rows.size, severity, [message] * rows.size, found
        )
    return signals


def _joined(*parts: Signals) -> Signals:
    """The signals of ``parts`` as one :class:`Signals` (sorted by row and order when written)."""
    return Signals(frames=[frame for part in parts for frame in part.frames])


def _no_contexts(batch: RowSlice, prefix: str, scored: np.ndarray | None = None) -> Signals:
    """A ``warning`` ``<prefix>-no-contexts`` per row without contexts (scored 0.0), among the ``scored`` rows."""
    rows = np.flatnonzero((batch.ctx_count == 0) & (True if scored is None else scored))
    signals = Signals()
    message = ["No contexts were retrieved: score 0."] * rows.size
    signals.add(rows, np.full(rows.size, -1), [f"{prefix}-no-contexts"] * rows.size, "warning", message, None)
    return signals


def _support(batch: RowSlice, tag: str, role: str) -> tuple[np.ndarray, np.ndarray]:
    """Each sentence's best support by a context, and whether it has any token."""
    return batch.memo(f"support {tag}", lambda: _best_support(batch, tag, role))


def _best_support(batch: RowSlice, tag: str, role: str) -> tuple[np.ndarray, np.ndarray]:
    _, _, per_sentence = batch.pair_list(tag)
    tokens = batch.token_count(batch.ids(f"{role}_sentences"))
    values = batch.values("containment", 2, tag)
    short = np.repeat(tokens < 2, per_sentence)
    if short.any():  # a sentence without a bigram is compared by its unigram (only those pairs are)
        values = values.copy()
        values[short] = batch.values("containment", 1, SHORT + tag)
    return group_max(values, per_sentence), tokens > 0


def _sentence_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {_ANSWER_SENTENCES: frozenset({2}), SHORT + _ANSWER_SENTENCES: frozenset({1})}


def _faithfulness(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    best, real = _support(batch, _ANSWER_SENTENCES, "answer")
    rows = batch.sentences["answer"][0]
    mean, count = mean_by_row(rows[real], best[real], batch.n)
    answered = (batch.ctx_count > 0) & ~_refusals(batch) & (count > 0)
    values = np.where(answered, mean, 0.0)
    if not explain:
        return values, None
    low = np.flatnonzero(real & (best < SUPPORTED) & answered[rows])
    template = "Answer sentence has low context support (bigram containment={})."
    sentences = sentence_signals(batch.sentences["answer"], low, "faithfulness-low-support", "warning", template, best)
    return values, _joined(_zero_signals(batch, count, "faithfulness", "warning"), sentences)


def _hallucination_rate(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
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
    return values, _joined(_zero_signals(batch, count, "hallucination", "critical"), signals)


def _answer_relevance_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {"answer-question": frozenset({CONTENT})}


def _answer_relevance(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    words = batch.gram_count(CONTENT, batch.ids("answer")).astype(np.float64)
    echo = batch.values("containment", CONTENT, "answer-question")  # share of the answer's words in the question
    refused = _refusals(batch)
    values = np.where(refused | (words == 0), 0.0, (1.0 - echo) * np.minimum(1.0, words / SHORT_ANSWER_WORDS))
    if not explain:
        return values, None
    low = np.flatnonzero(values < 0.5)
    causes = pl.DataFrame(
        {
            "refused": refused[low],
            "words": words[low].astype(np.int64),
            "repeated": np.rint(echo[low] * words[low]).astype(np.int64),
            "score": fixed3(values[low]),
        }
    )
    messages = causes.select(
        pl.when("refused")
        .then(pl.format("Answer declines or hedges instead of answering (score={}).", "score"))
        .when(pl.col("words") == 0)
        .then(pl.format("Answer has no content word (score={}).", "score"))
        .when(pl.col("words") < SHORT_ANSWER_WORDS)
        .then(
            pl.format(
                "Answer says little: {} content word(s), {} of them in the question (score={}).",
                "words",
                "repeated",
                "score",
            )
        )
        .otherwise(
            pl.format(
                "Answer repeats the question: {} of its {} content words are in it (score={}).",
                "repeated",
                "words",
                "score",
            )
        )
    ).to_series()
    signals = Signals()
    ids = ["answer-relevance-low"] * low.size
    signals.add(low, np.zeros(low.size), ids, "warning", messages, _refusal_words(batch).gather(low))
    return values, signals


def _chunk_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {"question-contexts": frozenset({CONTENT})}


def _chunk_relevance(batch: RowSlice) -> np.ndarray:
    """Cosine of each chunk's content words with the question's (sublinear tf, no idf)."""
    return batch.values("cosine", CONTENT, "question-contexts")


def _context_relevance(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    relevance = _chunk_relevance(batch)
    mean, _ = mean_by_row(batch.ctx_row, relevance, batch.n)
    values = np.where(batch.ctx_count > 0, mean, 0.0)
    if not explain:
        return values, None
    low = relevance < DEFAULT_THRESHOLDS["context_relevance"]
    message = "Context chunk(s) with low relevance to the question: indices"
    chunks = chunk_signals(batch, low, message, "context-relevance-low-relevance-chunks")
    return values, _joined(_no_contexts(batch, "context-relevance"), chunks)


def _context_precision(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    relevance = _chunk_relevance(batch)
    weight = 1.0 / np.log2(batch.ctx_index + 2.0)  # rank 1 weighs 1, rank 2 0.63, ... (DCG discounts)
    num = np.bincount(batch.ctx_row, weights=weight * relevance, minlength=batch.n)
    den = np.bincount(batch.ctx_row, weights=weight, minlength=batch.n)
    values = np.divide(num, den, out=np.zeros(batch.n), where=den > 0)
    if not explain:
        return values, None
    low = relevance < DEFAULT_THRESHOLDS["context_relevance"]
    chunks = chunk_signals(batch, low, "Context chunk(s) with low relevance to the question: indices")
    return values, _joined(_no_contexts(batch, "context-precision"), chunks)


def _context_recall_pairs(opts: HeuristicOptions) -> dict[str, frozenset[int]]:
    return {_TRUTH_SENTENCES: frozenset({2}), SHORT + _TRUTH_SENTENCES: frozenset({1})}


def _context_recall(batch: RowSlice, opts: HeuristicOptions, explain: bool) -> tuple[np.ndarray, Signals | None]:
    best, real = _support(batch, _TRUTH_SENTENCES, "ground_truth")
    rows = batch.sentences["ground_truth"][0]
    mean, count = mean_by_row(rows[real], best[real], batch.n)
    value = np.where((batch.ctx_count > 0) & (count > 0), mean, 0.0)
    truth = batch.row_text["ground_truth"]
    missing = (truth.is_null() | (truth == "")).to_numpy()
    values = np.where(missing, np.nan, value)
    if not explain:
        return values, None
    low = np.flatnonzero(real & (best < SUPPORTED) & (batch.ctx_count > 0)[rows])
    template = "Ground-truth sentence not found in the contexts (bigram containment={})."
    sentences = sentence_signals(
        batch.sentences["ground_truth"], low, "context-recall-missing", "warning", template, best
    )
    return values, _joined(_no_contexts(batch, "context-recall", ~missing), sentences)


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
