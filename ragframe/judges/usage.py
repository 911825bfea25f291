"""What judge calls cost: calls, cache hits, retries, failures, tokens and money, per metric.

Every run of :func:`ragframe.judges.runner.judge_prompts` records into the ledgers of its
run: the ledger of every :func:`recording_usage` block it runs inside (what a run returns:
``rf.evaluate_parquet(...).usage`` and its manifest's ``judge_usage`` are the ledgers of its
batches, summed), the judge's own (``judge.usage()``, for :class:`~ragframe.judges.OpenAIJudge`
and wrapped callables) and the process-wide one (:func:`judge_usage`, a convenience view of
every run in this process, child processes and Ray workers excluded). Counts are recorded
reply by reply, so an interrupted run still shows what it spent.

Columns
    ``metric``; ``calls``: prompts sent to the judge (a prompt asked twice in one run is one
    call; retries not counted here); ``cache_hits``: rows answered from the cache;
    ``retries``: extra attempts after 429s, 5xx, timeouts and connection errors;
    ``failures``: calls that ended with a failure status; ``input_tokens``,
    ``output_tokens``: of the replies received (the API's ``usage`` fields, else characters
    / 4 rounded up); ``cost``: ``input_tokens * input_price_per_million / 1e6 +
    output_tokens * output_price_per_million / 1e6``, null when the judge has no prices;
    ``dry_run``: True on rows recorded by ``dry_run=True`` runs, whose calls and tokens are
    estimates of what a real run would send (nothing was called).

Examples
--------
>>> ledger = JudgeUsage()
>>> ledger.record("faithfulness", calls=2, input_tokens=100, output_tokens=20, cost=0.5)
>>> ledger.frame().select("metric", "calls", "input_tokens", "cost").rows()
[('faithfulness', 2, 100, 0.5)]
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import polars as pl

from ragframe.public import public
from ragframe.validate import flag

__all__ = [
    "JudgeUsage",
    "judge_usage",
    "recording_usage",
    "active_ledgers",
    "usage_frame",
    "token_estimate",
    "price_of",
    "USAGE_SCHEMA",
]

_COUNTS = ("calls", "cache_hits", "retries", "failures", "input_tokens", "output_tokens")

#: The columns of a usage frame.
USAGE_SCHEMA = {
    "metric": pl.String,
    **dict.fromkeys(_COUNTS, pl.Int64),
    "cost": pl.Float64,
    "dry_run": pl.Boolean,
}


def token_estimate(text: str) -> int:
    """Tokens estimated from characters: ``ceil(len(text) / 4)``.

    Parameters
    ----------
    text : str

    Returns
    -------
    int

    Examples
    --------
    >>> token_estimate("Score: 1"), token_estimate("")
    (2, 0)
    """
    return (len(text) + 3) // 4


def price_of(judge: Any, input_tokens: int, output_tokens: int) -> float | None:
    """The cost of tokens at the judge's ``input_price_per_million`` / ``output_price_per_million``.

    None when the judge has neither price; a missing one of the two counts as 0.

    Parameters
    ----------
    judge : object
        Anything with the two price attributes (or without them).
    input_tokens, output_tokens : int
        Token counts.

    Returns
    -------
    float or None

    Examples
    --------
    >>> class J:
    ...     input_price_per_million, output_price_per_million = 2.5, 10.0
    >>> price_of(J(), 1_000_000, 100_000)
    3.5
    """
    prices = (getattr(judge, "input_price_per_million", None), getattr(judge, "output_price_per_million", None))
    if prices == (None, None):
        return None
    input_price, output_price = (p or 0.0 for p in prices)
    return input_tokens * input_price / 1e6 + output_tokens * output_price / 1e6


class JudgeUsage:
    """A thread-safe ledger of judge usage per (metric, dry run) (see the module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, bool], dict[str, Any]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {}  # a pickled judge starts a fresh ledger in its new process

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()

    def record(
        self,
        metric: str,
        *,
        calls: int = 0,
        cache_hits: int = 0,
        retries: int = 0,
        failures: int = 0,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cost: float | None = None,
        dry_run: bool = False,
    ) -> None:
        """Add counts to ``metric``'s row (created at zero on first use).

        Parameters
        ----------
        metric : str
            The metric (row key, with ``dry_run``).
        calls, cache_hits, retries, failures, input_tokens, output_tokens : int
            Counts to add.
        cost : float or None
            Money to add; None leaves the cost unknown unless another record gave one.
        dry_run : bool
            Record into the metric's estimate row instead of its real one.
        """
        added = {"calls": calls, "cache_hits": cache_hits, "retries": retries, "failures": failures}
        added |= {"input_tokens": input_tokens, "output_tokens": output_tokens}
        with self._lock:
            row = self._rows.setdefault((metric, dry_run), {**dict.fromkeys(_COUNTS, 0), "cost": None})
            for name, value in added.items():
                row[name] += int(value)
            if cost is not None:
                row["cost"] = (row["cost"] or 0.0) + float(cost)

    def frame(self, *, reset: bool = False) -> pl.DataFrame:
        """The ledger as a polars frame (columns in the module doc), one row per metric and dry run.

        Parameters
        ----------
        reset : bool
            Empty the ledger after reading it.

        Returns
        -------
        polars.DataFrame
        """
        reset = flag(reset, "reset")
        with self._lock:
            rows = self._records()
            if reset:
                self._rows.clear()
        return pl.DataFrame(rows, schema=USAGE_SCHEMA)

    def records(self) -> list[dict[str, Any]]:
        """The ledger as plain rows (JSON-ready: what a manifest stores), one per metric and dry run.

        Examples
        --------
        >>> ledger = JudgeUsage()
        >>> ledger.record("f", calls=1, input_tokens=7)
        >>> ledger.records()[0]["calls"], ledger.records()[0]["cost"]
        (1, None)
        """
        with self._lock:
            return self._records()

    def _records(self) -> list[dict[str, Any]]:
        return [{"metric": m, **row, "dry_run": d} for (m, d), row in sorted(self._rows.items())]


def usage_frame(parts: Iterable[Iterable[Mapping[str, Any]]]) -> pl.DataFrame:
    """Ledger rows of several parts of a run (batches, processes) summed per metric and dry run.

    Parameters
    ----------
    parts : iterable of iterables of mappings
        Each part's :meth:`JudgeUsage.records`.

    Returns
    -------
    polars.DataFrame
        The columns of :func:`judge_usage`; a cost is null only when no part knew it.

    Examples
    --------
    >>> a, b = JudgeUsage(), JudgeUsage()
    >>> a.record("f", calls=2, cost=0.5)
    >>> b.record("f", calls=1, cache_hits=4)
    >>> usage_frame([a.records(), b.records()]).select("metric", "calls", "cache_hits", "cost").rows()
    [('f', 3, 4, 0.5)]
    """
    total = JudgeUsage()
    for part in parts:
        for row in part:
            counts = {name: int(row.get(name, 0)) for name in _COUNTS}
            total.record(str(row["metric"]), **counts, cost=row.get("cost"), dry_run=bool(row.get("dry_run", False)))
    return total.frame()


#: The ledgers of the :func:`recording_usage` blocks the current thread (or task) runs inside.
_RUN_LEDGERS: ContextVar[tuple[JudgeUsage, ...]] = ContextVar("ragframe_run_ledgers", default=())


@public
@contextmanager
def recording_usage() -> Iterator[JudgeUsage]:
    """A fresh ledger that every judge call made inside the block also records into: one run's usage.

    The block is the current thread's or task's (``contextvars``): ``asyncio.to_thread`` and
    ``rf.aevaluate`` carry it; calls in other threads or processes are not recorded.
    Blocks nest (each records its own calls and those of the blocks inside it).

    Yields
    ------
    JudgeUsage
        Read it with ``.frame()`` (the columns of :func:`judge_usage`).

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({"question": ["q"], "answer": ["a"]})
    >>> with recording_usage() as usage:
    ...     out = rf.judge_answer_relevance(df, judge=lambda p: "Score: 1", cache=False)
    >>> usage.frame().select("metric", "calls").rows()
    [('judge_answer_relevance', 1)]
    """
    ledger = JudgeUsage()
    token = _RUN_LEDGERS.set((*_RUN_LEDGERS.get(), ledger))
    try:
        yield ledger
    finally:
        _RUN_LEDGERS.reset(token)


def active_ledgers() -> tuple[JudgeUsage, ...]:
    """The ledgers of the :func:`recording_usage` blocks around the caller (innermost last).

    Examples
    --------
    >>> with recording_usage() as outer, recording_usage() as inner:
    ...     active_ledgers() == (outer, inner)
    True
    >>> active_ledgers()
    ()
    """
    return _RUN_LEDGERS.get()


#: The process-wide ledger read by :func:`judge_usage`.
GLOBAL_USAGE = JudgeUsage()


@public
def judge_usage(*, reset: bool = False) -> pl.DataFrame:
    """Judge usage of every run in this process, per metric (columns in the module doc).

    Parameters
    ----------
    reset : bool
        Start counting again from zero after reading.

    Returns
    -------
    polars.DataFrame
        ``metric``, ``calls``, ``cache_hits``, ``retries``, ``failures``, ``input_tokens``,
        ``output_tokens``, ``cost``, ``dry_run``.

    Examples
    --------
    >>> judge_usage().columns[:3]
    ['metric', 'calls', 'cache_hits']
    """
    return GLOBAL_USAGE.frame(reset=reset)
