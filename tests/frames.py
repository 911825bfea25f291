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


_WORDS = (
    "the cat sat on a mat while Paris is the capital of France and dogs bark at night "
    "state-of-the-art retrieval costs $100 don't panic A+B <tag> İstanbul ΟΔΟΣ Straße café"
).split()
_ENDS = [". ", "! ", "? ", "\u2028", ". \u00a0", " ", "."]


def _text(rng: np.random.Generator, role: str) -> str | None:
    """A random text with sentence ends, Unicode oddities, nulls and empties."""
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.1:
        return ""
    pieces = []
    for _ in range(int(rng.integers(1, 4 if role == "question" else 6))):
        words = rng.choice(_WORDS, size=int(rng.integers(1, 9)))
        sentence = " ".join(str(w) for w in words)
        pieces.append(sentence[0].upper() + sentence[1:] + str(rng.choice(_ENDS)))
    return "".join(pieces)


_VERDICTS = ["Entailment", "Neutral", "Contradiction"]
_CLAIM_COLUMNS = ("answer2response", "response2answer", "retrieved2response", "retrieved2answer", "nuggets")


class _Claims:
    """Per row: answer claims R, reference claims G and passages P (each possibly 0), shared by the verdict columns."""

    def __init__(self, rng: np.random.Generator, n: int) -> None:
        self.rng = rng
        self.shapes = rng.integers(0, 4, size=(n, 3))
        self.n = n

    def verdicts(self, *shape: int) -> list:
        return self.rng.choice(_VERDICTS, size=shape, p=[0.5, 0.3, 0.2]).tolist()


def _claim_column(column: str, claims: _Claims) -> pl.Series:
    rng = claims.rng
    values: list = []
    for r, g, p in claims.shapes:
        if rng.random() < 0.05:
            values.append(None)
        elif column == "answer2response":
            values.append(claims.verdicts(r))
        elif column == "response2answer":
            values.append(claims.verdicts(g))
        elif column == "retrieved2response":
            values.append(claims.verdicts(r, p))
        elif column == "retrieved2answer":
            values.append(claims.verdicts(g, p))
        else:
            values.append(
                [
                    {"text": f"nugget {i}", "importance": str(rng.choice(["vital", "okay"])),
                     "assignment": str(rng.choice(["support", "partial_support", "not_support"]))}
                    for i in range(int(rng.integers(0, 6)))
                ]
            )  # fmt: skip
    if column == "nuggets":
        dtype = pl.List(pl.Struct({"text": pl.String, "importance": pl.String, "assignment": pl.String}))
    elif column.startswith("retrieved2"):
        dtype = pl.List(pl.List(pl.String))
    else:
        dtype = pl.List(pl.String)
    return pl.Series(column, values, dtype=dtype)


def make_frame(inputs: tuple[str, ...], n: int, seed: int) -> pl.DataFrame:
    """A frame with ``n`` rows holding the ``inputs`` columns and a ``meta`` column."""
    rng = np.random.default_rng(seed)
    data: dict[str, pl.Series] = {"meta": pl.Series("meta", [f"row{i}" for i in range(n)])}
    retrieved = [_ids(rng, 8) for _ in range(n)]
    claims = _Claims(np.random.default_rng([seed, 1]), n)  # its own stream: the other columns stay as they were
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
        elif column in ("question", "answer", "ground_truth"):
            data[column] = pl.Series(column, [_text(rng, column) for _ in range(n)], dtype=pl.String)
        elif column == "contexts":
            values = [
                None if rng.random() < 0.05 else [_text(rng, "context") or "" for _ in range(int(rng.integers(0, 5)))]
                for _ in range(n)
            ]
            data[column] = pl.Series(column, values, dtype=pl.List(pl.String))
        elif column in _CLAIM_COLUMNS:
            data[column] = _claim_column(column, claims)
        else:
            raise KeyError(f"frames.make_frame does not know how to build column {column!r}")
    return pl.DataFrame(list(data.values()))
