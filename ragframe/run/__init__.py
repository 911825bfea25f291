"""The run floor: what executes metrics over frames, above the metrics that only define them.

:class:`Evaluator` (one checked run configuration), :func:`evaluate` / :func:`aevaluate`, the
modes (:mod:`ragframe.run.routing`: heuristic, llm, hybrid), the pass flags and the composite,
and the public per-metric functions generated from the registry (:mod:`ragframe.run.factory`,
:mod:`ragframe.run.functions`). Streaming (:mod:`ragframe.io`) and Ray
(:mod:`ragframe.distributed`) call this floor; it never imports them (docs/architecture.md).

Examples
--------
>>> import polars as pl
>>> from ragframe.run import evaluate
>>> evaluate(pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]}), ["mrr"])["mrr"].to_list()
[0.5]
"""

from ragframe.run.evaluator import Evaluator, aevaluate, evaluate
from ragframe.run.options import RunOptions
from ragframe.run.routing import routing_summary

__all__ = ["Evaluator", "RunOptions", "aevaluate", "evaluate", "routing_summary"]
