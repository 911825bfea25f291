"""The seven heuristic metrics against the reference outputs of rag-eval-node-ts 0.3.2.

``tests/data/heuristics_oracle_sample.jsonl`` holds 297 of the 3,000 cases (always run);
the full set and the 60 batches are read from ``../shared/data/heuristics_oracle`` when
present. Scores within 1e-9, passed flags and composite exactly, signals in order with the
same id, severity, evidence and numbers in the message (see that folder's README).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

import polars as pl
import pytest
from conftest import LOCAL_DATA, shared_path

import ragframe as rf

SCHEMA = {"question": pl.String, "answer": pl.String, "contexts": pl.List(pl.String), "ground_truth": pl.String}
NUMBERS = re.compile(r"\d+(?:\.\d+)?")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _signal_key(signal):
    return (signal["id"], signal["severity"], signal["evidence"], NUMBERS.findall(signal["message"]))


def _check_cases(cases) -> int:
    groups = defaultdict(list)
    for case in cases:
        groups[json.dumps([case["metrics"], case["options"]], sort_keys=True)].append(case)
    mismatches = []
    checked = 0
    for key, members in groups.items():
        metrics, options = json.loads(key)
        frame = pl.DataFrame([{k: c[k] for k in SCHEMA} for c in members], schema=SCHEMA)
        scored = rf.evaluate(frame, metrics=metrics, explain=True, compat="rag-eval-node-ts", **options)
        for case, row in zip(members, scored.iter_rows(named=True), strict=True):
            for name, expected in case["expected"].items():
                got = row[name]
                checked += 1
                if name.endswith("_signals"):
                    ok = [_signal_key(s) for s in got] == [_signal_key(s) for s in expected]
                elif isinstance(expected, (int, float)) and not isinstance(expected, bool):
                    ok = got is not None and abs(got - expected) <= 1e-9
                else:
                    ok = got == expected
                if not ok:
                    mismatches.append((case["id"], name, expected, got))
    assert not mismatches, f"{len(mismatches)} of {checked} values differ, e.g. {mismatches[:3]}"
    return checked


@pytest.mark.slow
def test_oracle_sample_always_runs():
    cases = _load(LOCAL_DATA / "heuristics_oracle_sample.jsonl")
    assert len(cases) == 297
    assert any(c.get("spec_deviation") for c in cases)
    assert _check_cases(cases) > 297 * 10


@pytest.mark.slow
def test_all_oracle_cases():
    cases = _load(shared_path("heuristics_oracle", "cases.jsonl"))
    assert len(cases) == 3000
    assert _check_cases(cases) > 30000


@pytest.mark.slow
def test_oracle_batches_aggregates_pass_and_regressions():
    batches = _load(shared_path("heuristics_oracle", "batches.jsonl"))
    summaries = {}
    for batch in batches:
        frame = pl.DataFrame([{k: s[k] for k in SCHEMA} for s in batch["samples"]], schema=SCHEMA)
        scored = rf.evaluate(frame, compat="rag-eval-node-ts")
        summary = rf.summarize_batch(scored)
        summaries[batch["batch_id"]] = summary
        rows = {r["metric"]: r for r in summary.iter_rows(named=True)}
        expected = batch["expected"]
        for metric, stats in [*expected["aggregates"].items(), ("composite_score", expected["composite"])]:
            for stat, value in stats.items():
                assert rows[metric][stat] == pytest.approx(value, abs=1e-9), (batch["batch_id"], metric, stat)
        assert rf.batch_passed(scored) is expected["passed"]
        if batch["baseline_batch_id"] is None:
            assert expected["regressions"] is None
            continue
        got = rf.detect_regressions(
            summaries[batch["baseline_batch_id"]], summary, threshold=batch["regression_threshold"]
        ).to_dicts()
        assert [g["metric"] for g in got] == [e["metric"] for e in expected["regressions"]]
        for g, e in zip(got, expected["regressions"], strict=True):
            assert g["regressed"] is e["regressed"]
            assert g["delta"] == pytest.approx(e["delta"], abs=1e-9)
            assert g["baseline_mean"] == pytest.approx(e["baseline_mean"], abs=1e-9)
