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

from ragframe.validate import flag

__all__ = ["ParsedReply", "parse_reply", "parse_replies", "read_score"]

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


def _parse_text(text: str) -> ParsedReply:
    score: float | None = None
    reason: list[str] = []
    in_reason = False
    for raw in text.strip().splitlines():
        line = raw.strip()
        score_line = _SCORE_LINE.match(line)
        if score_line is not None:
            found = read_score(score_line["value"])
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
    return ParsedReply(score, joined, "ok", None)


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


def parse_reply(text: str | None, *, json_mode: bool = False) -> ParsedReply:
    """Read the score and reason of one judge reply (rules in the module doc); never raises on content.

    Parameters
    ----------
    text : str or None
        The reply. None (no reply) is a ``parse_error``.
    json_mode : bool
        Read a JSON object ``{"score": ..., "reason": ...}`` instead of ``Score:`` lines.

    Returns
    -------
    ParsedReply

    Examples
    --------
    >>> parse_reply("Score: 0.2\\nScore: 9/10\\nReason: changed my mind")
    ParsedReply(score=0.9, reason='changed my mind', status='ok', error=None)
    >>> parse_reply("I cannot say.").error
    "no 'Score:' line in the reply: 'I cannot say.'"
    """
    json_mode = flag(json_mode, "json_mode", "parse_reply")
    if text is None:
        return ParsedReply(None, None, "parse_error", "no reply")
    if not isinstance(text, str):
        return ParsedReply(None, None, "parse_error", f"the reply is a {type(text).__name__}, not text")
    return _parse_json(text) if json_mode else _parse_text(text)


def parse_replies(texts: Any, *, json_mode: bool = False) -> pl.DataFrame:
    """:func:`parse_reply` over many replies: a frame with ``score``, ``reason``, ``status``, ``error``.

    Replies are short and few next to the calls that produced them, so this is a plain loop.

    Parameters
    ----------
    texts : sequence of str or None, or a polars Series
        The replies; a null reply is a ``parse_error`` (``"no reply"``).
    json_mode : bool
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
    parsed = [parse_reply(text, json_mode=json_mode) for text in texts]
    return pl.DataFrame(
        {
            "score": [p.score for p in parsed],
            "reason": [p.reason for p in parsed],
            "status": [p.status for p in parsed],
            "error": [p.error for p in parsed],
        },
        schema={"score": pl.Float64, "reason": pl.String, "status": pl.String, "error": pl.String},
    )
