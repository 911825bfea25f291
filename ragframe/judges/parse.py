"""Read a judge's reply: a score in [0, 1], the reason, and whether it could be read.

The rules are langrag's (``BaseEvaluator._parse_score_from_response``), made total: a reply
that cannot be read is a ``parse_error`` row, never an exception.

Text replies
    Each line is stripped. A line starting with ``Score:`` (any case) holds a score: a number
    (``0.85``, ``1``, ``-0.5``, ``1e-1``) or a fraction ``x/y`` (``8/10``, ``4 / 5``); it is
    clamped to [0, 1]. When several lines hold a readable score, the **last** one wins
    (langrag's loop overwrites). A line starting with ``Reason:`` starts the reason; later
    lines that are not ``Score:`` lines continue it; every ``Reason:`` line joins it too.
    The pieces are joined with single spaces.

    Tolerated beyond langrag (models write these): Markdown emphasis or a list bullet around
    the label (``**Score:** 0.8``, ``- Score: 0.8``) and one trailing period (``Score: 0.8.``).
    Still unreadable, as in langrag: words after the number (``Score: 0.8 (high)``),
    ``Score: high``, a zero denominator (``1/0``), non-finite numbers (``nan``, ``inf``;
    langrag clamped ``inf`` to 1 and ``nan`` to 1) and ``x/y/z``. A reply with no readable
    score is a ``parse_error`` whose ``error`` says why (langrag raised ``ValueError``).
    Blank lines do not enter the reason (langrag joined them as empty pieces).

Strict reading (``strict=True``, what the judge metrics use)
    Every ``Score:`` line must be readable and they must agree (``Score: 0.8`` twice, or
    ``Score: 8/10`` and ``Score: 0.8``, is one score): a reply that also parrots the prompt's
    ``Score: <a number between 0 and 1>`` line, or gives two different scores, is a
    ``parse_error`` naming the line, not the last readable score.

Decomposed replies (:func:`read_claim_verdicts`, :func:`read_passage_verdicts`)
    A *label line* starts (after list bullets, ``1.`` / ``1)`` list numbers and Markdown
    emphasis) with ``Claim``, ``Answer claim``, ``Reference claim``, ``Verdict`` or ``Covered``,
    then at most a number (``Claim 2:``, ``Verdict [2]:``, ``Verdict #2:``, ``Verdict for
    passage 2:``), then ``:``. A label line with anything else before the colon
    (``Verdict <passage number>:``) is unreadable. A verdict is ``yes`` or ``no`` (any case),
    optionally followed by text that offers no second verdict (``yes (supported)`` is read;
    ``yes (supported) or Verdict: no``, ``yes/no`` and ``yes or no`` are not). A claim's text
    must not be empty nor the template's ``<placeholder>``. Claims are matched to verdicts
    one to one: either no label line carries a number and each claim line is followed by
    exactly one verdict line before the next claim, or every label line carries one and
    claim numbers run 1, 2, ... N, each with exactly one verdict of its number (in any
    order). Passage verdicts are matched to the row's N passages the same way (by number:
    each of 1 .. N exactly once; without numbers: exactly N lines, in order). Anything else
    (a claim without a verdict, two verdicts for one claim, a verdict before any claim, a
    missing passage, numbered and unnumbered lines mixed) is a ``parse_error`` naming the
    claim or passage. A reply with no label line at all is not decomposed (``labelled`` is
    False): to a packaged decomposed template it is a ``parse_error`` (only the ``Score: 0``
    the template asks for is read); to a ``prompt=`` template of one's own, its ``Score:``
    line is read.

JSON replies (``json_mode=True``)
    An object ``{"score": ..., "reason": ...}`` (keys in any case), alone, inside a fenced
    block (```` ```json ... ``` ````) or surrounded by prose (the text from the first ``{`` to
    the last ``}``). ``score`` is a number or a string read by the text rules (``"8/10"``),
    clamped to [0, 1]; ``reason`` is optional (a non-string reason is written as JSON).
    Anything else is a ``parse_error``.

Examples
--------
>>> parse_reply("Reason: The answer is well-grounded.\\nScore: 0.85")
ParsedReply(score=0.85, reason='The answer is well-grounded.', status='ok', error=None)
>>> parse_reply("Score: 8/10").score
0.8
>>> parse_reply("Score: 1/0").status
'parse_error'
>>> parse_reply('```json\\n{"score": 0.4, "reason": "partly"}\\n```', json_mode=True).score
0.4
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from ragframe.public import public
from ragframe.validate import flag

__all__ = [
    "ParsedReply",
    "VerdictReading",
    "parse_reply",
    "parse_replies",
    "read_score",
    "read_claim_verdicts",
    "read_passage_verdicts",
]

# a label line: optional bullet / emphasis, the label, optional emphasis after the colon
_LABEL = r"^(?:[-*+>]\s+)?[*_`]*\s*{label}\s*[*_`]*:[*_`]*\s*"
_SCORE_LINE = re.compile(_LABEL.format(label="score") + r"(?P<value>.*)$", re.IGNORECASE)
_REASON_LINE = re.compile(_LABEL.format(label="reason") + r"(?P<value>.*)$", re.IGNORECASE)
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_VALUE = re.compile(rf"^(?P<num>{_NUMBER})(?:\s*/\s*(?P<den>{_NUMBER}))?$")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(?P<body>.*?)```", re.DOTALL)


@dataclass(frozen=True)
class ParsedReply:
    """What :func:`parse_reply` read from one reply.

    Parameters
    ----------
    score : float or None
        In [0, 1]; None when no readable score.
    reason : str or None
        The ``Reason:`` text (or the JSON ``reason``); None when absent.
    status : str
        ``"ok"`` or ``"parse_error"``.
    error : str or None
        Why parsing failed; None when ok.
    """

    score: float | None
    reason: str | None
    status: str
    error: str | None


@public
def read_score(value: str) -> float | None:
    """The score written in ``value`` (a number or ``x/y``), clamped to [0, 1]; None if unreadable.

    Parameters
    ----------
    value : str
        The text after ``Score:``.

    Returns
    -------
    float or None

    Examples
    --------
    >>> read_score("8/10"), read_score("1.5"), read_score("-0.5"), read_score("1/0"), read_score("high")
    (0.8, 1.0, 0.0, None, None)
    """
    text = value.strip().strip("*_`").strip()
    if text.endswith("."):
        text = text[:-1].rstrip()
    match = _VALUE.match(text)
    if match is None:
        return None
    score = float(match["num"])
    if match["den"] is not None:
        denominator = float(match["den"])
        if denominator == 0:
            return None
        score /= denominator
    if not math.isfinite(score):
        return None
    return min(1.0, max(0.0, score))


def _parse_text(text: str, strict: bool = False) -> ParsedReply:
    score: float | None = None
    reason: list[str] = []
    in_reason = False
    scores: list[tuple[str, float | None]] = []
    for raw in text.strip().splitlines():
        line = raw.strip()
        score_line = _SCORE_LINE.match(line)
        if score_line is not None:
            found = read_score(score_line["value"])
            scores.append((score_line["value"].strip(), found))
            score = found if found is not None else score
            continue
        reason_line = _REASON_LINE.match(line)
        if reason_line is not None:
            in_reason = True
            line = reason_line["value"].strip()
        if in_reason and line:
            reason.append(line)
    joined = " ".join(reason) or None
    if score is None:
        return ParsedReply(None, joined, "parse_error", _no_score_error(text))
    if strict:
        error = _conflicting_scores(scores)
        if error is not None:
            return ParsedReply(None, joined, "parse_error", error)
    return ParsedReply(score, joined, "ok", None)


def _conflicting_scores(scores: list[tuple[str, float | None]]) -> str | None:
    """Why several ``Score:`` lines do not make one score (strict reading), or None."""
    unreadable = [value for value, found in scores if found is None]
    if unreadable:
        return (
            f"{len(scores)} 'Score:' lines and {_excerpt(unreadable[0])} is not a score "
            "(one score expected: a number or x/y, y != 0)"
        )
    distinct = sorted({found for _, found in scores if found is not None})
    if len(distinct) > 1 and not math.isclose(distinct[0], distinct[-1], rel_tol=1e-9, abs_tol=1e-12):
        shown = ", ".join(value for value, _ in scores)
        return f"{len(scores)} 'Score:' lines give different scores ({shown}); one score expected"
    return None


def _no_score_error(text: str) -> str:
    lines = [m["value"].strip() for m in map(_SCORE_LINE.match, (s.strip() for s in text.splitlines())) if m]
    if not lines:
        return f"no 'Score:' line in the reply: {_excerpt(text)}"
    return f"no readable score: 'Score:' followed by {_excerpt(lines[-1])} (expected a number or x/y, y != 0)"


def _excerpt(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _json_object(text: str) -> Any:
    fenced = _FENCE.search(text)
    body = fenced["body"] if fenced is not None else text
    body = body.strip()
    start, end = body.find("{"), body.rfind("}")
    if start == -1 or end < start:
        raise ValueError("no JSON object in the reply")
    return json.loads(body[start : end + 1])


def _parse_json(text: str) -> ParsedReply:
    try:
        data = _json_object(text)
    except ValueError as error:  # JSONDecodeError is a ValueError
        return ParsedReply(None, None, "parse_error", f"{error}: {_excerpt(text)}")
    if not isinstance(data, dict):
        return ParsedReply(None, None, "parse_error", f"the JSON is not an object: {_excerpt(text)}")
    keys = {str(key).lower(): value for key, value in data.items()}
    reason = keys.get("reason")
    if reason is not None and not isinstance(reason, str):
        reason = json.dumps(reason, ensure_ascii=False)
    reason = (reason.strip() or None) if isinstance(reason, str) else None
    value = keys.get("score")
    if value is None:
        return ParsedReply(None, reason, "parse_error", f"no 'score' in the JSON object: {_excerpt(text)}")
    if isinstance(value, bool):
        score = None
    elif isinstance(value, (int, float)):
        score = min(1.0, max(0.0, float(value))) if math.isfinite(float(value)) else None
    else:
        score = read_score(str(value))
    if score is None:
        return ParsedReply(None, reason, "parse_error", f"unreadable JSON score {value!r}")
    return ParsedReply(score, reason, "ok", None)


@public
def parse_reply(text: str | None, *, json_mode: bool = False, strict: bool = False) -> ParsedReply:
    """Read the score and reason of one judge reply (rules in the module doc); never raises on content.

    Parameters
    ----------
    text : str or None
        The reply. None (no reply) is a ``parse_error``.
    json_mode : bool
        Read a JSON object ``{"score": ..., "reason": ...}`` instead of ``Score:`` lines.
    strict : bool
        Every ``Score:`` line must be readable and agree (the judge metrics' reading);
        default: langrag's rule, the last readable one wins.

    Returns
    -------
    ParsedReply

    Examples
    --------
    >>> parse_reply("Score: 0.2\\nScore: 9/10\\nReason: changed my mind")
    ParsedReply(score=0.9, reason='changed my mind', status='ok', error=None)
    >>> parse_reply("I cannot say.").error
    "no 'Score:' line in the reply: 'I cannot say.'"
    >>> parse_reply("Score: <a number between 0 and 1>\\nScore: 0.9", strict=True).error
    "2 'Score:' lines and '<a number between 0 and 1>' is not a score (one score expected: a number or x/y, y != 0)"
    """
    json_mode = flag(json_mode, "json_mode")
    strict = flag(strict, "strict")
    if text is None:
        return ParsedReply(None, None, "parse_error", "no reply")
    if not isinstance(text, str):
        return ParsedReply(None, None, "parse_error", f"the reply is a {type(text).__name__}, not text")
    return _parse_json(text) if json_mode else _parse_text(text, strict)


@public
def parse_replies(texts: Any, *, json_mode: bool = False, strict: bool = False) -> pl.DataFrame:
    """:func:`parse_reply` over many replies: a frame with ``score``, ``reason``, ``status``, ``error``.

    Replies are short and few next to the calls that produced them, so this is a plain loop.

    Parameters
    ----------
    texts : sequence of str or None, or a polars Series
        The replies; a null reply is a ``parse_error`` (``"no reply"``).
    json_mode, strict : bool
        As in :func:`parse_reply`.

    Returns
    -------
    polars.DataFrame
        One row per reply, in order: ``score`` (Float64), ``reason``, ``status``, ``error`` (String).

    Examples
    --------
    >>> parse_replies(["Score: 1", None])["status"].to_list()
    ['ok', 'parse_error']
    """
    parsed = [parse_reply(text, json_mode=json_mode, strict=strict) for text in texts]
    return pl.DataFrame(
        {
            "score": [p.score for p in parsed],
            "reason": [p.reason for p in parsed],
            "status": [p.status for p in parsed],
            "error": [p.error for p in parsed],
        },
        schema={"score": pl.Float64, "reason": pl.String, "status": pl.String, "error": pl.String},
    )


# ----------------------------------------------------------------------------- decomposed replies

#: The claim -> verdict labels of a claim-by-claim reply (faithfulness, context recall).
CLAIM_LABELS: tuple[tuple[str, str], ...] = (("claim", "verdict"),)
#: Answer correctness: the answer's claims take ``Verdict:``, the reference's ``Covered:``.
CORRECTNESS_LABELS: tuple[tuple[str, str], ...] = (("answer claim", "verdict"), ("reference claim", "covered"))

_LABEL_LINE = re.compile(
    r"^\s*(?:(?:[-*+>#]+|\d{1,3}[.)])\s*)*[*_`]*\s*"
    r"(?P<label>answer\s+claim|reference\s+claim|claim|verdict|covered)\b"
    r"(?P<qualifier>[^:\n]{0,25}?)[*_`]*\s*:[*_`]*(?P<rest>.*)$",
    re.IGNORECASE,
)
_QUALIFIER = re.compile(
    r"^\s*(?:for\s+(?:claim|passage)\s*)?(?:no\.?\s*|#\s*)?[\[(]?\s*(?P<n>\d{1,4})\s*[\])]?\s*$", re.IGNORECASE
)
_VERDICT_VALUE = re.compile(r"^[\s*_`\"']*(?P<value>yes|no)\b(?P<rest>.*)$", re.IGNORECASE)
_SECOND_VERDICT = re.compile(
    r"^[\s*_`\"'.,;:]*(?:or\b|/|\|)|\b(?:verdict|covered)\b[^:\n]{0,40}:|^[\s*_`\"']*(?:yes|no)\b", re.IGNORECASE
)
_PLACEHOLDER_TEXT = re.compile(r"^<[^<>]*>$")


@dataclass(frozen=True)
class VerdictReading:
    """What the claim and verdict lines of a decomposed reply say.

    Parameters
    ----------
    verdicts : tuple of tuple of bool
        One tuple per claim kind asked (one for passages), in claim (passage) order;
        empty when ``error`` is set.
    error : str or None
        Why the lines cannot be matched one to one (None when they can).
    labelled : bool
        Whether the reply has any claim or verdict line at all (without one, the reply is
        not decomposed and the judge metrics read its ``Score:`` line).
    """

    verdicts: tuple[tuple[bool, ...], ...]
    error: str | None
    labelled: bool


@dataclass(frozen=True)
class _Line:
    label: str  # "claim", "answer claim", "reference claim", "verdict" or "covered"
    number: int | None
    value: bool | str | None  # a verdict's yes/no; a claim's text
    problem: str | None  # why the line itself is unreadable
    raw: str


def _label_name(label: str) -> str:
    return label[0].upper() + label[1:]


def _label_lines(text: str) -> list[_Line]:
    """Every label line of the reply, read on its own (see the module doc)."""
    lines = []
    for raw in text.splitlines():
        match = _LABEL_LINE.match(raw)
        if match is None:
            continue
        label = " ".join(match["label"].lower().split())
        name = _label_name(label)
        qualifier = match["qualifier"].strip()
        number_match = _QUALIFIER.match(qualifier) if qualifier else None
        if qualifier and number_match is None:
            problem = f"unreadable line {_excerpt(raw)}: expected '{name}:' or '{name} <number>:' with a number"
            lines.append(_Line(label, None, None, problem, raw))
            continue
        number = int(number_match["n"]) if number_match is not None else None
        rest = match["rest"].strip()
        if label in ("verdict", "covered"):
            value, problem = _verdict_value(rest, raw)
        else:
            value = rest.strip("*_` ").strip()
            problem = None
            if not value:
                problem = f"an empty claim: {_excerpt(raw)}"
            elif _PLACEHOLDER_TEXT.match(value):
                problem = f"a claim that is the prompt's placeholder: {_excerpt(raw)}"
        lines.append(_Line(label, number, value, problem, raw))
    return lines


def _verdict_value(rest: str, raw: str) -> tuple[bool | None, str | None]:
    match = _VERDICT_VALUE.match(rest)
    if match is None:
        return None, f"unreadable verdict {_excerpt(raw)}: expected yes or no"
    if _SECOND_VERDICT.search(match["rest"]):
        return None, f"a line with more than one verdict: {_excerpt(raw)}"
    return match["value"].lower() == "yes", None


def read_claim_verdicts(text: str, labels: tuple[tuple[str, str], ...] = CLAIM_LABELS) -> VerdictReading:
    """Match the claims a reply lists to its verdicts, one to one (rules in the module doc).

    Parameters
    ----------
    text : str
        The judge's reply.
    labels : tuple of (claim label, verdict label)
        The kinds of claims the prompt asks for and the verdict line each takes:
        :data:`CLAIM_LABELS` (``Claim:`` / ``Verdict:``) or :data:`CORRECTNESS_LABELS`.

    Returns
    -------
    VerdictReading
        One tuple of verdicts per claim kind, in claim order.

    Examples
    --------
    >>> read_claim_verdicts("Claim: a\\nVerdict: yes\\nClaim: b\\nVerdict: no (not stated)").verdicts
    ((True, False),)
    >>> read_claim_verdicts("Claim: a\\nClaim: b\\nVerdict: yes (supported)").error
    "claim 1 'a' has no 'Verdict:' line"
    >>> read_claim_verdicts("Claim 2: b\\nVerdict 2: no\\nClaim 1: a\\nVerdict 1: yes").verdicts  # by number
    ((True, False),)
    >>> read_claim_verdicts("Score: 1/2").labelled
    False
    """
    lines = _label_lines(text)
    if not lines:
        return VerdictReading((), None, False)
    claims = {claim: verdict for claim, verdict in labels}
    verdicts = {verdict: claim for claim, verdict in labels}
    error = _line_problems(lines, set(claims) | set(verdicts), "this prompt asks for " + _asked(labels))
    if error is None:
        matched, error = (
            _match_numbered(lines, labels) if lines[0].number is not None else _match_in_order(lines, labels)
        )
        if error is None:
            return VerdictReading(tuple(tuple(matched[claim]) for claim, _ in labels), None, True)
    return VerdictReading((), error, True)


def _asked(labels: tuple[tuple[str, str], ...]) -> str:
    return " and ".join(f"'{_label_name(c)}:' lines, each followed by one '{_label_name(v)}:' line" for c, v in labels)


def _line_problems(lines: list[_Line], allowed: set[str], asked: str) -> str | None:
    """The first unreadable line, a label the prompt does not ask for, or numbered and unnumbered lines mixed."""
    for line in lines:
        if line.problem is not None:
            return line.problem
        if line.label not in allowed:
            return f"a '{_label_name(line.label)}:' line ({_excerpt(line.raw)}), but {asked}"
    numbered = [line.number is not None for line in lines]
    if any(numbered) and not all(numbered):
        plain = lines[numbered.index(False)] if numbered[0] else lines[numbered.index(True)]
        return f"numbered and unnumbered lines mixed ({_excerpt(lines[0].raw)} and {_excerpt(plain.raw)})"
    return None


def _claim_name(label: str, index: int, text: Any) -> str:
    return f"{label} {index} {_excerpt(str(text), 60)}"


def _match_in_order(
    lines: list[_Line], labels: tuple[tuple[str, str], ...]
) -> tuple[dict[str, list[bool]], str | None]:
    """Unnumbered: each claim line is followed by exactly one verdict line of its kind before the next claim."""
    takes = dict(labels)
    matched: dict[str, list[bool]] = {claim: [] for claim, _ in labels}
    open_claim: tuple[str, str, bool] | None = None  # (label, text, has its verdict)
    for line in lines:
        if line.label in takes:
            if open_claim is not None and not open_claim[2]:
                name = _claim_name(open_claim[0], len(matched[open_claim[0]]) + 1, open_claim[1])
                return matched, f"{name} has no '{_label_name(takes[open_claim[0]])}:' line"
            open_claim = (line.label, str(line.value), False)
            continue
        if open_claim is None:
            return matched, f"a verdict before any claim: {_excerpt(line.raw)}"
        label, claim_text, answered = open_claim
        name = _claim_name(label, len(matched[label]) + (0 if answered else 1), claim_text)
        if takes[label] != line.label:
            return (
                matched,
                f"a '{_label_name(line.label)}:' line after {name}, which takes '{_label_name(takes[label])}:'",
            )
        if answered:
            return matched, f"{name} has more than one '{_label_name(line.label)}:' line"
        matched[label].append(bool(line.value))
        open_claim = (label, claim_text, True)
    if open_claim is not None and not open_claim[2]:
        name = _claim_name(open_claim[0], len(matched[open_claim[0]]) + 1, open_claim[1])
        return matched, f"{name} has no '{_label_name(takes[open_claim[0]])}:' line"
    return matched, None


def _match_numbered(
    lines: list[_Line], labels: tuple[tuple[str, str], ...]
) -> tuple[dict[str, list[bool]], str | None]:
    """Numbered: claim numbers 1 .. N of each kind, each with exactly one verdict of its number."""
    owner = {verdict: claim for claim, verdict in labels}
    texts: dict[str, dict[int, str]] = {claim: {} for claim, _ in labels}
    given: dict[str, dict[int, list[bool]]] = {claim: {} for claim, _ in labels}
    for line in lines:
        assert line.number is not None
        if line.label in texts:
            if line.number in texts[line.label]:
                return {}, f"{line.label} {line.number} is listed twice"
            texts[line.label][line.number] = str(line.value)
        else:
            given[owner[line.label]].setdefault(line.number, []).append(bool(line.value))
    matched: dict[str, list[bool]] = {}
    for claim, verdict in labels:
        numbers = sorted(texts[claim])
        missing = next((n for n in range(1, len(numbers) + 1) if n not in texts[claim]), None)
        if missing is not None:
            return {}, f"{claim}s numbered {', '.join(map(str, numbers))}: {claim} {missing} is missing"
        stray = sorted(set(given[claim]) - set(numbers))
        if stray:
            return {}, f"a '{_label_name(verdict)} {stray[0]}:' line, but there is no {claim} {stray[0]}"
        for number in numbers:
            count = len(given[claim].get(number, []))
            name = _claim_name(claim, number, texts[claim][number])
            if count != 1:
                what = "no" if count == 0 else f"{count}"
                return {}, f"{name} has {what} '{_label_name(verdict)} {number}:' line{'s' if count > 1 else ''}"
        matched[claim] = [given[claim][n][0] for n in numbers]
    return matched, None


def read_passage_verdicts(text: str, n_passages: int | None) -> VerdictReading:
    """Match a reply's ``Verdict`` lines to the row's passages, one each (rules in the module doc).

    Parameters
    ----------
    text : str
        The judge's reply.
    n_passages : int or None
        The row's number of passages (None: unknown; numbered verdicts must then run 1 .. N).

    Returns
    -------
    VerdictReading
        One tuple: the verdicts in passage order.

    Examples
    --------
    >>> read_passage_verdicts("Verdict 2: no\\nVerdict 1: yes", 2).verdicts
    ((True, False),)
    >>> read_passage_verdicts("Verdict 1: yes\\nVerdict 2: no", 3).error
    'no verdict for passage 3 (the row has 3 passages)'
    >>> read_passage_verdicts("Verdict: yes\\nVerdict: no", 3).error
    '2 verdict lines for 3 passages (one per passage expected)'
    """
    lines = _label_lines(text)
    if not lines:
        return VerdictReading((), None, False)
    error = _line_problems(lines, {"verdict"}, "this prompt asks for one 'Verdict <passage number>:' line per passage")
    if error is not None:
        return VerdictReading((), error, True)
    if n_passages == 0:
        return VerdictReading((), f"{len(lines)} verdict lines for a row without passages", True)
    if lines[0].number is None:
        if n_passages is not None and len(lines) != n_passages:
            return VerdictReading(
                (), f"{len(lines)} verdict lines for {n_passages} passages (one per passage expected)", True
            )
        return VerdictReading((tuple(bool(line.value) for line in lines),), None, True)
    by_number: dict[int, list[bool]] = {}
    for line in lines:
        by_number.setdefault(line.number, []).append(bool(line.value))  # type: ignore[arg-type]
    count = n_passages if n_passages is not None else max(by_number)
    outside = sorted(n for n in by_number if not 1 <= n <= count)
    if outside:
        return VerdictReading((), f"a verdict for passage {outside[0]}, but the row has {count} passages", True)
    twice = sorted(n for n, values in by_number.items() if len(values) > 1)
    if twice:
        return VerdictReading((), f"passage {twice[0]} has {len(by_number[twice[0]])} verdicts (one expected)", True)
    missing = [n for n in range(1, count + 1) if n not in by_number]
    if missing:
        which = f"passage {missing[0]}" if len(missing) == 1 else f"passages {', '.join(map(str, missing))}"
        return VerdictReading((), f"no verdict for {which} (the row has {count} passages)", True)
    return VerdictReading((tuple(by_number[n][0] for n in range(1, count + 1)),), None, True)
