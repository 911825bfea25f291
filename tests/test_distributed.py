"""ragframe.distributed on a local Ray (2 CPUs, a 300 MB object store, usage statistics off).

Every test compares with the local functions on the same rows: scores bit for bit
(polars ``equals`` after sorting by id), summaries within the local merge's contract,
comparisons within 1e-12 (t) or exactly (Wilcoxon, and the resampling tests on id-sorted
frames). Test-only kernels live in tests/ray_helpers.py, which the workers import (this
folder is on their PYTHONPATH).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

import ragframe as rf
from ragframe.exceptions import MissingDependencyError, SchemaError
from ragframe.stats.summary import SKETCH_ERROR

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))

import ray_helpers as helpers  # noqa: E402
from judge_server import FakeJudgeServer  # noqa: E402

pytestmark = pytest.mark.ray
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # before Ray starts: no usage statistics
ray = pytest.importorskip("ray")

HEURISTIC = ["faithfulness", "answer_relevance", "context_precision", "context_relevance", "hallucination_rate"]


@pytest.fixture(scope="module")
def cluster():
    """One local Ray for the module: 2 CPUs, small object store, no dashboard, no usage statistics."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    path = os.pathsep.join([str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")])
    ray.init(
        num_cpus=2,
        object_store_memory=300_000_000,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0"}},
    )
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.fixture
def custom_metric():
    metric = rf.Metric("answer_words", "custom", ("answer",), "Words in the answer / 20.", kernel=helpers.answer_words)
    rf.register_metric(metric)
    yield metric.name
    rf.unregister_metric(metric.name)


def dataset(frame: pl.DataFrame, blocks: int = 1):
    from ray.data import from_arrow

    ds = from_arrow(frame.to_arrow())
    return ds.repartition(blocks) if blocks > 1 else ds


def collect(ds) -> pl.DataFrame:
    tables = ray.get(ds.to_arrow_refs())
    return pl.concat([pl.from_arrow(t) for t in tables if t.num_rows or len(tables) == 1])


def assert_same_scores(got: pl.DataFrame, want: pl.DataFrame, on: str = "id") -> None:
    got, want = got.sort(on), want.sort(on)
    assert got.columns == want.columns
    assert got.schema == want.schema
    assert got.equals(want)


# ----------------------------------------------------------------------------- the extra


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    monkeypatch.setitem(sys.modules, "ray.data", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragframe\[ray\]'"):
        rf.distributed.score_dataset(object(), ["mrr"])
    with pytest.raises(MissingDependencyError, match=r"ragframe\[ray\]"):
        rf.distributed.summarize_dataset(object())


# ----------------------------------------------------------------------------- scores


@pytest.mark.slow
@pytest.mark.parametrize(
    ("data", "metrics", "options"),
    [
        ("trec", ["retrieval"], {"k": [5, 10, 100]}),
        ("trec", ["bpref", "infap", "err_at_k", "judged_at_k", "rbp"], {"k": [5, 10], "rbp_persistence": 0.8}),
        ("rag", HEURISTIC, {}),
        ("rag", HEURISTIC, {"compat": "rag-eval-node-ts", "explain": True}),
        ("rag", ["answer_words", "faithfulness"], {}),
        ("claims", ["ragchecker", "nuggets", "citations"], {"explain": True}),
    ],
    ids=["retrieval-trec", "trec-measures-named", "heuristic-default", "heuristic-compat", "custom", "claim-level"],
)
def test_scores_equal_local_on_oracle_data(cluster, custom_metric, data, metrics, options):
    frame = helpers.trec_wide() if data == "trec" else helpers.rag_log() if data == "rag" else _claims_frame()
    want = rf.evaluate(frame, metrics, **options)
    got = collect(rf.distributed.score_dataset(dataset(frame, 3), metrics, batch_size=17, **options))
    assert_same_scores(got, want)


def _claims_frame() -> pl.DataFrame:
    """Random verdicts, nuggets and cited answers (tests/frames.py), 60 rows."""
    from frames import make_frame

    columns = ("answer2response", "response2answer", "retrieved2response", "retrieved2answer", "nuggets")
    frame = make_frame(columns, 60, 5).drop("meta")
    cited = [f"Paris is the capital of France [{i % 3 + 1}]. It is big [1][2]." for i in range(60)]
    passages = [["Paris is the capital of France.", "Paris is big.", "Lyon."]] * 60
    return frame.with_columns(pl.Series("answer", cited), pl.Series("contexts", passages), id=pl.int_range(60))


@pytest.mark.slow
def test_generated_log_in_many_blocks(cluster, custom_metric):
    frame = helpers.generated_log(600)
    evaluator = rf.Evaluator(["heuristic", "retrieval", "answer_words"], k=[1, 5])
    want = evaluator.evaluate(frame)
    got = collect(rf.distributed.score_dataset(dataset(frame, 12), evaluator, batch_size=29, concurrency=2))
    assert_same_scores(got, want)
    kept = collect(rf.distributed.score_dataset(dataset(frame, 5), evaluator, keep=["id"], batch_size=None))
    assert_same_scores(kept, want.select("id", *kept.columns[1:]))


@pytest.mark.slow
def test_parquet_files_read_inside_the_workers_equal_local(cluster, tmp_path):
    frame = helpers.generated_log(300)
    frame.head(170).write_parquet(tmp_path / "a.parquet")
    frame.tail(130).write_parquet(tmp_path / "b.parquet")
    evaluator = rf.Evaluator(["heuristic", "retrieval"], k=[1, 5])
    want = evaluator.evaluate(frame)
    got = collect(rf.distributed.score_dataset(tmp_path, evaluator, batch_size=40))  # a folder, 8 slices
    assert_same_scores(got, want)
    paths = [tmp_path / "a.parquet", str(tmp_path / "b.parquet")]
    kept = collect(rf.distributed.score_dataset(paths, evaluator, keep=["id"]))  # whole files, one slice each
    assert kept.columns[0] == "id" and "contexts" not in kept.columns
    assert_same_scores(kept, want.select("id", *kept.columns[1:]))


def test_parquet_slices_cut_each_file_and_refuse_other_columns(tmp_path):
    from ragframe.distributed.scoring import parquet_slices
    from ragframe.exceptions import InputFileError

    pl.DataFrame({"id": range(5)}).write_parquet(tmp_path / "a.parquet")
    pl.DataFrame({"id": range(3)}).write_parquet(tmp_path / "b.parquet")
    slices, empty = parquet_slices(tmp_path, 2)
    assert [(Path(s["file"]).name, s["offset"], s["rows"]) for s in slices] == [
        ("a.parquet", 0, 2),
        ("a.parquet", 2, 2),
        ("a.parquet", 4, 1),
        ("b.parquet", 0, 2),
        ("b.parquet", 2, 1),
    ]
    assert empty.height == 0 and empty.schema == pl.Schema({"id": pl.Int64})
    pl.DataFrame({"id": ["x"]}).write_parquet(tmp_path / "c.parquet")
    with pytest.raises(InputFileError, match=r"c\.parquet.*first file's columns and dtypes"):
        parquet_slices(tmp_path, 2)


@pytest.mark.slow
def test_a_parquet_dataset_is_read_and_scored_in_one_task(cluster, tmp_path):
    from ray.data import read_parquet

    helpers.generated_log(30).write_parquet(tmp_path / "log.parquet")
    scored = rf.distributed.score_dataset(read_parquet(str(tmp_path / "log.parquet")), ["mrr"], keep=["id"])
    from ray.data._internal.util import explain_plan  # what Dataset.explain prints

    physical = explain_plan(scored._logical_plan).split("Physical Plan (Optimized)")[1]
    assert "->MapBatches(BatchScorer)" in physical  # fused with the read: the block never enters the object store
    assert collect(scored).height == 30


def test_contract_checked_on_the_schema_before_any_block(cluster):
    frame = helpers.generated_log(20)
    with pytest.raises(SchemaError, match="needs the contexts column"):
        rf.distributed.score_dataset(dataset(frame.drop("contexts")), ["faithfulness"])
    with pytest.raises(SchemaError, match="wrong dtype") as caught:
        rf.distributed.score_dataset(dataset(frame.with_columns(pl.col("answer").str.len_chars())), ["faithfulness"])
    assert "every row" in str(caught.value)
    with pytest.raises(SchemaError, match="missing column to keep"):
        rf.distributed.score_dataset(dataset(frame), ["faithfulness"], keep=["nope"])


@pytest.mark.slow
def test_bad_rows_raise_naming_the_id_or_are_rejected(cluster):
    frame = helpers.generated_log(60).with_columns(
        pl.when(pl.col("id") == 41).then(pl.lit(["ok", None])).otherwise(pl.col("contexts")).alias("contexts")
    )
    scored = rf.distributed.score_dataset(dataset(frame, 4), ["faithfulness"])
    with pytest.raises(SchemaError, match=r"the row with id=41 breaks the column contract: null inside the list"):
        collect(scored)
    rejected = collect(rf.distributed.score_dataset(dataset(frame, 4), ["faithfulness"], on_bad_rows="reject"))
    assert rejected.height == 60  # never dropped
    bad = rejected.filter(pl.col("reject_reason").is_not_null())
    assert bad["id"].to_list() == [41] and bad["faithfulness"].to_list() == [None]
    good = frame.filter(pl.col("id") != 41)
    want = rf.evaluate(good, ["faithfulness"])
    assert_same_scores(rejected.filter(pl.col("id") != 41).drop("reject_reason"), want)


def test_parquet_files_bad_rows_named_by_their_row_in_the_file(cluster, tmp_path):
    frame = helpers.generated_log(60).with_columns(
        pl.when(pl.col("id") == 41).then(pl.lit(["ok", None])).otherwise(pl.col("contexts")).alias("contexts")
    )
    frame.write_parquet(tmp_path / "log.parquet")
    with pytest.raises(SchemaError, match=r"the row with id=41 breaks the column contract: .*row 41.*log\.parquet"):
        collect(rf.distributed.score_dataset(tmp_path / "log.parquet", ["faithfulness"], batch_size=25))
    rejected = collect(
        rf.distributed.score_dataset(tmp_path / "log.parquet", ["faithfulness"], on_bad_rows="reject", batch_size=25)
    )
    assert rejected.height == 60
    bad = rejected.filter(pl.col("reject_reason").is_not_null())
    assert bad["id"].to_list() == [41] and bad["faithfulness"].to_list() == [None]
    assert "row 41" in bad["reject_reason"][0]  # the row of the file, not of its slice (16 in the slice from 25)
    want = rf.evaluate(frame.filter(pl.col("id") != 41), ["faithfulness"])
    assert_same_scores(rejected.filter(pl.col("id") != 41).drop("reject_reason"), want)


@pytest.mark.slow
def test_worker_killed_mid_batch_is_retried(cluster, tmp_path):
    marker = tmp_path / "kill-once"
    marker.touch()
    metric = rf.Metric("killer", "custom", ("answer",), "Kills its worker once.", kernel=helpers.KillOnce(str(marker)))
    rf.register_metric(metric)
    try:
        frame = helpers.generated_log(200)
        got = collect(rf.distributed.score_dataset(dataset(frame, 4), ["killer", "faithfulness"], batch_size=50))
    finally:
        rf.unregister_metric("killer")
    assert not marker.exists()  # a worker did die
    want = rf.evaluate(frame, ["faithfulness"]).with_columns(killer=helpers.answer_words(frame))
    assert_same_scores(got, want.select(got.columns))


@pytest.mark.slow
def test_judge_metrics_rate_limited_across_workers_with_a_shared_cache(cluster, tmp_path, monkeypatch):
    from ragframe.distributed import scoring

    actors = []
    start_limiter = scoring.start_limiter
    monkeypatch.setattr(scoring, "start_limiter", lambda *args: actors.append(start_limiter(*args)) or actors[-1])
    frame = helpers.rag_log().head(24)
    metrics = ["judge_faithfulness", "judge_answer_relevance"]
    with FakeJudgeServer() as server:
        judge = {"model": "fake-model", "base_url": server.base_url, "requests_per_minute": 1200, "timeout": 5.0}
        unlimited = {k: v for k, v in judge.items() if k != "requests_per_minute"}  # the same replies, sooner
        want = rf.evaluate(frame, metrics, judge=unlimited, cache=False)
        local_calls = len(server.log)
        cache = str(tmp_path / "judge.sqlite3")
        started = time.monotonic()
        got = collect(rf.distributed.score_dataset(dataset(frame, 4), metrics, judge=judge, cache=cache, batch_size=6))
        calls = server.log[local_calls:]
        assert_same_scores(got, want)
        assert len(calls) == 48
        # 20 a second over the whole cluster, checked without a clock that a slow machine could beat: the one
        # limiter actor handed out a start for every request, each 1/20 s after the one before and none before
        # the run began, so its next free start is at least 48 / 20 s after the run began (the workers' own
        # limiters would leave it untouched) ...
        (actor,) = actors
        next_start = ray.get(actor.__ray_call__.remote(lambda self: self.limiter._next_request))
        assert next_start >= started + 48 * 60 / 1200 - 1e-6
        # ... and a request reaches the server after its start: the k-th no sooner than k / 20 s after the run began
        starts = sorted(r.start for r in calls)
        assert all(start >= started + k * 60 / 1200 - 1e-6 for k, start in enumerate(starts))
        again = collect(rf.distributed.score_dataset(dataset(frame, 2), metrics, judge=judge, cache=cache))
        assert len(server.log) == local_calls + 48  # every reply came from the shared cache
        assert_same_scores(again.drop(pl.selectors.ends_with("_source")), want.drop(pl.selectors.ends_with("_source")))


# ----------------------------------------------------------------------------- summaries


@pytest.mark.slow
def test_summarize_dataset_equals_summarize(cluster):
    frame = rf.evaluate(helpers.generated_log(900), ["heuristic", "retrieval"], k=[5])
    for by in (None, "split"):
        want = rf.summarize(frame, by=by)
        got = rf.distributed.summarize_dataset(dataset(frame, 7), by=by, batch_size=100)
        keys = ["split", "metric"] if by else ["metric"]
        assert got.select(keys).equals(want.select(keys)) and got.columns == want.columns
        for ours, theirs in zip(got.iter_rows(named=True), want.iter_rows(named=True)):
            for key in ("count", "null_count", "null_rate", "min", "max", "pass_rate"):
                assert ours[key] == theirs[key], key
            for key in ("mean", "std", "std_pop", "ci_low", "ci_high"):
                assert ours[key] == (None if theirs[key] is None else pytest.approx(theirs[key], rel=1e-12)), key
            for key in ("p50", "p90", "p95", "p99"):
                assert (ours[key] is None) == (theirs[key] is None)
                assert ours[key] is None or abs(ours[key] - theirs[key]) <= SKETCH_ERROR, key
    seed = rf.distributed.summarize_dataset(dataset(frame, 3), metrics=["faithfulness"], stats="seed")
    assert seed.columns == rf.summarize(frame, metrics=["faithfulness"], stats="seed").columns


# ----------------------------------------------------------------------------- comparisons


@pytest.fixture(scope="module")
def two_runs():
    log = helpers.generated_log(500)
    a = rf.evaluate(log, ["faithfulness", "answer_relevance", "mrr"])
    b = rf.evaluate(rf.datasets.wrong_contexts(log), ["faithfulness", "answer_relevance", "mrr"])
    b = b.with_columns(pl.col("mrr").shuffle(seed=3))  # something to detect in mrr too
    return a.sort("id"), b.sort("id")


@pytest.mark.slow
@pytest.mark.parametrize("by", [None, "split"])
def test_compare_datasets_t_from_moments(cluster, two_runs, by):
    a, b = two_runs
    want = rf.compare(a, b, on="id", by=by)
    got = rf.distributed.compare_datasets(
        dataset(a, 4), dataset(b.sample(fraction=1.0, shuffle=True, seed=1), 3), by=by
    )
    assert got.columns == want.columns and got.height == want.height
    for column in got.columns:
        if want.schema[column] == pl.Float64:
            assert (got[column] - want[column]).abs().max() <= 1e-12, column
        else:
            assert got[column].equals(want[column]), column


@pytest.mark.slow
@pytest.mark.parametrize("test", ["wilcoxon", "permutation", "bootstrap"])
def test_compare_datasets_collecting_tests_equal_compare(cluster, two_runs, test):
    a, b = two_runs
    want = rf.compare(a, b, on="id", test=test, by="split", n_resamples=999)
    got = rf.distributed.compare_datasets(dataset(a, 4), dataset(b, 2), test=test, by="split", n_resamples=999)
    assert got.equals(want)


@pytest.mark.slow
def test_compare_datasets_refuses_to_collect_beyond_the_limit(cluster, two_runs):
    a, b = two_runs
    with pytest.raises(rf.distributed.CollectLimitError, match=r"500 pairs, more than max_collected_pairs=499"):
        rf.distributed.compare_datasets(dataset(a, 2), dataset(b, 2), test="wilcoxon", max_collected_pairs=499)
    shared = b.filter(pl.col("id") >= 3)  # how="inner", and t collects nothing whatever the limit
    inner = rf.distributed.compare_datasets(dataset(a, 2), dataset(shared, 2), how="inner", max_collected_pairs=1)
    assert inner["n"].to_list() == rf.compare(a, shared, how="inner")["n"].to_list() == [497] * 4


@pytest.mark.slow
def test_compare_datasets_finds_missing_and_duplicate_ids(cluster, two_runs):
    a, b = two_runs
    with pytest.raises(SchemaError, match=r"3 id\(s\) of a are missing from b"):
        rf.distributed.compare_datasets(dataset(a, 2), dataset(b.filter(pl.col("id") >= 3), 2))
    with pytest.raises(SchemaError, match=r"3 id\(s\) of a are missing from b"):
        rf.distributed.compare_datasets(dataset(a, 2), dataset(b.filter(pl.col("id") >= 3), 2), test="wilcoxon")
    with pytest.raises(SchemaError, match="duplicate id in b"):
        rf.distributed.compare_datasets(dataset(a, 2), dataset(pl.concat([b, b.head(1)]), 2))


# ----------------------------------------------------------------------------- the command line


@pytest.mark.slow
def test_cli_engine_ray_writes_what_the_local_engine_writes(cluster, tmp_path, capsys):
    from ragframe.cli.main import main

    log = helpers.generated_log(300).with_columns(
        pl.when(pl.col("id") == 7).then(pl.lit(["x", None])).otherwise(pl.col("contexts")).alias("contexts")
    )
    log.head(150).write_parquet(tmp_path / "day1.parquet")
    log.tail(150).write_parquet(tmp_path / "day2.parquet")
    flags = ["--metrics", "faithfulness", "mrr", "--keep", "id", "split", "--no-progress"]
    assert (
        main(
            [
                "eval",
                str(tmp_path / "day1.parquet"),
                str(tmp_path / "day2.parquet"),
                "-o",
                str(tmp_path / "local"),
                "--batch-rows",
                "40",
                *flags,
            ]
        )
        == 0
    )
    sources = [str(tmp_path / "day1.parquet"), str(tmp_path / "day2.parquet")]
    assert main(["eval", *sources, "-o", str(tmp_path / "ray"), "--engine", "ray", "--batch-rows", "40", *flags]) == 0
    assert_same_scores(rf.read_scores(tmp_path / "ray"), rf.read_scores(tmp_path / "local"))  # row order may differ
    rejects = pl.read_parquet(tmp_path / "ray" / "rejects")  # the local layout: file, row in the file, reason
    assert rejects.equals(pl.read_parquet(tmp_path / "local" / "rejects"))
    assert rejects["source_row"].to_list() == [7] and "null inside the list" in rejects["reason"][0]
    for part in ("scores/part-00000.parquet", "scores/part-00007.parquet", "state/part-00003.parquet"):
        assert pl.read_parquet(tmp_path / "ray" / part).equals(pl.read_parquet(tmp_path / "local" / part))
    local_summary = pl.read_parquet(tmp_path / "local" / "summary.parquet")
    ray_summary = pl.read_parquet(tmp_path / "ray" / "summary.parquet")
    assert ray_summary.select("metric", "count", "min", "max", "pass_rate").equals(
        local_summary.select("metric", "count", "min", "max", "pass_rate")
    )
    manifest = (tmp_path / "ray" / "manifest.json").read_text()
    assert '"engine": "ray"' in manifest
    capsys.readouterr()
    assert main(["summary", str(tmp_path / "ray"), "--format", "csv"]) == 0
    assert "faithfulness" in capsys.readouterr().out
    assert main(["gate", str(tmp_path / "ray"), "--baseline", str(tmp_path / "local")]) == 0
    assert main(["eval", *sources, "-o", str(tmp_path / "ray"), "--engine", "ray", "--batch-rows", "40", *flags]) == 0
    assert json.loads((tmp_path / "ray" / "manifest.json").read_text())["finished"].keys() == {
        str(i) for i in range(8)
    }  # resumed: every part was finished, nothing scored again
    assert main(["eval", *sources, "-o", str(tmp_path / "ray"), "--engine", "ray", *flags]) == 0  # its own batches
    assert main(["eval", *sources, "-o", str(tmp_path / "ray"), "--engine", "ray", "--batch-rows", "50", *flags]) == 3
    assert main(["eval", *sources, "-o", str(tmp_path / "x"), "--address", "auto", *flags]) == 2


def test_batch_scorer_schema_for_spark(cluster):
    frame = helpers.generated_log(10)
    scorer = rf.distributed.BatchScorer(rf.Evaluator(["mrr", "faithfulness"]), keep=("id",))
    schema = scorer.output_schema(frame.to_arrow().schema)
    batches = list(scorer.map_batches(frame.to_arrow().to_batches(max_chunksize=3)))
    assert all(b.schema == schema for b in batches) and sum(b.num_rows for b in batches) == 10
    got = pl.from_arrow(pa.Table.from_batches(batches))
    assert_same_scores(got, rf.evaluate(frame, ["mrr", "faithfulness"]).select(got.columns))


# ----------------------------------------------------------------------------- the Ray runner of evaluate_parquet


@pytest.mark.slow
def test_the_ray_runner_writes_the_local_output_file_for_file(cluster, tmp_path):
    from ragframe.distributed import RayRunner

    helpers.generated_log(250).write_parquet(tmp_path / "log.parquet")
    ev = rf.Evaluator(["faithfulness", "context_relevance", "mrr"])
    local = rf.evaluate_parquet(tmp_path / "log.parquet", tmp_path / "local", ev, batch_rows=60, progress=False)
    ray_run = rf.evaluate_parquet(
        tmp_path / "log.parquet", tmp_path / "ray", ev, batch_rows=60, progress=False, runner=RayRunner(concurrency=2)
    )
    assert (ray_run.rows, ray_run.batches) == (local.rows, local.batches) == (250, 5)
    for folder in ("scores", "state"):
        names = sorted(p.name for p in (tmp_path / "local" / folder).iterdir())
        assert names == sorted(p.name for p in (tmp_path / "ray" / folder).iterdir()) and len(names) == 5
        for name in names:
            assert pl.read_parquet(tmp_path / "ray" / folder / name).equals(
                pl.read_parquet(tmp_path / "local" / folder / name)
            )
    assert ray_run.summary.equals(local.summary)  # states merged in batch order, whatever order tasks finished in
    stored = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    assert stored["engine"] == "ray" and stored["complete"] is True
    assert json.loads((tmp_path / "local" / "manifest.json").read_text())["engine"] == "local"


@pytest.mark.slow
def test_a_run_stopped_on_one_engine_resumes_on_the_other(cluster, tmp_path, monkeypatch):
    from ragframe.distributed import RayRunner
    from ragframe.io import streaming

    helpers.generated_log(200).write_parquet(tmp_path / "log.parquet")
    ev = rf.Evaluator(["faithfulness", "mrr"])
    real_run = streaming.BatchJob.run

    def stop_at_third(job, batch):
        if batch.index == 2:
            raise KeyboardInterrupt
        return real_run(job, batch)

    monkeypatch.setattr(streaming.BatchJob, "run", stop_at_third)
    with pytest.raises(KeyboardInterrupt):
        rf.evaluate_parquet(tmp_path / "log.parquet", tmp_path / "out", ev, batch_rows=50, progress=False)
    monkeypatch.setattr(streaming.BatchJob, "run", real_run)
    assert set(json.loads((tmp_path / "out" / "manifest.json").read_text())["finished"]) == {"0", "1"}
    result = rf.evaluate_parquet(
        tmp_path / "log.parquet", tmp_path / "out", ev, batch_rows=50, progress=False, runner=RayRunner()
    )
    assert (result.resumed, result.rows) == (2, 200)
    got = rf.read_scores(tmp_path / "out")
    assert_same_scores(got, ev(helpers.generated_log(200)).select(got.columns))


@pytest.mark.slow
def test_a_batch_that_fails_on_a_worker_raises_its_own_error_and_the_run_resumes(cluster, tmp_path):
    from ragframe.distributed import RayRunner

    log = helpers.generated_log(120)
    log.write_parquet(tmp_path / "log.parquet")
    refused, marker = log["answer"][100], tmp_path / "refuse"  # in the third batch of 50
    marker.touch()
    kernel = helpers.RefuseAnswer(refused, str(marker))
    rf.register_metric(rf.Metric("refuser", "custom", ("answer",), "Refuses.", kernel=kernel))
    try:
        ev = rf.Evaluator(["refuser", "faithfulness"])
        with pytest.raises(rf.exceptions.InvalidParameterError, match="refuse: a batch holds the answer"):
            rf.evaluate_parquet(
                tmp_path / "log.parquet",
                tmp_path / "o",
                ev,
                batch_rows=50,
                progress=False,
                runner=RayRunner(concurrency=1),
            )
        stored = json.loads((tmp_path / "o" / "manifest.json").read_text())
        assert set(stored["finished"]) == {"0", "1"} and stored["complete"] is False
        marker.unlink()  # the same run (same options) resumes and scores the third batch only
        result = rf.evaluate_parquet(
            tmp_path / "log.parquet", tmp_path / "o", ev, batch_rows=50, progress=False, runner=RayRunner()
        )
    finally:
        rf.unregister_metric("refuser")
    assert (result.resumed, result.rows) == (2, 120)


@pytest.mark.slow
def test_the_ray_runner_survives_a_killed_worker(cluster, tmp_path):
    from ragframe.distributed import RayRunner

    marker = tmp_path / "kill-once"
    marker.touch()
    rf.register_metric(rf.Metric("killer", "custom", ("answer",), "Kills once.", kernel=helpers.KillOnce(str(marker))))
    try:
        log = helpers.generated_log(120)
        log.write_parquet(tmp_path / "log.parquet")
        ev = rf.Evaluator(["killer", "faithfulness"])
        result = rf.evaluate_parquet(
            tmp_path / "log.parquet", tmp_path / "o", ev, batch_rows=40, progress=False, runner=RayRunner()
        )
    finally:
        rf.unregister_metric("killer")
    assert not marker.exists() and result.rows == 120  # a worker died; Ray ran its batch again
    want = rf.evaluate(log, ["faithfulness"]).with_columns(killer=helpers.answer_words(log))
    got = rf.read_scores(tmp_path / "o")
    assert_same_scores(got, want.select(got.columns))


@pytest.mark.slow
def test_ray_runner_options_are_checked():
    from ragframe.distributed import RayRunner

    with pytest.raises(rf.RagframeError, match="concurrency"):
        RayRunner(concurrency=0)
    with pytest.raises(rf.RagframeError, match="num_cpus"):
        RayRunner(num_cpus=-1)
    budgeted = rf.Evaluator(["judge_faithfulness"], judge=lambda p: "Score: 1", budget=5)
    with pytest.raises(rf.RagframeError, match=r"a judge budget .* needs the default runner"):
        rf.evaluate_parquet("none.parquet", "out", budgeted, runner=RayRunner())
