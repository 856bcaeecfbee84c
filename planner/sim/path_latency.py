"""One packet's way over the routed path of every leaf pair, priced hop by hop.

Each hop's price comes from the link it takes and the switch it reaches: the link's class
(``Fabric.link_class``) gives the serialisation and latency of that class, and the switch's tier
the switching latency. So a fabric need not say what its path classes are. A dragonfly's global
hop is priced as a global link and its local hops as local ones, and an OCS fabric routed
through a transit block pays for the transit spine and its two circuits. The routes are the
fabric's own (``planner.sim.route_walk``): its strategy's next hops, and for two-phase routing
(``NextHops.via``) each intermediate's two legs.

A leaf pair routed over several paths (equal-cost next hops, or several intermediates) is given
its slowest: the last packet of a sprayed flow may take any of them, and a flow hashed onto one
may get the slowest. The walk is a max-plus pass over the next-hop DAG from each source: after
every hop, each (pair, switch) keeps the slowest way it was reached, with the links of each
class and the switches of each tier on it (``Crossings``), so that a packet of another size
(an ACK) is priced on the same path without walking it again.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from planner.deadline import NO_DEADLINE, Deadline
from planner.sim.fabric import BoolArray, Fabric, FloatArray, IntArray
from planner.sim.route_walk import Walk, walker
from planner.sim.routes import gather_ranges
from planner.sim.via_routing import via_entries

#: More hops than any route of a planned fabric takes: a walk still going after this many is a
#: routing loop, which the walk refuses rather than follow.
MAX_HOPS = 256
#: Legs walked at once: their candidate hops (a leg's frontier times a switch's degree) are
#: what a walk holds, about 160 bytes each.
LEG_CHUNK = 32_768
#: Counts of links and switches on a path (below ``MAX_HOPS``): small, as a walk holds one row
#: per candidate hop.
COUNT = np.int16
#: Walks kept per process (the latency floor and the phase's times ask for the same flows).
KEPT = 4


@dataclass(frozen=True)
class Crossings:
    """The slowest routed path of each leaf pair: links of each class, switches of each tier."""

    links: npt.NDArray[np.int16]
    """(pairs, link classes): links of each class after the first switch."""
    switches: npt.NDArray[np.int16]
    """(pairs, node groups): switches reached of each group (the first switch not counted)."""
    reached: BoolArray
    """Whether the routes join the pair."""

    def ns(self, class_ns: FloatArray, group_ns: FloatArray) -> FloatArray:
        """Each pair's path priced: per link class, per node group; 0 where not reached."""
        out = self.links @ class_ns + self.switches @ group_ns
        return np.where(self.reached, out, 0.0)


def _legs(
    walk: Walk, start: IntArray, dest: IntArray, class_ns: FloatArray, group_ns: FloatArray
) -> Crossings:
    """The slowest routed way from each start switch to its destination (0 hops where equal).

    Walked ``LEG_CHUNK`` legs at a time, so the candidate hops held at once stay bounded.
    """
    parts = [
        _legs_chunk(walk, start[i : i + LEG_CHUNK], dest[i : i + LEG_CHUNK], class_ns, group_ns)
        for i in range(0, max(start.size, 1), LEG_CHUNK)
    ]
    return Crossings(
        np.concatenate([c.links for c in parts]),
        np.concatenate([c.switches for c in parts]),
        np.concatenate([c.reached for c in parts]),
    )


def _legs_chunk(
    walk: Walk, start: IntArray, dest: IntArray, class_ns: FloatArray, group_ns: FloatArray
) -> Crossings:
    """``_legs`` of one chunk."""
    fabric = walk.fabric
    n_class, n_group = class_ns.size, group_ns.size
    link_class = fabric.link_class
    group = fabric.tier_of(np.arange(fabric.nodes))
    links = np.zeros((start.size, n_class), dtype=COUNT)
    switches = np.zeros((start.size, n_group), dtype=COUNT)
    best = np.full(start.size, -np.inf)
    best[start == dest] = 0.0
    pair = np.flatnonzero(start != dest)
    node = start[pair]
    value = np.zeros(pair.size)
    lc = np.zeros((pair.size, n_class), dtype=COUNT)
    nc = np.zeros((pair.size, n_group), dtype=COUNT)
    for _ in range(MAX_HOPS):
        if not pair.size:
            return Crossings(links, switches, np.isfinite(best))
        inverse, ptr, cand = walk.candidates(node, dest[pair])
        degree = ptr[inverse + 1] - ptr[inverse]
        lk = cand[gather_ranges(ptr, inverse)]
        owner = np.repeat(np.arange(pair.size), degree)
        head = fabric.dst[lk]
        cls, grp = link_class[lk // 2], group[head]
        value_h = value[owner] + class_ns[cls] + group_ns[grp]
        lc_h, nc_h = lc[owner], nc[owner]
        rows = np.arange(owner.size)
        lc_h[rows, cls] += 1
        nc_h[rows, grp] += 1
        # Keep the slowest way into each (pair, switch): sort by key, then by value.
        key = pair[owner] * fabric.nodes + head
        order = np.lexsort((value_h, key))
        key = key[order]
        last = order[np.r_[key[1:] != key[:-1], True]] if key.size else order
        pair_h, head, value_h = pair[owner[last]], head[last], value_h[last]
        lc_h, nc_h = lc_h[last], nc_h[last]
        arrived = head == dest[pair_h]
        # Arrivals: the slowest per pair (a pair arrives once per hop count at most).
        got, slower = pair_h[arrived], value_h[arrived] > best[pair_h[arrived]]
        take = got[slower]
        best[take] = value_h[arrived][slower]
        links[take] = lc_h[arrived][slower]
        switches[take] = nc_h[arrived][slower]
        keep = ~arrived
        pair, node, value = pair_h[keep], head[keep], value_h[keep]
        lc, nc = lc_h[keep], nc_h[keep]
    raise RuntimeError(f"a route of this fabric takes more than {MAX_HOPS} hops (a routing loop)")


_KEPT: OrderedDict[tuple[int, bytes, int], tuple[weakref.ref[Fabric], Crossings, IntArray]] = (
    OrderedDict()
)


def routed_crossings(
    fabric: Fabric,
    src_leaf: IntArray,
    dst_leaf: IntArray,
    class_ns: FloatArray,
    group_ns: FloatArray,
    deadline: Deadline = NO_DEADLINE,
) -> Crossings:
    """The slowest routed path between every pair of leaves (node ids), one row per pair given.

    ``class_ns``: what a hop over a link of each class costs; ``group_ns``: what reaching a
    switch of each node group costs (entry 0, GPUs, unused). They choose the slowest path.
    """
    src_leaf = np.asarray(src_leaf, dtype=np.int64)
    dst_leaf = np.asarray(dst_leaf, dtype=np.int64)
    nodes = fabric.nodes
    keys, of_flow = np.unique(src_leaf * nodes + dst_leaf, return_inverse=True)
    of_flow = of_flow.ravel()
    price = np.concatenate([class_ns, group_ns]).tobytes()
    cache_key = (id(fabric), price, hash(keys.tobytes()))
    kept = _KEPT.get(cache_key)
    if kept is not None and kept[0]() is fabric and np.array_equal(kept[2], keys):
        _KEPT.move_to_end(cache_key)
        per_pair = kept[1]
    else:
        per_pair = _pairs(fabric, keys // nodes, keys % nodes, class_ns, group_ns, deadline)
        _KEPT[cache_key] = (weakref.ref(fabric), per_pair, keys)
        while len(_KEPT) > KEPT:
            _KEPT.popitem(last=False)
    return Crossings(per_pair.links[of_flow], per_pair.switches[of_flow], per_pair.reached[of_flow])


def _pairs(
    fabric: Fabric,
    a: IntArray,
    b: IntArray,
    class_ns: FloatArray,
    group_ns: FloatArray,
    deadline: Deadline,
) -> Crossings:
    """``routed_crossings`` of distinct leaf pairs."""
    nodes = fabric.nodes
    walk = walker(fabric, np.unique(b), deadline)
    if walk.via is None:
        return _legs(walk, a, b, class_ns, group_ns)
    moving = np.flatnonzero(a != b)
    walk, entry, via, _ = via_entries(walk, a[moving], b[moving], deadline)
    pair = moving[entry]
    # Each distinct leg is walked once: (a -> via) and (via -> b).
    x, y = np.concatenate([a[pair], via]), np.concatenate([via, b[pair]])
    leg_keys, leg_of = np.unique(x * nodes + y, return_inverse=True)
    legs = _legs(walk, leg_keys // nodes, leg_keys % nodes, class_ns, group_ns)
    leg_of = leg_of.ravel()
    first, second = leg_of[: pair.size], leg_of[pair.size :]
    ok = legs.reached[first] & legs.reached[second]
    cost = legs.ns(class_ns, group_ns)
    total = np.where(ok, cost[first] + cost[second], -np.inf)
    # The slowest intermediate of every pair: sort by pair, then by cost; take the last.
    order = np.lexsort((total, pair))
    last = order[np.r_[pair[order][1:] != pair[order][:-1], True]] if order.size else order
    links = np.zeros((a.size, class_ns.size), dtype=COUNT)
    switches = np.zeros((a.size, group_ns.size), dtype=COUNT)
    reached = a == b
    p = pair[last]
    links[p] = legs.links[first[last]] + legs.links[second[last]]
    switches[p] = legs.switches[first[last]] + legs.switches[second[last]]
    reached[p] = ok[last]
    return Crossings(links, switches, reached)
