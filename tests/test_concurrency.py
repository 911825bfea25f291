"""ragframe.concurrency.run_sync: the one sync -> async bridge (retrieve, callback metrics, judge_prompts)."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from pathlib import Path

import pytest

from ragframe.concurrency import gather_limited, run_sync

ROOT = Path(__file__).resolve().parents[1]


async def _where() -> str:
    return threading.current_thread().name


def test_without_a_loop_it_runs_here_and_raises_the_coroutines_error():
    assert run_sync(_where) == threading.current_thread().name

    async def broken():
        raise KeyError("x")

    with pytest.raises(KeyError, match="x"):
        run_sync(broken)


def test_inside_a_loop_it_runs_on_a_private_loop_in_a_named_thread():
    async def cell():
        caller = asyncio.get_running_loop()
        inner = run_sync(lambda: _inner_loop(caller))
        named = run_sync(_where, thread_name="ragframe-judge")
        with pytest.raises(ValueError, match="bad"):
            run_sync(_raise_value_error)
        return inner, named, asyncio.get_running_loop() is caller

    inner, named, same = asyncio.run(cell())
    assert inner == ("ragframe-run", False) and named == "ragframe-judge" and same
    assert not any(t.name.startswith("ragframe-") for t in threading.enumerate())


async def _inner_loop(caller: asyncio.AbstractEventLoop) -> tuple[str, bool]:
    return threading.current_thread().name, asyncio.get_running_loop() is caller


async def _raise_value_error():
    raise ValueError("bad")


def test_gather_limited_keeps_the_order_and_the_bound():
    in_flight, most = 0, 0

    async def call(i: int) -> int:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.001 * (5 - i % 5))  # later calls finish first
        in_flight -= 1
        return i * i

    out = run_sync(lambda: gather_limited([lambda i=i: call(i) for i in range(20)], 3))
    assert out == [i * i for i in range(20)] and most == 3


class Stop(BaseException):
    """Stands for KeyboardInterrupt (which pytest would take as the end of the session)."""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs SIGALRM")
def test_an_interrupted_wait_cancels_the_private_loop():
    steps = []

    async def endless():
        try:
            while True:
                steps.append(1)
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            steps.append("cancelled")
            raise

    def interrupt(signum, frame):
        raise Stop

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:

        async def cell():
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            run_sync(endless, thread_name="ragframe-interrupted")

        with pytest.raises(Stop):
            asyncio.run(cell())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert steps[-1] == "cancelled"  # the task unwound before the interruption propagated
    made = len(steps)
    time.sleep(0.1)
    assert len(steps) == made and not any(t.name == "ragframe-interrupted" for t in threading.enumerate())


def test_no_other_module_bridges_sync_to_async():
    """Every asyncio.run / new_event_loop outside docstrings is in concurrency.py."""
    found = []
    for path in (ROOT / "ragframe").rglob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.strip()
            if code.startswith((">>>", "...")):
                continue
            if "asyncio.run(" in code or "new_event_loop(" in code or "run_until_complete(" in code:
                found.append(f"{path.relative_to(ROOT)}:{number}")
    assert found and all(place.startswith("ragframe/concurrency.py:") for place in found), found
