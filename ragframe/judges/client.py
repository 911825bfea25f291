"""``rf.OpenAIJudge``: a judge over any OpenAI-compatible chat-completions endpoint.

OpenAI, vLLM, Ollama, LM Studio, llama.cpp's server and compatible gateways all speak it.
Built on httpx (the optional extra ``judge``: ``pip install 'ragframe[judge]'``), imported
when a judge is made, not when ragframe is.

One call is ``POST {base_url}/chat/completions`` with one user message. Failures are retried
up to ``max_retries`` times with exponential backoff and full jitter (a wait drawn uniformly
from ``[0, min(backoff_max, backoff_base * 2**attempt)]``) on 429, 408, 409, 5xx, timeouts
and connection errors; when the answer has a ``Retry-After`` (seconds or an HTTP date;
OpenAI's ``retry-after-ms`` first), that long is waited first, the jitter on top, and every
call of the judge pauses for it. A
``Retry-After`` longer than :data:`MAX_RETRY_AFTER` seconds (a spent daily quota) ends the
call at once. Other 4xx answers and malformed bodies are not retried. The outcome of the
last attempt names the error: :class:`~ragframe.judges.JudgeRateLimited` (429),
:class:`~ragframe.judges.JudgeTimeout`, :class:`~ragframe.judges.JudgeHTTPError`.

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
from typing import Any
from urllib.parse import urlsplit

import polars as pl

from ragframe import secrets
from ragframe.exceptions import InvalidParameterError, MissingDependencyError
from ragframe.judges.base import JudgeCallError, JudgeHTTPError, JudgeRateLimited, JudgeReply, JudgeTimeout
from ragframe.judges.limits import RateLimiter
from ragframe.judges.usage import JudgeUsage, token_estimate
from ragframe.validate import fail, flag, integer, number, positive_int

__all__ = ["OpenAIJudge", "retry_after_seconds", "MAX_RETRY_AFTER", "DEFAULT_BASE_URL"]

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
    name = "OpenAIJudge"
    if api_key is not None and api_key_env is not None:
        raise InvalidParameterError(f"{name}: pass api_key or api_key_env, not both")
    if api_key_env is not None:
        return secrets.from_environment(api_key_env, name)
    if api_key is None:
        return secrets.from_environment("OPENAI_API_KEY", name, required=False)
    if isinstance(api_key, secrets.Secret):  # from an Evaluator's judge options
        return api_key if api_key else None
    if not isinstance(api_key, str):
        raise InvalidParameterError(f"{name}: api_key must be a str, found a {type(api_key).__name__}")
    secrets.protect({"api_key": api_key}, name)  # refuses '***', the redacted form of a key
    return secrets.Secret(api_key) if api_key else None


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
    try:
        import httpx
    except ImportError:
        raise MissingDependencyError(
            "rf.OpenAIJudge needs httpx: pip install 'ragframe[judge]' (or pass any callable prompt -> str as judge=)"
        ) from None
    return httpx


class _Retry(Exception):
    """An attempt that may be retried: the error to raise if it was the last, and the wait a server asked for."""

    def __init__(self, error: JudgeCallError, wait: float | None = None) -> None:
        super().__init__(str(error))
        self.error, self.wait = error, wait


def _base_url(value: Any) -> str:
    url = value if value is not None else (os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise fail("OpenAIJudge", "base_url", "an http(s) URL such as 'http://127.0.0.1:8000/v1'", url)
    url = url.rstrip("/")
    suffix = "/chat/completions"
    return url[: -len(suffix)] if url.endswith(suffix) else url


def _optional(value: Any, name: str, *, positive: bool) -> float | None:
    if value is None:
        return None
    return number(value, name, "OpenAIJudge", minimum=0.0, inclusive=not positive)


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
        Seconds one attempt may take, connection to last byte.
    max_retries : int
        Attempts after the first (so ``max_retries + 1`` at most).
    max_concurrency : int
        Requests of this judge in flight at once (per event loop); the runner's
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
        **extra_body: Any,
    ) -> None:
        name = "OpenAIJudge"
        _import_httpx()
        if not isinstance(model, str) or not model:
            raise fail(name, "model", "a non-empty model name (str)", model)
        self.model = model
        self.base_url = _base_url(base_url)
        self._api_key = _api_key(api_key, api_key_env)
        self._key_env = api_key_env
        self.timeout = number(timeout, "timeout", name, minimum=0.0, inclusive=False)
        self.max_retries = integer(max_retries, "max_retries", name, minimum=0)
        self.max_concurrency = positive_int(max_concurrency, "max_concurrency", name)
        self.requests_per_minute = _optional(requests_per_minute, "requests_per_minute", positive=True)
        self.tokens_per_minute = _optional(tokens_per_minute, "tokens_per_minute", positive=True)
        self.temperature = number(temperature, "temperature", name, minimum=0.0)
        self.input_price_per_million = _optional(input_price_per_million, "input_price_per_million", positive=False)
        self.output_price_per_million = _optional(output_price_per_million, "output_price_per_million", positive=False)
        self.json_mode = flag(json_mode, "json_mode", name)
        self.backoff_base = number(backoff_base, "backoff_base", name, minimum=0.0)
        self.backoff_max = number(backoff_max, "backoff_max", name, minimum=0.0)
        self.extra_body = self._check_extra_body(extra_body)
        self._start()

    @staticmethod
    def _check_extra_body(extra_body: dict[str, Any]) -> dict[str, Any]:
        reserved = sorted(_RESERVED & set(extra_body))
        if reserved:
            raise fail("OpenAIJudge", reserved[0], "left to the judge (it sets model, messages, stream, n)", "a value")
        named = sorted(k for k in extra_body if secrets.is_secret_name(k) or secrets.is_secret_reference(k))
        if named:  # the body is the judge's identity, repr and pickle: no place for a credential
            raise InvalidParameterError(
                f"OpenAIJudge: {named[0]!r} looks like a credential, and the request body is part of the judge's "
                "identity, repr and pickles: pass the key as api_key= or api_key_env= (it is sent only in the "
                "Authorization header)"
            )
        if "seed" in extra_body:
            integer(extra_body["seed"], "seed", "OpenAIJudge", minimum=0)
        try:
            json.dumps(extra_body, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidParameterError(f"OpenAIJudge: extra_body must be JSON-serialisable: {error}") from None
        return dict(extra_body)

    def _start(self) -> None:
        """The parts that are not configuration: limiter, ledger, clients (fresh after unpickling)."""
        self._limiter = RateLimiter(self.requests_per_minute, self.tokens_per_minute)
        self._usage = JudgeUsage()
        self._lock = threading.Lock()
        self._sessions: weakref.WeakKeyDictionary[Any, tuple[Any, asyncio.Semaphore]] = weakref.WeakKeyDictionary()
        self._holders: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    _RUNTIME = ("_api_key", "_limiter", "_usage", "_lock", "_sessions", "_holders")

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in self._RUNTIME}
        if secrets.is_carrying() and self._api_key is not None:  # a pipe to evaluate_parquet's child
            state["_carried_key"] = self._api_key
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

    def _session(self) -> tuple[Any, asyncio.Semaphore]:
        """This event loop's HTTP client and concurrency bound (made on first use in the loop)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            session = self._sessions.get(loop)
            if session is None:
                httpx = _import_httpx()
                client = httpx.AsyncClient(
                    timeout=httpx.Timeout(self.timeout),
                    limits=httpx.Limits(
                        max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency
                    ),
                )
                session = self._sessions[loop] = (client, asyncio.Semaphore(self.max_concurrency))
        return session

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
            await session[0].aclose()

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
        client, semaphore = self._session()
        body = self._body(prompt, sample)
        estimate = token_estimate(prompt) + self.expected_reply_tokens
        async with semaphore:
            attempt = 0
            while True:
                await self._limiter.acquire(estimate)
                try:
                    reply = await self._attempt(client, body)
                except _Retry as retry:
                    wait = retry.wait
                    if attempt >= self.max_retries or (wait is not None and wait > MAX_RETRY_AFTER):
                        raise self._give_up(retry, attempt) from None
                    delay = self._backoff(attempt, wait)
                    logger.info(
                        "%s: %s (attempt %d of %d); retrying in %.2f s",
                        self.model, retry.error, attempt + 1, self.max_retries + 1, delay,
                    )  # fmt: skip
                    await asyncio.sleep(delay)
                    attempt += 1
                    continue
                used = (reply.input_tokens or 0) + (reply.output_tokens or 0)
                if reply.input_tokens is not None and reply.output_tokens is not None:
                    self._limiter.settle(estimate, used)
                return JudgeReply(reply.text, reply.input_tokens, reply.output_tokens, retries=attempt)

    def _give_up(self, retry: _Retry, attempt: int) -> JudgeCallError:
        error = retry.error
        if retry.wait is not None and retry.wait > MAX_RETRY_AFTER:
            note = f"; the server asked to retry after {retry.wait:.0f} s (more than {MAX_RETRY_AFTER:.0f}): not waited"
        else:
            note = f" (after {attempt + 1} attempt{'s' if attempt else ''})"
        return type(error)(f"{error}{note}", retries=attempt)

    def _backoff(self, attempt: int, wait: float | None) -> float:
        """Full jitter under the exponential ceiling, after the server's Retry-After when it gave one.

        The jitter on top of Retry-After keeps the calls that were told to wait the same time from
        all coming back at once (and being refused again together).
        """
        jitter = random.uniform(0.0, min(self.backoff_max, self.backoff_base * 2**attempt))
        if wait is not None:
            self._limiter.pause(wait)
            return wait + jitter
        return jitter

    async def _attempt(self, client: Any, body: dict[str, Any]) -> JudgeReply:
        """One POST; raises _Retry for what may be retried and JudgeHTTPError for what may not."""
        httpx = _import_httpx()
        headers = {"Authorization": f"Bearer {self._api_key.reveal()}"} if self._api_key is not None else {}
        where = f"POST {self.base_url}/chat/completions"
        try:
            response = await asyncio.wait_for(
                client.post(f"{self.base_url}/chat/completions", json=body, headers=headers), self.timeout
            )
        except (asyncio.TimeoutError, httpx.TimeoutException):
            raise _Retry(JudgeTimeout(self._redact(f"{where}: no reply within {self.timeout:g} s"))) from None
        except httpx.TransportError as error:
            message = f"{where}: connection error ({type(error).__name__}: {error})"
            raise _Retry(JudgeHTTPError(self._redact(message))) from None
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
