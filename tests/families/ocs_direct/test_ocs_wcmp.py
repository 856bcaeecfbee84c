"""OCS direct-connect routed by traffic engineering (``planner.families.ocs_direct.wcmp``).

The sizing rule that lets every spine reach every other block, the same slice topology on every
spine, the simulator carrying the TE LP's splits bundle for bundle, failures that recompute
them, and the routing carried in design.json.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from models import ocs_te
from planner.api import PlanResult, plan
from planner.design import Design
from planner.families import fabric_of
from planner.families.ocs_direct import circuits as ocs
from planner.families.ocs_direct import wcmp
from planner.loading import load_catalog
from planner.schema.instance import Instance
from planner.schema.verify import FailureSpec, TrafficSpec
from planner.sim.fabric import Fabric
from planner.sim.routing import Routing, route
from planner.sim.scenarios import named_scenario
from planner.sim.traffic_kinds import build_traffic

#: Each simulated directed block-pair load against the LP's (the issue's 1 %).
LOAD_RTOL = 0.01
#: Gb/s below which a bundle counts as idle.
IDLE_GBPS = 1e-6
GPUS = 2048
TRAFFICS = {
    "random_permutation": {"kind": "random_permutation", "size_bytes": 1e6},
    "shift": {"kind": "shift", "group_size": 256, "size_bytes": 1e6},
}


def instance(gpus: int = GPUS, **search: Any) -> Instance:
    return Instance.model_validate(
        {
            "name": "wcmp",
            "cluster": {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["ocs_direct"], **search},
        }
    )


@pytest.fixture(scope="module")
def design() -> Design:
    result: PlanResult = plan(instance(), catalog=load_catalog(), verify=False, alternatives=False)
    assert result.design is not None
    return result.design


def flows(d: Design, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    spec = TrafficSpec.model_validate(TRAFFICS[name])
    (phase,) = build_traffic(spec, d.gpus, d.gpus_per_node, 1).phases
    return phase.src, phase.dst, phase.size_bytes


def bundle_sim_loads(fabric: Fabric, load: np.ndarray) -> np.ndarray:
    """Directed block-to-block load: the merged circuit links of each pair summed."""
    first = fabric.tier_offsets[2]
    p = fabric.tier_offsets[3] - first
    link = np.flatnonzero(fabric.lower >= first)
    a, b = fabric.lower[link] - first, fabric.upper[link] - first
    out = np.zeros((p, p))
    np.add.at(out, (a, b), load[2 * link])
    np.add.at(out, (b, a), load[2 * link + 1])
    return out


def test_every_spine_reaches_every_other_block(design: Design) -> None:
    layer = ocs.layer_of(design)
    assert design.routing == "wcmp"
    assert layer.blocks >= 3
    assert wcmp.spine_uplinks(layer) >= layer.blocks - 1
    y = wcmp.slice_topology(design.circuits, layer)
    assert y is not None  # the same circuits on every spine
    assert (y[~np.eye(layer.blocks, dtype=bool)] >= 1).all()
    assert (y.sum(axis=1) <= wcmp.spine_uplinks(layer)).all()


@pytest.mark.parametrize("name", list(TRAFFICS))
def test_sprayed_wcmp_carries_the_lp_loads_on_every_bundle(design: Design, name: str) -> None:
    fabric = fabric_of(design)
    src, dst, size = flows(design, name)
    adapted = fabric.adapted(src, dst, size)
    w = adapted.group_weights
    assert w is not None
    routes = route(adapted, src, dst, Routing.SPRAY)
    assert routes.connected.all()
    sim = bundle_sim_loads(fabric, routes.load(wcmp.flow_rates_gbps(src, dst, size, fabric)))
    demand = wcmp.block_rates(ocs.block_of_gpus(design), design.pods, src, dst, size, fabric)
    pairs = np.flatnonzero(np.diff(w.ptr))
    a, b = (
        np.repeat(pairs // w.groups, np.diff(w.ptr)[pairs]),
        np.repeat(pairs % w.groups, np.diff(w.ptr)[pairs]),
    )
    lp = ocs_te.bundle_loads(design.pods, a, b, w.via, w.weight, demand)
    busy = lp > IDLE_GBPS
    assert (sim[~busy] <= IDLE_GBPS).all()
    np.testing.assert_allclose(sim[busy], lp[busy], rtol=LOAD_RTOL)
    # And those splits are the LP's optimum: the busiest bundle at its utilisation.
    problem = ocs_te.TeProblem(
        circuits=wcmp.circuit_matrix(fabric),
        demand_gbps=demand,
        capacity_gbps=float(design.link_speed_gbps),
    )
    best = ocs_te.solve(ocs_te.build(problem))
    cap = wcmp.circuit_matrix(fabric) * float(design.link_speed_gbps)
    used = cap > 0
    assert (sim[used] / cap[used]).max() == pytest.approx(best.max_utilisation, rel=LOAD_RTOL)


def test_a_shift_takes_transit_and_uniform_stays_direct(design: Design) -> None:
    fabric = fabric_of(design)
    src, dst, size = flows(design, "shift")
    w = fabric.adapted(src, dst, size).group_weights
    assert w is not None
    _, via, share = w.entries(np.array([0]), np.array([1]))
    direct = share[via == 1].sum()
    # A block's whole injection to one block outgrows its direct circuits: transit takes a share.
    assert direct < 1 - 1e-6
    assert (via != 1).sum() >= 1
    # Uniform demand on a mesh goes nearly all direct (a little transit evens out the pairs
    # that got one circuit less per slice than others).
    uniform = wcmp.te_of(design, design.circuits, None)
    assert uniform.direct_share > 0.9 > direct
    assert uniform.mean_block_hops == pytest.approx(2 - uniform.direct_share)


@pytest.mark.parametrize("failed", ["ocs0", "spine0"])
def test_a_failure_recomputes_the_splits_on_what_survives(design: Design, failed: str) -> None:
    fabric = fabric_of(design)
    scenario = named_scenario(fabric, FailureSpec(switches=[failed]))
    after = scenario.failed_fabric(fabric)
    assert after is not None
    before_x, after_x = wcmp.circuit_matrix(fabric), wcmp.circuit_matrix(after)
    layer = ocs.layer_of(design)
    if failed == "ocs0":
        lost = sum(2 * k for _, _, o, k in design.circuits if o == 0)
    else:  # spine 0 of block 0: its slice's circuits to every other block
        lost = 2 * sum(
            k for a, b, o, k in design.circuits if 0 in (a, b) and o < layer.devices_per_spine
        )
    assert before_x.sum() - after_x.sum() == lost
    src, dst, size = flows(design, "random_permutation")
    routes = route(after.adapted(src, dst, size), src, dst, Routing.SPRAY)
    assert routes.connected.all()
    load = routes.load(wcmp.flow_rates_gbps(src, dst, size, fabric))
    sim = bundle_sim_loads(after, load)
    cap = after_x * float(design.link_speed_gbps)
    assert (sim[cap == 0] <= IDLE_GBPS).all()  # nothing rides a lost circuit


def test_a_hedge_spreads_the_splits(design: Design) -> None:
    src, dst, size = flows(design, "random_permutation")
    demand = wcmp.block_rates(
        ocs.block_of_gpus(design), design.pods, src, dst, size, fabric_of(design)
    )
    bare = wcmp.te_of(design, design.circuits, demand, 0.0)
    hedged = wcmp.te_of(design, design.circuits, demand, 0.5)
    assert hedged.max_utilisation >= bare.max_utilisation * (1 - 1e-9)
    assert hedged.direct_share < bare.direct_share


def test_the_routing_travels_in_design_json(design: Design) -> None:
    import json

    from planner.design_file import design_from_dict
    from planner.families import FAMILIES

    again = design_from_dict(json.loads(design.to_json()), FAMILIES)
    assert again.routing == "wcmp"
    assert again.routing_hedge == design.routing_hedge
    assert fabric_of(again).strategy == wcmp.WCMP


@pytest.mark.parametrize("name", list(TRAFFICS))
def test_the_contracted_bound_holds_the_reference_lp(design: Design, name: str) -> None:
    # Leaves hang off their block node alone: contracted into it, the block LP bounds lambda
    # from above (never below the reference LP), and the simulated spray never beats it.
    from planner.sim.bound import max_concurrent_flow

    fabric = fabric_of(design)
    src, dst, size = flows(design, name)
    gbit = size * 8 / 1e9
    scaled = max_concurrent_flow(fabric, src, dst, gbit, method="scaled")
    lp = max_concurrent_flow(fabric, src, dst, gbit, method="lp", max_variables=10_000_000)
    assert scaled.method == "contracted"
    assert scaled.lambda_per_s >= lp.lambda_per_s * (1 - 1e-6)
    assert scaled.lambda_per_s == pytest.approx(lp.lambda_per_s, rel=0.02)


def test_a_design_that_claims_wcmp_on_uneven_slices_is_refused(design: Design) -> None:
    from dataclasses import replace

    from planner.families import family_of

    layer = ocs.layer_of(design)
    a, b, o, k = design.circuits[0]
    moved = (a, b, (o + layer.devices_per_spine) % layer.devices, k)  # onto another spine
    uneven = replace(design, circuits=tuple(sorted((moved, *design.circuits[1:]))))
    problems = family_of("ocs_direct").check_structure(uneven)
    assert any(v.check == "routing" and "same circuits" in v.message for v in problems)
    assert not [v for v in family_of("ocs_direct").check_structure(design) if v.check == "routing"]
