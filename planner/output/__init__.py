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

from planner.output.entries import (
    describe_mode,
    digest_at,
    lstat_at,
    open_folder,
    read_at,
    sha256,
)
from planner.output.folder import (
    DEFAULT_NAME_MAX,
    DEFAULT_PATH_MAX,
    LOCK,
    MANIFEST_FORMAT,
    MARKER,
    REPORT_COMMANDS,
    STAGING_PREFIX,
    WRITER,
    FolderBusy,
    Manifest,
    check_folder,
    check_folder_name,
    claimed,
    is_complete,
    parse_manifest,
    read_manifest,
    write_set,
)
from planner.output.values import (
    FIGURE_FORMATS,
    MAX_NAME,
    OUTPUT_FORMATS,
    SIGNIFICANT_DIGITS,
    TABLE_FORMATS,
    Writer,
    bytes_writer,
    child,
    chosen_formats,
    json_text,
    kept_in_formats,
    output_formats,
    parse_formats,
    round_value,
    rounded,
    safe_name,
    table_writers,
    text_writer,
)

__all__ = [
    "DEFAULT_NAME_MAX",
    "DEFAULT_PATH_MAX",
    "FIGURE_FORMATS",
    "FolderBusy",
    "LOCK",
    "MANIFEST_FORMAT",
    "MARKER",
    "MAX_NAME",
    "Manifest",
    "OUTPUT_FORMATS",
    "REPORT_COMMANDS",
    "SIGNIFICANT_DIGITS",
    "STAGING_PREFIX",
    "TABLE_FORMATS",
    "WRITER",
    "Writer",
    "bytes_writer",
    "check_folder",
    "check_folder_name",
    "child",
    "chosen_formats",
    "claimed",
    "describe_mode",
    "digest_at",
    "is_complete",
    "json_text",
    "kept_in_formats",
    "lstat_at",
    "open_folder",
    "output_formats",
    "parse_formats",
    "parse_manifest",
    "read_at",
    "read_manifest",
    "round_value",
    "rounded",
    "safe_name",
    "sha256",
    "table_writers",
    "text_writer",
    "write_set",
]
