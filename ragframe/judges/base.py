"""What every judge shares: the reply, the per-row statuses and the errors a call can end with.

A *judge* is any callable ``prompt -> str``, sync or async; ragframe wraps it with
:func:`as_judge` so that the runner always sees an object with ``async complete(prompt,
sample) -> JudgeReply``. :class:`ragframe.judges.OpenAIJudge` implements the same method over
HTTP and fills in token counts. A call that fails for a reason that is not the caller's fault
raises one of the :class:`JudgeCallError` subclasses; the runner turns it into a null score
with the matching status and goes on with the other rows.

Examples
--------
>>> import asyncio
>>> judge = as_judge(lambda prompt: "Score: 1\\nReason: fine")
>>> asyncio.run(judge.complete("Is it faithful?", 0)).text
'Score: 1\\nReason: fine'
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ragframe.exceptions import RagframeError
from ragframe.public import public

__all__ = [
    "STATUSES",
    "FAILED_STATUSES",
    "NOT_FAILED_STATUSES",
    "JudgeReply",
    "Judge",
    "CallableJudge",
    "as_judge",
    "JudgeCallError",
    "JudgeTimeout",
    "JudgeHTTPError",
    "JudgeRateLimited",
]

#: Per-row statuses of a judge metric (``<name>_status``) and of :func:`ragframe.judges.judge_prompts`:
#: ``ok`` (a readable reply), ``parse_error`` (replies came but none could be read, re-asks
#: included), ``timeout`` / ``http_error`` / ``rate_limited`` (the call failed after its
#: retries), ``judge_error`` (the judge's own code raised or returned no text: the
#: exception type is in the error), ``skipped`` (not asked: a null input, a dry run, a row
#: the hybrid band left to the heuristic).
STATUSES = ("ok", "parse_error", "timeout", "http_error", "rate_limited", "judge_error", "skipped")
#: The statuses that mean a failed row (``ok`` and ``skipped`` do not).
FAILED_STATUSES = ("parse_error", "timeout", "http_error", "rate_limited", "judge_error")
#: The statuses that are not failures: a run counts any status outside this pair (an unknown one too) as failed.
NOT_FAILED_STATUSES = tuple(status for status in STATUSES if status not in FAILED_STATUSES)


@dataclass(frozen=True)
class JudgeReply:
    """One reply of a judge.

    Parameters
    ----------
    text : str
        The model's reply.
    input_tokens, output_tokens : int or None
        From the API's ``usage`` fields; None when the judge does not report them (the
        accounting then estimates them from characters).
    retries : int
        Retried attempts before this reply.
    """

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    retries: int = 0


class JudgeCallError(RagframeError):
    """A judge call failed after its retries; ``status`` is the row's status.

    Parameters
    ----------
    message : str
        What happened (never the API key).
    retries : int
        Attempts retried before giving up.
    """

    status = "http_error"

    def __init__(self, message: str, *, retries: int = 0) -> None:
        super().__init__(message)
        self.retries = retries


class JudgeTimeout(JudgeCallError):
    """Every attempt ran past the per-call timeout."""

    status = "timeout"


class JudgeHTTPError(JudgeCallError):
    """A 4xx (other than 429) or a 5xx that outlived the retries, a connection error or a malformed body."""

    status = "http_error"


class JudgeRateLimited(JudgeCallError):
    """429 Too Many Requests outlived the retries."""

    status = "rate_limited"


@runtime_checkable
class Judge(Protocol):
    """What the runner calls: ``await judge.complete(prompt, sample)``.

    ``sample`` is the sample index (0 .. n_samples - 1): a judge may use it as a seed.
    ``identity()`` names the model and sampling parameters for the cache key (never secrets).
    """

    async def complete(self, prompt: str, sample: int) -> JudgeReply: ...

    def identity(self) -> Mapping[str, Any]: ...


@dataclass
class CallableJudge:
    """A user callable ``prompt -> str`` (sync or async) seen as a :class:`Judge`.

    Parameters
    ----------
    function : callable
        ``function(prompt) -> str`` or ``async function(prompt) -> str``.
    name : str
        Part of the cache key (default: the function's qualified name).
    """

    function: Callable[[str], str | Awaitable[str]]
    name: str = ""
    _is_async: bool = field(init=False, repr=False, default=False)
    #: Where the runner records this judge's calls (read it with :meth:`usage`).
    usage_ledger: Any = field(init=False, repr=False, compare=False, default_factory=lambda: _new_ledger())

    def __post_init__(self) -> None:
        call = self.function.__call__ if not inspect.isroutine(self.function) else self.function
        self._is_async = inspect.iscoroutinefunction(self.function) or inspect.iscoroutinefunction(call)
        if not self.name:
            self.name = getattr(self.function, "__qualname__", type(self.function).__name__)

    async def complete(self, prompt: str, sample: int) -> JudgeReply:
        """Call the function (a sync one runs in a worker thread, so calls overlap)."""
        if self._is_async:
            text = await self.function(prompt)  # type: ignore[misc]
        else:
            import asyncio

            text = await asyncio.to_thread(self.function, prompt)
        return JudgeReply(text=text)  # not str(): a reply that is not text is the runner's judge_error

    def identity(self) -> Mapping[str, Any]:
        """The cache identity: the callable's name and a fingerprint of its code.

        The fingerprint (a hash of the compiled code, defaults and closure values) tells two
        lambdas apart, which share a name, and stays the same from run to run for the same
        source, so a rerun still finds its cached replies.
        """
        fingerprint = _code_fingerprint(self.function)
        return {"callable": self.name} if fingerprint is None else {"callable": self.name, "code": fingerprint}

    def usage(self, *, reset: bool = False) -> Any:
        """This judge's usage per metric: a polars frame as :func:`ragframe.judges.judge_usage`.

        Parameters
        ----------
        reset : bool
            Start counting again from zero after reading.

        Returns
        -------
        polars.DataFrame
        """
        return self.usage_ledger.frame(reset=reset)


def _new_ledger() -> Any:
    from ragframe.judges.usage import JudgeUsage

    return JudgeUsage()


def _code_fingerprint(function: Any) -> str | None:
    """A hash of a Python function's code, defaults and closure values (None for builtins)."""
    target = function if hasattr(function, "__code__") else type(function).__dict__.get("__call__")
    code = getattr(target, "__code__", None)
    if code is None:
        return None
    cells = []
    for cell in getattr(target, "__closure__", None) or ():
        try:
            cells.append(repr(cell.cell_contents))
        except ValueError:  # an empty cell
            cells.append("<empty>")
    parts = [_code_text(code), repr(getattr(target, "__defaults__", None)), repr(cells)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _code_text(code: Any) -> str:
    """What a code object computes, without where it stands in its file (line numbers differ)."""
    consts = [_code_text(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts]
    return repr((code.co_code.hex(), consts, code.co_names, code.co_varnames))


@public
def as_judge(judge: Any) -> Judge:
    """A :class:`Judge` from a judge object or a plain callable ``prompt -> str``.

    Parameters
    ----------
    judge : Judge or callable
        An object with ``complete`` and ``identity`` (such as ``rf.OpenAIJudge``), or a
        callable (sync or async) taking the prompt and returning the reply text.

    Returns
    -------
    Judge

    Examples
    --------
    >>> as_judge(str.upper).identity()
    {'callable': 'str.upper'}
    >>> as_judge(lambda p: "Score: 1").identity() != as_judge(lambda p: "Score: 0").identity()
    True
    """
    from ragframe.exceptions import InvalidParameterError

    if isinstance(judge, Judge):
        return judge
    if callable(judge):
        return CallableJudge(judge)
    raise InvalidParameterError(
        f"judge must be a callable prompt -> str (sync or async) or a Judge such as rf.OpenAIJudge, "
        f"found {type(judge).__name__}"
    )
