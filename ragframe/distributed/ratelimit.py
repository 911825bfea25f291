"""One rate limit for every worker of a cluster: a small Ray actor that hands out start times.

A judge's ``requests_per_minute`` / ``tokens_per_minute`` (:class:`ragframe.OpenAIJudge`)
pace the calls of one process (:class:`ragframe.judges.limits.RateLimiter`). On a cluster
each worker is a process of its own, so :func:`ragframe.distributed.score_dataset` starts
one :class:`LimiterActor` holding the judge's limiter, and every worker's judge asks it
for its start time (one small actor call per judge request, next to a model call that
takes a second): the limit holds for the whole cluster, however many workers run or
restart. A ``Retry-After`` pause one worker receives pauses them all. Each worker's judge
keeps its own ``max_concurrency`` (requests in flight per worker).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ragframe.judges.limits import RateLimiter

__all__ = ["LimiterActor", "SharedLimiter", "start_limiter", "install_limiter"]


class LimiterActor:
    """The cluster's one :class:`~ragframe.judges.limits.RateLimiter` (run as a Ray actor, 0 CPUs).

    Parameters
    ----------
    requests_per_minute, tokens_per_minute : float, optional
        The judge's limits for the whole cluster.

    Examples
    --------
    >>> actor = LimiterActor(requests_per_minute=600)  # used in-process here: Ray wraps it with ray.remote
    >>> actor.reserve(0), 0.09 < actor.reserve(0) <= 0.1
    (0.0, True)
    """

    def __init__(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None) -> None:
        self.limiter = RateLimiter(requests_per_minute, tokens_per_minute)

    def reserve(self, tokens: int = 0) -> float:
        """Seconds the caller waits before its request starts (see RateLimiter.reserve)."""
        return self.limiter.reserve(tokens)

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the token account with the tokens a reply reported."""
        self.limiter.settle(estimated, actual)

    def pause(self, seconds: float) -> None:
        """No request of any worker starts for ``seconds`` (a server's Retry-After)."""
        self.limiter.pause(seconds)


class SharedLimiter:
    """What a worker's judge uses in place of its own limiter: each call asks the :class:`LimiterActor`.

    Parameters
    ----------
    actor : ray.actor.ActorHandle
        The handle :func:`start_limiter` returned.
    requests_per_minute, tokens_per_minute : float, optional
        The limits (shown in ``repr``; the actor enforces them).
    """

    def __init__(self, actor: Any, requests_per_minute: float | None, tokens_per_minute: float | None) -> None:
        self.actor = actor
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute

    def __repr__(self) -> str:
        return (
            f"SharedLimiter(requests_per_minute={self.requests_per_minute}, "
            f"tokens_per_minute={self.tokens_per_minute}, cluster-wide)"
        )

    async def acquire(self, tokens: int = 0) -> None:
        """Wait until the actor's start time for one request of ``tokens`` tokens."""
        import ray

        delay = await asyncio.to_thread(ray.get, self.actor.reserve.remote(tokens))
        if delay > 0:
            await asyncio.sleep(delay)

    def settle(self, estimated: int, actual: int) -> None:
        """Send the reply's real token count to the actor (no wait)."""
        self.actor.settle.remote(estimated, actual)

    def pause(self, seconds: float) -> None:
        """Pause every worker (no wait)."""
        self.actor.pause.remote(seconds)

    def paused_for(self) -> float:
        """0: a pause is the actor's, and shows as the wait of the next :meth:`acquire`, not locally."""
        return 0.0


def _rate_limited_judge(evaluator: Any) -> Any:
    """The evaluator's judge when it has a rate limit to share (an rf.OpenAIJudge with rpm or tpm), else None."""
    checked = evaluator.run_plan
    judge = checked.families.get("judge", {}).get("judge")
    if judge is None or not hasattr(judge, "share_limiter"):
        return None
    if not (getattr(judge, "requests_per_minute", None) or getattr(judge, "tokens_per_minute", None)):
        return None
    return judge


def start_limiter(evaluator: Any) -> Any:
    """Start the cluster's limiter actor for the evaluator's judge; None when it has no rate limit.

    Parameters
    ----------
    evaluator : ragframe.Evaluator
        The run configuration.

    Returns
    -------
    ray.actor.ActorHandle or None

    Examples
    --------
    >>> import ragframe as rf
    >>> start_limiter(rf.Evaluator(["mrr"])) is None  # no judge: no actor, Ray not needed
    True
    """
    judge = _rate_limited_judge(evaluator)
    if judge is None:
        return None
    import ray

    remote = ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=-1)(LimiterActor)
    return remote.remote(judge.requests_per_minute, judge.tokens_per_minute)


def install_limiter(evaluator: Any, actor: Any) -> None:
    """In a worker: make the evaluator's judge pace its calls through ``actor`` (idempotent).

    Parameters
    ----------
    evaluator : ragframe.Evaluator
        The run configuration, as unpickled in the worker.
    actor : ray.actor.ActorHandle or None
        From :func:`start_limiter`; None does nothing.
    """
    if actor is None:
        return
    judge = _rate_limited_judge(evaluator)
    if judge is not None and not isinstance(judge.limiter, SharedLimiter):
        judge.share_limiter(SharedLimiter(actor, judge.requests_per_minute, judge.tokens_per_minute))
