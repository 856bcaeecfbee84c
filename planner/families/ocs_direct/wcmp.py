"""Traffic-engineered routing of an OCS direct-connect fabric: WCMP over direct and transit paths.

Jupiter (Poutievski et al., SIGCOMM 2022) routes its direct-connect fabric with traffic
engineering: each block pair's traffic is split over its direct circuits and over paths through
one transit block, by weights from an LP on the measured block demand. This module is that
routing for the planner: the circuits it needs, the simulator's graph, the strategy, and the
weights set per traffic phase.

Slices. Spine g of every block is cabled to its own OCS devices, so a circuit joins spine g of
one block to spine g of another: the layer is S independent slices, one per spine index. A leaf
sprays every flow over all its spines (its equal uplinks), so slice g carries 1/S of every block
pair's traffic, and a spine forwards a transit flow on its own slice (spine g of T, from the
circuit from A to the circuit to B, never down into T's leaves). The sizing gives every spine
room for a circuit to every other block (``models.clos_sizing``, ``ocs.spine_reach``), and the
circuits are the same slice topology y on every spine (``slice_circuits``): the slices are then
identical, each carries exactly 1/S of the demand over y, and the traffic engineering of one
slice is that of the block-level circuits x = S y.

The simulator's graph (``wcmp_fabric``): the S identical slices are merged. Nodes: GPUs, leaves,
and one node per block standing for its spines. Links: class 0, GPU to leaf; class 1, a leaf to
its block, at the speed of all its uplinks; class 2 and up, the circuits of a block pair, one
link per circuit of the slice topology standing for its S copies (a class per number of copies
a link stands for: S when healthy). Under spraying the merge is exact: every slice's link carries
1/S of what the merged link carries, at 1/S of its speed. Under ECMP a flow is hashed onto one
block path with the weights as probabilities and onto one of the pair's merged links; the S
copies of a merged link share its speed, so two flows that a real fabric would hash onto the same
spine's circuit are not seen to collide there (ECMP figures are optimistic by that much).

Block generations (``Design.block_speed_gbps``). A block's spine uplinks run at its own rate
r_b, so a circuit between blocks a and b runs at min(r_a, r_b) (Poutievski et al.: most Jupiter
fabrics mix block speeds): a merged circuit link's speed is copies x min(r_a, r_b) (classes by
distinct speeds), a leaf's merged uplink runs at uplinks x r_b, and the TE LP gets the per-pair
rates (``circuit_rates_gbps``). The GPU links stay at the design's NIC speed
(``link_speed_gbps``): a block's generation is its spines' optics, not its NICs.

Routing (the ``ocs_wcmp`` strategy): minimal hops over the alive links, and two-phase via the
fabric's ``GroupWeights``: a leaf pair in blocks (A, B) sends the TE share of (A, B) straight
(leaf, A, a circuit, B, leaf) and the share through T to T's block node first. The valley-free
rule of the up-down fabrics is thus relaxed exactly where the weights say transit.

Weights (``adapt_te``): for every phase the simulator runs, the block demand of its flows (as
rates: the busiest GPU at its NIC's speed) goes to the TE LP (``models.ocs_te``) over the alive
circuits, with the instance's hedge; a failure's fabric gets its own weights on what survived.

Failures of what the merged graph does not show as a node (``fail_named``): ``spineN`` (spine
N % S of block N // S: its leaves lose one uplink's worth, its circuits one copy each) and
``ocsN`` (device N: its circuits lose one copy each). The merged block then still lets a flow
move between slices at the block, which a real spine cannot: after such a failure the figures
are those of leaves and spines that rebalance perfectly (an optimistic bound on the real one).
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from models import ocs_te
from planner.design import Design
from planner.errors import InputError
from planner.families.ocs_direct.tables import Circuit, OcsLayer, layer_of
from planner.sim.fabric import Fabric, FloatArray, GroupWeights, IntArray, NodeKind, RoutingStrategy
from planner.sim.routing_strategies import UNREACHABLE, NextHops
from planner.sim.traffic import busiest_s
from planner.units import BITS_PER_BYTE

#: Link classes of the merged graph: GPU to leaf, leaf to block, then circuits by copies.
GPU_CLASS, LEAF_CLASS, CIRCUIT_CLASS = 0, 1, 2
#: Longest time (s) one phase's traffic engineering may take.
TE_TIME_S = 20.0
#: Relative margin by which an engineered slice must beat the mesh to be kept.
UTILISATION_RTOL = 1e-6


# ---- the circuits ---------------------------------------------------------------------------------
def spine_uplinks(layer: OcsLayer) -> int:
    """Ports of one spine into the OCS layer: the circuits one slice gives a block."""
    return layer.devices_per_spine * layer.ports_per_device


def slice_circuits(
    layer: OcsLayer, pairs: tuple[tuple[int, int, int], ...]
) -> tuple[Circuit, ...] | None:
    """The slice topology ``pairs`` (a, b, y_ab) on the devices of every spine, the same on each.

    One slice is realised on its D devices by the 2-factor construction (each block has an even
    number of ports on every device: exact when every block's degree fits its spine's ports),
    then repeated on every spine's devices. None when the construction does not apply.
    """
    from models import ocs_assignment as oa

    d = layer.devices_per_spine
    ports = [[layer.ports_per_device] * d for _ in range(layer.blocks)]
    y = oa.two_factor_assignment(pairs, ports)
    if y is None:
        return None
    one = sorted((i, j, o, k) for (i, j, o), k in y.items() if k > 0)
    return tuple(sorted((i, j, g * d + o, k) for g in range(layer.spines) for i, j, o, k in one))


#: Longest time (s) the topology model may take to engineer one slice for a demand.
SLICE_ENGINEER_TIME_S = 10.0


@dataclass(frozen=True)
class SliceEngineering:
    """The slice topology kept, how it serves the demand, and what was tried."""

    circuits: tuple[Circuit, ...]
    source: str
    """``mesh`` (the balanced mesh on every slice) or ``engineered`` (for the demand)."""
    max_utilisation: float | None
    """The TE LP's busiest circuit utilisation of the demand on these circuits (None: no demand
    crosses a circuit)."""
    tried: dict[str, float]
    """Every candidate's max utilisation under the TE LP."""
    cut: tuple[str, ...] = ()


def engineer_slices(
    design: Design,
    demand_gbps: FloatArray | None,
    *,
    hedge: float = 0.0,
    deadline_s: float = math.inf,
) -> SliceEngineering:
    """One slice topology for every spine: the balanced mesh, or one engineered for the demand.

    Candidates: the balanced mesh of the spine's uplinks (every pair floor or ceil of
    U_s / (n - 1) circuits, ``models.ocs_topology.uniform_mesh``), and with a demand the
    one-transit topology model's optimum for it (``models.ocs_topology``, ``transit = True``,
    within ``SLICE_ENGINEER_TIME_S`` and the absolute ``deadline_s``). Each is judged by the TE LP
    that will route it (``te_of``, at each pair's circuit rate); the least busiest-circuit
    utilisation is kept, the mesh on ties. The topology model sees one circuit rate (the design's
    link speed): with blocks of mixed generations its optimum is a candidate, not the optimum. The kept topology is placed on every spine's devices (``slice_circuits``).
    """
    from models import ocs_topology as ot

    layer = layer_of(design)
    n, u = layer.blocks, spine_uplinks(layer)
    candidates: list[tuple[str, tuple[tuple[int, int, int], ...]]] = [
        ("mesh", ot.uniform_mesh(n, u))
    ]
    cut: list[str] = []
    crossing = demand_gbps is not None and (demand_gbps - np.diag(np.diag(demand_gbps)) > 0).any()
    if crossing and demand_gbps is not None:
        left = deadline_s - time.perf_counter()
        if left > 0:
            problem = ot.TopologyProblem(
                blocks=n,
                uplinks=(u,) * n,
                demand=tuple(tuple(float(v) for v in row) for row in demand_gbps),
                circuit_gbps=float(design.link_speed_gbps) * layer.spines,
                transit=True,
                spines=1,
            )
            topo = ot.solve(ot.build(problem), time_limit_s=min(SLICE_ENGINEER_TIME_S, left))
            if topo.status.has_solution and topo.circuits:
                candidates.append(("engineered", tuple(topo.circuits)))
        else:
            cut.append("the slice topology was not engineered for the demand (time limit)")
    tried: dict[str, float] = {}
    best: tuple[float, str, tuple[Circuit, ...]] | None = None
    for source, pairs in candidates:
        placed = slice_circuits(layer, pairs)
        if placed is None:
            continue
        util = (
            te_of(design, placed, demand_gbps, hedge).max_utilisation
            if crossing and demand_gbps is not None
            else 0.0
        )
        tried[source] = util
        if best is None or util < best[0] * (1 - UTILISATION_RTOL):
            best = (util, source, placed)
    if best is None:
        raise ValueError("no slice topology could be placed on the devices")
    util, source, placed = best
    return SliceEngineering(placed, source, util if crossing else None, tried, tuple(cut))


def slice_topology(circuits: tuple[Circuit, ...], layer: OcsLayer) -> npt.NDArray[np.int64] | None:
    """The circuits of every slice as one matrix y (blocks x blocks), None if slices differ."""
    d = layer.devices_per_spine
    per = np.zeros((layer.spines, layer.blocks, layer.blocks), dtype=np.int64)
    for a, b, o, k in circuits:
        per[o // d, a, b] += k
        per[o // d, b, a] += k
    if not (per == per[0]).all():
        return None
    return per[0]


# ---- block generations ------------------------------------------------------------------------
def uplink_rates_gbps(design: Design) -> FloatArray:
    """The rate of one uplink of every block into the OCS layer (``Design.block_rate_gbps``)."""
    return np.array([design.block_rate_gbps(b) for b in range(design.pods)], dtype=np.float64)


def circuit_rates_gbps(design: Design) -> float | FloatArray:
    """What one circuit carries: one rate when every block runs alike, else per pair (n x n).

    A circuit between blocks a and b runs at the slower end's rate, min(r_a, r_b).
    """
    rate = uplink_rates_gbps(design)
    if rate.size == 0 or (rate == rate[0]).all():
        return float(rate[0]) if rate.size else float(design.link_speed_gbps)
    return np.minimum.outer(rate, rate)


# ---- the merged graph -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Merged:
    """What the merged graph is built from: one link per circuit of the slice topology."""

    blocks: int
    spines: int
    pair_a: IntArray
    """Lower block of every circuit link, sorted by pair."""
    pair_b: IntArray
    device: IntArray
    """The device of the link's circuit on slice 0 (on slice g: ``g D + device``)."""
    copies: IntArray
    """Circuits each link stands for (S when healthy: one per slice)."""
    leaf_uplinks: IntArray
    """Alive uplinks of every leaf (S q1 when healthy)."""


def merged_of(design: Design) -> Merged:
    """The merged graph of a design whose slices are identical (``slice_topology``)."""
    layer = layer_of(design)
    if slice_topology(design.circuits, layer) is None:
        raise ValueError(
            "WCMP routing needs the same circuits on every spine's slice; these circuits differ "
            "between spines (engineer them with search.ocs_routing = 'wcmp')"
        )
    d = layer.devices_per_spine
    first = sorted((a, b, o) for a, b, o, k in design.circuits if o < d for _ in range(k))
    a, b, o = (
        (np.array(col, dtype=np.int64) for col in zip(*first, strict=True))
        if first
        else (np.zeros(0, dtype=np.int64),) * 3
    )
    leaf = design.tiers[0]
    return Merged(
        layer.blocks,
        layer.spines,
        a,
        b,
        o,
        np.full(a.size, layer.spines, dtype=np.int64),
        np.full(leaf.switches, leaf.uplinks, dtype=np.int64),
    )


def graph_of(design: Design, merged: Merged, hedge: float, healthy: bool = True) -> Fabric:
    """The simulator's graph of one plane from its merged circuits (module docstring).

    A GPU's link runs at its block's rate (its NIC's generation), a leaf's merged uplink at its
    alive uplinks x its block's rate, a merged circuit link at copies x the slower end's rate
    (``Design.block_rate_gbps``); GPUs slower than ``link_speed_gbps`` get classes of their own
    after the circuits' and their rates in ``Fabric.gpu_speed_gbps`` (the ideal counts them). ``healthy``: the graph of the design as built, which can fail its spines and devices
    (``Fabric.degrade``); a graph after failures cannot fail more of them.
    """
    leaf = design.tiers[0]
    c = float(design.link_speed_gbps)
    n_leaf, p = leaf.switches, merged.blocks
    offsets = (0, design.gpus, design.gpus + n_leaf, design.gpus + n_leaf + p)
    gpu = np.arange(design.gpus, dtype=np.int64)
    leaves = np.arange(n_leaf, dtype=np.int64)
    block_of_leaf = leaves // design.leaves_per_pod
    # Classes: 0 GPU links, 1 leaf links by speed (alive uplinks x the block's rate), then
    # circuit links by speed (copies x the slower end's rate).
    rate = uplink_rates_gbps(design)
    leaf_speed = merged.leaf_uplinks.astype(np.float64) * rate[block_of_leaf]
    pair_rate = np.minimum(rate[merged.pair_a], rate[merged.pair_b])
    circuit_speed = merged.copies.astype(np.float64) * pair_rate
    up_values, up_class = np.unique(leaf_speed, return_inverse=True)
    copy_values, copy_class = np.unique(circuit_speed, return_inverse=True)
    leaf_class = LEAF_CLASS + up_class
    circuit_class = LEAF_CLASS + up_values.size + copy_class
    gpu_rate = rate[block_of_leaf[gpu // leaf.downlinks]] if rate.size else np.full(gpu.size, c)
    slow_values, slow_class = np.unique(gpu_rate, return_inverse=True)
    slower = slow_values < c
    first_slow = LEAF_CLASS + up_values.size + copy_values.size
    gpu_class = np.where(gpu_rate < c, first_slow + slow_class, 0).astype(np.int64)
    speeds = (
        c,
        *(float(v) for v in up_values),
        *(float(v) for v in copy_values),
        *(float(v) for v in slow_values[slower]),
    )
    lower = np.concatenate([gpu, offsets[1] + leaves, offsets[2] + merged.pair_a])
    upper = np.concatenate(
        [offsets[1] + gpu // leaf.downlinks, offsets[2] + block_of_leaf, offsets[2] + merged.pair_b]
    )
    link_class = np.concatenate([gpu_class, leaf_class, circuit_class])
    design_class = np.concatenate(
        [
            np.full(gpu.size, GPU_CLASS),
            np.full(n_leaf, LEAF_CLASS),
            np.full(merged.pair_a.size, CIRCUIT_CLASS),
        ]
    ).astype(np.int64)
    alive = np.ones(2 * lower.size, dtype=bool)
    if (merged.leaf_uplinks == 0).any():  # a leaf with no uplink left: its link is down
        dead = gpu.size + np.flatnonzero(merged.leaf_uplinks == 0)
        alive[2 * dead] = alive[2 * dead + 1] = False
    block_of_gpu = block_of_leaf[gpu // leaf.downlinks]
    return Fabric(
        gpus=design.gpus,
        planes=design.planes,
        link_speed_gbps=c,
        tier_offsets=offsets,
        lower=lower,
        upper=upper,
        link_class=link_class,
        alive=alive,
        roles=("gpu", "leaf", "block"),
        strategy=WCMP,
        class_speed_gbps=speeds,
        gpu_speed_gbps=gpu_rate if slower.any() else None,
        group_kinds=(NodeKind.GPU, NodeKind.SWITCH, NodeKind.SWITCH),
        design_class=design_class,
        adapt=TrafficEngineering(
            block_of_gpu, p, circuit_rates_gbps(design), hedge * float(design.link_speed_gbps)
        ),
        degrade=MergedFailures(design, merged, hedge) if healthy else None,
    )


def wcmp_fabric(design: Design, hedge: float = 0.0) -> Fabric:
    """One plane of a direct-connect design routed by traffic engineering (module docstring).

    ``hedge``: the share of a block's injection by which any one pair's demand may exceed what
    a phase sends and still fit (``search.ocs_hedge``).
    """
    return graph_of(design, merged_of(design), hedge)


# ---- failures the merged graph does not show as nodes ---------------------------------------------
def failed_merged(
    design: Design, merged: Merged, spines: frozenset[int], devices: frozenset[int]
) -> Merged:
    """The merged circuits after whole spines (spine g of block b is ``b S + g``) and devices fail.

    A failed spine takes q1 uplinks from each leaf of its block and, from every circuit link of
    its block, the copy on its slice; a failed device, from each circuit link it carries, that
    copy. A link left with no copy is dropped.
    """
    layer = layer_of(design)
    s, d, p = layer.spines, layer.devices_per_spine, layer.blocks
    spine_dead = np.zeros((p, s), dtype=bool)
    for sp in spines:
        spine_dead[sp // s, sp % s] = True
    device_dead = np.zeros((s, d), dtype=bool)
    for o in devices:
        device_dead[o // d, o % d] = True
    gone = spine_dead[merged.pair_a] | spine_dead[merged.pair_b] | device_dead[:, merged.device].T
    copies = merged.copies - gone.sum(axis=1)
    keep = copies > 0
    leaf = design.tiers[0]
    block_of_leaf = np.arange(leaf.switches) // design.leaves_per_pod
    uplinks = merged.leaf_uplinks - spine_dead.sum(axis=1)[block_of_leaf] * leaf.parallel_links
    return replace(
        merged,
        pair_a=merged.pair_a[keep],
        pair_b=merged.pair_b[keep],
        device=merged.device[keep],
        copies=copies[keep],
        leaf_uplinks=np.maximum(uplinks, 0),
    )


#: A merged switch's name: a spine (spine g of block b is spine b S + g) or an OCS device.
MERGED_NAME = re.compile(r"^(spine|ocs)(\d+)$")


@dataclass(frozen=True, eq=False)
class MergedFailures:
    """``Fabric.degrade`` of a WCMP fabric: spines and OCS devices by name (``failed_merged``)."""

    design: Design
    merged: Merged
    hedge: float

    def __call__(self, names: tuple[str, ...]) -> tuple[Fabric | None, tuple[str, ...]]:
        """The plane after the spines and devices among ``names`` fail, and the other names.

        Raises InputError for a spine or device the design does not have.
        """
        layer = layer_of(self.design)
        spines: set[int] = set()
        devices: set[int] = set()
        left: list[str] = []
        for name in names:
            m = MERGED_NAME.match(name.strip())
            if m is None:
                left.append(name)
                continue
            index, count = (
                int(m.group(2)),
                (layer.blocks * layer.spines if m.group(1) == "spine" else layer.devices),
            )
            if index >= count:
                what = "OCS device" if m.group(1) == "ocs" else "spine"
                raise InputError(
                    f"verify.failures: {name!r}: this design has no such {what} "
                    f"({count:,} per plane)"
                )
            (spines if m.group(1) == "spine" else devices).add(index)
        if not spines and not devices:
            return None, tuple(left)
        after = failed_merged(self.design, self.merged, frozenset(spines), frozenset(devices))
        return graph_of(self.design, after, self.hedge, healthy=False), tuple(left)


# ---- the strategy ---------------------------------------------------------------------------------
def _block_hops(fabric: Fabric) -> npt.NDArray[np.int16]:
    """Circuit hops between every two blocks over the alive circuit links (UNREACHABLE: none)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    first_block = fabric.tier_offsets[2]
    p = fabric.tier_offsets[3] - first_block
    up = fabric.alive[0::2] & (fabric.lower >= first_block)
    a, b = fabric.lower[up] - first_block, fabric.upper[up] - first_block
    adj = csr_matrix((np.ones(a.size), (a, b)), shape=(p, p))
    got = shortest_path(adj, directed=False, unweighted=True)
    return np.where(np.isfinite(got), got, int(UNREACHABLE)).astype(np.int16)


def wcmp_next_hops(fabric: Fabric, targets: IntArray) -> NextHops:
    """Minimal hops to each target (a leaf or a block node), and the TE weights as intermediates.

    Distances in closed form from the block graph: from block X to block T, h(X, T) circuit
    hops; to a leaf of block B, h(X, B) + 1; from a leaf, one more than from its block (0 to
    itself). A leaf whose uplink is down reaches nothing and is reached by nothing.
    """
    first, first_block = fabric.first_switch, fabric.tier_offsets[2]
    n_leaf = first_block - first
    unreachable = int(UNREACHABLE)
    h = _block_hops(fabric).astype(np.int32)
    links = np.flatnonzero((fabric.lower >= first) & (fabric.lower < first_block))
    block_of_leaf = np.zeros(n_leaf, dtype=np.int64)
    block_of_leaf[fabric.lower[links] - first] = fabric.upper[links] - first_block
    leaf_up = np.zeros(n_leaf, dtype=bool)
    leaf_up[fabric.lower[links] - first] = fabric.alive[2 * links] & fabric.alive[2 * links + 1]
    targets = np.asarray(targets, dtype=np.int64)
    is_leaf = targets < first_block
    t_leaf = np.where(is_leaf, targets - first, 0)
    t_block = np.where(is_leaf, block_of_leaf[t_leaf], targets - first_block)
    hb = h[:, t_block]
    from_block = np.where(hb >= unreachable, unreachable, hb + is_leaf[None, :])
    from_leaf = np.where(from_block >= unreachable, unreachable, from_block + 1)[block_of_leaf]
    from_leaf[~leaf_up] = unreachable
    dist = np.vstack([from_leaf, from_block])
    dist[:, is_leaf & ~leaf_up[t_leaf]] = unreachable
    cols = np.flatnonzero(is_leaf)
    dist[targets[cols] - first, cols] = 0
    weights = fabric.group_weights

    def via(a: IntArray, b: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
        """Straight for the TE's direct share, through T's block node for T's."""
        ga, gb = block_of_leaf[a - first], block_of_leaf[b - first]
        if weights is None:
            return np.arange(a.size), b.copy(), np.ones(a.size)
        owner, mid, share = weights.entries(ga, gb)
        node = np.where(mid == gb[owner], b[owner], first_block + mid)
        return owner, node, share

    return NextHops(np.minimum(dist, unreachable).astype(np.int16), None, via)


# ---- the weights ----------------------------------------------------------------------------------
#: Phases whose weights a fabric keeps (``TrafficEngineering``): every routing, seed and
#: failure of one simulation asks again for the same few phases.
KEPT_PHASES = 16


@dataclass(frozen=True, eq=False)
class TrafficEngineering:
    """``Fabric.adapt`` of a WCMP fabric: the TE LP's splits for each phase's block demand.

    The weights of the last ``KEPT_PHASES`` (phase, surviving circuits) are kept, keyed by the
    bytes of the flows and of the alive mask, so the routings, seeds and the report of one
    simulation solve each phase's LP once.
    """

    block_of_gpu: IntArray
    blocks: int
    circuit_gbps: float | FloatArray
    """Speed of one real circuit (one copy of a merged link); per block pair (n x n) when the
    blocks' rates differ (``circuit_rates_gbps``)."""
    hedge_per_gpu_gbps: float
    """The hedge as Gb/s per GPU of a block: search.ocs_hedge x the NIC's speed in the plane."""
    kept: OrderedDict[bytes, GroupWeights | None] = field(default_factory=OrderedDict)

    def __call__(
        self, fabric: Fabric, src: IntArray, dst: IntArray, size_bytes: FloatArray
    ) -> Fabric:
        """The fabric with group weights for this demand (``module docstring``)."""
        key = hashlib.blake2b(digest_size=16)
        for part in (src, dst, size_bytes, fabric.alive, fabric.speed_gbps):
            key.update(np.ascontiguousarray(part).tobytes())
        digest = key.digest()
        if digest not in self.kept:
            self.kept[digest] = self._weights(fabric, src, dst, size_bytes)
            while len(self.kept) > KEPT_PHASES:
                self.kept.popitem(last=False)
        self.kept.move_to_end(digest)
        return replace(fabric, group_weights=self.kept[digest])

    def _weights(
        self, fabric: Fabric, src: IntArray, dst: IntArray, size_bytes: FloatArray
    ) -> GroupWeights | None:
        """The TE LP's splits of this phase on the fabric's alive circuits; None: nothing to split."""
        demand = block_rates(self.block_of_gpu, self.blocks, src, dst, size_bytes, fabric)
        if not (demand > 0).any():
            return None
        gpus = np.bincount(self.block_of_gpu, minlength=self.blocks)
        problem = ocs_te.TeProblem(
            circuits=circuit_matrix(fabric, self.circuit_gbps),
            demand_gbps=demand,
            capacity_gbps=self.circuit_gbps,
            hedge_gbps=self.hedge_per_gpu_gbps * float(gpus.max()),
        )
        result = ocs_te.solve(ocs_te.build(problem), deadline=time.perf_counter() + TE_TIME_S)
        if not result.status.has_solution:
            return None
        sp = result.splits
        return GroupWeights.of(
            self.blocks,
            sp.a,
            sp.b,
            sp.via,
            sp.share,
            result.direct_share,
            result.mean_block_hops,
        )


def flow_rates_gbps(
    src: IntArray, dst: IntArray, size_bytes: FloatArray, fabric: Fabric
) -> FloatArray:
    """Each flow's rate when the busiest GPU sends or receives at its NIC's speed (Gb/s).

    The busiest GPU is the one whose bytes take longest at its own NIC (``busiest_s``): with
    GPUs of mixed generations, an older GPU at its slower speed.
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    gbit = np.asarray(size_bytes, dtype=np.float64) * BITS_PER_BYTE / 1e9
    seconds = busiest_s(src, dst, gbit * 1e9 / BITS_PER_BYTE, fabric.gpus, fabric.nic_rates_gbps)
    return gbit / seconds if seconds > 0 else np.zeros_like(gbit)


def block_rates(
    block_of_gpu: IntArray,
    blocks: int,
    src: IntArray,
    dst: IntArray,
    size_bytes: FloatArray,
    fabric: Fabric,
) -> FloatArray:
    """Block demand in Gb/s at ``flow_rates_gbps``; traffic inside a block is left out."""
    rate = flow_rates_gbps(src, dst, size_bytes, fabric)
    a, b = (
        block_of_gpu[np.asarray(src, dtype=np.int64)],
        block_of_gpu[np.asarray(dst, dtype=np.int64)],
    )
    cross = a != b
    demand = np.bincount(a[cross] * blocks + b[cross], weights=rate[cross], minlength=blocks**2)
    return demand.astype(np.float64).reshape(blocks, blocks)


def circuit_matrix(
    fabric: Fabric, circuit_gbps: float | FloatArray | None = None
) -> npt.NDArray[np.int64]:
    """Alive real circuits between every two blocks: copies of the alive merged links.

    A merged link's speed over the rate of one of its circuits: ``circuit_gbps``, one rate or
    per block pair (``circuit_rates_gbps``); None: the fabric's link speed (every block alike).
    """
    first_block = fabric.tier_offsets[2]
    p = fabric.tier_offsets[3] - first_block
    speed = fabric.speed_gbps[0::2]
    alive = fabric.alive[0::2] & fabric.alive[1::2] & (fabric.lower >= first_block)
    a, b = fabric.lower[alive] - first_block, fabric.upper[alive] - first_block
    if circuit_gbps is None:
        circuit_gbps = float(fabric.link_speed_gbps)
    one = circuit_gbps[a, b] if isinstance(circuit_gbps, np.ndarray) else float(circuit_gbps)
    copies = np.rint(speed[alive] / one).astype(np.int64)
    x = np.zeros((p, p), dtype=np.int64)
    np.add.at(x, (a, b), copies)
    return x + x.T


def te_of(
    design: Design,
    circuits: tuple[Circuit, ...],
    demand_gbps: FloatArray | None,
    hedge: float = 0.0,
) -> ocs_te.TeResult:
    """The TE LP of a block demand (Gb/s; uniform at every GPU's NIC speed when None) on circuits.

    Each circuit at the slower end's rate (``circuit_rates_gbps``); the hedge per GPU at its
    NIC's speed.

    ``hedge``: ``search.ocs_hedge``, the share of a block's injection by which one pair may
    exceed the demand.
    """
    layer = layer_of(design)
    n = layer.blocks
    x = np.zeros((n, n), dtype=np.int64)
    for a, b, _, k in circuits:
        x[a, b] += k
        x[b, a] += k
    leaf = design.tiers[0]
    gpus = np.bincount(
        (np.arange(design.gpus) // leaf.downlinks) // design.leaves_per_pod, minlength=n
    ).astype(np.float64)
    c = float(design.link_speed_gbps)
    if demand_gbps is None:
        demand_gbps = uniform_demand_gbps(design)
    problem = ocs_te.TeProblem(
        circuits=x,
        demand_gbps=demand_gbps,
        capacity_gbps=circuit_rates_gbps(design),
        hedge_gbps=hedge * c * float(gpus.max()),
    )
    return ocs_te.solve(ocs_te.build(problem), deadline=time.perf_counter() + TE_TIME_S)


def uniform_demand_gbps(design: Design) -> FloatArray:
    """Every GPU sending at its NIC's speed to every GPU alike, as block rates (Gb/s)."""
    leaf = design.tiers[0]
    n = design.pods
    gpus = np.bincount(
        (np.arange(design.gpus) // leaf.downlinks) // design.leaves_per_pod, minlength=n
    ).astype(np.float64)
    out = np.outer(gpus * float(design.link_speed_gbps), gpus / gpus.sum())
    np.fill_diagonal(out, 0.0)
    return out


#: The strategy of the merged-slice planes (``wcmp_fabric``).
WCMP = RoutingStrategy("ocs_wcmp", wcmp_next_hops)
