"""Issue 32: the search reads the command's deadline (one clock), and says how far it got.

The dragonfly's enumeration and the per-switch loops of the dragonfly and the torus take the
command's deadline instead of a budget of their own; the search calls the progress callback for
the families sized by their own model as well as for every Clos structure. Fake clocks only.
"""

from __future__ import annotations

import pytest

from models import torus_fabric as tf
from models.dragonfly import model as dm
from models.status import Status
from planner import api
from planner.deadline import Deadline
from planner.families.dragonfly.family import solve_each_switch
from planner.loading import load_catalog
from planner.sizing import search
from planner.solver_parts import instance_families, load_solvers
from tests.conftest import REPO_ROOT

INSTANCES = REPO_ROOT / "instances"


class Ticks:
    """A clock that moves one second at every reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def problem(gpus: int = 150, radix: int = 12) -> dm.DragonflyProblem:
    """A small dragonfly problem of two switch models (``tests/families/dragonfly/test_dragonfly.py``'s)."""
    media = (
        tf.cb.MediumOption("copper", 50.0, 0.1, 0.0, 0, 3.0, copper=True),
        tf.cb.MediumOption("optic", 400.0, 8.0, 60.0, 100, 500.0),
    )
    switches = (
        tf.SwitchChoice("small", radix, 10_000.0, 300.0, 300),
        tf.SwitchChoice("big", 2 * radix, 30_000.0, 700.0, 400),
    )
    floor = tf.Floor(16, 8, 0.6, 2.4, 2.0, 3.0, 1.1)
    return dm.DragonflyProblem(
        gpus, 1, 400, switches, media, floor, dm.Requirements(), energy_usd_per_w=5.0
    )


def test_a_dragonfly_after_the_deadline_prices_nothing() -> None:
    each = solve_each_switch(problem(), Deadline(-1.0))
    assert set(each) == {"small", "big"}
    for sol in each.values():
        assert sol.status is Status.TIME_LIMIT
        assert sol.priced is None
        assert sol.examined == 0


@pytest.mark.parametrize("readings", [2, 6, 30])
def test_a_dragonfly_stops_at_the_commands_deadline(readings: int) -> None:
    """Its enumeration reads the deadline's clock, not a clock of its own: the fake clock's
    deadline stops it whatever the real time says."""
    whole = dm.solve(dm.build(problem()))
    assert whole.status is Status.OPTIMAL
    cut = dm.solve(dm.build(problem()), Deadline(float(readings), clock=Ticks(), pace=Ticks()))
    assert cut.status in {Status.TIME_LIMIT, Status.FEASIBLE}
    assert cut.examined < whole.examined
    if cut.priced is not None:
        assert cut.priced.objective_usd >= whole.priced.objective_usd  # type: ignore[union-attr]
        assert cut.bound_usd is not None
        assert cut.bound_usd <= whole.priced.objective_usd  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_search_reports_the_dragonfly_and_keeps_to_the_commands_deadline() -> None:
    inst = api.load_instance(INSTANCES / "dragonfly-16k.toml")
    catalog = load_catalog(inst.search.catalog)
    load_solvers("search")
    seen: list[tuple[int, int, str]] = []
    result = search(
        inst,
        catalog,
        instance_families(inst),
        time_limit_s=600.0,
        progress=lambda done, total, label: seen.append((done, total, label)),
        deadline=Deadline(-1.0),
    )
    assert result.design is None
    assert result.status is Status.TIME_LIMIT
    assert seen
    assert seen[0][2].startswith("dragonfly: ")
    assert [d for d, _, _ in seen] == list(range(1, len(seen) + 1))
    assert {t for _, t, _ in seen} == {len(seen)}


@pytest.mark.slow
def test_other_families_are_not_built_once_the_limit_has_passed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the limit, the best design of every other family is not built (a canonical solve,
    its post-solve steps, its fabric and traffic: seconds at 65k GPUs) only to have every step
    of its simulation cut: the chosen design's verification says which were left out."""
    from planner import alternatives, planning
    from planner.schema.instance import Instance
    from planner.sim.simulate import simulate

    inst = Instance.model_validate(
        {
            "name": "families",
            "cluster": {"gpus": 512, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["clos", "ocs_direct"], "switch_models": ["qm9700"]},
            "verify": {"single_switch_failures": False, "ecmp_seeds": 1},
        }
    )
    found = api.plan(inst, verify=False, time_limit_s=60)
    assert found.design is not None
    assert found.search is not None
    passed = Deadline(-1.0)
    sim = simulate(
        found.design, planning.verify_for(inst, found.design), fabric=api.fabric_of(found.design)
    )

    def built(*args: object) -> None:
        raise AssertionError("a family's design was built after the limit had passed")

    monkeypatch.setattr(alternatives, "design_of_outcome", built)
    catalog = load_catalog(inst.search.catalog)
    chosen, sims = planning._verify(inst, catalog, found.search, None, passed, sim)
    assert set(sims) == {found.design.family}
    other = ({"clos", "ocs_direct"} - {found.design.family}).pop()
    assert any(other in n and "time limit" in n for n in chosen.notes)


def test_each_family_sized_by_its_own_model_is_told_as_it_finishes() -> None:
    """The progress line moves after each such family, not once after all of them."""
    from dataclasses import dataclass

    from planner.sizing.search_loop import _own_outcomes

    events: list[str] = []

    @dataclass(frozen=True)
    class Stub:
        name: str

        def size(self, *args: object) -> list[object]:
            events.append(f"size {self.name}")
            return []

    inst = api.load_instance(INSTANCES / "small-256.toml")
    families = [Stub("first"), Stub("second")]
    _own_outcomes(
        inst,
        load_catalog(inst.search.catalog),
        families,  # type: ignore[arg-type]
        [],
        False,
        True,
        Deadline.after(600.0),
        later=False,
        told=lambda done, family, sized: events.append(f"told {done} {family.name}"),
    )
    assert events == ["size first", "told 1 first", "size second", "told 2 second"]
