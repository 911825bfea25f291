"""Modes of :func:`ragframe.evaluate`: each heuristic metric scored by itself, by its judge counterpart, or both.

``mode="heuristic"`` (the default) scores as ragframe always did. ``mode="llm"`` scores each
heuristic metric that has a judge counterpart (``faithfulness`` -> ``judge_faithfulness``) with
the judge and writes it under the heuristic metric's own name, with ``<name>_reason``,
``_status``, ``_error`` (``_std`` with ``n_samples > 1``) and ``<name>_source`` = ``"judge"``.
``mode="hybrid"`` computes the heuristic score first and sends to the judge only the rows whose
heuristic score lies in the uncertain band ``[lo, hi]``; ``<name>_source`` says ``"heuristic"`` or
``"judge"`` per row. ``metric_modes={"faithfulness": "hybrid"}`` sets the mode per metric.
Metrics without a judge counterpart (ranking measures, ``hallucination_rate``, custom metrics)
are scored the same way in every mode.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> df = pl.DataFrame({"answer": ["Paris is in France.", "Lyon is in Peru."],
...                    "contexts": [["Paris is in France."], ["Lyon is a city in France."]]})
>>> out = rf.evaluate(df, ["faithfulness"], mode="llm", judge=lambda prompt: "Claim: x\\nVerdict: yes", cache=False)
>>> out.select("faithfulness", "faithfulness_source").rows()
[(1.0, 'judge'), (1.0, 'judge')]
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.judges.templates import check_template
from ragframe.metrics import registry
from ragframe.metrics.judge import counterpart
from ragframe.metrics.registry import Metric, RunState
from ragframe.public import public
from ragframe.run.plan import RunPlan
from ragframe.schema import to_polars

__all__ = ["MODES", "HYBRID_HALF_WIDTH", "routing_summary"]

logger = logging.getLogger("ragframe.judge")

#: The values of ``mode=`` and of ``metric_modes``.
MODES = ("heuristic", "llm", "hybrid")
#: Default hybrid band: the heuristic method's threshold +- this, clipped to [0, 1].
HYBRID_HALF_WIDTH = 0.2


# ----------------------------------------------------------------------------- options


def _frozen_items(value: Any) -> Any:
    if isinstance(value, Mapping):
        return list(value.items())
    if isinstance(value, tuple) and all(isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) for v in value):
        return list(value)
    return None


def check_metric_modes(value: Any) -> dict[str, str]:
    """``metric_modes``: None or {metric with a judge counterpart: mode}."""
    if value is None:
        return {}
    items = _frozen_items(value)
    if items is None:
        raise validate.fail("metric_modes", "a dict of metric name -> 'heuristic', 'llm' or 'hybrid'", value)
    out: dict[str, str] = {}
    for name, mode in items:
        metric = registry.get_metric(name) if name in {m.name for m in registry.metrics()} else None
        if metric is None or counterpart(metric) is None:
            choices = [m.name for m in registry.metrics() if counterpart(m) is not None]
            raise InvalidParameterError(
                f"metric_modes names {name!r}, which has no judge counterpart; choose from {choices}"
            )
        out[name] = validate.choice(mode, f"metric_modes[{name!r}]", MODES)
    return out


def _band(value: Any, name: str) -> tuple[float, float]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise validate.fail(name, "a pair (lo, hi) with 0 <= lo <= hi <= 1", value)
    lo, hi = (validate.number(v, name, minimum=0.0) for v in value)
    if not lo <= hi <= 1.0:
        raise validate.fail(name, "a pair (lo, hi) with 0 <= lo <= hi <= 1", value)
    return (lo, hi)


def check_hybrid_band(value: Any) -> dict[str, tuple[float, float]]:
    """``hybrid_band``: None (around each threshold), a pair (lo, hi) for every metric ("*"), or {metric: pair}."""
    if value is None:
        return {}
    items = _frozen_items(value)
    if items is None:
        return {"*": _band(value, "hybrid_band")}
    out = {}
    for name, band in items:
        metric = registry.get_metric(name) if name in {m.name for m in registry.metrics()} else None
        if metric is None or counterpart(metric) is None:
            raise InvalidParameterError(f"hybrid_band names {name!r}, which has no judge counterpart")
        out[name] = _band(band, f"hybrid_band[{name!r}]")
    return out


# ----------------------------------------------------------------------------- planning


def route(metric: Metric, checked: RunPlan) -> str:
    """How a requested metric is scored in this run: ``"heuristic"`` (as itself), ``"llm"`` or ``"hybrid"``."""
    if counterpart(metric) is None:
        return "heuristic"
    return checked.metric_modes.get(metric.name, checked.mode)


def judged(requests: list[tuple[Metric, int | None]], checked: RunPlan) -> list[Metric]:
    """The judge metrics a run calls the judge for: those requested and the counterparts of routed ones."""
    out: list[Metric] = []
    for metric, _ in requests:
        if metric.family == "judge":
            out.append(metric)
        elif route(metric, checked) != "heuristic":
            out.append(counterpart(metric))  # type: ignore[arg-type]
    return list({m.name: m for m in out}.values())


def check_judging(requests: list[tuple[Metric, int | None]], checked: RunPlan) -> None:
    """A run that judges has a judge, and every prompt override fits the metric it replaces."""
    metrics = judged(requests, checked)
    options = checked.families["judge"]
    prompts: dict[str, str] = options["prompt"]
    budget = checked.budget
    if not metrics:
        if budget is not None:
            raise InvalidParameterError(
                "{budget} caps the judge's calls but no metric of this run is judged; pass {mode} or "
                "{mode#2}, or a judge metric (judge_faithfulness, ...)",
                mentions={"budget": "", "mode": "'llm'", "mode#2": "'hybrid'"},
            )
        if prompts:
            raise InvalidParameterError("prompt= is given but no metric of this run is judged")
        reads = any(registry.get_family(m.family).reads_judge for m, _ in requests)
        if options["judge"] is not None and not reads:  # a judge never called: the run is not what was asked
            names = [m.column(k) for m, k in requests]
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise InvalidParameterError(
                f"{{judge}} is given but no metric of this run uses it ({{mode}} scores "
                f"{shown} without a judge); pass {{mode#2}} or {{mode#3}}, a judge metric "
                "(judge_faithfulness, ...), or no judge",
                mentions={"judge": "", "mode": f"{checked.mode!r}", "mode#2": "'llm'", "mode#3": "'hybrid'"},
            )
        return
    names = [m.name for m in metrics]
    if options["judge"] is None:
        raise InvalidParameterError(
            f"{names} are scored by an LLM judge; pass {{judge}} (a callable prompt -> str, "
            "sync or async, or rf.OpenAIJudge)",
            mentions={"judge": ""},
        )
    if "*" in prompts and len(metrics) != 1:
        raise InvalidParameterError(
            f"prompt is one template but this run judges {names}; pass a dict of metric -> template"
        )
    stray = sorted(set(prompts) - {"*", *names})
    if stray:
        raise InvalidParameterError(f"prompt names {stray[0]!r}, which this run does not judge ({names})")
    for metric in metrics:
        template = prompts.get(metric.name, prompts.get("*"))
        if template is not None:
            check_template(template, metric.inputs, f"prompt for {metric.name!r}")
    if budget is not None:
        from ragframe.judges.budget import check_cost_judge

        check_cost_judge(options["judge"], budget)


# ----------------------------------------------------------------------------- scoring


def _judge_block(
    view: pl.DataFrame,
    metric: Metric,
    name: str,
    checked: RunPlan,
    state: RunState,
):
    """The judge counterpart's columns for ``view``, renamed from ``judge_<x>...`` to ``name...``."""
    family = registry.get_family("judge")
    options = checked.families["judge"]
    request = [(metric, None)]
    columns = family.columns(request, options, view.columns)
    block = family.score(view.select(list(dict.fromkeys(columns.values()))), request, options, state=state)
    return block.rename({c: name + c[len(metric.name) :] for c in block.columns})


def judgeable(view: pl.DataFrame, metric: Metric, checked: RunPlan) -> pl.Series:
    """Rows the judge would call for: no null input (and a non-blank ground truth), as the judge family reads them."""
    options = checked.families["judge"]
    columns = registry.get_family("judge").columns([(metric, None)], options, view.columns)
    ok = pl.Series([True] * view.height, dtype=pl.Boolean)
    for role, column in columns.items():
        values = view.get_column(column)
        ok = ok & values.is_not_null()
        if role == "ground_truth" and values.dtype == pl.String:
            ok = ok & (values.str.strip_chars() != "").fill_null(False)
    return ok


def inside_band(
    view: pl.DataFrame, metric: Metric, score: pl.Series, checked: RunPlan, default: float | None
) -> tuple[pl.Series, pl.Series]:
    """The rows hybrid routing sends to ``metric``'s judge (score in the band, judgeable), and the judgeable rows."""
    judge = counterpart(metric)
    assert judge is not None
    lo, hi = band(metric, checked, default)
    rows = judgeable(view, judge, checked)
    return score.is_between(lo, hi).fill_null(False) & rows, rows


def band(metric: Metric, checked: RunPlan, threshold: float | None) -> tuple[float, float]:
    """The hybrid band of ``metric``: given, else its heuristic threshold +- :data:`HYBRID_HALF_WIDTH`."""
    bands = checked.hybrid_band
    if metric.name in bands or "*" in bands:
        return bands.get(metric.name, bands.get("*"))
    centre = 0.5 if threshold is None else threshold
    return (max(0.0, centre - HYBRID_HALF_WIDTH), min(1.0, centre + HYBRID_HALF_WIDTH))


def routed_columns(
    view: pl.DataFrame,
    metric: Metric,
    mode: str,
    heuristic: list[pl.Series] | None,
    thresholds: tuple[float | None, float | None],
    checked: RunPlan,
    state: RunState,
) -> tuple[list[pl.Series], Any]:
    """The columns of a metric scored in ``mode`` ("llm" or "hybrid") and its pass threshold (per row in hybrid).

    ``heuristic`` is the heuristic score column and its companions (hybrid only);
    ``thresholds`` is (the threshold given by the caller, the heuristic method's default);
    ``state`` is the call's :class:`~ragframe.metrics.registry.RunState` (a budgeted run's draw in it).
    """
    judge = counterpart(metric)
    assert judge is not None  # route() sends only metrics with a counterpart
    name = metric.name
    given, default = thresholds
    if mode == "llm":
        block = _judge_block(view, judge, name, checked, state)
        source = pl.Series(f"{name}_source", ["judge"] * view.height, dtype=pl.String)
        return [*block.get_columns(), source], given if given is not None else judge.threshold
    assert heuristic is not None
    score, companions = heuristic[0], heuristic[1:]
    lo, hi = band(metric, checked, default)
    inside, judgeable_rows = inside_band(view, metric, score, checked, default)
    rows = np.flatnonzero(inside.to_numpy())
    if state.budget is not None:  # the budget's draw over the rows judged
        state = state.with_budget(state.budget.subset(inside.to_numpy()))
    block = _judge_block(view.filter(inside), judge, name, checked, state)
    n = view.height
    error = (
        pl.when(score.is_null())
        .then(pl.lit("no heuristic score: not sent to the judge"))
        .when(~judgeable_rows)
        .then(pl.lit(f"null input ({', '.join(judge.inputs)}): not sent to the judge"))
        .otherwise(pl.lit(f"heuristic score outside the hybrid band [{lo:g}, {hi:g}]: not sent to the judge"))
    )
    base = {
        name: score.clone(),
        f"{name}_reason": pl.Series([None] * n, dtype=pl.String),
        f"{name}_status": pl.Series(["skipped"] * n, dtype=pl.String),
        f"{name}_error": pl.select(error.alias("e")).to_series() if n else pl.Series([], dtype=pl.String),
        f"{name}_std": pl.Series([None] * n, dtype=pl.Float64),
    }
    merged = [base[c].rename(c).scatter(rows, block[c]) for c in block.columns]
    source = pl.Series(f"{name}_source", ["heuristic"] * n, dtype=pl.String).scatter(rows, "judge")
    _log_saved(name, n, len(rows), checked.families["judge"]["n_samples"])
    threshold: Any = given
    if given is None and default is not None and judge.threshold is not None:
        threshold = pl.Series(np.where(inside.to_numpy(), judge.threshold, default), dtype=pl.Float64)
    return [merged[0], *companions, *merged[1:], source], threshold


def _log_saved(name: str, rows: int, judged_rows: int, n_samples: int) -> None:
    if rows:
        logger.info(
            "hybrid routing: %s: %d of %d rows sent to the judge, %d judge calls saved",
            name,
            judged_rows,
            rows,
            (rows - judged_rows) * n_samples,
        )


@public
def routing_summary(scored: Any, *, n_samples: int = 1) -> pl.DataFrame:
    """How many rows each routed metric sent to the judge, and how many judge calls that saved.

    Reads the ``<metric>_source`` columns that :func:`ragframe.evaluate` writes in ``"llm"`` and
    ``"hybrid"`` mode (any prefix), so it works on a saved output as on a fresh one.

    Parameters
    ----------
    scored : frame
        An output of :func:`ragframe.evaluate` (any frame kind) or :func:`ragframe.read_scores`.
    n_samples : int
        The run's ``n_samples``: each row decided by the heuristic saved that many calls.

    Returns
    -------
    polars.DataFrame
        One row per routed score column: ``metric, rows, judged, heuristic, calls_saved,
        saved_share`` (the share of rows that did not go to the judge). A frame without
        any ``<metric>_source`` column (scored in the default heuristic mode, or not scored)
        is a :class:`~ragframe.exceptions.SchemaError`: there is nothing to read.

    Examples
    --------
    >>> import polars as pl
    >>> out = pl.DataFrame({"faithfulness": [0.9, 0.5, 0.1],
    ...                     "faithfulness_source": ["heuristic", "judge", "heuristic"]})
    >>> routing_summary(out).row(0)
    ('faithfulness', 3, 1, 2, 2, 0.6666666666666666)
    """
    n_samples = validate.positive_int(n_samples, "n_samples")
    frame = to_polars(scored)
    rows = []
    for column in frame.columns:
        base = column.removesuffix("_source")
        if base == column or base not in frame.columns or registry.parse_column(base) is None:
            continue
        source = frame.get_column(column)
        judged_rows = int((source == "judge").sum())
        heuristic_rows = int((source == "heuristic").sum())
        total = frame.height
        rows.append(
            (
                base,
                total,
                judged_rows,
                heuristic_rows,
                heuristic_rows * n_samples,
                heuristic_rows / total if total else None,
            )
        )
    if not rows:
        raise SchemaError(
            "no routed score column: it reads the <metric>_source columns rf.evaluate writes with {mode} or "
            "'hybrid' (beside their score columns), and this frame has none",
            available=frame.columns,
            mentions={"mode": "'llm'"},
        )
    schema = {
        "metric": pl.String,
        "rows": pl.Int64,
        "judged": pl.Int64,
        "heuristic": pl.Int64,
        "calls_saved": pl.Int64,
        "saved_share": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")
