"""Your own metrics in one call: a per-row Python function, or a judge prompt.

:func:`callback_metric` registers a function over row values (the anchor seed's
``faithfulness_fn(answer, contexts)``, ``relevancy_fn(query, answer)``, ...) in the ``custom``
family; :func:`judge_metric` registers a prompt template scored by an LLM judge (langrag's
``BaseEvaluator`` subclasses) in the ``judge`` family. Both are then metrics like the
built-in ones: ``rf.evaluate(df, ["my_metric"])``, ``metrics=`` everywhere, thresholds and the
composite, ``rf.list_metrics()``, the statistics (``rf.summarize`` finds ``my_metric``) and
``ragframe eval --metrics my_metric`` (when the module that registers it is imported).
``rf.unregister_metric(name)`` removes them.

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

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.concurrency import gather_limited, is_async_callable, run_sync
from ragframe.exceptions import InvalidParameterError, RagframeError
from ragframe.metrics.judge import TEXT_ROLES, JudgeSpec, template_placeholders
from ragframe.metrics.registry import Metric, register_metric

__all__ = ["callback_metric", "judge_metric", "CallbackKernel", "check_template"]


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


def _inputs(inputs: Any, function: str) -> tuple[str, ...]:
    if isinstance(inputs, str) or not isinstance(inputs, Sequence) or not inputs:
        raise validate.fail(function, "inputs", "a non-empty list of column roles (str)", inputs)
    names = tuple(validate.column_name(role, "inputs", function) for role in inputs)
    if len(set(names)) != len(names):
        raise validate.fail(function, "inputs", "distinct column roles", list(inputs))
    return names


def _bounds(bounds: Any, function: str) -> tuple[float, float] | None:
    if bounds is None:
        return None
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, Sequence) or len(bounds) != 2:
        raise validate.fail(function, "bounds", "a pair (lower, upper) or None", bounds)
    lower, upper = (validate.number(b, "bounds", function) for b in bounds)
    if not lower < upper:
        raise validate.fail(function, "bounds", "a pair (lower, upper) with lower < upper", bounds)
    return (lower, upper)


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
    function = "callback_metric"
    if not callable(fn):
        raise validate.fail(function, "fn", "a callable over the row values", fn)
    roles = _inputs(inputs, function)
    limits = _bounds(bounds, function)
    kernel = CallbackKernel(
        name, fn, roles, limits, validate.positive_int(max_concurrency, "max_concurrency", function)
    )
    label = getattr(fn, "__qualname__", type(fn).__name__)
    metric = Metric(
        name=name,
        family="custom",
        inputs=roles,
        description=description or f"User callback {label}({', '.join(roles)}).",
        kernel=kernel,
        higher_is_better=validate.flag(higher_is_better, "higher_is_better", function),
        bounds=limits,
        threshold=None if threshold is None else validate.number(threshold, "threshold", function),
    )
    return register_metric(metric, replace=replace)


def judge_metric(
    name: str,
    template: str,
    inputs: Sequence[str],
    parser: Callable[[str], Any] | None = None,
    *,
    higher_is_better: bool = True,
    threshold: float | None = None,
    description: str | None = None,
    replace: bool = False,
) -> Metric:
    """Register a prompt template as a judge metric (family ``judge``): langrag's ``BaseEvaluator``, as data.

    Parameters
    ----------
    name : str
        The metric and its output column; it writes ``<name>``, ``_reason``, ``_status``,
        ``_error`` (and ``_std`` with ``n_samples > 1``) like the built-in judge metrics. Named
        ``judge_<heuristic metric>`` with that metric's inputs, it becomes the heuristic
        metric's counterpart in ``mode="llm"``/``"hybrid"`` (e.g. ``judge_hallucination_rate``).
    template : str
        The prompt, with one ``{role}`` placeholder per input (``{question}``, ``{answer}``,
        ``{contexts}`` numbered ``[1] ...``, ``{ground_truth}``, or any column name: its value
        as text). Other braces are left as they are.
    inputs : list of str
        The column roles the template reads; each must appear in it.
    parser : callable, optional
        ``parser(reply) -> score`` (a number in [0, 1], or None when there is none), a
        ``(score, reason)`` pair, or a :class:`~ragframe.judges.ParsedReply`. A score outside
        [0, 1], None or an exception is that row's ``parse_error``. Default: the ``Score:`` /
        ``Reason:`` lines (:func:`ragframe.judges.parse_reply` with ``strict=True``: several
        ``Score:`` lines must agree). A reply that cannot be read is asked again with a format
        reminder (the ``parse_retries`` option, docs/judges.md).
    higher_is_better : bool
        Direction, for the statistics.
    threshold : float, optional
        Default pass threshold; None for none.
    description : str, optional
        One line for :func:`ragframe.list_metrics`.
    replace : bool
        Replace a registered metric of the same name.

    Returns
    -------
    Metric
        The registered metric.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> _ = rf.judge_metric("politeness", "Is this polite? {answer}\\nEnd with 'Score: <0 to 1>'.", ["answer"])
    >>> out = rf.evaluate(pl.DataFrame({"answer": ["Thank you!"]}), ["politeness"],
    ...                   judge=lambda prompt: "Score: 0.9\\nReason: thanks", cache=False)
    >>> out.select("politeness", "politeness_reason", "politeness_status").row(0)
    (0.9, 'thanks', 'ok')
    >>> rf.unregister_metric("politeness")
    """
    function = "judge_metric"
    if not isinstance(template, str) or not template.strip():
        raise validate.fail(function, "template", "a non-empty prompt template (str)", template)
    roles = _inputs(inputs, function)
    check_template(template, roles, function)
    if parser is not None and not callable(parser):
        raise validate.fail(function, "parser", "a callable reply -> score, or None", parser)
    if asyncio.iscoroutinefunction(parser):
        raise InvalidParameterError(f"{function}: parser must be a plain function (reading a reply calls nothing)")
    label = "judge prompt over " + ", ".join(roles)
    metric = Metric(
        name=name,
        family="judge",
        inputs=roles,
        description=description or f"User {label}.",
        kernel=JudgeSpec(template, "score", parser),
        higher_is_better=validate.flag(higher_is_better, "higher_is_better", function),
        threshold=None if threshold is None else validate.number(threshold, "threshold", function),
    )
    return register_metric(metric, replace=replace)


def check_template(template: str, inputs: tuple[str, ...], where: str) -> None:
    """Every input has its ``{placeholder}``; no text-role placeholder the metric does not read."""
    used = template_placeholders(template)
    missing = [role for role in inputs if role not in used]
    if missing:
        raise InvalidParameterError(f"{where}: the template never uses {{{missing[0]}}}; inputs are {list(inputs)}")
    foreign = sorted((used & set(TEXT_ROLES)) - set(inputs))
    if foreign:
        raise InvalidParameterError(
            f"{where}: the template uses {{{foreign[0]}}}, which is not among its inputs {list(inputs)}"
        )
