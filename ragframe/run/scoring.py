"""Scoring a frame with a checked run: each family's columns, the judge's by mode, pass flags, the composite.

:func:`score_frame` is what every way of running a configuration ends in
(:meth:`ragframe.Evaluator.evaluate` on a frame, :meth:`ragframe.Evaluator.scores` on a
streaming or cluster batch): the :class:`~ragframe.run.plan.RunPlan` says what to compute, a
:class:`~ragframe.metrics.registry.RunState` holds what the call keeps (the judge's memo, a
budget's draw).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from ragframe.metrics import registry
from ragframe.metrics.judge import counterpart
from ragframe.metrics.registry import COMPOSITE, Metric, RunState
from ragframe.run import routing
from ragframe.run.plan import RunPlan

__all__ = ["score_frame", "family_blocks", "score_groups", "budget_eligible", "default_threshold"]

Request = tuple[Metric, "int | None"]


def family_blocks(
    view: pl.DataFrame,
    requests: list[Request],
    checked: RunPlan,
    state: RunState,
) -> list[pl.DataFrame]:
    """Each family's columns for its requests, families in order of first request (the call's ``state`` to those
    that keep some: the judge's memo, a budget's draw)."""
    blocks = []
    for name in dict.fromkeys(m.family for m, _ in requests):
        family = registry.get_family(name)
        family_requests = [r for r in requests if r[0].family == name]
        opts = checked.families[name]
        columns = family.columns(family_requests, opts, view.columns)
        part = view.select(list(dict.fromkeys(columns.values())))
        if family.run_state:
            blocks.append(family.score(part, family_requests, opts, state=state))
        else:
            blocks.append(family.score(part, family_requests, opts))
    return blocks


def score_groups(blocks: list[pl.DataFrame], names: set[str]) -> dict[str, list[pl.Series]]:
    """Each score column with its companions (signals), from the families' blocks."""
    groups: dict[str, list[pl.Series]] = {}
    for block in blocks:
        current: list[pl.Series] | None = None
        for series in block.get_columns():
            if series.name in names:  # a score column starts its group; companions (signals) follow it
                current = groups.setdefault(series.name, [])
            if current is None:  # an internal invariant: families write each score before its companions
                raise RuntimeError(f"column {series.name!r} precedes every score column of its family")
            current.append(series)
    return groups


def heuristic_groups(
    view: pl.DataFrame,
    requests: list[Request],
    routes: dict[str, str],
    checked: RunPlan,
    state: RunState,
) -> dict[str, list[pl.Series]]:
    """The columns of every metric scored without the judge: all but the judge family's and those ``"llm"`` routes
    (which a budgeted run scores too: its heuristic is the prediction of the estimate)."""
    budget = checked.budget
    first = [r for r in requests if r[0].family != "judge" and (routes[r[0].name] != "llm" or budget is not None)]
    names = {m.column(k) for m, k in first}
    return score_groups(family_blocks(view, first, checked, state), names)


def budget_eligible(
    view: pl.DataFrame,
    requests: list[Request],
    routes: dict[str, str],
    groups: dict[str, list[pl.Series]],
    checked: RunPlan,
) -> dict[str, np.ndarray]:
    """Per judge metric, the rows the judge would be asked about without a budget (the draw's candidates)."""
    eligible: dict[str, np.ndarray] = {}
    for metric, k in requests:
        route = "llm" if metric.family == "judge" else routes[metric.name]
        if route == "heuristic":
            continue
        judge = metric if metric.family == "judge" else counterpart(metric)
        if route == "hybrid":
            score = groups[metric.column(k)][0]
            rows, _ = routing.inside_band(view, metric, score, checked, default_threshold(metric, checked))
        else:
            rows = routing.judgeable(view, judge, checked)
        mask = rows.to_numpy().astype(bool, copy=False)
        eligible[judge.name] = eligible[judge.name] | mask if judge.name in eligible else mask
    return eligible


def routed_scores(
    view: pl.DataFrame,
    requests: list[Request],
    routes: dict[str, str],
    checked: RunPlan,
    state: RunState,
    budget_state: Any = None,
) -> tuple[pl.DataFrame, dict[str, Any]]:
    """Scores when some metrics go to the judge (mode "llm"/"hybrid", judge metrics, a budget), with each threshold."""
    groups = heuristic_groups(view, requests, routes, checked, state)
    budgeted = checked.budget is not None
    if budgeted:
        from ragframe.budgeting import budget_run

        eligible = budget_eligible(view, requests, routes, groups, checked)
        state = state.with_budget(budget_run(view, eligible, checked, budget_state))
    judged = [r for r in requests if r[0].family == "judge"]
    if judged:
        blocks = family_blocks(view, judged, checked, state)
        groups.update(score_groups(blocks, {m.column(k) for m, k in judged}))
    columns: list[pl.Series] = []
    thresholds: dict[str, Any] = {}
    for metric, k in requests:
        column = metric.column(k)
        if routes[metric.name] == "heuristic":
            columns += groups[column]
            thresholds[column] = threshold_of(metric, k, checked)
            continue
        given = checked.thresholds.get(column, checked.thresholds.get(metric.name))
        routed, thresholds[column] = routing.routed_columns(
            view,
            metric,
            routes[metric.name],
            groups.get(column),
            (given, default_threshold(metric, checked)),
            checked,
            state,
        )
        columns += routed
        if budgeted:  # the heuristic on every row: the prediction of rf.estimate, the judge its label
            columns.append(groups[column][0].rename(f"{column}_heuristic"))
    return pl.DataFrame(columns, height=view.height), thresholds


def score_frame(
    view: pl.DataFrame,
    requests: list[Request],
    checked: RunPlan,
    state: RunState,
    budget_state: Any = None,
) -> pl.DataFrame:
    """Every family's columns (or the judge's, by mode), pass flags, the composite, then the prefix."""
    routes = {m.name: routing.route(m, checked) for m, _ in requests}
    if checked.budget is None and all(route == "heuristic" for route in routes.values()):
        blocks = family_blocks(view, requests, checked, state)
        scores = pl.concat(blocks, how="horizontal") if blocks else pl.DataFrame(height=view.height)
        thresholds = {m.column(k): threshold_of(m, k, checked) for m, k in requests}
    else:
        scores, thresholds = routed_scores(view, requests, routes, checked, state, budget_state)
    out = with_pass_flags(scores, {c: t for c, t in thresholds.items() if t is not None})
    if checked.composite and any(t is not None for t in thresholds.values()):
        out = out.hstack(composite_of(scores, thresholds, checked))
    prefix = checked.prefix
    return out.rename({c: prefix + c for c in out.columns}) if prefix else out


def threshold_of(metric: Metric, k: int | None, checked: RunPlan) -> float | None:
    given = checked.thresholds
    column = metric.column(k)
    return given.get(column, given.get(metric.name, default_threshold(metric, checked)))


def default_threshold(metric: Metric, checked: RunPlan) -> float | None:
    """The registry's threshold, or the family's for the method this run uses."""
    family = registry.get_family(metric.family)
    if family.threshold is None:
        return metric.threshold
    return family.threshold(metric, checked.families[family.name])


def with_pass_flags(scores: pl.DataFrame, thresholds: dict[str, float]) -> pl.DataFrame:
    columns: list[pl.Series] = []
    for series in scores.get_columns():
        columns.append(series)
        if series.name in thresholds:
            columns.append((series >= thresholds[series.name]).rename(f"{series.name}_passed"))
    return pl.DataFrame(columns, height=scores.height)


def composite_of(scores: pl.DataFrame, thresholds: dict[str, float | None], checked: RunPlan) -> pl.DataFrame:
    """Weighted mean of the non-null thresholded scores; passed = none failed and composite >= threshold."""
    n = scores.height
    num, den = np.zeros(n), np.zeros(n)
    any_failed = np.zeros(n, dtype=bool)
    weights = checked.weights
    for column, threshold in thresholds.items():
        if threshold is None:
            continue
        score = scores.get_column(column).to_numpy().astype(np.float64)
        ok = ~np.isnan(score)
        parsed = registry.parse_column(column)
        w = float(weights.get(column, weights.get(parsed.metric.name if parsed and parsed.metric else column, 1.0)))
        num = num + np.where(ok, w * np.nan_to_num(score), 0.0)
        den = den + np.where(ok, w, 0.0)
        limit = threshold.to_numpy() if isinstance(threshold, pl.Series) else threshold  # per row in hybrid mode
        any_failed |= ok & ~(np.nan_to_num(score) >= limit)
    comp = np.divide(num, den, out=np.full(n, np.nan), where=den != 0)
    passed = ~any_failed & ~np.isnan(comp) & (np.nan_to_num(comp) >= checked.composite_threshold)
    return pl.DataFrame(
        [pl.Series(COMPOSITE, comp, dtype=pl.Float64, nan_to_null=True), pl.Series("passed", passed, dtype=pl.Boolean)]
    )
