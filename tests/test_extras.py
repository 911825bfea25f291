"""ragframe.extras.require: the one guard of optional imports, its extras equal to pyproject.toml's."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

import ragframe as rf
from ragframe.extras import EXTRAS, require

ROOT = Path(__file__).resolve().parents[1]


def _pyproject_extras() -> dict[str, list[str]]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["optional-dependencies"]


def _distribution(requirement: str) -> tuple[str, set[str]]:
    """('ray', {'data', 'client'}) of 'ray[data,client]>=2.40': the normalized name and its extras."""
    match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", requirement)
    assert match, requirement
    extras = {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}
    return re.sub(r"[-_.]+", "-", match.group(1)).lower(), extras


@pytest.mark.slow
def test_the_extras_are_pyprojects():
    declared = _pyproject_extras()
    assert set(EXTRAS) == set(declared) - {"test"}
    installed = metadata.packages_distributions()
    for extra, modules in EXTRAS.items():
        distributions = dict(_distribution(r) for r in declared[extra])
        for module in modules:
            if module == "grpc":  # grpcio comes with ray[client]
                assert "client" in distributions.get("ray", set()), extra
                continue
            names = {re.sub(r"[-_.]+", "-", d).lower() for d in installed.get(module, [module])}
            assert names & set(distributions), (extra, module, distributions)


def _report(tmp_path):
    import polars as pl

    rf.report(pl.DataFrame({"id": [1], "faithfulness": [0.5]}), tmp_path / "r.html")


def _plot(tmp_path):
    import polars as pl

    rf.plot.distributions(pl.DataFrame({"id": [1], "faithfulness": [0.5]}))


def _judge(tmp_path):
    rf.OpenAIJudge(model="m", base_url="http://127.0.0.1:1/v1", api_key="k")


def _ray(tmp_path):
    from ragframe.distributed.runtime import require_ray

    require_ray()


def _toml(tmp_path):
    from ragframe.cli import eval as eval_command

    (tmp_path / "c.toml").write_text("batch_rows = 5\n", encoding="utf-8")
    eval_command._load_config(str(tmp_path / "c.toml"))


def _ray_client(tmp_path):
    from ragframe.cli import eval as eval_command

    eval_command._require_ray_client("ray://head:10001")


@pytest.mark.parametrize(
    ("call", "absent", "message"),
    [
        (_report, "jinja2", "report: jinja2 is not installed: pip install 'ragframe[report]'"),
        (_report, "matplotlib", "report: matplotlib is not installed: pip install 'ragframe[report]'"),
        (_plot, "matplotlib.figure", "distributions: matplotlib is not installed: pip install 'ragframe[plot]'"),
        (
            _judge,
            "httpx",
            "OpenAIJudge: httpx is not installed: pip install 'ragframe[judge]' "
            "(or pass any callable prompt -> str as judge=)",
        ),
        (_ray, "ray.data", "ray[data] is not installed: pip install 'ragframe[ray]'"),
        (_toml, "tomli", "reading a TOML config on Python 3.10 needs tomli: pip install 'ragframe[cli]'"),
        (
            _ray_client,
            "grpc",
            "--address ray://head:10001 (Ray Client) needs grpcio: pip install 'ragframe[ray]' "
            "(the extra includes ray[client])",
        ),
    ],
    ids=["report-jinja2", "report-matplotlib", "plot", "judge", "ray", "toml", "ray-client"],
)
def test_every_guard_names_the_package_and_its_extra(tmp_path, monkeypatch, call, absent, message):
    for module in (absent, absent.partition(".")[0]):  # a module imported earlier is in sys.modules: block it too
        monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    if absent == "tomli":
        monkeypatch.setitem(sys.modules, "tomllib", None)  # as on Python 3.10
    with pytest.raises(rf.MissingDependencyError) as info:
        call(tmp_path)
    assert str(info.value) == message
    assert isinstance(info.value, ImportError)


def test_require_returns_the_module_and_refuses_an_extra_that_does_not_install_it():
    assert require("report", "jinja2").__name__ == "jinja2"
    with pytest.raises(ValueError, match="the extra 'plot' does not install 'jinja2'"):
        require("plot", "jinja2")
    with pytest.raises(ValueError, match="the extra 'plots' does not install"):
        require("plots", "matplotlib")


def test_no_module_writes_its_own_guard():
    """Optional imports go through require; an `except ImportError` elsewhere is a soft fallback (no bar)."""
    # tqdm: no progress bar; tomllib: tomli (cli/args.py); __init__.py: find_spec tells rf.<submodule> from a name
    soft = {"progress.py", "cli/args.py", "__init__.py"}
    package = ROOT / "ragframe"
    found = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if re.search(r"except (ModuleNotFoundError|ImportError)|find_spec\(", path.read_text(encoding="utf-8"))
    }
    assert found <= soft | {"extras.py", "exceptions.py"}, found - soft
    assert "MissingDependencyError(" not in "".join(
        (package / name).read_text(encoding="utf-8") for name in found - {"extras.py", "exceptions.py"}
    )


def test_every_core_dependency_is_imported_by_the_package():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as handle:
        declared = [_distribution(r)[0] for r in tomllib.load(handle)["project"]["dependencies"]]
    modules = {"scikit-learn": "sklearn"}  # import names that differ from the distribution's
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "ragframe").rglob("*.py"))
    for name in declared:
        module = modules.get(name, name)
        assert re.search(rf"^\s*(import|from) {module}\b", source, flags=re.M), f"{name} is never imported"
