"""Speed of ragframe's long-format ranking evaluation against pytrec_eval and ranx.

What is measured
----------------
A synthetic TREC-style run (Q queries x ``--docs`` retrieved documents, MS MARCO-like
numeric doc ids) and graded qrels (about 20 judgments a query, grades 0..3, at least one
relevant document per query) are generated once, deterministically, and cached as Parquet
under ``--data-dir``. For each tool, a fresh Python process (this script with the hidden
``--worker`` flag) times the whole job end to end: read the Parquet files, build the
tool's input, score every query, and average the five measures

    ndcg@10 (ndcg_cut_10), mrr (recip_rank), recall@100, precision@10 (P_10),
    hit_rate@10 (success_10).

The clock (``time.perf_counter``) starts after interpreter start-up and after the imports,
so it counts reading, conversion and evaluation only. ranx compiles its numba kernels on
first use (later processes load them from numba's on-disk cache); that warm-up, on a tiny
run, is timed separately and left out of its seconds. Each tool uses the threads it uses by
default: polars (ragframe) and numba (ranx) all cores, pytrec_eval one.

Each worker also reports its peak resident memory. That is ``VmHWM`` from
``/proc/self/status`` where it exists, else ``ru_maxrss``: on Linux a process started
with vfork/posix_spawn (as ``subprocess`` does) inherits its parent's ``ru_maxrss``, so
``ru_maxrss`` alone can report the parent's peak instead of the worker's. Workers run
under ``RLIMIT_AS`` (``--memory-limit-gb``, 20 GB by default) so that running out of
memory fails that worker cleanly; a failed or missing tool is reported and the script
carries on.

``--measures all_trec`` times trec_eval's whole ``all_trec`` set instead: ragframe computes
every measure ``ragframe trec -m all_trec`` prints (per query, then their means),
pytrec_eval every ``all_trec`` measure it has (trec_eval 9's code, default parameters),
ranx does not take part (it has few of them). The means are compared on every measure
both compute alike: not ``iprec_at_recall``/``11pt_avg`` (trec_eval 10 changed their
recall cutoff rule), ``gm_*`` (pytrec_eval returns no per-query geometric value to average),
``relstring``, and ``rbp``/``rbp_resid``/``unj`` (new in trec_eval 10).

Output: one table per Q with each tool's seconds, run rows per second, peak RSS, its
time relative to ragframe's, its CPU seconds (all threads, user + system: on a loaded
machine a steadier figure than the wall clock) and their ratio to ragframe's, and whether
its means agree with ragframe's within 1e-9. With ``--repeat`` the tools take turns (one
process of each, then again), so that a change in the load of a shared machine falls on
every tool alike; the best wall time and the lowest CPU time of each are shown. Exit
status: 0 when every tool that ran agrees with ragframe (a peer that failed or is not
installed does not count), 1 when a peer's means disagree or ragframe itself fails.

Usage, from the repository root::

    pip install -e '.[bench]'
    python benchmarks/ranking.py --queries 10000
    python benchmarks/ranking.py --queries 10000,100000 --tools ragframe,ranx --repeat 3
    python benchmarks/ranking.py --queries 100000 --measures all_trec --tools ragframe,pytrec_eval
    python benchmarks/ranking.py --queries 100000 --tools ragframe,pytrec_eval --baseline ../ragframe-old

``--baseline DIR`` also times ragframe as imported from another checkout (its worker runs with
``PYTHONPATH=DIR``), shown as ``ragframe@baseline``: its means must equal the current ones,
and its "x ragframe" column is the speed-up, measured in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from procstat import failure_reason, peak_rss_mb, status_mb

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

TOOLS = ("ragframe", "pytrec_eval", "ranx")
#: The five measures, by the names shown in the table (ranx's spelling), and how the others spell them.
MEASURES = ("ndcg@10", "mrr", "recall@100", "precision@10", "hit_rate@10")
RAGFRAME_METRICS = ["ndcg_at_k", "mrr", "recall_at_k", "precision_at_k", "hit_rate_at_k"]
RAGFRAME_COLUMNS = {
    "ndcg@10": "ndcg_at_10",
    "mrr": "mrr",
    "recall@100": "recall_at_100",
    "precision@10": "precision_at_10",
    "hit_rate@10": "hit_rate_at_10",
}
TREC_MEASURES = {"ndcg_cut.10", "recip_rank", "recall.100", "P.10", "success.10"}
TREC_KEYS = {  # the keys pytrec_eval returns per query
    "ndcg@10": "ndcg_cut_10",
    "mrr": "recip_rank",
    "recall@100": "recall_100",
    "precision@10": "P_10",
    "hit_rate@10": "success_10",
}
RANX_METRICS = list(MEASURES)  # ranx uses the same names
BASELINE = "ragframe@baseline"  # ragframe from another checkout (--baseline)

#: all_trec measures not compared with pytrec_eval (see the module docstring).
ALL_TREC_SKIP = ("iprec_at_recall", "11pt_avg", "gm_map", "gm_bpref", "relstring", "rbp", "rbp_resid", "unj")
MEASURE_SETS = ("five", "all_trec")

TOLERANCE = 1e-9
INSTALL_HINT = "not installed (pip install -e '.[bench]')"
NOT_APPLICABLE = "not compared: it has no such measure set"
RESULT_PREFIX = "BENCH-RESULT "

# Synthetic data: MS MARCO passage ids are 0 .. 8,841,822.
N_DOC_IDS = 8_841_823
FIRST_QUERY_ID = 1_000_000
CHUNK_QUERIES = 50_000
GRADE_P = (0.4, 0.3, 0.2, 0.1)  # probabilities of grades 0, 1, 2, 3
DATA_VERSION = 1  # bump when the generator changes, so cached files are not reused


# ----------------------------------------------------------------------------- data


def data_paths(data_dir: Path, queries: int, docs: int, seed: int) -> tuple[Path, Path]:
    stem = f"q{queries}_d{docs}_s{seed}_v{DATA_VERSION}"
    return data_dir / f"run_{stem}.parquet", data_dir / f"qrels_{stem}.parquet"


def _unique_doc_rows(rng: np.random.Generator, n: int, docs: int) -> np.ndarray:
    """``n x docs`` doc ids, distinct within each row (rows with a repeat are drawn again)."""
    import numpy as np

    ids = rng.integers(0, N_DOC_IDS, size=(n, docs), dtype=np.int64)
    while True:
        ordered = np.sort(ids, axis=1)
        repeats = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if repeats.size == 0:
            return ids
        ids[repeats] = rng.integers(0, N_DOC_IDS, size=(repeats.size, docs), dtype=np.int64)


def generate_chunk(seed: int, chunk: int, first: int, n: int, docs: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Run rows and qrels rows of queries ``first .. first + n - 1``, vectorized over queries."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng([seed, chunk])
    qids = pl.Series("query_id", np.arange(FIRST_QUERY_ID + first, FIRST_QUERY_ID + first + n)).cast(pl.String)

    # run: scores strictly decrease with rank (positive gaps), rows grouped by query in rank order
    doc_ids = _unique_doc_rows(rng, n, docs)
    top = rng.uniform(15.0, 40.0, size=(n, 1))
    gaps = rng.exponential(0.15, size=(n, docs)) + 1e-3
    scores = top - np.cumsum(gaps, axis=1) + gaps[:, :1]
    run_q = np.repeat(np.arange(n), docs)
    run = pl.DataFrame(
        {
            "query_id": qids.gather(run_q),
            "doc_id": pl.Series(doc_ids.ravel()).cast(pl.String),
            "rank": np.tile(np.arange(1, docs + 1, dtype=np.int32), n),
            "score": scores.ravel(),
        }
    )

    # qrels: 10..30 judgments a query, about half of them retrieved documents (sampled without
    # replacement, favouring the top ranks), the rest random ids
    n_judged = rng.integers(10, 31, size=n)
    n_retrieved = np.clip(rng.binomial(n_judged, 0.5), 1, min(docs, 30))
    n_random = n_judged - n_retrieved
    # weighted sampling without replacement: smallest Exp(1) / weight first, weight = rank ** -0.7
    keys = rng.exponential(size=(n, docs)) * np.arange(1, docs + 1) ** 0.7
    picked = np.argsort(keys, axis=1)[:, : n_retrieved.max()]
    take = np.arange(picked.shape[1]) < n_retrieved[:, None]
    from_run_q = np.repeat(np.arange(n), n_retrieved)
    from_run_doc = doc_ids[from_run_q, picked[take]]
    random_q = np.repeat(np.arange(n), n_random)
    random_doc = rng.integers(0, N_DOC_IDS, size=random_q.size, dtype=np.int64)

    q = np.concatenate([from_run_q, random_q])
    order = np.argsort(q, kind="stable")  # grouped by query, retrieved judgments first
    q, doc = q[order], np.concatenate([from_run_doc, random_doc])[order]
    grade = rng.choice(4, size=q.size, p=GRADE_P).astype(np.int64)
    first_of_query = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    grade[first_of_query] = np.maximum(grade[first_of_query], 1)  # every query has a relevant doc
    judged = pl.DataFrame({"q": q, "doc": doc, "relevance": grade}).unique(
        subset=["q", "doc"], keep="first", maintain_order=True
    )
    qrels = pl.DataFrame(
        {
            "query_id": qids.gather(judged.get_column("q")),
            "doc_id": judged.get_column("doc").cast(pl.String),
            "relevance": judged.get_column("relevance"),
        }
    )
    return run, qrels


def generate(queries: int, docs: int, data_dir: Path, seed: int) -> None:
    """Write the run and qrels Parquet files for ``queries`` queries, chunk by chunk."""
    import pyarrow.parquet as pq

    run_path, qrels_path = data_paths(data_dir, queries, docs, seed)
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp_run, tmp_qrels = run_path.with_suffix(".tmp"), qrels_path.with_suffix(".tmp")
    run_writer: pq.ParquetWriter | None = None
    qrels_writer: pq.ParquetWriter | None = None
    try:
        for chunk, first in enumerate(range(0, queries, CHUNK_QUERIES)):
            run, qrels = generate_chunk(seed, chunk, first, min(CHUNK_QUERIES, queries - first), docs)
            run_table, qrels_table = run.to_arrow(), qrels.to_arrow()
            if run_writer is None or qrels_writer is None:
                run_writer = pq.ParquetWriter(tmp_run, run_table.schema)
                qrels_writer = pq.ParquetWriter(tmp_qrels, qrels_table.schema)
            run_writer.write_table(run_table)
            qrels_writer.write_table(qrels_table)
    finally:
        for writer in (run_writer, qrels_writer):
            if writer is not None:
                writer.close()
    os.replace(tmp_run, run_path)
    os.replace(tmp_qrels, qrels_path)


# ----------------------------------------------------------------------------- workers (one tool, own process)


def _read_frames(run_path: Path, qrels_path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    import polars as pl  # already imported by worker_main, before the clock starts

    run = pl.read_parquet(run_path, columns=["query_id", "doc_id", "score"])
    qrels = pl.read_parquet(qrels_path, columns=["query_id", "doc_id", "relevance"])
    return run, qrels


def _nested_dicts(frame: pl.DataFrame, value: str) -> dict[str, dict[str, Any]]:
    """``{query_id: {doc_id: value}}``, the input format of pytrec_eval and ranx."""
    grouped = frame.group_by("query_id", maintain_order=True).agg("doc_id", value)
    return {
        qid: dict(zip(doc_ids, values))
        for qid, doc_ids, values in zip(
            grouped.get_column("query_id").to_list(),
            grouped.get_column("doc_id").to_list(),
            grouped.get_column(value).to_list(),
        )
    }


def work_ragframe(run_path: Path, qrels_path: Path) -> dict[str, Any]:
    import ragframe as rf

    start, cpu_start = time.perf_counter(), time.process_time()
    run, qrels = _read_frames(run_path, qrels_path)
    per_query = rf.evaluate_run(run, qrels, k=[10, 100], metrics=RAGFRAME_METRICS)
    summary = rf.run_summary(per_query)
    means = {name: float(summary.get_column(column).item()) for name, column in RAGFRAME_COLUMNS.items()}
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return {"seconds": seconds, "cpu_seconds": cpu, "means": means, "num_q": int(summary.get_column("num_q").item())}


def work_pytrec_eval(run_path: Path, qrels_path: Path) -> dict[str, Any]:
    import pytrec_eval

    start, cpu_start = time.perf_counter(), time.process_time()
    run, qrels = _read_frames(run_path, qrels_path)
    run_dict = _nested_dicts(run, "score")
    qrels_dict = _nested_dicts(qrels, "relevance")
    del run, qrels
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_dict, TREC_MEASURES)
    per_query = evaluator.evaluate(run_dict)
    n = len(per_query)
    means = {name: math.fsum(scores[key] for scores in per_query.values()) / n for name, key in TREC_KEYS.items()}
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return {"seconds": seconds, "cpu_seconds": cpu, "means": means, "num_q": n}


def _id_width(path: Path) -> int:
    import polars as pl

    return int(pl.scan_parquet(path).select(pl.col("doc_id").str.len_chars().max()).collect().item())


def work_ranx(run_path: Path, qrels_path: Path) -> dict[str, Any]:
    # Input path: Qrels(dict) / Run(dict), the documented dict-of-dicts constructor (same code as
    # from_dict), with the dicts built from polars. Qrels.from_df / Run.from_df (and from_parquet,
    # which calls them) group in pandas with a Python lambda per query: about 3x slower end to end
    # at 10,000 queries here. They also assert object-dtype id columns, which pandas >= 3 no
    # longer gives by default (from_parquet fails as is).
    import ranx

    # numba specialises ranx's kernels on the doc-id array dtype (<U{longest id}), so the warm-up
    # uses ids as long as the real ones, or the timed call would compile again. It also has 10
    # queries: on fewer, ranx.evaluate sets numba to one thread for the rest of the process.
    run_width, qrels_width = _id_width(run_path), _id_width(qrels_path)
    warm_start = time.perf_counter()
    tiny_qrels = ranx.Qrels({f"q{q}": {str(d).zfill(qrels_width): d % 4 for d in range(q, q + 3)} for q in range(10)})
    tiny_run = ranx.Run({f"q{q}": {str(d).zfill(run_width): 1.0 / d for d in range(1, 6)} for q in range(10)})
    ranx.evaluate(tiny_qrels, tiny_run, RANX_METRICS)
    warmup = time.perf_counter() - warm_start

    start, cpu_start = time.perf_counter(), time.process_time()
    run, qrels = _read_frames(run_path, qrels_path)
    run_dict = _nested_dicts(run, "score")
    qrels_dict = _nested_dicts(qrels, "relevance")
    del run, qrels
    ranx_qrels, ranx_run = ranx.Qrels(qrels_dict), ranx.Run(run_dict)
    del run_dict, qrels_dict
    # per-query scores land in ranx_run.scores; the returned dict holds the means
    means = ranx.evaluate(ranx_qrels, ranx_run, RANX_METRICS)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "means": {name: float(means[name]) for name in MEASURES},
        "num_q": len(ranx_qrels),
        "warmup_seconds": warmup,
    }


def _skipped(name: str) -> bool:
    return any(name == root or name.startswith(root + "_") for root in ALL_TREC_SKIP)


def work_ragframe_all_trec(run_path: Path, qrels_path: Path) -> dict[str, Any]:
    import polars as pl

    from ragframe.io.trec_eval_format import parse_measures
    from ragframe.kernels.trec_measures import TrecOptions
    from ragframe.run.trec_run import trec_eval_run

    start, cpu_start = time.perf_counter(), time.process_time()
    run, qrels = _read_frames(run_path, qrels_path)
    per_query = trec_eval_run(run, qrels, TrecOptions(tuple(parse_measures(["all_trec"]))))
    numbers = [c for c, dtype in per_query.schema.items() if dtype.is_numeric()]
    row = per_query.select(pl.col(numbers).cast(pl.Float64).mean()).row(0, named=True)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    means = {name: float(value) for name, value in row.items() if not _skipped(name)}
    return {"seconds": seconds, "cpu_seconds": cpu, "means": means, "num_q": per_query.height, "computed": len(numbers)}


def work_pytrec_eval_all_trec(run_path: Path, qrels_path: Path) -> dict[str, Any]:
    import pytrec_eval

    from ragframe.io.trec_eval_format import parse_measures

    roots = {m.root for m in parse_measures(["all_trec"])} & set(pytrec_eval.supported_measures)
    start, cpu_start = time.perf_counter(), time.process_time()
    run, qrels = _read_frames(run_path, qrels_path)
    run_dict = _nested_dicts(run, "score")
    qrels_dict = _nested_dicts(qrels, "relevance")
    del run, qrels
    per_query = pytrec_eval.RelevanceEvaluator(qrels_dict, roots).evaluate(run_dict)
    n = len(per_query)
    keys = sorted(next(iter(per_query.values())))
    means = {key: math.fsum(scores[key] for scores in per_query.values()) / n for key in keys}
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "means": {key: value for key, value in means.items() if not _skipped(key)},
        "num_q": n,
        "computed": len(keys),
    }


WORKERS: dict[str, Callable[[Path, Path], dict[str, Any]]] = {
    "ragframe": work_ragframe,
    "pytrec_eval": work_pytrec_eval,
    "ranx": work_ranx,
    "ragframe/all_trec": work_ragframe_all_trec,
    "pytrec_eval/all_trec": work_pytrec_eval_all_trec,
}


def worker_main(tool: str, run_path: Path, qrels_path: Path, memory_limit_gb: float, measures: str = "five") -> int:
    """Run one tool and print its result as one JSON line; exit status 0 when it succeeded."""
    if memory_limit_gb > 0:
        limit = int(memory_limit_gb * 2**30)
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    result: dict[str, Any]
    try:
        import polars  # noqa: F401  (every worker reads the Parquet files with it; keep the import untimed)

        result = WORKERS[tool if measures == "five" else f"{tool}/{measures}"](run_path, qrels_path)
    except ModuleNotFoundError as exc:
        missing = exc.name is not None and exc.name.split(".")[0] == tool
        result = {"error": INSTALL_HINT if missing else f"ModuleNotFoundError: {exc}"}
    except MemoryError:
        result = {"error": f"out of memory (MemoryError under a {memory_limit_gb:g} GB address-space limit)"}
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    result["peak_rss_mb"] = peak_rss_mb()
    result["ru_maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["peak_virtual_mb"] = status_mb("VmPeak")  # what RLIMIT_AS limits
    print(RESULT_PREFIX + json.dumps(result), flush=True)
    return 1 if "error" in result else 0


# ----------------------------------------------------------------------------- driver


@dataclass
class Outcome:
    """What one tool did on one data size (best of the repeats)."""

    tool: str
    seconds: float | None = None
    cpu_seconds: float | None = None  # CPU time (all threads, user + system) of the timed section
    peak_rss_mb: float | None = None
    means: dict[str, float] = field(default_factory=dict)
    num_q: int | None = None
    warmup_seconds: float | None = None
    computed: int | None = None  # all_trec: the per-query values the tool computed
    error: str | None = None


def run_worker(
    tool: str,
    run_path: Path,
    qrels_path: Path,
    memory_limit_gb: float,
    timeout: float,
    measures: str = "five",
    baseline: Path | None = None,
) -> Outcome:
    env = None
    if tool == BASELINE:  # ragframe's worker, importing ragframe from the baseline checkout
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(baseline), os.environ.get("PYTHONPATH", "")])}
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        "ragframe" if tool == BASELINE else tool,
        "--run-file",
        str(run_path),
        "--qrels-file",
        str(qrels_path),
        "--memory-limit-gb",
        str(memory_limit_gb),
        "--measures",
        measures,
    ]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False, env=env)
    except subprocess.TimeoutExpired:
        return Outcome(tool, error=f"timed out after {timeout:g} s")
    payload = None
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            payload = json.loads(line[len(RESULT_PREFIX) :])
    if payload is None:
        return Outcome(tool, error=failure_reason(proc))
    if "error" in payload:
        return Outcome(tool, peak_rss_mb=payload.get("peak_rss_mb"), error=payload["error"])
    return Outcome(
        tool,
        seconds=payload["seconds"],
        cpu_seconds=payload.get("cpu_seconds"),
        peak_rss_mb=payload["peak_rss_mb"],
        means=payload["means"],
        num_q=payload["num_q"],
        warmup_seconds=payload.get("warmup_seconds"),
        computed=payload.get("computed"),
    )


def measure(
    tools: Sequence[str],
    run_path: Path,
    qrels_path: Path,
    repeat: int,
    memory_limit_gb: float,
    timeout: float,
    measures: str = "five",
    baseline: Path | None = None,
) -> list[Outcome]:
    """Each tool's best (lowest) time of ``repeat`` fresh processes, in ``tools`` order.

    The tools take turns (round ``r`` runs every tool once), so that a change in the load of a
    shared machine falls on all of them alike. Peak RSS is the largest seen; CPU seconds the
    lowest seen.
    """
    best: dict[str, Outcome] = {}
    for tool in tools:
        if tool == BASELINE:
            continue
        if tool != "ragframe" and importlib.util.find_spec(tool) is None:
            best[tool] = Outcome(tool, error=INSTALL_HINT)
        elif measures != "five" and f"{tool}/{measures}" not in WORKERS:
            best[tool] = Outcome(tool, error=NOT_APPLICABLE)
    peak = dict.fromkeys(tools, 0.0)
    cpu: dict[str, float] = {}
    for _ in range(repeat):
        for tool in tools:
            if tool in best and best[tool].error is not None:
                continue  # not installed, not applicable, or failed: not run again
            outcome = run_worker(tool, run_path, qrels_path, memory_limit_gb, timeout, measures, baseline)
            if outcome.error is not None:
                best[tool] = outcome
                continue
            peak[tool] = max(peak[tool], outcome.peak_rss_mb or 0.0)
            if outcome.cpu_seconds is not None:
                cpu[tool] = min(cpu.get(tool, math.inf), outcome.cpu_seconds)
            previous = best.get(tool)
            if previous is None or (outcome.seconds or 0.0) < (previous.seconds or 0.0):
                # the first process's warm-up (compiles, or loads numba's cache)
                outcome.warmup_seconds = previous.warmup_seconds if previous is not None else outcome.warmup_seconds
                best[tool] = outcome
    for tool, outcome in best.items():
        if outcome.error is None:
            outcome.peak_rss_mb = peak[tool]
            outcome.cpu_seconds = cpu.get(tool)
    return [best[tool] for tool in tools]


def compare(outcome: Outcome, reference: Outcome) -> tuple[bool, str]:
    """Whether a peer's means (and query count) match ragframe's, and how to say so."""
    if outcome.num_q != reference.num_q:
        return False, f"DISAGREE ({outcome.num_q} vs {reference.num_q} queries)"
    shared = [name for name in outcome.means if name in reference.means]
    missing = [name for name in outcome.means if name not in reference.means]
    if missing or not shared:
        return False, f"DISAGREE (ragframe lacks {missing[:3]})"
    diffs = {name: abs(outcome.means[name] - reference.means[name]) for name in shared}
    worst = max(diffs, key=lambda name: math.inf if math.isnan(diffs[name]) else diffs[name])
    if not diffs[worst] <= TOLERANCE:  # NaN fails too
        return False, f"DISAGREE (max |diff| {diffs[worst]:.1e}, {worst})"
    return True, f"agree on {len(shared)} means (max |diff| {diffs[worst]:.1e})"


def _format_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(row) for row in rows)])


def report(queries: int, run_rows: int, qrels_rows: int, outcomes: list[Outcome], repeat: int) -> bool:
    """Print the table for one data size; return True when every peer that ran agrees with ragframe."""
    reference = next((o for o in outcomes if o.tool == "ragframe" and o.error is None), None)
    header = [
        "tool",
        "seconds",
        "rows/s",
        "peak RSS MB",
        "x ragframe",
        "CPU s",
        "CPU x ragframe",
        "means vs ragframe",
        "notes",
    ]
    rows = []
    agree = True
    for o in outcomes:
        if o.error is not None:
            rows.append(
                [
                    o.tool,
                    "-",
                    "-",
                    f"{o.peak_rss_mb:,.0f}" if o.peak_rss_mb else "-",
                    "-",
                    "-",
                    "-",
                    "-",
                    o.error if o.error in (INSTALL_HINT, NOT_APPLICABLE) else f"FAILED: {o.error}",
                ]
            )
            continue
        assert o.seconds is not None and o.peak_rss_mb is not None
        ratio, cpu_ratio, verdict = "-", "-", "(no reference)"
        if reference is not None and reference.seconds:
            ratio = f"{o.seconds / reference.seconds:.2f}"
            if o.cpu_seconds is not None and reference.cpu_seconds:
                cpu_ratio = f"{o.cpu_seconds / reference.cpu_seconds:.2f}"
            if o is reference:
                verdict = "(reference)"
            else:
                ok, verdict = compare(o, reference)
                agree &= ok
        notes = f"JIT warm-up {o.warmup_seconds:.2f} s, not included" if o.warmup_seconds is not None else ""
        if o.computed is not None:
            notes = f"{o.computed} values per query"
        rows.append(
            [
                o.tool,
                f"{o.seconds:.3f}",
                f"{run_rows / o.seconds:,.0f}",
                f"{o.peak_rss_mb:,.0f}",
                ratio,
                "-" if o.cpu_seconds is None else f"{o.cpu_seconds:.3f}",
                cpu_ratio,
                verdict,
                notes,
            ]
        )
    best = "best of " + str(repeat) if repeat > 1 else "1 run"
    print(
        f"\n{queries:,} queries x {run_rows // queries} docs = {run_rows:,} run rows, {qrels_rows:,} qrels rows "
        f"(each tool in a fresh process, {best})"
    )
    print(_format_table(header, rows, [False, True, True, True, True, True, True, False, False]))
    if reference is not None:
        shown = [name for name in MEASURES if name in reference.means] or list(reference.means)[:8]
        print("ragframe means: " + ", ".join(f"{name} {reference.means[name]:.6f}" for name in shown))
    return agree and reference is not None


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def _ints(values: list[str]) -> list[int]:
    out: list[int] = []
    for value in values:
        for part in value.split(","):
            if part.strip():
                number = int(part.strip().replace("_", ""))
                if number < 1:
                    raise argparse.ArgumentTypeError(f"--queries must be >= 1, found {number}")
                out.append(number)
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--queries",
        action="append",
        metavar="Q[,Q...]",
        help="number of queries (10000, 100000, 1000000, ...); repeat or comma-separate; default 10000",
    )
    parser.add_argument("--docs", type=int, default=100, help="retrieved documents per query (default 100)")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(__file__).resolve().parent / "_data",
        help="where the generated Parquet files are cached (default benchmarks/_data, gitignored)",
    )
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma list from {','.join(TOOLS)} (default all)")
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per tool; the best time is shown")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic data (default 0)")
    parser.add_argument(
        "--memory-limit-gb", type=float, default=20.0, help="RLIMIT_AS of each worker in GB, 0 for none (default 20)"
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds before a worker is stopped")
    parser.add_argument(
        "--measures",
        choices=MEASURE_SETS,
        default="five",
        help="'five' (ndcg@10, mrr, recall@100, P@10, success@10; default) or trec_eval's 'all_trec' set",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also time ragframe as imported from the checkout DIR (another commit), as the tool "
        f"{BASELINE!r}: before/after figures in one run",
    )
    parser.add_argument("--worker", choices=TOOLS, help=argparse.SUPPRESS)
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--qrels-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        args.queries = _ints(args.queries or ["10000"])
    except (ValueError, argparse.ArgumentTypeError) as exc:
        parser.error(f"--queries: {exc}")
    args.tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = [t for t in args.tools if t not in TOOLS]
    if unknown:
        parser.error(f"--tools: unknown {unknown}; choose from {list(TOOLS)}")
    if "ragframe" not in args.tools:
        args.tools.insert(0, "ragframe")  # the reference for ratios and agreement
    if args.docs < 1 or args.repeat < 1:
        parser.error("--docs and --repeat must be >= 1")
    if args.baseline is not None and not (args.baseline / "ragframe" / "__init__.py").is_file():
        parser.error(f"--baseline: no ragframe package in {args.baseline}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker_main(args.worker, args.run_file, args.qrels_file, args.memory_limit_gb, args.measures)
    if args.generate:
        generate(args.queries[0], args.docs, args.data_dir, args.seed)
        return 0

    all_agree = True
    for queries in args.queries:
        run_path, qrels_path = data_paths(args.data_dir, queries, args.docs, args.seed)
        if not (run_path.exists() and qrels_path.exists()):
            # generated in a child process so that this driver stays small while the workers run
            print(f"generating {queries:,} queries x {args.docs} docs into {args.data_dir} ...", flush=True)
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--generate",
                    "--queries",
                    str(queries),
                    "--docs",
                    str(args.docs),
                    "--data-dir",
                    str(args.data_dir),
                    "--seed",
                    str(args.seed),
                ],
                check=True,
            )
            print(f"generated in {time.perf_counter() - start:.1f} s", flush=True)
        tools = args.tools if args.baseline is None else [args.tools[0], BASELINE, *args.tools[1:]]
        outcomes = measure(
            tools, run_path, qrels_path, args.repeat, args.memory_limit_gb, args.timeout, args.measures, args.baseline
        )
        all_agree &= report(queries, _parquet_rows(run_path), _parquet_rows(qrels_path), outcomes, args.repeat)
    return 0 if all_agree else 1


if __name__ == "__main__":
    sys.exit(main())
