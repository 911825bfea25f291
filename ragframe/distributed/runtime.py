"""What every distributed function shares: importing Ray, reading a dataset's schema, surfacing errors.

Ray is imported here, on first use, never when :mod:`ragframe` or :mod:`ragframe.distributed`
is imported. An error a ragframe batch function raises on a worker (a
:class:`~ragframe.exceptions.SchemaError` naming a row, say) reaches the caller as that
error, not as Ray's wrapper around it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import polars as pl
import pyarrow as pa

from ragframe.exceptions import RagframeError
from ragframe.extras import require

__all__ = ["require_ray", "original_errors", "empty_frame", "prepared", "compute_strategy"]


def require_ray(*, data: bool = True) -> Any:
    """The ``ray`` module (``ray.data`` imported unless ``data=False``) or a MissingDependencyError naming the extra.

    Parameters
    ----------
    data : bool
        Import ``ray.data`` too (about 0.35 s of CPU): False where only tasks run (the Ray
        engine on local files, :class:`~ragframe.distributed.RayRunner`).

    Returns
    -------
    module
        ``ray``.

    Examples
    --------
    >>> require_ray().__name__
    'ray'
    """
    if data:
        require("ray", "ray.data")
    return require("ray", "ray")


def _ragframe_cause(error: BaseException) -> RagframeError | None:
    """The ragframe error a Ray exception carries (Ray Data keeps it in ``cause``), if any."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        cause = getattr(current, "cause", None)
        if isinstance(cause, RagframeError) and not _is_ray_wrapper(cause):
            return cause
        if isinstance(current, RagframeError) and not _is_ray_wrapper(current):
            return current
        current = cause if isinstance(cause, BaseException) else current.__cause__
    return None


def _is_ray_wrapper(error: BaseException) -> bool:
    return any(cls.__name__ == "RayTaskError" for cls in type(error).__mro__)


@contextlib.contextmanager
def original_errors() -> Iterator[None]:
    """Re-raise a ragframe error raised on a worker as itself (Ray wraps it in ``RayTaskError``).

    Examples
    --------
    >>> from ragframe.exceptions import SchemaError
    >>> try:
    ...     with original_errors():
    ...         raise SchemaError("bad", function="f")
    ... except SchemaError as error:
    ...     print(type(error).__name__, error)
    SchemaError f: bad
    """
    try:
        yield
    except RagframeError as error:
        found = _ragframe_cause(error)
        if found is None or found is error:
            raise
        raise found from None
    except Exception as error:
        found = _ragframe_cause(error)
        if found is None:
            raise
        raise found from None


def prepared(ds: Any) -> Any:
    """``ds`` with Ray Data set to raise a batch function's own exception (see :func:`original_errors`)."""
    ds.context.raise_original_map_exception = True
    return ds


def empty_frame(ds: Any) -> pl.DataFrame:
    """A polars frame with no rows and ``ds``'s columns and dtypes (large Arrow types become polars' own).

    Parameters
    ----------
    ds : ray.data.Dataset
        The dataset (its schema is read; Ray may run the first block to learn it).

    Returns
    -------
    polars.DataFrame

    Examples
    --------
    >>> import pyarrow as pa
    >>> class Schema:  # what ray.data.Dataset.schema() returns
    ...     base_schema = pa.schema([("id", pa.int64()), ("contexts", pa.large_list(pa.large_string()))])
    >>> class Dataset:
    ...     def schema(self):
    ...         return Schema()
    >>> empty_frame(Dataset()).schema
    Schema([('id', Int64), ('contexts', List(String))])
    """
    schema = ds.schema()
    if schema is None:
        from ragframe.exceptions import SchemaError

        raise SchemaError("the dataset has no schema (no rows and no known columns)")
    base = getattr(schema, "base_schema", schema)
    if not isinstance(base, pa.Schema):
        base = pa.schema(list(zip(schema.names, schema.types)))
    return pl.from_arrow(base.empty_table())  # type: ignore[return-value]


def compute_strategy(concurrency: int | None) -> dict[str, Any]:
    """``map_batches`` keywords running the batch function as up to ``concurrency`` Ray tasks at once.

    Tasks, not actors: a task whose worker dies is retried by Ray; ``None`` lets Ray choose.

    Examples
    --------
    >>> compute_strategy(None)
    {}
    """
    if concurrency is None:
        return {}
    from ray.data import TaskPoolStrategy

    return {"compute": TaskPoolStrategy(size=concurrency)}
