"""Packet-level fidelity: goodput, per-hop latency and start-up, each against its closed form."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from planner.families.torus.fabric import torus_fabric
from planner.schema.verify import TransportSpec, Verify
from planner.sim import traffic_patterns
from planner.sim.flow import completion_times
from planner.sim.packet import (
    HTSIM_EQDS,
    HTSIM_NDP,
    HTSIM_ROCE,
    ROCE_V2,
    Fidelity,
    PathModel,
    Transport,
    benes_wait_slots,
    latency_s,
    queue_wait_slots,
    queueing_s,
    switch_hops,
)
from planner.sim.phase_runs import run_traffic
from planner.sim.routing import Routing, route
from tests.sim.test_bound import make_fabric

#: Relative tolerance on times that have a closed form.
RTOL = 1e-9
GBPS = 1e9
NS = 1e-9

# The three-tier plane of these tests: 2 GPUs a leaf, 2 leaves a pod, 4 pods, 2 spines a pod,
# 1 core per group. GPUs 0, 1 share leaf 0; GPU 2 is on leaf 1 (same pod); GPU 4 is in pod 1.
THREE = {"gpus_per_leaf": 2, "leaves": 8, "spines_per_pod": 2, "leaves_per_pod": 2}
#: Distinct latencies per link class and switch tier, so a class taken for another shows.
MODEL = PathModel(
    class_latency_ns=(10.0, 100.0, 1000.0),
    class_speed_gbps=(400.0, 400.0, 400.0),
    switch_latency_ns=(300.0, 600.0, 900.0),
)
#: A transport with round numbers: 1000-byte payload, 250 bytes of header, 50-byte ACKs.
ROUND = Transport(payload_bytes=1000, header_bytes=250, ack_bytes=50)


def three_tier() -> Any:
    return make_fabric(**THREE, cores_per_group=1)


def test_roce_v2_defaults_are_the_byte_counts_of_the_docstring() -> None:
    # 8 preamble + 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 4 ICRC + 4 FCS + 12 gap = 82.
    assert TransportSpec().header_bytes == 8 + 14 + 20 + 8 + 12 + 4 + 4 + 12
    # ACK: 14 + 20 + 8 + 12 + 4 AETH + 4 ICRC + 4 FCS = 66 of frame, + 8 + 12 = 86.
    assert TransportSpec().ack_bytes == 14 + 20 + 8 + 12 + 4 + 4 + 4 + 8 + 12
    assert ROCE_V2.goodput_fraction == pytest.approx(4096 / 4178, rel=RTOL)
    # Two ways: the NIC link carries 4178 of data and 86 of ACK per packet of 4096.
    assert ROCE_V2.two_way_fraction == pytest.approx(4096 / (4178 + 86), rel=RTOL)


@pytest.mark.parametrize(
    ("name", "header", "ack", "losses"),
    [
        ("rocev2", 82, 86, "lossless"),
        ("htsim_roce", 64, 64, "lossless"),
        ("htsim_ndp", 64, 64, "trimming"),
        ("htsim_eqds", 64, 64, "trimming"),
    ],
)
def test_a_named_transport_brings_its_figures(
    name: str, header: int, ack: int, losses: str
) -> None:
    """``transport = "name"`` and ``[verify.transport] name = ...`` give the preset's figures."""
    for given in (name, {"name": name}):
        spec = Verify.model_validate({"transport": given}).transport
        assert (spec.name, spec.header_bytes, spec.ack_bytes, spec.losses) == (
            name,
            header,
            ack,
            losses,
        )
        transport = Transport.from_spec(spec)
        assert transport.goodput_fraction == pytest.approx(4096 / (4096 + header), rel=RTOL)
        assert (transport.name, transport.losses) == (name, losses)


def test_a_field_beside_the_name_overrides_its_preset() -> None:
    spec = Verify.model_validate(
        {"transport": {"name": "htsim_ndp", "header_bytes": 100, "losses": "drop"}}
    ).transport
    assert (spec.header_bytes, spec.ack_bytes, spec.losses) == (100, 64, "drop")


def test_the_htsim_constants_are_the_named_transports() -> None:
    assert HTSIM_NDP == Transport.from_spec(TransportSpec(name="htsim_ndp"))
    assert HTSIM_EQDS.header_bytes == HTSIM_ROCE.header_bytes == 64
    with pytest.raises(ValidationError, match="htsim_eqds"):
        Verify.model_validate({"transport": "eqds"})


@pytest.mark.parametrize(
    ("transport", "one_way", "two_way"),
    [
        (ROUND, 1000 / 1250, 1000 / 1300),
        # Pacing below the two-way share decides: 0.8 x 0.9 (1250 / 1300 = 0.96 > 0.9).
        (Transport(1000, 250, 50, pacing_fraction=0.9), 0.8 * 0.9, 0.8 * 0.9),
        # Pacing above it: the link decides, 0.8 x 1250 / 1300.
        (Transport(1000, 250, 50, pacing_fraction=0.99), 0.8 * 0.99, 1000 / 1300),
        # Two control packets per data packet: 1000 / (1250 + 100).
        (Transport(1000, 250, 50, acks_per_packet=2), 0.8, 1000 / 1350),
        # No ACKs at all: nothing shares the way.
        (Transport(1000, 250, 50, acks_per_packet=0), 0.8, 0.8),
    ],
    ids=["plain", "paced-below", "paced-above", "two-acks", "no-acks"],
)
def test_goodput_fractions(transport: Transport, one_way: float, two_way: float) -> None:
    assert transport.goodput_fraction == pytest.approx(one_way, rel=RTOL)
    assert transport.two_way_fraction == pytest.approx(two_way, rel=RTOL)


@pytest.mark.parametrize(
    ("src", "dst", "hops"), [(0, 1, 0), (0, 2, 2), (0, 4, 4), (15, 0, 4)], ids=str
)
def test_switch_hops_follow_the_tiers_climbed(src: int, dst: int, hops: int) -> None:
    assert switch_hops(three_tier(), [src], [dst]).tolist() == [hops]


# One packet's serialisation at 400 Gb/s: data 1250 B -> 25 ns, ACK 50 B -> 1 ns.
DATA_NS = 1250 * 8 / 400
ACK_NS = 50 * 8 / 400


@pytest.mark.parametrize(
    ("src", "dst", "expected_ns"),
    [
        # Same leaf: links 0, 0; switch leaf.
        #   data after its first link: 1 x 25 + 2 x 10 + 300; ACK back: 2 x 1 + 2 x 10 + 300.
        (0, 1, (25 + 20 + 300) + (2 + 20 + 300)),
        # Same pod: links 0, 1, 1, 0; switches leaf, spine, leaf.
        #   data: 3 x 25 + (10 + 100 + 100 + 10) + (300 + 600 + 300)
        #   ACK:  4 x 1  + 220 + 1200
        (0, 2, (75 + 220 + 1200) + (4 + 220 + 1200)),
        # Across pods: links 0, 1, 2, 2, 1, 0; switches leaf, spine, core, spine, leaf.
        #   data: 5 x 25 + (2 x 10 + 2 x 100 + 2 x 1000) + (2 x 300 + 2 x 600 + 900)
        #   ACK:  6 x 1  + 2220 + 2700
        (0, 4, (125 + 2220 + 2700) + (6 + 2220 + 2700)),
    ],
    ids=["leaf", "pod", "core"],
)
def test_latency_is_store_and_forward_over_the_tiers(
    src: int, dst: int, expected_ns: float
) -> None:
    got = latency_s(three_tier(), MODEL, ROUND, [src], [dst])
    assert got[0] == pytest.approx(expected_ns * NS, rel=RTOL)
    assert DATA_NS == 25
    assert ACK_NS == 1


@pytest.mark.parametrize(
    ("changes", "expected_ns"),
    [
        # Completion when the last byte lands: the pod path's data part only.
        ({"completion_at_sender": False}, 75 + 220 + 1200),
        # One handshake round trip first: 2 x ACK one way (4 + 220 + 1200), then data and ACK.
        ({"handshake_rtts": 1.0}, 2 * 1424 + (75 + 220 + 1200) + 1424),
    ],
    ids=["last-byte", "handshake"],
)
def test_start_up_and_completion_point(changes: dict[str, Any], expected_ns: float) -> None:
    transport = Transport(**{**ROUND.__dict__, **changes})
    got = latency_s(three_tier(), MODEL, transport, [0], [2])
    assert got[0] == pytest.approx(expected_ns * NS, rel=RTOL)


def test_a_torus_counts_one_link_and_one_switch_per_hop() -> None:
    # 4 x 4 torus, one GPU a switch, 100 Gb/s; GPU 0 -> GPU 5 is switch (0,0) -> (1,1): 2 hops.
    fabric = torus_fabric(16, 1, (4, 4), 1, 1, 100.0)
    model = PathModel((5.0, 50.0), (100.0, 100.0), (200.0,))
    # data 1250 B at 100 Gb/s = 100 ns, ACK 50 B = 4 ns. Links: NIC, torus, torus, NIC;
    # switches: 3.  data: 3 x 100 + (5 + 50 + 50 + 5) + 3 x 200;  ACK: 4 x 4 + 110 + 600.
    expected_ns = (300 + 110 + 600) + (16 + 110 + 600)
    assert switch_hops(fabric, [0], [5]).tolist() == [2]
    got = latency_s(fabric, model, ROUND, [0], [5])
    assert got[0] == pytest.approx(expected_ns * NS, rel=RTOL)


@pytest.mark.parametrize("routing", list(Routing), ids=str)
def test_a_lone_flow_takes_bytes_over_goodput_plus_its_latency(routing: Routing) -> None:
    """One 1 MB flow across the pods: fluid 1e6 x 8 / 400 Gb/s = 20 µs, over goodput 0.8."""
    fabric = three_tier()
    traffic = traffic_patterns.point_to_point([0], [4], 1e6)
    fidelity = Fidelity(ROUND, MODEL)
    _, fluid, _, _, _ = run_traffic(fabric, traffic, routing, 1)
    total, times, _, _, _ = run_traffic(fabric, traffic, routing, 1, fidelity=fidelity)
    latency_ns = (125 + 2220 + 2700) + (6 + 2220 + 2700)
    assert fluid[0] == pytest.approx(20e-6, rel=RTOL)
    # GPU 0 only sends and GPU 4 only receives: one way, goodput 1000 / 1250.
    assert times[0] == pytest.approx(20e-6 / 0.8 + latency_ns * NS, rel=RTOL)
    assert total == times[0]


def test_a_permutation_pays_for_the_acks_on_its_nic_links() -> None:
    """Every GPU sends and receives: goodput 1000 / 1300, fluid time unchanged otherwise."""
    fabric = three_tier()
    traffic = traffic_patterns.random_permutation(fabric.gpus, 1e6, seed=3)
    phase = traffic.phases[0]
    fidelity = Fidelity(ROUND, MODEL)
    _, fluid, _, _, _ = run_traffic(fabric, traffic, Routing.SPRAY, 1)
    _, times, _, _, _ = run_traffic(fabric, traffic, Routing.SPRAY, 1, fidelity=fidelity)
    extra = latency_s(fabric, MODEL, ROUND, phase.src, phase.dst)
    # The queueing of each flow's last packet, assembled here from the routes and start rates.
    routes = route(fabric, phase.src, phase.dst, Routing.SPRAY, seed=1)
    rate = completion_times(routes, fabric.capacity_gbps, phase.size_bytes).initial_rate_gbps
    wait = queueing_s(
        routes.load(rate), routes.square_load(rate**2), fabric.capacity_gbps, ROUND.packet_bytes
    )
    wait[0 : 2 * fabric.gpus : 2] = 0.0
    queue = routes.path_sum(wait)
    assert queue.max() > 0  # fabric links carry several sprayed flows each
    np.testing.assert_allclose(times, fluid * 1300 / 1000 + extra + queue, rtol=RTOL)


def _lindley_mean_wait(streams: int, frame: float, frames: int = 300, seed: int = 0) -> float:
    """Mean wait of unit packets from ``streams`` periodic streams with random phases (FIFO)."""
    rng = np.random.default_rng(seed)
    waits = []
    for _ in range(max(20, 800 // streams)):  # few streams: the phases matter more
        phases = rng.uniform(0, frame, streams)
        arrivals = np.sort((phases[None, :] + frame * np.arange(frames)[:, None]).ravel())
        gaps = np.diff(arrivals)
        w = np.zeros(arrivals.size)
        for k in range(1, arrivals.size):
            w[k] = max(0.0, w[k - 1] + 1.0 - gaps[k - 1])
        waits.append(w[arrivals.size // 2 :].mean())
    return float(np.mean(waits))


@pytest.mark.slow
@pytest.mark.parametrize(("streams", "frame"), [(2, 2.0), (8, 8.0), (8, 10.0), (16, 16.0)])
def test_the_wait_is_that_of_a_simulated_nd_d1_queue(streams: int, frame: float) -> None:
    """N periodic streams, one packet per frame each: the wait (Benes' tail for the other N - 1
    streams) is what a FIFO queue fed by them gives, to 5 % (three simulations averaged; one
    alone varies by about that much)."""
    got = float(queue_wait_slots(np.array([streams / frame]), np.array([float(streams)]))[0])
    simulated = np.mean([_lindley_mean_wait(streams, frame, seed=s) for s in range(3)])
    assert got == pytest.approx(simulated, rel=0.05)


def test_a_lone_stream_never_waits_and_more_streams_wait_longer() -> None:
    waits = queue_wait_slots(np.ones(6), np.array([1.0, 2.0, 8.0, 64.0, 256.0, 1024.0]))
    assert waits[0] == 0.0
    assert waits[1] == pytest.approx(0.25, rel=1e-3)  # one other stream, half a slot, half the time
    assert np.all(np.diff(waits) > 0)
    assert benes_wait_slots(0, 10.0) == 0.0


def test_the_heavy_traffic_form_continues_the_exact_one() -> None:
    """Across ``EXACT_MAX_STREAMS`` the two forms of the wait agree to 3 % (saturated link)."""
    exact, heavy = queue_wait_slots(np.ones(2), np.array([257.0, 258.0]))
    assert heavy == pytest.approx(exact, rel=0.03)


def test_incast_senders_and_receiver_are_one_way() -> None:
    fidelity = Fidelity(ROUND, MODEL)
    src, dst = np.array([1, 2, 3]), np.array([0, 0, 0])
    assert fidelity.goodput(src, dst, src, dst).tolist() == pytest.approx([0.8] * 3, rel=RTOL)


def test_the_phase_time_is_its_slowest_packet_level_flow() -> None:
    """A flow within a leaf and one across pods, same bytes: the far one ends the phase."""
    fabric = three_tier()
    traffic = traffic_patterns.point_to_point([0, 8], [1, 4], 1e6)
    total, times, _, _, _ = run_traffic(
        fabric, traffic, Routing.SPRAY, 1, fidelity=Fidelity(ROUND, MODEL)
    )
    assert times[1] > times[0]
    assert total == times[1]


def test_an_inf_time_stays_inf() -> None:
    fidelity = Fidelity(ROUND, MODEL)
    got = fidelity.times_s(three_tier(), np.array([0]), np.array([4]), np.array([np.inf]))
    assert np.isinf(got[0])


def test_htsim_ndp_figures() -> None:
    # 64-byte headers on 4096: 4096 / 4160 alone, 4096 / 4224 with one 64-byte ACK back.
    assert HTSIM_NDP.goodput_fraction == pytest.approx(4096 / 4160, rel=RTOL)
    assert HTSIM_NDP.two_way_fraction == pytest.approx(4096 / 4224, rel=RTOL)


@pytest.mark.parametrize(
    "transport",
    [
        {"payload_bytes": 10},
        {"header_bytes": -1},
        {"pacing_fraction": 0},
        {"completion": "never"},
        {"mtu": 9000},
    ],
    ids=["tiny-payload", "negative-header", "no-pacing", "bad-completion", "unknown-field"],
)
def test_the_transport_table_is_strict(transport: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Verify.model_validate({"transport": transport})


def test_fidelity_is_packet_by_default_and_can_be_fluid() -> None:
    assert Verify().fidelity == "packet"
    assert Verify.model_validate({"fidelity": "fluid"}).fidelity == "fluid"
    with pytest.raises(ValidationError):
        Verify.model_validate({"fidelity": "exact"})


@pytest.mark.parametrize("kind", ["random_permutation", "all_reduce_ring"])
def test_packet_level_times_stay_above_the_ideal_and_the_bound(kind: str) -> None:
    """Both are divided by the goodput fraction, and stay lower bounds on the packet-level time."""
    from planner.api import plan, simulate
    from planner.schema.instance import Instance

    inst = Instance.model_validate(
        {
            "name": "packet-bound",
            "cluster": {"gpus": 64, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"pin": {"tiers": 2, "switch_models": "qm9700"}},
        }
    )
    design = plan(inst, alternatives=False, verify=False).design
    assert design is not None
    verify = Verify.model_validate(
        {
            "traffic": [{"kind": kind, "size_bytes": 1e7}],
            "single_switch_failures": False,
            "fidelity": "packet",
        }
    )
    rows = simulate(design, verify).collectives
    assert (rows["fraction_of_ideal"] <= 1).all()
    bounded = rows.filter(rows["fraction_of_bound"].is_not_null())
    assert bounded.height >= 1
    assert (bounded["fraction_of_bound"] <= 1).all()
