"""Output: entries of a folder read through its descriptor, never through a symbolic link.

The rules every written file follows are the package docstring (``planner.output``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


#: Bytes read at a time when hashing a file.
_BLOCK_BYTES = 1 << 20
#: Flags of every read of an entry: never through a symbolic link, never waiting on a FIFO.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


# ---- entries, never through a link -----------------------------------------------------------
def describe_mode(mode: int) -> str:
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


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
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
    st = lstat_at(dir_fd, name)
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


def digest_at(dir_fd: int, name: str) -> str | None:
    """SHA-256 of the regular file ``name`` of the folder; None when it is not one."""
    with _open_regular(dir_fd, name) as fd:
        return None if fd is None else _digest_fd(fd)


def read_at(dir_fd: int, name: str) -> bytes | None:
    """The bytes of the regular file ``name`` of the folder; None when it is not one."""
    with _open_regular(dir_fd, name) as fd:
        if fd is None:
            return None
        chunks = list(iter(lambda: os.read(fd, _BLOCK_BYTES), b""))
        return b"".join(chunks)


@contextlib.contextmanager
def open_folder(folder: Path) -> Iterator[int]:
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
    with open_folder(path.parent) as dir_fd:
        digest = digest_at(dir_fd, path.name)
    if digest is None:
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return digest
