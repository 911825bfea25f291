"""Dense group codes: each row's group as an integer 0 .. G-1, groups numbered in sorted key order.

The statistics group rows by slice columns (``by=``) and then work on arrays: NumPy sums
per code (``np.bincount``), one segment per code. :func:`dense_code` is the expression,
:func:`group_codes` the codes of a frame's rows with the key of each code.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

__all__ = ["dense_code", "group_codes"]


def dense_code(key: Sequence[str] | pl.Expr) -> pl.Expr:
    """The 0-based dense rank of ``key`` (Int64): equal keys share a code, codes follow the keys' sorted order.

    Parameters
    ----------
    key : sequence of str or polars.Expr
        Columns (compared together, as a struct: nulls sort first) or an expression.

    Returns
    -------
    polars.Expr

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"a": ["y", "x", "y", None], "b": [1, 1, 1, 2]})
    >>> df.select(dense_code(["a", "b"]))["a"].to_list()
    [2, 1, 2, 0]
    >>> df.select(dense_code(pl.col("b")))["b"].to_list()
    [0, 0, 0, 1]
    """
    expr = key if isinstance(key, pl.Expr) else pl.struct(list(key))
    return expr.rank("dense").cast(pl.Int64) - 1


def group_codes(
    df: pl.DataFrame, by: Sequence[str], *, code_column: str | None = None
) -> tuple[np.ndarray, pl.DataFrame]:
    """Each row's group code (:func:`dense_code` of ``by``) and the groups' keys in code order.

    Parameters
    ----------
    df : polars.DataFrame
        The rows.
    by : sequence of str
        The grouping columns; none: every row in group 0 and an empty key frame.
    code_column : str, optional
        Also give the key frame the code, as an Int64 column of this name.

    Returns
    -------
    (numpy.ndarray, polars.DataFrame)
        The int64 code of each row, and one row per group (row ``i`` holds code ``i``'s
        values of ``by``; nulls sort first).

    Examples
    --------
    >>> import polars as pl
    >>> codes, keys = group_codes(pl.DataFrame({"s": ["b", "a", "b"], "x": [1, 2, 3]}), ["s"])
    >>> codes.tolist(), keys["s"].to_list()
    ([1, 0, 1], ['a', 'b'])
    >>> group_codes(pl.DataFrame({"s": ["b", "a"]}), ["s"], code_column="_group")[1].rows()
    [('a', 0), ('b', 1)]
    """
    by = list(by)
    if not by:
        return np.zeros(df.height, dtype=np.int64), pl.DataFrame()
    codes = df.select(dense_code(by)).to_series().to_numpy()
    name = code_column if code_column is not None else "_code" + "_" * max(len(c) for c in by)  # not a by name
    keys = df.select(by).with_columns(pl.Series(name, codes)).unique(name).sort(name)
    return codes, keys if code_column is not None else keys.drop(name)
