"""LLM relevance assessment: grade (query, passage) pairs 0-3 as TREC assessors do, and write qrels.

:func:`judge_relevance` asks a judge to grade each passage on the four-level scale of the
TREC Deep Learning and RAG tracks, which UMBRELA (Upadhyay et al. 2024) gives an LLM: 0
unrelated, 1 on topic but not answering, 2 partly answering, 3 dedicated to the query and
answering it (the prompt text is ragframe's own). It runs on the judge machinery every judge
metric uses (:func:`ragframe.judges.judge_prompts`: the persistent cache, retries, re-asks
of unreadable replies with a format reminder, usage accounting, dry runs), adds a cap on the
calls and a lexical prefilter (pairs sharing too few terms with the query are graded 0
without a call), and writes one status per pair. Its output is a long table of labels that
:func:`ragframe.judgments_to_qrels` (or a plain select) turns into qrels; ``docs/assessors.md``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl

from ragframe import validate
from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.judges.client import judge_from
from ragframe.kernels.text import tokenize_expr
from ragframe.public import public
from ragframe.schema import apply_to_frame, first_true_row, frame_kind, id_dtype_ok, to_polars

__all__ = ["RELEVANCE_TEMPLATE", "GRADES", "judge_relevance", "read_grades"]

#: The grades and what each means (the TREC DL / RAG scale UMBRELA asks an LLM for).
GRADES: dict[int, str] = {
    0: "the passage has nothing to do with the query",
    1: "the passage is on the query's topic but does not answer it",
    2: "the passage answers the query in part, or the answer is buried in unrelated text",
    3: "the passage is about the query and contains its answer",
}

#: The prompt: ``{query}`` and ``{passages}`` (numbered ``[1] ...``) are filled per call.
RELEVANCE_TEMPLATE = """You are a search quality assessor. Grade how relevant each passage is to the search query.

First think about what the person searching wants to know. Then, for each passage, consider how
closely its subject matches that need and whether it actually gives the answer; judge only the
passage's own words, not what you know about the topic.

Grades:
3 = {g3}.
2 = {g2}.
1 = {g1}.
0 = {g0}.

Query:
{{query}}

Passages:
{{passages}}

For each passage, in order, write exactly one line in this format:
Grade <passage number>: <0, 1, 2 or 3>
Then write one line: Reason: <one sentence>""".format(**{f"g{k}": v for k, v in GRADES.items()})

_GRADE_LINE = re.compile(r"(?im)^[\s*#>-]*grade\s*\[?(\d+)\]?\s*[:=]\s*\**\s*([^\s*]+)")
_REASON_LINE = re.compile(r"(?im)^[\s*]*reason\s*:\s*(.+)$")
_OUT = ("relevance", "relevance_source", "relevance_status", "relevance_error", "relevance_reason")


def read_grades(reply: str, n_passages: int) -> tuple[list[int] | None, str | None]:
    """The grades a reply gives passages ``1..n_passages``, or why it cannot be read.

    Every passage needs exactly one ``Grade <n>: <0-3>`` line (the same grade twice is
    accepted, two different grades are not); a grade outside 0-3 or a passage number that
    was not asked is an error.

    Examples
    --------
    >>> read_grades("Grade 1: 3\\nGrade 2: 0\\nReason: one answers.", 2)
    ([3, 0], None)
    >>> read_grades("Grade 1: 5", 1)
    (None, "passage 1: grade '5' is not 0, 1, 2 or 3")
    """
    grades: dict[int, int] = {}
    for number_text, value in _GRADE_LINE.findall(reply or ""):
        number = int(number_text)
        if not 1 <= number <= n_passages:
            return None, f"a grade for passage {number}, but the prompt has {n_passages} passage(s)"
        value = value.strip(".,;)")
        if value not in ("0", "1", "2", "3"):
            return None, f"passage {number}: grade {value!r} is not 0, 1, 2 or 3"
        if number in grades and grades[number] != int(value):
            return None, f"passage {number}: two different grades ({grades[number]} and {value})"
        grades[number] = int(value)
    missing = [n for n in range(1, n_passages + 1) if n not in grades]
    if missing:
        return None, f"no 'Grade <n>: <0-3>' line for passage(s) {missing[:10]}"
    return [grades[n] for n in range(1, n_passages + 1)], None


def _prefilter_share(view: pl.DataFrame, query: str, passage: str) -> np.ndarray:
    """Share of the query's distinct tokens found in the passage (1.0 for a query without tokens)."""
    terms = view.select(
        tokenize_expr(pl.col(query)).list.unique().alias("q"), tokenize_expr(pl.col(passage)).list.unique().alias("p")
    )
    shared = terms.select(
        pl.col("q").list.set_intersection(pl.col("p")).list.len().alias("n"), pl.col("q").list.len().alias("d")
    )
    n, d = shared.get_column("n").to_numpy(), shared.get_column("d").to_numpy()
    return np.where(d > 0, n / np.maximum(d, 1), 1.0)


def _calls(query_ids: list[Any], eligible: np.ndarray, per_call: int) -> list[list[int]]:
    """Rows grouped into calls: eligible rows of one query, in input order, ``per_call`` at a time."""
    open_call: dict[Any, list[int]] = {}
    calls: list[list[int]] = []
    for row in np.flatnonzero(eligible).tolist():
        key = query_ids[row]
        group = open_call.get(key)
        if group is None or len(group) >= per_call:
            group = []
            open_call[key] = group
            calls.append(group)
        group.append(row)
    return calls


@public
def judge_relevance(
    frame: Any,
    /,
    *,
    judge: Any,
    query: str = "query",
    passage: str = "passage",
    query_id: str = "query_id",
    passages_per_call: int = 1,
    max_calls: int | None = None,
    prefilter: float | None = None,
    cache: Any = True,
    dry_run: bool = False,
    parse_retries: int = 2,
    prompt: str | None = None,
) -> Any:
    """Grade each (query, passage) row 0-3 with an LLM judge (UMBRELA-style relevance assessment).

    Parameters
    ----------
    frame : frame
        One row per pair to grade: the query text, the passage text and the query's id
        (the document id and any other columns are kept as they are).
    judge : callable, Judge, str or mapping
        As the judge metrics take it: a callable ``prompt -> str``, ``rf.OpenAIJudge(...)``,
        a model name or ``OpenAIJudge`` keywords.
    query, passage, query_id : str
        Column names.
    passages_per_call : int
        Passages of one query graded in one call (consecutive rows of that query, in input
        order). 1 (the default) makes every grade independent of the other rows; more saves
        calls and prompt tokens, but a passage's grade may then depend on its neighbours.
    max_calls : int, optional
        Send at most this many calls, the first ones in input order (sort the frame by
        priority, e.g. rank, first); the pairs of the others are ``skipped`` with the reason.
    prefilter : float in [0, 1], optional
        Lexical prefilter (hybrid routing): a pair whose passage holds less than this share
        of the query's distinct terms is graded 0 without a call (source ``lexical``).
    cache : bool, path or JudgeCache
        The judge reply cache (as the judge metrics): a rerun asks nothing again.
    dry_run : bool
        Call nothing: every planned pair ``skipped``; ``relevance_input_tokens`` holds the
        estimated prompt tokens (on each call's first row), so the cost is known before.
    parse_retries : int
        Re-asks of an unreadable reply (a format reminder appended).
    prompt : str, optional
        Your own template with ``{query}`` and ``{passages}``; the reply must still give
        ``Grade <n>: <0-3>`` lines.

    Returns
    -------
    frame
        The input (same kind) with ``relevance`` (Int64 0-3, null when no grade),
        ``relevance_source`` (``llm`` or ``lexical``), ``relevance_status`` (a judge status:
        ``ok``, ``parse_error``, ``timeout``, ``http_error``, ``rate_limited``,
        ``judge_error``, ``skipped``), ``relevance_error`` (null when ok), ``relevance_reason``
        and ``relevance_input_tokens`` / ``relevance_output_tokens`` (of the call, on its
        first row; null on the others). A LazyFrame is collected (calls group rows) and
        returned lazy.

    Raises
    ------
    SchemaError
        A missing column, or a null query id.
    InvalidParameterError
        A bad option, or a ``prompt`` without ``{query}`` and ``{passages}``.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> pairs = pl.DataFrame({
    ...     "query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "query": ["capital of france"] * 2,
    ...     "passage": ["Paris is the capital of France.", "Bananas are yellow."],
    ... })
    >>> out = rf.judge_relevance(pairs, judge=lambda p: "Grade 1: 3\\nReason: it answers.", prefilter=0.5,
    ...                          cache=False)
    >>> out.select("doc_id", "relevance", "relevance_source", "relevance_status").rows()
    [('d1', 3, 'llm', 'ok'), ('d2', 0, 'lexical', 'ok')]
    """
    for name, value in (("query", query), ("passage", passage), ("query_id", query_id)):
        validate.column_name(value, name)
    per_call = validate.positive_int(passages_per_call, "passages_per_call")
    if max_calls is not None:
        max_calls = validate.integer(max_calls, "max_calls", minimum=0)
    if prefilter is not None:
        prefilter = validate.number(prefilter, "prefilter", minimum=0.0, maximum=1.0)
    dry_run = validate.flag(dry_run, "dry_run")
    parse_retries = validate.integer(parse_retries, "parse_retries", minimum=0)
    template = RELEVANCE_TEMPLATE if prompt is None else prompt
    if not isinstance(template, str) or "{query}" not in template or "{passages}" not in template:
        raise InvalidParameterError(f"prompt must be a str with {{query}} and {{passages}}, found {prompt!r}")
    the_judge = judge_from(judge)
    if bool(getattr(the_judge, "json_mode", False)):
        raise InvalidParameterError("the grades are read from 'Grade <n>:' lines; use a judge without json_mode")

    def compute(view: pl.DataFrame) -> pl.DataFrame:
        return _grade(
            view,
            the_judge,
            template,
            query,
            passage,
            query_id,
            per_call,
            max_calls,
            prefilter,
            cache,
            dry_run,
            parse_retries,
        )

    columns = list(dict.fromkeys([query_id, query, passage]))
    hint = "rename the input's column (e.g. people's 'relevance') before grading"
    if frame_kind(frame) == "lazy":
        eager = to_polars(frame, None)
        return apply_to_frame(eager, compute, columns=columns, clash_hint=hint).lazy()
    return apply_to_frame(frame, compute, columns=columns, clash_hint=hint)


def _grade(
    view: pl.DataFrame,
    judge: Any,
    template: str,
    query: str,
    passage: str,
    query_id: str,
    per_call: int,
    max_calls: int | None,
    prefilter: float | None,
    cache: Any,
    dry_run: bool,
    parse_retries: int,
) -> pl.DataFrame:
    from ragframe.judges.runner import judge_prompts

    n = view.height
    if not id_dtype_ok(view.schema[query_id]):
        raise SchemaError(
            "wrong dtype",
            column=query_id,
            expected="str or int ids",
            found=str(view.schema[query_id]),
        )
    at = first_true_row(view.get_column(query_id).is_null())
    if at is not None:
        raise SchemaError("null query id", column=query_id, row=at, expected="an id", found="null")
    for column in (query, passage):
        if view.schema[column] not in (pl.String, pl.Null):
            raise SchemaError("wrong dtype", column=column, expected="text", found=str(view.schema[column]))
    grade: list[int | None] = [None] * n
    source: list[str | None] = ["llm"] * n
    status: list[str] = ["skipped"] * n
    error: list[str | None] = [None] * n
    reason: list[str | None] = [None] * n
    tokens_in: list[int | None] = [None] * n
    tokens_out: list[int | None] = [None] * n
    null_text = (view.get_column(query).is_null() | view.get_column(passage).is_null()).to_numpy()
    for row in np.flatnonzero(null_text).tolist():
        error[row] = "null query or passage: not judged"
    eligible = ~null_text
    if prefilter is not None and n:
        low = (_prefilter_share(view, query, passage) < prefilter) & eligible
        for row in np.flatnonzero(low).tolist():
            grade[row], source[row], status[row] = 0, "lexical", "ok"
            reason[row] = f"lexical prefilter: the passage holds less than {prefilter:g} of the query's terms"
        eligible &= ~low
    calls = _calls(view.get_column(query_id).to_list(), eligible, per_call)
    sent = calls if max_calls is None else calls[:max_calls]
    for group in calls[len(sent) :]:
        for row in group:
            error[row] = f"max_calls: not sent (a cap of {max_calls} calls, given in input order)"
    queries, passages = view.get_column(query).to_list(), view.get_column(passage).to_list()
    prompts = [
        template.replace("{passages}", "\n\n".join(f"[{i + 1}] {passages[r]}" for i, r in enumerate(group))).replace(
            "{query}", queries[group[0]]
        )
        for group in sent
    ]

    def check(index: int, reply: str) -> str | None:
        return read_grades(reply, len(sent[index]))[1]

    if prompts:
        replies = judge_prompts(
            judge,
            prompts,
            metric="judge_relevance",
            cache=cache,
            dry_run=dry_run,
            check=check,
            parse_retries=parse_retries,
        )
        for index, text, call_status, call_error, t_in, t_out in replies.select(
            "row", "text", "status", "error", "input_tokens", "output_tokens"
        ).iter_rows():
            group = sent[index]
            tokens_in[group[0]], tokens_out[group[0]] = t_in, t_out
            grades = read_grades(text, len(group))[0] if call_status == "ok" else None
            found = _REASON_LINE.search(text or "")
            for position, row in enumerate(group):
                status[row], error[row] = call_status, call_error
                reason[row] = found.group(1).strip() if found else None
                grade[row] = grades[position] if grades is not None else None
    return pl.DataFrame(
        [
            pl.Series(_OUT[0], grade, dtype=pl.Int64),
            pl.Series(_OUT[1], source, dtype=pl.String),
            pl.Series(_OUT[2], status, dtype=pl.String),
            pl.Series(_OUT[3], error, dtype=pl.String),
            pl.Series(_OUT[4], reason, dtype=pl.String),
            pl.Series("relevance_input_tokens", tokens_in, dtype=pl.Int64),
            pl.Series("relevance_output_tokens", tokens_out, dtype=pl.Int64),
        ],
        height=n,
    )
