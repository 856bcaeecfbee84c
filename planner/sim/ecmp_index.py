"""ECMP next hops on an up-down fabric without listing the candidates, where that is exact.

``planner.sim.route_walk`` finds the equal-cost next hops of a switch v towards a destination leaf l
by listing v's links and keeping those v -> w with ``dist(w, l) = dist(v, l) - 1``: work in v's
degree for every (switch, leaf) pair a flow visits. On a million-GPU Clos that is a few hundred
million candidates per 262,144 flows, most of the time of a routed phase. Two hops of such a walk
have a next-hop set known from the switch alone, and this index answers them in O(1) per flow
with the very link the listing would give (same set, same order, so the same hash choice):

* **Climbing at a switch whose parents look alike.** Let v be a switch whose alive up links all
  lead to switches with the same distance row (``dist(p, .)`` equal for every parent p), and
  every switch child w of v have only parents with that same row. If l is not below v
  (``dist(v, l) > tier(v) - 1``), then ``dist(v, l) = 1 + dist(p, l)`` for every parent p, so
  every up link is a next hop; a child w has ``dist(w, l) = 1 + dist(v, l)`` (l is not below w
  either), never ``dist(v, l) - 1``; a GPU is never a next hop. The next hops are v's up links,
  in link order. On a healthy Clos every leaf and every spine qualifies (a pod's spines, and a
  plane's cores, reach the same leaves at the same distances).
* **Descending from tier 2 to a leaf below.** If l is below a tier-2 switch v
  (``dist(v, l) = 1``), a next hop w needs ``dist(w, l) = 0``, i.e. w = l: the next hops are
  v's alive links to l (parallel links in link order). Parents never qualify (their distance
  is at least 2).

Every other (switch, leaf) pair, and every fabric with another strategy or an ``allowed`` rule,
keeps the listing. Rows are compared by ``row_ids`` (one id per distinct distance row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from planner.sim.fabric import BoolArray, Fabric, IntArray


def row_ids(block: npt.NDArray[np.int16]) -> IntArray:
    """Id of every row among the distinct rows, numbered in lexicographic order.

    What ``np.unique(block, axis=0, return_inverse=True)`` gives for non-negative entries, but
    each row is compared as one byte string (big-endian, so bytes sort as the numbers do)
    instead of column by column: 30x faster on the distance blocks of 131,072 GPUs.
    """
    rows = np.ascontiguousarray(block, dtype=">i2")
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, inverse = np.unique(keys, return_inverse=True)
    return inverse.ravel().astype(np.int64)


@dataclass(frozen=True)
class EcmpIndex:
    """Next hops known from the switch alone (see the module's docstring)."""

    tier: IntArray
    """Tier of every node (0 = GPU)."""
    up_ptr: IntArray
    """CSR pointer per node into ``up_links``."""
    up_links: IntArray
    """Alive links to a higher tier, by tail node, in link order."""
    plain_climb: BoolArray
    """Per node: when climbing, its up links are exactly its next hops."""
    down_keys: IntArray
    """Sorted ``tail * nodes + head`` of the alive links from tier 2 down to a leaf."""
    down_links: IntArray
    """Those links, in the order of ``down_keys`` (link order within a key)."""


def ecmp_index(
    fabric: Fabric, dist: npt.NDArray[np.int16], out_ptr: IntArray, out_links: IntArray
) -> EcmpIndex:
    """The index of an up-down fabric, from its distance table and alive out links (by tail)."""
    nodes, first = fabric.nodes, fabric.first_switch
    tier = fabric.tier_of(np.arange(nodes, dtype=np.int64))
    tail = np.repeat(np.arange(nodes, dtype=np.int64), np.diff(out_ptr))
    head = fabric.dst[out_links]
    up = tier[head] > tier[tail]
    up_count = np.bincount(tail[up], minlength=nodes)
    up_ptr = np.concatenate([[0], np.cumsum(up_count)])
    up_links = out_links[up]

    rid = np.full(nodes, -1, dtype=np.int64)
    rid[first:] = row_ids(dist)
    # Parents of a node share one row: least and greatest row id over its up heads agree.
    up_tail, up_head_rid = tail[up], rid[head[up]]
    lo = np.full(nodes, np.iinfo(np.int64).max)
    hi = np.full(nodes, -1, dtype=np.int64)
    np.minimum.at(lo, up_tail, up_head_rid)
    np.maximum.at(hi, up_tail, up_head_rid)
    has_up = up_count > 0
    alike = has_up & (lo == hi)
    parent_rid = np.where(alike, hi, -1)
    # A switch child w of v is harmless when climbing from v: no parents, or only v's row.
    down = (tier[head] < tier[tail]) & (head >= first)
    child = head[down]
    ok = ~has_up[child] | (alike[child] & (parent_rid[child] == rid[tail[down]]))
    bad_child = np.zeros(nodes, dtype=bool)
    bad_child[tail[down][~ok]] = True
    plain_climb = alike & ~bad_child

    to_leaf = down & (tier[tail] == 2) & (tier[head] == 1)
    keys = tail[to_leaf] * nodes + head[to_leaf]
    order = np.argsort(keys, kind="stable")  # out_links is in link order within a tail
    return EcmpIndex(tier, up_ptr, up_links, plain_climb, keys[order], out_links[to_leaf][order])


def known_picks(
    index: EcmpIndex,
    dist_here: IntArray,
    node: IntArray,
    dest_leaf: IntArray,
    hashes: npt.NDArray[np.uint64],
) -> tuple[BoolArray, IntArray, IntArray]:
    """The ECMP pick of every (node, leaf) pair the index answers.

    ``dist_here`` is ``dist(node, dest_leaf)``, ``hashes`` each flow's hash at this node. Returns
    (known, count, link): which pairs the index answers, and for those the number of next hops
    and the one at ``hash mod count`` (-1 where there is none).
    """
    tier = index.tier[node]
    climb = (dist_here > tier - 1) & index.plain_climb[node]
    descend = (tier == 2) & (dist_here == 1)
    count = np.zeros(node.size, dtype=np.int64)
    link = np.full(node.size, -1, dtype=np.int64)
    at = node[climb]
    start = index.up_ptr[at]
    count[climb] = index.up_ptr[at + 1] - start
    link[climb] = index.up_links[start + _index_of(hashes[climb], count[climb])]
    key = node[descend] * index.tier.size + dest_leaf[descend]
    start = np.searchsorted(index.down_keys, key, side="left")
    count[descend] = np.searchsorted(index.down_keys, key, side="right") - start
    has = count[descend] > 0
    picked = np.full(key.size, -1, dtype=np.int64)
    picked[has] = index.down_links[
        start[has] + _index_of(hashes[descend][has], count[descend][has])
    ]
    link[descend] = picked
    return climb | descend, count, link


def _index_of(hashes: npt.NDArray[np.uint64], count: IntArray) -> IntArray:
    """The index hash mod count (count > 0)."""
    return (hashes % count.astype(np.uint64)).astype(np.int64)
