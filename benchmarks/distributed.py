"""Ray Data (local, 2 workers) against the single-process streaming path, on a 1M-row RAG log.

What is measured
----------------
The log is ``benchmarks/heuristics.py``'s synthetic RAG log (the generator is imported, and
its cached Parquet file under ``benchmarks/_data/`` reused): ``id``, ``question``, ``answer``,
5 ``contexts`` of about 100 words, ``ground_truth``. Every run scores the seven heuristic
metrics (ragframe's default methods) with composite score and pass flags, keeps ``id``,
and writes Parquet. Each engine runs in a fresh process of its own:

- ``streaming``: ``rf.evaluate_parquet(LOG, OUT, batch_rows=100_000, batches_per_process=None)``:
  the single-process path (read a batch, score it, write a part and its summary state,
  then the merged summary).
- ``ray``: ``ray.init(num_cpus=2)`` (a local Ray: the driver plus 2 worker processes), then
  ``ray.data.read_parquet(LOG)`` -> ``rf.distributed.score_dataset(..., keep=["id"],
  batch_size=--ray-batch-rows, concurrency=2)`` -> ``write_parquet(OUT)``, then
  ``rf.distributed.summarize_dataset`` over the written scores. ``ray.init`` is timed apart.

Seconds are wall clock (``time.perf_counter``) around the job, imports left out. "driver
peak" is the measuring process's own ``VmHWM`` (peak resident memory): for streaming that is
the whole job; for Ray it is the driver only (the workers and the object store are other
processes: their memory is the cluster's, not the driver's). MB = 2**20 bytes.

Scaling projection
------------------
Before the runs, one block of ``--ray-batch-rows`` rows is scored in a fresh process by the
same batch function (:class:`ragframe.distributed.BatchScorer`) three times; the median is
the per-block cost (the heuristic kernels tokenise on a thread per core, so this one
process may use both cores). The projection takes the rate local Ray measured end to end
(reading, scoring, Arrow hand-offs, writing, the summary, and whatever else ran on the
machine) per core, ``r = rows/s / 2``, and gives N machines of K cores ``N * K * r``: an
**estimate**, assuming rows spread evenly over blocks (many more blocks than cores),
cores as fast as these, object storage that keeps up with reading and writing, and no cost
that grows with N (scoring is a map; a summary is one small state per block; the driver
only schedules). Judge metrics scale with the model endpoint's rate limit, not with N.

Usage, from the repository root (about 10 minutes on 2 busy cores)::

    nice python benchmarks/distributed.py --rows 1000000
    python benchmarks/distributed.py --rows 100000 --machines 1 4 16 64
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import heuristics  # noqa: E402  (the log generator, shared with heuristics.py and streaming.py)
from procstat import status_mb  # noqa: E402

RESULT_PREFIX = "BENCH-RESULT "


def work_streaming(path: Path, out: Path) -> dict[str, Any]:
    import ragframe as rf

    start = time.perf_counter()
    result = rf.evaluate_parquet(path, out, batch_rows=100_000, batches_per_process=None, keep=["id"], progress=False)
    return {"rows": result.scored, "seconds": time.perf_counter() - start}


def work_ray(path: Path, out: Path, batch_rows: int) -> dict[str, Any]:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    import ragframe as rf

    start = time.perf_counter()
    ray.init(num_cpus=2, object_store_memory=1_000_000_000, include_dashboard=False, log_to_driver=False)
    from ray.data import DataContext, read_parquet

    DataContext.get_current().enable_progress_bars = False
    started = time.perf_counter()
    init = started - start
    scored = rf.distributed.score_dataset(
        read_parquet(str(path)), rf.Evaluator(), keep=["id"], batch_size=batch_rows, concurrency=2
    )
    scored.write_parquet(str(out))
    scoring = time.perf_counter() - started
    summary = rf.distributed.summarize_dataset(read_parquet(str(out)))
    seconds = time.perf_counter() - started
    rows = int(summary.filter(summary["metric"] == "faithfulness")["count"][0] + 0)
    nulls = int(summary.filter(summary["metric"] == "faithfulness")["null_count"][0])
    ray.shutdown()
    return {"rows": rows + nulls, "seconds": seconds, "scoring_seconds": scoring, "init_seconds": init}


def block_cost(path: Path, batch_rows: int) -> dict[str, Any]:
    """Median seconds of the batch function on one block of ``batch_rows`` rows, in this process."""
    import pyarrow.parquet as pq

    import ragframe as rf

    table = pq.ParquetFile(path).iter_batches(batch_size=batch_rows).__next__()
    scorer = rf.distributed.BatchScorer(rf.Evaluator(), keep=("id",))
    times = []
    for _ in range(3):
        start = time.perf_counter()
        scorer(table)
        times.append(time.perf_counter() - start)
    return {"block_rows": table.num_rows, "block_seconds": statistics.median(times)}


def worker_main(args: argparse.Namespace) -> int:
    try:
        if args.worker == "streaming":
            result = work_streaming(args.data_file, args.out)
        elif args.worker == "ray":
            result = work_ray(args.data_file, args.out, args.ray_batch_rows)
        else:
            result = block_cost(args.data_file, args.ray_batch_rows)
    except Exception as exc:  # reported in the table, not a traceback in the middle of it
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["driver_peak_mb"] = status_mb("VmHWM")
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 1 if "error" in result else 0


def run_worker(role: str, args: argparse.Namespace, data: Path, out: Path) -> dict[str, Any]:
    command = [sys.executable, __file__, "--worker", role, "--data-file", str(data), "--out", str(out)]
    command += ["--ray-batch-rows", str(args.ray_batch_rows)]
    load = os.getloadavg()[0]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}", "load": load}
    return {**json.loads(lines[-1][len(RESULT_PREFIX) :]), "load": load}


def report(rows: int, results: dict[str, dict[str, Any]], machines: list[int], cores: int) -> None:
    print(f"\n{rows:,} rows, seven heuristic metrics (default methods), id kept, Parquet in and out\n")
    print(f"{'engine':<34} {'seconds':>9} {'rows/s':>9} {'driver peak MB':>15} {'load':>5}")
    for name, label in (("streaming", "rf.evaluate_parquet (1 process)"), ("ray", "Ray Data, local, 2 workers")):
        r = results[name]
        if "error" in r:
            print(f"{label:<34} failed: {r['error']}")
            continue
        rate = r["rows"] / r["seconds"]
        print(f"{label:<34} {r['seconds']:>9.1f} {rate:>9,.0f} {r['driver_peak_mb']:>15,.0f} {r['load']:>5.1f}")
    ray_result, cost = results["ray"], results["block"]
    if "error" in ray_result or "error" in cost:
        return
    print(
        f"\nray.init: {ray_result['init_seconds']:.1f} s (not counted); scoring and writing alone: "
        f"{ray_result['scoring_seconds']:.1f} s, summarize_dataset after it: "
        f"{ray_result['seconds'] - ray_result['scoring_seconds']:.1f} s"
    )
    one_process = cost["block_rows"] / cost["block_seconds"]
    measured = ray_result["rows"] / ray_result["seconds"]
    per_core = measured / 2
    print(
        f"per-block cost: {cost['block_seconds']:.2f} s for {cost['block_rows']:,} rows in one process "
        f"({one_process:,.0f} rows/s; its tokeniser threads may use both cores); local Ray with 2 workers: "
        f"{measured:,.0f} rows/s end to end = {per_core:,.0f} rows/s a core ({measured / one_process:.0%} of one "
        "process scoring blocks back to back)"
    )
    print(f"\nprojection (an estimate: see the module doc for the assumptions), {cores} cores a machine:")
    print(f"{'machines':>9} {'rows/s':>12} {'1B rows':>10}")
    for n in machines:
        rate = n * cores * per_core
        print(f"{n:>9} {rate:>12,.0f} {1e9 / rate / 3600:>8.1f} h")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--ray-batch-rows", type=int, default=20_000, help="score_dataset batch_size")
    parser.add_argument("--machines", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--cores", type=int, default=16, help="cores a machine in the projection")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=HERE / "_data")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--data-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args)
    data = heuristics.data_path(args.data_dir, args.rows, args.seed, 100_000, 0.9)
    if not data.exists():
        args.data_dir.mkdir(parents=True, exist_ok=True)
        heuristics.generate(data, args.rows, args.seed, 100_000, 0.9)
    with tempfile.TemporaryDirectory() as tmp:
        results = {"block": run_worker("block", args, data, Path(tmp) / "none")}
        for name in ("streaming", "ray"):
            results[name] = run_worker(name, args, data, Path(tmp) / name)
    report(args.rows, results, args.machines, args.cores)
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
