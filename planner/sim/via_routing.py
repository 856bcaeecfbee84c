"""Two-phase routing (``NextHops.via``): a flow goes to an intermediate switch, then on.

A strategy whose next hops depend on the destination alone cannot express Valiant routing: the
intermediate is chosen at the source. A strategy that gives a ``ViaRule`` has ``route`` send each
leaf pair's flows to its intermediates first and then to the destination, every leg on the
strategy's own next hops. Spraying splits a pair's traffic over its intermediates by weight;
ECMP hashes each flow onto one of them with those weights as probabilities. An intermediate one
of the legs cannot reach is dropped and the pair's other weights scaled up; a pair left with none
is cut off.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from planner.deadline import Deadline
from planner.sim.ecmp_hash import ecmp_paths, fmix64
from planner.sim.fabric import BoolArray, FloatArray, IntArray
from planner.sim.route_walk import Walk, walker
from planner.sim.routing_strategies import UNREACHABLE
from planner.sim.spray_patterns import spread

#: Salt of the hash that picks a flow's intermediate, apart from the next-hop hashes.
VIA_SALT = np.uint64(0xA24BAED4963EE407)
#: 2^-53: a 53-bit integer to a uniform float in [0, 1).
UNIT_53 = 2.0**-53


def via_entries(
    walk: Walk, a: IntArray, b: IntArray, deadline: Deadline
) -> tuple[Walk, IntArray, IntArray, FloatArray]:
    """The intermediates of leaf pairs (a, b) that both legs reach, and a walk that knows them.

    Returns (walk, pair index, intermediate switch, weight), the weights of every pair scaled to
    add up to 1 over its reachable intermediates.
    """
    assert walk.via is not None
    fabric = walk.fabric
    pair, via, weight = walk.via(a, b)
    walk = walker(fabric, np.concatenate([b, via]), deadline)
    first, col = fabric.first_switch, walk.col_of_leaf
    ok = (walk.dist[a[pair] - first, col[via]] < UNREACHABLE) & (
        walk.dist[via - first, col[b[pair]]] < UNREACHABLE
    )
    pair, via, weight = pair[ok], via[ok], weight[ok]
    total = np.bincount(pair, weights=weight, minlength=a.size)
    return walk, pair, via, weight / total[pair]


def via_patterns(
    walk: Walk, src_leaf: IntArray, dst_leaf: IntArray, deadline: Deadline
) -> tuple[sp.csr_matrix, IntArray, BoolArray]:
    """Spraying patterns of two-phase routing, one per leaf pair, each flow's, and who has one.

    The pattern of (a, b) is the sum over its intermediates v of weight x (pattern a -> v +
    pattern v -> b); every leg is walked once.
    """
    nodes = walk.fabric.nodes
    pair_key, pattern_of = np.unique(src_leaf * nodes + dst_leaf, return_inverse=True)
    a, b = pair_key // nodes, pair_key % nodes
    walk, pair, via, weight = via_entries(walk, a, b, deadline)
    x, y = np.concatenate([a[pair], via]), np.concatenate([via, b[pair]])
    owner, w = np.concatenate([pair, pair]), np.concatenate([weight, weight])
    move = x != y
    leg_key, leg_of = np.unique(x[move] * nodes + y[move], return_inverse=True)
    n_leg = leg_key.size
    rows, cols, vals, *_ = spread(
        walk, np.arange(n_leg), leg_key // nodes, np.ones(n_leg), leg_key % nodes
    )
    legs = sp.csr_matrix((vals, (rows, cols)), shape=(walk.fabric.links, n_leg))
    mix = sp.csr_matrix((w[move], (leg_of.ravel(), owner[move])), shape=(n_leg, pair_key.size))
    reached = np.bincount(pair, minlength=pair_key.size) > 0
    pattern_of = pattern_of.ravel().astype(np.int64)
    return (legs @ mix).tocsr(), pattern_of, reached[pattern_of]


def via_ecmp(
    walk: Walk,
    flows: IntArray,
    src_leaf: IntArray,
    dst_leaf: IntArray,
    keys: npt.NDArray[np.uint64],
    seed: int,
    deadline: Deadline,
) -> tuple[IntArray, IntArray, BoolArray]:
    """ECMP paths of two-phase routing: (links, flow ids), and which flows have a route.

    Each flow is hashed onto one intermediate (with the weights as probabilities), then walked
    to it and on to its destination.
    """
    m = flows.size
    walk, pair, via, weight = via_entries(walk, src_leaf, dst_leaf, deadline)
    with np.errstate(over="ignore"):
        u = (fmix64(keys ^ VIA_SALT) >> np.uint64(11)).astype(np.float64)
    u *= UNIT_53
    order = np.argsort(pair, kind="stable")
    pair, via, weight = pair[order], via[order], weight[order]
    cum = np.cumsum(weight)
    start = np.concatenate([[0.0], cum])[np.searchsorted(pair, np.arange(m))]
    pick = np.full(m, -1, dtype=np.int64)
    pick[pair] = np.arange(pair.size)  # the pair's last entry: rounding may leave u past every sum
    passed = np.flatnonzero(cum - start[pair] > u[pair])[::-1]
    pick[pair[passed]] = passed  # the first entry whose running weight passes u
    ok = pick >= 0
    mid = np.full(m, -1, dtype=np.int64)
    mid[ok] = via[pick[ok]]
    rows, cols = [], []
    for leg_from, leg_to in ((src_leaf, mid), (mid, dst_leaf)):
        go = np.flatnonzero(ok & (leg_from != leg_to))
        if go.size:
            r, c = ecmp_paths(walk, flows[go], leg_from[go], leg_to[go], keys[go], seed)
            rows.append(r)
            cols.append(c)
    empty = np.zeros(0, dtype=np.int64)
    return (
        np.concatenate(rows) if rows else empty,
        np.concatenate(cols) if cols else empty,
        ok,
    )
