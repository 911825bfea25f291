"""The ``ragframe`` command line: the parser, the entry point and its exit codes.

Commands (a module each in :mod:`ragframe.cli`)
-----------------------------------------------
eval
    :func:`ragframe.evaluate_parquet`: score Parquet logs in batches into a Parquet
    dataset with rejects and a summary; resumable.
demo
    Score the bundled TREC DL 2019 example (BM25 and a GPT-3.5 rerank of it): a table
    of ranking metrics, a paired comparison of the two runs with p-values, and a
    summary of the per-query scores; then the bundled ARES RAG log: heuristic scores,
    agreement with its human labels, and an HTML report (``OUT/report.html``).
trec
    trec_eval-compatible scoring of a TREC run file against a qrels file, printed
    in trec_eval's layout (see :mod:`ragframe.io.trec_eval_format`).
estimate
    :func:`ragframe.estimate`: a rate from a few human labels and a score on every row, with
    a prediction-powered interval next to the labels-alone one.
summary
    :func:`ragframe.summarize` of a scored frame (Parquet file, folder or glob; CSV or
    JSON file), as a table, CSV, JSON or Markdown.
compare
    :func:`ragframe.stats.compare` of two scored frames: paired tests per metric.
report
    :func:`ragframe.report`: a self-contained HTML report of a scored frame (summary,
    plots, comparison, agreement with labels, worst rows); needs the ``report`` extra.
generate
    :func:`ragframe.generate_testset`: a test set (questions, references, facts, qrels)
    from a corpus of chunks, written as Parquet.
gate
    A CI check: fails (exit code 1) when a metric regressed against a baseline (larger
    than a threshold and significant, see :func:`ragframe.stats.regressions`) or when a
    metric's mean is below a floor.
annotations
    :func:`ragframe.to_annotations` of an eval output: Phoenix span and document
    annotations or LangSmith feedback as JSONL, optionally sent to a server.

Exit codes (:data:`EXIT_CODES`): 0 ok, 1 the gate failed, 2 usage error, 3 input or
runtime error (a missing, unreadable or unwritable file, a frame without the columns
the command needs, a failed computation), 130 interrupted (Ctrl-C). Every error is one
line on stderr, without a traceback; only a bug (an exception ragframe does not expect)
prints its traceback, then exits with 3.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

import polars as pl

from ragframe.cli.args import UsageError, flag_spelling, speak_in_flags
from ragframe.exceptions import InvalidParameterError, RagframeError
from ragframe.secrets import scrub

__all__ = ["EXIT_CODES", "build_parser", "main"]

#: The exit codes of the ``ragframe`` command.
EXIT_CODES = {"ok": 0, "gate failed": 1, "usage": 2, "error": 3, "interrupted": 130}

# paragraphs of polars error messages that dump a query plan or a context stack: not for one line
_POLARS_DUMPS = ("Resolved plan until failure", "This error occurred with the following context stack")


#: The commands, in --help's order: each a module of ragframe.cli, imported when its parser is built
COMMANDS = ("demo", "eval", "trec", "summary", "compare", "gate", "report", "estimate", "generate", "annotations")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``ragframe`` command.

    ``only`` builds it with that one command (``ragframe trec`` starts without importing the
    modules of the other commands: a trec_eval drop-in must start fast).

    Examples
    --------
    >>> build_parser().parse_args(["summary", "scores.parquet"]).scores
    'scores.parquet'
    """
    parser = argparse.ArgumentParser(
        prog="ragframe",
        description="Evaluate RAG systems as tables.",
        epilog="exit codes: 0 ok, 1 gate failed, 2 usage error, 3 input or runtime error, 130 interrupted; "
        "errors are one line on stderr. 'ragframe COMMAND --help' for more.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"ragframe.cli.{name}").add_parser(sub)
    for command_parser in sub.choices.values():  # the library's errors, spelled in this command's flags
        command_parser.set_defaults(flag_spelling=flag_spelling(command_parser))
    return parser


def _expand(argv: list[str]) -> list[str]:
    """``argv`` with the command's own rewriting: ``trec -m A B`` is ``trec -m A -m B``."""
    command = _command(argv)
    if command is not None and argv[command] == "trec":
        from ragframe.cli.trec import expand_measures

        return [*argv[: command + 1], *expand_measures(argv[command + 1 :])]
    return argv


def _command(argv: list[str]) -> int | None:
    """The position of the command word in ``argv`` (the first word that is not an option)."""
    return next((i for i, token in enumerate(argv) if not token.startswith("-")), None)


def _one_line(text: str) -> str:
    """An error message on one line: whitespace runs (newlines too) become one space; polars' plan dumps go.

    Examples
    --------
    >>> _one_line('unable to find column "b"\\n\\nDid you mean "a"?')
    'unable to find column "b" Did you mean "a"?'
    """
    for marker in _POLARS_DUMPS:
        text = text.split(marker, 1)[0]
    return " ".join(text.split())


def _os_error_text(exc: OSError) -> str:
    """``strerror: 'file'`` for an OSError from the system, else its message."""
    if exc.strerror and exc.filename is not None:
        files = repr(str(exc.filename))
        if exc.filename2 is not None:
            files += f" -> {str(exc.filename2)!r}"
        return f"{exc.strerror}: {files}"
    return str(exc)


def _error(message: str, code: int) -> int:
    print(scrub(_one_line(message)), file=sys.stderr)  # whatever raised it, no key on stderr
    return code


def _run(args: argparse.Namespace) -> int:
    """Run the command's handler; map every error to its exit code and one line on stderr."""
    spelled = getattr(args, "flag_spelling", {})
    try:
        return int(args.handler(args))
    except UsageError as exc:
        return _error(f"ragframe {args.command}: error: {speak_in_flags(exc, spelled)}", EXIT_CODES["usage"])
    except InvalidParameterError as exc:  # a parameter the command line passed through (e.g. trec -l -1)
        return _error(f"ragframe {args.command}: error: {speak_in_flags(exc, spelled)}", EXIT_CODES["usage"])
    except RagframeError as exc:
        return _error(f"ragframe: error: {speak_in_flags(exc, spelled)}", EXIT_CODES["error"])
    except pl.exceptions.PolarsError as exc:
        return _error(f"ragframe: error: {exc}", EXIT_CODES["error"])
    except OSError as exc:
        return _error(f"ragframe: error: {_os_error_text(exc)}", EXIT_CODES["error"])
    except (Exception, pl.exceptions.PanicException) as exc:  # a bug: keep its traceback for the report
        print(scrub(traceback.format_exc()), end="", file=sys.stderr)
        return _error(f"ragframe: internal error: {type(exc).__name__}: {exc}", EXIT_CODES["error"])


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``ragframe`` command; returns the exit code (see :data:`EXIT_CODES`).

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``ragframe``; default: ``sys.argv[1:]``.

    Returns
    -------
    int
        0 ok, 1 the gate failed, 2 usage error, 3 input or runtime error, 130 interrupted.

    Examples
    --------
    >>> main(["summary", "no-such-file.parquet"])  # prints "ragframe: error: scores: no such file ..." on stderr
    3
    """
    try:
        try:
            words = _expand(sys.argv[1:] if argv is None else list(argv))
            command = _command(words)
            # trec: only its own parser (a usage error then prints 'usage: ragframe trec ...' all the same)
            only = "trec" if command == 0 and words[0] == "trec" else None
            args = build_parser(only).parse_args(words)
        except SystemExit as exc:  # argparse printed the usage and the error (or the help)
            return int(exc.code or 0)
        return _run(args)
    except KeyboardInterrupt:
        return _error("ragframe: interrupted", EXIT_CODES["interrupted"])
    finally:
        _flush_stdout()


def _flush_stdout() -> None:
    """Flush stdout; a reader that went away (``ragframe ... | head``) is not an error of ours."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        _silence_stdout()


def _silence_stdout() -> None:
    # point stdout at /dev/null so that the interpreter's last flush does not fail again
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
