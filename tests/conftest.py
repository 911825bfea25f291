"""Shared test fixtures: where the data lives, and skips when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LOCAL_DATA = TESTS / "data"
#: The team's third-party data (absent in a user's fresh clone: tests that need it skip).
SHARED_DATA = TESTS.parent.parent / "shared" / "data"


def shared_path(*parts: str) -> Path:
    """Path under ../shared/data, skipping the calling test when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path
