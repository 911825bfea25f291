"""An output folder of a Parquet run: atomic writes, the manifest, resuming, and what ``overwrite=True`` may remove.

Every file is written to a temporary name beside it and renamed (:func:`write_atomic`), so a
killed run leaves whole files only. The manifest (``manifest.json``) says which run made the
folder (source fingerprint, options, format) and which parts are finished: a run with the
same source and options resumes (:func:`open_output`), and ``overwrite=True`` removes only
the files a run's manifest lists (:func:`remove_output`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import polars as pl

from ragframe import secrets
from ragframe.exceptions import (
    InputFileError,
    RagframeError,
    ResumeError,
)
from ragframe.io.traces.stage import TRACE_REJECTS

__all__ = [
    "MANIFEST",
    "FORMAT_VERSION",
    "temporary_path",
    "write_atomic",
    "write_json_atomic",
    "open_output",
    "start_output",
    "is_run_manifest",
    "check_overwrite",
    "remove_output",
    "stored_manifest",
    "manifest_options",
    "manifest_value",
]

MANIFEST = "manifest.json"
FORMAT_VERSION = 3  # 2: the manifest holds the Evaluator's options; 3: and each batch's judge statuses


def temporary_path(path: Path) -> Path:
    """A hidden name beside ``path``, unique to this process (two writers never share one)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_atomic(frame: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(path)
    frame.write_parquet(temporary)
    os.replace(temporary, path)


def write_json_atomic(payload: dict[str, Any], path: Path) -> None:
    temporary = temporary_path(path)
    temporary.write_text(json.dumps(payload, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


def open_output(out: Path, expected: dict[str, Any], resume: bool, overwrite: bool) -> dict[str, Any]:
    """The manifest to continue from (fresh unless a matching one exists)."""
    manifest_path = out / MANIFEST
    fresh = {**expected, "finished": {}, "complete": False}
    ours = [out / "scores", out / "rejects", out / "state", out / "summary.parquet", manifest_path]
    if overwrite:
        remove_output(out)
        return fresh
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        words = {"source": "a different source", "options": "different options", "format": "an older output format"}
        seen = {**manifest, "options": secrets.comparable(manifest.get("options"))}  # the key is not the run's identity
        wanted = {**expected, "options": secrets.comparable(expected["options"])}
        changed = [words[k] for k in ("source", "options", "format") if seen.get(k) != wanted[k]]
        if changed:
            raise ResumeError(
                f"{out} holds a run made with {' and '.join(changed)}; "
                "pass {overwrite} to replace it, or choose another output folder",
                mentions={"overwrite": "True"},
            )
        if not resume:
            raise ResumeError(
                f"{out} already holds a run and {{resume}} was given; {{resume#2}} continues it, "
                "{overwrite} replaces it",
                mentions={"resume": "False", "resume#2": "True", "overwrite": "True"},
            )
        for leftover in [*out.glob(".*.tmp"), *out.glob("*/.*.tmp")]:  # half-written files of a killed run
            leftover.unlink()
        return {
            **manifest,
            "options": expected["options"],
            "batches": expected.get("batches"),
        }  # rewritten redacted (an older run's may hold a key)
    if any(path.exists() for path in ours):
        raise ResumeError(
            f"{out} holds files named as ragframe's but no ragframe manifest: {{overwrite}} removes only the "
            "files a ragframe run's manifest lists; move them away, or choose another output folder",
            mentions={"overwrite": "True"},
        )
    return fresh


#: What a run writes in its output folder besides the part folders (a temporary of each too).
_RUN_FILES = (MANIFEST, "summary.parquet")


#: The part folders; ``_ray_scored`` is the ray engine's temporary folder (see ragframe.distributed.parquet).
_PART_FOLDERS = ("scores", "rejects", "state")


_RAY_TEMPORARY = "_ray_scored"


_RUN_TEMPORARY = re.compile(r"\.(manifest\.json|summary\.parquet)\.\d+\.tmp")


_PART_TEMPORARY = re.compile(r"\.(part-\d{5}\.parquet)\.\d+\.tmp")


def is_run_manifest(content: Any) -> bool:
    """Whether ``content`` (a parsed ``manifest.json``) is a ragframe run's manifest.

    A run's manifest is a JSON object with an integer ``format``, a ``source`` and
    ``options``, and the parts it wrote: ``finished`` (the local engine's batches, with
    ``batches``, their number, since format 3) or ``files`` (the ray engine's part files).

    Examples
    --------
    >>> is_run_manifest({"format": 3, "source": {}, "options": {}, "finished": {}, "batches": 2})
    True
    >>> is_run_manifest({"files": ["scores/part-00000.parquet"]})  # another program's manifest
    False
    """
    return (
        isinstance(content, dict)
        and isinstance(content.get("format"), int)
        and "source" in content
        and "options" in content
        and (isinstance(content.get("finished"), dict) or isinstance(content.get("files"), list))
    )


def check_overwrite(out: Path) -> dict[str, Any]:
    """The manifest of the run in ``out`` that ``overwrite=True`` may replace; {} for an empty or absent folder.

    Raises
    ------
    ResumeError
        ``out`` holds files but no ragframe run's manifest (:func:`is_run_manifest`): nothing
        proves that ragframe wrote them, so none is removed.
    """
    out = Path(out)
    if not out.is_dir() or not any(out.iterdir()):
        return {}
    manifest = stored_manifest(out)
    if not is_run_manifest(manifest):
        raise ResumeError(
            f"{str(out)!r} holds files but no ragframe manifest ({MANIFEST} of a ragframe run): "
            "{overwrite} removes only the files a ragframe run's manifest lists, and nothing proves that "
            "ragframe wrote these; move them away, or choose another output folder",
            mentions={"overwrite": "True"},
        )
    return manifest


def _listed(manifest: dict[str, Any]) -> set[str]:
    """The part files (``folder/name``) a run's manifest lists: every batch's parts, or the ray engine's files."""
    files = manifest.get("files")
    if isinstance(files, list):
        return {f for f in files if isinstance(f, str) and f.count("/") == 1 and f.split("/")[0] in _PART_FOLDERS}
    batches = manifest.get("batches")
    numbers = set(range(batches)) if isinstance(batches, int) else set()
    numbers |= {int(k) for k in manifest.get("finished", {}) if str(k).isdigit()}
    return {f"{folder}/part-{n:05d}.parquet" for folder in _PART_FOLDERS for n in numbers}


def remove_output(out: Path) -> None:
    """Remove what an earlier run wrote in ``out`` (``overwrite=True``), as its manifest lists, and nothing else.

    A folder that holds files but no ragframe run's manifest is refused (:func:`check_overwrite`).
    Ragframe's files are the parts the manifest lists (every batch of a local run, or the files
    of a ray-engine run) and their temporaries (``.part-00000.parquet.<pid>.tmp``),
    ``summary.parquet``, ``manifest.json`` and theirs. Any other file in ``scores/``,
    ``rejects/`` or ``state/`` is an error naming it, raised before anything is removed: those
    folders are read as a whole, so it cannot stay there. Files beside them are kept.
    """
    manifest = check_overwrite(out)
    if not manifest:
        return
    listed = _listed(manifest)
    ours: list[Path] = []
    foreign: list[Path] = []
    for name in _PART_FOLDERS:
        folder = out / name
        if not folder.is_dir():
            foreign += [folder] if folder.exists() else []
            continue
        for path in sorted(folder.iterdir()):
            temporary = _PART_TEMPORARY.fullmatch(path.name)
            listed_as = f"{name}/{temporary[1]}" if temporary else f"{name}/{path.name}"
            mine = path.is_file() and (listed_as in listed or f"{name}/{path.name}" == TRACE_REJECTS)
            (ours if mine else foreign).append(path)
    for name in _RUN_FILES:
        if (out / name).exists():
            (ours if (out / name).is_file() else foreign).append(out / name)
    if foreign:
        raise ResumeError(
            f"{str(foreign[0])!r} is not a file ragframe wrote; {{overwrite}} removes only "
            f"ragframe's files from {str(out)!r}: move it away, or choose another output folder",
            mentions={"overwrite": "True"},
        )
    temporaries = [p for p in out.glob(".*.tmp") if _RUN_TEMPORARY.fullmatch(p.name)]
    for path in [*ours, *temporaries]:
        path.unlink()
    for name in _PART_FOLDERS:
        if (out / name).is_dir():
            (out / name).rmdir()
    if (out / _RAY_TEMPORARY).is_dir():  # the ray engine's own temporary folder: all of it is ours
        shutil.rmtree(out / _RAY_TEMPORARY)


def stored_manifest(out: Path) -> dict[str, Any]:
    """The manifest of the run in ``out``; empty when there is none or it is not a run's."""
    try:
        content = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return content if isinstance(content, dict) else {}


def manifest_options(settings: dict[str, Any]) -> Any:
    """The JSON form of a run's settings for its manifest: objects by :func:`manifest_value`, no secret left.

    Keys are ``'***'`` (or named by their ``api_key_env`` variable): :func:`ragframe.secrets.redact`.

    Examples
    --------
    >>> manifest_options({"evaluator": {"judge": {"model": "m", "api_key": "sk-0123456789"}}, "keep": ["id"]})
    {'evaluator': {'judge': {'model': 'm', 'api_key': '***'}}, 'keep': ['id']}
    """
    return secrets.redact(json.loads(json.dumps(secrets.redact(settings), default=manifest_value)))


def manifest_value(value: Any) -> Any:
    """A JSON form of an option that is an object: a judge by its identity (stable across runs), else its text.

    The ``default=`` of the manifest's ``json.dumps`` (:func:`manifest_options`); every engine's
    manifest uses it.

    Examples
    --------
    >>> from pathlib import PurePosixPath
    >>> manifest_value(PurePosixPath("cache.sqlite"))
    'cache.sqlite'
    """
    from ragframe.judges import as_judge

    if callable(value) or hasattr(value, "identity"):
        try:
            return dict(as_judge(value).identity())
        except RagframeError:
            pass
    return str(value)


def start_output(out: Path, expected: dict[str, Any], resume: bool, overwrite: bool, engine: str) -> dict[str, Any]:
    """Create ``out`` and write the manifest to continue from (before any part: a kill leaves it resumable).

    ``engine`` (the runner) is recorded, not compared: a run resumes on another engine (the parts are the same).
    """
    if out.exists() and not out.is_dir():
        raise InputFileError(f"the output folder {str(out)!r} is a file")
    out.mkdir(parents=True, exist_ok=True)
    manifest = open_output(out, expected, resume, overwrite)
    manifest["complete"] = False
    manifest["engine"] = engine
    write_json_atomic(manifest, out / MANIFEST)
    return manifest
