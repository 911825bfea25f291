"""Beyond trec_eval: ``judged_at_k``, ``err_at_k`` and ``rbp`` against ir_measures on random runs (hypothesis).

ir_measures computes ``Judged@k`` itself (its ``judged`` provider), ``RBP`` through cwl_eval
(``cwl_eval`` provider, full precision) and ``ERR@k`` through gdeval.pl (``gdeval`` provider,
a Perl script that prints 5 decimals: there the bound is half a unit of its last decimal,
5e-6, and the full-precision check is against the textbook formula written out below).
The draws: three numeric topics (gdeval reads only those), a small docno alphabet,
distinct scores within a query (ir_measures' Judged@k breaks score ties by docno ascending,
trec_eval and ragframe descending), grades 0..4 (gdeval's scale; ragframe, as trec_eval,
takes a negative grade for "unjudged", ir_measures for judged, so none are drawn), queries
without results and results without judgments.
"""

from __future__ import annotations

import shutil

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe as rf

irm = pytest.importorskip("ir_measures")

TOL = 1e-9
GDEVAL_TOL = 5e-6 + 1e-12  # gdeval prints %.5f
DOC_IDS = ("a", "b", "c", "d", "e", "f", "g", "A", "aa", "10", "9")
QUERY_IDS = ("1", "2", "3")
CUTOFFS = (1, 3, 5, 10)


@st.composite
def collections(draw, grades=(0, 1, 2, 3, 4)):
    qrels, run = [], []
    for qid in QUERY_IDS:
        judged = draw(st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=8))
        qrels += [(qid, doc, draw(st.sampled_from(grades))) for doc in judged]
        retrieved = draw(st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=9))
        scores = draw(st.lists(st.integers(0, 50), unique=True, min_size=len(retrieved), max_size=len(retrieved)))
        run += [(qid, doc, float(score)) for doc, score in zip(retrieved, scores)]
    return qrels, run


def _frames(qrels, run):
    q = pl.DataFrame(qrels, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}, orient="row")
    r = pl.DataFrame(run, schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}, orient="row")
    return r, q


def _ours(qrels, run, metrics, **options) -> dict[str, dict[str, float]]:
    """column -> query -> value, for the judged queries (``complete``: a judged query without results scores 0)."""
    per_query = rf.evaluate_run(*_frames(qrels, run), k=list(CUTOFFS), metrics=metrics, complete=True, **options)
    judged = per_query.filter(pl.col("num_rel").is_not_null() & pl.col("query_id").is_in({q for q, _, _ in qrels}))
    columns = [c for c in judged.columns if c not in ("query_id", "num_ret", "num_rel", "num_rel_ret")]
    return {c: dict(zip(judged["query_id"], judged[c])) for c in columns}


def _theirs(provider: str, measures, qrels, run) -> dict[str, dict[str, float]]:
    qrels_ = [irm.Qrel(q, d, g) for q, d, g in qrels]
    run_ = [irm.ScoredDoc(q, d, s) for q, d, s in run]
    out: dict[str, dict[str, float]] = {}
    for metric in irm.providers.registry[provider].iter_calc(measures, qrels_, run_):
        out.setdefault(str(metric.measure), {})[metric.query_id] = float(metric.value)
    return out


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(collections())
def test_judged_at_k_equals_ir_measures(data):
    qrels, run = data
    if not qrels or not run:
        return
    ours = _ours(qrels, run, ["judged_at_k"])
    theirs = _theirs("judged", [irm.Judged @ k for k in CUTOFFS], qrels, run)
    for k in CUTOFFS:
        expected = theirs.get(f"Judged@{k}", {})
        assert set(expected) == set(ours[f"judged_at_{k}"])
        for qid, value in expected.items():
            assert abs(ours[f"judged_at_{k}"][qid] - value) <= TOL, (k, qid)


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(collections(grades=(0, 1)), st.sampled_from((0.5, 0.8, 0.9, 0.95)))
def test_rbp_equals_ir_measures_cwl_eval(data, persistence):
    """Binary judgments: trec_eval's rbp (ragframe's) is Moffat and Zobel's RBP, as cwl_eval computes it."""
    pytest.importorskip("cwl")
    qrels, run = data
    if not qrels or not run:
        return
    ours = _ours(qrels, run, ["rbp"], rbp_persistence=persistence)["rbp"]
    theirs = _theirs("cwl_eval", [irm.RBP(p=persistence, rel=1)], qrels, run)
    values = next(iter(theirs.values()), {})
    assert values, "cwl_eval returned nothing"
    for qid, value in values.items():
        if qid in ours:
            assert abs(ours[qid] - value) <= TOL, qid
    assert set(ours) <= set(values)


def _textbook_err(grades: list[int], k: int, max_grade: int = 4) -> float:
    """ERR@k (Chapelle et al. 2009) as gdeval writes it: one rank at a time."""
    score, decay = 0.0, 1.0
    for rank, grade in enumerate(grades[:k], start=1):
        stop = (2 ** max(grade, 0) - 1) / 2**max_grade
        score += stop * decay / rank
        decay *= 1 - stop
    return score


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("perl") is None, reason="ir_measures' ERR runs gdeval.pl with perl")
@settings(max_examples=60, deadline=None)
@given(collections())
def test_err_at_k_equals_ir_measures_gdeval(data):
    qrels, run = data
    if not qrels or not run:
        return
    ours = _ours(qrels, run, ["err_at_k"])
    theirs = _theirs("gdeval", [irm.ERR @ k for k in CUTOFFS], qrels, run)
    grade = {(q, d): g for q, d, g in qrels}
    for k in CUTOFFS:
        for qid, value in ours[f"err_at_{k}"].items():
            ranked = sorted((r for r in run if r[0] == qid), key=lambda r: -r[2])
            assert abs(value - _textbook_err([grade.get((qid, d), 0) for _, d, _ in ranked], k)) <= 1e-12
        expected = theirs.get(f"ERR@{k}", {})
        for qid, value in expected.items():  # ir_measures gives 0 where gdeval reports nothing
            assert abs(ours[f"err_at_{k}"][qid] - value) <= GDEVAL_TOL, (k, qid)
        assert set(expected) == set(ours[f"err_at_{k}"])


# ----------------------------------------------------------------------------- by hand


def test_err_by_hand():
    """Grades 3, 0, 4 at ranks 1..3: R = 7/16, 0, 15/16; ERR@3 = 7/16 + (9/16)(15/16)/3."""
    frame = pl.DataFrame(
        {
            "retrieved_ids": [["a", "b", "c"]],
            "relevance": [[{"id": "a", "grade": 3}, {"id": "b", "grade": 0}, {"id": "c", "grade": 4}]],
        }
    )
    out = rf.score_retrieval(frame, k=[1, 2, 3], metrics=["err_at_k"]).row(0, named=True)
    assert out["err_at_1"] == out["err_at_2"] == 7 / 16
    assert out["err_at_3"] == pytest.approx(7 / 16 + (9 / 16) * (15 / 16) / 3, rel=1e-15)
    five = rf.score_retrieval(frame, k=3, metrics=["err_at_k"], err_max_grade=5)["err_at_3"][0]
    assert five == pytest.approx(7 / 32 + (25 / 32) * (15 / 32) / 3, rel=1e-15)  # max grade 5: R = 7/32, 0, 15/32


def test_judged_at_k_by_hand():
    """Ranking a b c (b unjudged, c grade -1 = in the pool, unjudged): judged_at_2 = 1/2, judged_at_10 = 1/3."""
    frame = pl.DataFrame(
        {
            "retrieved_ids": [["a", "b", "c"], ["x"]],
            "relevance": [[{"id": "a", "grade": 0}, {"id": "c", "grade": -1}], [{"id": "x", "grade": 2}]],
        }
    )
    out = rf.score_retrieval(frame, k=[2, 10], metrics=["judged_at_k", "unjudged_at_k"])
    assert out["judged_at_2"].to_list() == [0.5, 1.0]
    assert out["judged_at_10"].to_list() == [1 / 3, 1.0]  # over the 3 (1) retrieved, not over 10
    assert out["unjudged_at_10"].to_list() == [0.2, 0.0]  # trec_eval's unj divides by k
