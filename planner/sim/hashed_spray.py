"""Spraying by hashed entropies: every switch hashes a packet's entropy, as ECMP hashes a flow.

``Routing.SPRAY`` is otherwise the ideal: every flow split evenly over every shortest path.
Switches that spray in practice (Ultra Ethernet's entropy values, htsim's ``ecmp_host -paths
N``) do not see paths; a source stamps its packets with N entropy values in turn, and each
switch hashes the entropy onto one of its equal-cost next hops, so one flow's N entropies land
on the paths as N balls in bins: some paths get two or three of a flow's entropies, others none.
The imbalance is what makes the tail of hashed spraying, and this module models it.

A flow of ``P`` packets (on one plane) uses ``n = min(P, N)`` entropies, and entropy ``k``
carries its packets ``k, k + N, ...``: a sub-flow of ``ceil`` or ``floor(P / N)`` packets. Each
sub-flow is routed as ECMP routes a flow (``planner.sim.ecmp_hash``: the same switch hash, keyed
by the sub-flow's own id). Then, with ``L_e`` the bits every sub-flow puts on directed link
``e`` and ``c_e`` its capacity,

    T_e = L_e / c_e,        T_sub = max over its links e of T_e,        T_flow = max over its sub-flows

A link that carries its load at its full rate is done at ``T_e``; a sub-flow cannot end before
the busiest link it crosses has carried it; a flow ends with its last sub-flow. Under a
permutation of equal flows this is the flow's time exactly when its busiest link is busy to the
end, which round-robin spraying keeps it (every sub-flow of that link sends all along). It is
the load model, not max-min re-sharing: re-sharing lets the sub-flows of uncongested paths run
ahead, and the ones left over then finish later than a link that stays busy would carry them;
against htsim's NDP and EQDS (``tests/bench/RESULTS_htsim.md``), the load model is the closer.

Sub-flows are routed in chunks of at most ``CHUNK_SUBFLOWS`` (twice: loads first, then each
sub-flow's busiest link), so memory stays bounded at any size.
"""

from __future__ import annotations

import math

import numpy as np

from planner.deadline import NO_DEADLINE, Deadline
from planner.sim import traffic as tr
from planner.sim.fabric import Fabric, FloatArray, IntArray
from planner.sim.routes import Routes
from planner.sim.routing import Routing, route

BITS_PER_BYTE = 8.0
BITS_PER_GBIT = 1e9
#: Most sub-flows routed at once (about 100 MB of routes on a three-tier plane).
CHUNK_SUBFLOWS = 1 << 20


def entropies_used(size_bytes: FloatArray, payload_bytes: int, entropies: int) -> IntArray:
    """Entropies each flow's packets use: min(packets, entropies), at least 1."""
    packets = np.maximum(np.ceil(np.asarray(size_bytes) / payload_bytes), 1).astype(np.int64)
    return np.minimum(packets, entropies)


def sub_flows(
    phase: tr.Phase, payload_bytes: int, entropies: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """The sub-flows of a phase: the flow of each, its sub-flow index, and its bytes.

    Flow f of ``P`` packets over ``n`` entropies: sub-flow k carries ``P // n`` packets, one
    more when ``k < P % n``; its bytes are the flow's bytes in that proportion (the last, short
    packet spread over them, which moves no sub-flow by more than a packet's bytes).
    """
    size = np.asarray(phase.size_bytes, dtype=np.float64)
    used = entropies_used(size, payload_bytes, entropies)
    packets = np.maximum(np.ceil(size / payload_bytes), 1).astype(np.int64)
    flow = np.repeat(np.arange(size.size), used)
    first = np.cumsum(used) - used
    k = np.arange(flow.size) - first[flow]
    count = packets[flow] // used[flow] + (k < packets[flow] % used[flow])
    return flow, k, size[flow] * count / packets[flow]


def _chunks(total: int, size: int) -> list[tuple[int, int]]:
    return [(a, min(a + size, total)) for a in range(0, total, size)]


def hashed_times_s(
    fabric: Fabric,
    phase: tr.Phase,
    seed: int,
    entropies: int,
    payload_bytes: int,
    *,
    deadline: Deadline = NO_DEADLINE,
    chunk_subflows: int = CHUNK_SUBFLOWS,
) -> tuple[FloatArray, FloatArray, int]:
    """Per flow its time (s) on one plane, per directed link its load time ``T_e``, flows cut.

    ``phase`` holds one plane's share of every flow. A flow some of whose sub-flows have no
    route (a failed plane) is cut off: its time is infinite.
    """
    flow, k, size = sub_flows(phase, payload_bytes, entropies)
    src, dst = phase.src[flow], phase.dst[flow]
    # The sub-flow's own id keys its hash, so a chunk's routes do not depend on the chunking.
    ident = flow * entropies + k
    cap = fabric.capacity_gbps
    bits = size * BITS_PER_BYTE / BITS_PER_GBIT
    spans = _chunks(flow.size, chunk_subflows)

    def routed(a: int, b: int) -> Routes:
        return route(
            fabric,
            src[a:b],
            dst[a:b],
            Routing.ECMP,
            seed=seed,
            flow_id=ident[a:b],
            deadline=deadline,
        )

    load = np.zeros(fabric.links)
    kept = None
    connected = np.ones(flow.size, dtype=bool)
    for a, b in spans:
        routes = routed(a, b)
        load += routes.load(bits[a:b])
        connected[a:b] = routes.connected
        if len(spans) == 1:
            kept = routes
    link_s = np.divide(load, cap, out=np.zeros_like(load), where=cap > 0)
    sub_s = np.empty(flow.size)
    for a, b in spans:
        routes = kept if kept is not None else routed(a, b)
        by_flow = routes.explicit.tocsc()
        on_link = link_s[by_flow.indices]
        starts = by_flow.indptr[:-1]
        has = np.diff(by_flow.indptr) > 0
        part = np.zeros(b - a)
        if on_link.size:
            part[has] = np.maximum.reduceat(on_link, starts[has])
        sub_s[a:b] = part
    sub_s[~connected] = math.inf
    times = np.zeros(phase.flows)
    np.maximum.at(times, flow, sub_s)
    cut = int(np.isinf(times).sum())
    return times, link_s, cut
