"""Requests-per-minute and tokens-per-minute limits shared by all the calls of one judge.

A pacing token bucket (the generic cell-rate algorithm): each call reserves the moment it
may start, one request's and its tokens' worth of time after the previous reservation, so
calls leave evenly spaced at the limit instead of in bursts that a server would answer with
429s. Over any window of ``T`` seconds at most ``rpm * T / 60 + 1`` requests start, and at
most ``tpm * T / 60`` tokens plus one request's tokens (a request larger than the per-second
budget is never blocked forever: it only delays the next ones). The tokens a call reserves
are an estimate (prompt characters / 4 plus the expected reply); :meth:`RateLimiter.settle`
corrects the account with the tokens the reply reports.

A 429 answer with ``Retry-After`` pauses every call of the judge (:meth:`RateLimiter.pause`),
not just the one that got it.

The state is plain numbers under a thread lock, not bound to an event loop: the same limiter
paces a judge used from several runs, loops or threads of one process. Each process has its
own (a pickled judge starts a fresh limiter): give each of ``n`` processes ``1/n`` of the limit.

Examples
--------
>>> import asyncio, time
>>> limiter = RateLimiter(requests_per_minute=600)  # one request per 0.1 s
>>> async def three():
...     start = time.monotonic()
...     for _ in range(3):
...         await limiter.acquire()
...     return time.monotonic() - start
>>> 0.19 <= asyncio.run(three()) < 0.5
True
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

__all__ = ["RateLimiter"]


class RateLimiter:
    """Paces calls to ``requests_per_minute`` and ``tokens_per_minute`` (either may be None: no limit).

    Parameters
    ----------
    requests_per_minute : float, optional
        Requests started per minute.
    tokens_per_minute : float, optional
        Tokens (prompt + reply) per minute.
    """

    def __init__(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None) -> None:
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._lock = threading.Lock()
        self._next_request = 0.0  # monotonic time from which the next request may start
        self._next_token = 0.0  # ... and from which the token budget is free again
        self._paused_until = 0.0

    def __repr__(self) -> str:
        rpm, tpm = self.requests_per_minute, self.tokens_per_minute
        return f"RateLimiter(requests_per_minute={rpm}, tokens_per_minute={tpm})"

    def __getstate__(self) -> dict[str, Any]:
        return {"requests_per_minute": self.requests_per_minute, "tokens_per_minute": self.tokens_per_minute}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    def reserve(self, tokens: int = 0) -> float:
        """Reserve a start time for one request of ``tokens`` tokens; return the seconds to wait.

        Parameters
        ----------
        tokens : int
            Estimated tokens of the request (prompt and reply).

        Returns
        -------
        float
            Seconds from now until the request may start (0 when it may start at once).
        """
        now = time.monotonic()
        with self._lock:
            start = max(now, self._paused_until)
            if self.requests_per_minute:
                start = max(start, self._next_request)
                self._next_request = start + 60.0 / self.requests_per_minute
            if self.tokens_per_minute:
                start = max(start, self._next_token)
                self._next_token = start + 60.0 * tokens / self.tokens_per_minute
        return start - now

    async def acquire(self, tokens: int = 0) -> None:
        """Wait until one request of ``tokens`` tokens may start.

        Parameters
        ----------
        tokens : int
            Estimated tokens of the request.
        """
        delay = self.reserve(tokens)
        if delay > 0:
            await asyncio.sleep(delay)

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the token account once a reply reports the tokens really used.

        Parameters
        ----------
        estimated : int
            Tokens reserved for the request.
        actual : int
            Tokens it used (prompt + reply, from the API's ``usage``).
        """
        if self.tokens_per_minute and actual != estimated:
            with self._lock:
                self._next_token += 60.0 * (actual - estimated) / self.tokens_per_minute

    def pause(self, seconds: float) -> None:
        """Let no request start for ``seconds`` (a server's ``Retry-After``).

        Parameters
        ----------
        seconds : float
            From now.
        """
        with self._lock:
            self._paused_until = max(self._paused_until, time.monotonic() + seconds)
