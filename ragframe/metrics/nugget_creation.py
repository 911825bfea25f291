"""``rf.create_nuggets``: a judge writes each question's nuggets from its passages, then labels their importance.

AutoNuggetizer (Pradeep et al. 2024/2025) creates a question's nuggets from its relevant
passages, then labels each ``vital`` or ``okay``. ragframe does the same in two calls per row,
with prompts of its own (package data, ``ragframe/judges/prompts/nugget_creation.txt`` and
``nugget_importance.txt``):

1. **creation**: the question and the passages; the reply lists ``Nugget: <fact>`` lines (at
   most ``max_nuggets``; ``Nugget: none`` when the passages hold nothing useful). A reply
   without a ``Nugget:`` line, or with more than ``max_nuggets``, is unreadable.
2. **importance**: the question and the nuggets numbered ``1. ...``; the reply must hold
   exactly one ``Nugget <i>: vital | okay`` line per nugget (strict, as
   ``judge_nugget_assignment``).

An unreadable reply is asked again with a format reminder (``parse_retries``), then the row is
a ``parse_error``. Both calls go through the judge runner: the persistent cache (a rerun asks
nothing again), bounded concurrency, retries, usage accounting (``rf.judge_usage()``, keyed
``nugget_creation`` and ``nugget_importance``). The output is the ``nuggets`` column the
nugget metrics read, ``assignment`` null, ready for ``judge_nugget_assignment``.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> def judge(prompt):
...     if "Nugget: <the fact>" in prompt:
...         return "Nugget: Paris is the capital of France\\nNugget: Paris lies on the Seine"
...     return "Nugget 1: vital\\nNugget 2: okay"
>>> df = pl.DataFrame({"question": ["Capital of France?"], "contexts": [["Paris, on the Seine, is the capital."]]})
>>> out = rf.create_nuggets(df, judge, cache=False)
>>> [(n["text"], n["importance"]) for n in out["nuggets"][0]]
[('Paris is the capital of France', 'vital'), ('Paris lies on the Seine', 'okay')]
>>> out["nuggets_status"][0]
'ok'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import polars as pl

from ragframe import validate
from ragframe.judges.runner import judge_prompts
from ragframe.judges.templates import format_contexts, load_template, render
from ragframe.metrics.nuggets import IMPORTANCES, NUGGET_DTYPE
from ragframe.metrics.text_engine import contexts_column, string_column
from ragframe.public import public
from ragframe.schema import apply_to_frame

__all__ = ["create_nuggets", "read_created_nuggets", "read_importances"]

_CREATED = re.compile(r"^\s*[*#>-]*\s*nugget\s*[*]*\s*:\s*[*]*\s*(.*?)\s*[*]*\s*$", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*[*#>-]*\s*nugget\s*(\d+)\s*[*]*\s*:\s*[*]*\s*(.*?)\s*[*.]*\s*$", re.IGNORECASE)
_EMPTY = pl.DataFrame(schema={"row": pl.Int64, "sample": pl.Int64, "text": pl.String, "status": pl.String,
                              "error": pl.String})  # fmt: skip


def read_created_nuggets(text: str, max_nuggets: int) -> tuple[list[str] | None, str | None]:
    """The facts of a creation reply's ``Nugget: <fact>`` lines, or why the reply cannot be read.

    Parameters
    ----------
    text : str
        The judge's reply.
    max_nuggets : int
        The most nuggets the prompt allowed.

    Returns
    -------
    tuple
        ``(facts, None)``: the facts in order (``[]`` for the single line ``Nugget: none``);
        ``(None, error)`` without a ``Nugget:`` line or with more than ``max_nuggets``.

    Examples
    --------
    >>> read_created_nuggets("Sure.\\nNugget: Paris is the capital\\nNugget: on the Seine", 5)
    (['Paris is the capital', 'on the Seine'], None)
    >>> read_created_nuggets("Nugget: none", 5)
    ([], None)
    >>> read_created_nuggets("Paris", 5)[1]
    "no 'Nugget: <fact>' line"
    """
    facts = [m[1] for m in map(_CREATED.match, text.splitlines()) if m is not None and m[1]]
    if not facts:
        return None, "no 'Nugget: <fact>' line"
    if [f.lower().strip(".") for f in facts] == ["none"]:
        return [], None
    if len(facts) > max_nuggets:
        return None, f"{len(facts)} nuggets, more than the {max_nuggets} asked for"
    return facts, None


def read_importances(text: str, n: int) -> tuple[list[str] | None, str | None]:
    """Exactly one ``Nugget <i>: vital | okay`` line per nugget 1..n, or why not.

    Parameters
    ----------
    text : str
        The judge's reply.
    n : int
        How many nuggets the prompt listed.

    Returns
    -------
    tuple
        ``(labels, None)`` or ``(None, error)``.

    Examples
    --------
    >>> read_importances("Nugget 2: okay\\nNugget 1: Vital", 2)
    (['vital', 'okay'], None)
    >>> read_importances("Nugget 1: vital", 2)[1]
    'no line for nugget 2 (each of the 2 nuggets answered once as Nugget <i>: vital or okay)'
    """
    asked = f"each of the {n} nuggets answered once as Nugget <i>: vital or okay"
    found: dict[int, str] = {}
    for line in text.splitlines():
        match = _NUMBERED.match(line)
        if match is None:
            continue
        number, label = int(match[1]), match[2].strip().lower()
        if not 1 <= number <= n:
            return None, f"a line for nugget {number}, which is not listed ({asked})"
        if label not in IMPORTANCES:
            return None, f"nugget {number}: unknown label {match[2]!r} ({asked})"
        if number in found:
            return None, f"nugget {number} answered twice ({asked})"
        found[number] = label
    missing = [i for i in range(1, n + 1) if i not in found]
    if missing:
        return None, f"no line for nugget {missing[0]} ({asked})"
    return [found[i] for i in range(1, n + 1)], None


def _first_readable(
    replies: pl.DataFrame, n: int, read: Callable[[int, str], tuple[Any, str | None]]
) -> tuple[list[Any], list[str | None], list[str | None]]:
    """Per prompt row: what the first readable sample gave, its status and error."""
    values: list[Any] = [None] * n
    statuses: list[str | None] = [None] * n
    errors: list[str | None] = [None] * n
    for row, status, text, error in replies.sort("row", "sample").select("row", "status", "text", "error").iter_rows():
        if statuses[row] == "ok":
            continue
        if status in ("ok", "parse_error") and text is not None:
            value, why = read(row, text)
            if value is not None:
                values[row], statuses[row], errors[row] = value, "ok", None
                continue
            status, error = "parse_error", error if error is not None else why
        if statuses[row] is None:
            statuses[row], errors[row] = status, error
    return values, statuses, errors


@public
def create_nuggets(
    df: Any,
    judge: Any,
    *,
    question: str = "question",
    contexts: str = "contexts",
    output: str = "nuggets",
    max_nuggets: int = 30,
    cache: Any = True,
    parse_retries: int = 2,
    max_concurrency: int | None = None,
    progress: bool = True,
    dry_run: bool = False,
) -> Any:
    """Append ``<output>`` (the row's nuggets), ``<output>_status`` and ``<output>_error``.

    Parameters
    ----------
    df : frame
        polars DataFrame/LazyFrame, pyarrow Table/RecordBatch or pandas DataFrame holding the
        question and the relevant passages (list of str).
    judge : callable or Judge
        A callable ``prompt -> str`` (sync or async), ``rf.OpenAIJudge`` or any Judge.
    question, contexts : str
        The columns read.
    output : str
        The column written: list of struct ``{text, importance, assignment}`` (assignment null).
    max_nuggets : int
        The most nuggets per row the creation prompt asks for (a reply with more is unreadable).
    cache : bool, str, os.PathLike or JudgeCache
        The judge cache (True: the user cache folder; False: none).
    parse_retries : int
        Re-asks of an unreadable reply, with a format reminder.
    max_concurrency : int, optional
        Calls in flight at once (default: the judge's, else 8).
    progress : bool
        A progress line on a terminal for long runs.
    dry_run : bool
        Call nothing: every row ``skipped`` (the runner's usage shows the estimated tokens of
        the creation calls).

    Returns
    -------
    frame
        The same kind of frame with the three columns. ``_status`` is ``ok``, ``skipped`` (a
        null question or passage list, or a dry run: no call), or the status of the call
        that failed (``parse_error``, ``timeout``, ``http_error``, ``rate_limited``,
        ``judge_error``); the nuggets are null unless ``ok``. A row whose passages hold
        nothing useful gets ``[]`` (``ok``), which the nugget scores score 0.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"question": ["q"], "contexts": [None]}, schema_overrides={"contexts": pl.List(pl.String)})
    >>> create_nuggets(df, lambda p: "Nugget: none", cache=False).select("nuggets_status", "nuggets_error").row(0)
    ('skipped', 'null contexts: no nuggets created')
    """
    for name, value in (("question", question), ("contexts", contexts), ("output", output)):
        validate.column_name(value, name)
    max_nuggets = validate.positive_int(max_nuggets, "max_nuggets")
    parse_retries = validate.integer(parse_retries, "parse_retries", minimum=0)
    if judge is None:
        raise validate.fail("judge", "a callable prompt -> str or a Judge", judge)

    def compute(view: pl.DataFrame) -> pl.DataFrame:
        questions = string_column(view, question).to_list()
        passages = contexts_column(view, contexts).to_list()
        n = view.height
        skipped = [
            "null question: no nuggets created" if q is None else "null contexts: no nuggets created" if c is None
            else None for q, c in zip(questions, passages)
        ]  # fmt: skip
        template = load_template("nugget_creation").replace("{max_nuggets}", str(max_nuggets))
        prompts = [
            None if why else render(template, {"question": q, "contexts": format_contexts(c)})
            for why, q, c in zip(skipped, questions, passages)
        ]
        run = dict(cache=cache, max_concurrency=max_concurrency, progress=progress, parse_retries=parse_retries)
        replies = (
            judge_prompts(judge, prompts, metric="nugget_creation", dry_run=dry_run,
                          check=lambda row, text: read_created_nuggets(text, max_nuggets)[1], **run)
            if n and any(p is not None for p in prompts) else _EMPTY
        )  # fmt: skip
        facts, statuses, errors = _first_readable(replies, n, lambda row, text: read_created_nuggets(text, max_nuggets))
        ranking = load_template("nugget_importance")
        second = [
            render(ranking, {"question": questions[i], "nuggets": "\n".join(f"{k}. {t}" for k, t in enumerate(f, 1))})
            if f else None
            for i, f in enumerate(facts)
        ]  # fmt: skip
        counts = [len(f) if f else 0 for f in facts]
        labelled = (
            judge_prompts(judge, second, metric="nugget_importance", dry_run=dry_run,
                          check=lambda row, text: read_importances(text, counts[row])[1], **run)
            if any(p is not None for p in second) else _EMPTY
        )  # fmt: skip
        labels, label_statuses, label_errors = _first_readable(
            labelled, n, lambda row, text: read_importances(text, counts[row])
        )
        nuggets: list[list[dict[str, Any]] | None] = []
        status_out: list[str] = []
        error_out: list[str | None] = []
        for i in range(n):
            if skipped[i] is not None:
                nuggets.append(None)
                status_out.append("skipped")
                error_out.append(skipped[i])
            elif statuses[i] != "ok":
                nuggets.append(None)
                status_out.append(statuses[i] or "skipped")
                error_out.append(errors[i] if errors[i] is not None or statuses[i] else "dry run: not judged")
            elif not facts[i]:
                nuggets.append([])
                status_out.append("ok")
                error_out.append(None)
            elif label_statuses[i] != "ok":
                nuggets.append(None)
                status_out.append(label_statuses[i] or "skipped")
                error_out.append(f"importance: {label_errors[i]}" if label_errors[i] else "dry run: not judged")
            else:
                nuggets.append(
                    [{"text": t, "importance": lab, "assignment": None} for t, lab in zip(facts[i], labels[i])]
                )
                status_out.append("ok")
                error_out.append(None)
        return pl.DataFrame(
            [
                pl.Series(output, nuggets, dtype=NUGGET_DTYPE),
                pl.Series(f"{output}_status", status_out, dtype=pl.String),
                pl.Series(f"{output}_error", error_out, dtype=pl.String),
            ],
            height=n,
        )

    return apply_to_frame(df, compute, columns=[question, contexts])
