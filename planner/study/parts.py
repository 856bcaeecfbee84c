"""Finished scenarios on disk: one Parquet part each, so that a study killed midway resumes.

A part is ``<folder>/parts/<scenario key>.parquet``: the scenario's one row of the study table,
with its key and the part format in the file's metadata (:data:`PART_METADATA`). It is written
to a temporary file beside it and renamed into place (``os.replace``), so a part that exists is
whole; a killed run leaves at most a temporary file, which the next run removes.

Reading a part checks it (:func:`read_part`): a part whose stored key is not its scenario's (a
part renamed or copied from elsewhere), of another format, with other columns or holding an
error is *stale*: the scenario is planned again and the part replaced. Only a scenario that ran
(``status`` ``ok``) is ever written; an error is computed again by the next run.

A regular file at a part's name that cannot be read as one is *damaged* (truncated, garbage,
empty, or Parquet whose part metadata is not JSON): its scenario is planned again, and the
damaged file is kept aside as ``<key>.parquet.damaged`` (:data:`DAMAGED_SUFFIX`) when the new part
replaces it, so nothing is lost; a good part is never touched.

The folder's rule (``planner.output``: never touch what the planner did not write, never follow
a link out) holds for ``parts/`` too: it is a real folder, never a link, and carries the marker
:data:`PARTS_MARKER`; what stands at a part's name and is not a part the planner wrote (a link,
a folder, a FIFO, a readable Parquet table without a part's metadata) is never read, replaced or
removed, with or without ``--force``: it is bad input. Temporary files are removed only when
their name is one this module makes.
"""

from __future__ import annotations

import json
import os
import re
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from planner.errors import InputError
from planner.study.scenarios import PART_FORMAT

#: Sub-folder of a study's results folder that holds its parts.
PARTS_DIR = "parts"
#: Suffix of a part file.
PART_SUFFIX = ".parquet"
#: File in ``parts/`` that says the planner made the folder.
PARTS_MARKER = ".fabric-planner-parts"
#: Key of a part's Parquet metadata: JSON ``{"format": PART_FORMAT, "key": <scenario key>}``.
PART_METADATA = "fabric_planner_part"
#: ``status`` of the only rows kept as parts (``planner.study.run.OK``).
KEPT_STATUS = "ok"
#: Suffix a damaged part's file is kept aside with when its new part replaces it.
DAMAGED_SUFFIX = ".damaged"
#: Names this module gives parts, damaged ones kept aside and temporary files (a key is 20 hex
#: digits).
_PART_NAME = re.compile(r"^[0-9a-f]{20}\.parquet(\.damaged)?$")
_TMP_NAME = re.compile(r"^\.[0-9a-f]{20}\.[0-9a-f]{8}\.tmp$")
#: Most foreign names listed in a message.
_SHOWN_NAMES = 5


@dataclass(frozen=True)
class Part:
    """What a scenario's part holds: its row, or None (no part, or a stale one)."""

    row: dict[str, Any] | None
    stale: bool = False
    """A part the planner wrote for another key, format or columns, or holding an error."""
    damaged: str = ""
    """Why the file at the part's name is damaged (not readable as a part), or empty."""


def part_path(folder: Path, key: str) -> Path:
    """Where the part of the scenario with this key lives."""
    return Path(folder) / PARTS_DIR / f"{key}{PART_SUFFIX}"


def parts_dir(folder: Path, *, create: bool) -> Path | None:
    """The folder's ``parts/``, checked to be the planner's; None when absent and not created.

    Raises InputError when ``parts`` is a link or a file, or a folder the planner did not make
    (no marker, and an entry that is not a part's or a temporary file's name). A folder holding
    only such names (or nothing) is a study's from before the marker and is adopted.
    """
    path = Path(folder) / PARTS_DIR
    if path.is_symlink():
        raise InputError(
            f"{path} is a link; the planner never writes through a link out of its folder, "
            "even with --force: remove the link or choose another -o"
        )
    if path.exists() and not path.is_dir():
        raise InputError(
            f"{path} is a file, not a study's parts folder; the planner never replaces it, "
            "even with --force: move it away or choose another -o"
        )
    marker = path / PARTS_MARKER
    if path.is_dir() and not (marker.is_file() and not marker.is_symlink()):
        foreign = sorted(
            p.name
            for p in path.iterdir()
            if p.is_symlink()
            or not p.is_file()
            or not (_PART_NAME.match(p.name) or _TMP_NAME.match(p.name))
        )
        if foreign:
            shown = ", ".join(foreign[:_SHOWN_NAMES]) + (
                ", ..." if len(foreign) > _SHOWN_NAMES else ""
            )
            raise InputError(
                f"{path} holds {shown}, not written by fabric-planner; the planner never writes "
                "into a folder it did not make, even with --force: move it away or choose "
                "another -o"
            )
    if not create:
        return path if path.is_dir() else None
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not marker.is_file():
            marker.write_text("fabric-planner study parts\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot create {path} ({exc.strerror or exc})") from None
    return path


def remove_temporaries(folder: Path) -> list[Path]:
    """Remove the temporary parts a killed run left (only names this module makes); the paths."""
    path = parts_dir(folder, create=False)
    if path is None:
        return []
    removed = []
    for p in path.iterdir():
        if _TMP_NAME.match(p.name) and p.is_file() and not p.is_symlink():
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def _stored(path: Path) -> dict[str, Any] | str | None:
    """What stands at a part's name: its part metadata, why it is damaged, or None (not ours).

    None for a link, a folder or any other file that is not regular (never opened), and for a
    readable Parquet table without a part's metadata (someone else's table). A regular file that
    is not readable Parquet (truncated, garbage, empty), or whose part metadata is not a JSON
    table, is damaged: the reason, in words.
    """
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot read {path} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        return None
    try:
        meta = pl.read_parquet_metadata(path)
    except PermissionError as exc:
        raise InputError(f"cannot read {path} ({exc.strerror or exc})") from None
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return "not a readable Parquet file (truncated, empty or overwritten)"
    if PART_METADATA not in meta:
        return None
    try:
        stored = json.loads(meta[PART_METADATA])
    except ValueError:
        return "its part metadata is not JSON"
    return stored if isinstance(stored, dict) else "its part metadata is not a JSON table"


def damaged_path(path: Path) -> Path:
    """Where a damaged part's file is kept aside when its new part replaces it.

    Raises InputError when that name is taken by anything but a regular file (a link, a
    folder): it is never replaced, even with ``--force``. A regular file there (a part damaged
    before) is replaced.
    """
    aside = path.with_name(path.name + DAMAGED_SUFFIX)
    try:
        mode = aside.lstat().st_mode
    except FileNotFoundError:
        return aside
    except OSError as exc:
        raise InputError(f"cannot read {aside} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise InputError(
            f"{path} is damaged, and {aside}, where it would be kept aside, is not a file the "
            "planner wrote (a link or a folder); the planner never replaces it, even with "
            "--force: move it away or choose another -o"
        )
    return aside


def _not_ours(path: Path) -> InputError:
    return InputError(
        f"{path} is not a part fabric-planner wrote (a link, a folder, or a file without a "
        "part's metadata); the planner never reads or replaces it, even with --force: move it "
        "away or choose another -o"
    )


def read_part(folder: Path, key: str, schema: dict[str, Any]) -> Part:
    """The finished row of a scenario, checked against its key; raises InputError for a foreign file.

    No part: ``Part(None)``. A part the planner wrote but for another key or format, with other
    columns, or not ``ok``: ``Part(None, stale=True)`` (planned again, and replaced). A damaged
    file at the part's name: ``Part(None, damaged=<why>)`` (planned again; the file is kept
    aside when the new part replaces it).
    """
    if parts_dir(folder, create=False) is None:
        return Part(None)
    path = part_path(folder, key)
    if not path.exists() and not path.is_symlink():
        return Part(None)
    stored = _stored(path)
    if stored is None:
        raise _not_ours(path)
    if isinstance(stored, str):
        damaged_path(path)  # where it will be kept aside: refused now, before anything is planned
        return Part(None, damaged=stored)
    if stored.get("format") != PART_FORMAT or stored.get("key") != key:
        return Part(None, stale=True)
    try:
        df = pl.read_parquet(path)
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return Part(None, damaged="its rows cannot be read (the file is damaged)")
    if df.height != 1 or set(df.columns) != set(schema):
        return Part(None, stale=True)
    row = df.row(0, named=True)
    if row.get("status") != KEPT_STATUS:
        return Part(None, stale=True)  # an error is never a result (parts of older versions)
    return Part(row)


def write_part(folder: Path, key: str, row: dict[str, Any], schema: dict[str, Any]) -> Path:
    """Write a finished scenario's row atomically (temporary file, then ``os.replace``).

    Only a row whose ``status`` is ``ok`` is kept (ValueError otherwise). Raises InputError when
    the part's name is taken by a file the planner did not write. A damaged file at the part's
    name is kept aside (:func:`damaged_path`, replacing an older one kept there) first.
    """
    if row.get("status") != KEPT_STATUS:
        raise ValueError(f"only a scenario that ran is kept as a part, not {row.get('status')!r}")
    parts_dir(folder, create=True)
    path = part_path(folder, key)
    stored = _stored(path) if path.exists() or path.is_symlink() else {}
    if stored is None:
        raise _not_ours(path)
    aside = damaged_path(path) if isinstance(stored, str) else None
    tmp = path.with_name(f".{key}.{uuid.uuid4().hex[:8]}.tmp")
    metadata = {PART_METADATA: json.dumps({"format": PART_FORMAT, "key": key})}
    try:
        table(schema, [row]).write_parquet(tmp, metadata=metadata)
        if aside is not None:  # damaged: kept aside, never lost
            os.replace(path, aside)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {path} ({exc.strerror or exc})") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def table(schema: dict[str, Any], rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Rows (dicts) as a frame with exactly the study's columns and types."""
    return pl.DataFrame(
        [{name: row.get(name) for name in schema} for row in rows], schema=schema, orient="row"
    )
