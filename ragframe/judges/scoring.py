"""Reading a judge's reply as a score: the metric's ``JudgeSpec`` and the line rules of :mod:`ragframe.judges.parse`.

How a reply becomes a score (``JudgeSpec.scoring``; the line rules are
:mod:`ragframe.judges.parse`'s, strict: every claim or passage answered exactly once):

- ``"score"``: the reply's ``Score:`` lines (langrag's rules; several must agree).
- ``"share"``: the claims the reply lists (``Claim:``), each matched to exactly one
  ``Verdict:`` line (decomposed as RAGAS does); the score is the share of ``yes``.
- ``"passages"``: one ``Verdict`` line per passage (by number or in order); the share of ``yes``.
- ``"ranked"``: one ``Verdict`` line per passage; the average precision of the ``yes``
  passages by rank (RAGAS context precision; the kernel is
  :func:`ragframe.kernels.ranking.average_precision`, trec_eval's).
- ``"f1"``: ``Answer claim:`` lines with one ``Verdict:`` each (precision) and ``Reference
  claim:`` lines with one ``Covered:`` each (recall); the score is their F1 (RAGAS factual
  correctness).

A reply whose claims and verdicts do not match one to one is a ``parse_error`` naming the
claim or passage. A reply without any claim or verdict line is a ``parse_error`` naming what
the packaged template asks for (``score_fallback=False``: "no 'Claim:' line ..."), never a
score from its ``Score:`` line; only where the template itself asks for ``Score: 0``
(faithfulness: an answer without claims; context relevance and precision: a row without
passages) is a ``Score: 0`` read. With a ``prompt=`` template of the user's own
(``score_fallback=True``), such a reply is read by its ``Score:`` line.

Examples
--------
>>> spec = JudgeSpec("", "share")
>>> score_reply(spec, "Claim: a\\nVerdict: yes\\nClaim: b\\nVerdict: no").score
0.5
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe.judges.parse import CORRECTNESS_LABELS, parse_reply, read_claim_verdicts, read_passage_verdicts
from ragframe.kernels.ranking import average_precision

__all__ = ["SCORINGS", "JudgeSpec", "ScoredReply", "aggregate_replies", "reply_check", "score_reply"]

#: How a reply becomes a score.
SCORINGS = ("score", "share", "passages", "ranked", "f1")


@dataclass(frozen=True)
class JudgeSpec:
    """The kernel of a judge metric: its prompt template and how a reply becomes a score.

    Parameters
    ----------
    template : str
        The prompt, with ``{role}`` placeholders for the metric's inputs.
    scoring : str
        ``"score"``, ``"share"``, ``"passages"``, ``"ranked"`` or ``"f1"`` (module doc).
    parser : callable, optional
        ``parser(reply) -> score`` (a number in [0, 1] or None), ``(score, reason)`` or a
        :class:`~ragframe.judges.parse.ParsedReply`; replaces ``scoring`` (custom judge metrics).
    score_fallback : bool
        A decomposed reply (``scoring`` other than ``"score"``) without any claim or verdict
        line is read by its ``Score:`` line. False for the built-in metrics' own templates
        (they ask for the verdicts: such a reply is a ``parse_error``); a ``prompt=``
        template turns it back on (it may ask for a score only).
    zero_without_claims : bool
        Without ``score_fallback``: a reply without claim lines is read when its ``Score:``
        line says 0 (faithfulness: the template asks "Score: 0" for an answer without claims).
    """

    template: str
    scoring: str = "score"
    parser: Callable[[str], Any] | None = None
    score_fallback: bool = True
    zero_without_claims: bool = False


@dataclass(frozen=True)
class ScoredReply:
    """One reply read: score (None unless ok), reason, ``ok`` or ``parse_error``, and why."""

    score: float | None
    reason: str | None
    status: str
    error: str | None


# ----------------------------------------------------------------------------- reading replies


def _fallback(text: str, json_mode: bool) -> ScoredReply:
    parsed = parse_reply(text, json_mode=json_mode, strict=True)
    return ScoredReply(parsed.score, parsed.reason, parsed.status, parsed.error)


def _average_precision(verdicts: Sequence[bool]) -> float:
    """The passages' verdicts as one ranking, the ``yes`` ones relevant (trec_eval's kernel)."""
    ranks = np.flatnonzero(np.asarray(verdicts, dtype=bool))
    relevant = np.array([max(ranks.size, 1)], dtype=np.float64)  # R: every passage is judged
    return float(average_precision(np.zeros(ranks.size, dtype=np.int64), ranks, np.arange(ranks.size), relevant)[0])


def _f1(claims: Sequence[bool], covered: Sequence[bool]) -> float:
    precision = sum(claims) / len(claims) if claims else 0.0
    recall = sum(covered) / len(covered)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _user_parser(parser: Callable[[str], Any], text: str) -> ScoredReply:
    try:
        got = parser(text)
    except Exception as error:  # user code: a failure to read one reply is that row's parse_error
        return ScoredReply(None, None, "parse_error", f"parser raised {type(error).__name__}: {error}")
    reason = None
    if hasattr(got, "status") and hasattr(got, "score"):
        return ScoredReply(got.score, got.reason, got.status, got.error)
    if isinstance(got, tuple) and len(got) == 2:
        got, reason = got
    if got is None:
        return ScoredReply(None, reason, "parse_error", "the parser found no score")
    if isinstance(got, bool) or not isinstance(got, (int, float, np.number)) or not math.isfinite(got):
        return ScoredReply(None, reason, "parse_error", f"the parser returned {got!r}, not a number in [0, 1]")
    if not 0.0 <= float(got) <= 1.0:
        return ScoredReply(None, reason, "parse_error", f"the parser returned {got!r}, outside [0, 1]")
    return ScoredReply(float(got), None if reason is None else str(reason), "ok", None)


def score_reply(spec: JudgeSpec, text: str, n_contexts: int | None = None, *, json_mode: bool = False) -> ScoredReply:
    """Read one reply the way ``spec`` says (module doc; the line rules are :mod:`ragframe.judges.parse`'s).

    Parameters
    ----------
    spec : JudgeSpec
        The metric's kernel.
    text : str
        The judge's reply.
    n_contexts : int, optional
        The row's number of passages (``"passages"`` and ``"ranked"`` match one verdict per passage).
    json_mode : bool
        The ``Score:`` fallback reads a JSON object instead.

    Returns
    -------
    ScoredReply

    Examples
    --------
    >>> spec = JudgeSpec("", "share")
    >>> score_reply(spec, "Claim: a\\nVerdict: yes\\nClaim: b\\nVerdict: no\\nScore: 1/2\\nReason: b unstated").score
    0.5
    >>> half = score_reply(spec, "Claim: a\\nClaim: b\\nVerdict: yes (supported)")  # claim a is not answered
    >>> half.status, half.error
    ('parse_error', "claim 1 'a' has no 'Verdict:' line")
    >>> score_reply(JudgeSpec("", "ranked"), "Verdict 1: no\\nVerdict 2: yes", 2).score  # (1/2) / 1
    0.5
    >>> score_reply(JudgeSpec("", "ranked"), "Verdict 1: yes", 2).error
    'no verdict for passage 2 (the row has 2 passages)'
    """
    if spec.parser is not None:
        return _user_parser(spec.parser, text)
    base = _fallback(text, json_mode)
    if spec.scoring == "score":
        return base
    if spec.scoring in ("passages", "ranked"):
        reading = read_passage_verdicts(text, n_contexts)
    elif spec.scoring == "f1":
        reading = read_claim_verdicts(text, CORRECTNESS_LABELS)
    else:
        reading = read_claim_verdicts(text)
    if not reading.labelled:
        return base if spec.score_fallback else _undecomposed(spec, base, n_contexts)
    if reading.error is not None:
        return ScoredReply(None, base.reason, "parse_error", reading.error)
    verdicts = reading.verdicts[0]
    if spec.scoring == "f1":
        if not reading.verdicts[1]:
            error = "no reference claim ('Reference claim:' lines, each followed by one 'Covered:' line)"
            return ScoredReply(None, base.reason, "parse_error", error)
        return ScoredReply(_f1(verdicts, reading.verdicts[1]), base.reason, "ok", None)
    if spec.scoring == "ranked":
        return ScoredReply(_average_precision(verdicts), base.reason, "ok", None)
    return ScoredReply(sum(verdicts) / len(verdicts), base.reason, "ok", None)


def _undecomposed(spec: JudgeSpec, base: ScoredReply, n_contexts: int | None) -> ScoredReply:
    """A reply without any claim or verdict line to a packaged template: the ``Score: 0`` it allows, else an error."""
    if spec.scoring in ("passages", "ranked"):
        allowed = n_contexts == 0
        asked = "no 'Verdict <passage number>:' line: the template asks one per passage"
        asked += "" if n_contexts is None else f" (the row has {n_contexts} passages)"
    elif spec.scoring == "f1":
        allowed = False
        asked = (
            "no 'Answer claim:' or 'Reference claim:' line: the template asks one 'Verdict:' per answer claim "
            "and one 'Covered:' per reference claim"
        )
    else:
        allowed = spec.zero_without_claims
        asked = "no 'Claim:' or 'Verdict:' line: the template asks one 'Verdict:' per claim"
    if allowed and base.status == "ok" and base.score == 0.0:
        return base
    if allowed:
        asked += " (a reply without them must say 'Score: 0')"
    return ScoredReply(None, base.reason, "parse_error", asked)


def reply_check(spec: JudgeSpec, counts: list[int] | None, json_mode: bool) -> Callable[[int, str], str | None]:
    """``check(row, reply)``: why a row's reply cannot be read by ``spec``, None when it can (the runner re-asks)."""

    def check(row: int, text: str) -> str | None:
        return score_reply(spec, text, None if counts is None else counts[row], json_mode=json_mode).error

    return check


def aggregate_replies(
    replies: pl.DataFrame,
    spec: JudgeSpec,
    skipped: list[str | None],
    counts: list[int] | None,
    json_mode: bool,
) -> tuple[list[float | None], list[float | None], list[str | None], list[str], list[str | None]]:
    """Per row of the prompts: the mean score over the samples read, their std, the first reason, status and error.

    Parameters
    ----------
    replies : polars.DataFrame
        :func:`ragframe.judges.judge_prompts`'s result (``row``, ``sample``, ``status``,
        ``text``, ``error``).
    spec : JudgeSpec
        How a reply becomes a score.
    skipped : list of str or None
        Per row, why it was not asked (None: it was).
    counts : list of int, optional
        Per row, its number of passages (``"passages"`` and ``"ranked"``).
    json_mode : bool
        The replies are JSON objects.

    Returns
    -------
    tuple of lists
        ``scores``, ``stds`` (None unless two samples or more were read), ``reasons``,
        ``statuses`` and ``errors``, one entry per row.

    Examples
    --------
    >>> import polars as pl
    >>> replies = pl.DataFrame({"row": [0, 0], "sample": [0, 1], "status": ["ok", "ok"],
    ...                         "text": ["Score: 0.2", "Score: 0.4"], "error": [None, None]})
    >>> scores, stds, _, statuses, errors = aggregate_replies(replies, JudgeSpec(""), [None, "null"], None, False)
    >>> scores, statuses, errors
    ([0.30000000000000004, None], ['ok', 'skipped'], [None, 'null'])
    """
    n = len(skipped)
    samples: list[list[float]] = [[] for _ in range(n)]
    reasons: list[str | None] = [None] * n
    failure: list[tuple[str, str | None] | None] = [None] * n
    for row, status, text, error in replies.sort("row", "sample").select("row", "status", "text", "error").iter_rows():
        if status in ("ok", "parse_error") and text is not None:
            got = score_reply(spec, text, None if counts is None else counts[row], json_mode=json_mode)
            status, error = got.status, error if got.status != "ok" and error is not None else got.error
            reasons[row] = reasons[row] if reasons[row] is not None else got.reason
            if got.status == "ok":
                samples[row].append(got.score)  # type: ignore[arg-type]
                continue
        if failure[row] is None:
            failure[row] = (status, error)
    scores: list[float | None] = [float(np.mean(s)) if s else None for s in samples]
    stds: list[float | None] = [float(np.std(s, ddof=1)) if len(s) > 1 else None for s in samples]
    statuses: list[str] = []
    errors: list[str | None] = []
    for i in range(n):
        if samples[i]:
            statuses.append("ok")
            errors.append(None)
        elif skipped[i] is not None:
            statuses.append("skipped")
            errors.append(skipped[i])
        else:
            status, error = failure[i] or ("skipped", None)
            statuses.append(status)
            errors.append(error if error is not None or status != "skipped" else "dry run: not judged")
    return scores, stds, reasons, statuses, errors
