"""Claim-level kernels at scale: ragframe's columnar nugget and RAGChecker scores against the reference computations.

What is measured
----------------
1. **Nuggets**: ``--nuggets`` assignments (1,000,000 by default) spread over rows of 1 to 19
   nuggets (10 on average), each ``vital`` or ``okay`` and ``support`` / ``partial_support`` /
   ``not_support`` at random. ragframe: ``rf.evaluate(df, [the four nugget scores])`` on a
   polars frame holding the ``nuggets`` column. Reference: nuggetizer's
   ``calculate_nugget_scores`` called once per row on the same nuggets as Python dicts (what
   nuggetizer's own scoring script does), its module loaded from the installed package
   without the package's LLM dependencies.
2. **RAGChecker**: ``--entailments`` claim x passage verdicts (1,000,000 by default) over rows
   of 1 to 9 answer claims, 1 to 9 reference claims and 1 to 9 passages, verdicts
   ``Entailment`` / ``Neutral`` / ``Contradiction``. ragframe: ``rf.evaluate(df,
   ["ragchecker"])`` (all 11 metrics). Reference: RAGChecker 0.1.9's ``computation`` module,
   every function of its ``METRIC_FUNC_MAP`` once per row on the same lists.

Frame building and the reference's per-row input objects are left out of the timings; each
tool is timed on the same inputs, best of ``--repeat``. Every per-row value of the
reference must equal ragframe's (exactly: the same float operations); the script exits 1
otherwise. A reference that is not installed (``pip install --no-deps ragchecker==0.1.9
nuggetizer``) is reported and skipped.

Usage::

    python benchmarks/claims.py
    python benchmarks/claims.py --nuggets 100000 --entailments 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

import ragframe as rf
from ragframe.metrics.nuggets import NUGGET_DTYPE, NUGGET_METRICS
from ragframe.metrics.ragchecker import RAGCHECKER_METRICS

VERDICTS = np.array(["Entailment", "Neutral", "Contradiction"])


def _module(package: str, *parts: str, name: str) -> types.ModuleType | None:
    spec = importlib.util.find_spec(package)  # the package's folder, its __init__ not run
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*parts)
    loaded = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(loaded)
    sys.modules[name] = module
    loaded.loader.exec_module(module)
    return module


@dataclass
class _Result:
    """The fields of ragchecker.container.RAGResult its computation reads."""

    answer2response: Any = None
    response2answer: Any = None
    retrieved2response: Any = None
    retrieved2answer: Any = None
    metrics: dict = field(default_factory=dict)


def ragchecker_computation() -> types.ModuleType | None:
    base = "_bench_ragchecker"
    spec = importlib.util.find_spec("ragchecker")
    if spec is None:
        return None
    package = types.ModuleType(base)
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules[base] = package
    container = types.ModuleType(f"{base}.container")
    container.RAGResult = _Result
    sys.modules[f"{base}.container"] = container
    _module("ragchecker", "metrics.py", name=f"{base}.metrics")
    return _module("ragchecker", "computation.py", name=f"{base}.computation")


def nugget_rows(total: int, seed: int) -> list[list[dict[str, str]]]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 20, size=total // 10 + 1)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), total) + 1]
    importance = rng.choice(["vital", "okay"], size=int(sizes.sum()))
    assignment = rng.choice(["support", "partial_support", "not_support"], size=int(sizes.sum()))
    rows, start = [], 0
    for size in sizes:
        rows.append([{"text": "n", "importance": str(importance[start + i]), "assignment": str(assignment[start + i])}
                     for i in range(size)])  # fmt: skip
        start += size
    return rows


def ragchecker_rows(total: int, seed: int) -> list[dict[str, list]]:
    rng = np.random.default_rng(seed)
    rows, cells = [], 0
    while cells < total:
        r, g, p = (int(x) for x in rng.integers(1, 10, size=3))
        draw = lambda *shape: VERDICTS[rng.integers(0, 3, size=shape)].tolist()  # noqa: E731
        rows.append({"answer2response": draw(r), "response2answer": draw(g), "retrieved2response": draw(r, p),
                     "retrieved2answer": draw(g, p)})  # fmt: skip
        cells += (r + g) * p
    return rows


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - start)
    return best, out


def bench_nuggets(total: int, repeat: int, seed: int) -> bool:
    rows = nugget_rows(total, seed)
    n = sum(len(r) for r in rows)
    frame = pl.DataFrame({"nuggets": pl.Series(rows, dtype=NUGGET_DTYPE)})
    seconds, scored = best_of(repeat, lambda: rf.evaluate(frame, list(NUGGET_METRICS)))
    print(f"nuggets: {len(rows):,} rows, {n:,} assignments")
    print(f"  ragframe     {seconds:8.3f} s  {n / seconds:14,.0f} assignments/s")
    oracle = _module("nuggetizer", "core", "metrics.py", name="_bench_nuggetizer_metrics")
    if oracle is None:
        print("  nuggetizer   not installed (pip install --no-deps nuggetizer)")
        return True
    calc = oracle.calculate_nugget_scores
    ref_seconds, ref = best_of(repeat, lambda: [calc(str(i), r) for i, r in enumerate(rows)])
    fields = ("strict_vital_score", "strict_all_score", "vital_score", "all_score")
    expected = np.array([[getattr(m, f) for f in fields] for m in ref])
    agree = bool((scored.select(NUGGET_METRICS).to_numpy() == expected).all())
    print(f"  nuggetizer   {ref_seconds:8.3f} s  {n / ref_seconds:14,.0f} assignments/s  "
          f"({ref_seconds / seconds:.1f}x ragframe's time); every value equal: {agree}")  # fmt: skip
    return agree


def bench_ragchecker(total: int, repeat: int, seed: int) -> bool:
    rows = ragchecker_rows(total, seed)
    cells = sum(len(r["answer2response"]) * len(r["retrieved2response"][0]) + len(r["response2answer"])
                * len(r["retrieved2answer"][0]) for r in rows)  # fmt: skip
    schema = {
        "answer2response": pl.List(pl.String),
        "response2answer": pl.List(pl.String),
        "retrieved2response": pl.List(pl.List(pl.String)),
        "retrieved2answer": pl.List(pl.List(pl.String)),
    }
    frame = pl.DataFrame({c: pl.Series([r[c] for r in rows], dtype=t) for c, t in schema.items()})  # fmt: skip
    seconds, scored = best_of(repeat, lambda: rf.evaluate(frame, ["ragchecker"]))
    print(f"ragchecker: {len(rows):,} rows, {cells:,} claim x passage entailments")
    print(f"  ragframe     {seconds:8.3f} s  {cells / seconds:14,.0f} entailments/s (all 11 metrics)")
    computation = ragchecker_computation()
    if computation is None:
        print("  RAGChecker   not installed (pip install --no-deps ragchecker==0.1.9)")
        return True
    functions = list(computation.METRIC_FUNC_MAP.values())

    def reference() -> list[dict[str, float]]:
        out = []
        for row in rows:
            result = _Result(**row)
            for function in functions:
                function(result)
            out.append(result.metrics)
        return out

    ref_seconds, ref = best_of(repeat, reference)
    names = [m.removeprefix("ragchecker_") for m in RAGCHECKER_METRICS]
    expected = np.array([[float(m[name]) for name in names] for m in ref])
    agree = bool((scored.select(RAGCHECKER_METRICS).to_numpy() == expected).all())
    print(f"  RAGChecker   {ref_seconds:8.3f} s  {cells / ref_seconds:14,.0f} entailments/s  "
          f"({ref_seconds / seconds:.1f}x ragframe's time); every value equal: {agree}")  # fmt: skip
    return agree


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--nuggets", type=int, default=1_000_000, help="nugget assignments (default 1,000,000)")
    parser.add_argument("--entailments", type=int, default=1_000_000, help="claim x passage verdicts (1,000,000)")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs of each tool (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    ok = bench_nuggets(args.nuggets, args.repeat, args.seed)
    ok = bench_ragchecker(args.entailments, args.repeat, args.seed) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
