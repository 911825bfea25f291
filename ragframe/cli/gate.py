"""``ragframe gate``: a CI check that fails (exit code 1) on a regression against a baseline, a mean below a
minimum, or a check that cannot be made; the rule is :func:`ragframe.gate`, this module prints it."""

from __future__ import annotations

import argparse
import json
import sys

import polars as pl

from ragframe.cli.args import (
    GATE_EXIT_CODES,
    SCORES_HELP,
    UsageError,
    add_metrics_argument,
    add_test_arguments,
    epilog,
    floor_value,
    non_negative_float,
    paired_test_options,
)
from ragframe.cli.inputs import read_argument
from ragframe.metrics import score_columns
from ragframe.stats.gate import gate
from ragframe.stats.options import DEFAULTS
from ragframe.stats.summary import is_summary

__all__ = ["add_parser", "run"]

_GATE_DESCRIPTION = """\
A CI check of SCORES against a baseline (ragframe.gate). It fails (exit code 1) when

  * a metric regressed: its mean dropped by more than --max-drop from BASELINE
    to SCORES and the drop is significant (paired --test on the rows matched by
    --on, p-values adjusted with --correction over the metrics, below --alpha);
    with --no-significance the drop alone fails;
  * a metric's mean in SCORES is below a minimum given with --min METRIC=VALUE;
  * a check cannot be made: a metric missing on one side, a metric without a
    value, no id in both frames, too few pairs to test a drop.

SCORES and BASELINE are per-row scored frames with ids, 'ragframe eval' output
folders, or summaries (columns 'metric' and 'mean', as 'ragframe summary --format
csv|json' and OUT/summary.parquet hold). When either is a summary, the other is
summarized and only the drop of the means is checked (no test: --no-significance
is implied). Metrics checked for regressions: --metrics, or every ragframe score
column of BASELINE. Minimums use the mean over the non-null values of SCORES."""


def _minimums(args: argparse.Namespace, current: pl.DataFrame) -> dict[str, float]:
    """--min as a mapping; a metric given twice or absent from SCORES is a usage error."""
    minimums: dict[str, float] = {}
    for metric, value in args.min or []:
        if metric in minimums:
            raise UsageError(f"--min {metric} given twice")
        minimums[metric] = value
    summary = is_summary(current.columns)
    known = current["metric"].to_list() if summary else current.columns
    unknown = [m for m in minimums if m not in known]
    if unknown:
        listed = known if summary else score_columns(current.columns)
        raise UsageError(f"--min names metric(s) {unknown} that {args.scores!r} does not have; it has {listed}")
    return minimums


def _max_drop(args: argparse.Namespace) -> float:
    """--max-drop, or the deprecated --threshold (a warning on stderr; argparse refuses both)."""
    if args.threshold is None:
        return DEFAULTS.max_drop if args.max_drop is None else args.max_drop
    print(
        "ragframe gate: warning: --threshold is deprecated and will be removed in the next release; use --max-drop",
        file=sys.stderr,
    )
    return args.threshold


def _rule(args: argparse.Namespace, mode: str, max_drop: float) -> str:
    """The rule applied, for the text report's first line."""
    if mode == "paired":
        fails = "fails" if args.no_significance else "that is significant fails"
        return (
            f"paired {args.test} test, {args.correction} correction, alpha {args.alpha}; a drop of the mean "
            f"by more than {max_drop} {fails}"
        )
    return f"summaries, no test; a drop of the mean by more than {max_drop} fails"


def _github_escape(message: str) -> str:
    return message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _print(checks: pl.DataFrame, args: argparse.Namespace, max_drop: float) -> None:
    failed = checks.filter(~pl.col("passed"))
    mode = checks["mode"][0]
    verdict = (
        f"gate passed: all {checks.height} checks passed"
        if failed.height == 0
        else f"gate failed: {failed.height} of {checks.height} checks failed"
    )
    if args.format == "json":
        records = checks.drop("mode").to_dicts()
        print(json.dumps({"passed": failed.height == 0, "mode": mode, "checks": records}, indent=2))
    elif args.format == "github":
        for reason in failed["reason"]:  # one line per failed check: reporting, not a hot path
            print(f"::error title=ragframe gate::{_github_escape(reason)}")
        if failed.height == 0:
            print(f"::notice title=ragframe gate::{_github_escape(verdict)}")
    else:
        print(f"ragframe gate: {args.scores} against baseline {args.baseline} ({_rule(args, mode, max_drop)})")
        for check in checks.iter_rows(named=True):  # one line per check: reporting, not a hot path
            print(f"{'PASS' if check['passed'] else 'FAIL'}  {check['check']:<10}  {check['reason']}")
        print(verdict)


def run(args: argparse.Namespace) -> int:
    """Read both sides, run :func:`ragframe.gate`, print its checks; 1 when one failed."""
    current = read_argument(args.scores, "scores")
    baseline = read_argument(args.baseline, "baseline")
    max_drop = _max_drop(args)
    checks = gate(
        baseline=baseline,
        current=current,
        metrics=args.metrics,
        max_drop=max_drop,
        significance=not args.no_significance,
        minimums=_minimums(args, current),
        **paired_test_options(args),
    )
    _print(checks, args, max_drop)
    return 0 if checks["passed"].all() else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe gate`` to the subcommands ``sub``."""
    gate = sub.add_parser(
        "gate",
        help="fail (exit code 1) on a regression against a baseline, a mean below a minimum, or a check that "
        "cannot be made",
        description=_GATE_DESCRIPTION,
        epilog=epilog(SCORES_HELP.replace("scored frames:", "SCORES and BASELINE:"), GATE_EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gate.add_argument(
        "scores", metavar="SCORES", help="current scores or summary (Parquet file, folder, glob; .csv, .json)"
    )
    gate.add_argument(
        "--baseline", required=True, metavar="BASELINE", help="baseline scores or summary to compare with (required)"
    )
    drop = gate.add_mutually_exclusive_group()
    drop.add_argument(
        "--max-drop",
        type=non_negative_float,
        metavar="MAX_DROP",
        help=f"a drop of a metric's mean by more than this is a regression (default: {DEFAULTS.max_drop})",
    )
    drop.add_argument(
        "--threshold",
        type=non_negative_float,
        metavar="MAX_DROP",
        help="deprecated name of --max-drop (a warning on stderr; removed in the next release)",
    )
    gate.add_argument(
        "--min",
        nargs="+",
        action="extend",
        type=floor_value,
        metavar="METRIC=VALUE",
        help="minimum: fail when the mean of METRIC in SCORES is below VALUE; one or more, repeatable; a metric "
        "SCORES does not have is a usage error (default: no minimums)",
    )
    add_metrics_argument(gate, "every ragframe score column of BASELINE, each required in SCORES")
    gate.add_argument(
        "--no-significance",
        action="store_true",
        help="fail on any drop larger than --max-drop, significant or not",
    )
    add_test_arguments(gate)
    gate.add_argument(
        "--format",
        choices=("text", "github", "json"),
        default="text",
        help="'text': one PASS/FAIL line per check and a verdict; 'github': GitHub Actions workflow commands, "
        "'::error' per failed check or one '::notice' when all pass; 'json': {passed, mode, checks} "
        "(default: %(default)s)",
    )
    gate.set_defaults(handler=run)
