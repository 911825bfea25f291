"""``ragframe estimate``: a rate from a few human labels and a score on every row (:func:`ragframe.estimate`)."""

from __future__ import annotations

import argparse

import polars as pl

from ragframe.cli.args import EXIT_CODES, SCORES_HELP, add_format_argument, epilog, probability
from ragframe.cli.format import format_frame
from ragframe.cli.inputs import read_argument
from ragframe.exceptions import SchemaError
from ragframe.stats.estimate import ESTIMATE_METHODS, INTERVALS, estimate

__all__ = ["add_parser", "run", "require_labels"]

_ESTIMATE_DESCRIPTION = """\
Estimate the rate of a human label over every row of SCORES with ragframe.estimate:
rows with a --label value are the labelled set, the others the unlabelled set;
--prediction (a heuristic or judge score, or a _passed flag) must be filled on
every row. Prediction-powered inference corrects the prediction's mean over all
rows by its error measured on the labelled rows. Per slice with --by: estimate,
ci_low, ci_high (of --method, coverage 1 - alpha), n_labeled, n_unlabeled, method,
lambda (the weight of the prediction), the classical estimate and interval from
the labels alone, effective_n and ess_gain (how many labels the classical
interval would need to be as narrow, and the ratio). Valid when the labelled rows
were drawn at random from the rows estimated (docs/statistics.md)."""


def require_labels(scores: pl.DataFrame, label: str) -> None:
    """A :class:`SchemaError` (exit code 3) when ``label`` is missing or null on every row: nothing to estimate from.

    Examples
    --------
    >>> require_labels(pl.DataFrame({"human": [None, None]}), "human")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ragframe.exceptions.SchemaError: estimate: no labelled row: ... [column 'human']; ..., found 2 rows, all null
    """
    if label not in scores.columns:
        return  # rf.estimate names the missing column
    if scores[label].null_count() == scores.height:
        raise SchemaError(
            "no labelled row: the label column is null on every row",
            function="estimate",
            column=label,
            expected="0/1 labels on a random sample of the rows",
            found=f"{scores.height:,} rows, all null",
        )


def run(args: argparse.Namespace) -> int:
    """Print :func:`ragframe.estimate` of SCORES; 0."""
    scores = read_argument(args.scores, "scores")
    require_labels(scores, args.label)
    table = estimate(
        scores,
        prediction=args.prediction,
        label=args.label,
        method=args.method,
        alpha=args.alpha,
        by=args.by,
        interval=args.interval,
        finite_population=args.finite_population,
    )
    print(format_frame(table, args.format))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe estimate`` to the subcommands ``sub``."""
    parser = sub.add_parser(
        "estimate",
        help="a rate from a few human labels and a score on every row (prediction-powered)",
        description=_ESTIMATE_DESCRIPTION,
        epilog=epilog(SCORES_HELP, EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scores", metavar="SCORES", help="the scored frame (Parquet file, folder, glob; .csv, .json)")
    parser.add_argument(
        "--prediction",
        required=True,
        metavar="COL",
        help="the score filled on every row (a heuristic, a judge score, a _passed flag)",
    )
    parser.add_argument(
        "--label",
        required=True,
        metavar="COL",
        help="the human label: any finite number (0/1, Boolean, a grade, a Likert score); null where not labelled",
    )
    parser.add_argument(
        "--by",
        nargs="+",
        action="extend",
        metavar="COL",
        help="slice columns: one row per slice, each estimated from its own rows (default: no slices)",
    )
    parser.add_argument(
        "--method",
        choices=ESTIMATE_METHODS,
        default="ppi++",
        help="'ppi++' (the prediction's weight tuned from the data, never wider than the labels alone), 'ppi' "
        "(full weight) or 'classical' (the labels alone) (default: %(default)s)",
    )
    parser.add_argument(
        "--alpha",
        type=probability,
        default=0.05,
        help="error level: the intervals cover 1 - alpha (default: %(default)s)",
    )
    parser.add_argument(
        "--interval",
        choices=INTERVALS,
        default="normal",
        help="'normal' (ppi_py's) or 'wilson' (0/1 labels only: holds its level on few labels) (default: %(default)s)",
    )
    parser.add_argument(
        "--finite-population",
        action="store_true",
        help="the estimate is about exactly these rows, the labelled ones a sample of them without replacement",
    )
    add_format_argument(parser)
    parser.set_defaults(handler=run)
