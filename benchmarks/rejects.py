"""Cost of bad rows in ``rf.evaluate_parquet``: a log with a share of rejected rows against a clean one.

What is measured
----------------
A synthetic ranking log of ``--rows`` rows (default 50,000): ``id``, ``retrieved_ids``
(10 ids), ``retrieved_scores`` (10 descending scores) and graded ``relevance`` (4
judgments, grades 0 to 3). The "bad" log is the same log with ``--bad-share`` of its rows
(default 5%, spread evenly) broken in one of three ways the ranking kernel refuses, in
turn: a NaN inside ``retrieved_scores``, one score too few (lengths differ), and a document
judged twice with different grades. The "clean" log is the unbroken one.

Each log is scored by ``rf.evaluate_parquet`` (ranking metrics, k = 1, 5, 10; one batch;
in this process; ``overwrite=True``), and the wall time of that call is reported
(``time.perf_counter``: reading, validation, scoring and writing). As a check, the rows the
bad log scores must equal the clean log's scores of the same rows (a row's scores never
depend on its batch), and the rejects must be exactly the broken rows.

Usage, from the repository root::

    python benchmarks/rejects.py                  # 50,000 rows, 5% bad
    python benchmarks/rejects.py --rows 200000 --bad-share 0.01
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import ragframe as rf

DOCS = 10
JUDGED = 4


def make_logs(rows: int, bad_share: float, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame, np.ndarray]:
    """(clean log, bad log, positions of the broken rows)."""
    rng = np.random.default_rng(seed)
    # distinct ids within a row (1009 is prime), so the clean log judges no document twice
    docs = (rng.integers(0, 1009, size=(rows, 1)) + np.arange(DOCS) * rng.integers(1, 1009, size=(rows, 1))) % 1009
    scores = -np.sort(-rng.random((rows, DOCS)), axis=1)
    judged = docs[:, :JUDGED].copy()
    grades = rng.integers(0, 4, size=(rows, JUDGED))
    ids = pl.Series(docs.ravel()).cast(pl.String)
    clean = pl.DataFrame(
        {
            "id": np.arange(rows),
            "retrieved_ids": ("d" + ids).reshape((rows, DOCS)).arr.to_list(),
            "retrieved_scores": pl.Series(scores).arr.to_list(),
            "relevance": pl.DataFrame({"id": "d" + pl.Series(judged.ravel()).cast(pl.String), "grade": grades.ravel()})
            .select(pl.struct("id", "grade").alias("relevance"))
            .to_series()
            .reshape((rows, JUDGED))
            .arr.to_list(),
        }
    )
    n_bad = round(rows * bad_share)
    bad_rows = np.linspace(0, rows - 1, n_bad).astype(np.int64) if n_bad else np.zeros(0, dtype=np.int64)
    kind = np.full(rows, -1)
    kind[bad_rows] = np.arange(n_bad) % 3
    kinds = pl.Series(kind)
    nan_scores = pl.Series(np.where(np.arange(DOCS) == DOCS // 2, np.nan, scores)).arr.to_list()
    conflicting = pl.concat_list(pl.col("relevance"), pl.col("relevance").list.first().struct.with_fields(grade=9))
    bad = clean.with_columns(
        retrieved_scores=pl.when(kinds == 0)
        .then(nan_scores)
        .when(kinds == 1)
        .then(pl.col("retrieved_scores").list.head(DOCS - 1))
        .otherwise(pl.col("retrieved_scores")),
        relevance=pl.when(kinds == 2).then(conflicting).otherwise(pl.col("relevance")),
    )
    return clean, bad, bad_rows


def timed(log: Path, out: Path) -> tuple[float, rf.ParquetEvaluation]:
    start = time.perf_counter()
    result = rf.evaluate_parquet(log, out, overwrite=True, progress=False, batches_per_process=None)
    return time.perf_counter() - start, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--bad-share", type=float, default=0.05)
    args = parser.parse_args(argv)
    clean, bad, bad_rows = make_logs(args.rows, args.bad_share)
    table, ok = [], True
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, log in (("clean", clean), ("bad", bad)):
            log.write_parquet(folder / f"{name}.parquet")
        rf.evaluate_parquet(folder / "clean.parquet", folder / "warm", progress=False, batches_per_process=None)
        for name in ("clean", "bad"):
            seconds, result = timed(folder / f"{name}.parquet", folder / f"out-{name}")
            table.append((name, result.rows, result.rejected, seconds, result.rows / seconds))
        scored_clean = pl.read_parquet(folder / "out-clean" / "scores")
        scored_bad = pl.read_parquet(folder / "out-bad" / "scores")
        rejects = pl.read_parquet(folder / "out-bad" / "rejects") if bad_rows.size else None
        same = scored_bad.equals(scored_clean.filter(~pl.col("id").is_in(bad_rows.tolist())))
        exact = rejects is None or sorted(rejects["source_row"].to_list()) == bad_rows.tolist()
        ok = same and exact
    print(f"rf.evaluate_parquet, ranking metrics, {args.rows:,} rows, {bad_rows.size:,} bad ({args.bad_share:.0%})")
    print(f"{'log':<6} {'rows':>8} {'rejected':>9} {'seconds':>8} {'rows/s':>9}")
    for name, rows, rejected, seconds, rate in table:
        print(f"{name:<6} {rows:>8,} {rejected:>9,} {seconds:>8.2f} {rate:>9,.0f}")
    print(f"scores of the good rows equal the clean log's: {same}; rejects are the broken rows: {exact}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
