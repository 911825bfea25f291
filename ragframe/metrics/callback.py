"""Your own metric in one call: a per-row Python function.

:func:`callback_metric` registers a function over row values (the anchor seed's
``faithfulness_fn(answer, contexts)``, ``relevancy_fn(query, answer)``, ...) in the ``custom``
family (a judge prompt of your own is :func:`ragframe.metrics.judge.judge_metric`, beside the
other judge metrics). It is then a metric like the built-in ones:
``rf.evaluate(df, ["my_metric"])``, ``metrics=`` everywhere, thresholds and the composite,
``rf.list_metrics()``, the statistics (``rf.summarize`` finds ``my_metric``) and ``ragframe
eval --metrics my_metric`` (when the module that registers it is imported).
``rf.unregister_metric(name)`` removes it.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> def cites(answer, contexts):
...     return float(any(chunk[:10] in answer for chunk in contexts))
>>> _ = rf.callback_metric("cites_context", cites, inputs=["answer", "contexts"], threshold=0.5)
>>> df = pl.DataFrame({"answer": ["As written: Paris is the capital."], "contexts": [["Paris is the capital."]]})
>>> rf.evaluate(df, ["cites_context"])["cites_context"].to_list()
[1.0]
>>> rf.unregister_metric("cites_context")
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.concurrency import gather_limited, is_async_callable, run_sync
from ragframe.exceptions import RagframeError
from ragframe.metrics.registry import Metric, register_metric
from ragframe.public import public

__all__ = ["callback_metric", "check_inputs", "CallbackKernel"]


@dataclass(frozen=True)
class CallbackKernel:
    """The kernel of a callback metric: ``function(*row values of inputs) -> number``, row by row.

    Parameters
    ----------
    name : str
        The metric (named in errors).
    function : callable
        Sync or async; called with the row's values in the order of ``inputs``.
    inputs : tuple of str
        The roles it reads.
    bounds : tuple of float, or None
        A value outside is an error naming the row.
    max_concurrency : int
        Calls of an async function in flight at once.
    """

    name: str
    function: Callable[..., Any]
    inputs: tuple[str, ...]
    bounds: tuple[float, float] | None = (0.0, 1.0)
    max_concurrency: int = 8

    def __call__(self, view: pl.DataFrame) -> pl.Series:
        columns = [view.get_column(role).to_list() for role in self.inputs]
        rows = list(zip(*columns)) if columns else [()] * view.height
        if is_async_callable(self.function):
            values = run_sync(lambda: self._gather(rows))
        else:
            values = [self._sync(i, row) for i, row in enumerate(rows)]
        return pl.Series(self.name, [self._checked(i, v) for i, v in enumerate(values)], dtype=pl.Float64)

    def _sync(self, index: int, row: tuple[Any, ...]) -> Any:
        if any(value is None for value in row):
            return None
        try:
            return self.function(*row)
        except Exception as error:  # user code: say which metric and row, keep the cause
            raise self._error(index, error) from error

    async def _gather(self, rows: list[tuple[Any, ...]]) -> list[Any]:
        async def one(index: int, row: tuple[Any, ...]) -> Any:
            if any(value is None for value in row):
                return None
            try:
                return await self.function(*row)
            except Exception as error:
                raise self._error(index, error) from error

        return await gather_limited([lambda i=i, r=r: one(i, r) for i, r in enumerate(rows)], self.max_concurrency)

    def _error(self, index: int, error: Exception) -> RagframeError:
        return RagframeError(
            f"callback metric {self.name!r}: {getattr(self.function, '__qualname__', 'the function')} raised "
            f"{type(error).__name__} at row {index}: {error}"
        )

    def _checked(self, index: int, value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise RagframeError(
                f"callback metric {self.name!r}: row {index}: expected a number (or None), "
                f"found {type(value).__name__} {value!r}"
            )
        value = float(value)
        if math.isnan(value):
            return None
        if self.bounds is not None and not self.bounds[0] <= value <= self.bounds[1]:
            raise RagframeError(
                f"callback metric {self.name!r}: row {index}: {value!r} is outside its bounds {list(self.bounds)}"
            )
        return value


def check_inputs(inputs: Any) -> tuple[str, ...]:
    """A metric's ``inputs``: a non-empty list of distinct column roles (callback and judge metrics)."""
    if isinstance(inputs, str) or not isinstance(inputs, Sequence) or not inputs:
        raise validate.fail("inputs", "a non-empty list of column roles (str)", inputs)
    names = tuple(validate.column_name(role, "inputs") for role in inputs)
    if len(set(names)) != len(names):
        raise validate.fail("inputs", "distinct column roles", list(inputs))
    return names


def _bounds(bounds: Any) -> tuple[float, float] | None:
    if bounds is None:
        return None
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, Sequence) or len(bounds) != 2:
        raise validate.fail("bounds", "a pair (lower, upper) or None", bounds)
    lower, upper = (validate.number(b, "bounds") for b in bounds)
    if not lower < upper:
        raise validate.fail("bounds", "a pair (lower, upper) with lower < upper", bounds)
    return (lower, upper)


@public
def callback_metric(
    name: str,
    fn: Callable[..., Any],
    inputs: Sequence[str],
    *,
    higher_is_better: bool = True,
    bounds: tuple[float, float] | None = (0.0, 1.0),
    threshold: float | None = None,
    description: str | None = None,
    max_concurrency: int = 8,
    replace: bool = False,
) -> Metric:
    """Register a per-row Python function as a metric (family ``custom``).

    Parameters
    ----------
    name : str
        The metric and its output column (lower_snake_case, not taken unless ``replace``).
    fn : callable
        ``fn(*values) -> number or None``, called with the row's values of ``inputs`` in that
        order (a ``contexts`` value is a list of str), sync or async (async calls run
        ``max_concurrency`` at a time). A row with a null input gets a null score and no
        call; None or NaN returned is a null score. A number outside ``bounds``, a value that
        is not a number, or an exception raised by ``fn`` is a
        :class:`~ragframe.exceptions.RagframeError` naming the metric and the row.
    inputs : list of str
        The column roles it reads (``"answer"``, ``"contexts"``, or any column name); the
        usual keywords rename them at evaluation (``answer="response"``).
    higher_is_better : bool
        Direction, for the statistics.
    bounds : tuple of float, or None
        The closed range of the scores (None: unbounded).
    threshold : float, optional
        Default pass threshold (``<name>_passed`` and the composite); None for none.
    description : str, optional
        One line for :func:`ragframe.list_metrics`.
    max_concurrency : int
        Async calls in flight at once.
    replace : bool
        Replace a registered custom metric of the same name.

    Returns
    -------
    Metric
        The registered metric.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> m = rf.callback_metric("answer_len", lambda answer: len(answer), ["answer"], bounds=None)
    >>> out = rf.evaluate(pl.DataFrame({"response": ["four", None]}), ["answer_len"], answer="response")
    >>> out["answer_len"].to_list()
    [4.0, None]
    >>> rf.unregister_metric("answer_len")
    """
    if not callable(fn):
        raise validate.fail("fn", "a callable over the row values", fn)
    roles = check_inputs(inputs)
    limits = _bounds(bounds)
    kernel = CallbackKernel(name, fn, roles, limits, validate.positive_int(max_concurrency, "max_concurrency"))
    label = getattr(fn, "__qualname__", type(fn).__name__)
    metric = Metric(
        name=name,
        family="custom",
        inputs=roles,
        description=description or f"User callback {label}({', '.join(roles)}).",
        kernel=kernel,
        higher_is_better=validate.flag(higher_is_better, "higher_is_better"),
        bounds=limits,
        threshold=None if threshold is None else validate.number(threshold, "threshold"),
    )
    return register_metric(metric, replace=replace)
