"""Do two label sets (or two metrics) rank the same systems the same way?

``a`` and ``b`` hold per-query scores of the same systems (one row per system and query, as
:func:`ragframe.evaluate_run` gives them with a ``run_id`` column added); ``a`` is the
reference (people's qrels), ``b`` the candidate (an LLM's qrels, another metric). The
systems are ranked by their mean score over the queries both frames hold, and the two
rankings compared: Kendall's tau (tau-b, ``scipy.stats.kendalltau``), tau_ap (Yilmaz,
Aslam and Robertson 2008: swaps near the top weigh more) and Spearman's rho
(``scipy.stats.spearmanr``), each with a percentile bootstrap interval over queries (the
same queries resampled for ``a`` and ``b``), and the pairs of systems the two order
differently, with paired t-test p-values on each side (``docs/assessors.md``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.kernels.resampling import percentile_interval
from ragframe.public import public
from ragframe.schema import first_true_row, id_dtype_ok, to_polars

__all__ = ["ranking_agreement", "kendall_tau_b", "tau_ap"]

_CELLS = 8_000_000  # (resample, system, system) cells of tau_ap held at once


def _snap(means: np.ndarray) -> np.ndarray:
    """Means rounded to 12 significant digits of each row's largest: equal means summed in another order tie."""
    scale = np.abs(means).max(axis=1, keepdims=True)
    scale = np.where(scale > 0, scale, 1.0)
    return np.round(means / scale, 12) * scale


def _pair_signs(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sign of (system i - system j) for every i < j, shape (resamples, pairs), and the pair indexes."""
    i, j = np.triu_indices(means.shape[1], k=1)
    return np.sign(means[:, i] - means[:, j]), np.stack([i, j])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between the rows of ``x`` and ``y`` (shape (resamples, systems)).

    Equals ``scipy.stats.kendalltau(x[r], y[r])`` (its default variant, tie-corrected); NaN
    where either row is constant.

    Examples
    --------
    >>> import numpy as np
    >>> kendall_tau_b(np.array([[1.0, 2.0, 3.0]]), np.array([[1.0, 3.0, 2.0]])).round(4).tolist()
    [0.3333]
    """
    sx, _ = _pair_signs(x)
    sy, _ = _pair_signs(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=1) / np.sqrt(np.abs(sx).sum(axis=1) * np.abs(sy).sum(axis=1))


def tau_ap(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """AP rank correlation (Yilmaz et al. 2008) of the ``candidate`` ranking against the ``reference``.

    Both are (resamples, systems) scores, higher ranked first. Walking down the candidate's
    ranking, the system at position ``i`` (``i >= 2``) contributes the share of the
    ``i - 1`` systems above it that the reference also puts above it; tau_ap is
    ``2 / (N - 1) * sum(C(i) / (i - 1)) - 1``: 1 for the same ranking, -1 for the reverse,
    and, unlike Kendall's tau, a swap near the top costs more than one near the bottom. It is
    not symmetric. A pair tied in either ranking counts half (candidate ties are walked in
    system order).

    Examples
    --------
    >>> import numpy as np
    >>> ref = np.array([[4.0, 3.0, 2.0, 1.0]])
    >>> first = tau_ap(ref, np.array([[3.0, 4.0, 2.0, 1.0]]))[0]
    >>> last = tau_ap(ref, np.array([[4.0, 3.0, 1.0, 2.0]]))[0]
    >>> round(float(first), 12), round(float(last), 12)
    (0.333333333333, 0.777777777778)
    """
    n = reference.shape[1]
    order = np.argsort(-candidate, axis=1, kind="stable")
    ref = np.take_along_axis(reference, order, axis=1)  # reference scores in the candidate's order
    cand = np.take_along_axis(candidate, order, axis=1)
    above = ref[:, None, :] > ref[:, :, None]  # [r, i, j]: j above i in the reference
    tied = (ref[:, None, :] == ref[:, :, None]) | (cand[:, None, :] == cand[:, :, None])
    earlier = np.tril(np.ones((n, n), dtype=bool), k=-1)  # j before i in the candidate
    correct = (np.where(tied, 0.5, above.astype(np.float64)) * earlier).sum(axis=2)[:, 1:]
    return 2.0 / (n - 1) * (correct / np.arange(1, n)).sum(axis=1) - 1.0


def _spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))


def _matrix(frame: Any, side: str, *, metric: str, system: str, on: str) -> pl.DataFrame:
    df = to_polars(frame, list(dict.fromkeys([system, on, metric])))
    for column in (system, on):
        if not id_dtype_ok(df.schema[column]):
            raise SchemaError(
                f"wrong dtype in {side}",
                column=column,
                expected="str or int ids",
                found=str(df.schema[column]),
            )
    if not df.schema[metric].is_numeric():
        raise SchemaError(
            f"wrong dtype in {side}",
            column=metric,
            expected="numbers",
            found=str(df.schema[metric]),
        )
    values = df.get_column(metric).cast(pl.Float64)
    for column, bad in (
        (system, df.get_column(system).is_null()),
        (on, df.get_column(on).is_null()),
        (metric, values.is_null() | values.is_nan() | values.is_infinite()),
    ):
        at = first_true_row(bad)
        if at is not None:
            raise SchemaError(
                f"a missing or non-finite value in {side}",
                column=column,
                row=at,
                expected="a value on every row",
                found=str(df[at, column]),
            )
    at = first_true_row(~df.select(pl.struct(system, on).is_first_distinct()).to_series())
    if at is not None:
        raise SchemaError(
            f"the same (system, query) twice in {side}",
            column=on,
            row=at,
            expected="one score per system and query",
            found=f"{df[at, system]!r}, {df[at, on]!r}",
        )
    return df.select(pl.col(system).cast(pl.String), pl.col(on).cast(pl.String), values.alias(metric))


@public
def ranking_agreement(
    a: Any,
    b: Any,
    /,
    *,
    metric: str,
    metric_b: str | None = None,
    system: str = "run_id",
    on: str = "query_id",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    alpha: float = 0.05,
    seed: int | None = 0,
    pairs: bool = False,
) -> pl.DataFrame:
    """Agreement between the system rankings of two sets of per-query scores.

    Parameters
    ----------
    a, b : frame
        Per-query scores, one row per (``system``, ``on``); ``a`` is the reference. Both must
        hold the same systems; the queries used are those of ``a`` and ``b`` in common, and
        every system needs a score on each of them.
    metric : str
        Score column of ``a`` (and of ``b`` unless ``metric_b`` names another).
    metric_b : str, optional
        Score column of ``b`` (two metrics over the same frame: pass it twice).
    system, on : str
        System and query columns.
    n_resamples : int
        Bootstrap resamples of the queries (0: no intervals).
    confidence : float
        Level of the intervals.
    alpha : float
        Level of the paired t-tests that mark a swap significant.
    seed : int or None
        Seed of the resampling.
    pairs : bool
        Return one row per pair of systems instead: ``system_1``, ``system_2`` (``system_1``
        first in ``a``'s ranking), ``difference_a``, ``difference_b`` (mean of system 1 minus
        system 2), ``p_value_a``, ``p_value_b`` (``scipy.stats.ttest_rel`` over queries),
        ``swapped`` (the signs differ) and ``significant_swap``.

    Returns
    -------
    polars.DataFrame
        One row: ``systems``, ``queries``, ``queries_only_a``, ``queries_only_b``,
        ``kendall_tau``, ``tau_ap``, ``spearman`` each with ``_low``/``_high`` bounds,
        ``swaps`` (pairs ordered differently) and ``significant_swaps`` (swapped pairs whose
        difference is significant at ``alpha`` in ``a``, the reference: ``b`` reverses a
        difference the reference calls real).

    Raises
    ------
    SchemaError
        A missing column, bad dtype, null or non-finite score, or a (system, query) twice.
    InvalidParameterError
        Different systems in ``a`` and ``b``, fewer than two systems or queries, a system
        missing a query, or a bad parameter.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> a = pl.DataFrame({"run_id": ["x", "x", "y", "y", "z", "z"], "query_id": ["1", "2"] * 3,
    ...                   "ndcg": [0.9, 0.7, 0.5, 0.6, 0.1, 0.3]})
    >>> b = a.with_columns(pl.Series("ndcg", [0.4, 0.5, 0.6, 0.7, 0.1, 0.2]))
    >>> rf.ranking_agreement(a, b, metric="ndcg", n_resamples=0).select("kendall_tau", "tau_ap", "swaps").row(0)
    (0.3333333333333333, 0.0, 1)
    """
    metric_b = metric if metric_b is None else metric_b
    for name, value in (("metric", metric), ("metric_b", metric_b), ("system", system), ("on", on)):
        validate.column_name(value, name)
    n_resamples = validate.integer(n_resamples, "n_resamples", minimum=0)
    confidence = validate.confidence(confidence, "confidence")
    alpha = validate.confidence(alpha, "alpha")
    left = _matrix(a, "a", metric=metric, system=system, on=on)
    right = _matrix(b, "b", metric=metric_b, system=system, on=on).rename({metric_b: "__rf_b"})
    systems_a, systems_b = set(left.get_column(system)), set(right.get_column(system))
    if systems_a != systems_b:
        raise InvalidParameterError(
            f"a and b must hold the same systems; only in a: {sorted(systems_a - systems_b)}, "
            f"only in b: {sorted(systems_b - systems_a)}"
        )
    if len(systems_a) < 2:
        raise InvalidParameterError(f"need at least two systems to rank, found {len(systems_a)}")
    queries_a, queries_b = set(left.get_column(on)), set(right.get_column(on))
    common = sorted(queries_a & queries_b)
    if len(common) < 2:
        raise InvalidParameterError(f"a and b share {len(common)} queries; need at least two")
    names = sorted(systems_a)
    grid = pl.DataFrame({system: names}).join(pl.DataFrame({on: common}), how="cross")
    joined = grid.join(left, on=[system, on], how="left").join(right, on=[system, on], how="left")
    for column, side in ((metric, "a"), ("__rf_b", "b")):
        at = first_true_row(joined.get_column(column).is_null())
        if at is not None:
            raise InvalidParameterError(
                f"system {joined[at, system]!r} has no score for query {joined[at, on]!r} in {side}; "
                "every system needs a score on every query in common"
            )
    shape = (len(names), len(common))
    score_a = joined.get_column(metric).to_numpy().reshape(shape)
    score_b = joined.get_column("__rf_b").to_numpy().reshape(shape)
    mean_a, mean_b = _snap(score_a.mean(axis=1)[None, :]), _snap(score_b.mean(axis=1)[None, :])
    if pairs:
        return _pairs(names, score_a, score_b, alpha)
    point = {
        "kendall_tau": kendall_tau_b(mean_a, mean_b),
        "tau_ap": tau_ap(mean_a, mean_b),
        "spearman": _spearman(mean_a, mean_b),
    }
    bounds = {name: (np.nan, np.nan) for name in point}
    if n_resamples:
        rng = np.random.default_rng(seed)
        n_q = len(common)
        weights = rng.multinomial(n_q, np.full(n_q, 1.0 / n_q), size=n_resamples) / n_q  # (R, Q)
        boot_a, boot_b = _snap(weights @ score_a.T), _snap(weights @ score_b.T)  # (R, S) bootstrap means
        step = max(1, _CELLS // (len(names) * len(names)))  # tau_ap holds (resamples, S, S) at once
        parts = [slice(start, start + step) for start in range(0, n_resamples, step)]
        draws = {
            "kendall_tau": kendall_tau_b(boot_a, boot_b),
            "tau_ap": np.concatenate([tau_ap(boot_a[p], boot_b[p]) for p in parts]),
            "spearman": _spearman(boot_a, boot_b),
        }
        with warnings.catch_warnings():  # constant resamples give NaN, left out of the bounds
            warnings.simplefilter("ignore", RuntimeWarning)
            for name, draw in draws.items():
                low, high = percentile_interval(draw[None, :], confidence)
                bounds[name] = (low[0], high[0])
    swaps = _pairs(names, score_a, score_b, alpha)
    values: dict[str, Any] = {
        "systems": len(names),
        "queries": len(common),
        "queries_only_a": len(queries_a - queries_b),
        "queries_only_b": len(queries_b - queries_a),
    }
    for name, value in point.items():
        values[name] = float(value[0])
        values[f"{name}_low"], values[f"{name}_high"] = (float(v) for v in bounds[name])
    values["swaps"] = int(swaps.get_column("swapped").sum())
    values["significant_swaps"] = int(swaps.get_column("significant_swap").sum())
    out = pl.DataFrame({k: [v] for k, v in values.items()})
    return out.with_columns(pl.col(pl.Float64).fill_nan(None))


def _pairs(names: list[str], score_a: np.ndarray, score_b: np.ndarray, alpha: float) -> pl.DataFrame:
    """One row per pair of systems, ``system_1`` ahead in ``a``'s ranking (ties: by name)."""
    from scipy.special import stdtr  # scipy.stats.t.sf without importing scipy.stats

    order = np.argsort(-score_a.mean(axis=1), kind="stable")
    i, j = np.triu_indices(len(names), k=1)
    first, second = order[i], order[j]
    n_q = score_a.shape[1]

    def paired(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        diff = scores[first] - scores[second]  # (pairs, Q)
        mean = diff.mean(axis=1)
        sd = diff.std(axis=1, ddof=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = mean / (sd / np.sqrt(n_q))
        p = 2.0 * stdtr(n_q - 1, -np.abs(t))
        # all differences equal: p is 1 when they are 0, else 0 (as ragframe's compare)
        p = np.where(sd > 0, p, np.where(mean == 0, 1.0, 0.0))
        return mean, p

    diff_a, p_a = paired(score_a)
    diff_b, p_b = paired(score_b)
    swapped = np.sign(diff_a) * np.sign(diff_b) < 0
    return pl.DataFrame(
        {
            "system_1": [names[k] for k in first],
            "system_2": [names[k] for k in second],
            "difference_a": diff_a,
            "difference_b": diff_b,
            "p_value_a": p_a,
            "p_value_b": p_b,
            "swapped": swapped,
            "significant_swap": swapped & (p_a < alpha),
        }
    )
