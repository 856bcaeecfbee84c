"""Issue 11 at small scale: memory budget and streaming, the healthy-plane cache, exact re-sharing."""

from __future__ import annotations

import numpy as np
import pytest

from planner.sim import traffic_patterns
from planner.sim.flow import completion_times
from planner.sim.phase_runs import run_traffic
from planner.sim.routing import Routing, estimate_route_bytes, route
from planner.sim.scenarios import Scenario
from planner.sim.stream_plan import MIN_CHUNK_FLOWS, STREAM_SAMPLE_FLOWS, percentile_band
from tests.sim.test_routing import planned, random_flows

#: Budget so small that any phase above MIN_CHUNK_FLOWS flows is streamed in the smallest chunks,
#: yet above the 512-GPU fabric's distance table (40 switches x 32 leaves x 8 bytes, 10 KiB),
#: which a stream cannot split (``check_table_memory``).
TINY_BUDGET_GIB = 2e-5
#: Budget no test phase comes near.
HUGE_BUDGET_GIB = 1024.0


def fabric_512():  # type: ignore[no-untyped-def]
    return planned(512, 3)[0]


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("why", ["budget", "cap"])
@pytest.mark.slow
def test_a_streamed_phase_keeps_its_exact_time_and_says_so(routing: Routing, why: str) -> None:
    fabric = fabric_512()
    t = traffic_patterns.uniform_all_to_all(fabric.gpus, 2**24)  # 512 x 511 flows of equal size
    notes: list[str] = []
    limits = {"memory_budget_gib": TINY_BUDGET_GIB} if why == "budget" else {"max_flows": 20_000}
    total, times, _, util, exact = run_traffic(fabric, t, routing, 1, notes=notes, **limits)
    full = run_traffic(fabric, t, routing, 1, with_utilisation=True)
    assert exact
    assert total == pytest.approx(full[0], rel=2e-4)
    assert times.size == STREAM_SAMPLE_FLOWS
    assert times.max() <= total * (1 + 1e-9)
    assert util is None
    chunk = MIN_CHUNK_FLOWS if why == "budget" else 20_000
    assert len(notes) == 1
    how = (  # a Clos sprays by tier (``planner.sim.spray_loads``); ECMP routes in chunks
        "sprayed with their link loads summed tier by tier"
        if routing is Routing.SPRAY
        else f"routed in {-(-t.flows // chunk):,} chunk(s) of at most {chunk:,}"
    )
    assert f"{t.flows:,} flows {how}" in notes[0]
    assert ("memory_budget_gib" if why == "budget" else "resharing_max_flows") in notes[0]
    assert "its time is exact" in notes[0]


@pytest.mark.parametrize("routing", list(Routing))
def test_within_budget_nothing_changes(routing: Routing) -> None:
    fabric = fabric_512()
    t = traffic_patterns.random_permutation(fabric.gpus, 2**24, 3)
    notes: list[str] = []
    a = run_traffic(fabric, t, routing, 1, memory_budget_gib=HUGE_BUDGET_GIB, notes=notes)
    b = run_traffic(fabric, t, routing, 1)
    assert notes == []
    assert a[0] == b[0]
    assert np.array_equal(a[1], b[1])
    assert a[4]


def test_estimate_grows_with_the_flows() -> None:
    fabric = fabric_512()
    src, dst = random_flows(fabric, 4000, 2)
    small = estimate_route_bytes(fabric, src[:400], dst[:400], Routing.SPRAY, seed=1)
    large = estimate_route_bytes(fabric, src, dst, Routing.SPRAY, seed=1)
    assert 0 < small < large


def test_healthy_cache_changes_nothing() -> None:
    fabric = fabric_512()
    t = traffic_patterns.random_permutation(fabric.gpus, 2**24, 5)
    spine0 = fabric.tier_offsets[2]
    links = np.flatnonzero((fabric.lower == spine0) | (fabric.upper == spine0))
    cache: dict = {}  # type: ignore[type-arg]
    first = run_traffic(fabric, t, Routing.SPRAY, 1, cache=cache)
    with_cache = run_traffic(fabric, t, Routing.SPRAY, 1, Scenario("s", links), cache=cache)
    without = run_traffic(fabric, t, Routing.SPRAY, 1, Scenario("s", links))
    assert len(cache) == 1
    assert first[0] > 0
    assert with_cache[0] == without[0]
    assert np.array_equal(with_cache[1], without[1])


@pytest.mark.slow
def test_ecmp_re_sharing_runs_to_the_last_completion() -> None:
    """A random permutation under ECMP needs more than the old cap of 16 rounds, and is exact."""
    fabric = fabric_512()
    src, dst = random_flows(fabric, 3000, 11)
    routes = route(fabric, src, dst, Routing.ECMP, seed=1)
    size = np.random.default_rng(2).uniform(1e6, 8e6, src.size)
    done = completion_times(routes, fabric.capacity_gbps, size)
    assert done.exact
    assert done.events > 16
    capped = completion_times(routes, fabric.capacity_gbps, size, max_events=16)
    assert not capped.exact


@pytest.mark.parametrize(
    ("percentile", "sample", "band"),
    [(99, 10_000, (98.8, 99.2)), (50, 10_000, (49.0, 51.0)), (99, 100, (94.6, 99.8))],
)
def test_percentile_band_of_the_order_statistic(
    percentile: float, sample: int, band: tuple[float, float]
) -> None:
    lo, hi = percentile_band(percentile, sample)
    assert (round(lo, 1), round(hi, 1)) == band


@pytest.mark.parametrize("sample", [200, 10_000])
@pytest.mark.slow
def test_a_sampled_percentile_stays_in_its_band_95_percent_of_the_time(sample: int) -> None:
    """Drawn 2,000 times, a sample's p99 (its k-th smallest) falls inside its stated band of the
    population's percentiles 93-97 % of the time (4 standard deviations of 2,000 draws)."""
    rng = np.random.default_rng(0)
    population = np.sort(rng.exponential(size=200_000))
    lo, hi = percentile_band(99, sample)
    q_lo, q_hi = np.percentile(population, [lo, hi])
    k = int(np.ceil(sample * 0.99))
    draws = np.sort(rng.choice(population, (2_000, sample)), axis=1)[:, k - 1]
    inside = float(np.mean((q_lo <= draws) & (draws <= q_hi)))
    assert 0.93 <= inside <= 0.97
