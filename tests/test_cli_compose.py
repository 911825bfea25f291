"""The commands compose: ``ragframe eval logs/ -o out/`` then ``summary out/``, ``compare out/ base/`` and
``gate out/ --baseline base/`` on the output folders as they are.

Each result is checked against the library called on the Parquet parts of ``OUT/scores/``
read directly with polars (not through the command's reader).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest
from test_streaming import make_log

import ragframe as rf
from ragframe.cli.main import main

UNSUPPORTED = "Bananas are purple and grow on the moon."


def run_cli(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Two ``ragframe eval`` outputs of the same 40 questions: base, and cur whose answers are off-context."""
    root = tmp_path_factory.mktemp("compose")
    logs = {"base": root / "logs" / "base", "cur": root / "logs" / "cur"}
    log = make_log(40, seed=11)
    # base: answers copied from their contexts (faithful); cur: three in four answers off-context
    copied = pl.when(pl.col("contexts").list.len() > 0).then(pl.col("contexts").list.join(" "))
    log = log.with_columns(copied.otherwise(pl.col("answer")).alias("answer"))
    off = pl.when(pl.int_range(pl.len()) % 4 != 0).then(pl.lit(UNSUPPORTED)).otherwise(pl.col("answer"))
    worse = log.with_columns(off.alias("answer"))
    for name, frame in (("base", log), ("cur", worse)):
        logs[name].mkdir(parents=True)
        frame.head(25).write_parquet(logs[name] / "day1.parquet")
        frame.slice(25).write_parquet(logs[name] / "day2.parquet")
    outs = {}
    for name, folder in logs.items():
        outs[name] = root / name
        flags = ["--batch-rows", "10", "--metrics", "faithfulness", "answer_relevance", "--no-progress"]
        assert main(["eval", str(folder), "-o", str(outs[name]), *flags]) == 0
    return outs


def scores(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "scores" / "*.parquet").sort("id")


def test_summary_of_an_eval_output_folder(capsys, runs):
    code, out, err = run_cli(capsys, "summary", runs["cur"], "--format", "csv")
    assert code == 0, err
    want = rf.summarize(scores(runs["cur"]))
    got = pl.read_csv(io.StringIO(out), schema=want.schema)
    assert got["metric"].to_list() == want["metric"].to_list()
    assert got["count"].to_list() == [40] * want.height
    for column in ("mean", "std", "p50", "ci_low", "ci_high"):
        assert got[column].to_list() == pytest.approx(want[column].to_list(), rel=1e-12, abs=1e-12), column


def test_compare_of_two_eval_output_folders(capsys, runs):
    code, out, err = run_cli(capsys, "compare", runs["base"], runs["cur"], "--format", "json")
    assert code == 0, err
    want = rf.compare(scores(runs["base"]), scores(runs["cur"]))
    got = json.loads(out)
    assert [r["metric"] for r in got] == want["metric"].to_list()
    assert [r["n"] for r in got] == want["n"].to_list() == [40] * want.height
    assert [r["delta"] for r in got] == pytest.approx(want["delta"].to_list(), rel=1e-12)
    assert [r["p_adjusted"] for r in got] == pytest.approx(want["p_adjusted"].to_list(), rel=1e-12)


def test_gate_of_two_eval_output_folders(capsys, runs):
    code, out, err = run_cli(capsys, "gate", runs["cur"], "--baseline", runs["base"])
    assert code == 1, err  # the off-context answers lose faithfulness
    faithfulness = next(line for line in out.splitlines() if "faithfulness" in line)
    assert faithfulness.startswith("FAIL")
    base, cur = scores(runs["base"])["faithfulness"].mean(), scores(runs["cur"])["faithfulness"].mean()
    assert base - cur > 0.05
    assert f"{base:.4f}" in faithfulness and f"{cur:.4f}" in faithfulness
    code, out, err = run_cli(capsys, "gate", runs["base"], "--baseline", runs["base"])
    assert code == 0, err + out


def test_gate_against_the_eval_summary(capsys, runs):
    # OUT/summary.parquet is a summary: the gate compares means (summary mode)
    code, out, err = run_cli(capsys, "gate", runs["cur"], "--baseline", runs["base"] / "summary.parquet")
    assert code == 1, err
    assert "summar" in out.splitlines()[0]


def test_an_unfinished_eval_output_is_an_input_error(capsys, runs, tmp_path):
    import shutil

    unfinished = tmp_path / "unfinished"
    shutil.copytree(runs["cur"], unfinished)
    manifest = json.loads((unfinished / "manifest.json").read_text())
    manifest["complete"] = False
    (unfinished / "manifest.json").write_text(json.dumps(manifest))
    code, out, err = run_cli(capsys, "summary", unfinished)
    assert (code, out) == (3, "")
    assert err.startswith("ragframe: error: ") and err.count("\n") == 1 and "not complete" in err
