"""The Parquet files of a log: a file, a folder (searched recursively) or a glob, never a ragframe output folder's."""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Sequence
from pathlib import Path

from ragframe.exceptions import (
    InputFileError,
    InvalidParameterError,
)
from ragframe.io.output import MANIFEST

__all__ = ["source_files"]


def source_files(source: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """The Parquet files of ``source``: a file, a folder (searched recursively) or a glob; sorted.

    A folder or a glob never yields the files of a ragframe output folder (a folder holding
    the ``manifest.json`` of an :func:`evaluate_parquet` run, such as an output folder placed
    inside the log's folder): those are scores, not a log. A file named on its own is read.

    Examples
    --------
    >>> source_files("no/such/*.parquet")
    Traceback (most recent call last):
    ragframe.exceptions.InputFileError: no Parquet file matches 'no/such/*.parquet'
    """
    sources = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not sources:
        raise InvalidParameterError("source is an empty list: give a Parquet file, a folder or a glob")
    files: list[Path] = []
    outputs: dict[Path, bool] = {}  # folder -> holds a ragframe manifest (each folder read once)
    for item in sources:
        path = Path(item)
        if path.is_dir():
            if _is_output_folder(path, outputs):
                raise InputFileError(
                    f"{str(item)!r} is a ragframe output folder (it holds {MANIFEST}), not a log; "
                    f"name its files to score them again (such as {str(path / 'scores' / '*.parquet')!r})"
                )
            found = _parquet_files_under(path, outputs)
        elif path.is_file():
            found = [path]
        else:
            found, inside = _glob_outside_outputs(str(item), outputs)
            if not found and inside:
                raise InputFileError(_only_output_files(str(item), inside, outputs))
        if not found:
            raise InputFileError(f"no Parquet file matches {str(item)!r}")
        files.extend(found)
    return files


def _is_output_folder(folder: Path, seen: dict[Path, bool]) -> bool:
    """Whether ``folder`` holds the manifest of an evaluate_parquet run (JSON with ``finished``)."""
    if folder not in seen:
        manifest = folder / MANIFEST
        try:
            content = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else None
        except (OSError, ValueError):  # another program's manifest.json: not ours
            content = None
        seen[folder] = isinstance(content, dict) and "finished" in content
    return seen[folder]


def _parquet_files_under(root: Path, outputs: dict[Path, bool]) -> list[Path]:
    """Every ``*.parquet`` file under ``root``, leaving out ragframe output folders."""
    found: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        here = Path(folder)
        if _is_output_folder(here, outputs):
            subfolders[:] = []
            continue
        found += [here / name for name in names if name.endswith(".parquet") and (here / name).is_file()]
    return sorted(found)


def _only_output_files(pattern: str, inside: list[Path], outputs: dict[Path, bool]) -> str:
    """Why a glob whose every match lies in a ragframe output folder reads nothing, and what to name instead."""
    folders = sorted({folder for path in inside for folder in [path.parent, *path.parents] if outputs.get(folder)})
    logs = [p for p in inside if outputs.get(p.parent) and p.name != "summary.parquet"]  # a log left beside the outputs
    message = (
        f"{pattern!r} matches only files inside the ragframe output folder {str(folders[0])!r} (it holds "
        f"{MANIFEST}: scores, not a log)"
    )
    if logs:
        named = ", ".join(repr(str(p)) for p in logs[:3]) + (", ..." if len(logs) > 3 else "")
        message += f"; name the log's files themselves to read them ({named}) and write outputs to another folder"
    return message


def _glob_outside_outputs(pattern: str, outputs: dict[Path, bool]) -> tuple[list[Path], list[Path]]:
    """The files ``pattern`` matches outside ragframe output folders below its fixed part, and those inside."""
    parts = Path(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), len(parts))
    root = Path(*parts[:fixed]) if fixed else Path()
    found, inside = [], []
    for match in glob.glob(pattern, recursive=True):
        path = Path(match)
        if not path.is_file():
            continue
        try:
            inner = path.parent.relative_to(root).parts
        except ValueError:  # a match outside the fixed part (``..`` in the pattern): check its folder alone
            inner, root_of_match = (), path.parent
        else:
            root_of_match = root
        folders = [root_of_match / Path(*inner[:i]) for i in range(len(inner) + 1)]
        if not any(_is_output_folder(folder, outputs) for folder in folders):
            found.append(path)
        else:
            inside.append(path)
    return sorted(found), sorted(inside)
