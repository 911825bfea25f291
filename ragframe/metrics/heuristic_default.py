"""ragframe's default heuristic methods, chosen and calibrated against human labels.

See ``docs/metrics.md`` for the formulas and ``benchmarks/validity.py`` for the agreement
with human labels that chose them.
"""

from __future__ import annotations

from ragframe.metrics.heuristic_kernels import HeuristicKernel
from ragframe.metrics.heuristic_seed import SEED_KERNELS, SEED_THRESHOLDS

__all__ = ["DEFAULT_KERNELS", "DEFAULT_THRESHOLDS"]

#: The default kernel of each metric (being replaced metric by metric by validated methods).
DEFAULT_KERNELS: dict[str, HeuristicKernel] = dict(SEED_KERNELS)
#: The default pass thresholds.
DEFAULT_THRESHOLDS: dict[str, float] = dict(SEED_THRESHOLDS)
