"""Text kernels: tokenisation, sentences, n-grams and set/vector similarities over whole columns.

Semantics are those of ``docs/metrics.md`` (the rag-eval-node-ts primitives, made
precise): lower-case, split on runs of JavaScript whitespace or Unicode punctuation
(category P*); sentences end at ``.``, ``!`` or ``?`` followed by whitespace and an ASCII
capital letter.

Column kernels take polars Series/Expr and work on all rows at once (Rust regexes in
polars; joins and group-bys for the pairwise similarities). The plain functions
(:func:`tokenize`, :func:`split_sentences`, :func:`ngram_overlap`, ...) handle one string
or one pair and are built on the same kernels, so there is one definition of each rule.

The pairwise kernels work on texts with integer ids: :func:`token_ids` numbers every
token exactly, :func:`term_index` gives each text's distinct n-grams (integer keys) with
counts as CSR arrays, and :func:`pair_overlap`, :func:`pair_tfidf` and
:func:`pair_token_f1` compare listed pairs of texts by probing the grams of the smaller
text of each pair against the other's, so a pair costs the size of its smaller text.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

__all__ = [
    "JS_WHITESPACE",
    "SENTENCE_MARK",
    "tokenize_expr",
    "sentences_expr",
    "unicode_tokenize_expr",
    "unicode_sentences_expr",
    "unicode_clean",
    "changed_by_clean",
    "TextRules",
    "SEED_RULES",
    "UNICODE_RULES",
    "tokenize",
    "ngrams_column",
    "ngram_overlap_column",
    "weighted_ngram_overlap_column",
    "tfidf_similarity_column",
    "token_f1_column",
    "split_sentences",
    "ngrams",
    "ngram_overlap",
    "weighted_ngram_overlap",
    "tfidf_similarity",
    "token_f1",
    "token_ids",
    "tokenize_ids",
    "tokenize_vocabulary",
    "distinct_codes",
    "group_sums",
    "first_positions",
    "TermIndex",
    "gram_span",
    "term_index",
    "take_texts",
    "narrow_counts",
    "drop_terms",
    "Common",
    "common_entries",
    "common_entries_many",
    "concat_ranges",
    "pair_overlap",
    "pair_containment",
    "pair_log_cosine",
    "pair_tfidf",
    "pair_token_f1",
]

#: The JavaScript ``\s`` set (not Python's nor Rust's): U+0085 and U+001C..U+001F are not in it, U+FEFF is.
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + ("\u2028\u2029\u202f\u205f\u3000\ufeff")
)
_WS_CLASS = "\t-\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_TOKEN = rf"[^\p{{P}}{_WS_CLASS}]+"
_BOUNDARY = rf"([.!?])[{_WS_CLASS}]+([A-Z])"
_MARK = "\x00"
#: The character the sentence splitters cut at (they mark sentence ends with it): a text holding
#: one is cut there too, so :attr:`TextRules.sentence_tokens` does not hold for it.
SENTENCE_MARK = _MARK
_IDF_ONE = 1.0 + float(np.log(1.5))  # idf of a term found in one of the two texts: ln(3 / 2) + 1


def tokenize_expr(text: pl.Expr) -> pl.Expr:
    """Tokens of each string (list[str]); null is treated as the empty string.

    Examples
    --------
    >>> import polars as pl
    >>> pl.select(tokenize_expr(pl.lit("Don't pay $100 for state-of-the-art!"))).item().to_list()
    ['don', 't', 'pay', '$100', 'for', 'state', 'of', 'the', 'art']
    """
    return text.fill_null("").str.to_lowercase().str.extract_all(_TOKEN)


def sentences_expr(text: pl.Expr) -> pl.Expr:
    """Sentences of each string (list[str], trimmed, empty pieces dropped); null gives [].

    Examples
    --------
    >>> import polars as pl
    >>> pl.select(sentences_expr(pl.lit("Dr. Smith went home. He slept."))).item().to_list()
    ['Dr.', 'Smith went home.', 'He slept.']
    """
    pieces = text.fill_null("").str.replace_all(_BOUNDARY, "${1}" + _MARK + "${2}").str.split(_MARK)
    return pieces.list.eval(pl.element().str.strip_chars(JS_WHITESPACE)).list.eval(
        pl.element().filter(pl.element() != "")
    )


# ----------------------------------------------------------------------------- Unicode text rules

#: Zero-width and invisible formatting characters removed before tokenising (ZWSP, ZWNJ, ZWJ,
#: word joiner, BOM, soft hyphen).
_INVISIBLE = "[\u200b-\u200d\u2060\ufeff\u00ad]"
#: Scripts written without spaces between words: each character is a token.
_IDEOGRAPHIC = r"([\p{Han}\p{Hiragana}\p{Katakana}])"
_SENTENCE_END = r"([.!?])\s+|([\u3002\uff01\uff1f])\s*|\n+"  # ideographic full stop, fullwidth ! and ?


_IDEOGRAPHIC_OR_WORD = r"[\p{Han}\p{Hiragana}\p{Katakana}]|[^\W\p{Han}\p{Hiragana}\p{Katakana}]+"


#: Starters (canonical combining class 0) that compose with the character before them under NFC
#: (the second character of a canonical pair): NFC's "Maybe" characters that are not marks with a
#: combining class. ``tests/test_text.py`` recomputes the list from :mod:`unicodedata`.
_COMPOSING_STARTERS = frozenset(
    chr(c)
    for c in (
        0x09BE, 0x09D7, 0x0B3E, 0x0B56, 0x0B57, 0x0BBE, 0x0BD7, 0x0CC2, 0x0CD5, 0x0CD6, 0x0D3E, 0x0D57,
        0x0DCF, 0x0DDF, 0x0FB5, 0x0FB7, 0x102E, 0x1B35, 0x11127, 0x1133E, 0x11357, 0x114B0, 0x114BA,
        0x114BD, 0x115AF, 0x11930,
        *range(0x1161, 0x1176),  # Hangul vowel jamo (they compose with a leading consonant)
        *range(0x11A8, 0x11C3),  # Hangul trailing consonant jamo
    )
)  # fmt: skip


def changed_by_clean(char: str) -> bool:
    """Whether a text holding ``char`` may change under :func:`unicode_clean` (NFC, invisibles removed).

    False only for characters that NFC leaves alone wherever they stand: assigned in this
    Python's Unicode data (a newer character is always cleaned), combining class 0, NFC of
    themselves, and never the second half of a canonical composition. A text made of such
    characters is already NFC (Unicode's normalization stability policy keeps it so in later
    Unicode versions).

    Examples
    --------
    >>> changed_by_clean("\u2019"), changed_by_clean("\u0301"), changed_by_clean("\u212b"), changed_by_clean("\u200b")
    (False, True, True, True)
    """
    return (
        re.fullmatch(_INVISIBLE, char) is not None
        or unicodedata.category(char) in ("Cn", "Cs")
        or unicodedata.combining(char) != 0
        or not unicodedata.is_normalized("NFC", char)
        or char in _COMPOSING_STARTERS
    )


def unicode_clean(texts: pl.Series) -> pl.Series:
    """NFC-normalise and drop zero-width characters: only the texts that would change are touched.

    The distinct non-ASCII characters of the texts are checked once each
    (:func:`changed_by_clean`); only texts holding one of those that may change go through NFC,
    so typographic quotes and dashes cost a scan, not a normalisation.

    Examples
    --------
    >>> import polars as pl
    >>> unicode_clean(pl.Series(["Cafe\u0301", "ze\u200bro", "plain", "\u201cquoted\u201d", None])).to_list()
    ['Café', 'zero', 'plain', '“quoted”', None]
    """
    wide = texts.str.contains(r"[^\x00-\x7F]").fill_null(False)
    if not wide.any():
        return texts
    rows = wide.arg_true()
    subset = texts.gather(rows)
    # one Python call per distinct character, not per text
    chars = subset.str.extract_all(r"[^\x00-\x7F]").explode(empty_as_null=False, keep_nulls=False).unique()
    unstable = [char for char in chars.to_list() if changed_by_clean(char)]
    if not unstable:
        return texts
    touched = subset.str.contains_any(unstable).fill_null(False)
    rows = rows.filter(touched)
    cleaned = subset.filter(touched).str.normalize("NFC").str.replace_all(_INVISIBLE, "")
    return texts.clone().scatter(rows, cleaned)  # scatter writes in place: leave the caller's texts alone


def _unicode_words(text: pl.Expr) -> pl.Expr:
    """Words of text already through :func:`unicode_clean`."""
    return text.fill_null("").str.to_lowercase().str.extract_all(_IDEOGRAPHIC_OR_WORD)


def _unicode_split(text: pl.Expr) -> pl.Expr:
    """Sentences of text already through :func:`unicode_clean`."""
    pieces = text.fill_null("").str.replace_all(_SENTENCE_END, "${1}${2}" + _MARK).str.split(_MARK)
    return pieces.list.eval(pl.element().str.strip_chars()).list.eval(pl.element().filter(pl.element() != ""))


def _clean_expr(text: pl.Expr) -> pl.Expr:
    return text.fill_null("").str.normalize("NFC").str.replace_all(_INVISIBLE, "")


def unicode_tokenize_expr(text: pl.Expr) -> pl.Expr:
    r"""Tokens under the Unicode rules (list[str]); null is treated as the empty string.

    NFC normalisation, zero-width characters removed, lower case, words are runs of Unicode
    word characters (letters, marks, digits, ``_``), and every Han, Hiragana or Katakana
    character is a token of its own (those scripts put no spaces between words). Hangul,
    which does, keeps its words.

    Examples
    --------
    >>> import polars as pl
    >>> pl.select(unicode_tokenize_expr(pl.lit("Cafe\u0301 ze\u200bro, 東京タワー! don't"))).item().to_list()
    ['café', 'zero', '東', '京', 'タ', 'ワ', 'ー', 'don', 't']
    """
    return _unicode_words(_clean_expr(text))


def unicode_sentences_expr(text: pl.Expr) -> pl.Expr:
    r"""Sentences under the Unicode rules (list[str], trimmed, empty pieces dropped); null gives [].

    A sentence ends at ``.``, ``!`` or ``?`` followed by whitespace, at the ideographic full
    stop and the fullwidth exclamation and question marks (U+3002, U+FF01, U+FF1F), and at
    every line break (so list items and headings are sentences of their own).

    Examples
    --------
    >>> import polars as pl
    >>> pl.select(unicode_sentences_expr(pl.lit("It works. really!\n- item one\n東京です。大阪です"))).item().to_list()
    ['It works.', 'really!', '- item one', '東京です。', '大阪です']
    """
    return _unicode_split(_clean_expr(text))


@dataclass(frozen=True)
class TextRules:
    """How texts are cut into tokens and sentences (the seed's rules or the Unicode ones).

    Attributes
    ----------
    name : str
        ``"rag-eval-node-ts"`` or ``"unicode"``.
    tokens, sentences : callable
        Polars expression builders, ``str -> list[str]``, over texts through ``clean``.
    clean : callable or None
        ``Series -> Series`` applied once to every row text before anything else.
    sentence_tokens : bool
        Whether the tokens of a text (without :data:`SENTENCE_MARK`) are those of its sentences,
        end to end: the sentences are cut only where no token can cross (at whitespace, line
        breaks or a sentence-ending mark that is no token character), and neither cleaning nor
        lower-casing looks across such a cut (a space or a line break is neither cased nor
        case-ignorable, so a final sigma stays one). The text engine then tokenises only the
        sentences of answers and ground truths, not the texts again.
    """

    name: str
    tokens: Callable[[pl.Expr], pl.Expr]
    sentences: Callable[[pl.Expr], pl.Expr]
    clean: Callable[[pl.Series], pl.Series] | None = None
    sentence_tokens: bool = False


def tokenize(text: str | None) -> list[str]:
    """Tokens of one string.

    Examples
    --------
    >>> tokenize("İstanbul, a+b <tag>")
    ['i̇stanbul', 'a+b', '<tag>']
    """
    return pl.select(tokenize_expr(pl.lit(text, dtype=pl.String)).alias("x")).to_series()[0].to_list()


def split_sentences(text: str | None) -> list[str]:
    """Sentences of one string.

    Examples
    --------
    >>> split_sentences("Really?! yes. No way")
    ['Really?! yes.', 'No way']
    """
    return pl.select(sentences_expr(pl.lit(text, dtype=pl.String)).alias("x")).to_series()[0].to_list()


def ngrams(tokens: Sequence[str], n: int) -> list[str]:
    """Contiguous n-grams joined by one space; none when fewer than n tokens.

    Examples
    --------
    >>> ngrams(["a", "b", "c"], 2)
    ['a b', 'b c']
    """
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


#: The rag-eval-node-ts rules (``compat="rag-eval-node-ts"``).
SEED_RULES = TextRules("rag-eval-node-ts", tokenize_expr, sentences_expr, sentence_tokens=True)
#: The default rules of ragframe's own methods.
UNICODE_RULES = TextRules("unicode", _unicode_words, _unicode_split, unicode_clean, sentence_tokens=True)


# ----------------------------------------------------------------------------- term index


def token_ids(tokens: pl.Series) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer ids of every token of a list[str] column.

    Returns ``(ids, lengths, vocabulary_size)``: the flat token ids (int64, in text order),
    the number of tokens of each text, and the number of distinct tokens. Ids are exact
    (a dictionary built for this call), not hashes.
    """
    lengths = tokens.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = tokens.explode(empty_as_null=False, keep_nulls=False)
    codes = flat.cast(pl.Categorical(pl.Categories.random())).to_physical().to_numpy().astype(np.int64)
    vocabulary = int(codes.max()) + 1 if codes.size else 0
    return codes, lengths, vocabulary


def first_positions(codes: np.ndarray, size: int) -> np.ndarray:
    """Position of the first occurrence of each code 0..size-1.

    Examples
    --------
    >>> first_positions(np.array([1, 0, 1, 2]), 3).tolist()
    [1, 0, 3]
    """
    first = np.zeros(size, dtype=np.int64)
    first[codes[::-1]] = np.arange(codes.size - 1, -1, -1)
    return first


def tokenize_ids(
    texts: pl.Series,
    parts: int = 1,
    threads: int | None = None,
    tokens: Callable[[pl.Expr], pl.Expr] | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    return tokenize_vocabulary(texts, parts, threads, tokens)[:3]


def tokenize_vocabulary(
    texts: pl.Series,
    parts: int = 1,
    threads: int | None = None,
    tokens: Callable[[pl.Expr], pl.Expr] | None = None,
    clean: Callable[[pl.Series], pl.Series] | None = None,
) -> tuple[np.ndarray, np.ndarray, int, pl.Series]:
    """:func:`token_ids` of the tokens of ``texts``, tokenising ``parts`` slices on ``threads`` threads.

    Returns the flat token ids, the number of tokens of each text, the vocabulary size and the
    vocabulary (the token string of each id). The ids are those of one sequential pass
    (numbered in order of first appearance), whatever ``parts`` is (see
    :func:`distinct_codes`). ``threads`` defaults to ``parts``; ``tokens`` is the tokenising
    expression (default :func:`tokenize_expr`, the seed's rules) and ``clean`` a function
    applied to the texts first (each slice on its thread).

    Examples
    --------
    >>> import polars as pl
    >>> ids, lengths, size, words = tokenize_vocabulary(pl.Series(["b a", "a c", "c"]), parts=2)
    >>> ids.tolist(), lengths.tolist(), size, words.to_list()
    ([0, 1, 1, 2, 2], [2, 2, 1], 3, ['b', 'a', 'c'])
    """
    tokenizer = tokens or tokenize_expr

    def one(texts: pl.Series) -> tuple[np.ndarray, np.ndarray, pl.Series]:
        tokens = pl.select(tokenizer(pl.lit(texts if clean is None else clean(texts)))).to_series()
        lengths = tokens.list.len().fill_null(0).to_numpy().astype(np.int64)
        codes, vocabulary = _local_codes(tokens.explode(empty_as_null=False, keep_nulls=False))
        return codes, lengths, vocabulary

    results = _by_slices(one, texts, parts, threads)
    codes, vocabulary = _merged_codes([(codes, vocabulary) for codes, _, vocabulary in results])
    return codes, np.concatenate([lengths for _, lengths, _ in results]), vocabulary.len(), vocabulary


def distinct_codes(texts: pl.Series, parts: int = 1, threads: int | None = None) -> tuple[np.ndarray, pl.Series]:
    """Exact codes of ``texts`` (equal strings, equal codes), numbered in order of first appearance.

    The texts are coded in ``parts`` slices on ``threads`` threads (default ``parts``), each
    with a dictionary of its own; the slices' dictionaries are then coded together, in slice
    order, so the codes are those of one pass over the whole column. Returns the codes and the
    distinct texts (the text of each code).

    Examples
    --------
    >>> import polars as pl
    >>> codes, distinct = distinct_codes(pl.Series(["b", "a", "b", "c", "a"] * 300), parts=2)
    >>> codes[:5].tolist(), distinct.to_list()
    ([0, 1, 0, 2, 1], ['b', 'a', 'c'])
    """
    return _merged_codes(_by_slices(_local_codes, texts, parts, threads))


def _local_codes(texts: pl.Series) -> tuple[np.ndarray, pl.Series]:
    """Codes of ``texts`` in a dictionary of their own (first appearance), and the distinct texts."""
    codes = texts.cast(pl.Categorical(pl.Categories.random())).to_physical().to_numpy().astype(np.int64)
    return codes, texts.gather(first_positions(codes, int(codes.max()) + 1 if codes.size else 0))


def _by_slices(work: Callable[[pl.Series], Any], texts: pl.Series, parts: int, threads: int | None) -> list[Any]:
    """``work`` of ``parts`` contiguous slices of ``texts`` (at least 1,000 texts each), on threads."""
    n = texts.len()
    parts = max(1, min(parts, n // 1000 or 1))
    bounds = np.linspace(0, n, parts + 1).astype(np.int64)
    pieces = [texts.slice(int(a), int(b - a)) for a, b in itertools.pairwise(bounds)]
    if parts == 1:
        return [work(pieces[0])]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(parts, threads or parts)) as pool:  # polars releases the GIL
        return list(pool.map(work, pieces))


def _merged_codes(results: Sequence[tuple[np.ndarray, pl.Series]]) -> tuple[np.ndarray, pl.Series]:
    """One numbering of the slices' :func:`_local_codes`: their dictionaries coded together, in order."""
    if len(results) == 1:
        return results[0]
    merged = pl.concat([distinct for _, distinct in results])
    global_codes, distinct = _local_codes(merged)
    out, at = [], 0
    for codes, local in results:
        out.append(global_codes[at : at + local.len()][codes])
        at += local.len()
    return np.concatenate(out), distinct


@dataclass(frozen=True)
class TermIndex:
    """The distinct n-grams of each text, with counts, as CSR arrays over integer gram keys.

    Attributes
    ----------
    starts : numpy.ndarray
        Offsets of each text's entries (length n_texts + 1).
    counts : numpy.ndarray
        Occurrence count of each (text, distinct gram) entry.
    n_tokens : numpy.ndarray
        Number of gram occurrences of each text (the tf denominator).
    base : int
        ``text * base + gram`` is the entry's unique key.
    keys : polars.Series
        That key for every entry (sorted), for membership probes.
    """

    starts: np.ndarray
    counts: np.ndarray
    n_tokens: np.ndarray
    base: int
    keys: pl.Series

    @functools.cached_property
    def sizes(self) -> np.ndarray:
        """Number of distinct grams of each text."""
        return np.diff(self.starts)

    @functools.cached_property
    def sum_sq(self) -> np.ndarray:
        """Sum of squared counts of each text (for TF-IDF norms), computed on first use.

        Examples
        --------
        >>> import polars as pl
        >>> term_index(*tokenize_ids(pl.Series(["a a b", ""])), 1).sum_sq.tolist()
        [5.0, 0.0]
        """
        return group_sums(self.counts**2, self.starts)


def gram_span(vocabulary: int, n: int, n_texts: int) -> int | None:
    """The span of the gram values :func:`term_index` keys ``n_texts`` texts with, or None if it renumbers them.

    An n-gram of tokens ``t0 .. t(n-1)`` is the number ``t0 * V**(n-1) + ... + t(n-1)`` below
    ``V**n`` (``V`` the vocabulary size); :func:`term_index` renumbers the grams densely instead
    when ``text * (span + 1) + gram`` could overflow. Two indexes of the same vocabulary and
    n whose spans are not None key every gram the same way (base ``span + 1``).

    Examples
    --------
    >>> gram_span(1000, 2, 10), gram_span(10**7, 3, 10)
    (1000000, None)
    """
    span = max(vocabulary, 1)
    for _ in range(1, n):
        if span > (2**62) // max(vocabulary, 1):
            return None
        span = span * vocabulary
    return None if span > (2**62) // max(n_texts, 1) else span


def term_index(ids: np.ndarray, lengths: np.ndarray, vocabulary: int, n: int) -> TermIndex:
    """Build the :class:`TermIndex` of n-grams from flat token ids (see :func:`token_ids`)."""
    n_texts = lengths.size
    gram = ids.copy()
    span = max(vocabulary, 1)
    for j in range(1, n):
        if span > (2**62) // max(vocabulary, 1):  # keep keys exact: re-number before they overflow
            gram, span = _dense(gram)
        gram[: ids.size - j] *= vocabulary
        gram[: ids.size - j] += ids[j:]
        span = span * vocabulary
    if n > 1:  # an n-gram starts at least n - 1 tokens before the end of its text
        keep = np.ones(ids.size, dtype=bool)
        ends = np.cumsum(lengths)
        for j in range(1, n):
            tail = ends[lengths >= j] - j
            keep[tail] = False
        short = lengths < n  # texts shorter than n have no n-gram at all
        if short.any():
            keep[concat_ranges(ends[short] - lengths[short], lengths[short])] = False
        gram = gram[keep]
    if span > (2**62) // max(n_texts, 1):
        gram, span = _dense(gram)
    base = int(span) + 1
    gram += np.repeat(np.arange(n_texts, dtype=np.int64) * base, np.maximum(lengths - (n - 1), 0))
    gram.sort()  # in place (gram is this function's own array); NumPy's sort is faster than polars' here
    ordered = gram
    if ordered.size:
        new = np.empty(ordered.size, dtype=bool)
        new[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
        first = np.flatnonzero(new)
        k = ordered[first]
        counts = np.empty(first.size, dtype=np.float64)
        np.subtract(first[1:], first[:-1], out=counts[:-1], casting="unsafe")  # no int64 temporary
        counts[-1:] = ordered.size - first[-1:]
    else:
        k, counts = ordered, np.zeros(0)
    starts = np.searchsorted(k, np.arange(n_texts + 1, dtype=np.int64) * base)
    n_tokens = np.maximum(lengths - (n - 1), 0).astype(np.float64)
    return TermIndex(starts=starts, counts=counts, n_tokens=n_tokens, base=base, keys=pl.Series("k", k))


def take_texts(parts: Sequence[TermIndex], texts: np.ndarray, into: np.ndarray, size: int) -> TermIndex:
    """The index of ``size`` texts where text ``into[i]`` is text ``texts[i]`` of ``parts``, the others empty.

    ``parts`` are the indexes of consecutive runs of texts, of one base (the texts of
    ``parts[0]`` are numbered from 0, those of ``parts[1]`` next, and so on); ``texts`` and
    ``into`` are ascending. The entries of each text are copied in their order with their
    counts, and the keys moved to the new text numbers: the result is the :func:`term_index` of
    those texts' tokens when its base is that of ``parts`` (:func:`gram_span`), without sorting
    the grams again. Indexing texts in parts keeps every array small; the parts' counts may be
    held in any integer type (:func:`narrow_counts`), the result's are float64.

    Examples
    --------
    >>> import polars as pl
    >>> ids, lengths, size = tokenize_ids(pl.Series(["a b a", "c", "b c"]))
    >>> parts = [term_index(ids[:4], lengths[:2], size, 1), term_index(ids[4:], lengths[2:], size, 1)]
    >>> index = take_texts(parts, np.array([0, 2]), np.array([1, 2]), 3)  # texts 0 and 2 as texts 1 and 2
    >>> index.starts.tolist(), index.counts.tolist(), index.n_tokens.tolist()
    ([0, 0, 2, 4], [2.0, 1.0, 1.0, 1.0], [0.0, 3.0, 2.0])
    >>> index.keys.equals(term_index(ids[[0, 1, 2, 4, 5]], np.array([0, 3, 2]), size, 1).keys)
    True
    """
    base = parts[0].base
    if any(part.base != base for part in parts):
        raise ValueError("the parts of a term index must share one base")
    first = np.cumsum([0] + [part.starts.size - 1 for part in parts])  # each part's first text
    bounds = np.searchsorted(texts, first).tolist()
    per_text, n_tokens = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.float64)
    for part, t0, a, b in zip(parts, first.tolist(), bounds, bounds[1:]):
        mine = texts[a:b] - t0
        per_text[into[a:b]], n_tokens[into[a:b]] = part.sizes[mine], part.n_tokens[mine]
    starts = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(per_text, out=starts[1:])
    keys, counts = np.empty(int(starts[-1]), dtype=np.int64), np.empty(int(starts[-1]), dtype=np.float64)
    for part, t0, a, b in zip(parts, first.tolist(), bounds, bounds[1:]):
        mine, to = texts[a:b] - t0, into[a:b]
        sizes = per_text[to]
        entries = concat_ranges(part.starts[mine], sizes)
        e0, e1 = (int(starts[to[0]]), int(starts[to[-1] + 1])) if to.size else (0, 0)
        np.take(part.keys.to_numpy(), entries, out=keys[e0:e1], mode="clip")  # "clip": no buffered copy
        keys[e0:e1] += np.repeat((to.astype(np.int64) - mine) * base, sizes)
        counts[e0:e1] = part.counts[entries]  # counts of any numeric type, as float64
    return TermIndex(starts=starts, counts=counts, n_tokens=n_tokens, base=base, keys=pl.Series("k", keys))


def narrow_counts(index: TermIndex) -> TermIndex:
    """``index`` with its counts in the smallest unsigned integer type that holds them (for keeping it).

    Counts are integers (float64 in a :class:`TermIndex`, for the kernels' sums); an index kept
    to take texts from (:func:`take_texts`) holds them in a byte or two instead of eight.

    Examples
    --------
    >>> import polars as pl
    >>> narrow_counts(term_index(*tokenize_ids(pl.Series(["a a b", "c"])), 1)).counts
    array([2, 1, 1], dtype=uint8)
    """
    top = int(index.counts.max()) if index.counts.size else 0
    return dataclasses.replace(index, counts=index.counts.astype(np.min_scalar_type(top)))


def drop_terms(index: TermIndex, dropped: np.ndarray) -> TermIndex:
    """The unigram index without the tokens flagged in ``dropped`` (a boolean per token id).

    Cheaper than indexing the texts again: the entries keep their sorted order.

    Examples
    --------
    >>> import polars as pl
    >>> ids, lengths, size = tokenize_ids(pl.Series(["the cat and the hat", "the"]))
    >>> content = drop_terms(term_index(ids, lengths, size, 1), np.array([True, False, True, False]))
    >>> content.sizes.tolist(), content.n_tokens.tolist()
    ([2, 0], [2.0, 0.0])
    """
    keys = index.keys.to_numpy()
    keep = ~dropped[keys % index.base]  # a key is text * base + token
    counts = index.counts[keep]
    starts = _cumulative(keep)[index.starts]  # kept entries before each text's first one
    # per-text sums of integer counts as differences of running sums: exact below 2**53
    n_tokens = np.diff(_cumulative(counts)[starts])
    return TermIndex(starts=starts, counts=counts, n_tokens=n_tokens, base=index.base, keys=pl.Series("k", keys[keep]))


def group_sums(values: np.ndarray, starts: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """Sum of ``values[starts[i]:starts[i + 1]]`` for each group ``i`` (0 for an empty group), in ``dtype``.

    One ``np.add.reduceat`` pass, left to right within each group.

    Examples
    --------
    >>> group_sums(np.array([1.0, 2.0, 4.0]), np.array([0, 2, 2, 3])).tolist()
    [3.0, 0.0, 4.0]
    """
    sums = np.zeros(starts.size - 1, dtype=dtype)
    nonempty = starts[1:] > starts[:-1]
    if values.size:
        sums[nonempty] = np.add.reduceat(values, starts[:-1][nonempty], dtype=dtype)
    return sums


def _cumulative(values: np.ndarray) -> np.ndarray:
    """Running sums of ``values`` from 0: ``values.size + 1`` of them (int64 for flags, float64 for floats)."""
    out = np.zeros(values.size + 1, dtype=np.float64 if values.dtype.kind == "f" else np.int64)
    np.cumsum(values, out=out[1:])
    return out


def _dense(values: np.ndarray) -> tuple[np.ndarray, int]:
    uniq, inverse = np.unique(values, return_inverse=True)
    return inverse.astype(np.int64), max(int(uniq.size), 1)


def concat_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])``, without a loop.

    Examples
    --------
    >>> concat_ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist()
    [5, 6, 9, 10, 11]
    """
    lengths = lengths.astype(np.int64, copy=False)
    ends = np.cumsum(lengths)
    out = np.arange(int(ends[-1]) if ends.size else 0, dtype=np.int64)
    # each range's distance from its place in the output (a run-length repeat beats a running sum)
    out += np.repeat(starts.astype(np.int64, copy=False) - (ends - lengths), lengths)
    return out


@dataclass
class Common:
    """The grams each pair's two texts share (from :func:`common_entries`).

    ``pair`` and ``small_entry`` give, for every shared gram, its pair and its entry in the
    pair's smaller text; :meth:`large_entry` finds the entry in the other text (only the
    TF-IDF and token-F1 kernels need it).
    """

    pair: np.ndarray
    small_entry: np.ndarray
    hit_keys: np.ndarray
    swap: np.ndarray
    _large: np.ndarray | None = None

    def large_entry(self, index: TermIndex) -> np.ndarray:
        if self._large is None:
            self._large = np.searchsorted(index.keys.to_numpy(), self.hit_keys)
        return self._large


def common_entries(index: TermIndex, left: np.ndarray, right: np.ndarray) -> Common:
    """The grams shared by the two texts of each (left[i], right[i]) pair.

    The smaller text of each pair is expanded and its grams probed against the other's, so the
    cost is the size of the smaller sides, whatever the size of the larger.
    """
    return common_entries_many(index, [(left, right)])[0]


#: Keys in the hash set of one membership probe: the pairs are probed by ranges of their larger
#: texts, each range's keys a set small enough to be probed from the cache (measured: flat from
#: 75,000 to 300,000 keys, slower from 600,000).
PROBE_CHUNK_KEYS = 200_000
#: Probes whose keys span at most this many times the number of keys are looked up in one go
#: (polars then uses a bitmap, faster than any hash set).
_DENSE_SPAN = 64
#: Fewer probes than the keys of the probed texts over this ratio are binary-searched in the sorted
#: keys instead of hashed: building a hash set costs about as much per key as a search per probe
#: costs over 3 (measured: about 10 ns per key or probe hashed, 35 ns per probe searched).
_SEARCH_RATIO = 3


def common_entries_many(index: TermIndex, pair_lists: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[Common]:
    """:func:`common_entries` of several pair lists, sharing each membership probe's hash set.

    Building the hash set of the probed texts' grams costs more than probing it, so pair lists
    that compare against the same texts (every metric that reads the contexts) share the sets.
    The pairs are taken in order of their larger text (the text probed into) and probed by
    ranges of those texts: each range's set is a contiguous run of the sorted keys (no gather),
    about :data:`PROBE_CHUNK_KEYS` of them, small enough to stay in the cache, and each key is
    put in one set only. Few probes against many keys are binary-searched instead
    (:data:`_SEARCH_RATIO`, :func:`_common_by_search`). Either way each pair's shared grams
    come in the order of its smaller text's entries, so every per-pair sum over them is the
    same whatever the pairs' order.
    """
    if not pair_lists:
        return []
    sizes, keys = index.sizes, index.keys.to_numpy()
    plans = []
    for left, right in pair_lists:
        swap = sizes[left] > sizes[right]
        small = np.where(swap, right, left)
        large = np.where(swap, left, right)
        order = _stable_order(large, sizes.size)  # the pairs by the text they probe into
        plans.append((swap, order, small[order], large[order]))
    total = sum(int(sizes[small].sum()) for _, _, small, _ in plans)
    probed = np.zeros(sizes.size, dtype=bool)  # the texts probed into
    for *_, large in plans:
        probed[large] = True
    dense = keys.size > 0 and int(keys[-1] - keys[0]) <= _DENSE_SPAN * keys.size
    if not dense and total * _SEARCH_RATIO < int(sizes[probed].sum()):
        found = [[_common_by_search(index, keys, small, large)] for *_, small, large in plans]
    else:
        found = _common_by_hash(index, keys, [(small, large) for *_, small, large in plans], dense)
    out = []
    for (swap, order, *_), pieces in zip(plans, found):
        pair, entry, probe, at = (_joined(part) for part in zip(*pieces))
        out.append(Common(pair=order[pair], small_entry=entry, hit_keys=probe, swap=swap, _large=at))
    return out


def _joined(parts: tuple[np.ndarray | None, ...]) -> np.ndarray | None:
    """The arrays of ``parts`` end to end (None where they are None)."""
    if parts[0] is None:
        return None
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _stable_order(values: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` of integers in 0 .. bound - 1, by one sort of distinct keys.

    ``value * n + position`` is unique, so sorting it (a SIMD sort) gives the stable order, about
    6 times faster than NumPy's stable argsort.

    Examples
    --------
    >>> _stable_order(np.array([2, 0, 2, 1]), 3).tolist()
    [1, 3, 0, 2]
    """
    n = values.size
    if bound * max(n, 1) >= 2**62:
        return np.argsort(values, kind="stable")
    return np.sort(values.astype(np.int64) * n + np.arange(n)) % n


_Hits = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]


def _common_by_hash(
    index: TermIndex, keys: np.ndarray, lists: Sequence[tuple[np.ndarray, np.ndarray]], dense: bool
) -> list[list[_Hits]]:
    """The hits of pair lists sorted by larger text, probed into one hash set per range of larger texts.

    Returns, for each list, its hits range by range: (pair, entry in the smaller text, probe
    key, None: the entry in the larger text is searched when needed).
    """
    starts = index.starts
    chunks = 1 if dense else max(1, -(-keys.size // PROBE_CHUNK_KEYS))
    # text ranges of about keys.size / chunks keys each (a text's keys stay in one range)
    bounds = np.searchsorted(starts, np.linspace(0, keys.size, chunks + 1).astype(np.int64))
    bounds[0], bounds[-1] = 0, starts.size - 1
    found: list[list[_Hits]] = [[] for _ in lists]
    for t0, t1 in itertools.pairwise(bounds.tolist()):
        spans = [(int(np.searchsorted(large, t0)), int(np.searchsorted(large, t1))) for _, large in lists]
        if t1 <= t0 or all(a == b for a, b in spans):
            continue
        probes = [_probes(index, keys, small[a:b], large[a:b], a) for (small, large), (a, b) in zip(lists, spans)]
        flat = probes[0][2] if len(probes) == 1 else np.concatenate([probe for *_, probe in probes])
        key_set = pl.Series("k", keys[starts[t0] : starts[t1]])
        hits = pl.Series("k", flat).is_in(key_set.implode()).to_numpy()
        at = 0
        for pieces, (pair, entry, probe) in zip(found, probes):
            hit = np.flatnonzero(hits[at : at + probe.size])  # positions, then gathers: faster than boolean masks
            at += probe.size
            pieces.append((pair[hit], entry[hit], probe[hit], None))
    for pieces in found:
        if not pieces:
            pieces.append((np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), None))
    return found


def _probes(
    index: TermIndex, keys: np.ndarray, small: np.ndarray, large: np.ndarray, first: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The probes of pairs of texts: each gram of the smaller text, keyed as if in the larger one.

    Returns the pair (``first`` + its index in ``small``), the gram's entry in the smaller text
    and the probe key of each gram.
    """
    reps = index.sizes[small]
    stop = first + small.size
    pair = np.repeat(np.arange(first, stop, dtype=np.int32 if stop < 2**31 else np.int64), reps)
    entry = concat_ranges(index.starts[small], reps)
    probe = keys[entry]
    probe += np.repeat((large.astype(np.int64) - small) * index.base, reps)
    return pair, entry, probe


def _common_by_search(index: TermIndex, keys: np.ndarray, small: np.ndarray, large: np.ndarray) -> _Hits:
    """The hits of one pair list by binary search of the probes in the sorted keys.

    For few probes against many keys (:data:`_SEARCH_RATIO`): no hash set of the probed texts'
    keys to build, and the position of each hit in the larger text comes free
    (:meth:`Common.large_entry`). With the pairs in order of their larger text, consecutive
    searches end in the same few cache lines.

    Examples
    --------
    >>> import polars as pl
    >>> ids, lengths, size = tokenize_ids(pl.Series(["a b", "b c", "c d e"]))
    >>> index = term_index(ids, lengths, size, 1)
    >>> small, large = np.array([0, 1]), np.array([2, 2])  # "a b" and "b c", each against "c d e"
    >>> pair, entry, probe, large_entry = _common_by_search(index, index.keys.to_numpy(), small, large)
    >>> pair.tolist(), entry.tolist(), large_entry.tolist()
    ([1], [3], [4])
    """
    pair, entry, probe = _probes(index, keys, small, large)
    at = np.searchsorted(keys, probe)
    np.minimum(at, keys.size - 1, out=at)
    hit = np.flatnonzero(keys[at] == probe)
    return pair[hit], entry[hit], probe[hit], at[hit]


def _sum_by(group: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """Float sums of ``weights`` per group 0..size-1 (left to right within a group)."""
    return np.bincount(group, weights=weights, minlength=size).astype(np.float64, copy=False)


def pair_overlap(index: TermIndex, left: np.ndarray, right: np.ndarray, common: Common | None = None) -> np.ndarray:
    """Jaccard index of the gram SETS of each (left[i], right[i]) pair of texts.

    Both sets empty gives 1.0; exactly one empty gives 0.0 (spec ``ngram_overlap``).
    ``common`` is :func:`common_entries` of the same arguments, when already computed.
    """
    pair = (common or common_entries(index, left, right)).pair
    inter = np.bincount(pair, minlength=left.size).astype(np.float64)
    size_l, size_r = index.sizes[left].astype(np.float64), index.sizes[right].astype(np.float64)
    union = size_l + size_r - inter
    both_empty = (size_l == 0) & (size_r == 0)
    return np.where(both_empty, 1.0, np.divide(inter, union, out=np.zeros_like(inter), where=union > 0))


def pair_containment(index: TermIndex, left: np.ndarray, right: np.ndarray, common: Common | None = None) -> np.ndarray:
    """Share of the distinct grams of each left text found in its right text: |L & R| / |L|.

    A left text without grams gives 0.0 (nothing of it is supported). Unlike the Jaccard index
    (:func:`pair_overlap`), a short text fully contained in a long one scores 1.0 whatever the
    long one's length.

    Examples
    --------
    >>> import polars as pl
    >>> ids, lengths, size = tokenize_ids(pl.Series(["paris is big", "paris is the capital of france"]))
    >>> index = term_index(ids, lengths, size, 1)
    >>> pair_containment(index, np.array([0, 1]), np.array([1, 0])).round(4).tolist()
    [0.6667, 0.3333]
    """
    pair = (common or common_entries(index, left, right)).pair
    inter = np.bincount(pair, minlength=left.size).astype(np.float64)
    size_l = index.sizes[left].astype(np.float64)
    return np.divide(inter, size_l, out=np.zeros_like(inter), where=size_l > 0)


#: Scale of the integer sublinear-tf weights (each below 2**14, a product below 2**28): sums of up
#: to 2**25 products are exact in float64, so a pair's cosine does not depend on the order of its
#: terms (which follows the batch's numbering of tokens).
_LOG_TF_SCALE = 1 << 10


def _log_tf_weights(counts: np.ndarray) -> np.ndarray:
    return np.rint((1.0 + np.log(np.maximum(counts, 1.0))) * _LOG_TF_SCALE).astype(np.int64)


def _entry_log_tf_weights(counts: np.ndarray) -> np.ndarray:
    """:func:`_log_tf_weights` of integer ``counts`` as floats, one logarithm per distinct count (a table).

    Examples
    --------
    >>> _entry_log_tf_weights(np.array([1.0, 3.0, 1.0])).tolist() == _log_tf_weights(np.array([1.0, 3.0, 1.0])).tolist()
    True
    """
    top = int(counts.max()) if counts.size else 0
    table = _log_tf_weights(np.arange(top + 1, dtype=np.float64)).astype(np.float64)
    return table[counts.astype(np.int64)]


def pair_log_cosine(index: TermIndex, left: np.ndarray, right: np.ndarray, common: Common | None = None) -> np.ndarray:
    """Cosine of sublinear-tf vectors (weight 1 + ln count, no idf) of each (left[i], right[i]) pair.

    Weights are rounded to multiples of 2**-10 and their products summed exactly, so the
    result is the same in any batch. A text without terms gives 0.0.

    Examples
    --------
    >>> import polars as pl
    >>> ids, lengths, size = tokenize_ids(pl.Series(["cats purr cats", "cats sleep", "dogs"]))
    >>> index = term_index(ids, lengths, size, 1)
    >>> pair_log_cosine(index, np.array([0, 0, 1]), np.array([1, 2, 1])).round(3).tolist()  # by hand: 0.6088
    [0.609, 0.0, 1.0]
    """
    common = common or common_entries(index, left, right)
    weights = _entry_log_tf_weights(index.counts)
    dot = _sum_by(common.pair, weights[common.small_entry] * weights[common.large_entry(index)], left.size)
    norms = group_sums(weights * weights, index.starts)  # exact sums of integers: the same in any order
    denom = np.sqrt(norms[left] * norms[right])  # one root: identical texts give exactly 1
    cosine = np.divide(dot, denom, out=np.zeros(left.size), where=denom > 0)
    return np.minimum(cosine, 1.0)


def pair_tfidf(index: TermIndex, left: np.ndarray, right: np.ndarray, common: Common | None = None) -> np.ndarray:
    """TF-IDF cosine of each (left[i], right[i]) pair, each pair its own two-text corpus.

    ``index`` must hold unigrams. A term of both texts has idf 1, a term of one text
    1 + ln 1.5; tf = count / number of tokens.
    """
    common = common or common_entries(index, left, right)
    pair, swap = common.pair, common.swap
    # Sums over shared terms are of integer counts: exact, so independent of the order of the
    # terms (which depends on the batch's numbering of tokens).
    c_small = index.counts[common.small_entry]
    c_large = index.counts[common.large_entry(index)]
    p = left.size
    dot = _sum_by(pair, c_small * c_large, p)
    shared_small = _sum_by(pair, c_small**2, p)
    shared_large = _sum_by(pair, c_large**2, p)
    shared_l = np.where(swap, shared_large, shared_small)
    shared_r = np.where(swap, shared_small, shared_large)
    w = _IDF_ONE**2
    # |v|^2 of a text up to its tf denominator, which cancels in the cosine:
    # idf^2 * squared counts of the terms only it has + squared counts of the shared terms
    square_l = np.maximum(w * (index.sum_sq[left] - shared_l) + shared_l, 0.0)
    square_r = np.maximum(w * (index.sum_sq[right] - shared_r) + shared_r, 0.0)
    denom = np.sqrt(square_l * square_r)  # one root: identical texts give exactly 1
    cosine = np.divide(dot, denom, out=np.zeros_like(dot), where=denom > 0)
    return np.minimum(cosine, 1.0)  # identical texts can round to 1 + 2e-16


def pair_token_f1(
    index: TermIndex, reference: np.ndarray, hypothesis: np.ndarray, common: Common | None = None
) -> np.ndarray:
    """Token F1 (multiset overlap) of each (reference[i], hypothesis[i]) pair; ``index`` holds unigrams.

    0 when either side has no token or nothing is common.
    """
    common = common or common_entries(index, reference, hypothesis)
    pair, small_entry, large_entry = common.pair, common.small_entry, common.large_entry(index)
    shared = _sum_by(pair, np.minimum(index.counts[small_entry], index.counts[large_entry]), reference.size)
    len_ref, len_hyp = index.n_tokens[reference], index.n_tokens[hypothesis]
    precision = np.divide(shared, len_hyp, out=np.zeros_like(shared), where=len_hyp > 0)
    recall = np.divide(shared, len_ref, out=np.zeros_like(shared), where=len_ref > 0)
    total = precision + recall
    return np.divide(2 * precision * recall, total, out=np.zeros_like(shared), where=total > 0)


# ----------------------------------------------------------------------------- column pairs


def _column_pairs(a: pl.Series | Sequence[str | None], b: pl.Series | Sequence[str | None], n: int):
    left = pl.Series("a", a, dtype=pl.String)
    right = pl.Series("b", b, dtype=pl.String)
    if left.len() != right.len():
        raise ValueError(f"columns differ in length: {left.len()} and {right.len()}")
    texts = pl.concat([left, right])
    tokens = pl.select(tokenize_expr(pl.lit(texts))).to_series()
    index = term_index(*token_ids(tokens), n)
    rows = np.arange(left.len(), dtype=np.int64)
    return index, rows, rows + left.len()


def ngrams_column(tokens: pl.Series, n: int) -> pl.Series:
    """The n-grams of each list of tokens (list[str] in, list[str] out).

    Examples
    --------
    >>> import polars as pl
    >>> ngrams_column(pl.Series([["a", "b", "c"], ["x"]]), 2).to_list()
    [['a b', 'b c'], []]
    """
    lengths = tokens.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = tokens.explode(empty_as_null=False, keep_nulls=False)
    left = np.repeat(lengths, lengths) - (np.arange(flat.len()) - np.repeat(np.cumsum(lengths) - lengths, lengths))
    grams = pl.select(pl.concat_str([pl.lit(flat).shift(-j) for j in range(n)], separator=" ")).to_series()
    keep = left >= n
    counts = np.maximum(lengths - n + 1, 0)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    import pyarrow as pa

    values = grams.filter(pl.Series(keep)).to_arrow()
    return pl.Series(tokens.name, pa.LargeListArray.from_arrays(pa.array(offsets), values)).cast(pl.List(pl.String))


def ngram_overlap_column(a: pl.Series, b: pl.Series, n: int = 1) -> pl.Series:
    """Row-wise :func:`ngram_overlap` of two string columns.

    Examples
    --------
    >>> import polars as pl
    >>> ngram_overlap_column(pl.Series(["the cat sat", ""]), pl.Series(["the cat ran", ""])).to_list()
    [0.5, 1.0]
    """
    return pl.Series("ngram_overlap", pair_overlap(*_column_pairs(a, b, n)))


def tfidf_similarity_column(a: pl.Series, b: pl.Series) -> pl.Series:
    """Row-wise :func:`tfidf_similarity` of two string columns.

    Examples
    --------
    >>> import polars as pl
    >>> tfidf_similarity_column(pl.Series(["a b", "x"]), pl.Series(["a b", "y"])).round(12).to_list()
    [1.0, 0.0]
    """
    return pl.Series("tfidf_similarity", pair_tfidf(*_column_pairs(a, b, 1)))


def token_f1_column(reference: pl.Series, hypothesis: pl.Series) -> pl.Series:
    """Row-wise :func:`token_f1` of two string columns.

    Examples
    --------
    >>> import polars as pl
    >>> token_f1_column(pl.Series(["a b"]), pl.Series(["a c"])).to_list()
    [0.5]
    """
    return pl.Series("token_f1", pair_token_f1(*_column_pairs(reference, hypothesis, 1)))


def weighted_ngram_overlap_column(
    a: pl.Series, b: pl.Series, sizes: Sequence[int] = (1, 2), weights: Sequence[float] = (0.7, 0.3)
) -> pl.Series:
    """Row-wise :func:`weighted_ngram_overlap` of two string columns.

    Examples
    --------
    >>> import polars as pl
    >>> weighted_ngram_overlap_column(pl.Series(["Yes."]), pl.Series(["No."])).round(12).to_list()
    [0.3]
    """
    w = [float(weights[i]) if i < len(weights) else 1.0 for i in range(len(sizes))]
    total = sum(w)
    acc = np.zeros(len(a))
    for size, weight in zip(sizes, w):
        acc = acc + weight * ngram_overlap_column(a, b, size).to_numpy()
    return pl.Series("weighted_ngram_overlap", acc / total if total else np.zeros(len(a)))


# ----------------------------------------------------------------------------- one pair


def _pair_index(a: str | None, b: str | None, n: int) -> tuple[TermIndex, np.ndarray, np.ndarray]:
    return _column_pairs([a], [b], n)


def ngram_overlap(a: str | None, b: str | None, n: int = 1) -> float:
    """Jaccard index of the n-gram sets of two texts.

    Examples
    --------
    >>> ngram_overlap("the cat sat", "the cat ran")
    0.5
    """
    return float(pair_overlap(*_pair_index(a, b, n))[0])


def weighted_ngram_overlap(
    a: str | None, b: str | None, sizes: Sequence[int] = (1, 2), weights: Sequence[float] = (0.7, 0.3)
) -> float:
    """Weighted mean of :func:`ngram_overlap` over n-gram sizes (a missing weight counts as 1).

    Examples
    --------
    >>> weighted_ngram_overlap("Yes.", "No.")
    0.3
    """
    w = [float(weights[i]) if i < len(weights) else 1.0 for i in range(len(sizes))]
    total = sum(w)
    if total == 0:
        return 0.0
    acc = 0.0
    for size, weight in zip(sizes, w):
        acc += weight * ngram_overlap(a, b, size)
    return acc / total


def tfidf_similarity(a: str | None, b: str | None) -> float:
    """TF-IDF cosine of two texts over their own two-text corpus.

    Examples
    --------
    >>> round(tfidf_similarity("the cat", "the cat"), 12)
    1.0
    """
    return float(pair_tfidf(*_pair_index(a, b, 1))[0])


def token_f1(reference: str | None, hypothesis: str | None) -> float:
    """Token F1 of a hypothesis against a reference (multiset overlap).

    Examples
    --------
    >>> round(token_f1("a b b c", "b b d"), 12)  # P = 2/3, R = 2/4
    0.571428571429
    """
    return float(pair_token_f1(*_pair_index(reference, hypothesis, 1))[0])
