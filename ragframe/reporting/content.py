"""What a report shows, gathered as frames: its columns, the summaries, the comparison, the agreement, the worst rows.

Everything here aggregates over *all* rows; only the pictures (:mod:`ragframe.reporting.figures`)
are drawn from a sample. Nothing here writes HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.judges.base import STATUSES
from ragframe.metrics.registry import metric_for_column, parse_column, passed_column, score_columns
from ragframe.reporting.inputs import Source
from ragframe.stats.compare import compare
from ragframe.stats.estimate import check_labels, estimate
from ragframe.stats.summary import summarize
from ragframe.stats.validity import agreement_with_labels

__all__ = [
    "AGREEMENT_RESAMPLES",
    "ASKED_COLUMNS",
    "MAX_SLICES",
    "ROW",
    "TEXT_CHARS",
    "Plan",
    "agreement_table",
    "comparison_table",
    "estimate_table",
    "identical_columns",
    "numeric_frame",
    "plan_report",
    "ranking_groups",
    "sample_frame",
    "shown_texts",
    "slice_summaries",
    "status_table",
    "worst_rows",
]
#: Display name of the row-number column of the worst-rows tables (0-based position in the input).
ROW = "row"
_ROW_INDEX = "__ragframe_row"
#: Characters of a text (question, answer, context chunk, signal, reason) shown in the worst-rows tables.
TEXT_CHARS = 300
#: Texts shown with every metric's worst rows, when the scores have them: what was asked.
ASKED_COLUMNS = ("query", "question")
#: Texts a metric reads, shown with its worst rows when it reads them (unregistered metrics: the answer).
_INPUT_TEXTS = ("answer", "contexts", "ground_truth")
#: Context chunks shown per row (then "… N more chunks").
CHUNKS_SHOWN = 10
#: Up to this many worst rows are read as one-row slices of the input, more in one streaming pass.
_SLICED_ROWS = 256
#: Most distinct values a slice (``by``) column may have in a report.
MAX_SLICES = 50
#: Seed of the uniform sample the pictures are drawn from.
SAMPLE_SEED = 0
#: Bootstrap resamples of the agreement table's AUROC interval (rf.agreement_with_labels defaults
#: to 2,000: about 70 s per metric at a million labelled rows; 200 take about 8 s).
AGREEMENT_RESAMPLES = 200


@dataclass(frozen=True)
class Plan:
    """The columns a report uses, checked against the input's schema.

    Attributes
    ----------
    metrics : list of str
        Score columns.
    by : list of str
        Slice columns.
    labels : dict or list of str or None
        ``{metric: label column}`` or label columns paired with every metric.
    on : list of str
        Id columns (pair the rows of a comparison; identify the worst rows when present).
    ids : list of str
        The ``on`` columns the input has.
    """

    metrics: list[str]
    by: list[str]
    labels: dict[str, str] | list[str] | None
    on: list[str]
    ids: list[str]

    @property
    def label_columns(self) -> list[str]:
        """Every label column, once, in order."""
        if self.labels is None:
            return []
        values = self.labels.values() if isinstance(self.labels, dict) else self.labels
        return list(dict.fromkeys(values))


def _require(schema: pl.Schema, columns: Sequence[str], what: str) -> None:
    for name in columns:
        if name not in schema:
            raise SchemaError(f"missing {what} column", column=name, available=list(schema))


def _labels(labels: Any) -> dict[str, str] | list[str] | None:
    if labels is None:
        return None
    if isinstance(labels, Mapping):
        pairs = {validate.column_name(k, "labels"): v for k, v in labels.items()}
        if not pairs:
            raise validate.fail("labels", "a non-empty {metric: label column} dict", labels)
        return {k: validate.column_name(v, "labels") for k, v in pairs.items()}
    return validate.column_list(labels, "labels")


def plan_report(schema: pl.Schema, metrics: Any, by: Any, labels: Any, on: Any) -> Plan:
    """Check the report's column arguments against ``schema``; the :class:`Plan`.

    Examples
    --------
    >>> import polars as pl
    >>> schema = pl.Schema({"id": pl.Int64, "model": pl.String, "mrr": pl.Float64, "human": pl.Int8})
    >>> plan = plan_report(schema, None, "model", {"mrr": "human"}, "id")
    >>> plan.metrics, plan.by, plan.label_columns, plan.ids
    (['mrr'], ['model'], ['human'], ['id'])
    """
    group_by = [] if by is None else validate.column_list(by, "by", allow_empty=True)
    on_cols = validate.column_list(on, "on")
    pairs = _labels(labels)
    _require(schema, group_by, "slice (by)")
    plan = Plan([], group_by, pairs, on_cols, [c for c in on_cols if c in schema])
    _require(schema, plan.label_columns, "label")
    if isinstance(pairs, dict):
        _require(schema, list(pairs), "score (labels key)")
    taken = {*group_by, *plan.label_columns, *on_cols}
    if metrics is None:
        names = [c for c in score_columns(schema) if c not in taken]
        if not names:
            raise SchemaError(
                "no ragframe score columns found; pass {metrics} to name them",
                available=list(schema),
                mentions={"metrics": "[...]"},
            )
    else:
        names = validate.column_list(metrics, "metrics")
        _require(schema, names, "score")
    return Plan(names, group_by, pairs, on_cols, plan.ids)


def numeric_frame(source: Source, plan: Plan) -> pl.DataFrame:
    """Every row of the columns the statistics need: ids, slices, labels, scores and their pass flags."""
    flags = [passed_column(m) for m in plan.metrics if passed_column(m) in source.schema]
    columns = list(dict.fromkeys([*plan.ids, *plan.by, *plan.label_columns, *plan.metrics, *flags]))
    return source.frame.select(columns).collect()


def status_table(source: Source, plan: Plan) -> pl.DataFrame | None:
    """Per judged metric: rows, rows scored and their share, and the rows of each judge status.

    A metric is judged when the input has its ``<metric>_status`` column (the judge metrics,
    ``mode="llm"`` / ``"hybrid"``). The statuses counted are those of
    :data:`ragframe.judges.STATUSES` that occur, in that order, a column each; ``null`` counts
    the rows the judge was not asked about (no status). None when no metric is judged.

    Examples
    --------
    >>> import polars as pl
    >>> from ragframe.reporting.inputs import load_source
    >>> scores = pl.DataFrame({"judge_faithfulness": [1.0, None, 0.5, None],
    ...                        "judge_faithfulness_status": ["ok", "timeout", "ok", "parse_error"]})
    >>> plan = Plan(["judge_faithfulness"], [], None, ["id"], [])
    >>> status_table(load_source(scores, "scores"), plan).row(0)
    ('judge_faithfulness', 4, 2, 0.5, 2, 1, 1)
    """
    judged = [m for m in plan.metrics if f"{m}_status" in source.schema]
    if not judged:
        return None
    counts = pl.concat(
        [
            source.frame.group_by(pl.col(f"{m}_status").alias("status"))
            .agg(pl.len().alias("rows"), pl.col(m).is_not_null().sum().alias("scored"))
            .with_columns(pl.lit(m).alias("metric"))
            for m in judged
        ]
    ).collect()
    statuses = [s for s in STATUSES if s in counts["status"]] + (["null"] if counts["status"].null_count() else [])
    wide = (
        counts.with_columns(pl.col("status").fill_null("null"))
        .pivot("status", index="metric", values="rows", aggregate_function="sum")
        .join(counts.group_by("metric").agg(pl.col("rows", "scored").sum()), on="metric")
    )
    order = pl.DataFrame({"metric": judged}).with_row_index("__order")
    return (
        wide.join(order, on="metric")
        .sort("__order")
        .select(
            "metric",
            pl.col("rows").cast(pl.Int64),
            pl.col("scored").cast(pl.Int64),
            (pl.col("scored") / pl.col("rows")).alias("share_scored"),
            *[pl.col(s).fill_null(0).cast(pl.Int64) for s in statuses],
        )
    )


def sample_frame(frame: pl.DataFrame, rows: int) -> pl.DataFrame:
    """A seeded uniform sample of ``rows`` rows (the frame itself when it is not larger).

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"x": range(10)})
    >>> sample_frame(frame, 3).height, sample_frame(frame, 20).height
    (3, 10)
    """
    return frame if frame.height <= rows else frame.sample(n=rows, seed=SAMPLE_SEED)


def slice_summaries(frame: pl.DataFrame, plan: Plan) -> dict[str, pl.DataFrame]:
    """``rf.summarize(..., by=column)`` for each slice column, on every row.

    A column with more than :data:`MAX_SLICES` distinct values (an id, a free text, a score)
    is refused with a :class:`SchemaError` naming it: its table and heatmap would be
    unreadable, and as long as the input.
    """
    counts = frame.select(pl.col(plan.by).n_unique()).row(0) if plan.by else ()
    for column, count in zip(plan.by, counts):
        if count > MAX_SLICES:
            raise SchemaError(
                "too many slices for a report",
                column=column,
                expected=f"at most {MAX_SLICES} distinct values (a category such as a model or a topic)",
                found=f"{count:,} distinct values",
            )
    return {column: summarize(frame, metrics=plan.metrics, by=column) for column in plan.by}


def identical_columns(frame: pl.DataFrame, summary: pl.DataFrame) -> list[list[str]]:
    """Groups of score columns equal on every row (nulls included), so the page can say why their pictures coincide.

    Only columns whose summaries (count, nulls, mean, std) are equal are compared row by row.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"a": [0.1, None, 0.3], "b": [0.1, None, 0.3], "c": [0.1, 0.2, 0.3]})
    >>> identical_columns(frame, summarize(frame, metrics=["a", "b", "c"]))
    [['a', 'b']]
    """
    groups: dict[tuple, list[str]] = {}
    for row in summary.iter_rows(named=True):  # a row per metric
        key = tuple(row[c] for c in ("count", "null_count", "mean", "std"))
        groups.setdefault(key, []).append(row["metric"])
    found = []
    for names in groups.values():
        while len(names) > 1:
            first = frame[names[0]].cast(pl.Float64)
            same = [n for n in names if frame[n].cast(pl.Float64).equals(first, check_names=False, null_equal=True)]
            if len(same) > 1:
                found.append(same)
            names = [n for n in names if n not in same]
    return found


def comparison_table(frame: pl.DataFrame, source: Source, other: Source, plan: Plan) -> pl.DataFrame:
    """``rf.compare(scores, other, on=..., metrics=...)`` on every row of both sides (t test, Holm)."""
    _require(source.schema, plan.on, "id (on)")
    missing = [c for c in [*plan.on, *plan.metrics] if c not in other.schema]
    if missing:
        raise SchemaError(
            "missing column in the compared scores ({compare})",
            column=missing[0],
            available=list(other.schema),
            mentions={"compare": ""},
        )
    columns = list(dict.fromkeys([*plan.on, *plan.metrics]))
    return compare(frame.select(columns), other.frame.select(columns).collect(), on=plan.on, metrics=plan.metrics)


def agreement_table(frame: pl.DataFrame, plan: Plan) -> pl.DataFrame:
    """``rf.agreement_with_labels`` of the scores with the label columns, on every row.

    The AUROC interval is a bootstrap of :data:`AGREEMENT_RESAMPLES` resamples (seed 0), not the
    function's default 2,000, so that a million-row report takes seconds per metric, not a minute.
    """
    options = {"n_resamples": AGREEMENT_RESAMPLES, "seed": 0, "ordinal": _ordinal_labels(frame, plan) or None}
    if isinstance(plan.labels, dict):
        return agreement_with_labels(frame, label_columns=plan.labels, **options)
    return agreement_with_labels(frame, metrics=plan.metrics, label_columns=plan.labels, **options)


def _ordinal_labels(frame: pl.DataFrame, plan: Plan) -> list[str]:
    """Label columns holding values other than 0/1 (a rank scale): the table gives them rank correlations only."""
    names = plan.labels.values() if isinstance(plan.labels, dict) else plan.labels or []
    numeric = [c for c in dict.fromkeys(names) if frame.schema[c].is_numeric()]
    if not numeric:
        return []
    binary = frame.select(pl.col(c).drop_nulls().cast(pl.Float64).is_in([0.0, 1.0]).all() for c in numeric).row(0)
    return [c for c, is_binary in zip(numeric, binary) if not is_binary]


def _label_pairs(plan: Plan) -> list[tuple[str, str]]:
    """(metric, label column) pairs of ``labels=``: the dict's items, or every metric with every label column."""
    if plan.labels is None:
        return []
    if isinstance(plan.labels, dict):
        return list(plan.labels.items())
    return [(metric, label) for metric in plan.metrics for label in plan.labels]


def estimate_table(frame: pl.DataFrame, plan: Plan) -> tuple[pl.DataFrame | None, list[str]]:
    """``rf.estimate`` (PPI++, 95%) of each label column filled on some rows only, with its metric as the prediction.

    Returns the table (``metric``, ``label``, then :func:`ragframe.estimate`'s columns; None when
    no label column is partly filled) and one note per pair left out, saying why: the score
    is null on some rows (an estimate needs the prediction on every row) or the label is not
    0/1 or in [0, 1]. A label column filled on every row (or on none) gives no estimate: the
    agreement section covers it.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"faithfulness": [0.9, 0.2, 0.8, 0.3, 0.7, 0.1], "human": [1, 0, 1, None, None, None]})
    >>> plan = Plan(["faithfulness"], [], {"faithfulness": "human"}, ["id"], [])
    >>> table, notes = estimate_table(frame, plan)
    >>> table.select("metric", "label", "n_labeled", "n_unlabeled").row(0), notes
    (('faithfulness', 'human', 3, 3), [])
    """
    tables, notes = [], []
    for metric, label in _label_pairs(plan):
        labelled = frame.height - frame[label].null_count()
        if not 0 < labelled < frame.height:
            continue
        missing = frame[metric].null_count()
        if missing:
            notes.append(
                f"{metric} / {label}: no estimate, {metric} is null on {missing:,} of the {frame.height:,} rows "
                "(an estimate needs the score on every row)."
            )
            continue
        try:
            check_labels(frame[label], label)
        except SchemaError:
            notes.append(f"{metric} / {label}: no estimate, {label} is not 0/1 or a number in [0, 1].")
            continue
        found = estimate(frame, prediction=metric, label=label)
        tables.append(found.select(pl.lit(metric).alias("metric"), pl.lit(label).alias("label"), pl.all()))
    return (pl.concat(tables) if tables else None), notes


def ranking_groups(metrics: Sequence[str]) -> dict[tuple[str, str], list[str]]:
    """Score columns of cutoff metrics grouped by (prefix, measure); only groups with 2 or more cutoffs.

    Examples
    --------
    >>> ranking_groups(["ndcg_at_1", "ndcg_at_10", "mrr", "recall_at_100", "bm25_ndcg_at_5", "bm25_ndcg_at_10"])
    {('', 'ndcg'): ['ndcg_at_1', 'ndcg_at_10'], ('bm25_', 'ndcg'): ['bm25_ndcg_at_5', 'bm25_ndcg_at_10']}
    """
    groups: dict[tuple[str, str], list[str]] = {}
    for column in metrics:
        parsed = parse_column(column)
        if parsed is not None and parsed.k is not None and parsed.metric is not None:
            groups.setdefault((parsed.prefix, parsed.metric.name.removesuffix("_at_k")), []).append(column)
    return {key: columns for key, columns in groups.items() if len(columns) > 1}


def _worst_positions(frame: pl.DataFrame, metric: str, n: int) -> list[int]:
    """Positions of the ``n`` worst non-null values of ``metric`` (lowest, or highest when lower is better)."""
    registered = metric_for_column(metric)
    lower_is_better = registered is not None and not registered.higher_is_better
    ranked = (
        frame.select(pl.int_range(pl.len(), dtype=pl.Int64).alias(_ROW_INDEX), pl.col(metric))
        .drop_nulls(metric)
        .sort([metric, _ROW_INDEX], descending=[lower_is_better, False])
        .head(n)
    )
    return ranked[_ROW_INDEX].to_list()


def shown_texts(schema: pl.Schema, metric: str) -> list[str]:
    """The text columns shown with ``metric``'s worst rows: what was asked, then the texts the metric reads.

    A metric that reads the contexts but not the answer (``context_precision``, ...) shows the
    contexts it judged; one that reads both (``faithfulness``) shows the answer, its signals
    quoting the sentences the contexts do not support. Unregistered columns show the answer.

    Examples
    --------
    >>> import polars as pl
    >>> schema = pl.Schema({"question": pl.String, "answer": pl.String, "contexts": pl.List(pl.String)})
    >>> shown_texts(schema, "context_relevance"), shown_texts(schema, "faithfulness"), shown_texts(schema, "x")
    (['question', 'contexts'], ['question', 'answer'], ['question', 'answer'])
    """
    registered = metric_for_column(metric)
    reads = ("answer",) if registered is None else registered.inputs
    wanted = [*ASKED_COLUMNS, *(c for c in _INPUT_TEXTS if c in reads and not (c == "contexts" and "answer" in reads))]
    text, chunks = pl.String, pl.List(pl.String)
    return [c for c in wanted if c in schema and schema[c] == (chunks if c == "contexts" else text)]


def _display_expressions(schema: pl.Schema, metric: str) -> list[pl.Expr]:
    """The shown columns of one metric's worst rows: texts truncated, chunks numbered, signals with their evidence."""
    exprs = [  # one expression per shown column (a handful), evaluated on whole columns
        (_chunks(name) if name == "contexts" else _cut(pl.col(name))).alias(name)
        for name in shown_texts(schema, metric)
    ]
    exprs.append(pl.col(metric))
    signals, reason = f"{metric}_signals", f"{metric}_reason"
    if signals in schema:
        exprs.append(_signal_texts(schema[signals], signals))
    if reason in schema:
        exprs.append(_cut(pl.col(reason).cast(pl.String)).alias(reason))
    return exprs


def _cut(text: pl.Expr) -> pl.Expr:
    """``text`` cut at :data:`TEXT_CHARS` characters, an ellipsis marking the cut."""
    return pl.when(text.str.len_chars() > TEXT_CHARS).then(text.str.slice(0, TEXT_CHARS) + "…").otherwise(text)


def _chunks(column: str) -> pl.Expr:
    """A contexts column as numbered chunks ``[0] text…`` (each cut), at most :data:`CHUNKS_SHOWN` of them.

    Examples
    --------
    >>> frame = pl.DataFrame({"contexts": [["a", "b"], [str(i) for i in range(12)]]})
    >>> frame.select(_chunks("contexts")).to_series().to_list()[1][-2:]
    ['[9] 9', '… 2 more chunks']
    """
    chunks = pl.col(column)
    number = pl.int_range(pl.len()).cast(pl.String)
    shown = chunks.list.head(CHUNKS_SHOWN).list.eval(
        pl.concat_str(pl.lit("["), number, pl.lit("] "), _cut(pl.element()))
    )
    more = pl.concat_list(pl.lit("… ") + (chunks.list.len() - CHUNKS_SHOWN).cast(pl.String) + pl.lit(" more chunks"))
    return pl.when(chunks.list.len() > CHUNKS_SHOWN).then(shown.list.concat(more)).otherwise(shown)


def _signal_texts(dtype: pl.DataType, column: str) -> pl.Expr:
    """A signals column as a list of strings: ``severity: message “evidence”`` for ragframe's signal structs."""
    inner = getattr(dtype, "inner", None)
    if isinstance(dtype, pl.List) and isinstance(inner, pl.Struct):
        fields = {f.name for f in inner.fields}
        if {"severity", "message"} <= fields:
            item = pl.element().struct
            entry = _cut(pl.concat_str(item.field("severity"), pl.lit(": "), item.field("message")))
            if "evidence" in fields:  # the sentence or phrase the signal is about
                evidence = item.field("evidence").cast(pl.String)
                quoted = pl.when(evidence.is_not_null() & (evidence != "")).then(
                    pl.lit(" “") + _cut(evidence) + pl.lit("”")
                )
                entry = entry + quoted.otherwise(pl.lit(""))
            return pl.col(column).list.eval(entry)
    if isinstance(dtype, pl.List):
        return pl.col(column).list.eval(_cut(pl.element().cast(pl.String)))
    return pl.concat_list(_cut(pl.col(column).cast(pl.String))).alias(column)


def _rows_at(frame: pl.LazyFrame, positions: list[int], columns: list[pl.Expr]) -> pl.DataFrame:
    """The rows at ``positions`` (sorted, distinct) of ``frame``: ``_ROW_INDEX`` (their position), then ``columns``.

    Up to :data:`_SLICED_ROWS` rows are read as one-row slices (the Parquet reader decodes
    only the row groups holding them); more in one streaming pass over every row.

    Examples
    --------
    >>> frame = pl.LazyFrame({"x": ["a", "b", "c", "d"]})
    >>> _rows_at(frame, [1, 3], [pl.col("x")]).rows()
    [(1, 'b'), (3, 'd')]
    """
    if 0 < len(positions) <= _SLICED_ROWS:
        parts = [frame.slice(p, 1).select(pl.lit(p, dtype=pl.Int64).alias(_ROW_INDEX), *columns) for p in positions]
        return pl.concat(parts, how="vertical").collect()
    return (
        frame.with_row_index(_ROW_INDEX)
        .filter(pl.col(_ROW_INDEX).is_in(positions))
        .select(pl.col(_ROW_INDEX).cast(pl.Int64), *columns)
        .collect(engine="streaming")
    )


def worst_rows(source: Source, frame: pl.DataFrame, plan: Plan, n: int) -> dict[str, pl.DataFrame]:
    """Per metric, its ``n`` worst rows with the id and slice columns, texts, signals and reasons.

    Positions come from ``frame`` (every row of the scores); the texts are read from
    ``source`` for those rows only (:func:`_rows_at`).
    """
    if n == 0:
        return {metric: pl.DataFrame() for metric in plan.metrics}
    positions = {metric: _worst_positions(frame, metric, n) for metric in plan.metrics}
    # at most n x metrics positions (the worst rows): a small set, not a pass over the frame's rows
    wanted = sorted({p for rows in positions.values() for p in rows})
    keys = list(dict.fromkeys([*plan.ids, *plan.by]))
    exprs = {e.meta.output_name(): e for m in plan.metrics for e in _display_expressions(source.schema, m)}
    shown = _rows_at(source.frame, wanted, [*[pl.col(k) for k in keys if k not in exprs], *exprs.values()])
    tables = {}
    for metric, rows in positions.items():
        order = pl.DataFrame({_ROW_INDEX: rows}, schema={_ROW_INDEX: pl.Int64})
        texts = shown_texts(source.schema, metric)
        columns = [*(c for c in keys if c not in texts), *texts, metric]
        columns += [c for c in (f"{metric}_signals", f"{metric}_reason") if c in shown.columns]
        table = order.join(shown, on=_ROW_INDEX, how="left", maintain_order="left")
        tables[metric] = table.select(pl.col(_ROW_INDEX).alias(ROW), *columns)
    return tables
