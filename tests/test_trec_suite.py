"""trec_eval 10.0's own test suite: ``ragframe trec`` run with each ``quicktest`` command of its Makefile.

The fixtures are trec_eval's test files (``tests/data/trec_eval``, NIST notice kept). Each
case is the upstream command (qrels, results, options) and its expected output, compared
byte for byte: all 13 (the judge-group and preference formats included). A measure ragframe
does not compute (``yaap``) must fail with exit code 3 naming it, never print a partial output.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import LOCAL_DATA, shared_path

from ragframe.cli.main import main

TE = LOCAL_DATA / "trec_eval"
REPO = Path(__file__).resolve().parent.parent

MEAS_PARAMS = [
    "-q",
    "-m", "iprec_at_recall..10,.20,.25,.75,.50",
    "-m", "P.5,7,3",
    "-m", "recall.20,2000",
    "-m", "Rprec_mult.5.0,0.2,0.35",
    "-m", "utility.2,-1,0,0",
    "-m", "11pt_avg..25,.5,.75",
    "-m", "ndcg.1=3,2=9,4=4.5",
    "-m", "ndcg_cut.10,20,23.4",
    "-m", "success.2,5,20",
]  # fmt: skip

SUITE = [
    # expected output, qrels, results, trec_eval options (the upstream Makefile's quicktest commands)
    ("out.test", "qrels.test", "results.test", []),
    ("out.test", "qrels.test.with-comments", "results.test", []),
    ("out.comment.test", "qrels.comment.test", "results.comment.test.gz", []),
    ("out.test.a", "qrels.test", "results.test", ["-m", "all_trec"]),
    ("out.test.aq", "qrels.test", "results.test", ["-m", "all_trec", "-q"]),
    ("out.test.aqc", "qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c"]),
    ("out.test.aqcM", "qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c", "-M100"]),
    ("out.test.aql", "qrels.rel_level", "results.test", ["-m", "all_trec", "-m", "relstring.20", "-q", "-l2"]),
    ("out.test.meas_params", "qrels.test", "results.test", MEAS_PARAMS),
    ("out.test.aqZ", "qrels.test", "results.test", ["-q", "-m", "all_trec", "-Z", "{TE}/zscores_file"]),
    ("out.test.qrels_jg", "qrels.123", "results.test", ["-m", "qrels_jg", "-q", "-R", "qrels_jg"]),
    ("out.test.qrels_jg", "qrels.comments.123", "results.test", ["-m", "qrels_jg", "-q", "-R", "qrels_jg"]),
    ("out.test.prefs", "prefs.test", "prefs.results.test", ["-m", "all_prefs", "-q", "-R", "prefs"]),
    ("out.test.prefs", "prefs.comment.test", "prefs.results.test", ["-m", "all_prefs", "-q", "-R", "prefs"]),
    ("out.test.qrels_prefs", "qrels.test", "results.test", ["-m", "all_prefs", "-q", "-R", "qrels_prefs"]),
]
NOT_IMPLEMENTED = [
    # trec_eval measures ragframe does not compute: refused, naming them
    (["-m", "yaap", "-q"], "yaap"),
]


def run_trec(capsys, *argv) -> tuple[int, str, str]:
    code = main(["trec", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _flags(flags: list[str]) -> list[str]:
    return [flag.replace("{TE}", str(TE)) for flag in flags]


@pytest.mark.parametrize(("expected", "qrels", "results", "flags"), SUITE, ids=[f"{c[0]}-{c[1]}" for c in SUITE])
def test_suite_output_byte_for_byte(capsys, expected, qrels, results, flags):
    code, out, err = run_trec(capsys, *_flags(flags), TE / qrels, TE / results)
    assert code == 0, err
    assert err == ""
    want = (TE / expected).read_text(encoding="utf-8")
    assert out.splitlines() == want.splitlines()  # a readable diff first
    assert out == want


@pytest.mark.slow
def test_suite_in_a_real_process_is_byte_exact():
    argv = ["trec", "-q", "-m", "all_trec", str(TE / "qrels.test"), str(TE / "results.test")]
    done = subprocess.run([sys.executable, "-m", "ragframe.cli", *argv], capture_output=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == (TE / "out.test.aq").read_bytes()


@pytest.mark.parametrize(("flags", "named"), NOT_IMPLEMENTED, ids=[" ".join(c[0]) for c in NOT_IMPLEMENTED])
def test_measures_ragframe_lacks_are_refused(capsys, flags, named):
    code, out, err = run_trec(capsys, *flags, TE / "qrels.test", TE / "results.test")
    assert code == 3
    assert out == ""
    assert named in err and "not implement" in err
    assert err.count("\n") == 1


def test_fixtures_match_the_shared_upstream_copy():
    """The compressed RAG24 run is upstream's file; the other copies are byte for byte."""
    import gzip

    folder = shared_path("trec_eval")
    assert (
        gzip.decompress((TE / "results.comment.test.gz").read_bytes()) == (folder / "results.comment.test").read_bytes()
    )
    names = ("out.comment.test", "qrels.comment.test", "out.test.aqZ", "zscores_file", "out.test.aq", "qrels.123")
    prefs = ("prefs.test", "prefs.comment.test", "prefs.results.test", "out.test.prefs", "out.test.qrels_prefs")
    for name in (*names, "qrels.comments.123", "out.test.qrels_jg", *prefs):
        assert (TE / name).read_bytes() == (folder / name).read_bytes(), name
