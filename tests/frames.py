"""Random input frames for the registry-driven suites.

``make_frame(inputs, n, seed)`` builds a polars DataFrame with the named contract columns,
including the awkward cases every metric must handle: null lists, empty lists, repeated ids,
tied scores, negative and zero grades, plus an untouched metadata column.
"""

from __future__ import annotations

import numpy as np
import polars as pl

_DOCS = [f"d{i}" for i in range(12)]


def _ids(rng: np.random.Generator, max_len: int) -> list[str]:
    length = int(rng.integers(0, max_len + 1))
    return [str(x) for x in rng.choice(_DOCS, size=length, replace=bool(rng.random() < 0.2))]


def make_frame(inputs: tuple[str, ...], n: int, seed: int) -> pl.DataFrame:
    """A frame with ``n`` rows holding the ``inputs`` columns and a ``meta`` column."""
    rng = np.random.default_rng(seed)
    data: dict[str, pl.Series] = {"meta": pl.Series("meta", [f"row{i}" for i in range(n)])}
    retrieved = [_ids(rng, 8) for _ in range(n)]
    for column in inputs:
        if column == "retrieved_ids":
            values = [None if rng.random() < 0.05 else r for r in retrieved]
            data[column] = pl.Series(column, values, dtype=pl.List(pl.String))
        elif column == "retrieved_scores":
            values = [
                None if rng.random() < 0.1 else [float(s) for s in rng.choice([0.0, 0.5, 1.0, 2.0], size=len(r))]
                for r in retrieved
            ]
            data[column] = pl.Series(column, values, dtype=pl.List(pl.Float64))
        elif column == "relevant_ids":
            values = [None if rng.random() < 0.08 else sorted(set(_ids(rng, 5))) for _ in range(n)]
            data[column] = pl.Series(column, values, dtype=pl.List(pl.String))
        elif column == "relevance":
            values = []
            for _ in range(n):
                if rng.random() < 0.08:
                    values.append(None)
                    continue
                docs = sorted(set(_ids(rng, 6)))
                values.append([{"id": d, "grade": int(rng.integers(-1, 4))} for d in docs])
            dtype = pl.List(pl.Struct({"id": pl.String, "grade": pl.Int64}))
            data[column] = pl.Series(column, values, dtype=dtype)
        else:
            raise KeyError(f"frames.make_frame does not know how to build column {column!r}")
    return pl.DataFrame(list(data.values()))
