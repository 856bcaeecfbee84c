"""Spraying: every switch splits a flow evenly over all its equal-cost next hops.

A fluid model of per-packet spraying. All flows between the same pair of leaves share one
pattern of link fractions (``spray_patterns``), so the routes keep one column per leaf pair
instead of one per flow. On a valley-free fabric with many leaf pairs the patterns are held in
two halves, a climb and a descent, each shared by many pairs (``spray_halves``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from planner.sim.ecmp_index import row_ids
from planner.sim.fabric import BoolArray, Fabric, FloatArray, IntArray
from planner.sim.route_walk import Walk, check_next_hops, unique_pairs
from planner.sim.routing_strategies import EXPAND_CHUNK, UNREACHABLE, is_valley_free


def spray_patterns(
    walk: Walk, src_leaf: IntArray, dst_leaf: IntArray
) -> tuple[sp.csr_matrix, IntArray]:
    """One pattern per (source leaf, destination leaf): the even split over every equal-cost path."""
    nodes = walk.fabric.nodes
    pair_key, flow_pattern = np.unique(src_leaf * nodes + dst_leaf, return_inverse=True)
    n_pat = pair_key.size
    rows, cols, vals, *_ = spread(
        walk, np.arange(n_pat), pair_key // nodes, np.ones(n_pat), pair_key % nodes
    )
    matrix = sp.csr_matrix((vals, (rows, cols)), shape=(walk.fabric.links, n_pat))
    return matrix, flow_pattern.astype(np.int64)


# ---- spraying patterns in halves ---------------------------------------------------------------
#: Fewest distinct leaf pairs for which spraying patterns are built in halves; below it the
#: per-pair walk is cheaper than the checks the halves need.
HALVES_MIN_PAIRS = 2_048


def spread(
    walk: Walk,
    pat: IntArray,
    node: IntArray,
    mass: FloatArray,
    pat_dest: IntArray,
    stop: Callable[[IntArray, IntArray], BoolArray] | None = None,
) -> tuple[IntArray, IntArray, FloatArray, IntArray, IntArray, FloatArray]:
    """Spread each pattern's mass from its states over every equal-cost next hop to its leaf.

    States (pattern, node, mass) move one hop per round, every state splitting its mass evenly
    over its next hops and states of one pattern at one node merging (the arithmetic of
    ``spray_patterns``). States at which ``stop(node, dest)`` holds leave the walk.
    Returns the entries (link, pattern, fraction) and the stopped states (pattern, node, mass).
    """
    nodes = walk.fabric.nodes
    dst_of = walk.fabric.dst
    rows, cols, vals = [], [], []
    s_pat, s_node, s_mass = [], [], []
    while pat.size:
        dest = pat_dest[pat]
        if stop is not None:
            halt = stop(node, dest)
            if halt.any():
                s_pat.append(pat[halt])
                s_node.append(node[halt])
                s_mass.append(mass[halt])
                go = ~halt
                pat, node, mass, dest = pat[go], node[go], mass[go], dest[go]
                if not pat.size:
                    break
        inverse, ptr, links = walk.candidates(node, dest)
        count = ptr[inverse + 1] - ptr[inverse]
        check_next_hops(walk, count, node, dest)
        entry = np.repeat(np.arange(pat.size), count)
        offset = np.arange(entry.size) - np.repeat(np.cumsum(count) - count, count)
        link = links[ptr[inverse][entry] + offset]
        share = (mass / count)[entry]
        rows.append(link)
        cols.append(pat[entry])
        vals.append(share)
        nxt = dst_of[link]
        moving = nxt != dest[entry]
        pat, node, inv = unique_pairs(pat[entry][moving], nxt[moving], nodes)
        mass = np.bincount(inv, weights=share[moving]).astype(np.float64, copy=False)

    def cat(parts: list[IntArray] | list[FloatArray], dtype: type) -> Any:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    return (
        cat(rows, np.int64),
        cat(cols, np.int64),
        cat(vals, np.float64),
        cat(s_pat, np.int64),
        cat(s_node, np.int64),
        cat(s_mass, np.float64),
    )


def _no_valleys(walk: Walk, cols: IntArray) -> bool:
    """True when no switch that must climb towards a leaf has a downward equal-cost next hop.

    Then a walk climbs until it reaches a switch that reaches the leaf going down, and descends
    from there: what the halves assume.
    """
    f = walk.fabric
    first = f.first_switch
    src, dst = f.src, f.dst
    tier = f.tier_of(np.arange(f.nodes))
    down = np.flatnonzero(f.alive & (src >= first) & (dst >= first) & (tier[dst] < tier[src]))
    # Parallel links are one test.
    pairs = np.unique(src[down] * f.nodes + dst[down])
    tails, heads = pairs // f.nodes - first, pairs % f.nodes - first
    dist = walk.dist if cols.size == walk.dist.shape[1] else walk.dist[:, cols]
    turn = (tier[first:] - 1).astype(np.int16)
    step = max(1, EXPAND_CHUNK // max(1, dist.shape[1]))
    for a in range(0, tails.size, step):
        du, dc = dist[tails[a : a + step]], dist[heads[a : a + step]]
        valley = (dc == du - 1) & (du < UNREACHABLE) & (du != turn[tails[a : a + step], None])
        if valley.any():
            return False
    return True


def _ancestors(fabric: Fabric, leaves: IntArray) -> list[IntArray]:
    """Switches above each of these leaves over alive up links (node ids, sorted)."""
    first = fabric.first_switch
    src, dst = fabric.src, fabric.dst
    tier = fabric.tier_of(np.arange(fabric.nodes))
    up = np.flatnonzero(fabric.alive & (src >= first) & (tier[dst] > tier[src]))
    n = fabric.switches
    adj = sp.csr_matrix(
        (np.ones(up.size, dtype=np.float32), (src[up] - first, dst[up] - first)), shape=(n, n)
    )
    reach = sp.csr_matrix(
        (np.ones(leaves.size, dtype=np.float32), (np.arange(leaves.size), leaves - first)),
        shape=(leaves.size, n),
    )
    seen = reach.copy()
    for _ in range(fabric.tiers):
        reach = (reach @ adj).astype(bool).astype(np.float32)
        seen = (seen + reach).astype(bool).astype(np.float32)
    seen = seen.tolil()
    return [first + np.asarray(r, dtype=np.int64) for r in seen.rows]


def spray_halves(
    walk: Walk, src_leaf: IntArray, dst_leaf: IntArray
) -> tuple[sp.csr_matrix, IntArray, IntArray] | None:
    """Spraying patterns in two halves shared by many leaf pairs; None when they do not apply.

    On an up-down fabric without valleys (``_no_valleys``) the walk from source leaf a to
    destination leaf b climbs, turns at the switches that reach b going down, and descends.

    * Climbing, the next hops of a switch depend on b only through the distances to b of a's
      ancestors (``_ancestors``). Leaves with the same parents have the same ancestors; per such
      group, destinations with equal distance columns over the ancestors share the climb. The up
      half is keyed by (a, that column): one walk each, stopped at the turning switches, which
      gives the mass arriving at each of them.
    * Descending depends only on the turning switches' masses and b. The down half is keyed by
      (b, those masses): one walk each.

    The pattern of (a, b) is then up half + down half, with the same arithmetic as the per-pair
    walk (``spray_patterns``): rounding aside, the same fractions on the same links, held in
    about (leaves x climbs + leaves x descents) columns instead of one per leaf pair. Returns the
    pattern matrix (links x halves) and each flow's up and down half.
    """
    fabric = walk.fabric
    if not is_valley_free(fabric) or walk.allowed is not None:
        return None
    nodes = fabric.nodes
    pair_key, pair_of_flow = np.unique(src_leaf * nodes + dst_leaf, return_inverse=True)
    if pair_key.size < HALVES_MIN_PAIRS:
        return None
    a, b = pair_key // nodes, pair_key % nodes
    col = walk.col_of_leaf[b]
    if not _no_valleys(walk, np.unique(col)):
        return None
    first = fabric.first_switch
    tier = fabric.tier_of(np.arange(nodes))
    # Groups of source leaves with the same parents, counted with parallel links (hence the
    # same ancestors and the same split of their climbs).
    leaves = np.unique(a)
    f_src, f_dst = fabric.src, fabric.dst
    up = np.flatnonzero(fabric.alive & (tier[f_src] == 1) & (tier[f_dst] > 1))
    up = up[np.isin(f_src[up], leaves)]
    srt = np.lexsort((f_dst[up], f_src[up]))
    lo, hi = f_src[up][srt], f_dst[up][srt]
    bounds = np.searchsorted(lo, np.append(leaves, nodes))
    lists: dict[bytes, int] = {}
    group_of_leaf = np.empty(leaves.size, dtype=np.int64)
    for i in range(leaves.size):
        group_of_leaf[i] = lists.setdefault(hi[bounds[i] : bounds[i + 1]].tobytes(), len(lists))
    reps = np.zeros(len(lists), dtype=np.int64)
    reps[group_of_leaf] = leaves
    anc = _ancestors(fabric, reps)
    # Climb key: (group, distance column over the group's ancestors) -> id, per pair.
    pair_group = group_of_leaf[np.searchsorted(leaves, a)]
    gc_key, gc_inv = np.unique(pair_group * (walk.dist.shape[1] + 1) + col, return_inverse=True)
    gc_group, gc_col = gc_key // (walk.dist.shape[1] + 1), gc_key % (walk.dist.shape[1] + 1)
    gc_sig = np.empty(gc_key.size, dtype=np.int64)
    base = 0
    for g in range(len(lists)):
        sel = np.flatnonzero(gc_group == g)
        if not sel.size:
            continue
        block = walk.dist[anc[g] - first][:, gc_col[sel]].T
        sig = row_ids(block)
        gc_sig[sel] = base + sig
        base += int(sig.max()) + 1
    climb = gc_sig[gc_inv]
    # Up halves: one walk per (source leaf, climb).
    up_key, up_of_pair = np.unique(a * (base + 1) + climb, return_inverse=True)
    up_first = np.zeros(up_key.size, dtype=np.int64)
    up_first[up_of_pair[::-1]] = np.arange(pair_key.size)[::-1]  # a representative pair
    rep_dest = b[up_first]

    def turns(node: IntArray, dest: IntArray) -> BoolArray:
        d = walk.dist[node - first, walk.col_of_leaf[dest]]
        return d == tier[node] - 1

    n_up = up_key.size
    r1, c1, v1, t_pat, t_node, t_mass = spread(
        walk, np.arange(n_up), a[up_first], np.ones(n_up), rep_dest, turns
    )
    # Turning masses of each up half, deduplicated exactly (their bytes).
    srt = np.lexsort((t_node, t_pat))
    t_pat, t_node, t_mass = t_pat[srt], t_node[srt], t_mass[srt]
    tb = np.searchsorted(t_pat, np.arange(n_up + 1))
    dist_id = np.empty(n_up, dtype=np.int64)
    seen: dict[bytes, int] = {}
    for u in range(n_up):
        s_, e_ = tb[u], tb[u + 1]
        dist_id[u] = seen.setdefault(t_node[s_:e_].tobytes() + t_mass[s_:e_].tobytes(), len(seen))
    first_of = np.zeros(len(seen), dtype=np.int64)
    first_of[dist_id[::-1]] = np.arange(n_up)[::-1]
    # Down halves: one walk per (destination leaf, turning masses).
    n_dist = len(seen)
    down_key, down_of_pair = np.unique(b * n_dist + dist_id[up_of_pair], return_inverse=True)
    d_leaf, d_dist = down_key // n_dist, down_key % n_dist
    u_of = first_of[d_dist]
    cnt = tb[u_of + 1] - tb[u_of]
    d_pat = np.repeat(np.arange(down_key.size), cnt)
    pos = np.repeat(tb[u_of] - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()))
    r2, c2, v2, _, _, _ = spread(walk, d_pat, t_node[pos], t_mass[pos], d_leaf)
    matrix = sp.csr_matrix(
        (np.concatenate([v1, v2]), (np.concatenate([r1, r2]), np.concatenate([c1, n_up + c2]))),
        shape=(fabric.links, n_up + down_key.size),
    )
    return (
        matrix,
        up_of_pair[pair_of_flow].astype(np.int64),
        (n_up + down_of_pair[pair_of_flow]).astype(np.int64),
    )
