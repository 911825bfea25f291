"""Estimates from few labels on the ARES log: the coverage of rf.estimate's intervals, and budget_summary's width.

What is measured
----------------
1. Coverage by labels. The 200 rows of the bundled ARES log (``ragframe.datasets.example_rag_log``)
   are the population; each label column (human faithfulness, answer relevance, context
   relevance, 0/1) has its true rate there (0.86, 0.895, 0.49). Each draw labels ``n`` rows
   chosen uniformly without replacement (the other ``200 - n`` rows are unlabelled) and
   estimates the rate with ``rf.estimate(method="ppi++", alpha=--alpha)``, the heuristic metric
   of the same name as the prediction. ``--draws`` draws per cell (4,000), every draw one slice
   of one ``rf.estimate`` call. The table gives the share of draws whose interval holds the
   true rate, for ``interval="normal"`` (ppi_py's) and ``"wilson"``, each without and with
   ``finite_population=True``; the target is the mean of these 200 rows, so the finite
   population model is the right one (without it an interval is too wide once the labels
   are a large share of the rows). Monte Carlo error: about 0.005 at 4,000 draws.
2. budget_summary's ``expected_width``. For ``--budget`` rows chosen at random of the 200 (the
   judge's scores stood in for by the human faithfulness label; the heuristic faithfulness
   score as ``<column>_heuristic``), the width ``budget_summary`` expects against the width
   of the PPI++ interval ``rf.estimate`` then gives on the judged rows, over ``--seeds`` seeds:
   the mean ratio actual / expected, its range, and how often the actual interval is wider.
3. ``Calibrator.threshold(precision=--precision)`` on held-out rows. For each of ``--seeds``
   seeds, a calibrator of the heuristic faithfulness score is fit on ``--fit-rows`` (100) of the
   200 rows drawn at random, and the pass mark for the target precision chosen in-sample and by
   5-fold cross-validation; the table gives the share of seeds whose pass mark reaches the target
   precision on the other rows, the mean held-out precision and the mean share of those rows
   passing (what the stricter mark costs).

Usage::

    python benchmarks/few_labels.py                       # both tables, alpha 0.1, 4,000 draws
    python benchmarks/few_labels.py --labels 20 40 --draws 2000 --alpha 0.05
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import numpy as np
import polars as pl

import ragframe as rf
from ragframe.budgeting import NOT_CHOSEN
from ragframe.datasets import example_rag_log

PAIRS = {
    "faithfulness": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_relevance": "human_context_relevance",
}
SETTINGS = [("normal", False), ("normal", True), ("wilson", False), ("wilson", True)]


def ares() -> pl.DataFrame:
    """The 200 ARES rows with the three heuristic scores and the three 0/1 human labels."""
    return rf.evaluate(pl.read_parquet(example_rag_log()), list(PAIRS))


def coverage(scored: pl.DataFrame, metric: str, n: int, draws: int, alpha: float, seed: int) -> list[float]:
    """Coverage of each of SETTINGS over ``draws`` draws of ``n`` labelled rows (without replacement)."""
    f = scored[metric].to_numpy()
    y = scored[PAIRS[metric]].cast(pl.Float64).to_numpy()
    rows = y.size
    rng = np.random.default_rng([seed, n, list(PAIRS).index(metric)])
    labelled = np.argsort(rng.random((draws, rows)), axis=1) < n  # n of the rows, per draw
    labels = np.where(labelled, y[None, :], np.nan)
    frame = pl.DataFrame(
        {"draw": np.repeat(np.arange(draws), rows), "f": np.tile(f, draws), "y": labels.ravel()}
    ).with_columns(pl.col("y").fill_nan(None))
    truth = y.mean()
    out = []
    for interval, finite in SETTINGS:
        table = rf.estimate(
            frame, prediction="f", label="y", by="draw", alpha=alpha, interval=interval, finite_population=finite
        )
        out.append(float(((table["ci_low"] <= truth) & (table["ci_high"] >= truth)).mean()))
    return out


def budget_widths(scored: pl.DataFrame, budget: int, seeds: int, alpha: float) -> np.ndarray:
    """(expected, actual) width per seed: budget_summary's expected_width and the PPI++ interval's."""
    judge = scored["human_faithfulness"].cast(pl.Float64).to_numpy()
    heuristic = scored["faithfulness"].to_numpy()
    widths = np.empty((seeds, 2))
    for seed in range(seeds):
        chosen = np.random.default_rng(seed).permutation(judge.size) < budget
        out = pl.DataFrame(
            {
                "judge_faithfulness": np.where(chosen, judge, np.nan),
                "judge_faithfulness_status": np.where(chosen, "ok", "skipped"),
                "judge_faithfulness_heuristic": heuristic,
            }
        ).with_columns(
            pl.col("judge_faithfulness").fill_nan(None),
            judge_faithfulness_error=pl.when(pl.Series(~chosen)).then(pl.lit(f"{NOT_CHOSEN} for the judge ({seed})")),
        )
        expected = rf.budget_summary(out, alpha=alpha)["expected_width"][0]
        row = rf.estimate(out, prediction="judge_faithfulness_heuristic", label="judge_faithfulness", alpha=alpha)
        widths[seed] = expected, row["ci_high"][0] - row["ci_low"][0]
    return widths


def threshold_holds(scored: pl.DataFrame, fit_rows: int, seeds: int, target: float) -> dict[str, list[float]]:
    """Per selection: [share of seeds reaching the target on held-out rows, mean held-out precision, pass share]."""
    x = scored["faithfulness"].to_numpy()
    y = scored["human_faithfulness"].cast(pl.Float64).to_numpy()
    results: dict[str, list[tuple[bool, float, float]]] = {"in-sample": [], "cross-validated": []}
    for seed in range(seeds):
        fit = np.random.default_rng(seed).permutation(y.size) < fit_rows
        calibrator = rf.calibrate(pl.DataFrame({"s": x[fit], "y": y[fit]}), score="s", label="y")
        for selection in results:
            try:
                cut = calibrator.threshold(precision=target, selection=selection)
            except rf.InvalidParameterError:
                continue
            passed = x[~fit] >= cut
            precision = float(y[~fit][passed].mean()) if passed.any() else 1.0
            results[selection].append((precision >= target - 1e-12, precision, float(passed.mean())))
    return {
        selection: [float(np.mean([r[i] for r in rows])) for i in range(3)] + [len(rows)]
        for selection, rows in results.items()
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=int, nargs="+", default=[10, 20, 30, 40, 60, 100, 150])
    parser.add_argument("--draws", type=int, default=4000)
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, nargs="+", default=[20, 40, 80])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--fit-rows", type=int, default=100)
    parser.add_argument("--precision", type=float, default=0.95)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    scored = ares()
    level = 1 - args.alpha
    print(f"Coverage of {level:.0%} PPI++ intervals, {args.draws:,} draws a cell, labels drawn without replacement")
    print("| label | rate | labels | normal | normal, finite | wilson | wilson, finite |")
    print("|---|---|---|---|---|---|---|")
    for metric, label in PAIRS.items():
        rate = scored[label].cast(pl.Float64).mean()
        for n in args.labels:
            cells = coverage(scored, metric, n, args.draws, args.alpha, args.seed)
            print(f"| {label} | {rate:.3f} | {n} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    print(f"\nbudget_summary expected_width against the PPI++ interval's width ({args.seeds} seeds)")
    print("| chosen rows | expected (mean) | actual (mean) | actual / expected: mean | min | max | actual wider |")
    print("|---|---|---|---|---|---|---|")
    for budget in args.budget:
        widths = budget_widths(scored, budget, args.seeds, args.alpha)
        ratio = widths[:, 1] / widths[:, 0]
        print(
            f"| {budget} | {widths[:, 0].mean():.4f} | {widths[:, 1].mean():.4f} | {ratio.mean():.3f} | "
            f"{ratio.min():.3f} | {ratio.max():.3f} | {(ratio > 1).mean():.0%} |"
        )
    print(
        f"\nCalibrator.threshold(precision={args.precision}) fit on {args.fit_rows} rows, checked on the other "
        f"{200 - args.fit_rows} ({args.seeds} seeds)"
    )
    print("| selection | reaches the target held out | mean held-out precision | rows passing | seeds |")
    print("|---|---|---|---|---|")
    for selection, (hold, precision, passing, count) in threshold_holds(
        scored, args.fit_rows, args.seeds, args.precision
    ).items():
        print(f"| {selection} | {hold:.0%} | {precision:.3f} | {passing:.0%} | {count} |")
    print(f"\n{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
