"""Traffics run together: one NIC shared is the sum of the bytes, no link shared is the max."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.sim import collectives, traffic_patterns
from planner.sim.concurrent import fluid_phase, run_together
from planner.sim.phase_runs import run_phase
from planner.sim.routing import Routing
from planner.sim.traffic import Phase
from tests.sim.test_routing import planned

#: Re-sharing merges completions within 1e-4 of each other (``planner.sim.flow.EVENT_RTOL``).
RTOL = 2e-4
BITS_PER_BYTE = 8
GBPS = 1e9
ROUTINGS = [Routing.ECMP, Routing.SPRAY]


def _nic_s(size_bytes: float, nic_gbps: float) -> float:
    return size_bytes * BITS_PER_BYTE / (nic_gbps * GBPS)


@pytest.mark.parametrize("routing", ROUTINGS)
@pytest.mark.parametrize(("a_bytes", "b_bytes"), [(2**24, 2**24), (2**24, 3 * 2**24)])
def test_two_flows_from_one_nic_take_the_sum(routing: Routing, a_bytes: int, b_bytes: int) -> None:
    fabric = planned(512)[0]
    nic = fabric.nic_speed_gbps
    a = traffic_patterns.point_to_point([0], [40], a_bytes)
    b = traffic_patterns.point_to_point([0], [300], b_bytes)
    got = run_together(fabric, [a, b], routing)
    assert got.alone_s == pytest.approx([_nic_s(a_bytes, nic), _nic_s(b_bytes, nic)], rel=RTOL)
    assert got.phase_s == pytest.approx(_nic_s(a_bytes + b_bytes, nic), rel=RTOL)
    assert got.phase_s > max(got.alone_s) * (1 + RTOL)


@pytest.mark.parametrize("routing", ROUTINGS)
def test_traffics_sharing_no_link_take_the_longer(routing: Routing) -> None:
    fabric = planned(512)[0]
    a = traffic_patterns.point_to_point([0], [1], 2**24)
    b = traffic_patterns.point_to_point([2], [3], 2**25)
    got = run_together(fabric, [a, b], routing)
    assert np.allclose(got.together_s, got.alone_s, rtol=RTOL)
    assert np.allclose(got.slowdown, 1.0, rtol=RTOL)


def test_a_ring_and_pipeline_sends_on_the_same_nics_add_up() -> None:
    """A data-parallel ring across nodes beside pipeline sends from the same GPUs (sprayed, so
    the NICs are the only bottleneck): each GPU's NIC carries 2 (n-1)/n S + M."""
    fabric = planned(512)[0]
    nic = fabric.nic_speed_gbps
    ring_gpus = np.array([[0, 64, 128, 192]])
    size, message = 2.0**26, 2.0**24
    ring = collectives.ring_all_reduce(ring_gpus, size)
    sends = traffic_patterns.point_to_point(ring_gpus[0], ring_gpus[0] + 256, message)
    got = run_together(fabric, [ring, sends], Routing.SPRAY)
    n = ring_gpus.shape[1]
    ring_bytes = 2 * (n - 1) / n * size
    assert got.alone_s[0] == pytest.approx(_nic_s(ring_bytes, nic), rel=RTOL)
    assert got.alone_s[1] == pytest.approx(_nic_s(message, nic), rel=RTOL)
    assert got.phase_s == pytest.approx(_nic_s(ring_bytes + message, nic), rel=RTOL)


@pytest.mark.parametrize("routing", ROUTINGS)
def test_together_is_the_simulator_running_the_union_as_one(routing: Routing) -> None:
    fabric = planned(512)[0]
    rng = np.random.default_rng(4)
    traffics = [
        collectives.ring_all_reduce(rng.permutation(512)[:16].reshape(2, 8), 2**24)
        for _ in range(4)
    ]
    got = run_together(fabric, traffics, routing, seed=3)
    phases = [fluid_phase(t) for t in traffics]
    union = Phase(
        np.concatenate([p.src for p in phases]),
        np.concatenate([p.dst for p in phases]),
        np.concatenate([p.size_bytes for p in phases]),
        flow_id=np.concatenate([np.arange(p.flows) for p in phases]),
    )
    whole = run_phase(fabric, union, routing, 3)
    assert got.phase_s == pytest.approx(whole.time_s, rel=1e-12)
    assert max(got.together_s) == pytest.approx(whole.time_s, rel=1e-12)
    assert np.all(got.together_s >= got.alone_s * (1 - RTOL))


@pytest.mark.parametrize(
    "traffic",
    [
        collectives.ring_all_reduce(np.arange(16).reshape(2, 8), 2**20),
        collectives.all_to_all(np.arange(16).reshape(2, 8), 2**20),
        collectives.tree_all_reduce(np.arange(16).reshape(2, 8), 2**20),
    ],
    ids=lambda t: t.name,
)
def test_the_fluid_phase_keeps_every_byte_on_its_pair(traffic: collectives.Traffic) -> None:
    fluid = fluid_phase(traffic, scale=3.0)
    total = sum(p.total_bytes for p in traffic.phases)
    assert fluid.total_bytes == pytest.approx(3.0 * total)
    pairs = {(int(s), int(d)) for p in traffic.phases for s, d in zip(p.src, p.dst, strict=True)}
    assert set(zip(fluid.src.tolist(), fluid.dst.tolist(), strict=True)) == pairs
    assert fluid.flows == len(pairs)


def test_bad_scales_are_refused() -> None:
    fabric = planned(512)[0]
    t = traffic_patterns.point_to_point([0], [1], 2**20)
    with pytest.raises(ValueError, match="scales"):
        run_together(fabric, [t], Routing.ECMP, scales=[1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        fluid_phase(t, math.inf)
