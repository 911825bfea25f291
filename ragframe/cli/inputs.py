"""The scored frames ``summary``, ``compare`` and ``gate`` read, via :func:`ragframe.read_scores`."""

from __future__ import annotations

import polars as pl

from ragframe.exceptions import RagframeError
from ragframe.io.scores import read_scores

__all__ = ["read_argument"]


def read_argument(path: str, role: str) -> pl.DataFrame:
    """:func:`ragframe.read_scores` of a command's argument; an error names the argument's role (exit code 3).

    Examples
    --------
    >>> read_argument("no-such-file.parquet", "baseline")
    Traceback (most recent call last):
    ...
    ragframe.exceptions.InputFileError: baseline: no such file or folder: 'no-such-file.parquet'
    """
    try:
        return read_scores(path)
    except RagframeError as error:
        error.stamp(role)  # the command's words: the argument, not the library function
        raise
