"""What a heuristic metric is made of: its options and its kernel over the shared text engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ragframe.metrics.text_engine import RowSlice, Signals

__all__ = ["Options", "HeuristicKernel", "HeuristicMethods"]


@dataclass(frozen=True)
class Options:
    """Tunable options of the heuristic metrics (rag-eval-node-ts defaults)."""

    ngram_sizes: tuple[int, ...] = (1, 2)
    ngram_weights: tuple[float, ...] = (0.7, 0.3)
    claim_support_threshold: float = 0.15
    chunk_relevance_threshold: float = 0.2


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

    pairs: Callable[[Options], Mapping[str, frozenset[int]]]
    score: Callable[[RowSlice, Options, bool], tuple[np.ndarray, Signals | None]]


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
