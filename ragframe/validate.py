"""Parameter checks written once: every public function validates its keywords here.

Each check returns the value in its canonical type or raises
:class:`~ragframe.exceptions.InvalidParameterError` naming the parameter and what was
found (``@public``, :mod:`ragframe.public`, puts the name of the function called in front).
Booleans are never accepted as numbers (``True`` is not ``1``).

Examples
--------
>>> positive_int(5, "n_resamples")
5
>>> positive_int(0, "n_resamples")
Traceback (most recent call last):
...
ragframe.exceptions.InvalidParameterError: n_resamples must be an int >= 1, found 0
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from ragframe.exceptions import InvalidParameterError

__all__ = [
    "positive_int",
    "resamples",
    "integer",
    "number",
    "probability",
    "confidence",
    "seed",
    "choice",
    "k_list",
    "column_name",
    "column_list",
    "flag",
    "fail",
]

T = TypeVar("T")


def fail(name: str, expected: str, value: Any) -> InvalidParameterError:
    """The error for the parameter ``name``: ``expected``, found ``value``.

    Examples
    --------
    >>> str(fail("test", "one of ['t']", "z"))
    "test must be one of ['t'], found 'z'"
    """
    # the parameter is a mention: Python reads its name, the command line its flag
    return InvalidParameterError(
        f"{{{name}}} must be {expected}, found {value!r}", parameter=name, mentions={name: None}
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def integer(value: Any, name: str, *, minimum: int | None = None) -> int:
    """An int (numpy ints accepted, bools refused), at least ``minimum`` when given.

    Examples
    --------
    >>> integer(-1, "relevance_level")
    -1
    """
    if not _is_int(value) or (minimum is not None and value < minimum):
        expected = "an int" if minimum is None else f"an int >= {minimum}"
        raise fail(name, expected, value)
    return int(value)


def positive_int(value: Any, name: str) -> int:
    """An int >= 1.

    Examples
    --------
    >>> positive_int(3, "k")
    3
    """
    return integer(value, name, minimum=1)


#: The most resamples a bootstrap or permutation test may ask for (memory: 8 bytes each per cell).
MAX_RESAMPLES = 10_000_000


def resamples(value: Any, name: str) -> int:
    """A resample count: an int from 1 to :data:`MAX_RESAMPLES`.

    Examples
    --------
    >>> resamples(9999, "n_resamples")
    9999
    """
    count = positive_int(value, name)
    if count > MAX_RESAMPLES:
        raise fail(name, f"an int from 1 to {MAX_RESAMPLES:,}", value)
    return count


def number(
    value: Any,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    inclusive: bool = True,
) -> float:
    """A finite real number (ints accepted, bools and NaN refused) within the bounds.

    Examples
    --------
    >>> number(0.5, "threshold", minimum=0)
    0.5
    """
    ok = _is_real(value) and math.isfinite(float(value))
    if ok and minimum is not None:
        ok = float(value) >= minimum if inclusive else float(value) > minimum
    if ok and maximum is not None:
        ok = float(value) <= maximum if inclusive else float(value) < maximum
    if not ok:
        bounds = []
        if minimum is not None:
            bounds.append(f"{'>=' if inclusive else '>'} {minimum}")
        if maximum is not None:
            bounds.append(f"{'<=' if inclusive else '<'} {maximum}")
        raise fail(name, "a finite number" + (" " + " and ".join(bounds) if bounds else ""), value)
    return float(value)


def probability(value: Any, name: str) -> float:
    """A number in [0, 1].

    Examples
    --------
    >>> probability(1, "threshold")
    1.0
    """
    return number(value, name, minimum=0.0, maximum=1.0)


def confidence(value: Any, name: str) -> float:
    """A confidence level strictly between 0 and 1.

    Examples
    --------
    >>> confidence(0.95, "confidence")
    0.95
    """
    return number(value, name, minimum=0.0, maximum=1.0, inclusive=False)


def seed(value: Any, name: str) -> int | None:
    """A random seed: None or an int >= 0.

    Examples
    --------
    >>> seed(None, "seed") is None
    True
    """
    if value is None:
        return None
    return integer(value, name, minimum=0)


def choice(value: T, name: str, options: Sequence[T]) -> T:
    """One of ``options`` (compared with ``==``; unhashable values refused cleanly).

    Examples
    --------
    >>> choice("t", "test", ["t", "wilcoxon"])
    't'
    """
    try:
        found = value in options and (not isinstance(value, bool) or any(isinstance(o, bool) for o in options))
    except TypeError:  # an unhashable or incomparable value
        found = False
    if not found:
        raise fail(name, f"one of {list(options)}", value)
    return value


def k_list(value: Any, name: str) -> list[int]:
    """One cutoff or a non-empty list of cutoffs, each an int >= 1; sorted, repeats dropped.

    Examples
    --------
    >>> k_list([10, 1, 10], "k")
    [1, 10]
    """
    values = [value] if _is_int(value) else value
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise fail(name, "an int >= 1 or a list of them", value)
    values = list(values)
    if not values or not all(_is_int(k) and k >= 1 for k in values):
        raise fail(name, "an int >= 1 or a non-empty list of them", value)
    return sorted({int(k) for k in values})


def column_name(value: Any, name: str) -> str:
    """A non-empty column name.

    Examples
    --------
    >>> column_name("answer", "answer")
    'answer'
    """
    if not isinstance(value, str) or not value:
        raise fail(name, "a non-empty column name (str)", value)
    return value


def column_list(value: Any, name: str, *, allow_empty: bool = False) -> list[str]:
    """One column name or a list of them (no repeats).

    Examples
    --------
    >>> column_list("model", "by")
    ['model']
    """
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, Iterable):
        raise fail(name, "a column name or a list of them", value)
    values = list(values)
    if (not values and not allow_empty) or not all(isinstance(v, str) and v for v in values):
        raise fail(name, "a column name or a non-empty list of them", value)
    if len(set(values)) != len(values):
        raise fail(name, "a list of distinct column names", value)
    return values


def flag(value: Any, name: str) -> bool:
    """A bool (numpy bools accepted; 0/1 and strings refused).

    Examples
    --------
    >>> flag(True, "explain")
    True
    """
    if not isinstance(value, bool) and type(value).__name__ != "bool_":
        raise fail(name, "True or False", value)
    return bool(value)
