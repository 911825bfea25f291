"""Lexical kernels of the test-set generator: content-term matrices, related chunks, shingle duplicates.

Every text is tokenised by ragframe's text engine (:func:`ragframe.kernels.text.tokenize_vocabulary`,
the heuristics' rules) and its stop words (:func:`ragframe.metrics.text_engine.stop_words`) are
left out, so "related" means sharing content words, as the heuristic metrics read them; no
embedding model is needed. Similarities are sparse matrix products (SciPy), never a loop over
pairs.

Examples
--------
>>> import polars as pl
>>> m = term_matrix(pl.Series(["Paris is the capital of France.", "France's capital is Paris.", "Rome."]))
>>> m.counts.shape
(3, 4)
>>> [round(v, 3) for v in tfidf_cosine(m, [0])[0].tolist()]
[1.0, 1.0, 0.0]
>>> near_duplicates(["What is the capital of France?", "What's the capital of France?", "Who wrote Hamlet?"])
[None, 0, None]
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ragframe.kernels.text import tokenize_vocabulary
from ragframe.metrics.text_engine import stop_words

__all__ = [
    "SHINGLE_CHARS",
    "DUPLICATE_JACCARD",
    "TermMatrix",
    "term_matrix",
    "tfidf_cosine",
    "containment",
    "shingle_jaccard",
    "near_duplicates",
    "normalized",
]

#: Characters per shingle of a question (over its content words joined by single spaces).
SHINGLE_CHARS = 4
#: Two questions whose shingle sets have a Jaccard similarity at or above this are duplicates.
DUPLICATE_JACCARD = 0.6


@dataclass(frozen=True)
class TermMatrix:
    """Content-term counts of texts: ``counts`` (texts x vocabulary, CSR) and the ``vocabulary`` strings."""

    counts: Any  # scipy.sparse.csr_matrix (SciPy is imported on first use, not by ``import ragframe``)
    vocabulary: pl.Series
    #: Distinct content words of each text outside ``vocabulary`` (when it was given), else None.
    outside: np.ndarray | None = None

    def idf(self) -> np.ndarray:
        """Smoothed inverse document frequency of each term: ``ln((1 + N) / (1 + df)) + 1``."""
        n = self.counts.shape[0]
        df = np.bincount(self.counts.indices, minlength=self.counts.shape[1])
        return np.log((1.0 + n) / (1.0 + df)) + 1.0

    @functools.cached_property
    def unit(self) -> Any:
        """The rows as unit-length log-tf x idf vectors (CSR), computed once."""
        import scipy.sparse as sp

        weighted = self.counts.copy()
        weighted.data = 1.0 + np.log(weighted.data)
        return _unit_rows(sp.csr_matrix(weighted @ sp.diags(self.idf())))


def term_matrix(texts: pl.Series, vocabulary: pl.Series | None = None) -> TermMatrix:
    """The content-term count matrix of ``texts`` (stop words out), optionally over a given vocabulary.

    Parameters
    ----------
    texts : polars.Series
        Strings (a null is a text without terms).
    vocabulary : polars.Series, optional
        The columns of another :class:`TermMatrix`; terms outside it are left out (to compare
        questions with a corpus's chunks in the corpus's columns).

    Returns
    -------
    TermMatrix
    """
    import scipy.sparse as sp

    texts = texts.cast(pl.String).fill_null("")
    ids, lengths, size, words = tokenize_vocabulary(texts)
    rows = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    stop = (words.is_in(stop_words().implode()) | (words.str.len_chars() < 2)).to_numpy()
    keep = ~stop[ids] if ids.size else np.zeros(0, dtype=bool)
    if vocabulary is None:
        kept = np.flatnonzero(~stop)
        column = np.full(size, -1, dtype=np.int64)
        column[kept] = np.arange(kept.size)
        out_words = words.gather(kept)
    else:
        position = pl.DataFrame({"w": vocabulary, "c": np.arange(vocabulary.len())})
        joined = pl.DataFrame({"w": words}).join(position, on="w", how="left", maintain_order="left")
        column = joined["c"].fill_null(-1).to_numpy().astype(np.int64)
        out_words = vocabulary
    cols = column[ids] if ids.size else np.zeros(0, dtype=np.int64)
    unknown = keep & (cols < 0)
    outside = np.zeros(lengths.size, dtype=np.int64)
    if unknown.any():
        pairs = np.unique(np.stack([rows[unknown], ids[unknown]]), axis=1)
        outside = np.bincount(pairs[0], minlength=lengths.size)
    keep &= cols >= 0
    data = np.ones(int(keep.sum()))
    counts = sp.csr_matrix((data, (rows[keep], cols[keep])), shape=(lengths.size, out_words.len()))
    counts.sum_duplicates()
    return TermMatrix(counts, out_words, outside)


def _unit_rows(matrix: Any) -> Any:

    import scipy.sparse as sp

    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ matrix)


def tfidf_cosine(matrix: TermMatrix, rows: Sequence[int] | np.ndarray) -> np.ndarray:
    """Cosine similarity of log-tf x idf vectors of the texts ``rows`` with every text: a dense (len(rows), N) array."""
    unit = matrix.unit
    picked = unit[np.asarray(rows, dtype=np.int64)]
    return (unit @ picked.T).T.toarray()  # N x len(rows) product: no transpose of the whole corpus


def containment(left: TermMatrix, right: Any) -> np.ndarray:
    """Share of each ``left`` text's distinct content words found in the ``right`` row of the same index.

    ``left``'s words outside its vocabulary count as not found; a text without content words is 1.0.
    """
    a, b = left.counts.copy(), right.copy()
    a.data[:], b.data[:] = 1.0, 1.0
    shared = np.asarray(a.multiply(b).sum(axis=1)).ravel()
    sizes = np.asarray(a.sum(axis=1)).ravel() + (0 if left.outside is None else left.outside)
    return np.where(sizes > 0, shared / np.maximum(sizes, 1), 1.0)


def normalized(texts: Sequence[str]) -> list[str]:
    """Each text as its content words joined by single spaces (a text without any keeps all its tokens).

    Content words are ragframe's tokens (lower-cased, punctuation out) without stop words and
    one-letter tokens.

    Examples
    --------
    >>> normalized(["What's the capital of France?", "Who is he?"])
    ['capital france', 'who is he']
    """
    series = pl.Series(list(texts), dtype=pl.String)
    ids, lengths, _, words = tokenize_vocabulary(series)
    flat = words.gather(ids).to_list() if ids.size else []
    stop = set(stop_words().to_list())
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    out = []
    for i in range(lengths.size):
        tokens = flat[bounds[i] : bounds[i + 1]]
        content = [t for t in tokens if t not in stop and len(t) > 1]
        out.append(" ".join(content or tokens))
    return out


def _shingle_matrix(texts: Sequence[str]) -> Any:
    """Binary text x shingle matrix of the character shingles of the normalized texts."""
    import scipy.sparse as sp

    norm = normalized(texts)
    k = SHINGLE_CHARS
    long = (
        pl.DataFrame({"t": norm})
        .with_row_index("row")
        .with_columns(s=pl.int_ranges(0, pl.max_horizontal(pl.col("t").str.len_chars() - k + 1, 1)))
        .explode("s")
        .with_columns(g=pl.col("t").str.slice(pl.col("s"), k))
    )
    codes = long["g"].cast(pl.Categorical).to_physical().to_numpy().astype(np.int64)
    rows = long["row"].to_numpy().astype(np.int64)
    matrix = sp.csr_matrix((np.ones(rows.size), (rows, codes)), shape=(len(norm), int(codes.max(initial=-1)) + 1))
    matrix.sum_duplicates()
    matrix.data[:] = 1.0
    return matrix


def shingle_jaccard(texts: Sequence[str]) -> np.ndarray:
    """Exact Jaccard similarity of the character-shingle sets of every pair of texts: a dense (n, n) array.

    Examples
    --------
    >>> shingle_jaccard(["Who wrote Hamlet?", "who wrote hamlet", "Who wrote Macbeth?"])[0].round(3).tolist()
    [1.0, 1.0, 0.188]
    """
    if not len(texts):
        return np.zeros((0, 0))
    matrix = _shingle_matrix(texts)
    inter = np.asarray((matrix @ matrix.T).todense())
    sizes = np.asarray(matrix.sum(axis=1)).ravel()
    union = sizes[:, None] + sizes[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 1.0)


def near_duplicates(texts: Sequence[str], threshold: float = DUPLICATE_JACCARD, earlier: int = 0) -> list[int | None]:
    """For each text, the index of an earlier kept text it duplicates (Jaccard >= threshold), else None.

    Texts are taken in order; a text is kept when it duplicates no kept text. The first
    ``earlier`` texts are already kept (accepted in an earlier round): they are never
    themselves marked.
    """
    similarity = shingle_jaccard(texts)
    kept = np.zeros(len(texts), dtype=bool)
    kept[:earlier] = True
    out: list[int | None] = [None] * len(texts)
    for i in range(earlier, len(texts)):
        hits = np.flatnonzero(kept[:i] & (similarity[i, :i] >= threshold))
        if hits.size:
            out[i] = int(hits[0])
        else:
            kept[i] = True
    return out
