"""Finished scenarios on disk: one Parquet part each, so that a study killed midway resumes.

A part is ``<folder>/parts/<scenario key>.parquet``: the scenario's one row of the study table.
It is written to a temporary file beside it and renamed into place (``os.replace``), so a part
that exists is whole; a killed run leaves at most a temporary file, which the next run ignores.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import polars as pl

from planner.errors import InputError

#: Sub-folder of a study's results folder that holds its parts.
PARTS_DIR = "parts"
#: Suffix of a part file.
PART_SUFFIX = ".parquet"


def part_path(folder: Path, key: str) -> Path:
    """Where the part of the scenario with this key lives."""
    return Path(folder) / PARTS_DIR / f"{key}{PART_SUFFIX}"


def read_part(folder: Path, key: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The finished row of a scenario, or None when it has no part (or an unreadable one)."""
    path = part_path(folder, key)
    if not path.is_file():
        return None
    try:
        df = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError):
        return None  # not a part this code wrote: the scenario is computed again
    if df.height != 1 or set(df.columns) != set(schema):
        return None
    return df.row(0, named=True)


def write_part(folder: Path, key: str, row: dict[str, Any], schema: dict[str, Any]) -> Path:
    """Write a finished scenario's row atomically (temporary file, then ``os.replace``)."""
    path = part_path(folder, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {path.parent} ({exc.strerror or exc})") from None
    tmp = path.with_name(f".{path.stem}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        table(schema, [row]).write_parquet(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def table(schema: dict[str, Any], rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Rows (dicts) as a frame with exactly the study's columns and types."""
    return pl.DataFrame(
        [{name: row.get(name) for name in schema} for row in rows], schema=schema, orient="row"
    )
