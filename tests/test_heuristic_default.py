"""ragframe's default heuristic methods by hand arithmetic, and text beyond plain English."""

from __future__ import annotations

import math

import polars as pl
import pytest

import ragframe as rf
from ragframe.exceptions import InvalidParameterError

SCHEMA = {"question": pl.String, "answer": pl.String, "contexts": pl.List(pl.String), "ground_truth": pl.String}
SEED = "rag-eval-node-ts"


def frame(*rows):
    return pl.DataFrame(list(rows), schema=SCHEMA)


def row(question="q", answer="", contexts=(), ground_truth=None):
    return {"question": question, "answer": answer, "contexts": list(contexts), "ground_truth": ground_truth}


def test_faithfulness_and_hallucination_rate_are_bigram_support_of_sentences():
    df = frame(
        row(answer="The cat sat on the mat. Quantum foam everywhere.", contexts=["the cat sat on the mat today"])
    )
    out = rf.evaluate(df, ["faithfulness", "hallucination_rate"], explain=True).row(0, named=True)
    # sentence 1: its 5 bigrams are all in the context (1.0); sentence 2: none of its 2 (0.0)
    assert out["faithfulness"] == 0.5
    assert out["hallucination_rate"] == 0.5  # one of two sentences reaches 0.4
    assert [s["evidence"] for s in out["hallucination_rate_signals"]] == ["Quantum foam everywhere."]
    # the seed's Jaccard gives the same answer a different score: its numbers are one keyword away
    seed = rf.evaluate(df, ["faithfulness"], compat=SEED)["faithfulness"][0]
    assert seed == pytest.approx((0.7 * 5 / 6 + 0.3 * 5 / 6) / 2)


def test_support_is_the_best_context_and_one_word_sentences_use_unigrams():
    df = frame(
        row(answer="Paris.", contexts=["London is big", "Paris is the capital"]),
        row(answer="Paris is lovely in spring.", contexts=["Paris is lovely", "in spring"]),
    )
    out = rf.evaluate(df, ["faithfulness"])["faithfulness"].to_list()
    # row 2: bigrams paris is, is lovely, lovely in, in spring; best context has 2 of 4
    assert out == [1.0, 0.5]


def test_one_word_sentences_beside_longer_ones_use_unigrams_alone():
    """Only the sentences without a bigram are compared by unigrams, in answers and ground truths alike."""
    contexts = ["London is big", "Paris and Rome", "Berlin is small"]
    df = frame(
        row(answer="Paris. Berlin is big. Rome.", contexts=contexts, ground_truth="Rome. Madrid is far."),
        row(answer="Paris. Madrid.", contexts=[], ground_truth="Paris."),
        row(answer="Oslo is cold. Paris.", contexts=["Oslo is cold", "Oslo"], ground_truth="Oslo. Paris."),
    )
    out = rf.evaluate(df, ["faithfulness", "hallucination_rate", "context_recall"])
    # row 1: Paris. (unigram, 1.0), Berlin is big. (berlin is / is big: one of two in a context, 0.5), Rome. (1.0)
    assert out["faithfulness"].to_list() == pytest.approx([2.5 / 3, 0.0, 0.5])
    # row 3: Oslo is cold. (1.0), Paris. (0.0): one of two sentences supported
    assert out["hallucination_rate"].to_list() == [1.0, 0.0, 0.5]
    # ground truths: Rome. (1.0) and Madrid is far. (0.0); no contexts; Oslo. (1.0) and Paris. (0.0)
    assert out["context_recall"].to_list() == [0.5, 0.0, 0.5]


def test_a_long_context_does_not_dilute_support():
    """The seed's Jaccard falls with the context's length; containment does not (its length bias)."""
    filler = " ".join(f"word{i}" for i in range(2000))
    short = frame(row(answer="The tower is in Paris.", contexts=["The tower is in Paris."]))
    long = frame(row(answer="The tower is in Paris.", contexts=["The tower is in Paris. " + filler]))
    assert rf.score_faithfulness(short)["faithfulness"][0] == rf.score_faithfulness(long)["faithfulness"][0] == 1.0
    seed_long = rf.score_faithfulness(long, compat=SEED)["faithfulness"][0]
    assert seed_long < 0.01


@pytest.mark.parametrize(
    "answer",
    ["I don't know.", "I\u2019m sorry, I cannot answer that.", "This is not mentioned in the provided context."],
)
def test_refusals_score_zero(answer):
    df = frame(row(question="What is the capital of France?", answer=answer, contexts=[answer]))
    out = rf.evaluate(df, ["faithfulness", "hallucination_rate", "answer_relevance"]).row(0, named=True)
    assert (out["faithfulness"], out["hallucination_rate"], out["answer_relevance"]) == (0.0, 0.0, 0.0)


def test_answer_relevance_is_new_content_times_a_short_answer_guard():
    df = frame(
        row(question="What is the capital of France?", answer="Paris is the capital of France."),
        row(question="What is the capital of France?", answer="What is the capital of France?"),
        row(
            question="Tell me about Paris.",
            answer="It sits on the Seine, holds twelve million people, museums, parks, cafes and old bridges.",
        ),
        row(question="Why?", answer=""),
    )
    out = rf.evaluate(df, ["answer_relevance"])["answer_relevance"].to_list()
    # 1: content words {paris, capital, france}: 1 of 3 new, times 3/10 -> 0.1
    # 2: echoes the question: 0; 3: >= 10 content words, none in the question: 1; 4: empty: 0
    assert out[0] == pytest.approx(1 / 3 * 3 / 10)
    assert out[1:] == [0.0, 1.0, 0.0]


def test_context_relevance_and_precision_are_sublinear_tf_cosines():
    df = frame(row(question="cats purr", contexts=["dogs bark", "cats purr cats"]))
    out = rf.evaluate(df, ["context_relevance", "context_precision"]).row(0, named=True)
    w = 1 + math.log(2)  # "cats" twice in the chunk
    cosine = (w + 1) / (math.sqrt(2) * math.sqrt(w * w + 1))
    assert out["context_relevance"] == pytest.approx(cosine / 2, abs=1e-3)  # weights rounded to 2**-10
    rank2 = 1 / math.log2(3)  # the relevant chunk is second: DCG discount
    assert out["context_precision"] == pytest.approx(cosine * rank2 / (1 + rank2), abs=1e-3)
    swapped = frame(row(question="cats purr", contexts=["cats purr cats", "dogs bark"]))
    first = rf.evaluate(swapped, ["context_precision"])["context_precision"][0]
    assert first == pytest.approx(cosine / (1 + rank2), abs=1e-3) and first > out["context_precision"]


def test_context_recall_is_ground_truth_support():
    df = frame(
        row(contexts=["the cat sat on the mat"], ground_truth="The cat sat on the mat. Dogs fly."),
        row(contexts=["the cat"], ground_truth=None),
    )
    assert rf.evaluate(df, ["context_recall"])["context_recall"].to_list() == [0.5, None]


def test_japanese_text_scores_like_any_other():
    """One token per run of characters (the seed) gives Japanese answers 0 relevance; characters are tokens now."""
    df = frame(
        row(
            question="東京の人口は\uff1f",  # fullwidth question mark
            answer="東京の人口は約1400万人です。",
            contexts=["東京都の人口は約1400万人である。"],
        )
    )
    ours = rf.evaluate(df, ["faithfulness", "answer_relevance", "context_relevance"]).row(0, named=True)
    # answer bigrams: 東京 京の の人 人口 口は は約 約1400 1400万 万人 人で です; 9 of 11 are in the context
    assert ours["faithfulness"] == pytest.approx(9 / 11)
    assert ours["answer_relevance"] > 0 and ours["context_relevance"] > 0
    seed = rf.evaluate(df, ["answer_relevance", "context_precision"], compat=SEED).row(0, named=True)
    assert seed["answer_relevance"] == 0.0 and seed["context_precision"] == 0.0


def test_nfc_and_zero_width_characters_do_not_split_words():
    composed, decomposed = "Caf\u00e9 au lait.", "Cafe\u0301 au lait."
    hidden = "Ca\u200bf\u00e9 au lait."  # a zero-width space inside the word
    df = frame(*(row(answer=a, contexts=[composed]) for a in (composed, decomposed, hidden)))
    assert rf.evaluate(df, ["faithfulness"])["faithfulness"].to_list() == [1.0, 1.0, 1.0]


def test_seed_tuning_options_need_the_seed_methods():
    df = frame(row(answer="a", contexts=["a"]))
    with pytest.raises(InvalidParameterError, match="claim_support_threshold tunes the rag-eval-node-ts methods"):
        rf.evaluate(df, claim_support_threshold=0.3)
    assert rf.evaluate(df, claim_support_threshold=0.3, compat=SEED).height == 1
    with pytest.raises(InvalidParameterError, match="compat"):
        rf.evaluate(df, compat="ragas")


def test_default_thresholds_follow_the_method():
    df = frame(row(answer="The cat sat on the mat. Quantum foam everywhere.", contexts=["the cat sat on the mat"]))
    ours = rf.evaluate(df, ["faithfulness"]).row(0, named=True)
    seed = rf.evaluate(df, ["faithfulness"], compat=SEED).row(0, named=True)
    assert ours["faithfulness_passed"] is True  # 0.5 >= 0.4, ragframe's threshold
    assert seed["faithfulness_passed"] is False  # seed threshold 0.7


def test_the_shipped_stop_words_are_scikit_learns():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from ragframe.metrics.text_engine import stop_words

    assert set(stop_words().to_list()) == set(ENGLISH_STOP_WORDS) and stop_words().len() == 318


def test_refusals_of_ascii_answers_match_as_case_insensitive_patterns():
    """The lower-cased ASCII fast path finds exactly the answers the (?i) patterns find."""
    import itertools

    from ragframe.metrics.heuristic_default import _REFUSAL, _is_refusal

    phrases = ["I don't know", "i AM Sorry", "CANNOT answer", "not Stated in the context", "As An AI", "no info"]
    extras = ["", "\u00e9 ", "\u017f", "\u212a", "\u0130 ", "x", "_", "\u2160 don't know"]  # long s, Kelvin, ...
    answers = pl.Series([a + p + b for p, a, b in itertools.product(phrases, extras, extras)])
    assert _is_refusal(answers).tolist() == answers.str.contains(_REFUSAL).to_list()
