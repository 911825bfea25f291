"""The ``ragframe`` command line.

Commands
--------
eval
    :func:`ragframe.evaluate_parquet`: score Parquet logs in batches into a Parquet
    dataset with rejects and a summary; resumable.
demo
    Score the bundled TREC DL 2019 example (BM25 and a GPT-3.5 rerank of it): a table
    of ranking metrics, a paired comparison of the two runs with p-values, and a
    summary of the per-query scores.
trec
    trec_eval-compatible scoring of a TREC run file against a qrels file, printed
    in trec_eval's layout (see :mod:`ragframe.io.trec_eval_format`).
summary
    :func:`ragframe.summarize` of a scored frame (Parquet file, folder or glob; CSV or
    JSON file), as a table, CSV, JSON or Markdown.
compare
    :func:`ragframe.stats.compare` of two scored frames: paired tests per metric.
gate
    A CI check: fails (exit code 1) when a metric regressed against a baseline (larger
    than a threshold and significant, see :func:`ragframe.stats.regressions`) or when a
    metric's mean is below a floor.

Exit codes: 0 ok, 1 gate failed, 2 usage error, 3 input error (a missing or unreadable
file, or a frame without the columns the command needs).
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.cli.format import FORMATS, format_frame
from ragframe.datasets import example_paths
from ragframe.exceptions import RagframeError
from ragframe.io.streaming import DEFAULT_BATCH_ROWS, DEFAULT_BATCHES_PER_PROCESS
from ragframe.io.trec import read_qrels, read_trec_run
from ragframe.io.trec_eval_format import (
    DEFAULT_CUTOFFS,
    NICKNAMES,
    SUPPORTED_MEASURES,
    UnsupportedMeasureError,
    evaluate_run_options,
    format_trec_eval,
    parse_measures,
)
from ragframe.kernels.quantiles import QUANTILE_METHODS
from ragframe.metrics.retrieval import evaluate_run, run_summary
from ragframe.stats.compare import TESTS, compare, compare_runs
from ragframe.stats.regressions import regressions
from ragframe.stats.summary import summarize

__all__ = ["main", "build_parser"]

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


EXIT_CODES = (
    "exit codes: 0 ok, 2 usage error (bad flag or value), 3 input error (missing or unreadable file, "
    "or a frame without the columns needed)."
)
GATE_EXIT_CODES = (
    "exit codes: 0 every check passed, 1 the gate failed (a regression or a value below a floor), "
    "2 usage error (bad flag or value, unknown metric in --min), 3 input error (missing or unreadable file, "
    "or a frame without the columns needed)."
)
SCORES_HELP = (
    "scored frames: a Parquet file, a folder (every *.parquet file under it, recursively), a glob "
    "('runs/*.parquet'; quote it), or a URL polars can scan; also a .csv file or a .json file holding a list of "
    "records. Score columns are the ones ragframe writes (ndcg_at_10, mrr, faithfulness, composite_score, ...) "
    "unless --metrics names others."
)
_CORRECTION_CHOICES = ("holm", "bonferroni", "fdr_bh", "none")


class _UsageError(Exception):
    """A command line that parses but cannot run (exit code 2)."""


def _epilog(*paragraphs: str) -> str:
    return "\n\n".join(textwrap.fill(p, width=79, break_on_hyphens=False) for p in paragraphs)


def _format_table(rows: list[tuple[str, list[str]]], header: list[str]) -> str:
    # report formatting over a few dozen summary lines, not a per-row hot path
    widths = [max(len(header[i]), *(len(r[1][i - 1]) if i else len(r[0]) for r in rows)) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for name, values in rows:
        cells = [name.ljust(widths[0])] + [v.rjust(w) for v, w in zip(values, widths[1:])]
        lines.append("  ".join(cells))
    return "\n".join(lines)


#: Measures of the demo's paired comparison and per-query summary (cutoff 10 for the _at_k ones).
DEMO_COMPARE_MEASURES = ["ndcg_at_k", "precision_at_k", "recall_at_k", "mrr", "average_precision"]
DEMO_SUMMARY_COLUMNS = ["ndcg_at_10", "mrr", "average_precision", "recall_at_100"]


def _demo(args: argparse.Namespace) -> int:
    paths = example_paths()
    qrels = read_qrels(paths["qrels"])
    runs = {name: read_trec_run(paths[name]) for name in ("bm25", "bm25+gpt3.5-rerank")}
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
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
    rows = []
    for column in columns:
        values = [summaries[n][column].item() for n in names]
        cells = [f"{v:d}" if isinstance(v, int) else f"{v:.4f}" for v in values]
        rows.append((column, cells))
    print("ragframe demo: TREC DL 2019 passage ranking, 43 judged queries (bundled example)")
    print("graded qrels 0-3; relevant means grade >= 1; nDCG uses the grades as gains\n")
    print(_format_table(rows, ["measure", *names]))

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
    rag_path = _demo_heuristics(out_dir)
    print(f"\nper-query ranking scores ({scores.height} rows) written to {per_query_path.resolve()}")
    print(f"per-answer heuristic scores (200 rows) written to {rag_path.resolve()}")
    return 0


_DEMO_LABELS = {
    "faithfulness": "human_faithfulness",
    "hallucination_rate": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_precision": "human_context_relevance",
    "context_relevance": "human_context_relevance",
}


def _demo_heuristics(out_dir: Path) -> Path:
    """Score the bundled ARES log with the heuristic metrics; print the summary and the AUC per human label."""
    from sklearn.metrics import roc_auc_score

    from ragframe.datasets import example_rag_log
    from ragframe.metrics.heuristic import evaluate

    log = pl.read_parquet(example_rag_log())
    scored = evaluate(log, list(_DEMO_LABELS))
    path = out_dir / "rag_scores.parquet"
    scored.drop("question", "answer", "contexts").write_parquet(path)
    print("\nheuristic RAG metrics on the bundled ARES log: 200 answers of a documentation assistant")
    print("with human labels (rf.evaluate, then rf.summarize; no reference answers, so five metrics)\n")
    summary = summarize(scored)
    print(format_frame(summary.select("metric", "count", "mean", "std", "p50", "pass_rate", "ci_low", "ci_high")))
    rows = []
    for metric, label in _DEMO_LABELS.items():  # five metrics: report lines, not a hot path
        frame = scored.select(metric, label).drop_nulls()
        labels = frame[label].to_numpy()
        means = frame.group_by(label).agg(pl.col(metric).mean()).sort(label)[metric].to_list()
        rows.append(
            {
                "metric": metric,
                "human label": label,
                "mean if 0": means[0],
                "mean if 1": means[-1],
                "roc_auc": float(roc_auc_score(labels, frame[metric].to_numpy())),
            }
        )
    print("\nhow well each metric separates the human labels (ROC AUC 0.5 = chance)\n")
    print(format_frame(pl.DataFrame(rows)))
    return path


_DEMO_DESCRIPTION = """\
Score the bundled TREC DL 2019 passage-ranking example: a BM25 run and a GPT-3.5
listwise rerank of it, 43 judged queries (see ragframe/data/README.md). Prints the
ranking measures of both runs, a paired comparison of the runs (mean difference,
its 95% interval, t-test p-values), and a summary of the per-query scores; writes
the per-query scores to OUT/per_query.parquet. Then scores the bundled ARES RAG log
(200 answers with human labels) with the heuristic metrics, prints their summary
and how well each separates the human labels, and writes OUT/rag_scores.parquet."""


def _add_demo_parser(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser(
        "demo",
        help="score the bundled TREC DL 2019 example and print tables",
        description=_DEMO_DESCRIPTION,
        epilog=_epilog(EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--out", default="ragframe-demo", help="folder for the per-query scores (default: %(default)s)")
    demo.set_defaults(handler=_demo)


# ----------------------------------------------------------------------------- trec

_TREC_DESCRIPTION = """\
Score a TREC run against qrels and print trec_eval's output: lines
'measure<TAB>query<TAB>value' (measure padded to 22 characters, 4 decimals,
counts as integers), per-query lines (-q) first, then the 'all' lines.
Values equal trec_eval 10.0's for every measure listed below.

Note the argument order: RUN then QRELS (trec_eval takes QRELS then RUN)."""


def _trec_epilog() -> str:
    cut = ", ".join(f"{m} ({','.join(map(str, DEFAULT_CUTOFFS[m]))})" for m in DEFAULT_CUTOFFS)
    plain = ", ".join(m for m in SUPPORTED_MEASURES if m not in DEFAULT_CUTOFFS)
    paragraphs = [
        f"supported measures (trec_eval names): {plain}; with cutoffs (default cutoffs): {cut}.",
        f"nicknames: {', '.join(NICKNAMES)} (the supported part of trec_eval's sets).",
        "Other trec_eval measures (bpref, gm_map, iprec_at_recall, map_cut, ndcg with a gain map, ...) "
        "are rejected with exit code 2. trec_eval's -n, -J, -N, -R, -T, -Z are not available.",
        "exit codes: 0 ok, 2 usage error or unsupported measure, 3 missing or unreadable input, "
        "or no query with both results and judgments.",
    ]
    return "\n".join(textwrap.fill(p, width=79, break_on_hyphens=False) for p in paragraphs)


def _trec_measure(value: str) -> str:
    try:
        parse_measures([value])
    except UnsupportedMeasureError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, found {value!r}")
    return number


def _read_input(reader: Callable[[Path], pl.DataFrame], path: str, role: str) -> pl.DataFrame:
    """Read a run or qrels file; errors become a RagframeError naming the file (exit 3)."""
    p = Path(path)
    if not p.exists():
        raise RagframeError(f"{role} file not found: {path!r}")
    if p.is_dir():
        raise RagframeError(f"{role} file {path!r} is a directory")
    try:
        return reader(p)
    except RagframeError as exc:
        hint = ""
        if role == "run" and "malformed line" in str(exc):  # a qrels file has 4 fields: arguments swapped?
            hint = " (note: ragframe trec takes RUN then QRELS; trec_eval takes QRELS then RUN)"
        raise RagframeError(f"cannot read {role} file {path!r}: {exc}{hint}") from exc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise RagframeError(f"cannot read {role} file {path!r}: {exc}") from exc


def _trec(args: argparse.Namespace) -> int:
    measures = parse_measures(args.measures)
    run = _read_input(read_trec_run, args.run, "run")
    qrels = _read_input(read_qrels, args.qrels, "qrels")
    per_query = evaluate_run(
        run,
        qrels,
        complete=args.complete,
        max_docs=args.max_docs,
        relevance_level=args.relevance_level,
        **evaluate_run_options(measures),
    )
    # trec_eval evaluates only queries with judgments (with -c, every judged query)
    per_query = per_query.filter(pl.col("query_id").is_in(qrels.get_column("query_id").unique().implode()))
    if per_query.height == 0:
        raise RagframeError(f"no queries with both results and relevance info (run {args.run!r}, qrels {args.qrels!r})")
    runid = run.get_column("tag")[-1] if run.height else ""
    text = format_trec_eval(per_query, run_summary(per_query), measures, runid=runid, query_lines=args.query)
    sys.stdout.write(text)
    return 0


def _add_trec_parser(sub: argparse._SubParsersAction) -> None:
    trec = sub.add_parser(
        "trec",
        help="trec_eval-compatible scoring of a TREC run file",
        description=_TREC_DESCRIPTION,
        epilog=_trec_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    trec.add_argument("run", metavar="RUN", help="TREC run file: 'qid Q0 docno rank score tag' lines (or .gz)")
    trec.add_argument("qrels", metavar="QRELS", help="TREC qrels file: 'qid iter docno rel' lines (or .gz)")
    trec.add_argument(
        "-m",
        "--measure",
        dest="measures",
        action="append",
        type=_trec_measure,
        metavar="MEASURE",
        help="measure to print, trec_eval spelling: map, P, P.5,10 (or P_5), ndcg_cut.10, official, all_trec ...; "
        "repeatable; printed in trec_eval's order (default: official)",
    )
    trec.add_argument(
        "-q",
        "--query_eval_wanted",
        dest="query",
        action="store_true",
        help="also print each query's values, before the 'all' lines",
    )
    trec.add_argument(
        "-c",
        "--complete_rel_info_wanted",
        dest="complete",
        action="store_true",
        help="average over every query in QRELS; queries missing from RUN score 0",
    )
    trec.add_argument(
        "-M",
        "--Max_retrieved_per_topic",
        dest="max_docs",
        type=_positive_int,
        metavar="N",
        help="keep at most N documents per query, after ranking by score (default: all)",
    )
    trec.add_argument(
        "-l",
        "--level_for_rel",
        dest="relevance_level",
        type=int,
        default=1,
        metavar="N",
        help="minimum judgement value of a relevant document (default: %(default)s)",
    )
    trec.set_defaults(handler=_trec)


# ----------------------------------------------------------------------------- shared by summary, compare, gate


def _probability(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not 0.0 < number < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (exclusive), found {value!r}")
    return number


def _non_negative_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not number >= 0.0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected a number >= 0, found {value!r}")
    return number


def _non_negative_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, found {value!r}")
    return number


def _floor(value: str) -> tuple[str, float]:
    metric, sep, number = value.partition("=")
    try:
        floor = float(number)
    except ValueError:
        floor = float("nan")
    if not sep or not metric.strip() or floor != floor:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE (for example faithfulness=0.7), found {value!r}")
    return metric.strip(), floor


def _read_scores(path: str, role: str) -> pl.DataFrame:
    """Read a scored frame: Parquet file, folder, glob or URL; a .csv or .json file. Errors name the path (exit 3)."""
    local = Path(path)
    is_url = "://" in path
    try:
        if not is_url and local.exists():
            suffix = local.suffix.lower()
            if local.is_dir():
                if next(local.rglob("*.parquet"), None) is None:
                    raise RagframeError(f"no Parquet file in {role} folder {path!r}")
                return pl.scan_parquet(str(local / "**" / "*.parquet")).collect()
            if suffix == ".csv":
                return pl.read_csv(local, infer_schema_length=10_000)
            if suffix == ".json":
                return pl.read_json(local)
            return pl.scan_parquet(local, glob=False).collect()
        if not is_url:
            if not any(c in path for c in "*?["):
                raise RagframeError(f"{role} file not found: {path!r}")
            if not glob.glob(path, recursive=True):
                raise RagframeError(f"no file matches the {role} glob {path!r}")
        return pl.scan_parquet(path).collect()
    except RagframeError:
        raise
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise RagframeError(f"cannot read {role} {path!r}: {exc}") from exc


def _correction(value: str) -> str | None:
    return None if value == "none" else value


def _add_format_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="output: 'table' (aligned columns, floats with 4 decimals, nulls as '-'), 'csv' and 'json' (a list "
        "of records; both with full precision, nulls empty / null), 'markdown' (a pipe table, 4 decimals) "
        "(default: %(default)s)",
    )


def _add_metrics_argument(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--metrics",
        nargs="+",
        action="extend",
        metavar="METRIC",
        help=f"score columns to use, one or more (default: {default})",
    )


def _add_test_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--on",
        nargs="+",
        action="extend",
        metavar="COL",
        help="sample id column(s) that pair the rows of the two frames; unique and non-null (default: id)",
    )
    parser.add_argument(
        "--test",
        choices=TESTS,
        default="t",
        help="paired test: 't' (Student t on the differences), 'wilcoxon' (signed-rank), 'permutation' "
        "(sign-flip test of the mean difference), 'bootstrap' (percentile bootstrap of the mean difference) "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--alpha",
        type=_probability,
        default=0.05,
        help="significance level of the adjusted p-values; the interval of the difference covers 1 - alpha "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--correction",
        choices=_CORRECTION_CHOICES,
        default="holm",
        help="multiple-testing correction over every metric (and slice) of the run (default: %(default)s)",
    )
    parser.add_argument(
        "--how",
        choices=("error", "inner"),
        default="error",
        help="ids present in one frame only: 'error' stops with exit code 3 and names some of them, 'inner' "
        "leaves them out (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="random seed of the permutation and bootstrap tests (default: %(default)s)",
    )
    parser.add_argument(
        "--n-resamples",
        type=_positive_int,
        default=9999,
        metavar="N",
        help="resamples of the permutation and bootstrap tests; the permutation test is exact when "
        "2^pairs <= N (default: %(default)s)",
    )


def _test_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "on": args.on or "id",
        "test": args.test,
        "alpha": args.alpha,
        "correction": _correction(args.correction),
        "how": args.how,
        "n_resamples": args.n_resamples,
        "seed": args.seed,
    }


# ----------------------------------------------------------------------------- summary

_SUMMARY_DESCRIPTION = """\
Summarize the score columns of a scored frame with ragframe.summarize: per metric
(and per group with --by) count, null_count, null_rate, mean, std (ddof=1),
std_pop (ddof=0), min, p50, p90, p95, p99, max, pass_rate (when a <metric>_passed
column exists) and ci_low, ci_high (an interval of the mean)."""


def _summary(args: argparse.Namespace) -> int:
    scores = _read_scores(args.scores, "scores")
    table = summarize(
        scores,
        metrics=args.metrics,
        by=args.by,
        ci=args.ci,
        percentile_method=args.percentile_method,
        confidence=args.confidence,
        n_resamples=args.n_resamples,
        seed=args.seed,
    )
    print(format_frame(table, args.format))
    return 0


def _add_summary_parser(sub: argparse._SubParsersAction) -> None:
    summary = sub.add_parser(
        "summary",
        help="summarize the score columns of a scored frame",
        description=_SUMMARY_DESCRIPTION,
        epilog=_epilog(SCORES_HELP, EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    summary.add_argument("scores", metavar="SCORES", help="the scored frame (Parquet file, folder, glob; .csv, .json)")
    summary.add_argument(
        "--by",
        nargs="+",
        action="extend",
        metavar="COL",
        help="group columns: one row per metric per group, groups sorted (default: no groups)",
    )
    _add_metrics_argument(summary, "every ragframe score column")
    _add_format_argument(summary)
    summary.add_argument(
        "--ci",
        choices=("t", "bootstrap"),
        default="t",
        help="interval of the mean: Student t, or the percentile bootstrap (default: %(default)s)",
    )
    summary.add_argument(
        "--confidence",
        type=_probability,
        default=0.95,
        help="coverage of the interval of the mean (default: %(default)s)",
    )
    summary.add_argument(
        "--percentile-method",
        choices=QUANTILE_METHODS,
        default="linear",
        metavar="M",
        help="numpy's quantile method for p50-p99, one of: " + ", ".join(QUANTILE_METHODS) + " (default: %(default)s)",
    )
    summary.add_argument(
        "--n-resamples",
        type=_positive_int,
        default=2000,
        metavar="N",
        help="resamples of --ci bootstrap (default: %(default)s)",
    )
    summary.add_argument(
        "--seed", type=_non_negative_int, default=0, metavar="N", help="seed of --ci bootstrap (default: %(default)s)"
    )
    summary.set_defaults(handler=_summary)


# ----------------------------------------------------------------------------- compare

_COMPARE_DESCRIPTION = """\
Paired comparison of two scored frames with ragframe.stats.compare: is B different
from A? Rows are paired on --on; per metric (and per slice with --by): n (pairs
with both scores), mean_a, mean_b, delta (= mean_b - mean_a), ci_low, ci_high (of
the mean difference), statistic, p_value, p_adjusted, significant (p_adjusted <
alpha), winner (a, b or tie; higher is better), effect_size (Cohen's d_z), test."""


def _compare(args: argparse.Namespace) -> int:
    a = _read_scores(args.a, "A")
    b = _read_scores(args.b, "B")
    table = compare(a, b, metrics=args.metrics, by=args.by, **_test_options(args))
    print(format_frame(table, args.format))
    return 0


def _add_compare_parser(sub: argparse._SubParsersAction) -> None:
    cmp = sub.add_parser(
        "compare",
        help="paired tests of two scored frames, per metric",
        description=_COMPARE_DESCRIPTION,
        epilog=_epilog(SCORES_HELP.replace("scored frames:", "A and B:"), EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmp.add_argument(
        "a", metavar="A", help="scores of system A, the reference (Parquet file, folder, glob; .csv, .json)"
    )
    cmp.add_argument("b", metavar="B", help="scores of system B on the same samples")
    _add_metrics_argument(cmp, "every ragframe score column present in both")
    cmp.add_argument(
        "--by", nargs="+", action="extend", metavar="COL", help="slice columns, taken from A (default: no slices)"
    )
    _add_test_arguments(cmp)
    _add_format_argument(cmp)
    cmp.set_defaults(handler=_compare)


# ----------------------------------------------------------------------------- gate

_GATE_DESCRIPTION = """\
A CI check of SCORES against a baseline. It fails (exit code 1) when

  * a metric regressed: its mean dropped by more than --threshold from BASELINE
    to SCORES and the drop is significant (paired --test on the rows matched by
    --on, p-values adjusted with --correction over the metrics, below --alpha);
    with --no-significance the drop alone fails;
  * a metric's mean in SCORES is below a floor given with --min METRIC=VALUE.

SCORES and BASELINE are per-row scored frames with ids, or summaries (columns
'metric' and 'mean', as 'ragframe summary --format csv|json' writes). When either
is a summary, the other is summarized and only the drop of the means is checked
(no test: --no-significance is implied). Metrics checked for regressions: --metrics,
or every ragframe score column in both. Floors use the mean over the non-null
values of SCORES; a floor on a metric without a value fails."""


def _is_summary(df: pl.DataFrame) -> bool:
    return "metric" in df.columns and "mean" in df.columns


def _as_summary(df: pl.DataFrame, metrics: Sequence[str] | None, path: str) -> pl.DataFrame:
    """A one-row-per-metric summary: ``df`` itself when it is one, else ``summarize(df)``."""
    if not _is_summary(df):
        return summarize(df, metrics=metrics)
    duplicated = df.filter(pl.col("metric").is_duplicated())["metric"].unique(maintain_order=True).to_list()
    if duplicated:
        raise RagframeError(
            f"summary {path!r} has several rows for metric(s) {duplicated} (a summary grouped with --by?); "
            "gate needs one row per metric"
        )
    if metrics is not None:
        missing = [m for m in metrics if m not in df["metric"].to_list()]
        if missing:
            raise RagframeError(f"summary {path!r} has no row for metric(s) {missing}; it has {df['metric'].to_list()}")
    return df


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _p_text(value: float | None) -> str:
    return "<0.0001" if value is not None and 0.0 < value < 0.00005 else _number(value)


def _gate_checks(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]]]:
    """Run the checks; return the mode ('paired' or 'summary') and one record per check."""
    floors: dict[str, float] = {}
    for metric, value in args.min or []:
        if metric in floors:
            raise _UsageError(f"--min {metric} given twice")
        floors[metric] = value
    current = _read_scores(args.scores, "scores")
    baseline = _read_scores(args.baseline, "baseline")
    current_summary = _as_summary(current, args.metrics, args.scores)
    available = current_summary["metric"].to_list()
    unknown = [m for m in floors if m not in available]
    if unknown:
        raise _UsageError(f"--min names unknown metric(s) {unknown}; available metrics: {available}")

    paired = not _is_summary(current) and not _is_summary(baseline)
    if paired:
        options = _test_options(args)
        found = regressions(baseline, current, threshold=args.threshold, metrics=args.metrics, **options)
        fails = "exceeds_threshold" if args.no_significance else "regressed"
    else:
        base_summary = _as_summary(baseline, args.metrics, args.baseline)
        found = regressions(base_summary, current_summary, threshold=args.threshold, metrics=args.metrics)
        fails = "regressed"
        if found.height == 0:
            raise RagframeError(
                f"no metric in both baseline {args.baseline!r} ({base_summary['metric'].to_list()}) "
                f"and scores {args.scores!r} ({available})"
            )
    checks: list[dict[str, Any]] = []
    for row in found.iter_rows(named=True):  # one row per metric compared: reporting, not a hot path
        check = {"check": "regression", "metric": row["metric"], "passed": not row[fails]}
        check.update({k: row[k] for k in ("baseline", "current", "delta")})
        check["threshold"] = args.threshold
        check["exceeds_threshold"] = row.get("exceeds_threshold", row["regressed"])
        if paired:
            check.update({k: row[k] for k in ("n", "p_value", "p_adjusted", "significant")})
        checks.append(check)
    means = dict(zip(current_summary["metric"].to_list(), current_summary["mean"].cast(pl.Float64).to_list()))
    for metric, floor in floors.items():
        mean = means[metric]
        checks.append(
            {
                "check": "floor",
                "metric": metric,
                "passed": mean is not None and mean >= floor,
                "mean": mean,
                "floor": floor,
            }
        )
    return ("paired" if paired else "summary"), checks


def _check_text(check: dict[str, Any], args: argparse.Namespace, mode: str) -> str:
    """The numbers of one check, for people."""
    if check["check"] == "floor":
        mean, floor = check["mean"], check["floor"]
        if mean is None:
            return f"mean n/a (no non-null value) < floor {floor:.4f}"
        return f"mean {mean:.4f} {'>=' if check['passed'] else '<'} floor {floor:.4f}"
    delta = check["delta"]
    text = f"baseline {_number(check['baseline'])} -> current {_number(check['current'])}, delta "
    text += "n/a" if delta is None else f"{delta:+.4f}"
    if mode == "paired":
        text += f", n {check['n']}, p_adjusted {_p_text(check['p_adjusted'])}"
    if check["exceeds_threshold"]:
        text += f" (drop > {args.threshold:.4f}"
        if mode == "paired" and not args.no_significance:
            text += ", significant" if check["significant"] else ", not significant"
        text += ")"
    return text


def _github_escape(message: str) -> str:
    return message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gate(args: argparse.Namespace) -> int:
    mode, checks = _gate_checks(args)
    failed = [c for c in checks if not c["passed"]]
    verdict = (
        f"gate passed: all {len(checks)} checks passed"
        if not failed
        else f"gate failed: {len(failed)} of {len(checks)} checks failed"
    )
    if args.format == "json":
        print(json.dumps({"passed": not failed, "mode": mode, "checks": checks}, indent=2))
    elif args.format == "github":
        for check in failed:
            what = "regressed: " if check["check"] == "regression" else ""
            message = f"{check['metric']} {what}{_check_text(check, args, mode)}"
            print(f"::error title=ragframe gate::{_github_escape(message)}")
        if not failed:
            print(f"::notice title=ragframe gate::{_github_escape(verdict)}")
    else:
        if mode == "paired":
            rule = (
                f"paired {args.test} test, {args.correction} correction, alpha {args.alpha}; a drop of the mean "
                f"by more than {args.threshold} {'fails' if args.no_significance else 'that is significant fails'}"
            )
        else:
            rule = f"summaries, no test; a drop of the mean by more than {args.threshold} fails"
        print(f"ragframe gate: {args.scores} against baseline {args.baseline} ({rule})")
        width = max((len(c["metric"]) for c in checks), default=0)
        for check in checks:
            status = "PASS" if check["passed"] else "FAIL"
            print(f"{status}  {check['check']:<10}  {check['metric']:<{width}}  {_check_text(check, args, mode)}")
        print(verdict)
    return 1 if failed else 0


def _add_gate_parser(sub: argparse._SubParsersAction) -> None:
    gate = sub.add_parser(
        "gate",
        help="fail (exit code 1) on a regression against a baseline or a mean below a floor",
        description=_GATE_DESCRIPTION,
        epilog=_epilog(SCORES_HELP.replace("scored frames:", "SCORES and BASELINE:"), GATE_EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gate.add_argument(
        "scores", metavar="SCORES", help="current scores or summary (Parquet file, folder, glob; .csv, .json)"
    )
    gate.add_argument(
        "--baseline", required=True, metavar="BASELINE", help="baseline scores or summary to compare with (required)"
    )
    gate.add_argument(
        "--threshold",
        type=_non_negative_float,
        default=0.05,
        help="a drop of a metric's mean by more than this is a regression (default: %(default)s)",
    )
    gate.add_argument(
        "--min",
        nargs="+",
        action="extend",
        type=_floor,
        metavar="METRIC=VALUE",
        help="floor: fail when the mean of METRIC in SCORES is below VALUE; one or more, repeatable; an unknown "
        "metric is a usage error (default: no floors)",
    )
    _add_metrics_argument(gate, "every ragframe score column in both; also the metrics --min may name")
    gate.add_argument(
        "--no-significance",
        action="store_true",
        help="fail on any drop larger than --threshold, significant or not",
    )
    _add_test_arguments(gate)
    gate.add_argument(
        "--format",
        choices=("text", "github", "json"),
        default="text",
        help="'text': one PASS/FAIL line per check and a verdict; 'github': GitHub Actions workflow commands, "
        "'::error' per failed check or one '::notice' when all pass; 'json': {passed, mode, checks} "
        "(default: %(default)s)",
    )
    gate.set_defaults(handler=_gate)


# ----------------------------------------------------------------------------- eval

_EVAL_DESCRIPTION = """\
Score Parquet logs with ragframe.evaluate_parquet: every batch of --batch-rows
rows is scored with the in-memory kernels and written to OUT/scores/ as one
Parquet part; rows that break the column contract go to OUT/rejects/ with the
reason and their row number; OUT/summary.parquet summarizes every score column.
A killed run restarted with the same arguments continues where it stopped.
Metrics: the heuristic metric names (faithfulness, answer_relevance,
context_precision, context_recall, context_relevance, answer_correctness,
hallucination_rate) and 'retrieval' (ranking metrics at --k); by default every
metric whose input columns the log has."""

_CONFIG_HELP = (
    "A TOML config may set: metrics (list), k (list), batch_rows, batches_per_process, keep (list), a [columns] "
    "table mapping "
    "ragframe's roles (question, answer, contexts, ground_truth, retrieved_ids, relevant_ids, retrieved_scores, "
    "relevance) to the log's column names, [thresholds] and [weights] tables keyed by metric, composite_threshold, "
    "ngram_sizes, ngram_weights, claim_support_threshold, chunk_relevance_threshold and relevance_level. "
    "Flags given on the command line override the config."
)
_CONFIG_KEYS = {
    "metrics",
    "k",
    "batch_rows",
    "batches_per_process",
    "keep",
    "columns",
    "thresholds",
    "weights",
    "composite_threshold",
    "ngram_sizes",
    "ngram_weights",
    "claim_support_threshold",
    "chunk_relevance_threshold",
    "relevance_level",
}


def _load_config(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError as exc:
            from ragframe.exceptions import MissingDependencyError

            raise MissingDependencyError(
                "reading a TOML config on Python 3.10 needs: pip install 'ragframe[cli]'"
            ) from exc
    try:
        with open(path, "rb") as handle:
            config = tomllib.load(handle)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"config file {path!r} not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise _UsageError(f"config file {path!r} is not valid TOML: {exc}") from exc
    unknown = sorted(set(config) - _CONFIG_KEYS)
    if unknown:
        raise _UsageError(f"config file {path!r}: unknown key {unknown[0]!r}; known keys: {sorted(_CONFIG_KEYS)}")
    return config


def _mapping(value: str) -> tuple[str, str]:
    role, sep, name = value.partition("=")
    if not sep or not role or not name:
        raise argparse.ArgumentTypeError(f"expected ROLE=COLUMN, found {value!r}")
    return role.strip(), name.strip()


def _eval(args: argparse.Namespace) -> int:
    from ragframe.exceptions import InvalidParameterError
    from ragframe.io.streaming import evaluate_parquet

    config = _load_config(args.config)
    columns = dict(config.pop("columns", {}))
    columns.update(dict(args.column or []))
    settings = {
        "metrics": args.metrics if args.metrics is not None else config.pop("metrics", None),
        "k": args.k if args.k is not None else config.pop("k", [1, 5, 10]),
        "batch_rows": args.batch_rows if args.batch_rows is not None else config.pop("batch_rows", DEFAULT_BATCH_ROWS),
        "keep": args.keep if args.keep is not None else config.pop("keep", None),
    }
    for key in ("metrics", "k", "batch_rows", "keep"):
        config.pop(key, None)
    if args.batches_per_process is not None:
        config["batches_per_process"] = args.batches_per_process
    try:
        result = evaluate_parquet(
            args.logs,
            args.out,
            settings["metrics"],
            batch_rows=settings["batch_rows"],
            keep=settings["keep"],
            columns=columns,
            k=settings["k"],
            resume=not args.no_resume,
            overwrite=args.overwrite,
            progress=not args.no_progress,
            **config,
        )
    except InvalidParameterError as exc:
        raise _UsageError(str(exc)) from exc
    if result.summary.height:
        print(format_frame(result.summary, args.format))
    resumed = f", {result.resumed} of {result.batches} batches done by an earlier run" if result.resumed else ""
    print(
        f"\nscored {result.scored:,} of {result.rows:,} rows ({result.rejected:,} rejected) in {result.seconds:.1f} s"
        f"{resumed}; scores in {result.out / 'scores'}, summary in {result.out / 'summary.parquet'}"
        + (f", rejects in {result.out / 'rejects'}" if result.rejected else ""),
        file=sys.stderr if args.format != "table" else sys.stdout,
    )
    return 0


def _add_eval_parser(sub: argparse._SubParsersAction) -> None:
    evaluate = sub.add_parser(
        "eval",
        help="score Parquet logs in batches into a Parquet dataset (resumable)",
        description=_EVAL_DESCRIPTION,
        epilog=_epilog(_CONFIG_HELP, EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    evaluate.add_argument(
        "logs", nargs="+", metavar="LOG", help="Parquet files, folders (searched recursively) or globs"
    )
    evaluate.add_argument("-o", "--out", required=True, metavar="OUT", help="output folder (created)")
    evaluate.add_argument(
        "--metrics", nargs="+", metavar="METRIC", help="metrics to run (default: all the log's columns allow)"
    )
    evaluate.add_argument(
        "--k", nargs="+", type=_positive_int, metavar="K", help="cutoffs of the ranking metrics (1 5 10)"
    )
    evaluate.add_argument("--config", metavar="FILE", help="TOML config (see below)")
    evaluate.add_argument(
        "--column",
        action="append",
        type=_mapping,
        metavar="ROLE=COLUMN",
        help="map a role to the log's column, e.g. --column answer=response (repeatable)",
    )
    evaluate.add_argument(
        "--keep",
        nargs="+",
        metavar="COL",
        help="input columns copied to the output (default: every column that is not a metric input)",
    )
    evaluate.add_argument(
        "--batch-rows", type=_positive_int, metavar="N", help=f"rows per batch and part ({DEFAULT_BATCH_ROWS})"
    )
    evaluate.add_argument(
        "--batches-per-process",
        type=_positive_int,
        metavar="N",
        help=f"a run of more batches scores them in child processes, N batches each, so memory stays at the "
        f"level of N batches ({DEFAULT_BATCHES_PER_PROCESS})",
    )
    evaluate.add_argument("--overwrite", action="store_true", help="replace the output of an earlier run in OUT")
    evaluate.add_argument("--no-resume", action="store_true", help="fail instead of continuing a run found in OUT")
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar (never shown outside a terminal)")
    _add_format_argument(evaluate)
    evaluate.set_defaults(handler=_eval)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ragframe`` command."""
    parser = argparse.ArgumentParser(
        prog="ragframe",
        description="Evaluate RAG systems as tables.",
        epilog="exit codes: 0 ok, 1 gate failed, 2 usage error, 3 input error. 'ragframe COMMAND --help' for more.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_demo_parser(sub)
    _add_eval_parser(sub)
    _add_trec_parser(sub)
    _add_summary_parser(sub)
    _add_compare_parser(sub)
    _add_gate_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ragframe`` command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        return int(args.handler(args))
    except _UsageError as exc:
        print(f"ragframe {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (RagframeError, FileNotFoundError, pl.exceptions.PolarsError) as exc:
        print(f"ragframe: error: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
