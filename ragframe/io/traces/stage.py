"""Trace files into Parquet rows in bounded memory: what :func:`ragframe.evaluate_parquet` scores.

A trace's spans may lie anywhere in its files (the collector writes spans as they end, in
batches), so the rows are made in two passes, neither holding more than a chunk or a
bucket:

1. every chunk of every file (:func:`ragframe.io.traces.span_chunks`: about 32 MiB of
   JSON lines, or 200,000 table rows) becomes a span frame, each span given the slot
   ``hash(trace_id) % SLOTS``, written sorted by slot in small row groups
   (``OUT/traces/spans/chunk-00012.parquet``);
2. the slots are cut into ``buckets`` ranges so that each holds about
   :data:`BUCKET_BYTES` of spans (the sum of the chunks' in-memory sizes tells); each range
   (every span of its traces, read with the other row groups skipped) is assembled into
   rows (:func:`ragframe.io.traces.assemble.assemble`), ``OUT/traces/rows/part-00003.parquet``;
   the traces that cannot be rows go to ``OUT/traces/rejects.parquet``.

The ``metadata.<key>`` columns get one dtype over all parts (a key whose values differ in
kind between buckets is text). ``OUT/traces/stage.json`` records the files' sizes and
modification times, the format and the retrieval policy: a later run with the same ones
reuses the rows (so a resumed :func:`ragframe.evaluate_parquet` finds the same source).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ragframe.exceptions import ResumeError
from ragframe.io.traces import checked_spans, span_chunks, trace_files
from ragframe.io.traces.assemble import REJECT_SCHEMA, assemble
from ragframe.io.traces.spans import SPAN_SCHEMA

__all__ = ["StagedTraces", "stage_traces", "BUCKET_BYTES", "TRACE_REJECTS"]

#: Span frame bytes (polars' estimate) per bucket: the second pass holds one bucket's spans.
BUCKET_BYTES = 256 * 1024 * 1024
#: Hash slots of trace ids; a bucket is a range of slots.
SLOTS = 4096
#: Rows per row group of the span chunks (small, so that a bucket's range of slots skips the others).
ROW_GROUP = 8192
#: Where the rejected traces land in an evaluate_parquet output folder.
TRACE_REJECTS = "rejects/traces.parquet"
_STAGE_VERSION = 1


@dataclass(frozen=True)
class StagedTraces:
    """The staged rows folder, the rejects file and their counts."""

    rows: Path
    rejects: Path
    traces: int
    rejected: int


def _fingerprint(files: list[Path], format: str, retrieval: str) -> dict:
    stats = [(p, p.stat()) for p in files]
    return {
        "version": _STAGE_VERSION,
        "format": format,
        "retrieval": retrieval,
        "files": [{"path": str(p.resolve()), "size": s.st_size, "mtime_ns": s.st_mtime_ns} for p, s in stats],
    }


def _metadata_dtypes(frames: Sequence[pl.Schema]) -> dict[str, pl.DataType]:
    """One dtype per metadata key over every bucket (String where they disagree)."""
    found: dict[str, pl.DataType] = {}
    for schema in frames:
        for name, dtype in schema.items():
            if name in found and found[name] != dtype and dtype != pl.Null:
                found[name] = pl.String if found[name] != pl.Null else dtype
            elif name not in found:
                found[name] = dtype
    return {k: (pl.String if v == pl.Null else v) for k, v in found.items()}


def stage_traces(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    folder: Path,
    format: str,
    retrieval: str = "reranker",
    *,
    overwrite: bool = False,
    buckets: int | None = None,
) -> StagedTraces:
    """Write the rows of ``source``'s traces to ``folder/rows``, the rejected traces to ``folder/rejects.parquet``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from ragframe.datasets import example_traces
    >>> staged = stage_traces(example_traces(), pathlib.Path(tempfile.mkdtemp()), "auto", buckets=3)
    >>> staged.traces, staged.rejected, len(list(staged.rows.glob("*.parquet")))
    (200, 0, 3)
    """
    files = trace_files(source)
    expected = _fingerprint(files, format, retrieval)
    manifest = folder / "stage.json"
    rows_folder, rejects_path, spans_folder = folder / "rows", folder / "rejects.parquet", folder / "spans"
    if manifest.exists():
        stored = json.loads(manifest.read_text(encoding="utf-8"))
        if stored.get("source") == expected and stored.get("complete") and not overwrite:
            return StagedTraces(rows_folder, rejects_path, stored["traces"], stored["rejected"])
        if not overwrite:
            raise ResumeError(
                f"{str(folder)!r} holds rows of other trace files or options; pass {{overwrite}} to "
                "replace them, or choose another output folder",
                mentions={"overwrite": "True"},
            )
    if folder.exists():
        for part in (rows_folder, spans_folder):
            if part.exists():
                shutil.rmtree(part)
        for path in (rejects_path, manifest):
            path.unlink(missing_ok=True)
    chunk, estimated = 0, 0
    spans_folder.mkdir(parents=True, exist_ok=True)
    for path in files:
        for spans in span_chunks(path, format):
            spans = checked_spans(spans).with_columns(
                (pl.col("trace_id").hash(seed=31) % SLOTS).cast(pl.Int32).alias("slot")
            )
            estimated += spans.estimated_size()
            spans.sort("slot").write_parquet(spans_folder / f"chunk-{chunk:05d}.parquet", row_group_size=ROW_GROUP)
            chunk += 1
    buckets = min(SLOTS, buckets or max(1, math.ceil(estimated / BUCKET_BYTES)))
    rows_folder.mkdir(parents=True, exist_ok=True)
    parts = sorted(spans_folder.glob("chunk-*.parquet"))
    assembled, rejected, schemas = [], [], []
    for bucket in range(buckets):
        low, high = bucket * SLOTS // buckets, (bucket + 1) * SLOTS // buckets
        spans = (
            pl.scan_parquet(parts).filter(pl.col("slot").is_between(low, high - 1)).drop("slot").collect()
            if parts
            else pl.DataFrame(schema=SPAN_SCHEMA)
        )
        rows, bad = assemble(spans, retrieval)
        path = rows_folder / f".assembled-{bucket:05d}.parquet"
        rows.write_parquet(path)
        assembled.append(path)
        rejected.append(bad)
        decoded = rows.get_column("metadata").drop_nulls()
        if decoded.len():
            try:
                dtype = decoded.str.json_decode(infer_schema_length=None).dtype
            except Exception:  # metadata that is not JSON: text only
                dtype = None
            if isinstance(dtype, pl.Struct):
                schemas.append(pl.Schema({f.name: f.dtype for f in dtype.fields}))
        del spans, rows
    dtypes = _metadata_dtypes(schemas)
    traces = 0
    for bucket, path in enumerate(assembled):
        rows = pl.read_parquet(path)
        if dtypes:
            fields = rows.get_column("metadata").str.json_decode(pl.Struct(dtypes)).struct.unnest()
            rows = rows.hstack(fields.rename({c: f"metadata.{c}" for c in fields.columns}))
        rows.write_parquet(rows_folder / f"part-{bucket:05d}.parquet")
        traces += rows.height
        path.unlink()
    rejects = pl.concat(rejected) if rejected else pl.DataFrame(schema=REJECT_SCHEMA)
    rejects.sort("source_file", "source_row").write_parquet(rejects_path)
    shutil.rmtree(spans_folder, ignore_errors=True)
    manifest.write_text(
        json.dumps({"source": expected, "complete": True, "traces": traces, "rejected": rejects.height}),
        encoding="utf-8",
    )
    return StagedTraces(rows_folder, rejects_path, traces, rejects.height)
