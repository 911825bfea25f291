"""Shared test fixtures: where the data lives, and skips when it is absent."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LOCAL_DATA = TESTS / "data"
#: The team's third-party data (absent in a user's fresh clone: tests that need it skip).
SHARED_DATA = TESTS.parent.parent / "shared" / "data"


#: Set before any test module is imported: code that runs while tests are collected (tables of cases built at
#: import time) must not reach a user's ~/.cache either. Each test then gets its own (_private_cache_home).
_COLLECTION_CACHE = tempfile.mkdtemp(prefix="ragframe-tests-cache-")
os.environ["XDG_CACHE_HOME"] = _COLLECTION_CACHE


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_COLLECTION_CACHE, ignore_errors=True)


def shared_path(*parts: str) -> Path:
    """Path under ../shared/data, skipping the calling test when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path


@pytest.fixture(autouse=True)
def _private_cache_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own XDG_CACHE_HOME: no test reads or writes a user's ~/.cache (judge cache).

    Subprocesses started by a test inherit it through the environment.
    """
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg_cache")))


@pytest.fixture
def server():
    """A fake OpenAI-compatible judge on 127.0.0.1 (tests/judge_server.py), stopped after the test.

    Shared by the judge tests; a file that needs another server names its own (``annotation_server``,
    ``echoing_server``).
    """
    from judge_server import FakeJudgeServer

    with FakeJudgeServer() as running:
        yield running


@pytest.fixture(scope="session")
def ares_log():
    """The bundled ARES log (200 rows, human labels), read once per session (polars frames are immutable)."""
    import polars as pl

    from ragframe.datasets import example_rag_log

    return pl.read_parquet(example_rag_log())


#: The heuristics ``ares_scored`` holds (a row's score does not depend on the other metrics scored with it).
ARES_HEURISTICS = ["faithfulness", "answer_relevance", "context_relevance"]


@pytest.fixture(scope="session")
def ares_scored(ares_log):
    """``ares_log`` scored with ARES_HEURISTICS by ``rf.evaluate``, once per session."""
    import ragframe as rf

    return rf.evaluate(ares_log, ARES_HEURISTICS)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One ``ragframe demo`` run per module, into a not-yet-existing nested folder: that folder and what it printed."""
    import contextlib
    import io

    from ragframe.cli.main import main

    out = tmp_path_factory.mktemp("demo") / "nested" / "demo"  # parents are created
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["demo", "--out", str(out)])
    assert code == 0
    return out, buffer.getvalue()


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    """A 12-row synthetic RAG log (test_streaming.make_log, seed 3) written to tmp_path/log.parquet.

    A test file that needs other rows defines its own ``log_file`` (pytest prefers the nearer fixture).
    """
    from test_streaming import make_log

    path = tmp_path / "log.parquet"
    make_log(12, seed=3).write_parquet(path)
    return path


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Ray, notebook and browser tests are slow tests too: ``pytest -m "not slow"`` (the fast loop) leaves them out."""
    for item in items:
        if any(item.get_closest_marker(name) for name in ("ray", "notebook", "browser")):
            item.add_marker(pytest.mark.slow)
