"""The user docs: no pointers to files users cannot see, and docs/metrics.md covers every metric.

docs/metrics.md is the reference of every metric's formula, direction, threshold and
null rules; these tests keep it in step with the metric registry.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ragframe as rf
from ragframe.metrics.heuristic_seed import SEED_THRESHOLDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
METRICS_MD = DOCS / "metrics.md"
#: Internal design notes that are not part of the repository: a path into a ``spec/``
#: folder (``spec/heuristics.md``, ``../shared/spec/...``) or ``DESIGN.md``.
HIDDEN = re.compile(r"\bspec/|DESIGN\.md")
#: Columns docs/metrics.md defines besides the registered metrics.
EXTRA_NAMES = ("num_ret", "num_rel", "num_rel_ret", "composite_score", "passed")


def _text_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted(DOCS.rglob("*")), *sorted((ROOT / "ragframe").rglob("*"))]
    return [f for f in files if f.is_file() and "__pycache__" not in f.parts]


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # binary data (Parquet): no text to check
        return None


def _builtin_metrics() -> list[tuple[str, bool, float | None]]:
    """(name, higher_is_better, default threshold) of every ranking and heuristic metric."""
    list_metrics = getattr(rf, "list_metrics", None)
    if list_metrics is not None:
        table = list_metrics()
        table = table.filter(table["family"].is_in(["retrieval", "heuristic"]))
        return [(r["name"], r["higher_is_better"], r["threshold"]) for r in table.iter_rows(named=True)]
    heuristic = [(name, True, rf.DEFAULT_THRESHOLDS[name]) for name in rf.HEURISTIC_METRICS]
    return heuristic + [(name, True, None) for name in rf.RETRIEVAL_METRICS]


def test_scan_finds_the_files_it_checks():
    names = {f.relative_to(ROOT).as_posix() for f in _text_files()}
    assert {"README.md", "docs/metrics.md", "ragframe/__init__.py", "ragframe/metrics/retrieval.py"} <= names


def test_hidden_pattern_matches_what_it_should():
    assert HIDDEN.search("see ``spec/heuristics.md``") and HIDDEN.search("(DESIGN.md, section 2)")
    assert HIDDEN.search("../shared/spec/retrieval.md")
    assert not HIDDEN.search("inspect/ and respec/ are other words; docs/metrics.md is fine")


def test_no_reference_to_files_outside_the_repository():
    found = []
    for path in _text_files():
        text = _read_text(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if HIDDEN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "references to spec/ or DESIGN.md (not in the repository; point at docs/ instead):\n" + "\n".join(
        found
    )


def test_the_registry_has_the_metrics_the_docs_promise():
    names = [name for name, _, _ in _builtin_metrics()]
    assert len(names) == len(set(names)) >= 18
    assert {"faithfulness", "hallucination_rate", "ndcg_at_k", "mrr", "r_precision"} <= set(names)


@pytest.mark.parametrize("name", [m[0] for m in _builtin_metrics()] + list(EXTRA_NAMES))
def test_metrics_md_mentions_every_metric(name):
    assert f"`{name}`" in METRICS_MD.read_text(encoding="utf-8"), f"docs/metrics.md does not describe `{name}`"


DEFAULT_COLUMN = "default threshold"
SEED_COLUMN = 'threshold with `compat="rag-eval-node-ts"`'


def _overview(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The overview table of docs/metrics.md: its header cells and its rows keyed by the first cell."""
    lines = [line for line in text.splitlines() if line.startswith("| name |")]
    assert len(lines) == 1, "docs/metrics.md: expected one overview table (header '| name | ...')"
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == len(header) and cells[0].startswith("`"):
            rows.setdefault(cells[0], cells)
    return header, rows


def _overview_cell(name: str, column: str) -> str:
    header, rows = _overview(METRICS_MD.read_text(encoding="utf-8"))
    assert column in header, f"docs/metrics.md: the overview table has no column {column!r}: {header}"
    assert f"`{name}`" in rows, f"docs/metrics.md: no overview table row for `{name}`"
    return rows[f"`{name}`"][header.index(column)]


def _documented(threshold: float | None) -> str:
    return "none" if threshold is None else f"{threshold:g}"


@pytest.mark.parametrize("metric", _builtin_metrics(), ids=lambda m: m[0])
def test_metrics_md_threshold_and_direction_match_the_code(metric):
    """The default-method threshold column is rf.list_metrics()'s threshold."""
    name, higher_is_better, threshold = metric
    assert higher_is_better, f"{name}: the docs say every metric is higher-is-better"
    documented = _overview_cell(name, DEFAULT_COLUMN)
    assert documented == _documented(threshold), (name, documented, threshold)


@pytest.mark.parametrize("name", sorted(SEED_THRESHOLDS))
def test_metrics_md_seed_thresholds_match_the_code(name):
    """The compat column is the seed's thresholds (ragframe.metrics.heuristic_seed.SEED_THRESHOLDS)."""
    documented = _overview_cell(name, SEED_COLUMN)
    assert documented == _documented(SEED_THRESHOLDS[name]), (name, documented, SEED_THRESHOLDS[name])


def test_hallucination_rate_direction_is_stated():
    text = METRICS_MD.read_text(encoding="utf-8")
    section = text.split("#### hallucination_rate", 1)[1].split("\n#", 1)[0]
    assert "**Higher is better.**" in section and "supported" in section


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#+\s+(.+?)\s*$", markdown, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_relative_links_in_docs_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        assert linked.is_file(), f"{page.name}: link to missing file {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked.read_text(encoding="utf-8")), f"{page.name}: no heading for {target}"
