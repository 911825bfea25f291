"""Issue 19 part 1, "Secrets never leave memory": for every way of passing an API key, a real judged
run against the fake server (child processes included, a gateway that echoes the key in its 200
replies and in a 401), then every artefact of the run is searched for the key: the output folders
(Parquet read back, not only their compressed bytes), the SQLite cache, the report, the logs, stdout
and stderr (the children's too), reprs, ``to_dict`` and pickles written to disk. The key must still
reach the server from the child processes. Then the pieces of the rule one by one: names, values,
``api_key_env``, resume, the cache identity, errors, loggers, pickles."""

from __future__ import annotations

import importlib
import json
import logging
import pickle
import pkgutil
import sqlite3
import string
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragframe as rf
from ragframe import redaction, secrets
from ragframe.cli.main import main
from ragframe.exceptions import InvalidParameterError, ResumeError, SchemaError

pytest.importorskip("httpx")
from judge_server import FakeJudgeServer

KEY = "sk-hostile-7Qx9Lm2Vb8Nc4Zt1Rw6Ys3Pd0Kf5Hj"
OTHER_KEY = "sk-hostile-other-4Jd8Wq1Xz7Cv3Bn6Mk9"
VARIABLE = "RAGFRAME_TEST_JUDGE_KEY"
METRIC = "judge_answer_relevance"
ROWS = 4


@pytest.fixture
def server(server):
    """The shared fake judge (conftest), made a gateway that echoes the Authorization header back."""
    server.rules["ECHO401"] = "401"  # a gateway that echoes the Authorization header in an error ...
    server.rules[""] = "echo"  # ... and in every 200 reply (the reason repeats it)
    return server


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv(VARIABLE, raising=False)
    # the keys registered here (hypothesis registers '00000000'...) are forgotten after each test: the
    # registry is process-wide, and a later test's numbers must not be scrubbed
    monkeypatch.setattr(redaction, "_known", set(redaction._known))
    monkeypatch.setattr(redaction, "_pattern", redaction._pattern)


def write_log(path: Path) -> Path:
    questions = [f"Question {i}: what is {i} + {i}?" for i in range(ROWS)]
    answers = [f"It is {2 * i}." if i != 1 else "ECHO401 this one" for i in range(ROWS)]
    pl.DataFrame({"id": list(range(ROWS)), "question": questions, "answer": answers}).write_parquet(path)
    return path


# --- the ways of passing the key ---------------------------------------------------------------
# each returns (judge option as an Evaluator gets it, TOML [judge] lines or None for the Python API)


def judge_options(server: FakeJudgeServer) -> dict:
    return {"model": "fake", "base_url": server.base_url, "max_retries": 3, "timeout": 10.0}


def way_toml_api_key(server, monkeypatch):
    return {**judge_options(server), "api_key": KEY}, f'api_key = "{KEY}"'


def way_toml_api_key_env(server, monkeypatch):
    monkeypatch.setenv(VARIABLE, KEY)
    return {**judge_options(server), "api_key_env": VARIABLE}, f'api_key_env = "{VARIABLE}"'


def way_python_api_key(server, monkeypatch):
    return {**judge_options(server), "api_key": KEY}, None


def way_python_api_key_env(server, monkeypatch):
    monkeypatch.setenv(VARIABLE, KEY)
    return {**judge_options(server), "api_key_env": VARIABLE}, None


def way_openai_judge(server, monkeypatch):
    return rf.OpenAIJudge(api_key=KEY, **judge_options(server)), None


def way_openai_api_key_variable(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return judge_options(server), None


WAYS = {
    "toml-api_key": way_toml_api_key,
    "toml-api_key_env": way_toml_api_key_env,
    "python-dict-api_key": way_python_api_key,
    "python-dict-api_key_env": way_python_api_key_env,
    "rf.OpenAIJudge-api_key": way_openai_judge,
    "OPENAI_API_KEY": way_openai_api_key_variable,
}


def run(judge, toml: str | None, log: Path, out: Path, cache: Path, per_process: int | None, tmp_path: Path) -> int:
    """One judged run into ``out``: ``ragframe eval --config`` for a TOML way, else rf.evaluate_parquet."""
    if toml is None:
        ev = rf.Evaluator([METRIC], judge=judge, cache=cache)
        rf.evaluate_parquet(
            log, out, evaluator=ev, batch_rows=2, batches_per_process=per_process, progress=False, keep=["id"]
        )
        return 0
    config = tmp_path / "config" / "eval.toml"  # holds the key when the user wrote it there: not searched
    config.parent.mkdir(exist_ok=True)
    lines = [f'model = "{judge["model"]}"', f'base_url = "{judge["base_url"]}"', "max_retries = 3", "timeout = 10.0"]
    config.write_text(
        f'metrics = ["{METRIC}"]\ncache = "{cache}"\nkeep = ["id"]\n[judge]\n' + "\n".join([*lines, toml]) + "\n",
        encoding="utf-8",
    )
    children = ["--batches-per-process", str(per_process or 100)]
    argv = ["eval", str(log), "-o", str(out), "--config", str(config), "--no-progress", "--batch-rows", "2"]
    return main([*argv, *children])


def file_artefacts(folder: Path) -> list[tuple[str, bytes | str]]:
    """Every file's bytes; a Parquet file also as its rows (its pages may be compressed); SQLite also as rows."""
    found: list[tuple[str, bytes | str]] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        found.append((str(path), path.read_bytes()))
        if path.suffix == ".parquet":
            found.append((f"{path} rows", pl.read_parquet(path).write_json()))
        if path.suffix == ".sqlite3":
            with sqlite3.connect(path) as connection:
                found.append((f"{path} rows", repr(connection.execute("SELECT * FROM replies").fetchall())))
    return found


def fresh_process_report(out: Path, report: Path, monkeypatch) -> None:
    """``ragframe report OUT`` as a fresh process runs it: knowing no key (nothing to scrub by value)."""
    with monkeypatch.context() as patch:
        patch.setattr(redaction, "_known", set())
        patch.setattr(redaction, "_pattern", None)
        assert main(["report", str(out), "-o", str(report)]) == 0


def assert_nowhere(artefacts: list[tuple[str, bytes | str]]) -> None:
    assert artefacts
    for name, artefact in artefacts:
        needle = KEY.encode() if isinstance(artefact, bytes) else KEY
        assert needle not in artefact, f"the key is in {name}"


@pytest.mark.slow
@pytest.mark.parametrize("way", list(WAYS))
def test_no_artefact_of_a_run_holds_the_key(way, server, tmp_path, monkeypatch, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    judge, toml = WAYS[way](server, monkeypatch)
    log = write_log(tmp_path / "log.parquet")
    searched = tmp_path / "searched"
    # 2 batches, 1 per child: every request comes from a child process; then the same in this process
    assert run(judge, toml, log, searched / "children", searched / "children.sqlite3", 1, tmp_path) == 0
    assert run(judge, toml, log, searched / "here", searched / "here.sqlite3", None, tmp_path) == 0
    fresh_process_report(searched / "children", searched / "report.html", monkeypatch)
    assert "evaluator judge" in (searched / "report.html").read_text(encoding="utf-8")  # the provenance row

    # the key reached the server, from the children too, and the gateway echoed it back
    assert len(server.log) == 2 * ROWS
    assert {r.headers.get("Authorization") for r in server.log} == {f"Bearer {KEY}"}
    assert sorted(r.fault for r in server.log) == ["401"] * 2 + ["echo"] * (2 * ROWS - 2)  # set before each reply
    for folder in ("children", "here"):
        scores = pl.read_parquet(searched / folder / "scores").sort("id")
        assert scores[f"{METRIC}_status"].to_list() == ["ok", "http_error", "ok", "ok"]
        assert all("Authorization: Bearer ***;" in r for r in scores[f"{METRIC}_reason"].drop_nulls())  # masked
        assert "Incorrect API key provided: Bearer ***" in scores[f"{METRIC}_error"][1]
        manifest = json.loads((searched / folder / "manifest.json").read_text(encoding="utf-8"))
        shown = manifest["options"]["evaluator"]["judge"]
        assert shown.get("api_key", "***") == "***" and shown["model"] == "fake"

    # the objects of the run, as a user would print, serialise and pickle them
    ev = rf.Evaluator([METRIC], judge=judge, cache=searched / "here.sqlite3")
    objects = [ev, ev.to_dict(), ev.option("judge")]  # (a judge dict is the caller's own input: not searched)
    objects += [judge] if isinstance(judge, rf.OpenAIJudge) else []
    (searched / "evaluator.pkl").write_bytes(pickle.dumps(ev))
    if isinstance(judge, rf.OpenAIJudge):
        (searched / "judge.pkl").write_bytes(pickle.dumps(judge))
    captured = capfd.readouterr()
    artefacts = [
        *file_artefacts(searched),
        *[(f"repr {type(o).__name__}", repr(o)) for o in objects],
        *[(f"str {type(o).__name__}", str(o)) for o in objects],
        ("to_dict json", json.dumps(ev.to_dict(), default=str)),
        ("vars(ev)", repr(vars(ev)) if hasattr(ev, "__dict__") else repr(ev.options)),
        ("caplog", caplog.text),
        ("log records", "\n".join(str(record.__dict__) for record in caplog.records)),
        ("stdout", captured.out),
        ("stderr", captured.err),
    ]
    assert caplog.records and "judge calls failed" in caplog.text  # this process logged the 401 row
    assert "judge calls failed" in captured.err  # ... and so did the children, on stderr
    assert_nowhere(artefacts)


# --- the key reaches the children, however it was passed ------------------------------------------
@pytest.mark.slow
def test_the_child_processes_get_a_key_given_as_a_value(server, tmp_path, monkeypatch):
    server.rules.clear()
    judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key=KEY, max_retries=3)
    log = write_log(tmp_path / "log.parquet")
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_KEY)  # what an unpickled judge would fall back to
    rf.evaluate_parquet(
        log, tmp_path / "out", metrics=[METRIC], judge=judge, cache=False, batch_rows=1, batches_per_process=2,
        progress=False,
    )  # fmt: skip
    assert [r.headers.get("Authorization") for r in server.log] == [f"Bearer {KEY}"] * ROWS


# --- resume and the cache: the key is not the run's identity --------------------------------------
def test_resume_with_a_redacted_manifest_and_the_key_passed_another_way(server, tmp_path, monkeypatch, capsys):
    server.rules.clear()
    log = write_log(tmp_path / "log.parquet")
    out, cache = tmp_path / "out", tmp_path / "cache.sqlite3"

    def again(judge) -> int:
        ev = rf.Evaluator([METRIC], judge=judge, cache=cache)
        return rf.evaluate_parquet(log, out, evaluator=ev, batch_rows=2, progress=False).resumed

    assert again({**judge_options(server), "api_key": KEY}) == 0
    requests = len(server.log)
    assert again({**judge_options(server), "api_key": KEY}) == 2  # the same key: resumed
    assert again({**judge_options(server), "api_key": OTHER_KEY}) == 2  # another key: the same run
    assert again(way_python_api_key_env(server, monkeypatch)[0]) == 2  # the key from a variable now
    assert run(*way_toml_api_key_env(server, monkeypatch), log, out, cache, None, tmp_path) == 0  # and the CLI
    assert "2 of 2 batches done by an earlier run" in capsys.readouterr().out
    assert len(server.log) == requests
    with pytest.raises(ResumeError, match="different options"):
        again({**judge_options(server), "model": "another", "api_key": KEY})


@pytest.mark.slow
def test_resuming_an_older_manifest_that_holds_the_key_rewrites_it(server, tmp_path, monkeypatch):
    server.rules.clear()
    log = write_log(tmp_path / "log.parquet")
    out, cache = tmp_path / "out", tmp_path / "cache.sqlite3"
    judge, _ = way_python_api_key(server, monkeypatch)
    run(judge, None, log, out, cache, None, tmp_path)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    manifest["options"]["evaluator"]["judge"]["api_key"] = KEY  # as a version before this rule wrote it
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    report = tmp_path / "report.html"
    fresh_process_report(out, report, monkeypatch)
    assert KEY not in report.read_text(encoding="utf-8")  # the report redacts it by name
    ev = rf.Evaluator([METRIC], judge=judge, cache=cache)
    result = rf.evaluate_parquet(log, out, evaluator=ev, batch_rows=2, progress=False)
    assert result.resumed == 2 and KEY not in (out / "manifest.json").read_text(encoding="utf-8")


def test_the_key_is_not_part_of_the_cache_identity(server, tmp_path):
    server.rules.clear()
    log = write_log(tmp_path / "log.parquet")
    cache = tmp_path / "cache.sqlite3"
    for number, key in enumerate((KEY, OTHER_KEY)):
        judge = {**judge_options(server), "api_key": key}
        rf.evaluate_parquet(log, tmp_path / f"out{number}", metrics=[METRIC], judge=judge, cache=cache, progress=False)
    assert len(server.log) == ROWS  # the second key's run was answered by the cache


# --- api_key_env --------------------------------------------------------------------------------
def test_api_key_env_unset_is_a_clear_error_naming_the_variable(server, tmp_path, capsys):
    message = f"api_key_env names the environment variable '{VARIABLE}', which is not set"
    with pytest.raises(InvalidParameterError, match=message):
        rf.OpenAIJudge("fake", base_url=server.base_url, api_key_env=VARIABLE)
    with pytest.raises(InvalidParameterError, match=message):
        rf.Evaluator([METRIC], judge={"model": "fake", "api_key_env": VARIABLE})
    log = write_log(tmp_path / "log.parquet")
    toml = f'api_key_env = "{VARIABLE}"'
    assert run(judge_options(server), toml, log, tmp_path / "out", tmp_path / "c.sqlite3", None, tmp_path) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"api_key": KEY, "api_key_env": VARIABLE}, "pass api_key or api_key_env, not both"),
        ({"api_key_env": ""}, "api_key_env must be the name of an environment variable"),
        ({"api_key_env": 5}, "api_key_env must be the name of an environment variable .*found a int"),
        ({"api_key": "***"}, "api_key is '\\*\\*\\*', the form ragframe writes in place of a key"),
        ({"auth_token": KEY}, "'auth_token' looks like a credential"),
        ({"api_key": 5}, "api_key must be a str, found a int"),
    ],
    ids=["both", "empty-name", "not-a-name", "redacted-key", "key-in-the-body", "not-a-str"],
)
def test_bad_key_options_are_refused_without_showing_the_key(options, message, monkeypatch):
    monkeypatch.setenv(VARIABLE, KEY)
    with pytest.raises(InvalidParameterError, match=message) as error:
        rf.OpenAIJudge("fake", base_url="http://127.0.0.1:9/v1", **options)
    assert KEY not in str(error.value)


def test_api_key_env_round_trips_and_a_literal_key_does_not(monkeypatch):
    monkeypatch.setenv(VARIABLE, KEY)
    by_name = rf.Evaluator([METRIC], judge={"model": "fake", "api_key_env": VARIABLE})
    assert rf.Evaluator.from_dict(by_name.to_dict()) == by_name
    assert by_name.to_dict()["judge"] == {"model": "fake", "api_key_env": VARIABLE}
    assert repr(rf.OpenAIJudge("fake", api_key_env=VARIABLE)).count(f"api_key_env='{VARIABLE}'") == 1
    literal = rf.Evaluator([METRIC], judge={"model": "fake", "api_key": KEY})
    assert literal.to_dict()["judge"] == {"model": "fake", "api_key": "***"}  # plain data: the str '***'
    with pytest.raises(InvalidParameterError, match=r"judge\['api_key'\] is '\*\*\*'"):
        rf.Evaluator.from_dict(literal.to_dict())
    again = rf.Evaluator([METRIC], judge={"model": "fake", "api_key": KEY}, prefix="v2_")
    assert literal.replace(prefix="v2_") == again  # replace() keeps the key (in memory)


def test_a_manifest_redacts_a_judge_identity_that_names_a_key(tmp_path):
    class Judge:  # a user's judge whose identity (wrongly) includes its key
        max_concurrency = 1

        def identity(self):
            return {"model": "mine", "api_key": KEY, "headers": {"Authorization": f"Bearer {KEY}"}}

        async def complete(self, prompt, sample):
            return "Score: 1"

    log = write_log(tmp_path / "log.parquet")
    rf.evaluate_parquet(log, tmp_path / "out", metrics=[METRIC], judge=Judge(), cache=False, progress=False)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    shown = manifest["options"]["evaluator"]["judge"]
    assert shown == {"model": "mine", "api_key": "***", "headers": {"Authorization": "***"}}


# --- pickles ------------------------------------------------------------------------------------
def test_pickles_never_hold_a_key_and_a_copy_reads_its_key_from_the_environment(server, monkeypatch):
    server.rules.clear()
    literal = rf.Evaluator([METRIC], judge={**judge_options(server), "api_key": KEY}, cache=False)
    blob = pickle.dumps(literal)
    assert KEY.encode() not in blob
    monkeypatch.setenv("OPENAI_API_KEY", OTHER_KEY)  # a copy elsewhere (a Ray worker) reads the environment
    pickle.loads(blob).evaluate(pl.DataFrame({"question": ["q?"], "answer": ["a."]}))
    assert server.log[-1].headers["Authorization"] == f"Bearer {OTHER_KEY}"
    monkeypatch.setenv(VARIABLE, KEY)
    by_name = rf.Evaluator([METRIC], judge={**judge_options(server), "api_key_env": VARIABLE}, cache=False)
    copy = pickle.loads(pickle.dumps(by_name))
    assert copy == by_name
    copy.evaluate(pl.DataFrame({"question": ["q?"], "answer": ["b."]}))
    assert server.log[-1].headers["Authorization"] == f"Bearer {KEY}"
    judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key_env=VARIABLE)
    assert KEY.encode() not in pickle.dumps(judge) and pickle.loads(pickle.dumps(judge))._api_key.reveal() == KEY
    monkeypatch.delenv(VARIABLE)
    with pytest.raises(InvalidParameterError, match=VARIABLE):  # a copy where the variable is unset: loud
        pickle.loads(pickle.dumps(judge))


def test_copies_in_memory_keep_the_key():
    import copy

    ev = rf.Evaluator([METRIC], judge={"model": "fake", "api_key": KEY})
    assert copy.copy(ev) == ev and copy.deepcopy(ev) == ev and copy.deepcopy([ev])[0] == ev
    assert copy.deepcopy(secrets.Secret(KEY)).reveal() == KEY


def test_a_secret_pickles_only_inside_carrying():
    key = secrets.Secret(KEY)
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps({"nested": [key]})
    with secrets.carrying():
        assert pickle.loads(pickle.dumps(key)).reveal() == KEY
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(key)
    assert (repr(key), str(key), f"{key}", f"{key:>5}") == ("'***'", "***", "***", "  ***")


# --- names and values -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("API-Key", True),
        ("apikey", True),
        ("x_api_key", True),
        ("Authorization", True),
        ("auth", True),
        ("access_token", True),
        ("token", True),
        ("password", True),
        ("client_secret", True),
        ("credentials", True),
        ("api_key_env", False),
        ("max_tokens", False),
        ("tokens_per_minute", False),
        ("max_completion_tokens", False),
        ("prompt_cache_key", False),
        ("model", False),
        ("oauth_scope", False),
    ],
)
def test_which_names_hold_secrets(name, secret):
    assert secrets.is_secret_name(name) is secret


def test_nested_options_are_redacted_by_name_and_urls_by_password():
    options = {"judge": {"model": "m", "headers": {"Authorization": f"Bearer {KEY}"}, "list": [{"token": KEY}]}}
    assert secrets.redact(options) == {
        "judge": {"model": "m", "headers": {"Authorization": "***"}, "list": [{"token": "***"}]}
    }
    ev = rf.Evaluator([METRIC], judge={"model": "m", "base_url": f"http://me:{KEY}@127.0.0.1:9/v1"})
    assert ev.to_dict()["judge"]["base_url"] == "http://me:***@127.0.0.1:9/v1"
    assert KEY not in repr(rf.OpenAIJudge("m", base_url=f"http://me:{KEY}@127.0.0.1:9/v1"))


def test_the_client_masks_an_echo_in_a_200_reply_before_returning_it(server):
    import asyncio

    judge = rf.OpenAIJudge("fake", base_url=server.base_url, api_key=KEY, max_retries=0)

    async def call():
        async with judge.session():
            return await judge.complete("Is it?", 0)

    reply = asyncio.run(call())
    assert server.log[0].fault == "echo"  # (its status is set after the reply is sent: not read here)
    assert reply.text.startswith("Reason: the gateway saw Authorization: Bearer ***; ") and KEY not in reply.text


def test_the_cache_stores_no_known_key(tmp_path):
    from ragframe.judges.base import JudgeReply
    from ragframe.judges.cache import JudgeCache

    secrets.register(KEY)
    cache = JudgeCache(tmp_path / "c.sqlite3")
    cache.put("k", JudgeReply(f"Score: 1 {KEY}"))
    assert cache.get("k").text == "Score: 1 ***"
    cache.close()
    assert KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())


def test_a_callable_judge_that_echoes_a_known_key_is_masked_before_the_cache(tmp_path):
    secrets.register(KEY)
    out = rf.judges.judge_prompts(lambda p: f"Score: 1\nReason: {KEY}", ["p"], metric="m", cache=tmp_path / "c.sqlite3")
    assert out["text"].to_list() == ["Score: 1\nReason: ***"]
    assert KEY.encode() not in b"".join(p.read_bytes() for p in tmp_path.iterdir())

    def failing(prompt: str) -> str:
        raise RuntimeError(f"gateway said {KEY}")

    failed = rf.judges.judge_prompts(failing, ["p"], metric="m", cache=False)
    assert failed["error"].to_list() == ["RuntimeError: gateway said ***"]


def test_errors_and_log_records_are_scrubbed(caplog):
    caplog.set_level(logging.DEBUG)
    secrets.register(KEY)
    for error in (InvalidParameterError(f"bad {KEY}"), SchemaError(f"bad {KEY}", column="c", found=KEY)):
        assert KEY not in str(error) and KEY not in repr(error) and KEY.encode() not in pickle.dumps(error)
    for name in secrets.LOGGERS:
        logging.getLogger(name).debug("key %s", KEY)
    try:
        raise ValueError(KEY)
    except ValueError:
        logging.getLogger("ragframe.judges").exception("failed")
    assert len(caplog.records) == len(secrets.LOGGERS) + 1
    assert KEY not in caplog.text and caplog.text.count("***") == len(secrets.LOGGERS) + 1


def test_every_ragframe_logger_has_the_filter():
    for module in pkgutil.walk_packages(rf.__path__, "ragframe."):
        if module.name.endswith("__main__"):  # runs the command line
            continue
        try:
            importlib.import_module(module.name)
        except ImportError:  # an optional extra that is not installed
            continue
    loggers = [
        (name, logger)
        for name, logger in logging.root.manager.loggerDict.items()
        if (name == "ragframe" or name.startswith("ragframe.")) and isinstance(logger, logging.Logger)
    ]
    assert {name for name, _ in loggers} >= {"ragframe.judges", "ragframe.judge", "ragframe.retrieve"}
    for name, logger in loggers:
        assert any(isinstance(f, secrets.ScrubFilter) for f in logger.filters), f"{name} has no ScrubFilter"


def test_the_command_line_scrubs_an_internal_error_and_its_traceback(capsys):
    import argparse

    from ragframe.cli.main import _run

    secrets.register(KEY)

    def broken(args):
        raise RuntimeError(f"something echoed {KEY}")

    assert _run(argparse.Namespace(handler=broken, command="summary")) == 3
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: something echoed ***" in err and "Traceback" in err and KEY not in err


_KEY_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=secrets.MIN_SCRUB_LENGTH)


@settings(max_examples=60, deadline=None)
@given(key=_KEY_TEXT, before=st.text(max_size=20), after=st.text(max_size=20), repeat=st.integers(1, 3))
def test_scrub_leaves_no_registered_key(key, before, after, repeat):
    secrets.register(key)
    text = (before + key + after) * repeat
    assert key not in secrets.scrub(text)
    assert key not in json.dumps(secrets.redact({"any": [text], "api_key": key}))


def test_short_keys_are_redacted_by_name_but_not_scrubbed_from_text():
    short = "sk-abc"
    assert secrets.redact({"api_key": short}) == {"api_key": "***"}
    secrets.register(short)
    assert secrets.scrub(f"a {short}") == f"a {short}"  # documented: shorter than MIN_SCRUB_LENGTH
    assert secrets.scrub(f"a {short}", short) == "a ***"  # a judge's own key, whatever its length


# --- issue 36: a key in the base URL (query string, userinfo), a key with surrounding whitespace -------
URLS = {
    "query-api-key": ("{base}?api-key={key}", "/v1/chat/completions?api-key={key}"),
    "azure-api-version": (  # a trailing slash before the query string too
        "{base}/?api-version=2024-06-01&api-key={key}", "/v1/chat/completions?api-version=2024-06-01&api-key={key}"),
    "query-sig": ("{base}?sv=2024&sig={key}", "/v1/chat/completions?sv=2024&sig={key}"),
    "userinfo": ("http://me:{key}@{host}/v1", "/v1/chat/completions"),
}  # fmt: skip


def searched_run(judge, toml, server, tmp_path, monkeypatch) -> list[tuple[str, bytes | str]]:
    """A judged run (children, then this process) and a fresh process's report: every file they wrote."""
    log = write_log(tmp_path / "log.parquet")
    searched = tmp_path / "searched"
    assert run(judge, toml, log, searched / "children", searched / "children.sqlite3", 1, tmp_path) == 0
    assert run(judge, toml, log, searched / "here", searched / "here.sqlite3", None, tmp_path) == 0
    fresh_process_report(searched / "children", searched / "report.html", monkeypatch)
    for folder in ("children", "here"):
        scores = pl.read_parquet(searched / folder / "scores").sort("id")
        assert scores[f"{METRIC}_status"].to_list() == ["ok", "http_error", "ok", "ok"]
    return file_artefacts(searched)


@pytest.mark.slow
@pytest.mark.parametrize("via", ["toml", "python"])
@pytest.mark.parametrize("url", list(URLS))
def test_a_key_in_the_base_url_reaches_the_server_and_no_artefact(
    url, via, server, tmp_path, monkeypatch, caplog, capfd
):
    caplog.set_level(logging.DEBUG)
    base = server.base_url
    given, path = (u.format(base=base, key=KEY, host=base.split("//")[1].split("/")[0]) for u in URLS[url])
    judge = {**judge_options(server), "base_url": given}
    artefacts = searched_run(judge, "" if via == "toml" else None, server, tmp_path, monkeypatch)
    assert {r.path for r in server.log} == {path}  # joined before the query string
    ev = rf.Evaluator([METRIC], judge=judge)
    captured = capfd.readouterr()
    artefacts += [
        ("repr", repr(ev)),
        ("to_dict", json.dumps(ev.to_dict())),
        ("judge repr", repr(rf.OpenAIJudge("fake", base_url=given))),
        ("evaluator pickle", pickle.dumps(ev)),
        ("judge pickle", pickle.dumps(rf.OpenAIJudge("fake", base_url=given))),
        ("caplog", caplog.text),
        ("stdout", captured.out),
        ("stderr", captured.err),
    ]
    assert "judge calls failed" in captured.err
    assert_nowhere(artefacts)
    assert "***" in ev.to_dict()["judge"]["base_url"]


@pytest.mark.slow
@pytest.mark.parametrize("padding", ["{key}\n", " \t{key} ", "{key}\r\n"], ids=["newline", "spaces", "crlf"])
@pytest.mark.parametrize("way", ["toml-api_key_env", "python-dict-api_key", "rf.OpenAIJudge-api_key", "OPENAI_API_KEY"])
def test_a_key_with_surrounding_whitespace_is_stripped_when_read(way, padding, server, tmp_path, monkeypatch, capfd):
    padded = padding.format(key=KEY)
    if way in ("toml-api_key_env", "OPENAI_API_KEY"):
        monkeypatch.setenv(VARIABLE if way != "OPENAI_API_KEY" else "OPENAI_API_KEY", padded)
        judge = {**judge_options(server), "api_key_env": VARIABLE} if way != "OPENAI_API_KEY" else judge_options(server)
        toml = f'api_key_env = "{VARIABLE}"' if way == "toml-api_key_env" else None
    elif way == "python-dict-api_key":
        judge, toml = {**judge_options(server), "api_key": padded}, None
    else:
        judge, toml = rf.OpenAIJudge(api_key=padded, **judge_options(server)), None
    artefacts = searched_run(judge, toml, server, tmp_path, monkeypatch)
    assert {r.headers.get("Authorization") for r in server.log} == {f"Bearer {KEY}"}
    captured = capfd.readouterr()
    assert_nowhere([*artefacts, ("stdout", captured.out), ("stderr", captured.err)])


def test_scrub_masks_secret_query_parameters_and_userinfo():
    value = "tok-0123456789abcdef"
    url = f"POST https://gw.example/v1/chat/completions?api-version=2024-06-01&api-key={value}&x=1 failed"
    assert secrets.scrub(url) == (
        "POST https://gw.example/v1/chat/completions?api-version=2024-06-01&api-key=***&x=1 failed"
    )
    for name in ("key", "token", "sig", "signature", "access_token", "subscription-key", "code", "apikey", "API_KEY"):
        assert secrets.scrub(f"https://h/v1?{name}={value}#top") == f"https://h/v1?{name}=***#top", name
    assert secrets.scrub(f"https://{value}@h/v1") == "https://***@h/v1"  # a token as the user name
    assert (
        secrets.scrub("https://h/v1?api-version=2024-06-01&max_tokens=5")
        == "https://h/v1?api-version=2024-06-01&max_tokens=5"
    )
    # the URL's secrets are registered when the options come in: scrubbed from any text afterwards
    secrets.protect({"judge": {"base_url": f"https://h/v1?sig={value}"}}, "Evaluator")
    assert secrets.scrub(f"the gateway said {value}") == "the gateway said ***"


def test_a_secret_is_stripped_and_both_forms_are_scrubbed():
    key = secrets.Secret(f" {KEY}\n")
    assert key.reveal() == KEY and key == secrets.Secret(KEY)
    assert secrets.scrub(f"Illegal header value b'Bearer {KEY}\\n'") == "Illegal header value b'Bearer ***\\n'"
