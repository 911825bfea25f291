"""trec_eval's parameterised measures in the library: ``iprec_at_recall_x``, ``Rprec_mult_x``, ``utility``.

Registered at trec_eval's default parameters, one metric each (``iprec_at_recall_0_50`` is
``iprec_at_recall_0.50``, ``rprec_mult_2_00`` is ``Rprec_mult_2.00``, ``utility`` at coefficients
1, -1, 0, 0). Checked by hand arithmetic on one ranking, on every library path (wide frames, long
tables, ``rf.evaluate``, streaming), and against trec_eval's printed values and ``ragframe trec``
(also in tests/test_trec_library.py, on trec_eval's test suite and on random runs).
"""

from __future__ import annotations

import polars as pl
import pytest
from conftest import LOCAL_DATA

import ragframe as rf
from ragframe.io.trec_eval_format import DEFAULT_CUTOFFS

TE = LOCAL_DATA / "trec_eval"

#: ranking a b c d e; relevant a, c, e and z (never retrieved): R = 4, a (relevant retrieved) = 3,
#: precision at the relevant ranks 1, 3, 5: 1, 2/3, 3/5.
RETRIEVED = ["a", "b", "c", "d", "e"]
RELEVANT = ["a", "c", "e", "z"]
#: iprec_at_recall_x: c = round(4 x) (halves up); the highest precision at or below the c-th relevant
#: retrieved document (c = 0: the first); c > 3: 0.
IPREC = {
    "0_00": 1.0,  # c = 0
    "0_10": 1.0,  # c = round(0.4) = 0
    "0_20": 1.0,  # c = round(0.8) = 1
    "0_30": 1.0,  # c = round(1.2) = 1
    "0_40": 2 / 3,  # c = round(1.6) = 2: max(2/3, 3/5)
    "0_50": 2 / 3,  # c = 2
    "0_60": 2 / 3,  # c = round(2.4) = 2
    "0_70": 3 / 5,  # c = round(2.8) = 3
    "0_80": 3 / 5,  # c = round(3.2) = 3
    "0_90": 0.0,  # c = round(3.6) = 4 > 3 retrieved
    "1_00": 0.0,  # c = 4
}
#: Rprec_mult_x: rel_in_top(c) / c, c = floor(4 x + 0.9); 3 relevant in the 5 retrieved
RPREC_MULT = {
    "0_20": 1 / 1,  # c = floor(1.7) = 1
    "0_40": 1 / 2,  # c = floor(2.5) = 2
    "0_60": 2 / 3,  # c = floor(3.3) = 3
    "0_80": 2 / 4,  # c = floor(4.1) = 4
    "1_00": 2 / 4,  # c = floor(4.9) = 4
    "1_20": 3 / 5,  # c = floor(5.7) = 5
    "1_40": 3 / 6,  # c = floor(6.5) = 6
    "1_60": 3 / 7,  # c = floor(7.3) = 7
    "1_80": 3 / 8,  # c = floor(8.1) = 8
    "2_00": 3 / 8,  # c = floor(8.9) = 8
}
HAND = {
    **{f"iprec_at_recall_{x}": v for x, v in IPREC.items()},
    **{f"rprec_mult_{x}": v for x, v in RPREC_MULT.items()},
    "utility": 3.0 - 2.0,  # relevant retrieved minus non-relevant retrieved
}


def test_registered_at_trec_eval_default_parameters():
    table = rf.list_metrics().filter(pl.col("name").is_in(list(HAND)))
    assert table["name"].to_list() == list(HAND)  # registry order: recall points, multiples, utility
    assert len(IPREC) == len(DEFAULT_CUTOFFS["iprec_at_recall"]) and len(RPREC_MULT) == len(
        DEFAULT_CUTOFFS["Rprec_mult"]
    )
    assert set(table["family"]) == {"retrieval"} and not table["by_default"].any() and not table["cutoff"].any()
    assert table.filter(pl.col("name") == "utility").select("lower", "upper").row(0) == (None, None)
    assert set(table.filter(pl.col("name") != "utility")["upper"]) == {1.0}


@pytest.mark.parametrize("metric", list(HAND))
def test_values_by_hand_on_a_wide_frame(metric):
    frame = pl.DataFrame({"retrieved_ids": [RETRIEVED], "relevant_ids": [RELEVANT]})
    assert rf.score_retrieval(frame, metrics=[metric])[metric].item() == pytest.approx(HAND[metric], rel=1e-15)


def test_every_library_path_gives_the_hand_values(tmp_path):
    """score_retrieval, evaluate, retrieval-family streaming, evaluate_run: one value each."""
    names = list(HAND)
    frame = pl.DataFrame({"id": [1], "retrieved_ids": [RETRIEVED], "relevant_ids": [RELEVANT]})
    wide = rf.score_retrieval(frame, metrics=names).select(names)
    assert wide.row(0) == pytest.approx(tuple(HAND.values()), rel=1e-15)
    assert rf.evaluate(frame, names).select(names).equals(wide)
    frame.write_parquet(tmp_path / "log.parquet")
    rf.evaluate_parquet(tmp_path / "log.parquet", tmp_path / "out", metrics=names, progress=False)
    assert pl.read_parquet(tmp_path / "out" / "scores").select(names).equals(wide)
    run = pl.DataFrame({"query_id": ["q"] * 5, "doc_id": RETRIEVED, "score": [5.0, 4.0, 3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query_id": ["q"] * 4, "doc_id": RELEVANT, "relevance": [1] * 4})
    assert rf.evaluate_run(run, qrels, metrics=names).select(names).equals(wide)


def test_nulls_and_empties():
    """Null judgments or ids: null; judged, nothing retrieved: 0; nothing relevant: 0 and utility -N."""
    frame = pl.DataFrame(
        {
            "retrieved_ids": [["a", "b"], None, [], ["a", "b"]],
            "relevant_ids": [None, ["a"], ["a"], []],
        }
    )
    out = rf.score_retrieval(frame, metrics=list(HAND)).select(list(HAND))
    assert out.row(0) == (None,) * len(HAND) and out.row(1) == (None,) * len(HAND)
    assert out.row(2) == (0.0,) * len(HAND)
    nothing_relevant = out.row(3, named=True)
    assert nothing_relevant.pop("utility") == -2.0
    assert set(nothing_relevant.values()) == {0.0}


def _expected(path) -> dict[tuple[str, str], str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        out[measure, qid] = value
    return out


@pytest.mark.parametrize(
    ("metric", "trec_name"),
    [("iprec_at_recall_0_50", "iprec_at_recall_0.50"), ("rprec_mult_2_00", "Rprec_mult_2.00"), ("utility", "utility")],
)
def test_trec_eval_printed_values_and_summary(metric, trec_name):
    """trec_eval's own test suite (out.test.aq, -q): every query and the all line, to its 4 decimals."""
    run, qrels = rf.read_trec_run(TE / "results.test"), rf.read_qrels(TE / "qrels.test")
    per_query = rf.evaluate_run(run, qrels, metrics=[metric]).drop_nulls(metric)
    expected = _expected(TE / "out.test.aq")
    assert per_query.height == 3
    for qid, value in zip(per_query["query_id"], per_query[metric]):
        assert f"{value:6.4f}" == expected[trec_name, qid], qid
    assert f"{rf.run_summary(per_query)[metric].item():6.4f}" == expected[trec_name, "all"]
    assert f"{rf.summarize(per_query, metrics=[metric])['mean'].item():6.4f}" == expected[trec_name, "all"]


def test_utility_is_summarised_without_bounds():
    """utility is unbounded: its summary interval is not clipped to [0, 1] and a value of -400 is a score."""
    per_query = pl.DataFrame({"query_id": ["a", "b", "c"], "utility": [-358.0, -400.0, -480.0]})
    summary = rf.summarize(per_query).row(0, named=True)
    assert summary["mean"] == pytest.approx(-412.6666666666667, rel=1e-15)  # trec_eval's all: -412.6667
    assert summary["ci_low"] < -412.6 < summary["ci_high"] < 0 and summary["gm"] is None
