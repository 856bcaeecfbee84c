"""Routing strategies: which next hops a switch may take towards a destination leaf.

Which next hops a switch may take is the fabric's routing strategy (``Fabric.strategy``, a
``RoutingStrategy`` object the family that built the plane put there). A strategy maps the fabric and a set of destination leaves (a destination
GPU's first switch) to ``NextHops``: the hop distance ``dist(v, l)`` from every switch v to every
destination leaf l over the links it may use (alive ones only), and optionally an
``allowed(link, l)`` rule. The equal-cost next hops of v towards l are then the alive links
v -> w with

    allowed(v -> w, l)  and  dist(w, l) = dist(v, l) - 1       (parallel links are separate hops)

so ECMP and spraying (``planner.sim.routing``) run unchanged on every strategy. A strategy also
says whether its routes are valley-free (``RoutingStrategy.valley_free``): code that relies
on routes climbing then descending asks ``is_valley_free(fabric)``, never a strategy's name.
The generic strategies (a family's own live in its package: dimension order in
``planner.families.torus.routing``, the dragonfly's and WCMP in theirs):

* ``up_down`` (folded Clos, OCS direct-connect): valley-free. A packet climbs until it reaches a
  switch whose subtree holds the destination leaf, then descends. ``leaf_distances`` computes
  that distance tier by tier from the top: a switch at tier t is t - 1 hops from a leaf below it,
  else one more than its nearest parent. No extra rule.
* ``shortest_path``: minimal hop count over the alive switch-to-switch links (any direction, any
  dimension); no extra rule.

"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from planner.sim.fabric import UNREACHABLE as UNREACHABLE
from planner.sim.fabric import BoolArray, Fabric, IntArray, RoutingStrategy
from planner.sim.fabric import LinkRule as LinkRule
from planner.sim.fabric import NextHops as NextHops
from planner.sim.fabric import ViaRule as ViaRule

#: Largest number of (switch, destination leaf) candidate entries expanded at once.
EXPAND_CHUNK = 4_000_000


def _parents(fabric: Fabric, tier: int) -> IntArray:
    """Alive distinct parents of every switch of a tier, padded with -1: shape (switches, most)."""
    off = fabric.tier_offsets
    up_alive = fabric.alive[0::2]
    sel = (fabric.design_classes == tier) & up_alive
    child = fabric.lower[sel] - off[tier]
    parent = fabric.upper[sel] - off[tier + 1]
    n = off[tier + 1] - off[tier]
    pairs = np.sort(child * (off[tier + 2] - off[tier + 1]) + parent)
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]][: pairs.size]]  # distinct, by sorting
    n_up = off[tier + 2] - off[tier + 1]
    child, parent = pairs // n_up, pairs % n_up
    counts = np.bincount(child, minlength=n)
    width = int(counts.max()) if counts.size and counts.max() > 0 else 0
    out = np.full((n, max(width, 1)), -1, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(child.size) - starts[child]
    out[child, slot] = parent
    return out


def _distinct_rows(block: BoolArray) -> tuple[BoolArray, IntArray]:
    """The distinct rows of a boolean table, and each row's index among them."""
    packed = np.packbits(block, axis=1)
    keys = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return block[first], inverse.ravel().astype(np.int64)


def _down_reach(fabric: Fabric, leaves: IntArray) -> list[BoolArray]:
    """For each tier t >= 1: which of the given destination leaves each tier-t switch reaches going down.

    A switch reaches what its children reach: reach_t = adj_t @ reach_(t-1) as booleans. The
    product runs over the distinct rows of reach_(t-1) only (the spines of a pod reach the same
    leaves), so its work is (switches x distinct children's rows x leaves), not the links'.
    """
    off = fabric.tier_offsets
    n_leaf = off[2] - off[1]
    reach = [np.zeros((0, leaves.size), dtype=bool)]
    eye = np.zeros((n_leaf, leaves.size), dtype=bool)
    eye[leaves - off[1], np.arange(leaves.size)] = True
    reach.append(eye)
    down_alive = fabric.alive[1::2]
    distinct, which = eye, np.arange(n_leaf)
    for t in range(2, fabric.tiers + 1):
        sel = (fabric.design_classes == t - 1) & down_alive
        rows = fabric.upper[sel] - off[t]
        cols = fabric.lower[sel] - off[t - 1]
        n_rows = off[t + 1] - off[t]
        if t == 2:  # the tier below is the identity on the chosen leaves: gather columns
            col_of = np.full(n_leaf, -1, dtype=np.int64)
            col_of[leaves - off[1]] = np.arange(leaves.size)
            keep = col_of[cols] >= 0
            r = np.zeros((n_rows, leaves.size), dtype=bool)
            r[rows[keep], col_of[cols[keep]]] = True
        else:
            shape = (n_rows, distinct.shape[0])
            adj = sp.csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, which[cols])), shape)
            adj.sum_duplicates()
            r = np.asarray(adj @ distinct.astype(np.float32)) > 0
        reach.append(r)
        distinct, which = _distinct_rows(r)
    return reach


def leaf_distances(fabric: Fabric, leaves: IntArray) -> npt.NDArray[np.int16]:
    """Up-down hop distance from every switch to each of the given destination leaves (node ids).

    Shape (switches, len(leaves)), row = node id - first leaf id; UNREACHABLE where no
    valley-free path of alive links exists. GPUs are left out: paths start and end at leaves.
    Switches with the same parents get the same minimum over them, computed once per parent set.
    """
    off = fabric.tier_offsets
    leaves = np.asarray(leaves, dtype=np.int64)
    dist = np.full((fabric.nodes - off[1], leaves.size), UNREACHABLE, dtype=np.int16)
    reach = _down_reach(fabric, leaves)
    above: npt.NDArray[np.int16] | None = None
    for t in range(fabric.tiers, 0, -1):
        d = np.where(reach[t], np.int16(t - 1), UNREACHABLE).astype(np.int16)
        if above is not None and t < fabric.tiers:
            parents = _parents(fabric, t)
            sets, inverse = np.unique(parents, axis=0, return_inverse=True)
            padded = np.vstack([above, np.full((1, leaves.size), UNREACHABLE, dtype=np.int16)])
            best = np.full((sets.shape[0], leaves.size), UNREACHABLE, dtype=np.int16)
            for j in range(sets.shape[1]):
                np.minimum(best, padded[sets[:, j]], out=best)
            via_up = np.where(best < UNREACHABLE, best + 1, UNREACHABLE).astype(np.int16)
            d = np.minimum(d, via_up[inverse.ravel()])
        dist[off[t] - off[1] : off[t + 1] - off[1]] = d
        above = d
    return dist


def strategy_of(fabric: Fabric) -> RoutingStrategy:
    """The strategy the plane carries (``Fabric.strategy``)."""
    return fabric.strategy


def is_valley_free(fabric: Fabric) -> bool:
    """True when the fabric's strategy routes valley-free (climb, then descend)."""
    return fabric.strategy.valley_free


def distances(fabric: Fabric, leaves: IntArray) -> npt.NDArray[np.int16]:
    """Hop distance from every switch to each destination leaf under the fabric's strategy.

    Shape (switches, len(leaves)), row = node id - first switch; UNREACHABLE where cut off.
    """
    leaves = np.asarray(leaves, dtype=np.int64)
    uniq, inverse = np.unique(leaves, return_inverse=True)
    return strategy_of(fabric)(fabric, uniq).dist[:, inverse.ravel()]


def leaf_hops(fabric: Fabric, src_leaf: IntArray, dst_leaf: IntArray) -> IntArray:
    """Switch hops between pairs of distinct leaves (node ids); UNREACHABLE where cut off.

    Under valley-free (up-down) routing a destination leaf's distances depend only on its alive
    parents (a path ends by going down into the leaf from one of them), so leaves with the same parents
    share one column of ``distances``: one is computed per parent set, not per leaf (a pod's
    leaves, not 16,000 of them on a million GPUs). Two leaves with the same parents are 2 hops
    apart (up to a shared parent and down), or cut off when they have none. Other strategies
    compute a column per destination leaf.
    """
    src_leaf = np.asarray(src_leaf, dtype=np.int64)
    dst_leaf = np.asarray(dst_leaf, dtype=np.int64)
    first = fabric.first_switch
    if not is_valley_free(fabric) or fabric.tiers < 2:
        leaves, col = np.unique(dst_leaf, return_inverse=True)
        return distances(fabric, leaves)[src_leaf - first, col.ravel()].astype(np.int64)
    parents = _parents(fabric, 1)
    sets, rep, set_of = np.unique(parents, axis=0, return_index=True, return_inverse=True)
    set_of = set_of.ravel()
    leaf0 = fabric.tier_offsets[1]
    dst_set = set_of[dst_leaf - leaf0]
    needed, col = np.unique(dst_set, return_inverse=True)
    d = distances(fabric, rep[needed] + leaf0)[src_leaf - first, col.ravel()].astype(np.int64)
    same = set_of[src_leaf - leaf0] == dst_set
    orphan = sets[dst_set, 0] < 0
    d[same] = np.where(orphan[same], int(UNREACHABLE), 2)
    return d


def up_down(fabric: Fabric, leaves: IntArray) -> NextHops:
    """Valley-free routing of tiered fabrics (``leaf_distances``), no extra rule."""
    return NextHops(leaf_distances(fabric, leaves))


def minimal_hops(fabric: Fabric, leaves: IntArray) -> NextHops:
    """Minimal hop count over alive switch-to-switch links (BFS towards every leaf).

    dist(v, l) = min over alive paths v -> ... -> l of switch hops; GPUs are never transit.
    """
    first = fabric.first_switch
    n = fabric.switches
    src, dst = fabric.src, fabric.dst
    keep = fabric.alive & (src >= first) & (dst >= first)
    # Reversed graph, so a search from each leaf gives the distance *to* it.
    graph = sp.csr_matrix(
        (np.ones(int(keep.sum())), (dst[keep] - first, src[keep] - first)), shape=(n, n)
    )
    d = shortest_path(graph, method="D", unweighted=True, indices=leaves - first)
    d = np.atleast_2d(d).T
    out = np.full(d.shape, UNREACHABLE, dtype=np.int16)
    finite = np.isfinite(d)
    out[finite] = d[finite].astype(np.int16)
    return NextHops(out)


#: Up-down routing of tiered planes (folded Clos, rail, OCS direct-connect with circuit nodes).
UP_DOWN = RoutingStrategy("up_down", up_down, valley_free=True)
#: Minimal hop count over any alive switch links.
SHORTEST_PATH = RoutingStrategy("shortest_path", minimal_hops)
