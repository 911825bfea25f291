"""``ragframe trec`` on seeded random cases, and trec_eval 10.0's last differences.

* A seeded differential fuzz test (``tests/trec_fuzz.py`` draws qrels, runs and options):
  every per-query line of every measure that trec_eval's test outputs (``out.test.a``,
  ``out.test.meas_params``) print and pytrec_eval (trec_eval 9's code) computes must print
  the same 4 decimals as pytrec_eval's value.
* With ``RAGFRAME_TREC_EVAL`` set to a trec_eval 10.0 binary or source folder (it builds in
  seconds: ``make``), ``benchmarks/trec_differential.py`` compares 300 cases byte for byte;
  skipped otherwise (CI has no network to fetch trec_eval).
* The differences the fuzzing found, each with trec_eval 10.0's output as the oracle
  (recorded from the binary built at commit f4253652): ``-nan`` right-aligned, interpolated
  precision with ``-J`` and nothing judged retrieved, ``-c``'s placeholder for parameterised
  names, trec_eval's summation order, exit codes, infinite scores.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import LOCAL_DATA
from hypothesis import given, settings
from hypothesis import strategies as st
from trec_fuzz import draw_case, ragframe_trec, write_case

import ragframe as rf
from ragframe.io.trec_eval_format import parse_measures
from ragframe.kernels.trec_measures import TrecOptions
from ragframe.run.trec_run import trec_eval_run

ROOT = Path(__file__).resolve().parent.parent
TE = LOCAL_DATA / "trec_eval"

# trec_eval 10 and 9 (pytrec_eval) differ on purpose here (see tests/test_trec_property.py), or pytrec_eval lacks it
_NOT_IN_PYTREC = ("iprec_at_recall", "11pt_avg", "relstring", "rbp", "unj", "runid", "num_q", "gm_")
# out.test.meas_params' cutoffs with the defaults (a list replaces a measure's defaults), in both spellings
_CUTS = "5,10,15,20,30,100,200,500,1000"
_PARAMETERISED = (
    f"P.3,7,{_CUTS}",
    f"ndcg_cut.23,{_CUTS}",
    f"recall.2000,{_CUTS}",
    "success.1,2,5,10,20",
    "Rprec_mult.0.2,0.35,0.4,0.6,0.8,1.0,1.2,1.4,1.6,1.8,2.0,5",
)


def _printed_names(path: Path) -> set[str]:
    return {line.split("\t", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines()}


def _pytrec_values(case, level: int, judged_only: bool) -> dict:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    judged: dict = {}
    for line in case.qrels.splitlines():
        qid, _, doc, grade = line.split()
        judged.setdefault(qid, {})[doc] = int(grade)
    ranked: dict = {}
    for line in case.run.splitlines():
        if line.strip():
            qid, _, doc, _, score, _ = line.split()
            ranked.setdefault(qid, {})[doc] = float(score)
    names = {m for m in pytrec_eval.supported_measures if not m.startswith(_NOT_IN_PYTREC)} | set(_PARAMETERISED)
    evaluator = pytrec_eval.RelevanceEvaluator(judged, names, relevance_level=level, judged_docs_only_flag=judged_only)
    return evaluator.evaluate(ranked)


def _no_all_negative_query(case) -> bool:
    grades: dict[str, list[int]] = {}
    for line in case.qrels.splitlines():
        qid, _, _, grade = line.split()
        grades.setdefault(qid, []).append(int(grade))
    # trec_eval 9 (pytrec_eval) never returns from G and ndcg_rel on such a query; trec_eval 10 stops (exit 4)
    return all(max(g) >= 0 for g in grades.values())


@pytest.mark.slow
def test_seeded_fuzz_equals_pytrec_eval_on_the_suites_measures(tmp_path):
    wanted = (_printed_names(TE / "out.test.a") | _printed_names(TE / "out.test.meas_params")) - {"all"}
    compared_names: set[str] = set()
    compared = cases = 0
    for seed in range(400):
        case = draw_case(seed)
        if not _no_all_negative_query(case) or not case.run.strip():
            continue
        level = max(next((int(o[2:]) for o in case.options if o.startswith("-l")), 1), 1)  # pytrec_eval: >= 1
        judged_only = "-J" in case.options
        qrels, run = write_case(case, tmp_path)
        argv = ["-q", "-m", "all_trec", *(["-J"] if judged_only else []), f"-l{level}", str(qrels), str(run)]
        argv[3:3] = [word for spec in _PARAMETERISED for word in ("-m", spec)]
        code, out, err = ragframe_trec(argv)
        theirs = _pytrec_values(case, level, judged_only)
        if code != 0:  # no query with both results and judgments: pytrec_eval has nothing either
            assert code == 3 and "no queries with both results and relevance info" in err and not theirs
            continue
        cases += 1
        for line in out.splitlines():
            name, qid, value = (part.strip() for part in line.split("\t"))
            if qid == "all" or name.startswith(_NOT_IN_PYTREC) or name not in theirs.get(qid, {}):
                continue
            expected = theirs[qid][name]
            text = str(int(expected)) if name.startswith("num_") else f"{expected:6.4f}"
            assert value == text, (seed, case.options, qid, name, value, text)
            compared += 1
            compared_names.add(name)
    assert cases > 250 and compared > 20_000
    comparable = {n for n in wanted if not n.startswith(_NOT_IN_PYTREC) and "=" not in n and n != "utility_2,-1,0,0"}
    assert comparable - compared_names == set()  # every measure of the suite's outputs that pytrec_eval has


def _trec_eval_binary(tmp_path: Path) -> str:
    given_path = os.environ.get("RAGFRAME_TREC_EVAL")
    if not given_path:
        pytest.skip("set RAGFRAME_TREC_EVAL to a trec_eval 10.0 binary or source folder")
    path = Path(given_path)
    if path.is_file():
        return str(path)
    if not (path / "Makefile").is_file() or shutil.which("make") is None:
        pytest.skip(f"RAGFRAME_TREC_EVAL={given_path}: neither a binary nor a source folder with a Makefile")
    build = tmp_path / "trec_eval"
    shutil.copytree(path, build)
    subprocess.run(["make", "-C", str(build)], check=True, capture_output=True)
    return str(build / "trec_eval")


def test_byte_identical_to_a_trec_eval_binary(tmp_path):
    binary = _trec_eval_binary(tmp_path)
    script = ROOT / "benchmarks" / "trec_differential.py"
    done = subprocess.run(
        [sys.executable, str(script), "--trec-eval", binary, "--cases", "300", "--infinite"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "'differ'" not in done.stdout and "'exit'" not in done.stdout


# ----------------------------------------------------------------------------- trec_eval 10.0's outputs, recorded

QRELS_A = "q1 0 d1 0\nq1 0 d2 -1\nq2 0 d1 1\nq2 0 d2 2\nq2 0 d3 0\n"
RUN_A = "q1 Q0 d9 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d3 1 3.0 r\nq2 Q0 d7 2 2.5 r\nq2 Q0 d2 3 2.0 r\n"


def _trec(tmp_path, qrels: str, run: str, *options: str) -> tuple[int, str, str]:
    (tmp_path / "qrels").write_text(qrels, encoding="utf-8")
    (tmp_path / "run").write_text(run, encoding="utf-8")
    return ragframe_trec([*options, str(tmp_path / "qrels"), str(tmp_path / "run")])


def _lines(text: str) -> str:
    return "".join(f"{name:<22}\t{qid}\t{value}\n" for name, qid, value in (row.split() for row in text.splitlines()))


def test_judged_only_with_nothing_judged_retrieved_is_nan_as_in_trec_eval(tmp_path):
    # -J leaves q1 nothing (d9 is not in the pool, d2 is judged -1): trec_eval's precision 0/0 reaches
    # every recall point whose cutoff in relevant documents is 0 (R = 0: all of them)
    code, out, _ = _trec(tmp_path, QRELS_A, RUN_A, "-q", "-J", "-m", "iprec_at_recall..0,.5", "-m", "11pt_avg..5,1",
                         "-m", "map")  # fmt: skip
    assert code == 0
    assert out == _lines(
        """map q1 0.0000
        iprec_at_recall_0.00 q1 -nan
        iprec_at_recall_0.50 q1 -nan
        11pt_avg_.5,1 q1 -nan
        map q2 0.2500
        iprec_at_recall_0.00 q2 0.5000
        iprec_at_recall_0.50 q2 0.5000
        11pt_avg_.5,1 q2 0.2500
        map all 0.1250
        iprec_at_recall_0.00 all -nan
        iprec_at_recall_0.50 all -nan
        11pt_avg_.5,1 all -nan"""
    ).replace("\t-nan", "\t  -nan")
    assert "\t  -nan\n" in out  # printf("%6.4f", NaN): right-aligned in 6 characters


def test_rndcg_nan_is_right_aligned(tmp_path):
    code, out, _ = _trec(tmp_path, QRELS_A, RUN_A, "-q", "-l0", "-m", "Rndcg")
    assert (code, out) == (0, _lines("Rndcg q1 -nan\nRndcg q2 0.0000\nRndcg all -nan").replace("\t-nan", "\t  -nan"))


def test_complete_placeholder_keeps_parameterised_values_as_trec_eval(tmp_path):
    # q2 is judged and missing from the run: -c scores trec_eval's placeholder (one document outside the pool);
    # trec_eval clears utility, relstring and rbp_resid by exact name, so these parameterised ones keep it
    qrels = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 1\nq2 0 d2 0\nq2 0 d4 2\n"
    run = "q1 Q0 d1 1 1.0 r\nq1 Q0 d5 2 0.5 r\n"
    code, out, _ = _trec(tmp_path, qrels, run, "-q", "-c", "-m", "utility.2,-1,0.5,0", "-m", "rbp_resid.p=0.8",
                         "-m", "relstring.5")  # fmt: skip
    assert code == 0
    assert out == _lines(
        """relstring_5 q1 '1-'
        utility_2,-1,0.5,0 q1 1.0000
        rbp_resid_p=0.8 q1 0.8000
        relstring_5 q2 '-'
        utility_2,-1,0.5,0 q2 0.0000
        rbp_resid_p=0.8 q2 1.0000
        utility_2,-1,0.5,0 all 0.5000
        rbp_resid_p=0.8 all 0.9000"""
    )
    # the default names are cleared for the placeholder
    code, out, _ = _trec(tmp_path, qrels, run, "-q", "-c", "-m", "utility", "-m", "rbp_resid", "-m", "relstring")
    assert "relstring             \tq2\t''\n" in out and "utility               \tq2\t0.0000\n" in out
    assert "rbp_resid             \tq2\t0.0000\n" in out


def _trec_eval_11pt_and_rbp_resid(grades: list[int], num_rel: int, p: float, points: tuple[float, ...]):
    """trec_eval 10.0's loops (m_11pt_avg.c, m_rbp_resid.c), step by step in Python: the summation-order oracle.

    ``grades``: the ranking's grades (-2 not in the pool, -1 unjudged), level 1.
    """
    num_ret = len(grades)
    num_rel_ret = sum(g >= 1 for g in grades)
    cutoffs = [math.floor(x * num_rel + 0.5) for x in points]  # lround, x * R >= 0
    current = len(points) - 1
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    precis = num_rel_ret / num_ret
    int_precis, rel_so_far, total = precis, num_rel_ret, 0.0
    i = num_ret
    while i > 0 and rel_so_far > 0:
        precis = rel_so_far / i
        int_precis = max(int_precis, precis)
        if grades[i - 1] >= 1:
            while current >= 0 and rel_so_far == cutoffs[current]:
                total += int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        total += int_precis
        current -= 1
    eleven = total / len(points)
    unjudged, resid_sum, cur_p = 0, 0.0, 1.0
    for grade in grades:
        if grade < 0:
            unjudged += 1
            resid_sum += cur_p
        cur_p = cur_p * p
    resid = cur_p + (1 - p) * resid_sum if unjudged else 0.0
    return eleven, resid


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from((-2, -1, 0, 1, 1, 2)), min_size=1, max_size=40),
    st.integers(0, 6),
    st.sampled_from((0.9, 0.8, 0.95, 0.37)),
)
def test_11pt_avg_and_rbp_resid_sum_in_trec_eval_order(grades, missed, p):
    docs = [f"d{i:02d}" for i in range(len(grades))]
    run = pl.DataFrame({"query_id": "q", "doc_id": docs, "score": np.arange(len(docs), 0, -1, dtype=np.float64)})
    judged = [(d, g) for d, g in zip(docs, grades, strict=True) if g != -2]
    judged += [(f"m{i}", 1) for i in range(missed)]  # relevant and not retrieved
    qrels = pl.DataFrame({"query_id": "q", "doc_id": [d for d, _ in judged], "relevance": [g for _, g in judged]},
                         schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64})  # fmt: skip
    points = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    if not judged:
        return
    row = trec_eval_run(run, qrels, TrecOptions(tuple(parse_measures(["11pt_avg", f"rbp_resid.p={p}"])))).row(
        0, named=True
    )
    num_rel = sum(g >= 1 for _, g in judged)
    eleven, resid = _trec_eval_11pt_and_rbp_resid(grades, num_rel, p, points)
    assert row["11pt_avg"] == eleven  # bit for bit: the same additions in the same order
    assert row[f"rbp_resid_p={p}"] == resid


@pytest.mark.parametrize(("option", "named"), [(["-D", "2"], "-D"), (["-o"], "-o"), (["-v"], "-v"),
                                               (["--Debug_level=1"], "--Debug_level")])  # fmt: skip
def test_unimplemented_trec_eval_options_exit_3_as_documented(tmp_path, option, named):
    code, out, err = _trec(tmp_path, QRELS_A, RUN_A, *option)
    assert (code, out) == (3, "")
    assert f"trec_eval's {named} " in err and "not implemented" in err
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").count("exit code 3") >= 1


def test_a_judged_query_missing_from_the_run_is_skipped_with_exit_0(tmp_path):
    # trec_eval 10.0 exits 4 here ("result qid 'q2' not found in qrels"); ragframe skips q2 as trec_eval 9 does
    qrels = QRELS_A + "q3 0 d1 1\n"
    code, out, err = _trec(tmp_path, qrels, RUN_A, "-q", "-m", "map")
    assert (code, err) == (0, "")
    assert out == _lines("map q1 0.0000\nmap q2 0.1667\nmap all 0.0833")
    code, out, _ = _trec(tmp_path, qrels, RUN_A, "-c", "-m", "map", "-m", "num_q")
    assert out == _lines("num_q all 3\nmap all 0.0556")  # trec_eval 10.0's output


def test_num_rel_all_with_complete_and_a_level_is_the_sum_of_the_queries(tmp_path):
    # trec_eval 10.0 prints 'num_rel all 2' here (it recounts grades > 0 whatever -l says; docs/metrics.md)
    code, out, _ = _trec(tmp_path, "q1 0 d1 1\nq1 0 d2 2\nq1 0 d3 0\n", "q1 Q0 d1 1 1.0 r\n",
                         "-c", "-l2", "-q", "-m", "num_rel")  # fmt: skip
    assert (code, out) == (0, _lines("num_rel q1 1\nnum_rel all 1"))


def test_inf_and_minus_inf_scores_without_a_warning(tmp_path):
    qrels = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\n"
    run = "q1 Q0 d1 1 inf r\nq1 Q0 d2 2 -inf r\nq1 Q0 d3 3 inf r\nq1 Q0 d4 3 1.5 r\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = _trec(tmp_path, qrels, run, "-q", "-m", "map", "-m", "relstring")
    assert (code, err) == (0, "")
    assert out == _lines("map q1 1.0000\nrelstring q1 '21-0'\nmap all 1.0000")  # trec_eval 10.0's output


def test_run_summary_counts_a_query_with_a_null_value():
    per_query = pl.DataFrame(
        {"query_id": ["a", "b", "c"], "mrr": [1.0, 0.5, None], "ndcg": [1.0, None, None], "num_ret": [3, 3, 2]}
    )
    row = rf.run_summary(per_query).row(0, named=True)
    # b has a value: it counts in num_q and in every mean (trec_eval counts every evaluated query);
    # c has none (no judgments): left out
    assert row["num_q"] == 2 and row["num_ret"] == 6 and row["mrr"] == 0.75
    assert math.isnan(row["ndcg"])


# ----------------------------------------------------------------------------- startup: import only what is used

_LOADED = """
import contextlib, io, sys
from ragframe.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["trec", sys.argv[1], sys.argv[2]])
print(code, " ".join(sorted(sys.modules)))
"""


@pytest.mark.slow
def test_ragframe_trec_imports_only_what_it_uses():
    """A drop-in must start fast: no other command, no scipy, no statistics, no df.rf namespace (counted, not timed)."""
    data = ROOT / "ragframe" / "data"
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, str(data / "qrels.dl19-passage.txt"), str(data / "run.dl19.bm25.txt")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    code, modules = done.stdout.split(" ", 1)
    loaded = set(modules.split())
    assert code == "0" and "ragframe.cli.trec" in loaded
    heavy = {"scipy", "pandas", "matplotlib", "sklearn", "httpx", "ragframe.namespace", "ragframe.run.evaluator"}
    heavy |= {"ragframe.budgeting", "ragframe.io.streaming", "ragframe.stats.compare", "ragframe.stats.estimate"}
    other_commands = {f"ragframe.cli.{c}" for c in ("demo", "eval", "summary", "compare", "gate", "report", "estimate")}
    assert loaded & (heavy | other_commands) == set()


@pytest.mark.slow
def test_import_ragframe_is_lazy_and_complete():
    code = (
        "import sys, polars as pl, ragframe as rf\n"
        "assert 'scipy' not in sys.modules and 'ragframe.run' not in sys.modules\n"
        "assert all(getattr(rf, name) is not None for name in rf.__all__)\n"
        "import ragframe.retrieve\n"
        "assert callable(rf.retrieve) and rf.stats.__name__ == 'ragframe.stats'\n"
        "df = pl.DataFrame({'retrieved_ids': [['a', 'b']], 'relevant_ids': [['b']]})\n"
        "assert df.rf.evaluate(['mrr'])['mrr'].to_list() == [0.5]\n"
        "assert df.lazy().rf.score_retrieval(k=1, metrics=['mrr']).collect()['mrr'].to_list() == [0.5]\n"
        "assert pl.DataFrame.rf.__name__ == 'RagframeNamespace'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
