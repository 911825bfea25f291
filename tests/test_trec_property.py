"""Property tests: every trec_eval measure of ``ragframe trec`` against pytrec_eval on random runs.

pytrec_eval embeds trec_eval 9's measure code. Hypothesis draws small collections (few
queries, a small docno alphabet, tied scores, grades -1..3, unjudged and unpooled documents,
judged queries without results, run queries without judgments) and every per-query value
of every measure both have must agree within 1e-9. Not compared, because the two trec_evals
differ on purpose or pytrec_eval lacks them: ``iprec_at_recall`` and ``11pt_avg`` (trec_eval
10 rounds the recall cutoff, 9 adds 0.9 and truncates), ``relstring``, ``rbp``,
``rbp_resid``, ``unj`` (new in 10). A judged query whose judgments are all negative is not
drawn: trec_eval 9 (pytrec_eval) never returns from ``G`` and ``ndcg_rel`` on it, and trec_eval
10 reads an uninitialised gain count there (ragframe: 0). Those are checked by trec_eval 10's own suite
(``tests/test_trec_suite.py``) and, for ``unj``/``rbp_resid``, by hand below.
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragframe.io.trec_eval_format import parse_measures
from ragframe.kernels.trec_measures import TrecOptions
from ragframe.run.trec_run import trec_eval_run

pytrec_eval = pytest.importorskip("pytrec_eval")

TOL = 1e-9
DOC_IDS = ("a", "b", "c", "d", "e", "A", "aa", "10", "9")
QUERY_IDS = ("q1", "q2", "q3")
SCORES = (0.0, 0.5, 1.0, 2.0)
GRADES = (-1, 0, 1, 2, 3)
SKIP = ("iprec_at_recall", "11pt_avg", "relstring", "rbp", "unj", "runid", "num_q")
MEASURES = ["all_trec", "map_cut.1,2,3,7", "relative_P.1,3,20", "Rprec_mult.0.5,1.3,3"]


@st.composite
def collections(draw):
    qrels, run = [], []
    for qid in QUERY_IDS:
        judged = draw(st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=7))
        grades = [draw(st.sampled_from(GRADES)) for _ in judged]
        if grades and max(grades) < 0:  # trec_eval 9 (pytrec_eval) loops forever in G and ndcg_rel there
            grades[0] = 0
        qrels += list(zip([qid] * len(judged), judged, grades))
        retrieved = draw(st.lists(st.sampled_from(DOC_IDS), unique=True, max_size=8))
        run += [(qid, doc, draw(st.sampled_from(SCORES))) for doc in retrieved]
    return qrels, run


def _frames(qrels, run):
    q = pl.DataFrame(qrels, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}, orient="row")
    r = pl.DataFrame(run, schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}, orient="row")
    return q, r


def _pytrec(qrels, run, level):
    judged: dict = {}
    for qid, doc, grade in qrels:
        judged.setdefault(qid, {})[doc] = grade
    ranked: dict = {}
    for qid, doc, score in run:
        ranked.setdefault(qid, {})[doc] = score
    names = ({m.root for m in parse_measures(MEASURES)} - set(SKIP)) & set(pytrec_eval.supported_measures)
    # pytrec_eval's own parameter syntax for the non-default lists
    names |= {"map_cut.1,2,3,7", "relative_P.1,3,20", "Rprec_mult.0.5,1.3,3"}
    evaluator = pytrec_eval.RelevanceEvaluator(judged, names, relevance_level=level)
    return evaluator.evaluate(ranked)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(collections(), st.sampled_from((1, 2)))
def test_every_measure_equals_pytrec_eval(data, level):
    qrels, run = data
    if not qrels or not run:
        return
    ours_frame = trec_eval_run(*reversed(_frames(qrels, run)), TrecOptions(tuple(parse_measures(MEASURES))),
                               relevance_level=level)  # fmt: skip
    theirs = _pytrec(qrels, run, level)
    ours = {row["query_id"]: row for row in ours_frame.iter_rows(named=True)}
    assert set(ours) == set(theirs)
    compared = 0
    for qid, values in theirs.items():
        for name, value in values.items():
            if name.startswith(SKIP) or name not in ours[qid]:
                continue
            mine = ours[qid][name]
            if name in ("gm_map", "gm_bpref"):  # pytrec_eval keeps trec_eval's per-query logarithm
                mine = math.log(max(mine, 0.00001))
            assert mine == pytest.approx(value, abs=TOL), (qid, name, mine, value)
            compared += 1
    assert compared >= 60 * len(theirs) or not theirs


def test_utility_with_parameters_by_hand():
    qrels = [("q1", "a", 1), ("q1", "b", 0), ("q1", "c", 2), ("q1", "z", 1)]
    run = [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "x", 1.0)]
    q, r = _frames(qrels, run)
    ours = trec_eval_run(r, q, TrecOptions(tuple(parse_measures(["utility.2,-1,0.5,0"])))).row(0, named=True)
    # a = 1 (a; c has grade 2 and is not retrieved), N = 3, R = 3: 2*1 - 1*2 + 0.5*2 = 1
    assert ours["utility_2,-1,0.5,0"] == 1.0


def test_unjudged_and_rbp_residual_by_hand():
    # ranks: a (rel 1), x (not in the pool), u (in the pool, unjudged: -1), b (rel 0)
    qrels = [("q1", "a", 1), ("q1", "u", -1), ("q1", "b", 0), ("q1", "c", 1)]
    run = [("q1", "a", 4.0), ("q1", "x", 3.0), ("q1", "u", 2.0), ("q1", "b", 1.0)]
    q, r = _frames(qrels, run)
    spec = ["unj.1,2,3,10", "rbp", "rbp_resid", "rbp.p=0.5", "relstring.6"]
    row = trec_eval_run(r, q, TrecOptions(tuple(parse_measures(spec)))).row(0, named=True)
    assert (row["unj_1"], row["unj_2"], row["unj_3"], row["unj_10"]) == (0.0, 0.5, 2 / 3, 0.2)
    assert row["rbp_p=0.5"] == 0.5  # (1 - p) * 1 * p^0
    # residual: p^N + (1 - p) * (p^1 + p^2) for the two unjudged ranks 2 and 3, p = 0.9
    assert row["rbp_resid"] == pytest.approx(0.9**4 + 0.1 * (0.9 + 0.81), abs=1e-15)
    assert row["relstring_6"] == "1-.0"
