"""judge_prompts / ajudge_prompts: rows and samples, statuses instead of exceptions, the cache (rerun and
resume after an interruption or a kill send no repeated request), concurrency, running inside an event
loop, dry runs, usage accounting, progress."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from judge_server import FakeJudgeServer, reply_text

from ragframe.exceptions import InvalidParameterError, MissingDependencyError
from ragframe.judges import (
    CallableJudge,
    JudgeCache,
    JudgeRateLimited,
    JudgeReply,
    OpenAIJudge,
    ajudge_prompts,
    as_judge,
    judge_prompts,
    judge_usage,
    parse_replies,
)
from ragframe.judges.progress import JudgeProgress
from ragframe.judges.runner import RESULT_SCHEMA

ROOT = Path(__file__).resolve().parent.parent


class Counting:
    """A sync judge that counts its calls and answers like the fake server."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self.lock:
            self.calls.append(prompt)
        return reply_text(prompt)


def fast_judge(server: FakeJudgeServer, **options) -> OpenAIJudge:
    options = {"api_key": "sk-test", "backoff_base": 0.01, "backoff_max": 0.05, "timeout": 2.0, **options}
    return OpenAIJudge("fake-model", base_url=server.base_url, **options)


# --- rows, samples, nulls ------------------------------------------------------------------
def test_rows_samples_and_null_prompts():
    judge = Counting()
    out = judge_prompts(judge, ["ab", None, "abcd"], metric="m", n_samples=2, cache=False)
    assert out.schema == pl.Schema(RESULT_SCHEMA)
    assert out.select("row", "sample", "status").rows() == [
        (0, 0, "ok"),
        (0, 1, "ok"),
        (1, 0, "skipped"),
        (1, 1, "skipped"),
        (2, 0, "ok"),
        (2, 1, "ok"),
    ]
    assert out["text"].to_list()[0] == reply_text("ab") and out["text"][2] is None
    assert out["error"].to_list()[2] == "no prompt (a null input)" and out["error"][0] is None
    # a callable gets the same prompt for every sample; the runner calls once per (prompt, sample)
    assert sorted(judge.calls) == ["ab", "ab", "abcd", "abcd"]
    # tokens the judge did not report: characters / 4 rounded up
    assert out["input_tokens"].to_list() == [1, 1, None, None, 1, 1]
    assert out["output_tokens"][0] == -(-len(reply_text("ab")) // 4)


def test_prompts_from_a_polars_series_and_duplicates_called_once():
    judge = Counting()
    out = judge_prompts(judge, pl.Series(["same", "same", "other"]), metric="m", cache=False)
    assert out["status"].to_list() == ["ok"] * 3 and sorted(judge.calls) == ["other", "same"]


def test_empty_prompts():
    out = judge_prompts(Counting(), [], metric="m", cache=False)
    assert out.height == 0 and out.schema == pl.Schema(RESULT_SCHEMA)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"judge": 42}, "judge must be a callable"),
        ({"prompts": "one prompt"}, "prompts must be a sequence of prompts, found one string"),
        ({"prompts": ["a", 3]}, "prompts must hold str or None, found int 3 at row 1"),
        ({"prompts": 5}, "prompts must be a sequence of str or None, found int"),
        ({"metric": ""}, "metric must be a non-empty metric name"),
        ({"n_samples": 0}, "n_samples must be an int >= 1, found 0"),
        ({"max_concurrency": 0}, "max_concurrency must be an int >= 1, found 0"),
        ({"cache": 3}, "cache must be True"),
        ({"progress": "yes"}, "progress must be True or False"),
        ({"dry_run": 1}, "dry_run must be True or False"),
    ],
)
def test_caller_errors_raise(arguments, message):
    call = {"judge": str.upper, "prompts": ["a"], "metric": "m", "cache": False, **arguments}
    with pytest.raises(InvalidParameterError, match=message):
        judge_prompts(call.pop("judge"), call.pop("prompts"), **call)


# --- failures become statuses --------------------------------------------------------------
def test_each_failure_is_a_status_and_the_batch_goes_on():
    def judge(prompt: str) -> str:
        if prompt == "value":
            raise ValueError("bad row")
        if prompt == "timeout":
            raise TimeoutError("too slow")
        if prompt == "limited":
            raise JudgeRateLimited("HTTP 429 after 3 attempts", retries=2)
        return "Score: 1"

    prompts = ["fine", "value", "timeout", "limited", "fine too"]
    out = judge_prompts(judge, prompts, metric="m", cache=False)
    assert out.select("row", "status", "error", "retries").rows() == [
        (0, "ok", None, 0),
        (1, "judge_error", "ValueError: bad row", 0),  # the callable's own failure
        (2, "timeout", "TimeoutError: too slow", 0),
        (3, "rate_limited", "HTTP 429 after 3 attempts", 2),
        (4, "ok", None, 0),
    ]
    assert out.filter(pl.col("status") != "ok")["text"].null_count() == 3


def test_a_judge_returning_no_text_is_a_row_failure():
    class Odd:
        async def complete(self, prompt, sample):
            return 42 if prompt == "odd" else JudgeReply("Score: 1", input_tokens=7, output_tokens=1, retries=1)

        def identity(self):
            return {"odd": 1}

    out = judge_prompts(Odd(), ["odd", "even"], metric="m", cache=False)
    assert out.select("status", "error", "input_tokens", "retries").rows() == [
        ("judge_error", "the judge returned a int, not text", None, 0),
        ("ok", None, 7, 1),
    ]


def test_a_caller_error_inside_the_judge_stops_the_run():
    def judge(prompt):
        raise MissingDependencyError("needs something: pip install it")

    with pytest.raises(MissingDependencyError, match="needs something"):
        judge_prompts(judge, ["a", "b"], metric="m", cache=False)


@pytest.mark.slow
def test_every_fault_of_the_server_ends_as_its_status(server, tmp_path):
    server.rules.update({"R429": "429", "R500": "500", "SLOW": "slow", "MALF": "malformed", "DROP": "drop"})
    server.rules.update({"NOCH": "no_choices", "BADS": "bad_score", "FRAC": "fraction", "NOUS": "no_usage"})
    judge = fast_judge(server, timeout=0.3, max_retries=1, rate_limit_budget=0.5)
    prompts = ["R429 a", "R500 b", "SLOW c", "MALF d", "DROP e", "NOCH f", "BADS g", "FRAC h", "NOUS i", "ok j"]
    out = judge_prompts(judge, [*prompts, None], metric="m", cache=tmp_path / "c.sqlite3")
    assert out.height == 11 and out["row"].to_list() == list(range(11))
    assert out["status"].to_list() == [
        "rate_limited",
        "http_error",
        "timeout",
        "http_error",
        "http_error",
        "http_error",
        "ok",
        "ok",
        "ok",
        "ok",
        "skipped",
    ]
    # 429s retried until the time budget ran out; a timeout is not sent again, nor is a malformed body
    assert out["retries"][0] >= 1 and out["retries"].to_list()[1:6] == [1, 0, 0, 1, 0]
    errors = out["error"].to_list()
    assert "HTTP 429" in errors[0] and "HTTP 500" in errors[1] and "no reply within 0.3 s" in errors[2]
    assert "malformed response body" in errors[3] and "connection error" in errors[4] and "IndexError" in errors[5]
    parsed = parse_replies(out["text"])
    assert parsed["status"].to_list()[6:10] == ["parse_error", "ok", "ok", "ok"]
    # reported usage (words) where the server gave it, characters / 4 where it did not
    assert out["input_tokens"][9] == 2 and out["input_tokens"][8] == -(-len("NOUS i") // 4)
    # only replies are cached; the failures are asked again by a rerun, the replies are not
    assert len(JudgeCache(tmp_path / "c.sqlite3")) == 4


# --- the cache: rerun, samples, resume -----------------------------------------------------
def test_rerun_with_the_same_cache_sends_no_request(server, tmp_path):
    cache = tmp_path / "judge.sqlite3"
    judge = fast_judge(server)
    prompts = [f"question {i}" for i in range(12)]
    first = judge_prompts(judge, prompts, metric="m", cache=cache)
    assert len(server.log) == 12 and not first["cached"].any()
    server.reset()
    second = judge_prompts(fast_judge(server), prompts, metric="m", cache=cache)
    assert server.log == []  # zero requests
    assert second["cached"].all() and second.drop("cached").equals(first.drop("cached"))


def test_sample_zero_is_shared_by_n_samples(server, tmp_path):
    cache = tmp_path / "judge.sqlite3"
    judge_prompts(fast_judge(server), ["p1", "p2"], metric="m", cache=cache)
    server.reset()
    out = judge_prompts(fast_judge(server), ["p1", "p2"], metric="m", n_samples=3, cache=cache)
    assert out["cached"].to_list() == [True, False, False, True, False, False]
    assert sorted((r.prompt, r.body["seed"]) for r in server.log) == [("p1", 1), ("p1", 2), ("p2", 1), ("p2", 2)]


def test_another_judge_does_not_read_this_judges_replies(server, tmp_path):
    cache = tmp_path / "judge.sqlite3"
    judge_prompts(fast_judge(server), ["p"], metric="m", cache=cache)
    out = judge_prompts(fast_judge(server, temperature=0.5), ["p"], metric="m", cache=cache)
    assert not out["cached"][0] and len(server.log) == 2


@pytest.mark.slow
def test_interrupted_run_resumes_without_repeating_a_request(tmp_path):
    cache_path = tmp_path / "judge.sqlite3"
    prompts = [f"row {i}" for i in range(16)]
    with FakeJudgeServer(latency=0.05) as server:

        async def interrupted() -> None:
            task = asyncio.create_task(
                ajudge_prompts(fast_judge(server), prompts, metric="m", cache=cache_path, max_concurrency=2)
            )
            cache = JudgeCache(cache_path)
            while len(cache) < 6:
                await asyncio.sleep(0.01)
            task.cancel()  # as Ctrl-C does
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(interrupted())
        cached_prompts = _cached_prompts(cache_path, prompts)
        assert 6 <= len(cached_prompts) < 16
        server.reset()
        out = judge_prompts(fast_judge(server), prompts, metric="m", cache=cache_path)
        asked_again = server.prompts()
    assert out["status"].to_list() == ["ok"] * 16 and out["text"].to_list() == [reply_text(p) for p in prompts]
    assert not set(asked_again) & cached_prompts  # nothing cached is asked again
    assert sorted(asked_again) == sorted(set(prompts) - cached_prompts)  # and everything else once
    assert out.filter(pl.col("cached"))["row"].len() == len(cached_prompts)


def _cached_prompts(cache_path: Path, prompts: list[str]) -> set[str]:
    """Prompts whose sample 0 is in the cache (keys computed as the runner does)."""
    from ragframe.judges import cache_key

    identity = OpenAIJudge("fake-model", base_url="http://127.0.0.1:1/v1").identity()
    keys = {cache_key(identity, p, 0): p for p in prompts}
    return {keys[k] for k in JudgeCache(cache_path).get_many(keys)}


_KILLED = """
import sys
from ragframe.judges import OpenAIJudge, judge_prompts
judge = OpenAIJudge("fake-model", base_url=sys.argv[1], api_key="sk-test", max_concurrency=2)
judge_prompts(judge, [f"row {i}" for i in range(40)], metric="m", cache=sys.argv[2], progress=False)
print("finished")
"""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_process_resumes_without_repeating_a_request(tmp_path):
    cache_path = tmp_path / "judge.sqlite3"
    prompts = [f"row {i}" for i in range(40)]
    with FakeJudgeServer(latency=0.05) as server:
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_KILLED), server.base_url, str(cache_path)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (cache_path.exists() and len(JudgeCache(cache_path)) >= 8):
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)  # no chance to clean up
        child.communicate(timeout=10)
        assert child.returncode == -signal.SIGKILL
        cached = _cached_prompts(cache_path, prompts)
        assert 8 <= len(cached) < 40
        server.reset()
        out = judge_prompts(fast_judge(server), prompts, metric="m", cache=cache_path)
        asked_again = server.prompts()
    assert out["status"].to_list() == ["ok"] * 40
    assert not set(asked_again) & cached and sorted(asked_again) == sorted(set(prompts) - cached)


# --- concurrency and event loops -----------------------------------------------------------
def test_concurrency_bound_for_async_callables():
    state = {"now": 0, "max": 0}

    async def judge(prompt: str) -> str:
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.02)
        state["now"] -= 1
        return "Score: 1"

    judge_prompts(judge, [f"p{i}" for i in range(20)], metric="m", cache=False, max_concurrency=3)
    assert state["max"] == 3


@pytest.mark.slow
def test_concurrency_measured_by_the_server():
    # the server holds requests until `gather` are in flight at once (or none came for a second: the judge's
    # window grows from 1 as replies come): the bound is read from the server's own counter whatever the load
    with FakeJudgeServer(latency=0.05, gather=4) as server:
        prompts = [f"p{i}" for i in range(12)]
        judge_prompts(fast_judge(server, max_concurrency=4, timeout=30.0), prompts, metric="m", cache=False)
        assert server.max_in_flight == 4  # the judge's own bound
        server.reset()
        server.gather = 2
        judge = fast_judge(server, max_concurrency=4, timeout=30.0)
        judge_prompts(judge, prompts, metric="m", cache=False, max_concurrency=2)
        assert server.max_in_flight == 2  # the run's lower bound
        server.reset()
        server.gather = 3
        judge = fast_judge(server, max_concurrency=3, timeout=30.0)
        judge_prompts(judge, prompts, metric="m", cache=False, max_concurrency=8)
        assert server.max_in_flight == 3  # the judge's bound caps a higher run bound


def test_sync_api_inside_a_running_event_loop(server):
    seen = {}

    async def judge(prompt: str) -> str:
        seen["thread"] = threading.current_thread().name
        return "Score: 1"

    async def notebook_cell():
        caller = asyncio.get_running_loop()
        out = judge_prompts(judge, ["a"], metric="m", cache=False)  # no nest_asyncio, no await
        served = judge_prompts(fast_judge(server), ["b", "c"], metric="m", cache=False)
        assert asyncio.get_running_loop() is caller
        return out, served

    out, served = asyncio.run(notebook_cell())
    assert out["text"].to_list() == ["Score: 1"] and seen["thread"] == "ragframe-judge"
    assert served["text"].to_list() == [reply_text("b"), reply_text("c")]


def test_async_api_runs_on_the_callers_loop(server):
    async def main():
        judge = fast_judge(server)
        loop_thread = threading.current_thread().name
        first, second = await asyncio.gather(  # two metrics at once share the judge's HTTP client
            ajudge_prompts(judge, ["a", "b", "c"], metric="m1", cache=False),
            ajudge_prompts(judge, ["d", "e"], metric="m2", cache=False),
        )
        return loop_thread, first, second

    loop_thread, first, second = asyncio.run(main())
    assert loop_thread == threading.current_thread().name
    assert first["status"].to_list() == ["ok"] * 3 and second["status"].to_list() == ["ok"] * 2


# --- dry run and accounting ----------------------------------------------------------------
def test_dry_run_calls_nothing_and_estimates(server, tmp_path):
    cache = tmp_path / "judge.sqlite3"
    judge = fast_judge(server, max_tokens=50, input_price_per_million=2.0, output_price_per_million=8.0)
    judge_prompts(judge, ["cached prompt"], metric="m", cache=cache)
    server.reset()
    judge.usage(reset=True)
    prompts = ["cached prompt", "a" * 10, "b" * 41, None]
    out = judge_prompts(judge, prompts, metric="m", cache=cache, dry_run=True)
    assert server.log == []
    assert out.select("status", "cached", "input_tokens", "output_tokens").rows() == [
        ("skipped", True, 4, 50),
        ("skipped", False, 3, 50),
        ("skipped", False, 11, 50),
        ("skipped", False, None, None),
    ]
    assert out["error"].to_list()[:3] == ["dry run: not called"] * 3
    usage = judge.usage().row(0, named=True)
    # two calls would be sent: 3 + 11 input tokens and 2 x 50 reply tokens, at 2 and 8 per million
    assert usage == {
        "metric": "m",
        "calls": 2,
        "cache_hits": 1,
        "retries": 0,
        "failures": 0,
        "input_tokens": 14,
        "output_tokens": 100,
        "cost": pytest.approx((14 * 2.0 + 100 * 8.0) / 1e6),
        "dry_run": True,
    }


def test_dry_run_does_not_create_the_cache_file(tmp_path):
    out = judge_prompts(str.upper, ["a"], metric="m", cache=tmp_path / "new.sqlite3", dry_run=True)
    assert out["cached"].to_list() == [False] and not (tmp_path / "new.sqlite3").exists()


def test_usage_per_metric_with_cost(server, tmp_path):
    server.queue("429", "500")
    server.rules["FAIL"] = "malformed"
    judge = fast_judge(server, input_price_per_million=1.5, output_price_per_million=6.0)
    cache = tmp_path / "judge.sqlite3"
    judge_usage(reset=True)
    prompts = ["one two three", "four five", "FAIL six"]
    out = judge_prompts(judge, prompts, metric="faithfulness", cache=cache)
    judge_prompts(judge, prompts[:2], metric="faithfulness", cache=cache)  # two cache hits
    judge_prompts(judge, ["seven"], metric="relevance", cache=False)
    ok = out.filter(pl.col("status") == "ok")
    words_in = 3 + 2  # the server reports words
    words_out = sum(len(reply_text(p).split()) for p in prompts[:2])
    assert ok["input_tokens"].sum() == words_in and ok["output_tokens"].sum() == words_out
    expected = pl.DataFrame(
        {
            "metric": ["faithfulness", "relevance"],
            "calls": [3, 1],
            "cache_hits": [2, 0],
            "retries": [2, 0],  # the queued 429 and 500 were retried once each
            "failures": [1, 0],
            "input_tokens": [words_in, 1],
            "output_tokens": [words_out, len(reply_text("seven").split())],
            "dry_run": [False, False],
        }
    )
    usage = judge.usage()
    assert usage.drop("cost").equals(expected.select(usage.drop("cost").columns))
    costs = [(words_in * 1.5 + words_out * 6.0) / 1e6, (1 * 1.5 + len(reply_text("seven").split()) * 6.0) / 1e6]
    assert usage["cost"].to_list() == pytest.approx(costs)
    assert judge_usage().drop("cost").equals(usage.drop("cost"))  # the process-wide ledger saw the same


def test_usage_of_a_wrapped_callable_and_unknown_cost():
    judge = as_judge(Counting())
    judge_prompts(judge, ["abcd", "abcdefgh"], metric="m", cache=False)
    row = judge.usage().row(0, named=True)
    assert (row["calls"], row["input_tokens"], row["cost"]) == (2, 1 + 2, None)


# --- progress ------------------------------------------------------------------------------
class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_silent_off_a_terminal_and_for_short_runs(capsys):
    judge_prompts(Counting(), ["a", "b"], metric="m", cache=False, progress=True)
    assert capsys.readouterr().err == ""
    quick = JudgeProgress(2, "m", enabled=True, stream=FakeTerminal())  # a terminal, but under a second
    quick.update(2)
    quick.close()
    assert quick.stream.getvalue() == "" and not quick.shown


def test_progress_counter_on_a_terminal():
    stream = FakeTerminal()
    progress = JudgeProgress(4, "faithfulness", enabled=True, stream=stream, show_after=0.0)
    progress.update(1)
    progress.update(3)
    progress.close()
    text = stream.getvalue()
    assert "judge faithfulness: 1/4 calls" in text and "judge faithfulness: 4/4 calls" in text and text.endswith("\n")
    off = JudgeProgress(4, "m", enabled=False, stream=FakeTerminal(), show_after=0.0)
    off.update(4)
    assert off.stream.getvalue() == ""


def test_progress_shown_for_a_long_run_on_a_terminal(monkeypatch):
    import ragframe.judges.progress as progress_module

    terminal = FakeTerminal()
    monkeypatch.setattr(progress_module, "SHOW_AFTER", 0.05)
    monkeypatch.setattr(sys, "stderr", terminal)

    async def judge(prompt):
        await asyncio.sleep(0.03)
        return "Score: 1"

    judge_prompts(judge, [f"p{i}" for i in range(6)], metric="m", cache=False, max_concurrency=1)
    assert "judge m: 6/6 calls" in terminal.getvalue()


class Stop(BaseException):
    """Stands for KeyboardInterrupt (which pytest would take as the end of the session)."""


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM")
def test_interrupting_the_sync_api_inside_a_loop_stops_the_worker_thread(tmp_path):
    calls = []

    async def judge(prompt: str) -> str:
        calls.append(prompt)
        await asyncio.sleep(0.05)
        return "Score: 1"

    def interrupt(signum, frame):
        raise Stop

    previous = signal.signal(signal.SIGALRM, interrupt)
    cache = tmp_path / "judge.sqlite3"
    try:

        async def cell():
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            named = CallableJudge(judge, name="interrupted")
            judge_prompts(named, [f"p{i}" for i in range(100)], metric="m", cache=cache, max_concurrency=2)

        with pytest.raises(Stop):
            asyncio.run(cell())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    made = len(calls)
    time.sleep(0.2)
    assert len(calls) == made < 100  # the private loop was cancelled, not left running
    assert not any(t.name == "ragframe-judge" for t in threading.enumerate())
    assert 0 < len(JudgeCache(cache)) <= made  # what had arrived is cached


def test_progress_in_a_notebook():
    OutStream = type("OutStream", (io.StringIO,), {"__module__": "ipykernel.iostream"})  # not a tty
    stream = OutStream()
    progress = JudgeProgress(2, "m", enabled=True, stream=stream, show_after=0.0)
    progress.update(2)
    progress.close()
    assert "judge m: 2/2 calls" in stream.getvalue()


def test_two_lambdas_never_share_cached_replies(tmp_path):
    """Lambdas share a name; the cache keys them by a fingerprint of their code too."""
    cache = tmp_path / "c.sqlite3"
    first = judge_prompts(lambda p: "Score: 1", ["a"], metric="m", cache=cache)
    second = judge_prompts(lambda p: "Score: 0", ["a"], metric="m", cache=cache)
    assert first["text"].to_list() == ["Score: 1"] and second["text"].to_list() == ["Score: 0"]
    assert second["cached"].to_list() == [False]
    again = judge_prompts(lambda p: "Score: 0", ["a"], metric="m", cache=cache)  # the same source: a cache hit
    assert again["cached"].to_list() == [True]
