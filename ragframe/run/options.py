"""The run's own options (the families declare theirs beside their metrics), declared once.

Examples
--------
>>> from ragframe.metrics.registry import option_defaults
>>> option_defaults(RunOptions)["composite_threshold"]
0.6
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragframe.metrics.registry import option

__all__ = ["RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """Options of a run of :func:`ragframe.evaluate` that belong to no metric family.

    Their checks read the registry and the modes, so the run floor runs them, once per
    :class:`ragframe.run.Evaluator` (:func:`ragframe.run.configure.build_plan`, into the
    :class:`~ragframe.run.plan.RunPlan`); the defaults and the documentation are these.
    """

    prefix: str = option("", "Prepended to every output column (``''`` or ending with ``_ - . : /``).")
    thresholds: Any = option(None, "Pass thresholds keyed by metric or output name, within the metric's bounds.")
    weights: Any = option(None, "Weights of the composite keyed by metric or output name (numbers >= 0).")
    composite_threshold: float = option(0.6, "Least ``composite_score`` of a passed row.")
    composite: bool = option(True, "Add ``composite_score`` and ``passed``.")
    mode: str = option("heuristic", "``'heuristic'``, ``'llm'`` or ``'hybrid'`` (docs/judges.md).")
    metric_modes: Any = option(None, "The mode per metric with a judge counterpart.")
    hybrid_band: Any = option(None, "The heuristic band ``(lo, hi)`` sent to the judge in hybrid mode (or per metric).")
    budget: Any = option(
        None, "A cap on the judge: a number of calls, or ``{'calls': n, 'cost': x}``; rows drawn at random."
    )
    budget_seed: int = option(0, "Seed of the budget's draw.")
    by: Any = option(None, "Columns that stratify the budget's draw.")
