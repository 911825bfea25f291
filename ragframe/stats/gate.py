"""A CI gate: checks that fail when a metric regressed, fell below a minimum, or cannot be checked.

:func:`gate` is the rule ``ragframe gate`` applies, as a library function that returns a
tidy frame of checks (the command line only prints it). A check that cannot check what it
was asked to check (a metric missing on one side, no value, no shared ids) is a failed
check whose ``reason`` says which metric and why; a gate with nothing to check at all is
an error.

The frames are passed by name, ``gate(baseline=..., current=...)``: until this release the
signature was ``gate(current, baseline)``, the reverse of :func:`ragframe.regressions` and
:func:`ragframe.compare`. A positional call is refused with an error that says so, rather
than read in the new order: swapped sides turn every regression into an improvement and
let a broken build pass, silently.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.metrics import score_columns
from ragframe.public import public
from ragframe.schema import to_polars
from ragframe.stats.options import DEFAULTS, ComparisonOptions, max_drop_from
from ragframe.stats.pairing import same_id_types
from ragframe.stats.regressions import regressions
from ragframe.stats.summary import is_summary, summarize

__all__ = ["gate", "GATE_SCHEMA"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: The columns of :func:`gate`'s result.
GATE_SCHEMA = {
    "check": pl.String,
    "metric": pl.String,
    "passed": pl.Boolean,
    "reason": pl.String,
    "mode": pl.String,
    "baseline": pl.Float64,
    "current": pl.Float64,
    "delta": pl.Float64,
    "max_drop": pl.Float64,
    "n": pl.Int64,
    "p_value": pl.Float64,
    "p_adjusted": pl.Float64,
    "significant": pl.Boolean,
    "exceeds_max_drop": pl.Boolean,
    "minimum": pl.Float64,
}


def _frames_by_name(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Refuse positional frames with an error naming the order change (see the module doc)."""

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> _R:
        if args:
            raise InvalidParameterError(
                f"gate: pass the frames by name, gate(baseline=..., current=...); got {len(args)} positional "
                "argument(s). gate(current, baseline) was the order before; it is now baseline then current, as "
                "in regressions(baseline, current) and compare(a, b), and positional frames are refused so that "
                "an old call cannot swap the sides silently"
            )
        return function(**kwargs)

    return checked  # type: ignore[return-value]


@public(rename={"a": "baseline", "b": "current"})
@_frames_by_name
def gate(
    *,
    baseline: Any = None,
    current: Any,
    on: str | Sequence[str] = DEFAULTS.on,
    metrics: str | Sequence[str] | None = DEFAULTS.metrics,
    test: str = DEFAULTS.test,
    alpha: float = DEFAULTS.alpha,
    correction: str | None = DEFAULTS.correction,
    how: str = DEFAULTS.how,
    n_resamples: int = DEFAULTS.n_resamples,
    seed: int | None = DEFAULTS.seed,
    max_drop: float = DEFAULTS.max_drop,
    significance: bool = DEFAULTS.significance,
    minimums: Mapping[str, float] | None = None,
    threshold: float | None = None,
) -> pl.DataFrame:
    """Check ``current`` against a ``baseline`` (no regression) and ``minimums`` (mean floors).

    The frames are named, baseline then current (the order of :func:`ragframe.regressions`
    and of ``a``, ``b`` in :func:`ragframe.compare`); a positional call is an
    :class:`InvalidParameterError` (the order was current, baseline before: see the module
    doc). The options are named, defaulted and checked as in
    :class:`ragframe.stats.options.ComparisonOptions`, in its order.

    Parameters
    ----------
    baseline : frame or path, optional
        Baseline per-row scores or summary. Both per-row: ``mode="paired"``, the rule of
        :func:`ragframe.regressions` on ids ``on`` (a drop of the mean by more than
        ``max_drop`` that is significant, or any such drop with ``significance=False``).
        Otherwise ``mode="summary"`` (a per-row side is summarised): the seed's rule, a
        drop of the mean by more than ``max_drop`` fails.
    current : frame or path
        Current per-row scores or a summary (:func:`ragframe.summarize`); a path is read
        with :func:`ragframe.read_scores`.
    on, test, alpha, correction, how, n_resamples, seed
        The paired test, as in :func:`ragframe.compare` (paired mode only; checked always).
    metrics : str or list of str, optional
        Metrics checked for regressions, each required on both sides. Default: every
        metric of the baseline (score columns, or summary rows), each required in
        ``current``; metrics only in ``current`` are new and not checked.
    max_drop : float
        Largest allowed drop of a metric's mean (>= 0).
    significance : bool
        Paired mode: a regression must be significant (default) or only exceed ``max_drop``.
    minimums : mapping of str to float, optional
        Floors: a metric whose mean over the non-null values of ``current`` is below its
        floor fails.
    threshold : float, optional
        Deprecated name of ``max_drop`` (a :class:`DeprecationWarning`; removed in the next
        release): ``threshold`` now means a pass mark only, as in ``score_*``.

    Returns
    -------
    polars.DataFrame
        One row per check (:data:`GATE_SCHEMA`): ``check`` ("regression" or "minimum"),
        ``metric``, ``passed``, ``reason`` (why, in words), ``mode`` ("paired",
        "summary" or "none" without a baseline), ``baseline, current, delta`` (means;
        ``current`` is the mean a minimum is checked on), ``max_drop``, ``n, p_value,
        p_adjusted, significant`` (paired mode), ``exceeds_max_drop`` and ``minimum``.
        The gate passes when ``passed.all()``. Failed checks that could not check: a
        metric missing on one side, a metric without non-null values, no shared ids (with
        ``how="inner"``), a drop beyond ``max_drop`` too small a sample to test, a
        ``minimums`` metric absent.

    Raises
    ------
    InvalidParameterError
        A bad parameter, frames passed by position, or neither ``baseline`` nor
        ``minimums`` (nothing to check).
    SchemaError
        No metric to check at all; a grouped summary (several rows for a metric); bad ids.

    Examples
    --------
    >>> import polars as pl
    >>> base = pl.DataFrame({"id": [1, 2, 3, 4], "mrr": [0.9, 0.8, 0.7, 0.9]})
    >>> now = pl.DataFrame({"id": [1, 2, 3, 4], "mrr": [0.5, 0.4, 0.4, 0.5]})
    >>> checks = gate(baseline=base, current=now, minimums={"mrr": 0.3})
    >>> checks.select("check", "metric", "passed").rows()
    [('regression', 'mrr', False), ('minimum', 'mrr', True)]
    >>> checks["reason"][0]
    'mrr: mean dropped by 0.3750 (0.8250 -> 0.4500, n 4), more than 0.05; significant (p_adjusted 0.0006)'
    """
    options = ComparisonOptions.check(
        on=on,
        metrics=metrics,
        test=test,
        alpha=alpha,
        correction=correction,
        how=how,
        n_resamples=n_resamples,
        seed=seed,
        max_drop=max_drop_from(max_drop, threshold),
        significance=significance,
    )
    wanted = None if options.metrics is None else list(options.metrics)
    floors = _check_minimums(minimums)
    if baseline is None and not floors:
        raise InvalidParameterError("nothing to check; pass a baseline, minimums, or both")
    now = _read(current)
    checks: list[dict[str, Any]] = []
    mode = "none"
    if baseline is not None:
        base = _read(baseline)
        mode = "summary" if is_summary(now.columns) or is_summary(base.columns) else "paired"
        if mode == "summary":
            checks += _summary_checks(base, now, wanted, options.max_drop)
        else:
            checks += _paired_checks(base, now, wanted, options)
    checks += _minimum_checks(now, floors)
    if not checks:
        raise SchemaError("nothing to check: the baseline has no score column")
    return pl.DataFrame(checks, schema=GATE_SCHEMA).with_columns(pl.lit(mode).alias("mode"))


def _check_minimums(minimums: Any) -> dict[str, float]:
    if minimums is None:
        return {}
    if not isinstance(minimums, Mapping):
        raise validate.fail("minimums", "a mapping of metric name to floor", minimums)
    return {
        validate.column_name(metric, "minimums"): validate.number(floor, f"minimums[{metric!r}]")
        for metric, floor in minimums.items()
    }


def _read(frame: Any) -> pl.DataFrame:
    """A side of the gate as a polars frame; a path is read with :func:`ragframe.read_scores`."""
    if isinstance(frame, (str, os.PathLike)):
        from ragframe.io.scores import read_scores

        return read_scores(frame)
    return to_polars(frame)


def _failed(check: str, metric: str, reason: str, **values: Any) -> dict[str, Any]:
    return {"check": check, "metric": metric, "passed": False, "reason": f"{metric}: {reason}", **values}


def _one_sided(base_metrics: list[str], current_metrics: list[str], wanted: list[str] | None, max_drop: float):
    """(metrics on both sides, failed checks for the metrics asked that one side lacks)."""
    asked = wanted if wanted is not None else base_metrics
    failed = []
    for metric in asked:
        if metric not in base_metrics:
            failed.append(_failed("regression", metric, "not in the baseline: cannot check", max_drop=max_drop))
        elif metric not in current_metrics:
            failed.append(_failed("regression", metric, "in the baseline but not in current", max_drop=max_drop))
    missing = {c["metric"] for c in failed}
    return [m for m in asked if m not in missing], failed


def _drop_text(row: Mapping[str, Any], max_drop: float, paired: bool) -> str:
    """'mean dropped by 0.1 (0.8 -> 0.7, n 40), more than 0.05' and variants."""
    delta = row["delta"]
    n = f", n {row['n']}" if paired else ""
    span = f"({row['baseline']:.4f} -> {row['current']:.4f}{n})"
    if delta < -max_drop:
        return f"mean dropped by {-delta:.4f} {span}, more than {max_drop:g}"
    return f"mean changed by {delta:+.4f} {span}, within the allowed drop {max_drop:g}"


def _summary_of(frame: pl.DataFrame, names: list[str] | None) -> pl.DataFrame:
    """``metric, mean`` of a summary (one row per metric) or of per-row scores (summarised)."""
    if is_summary(frame.columns):
        repeated = frame.filter(pl.col("metric").is_duplicated())["metric"].unique(maintain_order=True).to_list()
        if repeated:
            raise SchemaError(
                f"a summary with several rows for metric(s) {repeated} (grouped?): the gate needs one row per metric",
                column="metric",
            )
        return frame.select("metric", pl.col("mean").cast(pl.Float64))
    present = [c for c in (names if names is not None else score_columns(frame.schema)) if c in frame.columns]
    if not present:
        return pl.DataFrame(schema={"metric": pl.String, "mean": pl.Float64})
    return summarize(frame, metrics=present, stats=["mean"])


def _summary_checks(
    base: pl.DataFrame, now: pl.DataFrame, wanted: list[str] | None, max_drop: float
) -> list[dict[str, Any]]:
    """The seed's rule on the two sides' means."""
    base_summary, now_summary = _summary_of(base, wanted), _summary_of(now, wanted)
    shared, checks = _one_sided(base_summary["metric"].to_list(), now_summary["metric"].to_list(), wanted, max_drop)
    if not shared:
        return checks
    found = regressions(base_summary, now_summary, max_drop=max_drop, metrics=shared)
    for row in found.iter_rows(named=True):  # one row per metric: reporting, not a hot path
        values = {k: row[k] for k in ("baseline", "current", "delta")} | {"max_drop": max_drop}
        for side in ("baseline", "current"):
            if row[side] is None:
                checks.append(_failed("regression", row["metric"], f"no non-null value in the {side}", **values))
                break
        else:
            text = _drop_text(row, max_drop, paired=False)
            values["exceeds_max_drop"] = row["regressed"]
            checks.append(
                {"check": "regression", "metric": row["metric"], "passed": not row["regressed"], **values}
                | {"reason": f"{row['metric']}: {text}"}
            )
    return _in_order(checks, wanted if wanted is not None else base_summary["metric"].to_list())


def _in_order(checks: list[dict[str, Any]], order: list[str]) -> list[dict[str, Any]]:
    rank = {metric: i for i, metric in enumerate(order)}
    return sorted(checks, key=lambda c: rank.get(c["metric"], len(rank)))


def _paired_checks(
    base: pl.DataFrame, now: pl.DataFrame, wanted: list[str] | None, options: ComparisonOptions
) -> list[dict[str, Any]]:
    """The paired rule of :func:`ragframe.regressions`; no pairs or no test is a failed check."""
    ids, max_drop = list(options.on), options.max_drop
    base_metrics = [c for c in score_columns(base.schema) if c not in ids]
    shared, checks = _one_sided(
        base_metrics if wanted is None else [c for c in wanted if c in base.columns], now.columns, wanted, max_drop
    )
    if not shared:
        return checks
    found = regressions(
        base, now, metrics=shared, max_drop=max_drop, significance=options.significance, **options.paired_test()
    )
    no_ids = found["n"].eq(0).any() and _shared_ids(base, now, ids) == 0
    for row in found.iter_rows(named=True):  # one row per metric: reporting, not a hot path
        values = {k: row[k] for k in ("baseline", "current", "delta", "n", "p_value", "p_adjusted", "significant")}
        values |= {"max_drop": max_drop, "exceeds_max_drop": row["exceeds_max_drop"]}
        checks.append(_paired_check(row, values, no_ids, options))
    return _in_order(checks, wanted if wanted is not None else base_metrics)


def _paired_check(
    row: Mapping[str, Any], values: dict[str, Any], no_ids: bool, options: ComparisonOptions
) -> dict[str, Any]:
    """One metric's paired check: no pairs, an untestable drop, a regression, or a pass."""
    metric = row["metric"]
    if row["n"] == 0:
        why = "no id is in both baseline and current" if no_ids else "no id has a non-null score on both sides"
        return _failed("regression", metric, f"no pair to compare: {why}", **values)
    text = _drop_text(row, options.max_drop, paired=True)
    if not options.significance or not row["exceeds_max_drop"]:
        return {"check": "regression", "metric": metric, "passed": not row["regressed"], **values} | {
            "reason": f"{metric}: {text}"
        }
    if row["p_adjusted"] is None:
        return _failed("regression", metric, f"{text}; {row['n']} pair(s) are too few to test it", **values)
    p = f"p_adjusted {row['p_adjusted']:.4f}"
    if row["regressed"]:
        return _failed("regression", metric, f"{text}; significant ({p})", **values)
    reason = f"{metric}: {text}; not significant ({p} >= alpha {options.alpha:g})"
    return {"check": "regression", "metric": metric, "passed": True, **values, "reason": reason}


def _shared_ids(base: pl.DataFrame, now: pl.DataFrame, ids: list[str]) -> int:
    left, right = same_id_types(base.select(ids), now.select(ids), ids)
    return left.join(right, on=ids, how="semi").height


def _minimum_checks(now: pl.DataFrame, floors: dict[str, float]) -> list[dict[str, Any]]:
    """A floor per metric on the mean of ``current``; a metric absent or without values fails."""
    if not floors:
        return []
    summary = _summary_of(now, list(floors))
    means = dict(zip(summary["metric"].to_list(), summary["mean"].to_list()))
    checks = []
    for metric, floor in floors.items():  # one row per floor: reporting, not a hot path
        if metric not in means:
            checks.append(_failed("minimum", metric, "not in current", minimum=floor))
            continue
        mean = means[metric]
        if mean is None:
            checks.append(_failed("minimum", metric, "no non-null value in current", minimum=floor))
            continue
        passed = mean >= floor
        text = f"mean {mean:.4f} {'>=' if passed else 'is below'} the minimum {floor:g}"
        checks.append(
            {"check": "minimum", "metric": metric, "passed": passed, "reason": f"{metric}: {text}"}
            | {"current": mean, "minimum": floor}
        )
    return checks
