"""``ragframe eval``: :func:`ragframe.evaluate_parquet` from the command line, with a TOML config."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from ragframe.cli.args import (
    EXIT_CODES,
    UsageError,
    add_format_argument,
    epilog,
    mapping,
    positive_int,
    read_toml,
    unit_interval,
)
from ragframe.cli.format import format_frame
from ragframe.exceptions import InvalidParameterError, RunFailedError, SkippedMetricWarning
from ragframe.extras import require
from ragframe.io.outcome import status_lines
from ragframe.io.streaming import DEFAULT_BATCH_ROWS, DEFAULT_BATCHES_PER_PROCESS
from ragframe.run.evaluator import Evaluator
from ragframe.run.routing import MODES

__all__ = ["add_parser", "run"]

_EVAL_DESCRIPTION = """\
Score Parquet logs with ragframe.evaluate_parquet: every batch of --batch-rows
rows is scored with the in-memory kernels and written to OUT/scores/ as one
Parquet part; rows that break the column contract go to OUT/rejects/ with the
reason and their row number; OUT/summary.parquet summarizes every score column.
A killed run restarted with the same arguments continues where it stopped.
Metrics: any names rf.list_metrics() shows (faithfulness, mrr, ndcg_at_k, ...),
output names (ndcg_at_10), family names (heuristic, retrieval) or 'auto' (every
metric whose input columns the log has). Default: each of the seven heuristic
metrics whose input columns the log has, with one line on stderr per metric
skipped and the column it lacks (none of them possible is an error). A metric
named with --metrics whose input column is missing is an error naming both; so
is a --column mapping to a missing column under the default or 'auto'. A log
that already holds some of the columns the run writes (its own 'faithfulness')
is an error: write beside them with --prefix.

LLM judge: --mode llm scores each heuristic metric that has a judge counterpart
with the judge, --mode hybrid only the rows whose heuristic score lies in
--hybrid-band; judge metrics (judge_faithfulness, ...) always use it. The
judge is --judge-model at --judge-base-url (an OpenAI-compatible server; the
API key is read from OPENAI_API_KEY, never from a flag), or the config's
[judge] table (name the key's variable there: api_key_env = 'MY_KEY'); a judge
that no metric of the run uses is a usage error. A key is shown as *** in the
manifest, the report, logs and errors.
--budget caps what the judge is sent (calls, or cost at the [judge]
table's prices): the rows to judge are drawn at random (seeded by
--budget-seed, stratified by --budget-by) among those the judge would be
asked about, the others are 'skipped' with a 'budget:' error, and no more
than the budget is ever sent; OUT/manifest.json records the plan and the
spend.

Traces: --input-format openinference|phoenix|langsmith reads LOG as trace
files instead (OTLP JSON lines or protobuf with OpenInference attributes,
Phoenix span tables, LangSmith run exports; docs/traces.md): one row per trace
(question, answer, contexts, retrieved_ids, ... and trace_id and the span ids)
is made in bounded memory into OUT/traces/rows and scored; a trace that cannot
be a row (no retriever span, two roots, a parent cycle, a document without
content) goes to OUT/rejects/traces.parquet with its trace id and reason.
--retrieval says which retriever or reranker span gives the documents.

Outcome: a run that scored or judged nothing exits with 3 after writing its
output: a log without rows (the output is a valid empty one), every row
rejected (the first reason is printed), a judge metric with failed rows and no
'ok' row (its commonest error is printed), or a share of failed judge rows
above --max-failure-rate. Judge rows whose status is 'ok' or 'skipped' (not
sent on purpose: a null input, a row hybrid routing left to the heuristic) are
not failures; every other status is. stderr gets one line per judge metric
with its rows by status."""

_RUN_KEYS = ("batch_rows", "batches_per_process", "keep", "max_failure_rate")


def _config_help() -> str:
    """The --config help: the option names come from the registry's declarations (never a hand-kept list)."""
    options = ", ".join(name for name in Evaluator.option_defaults() if name != "judge")
    return (
        "A TOML config holds rf.Evaluator's options under their own names (metrics, " + options + ", the column "
        "names also accepted grouped in a [columns] table), a [judge] table of rf.OpenAIJudge keywords (model, "
        "base_url, temperature, max_tokens, ...; name the key's environment variable, api_key_env = 'MY_KEY', never "
        "the key: a key is shown as *** in the manifest and reports; default OPENAI_API_KEY), budget as a number of "
        "calls or a [budget] table of calls and/or cost, plus the run's own " + ", ".join(_RUN_KEYS) + ". Flags "
        "given on the command line override the config (--judge-model and --judge-base-url override the [judge] "
        "table's model and base_url)."
    )


def _load_config(path: str | None) -> dict[str, Any]:
    """The TOML file's table (a [columns] table is flattened into the column-name options)."""
    if path is None:
        return {}
    config = read_toml(path)
    columns = config.pop("columns", {})
    if not isinstance(columns, dict):
        raise UsageError(f"config file {path!r}: [columns] must be a table of role = column name")
    config.update(columns)
    known = {"metrics", *_RUN_KEYS, *Evaluator.option_defaults()}
    unknown = sorted(set(config) - known)
    if unknown:
        raise UsageError(f"config file {path!r}: unknown key {unknown[0]!r}; known keys: {sorted(known)}")
    return config


def _judge_option(args: argparse.Namespace, config: dict[str, Any]) -> dict[str, Any]:
    """``judge=``: the config's [judge] table (or model name) with --judge-model and --judge-base-url over it."""
    if args.judge_model is None and args.judge_base_url is None:
        return {}
    given = config.get("judge")
    if args.judge_model is None and given is None:
        raise UsageError("--judge-base-url needs --judge-model MODEL (or a [judge] table in --config)")
    table = {"model": given} if isinstance(given, str) else dict(given or {})
    if args.judge_model is not None:
        table["model"] = args.judge_model
    if args.judge_base_url is not None:
        table["base_url"] = args.judge_base_url
    return {"judge": table}


def _evaluator(args: argparse.Namespace, config: dict[str, Any]) -> Evaluator:
    """The run configuration: the config file's options, the flags over them."""
    options = {k: v for k, v in config.items() if k not in _RUN_KEYS and k != "metrics"}
    options.update(dict(args.column or []))
    if args.prefix is not None:
        options["prefix"] = args.prefix
    if args.k is not None:
        options["k"] = args.k
    if args.compat is not None:
        options["compat"] = args.compat
    if args.mode is not None:
        options["mode"] = args.mode
    if args.hybrid_band is not None:
        options["hybrid_band"] = tuple(args.hybrid_band)
    if args.budget is not None:
        options["budget"] = _budget_option(args.budget)
    if args.budget_seed is not None:
        options["budget_seed"] = args.budget_seed
    if args.budget_by is not None:
        options["by"] = args.budget_by
    options.update(_judge_option(args, config))
    if options.get("mode") in ("llm", "hybrid") and options.get("judge") is None:
        raise UsageError(
            f"--mode {options['mode']} needs a judge: --judge-model MODEL (and --judge-base-url URL), "
            "or a [judge] table in --config"
        )
    metrics = args.metrics if args.metrics is not None else config.get("metrics")
    if isinstance(metrics, list) and metrics == ["auto"]:
        metrics = "auto"
    try:
        return Evaluator(metrics, **options)
    except InvalidParameterError as exc:
        raise UsageError.of(exc) from exc


def budget_part(value: str) -> tuple[str, float]:
    """One word of ``--budget``: ``N`` or ``calls=N`` (calls), ``cost=X`` (in the judge's price currency).

    Examples
    --------
    >>> budget_part("500"), budget_part("cost=2.5")
    (('calls', 500), ('cost', 2.5))
    """
    name, sep, number = value.partition("=")
    if not sep:
        name, number = "calls", value
    try:
        if name == "calls":
            parsed: float = int(number)
        elif name == "cost":
            parsed = float(number)
        else:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N, calls=N or cost=X, found {value!r}") from None
    if parsed < 0 or parsed != parsed or parsed in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, found {value!r}")
    return name, parsed


def _budget_option(parts: list[tuple[str, float]]) -> int | dict[str, float]:
    """``--budget``'s words as ``budget=``: an int of calls, or ``{"calls": n, "cost": x}``."""
    names = [name for name, _ in parts]
    if len(set(names)) != len(names):
        raise UsageError(f"--budget gives {names[0]} twice; give calls and cost at most once each")
    found = dict(parts)
    return int(found["calls"]) if set(found) == {"calls"} else found


def _budget_line(result: Any) -> str | None:
    """What a judge budget planned and spent (stderr)."""
    budget = getattr(result, "budget", None)
    if not budget:
        return None
    chosen = sum(budget["chosen"].values())
    candidates = sum(budget["candidates"].values())
    return (
        f"judge budget {budget['budget']}: {chosen:,} of {candidates:,} candidate rows chosen, "
        f"{budget['planned_calls']:,} calls planned; sent {budget['calls']:,} calls, cost {budget['cost']:g}"
    )


def _run_on_ray(args: argparse.Namespace, evaluator: Evaluator, config: dict[str, Any]) -> Any:
    """``--engine ray``: connect (``--address``, else a local Ray), then run the batches as Ray tasks."""
    from ragframe.distributed.parquet import evaluate_parquet_ray
    from ragframe.distributed.runtime import require_ray

    ray = require_ray(data=False)  # evaluate_parquet_ray imports ray.data for URLs
    _require_ray_client(args.address)
    if not ray.is_initialized():
        ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    batch_rows = args.batch_rows if args.batch_rows is not None else config.get("batch_rows")
    keep = args.keep if args.keep is not None else config.get("keep")
    try:
        return evaluate_parquet_ray(
            args.logs,
            args.out,
            evaluator,
            keep=keep,
            batch_size=batch_rows,  # None: 100,000-row slices of local files, whole blocks of URLs
            overwrite=args.overwrite,
            max_failure_rate=_max_failure_rate(args, config),
            progress=not args.no_progress,
        )
    except InvalidParameterError as exc:
        raise UsageError.of(exc) from exc


def _require_ray_client(address: str | None) -> None:
    """``--address ray://...`` goes through Ray Client, which needs ``ray[client]`` (grpcio)."""
    if address is not None and address.startswith("ray://"):
        require("ray", "grpc", what=f"--address {address} (Ray Client)", note="(the extra includes ray[client])")


def _max_failure_rate(args: argparse.Namespace, config: dict[str, Any]) -> float | None:
    return args.max_failure_rate if args.max_failure_rate is not None else config.get("max_failure_rate")


@contextlib.contextmanager
def _skip_lines() -> Iterator[None]:
    """Each default metric the log's columns do not allow (a SkippedMetricWarning): one line on stderr, once."""
    shown: set[str] = set()
    show_other = warnings.showwarning

    def show(message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        if not isinstance(message, SkippedMetricWarning):
            show_other(message, category, filename, lineno, file, line)
        elif message.metric not in shown:
            shown.add(message.metric)
            print(
                f"skipped {message.metric}: it reads {message.role} from column {message.column!r}, which the log "
                "lacks; name it in --metrics to require it",
                file=sys.stderr,
                flush=True,
            )

    with warnings.catch_warnings():
        warnings.simplefilter("always", SkippedMetricWarning)
        warnings.showwarning = show
        yield


def _check_overwrite(out: str) -> None:
    """--overwrite on a folder that holds files but no ragframe manifest: a usage error, nothing removed."""
    from pathlib import Path

    from ragframe.exceptions import ResumeError
    from ragframe.io.output import check_overwrite

    try:
        check_overwrite(Path(out))
    except ResumeError as exc:
        raise UsageError.of(exc) from exc


def run(args: argparse.Namespace) -> int:
    with _skip_lines():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from ragframe.io.streaming import evaluate_parquet

    config = _load_config(args.config)
    evaluator = _evaluator(args, config)
    if args.address is not None and args.engine != "ray":
        raise UsageError("--address needs --engine ray")
    if args.engine == "ray" and args.input_format != "parquet":
        raise UsageError("--input-format " + args.input_format + " needs --engine local")
    if args.overwrite:
        _check_overwrite(args.out)
    if args.engine == "ray":
        return _reported(args, lambda: _run_on_ray(args, evaluator, config))
    run_options: dict[str, Any] = {
        "batch_rows": args.batch_rows if args.batch_rows is not None else config.get("batch_rows", DEFAULT_BATCH_ROWS),
        "keep": args.keep if args.keep is not None else config.get("keep"),
        "max_failure_rate": _max_failure_rate(args, config),
    }
    if args.batches_per_process is not None or "batches_per_process" in config:
        run_options["batches_per_process"] = (
            args.batches_per_process if args.batches_per_process is not None else config["batches_per_process"]
        )
    report = sys.stderr if args.format != "table" else sys.stdout  # stdout stays machine-readable

    def announce(outputs: list[str]) -> None:
        print(f"scoring {', '.join(outputs)}", file=report, flush=True)

    def evaluate() -> Any:
        try:
            return evaluate_parquet(
                args.logs,
                args.out,
                evaluator,
                resume=not args.no_resume,
                overwrite=args.overwrite,
                progress=not args.no_progress,
                on_start=announce,
                input_format=args.input_format,
                retrieval=args.retrieval,
                **run_options,
            )
        except InvalidParameterError as exc:
            raise UsageError.of(exc) from exc

    return _reported(args, evaluate)


def _reported(args: argparse.Namespace, evaluate: Any) -> int:
    """Run ``evaluate`` and report what it did; a failed outcome is reported, then raised (exit code 3)."""
    try:
        result = evaluate()
    except RunFailedError as exc:
        if exc.result is not None:
            _report(args, exc.result)
        raise
    return _report(args, result)


def _report(args: argparse.Namespace, result: Any) -> int:
    """The summary table on stdout, one line of what the run did, and the judge's statuses on stderr."""
    report = sys.stderr if args.format != "table" else sys.stdout
    if result.summary.height and result.scored:
        print(format_frame(result.summary, args.format))
    resumed = f", {result.resumed} of {result.batches} batches done by an earlier run" if result.resumed else ""
    print(
        f"\nscored {result.scored:,} of {result.rows:,} rows ({result.rejected:,} rejected) in {result.seconds:.1f} s"
        f"{resumed}; scores in {result.out / 'scores'}, summary in {result.out / 'summary.parquet'}"
        + (f", rejects in {result.out / 'rejects'}" if result.rejected else ""),
        file=report,
    )
    if result.traces_rejected:
        print(
            f"{result.traces_rejected:,} traces could not become rows: reasons in "
            f"{result.out / 'rejects' / 'traces.parquet'}",
            file=report,
        )
    for line in status_lines(result):
        print(line, file=sys.stderr)
    spent = _budget_line(result)
    if spent is not None:
        print(spent, file=sys.stderr)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe eval`` to the subcommands ``sub``."""
    evaluate = sub.add_parser(
        "eval",
        help="score Parquet logs in batches into a Parquet dataset (resumable)",
        description=_EVAL_DESCRIPTION,
        epilog=epilog(_config_help(), EXIT_CODES),
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
        help="metric, output or family names, or 'auto' (default: the heuristic metrics the log's columns allow, "
        "one stderr line per metric skipped)",
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
        "--prefix",
        metavar="PREFIX",
        help="prepended to every column the run writes, e.g. --prefix run2_ (needed when the log already holds "
        "columns named like scores)",
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
        "--mode",
        choices=MODES,
        help="heuristic: no judge (default); llm: each heuristic metric with a judge counterpart is scored by the "
        "judge under its own name; hybrid: only rows whose heuristic score is in --hybrid-band go to the judge",
    )
    evaluate.add_argument(
        "--judge-model",
        metavar="MODEL",
        help="the judge: a model of an OpenAI-compatible server (rf.OpenAIJudge); the API key is read from "
        "OPENAI_API_KEY",
    )
    evaluate.add_argument(
        "--judge-base-url",
        metavar="URL",
        help="the judge server's URL (http://127.0.0.1:8000/v1; default OPENAI_BASE_URL, else OpenAI's)",
    )
    evaluate.add_argument(
        "--hybrid-band",
        nargs=2,
        type=unit_interval,
        metavar=("LO", "HI"),
        help="with --mode hybrid: rows whose heuristic score is in [LO, HI] go to the judge (default: each "
        "metric's threshold +- 0.2)",
    )
    evaluate.add_argument(
        "--budget",
        nargs="+",
        type=budget_part,
        metavar="N|cost=X",
        help="a hard cap on the judge: N calls (every request counts: samples, re-asks of unreadable replies), "
        "and/or cost=X at the judge's prices (needs its prices and max_tokens in the config's [judge] table); "
        "the rows to judge are drawn at random among those the judge would be asked about, the others are "
        "'skipped' (default: no cap)",
    )
    evaluate.add_argument(
        "--budget-seed", type=int, metavar="SEED", help="the seed of --budget's random draw of rows (default 0)"
    )
    evaluate.add_argument(
        "--budget-by",
        nargs="+",
        metavar="COL",
        help="stratify --budget's draw by these columns: each value gets its share of the budget",
    )
    evaluate.add_argument(
        "--max-failure-rate",
        type=unit_interval,
        metavar="R",
        help="fail (exit code 3) when more than this share of a judge metric's rows sent to the judge failed "
        "(default: no limit; a judge metric without any 'ok' row always fails)",
    )
    evaluate.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local: this machine, in batches (default); ray: each batch a Ray task on the cluster of --address "
        "(or a local Ray), the same output files and resume (needs pip install 'ragframe[ray]')",
    )
    evaluate.add_argument(
        "--address", metavar="ADDR", help="the Ray cluster to join with --engine ray (ray://host:10001, auto, ...)"
    )
    evaluate.add_argument(
        "--input-format",
        choices=["parquet", "openinference", "phoenix", "langsmith"],
        default="parquet",
        help="what LOG holds: a Parquet log (default), or trace files: OTLP JSON lines or protobuf with OpenInference "
        "attributes (openinference), Phoenix span tables (phoenix), LangSmith run exports (langsmith); see "
        "docs/traces.md",
    )
    evaluate.add_argument(
        "--retrieval",
        choices=["reranker", "last", "first", "all"],
        default="reranker",
        help="with trace files: the documents of the last reranker span, else the last retriever span (reranker, "
        "default); of the last or first retriever span; or of every retriever span (all)",
    )
    evaluate.add_argument("--overwrite", action="store_true", help="replace the output of an earlier run in OUT")
    evaluate.add_argument("--no-resume", action="store_true", help="fail instead of continuing a run found in OUT")
    evaluate.add_argument("--no-progress", action="store_true", help="no progress bar (never shown outside a terminal)")
    add_format_argument(evaluate)
    evaluate.set_defaults(handler=run, flag_aliases={"judge": "judge_model"})
