"""Exit codes of the ``ragframe`` command and its one-line errors.

0 ok, 1 the gate failed, 2 usage error, 3 input or runtime error, 130 interrupted; every
error is one line on stderr without a traceback (a bug keeps its traceback and exits 3).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from test_streaming import make_log

import ragframe.cli.summary
from ragframe.cli.main import EXIT_CODES, main
from ragframe.exceptions import RagframeError

CLI = [sys.executable, "-m", "ragframe.cli"]


def run_cli(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str) -> str:
    """The single line of ``err`` (fails if there are more, or a traceback)."""
    assert "Traceback" not in err, err
    assert err.endswith("\n") and err.count("\n") == 1, err
    return err.rstrip("\n")


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    path = tmp_path / "log.parquet"
    make_log(12, seed=5).write_parquet(path)
    return path


def test_exit_code_table():
    assert EXIT_CODES == {"ok": 0, "gate failed": 1, "usage": 2, "error": 3, "interrupted": 130}


def test_out_pointing_at_a_file_is_an_input_error(capsys, log_file, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("not a folder", encoding="utf-8")
    code, out, err = run_cli(capsys, "eval", log_file, "-o", taken, "--no-progress")
    assert (code, out) == (3, "")  # once a FileExistsError traceback with exit code 1
    assert one_line(err).startswith("ragframe: error: ") and repr(str(taken)) in err
    assert taken.read_text(encoding="utf-8") == "not a folder"


def test_demo_out_pointing_at_a_file_is_an_input_error(capsys, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("x", encoding="utf-8")
    code, _, err = run_cli(capsys, "demo", "--out", taken)
    assert code == 3
    assert one_line(err) == f"ragframe: error: File exists: {str(taken)!r}"


@pytest.mark.slow
def test_out_pointing_at_a_file_in_a_real_process(log_file, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("x", encoding="utf-8")
    done = subprocess.run([*CLI, "eval", str(log_file), "-o", str(taken)], capture_output=True, text=True)
    assert done.returncode == 3
    assert one_line(done.stderr).startswith("ragframe: error: ") and repr(str(taken)) in done.stderr


def _raising(exc: BaseException):
    def handler(args):
        raise exc

    return handler


def test_polars_error_is_one_line_and_exit_3(capsys, monkeypatch, tmp_path):
    message = 'unable to find column "b"; valid columns: ["a"]\n\nResolved plan until failure:\n\n\t---> FAILED HERE'
    monkeypatch.setattr(ragframe.cli.summary, "run", _raising(pl.exceptions.ColumnNotFoundError(message)))
    code, out, err = run_cli(capsys, "summary", tmp_path / "x.parquet")
    assert (code, out) == (3, "")
    assert one_line(err) == 'ragframe: error: unable to find column "b"; valid columns: ["a"]'


def test_polars_error_from_the_library_is_one_line(capsys, tmp_path):
    # ids Int64 on one side and String on the other: polars refuses the join (or ragframe names the column)
    pl.DataFrame({"id": [1, 2, 3], "faithfulness": [0.1, 0.2, 0.3]}).write_parquet(tmp_path / "a.parquet")
    pl.DataFrame({"id": ["1", "2", "3"], "faithfulness": [0.2, 0.2, 0.4]}).write_parquet(tmp_path / "b.parquet")
    code, out, err = run_cli(capsys, "compare", tmp_path / "a.parquet", tmp_path / "b.parquet")
    assert (code, out) == (3, "")
    assert one_line(err).startswith("ragframe: error: ") and "id" in err


def test_ragframe_error_message_on_several_lines_is_joined(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(ragframe.cli.summary, "run", _raising(RagframeError("first line\n  second line")))
    code, _, err = run_cli(capsys, "summary", tmp_path / "x.parquet")
    assert code == 3
    assert one_line(err) == "ragframe: error: first line second line"


def test_os_error_is_one_line(capsys, monkeypatch, tmp_path):
    denied = PermissionError(13, "Permission denied", str(tmp_path / "locked"))
    monkeypatch.setattr(ragframe.cli.summary, "run", _raising(denied))
    code, _, err = run_cli(capsys, "summary", tmp_path / "x.parquet")
    assert code == 3
    assert one_line(err) == f"ragframe: error: Permission denied: {str(tmp_path / 'locked')!r}"


def test_keyboard_interrupt_is_exit_130(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(ragframe.cli.summary, "run", _raising(KeyboardInterrupt()))
    code, out, err = run_cli(capsys, "summary", tmp_path / "x.parquet")
    assert (code, out) == (130, "")
    assert one_line(err) == "ragframe: interrupted"


def test_a_bug_keeps_its_traceback_and_exits_3(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(ragframe.cli.summary, "run", _raising(ZeroDivisionError("division by zero")))
    code, _, err = run_cli(capsys, "summary", tmp_path / "x.parquet")
    assert code == 3  # never 1, the gate's "failed"
    assert err.startswith("Traceback (most recent call last):")
    assert err.splitlines()[-1] == "ragframe: internal error: ZeroDivisionError: division by zero"


def test_usage_error_from_the_command_is_one_line(capsys, log_file, tmp_path):
    code, _, err = run_cli(capsys, "eval", log_file, "-o", tmp_path / "out", "--metrics", "fluency")
    assert code == 2
    assert one_line(err).startswith("ragframe eval: error: ") and "fluency" in err


def test_missing_config_file_is_an_input_error(capsys, log_file, tmp_path):
    code, _, err = run_cli(capsys, "eval", log_file, "-o", tmp_path / "out", "--config", tmp_path / "nope.toml")
    assert code == 3
    assert one_line(err) == f"ragframe: error: config file {str(tmp_path / 'nope.toml')!r} not found"


@pytest.mark.slow
def test_closed_stdout_is_one_line_and_no_shutdown_noise(tmp_path):
    frame = pl.DataFrame({"id": list(range(50)), "faithfulness": [i / 50 for i in range(50)]})
    frame.write_parquet(tmp_path / "s.parquet")
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written: the first write fails with EPIPE
    try:
        done = subprocess.run([*CLI, "summary", str(tmp_path / "s.parquet")], stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert done.returncode == 3
    assert one_line(done.stderr.decode()) == "ragframe: error: [Errno 32] Broken pipe"


@pytest.mark.parametrize("command", ["eval", "trec", "demo"])
def test_help_of_the_other_commands_states_the_exit_codes(capsys, command):
    code, out, _ = run_cli(capsys, command, "--help")
    text = " ".join(out.split())
    assert code == 0 and f"usage: ragframe {command}" in out
    assert "exit codes: 0 ok, 2 usage error" in text
    assert "130 interrupted (Ctrl-C)" in text and "Every error is one line on stderr." in text


def _interrupt_when(process: subprocess.Popen, manifest: Path, finished: int) -> None:
    """Send SIGINT to the process group (as a terminal's Ctrl-C does) once ``finished`` batches are done."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if len(json.loads(manifest.read_text())["finished"]) >= finished:
                os.killpg(process.pid, signal.SIGINT)
                return
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            pass
        time.sleep(0.005)
    raise AssertionError("the run ended before it could be interrupted")


@pytest.mark.slow
@pytest.mark.parametrize("per_process", [None, 25])
def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, per_process):
    log = tmp_path / "log.parquet"
    pl.concat([make_log(500, seed=s) for s in range(6)]).write_parquet(log)
    out = tmp_path / "out"
    command = [*CLI, "eval", str(log), "-o", str(out), "--batch-rows", "40", "--no-progress"]
    # 75 batches: in this process, or in child processes of 25 batches each
    command += ["--batches-per-process", str(per_process if per_process else 1000)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    _interrupt_when(process, out / "manifest.json", 3)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr.decode()
    assert stderr.decode() == "ragframe: interrupted\n"  # no traceback, from the parent or from a child
    assert stdout.startswith(b"scoring ") and stdout.count(b"\n") == 1  # the plan, then nothing
    written = sorted(p.name for p in (out / "scores").iterdir())
    time.sleep(1.0)
    assert sorted(p.name for p in (out / "scores").iterdir()) == written, "a child kept writing"
    rerun = subprocess.run(command, capture_output=True, text=True)  # and the run resumes
    assert rerun.returncode == 0, rerun.stderr
    assert "batches done by an earlier run" in rerun.stdout


# ----------------------------------------------------------------------------- the remaining error paths


def test_invalid_toml_is_a_usage_error(capsys, log_file, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("metrics = [faithfulness\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "eval", log_file, "-o", tmp_path / "out", "--config", bad)
    assert code == 2
    assert one_line(err).startswith(f"ragframe eval: error: config file {str(bad)!r} is not valid TOML: ")


def test_toml_reader_missing_is_an_input_error(capsys, monkeypatch, log_file, tmp_path):
    # Python 3.10 without tomli: both imports fail
    monkeypatch.setitem(sys.modules, "tomllib", None)
    monkeypatch.setitem(sys.modules, "tomli", None)
    config = tmp_path / "c.toml"
    config.write_text("batch_rows = 5\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "eval", log_file, "-o", tmp_path / "out", "--config", config)
    assert code == 3
    assert "pip install 'ragframe[cli]'" in one_line(err)


def test_no_resume_on_an_earlier_run_is_an_input_error(capsys, log_file, tmp_path):
    out = tmp_path / "out"
    assert run_cli(capsys, "eval", log_file, "-o", out, "--batch-rows", "5")[0] == 0
    code, stdout, err = run_cli(capsys, "eval", log_file, "-o", out, "--batch-rows", "5", "--no-resume")
    assert (code, stdout) == (3, "")
    assert one_line(err).startswith("ragframe: error: ")


@pytest.fixture
def gate_files(tmp_path: Path) -> dict[str, Path]:
    base = pl.DataFrame({"id": [1, 2, 3, 4], "faithfulness": [0.8, 0.7, 0.9, 0.8], "mrr": [0.5, 0.6, 0.4, 0.5]})
    paths = {"base": tmp_path / "base.parquet", "cur": tmp_path / "cur.parquet"}
    base.write_parquet(paths["base"])
    base.with_columns(pl.lit(None, pl.Float64).alias("mrr")).write_parquet(paths["cur"])
    return paths


def test_gate_min_given_twice_is_a_usage_error(capsys, gate_files):
    argv = ["gate", gate_files["cur"], "--baseline", gate_files["base"], "--min", "faithfulness=0.1"]
    code, out, err = run_cli(capsys, *argv, "--min", "faithfulness=0.2")
    assert (code, out) == (2, "")
    assert one_line(err) == "ragframe gate: error: --min faithfulness given twice"


def test_gate_fails_on_what_it_cannot_check(capsys, gate_files):
    # mrr has no value in SCORES: a failed check naming it, not a silent pass
    code, out, err = run_cli(capsys, "gate", gate_files["cur"], "--baseline", gate_files["base"])
    assert code == 1, err
    mrr = next(line for line in out.splitlines() if " mrr: " in line)
    assert mrr.startswith("FAIL  regression  mrr: no pair to compare")
    assert out.splitlines()[-1] == "gate failed: 1 of 2 checks failed"
    argv = ["gate", gate_files["base"], "--baseline", gate_files["base"], "--metrics", "faithfulness", "recall"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 1
    assert "FAIL  regression  recall: not in the baseline: cannot check" in out


def test_gate_with_nothing_to_check_is_an_input_error(capsys, tmp_path):
    pl.DataFrame({"id": [1, 2], "note": ["a", "b"]}).write_parquet(tmp_path / "plain.parquet")
    code, out, err = run_cli(capsys, "gate", tmp_path / "plain.parquet", "--baseline", tmp_path / "plain.parquet")
    assert (code, out) == (3, "")
    assert one_line(err).startswith("ragframe: error: ") and "nothing to check" in err


def test_a_bad_parameter_passed_through_is_a_usage_error(capsys):
    """An InvalidParameterError from the library (here trec -l -1) is the caller's mistake: exit 2, one line."""
    from pathlib import Path

    data = Path(__file__).parent / "data" / "trec_eval"
    code = main(["trec", str(data / "qrels.test"), str(data / "results.test"), "-l", "-1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("ragframe trec: error: --level_for_rel must be an int >= 0")
