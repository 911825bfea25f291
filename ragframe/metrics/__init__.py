"""Metrics: the registry (:mod:`ragframe.metrics.registry`) and the families that register into it.

Importing this package registers the built-in families: ``retrieval`` (trec_eval-exact ranking
measures), ``heuristic`` (the seven no-LLM RAG metrics), ``judge`` (the LLM-judge metrics),
``ragchecker`` (RAGChecker's claim-level diagnostics), ``nuggets`` (TREC RAG's nugget scores),
``citations`` (ALCE's and TREC RAG's citation support) and
``custom`` (user metrics). :func:`list_metrics` shows them.
"""

from __future__ import annotations

from ragframe.metrics import custom, heuristic, retrieval  # noqa: F401  (registration on import)
from ragframe.metrics.registry import (
    COMPOSITE,
    Family,
    Metric,
    column_keys,
    get_metric,
    list_metrics,
    metric_for_column,
    parse_column,
    passed_column,
    register_metric,
    score_columns,
    unregister_metric,
)

__all__ = [
    "COMPOSITE",
    "Family",
    "Metric",
    "get_metric",
    "list_metrics",
    "metric_for_column",
    "parse_column",
    "column_keys",
    "passed_column",
    "register_metric",
    "score_columns",
    "unregister_metric",
]

# the claim-level families (docs/claims.md) after the ranking and heuristic ones; then the judge metrics, listed last
import ragframe.metrics.citations
import ragframe.metrics.nuggets
import ragframe.metrics.ragchecker  # noqa: F401

# (nugget_judge registers judge_nugget_assignment, a judge metric: after the judge family)
from ragframe.metrics import callback, judge, nugget_judge  # noqa: F401
from ragframe.metrics import registry as _registry

_registry._BUILT_IN.update(m.name for m in _registry.metrics())  # these cannot be unregistered
