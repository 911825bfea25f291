"""Every value of every measure ragframe implements, against trec_eval 10.0's own expected outputs.

The fixtures are trec_eval's test files (``tests/data/trec_eval``, NIST notice kept); the
table of which qrels/run/flags produced which output is in that folder's upstream README.
Values must agree to trec_eval's printed 4 decimals, per query and for the ``all`` line.
"""

from __future__ import annotations

import pytest
from conftest import LOCAL_DATA, shared_path
from trec_names import read_expected

import ragframe as rf

TE = LOCAL_DATA / "trec_eval"

CASES = [
    # expected output, qrels, results, evaluate_run options
    ("out.test", "qrels.test", "results.test", {}),
    ("out.test", "qrels.test.with-comments", "results.test", {}),
    ("out.test.a", "qrels.test", "results.test", {}),
    ("out.test.aq", "qrels.test", "results.test", {}),
    ("out.test.aqc", "qrels.test", "results.trunc", {"complete": True}),
    ("out.test.aqcM", "qrels.test", "results.trunc", {"complete": True, "max_docs": 100}),
    ("out.test.aql", "qrels.rel_level", "results.test", {"relevance_level": 2}),
    ("out.test.meas_params", "qrels.test", "results.test", {}),
]


def _format(value) -> str:
    return str(value) if isinstance(value, int) else f"{value:.4f}"


def check_against_trec_eval(expected_path, qrels_path, run_path, options) -> int:
    expected = read_expected(expected_path)
    assert expected.height > 0
    ks = sorted({k for k in expected["k"].to_list() if k is not None})
    per_query = rf.evaluate_run(rf.read_trec_run(run_path), rf.read_qrels(qrels_path), k=ks or [1], **options)
    summary = rf.run_summary(per_query)
    by_query = {row["query_id"]: row for row in per_query.iter_rows(named=True)}
    mismatches = []
    for row in expected.iter_rows(named=True):
        if row["qid"] == "all":
            got = summary[row["column"]].item()
        else:
            got = by_query[row["qid"]][row["column"]]
        if _format(got) != row["value"]:
            mismatches.append((row["measure"], row["qid"], row["value"], got))
    assert not mismatches, f"{len(mismatches)} values differ from trec_eval, e.g. {mismatches[:5]}"
    return expected.height


@pytest.mark.parametrize(("expected", "qrels", "results", "options"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_trec_eval_expected_outputs(expected, qrels, results, options):
    checked = check_against_trec_eval(TE / expected, TE / qrels, TE / results, options)
    assert checked >= 9  # every file carries at least the 9 'all' values of our measures


def test_meas_params_covers_odd_cutoffs():
    # ndcg_cut.23.4 in trec_eval's parameters becomes cutoff 23; P.7 and recall.2000 are unusual k
    expected = read_expected(TE / "out.test.meas_params")
    assert {"ndcg_cut_23", "P_7", "recall_2000", "success_20"} <= set(expected["measure"].to_list())


def test_comment_qrels_rag24_segments():
    # 31 TREC RAG 2024 topics with graded qrels and '#' inside doc ids; the run has 301 topics
    folder = shared_path("trec_eval")
    checked = check_against_trec_eval(
        folder / "out.comment.test", folder / "qrels.comment.test", folder / "results.comment.test", {}
    )
    assert checked > 9
