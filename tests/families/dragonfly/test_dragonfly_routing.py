"""The dragonfly's graph, its wiring formulas against it, and minimal against Valiant routing."""

from __future__ import annotations

from dataclasses import replace

import networkx as nx
import numpy as np
import pytest

from models.dragonfly import structure as st
from planner.families.dragonfly.fabric import MINIMAL, VALIANT, fabric_of
from planner.families.dragonfly.wiring import DragonflyWiring
from planner.sim.fabric import Fabric, RoutingStrategy
from planner.sim.routing import Routing, route
from planner.sim.routing_strategies import UNREACHABLE, distances

#: A balanced small dragonfly: p = h = 2, a = 4 = 2 p, g = a h + 1 = 9, one link per pair.
BALANCED = DragonflyWiring(2, 4, 9, 1, 1)
SPEED_GBPS = 400.0
#: Slack on a throughput figure computed from link loads.
THROUGHPUT_TOL = 1e-9


def _fabric(w: DragonflyWiring = BALANCED, strategy: RoutingStrategy = MINIMAL) -> Fabric:
    gpus = w.gpus_per_switch * w.switches_per_group * w.groups
    return fabric_of(gpus, 1, w, SPEED_GBPS, strategy=strategy)


def _switch_graph(f: Fabric) -> nx.Graph:
    g = nx.Graph()
    first = f.first_switch
    g.add_nodes_from(range(first, f.nodes))
    for u, v in zip(f.lower.tolist(), f.upper.tolist(), strict=True):
        if u >= first:
            g.add_edge(u, v)
    return g


@pytest.mark.parametrize(
    "w",
    [BALANCED, DragonflyWiring(3, 2, 3, 2, 1), DragonflyWiring(1, 3, 4, 3, 2)],
    ids=str,
)
def test_the_hop_formula_is_the_longest_minimal_route(w: DragonflyWiring) -> None:
    f = _fabric(w)
    dist = distances(f, np.arange(f.first_switch, f.nodes))
    assert (dist < UNREACHABLE).all()
    assert int(dist.max()) + 1 == st.switch_hops(
        w.switches_per_group, w.groups, w.global_links_per_pair
    )
    # A shortest path may cut through a third group; a minimal route never does.
    assert nx.diameter(_switch_graph(f)) <= int(dist.max())


def test_counts_and_ports_follow_the_graph() -> None:
    f, w = _fabric(), BALANCED
    g = _switch_graph(f)
    assert g.number_of_nodes() == w.switches_per_group * w.groups
    assert nx.is_connected(g)
    degree = np.bincount(np.concatenate([f.lower, f.upper])[f.gpus * 2 :] - 0, minlength=f.nodes)
    ports = np.bincount(np.concatenate([f.lower, f.upper]), minlength=f.nodes)[f.first_switch :]
    assert degree.size >= f.nodes
    assert ports.max() == st.ports_per_switch(2, 4, 1, w.global_ports)
    assert int((f.link_class == 1).sum()) == st.local_links(4, 9, 1)
    assert int((f.link_class == 2).sum()) == st.global_links(9, 1)


def test_bisection_is_the_min_cut_between_the_group_halves() -> None:
    f, w = _fabric(), BALANCED
    g = nx.Graph()
    first, a = f.first_switch, w.switches_per_group
    for u, v in zip(f.lower.tolist(), f.upper.tolist(), strict=True):
        if u >= first:
            cap = g.get_edge_data(u, v, {"capacity": 0.0})["capacity"]
            g.add_edge(u, v, capacity=cap + 1.0)
    half = w.groups // 2
    left = [first + s for s in range(half * a)]
    right = [first + s for s in range(half * a, w.groups * a)]
    g.add_edges_from(("S", n, {"capacity": 1e9}) for n in left)
    g.add_edges_from((n, "T", {"capacity": 1e9}) for n in right)
    cut = nx.minimum_cut_value(g, "S", "T")
    assert cut == st.bisection_links(a, w.groups, 1, 1)


def test_blast_radius_is_one_switch_of_gpus_under_valiant() -> None:
    f = _fabric(strategy=VALIANT)
    failed = f.with_failed_switches([f.first_switch])
    src = np.arange(f.gpus)
    dst = (src + 9) % f.gpus
    routes = route(failed, src, dst, Routing.SPRAY)
    own = src < BALANCED.gpus_per_switch  # switch 0's GPUs
    assert np.array_equal(~routes.connected, own | (dst < BALANCED.gpus_per_switch))


def _throughput(f: Fabric, src: np.ndarray, dst: np.ndarray, routing: Routing) -> float:
    """Fraction of line rate every flow gets when all scale together (oblivious routing)."""
    routes = route(f, src, dst, routing)
    assert routes.connected.all()
    load = routes.load(np.ones(src.size))
    return float(1.0 / load.max())


def _group_shift() -> tuple[np.ndarray, np.ndarray]:
    gpus = 2 * 4 * 9
    src = np.arange(gpus)
    return src, (src + 8) % gpus  # every GPU to its twin in the next group


def _uniform() -> tuple[np.ndarray, np.ndarray]:
    gpus = 2 * 4 * 9
    s, d = np.meshgrid(np.arange(gpus), np.arange(gpus), indexing="ij")
    keep = s != d
    return s[keep], d[keep]


def test_valiant_beats_minimal_on_a_group_shift() -> None:
    src, dst = _group_shift()
    minimal = _throughput(_fabric(), src, dst, Routing.SPRAY)
    valiant = _throughput(_fabric(strategy=VALIANT), src, dst, Routing.SPRAY)
    assert minimal == pytest.approx(1 / 8, rel=THROUGHPUT_TOL)  # 8 GPUs of a group, 1 link
    assert valiant > 2 * minimal


@pytest.mark.slow
def test_minimal_beats_valiant_on_uniform_traffic() -> None:
    src, dst = _uniform()
    n = 2 * 4 * 9 - 1
    minimal = _throughput(_fabric(), src, dst, Routing.SPRAY) * n
    valiant = _throughput(_fabric(strategy=VALIANT), src, dst, Routing.SPRAY) * n
    assert minimal > valiant
    assert valiant < 0.75


def test_valiant_under_ecmp_routes_every_flow_through_another_group() -> None:
    f = _fabric(strategy=VALIANT)
    src, dst = _group_shift()
    routes = route(f, src, dst, Routing.ECMP, seed=3)
    assert routes.connected.all()
    hops = np.asarray(routes.explicit.sum(axis=0)).ravel() - 2  # minus the two NIC links
    assert hops.min() >= 2  # two global links at least: out to the intermediate, on to the target
    assert hops.max() <= 5  # local, global, local, global, local


def test_a_strategy_without_via_routes_as_before() -> None:
    f = _fabric()
    src, dst = _group_shift()
    a = route(f, src, dst, Routing.SPRAY).load(np.ones(src.size))
    b = route(replace(f, strategy=MINIMAL), src, dst, Routing.SPRAY).load(np.ones(src.size))
    assert np.array_equal(a, b)


@pytest.mark.parametrize(
    "w",
    [
        DragonflyWiring(2, 4, 9, 1, 1, "valiant", "blocks"),
        DragonflyWiring(2, 4, 9, 3, 1, "valiant", "blocks"),
        DragonflyWiring(3, 2, 3, 2, 1, "valiant", "round_robin"),
        DragonflyWiring(1, 3, 4, 3, 2, "valiant", "blocks"),
    ],
    ids=str,
)
def test_the_valiant_hop_formula_is_the_longest_two_leg_route(w: DragonflyWiring) -> None:
    """Minimally to a switch of another group where a link of the source's group lands, then on."""
    from planner.families.dragonfly.fabric import landings, switch_groups

    f = _fabric(w)
    first = f.first_switch
    dist = distances(f, np.arange(first, f.nodes)).astype(np.int64)
    group = switch_groups(f)
    ptr, land, _ = landings(f, group)
    source = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
    longest = max(
        int(dist[group == x, mid].max() + dist[mid, (group != x) & (group != group[mid])].max())
        for x, mid in zip(source.tolist(), land.tolist(), strict=True)
    )
    a, g, m = w.switches_per_group, w.groups, w.global_links_per_pair
    assert longest == st.valiant_routed_links(a, g, m, w.arrangement)
    assert st.switch_hops(a, g, m, w.arrangement, "valiant") == longest + 1
