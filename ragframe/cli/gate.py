"""``ragframe gate``: a CI check that fails (exit code 1) on a regression against a baseline or a mean below a
floor."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

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
from ragframe.cli.inputs import read_scores
from ragframe.exceptions import RagframeError
from ragframe.stats.regressions import regressions
from ragframe.stats.summary import summarize

__all__ = ["add_parser", "run"]

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
            raise UsageError(f"--min {metric} given twice")
        floors[metric] = value
    current = read_scores(args.scores, "scores")
    baseline = read_scores(args.baseline, "baseline")
    current_summary = _as_summary(current, args.metrics, args.scores)
    available = current_summary["metric"].to_list()
    unknown = [m for m in floors if m not in available]
    if unknown:
        raise UsageError(f"--min names unknown metric(s) {unknown}; available metrics: {available}")

    paired = not _is_summary(current) and not _is_summary(baseline)
    if paired:
        options = paired_test_options(args)
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


def run(args: argparse.Namespace) -> int:
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


def add_parser(sub: argparse._SubParsersAction) -> None:
    gate = sub.add_parser(
        "gate",
        help="fail (exit code 1) on a regression against a baseline or a mean below a floor",
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
    gate.add_argument(
        "--threshold",
        type=non_negative_float,
        default=0.05,
        help="a drop of a metric's mean by more than this is a regression (default: %(default)s)",
    )
    gate.add_argument(
        "--min",
        nargs="+",
        action="extend",
        type=floor_value,
        metavar="METRIC=VALUE",
        help="floor: fail when the mean of METRIC in SCORES is below VALUE; one or more, repeatable; an unknown "
        "metric is a usage error (default: no floors)",
    )
    add_metrics_argument(gate, "every ragframe score column in both; also the metrics --min may name")
    gate.add_argument(
        "--no-significance",
        action="store_true",
        help="fail on any drop larger than --threshold, significant or not",
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
