"""Progress of a judge run on the terminal: shown only after about a second, only on a terminal.

The one progress bar of ragframe (:class:`ragframe.progress.Progress`) counting a judge's
calls: tqdm's bar (the ``cli`` extra) when it is installed and can draw a visible line on
stderr, else a plain counter line (calls done, calls per second, ETA; also in a Jupyter
notebook, whose stderr redraws it). Nothing is written when stderr is neither (a log file,
pytest's captured stream), nor for runs that finish within :data:`SHOW_AFTER` seconds.

Examples
--------
>>> import io
>>> progress = JudgeProgress(10, "faithfulness", enabled=True, stream=io.StringIO())
>>> progress.update(10); progress.close()  # a non-terminal stream: silent
>>> progress.shown
False
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from ragframe.progress import Progress

__all__ = ["JudgeProgress", "SHOW_AFTER"]

#: Seconds a run must last before its progress is shown.
SHOW_AFTER = 1.0


class JudgeProgress(Progress):
    """Calls done out of ``total`` (see the module doc): ``judge <metric>: 3/10 calls  2.5 calls/s  ETA 3 s``.

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
        super().__init__(
            total,
            unit="calls",
            label=f"judge {metric}",
            enabled=enabled,
            stream=stream,
            show_after=SHOW_AFTER if show_after is None else show_after,
            waiting=waiting,
            rate_digits=1,
        )
        self.metric = metric
