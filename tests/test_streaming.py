"""evaluate_parquet: same numbers as in memory, bounded batches, resume, rejects, damaged files."""

from __future__ import annotations

import json
import os
import pickle
import random
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe.io import batches, row_checks, streaming
from ragframe.stats.summary import SKETCH_ERROR

TEXTS = [
    "The Eiffel Tower is in Paris. It was finished in 1889.",
    "Paris is the capital of France. The tower is made of iron.",
    "Bananas are yellow. They grow in tropical places.",
    "",
]


def make_log(rows: int, seed: int = 0) -> pl.DataFrame:
    rng = random.Random(seed)
    return pl.DataFrame(
        {
            "id": [f"q{seed}-{i}" for i in range(rows)],
            "split": [rng.choice(["a", "b"]) for _ in range(rows)],
            "question": [rng.choice(["Where is the Eiffel Tower?", "What colour are bananas?"]) for _ in range(rows)],
            "answer": [rng.choice(TEXTS) for _ in range(rows)],
            "contexts": [rng.sample(TEXTS, rng.randint(0, 3)) for _ in range(rows)],
            "ground_truth": [rng.choice([*TEXTS[:3], None]) for _ in range(rows)],
            "retrieved_ids": [rng.sample(["d1", "d2", "d3", "d4", "d5"], 3) for _ in range(rows)],
            "relevant_ids": [rng.sample(["d1", "d2", "d3", "d4", "d5"], rng.randint(0, 2)) for _ in range(rows)],
        }
    )


@pytest.fixture
def log_folder(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    make_log(23, seed=1).write_parquet(folder / "day1.parquet")
    make_log(17, seed=2).write_parquet(folder / "day2.parquet")
    return folder


#: Both families: the logs hold the heuristic and the ranking inputs.
BOTH = ["heuristic", "retrieval"]


def in_memory(log: pl.DataFrame, k=(1, 5, 10)) -> pl.DataFrame:
    scored = rf.evaluate(log, BOTH, k=list(k))
    return scored.drop("question", "answer", "contexts", "ground_truth", "retrieved_ids", "relevant_ids")


@pytest.mark.slow
def test_scores_equal_in_memory_and_summary_merges(log_folder, tmp_path):
    result = rf.evaluate_parquet(log_folder, tmp_path / "out", batch_rows=5, progress=False, metrics=BOTH)
    assert (result.rows, result.scored, result.rejected, result.batches) == (40, 40, 0, 5 + 4)
    got = pl.read_parquet(tmp_path / "out" / "scores")
    log = pl.concat([pl.read_parquet(log_folder / "day1.parquet"), pl.read_parquet(log_folder / "day2.parquet")])
    expected = in_memory(log)
    assert got.equals(expected)
    whole = rf.summarize(expected)
    summary = pl.read_parquet(tmp_path / "out" / "summary.parquet")
    assert summary["metric"].to_list() == whole["metric"].to_list()
    for ours, theirs in zip(summary.iter_rows(named=True), whole.iter_rows(named=True)):
        for key in ("count", "mean", "std", "min", "max", "pass_rate"):
            assert ours[key] == (None if theirs[key] is None else pytest.approx(theirs[key], rel=1e-9)), key
        assert ours["p50"] is None or abs(ours["p50"] - theirs["p50"]) <= SKETCH_ERROR


@pytest.mark.slow
def test_batch_size_does_not_change_results(log_folder, tmp_path):
    rf.evaluate_parquet(log_folder, tmp_path / "small", batch_rows=3, progress=False, metrics=BOTH)
    rf.evaluate_parquet(log_folder, tmp_path / "large", batch_rows=1000, progress=False, metrics=BOTH)
    assert pl.read_parquet(tmp_path / "small" / "scores").equals(pl.read_parquet(tmp_path / "large" / "scores"))


def test_sources_keep_and_metrics(log_folder, tmp_path):
    one = rf.evaluate_parquet(
        log_folder / "day1.parquet", tmp_path / "o1", metrics=["faithfulness"], keep=["id"], progress=False
    )
    columns = pl.read_parquet_schema(next((tmp_path / "o1" / "scores").iterdir())).names()
    assert columns == ["id", "faithfulness", "faithfulness_passed", "composite_score", "passed"]
    assert one.rows == 23
    globbed = rf.evaluate_parquet(str(log_folder / "day*.parquet"), tmp_path / "o2", progress=False, metrics=BOTH)
    assert globbed.rows == 40
    renamed = tmp_path / "renamed.parquet"
    make_log(4).rename({"answer": "response"}).write_parquet(renamed)
    mapped = rf.evaluate_parquet(renamed, tmp_path / "o3", answer="response", progress=False, metrics=BOTH)
    assert "faithfulness" in pl.read_parquet(tmp_path / "o3" / "scores").columns and mapped.rejected == 0
    with pytest.raises(rf.SchemaError, match="missing column to keep"):
        rf.evaluate_parquet(log_folder, tmp_path / "o4", keep=["nope"], progress=False, metrics=BOTH)
    with pytest.raises(rf.InvalidParameterError, match="unknown metric"):
        rf.evaluate_parquet(log_folder, tmp_path / "o5", metrics=["fluency"], progress=False)
    with pytest.raises(rf.InvalidParameterError, match="batch_rows"):
        rf.evaluate_parquet(log_folder, tmp_path / "o6", batch_rows=0, progress=False, metrics=BOTH)


def _snapshot(out) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_resume_after_a_kill_gives_identical_files(log_folder, tmp_path, monkeypatch, seed):
    reference = tmp_path / "reference"
    rf.evaluate_parquet(log_folder, reference, batch_rows=4, progress=False, metrics=BOTH)
    killed_at = random.Random(seed).randrange(1, 10)
    original = batches.write_atomic
    calls = {"parts": 0}

    def dying_write(frame, path):
        if path.parent.name == "scores":
            calls["parts"] += 1
            if calls["parts"] == killed_at:
                raise KeyboardInterrupt  # killed in the middle of the run
        original(frame, path)

    out = tmp_path / "resumed"
    monkeypatch.setattr(batches, "write_atomic", dying_write)
    with pytest.raises(KeyboardInterrupt):  # in this process, where the patch applies
        rf.evaluate_parquet(log_folder, out, batch_rows=4, progress=False, metrics=BOTH, batches_per_process=None)
    monkeypatch.setattr(batches, "write_atomic", original)
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["finished"]) == killed_at - 1 and not manifest["complete"]
    result = rf.evaluate_parquet(log_folder, out, batch_rows=4, progress=False, metrics=BOTH)
    assert result.resumed == killed_at - 1
    assert _snapshot(out) == _snapshot(reference)


@pytest.mark.slow
def test_child_processes_write_the_same_files(log_folder, tmp_path):
    rf.evaluate_parquet(
        log_folder, tmp_path / "here", batch_rows=4, progress=False, metrics=BOTH, batches_per_process=None
    )
    result = rf.evaluate_parquet(
        log_folder, tmp_path / "children", batch_rows=4, progress=False, metrics=BOTH, batches_per_process=3
    )
    assert (result.batches, result.rows, result.resumed) == (11, 40, 0)  # 11 batches in 4 child processes
    assert _snapshot(tmp_path / "children") == _snapshot(tmp_path / "here")


@pytest.mark.slow
def test_an_error_in_a_child_process_is_raised_with_its_type(log_folder, tmp_path):
    make_log(300, seed=3).write_parquet(log_folder / "day3.parquet", row_group_size=100)
    damaged = bytearray((log_folder / "day3.parquet").read_bytes())
    middle = len(damaged) // 2
    damaged[middle : middle + 200] = bytes(b ^ 0xFF for b in damaged[middle : middle + 200])  # a page, not the footer
    (log_folder / "day3.parquet").write_bytes(damaged)
    out = tmp_path / "out"
    with pytest.raises(rf.InputFileError, match=r"cannot read rows 200\.\. of .*day3\.parquet"):
        rf.evaluate_parquet(log_folder, out, batch_rows=100, progress=False, metrics=BOTH, batches_per_process=1)
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["finished"]) == ["0", "1", "2", "3"] and not manifest["complete"]  # good parts kept


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the child process through /proc")
def test_a_child_process_killed_mid_run_is_a_clear_error(log_folder, tmp_path):
    def kill_first_child() -> None:  # SIGKILL the first batch worker this process starts
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    fields = stat.read_text().rsplit(")", 1)[1].split()
                    command = (stat.parent / "cmdline").read_bytes()
                except OSError:
                    continue
                if int(fields[1]) == os.getpid() and b"batch_worker" in command:
                    os.kill(int(stat.parent.name), signal.SIGKILL)
                    return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_first_child)
    killer.start()
    with pytest.raises(rf.RagframeError, match=r"child process scoring rows 0\.\. of .*day1\.parquet.*status -9"):
        rf.evaluate_parquet(
            log_folder, tmp_path / "out", batch_rows=4, progress=False, metrics=BOTH, batches_per_process=1
        )
    killer.join()
    result = rf.evaluate_parquet(
        log_folder, tmp_path / "out", batch_rows=4, progress=False, metrics=BOTH, batches_per_process=None
    )
    assert result.rows == 40 and result.resumed == 0  # nothing was finished; the rerun completes


def test_batches_per_process_must_be_positive(log_folder, tmp_path):
    for bad in (0, -1, 2.5, True):
        with pytest.raises(rf.InvalidParameterError, match="batches_per_process"):
            rf.evaluate_parquet(log_folder, tmp_path / "out", progress=False, metrics=BOTH, batches_per_process=bad)


def test_schema_errors_survive_pickling():
    error = rf.SchemaError("null id", function="f", column="doc_id", row=3, expected="an id", found="null")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is rf.SchemaError and str(copy) == str(error) and (copy.column, copy.row) == ("doc_id", 3)


@pytest.mark.slow
def test_changed_options_or_source_need_overwrite(log_folder, tmp_path):
    out = tmp_path / "out"
    rf.evaluate_parquet(log_folder, out, batch_rows=4, progress=False, metrics=BOTH)
    with pytest.raises(rf.ResumeError, match="different options"):
        rf.evaluate_parquet(log_folder, out, batch_rows=5, progress=False, metrics=BOTH)
    with pytest.raises(rf.ResumeError, match="already holds a run"):
        rf.evaluate_parquet(log_folder, out, batch_rows=4, resume=False, progress=False, metrics=BOTH)
    assert (
        rf.evaluate_parquet(log_folder, out, batch_rows=4, progress=False, metrics=BOTH).resumed == 11
    )  # all done already (23 + 17 rows in 6 + 5 parts)
    make_log(3, seed=9).write_parquet(log_folder / "day3.parquet")
    with pytest.raises(rf.ResumeError, match="different source"):
        rf.evaluate_parquet(log_folder, out, batch_rows=4, progress=False, metrics=BOTH)
    result = rf.evaluate_parquet(log_folder, out, batch_rows=5, overwrite=True, progress=False, metrics=BOTH)
    assert result.rows == 43 and result.resumed == 0
    assert len(list((out / "scores").iterdir())) == result.batches


def test_bad_rows_go_to_rejects(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    log = make_log(10)
    log.with_columns(
        contexts=pl.when(pl.int_range(pl.len()) == 3).then(pl.lit(["ok", None])).otherwise(pl.col("contexts"))
    ).write_parquet(folder / "a.parquet")
    make_log(4, seed=5).with_columns(answer=pl.lit(7)).write_parquet(folder / "b.parquet")  # wrong type
    result = rf.evaluate_parquet(folder, tmp_path / "out", batch_rows=6, progress=False, metrics=BOTH)
    assert (result.rows, result.scored, result.rejected) == (14, 9, 5)
    rejects = pl.read_parquet(tmp_path / "out" / "rejects").sort("source_file", "source_row")
    assert rejects["source_row"].to_list() == [3, 0, 1, 2, 3]
    assert rejects["reason"].to_list() == [
        "null inside the list [column 'contexts', row 3]; expected no null elements, found ['ok', null]",
        *(f"wrong dtype [column 'answer', row {row}]; expected str, found Int32" for row in range(4)),
    ]
    assert rejects["source_file"][0].endswith("a.parquet")
    scored = pl.read_parquet(tmp_path / "out" / "scores")
    assert scored.height == 9 and "q0-3" not in scored["id"].to_list()
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["complete"]


@pytest.mark.slow
def test_damaged_and_empty_files(log_folder, tmp_path):
    out = tmp_path / "out"
    rf.evaluate_parquet(log_folder, out, progress=False, metrics=BOTH)
    before = _snapshot(out)
    (log_folder / "day0.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(rf.InputFileError, match=r"day0\.parquet"):
        rf.evaluate_parquet(log_folder, out, progress=False, metrics=BOTH)
    assert _snapshot(out) == before  # nothing already written is lost
    (log_folder / "day0.parquet").unlink()
    make_log(0).write_parquet(log_folder / "empty.parquet")
    result = rf.evaluate_parquet(log_folder, tmp_path / "with_empty", progress=False, metrics=BOTH)
    assert result.rows == 40
    with pytest.raises(rf.InputFileError, match="no Parquet file matches"):
        rf.evaluate_parquet(tmp_path / "nothing-here", tmp_path / "x", progress=False, metrics=BOTH)


@pytest.mark.slow
def test_a_glob_into_an_output_folder_says_so_and_names_the_log(log_folder, tmp_path):
    # outputs written into the log's own folder: that folder now holds a manifest, and a glob over it names the
    # files the user can read instead of "no Parquet file matches"
    rf.evaluate_parquet(log_folder, log_folder, progress=False, metrics=BOTH)
    with pytest.raises(rf.InputFileError) as raised:
        rf.evaluate_parquet(str(log_folder / "*.parquet"), tmp_path / "x", progress=False, metrics=BOTH)
    message = str(raised.value)
    assert "matches only files inside the ragframe output folder" in message and "manifest.json" in message
    assert repr(str(log_folder / "day1.parquet")) in message and "summary.parquet" not in message
    named = sorted(str(p) for p in log_folder.glob("day*.parquet"))
    assert rf.evaluate_parquet(named, tmp_path / "y", progress=False, metrics=BOTH).rows == 40  # as the error says


@pytest.mark.slow
def test_one_output_schema_across_files(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    first = make_log(6, seed=1).with_columns(id=pl.int_range(6, dtype=pl.Int64), note=pl.lit(None, pl.Null))
    first.write_parquet(folder / "a.parquet")
    second = make_log(5, seed=2).with_columns(id=pl.int_range(6, 11, dtype=pl.Int32), note=pl.lit("x"))
    second.write_parquet(folder / "b.parquet")
    result = rf.evaluate_parquet(folder, tmp_path / "out", batch_rows=4, progress=False, metrics=BOTH)
    scores = pl.read_parquet(tmp_path / "out" / "scores")  # the parts combine
    assert result.rows == 11 and scores["id"].to_list() == list(range(11))
    # Int32 -> Int64 (the first file's); the first file's null-typed column takes the later String
    assert scores.schema["id"] == pl.Int64 and scores.schema["note"] == pl.String
    assert scores["note"].to_list() == [None] * 6 + ["x"] * 5
    for part in (tmp_path / "out" / "scores").iterdir():
        assert pl.read_parquet_schema(part) == scores.schema


def test_files_that_disagree_on_a_dtype_are_refused_before_anything_is_written(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    make_log(5, seed=1).with_columns(id=pl.int_range(5)).write_parquet(folder / "a.parquet")
    make_log(5, seed=2).write_parquet(folder / "b.parquet")  # id: String
    out = tmp_path / "out"
    with pytest.raises(rf.InputFileError) as error:
        rf.evaluate_parquet(folder, out, progress=False, metrics=BOTH)
    message = str(error.value)
    assert "'id'" in message and "String" in message and "Int64" in message
    assert "a.parquet" in message and "b.parquet" in message
    assert not out.exists()
    # leaving the column out is the way round it
    assert rf.evaluate_parquet(folder, out, keep=["split"], progress=False, metrics=BOTH).rows == 10
    make_log(5, seed=2).with_columns(id=pl.int_range(5).cast(pl.Float64)).write_parquet(folder / "b.parquet")
    with pytest.raises(rf.InputFileError, match=r"Float64 in .*b\.parquet.* but Int64 in .*a\.parquet"):
        rf.evaluate_parquet(
            folder, tmp_path / "out2", progress=False, metrics=BOTH
        )  # Float64 -> Int64 would lose fractions
    make_log(5, seed=2).drop("split").write_parquet(folder / "b.parquet")
    with pytest.raises(rf.InputFileError, match=r"column 'split' of .*a\.parquet' is missing from .*b\.parquet"):
        rf.evaluate_parquet(folder, tmp_path / "out3", progress=False, metrics=BOTH)
    make_log(5, seed=2).with_columns(id=pl.int_range(5), extra=pl.lit(1)).write_parquet(folder / "b.parquet")
    with pytest.raises(rf.InputFileError, match=r"column 'extra' of .*b\.parquet' is not in the first file"):
        rf.evaluate_parquet(folder, tmp_path / "out4", progress=False, metrics=BOTH)
    assert not any((tmp_path / name).exists() for name in ("out2", "out3", "out4"))


@pytest.mark.parametrize(
    ("source", "target", "lossless"),
    [
        (pl.Int32, pl.Int64, True),
        (pl.Int64, pl.Int32, False),
        (pl.UInt32, pl.Int64, True),
        (pl.UInt64, pl.Int64, False),
        (pl.Int8, pl.UInt8, False),
        (pl.Int32, pl.Float64, True),
        (pl.Int64, pl.Float64, False),  # 2**53 + 1 has no Float64
        (pl.Int16, pl.Float32, True),
        (pl.Int32, pl.Float32, False),
        (pl.Float32, pl.Float64, True),
        (pl.Float64, pl.Float32, False),
        (pl.Null, pl.List(pl.String), True),
        (pl.String, pl.Int64, False),
        (pl.Int64, pl.String, False),
        (pl.List(pl.Int32), pl.List(pl.Int64), True),
        (pl.List(pl.Int64), pl.List(pl.Int32), False),
        (pl.Struct({"a": pl.Int8}), pl.Struct({"a": pl.Int16}), True),
        (pl.Struct({"a": pl.Int8}), pl.Struct({"b": pl.Int16}), False),
        (pl.Boolean, pl.Int8, False),
    ],
)
def test_lossless_casts(source, target, lossless):
    assert row_checks.lossless_cast(source, target) is lossless
    if lossless and source != pl.Null:  # the values that could be lost: the extremes survive the round trip
        if source.is_integer():
            info = np.iinfo(str(source).lower())
            values = pl.Series([int(info.min), int(info.max)], dtype=source)
            assert values.cast(target).cast(source).equals(values)


def ranking_log(rows: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": list(range(rows)),
            "retrieved_ids": [[f"d{i % 7}", f"d{i % 5 + 7}", "d20"] for i in range(rows)],
            "retrieved_scores": [[3.0, 2.0, float(i % 3)] for i in range(rows)],
            "relevance": [[{"id": f"d{i % 7}", "grade": i % 3}, {"id": "d20", "grade": 1}] for i in range(rows)],
        }
    )


def _set(log: pl.DataFrame, row: int, column: str, value) -> pl.DataFrame:
    return log.with_columns(
        pl.when(pl.col("id") == row).then(pl.lit(value, log.schema[column])).otherwise(pl.col(column)).alias(column)
    )


def test_rows_a_kernel_refuses_are_rejected_in_one_pass(tmp_path, monkeypatch):
    log = ranking_log(30)
    log = _set(log, 7, "retrieved_scores", [3.0, 2.0])  # one score too few
    log = _set(log, 20, "retrieved_scores", [3.0, float("nan"), 1.0])
    log = _set(log, 21, "retrieved_scores", [1.0] * 2 + [None] + [0.123456789] * 20)  # long: cut to 80 characters
    log = _set(log, 21, "retrieved_ids", [f"d{i}" for i in range(23)])
    log = _set(log, 13, "relevance", [{"id": "d6", "grade": 2}, {"id": "d6", "grade": 0}])  # conflicting grades
    log = _set(log, 14, "relevance", [{"id": "d6", "grade": 1}, {"id": "d6", "grade": 1}])  # repeated, agreeing: fine
    log = _set(log, 25, "relevance", [{"id": "d1", "grade": None}])
    log = _set(log, 26, "retrieved_ids", ["d1", None, "d2"])
    log.write_parquet(tmp_path / "log.parquet")
    calls = []
    score = streaming.BatchJob.score
    monkeypatch.setattr(streaming.BatchJob, "score", lambda job, df: calls.append(df.height) or score(job, df))
    result = rf.evaluate_parquet(
        tmp_path / "log.parquet",
        tmp_path / "out",
        metrics="retrieval",
        batch_rows=12,
        k=[1, 3],
        progress=False,
        batches_per_process=None,
    )
    assert calls == [11, 9, 4]  # each batch scored once, without its bad rows
    rejects = pl.read_parquet(tmp_path / "out" / "rejects")
    assert rejects["source_row"].to_list() == [7, 13, 20, 21, 25, 26] and result.rejected == 6
    reasons = rejects["reason"].to_list()
    assert reasons[0] == (
        "scores list and ids list differ in length [column 'retrieved_scores', row 7]; "
        "expected one score per id of 'retrieved_ids', found 2 scores: [3.0, 2.0]"
    )
    assert reasons[1] == (
        "a document judged twice with different grades [column 'relevance', row 13]; expected one grade per "
        "document, found [{id: d6, grade: 2}, {id: d6, grade: 0}]"
    )
    assert reasons[2] == (
        "null or NaN score [column 'retrieved_scores', row 20]; expected numbers, found [3.0, NaN, 1.0]"
    )
    found = reasons[3].split(", found ", 1)[1]
    assert found.startswith("[1.0, 1.0, null, 0.123456789") and found.endswith("...") and len(found) == 80
    assert reasons[4] == (
        "null judgment, id or grade [column 'relevance', row 25]; expected non-null id and grade, "
        "found [{id: d1, grade: null}]"
    )
    assert reasons[5] == (
        "null inside the list [column 'retrieved_ids', row 26]; expected no null elements, found ['d1', null, 'd2']"
    )
    good = log.filter(~pl.col("id").is_in(rejects["source_row"].implode()))
    expected = rf.score_retrieval(good, k=[1, 3]).drop("retrieved_ids", "retrieved_scores", "relevance")
    assert pl.read_parquet(tmp_path / "out" / "scores").equals(expected)


def test_a_row_the_checks_miss_is_still_rejected_with_its_source_row(tmp_path, monkeypatch):
    log = _set(ranking_log(30), 20, "retrieved_scores", [3.0, float("nan"), 1.0])
    log = _set(log, 17, "retrieved_scores", [float("nan"), 1.0, 1.0])
    log.write_parquet(tmp_path / "log.parquet")
    empty = pl.DataFrame(schema={"row": pl.Int64, "reason": pl.String})
    monkeypatch.setattr(batches, "row_problems", lambda df, roles, offset: empty)  # as if a check were missing
    result = rf.evaluate_parquet(
        tmp_path / "log.parquet",
        tmp_path / "out",
        metrics="retrieval",
        batch_rows=12,
        progress=False,
        batches_per_process=None,
    )
    rejects = pl.read_parquet(tmp_path / "out" / "rejects")
    assert rejects["source_row"].to_list() == [17, 20] and result.scored == 28
    assert rejects["reason"][1] == (
        "null or NaN inside a scores list [column 'retrieved_scores', row 20]; "
        "expected numbers, found [3.0, NaN, 1.0]"
    )


def test_a_column_of_the_wrong_dtype_rejects_its_rows_and_null_typed_columns_are_cast(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    ranking_log(4).write_parquet(folder / "a.parquet")
    wrong = ranking_log(3).with_columns(retrieved_ids=pl.lit([1.5, 2.5, 3.5]))  # list[f64] ids
    wrong.write_parquet(folder / "b.parquet")
    empty = ranking_log(2).with_columns(retrieved_scores=pl.lit(None), relevance=pl.lit([], pl.List(pl.Null)))
    empty.write_parquet(folder / "c.parquet")  # null-typed: no scores, judged with nothing relevant
    result = rf.evaluate_parquet(folder, tmp_path / "out", k=[1], progress=False, metrics="retrieval")
    assert (result.rows, result.scored, result.rejected) == (9, 6, 3)
    rejects = pl.read_parquet(tmp_path / "out" / "rejects")
    assert rejects["reason"].to_list() == [
        f"wrong dtype [column 'retrieved_ids', row {row}]; expected list[str] (or list[int]), found List(Float64)"
        for row in range(3)
    ]
    scores = pl.read_parquet(tmp_path / "out" / "scores")
    assert scores["ndcg_at_1"].to_list()[-2:] == [0.0, 0.0]


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("batch_rows", 0),
        ("batch_rows", "100"),
        ("batch_rows", True),
        ("batches_per_process", 0),
        ("resume", "yes"),
        ("overwrite", 1),
        ("progress", None),
        ("keep", [""]),
        ("keep", ["id", "id"]),
        ("keep", 5),
        ("answer", 3),
        ("columns", {"answer": "response"}),
        ("k", 0),
        ("k", "5"),
        ("k", [1, 2.5]),
    ],
)
def test_bad_parameters_are_refused_before_anything_is_written(log_folder, tmp_path, parameter, value):
    pattern = rf"evaluate_parquet: ({parameter}|unknown option)"
    with pytest.raises(rf.InvalidParameterError, match=pattern):
        rf.evaluate_parquet(log_folder, tmp_path / "out", **{"progress": False, parameter: value})
    assert not (tmp_path / "out").exists()


def test_the_output_must_be_a_folder(log_folder, tmp_path):
    with pytest.raises(rf.InvalidParameterError, match="evaluate_parquet: out must be a folder path"):
        rf.evaluate_parquet(log_folder, 5, progress=False, metrics=BOTH)
    (tmp_path / "taken").write_text("x")
    with pytest.raises(rf.InputFileError, match=r"output folder .*taken' is a file"):
        rf.evaluate_parquet(log_folder, tmp_path / "taken", progress=False, metrics=BOTH)
    assert (
        rf.evaluate_parquet(log_folder, tmp_path / "out", keep="id", progress=False, metrics=BOTH).rows == 40
    )  # one name
    assert pl.read_parquet(tmp_path / "out" / "scores").columns[0] == "id"


@pytest.mark.slow
def test_the_heap_is_trimmed_after_every_batch(log_folder, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(batches, "trim_heap", lambda: calls.append(1) or True)
    result = rf.evaluate_parquet(
        log_folder, tmp_path / "out", batch_rows=10, progress=False, metrics=BOTH, batches_per_process=None
    )
    assert result.batches == 5 and len(calls) == 5  # 23 + 17 rows in batches of 10: 3 + 2


def test_float_grades_and_id_kinds_follow_the_kernels(tmp_path, monkeypatch):
    log = ranking_log(6).with_columns(
        relevance=pl.col("relevance").cast(pl.List(pl.Struct({"id": pl.String, "grade": pl.Float64})))
    )
    log = _set(log, 4, "relevance", [{"id": "d4", "grade": 1.5}])
    log.write_parquet(tmp_path / "grades.parquet")
    calls = []
    score = streaming.BatchJob.score
    monkeypatch.setattr(streaming.BatchJob, "score", lambda job, df: calls.append(df.height) or score(job, df))
    result = rf.evaluate_parquet(
        tmp_path / "grades.parquet", tmp_path / "g", k=[1], progress=False, metrics="retrieval"
    )
    assert calls == [5] and result.rejected == 1
    assert pl.read_parquet(tmp_path / "g" / "rejects")["reason"].to_list() == [
        "grade is not a whole number [column 'relevance', row 4]; expected integer grades, found [{id: d4, grade: 1.5}]"
    ]
    whole = ranking_log(6).filter(pl.col("id") != 4)  # 2.0 is grade 2: the same scores as integer grades
    expected = rf.score_retrieval(whole, k=[1]).drop("retrieved_ids", "retrieved_scores", "relevance")
    assert pl.read_parquet(tmp_path / "g" / "scores").equals(expected)

    ints = pl.DataFrame({"id": [0, 1], "retrieved_ids": [[1, 2], [3]], "relevant_ids": [["1"], ["3"]]})
    ints.write_parquet(tmp_path / "kinds.parquet")  # 1 is not "1"
    with pytest.raises(rf.RunFailedError, match="every row of the log was rejected"):  # nothing scored: no success
        rf.evaluate_parquet(tmp_path / "kinds.parquet", tmp_path / "k", progress=False, metrics="retrieval")
    assert json.loads((tmp_path / "k" / "manifest.json").read_text())["rejected"] == 2
    assert pl.read_parquet(tmp_path / "k" / "rejects")["reason"][1] == (
        "ids of different types [column 'relevant_ids', row 1]; expected int ids as in 'retrieved_ids' (Int64), "
        "found String ids"
    )
