"""Max-min fair rates and completion times: the simulator's acceptance checks."""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import numpy as np
import pytest

from planner.sim import collectives, gpu_groups, traffic, traffic_patterns
from planner.sim.bound import max_concurrent_flow
from planner.sim.fabric import Fabric
from planner.sim.flow import completion_times, max_min_rates
from planner.sim.routing import Routing, route
from tests.sim.test_bound import make_fabric, shift, switch_graph
from tests.sim.test_routing import dense, planned

#: Relative agreement required for closed-form rates and times.
REL_TOL = 1e-6
#: Size of one GPU's traffic in the phase tests.
BYTES = 64e6


def ideal_s(fabric: Fabric, size_bytes: float) -> float:
    """Time for one GPU to send ``size_bytes`` over its NIC link at full speed."""
    return size_bytes * 8.0 / (fabric.link_speed_gbps * 1e9)


def leaf_ratio(fabric: Fabric) -> float:
    """Down:up ratio of the leaves (all leaves of these fabrics are alike)."""
    first = fabric.tier_offsets[1]
    down = np.bincount(fabric.upper[fabric.link_class == 0] - first)
    up = np.bincount(fabric.lower[fabric.link_class == 1] - first)
    assert (down == down[0]).all()
    assert (up == up[0]).all()
    return float(down[0] / up[0])


# ---- non-blocking Clos: spraying reaches the ideal ---------------------------------------------
NON_BLOCKING: dict[str, Callable[[], Fabric]] = {
    "planned-256-2t": lambda: planned(256, 2)[0],
    "planned-128-2t": lambda: planned(128, 2)[0],
    "planned-256-3t": lambda: planned(256, 3)[0],
    "planned-512-3t": lambda: planned(512, 3)[0],
}
PATTERNS: dict[str, Callable[[int], traffic.Traffic]] = {
    "uniform-a2a": lambda g: traffic_patterns.uniform_all_to_all(g, BYTES),
    "perm-0": lambda g: traffic_patterns.random_permutation(g, BYTES, 0),
    "perm-1": lambda g: traffic_patterns.random_permutation(g, BYTES, 1),
    "perm-2": lambda g: traffic_patterns.random_permutation(g, BYTES, 2),
}


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
@pytest.mark.parametrize("name", sorted(NON_BLOCKING))
def test_spray_on_non_blocking_clos_reaches_ideal(name: str, pattern: str) -> None:
    fabric = NON_BLOCKING[name]()
    tr = PATTERNS[pattern](fabric.gpus)
    (phase,) = tr.phases
    routes = route(fabric, phase.src, phase.dst, Routing.SPRAY)
    done = completion_times(routes, fabric.capacity_gbps, phase.size_bytes)
    ideal = traffic.ideal_time_s(tr, fabric.gpus, fabric.link_speed_gbps)
    assert ideal == pytest.approx(ideal_s(fabric, BYTES), rel=1e-12)
    assert ideal / done.phase_time_s >= 0.98


# ---- oversubscribed leaf tier: 1/r --------------------------------------------------------------
OVERSUBSCRIBED: dict[str, tuple[Callable[[], Fabric], float]] = {
    "planned-256-2t-2to1": (lambda: planned(256, 2, (2.0, 1.0))[0], 2.0),
    "planned-384-2t-3to1": (lambda: planned(384, 2, (3.0, 1.0))[0], 32 / 12),
    "planned-512-3t-2to1": (lambda: planned(512, 3, (2.0, 1.0))[0], 2.0),
    "planned-512-3t-3to1": (lambda: planned(512, 3, (3.0, 1.0))[0], 32 / 12),
    "2t-6x4-2sp-3to1": (lambda: make_fabric(6, 4, 2), 3.0),
    "2t-4x6-1sp-q2-2to1": (lambda: make_fabric(4, 6, 1, q1=2), 2.0),
    "3t-6x4-3to1": (lambda: make_fabric(6, 4, 2, leaves_per_pod=2, cores_per_group=2), 3.0),
    "3t-4x8-2to1": (
        lambda: make_fabric(4, 8, 2, leaves_per_pod=4, cores_per_group=2, q2=2),
        2.0,
    ),
}


@pytest.mark.parametrize("far", [False, True])
@pytest.mark.parametrize("name", sorted(OVERSUBSCRIBED))
def test_oversubscribed_leaf_tier_gives_one_over_r(name: str, far: bool) -> None:
    build, r = OVERSUBSCRIBED[name]
    fabric = build()
    assert leaf_ratio(fabric) == pytest.approx(r, rel=1e-12)
    per_leaf = int(np.bincount(fabric.leaf_of(np.arange(fabric.gpus))).max())
    src, dst = shift(fabric, fabric.gpus // 2 if far else per_leaf)
    assert (fabric.leaf_of(src) != fabric.leaf_of(dst)).all()
    routes = route(fabric, src, dst, Routing.SPRAY)
    done = completion_times(routes, fabric.capacity_gbps, np.full(src.size, BYTES))
    np.testing.assert_allclose(
        done.initial_rate_gbps, fabric.link_speed_gbps / r, rtol=REL_TOL, atol=0
    )
    assert ideal_s(fabric, BYTES) / done.phase_time_s == pytest.approx(1.0 / r, rel=REL_TOL)


# ---- ECMP collisions: n flows hashed onto n equal paths -------------------------------------------
SEEDS = 1000


def collision_case(n: int, parallel: bool) -> tuple[Fabric, np.ndarray, np.ndarray, np.ndarray]:
    """Leaf 0's n GPUs each send to the first GPU of a distinct other leaf.

    Leaf 0 has n uplinks (n spines, or n parallel links to one spine); every other link a flow
    crosses carries that flow alone, so only the uplink hash can collide.
    """
    fabric = make_fabric(n, n + 1, 1, q1=n) if parallel else make_fabric(n, n + 1, n)
    src, dst = np.arange(n), n * np.arange(1, n + 1)
    up = np.flatnonzero((fabric.link_class == 1) & (fabric.lower == fabric.tier_offsets[1]))
    assert up.size == n
    return fabric, src, dst, 2 * up


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("n", [8, 16])
@pytest.mark.slow
def test_ecmp_distinct_uplinks_match_balls_in_bins(n: int, parallel: bool) -> None:
    fabric, src, dst, uplinks = collision_case(n, parallel)
    used = np.empty(SEEDS)
    for seed in range(SEEDS):
        routes = route(fabric, src, dst, Routing.ECMP, seed=seed)
        per_link = np.asarray(routes.explicit[uplinks].sum(axis=1)).ravel()
        used[seed] = np.count_nonzero(per_link) / n
    assert abs(used.mean() - (1 - (1 - 1 / n) ** n)) <= 0.01


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("n", [8, 16])
def test_ecmp_slowest_flow_is_most_loaded_uplink(n: int, parallel: bool) -> None:
    fabric, src, dst, uplinks = collision_case(n, parallel)
    seeds = 200
    slowest, expected = np.empty(seeds), np.empty(seeds)
    for seed in range(seeds):
        routes = route(fabric, src, dst, Routing.ECMP, seed=seed)
        per_link = np.asarray(routes.explicit[uplinks].sum(axis=1)).ravel()
        done = completion_times(routes, fabric.capacity_gbps, np.full(n, BYTES))
        slowest[seed] = done.phase_time_s
        expected[seed] = per_link.max() * ideal_s(fabric, BYTES)
    np.testing.assert_allclose(slowest, expected, rtol=REL_TOL, atol=0)
    assert (expected > ideal_s(fabric, BYTES) * 1.5).any()  # collisions do happen


# ---- spraying vs maximum flow and the optimal-routing bound -------------------------------------
MAX_FLOW_FABRICS: dict[str, tuple[Callable[[], Fabric], bool]] = {
    "2t-4x4-2sp": (lambda: make_fabric(4, 4, 2), True),
    "2t-4x4-2sp-q2": (lambda: make_fabric(4, 4, 2, q1=2), True),
    "2t-2x4-3sp": (lambda: make_fabric(2, 4, 3), True),
    "2t-6x4-2sp": (lambda: make_fabric(6, 4, 2), True),
    "3t-2pods": (lambda: make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2), True),
    "3t-2pods-thin": (lambda: make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=1), True),
    "3t-6x4-q2": (
        lambda: make_fabric(6, 4, 2, leaves_per_pod=2, cores_per_group=1, q2=2),
        True,
    ),
    "planned-128-2t": (lambda: planned(128, 2)[0], True),
    "planned-256-2t-2to1": (lambda: planned(256, 2, (2.0, 1.0))[0], True),
    "2t-failed-link": (lambda: make_fabric(4, 4, 2, q1=2).with_failed_links([16, 30]), False),
    "3t-failed-core-link": (
        lambda: make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2).with_failed_links([24]),
        False,
    ),
    "3t-failed-spine": (
        lambda: make_fabric(4, 4, 3, leaves_per_pod=2, cores_per_group=1).with_failed_switches(
            [20]
        ),
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(MAX_FLOW_FABRICS))
def test_spray_leaf_pair_matches_max_flow_and_bound(name: str) -> None:
    build, healthy = MAX_FLOW_FABRICS[name]
    fabric = build()
    leaves = fabric.leaf_of(np.arange(fabric.gpus))
    a, b = np.flatnonzero(leaves == leaves[0]), np.flatnonzero(leaves == leaves[-1])
    n = min(a.size, b.size)
    src, dst = a[:n], b[:n]
    rates = max_min_rates(route(fabric, src, dst, Routing.SPRAY), fabric.capacity_gbps)
    simulated = float(rates.sum())
    flow = nx.maximum_flow_value(switch_graph(fabric), int(leaves[0]), int(leaves[-1]))
    max_flow = min(n * fabric.link_speed_gbps, flow)
    lam = max_concurrent_flow(fabric, src, dst, 1.0).lambda_per_s
    assert lam is not None
    bound = lam * n
    assert bound == pytest.approx(max_flow, rel=REL_TOL)
    assert simulated <= bound * (1 + REL_TOL)
    if healthy:
        assert simulated == pytest.approx(max_flow, rel=REL_TOL)


def test_spray_is_below_bound_after_asymmetric_failure() -> None:
    # spine 0 of pod 0 loses one of its two core links, yet stays an equal-cost next hop: spraying
    # still sends half of leaf 0's cross-pod traffic through it (800 Gb/s in all), where optimal
    # routing sends 400 through spine 0 and 800 through spine 1
    fabric = make_fabric(4, 4, 2, q1=2, leaves_per_pod=2, cores_per_group=2)
    assert fabric.tier_offsets[2] == 20
    core = np.flatnonzero((fabric.link_class == 2) & (fabric.lower == 20))
    failed = fabric.with_failed_links([int(core[0])])
    src, dst = np.arange(4), np.arange(12, 16)
    rates = max_min_rates(route(failed, src, dst, Routing.SPRAY), failed.capacity_gbps)
    lam = max_concurrent_flow(failed, src, dst, 1.0).lambda_per_s
    assert lam is not None
    bound = lam * 4
    assert float(rates.sum()) == pytest.approx(800.0, rel=REL_TOL)
    assert bound == pytest.approx(1200.0, rel=REL_TOL)


# ---- max-min fairness properties over random instances --------------------------------------------
PLANNER_CHOICES = [
    (64, 2, 1.0),
    (96, 2, (3.0, 1.0)),
    (128, 2, (2.0, 1.0)),
    (192, 2, 1.0),
    (256, 3, 1.0),
    (256, 3, (2.0, 1.0)),
]


def random_instance(seed: int) -> tuple[Fabric, np.ndarray, np.ndarray, Routing, np.ndarray]:
    """A planned fabric, random flows, random failures, random routing and link capacities."""
    rng = np.random.default_rng(seed)
    gpus, tiers, ratio = PLANNER_CHOICES[int(rng.integers(len(PLANNER_CHOICES)))]
    fabric = planned(gpus, tiers, ratio)[0]
    inner = np.flatnonzero(fabric.link_class >= 1)
    fail = rng.choice(inner, size=int(rng.integers(0, inner.size // 5 + 1)), replace=False)
    fabric = fabric.with_failed_links(fail)
    off = fabric.tier_offsets
    tier = int(rng.integers(2, len(off) - 1))
    if rng.random() < 0.5 and off[tier + 1] - off[tier] > 1:  # a whole switch above the leaves
        # (never the only switch of a tier: see ALL_CROSS_CUT_BUG in test_routing)
        fabric = fabric.with_failed_switches([int(rng.integers(off[tier], off[tier + 1]))])
    if rng.random() < 0.3:  # and a few NIC links
        fabric = fabric.with_failed_links(rng.choice(fabric.gpus, size=3, replace=False))
    flows = int(rng.integers(20, 300))
    # skewed endpoints so that some GPUs and leaves are hot
    hot = rng.choice(fabric.gpus, size=max(2, fabric.gpus // 8), replace=False)
    src = np.where(
        rng.random(flows) < 0.5, rng.choice(hot, flows), rng.integers(0, fabric.gpus, flows)
    )
    dst = (src + rng.integers(1, fabric.gpus, flows)) % fabric.gpus
    routing = Routing.SPRAY if rng.random() < 0.5 else Routing.ECMP
    capacity = fabric.capacity_gbps
    if rng.random() < 0.5:
        capacity = capacity * rng.uniform(0.25, 1.5, capacity.size)
    return fabric, src, dst, routing, capacity


SEEDS_MAXMIN = list(range(12))


@pytest.mark.parametrize("seed", SEEDS_MAXMIN)
def test_max_min_respects_capacities(seed: int) -> None:
    fabric, src, dst, routing, capacity = random_instance(seed)
    routes = route(fabric, src, dst, routing, seed=seed)
    rate = max_min_rates(routes, capacity)
    load = dense(routes) @ rate
    assert (load <= capacity * (1 + 1e-9) + 1e-9).all()
    np.testing.assert_allclose(routes.load(rate), load, rtol=1e-12, atol=1e-9)
    assert (rate[~routes.connected] == 0).all()
    assert (rate[routes.connected] > 0).all()


@pytest.mark.parametrize("seed", SEEDS_MAXMIN)
def test_max_min_every_flow_has_a_bottleneck(seed: int) -> None:
    fabric, src, dst, routing, capacity = random_instance(seed)
    routes = route(fabric, src, dst, routing, seed=seed)
    rate = max_min_rates(routes, capacity)
    frac = dense(routes)
    on = frac > 1e-12
    load = frac @ rate
    saturated = load >= capacity * (1 - 1e-9)
    # largest rate of any flow on each link
    top = np.where(on, rate[np.newaxis, :], 0.0).max(axis=1)
    # a flow's bottleneck: a saturated link on its path where no flow has a larger rate
    is_top = rate[np.newaxis, :] >= top[:, np.newaxis] * (1 - 1e-9)
    bottleneck = on & saturated[:, np.newaxis] & is_top
    has = bottleneck.any(axis=0)
    assert routes.connected.any()
    assert np.flatnonzero(routes.connected & ~has).tolist() == []


@pytest.mark.parametrize("seed", SEEDS_MAXMIN[:6])
def test_max_min_with_a_subset_active_ignores_the_rest(seed: int) -> None:
    fabric, src, dst, routing, capacity = random_instance(seed)
    routes = route(fabric, src, dst, routing, seed=seed)
    active = np.random.default_rng(seed).random(src.size) < 0.5
    rate = max_min_rates(routes, capacity, active)
    alone = max_min_rates(
        route(fabric, src[active], dst[active], routing, seed=seed, flow_id=np.flatnonzero(active)),
        capacity,
    )
    assert (rate[~active] == 0).all()
    np.testing.assert_allclose(rate[active], alone, rtol=1e-9)


# ---- completion times ------------------------------------------------------------------------------
@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("size", [1e3, 8e6, 3.5e9])
def test_completion_without_contention_is_size_over_rate(size: float, routing: Routing) -> None:
    fabric = make_fabric(4, 4, 2)  # 16 GPUs on 4 leaves of 4, two spines
    # each leaf sends two flows to one other leaf and receives two: one per spine link at most
    src = np.array([0, 1, 4, 5, 10, 11, 14, 15])
    dst = np.array([12, 13, 8, 9, 6, 7, 2, 3])
    seed = 0
    if routing is Routing.ECMP:  # a seed where the two flows of each leaf pair avoid each other
        seed = next(
            s
            for s in range(100)
            if dense(route(fabric, src, dst, routing, seed=s)).sum(axis=1).max() <= 1
        )
    routes = route(fabric, src, dst, routing, seed=seed)
    sizes = np.full(src.size, size)
    done = completion_times(routes, fabric.capacity_gbps, sizes)
    np.testing.assert_allclose(done.initial_rate_gbps, fabric.link_speed_gbps, rtol=1e-12)
    np.testing.assert_allclose(
        done.time_s, sizes * 8 / (done.initial_rate_gbps * 1e9), rtol=1e-12, atol=0
    )


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("small", [1e6, 2.5e8])
@pytest.mark.parametrize("pair", [(0, 1, 2), (0, 5, 9), (3, 14, 10)])
def test_completion_two_flows_share_then_reshare(
    pair: tuple[int, int, int], small: float, routing: Routing
) -> None:
    fabric = make_fabric(4, 4, 2)
    a, b, sink = pair  # two senders into one receiver: they share its NIC down link
    big = 2 * small
    routes = route(fabric, np.array([a, b]), np.array([sink, sink]), routing, seed=1)
    done = completion_times(routes, fabric.capacity_gbps, np.array([small, big]))
    c = fabric.link_speed_gbps * 1e9 / 8  # bytes per second
    t1 = 2 * small / c
    np.testing.assert_allclose(done.initial_rate_gbps, fabric.link_speed_gbps / 2, rtol=1e-12)
    np.testing.assert_allclose(done.time_s, [t1, t1 + (big - small) / c], rtol=1e-9)


def test_completion_three_flows_share_in_stages() -> None:
    fabric = make_fabric(4, 4, 2)
    routes = route(fabric, np.array([0, 4, 8]), np.array([15, 15, 15]), Routing.SPRAY)
    sizes = np.array([1.0, 2.0, 4.0]) * 1e8
    done = completion_times(routes, fabric.capacity_gbps, sizes)
    c = fabric.link_speed_gbps * 1e9 / 8
    t1 = 3 * sizes[0] / c
    t2 = t1 + 2 * (sizes[1] - sizes[0]) / c
    t3 = t2 + (sizes[2] - sizes[1]) / c
    np.testing.assert_allclose(done.time_s, [t1, t2, t3], rtol=1e-9)
    assert done.events == 3
    assert done.phase_time_s == pytest.approx(t3, rel=1e-9)


def test_completion_of_cut_off_and_empty_flows() -> None:
    fabric = make_fabric(4, 4, 2).with_failed_links([0])
    routes = route(fabric, np.array([0, 1, 2]), np.array([5, 6, 7]), Routing.SPRAY)
    done = completion_times(routes, fabric.capacity_gbps, np.array([1e6, 1e6, 0.0]))
    assert done.time_s[0] == np.inf
    assert done.time_s[1] == pytest.approx(ideal_s(fabric, 1e6), rel=1e-12)
    assert done.time_s[2] == 0.0


# ---- reproducibility -------------------------------------------------------------------------------
@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize(
    "build",
    [
        lambda: traffic_patterns.random_permutation(256, BYTES, 3),
        lambda: traffic_patterns.incast(256, 16, BYTES, 3),
        lambda: collectives.all_to_all(gpu_groups.consecutive_groups(256, 16), BYTES),
        lambda: collectives.ring_all_reduce(gpu_groups.data_parallel_groups(256, 8), BYTES),
    ],
    ids=["perm", "incast", "a2a-16", "ring"],
)
def test_same_design_traffic_and_seed_reproduce(
    build: Callable[[], traffic.Traffic], routing: Routing
) -> None:
    fabric = planned(256, 2, (2.0, 1.0))[0]

    def run() -> tuple[np.ndarray, np.ndarray]:
        (phase,) = build().phases
        routes = route(fabric, phase.src, phase.dst, routing, seed=11)
        done = completion_times(routes, fabric.capacity_gbps, phase.size_bytes)
        return done.time_s, done.initial_rate_gbps

    first, second = run(), run()
    assert np.array_equal(first[0], second[0])
    assert np.array_equal(first[1], second[1])
    assert np.isfinite(first[0]).all()
