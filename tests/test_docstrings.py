"""Every public name has a numpy-style docstring (issue 11, item 7).

For each function or class in ``ragframe.__all__`` and each public method of
``rf.Evaluator``, ``rf.SummaryState`` and ``rf.Metric``:

- a ``Parameters`` section when the callable takes a named parameter (``self``/``cls``
  aside; a signature of only ``*args``/``**kwargs`` may document them but need not),
  naming every named parameter (grouped entries such as ``a, b : frame`` count);
- a ``Returns`` section for functions and methods that return something (not classes,
  not callables annotated ``-> None``);
- an ``Examples`` section with at least one ``>>>`` line, exception classes included.

The examples themselves run as doctests (``--doctest-modules`` over ``ragframe/``).
"""

from __future__ import annotations

import inspect
import re

import pytest

import ragframe as rf

_SECTION = re.compile(r"^([A-Z][A-Za-z ]*)\n-{3,}[ \t]*$", re.MULTILINE)
_METHOD_OWNERS = (rf.Evaluator, rf.SummaryState, rf.Metric)


def _public_callables() -> list[tuple[str, object]]:
    names = []
    for name in rf.__all__:
        obj = getattr(rf, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            names.append((name, obj))
    for owner in _METHOD_OWNERS:
        for attr, raw in vars(owner).items():
            if attr.startswith("_"):
                continue
            if isinstance(raw, (staticmethod, classmethod)) or inspect.isfunction(raw):
                names.append((f"{owner.__name__}.{attr}", getattr(owner, attr)))
    return names


_CALLABLES = _public_callables()


def _sections(doc: str) -> dict[str, str]:
    """Section title -> section body (up to the next numpy-style section header)."""
    headers = list(_SECTION.finditer(doc))
    return {
        match.group(1).strip(): doc[match.end() : headers[i + 1].start() if i + 1 < len(headers) else len(doc)]
        for i, match in enumerate(headers)
    }


def _signature(obj: object) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):  # builtins without a signature
        return None


def _named_parameters(obj: object) -> list[str]:
    signature = _signature(obj)
    if signature is None:
        return []
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p.name for p in signature.parameters.values() if p.kind not in variadic and p.name not in ("self", "cls")]


def _returns_something(obj: object) -> bool:
    if inspect.isclass(obj):
        return False
    signature = _signature(obj)
    if signature is None:
        return True
    return signature.return_annotation not in (None, "None", type(None))


def test_the_list_covers_the_api():
    names = {name for name, _ in _CALLABLES}
    assert {"evaluate", "Evaluator", "SchemaError", "SummaryState.merge", "Metric.column"} <= names
    assert "Evaluator.evaluate" in names and "Evaluator.from_dict" in names and "Evaluator.option_defaults" in names


def test_the_section_parser():
    doc = "Summary.\n\nParameters\n----------\nx : int\n\nReturns\n-------\nint\n\nExamples\n--------\n>>> 1\n1\n"
    assert set(_sections(doc)) == {"Parameters", "Returns", "Examples"}
    assert ">>> 1" in _sections(doc)["Examples"] and ">>>" not in _sections(doc)["Returns"]
    assert _sections("Summary.\n\nParameters: x\n") == {}


@pytest.mark.parametrize(("name", "obj"), _CALLABLES, ids=[name for name, _ in _CALLABLES])
def test_numpy_docstring(name: str, obj: object):
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    sections = _sections(doc)
    missing = []
    named = _named_parameters(obj)
    if named and "Parameters" not in sections:
        missing.append(f"Parameters (it takes {', '.join(named)})")
    elif named:
        undocumented = [p for p in named if not re.search(rf"^\s*(?:\w+, )*{p}\b", sections["Parameters"], re.M)]
        if undocumented:
            missing.append(f"an entry under Parameters for {', '.join(undocumented)}")
    if _returns_something(obj) and "Returns" not in sections and "Yields" not in sections:
        missing.append("Returns")
    if not re.search(r"^\s*>>> ", sections.get("Examples", ""), re.MULTILINE):
        missing.append("Examples with a >>> line")
    assert not missing, f"{name}: docstring lacks {'; '.join(missing)} (has sections {sorted(sections)})"
