"""The scale-up domain (NVLink) beside the scale-out fabric, and PXN (``planner.sim.scale_up``).

Closed forms, with S the nccl-tests size per rank, n the ranks of a group, D the GPUs of a
domain, R the rails (GPUs of a node), B = 8 bits a byte, U the scale-up rate of a GPU and N its
NIC rate over all planes:

* ring all-reduce inside a domain: 2(n-1) steps of S/n per GPU, each on the GPU's own scale-up
  egress:  T = 2(n-1) * S/n * B / U, and zero bytes on any NIC, leaf or spine;
* all-to-all over one group of n GPUs in n/D domains: each GPU sends S/n to each peer, D-1 of
  them in its domain and n-D outside:  T_up = (D-1) S/n B / U,  T_out = (n-D) S/n B / N, on a
  fabric whose only limits are the GPUs' links.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from planner.api import plan, simulate
from planner.design import ScaleUpDomain
from planner.families.torus.fabric import torus_fabric
from planner.schema.instance import Instance
from planner.schema.verify import Verify
from planner.sim import collectives, gpu_groups, traffic_patterns
from planner.sim import traffic as tr
from planner.sim.fabric import Fabric, NodeKind
from planner.sim.phase_runs import run_traffic
from planner.sim.routing import Routing, route
from planner.sim.routing_strategies import UP_DOWN
from planner.sim.scale_up import (
    ScaleUp,
    ideal_time_s,
    scale_up_fabric,
    scale_up_for,
    split_phase,
)
from planner.sim.simulate import bound_time_s

#: Relative tolerance on times with a closed form (fluid, max-min fair: exact up to float noise).
TIME_RTOL = 1e-9
#: Scale-up rate of a GPU, Gb/s (NVLink 4: 900 GB/s).
NVLINK_GBPS = 7200.0
#: NIC rate of a GPU over all its planes, Gb/s.
NIC_GBPS = 400.0
#: Bits per byte, and Gb/s to b/s.
BITS = 8.0
GIGA = 1e9


def rail_fabric(
    gpus: int, rails: int, *, spine: bool = True, planes: int = 1, nic_gbps: float = NIC_GBPS
) -> Fabric:
    """One plane of a rail fabric by hand: leaf r holds every GPU of rail r (g % rails == r).

    With ``spine``, one spine joins the leaves (one link each at ``rails`` times the NIC speed:
    never a bottleneck), the only place rails meet. Without, the rails are disjoint one-tier
    fabrics and the fabric is rail-only. Each plane carries ``nic_gbps / planes``.
    """
    speed = nic_gbps / planes
    gpu = np.arange(gpus, dtype=np.int64)
    leaf = gpus + np.arange(rails, dtype=np.int64)
    lower, upper, cls = [gpu], [gpus + gpu % rails], [np.zeros(gpus, dtype=np.int64)]
    offsets: tuple[int, ...] = (0, gpus, gpus + rails)
    roles: tuple[str, ...] = ("gpu", "leaf")
    if spine:
        lower.append(leaf)
        upper.append(np.full(rails, gpus + rails, dtype=np.int64))
        cls.append(np.ones(rails, dtype=np.int64))
        offsets += (gpus + rails + 1,)
        roles += ("spine",)
    low = np.concatenate(lower)
    return Fabric(
        gpus=gpus,
        planes=planes,
        link_speed_gbps=speed,
        tier_offsets=offsets,
        lower=low,
        upper=np.concatenate(upper),
        link_class=np.concatenate(cls),
        alive=np.ones(2 * low.size, dtype=bool),
        strategy=UP_DOWN,
        roles=roles,
        class_speed_gbps=(speed, speed * rails) if spine else None,
        forced_pxn=not spine,
    )


def domain(
    fabric: Fabric, gpus_per_node: int, domain_gpus: int | None = None, pxn: bool = False
) -> ScaleUp:
    """The scale-up domain beside a hand-built fabric (one node a domain unless told)."""
    found = scale_up_for(
        fabric, ScaleUpDomain(domain_gpus or gpus_per_node, NVLINK_GBPS), gpus_per_node, pxn
    )
    assert found is not None
    return found


# ---- the split -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "dst", "pxn", "out_pair", "up_pair"),
    [
        (1, 6, False, None, (1, 6)),  # same domain: scale-up only
        (1, 9, False, (1, 9), None),  # other domain, same rail: scale-out only
        (1, 10, False, (1, 10), None),  # cross-rail without PXN: direct
        (1, 10, True, (2, 10), (1, 2)),  # PXN: 1 -> proxy 2 (rail 2 of node 0) -> 10
        (1, 9, True, (1, 9), None),  # same rail: PXN changes nothing
        (15, 3, True, (11, 3), (15, 11)),  # proxy 11 = node 1's GPU on rail 3
    ],
)
def test_split_places_each_flow(
    src: int,
    dst: int,
    pxn: bool,
    out_pair: tuple[int, int] | None,
    up_pair: tuple[int, int] | None,
) -> None:
    phase = tr.Phase(np.array([src]), np.array([dst]), np.array([1.0]))
    s = split_phase(phase, gpus=16, domain_gpus=8, gpus_per_node=8, pxn=pxn)
    got_out = (int(s.scale_out.src[0]), int(s.scale_out.dst[0])) if s.scale_out.flows else None
    got_up = (int(s.scale_up.src[0]), int(s.scale_up.dst[0])) if s.scale_up.flows else None
    assert (got_out, got_up) == (out_pair, up_pair)
    assert s.pxn_flows == int(out_pair is not None and up_pair is not None)


def test_the_domain_fabric_is_one_switch_per_domain() -> None:
    f = scale_up_fabric(20, 8, NVLINK_GBPS)  # the last domain holds 4 GPUs
    assert f.switches == 3
    assert f.planes == 1
    assert f.class_name(0) == "gpu-nvswitch"
    assert f.leaf_of(np.array([0, 7, 8, 19])).tolist() == [20, 20, 21, 22]
    assert set(f.node_kind[20:].tolist()) == {NodeKind.SCALE_UP_SWITCH}
    assert np.all(f.capacity_gbps == NVLINK_GBPS)


@pytest.mark.parametrize(
    ("fabric", "domain_gpus", "modelled"),
    [
        (rail_fabric(16, 8), 8, True),
        (rail_fabric(16, 8), 1, False),  # a domain of one GPU: nothing to model
        (  # a switchless chip torus: the chip's router is the fabric
            torus_fabric(8, 1, (2, 2, 2), 1, 1, 100.0, switch_kind=NodeKind.ROUTER),
            8,
            False,
        ),
        (torus_fabric(16, 1, (2,), 8, 1, 100.0), 8, True),  # a torus of packet switches
    ],
)
def test_the_domain_is_skipped_where_the_chip_is_the_fabric(
    fabric: Fabric, domain_gpus: int, modelled: bool
) -> None:
    found = scale_up_for(fabric, ScaleUpDomain(domain_gpus, NVLINK_GBPS), 8, pxn=False)
    assert (found is not None) is modelled


# ---- inside one domain -----------------------------------------------------------------------


@pytest.mark.parametrize("size_bytes", [1e6, 2**30])
@pytest.mark.parametrize("routing", [Routing.ECMP, Routing.SPRAY])
def test_all_reduce_inside_a_node_rides_nvlink_only(size_bytes: float, routing: Routing) -> None:
    gpus, n = 32, 8
    fabric = rail_fabric(gpus, 8)
    su = domain(fabric, 8)
    t = collectives.ring_all_reduce(gpu_groups.consecutive_groups(gpus, n), size_bytes)
    total, times, cut, util, exact = run_traffic(
        fabric, t, routing, 0, with_utilisation=True, scale_up=su
    )
    closed = 2 * (n - 1) * size_bytes / n * BITS / (NVLINK_GBPS * GIGA)
    assert total == pytest.approx(closed, rel=TIME_RTOL)
    assert util is not None
    assert np.all(util[: fabric.links] == 0.0)  # no NIC, leaf or spine carries a byte
    egress = util[fabric.links :][0::2]
    assert egress == pytest.approx(np.ones(gpus), rel=TIME_RTOL)  # every GPU at its NVLink rate
    assert (cut, exact) == (0, True)
    assert ideal_time_s(t, su, NIC_GBPS) == pytest.approx(closed, rel=TIME_RTOL)


def test_without_a_domain_the_same_all_reduce_uses_the_nics() -> None:
    gpus, n, size = 32, 8, 2**30
    fabric = rail_fabric(gpus, 8)
    t = collectives.ring_all_reduce(gpu_groups.consecutive_groups(gpus, n), size)
    total, *_ = run_traffic(fabric, t, Routing.SPRAY, 0)
    assert total == pytest.approx(2 * (n - 1) * size / n * BITS / (NIC_GBPS * GIGA), rel=TIME_RTOL)


# ---- across domains --------------------------------------------------------------------------


@pytest.mark.parametrize("planes", [1, 2])
@pytest.mark.parametrize("routing", [Routing.ECMP, Routing.SPRAY])
def test_all_to_all_over_two_domains_splits_its_bytes(planes: int, routing: Routing) -> None:
    n, d, size = 16, 8, 2**28
    fabric = rail_fabric(n, 8, planes=planes)  # the NIC is N over all planes: N / planes each
    su = domain(fabric, 8)
    t = collectives.all_to_all(np.arange(n)[np.newaxis, :], size)
    _, times, cut, _, _ = run_traffic(fabric, t, routing, 0, scale_up=su)
    phase = t.phases[0]
    inside = phase.src // d == phase.dst // d
    t_up = (d - 1) * size / n * BITS / (NVLINK_GBPS * GIGA)  # not split into planes
    t_out = (n - d) * size / n * BITS / (NIC_GBPS * GIGA)  # N over all planes together
    assert times[inside] == pytest.approx(np.full(int(inside.sum()), t_up), rel=TIME_RTOL)
    assert times[~inside] == pytest.approx(np.full(int((~inside).sum()), t_out), rel=TIME_RTOL)
    assert cut == 0
    assert ideal_time_s(t, su, NIC_GBPS) == pytest.approx(max(t_up, t_out), rel=TIME_RTOL)


@pytest.mark.parametrize("routing", [Routing.ECMP, Routing.SPRAY])
def test_a_streamed_scale_out_part_keeps_the_closed_form(routing: Routing) -> None:
    """64 GPUs in 8 domains: 3,584 flows between domains, streamed above 1,000 (their time is
    exact: equal flows), and 448 inside, re-shared flow by flow."""
    n, d, size = 64, 8, 2**28
    fabric = rail_fabric(n, 8)
    su = domain(fabric, 8)
    t = collectives.all_to_all(np.arange(n)[np.newaxis, :], size)
    notes: list[str] = []
    total, times, cut, _, exact = run_traffic(
        fabric, t, routing, 0, scale_up=su, max_flows=1_000, notes=notes
    )
    t_up = (d - 1) * size / n * BITS / (NVLINK_GBPS * GIGA)
    t_out = (n - d) * size / n * BITS / (NIC_GBPS * GIGA)
    assert total == pytest.approx(max(t_up, t_out), rel=TIME_RTOL)
    assert (cut, exact) == (0, True)
    assert len(notes) == 1
    assert "3,584 flows" in notes[0]
    assert times.max() <= total * (1 + TIME_RTOL)  # the sample's bounds, and the inside flows


def test_the_bound_is_the_slower_part() -> None:
    n, d, size = 16, 8, 2**28
    fabric = rail_fabric(n, 8)
    su = domain(fabric, 8)
    t = collectives.all_to_all(np.arange(n)[np.newaxis, :], size)
    t_up = (d - 1) * size / n * BITS / (NVLINK_GBPS * GIGA)
    t_out = (n - d) * size / n * BITS / (NIC_GBPS * GIGA)
    bound = bound_time_s(fabric, t, 1_000_000, su)
    assert bound == pytest.approx(max(t_up, t_out), rel=1e-6)


# ---- PXN -------------------------------------------------------------------------------------


def spine_bytes(fabric: Fabric, su: ScaleUp | None, phase: tr.Phase) -> float:
    """Bytes climbing from the leaves to the spine (each cross-rail flow climbs once)."""
    out = phase if su is None else su.split(phase).scale_out
    routes = route(fabric, out.src, out.dst, Routing.SPRAY)
    load = routes.load(out.size_bytes)
    return float(load[(fabric.directed_class == 1) & (np.arange(fabric.links) % 2 == 0)].sum())


@pytest.mark.parametrize("rails", [2, 4])
def test_pxn_keeps_cross_rail_bytes_off_the_spine(rails: int) -> None:
    nodes, size = 4, 2**26
    gpus = nodes * rails
    fabric = rail_fabric(gpus, rails)
    t = collectives.all_to_all(np.arange(gpus)[np.newaxis, :], size)
    phase = t.phases[0]
    inter = float(phase.size_bytes[phase.src // rails != phase.dst // rails].sum())
    without, with_pxn = domain(fabric, rails), domain(fabric, rails, pxn=True)
    # Without PXN the cross-rail (R-1)/R of the inter-domain bytes crosses the spine.
    assert spine_bytes(fabric, without, phase) == pytest.approx((rails - 1) / rails * inter)
    assert spine_bytes(fabric, with_pxn, phase) == 0.0
    _, _, cut, util, _ = run_traffic(
        fabric, t, Routing.SPRAY, 0, with_utilisation=True, scale_up=with_pxn
    )
    assert util is not None
    assert np.all(util[: fabric.links][fabric.directed_class == 1] == 0.0)
    assert cut == 0


@pytest.mark.parametrize("rails", [2, 4])
def test_pxn_times_are_the_later_hop(rails: int) -> None:
    """PXN all-to-all over nodes of R GPUs (one node a domain) on a rail fabric, per hop.

    Scale-out: proxy p on rail r sends the flows of its node's R GPUs to the rail-r GPUs of the
    other nodes, and GPU d receives one flow from each GPU of the other nodes through its rails'
    proxies: (nodes-1) R flows of S/n out and in, T_out = (nodes-1) R S/n B / N. Scale-up: GPU s
    sends to its R-1 node peers and hands (nodes-1)(R-1) flows to its R-1 proxies, and receives
    as many: T_up = nodes (R-1) S/n B / U. Both hops run at once: T = max(T_out, T_up).
    """
    nodes, size = 4, 2**26
    gpus = nodes * rails
    fabric = rail_fabric(gpus, rails)
    su = domain(fabric, rails, pxn=True)
    t = collectives.all_to_all(np.arange(gpus)[np.newaxis, :], size)
    total, _, _, _, _ = run_traffic(fabric, t, Routing.SPRAY, 0, scale_up=su)
    flow = size / gpus
    t_out = (nodes - 1) * rails * flow * BITS / (NIC_GBPS * GIGA)
    t_up = (rails - 1) * nodes * flow * BITS / (NVLINK_GBPS * GIGA)
    assert total == pytest.approx(max(t_out, t_up), rel=TIME_RTOL)
    assert ideal_time_s(t, su, NIC_GBPS) == pytest.approx(max(t_out, t_up), rel=TIME_RTOL)


@pytest.mark.parametrize("rails", [2, 4])
def test_a_rail_only_fabric_forces_pxn(rails: int) -> None:
    nodes, size = 4, 2**26
    gpus = nodes * rails
    fabric = rail_fabric(gpus, rails, spine=False)
    t = collectives.all_to_all(np.arange(gpus)[np.newaxis, :], size)
    phase = t.phases[0]
    cross_rail = phase.src % rails != phase.dst % rails
    su = domain(fabric, rails, pxn=False)
    assert su.pxn
    assert su.forced
    total, _, cut, _, _ = run_traffic(fabric, t, Routing.SPRAY, 0, scale_up=su)
    assert cut == 0
    assert np.isfinite(total)
    # Without the domain no cross-rail flow has a path, inside a node or between nodes.
    alone, _, cut_alone, _, _ = run_traffic(fabric, t, Routing.SPRAY, 0)
    assert cut_alone == int(cross_rail.sum())
    assert alone == np.inf


# ---- a design, end to end --------------------------------------------------------------------


def small_design(**cluster: Any) -> Any:
    data: dict[str, Any] = {
        "name": "scale-up",
        "cluster": {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1], **cluster},
        "search": {"pin": {"tiers": 2}},
    }
    d = plan(Instance.model_validate(data), alternatives=False, verify=False).design
    assert d is not None
    return d


ALL_REDUCE_IN_NODES = {
    "kind": "all_reduce_ring",
    "groups": "consecutive",
    "group_size": 8,
    "size_bytes": 2**30,
}


@pytest.mark.parametrize("fidelity", ["fluid", "packet"])
@pytest.mark.parametrize("routing", ["ecmp", "spray"])
def test_design_links_table_shows_the_domain(routing: str, fidelity: str) -> None:
    """Packet fidelity models the scale-out transport: the NVLink part stays fluid."""
    d = small_design()
    sim = simulate(
        d,
        Verify.model_validate(
            {
                "routing": [routing],
                "verdict_routing": routing,
                "traffic": [ALL_REDUCE_IN_NODES],
                "single_switch_failures": False,
                "bound_max_variables": 0,
                "fidelity": fidelity,
            }
        ),
    )
    links = sim.links
    scale_up = links.filter(links["tier"] == "gpu-nvswitch")
    scale_out = links.filter(links["tier"] != "gpu-nvswitch")
    assert sorted(scale_up["direction"].to_list()) == ["down", "up"]
    assert scale_up["max_utilisation"].to_list() == pytest.approx([1.0, 1.0], rel=TIME_RTOL)
    assert scale_out.height > 0
    assert scale_out["max_utilisation"].to_list() == [0.0] * scale_out.height
    n, size = 8, 2**30
    closed = 2 * (n - 1) * size / n * BITS / (d.scale_up.gbps_per_gpu * GIGA)
    row = sim.collectives.row(0, named=True)
    assert row["time_s"] == pytest.approx(closed, rel=TIME_RTOL)
    assert row["fraction_of_ideal"] == pytest.approx(1.0, rel=TIME_RTOL)


def test_the_ideal_counts_a_gpus_own_nic_not_its_proxy() -> None:
    """GPUs 0 and 1 of node 0 send S to rail-2 GPUs of nodes 1 and 2 (R = 4): with PXN both flows
    leave through proxy 2's NIC, T = 2 S B / N, while each GPU's own ideal is S B / N."""
    rails, size = 4, 2**26
    fabric = rail_fabric(3 * rails, rails)
    su = domain(fabric, rails, pxn=True)
    t = traffic_patterns.point_to_point(np.array([0, 1]), np.array([6, 10]), size)
    total, _, cut, _, _ = run_traffic(fabric, t, Routing.SPRAY, 0, scale_up=su)
    one_s = size * BITS / (NIC_GBPS * GIGA)
    assert total == pytest.approx(2 * one_s, rel=TIME_RTOL)
    assert ideal_time_s(t, su, NIC_GBPS) == pytest.approx(one_s, rel=TIME_RTOL)
    assert cut == 0
