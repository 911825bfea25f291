"""Hostile cases of run outcomes (issue 19 parts 2 and 4, issue 20 parts 5 and 6): one test per case.

A run of ``ragframe eval`` / ``rf.evaluate_parquet`` that scored, judged or checked nothing
never ends in success; its stderr is one line per error (no child traceback); its manifest
and result carry the counts; output folders are never read back as input; ``--overwrite``
removes only ragframe's files; library errors speak in the command's flags. Judge cases
use the fake OpenAI-compatible server of tests/judge_server.py on 127.0.0.1 or a Python
callable judge.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from judge_server import verdict_reply
from test_streaming import make_log

import ragframe as rf
from ragframe.cli.args import flag_spelling, speak_in_flags
from ragframe.cli.main import build_parser, main
from ragframe.exceptions import InvalidParameterError, MissingDependencyError, RagframeError, ResumeError
from ragframe.io import streaming

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-hostile-outcomes-0123456789"


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def error_lines(err: str) -> list[str]:
    """The lines of stderr that are errors (what a failed command prints last)."""
    return [line for line in err.splitlines() if line.startswith("ragframe")]


def assert_one_error_line(err: str) -> str:
    """stderr ends with exactly one error line and holds no traceback; that line."""
    assert "Traceback" not in err, err
    lines = error_lines(err)
    assert len(lines) == 1 and err.rstrip("\n").splitlines()[-1] == lines[0], err
    return lines[0]


@pytest.fixture
def judge_config(tmp_path):
    """No retries and no cache: every call reaches the fake server once."""
    path = tmp_path / "judge.toml"
    path.write_text("cache = false\n[judge]\nmax_retries = 0\n", encoding="utf-8")
    return path


def judged_eval(log, out, server_url, config, *extra):
    flags = ["--metrics", "faithfulness", "--mode", "llm", "--judge-model", "m", "--judge-base-url", server_url]
    return main(["eval", str(log), "-o", str(out), *flags, "--config", str(config), "--no-progress", *extra])


# ----------------------------------------------------------------------------- 1. rejects


def test_every_row_rejected_exits_3_with_the_first_reason(tmp_path, capsys):
    log = tmp_path / "numbers.parquet"
    pl.DataFrame({"id": [1, 2, 3], "answer": [1, 2, 3], "contexts": [["a"], ["b"], ["c"]]}).write_parquet(log)
    out = tmp_path / "out"
    assert main(["eval", str(log), "-o", str(out), "--metrics", "faithfulness", "--no-progress"]) == 3
    line = assert_one_error_line(capsys.readouterr().err)
    assert line.startswith("ragframe: error: evaluate_parquet: every row of the log was rejected (3 rows)")
    assert "wrong dtype [column 'answer', row 0]; expected str, found Int64" in line
    recorded = manifest(out)
    assert (recorded["rows"], recorded["scored"], recorded["rejected"], recorded["complete"]) == (3, 0, 3, True)
    with pytest.raises(rf.RunFailedError, match="every row of the log was rejected") as caught:
        rf.evaluate_parquet(log, tmp_path / "py", metrics=["faithfulness"], progress=False)
    assert (caught.value.result.rejected, caught.value.result.scored) == (3, 0)


def test_some_rows_rejected_say_how_many_and_the_manifest_records_it(tmp_path, capsys):
    log = tmp_path / "mixed.parquet"
    rows = make_log(10, seed=4)
    contexts = [["x", None] if i % 5 == 0 else c for i, c in enumerate(rows["contexts"].to_list())]
    rows = rows.with_columns(contexts=pl.Series(contexts, dtype=pl.List(pl.String)))  # rows 0 and 5: a null passage
    rows.write_parquet(log)
    out = tmp_path / "out"
    assert (
        main(["eval", str(log), "-o", str(out), "--metrics", "faithfulness", "--no-progress", "--format", "csv"]) == 0
    )
    err = capsys.readouterr().err
    assert "scored 8 of 10 rows (2 rejected)" in err and f"rejects in {out / 'rejects'}" in err
    assert (manifest(out)["rejected"], manifest(out)["scored"]) == (2, 8)
    assert rf.evaluate_parquet(log, tmp_path / "py", metrics=["faithfulness"], progress=False).rejected == 2


# ----------------------------------------------------------------------------- 2. a log without rows


def test_a_zero_row_log_writes_a_valid_empty_output_and_exits_3(tmp_path, capsys):
    log = tmp_path / "empty.parquet"
    make_log(0).write_parquet(log)
    out = tmp_path / "out"
    assert main(["eval", str(log), "-o", str(out), "--metrics", "faithfulness", "mrr", "--no-progress"]) == 3
    line = assert_one_error_line(capsys.readouterr().err)
    assert (
        line == f"ragframe: error: evaluate_parquet: the log has no rows ({str(log)!r}); "
        f"wrote an empty output (0 rows) to {str(out)!r}"
    )
    scores = pl.read_parquet(out / "scores")
    assert scores.height == 0 and scores.schema["faithfulness"] == pl.Float64 and scores.schema["mrr"] == pl.Float64
    assert "id" in scores.columns and manifest(out)["rows"] == 0 and manifest(out)["complete"] is True
    # the other commands read the folder: summary counts 0 rows
    assert main(["summary", str(out), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {row["metric"]: row["count"] for row in summary}["faithfulness"] == 0
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    assert main(["report", str(out), "-o", str(tmp_path / "report.html")]) == 0
    assert (tmp_path / "report.html").stat().st_size > 0


# ----------------------------------------------------------------------------- 3. a full disk


SITECUSTOMIZE = """
import errno, os, re
if os.environ.get("RAGFRAME_TEST_FULL_DISK"):
    import polars as pl
    _write = pl.DataFrame.write_parquet

    def write_parquet(self, file, *args, **kwargs):
        if re.search(r"[\\\\/]scores[\\\\/]\\.part-00002\\.parquet\\.\\d+\\.tmp$", str(file)):
            with open(file, "wb") as handle:
                handle.write(b"PAR1 half a part")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))
        return _write(self, file, *args, **kwargs)

    pl.DataFrame.write_parquet = write_parquet
"""


@pytest.mark.slow
def test_a_full_disk_in_a_child_process_is_one_line_and_resume_removes_the_leftover(tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = tmp_path / "log.parquet"
    make_log(30, seed=5).write_parquet(log)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "ragframe.cli", "eval", str(log), "-o", str(out), "--metrics", "faithfulness"]
    command += ["--batch-rows", "5", "--batches-per-process", "1", "--no-progress"]  # 6 batches, a child each
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    full = subprocess.run(command, capture_output=True, text=True, env={**env, "RAGFRAME_TEST_FULL_DISK": "1"})
    assert full.returncode == 3, full.stderr
    assert full.stderr.count("\n") == 1 and "Traceback" not in full.stderr, full.stderr
    assert re.fullmatch(r"ragframe: error: No space left on device: '.*\.part-00002\.parquet\.\d+\.tmp'\n", full.stderr)
    leftovers = list((out / "scores").glob(".part-00002.parquet.*.tmp"))
    assert len(leftovers) == 1 and sorted(manifest(out)["finished"]) == ["0", "1"]
    resumed = subprocess.run(command, capture_output=True, text=True, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert not leftovers[0].exists() and len(list((out / "scores").glob("part-*.parquet"))) == 6
    assert "2 of 6 batches done by an earlier run" in resumed.stdout


# ----------------------------------------------------------------------------- 4. output inside the input


def test_an_output_folder_inside_the_input_folder_is_never_read_as_input(tmp_path, capsys):
    logs = tmp_path / "logs"
    logs.mkdir()
    make_log(9, seed=6).write_parquet(logs / "day1.parquet")
    out = logs / "scored"
    flags = ["--metrics", "faithfulness", "--no-progress", "--keep", "id"]
    assert main(["eval", str(logs), "-o", str(out), *flags]) == 0
    assert main(["eval", str(logs), "-o", str(out), *flags]) == 0  # the same source: it resumes
    assert "1 of 1 batches done by an earlier run" in capsys.readouterr().out
    assert main(["eval", str(logs), "-o", str(out), *flags, "--overwrite"]) == 0
    assert main(["eval", str(logs / "**" / "*.parquet"), "-o", str(tmp_path / "glob"), *flags]) == 0
    assert manifest(tmp_path / "glob")["rows"] == 9  # the glob skipped logs/scored/ too
    assert [p.name for p in streaming.source_files(logs)] == ["day1.parquet"]
    assert main(["eval", str(out), "-o", str(tmp_path / "again"), *flags]) == 3
    line = assert_one_error_line(capsys.readouterr().err)
    assert f"{str(out)!r} is a ragframe output folder" in line and "name its files" in line
    # named on their own, its parts are read
    assert len(streaming.source_files(str(out / "scores" / "*.parquet"))) == 1


def test_the_ray_engine_lists_files_as_the_local_engine_does(tmp_path):
    from ragframe.distributed.parquet import _paths

    (tmp_path / "logs" / "out" / "scores").mkdir(parents=True)
    make_log(3).write_parquet(tmp_path / "logs" / "a.parquet")
    make_log(3).write_parquet(tmp_path / "logs" / "out" / "scores" / "part-00000.parquet")
    (tmp_path / "logs" / "out" / "manifest.json").write_text('{"finished": {}}', encoding="utf-8")
    assert _paths(tmp_path / "logs") == [str(tmp_path / "logs" / "a.parquet")]
    # another program's manifest.json is not ragframe's: its folder is read
    (tmp_path / "logs" / "out" / "manifest.json").write_text('{"files": ["x"]}', encoding="utf-8")
    assert len(_paths(tmp_path / "logs")) == 2


# ----------------------------------------------------------------------------- 5. --overwrite and foreign files


@pytest.mark.parametrize("foreign", ["scores/notes.txt", "scores/my_extra.parquet", "rejects/keep-me.csv"])
def test_overwrite_refuses_a_file_ragframe_did_not_write_and_keeps_it(log_file, tmp_path, capsys, foreign):
    out = tmp_path / "out"
    flags = ["--metrics", "faithfulness", "--no-progress", "--batch-rows", "5"]
    assert main(["eval", str(log_file), "-o", str(out), *flags]) == 0
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    (out / foreign).parent.mkdir(exist_ok=True)
    (out / foreign).write_text("mine", encoding="utf-8")
    capsys.readouterr()
    assert main(["eval", str(log_file), "-o", str(out), *flags, "--overwrite"]) == 3
    line = assert_one_error_line(capsys.readouterr().err)
    assert f"{str(out / foreign)!r} is not a file ragframe wrote" in line and "--overwrite removes only" in line
    after = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert after == sorted([*before, foreign]) and (out / foreign).read_text(encoding="utf-8") == "mine"


def test_overwrite_removes_ragframe_files_only(log_file, tmp_path):
    out = tmp_path / "out"
    flags = ["--metrics", "faithfulness", "--no-progress", "--batch-rows", "5"]
    assert main(["eval", str(log_file), "-o", str(out), *flags]) == 0
    (out / "NOTES.md").write_text("my notes", encoding="utf-8")
    assert main(["eval", str(log_file), "-o", str(out), *flags[:-1], "6", "--overwrite"]) == 0
    assert (out / "NOTES.md").read_text(encoding="utf-8") == "my notes"
    assert sorted(p.name for p in (out / "scores").iterdir()) == ["part-00000.parquet", "part-00001.parquet"]


# issue 36 item 2: --overwrite deletes only what a ragframe manifest proves ragframe wrote
USER_FILES = {
    "summary": ["summary.parquet"],
    "another-programs-manifest": ["manifest.json"],
    "a-part-name": ["scores/part-00099.parquet"],
    "a-temporary-name": ["scores/.part-00000.parquet.123.tmp", ".manifest.json.7.tmp"],
    "a-ragframe-looking-folder": ["manifest.json", "summary.parquet", "scores/part-00000.parquet"],
}


def _user_folder(out: Path, names: list[str]) -> dict[str, bytes]:
    for name in names:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(b'{"files": ["scores/part-00000.parquet"]}' if name == "manifest.json" else b"mine")
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


@pytest.mark.parametrize("names", list(USER_FILES.values()), ids=list(USER_FILES))
def test_overwrite_refuses_a_folder_without_a_ragframe_manifest(names, log_file, tmp_path, capsys):
    out = tmp_path / "mine"
    before = _user_folder(out, names)
    argv = ["eval", str(log_file), "-o", str(out), "--metrics", "faithfulness", "--no-progress", "--overwrite"]
    assert main(argv) == 2  # a usage error: this folder is not a ragframe output folder
    line = assert_one_error_line(capsys.readouterr().err)
    assert f"{str(out)!r} holds files but no ragframe manifest" in line, line
    with pytest.raises(ResumeError, match=r"holds files but no ragframe manifest") as error:
        rf.evaluate_parquet(log_file, out, metrics=["faithfulness"], overwrite=True, progress=False)
    assert repr(str(out)) in str(error.value)
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_overwrite_deletes_only_the_parts_the_manifest_lists(log_file, tmp_path, capsys):
    out = tmp_path / "out"
    flags = ["--metrics", "faithfulness", "--no-progress", "--batch-rows", "5"]
    assert main(["eval", str(log_file), "-o", str(out), *flags]) == 0
    assert manifest(out)["batches"] == 3  # 12 rows in batches of 5: recorded before any part is written
    (out / "scores" / "part-00099.parquet").write_bytes(b"mine")  # a part name the manifest does not list
    assert main(["eval", str(log_file), "-o", str(out), *flags, "--overwrite"]) == 3
    assert "part-00099.parquet' is not a file ragframe wrote" in assert_one_error_line(capsys.readouterr().err)
    assert (out / "scores" / "part-00099.parquet").read_bytes() == b"mine"
    (out / "scores" / "part-00099.parquet").unlink()
    (out / "scores" / ".part-00001.parquet.4242.tmp").write_bytes(b"half")  # a killed writer's temporary: listed
    assert main(["eval", str(log_file), "-o", str(out), *flags, "--overwrite"]) == 0
    assert sorted(p.name for p in (out / "scores").iterdir()) == [f"part-0000{i}.parquet" for i in range(3)]


# issue 36 item 4: an option that does nothing without another is a usage error naming both
@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--metrics", "faithfulness", "--max-failure-rate", "0.1"], ("--max-failure-rate", "judge metric")),
        (["--metrics", "faithfulness", "--hybrid-band", "0.3", "0.7"], ("--hybrid-band", "--mode hybrid")),
        (["--metrics", "faithfulness", "--budget-seed", "3"], ("--budget-seed", "--budget")),
    ],
    ids=["max-failure-rate-without-a-judge", "hybrid-band-without-hybrid", "budget-seed-without-budget"],
)
def test_an_option_that_would_do_nothing_is_a_usage_error(flags, named, log_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["eval", str(log_file), "-o", str(out), "--no-progress", *flags]) == 2
    line = assert_one_error_line(capsys.readouterr().err)
    assert all(word in line for word in named), line
    assert not out.exists()  # refused before anything is written


def test_options_that_would_do_nothing_are_refused_by_the_library(log_file, tmp_path):
    with pytest.raises(InvalidParameterError, match=r"max_failure_rate=0\.1 .*no judge metric"):
        rf.evaluate_parquet(log_file, tmp_path / "o", metrics=["faithfulness"], max_failure_rate=0.1, progress=False)
    assert not (tmp_path / "o").exists()
    with pytest.raises(InvalidParameterError, match=r"hybrid_band= .*mode='hybrid'"):
        rf.Evaluator(["faithfulness"], hybrid_band=(0.3, 0.7))
    with pytest.raises(InvalidParameterError, match=r"hybrid_band= .*mode='hybrid'"):
        rf.Evaluator(["faithfulness"], mode="llm", judge=len, hybrid_band=(0.3, 0.7))
    with pytest.raises(InvalidParameterError, match=r"budget_seed= .*budget="):
        rf.Evaluator(["judge_faithfulness"], judge=len, budget_seed=3)
    with pytest.raises(InvalidParameterError, match=r"budget_summary: .*no judge columns"):
        rf.budget_summary(pl.DataFrame({"faithfulness": [0.5, 1.0]}))
    # each with its partner is fine
    rf.Evaluator(["faithfulness"], mode="hybrid", judge=len, hybrid_band=(0.3, 0.7))
    rf.Evaluator(["faithfulness"], metric_modes={"faithfulness": "hybrid"}, judge=len, hybrid_band=(0.3, 0.7))
    rf.Evaluator(["judge_faithfulness"], judge=len, budget=2, budget_seed=3)


# ----------------------------------------------------------------------------- 6. a checkout stays clean


def _readme_outputs() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = "\n".join(re.findall(r"```(?:bash|python)\n(.*?)```", text, flags=re.S))
    written = re.findall(r"(?:-o|--out)\s+([\w./-]+)", blocks)
    written += re.findall(r"savefig\(\"([^\"]+)\"\)", blocks)
    written += re.findall(r"rf\.report\([^,]+,\s*\"([^\"]+)\"", blocks)
    return sorted({w.rstrip("/") for w in written})


def test_readme_commands_write_only_ignored_paths_into_a_checkout():
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    outputs = _readme_outputs()
    assert {"demo", "scored", "broken", "report.html", "distributions.png"} <= set(outputs)
    for path in outputs:
        probe = f"{path}/x" if "." not in path else path  # a folder is ignored when a file in it is
        done = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", probe], capture_output=True)
        assert done.returncode == 0, f"README writes {path!r}, which .gitignore does not ignore"


# ----------------------------------------------------------------------------- 7. ray[client]


def test_the_ray_extra_installs_ray_client_and_a_ray_address_without_it_is_one_line(tmp_path, monkeypatch, capsys):
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    ray_specs = [spec for spec in extras["ray"] if spec.startswith("ray[")]
    assert ray_specs and "client" in ray_specs[0].split("[", 1)[1].split("]")[0].split(",")
    pytest.importorskip("ray")
    from ragframe.cli import eval as eval_command

    monkeypatch.setitem(sys.modules, "grpc", None)  # import grpc raises ImportError
    with pytest.raises(MissingDependencyError, match=r"ray\[client\]"):
        eval_command._require_ray_client("ray://head:10001")
    eval_command._require_ray_client("auto")  # a local or in-cluster address needs no client
    log = tmp_path / "log.parquet"
    make_log(2).write_parquet(log)
    code = main(["eval", str(log), "-o", str(tmp_path / "o"), "--engine", "ray", "--address", "ray://127.0.0.1:1"])
    assert code == 3
    line = assert_one_error_line(capsys.readouterr().err)
    assert "pip install 'ragframe[ray]'" in line and "grpcio" in line


# ----------------------------------------------------------------------------- 8. errors in the CLI's words


def test_no_resume_and_other_library_errors_speak_in_flags(log_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["eval", str(log_file), "-o", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["eval", str(log_file), "-o", str(out), "--no-progress", "--no-resume"]) == 3
    line = assert_one_error_line(capsys.readouterr().err)
    assert "--no-resume" in line and "--overwrite" in line and "resume=" not in line and "overwrite=" not in line
    assert main(["eval", str(log_file), "-o", str(out), "--no-progress", "--batch-rows", "7"]) == 3
    line = assert_one_error_line(capsys.readouterr().err)
    assert "pass --overwrite to replace it" in line and "=True" not in line
    # in Python, the same errors name the parameters
    with pytest.raises(ResumeError, match=r"resume=True continues it, overwrite=True replaces it"):
        rf.evaluate_parquet(log_file, out, progress=False, resume=False)


def _eval_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["eval"]


def _eval_spelling() -> dict:
    return flag_spelling(_eval_parser())


@pytest.mark.parametrize(
    ("message", "mentions", "spoken"),
    [
        ("pass {overwrite} to replace it", {"overwrite": "True"}, "pass --overwrite to replace it"),
        (
            "{resume} was given; {resume} continues it",
            {"resume": "False"},
            "--no-resume was given; --no-resume continues it",
        ),
        ("{resume} continues it", {"resume": "True"}, "a run without --no-resume continues it"),
        (
            "(or choose the columns to copy with {keep})",
            {"keep": "[...]"},
            "(or choose the columns to copy with --keep COL ...)",
        ),
        ("{metrics} found no metric", {"metrics": "'auto'"}, "--metrics auto found no metric"),
        ("above {max_failure_rate} (3 ok)", {"max_failure_rate": "0.1"}, "above --max-failure-rate 0.1 (3 ok)"),
        ("pass {mode}", {"mode": "'llm'"}, "pass --mode llm"),
        ("{hybrid_band} is empty", {"hybrid_band": "(0.2, 0.6)"}, "--hybrid-band 0.2 0.6 is empty"),
        ("{judge} is given but", {"judge": ""}, "--judge-model MODEL is given but"),
        ("{judge} alone", {"judge": None}, "--judge-model alone"),
        ("{batch_rows} must be an int", {"batch_rows": None}, "--batch-rows must be an int"),
        (
            "{batch_rows} in 'logs/batch_rows=5/a.parquet'",
            {"batch_rows": "5"},
            "--batch-rows 5 in 'logs/batch_rows=5/a.parquet'",
        ),
        ("the column relevance_level=2 is not a flag", {}, "the column relevance_level=2 is not a flag"),
        ("{no_such_flag} stays Python's", {"no_such_flag": "1"}, "no_such_flag=1 stays Python's"),
    ],
)
def test_library_parameters_are_spelled_as_eval_flags(message, mentions, spoken):
    # the command line spells the parameters an error lists (error.mentions), never by reading its text
    error = RagframeError(message, mentions=mentions)
    assert speak_in_flags(error, _eval_spelling()) == spoken


def test_every_flag_spelling_names_a_real_flag():
    spelling = _eval_spelling()
    parser_flags = {option for action in _eval_parser()._actions for option in action.option_strings}
    assert {"overwrite", "resume", "keep", "batch_rows", "max_failure_rate", "judge", "mode"} <= set(spelling)
    assert all(flag in parser_flags for _, flag, _ in spelling.values())
    assert spelling["judge"] == ("value", "--judge-model", "MODEL") and spelling["resume"][:2] == ("off", "--no-resume")


# ----------------------------------------------------------------------------- 9. judge outcomes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "status", "error"),
    [
        ("refused", "http_error", "connection error"),
        ("401", "http_error", "HTTP 401"),
        ("bad_score", "parse_error", "no 'Claim:' or 'Verdict:' line"),  # "Score: high" alone: no verdicts
        ("malformed", "http_error", None),
    ],
)
def test_a_judge_metric_without_an_ok_row_exits_3_naming_it_and_its_commonest_error(
    log_file, tmp_path, capsys, server, judge_config, monkeypatch, case, status, error
):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    url = "http://127.0.0.1:9/v1" if case == "refused" else server.base_url  # port 9: nothing listens
    if case != "refused":
        server.rules[""] = case  # every prompt
    out = tmp_path / "out"
    assert judged_eval(log_file, out, url, judge_config) == 3
    err = capsys.readouterr().err
    line = assert_one_error_line(err)
    assert line.startswith(
        f"ragframe: error: evaluate_parquet: the judge scored no row of 'faithfulness' (12 {status})"
    )
    assert "commonest error (12 rows)" in line and (error is None or error in line)
    assert f"judge 'faithfulness': 12 {status} (12 of 12 rows sent failed, 100.0%)" in err  # unreadable: said
    assert manifest(out)["statuses"] == {"faithfulness": {status: 12}}
    assert SECRET not in err and SECRET not in (out / "manifest.json").read_text(encoding="utf-8")


def test_max_failure_rate_fails_a_run_above_it_and_passes_one_below(log_file, tmp_path, capsys, server, judge_config):
    server.rules["Paris"] = "500"  # the rows whose prompt names Paris fail
    prompts_with_paris = (
        pl.read_parquet(log_file)
        .select(pl.concat_str(pl.col("answer"), pl.col("contexts").list.join(" ")).str.contains("Paris").sum())
        .item()
    )
    assert 0 < prompts_with_paris < 12
    rate = prompts_with_paris / 12
    assert judged_eval(log_file, tmp_path / "a", server.base_url, judge_config, "--max-failure-rate", "0.95") == 0
    err = capsys.readouterr().err
    assert f"judge 'faithfulness': {prompts_with_paris} http_error" in err and "Traceback" not in err
    assert manifest(tmp_path / "a")["statuses"] == {
        "faithfulness": {"http_error": prompts_with_paris, "ok": 12 - prompts_with_paris}
    }
    limit = f"{rate / 2:.3f}"
    assert judged_eval(log_file, tmp_path / "b", server.base_url, judge_config, "--max-failure-rate", limit) == 3
    line = assert_one_error_line(capsys.readouterr().err)
    assert f"{prompts_with_paris} of the 12 rows of 'faithfulness' sent to the judge failed ({rate:.1%})" in line
    assert f"above --max-failure-rate {float(limit):g}" in line
    # the same option in Python
    with pytest.raises(rf.RunFailedError, match=r"above max_failure_rate=") as caught:
        rf.evaluate_parquet(
            log_file,
            tmp_path / "py",
            metrics=["faithfulness"],
            mode="llm",
            cache=False,
            progress=False,
            judge={"model": "m", "base_url": server.base_url, "max_retries": 0},
            max_failure_rate=float(limit),
        )
    assert caught.value.result.statuses == {
        "faithfulness": {"http_error": prompts_with_paris, "ok": 12 - prompts_with_paris}
    }
    assert caught.value.result.failure_rates() == {"faithfulness": pytest.approx(rate)}
    with pytest.raises(InvalidParameterError, match="max_failure_rate"):
        rf.evaluate_parquet(log_file, tmp_path / "bad", metrics=["mrr"], max_failure_rate=1.5)


def test_a_resumed_run_counts_the_statuses_of_every_batch(log_file, tmp_path, monkeypatch):
    def judge(prompt: str) -> str:
        return "Score: high" if "Paris" in prompt else verdict_reply(prompt, 1)

    options = {"metrics": ["judge_faithfulness"], "judge": judge, "cache": False, "progress": False, "batch_rows": 3}
    fresh = rf.evaluate_parquet(log_file, tmp_path / "fresh", **options)
    assert sum(fresh.statuses["judge_faithfulness"].values()) == 12 and fresh.statuses["judge_faithfulness"]["ok"] > 0
    real_run, done = streaming.BatchJob.run, []

    def run_then_stop(self, batch):
        if len(done) == 2:
            raise KeyboardInterrupt
        done.append(batch.index)
        return real_run(self, batch)

    monkeypatch.setattr(streaming.BatchJob, "run", run_then_stop)
    with pytest.raises(KeyboardInterrupt):
        rf.evaluate_parquet(log_file, tmp_path / "killed", **options)
    monkeypatch.setattr(streaming.BatchJob, "run", real_run)
    resumed = rf.evaluate_parquet(log_file, tmp_path / "killed", **options)
    assert resumed.resumed == 2 and resumed.statuses == fresh.statuses and resumed.errors == fresh.errors
    assert manifest(tmp_path / "killed")["statuses"] == fresh.statuses


def test_rows_skipped_on_purpose_are_not_failures(tmp_path, capsys, server, judge_config):
    answers = ["Paris is in France. The moon is made of cheese.", "Paris is in France.", "Bananas are blue. Cats bark."]
    log = pl.DataFrame({"id": [0, 1, 2], "answer": answers, "contexts": [["Paris is in France."]] * 3})
    assert rf.score_faithfulness(log)["faithfulness"].to_list() == [0.5, 1.0, 0.0]  # one row in [0.3, 0.7]
    log.write_parquet(tmp_path / "log.parquet")
    common = [str(tmp_path / "log.parquet"), "--metrics", "faithfulness", "--judge-model", "m", "--keep", "id"]
    common += ["--judge-base-url", server.base_url, "--config", str(judge_config), "--max-failure-rate", "0"]
    # hybrid: the heuristic decides the rows outside the band; they are "skipped", and the run passes
    assert main(["eval", "-o", str(tmp_path / "h"), *common, "--mode", "hybrid", "--hybrid-band", "0.3", "0.7"]) == 0
    assert manifest(tmp_path / "h")["statuses"] == {"faithfulness": {"ok": 1, "skipped": 2}}
    assert len(server.log) == 1 and "Paris is in France. The moon is made of cheese." in server.log[0].prompt
    assert "judge 'faithfulness': 2 skipped, 1 ok (0 of 1 rows sent failed, 0.0%)" in capsys.readouterr().err
    # every row skipped (a band no heuristic score falls in): nothing failed, the run passes and says so
    assert main(["eval", "-o", str(tmp_path / "none"), *common, "--mode", "hybrid", "--hybrid-band", "0.6", "0.9"]) == 0
    assert "judge 'faithfulness': 3 skipped" in capsys.readouterr().err and len(server.log) == 1
    # null inputs are skipped by the judge metrics themselves: not failures either
    full = make_log(12, seed=3)
    nulls = full.with_columns(answer=pl.when(pl.int_range(pl.len()) < 4).then(None).otherwise(pl.col("answer")))
    nulls.write_parquet(tmp_path / "nulls.parquet")
    result = rf.evaluate_parquet(
        tmp_path / "nulls.parquet",
        tmp_path / "n",
        metrics=["judge_faithfulness"],
        judge=lambda p: verdict_reply(p, 1),
        cache=False,
        progress=False,
        max_failure_rate=0.0,
    )
    assert result.statuses == {"judge_faithfulness": {"ok": 8, "skipped": 4}}
    assert result.failure_rates() == {"judge_faithfulness": 0.0}


# ----------------------------------------------------------------------------- 10. the judge's flags


def test_judge_flags_reach_the_judge_and_help_documents_them(log_file, tmp_path, capsys, server, judge_config):
    assert judged_eval(log_file, tmp_path / "o", server.base_url, judge_config) == 0
    err = capsys.readouterr().err
    assert "judge 'faithfulness': 12 ok (0 of 12 rows sent failed, 0.0%)" in err
    assert server.log and all(r.body["model"] == "m" for r in server.log)
    options = manifest(tmp_path / "o")["options"]["evaluator"]
    assert options["mode"] == "llm"
    assert main(["eval", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for needle in [
        "--mode {heuristic,llm,hybrid}",
        "--judge-model MODEL",
        "--judge-base-url URL",
        "--hybrid-band LO HI",
        "--max-failure-rate R",
        "[judge] table",
        "OPENAI_API_KEY",
    ]:
        assert needle in text, needle


def test_a_judge_that_no_metric_uses_is_an_error(log_file, tmp_path, capsys):
    assert (
        main(["eval", str(log_file), "-o", str(tmp_path / "o"), "--metrics", "faithfulness", "--judge-model", "m"]) == 2
    )
    line = assert_one_error_line(capsys.readouterr().err)
    assert "--judge-model MODEL is given but no metric of this run uses it (--mode heuristic scores" in line
    assert not (tmp_path / "o").exists()
    frame = make_log(3)
    with pytest.raises(
        InvalidParameterError, match=r"judge= is given but no metric of this run uses it \(mode='heuristic'"
    ):
        rf.evaluate(frame, ["faithfulness"], judge=lambda p: "Score: 1")
    with pytest.raises(InvalidParameterError, match="no metric of this run uses it"):
        rf.Evaluator(["mrr"], judge="gpt-4o-mini", mode="llm")  # mrr has no judge counterpart


@pytest.mark.parametrize(
    ("config", "flags", "match"),
    [
        ("", ["--judge-base-url", "http://127.0.0.1:1/v1"], "--judge-base-url needs --judge-model"),
        ("", ["--mode", "llm"], "--mode llm needs a judge: --judge-model MODEL"),
        ('mode = "hybrid"\n', [], "--mode hybrid needs a judge"),
        ("", ["--hybrid-band", "0.7"], None),
        ("", ["--hybrid-band", "0.2", "1.5"], None),
        ("", ["--max-failure-rate", "-0.1"], None),
        ("", ["--mode", "judge"], None),
    ],
)
def test_judge_flag_usage_errors(log_file, tmp_path, capsys, config, flags, match):
    path = tmp_path / "c.toml"
    path.write_text(config, encoding="utf-8")
    code = main(["eval", str(log_file), "-o", str(tmp_path / "o"), "--config", str(path), *flags])
    assert code == 2
    err = capsys.readouterr().err
    assert match is None or match in err
    assert "sk-x" not in err


# ----------------------------------------------------------------------------- the ray engine


@pytest.mark.slow
@pytest.mark.ray
def test_the_ray_engine_has_the_same_outcomes(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    from ragframe.distributed.parquet import evaluate_parquet_ray

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    tests = str(Path(__file__).resolve().parent)
    path = os.pathsep.join([tests, str(ROOT), os.environ.get("PYTHONPATH", "")])
    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=1,
            object_store_memory=100_000_000,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0"}},
        )
    try:
        from ray.data import DataContext

        DataContext.get_current().enable_progress_bars = False
        make_log(0).write_parquet(tmp_path / "empty.parquet")
        with pytest.raises(rf.RunFailedError, match="the log has no rows"):
            evaluate_parquet_ray(tmp_path / "empty.parquet", tmp_path / "e", rf.Evaluator(["faithfulness"]))
        assert rf.read_scores(tmp_path / "e").height == 0 and manifest(tmp_path / "e")["rows"] == 0
        make_log(8, seed=2).write_parquet(tmp_path / "log.parquet")
        refused = rf.Evaluator(["judge_faithfulness"], judge=lambda p: "Score: high", cache=False)
        with pytest.raises(rf.RunFailedError, match="the judge scored no row of 'judge_faithfulness'") as caught:
            evaluate_parquet_ray(tmp_path / "log.parquet", tmp_path / "j", refused)
        statuses = caught.value.result.statuses
        assert statuses == manifest(tmp_path / "j")["statuses"] == {"judge_faithfulness": {"parse_error": 8}}
        (tmp_path / "j" / "scores" / "notes.txt").write_text("mine", encoding="utf-8")
        with pytest.raises(ResumeError, match=r"notes\.txt' is not a file ragframe wrote"):
            evaluate_parquet_ray(tmp_path / "log.parquet", tmp_path / "j", refused, overwrite=True)
        (tmp_path / "j" / "scores" / "notes.txt").unlink()
        good = rf.Evaluator(["judge_faithfulness"], judge=lambda p: verdict_reply(p, 1), cache=False)
        result = evaluate_parquet_ray(tmp_path / "log.parquet", tmp_path / "j", good, overwrite=True)
        assert result.statuses == {"judge_faithfulness": {"ok": 8}}
    finally:
        if started:
            ray.shutdown()
