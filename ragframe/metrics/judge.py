"""The ``judge`` family: RAG metrics scored by an LLM judge, one prompt per row.

A judge metric renders its prompt template (package data, ``ragframe/judges/prompts/``) with
the row's values, sends it to the judge through the runner (:mod:`ragframe.judges.runner`:
bounded concurrency, retries, the persistent cache, usage accounting) and reads the reply.
It writes ``<name>`` (Float64 in [0, 1], null when no score), ``<name>_reason``,
``<name>_status`` (one of :data:`ragframe.judges.STATUSES`: ``ok``, ``parse_error``,
``timeout``, ``http_error``, ``rate_limited``, ``judge_error``, ``skipped``), ``<name>_error``
(null when ok) and, with ``n_samples > 1``, ``<name>_std``. A per-row failure never raises:
the row gets a null score and a status.

Templates are plain text with the placeholders ``{question}``, ``{answer}``, ``{contexts}``
(the passages numbered ``[1] ...``, one per paragraph) and ``{ground_truth}``; other braces are
left as they are. How a reply becomes a score (``JudgeSpec.scoring``; the line rules are
:mod:`ragframe.judges.parse`'s, strict: every claim or passage answered exactly once):

- ``"score"``: the reply's ``Score:`` lines (langrag's rules; several must agree).
- ``"share"``: the claims the reply lists (``Claim:``), each matched to exactly one
  ``Verdict:`` line (decomposed as RAGAS does); the score is the share of ``yes``.
- ``"passages"``: one ``Verdict`` line per passage (by number or in order); the share of ``yes``.
- ``"ranked"``: one ``Verdict`` line per passage; the average precision of the ``yes``
  passages by rank (RAGAS context precision).
- ``"f1"``: ``Answer claim:`` lines with one ``Verdict:`` each (precision) and ``Reference
  claim:`` lines with one ``Covered:`` each (recall); the score is their F1 (RAGAS factual
  correctness).

A reply whose claims and verdicts do not match one to one is a ``parse_error`` naming the
claim or passage; a reply without any claim or verdict line is read by its ``Score:`` line.
An unreadable reply is asked again (``parse_retries`` times, a format reminder appended;
:func:`ragframe.judges.judge_prompts`).

Examples
--------
>>> import polars as pl
>>> import ragframe as rf
>>> def judge(prompt):
...     return "Claim: Paris is in France.\\nVerdict: yes\\nScore: 1/1\\nReason: stated in [1]."
>>> df = pl.DataFrame({"answer": ["Paris is in France."], "contexts": [["Paris is a city in France."]]})
>>> out = rf.judge_faithfulness(df, judge=judge, cache=False)
>>> out.select("judge_faithfulness", "judge_faithfulness_status").row(0)
(1.0, 'ok')
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.metrics.heuristic_kernels import TextColumns
from ragframe.metrics.registry import (
    Family,
    Metric,
    Requests,
    check_options,
    get_metric,
    metrics,
    option,
    register_family,
    register_metric,
)
from ragframe.metrics.text_engine import contexts_column, string_column

__all__ = [
    "JUDGE_METRICS",
    "JudgeSpec",
    "ScoredReply",
    "counterpart",
    "load_template",
    "render",
    "template_placeholders",
    "JudgeOptions",
]

logger = logging.getLogger("ragframe.judge")

#: The text roles every judge template may use (custom judge metrics may add their own).
TEXT_ROLES = ("question", "answer", "contexts", "ground_truth")
#: How a reply becomes a score.
SCORINGS = ("score", "share", "passages", "ranked", "f1")
#: Default pass threshold of the built-in judge metrics (not calibrated: see docs/judges.md).
JUDGE_THRESHOLD = 0.5
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")


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
    """

    template: str
    scoring: str = "score"
    parser: Callable[[str], Any] | None = None


@dataclass(frozen=True)
class ScoredReply:
    """One reply read: score (None unless ok), reason, ``ok`` or ``parse_error``, and why."""

    score: float | None
    reason: str | None
    status: str
    error: str | None


@cache
def load_template(name: str) -> str:
    """The packaged prompt template of a built-in judge metric.

    Parameters
    ----------
    name : str
        ``faithfulness``, ``answer_relevance``, ``context_relevance``, ``context_precision``,
        ``context_recall`` or ``answer_correctness``.

    Returns
    -------
    str

    Examples
    --------
    >>> sorted(template_placeholders(load_template("faithfulness")))
    ['answer', 'contexts']
    """
    return resources.files("ragframe.judges").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")


def template_placeholders(template: str) -> set[str]:
    """The ``{name}`` placeholders of a template (other braces are text).

    Examples
    --------
    >>> sorted(template_placeholders('Q: {question} A: {answer} as {"score": 1}'))
    ['answer', 'question']
    """
    return set(_PLACEHOLDER.findall(template))


def render(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each ``{name}`` of ``values`` replaced (once, never re-read as a template).

    Examples
    --------
    >>> render("Q: {question} {other}", {"question": "why {x}?"})
    'Q: why {x}? {other}'
    """
    return _PLACEHOLDER.sub(lambda m: values.get(m[1], m[0]), template)


def format_contexts(chunks: Sequence[str]) -> str:
    """Passages numbered as the templates show them.

    Examples
    --------
    >>> print(format_contexts(["Paris is in France.", "Lyon too."]))
    [1] Paris is in France.
    <BLANKLINE>
    [2] Lyon too.
    >>> format_contexts([])
    '(no passages)'
    """
    if not chunks:
        return "(no passages)"
    return "\n\n".join(f"[{i}] {chunk}" for i, chunk in enumerate(chunks, start=1))


# ----------------------------------------------------------------------------- reading replies


def _fallback(text: str, json_mode: bool) -> ScoredReply:
    from ragframe.judges.parse import parse_reply

    parsed = parse_reply(text, json_mode=json_mode, strict=True)
    return ScoredReply(parsed.score, parsed.reason, parsed.status, parsed.error)


def _average_precision(verdicts: Sequence[bool]) -> float:
    hits = np.cumsum(np.asarray(verdicts, dtype=np.float64))
    relevant = hits[-1] if len(hits) else 0.0
    if relevant == 0:
        return 0.0
    ranks = np.arange(1, len(hits) + 1)
    return float(np.sum(np.asarray(verdicts) * hits / ranks) / relevant)


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
    from ragframe.judges.parse import CORRECTNESS_LABELS, read_claim_verdicts, read_passage_verdicts

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
        return base
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


def reply_check(spec: JudgeSpec, counts: list[int] | None, json_mode: bool) -> Callable[[int, str], str | None]:
    """``check(row, reply)``: why a row's reply cannot be read by ``spec``, None when it can (the runner re-asks)."""

    def check(row: int, text: str) -> str | None:
        return score_reply(spec, text, None if counts is None else counts[row], json_mode=json_mode).error

    return check


# ----------------------------------------------------------------------------- prompts per row


def role_column(role: str, options: Mapping[str, Any]) -> str:
    """The column a role is read from: the option of that name when set (text roles), else the role."""
    named = options.get(role)
    return named if isinstance(named, str) and named else role


def _role_values(series: pl.Series, role: str, column: str, function: str) -> tuple[list[Any], list[int] | None]:
    """The role's values as prompt text (None when null) and, for contexts, each row's passage count."""
    if role == "contexts":
        chunks = contexts_column(series.to_frame(column), column, function).to_list()
        return [None if c is None else format_contexts(c) for c in chunks], [0 if c is None else len(c) for c in chunks]
    if role in TEXT_ROLES:
        texts = string_column(series.to_frame(column), column, function).to_list()
        if role == "ground_truth":  # no reference to judge against, as the heuristics read it
            texts = [None if t is None or not t.strip() else t for t in texts]
        return texts, None
    if isinstance(series.dtype, pl.List) and series.dtype.inner in (pl.String, pl.Null):
        return [None if v is None else format_contexts(v) for v in series.to_list()], None
    if series.dtype in (pl.Object, pl.Binary) or isinstance(series.dtype, pl.Struct):
        raise SchemaError("wrong dtype", function=function, column=column, expected="text", found=str(series.dtype))
    return [None if v is None else str(v) for v in series.to_list()], None


def build_prompts(
    view: pl.DataFrame, metric: Metric, template: str, options: Mapping[str, Any], function: str
) -> tuple[list[str | None], list[str | None], list[int] | None]:
    """Each row's prompt (None when an input is null: skipped), why it was skipped, passage counts."""
    n = view.height
    values: dict[str, list[Any]] = {}
    counts = None
    for role in metric.inputs:
        column = role_column(role, options)
        values[role], role_counts = _role_values(view.get_column(column), role, column, function)
        counts = role_counts if role_counts is not None else counts
    prompts: list[str | None] = []
    skipped: list[str | None] = []
    for i in range(n):
        null = next((role for role in metric.inputs if values[role][i] is None), None)
        if null is not None:
            prompts.append(None)
            skipped.append(f"{'null or empty' if null == 'ground_truth' else 'null'} {null}: not judged")
            continue
        prompts.append(render(template, {role: values[role][i] for role in metric.inputs}))
        skipped.append(None)
    return prompts, skipped, counts


# ----------------------------------------------------------------------------- the family


def _run(
    judge: Any,
    prompts: list[str | None],
    metric: str,
    options: Mapping[str, Any],
    check: Callable[[int, str], str | None],
) -> pl.DataFrame:
    from ragframe.judges.runner import judge_prompts

    return judge_prompts(
        judge,
        prompts,
        metric=metric,
        n_samples=options["n_samples"],
        cache=options["cache"],
        dry_run=options["dry_run"],
        check=check,
        parse_retries=options["parse_retries"],
        retry_parse_errors=options["retry_parse_errors"],
        memo=options.get("_memo"),
        gate=None if options.get("_budget") is None else options["_budget"].gate,
    )


def _aggregate(
    replies: pl.DataFrame,
    spec: JudgeSpec,
    skipped: list[str | None],
    counts: list[int] | None,
    json_mode: bool,
) -> tuple[list[float | None], list[float | None], list[str | None], list[str], list[str | None]]:
    """Per row: mean score over the samples read, their std, the first reason, status and error."""
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


def template_for(metric: Metric, options: Mapping[str, Any]) -> str:
    """The template a judge metric renders: the ``prompt=`` option's for it, else its own."""
    prompts = options["prompt"]  # "*": one template for the run's only judged metric (checked by the evaluator)
    return prompts.get(metric.name, prompts.get("*", metric.kernel.template))


def _leave_out_unchosen(
    prompts: list[str | None], skipped: list[str | None], metric: str, options: Mapping[str, Any]
) -> None:
    """A judge budget's draw: the candidate rows it did not choose get no prompt and say why."""
    run = options.get("_budget")
    chosen = None if run is None else run.chosen.get(metric)
    if chosen is None:
        return
    reason = run.reason()
    for row, prompt in enumerate(prompts):
        if prompt is not None and not chosen[row]:
            prompts[row], skipped[row] = None, reason


def _score_metric(view: pl.DataFrame, metric: Metric, options: Mapping[str, Any], function: str) -> list[pl.Series]:
    spec: JudgeSpec = metric.kernel
    prompts, skipped, counts = build_prompts(view, metric, template_for(metric, options), options, function)
    _leave_out_unchosen(prompts, skipped, metric.name, options)
    name = metric.name
    json_mode = bool(getattr(options["judge"], "json_mode", False))
    if view.height and any(p is not None for p in prompts):
        judge = options["judge"]
        if judge is None:
            raise InvalidParameterError(f"{function}: judge metric {name!r} needs judge= (a callable prompt -> str)")
        replies = _run(judge, prompts, name, options, reply_check(spec, counts, json_mode))
    else:
        replies = pl.DataFrame(
            schema={"row": pl.Int64, "sample": pl.Int64, "text": pl.String, "status": pl.String, "error": pl.String}
        )
    scores, stds, reasons, statuses, errors = _aggregate(replies, spec, skipped, counts, json_mode)
    out = [
        pl.Series(name, scores, dtype=pl.Float64),
        pl.Series(f"{name}_reason", reasons, dtype=pl.String),
        pl.Series(f"{name}_status", statuses, dtype=pl.String),
        pl.Series(f"{name}_error", errors, dtype=pl.String),
    ]
    if options["n_samples"] > 1:
        out.append(pl.Series(f"{name}_std", stds, dtype=pl.Float64))
    return out


def _score(view: pl.DataFrame, requests: Requests, options: Mapping[str, Any], function: str) -> pl.DataFrame:
    columns: list[pl.Series] = []
    for metric, _ in requests:
        columns += _score_metric(view, metric, options, function)
    return pl.DataFrame(columns, height=view.height)


def _columns(requests: Requests, options: Mapping[str, Any], available: Sequence[str]) -> dict[str, str]:
    return {role: role_column(role, options) for metric, _ in requests for role in metric.inputs}


def check_judge(judge: Any, function: str) -> Any:
    """A :class:`~ragframe.judges.base.Judge` from a callable, a Judge, a model name or OpenAIJudge options.

    Parameters
    ----------
    judge : callable, Judge, str or mapping
        A callable ``prompt -> str`` (sync or async), an object with ``complete`` and
        ``identity`` (``rf.OpenAIJudge``), a model name (``rf.OpenAIJudge(model)``) or a mapping
        of ``rf.OpenAIJudge`` keywords (``{"model": ..., "base_url": ...}``: what a TOML config holds).
    function : str
        The public function named in errors.

    Returns
    -------
    Judge

    Examples
    --------
    >>> check_judge(str.upper, "evaluate").identity()
    {'callable': 'str.upper'}
    """
    from ragframe.judges.base import as_judge

    if isinstance(judge, (str, Mapping)):
        config = (("model", judge),) if isinstance(judge, str) else tuple(sorted(dict(judge).items()))
        try:
            hash(config)
        except TypeError:  # a nested value (extra_body={...}): a judge of its own
            return _openai_judge.__wrapped__(config)
        return _openai_judge(config)
    try:
        return as_judge(judge)
    except InvalidParameterError as error:
        raise InvalidParameterError(f"{function}: {error}") from None


@lru_cache(maxsize=16)
def _openai_judge(config: tuple[tuple[str, Any], ...]) -> Any:
    """One ``rf.OpenAIJudge`` per configuration, so that a run's calls share its rate limits and ledger."""
    from ragframe.judges import OpenAIJudge

    return OpenAIJudge(**dict(config))


def _check_cache(cache: Any, function: str) -> Any:
    import os

    from ragframe.judges.cache import JudgeCache

    if isinstance(cache, (bool, str, os.PathLike, JudgeCache)):
        return cache
    raise validate.fail(function, "cache", "True (the user cache folder), False, a file path or a JudgeCache", cache)


def _check_prompt(prompt: Any, function: str) -> dict[str, str]:
    """``prompt=``: None, a str (checked against the one judged metric later) or {metric: template}."""
    if prompt is None:
        return {}
    if isinstance(prompt, str):
        return {"*": prompt}
    items = prompt.items() if isinstance(prompt, Mapping) else prompt if isinstance(prompt, tuple) else None
    if items is None:
        raise validate.fail(function, "prompt", "a template (str) or a dict of judge metric -> template", prompt)
    out: dict[str, str] = {}
    for key, template in items:
        metric = counterpart_name(key)
        if metric is None:
            judged = [m.name for m in metrics("judge")]
            raise InvalidParameterError(
                f"{function}: prompt names {key!r}, which is not a judge metric; choose from {judged}"
            )
        if not isinstance(template, str):
            raise validate.fail(function, f"prompt[{key!r}]", "a template (str)", template)
        out[metric] = template
    return out


def _judge_option(value: Any, name: str, function: str) -> Any:
    return None if value is None else check_judge(value, function)


def _cache_option(value: Any, name: str, function: str) -> Any:
    return _check_cache(value, function)


def _prompt_option(value: Any, name: str, function: str) -> dict[str, str]:
    return _check_prompt(value, function)


@dataclass(frozen=True)
class JudgeOptions(TextColumns):
    """The judge family's options: each one's default, check and documentation, declared once."""

    judge: Any = option(
        None,
        "A callable ``prompt -> str`` (sync or async), a Judge such as ``rf.OpenAIJudge``, a model name or "
        "``rf.OpenAIJudge``'s keywords as a dict.",
        check=_judge_option,
    )
    cache: Any = option(
        True,
        "The persistent reply cache: True (the user cache folder), False, a file path or a JudgeCache.",
        check=_cache_option,
    )
    n_samples: int = option(
        1,
        "Judge each row this many times; the score is their mean and ``<name>_std`` their spread.",
        check=validate.positive_int,
        invalid=(0,),
        costly=True,
    )
    prompt: Any = option(
        None, "Replaces the packaged template (a str, or a dict of metric -> template).", check=_prompt_option
    )
    dry_run: bool = option(
        False,
        "Call nothing: every row ``skipped``; the runner's usage shows the estimated tokens.",
        check=validate.flag,
    )
    parse_retries: int = option(
        2,
        "An unreadable reply is asked again up to this many times, with a format reminder.",
        check=lambda value, name, function: validate.integer(value, name, function, minimum=0),
        invalid=(-1,),
    )
    retry_parse_errors: bool = option(
        True, "A rerun asks again the rows whose cached reply was unreadable (False: it stands).", check=validate.flag
    )


def _check(options: dict[str, Any], function: str) -> dict[str, Any]:
    # one evaluate call (one LazyFrame plan): each (prompt, sample) judged once, however often it is collected
    return {**check_options(JudgeOptions, options, function), "_memo": {}}


register_family(
    Family(
        name="judge",
        score=_score,
        options=JudgeOptions,
        check=_check,
        columns=_columns,
        per_metric="{name}",
        run_options=("budget", "budget_seed", "by"),
    )
)


def counterpart_name(name: Any) -> str | None:
    """The judge metric a name stands for: a judge metric's own name, or a heuristic one's counterpart."""
    if not isinstance(name, str):
        return None
    for candidate in (name, f"judge_{name}"):
        try:
            if get_metric(candidate).family == "judge":
                return candidate
        except InvalidParameterError:
            continue
    return None


def counterpart(metric: Metric) -> Metric | None:
    """The judge metric that scores what a heuristic metric scores (``faithfulness`` -> ``judge_faithfulness``).

    Parameters
    ----------
    metric : Metric
        A registered metric.

    Returns
    -------
    Metric or None
        The judge metric of the same inputs named ``judge_<name>``; None for metrics without one
        (ranking measures, ``hallucination_rate``, custom metrics).

    Examples
    --------
    >>> counterpart(get_metric("faithfulness")).name, counterpart(get_metric("mrr"))
    ('judge_faithfulness', None)
    """
    if metric.family != "heuristic":
        return None
    name = counterpart_name(metric.name)
    if name is None or name == metric.name:
        return None
    judge = get_metric(name)
    return judge if set(judge.inputs) == set(metric.inputs) else None


# ----------------------------------------------------------------------------- the six built-in metrics

_BUILTIN: dict[str, tuple[tuple[str, ...], str, str]] = {
    "faithfulness": (
        ("answer", "contexts"),
        "share",
        "Share of the answer's claims the contexts support, claim by claim (RAGAS).",
    ),
    "answer_relevance": (
        ("question", "answer"),
        "score",
        "How directly and completely the answer addresses the question, rated by the judge.",
    ),
    "context_relevance": (
        ("question", "contexts"),
        "passages",
        "Share of the contexts the judge finds relevant to the question.",
    ),
    "context_precision": (
        ("question", "contexts"),
        "ranked",
        "Average precision of the contexts the judge finds useful, by rank (RAGAS).",
    ),
    "context_recall": (
        ("ground_truth", "contexts"),
        "share",
        "Share of the reference answer's claims found in the contexts (RAGAS).",
    ),
    "answer_correctness": (
        ("ground_truth", "answer"),
        "f1",
        "F1 of the answer's claims against the reference's, claim by claim (RAGAS factual correctness).",
    ),
}
for _name, (_inputs, _scoring, _description) in _BUILTIN.items():
    register_metric(
        Metric(
            name=f"judge_{_name}",
            family="judge",
            inputs=_inputs,
            description=_description,
            kernel=JudgeSpec(load_template(_name), _scoring),
            threshold=JUDGE_THRESHOLD,
        )
    )

#: The six built-in judge metrics.
JUDGE_METRICS: tuple[str, ...] = tuple(f"judge_{name}" for name in _BUILTIN)
