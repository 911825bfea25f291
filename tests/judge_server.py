"""A fake OpenAI-compatible chat-completions server for tests: a real HTTP server on 127.0.0.1.

``with FakeJudgeServer() as server:`` starts it on a free port in a thread
(``server.base_url`` is ``http://127.0.0.1:<port>/v1``) and stops it at the end.

Replies are derived from the prompt alone (:func:`reply_text`): the score is
``len(prompt) % 11 / 10`` (:func:`expected_score`; a built-in template that asks for claim or
passage verdicts gets them, :func:`verdict_lines`, read as nearly that score), and ``usage`` reports words
(``prompt_tokens = len(prompt.split())``), not characters / 4, so a test can tell
reported tokens from estimated ones. With ``response_format={"type": "json_object"}`` the
reply is ``{"score": ..., "reason": ...}``.

Faults, by name:

``"429"``      429 with ``Retry-After: server.retry_after`` (None: no header)
``"500"``, ``"503"``  a server error (503 also sends ``Retry-After`` when set)
``"slow"``     waits ``server.slow_seconds`` before the normal reply (past a client timeout)
``"malformed"``  200 with a body that is not JSON
``"no_choices"``  200 with ``{"choices": []}``
``"bad_score"``  200 with a reply whose score is unreadable (``Score: high``)
``"fraction"``  200 with ``Score: <n>/10``
``"no_usage"``  the normal reply without ``usage``
``"401"``      401 whose body echoes the ``Authorization`` header (as some gateways do)
``"echo"``     the normal 200 reply (same score) whose reason also echoes the ``Authorization``
               header (a buggy gateway); ``server.rules[""] = "echo"`` echoes in every reply
``"drop"``     closes the connection without an answer

Knobs (set any time, thread-safe enough for tests): ``server.queue(*faults)`` queues faults
consumed one per request in arrival order; ``server.rules[substring] = fault`` applies a
fault to every request whose prompt contains ``substring`` (rules win over the queue);
``server.latency`` (seconds per reply); ``server.requests_per_second`` (a server-side limit,
a token bucket holding one second's worth of requests and refilled at that rate, as API
gateways do: a request finding it empty gets a 429 with ``Retry-After: 1`` and, like
OpenAI's, ``retry-after-ms`` with the time until the next token); ``server.slots`` (None:
every request is computed at once; ``n``: at most ``n`` at a time, the others wait in
arrival order, as llama.cpp's server with ``n`` slots does: ``slots=1`` serialises them,
each taking ``latency`` seconds once its turn comes); ``server.gather`` (None: no wait; ``n``: a request is
held while fewer than ``n`` are in flight, until ``n`` are (then nothing is held until ``reset()``) or
until ``gather_quiet`` seconds pass with no new request (a client still growing its window, as the
judge's slow start does, sends no more until it gets answers): a test of a client's concurrency bound
then reads ``max_in_flight`` without depending on how fast a loaded machine sends the requests);
``server.refuse_each_prompt`` (``n``: the first ``n`` requests of each prompt get the ``"429"`` fault,
with ``Retry-After: server.retry_after``, none when it is None).

Measurements: ``server.log`` (one :class:`Request` per request: ``start`` (arrival),
``served`` (its turn came) and ``end`` on ``time.monotonic()``, prompt, body, headers,
status, fault, and the ``prompt_tokens`` / ``completion_tokens`` the server computed for
it, recorded before the answer is sent, so also for a request whose client left),
``server.tokens()`` (their totals), ``server.in_flight`` and ``server.max_in_flight``.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeJudgeServer",
    "Request",
    "expected_grades",
    "expected_score",
    "nugget_labels",
    "prompt_kind",
    "reply_text",
    "verdict_lines",
    "verdict_reply",
]


def expected_score(prompt: str) -> float:
    """The score the fake server's reply to ``prompt`` reads as (``k = len(prompt) % 11``).

    A score-only prompt: ``k / 10``. The built-in templates that ask for verdicts get them
    (:func:`verdict_lines`): claims (faithfulness, context recall) ``k`` of 10 ``yes``:
    ``k / 10``; answer correctness ``k`` of 10 answer and reference claims each: F1 of
    ``k/10`` and ``k/10``, which is ``k / 10``; passages (context relevance) ``round(k / 10 *
    N)`` of the N passages ``yes``, the first ones: that share; context precision: the same
    verdicts, whose average precision is 1 (0 without a ``yes``). A prompt without passages: 0.
    """
    k = len(prompt) % 11
    kind = prompt_kind(prompt)
    if kind in ("passages", "ranked"):
        n = passage_count(prompt)
        yes = round(k / 10 * n)
        if n == 0 or yes == 0:
            return 0.0
        return yes / n if kind == "passages" else 1.0
    if kind == "f1" and k:
        share = k / 10
        return 2 * share * share / (share + share)
    if kind == "nuggets":
        labels = nugget_labels(prompt)
        return (labels.count("support") + 0.5 * labels.count("partial_support")) / len(labels) if labels else 0.0
    return k / 10


def expected_grades(prompt: str) -> list[int]:
    """The 0-3 grades the fake server gives a relevance prompt's passages: ``(len(prompt) + i) % 4`` for passage i."""
    return [(len(prompt) + i) % 4 for i in range(passage_count(prompt))]


def nugget_labels(prompt: str) -> list[str]:
    """The labels the server gives the nuggets a prompt lists (``1. ...`` lines after ``Nuggets:``): nugget i gets
    ``("support", "partial_support", "not_support")[(i + len(prompt)) % 3]``."""
    listed = prompt.split("Nuggets:", 1)[1].split("Instructions:", 1)[0] if "Nuggets:" in prompt else ""
    n = len(re.findall(r"(?m)^\d+\. ", listed))
    return [("support", "partial_support", "not_support")[(i + len(prompt)) % 3] for i in range(1, n + 1)]


def prompt_kind(prompt: str) -> str:
    """The verdicts a prompt asks for: ``f1``, ``passages``, ``ranked``, ``share``, ``nuggets``, ``grades``, ...

    ``claim_checking``, ``nugget_creation``, ``citations``, ``nugget_importance``, else ``score``.
    """
    if "Grade <passage number>:" in prompt:
        return "grades"
    if "Claim 1: Entailment" in prompt:
        return "claim_checking"
    if "Nugget 1: support" in prompt:
        return "nuggets"
    if "Nugget: <the fact>" in prompt:
        return "nugget_creation"
    if "Pair 1: full" in prompt:
        return "citations"
    if "Nugget 1: vital" in prompt:
        return "nugget_importance"
    if "Reference claim: <the claim>" in prompt:
        return "f1"
    if "Verdict <passage number>:" in prompt:
        return "ranked" if "useful for answering" in prompt else "passages"
    if "Claim: <the claim>" in prompt:
        return "share"
    return "score"


def passage_count(prompt: str) -> int:
    """The number of passages a prompt numbers ``[1] ...`` at the start of a line (0 for none)."""
    return max((int(n) for n in re.findall(r"(?m)^\[(\d+)\] ", prompt)), default=0)


def verdict_lines(prompt: str, k: int) -> str:
    """The claim / verdict lines answering a built-in decomposed prompt with ``k`` in 0..10 (see expected_score)."""
    kind = prompt_kind(prompt)
    yes = ["yes" if i < k else "no" for i in range(10)]
    if kind == "share":
        return "\n".join(f"Claim: fact {i + 1}.\nVerdict: {v}" for i, v in enumerate(yes)) + "\n"
    if kind == "f1":
        answer = "\n".join(f"Answer claim: fact {i + 1}.\nVerdict: {v}" for i, v in enumerate(yes))
        reference = "\n".join(f"Reference claim: fact {i + 1}.\nCovered: {v}" for i, v in enumerate(yes))
        return f"{answer}\n{reference}\n"
    if kind in ("passages", "ranked"):
        n = passage_count(prompt)
        shown = round(k / 10 * n)
        return "".join(f"Verdict {i + 1}: {'yes' if i < shown else 'no'}\n" for i in range(n))
    if kind == "nuggets":
        return "".join(f"Nugget {i}: {label}\n" for i, label in enumerate(nugget_labels(prompt), start=1))
    if kind == "claim_checking":  # claim i: ("Entailment", "Neutral", "Contradiction")[(i + len(prompt)) % 3]
        listed = prompt.split("Claims:", 1)[1].split("Instructions:", 1)[0]
        n = len(re.findall(r"(?m)^\d+\. ", listed))
        verdicts = ("Entailment", "Neutral", "Contradiction")
        return "".join(f"Claim {i}: {verdicts[(i + len(prompt)) % 3]}\n" for i in range(1, n + 1))
    if kind == "citations":  # pair i: ("none", "partial", "full")[(i + len(prompt)) % 3]
        n = len(re.findall(r"(?m)^Pair \d+:$", prompt))
        return "".join(f"Pair {i}: {('none', 'partial', 'full')[(i + len(prompt)) % 3]}\n" for i in range(1, n + 1))
    if kind == "nugget_creation":  # 1 to 4 facts, by the prompt's length
        return "".join(f"Nugget: fact {i} of {len(prompt)}\n" for i in range(1, len(prompt) % 4 + 2))
    if kind == "nugget_importance":  # nugget i is vital when i + len(prompt) is even
        n = len(nugget_labels(prompt))
        return "".join(f"Nugget {i}: {'vital' if (i + len(prompt)) % 2 == 0 else 'okay'}\n" for i in range(1, n + 1))
    if kind == "grades":  # rf.judge_relevance's prompt: one 0-3 grade per passage
        return "".join(f"Grade {i + 1}: {g}\n" for i, g in enumerate(expected_grades(prompt)))
    return ""


def verdict_reply(prompt: str, score: float, reason: str = "fake judge.") -> str:
    """A test judge's reply to ``prompt`` that reads as ``score`` (``Score: x`` alone would not, issue 20).

    The verdicts the prompt's built-in template asks for (:func:`verdict_lines` with ``k =
    round(score * 10)``: ``score`` exactly for tenths, claim metrics; passages: ``round(score *
    N)`` of the N passages ``yes``), then ``Score:`` and ``Reason:`` (``Score: 0`` for a prompt
    without passages, as the template asks). A score-only prompt gets the two lines alone.
    """
    lines = verdict_lines(prompt, round(score * 10))
    if prompt_kind(prompt) in ("passages", "ranked") and passage_count(prompt) == 0:
        score = 0
    return f"{lines}Score: {score}\nReason: {reason}"


def reply_text(prompt: str, *, json_mode: bool = False, echo: str | None = None) -> str:
    """The fake server's reply to ``prompt`` (``echo``: a header value the reason repeats, as a buggy gateway)."""
    reason = f"the prompt has {len(prompt)} characters."
    if echo is not None:
        reason = f"the gateway saw Authorization: {echo}; {reason}"
    if json_mode:
        return json.dumps({"score": expected_score(prompt), "reason": reason})
    return f"{verdict_lines(prompt, len(prompt) % 11)}Reason: {reason}\nScore: {expected_score(prompt)}"


@dataclass
class Request:
    """One request the server received."""

    start: float
    prompt: str | None
    body: Any
    headers: dict[str, str]
    fault: str | None = None
    status: int | None = None
    end: float | None = None
    served: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    path: str = ""  # the request target as sent: path and query string


@dataclass
class FakeJudgeServer:
    """See the module doc."""

    latency: float = 0.0
    retry_after: str | None = "0"
    slow_seconds: float = 5.0
    requests_per_second: float | None = None
    slots: int | None = None
    gather: int | None = None
    gather_quiet: float = 1.0
    refuse_each_prompt: int = 0  # the first N requests of each prompt are answered 429 (with ``retry_after``)
    rules: dict[str, str] = field(default_factory=dict)
    log: list[Request] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0

    def __post_init__(self) -> None:
        self._faults: deque[str] = deque()
        self._bucket: tuple[float, float] | None = None  # (tokens, time) of the server-side limit
        self._limit_wait = 0.0
        self._lock = threading.Lock()
        self._arrivals = threading.Condition(self._lock)  # notified when a request arrives (gather)
        self._gathered = False
        self._last_arrival = 0.0
        self._turns = threading.Condition()  # the slots: busy count and the arrival-ordered queue
        self._busy = 0
        self._waiting: deque[object] = deque()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- life ------------------------------------------------------------------------------
    def start(self) -> FakeJudgeServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # silent: tests read server.log
                pass

            def do_POST(self) -> None:
                server._handle(self)

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024  # socketserver's 5 drops the SYNs of a burst: 1 s client stalls

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases "slow" replies
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(5)
            self._httpd = None

    def __enter__(self) -> FakeJudgeServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # --- knobs and measurements -----------------------------------------------------------
    def queue(self, *faults: str) -> None:
        """Faults for the next requests, one each, in arrival order."""
        with self._lock:
            self._faults.extend(faults)

    def prompts(self) -> list[str | None]:
        """The prompts received, in arrival order."""
        with self._lock:
            return [r.prompt for r in self.log]

    def tokens(self) -> tuple[int, int]:
        """Prompt and completion tokens the server computed, summed over every request."""
        with self._lock:
            return (
                sum(r.prompt_tokens or 0 for r in self.log),
                sum(r.completion_tokens or 0 for r in self.log),
            )

    def reset(self) -> None:
        """Forget the log, the in-flight maximum and the limit's bucket (not the knobs)."""
        with self._lock:
            self.log.clear()
            self._bucket = None
            self.max_in_flight = self.in_flight
            self._gathered = False

    # --- the work ---------------------------------------------------------------------------
    def _fault_for(self, prompt: str | None, now: float) -> str | None:
        with self._lock:
            if self.refuse_each_prompt and prompt is not None:
                seen = sum(1 for r in self.log if r.prompt == prompt)  # this request is logged already
                if seen <= self.refuse_each_prompt:
                    return "429"
            for needle, fault in self.rules.items():
                if prompt is not None and needle in prompt:
                    return fault
            if self._faults:
                return self._faults.popleft()
            if self.requests_per_second:
                rate = self.requests_per_second
                tokens, last = self._bucket or (rate, now)
                now = max(now, last)  # threads may take the lock out of arrival order: time never runs back
                tokens = min(rate, tokens + (now - last) * rate)
                self._bucket = (tokens - 1 if tokens >= 1 else tokens, now)
                if tokens < 1:
                    self._limit_wait = (1 - tokens) / rate
                    return "limit"
        return None

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        now = time.monotonic()
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        try:
            body = json.loads(raw)
            prompt = body["messages"][-1]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            body, prompt = raw.decode("utf-8", "replace"), None
        request = Request(now, prompt, body, dict(handler.headers.items()), path=handler.path)
        with self._lock:
            self.log.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._last_arrival = now
            self._arrivals.notify_all()
        self._wait_for_gather()
        try:
            request.fault = self._fault_for(prompt, now)
            with self._turn():
                request.served = time.monotonic()
                if self.latency:
                    self._stopping.wait(self.latency)
                request.status = self._answer(handler, request)
        finally:
            request.end = time.monotonic()
            with self._lock:
                self.in_flight -= 1

    def _wait_for_gather(self) -> None:
        """Hold a request while fewer than ``gather`` are in flight (see the module doc)."""
        if self.gather is None:
            return
        with self._arrivals:
            while not (self._gathered or self._stopping.is_set()):
                if self.in_flight >= self.gather:
                    self._gathered = True
                    self._arrivals.notify_all()
                    break
                quiet_left = self._last_arrival + self.gather_quiet - time.monotonic()
                if quiet_left <= 0:
                    break  # no new request for a while: the client waits for answers
                self._arrivals.wait(quiet_left)

    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """Wait for a free slot in arrival order (at once when ``slots`` is None); free it at the end."""
        if self.slots is None:
            yield
            return
        ticket = object()
        with self._turns:
            self._waiting.append(ticket)
            while not self._stopping.is_set() and (self._busy >= self.slots or self._waiting[0] is not ticket):
                self._turns.wait(0.05)
            self._waiting.remove(ticket)
            self._busy += 1
            self._turns.notify_all()
        try:
            yield
        finally:
            with self._turns:
                self._busy -= 1
                self._turns.notify_all()

    def _answer(self, handler: BaseHTTPRequestHandler, request: Request) -> int:
        fault, prompt, body = request.fault, request.prompt, request.body
        if fault == "drop":
            handler.close_connection = True
            handler.connection.shutdown(2)
            return 0
        if fault == "limit":
            headers = {"Retry-After": "1", "retry-after-ms": f"{self._limit_wait * 1000:.0f}"}
            return self._send(handler, 429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}}, headers)
        if fault == "429":
            headers = {"Retry-After": self.retry_after}
            return self._send(handler, 429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}}, headers)
        if fault in ("500", "503"):
            headers = {"Retry-After": self.retry_after} if fault == "503" else {}
            return self._send(handler, int(fault), {"error": {"message": "The server had an error"}}, headers)
        if fault == "401":
            echoed = request.headers.get("Authorization", "")
            return self._send(handler, 401, {"error": {"message": f"Incorrect API key provided: {echoed}"}})
        if fault == "malformed":
            return self._send(handler, 200, b'{"choices": [{"message": ')
        if fault == "no_choices":
            return self._send(handler, 200, {"choices": []})
        if fault == "slow":
            self._stopping.wait(self.slow_seconds)
        if prompt is None:
            return self._send(handler, 400, {"error": {"message": "no messages"}})
        json_mode = isinstance(body, dict) and (body.get("response_format") or {}).get("type") == "json_object"
        echo = request.headers.get("Authorization", "") if fault == "echo" else None
        text = reply_text(prompt, json_mode=json_mode, echo=echo)
        if fault == "bad_score":
            text = "Reason: unsure.\nScore: high"
        elif fault == "fraction":
            text = f"Reason: graded out of ten.\nScore: {round(expected_score(prompt) * 10)}/10"
        payload: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        }
        request.prompt_tokens, request.completion_tokens = len(prompt.split()), len(text.split())
        if fault != "no_usage":
            payload["usage"] = {"prompt_tokens": request.prompt_tokens, "completion_tokens": request.completion_tokens}
        return self._send(handler, 200, payload)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict | None = None) -> int:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                if value is not None:
                    handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            pass
        return status
