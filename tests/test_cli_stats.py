"""``ragframe summary``, ``compare``, ``gate`` and ``demo``: output values equal the library's, exit codes.

Every frame is built here and written to ``tmp_path``; numbers printed as CSV or JSON are
read back and compared with :func:`ragframe.summarize`, :func:`ragframe.stats.compare` and
:func:`ragframe.stats.regressions` called directly.
"""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe.cli.main import main

REPO = Path(__file__).resolve().parent.parent
N = 40


def run_cli(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def baseline_frame() -> pl.DataFrame:
    rng = np.random.default_rng(7)
    return pl.DataFrame(
        {
            "id": np.arange(N),
            "faithfulness": rng.uniform(0.6, 1.0, N),
            "faithfulness_passed": rng.uniform(0, 1, N) > 0.3,
            "mrr": rng.uniform(0.2, 1.0, N),
            "split": np.where(np.arange(N) % 3 == 0, "hard", "easy"),
        }
    ).with_columns(pl.when(pl.col("id") == 5).then(None).otherwise(pl.col("mrr")).alias("mrr"))


def current_frame() -> pl.DataFrame:
    """faithfulness drops by about 0.2 on every row (a significant regression); mrr moves by noise only."""
    rng = np.random.default_rng(8)
    base = baseline_frame()
    return base.with_columns(
        (pl.col("faithfulness") - 0.2 + pl.Series(rng.normal(0, 0.02, N))).clip(0.0, 1.0),
        (pl.col("mrr") + pl.Series(rng.normal(0, 0.01, N))).clip(0.0, 1.0),
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"base": tmp_path / "base.parquet", "cur": tmp_path / "cur.parquet"}
    baseline_frame().write_parquet(paths["base"])
    current_frame().write_parquet(paths["cur"])
    return paths


def assert_frames_close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns
    assert got.height == want.height
    for name in want.columns:
        for g, w in zip(got[name].to_list(), want[name].to_list()):
            if isinstance(w, float):
                assert g is not None and math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-12), (name, g, w)
            else:
                assert g == w, (name, g, w)


# ----------------------------------------------------------------------------- summary


def test_summary_csv_and_json_equal_summarize(capsys, files):
    want = rf.summarize(current_frame())
    code, out, err = run_cli(capsys, "summary", files["cur"], "--format", "csv")
    assert code == 0, err
    assert_frames_close(pl.read_csv(io.StringIO(out), schema=want.schema), want)
    code, out, _ = run_cli(capsys, "summary", files["cur"], "--format", "json")
    assert code == 0
    records = json.loads(out)
    assert [r["metric"] for r in records] == ["faithfulness", "mrr"]
    assert_frames_close(pl.DataFrame(records, schema=want.schema), want)
    assert records[1]["pass_rate"] is None and records[1]["null_count"] == 1  # no mrr_passed; one null mrr


def test_summary_table_and_markdown(capsys, files):
    want = rf.summarize(current_frame()).row(0, named=True)
    code, out, _ = run_cli(capsys, "summary", files["cur"])
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == rf.summarize(current_frame()).columns
    assert set(lines[1]) == {"-", " "}
    cells = lines[2].split()
    assert cells[0] == "faithfulness" and cells[4] == f"{want['mean']:.4f}" and cells[-1] == f"{want['ci_high']:.4f}"
    assert lines[3].split()[lines[0].split().index("pass_rate")] == "-"  # mrr has no pass rate
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule aligned
    code, out, _ = run_cli(capsys, "summary", files["cur"], "--format", "markdown")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("| metric | count |") and lines[1].startswith("|---|---:|")
    row = [c.strip() for c in lines[2].strip("|").split("|")]
    assert row[0] == "faithfulness" and row[4] == f"{want['mean']:.4f}"
    assert len(lines) == 4


def test_summary_by_metrics_and_options(capsys, files):
    want = rf.summarize(
        current_frame(), metrics=["mrr"], by="split", ci="bootstrap", percentile_method="higher", seed=3
    )
    argv = ["summary", files["cur"], "--by", "split", "--metrics", "mrr", "--format", "csv"]
    code, out, err = run_cli(capsys, *argv, "--ci", "bootstrap", "--percentile-method", "higher", "--seed", "3")
    assert code == 0, err
    got = pl.read_csv(io.StringIO(out), schema=want.schema)
    assert got["split"].to_list() == ["easy", "hard"]
    assert_frames_close(got, want)


def test_summary_reads_folders_globs_and_csv(capsys, tmp_path):
    frame = current_frame()
    (tmp_path / "parts" / "day=2").mkdir(parents=True)
    frame.head(15).write_parquet(tmp_path / "parts" / "a.parquet")
    frame.slice(15).write_parquet(tmp_path / "parts" / "day=2" / "b.parquet")
    frame.write_csv(tmp_path / "scores.csv")
    want = rf.summarize(frame)
    for source in (tmp_path / "parts", tmp_path / "parts" / "**" / "*.parquet", tmp_path / "scores.csv"):
        code, out, err = run_cli(capsys, "summary", source, "--format", "json")
        assert code == 0, (source, err)
        got = pl.DataFrame(json.loads(out), schema=want.schema)
        assert_frames_close(got.drop("p50", "p90", "p95", "p99"), want.drop("p50", "p90", "p95", "p99"))
        assert np.allclose(got["p90"].to_numpy(), want["p90"].to_numpy())  # row order may differ across files


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["summary", "{tmp}/missing.parquet"], "scores: no such file or folder"),
        (["summary", "{tmp}/bad.parquet"], "scores: cannot read"),
        (["summary", "{tmp}/empty"], "no Parquet file"),
        (["summary", "{tmp}/nothing-*.parquet"], "no file matches"),
        (["summary", "{tmp}/cur.parquet", "--metrics", "recall"], "missing column"),
        (["summary", "{tmp}/cur.parquet", "--by", "team"], "missing column"),
        (["compare", "{tmp}/cur.parquet", "{tmp}/short.parquet"], "id"),
        (["compare", "{tmp}/cur.parquet", "{tmp}/missing.parquet"], "B: no such file or folder"),
        (["gate", "{tmp}/missing.parquet", "--baseline", "{tmp}/cur.parquet"], "scores: no such file or folder"),
        (["gate", "{tmp}/cur.parquet", "--baseline", "{tmp}/bad.parquet"], "baseline: cannot read"),
    ],
)
def test_input_errors_exit_3_and_name_the_file(capsys, tmp_path, files, argv, message):
    (tmp_path / "bad.parquet").write_text("not parquet", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    current_frame().head(30).write_parquet(tmp_path / "short.parquet")
    argv = [a.format(tmp=tmp_path) for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert code == 3
    assert out == ""
    assert err.startswith("ragframe: error: ") and message in err
    if "file" in message or "read" in message:
        assert str(tmp_path) in err


@pytest.mark.parametrize(
    "flags",
    [
        ["summary", "{cur}", "--format", "xml"],
        ["summary", "{cur}", "--ci", "normal"],
        ["summary", "{cur}", "--percentile-method", "cubic"],
        ["summary", "{cur}", "--confidence", "95"],
        ["summary"],
        ["compare", "{cur}"],
        ["compare", "{cur}", "{base}", "--alpha", "1.5"],
        ["compare", "{cur}", "{base}", "--test", "anova"],
        ["compare", "{cur}", "{base}", "--correction", "sidak"],
        ["compare", "{cur}", "{base}", "--n-resamples", "0"],
        ["gate", "{cur}"],
        ["gate", "{cur}", "--baseline", "{base}", "--max-drop", "-0.1"],
        ["gate", "{cur}", "--baseline", "{base}", "--threshold", "-0.1"],
        ["gate", "{cur}", "--baseline", "{base}", "--max-drop", "0.1", "--threshold", "0.1"],
        ["gate", "{cur}", "--baseline", "{base}", "--min", "faithfulness"],
        ["gate", "{cur}", "--baseline", "{base}", "--min", "faithfulness=high"],
        ["gate", "{cur}", "--baseline", "{base}", "--format", "table"],
        ["gate", "{cur}", "--baseline", "{base}", "--bogus"],
    ],
)
def test_bad_flags_are_usage_errors(capsys, files, flags):
    code, out, err = run_cli(capsys, *(f.format(cur=files["cur"], base=files["base"]) for f in flags))
    assert code == 2
    assert out == ""
    assert "usage: ragframe" in err


# ----------------------------------------------------------------------------- compare


@pytest.mark.parametrize(
    ("flags", "kwargs"),
    [
        ([], {}),
        (
            ["--test", "permutation", "--seed", "3", "--n-resamples", "999", "--correction", "none"],
            {"test": "permutation", "seed": 3, "n_resamples": 999, "correction": None},
        ),
        (
            ["--test", "wilcoxon", "--by", "split", "--alpha", "0.01"],
            {"test": "wilcoxon", "by": "split", "alpha": 0.01},
        ),
        (
            ["--test", "bootstrap", "--metrics", "mrr", "--n-resamples", "500"],
            {"test": "bootstrap", "metrics": ["mrr"], "n_resamples": 500},
        ),
    ],
)
def test_compare_equals_library(capsys, files, flags, kwargs):
    want = rf.compare(baseline_frame(), current_frame(), **kwargs)
    code, out, err = run_cli(capsys, "compare", files["base"], files["cur"], "--format", "csv", *flags)
    assert code == 0, err
    assert_frames_close(pl.read_csv(io.StringIO(out), schema=want.schema), want)


def test_compare_on_and_how_inner(capsys, tmp_path):
    a = baseline_frame().rename({"id": "qid"})
    b = current_frame().rename({"id": "qid"}).filter(pl.col("qid") >= 4)
    a.write_parquet(tmp_path / "a.parquet")
    b.write_parquet(tmp_path / "b.parquet")
    argv = ["compare", tmp_path / "a.parquet", tmp_path / "b.parquet", "--on", "qid"]
    code, _, err = run_cli(capsys, *argv)
    assert code == 3 and "only" in err  # ids on one side only
    code, out, err = run_cli(capsys, *argv, "--how", "inner", "--format", "json")
    assert code == 0, err
    want = rf.compare(a, b, on="qid", how="inner")
    got = json.loads(out)
    assert [r["n"] for r in got] == want["n"].to_list() == [N - 4, N - 5]
    assert [r["p_value"] for r in got] == pytest.approx(want["p_value"].to_list(), rel=1e-12)
    code, out, _ = run_cli(capsys, *argv, "--how", "inner")
    assert code == 0
    assert out.splitlines()[0].split()[:5] == ["metric", "n", "mean_a", "mean_b", "delta"]
    tiny = want.filter(pl.col("p_value") < 0.00005)["p_value"]  # the faithfulness drop: too small for 4 decimals
    assert tiny.len() == 1 and f"  {tiny[0]:.4g}  " in out and "0.0000" not in out  # 4 significant digits


# ----------------------------------------------------------------------------- gate


def test_gate_fails_on_a_significant_regression(capsys, files):
    code, out, err = run_cli(capsys, "gate", files["cur"], "--baseline", files["base"])
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0].startswith("ragframe gate: ") and "paired t test" in lines[0]
    want = rf.regressions(baseline_frame(), current_frame()).row(0, named=True)
    drop = f"mean dropped by {-want['delta']:.4f} ({want['baseline']:.4f} -> {want['current']:.4f}, n {want['n']})"
    assert lines[1] == f"FAIL  regression  faithfulness: {drop}, more than 0.05; significant (p_adjusted 0.0000)"
    assert lines[2].startswith("PASS  regression  mrr: mean changed by")
    assert lines[-1] == "gate failed: 1 of 2 checks failed"


def test_gate_passes(capsys, files):
    code, out, err = run_cli(capsys, "gate", files["cur"], "--baseline", files["base"], "--metrics", "mrr")
    assert code == 0, err
    assert out.splitlines()[-1] == "gate passed: all 1 checks passed"
    code, out, _ = run_cli(capsys, "gate", files["base"], "--baseline", files["base"], "--min", "faithfulness=0.5")
    assert code == 0
    assert "PASS  minimum     faithfulness: mean" in out and "FAIL" not in out


def test_gate_floor(capsys, files):
    mean = current_frame()["faithfulness"].mean()
    argv = ["gate", files["cur"], "--baseline", files["cur"], "--min", f"faithfulness={mean + 0.01}", "mrr=0.1"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 1
    assert f"FAIL  minimum     faithfulness: mean {mean:.4f} is below the minimum {mean + 0.01:g}\n" in out
    assert "PASS  minimum     mrr: mean" in out
    assert out.splitlines()[-1] == "gate failed: 1 of 4 checks failed"
    code, _, _ = run_cli(capsys, "gate", files["cur"], "--baseline", files["cur"], "--min", f"faithfulness={mean}")
    assert code == 0  # at the floor passes


def test_gate_unknown_floor_metric_is_a_usage_error(capsys, files):
    code, out, err = run_cli(capsys, "gate", files["cur"], "--baseline", files["base"], "--min", "recall=0.5")
    assert code == 2
    assert out == ""
    assert err.startswith("ragframe gate: error: --min names metric(s) ['recall']")
    assert err.rstrip().endswith("it has ['faithfulness', 'mrr']")


def test_gate_no_significance(capsys, tmp_path):
    # mean drop 0.1 > threshold, but the paired differences are noisy: p is about 0.66
    base = pl.DataFrame({"id": [1, 2, 3, 4], "faithfulness": [0.5, 0.5, 0.5, 0.5]})
    cur = pl.DataFrame({"id": [1, 2, 3, 4], "faithfulness": [0.0, 0.8, 0.1, 0.7]})
    base.write_parquet(tmp_path / "base.parquet")
    cur.write_parquet(tmp_path / "cur.parquet")
    argv = ["gate", tmp_path / "cur.parquet", "--baseline", tmp_path / "base.parquet"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    assert "PASS  regression  faithfulness: mean dropped by 0.1000 (0.5000 -> 0.4000, n 4), more than 0.05; " in out
    assert "not significant (p_adjusted 0.6578 >= alpha 0.05)" in out
    code, out, _ = run_cli(capsys, *argv, "--no-significance")
    assert code == 1
    assert "FAIL  regression  faithfulness: mean dropped by 0.1000 (0.5000 -> 0.4000, n 4), more than 0.05\n" in out
    code, out, _ = run_cli(capsys, *argv, "--max-drop", "0.2", "--no-significance")
    assert code == 0


def test_gate_summary_baselines(capsys, tmp_path, files):
    # a baseline summary written by 'ragframe summary --format csv', against per-row scores and a summary
    code, out, _ = run_cli(capsys, "summary", files["base"], "--format", "csv")
    assert code == 0
    (tmp_path / "base.csv").write_text(out, encoding="utf-8")
    rf.summarize(current_frame()).write_parquet(tmp_path / "cur_summary.parquet")
    want = rf.regressions(rf.summarize(baseline_frame()), rf.summarize(current_frame()))
    assert want["regressed"].to_list() == [True, False]
    for scores in (files["cur"], tmp_path / "cur_summary.parquet"):
        code, out, err = run_cli(capsys, "gate", scores, "--baseline", tmp_path / "base.csv", "--format", "json")
        assert code == 1, err
        report = json.loads(out)
        assert report["passed"] is False and report["mode"] == "summary"
        got = [c for c in report["checks"] if c["check"] == "regression"]
        assert [c["metric"] for c in got] == want["metric"].to_list()
        assert [not c["passed"] for c in got] == want["regressed"].to_list()
        assert [c["delta"] for c in got] == pytest.approx(want["delta"].to_list(), rel=1e-12)
        assert got[0]["p_value"] is None and got[0]["n"] is None  # no test on summaries
    code, out, _ = run_cli(capsys, "gate", tmp_path / "cur_summary.parquet", "--baseline", tmp_path / "base.csv")
    assert "summaries, no test" in out.splitlines()[0]
    assert "FAIL  regression  faithfulness" in out
    # a floor on a summary uses its mean
    argv = ["gate", tmp_path / "cur_summary.parquet", "--baseline", tmp_path / "cur_summary.parquet"]
    code, out, _ = run_cli(capsys, *argv, "--min", "mrr=0.99")
    assert code == 1 and "FAIL  minimum     mrr: mean" in out


def test_gate_grouped_summary_is_an_input_error(capsys, tmp_path, files):
    rf.summarize(current_frame(), by="split").write_parquet(tmp_path / "grouped.parquet")
    code, _, err = run_cli(capsys, "gate", tmp_path / "grouped.parquet", "--baseline", files["base"])
    assert code == 3
    assert err.startswith("ragframe: error: ") and "several rows for metric(s) ['faithfulness', 'mrr']" in err


def test_gate_json_equals_regressions(capsys, files):
    argv = ["gate", files["cur"], "--baseline", files["base"], "--test", "wilcoxon", "--format", "json"]
    code, out, _ = run_cli(capsys, *argv, "--max-drop", "0.1", "--correction", "bonferroni")
    assert code == 1
    report = json.loads(out)
    want = rf.regressions(baseline_frame(), current_frame(), max_drop=0.1, test="wilcoxon", correction="bonferroni")
    assert report["mode"] == "paired"
    for check, row in zip(report["checks"], want.iter_rows(named=True)):
        assert check["metric"] == row["metric"] and check["passed"] is not row["regressed"]
        assert check["p_adjusted"] == pytest.approx(row["p_adjusted"], rel=1e-12)
        assert check["n"] == row["n"] and check["max_drop"] == 0.1


def test_gate_github_format(capsys, files):
    mean = current_frame()["mrr"].mean()
    argv = ["gate", files["cur"], "--baseline", files["base"], "--format", "github", "--min", "mrr=0.99"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 2  # one per failure: the faithfulness regression and the mrr floor
    assert all(line.startswith("::error title=ragframe gate::") for line in lines)
    assert lines[0].startswith("::error title=ragframe gate::faithfulness: mean dropped by ")
    assert lines[1] == f"::error title=ragframe gate::mrr: mean {mean:.4f} is below the minimum 0.99"
    code, out, _ = run_cli(capsys, "gate", files["base"], "--baseline", files["base"], "--format", "github")
    assert code == 0
    assert out == "::notice title=ragframe gate::gate passed: all 2 checks passed\n"


@pytest.mark.slow
def test_gate_subprocess_exit_code(files):
    argv = [sys.executable, "-m", "ragframe.cli", "gate", str(files["cur"]), "--baseline", str(files["base"])]
    done = subprocess.run([*argv, "--min", "mrr=0.2"], capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 1, done.stderr
    assert "FAIL  regression  faithfulness" in done.stdout
    assert "PASS  minimum     mrr: mean" in done.stdout
    assert done.stdout.splitlines()[-1] == "gate failed: 1 of 3 checks failed"
    assert done.stderr == ""


# ----------------------------------------------------------------------------- demo and help


@pytest.mark.slow
def test_demo_prints_comparison_and_summary(capsys, tmp_path):
    code, out, err = run_cli(capsys, "demo", "--out", tmp_path / "demo")
    assert code == 0, err
    assert "ndcg_at_10         0.5058              0.6868" in out  # the ranking table is unchanged
    assert "paired comparison, a = bm25, b = bm25+gpt3.5-rerank" in out
    header = next(line for line in out.splitlines() if line.startswith("metric "))
    assert header.split() == [
        "metric",
        "n",
        "mean_a",
        "mean_b",
        "delta",
        "ci_low",
        "ci_high",
        "p_value",
        "p_adjusted",
        "winner",
    ]
    ndcg = next(line for line in out.splitlines() if line.startswith("ndcg_at_10 ") and line.rstrip().endswith(" b"))
    assert ndcg.split()[:4] == ["ndcg_at_10", "43", "0.5058", "0.6868"]
    assert "per-query score distribution by run" in out
    assert any(line.startswith("bm25+gpt3.5-rerank  ndcg_at_10") for line in out.splitlines())
    assert pl.read_parquet(tmp_path / "demo" / "per_query.parquet").height == 86


#: every entry of each command's help: positionals, then options in the order argparse prints them,
#: written here by hand (not read from the parser) so that a flag added or lost shows up
HELP_ENTRIES = {
    "demo": (["--out OUT"], ["per-query scores", "(default: ragframe-demo)"]),
    "summary": (
        [
            "SCORES",
            "--by COL [COL ...]",
            "--metrics METRIC [METRIC ...]",
            "--format {table,csv,json,markdown}",
            "--ci {t,bootstrap}",
            "--confidence CONFIDENCE",
            "--percentile-method M",
            "--n-resamples N",
            "--seed N",
        ],
        ["ragframe.summarize", "pass_rate", "ci_low, ci_high", "(default: 0.95)", "(default: 2000)"],
    ),
    "compare": (
        [
            "A",
            "B",
            "--metrics METRIC [METRIC ...]",
            "--by COL [COL ...]",
            "--on COL [COL ...]",
            "--test {t,wilcoxon,permutation,bootstrap}",
            "--alpha ALPHA",
            "--correction {holm,bonferroni,fdr_bh,none}",
            "--how {error,inner}",
            "--seed N",
            "--n-resamples N",
            "--format {table,csv,json,markdown}",
        ],
        ["scores of system A, the reference", "scores of system B", "delta (= mean_b - mean_a)", "(default: holm)"],
    ),
    "gate": (
        [
            "SCORES",
            "--baseline BASELINE",
            "--max-drop MAX_DROP",
            "--threshold MAX_DROP",
            "--min METRIC=VALUE [METRIC=VALUE ...]",
            "--metrics METRIC [METRIC ...]",
            "--no-significance",
            "--on COL [COL ...]",
            "--test {t,wilcoxon,permutation,bootstrap}",
            "--alpha ALPHA",
            "--correction {holm,bonferroni,fdr_bh,none}",
            "--how {error,inner}",
            "--seed N",
            "--n-resamples N",
            "--format {text,github,json}",
        ],
        ["fails (exit code 1)", "regression (default: 0.05)", "--min METRIC=VALUE", "(default: text)"],
    ),
}


def help_entries(text: str) -> list[str]:
    """The argument entries of an argparse help: lines indented by two spaces under a section, without their
    description."""
    entries = []
    section = None
    for line in text.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            section = line
        elif section in ("positional arguments:", "options:") and line.startswith("  ") and line[2] != " ":
            entries.append(line[2:].split("  ")[0].strip())
    return entries


@pytest.mark.parametrize("command", list(HELP_ENTRIES))
def test_help_documents_every_flag_and_exit_codes(capsys, monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "200")  # one line per entry when it fits, whatever the terminal
    code, out, err = run_cli(capsys, command, "--help")
    assert code == 0 and err == ""
    assert out.startswith(f"usage: ragframe {command} [-h]")
    entries, phrases = HELP_ENTRIES[command]
    assert help_entries(out) == [*entries[: sum(not e.startswith("-") for e in entries)], "-h, --help"] + [
        e for e in entries if e.startswith("-")
    ]
    text = " ".join(out.split())
    for phrase in phrases:
        assert phrase in text, phrase
    if command == "gate":
        codes = "exit codes: 0 every check passed, 1 the gate failed (a regression or a value below a floor), 2 usage"
    else:
        codes = "exit codes: 0 ok, 2 usage error (bad flag or value), 3 input or runtime error"
    assert codes in text
    assert "3 input or runtime error" in text and "130 interrupted (Ctrl-C)" in text
    assert "Every error is one line on stderr." in text
    assert ("1 the gate failed" in text) == (command == "gate")


def test_top_level_help_lists_commands_and_exit_codes(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(capsys, "--help")
    usage = "usage: ragframe [-h] {demo,eval,trec,summary,compare,gate,report,estimate,generate,annotations} ..."
    assert code == 0 and out.startswith(usage)
    text = " ".join(out.split())
    assert "exit codes: 0 ok, 1 gate failed, 2 usage error, 3 input or runtime error, 130 interrupted" in text
    for command in ("demo", "eval", "trec", "summary", "compare", "gate", "estimate"):
        assert f"\n    {command} " in out, command
