"""The ``ragframe`` command line: the parser, the entry point and its exit codes.

Commands (a module each in :mod:`ragframe.cli`)
-----------------------------------------------
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
import sys

import polars as pl

from ragframe.cli import compare, demo, gate, summary, trec
from ragframe.cli import eval as eval_command
from ragframe.cli.args import UsageError
from ragframe.exceptions import RagframeError

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ragframe`` command.

    Examples
    --------
    >>> build_parser().parse_args(["summary", "scores.parquet"]).scores
    'scores.parquet'
    """
    parser = argparse.ArgumentParser(
        prog="ragframe",
        description="Evaluate RAG systems as tables.",
        epilog="exit codes: 0 ok, 1 gate failed, 2 usage error, 3 input error. 'ragframe COMMAND --help' for more.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (demo, eval_command, trec, summary, compare, gate):
        command.add_parser(sub)
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
    except UsageError as exc:
        print(f"ragframe {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (RagframeError, FileNotFoundError, pl.exceptions.PolarsError) as exc:
        print(f"ragframe: error: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
