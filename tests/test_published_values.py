"""Published and independently computed values on real runs.

* TREC DL 2019/2020 passage runs from rank_llm: nDCG@10 as published in Pyserini's
  reproduction tables, and RR / MAP / R@100 (relevance level 2) from pytrec_eval, as listed in
  ``../shared/data/rankllm_dl_runs/README.md``. The two DL19 BM25 runs are bundled with the
  package, so that check always runs.
* TREC 2003 Robust runs from trectools: trec_eval values from trectools' unit tests and
  pytrec_eval values from ``../shared/data/robust03_trectools/README.md``.
"""

from __future__ import annotations

import pytest
from conftest import shared_path

import ragframe as rf
from ragframe.datasets import example_paths

DL_NDCG10 = {  # run -> (DL19, DL20) nDCG@10
    "BM25": (0.5058, 0.4796),
    "BM25_RM3": (0.5216, 0.4896),
    "D_BERT_KD_TASB": (0.7210, 0.6854),
    "OPEN_AI_ADA2": (0.7035, 0.6759),
    "SPLADE_P_P_ENSEMBLE_DISTIL": (0.7308, 0.7197),
    "BM25.rerank-gpt-3.5-turbo": (0.6868, 0.6337),
}
DL_OTHER = {  # run -> DL19 (RR, MAP l2, R@100 l2), DL20 (RR, MAP l2, R@100 l2)
    "BM25": ((0.8245, 0.2476, 0.4910), (0.8269, 0.2685, 0.5599)),
    "BM25_RM3": ((0.8100, 0.2807, 0.5259), (0.7669, 0.2821, 0.6182)),
    "D_BERT_KD_TASB": ((0.9510, 0.4050, 0.6097), (0.9242, 0.4520, 0.7135)),
    "OPEN_AI_ADA2": ((0.9186, 0.4151, 0.6235), (0.9393, 0.4587, 0.7237)),
    "SPLADE_P_P_ENSEMBLE_DISTIL": ((0.9729, 0.4464, 0.6390), (0.9565, 0.4826, 0.7653)),
    "BM25.rerank-gpt-3.5-turbo": ((0.9698, 0.3330, 0.4910), (0.9749, 0.3654, 0.5599)),
}


def _dl_means(run_path, qrels_path):
    run, qrels = rf.read_trec_run(run_path), rf.read_qrels(qrels_path)
    graded = rf.run_summary(rf.evaluate_run(run, qrels, k=10, metrics=["ndcg_at_k", "mrr"]))
    level2 = rf.run_summary(
        rf.evaluate_run(run, qrels, k=100, metrics=["average_precision", "recall_at_k"], relevance_level=2)
    )
    return (
        round(graded["ndcg_at_10"].item(), 4),
        round(graded["mrr"].item(), 4),
        round(level2["average_precision"].item(), 4),
        round(level2["recall_at_100"].item(), 4),
    )


@pytest.mark.parametrize(("name", "run"), [("BM25", "bm25"), ("BM25.rerank-gpt-3.5-turbo", "bm25+gpt3.5-rerank")])
def test_bundled_dl19_runs(name, run):
    paths = example_paths()
    ndcg10, rr, map2, r100 = _dl_means(paths[run], paths["qrels"])
    assert ndcg10 == DL_NDCG10[name][0]
    assert (rr, map2, r100) == DL_OTHER[name][0]


@pytest.mark.parametrize("year", ["dl19", "dl20"])
@pytest.mark.parametrize("name", sorted(DL_NDCG10))
def test_dl_runs_published_ndcg10(name, year):
    run = shared_path("rankllm_dl_runs", f"run.{year}.{name}.txt")
    qrels = shared_path("anserini_qrels", f"qrels.{year}-passage.txt")
    column = 0 if year == "dl19" else 1
    ndcg10, rr, map2, r100 = _dl_means(run, qrels)
    assert ndcg10 == DL_NDCG10[name][column]
    assert (rr, map2, r100) == DL_OTHER[name][column]


ROBUST_MEANS = {  # uic0301 with robust03_cs_qrels.txt, trec_eval values from trectools' tests
    "average_precision": 0.2396,
    "mrr": 0.6466,
    "precision_at_1000": 0.0371,
    "recall_at_5": 0.0858,
    "recall_at_10": 0.1314,
    "recall_at_15": 0.1686,
    "recall_at_20": 0.1968,
    "recall_at_30": 0.2530,
    "recall_at_100": 0.4243,
    "recall_at_200": 0.5323,
    "recall_at_500": 0.6569,
    "recall_at_1000": 0.7518,
}
ROBUST_PER_TOPIC = {
    "mrr": {"378": 0.0017, "650": 0.1429, "624": 0.3333},
    "average_precision": {"622": 0.4926, "609": 0.2808, "320": 0.2335},
    "precision_at_30": {"607": 0.1333, "433": 0.0333, "375": 0.5333},
    "recall_at_30": {"607": 0.3636, "433": 0.0769, "375": 0.2000, "303": 0.1000},
}
ROBUST_RUNS = {  # real qrels: map, P_10, recip_rank, ndcg, ndcg_cut_10, recall_1000, Rprec (pytrec_eval)
    "uic0301": (0.2404, 0.3900, 0.6466, 0.5245, 0.3914, 0.7548, 0.2675),
    "pircRBa1": (0.3101, 0.4540, 0.7029, 0.6029, 0.4572, 0.8234, 0.3216),
    "UIUC03Rd1": (0.2424, 0.3800, 0.6386, 0.5063, 0.3815, 0.7066, 0.2620),
    "humR03dc": (0.1248, 0.2200, 0.6025, 0.3197, 0.2529, 0.4077, 0.1710),
}


def test_robust03_trectools_values():
    run = rf.read_trec_run(shared_path("robust03_trectools", "input.uic0301.gz"))
    qrels = rf.read_qrels(shared_path("robust03_trectools", "robust03_cs_qrels.txt"))
    per_query = rf.evaluate_run(run, qrels, k=[5, 10, 15, 20, 30, 100, 200, 500, 1000])
    means = rf.run_summary(per_query)
    assert means["num_q"].item() == 100
    assert {c: round(means[c].item(), 4) for c in ROBUST_MEANS} == ROBUST_MEANS
    rows = {r["query_id"]: r for r in per_query.iter_rows(named=True)}
    for column, topics in ROBUST_PER_TOPIC.items():
        assert {t: round(rows[t][column], 4) for t in topics} == topics, column

    top30 = rf.evaluate_run(rf.read_trec_run(shared_path("robust03_trectools", "input.uic0301_top30")), qrels, k=30)
    cut = rf.evaluate_run(run, qrels, k=30, max_docs=30)
    joined = top30.join(cut, on="query_id", suffix="_full")
    assert joined.height == 10
    for column in ("average_precision", "precision_at_30", "recall_at_30", "mrr"):
        assert (joined[column] - joined[f"{column}_full"]).abs().max() < 1e-12


@pytest.mark.parametrize("name", sorted(ROBUST_RUNS))
def test_robust03_runs_real_qrels(name):
    run = rf.read_trec_run(shared_path("robust03_trectools", f"input.{name}.gz"))
    qrels = rf.read_qrels(shared_path("robust03_trectools", "robust03_qrels.txt"))
    means = rf.run_summary(rf.evaluate_run(run, qrels, k=[10, 1000]))
    columns = ["average_precision", "precision_at_10", "mrr", "ndcg", "ndcg_at_10", "recall_at_1000", "r_precision"]
    assert tuple(round(means[c].item(), 4) for c in columns) == ROBUST_RUNS[name]
