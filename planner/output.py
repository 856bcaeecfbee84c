r"""Every file the planner writes goes through here: safe names, rounded figures, whole sets.

Four rules, kept in one place:

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
  ``complete``). A run locks the folder itself: an exclusive, non-blocking ``fcntl.flock`` on the
  folder's own descriptor (a second writer gets :class:`FolderBusy`; no lock file is created, and
  the empty :data:`LOCK` file older versions left is removed; where the file system cannot lock
  a folder, as NFS, the run locks :data:`LOCK` and removes it before letting go). It writes the whole new set into a
  fresh staging folder inside the output folder, then marks the manifest incomplete, renames the
  files in, removes the old set's leftovers and writes the manifest complete. A failure before
  the swap leaves the old set untouched; a run killed during the swap (renames only) leaves
  ``complete: false`` and the staged files, and the next writer finishes the swap first.
* **What the planner touches.** Every entry of the folder is reached through the folder's
  descriptor (``dir_fd``) and never through a symbolic link (``O_NOFOLLOW``, ``lstat``). The
  planner replaces or removes only a regular file it can prove it wrote: listed in a valid
  manifest, with the SHA-256 listed. A file the new set needs whose name is taken by anything
  else (a file it did not write or that changed since, a folder, a symbolic link, a FIFO, a
  socket, a device) is never replaced, with or without ``--force``; nor is a manifest that is not
  a regular file. A marker that is not a valid manifest (not JSON, another shape or format, a
  name that is not one plain file name) means the folder holds files the planner did not write:
  refused without ``--force``; with it, the planner writes beside them and replaces or removes
  none of them. A folder whose set another kind of command wrote (a study of ``sweep``, an htsim
  export) is replaced only with ``--force``, and then only the files of its set go
  (:data:`REPORT_COMMANDS` share a report folder).
* **Formats.** Tables are written as CSV and Parquet, pictures as PNG and SVG, unless a run
  chooses fewer (:func:`parse_formats`, ``write_set(formats=)``, :func:`output_formats`): the
  filter applies by suffix, in :func:`write_set` alone, to the whole new set; the files of the
  previous set in formats no longer chosen are removed like any other leftover (only those the
  planner wrote).
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
import stat
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import InputError

if TYPE_CHECKING:
    import polars as pl

#: Significant digits of every float written to CSV or JSON.
SIGNIFICANT_DIGITS = 12
#: The manifest: this folder holds fabric-planner output, and which files form its current set.
MARKER = ".fabric-planner"
#: The lock file of older versions (they locked it; this one locks the folder itself). An empty
#: regular file of this name is removed by the next run; anything else of this name is left alone.
LOCK = ".fabric-planner.lock"
#: Prefix of the staging folders a run writes its set into before swapping it in.
STAGING_PREFIX = ".fabric-planner.staging-"
#: Format version of the manifest.
MANIFEST_FORMAT = 2
#: The ``writer`` every manifest names.
WRITER = "fabric-planner"
#: Longest file name :func:`safe_name` returns (file systems allow 255 bytes; room for suffixes).
MAX_NAME = 120
#: Longest name of one folder or file (bytes) where the file system does not say
#: (``os.pathconf(..., "PC_NAME_MAX")``): 255 on Linux, macOS and Windows file systems.
DEFAULT_NAME_MAX = 255
#: Longest path (bytes) where the file system does not say (``PC_PATH_MAX``): Linux's 4,096.
DEFAULT_PATH_MAX = 4096
#: Characters a name taken from an input keeps; every other one becomes ``_``.
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]")
#: A staging folder's name: the prefix and a set id (``uuid4().hex``).
_STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"[0-9a-f]{32}")
#: A SHA-256 as the manifest writes it.
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: Table formats (by file suffix) a set may hold.
TABLE_FORMATS = ("csv", "parquet")
#: Picture formats (by file suffix) a set may hold.
FIGURE_FORMATS = ("png", "svg")
#: Every format ``--formats`` chooses from; by default all of them are written.
OUTPUT_FORMATS = TABLE_FORMATS + FIGURE_FORMATS
#: Commands whose sets share a report folder: each replaces another's set (keeping the analyses
#: it carries). ``""`` is a set written from Python without a command name.
REPORT_COMMANDS = frozenset({"", "solve", "evaluate", "simulate", "torus", "compare-fabrics"})
#: Bytes read at a time when hashing a file.
_BLOCK_BYTES = 1 << 20
#: Flags of every read of an entry: never through a symbolic link, never waiting on a FIFO.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
#: errno of ``flock`` when another run holds the lock.
_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
#: errno of ``flock`` on a folder's descriptor where the file system cannot lock folders.
_NO_FOLDER_LOCK = (errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.EISDIR)
#: Flags of every folder the planner opens inside a folder (staging): no symbolic link.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

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
    import polars as pl  # loaded when a table is written, not with the command line's --help

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


# ---- formats -------------------------------------------------------------------------------
#: The formats sets are written in when a call does not say (see :func:`output_formats`).
_FORMATS: ContextVar[frozenset[str]] = ContextVar(
    "fabric_planner_formats", default=frozenset(OUTPUT_FORMATS)
)


def parse_formats(text: str) -> frozenset[str]:
    """The formats of a ``--formats`` value: comma-separated, each one of :data:`OUTPUT_FORMATS`.

    Raises :class:`InputError` naming the unknown format and listing the allowed ones.
    """
    words = [w.strip().lower() for w in str(text).split(",")]
    chosen = [w for w in words if w]
    allowed = ", ".join(OUTPUT_FORMATS)
    if not chosen:
        raise InputError(f"--formats: expected one or more of {allowed}, separated by commas")
    unknown = [w for w in chosen if w not in OUTPUT_FORMATS]
    if unknown:
        raise InputError(
            f"--formats {unknown[0][:40]!r}: unknown format; expected one or more of {allowed}, "
            "separated by commas (e.g. --formats csv,png)"
        )
    return frozenset(chosen)


@contextlib.contextmanager
def output_formats(formats: Collection[str]) -> Iterator[None]:
    """Within the block, sets written without ``formats=`` hold only these formats."""
    token = _FORMATS.set(frozenset(formats))
    try:
        yield
    finally:
        _FORMATS.reset(token)


def _kept(name: str, formats: Collection[str]) -> bool:
    """Whether a file of a set is written under ``formats`` (files of other suffixes always are)."""
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return suffix not in OUTPUT_FORMATS or suffix in formats


# ---- entries, never through a link -----------------------------------------------------------
def _describe(mode: int) -> str:
    """What an entry that is not a regular file is, for a message."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a file"


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    """The entry ``name`` of the folder itself (a link is not followed); None when absent."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _open_regular(dir_fd: int, name: str) -> Iterator[int | None]:
    """A descriptor of the regular file ``name``; None for anything else (or nothing).

    A symbolic link is not followed, a FIFO is not waited on, and a device is not opened.
    """
    st = _lstat(dir_fd, name)
    if st is None or not stat.S_ISREG(st.st_mode):
        yield None
        return
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:  # replaced meanwhile (ELOOP: now a link), unreadable, gone
        yield None
        return
    try:
        now = os.fstat(fd)
        same = stat.S_ISREG(now.st_mode) and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)
        yield fd if same else None
    finally:
        os.close(fd)


def _digest_fd(fd: int) -> str:
    h = hashlib.sha256()
    for block in iter(lambda: os.read(fd, _BLOCK_BYTES), b""):
        h.update(block)
    return h.hexdigest()


def _digest_at(dir_fd: int, name: str) -> str | None:
    """SHA-256 of the regular file ``name`` of the folder; None when it is not one."""
    with _open_regular(dir_fd, name) as fd:
        return None if fd is None else _digest_fd(fd)


def _read_at(dir_fd: int, name: str) -> bytes | None:
    """The bytes of the regular file ``name`` of the folder; None when it is not one."""
    with _open_regular(dir_fd, name) as fd:
        if fd is None:
            return None
        chunks = list(iter(lambda: os.read(fd, _BLOCK_BYTES), b""))
        return b"".join(chunks)


@contextlib.contextmanager
def _open_folder(folder: Path) -> Iterator[int]:
    """A descriptor of the folder (the path may be a link the user chose); OSError if none."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def sha256(path: Path) -> str:
    """SHA-256 of a regular file's bytes (not through a symbolic link).

    Raises :class:`OSError` when the path is not a regular file.
    """
    path = Path(path)
    with _open_folder(path.parent) as dir_fd:
        digest = _digest_at(dir_fd, path.name)
    if digest is None:
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return digest


# ---- the manifest --------------------------------------------------------------------------
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
    problem: str = ""
    """Why the marker is not a manifest this planner trusts ("" when it is one): then ``files``
    and ``replaces`` are empty, for the planner cannot tell which files it wrote."""

    @property
    def valid(self) -> bool:
        """Whether this is a manifest the planner wrote and can trust."""
        return not self.problem

    def to_text(self) -> str:
        """The manifest file's JSON text."""
        return (
            json.dumps(
                {
                    "writer": WRITER,
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


def _is_set_name(name: object) -> bool:
    """Whether a name may be a file of a set: one plain file name, not a reserved one."""
    return (
        isinstance(name, str)
        and name == safe_name(name)
        and name not in (MARKER, LOCK)
        and not name.startswith(STAGING_PREFIX)
    )


def _file_table(value: object, key: str) -> dict[str, str]:
    """A manifest's ``files`` or ``replaces``: plain file names to SHA-256; ValueError if not."""
    if not isinstance(value, dict):
        raise ValueError(f"{key!r} is not an object of file names")
    for name, digest in value.items():
        if not _is_set_name(name):
            raise ValueError(f"{key!r} names {str(name)[:60]!r}, which is not a plain file name")
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise ValueError(f"{key!r} gives {str(name)[:60]!r} no SHA-256")
    return dict(value)


def parse_manifest(text: str) -> Manifest:
    """The manifest a marker's text holds; ValueError saying why it is not a valid one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    if data.get("writer") != WRITER:
        raise ValueError(f"no 'writer': {WRITER!r}")
    if data.get("format") != MANIFEST_FORMAT or isinstance(data.get("format"), bool):
        raise ValueError(
            f"format {str(data.get('format'))[:20]!r}; this planner reads format {MANIFEST_FORMAT}"
        )
    for key in ("set", "command", "staging"):
        if not isinstance(data.get(key), str):
            raise ValueError(f"{key!r} is not a string")
    if not isinstance(data.get("complete"), bool):
        raise ValueError("'complete' is not true or false")
    staging = data["staging"]
    if staging and not _STAGING_NAME.fullmatch(staging):
        raise ValueError(f"'staging' names {staging[:60]!r}, which is not a staging folder")
    return Manifest(
        files=_file_table(data.get("files"), "files"),
        complete=data["complete"],
        set_id=data["set"],
        command=data["command"],
        staging=staging,
        replaces=_file_table(data.get("replaces"), "replaces"),
    )


def _manifest_at(dir_fd: int) -> Manifest | None:
    """The folder's manifest; None without a marker; ``problem`` set when it is not valid."""
    st = _lstat(dir_fd, MARKER)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        return Manifest(complete=False, problem=f"it is {_describe(st.st_mode)}")
    data = _read_at(dir_fd, MARKER)
    if data is None:
        return Manifest(complete=False, problem="it cannot be read")
    try:
        return parse_manifest(data.decode("utf-8"))
    except UnicodeDecodeError:
        return Manifest(complete=False, problem="not UTF-8 text")
    except ValueError as exc:
        return Manifest(complete=False, problem=str(exc))


def read_manifest(folder: Path) -> Manifest | None:
    """The folder's manifest; None without one (or without the folder).

    A marker that is not a valid manifest comes back with ``problem`` saying why, and no files.
    """
    try:
        with _open_folder(Path(folder)) as dir_fd:
            return _manifest_at(dir_fd)
    except OSError:
        return None


def is_complete(folder: Path) -> bool:
    """Whether the folder holds a whole set: manifest complete and every file as it lists."""
    try:
        with _open_folder(Path(folder)) as dir_fd:
            m = _manifest_at(dir_fd)
            if m is None or not m.valid or not m.complete:
                return False
            return all(_digest_at(dir_fd, name) == d for name, d in m.files.items())
    except OSError:
        return False


def _owned(dir_fd: int, name: str, m: Manifest | None) -> bool:
    """Whether ``name`` is a regular file the planner wrote (listed, unchanged since)."""
    if m is None or not m.valid:
        return False
    digests = {m.files.get(name), m.replaces.get(name)} - {None}
    return bool(digests) and _digest_at(dir_fd, name) in digests


def _write_manifest(dir_fd: int, m: Manifest) -> None:
    """Write the manifest to a fresh temporary file, then rename it over the marker."""
    tmp = f"{MARKER}.{uuid.uuid4().hex[:8]}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
        try:
            os.write(fd, m.to_text().encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(tmp, MARKER, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


# ---- the folder ----------------------------------------------------------------------------
#: Folders this process holds the lock of ((device, inode) -> the locked folder descriptor).
_HELD: dict[tuple[int, int], int] = {}


def _shown(names: list[str]) -> str:
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


def _foreign_entries(dir_fd: int) -> list[str]:
    """Entries of a folder other than the planner's own (staging folders, an old empty lock)."""
    out = []
    with os.scandir(dir_fd) as entries:
        for e in entries:
            if e.name.startswith(STAGING_PREFIX) and e.is_dir(follow_symlinks=False):
                continue
            if e.name == LOCK and _is_old_lock(dir_fd):
                continue
            out.append(e.name + ("/" if e.is_dir(follow_symlinks=False) else ""))
    return sorted(out)


def _is_old_lock(dir_fd: int) -> bool:
    st = _lstat(dir_fd, LOCK)
    return st is not None and stat.S_ISREG(st.st_mode) and st.st_size == 0


def _check(folder: Path, dir_fd: int, *, force: bool, command: str | None) -> Manifest | None:
    """Refuse a folder the planner may not write (see the module docstring); its manifest."""
    m = _manifest_at(dir_fd)
    if m is None:
        others = _foreign_entries(dir_fd)
        if others and not force:
            raise InputError(
                f"{folder} already has other files ({_shown(others)}), not written by "
                "fabric-planner; pass --force to write beside them, or choose another -o"
            )
        return m
    st = _lstat(dir_fd, MARKER)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"{folder / MARKER} is {_describe(st.st_mode)}, not a manifest fabric-planner "
            "wrote; the planner never replaces it, even with --force: move it away or choose "
            "another -o"
        )
    if not m.valid:
        if not force:
            raise InputError(
                f"{folder / MARKER} is not a fabric-planner manifest ({m.problem}), so the "
                "planner cannot tell its own files from others; pass --force to write beside "
                "them (it then replaces or removes none of them), or choose another -o"
            )
        return m
    if command is not None and m.files and not force and not _same_kind(m.command, command):
        listed = sorted(m.files)
        others = [n for n in _foreign_entries(dir_fd) if n not in m.files and n != MARKER]
        extra = f"; beside them {_shown(others)}" if others else ""
        raise InputError(
            f"{folder} holds the output of `{m.command}` ({len(listed)} files: "
            f"{_shown(listed)}{extra}), which `{command or 'this command'}` does not replace; "
            "pass --force to replace the files of that set (nothing else is touched), or "
            "choose another -o"
        )
    return m


def _same_kind(old: str, new: str) -> bool:
    """Whether a set of command ``new`` may replace one of command ``old`` without --force."""
    return old == new or (old in REPORT_COMMANDS and new in REPORT_COMMANDS)


def _limit(folder: Path, name: str, default: int) -> int:
    """The file system's ``os.pathconf`` limit ``name`` at the folder's nearest existing parent."""
    parent = folder.absolute()
    while True:
        try:
            if parent.is_dir():
                return int(os.pathconf(parent, name))
        except (OSError, ValueError):
            return default
        if parent.parent == parent:
            return default
        parent = parent.parent


def check_folder_name(folder: Path) -> None:
    """Refuse an output folder whose name the file system cannot hold (before any time is spent).

    Every name along the path must fit the file system's longest name (``PC_NAME_MAX`` bytes,
    :data:`DEFAULT_NAME_MAX` where it does not say) and the whole path its longest path
    (``PC_PATH_MAX``, :data:`DEFAULT_PATH_MAX`); otherwise :class:`InputError` names the folder,
    the name at fault, its length and the limit (``os`` would say only "File name too long").
    """
    folder = Path(folder)
    name_max = _limit(folder, "PC_NAME_MAX", DEFAULT_NAME_MAX)
    for part in folder.parts:
        size = len(os.fsencode(part))
        if size > name_max and part != folder.anchor:
            shown = part if len(part) <= 40 else f"{part[:20]}...{part[-12:]}"
            raise InputError(
                f"the folder name {shown!r} in {_short(folder)} is too long: {size} bytes, and "
                f"the file system allows at most {name_max} bytes a name; choose a shorter -o"
            )
    path_max = _limit(folder, "PC_PATH_MAX", DEFAULT_PATH_MAX)
    size = len(os.fsencode(str(folder.absolute())))
    if size >= path_max:
        raise InputError(
            f"the folder path {_short(folder)} is too long: {size} bytes, and the file system "
            f"allows at most {path_max - 1} bytes a path; choose a shorter -o"
        )


def _short(folder: Path) -> str:
    """A path for a message: whole when short, else its start and end."""
    text = str(folder)
    return text if len(text) <= 120 else f"{text[:60]}...{text[-40:]}"


def check_folder(folder: Path, *, force: bool = False, command: str | None = None) -> None:
    """Refuse a folder the planner may not write (before any time is spent), unless forced.

    A file in the folder's place; a folder with other files and no manifest, or with a marker
    that is not a valid manifest (both allowed with ``force``); a manifest that is not a regular
    file (never allowed); with ``command``, a set another kind of command wrote (allowed with
    ``force``); a name the file system cannot hold (:func:`check_folder_name`). Raises
    :class:`InputError` naming what is in the way.
    """
    folder = Path(folder)
    check_folder_name(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} exists and is not a folder; choose another -o")
    if not folder.is_dir():
        return
    try:
        with _open_folder(folder) as dir_fd:
            _check(folder, dir_fd, force=force, command=command)
    except OSError as exc:
        raise InputError(f"cannot read the folder {folder} ({exc.strerror or exc})") from None


@contextlib.contextmanager
def claimed(folder: Path, *, force: bool = False, command: str | None = None) -> Iterator[Path]:
    """Create and lock a folder for writing, for as long as the block runs.

    Refuses what :func:`check_folder` refuses (``command``: the command that will write), a
    folder it cannot write into, and a folder another run is writing (:class:`FolderBusy`);
    finishes a swap a killed run left half done, and removes staging folders it abandoned.
    Re-entrant within a process.
    """
    folder = Path(folder)
    with _claim(folder, force=force, command=command):
        yield folder


@contextlib.contextmanager
def _claim(folder: Path, *, force: bool, command: str | None) -> Iterator[int]:
    """:func:`claimed`, yielding the locked folder's descriptor."""
    check_folder_name(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder} exists and is not a folder; choose another -o")
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"cannot create the folder {folder} ({exc.strerror or exc})") from None
    try:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        if key in _HELD:
            yield _HELD[key]
            return
        lock_fd = _lock(folder, fd)
        _HELD[key] = fd
        try:
            _check(folder, fd, force=force, command=command)
            if not os.access(folder, os.W_OK | os.X_OK):
                raise InputError(
                    f"cannot write into {folder} (permission denied); choose another -o"
                )
            _recover(folder, fd, lock_file=lock_fd is not None)
            yield fd
        finally:
            del _HELD[key]
            if lock_fd is not None:  # removed while still held, then released
                with contextlib.suppress(OSError):
                    os.unlink(LOCK, dir_fd=fd)
                os.close(lock_fd)
            if created and _lstat(fd, MARKER) is None:
                # Nothing was written (bad input, Ctrl-C, an error): leave no empty folder behind.
                with contextlib.suppress(OSError):
                    folder.rmdir()
    finally:
        os.close(fd)  # closing the locked descriptor releases the lock


def _busy(folder: Path) -> FolderBusy:
    return FolderBusy(
        f"another fabric-planner run is writing into {folder}; wait for it to finish, or "
        "choose another -o"
    )


def _lock(folder: Path, dir_fd: int) -> int | None:
    """Lock the folder (``flock`` on its own descriptor); None, or the lock file's descriptor.

    Where a folder cannot be locked (NFS emulates ``flock`` with byte-range locks, which need a
    file open for writing), the lock is the file :data:`LOCK` instead, which the run removes
    while it still holds it (see :func:`_lock_file`).
    """
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return None
    except OSError as exc:
        if exc.errno in _BUSY:
            raise _busy(folder) from None
        if exc.errno not in _NO_FOLDER_LOCK:
            raise InputError(f"cannot lock the folder {folder} ({exc.strerror or exc})") from None
    return _lock_file(folder, dir_fd)


def _lock_file(folder: Path, dir_fd: int) -> int:
    """Lock :data:`LOCK` (created without following a link); its descriptor.

    The run that holds it removes it before it lets go, so a run that locked a file no longer
    in the folder (it opened the removed one) takes the new one instead. Anything but an empty
    regular file of that name is not the planner's: refused, never removed.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    while True:
        try:
            fd = os.open(LOCK, flags, 0o666, dir_fd=dir_fd)
        except OSError as exc:
            st = _lstat(dir_fd, LOCK)
            kind = "" if st is None else f"; it is {_describe(st.st_mode)}"
            raise InputError(
                f"cannot lock the folder {folder} with {LOCK} ({exc.strerror or exc}{kind})"
            ) from None
        held = os.fstat(fd)
        if not stat.S_ISREG(held.st_mode) or held.st_size:
            os.close(fd)
            what = "a file" if stat.S_ISREG(held.st_mode) else _describe(held.st_mode)
            raise InputError(
                f"{folder / LOCK} is {what} fabric-planner did not write, where it locks the "
                "folder; move it away or choose another -o"
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            now = _lstat(dir_fd, LOCK)
        except OSError as exc:
            os.close(fd)
            if exc.errno in _BUSY:
                raise _busy(folder) from None
            raise InputError(f"cannot lock the folder {folder} ({exc.strerror or exc})") from None
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            return fd
        os.close(fd)


def _open_staging(dir_fd: int, name: str) -> int | None:
    """A descriptor of the staging folder ``name`` (a real folder, not a link); None if none."""
    if not _STAGING_NAME.fullmatch(name):
        return None
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None


def _remove_staging(dir_fd: int, name: str) -> None:
    st = _lstat(dir_fd, name)
    if st is not None and stat.S_ISDIR(st.st_mode):  # a link of that name is left alone
        shutil.rmtree(name, ignore_errors=True, dir_fd=dir_fd)


def _recover(folder: Path, dir_fd: int, *, lock_file: bool = False) -> None:
    """Finish a swap a killed run left half done; drop staging folders of runs that died before.

    Removes the empty lock file older versions left (unless ``lock_file``: it is this run's).
    """
    m = _manifest_at(dir_fd)
    if m is not None and m.valid and not m.complete and m.staging:
        staging_fd = _open_staging(dir_fd, m.staging)
        if staging_fd is not None:
            try:
                _swap(folder, dir_fd, staging_fd, m, staged_checked=False)
            finally:
                os.close(staging_fd)
    with os.scandir(dir_fd) as entries:
        stale = [e.name for e in entries if e.name.startswith(STAGING_PREFIX)]
    for name in stale:
        _remove_staging(dir_fd, name)
    if not lock_file and _is_old_lock(dir_fd):
        with contextlib.suppress(OSError):
            os.unlink(LOCK, dir_fd=dir_fd)


def _swap(folder: Path, dir_fd: int, staging_fd: int, m: Manifest, *, staged_checked: bool) -> None:
    """Rename the staged files in, remove the old set's leftovers, mark the set complete.

    ``staged_checked``: the staged files and the names they take were checked by this run. A
    run finishing another's swap checks them here: a staged file moves in only when it is a
    regular file with its listed SHA-256, and only over nothing or a file of either set.
    """
    for name, digest in m.files.items():
        if not staged_checked:
            if _digest_at(staging_fd, name) != digest:
                continue  # already moved in (or not a file this set wrote)
            st = _lstat(dir_fd, name)
            if st is not None and not _owned(dir_fd, name, m):
                kind = "" if stat.S_ISREG(st.st_mode) else f" ({_describe(st.st_mode)})"
                raise InputError(
                    f"{folder} holds {name}{kind}, not written by fabric-planner, where the "
                    "set a killed run left half written goes; move it away, or choose another -o"
                )
        os.replace(name, name, src_dir_fd=staging_fd, dst_dir_fd=dir_fd)
    for name, digest in m.replaces.items():
        if name not in m.files and _digest_at(dir_fd, name) == digest:
            os.unlink(name, dir_fd=dir_fd)
    _write_manifest(dir_fd, Manifest(files=m.files, set_id=m.set_id, command=m.command))
    _remove_staging(dir_fd, m.staging)


def write_set(
    folder: Path,
    files: Mapping[str, Writer],
    *,
    force: bool = False,
    command: str = "",
    carry: Callable[[str], bool] | None = None,
    formats: Collection[str] | None = None,
) -> list[Path]:
    """Replace the folder's set of files with ``files`` (name -> writer), as one set.

    ``carry`` names files of the previous set to keep, unchanged, in the new one (when the new set
    does not write them itself); every other file of the previous set is removed. ``formats``
    (default: those of the enclosing :func:`output_formats`, else all) drops the files of the new
    set (carried ones included) whose suffix is a table or picture format not among them. Returns
    the paths written. Raises :class:`InputError` (nothing changed) when a name is not a plain
    file name, when anything the planner did not write stands where the new set needs a name,
    when the folder is refused (:func:`check_folder`), or when writing fails.
    """
    folder = Path(folder)
    files = dict(files)
    for name in files:
        child(folder, name)
        if not _is_set_name(name):
            raise ValueError(f"{name!r} is reserved")
    chosen = _FORMATS.get() if formats is None else frozenset(formats)
    with _claim(folder, force=force, command=command) as dir_fd:
        old = _check(folder, dir_fd, force=force, command=command)
        trusted = old if old is not None and old.valid else None
        if carry is not None and trusted is not None:
            for name, digest in trusted.files.items():
                if name not in files and carry(name):
                    data = _read_at(dir_fd, name)
                    if data is not None and hashlib.sha256(data).hexdigest() == digest:
                        files[name] = bytes_writer(data)
        files = {name: write for name, write in files.items() if _kept(name, chosen)}
        _refuse_blocked(folder, dir_fd, files, trusted)
        set_id = uuid.uuid4().hex
        staging = f"{STAGING_PREFIX}{set_id}"
        try:
            os.mkdir(staging, 0o700, dir_fd=dir_fd)
            staging_fd = os.open(staging, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            raise InputError(f"cannot write into {folder} ({exc.strerror or exc})") from None
        try:
            try:
                digests: dict[str, str] = {}
                for name, write in files.items():
                    write(folder / staging / name)
                    written = _digest_at(staging_fd, name)
                    if written is None:
                        raise OSError(errno.EINVAL, f"{name} was not written as a regular file")
                    digests[name] = written
                previous: dict[str, str] = {}
                if trusted is not None:
                    previous = {**trusted.replaces, **trusted.files}
                swap = Manifest(
                    files=digests,
                    complete=False,
                    set_id=set_id,
                    command=command,
                    staging=staging,
                    replaces=previous,
                )
                _write_manifest(dir_fd, swap)
            except OSError as exc:
                _remove_staging(dir_fd, staging)
                raise InputError(f"cannot write into {folder} ({exc.strerror or exc})") from None
            except BaseException:
                _remove_staging(dir_fd, staging)
                raise
            try:
                _swap(folder, dir_fd, staging_fd, swap, staged_checked=True)
            except OSError as exc:
                raise InputError(
                    f"cannot finish writing into {folder} ({exc.strerror or exc}); the next run "
                    "into it completes the set"
                ) from None
        finally:
            os.close(staging_fd)
    return [folder / name for name in files]


def _refuse_blocked(
    folder: Path, dir_fd: int, files: Mapping[str, Writer], old: Manifest | None
) -> None:
    """Raise InputError when anything the planner did not write stands where a file goes."""
    blocked = []
    for name in files:
        st = _lstat(dir_fd, name)
        if st is None or _owned(dir_fd, name, old):
            continue
        regular = stat.S_ISREG(st.st_mode)
        blocked.append(name if regular else f"{name} ({_describe(st.st_mode)})")
    if blocked:
        raise InputError(
            f"{folder} holds {', '.join(blocked)}, not written by fabric-planner (or changed "
            "since); the planner never replaces those, even with --force: move them away or "
            "choose another -o"
        )
