"""Differential fuzzing of ``ragframe trec`` against a trec_eval 10.0 binary built from source.

Draws random qrels/run/option cases (``tests/trec_fuzz.py``), runs the trec_eval binary and
``ragframe trec`` (in this process) on each, and compares exit codes and output byte for byte.
Differences that docs/metrics.md lists as trec_eval defects (the "Where ragframe and trec_eval
10.0 differ" table) are counted apart, by measure.

Build trec_eval (seconds; not part of the repository)::

    git clone https://github.com/usnistgov/trec_eval /tmp/trec_eval && make -C /tmp/trec_eval

Run::

    PYTHONPATH=$PWD python benchmarks/trec_differential.py --trec-eval /tmp/trec_eval/trec_eval --cases 2000
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from trec_fuzz import draw_case, ragframe_trec, write_case


def _documented_exit(qrels: str, te_stderr: str, rf_stderr: str) -> str | None:
    """The docs/metrics.md entry that explains an exit-code difference, or None."""
    if "not found in qrels" in te_stderr:
        return "judged query missing from the run without -c (trec_eval 10.0 exits 4)"
    grades: dict[str, list[int]] = collections.defaultdict(list)
    for line in qrels.splitlines():
        qid, _, _, grade = line.split()
        grades[qid].append(int(grade))
    if "Can't calculate" in te_stderr and any(max(g) < 0 for g in grades.values()):
        return "a query judged only -1 (trec_eval 10.0 exits 4)"
    if "two parameter lists" in rf_stderr:
        return "one measure named with two parameter lists (trec_eval keeps the first)"
    return None


def _documented_line(case, measure: str, te_line: str) -> str | None:
    """The docs/metrics.md entry (trec_eval 10.0 defects ragframe does not copy) that explains a line, or None."""
    if measure == "rbp" or measure.startswith("rbp_p="):
        return "rbp reads uninitialised min/max"
    if measure.startswith(("ndcg_", "dcg_", "ideal_dcg_", "ndcg_rel_", "Rndcg_", "G_")) and "=" in measure:
        gains = [float(pair.split("=")[1]) for pair in measure.split("_", 1)[1].split(",") if "=" in pair]
        if any(g != int(g) for g in gains):
            return "gains sorted by their difference truncated to an integer"
    if (
        measure == "num_rel"
        and "\tall\t" in te_line
        and "-c" in case.options
        and any(o.startswith("-l") and o != "-l1" for o in case.options)
    ):
        return "-c: num_rel's all line counts grades > 0 whatever -l says"
    if not case.run.strip():  # the garbage can hold a newline: every later line is shifted
        return "an empty run: runid read from uninitialised memory"
    return None


def _measure(line: str) -> str:
    return line.split("\t", 1)[0].strip()


LINES = [0]  # trec_eval output lines compared


def compare(binary: str, seed: int, folder: Path, *, infinite: bool) -> tuple[str, list[tuple[str, str, str]]]:
    """('same' | 'documented' | 'differ' | 'exit', the differing (measure, trec_eval line, ragframe line))."""
    case = draw_case(seed, infinite_scores=infinite)
    qrels, run = write_case(case, folder)
    argv = [*case.options, str(qrels), str(run)]
    te = subprocess.run([binary, *argv], capture_output=True, text=True, errors="replace")
    code, out, err = ragframe_trec(argv)
    te_code = te.returncode
    if te_code != 0 or code != 0:
        if (te_code == 0) == (code == 0):
            return "same", []
        documented = _documented_exit(case.qrels, te.stderr, err)
        return ("documented" if documented else "exit"), [
            (f"exit {documented or ''}", f"{te_code} {te.stderr.strip()[:80]}", f"{code} {err.strip()[:80]}")
        ]
    LINES[0] += te.stdout.count("\n")
    if te.stdout == out:
        return "same", []
    a, b = te.stdout.splitlines(), out.splitlines()
    diffs = [(_measure(x or y), x, y) for x, y in zip(a, b, strict=False) if x != y]
    if len(a) != len(b):
        diffs.append(("line count", str(len(a)), str(len(b))))
    if diffs and all(_documented_line(case, m, te_line) for m, te_line, _ in diffs):
        return "documented", [(f"{m} ({_documented_line(case, m, x)})", x, y) for m, x, y in diffs]
    return "differ", diffs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trec-eval", default=os.environ.get("RAGFRAME_TREC_EVAL", "/tmp/trec_eval/trec_eval"))
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--infinite", action="store_true", help="also draw inf and -inf scores")
    parser.add_argument("--show", type=int, default=3, help="examples printed per differing measure")
    args = parser.parse_args()
    outcomes: collections.Counter[str] = collections.Counter()
    by_measure: dict[str, list] = collections.defaultdict(list)
    lines = 0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.first_seed, args.first_seed + args.cases):
            outcome, diffs = compare(args.trec_eval, seed, Path(tmp), infinite=args.infinite)
            outcomes[outcome] += 1
            for measure, te_line, rf_line in diffs:
                by_measure[f"{outcome}:{measure}"].append((seed, te_line, rf_line))
            lines += len(diffs)
    seconds = time.perf_counter() - start
    print(f"{args.cases} cases in {seconds:.1f} s: {dict(outcomes)}; {LINES[0]} lines compared, {lines} differ")
    for key, examples in sorted(by_measure.items(), key=lambda kv: -len(kv[1])):
        print(f"{key}: {len(examples)} lines")
        for seed, te_line, rf_line in examples[: args.show]:
            print(f"    seed {seed}: trec_eval {te_line!r}  ragframe {rf_line!r}")
    return 0 if outcomes["differ"] == 0 and outcomes["exit"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
