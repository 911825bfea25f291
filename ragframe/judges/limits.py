"""Rate limits and concurrency of one judge: the limits you configure, and the ones it learns from the server.

Configured limits (:class:`RateLimiter`)
    ``requests_per_minute`` and ``tokens_per_minute`` of :class:`ragframe.OpenAIJudge`. A
    pacing token bucket (the generic cell-rate algorithm): each call reserves the moment it
    may start, one request's and its tokens' worth of time after the previous reservation, so
    calls leave evenly spaced at the limit instead of in bursts that a server would answer
    with 429s. Over any window of ``T`` seconds at most ``rpm * T / 60 + 1`` requests are
    given a start, and at most ``tpm * T / 60`` tokens plus one request's tokens (a request
    larger than the per-second budget is never blocked forever: it only delays the next
    ones). The tokens a call reserves are an estimate (prompt characters / 4 plus the
    expected reply); :meth:`RateLimiter.settle` corrects the account with the tokens the
    reply reports. A ``Retry-After`` pauses every call of the judge
    (:meth:`RateLimiter.pause`), not just the one that got it.

Learned limits (:class:`AdaptiveLimits`)
    Without a configured limit the judge still learns the server's, from its answers, and
    keeps what it learns for as long as the judge lives (across runs and metrics). Two
    numbers, both cut multiplicatively and raised additively (AIMD, as TCP does):

    - **Request rate.** Unknown (no pacing) until the first 429, which sets it to half the
      rate that got through (requests sent, less those refused, and at most the answers
      accepted, per second over the refused request's round trip or the last second,
      whichever is longer; over the judge's life if that is shorter). When nothing got
      through (no answer accepted yet: the very first requests refused, or lost with their
      connection) there is no evidence of a rate yet, and nothing is cut. Every later 429 halves the rate, or
      half the rate the server accepted over the last second when that is lower (and the
      last cut is more than a second old), never to less than a quarter in one cut and
      never below one request a minute. Requests leave at least ``1 / rate`` seconds apart,
      those already waiting included.
    - **Raising it.** Each accepted request (a 2xx) sent after the cut adds 1/20 of the cut,
      so 20 accepted requests restore the refused rate; the step doubles after every 40
      accepted requests since the cut (a rate estimated too low recovers in a few rounds,
      not hundreds); never past twice the rate the judge really sends at (a rate it does
      not use is no evidence).
    - **One cut per round.** A 429 for a request sent before the last cut (sent at the old
      rate) cuts nothing; neither does one when no request sent since the last cut was
      accepted (a server closed for a while says nothing about its rate: ``Retry-After``
      and the time budget of the retries deal with it); and one call cuts at most once (a
      request the server refuses on its own, too large for a tokens-per-minute limit, does
      not drag the others down at each retry).
    - **Concurrency window.** Requests in flight at once, never above ``max_concurrency``.
      It starts at 1 and grows by one per accepted request (doubling per round of replies,
      TCP's slow start) up to ``max_concurrency``, until its first cut. Halved (never below
      1) by a 429 that cuts the rate, and by a request still unanswered ``timeout`` seconds
      after it was sent while the server answered other requests of the judge meanwhile: the
      server is queueing them (llama.cpp answers one request at a time), so fewer are sent
      instead of timing out the queued ones. One cut per round, as for the rate. After a
      cut each accepted request sent after it adds ``1 / window`` (about one per round).

    - **429s without ``Retry-After``.** A 429 that does not say when to come back carries no
      rate: a server may refuse a request for reasons of its own (the measured case: every
      prompt refused twice, whatever the pace), and halving the rate at each such refusal
      drove it to a request every 21-25 s. So it cuts neither the rate nor the window; it
      sets a back-off level shared by every call of the judge
      (:meth:`AdaptiveLimits.unadvised_backoff`): half of ``backoff_base`` seconds, doubled once per
      round of such refusals (a refusal of a request sent after the last step) without an
      accepted answer between, back to the start at the next accepted answer, and never more
      than :data:`UNADVISED_BACKOFF_CAP` seconds. The refused call waits between half of it
      and all of it; the others go on, and the window's slow start counts such an answer as
      an accepted one (a server that answers at once is not queueing). A pause of every call
      at each such 429 was tried: it kept a server that refuses some requests and answers the
      rest idle most of the time.

    A configured limit stays an upper bound: the learned rate never exceeds
    ``requests_per_minute``, the window never exceeds ``max_concurrency``.

Timeouts that count only the server's silence (:meth:`AdaptiveLimits.deadline`)
    A request queued behind the judge's own requests is not dead. A request times out when
    it has waited ``timeout`` seconds since it was sent and since the last answer the server
    gave to any request of the judge (the server made no progress at all), or, whatever the
    progress, when it has waited ``timeout`` times one plus the number of the judge's
    requests already waiting for replies when it was sent (the longest a queue of that depth
    takes when each request takes less than ``timeout``). A timed-out request may still be
    computing: the judge never sends it again (see :mod:`ragframe.judges.client`).

The state is plain numbers under a thread lock, not bound to an event loop: the same objects
pace a judge used from several runs, loops or threads of one process. Each process has its
own (a pickled judge starts afresh): give each of ``n`` processes ``1/n`` of a configured
limit, or use :mod:`ragframe.distributed.ratelimit` on a Ray cluster. Every class takes a
``clock`` (``time.monotonic`` by default) so that its arithmetic can be checked with a fake one.

Examples
--------
>>> now = [0.0]
>>> limiter = RateLimiter(requests_per_minute=600, clock=lambda: now[0])  # one request per 0.1 s
>>> [round(limiter.reserve(), 3) for _ in range(3)]  # seconds each of three calls made at once waits
[0.0, 0.1, 0.2]
>>> learned = AdaptiveLimits(max_concurrency=16, clock=lambda: now[0])
>>> sent = []
>>> for k in range(10):  # 10 requests in a second ...
...     now[0] = k / 10
...     sent.append(learned.sent())
>>> for request in sent[:-1]:  # ... 9 of them accepted ...
...     _ = learned.finished(request, "accepted")
>>> now[0] = 1.0
>>> learned.refused(sent[-1])  # ... the last one refused: half the 9 a second that got through
True
>>> learned.rate, learned.try_start(), round(learned.try_start(), 3)  # go now; the next waits 1 / 4.5 s
(4.5, 0.0, 0.222)
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["RateLimiter", "AdaptiveLimits", "Sent", "DECREASE", "RECOVERY", "MIN_RATE", "UNADVISED_BACKOFF_CAP"]

#: The factor a 429 (the rate and the window) or a queueing server (the window) cuts by.
DECREASE = 0.5
#: Accepted requests after a cut that restore the refused rate (the additive step is 1/RECOVERY of the cut).
RECOVERY = 20
#: The learned rate never goes below this many requests a second (one a minute).
MIN_RATE = 1 / 60
#: Seconds, at most, of the back-off that 429s without ``Retry-After`` set for every call of a judge
#: (:meth:`AdaptiveLimits.unadvised_backoff`; the judge's ``backoff_max`` when lower).
UNADVISED_BACKOFF_CAP = 4.0
#: Seconds of send times kept for measuring the rate the judge was sending at.
_SEND_MEMORY = 600.0

Clock = Callable[[], float]


class RateLimiter:
    """Paces calls to ``requests_per_minute`` and ``tokens_per_minute`` (either may be None: no limit).

    Parameters
    ----------
    requests_per_minute : float, optional
        Requests started per minute.
    tokens_per_minute : float, optional
        Tokens (prompt + reply) per minute.
    clock : callable, optional
        Seconds, monotonic (default ``time.monotonic``); a fake one for tests.

    Examples
    --------
    >>> now = [10.0]
    >>> limiter = RateLimiter(requests_per_minute=60, tokens_per_minute=600, clock=lambda: now[0])
    >>> limiter.reserve(tokens=5), limiter.reserve(tokens=5)  # 1 request and 10 tokens a second
    (0.0, 1.0)
    """

    def __init__(
        self,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        *,
        clock: Clock = time.monotonic,
    ) -> None:
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.clock = clock
        self._lock = threading.Lock()
        self._next_request = -math.inf  # the clock's time from which the next request may start
        self._next_token = -math.inf  # ... and from which the token budget is free again
        self._paused_until = -math.inf

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
        with self._lock:
            now = self.clock()
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
            self._paused_until = max(self._paused_until, self.clock() + seconds)

    def paused_for(self) -> float:
        """Seconds before a request may start again after a pause (0: none); what the progress line shows."""
        with self._lock:
            return max(0.0, self._paused_until - self.clock())


@dataclass(frozen=True)
class Sent:
    """One request sent: when (the limits' clock), how many of the judge's requests were waiting for replies, and
    whether a 429 for it may cut the rate (not when its call already cut it once)."""

    at: float
    ahead: int
    may_cut: bool = True


class AdaptiveLimits:
    """The request rate and the concurrency window a judge learns from its server (see the module doc).

    Parameters
    ----------
    max_concurrency : int
        The window's upper bound and starting value.
    max_rate : float, optional
        The configured requests per **second**, the learned rate's upper bound.
    clock : callable, optional
        Seconds, monotonic (default ``time.monotonic``); a fake one for tests.

    Attributes
    ----------
    rate : float or None
        Learned requests per second; None until the first 429 (no pacing).
    window : float
        Places for requests in flight at once (its integer part, at least 1).

    Examples
    --------
    >>> now = [0.0]
    >>> limits = AdaptiveLimits(max_concurrency=4, clock=lambda: now[0])
    >>> first, second = limits.sent(), limits.sent()  # the second waits behind one request
    >>> limits.deadline(second, timeout=60.0)  # nothing answered yet: 60 s after it was sent
    60.0
    >>> now[0] = 30.0
    >>> _ = limits.finished(first, "accepted")  # an answer at 30 s restarts its clock ...
    >>> limits.deadline(second, timeout=60.0)  # ... up to 60 x (1 + 1 ahead) after it was sent
    90.0
    """

    def __init__(self, max_concurrency: int, max_rate: float | None = None, *, clock: Clock = time.monotonic) -> None:
        self.max_concurrency = max_concurrency
        self.max_rate = max_rate
        self.clock = clock
        self.rate: float | None = None
        self.window = 1.0
        self._slow_start = True  # until the window's first cut
        self._step = 0.0  # added to the rate by each accepted request after a cut
        self._lock = threading.Lock()
        self._last_start = -math.inf
        self._rate_cut_at = -math.inf  # 429s of requests sent before this do not cut again
        self._window_cut_at = -math.inf
        self._accepted_since_cut = 0  # accepted requests sent after the last cut
        self._closed_since: float | None = None  # the first 429 after the last accepted request
        self._unadvised_level = 0  # rounds of 429s without Retry-After since the last accepted answer
        self._unadvised_round_at = -math.inf  # a refusal of a request sent before this is the same round
        self._last_answer = -math.inf
        self._sends: deque[float] = deque()
        self._refusals: deque[float] = deque()  # send times of refused requests
        self._accepts: deque[float] = deque()  # times of accepted answers
        self._outstanding = 0  # sent, not yet answered
        self._slots = 0  # held by calls (waiting for their start or in flight)
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    def __repr__(self) -> str:
        rate = "unknown" if self.rate is None else f"{self.rate * 60:.1f}/min"
        return f"AdaptiveLimits(rate={rate}, window={self.window:.2f} of {self.max_concurrency})"

    # --- the window -------------------------------------------------------------------------
    def _capacity(self) -> int:
        return max(1, int(self.window))

    async def acquire(self) -> None:
        """Wait for a place in the window (first come, first served; any event loop)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._slots < self._capacity() and not self._waiters:
                self._slots += 1
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        try:
            await future
        except asyncio.CancelledError:
            with self._lock:
                waiting = (loop, future) in self._waiters
                if waiting:
                    self._waiters.remove((loop, future))
            if not waiting and future.done() and not future.cancelled():
                self.release()  # granted, then cancelled before it ran: give the place back
            raise

    def release(self) -> None:
        """Give a place in the window back."""
        with self._lock:
            self._slots -= 1
            grants = self._grants()
        self._dispatch(grants)

    def _grants(self) -> list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]:
        """Under the lock: the waiters that the window now lets in (their places already counted)."""
        grants = []
        while self._waiters and self._slots < self._capacity():
            grants.append(self._waiters.popleft())
            self._slots += 1
        return grants

    def _dispatch(self, grants: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]) -> None:
        for loop, future in grants:
            try:
                loop.call_soon_threadsafe(self._grant, future)
            except RuntimeError:  # that loop is closed: its waiter is gone
                self.release()

    def _grant(self, future: asyncio.Future[None]) -> None:
        if future.done():  # cancelled while waiting: the place goes to the next one
            self.release()
        else:
            future.set_result(None)

    # --- the rate ---------------------------------------------------------------------------
    def try_start(self) -> float:
        """Claim a start now (return 0) or say how many seconds until the next one may be claimed.

        Starts are at least ``1 / rate`` apart at the rate of the moment, so a cut applies at
        once to the requests already waiting (no start is reserved ahead); no pacing while the
        rate is unknown.
        """
        with self._lock:
            now = self.clock()
            if self.rate is None:
                return 0.0
            wait = self._last_start + 1.0 / self.rate - now
            if wait > 0:
                return wait
            self._last_start = now
        return 0.0

    async def pace(self) -> None:
        """Wait for a start at the learned rate."""
        while (delay := self.try_start()) > 0:
            await asyncio.sleep(delay)

    # --- what the server does ---------------------------------------------------------------
    def sent(self, *, may_cut: bool = True) -> Sent:
        """Record a request leaving now; keep the returned :class:`Sent` for its outcome.

        Parameters
        ----------
        may_cut : bool
            False for a retry of a call whose 429 already cut the rate: one call cuts at most
            once, so a request the server refuses on its own (too large for a tokens-per-minute
            limit) does not drag the rate of all the others down again and again.
        """
        with self._lock:
            now = self.clock()
            ahead = self._outstanding
            self._outstanding += 1
            self._sends.append(now)
            _forget(self._sends, now)
        return Sent(now, ahead, may_cut)

    def finished(self, sent: Sent, outcome: str) -> bool:
        """Record how a request ended and learn from it.

        Parameters
        ----------
        sent : Sent
            What :meth:`sent` returned for it.
        outcome : str
            ``"accepted"`` (a 2xx), ``"refused"`` (a 429 with ``Retry-After``), ``"throttled"``
            (a 429 without: recorded, but it cuts nothing), ``"answered"`` (another status) or
            ``"lost"`` (no answer: a timeout or a connection error).

        Returns
        -------
        bool
            Whether this outcome cut the rate.
        """
        cut, grants = False, []
        with self._lock:
            now = self.clock()
            self._outstanding -= 1
            if outcome != "lost":
                self._last_answer = max(self._last_answer, now)
            if outcome == "accepted":
                grants = self._accepted(sent, now)
            elif outcome == "refused":
                cut = self._refused(sent, now)
            elif outcome == "throttled":  # no rate in it: the shared back-off deals with it
                self._closed_since = now if self._closed_since is None else self._closed_since
                self._refusals.append(sent.at)
                _forget(self._refusals, now)
                if self._slow_start and self.window < self.max_concurrency:  # answered at once: not queued
                    self.window = min(float(self.max_concurrency), self.window + 1.0)
                    grants = self._grants()
        self._dispatch(grants)
        return cut

    def refused(self, sent: Sent) -> bool:
        """Shorthand for ``finished(sent, "refused")``."""
        return self.finished(sent, "refused")

    def unadvised_backoff(self, sent_at: float, base: float, cap: float = UNADVISED_BACKOFF_CAP) -> float:
        """Seconds every call of the judge waits after a 429 without ``Retry-After`` (see the module doc).

        Parameters
        ----------
        sent_at : float
            When the refused request was sent (:attr:`Sent.at`): a request sent before the
            last step is of the same round, and does not double the back-off again.
        base : float
            The judge's ``backoff_base``: the first round's ceiling is half of it.
        cap : float
            The most (default :data:`UNADVISED_BACKOFF_CAP`).

        Returns
        -------
        float
            The ceiling of the refused call's wait, ``min(cap, base * 2 ** (rounds - 2))``.
        """
        with self._lock:
            if sent_at >= self._unadvised_round_at:
                self._unadvised_level += 1
                self._unadvised_round_at = self.clock()
            return min(cap, base * 2.0 ** (self._unadvised_level - 2))

    def _accepted(self, sent: Sent, now: float) -> list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]:
        self._closed_since = None
        self._unadvised_level, self._unadvised_round_at = 0, -math.inf
        self._accepts.append(now)
        _forget(self._accepts, now)
        if sent.at >= self._rate_cut_at:
            if self.rate is not None:
                step = self._step * 2 ** (self._accepted_since_cut // (2 * RECOVERY))
                ceiling = max(self.rate, 2 * self._sending(now, max(1.0, 10 / self.rate)))
                self.rate = min(self.rate + step, ceiling, math.inf if self.max_rate is None else self.max_rate)
            self._accepted_since_cut += 1
        if sent.at >= self._window_cut_at and self.window < self.max_concurrency:
            self.window += 1.0 if self._slow_start else 1.0 / self.window
            self.window = min(float(self.max_concurrency), self.window)
            return self._grants()
        return []

    def _refused(self, sent: Sent, now: float) -> bool:
        if self._closed_since is None:
            self._closed_since = now
        self._refusals.append(sent.at)
        _forget(self._refusals, now)
        if not sent.may_cut or sent.at < self._rate_cut_at or (self.rate is not None and not self._accepted_since_cut):
            return False
        if self.rate is None:
            span = max(now - sent.at, min(1.0, now - self._sends[0]), 0.01)
            through = self._sending(now, span) * span - sum(1 for at in self._refusals if at >= now - span)
            # never more than the answers accepted in that span: retries of refused calls are not throughput
            through = min(through, sum(1 for at in self._accepts if at >= now - span))
            if through <= 0:  # nothing sent lately got through: no evidence of a rate yet
                return False
            base = through / span
        elif now - self._rate_cut_at > 1.0:  # the rate the server accepted over the last second, if lower
            accepted = sum(1 for at in self._accepts if at >= now - 1.0)
            base = max(self.rate * DECREASE, min(self.rate, accepted))
        else:
            base = self.rate
        self.rate = min(max(MIN_RATE, base * DECREASE), math.inf if self.max_rate is None else self.max_rate)
        self._step = base * (1 - DECREASE) / RECOVERY
        self._rate_cut_at, self._accepted_since_cut = now, 0
        self._cut_window(sent, now)
        return True

    def _sending(self, now: float, span: float) -> float:
        """Requests per second sent over the last ``span`` seconds."""
        count = 0
        for moment in reversed(self._sends):
            if moment < now - span:
                break
            count += 1
        return count / span

    def queueing(self, sent: Sent) -> None:
        """A request outlived ``timeout`` while the server answered others: it is queued; shrink the window."""
        with self._lock:
            self._cut_window(sent, self.clock())

    def _cut_window(self, sent: Sent, now: float) -> None:
        if sent.at >= self._window_cut_at:
            self.window = max(1.0, self.window * DECREASE)
            self._window_cut_at, self._slow_start = now, False

    # --- deadlines and the time budget ------------------------------------------------------
    def deadline(self, sent: Sent, timeout: float) -> float:
        """When a request still unanswered times out (the clock's time; see the module doc).

        Parameters
        ----------
        sent : Sent
            The request.
        timeout : float
            Seconds of the server's silence allowed.

        Returns
        -------
        float
        """
        with self._lock:
            progress = max(sent.at, self._last_answer)
        return min(progress + timeout, sent.at + timeout * (1 + sent.ahead))

    def answered_since(self, sent: Sent) -> bool:
        """Whether the server answered any request of the judge after ``sent`` left."""
        with self._lock:
            return self._last_answer > sent.at

    def closed_for(self) -> float:
        """Seconds since the first 429 after the last accepted request (0 when the last answer was accepted)."""
        with self._lock:
            return 0.0 if self._closed_since is None else self.clock() - self._closed_since


def _forget(times: deque[float], now: float) -> None:
    """Drop the times older than :data:`_SEND_MEMORY` seconds (the deque is roughly in order)."""
    while times and times[0] < now - _SEND_MEMORY:
        times.popleft()
