"""rf.ranking_agreement: system rankings under two label sets or two metrics (rank_llm's DL19/DL20 runs)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import shared_path
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import ragframe as rf
from ragframe.stats.ranking_agreement import kendall_tau_b, tau_ap

# rankllm_dl_runs/README.md: nDCG@10 from pytrec_eval (= Pyserini's published values)
NDCG10 = {
    "dl19": {
        "BM25": 0.5058,
        "BM25_RM3": 0.5216,
        "D_BERT_KD_TASB": 0.7210,
        "OPEN_AI_ADA2": 0.7035,
        "SPLADE_P_P_ENSEMBLE_DISTIL": 0.7308,
        "BM25.rerank-gpt-3.5-turbo": 0.6868,
    },
    "dl20": {
        "BM25": 0.4796,
        "BM25_RM3": 0.4896,
        "D_BERT_KD_TASB": 0.6854,
        "OPEN_AI_ADA2": 0.6759,
        "SPLADE_P_P_ENSEMBLE_DISTIL": 0.7197,
        "BM25.rerank-gpt-3.5-turbo": 0.6337,
    },
}


def _runs(year: str) -> pl.DataFrame:
    qrels = rf.read_qrels(shared_path("anserini_qrels", f"qrels.{year}-passage.txt"))
    frames = []
    for name in NDCG10[year]:
        run = rf.read_trec_run(shared_path("rankllm_dl_runs", f"run.{year}.{name}.txt"))
        frames.append(rf.evaluate_run(run, qrels, k=10).with_columns(pl.lit(name).alias("run_id")))
    return pl.concat(frames)


@pytest.fixture(scope="module", params=["dl19", "dl20"])
def dl(request) -> tuple[str, pl.DataFrame]:
    return request.param, _runs(request.param)


@pytest.mark.parametrize("other", ["mrr_at_10", "average_precision", "precision_at_10"])
def test_dl_runs_tau_and_spearman_equal_scipy(dl, other) -> None:
    year, scores = dl
    means = scores.group_by("run_id").agg(pl.col("ndcg_at_10", other).mean()).sort("run_id")
    assert {r: round(v, 4) for r, v in means.select("run_id", "ndcg_at_10").iter_rows()} == NDCG10[year]
    got = rf.ranking_agreement(scores, scores, metric="ndcg_at_10", metric_b=other).row(0, named=True)
    x, y = means["ndcg_at_10"].to_numpy(), means[other].to_numpy()
    assert got["systems"] == 6 and got["queries"] == {"dl19": 43, "dl20": 54}[year]
    assert got["kendall_tau"] == pytest.approx(stats.kendalltau(x, y)[0])
    assert got["spearman"] == pytest.approx(stats.spearmanr(x, y)[0])
    for name in ("kendall_tau", "tau_ap", "spearman"):
        assert got[f"{name}_low"] <= got[name] + 1e-12 and got[name] <= got[f"{name}_high"] + 1e-12
    swapped = rf.ranking_agreement(scores, scores, metric="ndcg_at_10", metric_b=other, pairs=True)
    assert swapped.height == 15 and swapped["swapped"].sum() == got["swaps"]


def test_dl20_ndcg_against_mrr_by_hand() -> None:
    # the mean nDCG@10 / MRR@10 orders of rankllm_dl_runs' six DL20 runs (values in docs/assessors.md)
    scores = _runs("dl20")
    got = rf.ranking_agreement(scores, scores, metric="ndcg_at_10", metric_b="mrr_at_10").row(0, named=True)
    # 15 pairs, 5 ordered differently: tau = (10 - 5) / 15
    assert got["swaps"] == 5 and got["kendall_tau"] == pytest.approx(1 / 3)
    pairs = rf.ranking_agreement(scores, scores, metric="ndcg_at_10", metric_b="mrr_at_10", pairs=True)
    significant = pairs.filter("significant_swap")
    assert significant.select("system_1", "system_2").rows() == [
        ("SPLADE_P_P_ENSEMBLE_DISTIL", "BM25.rerank-gpt-3.5-turbo")
    ]
    wide = scores.filter(pl.col("run_id").is_in(["SPLADE_P_P_ENSEMBLE_DISTIL", "BM25.rerank-gpt-3.5-turbo"]))
    wide = wide.pivot(on="run_id", index="query_id", values="ndcg_at_10")
    want = stats.ttest_rel(wide["SPLADE_P_P_ENSEMBLE_DISTIL"], wide["BM25.rerank-gpt-3.5-turbo"]).pvalue
    assert significant["p_value_a"].item() == pytest.approx(want)


def test_same_scores_agree_perfectly_and_row_order_is_free(dl) -> None:
    _, scores = dl
    got = rf.ranking_agreement(scores, scores.sample(fraction=1.0, shuffle=True, seed=2), metric="ndcg_at_10", seed=5)
    row = got.row(0, named=True)
    assert (row["kendall_tau"], row["tau_ap"], row["spearman"], row["swaps"]) == (1.0, 1.0, 1.0, 0)
    assert row["kendall_tau_high"] == 1.0
    again = rf.ranking_agreement(scores, scores, metric="ndcg_at_10", seed=5)
    assert got.equals(again)


def _tau_ap_loop(reference: list[float], candidate: list[float]) -> float:
    """Yilmaz et al.'s definition written out (no ties)."""
    order = sorted(range(len(candidate)), key=lambda k: -candidate[k])
    total = 0.0
    for i in range(1, len(order)):
        above = order[:i]
        total += sum(reference[j] > reference[order[i]] for j in above) / i
    return 2 / (len(order) - 1) * total - 1


@settings(max_examples=80, deadline=None)
@given(st.permutations(list(range(7))), st.permutations(list(range(7))))
def test_tau_ap_matches_its_definition(p, q) -> None:
    ref, cand = [float(v) for v in p], [float(v) for v in q]
    assert tau_ap(np.array([ref]), np.array([cand]))[0] == pytest.approx(_tau_ap_loop(ref, cand))
    assert tau_ap(np.array([ref]), np.array([ref]))[0] == pytest.approx(1.0)
    assert tau_ap(np.array([ref]), -np.array([ref]))[0] == pytest.approx(-1.0)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=3, max_size=12))
def test_kendall_tau_b_equals_scipy_with_ties(rows) -> None:
    x = np.array([r[0] for r in rows], dtype=float)
    y = np.array([r[1] for r in rows], dtype=float)
    got = kendall_tau_b(x[None, :], y[None, :])[0]
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert np.isnan(got)
    else:
        assert got == pytest.approx(stats.kendalltau(x, y)[0])


def test_bad_inputs() -> None:
    a = pl.DataFrame({"run_id": ["x", "x", "y", "y"], "query_id": ["1", "2", "1", "2"], "m": [0.1, 0.2, 0.3, 0.4]})
    with pytest.raises(rf.InvalidParameterError, match="same systems"):
        rf.ranking_agreement(a, a.with_columns(pl.col("run_id").replace("y", "z")), metric="m")
    with pytest.raises(rf.InvalidParameterError, match="no score for query"):
        rf.ranking_agreement(a, a.head(3), metric="m")
    with pytest.raises(rf.SchemaError, match="twice"):
        rf.ranking_agreement(a, pl.concat([a, a.tail(1)]), metric="m")
    with pytest.raises(rf.SchemaError, match="non-finite"):
        rf.ranking_agreement(a, a.with_columns(pl.lit(float("nan")).alias("m")), metric="m")
    with pytest.raises(rf.InvalidParameterError, match="two systems"):
        rf.ranking_agreement(a.head(2), a.head(2), metric="m")
    with pytest.raises(rf.InvalidParameterError, match="alpha"):
        rf.ranking_agreement(a, a, metric="m", alpha=0)
    with pytest.raises(rf.SchemaError):
        rf.ranking_agreement(a, a, metric="nope")


def test_bootstrap_in_blocks_gives_the_same_intervals(monkeypatch) -> None:
    import ragframe.stats.ranking_agreement as module

    scores = _runs("dl19")
    kw = {"metric": "ndcg_at_10", "metric_b": "mrr_at_10", "n_resamples": 300}
    whole = rf.ranking_agreement(scores, scores, **kw)
    monkeypatch.setattr(module, "_CELLS", 36 * 7)  # blocks of 7 resamples of 6 x 6 systems
    assert rf.ranking_agreement(scores, scores, **kw).equals(whole)
