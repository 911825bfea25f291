"""Typed errors raised by ragframe.

Every error names what went wrong in terms the caller can act on: the function,
the column, the first offending row and what was found there.
"""

from __future__ import annotations

import contextvars
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from ragframe.redaction import scrub

__all__ = [
    "RagframeError",
    "SchemaError",
    "InvalidParameterError",
    "MissingDependencyError",
    "InputFileError",
    "ResumeError",
    "RunFailedError",
    "UnsupportedMeasureError",
    "UsageError",
    "SkippedMetricWarning",
]


# "function: message", the way every message of ragframe begins; a dotted name for a method (Evaluator.replace)
_NAMED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?): (.*)", re.DOTALL)

# the public function being run (ragframe.public sets it): the name an error gets when it names none
CALLER: contextvars.ContextVar[tuple[str, dict[str, str]] | None] = contextvars.ContextVar(
    "ragframe_caller", default=None
)


def _split(message: str, function: str | None) -> tuple[str | None, str]:
    """(function, text) of a message that may begin with "function: " (a message written before the decorator).

    Only a message ragframe wrote is read so: a user's own error (raised by a callback metric,
    say) keeps its text whole, and the stamp of ``@public`` goes in front of it.
    """
    if function is None and _made_by_ragframe():
        named = _NAMED.match(message)
        if named:
            return named.group(1), named.group(2)
    return function, message


def _made_by_ragframe() -> bool:
    """Whether the error being made is raised by ragframe's code (not a user's), from the first frame outside here."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    module = frame.f_globals.get("__name__", "") if frame is not None else ""
    return module == "ragframe" or module.startswith("ragframe.")


def current_function() -> str | None:
    """The public function the current call runs under (outermost), or None outside any.

    Examples
    --------
    >>> current_function() is None
    True
    """
    caller = CALLER.get()
    return caller[0] if caller is not None else None


def with_caller(text: str) -> str:
    """``text`` after the name of the public function being run (``"compare: text"``), for warnings.

    An error gets the name as it leaves the function (``@public``); a warning is issued
    from inside, so its message is given the name here.

    Examples
    --------
    >>> with_caller("threshold= is deprecated")
    'threshold= is deprecated'
    """
    function = current_function()
    return f"{function}: {text}" if function else text


class RagframeError(Exception):
    """Base class of every error ragframe raises on purpose.

    Parameters
    ----------
    *args
        The message, as for :class:`Exception`. A message written ``"name: text"`` names its
        function ``name``.
    function : str, optional
        The public function that raised it; ``@public`` (ragframe.public) sets it to the
        function the user called as the error leaves it. Shown as the message's prefix.
    parameter : str, optional
        The parameter at fault, in the words of the function called.
    mentions : mapping of str to (str or None), optional
        The parameters the message refers to as ``{name}``, each with the value shown
        (None: the name alone); see :meth:`render`.

    Attributes
    ----------
    function, parameter : str or None
    mentions : dict of str to (str or None)

    Examples
    --------
    Catch every deliberate error of ragframe at once (here an invalid ``k``):

    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
    >>> try:
    ...     rf.score_retrieval(df, k=0)
    ... except rf.RagframeError as error:
    ...     print(type(error).__name__, "-", error)
    InvalidParameterError - score_retrieval: k must be an int >= 1 or a non-empty list of them, found 0
    """

    function: str | None
    parameter: str | None
    mentions: dict[str, str | None]

    def __init__(
        self,
        *args: Any,
        function: str | None = None,
        parameter: str | None = None,
        mentions: Mapping[str, str | None] | None = None,
    ) -> None:
        # no message ever shows a key (ragframe.secrets): str, repr, pickles and tracebacks included
        args = tuple(scrub(a) if isinstance(a, str) else a for a in args)
        super().__init__(*args)
        body = args[0] if len(args) == 1 and isinstance(args[0], str) else None
        if body is not None:
            function, body = _split(body, function)
        self._body = body
        self.function = function  # the stamp of @public names the caller as the error leaves it
        self.parameter = parameter
        self.mentions = dict(mentions or {})

    def render(self, spell: Callable[[str, str | None], str] | None = None) -> str:
        """The message, each mentioned parameter spelled by ``spell(name, value)``.

        A message refers to its caller's parameters as ``{name}`` (listed in ``mentions``, each
        with the value to show, or None for the name alone; ``{mode#2}`` is a second mention of
        ``mode``, with another value); ``str(error)`` spells them the
        Python way (``name=value``, or ``name``) in the caller's vocabulary, and the
        ``ragframe`` command spells them as its flags.

        Parameters
        ----------
        spell : callable, optional
            ``(parameter, value text or None) -> text``; by default ``parameter=value``.

        Returns
        -------
        str

        Examples
        --------
        >>> import ragframe as rf
        >>> error = rf.RagframeError("'out' holds a run; {overwrite} replaces it", mentions={"overwrite": "True"})
        >>> str(error)
        "'out' holds a run; overwrite=True replaces it"
        >>> error.render(lambda name, value: "--" + name.replace("_", "-"))
        "'out' holds a run; --overwrite replaces it"
        """
        if self._body is None:
            return super().__str__()
        text = self._body
        for key, value in self.mentions.items():
            name = key.partition("#")[0]  # "mode#2": a second mention of mode, with another value
            if spell is not None:
                shown = spell(name, value)
            else:
                shown = name if value is None else f"{name}={value}"
            text = text.replace("{" + key + "}", shown)
        return f"{self.function}: {text}" if self.function else text

    def __str__(self) -> str:
        return self.render()

    def stamp(self, function: str, rename: Mapping[str, str] | None = None) -> None:
        """Name ``function`` as the public function that raised this, its parameters in its words.

        ``rename`` maps a parameter name used beneath to the caller's (``{"a": "baseline"}``
        for :func:`ragframe.gate`, which calls :func:`ragframe.compare`).

        Examples
        --------
        >>> import ragframe as rf
        >>> error = rf.InvalidParameterError("compare: a must be a frame", parameter="a")
        >>> error.stamp("gate", {"a": "baseline"})
        >>> error.function, error.parameter
        ('gate', 'baseline')
        """
        self.function = function
        if rename:
            if self.parameter in rename:
                self.parameter = rename[self.parameter]
            mentions = {}
            for key, value in self.mentions.items():
                name, mark, number = key.partition("#")
                renamed = rename.get(name, name) + mark + number
                mentions[renamed] = value
                if renamed != key:
                    self._rename_placeholder("{" + key + "}", "{" + renamed + "}")
            self.mentions = mentions

    def about(self, subject: str) -> RagframeError:
        """Put ``subject`` (what was being done or read: ``"baseline"``) in front of the message; returns self.

        Examples
        --------
        >>> import ragframe as rf
        >>> str(rf.InputFileError("no such file or folder: 'x'").about("baseline"))
        "baseline: no such file or folder: 'x'"
        """
        if self._body is not None:
            self._body = f"{subject}: {self._body}"
        if isinstance(getattr(self, "_message", None), str):  # SchemaError's message before its details
            self._message = f"{subject}: {self._message}"
        if self.args and isinstance(self.args[0], str):
            self.args = (f"{subject}: {self.args[0]}", *self.args[1:])
        return self

    def _rename_placeholder(self, old: str, new: str) -> None:
        if self._body is not None:
            self._body = self._body.replace(old, new)
        if isinstance(getattr(self, "_message", None), str):  # SchemaError's message before its details
            self._message = self._message.replace(old, new)

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {"function": self.function, "parameter": self.parameter, "mentions": self.mentions}
        if self._body is None:
            return partial(type(self), *self.args, **fields), ()
        return partial(type(self), self._body, **fields), ()


class SchemaError(RagframeError, ValueError):
    """An input frame breaks the column contract.

    Parameters
    ----------
    message : str
        What is wrong, in the caller's terms.
    function : str, optional
        The public function that found it; prefixes the message.
    column, row, expected, found, available
        Stored as the attributes below and appended to the message when given.
    parameter, mentions : optional
        As for :class:`RagframeError`.

    Attributes
    ----------
    column : str or None
        The offending column.
    row : int or None
        The first offending row (0-based position in the input frame).
    expected, found : str or None
        What the contract asks for and what the input holds.
    available : list of str or None
        The columns the frame does have (set when a column is missing).
    function : str or None
        The public function that raised it.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({"retrieved_ids": [["a", "b"]]})
    >>> try:
    ...     rf.score_retrieval(df, k=1, metrics=["mrr"])
    ... except rf.SchemaError as error:
    ...     print(error.function, error.column, error.available, isinstance(error, ValueError))
    score_retrieval relevant_ids ['retrieved_ids'] True
    """

    def __init__(
        self,
        message: str,
        *,
        function: str | None = None,
        column: str | None = None,
        row: int | None = None,
        expected: str | None = None,
        found: str | None = None,
        available: Iterable[str] | None = None,
        parameter: str | None = None,
        mentions: Mapping[str, str | None] | None = None,
    ) -> None:
        function, message = _split(scrub(message), function)
        self.column = column
        self.row = row
        self.expected = scrub(expected) if isinstance(expected, str) else expected
        self.found = scrub(found) if isinstance(found, str) else found  # a value of a row: never a key
        self.available = list(available) if available is not None else None
        self._message = scrub(message)
        parts = [message]
        if column is not None:
            parts.append(f" [column {column!r}")
            if row is not None:
                parts.append(f", row {row}")
            parts.append("]")
        if expected is not None:
            parts.append(f"; expected {expected}")
        if found is not None:
            parts.append(f", found {found}")
        if self.available is not None:
            parts.append(f"; available columns: {self.available}")
        super().__init__("".join(parts), function=function, parameter=parameter, mentions=mentions)

    def __reduce__(self) -> tuple[Any, ...]:
        # picklable (errors cross process boundaries: evaluate_parquet's child processes, Ray)
        fields = ("function", "parameter", "mentions", "column", "row", "expected", "found", "available")
        return partial(type(self), self._message, **{name: getattr(self, name) for name in fields}), ()


class InvalidParameterError(RagframeError, ValueError, TypeError):
    """A keyword argument has a wrong type or value (for example ``k=0``).

    A subclass of both :class:`ValueError` and :class:`TypeError`.

    Parameters
    ----------
    *args
        The message: the function, the parameter and the value found.
    function, parameter, mentions : optional
        As for :class:`RagframeError`.

    Examples
    --------
    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
    >>> try:
    ...     rf.score_retrieval(df, k=0)
    ... except rf.InvalidParameterError as error:
    ...     print(error, isinstance(error, ValueError), isinstance(error, TypeError))
    score_retrieval: k must be an int >= 1 or a non-empty list of them, found 0 True True
    """


class MissingDependencyError(RagframeError, ImportError):
    """An optional dependency is needed; the message names the extra to install.

    A subclass of :class:`ImportError`.

    Parameters
    ----------
    *args
        The message: what needs the dependency and how to install it.
    function, parameter, mentions : optional
        As for :class:`RagframeError`.

    Examples
    --------
    >>> import ragframe as rf
    >>> try:
    ...     raise rf.MissingDependencyError("a progress bar needs tqdm: pip install 'ragframe[cli]'")
    ... except ImportError as error:
    ...     print(isinstance(error, rf.RagframeError), error)
    True a progress bar needs tqdm: pip install 'ragframe[cli]'
    """


class InputFileError(RagframeError, OSError):
    """An input file is missing, unreadable or damaged; the message names the file.

    A subclass of :class:`OSError`.

    Parameters
    ----------
    *args
        The message: the function, the file and what is wrong with it.
    function, parameter, mentions : optional
        As for :class:`RagframeError`.

    Examples
    --------
    >>> import ragframe as rf
    >>> try:
    ...     rf.read_qrels("no/such/qrels.txt")
    ... except rf.InputFileError as error:
    ...     print(error, isinstance(error, OSError))
    read_qrels: no such file: 'no/such/qrels.txt' True
    """


class ResumeError(RagframeError):
    """An output folder holds a run made from another source or with other options.

    Raised by :func:`ragframe.evaluate_parquet` instead of mixing two runs in one folder.

    Parameters
    ----------
    *args
        The message: the folder, what differs and how to proceed.
    function, parameter, mentions : optional
        As for :class:`RagframeError`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> import ragframe as rf
    >>> log = pl.DataFrame({"retrieved_ids": [["a", "b"]], "relevant_ids": [["b"]]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     folder = pathlib.Path(tmp)
    ...     log.write_parquet(folder / "log.parquet")
    ...     _ = rf.evaluate_parquet(folder / "log.parquet", folder / "out", metrics=["mrr"], progress=False)
    ...     try:  # the same folder, other metrics
    ...         rf.evaluate_parquet(folder / "log.parquet", folder / "out", metrics=["ndcg_at_10"], progress=False)
    ...     except rf.ResumeError as error:
    ...         print("made with different options" in str(error))
    True
    """


class RunFailedError(RagframeError):
    """A run wrote its output but scored, judged or checked too little to count as a success.

    Raised by :func:`ragframe.evaluate_parquet` after the output folder is complete (so
    ``ragframe summary`` and ``report`` read it): the log had no rows, every row was
    rejected, a judge metric scored no row, or more judge rows failed than
    ``max_failure_rate`` allows. ``ragframe eval`` exits with code 3.

    Parameters
    ----------
    message : str
        What failed: the metric, the counts and the commonest error or reject reason.
    result : ParquetEvaluation, optional
        What the run did (``rows``, ``scored``, ``rejected``, ``statuses``, ...).

    Attributes
    ----------
    result : ParquetEvaluation or None

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> import ragframe as rf
    >>> log = pl.DataFrame({"retrieved_ids": [["a"]], "relevant_ids": [["a"]]}).head(0)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     log.write_parquet(pathlib.Path(tmp) / "log.parquet")
    ...     try:
    ...         rf.evaluate_parquet(pathlib.Path(tmp) / "log.parquet", pathlib.Path(tmp) / "out", metrics=["mrr"])
    ...     except rf.RunFailedError as error:
    ...         print(error.result.rows, pl.read_parquet(pathlib.Path(tmp) / "out" / "scores").columns)
    0 ['mrr']
    """

    def __init__(self, message: str, result: Any = None, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.result = result

    def __reduce__(self) -> tuple[Any, ...]:
        # the result stays behind (it holds a frame)
        return partial(type(self), str(self), function=None, parameter=self.parameter), ()


class UnsupportedMeasureError(InvalidParameterError):
    """A trec_eval measure name (``-m``) that ragframe cannot compute or cannot parse."""


class UsageError(InvalidParameterError):
    """A command line that parses but cannot run (``ragframe`` exits with code 2)."""

    @classmethod
    def of(cls, error: RagframeError) -> UsageError:
        """``error`` as a usage error of the command line, its function, parameter and mentions kept.

        Parameters
        ----------
        error : RagframeError
            A library error the command's arguments caused.

        Returns
        -------
        UsageError

        Examples
        --------
        >>> error = RagframeError("pass {overwrite}", function="evaluate_parquet", mentions={"overwrite": "True"})
        >>> usage = UsageError.of(error)
        >>> str(usage), usage.function, usage.mentions
        ('evaluate_parquet: pass overwrite=True', 'evaluate_parquet', {'overwrite': 'True'})
        """
        body = error._body if error._body is not None else str(error)
        return cls(body, function=error.function, parameter=error.parameter, mentions=error.mentions)


class SkippedMetricWarning(UserWarning):
    """A default metric was not scored: the frame lacks a column it reads.

    With no ``metrics`` given, :func:`ragframe.evaluate` (and ``evaluate_parquet``, ``ragframe
    eval``) scores every default (heuristic) metric whose input columns the frame has, and
    warns once per metric it skips. Metrics named explicitly are never skipped: a missing
    input is a :class:`SchemaError`.

    Parameters
    ----------
    message : str
        The one-line message.
    metric : str
        The skipped output column (``"context_recall"``, with the run's prefix).
    role, column : str
        The input role it reads and the column name the frame lacks.

    Examples
    --------
    >>> import warnings
    >>> import polars as pl
    >>> import ragframe as rf
    >>> df = pl.DataFrame({"question": ["q?"], "answer": ["a."], "contexts": [["a."]]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     out = rf.evaluate(df)
    >>> sorted((w.message.metric, w.message.column) for w in caught)
    [('answer_correctness', 'ground_truth'), ('context_recall', 'ground_truth')]
    """

    def __init__(self, message: str, *, metric: str, role: str, column: str) -> None:
        super().__init__(message)
        self.metric = metric
        self.role = role
        self.column = column

    def __reduce__(self) -> tuple[Any, ...]:
        return partial(type(self), str(self), metric=self.metric, role=self.role, column=self.column), ()
