"""Spraying by hashed entropies (``planner.sim.hashed_spray``): sub-flows, loads, the tail."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest

from planner.schema.verify import Verify
from planner.sim import traffic as tr
from planner.sim import traffic_patterns
from planner.sim.hashed_spray import entropies_used, hashed_times_s, sub_flows
from planner.sim.phase_runs import run_traffic
from planner.sim.routing import Routing, route
from planner.sim.scenarios import Scenario
from tests.sim.test_bound import make_fabric

PAYLOAD = 4096
RTOL = 1e-9
GBIT = 1e9 / 8  # bytes a gigabit


@pytest.mark.parametrize(
    ("size", "entropies", "used"),
    [(100.0, 256, 1), (PAYLOAD * 16.0, 256, 16), (PAYLOAD * 1000 + 1.0, 256, 256), (0.0, 8, 1)],
)
def test_a_flow_uses_one_entropy_a_packet_up_to_the_count(
    size: float, entropies: int, used: int
) -> None:
    assert entropies_used(np.array([size]), PAYLOAD, entropies).tolist() == [used]


@pytest.mark.parametrize("size", [1.0, 5 * PAYLOAD, 1000 * PAYLOAD + 17, 3_000_000.0])
@pytest.mark.parametrize("entropies", [1, 7, 256])
def test_sub_flows_carry_the_flow_packet_by_packet(size: float, entropies: int) -> None:
    phase = tr.Phase(np.array([0, 1]), np.array([1, 0]), np.array([size, 2 * size]))
    flow, k, bytes_ = sub_flows(phase, PAYLOAD, entropies)
    for f in (0, 1):
        mine = flow == f
        packets = max(math.ceil(phase.size_bytes[f] / PAYLOAD), 1)
        n = min(packets, entropies)
        assert k[mine].tolist() == list(range(n))
        assert bytes_[mine].sum() == pytest.approx(phase.size_bytes[f], rel=RTOL)
        # Round-robin: entropy k carries packets k, k + n, ...: counts differ by at most one.
        counts = bytes_[mine] / phase.size_bytes[f] * packets
        assert counts.max() - counts.min() <= 1 + 1e-9


def brute_force_times_s(fabric, phase, seed, entropies):  # type: ignore[no-untyped-def]
    """The load model sub-flow by sub-flow, each routed alone (its own id keys its hash)."""
    flow, k, size = sub_flows(phase, PAYLOAD, entropies)
    paths = []
    load = np.zeros(fabric.links)
    for f, j, b in zip(flow.tolist(), k.tolist(), size.tolist(), strict=True):
        r = route(
            fabric,
            phase.src[[f]],
            phase.dst[[f]],
            Routing.ECMP,
            seed=seed,
            flow_id=np.array([f * entropies + j]),
        )
        links = r.explicit.tocsc().indices
        paths.append(links)
        load[links] += b / GBIT
    link_s = load / fabric.capacity_gbps
    times = np.zeros(phase.flows)
    for f, links in zip(flow.tolist(), paths, strict=True):
        times[f] = max(times[f], link_s[links].max())
    return times


@pytest.mark.parametrize("entropies", [1, 3, 16])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_load_model_matches_a_sub_flow_by_sub_flow_count(entropies: int, seed: int) -> None:
    fabric = make_fabric(4, 4, 4, leaves_per_pod=2, cores_per_group=2)
    phase = traffic_patterns.random_permutation(fabric.gpus, 40 * PAYLOAD, seed=3).phases[0]
    times, _, cut = hashed_times_s(fabric, phase, seed, entropies, PAYLOAD)
    assert cut == 0
    np.testing.assert_allclose(times, brute_force_times_s(fabric, phase, seed, entropies), RTOL)
    # In chunks of 7 sub-flows (two passes of routing) the same, up to the order of the sums.
    chunked, _, _ = hashed_times_s(fabric, phase, seed, entropies, PAYLOAD, chunk_subflows=7)
    np.testing.assert_allclose(chunked, times, RTOL)


def test_no_flow_beats_its_own_nic_and_many_entropies_approach_the_even_split() -> None:
    """A 1:1 leaf/spine under a cross-leaf permutation: even spraying takes size / c exactly."""
    fabric = make_fabric(4, 4, 4)
    src = np.arange(16)
    dst = (src + 4) % 16  # every flow to the next leaf
    size = 2048 * PAYLOAD
    phase = tr.Phase(src, dst, np.full(16, float(size)))
    alone_s = size / GBIT / fabric.link_speed_gbps
    few, _, _ = hashed_times_s(fabric, phase, 1, 4, PAYLOAD)
    many, _, _ = hashed_times_s(fabric, phase, 1, 2048, PAYLOAD)
    assert np.all(few >= alone_s * (1 - RTOL))
    assert np.all(many >= alone_s * (1 - RTOL))
    assert many.max() < 1.1 * alone_s < few.max()


def test_one_flows_busiest_uplink_is_the_fullest_bin_of_its_entropies() -> None:
    """One flow across 4 spines with 4 entropies: its busiest uplink carries max-bin / 4 of it.

    Over many hash seeds, the mean of the fullest of 4 bins after 4 uniform balls is exact
    from the 256 equally likely placements (544 / 256 = 2.125); the switch hash must draw like
    that. (The flow's time is its NIC's here, which carries all of it.)
    """
    fabric = make_fabric(4, 2, 4)
    size = 4 * PAYLOAD
    phase = tr.Phase(np.array([0]), np.array([4]), np.array([float(size)]))
    alone_s = size / GBIT / fabric.link_speed_gbps
    up = 2 * np.flatnonzero(fabric.link_class == 1)  # leaf-to-spine, upwards
    fullest = []
    for seed in range(1, 801):
        times, link_s, _ = hashed_times_s(fabric, phase, seed, 4, PAYLOAD)
        assert times[0] == pytest.approx(alone_s, rel=RTOL)
        fullest.append(link_s[up].max() / alone_s * 4)
    placements = itertools.product(range(4), repeat=4)
    exact = np.mean([max(np.bincount(p, minlength=4)) for p in placements])
    assert exact == pytest.approx(544 / 256)
    assert set(np.round(fullest, 9)) <= {1.0, 2.0, 3.0, 4.0}
    # 800 draws: standard error about 0.6 / sqrt(800) = 0.02.
    assert np.mean(fullest) == pytest.approx(exact, abs=0.08)


def test_spraying_with_entropies_is_said_and_slower_than_the_even_split() -> None:
    fabric = make_fabric(4, 4, 2)
    traffic = traffic_patterns.random_permutation(fabric.gpus, 64 * PAYLOAD, seed=1)
    even = run_traffic(fabric, traffic, Routing.SPRAY, 1)
    notes: list[str] = []
    hashed = run_traffic(fabric, traffic, Routing.SPRAY, 1, notes=notes, spray_entropies=8)
    assert hashed[0] > even[0]
    assert any("8 entropies" in n for n in notes)
    assert Verify().spray_entropies == 0


def test_a_failed_plane_is_hashed_over_its_surviving_links() -> None:
    """One plane, a leaf uplink down: the flows hash over what is left (and no worse than the
    whole plane would do)."""
    fabric = make_fabric(4, 4, 2)
    phase = traffic_patterns.random_permutation(fabric.gpus, 64 * PAYLOAD, seed=1).phases[0]
    down = np.array([fabric.gpus])  # the first leaf-to-spine link
    scenario = Scenario(name="uplink", failed_links=down)
    _, times, cut, _, _ = run_traffic(
        fabric,
        tr.Traffic("p", "direct", 2, 1, 0.0, 1.0, (phase,)),
        Routing.SPRAY,
        1,
        scenario,
        spray_entropies=8,
    )
    failed, _, _ = hashed_times_s(fabric.with_failed_links(down), phase, 1, 8, PAYLOAD)
    whole, _, _ = hashed_times_s(fabric, phase, 1, 8, PAYLOAD)
    assert cut == 0
    np.testing.assert_allclose(times, np.maximum(failed, whole), RTOL)
    assert failed.max() > whole.max()


def test_flows_a_failed_plane_cuts_off_move_to_the_other_plane() -> None:
    """Two planes, GPU 0's NIC link down in plane 0: its flows send all of it over plane 1."""
    fabric = replace(make_fabric(4, 4, 2), planes=2)
    phase = traffic_patterns.random_permutation(fabric.gpus, 64 * PAYLOAD, seed=1).phases[0]
    scenario = Scenario(name="nic", failed_links=np.array([0]))
    traffic = tr.Traffic("p", "direct", 2, 1, 0.0, 1.0, (phase,))
    _, times, cut, _, _ = run_traffic(
        fabric, traffic, Routing.SPRAY, 1, scenario, spray_entropies=8
    )
    lost = (phase.src == 0) | (phase.dst == 0)
    half = tr.Phase(phase.src, phase.dst, phase.size_bytes / 2)
    moved = tr.Phase(phase.src, phase.dst, np.where(lost, phase.size_bytes, phase.size_bytes / 2))
    on_failed, _, _ = hashed_times_s(fabric.with_failed_links(np.array([0])), half, 1, 8, PAYLOAD)
    on_healthy, _, _ = hashed_times_s(fabric, moved, 1, 8, PAYLOAD)
    assert cut == 0
    assert lost.sum() == 2
    np.testing.assert_allclose(times, np.maximum(np.where(lost, 0, on_failed), on_healthy), RTOL)
    # One plane only: those flows are cut off.
    single = run_traffic(
        make_fabric(4, 4, 2), traffic, Routing.SPRAY, 1, scenario, spray_entropies=8
    )
    assert single[2] == 2
    assert np.isinf(single[1][lost]).all()


#: Sub-flows of the memory case: 32 flows of 4,096 packets over 4,096 entropies each.
MEMORY_FLOWS, MEMORY_ENTROPIES = 32, 4096
#: Sub-flows routed at once in the memory case.
MEMORY_CHUNK = 1024
#: Most bytes the memory case may hold at its peak: its chunks' routes and the per-flow arrays,
#: about 2.2 MB whatever the flows, where the 131,072 sub-flows' own arrays held whole took
#: about 9 MB before (4.9 MB at 16 flows, 17.6 MB at 64).
MEMORY_PEAK_BYTES = 4 * 2**20


@pytest.mark.slow
def test_memory_is_bounded_by_the_chunk_not_by_the_sub_flows() -> None:
    """Issue 32: the sub-flows were built whole (flows x entropies), a MemoryError at 1 GiB."""
    import tracemalloc

    fabric = make_fabric(4, 4, 4)
    src = np.arange(MEMORY_FLOWS) % fabric.gpus
    phase = tr.Phase(
        src, (src + 4) % fabric.gpus, np.full(MEMORY_FLOWS, float(PAYLOAD * MEMORY_ENTROPIES))
    )
    tracemalloc.start()
    try:
        times, _, cut = hashed_times_s(
            fabric, phase, 1, MEMORY_ENTROPIES, PAYLOAD, chunk_subflows=MEMORY_CHUNK
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert cut == 0
    assert np.all(np.isfinite(times))
    assert peak < MEMORY_PEAK_BYTES, peak


@pytest.mark.parametrize("budget_gib", [0.001, 1.0, 4096.0])
def test_the_chunk_follows_the_memory_budget(budget_gib: float) -> None:
    from planner.sim.hashed_spray import CHUNK_SUBFLOWS, MIN_CHUNK_SUBFLOWS, chunk_for_budget

    fabric = make_fabric(4, 4, 4)
    phase = traffic_patterns.random_permutation(fabric.gpus, 40 * PAYLOAD, seed=3).phases[0]
    chunk = chunk_for_budget(fabric, phase, budget_gib)
    assert MIN_CHUNK_SUBFLOWS <= chunk <= CHUNK_SUBFLOWS
    if budget_gib < 0.01:
        assert chunk == MIN_CHUNK_SUBFLOWS
    assert chunk_for_budget(fabric, phase, None) == CHUNK_SUBFLOWS
