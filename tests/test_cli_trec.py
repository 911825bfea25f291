"""``ragframe trec``: trec_eval's output, byte for byte, for the measures ragframe implements.

The expected outputs are trec_eval 10.0's own test files (``tests/data/trec_eval``; which
flags produced which file is in the upstream README). Each expected file is filtered to the
measures ragframe supports (names mapped by :mod:`ragframe.io.trec_eval_format`, independently of
what the command prints) and must equal the command's output line for line.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LOCAL_DATA, shared_path
from trec_names import ragframe_name

from ragframe.cli.main import main
from ragframe.io.trec_eval_format import (
    SUPPORTED_MEASURES,
    UnsupportedMeasureError,
    output_measures,
    parse_measures,
    ragframe_column,
)

TE = LOCAL_DATA / "trec_eval"
REPO = Path(__file__).resolve().parent.parent

CASES = [
    # expected output, qrels, results, trec_eval flags (as in the upstream Makefile, minus unsupported measures)
    ("out.test", "qrels.test", "results.test", []),
    ("out.test", "qrels.test.with-comments", "results.test", []),
    ("out.test.a", "qrels.test", "results.test", ["-m", "all_trec"]),
    ("out.test.aq", "qrels.test", "results.test", ["-m", "all_trec", "-q"]),
    ("out.test.aqc", "qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c"]),
    ("out.test.aqcM", "qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c", "-M100"]),
    ("out.test.aql", "qrels.rel_level", "results.test", ["-m", "all_trec", "-q", "-l2"]),
    (
        "out.test.meas_params",
        "qrels.test",
        "results.test",
        ["-q", "-m", "P.5,7,3", "-m", "recall.20,2000", "-m", "ndcg_cut.10,20,23.4", "-m", "success.2,5,20"],
    ),
]


def supported(name: str) -> bool:
    return name == "runid" or ragframe_column(name) is not None


def expected_lines(path: Path) -> list[str]:
    """trec_eval's output lines whose measure ragframe implements, in trec_eval's order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if supported(line.split("\t")[0].rstrip())]


def run_cli(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main(["trec", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("expected", "qrels", "results", "flags"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_output_equals_trec_eval(capsys, expected, qrels, results, flags):
    code, out, err = run_cli(capsys, TE / results, TE / qrels, *flags)
    assert code == 0, err
    want = expected_lines(TE / expected)
    assert len(want) >= 17  # runid, num_q, 3 counts, map, Rprec, recip_rank and 9 P_k at least
    assert out.splitlines() == want
    assert out.endswith("\n") and err == ""


def test_comment_qrels_rag24(capsys):
    # 31 judged RAG 2024 topics ('#' inside doc ids, graded qrels); the run has 301 topics
    folder = shared_path("trec_eval")
    code, out, _ = run_cli(capsys, folder / "results.comment.test", folder / "qrels.comment.test")
    assert code == 0
    assert out.splitlines() == expected_lines(folder / "out.comment.test")
    assert "num_q                 \tall\t31\n" in out


def test_subprocess_byte_exact(tmp_path):
    want = "".join(line + "\n" for line in expected_lines(TE / "out.test.aq")).encode()
    args = ["trec", str(TE / "results.test"), str(TE / "qrels.test"), "-q", "-m", "all_trec"]
    done = subprocess.run([sys.executable, "-m", "ragframe.cli", *args], capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == want
    assert b"P_10                  \t301\t0.2000\n" in done.stdout  # trec_eval's %-22s padding


def test_entry_point_exit_codes():
    script = shutil.which("ragframe", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the ragframe entry point is not installed next to this Python")
    ok = subprocess.run([script, "trec", str(TE / "results.test"), str(TE / "qrels.test")], capture_output=True)
    assert ok.returncode == 0
    assert ok.stdout.decode().splitlines() == expected_lines(TE / "out.test")
    bad = subprocess.run([script, "trec", str(TE / "results.test"), str(TE / "qrels.test"), "-m", "bpref"])
    assert bad.returncode == 2
    missing = subprocess.run([script, "trec", "no-such-run.txt", str(TE / "qrels.test")], capture_output=True)
    assert missing.returncode == 3
    assert b"no-such-run.txt" in missing.stderr


def test_default_is_the_official_subset(capsys):
    _, default, _ = run_cli(capsys, TE / "results.test", TE / "qrels.test")
    _, official, _ = run_cli(capsys, TE / "results.test", TE / "qrels.test", "-m", "official")
    assert default == official
    names = [line.split("\t")[0].rstrip() for line in default.splitlines()]
    assert names[:8] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank"]
    assert names[8:] == [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]


def test_measures_print_in_trec_eval_order_whatever_the_flag_order(capsys):
    base = [TE / "results.test", TE / "qrels.test"]
    _, one, _ = run_cli(capsys, *base, "-m", "ndcg_cut.10", "-m", "map", "-m", "P.10,5", "-m", "num_q")
    _, two, _ = run_cli(capsys, *base, "-m", "num_q", "-m", "P.5,10", "-m", "map", "-m", "ndcg_cut.10")
    assert one == two
    assert [line.split("\t")[0].rstrip() for line in one.splitlines()] == ["num_q", "map", "P_5", "P_10", "ndcg_cut_10"]


def test_underscore_spelling_equals_dot_spelling(capsys):
    base = [TE / "results.test", TE / "qrels.test", "-q"]
    _, dot, _ = run_cli(capsys, *base, "-m", "P.5,10", "-m", "ndcg_cut.10", "-m", "recall.100", "-m", "success.10")
    _, under, _ = run_cli(
        capsys, *base, "-m", "P_5", "-m", "P_10", "-m", "ndcg_cut_10", "-m", "recall_100", "-m", "success_10"
    )
    assert dot == under


def test_count_only_measures_and_summary_only_lines(capsys):
    code, out, _ = run_cli(capsys, TE / "results.test", TE / "qrels.test", "-q", "-m", "num_q", "-m", "num_rel")
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
    _, out, _ = run_cli(capsys, run, TE / "qrels.test", "-q", "-m", "all_trec")
    assert out.splitlines() == expected_lines(TE / "out.test.aq")


def test_runid_is_the_tag_of_the_last_line(capsys, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("301 Q0 a 1 2.0 first\n301 Q0 b 2 1.0 last\n", encoding="utf-8")
    code, out, _ = run_cli(capsys, run, TE / "qrels.test", "-m", "runid")
    assert code == 0
    assert out == "runid                 \tall\tlast\n"


def test_gzip_inputs(capsys, tmp_path):
    run = tmp_path / "run.gz"
    run.write_bytes(gzip.compress((TE / "results.test").read_bytes()))
    _, out, _ = run_cli(capsys, run, TE / "qrels.test")
    assert out.splitlines() == expected_lines(TE / "out.test")


@pytest.mark.parametrize(
    ("measure", "message"),
    [
        ("bpref", "'bpref' is not implemented by ragframe; supported: runid, num_q"),
        ("gm_map", "is not implemented by ragframe; supported: "),
        ("iprec_at_recall..10,.20", "is not implemented by ragframe; supported: "),
        ("map_cut.10", "is not implemented by ragframe; supported: "),
        ("set", "is not implemented by ragframe; supported: "),
        ("MAP", "is not a trec_eval measure; supported: "),
        ("ndcg.1=3,2=9,4=4.5", "custom gain map is not supported"),
        ("map.5", "takes no parameters"),
        ("all_trec.5", "takes no parameters"),
        ("P.0", "not an integer >= 1"),
        ("P.five", "not an integer >= 1"),
        ("P.", "not an integer >= 1"),
    ],
)
def test_unsupported_measure_is_a_usage_error(capsys, measure, message):
    code, out, err = run_cli(capsys, TE / "results.test", TE / "qrels.test", "-m", measure)
    assert code == 2
    assert out == ""
    assert message in err


def test_full_meas_params_command_is_rejected(capsys):
    # the upstream command for out.test.meas_params asks for measures ragframe does not have
    argv = [TE / "results.test", TE / "qrels.test", "-q", "-m", "Rprec_mult.5.0,0.2,0.35", "-m", "P.5,7,3"]
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert "Rprec_mult" in err


@pytest.mark.parametrize("flags", [["-Z", "zscores_file"], ["-M", "0"], ["-M", "many"], ["-l", "two"], ["-x"]])
def test_bad_flag_is_a_usage_error(capsys, flags):
    code, out, _ = run_cli(capsys, TE / "results.test", TE / "qrels.test", *flags)
    assert code == 2
    assert out == ""


def test_missing_argument_is_a_usage_error(capsys):
    code, _, err = run_cli(capsys, TE / "results.test")
    assert code == 2
    assert "QRELS" in err


@pytest.mark.parametrize("role", ["run", "qrels"])
def test_missing_file_is_an_input_error(capsys, tmp_path, role):
    missing = tmp_path / f"no-such-{role}.txt"
    argv = [missing, TE / "qrels.test"] if role == "run" else [TE / "results.test", missing]
    code, out, err = run_cli(capsys, *argv)
    assert code == 3
    assert out == ""
    assert err.startswith("ragframe: error: ")
    assert f"{role} file not found" in err and str(missing) in err


def test_directory_and_undecodable_files_are_input_errors(capsys, tmp_path):
    code, _, err = run_cli(capsys, TE / "results.test", tmp_path)
    assert code == 3 and "is a directory" in err
    binary = tmp_path / "run.bin"
    binary.write_bytes(b"\xff\xfe\x00garbage\x80\n")
    code, _, err = run_cli(capsys, binary, TE / "qrels.test")
    assert code == 3 and "cannot read run file" in err and str(binary) in err
    broken = tmp_path / "run.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00broken")
    code, _, err = run_cli(capsys, broken, TE / "qrels.test")
    assert code == 3 and str(broken) in err


def test_swapped_arguments_get_a_hint(capsys):
    code, out, err = run_cli(capsys, TE / "qrels.test", TE / "results.test")
    assert code == 3
    assert out == ""
    assert "malformed line 1" in err and "RUN then QRELS" in err


def test_run_given_as_qrels_is_malformed(capsys):
    # a run line has 6 fields, a qrels line exactly 4: the run read as qrels is refused, not misread
    code, out, err = run_cli(capsys, TE / "results.test", TE / "results.test")
    assert code == 3 and out == ""
    assert "cannot read qrels file" in err and "malformed line 1" in err and "exactly 4" in err


def test_duplicate_run_line_is_an_input_error(capsys, tmp_path):
    lines = (TE / "results.test").read_text(encoding="utf-8").splitlines()
    run = tmp_path / "run.txt"
    run.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")  # line 1 again at the end
    code, out, err = run_cli(capsys, run, TE / "qrels.test")
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
    code, out, err = run_cli(capsys, run, qrels, "-q")
    assert code == 0, err
    _, plain, _ = run_cli(capsys, TE / "results.test", TE / "qrels.test", "-q")
    assert out == plain  # the first query keeps its first document and its id (no "\ufeff301")
    first_qid = (TE / "results.test").read_text(encoding="utf-8").split()[0]
    assert f"num_ret               \t{first_qid}\t" in out


def test_no_common_query_is_an_input_error(capsys, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("999 Q0 a 1 1.0 tag\n", encoding="utf-8")
    code, out, err = run_cli(capsys, run, TE / "qrels.test")
    assert code == 3
    assert out == ""
    assert "no queries with both results and relevance info" in err


def test_help_documents_every_flag(capsys):
    code = main(["trec", "--help"])
    text = capsys.readouterr().out
    assert code == 0
    for flag in ("RUN", "QRELS", "-m MEASURE", "-q", "-c", "-M N", "-l N", "--help"):
        assert flag in text
    for name in SUPPORTED_MEASURES:
        assert name in text
    assert "RUN then QRELS" in text and "all_trec" in text and "exit codes" in text


def test_parse_measures_semantics():
    assert parse_measures(None) == parse_measures(["official"])
    # explicit cutoffs replace a nickname's defaults; several explicit lists merge
    assert parse_measures(["all_trec", "P.5"])["P"] == (5,)
    assert parse_measures(["P.10", "P_5", "P.5,20"])["P"] == (5, 10, 20)
    assert parse_measures(["ndcg_cut.23.4"])["ndcg_cut"] == (23,)  # trec_eval reads cutoffs with atol
    assert list(parse_measures(["success", "runid", "recall.7"])) == ["runid", "recall", "success"]
    assert parse_measures(["success"])["success"] == (1, 5, 10)
    with pytest.raises(UnsupportedMeasureError, match="supported: "):
        parse_measures(["bpref"])


def test_names_agree_with_the_conformance_mapping():
    # the module duplicates tests/trec_names.py's mapping: they must not drift apart
    all_trec = {line.split("\t")[0].rstrip() for line in (TE / "out.test.a").read_text().splitlines()}
    params = {line.split("\t")[0].rstrip() for line in (TE / "out.test.meas_params").read_text().splitlines()}
    for name in sorted(all_trec | params):
        assert ragframe_column(name) == ragframe_name(name), name
    printed = [m.name for m in output_measures(parse_measures(["all_trec"]))]
    assert set(printed) == {name for name in all_trec if supported(name)}


# ----------------------------------------------------------------------------- several measures after one -m


def aq_lines(*names: str) -> list[str]:
    """trec_eval's -q output (out.test.aq, all_trec) restricted to the measures ``names``, in its order."""
    lines = (TE / "out.test.aq").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.split("\t")[0].rstrip() in names]


def test_readme_line_several_measures_after_one_m(capsys):
    # README: ragframe trec run.txt qrels.txt -m ndcg_cut.10 map -q
    code, out, err = run_cli(capsys, TE / "results.test", TE / "qrels.test", "-m", "ndcg_cut.10", "map", "-q")
    assert code == 0, err
    want = aq_lines("map", "ndcg_cut_10")
    assert len(want) == 8  # 3 queries and 'all', two measures
    assert out.splitlines() == want
    _, one_each, _ = run_cli(capsys, TE / "results.test", TE / "qrels.test", "-m", "ndcg_cut.10", "-m", "map", "-q")
    assert out == one_each


def test_readme_line_in_a_real_process():
    argv = ["trec", str(TE / "results.test"), str(TE / "qrels.test"), "-m", "ndcg_cut.10", "map", "-q"]
    done = subprocess.run([sys.executable, "-m", "ragframe.cli", *argv], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == aq_lines("map", "ndcg_cut_10")


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["-m", "map", "{run}", "{qrels}"], ["map"]),  # trec_eval's habit: options first
        (["-m", "P.5", "map", "{run}", "{qrels}"], ["map", "P_5"]),
        (["-m", "P.5", "map", "{run}", "-q", "{qrels}"], ["map", "P_5"]),
        (["{run}", "-m", "P_5", "map", "{qrels}", "-q"], ["map", "P_5"]),
        (["{run}", "{qrels}", "--measure", "map", "P.5", "-q"], ["map", "P_5"]),
        (["{run}", "{qrels}", "--measure=map", "P.5", "-q"], ["map", "P_5"]),
        (["{run}", "{qrels}", "-mmap", "P.5", "-q"], ["map", "P_5"]),
        (["{run}", "{qrels}", "-q", "-m", "map", "-m", "P.5"], ["map", "P_5"]),
        (["{run}", "{qrels}", "-m", "num_q", "map", "-c", "-m", "ndcg_cut.10"], ["num_q", "map", "ndcg_cut_10"]),
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


def test_unsupported_measure_in_a_list_is_a_usage_error(capsys):
    code, out, err = run_cli(capsys, TE / "results.test", TE / "qrels.test", "-m", "map", "bpref")
    assert code == 2 and out == ""
    assert "usage: ragframe trec" in err and "measure 'bpref' is not implemented by ragframe" in err
    code, _, err = run_cli(capsys, TE / "results.test", TE / "qrels.test", "-m", "bpref", "map")
    assert code == 2 and "measure 'bpref' is not implemented by ragframe" in err


def test_a_file_named_like_a_measure_ends_the_list(capsys, tmp_path, monkeypatch):
    # a file called 'map' after -m's value is the QRELS argument, not a measure
    monkeypatch.chdir(tmp_path)
    shutil.copy(TE / "qrels.test", tmp_path / "map")
    code, out, err = run_cli(capsys, "-m", "P.5", TE / "results.test", "map")
    assert code == 0, err
    assert out.splitlines() == [line for line in aq_lines("P_5") if "\tall\t" in line]
    code, _, err = run_cli(capsys, TE / "results.test", "-m", "P.5", "map")
    assert code == 0, err


def test_meas_params_prints_every_requested_cutoff(capsys):
    """The measure list is written out here, not derived from what ragframe supports (which would hide a drop)."""
    flags = ["-q", "-m", "P.5,7,3", "-m", "recall.20,2000", "-m", "ndcg_cut.10,20,23.4", "-m", "success.2,5,20"]
    code, out, err = run_cli(capsys, TE / "results.test", TE / "qrels.test", *flags)
    assert code == 0, err
    names = list(dict.fromkeys(line.split("\t")[0].rstrip() for line in out.splitlines()))
    assert names == [
        "P_3", "P_5", "P_7", "recall_20", "recall_2000", "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23",
        "success_2", "success_5", "success_20",
    ]  # fmt: skip
    summary = {line.split("\t")[0].rstrip(): line.split("\t")[2] for line in out.splitlines() if "\tall\t" in line}
    # trec_eval's own numbers (tests/data/trec_eval/out.test.meas_params)
    assert (summary["P_7"], summary["recall_2000"], summary["ndcg_cut_23"]) == ("0.3333", "0.5997", "0.3429")
