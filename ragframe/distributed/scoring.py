"""Score a Ray Dataset with the local kernels: :func:`score_dataset` and its batch function.

The column contract is checked once, on the dataset's schema, before any block is read;
then every batch goes through :class:`BatchScorer`, which is exactly
:meth:`ragframe.Evaluator.evaluate` on a pyarrow Table (the kernels :func:`ragframe.evaluate`
runs locally), so a row's scores are bit-identical to local scoring: a row's score never
depends on the other rows of its batch.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ragframe import validate
from ragframe.concurrency import thread_limit
from ragframe.distributed.ratelimit import install_limiter, start_limiter
from ragframe.distributed.runtime import compute_strategy, empty_frame, original_errors, prepared, require_ray
from ragframe.exceptions import InputFileError, InvalidParameterError, SchemaError
from ragframe.io.batches import score_with_rejects
from ragframe.io.row_checks import CONTRACT_DTYPES, conform_null_types, row_problems
from ragframe.io.sources import source_files
from ragframe.io.streaming import DEFAULT_BATCH_ROWS
from ragframe.public import public
from ragframe.run.evaluator import CLASH_HINT, Evaluator
from ragframe.schema import check_output_columns, conform_text, to_polars

__all__ = ["score_dataset", "BatchScorer", "SliceScorer", "parquet_slices", "REJECT_COLUMN", "ON_BAD_ROWS"]

#: In ``on_bad_rows="reject"`` output: why the row was not scored (null on scored rows).
REJECT_COLUMN = "reject_reason"
#: What :func:`score_dataset` does with a row that breaks the column contract.
ON_BAD_ROWS = ("raise", "reject")


def make_evaluator(evaluator_or_metrics: Any, options: dict[str, Any]) -> Evaluator:
    """An :class:`~ragframe.Evaluator` given, or one made from metric names and options (not both)."""
    if isinstance(evaluator_or_metrics, Evaluator):
        if options:
            raise InvalidParameterError("pass an Evaluator or metrics and options, not both")
        return evaluator_or_metrics
    return Evaluator(evaluator_or_metrics, **options)


def contract_roles(evaluator: Evaluator, columns: Sequence[str]) -> dict[str, str]:
    """Role -> column of the inputs whose rows the contract checks (a missing column is an error here)."""
    _, roles = evaluator.plan(list(columns), warn=False)
    return {role: name for role, name in roles.items() if role in CONTRACT_DTYPES}


def check_schema(empty: pl.DataFrame, evaluator: Evaluator, keep: Sequence[str] | None) -> None:
    """The column contract on a schema (a frame without rows), the checks of a local run.

    Missing input columns (:meth:`Evaluator.plan`), wrong dtypes and id kinds
    (:func:`ragframe.io.row_checks.row_problems` on one all-null row: only the checks that
    concern every row can fire), the kernels' own dtype checks (scoring zero rows), and
    ``keep`` columns that do not exist.
    """
    roles = contract_roles(evaluator, empty.columns)
    null_row = conform_null_types(pl.DataFrame([pl.Series(n, [None], d) for n, d in empty.schema.items()]), roles)
    problems = row_problems(null_row, roles)
    if problems.height:
        reason = problems["reason"][0].replace(" row 0]", " every row]")
        raise SchemaError(f"the dataset's schema breaks the column contract: {reason}")
    evaluator.evaluate(conform_null_types(empty, roles))
    for name in keep or ():
        if name not in empty.columns:
            raise SchemaError("missing column to keep", column=name, available=empty.columns)


@dataclass(frozen=True)
class BatchScorer:
    """The batch function: an Arrow batch in, the same rows with their scores out (picklable).

    What :func:`score_dataset` hands to ``map_batches``; it also runs under Spark's
    ``mapInArrow`` (:meth:`map_batches`) or any engine that passes Arrow batches.

    Parameters
    ----------
    evaluator : ragframe.Evaluator
        The run configuration.
    keep : tuple of str, optional
        Input columns copied to the output; None: every input column (as :func:`ragframe.evaluate`).
    on_bad_rows : {"raise", "reject"}
        A row that breaks the column contract: raise a :class:`~ragframe.exceptions.SchemaError`
        naming the row by its ``id_column`` value (default), or leave it unscored with the
        reason in :data:`REJECT_COLUMN` (null scores; scored rows have a null reason).
    id_column : str, optional
        Names a bad row in errors ("row with id=7") when the batch has this column.
    limiter : ray.actor.ActorHandle, optional
        The cluster's judge rate limiter (see :mod:`ragframe.distributed.ratelimit`).
    threads : int, optional
        The most threads the kernels start while scoring a batch (the CPUs the task holds);
        None: every core of the machine, as a local run.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import ragframe as rf
    >>> scorer = BatchScorer(rf.Evaluator(["mrr"]))
    >>> batch = pa.table({"id": [1], "retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
    >>> scorer(batch).column("mrr").to_pylist()
    [0.5]
    >>> bad = pa.table({"id": [7], "retrieved_ids": [["a", None]], "relevant_ids": [["b"]]})
    >>> BatchScorer(rf.Evaluator(["mrr"]), on_bad_rows="reject")(bad).column("reject_reason").to_pylist()[0][:21]
    'null inside the list '
    """

    evaluator: Evaluator
    keep: tuple[str, ...] | None = None
    on_bad_rows: str = "raise"
    id_column: str | None = "id"
    limiter: Any = None
    function: str = "score_dataset"
    threads: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.evaluator, Evaluator) and self.evaluator.option("budget") is not None:
            raise InvalidParameterError(  # batches scored at once, each on its own: no run-wide cap
                f"{self.function}: a judge budget ({{budget}}) needs rf.evaluate or the local engine of "
                "rf.evaluate_parquet, which stop at the budget; batch functions score each batch on its own",
                mentions={"budget": ""},
            )

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> pa.Table:
        """Score one batch (see the class doc)."""
        install_limiter(self.evaluator, self.limiter)
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        roles = contract_roles(self.evaluator, table.column_names)
        # only the metrics' inputs become polars (the long texts are converted once, nothing else is)
        frame = to_polars(table, self._inputs(table.column_names))
        with thread_limit(self.threads):
            return self.score_frame(frame, table, roles)

    def score_frame(
        self, frame: pl.DataFrame, table: pa.Table, roles: dict[str, str], source: str | None = None, offset: int = 0
    ) -> pa.Table:
        """Score ``frame`` (the metrics' input columns of ``table``) and attach the scores to the kept columns.

        ``source`` and ``offset`` name the file and its first row when the batch is a slice of
        a file (rows are then numbered in the file); None: rows count within the batch.
        """
        if self.on_bad_rows == "reject":
            return self._with_rejects(frame, table, roles, source, offset)
        frame = conform_null_types(frame, roles)  # type: ignore[arg-type]
        problems = row_problems(frame, roles, offset=offset)
        if problems.height:
            raise self._row_error(table, problems, offset, source)
        return self._attach(table, self._scores(frame))

    def _scores(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The evaluator's score columns, an error naming this scorer's public function (a worker has no caller)."""
        return public(name=self.function)(self.evaluator.scores)(frame)

    def _inputs(self, columns: Sequence[str]) -> list[str]:
        _, roles = self.evaluator.plan(list(columns), warn=False)
        return list(dict.fromkeys(roles.values()))

    def _attach(self, table: pa.Table, scores: pl.DataFrame) -> pa.Table:
        """The kept columns of ``table`` (Arrow, as given) and the score columns, by evaluate's rule for names
        already in the input (all replaced in place, some refused)."""
        replaced = check_output_columns(table.column_names, scores.columns, hint=CLASH_HINT)
        kept = [c for c in table.column_names if self.keep is None or c in self.keep or c in replaced]
        arrays = dict(zip(kept, table.select(kept).columns))
        arrays.update(zip(scores.columns, scores.to_arrow().columns))
        return pa.Table.from_arrays(list(arrays.values()), names=list(arrays))

    def _row_error(self, table: pa.Table, problems: pl.DataFrame, offset: int, source: str | None) -> SchemaError:
        row = int(problems["row"][0]) - offset
        counted = f"row numbers count in {source}" if source else "row numbers count within the Ray batch"
        where = (
            f"the row with {self.id_column}={table.column(self.id_column)[row].as_py()!r}"
            if self.id_column in table.column_names
            else "a row (no id column to name it)"
        )
        return SchemaError(
            f"{where} breaks the column contract: {problems['reason'][0]} ({counted}); "
            "pass on_bad_rows='reject' to score the other rows",
            function=self.function,
        )

    def _with_rejects(
        self, frame: pl.DataFrame, table: pa.Table, roles: dict[str, str], source: str | None, offset: int
    ) -> pa.Table:
        """Scores of the good rows, null scores and the reason on the bad ones, rows in input order."""
        good, scores, rejects = score_with_rejects(
            frame,
            self._scores,
            roles,
            source=source or "<ray batch>",
            offset=offset,
        )
        if rejects.height:  # the scored rows back in their places, null scores on the rejected ones
            positions = pl.Series("_row", np.flatnonzero(good.to_numpy()))
            scores = (
                pl.DataFrame({"_row": np.arange(frame.height)})
                .join(scores.with_columns(positions), on="_row", how="left", maintain_order="left")
                .drop("_row")
            )
        reasons = pl.Series(REJECT_COLUMN, [None] * frame.height, pl.String)
        if rejects.height:
            reasons = reasons.scatter(rejects["source_row"].to_numpy() - offset, rejects["reason"])
        out = self._attach(table, scores)
        if REJECT_COLUMN in out.column_names:  # an input column of that name is replaced
            return out.set_column(out.column_names.index(REJECT_COLUMN), REJECT_COLUMN, reasons.to_arrow())
        return out.append_column(REJECT_COLUMN, reasons.to_arrow())

    def map_batches(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The generator Spark's ``mapInArrow`` calls: each Arrow batch scored, as record batches.

        Parameters
        ----------
        batches : iterable of pyarrow.RecordBatch
            What the engine hands over.

        Yields
        ------
        pyarrow.RecordBatch

        Examples
        --------
        >>> import pyarrow as pa
        >>> import ragframe as rf
        >>> batch = pa.record_batch({"retrieved_ids": [["a"]], "relevant_ids": [["a"]]})
        >>> [b.num_rows for b in BatchScorer(rf.Evaluator(["mrr"])).map_batches([batch])]
        [1]
        """
        for batch in batches:
            yield from self(batch).to_batches()

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        """The Arrow schema of the output for an input ``schema`` (what Spark's ``mapInArrow`` asks for).

        Parameters
        ----------
        schema : pyarrow.Schema
            The input batches' schema.

        Returns
        -------
        pyarrow.Schema

        Examples
        --------
        >>> import pyarrow as pa
        >>> import ragframe as rf
        >>> schema = pa.schema([("retrieved_ids", pa.list_(pa.string())), ("relevant_ids", pa.list_(pa.string()))])
        >>> BatchScorer(rf.Evaluator(["mrr"]), keep=()).output_schema(schema).names
        ['mrr']
        """
        return self(schema.empty_table()).schema


@dataclass(frozen=True)
class SliceScorer:
    """The batch function of :func:`score_dataset` on Parquet files: read a slice of a file, score it (picklable).

    Each input row names a slice (``file``, ``offset``, ``rows``); the worker reads it with
    polars (``pl.scan_parquet(file).select(columns).slice(offset, rows)``, as
    :func:`ragframe.evaluate_parquet` reads its batches) and scores it with ``scorer``. The
    log's texts are read where they are scored: only the slice names and the kept columns
    with the scores pass through Ray's object store.

    Parameters
    ----------
    scorer : BatchScorer
        Scores each slice.
    columns : tuple of str
        The columns read: the metrics' inputs, the kept columns and the id column.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl, pyarrow as pa
    >>> import ragframe as rf
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "log.parquet"
    >>> log = pl.DataFrame({"id": [1, 2], "retrieved_ids": [["a", "b"], ["b"]], "relevant_ids": [["b"], ["b"]]})
    >>> log.write_parquet(path)
    >>> reader = SliceScorer(BatchScorer(rf.Evaluator(["mrr"]), keep=("id",)), ("id", "retrieved_ids", "relevant_ids"))
    >>> reader(pa.table({"file": [str(path)], "offset": [1], "rows": [1]})).to_pydict()
    {'id': [2], 'mrr': [1.0]}
    """

    scorer: BatchScorer
    columns: tuple[str, ...]

    def __call__(self, slices: pa.Table) -> pa.Table:
        """Read and score each slice named in ``slices``; their outputs in order."""
        install_limiter(self.scorer.evaluator, self.scorer.limiter)
        named = zip(*(slices.column(c).to_pylist() for c in ("file", "offset", "rows")))
        with thread_limit(self.scorer.threads):
            parts = [self._one(*row) for row in named]
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def _one(self, file: str, offset: int, rows: int) -> pa.Table:
        try:
            frame = pl.scan_parquet(file).select(self.columns).slice(offset, rows).collect()
        except Exception as exc:  # a damaged page, a file changed since the plan: name the file
            raise InputFileError(f"{self.scorer.function}: cannot read rows {offset}.. of {file!r}: {exc}") from exc
        scorer = self.scorer
        roles = contract_roles(scorer.evaluator, frame.columns)
        inputs = scorer._inputs(frame.columns)
        carried = [c for c in frame.columns if scorer.keep is None or c in scorer.keep or c == scorer.id_column]
        table = frame.select(carried).to_arrow() if carried else pa.table({})
        return scorer.score_frame(conform_text(frame.select(inputs)), table, roles, source=file, offset=offset)


def task_threads(num_cpus: float | None) -> int:
    """The threads a batch task's kernels run on: the CPUs it holds (Ray's default, 1), rounded up.

    Ray schedules as many tasks on a node as it has CPUs; a task that also started a thread
    per core would put N times N threads on N cores. Polars' own pool keeps its size (set
    ``POLARS_MAX_THREADS`` in the job's runtime environment to change it): sizing it per task
    would need a runtime environment per task, which keeps Ray from fusing a dataset's read
    with the scoring, and measured no faster (benchmarks/distributed.py, 200,000 rows, 2 cores).

    Examples
    --------
    >>> task_threads(None), task_threads(2), task_threads(0.5)
    (1, 2, 1)
    """
    return max(1, math.ceil(num_cpus)) if num_cpus else 1


def parquet_slices(source: Any, rows: int) -> tuple[list[dict[str, Any]], pl.DataFrame]:
    """The slices of at most ``rows`` rows of every Parquet file of ``source``, and the log's schema (no rows).

    Every file is found as :func:`ragframe.evaluate_parquet` finds them and must have the
    first file's columns and dtypes (checked on the footers, before any row is read).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "log.parquet"
    >>> pl.DataFrame({"id": [1, 2, 3]}).write_parquet(path)
    >>> slices, empty = parquet_slices(path, 2)
    >>> [(s["offset"], s["rows"]) for s in slices], empty.columns
    ([(0, 2), (2, 1)], ['id'])
    """
    files = source_files(source)
    slices: list[dict[str, Any]] = []
    first: pl.Schema | None = None
    for path in files:
        try:
            count = pq.ParquetFile(path).metadata.num_rows
            schema = pl.Schema(pl.read_parquet_schema(path))
        except Exception as exc:  # any reader failure is reported with the file's name
            raise InputFileError(f"cannot read Parquet file {str(path)!r}: {exc}") from exc
        first = first or schema
        if schema != first:
            raise InputFileError(
                f"{str(path)!r} has columns {dict(schema)} but {str(files[0])!r} has {dict(first)}; "
                "every file read inside the workers needs the first file's columns and dtypes "
                "(read them with ray.data.read_parquet instead)"
            )
        slices += [{"file": str(path), "offset": o, "rows": min(rows, count - o)} for o in range(0, count, rows)]
    return slices, pl.DataFrame(schema=first)


@public
def score_dataset(
    ds: Any,
    evaluator_or_metrics: Evaluator | str | Iterable[str] | None = None,
    /,
    *,
    keep: Iterable[str] | None = None,
    on_bad_rows: str = "raise",
    id_column: str | None = "id",
    batch_size: int | None = None,
    concurrency: int | None = None,
    num_cpus: float | None = None,
    **options: Any,
) -> Any:
    """Score a Ray Dataset (or Parquet files, read inside the workers) with the local kernels, on the cluster.

    Lazy: nothing runs until the result is consumed.

    Parameters
    ----------
    ds : ray.data.Dataset, or a Parquet path, folder, glob or list of them
        The log, with the input columns of the metrics. A dataset (``ray.data.read_parquet(...)``)
        is scored block by block, in the task that reads the block where Ray fuses the two
        (no ``concurrency``). Local Parquet files (every node must see the same paths) are
        read inside the workers, ``batch_size`` rows (default 100,000) a slice, with
        polars as :func:`ragframe.evaluate_parquet` reads them: only the kept columns and
        the scores go through Ray's object store. The fastest way for large logs.
    evaluator_or_metrics : ragframe.Evaluator, str or list of str, optional
        A run configuration, or metric names as in :func:`ragframe.evaluate` (with ``**options``).
    keep : list of str, optional
        Input columns copied to the output; default every input column, as :func:`ragframe.evaluate`.
    on_bad_rows : {"raise", "reject"}
        A row breaking the column contract (a null inside a contexts list, ...): the run fails
        with a :class:`~ragframe.exceptions.SchemaError` naming the row by ``id_column``
        (default), or the row is kept unscored, its scores null and the reason in a
        ``reject_reason`` column (null for scored rows). Never dropped.
    id_column : str, optional
        The column that names a bad row in errors.
    batch_size : int or None
        Rows per call of the batch function. None (default): whole blocks of a dataset,
        100,000-row slices of files. Scores do not depend on it; larger batches tokenise a
        repeated text once for more rows (faster) and hold more memory per task.
    concurrency : int, optional
        Batch tasks running at once (default: as many as Ray schedules; a cap keeps Ray from
        fusing reading and scoring into one task).
    num_cpus : float, optional
        CPUs reserved per batch task (Ray's default is 1).
    **options
        :class:`~ragframe.Evaluator` options when metric names are given.

    Returns
    -------
    ray.data.Dataset
        Each input row (the ``keep`` columns) followed by the columns :func:`ragframe.evaluate`
        appends; values bit-identical to local scoring of the same rows.

    Examples
    --------
    >>> import ray  # doctest: +SKIP
    >>> ds = ray.data.read_parquet("s3://bucket/logs/")  # doctest: +SKIP
    >>> scored = score_dataset(ds, ["faithfulness", "mrr"], keep=["id"])  # doctest: +SKIP
    >>> scored.write_parquet("s3://bucket/scores/")  # doctest: +SKIP
    >>> score_dataset("/mnt/logs/", keep=["id"]).write_parquet("/mnt/scores/")  # doctest: +SKIP
    """
    ray = require_ray()
    files = isinstance(ds, (str, os.PathLike)) or (
        isinstance(ds, (list, tuple)) and bool(ds) and all(isinstance(p, (str, os.PathLike)) for p in ds)
    )
    if not files and not isinstance(ds, ray.data.Dataset):
        kind = f"{type(ds).__module__}.{type(ds).__name__}"
        raise InvalidParameterError(
            f"ds must be a ray.data.Dataset (ray.data.read_parquet(...), ray.data.from_arrow(...)) "
            f"or Parquet paths, found a {kind}; score a frame in this process with rf.evaluate"
        )
    evaluator = make_evaluator(evaluator_or_metrics, options)
    validate.choice(on_bad_rows, "on_bad_rows", ON_BAD_ROWS)
    kept = None if keep is None else tuple(validate.column_list(keep, "keep", allow_empty=True))
    if batch_size is not None:
        batch_size = validate.positive_int(batch_size, "batch_size")
    if concurrency is not None:
        concurrency = validate.positive_int(concurrency, "concurrency")
    if num_cpus is not None:
        num_cpus = validate.number(num_cpus, "num_cpus", minimum=0.0)
    if id_column is not None:
        id_column = validate.column_name(id_column, "id_column")
    if files:
        slices, empty = parquet_slices(ds, batch_size or DEFAULT_BATCH_ROWS)
    else:
        with original_errors():
            empty = empty_frame(ds)
    check_schema(empty, evaluator, kept)
    threads = task_threads(num_cpus)
    limiter = start_limiter(evaluator)
    scorer = BatchScorer(evaluator, kept, on_bad_rows, id_column, limiter, threads=threads)
    map_options: dict[str, Any] = {"batch_format": "pyarrow", **compute_strategy(concurrency)}
    if num_cpus is not None:
        map_options["num_cpus"] = num_cpus
    if files and not slices:  # a log without rows: its schema, as a dataset of no rows
        files, ds = False, ray.data.from_arrow(empty.to_arrow())
    if files:  # one slice a task: the worker reads it (only slice names travel to it)
        inputs = scorer._inputs(empty.columns)
        wanted = [c for c in empty.columns if c in inputs or kept is None or c in kept or c == id_column]
        source = ray.data.from_items(slices, override_num_blocks=max(1, len(slices)))
        return prepared(source.map_batches(SliceScorer(scorer, tuple(wanted)), batch_size=1, **map_options))
    return prepared(ds.map_batches(scorer, batch_size=batch_size, zero_copy_batch=True, **map_options))
