"""Run a Parquet run's batches as Ray tasks: :class:`RayRunner`, the engine of ``ragframe eval --engine ray``.

:func:`ragframe.evaluate_parquet` plans the run (batches of ``batch_rows`` rows of each file,
checked before anything is written), keeps the manifest, resumes and merges the summary; a
:class:`RayRunner` hands it each batch's work, :meth:`ragframe.io.batches.BatchJob.run`,
as one Ray task: the worker reads its rows from the Parquet file, scores them, writes its
part, its rejects and its summary state to the output folder and returns its counts. Only
the job (once, through the object store), the batch's name and the counts travel through Ray:
no row of the log or of the scores. The output is the local engine's, file for file.

A task holds ``num_cpus`` CPUs (1 by default) and its kernels run on that many threads
(:func:`ragframe.concurrency.thread_limit`): Ray runs as many tasks on a node as it has CPUs,
so the node's cores are used once, not once per task.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragframe import validate
from ragframe.concurrency import thread_limit
from ragframe.distributed.ratelimit import install_limiter, start_limiter
from ragframe.distributed.runtime import original_errors, require_ray
from ragframe.distributed.scoring import task_threads
from ragframe.io.batches import Batch, BatchJob
from ragframe.public import public

__all__ = ["RayRunner", "run_batch"]


def run_batch(job: BatchJob, batch: Batch, limiter: Any, threads: int) -> dict[str, Any]:
    """The Ray task: ``job.run(batch)`` on ``threads`` threads, with the cluster's judge rate limiter.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> import ragframe as rf
    >>> from ragframe.io.streaming import evaluate_parquet
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> log = pl.DataFrame({"id": [1], "retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
    >>> log.write_parquet(folder / "l.parquet")
    >>> def here(job, batches, record):  # a runner that runs each batch in this process
    ...     for batch in batches:
    ...         record(batch.index, run_batch(job, batch, None, 1))
    >>> here.engine = "here"
    >>> evaluate_parquet(folder / "l.parquet", folder / "out", metrics=["mrr"], progress=False, runner=here).scored
    1
    """
    install_limiter(job.evaluator, limiter)
    with thread_limit(threads):
        return job.run(batch)


@dataclass(frozen=True)
class RayRunner:
    """Run each batch of :func:`ragframe.evaluate_parquet` as a Ray task on the connected cluster.

    Parameters
    ----------
    num_cpus : float
        CPUs each task holds (Ray's default, 1); its kernels run on that many threads.
    concurrency : int, optional
        Tasks in flight at once (default: every batch is submitted and Ray runs as many as
        the cluster has CPUs for).

    Notes
    -----
    Every worker must see the log's files and the output folder at the same paths (a
    shared file system, or a single machine); paths are made absolute here. A judge's API
    key does not travel to the workers (:mod:`ragframe.secrets`): they read it from their
    environment (``OPENAI_API_KEY``, or the variable ``api_key_env`` names).

    Examples
    --------
    >>> import ray  # doctest: +SKIP
    >>> import ragframe as rf  # doctest: +SKIP
    >>> ray.init()  # doctest: +SKIP
    >>> rf.evaluate_parquet("logs/", "out/", rf.Evaluator(), runner=RayRunner())  # doctest: +SKIP
    """

    num_cpus: float = 1.0
    concurrency: int | None = None
    engine: str = "ray"

    @public(name="RayRunner")
    def __post_init__(self) -> None:
        validate.number(self.num_cpus, "num_cpus", minimum=0.0)
        if self.concurrency is not None:
            validate.positive_int(self.concurrency, "concurrency")

    def __call__(self, job: BatchJob, batches: Sequence[Batch], record: Callable[[int, dict[str, Any]], None]) -> None:
        """Submit the batches (``concurrency`` at a time), record each as it finishes; cancel the rest on an error."""
        if not batches:
            return
        ray = require_ray(data=False)  # tasks only: no ray.data import
        threads = task_threads(self.num_cpus)
        task = ray.remote(run_batch).options(num_cpus=self.num_cpus)
        limiter = start_limiter(job.evaluator)
        shared = ray.put(dataclasses.replace(job, out=Path(job.out).resolve()))
        waiting = [dataclasses.replace(b, file=str(Path(b.file).resolve())) for b in batches]
        waiting.reverse()  # popped from the end: the first batch is submitted first
        running: dict[Any, Batch] = {}
        limit = self.concurrency or len(waiting)
        try:
            with original_errors():
                while waiting or running:
                    while waiting and len(running) < limit:
                        batch = waiting.pop()
                        running[task.remote(shared, batch, limiter, threads)] = batch
                    done, _ = ray.wait(list(running), num_returns=1)
                    for ref in done:
                        record(running.pop(ref).index, ray.get(ref))
        finally:
            for ref in running:  # an error (or Ctrl-C): the batches still running are not recorded
                ray.cancel(ref)
