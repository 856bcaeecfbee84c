"""A study's folder: its record, its tables and figures, and the parts that let it resume.

The folder follows ``planner.output``'s rules (one set of files, a manifest, a lock) with one
addition: ``parts/``, the finished scenarios (``planner.study.parts``), which no set lists and no
set replaces. ``study.json`` says which study the folder holds (the instance, every scenario's
name, changes and key) and whether it finished; it is written first, as the folder's set, before
any scenario runs. So a run killed midway leaves a folder the planner recognises: the same
command run again finds the same study and resumes it, with or without ``--force``; a folder
holding another study or another command's output is replaced only with ``--force``.

*The same study* is the same instance (by name) over the same scenarios (names and changes, in
any order): what the folder's ``study.json`` lists. Its scenarios' keys may differ (the catalog's content,
the instance file, ``--time-limit`` changed since): the study resumes, the scenarios whose key
changed are planned again (their old parts are kept: change the input back and they are reused),
and :class:`Opened` says which inputs changed, as ``study.json`` records each scenario's
(``planner.study.scenarios.KEY_INPUTS``).

A ``study.json`` the planner cannot use is named: a link, a folder or another file that is not
regular, or a file changed since the planner wrote it is never read or replaced, even with
``--force`` (``planner.output``'s rule), and a missing one needs ``--force``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from planner.errors import InputError
from planner.loading import read_text
from planner.output import (
    Manifest,
    Writer,
    bytes_writer,
    read_manifest,
    safe_name,
    sha256,
    table_writers,
    text_writer,
    write_set,
)
from planner.schema.instance import Instance
from planner.study.pareto import PARETO, with_pareto
from planner.study.parts import PARTS_DIR, parts_dir, remove_temporaries
from planner.study.run import StudyRun
from planner.study.scenarios import KEY_INPUTS, Study

#: The study's record in its folder.
STUDY_FILE = "study.json"
#: The command a study's manifest names.
COMMAND = "sweep"
#: Format of ``study.json``.
STUDY_FORMAT = 1


def study_id(study: Study) -> str:
    """One hash of every scenario's key, in order: the same study, the same id."""
    return hashlib.sha256("\n".join(s.key for s in study.scenarios).encode()).hexdigest()[:20]


def study_record(instance_name: str, study: Study, run: StudyRun | None = None) -> dict[str, Any]:
    """``study.json``: the study's id, instance, keys and scenarios; after a run, its counts."""
    record: dict[str, Any] = {
        "format": STUDY_FORMAT,
        "study": study_id(study),
        "instance": instance_name,
        "keys": list(study.keys),
        # Complete: every scenario ran and is kept (an error is planned again by the next run).
        "complete": run is not None and run.complete,
        "scenarios": [
            {"name": s.name, "key": s.key, "changes": s.changes, "inputs": dict(s.inputs)}
            for s in study.scenarios
        ],
    }
    if study.merged:
        record["merged"] = list(study.merged)
    if run is not None:
        record |= {
            "computed": run.computed,
            "reused": run.reused,
            "lost": run.lost,
            "stale": run.stale,
            "damaged": len(run.damaged),
        }
    return record


def _record_writer(record: dict[str, Any]) -> Writer:
    return text_writer(json.dumps(record, indent=2, default=str) + "\n")


def read_record(folder: Path) -> dict[str, Any] | None:
    """The folder's ``study.json``, or None when it has none (or one that is not a record).

    Read as every input is (``planner.loading.read_text``: a regular file of at most 64 MiB,
    UTF-8 within the nesting limits) and never through a link: whatever
    stands at that name, the folder's own rules (``planner.output``) decide what happens to it.
    """
    path = Path(folder) / STUDY_FILE
    if path.is_symlink():
        return None
    try:
        data = json.loads(read_text(path))
    except (InputError, json.JSONDecodeError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _names(record: dict[str, Any]) -> list[Any]:
    scenarios = record.get("scenarios")
    if not isinstance(scenarios, list):
        return []
    return [s.get("name") if isinstance(s, dict) else None for s in scenarios]


def _as_json(value: Any) -> Any:
    """``value`` as ``study.json`` holds it (so a record read back compares equal)."""
    return json.loads(json.dumps(value, default=str))


def _grid(record: Mapping[str, Any]) -> list[Any]:
    """The scenarios a record lists: (name, changes) each, as JSON holds them."""
    scenarios = record.get("scenarios")
    if not isinstance(scenarios, list):
        return []
    return [[s.get("name"), s.get("changes")] if isinstance(s, dict) else None for s in scenarios]


def same_study(record: Mapping[str, Any], instance_name: str, study: Study) -> bool:
    """Whether a record is this study's: the same instance, the same scenarios and changes.

    In any order (a grid's values listed in another order give the same scenarios), and
    whatever their keys: the inputs of a scenario may have changed since.
    """
    old = sorted(_grid(record), key=_sort_key)
    new = sorted(_as_json([[s.name, s.changes] for s in study.scenarios]), key=_sort_key)
    return record.get("instance") == instance_name and old == new


def _sort_key(entry: Any) -> str:
    return json.dumps(entry, sort_keys=True, default=str)


def changed_inputs(folder: Path, record: Mapping[str, Any], study: Study) -> tuple[str, ...]:
    """Why scenarios of a resumed study are planned again: one line per set of changed inputs.

    A scenario counts when its key is not the one ``record`` lists and no part of its new key
    is in the folder (one that is, from an earlier run with these inputs, is reused); and, when
    the record says the study finished, when its part is gone.
    """
    from planner.study.parts import part_path

    old = {s.get("name"): s for s in record.get("scenarios") or [] if isinstance(s, dict)}
    counts: dict[tuple[str, ...], int] = {}
    missing = 0
    for s in study.scenarios:
        before = old.get(s.name) or {}
        here = part_path(folder, s.key)
        if before.get("key") == s.key:
            # A finished study kept every scenario as a part: one gone is said.
            missing += record.get("complete") is True and not (here.exists() or here.is_symlink())
            continue
        if here.exists() or here.is_symlink():
            continue
        inputs = before.get("inputs")
        inputs = inputs if isinstance(inputs, dict) else {}
        what = tuple(
            words for name, words in KEY_INPUTS.items() if inputs.get(name) != s.inputs.get(name)
        )
        if not inputs:  # a record from before the inputs were recorded
            what = ("its inputs or settings",)
        counts[what] = counts.get(what, 0) + 1
    total = len(study.scenarios)
    notes = [
        f"{n} of {total} scenarios planned again: {_join(list(what))} changed since the last "
        "run (their old parts are kept)"
        for what, n in counts.items()
    ]
    if missing:
        notes.append(
            f"{missing} of {total} scenarios planned again: their part is missing from "
            f"{PARTS_DIR}/ (the study had finished)"
        )
    return tuple(notes)


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def check_record_file(folder: Path, manifest: Manifest | None) -> None:
    """Refuse a ``study.json`` the planner did not write or may not replace, naming it.

    A link, a folder or any entry that is not a regular file, and a regular file that the
    folder's manifest does not list as written (changed since, or never the planner's), are
    never read or replaced, even with ``--force`` (``planner.output``'s rule): said here, with
    the file's name, before anything else.
    """
    path = Path(folder) / STUDY_FILE
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"cannot read {path} ({exc.strerror or exc})") from None
    what = ""
    if stat.S_ISLNK(mode):
        what = "is a link"
    elif stat.S_ISDIR(mode):
        what = "is a folder"
    elif not stat.S_ISREG(mode):
        what = "is not a regular file (a FIFO, a socket or a device)"
    else:
        listed = (
            set()
            if manifest is None
            else {manifest.files.get(STUDY_FILE), manifest.replaces.get(STUDY_FILE)} - {None}
        )
        try:
            written = sha256(path) in listed
        except OSError as exc:
            raise InputError(f"cannot read {path} ({exc.strerror or exc})") from None
        if not written:
            what = (
                "is not written by fabric-planner, or was changed since (the folder's manifest "
                "does not list these bytes)"
            )
    if what:
        raise InputError(
            f"{path} {what}: it is not a study record the planner can read, and the planner "
            "never reads or replaces it, even with --force: move it away (the parts are kept "
            "and reused) or choose another -o"
        )


@dataclass(frozen=True)
class Opened:
    """What :func:`open_study` found in the folder."""

    resuming: bool
    """The folder held this study (finished or not): its parts are reused."""
    replanned: tuple[str, ...] = ()
    """Why some of its scenarios are planned again (:func:`changed_inputs`), one line each."""


def open_study(folder: Path, instance_name: str, study: Study, *, force: bool = False) -> Opened:
    """Make ``folder`` this study's (call it inside ``planner.output.claimed``); whether it resumes.

    The folder holds this study when its record names the same instance and scenarios
    (:func:`same_study`), finished or not: its parts are reused, and the scenarios whose inputs
    changed since are planned again (``Opened.replanned`` says why). Raises InputError, unless
    ``force``, when the folder holds another command's output, another study, or a study
    without its ``study.json``; and, even with ``force``, when ``study.json`` is not a file the
    planner wrote (:func:`check_record_file`) or ``parts`` is a link, a file or a folder the
    planner did not make (``planner.study.parts.parts_dir``). Then writes ``study.json`` (not
    complete) as the folder's set, so that a run killed from here on leaves a folder the next
    run recognises.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    check_record_file(folder, manifest)
    record = read_record(folder)
    same = (
        manifest is not None
        and manifest.command == COMMAND
        and record is not None
        and same_study(record, instance_name, study)
    )
    if manifest is not None and manifest.files and not same and not force:
        names = [s.name for s in study.scenarios]
        if manifest.command == COMMAND and record is None:
            what = (
                f"a study whose {STUDY_FILE} is missing or unreadable, so the planner cannot "
                "tell which study it is"
            )
        elif manifest.command == COMMAND and record is not None and _names(record) == names:
            what = (
                f"this study's scenarios of another instance ({record.get('instance')}: "
                "another file, or --set)"
            )
        elif manifest.command == COMMAND and record is not None:
            what = (
                f"another study (of {record.get('instance')}, "
                f"{len(record.get('scenarios') or [])} scenarios over "
                f"{', '.join(map(str, record.get('keys') or []))})"
            )
        else:
            what = f"the output of `{manifest.command or 'fabric-planner'}`"
        raise InputError(
            f"{folder} holds {what}; pass --force to replace it with this study (parts it "
            "shares are reused), or choose another -o"
        )
    # parts/ is the planner's own folder (never a link, never someone else's), checked before
    # anything is written; then the temporary parts a killed run was writing go (only those).
    parts_dir(folder, create=False)
    remove_temporaries(folder)
    replanned = changed_inputs(folder, record, study) if same and record is not None else ()
    write_set(
        folder,
        {STUDY_FILE: _record_writer(study_record(instance_name, study))},
        force=force,
        command=COMMAND,
        # Resuming: the last run's tables and figures stay until this run replaces them.
        carry=(lambda name: True) if same else None,
    )
    return Opened(same, replanned)


def flagged(table: pl.DataFrame) -> pl.DataFrame:
    """The study table with its per-GPU figures and ``pareto`` column.

    The front is over the scenarios ranked (``planner.study.pareto``: those that meet, in a
    verified study); all false when no ranked scenario has figures.
    """
    return with_pareto(table)


def write_study(
    folder: Path, instance_name: str, study: Study, run: StudyRun, *, force: bool = False
) -> pl.DataFrame:
    """Write the study's set: ``study.json`` (complete), tables, Pareto front and figures.

    ``study.csv``/``.parquet`` hold every scenario with its ``pareto`` flag,
    ``pareto.csv``/``.parquet`` the front alone, and the figures
    (``planner.study.figures.figure_files``) PNG and SVG. Returns the flagged table.
    """
    from planner.study.figures import FORMATS, render, study_figures
    from planner.study.page import study_page

    table = flagged(run.table)
    files: dict[str, Writer] = {STUDY_FILE: _record_writer(study_record(instance_name, study, run))}
    files |= table_writers("study", table)
    files |= table_writers("pareto", table.filter(pl.col(PARETO)))
    svgs: dict[str, bytes] = {}
    for stem, fig in study_figures(table, study.keys).items():
        for fmt in FORMATS:
            data = render(fig, fmt)
            files[f"{safe_name(stem)}.{fmt}"] = bytes_writer(data)
            if fmt == "svg":
                svgs[safe_name(stem)] = data
    base = study.scenarios[0].instance if study.scenarios else None
    files["report.html"] = text_writer(
        study_page(
            instance_name,
            "" if base is None else base.description,
            study.keys,
            table,
            svgs,
            computed=run.computed,
            reused=run.reused,
            assumptions_of_base=() if base is None else _base_assumptions(base, study.keys),
        )
    )
    write_set(folder, files, force=force, command=COMMAND)
    return table


def _base_assumptions(inst: Instance, keys: Sequence[str]) -> list[tuple[str, str]]:
    """The base instance's prices and lifetime, and which fields the study varies.

    A swept field takes each scenario's value; the table shows it.
    """
    o = inst.objective
    rows = [
        ("energy price", f"${o.energy_usd_per_kwh:g} per kWh"),
        ("PUE", f"{o.pue:g}"),
        ("lifetime", f"{o.lifetime_years:g} years"),
        (
            "objective weights",
            f"capex {o.capex_weight:g}, energy {o.energy_weight:g}, idle GPUs {o.idle_gpu_weight:g}",
        ),
        ("swept fields", ", ".join(keys) or "none"),
    ]
    return rows
