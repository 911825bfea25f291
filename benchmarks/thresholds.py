"""How the default pass thresholds of the heuristic metrics were chosen, on ARES (development set).

For each metric with an ARES label, prints

- ``youden``: the cut ``score >= t`` that best separates the human labels on all 200 rows
  (Youden's J = TPR - FPR, as ``rf.agreement_with_labels`` reports it), and its J;
- ``default``: the registered default threshold (the Youden cut, rounded), its J, its
  balanced accuracy ((TPR + TNR) / 2), the share of rows that pass and the share humans
  judged positive;
- ``cv``: a 5-fold cross-validated estimate of the balanced accuracy of the procedure
  "take Youden's cut": the cut is chosen on four folds and scored on the fifth
  (``StratifiedKFold(5, shuffle=True, random_state=0)``), averaged over the folds; and the
  five cuts it picked;
- the same pass statistics for the rag-eval-node-ts method at its own threshold
  (``compat="rag-eval-node-ts"``), for comparison.

``context_recall`` (no labelled set) and ``answer_correctness`` (RAGChecker has preferences
between two answers, not pass/fail labels) are not calibrated here; see docs/metrics.md.
The held-out sets are not read.

Usage::

    python benchmarks/thresholds.py
"""

from __future__ import annotations

import sys

import numpy as np
import polars as pl
from sklearn.metrics import roc_curve
from sklearn.model_selection import StratifiedKFold

import ragframe as rf
from ragframe.datasets import example_rag_log
from ragframe.metrics.heuristic_seed import SEED_THRESHOLDS

LABELS = {
    "faithfulness": "human_faithfulness",
    "hallucination_rate": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_precision": "human_context_relevance",
    "context_relevance": "human_context_relevance",
}


def youden(labels: np.ndarray, scores: np.ndarray) -> float:
    """The cut maximising TPR - FPR (the highest among ties, as sklearn's argmax picks)."""
    fpr, tpr, cuts = roc_curve(labels, scores)
    return float(cuts[int(np.argmax(tpr - fpr))])


def rates(labels: np.ndarray, scores: np.ndarray, cut: float) -> tuple[float, float, float]:
    """(Youden's J, balanced accuracy, pass rate) of ``score >= cut``."""
    passed = scores >= cut
    tpr = passed[labels == 1].mean()
    tnr = (~passed[labels == 0]).mean()
    return float(tpr + tnr - 1), float((tpr + tnr) / 2), float(passed.mean())


def cross_validated(labels: np.ndarray, scores: np.ndarray) -> tuple[float, list[float]]:
    """Mean held-out balanced accuracy of Youden's cut chosen on the other four folds, and the cuts."""
    folds = StratifiedKFold(5, shuffle=True, random_state=0).split(scores, labels)
    accuracy, cuts = [], []
    for train, test in folds:
        cut = youden(labels[train], scores[train])
        cuts.append(cut)
        accuracy.append(rates(labels[test], scores[test], cut)[1])
    return float(np.mean(accuracy)), cuts


def main() -> int:
    log = pl.read_parquet(example_rag_log())
    ours = rf.evaluate(log, list(LABELS), composite=False)
    seed = rf.evaluate(log, list(LABELS), composite=False, compat="rag-eval-node-ts")
    defaults = dict(rf.list_metrics().select("name", "threshold").iter_rows())
    print("ARES (200 rows), pass = score >= threshold; J = TPR - FPR; bal. acc. = (TPR + TNR) / 2\n")
    for metric, label in LABELS.items():  # five report lines
        labels = ours[label].to_numpy()
        scores = ours[metric].to_numpy()
        cut = youden(labels, scores)
        default = defaults[metric]
        j, balanced, passing = rates(labels, scores, default)
        cv, cuts = cross_validated(labels, scores)
        seed_j, seed_balanced, seed_passing = rates(labels, seed[metric].to_numpy(), SEED_THRESHOLDS[metric])
        print(f"{metric} (label {label}, {labels.mean():.0%} positive)")
        print(f"  youden cut {cut:.3f} (J {rates(labels, scores, cut)[0]:.3f})")
        print(f"  default {default:g}: J {j:.3f}, bal. acc. {balanced:.3f}, pass rate {passing:.0%}")
        print(f"  5-fold CV bal. acc. of Youden's cut {cv:.3f} (cuts {', '.join(f'{c:.3f}' for c in cuts)})")
        print(
            f"  seed method at {SEED_THRESHOLDS[metric]:g}: J {seed_j:.3f}, bal. acc. {seed_balanced:.3f}, "
            f"pass rate {seed_passing:.0%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
