"""The scale-up domain (NVLink) beside the scale-out fabric, and NCCL's PXN.

The model. GPU g sits in scale-up domain ``g // D`` (D = ``ScaleUpDomain.gpus``: 8 in a DGX
H100, 72 in an NVL72 rack; domains are whole nodes, consecutive, the last one possibly partial).
Each domain is one non-blocking switch: GPU g reaches it by one link each way at
``gbps_per_gpu`` (``scale_up_fabric``), so a flow inside a domain is limited only by its
source's scale-up egress and its destination's scale-up ingress, never by a NIC, leaf or spine.
The domain is not split into planes: a scale-up flow carries its whole size on one link each
way, while the scale-out fabric is one of ``planes`` identical planes that each carry 1 / planes
of a flow (``planner.sim.phase_runs.run_phase``).

Every phase splits (``split_phase``) into

* scale-up flows: the flows inside a domain, and the first hop of every PXN flow;
* scale-out flows: the flows between domains, exactly as before, with a PXN flow's source
  replaced by its proxy.

PXN (NCCL's "PCI x NVLink"): a flow from GPU s to GPU d in another domain whose rails differ
(the rail of g is ``g % R``: R is the node's GPU count, its NIC index, unless the fabric sets its
own rail period ``Fabric.rails``, a rail-only fabric's rail groups inside a domain) goes s -> p
over the scale-up domain and p -> d over the scale-out fabric, where p = ``(s // R) * R + d % R``
is the GPU of s's node (or rail group) on d's rail. It is pipelined: both hops run at once in
the phase, and the flow ends when the slower hop ends. A fabric whose rails share no switch
(``Fabric.forced_pxn``: the rail-only family's) forces PXN on every cross-rail flow between
domains whatever ``Verify.pxn`` says: the direct path does not exist.

No domain is modelled (``scale_up_of`` returns None) when the domain holds one GPU, or when the
fabric's first switches are the chips' own routers (``NodeKind.ROUTER``: the switchless chip
tori of some families, where the chip's router IS the fabric and its links are
already the chips' only links).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.design import Design, ScaleUpDomain
from planner.sim.fabric import Fabric, IntArray, NodeKind
from planner.sim.routing_strategies import UP_DOWN
from planner.sim.traffic import NicRate, Phase, Traffic, busiest_s, check_nic_rate

#: Names of the scale-up fabric's node groups: its link class reads "gpu-nvswitch" in reports.
SCALE_UP_ROLES = ("gpu", "nvswitch")


def scale_up_fabric(gpus: int, domain_gpus: int, gbps_per_gpu: float) -> Fabric:
    """The scale-up domains as one small fabric: the GPUs and one non-blocking switch per domain.

    Nodes: GPUs ``0 .. gpus-1``, then ``ceil(gpus / D)`` switches (``NodeKind.SCALE_UP_SWITCH``).
    Physical link g joins GPU g to switch ``gpus + g // D`` at ``gbps_per_gpu`` each way (its
    up direction is the GPU's scale-up egress, its down direction its ingress), one plane.

    Raises
    ------
    ValueError
        If a size or the speed is not positive.
    """
    if gpus < 1 or domain_gpus < 1 or not gbps_per_gpu > 0:
        raise ValueError(
            f"a scale-up fabric needs gpus, domain_gpus and gbps_per_gpu > 0; got {gpus}, "
            f"{domain_gpus}, {gbps_per_gpu}"
        )
    domains = -(-gpus // domain_gpus)
    gpu = np.arange(gpus, dtype=np.int64)
    return Fabric(
        gpus=gpus,
        planes=1,
        link_speed_gbps=float(gbps_per_gpu),
        tier_offsets=(0, gpus, gpus + domains),
        lower=gpu,
        upper=gpus + gpu // domain_gpus,
        link_class=np.zeros(gpus, dtype=np.int64),
        alive=np.ones(2 * gpus, dtype=bool),
        roles=SCALE_UP_ROLES,
        strategy=UP_DOWN,
        group_kinds=(NodeKind.GPU, NodeKind.SCALE_UP_SWITCH),
    )


@dataclass(frozen=True)
class Split:
    """One phase split into its scale-out and scale-up flows (``split_phase``).

    ``out_flow[i]`` is the phase's flow that scale-out flow i carries, ``up_flow[j]`` the one
    scale-up flow j carries; a flow appears in one of them, or in both when it takes PXN.
    Both sub-phases keep the phase's ``repeat`` and every flow its whole size.
    """

    scale_out: Phase
    scale_up: Phase
    out_flow: IntArray
    up_flow: IntArray
    flows: int
    """Flows of the phase split."""
    out_origin: IntArray
    """The GPU whose data each scale-out flow carries: its source, or for a PXN flow the flow's
    own source rather than the proxy that sends it."""

    @property
    def pxn_flows(self) -> int:
        """Flows sent over their proxy (in both sub-phases)."""
        return self.out_flow.size + self.up_flow.size - self.flows


def split_phase(phase: Phase, gpus: int, domain_gpus: int, gpus_per_node: int, pxn: bool) -> Split:
    """Split a phase into scale-up and scale-out flows, PXN flows into both.

    With s, d a flow's ends, ``dom(g) = g // domain_gpus`` and the proxy
    ``p = (s // gpus_per_node) * gpus_per_node + d % gpus_per_node``:

    * inside  = dom(s) == dom(d):                                 s -> d on the scale-up domain;
    * relayed = pxn and not inside and p != s and dom(p) == dom(s) and p < gpus:
                                               s -> p on the scale-up domain, p -> d scale-out;
    * otherwise:                                                   s -> d on the scale-out fabric.

    (p == s when the rails already match; p is in s's node, so in its domain whenever domains
    are whole nodes.)
    """
    src, dst, size = phase.src, phase.dst, phase.size_bytes
    inside = src // domain_gpus == dst // domain_gpus
    proxy = (src // gpus_per_node) * gpus_per_node + dst % gpus_per_node
    relayed = (
        ~inside
        & (proxy != src)
        & (proxy // domain_gpus == src // domain_gpus)
        & (proxy < gpus)
        & pxn
    )
    out_flow = np.flatnonzero(~inside)
    up_flow = np.flatnonzero(inside | relayed)
    scale_out = Phase(
        np.where(relayed, proxy, src)[out_flow],
        dst[out_flow],
        size[out_flow],
        phase.repeat,
        None if phase.flow_id is None else phase.flow_id[out_flow],
    )
    scale_up = Phase(
        src[up_flow], np.where(relayed, proxy, dst)[up_flow], size[up_flow], phase.repeat
    )
    return Split(scale_out, scale_up, out_flow, up_flow, phase.flows, src[out_flow])


@dataclass(frozen=True)
class ScaleUp:
    """The scale-up domain a simulation runs beside its scale-out fabric."""

    fabric: Fabric
    """The domains as a fabric (``scale_up_fabric``): one plane at the scale-up rate."""
    domain_gpus: int
    gpus_per_node: int
    """The rail period R (the rail of g is g % R): the node's GPUs, or ``Fabric.rails``."""
    pxn: bool
    """Cross-rail flows between domains take PXN (``Verify.pxn``, or forced by a rail-only
    scale-out fabric)."""
    forced: bool = False
    """PXN is on because the scale-out fabric is rail-only, not because it was asked for."""
    splits: dict[int, tuple[Phase, Split]] = field(default_factory=dict, compare=False, repr=False)
    """Per phase, by id, the phase and its split (kept with it, so the id stays its own)."""
    runs: dict[int, Any] = field(default_factory=dict, compare=False, repr=False)
    """Per scale-up sub-phase, by id, the run ``planner.sim.simulate`` made of it: no routing,
    seed or scale-out failure changes it, so it is simulated once."""

    @property
    def gbps_per_gpu(self) -> float:
        """Scale-up rate of one GPU, each way, Gb/s."""
        return float(self.fabric.link_speed_gbps)

    def split(self, phase: Phase) -> Split:
        """The phase's split (``split_phase``), computed once per phase."""
        entry = self.splits.get(id(phase))
        if entry is None or entry[0] is not phase:
            s = split_phase(phase, self.fabric.gpus, self.domain_gpus, self.gpus_per_node, self.pxn)
            entry = (phase, s)
            self.splits[id(phase)] = entry
        return entry[1]


def scale_up_of(design: Design, fabric: Fabric, pxn: bool) -> ScaleUp | None:
    """The design's scale-up domain beside ``fabric`` (``scale_up_for``)."""
    return scale_up_for(fabric, design.scale_up, design.gpus_per_node, pxn)


def scale_up_for(
    fabric: Fabric, domain: ScaleUpDomain, gpus_per_node: int, pxn: bool
) -> ScaleUp | None:
    """A scale-up domain beside ``fabric``, or None when there is none to model.

    None when the domain holds one GPU, or when the fabric's switches are the chips' routers
    (``NodeKind.ROUTER``, the switchless ``ocs_torus`` chip tori): there the scale-out fabric is
    all the chip has and the simulation runs as it did without a domain. PXN is on when ``pxn``
    asks for it or the fabric's rails share no switch (``Fabric.forced_pxn``). The rail period is the
    fabric's (``Fabric.rails``) when it sets one, else ``gpus_per_node``.
    """
    if domain.gpus <= 1 or NodeKind.ROUTER in (fabric.group_kinds or ()):
        return None
    return ScaleUp(
        scale_up_fabric(fabric.gpus, domain.gpus, domain.gbps_per_gpu),
        domain.gpus,
        fabric.rails or gpus_per_node,
        pxn or fabric.forced_pxn,
        forced=fabric.forced_pxn and not pxn,
    )


def split_ideal_s(
    split: Split, gpus: int, nic_gbps: NicRate, gbps_per_gpu: float
) -> tuple[float, float]:
    """One repetition of a split phase at full rate: (its scale-out part, its scale-up part), s.

    scale-out = max_g max(out_g, in_g) * 8 / nic rate over the inter-domain flows, each counted
                at its own ends (``Split.out_origin``, not a PXN proxy: where PXN piles several
                GPUs' data on one proxy's NIC, that is PXN's cost, not the GPU's ideal);
    scale-up  = max_g max(out_g, in_g) * 8 / scale-up rate over the scale-up flows, PXN first
                hops included;
    ``nic_gbps`` is a GPU's NIC rate over all its planes (or each GPU's).
    """
    out, up = split.scale_out, split.scale_up
    return (
        busiest_s(split.out_origin, out.dst, out.size_bytes, gpus, nic_gbps),
        busiest_s(up.src, up.dst, up.size_bytes, gpus, gbps_per_gpu),
    )


def ideal_time_s(
    traffic: Traffic, scale_up: ScaleUp, nic_gbps: NicRate, nic_goodput_fraction: float = 1.0
) -> float:
    """Completion time if every GPU used its full NIC and scale-up rates, with no contention.

    ``Σ_phases repeat · max(T_out / goodput, T_up)`` with ``(T_out, T_up) = split_ideal_s``:
    each GPU's own inter-domain bytes (out and in, at the flows' own ends) at its NIC rate and
    its scale-up bytes (out and in, PXN hops included) at its scale-up rate, the two running at
    once. The NIC part does not depend on PXN: a random permutation whose PXN proxies gather
    several GPUs' data shows that cost as a fraction of ideal below 1. ``nic_goodput_fraction`` (packet fidelity) is the share of the NIC rate that carries
    payload; the scale-up part is fluid.

    Raises
    ------
    ValueError
        If ``nic_gbps`` is not positive or a GPU id is at or above the fabric's GPUs.
    """
    check_nic_rate(nic_gbps)
    gpus = scale_up.fabric.gpus
    total = 0.0
    for phase in traffic.phases:
        if phase.flows and max(int(phase.src.max()), int(phase.dst.max())) >= gpus:
            raise ValueError(f"traffic {traffic.name!r} uses a GPU id at or above gpus ({gpus})")
        out_s, up_s = split_ideal_s(scale_up.split(phase), gpus, nic_gbps, scale_up.gbps_per_gpu)
        total += max(out_s / nic_goodput_fraction, up_s) * phase.repeat
    return total


def joined_times_s(
    split: Split,
    out_flows: IntArray,
    out_times_s: np.ndarray,
    up_flows: IntArray,
    up_times_s: np.ndarray,
) -> np.ndarray:
    """Completion time of every flow whose parts were all timed: the later of its parts.

    ``out_flows`` / ``up_flows`` index the scale-out / scale-up sub-phase (all of it, or the
    sample a streamed part timed), ``*_times_s`` their times. A flow comes out, in the phase's
    order, when each of its parts is among the timed ones (a PXN flow whose scale-out hop fell
    outside a streamed sample is left out rather than timed by its scale-up hop alone).
    """
    m = split.flows
    need = np.bincount(split.out_flow, minlength=m) + np.bincount(split.up_flow, minlength=m)
    ids_out, ids_up = split.out_flow[out_flows], split.up_flow[up_flows]
    have = np.bincount(ids_out, minlength=m) + np.bincount(ids_up, minlength=m)
    full = np.zeros(m)
    np.maximum.at(full, ids_out, out_times_s)
    np.maximum.at(full, ids_up, up_times_s)
    return np.asarray(full[(have == need) & (need > 0)], dtype=np.float64)
