"""The validator passes what the solver returns and rejects each kind of broken design."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from planner.api import validate
from planner.design import Design, Requirements
from planner.families import read_design, search_families
from planner.schema.instance import Instance
from planner.sizing import search
from tests.models.catalogs import catalog, switch

CAT = catalog(
    [
        switch("k16", 16),
        switch("k32", 32, cost_usd=35_000.0),
        switch("c32", 32, cost_usd=45_000.0, cpo=True),
    ]
)


def solved(gpus: int, tiers: int, models: str | None = None, **constraints: object) -> Design:
    inst = Instance.model_validate(
        {
            "name": "v",
            "cluster": {"gpus": gpus, "nic_gbps": 400, "nic_ports": [1, 2]},
            "constraints": constraints,
            "search": {"pin": {"tiers": tiers, "switch_models": models}},
        }
    )
    d = search(inst, CAT, search_families(inst), alternatives=False).design
    assert d is not None
    return d


DESIGNS = {
    "2tier": lambda: solved(200, 2, survive={"min_bandwidth_fraction": 0.75}),
    "3tier": lambda: solved(2000, 3, max_oversubscription=[2.0, 1.0]),
    "1tier": lambda: solved(16, 1),
    "2tier-cpo": lambda: solved(200, 2, models="c32"),
}


@pytest.fixture(scope="module", params=list(DESIGNS))
def design(request: pytest.FixtureRequest) -> Design:
    return DESIGNS[request.param]()


def test_solver_designs_pass(design: Design) -> None:
    assert validate(design, CAT) == []


def test_cpo_design_has_no_module_at_its_ports() -> None:
    d = DESIGNS["2tier-cpo"]()
    assert all(t.cpo for t in d.tiers)
    assert {g.pluggable_ends for g in d.link_classes[0].groups} == {1}
    assert {g.pluggable_ends for g in d.link_classes[1].groups} == {0}


def _tier(d: Design, level: int, **changes: object) -> Design:
    tiers = tuple(replace(t, **changes) if t.level == level else t for t in d.tiers)
    return replace(d, tiers=tiers)


def _req(d: Design, **changes: object) -> Design:
    r: Requirements = replace(d.requirements, **changes)
    return replace(d, requirements=r)


def _group(d: Design, **changes: object) -> Design:
    """The design with the first medium group of class 0 changed."""
    c = d.link_classes[0]
    groups = (replace(c.groups[0], **changes), *c.groups[1:])
    return replace(d, link_classes=(replace(c, groups=groups), *d.link_classes[1:]))


BREAKAGES: dict[str, tuple[Callable[[Design], Design], str]] = {
    "port over-used": (
        lambda d: _tier(d, 1, downlinks=d.tiers[0].radix + 1 - d.tiers[0].uplinks),
        "ports",
    ),
    "uneven spread": (
        lambda d: _tier(d, 1, parallel_links=d.tiers[0].parallel_links + 1),
        "spread",
    ),
    "oversubscription exceeded": (
        lambda d: _req(d, max_oversubscription=(0.5, 0.5)),
        "oversubscription",
    ),
    "failure tolerance not met": (
        lambda d: _req(d, min_fraction_after_failure=0.99, protected_tiers=(2, 3)),
        "failure",
    ),
    "capex does not add up": (lambda d: replace(d, capex_usd=d.capex_usd * 1.01), "totals"),
    "power does not add up": (lambda d: replace(d, power_w=d.power_w + 50.0), "totals"),
    "objective does not add up": (
        lambda d: replace(d, objective_usd=d.objective_usd + 1000.0),
        "totals",
    ),
    "too few leaves": (lambda d: _tier(d, 1, switches=d.tiers[0].switches - 1), "wiring"),
    "hops over the limit": (lambda d: _req(d, max_switch_hops=d.max_switch_hops - 1), "hops"),
    "latency over the limit": (lambda d: _req(d, max_latency_ns=10.0), "latency"),
    "cable too long": (lambda d: _group(d, max_length_m=1e6), "reach"),
    "links by medium do not add up": (
        lambda d: _group(d, links=d.link_classes[0].links + 1),
        "media",
    ),
    "medium does not fit a co-packaged port": (
        lambda d: _tier(d, 1, cpo=True, cpo_lane_gbps=999, cpo_connector="mpo-99", cpo_reach_m=1.0),
        "media",
    ),
    "module count wrong": (lambda d: _group(d, pluggable_ends=3), "totals"),
    "power cap broken": (lambda d: _req(d, max_power_w=1.0), "budget"),
}


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_broken_designs_are_rejected(design: Design, breakage: str) -> None:
    breaker, check = BREAKAGES[breakage]
    if design.num_tiers == 1 and check in ("spread", "oversubscription", "failure", "wiring"):
        if check == "wiring":
            broken = _tier(design, 1, switches=2)
        else:
            pytest.skip("a single switch has no uplinks to break")
    else:
        broken = breaker(design)
    violations = validate(broken, CAT)
    assert check in {v.check for v in violations}


def test_catalog_figures_are_checked(design: Design) -> None:
    broken = _tier(design, 1, unit_cost_usd=design.tiers[0].unit_cost_usd + 1)
    assert "catalog" in {v.check for v in validate(broken, CAT)}


def test_json_round_trip(design: Design) -> None:
    assert read_design(design.to_json()) == design
