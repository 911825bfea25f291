"""``ragframe annotations``: the scores of an eval output as Phoenix annotations or LangSmith feedback
(:func:`ragframe.to_annotations`), written as JSONL and optionally sent to a server."""

from __future__ import annotations

import argparse
import sys

from ragframe.cli.args import EXIT_CODES, SCORES_HELP, UsageError, add_metrics_argument, epilog, mapping
from ragframe.cli.inputs import read_argument
from ragframe.io.annotations import send_annotations, to_annotations, write_annotations

__all__ = ["add_parser", "run"]

_DESCRIPTION = """\
Turn the scores of SCORES (a 'ragframe eval' output folder of traces read with
rf.read_traces, or any scored frame carrying span ids) into the records Phoenix
or LangSmith ingest (ragframe.to_annotations): Phoenix span annotations (span_id,
name, annotator_kind, label, score, explanation) and document annotations
(document_position set: per-passage relevance), or LangSmith feedback (run_id,
key, score, value, comment). Writes them as JSONL to -o; with --endpoint also
POSTs them to that server. Prints how many records were written (and sent)."""


def run(args: argparse.Namespace) -> int:
    """Write (and send) the annotations of SCORES; 0."""
    if args.api_key_env and not args.endpoint:
        raise UsageError("--api-key-env is only used with --endpoint (no server to send the key to)")
    scores = read_argument(args.scores, "scores")
    records = to_annotations(
        scores,
        target=args.target,
        metrics=args.metrics,
        documents=args.documents or (),
        spans=dict(args.span or []),
        annotator_kinds=dict(args.annotator_kind or []),
    )
    write_annotations(records, args.output)
    line = f"{records.height} {args.target} annotation records written to {args.output}"
    if args.endpoint:
        sent = send_annotations(records, args.endpoint, target=args.target, api_key_env=args.api_key_env)
        line += f"; {sent} sent to {args.endpoint}"
    print(line, file=sys.stdout)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add ``ragframe annotations`` to the subcommands ``sub``."""
    parser = sub.add_parser(
        "annotations",
        help="scores as Phoenix annotations or LangSmith feedback (JSONL; optionally sent to a server)",
        description=_DESCRIPTION,
        epilog=epilog(SCORES_HELP, EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scores", metavar="SCORES", help="the scored frame, e.g. a 'ragframe eval' output folder")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the JSONL file to write")
    parser.add_argument(
        "--target", choices=("phoenix", "langsmith"), default="phoenix", help="the records' kind (default: %(default)s)"
    )
    add_metrics_argument(parser, "every ragframe score column")
    parser.add_argument(
        "--documents",
        nargs="+",
        action="extend",
        metavar="COL",
        help="list columns with one score per retrieved passage, sent as document annotations (phoenix)",
    )
    parser.add_argument(
        "--span",
        nargs="+",
        action="extend",
        type=mapping,
        metavar="METRIC=COL",
        help="the span-id column a score column goes on (default: retriever_span_id for metrics that read no "
        "answer, root_span_id for the others)",
    )
    parser.add_argument(
        "--annotator-kind",
        nargs="+",
        action="extend",
        type=mapping,
        metavar="NAME=KIND",
        help="an annotation's annotator kind, LLM, CODE or HUMAN (default: LLM for a judge's score, HUMAN for "
        "the qrels' relevance, CODE otherwise); Phoenix computes its retrieval metrics only from LLM document "
        "annotations: --annotator-kind relevance=LLM",
    )
    parser.add_argument("--endpoint", metavar="URL", help="also POST the records to this server's base URL")
    parser.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding the server's key (default: no key sent)",
    )
    parser.set_defaults(handler=run)
