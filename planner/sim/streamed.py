"""A phase too large to re-share flow by flow: its exact time from link loads, routed in chunks.

The closed form. All flows of a phase start together. Under max-min fair sharing with
re-sharing at every completion (``planner.sim.flow``), let ``W_l`` be the sum of the fractions of
the flows on link ``l`` (their routes' weights) and ``load_l`` the gigabits routed over it.

* Lower bound: link ``l`` must carry ``load_l`` at no more than its capacity ``C_l``, so the
  phase lasts at least ``max_l load_l / C_l``.
* Upper bound, per flow: progressive filling freezes flow ``f`` when a link ``l`` it uses
  saturates, and every flow still rising on ``l`` then has ``f``'s rate while the frozen ones have
  less, so ``C_l = sum_g w_gl r_g <= r_f W_l``: ``r_f >= min over f's links of C_l / W_l``. Flows
  only leave, so ``W_l`` never grows and the bound holds at every instant: flow ``f`` finishes by
  ``gbit_f * max over its links of W_l / C_l``.

When every flow of the phase carries the same gigabits ``g`` (every traffic the simulator builds,
on healthy planes), ``load_l = g W_l`` and the largest per-flow bound equals the lower bound:
the phase time is exactly ``max_l load_l / C_l``. Otherwise (a failure moved some flows' share
to the other planes) the two bounds bracket it and the upper one is reported.

Loads add up flow by flow, so the flows can be routed a chunk at a time (each chunk's routes are
dropped before the next is built) with the memory of one chunk: ECMP hashes each flow by its
index in the whole phase (``flow_id``), so chunking changes no path. The flows' completion times
for percentiles are the per-flow upper bounds of a uniform sample of the flows, routed again on
their own paths.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from planner.deadline import NO_DEADLINE, Deadline
from planner.sim import spray_loads
from planner.sim.fabric import Fabric, FloatArray, IntArray
from planner.sim.flow import BITS_PER_BYTE, GBPS, WEIGHT_EPS
from planner.sim.route_walk import prepare_routes
from planner.sim.routes import Routes
from planner.sim.routing import Routing, route

#: Flows whose gigabits differ by no more than this (relative) count as equal: the phase time is
#: then exact.
EQUAL_SHARE_RTOL = 1e-12


@dataclass(frozen=True)
class StreamedPlane:
    """One plane's phase, routed in chunks."""

    time_s: float
    """Time of the connected flows: exact when ``exact``, else an upper bound."""
    exact: bool
    sample_times_s: FloatArray
    """Upper bound on the completion time of every sampled flow (inf when cut off)."""
    connected: np.ndarray
    """Per flow of the phase: has a route on this plane."""
    chunks: int
    """Chunks routed (0 when the loads were factored by tier, ``planner.sim.spray_loads``)."""


def _column_max(matrix: sp.csr_matrix, per_row: FloatArray) -> FloatArray:
    """Per column: the largest ``per_row`` value over the rows it has a non-negligible entry in."""
    csc = matrix.tocsc()
    out = np.zeros(csc.shape[1])
    keep = csc.data > WEIGHT_EPS
    cols = np.repeat(np.arange(csc.shape[1]), np.diff(csc.indptr))[keep]
    np.maximum.at(out, cols, per_row[csc.indices[keep]])
    return out


def path_max(routes: Routes, per_link: FloatArray) -> FloatArray:
    """Per flow: the largest ``per_link`` value over the links the flow has a share on."""
    out = _column_max(routes.explicit, per_link)
    if routes.patterns is not None:
        per_pattern = _column_max(routes.patterns, per_link)
        for column in (routes.flow_pattern, routes.flow_pattern_down):
            if column is not None:
                on = column >= 0
                out[on] = np.maximum(out[on], per_pattern[column[on]])
    return out


def chunks_of(
    fabric: Fabric, src: IntArray, dst: IntArray, flows: IntArray, chunk_flows: int, leaf_block: int
) -> Iterator[IntArray]:
    """The given flows in chunks of at most ``chunk_flows``, grouped by leaf tiles.

    A spraying route holds one climb per source leaf and one descent per destination leaf that
    its flows use, whatever their number; grouping the flows by (source leaf // ``leaf_block``,
    destination leaf // ``leaf_block``) bounds a chunk's patterns to ``2 * leaf_block`` leaves.
    ``leaf_block`` 0 keeps the flows in their order (ECMP routes grow with the flows only).
    """
    chunk_flows = max(1, chunk_flows)
    if leaf_block > 0 and flows.size:
        first = fabric.tier_offsets[1]
        tile_src = (fabric.leaf_of(src[flows]) - first) // leaf_block
        tile_dst = (fabric.leaf_of(dst[flows]) - first) // leaf_block
        key = tile_src * (int(tile_dst.max()) + 1) + tile_dst
        order = np.argsort(key, kind="stable")
        flows, key = flows[order], key[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        ends = np.r_[starts[1:], flows.size]
    else:
        starts, ends = np.zeros(1, dtype=np.int64), np.full(1, flows.size)
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        for c in range(lo, hi, chunk_flows):
            yield np.sort(flows[c : min(hi, c + chunk_flows)])


def streamed_plane(
    fabric: Fabric,
    src: IntArray,
    dst: IntArray,
    gbit: FloatArray,
    routing: Routing,
    seed: int,
    *,
    chunk_flows: int,
    sample: IntArray,
    leaf_block: int = 0,
    deadline: Deadline = NO_DEADLINE,
) -> StreamedPlane:
    """Route one plane's flows in chunks (``chunks_of``); the phase time and the sample's bounds.

    ``gbit`` is each flow's share on this plane (zero for a flow that is not on it);
    ``sample`` indexes the flows whose completion-time bounds are returned.
    """
    m = int(src.size)
    live_gbit = np.where(gbit > 0, gbit, 0.0)
    factored = (
        spray_loads.link_loads(
            fabric, src, dst, [live_gbit, (gbit > 0).astype(np.float64)], deadline
        )
        if routing is Routing.SPRAY
        else None
    )
    chunks = 0
    if factored is not None:
        connected, (load, weight) = factored
    else:
        load, weight, connected, chunks = _routed_loads(
            fabric, src, dst, gbit, routing, seed, chunk_flows, leaf_block, deadline
        )
    cap = fabric.capacity_gbps
    used = load > 0
    lower = float(np.max(load[used] / cap[used])) if used.any() else 0.0
    share = np.divide(weight, cap, out=np.full_like(cap, math.inf), where=cap > 0)
    share[weight <= WEIGHT_EPS] = 0.0
    moving = gbit[connected & (gbit > 0)]
    equal = moving.size == 0 or bool(np.ptp(moving) <= EQUAL_SHARE_RTOL * moving.max())
    # Per-flow bounds: the sample's, and (flows of unequal size) every flow's for the phase.
    bound = np.zeros(sample.size)
    upper = lower
    todo = sample if equal else np.arange(m)
    position = np.full(m, -1, dtype=np.int64)
    position[sample] = np.arange(sample.size)
    live = np.where(connected, gbit, 0.0)
    largest = (
        spray_loads.path_max(fabric, src[todo], dst[todo], share, deadline)
        if factored is not None
        else None
    )
    if largest is not None:
        flow_bound = np.where(largest[0], gbit[todo] * largest[1], math.inf)
        mine = position[todo] >= 0
        bound[position[todo[mine]]] = flow_bound[mine]
        if not equal:
            upper = max(upper, float(np.max(live[todo] * largest[1], initial=0.0)))
        return StreamedPlane(upper, equal, bound, connected, chunks)
    for ids in chunks_of(fabric, src, dst, todo, chunk_flows, leaf_block):
        routes = route(
            fabric, src[ids], dst[ids], routing, seed=seed, flow_id=ids, deadline=deadline
        )
        flow_bound = gbit[ids] * path_max(routes, share)
        flow_bound[~routes.connected] = math.inf
        mine = position[ids] >= 0
        bound[position[ids[mine]]] = flow_bound[mine]
        if not equal:
            upper = max(upper, float(np.max(live[ids] * path_max(routes, share), initial=0.0)))
        del routes
    return StreamedPlane(upper, equal, bound, connected, chunks)


def _routed_loads(
    fabric: Fabric,
    src: IntArray,
    dst: IntArray,
    gbit: FloatArray,
    routing: Routing,
    seed: int,
    chunk_flows: int,
    leaf_block: int,
    deadline: Deadline,
) -> tuple[FloatArray, FloatArray, np.ndarray, int]:
    """Loads and weights of every link, routing the flows a chunk at a time; and the chunks."""
    m = int(src.size)
    load = np.zeros(fabric.links)
    weight = np.zeros(fabric.links)
    connected = np.ones(m, dtype=bool)
    chunks = 0
    if routing is Routing.ECMP:  # one distance table for every chunk (spraying tiles are small)
        prepare_routes(fabric, dst, deadline)
    for ids in chunks_of(fabric, src, dst, np.arange(m), chunk_flows, leaf_block):
        routes = route(
            fabric, src[ids], dst[ids], routing, seed=seed, flow_id=ids, deadline=deadline
        )
        on = routes.connected & (gbit[ids] > 0)
        load += routes.load(np.where(on, gbit[ids], 0.0))
        weight += routes.weight(on)
        connected[ids] = routes.connected
        chunks += 1
        del routes
    return load, weight, connected, chunks


def gbit_of(size_bytes: FloatArray) -> FloatArray:
    """Bytes to gigabits."""
    return np.asarray(size_bytes, dtype=np.float64) * BITS_PER_BYTE / GBPS


@dataclass(frozen=True)
class StreamedPhase:
    """A phase over all planes, each plane routed in chunks."""

    time_s: float
    exact: bool
    sample_times_s: FloatArray
    disconnected: int
    chunks: int


def streamed_phase(
    healthy: Fabric,
    src: IntArray,
    dst: IntArray,
    size_bytes: FloatArray,
    routing: Routing,
    seed: int,
    *,
    chunk_flows: int,
    sample: IntArray,
    leaf_block: int = 0,
    failed: Fabric | None = None,
    planes_lost: int = 0,
    deadline: Deadline = NO_DEADLINE,
) -> StreamedPhase:
    """A phase on the healthy planes and, if given, a failed plane 0 (as ``run_phase`` splits it).

    Each flow's bytes split evenly over the planes up; a flow the failed plane cuts off moves
    its share to the other planes, or is cut off when there are none.
    """
    planes_up = healthy.planes - planes_lost
    m = int(src.size)
    if planes_up <= 0:
        return StreamedPhase(math.inf, True, np.full(sample.size, math.inf), m, 0)
    gbit = gbit_of(size_bytes) * np.ones(m)
    share = gbit / planes_up
    healthy_share, cut = share, 0
    failed_time, failed_sample = 0.0, np.zeros(sample.size)
    exact, chunks = True, 0
    if failed is not None:
        f = streamed_plane(
            failed,
            src,
            dst,
            share,
            routing,
            seed,
            chunk_flows=chunk_flows,
            sample=sample,
            leaf_block=leaf_block,
            deadline=deadline,
        )
        lost = ~f.connected
        failed_time, exact, chunks = f.time_s, f.exact, f.chunks
        failed_sample = np.where(lost[sample], 0.0, f.sample_times_s)
        if lost.any():
            if planes_up >= 2:
                healthy_share = np.where(lost, gbit / (planes_up - 1), share)
            else:
                cut = int(lost.sum())
                failed_time = math.inf
                failed_sample[lost[sample]] = math.inf
    h = streamed_plane(
        healthy,
        src,
        dst,
        healthy_share,
        routing,
        seed,
        chunk_flows=chunk_flows,
        sample=sample,
        leaf_block=leaf_block,
        deadline=deadline,
    )
    cut_h = int((~h.connected).sum())
    time_s = max(h.time_s, failed_time, math.inf if cut_h else 0.0)
    return StreamedPhase(
        time_s,
        exact and h.exact,
        np.maximum(h.sample_times_s, failed_sample),
        cut + cut_h,
        chunks + h.chunks,
    )
