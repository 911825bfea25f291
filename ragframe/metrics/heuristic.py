"""The seven heuristic (no-LLM) RAG metrics: each a small kernel over the shared text engine.

Each metric is a :class:`HeuristicKernel`: the pair lists (and n-gram sizes) it compares,
announced before any is computed so that metrics comparing the same pairs share one
computation, and a function from a :class:`~ragframe.metrics.text_engine.RowSlice` to one
score per row (and, with ``explain=True``, its signals). Formulas, null and empty rules:
``docs/metrics.md``. They reproduce rag-eval-node-ts 0.3.2 exactly.

Nulls: a null ``question``/``answer`` is treated as ""; a null ``contexts`` list as []; a
null chunk inside a list is a SchemaError naming the row (it is a broken row, not an empty
passage). A null or empty ``ground_truth`` gives null ``context_recall`` and
``answer_correctness`` (and null ``*_passed``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.metrics import text_engine
from ragframe.metrics.registry import Family, Metric, Requests, get_metric, register_family, register_metric
from ragframe.metrics.text_engine import (
    RowSlice,
    Signals,
    TextBatch,
    group_max,
    mean_by_row,
    pair_roles,
    row_warnings,
    sentence_signals,
)

__all__ = [
    "HEURISTIC_METRICS",
    "Options",
    "HeuristicKernel",
    "score_faithfulness",
    "score_answer_relevance",
    "score_context_precision",
    "score_context_recall",
    "score_context_relevance",
    "score_answer_correctness",
    "score_hallucination_rate",
]

Frame = TypeVar("Frame")
_TEXT_COLUMNS = ("question", "answer", "contexts", "ground_truth")


@dataclass(frozen=True)
class Options:
    """Tunable options of the heuristic metrics (rag-eval-node-ts defaults)."""

    ngram_sizes: tuple[int, ...] = (1, 2)
    ngram_weights: tuple[float, ...] = (0.7, 0.3)
    claim_support_threshold: float = 0.15
    chunk_relevance_threshold: float = 0.2


@dataclass(frozen=True)
class HeuristicKernel:
    """How one heuristic metric is computed over the shared text engine.

    Attributes
    ----------
    pairs : callable
        ``pairs(opts) -> {pair list tag: n-gram sizes}``: what it compares (see
        :meth:`RowSlice.pair_list`).
    score : callable
        ``score(batch, opts, explain) -> (values, signals or None)``, one value per row
        (NaN for a null score).
    """

    pairs: Callable[[Options], Mapping[str, frozenset[int]]]
    score: Callable[[RowSlice, Options, bool], tuple[np.ndarray, Signals | None]]


# ----------------------------------------------------------------------------- the seven kernels


def _faithfulness_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {"answer_sentences-contexts": frozenset(opts.ngram_sizes)}


def _faithfulness(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
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


def _hallucination_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {"answer_sentences-contexts": frozenset({1})}


def _hallucination_rate(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
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


def _answer_relevance_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {"question-answer": frozenset({1})}


def _answer_relevance(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    tag = "question-answer"
    values = (batch.values("tfidf", 1, tag) + batch.values("overlap", 1, tag)) / 2
    if not explain:
        return values, None
    low = np.flatnonzero(values < 0.5)
    template = "Answer may not be relevant to the question (score={})."
    return values, row_warnings(low, "answer-relevance-low", template, values[low])


def _context_precision_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {"question-contexts": frozenset({1})}


def _context_precision(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    sim = batch.values("tfidf", 1, "question-contexts")
    mean, _ = mean_by_row(batch.ctx_row, sim, batch.n)
    values = np.where(batch.ctx_count > 0, mean, 0.0)
    if not explain:
        return values, None
    low = sim < 0.3
    listing = (
        pl.DataFrame({"row": batch.ctx_row[low], "i": batch.ctx_index[low]})
        .group_by("row", maintain_order=True)
        .agg(pl.col("i").cast(pl.String).str.join(", ").alias("list"))
        .sort("row")
    )
    rows = listing.get_column("row").to_numpy()
    signals = Signals()
    message = "Context chunk(s) with low relevance (< 0.3): indices [" + listing.get_column("list") + "]."
    signals.add(
        rows, np.zeros(rows.size), ["context-precision-low-relevance-chunks"] * rows.size, "info", message, None
    )
    return values, signals


def _context_relevance_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {"question-contexts": frozenset(opts.ngram_sizes)}


def _context_relevance(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    relevant = batch.weighted_values("question-contexts", opts) >= opts.chunk_relevance_threshold
    share, _ = mean_by_row(batch.ctx_row, relevant.astype(np.float64), batch.n)
    return np.where(batch.ctx_count > 0, share, 0.0), None


def _missing_ground_truth(batch: RowSlice) -> np.ndarray:
    gt = batch.row_text["ground_truth"]
    return (gt.is_null() | (gt == "")).to_numpy()


def _context_recall_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {"ground_truth_sentences-contexts": frozenset({1})}


def _context_recall(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    tag = "ground_truth_sentences-contexts"
    g_rows = batch.sentences["ground_truth"][0]
    best = group_max(batch.values("overlap", 1, tag), batch.pair_list(tag)[2])
    share, count = mean_by_row(g_rows, (best >= 0.3).astype(np.float64), batch.n)
    value = np.where((batch.ctx_count > 0) & (count > 0), share, 0.0)
    return np.where(_missing_ground_truth(batch), np.nan, value), None


def _answer_correctness_pairs(opts: Options) -> dict[str, frozenset[int]]:
    return {"ground_truth-answer": frozenset({1})}


def _answer_correctness(batch: RowSlice, opts: Options, explain: bool) -> tuple[np.ndarray, Signals | None]:
    tag = "ground_truth-answer"
    score = 0.7 * batch.values("f1", 1, tag) + 0.3 * batch.values("overlap", 1, tag)
    missing = _missing_ground_truth(batch)
    values = np.where(missing, np.nan, score)
    if not explain:
        return values, None
    low = np.flatnonzero(~missing & (score < 0.5))
    return values, row_warnings(low, "answer-correctness-low", "Answer correctness is low (score={}).", score[low])


# ----------------------------------------------------------------------------- the family runner


def _needed(metrics: Sequence[Metric], opts: Options) -> tuple[set[str], dict[int, set[str]]]:
    """The text roles to read (sentences included) and the roles each n-gram size indexes."""
    roles: set[str] = set()
    grams: dict[int, set[str]] = {}
    for metric in metrics:
        roles.update(metric.inputs)
        for tag, sizes in metric.kernel.pairs(opts).items():
            roles.update(pair_roles(tag))
            for n in sizes:
                grams.setdefault(n, set()).update(pair_roles(tag))
    return roles, grams


def _score_slice(batch: RowSlice, metrics: Sequence[Metric], opts: Options, explain: bool) -> pl.DataFrame:
    for metric in metrics:  # announce every pair list first: shared grams are found in one probe
        for tag, sizes in metric.kernel.pairs(opts).items():
            left, right, _ = batch.pair_list(tag)
            batch.plan(tag, left, right, sizes)
    out: list[pl.Series] = []
    for metric in metrics:
        values, signals = metric.kernel.score(batch, opts, explain)
        out.append(pl.Series(metric.name, values, dtype=pl.Float64, nan_to_null=True))
        if explain:
            out.append((signals or Signals()).column(f"{metric.name}_signals", batch.n))
    return pl.DataFrame(out, height=batch.n)


def _score_chunk(
    view: pl.DataFrame, metrics: Sequence[Metric], options: Mapping[str, Any], function: str
) -> pl.DataFrame:
    """One text stage, then the pair stage in row slices on a thread per core."""
    opts: Options = options["_opts"]
    roles, grams = _needed(metrics, opts)
    batch = TextBatch(view, {r: options[r] for r in _TEXT_COLUMNS}, roles, grams, function)
    slice_rows = options["slice_rows"]

    def one(bounds: tuple[int, int]) -> pl.DataFrame:
        return _score_slice(batch.rows(*bounds), metrics, opts, options["explain"])

    pieces = [(start, min(start + slice_rows, view.height)) for start in range(0, view.height, slice_rows)]
    if len(pieces) <= 1:
        return one((0, view.height))
    # rows are independent: the slices bound the pair stage's memory and run on a thread per core
    with ThreadPoolExecutor(max_workers=min(len(pieces), os.cpu_count() or 1)) as pool:
        return pl.concat(list(pool.map(one, pieces)))


def _score(view: pl.DataFrame, requests: Requests, options: Mapping[str, Any], function: str):
    """The heuristic family's scorer: text stages of up to 100,000 rows (bounded memory)."""
    metrics = [metric for metric, _ in requests]
    rows = text_engine.TEXT_ROWS
    parts = [_score_chunk(view.slice(s, rows), metrics, options, function) for s in range(0, max(view.height, 1), rows)]
    return parts[0] if len(parts) == 1 else pl.concat(parts)


def _check(options: dict[str, Any], function: str) -> dict[str, Any]:
    for role in _TEXT_COLUMNS:
        validate.column_name(options[role], role, function)
    sizes = options["ngram_sizes"]
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise validate.fail(function, "ngram_sizes", "a non-empty list of ints >= 1", sizes)
    sizes = tuple(sizes)
    if not sizes:
        raise validate.fail(function, "ngram_sizes", "a non-empty list of ints >= 1", sizes)
    weights = options["ngram_weights"]
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__iter__"):
        raise validate.fail(function, "ngram_weights", "a list of numbers >= 0", weights)
    opts = Options(
        ngram_sizes=tuple(validate.positive_int(n, "ngram_sizes", function) for n in sizes),
        ngram_weights=tuple(validate.number(w, "ngram_weights", function, minimum=0.0) for w in weights),
        claim_support_threshold=validate.number(
            options["claim_support_threshold"], "claim_support_threshold", function
        ),
        chunk_relevance_threshold=validate.number(
            options["chunk_relevance_threshold"], "chunk_relevance_threshold", function
        ),
    )
    return {
        **options,
        "ngram_sizes": opts.ngram_sizes,
        "ngram_weights": opts.ngram_weights,
        "claim_support_threshold": opts.claim_support_threshold,
        "chunk_relevance_threshold": opts.chunk_relevance_threshold,
        "explain": validate.flag(options["explain"], "explain", function),
        "slice_rows": validate.positive_int(options["slice_rows"], "slice_rows", function),
        "_opts": opts,
    }


def _columns(requests: Requests, options: Mapping[str, Any], available: Sequence[str]):
    roles = [role for role in _TEXT_COLUMNS if any(role in metric.inputs for metric, _ in requests)]
    return {role: options[role] for role in roles}


register_family(
    Family(
        name="heuristic",
        score=_score,
        options={
            "question": "question",
            "answer": "answer",
            "contexts": "contexts",
            "ground_truth": "ground_truth",
            "ngram_sizes": (1, 2),
            "ngram_weights": (0.7, 0.3),
            "claim_support_threshold": 0.15,
            "chunk_relevance_threshold": 0.2,
            "explain": False,
            "slice_rows": 10_000,
        },
        check=_check,
        columns=_columns,
    )
)

_DEFINITIONS = (
    ("faithfulness", ("answer", "contexts"), 0.7, _faithfulness_pairs, _faithfulness,
     "Mean over answer sentences of the best weighted n-gram overlap with any context."),
    ("answer_relevance", ("question", "answer"), 0.7, _answer_relevance_pairs, _answer_relevance,
     "Mean of unigram TF-IDF cosine and unigram overlap between question and answer."),
    ("context_precision", ("question", "contexts"), 0.7, _context_precision_pairs, _context_precision,
     "Mean over contexts of their unigram TF-IDF cosine with the question."),
    ("context_recall", ("ground_truth", "contexts"), 0.7, _context_recall_pairs, _context_recall,
     "Share of ground-truth sentences with unigram overlap >= 0.3 with some context."),
    ("context_relevance", ("question", "contexts"), 0.6, _context_relevance_pairs, _context_relevance,
     "Share of contexts whose weighted n-gram overlap with the question reaches chunk_relevance_threshold."),
    ("answer_correctness", ("ground_truth", "answer"), 0.6, _answer_correctness_pairs, _answer_correctness,
     "0.7 x token F1 + 0.3 x unigram overlap of answer and ground truth."),
    ("hallucination_rate", ("answer", "contexts"), 0.7, _hallucination_pairs, _hallucination_rate,
     "Share of answer sentences supported by some context (higher is better, despite the name)."),
)  # fmt: skip
for _name, _inputs, _threshold, _pairs, _kernel, _description in _DEFINITIONS:
    register_metric(
        Metric(
            name=_name,
            family="heuristic",
            inputs=_inputs,
            description=_description,
            kernel=HeuristicKernel(pairs=_pairs, score=_kernel),
            threshold=_threshold,
        )
    )

#: The seven metrics, in rag-eval-node-ts's order (``metrics=None`` means all of them).
HEURISTIC_METRICS: tuple[str, ...] = tuple(name for name, *_ in _DEFINITIONS)


# ----------------------------------------------------------------------------- one function per metric


def _single(name: str) -> Callable[..., Any]:
    metric = get_metric(name)

    def score(df: Frame, /, *, threshold: float | None = None, prefix: str = "", **options: Any) -> Frame:
        from ragframe.evaluator import Evaluator

        thresholds = None if threshold is None else {name: threshold}
        evaluator = Evaluator([name], composite=False, thresholds=thresholds, prefix=prefix, **options)
        return evaluator.evaluate(df, function=f"score_{name}")

    score.__name__ = score.__qualname__ = f"score_{name}"
    score.__doc__ = f"""Append ``{name}`` and ``{name}_passed`` (and ``{name}_signals`` with ``explain=True``).

    {metric.description}

    Parameters
    ----------
    df : frame
        Reads {", ".join(f"``{c}``" for c in metric.inputs)} (names overridable by keyword, e.g.
        ``answer="response"``).
    threshold : float, optional
        Pass threshold of ``{name}_passed`` (default {metric.threshold}).
    prefix : str
        Prepended to the output columns (``""`` or ending with ``_ - . : /``).
    **options
        ``explain``, ``slice_rows``, ``ngram_sizes``, ``ngram_weights``, ``claim_support_threshold``,
        ``chunk_relevance_threshold`` and the column names, as in :func:`ragframe.evaluate`.

    Returns
    -------
    The same kind of frame with the new columns. Formula and null rules: ``docs/metrics.md``.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({{"question": ["q"], "answer": ["a"], "contexts": [["a"]], "ground_truth": ["a"]}})
    >>> "{name}" in score_{name}(df).columns
    True
    """
    return score


score_faithfulness = _single("faithfulness")
score_answer_relevance = _single("answer_relevance")
score_context_precision = _single("context_precision")
score_context_recall = _single("context_recall")
score_context_relevance = _single("context_relevance")
score_answer_correctness = _single("answer_correctness")
score_hallucination_rate = _single("hallucination_rate")
