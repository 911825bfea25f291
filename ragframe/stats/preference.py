"""Preference meta-evaluation: does a metric prefer the answer people prefer? (RAGChecker's protocol).

Each row is one human label comparing two answers to one question: ``first`` and ``second``
are the metric's scores of the two answers, ``human`` the person's preference (-2..2 in
RAGChecker's data, positive when the second answer is better). The metric's preference is
its score difference ``second - first``, missing differences set to the median difference,
min-max normalised to [-2, 2]; Pearson and Spearman correlations against the human labels
measure agreement (``docs/assessors.md``). A pair labelled by two annotators is two rows.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.kernels.groups import dense_code
from ragframe.kernels.resampling import percentile_interval
from ragframe.public import public
from ragframe.schema import first_true_row, to_polars

__all__ = ["preference_agreement", "weighted_correlations"]

_CELLS = 4_000_000  # bootstrap weights held at once (resamples x rows)


def _ranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties averaged) of ``values`` in each weighted resample.

    ``weights`` is (resamples, n): row ``r`` is the sample in which value ``i`` appears
    ``weights[r, i]`` times; the ranks are those ``scipy.stats.rankdata`` gives that sample.
    """
    unique, inverse = np.unique(values, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(unique.size))
    group_weight = np.add.reduceat(weights[:, order], starts, axis=1)
    before = np.cumsum(group_weight, axis=1) - group_weight
    return (before + (group_weight + 1.0) / 2.0)[:, inverse]


def _pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pearson correlation of x and y in each weighted resample (NaN where either is constant)."""
    total = weights.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (weights * x).sum(axis=1) / total
        my = (weights * y).sum(axis=1) / total
        dx, dy = x - mx[:, None], y - my[:, None]
        cov = (weights * dx * dy).sum(axis=1)
        vx, vy = (weights * dx * dx).sum(axis=1), (weights * dy * dy).sum(axis=1)
        r = cov / np.sqrt(vx * vy)
    # the sums leave rounding noise where a side is constant: call that undefined, as scipy does
    constant = (vx <= 1e-12 * np.maximum(1.0, (weights * x * x).sum(axis=1))) | (
        vy <= 1e-12 * np.maximum(1.0, (weights * y * y).sum(axis=1))
    )
    return np.where(constant, np.nan, np.clip(r, -1.0, 1.0))


def weighted_correlations(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson and Spearman correlations of ``x`` and ``y`` in each weighted resample.

    Row ``r`` of ``weights`` (shape (resamples, n)) counts how often each of the ``n``
    observations is in resample ``r``; the results equal ``scipy.stats.pearsonr`` and
    ``spearmanr`` on the sample written out with those repetitions (NaN where a side is
    constant).

    Examples
    --------
    >>> import numpy as np
    >>> p, s = weighted_correlations(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]), np.ones((1, 3)))
    >>> round(float(p[0]), 4), round(float(s[0]), 4)
    (0.5, 0.5)
    """
    pearson = _pearson(x, y, weights)
    spearman = _pearson(_ranks(x, weights), _ranks(y, weights), weights)
    return pearson, spearman


def _numbers(df: pl.DataFrame, column: str, *, nulls: bool) -> np.ndarray:
    dtype = df.schema[column]
    if not (dtype.is_numeric() or dtype == pl.Boolean):
        raise SchemaError("wrong dtype", column=column, expected="numbers", found=str(dtype))
    series = df.get_column(column).cast(pl.Float64)
    bad = series.is_nan() | series.is_infinite()
    if not nulls:
        bad = bad | series.is_null()
    at = first_true_row(bad)
    if at is not None:
        raise SchemaError(
            "not a finite number",
            column=column,
            row=at,
            expected="a finite number" + ("" if not nulls else " or null (missing)"),
            found=str(series[at]),
        )
    return series.to_numpy()


@public
def preference_agreement(
    frame: Any,
    /,
    *,
    first: str,
    second: str,
    human: str,
    cluster: str | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> pl.DataFrame:
    """Correlation between a metric's preference and human preference labels, with bootstrap intervals.

    The metric prefers by ``second - first``; a missing difference (either score null) is set
    to the median of the others, then the differences are min-max normalised to [-2, 2]
    (RAGChecker's meta-evaluation; the normalisation is affine, so it changes no correlation,
    it only puts the preference on the human scale). Pearson and Spearman correlations are
    computed against ``human`` over all rows, a pair labelled by two annotators counting once
    per annotator. The intervals are percentile bootstrap intervals over ``cluster`` (resample
    whole pairs, both annotators' rows together) or over rows when ``cluster`` is None.

    The annotator-against-annotator ceiling is the same call on one row per pair with
    ``first`` a constant 0, ``second`` one annotator's label and ``human`` the other's.

    Parameters
    ----------
    frame : frame
        One row per human label.
    first, second : str
        The metric's scores of the first and of the second answer (null: missing).
    human : str
        The human preference (positive: the second answer is better); no nulls.
    cluster : str, optional
        Column identifying a pair (RAGChecker's ``instance_id``): the bootstrap resamples
        pairs, not rows.
    n_resamples : int
        Bootstrap resamples (0: no intervals, the bounds are null).
    confidence : float
        Level of the intervals, in (0, 1).
    seed : int or None
        Seed of the resampling (None: fresh entropy).

    Returns
    -------
    polars.DataFrame
        One row: ``n`` (labels), ``missing`` (differences set to the median), ``pearson``,
        ``pearson_low``, ``pearson_high``, ``spearman``, ``spearman_low``, ``spearman_high``
        (correlations in [-1, 1]; null where a side is constant).

    Raises
    ------
    SchemaError
        A missing column, a non-numeric column, NaN or infinity, a null human label or a
        null ``cluster`` value.
    InvalidParameterError
        Bad ``n_resamples``/``confidence``, fewer than two rows, or every difference missing.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> pairs = pl.DataFrame({
    ...     "score_1": [0.2, 0.9, 0.5, 0.4], "score_2": [0.8, 0.1, 0.5, None], "label": [2, -2, 0, 1],
    ... })
    >>> out = rf.preference_agreement(pairs, first="score_1", second="score_2", human="label", n_resamples=0)
    >>> n, missing, spearman = out.select("n", "missing", "spearman").row(0)
    >>> n, missing, round(spearman, 4)  # spearmanr([0.6, -0.8, 0, 0], [2, -2, 0, 1]): the null set to the median
    (4, 1, 0.9487)
    """
    for name, value in (("first", first), ("second", second), ("human", human)):
        validate.column_name(value, name)
    if cluster is not None:
        validate.column_name(cluster, "cluster")
    n_resamples = validate.integer(n_resamples, "n_resamples", minimum=0)
    confidence = validate.confidence(confidence, "confidence")
    columns = list(dict.fromkeys([first, second, human, *([cluster] if cluster else [])]))
    df = to_polars(frame, columns)
    if df.height < 2:
        raise InvalidParameterError(f"need at least two labelled rows, found {df.height}")
    a = _numbers(df, first, nulls=True)
    b = _numbers(df, second, nulls=True)
    y = _numbers(df, human, nulls=False)
    diff = b - a
    missing = np.isnan(diff)
    if missing.all():
        raise InvalidParameterError(f"every score difference is missing ({first!r} or {second!r} null)")
    diff = np.where(missing, np.median(diff[~missing]), diff)
    low, high = diff.min(), diff.max()
    x = (diff - low) / (high - low) * 4.0 - 2.0 if high > low else np.zeros_like(diff)
    point = weighted_correlations(x, y, np.ones((1, x.size)))
    bounds: list[np.ndarray] = [np.full(2, np.nan), np.full(2, np.nan)]
    if n_resamples:
        if cluster is not None:
            at = first_true_row(df.get_column(cluster).is_null())
            if at is not None:
                raise SchemaError("null pair id", column=cluster, row=at, expected="a value", found="null")
            code = df.select(dense_code(pl.col(cluster))).to_series().to_numpy()
        else:
            code = np.arange(df.height)
        n_clusters = int(code.max()) + 1
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_resamples)
        step = max(1, _CELLS // x.size)  # resamples per block: at most about _CELLS weights in memory
        blocks = [
            weighted_correlations(x, y, counts[start : start + step, code].astype(np.float64))
            for start in range(0, n_resamples, step)
        ]
        draws = (np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks]))
        with warnings.catch_warnings():  # a constant side in every resample: the bounds are null
            warnings.simplefilter("ignore", RuntimeWarning)
            bounds = [np.concatenate(percentile_interval(d[None, :], confidence)) for d in draws]
    values = {
        "n": df.height,
        "missing": int(missing.sum()),
        "pearson": point[0][0],
        "pearson_low": bounds[0][0],
        "pearson_high": bounds[0][1],
        "spearman": point[1][0],
        "spearman_low": bounds[1][0],
        "spearman_high": bounds[1][1],
    }
    out = pl.DataFrame({k: [v] for k, v in values.items()}, schema_overrides={"n": pl.Int64, "missing": pl.Int64})
    return out.with_columns(pl.col(pl.Float64).fill_nan(None))
