"""The generator's prompts and how a reply is read: ``Question:``, ``Answer:`` and ``Fact:`` lines, no JSON.

A generation reply is one ``Question:`` line, one ``Answer:`` line and one ``Fact:`` line per
fact the answer states (``Fact (okay):`` marks a fact that is background rather than the
answer itself; a plain ``Fact:`` is vital). Other lines (a preamble, a blank line) are
ignored; labels are read case-insensitively, with Markdown bold or a list dash around them.
A reply that cannot be read is asked again by the judge runner with the reason
(:data:`ragframe.judges.runner.REASK_REMINDER`).

Examples
--------
>>> reply = read_generation("Sure!\\nQuestion: Who wrote Hamlet?\\nAnswer: Shakespeare.\\nFact: He wrote Hamlet.")
>>> reply.question, reply.answer, reply.facts
('Who wrote Hamlet?', 'Shakespeare.', (('He wrote Hamlet.', 'vital'),))
>>> generation_error("I cannot help with that.", "single_chunk")
"no 'Question:' line (write one line 'Question: <the question>')"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragframe.judges.templates import format_contexts

__all__ = [
    "QUERY_TYPES",
    "TEMPLATES",
    "CONTEXT_WORDS",
    "GeneratedReply",
    "read_generation",
    "generation_error",
    "render_prompt",
]

#: The query types, in the order a plan lists them.
QUERY_TYPES = ("single_chunk", "multi_chunk", "comparison", "unanswerable")

_FORMAT = """Reply in exactly this format, one item per line, and nothing else:
Question: <the question>
Answer: <the answer, one or two sentences>
Fact: <one fact the answer states>
Fact: <another fact the answer states, one line per fact>
Mark a fact that is background rather than the answer itself as "Fact (okay): <fact>"."""

_RULES = """Rules:
- The question must make sense to someone who has not seen the passages: never write "the passage",
  "the text", "the document" or "the context"; name what you ask about.
- Ask about something specific in the passages, not about their general topic."""

#: The packaged generation templates: ``{passages}`` (numbered ``[1] ...``) and ``{guidance}``
#: (persona, style, language and example questions, or nothing).
TEMPLATES = {
    "single_chunk": (
        "You write one question for testing a search and answer system, from the passage below.\n\n"
        "Passage:\n{passages}\n\n"
        "Write one factual question that the passage answers, and its answer, taken only from the passage.\n"
        f"{_RULES}\n{{guidance}}\n{_FORMAT}"
    ),
    "multi_chunk": (
        "You write one question for testing a search and answer system, from the passages below.\n\n"
        "Passages:\n{passages}\n\n"
        "Write one question whose answer needs information from every passage (each passage gives part of "
        "the answer), and its answer, taken only from the passages. State at least one fact from each passage.\n"
        f"{_RULES}\n{{guidance}}\n{_FORMAT}"
    ),
    "comparison": (
        "You write one question for testing a search and answer system, from the passages below.\n\n"
        "Passages:\n{passages}\n\n"
        "Write one question that compares what the passages say about two things (how they differ or what "
        "they share), and its answer, taken only from the passages. State at least one fact from each passage.\n"
        f"{_RULES}\n{{guidance}}\n{_FORMAT}"
    ),
    "unanswerable": (
        "You write one question for testing whether a search and answer system admits what it does not know.\n\n"
        "Passage:\n{passages}\n\n"
        "Write one question on the same subject as the passage that the passage does NOT answer (a detail it "
        "never states), so that a system reading it should say it does not know. In the Answer line, say what "
        "the passage leaves out. Write no Fact line.\n"
        f"{_RULES}\n{{guidance}}\n"
        "Reply in exactly this format, one item per line, and nothing else:\n"
        "Question: <the question>\nAnswer: <what the passage does not state>"
    ),
}

#: Words that make a question depend on having seen the passages (RAGAS #1568, #1785): such a reply is asked again.
CONTEXT_WORDS = re.compile(
    r"\b(?:the|this|these|given|above|provided|following)\s+(?:passages?|texts?|documents?|contexts?|excerpts?|articles?)\b"
    r"|\bpassage\s*\[?\d",
    re.IGNORECASE,
)
_LABEL = re.compile(
    r"^\s*(?:[-*]\s*)?\**\s*(question|answer|fact)\s*(\((?:vital|okay)\))?\s*\**\s*:\s*\**\s*(.*)$", re.I
)
_MIN_QUESTION_WORDS = 3


@dataclass(frozen=True)
class GeneratedReply:
    """A readable generation reply: the question, the answer and the facts as (text, importance)."""

    question: str
    answer: str
    facts: tuple[tuple[str, str], ...]


def _lines(text: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    questions: list[str] = []
    answers: list[str] = []
    facts: list[tuple[str, str]] = []
    for line in text.splitlines():
        match = _LABEL.match(line)
        if match is None:
            continue
        label, mark, value = (
            match.group(1).lower(),
            (match.group(2) or "").lower(),
            match.group(3).strip().rstrip("*").strip(),
        )
        if label == "question":
            questions.append(value)
        elif label == "answer":
            answers.append(value)
        elif value:
            facts.append((value, "okay" if "okay" in mark else "vital"))
    return questions, answers, facts


def generation_error(text: str, query_type: str) -> str | None:
    """Why a generation reply cannot be used (None when it can): the runner's ``check``.

    Parameters
    ----------
    text : str
        The reply.
    query_type : str
        One of :data:`QUERY_TYPES` (an ``unanswerable`` reply needs no ``Fact:`` line).

    Returns
    -------
    str or None
    """
    questions, answers, facts = _lines(text)
    if not questions:
        return "no 'Question:' line (write one line 'Question: <the question>')"
    if len(questions) > 1:
        return f"{len(questions)} 'Question:' lines (write exactly one question)"
    question = questions[0]
    if len(question.split()) < _MIN_QUESTION_WORDS or not question.endswith("?"):
        return (
            f"the question {question[:80]!r} is not a question of at least {_MIN_QUESTION_WORDS} words ending with '?'"
        )
    if CONTEXT_WORDS.search(question):
        return "the question refers to 'the passage' (or the text, the document): name what it asks about instead"
    if len(answers) != 1 or not answers[0]:
        return "not exactly one non-empty 'Answer:' line"
    if query_type != "unanswerable" and not facts:
        return "no 'Fact:' line (write one line 'Fact: <fact>' per fact the answer states)"
    return None


def read_generation(text: str) -> GeneratedReply:
    """The question, answer and facts of a reply :func:`generation_error` accepts."""
    questions, answers, facts = _lines(text)
    return GeneratedReply(questions[0], answers[0], tuple(facts))


def render_prompt(query_type: str, passages: list[str], guidance: str, template: str | None = None) -> str:
    """The generation prompt of one candidate.

    Examples
    --------
    >>> print(render_prompt("single_chunk", ["Paris is in France."], "").split("\\n")[3])
    [1] Paris is in France.
    """
    text = template if template is not None else TEMPLATES[query_type]
    body = text.replace("{passages}", format_contexts(passages)).replace("{guidance}", guidance)
    return body.replace("\n\n\n", "\n\n")
