"""Judge budgets: a hard cap on what a run's judge calls send, spent on rows drawn at random.

A run given ``budget=`` (``rf.evaluate``, the judge metrics, ``rf.evaluate_parquet``,
``ragframe eval --budget``) judges only the rows a seeded random draw chooses among those the
judge would be asked about (every judgeable row of a judge metric or of ``mode="llm"``; the
rows inside the hybrid band in ``mode="hybrid"``), and sends no more than the budget.

The budget
    ``budget=N`` (an int) or ``{"calls": N}``: at most ``N`` requests reach the judge, every
    one counted: each sample (``n_samples``), each re-ask of an unreadable reply
    (``parse_retries``), each call that failed. A transport retry inside one call (a 429
    answered "come back later", a 5xx or a dropped connection that :class:`OpenAIJudge`
    sends again) is part of that call, as the ``calls`` column of ``judge.usage()`` counts
    it. Replies found in the cache are free.
    ``{"cost": X}``: at most ``X`` in the currency of the judge's ``input_price_per_million``
    / ``output_price_per_million`` (both caps may be given together). A cost budget needs
    the prices and a cap on reply tokens (``max_tokens``), so that no call can cost more
    than it is allowed to before it is sent.

Which rows (the plan)
    Each candidate (metric, row) gets a priority: a 64-bit hash (BLAKE2b keyed by
    ``budget_seed``) of the metric's name and the row's prompt, so a row's draw depends on
    the row alone, never on which rows share its batch. The rows are taken in priority
    order while their planned cost fits: ``n_samples`` calls per row for a call budget;
    ``n_samples`` times the rate limiter's estimate for a cost budget (prompt characters / 4
    tokens, plus ``max_tokens``, at the prices). With ``by=`` (columns) the budget is split
    among the strata in proportion to their candidates (largest remainders for calls) and
    each stratum takes its own rows in priority order. The plan is the threshold priority
    of each stratum: a row is chosen when its priority is at most its stratum's. Rows with
    the same prompt share a priority and are chosen together.

The hard stop (the gate)
    Every call asks a :class:`BudgetGate` before it is sent. A planned first ask is sent
    when the cost spent, plus the bound of every call in flight, plus its own bound, fits;
    a re-ask (or any call the plan did not count) must also leave the planned first asks
    not yet sent their room. The bound of a call for a cost budget is the most it can cost:
    every UTF-8 byte of the prompt a token, plus :data:`PROMPT_OVERHEAD_TOKENS` for the
    chat template, plus ``max_tokens``, at the prices; what a reply costs is its reported
    tokens at the prices (the bound when the server reports none, and for a timeout, whose
    request the server may have computed). So the requests a budgeted run sends never
    exceed a call budget, and the cost the replies report never exceeds a cost budget. A
    call budget's plan always fits (its first asks are never stopped); the stop only ever
    holds back re-asks. A cost budget's last planned rows may be stopped when replies cost
    more than planned.

Rows not judged
    A candidate row the draw did not choose is ``skipped`` with the error
    ``"budget: not chosen ..."``; a planned call the gate stopped is ``skipped`` with
    ``"budget: not sent ..."``; a re-ask it stopped leaves the row a ``parse_error`` saying
    so. Their judge score is null. These are not failures.

Examples
--------
>>> check_budget(100, 0, None)
Budget(calls=100, cost=None, seed=0, by=())
>>> budget = check_budget({"cost": 2.5}, 7, ["topic"])
>>> budget.cost, budget.by, budget.describe()
(2.5, ('topic',), 'cost 2.5, seed 7, by topic')
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError
from ragframe.judges.usage import price_of, token_estimate

#: Reply tokens a dry run (and a cost bound) assumes when the judge has no ``expected_reply_tokens``
#: (defined here, not in ``judges.runner``, which imports this module: no 2-module import circle).
DRY_RUN_REPLY_TOKENS = 100

__all__ = [
    "Budget",
    "BudgetGate",
    "BudgetPlan",
    "PROMPT_OVERHEAD_TOKENS",
    "CANDIDATE_SCHEMA",
    "check_budget",
    "priorities",
    "strata",
    "select",
    "truncate",
    "estimated_cost",
    "cost_bound",
    "reply_cap",
]

#: Tokens a chat template may add around a prompt (role markers, a default system prompt): part of a call's bound.
PROMPT_OVERHEAD_TOKENS = 64
#: The columns of a candidate table: one row per group of candidates sharing a stratum, a priority and a metric.
CANDIDATE_SCHEMA = {
    "stratum": pl.String,
    "priority": pl.UInt64,
    "metric": pl.String,
    "rows": pl.Int64,
    "calls": pl.Int64,
    "cost": pl.Float64,
}
_NULL_KEY = "\u2400"  # a null value of a ``by`` column in a stratum key
_SEPARATOR = "\u241f"
_WAIT_SECONDS = 0.01


@dataclass(frozen=True)
class Budget:
    """A checked budget: the caps (either may be None, not both), the seed and the strata columns."""

    calls: int | None = None
    cost: float | None = None
    seed: int = 0
    by: tuple[str, ...] = ()

    def describe(self) -> str:
        """The budget in words, as the errors of the rows it leaves out say it.

        Examples
        --------
        >>> Budget(calls=20).describe()
        '20 calls, seed 0'
        """
        caps = [f"{self.calls} calls" if self.calls is not None else None]
        caps.append(f"cost {self.cost:g}" if self.cost is not None else None)
        words = [c for c in caps if c] + [f"seed {self.seed}"]
        if self.by:
            words.append("by " + ", ".join(self.by))
        return ", ".join(words)


def check_budget(value: Any, seed: Any, by: Any) -> Budget | None:
    """``budget=``, ``budget_seed=`` and ``by=`` as a :class:`Budget` (None without a budget).

    ``value``: None, an int >= 0 (calls) or a mapping with ``calls`` (int >= 0) and/or
    ``cost`` (a number >= 0); ``by`` without a budget is an error.

    Examples
    --------
    >>> check_budget(None, 0, None) is None
    True
    >>> check_budget(2.5, 0, None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ragframe.exceptions.InvalidParameterError: budget must be a number of calls ... found 2.5
    """
    seed = validate.integer(seed, "budget_seed", minimum=0)
    columns = () if by is None else tuple(validate.column_list(by, "by"))
    if value is None:
        if columns:
            raise InvalidParameterError(
                "{by} stratifies a judge budget; pass {budget} with it",
                mentions={"by": "", "budget": ""},
            )
        return None
    expected = "a number of calls (an int >= 0) or a dict with 'calls' and/or 'cost'"
    if isinstance(value, bool):
        raise validate.fail("budget", expected, value)
    if isinstance(value, (int, np.integer)):
        return Budget(calls=validate.integer(value, "budget", minimum=0), seed=seed, by=columns)
    items = dict(value) if isinstance(value, Mapping) else _pairs(value)
    if items is None or not items or set(items) - {"calls", "cost"}:
        raise validate.fail("budget", expected, value)
    calls = items.get("calls")
    cost = items.get("cost")
    return Budget(
        calls=None if calls is None else validate.integer(calls, "budget['calls']", minimum=0),
        cost=None if cost is None else validate.number(cost, "budget['cost']", minimum=0.0),
        seed=seed,
        by=columns,
    )


def _pairs(value: Any) -> dict[str, Any] | None:
    """A frozen dict (the Evaluator's sorted (key, value) pairs) back to a dict."""
    if isinstance(value, tuple) and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value):
        return dict(value)
    return None


# ----------------------------------------------------------------------------- costs of one call


def reply_cap(judge: Any) -> int | None:
    """The judge's cap on reply tokens (``max_tokens`` or ``max_completion_tokens`` of its request body).

    Examples
    --------
    >>> class J:
    ...     extra_body = {"max_tokens": 64}
    >>> reply_cap(J()), reply_cap(object())
    (64, None)
    """
    body = getattr(judge, "extra_body", None)
    if isinstance(body, Mapping):
        for name in ("max_tokens", "max_completion_tokens"):
            value = body.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value
    return None


def _reply_tokens(judge: Any) -> int:
    value = getattr(judge, "expected_reply_tokens", None)
    return value if isinstance(value, int) and value >= 0 else DRY_RUN_REPLY_TOKENS


def estimated_cost(judge: Any, prompt: str) -> float:
    """What the plan expects a call to cost: the rate limiter's tokens (characters / 4 plus the reply's) at the prices.

    0 when the judge has no prices.

    Examples
    --------
    >>> class J:
    ...     input_price_per_million, output_price_per_million = 1e6, 2e6
    ...     expected_reply_tokens = 10
    >>> estimated_cost(J(), "12345678")  # 2 tokens in, 10 out
    22.0
    """
    return price_of(judge, token_estimate(prompt), _reply_tokens(judge)) or 0.0


def cost_bound(judge: Any, prompt: str) -> float:
    """The most a call can cost: a token per UTF-8 byte of the prompt plus the template's, and ``max_tokens``.

    Examples
    --------
    >>> class J:
    ...     input_price_per_million, output_price_per_million = 1e6, 2e6
    ...     extra_body = {"max_tokens": 10}
    >>> cost_bound(J(), "12345678")  # (8 + 64) tokens in, 10 out
    92.0
    """
    cap = reply_cap(judge)
    reply = cap if cap is not None else _reply_tokens(judge)
    return price_of(judge, len(prompt.encode("utf-8")) + PROMPT_OVERHEAD_TOKENS, reply) or 0.0


def check_cost_judge(judge: Any, budget: Budget) -> None:
    """A cost budget needs prices and a reply cap on the judge (else no call's cost is bounded)."""
    if budget.cost is None:
        return
    if price_of(judge, 0, 0) is None:
        raise InvalidParameterError(
            f"budget={{'cost': {budget.cost:g}}} needs the judge's prices: "
            "rf.OpenAIJudge(..., input_price_per_million=..., output_price_per_million=...)"
        )
    if reply_cap(judge) is None:
        raise InvalidParameterError(
            f"budget={{'cost': {budget.cost:g}}} needs a cap on reply tokens so that no call can "
            "cost more than it is allowed: rf.OpenAIJudge(..., max_tokens=256)"
        )


# ----------------------------------------------------------------------------- the draw


def priorities(metric: str, prompts: Sequence[str], seed: int) -> np.ndarray:
    """Each prompt's priority for ``metric``: 64 bits of BLAKE2b keyed by the seed (stable across processes).

    Examples
    --------
    >>> a = priorities("judge_faithfulness", ["p", "q", "p"], 0)
    >>> str(a.dtype), bool(a[0] == a[2]), bool(a[0] == priorities("judge_faithfulness", ["p"], 1)[0])
    ('uint64', True, False)
    """
    key = str(seed).encode()
    head = metric.encode("utf-8") + b"\x1f"
    digests = (hashlib.blake2b(head + p.encode("utf-8"), digest_size=8, key=key).digest() for p in prompts)
    return np.fromiter((int.from_bytes(d, "big") for d in digests), dtype=np.uint64, count=len(prompts))


def strata(view: pl.DataFrame, by: Sequence[str]) -> pl.Series:
    """Each row's stratum key: its ``by`` values as text (a null marked), or ``""`` without ``by``.

    Examples
    --------
    >>> strata(pl.DataFrame({"t": ["a", None], "n": [1, 2]}), ["t", "n"]).to_list()
    ['a\u241f1', '\u2400\u241f2']
    """
    if not by:
        return pl.Series("stratum", [""] * view.height, dtype=pl.String)
    for column in by:
        dtype = view.schema[column]
        if dtype.is_nested() or dtype in (pl.Object, pl.Binary):
            from ragframe.exceptions import SchemaError

            raise SchemaError(
                "a {by} column of a judge budget must hold plain values",
                column=column,
                expected="text, numbers, Booleans or dates",
                found=str(dtype),
                mentions={"by": ""},
            )
    parts = [pl.col(c).cast(pl.String).fill_null(_NULL_KEY) for c in by]
    return view.select(pl.concat_str(parts, separator=_SEPARATOR).alias("stratum")).to_series()


def candidate_groups(
    stratum: pl.Series, priority: np.ndarray, metric: str, n_samples: int, cost: np.ndarray
) -> pl.DataFrame:
    """One metric's candidates by (stratum, priority): rows, planned calls and cost (:data:`CANDIDATE_SCHEMA`)."""
    order = pl.Series(priority, dtype=pl.UInt64)
    frame = pl.DataFrame({"stratum": stratum, "priority": order, "cost": pl.Series(cost, dtype=pl.Float64)})
    grouped = frame.group_by("stratum", "priority").agg(pl.len().cast(pl.Int64).alias("rows"), pl.col("cost").sum())
    return grouped.select(
        "stratum",
        "priority",
        pl.lit(metric, pl.String).alias("metric"),
        "rows",
        (pl.col("rows") * n_samples).alias("calls"),
        (pl.col("cost") * n_samples).alias("cost"),
    ).cast(CANDIDATE_SCHEMA)  # type: ignore[arg-type]


def _ordered(candidates: pl.DataFrame) -> pl.DataFrame:
    """Candidates merged per (stratum, priority), in priority order within each stratum, with running totals."""
    merged = candidates.group_by("stratum", "priority").agg(pl.col("rows", "calls", "cost").sum())
    return merged.sort("stratum", "priority").with_columns(
        pl.col("rows").cum_sum().over("stratum").alias("cum_rows"),
        pl.col("calls").cum_sum().over("stratum").alias("cum_calls"),
        pl.col("cost").cum_sum().over("stratum").alias("cum_cost"),
    )


def _row_cap(budget: Budget, n_samples: int) -> int | None:
    return None if budget.calls is None else budget.calls // n_samples


def truncate(candidates: pl.DataFrame, budget: Budget, n_samples: int) -> pl.DataFrame:
    """The candidates any plan could choose, per stratum: those before the budget is spent and the group spending it.

    A streaming run keeps only these from each batch; the plan from the merged truncated
    tables is the plan from all the candidates (each stratum's share is at most the budget).
    """
    if candidates.height == 0:
        return candidates
    ordered = _ordered(candidates.group_by("stratum", "priority", "metric").agg(pl.col("rows", "calls", "cost").sum()))
    rows_cap = _row_cap(budget, n_samples)
    before = pl.lit(True)
    if rows_cap is not None:
        before = before & ((pl.col("cum_rows") - pl.col("rows")) <= rows_cap)
    if budget.cost is not None:
        before = before & ((pl.col("cum_cost") - pl.col("cost")) <= budget.cost)
    keep = ordered.filter(before).select("stratum", "priority")
    return candidates.join(keep, on=["stratum", "priority"], how="semi")


@dataclass(frozen=True)
class BudgetPlan:
    """A run's draw: each stratum's threshold priority (None: no row), and the planned totals.

    Parameters
    ----------
    thresholds : dict of str to int or None
        Stratum key to the largest priority chosen.
    planned_calls, planned_cost : int, float
        What the chosen rows' first asks are planned to send (calls) and cost (estimated).
    candidates, chosen : dict of str to int
        Per judge metric: rows the judge would be asked about, and rows chosen.
    """

    thresholds: dict[str, int | None]
    planned_calls: int
    planned_cost: float
    candidates: dict[str, int]
    chosen: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        """A JSON form (the manifest's ``budget_plan``); :meth:`from_json` reads it back."""
        return {
            "thresholds": self.thresholds,
            "planned_calls": self.planned_calls,
            "planned_cost": self.planned_cost,
            "candidates": self.candidates,
            "chosen": self.chosen,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BudgetPlan:
        """The plan :meth:`to_json` wrote."""
        return cls(
            {str(k): None if v is None else int(v) for k, v in data["thresholds"].items()},
            int(data["planned_calls"]),
            float(data["planned_cost"]),
            {str(k): int(v) for k, v in data["candidates"].items()},
            {str(k): int(v) for k, v in data["chosen"].items()},
        )

    def chosen_mask(self, stratum: pl.Series, priority: np.ndarray) -> np.ndarray:
        """Which candidates (their strata and priorities) the plan chooses.

        Examples
        --------
        >>> plan = BudgetPlan({"a": 5, "b": None}, 1, 0.0, {}, {})
        >>> plan.chosen_mask(pl.Series(["a", "a", "b", "c"]), np.array([5, 6, 1, 1], dtype=np.uint64)).tolist()
        [True, False, False, False]
        """
        if not len(priority):
            return np.zeros(0, dtype=bool)
        keys = pl.DataFrame({"stratum": list(self.thresholds), "limit": list(self.thresholds.values())}, schema={
            "stratum": pl.String, "limit": pl.UInt64})  # fmt: skip
        limits = pl.DataFrame({"stratum": stratum}).join(keys, on="stratum", how="left", maintain_order="left")
        limit = limits["limit"]
        return (limit.is_not_null() & (limit >= pl.Series(priority, dtype=pl.UInt64))).fill_null(False).to_numpy()


def _apportion(total: int, sizes: np.ndarray) -> np.ndarray:
    """``total`` split in proportion to ``sizes`` by largest remainders (ties: the earlier stratum)."""
    whole = int(sizes.sum())
    if whole == 0:
        return np.zeros(sizes.size, dtype=np.int64)
    if total >= whole:
        return sizes.astype(np.int64)
    product = sizes.astype(object) * total  # exact integers, any size
    base = np.array([p // whole for p in product], dtype=np.int64)
    remainder = np.array([p % whole for p in product], dtype=np.int64)
    extra = total - int(base.sum())
    order = np.lexsort((np.arange(sizes.size), -remainder))[:extra]
    base[order] += 1
    return base


def select(
    candidates: pl.DataFrame,
    sizes: Mapping[str, int],
    metric_sizes: Mapping[str, int],
    budget: Budget,
    n_samples: int,
) -> BudgetPlan:
    """The plan: each stratum's candidates in priority order while its share of the budget lasts.

    Parameters
    ----------
    candidates : polars.DataFrame
        :data:`CANDIDATE_SCHEMA` rows (all of them, or each batch's :func:`truncate`).
    sizes : dict of str to int
        Candidate rows per stratum (all of them, not only those kept): the shares.
    metric_sizes : dict of str to int
        Candidate rows per judge metric (reported in the plan).
    budget : Budget
        The caps.
    n_samples : int
        Calls per chosen row's first ask.

    Returns
    -------
    BudgetPlan

    Examples
    --------
    >>> cands = pl.DataFrame({"stratum": ["", "", ""], "priority": [3, 1, 2], "metric": ["m"] * 3,
    ...                       "rows": [1, 1, 1], "calls": [1, 1, 1], "cost": [0.0] * 3}, schema=CANDIDATE_SCHEMA)
    >>> plan = select(cands, {"": 3}, {"m": 3}, Budget(calls=2), 1)
    >>> plan.thresholds, plan.planned_calls, plan.candidates, plan.chosen
    ({'': 2}, 2, {'m': 3}, {'m': 2})
    """
    keys = sorted(sizes)
    counts = np.array([sizes[k] for k in keys], dtype=np.int64)
    shares = pl.DataFrame({"stratum": keys}, schema={"stratum": pl.String})
    rows_cap = _row_cap(budget, n_samples)
    if rows_cap is not None:
        shares = shares.with_columns(pl.Series("row_share", _apportion(rows_cap, counts), dtype=pl.Int64))
    if budget.cost is not None:
        whole = max(int(counts.sum()), 1)
        shares = shares.with_columns(pl.Series("cost_share", budget.cost * counts / whole, dtype=pl.Float64))
    ordered = _ordered(candidates).join(shares, on="stratum", how="left")
    taken = pl.lit(True)
    if rows_cap is not None:
        taken = taken & (pl.col("cum_rows") <= pl.col("row_share"))
    if budget.cost is not None:
        taken = taken & (pl.col("cum_cost") <= pl.col("cost_share"))
    chosen = ordered.filter(taken)
    limits = dict(chosen.group_by("stratum").agg(pl.col("priority").max()).iter_rows())
    thresholds = {k: (int(limits[k]) if k in limits else None) for k in keys}
    plan = BudgetPlan(thresholds, int(chosen["calls"].sum()), float(chosen["cost"].sum()), dict(metric_sizes), {})
    mask = plan.chosen_mask(candidates["stratum"], candidates["priority"].to_numpy())
    by_metric = dict(candidates.filter(pl.Series(mask)).group_by("metric").agg(pl.col("rows").sum()).iter_rows())
    plan.chosen.update({m: int(by_metric.get(m, 0)) for m in sorted(metric_sizes)})
    return plan


# ----------------------------------------------------------------------------- the hard stop


class BudgetGate:
    """The hard stop every call of a budgeted run asks before it is sent (see the module doc).

    Thread-safe and tied to no event loop: one gate serves every metric and batch of a run
    in a process. ``planned_calls`` / ``planned_cost`` are the plan's first asks not yet
    sent; ``spent_calls`` / ``spent_cost`` what earlier batches spent.

    Examples
    --------
    >>> import asyncio
    >>> gate = BudgetGate(Budget(calls=2), planned_calls=1)
    >>> asyncio.run(gate.acquire(0.0, planned=0.0)), asyncio.run(gate.acquire(0.0)), asyncio.run(gate.acquire(0.0))
    (True, True, False)
    >>> gate.snapshot()["sent"], gate.snapshot()["stopped"]
    (2, 1)
    """

    def __init__(
        self,
        budget: Budget,
        *,
        planned_calls: int = 0,
        planned_cost: float = 0.0,
        spent_calls: int = 0,
        spent_cost: float = 0.0,
    ) -> None:
        self.budget = budget
        self._lock = threading.Lock()
        self._future = [int(planned_calls), float(planned_cost)]
        self._spent = [int(spent_calls), float(spent_cost)]
        self._flight = [0, 0.0]
        self._sent = 0
        self._stopped = 0

    def release(self, calls: int, cost: float) -> None:
        """Planned first asks that will not be sent (answered by the cache, a duplicate prompt)."""
        with self._lock:
            self._future[0] = max(0, self._future[0] - int(calls))
            self._future[1] = max(0.0, self._future[1] - float(cost))

    def _fits(self, bound: float, reserve: bool) -> bool:
        calls, cost = self.budget.calls, self.budget.cost
        future_calls, future_cost = self._future if reserve else (0, 0.0)
        if calls is not None and self._spent[0] + self._flight[0] + future_calls + 1 > calls:
            return False
        if cost is not None and self._spent[1] + self._flight[1] + future_cost + bound > cost:
            return False
        return True

    def _may_wait(self, reserve: bool) -> bool:
        """Whether a call that does not fit may fit later: only a cost budget with calls in flight frees room."""
        if self.budget.cost is None or self._flight[0] == 0:
            return False
        calls = self.budget.calls
        future = self._future[0] if reserve else 0
        return calls is None or self._spent[0] + self._flight[0] + future + 1 <= calls

    async def acquire(self, bound: float, *, planned: float | None = None) -> bool:
        """Whether a call of cost bound ``bound`` may be sent (then it is in flight until :meth:`settle`).

        ``planned``: the plan's estimate when this is a planned first ask (its room is
        released from the plan and it need not leave room for the others); None for a
        re-ask, which must leave the planned first asks not yet sent their room.
        """
        first = planned is not None
        released = False
        while True:
            with self._lock:
                if first and not released:
                    self._future[0] = max(0, self._future[0] - 1)
                    self._future[1] = max(0.0, self._future[1] - float(planned or 0.0))
                    released = True
                if self._fits(bound, reserve=not first):
                    self._flight[0] += 1
                    self._flight[1] += bound
                    self._sent += 1
                    return True
                if not self._may_wait(reserve=not first):
                    self._stopped += 1
                    return False
            await asyncio.sleep(_WAIT_SECONDS)

    def settle(self, bound: float, cost: float) -> None:
        """A call that :meth:`acquire` let through has ended; ``cost`` is what it spent."""
        with self._lock:
            self._flight[0] -= 1
            self._flight[1] = max(0.0, self._flight[1] - bound)
            self._spent[0] += 1
            self._spent[1] += float(cost)

    def snapshot(self) -> dict[str, Any]:
        """``calls`` and ``cost`` spent (earlier batches included), ``sent`` and ``stopped`` by this gate."""
        with self._lock:
            return {
                "calls": self._spent[0],
                "cost": self._spent[1],
                "sent": self._sent,
                "stopped": self._stopped,
                "planned_calls": self._future[0],
                "planned_cost": self._future[1],
            }


@dataclass(frozen=True)
class BudgetRun:
    """What the judge metrics of one budgeted scoring read: the gate and, per judge metric, the rows chosen.

    ``chosen[metric]`` is a Boolean array over the rows of the frame the metric is scored on.
    """

    budget: Budget
    gate: BudgetGate
    chosen: dict[str, np.ndarray]

    def subset(self, rows: np.ndarray) -> BudgetRun:
        """The same run over the rows ``rows`` (a Boolean mask) select, as hybrid routing judges them."""
        return BudgetRun(self.budget, self.gate, {name: mask[rows] for name, mask in self.chosen.items()})

    def reason(self) -> str:
        """The error of a candidate row the draw did not choose."""
        return f"budget: not chosen for the judge ({self.budget.describe()})"
