"""Assessors held to people: the figures of docs/assessors.md, from ../shared/data, without an LLM.

1. TREC RAG 2025: NIST's qrels against UMBRELA-v2's on their 10,284 common pairs
   (``rf.assessor_agreement``: all pairs, binarised at >= 2 and >= 1, and the spread per query).
2. RAGChecker's meta-evaluation (``rf.preference_agreement``): RAGChecker's own row, the two
   annotators against each other, and ragframe's no-LLM metrics scoring the same 280 answer pairs.
3. TREC DL 2019 / 2020, rank_llm's six runs each (``rf.ranking_agreement``): the system ranking
   by nDCG@10 against the rankings by other measures, and by nDCG@10 under the qrels with a third
   of the labels dropped (what incomplete judgments do to a ranking).

Usage::

    python benchmarks/assessors.py [--n-resamples 1000]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import polars as pl

import ragframe as rf

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
ASPECTS = ("correctness_label", "completeness_label", "overall_label")
RUNS = ("BM25", "BM25_RM3", "D_BERT_KD_TASB", "OPEN_AI_ADA2", "SPLADE_P_P_ENSEMBLE_DISTIL", "BM25.rerank-gpt-3.5-turbo")


def rag25() -> None:
    folder = SHARED / "anserini_qrels"
    if not (folder / "qrels.rag25.test-umbrela2.txt").exists():
        print("RAG25: data not found; skipped")
        return
    nist = rf.read_qrels(folder / "qrels.rag25.test.txt")
    umbrela = rf.read_qrels(folder / "qrels.rag25.test-umbrela2.txt")
    print("TREC RAG 2025, NIST vs UMBRELA-v2 (rf.assessor_agreement)")
    print(f"{'labels':14} {'pairs':>6} {'agreement':>9} {'kappa':>7} {'linear':>7} {'quadratic':>9}")
    for name, at in (("graded 0-4", None), (">= 2", 2), (">= 1", 1)):
        row = rf.assessor_agreement(nist, umbrela, binarize_at=at).row(0, named=True)
        print(
            f"{name:14} {row['pairs']:>6} {row['agreement']:>9.3f} {row['kappa']:>7.3f} {row['kappa_linear']:>7.3f} "
            f"{row['kappa_quadratic']:>9.3f}"
        )
    per = rf.assessor_agreement(nist, umbrela, by="query_id", binarize_at=2)
    k = per["kappa"]
    print(
        f"per query (>= 2, {per.height} queries): kappa min {k.min():.3f}, median {k.median():.3f}, max {k.max():.3f}; "
        f"{(k < 0.2).sum()} queries below 0.2"
    )


def _ragchecker_frames() -> tuple[pl.DataFrame, pl.DataFrame] | None:
    folder = SHARED / "ragchecker_human_labels"
    if not (folder / "baseline_ragchecker.json").exists():
        return None
    human = json.loads((folder / "human_labeled_data.json").read_text(encoding="utf-8"))
    base = {r["instance_id"]: r for r in json.loads((folder / "baseline_ragchecker.json").read_text(encoding="utf-8"))}
    labels = pl.DataFrame([{"instance_id": r["instance_id"], **{a: r[a] for a in ASPECTS}} for r in human])
    instances = pl.DataFrame(
        [
            {
                "instance_id": r["instance_id"],
                "question": r["query"],
                "ground_truth": r["gt_answer"],
                "answer_1": r["model1"]["response"],
                "answer_2": r["model2"]["response"],
                **{f"ragchecker_{a}_1": base[r["instance_id"]]["model1"]["ragchecker"][a] for a in ASPECTS},
                **{f"ragchecker_{a}_2": base[r["instance_id"]]["model2"]["ragchecker"][a] for a in ASPECTS},
            }
            for r in human[0::2]
        ]
    )
    return labels, instances


def no_llm_scores(instances: pl.DataFrame) -> pl.DataFrame:
    """ragframe's metrics that need no retrieved context, on both answers (``<metric>_1`` / ``_2``).

    ``context_recall`` reads the answer as the one context: the share of the reference's content
    the answer covers (completeness); ``faithfulness`` reads the reference as the context: the
    share of the answer's content the reference supports (precision).
    """
    out = instances.select("instance_id")
    for side in ("1", "2"):
        frame = instances.select(
            "question",
            "ground_truth",
            pl.col(f"answer_{side}").alias("answer"),
            pl.concat_list("ground_truth").alias("contexts"),
            pl.concat_list(f"answer_{side}").alias("answer_as_context"),
        )
        scored = rf.evaluate(frame, ["answer_correctness", "answer_relevance", "faithfulness"], composite=False)
        recall = rf.evaluate(frame, ["context_recall"], contexts="answer_as_context", composite=False)
        out = out.with_columns(
            scored["answer_correctness"].alias(f"answer_correctness_{side}"),
            scored["answer_relevance"].alias(f"answer_relevance_{side}"),
            scored["faithfulness"].alias(f"faithfulness (reference as context)_{side}"),
            recall["context_recall"].alias(f"context_recall (answer as context)_{side}"),
        )
    return out


def preference_rows(
    labels: pl.DataFrame, scores: pl.DataFrame, metrics: list[str], n_resamples: int
) -> list[tuple[str, list[str]]]:
    """(metric, [cell per aspect]) with Pearson / Spearman x100 and the Pearson interval."""
    joined = labels.join(scores, on="instance_id")
    rows = []
    for metric in metrics:
        cells = []
        for aspect in ASPECTS:
            r = rf.preference_agreement(
                joined,
                first=f"{metric}_1",
                second=f"{metric}_2",
                human=aspect,
                cluster="instance_id",
                n_resamples=n_resamples,
            ).row(0, named=True)
            interval = (
                "" if r["pearson_low"] is None else f" [{100 * r['pearson_low']:.1f}, {100 * r['pearson_high']:.1f}]"
            )
            cells.append(f"{100 * r['pearson']:.2f} / {100 * r['spearman']:.2f}{interval}")
        rows.append((metric, cells))
    return rows


def print_preference(rows: list[tuple[str, list[str]]]) -> None:
    print(f"{'metric':42} " + " ".join(f"{a.replace('_label', ''):>29}" for a in ASPECTS))
    for metric, cells in rows:
        print(f"{metric:42} " + " ".join(f"{c:>29}" for c in cells))


def ragchecker(n_resamples: int) -> None:
    frames = _ragchecker_frames()
    if frames is None:
        print("RAGChecker: data not found; skipped")
        return
    labels, instances = frames
    print("\nRAGChecker meta-evaluation, 280 pairs x 2 annotators (rf.preference_agreement)")
    print("Pearson / Spearman x100 [95% bootstrap interval of Pearson, resampling pairs]")
    own = []
    for aspect in ASPECTS:
        joined = labels.join(instances, on="instance_id")
        r = rf.preference_agreement(
            joined,
            first=f"ragchecker_{aspect}_1",
            second=f"ragchecker_{aspect}_2",
            human=aspect,
            cluster="instance_id",
            n_resamples=n_resamples,
        ).row(0, named=True)
        own.append(
            f"{100 * r['pearson']:.2f} / {100 * r['spearman']:.2f} [{100 * r['pearson_low']:.1f}, "
            f"{100 * r['pearson_high']:.1f}]"
        )
    human = []
    pairs = labels.with_columns(pl.int_range(pl.len()).over("instance_id").alias("annotator"))
    wide = pairs.pivot(on="annotator", index="instance_id", values=list(ASPECTS)).with_columns(pl.lit(0).alias("zero"))
    for aspect in ASPECTS:
        r = rf.preference_agreement(
            wide, first="zero", second=f"{aspect}_0", human=f"{aspect}_1", n_resamples=n_resamples
        ).row(0, named=True)
        human.append(
            f"{100 * r['pearson']:.2f} / {100 * r['spearman']:.2f} [{100 * r['pearson_low']:.1f}, "
            f"{100 * r['pearson_high']:.1f}]"
        )
    metrics = [
        "answer_correctness",
        "answer_relevance",
        "faithfulness (reference as context)",
        "context_recall (answer as context)",
    ]
    print_preference(
        [
            ("RAGChecker (its own aspect score)", own),
            ("annotator vs annotator", human),
            *preference_rows(labels, no_llm_scores(instances), metrics, n_resamples),
        ]
    )


def _scores(year: str, qrels: pl.DataFrame) -> pl.DataFrame:
    frames = []
    for name in RUNS:
        run = rf.read_trec_run(SHARED / "rankllm_dl_runs" / f"run.{year}.{name}.txt")
        frames.append(rf.evaluate_run(run, qrels, k=10).with_columns(pl.lit(name).alias("run_id")))
    return pl.concat(frames)


def dl(n_resamples: int) -> None:
    if not (SHARED / "rankllm_dl_runs" / "run.dl19.BM25.txt").exists():
        print("DL runs: data not found; skipped")
        return
    print("\nTREC DL, six rank_llm runs (rf.ranking_agreement, reference: mean nDCG@10 with NIST's qrels)")
    print(f"{'set':5} {'candidate':38} {'tau':>6} {'[95%]':>15} {'tau_ap':>7} {'spearman':>8} {'swaps':>5} {'sig.':>4}")
    for year in ("dl19", "dl20"):
        qrels = rf.read_qrels(SHARED / "anserini_qrels" / f"qrels.{year}-passage.txt")
        full = _scores(year, qrels)
        thinned = qrels.filter(pl.col("doc_id").str.tail(1).is_in(["1", "4", "7"]).not_())
        cases = [(m, full, m) for m in ("mrr_at_10", "precision_at_10", "average_precision")]
        cases.append(("ndcg_at_10, 70% of the labels", _scores(year, thinned), "ndcg_at_10"))
        for label, other, metric in cases:
            r = rf.ranking_agreement(full, other, metric="ndcg_at_10", metric_b=metric, n_resamples=n_resamples)
            r = r.row(0, named=True)
            interval = f"[{r['kendall_tau_low']:.2f}, {r['kendall_tau_high']:.2f}]"
            print(
                f"{year:5} {label:38} {r['kendall_tau']:>6.3f} {interval:>15} {r['tau_ap']:>7.3f} "
                f"{r['spearman']:>8.3f} {r['swaps']:>5} {r['significant_swaps']:>4}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples of each interval")
    args = parser.parse_args(argv)
    rag25()
    ragchecker(args.n_resamples)
    dl(args.n_resamples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
