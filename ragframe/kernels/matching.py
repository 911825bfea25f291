"""Content matching: relevance from chunk texts and gold document texts (REMem's rule).

A retrieved chunk matches a gold document when, after normalisation, the chunk
is a substring of the document (case sensitive), or its JSON-escaped form (as
``json.dumps`` writes it, quotes included) is. Normalisation: a chunk starting
with ``"Date: "`` loses everything up to and including its first newline (all
of it when there is no newline); then a chunk starting with ``"user: "`` or
``"assistant: "`` keeps only the text after that prefix. A chunk empty after
normalisation matches nothing (the seed lets it match everything).

Each chunk is then given the id of the first gold document (in list order) it
matches, and ranking metrics follow as for ids: a later chunk of an already
found document is a repeat and counts as non-relevant, each gold document
counts once (identical gold texts count once). A chunk that matches several
gold documents is credited to the first of them only.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from ragframe.exceptions import SchemaError
from ragframe.schema import check_no_null_inside

__all__ = ["normalize_chunks", "json_escape", "contains_to_ids"]


def normalize_chunks(chunks: pl.Expr | pl.Series) -> pl.Expr | pl.Series:
    """Apply the chunk normalisation rules to a string column.

    Examples
    --------
    >>> import polars as pl
    >>> normalize_chunks(pl.Series(["Date: 2024\\nuser: hi", "assistant: ok", "Date: x"])).to_list()
    ['hi', 'ok', '']
    """
    undated = (
        pl.when(chunks.str.starts_with("Date: "))
        .then(
            pl.when(chunks.str.contains("\n", literal=True))
            .then(chunks.str.replace(r"(?s)^[^\n]*\n", ""))
            .otherwise(pl.lit(""))
        )
        .otherwise(chunks)
    )
    if isinstance(chunks, pl.Series):
        undated = pl.select(undated).to_series()
    return undated.str.replace(r"^(?:user|assistant): ", "")


_ASCII_ESCAPES = [
    ("\\", "\\\\"),
    ('"', '\\"'),
    ("\n", "\\n"),
    ("\r", "\\r"),
    ("\t", "\\t"),
    ("\b", "\\b"),
    ("\f", "\\f"),
]


def json_escape(texts: pl.Series) -> pl.Series:
    """``json.dumps`` of each string (quotes included), as a column.

    Printable ASCII text is escaped with vectorised replacements; only strings
    holding other characters (non-ASCII, rare control characters) go through
    ``json.dumps`` one by one, once per distinct string.

    Examples
    --------
    >>> import polars as pl
    >>> json_escape(pl.Series(['a "b"', "café"])).to_list()
    ['"a \\\\"b\\\\""', '"caf\\\\u00e9"']
    """
    out = texts
    for raw, escaped in _ASCII_ESCAPES:
        out = out.str.replace_all(raw, escaped, literal=True)
    out = '"' + out + '"'
    special = texts.str.contains(r"[^\x20-\x7e\n\r\t\x08\x0c]").fill_null(False)
    if special.any():
        distinct = texts.filter(special).unique()
        # one Python call per distinct non-ASCII string: not a per-row hot path
        mapping = pl.DataFrame({"t": distinct, "j": [json.dumps(t) for t in distinct.to_list()]})
        looked_up = pl.DataFrame({"t": texts}).join(mapping, on="t", how="left", maintain_order="left")["j"]
        out = pl.select(pl.when(pl.Series(special)).then(looked_up).otherwise(out)).to_series()
    return out


def _check_text_lists(view: pl.DataFrame, column: str) -> pl.Series:
    series = view.get_column(column)
    if not isinstance(series.dtype, pl.List) or series.dtype.inner != pl.String:
        raise SchemaError("wrong dtype", column=column, expected="list[str]", found=str(series.dtype))
    check_no_null_inside(series, column, what="null text inside a list")
    return series


def contains_to_ids(view: pl.DataFrame, chunks_col: str, gold_col: str) -> tuple[pl.Series, pl.Series]:
    """Turn chunk texts and gold texts into id lists for the ranking kernel.

    Returns ``(retrieved, relevant)`` as list[str] Series: gold document ``i`` of a
    row gets id ``"g<i>"`` (identical gold texts share the first id); a chunk gets
    the id of the first gold document it matches, or a unique ``"c<j>"``.
    Null lists stay null.
    """
    chunks = _check_text_lists(view, chunks_col)
    gold = _check_text_lists(view, gold_col)
    n = view.height
    chunk_len = chunks.list.len().fill_null(0).to_numpy().astype(np.int64)
    gold_len = gold.list.len().fill_null(0).to_numpy().astype(np.int64)
    flat_chunks = chunks.explode(empty_as_null=False, keep_nulls=False)
    flat_gold = gold.explode(empty_as_null=False, keep_nulls=False)
    chunk_row = np.repeat(np.arange(n), chunk_len)
    gold_row = np.repeat(np.arange(n), gold_len)
    gold_pos = np.arange(flat_gold.len()) - np.repeat(np.cumsum(gold_len) - gold_len, gold_len)

    gold_df = pl.DataFrame({"row": gold_row, "g": gold_pos, "text": flat_gold})
    # identical gold texts within a row are one document: the first index names it
    gold_df = gold_df.with_columns(pl.col("g").min().over("row", "text").alias("gid"))
    norm = normalize_chunks(flat_chunks)
    chunk_df = pl.DataFrame({"row": chunk_row, "c": np.arange(flat_chunks.len()), "chunk": norm})
    chunk_df = chunk_df.with_columns(esc=json_escape(chunk_df.get_column("chunk")))
    pairs = chunk_df.filter(pl.col("chunk") != "").join(gold_df, on="row", how="inner")
    hits = pairs.filter(
        pl.col("text").str.contains(pl.col("chunk"), literal=True)
        | pl.col("text").str.contains(pl.col("esc"), literal=True)
    )
    first = hits.group_by("c").agg(pl.col("gid").sort_by("g").first())
    chunk_ids = (
        chunk_df.select("c")
        .join(first, on="c", how="left", maintain_order="left")
        .select(
            pl.when(pl.col("gid").is_not_null())
            .then(pl.format("g{}", pl.col("gid")))
            .otherwise(pl.format("c{}", pl.col("c")))
        )
        .to_series()
    )
    gold_ids = gold_df.select(pl.format("g{}", pl.col("gid"))).to_series()
    retrieved = _rebuild(chunk_ids, chunk_len, chunks.is_null())
    relevant = _rebuild(gold_ids, gold_len, gold.is_null())
    return retrieved, relevant


def _rebuild(flat: pl.Series, lengths: np.ndarray, null: pl.Series) -> pl.Series:
    """Flat values + lengths -> a list column (null where ``null``)."""
    import pyarrow as pa

    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = flat.to_arrow()
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    arr = pa.LargeListArray.from_arrays(
        pa.array(offsets), values.cast(pa.large_string()), mask=pa.array(null.to_numpy())
    )
    return pl.Series(pl.from_arrow(arr)).cast(pl.List(pl.String))
