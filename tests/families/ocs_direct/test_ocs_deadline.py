"""OCS direct-connect under a time limit: what a deadline cuts is said, the design stays valid.

Deadlines here run on clocks the tests drive (``planner.deadline.Deadline``'s ``clock``), never
on the wall: a clock that jumps an hour at every reading has passed any deadline by its second
reading, so every step that checks it after starting is cut, whatever the machine's load.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from planner import deadline as dl
from planner.api import PlanResult, plan, validate, verify_demand
from planner.deadline import CUT_NOTE_PREFIX, Deadline, DeadlineExpired, cut_notes
from planner.design import Design
from planner.families import family_of
from planner.families.ocs_direct import circuits as ocs
from planner.loading import load_catalog
from planner.report import write_reports
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance

#: GPUs of the planned design: 16 blocks of 128 GPUs, 4 spines each (the layout of ocs-65k).
GPUS = 2048
#: Seconds a jumping clock moves at every reading.
JUMP_S = 3600.0


def jumping_clock() -> Callable[[], float]:
    """A clock that moves ``JUMP_S`` at every reading, from 0."""
    return itertools.count(0.0, JUMP_S).__next__


def passed() -> Deadline:
    """A deadline already passed, on a clock that keeps jumping (any floor passes too)."""
    return Deadline(at_s=-1.0, clock=jumping_clock())


def instance(**search: object) -> Instance:
    return Instance.model_validate(
        {
            "name": "ocs",
            "cluster": {"gpus": GPUS, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "layout": {"nodes_per_rack": 4, "racks_per_row": 16},
            "search": {"families": ["ocs_direct"], "ocs_routing": "direct", **search},
        }
    )


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("default")


@pytest.fixture(scope="module")
def planned(catalog: Catalog) -> PlanResult:
    result = plan(instance(), catalog=catalog, verify=False, alternatives=False)
    assert result.design is not None
    assert not cut_notes(result.design.notes)
    return result


@pytest.fixture(scope="module")
def design(planned: PlanResult) -> Design:
    assert planned.design is not None
    return planned.design


def shift(d: Design) -> np.ndarray:
    src = np.arange(d.gpus)
    return ocs.block_demand(d, src, (src + d.gpus // d.pods) % d.gpus)


def sound(d: Design, circuits: tuple[ocs.Circuit, ...]) -> Design:
    """The design with these circuits, checked valid and evenly spread over the spines."""
    out = ocs.with_circuits(d, circuits)
    assert validate(out) == []
    assert ocs.evenly_spread(ocs.layer_of(out), out.circuits)
    return out


@pytest.mark.parametrize("demand", ["uniform", "shift"])
def test_a_passed_deadline_keeps_the_mesh_placed_whole_and_says_so(
    design: Design, demand: str
) -> None:
    engineered = ocs.engineer(
        design, None if demand == "uniform" else shift(design), deadline=passed()
    )
    layer = ocs.layer_of(design)
    assert engineered.circuits == ocs.factor_circuits(layer)
    assert engineered.source == "mesh"
    assert engineered.cut
    assert all(note.startswith(CUT_NOTE_PREFIX) for note in engineered.cut)
    out = sound(design, engineered.circuits)
    fraction = ocs.throughput_fraction(out, None if demand == "uniform" else shift(design))
    assert fraction == pytest.approx(min(1.0, engineered.theta), rel=1e-9)


def test_the_engineering_cut_names_what_was_not_placed(design: Design) -> None:
    engineered = ocs.engineer(design, shift(design), deadline=passed())
    assert "engineered" in engineered.cut[0]
    assert "uniform mesh" in engineered.cut[0]


def test_a_construction_stopped_inside_falls_back_to_the_mesh(
    design: Design, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stopped(*args: object, **kwargs: object) -> ocs.Reconfiguration:
        raise DeadlineExpired("the time limit passed inside a step")

    monkeypatch.setattr(ocs, "assign_spread", stopped)
    engineered = ocs.engineer(design, shift(design))
    assert engineered.source == "mesh"
    assert len(engineered.cut) == 2  # the engineered topologies, then the mesh's generic route
    assert engineered.circuits == ocs.factor_circuits(ocs.layer_of(design))
    sound(design, engineered.circuits)


def test_a_large_mesh_is_placed_whole_without_a_note(
    design: Design, monkeypatch: pytest.MonkeyPatch
) -> None:
    generic = ocs.engineer(design)
    monkeypatch.setattr(ocs, "MAX_GENERIC_MESH_CIRCUITS", 0)
    whole = ocs.engineer(design)
    assert whole.cut == ()
    assert whole.circuits == ocs.factor_circuits(ocs.layer_of(design))
    assert whole.status is generic.status
    assert whole.theta == pytest.approx(generic.theta, rel=1e-9)
    sound(design, whole.circuits)


def test_the_mesh_within_the_limit_is_the_generic_one(design: Design) -> None:
    """Up to MAX_GENERIC_MESH_CIRCUITS, with time left, the circuits are as before this change."""
    assert ocs.engineer(design).circuits == design.circuits
    assert ocs.engineer(design, deadline=Deadline.after(600.0)).circuits == design.circuits


def test_the_reconfiguration_is_left_out_once_the_deadline_has_passed(design: Design) -> None:
    tables = family_of(design.family).search_tables(design, passed())
    assert tables == {"reconfiguration": None}


def test_a_reconfiguration_stopped_inside_raises(
    design: Design, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dl, "POLL_S", 0.0)  # every tick reads the clock
    monkeypatch.setattr(ocs, "MAX_MODEL_ENTRIES", 0)  # the constructive re-assignment
    unlimited = ocs.fail_device(design, 0)
    assert unlimited.removed > 0
    with pytest.raises(DeadlineExpired):
        ocs.fail_device(design, 0, deadline=Deadline(at_s=1.0, clock=jumping_clock()))


def test_a_plan_whose_deadline_has_passed_says_what_it_cut(catalog: Catalog) -> None:
    result = plan(instance(), catalog=catalog, verify=False, alternatives=False, deadline=passed())
    d = result.design
    assert d is not None
    notes = cut_notes(d.notes)
    assert any("mesh" in n for n in notes)
    assert any("reconfiguration table was left out" in n for n in notes)
    assert result.reconfiguration is None
    assert validate(d) == []
    assert ocs.evenly_spread(ocs.layer_of(d), d.circuits)


def test_the_circuits_get_their_floor_when_the_search_used_the_limit(
    planned: PlanResult,
) -> None:
    """Past the deadline the circuits still get MIN_STEP_S (they must exist), and the
    reconfiguration, which the design does not need, is left out."""
    d = planned.design
    assert d is not None
    standing = Deadline(at_s=-1.0, clock=lambda: 0.0)  # passed, on a clock that stands still
    family = family_of(d.family)
    after = family.after_solve(replace(d, circuits=()), instance(), standing, verify_demand)
    assert after.circuits == d.circuits
    assert not cut_notes(after.notes)
    assert family.search_tables(after, standing) == {"reconfiguration": None}


def test_report_md_lists_what_the_time_limit_cut(
    catalog: Catalog, planned: PlanResult, tmp_path: Path
) -> None:
    assert planned.design is not None
    note = CUT_NOTE_PREFIX + "the reconfiguration table was left out"
    design = replace(planned.design, notes=(*planned.design.notes, note))
    result = replace(
        planned, design=design, search=replace(planned.search, design=design), reconfiguration=None
    )
    write_reports(result, tmp_path)
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Left out or cut by the time limit" in text
    assert f"- {note}" in text
    assert "### After a device fails" not in text


@pytest.mark.slow
def test_a_million_gpus_get_an_even_mesh_and_a_reconfiguration(catalog: Catalog) -> None:
    """The bench's 1,048,576-GPU instance routed over direct circuits only: 68 blocks of 121
    spines, the mesh placed whole (WCMP puts one slice topology on every spine instead)."""
    inst = Instance.model_validate(
        {
            "name": "ocs-1m",
            "cluster": {
                "gpus": 2**20,
                "gpus_per_node": 8,
                "nic_gbps": 400,
                "nic_ports": [1, 2, 4],
                "nic": "connectx-7",
            },
            "layout": {"nodes_per_rack": 4, "racks_per_row": 32},
            "constraints": {"max_oversubscription": 1.0, "max_switch_hops": 5},
            "search": {"families": ["ocs_direct"], "ocs_routing": "direct"},
        }
    )
    result = plan(inst, catalog=catalog, verify=False, alternatives=False, time_limit_s=3600.0)
    d = result.design
    assert d is not None
    layer = ocs.layer_of(d)
    assert sum(k for *_, k in d.circuits) > ocs.MAX_GENERIC_MESH_CIRCUITS
    assert d.circuits == ocs.factor_circuits(layer)
    assert not cut_notes(d.notes)
    assert ocs.evenly_spread(layer, d.circuits)
    assert validate(d) == []
    assert result.reconfiguration is not None
    (row,) = result.reconfiguration.iter_rows(named=True)
    assert row["circuits_lost"] == sum(k for _, _, o, k in d.circuits if o == 0) > 0
    assert row["circuits_kept"] == row["circuits_before"] - row["circuits_lost"]
