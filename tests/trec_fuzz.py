"""Random trec_eval cases (qrels, run, options) for differential tests of ``ragframe trec``.

Each case is drawn from one seed: a few queries with graded judgments (-1 .. 4, some queries
without a relevant document, some judged all -1), a run over a subset of them (some judged
queries missing, some run queries unjudged, tied scores, unjudged documents), and trec_eval
options (``-q -c -J -n -M -l -N`` and a measure list, parameterised names included). The
same case text feeds trec_eval 10.0 (``benchmarks/trec_differential.py``), pytrec_eval and
``ragframe trec`` (``tests/test_trec_fuzz.py``).
"""

from __future__ import annotations

import contextlib
import io
import random
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Case", "draw_case", "ragframe_trec", "write_case"]

#: Measure specifications a case draws from (trec_eval spellings, parameterised ones included).
MEASURE_SPECS = (
    "all_trec",
    "official",
    "set",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "P.1,3,5",
    "recall.2,4",
    "iprec_at_recall..25,.5,1",
    "11pt_avg",
    "11pt_avg..25,.5,.75",
    "Rprec_mult.0.5,2",
    "utility",
    "utility.2,-1,0.5,0",
    "utility.1,-1,-1,0.01",
    "ndcg",
    "ndcg.1=3,2=9",
    "ndcg.1=0.5,2=0.7",
    "ndcg_cut.3,5",
    "ndcg_rel",
    "Rndcg",
    "G",
    "binG",
    "infAP",
    "gm_bpref",
    "success.1,2",
    "map_cut.3",
    "relative_P.2,5",
    "relstring",
    "relstring.5",
    "rbp",
    "rbp.p=0.5",
    "rbp_resid",
    "rbp_resid.p=0.8",
    "unj",
    "set_F.0.5",
    "num_rel",
    "num_ret",
    "num_rel_ret",
    "num_nonrel_judged_ret",
)


@dataclass(frozen=True)
class Case:
    """One drawn case: the files' text and the option words (without the two file names)."""

    seed: int
    qrels: str
    run: str
    options: tuple[str, ...]


def draw_case(seed: int, *, measures: tuple[str, ...] = MEASURE_SPECS, infinite_scores: bool = False) -> Case:
    """The case of ``seed`` (the same text on every platform: Python's ``random.Random``)."""
    rng = random.Random(seed)
    n_queries = rng.randint(1, 5)
    qids = sorted({f"q{rng.randint(1, 9)}" for _ in range(n_queries)})
    grades = (-1, 0, 0, 0, 1, 1, 2, 3, 4)
    qrels_lines, run_lines = [], []
    for qid in qids:
        pool = rng.randint(1, 12)
        style = rng.random()
        for d in range(pool):
            if style < 0.03:
                grade = -1  # a query judged only "unjudged"
            elif style < 0.2:
                grade = rng.choice((-1, 0))  # no relevant document
            else:
                grade = rng.choice(grades)
            qrels_lines.append(f"{qid} 0 d{d} {grade}")
    options: list[str] = []
    for flag, chance in (("-q", 0.6), ("-c", 0.4), ("-J", 0.15), ("-n", 0.1)):
        if rng.random() < chance:
            options.append(flag)
    # a judged query missing from the run: trec_eval 10.0 exits 4 on it without -c (docs/metrics.md)
    keep = 0.7 if "-c" in options or rng.random() < 0.05 else 1.0
    run_qids = [q for q in qids if rng.random() < keep] + [f"x{rng.randint(1, 3)}"] * (rng.random() < 0.2)
    tag = f"run{rng.randint(0, 9)}"
    for qid in sorted(set(run_qids)):
        docs = rng.sample(range(16), rng.randint(1, 14))
        for rank, d in enumerate(docs):
            score = round(rng.uniform(0, 3), rng.choice((0, 1, 3)))  # ties on purpose
            text = f"{score}"
            if infinite_scores and rng.random() < 0.15:
                text = rng.choice(("inf", "-inf"))
            run_lines.append(f"{qid} Q0 d{d} {rank + 1} {text} {tag}")
    if rng.random() < 0.2:
        options.append(f"-M{rng.randint(1, 8)}")
    if rng.random() < 0.3:
        options.append(f"-l{rng.choice((0, 1, 2, 3))}")
    if rng.random() < 0.15:
        options.append(f"-N{rng.randint(0, 50)}")
    for spec in rng.sample(measures, rng.randint(1, 3)):
        options += ["-m", spec]
    return Case(seed, "\n".join(qrels_lines) + "\n", "\n".join(run_lines) + "\n", tuple(options))


def write_case(case: Case, folder: Path) -> tuple[Path, Path]:
    """Write the case's qrels and run files into ``folder``; their paths."""
    qrels, run = folder / f"qrels.{case.seed}", folder / f"run.{case.seed}"
    qrels.write_text(case.qrels, encoding="utf-8")
    run.write_text(case.run, encoding="utf-8")
    return qrels, run


def ragframe_trec(argv: list[str]) -> tuple[int, str, str]:
    """``ragframe trec ARGV`` in this process: (exit code, stdout, stderr)."""
    from ragframe.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trec", *argv])
    return code, out.getvalue(), err.getvalue()
