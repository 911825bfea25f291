"""A ranking measure over its cutoffs: mean metric@k against k, one curve per run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.metrics import parse_column
from ragframe.metrics.registry import metrics as registered
from ragframe.plot._frames import read_frame, require_rows
from ragframe.plot._matplotlib import new_figure
from ragframe.public import public
from ragframe.schema import frame_schema
from ragframe.stats.summary import prepare_scores

__all__ = ["ranking_curve"]


@public
def ranking_curve(
    runs: Any, metric: str = "ndcg", *, k: int | Sequence[int] | None = None, title: str | None = None
) -> Any:
    """Mean ``metric@k`` over ``k`` for one or more runs.

    Parameters
    ----------
    runs : frame or dict of str to frame
        One run, or runs by name. Each is per-query (:func:`ragframe.evaluate_run` or
        :func:`ragframe.score_retrieval` output, columns ``ndcg_at_1``, ``ndcg_at_5``, ...;
        the mean over queries with a value is plotted, nulls left out as
        :func:`ragframe.run_summary` leaves them out) or :func:`ragframe.run_summary`
        output (one row with ``num_q``: plotted as it is). Any frame kind. Prefixed columns
        (``bm25_ndcg_at_10``) give one curve per prefix.
    metric : str
        A cutoff measure: ``"ndcg"``, ``"precision"``, ``"recall"``, ``"f1"``,
        ``"hit_rate"``, ``"recall_all"``, ``"mrr"`` (or its registry name ``"ndcg_at_k"``).
    k : int or list of int, optional
        The cutoffs drawn (each must be a column of every run); default every cutoff found.
    title : str, optional
        Axes title.

    Returns
    -------
    matplotlib.figure.Figure
        One axes; one line per run (label = run name, gid = run name) with a marker at each k.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> run = pl.DataFrame({"ndcg_at_1": [1.0, 0.0], "ndcg_at_5": [0.8, 0.4], "mrr": [1.0, 0.5]})
    >>> fig = rf.plot.ranking_curve({"bm25": run})
    >>> line = fig.axes[0].lines[0]
    >>> line.get_label(), line.get_xdata().tolist(), line.get_ydata().tolist()
    ('bm25', [1, 5], [0.5, 0.6000000000000001])
    """
    base = _measure(metric)
    wanted = None if k is None else validate.k_list(k, "k")
    named = _named(runs)
    curves = [(label, ks, means) for name, frame in named.items() for label, ks, means in _curves(name, frame, base)]
    if wanted is not None:
        curves = [(label, *_pick(label, ks, means, wanted, base)) for label, ks, means in curves]
    fig, (ax,) = new_figure(width=8.0, height=4.5)
    for label, ks, means in curves:
        ax.plot(ks, means, marker="o", label=label, gid=label)
    every_k = sorted({int(x) for _, ks, _ in curves for x in ks})
    if every_k[-1] / every_k[0] >= 20:
        ax.set_xscale("log")
    ax.set_xticks(every_k, [str(x) for x in every_k])
    ax.minorticks_off()
    ax.set_xlabel("k (cutoff)")
    ax.set_ylabel(f"mean {base}@k")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="best")
    ax.set_title(title or f"{base}@k by cutoff", fontsize=11)
    return fig


def _measure(metric: Any) -> str:
    cutoffs = [m.name.removesuffix("_at_k") for m in registered() if m.cutoff]
    name = validate.column_name(metric, "metric").removesuffix("_at_k")
    if name not in cutoffs:
        raise validate.fail("metric", f"a cutoff measure, one of {cutoffs}", metric)
    return name


def _named(runs: Any) -> dict[str, Any]:
    if not isinstance(runs, Mapping):
        return {"run": runs}
    if not runs:
        raise validate.fail("runs", "a frame or a non-empty dict of frames", runs)
    for name in runs:
        validate.column_name(name, "runs key")
    return dict(runs)


def _curves(name: str, frame: Any, base: str) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """One (label, ks, means) per column prefix of ``base@k`` in ``frame``, ks ascending."""
    schema = frame_schema(frame)
    found: dict[str, list[tuple[int, str]]] = {}
    for column in schema:
        parsed = parse_column(column)
        if parsed is not None and parsed.k is not None and parsed.metric.name == f"{base}_at_k":
            found.setdefault(parsed.prefix, []).append((parsed.k, column))
    if not found:
        raise SchemaError(f"no {base}_at_<k> column in run {name!r}", column=f"{base}_at_k", available=schema)
    columns = [c for pairs in found.values() for _, c in pairs]
    df = read_frame(frame, columns)
    require_rows(df, f"run {name!r}")
    prepare_scores(df, columns, None)  # numeric, no NaN
    means = df.select(pl.col(columns).mean())  # nulls left out; rf.run_summary's one row is its own mean
    out = []
    for prefix, pairs in found.items():
        pairs.sort()
        label = name if len(found) == 1 else f"{name} {prefix}".strip()
        values = means.select([c for _, c in pairs]).cast(pl.Float64).row(0)
        ks = np.array([k for k, _ in pairs])
        ys = np.array([np.nan if v is None else v for v in values], dtype=float)
        if np.isnan(ys).all():
            raise SchemaError(f"every {base}@k of run {name!r} is null: nothing to plot", column=pairs[0][1])
        out.append((label, ks, ys))
    return out


def _pick(label: str, ks: np.ndarray, means: np.ndarray, wanted: list[int], base: str) -> tuple[np.ndarray, ...]:
    missing = [k for k in wanted if k not in set(ks.tolist())]
    if missing:
        raise InvalidParameterError(
            f"{{k}} has no column {base}_at_{missing[0]} in run {label!r}; it has {{k#2}}",
            mentions={"k": f"{missing[0]}", "k#2": f"{ks.tolist()}"},
        )
    keep = np.isin(ks, wanted)
    return ks[keep], means[keep]
