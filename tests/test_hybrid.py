"""Modes of rf.evaluate: heuristic (unchanged), llm (judge counterparts under the heuristic names), hybrid routing.

Routing counts are checked against an independent count: the heuristic scores of the same
rows from a plain heuristic run, filtered by the band by hand.
"""

from __future__ import annotations

import logging
import pickle
import threading

import polars as pl
import pytest
from judge_server import verdict_lines
from polars.testing import assert_frame_equal

import ragframe as rf
from ragframe.datasets import example_rag_log
from ragframe.exceptions import InvalidParameterError
from ragframe.metrics import registry
from ragframe.metrics.heuristic import HEURISTIC_METRICS

LOG = pl.read_parquet(example_rag_log()).select("id", "question", "answer", "contexts").head(60)
TEXT = LOG.with_columns(
    ground_truth=pl.col("answer").str.slice(0, 30),
    retrieved_ids=pl.Series([["a", "b"]] * 60),
    relevant_ids=pl.Series([["b"]] * 60),
)


class Counter:
    """A judge that counts its calls and answers a score derived from the prompt's length."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
        tenths = len(prompt) % 10  # the claim verdicts the template asks for read as tenths / 10
        return f"{verdict_lines(prompt, tenths)}Score: {tenths}/10\nReason: length {len(prompt)}"


def score_of(prompt: str) -> float:
    return len(prompt) % 10 / 10


# ----------------------------------------------------------------------------- heuristic mode


def test_default_mode_is_unchanged_and_never_calls_the_judge():
    judge = Counter()
    plain = rf.evaluate(TEXT, ["heuristic", "retrieval"], k=[1, 2], explain=True)
    explicit = rf.evaluate(TEXT, ["heuristic", "retrieval"], k=[1, 2], explain=True, mode="heuristic", cache=False)
    assert_frame_equal(plain, explicit, check_exact=True)
    with pytest.raises(InvalidParameterError, match=r"judge= is given but no metric of this run uses it"):
        rf.evaluate(TEXT, ["heuristic"], mode="heuristic", judge=judge, cache=False)  # a judge never called: refused
    assert judge.prompts == []
    # the same columns the families write themselves, with pass flags and the composite (nothing added)
    heuristic = registry.get_family("heuristic")
    requests = [(registry.get_metric(m), None) for m in HEURISTIC_METRICS]
    options = rf.Evaluator(explain=True).run_plan.families["heuristic"]
    block = heuristic.score(TEXT, requests, options)
    assert_frame_equal(plain.select(block.columns), block, check_exact=True)
    assert [c for c in plain.columns if c.endswith("_source")] == []


# ----------------------------------------------------------------------------- llm mode


def test_llm_mode_writes_the_judge_scores_under_the_heuristic_names():
    judge = Counter()
    out = rf.evaluate(TEXT, ["faithfulness", "hallucination_rate", "mrr"], mode="llm", judge=judge, cache=False)
    direct = rf.judge_faithfulness(TEXT, judge=Counter(), cache=False)
    assert out.columns[TEXT.width :] == [
        "faithfulness",
        "faithfulness_passed",
        "faithfulness_reason",
        "faithfulness_status",
        "faithfulness_error",
        "faithfulness_source",
        "hallucination_rate",
        "hallucination_rate_passed",
        "mrr",
        "composite_score",
        "passed",
    ]
    assert out["faithfulness"].to_list() == direct["judge_faithfulness"].to_list()
    assert sorted(out["faithfulness"].to_list()) == sorted(score_of(p) for p in judge.prompts)
    assert out["faithfulness_source"].unique().to_list() == ["judge"]
    assert (out["faithfulness_passed"] == (out["faithfulness"] >= 0.5)).all()  # the judge metric's threshold
    # metrics without a judge counterpart are the heuristic / ranking ones, unchanged
    plain = rf.evaluate(TEXT, ["hallucination_rate", "mrr"])
    assert_frame_equal(out.select("hallucination_rate", "mrr"), plain.select("hallucination_rate", "mrr"))
    assert len(judge.prompts) == TEXT.height


def test_llm_mode_n_samples_prefix_and_thresholds():
    out = rf.evaluate(
        TEXT.head(5),
        ["answer_relevance"],
        mode="llm",
        judge=Counter(),
        cache=False,
        n_samples=2,
        prefix="v2_",
        thresholds={"answer_relevance": 0.25},
    )
    assert out.columns[TEXT.width :] == [
        "v2_answer_relevance",
        "v2_answer_relevance_passed",
        "v2_answer_relevance_reason",
        "v2_answer_relevance_status",
        "v2_answer_relevance_error",
        "v2_answer_relevance_std",
        "v2_answer_relevance_source",
        "v2_composite_score",
        "v2_passed",
    ]
    assert (out["v2_answer_relevance_passed"] == (out["v2_answer_relevance"] >= 0.25)).all()
    assert out["v2_answer_relevance_std"].to_list() == [0.0] * 5  # a callable judge repeats itself
    assert rf.score_columns(out.columns) == ["v2_answer_relevance", "v2_composite_score"]


# ----------------------------------------------------------------------------- hybrid mode


@pytest.mark.parametrize("band", [(0.2, 0.6), (0.0, 1.0), (0.5, 0.5), (0.95, 1.0)])
def test_hybrid_sends_only_the_rows_in_the_band(band, caplog):
    lo, hi = band
    heuristic = rf.evaluate(TEXT, ["faithfulness"], explain=True)["faithfulness"]
    inside = (heuristic >= lo) & (heuristic <= hi)
    judge = Counter()
    with caplog.at_level(logging.INFO, logger="ragframe.judge"):
        out = rf.evaluate(
            TEXT, ["faithfulness"], mode="hybrid", judge=judge, cache=False, hybrid_band=band, explain=True
        )
    assert len(judge.prompts) == inside.sum()
    assert out["faithfulness_source"].to_list() == ["judge" if i else "heuristic" for i in inside]
    judged = out.filter(inside)
    assert sorted(judged["faithfulness"].to_list()) == sorted(score_of(p) for p in judge.prompts)
    kept = out.filter(~inside)
    assert kept["faithfulness"].to_list() == heuristic.filter(~inside).to_list()
    assert kept["faithfulness_status"].unique().to_list() in ([], ["skipped"])
    assert kept["faithfulness_reason"].null_count() == kept.height
    assert "faithfulness_signals" in out.columns  # the heuristic's explanation stays, for every row
    # per-row thresholds: the judge metric's for judged rows, the heuristic method's for the others
    expected = pl.when(inside).then(out["faithfulness"] >= 0.5).otherwise(out["faithfulness"] >= 0.4)
    assert out.select(expected.alias("p"))["p"].to_list() == out["faithfulness_passed"].to_list()
    summary = rf.routing_summary(out)
    assert summary.row(0) == ("faithfulness", 60, inside.sum(), 60 - inside.sum(), 60 - inside.sum(),
                              (60 - inside.sum()) / 60)  # fmt: skip
    assert f"faithfulness: {inside.sum()} of 60 rows sent to the judge, {60 - inside.sum()} judge calls saved" in (
        caplog.text
    )


def test_hybrid_default_band_is_around_the_heuristic_threshold():
    heuristic = rf.evaluate(TEXT, ["context_relevance"])["context_relevance"]  # threshold 0.25: band [0.05, 0.45]
    judge = Counter()
    out = rf.evaluate(TEXT, ["context_relevance"], mode="hybrid", judge=judge, cache=False)
    inside = (heuristic >= 0.05) & (heuristic <= 0.45)
    assert 0 < inside.sum() < 60 and len(judge.prompts) == inside.sum()
    assert (out["context_relevance_source"] == "judge").to_list() == inside.to_list()
    error = out.filter(~inside)["context_relevance_error"].unique().to_list()
    assert error == ["heuristic score outside the hybrid band [0.05, 0.45]: not sent to the judge"]


def test_hybrid_never_sends_rows_with_a_null_input():
    df = TEXT.head(4).with_columns(pl.Series("answer", [None, "x", "y", None], dtype=pl.String))
    judge = Counter()
    out = rf.evaluate(df, ["faithfulness"], mode="hybrid", judge=judge, cache=False, hybrid_band=(0.0, 1.0))
    assert len(judge.prompts) == 2
    assert out["faithfulness_source"].to_list() == ["heuristic", "judge", "judge", "heuristic"]
    assert out["faithfulness_error"][0] == "null input (answer, contexts): not sent to the judge"


def test_metric_modes_per_metric_and_the_n_samples_saving(caplog):
    judge = Counter()
    with caplog.at_level(logging.INFO, logger="ragframe.judge"):
        out = rf.evaluate(
            TEXT,
            ["faithfulness", "answer_relevance", "context_precision"],
            metric_modes={"faithfulness": "hybrid", "answer_relevance": "llm"},
            hybrid_band={"faithfulness": (0.3, 0.7)},
            judge=judge,
            cache=False,
            n_samples=3,
        )
    assert "context_precision_source" not in out.columns  # the run's mode (heuristic) for the others
    assert out["answer_relevance_source"].unique().to_list() == ["judge"]
    heuristic = rf.evaluate(TEXT, ["faithfulness"])["faithfulness"]
    inside = int(((heuristic >= 0.3) & (heuristic <= 0.7)).sum())
    assert len(judge.prompts) == 60 * 3 + inside * 3
    assert f"faithfulness: {inside} of 60 rows sent to the judge, {(60 - inside) * 3} judge calls saved" in caplog.text
    summary = rf.routing_summary(out, n_samples=3).sort("metric")
    assert summary["metric"].to_list() == ["answer_relevance", "faithfulness"]
    assert summary["calls_saved"].to_list() == [0, (60 - inside) * 3]


def test_hybrid_on_every_frame_kind():
    judge = Counter()
    eager = rf.evaluate(TEXT, ["faithfulness"], mode="hybrid", judge=judge, cache=False, hybrid_band=(0.1, 0.5))
    arrow = rf.evaluate(
        TEXT.to_arrow(), ["faithfulness"], mode="hybrid", judge=judge, cache=False, hybrid_band=(0.1, 0.5)
    )
    assert_frame_equal(pl.DataFrame(pl.from_arrow(arrow)), eager)
    lazy = rf.evaluate(TEXT.lazy(), ["faithfulness"], mode="hybrid", judge=judge, cache=False, hybrid_band=(0.1, 0.5))
    assert_frame_equal(lazy.collect(), eager)


# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"mode": "judge"}, "mode"),
        ({"mode": "llm"}, r"pass judge="),
        ({"metric_modes": {"mrr": "llm"}}, "'mrr', which has no judge counterpart"),
        ({"metric_modes": {"hallucination_rate": "llm"}}, "no judge counterpart"),
        ({"metric_modes": {"faithfulness": "fast"}}, r"metric_modes\['faithfulness'\]"),
        ({"metric_modes": ["faithfulness"]}, "metric_modes"),
        ({"hybrid_band": (0.8, 0.2)}, "hybrid_band"),
        ({"hybrid_band": (0.2, 1.5)}, "hybrid_band"),
        ({"hybrid_band": 0.5}, "hybrid_band"),
        ({"hybrid_band": {"mrr": (0.1, 0.2)}}, "no judge counterpart"),
    ],
)
def test_bad_mode_options_are_refused(options, match):
    with pytest.raises(InvalidParameterError, match=match):
        rf.Evaluator(["faithfulness", "mrr"], **options)


def test_mode_options_round_trip_and_pickle():
    ev = rf.Evaluator(
        ["faithfulness", "answer_relevance"],
        mode="hybrid",
        metric_modes={"answer_relevance": "llm"},
        hybrid_band={"faithfulness": [0.1, 0.9]},
        judge=Counter(),
        cache=False,
    )
    config = ev.to_dict()
    assert config["metric_modes"] == {"answer_relevance": "llm"} and config["hybrid_band"] == {
        "faithfulness": [0.1, 0.9]
    }
    assert rf.Evaluator.from_dict(config) == ev
    again = pickle.loads(pickle.dumps(rf.Evaluator(["faithfulness"], mode="hybrid", judge=len, hybrid_band=(0.1, 0.2))))
    assert again.option("hybrid_band") == [0.1, 0.2] and again.option("mode") == "hybrid"
