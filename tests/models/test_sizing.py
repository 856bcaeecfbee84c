"""The search over structures: metamorphic properties, pins, bounds and the time limit."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from models import cabling as cb
from models import clos_sizing as cs
from models.status import Status
from planner.api import evaluate, plan, validate
from planner.families import search_families
from planner.loading import load_catalog
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.sizing import search

#: Relative tolerance on objectives compared across solves.
OBJECTIVE_RTOL = 1e-6
CATALOG = load_catalog()


def inst(gpus: int = 2048, **sections: Any) -> Instance:
    data: dict[str, Any] = {
        "name": "t",
        "cluster": {"gpus": gpus, "nic_gbps": 400, "nic_ports": [1, 2]},
    }
    data.update(sections)
    return Instance.model_validate(data)


def best(instance: Instance, catalog: Catalog = CATALOG) -> float:
    r = search(instance, catalog, search_families(instance), alternatives=False)
    assert r.status is Status.OPTIMAL
    assert r.design is not None
    return r.design.objective_usd


@pytest.mark.parametrize(
    ("tight", "loose"),
    [
        ({"max_oversubscription": 1.0}, {"max_oversubscription": 3.0}),
        ({"max_switch_hops": 3}, {"max_switch_hops": 5}),
        (
            {"survive": {"min_bandwidth_fraction": 0.9}},
            {"survive": {"min_bandwidth_fraction": 0.5}},
        ),
        ({"max_latency_ns": 2000}, {}),
        ({"max_power_kw": 200}, {"max_power_kw": 400}),
    ],
    ids=["oversubscription", "hops", "survive", "latency", "power"],
)
@pytest.mark.slow
def test_loosening_a_constraint_never_makes_the_optimum_worse(
    tight: dict[str, Any], loose: dict[str, Any]
) -> None:
    assert best(inst(constraints=loose)) <= best(inst(constraints=tight)) * (1 + OBJECTIVE_RTOL)


@pytest.mark.slow
def test_relabelling_the_catalog_changes_nothing() -> None:
    reordered = Catalog.model_validate(
        {
            "switch": [s.model_dump() for s in reversed(CATALOG.switch)],
            "medium": [m.model_dump() for m in reversed(CATALOG.medium)],
            "nic": [n.model_dump() for n in CATALOG.nic],
        }
    )
    assert best(inst(760), reordered) == pytest.approx(best(inst(760)), rel=OBJECTIVE_RTOL)


@pytest.mark.parametrize("gpus", [256, 760, 1016, 4096, 65536])
@pytest.mark.slow
def test_more_gpus_never_cost_less(gpus: int) -> None:
    assert best(inst(gpus)) <= best(inst(gpus + 8)) * (1 + OBJECTIVE_RTOL)


@pytest.mark.parametrize("gpus", [760, 16384])
@pytest.mark.slow
def test_bound_and_design_are_consistent(gpus: int) -> None:
    r = search(inst(gpus), CATALOG, search_families(inst(gpus)))
    assert r.design is not None
    assert r.bound_usd is not None
    assert r.bound_usd <= r.design.objective_usd * (1 + OBJECTIVE_RTOL)
    assert r.design.gap == pytest.approx(0.0, abs=OBJECTIVE_RTOL)
    assert validate(r.design, CATALOG) == []


def test_evaluate_prices_exactly_the_pinned_design() -> None:
    pin = {
        "planes": 1,
        "tiers": 2,
        "switch_models": "qm9700",
        "downlinks": [32],
        "uplinks": [32],
        "switches": [32, 16],
        "parallel_links": [2],
    }
    r = evaluate(inst(1024, search={"pin": pin}), verify=False)
    d = r.design
    assert d is not None
    assert [t.switches for t in d.tiers] == [32, 16]
    assert (d.tiers[0].downlinks, d.tiers[0].uplinks, d.tiers[0].parallel_links) == (32, 32, 2)
    assert {t.switch_model for t in d.tiers} == {"qm9700"}
    assert validate(d, CATALOG) == []
    assert d.objective_usd >= best(inst(1024)) * (1 - OBJECTIVE_RTOL)


def test_impossible_pins_are_infeasible_and_named() -> None:
    pin = {"planes": 1, "tiers": 2, "switch_models": "qm9700", "downlinks": [40], "uplinks": [40]}
    r = plan(inst(1024, search={"pin": pin}), verify=False)
    assert r.status is Status.INFEASIBLE
    assert any("pin" in line for line in r.explanation)


def test_time_limit_returns_best_with_gap() -> None:
    options = tuple(cs.SwitchOption(f"s{k}", k, 500.0 * k, 5.0 * k, 300) for k in (24, 40, 56, 72))
    optics = cb.MediumOption("o", 500.0, 10.0, 60.0, 90, reach_m=500.0)
    # Every link of every class within the one medium's reach: a single length band.
    tails = {"end_of_row": cb.LengthTails(1, (500.0,), (0,))}
    cabling = tuple(
        cs.class_cabling(
            tails if c < 2 else {None: tails["end_of_row"]},
            [optics],
            None if c == 0 else options,
            options,
            cb.Criteria(4.0),
        )
        for c in range(3)
    )
    p = cs.SizingProblem(
        endpoints=60_001,
        planes=1,
        tiers=3,
        switch_options=(options,) * 3,
        cabling=cabling,
        placements=("end_of_row",),
        endpoints_per_rack=32,
        requirements=cs.Requirements((Fraction(3, 2), Fraction(1))),
        energy_usd_per_w=4.0,
    )
    sol = cs.solve(
        cs.build(p, frozenset({"cuts.port_capacity"})),
        cs.SolveOptions(time_limit_s=0.05, workers=1),
    )
    assert sol.status in (Status.OPTIMAL, Status.FEASIBLE, Status.TIME_LIMIT)
    if sol.status.has_solution:
        assert sol.bound_usd is not None
        assert sol.objective_usd is not None
        assert sol.bound_usd <= sol.objective_usd * (1 + OBJECTIVE_RTOL)
