"""Link loads of a whole sprayed phase, factored by tier, without a pattern per leaf pair.

A streamed phase (``planner.sim.streamed``) needs only the load every link carries: the sum over
flows of the flow's weight times its spraying fraction on the link. ``routing.route`` builds the
fractions per leaf pair (or per climb and descent, ``planner.sim.spray_patterns.spray_halves``), which on a million GPUs is
tens of thousands of link entries for each of a million leaf pairs. On an up-down fabric the sum
factors by tier, exactly:

**Climbing.** At a switch whose up links are exactly its next hops when it climbs (``plain
climb``, ``planner.sim.ecmp_index``) a flow's mass splits evenly over the up links whatever its
destination, and every switch its climb reaches at a tier agrees on where the flow turns (the
parents of a plain-climb switch share one distance row). A flow from leaf a to leaf b therefore
turns at tier T = dist(a, b) / 2 + 1, and the climbing masses of all flows that turn at T add up
per switch: m_T(w) = sum over its children v of m_T(v) / up links(v), and each up link of v
carries m_T(v) / up links(v). One pass per tier and turning tier, over the up links.

**Turning.** The mass a flow brings to tier T is spread as c_T(a), the climb of a unit from a. It
depends on a only through a's parents (counted with parallel links), so source leaves with the
same parents share it; distinct spreads (``arrivals``) are few (one per pod on a Clos at T = 2,
one for the whole fabric at the top).

**Descending.** From a spread c at tier T, the mass for b descends along the next hops towards
b, each switch splitting it evenly. A switch's next hops towards b depend on b only through its
stand-in leaf for the tier (``planner.sim.route_walk.Walk.stand_in``: the pod, seen from a core). So descents are kept
per class of destinations with the same stand-ins so far, as one coefficient per switch valid for
every member: a link out of switch w in class k carries (sum over b in k of the weight of b) x
coef(w) / next hops(w). Classes are refined tier by tier; at tier 2 they are single leaves, whose
next hops are read from the index (the links to b).

The sums are those of the per-pair walk in another order: the loads agree to rounding, which the
tests check against ``route(...).load``. When a climb reaches a switch that is not a plain climb,
or a distance is odd, ``link_loads`` returns None and the caller routes the flows instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.deadline import NO_DEADLINE, Deadline
from planner.sim.ecmp_index import EcmpIndex
from planner.sim.fabric import BoolArray, Fabric, FloatArray, IntArray
from planner.sim.route_walk import Walk, check_next_hops, unique_pairs, walker
from planner.sim.routes import gather_ranges
from planner.sim.routing_strategies import UNREACHABLE


@dataclass(frozen=True)
class _Flows:
    """The flows of a phase as the factored sums need them."""

    src: IntArray
    dst: IntArray
    connected: BoolArray
    """Flows with alive NIC links and a route."""
    cross: IntArray
    """Connected flows between two leaves."""
    walk: Walk
    index: EcmpIndex
    a: IntArray
    """Source leaf of each cross flow."""
    b: IntArray
    """Destination leaf of each cross flow."""
    turn: IntArray
    """Tier each cross flow turns at: dist(a, b) / 2 + 1."""


def _cross_flows(fabric: Fabric, src: IntArray, dst: IntArray, deadline: Deadline) -> _Flows | None:
    """Connectivity, leaves and turning tiers of the flows; None off up-down or at odd distance."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    src_leaf, dst_leaf = fabric.leaf_of(src), fabric.leaf_of(dst)
    connected = fabric.alive[2 * src] & fabric.alive[2 * dst + 1]
    cross = np.flatnonzero((src_leaf != dst_leaf) & connected)
    walk = walker(fabric, dst_leaf[cross] if cross.size else dst_leaf[:1], deadline)
    index = walk.ecmp_index()
    if index is None:
        return None
    row, col = src_leaf[cross] - fabric.first_switch, walk.col_of_leaf[dst_leaf[cross]]
    d: IntArray = walk.dist[row, col].astype(np.int64)
    connected[cross[d >= UNREACHABLE]] = False
    cross, d = cross[d < UNREACHABLE], d[d < UNREACHABLE]
    if (d % 2).any():
        return None
    return _Flows(
        src, dst, connected, cross, walk, index, src_leaf[cross], dst_leaf[cross], d // 2 + 1
    )


def _expand(count: IntArray) -> tuple[IntArray, IntArray]:
    """For entries with ``count`` next hops each: each next hop's entry and its rank there."""
    entry = np.repeat(np.arange(count.size), count)
    return entry, np.arange(entry.size) - np.repeat(np.cumsum(count) - count, count)


def link_loads(
    fabric: Fabric,
    src: IntArray,
    dst: IntArray,
    weights: Sequence[FloatArray],
    deadline: Deadline = NO_DEADLINE,
) -> tuple[BoolArray, list[FloatArray]] | None:
    """Per weight vector, the load on every directed link when the flows are sprayed.

    ``weights[i][f]`` is flow f's weight (its gigabits, or 1 to count flows). Returns (connected,
    loads): which flows have a route, and for each weight vector the sum over connected flows
    of weight x fraction on every link, NIC links included. None when the fabric does not factor
    (see the module's docstring).
    """
    w = np.vstack([np.asarray(x, dtype=np.float64) for x in weights]).reshape(len(weights), -1)
    flows = _cross_flows(fabric, src, dst, deadline)
    if flows is None:
        return None
    loads = np.zeros((w.shape[0], fabric.links))
    if flows.cross.size and not _tiers(
        flows.walk, flows.index, flows.a, flows.b, flows.turn, w[:, flows.cross], loads
    ):
        return None
    connected, src, dst = flows.connected, flows.src, flows.dst
    for i in range(w.shape[0]):
        on = np.where(connected, w[i], 0.0)
        loads[i] += np.bincount(2 * src, weights=on, minlength=fabric.links)
        loads[i] += np.bincount(2 * dst + 1, weights=on, minlength=fabric.links)
    return connected, list(loads)


def path_max(
    fabric: Fabric,
    src: IntArray,
    dst: IntArray,
    link_value: FloatArray,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[BoolArray, FloatArray] | None:
    """Per flow: has a route, and the largest ``link_value`` over the links it is sprayed on.

    The climb's largest value comes from a pass down the tiers (a switch's is the largest over
    its up links and what lies above them), the descent's from ``_descend`` as it refines its
    classes. None when the fabric does not factor.
    """
    flows = _cross_flows(fabric, src, dst, deadline)
    if flows is None:
        return None
    connected, cross = flows.connected, flows.cross
    out = np.maximum(link_value[2 * flows.src], link_value[2 * flows.dst + 1])
    if cross.size:
        walk, index, a, b, turn = flows.walk, flows.index, flows.a, flows.b, flows.turn
        group, spreads = _arrivals(walk, index, a, turn)
        if group is None:
            return None
        none = np.zeros((0, fabric.links))
        for t_turn in np.unique(turn).tolist():
            at = turn == t_turn
            climb = _climb_max(walk, index, t_turn, link_value)
            out[cross[at]] = np.maximum(out[cross[at]], climb[a[at]])
            for g in np.unique(group[at]).tolist():
                mine = at & (group == g)
                dests = np.zeros((1, fabric.nodes))
                dests[0, b[mine]] = 1.0
                spread_nodes, spread_coef = spreads[(t_turn, g)]
                down = _descend(
                    walk, index, spread_nodes, spread_coef, dests, t_turn, none, link_value
                )
                out[cross[mine]] = np.maximum(out[cross[mine]], down[b[mine]])
    return connected, np.where(connected, out, 0.0)


def _climb_max(walk: Walk, index: EcmpIndex, turn: int, link_value: FloatArray) -> FloatArray:
    """Per switch below tier ``turn``: the largest value over the links of its climb to it."""
    off = walk.fabric.tier_offsets
    dst_of = walk.fabric.dst
    best = np.zeros(walk.fabric.nodes)
    for t in range(turn - 1, 0, -1):
        here = np.arange(off[t], off[t + 1])
        here = here[index.plain_climb[here]]
        count = index.up_ptr[here + 1] - index.up_ptr[here]
        links = index.up_links[gather_ranges(index.up_ptr, here)]
        value = np.maximum(link_value[links], best[dst_of[links]])
        np.maximum.at(best, np.repeat(here, count), value)
    return best


def _tiers(
    walk: Walk,
    index: EcmpIndex,
    a: IntArray,
    b: IntArray,
    turn: IntArray,
    w: FloatArray,
    loads: FloatArray,
) -> bool:
    """Add the climbs and descents of cross-leaf flows (leaves a -> b, turning tier) to loads."""
    nodes = walk.fabric.nodes
    group, spreads = _arrivals(walk, index, a, turn)
    if group is None:
        return False
    for t_turn in np.unique(turn).tolist():
        at = turn == t_turn
        mass = np.vstack(
            [np.bincount(a[at], weights=row, minlength=nodes) for row in w[:, at]]
        ).astype(np.float64)
        if not _climb(walk, index, mass, t_turn, loads):
            return False
        for g in np.unique(group[at]).tolist():
            mine = at & (group == g)
            per_dest = np.vstack(
                [np.bincount(b[mine], weights=row, minlength=nodes) for row in w[:, mine]]
            ).astype(np.float64)
            spread_nodes, spread_coef = spreads[(t_turn, g)]
            _descend(walk, index, spread_nodes, spread_coef, per_dest, t_turn, loads)
    return True


def _climb(walk: Walk, index: EcmpIndex, mass: FloatArray, turn: int, loads: FloatArray) -> bool:
    """Climb masses (weights x nodes) from the leaves to tier ``turn``, adding the up links' loads."""
    off = walk.fabric.tier_offsets
    dst_of = walk.fabric.dst
    for t in range(1, turn):
        walk.check.check()
        here = np.arange(off[t], off[t + 1])
        here = here[(mass[:, here] > 0).any(axis=0)]
        if not index.plain_climb[here].all():
            return False
        count = index.up_ptr[here + 1] - index.up_ptr[here]
        links = index.up_links[gather_ranges(index.up_ptr, here)]
        share = np.repeat(mass[:, here] / count, count, axis=1)
        loads[:, links] += share  # each up link once per tier
        heads = dst_of[links]
        mass[:, here] = 0.0
        for i in range(mass.shape[0]):
            mass[i] += np.bincount(heads, weights=share[i], minlength=mass.shape[1])
    return True


def _arrivals(
    walk: Walk, index: EcmpIndex, a: IntArray, turn: IntArray
) -> tuple[IntArray | None, dict[tuple[int, int], tuple[IntArray, FloatArray]]]:
    """Per flow, the id of the spread its climb gives at its turning tier; and the spreads.

    Source leaves with the same up links' heads climb alike; one unit is climbed per such group
    and turning tier, and equal spreads (same switches, same coefficients) share an id.
    """
    nodes = walk.fabric.nodes
    leaves = np.unique(a)
    heads = walk.fabric.dst[index.up_links[gather_ranges(index.up_ptr, leaves)]]
    count = index.up_ptr[leaves + 1] - index.up_ptr[leaves]
    bounds = np.concatenate([[0], np.cumsum(count)])
    kinds: dict[bytes, int] = {}
    kind_of_leaf = np.empty(leaves.size, dtype=np.int64)
    for i in range(leaves.size):
        kind_of_leaf[i] = kinds.setdefault(heads[bounds[i] : bounds[i + 1]].tobytes(), len(kinds))
    rep = np.zeros(len(kinds), dtype=np.int64)
    rep[kind_of_leaf[::-1]] = leaves[::-1]
    flow_kind = kind_of_leaf[np.searchsorted(leaves, a)]
    group = np.empty(a.size, dtype=np.int64)
    spreads: dict[tuple[int, int], tuple[IntArray, FloatArray]] = {}
    for t_turn in np.unique(turn).tolist():
        seen: dict[bytes, int] = {}
        id_of_kind = np.full(len(kinds), -1, dtype=np.int64)
        used = np.unique(flow_kind[turn == t_turn])
        for k in used.tolist():
            unit = np.zeros((1, nodes))
            unit[0, rep[k]] = 1.0
            if not _climb(walk, index, unit, t_turn, np.zeros((1, walk.fabric.links))):
                return None, {}
            where = np.flatnonzero(unit[0])
            key = where.tobytes() + unit[0, where].tobytes()
            if key not in seen:
                seen[key] = len(seen)
                spreads[(t_turn, seen[key])] = (where, unit[0, where])
            id_of_kind[k] = seen[key]
        at = turn == t_turn
        group[at] = id_of_kind[flow_kind[at]]
    return group, spreads


def _descend(
    walk: Walk,
    index: EcmpIndex,
    spread_nodes: IntArray,
    spread_coef: FloatArray,
    per_dest: FloatArray,
    turn: int,
    loads: FloatArray,
    link_value: FloatArray | None = None,
) -> FloatArray:
    """Descend a spread at tier ``turn`` to every destination leaf with weight (weights x nodes).

    Adds the descents' loads to ``loads``; with ``link_value``, also returns per node (a
    destination leaf) the largest value over the links its descent uses (0 elsewhere).
    """
    nodes = walk.fabric.nodes
    dst_of = walk.fabric.dst
    dests = np.flatnonzero((per_dest > 0).any(axis=0))
    out = np.zeros(nodes)
    # Entries (class, node, coef); a class is a set of destinations (member -> class).
    cls_of = np.zeros(dests.size, dtype=np.int64)
    e_cls = np.zeros(spread_nodes.size, dtype=np.int64)
    e_node, e_coef = spread_nodes, spread_coef
    run_max = np.zeros(1)
    for t in range(turn, 1, -1):
        walk.check.check()
        parent, cls_of, e_cls, e_node, e_coef = _refine(
            walk, t, dests, cls_of, e_cls, e_node, e_coef
        )
        run_max = run_max[parent]
        n_cls = int(cls_of.max()) + 1
        weight = np.vstack(
            [np.bincount(cls_of, weights=row[dests], minlength=n_cls) for row in per_dest]
        )
        rep = np.zeros(n_cls, dtype=np.int64)
        rep[cls_of[::-1]] = dests[::-1]
        dest = rep[e_cls]
        if t == 2:  # down to the leaf itself: the index's links to it
            key = e_node * nodes + dest
            start = np.searchsorted(index.down_keys, key, side="left")
            count = np.searchsorted(index.down_keys, key, side="right") - start
            check_next_hops(walk, count, e_node, dest)
            entry, offset = _expand(count)
            links = index.down_links[start[entry] + offset]
        else:
            inverse, ptr, cand = walk.candidates(e_node, dest)
            count = ptr[inverse + 1] - ptr[inverse]
            check_next_hops(walk, count, e_node, dest)
            entry, offset = _expand(count)
            links = cand[ptr[inverse][entry] + offset]
        share = (e_coef / count)[entry]
        for i in range(loads.shape[0]):
            loads[i] += np.bincount(
                links, weights=weight[i, e_cls[entry]] * share, minlength=loads.shape[1]
            )
        if link_value is not None:
            np.maximum.at(run_max, e_cls[entry], link_value[links])
        if t == 2:
            out[dests] = run_max[cls_of]
            return out
        e_cls, e_node, inv = unique_pairs(e_cls[entry], dst_of[links], nodes)
        e_coef = np.bincount(inv, weights=share).astype(np.float64, copy=False)
    return out


def _refine(
    walk: Walk,
    tier: int,
    dests: IntArray,
    cls_of: IntArray,
    e_cls: IntArray,
    e_node: IntArray,
    e_coef: FloatArray,
) -> tuple[IntArray, IntArray, IntArray, IntArray, FloatArray]:
    """Split classes so that members share their stand-in at ``tier``; entries follow.

    Returns each new class's old class, then the new (member -> class, entries).
    """
    stand = walk.stand_in(tier)[walk.col_of_leaf[dests]]
    pair_old, pair_stand, new_of_dest = unique_pairs(cls_of, stand, walk.fabric.nodes)
    order = np.argsort(e_cls, kind="stable")
    e_cls, e_node, e_coef = e_cls[order], e_node[order], e_coef[order]
    ptr = np.searchsorted(e_cls, np.arange(int(cls_of.max()) + 2))
    count = ptr[pair_old + 1] - ptr[pair_old]
    pos = gather_ranges(ptr, pair_old)
    new_cls = np.repeat(np.arange(pair_old.size), count)
    del pair_stand
    return pair_old, new_of_dest, new_cls, e_node[pos], e_coef[pos]
