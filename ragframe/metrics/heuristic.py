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

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError
from ragframe.kernels.text import SEED_RULES, UNICODE_RULES
from ragframe.metrics import text_engine
from ragframe.metrics.heuristic_default import DEFAULT_KERNELS, DEFAULT_THRESHOLDS
from ragframe.metrics.heuristic_kernels import HeuristicKernel, HeuristicMethods, Options
from ragframe.metrics.heuristic_seed import SEED_KERNELS, SEED_THRESHOLDS
from ragframe.metrics.registry import Family, Metric, Requests, get_metric, register_family, register_metric
from ragframe.metrics.text_engine import RowSlice, Signals, TextBatch, pair_roles

__all__ = [
    "HEURISTIC_METRICS",
    "COMPAT",
    "score_faithfulness",
    "score_answer_relevance",
    "score_context_precision",
    "score_context_recall",
    "score_context_relevance",
    "score_answer_correctness",
    "score_hallucination_rate",
]

Frame = TypeVar("Frame")
_TEXT_COLUMNS = ("question", "answer", "contexts", "ground_truth")


# ----------------------------------------------------------------------------- the family runner


#: The values of the ``compat`` option: None (ragframe's methods) or the seed's name.
COMPAT = (None, "rag-eval-node-ts")
#: Options read only by the seed's methods, with their defaults.
_SEED_ONLY = {
    "ngram_sizes": (1, 2),
    "ngram_weights": (0.7, 0.3),
    "claim_support_threshold": 0.15,
    "chunk_relevance_threshold": 0.2,
}


def _kernel(metric: Metric, opts: Options, compat: str | None) -> HeuristicKernel:
    return metric.kernel.seed if compat else metric.kernel.default


def _needed(metrics: Sequence[Metric], opts: Options, compat: str | None) -> tuple[set[str], dict[int, set[str]]]:
    """The text roles to read (sentences included) and the roles each n-gram size indexes."""
    roles: set[str] = set()
    grams: dict[int, set[str]] = {}
    for metric in metrics:
        roles.update(metric.inputs)
        for tag, sizes in _kernel(metric, opts, compat).pairs(opts).items():
            roles.update(pair_roles(tag))
            for n in sizes:
                grams.setdefault(n, set()).update(pair_roles(tag))
    return roles, grams


def _score_slice(
    batch: RowSlice, metrics: Sequence[Metric], opts: Options, explain: bool, compat: str | None
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
    view: pl.DataFrame, metrics: Sequence[Metric], options: Mapping[str, Any], function: str
) -> pl.DataFrame:
    """One text stage, then the pair stage in row slices on a thread per core."""
    opts: Options = options["_opts"]
    compat = options["compat"]
    roles, grams = _needed(metrics, opts, compat)
    rules = SEED_RULES if compat else UNICODE_RULES
    batch = TextBatch(view, {r: options[r] for r in _TEXT_COLUMNS}, roles, grams, function, rules)
    slice_rows = options["slice_rows"]

    def one(bounds: tuple[int, int]) -> pl.DataFrame:
        return _score_slice(batch.rows(*bounds), metrics, opts, options["explain"], compat)

    pieces = [(start, min(start + slice_rows, view.height)) for start in range(0, view.height, slice_rows)]
    if len(pieces) <= 1:
        return one((0, view.height))
    # rows are independent: the slices bound the pair stage's memory and run on a thread per core
    with ThreadPoolExecutor(max_workers=min(len(pieces), os.cpu_count() or 1)) as pool:
        return pl.concat(list(pool.map(one, pieces)))


def _score(view: pl.DataFrame, requests: Requests, options: Mapping[str, Any], function: str):
    """The heuristic family's scorer: text stages of up to 100,000 rows (bounded memory)."""
    metrics = [metric for metric, _ in requests]
    rows = text_engine.TEXT_ROWS
    parts = [_score_chunk(view.slice(s, rows), metrics, options, function) for s in range(0, max(view.height, 1), rows)]
    return parts[0] if len(parts) == 1 else pl.concat(parts)


def _check(options: dict[str, Any], function: str) -> dict[str, Any]:
    for role in _TEXT_COLUMNS:
        validate.column_name(options[role], role, function)
    sizes = options["ngram_sizes"]
    if isinstance(sizes, (str, bytes)) or not hasattr(sizes, "__iter__"):
        raise validate.fail(function, "ngram_sizes", "a non-empty list of ints >= 1", sizes)
    sizes = tuple(sizes)
    if not sizes:
        raise validate.fail(function, "ngram_sizes", "a non-empty list of ints >= 1", sizes)
    weights = options["ngram_weights"]
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__iter__"):
        raise validate.fail(function, "ngram_weights", "a list of numbers >= 0", weights)
    opts = Options(
        ngram_sizes=tuple(validate.positive_int(n, "ngram_sizes", function) for n in sizes),
        ngram_weights=tuple(validate.number(w, "ngram_weights", function, minimum=0.0) for w in weights),
        claim_support_threshold=validate.number(
            options["claim_support_threshold"], "claim_support_threshold", function
        ),
        chunk_relevance_threshold=validate.number(
            options["chunk_relevance_threshold"], "chunk_relevance_threshold", function
        ),
    )
    return {
        **options,
        "ngram_sizes": opts.ngram_sizes,
        "ngram_weights": opts.ngram_weights,
        "claim_support_threshold": opts.claim_support_threshold,
        "chunk_relevance_threshold": opts.chunk_relevance_threshold,
        "explain": validate.flag(options["explain"], "explain", function),
        "slice_rows": validate.positive_int(options["slice_rows"], "slice_rows", function),
        "compat": _check_compat(options, opts, function),
        "_opts": opts,
    }


def _check_compat(options: Mapping[str, Any], opts: Options, function: str) -> str | None:
    """The method choice; the seed's tuning options only mean something with the seed's methods."""
    compat = validate.choice(options["compat"], "compat", function, COMPAT)
    if compat is None:
        changed = [name for name, default in _SEED_ONLY.items() if getattr(opts, name) != default]
        if changed:
            raise InvalidParameterError(
                f"{function}: {changed[0]} tunes the rag-eval-node-ts methods only; pass "
                f"compat='rag-eval-node-ts' to use them (ragframe's default methods do not read it)"
            )
    return compat


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
        options={
            "question": "question",
            "answer": "answer",
            "contexts": "contexts",
            "ground_truth": "ground_truth",
            "ngram_sizes": (1, 2),
            "ngram_weights": (0.7, 0.3),
            "claim_support_threshold": 0.15,
            "chunk_relevance_threshold": 0.2,
            "explain": False,
            "slice_rows": 10_000,
            "compat": None,
        },
        check=_check,
        columns=_columns,
        threshold=_threshold,
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


# ----------------------------------------------------------------------------- one function per metric


def _single(name: str) -> Callable[..., Any]:
    metric = get_metric(name)

    def score(df: Frame, /, *, threshold: float | None = None, prefix: str = "", **options: Any) -> Frame:
        from ragframe.evaluator import Evaluator

        thresholds = None if threshold is None else {name: threshold}
        evaluator = Evaluator([name], composite=False, thresholds=thresholds, prefix=prefix, **options)
        return evaluator.evaluate(df, function=f"score_{name}")

    score.__name__ = score.__qualname__ = f"score_{name}"
    score.__doc__ = f"""Append ``{name}`` and ``{name}_passed`` (and ``{name}_signals`` with ``explain=True``).

    {metric.description}

    Parameters
    ----------
    df : frame
        Reads {", ".join(f"``{c}``" for c in metric.inputs)} (names overridable by keyword, e.g.
        ``answer="response"``).
    threshold : float, optional
        Pass threshold of ``{name}_passed`` (default {metric.threshold}).
    prefix : str
        Prepended to the output columns (``""`` or ending with ``_ - . : /``).
    **options
        ``explain``, ``slice_rows``, ``ngram_sizes``, ``ngram_weights``, ``claim_support_threshold``,
        ``chunk_relevance_threshold`` and the column names, as in :func:`ragframe.evaluate`.

    Returns
    -------
    The same kind of frame with the new columns. Formula and null rules: ``docs/metrics.md``.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({{"question": ["q"], "answer": ["a"], "contexts": [["a"]], "ground_truth": ["a"]}})
    >>> "{name}" in score_{name}(df).columns
    True
    """
    return score


score_faithfulness = _single("faithfulness")
score_answer_relevance = _single("answer_relevance")
score_context_precision = _single("context_precision")
score_context_recall = _single("context_recall")
score_context_relevance = _single("context_relevance")
score_answer_correctness = _single("answer_correctness")
score_hallucination_rate = _single("hallucination_rate")
