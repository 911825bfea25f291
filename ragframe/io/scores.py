"""Read scored frames back: one Parquet file, a folder, a glob, CSV, JSON/NDJSON, or an ``evaluate_parquet`` output.

:func:`read_scores` is what ``ragframe summary``, ``compare`` and ``gate`` read their
inputs with, so the output folder of ``ragframe eval`` can be passed as it is;
:func:`scan_scores` opens the same files lazily (what ``ragframe report`` reads).
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import polars as pl

from ragframe import validate
from ragframe.exceptions import InputFileError
from ragframe.public import public

__all__ = ["read_scores", "scan_scores"]

_GLOB_CHARACTERS = "*?["
_TEXT_SUFFIXES = (".csv", ".json", ".ndjson", ".jsonl")


def scan_scores(
    path: str | os.PathLike[str],
    /,
) -> pl.LazyFrame:
    """Open scored rows (or a summary) lazily: the files :func:`read_scores` reads, as one lazy frame.

    Parquet inputs (a file, a folder, a glob, a URL, an ``evaluate_parquet`` output) are
    scanned, so a caller reads only the columns it selects; CSV and JSON files are read at
    once (their lazy readers infer dtypes differently) and returned as a lazy frame. The
    paths are resolved and checked now (a run must be complete, the Parquet footers
    readable, the files' columns and dtypes in agreement); a damaged data page is an error
    of the ``collect``.

    Parameters
    ----------
    path : str or os.PathLike
        What :func:`read_scores` accepts.

    Returns
    -------
    polars.LazyFrame
        ``scan_scores(path).collect()`` equals ``read_scores(path)``.

    Raises
    ------
    InputFileError
        As :func:`read_scores`, the message starting with ``function``.

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> pl.DataFrame({"id": [1], "mrr": [0.5]}).write_parquet(folder / "part-0.parquet")
    >>> pl.DataFrame({"id": [2], "mrr": [None]}).write_parquet(folder / "part-1.parquet")
    >>> scan_scores(folder).select("mrr").collect()["mrr"].to_list()
    [0.5, None]
    >>> scan_scores("no-such-file.parquet")
    Traceback (most recent call last):
    ...
    ragframe.exceptions.InputFileError: no such file or folder: 'no-such-file.parquet'
    """
    if not isinstance(path, (str, os.PathLike)):
        raise validate.fail("path", "a path (str or os.PathLike)", path)
    text = os.fspath(path)
    if "://" in text:
        return pl.scan_parquet(text)
    local = Path(text)
    if local.is_dir():
        return _scan_files(_folder_files(local), text)
    if local.is_file():
        if local.suffix.lower() in _TEXT_SUFFIXES:
            return _read_text_file(local).lazy()
        return _scan_files([text], text)
    if not any(c in text for c in _GLOB_CHARACTERS):
        raise InputFileError(f"no such file or folder: {text!r}")
    matches = sorted(p for p in glob.glob(text, recursive=True) if Path(p).is_file())
    if not matches:
        raise InputFileError(f"no file matches the glob {text!r}")
    return _scan_files(matches, text)


@public
def read_scores(path: str | os.PathLike[str], /) -> pl.DataFrame:
    """Read scored rows (or a summary) from a file, folder, glob or ``evaluate_parquet`` output.

    ``read_scores(path)`` is ``scan_scores(path).collect()``, a read error of the collect
    raised as an :class:`~ragframe.exceptions.InputFileError` too.

    Parameters
    ----------
    path : str or os.PathLike
        - an :func:`ragframe.evaluate_parquet` / ``ragframe eval`` output folder (it holds
          ``manifest.json`` and ``scores/``): the Parquet parts of ``scores/`` only
          (``state/``, ``rejects/`` and ``summary.parquet`` are not scores); the run must
          be complete;
        - another folder: every ``*.parquet`` file under it, recursively, in path order
          (files and folders whose names start with ``.`` or ``_`` are skipped);
        - a glob (``runs/*/scores/*.parquet``) of Parquet files, or a Parquet URL;
        - a ``.csv``, ``.json`` (an array of records, or NDJSON), ``.ndjson`` or ``.jsonl``
          file; any other file is read as Parquet.
    Returns
    -------
    polars.DataFrame
        The rows of every file, in file order. Files of a folder or glob must agree on
        their columns and dtypes; a column that has no values in one file (Null dtype)
        takes the other files' dtype.

    Raises
    ------
    InputFileError
        The path does not exist, matches nothing, is unreadable or damaged, an
        ``evaluate_parquet`` run is incomplete, or files disagree on a column's dtype (the
        error names both files, the column and the two dtypes).

    Examples
    --------
    >>> import polars as pl, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> pl.DataFrame({"id": [1], "mrr": [0.5]}).write_parquet(folder / "part-0.parquet")
    >>> pl.DataFrame({"id": [2], "mrr": [None]}).write_parquet(folder / "part-1.parquet")
    >>> read_scores(folder).rows()
    [(1, 0.5), (2, None)]
    """
    frame = scan_scores(path)
    try:
        return frame.collect()
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise InputFileError(f"cannot read {os.fspath(path)!r}: {_first_line(exc)}") from exc


def _folder_files(folder: Path) -> list[str]:
    """The Parquet files to read in ``folder`` (``scores/`` only in an evaluate_parquet output)."""
    manifest = folder / "manifest.json"
    run = _run_manifest(manifest) if manifest.is_file() else None
    if run is not None:
        _check_complete(run, folder)
        folder = folder / "scores"
        if not folder.is_dir():
            raise InputFileError(f"{str(folder.parent)!r} is an evaluate_parquet output without scores/")
    files = sorted(
        p
        for p in folder.rglob("*.parquet")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts)
    )
    if not files:
        raise InputFileError(f"no Parquet file in the folder {str(folder)!r}")
    return [str(p) for p in files]


def _run_manifest(manifest: Path) -> dict | None:
    """The manifest of an evaluate_parquet run (it records the finished parts), or None for another JSON file."""
    try:
        content = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputFileError(f"cannot read {str(manifest)!r}: {_first_line(exc)}") from exc
    return content if isinstance(content, dict) and "finished" in content else None


def _check_complete(content: dict, folder: Path) -> None:
    if content.get("complete") is not True:
        done = len(content.get("finished") or {})
        raise InputFileError(
            f"the evaluate_parquet run in {str(folder)!r} is not complete ({done} part(s) finished); "
            f"rerun it with the same arguments to finish, or read {str(folder / 'scores')!r} for the parts written"
        )


def _read_text_file(path: Path) -> pl.DataFrame:
    """A CSV, JSON or NDJSON file, read whole."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            return pl.read_csv(path, infer_schema_length=10_000)
        if suffix in (".ndjson", ".jsonl"):
            return pl.read_ndjson(path)
        return _read_json(path)
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise InputFileError(f"cannot read {str(path)!r}: {_first_line(exc)}") from exc


def _read_json(path: Path) -> pl.DataFrame:
    """A JSON array of records, or newline-delimited JSON under a .json name."""
    try:
        return pl.read_json(path)
    except (pl.exceptions.PolarsError, ValueError):
        return pl.read_ndjson(path)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _scan_files(files: list[str], source: str) -> pl.LazyFrame:
    """The Parquet ``files`` as one lazy frame; their footers read now, so a mismatch names the files and the column."""
    schemas = []
    for file in files:  # a footer per file, to name the damaged one
        try:
            schemas.append(pl.read_parquet_schema(file))
        except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
            where = repr(source) if file == source else f"{file!r} of {source!r}"
            raise InputFileError(f"cannot read {where}: {_first_line(exc)}") from exc
    target = _common_schema(files, schemas)
    if len(files) == 1:
        return pl.scan_parquet(files[0], glob=False)
    if all(schema == target for schema in schemas):
        return pl.scan_parquet(files, glob=False)
    parts = [pl.scan_parquet(f, glob=False).cast(dict(target)) for f in files]  # Null columns take the dtype
    return pl.concat(parts, how="vertical")


def _common_schema(files: list[str], schemas: list[pl.Schema]) -> pl.Schema:
    """The files' one schema: same columns in the same order, dtypes equal or Null (no values)."""
    names = list(schemas[0].names())
    dtypes: dict[str, tuple[pl.DataType, str]] = {}
    for file, schema in zip(files, schemas):
        if list(schema.names()) != names:
            raise InputFileError(f"{file!r} has the columns {list(schema.names())}, but {files[0]!r} has {names}")
        for name, dtype in schema.items():
            seen = dtypes.get(name)
            if seen is None or seen[0] == pl.Null:
                dtypes[name] = (dtype, file)
            elif dtype != seen[0] and dtype != pl.Null:
                raise InputFileError(
                    f"column {name!r} is {seen[0]} in {seen[1]!r} but {dtype} in {file!r}; "
                    "the files of one folder or glob must agree on every column's dtype"
                )
    return pl.Schema({name: dtypes[name][0] for name in names})
