"""A packet's way priced hop by hop from each link's own class (``planner.sim.path_latency``).

Off up-down fabrics the hop count does not say which link classes a path crosses. A dragonfly's
local links are class 1 and its global links class 2: with a global link 100 times slower than
a local one, a minimal route between groups must cost one global link and up to two local ones,
a Valiant route two global links and up to three local ones (it pays for the intermediate
group's local hop too), a route inside a group one local link. Pricing every hop as class 1
(the torus assumption this replaced) gave at most three local links.
"""

from __future__ import annotations

import numpy as np
import pytest

from models.dragonfly import structure as st
from planner.families.dragonfly.routing import routed_plane
from planner.families.dragonfly.wiring import DragonflyWiring
from planner.families.torus.fabric import torus_fabric
from planner.schema.verify import TransportSpec
from planner.sim.fabric import Fabric
from planner.sim.packet import PathModel, Transport, latency_s, switch_hops
from planner.sim.path_latency import routed_crossings
from planner.sim.routing_strategies import is_valley_free

LOCAL_NS = 100.0
GLOBAL_NS = 10_000.0
#: Serialisation made negligible: every link this fast (Gb/s).
FAST_GBPS = 1e12
#: Slack on sums of latencies (ns).
NS_TOL = 1e-6

WIRING = DragonflyWiring(2, 4, 9, 1, 1, st.MINIMAL, st.BLOCKS)


def _plane(routing: str) -> Fabric:
    gpus = WIRING.gpus_per_switch * WIRING.switches_per_group * WIRING.groups
    return routed_plane(WIRING, gpus, 400.0, routing)


def _switch_pairs(fabric: Fabric) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ordered pair of distinct switches, and whether they share a group."""
    first = fabric.first_switch
    switches = np.arange(first, fabric.nodes)
    a, b = np.meshgrid(switches, switches, indexing="ij")
    keep = a != b
    a, b = a[keep], b[keep]
    per_group = WIRING.switches_per_group
    same = (a - first) // per_group == (b - first) // per_group
    return a, b, same


#: Per link class (GPU link, local, global) and per node group (GPUs, switches).
CLASS_NS = np.array([0.0, LOCAL_NS, GLOBAL_NS])
GROUP_NS = np.zeros(2)


@pytest.mark.parametrize(
    ("routing", "globals_", "most_locals"), [(st.MINIMAL, 1, 2), (st.VALIANT, 2, 3)]
)
def test_a_global_hop_is_priced_as_a_global_link(
    routing: str, globals_: int, most_locals: int
) -> None:
    fabric = _plane(routing)
    assert not is_valley_free(fabric)
    a, b, same = _switch_pairs(fabric)
    crossed = routed_crossings(fabric, a, b, CLASS_NS, GROUP_NS)
    assert crossed.reached.all()
    ns = crossed.ns(CLASS_NS, GROUP_NS)
    np.testing.assert_array_equal(crossed.links[:, 2][~same], globals_)
    across = ns[~same]
    assert np.isfinite(ns).all()
    assert (across >= globals_ * GLOBAL_NS - NS_TOL).all()
    assert (across <= globals_ * GLOBAL_NS + most_locals * LOCAL_NS + NS_TOL).all()
    # Whole local hops on top of the global ones.
    locals_ = (across - globals_ * GLOBAL_NS) / LOCAL_NS
    np.testing.assert_allclose(locals_, np.round(locals_), atol=1e-9)
    if routing == st.MINIMAL:  # inside a group: one local link, all switches being joined
        np.testing.assert_allclose(ns[same], LOCAL_NS)


def test_the_packet_model_prices_a_dragonfly_flow_by_its_links() -> None:
    """End to end through ``latency_s``: a flow between groups pays its global link."""
    fabric = _plane(st.MINIMAL)
    model = PathModel(
        class_latency_ns=(0.0, LOCAL_NS, GLOBAL_NS),
        class_speed_gbps=(FAST_GBPS,) * 3,
        switch_latency_ns=(0.0,),
    )
    transport = Transport.from_spec(TransportSpec(name="rocev2"))
    per_group = WIRING.gpus_per_switch * WIRING.switches_per_group
    src = np.array([0, 0])
    dst = np.array([2, per_group])  # the next switch of the group; the next group
    inside, across = latency_s(fabric, model, transport, src, dst) * 1e9
    handshakes = transport.handshake_rtts * 2 + (1 if transport.completion_at_sender else 0) + 1
    assert across - inside >= handshakes * (GLOBAL_NS - LOCAL_NS) - NS_TOL


def test_a_torus_hop_costs_what_the_hop_count_said() -> None:
    """On a torus every switch link is class 1: walking the path gives hops x (link + switch)."""
    fabric = torus_fabric(24, 1, (4, 3), 2, 1, 400.0)
    assert fabric.dims
    model = PathModel((5.0, 70.0), (FAST_GBPS, FAST_GBPS), (300.0,))
    gpus = np.arange(fabric.first_switch)
    rng = np.random.default_rng(3)
    src, dst = gpus, rng.permutation(gpus)
    transport = Transport.from_spec(TransportSpec(name="rocev2"))
    got = latency_s(fabric, model, transport, src, dst)
    hops = np.maximum(switch_hops(fabric, src, dst), 0)
    one_way = 2 * 5.0 + 300.0 + hops * (70.0 + 300.0)
    rounds = transport.handshake_rtts * 2 + (1 if transport.completion_at_sender else 0) + 1
    np.testing.assert_allclose(got * 1e9, rounds * one_way, rtol=1e-9)
