"""Packet-level fidelity: what a flow's completion time adds to bytes over its max-min rate.

The flow model (``planner.sim.flow``) gives every flow a max-min fair rate over the links'
capacities and re-shares at each completion: an ideal fluid. A real transport moves packets, and
its flow completion time (FCT) is

    FCT = start-up + fluid time / goodput fraction + pipeline latency (+ return of the last ACK)

* **Goodput.** Every packet of ``payload_bytes`` costs ``payload_bytes + header_bytes`` on the
  wire, and a transport may pace below line rate (``pacing_fraction``), so payload moves at
  ``g = payload / (payload + header) x pacing`` of what the fluid gives. Max-min rates scale
  linearly with capacities, so re-sharing with every capacity times g gives every completion
  time divided by g: the fluid part is the ideal time over g, exactly, when g is the same for
  every flow.
* **Control packets the other way.** A receiver returns ``acks_per_packet`` packets of
  ``ack_bytes`` per data packet. When a GPU both sends and receives (a permutation, an
  all-to-all, a ring), its NIC link carries its own data one way and the ACKs of the flow it
  receives the same way, so a flow whose source also receives, or whose destination also
  sends, moves payload at ``payload / (payload + header) x min(pacing, packet / (packet +
  acks_per_packet x ack_bytes))`` (``Transport.two_way_fraction``). Only the NIC links are
  looked at: on a fabric that is not the bottleneck they decide; ACKs that share a congested
  fabric link with data are left out.
* **Pipeline latency.** The fluid time ends when the last byte leaves the first link; that last
  packet then crosses the path store-and-forward: one serialisation of a full packet on every
  link after the first, plus the one-way latency of every link (media electronics and
  propagation over its length) and every switch crossed (the tier's switching latency).
* **Completion at the sender.** Transports that count a flow done when the sender holds the
  last acknowledgement (RoCE, htsim's drivers) add the ACK's way back: its serialisation and
  the same link and switch latencies.
* **Start-up.** ``handshake_rtts`` round trips (ACK-sized packets both ways) before the first
  data packet: 0 for RoCE (the queue pair is set up once, not per message), 1 for TCP.
* **Queueing.** A link that several flows share queues packets even below its capacity: their
  packets arrive at independent phases. Each link's flows, at the rates they start the phase
  with, are taken as N_eff equal periodic streams at utilisation rho, and a packet's mean wait
  is that of the N*D/D/1 queue (``queue_wait_slots``: Benes' exact tail up to 256 streams, its
  heavy-traffic form beyond). The last packet of a flow meets the mean wait of every link it
  crosses after its own NIC, weighted by its fraction there (``phase_runs.run_phase``): 0 for a
  lone flow, about 4.4 packet times per link for 64 sprayed flows on a saturated link. Phases
  streamed for their size (``planner.sim.streamed``) keep no rates and get none.

Per-flow path latency. On an up-down fabric every shortest path between two leaves climbs to
the same tier and comes down the same tiers, so the switch hops ``d`` between the two leaves
(``routing_strategies.leaf_hops``: the strategy's distance table) say which link classes and
switch tiers are crossed: 2 NIC links, and for ``d = 2 (k - 1)`` the classes 1 .. k - 1 up and
down and the tiers 1 .. k - 1 twice and k once. ECMP and spraying take shortest paths, so one
figure per flow serves both. On any other fabric (a torus, a dragonfly, an OCS fabric routed
through transit blocks) the hop count does not say which classes are crossed: the routed path
is walked and every hop priced by its own link's class and switch's tier, the slowest of a
pair's paths taken (``planner.sim.path_latency``). Link latencies are the design's worst link
of each class (the figure ``export_htsim`` writes as ``Downlink_Latency_ns``), so the planner's
model and the exported htsim fabric see the same latency.

What it leaves out, on purpose (see ``tests/bench/RESULTS_htsim.md``): the transients of the
queues (the mean wait above is the steady state of independent phases; a fabric loaded to
exactly 100 % for a whole flow lets queues grow further, which is why htsim's sprayed
permutation still ends 3.7 % later), losses and retransmissions, congestion-control dynamics,
head-of-line blocking (PFC), and a last packet padded to a full MTU (htsim's RoCE and NDP do
that; a real NIC sends it short). PFC is most of what is left against RoCE under ECMP: pauses
stall flows that do not cross the hottest link, so the worst flow is often not one that the
max-min sharing slows most.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special

from planner.design import Design
from planner.schema.verify import TransportSpec, Verify
from planner.sim.fabric import BoolArray, Fabric, FloatArray, IntArray
from planner.sim.path_latency import Crossings, routed_crossings
from planner.sim.routing_strategies import UNREACHABLE, is_valley_free, leaf_hops
from planner.sim.traffic import Traffic
from planner.units import BITS_PER_BYTE, BITS_PER_GBIT, NS_PER_S


@dataclass(frozen=True)
class Transport:
    """A transport's per-packet costs and how its flows start and end."""

    payload_bytes: int
    """Payload of a full data packet (the MTU's payload)."""
    header_bytes: int
    """Wire bytes a data packet carries on top of its payload (headers, trailers, gaps)."""
    ack_bytes: int
    """Wire bytes of an acknowledgement."""
    handshake_rtts: float = 0.0
    """Round trips before the first data packet leaves."""
    acks_per_packet: float = 1.0
    """Control packets (ACKs, pulls) of ``ack_bytes`` the receiver returns per data packet."""
    pacing_fraction: float = 1.0
    """Fraction of its fair rate the transport sends at (a receiver pacing pulls at 0.99, say)."""
    completion_at_sender: bool = True
    """The flow ends when the sender holds the last ACK (else when the last byte arrives)."""
    name: str = "custom"
    """The transport's name (``TransportSpec.name``), said with the times."""
    losses: str = "lossless"
    """What a full queue does (``TransportSpec.losses``): "lossless", "trimming" or "drop"."""

    @property
    def packet_bytes(self) -> int:
        """Wire bytes of a full data packet."""
        return self.payload_bytes + self.header_bytes

    @property
    def goodput_fraction(self) -> float:
        """Payload moved per unit of fluid rate: payload / (payload + header) x pacing."""
        return self.payload_bytes / self.packet_bytes * self.pacing_fraction

    @property
    def two_way_fraction(self) -> float:
        """The same when the flow's NIC links also carry the ACKs of flows the other way.

        payload / packet x min(pacing, packet / (packet + acks_per_packet x ack_bytes))
        """
        share = self.packet_bytes / (self.packet_bytes + self.acks_per_packet * self.ack_bytes)
        return self.payload_bytes / self.packet_bytes * min(self.pacing_fraction, share)

    @classmethod
    def from_spec(cls, spec: TransportSpec) -> Transport:
        """The transport of a ``[verify.transport]`` table."""
        return cls(
            payload_bytes=spec.payload_bytes,
            header_bytes=spec.header_bytes,
            ack_bytes=spec.ack_bytes,
            handshake_rtts=spec.handshake_rtts,
            acks_per_packet=spec.acks_per_packet,
            pacing_fraction=spec.pacing_fraction,
            completion_at_sender=spec.completion == "ack",
            name=spec.name,
            losses=spec.losses,
        )


#: RoCEv2 over Ethernet with a 4096-byte MTU (``TransportSpec``'s defaults; byte counts there).
ROCE_V2 = Transport.from_spec(TransportSpec())
#: htsim's RoCE driver (``htsim_roce -mtu 4096``): ``RocePacket::ACKSIZE`` = 64 bytes on every
#: data packet and ACK (``rocepacket.h``), no preamble or gap, an ACK per packet, line rate.
HTSIM_ROCE = Transport.from_spec(TransportSpec(name="htsim_roce"))
#: htsim's NDP driver (``htsim_ndp -mtu 4096``): ``NdpPacket::ACKSIZE`` = 64 bytes of header on
#: every data packet, ACKs and pulls of 64 (``ndppacket.h``); measured alone, a flow runs at line
#: rate (its first window is unsolicited), and a pair of flows the two ways as one ACK per packet.
#: The receiver ACKs every packet and paces pulls at 0.99 of one 4160-byte packet a drain time
#: (``NdpPullPacer``, ``pull_rate_modifier`` 0.99 in ``main_ndp.cpp``); the pull rides on the ACK
#: unless the pacer sent one less than a drain time before. With evenly spaced arrivals (4224
#: bytes apart when the link also carries the other way's ACKs, more than the pacer's 4202) it
#: always rides: one control packet per data packet, and the pacing never binds (alone, a window
#: of 50 outlasts it for about 4,000 packets). Under spraying at full load, arrivals bunch and
#: 0.357 separate pulls go per data packet (0.351 on 8 MB flows; ``tests/bench/RESULTS_htsim.md``):
#: a measurement of one case's arrival jitter, not a constant, so it is left out (0.5 % of the
#: spraying FCT).
HTSIM_NDP = Transport.from_spec(TransportSpec(name="htsim_ndp"))
#: htsim's EQDS driver (``htsim_eqds -mtu 4160``: its MTU is the whole packet, 4096 of payload
#: and ``EqdsSrc::_hdr_size`` = 64 of header; ACKs of ``EqdsAckPacket::ACKSIZE`` = 64).
HTSIM_EQDS = Transport.from_spec(TransportSpec(name="htsim_eqds"))


@dataclass(frozen=True)
class PathModel:
    """One-way latencies and speeds of a plane's link classes and switch tiers."""

    class_latency_ns: tuple[float, ...]
    """Per link class of the fabric (``Fabric.link_class``): electronics plus propagation."""
    class_speed_gbps: tuple[float, ...]
    """Per link class: the speed a packet is serialised at."""
    switch_latency_ns: tuple[float, ...]
    """Per switch tier (node group 1, 2, ...): the switching latency of one switch."""


def path_model(fabric: Fabric, design: Design) -> PathModel:
    """The design's latencies on the fabric's link classes and tiers.

    A fabric link class takes the worst design class among its links (``Fabric.design_classes``;
    links the design does not price, such as a chip's own port, add no latency of their own).
    A switch tier takes its design tier's ``latency_ns`` (0 past the design's tiers).
    """
    classes = fabric.link_classes
    design_class = fabric.design_classes
    latency = []
    for c in range(classes):
        own = np.unique(design_class[fabric.link_class == c])
        own = own[(own >= 0) & (own < len(design.link_classes))]
        latency.append(max((design.link_classes[int(k)].latency_ns for k in own), default=0.0))
    speeds = (
        fabric.class_speed_gbps
        if fabric.class_speed_gbps is not None
        else (float(fabric.link_speed_gbps),) * classes
    )
    switch = tuple(
        float(design.tiers[t].latency_ns) if t < len(design.tiers) else 0.0
        for t in range(fabric.tiers)
    )
    return PathModel(tuple(float(x) for x in latency), tuple(map(float, speeds)), switch)


def switch_hops(fabric: Fabric, src: npt.ArrayLike, dst: npt.ArrayLike) -> IntArray:
    """Switch-to-switch links on a shortest path of every flow (0 within a leaf; -1 if cut off)."""
    s = np.asarray(src, dtype=np.int64)
    t = np.asarray(dst, dtype=np.int64)
    src_leaf, dst_leaf = fabric.leaf_of(s), fabric.leaf_of(t)
    hops = np.zeros(s.size, dtype=np.int64)
    cross = np.flatnonzero(src_leaf != dst_leaf)
    if cross.size:
        d = leaf_hops(fabric, src_leaf[cross], dst_leaf[cross])
        hops[cross] = np.where(d >= UNREACHABLE, -1, d)
    return hops


def _class_ns(model: PathModel, packet_bytes: float) -> tuple[FloatArray, FloatArray]:
    """Per link class: (serialisation of one packet, serialisation plus latency), in ns."""
    ser = np.asarray(
        [
            packet_bytes * BITS_PER_BYTE / g * NS_PER_S / BITS_PER_GBIT
            for g in model.class_speed_gbps
        ]
    )
    return ser, ser + np.asarray(model.class_latency_ns)


def _group_ns(fabric: Fabric, model: PathModel) -> FloatArray:
    """Per node group (GPUs, then each switch tier): the latency of reaching one of its nodes."""
    sw = model.switch_latency_ns
    return np.array([0.0] + [sw[min(t, len(sw) - 1)] for t in range(fabric.tiers)])


def _routed_paths(
    fabric: Fabric, model: PathModel, src: npt.ArrayLike, dst: npt.ArrayLike, packet_bytes: float
) -> tuple[IntArray, Crossings]:
    """The flows that leave their leaf, and the slowest routed path of each for this packet.

    Off up-down fabrics the hop count does not say which classes a path crosses (a dragonfly's
    local and global links, an OCS fabric's transit block), so the path is walked
    (``planner.sim.path_latency``): every hop priced by its own link's class and the tier of
    the switch it reaches.
    """
    _, per_link = _class_ns(model, packet_bytes)
    s = np.asarray(src, dtype=np.int64)
    t = np.asarray(dst, dtype=np.int64)
    src_leaf, dst_leaf = fabric.leaf_of(s), fabric.leaf_of(t)
    cross = np.flatnonzero(src_leaf != dst_leaf)
    crossed = routed_crossings(
        fabric, src_leaf[cross], dst_leaf[cross], per_link, _group_ns(fabric, model)
    )
    return cross, crossed


def _routed_one_way_ns(
    fabric: Fabric,
    model: PathModel,
    flows: int,
    paths: tuple[IntArray, Crossings],
    packet_bytes: float,
    skip_first: bool,
) -> FloatArray:
    """One packet's store-and-forward time over every flow's routed path (``_routed_paths``).

    A flow the routes do not join pays its NIC links only.
    """
    ser, per_link = _class_ns(model, packet_bytes)
    sw = model.switch_latency_ns
    cross, crossed = paths
    path = np.zeros(flows)
    path[cross] = crossed.ns(per_link, _group_ns(fabric, model))
    total = 2 * per_link[0] + sw[0] - (ser[0] if skip_first else 0.0)
    return np.asarray(total + path, dtype=np.float64)


def _one_way_ns(
    fabric: Fabric, model: PathModel, hops: IntArray, packet_bytes: float, skip_first: bool
) -> FloatArray:
    """One packet's store-and-forward time over every flow's path on an up-down fabric.

    The path is known from its switch hops ``hops``.

    ``skip_first`` leaves out the serialisation on the first link (the fluid part counts it).
    """
    ser, per_link = _class_ns(model, packet_bytes)
    sw = np.asarray(model.switch_latency_ns)
    h = np.maximum(hops, 0)
    # The two NIC links (class 0) and the first switch.
    total = 2 * per_link[0] + sw[0] - (ser[0] if skip_first else 0.0)
    # Up-down: d = 2 (k - 1) switch hops climb to tier k. cum_links[k] = links of classes
    # 1 .. k-1 (one way up), cum_sw[k] = switches of tiers 1 .. k-1.
    top = h // 2 + 1
    cum_links = np.concatenate([[0.0, 0.0], np.cumsum(per_link[1:])])
    cum_sw = np.concatenate([[0.0], np.cumsum(sw)])
    top = np.minimum(top, fabric.tiers)
    return np.asarray(
        total - sw[0] + 2 * cum_links[top] + 2 * cum_sw[top - 1] + sw[top - 1], dtype=np.float64
    )


def latency_s(
    fabric: Fabric,
    model: PathModel,
    transport: Transport,
    src: npt.ArrayLike,
    dst: npt.ArrayLike,
) -> FloatArray:
    """What every flow's FCT adds to its fluid time over the goodput fraction, in seconds.

    start-up (``handshake_rtts`` x (ACK there + ACK back)) + the last data packet's way through
    the path after its first link + the last ACK's way back (when completion is at the sender).
    """
    if is_valley_free(fabric) and fabric.tiers > 1:
        hops = switch_hops(fabric, src, dst)
        data = _one_way_ns(fabric, model, hops, transport.packet_bytes, skip_first=True)
        ack = _one_way_ns(fabric, model, hops, transport.ack_bytes, skip_first=False)
    else:  # the slowest path for a data packet; its ACK comes back the same way
        flows = np.asarray(src).size
        paths = _routed_paths(fabric, model, src, dst, transport.packet_bytes)
        data = _routed_one_way_ns(fabric, model, flows, paths, transport.packet_bytes, True)
        ack = _routed_one_way_ns(fabric, model, flows, paths, transport.ack_bytes, False)
    total = transport.handshake_rtts * 2 * ack + data
    if transport.completion_at_sender:
        total = total + ack
    return np.asarray(total / NS_PER_S, dtype=np.float64)


def two_way(src: IntArray, dst: IntArray, senders: IntArray, receivers: IntArray) -> BoolArray:
    """Flows whose source also receives or whose destination also sends (in the whole phase)."""
    return np.asarray(np.isin(src, receivers) | np.isin(dst, senders), dtype=np.bool_)


def two_way_traffic(traffic: Traffic) -> bool:
    """Whether a GPU both sends and receives in some phase (its ACKs then share its NIC links)."""
    return any(bool(np.intersect1d(p.src, p.dst).size) for p in traffic.phases)


def packet_times_s(
    fluid_times_s: FloatArray, extra_s: FloatArray, goodput: FloatArray | float
) -> FloatArray:
    """Packet-level FCTs: fluid time / goodput fraction + the flow's latency (inf stays inf)."""
    return np.asarray(fluid_times_s / goodput + extra_s, dtype=np.float64)


#: Streams up to which a link's wait is the exact N*D/D/1 figure (``benes_wait_slots``); above,
#: the heavy-traffic form (within 4 % of it at 64 streams, closer beyond).
EXACT_MAX_STREAMS = 256
#: Points of the midpoint rule that integrates the exact tail, and the rounding of a link's load
#: when links share one computation.
WAIT_GRID = 512
LOAD_DECIMALS = 4


def benes_wait_slots(others: int, frame_slots: float) -> float:
    """Mean wait of a packet among ``others`` periodic streams with random phases (exact).

    Each of the other streams sends one packet per frame of D = ``frame_slots`` packet times,
    at a uniformly random phase; the packet waits for the work they left, whose tail is Benes'
    formula for the N*D/D/1 queue (N = ``others``):

        P(V > t) = sum over n > t of C(N, n) ((n - t) / D)^n (1 - (n - t) / D)^(N - n)
                                      x (D - N + t) / (D - n + t)

    integrated over 0 < t < N. The other streams' work is taken as if the tagged stream's own
    packets had not delayed it, which simulations of the queue (``tests/sim/test_packet.py``)
    show costs at most the few per cent they vary by.
    """
    if others <= 0 or frame_slots <= others:
        return 0.0 if others <= 0 else math.inf
    n_all = np.arange(1, others + 1, dtype=np.float64)[:, np.newaxis]
    t = (np.arange(WAIT_GRID) + 0.5) / WAIT_GRID * others
    x = (n_all - t) / frame_slots
    live = (x > 0) & (x < 1)
    xs = np.where(live, x, 0.5)
    log_term = (
        special.gammaln(others + 1)
        - special.gammaln(n_all + 1)
        - special.gammaln(others - n_all + 1)
        + n_all * np.log(xs)
        + (others - n_all) * np.log1p(-xs)
    )
    factor = (frame_slots - others + t) / (frame_slots - n_all + t)
    tail = np.where(live, np.exp(log_term) * factor, 0.0).sum(axis=0)
    return float(tail.sum() * others / WAIT_GRID)


def queue_wait_slots(load: FloatArray, streams: FloatArray) -> FloatArray:
    """Mean wait of a packet at a link, in packet times, from its load and its streams (N*D/D/1).

    A link of utilisation rho (at the phase's start) carries ``streams`` = N_eff flows, counted
    as equal periodic streams with random phases: N_eff = rho^2 / sum of each flow's share
    squared (N for N equal flows, 1 for a lone flow). A packet of one stream waits for the work
    the N' = N_eff - 1 other streams left queued, each sending a packet every N_eff / rho packet
    times: ``benes_wait_slots`` (N' rounded to a whole number) up to ``EXACT_MAX_STREAMS``, above
    it the heavy-traffic form of the same queue (the sup of a Brownian bridge with drift,
    Roberts and Virtamo), with rho' = rho N' / N_eff the other streams' load:

        E[wait] = sqrt(pi N' / 8) x erfcx((1 - rho') sqrt(N' / 2))     (packet times)

    It is 0 for a lone flow and grows as sqrt(N') on a saturated link: 4.35 packets for 64
    sprayed flows at full load, 1.12 for 8, 0.89 for 6 ECMP flows sharing a bottleneck.
    """
    rho = np.clip(np.asarray(load, dtype=np.float64), 0.0, 1.0)
    n = np.asarray(streams, dtype=np.float64)
    others = np.rint(np.maximum(n - 1.0, 0.0))
    out = np.zeros(rho.shape)
    big = (others > EXACT_MAX_STREAMS) & (rho > 0)
    rho_others = rho[big] * others[big] / n[big]
    z = (1.0 - rho_others) * np.sqrt(others[big] / 2.0)
    out[big] = np.sqrt(np.pi * others[big] / 8.0) * special.erfcx(z)
    small = (others >= 1) & ~big & (rho > 0)
    if small.any():
        keys = np.stack([others[small], np.round(rho[small], LOAD_DECIMALS)], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        waits = np.array(
            [benes_wait_slots(int(k), (k + 1.0) / max(r, 1e-12)) for k, r in uniq.tolist()]
        )
        out[small] = waits[inverse.ravel()]
    return out


def queueing_s(
    load_gbps: FloatArray, square_gbps2: FloatArray, capacity_gbps: FloatArray, packet_bytes: int
) -> FloatArray:
    """Mean queueing delay of a packet on every link, in seconds (``queue_wait_slots``).

    ``load_gbps``: the flows' rates on the link; ``square_gbps2``: the sum of their squares.
    """
    cap = np.asarray(capacity_gbps, dtype=np.float64)
    rho = np.divide(load_gbps, cap, out=np.zeros_like(cap), where=cap > 0)
    streams = np.divide(
        np.square(load_gbps), square_gbps2, out=np.zeros_like(cap), where=square_gbps2 > 0
    )
    slot_s = np.divide(
        packet_bytes * BITS_PER_BYTE / BITS_PER_GBIT, cap, out=np.zeros_like(cap), where=cap > 0
    )
    return queue_wait_slots(rho, streams) * slot_s


@dataclass(frozen=True)
class Fidelity:
    """Everything ``run_traffic`` needs to turn fluid completion times into packet-level ones."""

    transport: Transport
    model: PathModel

    def goodput(
        self, src: IntArray, dst: IntArray, senders: IntArray, receivers: IntArray
    ) -> FloatArray:
        """Every flow's goodput fraction: two-way where its NIC links carry ACKs of others."""
        both = two_way(src, dst, senders, receivers)
        t = self.transport
        return np.where(both, t.two_way_fraction, t.goodput_fraction)

    def times_s(
        self,
        fabric: Fabric,
        src: IntArray,
        dst: IntArray,
        fluid_times_s: FloatArray,
        senders: IntArray | None = None,
        receivers: IntArray | None = None,
    ) -> FloatArray:
        """Packet-level FCT of every flow from its fluid one.

        ``senders`` and ``receivers``: the GPUs that send and receive in the whole phase (by
        default the flows' own sources and destinations).
        """
        extra = latency_s(fabric, self.model, self.transport, src, dst)
        g = self.goodput(
            src, dst, src if senders is None else senders, dst if receivers is None else receivers
        )
        return packet_times_s(fluid_times_s, extra, g)

    def ideal_s(self, fluid_s: float, two_way: bool = True) -> float:
        """A fluid ideal or bound at the transport's goodput: still a lower bound on the FCT."""
        t = self.transport
        return fluid_s / (t.two_way_fraction if two_way else t.goodput_fraction)


def fidelity_of(fabric: Fabric, design: Design, verify: Verify) -> Fidelity | None:
    """The packet-level model ``verify`` asks for; None for the ideal fluid."""
    if verify.fidelity == "fluid":
        return None
    return Fidelity(Transport.from_spec(verify.transport), path_model(fabric, design))
