"""Output: the manifest, the folder's lock, and whole sets written and swapped in.

The rules every written file follows are the package docstring (``planner.output``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from planner.errors import InputError
from planner.output.entries import describe_mode, digest_at, lstat_at, open_folder, read_at
from planner.output.values import (
    Writer,
    bytes_writer,
    child,
    chosen_formats,
    kept_in_formats,
    safe_name,
)

if TYPE_CHECKING:
    pass


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
#: Longest name of one folder or file (bytes) where the file system does not say
#: (``os.pathconf(..., "PC_NAME_MAX")``): 255 on Linux, macOS and Windows file systems.
DEFAULT_NAME_MAX = 255
#: Longest path (bytes) where the file system does not say (``PC_PATH_MAX``): Linux's 4,096.
DEFAULT_PATH_MAX = 4096
#: A staging folder's name: the prefix and a set id (``uuid4().hex``).
_STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"[0-9a-f]{32}")
#: A SHA-256 as the manifest writes it.
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: Commands whose sets share a report folder: each replaces another's set (keeping the analyses
#: it carries). ``""`` is a set written from Python without a command name.
REPORT_COMMANDS = frozenset({"", "solve", "evaluate", "simulate", "torus", "compare-fabrics"})
#: errno of ``flock`` when another run holds the lock.
_BUSY = (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
#: errno of ``flock`` on a folder's descriptor where the file system cannot lock folders.
_NO_FOLDER_LOCK = (errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.EISDIR)
#: Flags of every folder the planner opens inside a folder (staging): no symbolic link.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class FolderBusy(InputError):
    """Another run holds the folder's lock."""


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
    st = lstat_at(dir_fd, MARKER)
    if st is None:
        return None
    if not stat.S_ISREG(st.st_mode):
        return Manifest(complete=False, problem=f"it is {describe_mode(st.st_mode)}")
    data = read_at(dir_fd, MARKER)
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
        with open_folder(Path(folder)) as dir_fd:
            return _manifest_at(dir_fd)
    except OSError:
        return None


def is_complete(folder: Path) -> bool:
    """Whether the folder holds a whole set: manifest complete and every file as it lists."""
    try:
        with open_folder(Path(folder)) as dir_fd:
            m = _manifest_at(dir_fd)
            if m is None or not m.valid or not m.complete:
                return False
            return all(digest_at(dir_fd, name) == d for name, d in m.files.items())
    except OSError:
        return False


def _owned(dir_fd: int, name: str, m: Manifest | None) -> bool:
    """Whether ``name`` is a regular file the planner wrote (listed, unchanged since)."""
    if m is None or not m.valid:
        return False
    digests = {m.files.get(name), m.replaces.get(name)} - {None}
    return bool(digests) and digest_at(dir_fd, name) in digests


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
    st = lstat_at(dir_fd, LOCK)
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
    st = lstat_at(dir_fd, MARKER)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"{folder / MARKER} is {describe_mode(st.st_mode)}, not a manifest fabric-planner "
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
        with open_folder(folder) as dir_fd:
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
            if created and lstat_at(fd, MARKER) is None:
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
            st = lstat_at(dir_fd, LOCK)
            kind = "" if st is None else f"; it is {describe_mode(st.st_mode)}"
            raise InputError(
                f"cannot lock the folder {folder} with {LOCK} ({exc.strerror or exc}{kind})"
            ) from None
        held = os.fstat(fd)
        if not stat.S_ISREG(held.st_mode) or held.st_size:
            os.close(fd)
            what = "a file" if stat.S_ISREG(held.st_mode) else describe_mode(held.st_mode)
            raise InputError(
                f"{folder / LOCK} is {what} fabric-planner did not write, where it locks the "
                "folder; move it away or choose another -o"
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            now = lstat_at(dir_fd, LOCK)
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
    st = lstat_at(dir_fd, name)
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
            if digest_at(staging_fd, name) != digest:
                continue  # already moved in (or not a file this set wrote)
            st = lstat_at(dir_fd, name)
            if st is not None and not _owned(dir_fd, name, m):
                kind = "" if stat.S_ISREG(st.st_mode) else f" ({describe_mode(st.st_mode)})"
                raise InputError(
                    f"{folder} holds {name}{kind}, not written by fabric-planner, where the "
                    "set a killed run left half written goes; move it away, or choose another -o"
                )
        os.replace(name, name, src_dir_fd=staging_fd, dst_dir_fd=dir_fd)
    for name, digest in m.replaces.items():
        if name not in m.files and digest_at(dir_fd, name) == digest:
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
    chosen = chosen_formats() if formats is None else frozenset(formats)
    with _claim(folder, force=force, command=command) as dir_fd:
        old = _check(folder, dir_fd, force=force, command=command)
        trusted = old if old is not None and old.valid else None
        if carry is not None and trusted is not None:
            for name, digest in trusted.files.items():
                if name not in files and carry(name):
                    data = read_at(dir_fd, name)
                    if data is not None and hashlib.sha256(data).hexdigest() == digest:
                        files[name] = bytes_writer(data)
        files = {name: write for name, write in files.items() if kept_in_formats(name, chosen)}
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
                    written = digest_at(staging_fd, name)
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
        st = lstat_at(dir_fd, name)
        if st is None or _owned(dir_fd, name, old):
            continue
        regular = stat.S_ISREG(st.st_mode)
        blocked.append(name if regular else f"{name} ({describe_mode(st.st_mode)})")
    if blocked:
        raise InputError(
            f"{folder} holds {', '.join(blocked)}, not written by fabric-planner (or changed "
            "since); the planner never replaces those, even with --force: move them away or "
            "choose another -o"
        )
