"""How rf.OpenAIJudge meets a server's limits (issue 20): the rate and concurrency it learns from 429s, the time
budget of rate-limit retries, and queue-aware timeouts that never send a second copy of a request.

The arithmetic of the learned limits (``ragframe.judges.limits.AdaptiveLimits``) is checked with a fake clock. The
tests against the fake server count requests, statuses and tokens from the server's log; none depends on how fast
this machine is: where time matters the margins are causal (a request cannot reach the server before it is sent).
"""

from __future__ import annotations

import asyncio
from collections import Counter

import polars as pl
import pytest
from judge_server import FakeJudgeServer

import ragframe as rf
from ragframe.judges import JudgeRateLimited, judge_prompts
from ragframe.judges.limits import DECREASE, MIN_RATE, RECOVERY, AdaptiveLimits

WORDS = "paris tower iron river museum bridge train city night light art wine bread".split()


def rag_log(rows: int) -> pl.DataFrame:
    """Rows whose prompts all differ (so no two calls are the same request)."""

    def text(i: int, n: int) -> str:
        return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)) + f" {i}."

    return pl.DataFrame(
        {
            "question": [f"Question {i}: {text(i, 6)}" for i in range(rows)],
            "answer": [text(i, 12) for i in range(rows)],
            "contexts": [[text(i, 30), text(i + 1, 30)] for i in range(rows)],
        }
    )


class FakeClock:
    def __init__(self, start: float = 100.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def send_and_answer(limits: AdaptiveLimits, clock: FakeClock, outcome: str, gap: float) -> None:
    """One request sent now and answered ``outcome`` at once; then ``gap`` seconds pass."""
    limits.finished(limits.sent(), outcome)
    clock.now += gap


# --- 1. adaptive rate control against a 600/min server (issue 20, part 1) ----------------------
@pytest.mark.slow
def test_200_rows_against_600_a_minute_with_the_default_judge_lose_none():
    # the reproduction: 10 requests a second, 429 with Retry-After: 1 and retry-after-ms past it
    with FakeJudgeServer(latency=0.05, requests_per_second=10) as server:
        judge = rf.OpenAIJudge("m", base_url=server.base_url, api_key="x")
        out = rf.evaluate(rag_log(200), ["faithfulness"], mode="llm", judge=judge, cache=False)
        statuses = Counter(r.status for r in server.log)
    assert out["faithfulness_status"].to_list() == ["ok"] * 200
    assert statuses[429] > 0  # the server's limit was reached: the judge had to learn it
    assert statuses[200] == 200 and len(server.log) <= 1.15 * 200, statuses  # 429s included
    usage = judge.usage().row(0, named=True)
    assert (usage["calls"], usage["failures"], usage["retries"]) == (200, 0, statuses[429])


@pytest.mark.slow
def test_a_closure_shorter_than_the_budget_is_waited_out_whatever_max_retries(server):
    server.queue(*["429"] * 8)  # Retry-After: 0
    judge = fast_judge(server, max_retries=0)
    out = judge_prompts(judge, ["p"], metric="m", cache=False)
    assert out.select("status", "retries").rows() == [("ok", 8)] and len(server.log) == 9
    # nothing was accepted while it was closed: no evidence of a rate, so none is learned (retries of a
    # refused call are not throughput; counting them once set the floor, one request a minute)
    assert judge._adaptive.rate is None


@pytest.mark.slow
def test_a_server_closed_past_the_budget_ends_rows_rate_limited(server):
    server.rules["p"] = "429"  # every prompt, for good
    judge = fast_judge(server, max_retries=0, rate_limit_budget=0.3)
    out = judge_prompts(judge, [f"p{i}" for i in range(6)], metric="m", cache=False)
    assert out["status"].to_list() == ["rate_limited"] * 6
    assert all("the rate_limit_budget is 0.3 s" in error for error in out["error"])
    # retried past max_retries=0 until the budget ran out; once the judge has been refused for the whole
    # budget, the calls still waiting stop at their first 429 instead of each waiting the budget out
    per_prompt = Counter(server.prompts())
    assert set(per_prompt) == {f"p{i}" for i in range(6)} and len(server.log) > 6
    assert out["retries"].sum() == len(server.log) - 6


def test_a_retry_after_past_the_budget_is_not_waited(server):
    server.retry_after = "5"
    server.queue("429")
    with pytest.raises(JudgeRateLimited, match=r"asked to retry after 5\.0 s, past the rate_limit_budget of 1 s"):
        complete(fast_judge(server, rate_limit_budget=1.0), "p")
    assert len(server.log) == 1


def test_the_budget_counts_the_call_and_the_whole_judge():
    clock = FakeClock()
    judge = rf.OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", rate_limit_budget=10.0)
    judge._adaptive = AdaptiveLimits(16, clock=clock)
    judge._adaptive.refused(judge._adaptive.sent())  # the judge refused since 100.0
    clock.now = 105.0
    assert judge._rate_limit_end(None, refused_for=0.0) is None
    assert judge._rate_limit_end(None, refused_for=10.0) == "; refused for 10.0 s, the rate_limit_budget is 10 s"
    assert "past the rate_limit_budget of 10 s" in judge._rate_limit_end(6.0, refused_for=0.0)  # 5 s + 6 s > 10 s
    assert "more than 300" in judge._rate_limit_end(301.0, refused_for=0.0)
    clock.now = 110.0  # a call refused just now stops too: the server has refused the judge for the whole budget
    assert judge._rate_limit_end(None, refused_for=0.0) == "; refused for 10.0 s, the rate_limit_budget is 10 s"


# --- 2. queue-aware concurrency against a one-slot server (issue 20, part 2) --------------------
@pytest.mark.slow
def test_one_slot_server_default_judge_one_request_per_call():
    with FakeJudgeServer(latency=1.0, slots=1) as server:
        judge = rf.OpenAIJudge("m", base_url=server.base_url, api_key="")
        out = rf.evaluate(rag_log(6), ["faithfulness"], mode="llm", judge=judge, cache=False)
        computed = server.tokens()
        requests = len(server.log)
    assert out["faithfulness_status"].to_list() == ["ok"] * 6 and requests == 6
    usage = judge.usage().row(0, named=True)
    assert (usage["input_tokens"], usage["output_tokens"]) == computed and usage["retries"] == 0


@pytest.mark.slow
def test_a_queue_longer_than_the_timeout_shrinks_the_window_and_times_nothing_out():
    # 40 calls, 0.1 s each, one at a time, timeout 1 s: with 10 or more in flight the last one waits past the
    # timeout. A timeout counted from the send (the old judge) killed and re-sent them: the server computed
    # both copies and judge.usage() missed the tokens of the abandoned ones.
    with FakeJudgeServer(latency=0.1, slots=1) as server:
        judge = rf.OpenAIJudge("m", base_url=server.base_url, api_key="", timeout=1.0)
        out = judge_prompts(judge, [f"prompt {i}" for i in range(40)], metric="m", cache=False)
        computed, prompts = server.tokens(), server.prompts()
    assert sorted(prompts) == sorted(f"prompt {i}" for i in range(40))  # exactly one request per call
    assert out["status"].to_list() == ["ok"] * 40
    usage = judge.usage().row(0, named=True)
    assert (usage["input_tokens"], usage["output_tokens"]) == computed
    assert judge._adaptive.window < 16 and judge._adaptive.rate is None  # the queue, not a 429, shrank it


@pytest.mark.slow
def test_a_hung_request_times_out_once_and_is_not_sent_again(server):
    server.slow_seconds = 60.0  # released when the server stops
    server.rules["HANG"] = "slow"
    judge = fast_judge(server, timeout=0.3, max_retries=3)
    out = judge_prompts(judge, ["HANG", "a", "b", "c"], metric="m", cache=False)
    assert out["status"].to_list() == ["timeout", "ok", "ok", "ok"]
    assert "not sent again: the server may still be computing it" in out["error"][0]
    assert Counter(server.prompts())["HANG"] == 1 and out["retries"][0] == 0


def test_a_connection_the_server_closed_is_sent_again(server):
    server.queue("drop")  # no answer, the connection closed: the request failed, it may be sent again
    assert complete(fast_judge(server), "p").retries == 1 and len(server.log) == 2


# --- the rules, with a fake clock -----------------------------------------------------------------
def test_refusals_and_lost_requests_with_nothing_accepted_learn_no_rate():
    clock = FakeClock()
    limits = AdaptiveLimits(16, clock=clock)
    lost = limits.sent()  # its connection closed: no answer, not a refusal
    clock.now += 0.01
    limits.finished(lost, "lost")
    for _ in range(8):  # then a closed server: every retry refused
        send_and_answer(limits, clock, "refused", 0.05)
    # one send more than refusals, but nothing accepted: no evidence of a rate (counting the lost send as
    # throughput set the rate to its floor, one request a minute: a 60 s wait before the next call)
    assert limits.rate is None and limits.try_start() == 0.0


def test_the_first_429_sets_half_the_rate_that_got_through():
    clock = FakeClock()
    limits = AdaptiveLimits(16, clock=clock)
    for _ in range(20):  # 10 a second for 2 s, all accepted: no rate yet
        send_and_answer(limits, clock, "accepted", 0.1)
    assert limits.rate is None and limits.try_start() == 0.0
    refused = limits.sent()
    clock.now += 0.05
    assert limits.refused(refused) is True
    # over the last second: 10 sent (one of them refused) -> 9 a second got through -> 4.5
    assert limits.rate == pytest.approx(9 * DECREASE)
    assert limits.window == 16 * DECREASE  # slow start reached 16, the 429 halved it


def test_a_429_without_evidence_of_a_rate_cuts_nothing():
    clock = FakeClock()
    limits = AdaptiveLimits(8, clock=clock)
    first = limits.sent()
    assert limits.refused(first) is False  # the first request of all refused: nothing got through
    assert limits.rate is None and limits.window == 1.0


def test_one_cut_per_round():
    clock = FakeClock()
    limits = AdaptiveLimits(16, clock=clock)
    for _ in range(10):
        send_and_answer(limits, clock, "accepted", 0.1)
    early = [limits.sent() for _ in range(3)]
    clock.now += 0.05
    assert limits.refused(early[0]) is True
    rate = limits.rate
    assert limits.refused(early[1]) is False and limits.rate == rate  # sent before the cut: at the old rate
    clock.now += 0.5
    late = limits.sent()
    assert limits.refused(late) is False and limits.rate == rate  # nothing accepted since: a closed server
    limits.finished(limits.sent(), "accepted")
    rate = limits.rate
    again = limits.sent()
    assert limits.refused(again) is True and limits.rate == pytest.approx(rate * DECREASE)
    retried = limits.sent(may_cut=False)
    limits.finished(limits.sent(), "accepted")
    assert limits.refused(retried) is False  # its call already cut once
    clock.now += 2.0
    assert limits.closed_for() == 2.0  # refused since the last acceptance ...
    limits.finished(limits.sent(), "accepted")
    assert limits.closed_for() == 0.0  # ... open again


def test_accepted_requests_restore_the_rate_in_recovery_steps_then_faster():
    clock = FakeClock()
    limits = AdaptiveLimits(16, clock=clock)
    for _ in range(10):
        send_and_answer(limits, clock, "accepted", 0.1)
    assert limits.refused(limits.sent()) is True and limits.rate == pytest.approx(
        10 * DECREASE
    )  # 10 a second got through
    step = 10 * (1 - DECREASE) / RECOVERY
    for k in range(1, 2 * RECOVERY + 1):  # sending at 20 a second: the ceiling (twice that) never binds
        send_and_answer(limits, clock, "accepted", 0.05)
        assert limits.rate == pytest.approx(10 * DECREASE + k * step)
    send_and_answer(limits, clock, "accepted", 0.05)  # after 2 x RECOVERY accepted requests the step doubles
    assert limits.rate == pytest.approx(10 * DECREASE + (2 * RECOVERY + 2) * step)


def test_a_rate_the_judge_does_not_use_stops_climbing_at_twice_its_sending():
    clock = FakeClock()
    limits = AdaptiveLimits(4, clock=clock)
    for _ in range(4):
        send_and_answer(limits, clock, "accepted", 0.25)
    assert limits.refused(limits.sent()) is True and limits.rate == 2.0  # 4 a second got through
    for _ in range(100):  # accepted, 2 a second: linear steps would pass 20
        send_and_answer(limits, clock, "accepted", 0.5)
    rate = limits.rate
    for _ in range(100):
        send_and_answer(limits, clock, "accepted", 0.5)
    assert limits.rate == rate and 4.0 <= rate <= 4.8  # twice 2 a second (2.4 counting both ends of the span)


def test_a_cut_uses_the_rate_accepted_over_the_last_second_when_lower():
    clock = FakeClock()
    limits = AdaptiveLimits(16, clock=clock)
    for _ in range(10):
        send_and_answer(limits, clock, "accepted", 0.1)
    limits.refused(limits.sent())
    limits.rate = 16.0  # climbed past the server's limit ...
    clock.now += 2.0
    for _ in range(10):  # ... which accepted 10 in the last second
        send_and_answer(limits, clock, "accepted", 0.1)
    assert limits.refused(limits.sent()) is True and limits.rate == pytest.approx(10 * DECREASE)
    limits.finished(limits.sent(), "accepted")
    rate = limits.rate
    clock.now += 5.0  # idle: nothing accepted in the last second, which is no evidence of a lower rate ...
    assert limits.refused(limits.sent()) is True
    assert limits.rate == pytest.approx(rate * DECREASE * DECREASE)  # ... so it cuts to a quarter at most


def test_the_learned_rate_stays_between_one_a_minute_and_the_configured_limit():
    clock = FakeClock()
    slow = AdaptiveLimits(4, clock=clock)
    for _ in range(10):
        send_and_answer(slow, clock, "accepted", 0.1)
    slow.refused(slow.sent())
    for _ in range(12):  # one accepted request, then a 429 two seconds later: a quarter each time
        send_and_answer(slow, clock, "accepted", 2.0)
        slow.refused(slow.sent())
    assert slow.rate == MIN_RATE
    capped = AdaptiveLimits(4, max_rate=2.0, clock=clock)
    for _ in range(30):
        send_and_answer(capped, clock, "accepted", 0.01)
    capped.refused(capped.sent())
    assert capped.rate == 2.0  # half of the 100 a second that got through, but never above the configured limit
    for _ in range(100):
        send_and_answer(capped, clock, "accepted", 0.01)
    assert capped.rate == 2.0


def test_starts_are_spaced_at_the_rate_of_the_moment():
    clock = FakeClock()
    limits = AdaptiveLimits(4, clock=clock)
    assert [limits.try_start() for _ in range(3)] == [0.0, 0.0, 0.0]  # no rate yet: no pacing
    limits.rate = 4.0
    assert limits.try_start() == 0.0 and limits.try_start() == pytest.approx(0.25)
    clock.now += 0.1
    limits.rate = 2.0  # a cut applies to the requests already waiting
    assert limits.try_start() == pytest.approx(0.4)
    clock.now += 0.4
    assert limits.try_start() == 0.0 and limits.try_start() == pytest.approx(0.5)


def test_the_window_slow_start_cut_and_additive_increase():
    clock = FakeClock()
    limits = AdaptiveLimits(8, clock=clock)
    sizes = []
    for _ in range(9):
        sizes.append(limits.window)
        send_and_answer(limits, clock, "accepted", 0.01)
    assert sizes == [1, 2, 3, 4, 5, 6, 7, 8, 8]  # +1 per accepted request, never above max_concurrency
    queued = limits.sent()
    clock.now += 1.0
    limits.queueing(queued)
    limits.queueing(queued)  # one cut per round
    assert limits.window == 4.0
    send_and_answer(limits, clock, "accepted", 0.01)
    assert limits.window == pytest.approx(4.25)  # +1/window after the first cut
    for _ in range(10):
        limits.queueing(limits.sent())
    assert limits.window == 1.0


def test_deadlines_count_the_server_silence_up_to_the_queue_depth():
    clock = FakeClock(0.0)
    limits = AdaptiveLimits(16, clock=clock)
    sent = [limits.sent() for _ in range(4)]  # the last waits behind 3
    assert limits.deadline(sent[3], 10.0) == 10.0
    for k in range(3):  # the server answers one every 8 s: each answer restarts the clock
        clock.now += 8.0
        limits.finished(sent[k], "accepted")
        assert limits.deadline(sent[3], 10.0) == clock.now + 10.0
    clock.now = 39.0
    limits.finished(limits.sent(), "answered")  # still answering, but 10 x (1 + 3) is the most it waits
    assert limits.deadline(sent[3], 10.0) == 40.0
    lost = limits.sent()
    limits.finished(lost, "lost")  # no answer is not progress
    assert limits.deadline(sent[3], 10.0) == 40.0


def test_the_window_admits_waiters_in_order_and_survives_cancellation():
    async def scenario() -> list[str]:
        limits = AdaptiveLimits(2)
        limits.window = 2.0
        order: list[str] = []

        async def call(name: str, hold: asyncio.Event) -> None:
            await limits.acquire()
            order.append(name)
            await hold.wait()
            limits.release()

        holds = {name: asyncio.Event() for name in "abcde"}
        tasks = {name: asyncio.create_task(call(name, holds[name])) for name in "abcde"}
        await asyncio.sleep(0)
        assert order == ["a", "b"]  # two places
        tasks["c"].cancel()  # a waiter leaves: its place is not lost
        await asyncio.sleep(0)
        holds["a"].set()
        for _ in range(5):
            await asyncio.sleep(0)
        assert order == ["a", "b", "d"]
        for hold in holds.values():
            hold.set()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        assert limits._slots == 0 and not limits._waiters
        return order

    assert asyncio.run(scenario()) == ["a", "b", "d", "e"]


# --- helpers ----------------------------------------------------------------------------------------
def fast_judge(server: FakeJudgeServer, **options) -> rf.OpenAIJudge:
    options = {"api_key": "sk-test", "backoff_base": 0.01, "backoff_max": 0.05, "timeout": 5.0, **options}
    return rf.OpenAIJudge("fake-model", base_url=server.base_url, **options)


def complete(judge: rf.OpenAIJudge, prompt: str):
    async def call():
        async with judge.session():
            return await judge.complete(prompt, 0)

    return asyncio.run(call())
