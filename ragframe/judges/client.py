"""``rf.OpenAIJudge``: a judge over any OpenAI-compatible chat-completions endpoint.

OpenAI, vLLM, Ollama, LM Studio, llama.cpp's server and compatible gateways all speak it.
Built on httpx (the optional extra ``judge``: ``pip install 'ragframe[judge]'``), imported
when a judge is made, not when ragframe is.

One call is ``POST {base_url}/chat/completions`` with one user message.

Retries
    A wait is exponential backoff with full jitter (drawn uniformly from ``[0,
    min(backoff_max, backoff_base * 2**attempt)]``); when the answer has a ``Retry-After``
    (seconds or an HTTP date; OpenAI's ``retry-after-ms`` first), that long is waited first,
    the jitter on top, and every call of the judge pauses for it. A 429 without one waits
    by the judge's shared back-off level instead, never more than
    :data:`ragframe.judges.limits.UNADVISED_BACKOFF_CAP` seconds (:mod:`ragframe.judges.limits`).

    - **429** is retried for as long as the server keeps refusing for less than
      ``rate_limit_budget`` seconds (default 300), whatever the number of attempts: a call
      ends ``rate_limited`` once it has been refused for that long, once the judge has had no
      request accepted for that long (the server is closed: the other calls stop at their
      next 429 instead of each waiting the budget out), or at once when the server asks to
      wait past the budget or more than :data:`MAX_RETRY_AFTER` seconds (a spent daily quota).
    - **408, 409, 5xx and connection errors** (the server closed the connection or never
      took it) are retried up to ``max_retries`` times.
    - **A timeout is never re-sent**: the request may still be computing, and a second copy
      would be computed too (and billed) with only one reply counted. The call ends
      ``timeout``; failures are not cached, so a rerun asks again.
    - Other 4xx answers and malformed bodies are not retried.

    The outcome of the last attempt names the error: :class:`~ragframe.judges.JudgeRateLimited`
    (429), :class:`~ragframe.judges.JudgeTimeout`, :class:`~ragframe.judges.JudgeHTTPError`.

Rate and concurrency
    Every attempt takes a place in the judge's concurrency window, waits for its start under
    the configured ``requests_per_minute`` / ``tokens_per_minute`` and then under the rate
    learned from 429s, and is sent. Without a configured limit the judge learns one: 429s cut
    the request rate and the window, accepted requests raise them again (AIMD), and a server
    that queues (a request still unanswered after ``timeout`` while the server answers the
    judge's others) shrinks the window. ``timeout`` counts the server's silence, not the time
    a request spends queued behind the judge's own: see :mod:`ragframe.judges.limits` for
    the rules and their constants. Configured limits stay upper bounds.

The API key never leaves the ``Authorization`` header (:mod:`ragframe.secrets`): it is not
in ``repr``, ``str``, pickles (an unpickled judge reads its key again from ``api_key_env``'s
variable, else ``OPENAI_API_KEY``; only :func:`ragframe.evaluate_parquet`'s child processes
get it through their pipe), :meth:`OpenAIJudge.identity` (so not in the cache), log records
or error messages, and any echo of it by a server, in an error or in a reply, is replaced by
``***`` before the reply is parsed, cached or stored.

Examples
--------
>>> judge = OpenAIJudge("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1", api_key="sk-secret", max_tokens=64)
>>> judge
OpenAIJudge('gpt-4o-mini', base_url='http://127.0.0.1:8000/v1', api_key='***', temperature=0.0, max_tokens=64)
>>> judge.identity()["host"], judge.identity()["extra_body"]
('127.0.0.1/v1', {'max_tokens': 64})
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import math
import os
import random
import threading
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import polars as pl

from ragframe import secrets
from ragframe.exceptions import InvalidParameterError
from ragframe.extras import require
from ragframe.judges.base import (
    JudgeCallError,
    JudgeHTTPError,
    JudgeRateLimited,
    JudgeReply,
    JudgeTimeout,
    as_judge,
)
from ragframe.judges.limits import UNADVISED_BACKOFF_CAP, AdaptiveLimits, RateLimiter, Sent
from ragframe.judges.usage import JudgeUsage, token_estimate
from ragframe.public import public
from ragframe.validate import fail, flag, integer, number, positive_int

__all__ = ["OpenAIJudge", "judge_from", "retry_after_seconds", "MAX_RETRY_AFTER", "DEFAULT_BASE_URL"]

logger = logging.getLogger("ragframe.judges")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: A Retry-After longer than this many seconds is not waited: the call ends as rate_limited.
MAX_RETRY_AFTER = 300.0
#: Reply tokens assumed by the rate limiter and dry runs when ``max_tokens`` is not set.
EXPECTED_REPLY_TOKENS = 100
_RETRYABLE = {408, 409, 429}
_RESERVED = {"model", "messages", "stream", "n"}
_EXCERPT = 300


#: Holds the API key; shows as ``'***'`` and refuses to be pickled (outside a child's pipe).
_Secret = secrets.Secret


def _api_key(api_key: Any, api_key_env: Any) -> secrets.Secret | None:
    """The key: given, read from ``api_key_env``'s variable (which must be set), else ``OPENAI_API_KEY``."""
    if api_key is not None and api_key_env is not None:
        raise InvalidParameterError("pass api_key or api_key_env, not both")
    if api_key_env is not None:
        return secrets.from_environment(api_key_env)
    if api_key is None:
        return secrets.from_environment("OPENAI_API_KEY", required=False)
    if isinstance(api_key, secrets.Secret):  # from an Evaluator's judge options
        return api_key if api_key else None
    if not isinstance(api_key, str):
        raise InvalidParameterError(f"api_key must be a str, found a {type(api_key).__name__}")
    secrets.protect({"api_key": api_key})  # refuses '***', the redacted form of a key
    return secrets.Secret(api_key) if api_key.strip() else None  # held stripped: a key read from a file


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date); None if absent.

    Parameters
    ----------
    headers : mapping
        Response headers (lower-case keys, or a case-insensitive mapping such as httpx's).
    now : float, optional
        The current Unix time (for HTTP dates; default ``time.time()``).

    Returns
    -------
    float or None
        Never negative; None when no header or an unreadable one.

    Examples
    --------
    >>> retry_after_seconds({"retry-after": "2"}), retry_after_seconds({"retry-after-ms": "150"})
    (2.0, 0.15)
    >>> retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:05 GMT"}, now=1445412480.0)
    5.0
    """
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds) / 1000
            return max(0.0, value) if math.isfinite(value) else None
        except ValueError:
            pass
    text = headers.get("retry-after")
    if text is None:
        return None
    try:
        value = float(text)
        return max(0.0, value) if math.isfinite(value) else None
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment is None or moment.tzinfo is None:
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


def _import_httpx() -> Any:
    return require("judge", "httpx", note="(or pass any callable prompt -> str as judge=)")


class _Retry(Exception):
    """An attempt that may be retried: the error to raise if it was the last, and the wait a server asked for."""

    def __init__(self, error: JudgeCallError, wait: float | None = None) -> None:
        super().__init__(str(error))
        self.error, self.wait = error, wait
        self.cut = False  # this 429 cut the learned rate
        self.sent_at: float | None = None  # when the refused request left (a back-off's round)


class _Final(Exception):
    """An attempt that must not be repeated (a timeout: the request may still be computing)."""

    def __init__(self, error: JudgeCallError) -> None:
        super().__init__(str(error))
        self.error = error


def _base_url(value: Any) -> tuple[str, str]:
    """The base URL as shown (no trailing ``/`` or ``/chat/completions``) and the endpoint a call is POSTed to.

    The path is joined before the query string: ``https://host/v1?api-version=2024-06-01``
    posts to ``https://host/v1/chat/completions?api-version=2024-06-01``. The URL's secrets
    (userinfo, secret query parameters) are registered for :func:`ragframe.secrets.scrub`.
    """
    url = value if value is not None else (os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
    try:
        parts = urlsplit(url.strip()) if isinstance(url, str) else None
    except ValueError:  # an unbalanced [ in the host
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise fail("base_url", "an http(s) URL such as 'http://127.0.0.1:8000/v1'", secrets.scrub(str(url)))
    for found in secrets.url_secrets(url):
        secrets.register(found)
    path = parts.path.rstrip("/")
    suffix = "/chat/completions"
    path = path[: -len(suffix)] if path.endswith(suffix) else path
    shown = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    return shown, urlunsplit((parts.scheme, parts.netloc, path + suffix, parts.query, ""))


def _optional(value: Any, name: str, *, positive: bool) -> float | None:
    if value is None:
        return None
    return number(value, name, minimum=0.0, inclusive=not positive)


def _count(usage: Any, name: str) -> int | None:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class OpenAIJudge:
    """A judge over an OpenAI-compatible chat-completions endpoint (see the module doc).

    Parameters
    ----------
    model : str
        The model name sent in each request.
    base_url : str, optional
        Up to and including the version, e.g. ``http://127.0.0.1:8000/v1``; default
        ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``.
    api_key : str, optional
        Sent as ``Authorization: Bearer ...``; default ``OPENAI_API_KEY``; none (no header)
        when both are absent or ``api_key=""``, as local servers need.
    api_key_env : str, optional
        The name of the environment variable holding the key (instead of ``api_key``); it
        must be set. What configs should hold: a name, never a key.
    timeout : float
        Seconds of the server's silence one request may wait: counted from when it was sent
        or from the server's last answer to any request of this judge, whichever is later
        (so a request queued behind the judge's own is not timed out while the server works
        through the queue), and at most ``timeout`` times one plus the judge's requests
        already waiting when it was sent. A timed-out request is not sent again.
    max_retries : int
        Retries of 408, 409, 5xx and connection errors (so ``max_retries + 1`` attempts at
        most). Not of 429s (``rate_limit_budget``) and not of timeouts (never re-sent).
    max_concurrency : int
        Requests of this judge in flight at once, at most: the window it learns starts here
        and never exceeds it (shared by every event loop of the process); the runner's
        ``max_concurrency`` may lower it for one run.
    requests_per_minute, tokens_per_minute : float, optional
        Limits shared by all calls of this judge in this process (see
        :mod:`ragframe.judges.limits`); tokens are estimated as prompt characters / 4 plus
        ``max_tokens`` (or 100), then corrected by the reply's ``usage``.
    temperature : float
        Sampling temperature (default 0: the most repeatable judge).
    input_price_per_million, output_price_per_million : float, optional
        Prices per million input / output tokens, for the ``cost`` of :meth:`usage`.
    json_mode : bool
        Ask for a JSON object (``response_format={"type": "json_object"}``); pair it with
        a prompt asking for ``{"score": ..., "reason": ...}`` and parse with
        ``parse_reply(text, json_mode=True)``.
    backoff_base, backoff_max : float
        Seconds of the first retry's backoff ceiling and of every later one's.
    rate_limit_budget : float
        Seconds a call keeps retrying 429s (default 300): see the module doc.
    limiter : object, optional
        Paces the calls instead of the judge's own :class:`RateLimiter` (``requests_per_minute``,
        ``tokens_per_minute``): anything with its methods ``acquire``, ``settle``, ``pause`` and
        ``paused_for``, such as one shared by every worker of a cluster
        (:class:`ragframe.distributed.ratelimit.SharedLimiter`). Not pickled: a copy paces itself.
    **extra_body
        Merged into every request body (``max_tokens=256``, ``top_p=0.9``, ...): part of the
        judge's identity, so of the cache key. ``model``, ``messages``, ``stream`` and ``n``
        are refused.

    Notes
    -----
    Samples: sample 0 is the plain request; sample ``k > 0`` (``n_samples > 1``) also sends
    ``seed=k`` (``seed + k`` when ``seed`` is given in ``extra_body``), so a rerun asks the
    same questions and a server that honours seeds gives the same replies. Sample 0 of
    ``n_samples=3`` is the same request, and the same cache entry, as a run with
    ``n_samples=1``. At temperature 0 the samples differ only as much as the server's
    sampling does: raise ``temperature`` to measure judge noise.

    Picklable (for worker processes): the key, the HTTP clients, the rate limiter's state
    and the usage ledger stay behind; the copy reads ``OPENAI_API_KEY`` again.

    Examples
    --------
    A local OpenAI-compatible server (vLLM, Ollama, llama.cpp) needs no key; nothing is
    sent until a judge metric or :func:`ragframe.judges.judge_prompts` runs:

    >>> import ragframe as rf
    >>> judge = rf.OpenAIJudge("qwen2.5-7b-instruct", base_url="http://127.0.0.1:8000/v1", api_key="",
    ...                        requests_per_minute=600, max_tokens=256)
    >>> judge.identity()["model"], judge.expected_reply_tokens, judge.usage().height
    ('qwen2.5-7b-instruct', 256, 0)
    """

    @public(name="OpenAIJudge")
    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 6,
        max_concurrency: int = 16,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        temperature: float = 0.0,
        input_price_per_million: float | None = None,
        output_price_per_million: float | None = None,
        json_mode: bool = False,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        rate_limit_budget: float = 300.0,
        limiter: Any = None,
        **extra_body: Any,
    ) -> None:
        _import_httpx()
        if not isinstance(model, str) or not model:
            raise fail("model", "a non-empty model name (str)", model)
        self.model = model
        self.base_url, self._endpoint = _base_url(base_url)
        self._api_key = _api_key(api_key, api_key_env)
        self._key_env = api_key_env
        self.timeout = number(timeout, "timeout", minimum=0.0, inclusive=False)
        self.max_retries = integer(max_retries, "max_retries", minimum=0)
        self.max_concurrency = positive_int(max_concurrency, "max_concurrency")
        self.requests_per_minute = _optional(requests_per_minute, "requests_per_minute", positive=True)
        self.tokens_per_minute = _optional(tokens_per_minute, "tokens_per_minute", positive=True)
        self.temperature = number(temperature, "temperature", minimum=0.0)
        self.input_price_per_million = _optional(input_price_per_million, "input_price_per_million", positive=False)
        self.output_price_per_million = _optional(output_price_per_million, "output_price_per_million", positive=False)
        self.json_mode = flag(json_mode, "json_mode")
        self.backoff_base = number(backoff_base, "backoff_base", minimum=0.0)
        self.backoff_max = number(backoff_max, "backoff_max", minimum=0.0)
        self.rate_limit_budget = number(rate_limit_budget, "rate_limit_budget", minimum=0.0)
        self.extra_body = self._check_extra_body(extra_body)
        self._start()
        if limiter is not None:
            self.share_limiter(limiter)

    @property
    def limiter(self) -> Any:
        """What paces the calls: the judge's own :class:`RateLimiter`, or the one given (:meth:`share_limiter`)."""
        return self._limiter

    def share_limiter(self, limiter: Any) -> None:
        """Pace every later call through ``limiter`` (the ``limiter`` argument, for a judge already made).

        Parameters
        ----------
        limiter : object
            Has ``acquire`` (async), ``settle``, ``pause`` and ``paused_for``, as :class:`RateLimiter`.

        Examples
        --------
        >>> judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", api_key="sk-test-0123456789")
        >>> shared = RateLimiter(60, None)
        >>> judge.share_limiter(shared)
        >>> judge.limiter is shared
        True
        """
        missing = [m for m in ("acquire", "settle", "pause", "paused_for") if not callable(getattr(limiter, m, None))]
        if missing:
            raise fail("limiter", f"an object with {missing[0]}() (as RateLimiter)", limiter)
        self._limiter = limiter

    @staticmethod
    def _check_extra_body(extra_body: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted(_RESERVED & set(extra_body))
        if reserved:
            raise fail(reserved[0], "left to the judge (it sets model, messages, stream, n)", "a value")
        named = sorted(k for k in extra_body if secrets.is_secret_name(k) or secrets.is_secret_reference(k))
        if named:  # the body is the judge's identity, repr and pickle: no place for a credential
            raise InvalidParameterError(
                f"OpenAIJudge: {named[0]!r} looks like a credential, and the request body is part of the judge's "
                "identity, repr and pickles: pass the key as api_key= or {api_key_env} (it is sent only in the "
                "Authorization header)",
                mentions={"api_key_env": ""},
            )
        if "seed" in extra_body:
            integer(extra_body["seed"], "seed", minimum=0)
        try:
            json.dumps(extra_body, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidParameterError(f"OpenAIJudge: extra_body must be JSON-serialisable: {error}") from None
        return dict(extra_body)

    def _start(self) -> None:
        """The parts that are not configuration: limits, ledger, clients (fresh after unpickling)."""
        self._limiter = RateLimiter(self.requests_per_minute, self.tokens_per_minute)
        max_rate = self.requests_per_minute / 60 if self.requests_per_minute else None
        self._adaptive = AdaptiveLimits(self.max_concurrency, max_rate)
        self._usage = JudgeUsage()
        self._backing_off_until = -math.inf  # the latest end of a call's wait after a 429 without Retry-After
        self._lock = threading.Lock()
        self._sessions: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._holders: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    _RUNTIME = ("_api_key", "_limiter", "_adaptive", "_usage", "_lock", "_sessions", "_holders", "_backing_off_until")

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in self._RUNTIME}
        if secrets.is_carrying() and self._api_key is not None:  # a pipe to evaluate_parquet's child
            state["_carried_key"] = self._api_key
        if not secrets.is_carrying():  # a key in the URL's query string or userinfo is not pickled either
            state["base_url"], state["_endpoint"] = secrets.scrub(self.base_url), secrets.scrub(self._endpoint)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        carried = state.pop("_carried_key", None)
        self.__dict__.update(state)
        self._key_env = state.get("_key_env")
        self._api_key = carried if carried is not None else _api_key(None, self._key_env)
        self._start()

    def __repr__(self) -> str:
        shown = [repr(self.model), f"base_url={self.base_url!r}"]
        if self._key_env is not None:
            shown.append(f"api_key_env={self._key_env!r}")
        elif self._api_key is not None:
            shown.append("api_key='***'")
        shown.append(f"temperature={self.temperature!r}")
        for name in ("json_mode", "requests_per_minute", "tokens_per_minute"):
            if getattr(self, name):
                shown.append(f"{name}={getattr(self, name)!r}")
        shown += [f"{k}={v!r}" for k, v in self.extra_body.items()]
        return secrets.scrub(f"OpenAIJudge({', '.join(shown)})")

    __str__ = __repr__

    def identity(self) -> dict[str, Any]:
        """What the replies depend on, for the cache key: never the key, the port, timeouts or limits.

        Returns
        -------
        dict
            ``api``, ``model``, ``host`` (host name and path of ``base_url``: the same
            server on another port is the same judge), ``temperature``, ``json_mode``,
            ``extra_body``.
        """
        parts = urlsplit(self.base_url)
        return {
            "api": "openai-chat-completions",
            "model": self.model,
            "host": f"{parts.hostname}{parts.path}",
            "temperature": self.temperature,
            "json_mode": self.json_mode,
            "extra_body": dict(self.extra_body),
        }

    @property
    def expected_reply_tokens(self) -> int:
        """Reply tokens assumed before a reply: ``max_tokens`` (or ``max_completion_tokens``), else 100."""
        for name in ("max_tokens", "max_completion_tokens"):
            value = self.extra_body.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return EXPECTED_REPLY_TOKENS

    @property
    def usage_ledger(self) -> JudgeUsage:
        """The ledger the runner records this judge's usage into."""
        return self._usage

    def usage(self, *, reset: bool = False) -> pl.DataFrame:
        """This judge's usage per metric (calls, cache hits, retries, failures, tokens, cost).

        Parameters
        ----------
        reset : bool
            Start counting again from zero after reading.

        Returns
        -------
        polars.DataFrame
            Columns as :func:`ragframe.judges.judge_usage`.
        """
        return self._usage.frame(reset=reset)

    # --- HTTP -------------------------------------------------------------------------------

    def _session(self) -> Any:
        """This event loop's HTTP client (made on first use in the loop).

        Only connecting and sending have an httpx timeout: the wait for the reply is timed by
        :meth:`_exchange`, which does not count the time a request is queued behind the judge's own.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._sessions.get(loop)
            if client is None:
                httpx = _import_httpx()
                client = self._sessions[loop] = httpx.AsyncClient(
                    timeout=httpx.Timeout(connect=self.timeout, write=self.timeout, read=None, pool=None),
                    limits=httpx.Limits(
                        max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency
                    ),
                )
        return client

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """Keep this loop's HTTP client open for a run; the last run to end closes it.

        Runs sharing the judge on one loop (several metrics at once) share the client.
        """
        loop = asyncio.get_running_loop()
        self._session()
        with self._lock:
            self._holders[loop] = self._holders.get(loop, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._holders[loop] -= 1
                last = self._holders[loop] == 0
                if last:
                    del self._holders[loop]
            if last:
                await self.aclose()

    async def aclose(self) -> None:
        """Close this event loop's HTTP client (the runner does it at the end of each run)."""
        with self._lock:
            session = self._sessions.pop(asyncio.get_running_loop(), None)
        if session is not None:
            await session.aclose()

    def _redact(self, text: str) -> str:
        return secrets.scrub(text, self._api_key)  # this judge's key whatever its length, and every key known

    def _excerpt(self, text: str) -> str:
        text = " ".join(text.split())
        return self._redact(text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "...")

    def _body(self, prompt: str, sample: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.temperature,
        }
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        body.update(self.extra_body)
        if sample > 0:
            body["seed"] = int(self.extra_body.get("seed", 0)) + sample
        return body

    async def complete(self, prompt: str, sample: int) -> JudgeReply:
        """Send one prompt (retrying as the module doc says) and return the reply with its token counts.

        Parameters
        ----------
        prompt : str
            The user message.
        sample : int
            The sample index (``seed`` for samples after the first).

        Returns
        -------
        JudgeReply

        Raises
        ------
        JudgeRateLimited, JudgeTimeout, JudgeHTTPError
            When the last attempt failed (the runner turns these into row statuses).
        """
        client = self._session()
        body = self._body(prompt, sample)
        estimate = token_estimate(prompt) + self.expected_reply_tokens
        attempt, refused_since, may_cut = 0, None, True
        while True:
            try:
                reply = await self._attempt(client, body, estimate, may_cut=may_cut)
            except _Final as final:
                raise type(final.error)(f"{final.error}{self._attempts(attempt)}", retries=attempt) from None
            except _Retry as retry:
                may_cut = may_cut and not retry.cut
                if isinstance(retry.error, JudgeRateLimited):
                    now = self._adaptive.clock()
                    refused_since = now if refused_since is None else refused_since
                    end = self._rate_limit_end(retry.wait, now - refused_since)
                    progress = f"refused for {now - refused_since:.1f} s of a {self.rate_limit_budget:g} s budget"
                else:
                    end = None if attempt < self.max_retries else ""
                    progress = f"attempt {attempt + 1} of {self.max_retries + 1}"
                if end is not None:
                    error = retry.error
                    raise type(error)(f"{error}{self._attempts(attempt)}{end}", retries=attempt) from None
                limited = isinstance(retry.error, JudgeRateLimited)
                delay = self._backoff(attempt, retry.wait, retry.sent_at if limited else None)
                logger.info("%s: %s (%s); retrying in %.2f s", self.model, retry.error, progress, delay)
                await asyncio.sleep(delay)
                attempt += 1
                continue
            return JudgeReply(reply.text, reply.input_tokens, reply.output_tokens, retries=attempt)

    @staticmethod
    def _attempts(attempt: int) -> str:
        return f" (after {attempt + 1} attempt{'s' if attempt else ''})"

    def _rate_limit_end(self, wait: float | None, refused_for: float) -> str | None:
        """Why a call refused for ``refused_for`` seconds stops retrying 429s now; None: it goes on."""
        if wait is not None and wait > MAX_RETRY_AFTER:
            return f"; the server asked to retry after {wait:.0f} s (more than {MAX_RETRY_AFTER:.0f}): not waited"
        budget = self.rate_limit_budget
        closed = max(refused_for, self._adaptive.closed_for())
        if closed >= budget:
            return f"; refused for {closed:.1f} s, the rate_limit_budget is {budget:g} s"
        if wait is not None and closed + wait > budget:
            return f"; the server asked to retry after {wait:.1f} s, past the rate_limit_budget of {budget:g} s"
        return None

    def _backoff(self, attempt: int, wait: float | None, unadvised_at: float | None = None) -> float:
        """Full jitter under the exponential ceiling, after the server's Retry-After when it gave one.

        The jitter on top of Retry-After keeps the calls that were told to wait the same time from
        all coming back at once (and being refused again together). A 429 without Retry-After
        (``unadvised_at``: when the refused request left) waits by the judge's shared back-off
        level instead, capped (:meth:`AdaptiveLimits.unadvised_backoff`).
        """
        if wait is None and unadvised_at is not None:
            cap = min(self.backoff_max, UNADVISED_BACKOFF_CAP)
            ceiling = self._adaptive.unadvised_backoff(unadvised_at, self.backoff_base, cap)
            delay = random.uniform(ceiling / 2, ceiling)
            self._backing_off_until = max(self._backing_off_until, self._adaptive.clock() + delay)
            return delay
        jitter = random.uniform(0.0, min(self.backoff_max, self.backoff_base * 2**attempt))
        if wait is not None:
            self._limiter.pause(wait)
            return wait + jitter
        return jitter

    def rate_limit_wait(self) -> float:
        """Seconds before this judge sends again after a 429 (a ``Retry-After`` or the shared back-off); 0: none."""
        return max(self._limiter.paused_for(), self._backing_off_until - self._adaptive.clock(), 0.0)

    async def _attempt(self, client: Any, body: dict[str, Any], estimate: int, *, may_cut: bool) -> JudgeReply:
        """One POST in a place of the window, after the configured and the learned pacing.

        Raises _Retry for what may be retried, _Final for a timeout, JudgeHTTPError for what may not.
        """
        adaptive = self._adaptive
        await adaptive.acquire()
        try:
            await self._limiter.acquire(estimate)
            await adaptive.pace()
            sent = adaptive.sent(may_cut=may_cut)
            outcome = "lost"
            try:
                response = await self._exchange(client, body, sent)
                status = response.status_code
                if status == 429:  # a 429 without Retry-After carries no rate: it cuts nothing (judges.limits)
                    outcome = "refused" if retry_after_seconds(response.headers) is not None else "throttled"
                else:
                    outcome = "accepted" if 200 <= status < 300 else "answered"
            finally:
                cut = adaptive.finished(sent, outcome)
        finally:
            adaptive.release()
        try:
            reply = self._reply(response)
        except _Retry as retry:
            retry.cut, retry.sent_at = cut, sent.at
            raise
        if reply.input_tokens is not None and reply.output_tokens is not None:
            self._limiter.settle(estimate, reply.input_tokens + reply.output_tokens)
        return reply

    async def _exchange(self, client: Any, body: dict[str, Any], sent: Sent) -> Any:
        """POST and wait for the answer until the deadline of :meth:`AdaptiveLimits.deadline`.

        A request still waiting ``timeout`` seconds after it was sent while the server answered
        other requests of the judge is queued behind them: the window shrinks and the request
        keeps waiting. At the deadline the connection is closed and the request is not sent again.
        """
        httpx = _import_httpx()
        headers = {"Authorization": f"Bearer {self._api_key.reveal()}"} if self._api_key is not None else {}
        where = f"POST {self._endpoint}"
        task = asyncio.ensure_future(client.post(self._endpoint, json=body, headers=headers))
        adaptive, queued = self._adaptive, False
        try:
            while True:
                remaining = adaptive.deadline(sent, self.timeout) - adaptive.clock()
                if remaining <= 0:
                    waited = adaptive.clock() - sent.at
                    message = (
                        f"{where}: no reply within {self.timeout:g} s of the server's silence ({waited:.1f} s "
                        f"after it was sent); not sent again: the server may still be computing it"
                    )
                    raise _Final(JudgeTimeout(self._redact(message)))
                done, _ = await asyncio.wait({task}, timeout=remaining)
                if done:
                    return task.result()
                if not queued and adaptive.answered_since(sent):
                    adaptive.queueing(sent)
                    queued = True
        except (httpx.ConnectTimeout, httpx.PoolTimeout, httpx.WriteTimeout) as error:  # it never fully left
            message = f"{where}: could not send the request within {self.timeout:g} s ({type(error).__name__})"
            raise _Retry(JudgeTimeout(self._redact(message))) from None
        except httpx.TransportError as error:  # the connection failed or the server closed it: the request failed
            message = f"{where}: connection error ({type(error).__name__}: {error})"
            raise _Retry(JudgeHTTPError(self._redact(message))) from None
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def _reply(self, response: Any) -> JudgeReply:
        """The reply of a response; raises _Retry for what may be retried and JudgeHTTPError for what may not."""
        where = f"POST {self._endpoint}"
        status = response.status_code
        if status == 429 or status in _RETRYABLE or status >= 500:
            kind = JudgeRateLimited if status == 429 else JudgeHTTPError
            message = f"{where}: HTTP {status} {response.reason_phrase}: {self._excerpt(response.text)}"
            raise _Retry(kind(self._redact(message)), retry_after_seconds(response.headers))
        if not 200 <= status < 300:
            message = f"{where}: HTTP {status} {response.reason_phrase} (not retried): {self._excerpt(response.text)}"
            raise JudgeHTTPError(self._redact(message))
        return self._read(response, where)

    def _read(self, response: Any, where: str) -> JudgeReply:
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as error:
            message = f"{where}: malformed response body ({type(error).__name__}): {self._excerpt(response.text)}"
            raise JudgeHTTPError(message) from None
        if not isinstance(text, str):
            raise JudgeHTTPError(f"{where}: the reply has no text content: {self._excerpt(response.text)}")
        usage = data.get("usage")
        text = self._redact(text)  # a gateway that echoes the key in a reply: masked before it is parsed or stored
        return JudgeReply(text, _count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))


# ----------------------------------------------------------------------------- a judge from plain data


def judge_from(judge: Any) -> Any:
    """A :class:`~ragframe.judges.base.Judge` from a callable, a Judge, a model name or OpenAIJudge options.

    Parameters
    ----------
    judge : callable, Judge, str or mapping
        A callable ``prompt -> str`` (sync or async), an object with ``complete`` and
        ``identity`` (``rf.OpenAIJudge``), a model name (``rf.OpenAIJudge(model)``) or a mapping
        of ``rf.OpenAIJudge`` keywords (``{"model": ..., "base_url": ...}``: what a TOML config holds).

    Returns
    -------
    Judge

    Examples
    --------
    >>> judge_from(str.upper).identity()
    {'callable': 'str.upper'}
    """
    if isinstance(judge, (str, Mapping)):
        config = (("model", judge),) if isinstance(judge, str) else tuple(sorted(dict(judge).items()))
        try:
            hash(config)
        except TypeError:  # a nested value (extra_body={...}): a judge of its own
            return _openai_judge.__wrapped__(config)
        return _openai_judge(config)
    try:
        return as_judge(judge)
    except InvalidParameterError as error:
        raise InvalidParameterError(f"{error}") from None


@lru_cache(maxsize=16)
def _openai_judge(config: tuple[tuple[str, Any], ...]) -> Any:
    """One ``rf.OpenAIJudge`` per configuration, so that a run's calls share its rate limits and ledger."""
    return OpenAIJudge(**dict(config))
