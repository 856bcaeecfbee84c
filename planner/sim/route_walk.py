"""Walking towards destination leaves: equal-cost next hops, looked up and kept per fabric.

A ``Walk`` holds what every hop of a route needs: the strategy's distance table towards a set of
destination leaves (``planner.sim.routing_strategies``), its rule, the alive out links of every
node, and per tier the stand-in leaves with the same next hops. ``walker`` keeps the last few
walks, so the traffics and routings of one simulation build each table once. ECMP
(``planner.sim.ecmp_hash``), spraying (``planner.sim.spray_patterns``) and the factored spraying
loads (``planner.sim.spray_loads``) all expand next hops through ``Walk.candidates``.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from planner.deadline import NO_DEADLINE, Deadline, Watch, watch
from planner.sim.ecmp_index import EcmpIndex, ecmp_index, row_ids
from planner.sim.fabric import Fabric, IntArray
from planner.sim.routes import gather_ranges
from planner.sim.routing_strategies import (
    EXPAND_CHUNK,
    UNREACHABLE,
    LinkRule,
    ViaRule,
    is_valley_free,
    strategy_of,
)


def _out_links(fabric: Fabric) -> tuple[IntArray, IntArray]:
    """CSR of alive directed links by tail node: (pointer per node, link ids)."""
    src = fabric.src
    alive = np.flatnonzero(fabric.alive)
    order = alive[np.argsort(src[alive], kind="stable")]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(src[order], minlength=fabric.nodes))])
    return ptr, order


def _candidates(
    fabric: Fabric,
    dist: npt.NDArray[np.int16],
    allowed: LinkRule | None,
    col_of_leaf: IntArray,
    node: IntArray,
    dest_leaf: IntArray,
    out_ptr: IntArray,
    out_links: IntArray,
) -> tuple[IntArray, IntArray]:
    """Equal-cost next-hop links of each (node, destination leaf): (pointer per pair, link ids)."""
    deg = out_ptr[node + 1] - out_ptr[node]
    total = int(deg.sum())
    pair = np.repeat(np.arange(node.size), deg)
    first = np.repeat(out_ptr[node] - np.concatenate([[0], np.cumsum(deg)[:-1]]), deg)
    links = out_links[first + np.arange(total)]
    col = col_of_leaf[dest_leaf]
    first_switch = fabric.tier_offsets[1]
    here = dist[node - first_switch, col].astype(np.int64)
    head = fabric.dst[links]
    to_switch = head >= first_switch  # paths end at the destination leaf, never at a GPU
    there = np.full(links.size, int(UNREACHABLE), dtype=np.int64)
    there[to_switch] = dist[head[to_switch] - first_switch, col[pair[to_switch]]]
    keep = there == here[pair] - 1
    if allowed is not None:
        keep[keep] = allowed(links[keep], dest_leaf[pair[keep]])
    pair, links = pair[keep], links[keep]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(pair, minlength=node.size))])
    return ptr, links


#: Largest table of (major, minor) cells that ``unique_pairs`` marks instead of sorting keys.
DENSE_CELLS = 1 << 25


def unique_pairs(
    major: IntArray, minor: IntArray, minor_space: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Distinct (major, minor) pairs in lexicographic order, and each pair's index among them.

    What ``np.unique(major * minor_space + minor, return_inverse=True)`` gives, but when the
    pairs fit a table of at most ``DENSE_CELLS`` cells (both sides renumbered over the values
    present), they are marked in it and counted instead of sorted: linear time.
    """
    if not major.size:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    major_values, major_local = _renumber(major, int(major.max()) + 1)
    minor_values, minor_local = _renumber(minor, minor_space)
    width = minor_values.size
    if major_values.size * width > DENSE_CELLS:
        uniq, inverse = np.unique(major * minor_space + minor, return_inverse=True)
        return uniq // minor_space, uniq % minor_space, inverse.ravel()
    cell = major_local * width + minor_local
    seen = np.zeros(major_values.size * width, dtype=bool)
    seen[cell] = True
    marked = np.flatnonzero(seen)
    rank = np.cumsum(seen) - 1
    return major_values[marked // width], minor_values[marked % width], rank[cell]


def _renumber(values: IntArray, space: int) -> tuple[IntArray, IntArray]:
    """The distinct values (sorted, from 0..space-1) and each value's index among them."""
    present = np.zeros(space, dtype=bool)
    present[values] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values]


#: Work of finding stand-in leaves for a tier, per (switch of the tier, leaf column), in units
#: of one candidate next hop expanded (``Walk.stand_ins_for``).
STAND_IN_COST = 4.0


@dataclass(frozen=True)
class Walk:
    """Next-hop data towards a set of destination leaves on one fabric (``walker`` builds it)."""

    fabric: Fabric
    dist: npt.NDArray[np.int16]
    allowed: LinkRule | None
    col_of_leaf: IntArray
    out_ptr: IntArray
    out_links: IntArray
    check: Watch = field(default_factory=lambda: watch(NO_DEADLINE))
    """The step's deadline, checked once per hop of the walks."""
    stand_ins: dict[int, IntArray] = field(default_factory=dict)
    """Per tier: the destination leaf that stands in for each leaf column (``stand_in``)."""
    indexes: dict[str, EcmpIndex] = field(default_factory=dict)
    """The ``EcmpIndex`` of the walk, once built."""
    via: ViaRule | None = None
    """The strategy's two-phase rule (``NextHops.via``)."""

    def ecmp_index(self) -> EcmpIndex | None:
        """Next hops known from the switch alone (``planner.sim.ecmp_index``); None off up-down."""
        if not is_valley_free(self.fabric) or self.allowed is not None:
            return None
        if "ecmp" not in self.indexes:
            self.indexes["ecmp"] = ecmp_index(self.fabric, self.dist, self.out_ptr, self.out_links)
        return self.indexes["ecmp"]

    def stand_in(self, tier: int) -> IntArray:
        """For every leaf column, a leaf with the same next hops from every switch of ``tier``.

        The next hops of v towards l are read from dist(v, l) and dist(w, l) over v's heads w
        (and, on up-down fabrics, no rule), so leaves whose distance columns agree over the
        tier's switches and their heads have the same next hops there: towards a leaf of
        another pod, a core of a Clos sees only the pod. The least such leaf stands in.
        """
        if tier not in self.stand_ins:
            fabric = self.fabric
            first, off = fabric.first_switch, fabric.tier_offsets
            tails = np.arange(off[tier], off[tier + 1])
            heads = self.out_links[gather_ranges(self.out_ptr, tails)]
            heads = fabric.dst[heads]
            if (fabric.tier_of(heads) == 1).any():  # a leaf's own row tells it apart
                self.stand_ins[tier] = np.flatnonzero(self.col_of_leaf >= 0)
                return self.stand_ins[tier]
            rows = np.union1d(tails, heads[heads >= first]) - first
            ids = row_ids(self.dist[rows].T)
            least = np.full(int(ids.max()) + 1 if ids.size else 0, -1, dtype=np.int64)
            least[ids[::-1]] = np.arange(ids.size)[::-1]
            leaves = np.flatnonzero(self.col_of_leaf >= 0)
            self.stand_ins[tier] = leaves[least[ids]]
        return self.stand_ins[tier]

    def stand_ins_for(self, node: IntArray, dest_leaf: IntArray) -> IntArray:
        """Destination leaves with the same next hops from these nodes (up-down fabrics)."""
        fabric = self.fabric
        if not is_valley_free(fabric) or self.allowed is not None or not node.size:
            return dest_leaf
        tier = fabric.tier_of(node)
        col = self.col_of_leaf[dest_leaf]
        out = dest_leaf.copy()
        off = fabric.tier_offsets
        for t in np.unique(tier).tolist():
            at = tier == t
            switches = off[t + 1] - off[t]
            degree = (self.out_ptr[off[t + 1]] - self.out_ptr[off[t]]) / max(switches, 1)
            # Worth it when the next hops to expand outnumber the distances to compare.
            if t not in self.stand_ins and at.sum() * degree < STAND_IN_COST * (
                switches * self.dist.shape[1]
            ):
                continue
            out[at] = self.stand_in(int(t))[col[at]]
        return out

    def candidates(
        self, node: IntArray, dest_leaf: IntArray
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Candidates per unique (node, leaf) pair, chunked; returns (inverse, ptr, links)."""
        self.check.check()
        un, ul, inverse = unique_pairs(node, self.stand_ins_for(node, dest_leaf), self.fabric.nodes)
        cum = np.cumsum(self.out_ptr[un + 1] - self.out_ptr[un])
        total = int(cum[-1]) if cum.size else 0
        cuts = np.searchsorted(cum, np.arange(EXPAND_CHUNK, total, EXPAND_CHUNK), side="right")
        bounds = np.unique(np.concatenate([[0], cuts, [un.size]]))
        ptrs, links, base = [np.zeros(1, dtype=np.int64)], [], 0
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            p, lk = _candidates(
                self.fabric,
                self.dist,
                self.allowed,
                self.col_of_leaf,
                un[a:b],
                ul[a:b],
                self.out_ptr,
                self.out_links,
            )
            ptrs.append(p[1:] + base)
            links.append(lk)
            base += lk.size
        all_links = np.concatenate(links) if links else np.zeros(0, dtype=np.int64)
        return inverse, np.concatenate(ptrs), all_links


#: Walks (distances, out links, stand-in leaves) kept for the fabrics and destination leaves
#: routed last: the traffics and routings of one simulation share them. A walk holds its
#: fabric and a (switches x leaves) int16 table (142 MB on ocs-65k), so only a few are kept:
#: enough for a route and the small one that estimated its size before it.
WALKS_KEPT = 2
_WALKS: OrderedDict[tuple[int, int], tuple[weakref.ref[Fabric], IntArray, Walk]] = OrderedDict()


def walker(fabric: Fabric, dest_leaves: IntArray, deadline: Deadline = NO_DEADLINE) -> Walk:
    """Next-hop data towards these leaves, reused while the same fabric routes to the same set.

    A walk kept for a superset of the leaves serves too: a leaf's distance column and next hops
    do not depend on which other leaves share the table, and lookups go through ``col_of_leaf``.
    """
    leaves = np.unique(dest_leaves)
    key = (id(fabric), hash(leaves.tobytes()))
    kept = _WALKS.get(key)
    if kept is not None and kept[0]() is fabric and np.array_equal(kept[1], leaves):
        _WALKS.move_to_end(key)
        return replace(kept[2], check=watch(deadline))
    for other, (ref, _, walk) in reversed(_WALKS.items()):
        if ref() is fabric and bool(np.all(walk.col_of_leaf[leaves] >= 0)):
            _WALKS.move_to_end(other)
            return replace(walk, check=watch(deadline))
    col_of_leaf = np.full(fabric.nodes, -1, dtype=np.int64)
    col_of_leaf[leaves] = np.arange(leaves.size)
    ptr, links = _out_links(fabric)
    hops = strategy_of(fabric)(fabric, leaves)
    walk = Walk(
        fabric, hops.dist, hops.allowed, col_of_leaf, ptr, links, watch(deadline), via=hops.via
    )
    _WALKS[key] = (weakref.ref(fabric), leaves, walk)
    while len(_WALKS) > WALKS_KEPT:
        _WALKS.popitem(last=False)
    return walk


def prepare_routes(fabric: Fabric, dst: IntArray, deadline: Deadline = NO_DEADLINE) -> None:
    """Build (and keep) the next-hop data towards every leaf of ``dst``.

    Routes of any subset of these destinations on this fabric then reuse it: a phase routed in
    chunks (``planner.sim.streamed``) builds its distance table once, not once per chunk.
    """
    leaves = fabric.leaf_of(np.asarray(dst, dtype=np.int64))
    if leaves.size:
        walker(fabric, leaves, deadline)


def check_next_hops(walk: Walk, count: IntArray, node: IntArray, dest: IntArray) -> None:
    """Raise when a strategy leaves a reachable destination without a next hop."""
    if count.size and count.min() == 0:
        i = int(np.argmin(count))
        fabric = walk.fabric
        raise ValueError(
            f"routing strategy {fabric.strategy.name!r} gives no next hop at "
            f"{fabric.node_name(int(node[i]))} towards {fabric.node_name(int(dest[i]))}, "
            "although its distances say it is reachable"
        )
