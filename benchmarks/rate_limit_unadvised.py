"""429s without ``Retry-After`` (issue 36 item 3): the wall time against the ideal, and no row lost.

A fake OpenAI-compatible server on 127.0.0.1 (``tests/judge_server.py``) answers the first
``--refusals`` requests of every prompt with 429 and no ``Retry-After`` header, then the
reply, each after ``--latency`` seconds. A default ``rf.OpenAIJudge`` scores ``--prompts``
rows with one judge metric. The *ideal* is the time the same judge takes to get the same
number of answers (``(refusals + 1) * prompts`` distinct prompts) from the same server when
it refuses nothing: the requests the case needs, at the server's pace, with no waiting.

Target: under 3x the ideal, every row ``ok``, exactly ``(refusals + 1) * prompts`` requests.
Exit status 0 when met, else 1.

Usage::

    python benchmarks/rate_limit_unadvised.py                  # 40 prompts, 2 refusals each, 0.5 s replies
    python benchmarks/rate_limit_unadvised.py --latency 0.1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from judge_server import FakeJudgeServer  # noqa: E402

import ragframe as rf  # noqa: E402

METRIC = "judge_answer_relevance"


def frame(rows: int, tag: str) -> pl.DataFrame:
    questions = [f"Question {tag}{i}: what is {i} + {i}?" for i in range(rows)]
    return pl.DataFrame({"question": questions, "answer": [f"It is {2 * i}." for i in range(rows)]})


def timed(rows: int, latency: float, refusals: int, tag: str) -> tuple[float, int, dict[str, int]]:
    """Seconds, requests the server saw, and the row statuses of one run against a fresh server."""
    with FakeJudgeServer(retry_after=None, latency=latency, refuse_each_prompt=refusals) as server:
        judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key="")
        started = time.perf_counter()
        out = rf.evaluate(frame(rows, tag), [METRIC], judge=judge, cache=False)
        seconds = time.perf_counter() - started
        statuses = dict(out[f"{METRIC}_status"].value_counts().iter_rows())
        return seconds, len(server.log), statuses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=40)
    parser.add_argument("--refusals", type=int, default=2, help="429s without Retry-After per prompt")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per reply")
    args = parser.parse_args(argv)
    needed = (args.refusals + 1) * args.prompts
    ideal, ideal_requests, _ = timed(needed, args.latency, 0, "ideal ")
    seconds, requests, statuses = timed(args.prompts, args.latency, args.refusals, "")
    ratio = seconds / ideal
    print(
        f"{args.prompts} prompts, {args.refusals} 429s without Retry-After each, {args.latency:g} s replies: "
        f"{seconds:.1f} s, ideal {ideal:.1f} s ({ideal_requests} answers, no refusal): {ratio:.2f}x; "
        f"{requests} requests (needed {needed}); statuses {statuses}"
    )
    met = ratio < 3.0 and statuses == {"ok": args.prompts} and requests == needed
    print("target met" if met else "target NOT met (under 3x the ideal, every row ok, no extra request)")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
