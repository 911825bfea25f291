"""``ragframe summary``: :func:`ragframe.summarize` of a scored frame, printed as a table, CSV, JSON or Markdown."""

from __future__ import annotations

import argparse

from ragframe.cli.args import (
    EXIT_CODES,
    SCORES_HELP,
    add_format_argument,
    add_metrics_argument,
    epilog,
    non_negative_int,
    positive_int,
    probability,
)
from ragframe.cli.format import format_frame
from ragframe.cli.inputs import read_argument
from ragframe.kernels.quantiles import QUANTILE_METHODS
from ragframe.stats.summary import summarize

__all__ = ["add_parser", "run"]

_SUMMARY_DESCRIPTION = """\
Summarize the score columns of a scored frame with ragframe.summarize: per metric
(and per group with --by) count, null_count, null_rate, mean, gm (trec_eval's
geometric mean, for average_precision and bpref), std (ddof=1),
std_pop (ddof=0), min, p50, p90, p95, p99, max, pass_rate (when a <metric>_passed
column exists) and ci_low, ci_high (an interval of the mean)."""


def run(args: argparse.Namespace) -> int:
    """Print :func:`ragframe.summarize` of SCORES; 0."""
    scores = read_argument(args.scores, "scores")
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


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe summary`` to the subcommands ``sub``."""
    summary = sub.add_parser(
        "summary",
        help="summarize the score columns of a scored frame",
        description=_SUMMARY_DESCRIPTION,
        epilog=epilog(SCORES_HELP, EXIT_CODES),
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
    add_metrics_argument(summary, "every ragframe score column")
    add_format_argument(summary)
    summary.add_argument(
        "--ci",
        choices=("t", "bootstrap"),
        default="t",
        help="interval of the mean: Student t, or the percentile bootstrap (default: %(default)s)",
    )
    summary.add_argument(
        "--confidence",
        type=probability,
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
        type=positive_int,
        default=2000,
        metavar="N",
        help="resamples of --ci bootstrap (default: %(default)s)",
    )
    summary.add_argument(
        "--seed", type=non_negative_int, default=0, metavar="N", help="seed of --ci bootstrap (default: %(default)s)"
    )
    summary.set_defaults(handler=run)
