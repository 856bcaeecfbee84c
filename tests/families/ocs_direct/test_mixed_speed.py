"""OCS direct-connect blocks of mixed generations (``Design.block_speed_gbps``).

A circuit runs at the slower end's rate (Poutievski et al., SIGCOMM 2022): the simulator's
merged links, the traffic it carries, the TE LP's per-pair capacity, the model's throughput
prediction, and the rates carried in design.json.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from models import ocs_te
from planner.api import plan
from planner.design import Design
from planner.design_file import DesignFileError, design_from_dict
from planner.families import FAMILIES, fabric_of
from planner.families.ocs_direct import circuits as ocs
from planner.families.ocs_direct import wcmp
from planner.loading import load_catalog
from planner.schema.instance import Instance
from planner.sim.flow import max_min_rates
from planner.sim.routing import Routing, route

GPUS = 2048
SLOW, FAST = 200, 400
#: Relative tolerance of a simulated rate against the hand computation (the TE LP's optimum).
RATE_RTOL = 1e-6


def planned(family: str) -> Design:
    inst = Instance.model_validate(
        {
            "name": "mixed",
            "cluster": {"gpus": GPUS, "gpus_per_node": 8, "nic_gbps": FAST, "nic_ports": [1]},
            "search": {"families": [family]},
        }
    )
    result = plan(inst, catalog=load_catalog(), verify=False, alternatives=False)
    assert result.design is not None
    return result.design


@pytest.fixture(scope="module")
def design() -> Design:
    d = planned("ocs_direct")
    assert d.routing == "wcmp"
    assert d.pods >= 4
    assert d.link_speed_gbps == FAST
    return d


def with_slow(d: Design, *slow: int) -> Design:
    return replace(d, block_speed_gbps=tuple(SLOW if b in slow else FAST for b in range(d.pods)))


def slice_y(d: Design) -> np.ndarray:
    y = wcmp.slice_topology(d.circuits, ocs.layer_of(d))
    assert y is not None
    return y


# ---- the simulator's fabric ----------------------------------------------------------------------
@pytest.mark.parametrize("slow", [0, 2])
def test_a_circuit_runs_at_the_slower_ends_rate(design: Design, slow: int) -> None:
    mixed = with_slow(design, slow)
    fabric = fabric_of(mixed)
    first = fabric.tier_offsets[2]
    link = np.flatnonzero(fabric.lower >= first)
    a, b = fabric.lower[link] - first, fabric.upper[link] - first
    speed = fabric.speed_gbps[2 * link]
    copies = ocs.layer_of(design).spines  # healthy: one copy per slice
    touches = (a == slow) | (b == slow)
    assert touches.any()
    assert (~touches).any()
    np.testing.assert_array_equal(speed[touches], copies * SLOW)
    np.testing.assert_array_equal(speed[~touches], copies * FAST)
    # Real circuits are still counted as such, at each pair's rate.
    x = wcmp.circuit_matrix(fabric, wcmp.circuit_rates_gbps(mixed))
    np.testing.assert_array_equal(x, copies * slice_y(design))
    # A slow block's leaves reach it at its rate too, and its GPUs' NICs are of its generation.
    leaf = design.tiers[0]
    up = np.flatnonzero((fabric.lower >= fabric.tier_offsets[1]) & (fabric.lower < first))
    block = fabric.upper[up] - first
    want = leaf.uplinks * np.where(block == slow, SLOW, FAST)
    np.testing.assert_array_equal(fabric.speed_gbps[2 * up], want)
    assert fabric.nic_speed_gbps == FAST
    per = design.gpus // design.pods
    gpu_of_slow = (np.arange(design.gpus) // per) == slow
    assert fabric.gpu_speed_gbps is not None
    np.testing.assert_array_equal(fabric.gpu_speed_gbps, np.where(gpu_of_slow, SLOW, FAST))
    gpu_links = np.flatnonzero(fabric.lower < fabric.tier_offsets[1])
    np.testing.assert_array_equal(fabric.speed_gbps[2 * gpu_links], fabric.gpu_speed_gbps)


@pytest.mark.parametrize("rates", ["uniform", "one_slow"])
def test_the_uniform_graph_is_unchanged(design: Design, rates: str) -> None:
    # Every block at the link speed, stated or not: the same graph as a design without rates.
    plain = fabric_of(design)
    stated = replace(design, block_speed_gbps=(FAST,) * design.pods)
    other = fabric_of(stated if rates == "uniform" else with_slow(design, 1))
    same = plain.class_speed_gbps == other.class_speed_gbps
    assert same == (rates == "uniform")
    assert np.array_equal(plain.link_class, other.link_class) == (rates == "uniform")


# ---- traffic between a slow and a fast block -----------------------------------------------------
def expected_rate_gbps(d: Design, s: int, t: int) -> float:
    """Per flow of a block permutation s -> t, by hand from the circuit counts.

    The NIC, each end's leaf uplinks at its block's rate, and the max flow from s to t over the
    direct and one-transit paths (each on its own two bundles): S (c_st y_st + sum_k
    min(c_sk y_sk, c_kt y_kt)), c_ab = min(r_a, r_b).
    """
    y, s_count = slice_y(d), ocs.layer_of(d).spines
    r = [d.block_rate_gbps(b) for b in range(d.pods)]

    def c(a: int, b: int) -> float:
        return float(min(r[a], r[b]) * y[a, b])

    flow = c(s, t) + sum(min(c(s, k), c(k, t)) for k in range(d.pods) if k not in (s, t))
    leaf = d.tiers[0]
    per_block = d.gpus // d.pods
    return min(
        float(d.link_speed_gbps),
        r[s] * leaf.uplinks / leaf.downlinks,
        r[t] * leaf.uplinks / leaf.downlinks,
        s_count * flow / per_block,
    )


@pytest.mark.parametrize(
    ("slow", "s", "t"),
    [((0,), 0, 1), ((0,), 1, 0), ((0,), 1, 2), ((), 0, 1)],
    ids=["slow-to-fast", "fast-to-slow", "fast-to-fast-beside-a-slow-block", "all-fast"],
)
def test_a_block_permutation_reaches_the_slower_ends_rate(
    design: Design, slow: tuple[int, ...], s: int, t: int
) -> None:
    mixed = with_slow(design, *slow)
    fabric = fabric_of(mixed)
    per = design.gpus // design.pods
    src, dst = np.arange(per) + s * per, np.arange(per) + t * per
    size = np.full(per, 1e6)
    adapted = fabric.adapted(src, dst, size)
    routes = route(adapted, src, dst, Routing.SPRAY)
    assert routes.connected.all()
    rate = max_min_rates(routes, adapted.capacity_gbps)
    want = expected_rate_gbps(mixed, s, t)
    if set(slow) & {s, t}:
        assert want == pytest.approx(SLOW)  # the slow end's rate, not the NIC's
    np.testing.assert_allclose(rate, want, rtol=RATE_RTOL)


# ---- the TE LP with per-pair rates ---------------------------------------------------------------
def te_case(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 6
    x = rng.integers(0, 5, size=(n, n))
    x = np.triu(x, 1)
    x = x + x.T
    x[0, 1] = x[1, 0] = 3  # at least one direct pair
    d = rng.uniform(0, 2000, size=(n, n)) * (rng.uniform(size=(n, n)) < 0.6)
    np.fill_diagonal(d, 0.0)
    return x, d


@pytest.mark.parametrize("hedge", [0.0, 300.0])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_equal_per_pair_rates_are_the_float_path(seed: int, hedge: float) -> None:
    x, d = te_case(seed)
    one = ocs_te.TeProblem(x, d, capacity_gbps=400.0, hedge_gbps=hedge)
    per = ocs_te.TeProblem(x, d, capacity_gbps=np.full(x.shape, 400.0), hedge_gbps=hedge)
    assert per.per_pair
    assert not one.per_pair
    a, b = ocs_te.solve(ocs_te.build(one)), ocs_te.solve(ocs_te.build(per))
    assert a.status == b.status
    assert a.max_utilisation == b.max_utilisation
    assert a.lower_bound == b.lower_bound
    for field in ("a", "b", "via", "share"):
        np.testing.assert_array_equal(getattr(a.splits, field), getattr(b.splits, field))
    assert ocs_te.hose_bound(one) == ocs_te.hose_bound(per)


@pytest.mark.parametrize("n", [2, 3])
def test_a_half_rate_pair_gets_half_the_direct_capacity(n: int) -> None:
    # Only pair (0, 1) has demand, and no transit path: its circuits carry it all.
    x = np.zeros((n, n), dtype=np.int64)
    x[0, 1] = x[1, 0] = 4
    if n == 3:
        x[1, 2] = x[2, 1] = 2  # block 2 reaches block 1 only: no path 0 -> 2 -> 1
    d = np.zeros((n, n))
    d[0, 1] = 1000.0
    rate = np.full((n, n), 400.0)
    rate[0, 1] = rate[1, 0] = 200.0
    full = ocs_te.TeProblem(x, d, capacity_gbps=400.0)
    half = ocs_te.TeProblem(x, d, capacity_gbps=rate)
    assert half.bundle_gbps()[0, 1] == 4 * 200.0 == full.bundle_gbps()[0, 1] / 2
    u_full = ocs_te.solve(ocs_te.build(full)).max_utilisation
    u_half = ocs_te.solve(ocs_te.build(half)).max_utilisation
    assert u_full == pytest.approx(1000.0 / 1600.0)
    assert u_half == pytest.approx(2 * u_full)


@pytest.mark.parametrize(
    ("rate", "why"),
    [
        (np.full((3, 2), 400.0), "3 x 3"),
        (np.array([[0, 200, 400], [400, 0, 400], [400, 400, 0]], float), "symmetric"),
        (np.array([[0, 0, 400], [0, 0, 400], [400, 400, 0]], float), "positive between"),
        (-1.0, "positive"),
    ],
)
def test_a_bad_capacity_is_refused(rate: Any, why: str) -> None:
    x = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    with pytest.raises(ValueError, match=why):
        ocs_te.TeProblem(x, np.zeros((3, 3)), capacity_gbps=rate)


def test_the_te_of_a_design_counts_the_slow_block(design: Design) -> None:
    # Uniform demand on the mesh: the busiest circuit now touches the slow block.
    fast = wcmp.te_of(design, design.circuits, None)
    slow = wcmp.te_of(with_slow(design, 0), design.circuits, None)
    assert slow.max_utilisation > fast.max_utilisation * 1.5


# ---- the model's prediction (direct paths) -------------------------------------------------------
@pytest.mark.parametrize("slow", [(), (0,)])
def test_the_throughput_fraction_counts_the_slower_end(
    design: Design, slow: tuple[int, ...]
) -> None:
    mixed = with_slow(design, *slow)
    got = ocs.throughput_fraction(mixed)
    # Uniform demand: every block injects its GPUs' NIC bandwidth, a third to each other block.
    y, s = slice_y(design), ocs.layer_of(design).spines
    share = design.gpus // design.pods * design.link_speed_gbps / (design.pods - 1)
    want = min(
        min(mixed.block_rate_gbps(a), mixed.block_rate_gbps(b)) * s * y[a, b] / share
        for a in range(design.pods)
        for b in range(design.pods)
        if a != b
    )
    assert got == pytest.approx(min(1.0, want))
    if not slow:
        assert got == pytest.approx(ocs.throughput_fraction(design))


# ---- design.json ---------------------------------------------------------------------------------
@pytest.mark.parametrize("slow", [(), (0,), (0, 3)])
def test_block_rates_travel_in_design_json(design: Design, slow: tuple[int, ...]) -> None:
    mixed = with_slow(design, *slow) if slow else design
    again = design_from_dict(json.loads(mixed.to_json()), FAMILIES)
    assert again.block_speed_gbps == mixed.block_speed_gbps
    assert [again.block_rate_gbps(b) for b in range(design.pods)] == [
        SLOW if b in slow else FAST for b in range(design.pods)
    ]


def test_an_older_file_without_block_rates_reads_as_empty(design: Design) -> None:
    data = json.loads(with_slow(design, 0).to_json())
    del data["block_speed_gbps"]
    assert design_from_dict(data, FAMILIES).block_speed_gbps == ()


@pytest.mark.parametrize(
    ("rates", "why"),
    [
        ("short", "one rate per block"),
        ("zero", "entry 1 is 0"),
        ("faster", "never faster than link_speed_gbps"),
        ("string", "block_speed_gbps"),
    ],
)
def test_a_bad_block_rate_is_refused(design: Design, rates: str, why: str) -> None:
    data = json.loads(design.to_json())
    n = design.pods
    data["block_speed_gbps"] = {
        "short": [FAST] * (n - 1),
        "zero": [FAST, 0] + [FAST] * (n - 2),
        "faster": [FAST] * (n - 1) + [2 * FAST],
        "string": ["400"] * n,
    }[rates]
    with pytest.raises(DesignFileError, match=why):
        design_from_dict(data, FAMILIES)


def test_block_rates_need_pods() -> None:
    clos = planned("clos")
    assert clos.num_tiers == 2
    data = json.loads(clos.to_json())
    data["block_speed_gbps"] = [clos.link_speed_gbps] * clos.pods
    with pytest.raises(DesignFileError, match="only a design of pods"):
        design_from_dict(data, FAMILIES)


# ---- the whole simulation: the ideal counts each GPU at its own NIC --------------------------------
def shifted(d: Design) -> tuple[float, float]:
    """(ideal seconds, fraction of ideal) of a shift between neighbouring blocks, sprayed."""
    from planner.schema.verify import Verify
    from planner.sim.simulate import simulate

    verify = Verify.model_validate(
        {
            "routing": ["spray"],
            "single_switch_failures": False,
            "traffic": [
                {"kind": "shift", "group_size": 2 * d.gpus // d.pods, "size_bytes": 1 << 24}
            ],
        }
    )
    row = simulate(d, verify, fabric=fabric_of(d)).collectives.row(0, named=True)
    return row["ideal_time_s"], row["fraction_of_ideal"]


@pytest.mark.parametrize("slow", [(0,), (0, 2)])
def test_a_mixed_fabric_is_judged_against_each_gpus_own_nic(
    design: Design, slow: tuple[int, ...]
) -> None:
    """Every GPU sends and receives the same bytes: the slowest NIC sets the ideal (twice the
    all-fast one). Slower NICs ask less of the circuits, which run at their slower end's rate:
    the mixed fabric comes at least as close to its ideal as the all-fast one to its own (on
    these four blocks a neighbour shift reaches 0.66 all fast, 0.98 with block 0 slow)."""
    fast_ideal, fast_fraction = shifted(design)
    ideal, fraction = shifted(with_slow(design, *slow))
    # Twice the all-fast ideal, up to the path latency the packet model adds to each (fixed).
    assert ideal == pytest.approx(fast_ideal * FAST / SLOW, rel=0.01)
    assert ideal > 1.9 * fast_ideal
    assert fraction >= fast_fraction - 0.01


# ---- direct routing: every circuit its own pair of links ------------------------------------------
@pytest.mark.parametrize("slow", [0, 3])
def test_direct_routing_runs_each_circuit_at_its_slower_end(design: Design, slow: int) -> None:
    direct = replace(with_slow(design, slow), routing="direct")
    fabric = fabric_of(direct)
    assert fabric.roles[-1] == "circuit"
    circuit = np.flatnonzero(fabric.upper >= fabric.tier_offsets[3])
    spine_block = (fabric.lower[circuit] - fabric.tier_offsets[2]) // design.tiers[0].fanout
    # Each circuit's two halves: the pseudo-node's partner half tells the other end.
    node = fabric.upper[circuit]
    ends: dict[int, set[int]] = {n: set() for n in node.tolist()}
    for n, b in zip(node.tolist(), spine_block.tolist(), strict=True):
        ends[n].add(b)
    want = np.array([SLOW if slow in ends[n] else FAST for n in node.tolist()], dtype=float)
    np.testing.assert_array_equal(fabric.speed_gbps[2 * circuit], want)
    assert (want == SLOW).any()
    assert (want == FAST).any()
    per = design.gpus // design.pods
    assert fabric.gpu_speed_gbps is not None
    np.testing.assert_array_equal(
        fabric.gpu_speed_gbps, np.where(np.arange(design.gpus) // per == slow, SLOW, FAST)
    )
    assert fabric.nic_speed_gbps == FAST
    # Routed up-down over its circuits: a shift with a slow block is judged at its NIC.
    # Direct circuits alone carry a third of a block's uplinks to its neighbour (0.31 all fast).
    fast_ideal, fast_fraction = shifted(replace(design, routing="direct"))
    ideal, fraction = shifted(direct)
    assert ideal == pytest.approx(fast_ideal * FAST / SLOW, rel=0.01)
    assert fraction >= fast_fraction - 0.01
