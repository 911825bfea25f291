"""Typed errors raised by ragframe.

Every error names what went wrong in terms the caller can act on: the function,
the column, the first offending row and what was found there.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

__all__ = [
    "RagframeError",
    "SchemaError",
    "InvalidParameterError",
    "MissingDependencyError",
    "InputFileError",
    "ResumeError",
    "UnsupportedMeasureError",
]


class RagframeError(Exception):
    """Base class of every error ragframe raises on purpose."""


class SchemaError(RagframeError, ValueError):
    """An input frame breaks the column contract.

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
    ) -> None:
        self.function = function
        self.column = column
        self.row = row
        self.expected = expected
        self.found = found
        self.available = list(available) if available is not None else None
        self._message = message
        parts = [f"{function}: " if function else "", message]
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
        super().__init__("".join(parts))

    def __reduce__(self) -> tuple[Any, ...]:
        # picklable (errors cross process boundaries: evaluate_parquet's child processes, Ray)
        fields = ("function", "column", "row", "expected", "found", "available")
        return partial(type(self), self._message, **{name: getattr(self, name) for name in fields}), ()


class InvalidParameterError(RagframeError, ValueError, TypeError):
    """A keyword argument has a wrong type or value (for example ``k=0``)."""


class MissingDependencyError(RagframeError, ImportError):
    """An optional dependency is needed; the message names the extra to install."""


class InputFileError(RagframeError, OSError):
    """An input file is missing, unreadable or damaged; the message names the file."""


class ResumeError(RagframeError):
    """An output folder holds a run made from another source or with other options."""


class UnsupportedMeasureError(InvalidParameterError):
    """A trec_eval measure name (``-m``) that ragframe cannot compute or cannot parse."""
