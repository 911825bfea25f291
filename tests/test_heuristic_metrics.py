"""Heuristic metrics: both methods by hand (ragframe's default and the seed's), options, composite, nulls, bad input."""

from __future__ import annotations

import polars as pl
import pytest

import ragframe as rf
from ragframe.exceptions import InvalidParameterError, SchemaError

SCHEMA = {"question": pl.String, "answer": pl.String, "contexts": pl.List(pl.String), "ground_truth": pl.String}


def frame(rows):
    return pl.DataFrame(rows, schema=SCHEMA)


SEED = "rag-eval-node-ts"


def test_seed_empty_and_missing_inputs():
    df = frame(
        [
            {"question": "q", "answer": "A claim.", "contexts": [], "ground_truth": None},
            {"question": "q", "answer": "   ", "contexts": ["some text"], "ground_truth": ""},
            {"question": None, "answer": None, "contexts": None, "ground_truth": "Truth here."},
        ]
    )
    out = rf.evaluate(df, compat=SEED)
    assert out["faithfulness"].to_list() == [0.0, 0.0, 0.0]
    assert out["hallucination_rate"].to_list() == [0.0, 1.0, 0.0]  # no contexts: 0; no sentences: 1
    assert out["context_precision"].to_list()[0] == 0.0 and out["context_relevance"].to_list()[0] == 0.0
    assert out["context_recall"].to_list() == [None, None, 0.0]
    assert out["answer_correctness"].to_list()[:2] == [None, None]
    assert out["context_recall_passed"].to_list() == [None, None, False]
    assert out["answer_relevance"][2] == 0.5  # two empty texts: tfidf 0, overlap 1


def test_seed_hallucination_rate_and_faithfulness_by_hand():
    df = frame(
        [
            {
                "question": "q",
                "answer": "The cat sat on the mat. Quantum foam everywhere.",
                "contexts": ["the cat sat on the mat today"],
                "ground_truth": None,
            }
        ]
    )
    out = rf.evaluate(df, metrics=["hallucination_rate", "faithfulness"], explain=True, compat=SEED).row(0, named=True)
    # sentence 1: unigram Jaccard 5/6 (the cat sat on mat vs + today), sentence 2: 0 -> unsupported
    assert out["hallucination_rate"] == 0.5
    uni, bi = 5 / 6, 5 / 6  # bigrams: the cat, cat sat, sat on, on the, the mat / + mat today
    assert out["faithfulness"] == pytest.approx(((0.7 * uni + 0.3 * bi) / 1.0 + 0.0) / 2)
    assert [s["id"] for s in out["hallucination_rate_signals"]] == ["hallucination-unsupported-1"]
    assert out["hallucination_rate_signals"][0]["evidence"] == "Quantum foam everywhere."
    assert out["hallucination_rate_signals"][0]["severity"] == "critical"
    assert [s["id"] for s in out["faithfulness_signals"]] == ["faithfulness-low-support-1"]


def test_seed_options_thresholds_weights_and_composite():
    df = frame([{"question": "cat mat", "answer": "cat mat", "contexts": ["cat mat", "dog"], "ground_truth": "cat"}])
    base = rf.evaluate(df, compat=SEED).row(0, named=True)
    assert base["context_relevance"] == 0.5
    strict = rf.evaluate(df, chunk_relevance_threshold=0.0, compat=SEED).row(0, named=True)
    assert strict["context_relevance"] == 1.0
    passed = rf.evaluate(df, thresholds={"context_relevance": 0.5}, compat=SEED)["context_relevance_passed"][0]
    assert passed is True
    weighted = rf.evaluate(
        df, metrics=["answer_relevance", "context_relevance"], weights={"context_relevance": 0.0}, compat=SEED
    )
    assert weighted["composite_score"][0] == pytest.approx(base["answer_relevance"])
    zero = rf.evaluate(df, metrics=["context_relevance"], weights={"context_relevance": 0.0})
    assert zero["composite_score"][0] is None and zero["passed"][0] is False
    unigram_only = rf.evaluate(df, metrics=["faithfulness"], ngram_sizes=[1], ngram_weights=[1.0], compat=SEED)
    assert unigram_only["faithfulness"][0] == 1.0


def test_single_metric_functions_and_column_overrides():
    df = pl.DataFrame({"q": ["What is a cat?"], "resp": ["A cat is a pet."], "chunks": [["A cat is a small pet."]]})
    out = rf.score_faithfulness(df, answer="resp", contexts="chunks", threshold=0.1)
    assert out.columns == ["q", "resp", "chunks", "faithfulness", "faithfulness_passed"]
    assert out["faithfulness_passed"][0] is True
    with pytest.raises(SchemaError) as err:
        rf.score_faithfulness(df)
    assert err.value.column == "answer" and "resp" in err.value.available


def test_evaluator_defaults_and_overrides():
    df = frame([{"question": "cat", "answer": "cat", "contexts": ["cat"], "ground_truth": "cat"}])
    ev = rf.Evaluator(metrics=["answer_correctness"], composite_threshold=0.99)
    assert ev.evaluate(df)["passed"][0] is True
    assert df.pipe(ev.replace(composite_threshold=1.5))["passed"][0] is False
    assert ev.to_dict() == {"metrics": ["answer_correctness"], "composite_threshold": 0.99}
    with pytest.raises(InvalidParameterError, match="unknown metric"):
        rf.Evaluator(metrics=["faithfulnes"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metrics": ["bleu"]}, "unknown metric"),
        ({"ngram_sizes": [0]}, "ngram_sizes"),
        ({"ngram_sizes": []}, "ngram_sizes"),
        ({"ngram_weights": [float("nan")]}, "ngram_weights"),
        ({"thresholds": {"nope": 1}}, "thresholds"),
        ({"weights": {"faithfulness": "high"}}, "weights"),
        ({"claim_support_threshold": None}, "claim_support_threshold"),
        ({"bogus_option": 1}, "unknown option"),
    ],
)
def test_bad_options(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        rf.evaluate(frame([]), **kwargs)


def test_wrong_dtypes_name_the_column():
    df = pl.DataFrame({"question": [1], "answer": ["a"], "contexts": [["c"]], "ground_truth": ["g"]})
    with pytest.raises(SchemaError) as err:
        rf.evaluate(df)
    assert (err.value.column, err.value.expected, err.value.found) == ("question", "str", "Int64")
    df = pl.DataFrame({"question": ["q"], "answer": ["a"], "contexts": ["not a list"], "ground_truth": ["g"]})
    with pytest.raises(SchemaError, match="list\\[str\\]"):
        rf.evaluate(df)


def test_empty_chunk_and_huge_strings_work():
    big = "word " * 200_000
    df = frame([{"question": "word", "answer": big, "contexts": ["", big], "ground_truth": "word"}])
    out = rf.evaluate(df, chunk_relevance_threshold=0.5, compat=SEED).row(0, named=True)
    # "word" vs the empty chunk: unigrams 0, bigrams both empty -> 1: weighted 0.3 < 0.5
    # "word" vs the big chunk: unigrams 1, bigrams {} vs {"word word"} -> 0: weighted 0.7 >= 0.5
    assert out["context_relevance"] == 0.5
    assert out["faithfulness"] == 1.0


def test_slice_rows_does_not_change_results():
    from frames import make_frame

    df = make_frame(("question", "answer", "contexts", "ground_truth"), 57, 5)
    whole = rf.evaluate(df, explain=True)
    sliced = rf.evaluate(df, explain=True, slice_rows=10)
    from polars.testing import assert_frame_equal

    assert_frame_equal(sliced, whole)
    with pytest.raises(InvalidParameterError, match="slice_rows"):
        rf.evaluate(df, slice_rows=0)


def test_seed_ngram_weights_shorter_or_longer_than_sizes():
    df = frame([{"question": "a b c", "answer": "a b d.", "contexts": ["a b c d"], "ground_truth": None}])
    # a missing weight counts as 1, extra weights are ignored (spec)
    short = rf.evaluate(df, metrics=["faithfulness"], ngram_sizes=[1, 2], ngram_weights=[2.0], compat=SEED)
    short = short["faithfulness"][0]
    uni, bi = 3 / 4, 1 / 4  # {a, b, d} vs {a, b, c, d}; {a b, b d} vs {a b, b c, c d}: 1 shared of 4
    assert short == pytest.approx((2.0 * uni + 1.0 * bi) / 3.0)
    longer = rf.evaluate(df, metrics=["faithfulness"], ngram_sizes=[1], ngram_weights=[1.0, 5.0], compat=SEED)
    longer = longer["faithfulness"][0]
    assert longer == pytest.approx(uni)


@pytest.mark.slow
def test_text_chunks_and_slices_do_not_change_results(monkeypatch):
    """Distinct texts are tokenised once per chunk of rows; chunk and slice sizes never change a score."""
    from frames import make_frame
    from polars.testing import assert_frame_equal

    from ragframe.metrics import text_engine

    base = make_frame(("question", "answer", "contexts", "ground_truth"), 40, 11)
    # repeated rows and passages, as in real logs: the same texts recur across chunks and slices
    df = pl.concat([base, base.reverse(), base.sample(fraction=1.0, shuffle=True, seed=3)])
    whole = rf.evaluate(df, explain=True)
    monkeypatch.setattr(text_engine, "TEXT_ROWS", 17)
    for slice_rows in (1, 7, 1000):
        assert_frame_equal(rf.evaluate(df, explain=True, slice_rows=slice_rows), whole, check_exact=True)
    # each row scored alone gives the same values as in any batch
    alone = pl.concat([rf.evaluate(df.slice(i, 1), explain=True) for i in range(0, df.height, 9)])
    assert_frame_equal(alone, whole.gather_every(9), check_exact=True)


def test_a_null_chunk_is_an_error_naming_the_row():
    """A null inside ``contexts`` is a broken row (not an empty passage that would halve context_precision)."""
    df = pl.DataFrame(
        {"question": ["q", "cats"], "answer": ["a", "cats purr"], "contexts": [["a"], ["cats purr", None]]},
        schema={"question": pl.String, "answer": pl.String, "contexts": pl.List(pl.String)},
    )
    with pytest.raises(SchemaError) as err:
        rf.score_context_precision(df)
    assert (err.value.column, err.value.row, err.value.found) == ("contexts", 1, "null")
    # the documented alternatives: an empty string is an empty chunk, a null list is no chunk
    fixed = df.with_columns(pl.Series("contexts", [["a"], ["cats purr", ""]]))
    assert rf.score_context_precision(fixed)["context_precision"][1] < 1.0
