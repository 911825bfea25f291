"""Write ragframe/data/example_traces.otlp.jsonl.gz: the bundled ARES log as real OpenTelemetry spans.

200 traces made with opentelemetry-sdk and the openinference-semantic-conventions attribute
names (tests/trace_gen.py), one per row of the ARES log: rows 0-99 as they are, with
``metadata.version = "v1"``; rows 100-199 with the previous row's passage
(``rf.datasets.wrong_contexts``, a simulated retrieval bug) as ``"v2"``. Each trace is a
CHAIN root (question, answer, metadata, session), a RETRIEVER span (the passage, id: the
source URL and row) and an LLM span (the messages). Written as the OpenTelemetry
collector's file exporter writes OTLP JSON (one ExportTraceServiceRequest per line, 50
spans a line), gzipped. Reproducible: seeded ids and fixed timestamps.

    python benchmarks/example_traces.py
"""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import trace_gen  # noqa: E402

from ragframe.datasets import example_rag_log, wrong_contexts  # noqa: E402

OUT = ROOT / "ragframe" / "data" / "example_traces.otlp.jsonl.gz"


def rows() -> list[dict]:
    """The source rows of the example, in trace order."""
    log = pl.read_parquet(example_rag_log())
    return trace_gen.ares_rows(log.head(100), "v1") + trace_gen.ares_rows(wrong_contexts(log).tail(100), "v2")


def main() -> None:
    spans = trace_gen.make_spans(rows(), seed=31)
    plain = OUT.with_suffix("")  # .jsonl
    trace_gen.write_otlp_json(spans, plain)
    data = plain.read_bytes()
    plain.unlink()
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as handle:  # mtime 0: the same bytes every time
        handle.write(data)
    OUT.write_bytes(buffer.getvalue())
    print(f"{OUT}: {len(spans)} spans, {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
