"""The seven heuristic (no-LLM) RAG metrics: the family that runs them over the shared text engine.

Each metric has two methods (:class:`~ragframe.metrics.heuristic_kernels.HeuristicMethods`):
ragframe's default, chosen and calibrated against human labels
(:mod:`ragframe.metrics.heuristic_default`), and rag-eval-node-ts 0.3.2's, reproduced exactly
(:mod:`ragframe.metrics.heuristic_seed`, ``compat="rag-eval-node-ts"``). A run uses one of
them for every metric, with that method's text rules, so the tokens, n-gram tables and pair
similarities are built once and shared by all metrics. Formulas, null and empty rules:
``docs/metrics.md``.

Nulls: a null ``question``/``answer`` is treated as ""; a null ``contexts`` list as []; a
null chunk inside a list is a SchemaError naming the row (it is a broken row, not an empty
passage). A null or empty ``ground_truth`` gives null ``context_recall`` and
``answer_correctness`` (and null ``*_passed``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import polars as pl

from ragframe.concurrency import thread_count
from ragframe.exceptions import InvalidParameterError
from ragframe.kernels.text import SEED_RULES, UNICODE_RULES
from ragframe.metrics import text_engine
from ragframe.metrics.heuristic_default import DEFAULT_KERNELS, DEFAULT_THRESHOLDS
from ragframe.metrics.heuristic_kernels import COMPAT, HeuristicKernel, HeuristicMethods, HeuristicOptions
from ragframe.metrics.heuristic_seed import SEED_KERNELS, SEED_THRESHOLDS
from ragframe.metrics.registry import (
    Family,
    Metric,
    Requests,
    check_options,
    declared_options,
    register_family,
    register_metric,
)
from ragframe.metrics.text_engine import RowSlice, Signals, TextBatch, pair_roles

__all__ = ["HEURISTIC_METRICS", "COMPAT", "HeuristicOptions"]

_TEXT_COLUMNS = ("question", "answer", "contexts", "ground_truth")


# ----------------------------------------------------------------------------- the family runner


def _kernel(metric: Metric, opts: HeuristicOptions, compat: str | None) -> HeuristicKernel:
    return metric.kernel.seed if compat else metric.kernel.default


def _needed(
    metrics: Sequence[Metric], opts: HeuristicOptions, compat: str | None
) -> tuple[set[str], dict[int, set[str]], dict[int, set[str]]]:
    """The text roles to read (sentences included), the roles each n-gram size indexes and its pair lists."""
    roles: set[str] = set()
    grams: dict[int, set[str]] = {}
    tags: dict[int, set[str]] = {}
    for metric in metrics:
        roles.update(metric.inputs)
        for tag, sizes in _kernel(metric, opts, compat).pairs(opts).items():
            roles.update(pair_roles(tag))
            for n in sizes:
                grams.setdefault(n, set()).update(pair_roles(tag))
                tags.setdefault(n, set()).add(tag)
    return roles, grams, tags


def _score_slice(
    batch: RowSlice, metrics: Sequence[Metric], opts: HeuristicOptions, explain: bool, compat: str | None
) -> pl.DataFrame:
    kernels = [_kernel(metric, opts, compat) for metric in metrics]
    for kernel in kernels:  # announce every pair list first: shared grams are found in one probe
        for tag, sizes in kernel.pairs(opts).items():
            left, right, _ = batch.pair_list(tag)
            batch.plan(tag, left, right, sizes)
    out: list[pl.Series] = []
    for metric, kernel in zip(metrics, kernels):
        values, signals = kernel.score(batch, opts, explain)
        out.append(pl.Series(metric.name, values, dtype=pl.Float64, nan_to_null=True))
        if explain:
            out.append((signals or Signals()).column(f"{metric.name}_signals", batch.n))
    return pl.DataFrame(out, height=batch.n)


def _score_chunk(
    view: pl.DataFrame, metrics: Sequence[Metric], options: Mapping[str, Any], opts: HeuristicOptions
) -> pl.DataFrame:
    """One text stage, then the pair stage in row slices on a thread per core."""
    compat = options["compat"]
    roles, grams, tags = _needed(metrics, opts, compat)
    rules = SEED_RULES if compat else UNICODE_RULES
    columns = {r: options[r] for r in _TEXT_COLUMNS}
    slice_rows = options["slice_rows"]

    def one(batch: TextBatch, bounds: tuple[int, int]) -> pl.DataFrame:
        return _score_slice(batch.rows(*bounds), metrics, opts, options["explain"], compat)

    pieces = [(start, min(start + slice_rows, view.height)) for start in range(0, view.height, slice_rows)]
    threads = min(len(pieces), thread_count())
    if threads <= 1:  # one slice, or a task holding one CPU (concurrency.thread_limit): the slices in turn
        batch = TextBatch(view, columns, roles, grams, rules, gram_tags=tags)
        return one(batch, (0, view.height)) if len(pieces) <= 1 else pl.concat([one(batch, p) for p in pieces])
    # rows are independent: the slices bound the pair stage's memory and run on a thread per core; the
    # batch's term tables are built on the same threads (their memory then stays where the slices allocate)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        batch = TextBatch(view, columns, roles, grams, rules, gram_tags=tags, executor=pool)
        return pl.concat(list(pool.map(functools.partial(one, batch), pieces)))


def _score(view: pl.DataFrame, requests: Requests, options: Mapping[str, Any]):
    """The heuristic family's scorer: text stages of up to 100,000 rows (bounded memory)."""
    metrics = [metric for metric, _ in requests]
    opts = HeuristicOptions(**{spec.name: options[spec.name] for spec in declared_options(HeuristicOptions)})
    rows = text_engine.TEXT_ROWS
    parts = [_score_chunk(view.slice(s, rows), metrics, options, opts) for s in range(0, max(view.height, 1), rows)]
    return parts[0] if len(parts) == 1 else pl.concat(parts)


def _check(options: dict[str, Any]) -> dict[str, Any]:
    """The declared checks of :class:`HeuristicOptions`, then the one rule across options (seed-only tuning)."""
    checked = check_options(HeuristicOptions, options)
    if checked["compat"] is None:
        seed_only = [spec for spec in declared_options(HeuristicOptions) if spec.metadata.get("seed_only")]
        changed = [spec.name for spec in seed_only if checked[spec.name] != spec.default]
        if changed:
            raise InvalidParameterError(
                f"{changed[0]} tunes the rag-eval-node-ts methods only; pass "
                f"{{compat}} to use them (ragframe's default methods do not read it)",
                mentions={"compat": "'rag-eval-node-ts'"},
            )
    return checked


def _threshold(metric: Metric, options: Mapping[str, Any]) -> float | None:
    """The default pass threshold of the method the run uses."""
    return metric.kernel.seed_threshold if options["compat"] else metric.threshold


def _columns(requests: Requests, options: Mapping[str, Any], available: Sequence[str]):
    roles = [role for role in _TEXT_COLUMNS if any(role in metric.inputs for metric, _ in requests)]
    return {role: options[role] for role in roles}


register_family(
    Family(
        name="heuristic",
        score=_score,
        options=HeuristicOptions,
        check=_check,
        columns=_columns,
        threshold=_threshold,
        per_metric="score_{name}",
    )
)

_DESCRIPTIONS = {
    "faithfulness": "Mean over answer sentences of their best support by any context.",
    "answer_relevance": "How well the answer addresses the question.",
    "context_precision": "Relevance of the contexts to the question, weighted towards the top ranks.",
    "context_recall": "Share of ground-truth sentences supported by some context.",
    "context_relevance": "Mean relevance of the contexts to the question.",
    "answer_correctness": "Agreement of the answer with the ground truth (token F1 based).",
    "hallucination_rate": "Share of answer sentences supported by some context (higher is better, despite the name).",
}
_INPUTS = {
    "faithfulness": ("answer", "contexts"),
    "answer_relevance": ("question", "answer"),
    "context_precision": ("question", "contexts"),
    "context_recall": ("ground_truth", "contexts"),
    "context_relevance": ("question", "contexts"),
    "answer_correctness": ("ground_truth", "answer"),
    "hallucination_rate": ("answer", "contexts"),
}
for _name, _inputs in _INPUTS.items():
    register_metric(
        Metric(
            name=_name,
            family="heuristic",
            inputs=_inputs,
            description=_DESCRIPTIONS[_name],
            kernel=HeuristicMethods(
                default=DEFAULT_KERNELS[_name], seed=SEED_KERNELS[_name], seed_threshold=SEED_THRESHOLDS[_name]
            ),
            threshold=DEFAULT_THRESHOLDS[_name],
        )
    )

#: The seven metrics, in rag-eval-node-ts's order (``metrics=None`` means all of them).
HEURISTIC_METRICS: tuple[str, ...] = tuple(_INPUTS)
