"""Issue 36 item 3: 429s without ``Retry-After``.

A server that answers 429 twice to every prompt, with no ``Retry-After``, once drove the
learned rate down by half at each refusal: 21-25 s between requests, 40 prompts unfinished
after 240 s. Such a 429 says nothing about a rate, so it no longer cuts the learned rate or
window; it sets a back-off shared by every call of the judge (one step per round of
requests, reset by an accepted answer, capped at :data:`ragframe.judges.limits.UNADVISED_BACKOFF_CAP`
seconds), and the progress line says that the run is waiting on rate limits. Measured with
the server's own counters (requests, arrivals), not the test's clock; the wall time against
the ideal is in ``benchmarks/rate_limit_unadvised.py``.
"""

from __future__ import annotations

import io
import itertools

import polars as pl
import pytest
from judge_server import FakeJudgeServer

import ragframe as rf
from ragframe.judges.limits import UNADVISED_BACKOFF_CAP, AdaptiveLimits
from ragframe.judges.progress import JudgeProgress

pytest.importorskip("httpx")


def frame(rows: int) -> pl.DataFrame:
    questions = [f"Question {i}: what is {i}?" for i in range(rows)]
    return pl.DataFrame({"question": questions, "answer": [f"It is {i}." for i in range(rows)]})


@pytest.mark.slow
def test_429s_without_retry_after_lose_no_row_and_keep_the_pace():
    rows = 24
    with FakeJudgeServer(retry_after=None, latency=0.05, refuse_each_prompt=2) as server:
        judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key="", max_concurrency=8)
        out = rf.evaluate(frame(rows), ["judge_answer_relevance"], judge=judge, cache=False)
        log = list(server.log)
        most = server.max_in_flight
    assert out["judge_answer_relevance_status"].to_list() == ["ok"] * rows  # no row lost
    assert len(log) == 3 * rows  # two 429s and one answer per prompt: not one request more
    assert [r.status for r in log].count(429) == 2 * rows
    arrivals = sorted(r.start for r in log)
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    # the old controller's learned rate left 21-25 s between requests; the shared back-off is capped
    # (the slack is for a loaded machine: the server's clock, not the test's, but scheduling still counts)
    assert max(gaps) <= UNADVISED_BACKOFF_CAP + 5.0
    assert most >= 2  # the window was not cut to one request by 429s that carry no rate
    assert judge._adaptive.rate is None  # no rate learned from them


def test_an_unadvised_429_does_not_cut_and_backs_off_one_step_per_round():
    now = [0.0]
    limits = AdaptiveLimits(max_concurrency=8, clock=lambda: now[0])
    for k in range(10):  # 10 accepted requests, a rate of about 10/s
        now[0] = k / 10
        limits.finished(limits.sent(), "accepted")
    first, second = limits.sent(), limits.sent()
    now[0] = 1.1
    assert limits.finished(first, "throttled") is False and limits.rate is None  # not cut
    assert limits.unadvised_backoff(first.at, base=1.0) == 0.5  # step 1
    assert limits.unadvised_backoff(second.at, base=1.0) == 0.5  # the same round: no second step
    third = limits.sent()
    now[0] = 1.2
    limits.finished(third, "throttled")
    # a request sent after the step, and nothing accepted since: the next round
    assert limits.unadvised_backoff(third.at, base=1.0) == 1.0
    for _ in range(10):
        late = limits.sent()
        now[0] += 0.1
        limits.finished(late, "throttled")
        step = limits.unadvised_backoff(late.at, base=1.0)
    assert step == UNADVISED_BACKOFF_CAP  # capped
    limits.finished(limits.sent(), "accepted")
    assert limits.unadvised_backoff(limits.sent().at, base=1.0) == 0.5  # an accepted answer starts over
    assert limits.closed_for() == 0.0


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_says_that_the_run_waits_on_rate_limits():
    stream = FakeTerminal()
    waiting = [2.5]
    progress = JudgeProgress(10, "judge_x", enabled=True, stream=stream, show_after=0.0, waiting=lambda: waiting[0])
    progress.update(3)
    assert "waiting on rate limits (2.5 s)" in stream.getvalue().splitlines()[-1]
    waiting[0] = 0.0
    progress.update(1)
    assert "waiting on rate limits" not in stream.getvalue().rsplit("\r", 1)[-1]
