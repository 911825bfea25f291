"""The ``.rf`` namespace on polars frames: ``df.rf.evaluate(...)``, ``df.rf.summarize()``.

Registered when :mod:`ragframe` is imported. Every method delegates to the free function of
the same name with the frame as its first argument; there is no second implementation.

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

from typing import Any

import polars as pl

__all__ = ["RagframeNamespace"]

#: Free functions exposed as methods (frame first, same kind of frame or a summary out).
_SCORING = (
    "evaluate",
    "score_retrieval",
    "score_faithfulness",
    "score_answer_relevance",
    "score_context_precision",
    "score_context_recall",
    "score_context_relevance",
    "score_answer_correctness",
    "score_hallucination_rate",
)
_EAGER = ("summarize", "compare", "regressions", "gate")


class RagframeNamespace:
    """``frame.rf.<function>(...)`` is ``ragframe.<function>(frame, ...)``."""

    def __init__(self, frame: pl.DataFrame | pl.LazyFrame) -> None:
        self._frame = frame

    def __getattr__(self, name: str) -> Any:
        if name not in _SCORING + _EAGER:
            raise AttributeError(f"'.rf' has no method {name!r}; available: {sorted(_SCORING + _EAGER)}")
        import ragframe

        function = getattr(ragframe, name)

        def method(*args: Any, **kwargs: Any) -> Any:
            if name == "gate":  # the frame gated is current; the baseline is named: df.rf.gate(baseline=...)
                return function(*args, current=self._frame, **kwargs)
            return function(self._frame, *args, **kwargs)

        method.__name__ = name
        method.__doc__ = function.__doc__
        return method

    def __dir__(self) -> list[str]:
        return sorted(_SCORING + _EAGER)


def register() -> None:
    """Register ``.rf`` on polars DataFrame and LazyFrame (once)."""
    if not hasattr(pl.DataFrame, "rf"):
        pl.api.register_dataframe_namespace("rf")(RagframeNamespace)
    if not hasattr(pl.LazyFrame, "rf"):
        pl.api.register_lazyframe_namespace("rf")(RagframeNamespace)
