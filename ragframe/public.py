"""The mark of a public function: every ragframe error raised beneath it names it, in its words.

``@public`` wraps each function of ``import ragframe as rf``. A :class:`RagframeError` raised
anywhere beneath the call, however deep and whichever helper raised it, leaves with
``error.function`` set to the public function the user called (the outermost one: ``rf.gate``
calls ``rf.regressions``, which calls ``rf.compare``; the error names ``gate``), and with
``error.parameter`` and the parameters the message mentions renamed to that function's own
parameters (``compare``'s ``a``/``b`` are ``gate``'s ``baseline``/``current``).

While the call runs, :func:`parameter_name` gives the caller's word for a parameter, so a
message built deep down (``"1 id(s) of a are missing from b"``) reads in the vocabulary of
the function the user called (``"1 id(s) of baseline are missing from current"``).

Examples
--------
>>> from ragframe.exceptions import InvalidParameterError
>>> @public
... def inner(a):
...     raise InvalidParameterError(f"{parameter_name('a')} must be a frame", parameter="a")
>>> @public(rename={"a": "baseline"})
... def outer(baseline):
...     return inner(baseline)
>>> try:
...     outer(1)
... except InvalidParameterError as error:
...     print(error, "|", error.function, error.parameter)
outer: baseline must be a frame | outer baseline
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from ragframe.exceptions import CALLER, RagframeError

__all__ = ["public", "parameter_name", "is_public", "user_stacklevel"]

F = TypeVar("F", bound=Callable[..., Any])

MARK = "__ragframe_public__"


@overload
def public(function: F, /) -> F: ...


@overload
def public(*, name: str | None = None, rename: Mapping[str, str] | None = None) -> Callable[[F], F]: ...


def public(
    function: Callable[..., Any] | None = None, /, *, name: str | None = None, rename: Mapping[str, str] | None = None
) -> Any:
    """Mark ``function`` public: errors raised beneath it name it and its parameters.

    Parameters
    ----------
    function : callable
        The function (sync or async); used bare (``@public``) or with keywords.
    name : str, optional
        The name errors give (default: the function's ``__name__``).
    rename : mapping of str to str, optional
        Parameter names used beneath (by the functions it calls) to its own parameter names.

    Returns
    -------
    callable
        The function, wrapped (``functools.wraps``: same name, signature and docstring).

    Examples
    --------
    >>> @public(name="gate", rename={"a": "baseline", "b": "current"})
    ... def check(baseline, current):
    ...     return parameter_name("a")
    >>> check(1, 2), is_public(check)
    ('baseline', True)
    """
    if function is None:
        return functools.partial(public, name=name, rename=rename)
    label = name or function.__name__
    renames = dict(rename or {})

    def enter() -> Any:
        # the outermost public function holds the vocabulary of the whole call
        return CALLER.set((label, renames)) if CALLER.get() is None else None

    def leave(token: Any) -> None:
        if token is not None:
            CALLER.reset(token)

    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            token = enter()
            try:
                return await function(*args, **kwargs)
            except RagframeError as error:
                error.stamp(label, renames)
                raise
            finally:
                leave(token)

    else:

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            token = enter()
            try:
                return function(*args, **kwargs)
            except RagframeError as error:
                error.stamp(label, renames)
                raise
            finally:
                leave(token)

    setattr(wrapper, MARK, label)
    return wrapper


def parameter_name(name: str) -> str:
    """The word the public function being run uses for ``name`` (``name`` itself outside any).

    Examples
    --------
    >>> parameter_name("a")
    'a'
    """
    caller = CALLER.get()
    return caller[1].get(name, name) if caller is not None else name


def is_public(function: Any) -> bool:
    """Whether ``function`` carries the ``@public`` mark.

    Examples
    --------
    >>> is_public(len)
    False
    """
    return getattr(function, MARK, None) is not None


def user_stacklevel() -> int:
    """The ``stacklevel`` of a warning issued here that points at the user's line, outside ragframe.

    However deep the call (and through the ``@public`` wrappers), ``warnings.warn(...,
    stacklevel=user_stacklevel())`` reports the first frame that is not ragframe's.

    Examples
    --------
    >>> user_stacklevel() >= 1
    True
    """
    frame = sys._getframe(1)
    level = 1
    while frame is not None and _is_ragframe(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    return level


def _is_ragframe(module: str) -> bool:
    return module == "ragframe" or module.startswith("ragframe.")
