"""Run a judge over many prompts: bounded concurrency, a persistent cache, statuses instead of exceptions.

:func:`judge_prompts` (sync) and :func:`ajudge_prompts` (async) send each prompt to the judge
``n_samples`` times (sample indices 0 .. n_samples - 1) and return one row per (prompt,
sample). They never raise for one row's failure: a call that fails after its retries is a
row with a status (``timeout``, ``http_error``, ``rate_limited``) and the error text, and the
other rows go on. Only caller errors raise (a bad judge, a bad parameter, a missing
dependency).

Never losing a result
    Before calling, every (prompt, sample) is looked up in the cache
    (:mod:`ragframe.judges.cache`); every reply is written to it the moment it arrives, in its
    own transaction. A run interrupted in any way (Ctrl-C, a crash, ``kill -9``) and started
    again sends no request for the replies already stored. Failures are not cached: a rerun
    tries them again. The same (prompt, sample) asked twice in one run is called once. The
    cache is trusted: a stored reply is read as if it had just arrived (a reply rewritten in
    the file changes the score); a damaged row is a miss, asked again.

Re-asking unreadable replies
    With ``check`` (the judge metrics pass their reply reader), a reply that ``check`` cannot
    read is asked again with :data:`REASK_REMINDER` (saying why) appended to the prompt, up
    to ``parse_retries`` times in a run; attempt k is cached under its own key
    (``cache_key(identity, prompt sent, sample, attempt=k)``), so a rerun walks the same
    chain from the cache. When the chain ends on an unreadable reply that came from the
    cache, a rerun asks again (the next attempt, a new key; ``retry_parse_errors=False``: it
    keeps the cached ``parse_error`` and calls nothing). Each run makes at most
    ``1 + parse_retries`` calls per (prompt, sample). A row none of whose replies could be
    read is a ``parse_error`` with the last reply's ``text`` and why it could not be read.

Concurrency
    At most ``max_concurrency`` calls in flight (default: the judge's ``max_concurrency``,
    else 8), on asyncio. A sync callable judge runs in worker threads. Called from inside a
    running event loop (a Jupyter cell, an async server calling the sync API), the sync
    function runs the work on a private event loop in a worker thread and waits for it: the
    caller's loop is not patched (no ``nest_asyncio``) but is blocked meanwhile; from async
    code prefer ``await ajudge_prompts(...)``.

Accounting
    Usage is recorded call by call into the judge's ledger (``judge.usage()``, when the judge
    has one), the run's (every :func:`ragframe.judges.recording_usage` block the call is made
    in) and the process-wide one (:func:`ragframe.judges.judge_usage`). Token counts
    the judge does not report are estimated as characters / 4 (rounded up).

``dry_run=True`` calls nothing: every row is ``skipped`` with the estimated tokens (prompt
characters / 4, and the judge's ``expected_reply_tokens`` or 100 for the reply), ``cached``
says which rows the cache would answer, and the estimate (calls, tokens, cost) is recorded
with ``dry_run=True`` in the usage ledgers.

Examples
--------
>>> import ragframe.judges as rj
>>> out = rj.judge_prompts(lambda p: f"Score: {len(p) % 2}", ["ab", "abc", None], metric="demo", cache=False)
>>> out.select("row", "text", "status").rows()
[(0, 'Score: 0', 'ok'), (1, 'Score: 1', 'ok'), (2, None, 'skipped')]
"""

from __future__ import annotations

import asyncio
import logging
import os
import warnings
from collections import Counter
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from ragframe.concurrency import run_sync
from ragframe.exceptions import InvalidParameterError, RagframeError, with_caller
from ragframe.judges.base import CallableJudge, Judge, JudgeCallError, JudgeReply, as_judge
from ragframe.judges.budget import DRY_RUN_REPLY_TOKENS, BudgetGate, cost_bound, estimated_cost
from ragframe.judges.cache import JudgeCache, cache_key, resolve_cache
from ragframe.judges.progress import JudgeProgress
from ragframe.judges.usage import GLOBAL_USAGE, JudgeUsage, active_ledgers, price_of, token_estimate
from ragframe.public import public, user_stacklevel
from ragframe.secrets import scrub
from ragframe.validate import flag, integer, positive_int

__all__ = ["judge_prompts", "ajudge_prompts", "RESULT_SCHEMA", "DEFAULT_CONCURRENCY", "REASK_REMINDER"]

logger = logging.getLogger("ragframe.judges")

#: Calls in flight when neither the caller nor the judge says.
DEFAULT_CONCURRENCY = 8
#: Re-asks of an unreadable reply per (prompt, sample) and run, by default.
DEFAULT_PARSE_RETRIES = 2
#: Appended to the prompt when a reply could not be read (``{error}``: why, from ``check``).
REASK_REMINDER = (
    "\n\nYour previous reply to this prompt could not be read: {error}. Reply again, in exactly the format asked above."
)
#: Characters of ``check``'s error quoted in the reminder.
_REMINDER_ERROR_CHARS = 300

#: The columns of :func:`judge_prompts`'s result.
RESULT_SCHEMA = {
    "row": pl.Int64,
    "sample": pl.Int64,
    "text": pl.String,
    "status": pl.String,
    "error": pl.String,
    "input_tokens": pl.Int64,
    "output_tokens": pl.Int64,
    "cached": pl.Boolean,
    "retries": pl.Int64,
    "attempts": pl.Int64,
}


@dataclass
class _Outcome:
    """The result of one (prompt, sample) key."""

    text: str | None = None
    status: str = "ok"
    error: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached: bool = False
    retries: int = 0
    attempts: int = 0
    reported: bool = False  # the judge reported the token counts (else estimated)


@dataclass
class _Plan:
    """A validated run: what to ask, of whom, with which cache."""

    judge: Judge
    metric: str
    prompts: list[str | None]
    n_samples: int
    cache: JudgeCache | None
    owns_cache: bool
    concurrency: int
    progress: bool
    dry_run: bool
    keys: list[str | None] = field(default_factory=list)  # per (row, sample), row-major; None: null prompt
    ledgers: list[JudgeUsage] = field(default_factory=list)
    identity: dict[str, Any] = field(default_factory=dict)
    check: Callable[[int, str], str | None] | None = None
    parse_retries: int = DEFAULT_PARSE_RETRIES
    retry_parse_errors: bool = True
    memo: MutableMapping[Any, Any] | None = None
    gate: BudgetGate | None = None


@public
def judge_prompts(
    judge: Any,
    prompts: Sequence[str | None],
    *,
    metric: str,
    n_samples: int = 1,
    cache: bool | str | os.PathLike | JudgeCache = True,
    max_concurrency: int | None = None,
    progress: bool = True,
    dry_run: bool = False,
    check: Callable[[int, str], str | None] | None = None,
    parse_retries: int = DEFAULT_PARSE_RETRIES,
    retry_parse_errors: bool = True,
    memo: MutableMapping[Any, Any] | None = None,
    gate: BudgetGate | None = None,
) -> pl.DataFrame:
    """Ask the judge every prompt ``n_samples`` times; one row per (prompt, sample) (see the module doc).

    Parameters
    ----------
    judge : Judge or callable
        ``rf.OpenAIJudge(...)``, any object with ``async complete(prompt, sample)`` and
        ``identity()``, or a callable ``prompt -> str`` (sync or async).
    prompts : sequence of str or None, or a polars Series
        The prompts; a None prompt is a ``skipped`` row and no call.
    metric : str
        The metric the calls are for (the key of the usage accounting).
    n_samples : int
        Replies per prompt (sample indices 0 .. n_samples - 1, each its own cache entry).
    cache : bool, str, os.PathLike or JudgeCache
        True: the default file (``$XDG_CACHE_HOME/ragframe/judge.sqlite3``); False: none;
        a path: that SQLite file; a :class:`~ragframe.judges.JudgeCache`: that cache.
    max_concurrency : int, optional
        Calls in flight at once; default the judge's ``max_concurrency``, else 8.
    progress : bool
        A progress line on a terminal for runs longer than about a second.
    dry_run : bool
        Call nothing; estimate tokens (see the module doc).
    check : callable, optional
        ``check(row, reply) -> str or None``: why the reply to ``prompts[row]`` cannot be read
        (None when it can). An unreadable reply is asked again (see the module doc); without
        ``check`` every reply is ``ok``.
    parse_retries : int
        Re-asks of an unreadable reply per (prompt, sample) in one run (0: none).
    retry_parse_errors : bool
        Ask again when the cached chain ends on an unreadable reply (False: keep its
        ``parse_error``, call nothing).
    memo : mutable mapping, optional
        Keeps each (metric, prompt, sample)'s final result: a later call with the same memo
        asks nothing again for them, failures included (how a LazyFrame plan judges each
        row once however often it is collected). Not with ``dry_run``.
    gate : BudgetGate, optional
        A judge budget's hard stop (:mod:`ragframe.judges.budget`): every call, re-asks
        included, asks it first; a first ask it stops is a ``skipped`` row
        (``"budget: not sent ..."``), a re-ask it stops leaves the row's ``parse_error``.
        Every non-null prompt counts as a planned first ask for each sample.

    Returns
    -------
    polars.DataFrame
        ``row`` (index into ``prompts``), ``sample``, ``text`` (the last reply; null
        unless a reply arrived), ``status`` (one of :data:`ragframe.judges.STATUSES`:
        ``ok`` when a readable reply arrived, ``parse_error``, ``timeout``, ``http_error``,
        ``rate_limited``, ``judge_error``, ``skipped``), ``error`` (null when ok),
        ``input_tokens``, ``output_tokens`` (reported or estimated, summed over the
        replies read; null without a reply, estimates in a dry run), ``cached`` (no call
        made: answered from the cache), ``retries`` (transport retries), ``attempts``
        (replies read, re-asks included); sorted by row and sample.

    Examples
    --------
    >>> out = judge_prompts(str.upper, ["is it?"], metric="demo", n_samples=2, cache=False)
    >>> out.select("row", "sample", "text", "input_tokens", "output_tokens").rows()
    [(0, 0, 'IS IT?', 2, 2), (0, 1, 'IS IT?', 2, 2)]
    >>> def readable(row, reply):
    ...     return None if "REPLY AGAIN" in reply else "no 'Score:' line"
    >>> again = judge_prompts(str.upper, ["score?"], metric="demo", cache=False, check=readable)
    >>> again.select("status", "attempts").row(0), again["text"][0].endswith("IN EXACTLY THE FORMAT ASKED ABOVE.")
    (('ok', 2), True)
    """
    plan = _plan(
        judge, prompts, metric, n_samples, cache, max_concurrency, progress, dry_run,
        check=check, parse_retries=parse_retries, retry_parse_errors=retry_parse_errors, memo=memo, gate=gate,
    )  # fmt: skip
    return run_sync(lambda: _run(plan), thread_name="ragframe-judge")


@public
async def ajudge_prompts(
    judge: Any,
    prompts: Sequence[str | None],
    *,
    metric: str,
    n_samples: int = 1,
    cache: bool | str | os.PathLike | JudgeCache = True,
    max_concurrency: int | None = None,
    progress: bool = True,
    dry_run: bool = False,
    check: Callable[[int, str], str | None] | None = None,
    parse_retries: int = DEFAULT_PARSE_RETRIES,
    retry_parse_errors: bool = True,
    memo: MutableMapping[Any, Any] | None = None,
    gate: BudgetGate | None = None,
) -> pl.DataFrame:
    """:func:`judge_prompts` for async code: runs on the caller's event loop.

    Parameters
    ----------
    judge, prompts, metric, n_samples, cache, max_concurrency, progress, dry_run
        As in :func:`judge_prompts`.
    check, parse_retries, retry_parse_errors, memo, gate
        As in :func:`judge_prompts`.

    Returns
    -------
    polars.DataFrame
        As :func:`judge_prompts`.

    Examples
    --------
    >>> import asyncio
    >>> async def judge(prompt):
    ...     return "Score: 1"
    >>> asyncio.run(ajudge_prompts(judge, ["q"], metric="demo", cache=False))["text"].to_list()
    ['Score: 1']
    """
    plan = _plan(
        judge, prompts, metric, n_samples, cache, max_concurrency, progress, dry_run,
        check=check, parse_retries=parse_retries, retry_parse_errors=retry_parse_errors, memo=memo, gate=gate,
    )  # fmt: skip
    return await _run(plan)


def _plan(
    judge: Any,
    prompts: Any,
    metric: Any,
    n_samples: Any,
    cache: Any,
    max_concurrency: Any,
    progress: Any,
    dry_run: Any,
    *,
    check: Any = None,
    parse_retries: Any = DEFAULT_PARSE_RETRIES,
    retry_parse_errors: Any = True,
    memo: Any = None,
    gate: Any = None,
) -> _Plan:
    """Check every argument (in the caller's thread, so errors raise there) and key every (row, sample)."""
    judge = as_judge(judge)
    if not isinstance(metric, str) or not metric:
        raise InvalidParameterError(f"metric must be a non-empty metric name (str), found {metric!r}")
    n_samples = positive_int(n_samples, "n_samples")
    progress, dry_run = flag(progress, "progress"), flag(dry_run, "dry_run")
    if max_concurrency is None:
        max_concurrency = getattr(judge, "max_concurrency", None) or DEFAULT_CONCURRENCY
    concurrency = positive_int(max_concurrency, "max_concurrency")
    texts = _prompt_list(prompts)
    if check is not None and not callable(check):
        raise InvalidParameterError(f"check must be a callable (row, reply) -> str or None, found {check!r}")
    if memo is not None and not isinstance(memo, MutableMapping):
        raise InvalidParameterError(f"memo must be a dict (or None), found {type(memo).__name__}")
    if gate is not None and not isinstance(gate, BudgetGate):
        raise InvalidParameterError(f"gate must be a ragframe.judges.budget.BudgetGate, found {gate!r}")
    parse_retries = integer(parse_retries, "parse_retries", minimum=0)
    retry_parse_errors = flag(retry_parse_errors, "retry_parse_errors")
    store, owns = resolve_cache(cache)
    identity = judge.identity()
    if store is not None and isinstance(judge, CallableJudge) and "<" in judge.name and "code" not in identity:
        warnings.warn(
            with_caller(
                f"the judge is {judge.name!r}, a name every such function shares, and the cache keys "
                f"replies by it: another {judge.name.rsplit('.', 1)[-1]} would read these replies. Name the judge "
                f"(rf.judges.CallableJudge(fn, name='my-model-v1')), or pass cache=False"
            ),
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    keys = [cache_key(identity, p, s) if p is not None else None for p in texts for s in range(n_samples)]
    ledgers = [GLOBAL_USAGE, *active_ledgers()]  # the process's view and the runs' (recording_usage blocks)
    own = getattr(judge, "usage_ledger", None)
    if isinstance(own, JudgeUsage):
        ledgers.append(own)
    return _Plan(
        judge, metric, texts, n_samples, store, owns, concurrency, progress, dry_run, keys, ledgers,
        identity=dict(identity), check=check, parse_retries=parse_retries,
        retry_parse_errors=retry_parse_errors, memo=memo, gate=gate,
    )  # fmt: skip


def _prompt_list(prompts: Any) -> list[str | None]:
    if isinstance(prompts, (str, bytes)):
        raise InvalidParameterError("prompts must be a sequence of prompts, found one string")
    if isinstance(prompts, pl.Series):
        values = prompts.to_list()
    else:
        try:
            values = list(prompts)
        except TypeError:
            raise InvalidParameterError(
                f"prompts must be a sequence of str or None, found {type(prompts).__name__}"
            ) from None
    for row, value in enumerate(values):
        if value is not None and not isinstance(value, str):
            raise InvalidParameterError(
                f"prompts must hold str or None, found {type(value).__name__} {value!r} at row {row}"
            )
    return values


async def _run(plan: _Plan) -> pl.DataFrame:
    """Look up the memo and the cache, call the judge for the rest, assemble the rows; close what the run opened."""
    try:
        unique: dict[str, tuple[str, int, int]] = {}  # key -> (prompt, sample, first row asking it)
        for index, key in enumerate(plan.keys):
            if key is not None and key not in unique:
                row, sample = divmod(index, plan.n_samples)
                unique[key] = (plan.prompts[row], sample, row)  # type: ignore[assignment]
        memo = None if plan.dry_run else plan.memo
        outcomes: dict[str, _Outcome] = {}
        if memo is not None:
            outcomes = {key: memo[(plan.metric, key)] for key in unique if (plan.metric, key) in memo}
        asked = {key: value for key, value in unique.items() if key not in outcomes}
        found = {}
        if plan.cache is not None and asked and (not plan.dry_run or plan.cache.path.exists()):
            found = plan.cache.get_many(asked)
        hits = sum(key in found for key in plan.keys if key is not None)
        if plan.dry_run:
            _dry_run(plan, [prompt for key, (prompt, _, _) in asked.items() if key not in found], hits)
            return _frame(plan, {}, dry_run_found=found)
        if hits:
            for ledger in plan.ledgers:
                ledger.record(plan.metric, cache_hits=hits)
        chains: list[tuple[str, str, int, int, _Outcome | None]] = []
        for key, (prompt, sample, row) in asked.items():
            first = _from_cache(found[key], prompt, sample) if key in found else None
            if first is not None and _unreadable(plan, row, first.text) is None:
                first.attempts = 1
                outcomes[key] = first
            else:
                chains.append((key, prompt, sample, row, first))
        if plan.gate is not None:
            _release_unsent(plan, [(prompt, first) for _, prompt, _, _, first in chains])
        await _call_all(plan, chains, outcomes)
        if memo is not None:
            memo.update({(plan.metric, key): outcomes[key] for key in asked})
        _log_failures(plan, {key: outcomes[key] for key in asked})
        return _frame(plan, outcomes)
    finally:
        if plan.owns_cache and plan.cache is not None:
            plan.cache.close()


def _release_unsent(plan: _Plan, chains: list[tuple[str, _Outcome | None]]) -> None:
    """Give the gate back the planned first asks this run will not send: cached, repeated or memoised ones.

    Every non-null prompt was planned once per sample; only the chains without a cached
    first reply will send a first ask (and release their own plan when they do).
    """
    assert plan.gate is not None
    estimates: dict[str, float] = {}
    planned_calls, planned_cost = 0, 0.0
    for prompt in plan.prompts:
        if prompt is not None:
            if prompt not in estimates:
                estimates[prompt] = estimated_cost(plan.judge, prompt)
            planned_calls += plan.n_samples
            planned_cost += plan.n_samples * estimates[prompt]
    sent = [prompt for prompt, first in chains if first is None]
    plan.gate.release(planned_calls - len(sent), planned_cost - sum(estimates[p] for p in sent))


def _from_cache(hit: Any, prompt: str, sample: int) -> _Outcome:
    tokens_in = hit.input_tokens if hit.input_tokens is not None else token_estimate(prompt)
    tokens_out = hit.output_tokens if hit.output_tokens is not None else token_estimate(hit.text)
    return _Outcome(scrub(hit.text), "ok", None, tokens_in, tokens_out, cached=True)


def _unreadable(plan: _Plan, row: int, text: str | None) -> str | None:
    """Why ``check`` cannot read the reply (None when it can, or without a check)."""
    if plan.check is None:
        return None
    try:
        return plan.check(row, text or "")
    except Exception as error:  # the reader's own failure: that reply is unreadable
        return f"the reply check raised {type(error).__name__}: {error}"


def _reminder(error: str) -> str:
    error = " ".join(error.split())
    if len(error) > _REMINDER_ERROR_CHARS:
        error = error[: _REMINDER_ERROR_CHARS - 3] + "..."
    return REASK_REMINDER.format(error=error)


async def _resolve(plan: _Plan, key: str, prompt: str, sample: int, row: int, first: _Outcome | None) -> _Outcome:
    """One (prompt, sample): the cached chain of attempts, then calls until a reply reads (module doc)."""
    read: list[_Outcome] = []
    outcome, attempt, calls, sent = first, 0, 0, prompt
    while True:
        if outcome is None:
            bound = cost_bound(plan.judge, sent) if plan.gate is not None else 0.0
            if plan.gate is not None:
                planned = estimated_cost(plan.judge, prompt) if attempt == 0 else None
                if not await plan.gate.acquire(bound, planned=planned):
                    return _stopped(plan, read, calls, row, attempt)
            try:
                outcome = await _call(plan.judge, sent, sample)
            finally:
                if plan.gate is not None:
                    plan.gate.settle(bound, _spent(plan, outcome, bound))
            calls += 1
            _record(plan, outcome)
            if outcome.status != "ok":
                return _ended(outcome, read, calls, plan, row)
            if plan.cache is not None:
                plan.cache.put(key, JudgeReply(outcome.text or "", outcome.input_tokens, outcome.output_tokens))
        read.append(outcome)
        error = _unreadable(plan, row, outcome.text)
        if error is None:
            return _ended(outcome, read, calls, plan, row)
        attempt += 1
        sent = prompt + _reminder(error)
        key = cache_key(plan.identity, sent, sample, attempt)
        hit = plan.cache.get(key) if plan.cache is not None else None
        if hit is not None:
            outcome = _from_cache(hit, sent, sample)
            continue
        if calls > plan.parse_retries or (outcome.cached and not plan.retry_parse_errors):
            return _ended(_Outcome(outcome.text, "parse_error", error), read, calls, plan, row)
        outcome = None


def _spent(plan: _Plan, outcome: _Outcome | None, bound: float) -> float:
    """What a call cost, for the gate: the reported tokens at the prices; its bound when unknown.

    A call with no reply cost nothing, but a timeout's request may have been computed.
    """
    if outcome is None or outcome.status == "timeout":
        return bound
    if outcome.status != "ok":
        return 0.0
    if not outcome.reported:
        return bound
    return price_of(plan.judge, outcome.input_tokens or 0, outcome.output_tokens or 0) or 0.0


def _stopped(plan: _Plan, read: list[_Outcome], calls: int, row: int, attempt: int) -> _Outcome:
    """The row's outcome when the budget's gate did not let its next call through."""
    budget = plan.gate.budget.describe() if plan.gate is not None else ""
    if attempt == 0:
        outcome = _Outcome(status="skipped", error=f"budget: not sent, the judge budget ({budget}) is spent")
        return _ended(outcome, read, calls, plan, row)
    last = read[-1]
    why = _unreadable(plan, row, last.text)
    outcome = _Outcome(last.text, "parse_error", f"{why} (not asked again: the judge budget ({budget}) is spent)")
    return _ended(outcome, read, calls, plan, row)


def _ended(last: _Outcome, read: list[_Outcome], calls: int, plan: _Plan, row: int) -> _Outcome:
    """The row's outcome: the last reply (or failure), with the tokens and retries of every reply read."""
    if read and last.status not in ("ok", "parse_error"):  # a re-ask failed: say what came before
        why = _unreadable(plan, row, read[-1].text)
        last.error = f"{last.error} (when asked again after an unreadable reply: {why})"
    if last.status == "parse_error" and len(read) > 1:
        last.error = f"{last.error} [{len(read)} replies read, none readable]"
    in_read = any(reply is last for reply in read)
    if read:
        last.input_tokens = sum(reply.input_tokens or 0 for reply in read)
        last.output_tokens = sum(reply.output_tokens or 0 for reply in read)
    last.retries = sum(reply.retries for reply in read) + (0 if in_read else last.retries)
    last.attempts = len(read)
    last.cached = calls == 0 and bool(read)
    return last


def _reply_tokens(judge: Judge) -> int:
    value = getattr(judge, "expected_reply_tokens", None)
    return value if isinstance(value, int) and value >= 0 else DRY_RUN_REPLY_TOKENS


def _dry_run(plan: _Plan, pending: list[str], hits: int) -> None:
    """Record what a real run would send: the calls not cached (first asks), their estimated tokens and cost."""
    tokens_in = sum(token_estimate(prompt) for prompt in pending)
    tokens_out = _reply_tokens(plan.judge) * len(pending)
    cost = price_of(plan.judge, tokens_in, tokens_out)
    for ledger in plan.ledgers:
        ledger.record(
            plan.metric,
            calls=len(pending),
            cache_hits=hits,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost=cost,
            dry_run=True,
        )


async def _call_all(
    plan: _Plan, pending: list[tuple[str, str, int, int, _Outcome | None]], outcomes: dict[str, _Outcome]
) -> None:
    """``plan.concurrency`` workers take the pending (prompt, sample)s in order; each reply is cached as it arrives."""
    waiting = getattr(plan.judge, "rate_limit_wait", None)  # shown on the line while 429s hold the judge
    progress = JudgeProgress(
        len(pending), plan.metric, enabled=plan.progress, waiting=waiting if callable(waiting) else None
    )
    items = iter(pending)

    async def worker() -> None:
        for key, prompt, sample, row, first in items:  # one iterator shared by the workers (one thread: no race)
            outcomes[key] = await _resolve(plan, key, prompt, sample, row, first)
            progress.update()

    async def tick() -> None:
        while True:
            await asyncio.sleep(0.5)
            progress.refresh()

    session = getattr(plan.judge, "session", None)
    async with session() if callable(session) else _nothing():
        tasks = [asyncio.create_task(worker()) for _ in range(min(plan.concurrency, len(pending)))]
        ticker = [asyncio.create_task(tick())] if progress.enabled else []
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in [*tasks, *ticker]:
                task.cancel()
            await asyncio.gather(*tasks, *ticker, return_exceptions=True)
            progress.close()


class _nothing:
    """An async context manager that does nothing (a judge without ``session()``)."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: Any) -> None:
        return None


async def _call(judge: Judge, prompt: str, sample: int) -> _Outcome:
    """One call; every failure that is not the caller's becomes a status."""
    try:
        reply = await judge.complete(prompt, sample)
    except JudgeCallError as error:
        status = error.status if error.status in ("timeout", "http_error", "rate_limited") else "http_error"
        return _Outcome(status=status, error=str(error), retries=int(getattr(error, "retries", 0) or 0))
    except RagframeError:  # a caller error (a missing dependency, a bad parameter): stop the run
        raise
    except (TimeoutError, asyncio.TimeoutError) as error:
        return _Outcome(status="timeout", error=scrub(f"{type(error).__name__}: {error}".rstrip(": ")))
    except Exception as error:  # the judge's own code failed (a user callable): this row only
        return _Outcome(status="judge_error", error=scrub(f"{type(error).__name__}: {error}".rstrip(": ")))
    if isinstance(reply, str):
        reply = JudgeReply(reply)
    if not isinstance(reply, JudgeReply) or not isinstance(reply.text, str):
        found = type(reply.text if isinstance(reply, JudgeReply) else reply).__name__
        return _Outcome(status="judge_error", error=f"the judge returned a {found}, not text")
    tokens_in = reply.input_tokens if reply.input_tokens is not None else token_estimate(prompt)
    tokens_out = reply.output_tokens if reply.output_tokens is not None else token_estimate(reply.text)
    # a key any judge echoed (ragframe.secrets) is masked before the reply is cached, parsed or stored
    reported = reply.input_tokens is not None and reply.output_tokens is not None
    return _Outcome(scrub(reply.text), "ok", None, tokens_in, tokens_out, retries=reply.retries, reported=reported)


def _record(plan: _Plan, outcome: _Outcome) -> None:
    tokens_in, tokens_out = outcome.input_tokens or 0, outcome.output_tokens or 0
    cost = price_of(plan.judge, tokens_in, tokens_out)
    failed = int(outcome.status != "ok")
    for ledger in plan.ledgers:
        ledger.record(
            plan.metric,
            calls=1,
            retries=outcome.retries,
            failures=failed,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost=cost,
        )


def _log_failures(plan: _Plan, outcomes: dict[str, _Outcome]) -> None:
    failed = [o for o in outcomes.values() if o.status not in ("ok", "skipped")]  # skipped: a budget's stop
    if failed:
        counts = ", ".join(f"{n} {status}" for status, n in sorted(Counter(o.status for o in failed).items()))
        logger.warning(
            "%s: %d of %d judge calls failed (%s); first error: %s",
            plan.metric, len(failed), len(outcomes), counts, failed[0].error,
        )  # fmt: skip


def _frame(plan: _Plan, outcomes: dict[str, _Outcome], *, dry_run_found: dict | None = None) -> pl.DataFrame:
    """One row per (row, sample) in order; null prompts skipped; dry runs skipped with estimates."""
    columns: dict[str, list[Any]] = {name: [] for name in RESULT_SCHEMA}
    null = _Outcome(status="skipped", error="no prompt (a null input)")
    reply_tokens = _reply_tokens(plan.judge)
    for index, key in enumerate(plan.keys):
        row, sample = divmod(index, plan.n_samples)
        if key is None:
            outcome = null
        elif dry_run_found is not None:
            prompt = plan.prompts[row] or ""
            outcome = _Outcome(None, "skipped", "dry run: not called", token_estimate(prompt), reply_tokens)
            outcome.cached = key in dry_run_found
        else:
            outcome = outcomes[key]
        for name, value in (("row", row), ("sample", sample)):
            columns[name].append(value)
        for name in ("text", "status", "error", "input_tokens", "output_tokens", "cached", "retries", "attempts"):
            columns[name].append(getattr(outcome, name))
    return pl.DataFrame(columns, schema=RESULT_SCHEMA)
