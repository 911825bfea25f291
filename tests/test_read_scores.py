"""rf.read_scores: files, folders, globs, CSV/JSON and evaluate_parquet output; typed errors naming the path."""

from __future__ import annotations

import json

import polars as pl
import pytest

import ragframe as rf
from ragframe.cli.inputs import read_argument
from ragframe.reporting.inputs import load_source

SCORES = pl.DataFrame(
    {"id": [1, 2, 3], "mrr": [0.5, None, 1.0], "mrr_passed": [True, None, False]},
    schema={"id": pl.Int64, "mrr": pl.Float64, "mrr_passed": pl.Boolean},
)


def test_one_file_of_each_format(tmp_path):
    SCORES.write_parquet(tmp_path / "s.parquet")
    SCORES.write_parquet(tmp_path / "s.data")  # any other suffix is Parquet
    SCORES.write_csv(tmp_path / "s.csv")
    SCORES.write_json(tmp_path / "s.json")
    SCORES.write_ndjson(tmp_path / "s.ndjson")
    SCORES.write_ndjson(tmp_path / "s.jsonl")
    SCORES.write_ndjson(tmp_path / "lines.json")  # NDJSON under a .json name
    for name in ("s.parquet", "s.data", "s.csv", "s.json", "s.ndjson", "s.jsonl", "lines.json"):
        assert rf.read_scores(tmp_path / name).equals(SCORES), name
    assert rf.read_scores(str(tmp_path / "s.parquet")).equals(SCORES)


def test_folders_and_globs_read_every_part_in_order(tmp_path):
    (tmp_path / "a" / "z").mkdir(parents=True)  # read in path order: a/part-0, then a/z/part-1
    SCORES.head(1).write_parquet(tmp_path / "a" / "part-0.parquet")
    SCORES.slice(1).write_parquet(tmp_path / "a" / "z" / "part-1.parquet")
    SCORES.write_parquet(tmp_path / "a" / ".part-2.parquet")  # hidden: a temporary file
    (tmp_path / "a" / "_tmp").mkdir()
    SCORES.write_parquet(tmp_path / "a" / "_tmp" / "x.parquet")  # underscore folders are skipped
    assert rf.read_scores(tmp_path / "a").equals(SCORES)
    assert rf.read_scores(str(tmp_path / "a" / "**" / "part-*.parquet")).equals(SCORES)


def test_an_evaluate_parquet_output_reads_its_scores_only(tmp_path):
    log = pl.DataFrame(
        {"id": [1, 2, 3], "retrieved_ids": [["a", "b"], ["c"], ["d"]], "relevant_ids": [["b"], ["x"], None]}
    )
    log.write_parquet(tmp_path / "log.parquet")
    rf.evaluate_parquet(tmp_path / "log.parquet", tmp_path / "out", metrics="auto", k=[1], batch_rows=2, progress=False)
    out = tmp_path / "out"
    assert (out / "state").is_dir() and (out / "summary.parquet").is_file()
    with pytest.raises(pl.exceptions.PolarsError):  # the whole folder is not one table (state/ is not scores)
        pl.scan_parquet(str(out / "**" / "*.parquet")).collect()
    scores = rf.read_scores(out)
    assert scores.equals(pl.read_parquet(out / "scores"))
    assert scores["id"].to_list() == [1, 2, 3] and "mrr" in scores.columns
    assert rf.read_scores(out / "scores").equals(scores)
    # an unfinished run is refused, not read in part
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(manifest | {"complete": False}))
    with pytest.raises(rf.InputFileError, match=r"not complete \(2 part\(s\) finished\)"):
        rf.read_scores(out)


def test_files_that_disagree_on_a_dtype_are_named(tmp_path):
    SCORES.write_parquet(tmp_path / "part-0.parquet")
    SCORES.with_columns(pl.col("mrr_passed").cast(pl.Int64)).write_parquet(tmp_path / "part-1.parquet")
    with pytest.raises(rf.InputFileError) as info:
        rf.read_scores(tmp_path)
    message = str(info.value)
    assert "column 'mrr_passed' is Boolean in" in message and "but Int64 in" in message
    assert "part-0.parquet" in message and "part-1.parquet" in message
    other = tmp_path / "other"
    other.mkdir()
    SCORES.write_parquet(other / "part-0.parquet")
    SCORES.drop("mrr_passed").write_parquet(other / "part-1.parquet")
    with pytest.raises(rf.InputFileError, match="has the columns"):
        rf.read_scores(other)


def test_a_column_without_values_takes_the_other_files_dtype(tmp_path):
    SCORES.head(2).write_parquet(tmp_path / "part-0.parquet")
    no_values = pl.DataFrame({"id": [3], "mrr": [None], "mrr_passed": [None]}, schema_overrides={"id": pl.Int64})
    assert no_values.schema["mrr"] == pl.Null
    no_values.write_parquet(tmp_path / "part-1.parquet")
    out = rf.read_scores(tmp_path)
    assert out.schema == SCORES.schema
    assert out.rows() == [(1, 0.5, True), (2, None, None), (3, None, None)]


def test_unreadable_paths_are_typed_errors(tmp_path):
    with pytest.raises(rf.InputFileError, match="no such file or folder"):
        rf.read_scores(tmp_path / "missing.parquet")
    with pytest.raises(rf.InputFileError, match="no file matches the glob"):
        rf.read_scores(str(tmp_path / "*.parquet"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(rf.InputFileError, match="no Parquet file in the folder"):
        rf.read_scores(tmp_path / "empty")
    (tmp_path / "broken.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(rf.InputFileError, match=r"broken\.parquet"):
        rf.read_scores(tmp_path / "broken.parquet")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(rf.InputFileError, match=r"broken\.json"):
        rf.read_scores(tmp_path / "broken.json")
    with pytest.raises(rf.InvalidParameterError, match="read_scores: path must be"):
        rf.read_scores(3)


def test_scan_scores_is_read_scores_lazily(tmp_path):
    from ragframe.io.scores import scan_scores

    SCORES.write_parquet(tmp_path / "s.parquet")
    SCORES.write_csv(tmp_path / "s.csv")
    SCORES.write_json(tmp_path / "s.json")
    (tmp_path / "parts").mkdir()
    SCORES.head(2).write_parquet(tmp_path / "parts" / "part-0.parquet")
    no_values = pl.DataFrame({"id": [3], "mrr": [None], "mrr_passed": [None]}, schema_overrides={"id": pl.Int64})
    no_values.write_parquet(tmp_path / "parts" / "part-1.parquet")  # Null columns: cast to the others' dtypes
    for given in ("s.parquet", "s.csv", "s.json", "parts", "parts/*.parquet"):
        frame = scan_scores(str(tmp_path / given))
        assert isinstance(frame, pl.LazyFrame), given
        assert frame.collect().equals(rf.read_scores(str(tmp_path / given))), given
    for given in ("s.parquet", "parts", "parts/*.parquet"):  # Parquet is scanned: a selection reads its columns
        plan = scan_scores(str(tmp_path / given)).select("mrr").explain().upper()
        assert "PARQUET SCAN" in plan and "PROJECT 1/3" in plan, (given, plan)
    assert scan_scores(tmp_path / "parts").collect().rows()[2] == (3, None, None)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("missing.parquet", "no such file or folder"),
        ("*.nothing", "no file matches the glob"),
        ("broken.parquet", "cannot read"),
        ("mixed", "column 'mrr_passed' is Boolean in"),
    ],
    ids=["missing", "empty-glob", "damaged", "dtype-mismatch"],
)
def test_scan_and_read_errors_name_the_caller(tmp_path, path, message):
    from ragframe.io.scores import scan_scores

    (tmp_path / "broken.parquet").write_bytes(b"not parquet at all")
    (tmp_path / "mixed").mkdir()
    SCORES.write_parquet(tmp_path / "mixed" / "part-0.parquet")
    SCORES.with_columns(pl.col("mrr_passed").cast(pl.Int64)).write_parquet(tmp_path / "mixed" / "part-1.parquet")
    given = str(tmp_path / path)
    for call, prefix in (
        (lambda: scan_scores(given), ""),  # an inner function: the public one called names itself
        (lambda: rf.read_scores(given), "read_scores: "),
        (lambda: load_source(given, "scores"), "scores: "),
        (lambda: rf.report(given, given + ".html"), "report: scores: "),
        (lambda: read_argument(given, "baseline"), "baseline: "),  # the CLI's words: its argument
    ):
        with pytest.raises(rf.InputFileError) as info:
            call()
        assert str(info.value).startswith(prefix + message.split(" ")[0]) and message in str(info.value), info.value
