"""Routes of flows over a fabric: per-flow ECMP with a real hash, and packet spraying.

``route`` routes GPU-to-GPU flows over one plane and returns ``Routes`` (``planner.sim.routes``):
the fraction of every flow on every directed link. The parts, one module each:

* which next hops a switch may take: the fabric's strategy (``planner.sim.routing_strategies``:
  ``up_down``, ``dimension_order``, ``shortest_path``, and ``register_strategy`` for more);
* walking towards the destination leaves over those next hops (``planner.sim.route_walk``);
* ECMP: every switch hashes a flow's 5-tuple onto one next hop (``planner.sim.ecmp_hash``);
* spraying: every switch splits a flow evenly over all its next hops, one pattern per leaf pair
  or per climb and descent (``planner.sim.spray_patterns``);
* two-phase routing, when the strategy names intermediates (``planner.sim.via_routing``).

``estimate_route_bytes`` estimates the memory routing a phase will take, from a small sample.
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
import scipy.sparse as sp

from planner.deadline import NO_DEADLINE, Deadline
from planner.sim.ecmp_hash import ecmp_paths, flow_keys
from planner.sim.fabric import Fabric, IntArray
from planner.sim.route_walk import walker
from planner.sim.routes import Routes
from planner.sim.routing_strategies import UNREACHABLE, is_valley_free
from planner.sim.spray_patterns import HALVES_MIN_PAIRS, spray_halves, spray_patterns
from planner.sim.via_routing import via_ecmp, via_patterns


class Routing(StrEnum):
    """How switches spread flows over equal-cost next hops."""

    ECMP = "ecmp"
    SPRAY = "spray"


def route(
    fabric: Fabric,
    src: IntArray,
    dst: IntArray,
    routing: Routing,
    *,
    seed: int = 0,
    flow_id: IntArray | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> Routes:
    """Route GPU-to-GPU flows over one plane.

    Raises ``DeadlineExpired`` when ``deadline`` passes while the routes are being built.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    m = src.size
    flow_id = (
        np.arange(m, dtype=np.int64) if flow_id is None else np.asarray(flow_id, dtype=np.int64)
    )
    src_leaf, dst_leaf = fabric.leaf_of(src), fabric.leaf_of(dst)
    nic_ok = fabric.alive[2 * src] & fabric.alive[2 * dst + 1]
    rows = [2 * src, 2 * dst + 1]
    cols = [np.arange(m), np.arange(m)]
    vals = [np.ones(m), np.ones(m)]
    cross = np.flatnonzero((src_leaf != dst_leaf) & nic_ok)
    connected = nic_ok.copy()
    patterns: sp.csr_matrix | None = None
    flow_pattern = np.full(m, -1, dtype=np.int64)
    flow_pattern_down: IntArray | None = None
    if cross.size:
        walk = walker(fabric, dst_leaf[cross], deadline)
        first_switch = fabric.tier_offsets[1]
        reach = (
            walk.dist[src_leaf[cross] - first_switch, walk.col_of_leaf[dst_leaf[cross]]]
            < UNREACHABLE
        )
        if walk.via is not None:  # reached through intermediates: their legs decide
            reach[:] = True
        connected[cross[~reach]] = False
        cross = cross[reach]
    if cross.size and walk.via is not None:
        if routing is Routing.ECMP:
            keys = flow_keys(src[cross], dst[cross], flow_id[cross], seed)
            r, c, ok = via_ecmp(walk, cross, src_leaf[cross], dst_leaf[cross], keys, seed, deadline)
            rows.append(r)
            cols.append(c)
            vals.append(np.ones(r.size))
        else:
            patterns, pattern_of, ok = via_patterns(
                walk, src_leaf[cross], dst_leaf[cross], deadline
            )
            flow_pattern[cross] = np.where(ok, pattern_of, -1)
        connected[cross[~ok]] = False
    elif cross.size:
        if routing is Routing.ECMP:
            r, c = ecmp_paths(
                walk,
                cross,
                src_leaf[cross],
                dst_leaf[cross],
                flow_keys(src[cross], dst[cross], flow_id[cross], seed),
                seed,
            )
            rows.append(r)
            cols.append(c)
            vals.append(np.ones(r.size))
        else:
            halves = spray_halves(walk, src_leaf[cross], dst_leaf[cross])
            if halves is None:
                patterns, flow_pattern[cross] = spray_patterns(
                    walk, src_leaf[cross], dst_leaf[cross]
                )
            else:
                patterns, flow_pattern[cross], down = halves
                flow_pattern_down = np.full(m, -1, dtype=np.int64)
                flow_pattern_down[cross] = down
    explicit = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(fabric.links, m),
    )
    explicit = explicit.multiply(connected[np.newaxis, :].astype(np.float64)).tocsr()
    return Routes(m, fabric.links, explicit, patterns, flow_pattern, connected, flow_pattern_down)


#: Peak bytes per nonzero of a spraying pattern while it is built and used (index and value
#: arrays, their sorted copies, the CSR/CSC forms): measured on b200-32k-800g, a random permutation
#: of 32,768 flows, 65.2 M pattern nonzeros, 5.1 GiB peak (issue 11).
BYTES_PER_PATTERN_ENTRY = 80.0
#: Peak bytes per explicit route entry (a flow on one link: its NIC links, and for ECMP each hop).
BYTES_PER_ROUTE_ENTRY = 120.0
#: Bytes per flow in the completion-time loop (rates, remaining bytes, masks, ids, ...).
BYTES_PER_FLOW = 200.0
#: Halves per leaf assumed by the estimate when spraying patterns are held in halves.
HALF_KEYS_PER_LEAF = 4
#: Leaf pairs (spraying) or flows (ECMP) routed to estimate the size of a phase's routes.
ESTIMATE_SAMPLE = 64


def estimate_route_bytes(
    fabric: Fabric, src: IntArray, dst: IntArray, routing: Routing, *, seed: int = 0
) -> float:
    """Peak bytes that routing these flows and sharing their rates will take (an estimate).

    Routes a small random sample (``ESTIMATE_SAMPLE`` leaf pairs for spraying, flows for ECMP)
    and scales its size to all of them: spraying holds one pattern per (source leaf, destination
    leaf), ECMP one entry per flow and hop.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    m = src.size
    if m == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    src_leaf, dst_leaf = fabric.leaf_of(src), fabric.leaf_of(dst)
    cross = np.flatnonzero(src_leaf != dst_leaf)
    base = m * (BYTES_PER_FLOW + 2 * BYTES_PER_ROUTE_ENTRY)
    if cross.size == 0:
        return float(base)
    if routing is Routing.SPRAY:
        _, first = np.unique(src_leaf[cross] * fabric.nodes + dst_leaf[cross], return_index=True)
        pairs = cross[first]
        pick = rng.choice(pairs, size=min(ESTIMATE_SAMPLE, pairs.size), replace=False)
        sample = route(fabric, src[pick], dst[pick], routing, seed=seed)
        per_pair = sample.patterns.nnz / pick.size if sample.patterns is not None else 0.0
        patterns = float(pairs.size)
        if pairs.size >= HALVES_MIN_PAIRS and is_valley_free(fabric):
            # Held in halves (``spray_halves``), each about half a pair's pattern (the second
            # / 2): a few climbs per source leaf and descents per destination leaf (2 on a
            # healthy Clos).
            leaves = np.unique(src_leaf[cross]).size + np.unique(dst_leaf[cross]).size
            patterns = min(patterns, HALF_KEYS_PER_LEAF * leaves / 2 / 2)
        return float(base + patterns * per_pair * BYTES_PER_PATTERN_ENTRY)
    pick = rng.choice(cross, size=min(ESTIMATE_SAMPLE, cross.size), replace=False)
    sample = route(fabric, src[pick], dst[pick], routing, seed=seed)
    per_flow = sample.explicit.nnz / pick.size
    return float(base + cross.size * per_flow * BYTES_PER_ROUTE_ENTRY)
