"""benchmarks/validity.py's judge part, against the fake OpenAI-compatible server (plumbing, not judge quality)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import polars as pl
import pytest
from judge_server import FakeJudgeServer
from sklearn.metrics import roc_auc_score

import ragframe as rf
from ragframe.datasets import example_rag_log

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "validity.py"
PAIRS = {
    "faithfulness": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_relevance": "human_context_relevance",
}
AUROC = r"(-|\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\])"


def _load():
    spec = importlib.util.spec_from_file_location("validity_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def validity(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the judge cache goes to tmp, not ~/.cache
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return _load()


def _judge_rows(out: str) -> dict[str, list[str]]:
    """metric -> [n, pos, seed, ragframe, judge, gain] from the judge table."""
    part = out.split("Judge OpenAIJudge(", 1)[1]
    rows = {}
    for metric, label in PAIRS.items():
        pattern = rf"^{metric} +{label} +(\d+) +(\d+)  {AUROC} +{AUROC} +{AUROC} +([+-]\d\.\d{{3}}|-)$"
        match = re.search(pattern, part, flags=re.MULTILINE)
        assert match, f"no judge row for {metric} in:\n{part}"
        rows[metric] = list(match.groups())
    return rows


def _auroc(cell: str) -> float:
    return float(cell.split()[0])


@pytest.mark.slow
def test_judge_rows_against_the_fake_server(validity, capsys, tmp_path):
    with FakeJudgeServer() as server:
        argv = ["--judge", "fake", "--base-url", server.base_url, "--rows", "20", "--n-resamples", "50"]
        assert validity.main(argv) == 0
        requests = len(server.log)
        out = capsys.readouterr().out
        # the judged rows again, from the same cache (no request): the scores the table was computed from
        log = pl.read_parquet(example_rag_log()).head(20)
        judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key="")
        judged = rf.evaluate(log, list(PAIRS), mode="llm", judge=judge, cache=tmp_path / "ragframe" / "judge.sqlite3")
        # ARES 20 rows x 3 metrics, RAGChecker 20 pairs x 2 answers (two of the 40 prompts are the same: one
        # cached reply), DL19 20 passages; then all cached
        assert len(server.log) == requests == 60 + 39 + 20
    rows = _judge_rows(out)
    heuristic = rf.evaluate(log, list(PAIRS))
    for metric, label in PAIRS.items():
        n, positives, _seed, ours, judged_cell, gain = rows[metric]
        assert (int(n), int(positives)) == (20, log[label].sum())
        expected_ours = roc_auc_score(log[label].to_numpy(), heuristic[metric].to_numpy())
        expected_judge = roc_auc_score(log[label].to_numpy(), judged[metric].to_numpy())
        assert _auroc(ours) == pytest.approx(expected_ours, abs=5e-4)
        assert _auroc(judged_cell) == pytest.approx(expected_judge, abs=5e-4)
        assert float(gain) == pytest.approx(expected_judge - expected_ours, abs=1.5e-3)
    assert "statuses: faithfulness: ok 20; answer_relevance: ok 20; context_relevance: ok 20" in out
    total = re.search(r"^total +(\d+) +(\d+) +(\d+) +(\d+) +([\d,]+) +([\d,]+) +(\S+)$", out, flags=re.MULTILINE)
    assert total and total.groups()[:4] == ("60", "0", "0", "0") and total.group(7) == "-"  # no prices: no cost
    assert "Judge: skipped" not in out


def test_without_a_judge_one_line_says_skipped(validity, capsys):
    assert validity.main(["--n-resamples", "20"]) == 0
    out = capsys.readouterr().out
    skipped = [line for line in out.splitlines() if "Judge" in line]
    assert skipped == ["Judge: skipped (no judge configured; --judge MODEL [--base-url URL], key from OPENAI_API_KEY)"]


@pytest.mark.slow
def test_judge_url_form_and_the_assessor_tables(validity, capsys):
    with FakeJudgeServer() as server:
        argv = ["--judge", server.base_url, "--model", "m", "--rows", "6", "--n-resamples", "20", "--no-cache"]
        assert validity.main(argv) == 0
        assert len(server.log) == 6 * 3 + 6 * 2 + 6
        assert {r.body["model"] for r in server.log} == {"m"}
    out = capsys.readouterr().out
    assert "RAGChecker preference meta-evaluation, the first 6 pairs x 2 annotators" in out
    assert re.search(r"^judge_answer_correctness +-?\d+\.\d\d / -?\d+\.\d\d", out, flags=re.MULTILINE)
    assert "judge statuses (both answers): ok 12" in out
    assert "DL19 relevance grading: 6 NIST-judged pairs of the BM25 top 10" in out
    assert re.search(r"^graded 0-3 +6 +\d\.\d{3}", out, flags=re.MULTILINE)


@pytest.mark.slow
def test_a_judge_that_never_answers_readably_still_reaches_every_table(validity, capsys):
    with FakeJudgeServer() as server:
        server.rules[""] = "bad_score"  # every reply unreadable
        argv = ["--judge", server.base_url, "--rows", "2", "--n-resamples", "20", "--no-cache"]
        assert validity.main(argv) == 0
    out = capsys.readouterr().out
    assert "ARES rows: no AUROC" in out
    assert re.search(r"^judge_answer_correctness +- +- +-$", out, flags=re.MULTILINE)
    assert "judge statuses (both answers): parse_error 4" in out
    assert "judge statuses: parse_error 2" in out and "no grade came back" in out
