"""`ragframe eval` end to end: flags, TOML config, exit codes, and a real kill + resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import polars as pl
import pytest
from test_streaming import make_log

import ragframe as rf
from ragframe.cli.main import main


@pytest.fixture
def log_file(tmp_path):
    path = tmp_path / "log.parquet"
    make_log(30, seed=3).write_parquet(path)
    return path


@pytest.mark.slow
def test_eval_prints_summary_and_writes_dataset(log_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["eval", str(log_file), "-o", str(out), "--batch-rows", "7", "--k", "1", "3", "--metrics", "auto"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("scoring faithfulness, answer_relevance, ")  # the plan first
    assert "faithfulness" in printed and "ndcg_at_3" in printed and "scored 30 of 30 rows (0 rejected)" in printed
    scores = pl.read_parquet(out / "scores")
    assert scores.height == 30 and "precision_at_1" in scores.columns and "answer" not in scores.columns
    assert main(["eval", str(log_file), "-o", str(out), "--batch-rows", "7", "--k", "1", "3", "--metrics", "auto"]) == 0
    assert "5 of 5 batches done by an earlier run" in capsys.readouterr().out


def test_eval_config_and_column_mapping(tmp_path, capsys):
    log = tmp_path / "renamed.parquet"
    make_log(12).rename({"answer": "response", "contexts": "chunks"}).write_parquet(log)
    config = tmp_path / "ragframe.toml"
    config.write_text(
        'metrics = ["faithfulness", "hallucination_rate"]\n'
        "batch_rows = 5\n"
        'keep = ["id"]\n'
        '[columns]\nanswer = "response"\n'
        "[thresholds]\nfaithfulness = 0.0\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code = main(["eval", str(log), "-o", str(out), "--config", str(config), "--column", "contexts=chunks"])
    assert code == 0, capsys.readouterr().err
    scores = pl.read_parquet(out / "scores")
    assert scores.columns[:3] == ["id", "faithfulness", "faithfulness_passed"]
    assert scores["faithfulness_passed"].all()  # threshold 0 from the config
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["batch_rows"] == 5 and len(manifest["finished"]) == 3


@pytest.mark.slow
def test_eval_exit_codes(log_file, tmp_path, capsys):
    out = str(tmp_path / "out")
    assert main(["eval", str(log_file), "-o", out, "--metrics", "fluency"]) == 2
    assert "unknown metric 'fluency'" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("colour = 3\n", encoding="utf-8")
    assert main(["eval", str(log_file), "-o", out, "--config", str(bad)]) == 2
    assert "unknown key 'colour'" in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "missing.parquet"), "-o", out]) == 3
    assert "missing.parquet" in capsys.readouterr().err
    assert main(["eval", str(log_file)]) == 2  # -o is required
    assert main(["eval", str(log_file), "-o", out, "--batches-per-process", "0"]) == 2
    assert main(["eval", str(log_file), "-o", out, "--batch-rows", "5"]) == 0
    assert main(["eval", str(log_file), "-o", out, "--batch-rows", "6"]) == 3
    assert "different options" in capsys.readouterr().err
    assert main(["eval", str(log_file), "-o", out, "--batch-rows", "6", "--overwrite"]) == 0


def _snapshot(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_sigkill_then_resume_gives_byte_identical_output(tmp_path):
    log = tmp_path / "log.parquet"
    pl.concat([make_log(500, seed=s) for s in range(6)]).write_parquet(log)
    command = [sys.executable, "-m", "ragframe.cli", "eval", str(log), "--batch-rows", "40", "--no-progress"]
    command += ["--batches-per-process", "25", "-o"]  # 75 batches: three child processes
    reference = tmp_path / "reference"
    subprocess.run([*command, str(reference)], check=True, capture_output=True)

    out = tmp_path / "killed"
    process = subprocess.Popen([*command, str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    manifest = out / "manifest.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if len(json.loads(manifest.read_text())["finished"]) >= 20:
                os.kill(process.pid, signal.SIGKILL)
                break
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            pass
        time.sleep(0.005)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not json.loads(manifest.read_text())["complete"]
    # the child that was scoring dies with its parent
    written = sorted(p.name for p in (out / "scores").iterdir())
    time.sleep(1.0)
    assert sorted(p.name for p in (out / "scores").iterdir()) == written, "an orphaned child kept writing"
    subprocess.run([*command, str(out)], check=True, capture_output=True)
    assert _snapshot(out) == _snapshot(reference)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["eval", "summary", "compare", "gate", "trec", "demo"])
def test_every_command_has_help_in_a_real_process(command):
    done = subprocess.run([sys.executable, "-m", "ragframe.cli", command, "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and f"usage: ragframe {command}" in done.stdout
    assert "exit codes" in done.stdout.lower() or command == "demo"


@pytest.mark.slow
def test_demo_and_usage_errors_in_a_real_process(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "ragframe.cli", "demo", "--out", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "ndcg_at_10" in done.stdout and "faithfulness" in done.stdout and "roc_auc" in done.stdout
    assert (tmp_path / "per_query.parquet").exists() and (tmp_path / "rag_scores.parquet").exists()
    bad = subprocess.run([sys.executable, "-m", "ragframe.cli", "nonsense"], capture_output=True, text=True)
    assert bad.returncode == 2


def test_a_missing_input_is_an_error_naming_the_metric_not_a_silent_drop(tmp_path, capsys):
    """Metrics named explicitly need their columns; the default scores what the columns allow, saying what it skips."""
    log = tmp_path / "no_contexts.parquet"
    make_log(6).drop("contexts").write_parquet(log)
    assert main(["eval", str(log), "-o", str(tmp_path / "a"), "--no-progress", "--metrics", "heuristic"]) == 3
    err = capsys.readouterr().err
    assert "metric 'faithfulness' needs the contexts column" in err and err.count("\n") == 1
    assert not (tmp_path / "a").exists()  # nothing written
    assert main(["eval", str(log), "-o", str(tmp_path / "b"), "--column", "answer=nosuch"]) == 3
    assert "[column 'nosuch'" in capsys.readouterr().err
    # the default metric set: the two that need no contexts, and one stderr line per metric skipped
    assert main(["eval", str(log), "-o", str(tmp_path / "d"), "--no-progress"]) == 0
    captured = capsys.readouterr()
    skipped = [line for line in captured.err.splitlines() if line.startswith("skipped ")]
    names = ["faithfulness", "context_precision", "context_recall", "context_relevance", "hallucination_rate"]
    assert skipped == [
        f"skipped {name}: it reads contexts from column 'contexts', which the log lacks; "
        "name it in --metrics to require it"
        for name in names
    ]
    assert captured.out.startswith("scoring answer_relevance, answer_correctness\n")
    # asking for what the columns allow scores the rest, and says which
    assert main(["eval", str(log), "-o", str(tmp_path / "c"), "--metrics", "auto", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("scoring answer_relevance, answer_correctness, precision_at_1,")
    assert "faithfulness" not in pl.read_parquet(tmp_path / "c" / "scores").columns


def test_compat_flag_reaches_the_evaluator(log_file, tmp_path, capsys):
    common = ["--metrics", "faithfulness", "--no-progress", "--keep", "id"]
    assert main(["eval", str(log_file), "-o", str(tmp_path / "seed"), "--compat", "rag-eval-node-ts", *common]) == 0
    manifest = json.loads((tmp_path / "seed" / "manifest.json").read_text())
    assert manifest["options"]["evaluator"]["compat"] == "rag-eval-node-ts"
    seed = pl.read_parquet(tmp_path / "seed" / "scores")
    log = pl.read_parquet(log_file)
    expected = rf.score_faithfulness(log, compat="rag-eval-node-ts").select("id", "faithfulness", "faithfulness_passed")
    assert seed.select("id", "faithfulness", "faithfulness_passed").equals(expected)
    assert main(["eval", str(log_file), "-o", str(tmp_path / "x"), "--compat", "ragas", *common]) == 2
