"""The child process of :func:`ragframe.evaluate_parquet`: score a group of batches, then exit.

Started by ``evaluate_parquet`` when a run has more batches than ``batches_per_process``.
It reads ``(job, batches, parent_pid)`` pickled from stdin, runs ``job.run(batch)`` for each
batch (which writes the batch's files) and sends ``("done", index, entry)`` per batch, or
one ``("error", exception)``, pickled on its stdout. Anything a library prints goes to
stderr, so the stdout stream carries only these messages. On Linux the child is killed
when its parent dies, so no orphan keeps writing into the output folder.
The child ignores SIGINT: on Ctrl-C its parent stops and kills it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import pickle
import signal
import sys
import traceback
from typing import IO, Any

from ragframe.exceptions import RagframeError
from ragframe.secrets import scrub

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the line above
        os._exit(1)


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RagframeError carrying its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RagframeError(f"{type(exc).__name__}: {exc}")


def _expected(exc: BaseException) -> bool:
    """An error the command line reports in one line (as ``ragframe.cli.main`` does): ragframe's own,
    the system's (a full disk, a permission) and polars'; anything else is a bug, shown with its traceback."""
    import polars as pl

    return isinstance(exc, (RagframeError, OSError, pl.exceptions.PolarsError))


def _send(channel: IO[bytes], message: tuple[Any, ...]) -> None:
    pickle.dump(message, channel, protocol=pickle.HIGHEST_PROTOCOL)
    channel.flush()


def main() -> int:
    """Run the batches read from stdin; 0 when all were written, 1 after an error."""
    # Ctrl-C reaches every process of the terminal's group: the parent turns it into one
    # "interrupted" and kills this child, so the child ignores it (no second traceback)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints of any library go to stderr, not into the message stream
    sys.stdout = sys.stderr
    job, batches, parent_pid = pickle.load(sys.stdin.buffer)
    _die_with_parent(parent_pid)
    for batch in batches:
        try:
            entry = job.run(batch)
        except BaseException as exc:  # reported to the parent, which raises it
            if not _expected(exc):  # a bug: its traceback, which the parent cannot show, goes to stderr
                print(scrub(traceback.format_exc()), end="", file=sys.stderr)  # no key on stderr
            _send(channel, ("error", _portable(exc)))
            return 1
        _send(channel, ("done", batch.index, entry))
    return 0
