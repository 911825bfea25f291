"""``ragframe trec``: trec_eval-compatible scoring of a TREC run file, printed in trec_eval's layout."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import polars as pl

from ragframe.cli.args import positive_int
from ragframe.exceptions import RagframeError
from ragframe.io.trec import read_qrels, read_trec_run
from ragframe.io.trec_eval_format import (
    DEFAULT_CUTOFFS,
    NICKNAMES,
    SUPPORTED_MEASURES,
    UnsupportedMeasureError,
    evaluate_run_options,
    format_trec_eval,
    parse_measures,
)
from ragframe.metrics.retrieval import evaluate_run, run_summary

__all__ = ["add_parser", "expand_measures", "run"]

_TREC_DESCRIPTION = """\
Score a TREC run against qrels and print trec_eval's output: lines
'measure<TAB>query<TAB>value' (measure padded to 22 characters, 4 decimals,
counts as integers), per-query lines (-q) first, then the 'all' lines.
Values equal trec_eval 10.0's for every measure listed below.

Note the argument order: RUN then QRELS (trec_eval takes QRELS then RUN)."""


def _trec_epilog() -> str:
    cut = ", ".join(f"{m} ({','.join(map(str, DEFAULT_CUTOFFS[m]))})" for m in DEFAULT_CUTOFFS)
    plain = ", ".join(m for m in SUPPORTED_MEASURES if m not in DEFAULT_CUTOFFS)
    paragraphs = [
        f"supported measures (trec_eval names): {plain}; with cutoffs (default cutoffs): {cut}.",
        f"nicknames: {', '.join(NICKNAMES)} (the supported part of trec_eval's sets).",
        "Other trec_eval measures (bpref, gm_map, iprec_at_recall, map_cut, ndcg with a gain map, ...) "
        "are rejected with exit code 2. trec_eval's -n, -J, -N, -R, -T, -Z are not available.",
        "exit codes: 0 ok, 2 usage error or unsupported measure, 3 input or runtime error (missing or "
        "unreadable input, or no query with both results and judgments), 130 interrupted (Ctrl-C). "
        "Every error is one line on stderr.",
    ]
    return "\n".join(textwrap.fill(p, width=79, break_on_hyphens=False) for p in paragraphs)


def _trec_measure(value: str) -> str:
    try:
        parse_measures([value])
    except UnsupportedMeasureError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _names_a_measure(value: str) -> bool:
    """A measure ragframe supports, or a trec_eval measure it does not (then -m's check says so); never a file."""
    if value.startswith("-") or Path(value).exists():
        return False
    try:
        parse_measures([value])
    except UnsupportedMeasureError as exc:
        return "is not a trec_eval measure" not in str(exc)
    return True


def expand_measures(argv: list[str]) -> list[str]:
    """``-m A B`` as ``-m A -m B``: measure names right after a ``-m`` value are measures too.

    trec_eval takes one measure per ``-m``; users also type several after one ``-m``
    (``ragframe trec run.txt qrels.txt -m ndcg_cut.10 map -q``), which argparse would read
    as extra positional arguments. A word after ``-m``'s value is a measure when it names
    one (a trec_eval measure, supported or not: ``-m``'s check then refuses the latter)
    and is not an existing file; anything else (a file, an option) ends the list.

    Parameters
    ----------
    argv : list of str
        The arguments after ``ragframe trec``.

    Returns
    -------
    list of str

    Examples
    --------
    >>> expand_measures(["run.txt", "qrels.txt", "-m", "ndcg_cut.10", "map", "-q"])
    ['run.txt', 'qrels.txt', '-m', 'ndcg_cut.10', '-m', 'map', '-q']
    >>> expand_measures(["-m", "map", "run.txt", "qrels.txt"])
    ['-m', 'map', 'run.txt', 'qrels.txt']
    """
    out: list[str] = []
    state = None  # "value": the next word is -m's value; "more": further measure names may follow
    for position, token in enumerate(argv):
        if token == "--":  # the end of the options: the rest is positional, as given
            return [*out, *argv[position:]]
        if state == "value":
            out.append(token)
            state = "more"
            continue
        if state == "more" and _names_a_measure(token):
            out += ["-m", token]
            continue
        state = None
        if token in ("-m", "--measure"):
            state = "value"
        elif (token.startswith("-m") and not token.startswith("--")) or token.startswith("--measure="):
            state = "more"  # -mmap, --measure=map: the value is attached
        out.append(token)
    return out


def _read_input(reader: Callable[[Path], pl.DataFrame], path: str, role: str) -> pl.DataFrame:
    """Read a run or qrels file; errors become a RagframeError naming the file (exit 3)."""
    p = Path(path)
    if not p.exists():
        raise RagframeError(f"{role} file not found: {path!r}")
    if p.is_dir():
        raise RagframeError(f"{role} file {path!r} is a directory")
    try:
        return reader(p)
    except RagframeError as exc:
        hint = ""
        if role == "run" and "malformed line" in str(exc):  # a qrels file has 4 fields: arguments swapped?
            hint = " (note: ragframe trec takes RUN then QRELS; trec_eval takes QRELS then RUN)"
        raise RagframeError(f"cannot read {role} file {path!r}: {exc}{hint}") from exc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise RagframeError(f"cannot read {role} file {path!r}: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    """Print trec_eval's output for RUN against QRELS; 0."""
    measures = parse_measures(args.measures)
    run = _read_input(read_trec_run, args.run, "run")
    qrels = _read_input(read_qrels, args.qrels, "qrels")
    per_query = evaluate_run(
        run,
        qrels,
        complete=args.complete,
        max_docs=args.max_docs,
        relevance_level=args.relevance_level,
        **evaluate_run_options(measures),
    )
    # trec_eval evaluates only queries with judgments (with -c, every judged query)
    per_query = per_query.filter(pl.col("query_id").is_in(qrels.get_column("query_id").unique().implode()))
    if per_query.height == 0:
        raise RagframeError(f"no queries with both results and relevance info (run {args.run!r}, qrels {args.qrels!r})")
    runid = run.get_column("tag")[-1] if run.height else ""
    text = format_trec_eval(per_query, run_summary(per_query), measures, runid=runid, query_lines=args.query)
    sys.stdout.write(text)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe trec`` to the subcommands ``sub``."""
    trec = sub.add_parser(
        "trec",
        help="trec_eval-compatible scoring of a TREC run file",
        description=_TREC_DESCRIPTION,
        epilog=_trec_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    trec.add_argument("run", metavar="RUN", help="TREC run file: 'qid Q0 docno rank score tag' lines (or .gz)")
    trec.add_argument("qrels", metavar="QRELS", help="TREC qrels file: 'qid iter docno rel' lines (or .gz)")
    trec.add_argument(
        "-m",
        "--measure",
        dest="measures",
        action="append",
        type=_trec_measure,
        metavar="MEASURE",
        help="measure to print, trec_eval spelling: map, P, P.5,10 (or P_5), ndcg_cut.10, official, all_trec ...; "
        "repeatable, and several may follow one -m (-m ndcg_cut.10 map); printed in trec_eval's order "
        "(default: official)",
    )
    trec.add_argument(
        "-q",
        "--query_eval_wanted",
        dest="query",
        action="store_true",
        help="also print each query's values, before the 'all' lines",
    )
    trec.add_argument(
        "-c",
        "--complete_rel_info_wanted",
        dest="complete",
        action="store_true",
        help="average over every query in QRELS; queries missing from RUN score 0",
    )
    trec.add_argument(
        "-M",
        "--Max_retrieved_per_topic",
        dest="max_docs",
        type=positive_int,
        metavar="N",
        help="keep at most N documents per query, after ranking by score (default: all)",
    )
    trec.add_argument(
        "-l",
        "--level_for_rel",
        dest="relevance_level",
        type=int,
        default=1,
        metavar="N",
        help="minimum judgement value of a relevant document (default: %(default)s)",
    )
    trec.set_defaults(handler=run)
