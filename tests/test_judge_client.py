"""OpenAIJudge against the fake server: the request, retries and Retry-After, timeouts, rate limits measured
by the server, parameters, and the API key that never appears anywhere but the Authorization header."""

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


@pytest.fixture
def server():
    with FakeJudgeServer() as running:
        yield running


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
def test_429_with_retry_after_seconds_is_waited_then_succeeds(server):
    server.retry_after = "0.3"
    server.queue("429", "429")
    start = time.monotonic()
    reply = complete(make(server), "p")
    elapsed = time.monotonic() - start
    assert reply.retries == 2 and reply.text == reply_text("p") and len(server.log) == 3
    gaps = [b.start - a.start for a, b in itertools.pairwise(server.log)]
    assert all(gap >= 0.3 for gap in gaps), gaps  # honoured, not the 0.01 s backoff
    assert elapsed < 1.5


def test_429_outliving_the_retries_is_rate_limited(server):
    server.queue(*["429"] * 10)
    with pytest.raises(JudgeRateLimited, match=r"HTTP 429 Too Many Requests.*\(after 3 attempts\)") as caught:
        complete(make(server, max_retries=2), "p")
    assert caught.value.retries == 2 and caught.value.status == "rate_limited" and len(server.log) == 3


def test_a_retry_after_too_long_is_not_waited(server):
    server.retry_after = str(int(MAX_RETRY_AFTER) + 60)
    server.queue("429")
    start = time.monotonic()
    with pytest.raises(JudgeRateLimited, match="not waited"):
        complete(make(server), "p")
    assert len(server.log) == 1 and time.monotonic() - start < 1


def test_503_retry_after_http_date_and_500s(server):
    server.retry_after = formatdate(time.time() - 5, usegmt=True)  # a date in the past: retry at once
    server.queue("503", "500", "500")
    assert complete(make(server), "p").retries == 3
    server.queue(*["500"] * 10)
    with pytest.raises(JudgeHTTPError, match=r"HTTP 500 Internal Server Error.*after 2 attempts"):
        complete(make(server, max_retries=1), "p")


def test_timeouts_are_retried_then_reported(server):
    server.rules["SLOW"] = "slow"
    server.queue("slow")
    start = time.monotonic()
    assert complete(make(server, timeout=0.2), "quick").retries == 1  # the first attempt timed out
    with pytest.raises(JudgeTimeout, match=r"no reply within 0.2 s \(after 2 attempts\)") as caught:
        complete(make(server, timeout=0.2, max_retries=1), "SLOW")
    assert caught.value.status == "timeout" and time.monotonic() - start < 2


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


# --- rate limits, measured by the server -----------------------------------------------------
def test_requests_per_minute(server):
    judge = make(server, requests_per_minute=600, max_concurrency=8)  # one request per 0.1 s
    out = judge_prompts(judge, [f"p{i}" for i in range(12)], metric="m", cache=False)
    assert out["status"].to_list() == ["ok"] * 12
    starts = sorted(r.start for r in server.log)
    # evenly spaced at the limit, no burst: k requests span at least (k - 1) x 0.1 s, less the
    # arrival jitter of a loaded 2-core machine (one request delayed, the next on time: 0.12 s)
    for (i, a), (j, b) in itertools.combinations(enumerate(starts), 2):
        assert b - a >= (j - i) * 0.1 - 0.12, (i, j, b - a)
    assert 1.05 <= starts[-1] - starts[0] < 2.0
    for first in starts:  # never more than 10 + 1 starts in any second
        assert sum(first <= s < first + 1.0 for s in starts) <= 11


def test_the_server_limit_is_never_hit_under_the_client_limit(server):
    server.requests_per_second = 9  # a bucket of 9 requests refilled at 9 per second
    judge = make(server, requests_per_minute=480, max_concurrency=16)  # 8 per second
    out = judge_prompts(judge, [f"p{i}" for i in range(12)], metric="m", cache=False)
    assert out["status"].to_list() == ["ok"] * 12 and out["retries"].sum() == 0
    assert all(r.status == 200 for r in server.log)
    server.reset()  # without the client's limit the server's is hit (so the check above can fail)
    out = judge_prompts(make(server, max_retries=0), [f"q{i}" for i in range(12)], metric="m", cache=False)
    assert "rate_limited" in out["status"].to_list() and any(r.status == 429 for r in server.log)


def test_tokens_per_minute(server):
    # 40-character prompts: 10 estimated input tokens + max_tokens 10 = 20 per request before the reply;
    # the server reports 1 prompt word + 8 reply words = 9: the account is corrected to 9
    judge = make(server, tokens_per_minute=60 * 90, max_tokens=10, max_concurrency=1)  # 90 tokens per second
    prompts = [f"{i:02d}" + "x" * 38 for i in range(8)]
    judge_prompts(judge, prompts, metric="m", cache=False)
    starts = [r.start for r in server.log]
    assert starts[-1] - starts[0] >= 7 * 9 / 90 * 0.95  # 9 tokens each at 90 per second
    assert starts[-1] - starts[0] < 7 * 20 / 90 + 0.5


def test_rate_limiter_arithmetic():
    limiter = RateLimiter(requests_per_minute=60, tokens_per_minute=600)  # 1 request and 10 tokens per second
    waits = [limiter.reserve(tokens=5) for _ in range(3)]
    assert waits[0] == 0 and waits[1] == pytest.approx(1.0, abs=0.01) and waits[2] == pytest.approx(2.0, abs=0.01)
    tokens = RateLimiter(tokens_per_minute=600)
    assert [round(tokens.reserve(30), 2) for _ in range(3)] == [0.0, 3.0, 6.0]  # 30 tokens take 3 s
    tokens.settle(estimated=30, actual=10)  # the last request used 10: 2 s given back
    assert tokens.reserve(0) == pytest.approx(7.0, abs=0.01)
    paused = RateLimiter()
    paused.pause(0.5)
    assert paused.reserve() == pytest.approx(0.5, abs=0.01)
    assert pickle.loads(pickle.dumps(limiter)).reserve() == 0  # a copy starts with a fresh account


# --- the key never appears anywhere ----------------------------------------------------------
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


def test_a_burst_against_a_server_limit_ends_ok_without_a_client_limit(server):
    # no requests_per_minute: 80 calls at once against a bucket of 40 refilled at 40 per second; the
    # jitter after each Retry-After spreads the refused calls out, so none exhausts its retries
    server.requests_per_second = 40
    judge = OpenAIJudge("fake-model", base_url=server.base_url, max_concurrency=32, max_retries=6)
    start = time.monotonic()
    out = judge_prompts(judge, [f"p{i}" for i in range(80)], metric="m", cache=False)
    assert out["status"].to_list() == ["ok"] * 80
    assert any(r.status == 429 for r in server.log) and time.monotonic() - start < 4
