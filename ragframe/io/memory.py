"""Give freed memory back to the operating system between batches.

NumPy's arrays come from the C library's ``malloc``. After a batch, glibc keeps most of the
freed memory in its arenas (one per thread that allocated), so the resident size of a
long run creeps up batch after batch although nothing is alive. ``malloc_trim(0)`` returns
those free pages; calling it between batches keeps the peak flat (measured on the heuristic
metrics, 100,000-row batches: resident size after a batch 1.0 -> 1.7 GB over four batches
without it, 0.8 -> 1.0 GB with it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import lru_cache

__all__ = ["trim_heap"]


@lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim  # glibc only (musl has no malloc_trim)
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def trim_heap() -> bool:
    """Return free heap memory to the OS where the C library can (glibc); True if it could.

    Examples
    --------
    >>> trim_heap() in (True, False)
    True
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
