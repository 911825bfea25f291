"""The seven heuristic (no-LLM) RAG metrics, composite score and pass/fail (``docs/metrics.md``).

Every metric is computed for all rows at once, in two stages. The text stage
(:class:`_TextBatch`, up to 100,000 rows at a time) collects every text the requested
metrics need (questions, answers, ground truths, context chunks and the sentences of
answers and ground truths), keeps each *distinct* text once and tokenises it once, on a
thread per core. Repeated contexts (real logs retrieve the same passages again and again)
are therefore tokenised once per chunk. The pair stage (:class:`_RowSlice`, ``batch_rows``
rows at a time, a thread per core) builds the n-gram term tables of its own texts, finds
the grams each compared pair of texts shares with one hash probe per n-gram size, and
reduces the pair values to rows with bincounts. Every sum over grams is of integer counts,
so a row's scores are bit-identical whatever the chunks, slices and other rows.

Nulls: a null ``question``/``answer`` is treated as ""; a null ``contexts`` list as []; a
null chunk as "". A null or empty ``ground_truth`` gives null ``context_recall`` and
``answer_correctness`` (and null ``*_passed``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TypeVar

import numpy as np
import polars as pl

from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.io.memory import trim_heap
from ragframe.kernels.text import (
    Common,
    TermIndex,
    common_entries_many,
    concat_ranges,
    first_positions,
    pair_overlap,
    pair_tfidf,
    pair_token_f1,
    sentences_expr,
    term_index,
    tokenize_ids,
)
from ragframe.schema import apply_to_frame, frame_kind

__all__ = [
    "HEURISTIC_METRICS",
    "DEFAULT_THRESHOLDS",
    "Evaluator",
    "evaluate",
    "score_faithfulness",
    "score_answer_relevance",
    "score_context_precision",
    "score_context_recall",
    "score_context_relevance",
    "score_answer_correctness",
    "score_hallucination_rate",
]

Frame = TypeVar("Frame")

#: The seven metrics, in the spec's order (``metrics=None`` means all of them).
HEURISTIC_METRICS: tuple[str, ...] = (
    "faithfulness",
    "answer_relevance",
    "context_precision",
    "context_recall",
    "context_relevance",
    "answer_correctness",
    "hallucination_rate",
)
DEFAULT_THRESHOLDS: dict[str, float] = {
    "faithfulness": 0.7,
    "answer_relevance": 0.7,
    "context_precision": 0.7,
    "context_recall": 0.7,
    "context_relevance": 0.6,
    "answer_correctness": 0.6,
    "hallucination_rate": 0.7,
}
#: Which text columns each metric reads.
METRIC_INPUTS: dict[str, tuple[str, ...]] = {
    "faithfulness": ("answer", "contexts"),
    "answer_relevance": ("question", "answer"),
    "context_precision": ("question", "contexts"),
    "context_recall": ("ground_truth", "contexts"),
    "context_relevance": ("question", "contexts"),
    "answer_correctness": ("ground_truth", "answer"),
    "hallucination_rate": ("answer", "contexts"),
}
#: Rows whose distinct texts are tokenised and indexed together (the text stage's chunk).
_TEXT_ROWS = 100_000
_SIGNAL = pl.Struct({"id": pl.String, "severity": pl.String, "message": pl.String, "evidence": pl.String})


@dataclass(frozen=True)
class Options:
    """Tunable options of the heuristic metrics (spec defaults)."""

    ngram_sizes: tuple[int, ...] = (1, 2)
    ngram_weights: tuple[float, ...] = (0.7, 0.3)
    claim_support_threshold: float = 0.15
    chunk_relevance_threshold: float = 0.2
    thresholds: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))


def _options(function: str, thresholds: Mapping[str, float] | None = None, **options: Any) -> Options:
    known = {"ngram_sizes", "ngram_weights", "claim_support_threshold", "chunk_relevance_threshold"}
    unknown = set(options) - known
    if unknown:
        raise InvalidParameterError(f"{function}: unknown option(s) {sorted(unknown)}; choose from {sorted(known)}")
    sizes = tuple(options.get("ngram_sizes", (1, 2)))
    if not sizes or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 for n in sizes):
        raise InvalidParameterError(f"{function}: ngram_sizes must be a non-empty list of ints >= 1, found {sizes!r}")
    weights = tuple(options.get("ngram_weights", (0.7, 0.3)))
    for w in weights:
        if isinstance(w, bool) or not isinstance(w, (int, float, np.number)) or not np.isfinite(w):
            raise InvalidParameterError(f"{function}: ngram_weights must be finite numbers, found {weights!r}")
    merged = dict(DEFAULT_THRESHOLDS)
    for name, value in (thresholds or {}).items():
        if name not in DEFAULT_THRESHOLDS:
            raise InvalidParameterError(f"{function}: thresholds names unknown metric {name!r}")
        merged[name] = _number(value, f"thresholds[{name!r}]", function)
    return Options(
        ngram_sizes=tuple(int(n) for n in sizes),
        ngram_weights=tuple(float(w) for w in weights),
        claim_support_threshold=_number(
            options.get("claim_support_threshold", 0.15), "claim_support_threshold", function
        ),
        chunk_relevance_threshold=_number(
            options.get("chunk_relevance_threshold", 0.2), "chunk_relevance_threshold", function
        ),
        thresholds=merged,
    )


def _number(value: Any, name: str, function: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not np.isfinite(value):
        raise InvalidParameterError(f"{function}: {name} must be a finite number, found {value!r}")
    return float(value)


# ----------------------------------------------------------------------------- the text batch


class _PairCache:
    """Pair similarities over shared term tables, cached per pair list (one per row slice)."""

    def __init__(self, terms: Mapping[int, TermIndex]) -> None:
        self._terms = terms
        self._pairs: dict[tuple[str, int, str], np.ndarray] = {}
        self._common: dict[tuple[int, str], Common] = {}
        self._planned: dict[int, dict[str, tuple[np.ndarray, np.ndarray]]] = {}

    def plan(self, tag: str, left: np.ndarray, right: np.ndarray, sizes: Iterable[int]) -> None:
        """Announce a pair list the metrics will compare with n-grams of ``sizes``.

        The shared grams of every announced list of one n are found in one probe (one hash
        set of the probed texts' grams instead of one per list).
        """
        for n in sizes:
            self._planned.setdefault(n, {})[tag] = (left, right)

    def pair_values(self, kind: str, n: int, left: np.ndarray, right: np.ndarray, tag: str) -> np.ndarray:
        """Similarity of each (left[i], right[i]) text pair; ``tag`` names the pair list for reuse.

        Metrics that compare the same pairs (faithfulness and hallucination_rate both need the
        unigram overlap of every answer sentence with every context) share one computation.
        """
        key = (kind, n, tag)
        if key not in self._pairs:
            if left.size == 0:
                self._pairs[key] = np.zeros(0)
                return self._pairs[key]
            if (n, tag) not in self._common:
                todo = {t: p for t, p in self._planned.get(n, {}).items() if (n, t) not in self._common and p[0].size}
                todo[tag] = (left, right)
                for t, common in zip(todo, common_entries_many(self._terms[n], list(todo.values()))):
                    self._common[(n, t)] = common
            common = self._common[(n, tag)]
            kernel = {"overlap": pair_overlap, "tfidf": pair_tfidf, "f1": pair_token_f1}[kind]
            self._pairs[key] = kernel(self._terms[n], left, right, common)
        return self._pairs[key]

    def weighted(self, left: np.ndarray, right: np.ndarray, opts: Options, tag: str) -> np.ndarray:
        """weighted_ngram_overlap of each pair (spec: a missing weight counts as 1, total 0 gives 0)."""
        weights = [opts.ngram_weights[i] if i < len(opts.ngram_weights) else 1.0 for i in range(len(opts.ngram_sizes))]
        total = 0.0
        for w in weights:
            total += w
        acc = np.zeros(left.size)
        for size, w in zip(opts.ngram_sizes, weights):
            acc = acc + w * self.pair_values("overlap", size, left, right, tag)
        if total == 0:
            return np.zeros(left.size)
        return acc / total


def _starts(lengths: np.ndarray) -> np.ndarray:
    starts = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    return starts


class _TextBatch:
    """The text stage of a chunk of rows: distinct texts tokenised once, n-gram term tables.

    Every text the metrics read (questions, answers, ground truths, context chunks, and the
    sentences of answers and ground truths) is kept once per chunk however often it occurs,
    tokenised once (on a thread per core) and indexed once per n-gram size. The pair stage
    then works on row slices of the chunk (:meth:`rows`), all sharing these tables.
    """

    def __init__(
        self,
        view: pl.DataFrame,
        columns: Mapping[str, str],
        needed: set[str],
        gram_roles: Mapping[int, set[str]],
        function: str,
    ) -> None:
        self.n = view.height
        pools: list[tuple[str, pl.Series]] = []
        self.row_text: dict[str, pl.Series] = {}
        for role in ("question", "answer", "ground_truth"):
            if role in needed:
                series = _string_column(view, columns[role], function)
                self.row_text[role] = series
                pools.append((role, series.fill_null("")))
        self.ctx_count = np.zeros(self.n, dtype=np.int64)
        if "contexts" in needed:
            ctx = _contexts_column(view, columns["contexts"], function)
            self.ctx_count = ctx.list.len().fill_null(0).to_numpy().astype(np.int64)
            pools.append(("contexts", ctx.explode(empty_as_null=False, keep_nulls=False).fill_null("")))
        self.ctx_start = _starts(self.ctx_count)
        self.sentences: dict[str, tuple[np.ndarray, pl.Series]] = {}  # role -> (row offsets, sentences)
        for role in ("answer", "ground_truth"):
            if role in self.row_text and f"{role}_sentences" in needed:
                lists = pl.select(sentences_expr(pl.lit(self.row_text[role]))).to_series()
                flat = lists.explode(empty_as_null=False, keep_nulls=False)
                self.sentences[role] = (_starts(lists.list.len().to_numpy().astype(np.int64)), flat)
                pools.append((f"{role}_sentences", flat))
        pool = pl.concat([series for _, series in pools]).rename("text") if pools else pl.Series("text", [], pl.String)
        # distinct texts, numbered in order of first appearance (exact: a dictionary, not hashes)
        codes = pool.cast(pl.Categorical(pl.Categories.random())).to_physical().to_numpy().astype(np.int64)
        distinct = pool.gather(first_positions(codes, int(codes.max()) + 1 if codes.size else 0))
        del pool
        cores = os.cpu_count() or 1
        self.tokens, self.token_count, self.vocabulary = tokenize_ids(distinct, parts=cores)
        del distinct
        self.token_start = _starts(self.token_count)
        self.gram_roles = gram_roles
        self._role_ids: dict[str, np.ndarray] = {}  # text ids of each role, in pool order
        at = 0
        for role, series in pools:
            self._role_ids[role] = codes[at : at + series.len()]
            at += series.len()

    def rows(self, r0: int, r1: int) -> _RowSlice:
        """The rows r0 .. r1 - 1, for the pair stage."""
        return _RowSlice(self, r0, r1)


class _RowSlice(_PairCache):
    """Rows r0 .. r1 - 1 of a :class:`_TextBatch`: their texts' term tables and own pair caches.

    The term tables of a slice cover only its own texts (renumbered 0 .. m-1), so they stay
    small enough for the pair stage's random lookups to hit the cache.
    """

    def __init__(self, batch: _TextBatch, r0: int, r1: int) -> None:
        self.n = r1 - r0
        self.row_text = {role: series.slice(r0, self.n) for role, series in batch.row_text.items()}
        self.ctx_count = batch.ctx_count[r0:r1]
        c0, c1 = int(batch.ctx_start[r0]), int(batch.ctx_start[r1])
        self.ctx_row = np.repeat(np.arange(self.n, dtype=np.int64), self.ctx_count)
        self.ctx_index = np.arange(c1 - c0) - (batch.ctx_start[r0:r1] - c0)[self.ctx_row]
        global_ids: dict[str, np.ndarray] = {}
        for role in ("question", "answer", "ground_truth"):
            if role in batch._role_ids:
                global_ids[role] = batch._role_ids[role][r0:r1]
        if "contexts" in batch._role_ids:
            global_ids["contexts"] = batch._role_ids["contexts"][c0:c1]
        self.sentences: dict[str, tuple[np.ndarray, np.ndarray, pl.Series]] = {}
        for role, (starts, flat) in batch.sentences.items():
            s0, s1 = int(starts[r0]), int(starts[r1])
            counts = np.diff(starts[r0 : r1 + 1])
            rows = np.repeat(np.arange(self.n, dtype=np.int64), counts)
            index = np.arange(s1 - s0) - (starts[r0:r1] - s0)[rows]
            self.sentences[role] = (rows, index, flat.slice(s0, s1 - s0))
            global_ids[f"{role}_sentences"] = batch._role_ids[f"{role}_sentences"][s0:s1]
        # the slice's own texts, renumbered 0 .. m-1
        texts = np.unique(np.concatenate(list(global_ids.values()))) if global_ids else np.zeros(0, np.int64)
        self._role_ids = {role: np.searchsorted(texts, ids) for role, ids in global_ids.items()}
        lengths = batch.token_count[texts]
        terms: dict[int, TermIndex] = {}
        for n, roles in batch.gram_roles.items():
            used = np.zeros(texts.size, dtype=bool)
            for role in roles & set(self._role_ids):
                used[self._role_ids[role]] = True
            kept = np.where(used, lengths, 0)  # each size indexes only the texts compared with it
            tokens = batch.tokens[concat_ranges(batch.token_start[texts], kept)]
            terms[n] = term_index(tokens, kept, batch.vocabulary, n)
        super().__init__(terms)

    def ids(self, role: str) -> np.ndarray:
        """Slice-local text id of each text of a role (question, answer, ground_truth, contexts, ...)."""
        return self._role_ids[role]


def _string_column(view: pl.DataFrame, column: str, function: str) -> pl.Series:
    series = view.get_column(column)
    if series.dtype == pl.Null:
        return series.cast(pl.String)
    if series.dtype != pl.String:
        raise SchemaError("wrong dtype", function=function, column=column, expected="str", found=str(series.dtype))
    return series


def _contexts_column(view: pl.DataFrame, column: str, function: str) -> pl.Series:
    series = view.get_column(column)
    if series.dtype == pl.Null:
        return series.cast(pl.List(pl.String))
    if not isinstance(series.dtype, pl.List) or series.dtype.inner not in (pl.String, pl.Null):
        raise SchemaError(
            "wrong dtype", function=function, column=column, expected="list[str]", found=str(series.dtype)
        )
    return series.cast(pl.List(pl.String))


# ----------------------------------------------------------------------------- kernels per metric


def _group_max(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Max of each consecutive group of ``lengths`` values (0 for an empty group)."""
    out = np.zeros(lengths.size)
    nonempty = lengths > 0
    if values.size:
        heads = (np.cumsum(lengths) - lengths)[nonempty]
        out[nonempty] = np.maximum.reduceat(values, heads)
    return out


def _mean_by_row(rows: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(rows, minlength=n).astype(np.float64)
    sums = np.bincount(rows, weights=values, minlength=n)
    return np.divide(sums, counts, out=np.zeros(n), where=counts > 0), counts


@dataclass
class _Signals:
    """Flat signal rows: (row, order, id, severity, message, evidence)."""

    rows: list[np.ndarray] = field(default_factory=list)
    frames: list[pl.DataFrame] = field(default_factory=list)

    def add(
        self,
        rows: np.ndarray,
        order: np.ndarray,
        ids: list[str] | pl.Series,
        severity: str,
        messages: list[str] | pl.Series,
        evidence: pl.Series | None,
    ) -> None:
        n = rows.size
        self.frames.append(
            pl.DataFrame(
                {
                    "row": rows.astype(np.int64),
                    "order": order.astype(np.int64),
                    "id": pl.Series(ids, dtype=pl.String),
                    "severity": pl.Series([severity] * n, dtype=pl.String),
                    "message": pl.Series(messages, dtype=pl.String),
                    "evidence": evidence if evidence is not None else pl.Series([None] * n, dtype=pl.String),
                }
            )
        )

    def column(self, name: str, n: int) -> pl.Series:
        if not self.frames:
            return pl.Series(name, [[] for _ in range(n)], dtype=pl.List(_SIGNAL))
        flat = pl.concat(self.frames).sort("row", "order")
        grouped = flat.group_by("row").agg(pl.struct("id", "severity", "message", "evidence").alias("s"))
        full = pl.DataFrame({"row": np.arange(n, dtype=np.int64)}).join(
            grouped, on="row", how="left", maintain_order="left"
        )
        return full.get_column("s").fill_null(pl.lit([], dtype=pl.List(_SIGNAL))).cast(pl.List(_SIGNAL)).rename(name)


def _row_warnings(rows: np.ndarray, signal_id: str, template: str, values: np.ndarray) -> _Signals:
    """One ``warning`` per row of ``rows``; ``template`` gets each value with 3 decimals."""
    sig = _Signals()
    messages = [template.format(v) for v in fixed3(values)]
    sig.add(rows, np.zeros(rows.size), [signal_id] * rows.size, "warning", messages, None)
    return sig


def _sentence_signals(
    sentences: tuple[np.ndarray, np.ndarray, pl.Series],
    low: np.ndarray,
    prefix: str,
    severity: str,
    template: str,
    values: np.ndarray,
) -> _Signals:
    """One signal per flagged sentence, id ``<prefix>-<sentence index>``, evidence = the sentence."""
    rows, index, text = sentences
    sig = _Signals()
    messages = [template.format(v) for v in fixed3(values[low])]
    sig.add(rows[low], index[low], [f"{prefix}-{i}" for i in index[low]], severity, messages, text.gather(low))
    return sig


def fixed3(values: Iterable[float]) -> list[str]:
    """Format numbers with 3 decimals, an exact half rounded up (JavaScript ``toFixed(3)``).

    Only used for signal messages (one call per signal, not per row).

    Examples
    --------
    >>> fixed3([0.0625, 0.1234, 1.0])
    ['0.063', '0.123', '1.000']
    """
    step = Decimal("0.001")
    return [str(Decimal(float(v)).quantize(step, rounding=ROUND_HALF_UP)) for v in values]


def _sentence_context_pairs(batch: _RowSlice, role: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (sentence, context) pair of each row, grouped by sentence.

    Returns the number of contexts of each sentence's row, and the text ids of both sides.
    """
    s_rows, _, _ = batch.sentences[role]
    per_sentence = batch.ctx_count[s_rows]
    ctx_start = np.cumsum(batch.ctx_count) - batch.ctx_count
    s_ids = np.repeat(batch.ids(f"{role}_sentences"), per_sentence)
    c_ids = batch.ids("contexts")[concat_ranges(ctx_start[s_rows], per_sentence)]
    return per_sentence, s_ids, c_ids


def _compute(batch: _RowSlice, metrics: Sequence[str], opts: Options, explain: bool) -> dict[str, Any]:
    n = batch.n
    out: dict[str, Any] = {}
    signals: dict[str, _Signals] = {}
    has_ctx = batch.ctx_count > 0
    weighted_sizes = set(opts.ngram_sizes)
    if "faithfulness" in metrics or "hallucination_rate" in metrics:
        per_sentence, sid, cid = _sentence_context_pairs(batch, "answer")
        sizes = (weighted_sizes if "faithfulness" in metrics else set()) | (
            {1} if "hallucination_rate" in metrics else set()
        )
        batch.plan("answer_sentences-contexts", sid, cid, sizes)
    if "context_precision" in metrics or "context_relevance" in metrics:
        q_of_chunk = batch.ids("question")[batch.ctx_row]
        c_ids = batch.ids("contexts")
        sizes = ({1} if "context_precision" in metrics else set()) | (
            weighted_sizes if "context_relevance" in metrics else set()
        )
        batch.plan("question-contexts", q_of_chunk, c_ids, sizes)
    if "context_recall" in metrics:
        g_per_sentence, gid, g_cid = _sentence_context_pairs(batch, "ground_truth")
        batch.plan("ground_truth_sentences-contexts", gid, g_cid, {1})
    if "answer_relevance" in metrics:
        batch.plan("question-answer", batch.ids("question"), batch.ids("answer"), {1})
    if "answer_correctness" in metrics:
        batch.plan("ground_truth-answer", batch.ids("ground_truth"), batch.ids("answer"), {1})

    if "faithfulness" in metrics or "hallucination_rate" in metrics:
        s_rows = batch.sentences["answer"][0]
        if "faithfulness" in metrics:
            best = _group_max(batch.weighted(sid, cid, opts, "answer_sentences-contexts"), per_sentence)
            mean, count = _mean_by_row(s_rows, best, n)
            out["faithfulness"] = np.where(has_ctx & (count > 0), mean, 0.0)
            if explain:
                low = np.flatnonzero((best < 0.3) & has_ctx[s_rows])
                sig = _sentence_signals(
                    batch.sentences["answer"],
                    low,
                    "faithfulness-low-support",
                    "warning",
                    "Answer sentence has low context support (overlap={}).",
                    best,
                )
                signals["faithfulness"] = sig
        if "hallucination_rate" in metrics:
            best = _group_max(batch.pair_values("overlap", 1, sid, cid, "answer_sentences-contexts"), per_sentence)
            unsupported = best < opts.claim_support_threshold
            bad, count = _mean_by_row(s_rows, unsupported.astype(np.float64), n)
            out["hallucination_rate"] = np.where(has_ctx, np.where(count > 0, 1.0 - bad, 1.0), 0.0)
            if explain:
                low = np.flatnonzero(unsupported & has_ctx[s_rows])
                sig = _sentence_signals(
                    batch.sentences["answer"],
                    low,
                    "hallucination-unsupported",
                    "critical",
                    "Answer sentence appears unsupported by any context (max overlap={}).",
                    best,
                )
                signals["hallucination_rate"] = sig

    if "answer_relevance" in metrics:
        q = batch.ids("question")
        a = batch.ids("answer")
        score = (
            batch.pair_values("tfidf", 1, q, a, "question-answer")
            + batch.pair_values("overlap", 1, q, a, "question-answer")
        ) / 2
        out["answer_relevance"] = score
        if explain:
            low = np.flatnonzero(score < 0.5)
            sig = _row_warnings(
                low, "answer-relevance-low", "Answer may not be relevant to the question (score={}).", score[low]
            )
            signals["answer_relevance"] = sig

    if "context_precision" in metrics or "context_relevance" in metrics:
        if "context_precision" in metrics:
            sim = batch.pair_values("tfidf", 1, q_of_chunk, c_ids, "question-contexts")
            mean, _ = _mean_by_row(batch.ctx_row, sim, n)
            out["context_precision"] = np.where(has_ctx, mean, 0.0)
            if explain:
                low = sim < 0.3
                listing = (
                    pl.DataFrame({"row": batch.ctx_row[low], "i": batch.ctx_index[low]})
                    .group_by("row", maintain_order=True)
                    .agg(pl.col("i").cast(pl.String).str.join(", ").alias("list"))
                    .sort("row")
                )
                rows = listing.get_column("row").to_numpy()
                sig = _Signals()
                sig.add(
                    rows,
                    np.zeros(rows.size),
                    ["context-precision-low-relevance-chunks"] * rows.size,
                    "info",
                    ("Context chunk(s) with low relevance (< 0.3): indices [" + listing.get_column("list") + "]."),
                    None,
                )
                signals["context_precision"] = sig
        if "context_relevance" in metrics:
            relevant = batch.weighted(q_of_chunk, c_ids, opts, "question-contexts") >= opts.chunk_relevance_threshold
            share, _ = _mean_by_row(batch.ctx_row, relevant.astype(np.float64), n)
            out["context_relevance"] = np.where(has_ctx, share, 0.0)

    if "context_recall" in metrics or "answer_correctness" in metrics:
        gt = batch.row_text["ground_truth"]
        missing = (gt.is_null() | (gt == "")).to_numpy()
        if "context_recall" in metrics:
            g_rows, _, _ = batch.sentences["ground_truth"]
            best = _group_max(
                batch.pair_values("overlap", 1, gid, g_cid, "ground_truth_sentences-contexts"), g_per_sentence
            )
            share, count = _mean_by_row(g_rows, (best >= 0.3).astype(np.float64), n)
            value = np.where(has_ctx & (count > 0), share, 0.0)
            out["context_recall"] = np.where(missing, np.nan, value)
        if "answer_correctness" in metrics:
            g = batch.ids("ground_truth")
            a = batch.ids("answer")
            score = 0.7 * batch.pair_values("f1", 1, g, a, "ground_truth-answer") + 0.3 * batch.pair_values(
                "overlap", 1, g, a, "ground_truth-answer"
            )
            out["answer_correctness"] = np.where(missing, np.nan, score)
            if explain:
                low = np.flatnonzero(~missing & (score < 0.5))
                sig = _row_warnings(low, "answer-correctness-low", "Answer correctness is low (score={}).", score[low])
                signals["answer_correctness"] = sig
    out["_signals"] = signals
    return out


def _needed(metrics: Sequence[str]) -> set[str]:
    roles: set[str] = set()
    for name in metrics:
        roles.update(METRIC_INPUTS[name])
    if {"faithfulness", "hallucination_rate"} & set(metrics):
        roles.add("answer_sentences")
    if "context_recall" in metrics:
        roles.add("ground_truth_sentences")
    return roles


def _gram_roles(metrics: Sequence[str], opts: Options) -> dict[int, set[str]]:
    """The text roles each n-gram size compares (each size indexes only those texts)."""
    chosen = set(metrics)
    roles: dict[int, set[str]] = {}

    def add(n: int, *names: str) -> None:
        roles.setdefault(n, set()).update(names)

    for n in opts.ngram_sizes:
        if "faithfulness" in chosen:
            add(n, "answer_sentences", "contexts")
        if "context_relevance" in chosen:
            add(n, "question", "contexts")
    if "hallucination_rate" in chosen:
        add(1, "answer_sentences", "contexts")
    if "answer_relevance" in chosen:
        add(1, "question", "answer")
    if "context_precision" in chosen:
        add(1, "question", "contexts")
    if "context_recall" in chosen:
        add(1, "ground_truth_sentences", "contexts")
    if "answer_correctness" in chosen:
        add(1, "ground_truth", "answer")
    return roles


def _score_frame(
    view: pl.DataFrame,
    *,
    metrics: Sequence[str],
    columns: Mapping[str, str],
    opts: Options,
    explain: bool,
    composite: tuple[Mapping[str, float], float] | None,
    function: str,
    slice_rows: int,
) -> pl.DataFrame:
    """Score one chunk: its text stage once, then the pair stage in row slices on a thread per core."""
    batch = _TextBatch(view, columns, _needed(metrics), _gram_roles(metrics, opts), function)

    def one(bounds: tuple[int, int]) -> pl.DataFrame:
        part = batch.rows(*bounds)
        return _score_columns(part.n, _compute(part, metrics, opts, explain), metrics, opts, explain, composite)

    pieces = [(start, min(start + slice_rows, view.height)) for start in range(0, view.height, slice_rows)]
    if len(pieces) <= 1:
        return one((0, view.height))
    # rows are independent: the slices bound the pair stage's memory and run on a thread per core
    with ThreadPoolExecutor(max_workers=min(len(pieces), os.cpu_count() or 1)) as pool:
        return pl.concat(list(pool.map(one, pieces)))


def _score_columns(
    n: int,
    values: dict[str, Any],
    metrics: Sequence[str],
    opts: Options,
    explain: bool,
    composite: tuple[Mapping[str, float], float] | None,
) -> pl.DataFrame:
    """The output columns of some rows from their metric values."""
    out: list[pl.Series] = []
    for name in metrics:
        score = pl.Series(name, values[name], dtype=pl.Float64, nan_to_null=True)
        out.append(score)
        out.append((score >= opts.thresholds[name]).rename(f"{name}_passed"))
        if explain:
            sig = values["_signals"].get(name, _Signals())
            out.append(sig.column(f"{name}_signals", n))
    if composite is not None:
        weights, composite_threshold = composite
        num = np.zeros(n)
        den = np.zeros(n)
        any_failed = np.zeros(n, dtype=bool)
        for name in metrics:
            score = values[name]
            ok = ~np.isnan(score)
            w = float(weights.get(name, 1.0))
            num = num + np.where(ok, w * np.nan_to_num(score), 0.0)
            den = den + np.where(ok, w, 0.0)
            any_failed |= ok & ~(np.nan_to_num(score) >= opts.thresholds[name])
        comp = np.divide(num, den, out=np.full(n, np.nan), where=den != 0)
        comp_series = pl.Series("composite_score", comp, dtype=pl.Float64, nan_to_null=True)
        passed = ~any_failed & ~np.isnan(comp) & (np.nan_to_num(comp) >= composite_threshold)
        out += [comp_series, pl.Series("passed", passed, dtype=pl.Boolean)]
    return pl.DataFrame(out, height=n) if out else pl.DataFrame(height=n)


# ----------------------------------------------------------------------------- public functions


def _columns(question: str, answer: str, contexts: str, ground_truth: str) -> dict[str, str]:
    return {"question": question, "answer": answer, "contexts": contexts, "ground_truth": ground_truth}


def _check_metrics(metrics: Iterable[str] | str | None, function: str) -> list[str]:
    if metrics is None:
        return list(HEURISTIC_METRICS)
    chosen = [metrics] if isinstance(metrics, str) else list(metrics)
    if not chosen:
        raise InvalidParameterError(f"{function}: metrics is empty; choose from {list(HEURISTIC_METRICS)}")
    for name in chosen:
        if name not in HEURISTIC_METRICS:
            raise InvalidParameterError(f"{function}: unknown metric {name!r}; choose from {list(HEURISTIC_METRICS)}")
    return [m for m in HEURISTIC_METRICS if m in chosen]


def _run(
    df: Any,
    *,
    metrics: list[str],
    columns: dict[str, str],
    opts: Options,
    explain: bool,
    composite: tuple[Mapping[str, float], float] | None,
    function: str,
    batch_rows: int = 10_000,
) -> Any:
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer)) or batch_rows < 1:
        raise InvalidParameterError(f"{function}: batch_rows must be an int >= 1, found {batch_rows!r}")
    inputs: list[str] = []
    for name in metrics:
        for role in METRIC_INPUTS[name]:
            if columns[role] not in inputs:
                inputs.append(columns[role])
    frame_kind(df, function)

    def score(view: pl.DataFrame) -> pl.DataFrame:
        return _score_frame(
            view,
            metrics=metrics,
            columns=columns,
            opts=opts,
            explain=explain,
            composite=composite,
            function=function,
            slice_rows=int(batch_rows),
        )

    def compute(view: pl.DataFrame) -> pl.DataFrame:
        # The text stage (distinct texts, tokens, term tables) covers up to _TEXT_ROWS rows at a
        # time: repeated passages are tokenised once per chunk, and memory stays bounded.
        parts = []
        for start in range(0, max(view.height, 1), _TEXT_ROWS):
            parts.append(score(view.slice(start, _TEXT_ROWS)))
            if view.height >= batch_rows:
                trim_heap()  # give freed memory back to the OS after each chunk (see ragframe.io.memory)
        return parts[0] if len(parts) == 1 else pl.concat(parts)

    return apply_to_frame(df, compute, columns=inputs, function=function)


def evaluate(
    df: Frame,
    /,
    metrics: Iterable[str] | None = None,
    *,
    thresholds: Mapping[str, float] | None = None,
    weights: Mapping[str, float] | None = None,
    composite_threshold: float = 0.6,
    explain: bool = False,
    question: str = "question",
    answer: str = "answer",
    contexts: str = "contexts",
    ground_truth: str = "ground_truth",
    batch_rows: int = 10_000,
    **options: Any,
) -> Frame:
    """Score several heuristic metrics at once, with ``composite_score`` and ``passed``.

    Every text column is tokenised once per call and the token, n-gram and pair tables
    are shared by all metrics.

    Parameters
    ----------
    df : frame
        Rows with ``question``, ``answer``, ``contexts`` (list[str]), ``ground_truth``.
    metrics : list of str, optional
        Names from :data:`HEURISTIC_METRICS`; all seven by default.
    thresholds : dict, optional
        Per-metric pass thresholds overriding :data:`DEFAULT_THRESHOLDS`.
    weights : dict, optional
        Per-metric weights of the composite score (default 1.0).
    composite_threshold : float
        ``passed`` needs ``composite_score >= composite_threshold``.
    explain : bool
        Also add ``<metric>_signals`` (list of struct{id, severity, message, evidence}).
    batch_rows : int
        Frames longer than this are scored in slices of this many rows (bounds memory;
        results do not depend on it).
    **options
        ``ngram_sizes``, ``ngram_weights``, ``claim_support_threshold``,
        ``chunk_relevance_threshold``.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"question": ["What is the capital of France?"],
    ...                    "answer": ["Paris is the capital of France."],
    ...                    "contexts": [["Paris is the capital and largest city of France."]],
    ...                    "ground_truth": ["Paris"]})
    >>> out = evaluate(df, metrics=["faithfulness", "answer_correctness"])
    >>> round(out["faithfulness"][0], 4), out["passed"][0]
    (0.6, False)
    """
    function = "evaluate"
    chosen = _check_metrics(metrics, function)
    opts = _options(function, thresholds, **options)
    for name, w in (weights or {}).items():
        if name not in DEFAULT_THRESHOLDS:
            raise InvalidParameterError(f"{function}: weights names unknown metric {name!r}")
        _number(w, f"weights[{name!r}]", function)
    _number(composite_threshold, "composite_threshold", function)
    return _run(
        df,
        metrics=chosen,
        columns=_columns(question, answer, contexts, ground_truth),
        opts=opts,
        explain=explain,
        composite=(dict(weights or {}), float(composite_threshold)),
        function=function,
        batch_rows=batch_rows,
    )


class Evaluator:
    """A configured :func:`evaluate`: defaults set once, overridable per call.

    Examples
    --------
    >>> import polars as pl
    >>> ev = Evaluator(metrics=["answer_relevance"], thresholds={"answer_relevance": 0.1})
    >>> df = pl.DataFrame({"question": ["cats?"], "answer": ["cats purr"]})
    >>> ev(df)["answer_relevance_passed"][0]
    True
    """

    def __init__(self, metrics: Iterable[str] | None = None, **defaults: Any) -> None:
        self.defaults = {"metrics": None if metrics is None else list(metrics), **defaults}
        evaluate(
            pl.DataFrame(
                schema={
                    "question": pl.String,
                    "answer": pl.String,
                    "contexts": pl.List(pl.String),
                    "ground_truth": pl.String,
                }
            ),
            **{**self.defaults, **_renamed_empty(defaults)},
        )

    def __call__(self, df: Frame, /, **overrides: Any) -> Frame:
        """Evaluate ``df`` with the stored defaults, ``overrides`` taking precedence."""
        return evaluate(df, **{**self.defaults, **overrides})


def _renamed_empty(defaults: Mapping[str, Any]) -> dict[str, Any]:
    # the validation run uses canonical column names on an empty frame
    return {
        k: v
        for k, v in {
            "question": "question",
            "answer": "answer",
            "contexts": "contexts",
            "ground_truth": "ground_truth",
        }.items()
        if k in defaults
    }


def _single(name: str):
    inputs = METRIC_INPUTS[name]

    def score(
        df: Frame,
        /,
        *,
        threshold: float | None = None,
        explain: bool = False,
        question: str = "question",
        answer: str = "answer",
        contexts: str = "contexts",
        ground_truth: str = "ground_truth",
        batch_rows: int = 10_000,
        **options: Any,
    ) -> Frame:
        function = f"score_{name}"
        thresholds = None if threshold is None else {name: threshold}
        opts = _options(function, thresholds, **options)
        return _run(
            df,
            metrics=[name],
            columns=_columns(question, answer, contexts, ground_truth),
            opts=opts,
            explain=explain,
            composite=None,
            function=function,
            batch_rows=batch_rows,
        )

    score.__name__ = f"score_{name}"
    score.__qualname__ = score.__name__
    score.__doc__ = f"""Append ``{name}`` and ``{name}_passed`` (and ``{name}_signals`` with ``explain=True``).

    Reads {", ".join(f"``{c}``" for c in inputs)} (names overridable by keyword). Default
    threshold {DEFAULT_THRESHOLDS[name]}; ``threshold=`` overrides it. Options as in
    :func:`evaluate`. Semantics: ``docs/metrics.md``.

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
