"""Test cases built from the metric registry: every registered metric, scored alone, plus family-wide cases.

The invariance and bad-input suites iterate :data:`CASES`; a metric registered with
``rf.register_metric`` joins them without any edit here (its family's example options, or
none, are used).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import ragframe as rf


def fake_judge(prompt: str) -> str:
    """A deterministic judge: the reply is a function of the prompt alone (so of the row alone).

    One prompt in seven gets a reply without a score (a ``parse_error`` row); the others a
    ``Score: x/10`` line, after the claim or passage verdicts a built-in template asks for
    (``judge_server.verdict_lines``: ``x`` of 10 claims ``yes``).
    """
    from judge_server import verdict_lines

    digest = int(hashlib.sha256(prompt.encode("utf-8")).hexdigest(), 16)
    if digest % 7 == 0:
        return "I cannot judge this."
    return f"{verdict_lines(prompt, digest % 11)}Score: {digest % 11}/10\nReason: fake judge {digest % 97}"


#: Options each family is exercised with (non-default ones, to cover the option paths).
FAMILY_OPTIONS: dict[str, dict[str, Any]] = {
    "heuristic": {"explain": True},
    "retrieval": {"k": [1, 3, 10]},
    "judge": {"judge": fake_judge, "cache": False, "n_samples": 2},
    "ragchecker": {"explain": True},
    "nuggets": {"explain": True},
    "citations": {"explain": True},
}


@dataclass(frozen=True)
class Case:
    """A call of ``rf.evaluate`` on frames holding ``inputs``."""

    name: str
    metrics: tuple[str, ...]
    inputs: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)

    def score(self, frame: Any) -> Any:
        return rf.evaluate(frame, list(self.metrics), **self.options)

    def outputs(self) -> list[str]:
        """The columns a call appends, read off a call on zero rows."""
        from frames import make_frame

        empty = make_frame(self.inputs, 0, 0)
        return [c for c in self.score(empty).columns if c not in empty.columns]


def _cases() -> list[Case]:
    cases = []
    table = rf.list_metrics()
    for name, family, inputs in table.select("name", "family", "inputs").iter_rows():
        cases.append(Case(name, (name,), tuple(inputs), FAMILY_OPTIONS.get(family, {})))
    cases.append(
        Case(
            "retrieval_graded_scored",
            ("retrieval",),
            ("retrieved_ids", "retrieved_scores", "relevance"),
            {"k": [2, 5], "relevance_level": 2},
        )
    )
    for name, inputs in table.filter(table["family"] == "heuristic").select("name", "inputs").iter_rows():
        seed = {"explain": True, "compat": "rag-eval-node-ts", "ngram_sizes": [1, 2, 3]}
        cases.append(Case(f"seed_{name}", (name,), tuple(inputs), seed))
    cases.append(
        Case(
            "all_heuristics_weighted",
            ("heuristic",),
            ("question", "answer", "contexts", "ground_truth"),
            {"weights": {"faithfulness": 2.0}, "prefix": "v1_"},
        )
    )
    judged = {**FAMILY_OPTIONS["judge"], "explain": True}
    text = ("question", "answer", "contexts", "ground_truth")
    cases.append(Case("all_heuristics_llm_mode", ("heuristic",), text, {**judged, "mode": "llm"}))
    cases.append(Case("all_heuristics_hybrid_mode", ("heuristic",), text, {**judged, "mode": "hybrid"}))
    return cases


CASES = _cases()
