"""``rf.summarize``'s ``gm``: trec_eval's geometric mean (gm_map, gm_bpref), declared on the registry entry.

gm = exp(mean(log(max(value, 0.00001)))) for the metrics whose :class:`rf.Metric` names a geometric
mean (``average_precision``: ``gm_map``; ``bpref``: ``gm_bpref``), null for every other column.
Checked by hand arithmetic, against trec_eval 10.0's printed values (its own test suite's files in
``tests/data/trec_eval``), against ``run_summary``/``ragframe trec``'s summaries, and the mergeable
paths (states, ``evaluate_parquet``, Ray's ``summarize_dataset``) against the in-memory summary.
"""

from __future__ import annotations

import math
import os

import polars as pl
import pytest
from conftest import LOCAL_DATA

import ragframe as rf
from ragframe.io.trec_eval_format import output_measures, parse_measures
from ragframe.io.trec_eval_format import summarize as trec_summarize
from ragframe.kernels.trec_measures import MIN_GEO_MEAN, TrecOptions
from ragframe.metrics.registry import get_metric
from ragframe.run.trec_run import trec_eval_run

TE = LOCAL_DATA / "trec_eval"
#: expected output, qrels, run, evaluate_run keywords (trec_eval's -c, -M, -l)
CONFIGS = {
    "aq": ("out.test.aq", "qrels.test", "results.test", {}),
    "aqc": ("out.test.aqc", "qrels.test", "results.trunc", {"complete": True}),
    "aqcM": ("out.test.aqcM", "qrels.test", "results.trunc", {"complete": True, "max_docs": 100}),
    "aql": ("out.test.aql", "qrels.rel_level", "results.test", {"relevance_level": 2}),
}
GEOMETRIC = {"average_precision": "gm_map", "bpref": "gm_bpref"}


def _gm(summary: pl.DataFrame, metric: str) -> float | None:
    return summary.filter(pl.col("metric") == metric)["gm"].item()


def test_the_registry_declares_which_metrics_have_a_geometric_mean():
    declared = {m.name: m.geometric_mean for m in rf.metrics.registry.metrics() if m.geometric_mean is not None}
    assert declared == GEOMETRIC
    assert get_metric("mrr").geometric_mean is None


def test_gm_by_hand():
    """AP 0.5, 0 and 0.02: (0.5 * 0.00001 * 0.02) ** (1/3) (0 is floored); bpref 1, 1, 1/8: 1/2."""
    scores = pl.DataFrame({"average_precision": [0.5, 0.0, 0.02], "bpref": [1.0, 1.0, 0.125], "mrr": [1.0, 0.5, 0.25]})
    summary = rf.summarize(scores)
    assert summary.columns[:6] == ["metric", "count", "null_count", "null_rate", "mean", "gm"]
    assert _gm(summary, "average_precision") == pytest.approx((0.5 * 0.00001 * 0.02) ** (1 / 3), rel=1e-12)
    assert _gm(summary, "bpref") == pytest.approx(0.5, rel=1e-12)
    assert _gm(summary, "mrr") is None  # trec_eval has no geometric mean of recip_rank


def test_gm_floors_at_trec_eval_minimum_and_skips_nulls():
    """Every value 0: the floor itself; nulls are left out (as every other statistic leaves them out)."""
    scores = pl.DataFrame({"average_precision": [0.0, None, 0.0]})
    assert _gm(rf.summarize(scores), "average_precision") == pytest.approx(MIN_GEO_MEAN, rel=1e-12)
    only_null = rf.summarize(pl.DataFrame({"bpref": pl.Series([None, None], dtype=pl.Float64)}))
    assert _gm(only_null, "bpref") is None


def test_gm_with_a_prefix_groups_and_stats():
    scores = pl.DataFrame(
        {
            "split": ["a", "a", "b"],
            "bm25_average_precision": [0.25, 1.0, 0.0],
            "bm25_mrr": [1.0, 1.0, 0.0],
        }
    )
    summary = rf.summarize(scores, by="split", stats=["mean", "gm"])
    assert summary.columns == ["split", "metric", "mean", "gm"]
    rows = {(r["split"], r["metric"]): r["gm"] for r in summary.iter_rows(named=True)}
    assert rows["a", "bm25_average_precision"] == pytest.approx(0.5, rel=1e-12)  # sqrt(0.25 * 1)
    assert rows["b", "bm25_average_precision"] == pytest.approx(0.00001, rel=1e-12)
    assert rows["a", "bm25_mrr"] is None and rows["b", "bm25_mrr"] is None


def _expected(path) -> dict[tuple[str, str], str]:
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        measure, qid, value = (part.strip() for part in line.split("\t"))
        out[measure, qid] = value
    return out


@pytest.fixture(scope="module", params=list(CONFIGS))
def judged(request):
    """(config, the evaluated queries' per-query AP and bpref, ragframe trec's per-query frame)."""
    _, qrels_name, run_name, options = CONFIGS[request.param]
    run, qrels = rf.read_trec_run(TE / run_name), rf.read_qrels(TE / qrels_name)
    per_query = rf.evaluate_run(run, qrels, metrics=["average_precision", "bpref"], **options)
    reference = trec_eval_run(run, qrels, TrecOptions(tuple(parse_measures(["gm_map", "gm_bpref"]))), **options)
    return request.param, per_query.filter(pl.col("query_id").is_in(reference["query_id"].implode())), reference


@pytest.mark.parametrize(("metric", "trec_name"), list(GEOMETRIC.items()))
def test_gm_equals_trec_eval_and_run_summary(judged, metric, trec_name):
    """To trec_eval's printed 4 decimals; to run_summary's and ragframe trec's value within 1e-12."""
    config, per_query, reference = judged
    gm = _gm(rf.summarize(per_query), metric)
    assert f"{gm:6.4f}" == _expected(TE / CONFIGS[config][0])[trec_name, "all"], config
    assert gm == pytest.approx(rf.run_summary(per_query)[trec_name].item(), rel=1e-12, abs=0)
    printed = output_measures(parse_measures([trec_name]), runid=False, num_q=False)
    assert gm == pytest.approx(trec_summarize(reference, printed)[trec_name], rel=1e-12, abs=0)


def test_merged_states_agree_with_summarize():
    """One state finalised is summarize's gm bit for bit; states of parts merge to it within rounding."""
    values = [0.5, 0.0, 0.02, 0.3, None, 0.9, 0.125, 0.0004]
    scores = pl.DataFrame({"split": ["x", "y"] * 4, "average_precision": values, "mrr": [0.5] * 8})
    whole = rf.summarize(scores, by="split").select("split", "metric", "gm")
    assert rf.summary_state(scores, by="split").finalize().select("split", "metric", "gm").equals(whole)
    parts = [rf.summary_state(scores.slice(start, 3), by="split") for start in (0, 3, 6)]
    merged = rf.merge_summary_states(parts).finalize().select("split", "metric", "gm")
    for left, right in zip(merged.iter_rows(), whole.iter_rows()):
        assert left[:2] == right[:2]
        assert (left[2] is None and right[2] is None) or left[2] == pytest.approx(right[2], rel=1e-12, abs=0)
    x = merged.filter((pl.col("split") == "x") & (pl.col("metric") == "average_precision"))["gm"].item()
    assert x == pytest.approx((0.5 * 0.02 * 0.125) ** (1 / 3), rel=1e-12)  # split x: 0.5, 0.02, null, 0.125


def test_a_state_from_before_gm_merges_to_a_null_gm():
    """A stored state without the log sum (written before gm existed): gm null, never a wrong number."""
    scores = pl.DataFrame({"average_precision": [0.5, 0.25]})
    old = rf.SummaryState(rf.summary_state(scores).frame.drop("log_sum"))
    assert old.finalize()["gm"].item() is None
    assert rf.merge_summary_states([old, rf.summary_state(scores)]).finalize()["gm"].item() is None
    assert rf.summary_state(scores).finalize()["gm"].item() == pytest.approx(math.sqrt(0.125), rel=1e-12)


def _wide_frame(rows: int = 60) -> pl.DataFrame:
    """A wide ranking frame: query i retrieves d0..d4, judged relevant: a pattern of its own."""
    judged_type = pl.List(pl.Struct({"id": pl.String, "grade": pl.Int64}))
    relevance = [
        [{"id": f"d{j}", "grade": int((i + j) % 3 == 0)} for j in range(i % 5 + 1)] + [{"id": "x", "grade": 1}]
        for i in range(rows)
    ]
    return pl.DataFrame(
        {
            "id": list(range(rows)),
            "retrieved_ids": [[f"d{j}" for j in range(5)] for _ in range(rows)],
            "relevance": pl.Series(relevance, dtype=judged_type),
        }
    )


def test_streaming_summary_gm_agrees_with_summarize(tmp_path):
    frame = _wide_frame()
    frame.write_parquet(tmp_path / "log.parquet")
    result = rf.evaluate_parquet(
        tmp_path / "log.parquet",
        tmp_path / "out",
        metrics=["average_precision", "bpref", "mrr"],
        batch_rows=7,
        progress=False,
        batches_per_process=None,
    )
    local = rf.summarize(rf.score_retrieval(frame, metrics=["average_precision", "bpref", "mrr"]))
    streamed = result.summary
    for metric in ("average_precision", "bpref"):
        assert _gm(streamed, metric) == pytest.approx(_gm(local, metric), rel=1e-12, abs=0), metric
        assert 0.0 < _gm(local, metric) < 1.0
    assert _gm(streamed, "mrr") is None


@pytest.mark.slow
@pytest.mark.ray
def test_ray_summary_gm_agrees_with_summarize():
    ray = pytest.importorskip("ray")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    from ray.data import from_arrow

    scores = rf.score_retrieval(_wide_frame(), metrics=["average_precision", "bpref", "mrr"])
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, object_store_memory=300_000_000, include_dashboard=False, log_to_driver=False)
    try:
        ds = from_arrow(scores.drop("retrieved_ids", "relevance").to_arrow()).repartition(4)
        got = rf.distributed.summarize_dataset(ds, batch_size=9)
    finally:
        if started:
            ray.shutdown()
    local = rf.summarize(scores)
    for metric in ("average_precision", "bpref"):
        assert _gm(got, metric) == pytest.approx(_gm(local, metric), rel=1e-12, abs=0), metric
    assert _gm(got, "mrr") is None
