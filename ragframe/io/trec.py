"""Reading and writing TREC run and qrels files as tables.

A TREC run file has lines ``qid Q0 docno rank score tag`` and a qrels file
``qid iter docno rel``, separated by ASCII whitespace (space, tab, ``\\r``, ``\\f``,
``\\v``: C's ``isspace``, as trec_eval splits them; other Unicode spaces are part of a
field). The rules follow trec_eval 10's readers:

* a qrels line has exactly four fields; a run line at least six, and fields after the
  sixth are ignored (trec_eval's own test run ``results.trunc`` has such lines);
* a (query, docno) pair appears at most once in a run file (trec_eval stops with
  "duplicate docs"): a repeated pair is an :class:`~ragframe.exceptions.InputFileError`
  naming the file, both line numbers and the docno;
* blank lines and lines starting with ``#`` are skipped (trec_eval 10 comments); a
  ``#`` inside a docno is part of the docno;
* a UTF-8 byte order mark at the start of the file (or of the decompressed content of a
  gzip file) is removed, so the first query id is read without it (trec_eval would keep
  it as part of the id).

A malformed line, a non-numeric field or a NaN score (which has no rank: trec_eval would
sort it anywhere) is a :class:`~ragframe.exceptions.SchemaError` naming the file and the
line number; a missing, undecodable or damaged file an
:class:`~ragframe.exceptions.InputFileError`. Parsing is one regular expression over the
whole file, not a Python loop over lines.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import polars as pl

from ragframe import validate
from ragframe.exceptions import InputFileError, SchemaError
from ragframe.public import public
from ragframe.schema import first_true_row, id_dtype_ok, integer_grades, to_polars

__all__ = ["read_trec_run", "read_qrels", "write_trec_run", "write_qrels"]

_SPACE = r"[ \t\n\r\f\v]"  # C's isspace in the "C" locale, which trec_eval splits on
_FIELD = r"([^ \t\n\r\f\v]+)"
_BOM = b"\xef\xbb\xbf"


def _read_lines(path: str | os.PathLike[str]) -> pl.DataFrame:
    """The file's lines that hold data (``line_no`` counted from 1 over every line, ``line``)."""
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"no such file: {str(p)!r}")
    data = p.read_bytes()
    if data.startswith(b"\x1f\x8b"):
        import gzip

        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise InputFileError(f"cannot decompress {str(p)!r}: {exc}") from exc
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(f"line {line_no} of {str(p)!r} is not UTF-8 ({exc.reason})") from None
    pieces = text.split("\n")
    if pieces and pieces[-1] == "":
        pieces.pop()
    lines = pl.Series("line", pieces, dtype=pl.String)
    numbered = pl.DataFrame({"line_no": pl.int_range(1, lines.len() + 1, eager=True), "line": lines})
    stripped = pl.col("line").str.strip_chars(" \t\n\r\f\v")
    return numbered.filter((stripped != "") & ~stripped.str.starts_with("#"))


def _parse(path: str | os.PathLike[str], names: list[str], *, extra_fields: bool = False) -> pl.DataFrame:
    """One column per field name; ``extra_fields`` allows (and ignores) fields after the last name."""
    lines = _read_lines(path)
    fields = f"{_SPACE}+".join([_FIELD] * len(names))
    end = f"(?:{_SPACE}|$)" if extra_fields else f"{_SPACE}*$"
    pattern = f"^{_SPACE}*{fields}{end}"
    parsed = lines.select(
        "line_no", "line", pl.col("line").str.extract_groups(pattern).struct.rename_fields(names).alias("f")
    ).unnest("f")
    bad = parsed.get_column(names[0]).is_null()
    if bad.any():
        at = parsed.row(first_true_row(bad) or 0, named=True)
        count = f"at least {len(names)}" if extra_fields else f"exactly {len(names)}"
        raise SchemaError(
            f"malformed line {at['line_no']} in {str(path)!r}",
            expected=f"{count} whitespace-separated fields ({' '.join(names)})",
            found=repr(at["line"][:200]),
        )
    return parsed


def _refuse_duplicates(df: pl.DataFrame, path: Any) -> None:
    """trec_eval refuses a docno retrieved twice for one query: so does ragframe, naming both lines."""
    pair = pl.struct("query_id", "doc_id")
    repeated = df.select(~pair.is_first_distinct()).to_series()
    row = first_true_row(repeated)
    if row is None:
        return
    at = df.row(row, named=True)
    first = df.filter((pl.col("query_id") == at["query_id"]) & (pl.col("doc_id") == at["doc_id"])).item(0, "line_no")
    raise InputFileError(
        f"duplicate docno {at['doc_id']!r} for query {at['query_id']!r} at line {at['line_no']} "
        f"of {str(path)!r} (first at line {first}); a run lists each document at most once per query, "
        "as trec_eval requires"
    )


def _to_number(df: pl.DataFrame, column: str, dtype: pl.DataType, path: Any) -> pl.DataFrame:
    converted = df.get_column(column).cast(dtype, strict=False)
    bad = converted.is_null()
    if bad.any():
        at = df.row(first_true_row(bad) or 0, named=True)
        raise SchemaError(
            f"line {at['line_no']} of {str(path)!r} has a non-numeric {column}",
            column=column,
            expected=str(dtype),
            found=repr(at[column]),
        )
    return df.with_columns(converted)


def _refuse_nan(df: pl.DataFrame, column: str, path: Any) -> None:
    """A NaN number is an error naming its line of the file (a row index would not lead to it)."""
    row = first_true_row(df.get_column(column).is_nan())
    if row is not None:
        at = df.row(row, named=True)
        raise SchemaError(
            f"line {at['line_no']} of {str(path)!r} has a NaN {column}",
            column=column,
            expected="a number",
            found=repr(at["line"][:200]),
        )


@public
def read_trec_run(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a TREC run file (plain or gzip) into ``query_id, q0, doc_id, rank, score, tag``.

    Parameters
    ----------
    path : str or os.PathLike
        The run file; gzip-compressed content is recognised by its magic bytes.

    Returns
    -------
    polars.DataFrame
        One row per line, in file order: ``query_id, q0, doc_id, tag`` as String, ``rank``
        Int64 and ``score`` Float64 (the file's ranks are kept; :func:`ragframe.evaluate_run`
        ranks by score, as trec_eval does).

    Examples
    --------
    >>> from ragframe.datasets import example_paths
    >>> run = read_trec_run(example_paths()["bm25"])
    >>> run.columns, run.height
    (['query_id', 'q0', 'doc_id', 'rank', 'score', 'tag'], 4300)
    """
    names = ["query_id", "q0", "doc_id", "rank", "score", "tag"]
    df = _parse(path, names, extra_fields=True)
    _refuse_duplicates(df, path)
    df = _to_number(df, "rank", pl.Int64, path)
    df = _to_number(df, "score", pl.Float64, path)
    _refuse_nan(df, "score", path)
    return df.select(names)


@public
def read_qrels(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Read a TREC qrels file (plain or gzip) into ``query_id, iteration, doc_id, relevance``.

    Parameters
    ----------
    path : str or os.PathLike
        The qrels file; gzip-compressed content is recognised by its magic bytes.

    Returns
    -------
    polars.DataFrame
        One row per line, in file order: ``query_id, iteration, doc_id`` as String and
        ``relevance`` Int64.

    Examples
    --------
    >>> from ragframe.datasets import example_paths
    >>> qrels = read_qrels(example_paths()["qrels"])
    >>> qrels.columns, qrels.height
    (['query_id', 'iteration', 'doc_id', 'relevance'], 9260)
    """
    names = ["query_id", "iteration", "doc_id", "relevance"]
    df = _parse(path, names)
    df = _to_number(df, "relevance", pl.Int64, path)
    return df.select(names)


def _field(df: pl.DataFrame, column: str, *, query: bool = False) -> pl.Expr:
    """An id column as the text of one TREC field: str or int ids, none null, empty or with whitespace.

    A query id starting with ``#`` would make its line a comment: refused too.
    """
    series = df.get_column(column)
    if not id_dtype_ok(series.dtype):
        raise SchemaError("wrong dtype", column=column, expected="str or int", found=str(series.dtype))
    text = series.cast(pl.String)
    bad = text.is_null() | (text == "") | text.str.contains(_SPACE)
    if query:
        bad = bad | text.str.starts_with("#")
    row = first_true_row(bad)
    if row is not None:
        raise SchemaError(
            "id that cannot be a TREC field",
            column=column,
            row=row,
            expected="a non-empty id without whitespace" + (" nor a leading '#'" if query else ""),
            found=repr(text[row]),
        )
    return pl.lit(text)


@public
def write_trec_run(
    run: Any,
    path: str | os.PathLike[str],
    *,
    tag: str | None = None,
    query_id: str = "query_id",
    doc_id: str = "doc_id",
    score: str = "score",
) -> None:
    """Write a run table as a TREC run file, ranked as trec_eval ranks it.

    Rows are ordered by query id, then score descending, then doc id descending,
    and numbered from 1; scores are written with full precision. ``tag`` defaults
    to the run's ``tag`` column, else ``"ragframe"``. A file :func:`read_trec_run`
    would refuse is never written: ids must be non-empty and free of whitespace,
    scores numbers (no null or NaN), and a (query, doc) pair must not repeat.

    Parameters
    ----------
    run : frame
        A polars, pyarrow or pandas table with query id, doc id and score columns (ids str
        or int); other columns are ignored, except ``tag`` when no ``tag=`` is given.
    path : str or os.PathLike
        The file to write (replaced when it exists).
    tag : str, optional
        The run tag of every line (non-empty, no whitespace).
    query_id, doc_id, score : str
        Names of the query id, doc id and score columns.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> run = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "score": [1.5, 2.0]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "run.txt"
    ...     write_trec_run(run, path, tag="demo")
    ...     print(path.read_text(), end="")
    q1 Q0 d2 1 2.0 demo
    q1 Q0 d1 2 1.5 demo
    """
    names = [validate.column_name(v, n) for v, n in ((query_id, "query_id"), (doc_id, "doc_id"), (score, "score"))]
    if tag is not None and (not isinstance(tag, str) or not tag or re.search(_SPACE, tag)):
        raise validate.fail("tag", "None or a non-empty run tag without whitespace", tag)
    df = to_polars(run)
    tag_expr = pl.lit(tag) if tag is not None else (_field(df, "tag") if "tag" in df.columns else pl.lit("ragframe"))
    scores = df.get_column(score)
    if not scores.dtype.is_numeric():
        raise SchemaError("wrong dtype", column=score, expected="a number", found=str(scores.dtype))
    row = first_true_row(scores.cast(pl.Float64).is_null() | scores.cast(pl.Float64).is_nan())
    if row is not None:
        raise SchemaError("null or NaN score", column=score, row=row, expected="a number", found=str(scores[row]))
    out = df.select(
        _field(df, names[0], query=True).alias("q"),
        pl.lit("Q0").alias("q0"),
        _field(df, names[1]).alias("d"),
        pl.col(score).cast(pl.Float64).alias("s"),
        tag_expr.cast(pl.String).alias("t"),
    )
    repeated = first_true_row(~out.select(pl.struct("q", "d").is_first_distinct()).to_series())
    if repeated is not None:
        raise SchemaError(
            "a document listed twice for one query (trec_eval refuses such runs)",
            column=doc_id,
            row=repeated,
            expected="each (query, doc) once",
            found=f"{out.item(repeated, 'd')!r} again for query {out.item(repeated, 'q')!r}",
        )
    out = (
        out.sort(["q", "s", "d"], descending=[False, True, True])
        .with_columns(pl.int_range(1, pl.len() + 1).over("q").alias("r"))
        .select("q", "q0", "d", "r", "s", "t")
    )
    out.write_csv(path, separator=" ", include_header=False, quote_style="never")


@public
def write_qrels(
    qrels: Any,
    path: str | os.PathLike[str],
    *,
    query_id: str = "query_id",
    doc_id: str = "doc_id",
    relevance: str = "relevance",
) -> None:
    """Write a judgments table as a TREC qrels file (``qid 0 docno rel``).

    Grades are integers (a float column only when every grade is a whole number, never
    truncated); ids must be non-empty and free of whitespace.

    Parameters
    ----------
    qrels : frame
        A polars, pyarrow or pandas table with query id, doc id and grade columns (ids str
        or int, no null grade); other columns are ignored.
    path : str or os.PathLike
        The file to write (replaced when it exists). Lines are written in the table's order.
    query_id, doc_id, relevance : str
        Names of the query id, doc id and grade columns.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import polars as pl
    >>> qrels = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": [2.0, 0.0]})
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "qrels.txt"
    ...     write_qrels(qrels, path)
    ...     print(path.read_text(), end="")
    ...     read_qrels(path)["relevance"].to_list()
    q1 0 d1 2
    q1 0 d2 0
    [2, 0]
    """
    names = [
        validate.column_name(v, n) for v, n in ((query_id, "query_id"), (doc_id, "doc_id"), (relevance, "relevance"))
    ]
    df = to_polars(qrels, names)
    grades = integer_grades(df.get_column(relevance), relevance)
    row = first_true_row(grades.is_null())
    if row is not None:
        raise SchemaError("null grade", column=relevance, row=row, expected="int", found="null")
    out = df.select(
        _field(df, names[0], query=True),
        pl.lit("0"),
        _field(df, names[1]),
        pl.lit(grades),
    )
    out.write_csv(path, separator=" ", include_header=False, quote_style="never")
