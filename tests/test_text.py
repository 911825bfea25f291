"""Text primitives: the hand-worked examples of spec/heuristics.md and properties of the column kernels."""

from __future__ import annotations

import itertools
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


@pytest.mark.slow
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


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.sampled_from(["", "a", "b", "ab", "B", "é", "e\u0301", "a b"]), min_size=1, max_size=8),
    st.integers(0, 4500),
    st.integers(0, 2**32 - 1),
)
def test_distinct_codes_in_parallel_slices_equal_one_dictionary(choices, size, seed):
    """Codes from slices coded on threads equal one categorical pass: same numbers, same distinct texts."""
    texts = np.random.default_rng(seed).choice(np.array(choices, dtype=object), size=size).tolist()
    series = pl.Series(texts, dtype=pl.String)
    whole = series.cast(pl.Categorical(pl.Categories.random())).to_physical().to_numpy().astype(np.int64)
    expected = list(dict.fromkeys(texts))  # first appearance order
    for parts, threads in ((1, None), (2, None), (3, 2), (8, 2)):
        codes, distinct = text.distinct_codes(series, parts=parts, threads=threads)
        np.testing.assert_array_equal(codes, whole)
        assert distinct.to_list() == expected


def test_tokenize_vocabulary_cleans_each_slice_as_the_whole():
    """``clean=`` applied slice by slice on the threads gives the tokens of cleaning the whole column first."""
    rng = np.random.default_rng(7)
    words = np.array(["Cafe\u0301", "ze\u200bro", "plain", "\u201cquoted\u201d", "東京", "Word"])
    texts = pl.Series([" ".join(rng.choice(words, size=rng.integers(0, 9))) for _ in range(2500)])
    rules = text.UNICODE_RULES
    whole = text.tokenize_vocabulary(rules.clean(texts), tokens=rules.tokens)
    for parts in (1, 3):
        got = text.tokenize_vocabulary(texts, parts=parts, threads=2, tokens=rules.tokens, clean=rules.clean)
        np.testing.assert_array_equal(got[0], whole[0])
        np.testing.assert_array_equal(got[1], whole[1])
        assert got[2] == whole[2] and got[3].equals(whole[3])
    assert not text.tokenize_vocabulary(texts, tokens=rules.tokens)[3].equals(whole[3])  # cleaning matters here


# ----------------------------------------------------------------------------- unicode_clean's shortcut


def _old_clean(texts: pl.Series) -> pl.Series:
    """unicode_clean as it was: NFC and invisible characters removed on every text."""
    return texts.str.normalize("NFC").str.replace_all(text._INVISIBLE, "")


def test_composing_starters_are_every_starter_second_of_a_canonical_pair():
    """_COMPOSING_STARTERS holds every class-0 character that is the second half of a canonical pair."""
    import unicodedata

    seconds = set()
    for code in range(0x110000):
        mapping = unicodedata.decomposition(chr(code))
        if mapping and not mapping.startswith("<") and len(mapping.split()) == 2:
            second = chr(int(mapping.split()[1], 16))
            if unicodedata.combining(second) == 0:
                seconds.add(second)
    assert seconds <= text._COMPOSING_STARTERS
    assert len(seconds) == 26  # the 26 listed, Hangul jamo (composed by rule, not by table) apart


@pytest.mark.slow
def test_characters_said_unchanged_are_unchanged_by_polars_nfc():
    """Every code point changed_by_clean calls safe is its own NFC in polars (the engine that cleans)."""
    import unicodedata

    chars = [chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000]
    safe = pl.Series([c for c in chars if not text.changed_by_clean(c)])
    assert safe.len() > 100_000
    assert (_old_clean(safe) == safe).all()
    # after the first half of every canonical pair whose second half is a starter, a Hangul
    # leading consonant and syllable, and base letters: nothing composes with a safe character
    firsts = {"a", "e", "A", "\u1100", "\uac00"}
    for code in range(0x110000):
        mapping = unicodedata.decomposition(chr(code))
        if mapping and not mapping.startswith("<") and len(mapping.split()) == 2:
            first, second = (chr(int(h, 16)) for h in mapping.split())
            if unicodedata.combining(second) == 0:
                firsts.add(first)
    bmp = safe.filter(safe.str.len_bytes() <= 3)
    around = pl.select(pl.concat_str([pl.lit(f) + pl.lit(bmp) for f in sorted(firsts)])).to_series()
    assert (_old_clean(around) == around).all()


_MIXED = st.sampled_from(
    [
        *"aeAoK ,.",
        *"\u2019\u201c\u2014\u2026\u00e9\u00df\u4e2d\u3042\u0391",  # safe
        *"\u0301\u0308\u0323\u212b\u2126\u0340\u037e\uf900",  # marks, singletons
        *"\u1100\u1161\u11a8\uac00\u0995\u09c7\u09be\u0b47\u0b3e",  # jamo, Indic vowel signs
        *"\u200b\u200d\u00ad\ufeff\u2060\U0001f600\U000e0001\U0003ffff",  # invisible, astral
    ]
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_MIXED, max_size=12).map("".join), min_size=1, max_size=30))
def test_unicode_clean_equals_nfc_of_every_text(texts):
    """Skipping the texts without a changing character gives exactly NFC + invisibles removed on all."""
    series = pl.Series(texts, dtype=pl.String)
    expected = _old_clean(series).to_list()
    assert text.unicode_clean(series).to_list() == expected
    assert series.to_list() == texts  # the input is left alone


@pytest.mark.parametrize(
    ("source", "cleaned"),
    [
        ("\u201cquoted\u201d \u2014 it\u2019s", "\u201cquoted\u201d \u2014 it\u2019s"),  # nothing to do
        ("Cafe\u0301", "Caf\u00e9"),  # combining mark composes
        ("\u212bngstr\u00f6m", "\u00c5ngstr\u00f6m"),  # singleton Angstrom sign -> A with ring
        ("\u1100\u1161\u11a8", "\uac01"),  # Hangul jamo compose by rule
        ("\u09c7\u09be", "\u09cb"),  # Bengali vowel signs compose (a class-0 second half)
        ("ze\u200bro\u00ad", "zero"),  # invisibles removed
        ("\u2019 and e\u0301", "\u2019 and \u00e9"),  # a safe character beside one that changes
        (None, None),
    ],
)
def test_unicode_clean_cases(source, cleaned):
    assert text.unicode_clean(pl.Series([source, "plain"], dtype=pl.String)).to_list() == [cleaned, "plain"]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcdef"), max_size=9).map(" ".join), min_size=2, max_size=25),
    st.integers(1, 3),
    st.integers(1, 40),
    st.randoms(use_true_random=False),
)
def test_shared_grams_do_not_depend_on_the_probe_chunks(texts, n, chunk_keys, rnd):
    """Probing the pairs in chunks of any size, or by binary search, finds exactly the grams one probe of all finds."""
    ids, lengths, size = text.tokenize_ids(pl.Series(texts))
    index = text.term_index(ids, lengths, size, n)
    keys = index.keys.to_numpy()

    def grams(t):
        return set(keys[index.starts[t] : index.starts[t + 1]] - t * index.base)

    def pick(k):
        return np.array([rnd.randrange(len(texts)) for _ in range(k)], dtype=np.int64)

    pairs = [(pick(k), pick(k)) for k in (rnd.randrange(30), rnd.randrange(30))]

    def probe(chunk_keys, dense_span, search_ratio):
        saved = text.PROBE_CHUNK_KEYS, text._DENSE_SPAN, text._SEARCH_RATIO
        try:
            text.PROBE_CHUNK_KEYS, text._DENSE_SPAN, text._SEARCH_RATIO = chunk_keys, dense_span, search_ratio
            return text.common_entries_many(index, pairs)
        finally:
            text.PROBE_CHUNK_KEYS, text._DENSE_SPAN, text._SEARCH_RATIO = saved

    whole = probe(10**9, 64, 10**9)  # one hash set of all keys
    for (left, right), common in zip(pairs, whole):  # shared grams by set arithmetic
        shared = np.bincount(common.pair, minlength=left.size).tolist()
        assert shared == [len(grams(a) & grams(b)) for a, b in zip(left, right)]
    chunked = probe(chunk_keys, 0, 10**9)  # hash sets of ranges of texts, even where the keys are dense
    searched = probe(chunk_keys, 0, 0)  # binary search of every probe
    for a, b, c in zip(whole, chunked, searched):  # the same hits, each pair's in the same order
        for other in (b, c):
            mine, theirs = np.argsort(a.pair, kind="stable"), np.argsort(other.pair, kind="stable")
            np.testing.assert_array_equal(a.pair[mine], other.pair[theirs])
            np.testing.assert_array_equal(a.small_entry[mine], other.small_entry[theirs])
            np.testing.assert_array_equal(a.hit_keys[mine], other.hit_keys[theirs])
            np.testing.assert_array_equal(a.large_entry(index)[mine], other.large_entry(index)[theirs])


_PIECES = [
    *"aZb \u03a3\u03c3\u03c2\u0391\u039f.,'-_\n\t\u00a0\u0301",
    *"\u200b\u200d\x00\u0130\u00df\u6771\u30bf$!?\u3002\u3000\u00e99",
]
#: Texts of sigmas, marks, zero-width characters, NULs, CJK and sentence ends, for the tokeniser's edge cases.
_TRICKY = st.lists(st.sampled_from([*_PIECES, "Word", ". ", "? \u03a3"]), max_size=25).map("".join)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_TRICKY, _TRICKY), min_size=1, max_size=30), st.sampled_from(["seed", "unicode"]))
def test_answers_tokenised_through_their_sentences_get_their_own_tokens(rows, which):
    """An answer's or ground truth's tokens built from its sentences' equal tokenising it (sentence_tokens)."""
    import dataclasses

    from ragframe.metrics import text_engine

    rules = text.SEED_RULES if which == "seed" else text.UNICODE_RULES
    answers, truths = [a for a, _ in rows], [g for _, g in rows]
    df = pl.DataFrame({"question": ["q"] * len(rows), "answer": answers, "contexts": [[g] for g in truths]})
    df = df.with_columns(ground_truth=pl.Series(truths))
    roles = {"question", "answer", "contexts", "ground_truth", "answer_sentences", "ground_truth_sentences"}
    columns = {role: role for role in ("question", "answer", "contexts", "ground_truth")}
    sequences = []
    for built in (False, True):
        batch = text_engine.TextBatch(
            df, columns, roles, {1: {"answer"}}, dataclasses.replace(rules, sentence_tokens=built)
        )
        tokens = batch.text_tokens(np.arange(batch.token_count.size))
        sequences.append([part.tolist() for part in np.split(tokens, np.cumsum(batch.token_count)[:-1])])
    # the token ids differ (numbered in another order); compare the strings they stand for
    assert [len(s) for s in sequences[0]] == [len(s) for s in sequences[1]]
    flat = [[t for seq in sequences[i] for t in seq] for i in (0, 1)]
    mapping = dict(zip(flat[1], flat[0]))
    assert [mapping[t] for t in flat[1]] == flat[0] and len(set(mapping.values())) == len(mapping)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefg"), max_size=12).map(" ".join), min_size=1, max_size=20))
def test_drop_terms_equals_indexing_the_kept_tokens(texts):
    ids, lengths, size = text.tokenize_ids(pl.Series(texts))
    dropped = np.arange(size) % 3 == 0
    content = text.drop_terms(text.term_index(ids, lengths, size, 1), dropped)
    kept = ~dropped[ids]
    text_of = np.repeat(np.arange(lengths.size), lengths)
    again = text.term_index(ids[kept], np.bincount(text_of[kept], minlength=lengths.size), size, 1)
    for name in ("starts", "counts", "n_tokens", "sum_sq"):
        np.testing.assert_array_equal(getattr(content, name), getattr(again, name))
    assert content.keys.equals(again.keys) and content.base == again.base


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("aabbbcd"), max_size=12).map(" ".join), min_size=1, max_size=12),
    st.randoms(use_true_random=False),
)
def test_log_cosine_equals_the_formula_pair_by_pair(texts, rnd):
    """pair_log_cosine is exactly sum(w_l * w_r) / sqrt(sum w_l^2 * sum w_r^2), w = rint((1 + ln count) * 2**10)."""
    from collections import Counter

    ids, lengths, size = text.tokenize_ids(pl.Series(texts))
    index = text.term_index(ids, lengths, size, 1)
    left = np.array([rnd.randrange(len(texts)) for _ in range(20)], dtype=np.int64)
    right = np.array([rnd.randrange(len(texts)) for _ in range(20)], dtype=np.int64)

    def weights(t):
        return {w: round((1 + math.log(c)) * 1024) for w, c in Counter(texts[t].split()).items()}

    expected = []
    for a, b in zip(left, right):
        wa, wb = weights(a), weights(b)
        denom = math.sqrt(float(sum(v * v for v in wa.values())) * float(sum(v * v for v in wb.values())))
        dot = float(sum(v * wb[w] for w, v in wa.items() if w in wb))
        expected.append(min(dot / denom, 1.0) if denom > 0 else 0.0)
    assert text.pair_log_cosine(index, left, right).tolist() == expected


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=50), st.sampled_from([10, 2**61]))
def test_stable_order_is_a_stable_argsort(values, bound):
    """Both ways (one sort of value * n + position, or NumPy's stable argsort for huge bounds) agree."""
    values = np.array(values, dtype=np.int64)
    np.testing.assert_array_equal(text._stable_order(values, bound), np.argsort(values, kind="stable"))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("aabbcdef"), max_size=10).map(" ".join), min_size=1, max_size=20),
    st.integers(1, 3),
    st.randoms(use_true_random=False),
)
def test_take_texts_equals_indexing_the_taken_texts(texts, n, rnd):
    """Texts taken from an index built in parts are keyed, counted and ordered as if indexed anew."""
    ids, lengths, size = text.tokenize_ids(pl.Series(texts))
    ends = np.concatenate([[0], np.cumsum(lengths)])
    cuts = sorted({0, len(texts), *(rnd.randrange(len(texts) + 1) for _ in range(rnd.randrange(4)))})
    parts = [text.term_index(ids[ends[a] : ends[b]], lengths[a:b], size, n) for a, b in itertools.pairwise(cuts)]
    parts = [text.narrow_counts(part) if rnd.random() < 0.5 else part for part in parts]  # counts of any type
    taken = np.array(sorted(rnd.sample(range(len(texts)), rnd.randrange(len(texts) + 1))), dtype=np.int64)
    total = taken.size + rnd.randrange(5)
    into = np.array(sorted(rnd.sample(range(total), taken.size)), dtype=np.int64)
    got = text.take_texts(parts, taken, into, total)
    kept = np.zeros(total, dtype=np.int64)
    kept[into] = lengths[taken]
    tokens = ids[text.concat_ranges(ends[:-1][taken], lengths[taken])]
    again = text.term_index(tokens, kept, size, n)
    for name in ("starts", "counts", "n_tokens"):
        np.testing.assert_array_equal(getattr(got, name), getattr(again, name))
    assert got.keys.equals(again.keys) and got.base == again.base
    assert got.counts.dtype == again.counts.dtype and got.keys.dtype == again.keys.dtype


def test_narrow_counts_keeps_every_count():
    ids, lengths, size = text.tokenize_ids(pl.Series(["a " * 300 + "b", "c c"]))
    index = text.term_index(ids, lengths, size, 1)
    narrow = text.narrow_counts(index)
    assert narrow.counts.dtype == np.uint16 and narrow.counts.tolist() == [300, 1, 2]
    assert narrow.keys.equals(index.keys) and narrow.starts.tolist() == index.starts.tolist()
    taken = text.take_texts([narrow], np.array([0, 1]), np.array([0, 1]), 2)
    assert taken.counts.dtype == np.float64 and taken.counts.tolist() == [300.0, 1.0, 2.0]


#: (vocabulary, n, texts): plain spans, renumbered in the n-gram loop, and either side of the final bound
_SPANS = [(7, 1, 3), (7, 3, 3), (0, 2, 1), (2**21, 3, 4), (2**31, 2, 1), (2**44, 1, 2**18), (2**44 + 1, 1, 2**18)]


@pytest.mark.parametrize(("vocabulary", "n", "n_texts"), _SPANS)
def test_gram_span_is_the_span_term_index_keys_with(vocabulary, n, n_texts):
    """Where gram_span gives a span, term_index's base is span + 1; where it gives None, term_index renumbers."""
    ids = np.array([0, vocabulary - 1, 1, 0][: 4 if vocabulary else 0], dtype=np.int64)
    lengths = np.zeros(n_texts, dtype=np.int64)
    lengths[0] = ids.size
    span = text.gram_span(vocabulary, n, n_texts)
    index = text.term_index(ids, lengths, vocabulary, n)
    plain = max(vocabulary, 1) * vocabulary ** (n - 1)  # the span of t0 * V**(n-1) + ... + t(n-1)
    if span is None:
        assert index.base < plain + 1  # the grams renumbered densely
    else:
        assert index.base == span + 1 == plain + 1


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5), st.lists(st.integers(0, 7), max_size=4), st.sampled_from(["", "Ab cd. Cd ef", "x"])
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(1, 15),
    st.sampled_from([None, "rag-eval-node-ts"]),
)
def test_row_slices_take_the_term_tables_they_would_build(rows, slice_rows, compat):
    """A row slice's term tables taken from the batch's equal those built from the slice's own tokens."""
    from ragframe.metrics import heuristic, text_engine
    from ragframe.metrics.heuristic_kernels import HeuristicOptions
    from ragframe.metrics.registry import get_metric

    passages = ["the a b c a b", "b c d e. F g", "a", "", "c d the e f g h", "a b a b a b", "x y", "e f g"]
    df = pl.DataFrame(
        {
            "question": [f"q {q} a b" for q, _, _ in rows],
            "answer": [f"A b {q}. C d e? G" if q % 2 else "a" for q, _, _ in rows],
            "contexts": [[passages[c] for c in ctx] for _, ctx, _ in rows],
            "ground_truth": [truth for *_, truth in rows],
        }
    )
    metrics = [get_metric(name) for name in heuristic.HEURISTIC_METRICS]
    roles, grams, tags = heuristic._needed(metrics, HeuristicOptions(), compat)
    rules = text.SEED_RULES if compat else text.UNICODE_RULES
    columns = {role: role for role in ("question", "answer", "contexts", "ground_truth")}
    saved = text_engine.SHARED_TABLE
    try:
        text_engine.SHARED_TABLE = 0.0  # a table for every size, wherever some text is in two rows
        batch = text_engine.TextBatch(df, columns, roles, grams, rules, gram_tags=tags)
    finally:
        text_engine.SHARED_TABLE = saved
    assert set(batch.term_tables) == (set(grams) if batch._shared_texts().any() else set())
    for r0 in range(0, df.height, slice_rows):
        part = batch.rows(r0, min(r0 + slice_rows, df.height))
        for n in grams:
            own = text_engine.index_texts(batch, part.texts, part.used(batch, n), n)
            taken = part._terms[n]
            for name in ("starts", "counts", "n_tokens"):
                np.testing.assert_array_equal(getattr(taken, name), getattr(own, name))
            assert taken.keys.equals(own.keys) and taken.base == own.base


_ROW = st.tuples(st.sampled_from("abc"), st.lists(st.sampled_from("abcd"), max_size=3))


@settings(max_examples=40, deadline=None)
@given(st.lists(_ROW, min_size=1, max_size=12))
def test_shared_texts_are_the_texts_of_several_rows(rows):
    """A text is shared when it is in two rows, as a question or a context (not twice in one row)."""
    from ragframe.metrics import text_engine

    df = pl.DataFrame({"question": [q for q, _ in rows], "contexts": [c for _, c in rows]})
    columns = {"question": "question", "contexts": "contexts"}
    batch = text_engine.TextBatch(df, columns, {"question", "contexts"}, {})
    in_rows: dict[str, set[int]] = {}
    for row, (question, contexts) in enumerate(rows):
        for passage in [question, *contexts]:
            in_rows.setdefault(passage, set()).add(row)
    shared = batch._shared_texts()
    codes = batch._role_ids["question"].tolist() + batch._role_ids["contexts"].tolist()
    texts = [q for q, _ in rows] + [t for _, c in rows for t in c]
    assert {t: bool(shared[code]) for t, code in zip(texts, codes)} == {t: len(r) > 1 for t, r in in_rows.items()}
