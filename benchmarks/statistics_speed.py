"""Speed of ragframe's statistics: summarize with slices and compare with each paired test.

What is measured
----------------
Two scored frames of ``--rows`` rows (1,000,000 by default) with ``--metrics`` score
columns (10) in [0, 1], an ``id`` and a ``slice`` column with ``--slices`` values (50), are
generated in memory (Beta-distributed scores, a quarter of the metrics discrete in
{0, 0.25, 0.5, 0.75, 1} like pass rates and hit rates, 1% nulls; pipeline B is pipeline
A plus a small per-row shift). Then, in this one process, each timed with
``time.perf_counter`` after a warm-up on 1,000 rows:

- ``summarize(a, by="slice")`` (t intervals, exact percentiles);
- ``compare(a, b, on="id", by="slice", test=T)`` for T in t, wilcoxon, permutation and
  bootstrap, with their default resample counts (9,999) and Holm's correction over the
  500 (metric, slice) cells.

Targets (issue 4): summarize under 2 s, t and wilcoxon under 5 s, permutation and
bootstrap under 60 s on the 2-core machine.

Usage::

    python benchmarks/statistics_speed.py                # 1M rows, 10 metrics, 50 slices
    python benchmarks/statistics_speed.py --rows 100000 --tests t wilcoxon

(Not named ``statistics.py``: that would shadow the standard library's ``statistics`` for
every script run from ``benchmarks/``, ranx's import among them.)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl
from procstat import peak_rss_mb

import ragframe as rf


def make_frames(rows: int, metrics: int, slices: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two paired scored frames (pipelines A and B) with ``metrics`` score columns."""
    rng = np.random.default_rng(seed)
    ids = np.arange(rows)
    columns_a, columns_b = {}, {}
    for m in range(metrics):
        if m % 4 == 3:
            a = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], rows)
            b = np.where(rng.random(rows) < 0.1, rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], rows), a)
        else:
            a = rng.beta(2 + m % 3, 2, rows)
            b = np.clip(a + rng.normal(0.002 * (m % 3), 0.1, rows), 0, 1)
        a[rng.random(rows) < 0.01] = np.nan
        b[rng.random(rows) < 0.01] = np.nan
        columns_a[f"metric_{m}"] = a
        columns_b[f"metric_{m}"] = b
    slice_ = rng.integers(0, slices, rows)
    frame_a = pl.DataFrame({"id": ids, "slice": slice_, **columns_a}).fill_nan(None)
    frame_b = pl.DataFrame({"id": ids, "slice": slice_, **columns_b}).fill_nan(None)
    return frame_a, frame_b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--slices", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tests", nargs="+", default=["t", "wilcoxon", "permutation", "bootstrap"])
    args = parser.parse_args()

    a, b = make_frames(args.rows, args.metrics, args.slices, args.seed)
    names = [c for c in a.columns if c.startswith("metric_")]
    warm_a, warm_b = a.head(1000), b.head(1000)
    rf.summarize(warm_a, metrics=names, by="slice")
    print(f"{args.rows:,} rows x {len(names)} metrics x {args.slices} slices\n")
    print(f"{'operation':<40}{'seconds':>9}{'target':>9}  {'cells':>6}  {'significant':>11}")
    print("-" * 79)

    start = time.perf_counter()
    summary = rf.summarize(a, metrics=names, by="slice")
    elapsed = time.perf_counter() - start
    print(f"{'summarize(by=slice)':<40}{elapsed:>9.2f}{'< 2':>9}  {summary.height:>6}  {'':>11}")

    targets = {"t": "< 5", "wilcoxon": "< 5", "permutation": "< 60", "bootstrap": "< 60"}
    for test in args.tests:
        rf.compare(warm_a, warm_b, metrics=names, by="slice", test=test, n_resamples=99)
        start = time.perf_counter()
        out = rf.compare(a, b, metrics=names, by="slice", test=test)
        elapsed = time.perf_counter() - start
        print(
            f"{f'compare(test={test!r}, by=slice)':<40}{elapsed:>9.2f}{targets.get(test, ''):>9}"
            f"  {out.height:>6}  {int(out['significant'].sum()):>11}"
        )
    print(f"\npeak RSS {peak_rss_mb():,.0f} MB")


if __name__ == "__main__":
    main()
