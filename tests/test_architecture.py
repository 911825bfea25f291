"""The floors of ragframe (docs/architecture.md), checked on every module's imports.

Every ``import`` of every module under ``ragframe/`` is read with :mod:`ast`, at module level
and inside functions alike, and three rules are checked:

1. no module imports a module of a higher floor;
2. no import cycle between packages;
3. no private name (a leading underscore) is imported, or read as ``module._name``, across packages.

The known violations are listed below, each with why it is there and how it goes away: the
lists only shrink. A new violation fails, naming the module, the line and the rule.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent / "ragframe"

#: The floors, lowest first: a module may import its own floor and the floors below.
FLOORS: tuple[tuple[str, ...], ...] = (
    # base: errors, keys, checks, the frame contract, optional imports, the text of a cell
    (
        "exceptions",
        "redaction",
        "secrets",
        "validate",
        "schema",
        "concurrency",
        "extras",
        "display",
        "public",
        "progress",
    ),
    ("kernels",),  # whole-column computations
    ("judges",),  # the judge transport: clients, cache, usage, budget, reply parsing
    ("metrics",),  # metric definitions and the registry
    ("run", "budgeting", "retrieve"),  # executing metrics over frames: Evaluator, modes, generated functions
    ("stats", "io.scores"),  # statistics over scored frames; reading score files (base imports only)
    ("io", "datasets", "testsets"),  # files: streaming runs, trec files; test sets generated from documents
    ("distributed", "reporting", "plot"),  # Ray, HTML reports, figures
    ("ragframe", "namespace"),  # the public facade: ragframe/__init__.py and df.rf
    ("cli",),  # the command line
)
FLOOR = {package: level for level, packages in enumerate(FLOORS) for package in packages}

#: Imports from a lower floor to a higher one that are known: (importer, imported module) -> why, and the way out.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}
#: Private names imported across packages that are known: (importer, imported module, name) -> why.
KNOWN_PRIVATE: dict[tuple[str, str, str], str] = {}


class Import(NamedTuple):
    importer: str
    imported: str  # a module of ragframe
    names: tuple[str, ...]  # the names taken from it ("from x import a, b"); () for "import x"
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _resolve(importer: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str) -> list[Import]:
    """Every import of a ragframe module by ``module``, at any depth of its code."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [Import(module, a.name, (), node.lineno) for a in node.names if a.name.startswith("ragframe")]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node, path.name == "__init__.py")
            if not source.startswith("ragframe"):
                continue
            submodules = [a.name for a in node.names if f"{source}.{a.name}" in MODULES]
            names = tuple(a.name for a in node.names if a.name not in submodules)
            out += [Import(module, f"{source}.{name}", (), node.lineno) for name in submodules]
            if names:
                out.append(Import(module, source, names, node.lineno))
    return out


def private_attributes(module: str) -> list[Import]:
    """``alias._name`` reads of a ragframe module bound to ``alias`` by an import of ``module``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(module, node, MODULES[module].name == "__init__.py")
            for a in node.names:
                if f"{source}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{source}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ragframe") and a.asname:
                    aliases[a.asname] = a.name
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(Import(module, aliases[node.value.id], (node.attr,), node.lineno))
    return found


def package(module: str) -> str:
    """``ragframe.metrics.judge`` -> ``metrics``; ``ragframe.budgeting`` -> ``budgeting``; ``ragframe`` -> itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def group(module: str) -> str:
    """The unit of the cycle rule: a package; the base floor's modules (which import each other) are one unit."""
    name = unit(module)
    return "base" if FLOOR[name] == 0 else name


def unit(module: str) -> str:
    """The module's entry in FLOORS: the module itself when it is named there (``io.scores``), else its package."""
    name = module.removeprefix("ragframe.")
    return name if name in FLOOR and name != package(module) else package(module)


def floor(module: str) -> int:
    return FLOOR[unit(module)]


ALL_IMPORTS = [imp for module in MODULES for imp in imports_of(module)]


def upward_imports(imports: list[Import]) -> list[Import]:
    """Imports of a higher floor (``from ragframe import __version__``, the package's metadata, is not one)."""
    return [
        imp
        for imp in imports
        if floor(imp.imported) > floor(imp.importer)
        and not (imp.imported == "ragframe" and imp.names == ("__version__",))
    ]


def private_imports(imports: list[Import]) -> list[tuple[str, str, str, int]]:
    """(importer, imported, name, line) of every private name taken across packages."""
    out = []
    for imp in imports:
        if package(imp.importer) == package(imp.imported):
            continue
        last = imp.imported.rsplit(".", 1)[-1]
        if last.startswith("_") and not last.startswith("__"):  # a private module
            out.append((imp.importer, imp.imported, last, imp.line))
        out += [
            (imp.importer, imp.imported, n, imp.line) for n in imp.names if n.startswith("_") and n != "__version__"
        ]
    return out


def package_cycles(imports: list[Import]) -> list[list[str]]:
    """The strongly connected groups of more than one package (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        a, b = group(imp.importer), group(imp.imported)
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


# ----------------------------------------------------------------------------- the rules


def test_every_package_and_top_level_module_has_a_floor():
    assert sorted({package(m) for m in MODULES} - set(FLOOR)) == []


def test_the_reader_finds_function_level_imports():
    """``Evaluator.written_columns`` once imported io inside a method: such imports are read too."""
    lines = {imp.imported for imp in imports_of("ragframe.io.trec_eval_format")}
    assert "ragframe.io.trec" in lines  # read_prefs imports the trec reader inside the function
    found = imports_of("ragframe.run.evaluator")
    assert any(imp.imported == "ragframe.budgeting" for imp in found)  # a function-level import in _routed_scores


def test_no_module_imports_a_higher_floor():
    found = {(imp.importer, imp.imported): imp.line for imp in upward_imports(ALL_IMPORTS)}
    new = {pair: line for pair, line in found.items() if pair not in KNOWN_UPWARD}
    assert new == {}, "imports from a lower floor to a higher one (docs/architecture.md): " + ", ".join(
        f"{a} (line {line}) imports {b}" for (a, b), line in new.items()
    )


def test_the_known_upward_imports_still_exist():
    """An entry fixed is removed from the list, so the list only says what is true."""
    found = {(imp.importer, imp.imported) for imp in upward_imports(ALL_IMPORTS)}
    assert sorted(set(KNOWN_UPWARD) - found) == []
    assert len(KNOWN_UPWARD) <= 3


def test_no_import_cycle_between_packages():
    known = set(KNOWN_UPWARD)
    kept = [imp for imp in ALL_IMPORTS if (imp.importer, imp.imported) not in known]
    assert package_cycles(kept) == []


def module_circles(imports: list[Import]) -> list[tuple[str, str]]:
    """Pairs of modules that import each other (at any depth of their code, function-level imports included)."""
    edges = {(imp.importer, imp.imported) for imp in imports if imp.imported in MODULES}
    return sorted((a, b) for a, b in edges if a < b and (b, a) in edges)


def test_no_two_modules_import_each_other():
    """A 2-file circle (exceptions <-> secrets, judges.budget <-> judges.runner) hides inside a package or
    the base floor, where the package rule does not look: none is allowed, even by a function-level import."""
    assert module_circles(ALL_IMPORTS) == []


def test_a_two_module_circle_is_found():
    imports = [
        _fake("ragframe.judges.budget", "ragframe.judges.runner"),
        _fake("ragframe.judges.runner", "ragframe.judges.budget"),
        _fake("ragframe.judges.runner", "ragframe.judges.cache"),
    ]
    assert module_circles(imports) == [("ragframe.judges.budget", "ragframe.judges.runner")]
    assert module_circles(imports[1:]) == []


@pytest.mark.slow
def test_no_private_name_is_imported_across_packages():
    attributes = [imp for module in MODULES for imp in private_attributes(module)]
    found = private_imports(ALL_IMPORTS) + [
        (imp.importer, imp.imported, imp.names[0], imp.line)
        for imp in attributes
        if package(imp.importer) != package(imp.imported)
    ]
    new = sorted(
        {f"{a} (line {line}) takes {name} from {b}" for a, b, name, line in found if (a, b, name) not in KNOWN_PRIVATE}
    )
    assert new == []


@pytest.mark.slow
def test_the_known_private_imports_still_exist():
    attributes = [imp for module in MODULES for imp in private_attributes(module)]
    found = {(a, b, name) for a, b, name, _ in private_imports(ALL_IMPORTS)}
    found |= {(imp.importer, imp.imported, imp.names[0]) for imp in attributes}
    assert sorted(set(KNOWN_PRIVATE) - found) == []


# ----------------------------------------------------------------------------- the checker itself


def _fake(importer: str, imported: str, names: tuple[str, ...] = ()) -> Import:
    return Import(importer, imported, names, 1)


@pytest.mark.parametrize(
    ("imp", "upward"),
    [
        (_fake("ragframe.metrics.heuristic", "ragframe.run.evaluator"), True),
        (_fake("ragframe.kernels.text", "ragframe.schema"), False),
        (_fake("ragframe.io.streaming", "ragframe.run.evaluator"), False),
        (_fake("ragframe.judges.base", "ragframe.metrics.registry"), True),
        (_fake("ragframe.stats.summary", "ragframe.io.streaming"), True),
    ],
    ids=["metrics-run", "kernels-base", "io-run", "judges-metrics", "stats-io"],
)
def test_the_floor_rule_on_single_imports(imp, upward):
    assert (upward_imports([imp]) == [imp]) is upward


def test_a_cycle_between_packages_is_found():
    imports = [
        _fake("ragframe.run.evaluator", "ragframe.io.streaming"),
        _fake("ragframe.io.streaming", "ragframe.run.x"),
    ]
    assert package_cycles(imports) == [["io", "run"]]
    assert package_cycles(imports[:1]) == []


def test_a_private_name_across_packages_is_found():
    imports = [
        _fake("ragframe.distributed.scoring", "ragframe.io.streaming", ("_Batch", "evaluate_parquet")),
        _fake("ragframe.io.batch_worker", "ragframe.io.streaming", ("_Batch",)),  # same package: allowed
        _fake("ragframe.stats.summary", "ragframe.plot._frames"),  # a private module
    ]
    assert [(a, name) for a, _, name, _ in private_imports(imports)] == [
        ("ragframe.distributed.scoring", "_Batch"),
        ("ragframe.stats.summary", "_frames"),
    ]


def test_docs_architecture_lists_every_floor():
    text = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for packages in FLOORS:
        for name in packages:
            assert f"`{name}" in text, name


# ----------------------------------------------------------------------------- private attributes and "_" keys

#: Private attributes reached on another package's objects that are known: (module, attribute) -> why.
KNOWN_PRIVATE_ATTRIBUTES: dict[tuple[str, str], str] = {}
#: "_"-prefixed keys of option mappings that are known: (module, key) -> why.
KNOWN_UNDERSCORE_KEYS: dict[tuple[str, str], str] = {}
#: Names that hold options (a run's, a family's, a config): a "_" key in them is run state hidden in options.
OPTION_MAPPINGS = ("options", "opts", "checked", "config", "settings", "merged", "given", "family_options")


def _defined_private_attributes(module: str) -> set[str]:
    """The private attributes a module defines on its objects: methods ``def _x`` of its classes, ``self._x = ...``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("_"):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__":
            if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                names.add(node.args[1].value)  # object.__setattr__(self, "_x", ...) of frozen dataclasses
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


PRIVATE_BY_PACKAGE: dict[str, set[str]] = {}
for _module in MODULES:
    PRIVATE_BY_PACKAGE.setdefault(package(_module), set()).update(_defined_private_attributes(_module))


def foreign_private_attributes(module: str) -> list[tuple[str, str, int]]:
    """``obj._x`` in ``module`` where ``_x`` is a private attribute only another package defines.

    ``self._x`` and ``cls._x`` are the object's own; an attribute its own package also defines is
    taken to be its own (the rule errs towards silence, never towards a false alarm).
    """
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    own = PRIVATE_BY_PACKAGE.get(package(module), set())
    others = set().union(*(names for pkg, names in PRIVATE_BY_PACKAGE.items() if pkg != package(module)))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if node.attr in others and node.attr not in own:
            found.append((module, node.attr, node.lineno))
    return found


def underscore_keys(module: str) -> list[tuple[str, str, int]]:
    """``options["_x"]``, ``options.get("_x")`` and ``{"_x": ...}`` in a mapping of options: run state in options."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))

    def named_like_options(node: ast.AST) -> bool:
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        return any(name == n or name.endswith("_" + n) for n in OPTION_MAPPINGS)

    def underscore(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("_"):
            return node.value if not node.value.startswith("__") else None
        return None

    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and named_like_options(node.value):
            key = underscore(node.slice)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop"):
            if named_like_options(node.func.value) and node.args:
                key = underscore(node.args[0])
        elif isinstance(node, ast.Dict):  # {**options, "_x": ...}
            keys = [underscore(k) for k in node.keys if k is not None]
            spread = [v for k, v in zip(node.keys, node.values) if k is None]
            if any(keys) and any(named_like_options(v) for v in spread):
                key = next(k for k in keys if k)
        if key is not None:
            found.append((module, key, node.lineno))
    return found


def test_no_private_attribute_of_another_package_is_reached():
    found = [f for module in MODULES for f in foreign_private_attributes(module)]
    new = [f for f in found if (f[0], f[1]) not in KNOWN_PRIVATE_ATTRIBUTES]
    assert new == [], "private attributes of another package's objects: " + "; ".join(
        f"{m} line {line}: .{name}" for m, name, line in new
    )


def test_no_option_mapping_holds_an_underscore_key():
    found = [f for module in MODULES for f in underscore_keys(module)]
    new = [f for f in found if (f[0], f[1]) not in KNOWN_UNDERSCORE_KEYS]
    assert new == [], "run state hidden in options: " + "; ".join(f"{m} line {line}: {key!r}" for m, key, line in new)


def test_the_known_lists_of_the_new_rules_are_empty():
    assert KNOWN_PRIVATE_ATTRIBUTES == {} and KNOWN_UNDERSCORE_KEYS == {}


def test_the_new_rules_find_what_they_look_for(tmp_path, monkeypatch):
    sources = {
        "ragframe.io.fake_io": "def f(evaluator):\n    return evaluator._scores(1) + evaluator._private_thing\n",
        "ragframe.run.fake_run": (
            "class E:\n    def _scores(self):\n        self._private_thing = 1\n"
            "def g(options):\n    memo = options['_memo']\n    return {**options, '_budget': 1}, options.get('_x')\n"
        ),
    }
    for name, text in sources.items():
        path = tmp_path / (name.replace(".", "_") + ".py")
        path.write_text(text, encoding="utf-8")
        monkeypatch.setitem(MODULES, name, path)
    monkeypatch.setitem(PRIVATE_BY_PACKAGE, "run", PRIVATE_BY_PACKAGE["run"] | {"_scores", "_private_thing"})
    monkeypatch.setitem(PRIVATE_BY_PACKAGE, "io", PRIVATE_BY_PACKAGE["io"] - {"_scores", "_private_thing"})
    assert sorted((n, line) for _, n, line in foreign_private_attributes("ragframe.io.fake_io")) == [
        ("_private_thing", 2),
        ("_scores", 2),
    ]
    assert sorted(k for _, k, _ in underscore_keys("ragframe.run.fake_run")) == ["_budget", "_memo", "_x"]
