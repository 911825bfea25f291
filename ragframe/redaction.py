"""Keys out of text: the names that hold one, the keys this process knows, and the secrets of a URL.

The values half of :mod:`ragframe.secrets`, on its own so that :mod:`ragframe.exceptions`
(every error message is scrubbed) and :mod:`ragframe.secrets` (whose checks raise typed
errors) do not import each other. :mod:`ragframe.secrets` re-exports every public name here;
use it from there.

- :func:`register` remembers a key (and its form without surrounding whitespace: a key read
  from a file often ends in a newline, and an error may show either form).
- :func:`scrub` replaces every registered key inside a text by ``***``, and the secrets a URL
  carries whoever wrote them: the userinfo (``https://user:PASSWORD@host``,
  ``https://TOKEN@host``) and the value of every secret-looking query parameter
  (:func:`is_secret_query_name`: ``api-key``, ``key``, ``token``, ``sig``, ``code``, ...,
  ``https://host/v1?api-version=2024-06-01&api-key=***``).
- :func:`url_secrets` lists the secrets of the URLs in a text, for :func:`register`: a key
  that came in a ``base_url`` is then scrubbed from any text, in any form it shows up.

Examples
--------
>>> scrub("POST https://gw.example/v1/chat/completions?api-version=2024-06-01&api-key=sk-0123456789 failed")
'POST https://gw.example/v1/chat/completions?api-version=2024-06-01&api-key=*** failed'
>>> scrub("https://me:hunter2@gw.example/v1"), scrub("https://ghp_0123456789@gw.example/v1")
('https://me:***@gw.example/v1', 'https://***@gw.example/v1')
>>> url_secrets("https://me:hunter2@gw.example/v1?sig=abc%2Bdef&sv=2024")
['hunter2', 'abc%2Bdef', 'abc+def']
"""

from __future__ import annotations

import re
import threading
from typing import Any
from urllib.parse import unquote

__all__ = [
    "REDACTED",
    "MIN_SCRUB_LENGTH",
    "QUERY_SECRET_NAMES",
    "is_secret_name",
    "is_secret_query_name",
    "register",
    "scrub",
    "url_secrets",
]

#: What a secret is shown as.
REDACTED = "***"
#: Registered keys shorter than this are not scrubbed from free text (they would match ordinary words).
MIN_SCRUB_LENGTH = 8
#: Query parameter names that hold a secret besides those :func:`is_secret_name` knows (after
#: lower-casing and ``-`` -> ``_``): Azure's ``sig``/``signature`` (SAS) and ``code``
#: (Functions), ``subscription_key``, a bare ``key``, ``sas``, ``x_amz_signature``, ``x_goog_signature``.
QUERY_SECRET_NAMES = frozenset(
    {"key", "sig", "signature", "code", "sas", "subscription_key", "x_amz_signature", "x_goog_signature"}
)

_SECRET_NAME = re.compile(
    r"(?:^|_)(?:(?:api|access|secret|private|client)_?key|token|secret|password|passwd|passphrase"
    r"|authorization|auth|credentials?|bearer|cookie)$"
)
# scheme://USERINFO@ : a user name and a password, or a token alone as the user name
_URL_USERINFO = re.compile(
    r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^\s/@:?#]*)(?P<colon>:?)(?P<password>[^\s/@?#]*)@"
)
# ?name=value or &name=value (a query string; ';' too, as some servers read it)
_QUERY_PARAMETER = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.\-]+)=)(?P<value>[^&;#\s'\"<>\\]+)")

_lock = threading.Lock()
_known: set[str] = set()
_pattern: re.Pattern[str] | None = None


def _normal(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def is_secret_name(name: Any) -> bool:
    """Whether an option (or header, or field) of this name holds a secret (see :mod:`ragframe.secrets`).

    Examples
    --------
    >>> [is_secret_name(n) for n in ("api_key", "Authorization", "x-api-key", "auth_token", "password")]
    [True, True, True, True, True]
    >>> [is_secret_name(n) for n in ("max_tokens", "tokens_per_minute", "prompt_cache_key", "api_key_env")]
    [False, False, False, False]
    """
    if not isinstance(name, str):
        return False
    normal = _normal(name)
    return not normal.endswith("_env") and _SECRET_NAME.search(normal) is not None


def is_secret_query_name(name: str) -> bool:
    """Whether a URL query parameter of this name holds a secret: a secret's name, or one of :data:`QUERY_SECRET_NAMES`.

    Examples
    --------
    >>> [is_secret_query_name(n) for n in ("api-key", "key", "sig", "access_token", "code")]
    [True, True, True, True, True]
    >>> [is_secret_query_name(n) for n in ("api-version", "sv", "se", "model", "max_tokens")]
    [False, False, False, False, False]
    """
    return is_secret_name(name) or _normal(name) in QUERY_SECRET_NAMES


def url_secrets(text: str) -> list[str]:
    """The secrets of the URLs in ``text``: userinfo passwords (or a token as the user name) and secret query values.

    Each percent-encoded value is listed as written and decoded (when they differ).
    """
    if not isinstance(text, str):
        return []
    found: list[str] = []
    if "://" in text:
        for match in _URL_USERINFO.finditer(text):
            found.append(match["password"] if match["colon"] else match["user"])
    if "=" in text:
        found += [m["value"] for m in _QUERY_PARAMETER.finditer(text) if is_secret_query_name(m["name"])]
    out: list[str] = []
    for value in found:
        for form in (value, unquote(value)):
            if form and form not in out:
                out.append(form)
    return out


def register(value: Any) -> None:
    """Remember a key (and its form without surrounding whitespace) so that :func:`scrub` replaces it in any text.

    Parameters
    ----------
    value : str or Secret
        The key (an object with ``reveal()``: a :class:`ragframe.secrets.Secret`); a form
        shorter than :data:`MIN_SCRUB_LENGTH` characters is not registered.
    """
    global _pattern
    text = value.reveal() if hasattr(value, "reveal") else value
    if not isinstance(text, str):
        return
    forms = {form for form in (text, text.strip()) if len(form) >= MIN_SCRUB_LENGTH and form not in _known}
    if not forms:
        return
    with _lock:
        _known.update(forms)
        ordered = sorted(_known, key=len, reverse=True)  # a key inside a longer one: the longer first
        _pattern = re.compile("|".join(re.escape(k) for k in ordered))


def _userinfo(match: re.Match[str]) -> str:
    if match["colon"]:
        return f"{match['head']}{match['user']}:{REDACTED}@"
    return f"{match['head']}{REDACTED}@"


def _query(match: re.Match[str]) -> str:
    return f"{match['head']}{REDACTED}" if is_secret_query_name(match["name"]) else match[0]


def scrub(text: str, *extra: Any) -> str:
    """``text`` with every registered key (and ``extra`` ones) replaced by ``***``, and the secrets of URLs masked.

    Parameters
    ----------
    text : str
        Any text (a reply, an error message, a log line).
    *extra : str, Secret or None
        Keys to replace whatever their length (a judge's own key); their forms without
        surrounding whitespace too.

    Returns
    -------
    str

    Examples
    --------
    >>> scrub("POST https://me:hunter2@gateway.example/v1 failed")
    'POST https://me:***@gateway.example/v1 failed'
    >>> scrub("echo: abc", " abc\\n")
    'echo: ***'
    """
    if not isinstance(text, str):
        return text
    for key in extra:
        key = key.reveal() if hasattr(key, "reveal") else key
        if isinstance(key, str):
            for form in sorted({key, key.strip()}, key=len, reverse=True):
                if form:
                    text = text.replace(form, REDACTED)
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    if "://" in text:
        text = _URL_USERINFO.sub(_userinfo, text)
    if "=" in text:
        text = _QUERY_PARAMETER.sub(_query, text)
    return text
