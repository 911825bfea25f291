"""Progress of a judge run on the terminal: shown only after about a second, only on a terminal.

tqdm's bar (the ``cli`` extra) when it is installed and can draw a visible line on stderr,
else a plain counter line (calls done, calls per second, ETA; also in a Jupyter notebook,
whose stderr redraws it). Nothing is written when stderr is neither (a log file, pytest's
captured stream), nor for runs that finish within :data:`SHOW_AFTER` seconds.

Examples
--------
>>> import io
>>> progress = JudgeProgress(10, "faithfulness", enabled=True, stream=io.StringIO())
>>> progress.update(10); progress.close()  # a non-terminal stream: silent
>>> progress.shown
False
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["JudgeProgress", "SHOW_AFTER"]

#: Seconds a run must last before its progress is shown.
SHOW_AFTER = 1.0
#: Terminal columns under which tqdm's line is trimmed to (almost) nothing: the counter is used.
_MIN_BAR_COLUMNS = 20


class JudgeProgress:
    """Calls done out of ``total`` (see the module doc).

    Parameters
    ----------
    total : int
        Calls to make.
    metric : str
        Shown as the label.
    enabled : bool
        The caller's ``progress=`` flag.
    stream : file, optional
        Default ``sys.stderr``; nothing is shown unless ``stream.isatty()``.
    show_after : float, optional
        Seconds before anything is shown; default :data:`SHOW_AFTER`.
    waiting : callable, optional
        Seconds the judge waits on a server's rate limit now (``OpenAIJudge.rate_limit_wait``):
        while above 0 the line ends ``waiting on rate limits (N s)``.
    """

    def __init__(
        self,
        total: int,
        metric: str,
        *,
        enabled: bool,
        stream: TextIO | None = None,
        show_after: float | None = None,
        waiting: Callable[[], float] | None = None,
    ) -> None:
        self.waiting = waiting
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(enabled) and total > 0 and (_isatty(self.stream) or _notebook(self.stream))
        self.total, self.done, self.metric = total, 0, metric
        self.start = time.monotonic()
        self.show_after = SHOW_AFTER if show_after is None else show_after
        self.shown = False
        self._bar: Any = None

    def update(self, calls: int = 1) -> None:
        """Count ``calls`` more calls done and redraw (if shown).

        Parameters
        ----------
        calls : int
            Calls finished since the last update.
        """
        self.done += calls
        if self._bar is not None:
            self._bar.update(calls)
        else:
            self.refresh()

    def refresh(self) -> None:
        """Start showing once the run has lasted ``show_after`` seconds; redraw the counter line."""
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
        rate = self.done / max(elapsed, 1e-9)
        eta = f"{(self.total - self.done) / rate:,.0f} s" if rate else "?"
        line = f"\rjudge {self.metric}: {self.done:,}/{self.total:,} calls  {rate:,.1f} calls/s  ETA {eta}{note}  "
        self.stream.write(line)
        self.stream.flush()

    def _waiting_note(self) -> str:
        """``  waiting on rate limits (N s)`` while the judge is paused by the server's 429s, else ``""``."""
        try:
            seconds = float(self.waiting()) if self.waiting is not None else 0.0
        except Exception:  # a progress line is not worth failing for
            return ""
        return f"  waiting on rate limits ({seconds:.1f} s)" if seconds > 0 else ""

    def _tqdm(self) -> Any:
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        if columns < _MIN_BAR_COLUMNS:
            return None
        try:
            bar = tqdm(total=self.total, initial=self.done, unit="calls", desc=f"judge {self.metric}", file=self.stream)
        except Exception:  # a tqdm that cannot draw on this stream: progress is not worth failing for
            return None
        if bar.disable:
            bar.close()
            return None
        return bar

    def close(self) -> None:
        """End the line (if anything was shown)."""
        if self._bar is not None:
            self._bar.close()
        elif self.shown:
            self.refresh()
            self.stream.write("\n")
            self.stream.flush()


def _notebook(stream: Any) -> bool:
    """A Jupyter output stream (not a terminal, but it redraws a ``\\r`` line)."""
    return type(stream).__module__.startswith("ipykernel")


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
