"""The demo's report rendered by headless Chromium (offline, from a file:// URL) is not a blank page.

Skips when ``chromium`` is not on the PATH (Debian's ``chromium`` package provides it).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ragframe as rf
from ragframe.datasets import example_rag_log, wrong_contexts

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium")
WIDTH, HEIGHT = 1200, 3000
LABELS = {
    "faithfulness": "human_faithfulness",
    "hallucination_rate": "human_faithfulness",
    "answer_relevance": "human_answer_relevance",
    "context_precision": "human_context_relevance",
    "context_relevance": "human_context_relevance",
}


def screenshot(page: Path, out: Path, profile: Path) -> np.ndarray:
    """Chromium's screenshot of ``page`` as an (HEIGHT, WIDTH, 3) array of 0-255 ints."""
    from matplotlib.image import imread

    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",  # a profile of its own: other Chromium processes do not interfere
        f"--screenshot={out}",
        f"--window-size={WIDTH},{HEIGHT}",
        page.resolve().as_uri(),
    ]
    subprocess.run(command, check=True, capture_output=True, timeout=180)
    pixels = imread(out)  # floats in [0, 1], RGB or RGBA
    return np.round(pixels[..., :3] * 255).astype(np.int32)


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory) -> Path:
    """The report ``ragframe demo`` writes: the ARES log's scores, by reaction, labels, vs the wrong-contexts log."""
    log = pl.read_parquet(example_rag_log())
    scored = rf.evaluate(log, list(LABELS), explain=True)
    broken = rf.evaluate(wrong_contexts(log), list(LABELS))
    out = tmp_path_factory.mktemp("browser") / "report.html"
    return rf.report(scored, out, compare=broken, by="reaction", labels=LABELS, title="ragframe demo")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_chromium_renders_the_report_with_its_pictures(demo_report, tmp_path):
    pixels = screenshot(demo_report, tmp_path / "shot.png", tmp_path / "profile")
    assert pixels.shape == (HEIGHT, WIDTH, 3)
    colours = np.unique(pixels.reshape(-1, 3), axis=0)
    assert len(colours) > 200  # text antialiasing, tables, plots: many colours
    white = (pixels >= 250).all(axis=2)
    assert 0.05 < 1 - white.mean() < 0.95  # neither blank nor one solid block
    # the inline PNGs are drawn: saturated plot colours (bars, heatmap, markers) over a good share of the
    # page; without the pictures only the thin blue headings' rules and the links are saturated (< 1%)
    saturated = (pixels.max(axis=2) - pixels.min(axis=2)) > 80
    assert saturated.mean() > 0.02, saturated.mean()
    # every part of the first screen holds something: the page is laid out down to its bottom
    bands = np.array_split(~white, 6, axis=0)
    assert all(band.mean() > 0.01 for band in bands), [round(float(b.mean()), 3) for b in bands]
