"""The ragchecker family equals RAGChecker 0.1.9's own computation: on its example outputs and on random matrices."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from claims_oracles import ragchecker_row
from conftest import shared_path
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe as rf
from ragframe.metrics.ragchecker import RAGCHECKER_METRICS

COLUMNS = ("answer2response", "response2answer", "retrieved2response", "retrieved2answer")
VERDICT = pl.List(pl.String)
MATRIX = pl.List(pl.List(pl.String))
DTYPES = {"answer2response": VERDICT, "response2answer": VERDICT, "retrieved2response": MATRIX,
          "retrieved2answer": MATRIX}  # fmt: skip
LOWER_IS_BETTER = {"noise_sensitivity_in_relevant", "noise_sensitivity_in_irrelevant", "hallucination",
                   "self_knowledge"}  # fmt: skip


def _frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame({c: pl.Series(c, [r[c] for r in rows], dtype=DTYPES[c]) for c in COLUMNS})


def _scores(frame: pl.DataFrame) -> pl.DataFrame:
    return rf.evaluate(frame, list(RAGCHECKER_METRICS)).select(RAGCHECKER_METRICS)


def _checking_outputs() -> dict:
    path = shared_path("ragchecker_human_labels", "checking_outputs.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_eleven_metrics_are_registered_with_ragcheckers_directions():
    table = rf.list_metrics().filter(pl.col("family") == "ragchecker")
    assert tuple(table["name"]) == RAGCHECKER_METRICS and len(RAGCHECKER_METRICS) == 11
    for name, higher, lower, upper in table.select("name", "higher_is_better", "lower", "upper").iter_rows():
        assert higher == (name.removeprefix("ragchecker_") not in LOWER_IS_BETTER), name
        assert (lower, upper) == (0.0, 1.0)


def test_checking_outputs_rows_equal_ragcheckers_stored_metrics():
    """Both rows of RAGChecker's examples/checking_outputs.json: all 11 stored per-row metrics, exactly."""
    data = _checking_outputs()
    scored = _scores(_frame(data["results"]))
    for i, result in enumerate(data["results"]):
        stored = result["metrics"]
        assert len(stored) == 11
        for name, value in stored.items():
            assert scored[f"ragchecker_{name}"][i] == pytest.approx(value, abs=1e-15), (i, name)
    # its stored means, x100 and rounded to one decimal (76.4, 62.5, 68.3, 61.4, 87.5, 87.5, 19.1, 0.0, 4.5, ...)
    means = {g: v for group in data["metrics"].values() for g, v in group.items()}
    for name, value in means.items():
        assert round(scored[f"ragchecker_{name}"].mean() * 100, 1) == value, name
    assert means["precision"] == 76.4 and means["faithfulness"] == 68.2


def test_checking_outputs_rows_equal_the_oracle_recomputed():
    data = _checking_outputs()
    scored = _scores(_frame(data["results"]))
    for i, result in enumerate(data["results"]):
        expected = ragchecker_row(**{c: result[c] for c in COLUMNS})
        assert {n: scored[f"ragchecker_{n}"][i] for n in expected} == expected


WEIGHTS = ["Entailment", "Entailment", "Neutral", "Contradiction"]


def _random_row(rng: np.random.Generator) -> dict:
    """R answer claims, G reference claims, P passages, each possibly 0; verdicts drawn with varying odds."""
    r, g, p = (int(rng.choice([0, 1, 2, 3, 5])) for _ in range(3))
    odds = rng.dirichlet([1.0, 1.0, 1.0])

    def draw(*shape):
        return rng.choice(["Entailment", "Neutral", "Contradiction"], size=shape, p=odds).tolist()

    return {"answer2response": draw(r), "response2answer": draw(g), "retrieved2response": draw(r, p),
            "retrieved2answer": draw(g, p)}  # fmt: skip


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 30))
def test_random_matrices_equal_the_oracle_row_by_row(seed, n):
    rng = np.random.default_rng(seed)
    rows = [_random_row(rng) for _ in range(n)]
    scored = _scores(_frame(rows))
    for i, row in enumerate(rows):
        expected = ragchecker_row(**row)
        got = {n: scored[f"ragchecker_{n}"][i] for n in expected}
        assert got == expected, (row, got, expected)  # exact: the same float operations


def test_hand_worked_row():
    """2 answer claims, 2 reference claims, 2 passages; passage 1 holds reference claim 1 only."""
    row = {
        "answer2response": ["Entailment", "Neutral"],  # answer claim 2 is wrong
        "response2answer": ["Entailment", "Neutral"],  # reference claim 2 missing from the answer
        "retrieved2response": [["Entailment", "Neutral"], ["Neutral", "Entailment"]],  # claim 2 from passage 2
        "retrieved2answer": [["Entailment", "Neutral"], ["Neutral", "Neutral"]],  # passage 2 irrelevant
    }
    got = _scores(_frame([row])).row(0, named=True)
    assert got == {
        "ragchecker_precision": 0.5, "ragchecker_recall": 0.5, "ragchecker_f1": 0.5,
        "ragchecker_claim_recall": 0.5, "ragchecker_context_precision": 0.5, "ragchecker_context_utilization": 1.0,
        "ragchecker_noise_sensitivity_in_relevant": 0.0, "ragchecker_noise_sensitivity_in_irrelevant": 0.5,
        "ragchecker_hallucination": 0.0, "ragchecker_self_knowledge": 0.0, "ragchecker_faithfulness": 1.0,
    }  # fmt: skip


def test_null_lists_give_null_scores_and_empty_ones_ragcheckers_zero():
    empty = {c: [] for c in COLUMNS}
    frame = _frame([empty, {**empty, "answer2response": None}])
    scored = _scores(frame)
    assert scored.row(0) == (0.0,) * 11
    nulls = {name for name in RAGCHECKER_METRICS if scored[name][1] is None}
    reads = {m: set(rf.metrics.get_metric(m).inputs) for m in RAGCHECKER_METRICS}
    assert nulls == {m for m in RAGCHECKER_METRICS if "answer2response" in reads[m]}


def test_renamed_columns():
    data = _checking_outputs()
    frame = _frame(data["results"]).rename({"answer2response": "a2r", "retrieved2answer": "ctx2gt"})
    out = rf.evaluate(frame, list(RAGCHECKER_METRICS), answer2response="a2r", retrieved2answer="ctx2gt")
    assert out["ragchecker_precision"].to_list() == [0.7272727272727273, 0.8]
    assert out["ragchecker_claim_recall"].to_list() == [0.22727272727272727, 1.0]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"answer2response": [["Entailment"], ["entailment"]]}, r"unknown verdict \[column 'answer2response', row 1\]"),
        ({"answer2response": [["Entailment"], ["Neutral", None]]}, r"row 1\].*found null"),
        (
            {"retrieved2answer": [[["Neutral"]], [["Neutral"], ["Neutral", "Neutral"]]]},
            r"ragged verdict matrix \[column 'retrieved2answer', row 1\]",
        ),
        ({"retrieved2answer": [[["Neutral"]], [None]]}, r"null verdict list of a claim.*row 1"),
        (
            {"response2answer": [["Neutral"], ["Neutral", "Neutral"]]},
            r"disagree on the number of claims \[column 'retrieved2answer', row 1\]",
        ),
        (
            {"retrieved2response": [[["Neutral"]], [["Neutral", "Neutral"]]]},
            r"disagree on the number of passages \[column 'retrieved2answer', row 1\]",
        ),
    ],
)
def test_wrong_shaped_verdicts_are_typed_errors_naming_the_row(change, match):
    base = {
        "answer2response": [["Entailment"], ["Neutral"]],
        "response2answer": [["Neutral"], ["Neutral"]],
        "retrieved2response": [[["Neutral"]], [["Neutral"]]],
        "retrieved2answer": [[["Neutral"]], [["Neutral"]]],
    }
    columns = {**base, **change}
    frame = pl.DataFrame({c: pl.Series(c, columns[c], dtype=DTYPES[c]) for c in COLUMNS})
    with pytest.raises(rf.SchemaError, match=match):
        rf.evaluate(frame, list(RAGCHECKER_METRICS))


def test_wrong_dtype_is_a_schema_error():
    frame = pl.DataFrame({"answer2response": ["Entailment"]})
    with pytest.raises(rf.SchemaError, match=r"wrong dtype \[column 'answer2response'\]"):
        rf.evaluate(frame, ["ragchecker_precision"])


def test_one_million_entailments_score_in_one_pass():
    """Not timed: a large frame goes through the columnar path and its means match the per-row oracle on a sample."""
    rng = np.random.default_rng(7)
    rows = [_random_row(rng) for _ in range(2000)]
    scored = _scores(_frame(rows))
    for i in rng.choice(len(rows), 50, replace=False):
        expected = ragchecker_row(**rows[int(i)])
        assert {n: scored[f"ragchecker_{n}"][int(i)] for n in expected} == expected
    assert all(not math.isnan(v) for v in scored.mean().row(0))


def _expected_signals(name: str, score: float, row: dict) -> int:
    """How many claims (or passages) explain=True names for a row, from the score and the row's sizes."""
    r, g = len(row["answer2response"]), len(row["response2answer"])
    p = len(row["retrieved2answer"][0]) if g else len(row["retrieved2response"][0]) if r else 0
    if name == "precision":
        return round((1 - score) * r)
    if name == "recall":
        return round((1 - score) * g)
    if name == "f1":
        return -1  # checked as precision's plus recall's
    if name == "claim_recall":
        return round((1 - score) * g) if p else 0
    if name == "context_precision":
        return round((1 - score) * p) if g else 0
    if name == "faithfulness":
        return round((1 - score) * r) if p else 0
    if name == "context_utilization":
        recalled = sum(any(v == "Entailment" for v in claim) for claim in row["retrieved2answer"])
        return round((1 - score) * recalled) if p else 0
    return round(score * r)  # the lower-is-better shares of answer claims


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_explain_names_the_claims_behind_each_score(seed):
    rng = np.random.default_rng(seed)
    rows = [_random_row(rng) for _ in range(12)]
    frame = _frame(rows).with_columns(
        pl.Series("response_claims", [[f"a{i}" for i in range(len(r["answer2response"]))] for r in rows]),
        pl.Series("gt_answer_claims", [[["g", "is", str(i)] for i in range(len(r["response2answer"]))] for r in rows]),
    )
    out = rf.evaluate(frame, list(RAGCHECKER_METRICS), explain=True)
    for metric in RAGCHECKER_METRICS:
        name = metric.removeprefix("ragchecker_")
        for i, row in enumerate(rows):
            signals = out[f"{metric}_signals"][i].to_list()
            expected = _expected_signals(name, out[metric][i], row)
            if expected >= 0:
                assert len(signals) == expected, (name, row, signals)
            for signal in signals:
                number = int(signal["message"].split(":")[0].split()[-1]) - 1
                if signal["message"].startswith("answer claim"):
                    assert signal["evidence"] == f"a{number}"
                elif signal["message"].startswith("reference claim"):
                    assert signal["evidence"] == f"g is {number}"
        f1 = [len(out[f"{metric}_signals"][i]) for i in range(len(rows))] if name == "f1" else None
        if f1 is not None:
            both = [len(out["ragchecker_precision_signals"][i]) + len(out["ragchecker_recall_signals"][i])
                    for i in range(len(rows))]  # fmt: skip
            assert f1 == both


def test_explain_on_ragcheckers_example_names_its_hallucinated_claim():
    data = _checking_outputs()["results"]
    frame = _frame(data).with_columns(
        pl.Series("response_claims", [r["response_claims"] for r in data]),
        pl.Series("gt_answer_claims", [r["gt_answer_claims"] for r in data]),
    )
    out = rf.evaluate(frame, ["ragchecker_hallucination", "ragchecker_context_precision"], explain=True)
    assert out["ragchecker_hallucination_signals"][0].to_list() == [
        {"id": "hallucinated_claim", "severity": "critical", "message": "answer claim 11: wrong, and in no passage",
         "evidence": "Amazon River length 4,350 miles"}
    ]  # fmt: skip
    assert [s["message"] for s in out["ragchecker_context_precision_signals"][0]] == [
        "passage 3: entails no reference claim"
    ]
    bad = frame.with_columns(pl.Series("response_claims", [["only one"], ["x"]]))
    with pytest.raises(rf.SchemaError, match=r"response_claims and answer2response disagree.*row 0"):
        rf.evaluate(bad, ["ragchecker_precision"], explain=True)
