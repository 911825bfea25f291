"""What a heuristic metric is made of: its options and its kernel over the shared text engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragframe import validate
from ragframe.metrics.registry import option
from ragframe.metrics.text_engine import RowSlice, Signals

__all__ = ["COMPAT", "TextColumns", "HeuristicOptions", "HeuristicKernel", "HeuristicMethods"]

#: The values of the ``compat`` option: None (ragframe's methods) or the seed's name.
COMPAT = (None, "rag-eval-node-ts")


def _sizes(value: Any, name: str) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise validate.fail(name, "a non-empty list of ints >= 1", value)
    sizes = tuple(value)
    if not sizes:
        raise validate.fail(name, "a non-empty list of ints >= 1", sizes)
    return tuple(validate.positive_int(n, name) for n in sizes)


def _weights(value: Any, name: str) -> tuple[float, ...]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise validate.fail(name, "a list of numbers >= 0", value)
    return tuple(validate.number(w, name, minimum=0.0) for w in value)


def _compat(value: Any, name: str) -> str | None:
    return validate.choice(value, name, COMPAT)


@dataclass(frozen=True)
class TextColumns:
    """The text roles' column names, shared by the heuristic and judge families."""

    question: str = option("question", "Column of the question (str).", check=validate.column_name)
    answer: str = option("answer", "Column of the answer (str).", check=validate.column_name)
    contexts: str = option("contexts", "Column of the retrieved passages (list of str).", check=validate.column_name)
    ground_truth: str = option("ground_truth", "Column of the reference answer (str).", check=validate.column_name)


@dataclass(frozen=True)
class HeuristicOptions(TextColumns):
    """The heuristic family's options: each one's default, check and documentation, declared once.

    The kernels read the four tuning options from an instance (rag-eval-node-ts defaults);
    ``seed_only`` marks those only the seed's methods read (``compat="rag-eval-node-ts"``).
    """

    ngram_sizes: tuple[int, ...] = option(
        (1, 2), "The seed's n-gram sizes (ints >= 1).", check=_sizes, seed_only=True, invalid=((), (0,))
    )
    ngram_weights: tuple[float, ...] = option(
        (0.7, 0.3),
        "The seed's weight per n-gram size (numbers >= 0).",
        check=_weights,
        seed_only=True,
        invalid=((-1,),),
    )
    claim_support_threshold: float = option(
        0.15, "The seed's least support of a supported claim.", check=validate.number, seed_only=True
    )
    chunk_relevance_threshold: float = option(
        0.2, "The seed's least relevance of a relevant chunk.", check=validate.number, seed_only=True
    )
    explain: bool = option(False, "Add ``<metric>_signals`` (what each score is made of).", check=validate.flag)
    slice_rows: int = option(
        10_000,
        "Rows per pair-stage slice: bounds memory, never changes a score.",
        check=validate.positive_int,
        invalid=(0,),
    )
    compat: str | None = option(
        None,
        "None (ragframe's calibrated methods) or ``'rag-eval-node-ts'`` (the seed's, reproduced exactly).",
        check=_compat,
        invalid=("ragas",),
    )


@dataclass(frozen=True)
class HeuristicKernel:
    """How one heuristic metric is computed over the shared text engine.

    Attributes
    ----------
    pairs : callable
        ``pairs(opts) -> {pair list tag: n-gram sizes}``: what it compares (see
        :meth:`RowSlice.pair_list`).
    score : callable
        ``score(batch, opts, explain) -> (values, signals or None)``, one value per row
        (NaN for a null score).
    """

    pairs: Callable[[HeuristicOptions], Mapping[str, frozenset[int]]]
    score: Callable[[RowSlice, HeuristicOptions, bool], tuple[np.ndarray, Signals | None]]


@dataclass(frozen=True)
class HeuristicMethods:
    """A heuristic metric's two methods: ragframe's validated default and the seed's exact one.

    Attributes
    ----------
    default : HeuristicKernel
        The method used by default (Unicode text rules).
    seed : HeuristicKernel
        rag-eval-node-ts 0.3.2's method (``compat="rag-eval-node-ts"``, the seed's text rules).
    seed_threshold : float
        The seed's default pass threshold (the Metric's ``threshold`` is the default method's).
    """

    default: HeuristicKernel
    seed: HeuristicKernel
    seed_threshold: float
