"""The ``ragframe`` command line.

Commands
--------
demo
    Score the bundled TREC DL 2019 example (BM25 and a GPT-3.5 rerank of it) and
    print a table of ranking metrics.

Exit codes: 0 ok, 2 usage error, 3 input error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from ragframe.datasets import example_paths
from ragframe.exceptions import RagframeError
from ragframe.io import read_qrels, read_trec_run
from ragframe.metrics.retrieval import evaluate_run, run_summary

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


def _format_table(rows: list[tuple[str, list[str]]], header: list[str]) -> str:
    # report formatting over a few dozen summary lines, not a per-row hot path
    widths = [max(len(header[i]), *(len(r[1][i - 1]) if i else len(r[0]) for r in rows)) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for name, values in rows:
        cells = [name.ljust(widths[0])] + [v.rjust(w) for v, w in zip(values, widths[1:])]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def _demo(args: argparse.Namespace) -> int:
    paths = example_paths()
    qrels = read_qrels(paths["qrels"])
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    summaries = {}
    frames = []
    for name in ("bm25", "bm25+gpt3.5-rerank"):
        per_query = evaluate_run(read_trec_run(paths[name]), qrels, k=[1, 5, 10, 100], metrics=DEMO_MEASURES)
        frames.append(per_query.with_columns(pl.lit(name).alias("run")))
        summaries[name] = run_summary(per_query)
    per_query_path = out_dir / "per_query.parquet"
    pl.concat(frames).write_parquet(per_query_path)

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
    print(f"\nper-query scores ({sum(f.height for f in frames)} rows) written to {per_query_path.resolve()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ragframe`` command."""
    parser = argparse.ArgumentParser(prog="ragframe", description="Evaluate RAG systems as tables.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="score the bundled TREC DL 2019 example and print a table")
    demo.add_argument("--out", default="ragframe-demo", help="folder for the per-query scores (default: %(default)s)")
    demo.set_defaults(handler=_demo)
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
    except (RagframeError, FileNotFoundError) as exc:
        print(f"ragframe: error: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
