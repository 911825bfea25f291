"""``ragframe demo``: score the bundled TREC DL 2019 example and the bundled ARES RAG log, print tables."""

from __future__ import annotations

import argparse
from pathlib import Path

import polars as pl
import polars.selectors as cs

from ragframe.cli.args import EXIT_CODES, epilog
from ragframe.cli.format import format_frame
from ragframe.datasets import EXAMPLE_FILES, write_examples
from ragframe.display import aligned, cell_text
from ragframe.io.trec import read_qrels, read_trec_run
from ragframe.metrics import score_columns
from ragframe.metrics.heuristic_seed import SEED_THRESHOLDS
from ragframe.run.trec_run import evaluate_run, run_summary
from ragframe.stats.compare import compare_runs
from ragframe.stats.estimate import estimate
from ragframe.stats.summary import summarize
from ragframe.stats.validity import agreement_with_labels

__all__ = ["add_parser", "run"]

SEED = "rag-eval-node-ts"
#: Bootstrap resamples of the demo's AUROC intervals (few: the demo should be quick).
DEMO_RESAMPLES = 200

DEMO_MEASURES = [
    "precision_at_k",
    "recall_at_k",
    "hit_rate_at_k",
    "ndcg_at_k",
    "ndcg",
    "mrr",
    "average_precision",
    "r_precision",
]


#: Measures of the demo's paired comparison and per-query summary (cutoff 10 for the _at_k ones).
DEMO_COMPARE_MEASURES = ["ndcg_at_k", "precision_at_k", "recall_at_k", "mrr", "average_precision"]
DEMO_SUMMARY_COLUMNS = ["ndcg_at_10", "mrr", "average_precision", "recall_at_100"]


def run(args: argparse.Namespace) -> int:
    """Copy the bundled examples into ``--out``, score them from there, print tables, write the scores; 0."""
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = write_examples(out_dir)  # the inputs, so that the README's later commands can use them
    qrels = read_qrels(paths["qrels"])
    runs = {name: read_trec_run(paths[name]) for name in ("bm25", "bm25+gpt3.5-rerank")}
    summaries = {}
    frames = []
    for name, run in runs.items():
        per_query = evaluate_run(run, qrels, k=[1, 5, 10, 100], metrics=DEMO_MEASURES)
        frames.append(per_query.with_columns(pl.lit(name).alias("run")))
        summaries[name] = run_summary(per_query)
    per_query_path = out_dir / "per_query.parquet"
    scores = pl.concat(frames)
    scores.write_parquet(per_query_path)

    names = list(summaries)
    columns = [c for c in summaries[names[0]].columns]
    # one line per measure of two runs' summaries: display, not a hot path
    rows = [[column, *(cell_text(summaries[n][column].item()) for n in names)] for column in columns]
    print("ragframe demo: TREC DL 2019 passage ranking, 43 judged queries (bundled example)")
    print("graded qrels 0-3; relevant means grade >= 1; nDCG uses the grades as gains\n")
    print(aligned(["measure", *names], rows, [False, *(True for _ in names)]))

    compared = compare_runs(runs[names[0]], runs[names[1]], qrels, k=10, metrics=DEMO_COMPARE_MEASURES)
    n_pairs = compared["n"].max()
    print(f"\npaired comparison, a = {names[0]}, b = {names[1]} (rf.compare_runs): two-sided paired t test")
    print(f"over the {n_pairs} judged queries, p-values Holm-adjusted over the {compared.height} measures\n")
    columns = ["metric", "n", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adjusted", "winner"]
    print(format_frame(compared.select(columns)))

    print("\nper-query score distribution by run (rf.summarize, 95% t interval of the mean)\n")
    summary = summarize(scores, metrics=DEMO_SUMMARY_COLUMNS, by="run")
    print(
        format_frame(summary.select("run", "metric", "count", "mean", "std", "min", "p50", "max", "ci_low", "ci_high"))
    )
    rag_path, rag_scores = _demo_heuristics(paths["rag_log"], out_dir)
    report_path = _demo_report(rag_scores, paths["rag_log_wrong_contexts"], out_dir)
    ranking_path = _demo_ranking_report(frames, names, out_dir) if report_path is not None else None
    print(f"\nwritten to {out_dir.resolve()}:")
    print(f"  {per_query_path.name}: per-query ranking scores ({scores.height} rows, a 'run' column)")
    print(f"  {rag_path.name}: per-answer heuristic scores (200 rows)")
    if report_path is not None:
        print(f"  {report_path.name}: the HTML report of the RAG log's scores (open it in a browser; it works offline)")
    if ranking_path is not None:
        print(f"  {ranking_path.name}: the HTML report of the two runs' per-query scores (ranking curves, comparison)")
    print(f"  the inputs: {', '.join(EXAMPLE_FILES.values())}")
    print(f"  ({EXAMPLE_FILES['rag_log_wrong_contexts']} is the RAG log with each row given the previous row's")
    print("  contexts, a simulated retrieval bug for trying 'ragframe compare' and 'ragframe gate')")
    return 0


_DEMO_LABELS = {
    "faithfulness": "human_faithfulness",
    "hallucination_rate": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_precision": "human_context_relevance",
    "context_relevance": "human_context_relevance",
}


def _demo_heuristics(log_path: Path, out_dir: Path) -> tuple[Path, pl.DataFrame]:
    """Score the ARES log at ``log_path`` with both methods; print the summary and the agreement with people.

    Returns the path of the scores written and the scored log (with its texts and signals, for the report).
    """
    from ragframe import evaluate

    log = pl.read_parquet(log_path)
    scored = evaluate(log, list(_DEMO_LABELS), explain=True)  # the signals explain the report's worst rows
    seed = evaluate(log, list(_DEMO_LABELS), compat=SEED)
    path = out_dir / "rag_scores.parquet"
    scored.drop("question", "answer", "contexts", cs.ends_with("_signals")).write_parquet(path)
    print("\nheuristic RAG metrics on the bundled ARES log: 200 answers of a documentation assistant")
    print("with human labels (rf.evaluate, then rf.summarize; no reference answers, so five metrics)\n")
    # the new score columns only: the human labels (human_faithfulness, ...) parse as prefixed scores
    summary = summarize(scored, metrics=score_columns(scored.columns[len(log.columns) :]))
    print(format_frame(summary.select("metric", "count", "mean", "std", "p50", "pass_rate", "ci_low", "ci_high")))
    note = _one_chunk_note(scored)
    if note:
        print(note)
    print("\ndo the scores agree with the human labels? ragframe's methods (the default) next to")
    print(f'{SEED}\'s (compat="{SEED}"), by rf.agreement_with_labels ({DEMO_RESAMPLES} bootstrap resamples)\n')
    print(format_frame(_agreement_table(scored, seed)))
    print(f"\nragframe, {SEED}: AUROC (sklearn's roc_auc_score) [95% interval], the chance that an")
    print("answer the annotators judged good scores above one they judged bad:")
    print("0.5 is chance, below 0.5 points the wrong way.")
    print("good: answers judged good; passes, seed passes: answers at or above each method's default threshold.")
    _demo_estimate(scored)
    return path, scored


#: Labels the demo's estimate keeps (drawn with DEMO_LABEL_SEED); the estimator never sees the others.
DEMO_LABELS_KEPT = 50
DEMO_LABEL_SEED = 7


def demo_label_sample(height: int) -> pl.Series:
    """True on the DEMO_LABELS_KEPT rows (of ``height``) whose label the demo's estimate keeps: a seeded shuffle.

    Examples
    --------
    >>> int(demo_label_sample(200).sum())
    50
    """
    return pl.Series(range(height)).shuffle(seed=DEMO_LABEL_SEED) < DEMO_LABELS_KEPT


def _demo_estimate(scored: pl.DataFrame) -> None:
    """Print the faithful rate from 50 labels: PPI++ with the heuristic, classical, the truth from all 200."""
    truth = scored["human_faithfulness"]
    few = scored.with_columns(human=pl.when(demo_label_sample(scored.height)).then(truth))
    row = estimate(few, prediction="faithfulness", label="human").row(0, named=True)
    hidden = scored.height - DEMO_LABELS_KEPT
    kept, seed = DEMO_LABELS_KEPT, DEMO_LABEL_SEED
    print(f"\nthe rate of faithful answers from {kept} labels: {kept} rows drawn at random (seed {seed}) keep")
    print(f"their human_faithfulness label, the other {hidden} are hidden from the estimator")
    print("(rf.estimate, 95% intervals); the truth is the mean of all 200 labels\n")
    table = pl.DataFrame(
        {
            "method": [f"ppi++ (the heuristic on all {scored.height} rows + {DEMO_LABELS_KEPT} labels)",
                       f"classical (the same {DEMO_LABELS_KEPT} labels alone)", f"truth (all {truth.len()} labels)"],
            "rate": [row["estimate"], row["classical_estimate"], float(truth.mean())],
            "ci_low": [row["ci_low"], row["classical_ci_low"], None],
            "ci_high": [row["ci_high"], row["classical_ci_high"], None],
            "labels": [row["n_labeled"], row["n_labeled"], truth.len()],
        }
    )  # fmt: skip
    print(format_frame(table))
    width, classical = row["ci_high"] - row["ci_low"], row["classical_ci_high"] - row["classical_ci_low"]
    print(f"\nPPI++ weighs the heuristic by lambda = {row['lambda']:.3f}; its interval is {width:.4f} wide against")
    print(f"{classical:.4f} from the labels alone: worth {row['effective_n']:.1f} labels (x{row['ess_gain']:.2f}).")


def _one_chunk_note(scored: pl.DataFrame) -> str:
    """Why context_precision and context_relevance print the same numbers on this log (checked, not assumed)."""
    one_chunk = scored["contexts"].list.len().unique().to_list() == [1]
    equal = scored["context_precision"].equals(scored["context_relevance"], check_names=False, null_equal=True)
    if not (one_chunk and equal):
        return ""
    return (
        "\nragframe's context_precision and context_relevance are equal on every row here: each row has one\n"
        "retrieved chunk, and context_precision is context_relevance with the chunks weighted by rank\n"
        "(docs/metrics.md). The report's tables, histograms and ROC curves of the two coincide; it says so."
    )


def _demo_report(scored: pl.DataFrame, wrong_contexts_path: Path, out_dir: Path) -> Path | None:
    """Write OUT/report.html: the RAG scores against the human labels, by reaction, compared with the log
    whose contexts are shifted; print where. Without the ``report`` extra, say how to get it; None."""
    from ragframe import evaluate
    from ragframe.exceptions import MissingDependencyError

    try:
        from ragframe.reporting import report

        broken = evaluate(pl.read_parquet(wrong_contexts_path), list(_DEMO_LABELS))
        path = report(
            scored,
            out_dir / "report.html",
            compare=broken,
            on="id",
            by="reaction",
            labels=_DEMO_LABELS,
            title="ragframe demo: the ARES RAG log (200 answers), compared with its wrong-contexts copy",
            label="ARES log",
            compare_label="wrong contexts",
        )
    except MissingDependencyError as exc:
        print(f"\nno HTML report: {exc}")
        return None
    print(f"\nHTML report (summary, plots, agreement with the labels, the comparison with {wrong_contexts_path.name},")
    print(f"worst rows with their signals): {path}")
    return path


#: Columns of the demo's ranking report: the curves need a measure at several cutoffs.
DEMO_RANKING_REPORT_COLUMNS = [f"{m}_at_{k}" for m in ("ndcg", "recall") for k in (1, 5, 10, 100)]


def _demo_ranking_report(frames: list[pl.DataFrame], names: list[str], out_dir: Path) -> Path:
    """Write OUT/ranking_report.html: the per-query scores of the first run, compared with the second's."""
    from ragframe.reporting import report

    columns = ["query_id", *DEMO_RANKING_REPORT_COLUMNS, "mrr", "average_precision"]
    first, second = (frame.select(columns) for frame in frames)
    path = report(
        first,
        out_dir / "ranking_report.html",
        compare=second,
        on="query_id",
        title=f"ragframe demo: TREC DL 2019, {names[0]} (a) compared with {names[1]} (b), 43 judged queries",
        label=names[0],
        compare_label=names[1],
    )
    print(f"HTML report of the two runs (ranking curves, the comparison, the worst queries): {path}")
    return path


def _agreement_table(scored: pl.DataFrame, seed: pl.DataFrame) -> pl.DataFrame:
    """One row per (metric, label) of ``_DEMO_LABELS``: AUROC and passes of both methods."""
    tables = {
        "ragframe": agreement_with_labels(scored, label_columns=_DEMO_LABELS, n_resamples=DEMO_RESAMPLES),
        SEED: agreement_with_labels(
            seed,
            label_columns=_DEMO_LABELS,
            n_resamples=DEMO_RESAMPLES,
            thresholds={metric: SEED_THRESHOLDS[metric] for metric in _DEMO_LABELS},
        ),
    }
    # five report lines, not a hot path
    auroc = {
        name: [f"{r['auroc']:.3f} [{r['auroc_low']:.3f}, {r['auroc_high']:.3f}]" for r in table.iter_rows(named=True)]
        for name, table in tables.items()
    }
    new = tables["ragframe"]
    return pl.DataFrame(
        {
            "metric": new["metric"],
            "human label": new["label"],
            "good": new["positives"],
            "ragframe": auroc["ragframe"],
            SEED: auroc[SEED],
            "passes": [int(scored[f"{metric}_passed"].sum()) for metric in _DEMO_LABELS],
            "seed passes": [int(seed[f"{metric}_passed"].sum()) for metric in _DEMO_LABELS],
        }
    )


_DEMO_DESCRIPTION = """\
Score the bundled TREC DL 2019 passage-ranking example: a BM25 run and a GPT-3.5
listwise rerank of it, 43 judged queries (see ragframe/data/README.md). Prints the
ranking measures of both runs, a paired comparison of the runs (mean difference,
its 95% interval, t-test p-values), and a summary of the per-query scores; writes
the per-query scores to OUT/per_query.parquet. Then scores the bundled ARES RAG log
(200 answers with human labels) with the heuristic metrics, prints their summary
and how well each agrees with the human labels (ROC AUC, with ragframe's default
methods next to rag-eval-node-ts's), then the rate of faithful answers estimated
from 50 of the 200 labels (a seeded random sample; the other 150 hidden):
ragframe.estimate's PPI++ rate and 95% interval (the heuristic on every row plus
the 50 labels) next to the classical one from the same 50 labels alone and the
truth from all 200. Writes OUT/rag_scores.parquet.

OUT also receives the inputs, read from there: run.bm25.txt, run.rerank-gpt35.txt,
qrels.txt, rag_log.parquet (copies of the bundled files), and
rag_log.wrong_contexts.parquet (the log with each row given the previous row's
contexts: a simulated retrieval bug, to try 'ragframe eval', 'compare' and 'gate').

Last, it writes OUT/report.html (ragframe report): the RAG log's scores with their
summary, histograms, a slice per user reaction, agreement with the human labels,
the comparison with the wrong-contexts log, and the worst answers with their
signals; and OUT/ranking_report.html: the per-query scores of BM25 compared with
the rerank, with nDCG and recall curves over k. Without the 'report' extra
(pip install 'ragframe[report]') it says so and skips them."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe demo`` to the subcommands ``sub``."""
    demo = sub.add_parser(
        "demo",
        help="score the bundled examples, print tables, write an HTML report",
        description=_DEMO_DESCRIPTION,
        epilog=epilog(EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "--out",
        default="ragframe-demo",
        help="folder for the inputs, the per-query scores and the per-answer scores (default: %(default)s)",
    )
    demo.set_defaults(handler=run)
