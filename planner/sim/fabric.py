"""The concrete fabric graph of one plane, as index arrays, and the routing strategy it carries.

Every physical link is kept (parallel links stay separate, so ECMP has real choices) and runs in
two directed links: ``2 i`` goes from ``lower[i]`` to ``upper[i]`` ("up") and ``2 i + 1`` back
("down"). Nodes are numbered in groups (``tier_offsets``): GPUs ``0 .. E-1`` (one NIC port each)
first, then the switch groups. GPU g's NIC link is physical link g. Planes are identical copies;
the simulator sizes traffic per plane and builds one of them.

Each node has a kind (``NodeKind``, one per group). The plane carries its routing strategy
(``Fabric.strategy``, a ``RoutingStrategy`` object: no registry looked up by name) and,
optionally, the bound its family proves for its structure (``Fabric.bound``).

This module assumes no family's geometry: every family builds its plane's graph in its own
package (``Family.build_fabric``; the folded Clos in ``planner.families.clos.fabric``, the torus
in ``planner.families.torus.fabric``, ...) and hands it to the simulator, which reads only the
arrays, the node kinds and the link classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import IntEnum
from functools import cached_property
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from planner.sim.bound_types import BlockSolver, ScaledBound, SwitchDemand, SwitchLinks

if TYPE_CHECKING:
    import networkx as nx

    from planner.design import Design

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


# ---- routing strategies --------------------------------------------------------------------
#: Distance of a leaf that cannot be reached.
UNREACHABLE = np.int16(32_000)
#: A rule on candidate next hops: (directed link ids, destination leaf node ids) -> allowed.
LinkRule = Callable[[IntArray, IntArray], BoolArray]
#: A two-phase (Valiant-style) rule: (source leaves, destination leaves) of leaf pairs ->
#: (pair index, intermediate switch, weight) entries, the weights of a pair adding up to 1.
#: Spraying splits a pair's flows over its intermediates by weight; ECMP hashes each flow onto
#: one of them with those probabilities. An intermediate that a leg cannot reach is dropped and
#: the pair's other weights are scaled up; a pair left with none is cut off.
ViaRule = Callable[[IntArray, IntArray], tuple[IntArray, IntArray, FloatArray]]


@dataclass(frozen=True)
class NextHops:
    """What a strategy tells the switches about a set of destination leaves.

    The next hops of switch v towards leaf l are the alive links v -> w with
    ``allowed(v -> w, l)`` and ``dist[w, l] = dist[v, l] - 1``.
    """

    dist: npt.NDArray[np.int16]
    """Hop distance (switches, leaves), row = node id - first switch; UNREACHABLE when cut off."""
    allowed: LinkRule | None = None
    """Extra rule on next hops; None: every alive link that brings the packet one hop closer."""
    via: ViaRule | None = None
    """Two-phase routing: intermediate switches a flow goes to first (``ViaRule``), then on to its
    destination, each leg on these next hops; None: straight to the destination."""


@dataclass(frozen=True)
class RoutingStrategy:
    """Which next hops a switch may take: a name, the next hops, what may be assumed of routes.

    A plane carries its strategy object (``Fabric.strategy``); the family that builds the plane
    picks it, so a strategy needs no registry and no import to be found. The generic ones are
    in ``planner.sim.routing_strategies``; a family's own live in its package.
    """

    name: str
    """Its name in messages and tables (``up_down``, ``dragonfly_valiant``, ...)."""
    next_hops: Callable[[Fabric, IntArray], NextHops]
    """(fabric, destination leaves as node ids, sorted and unique) -> NextHops."""
    valley_free: bool = False
    """Routes climb the fabric's tiers until a switch reaches the destination leaf going down,
    then descend. What the ECMP index, the stand-in leaves, the spraying halves and the htsim
    fat-tree export rely on."""

    def __call__(self, fabric: Fabric, leaves: IntArray) -> NextHops:
        """The strategy's next hops towards these leaves (sorted, unique node ids)."""
        return self.next_hops(fabric, leaves)


#: Adaptive routing (``Fabric.adapt``): (fabric, a phase's source GPUs, destination GPUs, bytes
#: per flow) -> the fabric the phase is routed on, its strategy's weights set for that demand.
Adapt = Callable[["Fabric", IntArray, IntArray, FloatArray], "Fabric"]
#: The optimal-routing bound a family proves for its plane's structure (``Fabric.bound``):
#: (fabric, alive switch links, switch-level demand, the leaf cut's lambda, a small-LP solver)
#: -> an upper bound on lambda and whether it is exact, or None when the plane (after failures,
#: say) no longer has the structure the proof needs. ``planner.sim.bound_scaled`` asks it first.
StructureBound = Callable[
    ["Fabric", SwitchLinks, SwitchDemand, float, BlockSolver], "ScaledBound | None"
]
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
    strategy: RoutingStrategy
    """Its routing strategy, chosen by the family that built the plane."""
    roles: tuple[str, ...] = ("gpu", "leaf", "spine", "core")
    """Name of each node group, used in node names ('spine3')."""
    circuit_device: IntArray | None = None
    """The device of every circuit when the top group's nodes are circuits (pseudo-nodes of a
    circuit-switched layer), else None."""
    device_role: str = "device"
    """What a failure names one of ``circuit_device``'s devices by: ``{device_role}{index}``."""
    dims: tuple[int, ...] = ()
    """Lattice sizes k_0, k_1, ... of a plane whose switches sit on a grid (a torus): switch
    ``first_switch + r`` has the mixed-radix coordinates of r, dimension 0 fastest (``coords``).
    Empty for a plane whose switches have no coordinates."""
    gpu_speed_gbps: FloatArray | None = None
    """NIC speed of each GPU in this plane when they differ (the older blocks of a fabric of mixed
    generations); None: every GPU at ``nic_speed_gbps``."""
    class_speed_gbps: tuple[float, ...] | None = None
    """Speed of each link class (index = ``link_class``); None: every link at ``link_speed_gbps``."""
    group_kinds: tuple[NodeKind, ...] | None = None
    """Kind of each node group; None: GPUs, then switches in every other group."""
    design_class: IntArray | None = None
    """The design's link class of every physical link, -1 for a link the design does not price
    (a chip's own injection port, a mesh link inside a cube); None: ``link_class``."""
    forced_pxn: bool = False
    """True when the scale-out wiring joins only GPUs of one rail: GPUs whose rails (``rails``)
    differ share no switch, so traffic between them must cross the scale-up domain to the GPU on
    the destination's rail first (PXN), whatever the [verify] section asks."""
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
    bound: StructureBound | None = None
    """The optimal-routing bound the family proves for its structure (cuts and closed forms,
    ``StructureBound``); None: the simulator's generic bounds only."""
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
    def nic_rates_gbps(self) -> float | FloatArray:
        """Each GPU's NIC speed in this plane when they differ, else the one speed of them all."""
        return self.nic_speed_gbps if self.gpu_speed_gbps is None else self.gpu_speed_gbps

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


@runtime_checkable
class BuildsFabric(Protocol):
    """The role a family plays for the simulator: it builds one plane of its designs."""

    def build_fabric(self, design: Design) -> Fabric:
        """The fabric graph of one plane of the design (its strategy and bound on it)."""
        ...


def classes_by_speed(
    design_class: IntArray, speed: FloatArray
) -> tuple[IntArray, tuple[float, ...]]:
    """Link classes of a plane whose links of one kind run at different speeds.

    One class per (design class, speed) pair, ordered by design class and then fastest first, so
    class 0 is the fastest GPU links (the speed ``Fabric.nic_speed_gbps`` reads); returns each
    link's class and each class's speed (``Fabric.class_speed_gbps``). ``design_class`` keeps
    the kind (``Fabric.design_class``).
    """
    keys = np.stack([design_class.astype(np.float64), -np.asarray(speed, dtype=np.float64)], 1)
    unique, link_class = np.unique(keys, axis=0, return_inverse=True)
    return link_class.reshape(-1).astype(np.int64), tuple(float(-k[1]) for k in unique)
