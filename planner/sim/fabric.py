"""The concrete fabric graph of one plane, as index arrays: the tiered (Clos) graph and tori.

Every physical link is kept (parallel links stay separate, so ECMP has real choices) and runs in
two directed links: ``2 i`` goes from ``lower[i]`` to ``upper[i]`` ("up") and ``2 i + 1`` back
("down"). Nodes are numbered in groups (``tier_offsets``): GPUs ``0 .. E-1`` (one NIC port each)
first, then the switch groups. GPU g's NIC link is physical link g. Planes are identical copies;
the simulator sizes traffic per plane and builds one of them.

Each node has a kind (``NodeKind``, one per group) and the plane names its routing strategy
(``Fabric.strategy``, a key of ``planner.sim.routing.STRATEGIES``): ``up_down`` for the tiered
fabrics, ``dimension_order`` (or ``shortest_path``) for tori.

Clos wiring (as the sizing model and the validator define it): GPU g sits on leaf g // d1. Two
tiers: every leaf reaches every spine with q1 parallel links. Three tiers: leaf l is in pod
l // L and reaches the pod's A spines (pod * A + j) with q1 links each; spine (pod, j) reaches the
C cores of group j (j * C + c) with q2 links each.

Torus wiring: see ``torus_fabric``. A family builds its plane's graph (``Family.build_fabric``),
from these or of its own (the rail families' and the OCS direct-connect graphs live in their
packages), and hands it to the simulator.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import IntEnum
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from planner.design import Design

if TYPE_CHECKING:
    import networkx as nx

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


class NodeKind(IntEnum):
    """What a node of the fabric graph is."""

    GPU = 0
    """An accelerator (its NIC port is its one link into the plane)."""
    NIC_PORT = 1
    """A NIC port of a multi-port NIC, when ports are modelled apart from the GPU."""
    SWITCH = 2
    """A packet switch (leaf, spine, core, or a torus switch)."""
    OCS_PORT = 3
    """A port of an optical circuit switch."""
    SCALE_UP_SWITCH = 4
    """A switch of the scale-up domain (NVLink)."""
    CIRCUIT = 5
    """One circuit of an OCS direct-connect design: a pseudo-node joining its two spines."""
    ROUTER = 6
    """The router of a chip in a switchless direct network (TPU-style torus): it forwards
    transit traffic like a switch, but sits on the chip, whose injection link is its NIC link."""


#: Node kind of every group when a fabric does not name them: GPUs, then switches.
DEFAULT_KINDS = (NodeKind.GPU,)


@dataclass(frozen=True, eq=False)
class GroupWeights:
    """Two-phase routing weights between groups of switches (OCS blocks, dragonfly groups).

    For the ordered pair of groups (A, B), pair index ``A * groups + B``, the entries
    ``ptr[k] .. ptr[k + 1]`` say which share of the pair's traffic goes through intermediate
    group ``via`` (``via == B``: straight to B, no intermediate); a pair's shares add up to 1.
    A pair with no entries goes straight. The family's routing strategy turns an intermediate
    group into the switches a flow is sent to first (``planner.sim.routing_strategies.ViaRule``).
    """

    groups: int
    ptr: IntArray
    """CSR pointer over the ``groups ** 2`` ordered pairs."""
    via: IntArray
    """Intermediate group of every entry."""
    weight: FloatArray
    """Share of every entry."""
    direct_share: float | None = None
    """Of the demand the weights were set for: the share of the traffic between groups sent
    straight (None: not known)."""
    mean_path: float | None = None
    """Of that demand: the mean number of group-to-group hops (1 straight, 2 through one)."""

    @staticmethod
    def of(
        groups: int,
        a: IntArray,
        b: IntArray,
        via: IntArray,
        weight: FloatArray,
        direct_share: float | None = None,
        mean_path: float | None = None,
    ) -> GroupWeights:
        """Weights from entries (a, b, via, weight), in any order; shares are scaled to sum to 1."""
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        key = a * groups + b
        order = np.lexsort((np.asarray(via), key))
        key, via = key[order], np.asarray(via, dtype=np.int64)[order]
        weight = np.asarray(weight, dtype=np.float64)[order]
        total = np.bincount(key, weights=weight, minlength=groups * groups)
        counts = np.bincount(key, minlength=groups * groups)
        ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        share = weight / np.where(total > 0, total, 1.0)[key]
        return GroupWeights(groups, ptr, via, share, direct_share, mean_path)

    def entries(self, a: IntArray, b: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
        """(index into a, intermediate group, share) of pairs (a[i], b[i]); straight when unset."""
        key = np.asarray(a, dtype=np.int64) * self.groups + np.asarray(b, dtype=np.int64)
        count = self.ptr[key + 1] - self.ptr[key]
        bare = np.flatnonzero(count == 0)
        owner = np.repeat(np.arange(key.size), count)
        pos = np.repeat(self.ptr[key] - np.cumsum(count) + count, count) + np.arange(
            int(count.sum())
        )
        return (
            np.concatenate([owner, bare]),
            np.concatenate([self.via[pos], np.asarray(b, dtype=np.int64)[bare]]),
            np.concatenate([self.weight[pos], np.ones(bare.size)]),
        )


#: Adaptive routing (``Fabric.adapt``): (fabric, a phase's source GPUs, destination GPUs, bytes
#: per flow) -> the fabric the phase is routed on, its strategy's weights set for that demand.
Adapt = Callable[["Fabric", IntArray, IntArray, FloatArray], "Fabric"]
#: Failures of switches a graph merges (``Fabric.degrade``): names -> (the plane after those
#: of them it knows fail, or None if it knows none; the names it does not know).
Degrade = Callable[[tuple[str, ...]], tuple["Fabric | None", tuple[str, ...]]]


@dataclass(frozen=True)
class Fabric:
    """One plane's nodes and links, with a mask of links that are alive."""

    gpus: int
    planes: int
    link_speed_gbps: float
    """Speed of every link, unless ``class_speed_gbps`` sets one per link class."""
    tier_offsets: tuple[int, ...]
    """First node id of each node group (tier): (0 for GPUs, first leaf, first tier-2 switch,
    ...), then the total. A torus has two groups: GPUs, then its switches (or routers)."""
    lower: IntArray
    """Lower node of every physical link (for a torus link: the ring position r)."""
    upper: IntArray
    """Upper node of every physical link (for a torus link: the ring position r + 1 mod k)."""
    link_class: IntArray
    """Class of every physical link. Tiered fabrics: the tier of its lower end (0 = GPU to leaf,
    1 = leaf up, 2 = spine up). Torus: 0 = GPU to switch, 1 = torus link."""
    alive: BoolArray
    """Per directed link (2 i up, 2 i + 1 down): False once failed."""
    roles: tuple[str, ...] = ("gpu", "leaf", "spine", "core")
    """Name of each node group, used in node names ('spine3')."""
    circuit_device: IntArray | None = None
    """OCS direct-connect: the device of every circuit (the top tier's pseudo-nodes)."""
    strategy: str = "up_down"
    """Routing strategy: a key of ``planner.sim.routing.STRATEGIES``."""
    dims: tuple[int, ...] = ()
    """Torus: ring sizes k_0, k_1, ...; switch ``first_switch + r`` has the mixed-radix
    coordinates of r, dimension 0 fastest (``coords``). Empty for tiered fabrics."""
    class_speed_gbps: tuple[float, ...] | None = None
    """Speed of each link class (index = ``link_class``); None: every link at ``link_speed_gbps``."""
    group_kinds: tuple[NodeKind, ...] | None = None
    """Kind of each node group; None: GPUs, then switches in every other group."""
    design_class: IntArray | None = None
    """The design's link class of every physical link, -1 for a link the design does not price
    (a chip's own injection port, a mesh link inside a cube); None: ``link_class``."""
    rail_only: bool = False
    """True when the scale-out wiring joins only GPUs of one rail (rail-only fabrics): GPUs whose
    rails (``rails``) differ share no switch, so traffic between them must cross the scale-up
    domain to the GPU on the destination's rail first (PXN)."""
    rails: int = 0
    """Rail period of the scale-out wiring: GPU g's rail is g % rails (its rank in a rail group
    that sits inside one scale-up domain); 0 = the node's NIC index (g % gpus_per_node)."""
    adapt: Adapt | None = None
    """Routing that adapts to the traffic (traffic engineering on an OCS fabric, UGAL on a
    dragonfly): the simulator routes every phase on ``adapted(...)``, the fabric this returns
    for the phase's demand, on healthy and failed planes alike (so a failure's weights are
    recomputed on what survives). None: routes do not depend on the traffic."""
    group_weights: GroupWeights | None = None
    """Two-phase weights between switch groups that the strategy reads, set by ``adapt``."""
    degrade: Degrade | None = None
    """Failures of switches that are not nodes of this graph (the spines of a block or the OCS
    devices of a fabric whose identical slices are merged into one block node): the family builds
    the plane after them (``planner.sim.scenarios`` asks it first). None: every switch is a node."""

    # ---- sizes and derived arrays ----------------------------------------------------------
    @property
    def nodes(self) -> int:
        """All nodes: GPUs and switches."""
        return self.tier_offsets[-1]

    @property
    def tiers(self) -> int:
        """Switch tiers (node groups after the GPUs; 1 for a torus)."""
        return len(self.tier_offsets) - 2

    @property
    def first_switch(self) -> int:
        """Node id of the first switch: every node from here on forwards traffic."""
        return self.tier_offsets[1]

    @property
    def switches(self) -> int:
        """Nodes that forward traffic (switches, routers, circuits)."""
        return self.nodes - self.first_switch

    @property
    def physical_links(self) -> int:
        """Physical links of the plane."""
        return int(self.lower.size)

    @property
    def links(self) -> int:
        """Directed links of the plane."""
        return 2 * self.physical_links

    @cached_property
    def src(self) -> IntArray:
        """Tail node of every directed link (read-only, built once: routing reads it per hop)."""
        out = np.empty(self.links, dtype=np.int64)
        out[0::2], out[1::2] = self.lower, self.upper
        out.setflags(write=False)
        return out

    @cached_property
    def dst(self) -> IntArray:
        """Head node of every directed link (read-only, built once)."""
        out = np.empty(self.links, dtype=np.int64)
        out[0::2], out[1::2] = self.upper, self.lower
        out.setflags(write=False)
        return out

    @property
    def directed_class(self) -> IntArray:
        """Link class of every directed link."""
        return np.repeat(self.link_class, 2)

    @property
    def design_classes(self) -> IntArray:
        """The design's link class of every physical link (-1: not one of the design's links)."""
        return self.link_class if self.design_class is None else self.design_class

    @property
    def link_classes(self) -> int:
        """Number of link classes (largest class + 1)."""
        return int(self.link_class.max()) + 1 if self.link_class.size else 0

    @property
    def speed_gbps(self) -> FloatArray:
        """Speed of every directed link whether alive or not."""
        if self.class_speed_gbps is None:
            return np.full(self.links, float(self.link_speed_gbps))
        return np.asarray(self.class_speed_gbps, dtype=np.float64)[self.directed_class]

    @property
    def capacity_gbps(self) -> FloatArray:
        """Capacity of every directed link; zero when it has failed."""
        if self.class_speed_gbps is None:
            return np.where(self.alive, self.link_speed_gbps, 0.0)
        return np.where(self.alive, self.speed_gbps, 0.0)

    @property
    def nic_speed_gbps(self) -> float:
        """Speed of a GPU's NIC link in this plane (link class 0)."""
        if self.class_speed_gbps is None:
            return float(self.link_speed_gbps)
        return float(self.class_speed_gbps[0])

    @property
    def node_kind(self) -> npt.NDArray[np.int8]:
        """Kind (a ``NodeKind`` value) of every node."""
        kinds = self.group_kinds or DEFAULT_KINDS + (NodeKind.SWITCH,) * self.tiers
        sizes = np.diff(np.asarray(self.tier_offsets))
        return np.repeat(np.asarray([int(k) for k in kinds], dtype=np.int8), sizes)

    @cached_property
    def coords(self) -> IntArray:
        """Torus coordinates of every switch: shape (switches, len(dims)), row = node - first_switch.

        coords[r, d] = (r // prod(dims[:d])) % dims[d]  (mixed radix, dimension 0 fastest).
        """
        r = np.arange(self.switches, dtype=np.int64)
        strides = np.concatenate([[1], np.cumprod(self.dims)[:-1]]).astype(np.int64)
        return (r[:, np.newaxis] // strides[np.newaxis, : len(self.dims)]) % np.asarray(
            self.dims, dtype=np.int64
        )

    def tier_of(self, nodes: IntArray) -> IntArray:
        """Node group (tier) of each node (0 = GPU, 1 = leaf or torus switch, ...)."""
        return np.searchsorted(np.asarray(self.tier_offsets[1:]), nodes, side="right").astype(
            np.int64
        )

    def leaf_of(self, gpus: IntArray) -> IntArray:
        """Node id of each GPU's first switch: physical link g is GPU g's NIC link."""
        return self.upper[np.asarray(gpus, dtype=np.int64)]

    def node_name(self, node: int) -> str:
        """Readable name: gpu12, leaf3, spine0, core7, switch5 (the group's role and index)."""
        tier = int(self.tier_of(np.array([node]))[0])
        return f"{self.roles[tier]}{node - self.tier_offsets[tier]}"

    def class_name(self, link_class: int) -> str:
        """Name of a link class from the roles at its two ends: 'gpu-leaf', 'switch-switch'."""
        hit = np.flatnonzero(self.link_class == link_class)
        if hit.size == 0:
            return f"class{link_class}"
        lo, up = self.tier_of(np.array([self.lower[hit[0]], self.upper[hit[0]]]))
        return f"{self.roles[int(lo)]}-{self.roles[int(up)]}"

    # ---- failures ---------------------------------------------------------------------------
    def adapted(self, src: IntArray, dst: IntArray, size_bytes: FloatArray) -> Fabric:
        """The fabric a phase of these flows is routed on (``adapt``); itself when not adaptive.

        What ``adapt`` returns has no ``adapt`` of its own, so adapting twice changes nothing.
        """
        if self.adapt is None:
            return self
        out = self.adapt(self, src, dst, size_bytes)
        return out if out.adapt is None else replace(out, adapt=None)

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
        """The plane as a networkx multigraph of alive directed links with a ``capacity`` in Gb/s.

        Nodes carry their ``tier`` (node group) and ``kind`` (a ``NodeKind``), and torus
        switches their ``coords``.
        """
        import networkx as nx  # the simulator itself runs on arrays; only this view needs it

        g = nx.MultiDiGraph()
        tier = self.tier_of(np.arange(self.nodes))
        kind = self.node_kind
        for node in range(self.nodes):
            g.add_node(node, tier=int(tier[node]), kind=NodeKind(int(kind[node])))
        if self.dims:
            for r, c in enumerate(self.coords.tolist()):
                g.nodes[self.first_switch + r]["coords"] = tuple(c)
        src, dst, cap = self.src, self.dst, self.capacity_gbps
        for e in np.flatnonzero(self.alive):
            g.add_edge(int(src[e]), int(dst[e]), key=int(e), capacity=float(cap[e]))
        return g


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


def torus_links_per_plane(dims: tuple[int, ...], parallel_links: int) -> int:
    """Torus (switch-to-switch) physical links of one plane of ``torus_fabric``.

    links = q * sum_d  { N if k_d >= 3;  N / 2 if k_d == 2;  0 if k_d == 1 },   N = prod(dims)
    """
    n = math.prod(dims)
    return parallel_links * sum(n if k >= 3 else n // 2 if k == 2 else 0 for k in dims)


def torus_fabric(
    gpus: int,
    planes: int,
    dims: tuple[int, ...],
    gpus_per_switch: int,
    parallel_links: int,
    link_speed_gbps: float,
    host_speed_gbps: float | None = None,
    roles: tuple[str, str] = ("gpu", "switch"),
    *,
    switch_kind: NodeKind = NodeKind.SWITCH,
    strategy: str = "dimension_order",
) -> Fabric:
    """One plane of a k-ary n-cube (torus) of switches, each with its GPUs, routed by DOR.

    Nodes: GPUs ``0 .. gpus-1``, then N = prod(dims) switches; switch ``gpus + r`` has the
    mixed-radix coordinates of r, dimension 0 fastest (``Fabric.coords``).

    Links, in this order (physical link g is GPU g's NIC link):

    * class 0, one per GPU: GPU g -> switch g // gpus_per_switch, at ``host_speed_gbps``
      (default ``link_speed_gbps``). The last switches hold fewer GPUs (or none) when ``gpus``
      does not fill them.
    * class 1, torus links at ``link_speed_gbps``, dimension by dimension: along a dimension of
      size k, every ring (the switches that differ only in that coordinate) is wired
      ``r -> r + 1 mod k`` (lower = r, upper = r + 1), so

        - k >= 3: k links per ring, N links in the dimension (every switch has a + and a -
          neighbour);
        - k == 2: ONE link per ring (its two neighbours coincide), N / 2 links (lower = the
          switch with coordinate 0);
        - k == 1: none;

      each repeated ``parallel_links`` (q) times as separate physical links, so ECMP sees q next
      hops. Links per plane: q * sum_d (N if k_d >= 3, N / 2 if k_d == 2, else 0)
      (``torus_links_per_plane``); a switch's torus degree is 2 q per dimension with k >= 3 and
      q per dimension with k == 2.

    A switchless torus of chips (TPU-style) is ``gpus_per_switch = 1`` with the chip's router as
    the "switch": pass ``switch_kind=NodeKind.ROUTER`` (and e.g. ``roles=("chip", "router")``)
    and the chip's injection bandwidth as ``host_speed_gbps``; routing is the same.

    Raises
    ------
    ValueError
        Empty or non-positive sizes, or more GPUs than the switches hold.
    """
    dims = tuple(int(k) for k in dims)
    if not dims or min(dims) < 1:
        raise ValueError(f"torus dims must be one or more sizes >= 1; got {dims}")
    if gpus_per_switch < 1 or parallel_links < 1 or planes < 1 or gpus < 1:
        raise ValueError("gpus, planes, gpus_per_switch and parallel_links must be >= 1")
    n = math.prod(dims)
    if gpus > n * gpus_per_switch:
        raise ValueError(f"{gpus} GPUs do not fit on {n} switches of {gpus_per_switch} GPUs each")
    gpu = np.arange(gpus, dtype=np.int64)
    r = np.arange(n, dtype=np.int64)
    stride = 1
    lowers, uppers = [gpu], [gpus + gpu // gpus_per_switch]
    for k in dims:
        coord = (r // stride) % k
        ring = r[coord == 0] if k == 2 else r if k >= 3 else r[:0]
        nxt = ring + np.where((ring // stride) % k == k - 1, (1 - k) * stride, stride)
        lowers.append(np.repeat(gpus + ring, parallel_links))
        uppers.append(np.repeat(gpus + nxt, parallel_links))
        stride *= k
    lower = np.concatenate(lowers)
    classes = np.ones(lower.size, dtype=np.int64)
    classes[:gpus] = 0
    host = float(link_speed_gbps if host_speed_gbps is None else host_speed_gbps)
    return Fabric(
        gpus=gpus,
        planes=planes,
        link_speed_gbps=float(link_speed_gbps),
        tier_offsets=(0, gpus, gpus + n),
        lower=lower,
        upper=np.concatenate(uppers),
        link_class=classes,
        alive=np.ones(2 * lower.size, dtype=bool),
        roles=tuple(roles),
        strategy=strategy,
        dims=dims,
        class_speed_gbps=(host, float(link_speed_gbps)),
        group_kinds=(NodeKind.GPU, switch_kind),
    )
