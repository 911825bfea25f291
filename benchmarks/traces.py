"""Traces into the column contract at scale: 1M spans (200k traces x 5 spans), OTLP JSON and a Parquet span table.

What is timed, each in a fresh process (peak RSS is that process's VmHWM):

- ``read_traces`` of the OTLP JSON lines file (the collector's file exporter layout) and of
  the Phoenix-layout Parquet span table: everything in memory, one frame of rows;
- ``stage_traces`` of both (what ``rf.evaluate_parquet(..., input_format=...)`` and
  ``ragframe eval --input-format`` run first): two passes through hash buckets of trace ids,
  bounded memory, rows written as Parquet parts.

The data: a template of 1,000 traces made with opentelemetry-sdk and the OpenInference
attribute names (tests/trace_gen.py: CHAIN root, RETRIEVER with 3 documents, RERANKER with
3 in and 3 out, LLM with messages, model and token counts, plus an EMBEDDING span: 5
spans) from the ARES log's questions and answers (passages cut to 300 characters), then
copied 200 times with new trace ids (the first 8 hex digits of each trace id replaced by
the copy's number), as OTLP JSON lines and as a Phoenix span table. Cached in
``benchmarks/_data/traces``.

Phoenix's own client (``px.Client().get_spans_dataframe`` against a local Phoenix server)
is timed only when ``arize-phoenix`` is importable; otherwise the table says so.

    python benchmarks/traces.py                 # 200k traces
    python benchmarks/traces.py --traces 20000  # a smaller run
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "_data" / "traces"
TEMPLATE = 1_000


def make(traces: int) -> tuple[Path, Path]:
    """The OTLP JSON lines file and the Parquet span table of ``traces`` traces (cached)."""
    import polars as pl

    sys.path.insert(0, str(ROOT / "tests"))
    import trace_gen
    from opentelemetry.sdk.trace import TracerProvider  # noqa: F401  (fails early without the SDK)

    from ragframe.datasets import example_rag_log

    folder = DATA / str(traces)
    jsonl, table = folder / "spans.otlp.jsonl", folder / "spans.parquet"
    if jsonl.exists() and table.exists():
        return jsonl, table
    folder.mkdir(parents=True, exist_ok=True)
    log = pl.read_parquet(example_rag_log())
    rows = []
    for n in range(TEMPLATE):
        r = log.row(n % log.height, named=True)
        passages = [c[:300] for c in r["contexts"]] * 3
        docs = [{"content": p, "id": f"doc-{n}-{i}", "score": float(3 - i)} for i, p in enumerate(passages[:3])]
        rows.append(
            {
                "question": r["question"],
                "answer": r["answer"],
                "documents": docs,
                "reranked": docs[::-1],
                "metadata": {"version": "v1" if n % 2 else "v2"},
                "session_id": f"s{n % 50}",
                "model": "gpt-4o-mini",
                "prompt_tokens": 300 + n % 7,
                "completion_tokens": 40 + n % 5,
            }
        )
    spans = trace_gen.make_spans(rows, seed=7)
    template = folder / "template.jsonl"
    trace_gen.write_otlp_json(spans, template, spans_per_line=100)
    lines = template.read_text().splitlines()
    trace_id = re.compile(r'"traceId":"[0-9a-f]{8}')
    copies = traces // TEMPLATE
    with open(jsonl, "w") as out:
        for copy in range(copies):
            prefix = f'"traceId":"{copy:08x}'
            for line in lines:
                out.write(trace_id.sub(prefix, line) + "\n")
    base = trace_gen.phoenix_table(spans)
    ids = ["context.trace_id"]
    parts = [
        base.with_columns((pl.lit(f"{copy:08x}") + pl.col(c).str.slice(8)).alias(c) for c in ids)
        for copy in range(copies)
    ]
    pl.concat(parts).write_parquet(table, row_group_size=100_000)
    template.unlink()
    return jsonl, table


def measure(what: str, path: str) -> None:
    """Run one measurement in this process and print it as JSON."""
    import tempfile

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from procstat import peak_rss_mb

    import ragframe as rf
    from ragframe.io.traces.stage import stage_traces

    started = time.perf_counter()
    if what == "read":
        rows = rf.read_traces(path)
        count = rows.height
    else:
        with tempfile.TemporaryDirectory() as tmp:
            count = stage_traces(path, Path(tmp), "auto").traces
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "traces": count, "peak_mb": peak_rss_mb()}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=200_000)
    parser.add_argument("--measure", nargs=2, metavar=("WHAT", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(*args.measure)
        return 0
    jsonl, table = make(args.traces)
    spans = args.traces * 5
    print(
        f"{args.traces:,} traces, {spans:,} spans; OTLP JSON {jsonl.stat().st_size / 1e6:,.0f} MB, "
        f"Parquet span table {table.stat().st_size / 1e6:,.0f} MB"
    )
    print(f"{'source':<22} {'reader':<14} {'seconds':>8} {'spans/s':>10} {'peak RSS MB':>12}")
    failed = 0
    for name, path in (("OTLP JSON lines", jsonl), ("Parquet span table", table)):
        for what, label in (("read", "read_traces"), ("stage", "stage_traces")):
            proc = subprocess.run(
                [sys.executable, __file__, "--measure", what, str(path)],
                capture_output=True, text=True, cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
            )  # fmt: skip
            if proc.returncode:
                print(f"{name:<22} {label:<14} failed: {proc.stderr.strip().splitlines()[-1:]}")
                failed = 1
                continue
            found = json.loads(proc.stdout.strip().splitlines()[-1])
            assert found["traces"] == args.traces, found
            print(
                f"{name:<22} {label:<14} {found['seconds']:>8.1f} {spans / found['seconds']:>10,.0f} "
                f"{found['peak_mb']:>12,.0f}"
            )
    try:
        import phoenix  # noqa: F401
    except ImportError:
        print("Phoenix client: not measured (arize-phoenix is not installed)")
    return failed


if __name__ == "__main__":
    sys.exit(main())
