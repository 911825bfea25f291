"""``rf.generate_testset``: questions, reference answers, facts and qrels from a corpus of chunks.

The path of one call (every step is documented in ``docs/testsets.md``):

1. **Plan** (:mod:`ragframe.testsets.plan`): quotas per query type, a stratified anchor order
   per type, partners by lexical overlap; all chosen before any call, from ``seed``.
2. **Generate**: each open slot's candidate prompt goes to the judge through
   :func:`ragframe.judges.judge_prompts` (cache, concurrency, retries, statuses, usage); a
   reply that :func:`ragframe.testsets.prompts.generation_error` cannot read is asked again
   (``parse_retries``).
3. **Filter**, in this order, each rejection named in the slot's ``_rejections``:
   ``generic`` (fewer than :data:`MIN_ANCHOR` of the question's content words are in its
   chunks: it could be asked without them), ``coverage`` (a multi-chunk or comparison answer
   whose facts do not draw on every chunk shown), ``ungrounded`` (ragframe's heuristic
   faithfulness of the answer against its chunks below the band), ``ungrounded_judge`` (in
   the band, the faithfulness judge found a claim unsupported), ``grounding_<status>`` (the
   grounding judge failed), ``duplicate`` (shingle Jaccard at or above ``duplicate_threshold``
   with a question already accepted or earlier in the round).
4. **Rounds**: a slot left open gets its type's next anchor, up to ``max_rounds``.
5. **Never silently short**: an unfilled slot is a row with a null question, ``_status``
   ``failed`` / ``filtered`` / ``budget`` / ``exhausted`` and ``_error`` saying why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError
from ragframe.judges.budget import BudgetGate, check_budget, check_cost_judge, estimated_cost
from ragframe.judges.cache import resolve_cache
from ragframe.judges.client import judge_from
from ragframe.judges.runner import DEFAULT_PARSE_RETRIES, judge_prompts
from ragframe.judges.scoring import reply_check, score_reply
from ragframe.judges.templates import format_contexts, load_template, render
from ragframe.judges.usage import price_of
from ragframe.metrics.registry import get_metric
from ragframe.public import public
from ragframe.run.evaluator import evaluate
from ragframe.run.routing import HYBRID_HALF_WIDTH
from ragframe.schema import column_names, frame_kind, require_columns, to_polars
from ragframe.testsets.lexical import DUPLICATE_JACCARD, containment, near_duplicates, term_matrix
from ragframe.testsets.plan import Candidate, Corpus, TypePlan, anchor_order, priority, query_mix, quotas, read_corpus
from ragframe.testsets.prompts import generation_error, read_generation, render_prompt

__all__ = [
    "generate_testset",
    "MIN_ANCHOR",
    "MIN_COVERAGE",
    "UNANSWERABLE_REFERENCE",
    "NUGGET_DTYPE",
    "GENERATION_METRIC",
    "GROUNDING_METRIC",
]
#: Share of a question's content words that must appear in its chunks (else ``generic``).
MIN_ANCHOR = 0.3
#: Share of a fact's content words one chunk must hold for the fact to draw on that chunk.
MIN_COVERAGE = 0.5
#: The reference answer of an ``unanswerable`` question.
UNANSWERABLE_REFERENCE = "The documents do not answer this question."
#: One nugget: a fact the reference states, its importance, and no assignment yet.
NUGGET_DTYPE = pl.Struct({"text": pl.String, "importance": pl.String, "assignment": pl.String})
#: The usage ledger's names of the generator's calls.
GENERATION_METRIC = "testset_generation"
GROUNDING_METRIC = "testset_grounding"
_CALL_FAILURES = ("parse_error", "timeout", "http_error", "rate_limited", "judge_error")


@dataclass
class _Slot:
    """Question ``slot`` of a query type: what filled it, or why it is still open."""

    query_type: str
    slot: int
    persona: str | None
    filled: dict[str, Any] | None = None
    rejections: list[str] = field(default_factory=list)
    error: str | None = None
    status: str | None = None  # when it can take no more candidates: exhausted, budget


@dataclass
class _Settings:
    judge: Any
    cache: Any
    gate_spent: list[float]
    budget: Any
    seed: int
    guidance: str
    templates: dict[str, str]
    parse_retries: int
    max_concurrency: int | None
    progress: bool
    min_overlap: float
    duplicate_threshold: float
    band: tuple[float, float]


@public
def generate_testset(
    corpus: Any,
    n: int,
    *,
    judge: Any,
    query_types: Any = None,
    seed: int = 0,
    budget: Any = None,
    cache: Any = True,
    dry_run: bool = False,
    personas: list[str] | None = None,
    seed_questions: list[str] | None = None,
    language: str | None = None,
    style: str | None = None,
    doc_id: str = "doc_id",
    chunk_id: str = "chunk_id",
    text: str = "text",
    max_rounds: int = 3,
    min_overlap: float = 0.1,
    duplicate_threshold: float = DUPLICATE_JACCARD,
    grounding_band: tuple[float, float] | None = None,
    parse_retries: int = DEFAULT_PARSE_RETRIES,
    max_concurrency: int | None = None,
    progress: bool = False,
    prompts: dict[str, str] | None = None,
) -> Any:
    """Generate ``n`` test questions with reference answers, facts and qrels from a corpus of chunks.

    Parameters
    ----------
    corpus : frame
        One row per chunk: ``doc_id``, ``chunk_id`` (unique; str or int) and ``text``. Other
        columns are metadata: each row of the set carries its first chunk's values (as
        ``source_<name>`` when the set has a column of that name). Any frame kind; the result
        is of the same kind.
    n : int
        Questions requested.
    judge : callable, Judge, model name or dict
        The model that writes the questions (and checks grounding in the uncertain band):
        a callable ``prompt -> str``, ``rf.OpenAIJudge(...)``, or its keywords as a dict.
    query_types : list or dict, optional
        Names among ``single_chunk``, ``multi_chunk``, ``comparison``, ``unanswerable``
        (equal shares), or {name: weight}. Default 0.4 / 0.25 / 0.15 / 0.2.
    seed : int
        Seeds the plan (which chunks, in which order, which persona).
    budget : int or dict, optional
        A hard cap on what the judge is sent: ``N`` or ``{"calls": N}`` and/or ``{"cost": X}``
        (at the judge's prices), re-asks and grounding checks included; cached replies are free.
    cache : bool, path or JudgeCache
        The judge's reply cache (True: the user cache file). With it a rerun is byte-identical
        and sends nothing.
    dry_run : bool
        Call nothing: return the first round's plan (one row per candidate: its chunks, its
        prompt, the estimated tokens and cost, whether the cache holds its reply).
    personas, seed_questions : list of str, optional
        Who asks (one persona per slot, drawn by the seed) and example questions whose style
        the questions should follow.
    language, style : str, optional
        The language of the questions and answers, and a style instruction.
    doc_id, chunk_id, text : str
        The corpus's column names.
    max_rounds : int
        Candidates per slot at most (a failed or filtered candidate is replaced in the next round).
    min_overlap : float
        Least TF-IDF cosine between the chunks of a multi-chunk or comparison question.
    duplicate_threshold : float
        Shingle Jaccard at or above which two questions are duplicates (default 0.6).
    grounding_band : (float, float), optional
        Heuristic faithfulness below ``lo`` drops a reference, above ``hi`` keeps it, within
        asks the faithfulness judge. Default: the heuristic threshold 0.4 +- 0.2.
    parse_retries : int
        Re-asks of an unreadable reply.
    max_concurrency : int, optional
        Calls in flight (default: the judge's, else 8).
    progress : bool
        A progress line on a terminal.
    prompts : dict, optional
        {query type: template} replacing the packaged templates (``{passages}``, ``{guidance}``).

    Returns
    -------
    frame
        ``n`` rows in slot order (query type, then slot): ``id``, ``question``,
        ``ground_truth``, ``relevant_ids`` (the chunk ids the prompt showed: the qrels),
        ``reference_contexts`` (their texts), ``nuggets`` (list of struct ``text``,
        ``importance`` ``"vital"``/``"okay"``, ``assignment`` null), ``query_type``,
        ``source_doc`` (the first chunk's document), ``persona``, ``_status`` (``ok``, or why
        the slot is empty: ``failed``, ``filtered``, ``budget``, ``exhausted``), ``_error`` and
        ``_rejections`` (the candidates this slot rejected, one reason each); then the corpus's
        metadata columns.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> chunks = pl.DataFrame({"doc_id": ["d1"], "chunk_id": ["c1"],
    ...                        "text": ["The Eiffel Tower was finished in 1889 for the World's Fair."]})
    >>> def judge(prompt):
    ...     return ("Question: When was the Eiffel Tower finished?\\nAnswer: The Eiffel Tower was finished in 1889.\\n"
    ...             "Fact: The Eiffel Tower was finished in 1889.")
    >>> ts = rf.generate_testset(chunks, 1, judge=judge, query_types=["single_chunk"], cache=False)
    >>> ts.select("question", "relevant_ids", "_status").row(0)
    ('When was the Eiffel Tower finished?', ['c1'], 'ok')
    """
    kind = frame_kind(corpus)
    names = {name: validate.column_name(value, name) for name, value in
             (("doc_id", doc_id), ("chunk_id", chunk_id), ("text", text))}  # fmt: skip
    require_columns(column_names(corpus), names.values())
    frame = to_polars(corpus, None)
    n = validate.integer(n, "n", minimum=0)
    seed = validate.integer(seed, "seed")
    max_rounds = validate.positive_int(max_rounds, "max_rounds")
    parse_retries = validate.integer(parse_retries, "parse_retries", minimum=0)
    dry_run, progress = validate.flag(dry_run, "dry_run"), validate.flag(progress, "progress")
    settings = _Settings(
        judge=judge_from(judge),
        cache=None,
        gate_spent=[0, 0.0],
        budget=check_budget(budget, seed, None),
        seed=seed,
        guidance=_guidance(personas, seed_questions, language, style),
        templates=_templates(prompts),
        parse_retries=parse_retries,
        max_concurrency=max_concurrency,
        progress=progress,
        min_overlap=validate.probability(min_overlap, "min_overlap"),
        duplicate_threshold=validate.probability(duplicate_threshold, "duplicate_threshold"),
        band=_band(grounding_band),
    )
    if settings.budget is not None:
        check_cost_judge(settings.judge, settings.budget)
    chunks = read_corpus(frame, names["doc_id"], names["chunk_id"], names["text"])
    mix = query_mix(query_types)
    plans = {t: TypePlan(t, q, anchor_order(chunks, seed, t)) for t, q in quotas(n, mix).items()}
    slots = [_Slot(t, k, _persona(personas, seed, t, k)) for t, plan in plans.items() for k in range(plan.quota)]
    store, owns = resolve_cache(cache)
    settings.cache = store if store is not None else False
    try:
        if dry_run:
            return _as_kind(_dry_run(chunks, plans, slots, settings), kind)
        for _ in range(max_rounds):
            if not _round(chunks, plans, slots, settings):
                break
    finally:
        if owns and store is not None:
            store.close()
    return _as_kind(_output(chunks, slots), kind)


# ----------------------------------------------------------------------------- options


def _guidance(personas: Any, seed_questions: Any, language: Any, style: Any) -> str:
    """The prompt lines of ``style``, ``seed_questions`` and ``language`` (checked, with ``personas``)."""
    for name, value in (("personas", personas), ("seed_questions", seed_questions)):
        if value is not None and (
            not isinstance(value, (list, tuple))
            or not value
            or not all(isinstance(v, str) and v.strip() for v in value)
        ):
            raise InvalidParameterError(f"{name} must be a non-empty list of non-empty str, found {value!r}")
    for name, value in (("language", language), ("style", style)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidParameterError(f"{name} must be a non-empty str, found {value!r}")
    lines = []
    if style:
        lines.append(f"Style: {style.strip()}")
    if seed_questions:
        lines.append("Write the question in the manner of these examples (not about their subjects):")
        lines += [f"- {q.strip()}" for q in seed_questions]
    if language:
        lines.append(f"Write the question, the answer and the facts in {language.strip()}; keep the labels in English.")
    return "\n".join(lines) + ("\n" if lines else "")


def _persona(personas: list[str] | None, seed: int, query_type: str, slot: int) -> str | None:
    if not personas:
        return None
    return personas[priority(seed, query_type, "persona", slot) % len(personas)]


def _templates(prompts: Any) -> dict[str, str]:
    if prompts is None:
        return {}
    if not isinstance(prompts, dict) or not all(isinstance(v, str) and "{passages}" in v for v in prompts.values()):
        raise InvalidParameterError(
            f"prompts must be a dict of query type -> template holding {{passages}}, found {prompts!r}"
        )
    query_mix(list(prompts))  # the names are query types
    return dict(prompts)


def _band(value: Any) -> tuple[float, float]:
    if value is None:
        threshold = get_metric("faithfulness").threshold or 0.5
        return (max(0.0, threshold - HYBRID_HALF_WIDTH), min(1.0, threshold + HYBRID_HALF_WIDTH))
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise InvalidParameterError(f"grounding_band must be a pair (lo, hi), found {value!r}")
    lo = validate.probability(value[0], "grounding_band[0]")
    hi = validate.probability(value[1], "grounding_band[1]")
    if lo > hi:
        raise InvalidParameterError(f"grounding_band must have lo <= hi, found {value!r}")
    return (lo, hi)


# ----------------------------------------------------------------------------- one round


def _prompt(chunks: Corpus, candidate: Candidate, settings: _Settings) -> str:
    guidance = settings.guidance
    if candidate.persona:
        guidance = f"Ask as this person would: {candidate.persona}\n" + guidance
    template = settings.templates.get(candidate.query_type)
    return render_prompt(candidate.query_type, chunks.texts(list(candidate.rows)), guidance, template)


def _next_candidates(
    chunks: Corpus, plans: dict[str, TypePlan], slots: list[_Slot], settings: _Settings
) -> list[tuple[_Slot, Candidate]]:
    out = []
    for slot in slots:
        if slot.filled is not None or slot.status is not None:
            continue
        rows = plans[slot.query_type].take(chunks, settings.min_overlap)
        if rows is None:
            slot.status = "exhausted"
            plan = plans[slot.query_type]
            why = (
                f"{plan.skipped} anchors had no related chunk (min_overlap {settings.min_overlap:g}); "
                if plan.skipped
                else ""
            )
            slot.error = (
                f"no chunk left to generate a {slot.query_type} question from: {why}"
                f"the corpus's {chunks.height} chunks were all tried"
            )
            continue
        out.append((slot, Candidate(slot.query_type, slot.slot, rows, slot.persona)))
    return out


def _gate(settings: _Settings, prompts: list[str]) -> BudgetGate | None:
    if settings.budget is None:
        return None
    cost = sum(estimated_cost(settings.judge, p) for p in prompts)
    return BudgetGate(
        settings.budget, planned_calls=len(prompts), planned_cost=cost,
        spent_calls=int(settings.gate_spent[0]), spent_cost=float(settings.gate_spent[1]),
    )  # fmt: skip


def _ask(settings: _Settings, prompts: list[str], metric: str, check: Any) -> pl.DataFrame:
    gate = _gate(settings, prompts)
    out = judge_prompts(
        settings.judge, prompts, metric=metric, cache=settings.cache, check=check,
        parse_retries=settings.parse_retries, retry_parse_errors=False, max_concurrency=settings.max_concurrency,
        progress=settings.progress, gate=gate,
    )  # fmt: skip
    if gate is not None:
        snapshot = gate.snapshot()
        settings.gate_spent = [snapshot["calls"], snapshot["cost"]]
    return out


def _budget_left(settings: _Settings) -> int | None:
    if settings.budget is None or settings.budget.calls is None:
        return None
    return max(0, settings.budget.calls - int(settings.gate_spent[0]))


def _round(chunks: Corpus, plans: dict[str, TypePlan], slots: list[_Slot], settings: _Settings) -> bool:
    """One round: a candidate for every open slot, generated, filtered, deduplicated. False: nothing was open."""
    pending = _next_candidates(chunks, plans, slots, settings)
    left = _budget_left(settings)
    if left is not None and len(pending) > left:
        for slot, _ in pending[left:]:
            slot.status = "budget"
            slot.error = f"not generated: the budget ({settings.budget.describe()}) was spent"
        pending = pending[:left]
    if not pending:
        return False
    prompts = [_prompt(chunks, c, settings) for _, c in pending]
    types = [c.query_type for _, c in pending]
    replies = _ask(settings, prompts, GENERATION_METRIC, lambda row, reply: generation_error(reply, types[row]))
    survivors: list[tuple[_Slot, Candidate, Any]] = []
    for (slot, candidate), status, error, reply in zip(
        pending, replies["status"], replies["error"], replies["text"], strict=True
    ):
        if status == "ok":
            survivors.append((slot, candidate, read_generation(reply)))
        elif status == "skipped" and error and error.startswith("budget"):
            slot.status, slot.error = "budget", f"not generated: {error}"
        else:
            slot.rejections.append(status)
            slot.error = f"the judge's reply failed ({status}): {error}"
    survivors = _lexical_filters(chunks, survivors)
    survivors = _grounding(chunks, survivors, settings)
    _accept(survivors, slots, settings)
    return True


def _lexical_filters(
    chunks: Corpus, survivors: list[tuple[_Slot, Candidate, Any]]
) -> list[tuple[_Slot, Candidate, Any]]:
    """``generic`` and ``coverage`` (module doc): containment of content words, as sparse products."""
    if not survivors:
        return survivors
    vocabulary = chunks.terms.vocabulary
    questions = term_matrix(pl.Series([r.question for _, _, r in survivors]), vocabulary)
    source = chunks.terms.counts
    shown = [list(c.rows) for _, c, _ in survivors]
    together = _sum_rows(source, shown)
    anchored = containment(questions, together)
    kept = []
    for i, (slot, candidate, reply) in enumerate(survivors):
        if anchored[i] < MIN_ANCHOR:
            slot.rejections.append("generic")
            slot.error = (
                f"filtered (generic): {anchored[i]:.2f} of the question's content words are in its chunks "
                f"(< {MIN_ANCHOR}); it could be asked without them: {reply.question!r}"
            )
            continue
        if len(candidate.rows) > 1:
            facts = term_matrix(pl.Series([f for f, _ in reply.facts]), vocabulary)
            drawn = [
                bool((containment(facts, source[[row] * len(reply.facts)]) >= MIN_COVERAGE).any())
                for row in candidate.rows
            ]
            if not all(drawn):
                missing = ", ".join(
                    str(chunks.ids([r])[0]) for r, d in zip(candidate.rows, drawn, strict=True) if not d
                )
                slot.rejections.append("coverage")
                slot.error = f"filtered (coverage): no fact draws on chunk {missing}, so the question does not need it"
                continue
        kept.append((slot, candidate, reply))
    return kept


def _sum_rows(matrix: Any, groups: list[list[int]]) -> Any:
    import scipy.sparse as sp

    rows = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    cols = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups])
    pick = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(len(groups), matrix.shape[0]))
    return sp.csr_matrix(pick @ matrix)


def _grounding(
    chunks: Corpus, survivors: list[tuple[_Slot, Candidate, Any]], settings: _Settings
) -> list[tuple[_Slot, Candidate, Any]]:
    """Heuristic faithfulness of each answer against its chunks; the judge decides inside the band."""
    answered = [(i, s) for i, s in enumerate(survivors) if s[1].query_type != "unanswerable"]
    if not answered:
        return survivors
    frame = pl.DataFrame(
        {
            "answer": [s[2].answer for _, s in answered],
            "contexts": [chunks.texts(list(s[1].rows)) for _, s in answered],
        },
        schema={"answer": pl.String, "contexts": pl.List(pl.String)},
    )
    heuristic = evaluate(frame, ["faithfulness"], thresholds={})["faithfulness"].to_list()
    lo, hi = settings.band
    dropped: set[int] = set()
    asked: list[tuple[int, str]] = []
    for (index, (slot, _, _)), score in zip(answered, heuristic, strict=True):
        if score is None or score < lo:
            slot.rejections.append("ungrounded")
            slot.error = (
                f"filtered (ungrounded): heuristic faithfulness {score if score is None else round(score, 3)} < {lo:g}"
            )
            dropped.add(index)
        elif score <= hi:
            asked.append((index, render(load_template("faithfulness"), {
                "answer": survivors[index][2].answer,
                "contexts": format_contexts(chunks.texts(list(survivors[index][1].rows))),
            })))  # fmt: skip
    if asked:
        spec = get_metric("judge_faithfulness").kernel
        replies = _ask(settings, [p for _, p in asked], GROUNDING_METRIC, reply_check(spec, None, False))
        for (index, _), status, error, text in zip(
            asked, replies["status"], replies["error"], replies["text"], strict=True
        ):
            slot = survivors[index][0]
            if status == "skipped" and (error or "").startswith("budget"):
                slot.status, slot.error = "budget", f"not checked for grounding: {error}"
                dropped.add(index)
                continue
            if status != "ok":
                slot.rejections.append(f"grounding_{status}")
                slot.error = f"filtered (grounding judge {status}): {error}"
                dropped.add(index)
                continue
            score = score_reply(spec, text).score
            if score is None or score < 1.0:
                slot.rejections.append("ungrounded_judge")
                slot.error = (
                    f"filtered (ungrounded_judge): the faithfulness judge supports {score} of the answer's claims"
                )
                dropped.add(index)
    return [s for i, s in enumerate(survivors) if i not in dropped]


def _accept(survivors: list[tuple[_Slot, Candidate, Any]], slots: list[_Slot], settings: _Settings) -> None:
    """Duplicates out (against accepted questions, then in slot order); the rest fill their slots."""
    accepted = [s for s in slots if s.filled is not None]
    texts = [s.filled["question"] for s in accepted] + [r.question for _, _, r in survivors]
    dupes = near_duplicates(texts, settings.duplicate_threshold, earlier=len(accepted))
    for j, (slot, candidate, reply) in enumerate(survivors):
        twin = dupes[len(accepted) + j]
        if twin is not None:
            slot.rejections.append("duplicate")
            slot.error = f"filtered (duplicate): {reply.question!r} repeats {texts[twin]!r}"
            continue
        slot.filled = {"candidate": candidate, "question": reply.question, "reply": reply}


# ----------------------------------------------------------------------------- output


def _status_of(slot: _Slot) -> str:
    if slot.status is not None:
        return slot.status
    last = slot.rejections[-1] if slot.rejections else ""
    return "failed" if last in _CALL_FAILURES or last.startswith("grounding_") else "filtered"


def _output(chunks: Corpus, slots: list[_Slot]) -> pl.DataFrame:
    id_dtype = chunks.frame.schema[chunks.chunk_id]
    doc_dtype = chunks.frame.schema[chunks.doc_id]
    columns: dict[str, list[Any]] = {name: [] for name in _SCHEMA_NAMES}
    for slot in slots:
        columns["id"].append(f"{slot.query_type}-{slot.slot:04d}")
        columns["query_type"].append(slot.query_type)
        columns["persona"].append(slot.persona)
        columns["_rejections"].append(list(slot.rejections))
        if slot.filled is None:
            for name in ("question", "ground_truth", "relevant_ids", "reference_contexts", "nuggets", "source_doc"):
                columns[name].append(None)
            tried = len(slot.rejections)
            counts = ", ".join(f"{k} {v}" for k, v in sorted(Counter(slot.rejections).items()))
            tail = f" [{tried} candidates rejected: {counts}]" if tried else ""
            columns["_status"].append(_status_of(slot))
            columns["_error"].append(f"{slot.error or 'no candidate'}{tail}")
            continue
        candidate, reply = slot.filled["candidate"], slot.filled["reply"]
        rows = list(candidate.rows)
        unanswerable = candidate.query_type == "unanswerable"
        columns["question"].append(reply.question)
        columns["ground_truth"].append(UNANSWERABLE_REFERENCE if unanswerable else reply.answer)
        columns["relevant_ids"].append([] if unanswerable else chunks.ids(rows))
        columns["reference_contexts"].append([] if unanswerable else chunks.texts(rows))
        columns["nuggets"].append(
            [] if unanswerable else [{"text": t, "importance": imp, "assignment": None} for t, imp in reply.facts]
        )
        columns["source_doc"].append(chunks.doc(rows[0]))
        columns["_status"].append("ok")
        columns["_error"].append(None)
    schema = {
        "id": pl.String,
        "question": pl.String,
        "ground_truth": pl.String,
        "relevant_ids": pl.List(id_dtype),
        "reference_contexts": pl.List(pl.String),
        "nuggets": pl.List(NUGGET_DTYPE),
        "query_type": pl.String,
        "source_doc": doc_dtype,
        "persona": pl.String,
        "_status": pl.String,
        "_error": pl.String,
        "_rejections": pl.List(pl.String),
    }
    out = pl.DataFrame(columns, schema=schema)
    return out.hstack(_metadata(chunks, slots, out.columns))


def _metadata(chunks: Corpus, slots: list[_Slot], taken: list[str]) -> list[pl.Series]:
    """The corpus's other columns, from each row's first chunk (``source_<name>`` when the set has that name)."""
    extra = [c for c in chunks.frame.columns if c not in (chunks.doc_id, chunks.chunk_id, chunks.text)]
    rows = [None if s.filled is None else s.filled["candidate"].rows[0] for s in slots]
    index = pl.Series("row", rows, dtype=pl.Int64)
    out = []
    for name in extra:
        values = chunks.frame.get_column(name).gather(index)
        out.append(values.alias(f"source_{name}" if name in taken else name))
    return out


_SCHEMA_NAMES = (
    "id", "question", "ground_truth", "relevant_ids", "reference_contexts", "nuggets", "query_type",
    "source_doc", "persona", "_status", "_error", "_rejections",
)  # fmt: skip


def _dry_run(chunks: Corpus, plans: dict[str, TypePlan], slots: list[_Slot], settings: _Settings) -> pl.DataFrame:
    pending = _next_candidates(chunks, plans, slots, settings)
    prompts = [_prompt(chunks, c, settings) for _, c in pending]
    estimate = judge_prompts(
        settings.judge, prompts, metric=GENERATION_METRIC, cache=settings.cache, dry_run=True, progress=False
    )
    tokens_in, tokens_out = estimate["input_tokens"].to_list(), estimate["output_tokens"].to_list()
    costs = [price_of(settings.judge, a, b) for a, b in zip(tokens_in, tokens_out, strict=True)]
    id_dtype = chunks.frame.schema[chunks.chunk_id]
    plan = pl.DataFrame(
        {
            "id": [f"{c.query_type}-{c.slot:04d}" for _, c in pending],
            "query_type": [c.query_type for _, c in pending],
            "relevant_ids": [[] if c.query_type == "unanswerable" else chunks.ids(list(c.rows)) for _, c in pending],
            "shown_ids": [chunks.ids(list(c.rows)) for _, c in pending],
            "source_doc": [chunks.doc(c.rows[0]) for _, c in pending],
            "persona": [c.persona for _, c in pending],
            "prompt": prompts,
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "expected_cost": costs,
            "cached": estimate["cached"].to_list(),
        },
        schema_overrides={
            "relevant_ids": pl.List(id_dtype),
            "shown_ids": pl.List(id_dtype),
            "expected_cost": pl.Float64,
        },
    )
    unplanned = [s for s in slots if s.status == "exhausted"]
    note = (
        "dry run: not called (first round; a slot whose candidate fails or is filtered takes another, "
        "and answers in the grounding band cost one more call each)"
        + (f"; {len(unplanned)} slots have no chunk to plan from" if unplanned else "")
    )
    calls = None if settings.budget is None else settings.budget.calls
    beyond = f"dry run: not called, and beyond the budget ({settings.budget.describe()})" if calls is not None else ""
    within = pl.int_range(pl.len()) < (calls if calls is not None else plan.height)
    return plan.with_columns(
        _status=pl.lit("skipped"), _error=pl.when(within).then(pl.lit(note)).otherwise(pl.lit(beyond))
    )


def _as_kind(frame: pl.DataFrame, kind: str) -> Any:
    if kind == "lazy":
        return frame.lazy()
    if kind in ("arrow_table", "arrow_batch"):
        return frame.to_arrow()
    if kind == "pandas":
        return frame.to_pandas()
    return frame
