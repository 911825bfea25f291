"""Paired comparison of two Ray Datasets: :func:`compare_datasets`, :func:`ragframe.compare` on a cluster.

Both sides are checked on their schemas (the checks of :func:`ragframe.compare`), reduced to
the id, slice and score columns, hash-partitioned by id into ``num_partitions`` groups
(``groupby(...).map_groups``), and paired inside each group, where duplicate and missing ids
are found exactly (every row of an id lands in one group). Then:

- ``test="t"``: each group returns, per (slice, metric) cell, the moments of its paired
  differences (pairs, sum of a, sum of b, mean and sum of squared deviations of ``b - a``);
  the driver merges them (Chan's update, as :func:`ragframe.merge_summary_states`) and runs
  the t-test code of :func:`ragframe.compare` on them. No row reaches the driver; the
  numbers equal :func:`ragframe.compare`'s to floating-point rounding (1e-12 in the tests).
- ``"wilcoxon"``, ``"permutation"``, ``"bootstrap"`` need every difference in one place
  (ranks across all pairs, resampling matrices). The groups return their pairs (ids, slice
  columns and both scores of each metric: about ``8 * (2 * metrics + 1)`` bytes a pair, more
  for string ids), which the driver collects as the partitions finish. Once more than
  ``max_collected_pairs`` (10 million by default) have arrived it keeps only the counts (it
  never holds more than the limit and one batch) and, at the end, raises
  :class:`CollectLimitError` naming the limit and the number of pairs. Otherwise the pairs
  are sorted by id and :func:`ragframe.compare` runs on them: its numbers are then
  :func:`ragframe.compare`'s on the two frames sorted by id (the resampling tests depend on
  row order through their seed; Wilcoxon does not).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from ragframe import validate
from ragframe.distributed.runtime import empty_frame, original_errors, prepared, require_ray
from ragframe.distributed.summary import frame_from_bytes, frame_to_bytes, without_row
from ragframe.exceptions import RagframeError, SchemaError
from ragframe.kernels.groups import dense_code
from ragframe.public import public
from ragframe.stats.compare import compare
from ragframe.stats.options import DEFAULTS, ComparisonOptions
from ragframe.stats.paired_tests import (
    COMPARE_COLUMNS,
    Segments,
    adjust_p_values,
    result_frame,
    t_test,
)
from ragframe.stats.pairing import check_ids, compared_metrics, same_id_types
from ragframe.stats.summary import prepare_scores

__all__ = ["compare_datasets", "CollectLimitError", "DEFAULT_MAX_COLLECTED_PAIRS"]

#: Pairs the collecting tests bring to the driver at most (about 0.5 GB for 3 metrics and int ids).
DEFAULT_MAX_COLLECTED_PAIRS = 10_000_000
_SIDE, _PART = "__side", "__part"


class CollectLimitError(RagframeError):
    """A test that needs every paired difference on the driver was refused: more pairs than the limit.

    Parameters
    ----------
    message : str
        Names the test, the limit, the number of pairs, and what to do instead.
    """


@dataclass(frozen=True)
class _Side:
    """One side's rows reduced to ids, slices and Float64 scores (``<metric>__a``/``__b``), tagged and partitioned."""

    side: int
    on: tuple[str, ...]
    by: tuple[str, ...]
    metrics: tuple[str, ...]
    by_dtypes: tuple[pl.DataType, ...]
    id_casts: tuple[tuple[str, pl.DataType], ...]
    partitions: int

    def __call__(self, batch: pa.Table) -> pa.Table:
        frame = pl.from_arrow(batch)
        try:
            prepare_scores(frame.select(self.metrics), list(self.metrics), None)
        except SchemaError as error:
            raise without_row(error) from None
        ids = [pl.col(c).cast(d) if c in dict(self.id_casts) else pl.col(c) for c, d in self._ids()]
        own, other = ("__a", "__b") if self.side == 0 else ("__b", "__a")
        slices = [
            pl.col(c) if self.side == 0 else pl.lit(None, d).alias(c)
            for c, d in zip(self.by, self.by_dtypes)
            if c not in self.on
        ]
        scores = []
        for name in self.metrics:
            scores += [pl.col(name).cast(pl.Float64).alias(name + own), pl.lit(None, pl.Float64).alias(name + other)]
        out = frame.select(*ids, *slices, *sorted(scores, key=lambda e: e.meta.output_name()))
        out = out.with_columns(
            pl.lit(self.side, pl.Int8).alias(_SIDE),
            (pl.struct(list(self.on)).hash(seed=0) % self.partitions).cast(pl.Int64).alias(_PART),
        )
        return out.to_arrow()

    def _ids(self) -> list[tuple[str, Any]]:
        casts = dict(self.id_casts)
        return [(c, casts.get(c)) for c in self.on]


@dataclass(frozen=True)
class _Pairs:
    """One hash partition: both sides' rows in, one row out (missing-id counts and the moments or the pairs)."""

    on: tuple[str, ...]
    by: tuple[str, ...]
    metrics: tuple[str, ...]
    collect: bool

    @property
    def __name__(self) -> str:  # Ray's map_groups names the task after its function
        return "pair_partition"

    def __call__(self, group: pa.Table) -> pa.Table:
        frame = pl.from_arrow(group)
        left = frame.filter(pl.col(_SIDE) == 0).drop(_SIDE, _PART)
        right = frame.filter(pl.col(_SIDE) == 1).select(*self.on, *[m + "__b" for m in self.metrics])
        for side, name in ((left, "a"), (right, "b")):
            try:
                check_ids(side, list(self.on), name)
            except SchemaError as error:
                raise without_row(error) from None
        left = left.drop([m + "__b" for m in self.metrics])
        only_a = left.select(self.on).join(right.select(self.on), on=list(self.on), how="anti")
        only_b = right.select(self.on).join(left.select(self.on), on=list(self.on), how="anti")
        paired = left.join(right, on=list(self.on), how="inner")
        payload = paired if self.collect else self._moments(paired)
        return pa.table(
            {
                "missing_a": [only_a.height],
                "missing_b": [only_b.height],
                "sample_a": pa.array([frame_to_bytes(only_a.head(5))], pa.binary()),
                "sample_b": pa.array([frame_to_bytes(only_b.head(5))], pa.binary()),
                "pairs": [paired.height],
                "payload": pa.array([frame_to_bytes(payload)], pa.binary()),
            }
        )

    def _moments(self, paired: pl.DataFrame) -> pl.DataFrame:
        """Per (slice, metric): n, sum_a, sum_b, mean and m2 of d = b - a over pairs with both scores."""
        slices = [c for c in self.by]
        parts = []
        keys = paired.select(slices).unique() if slices else None
        for name in self.metrics:
            a, b = pl.col(name + "__a"), pl.col(name + "__b")
            both = paired.filter(a.is_not_null() & b.is_not_null()).with_columns((b - a).alias("_d"))
            aggs = [
                pl.len().cast(pl.Int64).alias("n"),
                a.sum().alias("sum_a"),
                b.sum().alias("sum_b"),
                pl.col("_d").mean().alias("mean_d"),
                ((pl.col("_d") - pl.col("_d").mean()) ** 2).sum().alias("m2_d"),
            ]
            cell = both.group_by(slices, maintain_order=True).agg(aggs) if slices else both.select(aggs)
            if slices:  # slices whose pairs all lack this metric still count (n = 0), as locally
                cell = keys.join(cell, on=slices, how="left", nulls_equal=True).with_columns(pl.col("n").fill_null(0))
            parts.append(cell.with_columns(pl.lit(name).alias("metric")))
        return pl.concat(parts, how="vertical_relaxed")


def _sides(a: Any, b: Any, on: list[str], metrics: Any, by: list[str]) -> tuple[list[str], list[str], dict[str, Any]]:
    """The checks of rf.compare on both schemas: metrics compared, slices, and integer id widenings."""
    with original_errors():
        left, right = empty_frame(a), empty_frame(b)
    for frame, side in ((left, "a"), (right, "b")):
        for name in on:
            if name not in frame.columns:
                raise SchemaError(f"missing id column in {side}", column=name, available=frame.columns)
    names = compared_metrics(left, right, metrics, [*on, *by])
    left, names, by = prepare_scores(left, names, by)
    prepare_scores(right, names, None)
    widened, _ = same_id_types(left, right, on)
    casts = {
        c: widened.schema[c] for c in on if widened.schema[c] != left.schema[c] or right.schema[c] != left.schema[c]
    }
    return names, by, {"casts": casts, "by_dtypes": [left.schema[c] for c in by]}


def _partitioned(a: Any, b: Any, on: list[str], names: list[str], by: list[str], info: dict[str, Any], p: int) -> Any:
    casts = tuple(info["casts"].items())
    sides = [
        ds.map_batches(
            _Side(i, tuple(on), tuple(by), tuple(names), tuple(info["by_dtypes"]), casts, p), batch_format="pyarrow"
        )
        for i, ds in enumerate((a, b))
    ]
    return sides[0].union(sides[1])


def _gather(groups: Any, limit: int | None = None) -> tuple[pl.DataFrame, list[bytes]]:
    """The small columns of every partition's row, and the payloads.

    With a ``limit`` (of pairs), payloads are kept only while the pairs seen so far are within
    it; beyond, they are dropped as they arrive (the driver never holds more than the limit and
    one batch) and only the counts are kept, so the refusal can name the total.
    """
    rows, payloads, seen = [], [], 0
    with original_errors():
        for batch in prepared(groups).iter_batches(batch_format="pyarrow", batch_size=None):
            small = pl.from_arrow(batch.drop_columns(["payload"]))
            rows.append(small)
            seen += int(small["pairs"].sum())
            if limit is None or seen <= limit:
                payloads += batch.column("payload").to_pylist()
            else:
                payloads = []
    return pl.concat(rows) if rows else pl.DataFrame(), payloads


def _check_missing(summary: pl.DataFrame, on: list[str]) -> None:
    for side, other in (("a", "b"), ("b", "a")):
        count = int(summary[f"missing_{side}"].sum())
        if count:
            samples = pl.concat([frame_from_bytes(x) for x in summary[f"sample_{side}"]]).head(5)
            sample = [r[0] if len(r) == 1 else r for r in samples.rows()]
            raise SchemaError(
                f"{count} id(s) of {side} are missing from {other}, e.g. {sample}; "
                "pass {how} to compare the shared ids only",
                column=on[0],
                mentions={"how": "'inner'"},
            )


def _merged_moments(parts: list[pl.DataFrame], by: list[str]) -> pl.DataFrame:
    """Moments of all partitions per (slice, metric): sums added, mean and m2 by Chan's update."""
    frame = pl.concat(parts, how="vertical_relaxed")
    n = pl.col("n")
    total = n.sum()
    mean = (pl.col("mean_d").fill_null(0.0) * n).sum() / total
    return frame.group_by([*by, "metric"], maintain_order=True).agg(
        total.alias("n"),
        pl.col("sum_a").fill_null(0.0).sum(),
        pl.col("sum_b").fill_null(0.0).sum(),
        pl.when(total > 0).then(mean).alias("mean_d"),
        pl.when(total > 0)
        .then(pl.col("m2_d").fill_null(0.0).sum() + (n * (pl.col("mean_d").fill_null(0.0) - mean) ** 2).sum())
        .alias("m2_d"),
    )


def _t_from_moments(
    moments: pl.DataFrame, names: list[str], by: list[str], alpha: float, correction: Any
) -> pl.DataFrame:
    """rf.compare's t-test result from merged moments (the paired-test kernel's t, correction and result)."""
    if by:
        keys = moments.select(by).unique()
        keys = keys.with_columns(dense_code(by).alias("_code")).sort("_code")
    else:
        keys = pl.DataFrame({"_code": [0]})
    groups = keys.height
    cells = moments.join(keys, on=by, how="left", nulls_equal=True) if by else moments.with_columns(_code=pl.lit(0))
    index = cells["metric"].replace_strict({m: i for i, m in enumerate(names)}, return_dtype=pl.Int64).to_numpy()
    seg = Segments.from_moments(
        len(names),
        groups,
        index * groups + cells["_code"].to_numpy(),
        cells["n"].to_numpy().astype(np.int64),
        cells["sum_a"].to_numpy(),
        cells["sum_b"].to_numpy(),
        cells["mean_d"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
        cells["m2_d"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
    )
    statistic, p, ci_low, ci_high = t_test(seg, 1 - alpha)
    adjusted = adjust_p_values(p, correction)
    out = result_frame(seg, names, statistic, p, adjusted, ci_low, ci_high, alpha)
    out = out.with_columns(pl.lit("t").alias("test"))
    if by:
        out = out.join(keys.rename({"_code": "_group"}), on="_group", how="left", maintain_order="left")
    return out.select(*by, *COMPARE_COLUMNS, "test")


@public
def compare_datasets(
    a: Any,
    b: Any,
    /,
    *,
    on: str | Sequence[str] = DEFAULTS.on,
    metrics: str | Sequence[str] | None = DEFAULTS.metrics,
    by: str | Sequence[str] | None = DEFAULTS.by,
    test: str = DEFAULTS.test,
    alpha: float = DEFAULTS.alpha,
    correction: str | None = DEFAULTS.correction,
    how: str = DEFAULTS.how,
    n_resamples: int = DEFAULTS.n_resamples,
    seed: int | None = DEFAULTS.seed,
    num_partitions: int | None = None,
    max_collected_pairs: int = DEFAULT_MAX_COLLECTED_PAIRS,
) -> pl.DataFrame:
    """:func:`ragframe.compare` of two Ray Datasets of scores, paired on the cluster (see the module doc).

    The datasets come first, ``a`` (the reference) then ``b``; every option is keyword-only,
    in the order and with the defaults of :func:`ragframe.compare`
    (:class:`ragframe.stats.options.ComparisonOptions`), then the cluster's own.

    Parameters
    ----------
    a, b : ray.data.Dataset
        Scored rows of two pipelines on the same samples.
    on, metrics, by, test, alpha, correction, how, n_resamples, seed
        As in :func:`ragframe.compare` (``by`` columns are taken from ``a``).
    num_partitions : int, optional
        Hash partitions of the ids (each is paired in one task: rows / partitions pairs must
        fit a worker); default twice the cluster's CPUs.
    max_collected_pairs : int
        The most pairs ``"wilcoxon"``, ``"permutation"`` and ``"bootstrap"`` bring to the
        driver; beyond it they raise :class:`CollectLimitError` (``"t"`` collects none).

    Returns
    -------
    polars.DataFrame
        The columns of :func:`ragframe.compare`.

    Examples
    --------
    >>> import ray  # doctest: +SKIP
    >>> a, b = ray.data.read_parquet("runs/a/"), ray.data.read_parquet("runs/b/")  # doctest: +SKIP
    >>> compare_datasets(a, b, on="id", test="t")  # doctest: +SKIP
    """
    ray = require_ray()
    options = ComparisonOptions.check(
        on=on,
        metrics=metrics,
        by=by,
        test=test,
        alpha=alpha,
        correction=correction,
        how=how,
        n_resamples=n_resamples,
        seed=seed,
    )
    limit = validate.positive_int(max_collected_pairs, "max_collected_pairs")
    on_cols, group_by = list(options.on), list(options.by or [])
    wanted = None if options.metrics is None else list(options.metrics)
    names, group_by, info = _sides(a, b, on_cols, wanted, group_by)
    if num_partitions is None:
        num_partitions = max(1, 2 * int(ray.cluster_resources().get("CPU", 1)))
    partitions = validate.positive_int(num_partitions, "num_partitions")
    union = _partitioned(a, b, on_cols, names, group_by, info, partitions)
    slices = tuple(c for c in group_by if c not in on_cols)
    pairs = _Pairs(tuple(on_cols), slices, tuple(names), collect=options.test != "t")
    groups = union.groupby(_PART, num_partitions=partitions).map_groups(pairs, batch_format="pyarrow")
    if options.test == "t":
        summary, payloads = _gather(groups)
        if options.how == "error":
            _check_missing(summary, on_cols)
        moments = _merged_moments([frame_from_bytes(p) for p in payloads], list(slices))
        return _t_from_moments(moments, names, list(slices), options.alpha, options.correction)
    summary, payloads = _gather(groups, limit=limit)
    if options.how == "error":
        _check_missing(summary, on_cols)
    return _collected(payloads, summary, names, group_by, limit, options)


def _collected(
    payloads: list[bytes],
    summary: pl.DataFrame,
    names: list[str],
    by: list[str],
    limit: int,
    options: ComparisonOptions,
) -> pl.DataFrame:
    """Collect the pairs (refused beyond ``limit``) and run rf.compare on them, sorted by id."""
    on, test = list(options.on), options.test
    count = int(summary["pairs"].sum()) if summary.height else 0
    if count > limit:
        raise CollectLimitError(
            f"compare_datasets: {{test}} needs every paired difference on the driver, and there are "
            f"{count:,} pairs, more than max_collected_pairs={limit:,}; use {{test#2}} (computed from "
            "mergeable moments, nothing collected), compare a sample or slices, or raise max_collected_pairs "
            "if the driver has the memory (about 8 bytes per score per side per pair)",
            mentions={"test": f"{test!r}", "test#2": "'t'"},
        )
    paired = pl.concat([frame_from_bytes(p) for p in payloads], how="vertical_relaxed").sort(on)
    slices = [c for c in by if c not in on]
    left = paired.select(*on, *slices, *[pl.col(m + "__a").alias(m) for m in names])
    right = paired.select(*on, *[pl.col(m + "__b").alias(m) for m in names])
    return compare(left, right, metrics=names, by=by or None, **(options.paired_test() | {"how": "inner"}))
