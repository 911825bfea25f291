"""Judge throughput against a rate limit, the rerun's cache hits, and the calls hybrid routing saves.

A fake OpenAI-compatible server on 127.0.0.1 (``tests/judge_server.py``: a real HTTP server
in a thread) answers every call after ``--latency`` seconds and enforces a server-side limit
of ``--rpm`` requests per minute (a token bucket, as API gateways do: an empty bucket answers
429 with Retry-After). ``rf.OpenAIJudge`` is given the same limit. The benchmark scores
``--rows`` rows of a synthetic RAG log with three judge metrics (``rf.evaluate(...,
mode="llm")``), then:

1. prints the wall time against the ideal (calls / rate limit): the target is within 10%;
2. runs the same call again: every reply comes from the SQLite cache (target 100%, zero
   requests reach the server);
3. runs ``mode="hybrid"`` with a band around the heuristic thresholds and prints the calls
   hybrid routing saved;
4. runs the first run again with a judge given no limit (``rf.OpenAIJudge`` defaults): it learns
   the server's from the 429s (docs/judges.md, "Rate limits and concurrency"); targets: no row
   ends ``rate_limited``, at most 15% more requests than calls (429s included), and the wall
   time is printed against the same ideal.

Exit status 0 when the targets of 1, 2 and 4 are met, else 1.

Usage::

    python benchmarks/judge.py                      # 2,000 rows x 3 metrics, 50 ms, 1,200/min (about 14 min)
    python benchmarks/judge.py --rows 200 --rpm 6000
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from judge_server import FakeJudgeServer  # noqa: E402

import ragframe as rf  # noqa: E402

METRICS = ["faithfulness", "answer_relevance", "context_relevance"]
WORDS = "paris tower iron river museum bridge train city night light river art wine bread".split()


def make_log(rows: int, seed: int) -> pl.DataFrame:
    """Rows with distinct questions, answers and contexts (so no two prompts are alike)."""
    rng = random.Random(seed)

    def text(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."

    return pl.DataFrame(
        {
            "id": list(range(rows)),
            "question": [f"Question {i}: {text(6)}" for i in range(rows)],
            "answer": [f"{text(12)} {text(8)}" for _ in range(rows)],
            "contexts": [[text(40), text(40)] for _ in range(rows)],
        }
    )


def run(log: pl.DataFrame, judge: rf.OpenAIJudge, cache: Path, **options) -> tuple[pl.DataFrame, float]:
    start = time.perf_counter()
    out = rf.evaluate(log, METRICS, judge=judge, cache=cache, **options)
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per reply")
    parser.add_argument("--rpm", type=int, default=1200, help="requests per minute (server and client)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--band", type=float, nargs=2, default=(0.2, 0.6), help="hybrid band (lo hi)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    log = make_log(args.rows, args.seed)
    calls = args.rows * len(METRICS)
    ideal = calls / (args.rpm / 60)
    with FakeJudgeServer() as server, tempfile.TemporaryDirectory() as folder:
        server.latency = args.latency
        server.requests_per_second = args.rpm / 60
        judge = rf.OpenAIJudge(
            "fake-judge",
            base_url=server.base_url,
            api_key="sk-benchmark",
            requests_per_minute=args.rpm,
            max_concurrency=args.concurrency,
        )
        cache = Path(folder) / "judge.sqlite3"
        first, seconds = run(log, judge, cache, mode="llm")
        requests = len(server.log)
        statuses = {m: first[f"{m}_status"].value_counts(sort=True).rows() for m in METRICS}
        rejected = sum(1 for r in server.log if r.status == 429)
        server.reset()
        _, rerun_seconds = run(log, judge, cache, mode="llm")
        rerun_requests = len(server.log)
        server.reset()
        hybrid, hybrid_seconds = run(log, judge, Path(folder) / "hybrid.sqlite3", mode="hybrid", hybrid_band=args.band)
        routed = rf.routing_summary(hybrid)
        hybrid_requests = len(server.log)
        server.reset()
        learner = rf.OpenAIJudge(
            "fake-judge", base_url=server.base_url, api_key="sk-benchmark", max_concurrency=args.concurrency
        )
        learned, learned_seconds = run(log, learner, Path(folder) / "learned.sqlite3", mode="llm")
        learned_requests = len(server.log)
        learned_refused = sum(1 for r in server.log if r.status == 429)
        lost = sum(int((learned[f"{m}_status"] == "rate_limited").sum()) for m in METRICS)
    print(
        f"fake OpenAI-compatible server on 127.0.0.1: {args.latency * 1000:.0f} ms a reply, {args.rpm:,} requests/min"
    )
    print(f"{args.rows:,} rows x {len(METRICS)} judge metrics = {calls:,} calls, concurrency {args.concurrency}\n")
    print(f"{'run':28} {'wall s':>8} {'requests':>9} {'vs ideal':>9}")
    print(f"{'ideal (calls / rate)':28} {ideal:8.1f} {calls:9,} {1.0:8.2f}x")
    print(f"{'mode=llm, empty cache':28} {seconds:8.1f} {requests:9,} {seconds / ideal:8.2f}x")
    hit_rate = 1 - rerun_requests / calls
    print(f"{'mode=llm, rerun (cache)':28} {rerun_seconds:8.1f} {rerun_requests:9,}   cache hits {hit_rate:.0%}")
    print(f"{'mode=hybrid ' + str(tuple(args.band)):28} {hybrid_seconds:8.1f} {hybrid_requests:9,}")
    print(f"{'mode=llm, no client limit':28} {learned_seconds:8.1f} {learned_requests:9,} "
          f"{learned_seconds / ideal:8.2f}x  ({learned_refused:,} 429s, {lost} rows rate_limited)")  # fmt: skip
    print(f"\nstatuses of the first run: {statuses}; 429s the server sent: {rejected}")
    print("hybrid routing (rows whose heuristic score is inside the band go to the judge):")
    print(routed)
    within = seconds <= 1.10 * ideal
    extra = learned_requests / calls - 1
    learned_ok = lost == 0 and extra <= 0.15
    print(f"\nwithin 10% of the rate-limit ideal: {'yes' if within else 'NO'}; rerun sent no request: "
          f"{'yes' if rerun_requests == 0 else 'NO'}")  # fmt: skip
    print(f"no client limit: {lost} rows lost to 429s, {extra:.1%} more requests than calls (targets 0 and "
          f"15%): {'yes' if learned_ok else 'NO'}")  # fmt: skip
    return 0 if within and rerun_requests == 0 and learned_ok else 1


if __name__ == "__main__":
    sys.exit(main())
