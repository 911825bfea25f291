"""The ``nuggets`` family: TREC RAG's nugget scores (AutoNuggetizer, Pradeep et al. 2024/2025) as columnar kernels.

A nugget is a key fact a good answer must contain: its ``text``, its ``importance``
(``vital`` or ``okay``) and its ``assignment`` against the answer (``support``,
``partial_support`` or ``not_support``). The ``nuggets`` column holds one list of such structs
per row. The four scores are shares of the nuggets the answer supports:

- ``nugget_strict_vital``: supported vital nuggets / vital nuggets;
- ``nugget_strict_all``: supported nuggets / all nuggets;
- ``nugget_vital``: like strict vital, a partially supported nugget counting 0.5;
- ``nugget_all``: like strict all, a partially supported nugget counting 0.5.

They equal nuggetizer's ``calculate_nugget_scores`` (castorini/nuggetizer), its empty rules
included: a row without nuggets scores 0 on all four, a row without vital nuggets 0 on the
two vital scores. A null ``nuggets`` list gives null scores. Each nugget list is exploded
into one array entry per nugget; every per-row count is a segment count over the column.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> nuggets = [[{"text": "Paris is the capital", "importance": "vital", "assignment": "support"},
...             {"text": "on the Seine", "importance": "okay", "assignment": "partial_support"}]]
>>> out = rf.evaluate(pl.DataFrame({"nuggets": nuggets}), ["nugget_strict_all", "nugget_all"])
>>> out.select("nugget_strict_all", "nugget_all").row(0)
(0.5, 0.75)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import SchemaError
from ragframe.kernels.claims import label_codes, segment_count
from ragframe.metrics.registry import Family, Metric, Requests, check_options, option, register_family, register_metric
from ragframe.metrics.text_engine import Signals

__all__ = ["ASSIGNMENTS", "IMPORTANCES", "NUGGET_METRICS", "NuggetOptions", "NuggetScores", "nugget_table"]

#: A nugget's importance, as AutoNuggetizer labels it.
IMPORTANCES: tuple[str, ...] = ("vital", "okay")
#: A nugget's assignment against an answer; ``partial_support`` counts 0.5 in the non-strict scores.
ASSIGNMENTS: tuple[str, ...] = ("support", "partial_support", "not_support")
#: The dtype of the ``nuggets`` column.
NUGGET_DTYPE = pl.List(pl.Struct({"text": pl.String, "importance": pl.String, "assignment": pl.String}))


@dataclass(frozen=True)
class NuggetOptions:
    """The nuggets family's options: the column it reads."""

    nuggets: str = option(
        "nuggets",
        "Column of the nuggets (list of struct ``{text, importance, assignment}``).",
        check=validate.column_name,
    )


@dataclass(frozen=True)
class NuggetScores:
    """What a nugget score counts: vital nuggets only or all, partial support as 0.5 or as 0."""

    vital_only: bool
    partial: float


def nugget_table(series: pl.Series, column: str) -> pl.DataFrame:
    """One row per nugget: ``row`` (its row), ``vital`` (bool), ``assignment`` (code into ASSIGNMENTS, -1 unassigned).

    Parameters
    ----------
    series : polars.Series
        The ``nuggets`` column. A value that is not a list of structs with ``importance``, an
        importance other than ``vital``/``okay`` or an unknown assignment is a
        :class:`~ragframe.exceptions.SchemaError` naming the row; a null assignment (or no
        ``assignment`` field) is kept as unassigned (-1).
    column, function : str
        Named in errors.

    Returns
    -------
    polars.DataFrame

    Examples
    --------
    >>> s = pl.Series([[{"text": "a", "importance": "okay", "assignment": None}], []])
    >>> nugget_table(s, "nuggets").rows()
    [(0, False, -1)]
    """
    dtype = series.dtype
    fields = (
        {f.name for f in dtype.inner.fields}
        if isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct)
        else None
    )
    if dtype != pl.Null and (fields is None or "importance" not in fields):
        raise SchemaError(
            "wrong dtype",
            column=column,
            expected="list[struct{text, importance, assignment}]",
            found=str(dtype),
        )
    n = series.len()
    lengths = np.zeros(n, np.int64) if dtype == pl.Null else series.list.len().fill_null(0).to_numpy().astype(np.int64)
    row = np.repeat(np.arange(n, dtype=np.int64), lengths)
    schema = {"row": pl.Int64, "vital": pl.Boolean, "assignment": pl.Int8}
    if not row.size:
        return pl.DataFrame(schema=schema)
    flat = series.filter(pl.Series(lengths > 0)).explode()
    if flat.null_count():
        first = int(np.flatnonzero(flat.is_null().to_numpy())[0])
        raise SchemaError("null nugget", column=column, row=int(row[first]),
                          expected="a struct {text, importance, assignment}", found="null")  # fmt: skip
    importance = label_codes(flat.struct.field("importance"), row, IMPORTANCES, column, "nugget importance")
    if "assignment" in fields:
        assigned = flat.struct.field("assignment")
        known = ~assigned.is_null().to_numpy()
        assignment = np.full(row.size, -1, np.int8)
        if known.any():
            assignment[known] = label_codes(
                assigned.filter(pl.Series(known)), row[known], ASSIGNMENTS, column, "nugget assignment"
            )
    else:
        assignment = np.full(row.size, -1, np.int8)
    return pl.DataFrame({"row": row, "vital": importance == 0, "assignment": assignment}, schema=schema)


def _unassigned(table: pl.DataFrame, column: str) -> None:
    missing = table.filter(pl.col("assignment") < 0)
    if missing.height:
        raise SchemaError(
            "nugget without an assignment (the nugget scores read assignments: fill them from TREC RAG's "
            "assignment files, or have a judge label them with judge_nugget_assignment)",
            column=column,
            row=int(missing["row"][0]),
            expected=" or ".join(ASSIGNMENTS),
            found="null",
        )


def _scores(table: pl.DataFrame, n: int, spec: NuggetScores) -> np.ndarray:
    """nuggetizer's score per row: (supported + partial * partially supported) / counted nuggets, 0 with none."""
    row = table["row"].to_numpy()
    counted = table["vital"].to_numpy() if spec.vital_only else np.ones(row.size, bool)
    assignment = table["assignment"].to_numpy()
    supported = segment_count(row, counted & (assignment == 0), n)
    partial = segment_count(row, counted & (assignment == 1), n)
    total = segment_count(row, counted, n)
    out = np.zeros(n, np.float64)
    np.divide(supported + partial * spec.partial, total, out=out, where=total > 0)
    return out


def _column(options: Mapping[str, Any]) -> str:
    named = options.get("nuggets")
    return named if isinstance(named, str) and named else "nuggets"


def _columns(requests: Requests, options: Mapping[str, Any], available: Sequence[str]) -> dict[str, str]:
    return {"nuggets": _column(options)} if requests else {}


def _signals(table: pl.DataFrame, texts: pl.Series, n: int, spec: NuggetScores, name: str) -> pl.Series:
    """``explain=True``: one signal per counted nugget the answer does not fully support (its text as evidence)."""
    row = table["row"].to_numpy()
    lengths = np.bincount(row, minlength=n)[:n]
    position = np.arange(row.size) - (np.cumsum(lengths) - lengths)[row]
    assignment = table["assignment"].to_numpy()
    counted = table["vital"].to_numpy() if spec.vital_only else np.ones(row.size, bool)
    signals = Signals()
    kinds = (
        (2, "unsupported_nugget", "warning", "the answer does not support it"),
        (1, "partially_supported_nugget", "info", "the answer supports part of it"),
    )
    for code, signal, severity, text in kinds:
        keep = counted & (assignment == code)
        messages = pl.select(
            pl.concat_str(pl.lit("nugget "), pl.Series(position[keep] + 1).cast(pl.String), pl.lit(f": {text}"))
        ).to_series()
        signals.add(
            row[keep], position[keep], [signal] * int(keep.sum()), severity, messages, texts.filter(pl.Series(keep))
        )
    return signals.column(f"{name}_signals", n)


def _score(view: pl.DataFrame, requests: Requests, options: Mapping[str, Any]) -> pl.DataFrame:
    column = _column(options)
    series = view.get_column(column)
    table = nugget_table(series, column)
    _unassigned(table, column)
    null = series.is_null().to_numpy()
    explain = options.get("explain") is True
    if explain:
        fields = {f.name for f in series.dtype.inner.fields} if series.dtype != pl.Null else set()
        flat = series.filter(series.list.len().fill_null(0) > 0).explode() if table.height else None
        texts = (flat.struct.field("text").cast(pl.String) if flat is not None and "text" in fields
                 else pl.Series([None] * table.height, dtype=pl.String))  # fmt: skip
    out = []
    for metric, _ in requests:
        values = np.where(null, np.nan, _scores(table, view.height, metric.kernel))
        out.append(pl.Series(metric.name, values, dtype=pl.Float64, nan_to_null=True))
        if explain:
            out.append(_signals(table, texts, view.height, metric.kernel, metric.name))
    return pl.DataFrame(out, height=view.height)


def _check(options: dict[str, Any]) -> dict[str, Any]:
    return check_options(NuggetOptions, options)


register_family(
    Family(name="nuggets", score=_score, options=NuggetOptions, check=_check, columns=_columns, reads=("explain",))
)

_METRICS = {
    "nugget_strict_vital": (NuggetScores(True, 0.0), "Share of the vital nuggets the answer supports (TREC RAG)."),
    "nugget_strict_all": (NuggetScores(False, 0.0), "Share of all nuggets the answer supports (TREC RAG)."),
    "nugget_vital": (NuggetScores(True, 0.5), "Share of the vital nuggets supported, partial support 0.5 (TREC RAG)."),
    "nugget_all": (NuggetScores(False, 0.5), "Share of all nuggets supported, partial support 0.5 (TREC RAG)."),
}
for _name, (_spec, _description) in _METRICS.items():
    register_metric(Metric(name=_name, family="nuggets", inputs=("nuggets",), description=_description, kernel=_spec))

#: The four nugget scores, in nuggetizer's order.
NUGGET_METRICS: tuple[str, ...] = tuple(_METRICS)
