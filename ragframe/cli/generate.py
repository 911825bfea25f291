"""``ragframe generate``: :func:`ragframe.generate_testset` from the command line, with a TOML config."""

from __future__ import annotations

import argparse
import inspect
import sys
from typing import Any

import polars as pl

from ragframe.cli.args import UsageError, epilog, non_negative_int, positive_int, read_toml
from ragframe.cli.eval import _budget_option, budget_part
from ragframe.cli.inputs import read_argument
from ragframe.testsets import generate_testset, generation_rejections

__all__ = ["add_parser", "run", "load_config"]

_DESCRIPTION = """\
Generate a test set from a corpus of chunks (columns doc_id, chunk_id, text) with
ragframe.generate_testset and write it to OUT as Parquet: one row per requested
question (-n), with question, ground_truth, relevant_ids (the chunks the question
was written from: its qrels), reference_contexts, nuggets, query_type, source_doc,
and _status/_error/_rejections. A slot the generator could not fill is a row
with a null question and _status failed, filtered, budget or exhausted, and
_error says why; nothing is silently short.

The model is the config's [judge] table (rf.OpenAIJudge's keywords: model,
base_url, api_key_env, prices, max_tokens, ...) or --judge-model and
--judge-base-url. The config may also hold generate_testset's options under
their own names (query_types, seed, budget, personas, seed_questions, language,
style, max_rounds, min_overlap, duplicate_threshold, grounding_band,
parse_retries, max_concurrency, doc_id, chunk_id, text); flags override it.
Replies are cached (the judge cache): a rerun writes the same bytes and sends
nothing. --dry-run writes the first round's plan (prompts, estimated tokens and
cost) to OUT instead, and calls nothing.

OUT feeds ragframe eval directly (a log with question and ground_truth), and
its relevant_ids are qrels: rf.generated_qrels(OUT) for rf.evaluate_run."""

#: Keys a config may hold besides [judge]: the keywords of generate_testset.
CONFIG_KEYS = tuple(
    name for name in inspect.signature(generate_testset).parameters if name not in ("corpus", "n", "dry_run", "prompts")
)


def load_config(path: str | None) -> dict[str, Any]:
    """The TOML config's table, its keys checked against :data:`CONFIG_KEYS`."""
    if path is None:
        return {}
    config = read_toml(path)
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise UsageError(f"config file {path!r}: unknown key {unknown[0]!r}; known keys: {sorted(CONFIG_KEYS)}")
    if isinstance(config.get("budget"), dict):
        config["budget"] = dict(config["budget"])
    if isinstance(config.get("grounding_band"), list):
        config["grounding_band"] = tuple(config["grounding_band"])
    return config


def _options(args: argparse.Namespace) -> dict[str, Any]:
    options = load_config(args.config)
    judge = options.get("judge")
    if args.judge_model is not None or args.judge_base_url is not None:
        table = {"model": judge} if isinstance(judge, str) else dict(judge or {})
        if args.judge_model is not None:
            table["model"] = args.judge_model
        if args.judge_base_url is not None:
            table["base_url"] = args.judge_base_url
        judge = table
    if judge is None:
        raise UsageError("a judge is needed: a [judge] table in --config, or --judge-model MODEL")
    options["judge"] = judge
    flags = {
        "query_types": args.query_types,
        "seed": args.seed,
        "max_rounds": args.max_rounds,
        "language": args.language,
        "style": args.style,
        "personas": args.persona,
        "doc_id": args.doc_id,
        "chunk_id": args.chunk_id,
        "text": args.text,
    }
    options.update({name: value for name, value in flags.items() if value is not None})
    if args.budget is not None:
        options["budget"] = _budget_option(args.budget)
    if args.no_cache:
        options["cache"] = False
    elif args.cache is not None:
        options["cache"] = args.cache
    return options


def run(args: argparse.Namespace) -> int:
    """Write the set (or, with --dry-run, its plan) to OUT; the outcome on stderr; 0, or 3 when no row is ok."""
    options = _options(args)
    corpus = read_argument(args.corpus, "corpus")
    result = generate_testset(corpus, args.n, dry_run=args.dry_run, progress=sys.stderr.isatty(), **options)
    result.write_parquet(args.out)
    if args.dry_run:
        tokens = int(result["input_tokens"].sum() + result["output_tokens"].sum())
        cost = result["expected_cost"].sum() if result["expected_cost"].null_count() < result.height else None
        money = f", expected cost {cost:.4g}" if cost is not None else ""
        cached = int(result["cached"].sum())
        print(
            f"dry run: {result.height} first-round prompts planned ({cached} cached), about {tokens:,} tokens{money}; "
            f"plan written to {args.out}",
            file=sys.stderr,
        )
        return 0
    counts = result.group_by("_status").len().sort("_status")
    ok = int(result.filter(pl.col("_status") == "ok").height)
    words = ", ".join(f"{n} {status}" for status, n in counts.rows())
    print(f"{ok} of {args.n} questions generated ({words}); written to {args.out}", file=sys.stderr)
    rejected = generation_rejections(result)
    if rejected.height:
        reasons = ", ".join(f"{reason} {n}" for reason, n in rejected.rows())
        print(f"candidates rejected: {reasons}", file=sys.stderr)
    return 0 if ok or args.n == 0 else 3  # 3: input or runtime error (main.EXIT_CODES)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe generate`` to the subcommands ``sub``."""
    parser = sub.add_parser(
        "generate",
        help="a test set (questions, references, facts, qrels) from a corpus of chunks",
        description=_DESCRIPTION,
        epilog=epilog(
            "exit codes: 0 written (some rows may be short, each with its reason), 2 usage error, 3 input or "
            "runtime error, or no question could be generated"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("corpus", metavar="CORPUS", help="the chunks: a Parquet file, folder or glob; .csv, .json")
    parser.add_argument("-o", "--out", required=True, metavar="OUT", help="the Parquet file to write")
    parser.add_argument("-n", type=non_negative_int, required=True, metavar="N", help="questions to generate")
    parser.add_argument("--config", metavar="FILE", help="TOML config: a [judge] table and generate_testset options")
    parser.add_argument("--judge-model", metavar="MODEL", help="the model (overrides the [judge] table's)")
    parser.add_argument(
        "--judge-base-url", metavar="URL", help="its OpenAI-compatible server (http://127.0.0.1:8000/v1)"
    )
    parser.add_argument(
        "--query-types",
        nargs="+",
        choices=["single_chunk", "multi_chunk", "comparison", "unanswerable"],
        help="the query types, in equal shares (default 0.4 single_chunk, 0.25 multi_chunk, 0.15 comparison, "
        "0.2 unanswerable)",
    )
    parser.add_argument("--seed", type=int, help="seeds the plan (default 0)")
    parser.add_argument(
        "--budget",
        nargs="+",
        type=budget_part,
        metavar="N|cost=X",
        help="a hard cap: N calls (re-asks and grounding checks count) and/or cost=X at the judge's prices",
    )
    parser.add_argument("--max-rounds", type=positive_int, help="candidates per question at most (default 3)")
    parser.add_argument("--persona", nargs="+", metavar="TEXT", help="who asks (one drawn per question)")
    parser.add_argument("--language", metavar="LANG", help="the language of the questions and answers")
    parser.add_argument("--style", metavar="TEXT", help="a style instruction for the questions")
    parser.add_argument("--doc-id", metavar="COL", help="the corpus's document id column (default doc_id)")
    parser.add_argument("--chunk-id", metavar="COL", help="the corpus's chunk id column (default chunk_id)")
    parser.add_argument("--text", metavar="COL", help="the corpus's text column (default text)")
    parser.add_argument("--cache", metavar="FILE", help="the reply cache file (default: the user cache)")
    parser.add_argument("--no-cache", action="store_true", help="no reply cache")
    parser.add_argument("--dry-run", action="store_true", help="write the plan and its expected cost; call nothing")
    parser.set_defaults(handler=run)
