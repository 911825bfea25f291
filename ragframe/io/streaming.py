"""Score Parquet logs larger than memory: batches in, a Parquet dataset out, resumable.

:func:`evaluate_parquet` reads a file, a folder or a glob of Parquet files in batches of
``batch_rows`` rows, scores each batch with the same kernels as in memory
(:meth:`ragframe.Evaluator.scores`: one run configuration for every batch, in this
process or a child), and writes::

    OUT/scores/part-00000.parquet ...   one part per batch: kept columns + scores
    OUT/rejects/part-00003.parquet      rows that broke the column contract: source_file,
                                        source_row (0-based row of the file) and a one-line
                                        reason (see ragframe.io.row_checks)
    OUT/state/part-00000.parquet        each batch's mergeable summary reducers
    OUT/summary.parquet                 the summary of all rows (merged reducers)
    OUT/manifest.json                   source fingerprint, options, finished parts (each
                                        with its row, reject and judge status counts),
                                        and the run's totals once complete

Every file is written to a temporary name and renamed, and the manifest is updated after
each part, so a killed run restarted with the same arguments skips the finished parts and
ends with byte-identical files. Memory is bounded by the batch size, not the file size:
the heap is trimmed after every batch (:func:`ragframe.io.memory.trim_heap`). Every part has
one schema (see ``source`` in :func:`evaluate_parquet`).

Where the batches run is the ``runner``'s business (:class:`BatchRunner`): by default in this
process, or in child processes ``batches_per_process`` at a time; a runner such as
:class:`ragframe.distributed.RayRunner` runs each batch (:meth:`BatchJob.run`: read, score,
write its part) as a task on a cluster, and the plan, the manifest, resuming and the merged
summary stay the ones described here.

A judge budget (``budget=``, :mod:`ragframe.judges.budget`) caps the whole run: a first pass
over the batches finds every candidate row and draws the run's rows from all of them (the
manifest's ``budget_plan``, so the rows chosen do not depend on the batches), then the
batches, one after another, share one hard stop; each part records what it spent.

A run that scored or judged nothing is not a success: once its output is complete (and
readable by ``ragframe summary``), :func:`evaluate_parquet` raises
:class:`~ragframe.exceptions.RunFailedError` when the log has no rows, when every row was
rejected, when a judge metric scored no row because its calls failed, or when more judge rows
failed than ``max_failure_rate`` allows (see :data:`NOT_FAILED`).
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ragframe import secrets, validate
from ragframe.exceptions import (
    InvalidParameterError,
    RagframeError,
    SchemaError,
)
from ragframe.io.batches import Batch, BatchJob, BatchRunner, output_schema, plan_batches
from ragframe.io.outcome import (
    ParquetEvaluation,
    check_judged,
    check_outcome,
    failure_limit,
    merge_judge_outcomes,
)
from ragframe.io.output import (
    FORMAT_VERSION,
    MANIFEST,
    manifest_options,
    start_output,
    write_atomic,
    write_json_atomic,
)
from ragframe.io.row_checks import (
    CONTRACT_DTYPES,
)
from ragframe.io.sources import source_files
from ragframe.io.traces import FORMATS as TRACE_FORMATS
from ragframe.io.traces.assemble import RETRIEVAL
from ragframe.io.traces.stage import TRACE_REJECTS, stage_traces
from ragframe.judges.usage import usage_frame
from ragframe.progress import Progress
from ragframe.public import public
from ragframe.run.evaluator import CLASH_HINT, Evaluator
from ragframe.run.requests import BY_ROLE
from ragframe.schema import check_output_columns
from ragframe.stats.summary import SummaryState, merge_summary_states

__all__ = ["evaluate_parquet", "DEFAULT_BATCH_ROWS", "DEFAULT_BATCHES_PER_PROCESS"]

DEFAULT_BATCH_ROWS = 100_000
DEFAULT_BATCHES_PER_PROCESS = 10


@public
def evaluate_parquet(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    out: str | os.PathLike,
    /,
    evaluator: Evaluator | None = None,
    *,
    metrics: str | Iterable[str] | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    keep: Iterable[str] | None = None,
    resume: bool = True,
    overwrite: bool = False,
    progress: bool = True,
    batches_per_process: int | None = DEFAULT_BATCHES_PER_PROCESS,
    on_start: Callable[[list[str]], None] | None = None,
    max_failure_rate: float | None = None,
    runner: BatchRunner | None = None,
    input_format: str = "parquet",
    retrieval: str = "reranker",
    **options: Any,
) -> ParquetEvaluation:
    """Score a Parquet log in batches and write the scores as a Parquet dataset (see the module doc).

    Parameters
    ----------
    source : path, folder, glob, or a list of them
        The log; a folder is searched recursively for ``*.parquet``. Every file needs the
        columns of the first; a kept column has one dtype in every output part: the first
        file's (where that is null-typed, the first later file's), to which another file's
        column is cast when no value can change (Int32 to Int64, null-typed to any); any
        other difference is an :class:`~ragframe.exceptions.InputFileError` naming both
        files, the column and both dtypes, raised before anything is written.
    out : path
        Output folder (created).
    evaluator : Evaluator, optional
        The run configuration (metrics and options); or give ``metrics`` and ``**options``
        and one is made, as :func:`ragframe.evaluate` does.
    metrics : str or list of str, optional
        As in :func:`ragframe.evaluate`: metric, output or family names; ``"auto"`` for every
        metric whose input columns the log has; default each of the seven heuristic metrics
        whose input columns the log has (one SkippedMetricWarning per metric skipped). A
        metric named whose input column is missing is an error naming both, before anything
        is written; so is a log holding some of the columns the run writes (a ``prefix``
        writes beside them).
    batch_rows : int
        Rows per batch (and per output part); bounds memory.
    keep : list of str, optional
        Input columns copied to the output; default every column that is not a metric
        input (the id and metadata, not the long texts).
    resume, overwrite : bool
        Continue a run with the same source and options (default), or replace the
        folder's previous output: only the files its manifest lists are removed, and a
        folder that holds files but no ragframe manifest is refused (:func:`remove_output`).
    progress : bool
        Show a progress bar on a terminal (tqdm when installed); never in a pipe or CI.
    batches_per_process : int or None
        A run with more batches to do than this hands them to fresh child processes
        (``python -c`` importing :mod:`ragframe.io.batch_worker`), this many batches each: the
        memory an allocator keeps between batches goes back to the system when each child
        exits, so the peak is that of ``batches_per_process`` batches whatever the log's
        size. Shorter runs, and ``None``, score in this process (use ``None`` where
        ``sys.executable`` cannot start a Python child, as in a frozen application).
        Results do not depend on it.
    on_start : callable, optional
        Called with the score columns the run writes once the plan is checked and the
        output folder opened, before the first batch (``ragframe eval`` prints them).
    max_failure_rate : float, optional
        The largest share of failed judge rows a judge score column may have (failed over
        the rows sent to the judge: ``skipped`` rows are neither, see :data:`NOT_FAILED`);
        above it the run raises :class:`~ragframe.exceptions.RunFailedError` once its output
        is written. Default None: no limit, but a judge column with failed rows and no ``ok``
        row always fails the run.
    runner : BatchRunner, optional
        Runs the batches elsewhere: :class:`ragframe.distributed.RayRunner` runs each as a
        Ray task (what ``ragframe eval --engine ray`` does for local files). The output,
        its manifest (``engine`` names the runner) and resuming are the same; a judge
        budget needs the default (the batches share one hard stop in one process).
    input_format : {"parquet", "openinference", "phoenix", "langsmith", "otlp", "otlp-proto", "auto"}
        ``"parquet"`` (default): ``source`` is a Parquet log. Any other value: ``source``
        holds trace files (docs/traces.md), made into one row per trace in bounded memory
        (:mod:`ragframe.io.traces.stage`, rows in ``OUT/traces/rows``) and scored as a
        Parquet log; the traces that cannot be rows go to ``OUT/rejects/traces.parquet``
        (``trace_id, source_file, source_row, reason``).
    retrieval : {"reranker", "last", "first", "all"}
        With trace files: which retriever or reranker span gives the documents
        (:func:`ragframe.read_traces`).
    **options
        The :class:`~ragframe.Evaluator`'s options (column names such as
        ``answer="response"``, ``k``, ``thresholds``, ``relevance_level``, ...), when no
        ``evaluator`` is given.

    Returns
    -------
    ParquetEvaluation
        The counts (``rows``, ``scored``, ``rejected``, ``statuses`` of the judge columns)
        and the summary; the manifest records the same counts.

    Raises
    ------
    RunFailedError
        After writing the complete output, when the run scored or judged nothing: the log
        has no rows (the output is a valid empty one), every row was rejected (the message
        gives the first reason), a judge score column has failed rows and no ``ok`` row (the
        message names it and its commonest error), or a column's failure rate is above
        ``max_failure_rate``. The error's ``result`` is the :class:`ParquetEvaluation`.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> log = pl.DataFrame({"id": [1], "retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
    >>> log.write_parquet(folder / "log.parquet")
    >>> result = evaluate_parquet(folder / "log.parquet", folder / "out", metrics=["mrr"], progress=False)
    >>> pl.read_parquet(folder / "out" / "scores").select("id", "mrr").row(0)
    (1, 0.5)
    """
    started = time.perf_counter()
    batch_rows = validate.positive_int(batch_rows, "batch_rows")
    if batches_per_process is not None:
        batches_per_process = validate.positive_int(batches_per_process, "batches_per_process")
    resume, overwrite = validate.flag(resume, "resume"), validate.flag(overwrite, "overwrite")
    progress = validate.flag(progress, "progress")
    if not isinstance(out, (str, os.PathLike)) or os.fspath(out) == "":
        raise validate.fail("out", "a folder path (str or os.PathLike, not empty)", out)
    if evaluator is None:
        evaluator = Evaluator(metrics, **options)
    elif not isinstance(evaluator, Evaluator):
        raise validate.fail("evaluator", "an rf.Evaluator", evaluator)
    elif metrics is not None or options:
        raise InvalidParameterError("pass an Evaluator or metrics and options, not both")
    if runner is not None and evaluator.option("budget") is not None:
        raise InvalidParameterError(
            f"a judge budget ({{budget}}) needs the default runner, which scores the batches in turn and "
            f"stops at the budget; the {runner.engine} runner scores them at once",
            mentions={"budget": ""},
        )
    input_format = validate.choice(input_format, "input_format", ("parquet", *TRACE_FORMATS))
    retrieval = validate.choice(retrieval, "retrieval", RETRIEVAL)
    staged = None
    if input_format != "parquet":  # trace files: rows staged in OUT/traces, then scored as a Parquet log
        if runner is not None:
            raise InvalidParameterError(
                "{input_format} needs the default runner", mentions={"input_format": f"{input_format!r}"}
            )
        staged = stage_traces(source, Path(out) / "traces", input_format, retrieval, overwrite=overwrite)
        source = staged.rows
    batches, job, expected = _plan_run(source, Path(out), evaluator, batch_rows, keep)
    limit = failure_limit(max_failure_rate)
    if limit is not None:
        check_judged(job.evaluator, job.read, limit)
    manifest = start_output(
        job.out, {**expected, "batches": len(batches)}, resume, overwrite, runner.engine if runner else "local"
    )
    _plan_budget(job, batches, manifest)
    if on_start is not None:
        on_start(job.evaluator.outputs(job.read))
    resumed = _run_batches(job, batches, manifest, progress, batches_per_process, runner)
    result = _finish(job.out, batches, manifest, resumed, time.perf_counter() - started)
    if staged is not None:
        (job.out / "rejects").mkdir(exist_ok=True)
        shutil.copyfile(staged.rejects, job.out / TRACE_REJECTS)
        result.traces_rejected = staged.rejected
    check_outcome(result, limit, [b.file for b in batches])
    return result


def _plan_run(
    source: str | os.PathLike | Sequence[str | os.PathLike],
    out: Path,
    evaluator: Evaluator,
    batch_rows: int,
    keep: Iterable[str] | None,
) -> tuple[list[Batch], BatchJob, dict[str, Any]]:
    """The batches, the job that scores each one, and what the manifest must hold (source, options, format).

    Every file is read (its footer) and checked here, before anything is written.
    """
    kept_given = None if keep is None else validate.column_list(keep, "keep", allow_empty=True)
    files = source_files(source)
    batches, fingerprint, schemas = plan_batches(files, batch_rows)
    if not batches:  # a log without rows: one empty batch writes a valid empty output (scores with their dtypes)
        batches = [Batch(0, str(files[0]), 0, 0)]
    schema = schemas[0]
    _, roles = evaluator.plan(schema.names())
    written = evaluator.written_columns(schema)
    replaced = check_output_columns(schema.names(), written, hint=CLASH_HINT)  # as evaluate's rule
    by = [c for role, c in roles.items() if role.startswith(BY_ROLE)]  # a budget's strata: read, and kept by default
    inputs = {c for role, c in roles.items() if not role.startswith(BY_ROLE)}
    kept = kept_given if kept_given is not None else [c for c in schema.names() if c not in inputs]
    kept = [c for c in kept if c not in replaced]
    missing = [c for c in kept if c not in schema.names()]
    if missing:
        raise SchemaError("missing column to keep", column=missing[0], available=schema.names())
    read = [c for c in schema.names() if c in inputs or c in kept or c in by]
    schemas_out = output_schema(files, schemas, read, kept, keep is None)
    settings = {"evaluator": evaluator.to_dict(), "batch_rows": batch_rows, "keep": kept}
    expected = {"source": fingerprint, "options": manifest_options(settings), "format": FORMAT_VERSION}
    checked = {role: name for role, name in roles.items() if role in CONTRACT_DTYPES}
    job = BatchJob(out, read, kept, evaluator, schemas_out, checked)
    return batches, job, expected


def _run_batches(
    job: BatchJob,
    batches: list[Batch],
    manifest: dict[str, Any],
    progress: bool,
    per_process: int | None,
    runner: BatchRunner | None = None,
) -> int:
    """Score the batches the manifest does not list as finished, recording each; the number already finished."""
    finished: dict[str, Any] = manifest["finished"]
    pending = [b for b in batches if str(b.index) not in finished]
    total = sum(b.rows for b in batches)
    bar = Progress(
        total,
        unit="rows",
        label="ragframe eval",
        enabled=progress,
        done=total - sum(b.rows for b in pending),
        label_counter=False,
        unit_scale=True,
    )

    def record(index: int, entry: dict[str, int]) -> None:
        finished[str(index)] = entry
        write_json_atomic(manifest, job.out / MANIFEST)
        bar.update(entry["rows"])

    try:
        if runner is not None:
            runner(job, pending, record)
        elif per_process is None or len(pending) <= per_process:
            job = _with_budget_state(job, manifest)  # one gate for every batch of this process
            for batch in pending:
                record(batch.index, job.run(batch))  # job.run trims the heap after each batch
        else:
            _run_in_child_processes(lambda: _with_budget_state(job, manifest), pending, per_process, record)
    finally:
        bar.close()
    return len(batches) - len(pending)


def _finish(
    out: Path, batches: list[Batch], manifest: dict[str, Any], resumed: int, seconds: float
) -> ParquetEvaluation:
    """Merge the batches' summary states into ``summary.parquet`` and mark the manifest complete."""
    states = [
        SummaryState.read_parquet(out / "state" / f"part-{b.index:05d}.parquet")
        for b in batches
        if (out / "state" / f"part-{b.index:05d}.parquet").exists()
    ]
    summary = merge_summary_states(states).finalize() if states else pl.DataFrame()
    write_atomic(summary, out / "summary.parquet")
    finished = list(manifest["finished"].values())
    rejected = sum(v["rejected"] for v in finished)
    scored = sum(v["scored"] for v in finished)
    judge = merge_judge_outcomes([v.get("judge", {}) for v in finished])
    statuses = {name: counts["statuses"] for name, counts in judge.items()}
    errors = {name: counts["errors"] for name, counts in judge.items()}
    manifest.update(rows=scored + rejected, scored=scored, rejected=rejected, statuses=statuses, complete=True)
    budget = _budget_totals(manifest)
    if budget is not None:
        manifest["budget"] = budget
    usage = usage_frame(v.get("usage", []) for v in finished)
    manifest["judge_usage"] = usage.to_dicts()
    write_json_atomic(manifest, out / MANIFEST)
    return ParquetEvaluation(
        out=out,
        rows=scored + rejected,
        scored=scored,
        rejected=rejected,
        batches=len(batches),
        resumed=resumed,
        seconds=seconds,
        summary=summary,
        statuses=statuses,
        errors=errors,
        budget=budget,
        usage=usage,
    )


# ----------------------------------------------------------------------------- judge budgets


def _plan_budget(job: BatchJob, batches: list[Batch], manifest: dict[str, Any]) -> None:
    """A judge budget's plan for the whole run, in the manifest before the first batch (a first pass over the log).

    Each batch's candidates are found as its scoring finds them (the heuristic of a hybrid
    metric included), truncated to those any plan could choose, and merged: the plan is the
    one the whole log in memory would give, whatever the batches. A resumed run reads it back.
    """
    if job.evaluator.option("budget") is None or "budget_plan" in manifest:
        return
    from ragframe.budgeting import merged_plan

    checked = job.evaluator.run_plan
    parts = [job.candidates(batch) for batch in batches if batch.rows]
    manifest["budget_plan"] = merged_plan(parts, checked).to_json()
    write_json_atomic(manifest, job.out / MANIFEST)


def _with_budget_state(job: BatchJob, manifest: dict[str, Any]) -> BatchJob:
    """``job`` with its budget's state as the next batches start: the plan, and what the finished batches spent."""
    if "budget_plan" not in manifest:
        return job
    import dataclasses

    from ragframe.budgeting import BudgetState
    from ragframe.judges.budget import BudgetPlan

    plan = BudgetPlan.from_json(manifest["budget_plan"])
    spent = [entry.get("budget", {}) for entry in manifest["finished"].values()]
    state = BudgetState(
        job.evaluator.run_plan.budget,
        plan,
        spent_calls=sum(int(s.get("calls", 0)) for s in spent),
        spent_cost=sum(float(s.get("cost", 0.0)) for s in spent),
        planned_calls=max(0, plan.planned_calls - sum(int(s.get("planned_calls", 0)) for s in spent)),
        planned_cost=max(0.0, plan.planned_cost - sum(float(s.get("planned_cost", 0.0)) for s in spent)),
    )
    return dataclasses.replace(job, budget=state)


def _budget_totals(manifest: Mapping[str, Any]) -> dict[str, Any] | None:
    """The plan and what every batch spent (the manifest's and :class:`ParquetEvaluation`'s ``budget``)."""
    plan = manifest.get("budget_plan")
    if plan is None:
        return None
    from ragframe.judges.budget import check_budget

    spent = [entry.get("budget", {}) for entry in manifest["finished"].values()]
    options = manifest["options"]["evaluator"]
    budget = check_budget(options.get("budget"), options.get("budget_seed", 0), options.get("by"))
    return {
        "budget": budget.describe() if budget is not None else None,
        "planned_calls": plan["planned_calls"],
        "planned_cost": plan["planned_cost"],
        "candidates": plan["candidates"],
        "chosen": plan["chosen"],
        "calls": sum(int(s.get("calls", 0)) for s in spent),
        "cost": sum(float(s.get("cost", 0.0)) for s in spent),
    }


# ----------------------------------------------------------------------------- run outcomes


def _run_in_child_processes(
    make_job: Callable[[], BatchJob],
    pending: list[Batch],
    per_process: int,
    record: Callable[[int, dict[str, int]], None],
) -> None:
    """Score ``pending`` in child processes, ``per_process`` batches each, recording each finished batch.

    The children run one after another; each gets ``make_job()`` as its group starts (so a
    judge budget's state includes what the groups before it spent).
    A child gets ``(job, batches)`` pickled on its stdin and answers a pickled message per
    batch on its stdout (see :mod:`ragframe.io.batch_worker`); its stderr is this process's.
    An error in a child is raised here, with its type when it can be pickled.
    """
    package_root = str(Path(__file__).resolve().parents[2])
    # appended, not prepended: an installed ragframe is found first, a source checkout still works
    code = f"import sys; sys.path.append({package_root!r}); from ragframe.io.batch_worker import main; sys.exit(main())"
    for start in range(0, len(pending), per_process):
        group = pending[start : start + per_process]
        # a session of its own: Ctrl-C reaches only this process, which stops the child (no second traceback)
        child = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
        )
        done = 0
        try:
            assert child.stdin is not None and child.stdout is not None
            try:
                with secrets.carrying():  # the child needs the judge's key: through the pipe, never a file
                    pickle.dump((make_job(), group, os.getpid()), child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                child.stdin.close()
            except BrokenPipeError:  # the child died before reading its job: reported below with its exit status
                pass
            while True:
                try:
                    kind, *payload = pickle.load(child.stdout)
                except EOFError:
                    break
                if kind == "error":
                    raise payload[0]
                index, entry = payload
                record(index, entry)
                done += 1
            status = child.wait()
            if done < len(group):
                batch = group[done]
                raise RagframeError(
                    f"evaluate_parquet: the child process scoring rows {batch.offset}.. of {batch.file!r} "
                    f"stopped with exit status {status} (killed, or out of memory?); finished parts are kept, "
                    "run again to resume"
                )
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
