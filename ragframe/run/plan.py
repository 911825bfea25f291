"""A run's configuration, checked once: the typed :class:`RunPlan` an :class:`~ragframe.Evaluator` holds.

Every option of a run (the run's own, :class:`~ragframe.run.options.RunOptions`, and each
family's) is validated here, once, when the evaluator is made; the plan keeps the canonical
values. What a scoring call keeps while it runs (the judge's memo of replies, a budget's draw)
is a :class:`~ragframe.metrics.registry.RunState`, made per call and passed explicitly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragframe.judges.budget import Budget
from ragframe.metrics import registry
from ragframe.run.options import RunOptions

__all__ = ["RunPlan", "all_options", "GENERAL_OPTIONS"]

#: Options of the run itself (the families add theirs: column names, k, explain, ...), from :class:`RunOptions`.
GENERAL_OPTIONS: dict[str, Any] = registry.option_defaults(RunOptions)


@dataclass(frozen=True)
class RunPlan:
    """The checked options of a run: the run's own as typed fields, each family's as checked by the family.

    Built once per :class:`~ragframe.Evaluator` (:attr:`ragframe.Evaluator.run_plan`), by
    :func:`ragframe.run.configure.build_plan`; every scoring call reads it and none re-checks it.

    Attributes
    ----------
    prefix : str
    composite : bool
    composite_threshold : float
    thresholds, weights : mapping of str to float
        Keyed by metric or output name.
    mode : str
        ``"heuristic"``, ``"llm"`` or ``"hybrid"``.
    metric_modes : mapping of str to str
    hybrid_band : object
        ``(lo, hi)``, a mapping of metric to band, or None.
    budget : Budget or None
        A judge budget (:mod:`ragframe.judges.budget`).
    families : mapping of str to mapping
        Each registered family's options, as its ``check`` returned them.

    Examples
    --------
    >>> from ragframe.run.configure import build_plan
    >>> plan = build_plan({"k": [5], "prefix": "v2_"})
    >>> plan.prefix, plan.families["retrieval"]["k"], plan.budget is None
    ('v2_', [5], True)
    """

    prefix: str
    composite: bool
    composite_threshold: float
    thresholds: Mapping[str, float]
    weights: Mapping[str, float]
    mode: str
    metric_modes: Mapping[str, str]
    hybrid_band: Any
    budget: Budget | None
    families: Mapping[str, Mapping[str, Any]]


def all_options() -> dict[str, Any]:
    """Every option name with its default: the run's and each registered family's.

    Examples
    --------
    >>> all_options()["composite_threshold"]
    0.6
    """
    merged = dict(GENERAL_OPTIONS)
    for name in registry.families():
        merged.update(registry.get_family(name).defaults)
    return merged
