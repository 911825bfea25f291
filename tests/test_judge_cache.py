"""The SQLite judge cache: keys, WAL mode, default location, first write wins, two processes writing at once."""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from ragframe.exceptions import InputFileError, InvalidParameterError
from ragframe.judges import CachedReply, JudgeCache, JudgeReply, cache_key, default_cache_path
from ragframe.judges.cache import resolve_cache

ROOT = Path(__file__).resolve().parent.parent


def test_put_get_roundtrip_and_first_write_wins(tmp_path):
    cache = JudgeCache(tmp_path / "sub" / "judge.sqlite3")  # the folder is created
    key = cache_key({"model": "m"}, "prompt", 0)
    assert cache.get(key) is None and len(cache) == 0
    cache.put(key, JudgeReply("Score: 1", input_tokens=3, output_tokens=2))
    cache.put(key, JudgeReply("Score: 0", input_tokens=9, output_tokens=9))  # ignored: the first reply stays
    cache.put(cache_key({"model": "m"}, "other", 0), JudgeReply("Score: 0.5"))
    assert cache.get(key) == CachedReply("Score: 1", 3, 2)
    assert cache.get_many([key, "missing"]) == {key: CachedReply("Score: 1", 3, 2)}
    assert len(cache) == 2
    cache.close()
    assert JudgeCache(tmp_path / "sub" / "judge.sqlite3").get(key).text == "Score: 1"  # persisted
    cache.clear()
    assert len(cache) == 0


def test_many_keys_are_looked_up_in_chunks(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    keys = [cache_key({"m": 1}, f"p{i}", 0) for i in range(1_200)]
    for key in keys[::2]:
        cache.put(key, JudgeReply("t"))
    assert set(cache.get_many(keys)) == set(keys[::2])


def test_wal_mode_and_busy_timeout(tmp_path):
    path = tmp_path / "c.sqlite3"
    cache = JudgeCache(path)
    cache.put("k", JudgeReply("t"))
    other = sqlite3.connect(path)
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other.close()
    assert cache._connect().execute("PRAGMA busy_timeout").fetchone()[0] == 60_000


def test_cache_key():
    identity = {"model": "m", "temperature": 0.0, "extra_body": {"max_tokens": 5}}
    key = cache_key(identity, "Is it faithful?", 0)
    assert len(key) == 64 and int(key, 16) >= 0
    assert key == cache_key(dict(reversed(list(identity.items()))), "Is it faithful?", 0)  # order-free
    assert key != cache_key(identity, "Is it faithful?", 1)
    assert key != cache_key(identity, "Is it faithful? ", 0)
    assert key != cache_key({**identity, "temperature": 0.7}, "Is it faithful?", 0)
    # what is hashed: the canonical JSON of judge, prompt and sample (written out independently here)
    blob = '{"judge":{"extra_body":{"max_tokens":5},"model":"m","temperature":0.0},'
    blob += '"prompt":"Is it faithful?","sample":0}'
    assert key == hashlib.sha256(blob.encode()).hexdigest()


def test_cache_key_refuses_what_cannot_be_hashed_stably():
    with pytest.raises(InvalidParameterError, match="JSON-serialisable"):
        cache_key({"model": object()}, "p", 0)
    with pytest.raises(InvalidParameterError, match="JSON-serialisable"):
        cache_key({"temperature": float("nan")}, "p", 0)


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "ragframe" / "judge.sqlite3"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_path() == tmp_path / "home" / ".cache" / "ragframe" / "judge.sqlite3"


def test_resolve_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache, owned = resolve_cache(True)
    assert cache.path == tmp_path / "ragframe" / "judge.sqlite3" and owned
    assert resolve_cache(False) == (None, False)
    assert resolve_cache(None) == (None, False)
    assert resolve_cache(str(tmp_path / "x.db"))[0].path == tmp_path / "x.db"
    mine = JudgeCache(tmp_path / "y.db")
    assert resolve_cache(mine) == (mine, False)  # the caller's cache is not closed by the run
    for bad in (3, "", 1.5):
        with pytest.raises(InvalidParameterError, match=r"^cache must be True"):
            resolve_cache(bad)


def test_pickle_reopens(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    cache.put("k", JudgeReply("t"))
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.get("k").text == "t" and repr(copy) == f"JudgeCache({str(tmp_path / 'c.sqlite3')!r})"


def test_damaged_file_is_an_input_file_error(tmp_path):
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"this is not a database file, not at all" * 100)
    with pytest.raises(InputFileError, match="cannot be opened"):
        JudgeCache(path).get("k")


_WRITER = """
import sys
import tempfile
from ragframe.judges import JudgeCache, JudgeReply
cache = JudgeCache(sys.argv[1])
name = sys.argv[2]
print("ready", flush=True)
sys.stdin.readline()  # both writers start together
for i in range(300):
    if i == 150:  # half-way: wait until the other writer is half-way too, so the writes overlap however slow
        print("half", flush=True)
        sys.stdin.readline()
    cache.put(f"{name}-{i}", JudgeReply(f"{name} {i}", input_tokens=i, output_tokens=1))
    cache.put(f"shared-{i % 50}", JudgeReply(f"shared by {name}"))
    if i % 50 == 0:
        cache.get_many([f"shared-{j}" for j in range(50)])
print(len(cache))
"""


@pytest.mark.slow
def test_two_processes_write_one_file_at_once(tmp_path):
    path = tmp_path / "shared.sqlite3"
    JudgeCache(path).put("seed", JudgeReply("t"))
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_WRITER), str(path), name],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for signal_word in ("ready", "half"):  # both start together, and both are half-way before either goes on
        for writer in writers:
            assert writer.stdout.readline().strip() == signal_word
        for writer in writers:
            writer.stdin.write("go\n")
            writer.stdin.flush()
    outputs = [w.communicate(timeout=60) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], outputs
    # each writer, when done, read its own 300, the other's first 150 (written before it went on), the 50 shared
    assert all(int(out) >= 1 + 300 + 150 + 50 for out, _ in outputs), outputs
    cache = JudgeCache(path)
    assert len(cache) == 1 + 300 + 300 + 50
    found = cache.get_many([f"a-{i}" for i in range(300)] + [f"b-{i}" for i in range(300)])
    assert len(found) == 600 and found["b-299"] == CachedReply("b 299", 299, 1)
    shared = cache.get_many([f"shared-{i}" for i in range(50)])
    assert {reply.text for reply in shared.values()} <= {"shared by a", "shared by b"}


def test_a_failing_write_names_the_file(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite3")
    cache.put("k", JudgeReply("t"))
    cache._connect().execute("PRAGMA query_only = ON")  # every write now fails, as on a full disk
    with pytest.raises(InputFileError, match=r"cannot write to the judge cache .*c\.sqlite3"):
        cache.put("k2", JudgeReply("t"))


def test_the_suite_never_uses_the_users_cache_folder():
    # tests/conftest.py points XDG_CACHE_HOME at a temporary folder before any test module is imported (code
    # run at collection included) and at a fresh one per test: the default cache is never in the user's home
    user_cache = Path.home() / ".cache"
    assert not default_cache_path().is_relative_to(user_cache)
    assert Path(os.environ["XDG_CACHE_HOME"]).is_relative_to(tempfile.gettempdir())


@pytest.mark.slow
def test_collecting_the_suite_leaves_a_users_home_alone(tmp_path):
    # test_docs.py judges example frames while it is imported: before any fixture runs
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"} | {"HOME": str(tmp_path)}
    tests = Path(__file__).resolve().parent
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(tests / "test_docs.py")],
        cwd=tests.parent, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not (tmp_path / ".cache" / "ragframe").exists()
