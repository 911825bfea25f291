"""Text kernels: tokenisation, sentences, n-grams and set/vector similarities over whole columns.

Semantics are those of ``spec/heuristics.md`` (the rag-eval-node-ts primitives, made
precise): lower-case, split on runs of JavaScript whitespace or Unicode punctuation
(category P*); sentences end at ``.``, ``!`` or ``?`` followed by whitespace and an ASCII
capital letter.

Column kernels take polars Series/Expr and work on all rows at once (Rust regexes in
polars; joins and group-bys for the pairwise similarities). The plain functions
(:func:`tokenize`, :func:`split_sentences`, :func:`ngram_overlap`, ...) handle one string
or one pair and are built on the same kernels, so there is one definition of each rule.

The pairwise kernels work on *units*: a unit is one text (a question, an answer, one
sentence, one context chunk) with an integer id. :func:`unit_terms` gives each unit's
distinct terms (n-grams) with their counts; :func:`pair_overlap` and :func:`pair_tfidf`
compare listed pairs of units by joining their terms, so a pair that shares no term costs
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

__all__ = [
    "JS_WHITESPACE",
    "tokenize_expr",
    "sentences_expr",
    "tokenize",
    "split_sentences",
    "ngrams",
    "ngram_overlap",
    "weighted_ngram_overlap",
    "tfidf_similarity",
    "token_f1",
    "unit_terms",
    "pair_overlap",
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
    flat = pl.Series("token", list(tokens), dtype=pl.String)
    return _flat_ngrams(pl.DataFrame({"unit": np.zeros(flat.len(), dtype=np.int64), "token": flat}), n)[
        "term"
    ].to_list()


# ----------------------------------------------------------------------------- unit kernels


def _flat_tokens(unit: np.ndarray, tokens: pl.Series) -> pl.DataFrame:
    """(unit, pos, token) rows from a list[str] Series of tokens per unit."""
    lengths = tokens.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat = tokens.explode(empty_as_null=False, keep_nulls=False)
    unit_of = np.repeat(unit, lengths)
    starts = np.cumsum(lengths) - lengths
    pos = np.arange(flat.len(), dtype=np.int64) - np.repeat(starts, lengths)
    remaining = np.repeat(lengths, lengths) - pos  # tokens from here to the end of the unit
    return pl.DataFrame({"unit": unit_of, "pos": pos, "left": remaining, "token": flat})


def _flat_ngrams(flat: pl.DataFrame, n: int) -> pl.DataFrame:
    """(unit, term) rows: every n-gram occurrence of every unit."""
    if "left" not in flat.columns:
        counts = flat.group_by("unit", maintain_order=True).len()
        flat = flat.join(counts, on="unit").with_columns(left=pl.col("len") - pl.int_range(pl.len()).over("unit"))
    if n == 1:
        return flat.select("unit", pl.col("token").alias("term"))
    parts = [pl.col("token")] + [pl.col("token").shift(-j) for j in range(1, n)]
    return (
        flat.select("unit", pl.concat_str(parts, separator=" ").alias("term"), "left")
        .filter(pl.col("left") >= n)
        .select("unit", "term")
    )


def unit_terms(unit: np.ndarray, tokens: pl.Series, n: int) -> pl.DataFrame:
    """Distinct n-grams of each unit with their counts, and each unit's totals.

    Parameters
    ----------
    unit : numpy.ndarray
        Unit id of each element of ``tokens`` (int64).
    tokens : polars.Series
        list[str] tokens per unit.
    n : int
        n-gram size.

    Returns
    -------
    polars.DataFrame
        ``unit, term, count``: one row per distinct (unit, n-gram).
    """
    grams = _flat_ngrams(_flat_tokens(unit, tokens), n)
    return grams.group_by("unit", "term").agg(pl.len().alias("count"))


def _sizes(terms: pl.DataFrame, units: np.ndarray) -> np.ndarray:
    """Number of distinct terms of each unit of ``units`` (0 when it has none)."""
    per = terms.group_by("unit").agg(pl.len().alias("n"))
    looked = pl.DataFrame({"unit": units}).join(per, on="unit", how="left", maintain_order="left")
    return looked.get_column("n").fill_null(0).to_numpy().astype(np.float64)


def pair_overlap(terms: pl.DataFrame, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Jaccard index of the term SETS of each (left[i], right[i]) pair of units.

    Both sets empty gives 1.0; exactly one empty gives 0.0 (spec ``ngram_overlap``).
    """
    pairs = pl.DataFrame({"pair": np.arange(len(left), dtype=np.int64), "l": left, "r": right})
    a = terms.select(pl.col("unit").alias("l"), "term")
    b = terms.select(pl.col("unit").alias("r"), "term")
    common = pairs.join(a, on="l").join(b, on=["r", "term"]).group_by("pair").agg(pl.len().alias("c"))
    inter = np.zeros(len(left), dtype=np.float64)
    inter[common.get_column("pair").to_numpy()] = common.get_column("c").to_numpy()
    size_l, size_r = _sizes(terms, left), _sizes(terms, right)
    union = size_l + size_r - inter
    both_empty = (size_l == 0) & (size_r == 0)
    return np.where(both_empty, 1.0, np.divide(inter, union, out=np.zeros_like(inter), where=union > 0))


def pair_tfidf(terms: pl.DataFrame, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """TF-IDF cosine of each (left[i], right[i]) pair, each pair its own two-text corpus.

    ``terms`` must be unigram terms with counts (:func:`unit_terms` with n=1).
    """
    with_tf = terms.with_columns((pl.col("count") / pl.col("count").sum().over("unit")).alias("tf"))
    pairs = pl.DataFrame({"pair": np.arange(len(left), dtype=np.int64), "l": left, "r": right})
    a = with_tf.select(pl.col("unit").alias("l"), "term", pl.col("tf").alias("ta"))
    b = with_tf.select(pl.col("unit").alias("r"), "term", pl.col("tf").alias("tb"))
    common = (
        pairs.join(a, on="l")
        .join(b, on=["r", "term"])
        .group_by("pair")
        .agg(
            (pl.col("ta") * pl.col("tb")).sum().alias("dot"),
            (pl.col("ta") ** 2).sum().alias("sa"),
            (pl.col("tb") ** 2).sum().alias("sb"),
        )
    )
    dot = np.zeros(len(left))
    common_a = np.zeros(len(left))
    common_b = np.zeros(len(left))
    idx = common.get_column("pair").to_numpy()
    dot[idx] = common.get_column("dot").to_numpy()
    common_a[idx] = common.get_column("sa").to_numpy()
    common_b[idx] = common.get_column("sb").to_numpy()
    sq = with_tf.group_by("unit").agg((pl.col("tf") ** 2).sum().alias("s"))
    total_a = _lookup(sq, left)
    total_b = _lookup(sq, right)
    w = _IDF_ONE**2
    norm_a = np.sqrt(np.maximum(w * (total_a - common_a) + common_a, 0.0))
    norm_b = np.sqrt(np.maximum(w * (total_b - common_b) + common_b, 0.0))
    denom = norm_a * norm_b
    cosine = np.divide(dot, denom, out=np.zeros_like(dot), where=denom > 0)
    return np.minimum(cosine, 1.0)  # identical texts can round to 1 + 2e-16


def _lookup(per_unit: pl.DataFrame, units: np.ndarray) -> np.ndarray:
    looked = pl.DataFrame({"unit": units}).join(per_unit, on="unit", how="left", maintain_order="left")
    return looked.get_column(per_unit.columns[1]).fill_null(0.0).to_numpy().astype(np.float64)


def pair_token_f1(terms: pl.DataFrame, reference: np.ndarray, hypothesis: np.ndarray) -> np.ndarray:
    """Token F1 (multiset overlap) of each (reference[i], hypothesis[i]) pair of units.

    ``terms`` must be unigram terms with counts. 0 when either side has no token or
    nothing is common.
    """
    pairs = pl.DataFrame({"pair": np.arange(len(reference), dtype=np.int64), "l": reference, "r": hypothesis})
    a = terms.select(pl.col("unit").alias("l"), "term", pl.col("count").alias("ca"))
    b = terms.select(pl.col("unit").alias("r"), "term", pl.col("count").alias("cb"))
    common = (
        pairs.join(a, on="l")
        .join(b, on=["r", "term"])
        .group_by("pair")
        .agg(pl.min_horizontal("ca", "cb").sum().alias("c"))
    )
    shared = np.zeros(len(reference))
    shared[common.get_column("pair").to_numpy()] = common.get_column("c").to_numpy()
    length = terms.group_by("unit").agg(pl.col("count").sum().alias("n"))
    len_ref = _lookup(length, reference)
    len_hyp = _lookup(length, hypothesis)
    precision = np.divide(shared, len_hyp, out=np.zeros_like(shared), where=len_hyp > 0)
    recall = np.divide(shared, len_ref, out=np.zeros_like(shared), where=len_ref > 0)
    total = precision + recall
    return np.divide(2 * precision * recall, total, out=np.zeros_like(shared), where=total > 0)


# ----------------------------------------------------------------------------- one pair


def _pair_units(a: str | None, b: str | None) -> tuple[np.ndarray, pl.Series]:
    texts = pl.Series("t", [a, b], dtype=pl.String)
    tokens = pl.select(tokenize_expr(pl.lit(texts))).to_series()
    return np.array([0, 1], dtype=np.int64), tokens


def ngram_overlap(a: str | None, b: str | None, n: int = 1) -> float:
    """Jaccard index of the n-gram sets of two texts.

    Examples
    --------
    >>> ngram_overlap("the cat sat", "the cat ran")
    0.5
    """
    units, tokens = _pair_units(a, b)
    return float(pair_overlap(unit_terms(units, tokens, n), units[:1], units[1:])[0])


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
    units, tokens = _pair_units(a, b)
    return float(pair_tfidf(unit_terms(units, tokens, 1), units[:1], units[1:])[0])


def token_f1(reference: str | None, hypothesis: str | None) -> float:
    """Token F1 of a hypothesis against a reference (multiset overlap).

    Examples
    --------
    >>> round(token_f1("a b b c", "b b d"), 12)  # P = 2/3, R = 2/4
    0.571428571429
    """
    units, tokens = _pair_units(reference, hypothesis)
    return float(pair_token_f1(unit_terms(units, tokens, 1), units[:1], units[1:])[0])
