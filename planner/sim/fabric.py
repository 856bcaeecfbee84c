"""The concrete fabric graph of one plane of a Clos design, as index arrays.

Every physical link is kept (parallel links stay separate, so ECMP has real choices) and runs in
two directed links: ``2 i`` goes up (lower tier to upper tier) and ``2 i + 1`` goes down. Nodes are
numbered tier by tier: GPUs ``0 .. E-1`` (one NIC port each), then leaves, then the tiers above.
Planes are identical copies; the simulator sizes traffic per plane and builds one of them.

Wiring (as the sizing model and the validator define it): GPU g sits on leaf g // d1. Two tiers:
every leaf reaches every spine with q1 parallel links. Three tiers: leaf l is in pod l // L and
reaches the pod's A spines (pod * A + j) with q1 links each; spine (pod, j) reaches the C cores of
group j (j * C + c) with q2 links each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np
import numpy.typing as npt

from planner.design import Design
from planner.families import family_of

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Fabric:
    """One plane's nodes and links, with a mask of links that are alive."""

    gpus: int
    planes: int
    link_speed_gbps: float
    tier_offsets: tuple[int, ...]
    """First node id of each tier: (0 for GPUs, first leaf, first tier-2 switch, ...), then the total."""
    lower: IntArray
    """Lower node of every physical link."""
    upper: IntArray
    """Upper node of every physical link."""
    link_class: IntArray
    """Tier of the lower end of every physical link: 0 = GPU to leaf, 1 = leaf up, 2 = spine up."""
    alive: BoolArray
    """Per directed link (2 i up, 2 i + 1 down): False once failed."""
    roles: tuple[str, ...] = ("gpu", "leaf", "spine", "core")
    circuit_device: IntArray | None = None
    """OCS direct-connect: the device of every circuit (the top tier's pseudo-nodes)."""

    # ---- sizes and derived arrays ----------------------------------------------------------
    @property
    def nodes(self) -> int:
        """All nodes: GPUs and switches."""
        return self.tier_offsets[-1]

    @property
    def tiers(self) -> int:
        """Switch tiers."""
        return len(self.tier_offsets) - 2

    @property
    def physical_links(self) -> int:
        """Physical links of the plane."""
        return int(self.lower.size)

    @property
    def links(self) -> int:
        """Directed links of the plane."""
        return 2 * self.physical_links

    @property
    def src(self) -> IntArray:
        """Tail node of every directed link."""
        out = np.empty(self.links, dtype=np.int64)
        out[0::2], out[1::2] = self.lower, self.upper
        return out

    @property
    def dst(self) -> IntArray:
        """Head node of every directed link."""
        out = np.empty(self.links, dtype=np.int64)
        out[0::2], out[1::2] = self.upper, self.lower
        return out

    @property
    def directed_class(self) -> IntArray:
        """Link class of every directed link."""
        return np.repeat(self.link_class, 2)

    @property
    def capacity_gbps(self) -> FloatArray:
        """Capacity of every directed link; zero when it has failed."""
        return np.where(self.alive, self.link_speed_gbps, 0.0)

    def tier_of(self, nodes: IntArray) -> IntArray:
        """Tier of each node (0 = GPU, 1 = leaf, ...)."""
        return np.searchsorted(np.asarray(self.tier_offsets[1:]), nodes, side="right").astype(
            np.int64
        )

    def leaf_of(self, gpus: IntArray) -> IntArray:
        """Node id of each GPU's leaf: physical link g is GPU g's NIC link."""
        return self.upper[np.asarray(gpus, dtype=np.int64)]

    def node_name(self, node: int) -> str:
        """Readable name: gpu12, leaf3, spine0, core7."""
        tier = int(self.tier_of(np.array([node]))[0])
        return f"{self.roles[tier]}{node - self.tier_offsets[tier]}"

    # ---- failures ---------------------------------------------------------------------------
    def with_failed_links(self, physical: Iterable[int]) -> Fabric:
        """The same plane with these physical links down (both directions)."""
        alive = self.alive.copy()
        ids = np.fromiter(physical, dtype=np.int64)
        alive[2 * ids] = False
        alive[2 * ids + 1] = False
        return replace(self, alive=alive)

    def with_failed_switches(self, nodes: Iterable[int]) -> Fabric:
        """The same plane with these switches down: every link touching them fails."""
        down = np.fromiter(nodes, dtype=np.int64)
        hit = np.isin(self.lower, down) | np.isin(self.upper, down)
        return self.with_failed_links(np.flatnonzero(hit))

    # ---- structure ---------------------------------------------------------------------------
    def to_networkx(self) -> nx.MultiDiGraph:
        """The plane as a networkx multigraph of alive directed links with a ``capacity`` in Gb/s."""
        g = nx.MultiDiGraph()
        for node in range(self.nodes):
            g.add_node(node, tier=int(self.tier_of(np.array([node]))[0]))
        src, dst, cap = self.src, self.dst, self.capacity_gbps
        for e in np.flatnonzero(self.alive):
            g.add_edge(int(src[e]), int(dst[e]), key=int(e), capacity=float(cap[e]))
        return g


def build_fabric(design: Design) -> Fabric:
    """The fabric graph of one plane of a Clos or OCS direct-connect design.

    Direct-connect: the blocks are the pods of a three-tier wiring whose top tier is OCS devices.
    Device o is cabled to spine o // f2 of every block (as a core group would be), so a circuit
    (a, b, o) joins spine (a, o // f2) to spine (b, o // f2). A mirror is not a switch: each
    circuit becomes a pseudo-node of the top tier with one link to each of its two spines, so
    valley-free routing runs spine -> circuit -> spine and every directed link carries one
    direction of one circuit at the circuit's speed.
    """
    return family_of(design.family).build_fabric(design)


def clos_fabric(design: Design) -> Fabric:
    """The fabric graph of one plane of a Clos design: tiered up-down wiring, leaf first."""
    tiers = design.tiers
    counts = [design.gpus] + [t.switches for t in tiers]
    offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)]))
    lowers: list[IntArray] = []
    uppers: list[IntArray] = []
    classes: list[IntArray] = []

    def add(lower: IntArray, upper: IntArray, cls: int) -> None:
        lowers.append(lower.astype(np.int64))
        uppers.append(upper.astype(np.int64))
        classes.append(np.full(lower.size, cls, dtype=np.int64))

    leaf = tiers[0]
    gpu = np.arange(design.gpus)
    add(gpu, offsets[1] + gpu // leaf.downlinks, 0)
    if len(tiers) >= 2:
        n1, f1, q1 = leaf.switches, leaf.fanout, leaf.parallel_links
        leaves = np.repeat(np.arange(n1), f1 * q1)
        j = np.tile(np.repeat(np.arange(f1), q1), n1)
        if len(tiers) == 2:
            add(offsets[1] + leaves, offsets[2] + j, 1)
        else:
            pod = leaves // design.leaves_per_pod
            add(offsets[1] + leaves, offsets[2] + pod * f1 + j, 1)
            spine = tiers[1]
            n2, f2, q2 = spine.switches, spine.fanout, spine.parallel_links
            aggs = np.repeat(np.arange(n2), f2 * q2)
            group = aggs % f1
            c = np.tile(np.repeat(np.arange(f2), q2), n2)
            add(offsets[2] + aggs, offsets[3] + group * f2 + c, 2)
    lower = np.concatenate(lowers)
    return Fabric(
        gpus=design.gpus,
        planes=design.planes,
        link_speed_gbps=float(design.link_speed_gbps),
        tier_offsets=offsets,
        lower=lower,
        upper=np.concatenate(uppers),
        link_class=np.concatenate(classes),
        alive=np.ones(2 * lower.size, dtype=bool),
        roles=("gpu",) + tuple(t.role for t in tiers),
    )


def ocs_fabric(design: Design) -> Fabric:
    """The fabric graph of one plane of a direct-connect design (see ``build_fabric``)."""
    leaf, spine, _ = design.tiers
    circuits = [(a, b, o) for a, b, o, k in design.circuits for _ in range(k)]
    counts = [design.gpus, leaf.switches, spine.switches, len(circuits)]
    offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)]))
    gpu = np.arange(design.gpus)
    n1, f1, q1 = leaf.switches, leaf.fanout, leaf.parallel_links
    leaves = np.repeat(np.arange(n1), f1 * q1)
    j = np.tile(np.repeat(np.arange(f1), q1), n1)
    pod = leaves // design.leaves_per_pod
    c = np.asarray(circuits, dtype=np.int64).reshape(-1, 3)
    group = c[:, 2] // spine.fanout
    node = offsets[3] + np.arange(len(circuits))
    lower = np.concatenate(
        [
            gpu,
            offsets[1] + leaves,
            offsets[2] + c[:, 0] * f1 + group,
            offsets[2] + c[:, 1] * f1 + group,
        ]
    )
    upper = np.concatenate(
        [offsets[1] + gpu // leaf.downlinks, offsets[2] + pod * f1 + j, node, node]
    )
    link_class = np.concatenate(
        [np.zeros(gpu.size), np.ones(leaves.size), np.full(2 * len(circuits), 2)]
    ).astype(np.int64)
    return Fabric(
        gpus=design.gpus,
        planes=design.planes,
        link_speed_gbps=float(design.link_speed_gbps),
        tier_offsets=offsets,
        lower=lower.astype(np.int64),
        upper=upper.astype(np.int64),
        link_class=link_class,
        alive=np.ones(2 * lower.size, dtype=bool),
        roles=("gpu", "leaf", "spine", "circuit"),
        circuit_device=c[:, 2].copy(),
    )
