"""Ray Data at 1, 2, ... CPUs against the single-process streaming path, on the synthetic RAG log.

What is measured
----------------
The log is ``benchmarks/heuristics.py``'s synthetic RAG log (the generator is imported, and
its cached Parquet file under ``--data-dir`` reused): ``id``, ``question``, ``answer``, 5
``contexts`` of about 100 words, ``ground_truth``; 100,000 rows a row group. Every run scores
the seven heuristic metrics (ragframe's default methods) with composite score and pass flags,
keeps ``id``, and writes Parquet and a summary. Each run is a fresh process:

- ``streaming``: ``rf.evaluate_parquet(LOG, OUT, batch_rows=100_000, batches_per_process=None,
  keep=["id"])``: read a batch, score it, write its part and summary state; the merged summary.
- ``ray-engine``: ``ray.init(num_cpus=N)`` (a local Ray; ``ray.init`` is not timed, what the run imports is), then
  ``rf.distributed.evaluate_parquet_ray(LOG, OUT, rf.Evaluator(), keep=["id"])``: what
  ``ragframe eval --engine ray`` runs, the streaming run with each 100,000-row batch a Ray task
  (``RayRunner``) that reads, scores and writes its part; the same output as streaming.
- ``ray``: ``ray.init(num_cpus=N)``, then
  ``rf.distributed.score_dataset(ray.data.read_parquet(LOG), keep=["id"])`` ->
  ``write_parquet(OUT)`` -> ``rf.distributed.summarize_dataset(ray.data.read_parquet(OUT))``.
- ``ray-files``: the same with ``score_dataset(LOG, ...)``: the workers read their slices of the
  file themselves (100,000 rows a slice).
- with ``--baseline-code PATH``: every Ray engine again with the ragframe found at PATH (an
  older checkout), labelled ``(baseline)``: a before/after table from one run. Each run starts
  in its checkout's folder (a local Ray's workers import from the driver's working directory
  first) and fails if a Ray worker imported ragframe from anywhere else.

Rounds (``--repeat``) run every engine once each, in turn, so that the load of other jobs
falls on all of them alike; the table gives the median over rounds of rows/s and of the ratio
to the same round's streaming run. "scaling" is rows/s at N CPUs over N times rows/s at 1 CPU.
Ray's workers run at the driver's niceness (``RAY_worker_niceness``; Ray's own default is
15, which on a busy machine measures the other jobs, not Ray). Seconds are wall
clock (``time.perf_counter``) from the first read to the written summary.

With ``--pin``: every run again with its process restricted, before it imports polars or Ray,
to its first N cores (``os.sched_setaffinity``; N is the Ray run's CPU count, the processes
``ray.init`` starts inherit it, checked from a Ray task), and a streaming run per core count,
labelled ``(N core)``: ray-engine at 1 CPU against streaming on 1 core, a per-core comparison
(unpinned, streaming's kernel, read and write threads use every core). Counts of N at or
above the machine's cores are not pinned again (those runs are the unpinned ones). A pinned
Ray run's ratio is to the streaming run pinned to as many cores.

After the runs, every engine's scores (first round) are compared with streaming's, sorted by
``id``: bit for bit (polars ``equals``). Exit status 1 when any differs or a run failed.

Usage, from the repository root (2 to 7 minutes a run at 200,000 rows on 2 cores at load 20 to 40)::

    python benchmarks/distributed.py --rows 200000 --cpus 1 2
    python benchmarks/distributed.py --rows 600000 --cpus 1 2 4 8 16 --repeat 3
    python benchmarks/distributed.py --rows 200000 --cpus 1 2 --engines ray-engine --baseline-code ../old-checkout
    python benchmarks/distributed.py --rows 200000 --cpus 1 2 --engines ray-engine --pin
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
    return {"rows": result.rows, "seconds": time.perf_counter() - start}


def work_ray(path: Path, out: Path, cpus: int, engine: str, batch_rows: int | None, cap: bool) -> dict[str, Any]:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ["RAY_worker_niceness"] = str(os.nice(0))  # Ray's workers compete as the streaming process does
    import pyarrow.parquet as pq
    import ray

    import ragframe as rf

    ray.init(num_cpus=cpus, object_store_memory=1_000_000_000, include_dashboard=False, log_to_driver=False)
    code, cores = _worker_code(ray)
    if engine != "ray-engine":  # the ray-engine imports what it needs, on its clock
        from ray.data import DataContext, read_parquet

        DataContext.get_current().enable_progress_bars = False
    options: dict[str, Any] = {"keep": ["id"]}
    if batch_rows is not None:
        options["batch_size"] = batch_rows
    if cap:
        options["concurrency"] = cpus
    start = time.perf_counter()
    if engine == "ray-engine":
        result = rf.distributed.evaluate_parquet_ray(
            str(path), str(out), rf.Evaluator(), keep=["id"], batch_size=batch_rows
        )
        seconds = time.perf_counter() - start
        ray.shutdown()
        return {
            "rows": result.rows,
            "seconds": seconds,
            "scoring_seconds": seconds,
            "worker_code": code,
            "worker_cores": cores,
        }
    source = str(path) if engine == "ray-files" else read_parquet(str(path))
    rf.distributed.score_dataset(source, rf.Evaluator(), **options).write_parquet(str(out))
    scored = time.perf_counter() - start
    rf.distributed.summarize_dataset(read_parquet(str(out)))
    seconds = time.perf_counter() - start
    ray.shutdown()
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in out.glob("*.parquet"))
    return {"rows": rows, "seconds": seconds, "scoring_seconds": scored, "worker_code": code, "worker_cores": cores}


def _worker_code(ray: Any) -> tuple[str, int]:
    """The checkout a Ray worker imports ragframe from (Ray puts the driver's working directory first), and its cores.

    The cores are those the worker process may run on (its affinity: ``Cpus_allowed_list`` in
    ``/proc/PID/status``), to check that a pinned driver's Ray processes inherit the pinning.
    """

    @ray.remote
    def where() -> tuple[str, int]:
        import ragframe

        return str(Path(ragframe.__file__).resolve().parent.parent), len(os.sched_getaffinity(0))

    return ray.get(where.remote())


def pin(cores: int) -> None:
    """Restrict this process (and the processes it starts) to its first ``cores`` allowed cores.

    Examples
    --------
    >>> pin(len(os.sched_getaffinity(0)))  # all of them: no change
    """
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cores])


def worker_main(args: argparse.Namespace) -> int:
    if args.pin_cores:  # before polars and Ray are imported: their thread pools and processes see these cores
        pin(args.pin_cores)
    try:
        if args.worker == "streaming":
            result = work_streaming(args.data_file, args.out)
        else:
            result = work_ray(args.data_file, args.out, args.ray_cpus, args.worker, args.ray_batch_rows, args.cap)
    except Exception as exc:  # reported in the table, not a traceback in the middle of it
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["driver_peak_mb"] = status_mb("VmHWM")
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 1 if "error" in result else 0


def run_worker(run: dict[str, Any], data: Path, out: Path) -> dict[str, Any]:
    """One run in a fresh process (its own PYTHONPATH for baseline code); its result, CPU time and the load."""
    script = str(Path(__file__).resolve())
    command = [
        sys.executable,
        script,
        "--worker",
        run["engine"],
        "--data-file",
        str(data.resolve()),
        "--out",
        str(out.resolve()),
    ]
    command += ["--ray-cpus", str(run.get("cpus") or 1)]
    if run.get("batch_rows") is not None:
        command += ["--ray-batch-rows", str(run["batch_rows"])]
    if run.get("cap"):
        command += ["--cap"]
    if run.get("pin"):
        command += ["--pin-cores", str(run["pin"])]
    env = dict(os.environ)
    code = Path(run.get("code") or HERE.parent).resolve()
    env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")])
    load = os.getloadavg()[0]
    # run from the checkout: a local Ray's workers put the driver's working directory first on sys.path
    proc = subprocess.run(command, capture_output=True, text=True, check=False, env=env, cwd=code)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if not lines:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}", "load": load}
    result = {**json.loads(lines[-1][len(RESULT_PREFIX) :]), "load": load}
    if result.get("worker_code") not in (None, str(code)):  # a before/after table must compare the code it says
        result["error"] = f"Ray's workers imported ragframe from {result['worker_code']}, not {code}"
    if run.get("pin") and result.get("worker_cores") not in (None, run["pin"]):
        result["error"] = f"Ray's workers may run on {result['worker_cores']} cores, not the {run['pin']} pinned"
    return result


def plan(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The runs of one round: streaming, each Ray engine at each CPU count; with ``--pin``, those pinned again.

    A pinned run has ``pin`` (its cores) and its streaming run (``pin`` cores too) comes first.
    """
    runs: list[dict[str, Any]] = [{"label": "streaming", "engine": "streaming", "cpus": None}]
    for cpus in args.cpus:
        runs += _ray_runs(args, cpus, None)
    cores = len(os.sched_getaffinity(0))
    for cpus in sorted({c for c in args.cpus if c < cores}) if args.pin else []:
        runs.append({"label": f"streaming{_cores(cpus)}", "engine": "streaming", "cpus": None, "pin": cpus})
        runs += _ray_runs(args, cpus, cpus)
    return runs


def _cores(pinned: int | None) -> str:
    return f" ({pinned} core{'s' if pinned > 1 else ''})" if pinned else ""


def _ray_runs(args: argparse.Namespace, cpus: int, pinned: int | None) -> list[dict[str, Any]]:
    """Each Ray engine at ``cpus`` CPUs (and its baseline), pinned to ``pinned`` cores or not."""
    runs = []
    for engine in args.engines:
        if args.baseline_code:
            runs.append(
                {
                    "label": f"{engine} (baseline){_cores(pinned)}",
                    "engine": engine,
                    "cpus": cpus,
                    "code": str(args.baseline_code),
                    "batch_rows": args.baseline_batch_rows,
                    "pin": pinned,
                }
            )
        runs.append(
            {
                "label": f"{engine}{_cores(pinned)}",
                "engine": engine,
                "cpus": cpus,
                "batch_rows": args.ray_batch_rows,
                "pin": pinned,
            }
        )
    return runs


def scores_equal(reference: Path, other: Path) -> bool:
    """The two runs' scores, sorted by id, equal bit for bit (the same columns, dtypes and values)."""
    import polars as pl

    def read(folder: Path) -> pl.DataFrame:
        files = sorted(folder.glob("scores/*.parquet")) or sorted(folder.glob("*.parquet"))
        return pl.read_parquet(files).sort("id")

    want, got = read(reference), read(other)
    return want.columns == got.columns and want.equals(got.select(want.columns))


def report(
    args: argparse.Namespace, runs: list[dict[str, Any]], rounds: list[list[dict[str, Any]]], equal: dict[str, bool]
) -> None:
    print(f"\n{args.rows:,} rows, seven heuristic metrics (default methods), id kept, Parquet in and out, ", end="")
    print(f"{os.cpu_count()} cores, {len(rounds)} round(s): medians\n")
    width = max(22, *(len(run["label"]) for run in runs))
    header = f"{'engine':<{width}} {'CPUs':>4} {'rows/s':>8} {'vs streaming':>12} {'scaling':>8}"
    print(header + f" {'load':>10} {'scores equal':>12}")
    # a Ray run's ratio is to streaming pinned to as many cores (or unpinned); a streaming run's to unpinned streaming
    streaming_at = {run.get("pin"): index for index, run in enumerate(runs) if run["engine"] == "streaming"}
    one_cpu: dict[tuple[str, bool], float] = {}
    for index, run in enumerate(runs):
        results = [r[index] for r in rounds]
        if any("error" in r for r in results):
            print(f"{run['label']:<{width}} failed: {next(r['error'] for r in results if 'error' in r)}")
            continue
        streaming = [r[0 if run["engine"] == "streaming" else streaming_at[run.get("pin")]] for r in rounds]
        rates = [r["rows"] / r["seconds"] for r in results]
        ratios = [rate / (s["rows"] / s["seconds"]) for rate, s in zip(rates, streaming) if "error" not in s]
        rate = statistics.median(rates)
        cpus = run["cpus"]
        family = (run["label"].removesuffix(_cores(run.get("pin"))), bool(run.get("pin")))
        if cpus == 1:
            one_cpu[family] = rate
        base = one_cpu.get(family)
        scaling = f"{rate / (cpus * base):.0%}" if cpus and base else ""
        loads = [r["load"] for r in results]
        load = f"{min(loads):.1f}-{max(loads):.1f}" if len(loads) > 1 else f"{loads[0]:.1f}"
        ratio = f"{statistics.median(ratios):.2f}" if ratios else ""
        same = "reference" if index == 0 else {True: "yes", False: "NO", None: ""}[equal.get(_key(run))]
        print(f"{run['label']:<{width}} {cpus or '':>4} {rate:>8,.0f} {ratio:>12} {scaling:>8} {load:>10} {same:>12}")
    print("\nload: the 1-minute load average when each run started (min-max over rounds)")
    if args.pin:
        print("(N core): the run's processes (Ray's too) pinned to N cores; a Ray run's ratio is to streaming on N")
        print("cores, a pinned streaming run's to unpinned streaming")


def _key(run: dict[str, Any]) -> str:
    return f"{run['label']}-{run['cpus']}".replace(" ", "_").replace("(", "").replace(")", "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=600_000)
    parser.add_argument("--cpus", type=int, nargs="+", default=[1, 2], help="Ray's num_cpus, one run each")
    parser.add_argument(
        "--engines", nargs="+", default=["ray-engine", "ray", "ray-files"], choices=["ray-engine", "ray", "ray-files"]
    )
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every run")
    parser.add_argument("--ray-batch-rows", type=int, help="score_dataset batch_size (default: its own)")
    parser.add_argument("--baseline-code", type=Path, help="an older checkout to run Ray with too")
    parser.add_argument("--baseline-batch-rows", type=int, help="the baseline's batch_size (default: its own)")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="also run each CPU count pinned to as many cores (os.sched_setaffinity), streaming too: a per-core table",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=HERE / "_data")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--data-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--ray-cpus", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--cap", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--pin-cores", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args)
    data = heuristics.data_path(args.data_dir, args.rows, args.seed, 100_000, 0.9)
    if not data.exists():
        args.data_dir.mkdir(parents=True, exist_ok=True)
        heuristics.generate(data, args.rows, args.seed, 100_000, 0.9)
    runs = plan(args)
    rounds: list[list[dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(args.repeat):
            results = []
            for run in runs:
                out = Path(tmp) / f"{_key(run)}-{number}"
                result = run_worker(run, data, out)
                print(f"round {number + 1}: {_key(run)}: {json.dumps(result)}", file=sys.stderr, flush=True)
                results.append(result)
            rounds.append(results)
        reference = Path(tmp) / f"{_key(runs[0])}-0"
        equal = {
            _key(run): scores_equal(reference, Path(tmp) / f"{_key(run)}-0")
            for run, result in zip(runs[1:], rounds[0][1:])
            if "error" not in result and "error" not in rounds[0][0]
        }
    report(args, runs, rounds, equal)
    failed = any("error" in r for results in rounds for r in results)
    return 0 if all(equal.values()) and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
