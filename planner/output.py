r"""Every file the planner writes goes through here: safe names, rounded figures, whole sets.

Three rules, kept in one place:

* **Names.** A name taken from an input (an instance name, the instance recorded in a
  ``design.json``, an htsim export name) becomes a file or folder name only through
  :func:`safe_name`, which keeps ``[A-Za-z0-9._+=-]``, replaces everything else (``/``, ``\\``,
  NUL, spaces, ...) by ``_`` and never returns ``.``, ``..``, a name starting with ``.`` or an
  empty name. :func:`child` joins a folder and such a name and checks that the result stays inside.
* **Figures.** CSV and JSON carry floats rounded to :data:`SIGNIFICANT_DIGITS` significant digits
  (``0.9999999999999999`` is written ``1.0``); non-finite values stay ``inf``/``NaN`` in CSV and
  become ``null`` in JSON, which has no infinity. Parquet keeps the exact values (report totals are
  checked against the solver's objective terms to the cent and below).
* **Folders.** A folder the planner writes to holds one *set* of files at a time, described by
  the manifest :data:`MARKER` (JSON: the set's id, the command, every file with its SHA-256, and
  ``complete``). A run takes an exclusive, non-blocking lock (:data:`LOCK`, ``fcntl.flock``; a
  second writer gets :class:`FolderBusy`), writes the whole new set into a fresh staging folder
  inside the output folder, then marks the manifest incomplete, renames the files in, removes the
  old set's leftovers and writes the manifest complete. A failure before the swap leaves the old
  set untouched; a run killed during the swap (renames only) leaves ``complete: false`` and the
  staged files, and the next writer finishes the swap first. A file whose name the new set needs
  but that the planner did not write (not in the manifest, or changed since) is never replaced,
  with or without ``--force``; a directory in its place is refused too.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from planner.errors import InputError

#: Significant digits of every float written to CSV or JSON.
SIGNIFICANT_DIGITS = 12
#: The manifest: this folder holds fabric-planner output, and which files form its current set.
MARKER = ".fabric-planner"
#: Lock file held (``flock``, exclusive) by the one run writing into the folder.
LOCK = ".fabric-planner.lock"
#: Prefix of the staging folders a run writes its set into before swapping it in.
STAGING_PREFIX = ".fabric-planner.staging-"
#: Format version of the manifest.
MANIFEST_FORMAT = 2
#: Longest file name :func:`safe_name` returns (file systems allow 255 bytes; room for suffixes).
MAX_NAME = 120
#: Characters a name taken from an input keeps; every other one becomes ``_``.
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]")

#: Writes one file of a set at the path it is given.
Writer = Callable[[Path], object]


class FolderBusy(InputError):
    """Another run holds the folder's lock."""


# ---- names ---------------------------------------------------------------------------------
def safe_name(name: str, *, fallback: str = "unnamed") -> str:
    """A single, harmless path component made from a name taken from an input.

    Keeps letters, digits and ``._+=-``; replaces every other character (path separators, NUL,
    control characters, spaces) by ``_``; strips leading dots (no ``..``, no hidden files); cuts
    to :data:`MAX_NAME` characters. An empty result becomes ``fallback``.
    """
    cleaned = _UNSAFE.sub("_", str(name)).lstrip(".")[:MAX_NAME]
    return cleaned or fallback


def child(folder: Path, name: str) -> Path:
    """``folder / name`` for a name that must be one component inside ``folder``."""
    if name != safe_name(name):
        raise ValueError(f"not a safe file name: {name!r}")
    path = folder / name
    if path.parent != folder:
        raise ValueError(f"{name!r} leaves {folder}")
    return path


# ---- figures -------------------------------------------------------------------------------
def rounded(df: pl.DataFrame, digits: int = SIGNIFICANT_DIGITS) -> pl.DataFrame:
    """The table with every float column rounded to ``digits`` significant digits."""
    floats = [name for name, dtype in df.schema.items() if dtype.is_float()]
    if not floats:
        return df
    return df.with_columns(pl.col(name).round_sig_figs(digits) for name in floats)


def round_value(value: Any, digits: int = SIGNIFICANT_DIGITS) -> Any:
    """A float rounded to ``digits`` significant digits (non-finite to None), recursively."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: round_value(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [round_value(v, digits) for v in value]
    return value


def json_text(value: Any, **kwargs: Any) -> str:
    """JSON with rounded floats and ``null`` for infinities (strict JSON: no ``Infinity``)."""
    return json.dumps(round_value(value), allow_nan=False, default=str, **kwargs)


def table_writers(name: str, df: pl.DataFrame) -> dict[str, Writer]:
    """The CSV (rounded) and Parquet (exact) files of one table."""
    return {
        f"{name}.csv": lambda p: rounded(df).write_csv(p),
        f"{name}.parquet": lambda p: df.write_parquet(p),
    }


def text_writer(text: str) -> Writer:
    """A writer of UTF-8 text."""
    return lambda p: p.write_text(text, encoding="utf-8")


def bytes_writer(data: bytes) -> Writer:
    """A writer of bytes as they are."""
    return lambda p: p.write_bytes(data)


# ---- the manifest --------------------------------------------------------------------------
def sha256(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Manifest:
    """What ``.fabric-planner`` says about its folder."""

    files: dict[str, str] = field(default_factory=dict)
    """Files of the current set and their SHA-256."""
    complete: bool = True
    set_id: str = ""
    command: str = ""
    staging: str = ""
    """During a swap: the staging folder that holds the new set."""
    replaces: dict[str, str] = field(default_factory=dict)
    """During a swap: the files of the set being replaced."""
    legacy: bool = False
    """A marker from before manifests: every report-named file counts as the planner's."""

    def to_text(self) -> str:
        """The manifest file's JSON text."""
        return (
            json.dumps(
                {
                    "writer": "fabric-planner",
                    "format": MANIFEST_FORMAT,
                    "set": self.set_id,
                    "command": self.command,
                    "complete": self.complete,
                    "written_utc": datetime.now(UTC).isoformat(timespec="seconds"),
                    "files": self.files,
                    "staging": self.staging,
                    "replaces": self.replaces,
                },
                indent=2,
                sort_keys=True,
            )
            + "\n"
        )


def read_manifest(folder: Path) -> Manifest | None:
    """The folder's manifest; None without one. An unreadable or old-style marker is legacy."""
    path = folder / MARKER
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return Manifest(complete=True, legacy=True)
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return Manifest(complete=True, legacy=True)
    return Manifest(
        files={str(k): str(v) for k, v in data["files"].items()},
        complete=bool(data.get("complete", False)),
        set_id=str(data.get("set", "")),
        command=str(data.get("command", "")),
        staging=str(data.get("staging", "")),
        replaces={str(k): str(v) for k, v in (data.get("replaces") or {}).items()},
    )


def is_complete(folder: Path) -> bool:
    """Whether the folder holds a whole set: manifest complete and every file as it lists."""
    m = read_manifest(Path(folder))
    if m is None or m.legacy or not m.complete:
        return False
    return all(
        (folder / name).is_file() and sha256(folder / name) == digest
        for name, digest in m.files.items()
    )


def _owned(folder: Path, name: str, m: Manifest | None) -> bool:
    """Whether ``folder/name`` is a regular file the planner wrote and nobody changed since."""
    path = folder / name
    if m is None or path.is_symlink() or not path.is_file():
        return False
    if m.legacy:
        return True
    digests = {m.files.get(name), m.replaces.get(name)} - {None}
    return bool(digests) and sha256(path) in digests


def _write_manifest(folder: Path, m: Manifest) -> None:
    tmp = folder / f"{MARKER}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        tmp.write_text(m.to_text(), encoding="utf-8")
        os.replace(tmp, folder / MARKER)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# ---- the folder ----------------------------------------------------------------------------
#: Folders this process holds the lock of (resolved path -> open lock file descriptor).
_HELD: dict[Path, int] = {}


def _foreign_entries(folder: Path) -> list[str]:
    """Entries of a folder that has no manifest, other than the planner's lock and staging."""
    return sorted(
        p.name for p in folder.iterdir() if p.name != LOCK and not p.name.startswith(STAGING_PREFIX)
    )


def check_folder(folder: Path, *, force: bool = False) -> None:
    """Refuse a folder that is a file, or that holds other files and no manifest (unless forced)."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} exists and is not a folder; choose another -o")
    if folder.is_dir() and not (folder / MARKER).exists() and not force:
        others = _foreign_entries(folder)
        if others:
            shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
            raise InputError(
                f"{folder} already has other files ({shown}), not written by fabric-planner;"
                " pass --force to write beside them, or choose another -o"
            )


@contextlib.contextmanager
def claimed(folder: Path, *, force: bool = False) -> Iterator[Path]:
    """Create and lock a folder for writing, for as long as the block runs.

    Refuses a foreign folder (see :func:`check_folder`) and a folder another run is writing
    (:class:`FolderBusy`), finishes a swap a killed run left half done, and removes staging
    folders it abandoned. Re-entrant within a process.
    """
    folder = Path(folder)
    check_folder(folder, force=force)
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder {folder} ({exc.strerror or exc})") from None
    key = folder.resolve()
    if key in _HELD:
        yield folder
        return
    try:
        fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise InputError(f"cannot lock the folder {folder} ({exc.strerror or exc})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise FolderBusy(
                    f"another fabric-planner run is writing into {folder}; wait for it to "
                    "finish, or choose another -o"
                ) from None
            raise
        _HELD[key] = fd
        try:
            _recover(folder)
            yield folder
        finally:
            del _HELD[key]
            if created and not (folder / MARKER).exists():
                # Nothing was written (bad input, Ctrl-C, an error): leave no empty folder behind.
                (folder / LOCK).unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    folder.rmdir()
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _recover(folder: Path) -> None:
    """Finish a swap a killed run left half done; drop staging folders of runs that died before."""
    m = read_manifest(folder)
    if m is not None and not m.complete and m.staging:
        staging = folder / m.staging
        if staging.is_dir() and staging.name.startswith(STAGING_PREFIX):
            _swap(folder, staging, m)
    for p in folder.iterdir():
        if p.name.startswith(STAGING_PREFIX) and p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)


def _swap(folder: Path, staging: Path, m: Manifest) -> None:
    """Rename the staged files in, remove the old set's leftovers, mark the set complete."""
    for name in m.files:
        staged = staging / name
        if staged.is_file():
            os.replace(staged, folder / name)
    for name, digest in m.replaces.items():
        path = folder / name
        if (
            name not in m.files
            and path.is_file()
            and not path.is_symlink()
            and sha256(path) == digest
        ):
            path.unlink()
    _write_manifest(folder, Manifest(files=m.files, set_id=m.set_id, command=m.command))
    shutil.rmtree(staging, ignore_errors=True)


def write_set(
    folder: Path,
    files: Mapping[str, Writer],
    *,
    force: bool = False,
    command: str = "",
    carry: Callable[[str], bool] | None = None,
) -> list[Path]:
    """Replace the folder's set of files with ``files`` (name -> writer), as one set.

    ``carry`` names files of the previous set to keep, unchanged, in the new one (when the new set
    does not write them itself); every other file of the previous set is removed. Returns the
    paths written. Raises :class:`InputError` (nothing changed) when a name is not a plain file
    name, when a file or folder the planner did not write stands where the new set needs a name,
    or when writing fails.
    """
    folder = Path(folder)
    files = dict(files)
    for name in files:
        child(folder, name)
        if name in (MARKER, LOCK) or name.startswith(STAGING_PREFIX):
            raise ValueError(f"{name!r} is reserved")
    with claimed(folder, force=force):
        old = read_manifest(folder)
        if carry is not None and old is not None and not old.legacy:
            for name in old.files:
                if name not in files and carry(name) and _owned(folder, name, old):
                    files[name] = bytes_writer((folder / name).read_bytes())
        blocked = [
            name
            for name in files
            if (folder / name).exists() or (folder / name).is_symlink()
            if not _owned(folder, name, old)
        ]
        if blocked:
            kinds = [
                f"{n} (a folder)" if (folder / n).is_dir() and not (folder / n).is_symlink() else n
                for n in blocked
            ]
            raise InputError(
                f"{folder} holds {', '.join(kinds)}, not written by fabric-planner (or changed "
                "since); the planner never replaces those, even with --force: move them away or "
                "choose another -o"
            )
        set_id = uuid.uuid4().hex
        staging = folder / f"{STAGING_PREFIX}{set_id}"
        try:
            staging.mkdir()
            digests: dict[str, str] = {}
            for name, write in files.items():
                write(staging / name)
                digests[name] = sha256(staging / name)
            previous = {} if old is None or old.legacy else dict(old.files)
            if old is not None and old.legacy:
                previous = {
                    n: sha256(folder / n)
                    for n in legacy_names(folder)
                    if (folder / n).is_file() and n not in files
                }
            swap = Manifest(
                files=digests,
                complete=False,
                set_id=set_id,
                command=command,
                staging=staging.name,
                replaces=previous,
            )
            _write_manifest(folder, swap)
        except OSError as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise InputError(f"cannot write into {folder} ({exc.strerror or exc})") from None
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        try:
            _swap(folder, staging, swap)
        except OSError as exc:
            raise InputError(
                f"cannot finish writing into {folder} ({exc.strerror or exc}); the next run "
                "into it completes the set"
            ) from None
    return [folder / name for name in files]


#: Names an old-style marker's folder may hold from the planner (tables with both extensions).
LEGACY_TABLES = (
    "summary",
    "alternatives",
    "bom",
    "links",
    "sim_collectives",
    "sim_links",
    "sim_failures",
    "optics_comparison",
    "circuits",
    "ocs",
    "reconfiguration",
    "fabric_comparison",
    "torus_pod",
    "torus_slices",
    "torus_circuits",
    "torus_failure",
)


def legacy_names(folder: Path) -> list[str]:
    """Report-named files in a folder whose marker predates manifests."""
    names = [f"{t}.{ext}" for t in LEGACY_TABLES for ext in ("csv", "parquet")]
    names += ["design.json", "report.md"]
    return [n for n in names if (folder / n).is_file()]
