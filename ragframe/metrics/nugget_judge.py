"""``judge_nugget_assignment``: a judge labels every nugget of a row against its answer, in one call.

The prompt (package data, ``ragframe/judges/prompts/nugget_assignment.txt``; ``prompt=`` replaces
it) shows the question, the answer and the row's nuggets numbered ``1. ...``, and asks for
exactly one line per nugget: ``Nugget <i>: support | partial_support | not_support``. The
reading is strict: every nugget answered exactly once, no number outside the list, no other
label; anything else is unreadable and asked again (``parse_retries``), then a
``parse_error``. Labels are read without regard to case, ``partial support`` and
``partial-support`` as ``partial_support``.

It is a metric of the ``judge`` family, so it has that family's machinery: the persistent
cache, ``n_samples``, ``dry_run``, budgets (``budget=``), costs and a status per row. It
writes ``judge_nugget_assignment`` (the row's ``nugget_all`` under the judge's assignments:
(supported + 0.5 x partially supported) / nuggets, averaged over the samples read),
``_reason`` (the counts), ``_status``, ``_error``, ``_std`` (``n_samples > 1``) and
``judge_nugget_assignment_nuggets``: the row's nuggets with ``assignment`` set to the first
readable sample's labels, from which the four nugget scores follow without a judge
(``rf.evaluate(out, ["nugget_vital", ...], nuggets="judge_nugget_assignment_nuggets")``).

A row whose question, answer or nuggets is null is ``skipped`` (no call); a row without
nuggets calls nothing and scores 0 (``ok``), as nuggetizer scores an empty list.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> df = pl.DataFrame({"question": ["Capital of France?"], "answer": ["Paris."],
...                    "nuggets": [[{"text": "Paris is the capital", "importance": "vital", "assignment": None}]]})
>>> out = rf.evaluate(df, ["judge_nugget_assignment"], judge=lambda p: "Nugget 1: support", cache=False)
>>> out.select("judge_nugget_assignment", "judge_nugget_assignment_status").row(0)
(1.0, 'ok')
>>> out["judge_nugget_assignment_nuggets"][0][0]["assignment"]
'support'
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.judges.templates import load_template, render
from ragframe.metrics.judge import JUDGE_THRESHOLD, _leave_out_unchosen, _run, role_column, template_for
from ragframe.metrics.nuggets import ASSIGNMENTS, NUGGET_DTYPE, nugget_table
from ragframe.metrics.registry import Metric, RunState, register_metric
from ragframe.metrics.text_engine import string_column

__all__ = ["NuggetAssignmentSpec", "read_nugget_assignments"]

_LINE = re.compile(r"^\s*[*#>-]*\s*nugget\s*(\d+)\s*[*]*\s*:\s*[*]*\s*(.*?)\s*[*.]*\s*$", re.IGNORECASE)


def read_nugget_assignments(text: str, n: int) -> tuple[list[int] | None, str | None]:
    """Read one ``Nugget <i>: <label>`` line per nugget: the labels as codes into ASSIGNMENTS, or why not.

    Parameters
    ----------
    text : str
        The judge's reply.
    n : int
        How many nuggets the prompt listed.

    Returns
    -------
    tuple
        ``(codes, None)`` when every nugget 1..n has exactly one line with a known label;
        ``(None, error)`` otherwise. Lines that do not start with ``Nugget <i>:`` are ignored.

    Examples
    --------
    >>> read_nugget_assignments("Nugget 1: support\\nNugget 2: Partial support", 2)
    ([0, 1], None)
    >>> read_nugget_assignments("Nugget 1: support", 2)[1]  # doctest: +ELLIPSIS
    'no line for nugget 2 (2 nuggets, each answered once as Nugget <i>: ...)'
    """
    found: dict[int, int] = {}
    asked = f"{n} nuggets, each answered once as Nugget <i>: support, partial_support or not_support"
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        number, label = int(match[1]), re.sub(r"[\s-]+", "_", match[2].strip().lower())
        if not 1 <= number <= n:
            return None, f"a line for nugget {number}, which is not listed ({asked})"
        if label not in ASSIGNMENTS:
            return None, f"nugget {number}: unknown label {match[2]!r} ({asked})"
        if number in found:
            return None, f"nugget {number} answered twice ({asked})"
        found[number] = ASSIGNMENTS.index(label)
    missing = [i for i in range(1, n + 1) if i not in found]
    if missing:
        return None, f"no line for nugget {missing[0]} ({asked})"
    return [found[i] for i in range(1, n + 1)], None


def _nugget_texts(series: pl.Series, column: str) -> list[list[str] | None]:
    fields = {f.name for f in series.dtype.inner.fields} if series.dtype != pl.Null else {"text"}
    if "text" not in fields:
        raise SchemaError(
            "nuggets without text", column=column,
            expected="list[struct{text, importance, assignment}]", found=str(series.dtype),
        )  # fmt: skip
    if series.dtype == pl.Null:
        return [None] * series.len()
    texts = series.list.eval(pl.element().struct.field("text"))
    row = texts.list.eval(pl.element().is_null()).list.any().fill_null(False)
    if row.any():
        raise SchemaError("nugget without text", column=column,
                          row=int(row.arg_true()[0]), expected="str", found="null")  # fmt: skip
    return texts.to_list()


@dataclass(frozen=True)
class NuggetAssignmentSpec:
    """The judge metric's own prompts and reading (the judge family calls :meth:`score_rows` and :meth:`prompts`)."""

    template: str
    scoring: str = "nuggets"

    def prompts(
        self, view: pl.DataFrame, template: str, options: Mapping[str, Any]
    ) -> tuple[list[str | None], list[str | None], list[int]]:
        """Each row's prompt (None: not asked), why not, and its number of nuggets."""
        column = role_column("nuggets", options)
        series = view.get_column(column)
        nugget_table(series, column)  # the shape and labels, checked (assignments may be null)
        texts = _nugget_texts(series, column)
        questions = string_column(view, role_column("question", options)).to_list()
        answers = string_column(view, role_column("answer", options)).to_list()
        prompts: list[str | None] = []
        skipped: list[str | None] = []
        counts: list[int] = []
        for question, answer, nuggets in zip(questions, answers, texts):
            counts.append(0 if nuggets is None else len(nuggets))
            null = next(
                (r for r, v in (("question", question), ("answer", answer), ("nuggets", nuggets)) if v is None), None
            )
            if null is not None or not nuggets:
                prompts.append(None)
                skipped.append(f"null {null}: not judged" if null else None)
                continue
            listed = "\n".join(f"{i}. {text}" for i, text in enumerate(nuggets, start=1))
            prompts.append(render(template, {"question": question, "answer": answer, "nuggets": listed}))
            skipped.append(None)
        return prompts, skipped, counts

    def score_rows(self, view: pl.DataFrame, metric: Metric, options: Mapping[str, Any], state: RunState) -> list:
        """The metric's columns: score, ``_reason``, ``_status``, ``_error`` (``_std``) and ``_nuggets``."""
        name = metric.name
        prompts, skipped, counts = self.prompts(view, template_for(metric, options), options)
        _leave_out_unchosen(prompts, skipped, name, state.budget)
        if any(p is not None for p in prompts):
            if options["judge"] is None:
                raise InvalidParameterError(
                    f"judge metric {name!r} needs {{judge}} (a callable prompt -> str)",
                    mentions={"judge": ""},
                )
            replies = _run(options["judge"], prompts, name, options, _checker(counts), state)
        else:
            replies = pl.DataFrame(schema={"row": pl.Int64, "sample": pl.Int64, "text": pl.String,
                                           "status": pl.String, "error": pl.String})  # fmt: skip
        column = role_column("nuggets", options)
        out = _aggregate(replies, skipped, counts, prompts)
        labels: list[list[str] | None] = [None] * view.height
        for row, codes in out.codes.items():
            labels[row] = [ASSIGNMENTS[c] for c in codes]
        for row, count in enumerate(counts):
            if count == 0 and prompts[row] is None and skipped[row] is None:
                labels[row] = []
        series = view.get_column(column)
        filled = _filled(None if series.dtype == pl.Null else series, labels, view.height)
        columns = [
            pl.Series(name, out.scores, dtype=pl.Float64),
            pl.Series(f"{name}_reason", out.reasons, dtype=pl.String),
            pl.Series(f"{name}_status", out.statuses, dtype=pl.String),
            pl.Series(f"{name}_error", out.errors, dtype=pl.String),
        ]
        if options["n_samples"] > 1:
            columns.append(pl.Series(f"{name}_std", out.stds, dtype=pl.Float64))
        columns.append(filled.rename(f"{name}_nuggets"))
        return columns


def _checker(counts: list[int]) -> Callable[[int, str], str | None]:
    def check(row: int, text: str) -> str | None:
        return read_nugget_assignments(text, counts[row])[1]

    return check


@dataclass
class _Aggregated:
    scores: list[float | None]
    stds: list[float | None]
    reasons: list[str | None]
    statuses: list[str]
    errors: list[str | None]
    codes: dict[int, list[int]]


def _aggregate(replies: pl.DataFrame, skipped: list[str | None], counts: list[int], prompts: list) -> _Aggregated:
    """Per row: the mean nugget_all over the samples read, their std, the first sample's labels, status and error."""
    n = len(skipped)
    samples: list[list[float]] = [[] for _ in range(n)]
    codes: dict[int, list[int]] = {}
    failure: list[tuple[str, str | None] | None] = [None] * n
    for row, status, text, error in replies.sort("row", "sample").select("row", "status", "text", "error").iter_rows():
        if status in ("ok", "parse_error") and text is not None:
            read, why = read_nugget_assignments(text, counts[row])
            if read is not None:
                support = sum(c == 0 for c in read) + 0.5 * sum(c == 1 for c in read)
                samples[row].append(support / counts[row])
                codes.setdefault(row, read)
                continue
            status, error = "parse_error", error if error is not None else why
        if failure[row] is None:
            failure[row] = (status, error)
    out = _Aggregated([], [], [], [], [], codes)
    for i in range(n):
        values = samples[i]
        out.scores.append(float(np.mean(values)) if values else None)
        out.stds.append(float(np.std(values, ddof=1)) if len(values) > 1 else None)
        if values:
            read = codes[i]
            counted = [sum(c == k for c in read) for k in range(3)]
            out.reasons.append(
                f"{counted[0]} supported, {counted[1]} partially supported, {counted[2]} not supported "
                f"of {counts[i]} nuggets"
            )
            out.statuses.append("ok")
            out.errors.append(None)
        elif prompts[i] is None and skipped[i] is None:  # no nuggets: nothing to ask, 0 as nuggetizer
            out.scores[-1] = 0.0
            out.reasons.append("no nuggets: 0, as nuggetizer scores an empty list")
            out.statuses.append("ok")
            out.errors.append(None)
        elif skipped[i] is not None:
            out.reasons.append(None)
            out.statuses.append("skipped")
            out.errors.append(skipped[i])
        else:
            status, error = failure[i] or ("skipped", None)
            out.reasons.append(None)
            out.statuses.append(status)
            out.errors.append(error if error is not None or status != "skipped" else "dry run: not judged")
    return out


def _filled(nuggets: pl.Series | None, labels: list[list[str] | None], n: int) -> pl.Series:
    """The nuggets (text, importance) with the judge's labels as ``assignment``; null where the judge gave none."""
    values = nuggets.to_list() if nuggets is not None else [None] * n
    out: list[list[dict[str, Any]] | None] = []
    for value, assigned in zip(values, labels):
        if value is None or assigned is None:
            out.append(None)
            continue
        out.append(
            [{"text": x["text"], "importance": x["importance"], "assignment": a} for x, a in zip(value, assigned)]
        )
    return pl.Series(values=out, dtype=NUGGET_DTYPE)


register_metric(
    Metric(
        name="judge_nugget_assignment",
        family="judge",
        inputs=("question", "answer", "nuggets"),
        description="Share of the nuggets the judge finds the answer supports, partial support 0.5 (TREC RAG).",
        kernel=NuggetAssignmentSpec(load_template("nugget_assignment")),
        threshold=JUDGE_THRESHOLD,
        by_default=False,  # reads a nuggets column: computed when named, not with the judge family
    )
)
