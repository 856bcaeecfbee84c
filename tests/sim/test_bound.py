"""The optimal-routing bound against independent max-flow and per-flow LP computations."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import networkx as nx
import numpy as np
import pulp
import pytest

from models.status import Status
from planner.api import plan
from planner.families import fabric_of
from planner.families.clos.bound import clos_bound
from planner.schema.instance import Instance
from planner.sim import bound
from planner.sim.bound import max_concurrent_flow
from planner.sim.fabric import Fabric
from planner.sim.routing_strategies import UP_DOWN

#: Relative agreement required between the bound and an independent computation.
REL_TOL = 1e-6
SPEED_GBPS = 400.0


# ---- fabrics ---------------------------------------------------------------------------------
def make_fabric(
    gpus_per_leaf: int,
    leaves: int,
    spines_per_pod: int,
    q1: int = 1,
    leaves_per_pod: int | None = None,
    cores_per_group: int = 0,
    q2: int = 1,
) -> Fabric:
    """A hand-made Clos plane wired as planner.sim.fabric wires it (2 tiers, or 3 with cores)."""
    gpus = gpus_per_leaf * leaves
    three = cores_per_group > 0
    lpp = leaves_per_pod or leaves
    pods = leaves // lpp if three else 1
    spines = spines_per_pod * pods
    counts = [gpus, leaves, spines] + ([spines_per_pod * cores_per_group] if three else [])
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    g = np.arange(gpus)
    lowers, uppers, classes = [g], [off[1] + g // gpus_per_leaf], [np.zeros(gpus, np.int64)]
    leaf = np.repeat(np.arange(leaves), spines_per_pod * q1)
    j = np.tile(np.repeat(np.arange(spines_per_pod), q1), leaves)
    lowers.append(off[1] + leaf)
    uppers.append(off[2] + (leaf // lpp) * spines_per_pod * three + j)
    classes.append(np.ones(leaf.size, np.int64))
    if three:
        agg = np.repeat(np.arange(spines), cores_per_group * q2)
        c = np.tile(np.repeat(np.arange(cores_per_group), q2), spines)
        lowers.append(off[2] + agg)
        uppers.append(off[3] + (agg % spines_per_pod) * cores_per_group + c)
        classes.append(np.full(agg.size, 2, np.int64))
    lower = np.concatenate(lowers).astype(np.int64)
    return Fabric(
        gpus=gpus,
        planes=1,
        link_speed_gbps=SPEED_GBPS,
        tier_offsets=tuple(int(x) for x in off),
        lower=lower,
        upper=np.concatenate(uppers).astype(np.int64),
        link_class=np.concatenate(classes),
        alive=np.ones(2 * lower.size, dtype=bool),
        strategy=UP_DOWN,
        bound=clos_bound,
    )


@cache
def planned_fabric(gpus: int, oversubscription: float = 1.0, tiers: int = 2) -> Fabric:
    """A fabric the planner designs (one plane)."""
    inst: dict[str, Any] = {
        "name": "bound",
        "cluster": {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 400},
        "search": {
            "pin": {"tiers": tiers, "switch_models": "qm9700", "leaf_placement": "top_of_rack"}
        },
    }
    if oversubscription != 1.0:
        inst["constraints"] = {"max_oversubscription": [oversubscription, 1.0]}
    return fabric_of(plan(Instance.model_validate(inst), alternatives=False).design)


FABRICS = {
    "2tier-4x4-2sp": lambda: make_fabric(4, 4, 2),
    "2tier-4x4-2sp-q2": lambda: make_fabric(4, 4, 2, q1=2),
    "2tier-4x2-3sp": lambda: make_fabric(2, 4, 3),
    "3tier-2pods": lambda: make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2),
    "3tier-2pods-thin": lambda: make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=1),
    "planned-128-2to1": lambda: planned_fabric(128, 2.0),
}


# ---- independent references -----------------------------------------------------------------
def switch_graph(fabric: Fabric) -> nx.DiGraph:
    """Alive switch-to-switch links as a DiGraph with parallel capacities summed."""
    g = nx.DiGraph()
    first = fabric.tier_offsets[1]
    for u, v, cap in fabric.to_networkx().edges(data="capacity"):
        if u >= first and v >= first:
            old = g.get_edge_data(u, v, {"capacity": 0.0})["capacity"]
            g.add_edge(u, v, capacity=old + cap)
    return g


def per_flow_lp(fabric: Fabric, src: np.ndarray, dst: np.ndarray, demand: np.ndarray) -> float:
    """Max concurrent flow with one commodity per flow on the full graph (GPUs included), in PuLP."""
    m = pulp.LpProblem("mcf", pulp.LpMaximize)
    lam = m.add_variable("lam", lowBound=0)
    links = [int(e) for e in np.flatnonzero(fabric.alive)]
    tail, head, cap = fabric.src, fabric.dst, fabric.capacity_gbps
    x = {(i, e): m.add_variable(f"x_{i}_{e}", lowBound=0) for i in range(src.size) for e in links}
    m += lam
    for e in links:
        m += pulp.lpSum(x[i, e] for i in range(src.size)) <= float(cap[e])
    for i in range(src.size):
        for v in range(fabric.nodes):
            out = pulp.lpSum(x[i, e] for e in links if tail[e] == v)
            into = pulp.lpSum(x[i, e] for e in links if head[e] == v)
            rhs = float(demand[i]) * (int(v == src[i]) - int(v == dst[i]))
            m += out - into == rhs * lam
    solver = (
        pulp.HiGHS(msg=False)
        if "HiGHS" in pulp.listSolvers(onlyAvailable=True)
        else pulp.PULP_CBC_CMD(msg=False)
    )
    m.solve(solver)
    assert pulp.LpStatus[m.status] == "Optimal"
    return float(lam.value())


def shift(fabric: Fabric, by: int) -> tuple[np.ndarray, np.ndarray]:
    """Every GPU sends to the GPU ``by`` places on."""
    g = np.arange(fabric.gpus)
    return g, (g + by) % fabric.gpus


# ---- (a) single commodity == networkx maximum flow ------------------------------------------
@pytest.mark.parametrize("name", sorted(FABRICS))
@pytest.mark.parametrize("demand_gbit", [1.0, 40.0])
def test_leaf_to_leaf_matches_max_flow(name: str, demand_gbit: float) -> None:
    fabric = FABRICS[name]()
    leaves = fabric.leaf_of(np.arange(fabric.gpus))
    a, b = np.flatnonzero(leaves == leaves[0]), np.flatnonzero(leaves == leaves[-1])
    n = min(a.size, b.size)
    src, dst = a[:n], b[:n]
    flow = nx.maximum_flow_value(switch_graph(fabric), int(leaves[0]), int(leaves[-1]))
    expected = min(SPEED_GBPS / demand_gbit, flow / (n * demand_gbit))
    res = max_concurrent_flow(fabric, src, dst, demand_gbit)
    assert res.status is Status.OPTIMAL
    assert res.lambda_per_s == pytest.approx(expected, rel=REL_TOL)
    assert res.time_s == pytest.approx(1.0 / expected, rel=REL_TOL)


@pytest.mark.parametrize("name", sorted(FABRICS))
def test_one_pair_matches_max_flow_and_nic(name: str) -> None:
    fabric = FABRICS[name]()
    src, dst = 0, fabric.gpus - 1
    s_leaf, t_leaf = (int(x) for x in fabric.leaf_of(np.array([src, dst])))
    flow = nx.maximum_flow_value(switch_graph(fabric), s_leaf, t_leaf)
    expected = min(SPEED_GBPS, flow) / 8.0
    res = max_concurrent_flow(fabric, [src], [dst], 8.0)
    assert res.lambda_per_s == pytest.approx(expected, rel=REL_TOL)
    assert res.binding == "nic"


# ---- (b) per-flow LP in PuLP gives the same lambda ---------------------------------------------
@pytest.mark.parametrize(
    "name", ["2tier-4x4-2sp", "2tier-4x2-3sp", "3tier-2pods", "3tier-2pods-thin"]
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_per_flow_pulp_lp(name: str, seed: int) -> None:
    fabric = FABRICS[name]()
    rng = np.random.default_rng(seed)
    flows = 12
    src = rng.integers(0, fabric.gpus, flows)
    dst = (src + rng.integers(1, fabric.gpus, flows)) % fabric.gpus
    demand = rng.uniform(1.0, 50.0, flows)
    expected = per_flow_lp(fabric, src, dst, demand)
    res = max_concurrent_flow(fabric, src, dst, demand)
    assert res.status is Status.OPTIMAL
    assert res.lambda_per_s == pytest.approx(expected, rel=REL_TOL)


def test_matches_per_flow_pulp_lp_with_failures() -> None:
    fabric = make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2)
    fabric = fabric.with_failed_links([16, 21]).with_failed_switches([fabric.tier_offsets[3]])
    src, dst = shift(fabric, 8)
    demand = np.linspace(1.0, 16.0, fabric.gpus)
    assert max_concurrent_flow(fabric, src, dst, demand).lambda_per_s == pytest.approx(
        per_flow_lp(fabric, src, dst, demand), rel=REL_TOL
    )


# ---- (c) non-blocking Clos: NICs bind; 2:1 leaf tier halves it ------------------------------
@pytest.mark.parametrize("gpus", [256, 512])
@pytest.mark.parametrize("seed", [0, 1])
def test_non_blocking_permutation_is_nic_bound(gpus: int, seed: int) -> None:
    fabric = planned_fabric(gpus)
    dst = np.random.default_rng(seed).permutation(gpus)
    res = max_concurrent_flow(fabric, np.arange(gpus), dst, 16.0)
    assert res.lambda_per_s == pytest.approx(SPEED_GBPS / 16.0, rel=REL_TOL)
    assert res.binding == "nic"
    assert res.fraction_of_nic == pytest.approx(1.0, rel=REL_TOL)


@pytest.mark.parametrize("gpus", [128, 256])
def test_two_to_one_leaf_tier_halves_cross_traffic(gpus: int) -> None:
    fabric = planned_fabric(gpus, 2.0)
    per_leaf = int(np.bincount(fabric.leaf_of(np.arange(gpus))).max())
    src, dst = shift(fabric, per_leaf)
    res = max_concurrent_flow(fabric, src, dst, 16.0)
    assert res.lambda_per_s == pytest.approx(SPEED_GBPS / 16.0 / 2.0, rel=REL_TOL)
    assert res.binding == "fabric"
    assert res.fraction_of_nic == pytest.approx(0.5, rel=REL_TOL)


# ---- (d) failures remove the expected share ---------------------------------------------------
@pytest.mark.parametrize("spines", [2, 4])
def test_failed_spine_costs_its_share(spines: int) -> None:
    fabric = make_fabric(spines, 4, spines)  # non-blocking: as many spines as GPUs per leaf
    src, dst = shift(fabric, spines)
    before = max_concurrent_flow(fabric, src, dst, 10.0)
    after = max_concurrent_flow(
        fabric.with_failed_switches([fabric.tier_offsets[2]]), src, dst, 10.0
    )
    assert before.binding == "nic"
    assert after.binding == "fabric"
    assert after.lambda_per_s / before.lambda_per_s == pytest.approx(
        (spines - 1) / spines, rel=REL_TOL
    )


def test_failed_planned_spine_costs_its_share() -> None:
    fabric = planned_fabric(256)
    spines = fabric.tier_offsets[3] - fabric.tier_offsets[2]
    per_leaf = int(np.bincount(fabric.leaf_of(np.arange(fabric.gpus))).max())
    src, dst = shift(fabric, per_leaf)
    after = max_concurrent_flow(
        fabric.with_failed_switches([fabric.tier_offsets[2]]), src, dst, 1.0
    )
    assert after.fraction_of_nic == pytest.approx((spines - 1) / spines, rel=REL_TOL)


def test_cut_off_leaf_gives_zero() -> None:
    fabric = make_fabric(2, 2, 1)
    cut = fabric.with_failed_switches([fabric.tier_offsets[2]])
    res = max_concurrent_flow(cut, [0], [3], 1.0)
    assert res.lambda_per_s == 0.0
    assert math.isinf(res.time_s or 0.0)


# ---- (e) size guard, early returns, status table -------------------------------------------
def test_size_guard_skips_without_building(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the LP must not be built")

    monkeypatch.setattr(bound, "build_fabric_lp", refuse)
    fabric = planned_fabric(256)
    src, dst = shift(fabric, 32)
    res = max_concurrent_flow(fabric, src, dst, 1.0, max_variables=100, method="lp")
    assert res.skipped
    assert res.status is None
    assert res.lambda_per_s is None
    assert "variables" in res.skipped_reason
    assert res.size is not None
    assert res.size.variables > 100
    assert res.lambda_nic_per_s == pytest.approx(SPEED_GBPS)


@pytest.mark.parametrize(
    ("src", "dst"),
    [([], []), ([3], [3])],
    ids=["no-flows", "self-flow"],
)
def test_no_traffic_returns_early(src: list[int], dst: list[int]) -> None:
    res = max_concurrent_flow(make_fabric(4, 4, 2), src, dst, 1.0)
    assert res.time_s == 0.0
    assert res.binding is None
    assert res.size is None


def test_traffic_inside_one_leaf_never_builds_an_lp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bound, "build_fabric_lp", None)
    res = max_concurrent_flow(make_fabric(4, 4, 2), [0, 1, 2], [1, 2, 3], [4.0, 2.0, 1.0])
    assert res.binding == "nic"
    assert res.lambda_per_s == pytest.approx(SPEED_GBPS / 4.0)
    assert res.lambda_fabric_per_s == math.inf
