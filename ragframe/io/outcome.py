"""What a Parquet run did (:class:`ParquetEvaluation`), its judge outcomes, and when it counts as failed.

A run that scored or judged nothing is not a success: :func:`check_outcome` raises
:class:`~ragframe.exceptions.RunFailedError` when the log has no rows, when every row was
rejected, when a judge metric scored no row, or when more judge rows failed than
``max_failure_rate`` allows (see :data:`NOT_FAILED`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ragframe import validate
from ragframe.exceptions import (
    InvalidParameterError,
    RunFailedError,
)
from ragframe.io.traces.stage import TRACE_REJECTS
from ragframe.judges.base import NOT_FAILED_STATUSES
from ragframe.run.evaluator import Evaluator

__all__ = [
    "ParquetEvaluation",
    "NOT_FAILED",
    "judge_outcomes",
    "merge_judge_outcomes",
    "failure_limit",
    "check_judged",
    "check_outcome",
    "status_lines",
]

#: Statuses of a judge row that are not failures: ``ok`` (scored) and ``skipped`` (not sent to the
#: judge on purpose: a null input, a row hybrid routing left to its heuristic score, a dry run).
#: Every other status (``http_error``, ``rate_limited``, ``timeout``, ``parse_error``, ...) is a failure.
NOT_FAILED = NOT_FAILED_STATUSES
#: The most frequent error messages kept per judge metric (per batch in the manifest, and merged).
_TOP_ERRORS = 3
_ERROR_CHARACTERS = 300


@dataclass
class ParquetEvaluation:
    """What :func:`evaluate_parquet` did.

    Returned by :func:`evaluate_parquet` (not made by hand); the parameters are its
    attributes.

    Parameters
    ----------
    out : Path
        The output folder; ``out / "scores"`` is the scored Parquet dataset.
    rows, scored, rejected : int
        Input rows, rows scored, rows written to ``rejects/``.
    batches, resumed : int
        Batches in the plan, and how many were already done by an earlier run.
    seconds : float
        Wall time of this call.
    summary : polars.DataFrame
        :func:`ragframe.summarize`-style table of every score column over all rows.
    statuses : dict of str to dict of str to int
        Per judge score column (``judge_faithfulness``; ``faithfulness`` in ``mode="llm"``),
        the rows of each ``<column>_status`` value over all scored rows (``{"ok": 28,
        "http_error": 2}``); empty when no metric is judged. Also in the manifest.
    errors : dict of str to dict of str to int
        Per judge score column, its commonest failure messages (``_error`` of the rows whose
        status is a failure, see :data:`NOT_FAILED`) and their row counts, at most three.
    budget : dict, optional
        With a judge budget: ``budget`` (in words), the plan (``planned_calls``,
        ``planned_cost``, ``candidates`` and ``chosen`` rows per judge metric) and what the
        run spent (``calls``, ``cost``: the requests sent and the cost the replies report,
        over every batch). Also in the manifest.
    traces_rejected : int
        With ``input_format`` other than ``"parquet"``: the traces that could not become
        rows (in ``rejects/traces.parquet``, not counted in ``rows``).
    usage : polars.DataFrame, optional
        The judge usage of the run's batches (those of an earlier, resumed run included),
        summed per metric: the columns of :func:`ragframe.judge_usage` (calls, cache hits,
        retries, failures, tokens, cost), also from child processes; empty when nothing was
        judged. Also in the manifest (``judge_usage``). None from the ``ray`` engine.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> import ragframe as rf
    >>> log = pl.DataFrame({"id": [1, 2], "retrieved_ids": [["a", "b"], ["c"]], "relevant_ids": [["b"], ["c"]]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     source, out = pathlib.Path(tmp) / "log.parquet", pathlib.Path(tmp) / "out"
    ...     log.write_parquet(source)
    ...     first = rf.evaluate_parquet(source, out, metrics=["mrr"], progress=False)
    ...     again = rf.evaluate_parquet(source, out, metrics=["mrr"], progress=False)
    >>> first.rows, first.scored, first.rejected, first.batches, first.resumed
    (2, 2, 0, 1, 0)
    >>> again.resumed  # the second call found the batch done
    1
    >>> first.summary.select("metric", "count", "mean").row(0)
    ('mrr', 2, 0.75)
    >>> first.statuses  # no judge metric in this run
    {}
    """

    out: Path
    rows: int
    scored: int
    rejected: int
    batches: int
    resumed: int
    seconds: float
    summary: pl.DataFrame = field(repr=False)
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)
    errors: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    budget: dict[str, Any] | None = field(default=None, repr=False)
    usage: pl.DataFrame | None = field(default=None, repr=False)
    traces_rejected: int = 0

    def failures(self) -> dict[str, int]:
        """Per judge score column, the rows whose status is a failure (not ``ok`` or ``skipped``).

        Examples
        --------
        >>> import polars as pl
        >>> ParquetEvaluation(Path("out"), 3, 3, 0, 1, 0, 0.1, pl.DataFrame(),
        ...                   statuses={"faithfulness": {"ok": 2, "timeout": 1}}).failures()
        {'faithfulness': 1}
        """
        return {
            name: sum(n for status, n in counts.items() if status not in NOT_FAILED)
            for name, counts in self.statuses.items()
        }

    def failure_rates(self) -> dict[str, float | None]:
        """Per judge score column, failed rows over the rows sent to the judge (``skipped`` ones are not).

        None for a column whose every row was skipped.

        Examples
        --------
        >>> import polars as pl
        >>> ParquetEvaluation(Path("out"), 5, 5, 0, 1, 0, 0.1, pl.DataFrame(),
        ...                   statuses={"faithfulness": {"ok": 3, "timeout": 1, "skipped": 1}}).failure_rates()
        {'faithfulness': 0.25}
        """
        rates: dict[str, float | None] = {}
        for name, failed in self.failures().items():
            sent = failed + self.statuses[name].get("ok", 0)
            rates[name] = failed / sent if sent else None
        return rates


def judge_outcomes(scores: pl.DataFrame) -> dict[str, dict[str, dict[str, int]]]:
    """Per judge score column of ``scores``: its rows by ``_status`` and its commonest failure messages.

    A judge score column is one with a String ``<column>_status`` beside it (the judge
    metrics and the metrics ``mode="llm"``/``"hybrid"`` routes to the judge write one).

    Examples
    --------
    >>> import polars as pl
    >>> scores = pl.DataFrame({"f": [1.0, None, None], "f_status": ["ok", "timeout", "timeout"],
    ...                        "f_error": [None, "no reply within 5 s", "no reply within 5 s"]})
    >>> judge_outcomes(scores)
    {'f': {'statuses': {'ok': 1, 'timeout': 2}, 'errors': {'no reply within 5 s': 2}}}
    """
    out: dict[str, dict[str, dict[str, int]]] = {}
    for column, dtype in scores.schema.items():
        name = column.removesuffix("_status")
        if name == column or name not in scores.columns or dtype != pl.String:
            continue
        status = pl.col(column).fill_null("(no status)")
        counts = scores.group_by(status.alias("status")).len().sort("status")
        errors: dict[str, int] = {}
        if f"{name}_error" in scores.columns:
            message = pl.col(f"{name}_error").fill_null("(no message)").str.slice(0, _ERROR_CHARACTERS)
            errors = dict(
                scores.filter(~status.is_in(NOT_FAILED))
                .group_by(message.alias("error"))
                .len()
                .sort(["len", "error"], descending=[True, False])
                .head(_TOP_ERRORS)
                .iter_rows()
            )
        out[name] = {"statuses": dict(counts.iter_rows()), "errors": errors}
    return out


def merge_judge_outcomes(parts: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """The sum of several :func:`judge_outcomes` (the batches of a run), the commonest messages kept.

    Examples
    --------
    >>> merge_judge_outcomes([{"f": {"statuses": {"ok": 1}, "errors": {}}},
    ...                       {"f": {"statuses": {"ok": 2, "timeout": 1}, "errors": {"slow": 1}}}])
    {'f': {'statuses': {'ok': 3, 'timeout': 1}, 'errors': {'slow': 1}}}
    """
    merged: dict[str, dict[str, dict[str, int]]] = {}
    for part in parts:
        for name, outcome in part.items():
            target = merged.setdefault(name, {"statuses": {}, "errors": {}})
            for kind in ("statuses", "errors"):
                for key, count in outcome.get(kind, {}).items():
                    target[kind][key] = target[kind].get(key, 0) + int(count)
    for outcome in merged.values():
        outcome["statuses"] = dict(sorted(outcome["statuses"].items()))
        commonest = sorted(outcome["errors"].items(), key=lambda item: (-item[1], item[0]))[:_TOP_ERRORS]
        outcome["errors"] = dict(commonest)
    return merged


def failure_limit(value: Any) -> float | None:
    """``max_failure_rate``: None or a number in [0, 1]."""
    if value is None:
        return None
    return validate.number(value, "max_failure_rate", minimum=0.0, maximum=1.0)


def check_judged(evaluator: Evaluator, columns: Sequence[str], limit: float) -> None:
    """``max_failure_rate`` limits the share of failed judge calls: a run without a judged metric has none to limit."""
    written = evaluator.written_columns(dict.fromkeys(columns, pl.String()))
    if not any(c.endswith("_status") for c in written):
        raise InvalidParameterError(
            "{max_failure_rate} limits the share of failed judge calls, and this run has no "
            "judge metric (judge_*, or {mode}/'hybrid' with a judge); drop it, or add a judge metric",
            mentions={"max_failure_rate": f"{limit:g}", "mode": "'llm'"},
        )


def check_outcome(result: ParquetEvaluation, max_failure_rate: float | None, files: Sequence[str]) -> None:
    """Raise :class:`RunFailedError` when the finished run scored or judged nothing (see :func:`evaluate_parquet`).

    ``files`` are the log's files (named when the log has no rows).
    """
    if result.rows == 0 and result.traces_rejected:
        first = pl.read_parquet(result.out / TRACE_REJECTS).row(0, named=True)
        raise RunFailedError(
            f"every trace was rejected ({result.traces_rejected:,} traces); the first, trace "
            f"{first['trace_id']} of {first['source_file']!r}: {first['reason']}; every reason is in "
            f"{str(result.out / TRACE_REJECTS)!r}",
            result,
        )
    if result.rows == 0:
        named = ", ".join(repr(str(f)) for f in dict.fromkeys(files)) or "the log"
        raise RunFailedError(
            f"the log has no rows ({named}); wrote an empty output (0 rows) to {str(result.out)!r}",
            result,
        )
    if result.scored == 0:
        raise RunFailedError(
            f"every row of the log was rejected ({result.rejected:,} rows); the first: "
            f"{_first_reject(result.out)}; every reason is in {str(result.out / 'rejects')!r}",
            result,
        )
    failures, rates = result.failures(), result.failure_rates()
    for name, counts in result.statuses.items():
        if failures[name] and not counts.get("ok"):
            raise RunFailedError(
                f"the judge scored no row of {name!r} ({_counts_text(counts)}); {_commonest_error(result, name)}",
                result,
            )
    for name, rate in rates.items():
        if max_failure_rate is not None and rate is not None and rate > max_failure_rate:
            sent = failures[name] + result.statuses[name].get("ok", 0)
            raise RunFailedError(
                f"{failures[name]:,} of the {sent:,} rows of {name!r} sent to the judge failed "
                f"({rate:.1%}), above {{max_failure_rate}} ({_counts_text(result.statuses[name])}); "
                f"{_commonest_error(result, name)}",
                result,
                mentions={"max_failure_rate": f"{max_failure_rate:g}"},
            )


def status_lines(result: ParquetEvaluation) -> list[str]:
    """One line per judge score column: its rows by status and its commonest failure (what ``ragframe eval`` prints).

    Examples
    --------
    >>> import polars as pl
    >>> result = ParquetEvaluation(Path("out"), 3, 3, 0, 1, 0, 0.1, pl.DataFrame(),
    ...                            statuses={"f": {"ok": 2, "timeout": 1}}, errors={"f": {"no reply": 1}})
    >>> status_lines(result)
    ["judge 'f': 2 ok, 1 timeout (1 of 3 rows sent failed, 33.3%); commonest error (1 row): no reply"]
    """
    lines = []
    rates = result.failure_rates()
    for name, counts in result.statuses.items():
        failed = result.failures()[name]
        line = f"judge {name!r}: {_counts_text(counts)}"
        if rates[name] is not None:
            line += f" ({failed:,} of {failed + counts.get('ok', 0):,} rows sent failed, {rates[name]:.1%})"
        if failed:
            line += f"; {_commonest_error(result, name)}"
        lines.append(line)
    return lines


def _counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n:,} {status}" for status, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _commonest_error(result: ParquetEvaluation, name: str) -> str:
    errors = result.errors.get(name) or {}
    if not errors:
        return "no error message"
    message, count = next(iter(errors.items()))
    return f"commonest error ({count:,} row{'s' if count != 1 else ''}): {' '.join(message.split())}"


def _first_reject(out: Path) -> str:
    """The first reject's reason (the first part's first row), with its source row when recorded."""
    parts = sorted((out / "rejects").glob("*.parquet"))
    if not parts:
        return "(no reject part found)"
    first = pl.read_parquet(parts[0]).row(0, named=True)
    where = f"in {first['source_file']!r}, " if "source_file" in first else ""  # the reason names the row
    return where + str(first["reason"])
