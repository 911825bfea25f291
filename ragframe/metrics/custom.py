"""The ``custom`` family: user metrics written as columnar functions, registered once.

A custom metric's kernel receives a polars DataFrame holding its input columns under their
role names (``answer``, ``contexts``, ...: renamed by the usual keywords, e.g.
``answer="response"``) and returns one score per row (a polars Series, a NumPy array or a
list; null for no score). The kernel must score each row on its own: the invariance suite
checks that for every registered metric.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> def answer_words(view):
...     return view["answer"].str.count_matches(r"\\S+").cast(pl.Float64)
>>> _ = rf.register_metric(rf.Metric("answer_words", "custom", ("answer",), "Words in the answer.",
...                                  kernel=answer_words, bounds=None))
>>> rf.evaluate(pl.DataFrame({"response": ["a b c"]}), ["answer_words"], answer="response")["answer_words"][0]
3.0
>>> rf.unregister_metric("answer_words")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from ragframe.exceptions import RagframeError
from ragframe.metrics.registry import Family, Requests, register_family

__all__: list[str] = []


def _column(role: str, options: Mapping[str, Any]) -> str:
    named = options.get(role)
    return named if isinstance(named, str) and named else role


def _columns(requests: Requests, options: Mapping[str, Any], available: Sequence[str]):
    return {role: _column(role, options) for metric, _ in requests for role in metric.inputs}


def _score(view: pl.DataFrame, requests: Requests, options: Mapping[str, Any]):
    out = []
    for metric, k in requests:
        inputs = view.select([pl.col(_column(role, options)).alias(role) for role in metric.inputs])
        values = metric.kernel(inputs) if k is None else metric.kernel(inputs, k)
        series = pl.Series(metric.column(k), values, nan_to_null=True) if not isinstance(values, pl.Series) else values
        if series.len() != view.height or not (series.dtype.is_numeric() or series.dtype == pl.Null):
            raise RagframeError(
                f"custom metric {metric.name!r} returned {series.len()} values of type {series.dtype} "
                f"for {view.height} rows; expected one number per row"
            )
        out.append(series.cast(pl.Float64).fill_nan(None).rename(metric.column(k)))
    return pl.DataFrame(out, height=view.height)


def _check(options: dict[str, Any]) -> dict[str, Any]:
    return options


# callbacks read any column role the caller maps (rf.evaluate(df, ["mine"], my_role="col")): every option
register_family(Family(name="custom", score=_score, options={}, check=_check, columns=_columns, reads=None))
