"""Throughput and peak memory of ``ragframe eval`` (streaming) against in-memory ``rf.evaluate``.

What is measured
----------------
The log is the synthetic RAG log of ``benchmarks/heuristics.py`` (imported from it, not
copied): one row per answered question with ``id``, a 13-word ``question``, a 57-word
``answer``, 5 ``contexts`` of about 100 words and a 40-word ``ground_truth`` (10% null).
Its generator writes any number of rows chunk by chunk (the first 1,000,000 rows of the
4,000,000-row log are the 1,000,000-row log), so every size is generated directly and
cached under ``--data-dir`` (``benchmarks/_data/``, gitignored; about 610 MB a million
rows). Before timing, the file is read once so that both tools read it from the page cache.

For each size (``--rows``, default 1,000,000 and 4,000,000) two fresh processes run, each
under ``/usr/bin/time -v``:

- ``ragframe eval``: ``python -m ragframe.cli eval LOG -o OUT --overwrite --no-progress``
  with the same interpreter and default settings (``--batch-rows`` 100,000, every metric the
  columns allow, the ``id`` column kept): read each batch, score all seven heuristic
  metrics with composite score and pass/fail, write one Parquet part and its summary state
  per batch, the manifest after each part, then the merged summary. Its seconds are the
  whole process's wall clock from ``time -v`` ("Elapsed (wall clock)"): interpreter
  start-up, imports, reading, scoring, writing and the summary. Its own clock (the "scored
  N rows in S s" line, ``evaluate_parquet`` only) is printed too.
- ``in-memory evaluate``: this script's hidden worker, which does what
  ``heuristics.py``'s ragframe worker does: stream ``--memory-batch-rows`` rows at a time
  (100,000 by default) with ``pl.scan_parquet(LOG).slice(...).collect()`` and score each
  batch with ``rf.evaluate(df)``, keeping only the score columns. Its seconds are the
  ``rf.evaluate`` calls only (``time.perf_counter``, reading left out), as in
  ``heuristics.py``. Above ``--reference-rows`` rows (1,000,000 by default; 0 = all) it
  scores only the first ``--reference-rows`` rows, and the table says so.

Both score with ragframe's default heuristic methods. With ``--compat``, both score with the
seed's methods instead (``rag-eval-node-ts``): ``ragframe eval`` gets ``--compat
rag-eval-node-ts`` and the worker calls ``rf.evaluate(df, compat="rag-eval-node-ts")``, so the
seed's methods can be timed like for like against a ragframe from before the default methods
changed. The notes say which methods were timed.

Peak RSS is "Maximum resident set size" from ``time -v`` (the kernel's ``ru_maxrss`` of
the process, reported by ``wait4``). On Linux that is the largest of the process and the
children it waited for: a log of more than ``--batches-per-process`` batches (10 by
default) is scored in child processes, and their peaks count. For the in-memory worker
its own ``VmHWM`` is shown next to it as a cross-check. Where ``/usr/bin/time`` is missing (or with
``--no-gnu-time``), a small wrapper process runs the command and reports the wall clock
and ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``; the output says so. MB = 2**20
bytes.

Targets (reported, the library is not tuned here): ``ragframe eval`` rows/s at least 90%
of in-memory ``rf.evaluate`` rows/s on the same rows (end-to-end process against the
scoring calls alone: the strict reading), and ``ragframe eval`` peak RSS under 3 GiB
(3,072 MB) at every size; a flat peak across sizes shows memory is bounded. As a check
that both scored the same rows the same way, the first rows of ``OUT/scores`` are compared
with the in-memory scores (seven metrics and ``composite_score``, within 1e-9).

The load average (``os.getloadavg``) is printed before and after each process: other
processes on the machine slow both tools down and are not controlled here.

Exit status: 0 when every process ran, the scores agree and both targets pass at every
size; 1 otherwise.

Usage, from the repository root::

    python benchmarks/streaming.py                        # 1M and 4M rows: about 12 min on 2 cores
    python benchmarks/streaming.py --rows 1000000
    python benchmarks/streaming.py --rows 4000000 --reference-rows 0 --keep-output
    python benchmarks/streaming.py --rows 1000000 --compat   # the seed's methods
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import heuristics  # noqa: E402  (the log generator, shared with heuristics.py)
from procstat import cpu_seconds, failure_reason, status_mb  # noqa: E402

GNU_TIME = Path("/usr/bin/time")
RESULT_PREFIX = "BENCH-RESULT "
RSS_TARGET_MB = 3 * 1024  # 3 GiB
THROUGHPUT_TARGET = 0.9  # ragframe eval rows/s >= 90% of in-memory rf.evaluate rows/s
BOUNDED_SLACK = 1.10  # "memory bounded" when the largest size's peak is within 10% of the smallest's
TOLERANCE = 1e-9
COMPAT = "rag-eval-node-ts"  # --compat: the seed's heuristic methods, in ragframe eval and rf.evaluate


# ----------------------------------------------------------------------------- workers (own process)


def work_in_memory(
    path: Path, scores_path: Path, batch_rows: int, limit: int, compat: str | None = None
) -> dict[str, Any]:
    """Score the first ``limit`` rows (0 = all) as heuristics.py's ragframe worker does (``compat`` passed on)."""
    import polars as pl

    import ragframe as rf
    from ragframe.io.memory import trim_heap

    read = seconds = 0.0
    cpu = cpu_seconds()
    parts, ids, batches = [], [], 0
    total = pl.scan_parquet(path).select(pl.len()).collect().item()
    if limit:
        total = min(total, limit)
    for first in range(0, total, batch_rows):
        start = time.perf_counter()
        df = pl.scan_parquet(path).slice(first, min(batch_rows, total - first)).collect()
        read += time.perf_counter() - start
        start = time.perf_counter()
        scored_batch = rf.evaluate(df) if compat is None else rf.evaluate(df, compat=compat)
        parts.append(scored_batch.select(heuristics.SCORES))
        seconds += time.perf_counter() - start
        ids.append(df.get_column("id"))
        batches += 1
        del df
        trim_heap()  # as evaluate_parquet does after each batch (rf.evaluate itself does not trim)
    cpu = cpu_seconds() - cpu
    scored = pl.concat(parts)
    scored.with_columns(pl.concat(ids).alias("id")).write_parquet(scores_path)
    return {"rows": scored.height, "read_seconds": read, "seconds": seconds, "cpu_seconds": cpu, "batches": batches}


def worker_main(args: argparse.Namespace) -> int:
    result: dict[str, Any]
    try:
        import polars  # noqa: F401  (imports untimed)

        import ragframe  # noqa: F401

        compat = COMPAT if args.compat else None
        result = work_in_memory(args.data_file, args.scores_file, args.memory_batch_rows, args.limit, compat)
    except MemoryError:
        result = {"error": "out of memory (MemoryError)"}
    except Exception as exc:
        traceback.print_exc()
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["vm_hwm_mb"] = status_mb("VmHWM")
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 1 if "error" in result else 0


def wrap_main(command: list[str]) -> int:
    """Fallback for /usr/bin/time -v: run ``command``, then print its wall clock and peak RSS the same way."""
    import resource

    start = time.perf_counter()
    proc = subprocess.run(command, check=False)
    elapsed = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # this wrapper's only child: the command
    minutes, secs = divmod(elapsed, 60)
    print(
        f"\tUser time (seconds): {usage.ru_utime:.2f}\n"
        f"\tSystem time (seconds): {usage.ru_stime:.2f}\n"
        f"\tElapsed (wall clock) time (h:mm:ss or m:ss): {int(minutes)}:{secs:05.2f}\n"
        f"\tMaximum resident set size (kbytes): {usage.ru_maxrss}\n"
        f"\tExit status: {proc.returncode}",
        file=sys.stderr,
    )
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode


# ----------------------------------------------------------------------------- driver


@dataclass
class Timed:
    """One process run under /usr/bin/time -v (or the rusage wrapper)."""

    wall_seconds: float | None = None
    cpu_seconds: float | None = None
    max_rss_mb: float | None = None
    stdout: str = ""
    error: str | None = None
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass
class Outcome:
    tool: str
    rows: int = 0
    seconds: float | None = None  # the seconds rows/s is computed from
    own_seconds: float | None = None  # eval: evaluate_parquet's clock; in-memory: read + score
    timed: Timed = field(default_factory=Timed)
    vm_hwm_mb: float | None = None
    note: str = ""

    @property
    def rows_per_second(self) -> float | None:
        return self.rows / self.seconds if self.seconds else None


def time_command(command: list[str], use_gnu_time: bool, timeout: float) -> Timed:
    if use_gnu_time:
        full = [str(GNU_TIME), "-v", *command]
    else:
        full = [sys.executable, str(Path(__file__).resolve()), "--wrap", "--", *command]
    timed = Timed(load_before=os.getloadavg())
    try:
        proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        timed.error = f"timed out after {timeout:g} s"
        return timed
    timed.load_after = os.getloadavg()
    timed.stdout = proc.stdout
    fields = {}
    for line in proc.stderr.splitlines():
        key, sep, value = line.strip().rpartition(": ")
        if sep:
            fields[key] = value.strip()
    status = fields.get("Exit status")
    if proc.returncode != 0 or status not in (None, "0"):
        timed.error = failure_reason(proc)
        print(f"--- failed: {' '.join(command)}\n{proc.stderr.rstrip()}", file=sys.stderr)
        return timed
    elapsed = fields.get("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    if elapsed is not None:
        timed.wall_seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(elapsed.split(":"))))
    if "Maximum resident set size (kbytes)" in fields:
        timed.max_rss_mb = int(fields["Maximum resident set size (kbytes)"]) / 1024
    if "User time (seconds)" in fields and "System time (seconds)" in fields:
        timed.cpu_seconds = float(fields["User time (seconds)"]) + float(fields["System time (seconds)"])
    return timed


def ensure_log(args: argparse.Namespace, rows: int) -> tuple[Path, dict[str, Any]] | None:
    """The cached log of ``rows`` rows, generated by heuristics.py's generator in its own process when missing."""
    data = heuristics.data_path(args.data_dir, rows, args.seed, args.pool, args.zipf)
    if args.regenerate or not data.exists() or not data.with_suffix(".json").exists():
        print(f"generating {rows:,} rows -> {data}", flush=True)
        flags = ["--data-file", str(data), "--gen-rows", str(rows), "--seed", str(args.seed)]
        flags += ["--pool", str(args.pool), "--zipf", str(args.zipf)]
        info = heuristics.run_worker("generate", argparse.Namespace(timeout=args.timeout), flags)
        if "error" in info:
            print(f"  generation failed: {info['error']}")
            return None
        print(f"  generated in {info['generation_seconds']:.1f} s ({info['file_mb']:.0f} MB)", flush=True)
    return data, json.loads(data.with_suffix(".json").read_text())


def warm_page_cache(path: Path) -> float:
    start = time.perf_counter()
    with open(path, "rb") as handle:
        while handle.read(16 << 20):
            pass
    return time.perf_counter() - start


def run_eval(args: argparse.Namespace, data: Path, out: Path) -> Outcome:
    command = [sys.executable, "-m", "ragframe.cli", "eval", str(data), "-o", str(out), "--overwrite", "--no-progress"]
    if args.batch_rows is not None:
        command += ["--batch-rows", str(args.batch_rows)]
    if args.compat:
        command += ["--compat", COMPAT]
    outcome = Outcome("ragframe eval")
    outcome.timed = time_command(command, args.use_gnu_time, args.timeout)
    if outcome.timed.error is None:
        match = re.search(r"scored ([\d,]+) of ([\d,]+) rows .* in ([\d.]+) s", outcome.timed.stdout)
        if match is None:
            outcome.timed.error = "no 'scored N of M rows' line in the output of ragframe eval"
        else:
            outcome.rows = int(match.group(1).replace(",", ""))
            outcome.own_seconds = float(match.group(3))
            outcome.seconds = outcome.timed.wall_seconds
    return outcome


def run_in_memory(args: argparse.Namespace, data: Path, scores: Path) -> Outcome:
    command = [
        sys.executable, str(Path(__file__).resolve()), "--worker", "--data-file", str(data),
        "--scores-file", str(scores), "--memory-batch-rows", str(args.memory_batch_rows),
        "--limit", str(args.reference_rows),
    ]  # fmt: skip
    if args.compat:
        command.append("--compat")
    outcome = Outcome("in-memory evaluate")
    outcome.timed = time_command(command, args.use_gnu_time, args.timeout)
    if outcome.timed.error is not None:
        return outcome
    for line in outcome.timed.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX) :])
            if "error" in result:
                outcome.timed.error = result["error"]
                return outcome
            outcome.rows, outcome.seconds = result["rows"], result["seconds"]
            outcome.own_seconds = result["read_seconds"] + result["seconds"]
            outcome.vm_hwm_mb = result["vm_hwm_mb"]
            outcome.note = f"{result['batches']} batch" + ("es" if result["batches"] > 1 else "")
            return outcome
    outcome.timed.error = "the worker printed no result"
    return outcome


def compare_scores(out: Path, reference: Path) -> tuple[bool, str]:
    """Largest |difference| of the eight scores between eval's output and the in-memory scores, on their rows."""
    import polars as pl

    ours = pl.read_parquet(reference)
    theirs = pl.scan_parquet(out / "scores" / "*.parquet").select("id", *heuristics.SCORES).head(ours.height).collect()
    if not ours.get_column("id").equals(theirs.get_column("id")):
        return False, "ids differ: the two tools did not score the same rows in the same order"
    worst, worst_name, nulls = 0.0, "", 0
    for name in heuristics.SCORES:
        a, b = ours.get_column(name), theirs.get_column(name)
        nulls += int((a.is_null() != b.is_null()).sum())
        diff = (a - b).abs().fill_nan(math.inf)
        biggest = 0.0 if diff.null_count() == diff.len() else float(diff.max())  # type: ignore[arg-type]
        if biggest >= worst:
            worst, worst_name = biggest, name
    agree = nulls == 0 and worst <= TOLERANCE
    verdict = "agree within 1e-9" if agree else "DISAGREE"
    return agree, (
        f"scores of ragframe eval vs in-memory evaluate on the first {ours.height:,} rows: {verdict}"
        f" (max |diff| {worst:.1e} in {worst_name}, {nulls} null mismatches)"
    )


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _load(load: tuple[float, float, float]) -> str:
    return " ".join(f"{x:.2f}" for x in load)


def print_table(results: list[tuple[int, Outcome, Outcome]]) -> tuple[list[str], bool]:
    header = [
        "rows", "tool", "rows timed", "seconds", "rows/s", "CPU s", "peak RSS MB", "VmHWM MB",
        "eval/in-mem rows/s", "throughput >= 90%", "RSS < 3 GiB",
    ]  # fmt: skip
    table, ok = [], True
    for rows, ev, mem in results:
        ratio = None
        if ev.rows_per_second and mem.rows_per_second:
            ratio = ev.rows_per_second / mem.rows_per_second
        throughput_ok = ratio is not None and ratio >= THROUGHPUT_TARGET
        rss_ok = ev.timed.max_rss_mb is not None and ev.timed.max_rss_mb < RSS_TARGET_MB
        ok = ok and throughput_ok and rss_ok and ev.timed.error is None and mem.timed.error is None
        for o in (ev, mem):
            if o.timed.error is not None:
                table.append([f"{rows:,}", o.tool, "FAILED: " + o.timed.error] + [""] * (len(header) - 3))
                continue
            is_eval = o is ev
            table.append(
                [
                    f"{rows:,}",
                    o.tool,
                    f"{o.rows:,}" + (" (first rows)" if o.rows < rows else ""),
                    _fmt(o.seconds, ".1f"),
                    _fmt(o.rows_per_second, ",.0f"),
                    _fmt(o.timed.cpu_seconds, ".1f"),
                    _fmt(o.timed.max_rss_mb, ",.0f"),
                    _fmt(o.vm_hwm_mb, ",.0f"),
                    ("-" if ratio is None else f"{ratio:.2f}") if is_eval else "(reference)",
                    ("PASS" if throughput_ok else "FAIL") if is_eval else "",
                    ("PASS" if rss_ok else "FAIL") if is_eval else "",
                ]
            )
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    lines = []
    for line in [header, *table]:
        lines.append("  ".join(c.ljust(w) if i == 1 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
    return lines, ok


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 4_000_000], help="log sizes")
    parser.add_argument(
        "--reference-rows", type=int, default=1_000_000, help="in-memory evaluate scores the first N rows (0 = all)"
    )
    parser.add_argument(
        "--memory-batch-rows", type=int, default=100_000, help="rows per rf.evaluate call of the in-memory reference"
    )
    parser.add_argument(
        "--batch-rows", type=int, default=None, help="pass --batch-rows to ragframe eval (default: its own default)"
    )
    parser.add_argument(
        "--compat",
        action="store_true",
        help=f"time the seed's heuristic methods: ragframe eval --compat {COMPAT}, rf.evaluate(compat='{COMPAT}')",
    )
    parser.add_argument("--keep-output", action="store_true", help="keep ragframe eval's output folders")
    parser.add_argument("--out-dir", type=Path, default=None, help="parent of the output folders (default: data dir)")
    parser.add_argument(
        "--no-gnu-time", action="store_true", help="use the getrusage wrapper even if /usr/bin/time exists"
    )
    parser.add_argument("--pool", type=int, default=100_000, help="passages in the retrieval pool (generator)")
    parser.add_argument("--zipf", type=float, default=0.9, help="popularity exponent of the passages (generator)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=HERE / "_data")
    parser.add_argument("--regenerate", action="store_true", help="rebuild the cached Parquet files")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per process")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--scores-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if any(r < 1 for r in args.rows) or args.memory_batch_rows < 1 or args.reference_rows < 0:
        parser.error("--rows and --memory-batch-rows must be >= 1, --reference-rows >= 0")
    if args.batch_rows is not None and args.batch_rows < 1:
        parser.error("--batch-rows must be >= 1")
    args.use_gnu_time = GNU_TIME.exists() and not args.no_gnu_time
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--wrap"]:
        return wrap_main(argv[2:] if argv[1:2] == ["--"] else argv[1:])
    args = parse_args(argv)
    if args.worker:
        return worker_main(args)

    started = time.perf_counter()
    print(f"load average at start (1, 5, 15 min): {_load(os.getloadavg())}; {os.cpu_count()} cores", flush=True)
    if args.use_gnu_time:
        print(f"wall clock and peak RSS of each process: {GNU_TIME} -v", flush=True)
    else:
        why = "--no-gnu-time" if GNU_TIME.exists() else f"{GNU_TIME} not found"
        print(f"wall clock and peak RSS: getrusage(RUSAGE_CHILDREN) of a wrapper process ({why})", flush=True)
    out_parent = args.out_dir or args.data_dir
    out_parent.mkdir(parents=True, exist_ok=True)
    results: list[tuple[int, Outcome, Outcome]] = []
    notes: list[str] = []
    agree_all = True
    for rows in args.rows:
        found = ensure_log(args, rows)
        if found is None:
            return 1
        data, info = found
        print(f"reading {data.name} once into the page cache: {warm_page_cache(data):.1f} s", flush=True)
        work = Path(tempfile.mkdtemp(prefix=f"streaming-r{rows}-", dir=out_parent))
        try:
            print(f"timing ragframe eval on {rows:,} rows -> {work / 'out'} ...", flush=True)
            ev = run_eval(args, data, work / "out")
            print(
                f"  {_fmt(ev.seconds, '.1f')} s, load {_load(ev.timed.load_before)} -> {_load(ev.timed.load_after)}",
                flush=True,
            )
            first = f"first {min(rows, args.reference_rows):,}" if args.reference_rows else "all"
            print(f"timing in-memory evaluate on the {first} rows ...", flush=True)
            mem = run_in_memory(args, data, work / "in-memory-scores.parquet")
            print(
                f"  {_fmt(mem.seconds, '.1f')} s, load {_load(mem.timed.load_before)} -> {_load(mem.timed.load_after)}",
                flush=True,
            )
            results.append((rows, ev, mem))
            notes.append(
                f"{rows:,} rows (Parquet {info['file_mb']:,.0f} MB): ragframe eval's own clock (evaluate_parquet)"
                f" {_fmt(ev.own_seconds, '.1f')} s, process wall {_fmt(ev.timed.wall_seconds, '.1f')} s;"
                f" in-memory read + evaluate {_fmt(mem.own_seconds, '.1f')} s ({mem.note}),"
                f" process wall {_fmt(mem.timed.wall_seconds, '.1f')} s; load average before/after:"
                f" eval {_load(ev.timed.load_before)} / {_load(ev.timed.load_after)},"
                f" in-memory {_load(mem.timed.load_before)} / {_load(mem.timed.load_after)}"
            )
            if ev.own_seconds and mem.own_seconds and mem.rows:
                lenient = (ev.rows / ev.own_seconds) / (mem.rows / mem.own_seconds)
                notes.append(
                    f"{rows:,} rows: eval/in-memory rows/s on reading + scoring only (evaluate_parquet's clock"
                    f" against read + evaluate): {lenient:.2f}"
                )
            if ev.timed.error is None and mem.timed.error is None:
                agree, line = compare_scores(work / "out", work / "in-memory-scores.parquet")
                agree_all = agree_all and agree
                notes.append(f"{rows:,} rows: {line}")
        finally:
            if args.keep_output:
                print(f"  output kept in {work}", flush=True)
            else:
                shutil.rmtree(work, ignore_errors=True)

    lines, ok = print_table(results)
    print()
    for line in lines:
        print(line)
    peaks = [ev.timed.max_rss_mb for _, ev, _ in results if ev.timed.max_rss_mb]
    if len(peaks) > 1:
        growth = max(peaks) / min(peaks)
        verdict = "bounded" if growth <= BOUNDED_SLACK else "GROWS with the log"
        sizes = " / ".join(f"{p:,.0f}" for p in peaks)
        notes.append(f"ragframe eval peak RSS across sizes: {sizes} MB, max/min {growth:.2f}: memory {verdict}")
    if args.reference_rows and any(rows > args.reference_rows for rows in args.rows):
        notes.append(
            f"in-memory evaluate scored only the first {args.reference_rows:,} rows of larger logs"
            " (--reference-rows 0 for all); its rows/s is compared with eval's on all rows"
        )
    notes += [
        "seconds: ragframe eval = wall clock of the whole process (start-up, imports, read, score, write, summary);"
        " in-memory = the rf.evaluate calls only (reading and imports left out, as in heuristics.py)",
        "rows/s = rows timed / seconds; eval/in-mem rows/s >= 0.90 passes the throughput target",
        "peak RSS = Maximum resident set size of the process"
        + (" (/usr/bin/time -v)" if args.use_gnu_time else " (getrusage(RUSAGE_CHILDREN) of a wrapper)")
        + "; VmHWM = the in-memory worker's own high-water mark; MB = 2**20 bytes; RSS target: eval < 3,072 MB",
        f"ragframe eval with default settings (--batch-rows {_default_batch_rows():,})"
        if args.batch_rows is None
        else f"ragframe eval with --batch-rows {args.batch_rows:,} (not the default)",
        f"in-memory evaluate in batches of {args.memory_batch_rows:,} rows",
        f"heuristic methods: the seed's (--compat: eval --compat {COMPAT}, rf.evaluate(compat='{COMPAT}'))"
        if args.compat
        else "heuristic methods: ragframe's default (no compat)",
        f"ragframe {heuristics.ragframe_version()}; polars {_polars_version()}; Python {sys.version.split()[0]}",
        f"load average at end (1, 5, 15 min): {_load(os.getloadavg())}; other processes may have been running",
        f"total wall time of this script: {time.perf_counter() - started:,.0f} s",
    ]
    for note in notes:
        print("  note: " + note)
    return 0 if ok and agree_all else 1


def _default_batch_rows() -> int:
    from ragframe.io.streaming import DEFAULT_BATCH_ROWS

    return DEFAULT_BATCH_ROWS


def _polars_version() -> str:
    from importlib.metadata import version

    return version("polars")


if __name__ == "__main__":
    sys.exit(main())
