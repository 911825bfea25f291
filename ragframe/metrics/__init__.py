"""Public ``score_*`` functions, one module per family, and the metric registry.

:data:`METRICS` maps a metric family name to a :class:`MetricSpec` that says how
to call it and which columns it reads and writes. The invariance and bad-input
test suites iterate over this registry, so every metric registered here is
tested for row independence, batch splitting, frame kinds and typed errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ragframe.metrics import heuristic
from ragframe.metrics.retrieval import RETRIEVAL_METRICS, score_retrieval

__all__ = ["MetricSpec", "METRICS", "register", "score_columns", "passed_column"]


@dataclass(frozen=True)
class MetricSpec:
    """How to call one frame-level metric function.

    Attributes
    ----------
    name : str
        Registry key.
    function : callable
        ``function(frame, **kwargs) -> frame`` appending ``outputs``.
    inputs : tuple of str
        Columns it reads with the default names.
    outputs : callable
        ``outputs(kwargs) -> list of column names`` it appends.
    example_kwargs : dict
        Keyword arguments the test suites call it with.
    """

    name: str
    function: Callable[..., Any]
    inputs: tuple[str, ...]
    outputs: Callable[[dict[str, Any]], list[str]]
    example_kwargs: dict[str, Any] = field(default_factory=dict)


METRICS: dict[str, MetricSpec] = {}


def register(spec: MetricSpec) -> MetricSpec:
    """Add ``spec`` to :data:`METRICS` (a name may be registered once)."""
    if spec.name in METRICS:
        raise ValueError(f"metric {spec.name!r} is already registered")
    METRICS[spec.name] = spec
    return spec


def _retrieval_outputs(kwargs: dict[str, Any]) -> list[str]:
    from ragframe.metrics.retrieval import _check_ks, _output_names

    ks = _check_ks(kwargs.get("k", (1, 5, 10)), "registry")
    metrics = list(kwargs.get("metrics") or RETRIEVAL_METRICS)
    return _output_names(ks, metrics, kwargs.get("prefix", ""))


register(
    MetricSpec(
        name="retrieval",
        function=score_retrieval,
        inputs=("retrieved_ids", "relevant_ids"),
        outputs=_retrieval_outputs,
        example_kwargs={"k": [1, 3, 10]},
    )
)
register(
    MetricSpec(
        name="retrieval_graded_scored",
        function=score_retrieval,
        inputs=("retrieved_ids", "retrieved_scores", "relevance"),
        outputs=_retrieval_outputs,
        example_kwargs={"k": [2, 5], "relevance_level": 2},
    )
)


def _heuristic_outputs(name: str, explain_kw: str = "explain"):
    def outputs(kwargs: dict[str, Any]) -> list[str]:
        names = [name, f"{name}_passed"]
        return [*names, f"{name}_signals"] if kwargs.get(explain_kw) else names

    return outputs


for _name in heuristic.HEURISTIC_METRICS:
    register(
        MetricSpec(
            name=_name,
            function=getattr(heuristic, f"score_{_name}"),
            inputs=heuristic.METRIC_INPUTS[_name],
            outputs=_heuristic_outputs(_name),
            example_kwargs={"explain": True},
        )
    )


def _evaluate_outputs(kwargs: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for metric in kwargs.get("metrics") or heuristic.HEURISTIC_METRICS:
        names += [metric, f"{metric}_passed"] + ([f"{metric}_signals"] if kwargs.get("explain") else [])
    return [*names, "composite_score", "passed"]


register(
    MetricSpec(
        name="evaluate",
        function=heuristic.evaluate,
        inputs=("question", "answer", "contexts", "ground_truth"),
        outputs=_evaluate_outputs,
        example_kwargs={"ngram_sizes": [1, 2, 3], "weights": {"faithfulness": 2.0}},
    )
)


_CUT_PATTERN = re.compile(
    r"^(?:{})_at_\d+$".format("|".join(m.removesuffix("_at_k") for m in RETRIEVAL_METRICS if m.endswith("_at_k")))
)
_SCORE_NAMES = frozenset(
    [m for m in RETRIEVAL_METRICS if not m.endswith("_at_k")] + list(heuristic.HEURISTIC_METRICS) + ["composite_score"]
)


def score_columns(columns: Iterable[str]) -> list[str]:
    """The columns among ``columns`` that ragframe writes as scores, in their order.

    Ranking measures (``ndcg_at_10``, ``mrr``, ...), the heuristic metrics and
    ``composite_score``; not the pass flags, signals or the trec_eval counts.

    Examples
    --------
    >>> score_columns(["id", "ndcg_at_10", "faithfulness", "faithfulness_passed", "num_ret", "mrr"])
    ['ndcg_at_10', 'faithfulness', 'mrr']
    """
    return [c for c in columns if c in _SCORE_NAMES or _CUT_PATTERN.match(c)]


def passed_column(metric: str) -> str:
    """Name of the pass/fail column that goes with a score column.

    Examples
    --------
    >>> passed_column("faithfulness"), passed_column("composite_score")
    ('faithfulness_passed', 'passed')
    """
    return "passed" if metric == "composite_score" else f"{metric}_passed"
