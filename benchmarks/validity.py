"""Do the heuristic metrics agree with people? AUROC against human labels, seed methods vs ragframe's.

Development sets (the methods and thresholds were chosen on these only):

- ARES (200 RAG rows, one context each; labels for faithfulness, answer relevance, context
  relevance), bundled with the package;
- RAGChecker (280 pairs of answers, two annotators each): the score difference
  metric(answer 2) - metric(answer 1) against the humans' preference (ties dropped).

Held-out sets (never used to design anything; printed only with ``--held-out``):

- HaluEval QA, one-turn and multi-turn (500 questions each, a right and a hallucinated
  answer per question, one Wikipedia context);
- FaithBench (800 summaries; faithful = no annotator marked an "Unwanted" hallucination).

Reads ``../shared/data`` and skips the sets it cannot find. Prints one table: set, metric,
n, positives, AUROC of the seed's method (rag-eval-node-ts 0.3.2, ``compat=``) and of
ragframe's default method, each with a percentile-bootstrap 95% interval.

Usage::

    python benchmarks/validity.py                 # development sets
    python benchmarks/validity.py --held-out      # and the held-out ones
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

import polars as pl

import ragframe as rf
from ragframe.datasets import example_rag_log

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SEED = "rag-eval-node-ts"
#: (metric, label column) pairs per set.
ARES_PAIRS = {
    "faithfulness": "human_faithfulness",
    "hallucination_rate": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_precision": "human_context_relevance",
    "context_relevance": "human_context_relevance",
}


def _agreement(scored: pl.DataFrame, pairs: dict[str, str], n_resamples: int) -> pl.DataFrame:
    table = rf.agreement_with_labels(
        scored,
        label_columns=pairs,
        n_resamples=n_resamples,
        thresholds=dict.fromkeys(pairs, None),
    )
    return table.select("metric", "n", "positives", "auroc", "auroc_low", "auroc_high")


def _both(frame: pl.DataFrame, pairs: dict[str, str], n_resamples: int, **options) -> pl.DataFrame:
    """Agreement of the seed's and ragframe's methods on one labelled frame."""
    metrics = list(dict.fromkeys(pairs))
    old = rf.evaluate(frame, metrics, compat=SEED, composite=False, **options)
    new = rf.evaluate(frame, metrics, composite=False, **options)
    seed = _agreement(old, pairs, n_resamples).rename(lambda c: f"seed_{c}" if c.startswith("auroc") else c)
    ours = _agreement(new, pairs, n_resamples).select("metric", "auroc", "auroc_low", "auroc_high")
    return seed.join(ours, on="metric", how="left", maintain_order="left")


def ares(n_resamples: int) -> pl.DataFrame:
    log = pl.read_parquet(example_rag_log())
    return _both(log, ARES_PAIRS, n_resamples)


def ragchecker(n_resamples: int) -> pl.DataFrame | None:
    path = SHARED / "ragchecker_human_labels" / "human_labeled_data.json"
    if not path.exists():
        return None
    rows = json.loads(path.read_text(encoding="utf-8"))
    frame = pl.DataFrame(
        {
            "row": list(range(len(rows))),
            "question": [r["query"] for r in rows],
            "ground_truth": [r["gt_answer"] for r in rows],
            "answer_1": [_response(r["model1"]) for r in rows],
            "answer_2": [_response(r["model2"]) for r in rows],
            "overall": [r["overall_label"] for r in rows],
            "correctness": [r["correctness_label"] for r in rows],
        }
    )
    out = []
    for metric, label in (("answer_relevance", "overall"), ("answer_correctness", "overall"),
                          ("answer_correctness", "correctness")):  # fmt: skip
        pairs = {f"{metric}_difference": f"prefers_2_{label}"}
        prefer = frame.filter(pl.col(label) != 0).with_columns(
            (pl.col(label) > 0).cast(pl.Int8).alias(pairs[f"{metric}_difference"])
        )
        table = []
        for name, options in (("seed", {"compat": SEED}), ("ours", {})):
            one = rf.evaluate(prefer, [metric], answer="answer_1", composite=False, prefix="a1_", **options)
            two = rf.evaluate(one, [metric], answer="answer_2", composite=False, prefix="a2_", **options)
            scored = two.with_columns((pl.col(f"a2_{metric}") - pl.col(f"a1_{metric}")).alias(f"{metric}_difference"))
            result = _agreement(scored, pairs, n_resamples)
            if name == "seed":
                result = result.rename(lambda c: f"seed_{c}" if c.startswith("auroc") else c)
            else:
                result = result.select("metric", "auroc", "auroc_low", "auroc_high")
            table.append(result)
        merged = (
            table[0].join(table[1], on="metric").with_columns(pl.lit(f"{metric} vs {label} preference").alias("metric"))
        )
        out.append(merged)
    return pl.concat(out)


def _response(model: object) -> str:
    value = model if isinstance(model, dict) else ast.literal_eval(str(model))
    return str(value["response"])


def halueval(name: str, n_resamples: int) -> pl.DataFrame | None:
    path = SHARED / "halueval" / f"qa_{name}_data.json"
    if not path.exists():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    frame = pl.DataFrame(
        {
            "question": [r["question"] for r in rows] * 2,
            "contexts": [[r["knowledge"]] for r in rows] * 2,
            "answer": [r["right_answer"] for r in rows] + [r["hallucinated_answer"] for r in rows],
            "faithful": [1] * len(rows) + [0] * len(rows),
        }
    )
    pairs = {"faithfulness": "faithful", "hallucination_rate": "faithful", "answer_relevance": "faithful"}
    return _both(frame, pairs, n_resamples)


def faithbench(n_resamples: int) -> pl.DataFrame | None:
    path = SHARED / "faithbench" / "FaithBench.csv"
    if not path.exists():
        return None
    raw = pl.read_csv(path)
    frame = raw.select(
        pl.col("summary").alias("answer"),
        pl.concat_list(pl.col("source")).alias("contexts"),
        (pl.col("worst-label") != "Unwanted").cast(pl.Int8).alias("faithful"),
    )
    return _both(frame, {"faithfulness": "faithful", "hallucination_rate": "faithful"}, n_resamples)


def _interval(auroc: float | None, low: float | None, high: float | None) -> str:
    if auroc is None:
        return "-"
    return f"{auroc:.3f} [{low:.3f}, {high:.3f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--held-out", action="store_true", help="also the held-out sets (HaluEval QA, FaithBench)")
    parser.add_argument("--n-resamples", type=int, default=2000, help="bootstrap resamples of each interval")
    args = parser.parse_args(argv)
    sets = [("ARES (dev)", lambda: ares(args.n_resamples)), ("RAGChecker (dev)", lambda: ragchecker(args.n_resamples))]
    if args.held_out:
        sets += [
            ("HaluEval-QA one-turn (held out)", lambda: halueval("one-turn", args.n_resamples)),
            ("HaluEval-QA multi-turn (held out)", lambda: halueval("multi-turn", args.n_resamples)),
            ("FaithBench (held out)", lambda: faithbench(args.n_resamples)),
        ]
    print(f"{'set':34} {'metric':44} {'n':>5} {'pos':>5}  {'seed AUROC [95% CI]':24}  ragframe AUROC [95% CI]")
    for name, build in sets:
        table = build()
        if table is None:
            print(f"{name:34} (data not found under {SHARED}; skipped)")
            continue
        for row in table.iter_rows(named=True):
            seed = _interval(row["seed_auroc"], row["seed_auroc_low"], row["seed_auroc_high"])
            ours = _interval(row["auroc"], row["auroc_low"], row["auroc_high"])
            print(f"{name:34} {row['metric']:44} {row['n']:>5} {row['positives'] or 0:>5}  {seed:24}  {ours}")
    print("\nAUROC: probability that a row humans judged positive (faithful, relevant, preferred) scores higher")
    print("than a negative one; 0.5 is chance, below 0.5 points the wrong way.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
