"""Prediction-powered estimates for systems: each system's rate, the difference between two, a ranking.

ARES (Saad-Falcon et al. 2024) ranks RAG systems by a judge's scores corrected with a few
human labels: prediction-powered inference (:func:`ragframe.estimate`). Here the frame holds
one row per (system, query): a ``prediction`` (a judge or heuristic score) on every row and a
human ``label`` on a few. Each system's rate is :func:`ragframe.estimate` over its rows. The
difference between two systems is a PPI mean of the per-query differences: on the queries
both systems have labels for, ``label_1 - label_2`` is the labelled difference and
``prediction_1 - prediction_2`` its prediction, on every other query only the prediction
difference is used (ppi_py's ``ppi_mean_ci`` on those differences: a paired design, which is
narrower than two independent intervals when the systems' errors are correlated). A ranking
places each system between the number of systems significantly better and of those
significantly worse (``docs/assessors.md``).
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.public import public
from ragframe.schema import first_true_row, to_polars
from ragframe.stats.estimate import ESTIMATE_METHODS, estimate

__all__ = ["estimate_systems"]
_AFFINE = ("estimate", "ci_low", "ci_high", "classical_estimate", "classical_ci_low", "classical_ci_high")


def _difference(wide: pl.DataFrame, one: str, two: str, method: str, alpha: float) -> pl.DataFrame:
    """PPI estimate of mean(label_one - label_two) over the queries, from the paired differences.

    The differences lie in [-1, 1]; :func:`estimate` takes labels in [0, 1], so it gets
    ``(d + 1) / 2`` for labels and predictions alike, and the results are mapped back
    (``2 x - 1`` for estimates and bounds; lambda and the variance ratio are unchanged by an
    affine map applied to both).
    """
    y1, y2 = pl.col(f"label|{one}"), pl.col(f"label|{two}")
    f1, f2 = pl.col(f"prediction|{one}"), pl.col(f"prediction|{two}")
    pairs = wide.select(
        (((y1 - y2) + 1.0) / 2.0).alias("y"),  # null unless both systems are labelled on the query
        (((f1 - f2) + 1.0) / 2.0).alias("f"),
    )
    out = estimate(pairs, prediction="f", label="y", method=method, alpha=alpha)
    return out.with_columns((pl.col(c) * 2.0 - 1.0).alias(c) for c in _AFFINE)


@public
def estimate_systems(
    frame: Any,
    /,
    *,
    prediction: str,
    label: str,
    system: str = "run_id",
    on: str = "query_id",
    method: str = "ppi++",
    alpha: float = 0.05,
    pairs: bool = False,
) -> pl.DataFrame:
    """PPI estimates per system and a ranking, or of the differences between systems.

    Parameters
    ----------
    frame : frame
        One row per (``system``, ``on``): ``prediction`` on every row, ``label`` (in [0, 1]:
        0/1 or a share) on the labelled ones, null elsewhere. Every system must answer the
        same queries. The labelled queries should be a uniform random sample of them.
    prediction, label : str
        Score and human label columns (as :func:`ragframe.estimate` reads them).
    system, on : str
        System and query columns.
    method : {"ppi++", "ppi", "classical"}
        As :func:`ragframe.estimate`.
    alpha : float
        Error level of the intervals (and of "significantly better" in the ranking).
    pairs : bool
        Return one row per pair of systems instead: the difference ``system_1 - system_2``.

    Returns
    -------
    polars.DataFrame
        Per system (sorted by estimate, best first): ``system``'s column, :func:`ragframe.estimate`'s
        columns, ``rank`` (1 for the highest estimate), ``rank_best`` and ``rank_worst``
        (1 + the systems whose difference from it is significantly positive; the number of
        systems minus those significantly below it: no correction for the many pairs). With
        ``pairs=True``: ``system_1``, ``system_2``, the estimate's columns for the difference,
        and ``significant`` (the interval excludes 0).

    Raises
    ------
    SchemaError
        A missing column, a (system, query) twice, a system without a query others have,
        or a bad label or prediction (as :func:`ragframe.estimate`).
    InvalidParameterError
        Fewer than two systems, or a bad option.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({
    ...     "run_id": ["a"] * 6 + ["b"] * 6, "query_id": list("123456") * 2,
    ...     "judge": [0.9, 0.8, 0.7, 0.9, 0.6, 0.8, 0.4, 0.5, 0.3, 0.6, 0.2, 0.4],
    ...     "human": [1, 1, 1, None, None, None, 0, 1, 0, None, None, None],
    ... })
    >>> out = rf.estimate_systems(df, prediction="judge", label="human", method="ppi", pairs=True)
    >>> out.select("system_1", "system_2", "n_labeled", "n_unlabeled").row(0)
    ('a', 'b', 3, 3)
    >>> round(out["estimate"].item(), 4)  # mean prediction gap 0.3833, corrected by the labelled gap
    0.6333
    """
    method = validate.choice(method, "method", ESTIMATE_METHODS)
    alpha = validate.confidence(alpha, "alpha")
    for name, value in (("prediction", prediction), ("label", label), ("system", system), ("on", on)):
        validate.column_name(value, name)
    pairs = validate.flag(pairs, "pairs")
    df = to_polars(frame, list(dict.fromkeys([system, on, prediction, label])))
    for column in (system, on):
        at = first_true_row(df.get_column(column).is_null())
        if at is not None:
            raise SchemaError("null id", column=column, row=at, expected="a value", found="null")
    at = first_true_row(~df.select(pl.struct(system, on).is_first_distinct()).to_series())
    if at is not None:
        raise SchemaError(
            "the same (system, query) twice",
            column=on,
            row=at,
            expected="one row per system and query",
            found=f"{df[at, system]!r}, {df[at, on]!r}",
        )
    names = sorted(df.get_column(system).unique().to_list())
    if len(names) < 2:
        raise InvalidParameterError(f"need at least two systems, found {len(names)}")
    per_system = estimate(df, prediction=prediction, label=label, method=method, alpha=alpha, by=system)
    keyed = df.with_columns(pl.col(system).cast(pl.String))
    wide = keyed.pivot(on=system, index=on, values=[prediction, label], separator="|").sort(on)
    wide = wide.rename(
        {c: c.replace(f"{prediction}|", "prediction|", 1) for c in wide.columns if c.startswith(f"{prediction}|")}
    )
    wide = wide.rename({c: c.replace(f"{label}|", "label|", 1) for c in wide.columns if c.startswith(f"{label}|")})
    predictions = wide.select(pl.col("^prediction\\|.*$"))
    missing = predictions.select(pl.any_horizontal(pl.all().is_null())).to_series()
    at = first_true_row(missing)
    if at is not None:
        absent = [c.split("|", 1)[1] for c in predictions.columns if predictions[at, c] is None]
        raise SchemaError(
            f"system {absent[0]!r} has no row for a query other systems answer",
            column=on,
            expected="every system on every query",
            found=repr(wide[at, on]),
        )
    text = [str(n) for n in names]
    rows = []
    for one, two in combinations(text, 2):
        diff = _difference(wide, one, two, method, alpha)
        rows.append(pl.DataFrame({"system_1": [one], "system_2": [two]}).hstack(diff))
    differences = pl.concat(rows).with_columns(
        ((pl.col("ci_low") > 0) | (pl.col("ci_high") < 0)).fill_null(False).alias("significant")
    )
    if pairs:
        return differences
    better = {n: 0 for n in text}
    worse = {n: 0 for n in text}
    for one, two, low, high in differences.select("system_1", "system_2", "ci_low", "ci_high").iter_rows():
        if low is not None and low > 0:
            better[two] += 1
            worse[one] += 1
        elif high is not None and high < 0:
            better[one] += 1
            worse[two] += 1
    label_of = pl.col(system).cast(pl.String)
    out = per_system.sort("estimate", descending=True, nulls_last=True).with_columns(
        pl.int_range(1, pl.len() + 1).cast(pl.Int64).alias("rank"),
        (label_of.replace_strict(better, return_dtype=pl.Int64) + 1).alias("rank_best"),
        (len(text) - label_of.replace_strict(worse, return_dtype=pl.Int64)).alias("rank_worst"),
    )
    return out
