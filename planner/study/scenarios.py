"""The scenarios of a study: a grid or a list of change sets, named, keyed and validated.

A scenario is one change set as ``Instance.with_changes`` takes it (``{"cluster.gpus": 8192}``).
Every scenario is validated before anything runs, as ``solve`` validates its instance: the
schema, then the checks against its catalog (``planner.checks.check_instance``: unknown switch
models and NICs, a NIC speed the NIC cannot run, a parallelism that does not multiply out, ...),
with the catalog file read. Two change sets that give the same instance once validated
(``cluster.gpus=1`` and ``1.0``, a value listed twice) are one scenario: the study says what it
merged (``Study.merged``).

Its **name** is made from its changes (``gpus=8192+nic_gbps=800``: the shortest unambiguous tail
of each key, ``=`` and the value, ``+`` between them), is safe as a file name
(``planner.output.safe_name``) and unique within the study. Its **key** is a hash of the
*content* its result depends on: the scenario's validated instance, the contents of its catalog
(not the file's name), the run settings, the part format and the planner's version. A re-run
finds its finished scenarios by key (``planner.study.parts``), so a changed catalog file, a
changed base instance or other settings plan the scenario again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from planner.checks import check_instance, check_run
from planner.errors import InputError

# The names are shared with ``--set`` (``planner.loading.derived_instance``): one naming.
from planner.loading import BASELINE as BASELINE
from planner.loading import MAX_INSTANCE_NAME as MAX_INSTANCE_NAME
from planner.loading import MAX_VALUE_CHARS as MAX_VALUE_CHARS
from planner.loading import changes_key, load_catalog
from planner.loading import instance_name as instance_name
from planner.loading import scenario_name as scenario_name
from planner.loading import short_labels as short_labels
from planner.loading import value_text as value_text
from planner.report.tables import SUMMARY_SCHEMA
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance, check_overlap

#: Version of the part files' content: a change here makes old parts miss (recomputed).
PART_FORMAT = 2
#: Most scenarios in one study (each is validated, keyed and kept in memory before any runs).
MAX_SCENARIOS = 100_000
#: The instance's name: never swept (each scenario's instance is named after its scenario).
NAME_KEY = "name"
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
    """Hash of the content the result depends on (instance, catalog contents, settings)."""
    catalog: Catalog
    """The scenario's catalog, read (and checked against) when the study was built."""
    inputs: Mapping[str, str] = field(default_factory=dict)
    """What its key is made of, each hashed apart (:data:`KEY_INPUTS`): a resumed study says
    which of them changed since the last run (``planner.study.folder``)."""


#: What a scenario's key is made of, in words (``Scenario.inputs``' keys).
KEY_INPUTS: dict[str, str] = {
    "instance": "the instance (its file, --set or the scenario's changes)",
    "catalog": "the catalog's content",
    "settings": "--time-limit or --no-verify",
    "planner": "the planner's version",
    "format": "the part format",
}


@dataclass(frozen=True)
class Study:
    """The scenarios of a study, in order, and the columns of its table."""

    scenarios: tuple[Scenario, ...]
    keys: tuple[str, ...]
    """Every key some scenario changes, in first-seen order (one column each)."""
    schema: dict[str, Any]
    """Columns of the study table: scenario, one per key, status, error, the plan's summary."""
    merged: tuple[str, ...] = ()
    """What was merged: change sets that gave the same instance as an earlier one, in words."""


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
    """Expand, validate, merge, name and key every scenario before anything runs.

    ``settings`` are the run settings a result depends on (``verify``, ``time_limit_s``); they
    enter every key. ``catalog``, when given, is every scenario's; otherwise each scenario's
    instance names its own (read once per file). Raises InputError naming the scenario and the
    field at fault: a change ``Instance.with_changes`` refuses, a catalog that cannot be read,
    a check ``solve`` makes before it solves. Change sets whose validated instances are equal
    are merged into the first (``Study.merged`` says which).
    """
    sets = change_sets(grid_or_change_sets)
    for changes in sets[:1] if isinstance(grid_or_change_sets, Mapping) else sets:
        check_overlap(list(changes))
    if any(NAME_KEY in changes for changes in sets):
        # A swept name would be dropped (every instance is renamed below) and its scenarios
        # merged into one without a word.
        raise InputError(
            f"{NAME_KEY}: a study names each scenario's instance itself (<instance>.<scenario>),"
            " so the name cannot be swept; sweep description, or run one study per name"
        )
    given_labels = short_labels(list(dict.fromkeys(k for changes in sets for k in changes)))
    verify = bool(settings.get("verify", True))
    catalogs = _Catalogs(catalog)
    kept: list[tuple[Changes, Instance, Catalog]] = []
    seen: dict[str, int] = {}
    merges: list[tuple[Changes, Changes]] = []
    for changes in sets:
        where = scenario_name(changes, given_labels)
        try:
            inst = base.with_changes(changes)
            cat = catalogs.of(inst)
            check_instance(inst, cat)
            check_run(inst, verify and inst.verify.enabled)
        except InputError as exc:
            raise InputError(f"scenario {where}: {exc}") from None
        # The same instance once validated (1 and 1.0 for an integer field, a value given
        # twice) is the same scenario: planned once.
        same = _digest(_canonical(inst.model_dump(mode="json", exclude={"name"})))
        if same in seen:
            merges.append((changes, kept[seen[same]][0]))
            continue
        seen[same] = len(kept)
        kept.append((changes, inst, cat))
    keys = list(dict.fromkeys(k for changes, _, _ in kept for k in changes))
    clash = [k for k in keys if k in STATUS_COLUMNS or k in PLAN_COLUMNS or k == SCENARIO_COLUMN]
    if clash:
        raise InputError(f"{clash[0]}: a study cannot change a key named like a column")
    labels = short_labels(keys)
    common = {"format": PART_FORMAT, "planner": planner_version(), "settings": dict(settings)}
    scenarios: list[Scenario] = []
    names: set[str] = set()
    for changes, inst, cat in kept:
        name = _unique(scenario_name(changes, labels), names)
        # A name the schema accepts by construction (instance_name checks it).
        tag = changes_key(changes)  # as --set names a changed instance (derived_instance)
        inst = inst.model_copy(update={"name": instance_name(base.name, name, tag)})
        # The name enters the key: a part holds the scenario's name and its instance's.
        key = _digest(
            common
            | {
                "scenario": name,
                "instance": inst.model_dump(mode="json"),
                "catalog": catalogs.digest(cat),
            }
        )
        inputs = {
            "instance": _digest({"scenario": name, "instance": inst.model_dump(mode="json")}),
            "catalog": catalogs.digest(cat),
            "settings": _digest(common["settings"]),
            "planner": str(common["planner"]),
            "format": str(PART_FORMAT),
        }
        scenarios.append(Scenario(name, changes, inst, key, cat, inputs))
    schema: dict[str, Any] = {SCENARIO_COLUMN: pl.Utf8}
    for key in keys:
        schema[key] = value_dtype([c[key] for c, _, _ in kept if key in c])
    schema |= STATUS_COLUMNS | PLAN_COLUMNS
    return Study(tuple(scenarios), tuple(keys), schema, merge_notes(merges, given_labels))


class _Catalogs:
    """Each scenario's catalog, read once per file, and the digest of each catalog's content."""

    def __init__(self, given: Catalog | None) -> None:
        self.given = given
        self.read: dict[str, Catalog] = {}
        self.digests: dict[int, str] = {}

    def of(self, inst: Instance) -> Catalog:
        """The catalog the scenario plans with: the given one, else the file its instance names."""
        if self.given is not None:
            return self.given
        name = inst.search.catalog
        if name not in self.read:
            try:
                self.read[name] = load_catalog(name)
            except InputError as exc:
                raise InputError(f"search.catalog: {exc}") from None
        return self.read[name]

    def digest(self, catalog: Catalog) -> str:
        """A hash of the catalog's content (its figures, whatever file they came from)."""
        if id(catalog) not in self.digests:
            self.digests[id(catalog)] = _digest(catalog.model_dump(mode="json"))
        return self.digests[id(catalog)]


def planner_version() -> str:
    """The installed planner's version (a part planned by another version is planned again)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fabric-planner")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


def merge_notes(
    merges: Sequence[tuple[Changes, Changes]], labels: Mapping[str, str]
) -> tuple[str, ...]:
    """What was merged, in words: one line per kind of merge, with how many scenarios it saved.

    ``merges`` holds (dropped change set, the kept one it equals once validated).
    """
    counts: dict[tuple[Any, ...], int] = {}
    for dropped, kept in merges:
        differ = tuple(
            (k, _json(dropped.get(k, _BASE)), _json(kept.get(k, _BASE)))
            for k in dict.fromkeys([*kept, *dropped])
            if _json(dropped.get(k, _BASE)) != _json(kept.get(k, _BASE))
        )
        what = differ or (scenario_name(kept, labels),)
        counts[what] = counts.get(what, 0) + 1
    notes = []
    for what, n in counts.items():
        fewer = f"{n} scenario{'s' if n > 1 else ''} fewer"
        if len(what) == 1 and isinstance(what[0], str):
            notes.append(f"scenario {what[0]} is given more than once: planned once ({fewer})")
            continue
        pairs = [(f"{k} = {a}", f"{k} = {b}") for k, a, b in what]
        notes.append(
            f"{', '.join(p for p, _ in pairs)} is the same as {', '.join(q for _, q in pairs)} "
            f"once validated: merged ({fewer})"
        )
    return tuple(notes)


#: Stands for a key a change set leaves at the base instance's value.
_BASE = object()


def _json(value: Any) -> str:
    """A change's value as text that tells ``1`` from ``1.0`` and ``true``."""
    if value is _BASE:
        return "the base value"
    return json.dumps(value, sort_keys=True, default=str)


def _canonical(value: Any) -> Any:
    """``value`` with every float zero as ``0.0``: ``-0.0`` equals it as a float field reads it."""
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


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
