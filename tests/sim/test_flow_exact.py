"""The fast max-min solver and completion times agree with the reference ones (issue 11).

``planner.sim.flow`` fills only the links that saturate next and resumes the filling after a
completion event instead of starting again; ``tests.sim.flow_reference`` holds a dense
progressive filling and the solver as it was before. On random instances (planned fabrics,
failures, skewed flows, ECMP and spraying, perturbed capacities, several components) the rates
must agree within the level tolerance and the completion times within the event tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.sim.fabric import Fabric
from planner.sim.flow import (
    EVENT_RTOL,
    LEVEL_RTOL,
    WORKING_LINKS,
    completion_times,
    max_min_rates,
)
from planner.sim.routing import Routing, route
from tests.sim.flow_reference import (
    dense_max_min_rates,
    reference_completion_times,
    reference_max_min_rates,
)
from tests.sim.test_bound import make_fabric
from tests.sim.test_flow import random_instance

#: Agreement of rates: levels within LEVEL_RTOL of each other may saturate in one round or two,
#: and the fast solver sums loads in another order.
RATE_RTOL = 1e3 * LEVEL_RTOL
#: Agreement of completion times: events within EVENT_RTOL merge, so one side may finish a flow
#: at the other's next event.
TIME_RTOL = 4 * EVENT_RTOL
SEEDS = list(range(16))


def sizes(seed: int, flows: int) -> np.ndarray:
    """Flow sizes (bytes) spread over two orders of magnitude, some equal, some zero."""
    rng = np.random.default_rng(seed + 1_000)
    out = 10 ** rng.uniform(6, 8, flows)
    out[rng.random(flows) < 0.3] = 3e7
    out[rng.random(flows) < 0.05] = 0.0
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_rates_match_the_reference_solvers(seed: int) -> None:
    fabric, src, dst, routing, capacity = random_instance(seed)
    routes = route(fabric, src, dst, routing, seed=seed)
    fast = max_min_rates(routes, capacity)
    np.testing.assert_allclose(fast, reference_max_min_rates(routes, capacity), rtol=RATE_RTOL)
    np.testing.assert_allclose(fast, dense_max_min_rates(routes, capacity), rtol=RATE_RTOL)


@pytest.mark.parametrize("seed", SEEDS[:8])
def test_rates_match_with_a_tiny_working_set(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A working set of a few links: the threshold and its refills are exercised every round."""
    monkeypatch.setattr("planner.sim.flow.WORKING_LINKS", 3)
    fabric, src, dst, routing, capacity = random_instance(seed)
    routes = route(fabric, src, dst, routing, seed=seed)
    np.testing.assert_allclose(
        max_min_rates(routes, capacity), reference_max_min_rates(routes, capacity), rtol=RATE_RTOL
    )
    assert WORKING_LINKS > 3  # the module's own value is untouched outside this test


@pytest.mark.parametrize("seed", SEEDS)
def test_warm_start_resumes_the_filling(seed: int) -> None:
    """Fix the flows below a level at their rates, refill the rest from it: the same rates."""
    fabric, src, dst, routing, capacity = random_instance(seed)
    routes = route(fabric, src, dst, routing, seed=seed)
    rate = max_min_rates(routes, capacity)
    levels = np.unique(rate[routes.connected])
    cut = levels[len(levels) // 2]
    redo = routes.connected & (rate >= cut)
    start = np.full(routes.components[2], cut)
    warm = max_min_rates(routes, capacity, redo, fixed_rate_gbps=rate, start_level_gbps=start)
    np.testing.assert_allclose(warm, rate, rtol=RATE_RTOL)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.slow
def test_completion_times_match_the_reference(seed: int) -> None:
    fabric, src, dst, routing, capacity = random_instance(seed)
    routes = route(fabric, src, dst, routing, seed=seed)
    size = sizes(seed, src.size)
    fast = completion_times(routes, capacity, size)
    ref = reference_completion_times(routes, capacity, size)
    np.testing.assert_allclose(fast.initial_rate_gbps, ref.initial_rate_gbps, rtol=RATE_RTOL)
    finite = np.isfinite(ref.time_s)
    assert (np.isfinite(fast.time_s) == finite).all()
    np.testing.assert_allclose(fast.time_s[finite], ref.time_s[finite], rtol=TIME_RTOL)
    assert fast.exact
    assert ref.exact


def separate_pods(seed: int) -> tuple[Fabric, np.ndarray, np.ndarray]:
    """Flows kept inside groups of leaves: many components, each on its own clock."""
    fabric = make_fabric(8, 4, 2)  # 32 GPUs on 8 leaves of 4
    rng = np.random.default_rng(seed)
    src = rng.integers(0, fabric.gpus, 60)
    dst = (src // 4) * 4 + rng.integers(0, 4, src.size)  # same leaf: NIC links only
    far = rng.random(src.size) < 0.4
    dst[far] = rng.integers(0, fabric.gpus, int(far.sum()))
    same = dst == src
    dst[same] = (dst[same] + 1) % fabric.gpus
    return fabric, src, dst


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("seed", SEEDS[:6])
def test_completion_over_many_components_matches(seed: int, routing: Routing) -> None:
    fabric, src, dst = separate_pods(seed)
    routes = route(fabric, src, dst, routing, seed=seed)
    assert routes.components[2] > 1
    size = sizes(seed, src.size)
    fast = completion_times(routes, fabric.capacity_gbps, size)
    ref = reference_completion_times(routes, fabric.capacity_gbps, size)
    np.testing.assert_allclose(fast.time_s, ref.time_s, rtol=TIME_RTOL)
    assert fast.events == ref.events


@pytest.mark.parametrize("flows", [2, 3, 7])
def test_incast_closed_form(flows: int) -> None:
    """k flows of sizes 1..k into one NIC: rates c/k, then c/(k-1), ... (closed form)."""
    fabric = make_fabric(4, 4, 2)
    src = np.arange(1, flows + 1)
    dst = np.zeros(flows, dtype=np.int64)
    size = np.arange(1, flows + 1) * 1e8
    routes = route(fabric, src, dst, Routing.SPRAY)
    done = completion_times(routes, fabric.capacity_gbps, size)
    c = fabric.link_speed_gbps * 1e9 / 8
    # flow j (1-based) finishes when the link has carried sum_{i<=j} size_i + (k-j) size_j
    expect = [(size[:j].sum() + (flows - j) * size[j - 1]) / c for j in range(1, flows + 1)]
    np.testing.assert_allclose(done.time_s, expect, rtol=1e-9)
    assert done.events == flows


@pytest.mark.parametrize("bulk", [0, 10**9], ids=["entries-only", "always-afresh"])
@pytest.mark.parametrize("seed", SEEDS[:8])
@pytest.mark.slow
def test_both_ways_of_updating_the_links_agree(
    seed: int, bulk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Freezing subtracts the frozen flows' entries, or sums every link afresh: same result."""
    monkeypatch.setattr("planner.sim.flow.BULK_FREEZE", bulk)
    fabric, src, dst, routing, capacity = random_instance(seed)
    routes = route(fabric, src, dst, routing, seed=seed)
    size = sizes(seed, src.size)
    fast = completion_times(routes, capacity, size)
    ref = reference_completion_times(routes, capacity, size)
    finite = np.isfinite(ref.time_s)
    np.testing.assert_allclose(fast.time_s[finite], ref.time_s[finite], rtol=TIME_RTOL)
