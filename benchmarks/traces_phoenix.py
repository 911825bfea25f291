"""Phoenix's own client against ragframe on the same spans: a local Phoenix server, spans sent by OTLP.

Run by ``benchmarks/traces.py --phoenix PYTHON`` (PYTHON: an interpreter with
``arize-phoenix`` installed, which may be another virtual environment than ragframe's, as
Phoenix pins many packages). This file has two roles:

- ``serve-and-load``: start ``phoenix serve`` on 127.0.0.1 (SQLite in a temporary folder,
  telemetry off), post the OTLP protobuf requests of a file to ``/v1/traces`` and wait until
  Phoenix has stored every span;
- ``read``: in Phoenix's interpreter, ``phoenix.client.Client().spans.get_spans_dataframe``
  of every span (the pandas span table Phoenix's own evaluation helpers start from), timed,
  with the process's peak RSS.

What is compared: Phoenix's client reading the stored spans back as its span table (no
rows in ragframe's contract yet) against ``rf.read_traces`` on the exported file (spans to
rows). Both start from spans already written; neither includes the instrumented
application.
"""

from __future__ import annotations

import json
import sys
import time


def read(base_url: str, spans: int) -> None:
    """Time get_spans_dataframe of ``spans`` spans (Phoenix's interpreter)."""
    from phoenix.client import Client

    started = time.perf_counter()
    frame = Client(base_url=base_url).spans.get_spans_dataframe(limit=spans + 1, timeout=3600)
    seconds = time.perf_counter() - started
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:"))
    print(json.dumps({"seconds": seconds, "spans": len(frame), "peak_mb": peak}))


if __name__ == "__main__":
    read(sys.argv[1], int(sys.argv[2]))
