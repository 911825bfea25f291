"""README.md runs as written: every fenced code block, on the bundled data.

- Every ```python block runs in a fresh namespace, in its own temporary working directory.
- Every ```bash block runs line by line (``bash -e -o pipefail -c LINE``, a line ending in
  ``\\`` continues on the next), all blocks in README order in one shared temporary
  directory, so a block may use the files an earlier one wrote (``ragframe demo --out
  demo`` writes the inputs the later commands read). A line must exit 0, unless it carries
  the marker ``# exit N`` (a failing gate, for example), and then it must exit N.
- The only block not run is the one preceded by ``<!-- readme-test: skip (reason) -->``:
  the setup block, which creates a virtual environment, runs ``pip install`` and
  ``pytest``. At most one block may be skipped, and only such a block.
- README's relative links resolve. (``tests/test_docs.py`` runs each ```python block of
  ``docs/*.md`` alone and checks the links of ``docs/``.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SKIP = re.compile(r"^<!--\s*readme-test:\s*skip\b(?P<reason>.*?)-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)\s*$")
EXIT = re.compile(r"#\s*exit\s+(?P<code>\d+)\b")
#: A skipped block must do one of these (what a test run cannot repeat: install, run the suite).
SETUP = re.compile(r"\bpip install\b|^\s*pytest\b|\bpython3? -m venv\b", re.M)
LINE_TIMEOUT = 120  # seconds; each command takes ~1 s


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int  # 1-based line of the opening fence
    skip: str | None  # the skip marker's reason, None when the block runs
    source: Path = README

    @property
    def id(self) -> str:
        return f"{self.source.name}-{self.lang}-line{self.line}"


def parse_blocks(markdown: str, source: Path = README) -> list[Block]:
    """The fenced blocks of ``markdown`` in order, with the skip marker of the line before each."""
    blocks: list[Block] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"README.md:{i + 1}: code block is never closed"
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = SKIP.match(previous.strip())
        skip = marker["reason"].strip() or "no reason given" if marker else None
        blocks.append(Block(opening["lang"], "\n".join(lines[i + 1 : end]) + "\n", i + 1, skip, source))
        i = end + 1
    return blocks


def bash_commands(code: str) -> list[tuple[str, int]]:
    """(command, expected exit code) per logical line; blank and comment-only lines dropped."""
    commands: list[tuple[str, int]] = []
    pending = ""
    for raw in code.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line, pending = pending + raw, ""
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        marker = EXIT.search(line)
        commands.append((line.strip(), int(marker["code"]) if marker else 0))
    assert not pending, f"a bash block ends with a continued line: {pending!r}"
    return commands


def run_bash(code: str, cwd: Path) -> list[str]:
    """Run ``code`` line by line in ``cwd``; the failures, each with its output (empty when all pass)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")  # ragframe, python
    env.pop("COLUMNS", None)
    failures = []
    for command, expected in bash_commands(code):
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", command],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=LINE_TIMEOUT,
        )
        if done.returncode != expected:
            failures.append(
                f"$ {command}\nexit code {done.returncode}, expected {expected}\n"
                f"--- stdout\n{done.stdout[-3000:]}--- stderr\n{done.stderr[-3000:]}"
            )
            if expected == 0:
                break  # later lines read what this one should have written
    return failures


BLOCKS = parse_blocks(README.read_text(encoding="utf-8"))
PYTHON = [b for b in BLOCKS if b.lang == "python" and b.skip is None]
BASH = [b for b in BLOCKS if b.lang == "bash" and b.skip is None]


# ----------------------------------------------------------------------------- the README's blocks


def test_readme_has_the_blocks_it_promises():
    languages = {b.lang for b in BLOCKS}
    assert languages <= {"python", "bash"}, f"blocks this test does not run: {languages - {'python', 'bash'}}"
    assert len(PYTHON) >= 4 and len(BASH) >= 2
    skipped = [b for b in BLOCKS if b.skip is not None]
    assert len(skipped) <= 1, f"more than one block is skipped: {[b.id for b in skipped]}"
    for block in skipped:
        assert SETUP.search(block.code), f"{block.id} is skipped but neither installs nor runs pytest"
    run = "".join(b.code for b in PYTHON + BASH)
    assert not re.search(r"\bpip install\b", run), "a block that runs installs packages: mark it as the setup block"
    assert "ragframe demo --out demo" in BASH[0].code, "the first bash block that runs creates demo/"


@pytest.mark.slow
@pytest.mark.parametrize("block", PYTHON, ids=lambda b: b.id)
def test_python_block_runs(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _run_blocks([block], {"__name__": "__readme__"})


def _run_blocks(blocks: list[Block], namespace: dict) -> None:
    for block in blocks:
        code = "\n" * block.line + block.code  # so that a traceback names the page's own line numbers
        exec(compile(code, str(block.source), "exec"), namespace)


@pytest.mark.slow
def test_bash_blocks_run_in_order(tmp_path):
    failures = []
    for block in BASH:
        failures += [f"README.md:{block.line}\n{f}" for f in run_bash(block.code, tmp_path)]
        if failures:
            break
    assert not failures, "\n\n".join(failures)
    written = sorted(p.name for p in (tmp_path / "demo").iterdir())
    assert "rag_log.parquet" in written and "qrels.txt" in written


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


def test_readme_links_resolve():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert {"docs/metrics.md", "docs/statistics.md", "docs/migration.md"} <= set(targets)
    for target in targets:
        if re.match(r"[a-z]+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = ROOT / file_part if file_part else README
        assert linked.is_file(), f"README.md: link to missing file {target}"
        if anchor:
            assert anchor in _anchors(linked.read_text(encoding="utf-8")), f"README.md: no heading for {target}"


# ----------------------------------------------------------------------------- the harness itself


SAMPLE = """\
Intro.

<!-- readme-test: skip (installs) -->
```bash
pip install -e '.[test]'
```

```python
x = 1
```

```bash
echo a > a.txt   # comment
# a comment line
grep -q a a.txt \\
  && echo continued
false   # exit 1: expected to fail
```
"""


def test_parser_finds_blocks_markers_and_continued_lines():
    blocks = parse_blocks(SAMPLE)
    assert [(b.lang, b.line, b.skip) for b in blocks] == [
        ("bash", 4, "(installs)"),
        ("python", 8, None),
        ("bash", 12, None),
    ]
    assert bash_commands(blocks[2].code) == [
        ("echo a > a.txt   # comment", 0),
        ("grep -q a a.txt    && echo continued", 0),
        ("false   # exit 1: expected to fail", 1),
    ]


def test_runner_reports_a_failing_line_and_an_unexpected_success(tmp_path):
    assert run_bash(parse_blocks(SAMPLE)[2].code, tmp_path) == []
    failures = run_bash("echo ok\nls no-such-file\necho never-run > later.txt\n", tmp_path)
    assert len(failures) == 1 and "$ ls no-such-file" in failures[0] and "expected 0" in failures[0]
    assert not (tmp_path / "later.txt").exists(), "lines after a failure must not run"
    failures = run_bash("true   # exit 1\n", tmp_path)
    assert len(failures) == 1 and "exit code 0, expected 1" in failures[0]
    assert run_bash("false | cat\n", tmp_path), "a failure inside a pipeline counts (pipefail)"


def test_python_blocks_fail_loudly(tmp_path, monkeypatch):
    broken = Block("python", "import ragframe as rf\nrf.evaluate(None)\n", 1, None)
    with pytest.raises(Exception, match="evaluate"):
        test_python_block_runs(broken, tmp_path, monkeypatch)
