"""The rail count R of a rail-only fabric: its candidates, its choice, its geometry and wiring.

Wang et al. (2023) define a rail by a GPU's rank in its scale-up domain: with an NVL72 domain
(72 GPUs over 18 nodes of 4) a rail-only fabric may have up to 72 rails. R is a multiple of the
node's GPUs dividing the domain and the GPU count (``planner.families.rail.sizing.rail_counts``); each
candidate is sized and the cheapest kept. These tests check the candidates, that a larger domain
lets the family pick R > n and save money, that its choice is the enumeration's
(``tests.models.rail_brute_force`` over every R), the GPU-to-leaf geometry on real nodes, the
fabric (GPU g on rail g mod R, no link between rails), design.json and the validator.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from models import clos_sizing as cs
from models import rail_sizing as rs
from models.status import Status
from planner.api import plan, validate
from planner.design import Design
from planner.families import family_of, read_design
from planner.families.rail.sizing import (
    rail_counts,
    rail_gpu_leaf_lengths,
    rail_problems,
    size_rail,
)
from planner.loading import load_catalog
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance, Layout
from planner.sizing.problems import allowed_media, medium_option
from planner.validation import structure_violations
from tests.models.rail_brute_force import rail_brute_force

#: Relative tolerance between the model's and the enumeration's objective (cent rounding).
OBJECTIVE_RTOL = 1e-6
#: Time for one size_rail call in these tests.
TIME_LIMIT_S = 60.0
#: The NVL72-like instance: 1,152 GPUs in 16 domains of 72 (18 nodes of 4 GPUs).
NVL_GPUS, NVL_NODE, NVL_DOMAIN = 1152, 4, 72


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("default")


def nvl(domain_gpus: int = NVL_DOMAIN, **search: Any) -> Instance:
    return Instance.model_validate(
        {
            "name": f"rail-count-{domain_gpus}",
            "cluster": {
                "gpus": NVL_GPUS,
                "gpus_per_node": NVL_NODE,
                "nic_gbps": 400,
                "nic_ports": [1],
                "scale_up": {"gpus": domain_gpus},
            },
            "search": {"families": ["rail_only"], **search},
        }
    )


#: The tier count each domain's free search chooses: the tests that need a design of that shape,
#: not the search's choice, pin it (a fifth of the search's time).
CHOSEN_TIERS = {NVL_NODE: 2, NVL_DOMAIN: 1}


@functools.cache
def planned(domain_gpus: int, pin_tiers: bool = False) -> Design:
    search = {"pin": {"tiers": CHOSEN_TIERS[domain_gpus]}} if pin_tiers else {}
    result = plan(nvl(domain_gpus, **search), verify=False, alternatives=False)
    assert result.design is not None
    return result.design


@pytest.mark.slow
@pytest.mark.parametrize("domain_gpus", sorted(CHOSEN_TIERS))
def test_the_pinned_designs_are_the_searchs_own(domain_gpus: int) -> None:
    """The fast tests' designs (tiers pinned) are the ones the free search chooses."""
    pinned, free = planned(domain_gpus, pin_tiers=True), planned(domain_gpus)
    assert replace(pinned, solve_s=0.0) == replace(free, solve_s=0.0)


# ---- candidates --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("gpus", "gpus_per_node", "domain_gpus", "expected"),
    [
        (16_416, 4, 72, [4, 8, 12, 24, 36, 72]),  # 228 NVL72 racks
        (16_384, 4, 72, [4, 8]),  # 2^14 GPUs: no rail count with a factor 3
        (1_024, 8, 8, [8]),  # one DGX node per domain: the node's rails
        (1_152, 4, 72, [4, 8, 12, 24, 36, 72]),
        (64, 2, 8, [2, 4, 8]),
        (64, 8, 4, []),  # a domain smaller than a node (rail-only is refused)
    ],
    ids=["nvl72-16416", "nvl72-16384", "dgx-node", "nvl72-1152", "small", "domain-below-node"],
)
def test_the_rail_count_candidates(
    gpus: int, gpus_per_node: int, domain_gpus: int, expected: list[int]
) -> None:
    assert rail_counts(gpus, gpus_per_node, domain_gpus) == expected


@pytest.mark.slow
def test_rail_problems_has_one_problem_per_rail_count(catalog: Catalog) -> None:
    pairs = rail_problems(nvl(pin={"tiers": 1}), catalog, family_of("rail_only"), True)
    problems = [rp for _, rp in pairs]
    assert all(rp is not None for rp in problems)
    assert [rp.copies for rp in problems if rp is not None] == [4, 8, 12, 24, 36, 72]
    for rp in problems:
        assert rp is not None
        assert rp.clos.endpoints == rp.nodes == NVL_GPUS // rp.copies  # groups of R GPUs
        assert rp.rails == 1
        assert rp.nodes_per_rack == 4 * NVL_NODE // rp.copies  # default racks of 4 nodes


# ---- the choice --------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_large_domain_lets_rail_only_pick_more_rails_and_save() -> None:
    """NVL72 domains: more, smaller rails than the node's 4, cheaper than R = n (a 4-GPU domain)."""
    wide, narrow = planned(NVL_DOMAIN), planned(NVL_NODE)
    assert narrow.wiring.params()["rails"] == NVL_NODE
    r = wide.wiring.params()["rails"]
    assert r > NVL_NODE
    assert r in rail_counts(NVL_GPUS, NVL_NODE, NVL_DOMAIN)
    assert wide.objective_usd < narrow.objective_usd
    assert validate(wide, load_catalog("default")) == []


@pytest.mark.parametrize(
    "search",
    [
        {"pin": {"tiers": 1}},
        {"pin": {"tiers": 1}, "switch_models": ["tomahawk4-25t"]},
        {"pin": {"tiers": 2}, "switch_models": ["tomahawk4-25t"]},
    ],
    ids=["one-tier-any-switch", "one-tier-64-ports", "two-tiers-64-ports"],
)
@pytest.mark.slow
def test_the_choice_of_rails_is_the_brute_force_optimum(
    search: dict[str, Any], catalog: Catalog
) -> None:
    """size_rail's design is the least enumerated objective over every candidate R."""
    inst = nvl(**search)
    pairs = rail_problems(inst, catalog, family_of("rail_only"), True)
    media = [medium_option(m) for m in allowed_media(inst, catalog) if m.speed_gbps == 400]
    per_rails = {rp.copies: rail_brute_force(rp, media) for _, rp in pairs if rp is not None}
    feasible = {r: v for r, v in per_rails.items() if v is not None}
    assert feasible
    best = min(feasible.values())
    (sized,) = size_rail(inst, catalog, family_of("rail_only"), None, TIME_LIMIT_S, rail_only=True)
    assert sized.status is Status.OPTIMAL
    assert sized.design is not None
    assert sized.objective_usd == pytest.approx(best, rel=OBJECTIVE_RTOL)
    assert sized.bound_usd is not None
    assert sized.bound_usd <= sized.objective_usd * (1 + OBJECTIVE_RTOL)
    chosen = sized.design.wiring.params()["rails"]
    assert feasible[chosen] == pytest.approx(best, rel=OBJECTIVE_RTOL)
    assert chosen == min(r for r, v in feasible.items() if v <= best * (1 + OBJECTIVE_RTOL))


#: Small switches (radix 8 and 12), two GPUs a node, a domain of 8: R in {2, 4, 8}.
SMALL = {"gpus": 64, "gpus_per_node": 2, "nic_gbps": 400, "nic_ports": [1], "scale_up": {"gpus": 8}}


@pytest.mark.parametrize("tiers", [2, 3])
@pytest.mark.parametrize("rails", [2, 4, 8])
def test_the_model_equals_brute_force_at_every_rail_count(tiers: int, rails: int) -> None:
    from tests.models.catalogs import catalog as small_catalog
    from tests.models.catalogs import switch

    cat = small_catalog([switch("s8", 8, cost_usd=4_000.0), switch("s12", 12, cost_usd=7_000.0)])
    inst = Instance.model_validate(
        {
            "name": "small-rails",
            "cluster": SMALL,
            "search": {"families": ["rail_only"], "pin": {"tiers": tiers}},
            "layout": {"nodes_per_rack": 2, "racks_per_row": 4},
        }
    )
    pairs = rail_problems(inst, cat, family_of("rail_only"), True)
    (rp,) = [p for _, p in pairs if p is not None and p.copies == rails]
    media = [medium_option(m) for m in allowed_media(inst, cat) if m.speed_gbps == 400]
    expected = rail_brute_force(rp, media)
    got = rs.solve(rp, cs.SolveOptions(time_limit_s=60.0), canonical_s=0)
    if expected is None:
        assert got.status is Status.INFEASIBLE
        return
    assert got.status is Status.OPTIMAL
    assert got.total(got.solution.objective_usd) == pytest.approx(expected, rel=OBJECTIVE_RTOL)


# ---- geometry on real nodes --------------------------------------------------------------------
#: A rack is one NVL72 domain: 18 nodes of 4 GPUs; a rail group of 72 GPUs fills it.
RACK_DOMAIN = Layout(nodes_per_rack=18, racks_per_row=4, leaf_placement=["top_of_rack"])


def test_a_unit_of_one_rack_sized_group_stays_in_its_rack() -> None:
    """R = 72: a rail group is a rack; an SU of one group has every GPU in its leaves' rack."""
    dist = rail_gpu_leaf_lengths(RACK_DOMAIN, NVL_GPUS, NVL_NODE, 1, "top_of_rack", 18)
    assert dist.length_m == (RACK_DOMAIN.in_rack_cable_m,)
    assert dist.weight == (NVL_GPUS,)


def test_a_unit_of_two_groups_reaches_into_the_next_rack() -> None:
    """R = 72, U = 2 groups: half of every SU's GPUs sit one rack away from its leaves.

    Independent of the code under test: GPU g is rank g % 72 of group g // 72, in node
    (g // 72) 18 + (g % 72) // 4, and its leaves stand in the rack of its SU's first node.
    """
    lay = RACK_DOMAIN
    g = np.arange(NVL_GPUS)
    node = (g // 72) * 18 + (g % 72) // NVL_NODE
    rack = node // 18
    site_rack = (g // 72 // 2) * 2  # the first rack of the SU of two groups
    dx = np.abs(rack - site_rack) * lay.rack_width_m  # one row: racks 0..3, then the next row
    row_apart = (rack // lay.racks_per_row) != (site_rack // lay.racks_per_row)
    assert not row_apart.any()
    away = (1.0 + lay.routing_overhead) * dx + lay.cable_slack_m
    want = np.where(rack == site_rack, lay.in_rack_cable_m, away)
    cm = np.ceil(want * 100.0 - 1e-6).astype(np.int64)
    values, counts = np.unique(cm, return_counts=True)
    dist = rail_gpu_leaf_lengths(lay, NVL_GPUS, NVL_NODE, 2, "top_of_rack", 18)
    assert dist.length_m == tuple((values / 100.0).tolist())
    assert dist.weight == tuple(counts.tolist())
    assert dict(zip(dist.length_m, dist.weight, strict=True))[lay.in_rack_cable_m] == NVL_GPUS // 2


# ---- the fabric ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_fabric_puts_gpu_g_on_rail_g_mod_r_and_joins_no_two_rails() -> None:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from planner.families import fabric_of

    d = planned(NVL_DOMAIN, pin_tiers=True)
    r = d.wiring.params()["rails"]
    u = d.tiers[0].downlinks  # rail groups per SU
    assert u * r == d.wiring.params()["su_nodes"] * NVL_NODE
    fab = fabric_of(d)
    assert fab.forced_pxn
    assert fab.rails == r
    g = np.arange(d.gpus)
    assert np.array_equal(fab.lower[: d.gpus], g)
    assert np.array_equal(fab.upper[: d.gpus], fab.tier_offsets[1] + (g // r // u) * r + g % r)
    adj = coo_matrix(
        (np.ones(fab.lower.size), (fab.lower, fab.upper)), shape=(fab.nodes, fab.nodes)
    )
    parts, label = connected_components(adj, directed=False)
    assert parts == r  # one part per rail: no link joins two rails
    gpu_label = label[: d.gpus]
    for rail in range(r):
        assert np.unique(gpu_label[g % r == rail]).size == 1
    switch_rail = {int(label[s]) for s in range(fab.first_switch, fab.nodes)}
    assert switch_rail == set(gpu_label.tolist())


@pytest.mark.slow
def test_a_rail_optimized_fabric_keeps_the_node_rails() -> None:
    from planner.families import fabric_of

    inst = nvl(families=["rail_optimized"], pin={"tiers": 2})
    d = plan(inst, verify=False, alternatives=False).design
    assert d is not None
    assert d.wiring.params()["rails"] == NVL_NODE
    assert fabric_of(d).rails == 0  # the node's NIC index


# ---- design.json and the validator -------------------------------------------------------------
@pytest.mark.slow
def test_design_json_round_trips_with_more_rails_than_a_node() -> None:
    d = planned(NVL_DOMAIN)
    assert d.wiring.params()["rails"] != d.gpus_per_node
    again = read_design(d.to_json())
    assert again == d
    assert again.wiring.params() == d.wiring.params()


def test_a_design_json_of_node_rails_reads_as_before() -> None:
    """Before R was a decision, a rail-only wiring was {su_nodes, rails = n}: still the same."""
    d = planned(NVL_NODE, pin_tiers=True)
    params = d.to_dict()["wiring"]
    assert set(params) == {"kind", "su_nodes", "rails"}
    assert params["rails"] == d.gpus_per_node
    assert d.tiers[0].downlinks == params["su_nodes"]  # a rail group is a node
    assert read_design(d.to_dict()) == d


def _domain(gpus: int) -> Any:
    def shrink(d: Design) -> Design:
        return replace(d, scale_up=replace(d.scale_up, gpus=gpus))

    return shrink


def _rails(rails: int) -> Any:
    def rewire(d: Design) -> Design:
        w = d.wiring
        return replace(d, wiring=replace(w, rails=rails))  # type: ignore[type-var]

    return rewire


#: Breaks of a rail-only design of 1,152 GPUs with R > 4 rails in NVL72 domains.
BREAKS = {
    "rails-not-dividing-the-domain": _domain(32),  # 72 GPUs -> 32: not whole rail groups
    "rails-not-whole-nodes": _rails(6),
    "rails-not-dividing-the-gpus": _rails(NVL_GPUS * 2),
}


@pytest.mark.parametrize("how", sorted(BREAKS))
def test_the_validator_refuses_a_rail_count_the_domain_cannot_hold(how: str) -> None:
    d = planned(NVL_DOMAIN, pin_tiers=True)
    assert d.wiring.params()["rails"] in (8, 12, 24, 36, 72)
    broken = BREAKS[how](d)
    found = structure_violations(broken, family_of(broken.family))
    assert any(v.check == "wiring" for v in found), found
    with pytest.raises(ValueError, match="wiring"):
        read_design(broken.to_json())
