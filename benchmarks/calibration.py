"""Calibration of ``ragframe.stats.compare`` under the null: false-positive rates and family-wise error.

What is checked
---------------
1. Per-test false-positive rate. For each test (``t``, ``wilcoxon``, ``permutation``,
   ``bootstrap``) and each score scenario, ``--sims`` comparisons (2,000 by default) of two
   runs drawn from the same distribution, paired by sample id, with ``--n`` samples each
   (100 by default), are tested at alpha = 0.05 without correction. The rate of
   ``significant`` rows must lie in [0.03, 0.07]. Scenarios, both bounded in [0, 1]:

   - ``beta``: continuous scores (faithfulness- or similarity-like). Each sample has a
     difficulty ``mu ~ Beta(2, 2)`` shared by both runs; each run's score is an independent
     ``Beta(8 mu, 8 (1 - mu))`` draw, so the two runs are correlated through the sample;
   - ``discrete``: LLM-judge grades in {0, 0.5, 1}. Each sample has ``q ~ Beta(1.5, 1.5)``;
     each run's grade is an independent ``Binomial(2, q) / 2`` draw (many ties and zero
     differences: the hard case for the signed-rank test).

   Given the sample, the two scores are i.i.d., so the pair is exchangeable and the null
   (mean difference 0, symmetric differences) holds exactly.

   All simulations of one (test, scenario) go through ONE ``rf.compare`` call: a column
   ``sim`` (the simulation index) is passed as ``by="sim"``, so each simulation is one
   (metric, slice) cell, and ragframe computes every cell in one vectorised pass. Every
   simulation has its own data (a fresh random stream per test and scenario).

2. Family-wise error rate across 10 metrics. Each simulation has 10 metric columns under the
   null (logit-normal scores in (0, 1): per sample and metric a difficulty, per run a
   noise term), either ``independent`` across metrics or ``correlated`` (the 10 metrics share
   the sample's difficulty and, with weight 0.6 in variance, each run's noise, as metrics of
   one answer do). The uncorrected p-values of all simulations come from one
   ``rf.compare(..., by="sim", correction=None)`` call with ``--fwer-test`` (t by default).
   ``correction="holm"`` inside that call would correct over ALL cells of all simulations
   together, which is not a per-simulation family, so the correction is applied here per
   simulation instead: ``rf.adjust_p_values(p, method)`` on each simulation's 10 p-values
   (a loop over the simulations). The FWER is the fraction of simulations with any
   adjusted p-value < alpha. Holm and Bonferroni control it at alpha under any dependence;
   when every null hypothesis is true, as here, both reject something exactly when the
   smallest p-value is below alpha / 10, so their rows are equal. Benjamini-Hochberg
   controls it at alpha here too: with every null true, FDR = FWER, and its FDR guarantee
   (independent or positively dependent tests) becomes a FWER guarantee. Without correction
   the FWER is 1 - 0.95^10 = 0.401 for independent metrics, less when they are correlated.

3. Judge noise. An LLM judge is noisy: asked ``--judge-samples`` times (5 by default) about one
   answer it says "faithful" with the answer's probability ``q`` and "not faithful" otherwise
   (0/1 verdicts, ``Bernoulli(q)``). Two null scenarios, ``--sims`` simulations of ``--n`` rows:

   - ``rejudged``: both runs hold the same answers (``q ~ Beta(2, 2)`` per row), each judged
     ``k`` times independently: the runs differ only by the judge's noise;
   - ``regenerated``: the same pipeline run twice: each run's answer to a row is a new draw, of
     probability ``q = clip(mu + N(0, 0.2), 0, 1)`` around the row's difficulty ``mu ~ Beta(2, 2)``,
     each judged ``k`` times: the runs differ by the generator's and the judge's noise.

   Each is tested three ways with the ``--judge-tests`` (t by default), at alpha 0.05 without
   correction, one ``rf.compare(..., by="sim")`` call per row:

   - ``row means``: one row per answer holding the mean of its ``k`` verdicts, what ragframe's
     judges write with ``n_samples=k`` (plus ``<metric>_std``), paired on ``id``;
   - ``samples as pairs``: one row per verdict, paired on ``id`` and ``sample`` as if each
     verdict were its own row (what a table of stacked repeated runs invites);
   - ``samples=``: the same rows, ``rf.compare(..., on="id", samples="sample")``: the row is
     the unit, its verdicts averaged first.

   The verdicts of one row share its answer, so under ``regenerated`` they are not independent
   pairs: ``samples as pairs`` counts each answer's difference ``k`` times and its false-positive
   rate exceeds alpha (no verdict: it is the wrong analysis, shown for reference); the two
   row-level analyses must stay in [0.03, 0.07]. Under ``rejudged`` every verdict is an independent
   pair, so all three hold alpha. Noise shared by every row of a run (a judge that changed between
   the runs) is outside what any within-run analysis can see and is not simulated.

Verdicts: a false-positive rate PASSes when it lies in [0.03, 0.07]. A corrected FWER
PASSes when it is not significantly above alpha (the lower end of its 95% interval is at
most alpha): under independence Holm's FWER is 1 - (1 - 0.005)^10 = 0.049, so the point
estimate itself exceeds 0.05 by chance in about 40% of the runs (2,000 simulations). Intervals are
Clopper-Pearson (``scipy.stats.binomtest(...).proportion_ci()``). The resampling tests use
``--n-resamples`` resamples, by default ragframe's own default of 9,999: with every
simulation of a row in one call, that costs a few seconds a row, so nothing is reduced for
time (the whole script takes about 15 s on 2 cores). The seconds column is the wall time of
the row's ``rf.compare`` call (for the family-wise table, of the call and the per-simulation
corrections, shared by the four rows of one family). A resampling ``--fwer-test`` holds
several ``sims x 10 x n_resamples`` float matrices at once: about 7 GB and a minute at the
defaults. Exit status: 0 when every verdict is PASS, else 1.

Usage, from the repository root::

    python benchmarks/calibration.py
    python benchmarks/calibration.py --sims 2000 --n 100 --seed 0 --tests t wilcoxon permutation bootstrap
    python benchmarks/calibration.py --n 50 --sims 4000 --tests permutation bootstrap --fwer-test wilcoxon
    python benchmarks/calibration.py --judge-samples 3 --judge-tests t wilcoxon permutation bootstrap
    python benchmarks/calibration.py --small-n 1 2 3 5 8 13 20 30 --only-small-n   # the few-pairs table
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import stats

import ragframe as rf

TESTS = ("t", "wilcoxon", "permutation", "bootstrap")
RESAMPLING_TESTS = ("permutation", "bootstrap")
SCENARIOS = ("beta", "discrete")
DEPENDENCE = ("independent", "correlated")
CORRECTIONS = (None, "holm", "bonferroni", "fdr_bh")
ALPHA = 0.05
BAND = (0.03, 0.07)  # accepted false-positive rate at ALPHA
N_METRICS = 10
CORRELATION = 0.6  # share of each run's noise common to the 10 metrics, "correlated" family
JUDGE_SCENARIOS = ("rejudged", "regenerated")
JUDGE_LAYOUTS = ("row means", "samples as pairs", "samples=")
ANSWER_SPREAD = 0.2  # sd of an answer's quality around its row's difficulty, "regenerated"


# ----------------------------------------------------------------------------- data


def scores_beta(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Continuous scores of two exchangeable runs: a shared per-sample difficulty, i.i.d. given it."""
    mu = rng.beta(2.0, 2.0, size=size)
    concentration = 8.0
    a = rng.beta(concentration * mu, concentration * (1 - mu))
    b = rng.beta(concentration * mu, concentration * (1 - mu))
    return a, b


def scores_discrete(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Grades in {0, 0.5, 1} of two exchangeable runs: a shared per-sample q, i.i.d. Binomial(2, q) / 2."""
    q = rng.beta(1.5, 1.5, size=size)
    return rng.binomial(2, q) / 2.0, rng.binomial(2, q) / 2.0


SCENARIO_SCORES: dict[str, Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]] = {
    "beta": scores_beta,
    "discrete": scores_discrete,
}


def family_scores(rng: np.random.Generator, size: int, correlated: bool) -> tuple[np.ndarray, np.ndarray]:
    """``size x N_METRICS`` logit-normal scores of two exchangeable runs, metrics independent or correlated."""
    offsets = np.linspace(-1.0, 1.0, N_METRICS)  # metrics of different average level
    if correlated:
        difficulty = rng.normal(0.0, 1.0, size=(size, 1))
        shared = np.sqrt(CORRELATION)
        noise_a = shared * rng.normal(size=(size, 1)) + np.sqrt(1 - CORRELATION) * rng.normal(size=(size, N_METRICS))
        noise_b = shared * rng.normal(size=(size, 1)) + np.sqrt(1 - CORRELATION) * rng.normal(size=(size, N_METRICS))
    else:
        difficulty = rng.normal(0.0, 1.0, size=(size, N_METRICS))
        noise_a = rng.normal(size=(size, N_METRICS))
        noise_b = rng.normal(size=(size, N_METRICS))

    def sigmoid(x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))

    return sigmoid(offsets + difficulty + 0.7 * noise_a), sigmoid(offsets + difficulty + 0.7 * noise_b)


def frames(sims: int, n: int, a: np.ndarray, b: np.ndarray, names: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Frames ``a`` (id, sim, metrics) and ``b`` (id, metrics); rows ``s * n .. s * n + n - 1`` are simulation s."""
    ids = np.arange(sims * n, dtype=np.int64)
    a2, b2 = a.reshape(sims * n, -1), b.reshape(sims * n, -1)
    left = pl.DataFrame({"id": ids, "sim": ids // n, **{name: a2[:, j] for j, name in enumerate(names)}})
    right = pl.DataFrame({"id": ids, **{name: b2[:, j] for j, name in enumerate(names)}})
    return left, right


def judge_verdicts(rng: np.random.Generator, rows: int, k: int, scenario: str) -> tuple[np.ndarray, np.ndarray]:
    """``rows x k`` 0/1 verdicts of a noisy judge on two runs under the null (see the module docstring, 3)."""
    if scenario == "rejudged":
        q = rng.beta(2.0, 2.0, size=(rows, 1))
        q_a = q_b = q
    else:
        mu = rng.beta(2.0, 2.0, size=(rows, 1))
        q_a = np.clip(mu + rng.normal(0.0, ANSWER_SPREAD, size=(rows, 1)), 0.0, 1.0)
        q_b = np.clip(mu + rng.normal(0.0, ANSWER_SPREAD, size=(rows, 1)), 0.0, 1.0)
    return rng.binomial(1, q_a, size=(rows, k)).astype(float), rng.binomial(1, q_b, size=(rows, k)).astype(float)


def judge_frames(sims: int, n: int, a: np.ndarray, b: np.ndarray, layout: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The two runs' frames in ``layout``: one row per answer (the mean of its verdicts), or one per verdict."""
    if layout == "row means":
        return frames(sims, n, a.mean(axis=1), b.mean(axis=1), ["faithfulness"])
    k = a.shape[1]
    ids = np.repeat(np.arange(sims * n, dtype=np.int64), k)
    sample = np.tile(np.arange(k, dtype=np.int64), sims * n)
    left = pl.DataFrame({"id": ids, "sample": sample, "sim": ids // n, "faithfulness": a.ravel()})
    right = pl.DataFrame({"id": ids, "sample": sample, "faithfulness": b.ravel()})
    return left, right


# ----------------------------------------------------------------------------- checks


@dataclass
class Rate:
    """A binomial rate from ``hits`` out of ``trials`` with its 95% Clopper-Pearson interval."""

    hits: int
    trials: int

    @property
    def value(self) -> float:
        return self.hits / self.trials

    @property
    def interval(self) -> tuple[float, float]:
        ci = stats.binomtest(self.hits, self.trials).proportion_ci(confidence_level=0.95)
        return float(ci.low), float(ci.high)


@dataclass
class TestRow:
    test: str
    scenario: str
    n: int
    sims: int
    resamples: int | None
    rate: Rate
    seconds: float

    @property
    def passed(self) -> bool:
        return BAND[0] <= self.rate.value <= BAND[1]


@dataclass
class FamilyRow:
    test: str
    dependence: str
    n: int
    sims: int
    correction: str | None
    rate: Rate
    seconds: float | None

    @property
    def passed(self) -> bool | None:
        """None for the uncorrected reference row (no verdict)."""
        if self.correction is None:
            return None
        return self.rate.interval[0] <= ALPHA


def _compare(a: pl.DataFrame, b: pl.DataFrame, names: list[str], test: str, n_resamples: int, seed: int):
    # For "permutation" and "bootstrap", ragframe draws ONE matrix of sign flips (one index draw per cell
    # size, for the bootstrap) per call and shares it across every (metric, slice) cell (see the docstring
    # of ragframe/kernels/resampling.py): all
    # simulations of this call are resampled with the same weights, each on its own independent data. Each
    # cell's resampling distribution, hence each p-value, is still exactly the one a call on that
    # simulation alone would give with these weights, so the per-cell rate is what is measured. The
    # simulations' p-values are nearly, not exactly, independent (their Monte Carlo errors correlate at
    # about 1/sqrt(n), since the differences are independent and centred): negligible here.
    return rf.compare(
        a,
        b,
        on="id",
        metrics=names,
        test=test,
        alpha=ALPHA,
        correction=None,
        by="sim",
        n_resamples=n_resamples,
        seed=seed,
    )


def false_positive_rate(test: str, scenario: str, sims: int, n: int, n_resamples: int, seed: int) -> TestRow:
    rng = np.random.default_rng([seed, TESTS.index(test), SCENARIOS.index(scenario)])
    a, b = SCENARIO_SCORES[scenario](rng, sims * n)
    left, right = frames(sims, n, a, b, ["score"])
    start = time.perf_counter()
    out = _compare(left, right, ["score"], test, n_resamples, seed)
    seconds = time.perf_counter() - start
    assert out.height == sims and out["n"].min() == n, "one row of n pairs per simulation"
    resamples = n_resamples if test in RESAMPLING_TESTS else None
    return TestRow(test, scenario, n, sims, resamples, Rate(int(out["significant"].sum()), sims), seconds)


def small_n_rates(
    tests: Sequence[str], sizes: Sequence[int], sims: int, n_resamples: int, seed: int
) -> list[list[str]]:
    """The false-positive rate of each test on few pairs (both scenarios), and the share of cells without a p."""
    table = []
    for scenario in SCENARIOS:
        for n in sizes:
            cells = [scenario, str(n)]
            for test in tests:
                rng = np.random.default_rng([seed, 200 + TESTS.index(test), SCENARIOS.index(scenario), n])
                a, b = SCENARIO_SCORES[scenario](rng, sims * n)
                left, right = frames(sims, n, a, b, ["score"])
                out = _compare(left, right, ["score"], test, n_resamples, seed)
                rate = Rate(int(out["significant"].sum()), sims)
                no_p = out["p_value"].null_count()
                cells.append(
                    "no p" if no_p == sims else f"{rate.value:.4f}" + (f" ({no_p / sims:.0%} no p)" if no_p else "")
                )
            table.append(cells)
    return table


def print_small_n(table: list[list[str]], tests: Sequence[str], sims: int) -> None:
    print(f"\nFalse-positive rate on few pairs at alpha = {ALPHA} ({sims:,} simulations a cell; no p: too few pairs)")
    print(_format_table(["scenario", "n", *tests], table, [False, True, *[True] * len(tests)]))


def family_wise_error(test: str, dependence: str, sims: int, n: int, n_resamples: int, seed: int) -> list[FamilyRow]:
    rng = np.random.default_rng([seed, 100 + TESTS.index(test), DEPENDENCE.index(dependence)])
    a, b = family_scores(rng, sims * n, correlated=dependence == "correlated")
    names = [f"metric_{j}" for j in range(N_METRICS)]
    left, right = frames(sims, n, a, b, names)
    start = time.perf_counter()
    out = _compare(left, right, names, test, n_resamples, seed)
    p = out.sort("sim", "metric")["p_value"].to_numpy().reshape(sims, N_METRICS)
    rows = []
    for correction in CORRECTIONS:
        # Per-simulation family: the correction over that simulation's 10 p-values only (correction="holm"
        # in the rf.compare call above would pool the cells of all simulations into one family).
        any_significant = sum(bool((rf.adjust_p_values(p[s], correction) < ALPHA).any()) for s in range(sims))
        rows.append(FamilyRow(test, dependence, n, sims, correction, Rate(any_significant, sims), None))
    rows[0].seconds = time.perf_counter() - start  # the call and the four corrections, shown once per family
    return rows


@dataclass
class JudgeRow:
    test: str
    scenario: str
    layout: str
    n: int
    k: int
    sims: int
    rate: Rate
    seconds: float

    @property
    def passed(self) -> bool | None:
        """None for the samples-as-pairs reference row (the wrong analysis, shown for its rate)."""
        if self.layout == "samples as pairs":
            return None
        return BAND[0] <= self.rate.value <= BAND[1]


def judge_noise_rates(
    test: str, scenario: str, sims: int, n: int, k: int, n_resamples: int, seed: int
) -> list[JudgeRow]:
    """False-positive rates of the three analyses of one judge-noise scenario (the same data for all three)."""
    rng = np.random.default_rng([seed, 200 + TESTS.index(test), JUDGE_SCENARIOS.index(scenario)])
    a, b = judge_verdicts(rng, sims * n, k, scenario)
    rows = []
    for layout in JUDGE_LAYOUTS:
        left, right = judge_frames(sims, n, a, b, layout)
        options = {"on": ["id", "sample"]} if layout == "samples as pairs" else {"on": "id"}
        if layout == "samples=":
            options["samples"] = "sample"
        start = time.perf_counter()
        out = rf.compare(
            left,
            right,
            metrics=["faithfulness"],
            test=test,
            alpha=ALPHA,
            correction=None,
            by="sim",
            n_resamples=n_resamples,
            seed=seed,
            **options,
        )
        seconds = time.perf_counter() - start
        pairs = n * k if layout == "samples as pairs" else n
        assert out.height == sims and out["n"].min() == pairs, "one row per simulation, every pair"
        rows.append(JudgeRow(test, scenario, layout, n, k, sims, Rate(int(out["significant"].sum()), sims), seconds))
    return rows


# ----------------------------------------------------------------------------- report


def _format_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(row) for row in rows)])


def _interval(rate: Rate) -> str:
    low, high = rate.interval
    return f"[{low:.4f}, {high:.4f}]"


def print_rates(rows: list[TestRow]) -> None:
    header = ["test", "scenario", "n", "sims", "resamples", "false-pos rate", "95% CI", "in [0.03, 0.07]", "seconds"]
    table = [
        [
            r.test,
            r.scenario,
            str(r.n),
            f"{r.sims:,}",
            f"{r.resamples:,}" if r.resamples else "-",
            f"{r.rate.value:.4f}",
            _interval(r.rate),
            "PASS" if r.passed else "FAIL",
            f"{r.seconds:.2f}",
        ]
        for r in rows
    ]
    print(f"\nFalse-positive rate under the null at alpha = {ALPHA}, no correction (one rf.compare call per row)")
    print(_format_table(header, table, [False, False, True, True, True, True, True, False, True]))


def print_family(rows: list[FamilyRow], n_resamples: int) -> None:
    independent = 1 - (1 - ALPHA) ** N_METRICS
    header = ["test", "metrics", "n", "sims", "correction", "FWER", "95% CI", "expected", "result", "seconds"]
    table = []
    for r in rows:
        if r.correction is None:
            expected = f"{independent:.3f}" if r.dependence == "independent" else f"< {independent:.3f}"
        else:
            expected = f"<= {ALPHA}"
        verdict = "-" if r.passed is None else ("PASS" if r.passed else "FAIL")
        table.append(
            [
                r.test,
                r.dependence,
                str(r.n),
                f"{r.sims:,}",
                str(r.correction),
                f"{r.rate.value:.4f}",
                _interval(r.rate),
                expected,
                verdict,
                "" if r.seconds is None else f"{r.seconds:.2f}",
            ]
        )
    resampled = f", {n_resamples:,} resamples" if rows and rows[0].test in RESAMPLING_TESTS else ""
    print(
        f"\nFamily-wise error rate over {N_METRICS} null metrics at alpha = {ALPHA}{resampled}: uncorrected p-values "
        "from one rf.compare call, corrected per simulation with rf.adjust_p_values; PASS = 95% CI low <= alpha"
    )
    print(_format_table(header, table, [False, False, True, True, False, True, True, False, False, True]))


def print_judge(rows: list[JudgeRow]) -> None:
    header = [
        "test",
        "scenario",
        "analysis",
        "rows",
        "samples",
        "sims",
        "false-pos rate",
        "95% CI",
        "result",
        "seconds",
    ]
    table = [
        [
            r.test,
            r.scenario,
            r.layout,
            str(r.n),
            str(r.k),
            f"{r.sims:,}",
            f"{r.rate.value:.4f}",
            _interval(r.rate),
            "-" if r.passed is None else ("PASS" if r.passed else "FAIL"),
            f"{r.seconds:.2f}",
        ]
        for r in rows
    ]
    print(
        f"\nJudge noise: false-positive rate at alpha = {ALPHA} of two runs of 0/1 judge verdicts under the null; "
        "PASS = in [0.03, 0.07]; samples as pairs: the wrong analysis, no verdict"
    )
    print(_format_table(header, table, [False, False, False, True, True, True, True, True, False, True]))


# ----------------------------------------------------------------------------- driver


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sims", type=int, default=2000, help="simulated comparisons per row (default 2000)")
    parser.add_argument("--n", type=int, default=100, help="paired samples per comparison (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and of the resampling (default 0)")
    parser.add_argument("--tests", nargs="+", choices=TESTS, default=list(TESTS), help="tests to check (default all)")
    parser.add_argument(
        "--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS), help="score scenarios (default all)"
    )
    parser.add_argument(
        "--n-resamples",
        type=int,
        default=9999,
        help="resamples of the permutation and bootstrap tests (default 9999, as rf.compare)",
    )
    parser.add_argument(
        "--fwer-test", choices=TESTS, default="t", help="test of the 10-metric family-wise error check (default t)"
    )
    parser.add_argument(
        "--judge-samples", type=int, default=5, help="judge verdicts per answer, judge-noise check (default 5)"
    )
    parser.add_argument(
        "--judge-tests", nargs="+", choices=TESTS, default=["t"], help="tests of the judge-noise check (default t)"
    )
    parser.add_argument(
        "--small-n",
        type=int,
        nargs="+",
        default=None,
        metavar="N",
        help="also the false-positive rate of each test at these few pairs (e.g. 1 2 3 5 8 13 20)",
    )
    parser.add_argument("--only-small-n", action="store_true", help="print the few-pairs table only (with --small-n)")
    args = parser.parse_args(argv)
    if args.small_n and min(args.small_n) < 1:
        parser.error("--small-n sizes must be >= 1")
    if args.only_small_n and not args.small_n:
        parser.error("--only-small-n needs --small-n")
    if args.sims < 1 or args.n < 2 or args.n_resamples < 1 or args.judge_samples < 2:
        parser.error("--sims and --n-resamples must be >= 1, --n and --judge-samples >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    print(
        f"compare calibration: {args.sims:,} simulations of n = {args.n} pairs per row, seed {args.seed}, "
        f"{args.n_resamples:,} resamples for permutation/bootstrap"
    )
    if args.small_n:
        print_small_n(
            small_n_rates(args.tests, args.small_n, args.sims, args.n_resamples, args.seed), args.tests, args.sims
        )
        if args.only_small_n:
            return 0
    rates = []
    for test in args.tests:
        for scenario in args.scenarios:
            rates.append(false_positive_rate(test, scenario, args.sims, args.n, args.n_resamples, args.seed))
    print_rates(rates)
    family = []
    for dependence in DEPENDENCE:
        family.extend(family_wise_error(args.fwer_test, dependence, args.sims, args.n, args.n_resamples, args.seed))
    print_family(family, args.n_resamples)
    judge = []
    for test in args.judge_tests:
        for scenario in JUDGE_SCENARIOS:
            judge.extend(
                judge_noise_rates(test, scenario, args.sims, args.n, args.judge_samples, args.n_resamples, args.seed)
            )
    print_judge(judge)
    failed = [f"{r.test}/{r.scenario}" for r in rates if not r.passed]
    failed += [f"FWER {r.dependence}/{r.correction}" for r in family if r.passed is False]
    failed += [f"judge {r.test}/{r.scenario}/{r.layout}" for r in judge if r.passed is False]
    elapsed = time.perf_counter() - start
    print(f"\n{'FAIL: ' + ', '.join(failed) if failed else 'all PASS'} ({elapsed:.1f} s in all)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
