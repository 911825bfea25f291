"""The persistent judge cache: every reply is stored the moment it arrives, so no result is lost.

One SQLite file in WAL mode, one row per reply, keyed by :func:`cache_key`: the SHA-256 of
the judge's identity (model, host of the base URL, temperature and the other sampling
parameters; never the API key), the prompt and the sample index. A rerun, or a run restarted
after a crash or a kill, finds its replies there and sends no request for them.

Several processes (the children of :func:`ragframe.evaluate_parquet`, workers of a cluster
on one machine) may share one file: each write is one short transaction, and a writer that
finds the file locked waits (``busy_timeout``) instead of failing. A network file system
is not safe for SQLite's locks: keep the file on a local disk.

The default file is ``$XDG_CACHE_HOME/ragframe/judge.sqlite3`` (``~/.cache/ragframe/...``
when ``XDG_CACHE_HOME`` is unset). A folder that cannot be created or written is an
:class:`~ragframe.exceptions.InputFileError` naming it and ``cache=``.

The cache is trusted: a stored reply is read as if the judge had just sent it, so a reply
rewritten in the file changes the score it gives. A damaged row (a reply that is not text,
token counts that are not non-negative integers) is a miss: the reply is asked again and
the new one replaces the damaged row. A file that is not a SQLite database is an
``InputFileError`` naming it.

Examples
--------
>>> import pathlib, tempfile
>>> from ragframe.judges.base import JudgeReply
>>> with tempfile.TemporaryDirectory() as tmp:
...     cache = JudgeCache(pathlib.Path(tmp) / "judge.sqlite3")
...     key = cache_key({"model": "m"}, "Is it faithful?", 0)
...     cache.put(key, JudgeReply("Score: 1", input_tokens=4, output_tokens=3))
...     print(cache.get(key), len(cache))
...     cache.close()
CachedReply(text='Score: 1', input_tokens=4, output_tokens=3) 1
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragframe.exceptions import InputFileError, InvalidParameterError
from ragframe.judges.base import JudgeReply
from ragframe.public import public
from ragframe.secrets import scrub

__all__ = ["JudgeCache", "CachedReply", "cache_key", "default_cache_path", "resolve_cache"]

#: How long a writer waits for another process's transaction before failing (milliseconds).
BUSY_TIMEOUT_MS = 60_000
#: Keys looked up per SELECT (SQLite's default limit of bound parameters is 999 or 32766).
_LOOKUP_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    created REAL NOT NULL
)
"""


@dataclass(frozen=True)
class CachedReply:
    """A reply read back from the cache.

    Parameters
    ----------
    text : str
        The reply.
    input_tokens, output_tokens : int or None
        As reported by the judge (or estimated) when the reply arrived.
    """

    text: str
    input_tokens: int | None
    output_tokens: int | None


@public
def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/ragframe/judge.sqlite3``, or ``~/.cache/ragframe/judge.sqlite3``.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> default_cache_path().name
    'judge.sqlite3'
    """
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragframe" / "judge.sqlite3"


@public
def cache_key(identity: Mapping[str, Any], prompt: str, sample: int, attempt: int = 0) -> str:
    """SHA-256 (hex) of the judge identity, the prompt, the sample index and the attempt.

    Parameters
    ----------
    identity : mapping
        ``judge.identity()``: JSON-serialisable (keys sorted before hashing).
    prompt : str
        The prompt sent.
    sample : int
        The sample index (0 for the first or only sample).
    attempt : int
        0 for the first ask; k for the k-th re-ask of a reply that could not be read (its
        prompt carries the format reminder). Attempt 0 hashes no attempt field, so keys made
        before re-asks existed still match.

    Returns
    -------
    str
        64 hexadecimal characters.

    Examples
    --------
    >>> cache_key({"model": "m", "temperature": 0.0}, "p", 0) == cache_key({"temperature": 0.0, "model": "m"}, "p", 0)
    True
    >>> cache_key({"model": "m"}, "p", 0) == cache_key({"model": "m"}, "p", 1)
    False
    >>> cache_key({"model": "m"}, "p", 0, attempt=1) == cache_key({"model": "m"}, "p", 0)
    False
    """
    try:
        fields: dict[str, Any] = {"judge": dict(identity), "prompt": prompt, "sample": int(sample)}
        if attempt:
            fields["attempt"] = int(attempt)
        blob = json.dumps(
            fields,
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
        )
    except (TypeError, ValueError) as error:
        raise InvalidParameterError(
            f"judge.identity() must be a JSON-serialisable mapping of str keys (it keys the cache), "
            f"found {dict(identity)!r}: {error}"
        ) from None
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JudgeCache:
    """A SQLite file of judge replies shared by runs and processes (see the module doc).

    Parameters
    ----------
    path : str or os.PathLike, optional
        The file (created with its folder); default :func:`default_cache_path`.

    Notes
    -----
    Picklable (only the path travels; the connection reopens on first use). Thread-safe:
    one connection guarded by a lock.
    """

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._damaged: set[str] = set()  # keys read back damaged: the next put replaces them

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r})"

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            folder = self.path.parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise self._unusable(f"its folder {str(folder)!r} cannot be created ({_why(error)})") from None
            if not os.access(folder, os.W_OK | os.X_OK):
                raise self._unusable(f"its folder {str(folder)!r} is not writable")
            try:
                connection = sqlite3.connect(
                    self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
                )
                connection.text_factory = _text_or_bytes
                connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                _retry_busy(lambda: connection.execute("PRAGMA journal_mode = WAL").fetchone())
                connection.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: a commit survives a killed process
                _retry_busy(lambda: connection.execute(_SCHEMA))
            except sqlite3.DatabaseError as error:
                if "unable to open" in str(error) or "readonly" in str(error):
                    raise self._unusable(f"it cannot be opened for writing in {str(folder)!r} ({error})") from None
                raise InputFileError(f"judge cache {str(self.path)!r} cannot be opened: {error}") from None
            self._connection = connection
        return self._connection

    def _unusable(self, why: str) -> InputFileError:
        return InputFileError(
            f"judge cache {str(self.path)!r}: {why}; pass {{cache}} a file in a writable folder "
            f"(or set XDG_CACHE_HOME for the default one), or {{cache#2}} to run without a cache",
            mentions={"cache": "", "cache#2": "False"},
        )

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """SQLite's errors (a full disk, a damaged file) as an InputFileError naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            raise InputFileError(f"cannot {doing} the judge cache {str(self.path)!r}: {error}") from None

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedReply]:
        """The cached replies of ``keys`` (missing keys are absent from the result).

        Parameters
        ----------
        keys : iterable of str
            Keys from :func:`cache_key`.

        Returns
        -------
        dict of str to CachedReply
        """
        keys = list(dict.fromkeys(keys))
        found: dict[str, CachedReply] = {}
        with self._lock, self._errors("read"):
            connection = self._connect()
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start : start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = connection.execute(
                    f"SELECT key, text, input_tokens, output_tokens FROM replies WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, text, tin, tout in rows:
                    if isinstance(key, str) and _intact(text, tin, tout):
                        found[key] = CachedReply(text, tin, tout)
                    else:  # a miss: asked again, and the new reply replaces the row
                        self._damaged.add(str(key))
        return found

    def get(self, key: str) -> CachedReply | None:
        """The cached reply of ``key``, or None.

        Parameters
        ----------
        key : str
            A key from :func:`cache_key`.

        Returns
        -------
        CachedReply or None
        """
        return self.get_many([key]).get(key)

    def put(self, key: str, reply: JudgeReply) -> None:
        """Store one reply now (its own committed transaction); a key already stored keeps its first reply.

        A row read back damaged (:meth:`get_many` left it out) is replaced.

        Parameters
        ----------
        key : str
            A key from :func:`cache_key`.
        reply : JudgeReply
            The reply (its text, with any key :mod:`ragframe.secrets` knows masked, and its
            token counts are stored).
        """
        row = (key, scrub(reply.text), reply.input_tokens, reply.output_tokens, time.time())  # no key is ever stored
        with self._lock, self._errors("write to"):
            connection = self._connect()
            verb = "INSERT OR REPLACE" if key in self._damaged else "INSERT OR IGNORE"
            _retry_busy(
                lambda: connection.execute(
                    f"{verb} INTO replies (key, text, input_tokens, output_tokens, created) VALUES (?, ?, ?, ?, ?)",
                    row,
                )
            )
            self._damaged.discard(key)

    def __len__(self) -> int:
        with self._lock:
            return self._connect().execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def clear(self) -> None:
        """Delete every stored reply."""
        with self._lock:
            _retry_busy(lambda: self._connect().execute("DELETE FROM replies"))

    def close(self) -> None:
        """Close the connection (it reopens on next use)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _text_or_bytes(raw: bytes) -> str | bytes:
    """SQLite TEXT as str; bytes that are not UTF-8 stay bytes (a damaged row, not a failed read)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _intact(text: Any, input_tokens: Any, output_tokens: Any) -> bool:
    """A stored row that reads as a reply: text, and token counts that are non-negative ints or NULL."""
    counts_ok = all(n is None or (type(n) is int and n >= 0) for n in (input_tokens, output_tokens))
    return isinstance(text, str) and counts_ok


def _why(error: OSError) -> str:
    return f"{type(error).__name__}: {error.strerror or error}"


def _retry_busy(action: Any, attempts: int = 20) -> Any:
    """Run ``action``; on 'database is locked' (a lock the busy handler cannot wait for), retry briefly."""
    for attempt in range(attempts):
        try:
            return action()
        except sqlite3.OperationalError as error:
            busy = "locked" in str(error) or "busy" in str(error)
            if not busy or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    return None  # pragma: no cover


def resolve_cache(cache: Any) -> tuple[JudgeCache | None, bool]:
    """The cache a ``cache=`` argument means, and whether the caller opened it (so must close it).

    Parameters
    ----------
    cache : bool, str, os.PathLike or JudgeCache
        True: the default file; False or None: no cache; a path: that file; a JudgeCache: itself.

    Returns
    -------
    (JudgeCache or None, bool)

    Examples
    --------
    >>> resolve_cache(False)
    (None, False)
    """
    if cache is None or cache is False:
        return None, False
    if cache is True:
        return JudgeCache(), True
    if isinstance(cache, JudgeCache):
        return cache, False
    if isinstance(cache, (str, os.PathLike)) and str(cache):
        return JudgeCache(cache), True
    raise InvalidParameterError(
        f"cache must be True (the default file), False, a file path or a JudgeCache, found {cache!r}"
    )
