"""The one rule for secrets (API keys): what is one, where it may go, and how every sink shows it.

A key is held by a :class:`Secret` from the moment ragframe gets it (an ``api_key`` in
``rf.OpenAIJudge``, in a judge mapping of :class:`ragframe.Evaluator` options or a TOML
``[judge]`` table, or a key read from an environment variable) to the moment it goes into
an ``Authorization`` header. A ``Secret`` shows as ``'***'`` in every ``repr``/``str`` and
refuses to be pickled, except inside :func:`carrying`, the block in which
:func:`ragframe.evaluate_parquet` hands a job to its child process through a pipe (in
memory: the child needs the key). So a key cannot reach a manifest, a report, a log, an
error, a repr or a pickle on disk by accident: the class of leak is closed, not each
instance.

The rule has three parts, used by every sink:

- **Names.** :func:`is_secret_name`: an option whose name ends in ``api_key``,
  ``access_key``, ``secret_key``, ``private_key``, ``client_key``, ``token``, ``secret``,
  ``password``, ``passwd``, ``passphrase``, ``authorization``, ``auth``, ``credential(s)``,
  ``bearer`` or ``cookie`` (any case, ``-`` or ``_``) holds a secret, at any depth of an
  option mapping; a name ending in ``_env`` (``api_key_env``) names the environment
  variable that holds one, and is shown as it is. :func:`protect` wraps such values in a
  ``Secret`` when options come in; :func:`redact` shows them as ``'***'`` when they go out.
- **Values.** Every key ragframe holds is registered in this process (and in the child
  processes it is carried to), as it was given and without surrounding whitespace (a
  :class:`Secret` holds the stripped form: a key read from a file, or from a variable set
  from one, often ends in a newline); :func:`scrub` replaces any registered key inside a
  text (a reply a gateway echoed it in, an error message, a log record) by ``***``, and
  the secrets of a URL too: its userinfo (``https://user:PASSWORD@host``,
  ``https://TOKEN@host``) and its secret-looking query parameters (``?api-key=``,
  ``key``, ``token``, ``sig``, ``code``, ...: :func:`is_secret_query_name`), whose values
  are also registered when options come in (:func:`protect`). The scrubbing itself
  lives in :mod:`ragframe.redaction` (which :mod:`ragframe.exceptions` uses). Keys shorter than
  :data:`MIN_SCRUB_LENGTH` characters are not scrubbed from free text (they would match
  ordinary words); they are still never shown where they are named.
- **Sinks.** Manifests, ``Evaluator.to_dict``, reports, judge replies before they are
  parsed or cached, the judge cache, error messages (every :class:`ragframe.RagframeError`),
  the ``ragframe`` loggers (:class:`ScrubFilter`) and the command line's error lines all
  pass through :func:`redact` or :func:`scrub`.

Examples
--------
>>> key = Secret("sk-live-0123456789abcdef")
>>> key, str(key), f"Bearer {key}"
('***', '***', 'Bearer ***')
>>> scrub("the gateway saw Bearer sk-live-0123456789abcdef")
'the gateway saw Bearer ***'
>>> redact({"model": "gpt-4o-mini", "api_key": "sk-typed-by-hand-123", "api_key_env": "MY_KEY"})
{'model': 'gpt-4o-mini', 'api_key': '***', 'api_key_env': 'MY_KEY'}
>>> is_secret_name("api_key"), is_secret_name("max_tokens"), is_secret_name("api_key_env")
(True, False, False)
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from ragframe.exceptions import InvalidParameterError
from ragframe.redaction import (
    MIN_SCRUB_LENGTH,
    REDACTED,
    is_secret_name,
    is_secret_query_name,
    register,
    scrub,
    url_secrets,
)

__all__ = [
    "REDACTED",
    "MIN_SCRUB_LENGTH",
    "Secret",
    "is_secret_name",
    "is_secret_query_name",
    "url_secrets",
    "is_secret_reference",
    "protect",
    "redact",
    "scrub",
    "register",
    "from_environment",
    "carrying",
    "is_carrying",
    "portable",
    "comparable",
    "ScrubFilter",
    "LOGGERS",
]

#: The loggers of ragframe; each gets a :class:`ScrubFilter` (a test checks that every
#: ``ragframe*`` logger of every module is among them).
#: ``httpx`` logs each request's URL at INFO level: a key in a base URL's query string is masked there too.
LOGGERS = ("ragframe", "ragframe.judge", "ragframe.judges", "ragframe.retrieve", "httpx")

_carry = threading.local()


def _normal(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def is_secret_reference(name: Any) -> bool:
    """Whether an option of this name names the environment variable of a secret (``api_key_env``).

    Examples
    --------
    >>> is_secret_reference("api_key_env"), is_secret_reference("api_key")
    (True, False)
    """
    return isinstance(name, str) and _normal(name).endswith("_env") and is_secret_name(_normal(name)[: -len("_env")])


class Secret:
    """A key: shown as ``'***'``, compared by value, pickled only inside :func:`carrying`.

    Parameters
    ----------
    value : str
        The key (registered for :func:`scrub` in this process).
    variable : str, optional
        The environment variable it was read from (None: given as a value).

    Examples
    --------
    >>> import pickle
    >>> key = Secret("sk-0123456789abcdef", variable="MY_KEY")
    >>> key, key.variable, key.reveal() == "sk-0123456789abcdef", key == Secret("sk-0123456789abcdef")
    ('***', 'MY_KEY', True, True)
    >>> try:
    ...     pickle.dumps(key)
    ... except TypeError as error:
    ...     print(str(error).split(":")[0])
    the API key is not picklable
    >>> with carrying():  # only for a pipe to a child process
    ...     pickle.loads(pickle.dumps(key)) == key
    True
    """

    __slots__ = ("_value", "variable")

    def __init__(self, value: str, variable: str | None = None) -> None:
        if not isinstance(value, str):
            raise TypeError(f"a Secret holds a str, found a {type(value).__name__}")
        self._value = value.strip()  # a key read from a file or a variable set from one ends in a newline
        self.variable = variable
        register(value)  # both forms: an error may show either

    def reveal(self) -> str:
        """The key itself: for the ``Authorization`` header, nothing else."""
        return self._value

    def __repr__(self) -> str:
        return f"'{REDACTED}'"

    def __str__(self) -> str:
        return REDACTED

    def __format__(self, spec: str) -> str:
        return format(REDACTED, spec)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict) -> Secret:
        return self

    def __reduce__(self) -> Any:
        if is_carrying():
            return (Secret, (self._value, self.variable))
        raise TypeError(
            "the API key is not picklable: ragframe never writes a key into a pickle; "
            "name its environment variable instead (api_key_env='NAME')"
        )


def _fail(message: str) -> Exception:
    return InvalidParameterError(message)


def protect(value: Any, where: str = "") -> Any:
    """Options as they come in: every secret-named str value, at any depth of a mapping, held by a :class:`Secret`.

    Parameters
    ----------
    value : object
        Options (a mapping, or anything: lists and tuples are walked, other values kept).
    where : str
        The path of ``value`` in the options (for errors).

    Returns
    -------
    object
        The same structure (mappings as dicts) with the secrets wrapped.

    Raises
    ------
    InvalidParameterError
        A secret given as ``'***'``: the redacted form that manifests and ``to_dict`` hold
        in place of a key, not a key.

    Examples
    --------
    >>> protect({"judge": {"model": "m", "api_key": "sk-0123456789"}})
    {'judge': {'model': 'm', 'api_key': '***'}}
    """
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for name, item in value.items():
            path = f"{where}[{name!r}]" if where else str(name)
            if is_secret_name(name) and isinstance(item, str):
                if item == REDACTED:
                    raise _fail(
                        f"{path} is {REDACTED!r}, the form ragframe writes in place of a key "
                        "(to_dict, manifests and reports never hold one): pass the key itself, or "
                        f"{name}_env='NAME' to read it from an environment variable"
                    )
                out[name] = Secret(item)
            else:
                out[name] = protect(item, path)
        return out
    if type(value) in (list, tuple):
        return type(value)(protect(item, where) for item in value)
    if isinstance(value, str):
        for found in url_secrets(value):  # a key in a base_url: scrubbed from any text from now on
            register(found)
    return value


def redact(value: Any) -> Any:
    """Options, identities or manifest entries as they go out: no secret left, by name or by value.

    Parameters
    ----------
    value : object
        Plain data (mappings, lists, tuples, str, numbers) possibly holding :class:`Secret`
        objects or secrets under secret names.

    Returns
    -------
    object
        A copy: secrets (a :class:`Secret`, or a str or Secret under a secret name) are
        ``'***'``, every str is :func:`scrub`-bed; mappings become dicts.

    Examples
    --------
    >>> redact({"judge": {"Authorization": "Bearer abc", "base_url": "http://u:pw@h/v1"}, "k": [1, 2]})
    {'judge': {'Authorization': '***', 'base_url': 'http://u:***@h/v1'}, 'k': [1, 2]}
    """
    if isinstance(value, Secret):
        return REDACTED
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {
            name: REDACTED if is_secret_name(name) and isinstance(item, (str, Secret)) else redact(item)
            for name, item in value.items()
        }
    if type(value) in (list, tuple):
        return type(value)(redact(item) for item in value)
    return value


def comparable(value: Any) -> Any:
    """:func:`redact`-ed options without any secret or secret reference: what decides whether two runs match.

    The key does not change a judge's replies (it is not part of the cache key either), so a
    run resumed with another key, or with the key passed another way, is the same run.

    Examples
    --------
    >>> comparable({"judge": {"model": "m", "api_key": "***"}})
    {'judge': {'model': 'm'}}
    >>> comparable({"judge": {"model": "m", "api_key_env": "K"}})
    {'judge': {'model': 'm'}}
    """
    if isinstance(value, Mapping):
        return {
            name: comparable(item)
            for name, item in value.items()
            if not (is_secret_name(name) or is_secret_reference(name))
        }
    if type(value) in (list, tuple):
        return [comparable(item) for item in value]
    return redact(value)


def portable(value: Any) -> Any:
    """Frozen options (nested tuples of ``(name, value)`` pairs) without the pairs whose value is a :class:`Secret`.

    What an object holding options pickles outside :func:`carrying`: the copy has no key
    (a judge made from it reads ``OPENAI_API_KEY``, or the variable ``api_key_env`` names);
    a URL's secrets (:func:`url_secrets`) are masked (``?api-key=***``).

    Examples
    --------
    >>> portable((("judge", (("api_key", Secret("sk-0123456789")), ("model", "m"))), ("k", (5,))))
    (('judge', (('model', 'm'),)), ('k', (5,)))
    """
    if isinstance(value, Secret):
        return None
    if type(value) is tuple:
        kept = (v for v in value if not (type(v) is tuple and len(v) == 2 and isinstance(v[1], Secret)))
        return tuple(portable(v) for v in kept)
    if isinstance(value, str) and url_secrets(value):  # a key in a base_url's query string or userinfo
        return scrub(value)
    return value


@contextlib.contextmanager
def carrying() -> Iterator[None]:
    """Pickles made in this thread inside the block carry keys: only for a pipe to a child process.

    Examples
    --------
    >>> is_carrying()
    False
    >>> with carrying():
    ...     is_carrying()
    True
    """
    previous = is_carrying()
    _carry.on = True
    try:
        yield
    finally:
        _carry.on = previous


def is_carrying() -> bool:
    """Whether this thread is inside :func:`carrying`."""
    return bool(getattr(_carry, "on", False))


def from_environment(variable: Any, *, required: bool = True) -> Secret | None:
    """The key in environment variable ``variable``, as a :class:`Secret` (registered).

    Parameters
    ----------
    variable : str
        The variable's name.
    required : bool
        Whether an unset (or empty) variable is an error; else None.

    Returns
    -------
    Secret or None

    Raises
    ------
    InvalidParameterError
        ``variable`` is not a name, or (``required``) the variable is not set.

    Examples
    --------
    >>> import os
    >>> os.environ["RAGFRAME_DOC_KEY"] = "sk-doc-0123456789"
    >>> key = from_environment("RAGFRAME_DOC_KEY")
    >>> key, key.variable
    ('***', 'RAGFRAME_DOC_KEY')
    >>> try:
    ...     from_environment("RAGFRAME_NO_SUCH_VARIABLE")
    ... except ValueError as error:
    ...     print(str(error)[:83])
    api_key_env names the environment variable 'RAGFRAME_NO_SUCH_VARIABLE', which is no
    >>> del os.environ["RAGFRAME_DOC_KEY"]
    """
    if not isinstance(variable, str) or not variable or "=" in variable:
        found = f"a {type(variable).__name__}" if not isinstance(variable, str) else repr(variable)
        raise _fail(f"api_key_env must be the name of an environment variable (a str), found {found}")
    value = os.environ.get(variable)
    if not value or not value.strip():
        if required:
            raise _fail(
                f"api_key_env names the environment variable {variable!r}, which is not set "
                "(or is empty): export it, or pass the key as api_key"
            )
        return None
    return Secret(value, variable)


class ScrubFilter(logging.Filter):
    """A logging filter that :func:`scrub`-s each record's message (and its traceback) before any handler sees it.

    Examples
    --------
    >>> import logging
    >>> record = logging.LogRecord("ragframe", logging.INFO, __file__, 1, "key %s", ("sk-live-0123456789abcdef",), None)
    >>> ScrubFilter().filter(record), record.getMessage()
    (True, 'key ***')
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: the handler reports it
            return True
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True


_FILTER = ScrubFilter()
for _name in LOGGERS:
    _logger = logging.getLogger(_name)
    if not any(isinstance(f, ScrubFilter) for f in _logger.filters):
        _logger.addFilter(_FILTER)
