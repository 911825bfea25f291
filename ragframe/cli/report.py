"""``ragframe report``: a self-contained HTML report of scored rows (:func:`ragframe.report`)."""

from __future__ import annotations

import argparse

from ragframe.cli.args import (
    EXIT_CODES,
    SCORES_HELP,
    UsageError,
    add_metrics_argument,
    epilog,
    non_negative_int,
    positive_int,
)

__all__ = ["add_parser", "label_argument", "labels_option", "run"]

_REPORT_DESCRIPTION = """\
Write one self-contained HTML file about SCORES (ragframe.report): provenance
(source, row count, ragframe version, the options of a 'ragframe eval' run read
from its manifest), the summary table, histograms of each score, a table and
heatmap per --by column, the paired comparison with --compare (t test,
Holm-adjusted p-values, forest plot; the sides are named by their paths:
a = SCORES, b = OTHER), agreement with human labels with --labels
(AUROC with a 200-resample bootstrap interval, ROC curves), ranking curves for
measures at several cutoffs, and the --worst rows of each metric with their
texts, signals and reasons. Tables use every row; pictures of rows are drawn
from a uniform sample of --sample-rows rows (seed 0), and the page says so.
Images are inlined, the CSS is inline, nothing is fetched: the file opens
offline. Needs the 'report' extra: pip install 'ragframe[report]'. Prints the
path written."""


def label_argument(value: str) -> tuple[str | None, str]:
    """``METRIC=COLUMN`` (that metric's label) or ``COLUMN`` (a label for every metric).

    Examples
    --------
    >>> label_argument("faithfulness=human_faithfulness"), label_argument("human")
    (('faithfulness', 'human_faithfulness'), (None, 'human'))
    """
    metric, sep, column = value.partition("=")
    if not sep:
        metric, column = "", value
    if (sep and not metric.strip()) or not column.strip():
        raise argparse.ArgumentTypeError(f"expected METRIC=COLUMN or COLUMN, found {value!r}")
    return (metric.strip() or None), column.strip()


def labels_option(values: list[tuple[str | None, str]] | None) -> dict[str, str] | list[str] | None:
    """The ``labels=`` of :func:`ragframe.report` from the ``--labels`` values: all METRIC=COL, or all COL.

    Examples
    --------
    >>> labels_option([("faithfulness", "h_f"), ("answer_relevance", "h_a")])
    {'faithfulness': 'h_f', 'answer_relevance': 'h_a'}
    >>> labels_option([(None, "human")])
    ['human']
    """
    if not values:
        return None
    named = [metric is not None for metric, _ in values]
    if all(named):
        pairs = dict(values)
        if len(pairs) != len(values):
            raise UsageError("--labels names a metric twice")
        return pairs
    if any(named):
        raise UsageError("--labels takes METRIC=COLUMN pairs or label columns, not both")
    return [column for _, column in values]


def run(args: argparse.Namespace) -> int:
    """Write the report of SCORES to ``--output``; print its path; 0."""
    from ragframe.reporting import report

    path = report(
        args.scores,
        args.output,
        compare=args.compare,
        on=args.on or "id",
        by=args.by,
        labels=labels_option(args.labels),
        metrics=args.metrics,
        worst=args.worst,
        sample_rows=args.sample_rows,
        title=args.title,
        label=args.scores,  # the comparison, its forest plot and the ranking curves name each side by its path
        compare_label=args.compare,
    )
    print(path)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe report`` to the subcommands ``sub``."""
    rep = sub.add_parser(
        "report",
        help="write a self-contained HTML report of a scored frame",
        description=_REPORT_DESCRIPTION,
        epilog=epilog(SCORES_HELP, EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument(
        "scores",
        metavar="SCORES",
        help="the scored rows: Parquet file, folder, glob, 'ragframe eval' output folder; .csv, .json",
    )
    rep.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    rep.add_argument("--compare", metavar="OTHER", help="scores of a second system on the same rows, paired on --on")
    rep.add_argument(
        "--on", nargs="+", action="extend", metavar="COL", help="id column(s) pairing the rows (default: id)"
    )
    rep.add_argument(
        "--by", nargs="+", action="extend", metavar="COL", help="slice columns: a table and a heatmap per column"
    )
    rep.add_argument(
        "--labels",
        nargs="+",
        action="extend",
        type=label_argument,
        metavar="METRIC=COL|COL",
        help="human label columns (0/1) of SCORES: METRIC=COL pairs, or label columns for every metric",
    )
    add_metrics_argument(rep, "every ragframe score column")
    rep.add_argument(
        "--worst", type=non_negative_int, default=5, metavar="N", help="rows shown per metric (default: %(default)s)"
    )
    rep.add_argument(
        "--sample-rows",
        type=positive_int,
        default=100_000,
        metavar="N",
        help="rows the pictures of rows are drawn from (default: %(default)s)",
    )
    rep.add_argument("--title", metavar="TEXT", help="the page's title (default: ragframe report: SCORES)")
    rep.set_defaults(handler=run)
