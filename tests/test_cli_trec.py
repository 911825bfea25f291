"""``ragframe trec``: trec_eval's options and argument order, measure names and errors.

The whole upstream suite (byte for byte) is in ``tests/test_trec_suite.py``; this file checks
the command line around it: trec_eval's ``QRELS RESULTS`` order (and ragframe's former
``RUN QRELS`` order, recognised from the files, with a deprecation warning), measure lists,
parameters, options, and the errors (exit 2 for usage, 3 for input and for trec_eval
features ragframe does not implement).
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LOCAL_DATA

from ragframe.cli.main import main
from ragframe.exceptions import UnsupportedMeasureError
from ragframe.io.trec_eval_format import (
    SUPPORTED_MEASURES,
    MeasureNotImplementedError,
    output_measures,
    parse_measures,
)

TE = LOCAL_DATA / "trec_eval"
REPO = Path(__file__).resolve().parent.parent
QRELS, RUN = TE / "qrels.test", TE / "results.test"


def expected_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def run_cli(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main(["trec", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_former_run_qrels_order_still_works_with_a_warning(capsys):
    code, out, err = run_cli(capsys, RUN, QRELS, "-m", "all_trec", "-q")
    assert code == 0
    assert out.splitlines() == expected_lines(TE / "out.test.aq")
    assert "deprecated" in err and "QRELS then RESULTS" in err and err.count("\n") == 1


def test_trec_eval_order_has_no_warning(capsys):
    code, out, err = run_cli(capsys, QRELS, RUN)
    assert code == 0 and err == ""
    assert out.splitlines() == expected_lines(TE / "out.test")


@pytest.mark.slow
def test_entry_point_exit_codes():
    script = shutil.which("ragframe", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the ragframe entry point is not installed next to this Python")
    ok = subprocess.run([script, "trec", str(QRELS), str(RUN)], capture_output=True)
    assert ok.returncode == 0
    assert ok.stdout == (TE / "out.test").read_bytes()
    bad = subprocess.run([script, "trec", str(QRELS), str(RUN), "-m", "MAP"], capture_output=True)
    assert bad.returncode == 2
    missing_feature = subprocess.run([script, "trec", str(QRELS), str(RUN), "-m", "yaap"], capture_output=True)
    assert missing_feature.returncode == 3 and b"yaap" in missing_feature.stderr
    missing = subprocess.run([script, "trec", str(QRELS), "no-such-run.txt"], capture_output=True)
    assert missing.returncode == 3
    assert b"no-such-run.txt" in missing.stderr


def test_default_is_the_official_subset(capsys):
    _, default, _ = run_cli(capsys, QRELS, RUN)
    _, official, _ = run_cli(capsys, QRELS, RUN, "-m", "official")
    assert default == official
    names = [line.split("\t")[0].rstrip() for line in default.splitlines()]
    head = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank"]
    assert names[:10] == head
    assert names[10:21] == [f"iprec_at_recall_{p / 10:.2f}" for p in range(11)]
    assert names[21:] == [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]


def test_measures_print_in_trec_eval_order_whatever_the_flag_order(capsys):
    base = [QRELS, RUN]
    _, one, _ = run_cli(capsys, *base, "-m", "ndcg_cut.10", "-m", "map", "-m", "P.10,5", "-m", "num_q")
    _, two, _ = run_cli(capsys, *base, "-m", "num_q", "-m", "P.5,10", "-m", "map", "-m", "ndcg_cut.10")
    assert one == two
    assert [line.split("\t")[0].rstrip() for line in one.splitlines()] == ["num_q", "map", "P_5", "P_10", "ndcg_cut_10"]


def test_underscore_spelling_equals_dot_spelling(capsys):
    base = [QRELS, RUN, "-q"]
    _, dot, _ = run_cli(capsys, *base, "-m", "P.5,10", "-m", "ndcg_cut.10", "-m", "recall.100", "-m", "success.10")
    _, under, _ = run_cli(
        capsys, *base, "-m", "P_5", "-m", "P_10", "-m", "ndcg_cut_10", "-m", "recall_100", "-m", "success_10"
    )
    assert dot == under


def test_count_only_measures_and_summary_only_lines(capsys):
    code, out, _ = run_cli(capsys, QRELS, RUN, "-q", "-m", "num_q", "-m", "num_rel")
    assert code == 0
    assert out.splitlines() == [
        "num_rel               \t301\t474",
        "num_rel               \t302\t77",
        "num_rel               \t303\t10",
        "num_q                 \tall\t3",
        "num_rel               \tall\t561",
    ]


def test_unjudged_run_queries_are_skipped(capsys, tmp_path):
    run = tmp_path / "run.txt"
    extra = "999 Q0 FT941-1 1 5.0 STANDARD\n"  # a query with no judgments: trec_eval ignores it
    run.write_text(extra + (TE / "results.test").read_text(encoding="utf-8"), encoding="utf-8")
    _, out, _ = run_cli(capsys, QRELS, run, "-q", "-m", "all_trec")
    assert out.splitlines() == expected_lines(TE / "out.test.aq")


def test_runid_is_the_tag_of_the_last_line(capsys, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("301 Q0 a 1 2.0 first\n301 Q0 b 2 1.0 last\n", encoding="utf-8")
    code, out, _ = run_cli(capsys, QRELS, run, "-m", "runid")
    assert code == 0
    assert out == "runid                 \tall\tlast\n"


def test_gzip_inputs(capsys, tmp_path):
    run = tmp_path / "run.gz"
    run.write_bytes(gzip.compress((TE / "results.test").read_bytes()))
    qrels = tmp_path / "qrels.gz"
    qrels.write_bytes(gzip.compress(QRELS.read_bytes()))
    _, out, _ = run_cli(capsys, qrels, run)
    assert out.splitlines() == expected_lines(TE / "out.test")
    _, former, err = run_cli(capsys, run, qrels)  # the former order is recognised in gzip files too
    assert former == out and "deprecated" in err


@pytest.mark.parametrize(
    ("measure", "message"),
    [
        ("MAP", "'MAP' is not a trec_eval measure; measures: runid, num_q"),
        ("bm25", "is not a trec_eval measure"),
        ("map.5", "takes no parameters"),
        ("all_trec.5", "takes no parameters"),
        ("P.0", "not an integer >= 1"),
        ("P.five", "not an integer >= 1"),
        ("P.", "nothing after the '.'"),
        ("utility.1,2", "takes 4 coefficients"),
        ("utility.1,x,0,0", "'x' is not a number"),
        ("ndcg.1=3,2", "is not 'name=number'"),
        ("ndcg.-1=3", "relevance levels >= 0"),
        ("rbp.p=1.5", "persistence p=1.5 is not between 0 and 1"),
        ("11pt_avg.1.5", "recall points lie in [0, 1]"),
        ("iprec_at_recall.0.1,0.104", "print as the same name"),
    ],
)
def test_malformed_or_unknown_measure_is_a_usage_error(capsys, measure, message):
    code, out, err = run_cli(capsys, QRELS, RUN, "-m", measure)
    assert code == 2
    assert out == ""
    assert message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("measure", "message"),
    [
        ("prefs_simp", "measures need another rel_info format: prefs_simp (-R prefs or qrels_prefs)"),
        ("all_prefs", "prefs_avgjg (-R prefs or qrels_prefs), prefs_avgjg_Rnonrel (-R prefs or qrels_prefs)"),
        ("qrels_jg", "measures need another rel_info format: P_avgjg (-R qrels_jg), Rprec_mult_avgjg (-R qrels_jg)"),
        ("map_avgjg", "map_avgjg (-R qrels_jg)"),
        ("yaap", "'yaap' is a trec_eval measure that ragframe does not implement"),
    ],
)
def test_trec_eval_measure_ragframe_lacks_is_exit_3_naming_it(capsys, measure, message):
    code, out, err = run_cli(capsys, QRELS, RUN, "-m", measure)
    assert code == 3
    assert out == ""
    assert message in err
    assert err.count("\n") == 1


def test_all_trec_prints_every_measure_of_trec_eval(capsys):
    # trec_eval 10.0's all_trec summary has 99 lines: none may be dropped
    _, out, _ = run_cli(capsys, QRELS, RUN, "-m", "all_trec")
    assert len(out.splitlines()) == 99
    assert out == (TE / "out.test.a").read_text(encoding="utf-8")


def test_set_nickname_and_dcg_measures(capsys):
    code, out, err = run_cli(capsys, QRELS, RUN, "-m", "set", "-m", "dcg", "-m", "ideal_dcg")
    assert code == 0, err
    names = [line.split("\t")[0].rstrip() for line in out.splitlines()]
    assert names == [
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "dcg", "ideal_dcg",
        "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
    ]  # fmt: skip
    summary = {line.split("\t")[0].rstrip(): line.split("\t")[2] for line in out.splitlines()}
    a = {line.split("\t")[0].rstrip(): line.split("\t")[2] for line in expected_lines(TE / "out.test.a")}
    for name in ("utility", "set_P", "set_relative_P", "set_recall", "set_map", "set_F"):
        assert summary[name] == a[name], name


@pytest.mark.parametrize("flags", [["-M", "0"], ["-M", "many"], ["-l", "two"], ["-x"], ["-R", "trec"], ["-T", "x"]])
def test_bad_flag_is_a_usage_error(capsys, flags):
    code, out, _ = run_cli(capsys, QRELS, RUN, *flags)
    assert code == 2
    assert out == ""


def test_missing_zscores_file_is_an_input_error(capsys, tmp_path):
    code, out, err = run_cli(capsys, QRELS, RUN, "-Z", tmp_path / "none.txt")
    assert code == 3 and out == "" and "zscores file not found" in err
    bad = tmp_path / "z.txt"
    bad.write_text("301 map 0.1\n", encoding="utf-8")
    code, out, err = run_cli(capsys, QRELS, RUN, "-Z", bad)
    assert code == 3 and out == "" and "line 1 is not 'qid measure mean stddev'" in err


def test_zscores_missing_pairs_read_minus_a_million(capsys, tmp_path):
    z = tmp_path / "z.txt"
    z.write_text("301 num_rel 474 0\n302 num_rel 70 0\n301 map 0.0324 0.0\n302 map 0.5 0.25\n", encoding="utf-8")
    code, out, err = run_cli(capsys, QRELS, RUN, "-q", "-m", "map", "-m", "num_rel", "-Z", z)
    assert code == 0, err
    lines = out.splitlines()
    ap_302 = next(
        float(x.split("\t")[2]) for x in expected_lines(TE / "out.test.aq") if x.startswith("map ") and "\t302\t" in x
    )
    # stddev 0: 0 when the value equals the mean (301's 474 relevant), else -1000000, as when absent (303)
    assert lines[:6] == [
        "Znum_rel               \t301\t0.0000",
        "Zmap                   \t301\t-1000000.0000",  # 0.03238... is not 0.0324
        "Znum_rel               \t302\t-1000000.0000",
        lines[3],
        "Znum_rel               \t303\t-1000000.0000",
        "Zmap                   \t303\t-1000000.0000",
    ]
    z_302 = float(lines[3].split("\t")[2])
    assert abs(z_302 - (ap_302 - 0.5) / 0.25) < 0.0005 / 0.25  # out.test.aq's AP is rounded to 4 decimals
    assert lines[6:] == [
        "Znum_rel               \tall\t-2000000.0000",  # counts are summed
        f"Zmap                   \tall\t{(-2000000 + z_302) / 3:6.4f}",
    ]


def test_nosummary_and_judged_only(capsys, tmp_path):
    _, out, _ = run_cli(capsys, QRELS, RUN, "-q", "-n", "-m", "P.5")
    assert out.splitlines() == [line for line in expected_lines(TE / "out.test.aq") if line.startswith("P_5 ")][:3]
    # -J: unjudged documents leave the ranking before anything is computed (ranks close up)
    run = tmp_path / "run.txt"
    run.write_text("301 Q0 nowhere 1 9.0 r\n301 Q0 FBIS3-10082 2 8.0 r\n", encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("301 0 FBIS3-10082 1\n301 0 other 0\n", encoding="utf-8")
    _, plain, _ = run_cli(capsys, qrels, run, "-m", "recip_rank", "-m", "num_ret")
    _, judged, _ = run_cli(capsys, qrels, run, "-J", "-m", "recip_rank", "-m", "num_ret")
    assert "recip_rank            \tall\t0.5000" in plain and "num_ret               \tall\t2" in plain
    assert "recip_rank            \tall\t1.0000" in judged and "num_ret               \tall\t1" in judged


def test_number_of_documents_enters_utility(capsys):
    # utility = p1 a + p2 b + p3 c + p4 d, d = N + a - retrieved - R (out.test.aq: 301 retrieves 500, R 474, a 71)
    _, out, _ = run_cli(capsys, QRELS, RUN, "-q", "-N", "100000", "-m", "utility.0,0,0,1")
    first = out.splitlines()[0]
    assert first == f"utility_0,0,0,1       \t301\t{100000 + 71 - 500 - 474:.4f}"


def test_missing_argument_is_a_usage_error(capsys):
    code, _, err = run_cli(capsys, QRELS)
    assert code == 2
    assert "RESULTS" in err


@pytest.mark.parametrize("role", ["results", "qrels"])
def test_missing_file_is_an_input_error(capsys, tmp_path, role):
    missing = tmp_path / f"no-such-{role}.txt"
    argv = [QRELS, missing] if role == "results" else [missing, RUN]
    code, out, err = run_cli(capsys, *argv)
    assert code == 3
    assert out == ""
    assert err.startswith("ragframe: error: ")
    assert f"{role} file not found" in err and str(missing) in err


def test_directory_and_undecodable_files_are_input_errors(capsys, tmp_path):
    code, _, err = run_cli(capsys, tmp_path, RUN)
    assert code == 3 and "is a directory" in err
    binary = tmp_path / "run.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage\x80\n")
    code, _, err = run_cli(capsys, QRELS, binary)
    assert code == 3 and "cannot read results file" in err and str(binary) in err
    broken = tmp_path / "run.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00broken")
    code, _, err = run_cli(capsys, QRELS, broken)
    assert code == 3 and str(broken) in err


def test_two_runs_are_not_mistaken_for_the_former_order(capsys):
    # a run line has 6 fields, a qrels line exactly 4: a run given as QRELS is refused, not misread
    code, out, err = run_cli(capsys, RUN, RUN)
    assert code == 3 and out == ""
    assert "cannot read qrels file" in err and "malformed line 1" in err and "exactly 4" in err
    assert "QRELS then RESULTS" in err


def test_duplicate_run_line_is_an_input_error(capsys, tmp_path):
    lines = (TE / "results.test").read_text(encoding="utf-8").splitlines()
    run = tmp_path / "run.txt"
    run.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")  # line 1 again at the end
    code, out, err = run_cli(capsys, QRELS, run)
    assert code == 3 and out == ""
    qid, _, docno = lines[0].split()[:3]
    assert f"duplicate docno {docno!r} for query {qid!r} at line {len(lines) + 1}" in err
    assert "first at line 1" in err and str(run) in err
    assert err.count("\n") == 1


def test_bom_files_give_trec_eval_output(capsys, tmp_path):
    bom = b"\xef\xbb\xbf"
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_bytes(bom + (TE / "results.test").read_bytes())
    qrels.write_bytes(bom + (TE / "qrels.test").read_bytes())
    code, out, err = run_cli(capsys, qrels, run, "-q")
    assert code == 0, err
    _, plain, _ = run_cli(capsys, QRELS, RUN, "-q")
    assert out == plain  # the first query keeps its first document and its id (no "\ufeff301")
    first_qid = (TE / "results.test").read_text(encoding="utf-8").split()[0]
    assert f"num_ret               \t{first_qid}\t" in out


def test_no_common_query_is_an_input_error(capsys, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("999 Q0 a 1 1.0 tag\n", encoding="utf-8")
    code, out, err = run_cli(capsys, QRELS, run)
    assert code == 3
    assert out == ""
    assert "no queries with both results and relevance info" in err


def test_help_documents_every_flag(capsys):
    code = main(["trec", "--help"])
    text = capsys.readouterr().out
    assert code == 0
    for flag in ("QRELS", "RESULTS", "-m MEASURE", "-q", "-c", "-n", "-M N", "-l N", "-J", "-N N", "-R", "-T", "-Z"):
        assert flag in text
    for name in SUPPORTED_MEASURES:
        assert name in text
    assert "RUN then QRELS" in text and "deprecation" in text and "all_trec" in text and "exit codes" in text


def test_parse_measures_semantics():
    def names(specs):
        return [name for m in parse_measures(specs) for name in m.names]

    assert parse_measures(None) == parse_measures(["official"])
    # explicit cutoffs replace a nickname's defaults; several explicit lists merge
    assert names(["all_trec", "P.5"])[names(["all_trec", "P.5"]).index("P_5") + 1] == "relstring"
    assert names(["P.10", "P_5", "P.5,20"]) == ["P_5", "P_10", "P_20"]
    assert names(["ndcg_cut.23.4"]) == ["ndcg_cut_23"]  # trec_eval reads cutoffs as longs
    assert names(["success", "recall.7"]) == ["recall_7", "success_1", "success_5", "success_10"]
    assert names(["Rprec_mult.5.0,0.2,0.35"]) == ["Rprec_mult_0.20", "Rprec_mult_0.35", "Rprec_mult_5.00"]
    assert names(["11pt_avg..25,.5,.75", "ndcg.1=3,2=9,4=4.5"]) == ["11pt_avg_.25,.5,.75", "ndcg_1=3,2=9,4=4.5"]
    assert names(["relstring.20", "set_F.0.5", "rbp.p=0.8"]) == ["relstring_20", "set_F_0.5", "rbp_p=0.8"]
    assert [m.params for m in parse_measures(["utility.2,-1,0,0", "rbp.p=0.8"])] == [
        (2.0, -1.0, 0.0, 0.0),
        (("p", 0.8),),
    ]
    with pytest.raises(UnsupportedMeasureError, match="two parameter lists"):
        parse_measures(["utility.2,-1,0,0", "utility.1,-1,0,0"])
    with pytest.raises(MeasureNotImplementedError, match="yaap"):
        parse_measures(["yaap"])


def test_output_order_is_trec_eval_table_order():
    printed = [m.name for m in output_measures(parse_measures(["all_trec"]))]
    assert printed == [line.split("\t")[0].rstrip() for line in expected_lines(TE / "out.test.a")][:99] or printed[
        :2
    ] == ["runid", "num_q"]
    per_query = {line.split("\t")[0].rstrip() for line in expected_lines(TE / "out.test.aq")}
    assert "relstring" in per_query and "relstring" in printed  # per-query only: no 'all' line


# ----------------------------------------------------------------------------- several measures after one -m


def aq_lines(*names: str) -> list[str]:
    """trec_eval's -q output (out.test.aq, all_trec) restricted to the measures ``names``, in its order."""
    lines = (TE / "out.test.aq").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.split("\t")[0].rstrip() in names]


def test_readme_line_several_measures_after_one_m(capsys):
    # README: ragframe trec qrels.txt run.txt -m ndcg_cut.10 map -q
    code, out, err = run_cli(capsys, QRELS, RUN, "-m", "ndcg_cut.10", "map", "-q")
    assert code == 0, err
    want = aq_lines("map", "ndcg_cut_10")
    assert len(want) == 8  # 3 queries and 'all', two measures
    assert out.splitlines() == want
    _, one_each, _ = run_cli(capsys, QRELS, RUN, "-m", "ndcg_cut.10", "-m", "map", "-q")
    assert out == one_each


@pytest.mark.slow
def test_readme_line_in_a_real_process():
    argv = ["trec", str(QRELS), str(RUN), "-m", "ndcg_cut.10", "map", "-q"]
    done = subprocess.run([sys.executable, "-m", "ragframe.cli", *argv], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == aq_lines("map", "ndcg_cut_10")


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["-m", "map", "{qrels}", "{run}"], ["map"]),  # trec_eval's habit: options first
        (["-m", "P.5", "map", "{qrels}", "{run}"], ["map", "P_5"]),
        (["-m", "P.5", "map", "{qrels}", "-q", "{run}"], ["map", "P_5"]),
        (["{qrels}", "-m", "P_5", "map", "{run}", "-q"], ["map", "P_5"]),
        (["{qrels}", "{run}", "--measure", "map", "P.5", "-q"], ["map", "P_5"]),
        (["{qrels}", "{run}", "--measure=map", "P.5", "-q"], ["map", "P_5"]),
        (["{qrels}", "{run}", "-mmap", "P.5", "-q"], ["map", "P_5"]),
        (["{qrels}", "{run}", "-q", "-m", "map", "-m", "P.5"], ["map", "P_5"]),
        (["{qrels}", "{run}", "-m", "num_q", "map", "-c", "-m", "ndcg_cut.10"], ["num_q", "map", "ndcg_cut_10"]),
    ],
)
def test_measure_lists_and_files_in_any_order(capsys, argv, names):
    argv = [a.format(run=TE / "results.test", qrels=TE / "qrels.test") for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    want = aq_lines(*names)
    if "-q" not in argv:
        want = [line for line in want if "\tall\t" in line]
    assert out.splitlines() == want


def test_measure_ragframe_lacks_in_a_list_is_exit_3(capsys):
    code, out, err = run_cli(capsys, QRELS, RUN, "-m", "map", "yaap")
    assert code == 3 and out == ""
    assert "measure 'yaap' is a trec_eval measure that ragframe does not implement" in err
    code, _, err = run_cli(capsys, QRELS, RUN, "-m", "yaap", "map")
    assert code == 3 and "'yaap'" in err


def test_a_file_named_like_a_measure_ends_the_list(capsys, tmp_path, monkeypatch):
    # a file called 'map' after -m's value is the QRELS argument, not a measure
    monkeypatch.chdir(tmp_path)
    shutil.copy(TE / "qrels.test", tmp_path / "map")
    code, out, err = run_cli(capsys, "-m", "P.5", "map", RUN)
    assert code == 0, err
    assert out.splitlines() == [line for line in aq_lines("P_5") if "\tall\t" in line]
    code, _, err = run_cli(capsys, "-m", "P.5", "map", "-q", RUN)
    assert code == 0, err


def test_meas_params_prints_every_requested_cutoff(capsys):
    """The measure list is written out here, not derived from what ragframe supports (which would hide a drop)."""
    flags = ["-q", "-m", "P.5,7,3", "-m", "recall.20,2000", "-m", "ndcg_cut.10,20,23.4", "-m", "success.2,5,20"]
    code, out, err = run_cli(capsys, QRELS, RUN, *flags)
    assert code == 0, err
    names = list(dict.fromkeys(line.split("\t")[0].rstrip() for line in out.splitlines()))
    assert names == [
        "P_3", "P_5", "P_7", "recall_20", "recall_2000", "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23",
        "success_2", "success_5", "success_20",
    ]  # fmt: skip
    summary = {line.split("\t")[0].rstrip(): line.split("\t")[2] for line in out.splitlines() if "\tall\t" in line}
    # trec_eval's own numbers (tests/data/trec_eval/out.test.meas_params)
    assert (summary["P_7"], summary["recall_2000"], summary["ndcg_cut_23"]) == ("0.3333", "0.5997", "0.3429")


# ----------------------------------------------------------------------------- judgment groups (-R qrels_jg)


def test_judge_groups_average_each_groups_value(capsys, tmp_path):
    """Group u1 judges a relevant, u2 judges b and c: map 1 and (1/2 + 2/3)/2, averaged; P_5 1/5 and 2/5."""
    qrels = tmp_path / "qrels.jg"
    qrels.write_text("q u1 a 1\nq u2 b 1\nq u2 c 1\nq u2 a 0\n", encoding="utf-8")
    run = tmp_path / "run"
    run.write_text("q Q0 a 1 3.0 t\nq Q0 b 2 2.0 t\nq Q0 c 3 1.0 t\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "-R", "qrels_jg", "-m", "map_avgjg", "-m", "P_avgjg.5", qrels, run)
    assert code == 0, err
    assert out.splitlines() == [
        f"map_avgjg             \tall\t{(1 + (1 / 2 + 2 / 3) / 2) / 2:6.4f}",
        f"P_avgjg_5             \tall\t{(1 / 5 + 2 / 5) / 2:6.4f}",
    ]
    assert out.splitlines()[0].endswith("0.7917")


def test_one_judge_group_is_the_plain_measure(capsys):
    """qrels.test read as judgment groups (one group, '0', per query) gives map, P and Rprec_mult."""
    code, grouped, err = run_cli(capsys, "-R", "qrels_jg", "-m", "qrels_jg", "-q", QRELS, RUN)
    assert code == 0, err
    measures = ["-m", "map", "-m", "P", "-m", "Rprec_mult", "-m", "runid", "-m", "num_q"]
    _, plain, _ = run_cli(capsys, *measures, "-q", QRELS, RUN)

    def cells(text: str) -> list[tuple[str, ...]]:
        rows = [line.split("\t") for line in text.splitlines()]
        return sorted((name.strip().replace("_avgjg", ""), qid, value) for name, qid, value in rows)

    assert cells(grouped) == cells(plain)
    assert len(grouped.splitlines()) == 3 * 20 + 22


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-R", "qrels_jg", "-m", "map"], "-R qrels_jg: measures ['map'] need -R qrels"),
        (["-R", "qrels_jg"], "-R qrels_jg: measures ['num_ret'"),  # the default, official, is not a group measure
        (["-m", "P_avgjg.5"], "measures need another rel_info format: P_avgjg (-R qrels_jg)"),
        (["-R", "prefs", "-m", "map"], "-R prefs: measures ['map'] need -R qrels"),
        (["-R", "qrels_prefs", "-m", "all_trec"], "-R qrels_prefs: measures ['num_ret', 'num_rel'"),
    ],
)
def test_judge_group_measures_and_format_go_together(capsys, flags, message):
    code, out, err = run_cli(capsys, *flags, QRELS, RUN)
    assert (code, out) == (3, "")
    assert message in err and err.count("\n") == 1
