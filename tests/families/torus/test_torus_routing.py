"""Tori in the simulator: wiring, dimension-order routing, ties, failures, bounds, strategies.

Every routing check compares the vectorised routes with an independent brute force written
here in plain Python: mixed-radix coordinates, ring distances and the DOR path enumeration.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cache
from types import SimpleNamespace
from typing import Any

import networkx as nx
import numpy as np
import pytest

from planner.errors import InputError
from planner.families.torus.fabric import torus_fabric, torus_links_per_plane
from planner.families.torus.routing import DIMENSION_ORDER
from planner.schema.verify import FailureSpec
from planner.sim import traffic_patterns
from planner.sim.bound import max_concurrent_flow
from planner.sim.fabric import Fabric, NodeKind
from planner.sim.flow import max_min_rates
from planner.sim.htsim import connection_matrix_text, topology_text
from planner.sim.phase_runs import run_traffic
from planner.sim.routes import Routes
from planner.sim.routing import Routing, route
from planner.sim.routing_strategies import (
    SHORTEST_PATH,
    UNREACHABLE,
    NextHops,
    RoutingStrategy,
    distances,
    leaf_distances,
    strategy_of,
)
from planner.sim.scenarios import named_scenario, single_switch_scenarios
from planner.sim.sim_tables import link_utilisation_rows
from planner.sim.simulate import bound_time_s
from tests.sim.test_bound import make_fabric

#: Fractions that should be exact up to floating-point sums.
FRAC_TOL = 1e-12
#: Agreement between throughputs computed two ways (simulation, LP, closed form).
REL_TOL = 1e-6
LINK_GBPS = 100.0
#: Injection speed well above what a torus switch can forward, so the fabric binds.
HOST_GBPS = 10_000.0
DEMAND_GBIT = 1.0

#: Tori whose every pair is routed and compared with the brute force.
SMALL_TORI = [(3, 3), (4, 4), (4, 3), (2, 3), (5,), (4,), (2, 2, 2), (3, 3, 3), (4, 2, 3), (1, 4)]


# ---- independent reference ---------------------------------------------------------------------
def coords_of(r: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    """Mixed-radix digits of r, dimension 0 fastest."""
    out = []
    for k in dims:
        out.append(r % k)
        r //= k
    return tuple(out)


def index_of(c: tuple[int, ...], dims: tuple[int, ...]) -> int:
    """Switch index of coordinates c."""
    r, stride = 0, 1
    for x, k in zip(c, dims, strict=True):
        r += x * stride
        stride *= k
    return r


def ring_distance(a: int, b: int, k: int) -> int:
    """Hops between positions a and b of a ring of k."""
    return min((a - b) % k, (b - a) % k)


def expected_links(dims: tuple[int, ...], q: int) -> int:
    """The closed form: q * sum_d (N if k >= 3, N / 2 if k == 2, 0 if k == 1)."""
    n = math.prod(dims)
    return q * sum(n if k >= 3 else n // 2 if k == 2 else 0 for k in dims)


@cache
def links_between(fabric_key: tuple[tuple[int, ...], int]) -> dict[tuple[int, int], list[int]]:
    """Physical torus link ids between two switch indices (either order)."""
    dims, q = fabric_key
    fabric = torus(dims, q)
    out: dict[tuple[int, int], list[int]] = {}
    for i in np.flatnonzero(fabric.link_class == 1):
        a, b = int(fabric.lower[i]) - fabric.gpus, int(fabric.upper[i]) - fabric.gpus
        out.setdefault((a, b), []).append(int(i))
        out.setdefault((b, a), []).append(int(i))
    return out


def dor_next(
    dims: tuple[int, ...], links: dict[tuple[int, int], list[int]], v: int, t: int
) -> list[tuple[int, int]]:
    """DOR next hops of switch v towards t: (physical link, next switch), parallels apart."""
    cv, ct = coords_of(v, dims), coords_of(t, dims)
    d = next(i for i in range(len(dims)) if cv[i] != ct[i])
    k = dims[d]
    up, down = (ct[d] - cv[d]) % k, (cv[d] - ct[d]) % k
    steps = {+1} if up < down else {-1} if down < up else {+1, -1}
    out = []
    for w in {index_of(cv[:d] + ((cv[d] + s) % k,) + cv[d + 1 :], dims) for s in steps}:
        out += [(i, w) for i in links[v, w]]
    return out


def dor_paths(fabric: Fabric, s: int, t: int) -> set[tuple[int, ...]]:
    """Every DOR path from switch s to switch t as a tuple of physical link ids."""
    links = links_between((fabric.dims, parallel_of(fabric)))
    if s == t:
        return {()}
    return {
        (i, *rest)
        for i, w in dor_next(fabric.dims, links, s, t)
        for rest in dor_paths(fabric, w, t)
    }


def dor_spray(fabric: Fabric, s: int, t: int) -> dict[int, float]:
    """Fraction of a sprayed flow on every physical torus link: even splits hop by hop."""
    links = links_between((fabric.dims, parallel_of(fabric)))
    out: dict[int, float] = {}
    mass = {s: 1.0}
    while mass:
        nxt: dict[int, float] = {}
        for v, m in mass.items():
            if v == t:
                continue
            hops = dor_next(fabric.dims, links, v, t)
            for i, w in hops:
                out[i] = out.get(i, 0.0) + m / len(hops)
                nxt[w] = nxt.get(w, 0.0) + m / len(hops)
        mass = {v: m for v, m in nxt.items() if v != t}
    return out


# ---- fabrics and flows ----------------------------------------------------------------------------
@cache
def torus(dims: tuple[int, ...], q: int = 1, gpus_per_switch: int = 1) -> Fabric:
    """A torus with every switch holding ``gpus_per_switch`` GPUs."""
    n = math.prod(dims)
    return torus_fabric(
        n * gpus_per_switch, 1, dims, gpus_per_switch, q, LINK_GBPS, host_speed_gbps=HOST_GBPS
    )


def parallel_of(fabric: Fabric) -> int:
    """Parallel links per torus neighbour pair of a fabric built by ``torus``."""
    links = int((fabric.link_class == 1).sum())
    return links // max(1, expected_links(fabric.dims, 1))


def all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of distinct GPUs."""
    s, t = np.divmod(np.arange(n * n), n)
    keep = s != t
    return s[keep], t[keep]


def dense(routes: Routes) -> np.ndarray:
    """links x flows of fractions, explicit plus patterns."""
    out = routes.explicit.toarray()
    if routes.patterns is not None:
        pats = routes.patterns.toarray()
        has = routes.flow_pattern >= 0
        out[:, has] += pats[:, routes.flow_pattern[has]]
        if routes.flow_pattern_down is not None:  # patterns held in halves: add the second
            has = routes.flow_pattern_down >= 0
            out[:, has] += pats[:, routes.flow_pattern_down[has]]
    return out


def switch_path(fabric: Fabric, frac: np.ndarray, s: int, t: int) -> list[int]:
    """The physical torus links of a single-path flow, in order from switch s to t."""
    used = np.flatnonzero(frac > 0)
    src, dst = fabric.src[used], fabric.dst[used]
    path, at = [], fabric.gpus + s
    while at != fabric.gpus + t:
        hit = np.flatnonzero((src == at) & (dst >= fabric.gpus))
        assert hit.size == 1, f"flow {s}->{t} leaves switch {at} on {hit.size} links"
        path.append(int(used[hit[0]]) // 2)
        at = int(dst[hit[0]])
        assert len(path) <= fabric.switches
    return path


# ---- wiring ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("q", [1, 2, 3])
@pytest.mark.parametrize(
    "dims", [(4, 4), (3, 5), (2, 3), (2, 2, 2), (4, 1, 3), (5,), (2,), (1, 1), (8, 8, 8)]
)
def test_torus_link_count_matches_closed_form(dims: tuple[int, ...], q: int) -> None:
    fabric = torus(dims, q)
    assert int((fabric.link_class == 1).sum()) == expected_links(dims, q)
    assert torus_links_per_plane(dims, q) == expected_links(dims, q)
    assert int((fabric.link_class == 0).sum()) == fabric.gpus


@pytest.mark.parametrize("q", [1, 2])
@pytest.mark.parametrize("dims", [(4, 4), (3, 5), (3, 3, 3), (6,), (2, 3), (2, 2, 4)])
def test_every_switch_has_two_links_per_dimension_and_parallel(
    dims: tuple[int, ...], q: int
) -> None:
    """Degree 2 q per dimension of k >= 3 (2 d q on a k >= 3 cube), q per dimension of k == 2."""
    fabric = torus(dims, q)
    ring = fabric.link_class == 1
    ends = np.concatenate([fabric.lower[ring], fabric.upper[ring]]) - fabric.gpus
    degree = np.bincount(ends, minlength=fabric.switches)
    assert (degree == q * sum(2 if k >= 3 else 1 for k in dims if k >= 2)).all()


@pytest.mark.parametrize("dims", [(4, 4), (3, 2, 5)])
def test_torus_links_join_ring_neighbours(dims: tuple[int, ...]) -> None:
    """Each torus link joins two switches that differ by one step in exactly one coordinate."""
    fabric = torus(dims)
    for i in np.flatnonzero(fabric.link_class == 1):
        a = coords_of(int(fabric.lower[i]) - fabric.gpus, dims)
        b = coords_of(int(fabric.upper[i]) - fabric.gpus, dims)
        differ = [d for d in range(len(dims)) if a[d] != b[d]]
        assert len(differ) == 1
        assert b[differ[0]] == (a[differ[0]] + 1) % dims[differ[0]]


@pytest.mark.parametrize("dims", [(4, 3), (2, 3, 2)])
def test_coords_are_mixed_radix_dimension_zero_fastest(dims: tuple[int, ...]) -> None:
    fabric = torus(dims)
    assert [tuple(c) for c in fabric.coords.tolist()] == [
        coords_of(r, dims) for r in range(fabric.switches)
    ]


@pytest.mark.parametrize(("gpus", "per_switch"), [(16, 1), (32, 2), (30, 4)])
def test_gpus_hang_off_their_switch_at_host_speed(gpus: int, per_switch: int) -> None:
    fabric = torus_fabric(gpus, 2, (4, 4), per_switch, 1, LINK_GBPS, host_speed_gbps=400.0)
    g = np.arange(gpus)
    assert (fabric.leaf_of(g) == gpus + g // per_switch).all()
    cap = fabric.capacity_gbps
    assert (cap[: 2 * gpus] == 400.0).all()
    assert (cap[2 * gpus :] == LINK_GBPS).all()
    assert fabric.nic_speed_gbps == 400.0


def test_switchless_torus_of_chips_uses_routers() -> None:
    fabric = torus_fabric(
        64, 1, (4, 4, 4), 1, 1, 450.0, 1800.0, ("chip", "router"), switch_kind=NodeKind.ROUTER
    )
    kinds = fabric.node_kind
    assert (kinds[:64] == NodeKind.GPU).all()
    assert (kinds[64:] == NodeKind.ROUTER).all()
    assert fabric.node_name(64 + 5) == "router5"
    assert fabric.class_name(1) == "router-router"
    g = fabric.to_networkx()
    assert g.nodes[64 + 5]["coords"] == coords_of(5, (4, 4, 4))
    assert g.nodes[64 + 5]["kind"] is NodeKind.ROUTER


@pytest.mark.parametrize(
    ("dims", "per_switch", "gpus"), [((), 1, 4), ((0, 3), 1, 4), ((2, 2), 1, 5), ((3,), 0, 3)]
)
def test_torus_builder_rejects_bad_sizes(dims: tuple[int, ...], per_switch: int, gpus: int) -> None:
    with pytest.raises(ValueError, match="torus dims|fit|>= 1"):
        torus_fabric(gpus, 1, dims, per_switch, 1, LINK_GBPS)


def test_clos_node_kinds_and_class_names_are_unchanged() -> None:
    fabric = make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2)
    assert fabric.strategy.name == "up_down"
    assert (fabric.node_kind[: fabric.gpus] == NodeKind.GPU).all()
    assert (fabric.node_kind[fabric.gpus :] == NodeKind.SWITCH).all()
    assert [fabric.class_name(c) for c in range(fabric.link_classes)] == [
        "gpu-leaf",
        "leaf-spine",
        "spine-core",
    ]
    assert (fabric.capacity_gbps == fabric.link_speed_gbps).all()


# ---- dimension-order routing --------------------------------------------------------------------
@pytest.mark.parametrize("q", [1, 2])
@pytest.mark.parametrize("dims", SMALL_TORI)
def test_dor_distances_are_sums_of_ring_distances(dims: tuple[int, ...], q: int) -> None:
    fabric = torus(dims, q)
    dist = distances(fabric, fabric.gpus + np.arange(fabric.switches))
    expect = [
        [
            sum(
                ring_distance(a, b, k)
                for a, b, k in zip(coords_of(v, dims), coords_of(t, dims), dims, strict=True)
            )
            for t in range(fabric.switches)
        ]
        for v in range(fabric.switches)
    ]
    assert dist.tolist() == expect


@pytest.mark.parametrize("q", [1, 2])
@pytest.mark.parametrize("dims", SMALL_TORI)
def test_dor_ecmp_paths_are_dor_paths_of_ring_distance_length(
    dims: tuple[int, ...], q: int
) -> None:
    """Every ECMP path is one of the brute-force DOR paths: shortest, dimension by dimension."""
    fabric = torus(dims, q)
    s, t = all_pairs(fabric.gpus)
    frac = dense(route(fabric, s, t, Routing.ECMP, seed=7))
    for f, (a, b) in enumerate(zip(s.tolist(), t.tolist(), strict=True)):
        path = switch_path(fabric, frac[:, f], a, b)
        ca, cb = coords_of(a, dims), coords_of(b, dims)
        assert len(path) == sum(
            ring_distance(x, y, k) for x, y, k in zip(ca, cb, dims, strict=True)
        )
        assert tuple(path) in dor_paths(fabric, a, b)


@pytest.mark.parametrize("dims", [(4, 4), (3, 3, 3), (4, 2, 3)])
def test_dor_paths_visit_dimensions_in_order(dims: tuple[int, ...]) -> None:
    fabric = torus(dims)
    s, t = all_pairs(fabric.gpus)
    frac = dense(route(fabric, s, t, Routing.ECMP, seed=1))
    for f, (a, b) in enumerate(zip(s.tolist(), t.tolist(), strict=True)):
        hops = []
        for i in switch_path(fabric, frac[:, f], a, b):
            lo = coords_of(int(fabric.lower[i]) - fabric.gpus, dims)
            up = coords_of(int(fabric.upper[i]) - fabric.gpus, dims)
            hops.append(next(d for d in range(len(dims)) if lo[d] != up[d]))
        assert hops == sorted(hops)
        assert len(set(hops)) == sum(
            x != y for x, y in zip(coords_of(a, dims), coords_of(b, dims), strict=True)
        )


@pytest.mark.parametrize("q", [1, 2])
@pytest.mark.parametrize("dims", SMALL_TORI)
def test_dor_spray_splits_evenly_hop_by_hop(dims: tuple[int, ...], q: int) -> None:
    """Spray fractions equal the brute-force even split over DOR next hops, for every pair."""
    fabric = torus(dims, q)
    s, t = all_pairs(fabric.gpus)
    frac = dense(route(fabric, s, t, Routing.SPRAY))
    physical = frac[0::2] + frac[1::2]
    for f, (a, b) in enumerate(zip(s.tolist(), t.tolist(), strict=True)):
        expect = np.zeros(fabric.physical_links)
        for i, x in dor_spray(fabric, a, b).items():
            expect[i] = x
        expect[[a, b]] = 1.0  # the two NIC links
        np.testing.assert_allclose(physical[:, f], expect, atol=FRAC_TOL)


def test_ring_of_four_spray_splits_a_tie_and_ecmp_picks_one_side() -> None:
    """0 -> 2 on a ring of 4 is 2 hops both ways: spray halves it, ECMP takes one side per flow."""
    fabric = torus((4,))
    flows = 64
    src, dst = np.zeros(flows, dtype=np.int64), np.full(flows, 2)
    first_hops = np.flatnonzero((fabric.src == fabric.gpus) & (fabric.directed_class == 1))
    assert first_hops.size == 2
    spray = dense(route(fabric, src, dst, Routing.SPRAY))
    np.testing.assert_allclose(spray[first_hops], 0.5, atol=FRAC_TOL)
    ecmp = dense(route(fabric, src, dst, Routing.ECMP, seed=3))[first_hops]
    assert set(np.unique(ecmp)) == {0.0, 1.0}
    assert (ecmp.sum(axis=0) == 1.0).all()
    assert 0 < ecmp[0].sum() < flows  # both sides are used by some flows


def test_ring_of_five_has_no_tie() -> None:
    fabric = torus((5,))
    frac = dense(route(fabric, np.array([0]), np.array([2]), Routing.SPRAY))[:, 0]
    ring = np.flatnonzero(fabric.directed_class == 1)
    assert sorted(frac[ring][frac[ring] > 0].tolist()) == [1.0, 1.0]


@pytest.mark.parametrize("q", [2, 3])
def test_ecmp_hashes_over_parallel_links(q: int) -> None:
    """q parallel links to the next switch are q next hops: many flows use every one."""
    fabric = torus((3,), q)
    flows = 200
    routes = route(
        fabric, np.zeros(flows, dtype=np.int64), np.ones(flows, dtype=np.int64), Routing.ECMP
    )
    load = routes.flows_on()
    parallel = [
        2 * i
        for i in np.flatnonzero(fabric.link_class == 1)
        if fabric.lower[i] == fabric.gpus and fabric.upper[i] == fabric.gpus + 1
    ]
    assert len(parallel) == q
    assert (load[parallel] > 0).all()
    assert load[parallel].sum() == flows


# ---- failures ----------------------------------------------------------------------------------
FAILURE_CASES = [
    ((3, 3), 1, 1, 0),
    ((5, 3), 1, 2, 1),
    ((4, 4), 1, 1, 2),
    ((4, 4), 1, 3, 3),
    ((3, 3, 3), 1, 2, 4),
    ((4, 3), 2, 1, 5),
    ((4, 3), 2, 4, 6),
]


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize(("dims", "q", "failures", "seed"), FAILURE_CASES)
def test_failed_links_disconnect_exactly_the_flows_without_an_alive_dor_path(
    dims: tuple[int, ...], q: int, failures: int, seed: int, routing: Routing
) -> None:
    fabric = torus(dims, q)
    ring = np.flatnonzero(fabric.link_class == 1)
    down = np.random.default_rng(seed).choice(ring, failures, replace=False)
    failed = fabric.with_failed_links(down)
    s, t = all_pairs(fabric.gpus)
    routes = route(failed, s, t, routing, seed=seed)
    dead = set(down.tolist())
    expect = [
        any(not dead.intersection(p) for p in dor_paths(fabric, a, b))
        for a, b in zip(s.tolist(), t.tolist(), strict=True)
    ]
    assert routes.connected.tolist() == expect
    assert routes.flows_on()[~failed.alive].sum() == 0.0
    if q == 1 and failures == 1 and all(k % 2 for k in dims):
        # odd rings: one DOR path per pair, so a flow is cut exactly when its path uses the link
        through = [
            down[0] in next(iter(dor_paths(fabric, a, b)))
            for a, b in zip(s.tolist(), t.tolist(), strict=True)
        ]
        assert (~routes.connected).tolist() == through
        assert any(through)


@pytest.mark.parametrize("routing", list(Routing))
def test_one_failed_parallel_link_cuts_nothing(routing: Routing) -> None:
    fabric = torus((3, 3), 2)
    failed = fabric.with_failed_links([int(np.flatnonzero(fabric.link_class == 1)[0])])
    s, t = all_pairs(fabric.gpus)
    assert route(failed, s, t, routing).connected.all()


@pytest.mark.parametrize("routing", list(Routing))
def test_failed_tie_side_moves_the_flow_to_the_other_side(routing: Routing) -> None:
    """0 -> 2 on a ring of 4 with the 0-1 link down: everything goes 0 -> 3 -> 2."""
    fabric = torus((4,))
    via_1 = next(i for i in range(4, 8) if {fabric.lower[i], fabric.upper[i]} == {4, 5})
    failed = fabric.with_failed_links([via_1])
    routes = route(failed, np.array([0]), np.array([2]), routing)
    frac = dense(routes)[:, 0]
    assert routes.connected.all()
    used = {(int(failed.src[e]) - 4, int(failed.dst[e]) - 4) for e in np.flatnonzero(frac > 0)}
    assert {(0, 3), (3, 2)} <= used
    assert (0, 1) not in used


# ---- throughput against bounds ---------------------------------------------------------------
def uniform_lambda(fabric: Fabric, routing: Routing) -> float:
    """Max-min rate per Gbit of demand of uniform all-to-all (the slowest flow decides)."""
    s, t = all_pairs(fabric.gpus)
    routes = route(fabric, s, t, routing, seed=11)
    return float(max_min_rates(routes, fabric.capacity_gbps).min()) / DEMAND_GBIT


def half_cut_bound(fabric: Fabric) -> float:
    """lambda <= capacity across the cut / demand across it, halves split along dimension 0.

    Switches with coordinate 0 below ceil(k0 / 2) form side A. Each of the N / k0 rings of
    dimension 0 crosses the cut twice (k0 >= 3) with q links each, so each direction has
    2 q N / k0 links; uniform all-to-all sends |A| |B| flows of DEMAND_GBIT across it, |A| and |B|
    counted in GPUs. For a k-ary d-cube with k even: 2 q k^(d-1) links against (N g / 2)^2 flows,
    lambda <= 8 q B / (k^(d+1) g^2 D).
    """
    k0 = fabric.dims[0]
    assert k0 >= 3, "a ring of 2 crosses the cut once"
    side_a = fabric.coords[:, 0] < (k0 + 1) // 2
    g = fabric.gpus // fabric.switches
    a, b = int(side_a.sum()) * g, int((~side_a).sum()) * g
    links = 2 * parallel_of(fabric) * fabric.switches // k0
    return links * LINK_GBPS / (a * b * DEMAND_GBIT)


def closed_form_bisection(k: int, d: int, q: int, g: int) -> float:
    """8 q B / (k^(d+1) g^2 D) for a k-ary d-cube, k even (see ``half_cut_bound``)."""
    return 8 * q * LINK_GBPS / (k ** (d + 1) * g**2 * DEMAND_GBIT)


@pytest.mark.parametrize(
    ("dims", "q", "g"),
    [((4, 4), 1, 1), ((4, 4), 2, 1), ((6, 6), 1, 1), ((4, 4), 1, 2), ((4, 4, 4), 1, 1)],
)
def test_even_torus_all_to_all_spray_meets_bisection_and_lp(
    dims: tuple[int, ...], q: int, g: int
) -> None:
    """k even: DOR spraying loads every torus link equally, so it reaches the bisection bound,
    and the LP (any routing) can do no better."""
    fabric = torus(dims, q, g)
    s, t = all_pairs(fabric.gpus)
    bound = max_concurrent_flow(fabric, s, t, DEMAND_GBIT)
    spray = uniform_lambda(fabric, Routing.SPRAY)
    bisection = closed_form_bisection(dims[0], len(dims), q, g)
    assert half_cut_bound(fabric) == pytest.approx(bisection, rel=REL_TOL)
    assert bound.binding == "fabric"
    assert bound.lambda_fabric_per_s == pytest.approx(bisection, rel=REL_TOL)
    assert spray == pytest.approx(bisection, rel=REL_TOL)


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize(
    ("dims", "q", "g"), [((3, 3), 1, 1), ((5, 3), 1, 1), ((4, 4), 1, 1), ((4, 2), 2, 2)]
)
def test_all_to_all_never_beats_the_lp_or_the_cut(
    dims: tuple[int, ...], q: int, g: int, routing: Routing
) -> None:
    fabric = torus(dims, q, g)
    s, t = all_pairs(fabric.gpus)
    lam_lp = max_concurrent_flow(fabric, s, t, DEMAND_GBIT).lambda_per_s
    assert lam_lp is not None
    assert uniform_lambda(fabric, routing) <= lam_lp * (1 + REL_TOL)
    assert lam_lp <= half_cut_bound(fabric) * (1 + REL_TOL)


@pytest.mark.parametrize("routing", list(Routing))
def test_all_to_all_after_a_failure_stays_below_the_lp(routing: Routing) -> None:
    fabric = torus((4, 4)).with_failed_links([20, 33])
    s, t = all_pairs(fabric.gpus)
    routes = route(fabric, s, t, routing)
    keep = routes.connected
    lam_lp = max_concurrent_flow(fabric, s[keep], t[keep], DEMAND_GBIT).lambda_per_s
    assert lam_lp is not None
    rates = max_min_rates(routes, fabric.capacity_gbps)[keep]
    assert rates.min() <= lam_lp * (1 + REL_TOL)


def test_nic_bound_uses_the_host_speed() -> None:
    fabric = torus_fabric(16, 1, (4, 4), 1, 1, LINK_GBPS, host_speed_gbps=50.0)
    s, t = all_pairs(16)
    bound = max_concurrent_flow(fabric, s, t, DEMAND_GBIT)
    assert bound.binding == "nic"
    assert bound.lambda_nic_per_s == pytest.approx(50.0 / 15, rel=REL_TOL)


# ---- strategies ---------------------------------------------------------------------------------
def switch_distances_nx(fabric: Fabric) -> np.ndarray:
    """Hop distance between switches over alive switch links, by networkx."""
    g = fabric.to_networkx()
    sw = g.subgraph(range(fabric.first_switch, fabric.nodes))
    out = np.full((fabric.switches, fabric.switches), int(UNREACHABLE))
    for a, lengths in nx.all_pairs_shortest_path_length(sw):
        for b, d in lengths.items():
            out[a - fabric.first_switch, b - fabric.first_switch] = d
    return out


SHORTEST_CASES: dict[str, Any] = {
    "torus-4x4": lambda: torus((4, 4)),
    "torus-3x3x3-q2": lambda: torus((3, 3, 3), 2),
    "torus-5x3-failed": lambda: torus((5, 3)).with_failed_links([15, 16, 22, 27]),
    "torus-4-cut": lambda: torus((4,)).with_failed_links([4, 6]),
    "clos-2t": lambda: make_fabric(4, 4, 2),
    "clos-3t-failed": lambda: (
        make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2)
        .with_failed_links([17, 25])
        .with_failed_switches([24])
    ),
}


@pytest.mark.parametrize("name", list(SHORTEST_CASES))
def test_shortest_path_distances_match_networkx(name: str) -> None:
    fabric = replace(SHORTEST_CASES[name](), strategy=SHORTEST_PATH)
    dist = distances(fabric, np.arange(fabric.first_switch, fabric.nodes))
    assert dist.tolist() == switch_distances_nx(fabric).tolist()


@pytest.mark.parametrize("routing", list(Routing))
def test_shortest_path_routes_around_a_failure_that_cuts_dor(routing: Routing) -> None:
    """With 0-1 down on a 3x3 torus, DOR cannot reach (1, 0) from (0, 0); minimal routing can."""
    fabric = torus((3, 3))
    link = next(i for i in range(9, 27) if {fabric.lower[i], fabric.upper[i]} == {9, 10})
    failed = fabric.with_failed_links([link])
    # (0,0) -> (1,0): DOR must step +1 in dimension 0, the only minimal arc, and it is down.
    assert not route(failed, np.array([0]), np.array([1]), routing).connected[0]
    minimal = replace(failed, strategy=SHORTEST_PATH)
    routes = route(minimal, np.array([0]), np.array([1]), routing)
    assert routes.connected[0]
    # NICs + 2 hops the long way round dimension 0: 0 -> 2 -> 1
    assert dense(routes)[:, 0].sum() == pytest.approx(2 + 2, abs=FRAC_TOL)


@pytest.mark.parametrize("name", ["clos-2t", "clos-3t"])
def test_shortest_path_equals_up_down_on_a_healthy_clos(name: str) -> None:
    fabric = (
        make_fabric(4, 4, 2)
        if name == "clos-2t"
        else make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2)
    )
    leaves = np.arange(fabric.tier_offsets[1], fabric.tier_offsets[2])
    up_down = leaf_distances(fabric, leaves)
    assert (distances(fabric, leaves) == up_down).all()
    assert (distances(replace(fabric, strategy=SHORTEST_PATH), leaves) == up_down).all()


def test_dimension_order_needs_torus_dims() -> None:
    fabric = replace(make_fabric(4, 4, 2), strategy=DIMENSION_ORDER)
    with pytest.raises(ValueError, match="torus dims"):
        strategy_of(fabric)(fabric, np.array([fabric.first_switch]))


def test_a_strategy_the_plane_carries_is_used_by_route() -> None:
    """A strategy whose rule forbids every link leaves the cross flows cut off (no registry)."""

    def nowhere(fabric: Fabric, leaves: np.ndarray) -> NextHops:
        hops = SHORTEST_PATH(fabric, leaves)
        return NextHops(hops.dist, lambda links, dest: np.zeros(links.size, dtype=bool))

    fabric = replace(torus((3,)), strategy=RoutingStrategy("nowhere", nowhere))
    for routing in Routing:
        # a rule that forbids every next hop strands the walk: reported, not looped forever
        with pytest.raises(ValueError, match="'nowhere' gives no next hop"):
            route(fabric, np.array([0]), np.array([1]), routing)


def test_a_copy_of_a_strategy_routes_the_same() -> None:
    copy = RoutingStrategy("dor_copy", DIMENSION_ORDER.next_hops)
    fabric = torus((4, 3), 2)
    s, t = all_pairs(fabric.gpus)
    for routing in Routing:
        a = dense(route(fabric, s, t, routing, seed=5))
        b = dense(route(replace(fabric, strategy=copy), s, t, routing, seed=5))
        assert (a == b).all()


# ---- the rest of the simulator on a torus ----------------------------------------------------
def test_named_switch_and_link_failures_on_a_torus() -> None:
    fabric = torus((4, 4), 2)
    spec = FailureSpec(switches=["switch5"], links=["switch0-switch1"])
    sc = named_scenario(fabric, spec)
    node = fabric.gpus + 5
    touching = np.flatnonzero((fabric.lower == node) | (fabric.upper == node))
    between = [
        i
        for i in range(fabric.physical_links)
        if {int(fabric.lower[i]), int(fabric.upper[i])} == {fabric.gpus, fabric.gpus + 1}
    ]
    assert set(sc.failed_links.tolist()) == set(touching.tolist()) | {between[0]}
    assert touching.size == 1 + 2 * 2 * 2  # its GPU and 2 q links in each of 2 dimensions


@pytest.mark.parametrize("name", ["leaf3", "switch16", "switch0-switch5"])
def test_bad_torus_failure_names_are_input_errors(name: str) -> None:
    fabric = torus((4, 4))
    spec = FailureSpec(links=[name]) if "-" in name else FailureSpec(switches=[name])
    with pytest.raises(InputError, match="verify.failures"):
        named_scenario(fabric, spec)


def test_single_switch_scenario_on_a_torus() -> None:
    fabric = torus_fabric(32, 2, (4, 4), 2, 1, LINK_GBPS)
    design: Any = SimpleNamespace(requirements=SimpleNamespace(protected_tiers=(1, 2)))
    (sc,) = single_switch_scenarios(fabric, design)
    assert sc.name == "switch0 down"
    assert sc.single_switch_tier == 1
    assert sc.failed_links.size == 2 + 4  # two GPUs and four torus neighbours


def test_simulated_torus_phase_is_no_faster_than_the_bound() -> None:
    fabric = torus((4, 4), 1, 2)
    traffic = traffic_patterns.uniform_all_to_all(fabric.gpus, 2**20)
    bound_s = bound_time_s(fabric, traffic, 1_000_000)
    assert bound_s is not None
    for routing in Routing:
        total, times, cut, util, exact = run_traffic(
            fabric, traffic, routing, 0, with_utilisation=True
        )
        assert cut == 0
        assert total >= bound_s * (1 - REL_TOL)
        assert util is not None
        rows = link_utilisation_rows(fabric, SimpleNamespace(label="a2a"), routing, util)  # type: ignore[arg-type]
        assert {r["tier"] for r in rows} == {"gpu-switch", "switch-switch"}
        assert max(r["max_utilisation"] for r in rows) <= 1 + REL_TOL


def test_failed_torus_scenario_cuts_flows_in_a_one_plane_run() -> None:
    fabric = torus((3, 3))
    traffic = traffic_patterns.point_to_point(np.array([0]), np.array([1]), 2**20)
    link = next(i for i in range(9, 27) if {fabric.lower[i], fabric.upper[i]} == {9, 10})
    sc = named_scenario(fabric, FailureSpec(links=["switch0-switch1"]))
    assert sc.failed_links.tolist() == [link]
    total, _, cut, _, _ = run_traffic(fabric, traffic, Routing.SPRAY, 0, sc)
    assert cut == 1
    assert math.isinf(total)


def test_htsim_refuses_a_torus_topology_but_writes_its_flows() -> None:
    fabric = torus((4, 4))
    with pytest.raises(ValueError, match="4x4 torus is routed by 'dimension_order'"):
        topology_text(fabric)
    text = connection_matrix_text(fabric, [0, 1], [5, 9], 1000)
    assert text.splitlines()[:2] == ["Nodes 16", "Connections 2"]
