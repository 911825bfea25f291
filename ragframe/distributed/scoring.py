"""Score a Ray Dataset with the local kernels: :func:`score_dataset` and its batch function.

The column contract is checked once, on the dataset's schema, before any block is read;
then every batch goes through :class:`BatchScorer`, which is exactly
:meth:`ragframe.Evaluator.evaluate` on a pyarrow Table (the kernels :func:`ragframe.evaluate`
runs locally), so a row's scores are bit-identical to local scoring: a row's score never
depends on the other rows of its batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from ragframe import validate
from ragframe.distributed.ratelimit import install_limiter, start_limiter
from ragframe.distributed.runtime import compute_strategy, empty_frame, original_errors, prepared, require_ray
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.io.row_checks import CONTRACT_DTYPES, conform_null_types, row_problems
from ragframe.run.evaluator import CLASH_HINT, Evaluator
from ragframe.schema import check_output_columns

__all__ = ["score_dataset", "BatchScorer", "REJECT_COLUMN", "ON_BAD_ROWS"]

#: In ``on_bad_rows="reject"`` output: why the row was not scored (null on scored rows).
REJECT_COLUMN = "reject_reason"
#: What :func:`score_dataset` does with a row that breaks the column contract.
ON_BAD_ROWS = ("raise", "reject")


def make_evaluator(evaluator_or_metrics: Any, options: dict[str, Any], function: str) -> Evaluator:
    """An :class:`~ragframe.Evaluator` given, or one made from metric names and options (not both)."""
    if isinstance(evaluator_or_metrics, Evaluator):
        if options:
            raise InvalidParameterError(f"{function}: pass an Evaluator or metrics and options, not both")
        return evaluator_or_metrics
    return Evaluator._make(evaluator_or_metrics, options, function)


def contract_roles(evaluator: Evaluator, columns: Sequence[str], function: str) -> dict[str, str]:
    """Role -> column of the inputs whose rows the contract checks (a missing column is an error here)."""
    _, roles = evaluator.plan(list(columns), function=function, warn=False)
    return {role: name for role, name in roles.items() if role in CONTRACT_DTYPES}


def check_schema(empty: pl.DataFrame, evaluator: Evaluator, keep: Sequence[str] | None, function: str) -> None:
    """The column contract on a schema (a frame without rows), the checks of a local run.

    Missing input columns (:meth:`Evaluator.plan`), wrong dtypes and id kinds
    (:func:`ragframe.io.row_checks.row_problems` on one all-null row: only the checks that
    concern every row can fire), the kernels' own dtype checks (scoring zero rows), and
    ``keep`` columns that do not exist.
    """
    roles = contract_roles(evaluator, empty.columns, function)
    null_row = conform_null_types(pl.DataFrame([pl.Series(n, [None], d) for n, d in empty.schema.items()]), roles)
    problems = row_problems(null_row, roles)
    if problems.height:
        reason = problems["reason"][0].replace(" row 0]", " every row]")
        raise SchemaError(f"the dataset's schema breaks the column contract: {reason}", function=function)
    evaluator.evaluate(conform_null_types(empty, roles), function=function)
    for name in keep or ():
        if name not in empty.columns:
            raise SchemaError("missing column to keep", function=function, column=name, available=empty.columns)


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
    function : str
        The public function named in errors.

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

    def __post_init__(self) -> None:
        if isinstance(self.evaluator, Evaluator) and self.evaluator.option("budget") is not None:
            raise InvalidParameterError(  # batches scored at once, each on its own: no run-wide cap
                f"{self.function}: a judge budget (budget=) needs rf.evaluate or the local engine of "
                "rf.evaluate_parquet, which stop at the budget; batch functions score each batch on its own"
            )

    def __call__(self, batch: pa.Table | pa.RecordBatch) -> pa.Table:
        """Score one batch (see the class doc)."""
        install_limiter(self.evaluator, self.limiter, self.function)
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        roles = contract_roles(self.evaluator, table.column_names, self.function)
        frame = conform_null_types(pl.from_arrow(table), roles)  # type: ignore[arg-type]
        problems = row_problems(frame, roles)
        if problems.height and self.on_bad_rows == "raise":
            raise self._row_error(frame, problems)
        if self.on_bad_rows == "reject":
            return self._with_rejects(frame, table, problems, roles)
        scored = self.evaluator.evaluate(table, function=self.function, warn=False)
        return scored if self.keep is None else scored.drop_columns(self._dropped(table.column_names))

    def _dropped(self, columns: Sequence[str]) -> list[str]:
        return [c for c in columns if c not in (self.keep or ())]

    def _row_error(self, frame: pl.DataFrame, problems: pl.DataFrame) -> SchemaError:
        row = int(problems["row"][0])
        where = (
            f"the row with {self.id_column}={frame[self.id_column][row]!r}"
            if self.id_column in frame.columns
            else "a row (no id column to name it)"
        )
        return SchemaError(
            f"{where} breaks the column contract: {problems['reason'][0]} (row numbers count within the Ray batch); "
            "pass on_bad_rows='reject' to score the other rows",
            function=self.function,
        )

    def _with_rejects(
        self, frame: pl.DataFrame, table: pa.Table, problems: pl.DataFrame, roles: dict[str, str]
    ) -> pa.Table:
        """Scores of the good rows, null scores and the reason on the bad ones, rows in input order."""
        from ragframe.io.streaming import _Batch, _score_batch  # the local engine's reject loop, reused

        info = _Batch(0, "<ray batch>", 0, frame.height)
        good, scores, rejects = _score_batch(
            frame, info, lambda df: self.evaluator.scores(df, function=self.function), roles
        )
        positions = np.flatnonzero(good.to_numpy())
        reasons = pl.Series(REJECT_COLUMN, [None] * frame.height, pl.String)
        if rejects.height:
            bad_rows = rejects["source_row"].to_numpy()
            reasons = reasons.scatter(bad_rows, rejects["reason"])
        full = pl.DataFrame({"_row": np.arange(frame.height)}).join(
            scores.with_columns(pl.Series("_row", positions)), on="_row", how="left", maintain_order="left"
        )
        # the rule of evaluate for output names already in the input: all replaced, some refused
        replaced = check_output_columns(table.column_names, scores.columns, self.function, hint=CLASH_HINT)
        kept = [c for c in table.column_names if (self.keep is None or c in self.keep) and c not in replaced]
        out = frame.select(kept).hstack(full.drop("_row")).with_columns(reasons)
        return out.to_arrow()

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


def score_dataset(
    ds: Any,
    evaluator_or_metrics: Evaluator | str | Iterable[str] | None = None,
    /,
    *,
    keep: Iterable[str] | None = None,
    on_bad_rows: str = "raise",
    id_column: str | None = "id",
    batch_size: int | None = 4096,
    concurrency: int | None = None,
    num_cpus: float | None = None,
    **options: Any,
) -> Any:
    """Score a Ray Dataset with the local kernels, on the cluster (lazy: nothing runs until it is consumed).

    Parameters
    ----------
    ds : ray.data.Dataset
        The log, with the input columns of the metrics (``ray.data.read_parquet(...)``).
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
        Rows per call of the batch function (None: whole blocks). Scores do not depend on it.
    concurrency : int, optional
        Batch tasks running at once (default: as many as Ray schedules).
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
    >>> scored = score_dataset(ds, ["faithfulness", "mrr"], batch_size=4096)  # doctest: +SKIP
    >>> scored.write_parquet("s3://bucket/scores/")  # doctest: +SKIP
    """
    function = "score_dataset"
    ray = require_ray(function)
    if not isinstance(ds, ray.data.Dataset):
        kind = f"{type(ds).__module__}.{type(ds).__name__}"
        raise InvalidParameterError(
            f"{function}: ds must be a ray.data.Dataset (ray.data.read_parquet(...), ray.data.from_arrow(...)), "
            f"found a {kind}; score a frame in this process with rf.evaluate"
        )
    evaluator = make_evaluator(evaluator_or_metrics, options, function)
    validate.choice(on_bad_rows, "on_bad_rows", function, ON_BAD_ROWS)
    kept = None if keep is None else tuple(validate.column_list(keep, "keep", function, allow_empty=True))
    if batch_size is not None:
        batch_size = validate.positive_int(batch_size, "batch_size", function)
    if concurrency is not None:
        concurrency = validate.positive_int(concurrency, "concurrency", function)
    if num_cpus is not None:
        num_cpus = validate.number(num_cpus, "num_cpus", function, minimum=0.0)
    if id_column is not None:
        id_column = validate.column_name(id_column, "id_column", function)
    with original_errors():
        check_schema(empty_frame(ds, function), evaluator, kept, function)
    scorer = BatchScorer(evaluator, kept, on_bad_rows, id_column, start_limiter(evaluator, function), function)
    extra = {"num_cpus": num_cpus} if num_cpus is not None else {}
    out = ds.map_batches(
        scorer,
        batch_format="pyarrow",
        batch_size=batch_size,
        zero_copy_batch=True,
        **compute_strategy(concurrency),
        **extra,
    )
    return prepared(out)
