"""The reference computations of the claim-level metrics, loaded without their packages' heavy dependencies.

RAGChecker 0.1.9 and nuggetizer are installed with ``pip install --no-deps`` (the test extra):
their package ``__init__`` modules import LLM clients we neither have nor want, so only the
computation modules are loaded, from their files. A test calls :func:`ragchecker_computation`
or :func:`nuggetizer_metrics`; either skips the test when the package is absent.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{name} is not installed (pip install --no-deps {name})")
    return Path(next(iter(spec.submodule_search_locations)))


def _load(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class RAGResult:
    """The fields of ``ragchecker.container.RAGResult`` the computation reads (its own needs dataclasses_json)."""

    answer2response: Any = None
    response2answer: Any = None
    retrieved2response: Any = None
    retrieved2answer: Any = None
    metrics: dict = field(default_factory=dict)


def ragchecker_computation() -> types.ModuleType:
    """``ragchecker.computation`` (0.1.9), its ``container`` replaced by the stub above."""
    base = "_ragchecker_oracle"
    if f"{base}.computation" in sys.modules:
        return sys.modules[f"{base}.computation"]
    folder = _package_dir("ragchecker")
    from importlib.metadata import version

    if version("ragchecker") != "0.1.9":
        pytest.skip(f"the oracle is ragchecker 0.1.9, found {version('ragchecker')}")
    package = types.ModuleType(base)
    package.__path__ = [str(folder)]
    sys.modules[base] = package
    container = types.ModuleType(f"{base}.container")
    container.RAGResult = RAGResult
    sys.modules[f"{base}.container"] = container
    _load(f"{base}.metrics", folder / "metrics.py")
    return _load(f"{base}.computation", folder / "computation.py")


def ragchecker_row(**verdicts: Any) -> dict[str, float]:
    """RAGChecker's 11 metrics for one row's verdict lists, as its ``METRIC_FUNC_MAP`` computes them."""
    computation = ragchecker_computation()
    result = RAGResult(**verdicts)
    for function in computation.METRIC_FUNC_MAP.values():
        function(result)
    return {name: float(value) for name, value in result.metrics.items()}


def nuggetizer_metrics() -> types.ModuleType:
    """``nuggetizer.core.metrics`` (``calculate_nugget_scores``), loaded from its file."""
    name = "_nuggetizer_oracle_metrics"
    if name in sys.modules:
        return sys.modules[name]
    return _load(name, _package_dir("nuggetizer") / "core" / "metrics.py")
