"""Text primitives: the hand-worked examples of spec/heuristics.md and properties of the column kernels."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragframe.kernels import text


@pytest.mark.parametrize(
    ("source", "tokens"),
    [
        ("Don't stop", ["don", "t", "stop"]),
        ("state-of-the-art", ["state", "of", "the", "art"]),
        ("$100 a+b x=y <tag>", ["$100", "a+b", "x=y", "<tag>"]),
        ("a\u0085b", ["a\u0085b"]),  # U+0085 is not JavaScript whitespace
        ("a\u001cb", ["a\u001cb"]),
        ("a\ufeffb\u3000c\u2028d", ["a", "b", "c", "d"]),  # U+FEFF is
        ("«Quoted» — dash…", ["quoted", "dash"]),
        ("ΟΔΟΣ Straße", ["οδος", "straße"]),  # full Unicode lower-casing, final sigma
        ("", []),
        (None, []),
    ],
)
def test_tokenize(source, tokens):
    assert text.tokenize(source) == tokens


@pytest.mark.parametrize(
    ("source", "sentences"),
    [
        ("Dr. Smith went home. He slept.", ["Dr.", "Smith went home.", "He slept."]),
        ("Really?! yes.", ["Really?! yes."]),
        ("no terminal punctuation", ["no terminal punctuation"]),
        ("   \t ", []),
        ("One.\u2028Two!\u00a0Three? ", ["One.", "Two!", "Three?"]),
        ("Ends here.   ", ["Ends here."]),
        ("a.B", ["a.B"]),  # no whitespace after the period
    ],
)
def test_split_sentences(source, sentences):
    assert text.split_sentences(source) == sentences


def test_ngrams():
    assert text.ngrams(["a", "b", "c"], 2) == ["a b", "b c"]
    assert text.ngrams(["a"], 2) == []
    assert text.ngrams(["a", "b", "c"], 3) == ["a b c"]


def test_ngram_overlap_and_weighted():
    assert text.ngram_overlap("the cat sat", "the cat ran") == 0.5
    assert text.ngram_overlap("", "") == 1.0
    assert text.ngram_overlap("a", "") == 0.0
    assert text.ngram_overlap("Yes.", "No.", 2) == 1.0  # both bigram sets empty
    assert text.weighted_ngram_overlap("Yes.", "No.") == pytest.approx(0.3)
    assert text.weighted_ngram_overlap("a b", "a c", sizes=(1, 2), weights=(1.0,)) == pytest.approx((1 / 3 + 0) / 2)
    assert text.weighted_ngram_overlap("a", "a", sizes=(1,), weights=(0.0,)) == 0.0


def test_tfidf_similarity_hand_worked():
    # q = "a b", d = "a c": tf 1/2 each; idf(a) = 1 (in both), idf(b) = idf(c) = 1 + ln 1.5
    idf = 1 + math.log(1.5)
    expected = (0.5 * 0.5) / (math.sqrt(0.25 + (0.5 * idf) ** 2) ** 2)
    assert text.tfidf_similarity("a b", "a c") == pytest.approx(expected, abs=1e-15)
    assert text.tfidf_similarity("", "a") == 0.0
    assert text.tfidf_similarity("a a b", "a a b") == 1.0


def test_token_f1_hand_worked():
    assert text.token_f1("a b b c", "b b d") == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    assert text.token_f1("", "") == 0.0
    assert text.token_f1("a", "b") == 0.0


WORDS = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=8).map(" ".join)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(WORDS, WORDS), min_size=1, max_size=12), st.integers(1, 3))
def test_column_kernels_equal_set_arithmetic(pairs, n):
    left = [a for a, _ in pairs]
    right = [b for _, b in pairs]
    texts = pl.Series(left + right)
    tokens = pl.select(text.tokenize_expr(pl.lit(texts))).to_series()
    units = np.arange(len(texts))
    index = text.term_index(*text.token_ids(tokens), n)
    got = text.pair_overlap(index, units[: len(pairs)], units[len(pairs) :])
    for value, a, b in zip(got, left, right, strict=True):
        ga = {" ".join(a.split()[i : i + n]) for i in range(len(a.split()) - n + 1)}
        gb = {" ".join(b.split()[i : i + n]) for i in range(len(b.split()) - n + 1)}
        expected = 1.0 if not ga and not gb else len(ga & gb) / len(ga | gb)
        assert value == pytest.approx(expected, abs=1e-15)
        assert value == text.ngram_overlap(a, b, n)


def test_column_kernels_match_the_one_string_functions():
    a = pl.Series(["The cat sat.", "", None, "Yes.", "a b b c"])
    b = pl.Series(["the cat ran", "", "x", "No.", "b b d"])
    pairs = list(zip(a.to_list(), b.to_list(), strict=True))
    assert text.ngram_overlap_column(a, b, 2).to_list() == [text.ngram_overlap(x, y, 2) for x, y in pairs]
    assert text.tfidf_similarity_column(a, b).to_list() == [text.tfidf_similarity(x, y) for x, y in pairs]
    assert text.token_f1_column(a, b).to_list() == [text.token_f1(x, y) for x, y in pairs]
    assert text.weighted_ngram_overlap_column(a, b).to_list() == pytest.approx(
        [text.weighted_ngram_overlap(x, y) for x, y in pairs]
    )
    tokens = pl.select(text.tokenize_expr(pl.lit(a))).to_series()
    assert text.ngrams_column(tokens, 2).to_list() == [text.ngrams(t, 2) for t in tokens.to_list()]
    with pytest.raises(ValueError, match="differ in length"):
        text.token_f1_column(a, b.head(2))


def test_tokenize_ids_in_parallel_pieces_equals_one_pass():
    """Token ids from pieces tokenised on threads equal those of one sequential pass."""
    rng = np.random.default_rng(5)
    words = np.array(["alpha", "Beta", "gamma.", "delta,", "épsilon", "ZETA", "eta-theta", "iota"])
    texts = pl.Series([" ".join(rng.choice(words, size=rng.integers(0, 12))) for _ in range(3500)])
    whole = text.token_ids(pl.select(text.tokenize_expr(pl.lit(texts))).to_series())
    for parts, threads in ((1, None), (2, None), (3, 2), (8, 2)):
        ids, lengths, size = text.tokenize_ids(texts, parts=parts, threads=threads)
        np.testing.assert_array_equal(ids, whole[0])
        np.testing.assert_array_equal(lengths, whole[1])
        assert size == whole[2]
