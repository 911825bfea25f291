"""Scores back onto a real Phoenix server: spans in, ragframe scores, annotations out, what Phoenix shows.

Run with ragframe's environment, pointing at a Python that has ``arize-phoenix`` installed (a scratch
virtual environment; Phoenix is not a ragframe dependency):

    python3 -m venv /tmp/phx && /tmp/phx/bin/pip install arize-phoenix
    PYTHONPATH=$PWD python benchmarks/annotations_phoenix.py --phoenix-python /tmp/phx/bin/python

It starts a Phoenix server on 127.0.0.1 (a fresh working directory, nothing leaves the machine), sends it
N traces of the bundled ARES log as OpenInference spans (root CHAIN span with ``input.value`` /
``output.value``, a RETRIEVER child with ``retrieval.documents`` as a list of ``document.{id,content}``, an LLM child)
through Phoenix's ``POST /v1/projects/{project}/spans``, scores the rows with ragframe's heuristic metrics,
builds the annotations with ``rf.to_annotations`` (span annotations; document annotations from the ARES
human context-relevance label of each passage), posts them with ``send_annotations`` and reads back, over
Phoenix's GraphQL API, what its UI shows for each span: the annotations and the retrieval metrics
(nDCG, precision, hit) Phoenix computes itself from the document annotations.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

import httpx
import polars as pl

import ragframe as rf
from ragframe.datasets import example_rag_log
from ragframe.io.annotations import send_annotations


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spans_for(rows: pl.DataFrame) -> tuple[list[dict], pl.DataFrame]:
    """OpenInference spans (Phoenix REST shape) for each row, and the rows with their span ids."""
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    spans, ids = [], []
    for i, r in enumerate(rows.iter_rows(named=True)):
        trace, root, ret, llm = f"{i + 1:032x}", f"{3 * i + 1:016x}", f"{3 * i + 2:016x}", f"{3 * i + 3:016x}"
        start = t0 + timedelta(seconds=i)
        stamp = {
            "start_time": start.isoformat(),
            "end_time": (start + timedelta(milliseconds=900)).isoformat(),
            "status_code": "OK",
        }
        # the documents as a list (Phoenix counts a retriever span's documents from it)
        docs = {
            "retrieval": {
                "documents": [
                    {"document": {"id": f"ares-{r['id']}-{j}", "content": text}} for j, text in enumerate(r["contexts"])
                ]
            }
        }
        spans += [
            {
                "name": "rag",
                "context": {"trace_id": trace, "span_id": root},
                "span_kind": "CHAIN",
                **stamp,
                "attributes": {"input.value": r["question"], "output.value": r["answer"]},
            },
            {
                "name": "retrieve",
                "context": {"trace_id": trace, "span_id": ret},
                "parent_id": root,
                "span_kind": "RETRIEVER",
                **stamp,
                "attributes": {"input.value": r["question"], **docs},
            },
            {
                "name": "generate",
                "context": {"trace_id": trace, "span_id": llm},
                "parent_id": root,
                "span_kind": "LLM",
                **stamp,
                "attributes": {"input.value": r["question"], "output.value": r["answer"], "llm.model_name": "fake"},
            },
        ]
        ids.append((trace, root, ret, llm, [f"ares-{r['id']}-{j}" for j in range(len(r["contexts"]))]))
    frame = rows.with_columns(
        pl.Series("trace_id", [x[0] for x in ids]),
        pl.Series("root_span_id", [x[1] for x in ids]),
        pl.Series("retriever_span_id", [x[2] for x in ids]),
        pl.Series("llm_span_id", [x[3] for x in ids]),
        pl.Series("retrieved_ids", [x[4] for x in ids]),
    )
    return spans, frame


QUERY = """query ($first: Int!) { projects { edges { node { name
  spans(first: $first) { edges { node { spanId name spanKind
    spanAnnotations { name annotatorKind label score explanation }
    documentEvaluations { documentPosition name score }
    documentRetrievalMetrics { evaluationName ndcg precision hit } } } } } } } }"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phoenix-python", required=True, help="a Python with arize-phoenix installed")
    parser.add_argument("--rows", type=int, default=5)
    args = parser.parse_args()
    port, grpc = free_port(), free_port()
    work = tempfile.mkdtemp(prefix="phoenix-")
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": work,
        "PHOENIX_PORT": str(port),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    env.pop("PYTHONPATH", None)
    log = open(os.path.join(work, "server.log"), "w")
    server = subprocess.Popen(
        [args.phoenix_python, "-m", "phoenix.server.main", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            print("Phoenix did not start; see", log.name)
            return 1
        version = httpx.get(f"{base}/arize_phoenix_version", timeout=5).text
        log_rows = pl.read_parquet(example_rag_log()).head(args.rows)
        spans, rows = spans_for(log_rows)
        reply = httpx.post(f"{base}/v1/projects/default/spans", json={"data": spans}, timeout=30)
        print(f"Phoenix {version} on {base}: POST spans -> {reply.status_code} {reply.text}")
        time.sleep(3)  # spans are inserted from a queue
        scored = rf.evaluate(
            rows.with_columns(
                relevant_ids=pl.when(pl.col("human_context_relevance") == 1)
                .then(pl.col("retrieved_ids"))
                .otherwise(pl.lit([], dtype=pl.List(pl.String)))
            )
        )
        records = rf.to_annotations(scored, annotator_kinds={"relevance": "LLM"})
        sent = send_annotations(records, base)
        print(
            f"to_annotations: {records.height} records "
            f"({records['document_position'].is_null().sum()} span, "
            f"{records['document_position'].is_not_null().sum()} document); sent {sent}"
        )
        time.sleep(2)
        shown = httpx.post(
            f"{base}/graphql", json={"query": QUERY, "variables": {"first": 3 * args.rows}}, timeout=30
        ).json()
        if "errors" in shown:
            print(json.dumps(shown["errors"], indent=1)[:2000])
            return 1
        by_span = {}
        for project in shown["data"]["projects"]["edges"]:
            for edge in project["node"]["spans"]["edges"]:
                by_span[edge["node"]["spanId"]] = edge["node"]
        expected = records.group_by("span_id").len()
        ok = True
        for span_id, n in expected.iter_rows():
            node = by_span.get(span_id)
            got = 0 if node is None else len(node["spanAnnotations"]) + len(node["documentEvaluations"])
            ok &= got == n
        first = rows.row(0, named=True)
        for span_id in (first["root_span_id"], first["retriever_span_id"]):
            print(json.dumps(by_span.get(span_id), indent=1, ensure_ascii=False))
        table = [
            (
                r["retriever_span_id"],
                r["human_context_relevance"],
                by_span.get(r["retriever_span_id"], {}).get("documentRetrievalMetrics"),
            )
            for r in rows.iter_rows(named=True)
        ]
        print("retriever span, ARES human context relevance, Phoenix's retrieval metrics from the annotations:")
        for line in table:
            print(" ", line)
        print("every record is on its span:", ok)
        return 0 if ok else 1
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


if __name__ == "__main__":
    sys.exit(main())
