"""``ragframe eval`` progress on a real pseudo-terminal.

Each test runs the command in a child process whose stdin, stdout and stderr are a pty
(python's ``pty`` module), with the window size a terminal would report, and reads what
it printed. tqdm's bar when it can draw; ragframe's own counter when tqdm is missing or
the terminal reports no width (a pty without a window size: tqdm would trim its line to
nothing); nothing with ``--no-progress``.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from test_streaming import make_log

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminals as on Linux")

COUNTER = "30/30 rows"  # ragframe's counter after the last of 3 batches of 10 rows


def tqdm_installed() -> bool:
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    path = tmp_path / "log.parquet"
    make_log(30, seed=4).write_parquet(path)
    return path


def run_in_pty(argv: list[str], columns: int | None, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``argv`` with a pty as its terminal (``columns`` wide, or no window size); return (code, output)."""
    master, slave = pty.openpty()
    if columns is not None:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TQDM_") and k != "COLUMNS"}
    environment.update(env or {})
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=environment, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError as exc:  # EIO: every end of the pty's other side is closed
            if exc.errno != errno.EIO:
                raise
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return process.wait(timeout=120), b"".join(chunks).decode("utf-8", errors="replace")


def eval_command(log_file: Path, out: Path, *flags: str) -> list[str]:
    return [sys.executable, "-m", "ragframe.cli", "eval", str(log_file), "-o", str(out), "--batch-rows", "10", *flags]


@pytest.mark.slow
def test_terminal_without_a_width_gets_the_counter(log_file, tmp_path):
    code, output = run_in_pty(eval_command(log_file, tmp_path / "out"), columns=None)
    assert code == 0, output
    assert COUNTER in output and "rows/s" in output and "ETA" in output
    assert "scored 30 of 30 rows" in output


@pytest.mark.slow
@pytest.mark.skipif(not tqdm_installed(), reason="tqdm (the cli extra) is not installed")
def test_terminal_with_a_width_gets_the_tqdm_bar(log_file, tmp_path):
    code, output = run_in_pty(eval_command(log_file, tmp_path / "out"), columns=80)
    assert code == 0, output
    assert "ragframe eval: 100%" in output and "rows/s" in output
    assert COUNTER not in output  # one display, not two


@pytest.mark.slow
def test_without_tqdm_the_counter_shows(log_file, tmp_path):
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "tqdm.py").write_text("raise ImportError('hidden by the test')\n", encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join([str(hide), *filter(None, [os.environ.get("PYTHONPATH")])])}
    code, output = run_in_pty(eval_command(log_file, tmp_path / "out"), columns=80, env=env)
    assert code == 0, output
    assert COUNTER in output and "ragframe eval:" not in output


@pytest.mark.slow
@pytest.mark.skipif(not tqdm_installed(), reason="tqdm (the cli extra) is not installed")
def test_tqdm_disabled_by_its_environment_falls_back_to_the_counter(log_file, tmp_path):
    code, output = run_in_pty(eval_command(log_file, tmp_path / "out"), columns=80, env={"TQDM_DISABLE": "1"})
    assert code == 0, output
    assert COUNTER in output and "ragframe eval:" not in output


@pytest.mark.slow
@pytest.mark.parametrize("columns", [None, 80])
def test_no_progress_shows_nothing(log_file, tmp_path, columns):
    code, output = run_in_pty(eval_command(log_file, tmp_path / "out", "--no-progress"), columns=columns)
    assert code == 0, output
    assert "rows/s" not in output and "ragframe eval:" not in output
    assert "scored 30 of 30 rows" in output


@pytest.mark.slow
def test_no_progress_outside_a_terminal(log_file, tmp_path):
    done = subprocess.run(eval_command(log_file, tmp_path / "out"), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "rows/s" not in done.stdout + done.stderr
