"""The text engine of the heuristic metrics: distinct texts tokenised once, shared n-gram tables.

The text stage (:class:`TextBatch`, up to 100,000 rows at a time) collects every text the
requested metrics need (questions, answers, ground truths, context chunks and the sentences of
answers and ground truths), keeps each *distinct* text once and tokenises it once, on a thread
per core. Repeated contexts (real logs retrieve the same passages again and again) are therefore
tokenised once per chunk, and where most of what an n-gram size compares is such shared texts,
their grams are sorted once per chunk too (:meth:`TextBatch._term_tables`). The pair stage
(:class:`RowSlice`, ``batch_rows`` rows at a time) takes the n-gram term tables of its own texts
from those (or builds them), finds the grams each compared pair of texts shares with one hash
probe per n-gram size, and reduces pair values to rows with bincounts.
Every sum over grams is of integer counts, so a row's scores are bit-identical whatever the
chunks, slices and other rows.

Pair lists are named by the two text roles they compare (``"answer_sentences-contexts"``; a
``short_`` sentence role holds only the sentences of fewer than two tokens, see :data:`SHORT`);
metrics announce the lists and n-gram sizes they need (:meth:`PairCache.plan`) and read the
similarities (:meth:`PairCache.pair_values`), so metrics comparing the same pairs share one
computation.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from importlib import resources
from typing import Any

import numpy as np
import polars as pl

from ragframe.concurrency import thread_count
from ragframe.exceptions import SchemaError
from ragframe.kernels.text import (
    SEED_RULES,
    SENTENCE_MARK,
    Common,
    TermIndex,
    TextRules,
    common_entries_many,
    concat_ranges,
    distinct_codes,
    gram_span,
    group_sums,
    narrow_counts,
    pair_containment,
    pair_log_cosine,
    pair_overlap,
    pair_tfidf,
    pair_token_f1,
    take_texts,
    term_index,
    tokenize_vocabulary,
)
from ragframe.schema import check_no_null_inside

__all__ = [
    "TEXT_ROWS",
    "CONTENT",
    "SHORT",
    "stop_words",
    "PairCache",
    "TextBatch",
    "SliceTexts",
    "RowSlice",
    "index_texts",
    "Signals",
    "group_max",
    "mean_by_row",
    "row_warnings",
    "sentence_signals",
    "fixed3",
    "chunk_signals",
    "pair_roles",
]

#: Rows whose distinct texts are tokenised and indexed together (the text stage's chunk).
TEXT_ROWS = 100_000
#: Tokens per piece of a batch's term tables (:meth:`TextBatch._index_in_parts`).
PART_TOKENS = 1 << 20
#: Share of a size's tokens (at least) in texts of several rows for the batch to build its term table
#: (:meth:`TextBatch._term_tables`). Measured on a Zipf log (a context in about 3 slices of a chunk):
#: bigrams (97 % contexts) and content words save CPU with a table; unigrams (2 % contexts there)
#: do not, and their table would hold memory for nothing.
SHARED_TABLE = 0.5
#: The "n-gram size" of the content-word unigram index (stop words left out).
CONTENT = -1
#: Prefix of a sentence role restricted to its sentences of fewer than two tokens
#: (``"short_answer_sentences"``): the ones without a bigram, which only unigrams can compare.
SHORT = "short_"


@functools.cache
def stop_words() -> pl.Series:
    """The English stop words left out of content words: scikit-learn's list (318 words).

    Read from ``ragframe/data/stop_words_en.txt`` (a copy of scikit-learn's
    ``ENGLISH_STOP_WORDS``, BSD-3-Clause), so that scoring does not import scikit-learn.

    Examples
    --------
    >>> stop_words().len(), "the" in stop_words().to_list()
    (318, True)
    """
    text = (resources.files("ragframe") / "data" / "stop_words_en.txt").read_text(encoding="utf-8")
    words = [line for line in text.splitlines() if line and not line.startswith("#")]
    return pl.Series("stop", words, dtype=pl.String)


_SIGNAL = pl.Struct({"id": pl.String, "severity": pl.String, "message": pl.String, "evidence": pl.String})


def pair_roles(tag: str) -> tuple[str, str]:
    """The two text roles a pair list compares: ``"question-contexts"`` -> ("question", "contexts")."""
    left, right = tag.split("-")
    return left, right


class PairCache:
    """Pair similarities over shared term tables, cached per pair list (one per row slice)."""

    def __init__(self, terms: Mapping[int, TermIndex]) -> None:
        self._terms = terms
        self._pairs: dict[tuple[str, int, str], np.ndarray] = {}
        self._common: dict[tuple[int, str], Common] = {}
        self._planned: dict[int, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        self._memo: dict[str, Any] = {}

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
            kernel = {
                "overlap": pair_overlap,
                "containment": pair_containment,
                "cosine": pair_log_cosine,
                "tfidf": pair_tfidf,
                "f1": pair_token_f1,
            }[kind]
            self._pairs[key] = kernel(self._terms[n], left, right, common)
        return self._pairs[key]

    def memo(self, key: str, compute: Any) -> Any:
        """``compute()`` once per slice (a value several metrics read, such as a row mask)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def gram_count(self, n: int, ids: np.ndarray) -> np.ndarray:
        """Number of distinct n-grams (``CONTENT``: content words) of the texts ``ids``."""
        return self._terms[n].sizes[ids]

    def token_count(self, ids: np.ndarray) -> np.ndarray:
        """Number of tokens of the texts ``ids``."""
        return self._lengths[ids]

    def weighted(self, left: np.ndarray, right: np.ndarray, opts: Any, tag: str) -> np.ndarray:
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


def _group_counts(flags: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Number of True ``flags`` in each consecutive group of ``lengths`` flags.

    Examples
    --------
    >>> _group_counts(np.array([True, False, True, True]), np.array([2, 0, 2])).tolist()
    [1, 0, 2]
    """
    return group_sums(flags.view(np.uint8), _starts(lengths), np.int64)  # no copy of the flags


class TextBatch:
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
        rules: TextRules = SEED_RULES,
        gram_tags: Mapping[int, set[str]] | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.n = view.height
        self.gram_tags = gram_tags or {}  # the pair lists compared with each n-gram size, when known
        pools: list[tuple[str, pl.Series]] = []
        self.row_text: dict[str, pl.Series] = {}
        for role in ("question", "answer", "ground_truth"):
            if role in needed:
                series = string_column(view, columns[role])
                self.row_text[role] = series
                pools.append((role, series.fill_null("")))
        self.ctx_count = np.zeros(self.n, dtype=np.int64)
        if "contexts" in needed:
            ctx = contexts_column(view, columns["contexts"])
            self.ctx_count = ctx.list.len().fill_null(0).to_numpy().astype(np.int64)
            pools.append(("contexts", ctx.explode(empty_as_null=False, keep_nulls=False).fill_null("")))
        self.ctx_start = _starts(self.ctx_count)
        self.sentences: dict[str, tuple[np.ndarray, pl.Series]] = {}  # role -> (row offsets, sentences)
        split = [role for role in ("answer", "ground_truth") if role in self.row_text and f"{role}_sentences" in needed]
        # one select: polars splits the roles' texts on threads of its own
        sentence_lists = pl.select(rules.sentences(pl.lit(self.row_text[role])).alias(role) for role in split)
        for role in split:
            lists = sentence_lists.get_column(role)
            flat = lists.explode(empty_as_null=False, keep_nulls=False)
            self.sentences[role] = (_starts(lists.list.len().to_numpy().astype(np.int64)), flat)
            pools.append((f"{role}_sentences", flat))
        pool = pl.concat([series for _, series in pools]).rename("text") if pools else pl.Series("text", [], pl.String)
        # distinct texts, numbered in order of first appearance (exact: a dictionary, not hashes)
        cores = thread_count()
        codes, distinct = distinct_codes(pool, parts=cores)
        del pool
        self._role_ids: dict[str, np.ndarray] = {}  # text ids of each role, in pool order
        at = 0
        for role, series in pools:
            self._role_ids[role] = codes[at : at + series.len()]
            at += series.len()
        # answers and ground truths whose tokens are those of their sentences, end to end
        built = self._sentence_built(distinct, rules)
        direct = np.flatnonzero(~built)
        distinct = distinct.gather(direct) if built.any() else distinct
        # cleaned (NFC, zero-width characters: rules.clean) and tokenised once per distinct text
        tokens, count, self.vocabulary, words = tokenize_vocabulary(
            distinct, parts=cores, tokens=rules.tokens, clean=rules.clean
        )
        del distinct
        # content-word index (CONTENT): which vocabulary entries are stop words
        self.stop = words.is_in(stop_words().implode()).to_numpy() if CONTENT in gram_roles else None
        self.tokens = tokens  # the tokenised texts' tokens; :meth:`text_tokens` reads any text's
        self._token_ranges(built, direct, count)
        self.gram_roles = gram_roles
        self.term_tables = self._term_tables(executor)

    def _sentence_built(self, distinct: pl.Series, rules: TextRules) -> np.ndarray:
        """Which distinct texts get their tokens from their sentences' tokens instead of tokenising again.

        The answers and ground truths whose sentences are in the pool (:attr:`TextRules.sentence_tokens`:
        a text's tokens are its sentences', in order), but not those that are themselves a
        sentence nor those holding the sentence splitter's mark (a NUL character). The row
        that lists each one's sentences is kept in ``self._built_rows`` (role, text ids, rows).
        """
        built = np.zeros(distinct.len(), dtype=bool)
        self._built_rows: list[tuple[str, np.ndarray, np.ndarray]] = []
        if not rules.sentence_tokens or not self.sentences:
            return built
        for role in self.sentences:
            built[self._role_ids[role]] = True
        for role in self.sentences:
            built[self._role_ids[f"{role}_sentences"]] = False
        candidates = np.flatnonzero(built)
        built[candidates[distinct.gather(candidates).str.contains(SENTENCE_MARK, literal=True).to_numpy()]] = False
        todo = built.copy()
        for role in self.sentences:  # the first row of each text names its sentences
            ids, rows = np.unique(self._role_ids[role], return_index=True)
            keep = todo[ids]
            self._built_rows.append((role, ids[keep], rows[keep]))
            todo[ids[keep]] = False
        return built

    def _token_ranges(self, built: np.ndarray, direct: np.ndarray, count: np.ndarray) -> None:
        """Where each text's tokens lie in ``self.tokens``, without copying any of them.

        A tokenised text's tokens are one range of ``self.tokens``; a sentence-built text's
        are its sentences' ranges, in order. Sets ``token_count`` (per text) and the range
        table :meth:`text_tokens` reads: each text's first range and number of ranges, and
        each range's first token and token count.
        """
        n = built.size
        starts, counts = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        starts[direct], counts[direct] = _starts(count)[:-1], count
        per_text = np.ones(n, dtype=np.int64)  # a range per tokenised text, a range per sentence of a built one
        built_ranges: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for role, ids, rows in self._built_rows:
            row_start = self.sentences[role][0]
            per_text[ids] = row_start[rows + 1] - row_start[rows]
            sentences = self._role_ids[f"{role}_sentences"][concat_ranges(row_start[rows], per_text[ids])]
            built_ranges.append((ids, per_text[ids], sentences))
        self._range_at, self._ranges_of = _starts(per_text), per_text
        range_text = np.repeat(np.arange(n, dtype=np.int64), per_text)  # the tokenised text a range reads
        for ids, per_row, sentences in built_ranges:
            range_text[concat_ranges(self._range_at[ids], per_row)] = sentences  # sentences are tokenised texts
        self._range_start, self._range_count = starts[range_text], counts[range_text]
        self.token_count = np.diff(_starts(self._range_count)[self._range_at])

    def text_tokens(self, texts: np.ndarray) -> np.ndarray:
        """The token ids of the texts ``texts``, one text after the other.

        Examples
        --------
        >>> import polars as pl
        >>> from ragframe.kernels.text import UNICODE_RULES
        >>> view = pl.DataFrame({"answer": ["It is. So it is."]})
        >>> batch = TextBatch(view, {"answer": "answer"}, {"answer", "answer_sentences"}, {}, UNICODE_RULES)
        >>> batch.text_tokens(np.array([0])).tolist()  # the answer, from its two sentences' tokens
        [0, 1, 2, 0, 1]
        """
        ranges = concat_ranges(self._range_at[texts], self._ranges_of[texts])
        return self.tokens[concat_ranges(self._range_start[ranges], self._range_count[ranges])]

    def _term_tables(self, executor: Executor | None) -> dict[int, tuple[np.ndarray, list[TermIndex]]]:
        """The term table of each n-gram size over the texts the row slices compare with it.

        Returns, per size, the batch ids of those texts (ascending) and their :class:`TermIndex`
        in parts of consecutive texts (text ``i`` of the parts taken end to end is batch text
        ``texts[i]``). A context read by several slices has its grams sorted here once; the
        slices take their texts' entries (:func:`take_texts`). Only sizes whose texts are
        mostly (by tokens, :data:`SHARED_TABLE`) texts of several rows get a table: for the
        others, taking entries would cost more than it saves, and the slices index their texts
        themselves. Nor does a size whose keys would need renumbering (:func:`gram_span` None).
        The parts are built on ``executor``'s threads, if given.
        """
        shared = self._shared_texts()
        if not shared.any():
            return {}
        whole = SliceTexts(self, 0, self.n)
        tables: dict[int, tuple[np.ndarray, list[TermIndex]]] = {}
        for n in self.gram_roles:
            texts = whole.texts[whole.used(self, n, keep=False)]  # a whole chunk's pair lists are big
            tokens = self.token_count[texts]
            if int(tokens[shared[texts]].sum()) < SHARED_TABLE * int(tokens.sum()):
                continue
            if gram_span(self.vocabulary, max(n, 1), texts.size) is not None:
                tables[n] = (texts, self._index_in_parts(texts, n, executor))
        return tables

    def _shared_texts(self) -> np.ndarray:
        """Which distinct texts occur in more than one row (a flag per text), in any roles.

        Examples
        --------
        >>> import polars as pl
        >>> view = pl.DataFrame({"question": ["q", "r"], "contexts": [["a", "q"], ["a"]]})
        >>> batch = TextBatch(view, {"question": "question", "contexts": "contexts"}, {"question", "contexts"}, {})
        >>> batch._shared_texts().tolist()  # q (question and context of row 0), r, a (rows 0 and 1)
        [False, False, True]
        """
        size = self.token_count.size
        first, last = np.full(size, self.n, dtype=np.int64), np.full(size, -1, dtype=np.int64)
        everyone = np.ones(self.n, dtype=np.int64)
        counts = {f"{role}_sentences": np.diff(starts) for role, (starts, _) in self.sentences.items()}
        counts["contexts"] = self.ctx_count
        for role, ids in self._role_ids.items():
            rows = np.repeat(np.arange(self.n, dtype=np.int64), counts.get(role, everyone))  # rows in order
            in_role = np.full(size, self.n, dtype=np.int64)
            in_role[ids[::-1]] = rows[::-1]  # the last write of a text is its first row in the role
            np.minimum(first, in_role, out=first)
            in_role[:] = -1
            in_role[ids] = rows  # and here its last row
            np.maximum(last, in_role, out=last)
        return last > first

    def _index_in_parts(self, texts: np.ndarray, n: int, executor: Executor | None) -> list[TermIndex]:
        """:func:`index_texts` of ``texts`` (all used) in parts of about :data:`PART_TOKENS` tokens.

        Small parts keep every temporary array in the cache and in memory the allocator reuses.
        The parts are built on ``executor``'s threads, if given (the pair stage's: their memory
        then stays in the allocator's arenas the slices allocate from; threads of their own
        cost about 200 MB more at peak on the Zipf log), else in turn.
        """
        ends = np.cumsum(self.token_count[texts])
        total = int(ends[-1]) if ends.size else 0
        cuts = np.searchsorted(ends, np.arange(PART_TOKENS, total, PART_TOKENS), side="right")
        bounds = [0, *np.unique(cuts).tolist(), texts.size]
        pieces = [texts[a:b] for a, b in itertools.pairwise(bounds) if b > a] or [texts]

        def one(piece: np.ndarray) -> TermIndex:
            return narrow_counts(index_texts(self, piece, np.ones(piece.size, dtype=bool), n))

        if executor is None or len(pieces) == 1:
            return [one(piece) for piece in pieces]
        return list(executor.map(one, pieces))  # NumPy's sorts and gathers release the GIL

    def rows(self, r0: int, r1: int) -> RowSlice:
        """The rows r0 .. r1 - 1, for the pair stage."""
        return RowSlice(self, r0, r1)


def index_texts(batch: TextBatch, texts: np.ndarray, used: np.ndarray, n: int) -> TermIndex:
    """The :func:`term_index` of n-grams of the batch texts ``texts`` (ascending), those not ``used`` left empty.

    ``n`` is :data:`CONTENT` for the unigrams of content words (stop words left out).

    Examples
    --------
    >>> import polars as pl
    >>> view = pl.DataFrame({"question": ["the cat sat", "a cat"]})
    >>> batch = TextBatch(view, {"question": "question"}, {"question"}, {CONTENT: {"question"}})
    >>> index = index_texts(batch, np.array([0, 1]), np.array([True, True]), CONTENT)
    >>> index.sizes.tolist(), index.n_tokens.tolist()
    ([2, 1], [2.0, 1.0])
    """
    lengths = np.where(used, batch.token_count[texts], 0)
    tokens = batch.text_tokens(texts[used])
    if n == CONTENT:  # unigrams of the content words: the stop words left out
        content = ~batch.stop[tokens]
        lengths = _group_counts(content, lengths)  # content words per text
        tokens = tokens[np.flatnonzero(content)]  # positions, then a gather: faster than a boolean mask
    return term_index(tokens, lengths, batch.vocabulary, max(n, 1))


class SliceTexts:
    """Rows r0 .. r1 - 1 of a :class:`TextBatch`: their texts, renumbered 0 .. m-1, and pair lists.

    Attributes
    ----------
    texts : numpy.ndarray
        The batch's id of each of the slice's texts (ascending: slice-local id ``i`` is
        batch text ``texts[i]``).
    """

    def __init__(self, batch: TextBatch, r0: int, r1: int) -> None:
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
        # the slice's own texts, renumbered 0 .. m-1 in the batch's order (a lookup table, not a sort)
        mine = np.zeros(batch.token_count.size, dtype=bool)
        for ids in global_ids.values():
            mine[ids] = True
        self.texts = np.flatnonzero(mine)
        local = np.zeros(mine.size, dtype=np.int64)
        local[self.texts] = np.arange(self.texts.size)
        self._role_ids = {role: local[ids] for role, ids in global_ids.items()}
        self._lengths = batch.token_count[self.texts]
        for role in batch.sentences:  # the sentences without a bigram
            self._role_ids[f"{SHORT}{role}_sentences"] = self._role_ids[f"{role}_sentences"][self._short(role)]
        self._lists: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}

    def used(self, batch: TextBatch, n: int, keep: bool = True) -> np.ndarray:
        """Which of the slice's texts the n-gram size ``n`` compares (a flag per slice-local text).

        The texts of the pair lists compared with ``n`` (``batch.gram_tags``), or when those are
        not known the texts of the roles indexed with ``n`` (``batch.gram_roles``). ``keep``:
        whether to keep the pair lists built on the way (:meth:`pair_list`) for later.
        """
        used = np.zeros(self.texts.size, dtype=bool)
        if n in batch.gram_tags:
            for tag in batch.gram_tags[n]:
                for side in self.pair_list(tag)[:2]:
                    used[side] = True
                if not keep:
                    del self._lists[tag]
        else:
            for role in batch.gram_roles[n] & set(self._role_ids):
                used[self._role_ids[role]] = True
        return used

    def ids(self, role: str) -> np.ndarray:
        """Slice-local text id of each text of a role (question, answer, ground_truth, contexts, ...)."""
        return self._role_ids[role]

    def _short(self, role: str) -> np.ndarray:
        """Which sentences of ``role`` (answer, ground_truth) have fewer than two tokens."""
        return self._lengths[self._role_ids[f"{role}_sentences"]] < 2

    def pair_list(self, tag: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The text ids of a named pair list, built once: (left, right, contexts per sentence or None).

        ``"<role>_sentences-contexts"`` pairs every sentence with every context of its row
        (grouped by sentence; ``"short_<role>_sentences-contexts"`` the same pairs, of the
        sentences with fewer than two tokens only); ``"<role>-contexts"`` pairs a row's text
        with each of its contexts; ``"<left>-<right>"`` pairs the two texts of each row.
        """
        if tag not in self._lists:
            left, right = pair_roles(tag)
            if right == "contexts" and left.endswith("_sentences"):
                per_sentence, s_ids, c_ids = sentence_context_pairs(self, left.removesuffix("_sentences"))
                self._lists[tag] = (s_ids, c_ids, per_sentence)
            elif right == "contexts":
                self._lists[tag] = (self.ids(left)[self.ctx_row], self.ids("contexts"), None)
            else:
                self._lists[tag] = (self.ids(left), self.ids(right), None)
        return self._lists[tag]


class RowSlice(SliceTexts, PairCache):
    """Rows r0 .. r1 - 1 of a :class:`TextBatch`: their texts' term tables and own pair caches.

    The term tables of a slice cover only its own texts (renumbered 0 .. m-1), so they stay
    small enough for the pair stage's random lookups to hit the cache. They are taken from
    the batch's tables (:meth:`TextBatch.term_tables`: each text's grams sorted once per
    chunk, however many slices read it), or built from the tokens where the batch has none.
    """

    def __init__(self, batch: TextBatch, r0: int, r1: int) -> None:
        SliceTexts.__init__(self, batch, r0, r1)
        PairCache.__init__(self, {n: self._term_table(batch, n) for n in batch.gram_roles})

    def _term_table(self, batch: TextBatch, n: int) -> TermIndex:
        """The n-gram table of the slice's texts compared with ``n`` (the others empty)."""
        used = self.used(batch, n)
        table = batch.term_tables.get(n)
        if table is None or gram_span(batch.vocabulary, max(n, 1), self.texts.size) is None:
            return index_texts(batch, self.texts, used, n)  # keyed as the slice's own term_index keys them
        texts, parts = table
        mine = np.flatnonzero(used)
        at = np.searchsorted(texts, self.texts[mine])
        if at.size and (at[-1] >= texts.size or not np.array_equal(texts[at], self.texts[mine])):
            raise RuntimeError(f"a slice compares texts missing from the batch's {n}-gram table")
        return take_texts(parts, at, mine, used.size)

    def values(self, kind: str, n: int, tag: str) -> np.ndarray:
        """Similarity ``kind`` (overlap, tfidf, f1) of ``n``-grams over the pair list ``tag``."""
        left, right, _ = self.pair_list(tag)
        return self.pair_values(kind, n, left, right, tag)

    def weighted_values(self, tag: str, opts: Any) -> np.ndarray:
        """The weighted n-gram overlap over the pair list ``tag``."""
        left, right, _ = self.pair_list(tag)
        return self.weighted(left, right, opts, tag)


def string_column(view: pl.DataFrame, column: str) -> pl.Series:
    series = view.get_column(column)
    if series.dtype == pl.Null:
        return series.cast(pl.String)
    if series.dtype != pl.String:
        raise SchemaError("wrong dtype", column=column, expected="str", found=str(series.dtype))
    return series


def contexts_column(view: pl.DataFrame, column: str) -> pl.Series:
    series = view.get_column(column)
    if series.dtype == pl.Null:
        return series.cast(pl.List(pl.String))
    if not isinstance(series.dtype, pl.List) or series.dtype.inner not in (pl.String, pl.Null):
        raise SchemaError("wrong dtype", column=column, expected="list[str]", found=str(series.dtype))
    series = series.cast(pl.List(pl.String))
    # a null chunk is a broken log row, not an empty passage: counting it as "" would lower
    # the row's context scores without a word
    expected = 'strings (use "" for an empty chunk, or drop it)'
    check_no_null_inside(series, column, what="null chunk inside a contexts list", expected=expected)
    return series


# ----------------------------------------------------------------------------- kernels per metric


def group_max(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Max of each consecutive group of ``lengths`` values (0 for an empty group)."""
    out = np.zeros(lengths.size)
    nonempty = lengths > 0
    if values.size:
        heads = (np.cumsum(lengths) - lengths)[nonempty]
        out[nonempty] = np.maximum.reduceat(values, heads)
    return out


def mean_by_row(rows: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(rows, minlength=n).astype(np.float64)
    sums = np.bincount(rows, weights=values, minlength=n)
    return np.divide(sums, counts, out=np.zeros(n), where=counts > 0), counts


@dataclass
class Signals:
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


def row_warnings(rows: np.ndarray, signal_id: str, template: str, values: np.ndarray) -> Signals:
    """One ``warning`` per row of ``rows``; ``template`` gets each value with 3 decimals."""
    sig = Signals()
    messages = [template.format(v) for v in fixed3(values)]
    sig.add(rows, np.zeros(rows.size), [signal_id] * rows.size, "warning", messages, None)
    return sig


def sentence_signals(
    sentences: tuple[np.ndarray, np.ndarray, pl.Series],
    low: np.ndarray,
    prefix: str,
    severity: str,
    template: str,
    values: np.ndarray,
) -> Signals:
    """One signal per flagged sentence, id ``<prefix>-<sentence index>``, evidence = the sentence."""
    rows, index, text = sentences
    sig = Signals()
    messages = [template.format(v) for v in fixed3(values[low])]
    sig.add(rows[low], index[low], [f"{prefix}-{i}" for i in index[low]], severity, messages, text.gather(low))
    return sig


def chunk_signals(
    batch: RowSlice, low: np.ndarray, message: str, signal_id: str = "context-precision-low-relevance-chunks"
) -> Signals:
    """One ``info`` signal ``signal_id`` per row listing its flagged chunks: ``message`` + ``[i, j, ...].``.

    Parameters
    ----------
    batch : RowSlice
        The rows.
    low : numpy.ndarray
        A flag per context chunk of the rows (in ``batch.ctx_row`` order).
    message : str
        The text before the list of chunk indices.
    signal_id : str
        The signals' id.

    Returns
    -------
    Signals
    """
    listing = (
        pl.DataFrame({"row": batch.ctx_row[low], "i": batch.ctx_index[low]})
        .group_by("row", maintain_order=True)
        .agg(pl.col("i").cast(pl.String).str.join(", ").alias("list"))
        .sort("row")
    )
    rows = listing.get_column("row").to_numpy()
    signals = Signals()
    text = message + " [" + listing.get_column("list") + "]."
    signals.add(rows, np.zeros(rows.size), [signal_id] * rows.size, "info", text, None)
    return signals


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


def sentence_context_pairs(batch: RowSlice, role: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (sentence, context) pair of each row, grouped by sentence.

    Returns the number of contexts of each sentence's row, and the text ids of both sides.
    ``role`` ``"short_<role>"`` keeps the sentences of fewer than two tokens only.
    """
    if role.startswith(SHORT):
        role = role.removeprefix(SHORT)
        short = batch._short(role)
        s_rows, sentences = batch.sentences[role][0][short], batch.ids(f"{role}_sentences")[short]
    else:
        s_rows, sentences = batch.sentences[role][0], batch.ids(f"{role}_sentences")
    per_sentence = batch.ctx_count[s_rows]
    ctx_start = np.cumsum(batch.ctx_count) - batch.ctx_count
    s_ids = np.repeat(sentences, per_sentence)
    c_ids = batch.ids("contexts")[concat_ranges(ctx_start[s_rows], per_sentence)]
    return per_sentence, s_ids, c_ids
