"""``ragframe trec``: a drop-in for trec_eval 10.0 (``[options] qrels results``), printed in its layout."""

from __future__ import annotations

import argparse
import gzip
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from ragframe.cli.args import positive_int
from ragframe.exceptions import RagframeError
from ragframe.io.trec import read_qrels, read_trec_run
from ragframe.io.trec_eval_format import (
    FORMAT_MEASURES,
    JUDGE_GROUP_MEASURES,
    MEASURES,
    NICKNAMES,
    PREFERENCE_MEASURES,
    SUPPORTED_MEASURES,
    OutputMeasure,
    format_trec_eval,
    is_measure_name,
    output_measures,
    parse_measures,
    qrels_as_prefs,
    read_prefs,
    selects,
)
from ragframe.kernels.trec_measures import TrecOptions
from ragframe.kernels.trec_prefs import preference_measures
from ragframe.run.trec_run import trec_eval_run

__all__ = ["add_parser", "expand_measures", "run", "argument_order", "judge_group_run"]

_TREC_DESCRIPTION = """\
Score a TREC run against qrels and print trec_eval 10.0's output, byte for byte:
lines 'measure<TAB>query<TAB>value' (measure padded to 22 characters, 4
decimals, counts as integers), per-query lines (-q) first, then the 'all' lines.
Arguments in trec_eval's order: QRELS then RESULTS (options anywhere)."""

_MISSING_ZSCORE = -1000000.0  # trec_eval's value for a (query, measure) missing from the -Z file


def _trec_epilog() -> str:
    paragraphs = [
        f"measures (trec_eval names, in its order): {', '.join(SUPPORTED_MEASURES)}; nicknames: "
        f"{', '.join(NICKNAMES)}. Parameters as trec_eval takes them: P.5,10 (or P_5), iprec_at_recall..25,.5, "
        "Rprec_mult.0.5,2, utility.2,-1,0,0, 11pt_avg..25,.5,.75, ndcg.1=3,2=9, rbp.p=0.8, relstring.20.",
        "Judgment groups: -R qrels_jg reads QRELS as 'qid group docno rel' lines and computes -m qrels_jg "
        "(map_avgjg, P_avgjg, Rprec_mult_avgjg: each query's value averaged over its groups), and only those.",
        "Preferences: -R prefs reads QRELS as 'qid group subgroup docno level' lines, -R qrels_prefs a qrels file "
        "as preferences (the iteration field is the group); both compute -m all_prefs / prefs (prefs_*), and only "
        "those.",
        "Not implemented (exit code 3, naming it): yaap, and trec_eval's -D, -o, -v.",
        "A query judged in QRELS and missing from RESULTS is skipped without -c (exit 0, as trec_eval 9 does; "
        "trec_eval 10.0 exits 4); docs/metrics.md lists the cases where trec_eval 10.0 is wrong and ragframe differs.",
        "Argument order: ragframe trec took RUN then QRELS before; that order still works when the files show it "
        "(the first file has run lines of 6 or more fields and the second qrels lines of 4), with a deprecation "
        "warning on stderr. Otherwise the first file is read as QRELS.",
        "exit codes: 0 ok, 2 usage error (bad flag or value, a name that is not a trec_eval measure, malformed "
        "parameters), 3 input or runtime error (missing or unreadable input, no query with both results and "
        "judgments, a trec_eval measure, format or option ragframe does not implement), 130 interrupted (Ctrl-C). "
        "Every error is one line on stderr.",
    ]
    return "\n".join(textwrap.fill(p, width=79, break_on_hyphens=False) for p in paragraphs)


#: trec_eval's options that ragframe trec knows and does not implement: what each does in trec_eval
_NOT_IMPLEMENTED_OPTIONS = {
    "-D": "debug output",
    "-o": "the obsolete old output format",
    "-v": "print trec_eval's version",
}


class _NotImplementedOption(argparse.Action):
    """A trec_eval option ragframe trec does not implement: exit 3 naming it, before anything is read."""

    def __call__(self, parser, namespace, values, option_string=None):
        flag = self.option_strings[0]
        parser.exit(
            3,
            f"ragframe trec: error: trec_eval's {option_string or flag} ({_NOT_IMPLEMENTED_OPTIONS[flag]}) is not "
            "implemented by ragframe trec\n",
        )


def _names_a_measure(value: str) -> bool:
    """A trec_eval measure name (implemented or not: -m's check then says which); never a file or an option."""
    return not value.startswith("-") and not Path(value).exists() and is_measure_name(value)


def expand_measures(argv: list[str]) -> list[str]:
    """``-m A B`` as ``-m A -m B``: measure names right after a ``-m`` value are measures too.

    trec_eval takes one measure per ``-m``; users also type several after one ``-m``
    (``ragframe trec qrels.txt run.txt -m ndcg_cut.10 map -q``), which argparse would read
    as extra positional arguments. A word after ``-m``'s value is a measure when it names
    a trec_eval measure or nickname and is not an existing file; anything else (a file, an
    option) ends the list.

    Parameters
    ----------
    argv : list of str
        The arguments after ``ragframe trec``.

    Returns
    -------
    list of str

    Examples
    --------
    >>> expand_measures(["qrels.txt", "run.txt", "-m", "ndcg_cut.10", "map", "-q"])
    ['qrels.txt', 'run.txt', '-m', 'ndcg_cut.10', '-m', 'map', '-q']
    >>> expand_measures(["-m", "map", "qrels.txt", "run.txt"])
    ['-m', 'map', 'qrels.txt', 'run.txt']
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


def _first_fields(path: str) -> int | None:
    """Fields on the first data line of a file (None when it cannot be read or has no data line)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
        if head.startswith(b"\x1f\x8b"):
            with gzip.open(path, "rb") as handle:
                head = handle.read(1 << 16)
    except (OSError, EOFError):
        return None
    for line in head.split(b"\n")[:-1] if b"\n" in head else [head]:
        text = line.strip()
        if text and not text.startswith(b"#"):
            return len(text.split())
    return None


def argument_order(first: str, second: str) -> tuple[str, str, bool]:
    """``(qrels, run, old_order)``: trec_eval's order, or ragframe's former RUN QRELS order when the files show it.

    The former order is recognised only when it is unambiguous: the first file's first data
    line has 6 or more fields (a run line) and the second's exactly 4 (a qrels line).

    Examples
    --------
    >>> argument_order("no-such-qrels", "no-such-run")
    ('no-such-qrels', 'no-such-run', False)
    """
    if (_first_fields(first) or 0) >= 6 and _first_fields(second) == 4:
        return second, first, True
    return first, second, False


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
        if "malformed line" in str(exc):
            hint = " (note: ragframe trec takes QRELS then RESULTS, as trec_eval does)"
        raise RagframeError(f"cannot read {role} file {path!r}: {exc}{hint}") from exc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise RagframeError(f"cannot read {role} file {path!r}: {exc}") from exc


def _read_zscores(path: str) -> pl.DataFrame:
    """trec_eval ``-Z`` file: lines ``qid measure mean stddev`` -> a frame ``query_id, measure, mean, stddev``."""
    p = Path(path)
    if not p.is_file():
        raise RagframeError(f"zscores file not found: {path!r}")
    lines = pl.Series("line", p.read_text(encoding="utf-8").splitlines(), dtype=pl.String)
    numbered = pl.DataFrame({"line_no": np.arange(1, lines.len() + 1), "line": lines})
    kept = numbered.filter((pl.col("line").str.strip_chars() != "") & ~pl.col("line").str.starts_with("#"))
    parts = kept.select("line_no", "line", pl.col("line").str.extract_all(r"\S+").alias("f"))
    bad = parts.filter(pl.col("f").list.len() != 4)
    table = parts.filter(pl.col("f").list.len() == 4).select(
        "line_no",
        "line",
        pl.col("f").list.get(0).alias("query_id"),
        pl.col("f").list.get(1).alias("measure"),
        pl.col("f").list.get(2).cast(pl.Float64, strict=False).alias("mean"),
        pl.col("f").list.get(3).cast(pl.Float64, strict=False).alias("stddev"),
    )
    bad = pl.concat(
        [
            bad.select("line_no", "line"),
            table.filter(pl.col("mean").is_null() | pl.col("stddev").is_null()).select("line_no", "line"),
        ]
    ).sort("line_no")
    if bad.height:
        line_no, line = bad.row(0)
        raise RagframeError(
            f"cannot read zscores file {path!r}: line {line_no} is not 'qid measure mean stddev': {line[:200]!r}"
        )
    return table.select("query_id", "measure", "mean", "stddev").unique(["query_id", "measure"], keep="first")


def _to_zscores(per_query: pl.DataFrame, printed: list[OutputMeasure], zscores: pl.DataFrame) -> pl.DataFrame:
    """Each (query, measure) value as trec_eval -Z prints it: (value - mean) / stddev from the file.

    A (query, measure) missing from the file, or with stddev 0 and a value other than the
    mean, reads -1000000 (trec_eval's MISSING_ZSCORE_VALUE).
    """
    names = [m.name for m in printed if m.kind in ("count", "float", "gm")]
    gm = [m.name for m in printed if m.kind == "gm"]
    if not names:
        return per_query
    # trec_eval keeps the logarithm of gm_* per query; the -Z file speaks of that
    wide = per_query.select(
        pl.col("query_id").cast(pl.String),
        *(
            pl.col(n).cast(pl.Float64).clip(lower_bound=0.00001).log() if n in gm else pl.col(n).cast(pl.Float64)
            for n in names
        ),
    )
    long = wide.unpivot(index="query_id", on=names, variable_name="measure", value_name="value")
    joined = long.join(zscores, on=["query_id", "measure"], how="left", maintain_order="left")
    z = (
        pl.when(pl.col("stddev") != 0)
        .then((pl.col("value") - pl.col("mean")) / pl.col("stddev"))
        .when(pl.col("value") == pl.col("mean"))
        .then(0.0)
        .otherwise(_MISSING_ZSCORE)
        .fill_null(_MISSING_ZSCORE)
    )
    back = joined.with_columns(z.alias("value")).pivot("measure", index="query_id", values="value")
    ids = per_query.select(pl.col("query_id").cast(pl.String).alias("_key"))
    values = ids.join(back, left_on="_key", right_on="query_id", how="left", maintain_order="left")
    return per_query.with_columns(values.select(names))


def _zscore_text(
    per_query: pl.DataFrame, printed: list[OutputMeasure], *, runid: str, query_lines: bool, summary: bool
) -> str:
    """trec_eval -Z's layout: 'Z' + name, every number with 4 decimals; counts summed, gm_* as exp(mean)."""
    lines = []
    frame = per_query
    n = frame.height
    if query_lines:
        per_row = [m for m in printed if m.kind in ("count", "float", "string")]
        for row in frame.iter_rows(named=True):  # printing: the -Z path is a small table
            for m in per_row:
                if m.kind == "string":
                    lines.append(f"{m.name:<22}\t{row['query_id']}\t'{row[m.name]}'\n")
                else:
                    lines.append(f"Z{m.name:<22}\t{row['query_id']}\t{row[m.name]:6.4f}\n")
    if summary:
        for m in printed:
            if m.kind == "runid":
                lines.append(f"{'runid':<22}\tall\t{runid}\n")
                continue
            if m.kind == "string":
                continue
            if m.kind == "num_q":
                value = float(n)
            else:
                total = float(np.add.accumulate(frame.get_column(m.name).to_numpy())[-1]) if n else 0.0
                value = total if m.kind == "count" else np.exp(total / n) if m.kind == "gm" else total / n
            lines.append(f"Z{m.name:<22}\tall\t{value:6.4f}\n")
    return "".join(lines)


#: Joins a query id and a judgment group into the id of the (query, group) pair: sorts as (query, group).
_GROUP_SEPARATOR = "\x00"


def judge_group_run(run_frame: pl.DataFrame, qrels: pl.DataFrame, options: TrecOptions, **kwargs) -> pl.DataFrame:
    """trec_eval ``-R qrels_jg``: each query's measures averaged over its judgment groups.

    The qrels' second column (``iteration``) names the judgment group. Every (query, group)
    pair is scored as a query of its own (the run's ranking of the query against that group's
    judgments) by :func:`~ragframe.run.trec_run.trec_eval_run`; a query's value is the
    sum over its groups, in group order, divided by their number (trec_eval's ``*_avgjg``).

    Examples
    --------
    >>> from ragframe.io.trec_eval_format import parse_measures
    >>> run = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    >>> qrels = pl.DataFrame({"query_id": ["q", "q"], "iteration": ["u1", "u2"], "doc_id": ["a", "b"],
    ...                       "relevance": [1, 1]})
    >>> judge_group_run(run, qrels, TrecOptions(tuple(parse_measures(["map_avgjg"])))).row(0)
    ('q', 0.75)
    """
    groups = qrels.select("query_id", "iteration").unique(maintain_order=True)
    pair = pl.concat_str([pl.col("query_id"), pl.lit(_GROUP_SEPARATOR), pl.col("iteration")]).alias("query_id")
    pairs_run = run_frame.join(groups, on="query_id", how="inner", maintain_order="left").with_columns(pair)
    per_pair = trec_eval_run(pairs_run, qrels.with_columns(pair), options, **kwargs)
    names = [c for c in per_pair.columns if c != "query_id"]
    query = pl.col("query_id").str.split(_GROUP_SEPARATOR).list.first()
    # summed one group after another, as trec_eval accumulates them, then divided by their number
    summed = per_pair.group_by(query, maintain_order=True).agg(
        *(pl.col(name).cum_sum().last() for name in names), pl.len().alias("_groups")
    )
    return summed.select("query_id", *(pl.col(name) / pl.col("_groups") for name in names))


def _check_format(rel_format: str, measures: list) -> None:
    """trec_eval computes each measure from one rel_info format (-R) only: the others are refused."""
    allowed = FORMAT_MEASURES[rel_format]
    special = {m.root for m in measures} & (JUDGE_GROUP_MEASURES | PREFERENCE_MEASURES)
    if allowed is None:
        if special:
            named = ", ".join(
                f"{root} (-R {'qrels_jg' if root in JUDGE_GROUP_MEASURES else 'prefs or qrels_prefs'})"
                for root in sorted(special)
            )
            raise RagframeError(f"measures need another rel_info format: {named}")
        return
    other = [m.root for m in measures if m.root not in allowed]
    if other:
        choices = sorted(allowed, key=list(MEASURES).index)
        raise RagframeError(f"-R {rel_format}: measures {other} need -R qrels; with {rel_format}: {choices}")


def _read_prefs_input(rel_format: str, path: str) -> pl.DataFrame:
    if rel_format == "prefs":
        return _read_input(read_prefs, path, "prefs")
    return qrels_as_prefs(_read_input(read_qrels, path, "qrels"))


def run(args: argparse.Namespace) -> int:
    """Print trec_eval's output for RESULTS against QRELS; 0."""
    measures = parse_measures(args.measures)
    printed = output_measures(measures, runid=selects(args.measures, "runid"), num_q=selects(args.measures, "num_q"))
    _check_format(args.rel_format, measures)
    qrels_path, run_path, old_order = argument_order(args.first, args.second)
    if old_order:
        print(
            f"ragframe trec: warning: RUN then QRELS ({args.first!r} is a run, {args.second!r} qrels) is deprecated; "
            "write QRELS then RESULTS, as trec_eval takes them",
            file=sys.stderr,
        )
    zscores = _read_zscores(args.zscores) if args.zscores else None
    run_frame = _read_input(read_trec_run, run_path, "results")
    if args.rel_format in ("prefs", "qrels_prefs"):
        prefs = _read_prefs_input(args.rel_format, qrels_path)
        per_query = preference_measures(run_frame, prefs, max_docs=args.max_docs, complete=args.complete)
    else:
        qrels = _read_input(read_qrels, qrels_path, "qrels")
        options = TrecOptions(tuple(measures), judged_only=args.judged_only, num_docs=args.num_docs)
        score = judge_group_run if args.rel_format == "qrels_jg" else trec_eval_run
        per_query = score(
            run_frame,
            qrels,
            options,
            relevance_level=args.relevance_level,
            complete=args.complete,
            max_docs=args.max_docs,
        )
    if per_query.height == 0:
        raise RagframeError(
            f"no queries with both results and relevance info (results {run_path!r}, qrels {qrels_path!r})"
        )
    runid = run_frame.get_column("tag")[-1] if run_frame.height else ""
    if zscores is not None:
        per_query = _to_zscores(per_query, printed, zscores)
        text = _zscore_text(per_query, printed, runid=runid, query_lines=args.query, summary=args.summary)
    else:
        text = format_trec_eval(per_query, printed, runid=runid, query_lines=args.query, summary=args.summary)
    sys.stdout.write(text)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe trec`` to the subcommands ``sub``."""
    trec = sub.add_parser(
        "trec",
        help="trec_eval 10.0 drop-in: score a TREC run against qrels",
        description=_TREC_DESCRIPTION,
        epilog=_trec_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    trec.add_argument("first", metavar="QRELS", help="TREC qrels file: 'qid iter docno rel' lines (or .gz)")
    trec.add_argument("second", metavar="RESULTS", help="TREC run file: 'qid Q0 docno rank score tag' lines (or .gz)")
    trec.add_argument(
        "-m",
        "--measure",
        dest="measures",
        action="append",
        metavar="MEASURE",
        help="measure to print, trec_eval spelling: map, P.5,10 (or P_5), iprec_at_recall..1,.5, official, "
        "all_trec ...; repeatable, and several may follow one -m (-m ndcg_cut.10 map); printed in trec_eval's "
        "order (default: official)",
    )
    trec.add_argument(
        "-q", "--query_eval_wanted", dest="query", action="store_true", help="also print each query's values first"
    )
    trec.add_argument(
        "-c",
        "--complete_rel_info_wanted",
        dest="complete",
        action="store_true",
        help="average over every query in QRELS; a query missing from RESULTS is scored as trec_eval scores it",
    )
    trec.add_argument("-n", "--nosummary", dest="summary", action="store_false", help="do not print the 'all' lines")
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
    trec.add_argument(
        "-J",
        "--Judged_docs_only",
        dest="judged_only",
        action="store_true",
        help="drop every retrieved document that is not judged before computing (trec_eval: DO NOT USE lightly)",
    )
    trec.add_argument(
        "-N",
        "--Number_docs_in_coll",
        dest="num_docs",
        type=int,
        default=0,
        metavar="N",
        help="documents in the collection, for utility's fourth coefficient (default: %(default)s)",
    )
    trec.add_argument(
        "-R",
        "--Rel_info_format",
        dest="rel_format",
        choices=("qrels", "prefs", "qrels_prefs", "qrels_jg"),
        default="qrels",
        help="format of QRELS: 'qrels'; 'qrels_jg' (judgment groups) for -m qrels_jg; 'prefs' or 'qrels_prefs' "
        "(preferences) for -m all_prefs",
    )
    trec.add_argument(
        "-T",
        "--Results_format",
        dest="results_format",
        choices=("trec_results",),
        default="trec_results",
        help="format of RESULTS (trec_eval's only one)",
    )
    trec.add_argument(
        "-Z",
        "--Zscore",
        dest="zscores",
        metavar="FILE",
        help="print z-scores ('Z' + measure): (value - mean) / stddev, from FILE's 'qid measure mean stddev' lines",
    )
    for flag, long, takes_value in (
        ("-D", "--Debug_level", True),
        ("-o", "--Output_old_results_format", False),
        ("-v", "--version", False),
    ):
        trec.add_argument(
            flag,
            long,
            action=_NotImplementedOption,
            nargs=None if takes_value else 0,
            metavar="N" if takes_value else None,
            help=f"trec_eval's {_NOT_IMPLEMENTED_OPTIONS[flag]}: not implemented (exit code 3)",
        )
    trec.set_defaults(handler=run)
