"""OpenAIJudge against the fake server: the request, retries and Retry-After, timeouts, rate limits, parameters,
and the API key that never appears anywhere but the Authorization header.

No test depends on how fast this machine is (issue 19): pacing is checked with a fake clock, or against the
server's recorded request times with bounds that only a slower machine makes easier to meet (a request cannot
reach the server before the client's limiter lets it go). The learned limits and queue-aware timeouts of
issue 20 are in test_judge_transport.py.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import pickle
import random
import sys
import time
from email.utils import formatdate

import polars as pl
import pytest
from judge_server import FakeJudgeServer, reply_text

from ragframe.exceptions import InvalidParameterError, MissingDependencyError
from ragframe.judges import (
    JudgeHTTPError,
    JudgeRateLimited,
    JudgeTimeout,
    OpenAIJudge,
    RateLimiter,
    judge_prompts,
    judge_usage,
)
from ragframe.judges.client import MAX_RETRY_AFTER, _Secret, retry_after_seconds

KEY = "sk-test-K3y-0f-n0-v4lue-9f8e7d6c"


def make(server: FakeJudgeServer, **options) -> OpenAIJudge:
    options = {"api_key": KEY, "backoff_base": 0.01, "backoff_max": 0.05, "timeout": 2.0, **options}
    return OpenAIJudge("fake-model", base_url=server.base_url, **options)


def complete(judge: OpenAIJudge, prompt: str, sample: int = 0):
    async def call():
        async with judge.session():
            return await judge.complete(prompt, sample)

    return asyncio.run(call())


# --- the request -----------------------------------------------------------------------------
def test_request_and_reply(server):
    judge = make(server, max_tokens=64, top_p=0.5)
    reply = complete(judge, "Is the answer faithful?")
    assert reply.text == reply_text("Is the answer faithful?")
    assert (reply.input_tokens, reply.output_tokens, reply.retries) == (4, len(reply.text.split()), 0)
    (request,) = server.log
    assert request.body == {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "Is the answer faithful?"}],
        "temperature": 0.0,
        "max_tokens": 64,
        "top_p": 0.5,
    }  # no seed for sample 0
    assert request.headers["Authorization"] == f"Bearer {KEY}"


def test_seed_per_sample_and_json_mode(server):
    complete(make(server, json_mode=True), "p", 2)
    complete(make(server, seed=100), "p", 3)
    complete(make(server, seed=100), "p", 0)
    first, second, third = (r.body for r in server.log)
    assert first["seed"] == 2 and first["response_format"] == {"type": "json_object"}
    assert second["seed"] == 103 and third["seed"] == 100


def test_defaults_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    judge = OpenAIJudge("m")
    assert judge.base_url == server.base_url
    complete(judge, "p")
    assert server.log[0].headers["Authorization"] == f"Bearer {KEY}"
    monkeypatch.delenv("OPENAI_API_KEY")
    complete(OpenAIJudge("m"), "p")  # a local server needs no key: no header at all
    assert "Authorization" not in server.log[1].headers
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert OpenAIJudge("m").base_url == "https://api.openai.com/v1"


def test_identity_is_what_replies_depend_on(server):
    judge = make(server, max_tokens=5)
    assert judge.identity() == {
        "api": "openai-chat-completions",
        "model": "fake-model",
        "host": "127.0.0.1/v1",
        "temperature": 0.0,
        "json_mode": False,
        "extra_body": {"max_tokens": 5},
    }
    other_port = OpenAIJudge("fake-model", base_url="http://127.0.0.1:9/v1", max_tokens=5, timeout=1, max_retries=0)
    assert other_port.identity() == judge.identity()  # port, key, timeouts and limits do not change replies
    assert make(server, max_tokens=5, temperature=0.3).identity() != judge.identity()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model": ""}, "model must be a non-empty model name"),
        ({"base_url": "ftp://host/v1"}, "base_url must be an http"),
        ({"timeout": 0}, "timeout must be a finite number > 0.0"),
        ({"max_retries": -1}, "max_retries must be an int >= 0"),
        ({"max_concurrency": 0}, "max_concurrency must be an int >= 1"),
        ({"requests_per_minute": 0}, "requests_per_minute must be a finite number > 0.0"),
        ({"rate_limit_budget": -1}, "rate_limit_budget must be a finite number >= 0.0"),
        ({"temperature": -1}, "temperature must be a finite number >= 0.0"),
        ({"input_price_per_million": -1}, "input_price_per_million must be"),
        ({"json_mode": 1}, "json_mode must be True or False"),
        ({"messages": []}, "messages must be left to the judge"),
        ({"seed": "x"}, "seed must be an int >= 0"),
        ({"logit_bias": {1, 2}}, "extra_body must be JSON-serialisable"),
        ({"api_key": 12345}, "api_key must be a str, found a int"),
    ],
)
def test_parameters_checked(options, message):
    options = {"model": "m", "base_url": "http://127.0.0.1:9/v1", **options}
    with pytest.raises(InvalidParameterError, match=message):
        OpenAIJudge(options.pop("model"), **options)


def test_base_url_normalised():
    assert OpenAIJudge("m", base_url="http://h:1/v1/chat/completions").base_url == "http://h:1/v1"


def test_missing_httpx_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'ragframe\[judge\]'"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1")


# --- retries, Retry-After, timeouts ----------------------------------------------------------
@pytest.mark.slow
def test_429_with_retry_after_seconds_is_waited_then_succeeds(server):
    server.retry_after = "0.3"
    server.queue("429", "429")
    reply = complete(make(server), "p")
    assert reply.retries == 2 and reply.text == reply_text("p") and len(server.log) == 3
    # a retry leaves >= 0.3 s after the 429 arrived, which is after the server recorded the refused request
    gaps = [b.start - a.start for a, b in itertools.pairwise(server.log)]
    assert all(gap >= 0.3 for gap in gaps), gaps  # honoured, not the 0.01 s backoff


def test_429_outliving_the_budget_is_rate_limited(server):
    server.rules["p"] = "429"
    with pytest.raises(
        JudgeRateLimited, match=r"HTTP 429 Too Many Requests.*\(after \d+ attempts\); refused"
    ) as caught:
        complete(make(server, max_retries=0, rate_limit_budget=0.2), "p")
    assert caught.value.status == "rate_limited" and caught.value.retries == len(server.log) - 1 >= 1


def test_a_retry_after_too_long_is_not_waited(server):
    server.retry_after = str(int(MAX_RETRY_AFTER) + 60)
    server.queue("429")
    with pytest.raises(JudgeRateLimited, match="not waited") as caught:
        complete(make(server, rate_limit_budget=10_000), "p")
    assert len(server.log) == 1 and caught.value.retries == 0


def test_503_retry_after_http_date_and_500s(server):
    server.retry_after = formatdate(time.time() - 5, usegmt=True)  # a date in the past: retry at once
    server.queue("503", "500", "500")
    assert complete(make(server), "p").retries == 3
    server.queue(*["500"] * 10)
    with pytest.raises(JudgeHTTPError, match=r"HTTP 500 Internal Server Error.*after 2 attempts"):
        complete(make(server, max_retries=1), "p")


def test_a_timeout_is_reported_and_not_sent_again(server):
    server.slow_seconds = 60.0  # released when the server stops
    server.rules["SLOW"] = "slow"
    with pytest.raises(JudgeTimeout, match=r"no reply within 0\.2 s .*not sent again.*\(after 1 attempt\)") as caught:
        complete(make(server, timeout=0.2, max_retries=3), "SLOW")
    assert caught.value.status == "timeout" and caught.value.retries == 0 and len(server.log) == 1


def test_connection_errors(server):
    server.queue("drop")
    assert complete(make(server), "p").retries == 1
    closed = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", max_retries=1, backoff_base=0.01)
    with pytest.raises(JudgeHTTPError, match="connection error"):
        complete(closed, "p")


def test_not_retried(server):
    for fault, message in [("malformed", "malformed response body"), ("no_choices", "IndexError"), ("401", "401")]:
        server.queue(fault)
        with pytest.raises(JudgeHTTPError, match=message):
            complete(make(server), "p")
    assert len(server.log) == 3  # one attempt each


def test_retry_after_parsing():
    now = 1_700_000_000.0
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "1.5"}) == 1.5
    assert retry_after_seconds({"retry-after": "-4"}) == 0.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"retry-after": formatdate(now + 7, usegmt=True)}, now=now) == 7.0
    assert retry_after_seconds({"retry-after": formatdate(now - 7, usegmt=True)}, now=now) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after": "nan"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_is_full_jitter_under_an_exponential_ceiling():
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", backoff_base=0.5, backoff_max=3.0)
    random.seed(5)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 3.0), (8, 3.0)]:
        waits = [judge._backoff(attempt, None) for _ in range(400)]
        assert 0 <= min(waits) < 0.1 * ceiling and 0.9 * ceiling < max(waits) <= ceiling
    waits = [judge._backoff(1, 2.0) for _ in range(400)]  # a Retry-After is waited, then the jitter
    assert 2.0 <= min(waits) < 2.1 and 2.9 < max(waits) <= 3.0


# --- configured rate limits ------------------------------------------------------------------
@pytest.mark.slow
def test_requests_per_minute(server):
    judge = make(server, requests_per_minute=600, max_concurrency=8)  # one request per 0.1 s
    before = time.monotonic()
    out = judge_prompts(judge, [f"p{i}" for i in range(12)], metric="m", cache=False)
    assert out["status"].to_list() == ["ok"] * 12
    # the limiter gives the k-th start no earlier than k x 0.1 s after the run began, and a request reaches
    # the server after its start: a bound a slower machine only makes easier to meet
    starts = sorted(r.start for r in server.log)
    assert all(start >= before + k * 0.1 - 1e-6 for k, start in enumerate(starts)), [s - before for s in starts]


@pytest.mark.slow
def test_the_server_limit_is_never_hit_under_the_client_limit(server):
    # a bucket of 9 refilled at 9 a second; the client paces 8 a second with at most 8 in flight. However late
    # requests arrive, no interval sees more than 8 held back + 1 + 8 x its length: never more than the bucket
    server.requests_per_second = 9
    judge = make(server, requests_per_minute=480, max_concurrency=8)
    out = judge_prompts(judge, [f"p{i}" for i in range(24)], metric="m", cache=False)
    assert out["status"].to_list() == ["ok"] * 24 and out["retries"].sum() == 0
    assert all(r.status == 200 for r in server.log)


@pytest.mark.slow
def test_tokens_per_minute(server):
    # 40-character prompts: 10 estimated input tokens + max_tokens 10 = 20 per request before the reply;
    # the server reports 1 prompt word + 8 reply words = 9: the account is corrected to 9
    judge = make(server, tokens_per_minute=60 * 90, max_tokens=10, max_concurrency=1)  # 90 tokens per second
    settled = []
    settle = judge._limiter.settle
    judge._limiter.settle = lambda estimated, actual: settled.append((estimated, actual)) or settle(estimated, actual)
    prompts = [f"{i:02d}" + "x" * 38 for i in range(8)]
    before = time.monotonic()
    judge_prompts(judge, prompts, metric="m", cache=False)
    assert settled == [(20, 9)] * 8
    starts = [r.start for r in server.log]  # one at a time: each waits for the 9 tokens of the one before
    assert all(start >= before + k * 9 / 90 - 1e-6 for k, start in enumerate(starts)), [s - before for s in starts]


def test_rate_limiter_arithmetic():
    now = [50.0]
    clock = lambda: now[0]  # noqa: E731
    limiter = RateLimiter(requests_per_minute=60, tokens_per_minute=600, clock=clock)  # 1 request, 10 tokens a s
    assert [limiter.reserve(tokens=5) for _ in range(3)] == [0.0, 1.0, 2.0]
    now[0] = 60.0  # idle for a while: no credit saved up, the next starts at once and the one after 1 s later
    assert [limiter.reserve(tokens=5) for _ in range(2)] == [0.0, 1.0]
    tokens = RateLimiter(tokens_per_minute=600, clock=clock)
    assert [tokens.reserve(30) for _ in range(3)] == [0.0, 3.0, 6.0]  # 30 tokens take 3 s
    tokens.settle(estimated=30, actual=10)  # the last request used 10: 2 s given back
    assert tokens.reserve(0) == 7.0
    paused = RateLimiter(clock=clock)
    paused.pause(0.5)
    assert paused.reserve() == 0.5
    assert pickle.loads(pickle.dumps(limiter)).reserve() == 0  # a copy starts with a fresh account


# --- the key never appears anywhere ----------------------------------------------------------
@pytest.mark.slow
def test_the_key_never_appears_anywhere(server, tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    server.rules.update({"ECHO": "401", "BOOM": "500", "SLOW": "slow", "DROP": "drop"})
    server.queue("429")
    judge = make(server, timeout=0.2, max_retries=1, input_price_per_million=1.0)
    cache = tmp_path / "judge.sqlite3"
    prompts = ["fine", "ECHO me", "BOOM", "SLOW", "DROP", None]
    out = judge_prompts(judge, prompts, metric="m", cache=cache, n_samples=2)
    again = judge_prompts(judge, prompts, metric="m", cache=cache, dry_run=True)
    assert server.log[-1].headers["Authorization"] == f"Bearer {KEY}"  # it is sent ...
    assert "Incorrect API key provided: Bearer ***" in out["error"][2]  # ... and scrubbed from what a server echoes
    errors = []
    try:
        complete(make(server, max_retries=0), "ECHO")
    except JudgeHTTPError as error:
        errors += [str(error), repr(error), pickle.dumps(error)]
    captured = capfd.readouterr()
    cache_bytes = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    artefacts = [
        repr(judge),
        str(judge),
        pickle.dumps(judge),
        json.dumps(judge.identity()),
        repr(vars(judge)),
        out.write_json(),
        again.write_json(),
        judge.usage().write_json(),
        judge_usage().write_json(),
        caplog.text,
        "\n".join(str(record.__dict__) for record in caplog.records),
        captured.out,
        captured.err,
        cache_bytes,
        *errors,
    ]
    assert len(errors) == 3 and len(cache_bytes) > 0 and caplog.records  # the artefacts are real
    for artefact in artefacts:
        needle = KEY.encode() if isinstance(artefact, bytes) else KEY
        assert needle not in artefact
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(_Secret(KEY))


def test_unpickled_judge_reads_the_key_from_the_environment(server, monkeypatch):
    judge = make(server)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    copy = pickle.loads(pickle.dumps(judge))
    assert repr(copy) == repr(judge).replace(", api_key='***'", "")
    complete(copy, "p")
    assert "Authorization" not in server.log[-1].headers
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    complete(pickle.loads(pickle.dumps(judge)), "p")
    assert server.log[-1].headers["Authorization"] == "Bearer sk-from-env"


def test_usage_frame_of_the_judge(server):
    judge = make(server, output_price_per_million=10.0)
    judge_prompts(judge, ["a b", "c"], metric="faith", cache=False)
    usage = judge.usage(reset=True)
    assert usage.select("metric", "calls", "input_tokens").rows() == [("faith", 2, 3)]
    output_words = len(reply_text("a b").split()) + len(reply_text("c").split())
    assert usage["cost"][0] == pytest.approx(output_words * 10.0 / 1e6)  # no input price: input is free
    assert judge.usage().height == 0
    assert isinstance(usage, pl.DataFrame)
