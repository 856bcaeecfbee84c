"""The scenarios of a study: a grid or a list of change sets, named, keyed and validated.

A scenario is one change set as ``Instance.with_changes`` takes it (``{"cluster.gpus": 8192}``).
Its **name** is made from its changes (``gpus=8192+nic_gbps=800``: the shortest unambiguous tail
of each key, ``=`` and the value, ``+`` between them), is safe as a file name
(``planner.output.safe_name``) and unique within the study. Its **key** is a hash of everything
its result depends on (the base instance, the changes, the catalog and the run settings): a
re-run of the same study finds its finished scenarios by key (``planner.study.parts``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from planner.errors import InputError

# The names are shared with ``--set`` (``planner.loading.derived_instance``): one naming.
from planner.loading import BASELINE as BASELINE
from planner.loading import MAX_INSTANCE_NAME as MAX_INSTANCE_NAME
from planner.loading import MAX_VALUE_CHARS as MAX_VALUE_CHARS
from planner.loading import instance_name as instance_name
from planner.loading import scenario_name as scenario_name
from planner.loading import short_labels as short_labels
from planner.loading import value_text as value_text
from planner.report import SUMMARY_SCHEMA
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance

#: Version of the part files' content: a change here makes old parts miss (recomputed).
PART_FORMAT = 1
#: Most scenarios in one study (each is validated, keyed and kept in memory before any runs).
MAX_SCENARIOS = 100_000
#: Columns of a study table before the changed keys: the scenario's name.
SCENARIO_COLUMN = "scenario"
#: Columns after the changed keys: how the scenario ended (``ok``/``error``), the error's message.
STATUS_COLUMNS: dict[str, Any] = {"status": pl.Utf8, "error": pl.Utf8}
#: The plan's summary columns, with the summary's ``status`` renamed (the study's ``status``
#: says whether the scenario ran): the plan's Status value.
PLAN_COLUMNS: dict[str, Any] = {
    ("plan_status" if name == "status" else name): dtype for name, dtype in SUMMARY_SCHEMA.items()
}
#: Summary columns that measure wall-clock time: they differ between two runs of one scenario.
TIMING_COLUMNS = ("solve_s",)

Changes = dict[str, Any]
#: A grid (``{dotted.key: [values]}``) or a list of change sets.
GridOrChanges = Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Scenario:
    """One scenario of a study, validated: its name, changes, instance and key."""

    name: str
    """Short, readable, unique within the study, safe as a file name."""
    changes: Changes
    """The dotted keys changed and their values, in the study's key order."""
    instance: Instance
    """The base instance with the changes applied, named ``<base>.<scenario>``."""
    key: str
    """Hash of what the result depends on: the same changes of the same study, the same key."""


@dataclass(frozen=True)
class Study:
    """The scenarios of a study, in order, and the columns of its table."""

    scenarios: tuple[Scenario, ...]
    keys: tuple[str, ...]
    """Every key some scenario changes, in first-seen order (one column each)."""
    schema: dict[str, Any]
    """Columns of the study table: scenario, one per key, status, error, the plan's summary."""


def change_sets(grid_or_change_sets: GridOrChanges) -> list[Changes]:
    """The change sets of a grid (cartesian product, last key fastest) or of a list, as given.

    Raises InputError for an empty grid or list, a key without values, a key that is not a
    dotted field path, or a change set that is not a table of them.
    """
    if isinstance(grid_or_change_sets, Mapping):
        grid = dict(grid_or_change_sets)
        if not grid:
            raise InputError("the study's grid is empty: give at least one key and its values")
        for key, values in grid.items():
            _check_key(key, where="grid")
            if isinstance(values, str | bytes) or not isinstance(values, Sequence):
                raise InputError(f"grid {key}: expected a list of values, got {values!r:.80}")
            if not values:
                raise InputError(f"grid {key}: no values")
        count = math.prod(len(values) for values in grid.values())
        if count > MAX_SCENARIOS:
            sizes = " x ".join(f"{len(v):,} {k}" for k, v in grid.items())
            raise InputError(
                f"the grid makes {count:,} scenarios ({sizes}); a study takes at most "
                f"{MAX_SCENARIOS:,}"
            )
        keys = list(grid)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())]
    if isinstance(grid_or_change_sets, str | bytes) or not isinstance(
        grid_or_change_sets, Sequence
    ):
        raise InputError("a study takes a grid {key: [values]} or a list of change sets")
    sets = list(grid_or_change_sets)
    if not sets:
        raise InputError("the study has no scenarios: the list of change sets is empty")
    if len(sets) > MAX_SCENARIOS:
        raise InputError(f"{len(sets):,} change sets; a study takes at most {MAX_SCENARIOS:,}")
    out = []
    for i, changes in enumerate(sets):
        if not isinstance(changes, Mapping):
            raise InputError(f"change set {i}: expected a table of key: value, got {changes!r:.80}")
        for key in changes:
            _check_key(key, where=f"change set {i}")
        out.append(dict(changes))
    return out


def _check_key(key: object, *, where: str) -> None:
    if not isinstance(key, str) or not key or not all(part.strip() for part in key.split(".")):
        raise InputError(f"{where}: {key!r:.80} is not a dotted field path like cluster.gpus")


def build_study(
    base: Instance,
    grid_or_change_sets: GridOrChanges,
    *,
    settings: Mapping[str, Any],
    catalog: Catalog | None = None,
) -> Study:
    """Expand, name, key and validate every scenario before anything runs.

    ``settings`` are the run settings a result depends on (verification, time limit); they and
    the catalog enter every key. Raises InputError naming the scenario and the key at fault for
    a change ``Instance.with_changes`` refuses, and for a scenario that appears twice.
    """
    sets = change_sets(grid_or_change_sets)
    keys = list(dict.fromkeys(k for changes in sets for k in changes))
    labels = short_labels(keys)
    common = _digest(
        {
            "format": PART_FORMAT,
            "instance": base.model_dump(mode="json"),
            "catalog": None if catalog is None else catalog.model_dump(mode="json"),
            "settings": dict(settings),
        }
    )
    scenarios: list[Scenario] = []
    names: set[str] = set()
    seen: dict[str, str] = {}
    for changes in sets:
        name = _unique(scenario_name(changes, labels), names)
        same = _digest(sorted(changes.items()))
        if same in seen:
            raise InputError(f"scenario {name}: the same changes as scenario {seen[same]}")
        seen[same] = name
        # The name enters the key: a part holds the scenario's name and its instance's.
        key = _digest({"study": common, "name": name, "changes": sorted(changes.items())})
        try:
            inst = base.with_changes(changes)
        except InputError as exc:
            raise InputError(f"scenario {name}: {exc}") from None
        # A name the schema accepts by construction (instance_name checks it).
        inst = inst.model_copy(update={"name": instance_name(base.name, name, key)})
        scenarios.append(Scenario(name, changes, inst, key))
    schema: dict[str, Any] = {SCENARIO_COLUMN: pl.Utf8}
    for key in keys:
        schema[key] = value_dtype([c[key] for c in sets if key in c])
    schema |= STATUS_COLUMNS | PLAN_COLUMNS
    clash = [k for k in keys if k in STATUS_COLUMNS or k in PLAN_COLUMNS or k == SCENARIO_COLUMN]
    if clash:
        raise InputError(f"{clash[0]}: a study cannot change a key named like a column")
    return Study(tuple(scenarios), tuple(keys), schema)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``, ... when two scenarios' names come out the same."""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    taken.add(candidate)
    return candidate


def value_dtype(values: Sequence[Any]) -> Any:
    """The column type of a changed key's values: one scalar type, else Utf8 (JSON text)."""
    kinds = {type(v) for v in values}
    if kinds == {bool}:
        return pl.Boolean
    if kinds == {int}:
        return pl.Int64
    if kinds and kinds <= {int, float}:
        return pl.Float64
    return pl.Utf8


def column_value(value: Any, dtype: Any) -> Any:
    """A change's value as its column holds it (JSON text for lists, tables and mixed types)."""
    if dtype == pl.Utf8 and not isinstance(value, str):
        return json.dumps(value, sort_keys=True, default=str)
    if dtype == pl.Float64:
        return float(value)
    return value
