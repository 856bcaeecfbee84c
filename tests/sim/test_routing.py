"""ECMP and spraying routes: valley-free shortest paths, even splits, seeds, failures, distances."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import networkx as nx
import numpy as np
import pytest

from planner.api import plan
from planner.families import fabric_of
from planner.schema.instance import Instance
from planner.sim.fabric import Fabric
from planner.sim.routes import Routes
from planner.sim.routing import Routing, route
from planner.sim.routing_strategies import UNREACHABLE, leaf_distances
from tests.sim.test_bound import make_fabric

#: Relative tolerance on fractions that should be exact up to floating-point sums.
FRAC_TOL = 1e-12


# ---- fabrics ---------------------------------------------------------------------------------
@cache
def planned(
    gpus: int, tiers: int = 2, oversubscription: float | tuple[float, ...] = 1.0
) -> tuple[Fabric, int]:
    """A plane the planner designs, and its leaves per pod (3 tiers wired non-degenerately)."""
    ratio = list(oversubscription) if isinstance(oversubscription, tuple) else oversubscription
    constraints: dict[str, Any] = {"max_oversubscription": ratio}
    if tiers == 3:
        constraints["survive"] = {"min_bandwidth_fraction": 0.5}
    inst = {
        "name": "routing",
        "cluster": {"gpus": gpus, "nic_gbps": 400},
        "constraints": constraints,
        "search": {
            "pin": {
                "tiers": tiers,
                "planes": 1,
                "switch_models": "qm9700",
                # The shapes these tests expect: leaves in the rack, a divisor of its 32 GPUs.
                "leaf_placement": "top_of_rack",
            }
        },
    }
    design = plan(Instance.model_validate(inst), alternatives=False).design
    assert design is not None
    return fabric_of(design), int(design.leaves_per_pod)


def leaves_of_pods(fabric: Fabric, leaves_per_pod: int) -> int:
    """Leaves per pod for 3 tiers; all leaves form one pod in 2 tiers."""
    n_leaf = fabric.tier_offsets[2] - fabric.tier_offsets[1]
    return leaves_per_pod if fabric.tiers == 3 else n_leaf


#: name -> (fabric, leaves per pod); healthy fabrics only.
HEALTHY: dict[str, Callable[[], tuple[Fabric, int]]] = {
    "2t-4x4-2sp": lambda: (make_fabric(4, 4, 2), 4),
    "2t-4x4-2sp-q2": lambda: (make_fabric(4, 4, 2, q1=2), 4),
    "2t-2x4-3sp": lambda: (make_fabric(2, 4, 3), 4),
    "3t-2pods": lambda: (make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2), 2),
    "3t-2pods-q2": lambda: (
        make_fabric(2, 6, 2, leaves_per_pod=3, cores_per_group=1, q1=2, q2=3),
        3,
    ),
    "planned-256-2t": lambda: planned(256, 2),
    "planned-256-2t-2to1": lambda: planned(256, 2, (2.0, 1.0)),
    "planned-256-3t": lambda: planned(256, 3),
    "planned-512-3t": lambda: planned(512, 3),
}


def _failed_3t() -> Fabric:
    fabric = make_fabric(4, 8, 2, leaves_per_pod=4, cores_per_group=2)
    # leaf 0 loses its link to spine 0 and spine 1 loses a core link; one core fails.
    ups = np.flatnonzero(fabric.link_class == 1)
    cores = np.flatnonzero(fabric.link_class == 2)
    return fabric.with_failed_links([int(ups[0]), int(cores[2])]).with_failed_switches(
        [fabric.tier_offsets[3]]
    )


def _failed_split_pod_3t() -> Fabric:
    """Two leaves of one pod with no common spine: core groups are disjoint, so they are cut off."""
    fabric = make_fabric(2, 4, 2, leaves_per_pod=2, cores_per_group=2)
    off = fabric.tier_offsets
    cut = (fabric.link_class == 1) & (
        ((fabric.lower == off[1]) & (fabric.upper == off[2] + 1))
        | ((fabric.lower == off[1] + 1) & (fabric.upper == off[2]))
    )
    return fabric.with_failed_links(np.flatnonzero(cut))


def _failed_planned(tiers: int, seed: int) -> Fabric:
    fabric = planned(256, tiers)[0]
    rng = np.random.default_rng(seed)
    inner = np.flatnonzero(fabric.link_class >= 1)
    return fabric.with_failed_links(rng.choice(inner, size=inner.size // 10, replace=False))


#: name -> fabric, healthy and with failures.
def _fabric_only(build: Callable[[], tuple[Fabric, int]]) -> Callable[[], Fabric]:
    return lambda: build()[0]


ANY: dict[str, Callable[[], Fabric]] = {name: _fabric_only(b) for name, b in HEALTHY.items()}
ANY |= {
    "2t-failed-spine": lambda: make_fabric(4, 4, 3).with_failed_switches(
        [make_fabric(4, 4, 3).tier_offsets[2] + 1]
    ),
    "2t-failed-links": lambda: make_fabric(4, 4, 2, q1=2).with_failed_links([16, 19, 25]),
    "3t-failed-mixed": _failed_3t,
    "3t-failed-split-pod": _failed_split_pod_3t,
    "planned-256-2t-failed": lambda: _failed_planned(2, 0),
    "planned-256-3t-failed": lambda: _failed_planned(3, 1),
}


# ---- helpers ---------------------------------------------------------------------------------
def random_flows(fabric: Fabric, flows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random GPU pairs with src != dst."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, fabric.gpus, flows)
    dst = (src + rng.integers(1, fabric.gpus, flows)) % fabric.gpus
    return src, dst


def dense(routes: Routes) -> np.ndarray:
    """Fraction of every flow on every directed link (links x flows), explicit plus pattern."""
    out = routes.explicit.toarray()
    if routes.patterns is not None:
        pats = routes.patterns.toarray()
        has = np.flatnonzero(routes.flow_pattern >= 0)
        out[:, has] += pats[:, routes.flow_pattern[has]]
        if routes.flow_pattern_down is not None:  # patterns held in halves: add the second
            has = np.flatnonzero(routes.flow_pattern_down >= 0)
            out[:, has] += pats[:, routes.flow_pattern_down[has]]
    return out


def valley_free_lengths(fabric: Fabric, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Reference: links on the shortest up-then-down path of alive links (NIC links included).

    A breadth-first search on a two-phase state graph: (node, climbing) follows up links and may
    turn down; (node, descending) follows down links only. -1 where no such path exists.
    """
    g = nx.DiGraph()
    tail, head, cls = fabric.src, fabric.dst, fabric.directed_class
    for e in np.flatnonzero(fabric.alive & (cls >= 1)):
        t, h = int(tail[e]), int(head[e])
        if e % 2 == 0:
            g.add_edge((t, 0), (h, 0))
        else:
            g.add_edge((t, 0), (h, 1))
            g.add_edge((t, 1), (h, 1))
    s_leaf, d_leaf = fabric.leaf_of(src), fabric.leaf_of(dst)
    nic = fabric.alive[2 * src] & fabric.alive[2 * dst + 1]
    dist: dict[int, dict[Any, int]] = {}
    out = np.full(src.size, -1, dtype=np.int64)
    for i, (a, b) in enumerate(zip(s_leaf.tolist(), d_leaf.tolist(), strict=True)):
        if not nic[i]:
            continue
        if a == b:
            out[i] = 2
            continue
        if a not in dist:
            dist[a] = nx.single_source_shortest_path_length(g, (a, 0)) if (a, 0) in g else {}
        hops = [dist[a][k] for k in ((b, 0), (b, 1)) if k in dist[a]]
        if hops:
            out[i] = 2 + min(hops)
    return out


def topology_lengths(
    fabric: Fabric, leaves_per_pod: int, src: np.ndarray, dst: np.ndarray
) -> np.ndarray:
    """Healthy Clos: 2 links within a leaf, 4 via a spine, 6 via a core (3 tiers, across pods)."""
    first = fabric.tier_offsets[1]
    a, b = fabric.leaf_of(src) - first, fabric.leaf_of(dst) - first
    lpp = leaves_of_pods(fabric, leaves_per_pod)
    return np.where(a == b, 2, np.where(a // lpp == b // lpp, 4, 6))


def follow(fabric: Fabric, links: np.ndarray, src: int, dst: int) -> int | None:
    """Number of links of a contiguous chain from GPU src to GPU dst using exactly these links."""
    by_tail: dict[int, list[int]] = {}
    for e in links.tolist():
        by_tail.setdefault(int(fabric.src[e]), []).append(e)
    node, steps = src, 0
    while node != dst or steps == 0:
        nxt = by_tail.pop(node, [])
        if len(nxt) != 1:
            return None
        node, steps = int(fabric.dst[nxt[0]]), steps + 1
    return steps if not by_tail else None


# ---- ECMP paths --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ANY))
@pytest.mark.parametrize("seed", [0, 7])
def test_ecmp_paths_are_contiguous_alive_and_shortest(name: str, seed: int) -> None:
    fabric = ANY[name]()
    src, dst = random_flows(fabric, 300, seed)
    routes = route(fabric, src, dst, Routing.ECMP, seed=seed)
    by_flow = routes.explicit.tocsc()
    expected = valley_free_lengths(fabric, src, dst)
    lengths, dead, wrong_fraction = [], [], []
    for f in range(src.size):
        col = by_flow[:, f]
        links = col.indices[col.data > 0]
        lengths.append(follow(fabric, links, int(src[f]), int(dst[f])) if links.size else -1)
        dead.extend(links[~fabric.alive[links]].tolist())
        wrong_fraction.extend(col.data[(col.data != 0.0) & (col.data != 1.0)].tolist())
    assert np.array_equal(routes.connected, expected > 0)
    assert lengths == expected.tolist()
    assert dead == []
    assert wrong_fraction == []


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_ecmp_lengths_in_a_healthy_clos(name: str) -> None:
    fabric, lpp = HEALTHY[name]()
    src, dst = random_flows(fabric, 400, 3)
    routes = route(fabric, src, dst, Routing.ECMP, seed=3)
    per_flow = np.asarray(routes.explicit.sum(axis=0)).ravel()
    assert routes.connected.all()
    assert np.array_equal(per_flow, topology_lengths(fabric, lpp, src, dst))


# ---- spraying ----------------------------------------------------------------------------------
def hop_class_sums(fabric: Fabric, frac: np.ndarray) -> np.ndarray:
    """Sum of every flow's fractions per (link class, direction): shape (2 * classes, flows)."""
    key = 2 * fabric.directed_class + np.arange(fabric.links) % 2
    out = np.zeros((int(key.max()) + 1, frac.shape[1]))
    np.add.at(out, key, frac)
    return out


@pytest.mark.parametrize("name", sorted(ANY))
def test_spray_fractions_sum_to_one_on_every_hop_class(name: str) -> None:
    fabric = ANY[name]()
    src, dst = random_flows(fabric, 300, 11)
    routes = route(fabric, src, dst, Routing.SPRAY)
    frac = dense(routes)
    sums = hop_class_sums(fabric, frac)
    used = sums > FRAC_TOL
    expected = valley_free_lengths(fabric, src, dst)
    assert np.array_equal(routes.connected, expected > 0)
    # every hop class a flow uses carries all of it; the number of classes is its path length
    np.testing.assert_allclose(sums[used], 1.0, rtol=0, atol=1e-12)
    assert np.array_equal(used.sum(axis=0), np.where(expected > 0, expected, 0))
    assert not (frac[~fabric.alive] > 0).any()


@pytest.mark.parametrize("name", sorted(ANY))
def test_spray_conserves_flow_at_every_switch(name: str) -> None:
    fabric = ANY[name]()
    src, dst = random_flows(fabric, 200, 5)
    frac = dense(route(fabric, src, dst, Routing.SPRAY))
    net = np.zeros((fabric.nodes, src.size))
    np.add.at(net, fabric.src, frac)
    np.subtract.at(net, fabric.dst, frac)
    switches = net[fabric.tier_offsets[1] :]
    np.testing.assert_allclose(switches, 0.0, atol=1e-12)


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_spray_splits_evenly_over_source_leaf_uplinks(name: str) -> None:
    fabric, _ = HEALTHY[name]()
    src, dst = random_flows(fabric, 300, 2)
    routes = route(fabric, src, dst, Routing.SPRAY)
    frac = dense(routes)
    s_leaf, d_leaf = fabric.leaf_of(src), fabric.leaf_of(dst)
    cross = np.flatnonzero(s_leaf != d_leaf)
    up = np.flatnonzero(fabric.link_class == 1)  # physical leaf-to-spine links
    got, want = [], []
    for f in cross:
        mine = up[fabric.lower[up] == s_leaf[f]]
        got.append(frac[2 * mine, f])
        want.append(np.full(mine.size, 1.0 / mine.size))
    assert cross.size > 0
    np.testing.assert_allclose(np.concatenate(got), np.concatenate(want), rtol=FRAC_TOL)


@pytest.mark.parametrize("name", ["3t-2pods", "3t-2pods-q2", "planned-256-3t"])
def test_spray_splits_evenly_over_spine_uplinks_across_pods(name: str) -> None:
    fabric, lpp = HEALTHY[name]()
    src, dst = random_flows(fabric, 300, 4)
    frac = dense(route(fabric, src, dst, Routing.SPRAY))
    lengths = topology_lengths(fabric, lpp, src, dst)
    cross = np.flatnonzero(lengths == 6)
    core_up = np.flatnonzero(fabric.link_class == 2)
    # each spine of the source pod takes an equal share and splits it evenly over its core links
    s_leaf = fabric.leaf_of(src)
    got, want = [], []
    for f in cross:
        spines = np.unique(fabric.upper[(fabric.link_class == 1) & (fabric.lower == s_leaf[f])])
        mine = core_up[np.isin(fabric.lower[core_up], spines)]
        got.append(frac[2 * mine, f])
        want.append(np.full(mine.size, 1.0 / mine.size))
    assert cross.size > 0
    np.testing.assert_allclose(np.concatenate(got), np.concatenate(want), rtol=FRAC_TOL)


# ---- seeds -------------------------------------------------------------------------------------
@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("name", ["3t-2pods", "planned-256-2t", "planned-256-3t-failed"])
def test_same_seed_gives_identical_routes(name: str, routing: Routing) -> None:
    fabric = ANY[name]()
    src, dst = random_flows(fabric, 500, 9)
    a = route(fabric, src, dst, routing, seed=42)
    b = route(fabric, src, dst, routing, seed=42)
    assert (a.explicit != b.explicit).nnz == 0
    assert a.explicit.shape == b.explicit.shape
    assert (a.patterns is None) == (b.patterns is None)
    assert a.patterns is None or (a.patterns != b.patterns).nnz == 0
    assert np.array_equal(a.flow_pattern, b.flow_pattern)
    assert np.array_equal(a.connected, b.connected)


@pytest.mark.parametrize("seeds", [(0, 1), (1, 2), (3, 1234567)])
@pytest.mark.parametrize("name", ["planned-256-2t", "planned-256-3t"])
def test_different_seed_changes_ecmp_assignment(name: str, seeds: tuple[int, int]) -> None:
    fabric = ANY[name]()
    src, dst = random_flows(fabric, 500, 9)
    a = route(fabric, src, dst, Routing.ECMP, seed=seeds[0])
    b = route(fabric, src, dst, Routing.ECMP, seed=seeds[1])
    changed = np.asarray((a.explicit != b.explicit).sum(axis=0)).ravel() > 0
    # most cross-leaf flows move; the NIC links (fixed) never do
    cross = fabric.leaf_of(src) != fabric.leaf_of(dst)
    assert changed[cross].mean() > 0.5
    assert not changed[~cross].any()


def test_flow_id_changes_the_ecmp_hash() -> None:
    fabric = ANY["planned-256-2t"]()
    src, dst = random_flows(fabric, 500, 9)
    a = route(fabric, src, dst, Routing.ECMP, seed=0)
    b = route(fabric, src, dst, Routing.ECMP, seed=0, flow_id=np.arange(500) + 1)
    assert (a.explicit != b.explicit).nnz > 0


# ---- failures ----------------------------------------------------------------------------------
def touching(fabric: Fabric, nodes: np.ndarray) -> np.ndarray:
    """Directed links with an end at any of these nodes."""
    return np.flatnonzero(np.isin(fabric.src, nodes) | np.isin(fabric.dst, nodes))


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("which", [0, -1])
@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_failed_spine_carries_nothing_and_flows_stay_connected(
    name: str, which: int, routing: Routing
) -> None:
    fabric, _ = HEALTHY[name]()
    off = fabric.tier_offsets
    spine = np.arange(off[2], off[3])[which]
    failed = fabric.with_failed_switches([int(spine)])
    src, dst = random_flows(failed, 400, 13)
    routes = route(failed, src, dst, routing, seed=5)
    frac = dense(routes)
    assert not failed.alive[touching(failed, np.array([spine]))].any()
    assert not (frac[touching(failed, np.array([spine]))] > 0).any()
    assert routes.connected.all()


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_without_spines_only_leaf_local_flows_connect(name: str, routing: Routing) -> None:
    fabric, _ = HEALTHY[name]()
    off = fabric.tier_offsets
    failed = fabric.with_failed_switches(range(off[2], off[3]))
    src, dst = random_flows(failed, 400, 17)
    routes = route(failed, src, dst, routing, seed=5)
    local = failed.leaf_of(src) == failed.leaf_of(dst)
    assert local.any()
    assert (~local).any()
    assert np.array_equal(routes.connected, local)
    assert np.asarray(routes.explicit[:, np.flatnonzero(~local)].sum()) == 0


@pytest.mark.parametrize("routing", list(Routing))
def test_some_cross_flows_cut_others_routed(routing: Routing) -> None:
    fabric = make_fabric(4, 4, 2)
    off = fabric.tier_offsets
    cut = (fabric.link_class == 1) & (fabric.lower == off[1])  # leaf 0 loses every uplink
    failed = fabric.with_failed_links(np.flatnonzero(cut))
    routes = route(failed, np.array([0, 4, 1, 8]), np.array([5, 9, 2, 0]), routing, seed=1)
    assert routes.connected.tolist() == [False, True, True, False]


@pytest.mark.parametrize("routing", list(Routing))
def test_route_with_every_cross_flow_cut(routing: Routing) -> None:
    fabric = make_fabric(4, 4, 2)
    failed = fabric.with_failed_switches(range(fabric.tier_offsets[2], fabric.tier_offsets[3]))
    routes = route(failed, np.array([0, 1]), np.array([4, 2]), routing)
    assert routes.connected.tolist() == [False, True]


@pytest.mark.parametrize("routing", list(Routing))
def test_failed_nic_disconnects_its_flows(routing: Routing) -> None:
    fabric = make_fabric(4, 4, 2).with_failed_links([3])
    routes = route(fabric, np.array([3, 0, 5]), np.array([9, 3, 10]), routing)
    assert routes.connected.tolist() == [False, False, True]


# ---- distances ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_leaf_distances_of_a_healthy_clos(name: str) -> None:
    fabric, lpp = HEALTHY[name]()
    off = fabric.tier_offsets
    leaves = np.arange(off[1], off[2])
    dist = leaf_distances(fabric, leaves).astype(np.int64)
    lpp = leaves_of_pods(fabric, lpp)
    pod = (leaves - off[1]) // lpp
    same_leaf = np.eye(leaves.size, dtype=bool)
    same_pod = pod[:, None] == pod[None, :]
    want = [np.where(same_leaf, 0, np.where(same_pod, 2, 4))]
    n_spine = off[3] - off[2]
    if fabric.tiers == 2:
        want.append(np.ones((n_spine, leaves.size), dtype=np.int64))
    else:
        spines = fabric.lower[fabric.link_class == 2]
        spine_pod = np.array(
            [
                pod[fabric.lower[(fabric.link_class == 1) & (fabric.upper == s)][0] - off[1]]
                for s in range(off[2], off[3])
            ]
        )
        assert np.isin(np.arange(off[2], off[3]), spines).all()
        want.append(np.where(spine_pod[:, None] == pod[None, :], 1, 3))
        want.append(np.full((off[4] - off[3], leaves.size), 2))
    assert np.array_equal(dist, np.vstack(want))


@pytest.mark.parametrize("name", sorted(ANY))
def test_leaf_distances_match_valley_free_search(name: str) -> None:
    fabric = ANY[name]()
    off = fabric.tier_offsets
    leaves = np.arange(off[1], off[2])
    dist = leaf_distances(fabric, leaves).astype(np.int64)[: leaves.size]
    # one GPU per leaf stands for its leaf in the reference search (NIC links add 2)
    rep = np.searchsorted(fabric.leaf_of(np.arange(fabric.gpus)), leaves)
    src, dst = np.repeat(rep, leaves.size), np.tile(rep, leaves.size)
    ref = valley_free_lengths(fabric, src, dst).reshape(leaves.size, leaves.size)
    ref = np.where(ref >= 0, ref - 2, int(UNREACHABLE))
    assert np.array_equal(dist, ref)


def test_leaf_distances_without_spines_are_unreachable() -> None:
    fabric = make_fabric(4, 4, 2)
    off = fabric.tier_offsets
    failed = fabric.with_failed_switches(range(off[2], off[3]))
    dist = leaf_distances(failed, np.arange(off[1], off[2]))[: off[2] - off[1]]
    want = np.where(np.eye(4, dtype=bool), 0, int(UNREACHABLE))
    assert np.array_equal(dist, want)
