"""The ``.rf`` namespace on polars frames: ``df.rf.evaluate(...)``, ``df.rf.judge_faithfulness(...)``, ...

Registered when :mod:`ragframe` is imported (built on the first use of ``.rf``, so that
``import ragframe`` stays light). Every method is a real method (IDEs and ``dir()`` list
them) that calls the free function of the same name with the frame as its first argument;
there is no second implementation, and ``help(df.rf.<method>)`` shows that
function's signature and documentation.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> df = pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
>>> df.rf.evaluate(["mrr"])["mrr"].to_list()
[0.5]
>>> df.lazy().rf.score_retrieval(k=1, metrics=["mrr"]).collect()["mrr"].to_list()
[0.5]
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import polars as pl

from ragframe.retrieve import retrieve as _retrieve
from ragframe.run import evaluate as _evaluate
from ragframe.run import functions as _functions
from ragframe.stats.agreement import agreement as _agreement
from ragframe.stats.batch_summary import summarize_batch as _summarize_batch
from ragframe.stats.compare import compare as _compare
from ragframe.stats.estimate import estimate as _estimate
from ragframe.stats.gate import gate as _gate
from ragframe.stats.regressions import regressions as _regressions
from ragframe.stats.summary import summarize as _summarize

__all__ = ["RagframeNamespace", "methods", "register"]

Method = TypeVar("Method", bound=Callable[..., Any])


def _like(function: Callable[..., Any], frame: str | None = None) -> Callable[[Method], Method]:
    """Give a method the documentation and the signature (less the frame) of the function it calls.

    ``frame`` names the parameter the frame fills when it is not the first (``gate``'s keyword ``current``).
    """

    def decorate(method: Method) -> Method:
        signature = inspect.signature(function)
        params = list(signature.parameters.values())
        if frame is not None:
            params = [params[0], *(p for p in params if p.name != frame)]
        self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
        method.__signature__ = signature.replace(parameters=[self_param, *params[1:]])  # type: ignore[attr-defined]
        method.__doc__ = function.__doc__
        # the function's module: its examples run as doctests there, once (they name the free function)
        method.__module__ = function.__module__
        return method

    return decorate


class RagframeNamespace:
    """``frame.rf.<function>(...)`` is ``ragframe.<function>(frame, ...)``, for every public frame function."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame

    def __repr__(self) -> str:
        return f"<ragframe namespace of a {type(self._frame).__name__}: {', '.join(methods())}>"

    # ------------------------------------------------------------------ scoring

    @_like(_evaluate)
    def evaluate(self, *args: Any, **options: Any) -> Any:
        return _evaluate(self._frame, *args, **options)

    @_like(_functions.score_retrieval)
    def score_retrieval(self, **options: Any) -> Any:
        return _functions.score_retrieval(self._frame, **options)

    @_like(_functions.score_faithfulness)
    def score_faithfulness(self, **options: Any) -> Any:
        return _functions.score_faithfulness(self._frame, **options)

    @_like(_functions.score_answer_relevance)
    def score_answer_relevance(self, **options: Any) -> Any:
        return _functions.score_answer_relevance(self._frame, **options)

    @_like(_functions.score_context_precision)
    def score_context_precision(self, **options: Any) -> Any:
        return _functions.score_context_precision(self._frame, **options)

    @_like(_functions.score_context_recall)
    def score_context_recall(self, **options: Any) -> Any:
        return _functions.score_context_recall(self._frame, **options)

    @_like(_functions.score_context_relevance)
    def score_context_relevance(self, **options: Any) -> Any:
        return _functions.score_context_relevance(self._frame, **options)

    @_like(_functions.score_answer_correctness)
    def score_answer_correctness(self, **options: Any) -> Any:
        return _functions.score_answer_correctness(self._frame, **options)

    @_like(_functions.score_hallucination_rate)
    def score_hallucination_rate(self, **options: Any) -> Any:
        return _functions.score_hallucination_rate(self._frame, **options)

    # ------------------------------------------------------------------ judges

    @_like(_functions.judge_faithfulness)
    def judge_faithfulness(self, **options: Any) -> Any:
        return _functions.judge_faithfulness(self._frame, **options)

    @_like(_functions.judge_answer_relevance)
    def judge_answer_relevance(self, **options: Any) -> Any:
        return _functions.judge_answer_relevance(self._frame, **options)

    @_like(_functions.judge_context_relevance)
    def judge_context_relevance(self, **options: Any) -> Any:
        return _functions.judge_context_relevance(self._frame, **options)

    @_like(_functions.judge_context_precision)
    def judge_context_precision(self, **options: Any) -> Any:
        return _functions.judge_context_precision(self._frame, **options)

    @_like(_functions.judge_nugget_assignment)
    def judge_nugget_assignment(self, **options: Any) -> Any:
        return _functions.judge_nugget_assignment(self._frame, **options)

    @_like(_functions.judge_context_recall)
    def judge_context_recall(self, **options: Any) -> Any:
        return _functions.judge_context_recall(self._frame, **options)

    @_like(_functions.judge_answer_correctness)
    def judge_answer_correctness(self, **options: Any) -> Any:
        return _functions.judge_answer_correctness(self._frame, **options)

    # ------------------------------------------------------------------ retrieval and statistics

    @_like(_retrieve)
    def retrieve(self, *args: Any, **options: Any) -> Any:
        return _retrieve(self._frame, *args, **options)

    @_like(_summarize)
    def summarize(self, *args: Any, **options: Any) -> Any:
        return _summarize(self._frame, *args, **options)

    @_like(_summarize_batch)
    def summarize_batch(self, *args: Any, **options: Any) -> Any:
        return _summarize_batch(self._frame, *args, **options)

    @_like(_estimate)
    def estimate(self, *args: Any, **options: Any) -> Any:
        return _estimate(self._frame, *args, **options)

    @_like(_agreement)
    def agreement(self, *args: Any, **options: Any) -> Any:
        return _agreement(self._frame, *args, **options)

    @_like(_compare)
    def compare(self, *args: Any, **options: Any) -> Any:
        return _compare(self._frame, *args, **options)

    @_like(_regressions)
    def regressions(self, *args: Any, **options: Any) -> Any:
        return _regressions(self._frame, *args, **options)

    @_like(_gate, frame="current")
    def gate(self, *args: Any, **options: Any) -> Any:  # the frame gated is current: df.rf.gate(baseline=...)
        return _gate(*args, current=self._frame, **options)  # a positional frame: rf.gate's clear refusal


def methods() -> list[str]:
    """The names of the ``.rf`` methods, sorted.

    Examples
    --------
    >>> "judge_faithfulness" in methods() and "summarize" in methods()
    True
    """
    return sorted(name for name in vars(RagframeNamespace) if not name.startswith("_"))


def register() -> None:
    """Register ``.rf`` on polars DataFrame and LazyFrame (once)."""
    if not hasattr(pl.DataFrame, "rf"):
        pl.api.register_dataframe_namespace("rf")(RagframeNamespace)
    if not hasattr(pl.LazyFrame, "rf"):
        pl.api.register_lazyframe_namespace("rf")(RagframeNamespace)
