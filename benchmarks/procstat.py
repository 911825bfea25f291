"""Memory and CPU figures of the current process, shared by the benchmark scripts."""

from __future__ import annotations

import resource
import signal
import subprocess


def status_mb(key: str) -> float | None:
    """A memory figure of this process from /proc/self/status (Linux), in MB, or None."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """Peak resident memory of this process: VmHWM (reset at exec), else ru_maxrss.

    On Linux a process started by vfork + exec (as ``subprocess`` does) can inherit its
    parent's ``ru_maxrss``; ``VmHWM`` is its own.
    """
    peak = status_mb("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """User + system CPU time of this process so far (all threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def failure_reason(proc: subprocess.CompletedProcess[str]) -> str:
    """Why a worker process failed: its signal or exit status, and the telling line of its stderr."""
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        reason = f"killed by {name}" + (" (out of memory?)" if name in ("SIGKILL", "SIGABRT", "SIGSEGV") else "")
    else:
        reason = f"exit status {proc.returncode}"
    lines = [line.strip() for line in (proc.stderr or "").splitlines() if line.strip()]
    # Rust (polars) reports "memory allocation of N bytes failed" and aborts: prefer that line to
    # the backtrace that follows it
    telling = [line for line in lines if "memory allocation" in line or "MemoryError" in line or "bad_alloc" in line]
    detail = (telling or lines or [""])[-1][:300]
    return f"{reason}: {detail}" if detail else reason
