"""The one progress bar of ragframe: work done out of a total, on a terminal only.

tqdm's bar (the ``cli`` extra) when it is installed and can draw a visible line on the
stream, else a plain counter line (done/total, rate, ETA; also in a Jupyter notebook, whose
output redraws a ``\\r`` line). Nothing is written on a stream that is neither (a pipe, a log
file, pytest's captured output), nor before ``show_after`` seconds. A terminal that reports
no width (a pseudo-terminal without a window size, as in ``script`` or some containers)
makes tqdm trim its line to nothing: the counter is used there.

Two things use it: a Parquet run's batches (:func:`ragframe.evaluate_parquet`, rows) and a
judge's calls (:class:`ragframe.judges.progress.JudgeProgress`).

Examples
--------
>>> import io
>>> bar = Progress(10, unit="rows", label="ragframe eval", enabled=True, stream=io.StringIO())
>>> bar.update(10); bar.close()  # a stream that is not a terminal: silent
>>> bar.shown
False
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["Progress", "MIN_BAR_COLUMNS"]

#: Terminal columns under which tqdm's line is trimmed to (almost) nothing: the counter is used.
MIN_BAR_COLUMNS = 20


class Progress:
    """``done`` out of ``total`` units (see the module doc).

    Parameters
    ----------
    total : int
        Units to do.
    unit : str
        ``"rows"``, ``"calls"``.
    label : str
        tqdm's description (``"ragframe eval"``, ``"judge faithfulness"``).
    enabled : bool
        The caller's ``progress=`` flag.
    done : int
        Units already done (a resumed run); the rate counts from here.
    stream : file, optional
        Default ``sys.stderr``; nothing is shown unless it is a terminal (or a notebook's).
    show_after : float
        Seconds before anything is shown.
    waiting : callable, optional
        Seconds the work waits on a server's rate limit now: while above 0 the line ends
        ``waiting on rate limits (N s)``.
    label_counter : bool
        Start the counter line with ``label:`` too.
    rate_digits : int
        Decimals of the rate in the counter line.
    unit_scale : bool
        tqdm's ``unit_scale`` (``12.3k rows``).
    """

    def __init__(
        self,
        total: int,
        *,
        unit: str,
        label: str,
        enabled: bool,
        done: int = 0,
        stream: TextIO | None = None,
        show_after: float = 0.0,
        waiting: Callable[[], float] | None = None,
        label_counter: bool = True,
        rate_digits: int = 0,
        unit_scale: bool = False,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(enabled) and total > 0 and (_isatty(self.stream) or _notebook(self.stream))
        self.total, self.done, self.first = total, done, done
        self.unit, self.label, self.waiting = unit, label, waiting
        self.label_counter, self.rate_digits, self.unit_scale = label_counter, rate_digits, unit_scale
        self.start = time.monotonic()
        self.show_after = show_after
        self.shown = False
        self._bar: Any = None
        if self.enabled and show_after <= 0:  # shown from the start: the bar at once, the counter on the first update
            self.shown = True
            self._bar = self._tqdm()

    def update(self, count: int = 1) -> None:
        """Count ``count`` more units done and redraw (if shown).

        Parameters
        ----------
        count : int
            Units finished since the last update.
        """
        self.done += count
        if self._bar is not None:
            self._bar.update(count)
        else:
            self.refresh()

    def refresh(self) -> None:
        """Start showing once ``show_after`` seconds have passed; redraw the line."""
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.start
        if not self.shown:
            if elapsed < self.show_after:
                return
            self.shown = True
            self._bar = self._tqdm()
        note = self._waiting_note()
        if self._bar is not None:
            self._bar.set_postfix_str(note.strip(), refresh=False)
            self._bar.refresh()
            return
        rate = (self.done - self.first) / max(elapsed, 1e-9)
        eta = f"{(self.total - self.done) / rate:,.0f} s" if rate else "?"
        label = f"{self.label}: " if self.label_counter else ""
        line = (
            f"\r{label}{self.done:,}/{self.total:,} {self.unit}  {rate:,.{self.rate_digits}f} {self.unit}/s  "
            f"ETA {eta}{note}  "
        )
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        """End the line (if anything was shown)."""
        if self._bar is not None:
            self._bar.close()
        elif self.shown:
            self.refresh()
            self.stream.write("\n")
            self.stream.flush()

    def _waiting_note(self) -> str:
        """``  waiting on rate limits (N s)`` while the work is paused by a server's 429s, else ``""``."""
        try:
            seconds = float(self.waiting()) if self.waiting is not None else 0.0
        except Exception:  # a progress line is not worth failing for
            return ""
        return f"  waiting on rate limits ({seconds:.1f} s)" if seconds > 0 else ""

    def _tqdm(self) -> Any:
        """tqdm's bar on the stream, or None when tqdm is missing or cannot draw a visible line there."""
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        if columns < MIN_BAR_COLUMNS:
            return None
        try:
            bar = tqdm(
                total=self.total,
                initial=self.done,
                unit=self.unit,
                unit_scale=self.unit_scale,
                desc=self.label,
                file=self.stream,
            )
        except Exception:  # a tqdm that cannot draw on this stream: progress is not worth failing for
            return None
        if bar.disable or not str(bar).strip():  # disabled (TQDM_DISABLE) or a line trimmed to nothing
            bar.leave = False
            bar.close()
            return None
        return bar


def _notebook(stream: Any) -> bool:
    """A Jupyter output stream (not a terminal, but it redraws a ``\\r`` line)."""
    return type(stream).__module__.startswith("ipykernel")


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
