"""The seeded plan of a test set: which chunks each candidate question is generated from, chosen before any call.

The corpus is read in the order of its ``(doc_id, chunk_id)`` (so the input's row order does
not matter) and every choice is a keyed hash (BLAKE2b of the seed, the query type and an id):

- **Quotas**: ``n`` is split among the query types in proportion to their weights (largest
  remainders; ties go to the type listed first).
- **Anchors** (stratified by document): for each type, the documents are ordered by their
  hash and each document's chunks by theirs (BLAKE2b keyed by the seed, of each id, mixed with
  the type by SplitMix64); the anchor order takes the first chunk of every
  document, then the second of every document, and so on. So a set of ``n`` questions draws
  from ``n`` different documents whenever the corpus has that many.
- **Partners** (``multi_chunk`` and ``comparison``): the chunk most similar to the anchor by
  TF-IDF cosine over content words (:func:`ragframe.testsets.lexical.tfidf_cosine`), at
  least ``min_overlap`` and below :data:`SAME_TEXT` (a copy of the anchor is not a second
  source). ``multi_chunk`` takes the best chunk of the anchor's own document when one
  qualifies, else the best chunk of any other document; ``comparison`` always takes another
  document's. An anchor without a partner is passed over; a pair already planned is not
  planned again.
- **Slots**: question ``k`` of a type is slot ``k``. Round 1 gives every slot the next anchor of
  its type; a slot whose candidate failed or was filtered gets the next one in the next round.
  The whole anchor order exists before the first call, and which anchor a slot gets depends
  only on which candidates failed, so a rerun over cached replies takes the same path.

Examples
--------
>>> quotas(10, {"single_chunk": 0.5, "multi_chunk": 0.3, "unanswerable": 0.2})
{'single_chunk': 5, 'multi_chunk': 3, 'unanswerable': 2}
>>> quotas(3, {"single_chunk": 1, "comparison": 1})
{'single_chunk': 2, 'comparison': 1}
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from ragframe.exceptions import InvalidParameterError, SchemaError
from ragframe.schema import id_kind
from ragframe.testsets.lexical import TermMatrix, term_matrix, tfidf_cosine
from ragframe.testsets.prompts import QUERY_TYPES

__all__ = [
    "DEFAULT_MIX",
    "SAME_TEXT",
    "Corpus",
    "Candidate",
    "TypePlan",
    "read_corpus",
    "query_mix",
    "quotas",
    "priority",
    "anchor_order",
    "hashes",
    "mix",
]

#: The default share of each query type.
DEFAULT_MIX = {"single_chunk": 0.4, "multi_chunk": 0.25, "comparison": 0.15, "unanswerable": 0.2}
#: A partner this similar to its anchor (TF-IDF cosine) is the same text, not a second source.
SAME_TEXT = 0.95
#: Anchors whose partners are computed in one sparse product.
_BLOCK = 16


def hashes(seed: int, values: list[Any]) -> np.ndarray:
    """BLAKE2b (keyed by ``seed``) of each value's ``repr``, as uint64; each distinct value hashed once.

    Examples
    --------
    >>> h = hashes(0, ["a", "b", "a"])
    >>> bool(h[0] == h[2] != h[1]), h.dtype.name
    (True, 'uint64')
    """
    key = str(seed).encode()
    table = {
        value: int.from_bytes(hashlib.blake2b(repr(value).encode("utf-8"), digest_size=8, key=key).digest(), "big")
        for value in dict.fromkeys(values)
    }
    return np.fromiter((table[v] for v in values), dtype=np.uint64, count=len(values))


def mix(values: np.ndarray, salt: str) -> np.ndarray:
    """SplitMix64 of ``values`` XOR the salt's hash: one independent order per salt (query type).

    Examples
    --------
    >>> a, b = mix(np.array([1, 2], dtype=np.uint64), "x"), mix(np.array([1, 2], dtype=np.uint64), "y")
    >>> bool((a != b).all()), a.dtype.name
    (True, 'uint64')
    """
    salted = int.from_bytes(hashlib.blake2b(salt.encode("utf-8"), digest_size=8).digest(), "big")
    with np.errstate(over="ignore"):
        z = values.astype(np.uint64) ^ np.uint64(salted)
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def priority(seed: int, *parts: Any) -> int:
    """A 64-bit keyed hash of ``parts``: the order of every choice of the plan.

    Examples
    --------
    >>> priority(0, "single_chunk", "d1") == priority(0, "single_chunk", "d1") != priority(1, "single_chunk", "d1")
    True
    """
    text = "\x1f".join(repr(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8, key=str(seed).encode()).digest(), "big")


@dataclass
class Corpus:
    """The checked corpus, sorted by (doc_id, chunk_id): ids, texts, extra columns and its term matrix."""

    frame: pl.DataFrame
    doc_id: str
    chunk_id: str
    text: str
    terms: TermMatrix = field(repr=False)
    _hashes: dict[tuple[int, str], np.ndarray] = field(default_factory=dict, repr=False)

    def id_hashes(self, seed: int, column: str) -> np.ndarray:
        """:func:`hashes` of a column's ids (doc or chunk), computed once per seed."""
        if (seed, column) not in self._hashes:
            self._hashes[(seed, column)] = hashes(seed, self.frame.get_column(column).to_list())
        return self._hashes[(seed, column)]

    @property
    def height(self) -> int:
        return self.frame.height

    def texts(self, rows: list[int]) -> list[str]:
        column = self.frame.get_column(self.text)
        return [column[r] for r in rows]

    def ids(self, rows: list[int]) -> list[Any]:
        column = self.frame.get_column(self.chunk_id)
        return [column[r] for r in rows]

    def doc(self, row: int) -> Any:
        return self.frame.get_column(self.doc_id)[row]


def read_corpus(frame: pl.DataFrame, doc_id: str, chunk_id: str, text: str) -> Corpus:
    """Check the corpus's columns (a :class:`~ragframe.exceptions.SchemaError` names the column and row)."""
    for column in (doc_id, chunk_id):
        kind = id_kind(frame.schema[column])
        if kind is None:
            raise SchemaError(
                "wrong dtype",
                column=column,
                expected="str or int ids",
                found=str(frame.schema[column]),
            )
        nulls = frame.get_column(column).is_null()
        if nulls.any():
            raise SchemaError("null id", column=column, row=int(nulls.arg_true()[0]), found="null")
    if frame.schema[text] != pl.String:
        raise SchemaError("wrong dtype", column=text, expected="str", found=str(frame.schema[text]))
    blank = frame.get_column(text).is_null() | (frame.get_column(text).str.strip_chars() == "")
    if blank.any():
        found = "null" if frame.get_column(text).is_null().any() else "an empty text"
        raise SchemaError("a chunk without text", column=text, row=int(blank.arg_true()[0]), found=found)
    repeated = frame.get_column(chunk_id).is_duplicated()
    if repeated.any():
        row = int(repeated.arg_true()[1])
        value = frame.get_column(chunk_id)[row]
        raise SchemaError(
            "chunk ids must be unique (they are the qrels of the set)",
            column=chunk_id, row=row, found=f"{value!r} again",
        )  # fmt: skip
    if frame.height == 0:
        raise SchemaError("the corpus has no chunk", column=text, found="0 rows")
    ordered = frame.sort([doc_id, chunk_id], maintain_order=True)
    return Corpus(ordered, doc_id, chunk_id, text, term_matrix(ordered.get_column(text)))


def query_mix(value: Any) -> dict[str, float]:
    """``query_types=``: None (the default mix), a list of names (equal shares) or {name: weight}."""
    if value is None:
        return dict(DEFAULT_MIX)
    if isinstance(value, str):
        value = [value]
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [(name, 1.0) for name in value]
    else:
        raise InvalidParameterError(
            f"query_types must be None, a list of names or a dict of name -> weight, found {value!r}"
        )
    out: dict[str, float] = {}
    for name, weight in items:
        if name not in QUERY_TYPES:
            raise InvalidParameterError(f"unknown query type {name!r}; known: {list(QUERY_TYPES)}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0:
            raise InvalidParameterError(f"query_types[{name!r}] must be a weight >= 0, found {weight!r}")
        out[name] = float(weight)
    if not out or sum(out.values()) <= 0:
        raise InvalidParameterError(f"query_types must give some type a positive weight, found {value!r}")
    return {name: out[name] for name in QUERY_TYPES if name in out}


def quotas(n: int, mix: Mapping[str, float]) -> dict[str, int]:
    """``n`` split among the types by weight: floors, then the largest remainders (ties: the type listed first)."""
    names = list(mix)
    weights = np.array([mix[name] for name in names], dtype=float)
    exact = n * weights / weights.sum()
    counts = np.floor(exact).astype(int)
    left = n - int(counts.sum())
    order = sorted(range(len(names)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:left]:
        counts[i] += 1
    return {name: int(count) for name, count in zip(names, counts, strict=True)}


def anchor_order(corpus: Corpus, seed: int, query_type: str) -> np.ndarray:
    """The corpus rows in the type's stratified order (module doc)."""
    keys = pl.DataFrame(
        {
            "row": np.arange(corpus.height),
            "doc": mix(corpus.id_hashes(seed, corpus.doc_id), f"{query_type}/doc"),
            "chunk": mix(corpus.id_hashes(seed, corpus.chunk_id), f"{query_type}/chunk"),
        },
        schema={"row": pl.Int64, "doc": pl.UInt64, "chunk": pl.UInt64},
    )
    keys = keys.with_columns(depth=pl.col("chunk").rank("ordinal").over("doc"))
    return keys.sort(["depth", "doc", "chunk"])["row"].to_numpy()


@dataclass(frozen=True)
class Candidate:
    """One planned generation: its slot, the corpus rows it shows (anchor first) and its persona."""

    query_type: str
    slot: int
    rows: tuple[int, ...]
    persona: str | None


@dataclass
class TypePlan:
    """The anchors of one query type, handed out in order; ``skipped`` counts anchors without a partner."""

    query_type: str
    quota: int
    order: np.ndarray
    position: int = 0
    skipped: int = 0
    used_pairs: set[tuple[int, int]] = field(default_factory=set)
    _block: tuple[int, np.ndarray] | None = field(default=None, repr=False)  # (start, similarities)

    def exhausted(self) -> bool:
        return self.position >= self.order.size

    def take(self, corpus: Corpus, min_overlap: float) -> tuple[int, ...] | None:
        """The next candidate's rows (None when the anchors ran out)."""
        while self.position < self.order.size:
            start = self.position
            block = self.order[start : start + _BLOCK]
            if self.query_type in ("single_chunk", "unanswerable"):
                self.position += 1
                return (int(block[0]),)
            if self._block is None or self._block[0] != start:
                self._block = (start, tfidf_cosine(corpus.terms, block))
            block = self.order[start : start + self._block[1].shape[0]]
            for i, anchor in enumerate(block):
                self.position = start + i + 1
                partner = self._partner(corpus, int(anchor), self._block[1][i], min_overlap)
                if partner is not None:
                    self.used_pairs.add((min(anchor, partner), max(anchor, partner)))
                    if i + 1 < block.size:  # the rest of the block's similarities serve the next take
                        self._block = (self.position, self._block[1][i + 1 :])
                    return (int(anchor), partner)
                self.skipped += 1
        return None

    def _partner(self, corpus: Corpus, anchor: int, similarity: np.ndarray, min_overlap: float) -> int | None:
        docs = corpus.frame.get_column(corpus.doc_id)
        same_doc = (docs == docs[anchor]).to_numpy()
        ok = (similarity >= min_overlap) & (similarity < SAME_TEXT)
        ok[anchor] = False
        for a, b in self.used_pairs:
            if a == anchor:
                ok[b] = False
            elif b == anchor:
                ok[a] = False
        pools = [ok & same_doc, ok & ~same_doc] if self.query_type == "multi_chunk" else [ok & ~same_doc]
        for pool in pools:
            if pool.any():
                rows = np.flatnonzero(pool)
                best = rows[np.lexsort((rows, -similarity[rows]))[0]]  # most similar; ties: corpus order
                return int(best)
        return None
