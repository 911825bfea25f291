"""Every documented signature heading (``### `rf.name(...)` ``) is the function's real signature.

A heading is what a reader copies: its parameter names, their kinds (positional-only before
``/``, keyword-only after ``*``) and its literal defaults must be the function's own, or
``rf.estimate(frame=df, ...)`` as documented raises ``TypeError``.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

import ragframe as rf

DOCS = Path(__file__).resolve().parent.parent / "docs"
HEADING = re.compile(r"^#+ `rf\.([A-Za-z_][\w.]*)\((.*)\)`\s*$", re.M)
KINDS = {"posonly": inspect.Parameter.POSITIONAL_ONLY, "arg": inspect.Parameter.POSITIONAL_OR_KEYWORD,
         "kwonly": inspect.Parameter.KEYWORD_ONLY}  # fmt: skip


def documented_headings() -> list[tuple[str, str, str]]:
    """(doc file, dotted name under rf, parameter text) of every signature heading in docs/."""
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for match in HEADING.finditer(page.read_text(encoding="utf-8")):
            found.append((page.name, match.group(1), match.group(2)))
    return found


def heading_parameters(text: str) -> list[tuple[str, inspect._ParameterKind, object]]:
    """(name, kind, default or inspect.Parameter.empty) of a heading's parameter list, read with ast."""
    arguments = ast.parse(f"def f({text}): pass").body[0].args
    positional = [(a.arg, KINDS["posonly"]) for a in arguments.posonlyargs] + [
        (a.arg, KINDS["arg"]) for a in arguments.args
    ]
    defaults = [inspect.Parameter.empty] * (len(positional) - len(arguments.defaults)) + [
        ast.literal_eval(d) for d in arguments.defaults
    ]
    keyword = [(a.arg, KINDS["kwonly"]) for a in arguments.kwonlyargs]
    keyword_defaults = [inspect.Parameter.empty if d is None else ast.literal_eval(d) for d in arguments.kw_defaults]
    return [(n, k, d) for (n, k), d in zip(positional + keyword, defaults + keyword_defaults)]


def real_parameters(function) -> list[tuple[str, inspect._ParameterKind, object]]:
    """The signature's parameters, less ``function`` (the caller's name for errors: plumbing, not documented)."""
    parameters = inspect.signature(function).parameters.values()
    return [(p.name, p.kind, p.default) for p in parameters if p.name != "function"]


def test_the_scan_finds_the_headings():
    names = {name for _, name, _ in documented_headings()}
    assert {"summarize", "compare", "estimate", "calibrate", "gate", "regressions"} <= names


def test_the_parser_reads_kinds_and_defaults():
    assert heading_parameters('a, /, b=1, *, c, d="x"') == [
        ("a", KINDS["posonly"], inspect.Parameter.empty),
        ("b", KINDS["arg"], 1),
        ("c", KINDS["kwonly"], inspect.Parameter.empty),
        ("d", KINDS["kwonly"], "x"),
    ]


@pytest.mark.parametrize(("page", "name", "text"), documented_headings(), ids=lambda v: str(v)[:40])
def test_a_heading_is_the_real_signature(page, name, text):
    function = rf
    for part in name.split("."):
        function = getattr(function, part)
    documented = heading_parameters(text)
    real = real_parameters(function)
    assert [(n, k) for n, k, _ in documented] == [(n, k) for n, k, _ in real], f"docs/{page}: rf.{name}"
    for (parameter, _, said), (_, _, default) in zip(documented, real):
        if said is not inspect.Parameter.empty:
            assert said == default, f"docs/{page}: rf.{name}({parameter}=...) says {said!r}, the code has {default!r}"
