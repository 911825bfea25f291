"""``ragframe eval --engine ray``: score Parquet logs on the cluster, write the local layout.

Local (or shared) files: :func:`ragframe.evaluate_parquet` itself, its batches run as Ray
tasks by a :class:`~ragframe.distributed.RayRunner` (each task reads its rows, scores them and
writes its part where the local engine would). The output is the local engine's, file for
file (``OUT/scores/part-00000.parquet``, ``rejects/``, ``state/``, ``summary.parquet``,
``manifest.json`` with ``engine: "ray"``), and a stopped run resumes, on either engine.

URLs (``s3://...``) are read by ``ray.data.read_parquet`` and scored with
:func:`~ragframe.distributed.score_dataset`; that path writes::

    OUT/scores/*.parquet     kept columns + scores (Ray's part names; row order as Ray finishes blocks)
    OUT/rejects/*.parquet    rows that broke the column contract: the kept columns and a one-line
                             ``reason`` (Ray does not number source rows: the kept id names the row)
    OUT/summary.parquet      summarize_dataset over OUT/scores (the local engine's merged summary)
    OUT/manifest.json        engine "ray", options, the files written, row, reject and judge
                             status counts, complete: true

The scored rows are written once, to ``OUT/_ray_scored/`` (read_scores skips ``_`` folders),
then split into ``scores/`` and ``rejects/`` by reading that back (the scoring runs once) and
the temporary folder is removed. That path does not resume: a folder holding an earlier run
needs ``overwrite=True`` (which removes only ragframe's files). Either way, the run's outcome
is checked as the local engine's is: a log without rows, every row rejected, a judge column
without an ``ok`` row or above ``max_failure_rate`` raise
:class:`~ragframe.exceptions.RunFailedError` once the output is complete.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ragframe import validate
from ragframe.distributed.runner import RayRunner
from ragframe.distributed.runtime import empty_frame, original_errors, prepared, require_ray
from ragframe.distributed.scoring import REJECT_COLUMN, score_dataset
from ragframe.distributed.summary import summarize_dataset
from ragframe.exceptions import InvalidParameterError, ResumeError, SchemaError
from ragframe.io.outcome import ParquetEvaluation, check_outcome, failure_limit, judge_outcomes
from ragframe.io.output import MANIFEST, manifest_options, remove_output
from ragframe.io.sources import source_files
from ragframe.io.streaming import DEFAULT_BATCH_ROWS, evaluate_parquet
from ragframe.public import public
from ragframe.run.evaluator import Evaluator

__all__ = ["evaluate_parquet_ray"]

_TEMPORARY = "_ray_scored"
#: The smallest default batch of a Ray run (a task's fixed cost stays small beside its scoring).
MIN_RAY_BATCH_ROWS = 10_000


def _paths(source: str | os.PathLike | Sequence[str | os.PathLike]) -> list[str]:
    """Local files as :func:`ragframe.io.sources.source_files` finds them; URLs (s3://...) as given."""
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    urls = [str(i) for i in items if "://" in str(i)]
    local = [i for i in items if "://" not in str(i)]
    return urls + ([str(p) for p in source_files(local)] if local else [])


def _open(out: Path, overwrite: bool) -> None:
    ours = [
        out / "scores",
        out / "rejects",
        out / "state",
        out / "summary.parquet",
        out / MANIFEST,
        out / _TEMPORARY,
    ]
    if any(p.exists() for p in ours):
        if not overwrite:
            raise ResumeError(
                f"{out} holds ragframe output; the ray engine does not resume: pass {{overwrite}} "
                "to replace it, or choose another output folder",
                mentions={"overwrite": "True"},
            )
        remove_output(out)
    out.mkdir(parents=True, exist_ok=True)


def ray_batch_rows(paths: Sequence[str], out: Path, ray: Any, overwrite: bool) -> int:
    """The default batch of a Ray run of local files: a batch per CPU of the cluster, 10,000 to 100,000 rows.

    Fewer batches than CPUs would leave CPUs idle; larger batches tokenise a repeated text
    once for more rows. A run resuming in ``out`` keeps the batches it started with (its
    manifest's ``batch_rows``), whatever the cluster's size now.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "log.parquet"
    >>> pl.DataFrame({"id": range(120_000)}).write_parquet(path)
    >>> class Cluster:
    ...     def cluster_resources(self):
    ...         return {"CPU": 4.0}
    >>> ray_batch_rows([str(path)], path.parent / "out", Cluster(), overwrite=False)
    30000
    """
    stored = out / MANIFEST
    if stored.is_file() and not overwrite:
        try:
            return int(json.loads(stored.read_text(encoding="utf-8"))["options"]["batch_rows"])
        except (ValueError, KeyError, TypeError):  # not a local-layout manifest: the run itself will say so
            pass
    total = sum(pq.ParquetFile(path).metadata.num_rows for path in source_files(list(paths)))
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    return min(DEFAULT_BATCH_ROWS, max(MIN_RAY_BATCH_ROWS, -(-total // cpus)))


def _good(batch: pa.Table) -> pa.Table:
    return batch.filter(pc.is_null(batch.column(REJECT_COLUMN))).drop_columns([REJECT_COLUMN])


def _bad(batch: pa.Table, kept: Sequence[str]) -> pa.Table:
    bad = batch.filter(pc.is_valid(batch.column(REJECT_COLUMN)))
    return bad.select([*kept, REJECT_COLUMN]).rename_columns([*kept, "reason"])


def _counts(folder: Path) -> tuple[int, int]:
    """(rows, rejected) of the written parts, from their Parquet footers (row and null counts: no data read)."""
    rows = rejected = 0
    for path in sorted(folder.glob("*.parquet")):
        meta = pq.ParquetFile(path).metadata
        index = meta.schema.names.index(REJECT_COLUMN)
        groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
        stats = [g.column(index).statistics for g in groups]
        if all(s is not None and s.has_null_count for s in stats):
            nulls = sum(s.null_count for s in stats)
        else:  # a writer without statistics: read the one column
            nulls = pq.read_table(path, columns=[REJECT_COLUMN]).column(0).null_count
        rows += meta.num_rows
        rejected += meta.num_rows - nulls
    return rows, rejected


@public
def evaluate_parquet_ray(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    out: str | os.PathLike,
    /,
    evaluator: Evaluator,
    *,
    keep: Iterable[str] | None = None,
    batch_size: int | None = None,
    concurrency: int | None = None,
    overwrite: bool = False,
    max_failure_rate: float | None = None,
    progress: bool = False,
) -> ParquetEvaluation:
    """Score Parquet logs on the connected Ray cluster into ``out`` (see the module doc).

    Parameters
    ----------
    source : path, folder, glob, URL, or a list of them
        The log (``s3://...`` and other URLs go to ``ray.data.read_parquet`` as they are).
    out : path
        Output folder (created); on a cluster, storage every node can write.
    evaluator : ragframe.Evaluator
        The run configuration.
    keep : list of str, optional
        Input columns copied to the output; default every column that is not a metric input.
    batch_size : int, optional
        Rows per batch (a task) of local files; default one batch per CPU of the cluster,
        10,000 to 100,000 rows (:func:`ray_batch_rows`; a resumed run keeps its own). URLs:
        as in :func:`score_dataset`.
    concurrency : int, optional
        Tasks in flight at once (default: as many as the cluster has CPUs for).
    overwrite : bool
        Replace an earlier run's output in ``out`` (only the files ragframe wrote; another
        file in its part folders is an error naming it).
    max_failure_rate : float, optional
        As in :func:`ragframe.evaluate_parquet`.
    progress : bool
        A progress bar on a terminal (local files: one step per finished batch).

    Returns
    -------
    ragframe.io.outcome.ParquetEvaluation
        Rows, scored, rejected, the judge columns' statuses, seconds and the summary
        (``batches`` counts Ray's blocks written).

    Raises
    ------
    RunFailedError
        As :func:`ragframe.evaluate_parquet`, once the output is complete.

    Examples
    --------
    >>> import ragframe as rf  # doctest: +SKIP
    >>> evaluate_parquet_ray("logs/", "out/", rf.Evaluator(["faithfulness"]))  # doctest: +SKIP
    """
    if evaluator.option("budget") is not None:  # Ray's workers score batches at once: no run-wide hard stop
        raise InvalidParameterError(
            "a judge budget ({budget}) needs the local engine, which scores the batches in turn and "
            "stops at the budget; the ray engine scores them at once",
            mentions={"budget": ""},
        )
    ray = require_ray(data=False)  # local files run as Ray tasks; URLs import ray.data below
    started = time.perf_counter()
    overwrite = validate.flag(overwrite, "overwrite")
    limit = failure_limit(max_failure_rate)
    paths = _paths(source)
    if not any("://" in p for p in paths):  # local or shared files: the streaming run, its batches as Ray tasks
        return evaluate_parquet(
            paths,
            out,
            evaluator,
            keep=keep,
            batch_rows=batch_size or ray_batch_rows(paths, Path(out), ray, overwrite),
            overwrite=overwrite,
            progress=progress,
            batches_per_process=None,
            max_failure_rate=max_failure_rate,
            runner=RayRunner(concurrency=concurrency),
        )
    out = Path(out)
    ray = require_ray()
    ds: Any = ray.data.read_parquet(paths)  # object storage: Ray Data reads it
    with original_errors():
        empty = empty_frame(ds)
    columns = empty.columns
    _, roles = evaluator.plan(columns)
    kept = list(keep) if keep is not None else [c for c in columns if c not in set(roles.values())]
    for name in kept:
        if name not in columns:
            raise SchemaError("missing column to keep", column=name, available=columns)
    _open(out, overwrite)
    scored = score_dataset(
        ds, evaluator, keep=kept, on_bad_rows="reject", batch_size=batch_size, concurrency=concurrency
    )
    temporary = out / _TEMPORARY
    with original_errors():
        scored.write_parquet(str(temporary))
    counts = _counts(temporary) if temporary.is_dir() else (0, 0)  # no rows: Ray may write no file at all
    if counts[0] == 0:
        _write_empty_part(out / "scores", evaluator, empty, kept)
    result = _split(ray, out, evaluator, kept, counts, started)
    check_outcome(result, limit, [p for p in paths if "://" not in p])
    return result


def _write_empty_part(folder: Path, evaluator: Evaluator, frame: Any, kept: list[str]) -> None:
    """A log without rows: one empty part with the kept columns and the score columns' dtypes (as the local
    engine writes), so that ``ragframe summary``, ``report`` and :func:`ragframe.read_scores` read the folder."""
    from ragframe.io.row_checks import CONTRACT_DTYPES

    _, roles = evaluator.plan(frame.columns)
    typed = frame.with_columns(
        pl.lit(None, CONTRACT_DTYPES[role]).alias(name) for role, name in roles.items() if role in CONTRACT_DTYPES
    )
    folder.mkdir(parents=True, exist_ok=True)
    frame.select(kept).hstack(evaluator.scores(typed)).write_parquet(folder / "part-00000.parquet")


def _split(
    ray: Any, out: Path, evaluator: Evaluator, kept: list[str], counts: tuple[int, int], started: float
) -> ParquetEvaluation:
    """Write scores/ and rejects/ from the temporary folder, the summary and the manifest."""
    temporary = out / _TEMPORARY
    rows, rejected = counts
    summary = None
    if rows:
        with original_errors():
            written = prepared(ray.data.read_parquet(str(temporary)))
            written.map_batches(_good, batch_format="pyarrow").write_parquet(str(out / "scores"))
            if rejected:
                written.map_batches(_bad, fn_args=(kept,), batch_format="pyarrow").write_parquet(str(out / "rejects"))
            scores = ray.data.read_parquet(str(out / "scores"))
            summary = summarize_dataset(scores) if rows > rejected else None
    summary = summary if summary is not None else pl.DataFrame()
    summary.write_parquet(out / "summary.parquet")
    if temporary.exists():
        shutil.rmtree(temporary)
    parts = sorted(p.name for p in (out / "scores").glob("*.parquet"))
    judge = _judge_outcomes(out / "scores") if rows > rejected else {}
    statuses = {name: outcome["statuses"] for name, outcome in judge.items()}
    manifest = {
        "engine": "ray",
        "format": 2,
        "options": manifest_options({"evaluator": evaluator.to_dict(), "keep": kept}),  # no key (ragframe.secrets)
        "rows": rows,
        "scored": rows - rejected,
        "rejected": rejected,
        "statuses": statuses,
        "files": [f"{folder}/{p.name}" for folder in ("scores", "rejects") for p in sorted((out / folder).glob("*"))],
        "finished": {name: {} for name in parts},
        "complete": True,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    return ParquetEvaluation(
        out,
        rows,
        rows - rejected,
        rejected,
        len(parts),
        0,
        time.perf_counter() - started,
        summary,
        statuses=statuses,
        errors={name: outcome["errors"] for name, outcome in judge.items()},
    )


def _judge_outcomes(folder: Path) -> dict[str, dict[str, dict[str, int]]]:
    """:func:`ragframe.io.outcome.judge_outcomes` of the written scores, reading only the judge columns."""
    files = sorted(str(p) for p in folder.glob("*.parquet"))
    schema = pl.read_parquet_schema(files[0]) if files else {}
    stems = [c.removesuffix("_status") for c in schema if c.endswith("_status") and c.removesuffix("_status") in schema]
    columns = [c for stem in stems for c in (stem, f"{stem}_status", f"{stem}_error") if c in schema]
    if not columns:
        return {}
    return judge_outcomes(pl.scan_parquet(files).select(columns).collect())
