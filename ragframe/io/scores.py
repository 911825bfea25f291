"""Read scored frames back: one Parquet file, a folder, a glob, CSV, JSON/NDJSON, or an ``evaluate_parquet`` output.

:func:`read_scores` is what ``ragframe summary``, ``compare`` and ``gate`` read their
inputs with, so the output folder of ``ragframe eval`` can be passed as it is.
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import polars as pl

from ragframe import validate
from ragframe.exceptions import InputFileError

__all__ = ["read_scores"]

_GLOB_CHARACTERS = "*?["


def read_scores(path: str | os.PathLike[str], /) -> pl.DataFrame:
    """Read scored rows (or a summary) from a file, folder, glob or ``evaluate_parquet`` output.

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
    if not isinstance(path, (str, os.PathLike)):
        raise validate.fail("read_scores", "path", "a path (str or os.PathLike)", path)
    text = os.fspath(path)
    if "://" in text:
        try:
            return pl.scan_parquet(text).collect()
        except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
            raise InputFileError(f"read_scores: cannot read {text!r}: {_first_line(exc)}") from exc
    local = Path(text)
    if local.is_dir():
        return _read_parquet_files(_folder_files(local), text)
    if local.is_file():
        return _read_file(local)
    if not any(c in text for c in _GLOB_CHARACTERS):
        raise InputFileError(f"read_scores: no such file or folder: {text!r}")
    matches = sorted(p for p in glob.glob(text, recursive=True) if Path(p).is_file())
    if not matches:
        raise InputFileError(f"read_scores: no file matches the glob {text!r}")
    return _read_parquet_files(matches, text)


def _folder_files(folder: Path) -> list[str]:
    """The Parquet files to read in ``folder`` (``scores/`` only in an evaluate_parquet output)."""
    manifest = folder / "manifest.json"
    run = _run_manifest(manifest) if manifest.is_file() else None
    if run is not None:
        _check_complete(run, folder)
        folder = folder / "scores"
        if not folder.is_dir():
            raise InputFileError(f"read_scores: {str(folder.parent)!r} is an evaluate_parquet output without scores/")
    files = sorted(
        p
        for p in folder.rglob("*.parquet")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts)
    )
    if not files:
        raise InputFileError(f"read_scores: no Parquet file in the folder {str(folder)!r}")
    return [str(p) for p in files]


def _run_manifest(manifest: Path) -> dict | None:
    """The manifest of an evaluate_parquet run (it records the finished parts), or None for another JSON file."""
    try:
        content = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputFileError(f"read_scores: cannot read {str(manifest)!r}: {_first_line(exc)}") from exc
    return content if isinstance(content, dict) and "finished" in content else None


def _check_complete(content: dict, folder: Path) -> None:
    if content.get("complete") is not True:
        done = len(content.get("finished") or {})
        raise InputFileError(
            f"read_scores: the evaluate_parquet run in {str(folder)!r} is not complete ({done} part(s) finished); "
            f"rerun it with the same arguments to finish, or read {str(folder / 'scores')!r} for the parts written"
        )


def _read_file(path: Path) -> pl.DataFrame:
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            return pl.read_csv(path, infer_schema_length=10_000)
        if suffix in (".ndjson", ".jsonl"):
            return pl.read_ndjson(path)
        if suffix == ".json":
            return _read_json(path)
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise InputFileError(f"read_scores: cannot read {str(path)!r}: {_first_line(exc)}") from exc
    return _read_parquet_files([str(path)], str(path))


def _read_json(path: Path) -> pl.DataFrame:
    """A JSON array of records, or newline-delimited JSON under a .json name."""
    try:
        return pl.read_json(path)
    except (pl.exceptions.PolarsError, ValueError):
        return pl.read_ndjson(path)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _read_parquet_files(files: list[str], source: str) -> pl.DataFrame:
    """Every file's rows; schemas checked first, so a mismatch names the files and the column."""
    try:
        if len(files) == 1:
            return pl.scan_parquet(files[0], glob=False).collect()
        schemas = [pl.read_parquet_schema(f) for f in files]
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise InputFileError(f"read_scores: cannot read {source!r}: {_first_line(exc)}") from exc
    target = _common_schema(files, schemas)
    try:
        if all(schema == target for schema in schemas):
            return pl.scan_parquet(files, glob=False).collect()
        parts = [pl.scan_parquet(f, glob=False).cast(dict(target)) for f in files]  # Null columns take the dtype
        return pl.concat(parts, how="vertical").collect()
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise InputFileError(f"read_scores: cannot read {source!r}: {_first_line(exc)}") from exc


def _common_schema(files: list[str], schemas: list[pl.Schema]) -> pl.Schema:
    """The files' one schema: same columns in the same order, dtypes equal or Null (no values)."""
    names = list(schemas[0].names())
    dtypes: dict[str, tuple[pl.DataType, str]] = {}
    for file, schema in zip(files, schemas):
        if list(schema.names()) != names:
            raise InputFileError(
                f"read_scores: {file!r} has the columns {list(schema.names())}, but {files[0]!r} has {names}"
            )
        for name, dtype in schema.items():
            seen = dtypes.get(name)
            if seen is None or seen[0] == pl.Null:
                dtypes[name] = (dtype, file)
            elif dtype != seen[0] and dtype != pl.Null:
                raise InputFileError(
                    f"read_scores: column {name!r} is {seen[0]} in {seen[1]!r} but {dtype} in {file!r}; "
                    "the files of one folder or glob must agree on every column's dtype"
                )
    return pl.Schema({name: dtypes[name][0] for name in names})
