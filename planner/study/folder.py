"""A study's folder: its record, its tables and figures, and the parts that let it resume.

The folder follows ``planner.output``'s rules (one set of files, a manifest, a lock) with one
addition: ``parts/``, the finished scenarios (``planner.study.parts``), which no set lists and no
set replaces. ``study.json`` says which study the folder holds (the instance, every scenario's
name, changes and key) and whether it finished; it is written first, as the folder's set, before
any scenario runs. So a run killed midway leaves a folder the planner recognises: the same
command run again finds the same study and resumes it, with or without ``--force``; a folder
holding another study or another command's output is replaced only with ``--force``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from planner.errors import InputError
from planner.loading import read_text
from planner.output import (
    Writer,
    bytes_writer,
    read_manifest,
    safe_name,
    table_writers,
    text_writer,
    write_set,
)
from planner.schema.instance import Instance
from planner.study.pareto import PARETO, with_pareto
from planner.study.parts import parts_dir, remove_temporaries
from planner.study.run import StudyRun
from planner.study.scenarios import Study

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
            {"name": s.name, "key": s.key, "changes": s.changes} for s in study.scenarios
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


def open_study(folder: Path, instance_name: str, study: Study, *, force: bool = False) -> bool:
    """Make ``folder`` this study's (call it inside ``planner.output.claimed``); True to resume.

    Returns True when the folder already holds this study (finished or not): its parts are
    reused. Raises InputError, unless ``force``, when the folder holds another command's output
    or another study; and, even with ``force``, when its ``parts`` is a link, a file or a folder
    the planner did not make (``planner.study.parts.parts_dir``). Then writes ``study.json`` (not complete) as the folder's set, so that a
    run killed from here on leaves a folder the next run recognises.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    record = read_record(folder)
    same = (
        manifest is not None
        and manifest.command == COMMAND
        and record is not None
        and record.get("study") == study_id(study)
    )
    if manifest is not None and manifest.files and not same and not force:
        names = [s.name for s in study.scenarios]
        if manifest.command == COMMAND and record is not None and _names(record) == names:
            what = (
                "this study's scenarios planned under other settings (the instance's or the "
                "catalog's content, --set, --time-limit, --no-verify or another version of "
                "fabric-planner)"
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
            f"{folder} holds {what}; pass --force to replace it with this study, "
            "or choose another -o"
        )
    # parts/ is the planner's own folder (never a link, never someone else's), checked before
    # anything is written; then the temporary parts a killed run was writing go (only those).
    parts_dir(folder, create=False)
    remove_temporaries(folder)
    write_set(
        folder,
        {STUDY_FILE: _record_writer(study_record(instance_name, study))},
        force=force,
        command=COMMAND,
        # Resuming: the last run's tables and figures stay until this run replaces them.
        carry=(lambda name: True) if same else None,
    )
    return same


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
