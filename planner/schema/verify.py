"""The ``[verify]`` section: what traffic, routing and failures a design is simulated under."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from planner.schema.instance_base import Strict

TrafficKind = Literal[
    "all_reduce_ring",
    "all_reduce_tree",
    "all_reduce_hierarchical",
    "reduce_scatter",
    "all_gather",
    "all_to_all",
    "point_to_point",
    "uniform_all_to_all",
    "random_permutation",
    "incast",
    "shift",
]
RoutingName = Literal["ecmp", "spray"]
FidelityName = Literal["packet", "fluid"]
#: Traffic kinds that run on groups of GPUs (the others are patterns over the whole cluster).
COLLECTIVES = frozenset(
    {
        "all_reduce_ring",
        "all_reduce_tree",
        "all_reduce_hierarchical",
        "reduce_scatter",
        "all_gather",
        "all_to_all",
    }
)
GroupsName = Literal["data_parallel", "consecutive", "tensor_parallel", "same_rail"]
#: Group placements sized by ``group_size``, and how a label names them.
SIZED_GROUPS = {"consecutive": "groups-of", "tensor_parallel": "tp", "same_rail": "rail"}
#: Largest scale-up domain an instance or design may hold (``cluster.scale_up.gpus``); a
#: tensor-parallel group larger than it can never fit, so the schema refuses it at once.
MAX_DOMAIN_GPUS = 1024


class TrafficSpec(Strict):
    """One traffic pattern or collective to simulate."""

    kind: TrafficKind
    """Collective (on groups) or synthetic pattern (over all GPUs). ``all_reduce_hierarchical``
    is NCCL's two-level all-reduce: reduce-scatter inside each scale-up domain, all-reduce
    across domains of 1/k of the buffer (k: a group's GPUs per domain), all-gather back."""
    size_bytes: float = Field(1.0e9, gt=0, le=1.0e13)
    """nccl-tests size per rank for collectives; bytes each GPU sends for patterns."""
    groups: GroupsName = "data_parallel"
    """Collective groups, in the machine's two levels (GPUs in scale-up domains of
    ``scale_up.gpus``, consecutive ids; nodes of ``gpus_per_node``, one rail per local index):

    - ``data_parallel``: the same local GPU index across all nodes (one group per rail);
    - ``consecutive``: ``group_size`` consecutive GPUs (expert parallel: n consecutive nodes);
    - ``tensor_parallel``: ``group_size`` consecutive GPUs inside one scale-up domain
      (``group_size`` must divide the domain);
    - ``same_rail``: one GPU, at the same index, from each of ``group_size`` consecutive
      domains (data or expert parallel across domains; every member on one rail).

    The last two are checked against the design's domain when the traffic is built."""
    group_size: int | None = Field(None, ge=2, le=4_000_000)
    """GPUs per group for consecutive, tensor_parallel and same_rail groups; for 'shift', how far
    each GPU sends (GPU g sends to g + group_size: with the GPUs of a block or pod, every block
    sends all it has to the next, the skewed demand of hot block pairs)."""
    fan_in: int = Field(8, ge=1, le=4_000_000)
    """Senders into one receiver, for incast."""
    pipeline_stages: int = Field(2, ge=2, le=4_000_000)
    """Pipeline stages, for point-to-point between consecutive stages."""
    min_throughput_fraction: float | None = Field(None, gt=0, le=1)
    """The fraction of ideal this traffic must reach; absent: ``verify.min_throughput_fraction``.
    For a traffic no routing can carry at line rate on the fabric (every block of a
    direct-connect mesh sending to one other reaches at most about 1/2, the optimal-routing
    bound shows it), so that the requirement says what the design must do."""

    @model_validator(mode="after")
    def _check(self) -> TrafficSpec:
        if self.groups in SIZED_GROUPS and self.kind in COLLECTIVES and self.group_size is None:
            raise ValueError(f"{self.groups} groups need group_size (GPUs per group, at least 2)")
        if (
            self.groups == "tensor_parallel"
            and self.kind in COLLECTIVES
            and self.group_size is not None
            and self.group_size > MAX_DOMAIN_GPUS
        ):
            raise ValueError(
                f"tensor_parallel group_size {self.group_size} is larger than any scale-up "
                f"domain (at most {MAX_DOMAIN_GPUS:,} GPUs): a tensor-parallel group lies in one"
            )
        if self.kind == "shift" and self.group_size is None:
            raise ValueError("shift needs group_size: how many GPUs ahead each GPU sends")
        return self

    @property
    def label(self) -> str:
        """Short name for reports, e.g. all_to_all/groups-of-64, all_reduce_ring/tp-8.

        Collectives name their groups: ``dp``, ``groups-of-N`` (consecutive), ``tp-N``
        (tensor_parallel), ``rail-N`` (same_rail); shift its distance (``shift/4096``).
        """
        if self.kind in COLLECTIVES:
            prefix = SIZED_GROUPS.get(self.groups)
            where = "dp" if prefix is None else f"{prefix}-{self.group_size}"
            return f"{self.kind}/{where}"
        if self.kind == "shift":
            return f"shift/{self.group_size}"
        return self.kind

    def required_fraction(self, default: float) -> float:
        """The fraction of ideal this traffic must reach: its own, else ``default``."""
        return default if self.min_throughput_fraction is None else self.min_throughput_fraction


class FailureSpec(Strict):
    """A named failure scenario in plane 0 (planes are identical, so plane 0 stands for any)."""

    name: str = ""
    """Label in reports; made from the contents when empty."""
    switches: list[str] = Field(default_factory=list, max_length=4096)
    """Switches that fail, by role and index: 'spine0', 'leaf12', 'core3'."""
    links: list[str] = Field(default_factory=list, max_length=4096)
    """Links that fail, as 'lower-upper' switch pairs ('leaf3-spine1'); one parallel link each."""
    planes: int = Field(0, ge=0, le=16)
    """Whole planes lost."""

    @property
    def label(self) -> str:
        """The name, or a description of what fails."""
        if self.name:
            return self.name
        parts = [*self.switches, *self.links] + ([f"{self.planes} plane(s)"] if self.planes else [])
        return "+".join(parts) or "healthy"


#: Largest multiple of a pattern's size a group may run (calls per iteration).
MAX_TOGETHER_SCALE = 1e7
#: Lowest pacing a transport may give: every flow's rate is multiplied by it, so a pacing of
#: 1e-300 made a 4e299 s step; 1 % is below any transport's pacing.
MIN_PACING_FRACTION = 0.01

TransportName = Literal["rocev2", "htsim_roce", "htsim_ndp", "htsim_eqds"]
LossName = Literal["lossless", "trimming", "drop"]

#: Each named transport's figures, which a ``[verify.transport]`` table starts from (a field
#: given in the table overrides its preset). "rocev2" is RoCEv2 over Ethernet (byte counts in
#: ``TransportSpec``'s docstring); the "htsim_*" ones are the drivers of Broadcom's csg-htsim
#: (``sim/datacenter/main_roce.cpp``, ``main_ndp.cpp``, ``main_eqds.cpp``) with a 4096-byte payload,
#: for comparing with it: every data packet carries 64 bytes of header and every ACK (or pull) is
#: 64 bytes (``RocePacket::ACKSIZE``, ``NdpPacket::ACKSIZE``, ``EqdsSrc::_hdr_size`` and
#: ``EqdsAckPacket::ACKSIZE``), an ACK a data packet, no preamble or gap, at line rate.
TRANSPORT_PRESETS: dict[str, dict[str, object]] = {
    "rocev2": {"header_bytes": 82, "ack_bytes": 86, "losses": "lossless"},
    "htsim_roce": {"header_bytes": 64, "ack_bytes": 64, "losses": "lossless"},
    "htsim_ndp": {"header_bytes": 64, "ack_bytes": 64, "losses": "trimming"},
    "htsim_eqds": {"header_bytes": 64, "ack_bytes": 64, "losses": "trimming"},
}


class TransportSpec(Strict):
    """The transport flows run over, for packet-level fidelity (``planner.sim.packet``).

    ``name`` picks a transport's figures (``TRANSPORT_PRESETS``); fields given beside it override
    them, and ``transport = "htsim_ndp"`` is short for ``[verify.transport] name = "htsim_ndp"``.
    The default, "rocev2", is RoCEv2 over Ethernet with a 4096-byte MTU. A data packet of 4096
    payload bytes costs 82 more on the wire: preamble and start delimiter 8 and inter-packet gap
    12 (IEEE 802.3, 96 bit times), Ethernet header 14 (two MACs and the EtherType, no VLAN tag),
    IPv4 header 20 (RFC 791, no options), UDP header 8 (RFC 768), InfiniBand Base Transport
    Header 12 (IBTA vol. 1, 9.2), invariant CRC 4 (IBTA Annex A17, RoCEv2) and Ethernet FCS 4.
    So goodput is 4096 / 4178 = 98.04 % of line rate. An ACK is the same headers with a 4-byte
    ACK Extended Transport Header (AETH) and no payload: 66 bytes of frame (over Ethernet's
    64-byte minimum) plus 20 of preamble and gap, 86 on the wire. RoCE sets up its queue pair
    once, not per message (no handshake), and a message is complete when its last ACK arrives.
    """

    name: TransportName = "rocev2"
    """The transport: "rocev2" (the default), or one of htsim's drivers ("htsim_roce",
    "htsim_ndp", "htsim_eqds") to compare the planner's times with htsim's on an export."""
    payload_bytes: int = Field(4096, ge=64, le=1_048_576)
    """Payload of a full data packet: the MTU's payload (RoCE MTUs are 256 .. 4096)."""
    header_bytes: int = Field(82, ge=0, le=65_536)
    """Wire bytes per data packet on top of its payload: headers, trailers, preamble and gap."""
    ack_bytes: int = Field(86, ge=1, le=65_536)
    """Wire bytes of an acknowledgement (its way back ends a flow when completion = "ack")."""
    handshake_rtts: float = Field(0.0, ge=0, le=100)
    """Round trips before the first data packet leaves (0 for RoCE, 1 for TCP's handshake)."""
    acks_per_packet: float = Field(1.0, ge=0, le=16)
    """ACKs (or other control packets) the receiver returns per data packet; their bytes share
    a GPU's NIC link with the data it sends (a NIC that coalesces ACKs sends fewer)."""
    pacing_fraction: float = Field(1.0, ge=MIN_PACING_FRACTION, le=1)
    """Fraction of its fair rate the transport sends at (1: line rate when alone)."""
    completion: Literal["ack", "last_byte"] = "ack"
    """When a flow counts as done: the sender holds the last ACK, or the last byte arrives."""
    losses: LossName = "lossless"
    """What a full switch queue does to the next packet: "lossless" pauses the port upstream
    (RoCE's PFC: nothing is lost, but a pause stalls every flow behind it), "trimming" cuts the
    payload and forwards the header so the receiver asks for it again (NDP, EQDS), "drop"
    discards it (RoCE without PFC: go-back-N from the lost packet). Said in the report with the
    times; the flow model itself has no queue limit, so what losses cost is measured against
    htsim in ``tests/bench/RESULTS_htsim.md``, not added to the times."""

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: object) -> object:
        if isinstance(data, str):
            data = {"name": data}
        if isinstance(data, dict):
            preset = TRANSPORT_PRESETS.get(str(data.get("name", "rocev2")), {})
            data = {**preset, **data}
        return data


def _default_traffic() -> list[TrafficSpec]:
    return [
        TrafficSpec(kind="random_permutation", size_bytes=256 * 2**20),
        TrafficSpec(kind="all_reduce_ring", size_bytes=2**30),
    ]


#: Name of the group of the workload's collectives that overlap in its schedule.
OVERLAP_GROUP = "overlap"


class Together(Strict):
    """Traffic patterns simulated at the same time: each alone, then all at once."""

    traffic: list[int] = Field(min_length=2, max_length=32)
    """The patterns, by their place in [verify] traffic (0 for the first), each at most once."""
    scales: list[float] | None = Field(None, min_length=2, max_length=32)
    """Bytes of each pattern as a multiple of its size (a collective's calls per iteration);
    none: each once."""
    name: str = Field("", max_length=64)
    """What the group is called in the reports (default: its patterns' places)."""

    @model_validator(mode="after")
    def _check(self) -> Together:
        if len(set(self.traffic)) != len(self.traffic) or min(self.traffic) < 0:
            raise ValueError(f"traffic {self.traffic}: distinct places, from 0")
        if self.scales is not None:
            if len(self.scales) != len(self.traffic):
                raise ValueError(
                    f"scales: one per pattern ({len(self.traffic)}); got {len(self.scales)}"
                )
            if any(not 0 < x <= MAX_TOGETHER_SCALE for x in self.scales):
                raise ValueError(
                    f"scales {self.scales}: each above 0, at most {MAX_TOGETHER_SCALE:g}"
                )
        return self

    @property
    def label(self) -> str:
        """The name, or the patterns' places: '0+2'."""
        return self.name or "+".join(str(i) for i in self.traffic)


class Verify(Strict):
    """Verification of the chosen design by flow simulation."""

    enabled: bool = True
    """Simulate the design after solving (the CLI's --no-verify turns it off)."""
    routing: list[RoutingName] = Field(
        default_factory=lambda: list[RoutingName](["ecmp", "spray"]), min_length=1, max_length=2
    )
    """Routing policies to simulate: per-flow ECMP and packet spraying (each at most once)."""
    spray_entropies: int = Field(0, ge=0, le=65_536)
    """Spraying as switches do it: 0 (the default) splits every flow evenly over every shortest
    path, the ideal; N > 0 stamps a flow's packets with N entropy values in turn and lets every
    switch hash the entropy onto a next hop, as ECMP hashes a flow (Ultra Ethernet's entropies,
    htsim's ``-strat ecmp_host -paths N``), so a flow's paths carry unequal shares and the tail
    shows it (``planner.sim.hashed_spray``; a failed plane hashes over the links that survive)."""
    verdict_routing: RoutingName = "spray"
    """The policy the verdict is judged under (the one the fabric will run)."""
    seed: int = Field(1, ge=0, le=2**32 - 1)
    """Seed of ECMP hashing, random patterns and Monte Carlo draws (32 bits)."""
    ecmp_seeds: int = Field(3, ge=1, le=64)
    """Hash seeds each healthy ECMP run repeats under (seed, seed + 1, ...): its row gives the
    median seed's time and the least and greatest over the seeds, so one seed's luck shows as such
    (3 by default: a median and a spread for the cost of three ECMP runs)."""
    min_throughput_fraction: float = Field(0.9, gt=0, le=1)
    """A healthy design must reach this fraction of the ideal (NIC-limited) throughput."""
    traffic: list[TrafficSpec] = Field(
        default_factory=_default_traffic, min_length=1, max_length=32
    )
    """What to simulate (at most 32 patterns: each is simulated under every routing and failure)."""
    together: list[Together] = Field(default_factory=list, max_length=8)
    """Groups of traffic patterns simulated at the same time on the healthy fabric, under the
    verdict's routing (``planner.sim.concurrent``): each pattern alone and with the others, so
    what they do to one another shows. A workload's collectives that overlap in its schedule
    are grouped as ``overlap`` (``planner.workload.step``)."""
    failures: list[FailureSpec] = Field(default_factory=list, max_length=64)
    """Named failure scenarios (at most 64)."""
    single_switch_failures: bool = True
    """Also fail one switch of every tier that constraints.survive protects."""
    monte_carlo_trials: int = Field(0, ge=0, le=10_000)
    """Monte Carlo trials over link failures drawn from the media AFRs (0 = off)."""
    mttr_hours: float = Field(24.0, gt=0, le=8766)
    """Mean time to repair a failed link, in hours."""
    bound_max_variables: int = Field(50_000, ge=0, le=10_000_000)
    """Largest reference optimal-routing LP (variables) built for the bound, 0 = no bound at all.

    Since issue 11 every traffic gets a bound at any size (``planner.sim.bound_scaled``: cuts and
    closed forms on symmetric Clos and tori, a block-level LP on OCS fabrics). This cap now only
    decides when that scaled bound is replaced by the reference LP on the whole switch graph:
    where the scaled bound is not proven exact and the LP has at most this many variables.
    Above it the scaled bound is reported (a valid lower bound on the time; the collectives
    table's ``fraction_of_bound`` stays <= 1)."""
    memory_budget_gib: float = Field(4.0, gt=0, le=4096)
    """Memory (GiB) the simulation may use. Before each phase its routes are estimated; a phase
    over the budget is streamed (see ``resharing_max_flows``) in chunks that fit, instead of
    failing or swapping; the summary's notes say which phases and what their figures mean."""
    resharing_max_flows: int = Field(262_144, ge=1_000, le=100_000_000)
    """Most flows of one phase whose rates are re-shared flow by flow at every completion.

    A larger phase (or one whose routes would pass ``memory_budget_gib``) is streamed: routed in
    chunks for its link loads, which give its time exactly when its flows are of equal size (the
    most loaded link's gigabits over its capacity; ``planner.sim.streamed``), and its flow
    completion percentiles become upper bounds on a uniform sample of its flows."""

    fidelity: FidelityName = "packet"
    """"packet" (the default): completion times carry the transport's packet overheads
    (``transport``), per-hop serialisation, switch and link latency and the queueing of shared
    links, as ``planner.sim.packet`` models them, so no time is read below what a lone flow
    takes; "fluid": the ideal fluid model, bytes over the max-min rate and nothing else (the
    closed forms of bandwidth, for comparing with them).

    The verdict's ideal under "packet" is at the transport's goodput, and a phase takes at least
    its slowest flow alone on the fabric (latency + serialisation): a latency-bound collective,
    a ring all-reduce over 1,024 ranks in 1 MiB steps, is judged by its contention, not by the
    latency no fabric avoids."""
    transport: TransportSpec = Field(default_factory=TransportSpec)
    """The transport, by name and per-packet costs (RoCEv2 over Ethernet, 4096-byte MTU, by
    default; ``transport = "htsim_eqds"`` names one of htsim's)."""
    pxn: bool = False
    """NCCL's PXN: a flow between scale-up domains whose rails differ first crosses its own
    domain (NVLink) to the GPU of its node on the destination's rail, which sends it over the
    scale-out fabric (``planner.sim.scale_up``). A rail-only fabric uses PXN whatever this says."""

    @model_validator(mode="after")
    def _check(self) -> Verify:
        if len(set(self.routing)) != len(self.routing):
            raise ValueError(f"routing {self.routing}: names a policy twice")
        for g in self.together:
            if max(g.traffic) >= len(self.traffic):
                raise ValueError(
                    f"together: pattern {max(g.traffic)} of {g.traffic}; [verify] lists "
                    f"{len(self.traffic)} traffic patterns (0 to {len(self.traffic) - 1})"
                )
        return self
