"""Agreement between annotators, and human judgments as qrels (``docs/statistics.md``).

The input is a long *judgments* table: one row per (item, annotator) rating. The default
column names follow the anchor seed's ``HumanJudgment``: the item is identified by
``query`` and ``item_id``, the rater by ``annotator`` and the rating (an ordinal grade,
0-3 in the seed) is in ``relevance``; every function renames them by keyword
(``item=``, ``annotator=``, ``rating=``). Any frame :func:`ragframe.schema.to_polars`
accepts is accepted (a LazyFrame is collected); results are tidy polars DataFrames.

Rules shared by every function:

- A null rating means "not rated": the row is dropped before anything is computed and
  counts in no statistic (a pandas NaN becomes null on conversion). A NaN in a polars
  float rating column is an error, never a silent "missing".
- A null item or annotator value, a missing column, a rating of the wrong dtype, and the
  same annotator rating the same item twice (null ratings included) raise
  :class:`~ragframe.exceptions.SchemaError` naming the column and the first offending row.
- Items and annotators compare by value, so the results never depend on row order. In
  particular the seed's ``compute_agreement`` pairs the *first two* annotators of each item
  in insertion order and pools those pairs into one kappa; ragframe does not reproduce
  that order dependence (:func:`agreement` averages Cohen's kappa over named annotator
  pairs instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.kernels.groups import dense_code
from ragframe.public import public
from ragframe.schema import first_true_row, id_dtype_ok, to_polars

__all__ = ["cohen_kappa", "agreement", "judgments_to_qrels", "judgment_summary"]

#: Default item columns (the seed's HumanJudgment: a query and the judged document).
DEFAULT_ITEM: tuple[str, ...] = ("query", "item_id")
#: Allowed values of ``agreement(method=...)``.
METHODS: tuple[str, ...] = ("cohen", "fleiss", "krippendorff")
#: Allowed values of ``agreement(level=...)``.
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval")
#: Allowed values of ``cohen_kappa(weights=...)``.
WEIGHTS: tuple[str | None, ...] = (None, "linear", "quadratic")
#: Cohen's kappa weighting used by ``agreement(method="cohen", level=...)``.
LEVEL_WEIGHTS: dict[str, str | None] = {"nominal": None, "ordinal": "linear", "interval": "quadratic"}

# Internal column names (prefixed so they never clash with the caller's columns).
_ROW, _ITEM, _ANN, _CAT, _GROUP, _PAIR = "__rf_row", "__rf_item", "__rf_ann", "__rf_cat", "__rf_group", "__rf_pair"
_MAX_LISTED = 20


# --------------------------------------------------------------------------- validation


def _describe(df: pl.DataFrame, columns: Sequence[str], row: int) -> str:
    """``query='q1', item_id='d1'`` for the given row (a position in ``df``)."""
    values = df.select(columns).row(row)
    return ", ".join(f"{c}={v!r}" for c, v in zip(columns, values))


def _listed(values: Sequence[Any]) -> str:
    shown = sorted(values, key=lambda v: (str(type(v)), v))
    more = f" and {len(shown) - _MAX_LISTED} more" if len(shown) > _MAX_LISTED else ""
    return f"{shown[:_MAX_LISTED]}{more}"


def _load(
    judgments: Any,
    *,
    item: Any,
    annotator: Any,
    rating: Any,
    numeric: bool,
    extra: Sequence[str] = (),
    by: Sequence[str] = (),
) -> tuple[pl.DataFrame, pl.DataFrame, list[str]]:
    """Validate a judgments table; return (all rows, rated rows with integer codes, item columns).

    Both frames carry ``_ROW`` (the input position); ``by`` columns are loaded but not checked
    (a null group value is a group). The rated frame (non-null ratings only) also has
    ``_ITEM`` and ``_ANN`` codes (first-appearance order), ``_GROUP`` (0) and ``_CAT``
    (dense rank of the rating: categories in sorted order).
    """
    items = validate.column_list(item, "item")
    annotator = validate.column_name(annotator, "annotator")
    rating = validate.column_name(rating, "rating")
    needed = list(dict.fromkeys([*items, annotator, rating, *extra, *by]))
    df = to_polars(judgments, needed).with_row_index(_ROW)

    for column in dict.fromkeys([*items, annotator, *extra]):
        series = df.get_column(column)
        if series.null_count():
            raise SchemaError(
                "null value",
                column=column,
                row=first_true_row(series.is_null()),
                expected="a non-null value",
                found="null",
            )

    ratings = df.get_column(rating)
    dtype = ratings.dtype
    nominal_ok = dtype in (pl.String, pl.Boolean, pl.Categorical) or isinstance(dtype, pl.Enum)
    if not dtype.is_numeric() and (numeric or not nominal_ok):
        raise SchemaError(
            "wrong dtype",
            column=rating,
            expected="a numeric rating" if numeric else "a numeric, boolean or string rating",
            found=str(dtype),
        )
    if dtype.is_float() and ratings.is_nan().any():
        raise SchemaError(
            "NaN rating (use null for a missing rating)",
            column=rating,
            row=first_true_row(ratings.is_nan()),
            expected="a number or null",
            found="NaN",
        )

    key = [*items, annotator]
    repeated = first_true_row(df.select(pl.struct(key).is_first_distinct().not_()).to_series())
    if repeated is not None:
        values = df.select(key).row(repeated)
        first = int(
            df.filter(pl.all_horizontal([pl.col(c) == pl.lit(v) for c, v in zip(key, values)])).get_column(_ROW).item(0)
        )
        raise SchemaError(
            f"annotator {values[-1]!r} rated item ({_describe(df, items, repeated)}) more than once "
            f"(rows {first} and {repeated}); deduplicate or aggregate the judgments first",
            column=annotator,
            row=repeated,
            expected="one rating per (item, annotator)",
            found="a repeated (item, annotator) pair",
        )

    if dtype == pl.Categorical or isinstance(dtype, pl.Enum):
        category = pl.col(rating).cast(pl.String)
    elif dtype == pl.Boolean:
        category = pl.col(rating).cast(pl.UInt8)
    else:
        category = pl.col(rating)
    rated = df.filter(pl.col(rating).is_not_null()).with_columns(
        _first_appearance(items).alias(_ITEM),
        _first_appearance([annotator]).alias(_ANN),
        pl.lit(0, dtype=pl.Int64).alias(_GROUP),
        dense_code(category).alias(_CAT),
    )
    return df, rated, items


def _first_appearance(columns: list[str]) -> pl.Expr:
    """Integer code of the value of ``columns``, numbered in order of first appearance."""
    return dense_code(pl.col(_ROW).min().over(columns)).alias("code")


def _codes(rated: pl.DataFrame, column: str) -> np.ndarray:
    return rated.get_column(column).to_numpy().astype(np.int64, copy=False)


# --------------------------------------------------------------------------- kernels


def _kappa_kernel(pair: np.ndarray, a: np.ndarray, b: np.ndarray, n_pairs: int, weights: str | None) -> np.ndarray:
    """Cohen's kappa of each pair from its ratings' category codes (arrays of equal length).

    One confusion matrix per pair (``np.bincount`` over ``pair, a, b``). Like
    ``sklearn.metrics.cohen_kappa_score``, a pair's labels are the categories either rater
    used on the pair's shared items, in sorted order, and the weights are
    ``|i - j|`` (linear) or ``(i - j) ** 2`` (quadratic) of those label indexes.
    """
    n_cat = int(max(a.max(), b.max())) + 1
    size = n_cat * n_cat
    counts = np.bincount(pair * size + a * n_cat + b, minlength=n_pairs * size).reshape(n_pairs, n_cat, n_cat)
    counts = counts.astype(np.float64)
    rows, cols = counts.sum(axis=2), counts.sum(axis=1)
    n = rows.sum(axis=1)
    label = np.cumsum((rows + cols) > 0, axis=1)  # index among the pair's observed labels (+1)
    diff = label[:, :, None] - label[:, None, :]
    if weights is None:
        w = (diff != 0).astype(np.float64)
    elif weights == "linear":
        w = np.abs(diff).astype(np.float64)
    else:
        w = (diff * diff).astype(np.float64)
    expected = rows[:, :, None] * cols[:, None, :] / n[:, None, None]
    observed_dis = (w * counts).sum(axis=(1, 2))
    expected_dis = (w * expected).sum(axis=(1, 2))
    degenerate = expected_dis == 0  # chance agreement is 1
    kappa = 1.0 - observed_dis / np.where(degenerate, 1.0, expected_dis)
    return np.where(degenerate, np.where(observed_dis == 0, 1.0, 0.0), kappa)


def _pairwise(rated: pl.DataFrame, weights: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Kappa of every (group, annotator pair) sharing at least one item, and the pair's group code."""
    side = rated.select(_GROUP, _ITEM, _ANN, _CAT)
    pairs = side.join(side, on=[_GROUP, _ITEM], suffix="_b").filter(pl.col(_ANN) < pl.col(f"{_ANN}_b"))
    if pairs.height == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    pairs = pairs.with_columns(dense_code([_GROUP, _ANN, f"{_ANN}_b"]).alias(_PAIR))
    pair = _codes(pairs, _PAIR)
    n_pairs = int(pair.max()) + 1
    kappa = _kappa_kernel(pair, _codes(pairs, _CAT), _codes(pairs, f"{_CAT}_b"), n_pairs, weights)
    group = np.zeros(n_pairs, dtype=np.int64)
    group[pair] = _codes(pairs, _GROUP)
    return kappa, group


def _fleiss(rated: pl.DataFrame, df: pl.DataFrame, items: list[str]) -> float:
    """Fleiss' kappa (statsmodels ``fleiss_kappa(method="fleiss")``); every item needs the same rater count."""
    item, cat = _codes(rated, _ITEM), _codes(rated, _CAT)
    if item.size == 0:
        raise InvalidParameterError("no ratings; Fleiss' kappa is undefined")
    per_item = np.bincount(item)
    counts = per_item[item]  # per row: its item's rating count
    bad = np.flatnonzero(counts != counts[0])
    if bad.size:
        rows = rated.get_column(_ROW)
        raise InvalidParameterError(
            f"Fleiss' kappa needs the same number of ratings on every item; item "
            f"({_describe(df, items, int(rows[0]))}) has {counts[0]} but item "
            f"({_describe(df, items, int(rows[int(bad[0])]))}) has {counts[bad[0]]} "
            "(use {method} when ratings are missing)",
            mentions={"method": "'krippendorff'"},
        )
    m = int(counts[0])
    if m < 2:
        raise InvalidParameterError(f"Fleiss' kappa needs at least two ratings per item, found {m}")
    n_cat = int(cat.max()) + 1
    cells, cell_counts = np.unique(item * n_cat + cat, return_counts=True)
    sum_sq = np.bincount(cells // n_cat, weights=cell_counts.astype(np.float64) ** 2, minlength=per_item.size)
    sum_sq = sum_sq[per_item > 0]
    p_item = (sum_sq - m) / (m * (m - 1.0))
    p_mean = float(p_item.mean())
    p_cat = np.bincount(cat).astype(np.float64) / item.size
    p_exp = float((p_cat * p_cat).sum())
    if p_exp == 1.0:  # every rating in one category: chance agreement is 1
        return 1.0 if p_mean == 1.0 else 0.0
    return (p_mean - p_exp) / (1.0 - p_exp)


def _krippendorff(rated: pl.DataFrame, rating: str, level: str) -> float:
    """Krippendorff's alpha over the pairable ratings (items with two or more ratings).

    ``alpha = 1 - (n - 1) * sum(o * d) / sum(n_c * n_k * d)`` with ``o`` the coincidence
    matrix and ``d`` the level's squared distance. The two sums are reduced per item
    instead of materialising the values x values matrices: for nominal data
    ``sum_ck n_uc n_uk [c != k] = m_u**2 - sum_c n_uc**2``; for interval data (and ordinal
    data, whose distance is the interval distance between the values' cumulative
    mid-ranks ``cum(n)_c - n_c / 2``) ``sum_rs (x_r - x_s)**2 = 2 m_u sum_r (x_r - mean_u)**2``.
    Memory is linear in the number of ratings.
    """
    item = _codes(rated, _ITEM)
    per_item = np.bincount(item) if item.size else np.zeros(0, dtype=np.int64)
    keep = per_item[item] >= 2 if item.size else np.zeros(0, dtype=bool)
    if not keep.any():
        raise InvalidParameterError("no item has two or more ratings; Krippendorff's alpha needs pairable values")
    item = item[keep]
    _, cat = np.unique(_codes(rated, _CAT)[keep], return_inverse=True)  # dense over pairable values, sorted
    n_c = np.bincount(cat).astype(np.float64)
    if n_c.size == 1:  # one value only: no disagreement is possible (the krippendorff package gives nan)
        return 1.0
    n = float(item.size)
    m_u = per_item.astype(np.float64)
    pairable = per_item >= 2
    if level == "nominal":
        n_cat = n_c.size
        cells, cell_counts = np.unique(item * n_cat + cat, return_counts=True)
        sum_sq = np.bincount(cells // n_cat, weights=cell_counts.astype(np.float64) ** 2, minlength=m_u.size)
        within = (m_u * m_u - sum_sq)[pairable]
        expected = n * n - float((n_c * n_c).sum())
    else:
        if level == "ordinal":
            x = (np.cumsum(n_c) - n_c / 2.0)[cat]
        else:
            x = rated.get_column(rating).cast(pl.Float64).to_numpy()[keep]
        mean_u = np.bincount(item, weights=x, minlength=m_u.size)[pairable] / m_u[pairable]
        centred = np.zeros(m_u.size)
        centred[pairable] = mean_u
        ss_u = np.bincount(item, weights=(x - centred[item]) ** 2, minlength=m_u.size)[pairable]
        within = 2.0 * m_u[pairable] * ss_u
        expected = 2.0 * n * float(((x - x.mean()) ** 2).sum())
    observed = float((within / (m_u[pairable] - 1.0)).sum())
    if expected == 0.0:
        return 1.0 if observed == 0.0 else 0.0
    return 1.0 - (n - 1.0) * observed / expected


# --------------------------------------------------------------------------- public API


@public
def cohen_kappa(
    judgments: Any,
    /,
    rater_a: Any,
    rater_b: Any,
    *,
    weights: str | None = None,
    item: str | Sequence[str] = DEFAULT_ITEM,
    annotator: str = "annotator",
    rating: str = "relevance",
) -> float:
    """Cohen's kappa between two named annotators over the items both rated.

    Equals ``sklearn.metrics.cohen_kappa_score`` on the paired ratings: the labels are the
    categories either annotator used on those items, sorted, and ``weights="linear"`` /
    ``"quadratic"`` weigh a disagreement by ``|i - j|`` / ``(i - j) ** 2`` of the label
    indexes (so the gap between consecutive *observed* grades counts 1, whatever their values).
    Null ratings are "not rated" and drop the item from the pair.

    When chance agreement is 1 (both annotators use one and the same category throughout)
    the kappa is 1.0 if observed agreement is 1 and 0.0 otherwise; sklearn returns nan there.

    Parameters
    ----------
    judgments : frame
        Long table: one row per (item, annotator) rating.
    rater_a, rater_b : str or int
        Two distinct values of the ``annotator`` column.
    weights : None, "linear" or "quadratic"
        Weighted kappa (numeric ratings needed).
    item, annotator, rating : column names
        ``item`` may be one column or a list that together identify an item.

    Returns
    -------
    float
        The kappa, at most 1 (0 is chance agreement; negative is worse than chance).

    Raises
    ------
    InvalidParameterError
        An unknown annotator (the message lists those present), ``rater_a == rater_b``,
        an unknown ``weights``, or no item rated by both.

    Examples
    --------
    >>> import polars as pl
    >>> j = pl.DataFrame({
    ...     "query": ["q"] * 6, "item_id": ["d1", "d2", "d3"] * 2,
    ...     "annotator": ["ann"] * 3 + ["bob"] * 3, "relevance": [0, 1, 2, 0, 1, 1],
    ... })
    >>> round(cohen_kappa(j, "ann", "bob"), 4)
    0.5
    """
    validate.choice(weights, "weights", WEIGHTS)
    df, rated, _ = _load(judgments, item=item, annotator=annotator, rating=rating, numeric=weights is not None)
    present = df.get_column(annotator).unique().to_list()
    for rater in (rater_a, rater_b):
        if rater not in present:
            raise InvalidParameterError(
                f"annotator {rater!r} not found in column {annotator!r}; annotators present: {_listed(present)}"
            )
    if rater_a == rater_b:
        raise InvalidParameterError(f"rater_a and rater_b must differ, both are {rater_a!r}")
    side_a = rated.filter(pl.col(annotator) == pl.lit(rater_a)).select(_ITEM, _CAT)
    side_b = rated.filter(pl.col(annotator) == pl.lit(rater_b)).select(_ITEM, _CAT)
    pairs = side_a.join(side_b, on=_ITEM, suffix="_b")
    if pairs.height == 0:
        raise InvalidParameterError(
            f"annotators {rater_a!r} and {rater_b!r} share no rated item; Cohen's kappa is undefined"
        )
    pair = np.zeros(pairs.height, dtype=np.int64)
    return float(_kappa_kernel(pair, _codes(pairs, _CAT), _codes(pairs, f"{_CAT}_b"), 1, weights)[0])


@public
def agreement(
    judgments: Any,
    /,
    *,
    method: str = "cohen",
    level: str = "nominal",
    item: str | Sequence[str] = DEFAULT_ITEM,
    annotator: str = "annotator",
    rating: str = "relevance",
) -> pl.DataFrame:
    """Inter-annotator agreement of a judgments table, as one tidy row.

    - ``method="cohen"``: the mean of Cohen's kappa (:func:`cohen_kappa`) over every
      annotator pair that shares at least one rated item, each pair over its shared items.
      ``level`` picks the weights: nominal -> unweighted, ordinal -> linear,
      interval -> quadratic. (The seed's ``compute_agreement`` instead pairs the first two
      annotators of each item in insertion order; ragframe's value does not depend on row order.)
    - ``method="fleiss"``: Fleiss' kappa (statsmodels ``fleiss_kappa``); nominal only, and
      every item must have the same number of (non-null) ratings.
    - ``method="krippendorff"``: Krippendorff's alpha at the given level (the
      ``krippendorff`` package's ``alpha``); missing ratings are allowed, items with a
      single rating are not pairable and do not count.

    Null ratings mean "not rated". When chance agreement is perfect (all pairable ratings in
    one category) the value is 1.0 (0.0 if observed agreement were not perfect), where the
    reference implementations give nan.

    Parameters
    ----------
    judgments : frame
        Long table: one row per (item, annotator) rating (polars, pyarrow or pandas).
    method : {"cohen", "fleiss", "krippendorff"}
        The agreement statistic (see above).
    level : {"nominal", "ordinal", "interval"}
        Measurement level of the ratings; ordinal and interval need numeric ratings.
    item, annotator, rating : column names
        ``item`` may be one column or a list that together identify an item (default
        ``("query", "item_id")``).

    Returns
    -------
    polars.DataFrame
        One row: ``method, level, value, n_items, n_annotators, n_ratings, n_pairs``. The
        counts are over non-null ratings; ``n_pairs`` (annotator pairs sharing an item) is
        null unless ``method="cohen"``.

    Raises
    ------
    InvalidParameterError
        Unknown ``method`` / ``level``; nothing to compare (no shared or pairable item);
        Fleiss with unequal ratings per item (names an offending item) or a non-nominal level.

    Examples
    --------
    >>> import polars as pl
    >>> j = pl.DataFrame({
    ...     "query": ["q"] * 6, "item_id": ["d1", "d2", "d3"] * 2,
    ...     "annotator": ["ann"] * 3 + ["bob"] * 3, "relevance": [0, 1, 2, 0, 1, 1],
    ... })
    >>> agreement(j).select("method", "level", "value", "n_pairs").row(0)
    ('cohen', 'nominal', 0.5, 1)
    >>> round(agreement(j, method="krippendorff", level="ordinal")["value"].item(), 4)
    0.7778
    """
    validate.choice(method, "method", METHODS)
    validate.choice(level, "level", LEVELS)
    if method == "fleiss" and level != "nominal":
        raise InvalidParameterError(
            f"Fleiss' kappa is defined for nominal ratings only, found level={level!r} "
            "(use {method} or {method#2} for ordinal or interval ratings)",
            mentions={"method": "'krippendorff'", "method#2": "'cohen'"},
        )
    df, rated, items = _load(judgments, item=item, annotator=annotator, rating=rating, numeric=level != "nominal")
    n_pairs = None
    if method == "cohen":
        kappas, _ = _pairwise(rated, LEVEL_WEIGHTS[level])
        if kappas.size == 0:
            raise InvalidParameterError("no two annotators rated a common item; pairwise Cohen's kappa is undefined")
        value, n_pairs = float(kappas.mean()), int(kappas.size)
    elif method == "fleiss":
        value = _fleiss(rated, df, items)
    else:
        value = _krippendorff(rated, rating, level)
    return pl.DataFrame(
        {
            "method": [method],
            "level": [level],
            "value": [value],
            "n_items": [rated.get_column(_ITEM).n_unique()],
            "n_annotators": [rated.get_column(_ANN).n_unique()],
            "n_ratings": [rated.height],
            "n_pairs": [n_pairs],
        },
        schema={
            "method": pl.String,
            "level": pl.String,
            "value": pl.Float64,
            "n_items": pl.Int64,
            "n_annotators": pl.Int64,
            "n_ratings": pl.Int64,
            "n_pairs": pl.Int64,
        },
    )


@public
def judgments_to_qrels(
    judgments: Any,
    /,
    *,
    threshold: float = 2,
    graded: bool = False,
    item: str | Sequence[str] = DEFAULT_ITEM,
    annotator: str = "annotator",
    rating: str = "relevance",
    query: str | None = None,
    doc: str | None = None,
) -> pl.DataFrame:
    """Turn human judgments into qrels: per (query, doc), the mean of all its ratings.

    Binary form (default, the seed's ``to_dataset``): ``relevance`` is 1 when the mean
    rating is ``>= threshold``, else 0. Graded form (``graded=True``, for NDCG):
    ``relevance`` is the mean rounded half up (``floor(mean + 0.5)``, so 1.5 -> 2 and
    2.5 -> 3); ``threshold`` is not used.

    Null ratings are "not rated": they are left out of the mean and of ``num_judgments``,
    and a (query, doc) whose ratings are all null has no judgment, so it has no row (it is
    unjudged, exactly as if it were absent from the input). The output feeds
    :func:`ragframe.evaluate_run` directly.

    Parameters
    ----------
    judgments : frame
        Long table: one row per (item, annotator) rating, numeric ratings (polars, pyarrow
        or pandas).
    threshold : int or float
        Minimum mean rating of a relevant document (binary form).
    graded : bool
        Emit rounded mean grades instead of 0/1.
    item, annotator, rating : column names
        ``item`` may be one column or a list that together identify an item (default
        ``("query", "item_id")``).
    query, doc : column names, optional
        The query and document columns; default the first and the last ``item`` column.

    Returns
    -------
    polars.DataFrame
        ``query_id, doc_id`` (the input ids, str or int), ``relevance`` (Int64),
        ``mean_rating`` (Float64), ``num_judgments`` (Int64), one row per judged
        (query, doc) in order of first appearance.

    Examples
    --------
    >>> import polars as pl
    >>> j = pl.DataFrame({
    ...     "query": ["q1"] * 4, "item_id": ["d1", "d1", "d2", "d2"],
    ...     "annotator": ["ann", "bob"] * 2, "relevance": [3, 2, 1, 2],
    ... })
    >>> judgments_to_qrels(j).rows()
    [('q1', 'd1', 1, 2.5, 2), ('q1', 'd2', 0, 1.5, 2)]
    >>> judgments_to_qrels(j, graded=True)["relevance"].to_list()
    [3, 2]
    """
    threshold = validate.number(threshold, "threshold")
    graded = validate.flag(graded, "graded")
    items = validate.column_list(item, "item")
    query = items[0] if query is None else validate.column_name(query, "query")
    doc = items[-1] if doc is None else validate.column_name(doc, "doc")
    if query == doc:
        raise InvalidParameterError(
            f"the query and doc columns must differ, both are {query!r}; pass {{query}} and doc=",
            mentions={"query": ""},
        )
    _, rated, _ = _load(
        judgments,
        item=items,
        annotator=annotator,
        rating=rating,
        numeric=True,
        extra=[query, doc],
    )
    for column in (query, doc):
        dtype = rated.schema[column]
        if not id_dtype_ok(dtype):
            raise SchemaError("wrong dtype", column=column, expected="str or int", found=str(dtype))
    grouped = rated.group_by(query, doc, maintain_order=True).agg(
        pl.col(rating).cast(pl.Float64).mean().alias("mean_rating"),
        pl.len().cast(pl.Int64).alias("num_judgments"),
    )
    mean = pl.col("mean_rating")
    relevance = (mean + 0.5).floor() if graded else (mean >= float(threshold))
    return grouped.select(
        pl.col(query).alias("query_id"),
        pl.col(doc).alias("doc_id"),
        relevance.cast(pl.Int64).alias("relevance"),
        mean,
        pl.col("num_judgments"),
    )


@public
def judgment_summary(
    judgments: Any,
    /,
    *,
    by: str | Sequence[str] | None = None,
    item: str | Sequence[str] = DEFAULT_ITEM,
    annotator: str = "annotator",
    rating: str = "relevance",
    query: str | None = None,
) -> pl.DataFrame:
    """The seed's ``compute_metrics`` as a tidy row (one per group with ``by=``).

    Null ratings are "not rated"; a group whose ratings are all null gets zero counts and
    null statistics.

    Parameters
    ----------
    judgments : frame
        Long table: one row per (item, annotator) rating, numeric ratings (polars, pyarrow
        or pandas).
    by : column name or list, optional
        Metadata columns for per-group rows (groups in order of first appearance; a null
        group value is a group of its own).
    item, annotator, rating : column names
        ``item`` may be one column or a list that together identify an item (default
        ``("query", "item_id")``).
    query : column name, optional
        The column counted by ``num_queries``; default the first ``item`` column.

    Returns
    -------
    polars.DataFrame
        One row (per group): the ``by`` columns, then ``mean_relevance`` (mean of the
        non-null ratings), ``agreement`` (mean pairwise unweighted Cohen's kappa, as
        ``agreement(method="cohen")``; null when no two annotators rated a common item,
        where the seed returns 0.0 and pairs annotators by insertion order),
        ``num_judgments`` (non-null ratings), ``num_annotators`` and ``num_queries``
        (distinct annotators and queries among them) and ``num_items`` (distinct items).

    Examples
    --------
    >>> import polars as pl
    >>> j = pl.DataFrame({
    ...     "query": ["q1", "q1", "q2", "q2"], "item_id": ["d1", "d1", "d2", "d2"],
    ...     "annotator": ["ann", "bob"] * 2, "relevance": [3, 3, 0, 0],
    ... })
    >>> judgment_summary(j).row(0, named=True)
    {'mean_relevance': 1.5, 'agreement': 1.0, 'num_judgments': 4, 'num_annotators': 2, 'num_queries': 2, 'num_items': 2}
    """
    items = validate.column_list(item, "item")
    by_cols = [] if by is None else validate.column_list(by, "by", allow_empty=True)
    query = items[0] if query is None else validate.column_name(query, "query")
    df, rated, _ = _load(
        judgments,
        item=items,
        annotator=annotator,
        rating=rating,
        numeric=True,
        extra=[query],
        by=by_cols,
    )
    if by_cols:
        # Group codes over *all* rows, so a group whose ratings are all null still gets a row.
        coded = df.with_columns(_first_appearance(by_cols).alias(_GROUP))
        groups = coded.group_by(_GROUP).agg(pl.col(by_cols).first()).sort(_GROUP)
        rated = rated.drop(_GROUP).join(coded.select(_ROW, _GROUP), on=_ROW, how="left")
    else:
        groups = pl.DataFrame({_GROUP: [0]}, schema={_GROUP: pl.Int64})
    stats = rated.group_by(_GROUP).agg(
        pl.col(rating).cast(pl.Float64).mean().alias("mean_relevance"),
        pl.len().cast(pl.Int64).alias("num_judgments"),
        pl.col(_ANN).n_unique().cast(pl.Int64).alias("num_annotators"),
        pl.col(query).n_unique().cast(pl.Int64).alias("num_queries"),
        pl.col(_ITEM).n_unique().cast(pl.Int64).alias("num_items"),
    )
    kappas, pair_group = _pairwise(rated, None)
    n_groups = groups.height
    totals = np.bincount(pair_group, weights=kappas, minlength=n_groups)
    n_pairs = np.bincount(pair_group, minlength=n_groups)
    mean_kappa = np.where(n_pairs > 0, totals / np.maximum(n_pairs, 1), np.nan)
    kappa = pl.Series("agreement", mean_kappa, dtype=pl.Float64).fill_nan(None)
    counts = ["num_judgments", "num_annotators", "num_queries", "num_items"]
    out = (
        groups.with_columns(kappa)
        .join(stats, on=_GROUP, how="left", maintain_order="left")
        .with_columns(pl.col(counts).fill_null(0))
    )
    return out.select(*by_cols, "mean_relevance", "agreement", *counts)
