"""The run floor: what executes metrics over frames, above the metrics that only define them.

:class:`Evaluator` (one checked run configuration), :func:`evaluate` / :func:`aevaluate`, the
modes (:mod:`ragframe.run.routing`: heuristic, llm, hybrid), the pass flags and the composite,
and the public per-metric functions generated from the registry (:mod:`ragframe.run.factory`,
:mod:`ragframe.run.functions`). Streaming (:mod:`ragframe.io`) and Ray
(:mod:`ragframe.distributed`) call this floor; it never imports them (docs/architecture.md). The whole-run
execution of ranked runs against judgments (:mod:`ragframe.run.trec_run`) lives here too.

Examples
--------
>>> import polars as pl
>>> from ragframe.run import evaluate
>>> evaluate(pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]}), ["mrr"])["mrr"].to_list()
[0.5]
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Evaluator", "RunOptions", "aevaluate", "evaluate", "routing_summary"]

# loaded on first use: ``ragframe trec`` runs ragframe.run.trec_run without the Evaluator's machinery
_EXPORTS = {
    "Evaluator": "ragframe.run.evaluator",
    "aevaluate": "ragframe.run.evaluator",
    "evaluate": "ragframe.run.evaluator",
    "RunOptions": "ragframe.run.options",
    "routing_summary": "ragframe.run.routing",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ragframe.run' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
