"""Reading scored frames for ``summary``, ``compare`` and ``gate``."""

from __future__ import annotations

import glob
from pathlib import Path

import polars as pl

from ragframe.exceptions import RagframeError

__all__ = ["read_scores"]


def read_scores(path: str, role: str) -> pl.DataFrame:
    """Read a scored frame: Parquet file, folder, glob or URL; a .csv or .json file. Errors name the path (exit 3)."""
    local = Path(path)
    is_url = "://" in path
    try:
        if not is_url and local.exists():
            suffix = local.suffix.lower()
            if local.is_dir():
                if next(local.rglob("*.parquet"), None) is None:
                    raise RagframeError(f"no Parquet file in {role} folder {path!r}")
                return pl.scan_parquet(str(local / "**" / "*.parquet")).collect()
            if suffix == ".csv":
                return pl.read_csv(local, infer_schema_length=10_000)
            if suffix == ".json":
                return pl.read_json(local)
            return pl.scan_parquet(local, glob=False).collect()
        if not is_url:
            if not any(c in path for c in "*?["):
                raise RagframeError(f"{role} file not found: {path!r}")
            if not glob.glob(path, recursive=True):
                raise RagframeError(f"no file matches the {role} glob {path!r}")
        return pl.scan_parquet(path).collect()
    except RagframeError:
        raise
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise RagframeError(f"cannot read {role} {path!r}: {exc}") from exc
