"""``ragframe eval``: :func:`ragframe.evaluate_parquet` from the command line, with a TOML config."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ragframe.cli.args import EXIT_CODES, UsageError, add_format_argument, epilog, mapping, positive_int
from ragframe.cli.format import format_frame
from ragframe.evaluator import Evaluator
from ragframe.exceptions import InvalidParameterError
from ragframe.io.streaming import DEFAULT_BATCH_ROWS, DEFAULT_BATCHES_PER_PROCESS

__all__ = ["add_parser", "run"]

_EVAL_DESCRIPTION = """\
Score Parquet logs with ragframe.evaluate_parquet: every batch of --batch-rows
rows is scored with the in-memory kernels and written to OUT/scores/ as one
Parquet part; rows that break the column contract go to OUT/rejects/ with the
reason and their row number; OUT/summary.parquet summarizes every score column.
A killed run restarted with the same arguments continues where it stopped.
Metrics: any names rf.list_metrics() shows (faithfulness, mrr, ndcg_at_k, ...),
output names (ndcg_at_10), family names (heuristic, retrieval) or 'auto' (every
metric whose input columns the log has). Default: the seven heuristic metrics;
a metric whose input column is missing is an error naming both."""

_CONFIG_HELP = (
    "A TOML config holds rf.Evaluator's options under their own names (metrics, k, relevance_level, thresholds and "
    "weights tables, composite_threshold, prefix, explain, ngram_sizes, ngram_weights, claim_support_threshold, "
    "chunk_relevance_threshold, and the column names question, answer, contexts, ground_truth, retrieved_ids, "
    "retrieved_scores, relevant_ids, relevance, also accepted grouped in a [columns] table), a [judge] table of "
    "rf.OpenAIJudge keywords (name the environment variable of the key, api_key_env = 'MY_KEY', never the key: a key "
    "is shown as *** in the manifest and reports), plus the run's own batch_rows, batches_per_process and keep. "
    "Flags given on the command line override the config."
)
_RUN_KEYS = ("batch_rows", "batches_per_process", "keep")


def _load_config(path: str | None) -> dict[str, Any]:
    """The TOML file's table (a [columns] table is flattened into the column-name options)."""
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
        raise UsageError(f"config file {path!r} is not valid TOML: {exc}") from exc
    columns = config.pop("columns", {})
    if not isinstance(columns, dict):
        raise UsageError(f"config file {path!r}: [columns] must be a table of role = column name")
    config.update(columns)
    known = {"metrics", *_RUN_KEYS, *Evaluator.option_defaults()}
    unknown = sorted(set(config) - known)
    if unknown:
        raise UsageError(f"config file {path!r}: unknown key {unknown[0]!r}; known keys: {sorted(known)}")
    return config


def _evaluator(args: argparse.Namespace, config: dict[str, Any]) -> Evaluator:
    """The run configuration: the config file's options, the flags over them."""
    options = {k: v for k, v in config.items() if k not in _RUN_KEYS and k != "metrics"}
    options.update(dict(args.column or []))
    if args.k is not None:
        options["k"] = args.k
    if args.compat is not None:
        options["compat"] = args.compat
    metrics = args.metrics if args.metrics is not None else config.get("metrics")
    if isinstance(metrics, list) and metrics == ["auto"]:
        metrics = "auto"
    try:
        return Evaluator(metrics, **options)
    except InvalidParameterError as exc:
        raise UsageError(str(exc)) from exc


def _run_on_ray(args: argparse.Namespace, evaluator: Evaluator, config: dict[str, Any]) -> Any:
    """``--engine ray``: connect (``--address``, else a local Ray), then score through Ray Data."""
    from ragframe.distributed.parquet import evaluate_parquet_ray
    from ragframe.distributed.runtime import require_ray

    ray = require_ray("ragframe eval --engine ray")
    if not ray.is_initialized():
        ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    batch_rows = args.batch_rows if args.batch_rows is not None else config.get("batch_rows")
    keep = args.keep if args.keep is not None else config.get("keep")
    try:
        return evaluate_parquet_ray(
            args.logs, args.out, evaluator, keep=keep, batch_size=batch_rows or 4096, overwrite=args.overwrite
        )
    except InvalidParameterError as exc:
        raise UsageError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    from ragframe.io.streaming import evaluate_parquet

    config = _load_config(args.config)
    evaluator = _evaluator(args, config)
    if args.address is not None and args.engine != "ray":
        raise UsageError("--address needs --engine ray")
    if args.engine == "ray":
        return _report(args, _run_on_ray(args, evaluator, config))
    run_options: dict[str, Any] = {
        "batch_rows": args.batch_rows if args.batch_rows is not None else config.get("batch_rows", DEFAULT_BATCH_ROWS),
        "keep": args.keep if args.keep is not None else config.get("keep"),
    }
    if args.batches_per_process is not None or "batches_per_process" in config:
        run_options["batches_per_process"] = (
            args.batches_per_process if args.batches_per_process is not None else config["batches_per_process"]
        )
    report = sys.stderr if args.format != "table" else sys.stdout  # stdout stays machine-readable

    def announce(outputs: list[str]) -> None:
        print(f"scoring {', '.join(outputs)}", file=report, flush=True)

    try:
        result = evaluate_parquet(
            args.logs,
            args.out,
            evaluator,
            resume=not args.no_resume,
            overwrite=args.overwrite,
            progress=not args.no_progress,
            on_start=announce,
            **run_options,
        )
    except InvalidParameterError as exc:
        raise UsageError(str(exc)) from exc
    return _report(args, result)


def _report(args: argparse.Namespace, result: Any) -> int:
    """The summary table on stdout and one line of what the run did."""
    report = sys.stderr if args.format != "table" else sys.stdout
    if result.summary.height:
        print(format_frame(result.summary, args.format))
    resumed = f", {result.resumed} of {result.batches} batches done by an earlier run" if result.resumed else ""
    print(
        f"\nscored {result.scored:,} of {result.rows:,} rows ({result.rejected:,} rejected) in {result.seconds:.1f} s"
        f"{resumed}; scores in {result.out / 'scores'}, summary in {result.out / 'summary.parquet'}"
        + (f", rejects in {result.out / 'rejects'}" if result.rejected else ""),
        file=report,
    )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe eval`` to the subcommands ``sub``."""
    evaluate = sub.add_parser(
        "eval",
        help="score Parquet logs in batches into a Parquet dataset (resumable)",
        description=_EVAL_DESCRIPTION,
        epilog=epilog(_CONFIG_HELP, EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    evaluate.add_argument(
        "logs", nargs="+", metavar="LOG", help="Parquet files, folders (searched recursively) or globs"
    )
    evaluate.add_argument("-o", "--out", required=True, metavar="OUT", help="output folder (created)")
    evaluate.add_argument(
        "--metrics",
        nargs="+",
        metavar="METRIC",
        help="metric, output or family names, or 'auto' (default: the seven heuristic metrics)",
    )
    evaluate.add_argument(
        "--k", nargs="+", type=positive_int, metavar="K", help="cutoffs of the ranking metrics (1 5 10)"
    )
    evaluate.add_argument("--config", metavar="FILE", help="TOML config (see below)")
    evaluate.add_argument(
        "--compat",
        choices=["rag-eval-node-ts"],
        help="score the heuristic metrics exactly as rag-eval-node-ts 0.3.2 does (its methods and thresholds)",
    )
    evaluate.add_argument(
        "--column",
        action="append",
        type=mapping,
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
        "--batch-rows", type=positive_int, metavar="N", help=f"rows per batch and part ({DEFAULT_BATCH_ROWS})"
    )
    evaluate.add_argument(
        "--batches-per-process",
        type=positive_int,
        metavar="N",
        help=f"a run of more batches scores them in child processes, N batches each, so memory stays at the "
        f"level of N batches ({DEFAULT_BATCHES_PER_PROCESS})",
    )
    evaluate.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local: this machine, in batches (default); ray: Ray Data on the cluster of --address (or a local "
        "Ray), same scores and the same output folder layout (needs pip install 'ragframe[ray]'; no resume)",
    )
    evaluate.add_argument(
        "--address", metavar="ADDR", help="the Ray cluster to join with --engine ray (ray://host:10001, auto, ...)"
    )
    evaluate.add_argument("--overwrite", action="store_true", help="replace the output of an earlier run in OUT")
    evaluate.add_argument("--no-resume", action="store_true", help="fail instead of continuing a run found in OUT")
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar (never shown outside a terminal)")
    add_format_argument(evaluate)
    evaluate.set_defaults(handler=run)
