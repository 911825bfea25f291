"""Concurrency: user callables (sync or async) over many rows, and the kernels' thread budget.

:func:`thread_count` is how many threads a kernel may start (every core, or fewer under
:func:`thread_limit`: a Ray task holding one CPU runs its kernels on one thread, so N tasks on
a node use N cores, not N times N threads).

:func:`run_sync` and :func:`gather_limited` run user callables with bounded concurrency, from
sync code or a running loop. Used by :func:`ragframe.retrieve`, :func:`ragframe.callback_metric` and
:func:`ragframe.judges.judge_prompts`. Inside a running event loop (a Jupyter cell) the work
runs on a private event loop in a worker thread, so the caller's loop is never patched (no
``nest_asyncio``).

Examples
--------
>>> async def double(x):
...     return 2 * x
>>> run_sync(lambda: gather_limited([lambda i=i: double(i) for i in range(3)], 2))
[0, 2, 4]
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["run_sync", "gather_limited", "is_async_callable", "thread_count", "thread_limit"]

T = TypeVar("T")

_THREAD_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("ragframe_thread_limit", default=None)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one, else ``os.cpu_count()``).

    Examples
    --------
    >>> available_cores() >= 1
    True
    """
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else (os.cpu_count() or 1))


def thread_count() -> int:
    """How many threads a kernel may run at once here: every available core, or the :func:`thread_limit` in force.

    The kernels that split their work over threads (tokenising, the heuristic metrics' pair
    stage, ranking chunks) size their pools with this. It is a count of threads, not a
    change to any result: scores never depend on it.

    Examples
    --------
    >>> with thread_limit(1):
    ...     thread_count()
    1
    """
    limit = _THREAD_LIMIT.get()
    cores = available_cores()
    return cores if limit is None else max(1, min(limit, cores))


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[None]:
    """Run the block with the kernels' thread pools capped at ``threads`` (None: no cap).

    What a task that holds part of a machine uses (a Ray task with one CPU): its kernels then
    start as many threads as it holds CPUs. Scoped to the calling thread and its context.

    Parameters
    ----------
    threads : int or None
        The most threads a kernel starts inside the block.

    Examples
    --------
    >>> with thread_limit(1):
    ...     thread_count()
    1
    >>> thread_count() == available_cores()
    True
    """
    token = _THREAD_LIMIT.set(None if threads is None else max(1, int(threads)))
    try:
        yield
    finally:
        _THREAD_LIMIT.reset(token)


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


def run_sync(factory: Callable[[], Coroutine[Any, Any, T]], *, thread_name: str = "ragframe-run") -> T:
    """Run the coroutine ``factory()`` makes to completion, whether or not a loop is running here.

    The one bridge from sync code to async work in ragframe (:func:`ragframe.retrieve`,
    :func:`ragframe.callback_metric`, :func:`ragframe.judges.judge_prompts`). Without a
    running loop it is :func:`asyncio.run`. Inside one (a Jupyter cell, an async server
    calling the sync API) the coroutine runs on a private event loop in a worker thread
    and the caller waits: its loop is not patched (no ``nest_asyncio``) but is blocked
    meanwhile. An interruption of the wait (Ctrl-C) cancels the private loop's task and
    waits for it to unwind before it propagates, so no work goes on behind the caller.

    Parameters
    ----------
    factory : callable
        Returns the coroutine (called in the thread that runs it).
    thread_name : str, default "ragframe-run"
        The worker thread's name, inside a running loop.

    Returns
    -------
    The coroutine's result (its exception is raised here).

    Examples
    --------
    >>> import asyncio, threading
    >>> async def where():
    ...     return threading.current_thread().name
    >>> run_sync(where)
    'MainThread'
    >>> async def cell():  # a running loop: the work goes to a worker thread
    ...     return run_sync(where, thread_name="ragframe-demo")
    >>> asyncio.run(cell())
    'ragframe-demo'
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    return _run_in_thread(factory, thread_name)


def _run_in_thread(factory: Callable[[], Coroutine[Any, Any, T]], thread_name: str) -> T:
    """Run ``factory()`` on a private event loop in a worker thread and wait (the caller's loop is busy).

    The wait is on an Event, not ``Thread.join``: a join interrupted by a signal may mark a
    running thread stopped (CPython 3.11), and the caller would go on while the work runs.
    """
    state: dict[str, Any] = {}
    lock, finished = threading.Lock(), threading.Event()

    def target() -> None:
        loop = asyncio.new_event_loop()
        try:
            with lock:  # the caller's cancel sees the task, or the task sees the cancel
                task = state["task"] = loop.create_task(factory())
                state["loop"] = loop
                if state.get("cancel"):
                    task.cancel()
            state["result"] = loop.run_until_complete(task)
        except BaseException as error:  # handed to the caller's thread
            state["error"] = error
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()
                finished.set()

    thread = threading.Thread(target=target, name=thread_name, daemon=True)
    try:
        thread.start()
        while not finished.wait(0.1):
            pass
    except BaseException:  # Ctrl-C in the caller's thread: cancel the work and let it unwind
        with lock:
            state["cancel"] = True
            if "task" in state:
                try:
                    state["loop"].call_soon_threadsafe(state["task"].cancel)
                except RuntimeError:  # the loop closed meanwhile
                    pass
        if thread.ident is not None:  # the thread runs: wait for its loop to close
            finished.wait()
        raise
    thread.join()
    if "error" in state:
        raise state["error"]
    return state["result"]


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
