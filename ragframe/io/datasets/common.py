"""What every dataset format shares: reading JSON and JSONL with line numbers, checking a field's
kind, building the frame with the contract's dtypes, and writing records back.

Reading and writing these files is I/O, not a hot path: records are checked one by one in Python
so that an error names the file, the line (JSONL) or record (JSON array) and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ragframe.exceptions import InputFileError, SchemaError
from ragframe.schema import to_polars

__all__ = [
    "KINDS",
    "Record",
    "load_json",
    "load_jsonl",
    "check_records",
    "records_frame",
    "frame_rows",
    "write_json",
    "write_jsonl",
]

#: A record with where it came from: (place, fields); place is "line 3" or "record 2".
Record = tuple[str, dict[str, Any]]

#: The kinds a field may have, with the polars dtype of its column.
KINDS: dict[str, pl.DataType] = {
    "str": pl.String(),
    "id": pl.String(),
    "int": pl.Int64(),
    "float": pl.Float64(),
    "list[str]": pl.List(pl.String),
    "list[int]": pl.List(pl.Int64),
    "list[id]": pl.List(pl.String),
    "list[list[str]]": pl.List(pl.List(pl.String)),
    "list[list[int]]": pl.List(pl.List(pl.Int64)),
}


def _path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.is_file():
        raise InputFileError(f"no such file: {str(p)!r}")
    return p


def _text(p: Path) -> str:
    data = p.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(f"line {line} of {str(p)!r} is not UTF-8 ({exc.reason})") from None


def load_json(path: str | os.PathLike[str]) -> Any:
    """The JSON value of the whole file; a syntax error names the file and the line."""
    p = _path(path)
    try:
        return json.loads(_text(p))
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{str(p)!r} is not JSON: line {exc.lineno}: {exc.msg}") from None


def load_jsonl(path: str | os.PathLike[str]) -> list[Record]:
    """One object per non-blank line, each with its line number (from 1)."""
    p = _path(path)
    out: list[Record] = []
    for number, line in enumerate(_text(p).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(f"line {number} of {str(p)!r} is not JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise InputFileError(f"line {number} of {str(p)!r} must be a JSON object, found {type(value).__name__}")
        out.append((f"line {number}", value))
    return out


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ok(value: Any, kind: str) -> bool:
    if value is None:
        return True
    if kind == "str":
        return isinstance(value, str)
    if kind == "id":
        return isinstance(value, (str, int)) and not isinstance(value, bool)
    if kind == "int":
        return _is_int(value)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "list[str]":
        return _is_str_list(value)
    if kind == "list[int]":
        return isinstance(value, list) and all(_is_int(v) for v in value)
    if kind == "list[id]":
        return isinstance(value, list) and all(_ok(v, "id") and v is not None for v in value)
    if kind == "list[list[str]]":
        return isinstance(value, list) and all(_is_str_list(v) for v in value)
    if kind == "list[list[int]]":
        return isinstance(value, list) and all(isinstance(v, list) and all(_is_int(x) for x in v) for v in value)
    raise AssertionError(kind)  # pragma: no cover - the formats name known kinds


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def check_records(records: Sequence[Record], kinds: Mapping[str, str], path: str | os.PathLike[str]) -> None:
    """Raise a :class:`SchemaError` at the first field whose value is not of its kind (null is allowed)."""
    for row, (place, record) in enumerate(records):
        for field, kind in kinds.items():
            value = record.get(field)
            if not _ok(value, kind):
                raise SchemaError(
                    f"{place} of {str(path)!r}: field {field!r} is not {kind}",
                    column=field,
                    row=row,
                    expected=kind,
                    found=_shown(value),
                )


def records_frame(records: Sequence[Record], kinds: Mapping[str, str], rename: Mapping[str, str]) -> pl.DataFrame:
    """The records as a frame: the fields of ``kinds`` that some record has, with their dtypes (renamed by
    ``rename``), then the other fields of the records in first-seen order, their dtypes inferred from every
    record."""
    rows = [record for _, record in records]
    columns: list[pl.Series] = []
    seen = {key for r in rows for key in r}
    for field, kind in kinds.items():
        if field not in seen:  # a field no record has is not made up as a column of nulls
            continue
        values = [r.get(field) for r in rows]
        if kind == "id":  # ids are text in the contract; a JSON number id becomes its decimal text
            values = [None if v is None else str(v) for v in values]
        elif kind == "list[id]":
            values = [None if v is None else [str(x) for x in v] for v in values]
        columns.append(pl.Series(rename.get(field, field), values, dtype=KINDS[kind]))
    extra: dict[str, None] = {}
    for r in rows:
        for key in r:
            if key not in kinds:
                extra.setdefault(key, None)
    taken = {s.name for s in columns}
    for key in extra:
        name = key if key not in taken else f"{key}_original"
        columns.append(_kept(name, [r.get(key) for r in rows]))
    return pl.DataFrame(columns)


def _same(value: Any) -> Any:
    """A JSON value compared as JSON means it: numbers by value (``1 == 1.0``), booleans apart from numbers,
    an object's null members the same as absent ones (a struct column fills them)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", float(value))
    if isinstance(value, list):
        return ("list", tuple(_same(v) for v in value))
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, _same(v)) for k, v in value.items() if v is not None)))
    return (type(value).__name__, value)


def _kept(name: str, values: list[Any]) -> pl.Series:
    """A field ragframe has no role for, as a column: its dtype inferred from every value, unless that
    would change a value (polars would read ``[1.5, true]`` as ``[1.5, 1.0]``), then each value's JSON text."""
    try:
        series = pl.DataFrame([{name: v} for v in values], infer_schema_length=None)[name]
        if [_same(v) for v in series.to_list()] == [_same(v) for v in values]:
            return series
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        pass
    return pl.Series(name, [None if v is None else json.dumps(v, ensure_ascii=False) for v in values], dtype=pl.String)


def frame_rows(frame: Any) -> pl.DataFrame:
    """The caller's frame (any kind ragframe accepts; a LazyFrame is collected) as a polars DataFrame."""
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    return to_polars(frame)


def _plain(value: Any) -> Any:
    """A value polars gives back made JSON-ready (dates as ISO text)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def write_json(value: Any, path: str | os.PathLike[str], *, indent: int | None = 2) -> Path:
    """Write ``value`` as one JSON document (UTF-8, non-ASCII kept)."""
    p = Path(path)
    p.write_text(json.dumps(_plain(value), ensure_ascii=False, indent=indent) + "\n", encoding="utf-8")
    return p


def write_jsonl(records: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Write one JSON object per line (UTF-8, non-ASCII kept)."""
    p = Path(path)
    with p.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(_plain(dict(record)), ensure_ascii=False) + "\n")
    return p
