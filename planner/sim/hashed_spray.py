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

Sub-flows are made and routed a run of whole flows at a time, at most ``CHUNK_SUBFLOWS`` of them
or fewer to fit ``verify.memory_budget_gib`` (``chunk_for_budget``), twice (loads first, then
each sub-flow's busiest link), so memory stays bounded at any size and any number of entropies:
a flow's sub-flows are never all built at once (flows x entropies of them were, issue 32).
"""

from __future__ import annotations

import math

import numpy as np

from planner.deadline import NO_DEADLINE, Deadline
from planner.sim import traffic as tr
from planner.sim.fabric import Fabric, FloatArray, IntArray
from planner.sim.routes import Routes
from planner.sim.routing import Routing, estimate_route_bytes, route
from planner.sim.stream_plan import BUDGET_SAFETY, BYTES_PER_GIB
from planner.units import BITS_PER_BYTE, BITS_PER_GBIT

#: Most sub-flows routed at once (about 100 MB of routes on a three-tier plane).
CHUNK_SUBFLOWS = 1 << 20
#: Fewest sub-flows routed at once, however tight the memory budget (a few MB).
MIN_CHUNK_SUBFLOWS = 4096
#: Bytes of a sub-flow's own arrays while its chunk is routed (flow, index, bytes, bits, its
#: end points, hash key and busiest-link time: eight 8-byte values and their temporaries).
SUBFLOW_BYTES = 128.0


def entropies_used(size_bytes: FloatArray, payload_bytes: int, entropies: int) -> IntArray:
    """Entropies each flow's packets use: min(packets, entropies), at least 1."""
    packets = np.maximum(np.ceil(np.asarray(size_bytes) / payload_bytes), 1).astype(np.int64)
    return np.minimum(packets, entropies)


def sub_flows(
    phase: tr.Phase, payload_bytes: int, entropies: int, first: int = 0, last: int | None = None
) -> tuple[IntArray, IntArray, FloatArray]:
    """The sub-flows of a phase's flows ``first`` to ``last``: flow, sub-flow index, bytes.

    All the phase's flows by default. Flow f of ``P`` packets over ``n`` entropies: sub-flow k carries ``P // n`` packets, one
    more when ``k < P % n``; its bytes are the flow's bytes in that proportion (the last, short
    packet spread over them, which moves no sub-flow by more than a packet's bytes).
    """
    size = np.asarray(phase.size_bytes[first:last], dtype=np.float64)
    used = entropies_used(size, payload_bytes, entropies)
    packets = np.maximum(np.ceil(size / payload_bytes), 1).astype(np.int64)
    local = np.repeat(np.arange(size.size), used)
    start = np.cumsum(used) - used
    k = np.arange(local.size) - start[local]
    count = packets[local] // used[local] + (k < packets[local] % used[local])
    return local + first, k, size[local] * count / packets[local]


def flow_spans(used: IntArray, chunk_subflows: int) -> list[tuple[int, int]]:
    """Runs of whole flows of at most ``chunk_subflows`` sub-flows each (a flow alone if more)."""
    ends = np.cumsum(used)
    spans: list[tuple[int, int]] = []
    a = 0
    while a < used.size:
        before = int(ends[a - 1]) if a else 0
        b = max(int(np.searchsorted(ends, before + chunk_subflows, side="right")), a + 1)
        spans.append((a, b))
        a = b
    return spans


def chunk_for_budget(fabric: Fabric, phase: tr.Phase, budget_gib: float | None) -> int:
    """Sub-flows routed at once so that a chunk fits ``verify.memory_budget_gib``.

    chunk = budget x ``BUDGET_SAFETY`` / (route bytes of one ECMP-routed flow of the phase +
    ``SUBFLOW_BYTES``), within [``MIN_CHUNK_SUBFLOWS``, ``CHUNK_SUBFLOWS``]; the phase's route
    bytes are ``planner.sim.routing.estimate_route_bytes``'s (a routed sample). The chunking
    changes no figure (loads add up exactly), only the memory and the time.
    """
    if budget_gib is None or phase.flows == 0:
        return CHUNK_SUBFLOWS
    per_flow = estimate_route_bytes(fabric, phase.src, phase.dst, Routing.ECMP) / phase.flows
    room = budget_gib * BYTES_PER_GIB * BUDGET_SAFETY
    chunk = int(room / (per_flow + SUBFLOW_BYTES))
    return min(max(chunk, MIN_CHUNK_SUBFLOWS), CHUNK_SUBFLOWS)


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
    route (a failed plane) is cut off: its time is infinite. The sub-flows are made, routed
    and dropped a run of whole flows at a time (:func:`flow_spans`), so that no more than
    about ``chunk_subflows`` of them are held at once, however many entropies there are.
    """
    used = entropies_used(phase.size_bytes, payload_bytes, entropies)
    spans = flow_spans(used, chunk_subflows)
    cap = fabric.capacity_gbps

    def routed(a: int, b: int) -> tuple[IntArray, FloatArray, Routes]:
        flow, k, size = sub_flows(phase, payload_bytes, entropies, a, b)
        routes = route(
            fabric,
            phase.src[flow],
            phase.dst[flow],
            Routing.ECMP,
            seed=seed,
            # The sub-flow's own id keys its hash, so its route does not depend on the chunking.
            flow_id=flow * entropies + k,
            deadline=deadline,
        )
        return flow, size * BITS_PER_BYTE / BITS_PER_GBIT, routes

    load = np.zeros(fabric.links)
    kept = None
    connected = np.ones(phase.flows, dtype=bool)
    for a, b in spans:
        flow, bits, routes = routed(a, b)
        load += routes.load(bits)
        connected[flow[~routes.connected]] = False
        if len(spans) == 1:
            kept = (flow, bits, routes)
    link_s = np.divide(load, cap, out=np.zeros_like(load), where=cap > 0)
    times = np.zeros(phase.flows)
    for a, b in spans:
        flow, _, routes = kept if kept is not None else routed(a, b)
        by_flow = routes.explicit.tocsc()
        on_link = link_s[by_flow.indices]
        starts = by_flow.indptr[:-1]
        has = np.diff(by_flow.indptr) > 0
        part = np.zeros(flow.size)
        if on_link.size:
            part[has] = np.maximum.reduceat(on_link, starts[has])
        np.maximum.at(times, flow, part)
    times[~connected] = math.inf
    cut = int(np.isinf(times).sum())
    return times, link_s, cut
