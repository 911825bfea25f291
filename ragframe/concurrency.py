"""Run user callables (sync or async) over many rows: bounded concurrency, from sync code or a running loop.

Used by :func:`ragframe.retrieve` and :func:`ragframe.callback_metric`. Inside a running event
loop (a Jupyter cell) the work runs on a private event loop in a worker thread, so the
caller's loop is never patched (no ``nest_asyncio``).

Examples
--------
>>> async def double(x):
...     return 2 * x
>>> run_sync(lambda: gather_limited([lambda i=i: double(i) for i in range(3)], 2))
[0, 2, 4]
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["run_sync", "gather_limited", "is_async_callable"]

T = TypeVar("T")


def is_async_callable(function: Any) -> bool:
    """True for a coroutine function or an object whose ``__call__`` is one.

    Examples
    --------
    >>> async def f(x): ...
    >>> is_async_callable(f), is_async_callable(len)
    (True, False)
    """
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(function, "__call__", None)  # noqa: B004  (objects with an async __call__)
    return call is not None and inspect.iscoroutinefunction(call)


def run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``factory()`` makes to completion, whether or not a loop is running here.

    Parameters
    ----------
    factory : callable
        Returns the coroutine (called in the thread that runs it).

    Returns
    -------
    The coroutine's result.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragframe-run") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


async def gather_limited(calls: Sequence[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """Await every ``call()`` with at most ``limit`` in flight; results in the order of ``calls``.

    Parameters
    ----------
    calls : sequence of callables
        Each returns an awaitable.
    limit : int
        Calls in flight at once (>= 1).

    Returns
    -------
    list
        One result per call, in order.
    """
    results: list[Any] = [None] * len(calls)
    items = iter(enumerate(calls))

    async def worker() -> None:
        for index, call in items:  # one iterator shared by the workers (one thread: no race)
            results[index] = await call()

    await asyncio.gather(*(worker() for _ in range(min(limit, len(calls)))))
    return results
