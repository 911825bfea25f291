"""Traces into the column contract at scale: 1M spans (200k traces x 5 spans), OTLP JSON and a Parquet span table.

What is timed, each in a fresh process (peak RSS is that process's VmHWM):

- ``read_traces`` of the OTLP JSON lines file (the collector's file exporter layout) and of
  the Phoenix-layout Parquet span table: everything in memory, one frame of rows;
- ``stage_traces`` of both (what ``rf.evaluate_parquet(..., input_format=...)`` and
  ``ragframe eval --input-format`` run first): two passes through hash buckets of trace ids,
  bounded memory, rows written as Parquet parts.

The data: a template of 1,000 traces made with opentelemetry-sdk and the OpenInference
attribute names (tests/trace_gen.py: CHAIN root, RETRIEVER with 3 documents, RERANKER with
3 in and 3 out, LLM with messages, model and token counts, and EMBEDDING of the question: 5
spans) from the ARES log's questions and answers (passages cut to 300 characters), then
copied 200 times with new trace ids (the first 8 hex digits of each trace id replaced by
the copy's number), as OTLP JSON lines and as a Phoenix span table. Cached in
``benchmarks/_data/traces``.

With ``--phoenix PYTHON`` (an interpreter where ``arize-phoenix`` is installed, such as a
separate virtual environment), a local Phoenix server is started on 127.0.0.1, the same
spans are sent to it over OTLP/HTTP (protobuf, 1,000 spans a request) and read back with
Phoenix's own client (``spans.get_spans_dataframe``, benchmarks/traces_phoenix.py); the
loading is not timed, the reading is.

    python benchmarks/traces.py                 # 200k traces
    python benchmarks/traces.py --traces 20000 --phoenix /tmp/phx/bin/python
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
                "embedding": True,
            }
        )
    spans = trace_gen.make_spans(rows, seed=7)
    assert len(spans) == 5 * TEMPLATE, len(spans)
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
    parser.add_argument("--phoenix", metavar="PYTHON", help="an interpreter with arize-phoenix: time its client")
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
    if args.phoenix is None:
        print("Phoenix client: not measured (give --phoenix PYTHON, an interpreter with arize-phoenix)")
    else:
        found = phoenix(args.phoenix, jsonl, spans)
        print(
            f"{'Phoenix server':<22} {'get_spans_df':<14} {found['seconds']:>8.1f} "
            f"{spans / found['seconds']:>10,.0f} {found['peak_mb']:>12,.0f}   (Phoenix's client; "
            f"loading {found['load_seconds']:.0f} s not timed)"
        )
    return failed


def phoenix(python: str, jsonl: Path, spans: int) -> dict:
    """Load the spans into a local Phoenix server and time its client reading them back."""
    import os
    import socket
    import tempfile
    import urllib.error
    import urllib.request

    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "PHOENIX_WORKING_DIR": tmp,
            "PHOENIX_PORT": str(port),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_GRPC_PORT": str(port + 1),
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        server = subprocess.Popen(
            [str(Path(python).parent / "phoenix"), "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    urllib.request.urlopen(base + "/healthz", timeout=2)
                    break
                except OSError:
                    time.sleep(1)
            started = time.perf_counter()
            with open(jsonl) as handle:
                for line in handle:
                    request = json_format.ParseDict(_base64_ids(json.loads(line)), ExportTraceServiceRequest())
                    post = urllib.request.Request(
                        base + "/v1/traces",
                        data=request.SerializeToString(),
                        headers={"Content-Type": "application/x-protobuf"},
                    )
                    for _ in range(600):  # 503: Phoenix's queue is full, send again a moment later
                        try:
                            urllib.request.urlopen(post, timeout=600).read()
                            break
                        except urllib.error.HTTPError as exc:
                            if exc.code != 503:
                                raise
                            time.sleep(1)
            count = json.dumps({"query": "{ projects { edges { node { recordCount } } } }"}).encode()
            for _ in range(3600):  # Phoenix stores spans asynchronously: wait for all of them
                ask = urllib.request.Request(
                    base + "/graphql", data=count, headers={"Content-Type": "application/json"}
                )
                edges = json.load(urllib.request.urlopen(ask, timeout=60))["data"]["projects"]["edges"]
                if sum(e["node"]["recordCount"] for e in edges) >= spans:
                    break
                time.sleep(1)
            load = time.perf_counter() - started
            proc = subprocess.run(
                [python, str(ROOT / "benchmarks" / "traces_phoenix.py"), base, str(spans)],
                capture_output=True,
                text=True,
            )
            if proc.returncode:
                raise RuntimeError(proc.stderr.strip().splitlines()[-1])
            found = json.loads(proc.stdout.strip().splitlines()[-1])
            assert found["spans"] == spans, found
            return {**found, "load_seconds": load}
        finally:
            server.terminate()
            server.wait(timeout=60)


def _base64_ids(value):
    """OTLP JSON's hex ids as protobuf's JSON mapping wants them (base64)."""
    import base64

    if isinstance(value, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode() if k in ("traceId", "spanId", "parentSpanId") and v
            else _base64_ids(v)
            for k, v in value.items()
        }  # fmt: skip
    if isinstance(value, list):
        return [_base64_ids(v) for v in value]
    return value


if __name__ == "__main__":
    sys.exit(main())
