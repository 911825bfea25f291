"""The judge's prompt templates: the packaged ones, their placeholders and how a row fills them.

Templates are plain text with the placeholders ``{question}``, ``{answer}``, ``{contexts}``
(the passages numbered ``[1] ...``, one per paragraph) and ``{ground_truth}`` (the text roles,
:data:`TEXT_ROLES`); a custom judge metric may use any column name as a placeholder. Other
braces are left as they are, so a template may show a JSON example. The packaged templates
are package data (``ragframe/judges/prompts/<metric>.txt``); how their replies are read is
:mod:`ragframe.judges.scoring`'s.

Examples
--------
>>> template = "Q: {question}\\nPassages:\\n{contexts}\\nScore: <0 to 1>"
>>> print(render(template, {"question": "Capital?", "contexts": format_contexts(["Paris.", "Lyon."])}))
Q: Capital?
Passages:
[1] Paris.
<BLANKLINE>
[2] Lyon.
Score: <0 to 1>
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

from ragframe.exceptions import InvalidParameterError

__all__ = [
    "TEXT_ROLES",
    "check_template",
    "format_contexts",
    "load_template",
    "render",
    "template_placeholders",
]

#: The text roles every judge template may use (custom judge metrics may add their own).
TEXT_ROLES = ("question", "answer", "contexts", "ground_truth")
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")


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


def check_template(template: str, inputs: tuple[str, ...], where: str | None = None) -> None:
    """Every input has its ``{placeholder}``; no text-role placeholder the metric does not read.

    Parameters
    ----------
    template : str
        The prompt template.
    inputs : tuple of str
        The roles the metric reads.
    where : str, optional
        What is checked, named at the start of the error (``"prompt for 'x'"``); the public
        function called is named anyway.

    Raises
    ------
    InvalidParameterError
        An input without its placeholder, or a text role placeholder that is not an input.

    Examples
    --------
    >>> check_template("Is {answer} polite?", ("answer",))
    >>> try:
    ...     check_template("Is {answer} an answer to {question}?", ("answer",), "prompt for 'polite'")
    ... except InvalidParameterError as error:
    ...     print(error)
    prompt for 'polite': the template uses {question}, which is not among its inputs ['answer']
    """
    prefix = f"{where}: " if where else ""
    used = template_placeholders(template)
    missing = [role for role in inputs if role not in used]
    if missing:
        raise InvalidParameterError(f"{prefix}the template never uses {{{missing[0]}}}; inputs are {list(inputs)}")
    foreign = sorted((used & set(TEXT_ROLES)) - set(inputs))
    if foreign:
        raise InvalidParameterError(
            f"{prefix}the template uses {{{foreign[0]}}}, which is not among its inputs {list(inputs)}"
        )


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
