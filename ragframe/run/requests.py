"""Which metrics a run computes on a frame: names resolved through the registry, "auto", the defaults, inputs.

A run names metrics (``"ndcg_at_k"``), outputs (``"ndcg_at_10"``) or families
(``"retrieval"``); each becomes (metric, cutoff) requests, grouped by family. With no names
the defaults are the heuristic metrics whose input columns the frame has (one warning per metric
skipped); ``"auto"`` is every metric whose inputs are present.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError, SkippedMetricWarning, with_caller
from ragframe.metrics import registry
from ragframe.metrics.registry import Metric
from ragframe.public import user_stacklevel
from ragframe.run.configure import plain_column
from ragframe.run.plan import RunPlan
from ragframe.schema import DEFAULT_COLUMNS

__all__ = [
    "AUTO",
    "BY_ROLE",
    "resolve",
    "auto_requests",
    "default_requests",
    "input_roles",
    "require_inputs",
    "warn_skipped",
    "check_named_columns",
]

Request = tuple[Metric, "int | None"]
#: ``metrics="auto"``: every metric whose input columns the frame has.
AUTO = "auto"
#: Roles of the ``by`` columns of a judge budget in :meth:`ragframe.Evaluator.input_columns` (``"by:topic"``).
BY_ROLE = "by:"


def resolve(metrics: Any, checked: RunPlan) -> list[Request]:
    """Metric, output and family names -> (metric, cutoff) pairs, each once, grouped by family."""
    names = ["heuristic"] if metrics is None else [metrics] if isinstance(metrics, str) else list(metrics)
    if not names:
        raise InvalidParameterError(f"metrics is empty; choose from {[m.name for m in registry.metrics()]}")
    requests: list[Request] = []
    for name in names:
        requests += expand(name, checked)
    return ordered(requests)


def expand(name: Any, checked: RunPlan) -> list[Request]:
    if not isinstance(name, str):
        raise validate.fail("metrics", "metric names (str)", name)
    if name in registry.families():
        return [r for m in registry.metrics(name) if m.by_default for r in at_cutoffs(m, checked)]
    parsed = plain_column(name)
    if parsed is not None and parsed.k is not None:
        return [(parsed.metric, parsed.k)]
    try:
        metric = registry.get_metric(name)
    except InvalidParameterError:
        choices = [m.name for m in registry.metrics()] + registry.families()
        raise InvalidParameterError(f"unknown metric {name!r}; choose from {choices}") from None
    return at_cutoffs(metric, checked)


def at_cutoffs(metric: Metric, checked: RunPlan) -> list[Request]:
    if not metric.cutoff:
        return [(metric, None)]
    return [(metric, k) for k in checked.families[metric.family]["k"]]


def ordered(requests: list[Request]) -> list[Request]:
    """Each request once; families in order of first request; within a family registry order
    (cutoff metrics by k first, as trec_eval prints them, then the whole-ranking ones)."""
    unique = list(dict.fromkeys((m.name, k) for m, k in requests))
    position = {m.name: i for i, m in enumerate(registry.metrics())}
    family_order = list(dict.fromkeys(m.family for m, _ in requests))
    by_name = {m.name: m for m, _ in requests}

    def key(item: tuple[str, int | None]) -> tuple[int, int, int, int]:
        metric = by_name[item[0]]
        cut = 0 if metric.cutoff else 1
        return (family_order.index(metric.family), cut, item[1] or 0, position[metric.name])

    return [(by_name[name], k) for name, k in sorted(unique, key=key)]


def input_roles(requests: list[Request], checked: RunPlan, available: list[str]) -> dict[str, str]:
    roles: dict[str, str] = {}
    for family in dict.fromkeys(m.family for m, _ in requests):
        family_requests = [r for r in requests if r[0].family == family]
        opts = checked.families[family]
        roles.update(registry.get_family(family).columns(family_requests, opts, available))
    budget = checked.budget
    for column in budget.by if budget is not None else ():
        roles[f"{BY_ROLE}{column}"] = column
    return roles


def require_inputs(requests: list[Request], checked: RunPlan, available: list[str]) -> None:
    """A missing input column is an error naming the metric that needs it."""
    present = set(available)
    for metric, k in requests:
        opts = checked.families[metric.family]
        for role, column in registry.get_family(metric.family).columns([(metric, k)], opts, available).items():
            if column not in present:
                raise SchemaError(
                    f"metric {metric.column(k)!r} needs the {role} column",
                    column=column,
                    available=available,
                )
    budget = checked.budget
    for column in budget.by if budget is not None else ():
        if column not in present:
            raise SchemaError(
                "{by} names a column the judge budget's draw is stratified by, and it is missing",
                column=column,
                available=available,
                mentions={"by": ""},
            )


def missing_input(request: Request, checked: RunPlan, available: list[str]) -> tuple[str, str] | None:
    """(role, column) of the first input column of ``request`` the frame lacks, or None."""
    metric = request[0]
    opts = checked.families[metric.family]
    present = set(available)
    roles = registry.get_family(metric.family).columns([request], opts, available)
    return next(((role, column) for role, column in roles.items() if column not in present), None)


def default_requests(
    checked: RunPlan, available: list[str], *, strict: bool = True
) -> tuple[list[Request], list[tuple[Request, str, str]]]:
    """The default metrics the columns allow, and those skipped with (role, column) missing.

    None allowed is a SchemaError naming each metric's missing column (unless ``strict`` is
    False: only the skipped list is wanted).
    """
    chosen: list[Request] = []
    skipped: list[tuple[Request, str, str]] = []
    for request in resolve(None, checked):
        missing = missing_input(request, checked, available)
        if missing is None:
            chosen.append(request)
        else:
            skipped.append((request, *missing))
    if not chosen and strict:
        lacks = ", ".join(f"{m.column(k)} needs {column!r}" for (m, k), _, column in skipped)
        raise SchemaError(
            f"no default metric can be scored ({lacks}); map the columns (answer='response', "
            "--column answer=response) or name the metrics to score",
            column=skipped[0][2],
            available=available,
        )
    return chosen, skipped


def warn_skipped(checked: RunPlan, available: list[str]) -> None:
    """One :class:`SkippedMetricWarning` per default metric the columns do not allow."""
    prefix = checked.prefix
    for (metric, k), role, column in default_requests(checked, available, strict=False)[1]:
        name = prefix + metric.column(k)
        warnings.warn(
            SkippedMetricWarning(
                with_caller(
                    f"skipped {name!r}: it reads the {role} column {column!r}, which the frame lacks "
                    f"(the default metrics are those the columns allow; name {metric.name!r} to require it)"
                ),
                metric=name,
                role=role,
                column=column,
            ),
            stacklevel=user_stacklevel(),
        )


def check_named_columns(given: Mapping[str, Any], available: list[str]) -> None:
    """Under ``"auto"`` and the default, a column option set must name a column of the frame.

    Those runs choose their metrics by the columns present, so a mistyped mapping
    (``--column answer=nosuch``) would silently drop every metric reading it.
    """
    present = set(available)
    for role in DEFAULT_COLUMNS:
        column = given.get(role)
        if isinstance(column, str) and column not in present:
            raise SchemaError(
                f"the {role} option names a column the frame lacks (the metrics that read it would be dropped "
                "without a word)",
                column=column,
                available=available,
            )


def auto_requests(checked: RunPlan, available: list[str]) -> list[Request]:
    present = set(available)
    chosen: list[Request] = []
    for family in ("heuristic", "retrieval"):
        opts = checked.families[family]
        for metric in (m for m in registry.metrics(family) if m.by_default):
            for request in at_cutoffs(metric, checked):
                needed = registry.get_family(family).columns([request], opts, available).values()
                if all(c in present for c in needed):
                    chosen.append(request)
    if not chosen:
        raise SchemaError(
            "{metrics} found no metric whose input columns are all present",
            available=available,
            mentions={"metrics": "'auto'"},
        )
    return ordered(chosen)
