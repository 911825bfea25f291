"""Checking a run's options once: :func:`build_plan` makes the :class:`~ragframe.run.plan.RunPlan`.

The run's own options are checked here (the families check theirs, :attr:`Family.check`), and
the rules across options: an option given without the one it works with is an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ragframe import validate
from ragframe.exceptions import InvalidParameterError
from ragframe.judges.budget import check_budget
from ragframe.metrics import registry
from ragframe.run import routing
from ragframe.run.plan import FamilyOptions, RunPlan, all_options, family_option_names

__all__ = ["build_plan", "plain_column"]


def build_plan(given: Mapping[str, Any]) -> RunPlan:
    """Check the options set (``given``, defaults filled in) and return the run's plan.

    Parameters
    ----------
    given : mapping of str to object
        The options set (without ``metrics``).

    Returns
    -------
    RunPlan

    Raises
    ------
    InvalidParameterError
        An unknown option, a value its check refuses, or an option given without the one it
        works with (``hybrid_band`` without hybrid mode, ``budget_seed`` without ``budget``).

    Examples
    --------
    >>> build_plan({"composite_threshold": 0.8}).composite_threshold
    0.8
    """
    known = all_options()
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise InvalidParameterError(f"unknown option(s) {unknown}; choose from {sorted(known)}")
    merged = {**known, **given}
    families = {}
    for name in registry.families():
        family = registry.get_family(name)
        seen = {option: merged[option] for option in family_option_names(family, merged)}
        families[name] = FamilyOptions(name, family.check(seen), others=merged)
    plan = RunPlan(
        prefix=registry.check_prefix(merged["prefix"]),
        composite=validate.flag(merged["composite"], "composite"),
        composite_threshold=validate.number(merged["composite_threshold"], "composite_threshold"),
        thresholds=MappingProxyType(_thresholds(merged["thresholds"])),
        weights=MappingProxyType(_keyed_numbers(merged["weights"], "weights", minimum=0.0)),
        mode=validate.choice(merged["mode"], "mode", routing.MODES),
        metric_modes=MappingProxyType(routing.check_metric_modes(merged["metric_modes"])),
        hybrid_band=routing.check_hybrid_band(merged["hybrid_band"]),
        budget=check_budget(merged["budget"], merged["budget_seed"], merged["by"]),
        families=MappingProxyType(families),
    )
    _check_partners(given, plan)
    return plan


def _check_partners(given: Mapping[str, Any], checked: RunPlan) -> None:
    """An option given without the one it works with does nothing: an error naming both (not silence)."""
    hybrid = checked.mode == "hybrid" or "hybrid" in checked.metric_modes.values()
    if given.get("hybrid_band") is not None and not hybrid:
        raise InvalidParameterError(
            "{hybrid_band} chooses the rows a hybrid run sends to the judge, and needs {mode} "
            "(or a metric_modes entry 'hybrid'); without it no row is routed by the band",
            mentions={"hybrid_band": "", "mode": "'hybrid'"},
        )
    if "budget_seed" in given and checked.budget is None:
        raise InvalidParameterError(
            "{budget_seed} seeds a judge budget's draw of rows, and needs {budget}; without a "
            "budget every row is judged",
            mentions={"budget_seed": "", "budget": ""},
        )


def _keyed_numbers(value: Any, name: str, *, minimum: float | None) -> dict[str, float]:
    if value is None:
        return {}
    items = value.items() if isinstance(value, Mapping) else value if isinstance(value, tuple) else None
    if items is None:
        raise validate.fail(name, "a dict of metric name -> number", value)
    out: dict[str, float] = {}
    for key, number in items:
        if not isinstance(key, str) or (key not in {m.name for m in registry.metrics()} and plain_column(key) is None):
            raise InvalidParameterError(f"{name} names unknown metric {key!r}")
        out[key] = validate.number(number, f"{name}[{key!r}]", minimum=minimum)
    return out


def _thresholds(value: Any) -> dict[str, float]:
    """Thresholds keyed by metric or output name, each within its metric's bounds (a score outside never occurs)."""
    thresholds = _keyed_numbers(value, "thresholds", minimum=None)
    for key, number in thresholds.items():
        parsed = plain_column(key)
        metric = parsed.metric if parsed is not None else registry.get_metric(key)
        if metric is not None and metric.bounds is not None:
            low, high = metric.bounds
            validate.number(number, f"thresholds[{key!r}]", minimum=low, maximum=high)
    return thresholds


def plain_column(column: str) -> registry.ScoreColumn | None:
    parsed = registry.parse_column(column)
    return parsed if parsed is not None and parsed.prefix == "" and parsed.metric is not None else None
