"""The ``judge`` family: RAG metrics scored by an LLM judge, one prompt per row.

A judge metric renders its prompt template (package data, ``ragframe/judges/prompts/``) with
the row's values, sends it to the judge through the runner (:mod:`ragframe.judges.runner`:
bounded concurrency, retries, the persistent cache, usage accounting) and reads the reply.
It writes ``<name>`` (Float64 in [0, 1], null when no score), ``<name>_reason``,
``<name>_status`` (one of :data:`ragframe.judges.STATUSES`: ``ok``, ``parse_error``,
``timeout``, ``http_error``, ``rate_limited``, ``judge_error``, ``skipped``), ``<name>_error``
(null when ok) and, with ``n_samples > 1``, ``<name>_std``. A per-row failure never raises:
the row gets a null score and a status.

The prompt templates (package data, their placeholders, how a row fills them) are
:mod:`ragframe.judges.templates`'s; how a reply becomes a score (``JudgeSpec.scoring``,
strict: every claim or passage answered exactly once; a reply without any verdict to a
packaged decomposed template is a ``parse_error``) is :mod:`ragframe.judges.scoring`'s. This
module defines the family (its options, their checks, the prompts per row) and registers the
six built-in metrics; :func:`judge_metric` registers one of your own.
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

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.judges.client import judge_from
from ragframe.judges.scoring import JudgeSpec, ScoredReply, aggregate_replies, reply_check
from ragframe.judges.templates import (
    TEXT_ROLES,
    check_template,
    format_contexts,
    load_template,
    render,
    template_placeholders,
)
from ragframe.metrics.callback import check_inputs
from ragframe.metrics.heuristic_kernels import TextColumns
from ragframe.metrics.registry import (
    Family,
    Metric,
    Requests,
    RunState,
    check_options,
    get_metric,
    metrics,
    option,
    register_family,
    register_metric,
)
from ragframe.metrics.text_engine import contexts_column, string_column
from ragframe.public import public

__all__ = [
    "JUDGE_METRICS",
    "JudgeSpec",
    "ScoredReply",
    "counterpart",
    "judge_metric",
    "load_template",
    "render",
    "template_placeholders",
    "JudgeOptions",
]

logger = logging.getLogger("ragframe.judge")

#: Default pass threshold of the built-in judge metrics (not calibrated: see docs/judges.md).
JUDGE_THRESHOLD = 0.5


# ----------------------------------------------------------------------------- prompts per row


def role_column(role: str, options: Mapping[str, Any]) -> str:
    """The column a role is read from: the option of that name when set (text roles), else the role."""
    named = options.get(role)
    return named if isinstance(named, str) and named else role


def _role_values(series: pl.Series, role: str, column: str) -> tuple[list[Any], list[int] | None]:
    """The role's values as prompt text (None when null) and, for contexts, each row's passage count."""
    if role == "contexts":
        chunks = contexts_column(series.to_frame(column), column).to_list()
        return [None if c is None else format_contexts(c) for c in chunks], [0 if c is None else len(c) for c in chunks]
    if role in TEXT_ROLES:
        texts = string_column(series.to_frame(column), column).to_list()
        if role == "ground_truth":  # no reference to judge against, as the heuristics read it
            texts = [None if t is None or not t.strip() else t for t in texts]
        return texts, None
    if isinstance(series.dtype, pl.List) and series.dtype.inner in (pl.String, pl.Null):
        return [None if v is None else format_contexts(v) for v in series.to_list()], None
    if series.dtype in (pl.Object, pl.Binary) or isinstance(series.dtype, pl.Struct):
        raise SchemaError("wrong dtype", column=column, expected="text", found=str(series.dtype))
    return [None if v is None else str(v) for v in series.to_list()], None


def build_prompts(
    view: pl.DataFrame, metric: Metric, template: str, options: Mapping[str, Any]
) -> tuple[list[str | None], list[str | None], list[int] | None]:
    """Each row's prompt (None when an input is null: skipped), why it was skipped, passage counts."""
    if hasattr(metric.kernel, "prompts"):  # a judge metric with prompts of its own (judge_nugget_assignment)
        return metric.kernel.prompts(view, template, options)
    n = view.height
    values: dict[str, list[Any]] = {}
    counts = None
    for role in metric.inputs:
        column = role_column(role, options)
        values[role], role_counts = _role_values(view.get_column(column), role, column)
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
    state: RunState,
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
        memo=state.memo("judge"),
        gate=None if state.budget is None else state.budget.gate,
    )


def template_for(metric: Metric, options: Mapping[str, Any]) -> str:
    """The template a judge metric renders: the ``prompt=`` option's for it, else its own."""
    prompts = options["prompt"]  # "*": one template for the run's only judged metric (checked by the evaluator)
    return prompts.get(metric.name, prompts.get("*", metric.kernel.template))


def _leave_out_unchosen(prompts: list[str | None], skipped: list[str | None], metric: str, run: Any) -> None:
    """A judge budget's draw (``run``: the call's, or None): the candidate rows it did not choose get no prompt."""
    chosen = None if run is None else run.chosen.get(metric)
    if chosen is None:
        return
    reason = run.reason()
    for row, prompt in enumerate(prompts):
        if prompt is not None and not chosen[row]:
            prompts[row], skipped[row] = None, reason


def _score_metric(view: pl.DataFrame, metric: Metric, options: Mapping[str, Any], state: RunState) -> list[pl.Series]:
    if not isinstance(metric.kernel, JudgeSpec):  # its own prompts and reading (judge_nugget_assignment)
        return metric.kernel.score_rows(view, metric, options, state)
    spec: JudgeSpec = metric.kernel
    template = template_for(metric, options)
    if template != spec.template and not spec.score_fallback:  # the user's template may ask for a score only
        spec = replace(spec, score_fallback=True)
    prompts, skipped, counts = build_prompts(view, metric, template, options)
    _leave_out_unchosen(prompts, skipped, metric.name, state.budget)
    name = metric.name
    json_mode = bool(getattr(options["judge"], "json_mode", False))
    if json_mode and spec.scoring != "score" and not spec.score_fallback:  # every row a parse_error: say so first
        raise InvalidParameterError(
            f"{name!r} reads one verdict line per claim or passage, and a judge with json_mode=True "
            "answers a JSON object without them; pass prompt= with a template that asks for "
            '{"score": ..., "reason": ...}, or a judge without json_mode'
        )
    if view.height and any(p is not None for p in prompts):
        judge = options["judge"]
        if judge is None:
            raise InvalidParameterError(
                f"judge metric {name!r} needs {{judge}} (a callable prompt -> str)", mentions={"judge": ""}
            )
        replies = _run(judge, prompts, name, options, reply_check(spec, counts, json_mode), state)
    else:
        replies = pl.DataFrame(
            schema={"row": pl.Int64, "sample": pl.Int64, "text": pl.String, "status": pl.String, "error": pl.String}
        )
    scores, stds, reasons, statuses, errors = aggregate_replies(replies, spec, skipped, counts, json_mode)
    out = [
        pl.Series(name, scores, dtype=pl.Float64),
        pl.Series(f"{name}_reason", reasons, dtype=pl.String),
        pl.Series(f"{name}_status", statuses, dtype=pl.String),
        pl.Series(f"{name}_error", errors, dtype=pl.String),
    ]
    if options["n_samples"] > 1:
        out.append(pl.Series(f"{name}_std", stds, dtype=pl.Float64))
    return out


def _score(
    view: pl.DataFrame, requests: Requests, options: Mapping[str, Any], state: RunState | None = None
) -> pl.DataFrame:
    # state: one evaluate call (one LazyFrame plan) judges each (prompt, sample) once, however often it is collected
    state = RunState() if state is None else state
    columns: list[pl.Series] = []
    for metric, _ in requests:
        columns += _score_metric(view, metric, options, state)
    return pl.DataFrame(columns, height=view.height)


def _columns(requests: Requests, options: Mapping[str, Any], available: Sequence[str]) -> dict[str, str]:
    return {role: role_column(role, options) for metric, _ in requests for role in metric.inputs}


def _check_cache(cache: Any) -> Any:
    import os

    from ragframe.judges.cache import JudgeCache

    if isinstance(cache, (bool, str, os.PathLike, JudgeCache)):
        return cache
    raise validate.fail("cache", "True (the user cache folder), False, a file path or a JudgeCache", cache)


def _check_prompt(prompt: Any) -> dict[str, str]:
    """``prompt=``: None, a str (checked against the one judged metric later) or {metric: template}."""
    if prompt is None:
        return {}
    if isinstance(prompt, str):
        return {"*": prompt}
    items = prompt.items() if isinstance(prompt, Mapping) else prompt if isinstance(prompt, tuple) else None
    if items is None:
        raise validate.fail("prompt", "a template (str) or a dict of judge metric -> template", prompt)
    out: dict[str, str] = {}
    for key, template in items:
        metric = counterpart_name(key)
        if metric is None:
            judged = [m.name for m in metrics("judge")]
            raise InvalidParameterError(f"prompt names {key!r}, which is not a judge metric; choose from {judged}")
        if not isinstance(template, str):
            raise validate.fail(f"prompt[{key!r}]", "a template (str)", template)
        out[metric] = template
    return out


def _judge_option(value: Any, name: str) -> Any:
    return None if value is None else judge_from(value)


def _cache_option(value: Any, name: str) -> Any:
    return _check_cache(value)


def _prompt_option(value: Any, name: str) -> dict[str, str]:
    return _check_prompt(value)


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
        check=lambda value, name: validate.integer(value, name, minimum=0),
        invalid=(-1,),
        costly=True,
    )
    retry_parse_errors: bool = option(
        True, "A rerun asks again the rows whose cached reply was unreadable (False: it stands).", check=validate.flag
    )


def _check(options: dict[str, Any]) -> dict[str, Any]:
    return check_options(JudgeOptions, options)


register_family(
    Family(
        name="judge",
        score=_score,
        options=JudgeOptions,
        check=_check,
        columns=_columns,
        per_metric="{name}",
        run_options=("budget", "budget_seed", "by"),
        run_state=True,
        reads=("nuggets",),  # the nugget metrics' input column
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
            kernel=JudgeSpec(
                load_template(_name), _scoring, score_fallback=False, zero_without_claims=_name == "faithfulness"
            ),
            threshold=JUDGE_THRESHOLD,
        )
    )

#: The six built-in judge metrics.
JUDGE_METRICS: tuple[str, ...] = tuple(f"judge_{name}" for name in _BUILTIN)


# ----------------------------------------------------------------------------- your own judge metric


@public
def judge_metric(
    name: str,
    template: str,
    inputs: Sequence[str],
    parser: Callable[[str], Any] | None = None,
    *,
    higher_is_better: bool = True,
    threshold: float | None = None,
    description: str | None = None,
    replace: bool = False,
) -> Metric:
    """Register a prompt template as a judge metric (family ``judge``): langrag's ``BaseEvaluator``, as data.

    Parameters
    ----------
    name : str
        The metric and its output column; it writes ``<name>``, ``_reason``, ``_status``,
        ``_error`` (and ``_std`` with ``n_samples > 1``) like the built-in judge metrics. Named
        ``judge_<heuristic metric>`` with that metric's inputs, it becomes the heuristic
        metric's counterpart in ``mode="llm"``/``"hybrid"`` (e.g. ``judge_hallucination_rate``).
    template : str
        The prompt, with one ``{role}`` placeholder per input (``{question}``, ``{answer}``,
        ``{contexts}`` numbered ``[1] ...``, ``{ground_truth}``, or any column name: its value
        as text). Other braces are left as they are.
    inputs : list of str
        The column roles the template reads; each must appear in it.
    parser : callable, optional
        ``parser(reply) -> score`` (a number in [0, 1], or None when there is none), a
        ``(score, reason)`` pair, or a :class:`~ragframe.judges.ParsedReply`. A score outside
        [0, 1], None or an exception is that row's ``parse_error``. Default: the ``Score:`` /
        ``Reason:`` lines (:func:`ragframe.judges.parse_reply` with ``strict=True``: several
        ``Score:`` lines must agree). A reply that cannot be read is asked again with a format
        reminder (the ``parse_retries`` option, docs/judges.md).
    higher_is_better : bool
        Direction, for the statistics.
    threshold : float, optional
        Default pass threshold; None for none.
    description : str, optional
        One line for :func:`ragframe.list_metrics`.
    replace : bool
        Replace a registered metric of the same name.

    Returns
    -------
    Metric
        The registered metric.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> _ = rf.judge_metric("politeness", "Is this polite? {answer}\\nEnd with 'Score: <0 to 1>'.", ["answer"])
    >>> out = rf.evaluate(pl.DataFrame({"answer": ["Thank you!"]}), ["politeness"],
    ...                   judge=lambda prompt: "Score: 0.9\\nReason: thanks", cache=False)
    >>> out.select("politeness", "politeness_reason", "politeness_status").row(0)
    (0.9, 'thanks', 'ok')
    >>> rf.unregister_metric("politeness")
    """
    if not isinstance(template, str) or not template.strip():
        raise validate.fail("template", "a non-empty prompt template (str)", template)
    roles = check_inputs(inputs)
    check_template(template, roles)
    if parser is not None and not callable(parser):
        raise validate.fail("parser", "a callable reply -> score, or None", parser)
    if asyncio.iscoroutinefunction(parser):
        raise InvalidParameterError("parser must be a plain function (reading a reply calls nothing)")
    label = "judge prompt over " + ", ".join(roles)
    metric = Metric(
        name=name,
        family="judge",
        inputs=roles,
        description=description or f"User {label}.",
        kernel=JudgeSpec(template, "score", parser),
        higher_is_better=validate.flag(higher_is_better, "higher_is_better"),
        threshold=None if threshold is None else validate.number(threshold, "threshold"),
    )
    return register_metric(metric, replace=replace)


#: A reply each scoring reads (the generated judge_* functions' docstring examples).
EXAMPLE_REPLY = {
    "score": "Score: 1",
    "share": "Claim: a\nVerdict: yes",
    "passages": "Verdict 1: yes",
    "ranked": "Verdict 1: yes",
    "f1": "Answer claim: a\nVerdict: yes\nReference claim: a\nCovered: yes",
    "nuggets": "Nugget 1: support",
}
