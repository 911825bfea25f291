"""``ragframe compare``: paired tests of two scored frames, per metric (:func:`ragframe.stats.compare`)."""

from __future__ import annotations

import argparse

from ragframe.cli.args import (
    EXIT_CODES,
    SCORES_HELP,
    add_format_argument,
    add_metrics_argument,
    add_test_arguments,
    epilog,
    paired_test_options,
)
from ragframe.cli.format import format_frame
from ragframe.cli.inputs import read_argument
from ragframe.stats.compare import compare

__all__ = ["add_parser", "run"]

_COMPARE_DESCRIPTION = """\
Paired comparison of two scored frames with ragframe.stats.compare: is B different
from A? Rows are paired on --on; per metric (and per slice with --by): n (pairs
with both scores), mean_a, mean_b, delta (= mean_b - mean_a), ci_low, ci_high (of
the mean difference), statistic, p_value, p_adjusted, significant (p_adjusted <
alpha), winner (a, b or tie; higher is better), effect_size (Cohen's d_z), test."""


def run(args: argparse.Namespace) -> int:
    """Print :func:`ragframe.stats.compare` of the frames A and B; 0."""
    a = read_argument(args.a, "A")
    b = read_argument(args.b, "B")
    table = compare(a, b, metrics=args.metrics, by=args.by, **paired_test_options(args))
    print(format_frame(table, args.format))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe compare`` to the subcommands ``sub``."""
    cmp = sub.add_parser(
        "compare",
        help="paired tests of two scored frames, per metric",
        description=_COMPARE_DESCRIPTION,
        epilog=epilog(SCORES_HELP.replace("scored frames:", "A and B:"), EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmp.add_argument(
        "a", metavar="A", help="scores of system A, the reference (Parquet file, folder, glob; .csv, .json)"
    )
    cmp.add_argument("b", metavar="B", help="scores of system B on the same samples")
    add_metrics_argument(cmp, "every ragframe score column present in both")
    cmp.add_argument(
        "--by", nargs="+", action="extend", metavar="COL", help="slice columns, taken from A (default: no slices)"
    )
    add_test_arguments(cmp)
    add_format_argument(cmp)
    cmp.set_defaults(handler=run)
