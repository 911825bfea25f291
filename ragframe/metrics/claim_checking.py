"""``rf.check_claims``: a judge writes RAGChecker's claims and entailment verdicts, the inputs of its 11 metrics.

RAGChecker extracts the claims of the answer and of the reference once, then checks them:
each side's claims against the other side's text, and every claim against every retrieved
passage. ragframe does the same with prompts of its own (package data,
``ragframe/judges/prompts/claim_extraction.txt`` and ``claim_checking.txt``), per row:

- 2 extraction calls (answer, reference): ``Claim: <claim>`` lines (``Claim: none`` for none);
- 2 cross checks (the answer's claims against the reference, the reference's against the
  answer) and **one call per passage** judging all claims of both sides against it: exactly
  one ``Claim <i>: Entailment | Neutral | Contradiction`` line per claim, read strictly.

An unreadable reply is asked again (``parse_retries``), then the row is a ``parse_error``.
Every call goes through the judge runner: the persistent cache, bounded concurrency,
retries and usage (keys ``claim_extraction`` and ``claim_checking``). The output holds the
columns RAGChecker names (``response_claims``, ``gt_answer_claims``, ``answer2response``,
``response2answer``, ``retrieved2response``, ``retrieved2answer``, claims as strings) plus
``claims_status`` and ``claims_error``; ``rf.evaluate(out, ["ragchecker"])`` then scores the 11
metrics without another call.

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> import re
>>> def judge(prompt):  # every claim entailed
...     if "Claim: <the claim>" in prompt:
...         return "Claim: Paris is the capital of France"
...     listed = prompt.split("Claims:")[1].split("Instructions:")[0]
...     return "\\n".join(f"Claim {i + 1}: Entailment" for i in range(len(re.findall(r"(?m)^\\d+\\. ", listed))))
>>> df = pl.DataFrame({"answer": ["Paris is the capital."], "ground_truth": ["Paris is France's capital."],
...                    "contexts": [["Paris is the capital of France."]]})
>>> out = rf.check_claims(df, judge, cache=False)
>>> out.select("answer2response", "retrieved2response", "claims_status").row(0)
(['Entailment'], [['Entailment']], 'ok')
>>> rf.evaluate(out, ["ragchecker_precision", "ragchecker_faithfulness"]).select("ragchecker_faithfulness").item()
1.0
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import polars as pl

from ragframe import validate
from ragframe.judges.runner import judge_prompts
from ragframe.judges.templates import load_template, render
from ragframe.metrics.ragchecker import VERDICTS
from ragframe.metrics.text_engine import contexts_column, string_column
from ragframe.public import public
from ragframe.schema import apply_to_frame

__all__ = ["check_claims", "read_claims", "read_verdicts"]

_CLAIM = re.compile(r"^\s*[*#>-]*\s*claim\s*[*]*\s*:\s*[*]*\s*(.*?)\s*[*]*\s*$", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*[*#>-]*\s*claim\s*(\d+)\s*[*]*\s*:\s*[*]*\s*(.*?)\s*[*.]*\s*$", re.IGNORECASE)
_EMPTY = pl.DataFrame(
    schema={"row": pl.Int64, "sample": pl.Int64, "text": pl.String, "status": pl.String, "error": pl.String}
)


def read_claims(text: str) -> tuple[list[str] | None, str | None]:
    """The claims of an extraction reply's ``Claim: <claim>`` lines, or why it cannot be read.

    Parameters
    ----------
    text : str
        The judge's reply.

    Returns
    -------
    tuple
        ``(claims, None)`` (``[]`` for ``Claim: none``) or ``(None, error)``.

    Examples
    --------
    >>> read_claims("Claim: Paris is a city\\nClaim: it is big")
    (['Paris is a city', 'it is big'], None)
    >>> read_claims("Claim: none"), read_claims("nothing")
    (([], None), (None, "no 'Claim: <claim>' line"))
    """
    claims = [m[1] for m in map(_CLAIM.match, text.splitlines()) if m is not None and m[1]]
    if not claims:
        return None, "no 'Claim: <claim>' line"
    if [c.lower().strip(".") for c in claims] == ["none"]:
        return [], None
    return claims, None


def read_verdicts(text: str, n: int) -> tuple[list[str] | None, str | None]:
    """Exactly one ``Claim <i>: Entailment | Neutral | Contradiction`` line per claim 1..n, or why not.

    Parameters
    ----------
    text : str
        The judge's reply.
    n : int
        The claims the prompt listed.

    Returns
    -------
    tuple
        ``(verdicts, None)`` in RAGChecker's spelling, or ``(None, error)``.

    Examples
    --------
    >>> read_verdicts("Claim 2: neutral\\nClaim 1: ENTAILMENT", 2)
    (['Entailment', 'Neutral'], None)
    >>> read_verdicts("Claim 1: yes", 1)[1]  # doctest: +ELLIPSIS
    "claim 1: unknown verdict 'yes' (each of the 1 claims answered once as Claim <i>: ...)"
    """
    asked = f"each of the {n} claims answered once as Claim <i>: Entailment, Neutral or Contradiction"
    found: dict[int, str] = {}
    for line in text.splitlines():
        match = _NUMBERED.match(line)
        if match is None:
            continue
        number, verdict = int(match[1]), match[2].strip().capitalize()
        if not 1 <= number <= n:
            return None, f"a line for claim {number}, which is not listed ({asked})"
        if verdict not in VERDICTS:
            return None, f"claim {number}: unknown verdict {match[2]!r} ({asked})"
        if number in found:
            return None, f"claim {number} answered twice ({asked})"
        found[number] = verdict
    missing = [i for i in range(1, n + 1) if i not in found]
    if missing:
        return None, f"no line for claim {missing[0]} ({asked})"
    return [found[i] for i in range(1, n + 1)], None


def _read_all(replies: pl.DataFrame, n: int, read: Callable[[int, str], tuple[Any, str | None]]) -> list[tuple]:
    """Per prompt: (value, None, None) from its first readable sample, or (None, status, error)."""
    out: list[tuple] = [(None, "skipped", "dry run: not judged")] * n
    done: set[int] = set()
    for row, status, text, error in replies.sort("row", "sample").select("row", "status", "text", "error").iter_rows():
        if row in done:
            continue
        if status in ("ok", "parse_error") and text is not None:
            value, why = read(row, text)
            if value is not None:
                out[row] = (value, None, None)
                done.add(row)
                continue
            status, error = "parse_error", error if error is not None else why
        out[row] = (None, status, error)
        done.add(row)
    return out


@public
def check_claims(
    df: Any,
    judge: Any,
    *,
    answer: str = "answer",
    ground_truth: str = "ground_truth",
    contexts: str = "contexts",
    cache: Any = True,
    parse_retries: int = 2,
    max_concurrency: int | None = None,
    progress: bool = True,
    dry_run: bool = False,
) -> Any:
    """Append RAGChecker's claim and verdict columns, judged: the inputs of the ``ragchecker_*`` metrics.

    Parameters
    ----------
    df : frame
        polars DataFrame/LazyFrame, pyarrow Table/RecordBatch or pandas DataFrame.
    judge : callable or Judge
        A callable ``prompt -> str`` (sync or async), ``rf.OpenAIJudge`` or any Judge.
    answer, ground_truth, contexts : str
        The columns read: the answer (str), the reference (str), the retrieved passages (list of str).
    cache : bool, str, os.PathLike or JudgeCache
        The judge cache (True: the user cache folder; False: none).
    parse_retries : int
        Re-asks of an unreadable reply, with a format reminder.
    max_concurrency : int, optional
        Calls in flight at once.
    progress : bool
        A progress line on a terminal for long runs.
    dry_run : bool
        Call nothing: every row ``skipped``.

    Returns
    -------
    frame
        The same kind of frame with ``response_claims``, ``gt_answer_claims`` (list of str),
        ``answer2response``, ``response2answer`` (list of verdicts), ``retrieved2response``,
        ``retrieved2answer`` (list of lists, [claim][passage]), ``claims_status`` and
        ``claims_error`` (which call failed, and why). The verdict columns are null unless
        ``ok``. Calls per row: 2 extractions, then 2 cross checks and one per passage (none
        for a side without claims).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"answer": [None], "ground_truth": ["x"], "contexts": [["y"]]})
    >>> check_claims(df, lambda p: "", cache=False).select("claims_status", "claims_error").row(0)
    ('skipped', 'null answer: not judged')
    """
    for name, value in (("answer", answer), ("ground_truth", ground_truth), ("contexts", contexts)):
        validate.column_name(value, name)
    parse_retries = validate.integer(parse_retries, "parse_retries", minimum=0)
    if judge is None:
        raise validate.fail("judge", "a callable prompt -> str or a Judge", judge)
    run = dict(cache=cache, max_concurrency=max_concurrency, progress=progress, parse_retries=parse_retries,
               dry_run=dry_run)  # fmt: skip

    def compute(view: pl.DataFrame) -> pl.DataFrame:
        answers = string_column(view, answer).to_list()
        references = string_column(view, ground_truth).to_list()
        passages = contexts_column(view, contexts).to_list()
        n = view.height
        skipped = [
            next((f"null {r}: not judged" for r, v in (("answer", a), ("ground_truth", g), ("contexts", c))
                  if v is None), None)
            for a, g, c in zip(answers, references, passages)
        ]  # fmt: skip
        extraction = load_template("claim_extraction")
        texts = [t for a, g in zip(answers, references) for t in (a, g)]
        prompts = [None if skipped[i // 2] else render(extraction, {"text": texts[i]}) for i in range(2 * n)]
        replies = (
            judge_prompts(judge, prompts, metric="claim_extraction", check=lambda r, t: read_claims(t)[1], **run)
            if any(p is not None for p in prompts) else _EMPTY
        )  # fmt: skip
        extracted = _read_all(replies, 2 * n, lambda r, t: read_claims(t))
        checking = load_template("claim_checking")
        asks: list[tuple[int, str, int]] = []  # (row, what, passage) per checking prompt
        second: list[str | None] = []
        counts: list[int] = []
        for i in range(n):
            mine, theirs = extracted[2 * i][0], extracted[2 * i + 1][0]
            if skipped[i] or mine is None or theirs is None:
                continue
            for what, claims, text in (
                ("answer2response", mine, references[i]),
                ("response2answer", theirs, answers[i]),
            ):
                if claims:
                    asks.append((i, what, -1))
                    second.append(render(checking, {"text": text, "claims": _numbered(claims)}))
                    counts.append(len(claims))
            if mine or theirs:
                for k, passage in enumerate(passages[i]):
                    asks.append((i, "retrieved", k))
                    second.append(render(checking, {"text": passage, "claims": _numbered(mine + theirs)}))
                    counts.append(len(mine) + len(theirs))
        checked = (
            judge_prompts(judge, second, metric="claim_checking",
                          check=lambda r, t: read_verdicts(t, counts[r])[1], **run)
            if second else _EMPTY
        )  # fmt: skip
        verdicts = _read_all(checked, len(second), lambda r, t: read_verdicts(t, counts[r]))
        return _assemble(n, skipped, extracted, passages, asks, verdicts)

    return apply_to_frame(df, compute, columns=[answer, ground_truth, contexts])


def _numbered(claims: list[str]) -> str:
    return "\n".join(f"{k}. {claim}" for k, claim in enumerate(claims, start=1))


def _assemble(
    n: int,
    skipped: list[str | None],
    extracted: list[tuple],
    passages: list[Any],
    asks: list[tuple[int, str, int]],
    verdicts: list[tuple],
) -> pl.DataFrame:
    columns: dict[str, list[Any]] = {name: [None] * n for name in (
        "response_claims", "gt_answer_claims", "answer2response", "response2answer", "retrieved2response",
        "retrieved2answer")}  # fmt: skip
    status: list[str] = ["ok"] * n
    error: list[str | None] = [None] * n
    for i in range(n):
        if skipped[i]:
            status[i], error[i] = "skipped", skipped[i]
            continue
        for side, (value, failed, why) in (("answer", extracted[2 * i]), ("reference", extracted[2 * i + 1])):
            if value is None and status[i] == "ok":
                status[i], error[i] = failed, f"{side} claims: {why}"
        mine, theirs = extracted[2 * i][0], extracted[2 * i + 1][0]
        columns["response_claims"][i], columns["gt_answer_claims"][i] = mine, theirs
        if status[i] == "ok":
            columns["answer2response"][i], columns["response2answer"][i] = [], []
            columns["retrieved2response"][i] = [[] for _ in mine]
            columns["retrieved2answer"][i] = [[] for _ in theirs]
    for (i, what, k), (value, failed, why) in zip(asks, verdicts):
        if status[i] != "ok":
            continue
        if value is None:
            status[i], error[i] = failed, f"{what if k < 0 else f'passage {k + 1}'}: {why}"
            continue
        if k < 0:
            columns[what][i] = value
        else:
            mine = columns["response_claims"][i]
            for c, verdict in enumerate(value):
                side = "retrieved2response" if c < len(mine) else "retrieved2answer"
                columns[side][i][c if c < len(mine) else c - len(mine)].append(verdict)
    for i in range(n):
        if status[i] != "ok":
            for name in ("answer2response", "response2answer", "retrieved2response", "retrieved2answer"):
                columns[name][i] = None
    text, verdict = pl.List(pl.String), pl.List(pl.String)
    dtypes = {
        "response_claims": text,
        "gt_answer_claims": text,
        "answer2response": verdict,
        "response2answer": verdict,
        "retrieved2response": pl.List(verdict),
        "retrieved2answer": pl.List(verdict),
    }
    out = [pl.Series(name, values, dtype=dtypes[name]) for name, values in columns.items()]
    out += [pl.Series("claims_status", status, dtype=pl.String), pl.Series("claims_error", error, dtype=pl.String)]
    return pl.DataFrame(out, height=n)
