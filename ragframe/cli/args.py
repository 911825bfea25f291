"""Argument types, shared flags and help texts of the ``ragframe`` commands.

Argument types turn a command-line string into a value or raise
:class:`argparse.ArgumentTypeError` (argparse then prints the usage and exits with 2).
:class:`UsageError` is for a command line that parses but cannot run (also exit code 2).
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Mapping
from typing import Any

from ragframe.cli.format import FORMATS
from ragframe.exceptions import RagframeError, UsageError
from ragframe.extras import require
from ragframe.stats.options import DEFAULTS
from ragframe.stats.paired_tests import TESTS

__all__ = [
    "EXIT_CODES",
    "GATE_EXIT_CODES",
    "SCORES_HELP",
    "UsageError",
    "add_format_argument",
    "add_metrics_argument",
    "add_test_arguments",
    "epilog",
    "flag_spelling",
    "floor_value",
    "mapping",
    "non_negative_float",
    "non_negative_int",
    "paired_test_options",
    "positive_int",
    "probability",
    "speak_in_flags",
    "unit_interval",
]

#: The exit codes of every command but ``gate`` (which adds 1, "the gate failed").
EXIT_CODES = (
    "exit codes: 0 ok, 2 usage error (bad flag or value), 3 input or runtime error (missing, unreadable or "
    "unwritable file, a frame without the columns needed, a failed computation), 130 interrupted (Ctrl-C). "
    "Every error is one line on stderr."
)
GATE_EXIT_CODES = (
    "exit codes: 0 every check passed, 1 the gate failed (a regression or a value below a floor), "
    "2 usage error (bad flag or value, unknown metric in --min), 3 input or runtime error (missing or "
    "unreadable file, a frame without the columns needed, a failed computation), 130 interrupted (Ctrl-C). "
    "Every error is one line on stderr."
)
SCORES_HELP = (
    "scored frames: a Parquet file, a folder (every *.parquet file under it, recursively), a glob "
    "('runs/*.parquet'; quote it), or a URL polars can scan; also a .csv file or a .json file holding a list of "
    "records. Score columns are the ones ragframe writes (ndcg_at_10, mrr, faithfulness, composite_score, ...) "
    "unless --metrics names others."
)
_CORRECTION_CHOICES = ("holm", "bonferroni", "fdr_bh", "none")


def read_toml(path: str) -> dict[str, Any]:
    """The table of the TOML config file ``path`` (tomllib, or tomli on Python 3.10); a usage error when invalid."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = require("cli", "tomli", what="reading a TOML config on Python 3.10")
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"config file {path!r} not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"config file {path!r} is not valid TOML: {exc}") from exc


def epilog(*paragraphs: str) -> str:
    """Paragraphs wrapped at 79 columns, for a ``RawDescriptionHelpFormatter`` epilog."""
    return "\n\n".join(textwrap.fill(p, width=79, break_on_hyphens=False) for p in paragraphs)


# ----------------------------------------------------------------------------- argument types


def positive_int(value: str) -> int:
    """An integer >= 1.

    Examples
    --------
    >>> positive_int("3")
    3
    """
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, found {value!r}")
    return number


def non_negative_int(value: str) -> int:
    """An integer >= 0.

    Examples
    --------
    >>> non_negative_int("0")
    0
    """
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, found {value!r}")
    return number


def probability(value: str) -> float:
    """A number strictly between 0 and 1.

    Examples
    --------
    >>> probability("0.05")
    0.05
    """
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not 0.0 < number < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (exclusive), found {value!r}")
    return number


def unit_interval(value: str) -> float:
    """A number between 0 and 1, both included.

    Examples
    --------
    >>> unit_interval("0")
    0.0
    """
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not 0.0 <= number <= 1.0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, found {value!r}")
    return number


def non_negative_float(value: str) -> float:
    """A number >= 0 (not NaN).

    Examples
    --------
    >>> non_negative_float("0.1")
    0.1
    """
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not number >= 0.0:  # also rejects nan
        raise argparse.ArgumentTypeError(f"expected a number >= 0, found {value!r}")
    return number


def floor_value(value: str) -> tuple[str, float]:
    """``METRIC=VALUE``, the gate's floor.

    Examples
    --------
    >>> floor_value("faithfulness=0.7")
    ('faithfulness', 0.7)
    """
    metric, sep, number = value.partition("=")
    try:
        bound = float(number)
    except ValueError:
        bound = float("nan")
    if not sep or not metric.strip() or bound != bound:
        raise argparse.ArgumentTypeError(f"expected METRIC=VALUE (for example faithfulness=0.7), found {value!r}")
    return metric.strip(), bound


def mapping(value: str) -> tuple[str, str]:
    """``ROLE=COLUMN``, a column mapping of ``ragframe eval``.

    Examples
    --------
    >>> mapping("answer=response")
    ('answer', 'response')
    """
    role, sep, name = value.partition("=")
    if not sep or not role or not name:
        raise argparse.ArgumentTypeError(f"expected ROLE=COLUMN, found {value!r}")
    return role.strip(), name.strip()


# ----------------------------------------------------------------------------- shared flags


def add_format_argument(parser: argparse.ArgumentParser) -> None:
    """``--format table|csv|json|markdown``."""
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="output: 'table' (aligned columns, floats with 4 decimals, nulls as '-'), 'csv' and 'json' (a list "
        "of records; both with full precision, nulls empty / null), 'markdown' (a pipe table, 4 decimals) "
        "(default: %(default)s)",
    )


def add_metrics_argument(parser: argparse.ArgumentParser, default: str) -> None:
    """``--metrics M [M ...]`` (repeatable)."""
    parser.add_argument(
        "--metrics",
        nargs="+",
        action="extend",
        metavar="METRIC",
        help=f"score columns to use, one or more (default: {default})",
    )


def add_test_arguments(parser: argparse.ArgumentParser) -> None:
    """The paired-test flags of ``compare`` and ``gate``: --on, --test, --alpha, --correction, --how, --seed,
    --n-resamples."""
    parser.add_argument(
        "--on",
        nargs="+",
        action="extend",
        metavar="COL",
        help="sample id column(s) that pair the rows of the two frames; unique and non-null (default: id)",
    )
    parser.add_argument(
        "--test",
        choices=TESTS,
        default=DEFAULTS.test,
        help="paired test: 't' (Student t on the differences), 'wilcoxon' (signed-rank), 'permutation' "
        "(sign-flip test of the mean difference), 'bootstrap' (percentile bootstrap of the mean difference) "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--alpha",
        type=probability,
        default=DEFAULTS.alpha,
        help="significance level of the adjusted p-values; the interval of the difference covers 1 - alpha "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--correction",
        choices=_CORRECTION_CHOICES,
        default=DEFAULTS.correction,
        help="multiple-testing correction over every metric (and slice) of the run (default: %(default)s)",
    )
    parser.add_argument(
        "--how",
        choices=("error", "inner"),
        default=DEFAULTS.how,
        help="ids present in one frame only: 'error' stops with exit code 3 and names some of them, 'inner' "
        "leaves them out (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=DEFAULTS.seed,
        metavar="N",
        help="random seed of the permutation and bootstrap tests (default: %(default)s)",
    )
    parser.add_argument(
        "--n-resamples",
        type=positive_int,
        default=DEFAULTS.n_resamples,
        metavar="N",
        help="resamples of the permutation and bootstrap tests; the permutation test is exact when "
        "2^pairs <= N (default: %(default)s)",
    )


def paired_test_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`ragframe.stats.compare` given by :func:`add_test_arguments`' flags."""
    return {
        "on": args.on or DEFAULTS.on,
        "test": args.test,
        "alpha": args.alpha,
        "correction": None if args.correction == "none" else args.correction,
        "how": args.how,
        "n_resamples": args.n_resamples,
        "seed": args.seed,
    }


# ----------------------------------------------------------------------------- errors in the command's words


def flag_spelling(parser: argparse.ArgumentParser) -> dict[str, tuple[str, str, str]]:
    """How each Python parameter of the library is spelled as a flag of ``parser``'s command.

    A flag's ``dest`` names the parameter (``--batch-rows`` is ``batch_rows``; ``--no-resume``
    is ``resume``, negated); the parser's ``flag_aliases`` default maps other parameter names
    to a dest (``ragframe eval`` gives ``{"judge": "judge_model"}``).

    Returns
    -------
    dict of str to (str, str, str)
        Parameter name -> (kind, flag, metavar); kind is ``"on"`` (a ``store_true`` flag),
        ``"off"`` (a ``--no-X`` flag of parameter X) or ``"value"``.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> _ = parser.add_argument("--no-resume", action="store_true")
    >>> _ = parser.add_argument("--keep", nargs="+", metavar="COL")
    >>> flag_spelling(parser)
    {'resume': ('off', '--no-resume', ''), 'keep': ('value', '--keep', 'COL ...')}
    """
    spelling: dict[str, tuple[str, str, str]] = {}
    for action in parser._actions:
        long_flags = [o for o in action.option_strings if o.startswith("--")]
        if not long_flags or isinstance(action, argparse._HelpAction):
            continue
        flag = long_flags[0]
        if isinstance(action, argparse._StoreTrueAction):
            negated = action.dest.startswith("no_")
            spelling[action.dest.removeprefix("no_")] = ("off" if negated else "on", flag, "")
            continue
        metavar = action.metavar if action.metavar is not None else action.dest.upper()
        shown = " ".join(metavar) if isinstance(metavar, tuple) else metavar
        if action.nargs in ("+", "*"):
            shown += " ..."
        spelling[action.dest] = ("value", flag, shown)
    for name, dest in (parser.get_default("flag_aliases") or {}).items():
        if dest in spelling:
            spelling[name] = spelling[dest]
    return spelling


def speak_in_flags(error: RagframeError, spelling: Mapping[str, tuple[str, str, str]]) -> str:
    """``error``'s message with each parameter it mentions spelled as the command's flag.

    A library error lists the parameters its message mentions (``error.mentions``: name ->
    the value shown, or None for the bare name); Python reads them as ``name=value``, the
    command line as its flags (a name alone is the flag alone; ``judge=`` is the flag and its
    metavar): ``overwrite=True`` is ``--overwrite``, ``resume=False``
    ``--no-resume`` (and ``resume=True`` "a run without --no-resume"),
    ``max_failure_rate=0.1`` ``--max-failure-rate 0.1``, ``keep=[...]`` ``--keep COL ...``.
    A parameter the command has no flag for stays as Python spells it.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> _ = parser.add_argument("--overwrite", action="store_true")
    >>> _ = parser.add_argument("--no-resume", action="store_true")
    >>> spelling = flag_spelling(parser)
    >>> error = RagframeError(
    ...     "'out' holds a run; {resume} continues it, {overwrite} replaces it",
    ...     mentions={"resume": "True", "overwrite": "True"},
    ... )
    >>> speak_in_flags(error, spelling)
    "'out' holds a run; a run without --no-resume continues it, --overwrite replaces it"
    >>> str(error)
    "'out' holds a run; resume=True continues it, overwrite=True replaces it"
    """

    def spell(name: str, value: str | None) -> str:
        if name not in spelling:
            return name if value is None else f"{name}={value}"
        kind, flag, metavar = spelling[name]
        if kind == "on":
            return flag if value != "False" else f"without {flag}"
        if kind == "off":
            return flag if value == "False" else f"a run without {flag}"
        if value is None:  # the name alone ("{k} must be an int >= 1")
            return flag
        if value in ("", "[...]"):  # "pass judge=", "keep=[...]": the flag and what it takes
            return f"{flag} {metavar}".rstrip()
        return f"{flag} {' '.join(value.strip('()').replace(',', ' ').split()).strip(chr(39) + chr(34))}"

    return error.render(spell)
