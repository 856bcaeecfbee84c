"""Verify a design by simulation: traffic x routing x failures -> tables and a verdict.

Planes are identical, independent fabrics and a GPU's traffic splits evenly over the planes that
are up, so one plane is simulated with 1/p of every flow. A failure is placed in plane 0: that
plane is simulated as failed and the others as healthy, and a flow ends when its slowest part
ends. Flows that a failure cuts off in plane 0 send their share over the other planes.
A collective's time is the sum of its phases' times (each repeated as often as it runs); a
phase ends with its slowest flow. Bandwidths follow the nccl-tests conventions: algbw = size /
time, busbw = algbw x the collective's factor; both are reported in Gb/s.

A design's scale-up domain (NVLink) runs beside the planes (``planner.sim.scale_up``): the flows
inside a domain, and the first hop of PXN flows, ride the domain at the GPU's scale-up rate
(whole, not split into planes) and never touch a NIC, leaf or spine; the rest run on the planes
as above. A flow ends when its slower part ends. ``run_phase`` and ``run_traffic`` take the
domain as ``scale_up`` (None: every flow on the planes, the behaviour before it).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np
import polars as pl

from planner.deadline import NO_DEADLINE, Deadline, DeadlineExpired, suggest_time_limit_s
from planner.design import Design
from planner.schema.verify import TrafficSpec, Verify
from planner.sim import traffic as tr
from planner.sim.bound import max_concurrent_flow
from planner.sim.fabric import Fabric, FloatArray, IntArray, build_fabric
from planner.sim.flow import BITS_PER_BYTE, GBPS, Completion, completion_times
from planner.sim.packet import Fidelity, fidelity_of, queueing_s, two_way_traffic
from planner.sim.routing import (
    BYTES_PER_FLOW,
    BYTES_PER_ROUTE_ENTRY,
    Routing,
    estimate_route_bytes,
    route,
)
from planner.sim.scale_up import (
    ScaleUp,
    Split,
    joined_times_s,
    scale_up_of,
    split_ideal_s,
)
from planner.sim.scale_up import ideal_time_s as scale_up_ideal_time_s
from planner.sim.scenarios import Scenario, draw_failures, named_scenario, single_switch_scenarios
from planner.sim.streamed import streamed_phase
from planner.sim.traffic_kinds import build_traffic

#: The verdict of a simulation the time limit cut short (and whose finished steps all pass).
INCOMPLETE = "incomplete"
#: ``run_traffic`` with a simulation's settings bound (fabric, traffic, routing, seed, scenario
#: and ``with_utilisation`` left to the call).
RunTraffic = Callable[..., tuple[float, FloatArray, int, FloatArray | None, bool]]
#: Called after every simulated (traffic, routing, scenario) with a short label.
SimProgress = Callable[[str], None]
#: Utilisation percentiles reported per link class.
PERCENTILES = (50, 99)


@dataclass(frozen=True)
class PhaseRun:
    """One phase on one routing and scenario: its time and its flows' completion times."""

    time_s: float
    flow_times_s: FloatArray
    disconnected: int
    utilisation: FloatArray | None = None
    """Healthy plane: load / capacity of every directed link at the phase's start (with a
    scale-up domain, the domain's directed links follow the plane's)."""
    exact: bool = True
    """False when the phase time is an upper bound (a streamed phase whose flows differ in size)
    or re-sharing stopped at its safety net."""
    factored: bool = False
    """A streamed spraying phase whose loads were summed tier by tier (no chunk routed)."""
    queue_s: FloatArray | None = None
    """Per flow, the mean queueing its last packet meets on the healthy plane
    (``planner.sim.packet.queueing_s``), when packet fidelity asked for it."""


@dataclass(frozen=True)
class SimResult:
    """The simulation's tables and verdict."""

    collectives: pl.DataFrame
    links: pl.DataFrame
    failures: pl.DataFrame
    verdict: str
    reasons: tuple[str, ...]
    fractions: dict[str, float | None] = field(default_factory=dict)
    wall_s: float = 0.0
    cut: tuple[str, ...] = ()
    """Steps not run because the time limit had passed (empty: the simulation is complete)."""
    time_limit_hint_s: float | None = None
    """With steps cut: a ``--time-limit`` (seconds, for the whole command) under which they
    would have run too, estimated from the steps that did (``suggest_time_limit_s``)."""
    over_memory: tuple[str, ...] = ()
    """Steps not run because their routing tables would pass ``verify.memory_budget_gib``
    (``OverMemory``), each with the reason."""
    notes: tuple[str, ...] = ()
    """What the figures rest on beyond the model: phases streamed under the memory budget or
    the re-sharing cap, whose flow percentiles come from a sample."""
    link_histogram: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=LINK_HISTOGRAM_SCHEMA)
    )
    """Directed links per utilisation bin, per pattern, routing, tier and direction; each
    group's links add up to the ``links`` of its ``links`` row."""


#: Flows of a streamed phase whose completion-time bounds give its percentiles.
STREAM_SAMPLE_FLOWS = 10_000
#: Confidence stated for a sample's percentiles (two-sided).
CONFIDENCE = 0.95
#: The flow completion percentiles the tables report (p50, p99).
FCT_PERCENTILES = (50.0, 99.0)


def percentile_band(
    percentile: float, sample: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Which population percentiles a sample's percentile lies between, with this confidence.

    The sample's p-quantile is its k-th smallest of n, k = ceil(n p). It falls below the
    population's q-quantile when at least k of the n draws do, so the q at which that happens
    with probability a is the a-quantile of Beta(k, n - k + 1): exact and distribution-free for
    draws with replacement (a sample of 10,000 from a million flows is that to 1 %).
    """
    n = max(sample, 1)
    k = min(max(math.ceil(n * percentile / 100.0), 1), n)
    tail = (1.0 - confidence) / 2.0
    from scipy import stats  # about 0.3-1 s to import; only a sampled phase needs it

    lo, hi = stats.beta.ppf([tail, 1.0 - tail], k, n - k + 1)
    return 100.0 * float(lo), 100.0 * float(hi)


#: Fewest flows a chunk of a streamed phase routes, however tight the memory budget.
MIN_CHUNK_FLOWS = 1_000
#: Share of the memory left under the budget that one chunk's routes may take.
BUDGET_SAFETY = 0.8
BYTES_PER_GIB = 2**30
#: Bytes per entry of a routing strategy's distance table (switches x destination leaves): the
#: int16 distance and the temporaries that build it (a float32 reach, a float64 search row).
TABLE_BYTES_PER_ENTRY = 8.0


class OverMemory(Exception):
    """A step whose routing tables alone would pass ``verify.memory_budget_gib``: not run.

    Streaming splits a phase's flows, not the distance table every chunk routes with (one
    column per destination leaf), so a table over the budget cannot be streamed.
    """


def check_table_memory(fabric: Fabric, phase: tr.Phase, budget_gib: float | None) -> None:
    """Raise ``OverMemory`` when the phase's distance table would not fit the memory budget.

    need = switches x destination leaves x TABLE_BYTES_PER_ENTRY, against budget x
    BUDGET_SAFETY (the room a stream plans with).
    """
    if budget_gib is None or phase.flows == 0:
        return
    leaves = int(np.unique(fabric.leaf_of(phase.dst)).size)
    need = float(fabric.switches) * leaves * TABLE_BYTES_PER_ENTRY
    if need > budget_gib * BYTES_PER_GIB * BUDGET_SAFETY:
        raise OverMemory(
            f"its routing table ({fabric.switches:,} switches x {leaves:,} destination leaves, "
            f"about {need / BYTES_PER_GIB:,.1f} GiB) does not fit verify.memory_budget_gib = "
            f"{budget_gib:g}"
        )


#: Healthy-plane completions already computed: (phase id, routing, seed, planes up) ->
#: (completion, flows the healthy plane cuts off). Scenarios whose failed plane cuts no flow off
#: reuse them instead of routing the healthy planes again.
HealthyCache = dict[tuple[int, str, int, int], tuple[Completion, int]]


@dataclass(frozen=True)
class Stream:
    """How a phase too large to re-share flow by flow is simulated (``planner.sim.streamed``).

    Its flows are routed ``chunk_flows`` at a time for their link loads, which give the phase's
    time exactly; ``flows`` is the uniform sample whose per-flow upper bounds stand for the
    flows' completion times (the percentiles).
    """

    flows: IntArray
    chunk_flows: int
    leaf_block: int
    """Spraying chunks group flows by tiles of this many source and destination leaves (0: no
    tiles)."""
    why: str
    """What made the phase streamed: the memory budget or the re-sharing cap."""

    def statement(self, label: str, of_flows: int, chunks: int, exact: bool) -> str:
        """What was streamed and sampled, and what the figures then mean.

        ``chunks`` 0: the loads were factored by tier (``planner.sim.spray_loads``).
        """
        time = (
            "its time is exact (the most loaded link's gigabits over its capacity)"
            if exact
            else "its time is an upper bound (flows of unequal size)"
        )
        how = (
            f"routed in {chunks:,} chunk(s) of at most {self.chunk_flows:,}"
            if chunks
            else "sprayed with their link loads summed tier by tier (each climb and descent "
            "once for all the flows that share it)"
        )
        bands = ", ".join(
            f"p{p:g} between the phase's p{lo:.1f} and p{hi:.1f}"
            for p in FCT_PERCENTILES
            for lo, hi in [percentile_band(p, self.flows.size)]
        )
        return (
            f"{label}: {of_flows:,} flows {how} ({self.why}); {time}; its flow completion "
            f"percentiles are upper bounds on {self.flows.size:,} flows sampled uniformly "
            f"(with 95 % confidence the sample's {bands})"
        )


def _resident_bytes() -> float:
    """Resident memory of this process now (Linux /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as f:
            return float(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0.0


def plan_stream(
    fabric: Fabric,
    phase: tr.Phase,
    routing: Routing,
    seed: int,
    budget_gib: float | None,
    max_flows: int | None = None,
) -> Stream | None:
    """A stream when re-sharing the whole phase would pass the memory budget or the flow cap.

    Over the budget, ECMP chunks take the share of the flows that fits; spraying chunks are
    leaf tiles (``planner.sim.streamed.chunks_of``) whose climbs and descents fit in half the
    room, the flows' own entries in the other half.
    """
    m = phase.flows
    if m <= MIN_CHUNK_FLOWS:
        return None
    chunk, block, why = m, 0, ""
    if max_flows is not None and m > max_flows:
        chunk, why = max_flows, f"above verify.resharing_max_flows = {max_flows:,}"
    if budget_gib is not None:
        need = estimate_route_bytes(fabric, phase.src, phase.dst, routing, seed=seed)
        room = max(budget_gib * BYTES_PER_GIB - _resident_bytes(), 0.0) * BUDGET_SAFETY
        if need > room:
            why = (
                f"routes estimated at {need / BYTES_PER_GIB:.1f} GiB, over "
                f"verify.memory_budget_gib = {budget_gib:g}"
            )
            per_flow = BYTES_PER_FLOW + 2 * BYTES_PER_ROUTE_ENTRY
            if routing is Routing.SPRAY:
                leaves = fabric.tier_offsets[2] - fabric.tier_offsets[1]
                per_leaf = max(need - m * per_flow, 0.0) / (2 * leaves)
                block = max(1, int(room / 2 / (2 * per_leaf))) if per_leaf > 0 else leaves
                chunk = min(chunk, max(MIN_CHUNK_FLOWS, int(room / 2 / per_flow)))
            else:
                chunk = min(chunk, max(MIN_CHUNK_FLOWS, int(m * room / need)))
    if chunk >= m and block == 0:
        return None
    rng = np.random.default_rng(seed)
    flows = np.sort(rng.choice(m, size=min(m, STREAM_SAMPLE_FLOWS), replace=False))
    return Stream(flows, chunk, block, why)


def run_phase(
    healthy: Fabric,
    phase: tr.Phase,
    routing: Routing,
    seed: int,
    *,
    failed: Fabric | None = None,
    planes_lost: int = 0,
    with_utilisation: bool = False,
    cache: HealthyCache | None = None,
    deadline: Deadline = NO_DEADLINE,
    queue_packet_bytes: int | None = None,
    scale_up: ScaleUp | None = None,
) -> PhaseRun:
    """Simulate one phase over the planes: a healthy plane and, if given, a failed plane 0.

    With a ``scale_up`` domain, the phase is split (``planner.sim.scale_up.split_phase``): its
    scale-out flows run here as below, its scale-up flows on the domain (``_scale_up_run``), and
    every flow ends with its slower part (``_joined``); the utilisation then lists the plane's
    directed links followed by the domain's (``ScaleUp.fabric``).

    With ``queue_packet_bytes`` (packet fidelity), every flow also gets the mean queueing delay
    its last packet meets on the healthy plane at the phase's starting rates
    (``planner.sim.packet.queueing_s``; a sender's own NIC link schedules its flows, so it adds
    none).

    With a ``cache``, the healthy planes'
    completion is computed once per phase and routing and reused while no flow moves off a
    failed plane (the healthy planes then carry exactly what they carry without the failure).
    """
    if scale_up is not None:
        split = scale_up.split(phase)
        out = (
            run_phase(
                healthy,
                split.scale_out,
                routing,
                seed,
                failed=failed,
                planes_lost=planes_lost,
                with_utilisation=with_utilisation,
                cache=cache,
                deadline=deadline,
                queue_packet_bytes=queue_packet_bytes,
            )
            if split.scale_out.flows
            else _empty_run(healthy, with_utilisation)
        )
        up, up_stream = _scale_up_run(scale_up, split.scale_up, deadline=deadline)
        return _joined(split, out, None, up, up_stream, with_utilisation)
    planes_up = healthy.planes - planes_lost
    src, dst, size = phase.src, phase.dst, phase.size_bytes
    flows = int(src.size)
    if planes_up <= 0:
        return PhaseRun(math.inf, np.full(flows, math.inf), phase.flows)
    share = size / planes_up
    healthy_share = share
    failed_times = None
    cut = 0
    exact = True
    moved = False
    if failed is not None:
        routes_f = route(failed, src, dst, routing, seed=seed, deadline=deadline)
        lost = ~routes_f.connected
        done_f = completion_times(
            routes_f, failed.capacity_gbps, np.where(lost, 0.0, share), deadline=deadline
        )
        del routes_f
        failed_times, exact = done_f.time_s, exact and done_f.exact
        failed_times[lost] = 0.0
        if lost.any():
            if planes_up >= 2:  # the cut-off share moves to the other planes
                healthy_share = np.where(lost, size / (planes_up - 1), share)
                moved = True
            else:
                failed_times[lost] = math.inf
                cut = int(lost.sum())
    key = (id(phase), routing.value, seed, planes_up)
    fresh = cache is None or moved or with_utilisation or queue_packet_bytes is not None
    cached = None if fresh or cache is None else cache.get(key)
    utilisation = None
    queue = None
    if cached is None:
        routes_h = route(healthy, src, dst, routing, seed=seed, deadline=deadline)
        cap = healthy.capacity_gbps
        done = completion_times(routes_h, cap, healthy_share, deadline=deadline)
        cut_h = int((~routes_h.connected).sum())
        if queue_packet_bytes is not None:
            rate = np.where(routes_h.connected, done.initial_rate_gbps, 0.0)
            wait = queueing_s(
                routes_h.load(rate), routes_h.square_load(rate * rate), cap, queue_packet_bytes
            )
            wait[0 : 2 * healthy.gpus : 2] = 0.0  # a sender's NIC link: its own scheduler
            queue = routes_h.path_sum(wait)
        if with_utilisation:
            utilisation = np.divide(
                routes_h.load(done.initial_rate_gbps), cap, out=np.zeros_like(cap), where=cap > 0
            )
        if cache is not None and not moved:
            cache[key] = (done, cut_h)
        del routes_h
    else:
        done, cut_h = cached
    times = done.time_s if failed_times is None else np.maximum(done.time_s, failed_times)
    cut += cut_h
    phase_time = float(times.max()) if times.size else 0.0
    return PhaseRun(phase_time, times, cut, utilisation, exact and done.exact, queue_s=queue)


def _empty_run(fabric: Fabric, with_utilisation: bool) -> PhaseRun:
    """A phase with no flows on ``fabric``: it takes no time and leaves every link idle."""
    return PhaseRun(0.0, np.zeros(0), 0, np.zeros(fabric.links) if with_utilisation else None)


def _scale_up_run(
    scale_up: ScaleUp,
    phase: tr.Phase,
    *,
    memory_budget_gib: float | None = None,
    max_flows: int | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[PhaseRun, Stream | None]:
    """The scale-up flows of a phase on the domain (``ScaleUp.fabric``), and its stream if any.

    The same max-min fair re-sharing as the planes (``run_phase``, streamed like a plane's phase
    when it is as large: ``plan_stream``) on a fabric of one plane, so each flow carries its
    whole size at the scale-up rate: a flow's only links are its source's egress and its
    destination's ingress, so its route has no choice (ECMP, seed 0, no failure). Run once per
    sub-phase (``ScaleUp.runs``) with its utilisation; fluid (packet fidelity models the
    scale-out transport only).
    """
    kept = scale_up.runs.get(id(phase))
    if kept is not None and kept[0] is phase:
        return kept[1], kept[2]
    su = scale_up.fabric
    stream = plan_stream(su, phase, Routing.ECMP, 0, memory_budget_gib, max_flows)
    if not phase.flows:
        run = _empty_run(su, True)
    elif stream is None:
        run = run_phase(su, phase, Routing.ECMP, 0, with_utilisation=True, deadline=deadline)
    else:
        run = _streamed_run(su, phase, Routing.ECMP, 0, stream, None, 0, deadline)
    scale_up.runs[id(phase)] = (phase, run, stream)
    return run, stream


def _joined(
    split: Split,
    out: PhaseRun,
    out_stream: Stream | None,
    up: PhaseRun,
    up_stream: Stream | None,
    with_utilisation: bool,
) -> PhaseRun:
    """A split phase's run from its two parts: it ends with the later, each flow with its later part.

    Flow times are ``planner.sim.scale_up.joined_times_s`` (all the phase's flows when neither
    part was streamed, else those whose parts were all timed); flows cut off add up over the
    parts; the utilisation is the plane's directed links followed by the domain's.
    """
    times = joined_times_s(
        split,
        np.arange(split.scale_out.flows) if out_stream is None else out_stream.flows,
        out.flow_times_s,
        np.arange(split.scale_up.flows) if up_stream is None else up_stream.flows,
        up.flow_times_s,
    )
    util = None
    if with_utilisation and out.utilisation is not None and up.utilisation is not None:
        util = np.concatenate([out.utilisation, up.utilisation])
    return PhaseRun(
        max(out.time_s, up.time_s),
        times,
        out.disconnected + up.disconnected,
        util,
        out.exact and up.exact,
        factored=out.factored,
    )


def run_traffic(
    fabric: Fabric,
    traffic: tr.Traffic,
    routing: Routing,
    seed: int,
    scenario: Scenario | None = None,
    *,
    with_utilisation: bool = False,
    memory_budget_gib: float | None = None,
    cache: HealthyCache | None = None,
    notes: list[str] | None = None,
    max_flows: int | None = None,
    deadline: Deadline = NO_DEADLINE,
    fidelity: Fidelity | None = None,
    scale_up: ScaleUp | None = None,
) -> tuple[float, FloatArray, int, FloatArray | None, bool]:
    """Total time, flows' completion times, flows cut off, first utilisation, and exactness.

    A phase whose routes are estimated above ``memory_budget_gib`` (GiB, None = no budget), or
    with more than ``max_flows`` flows, is streamed (``plan_stream``, ``planner.sim.streamed``):
    routed in chunks for its exact time, with a sample's per-flow upper bounds as its flows'
    times and no utilisation; what was streamed, and what the figures then mean, is appended to
    ``notes``. With a ``fidelity``, every flow's fluid completion time becomes a packet-level one
    (``planner.sim.packet``) and a phase ends with its slowest.

    With a ``scale_up`` domain, every phase is split (``planner.sim.scale_up``): its scale-out
    part runs on the planes as above (streamed, failed, with fidelity), its scale-up part on the
    domain (``_scale_up_run``), and a flow ends with its later part; the utilisation is the
    plane's directed links followed by the domain's (``ScaleUp.fabric.links`` more entries).
    """
    failed = None
    if scenario is not None and scenario.failed_links.size:
        failed = fabric.with_failed_links(scenario.failed_links)
    lost = scenario.planes_lost if scenario else 0
    total, times, cut, util, exact = 0.0, [], 0, None, True
    for i, whole in enumerate(traffic.phases):
        split = None if scale_up is None else scale_up.split(whole)
        phase = whole if split is None else split.scale_out
        check_table_memory(fabric, phase, memory_budget_gib)
        stream = plan_stream(fabric, phase, routing, seed, memory_budget_gib, max_flows)
        if split is not None and not phase.flows:
            run = _empty_run(fabric, with_utilisation and i == 0)
        elif stream is None:
            run = run_phase(
                fabric,
                phase,
                routing,
                seed,
                failed=failed,
                planes_lost=lost,
                with_utilisation=with_utilisation and i == 0,
                cache=cache,
                deadline=deadline,
                queue_packet_bytes=None if fidelity is None else fidelity.transport.packet_bytes,
            )
        else:
            run = _streamed_run(fabric, phase, routing, seed, stream, failed, lost, deadline)
            if notes is not None:
                label = f"{traffic.name} phase {i + 1}, {routing.value}" + (
                    f", {scenario.name}" if scenario is not None else ""
                )
                chunks = 0 if run.factored else -(-phase.flows // stream.chunk_flows)
                notes.append(stream.statement(label, phase.flows, chunks, run.exact))
        run = _with_fidelity(fabric, phase, run, stream, fidelity)
        if split is not None and scale_up is not None:
            up, up_stream = _scale_up_run(
                scale_up,
                split.scale_up,
                memory_budget_gib=memory_budget_gib,
                max_flows=max_flows,
                deadline=deadline,
            )
            if up_stream is not None and notes is not None:
                notes.append(
                    up_stream.statement(
                        f"{traffic.name} phase {i + 1}, scale-up domain",
                        split.scale_up.flows,
                        -(-split.scale_up.flows // up_stream.chunk_flows),
                        up.exact,
                    )
                )
            run = _joined(split, run, stream, up, up_stream, with_utilisation and i == 0)
        total += run.time_s * whole.repeat
        times.append(run.flow_times_s)
        cut = max(cut, run.disconnected)
        util = run.utilisation if i == 0 else util
        exact = exact and run.exact
    return total, np.concatenate(times) if times else np.zeros(0), cut, util, exact


def _streamed_run(
    fabric: Fabric,
    phase: tr.Phase,
    routing: Routing,
    seed: int,
    stream: Stream,
    failed: Fabric | None,
    planes_lost: int,
    deadline: Deadline = NO_DEADLINE,
) -> PhaseRun:
    """A phase streamed in chunks: exact (or bounded) time, the sample's bounds as flow times."""
    s = streamed_phase(
        fabric,
        phase.src,
        phase.dst,
        phase.size_bytes,
        routing,
        seed,
        chunk_flows=stream.chunk_flows,
        sample=stream.flows,
        leaf_block=stream.leaf_block,
        failed=failed,
        planes_lost=planes_lost,
        deadline=deadline,
    )
    return PhaseRun(
        s.time_s, s.sample_times_s, s.disconnected, None, s.exact, factored=s.chunks == 0
    )


def _with_fidelity(
    fabric: Fabric, phase: tr.Phase, run: PhaseRun, stream: Stream | None, fidelity: Fidelity | None
) -> PhaseRun:
    """The phase run with packet-level completion times (unchanged without a fidelity).

    A phase simulated flow by flow adds each flow's queueing (``PhaseRun.queue_s``). A streamed
    phase's flow times are its sample's; its time is the exact fluid time at the sample's lowest
    goodput plus the sample's longest path latency (an upper bound when that path is in the
    sample, which 10,000 uniform draws make near certain), without queueing (its flows' rates
    are not kept).
    """
    if fidelity is None:
        return run
    src, dst = phase.src, phase.dst
    if stream is not None:
        src, dst = src[stream.flows], dst[stream.flows]
    times = fidelity.times_s(fabric, src, dst, run.flow_times_s, phase.src, phase.dst)
    if run.queue_s is not None:
        times = times + run.queue_s
    if stream is None:
        return replace(run, time_s=float(times.max()) if times.size else 0.0, flow_times_s=times)
    whole = fidelity.times_s(fabric, src, dst, np.full(src.size, run.time_s), phase.src, phase.dst)
    return replace(run, time_s=float(whole.max()) if whole.size else 0.0, flow_times_s=times)


def bound_time_s(
    fabric: Fabric,
    traffic: tr.Traffic,
    max_variables: int,
    scale_up: ScaleUp | None = None,
    nic_goodput_fraction: float = 1.0,
) -> float | None:
    """Least time any routing needs: the optimal-routing bound per phase, summed over phases.

    ``planner.sim.bound.max_concurrent_flow`` (method "auto"): the scaled bound where the
    fabric's symmetry proves it exact, else the reference LP up to ``max_variables``, else the
    scaled bound, which is a valid lower bound on the time (possibly below the true optimum).
    None only when a reference LP fails.

    With a ``scale_up`` domain the bound covers the scale-out flows of each phase (PXN flows
    from their proxies) and the phase's figure is ``max(B_out / goodput, T_up)``: B_out that
    bound, T_up the scale-up part's own time, the busiest GPU's scale-up bytes (out or in) at the
    scale-up rate (a flow's only route in the domain is its two GPU links, so no routing does
    better). ``nic_goodput_fraction`` (packet fidelity): the share of line rate that is payload.
    """
    total = 0.0
    nic_gbps = fabric.nic_speed_gbps * fabric.planes
    for whole in traffic.phases:
        phase, up_s = whole, 0.0
        if scale_up is not None:
            split = scale_up.split(whole)
            phase = split.scale_out
            up_s = split_ideal_s(split, fabric.gpus, nic_gbps, scale_up.gbps_per_gpu)[1]
        out_s = 0.0
        if phase.flows or scale_up is None:
            demand = phase.size_bytes / fabric.planes * BITS_PER_BYTE / GBPS
            b = max_concurrent_flow(
                fabric, phase.src, phase.dst, demand, max_variables=max_variables
            )
            if b.time_s is None:
                return None
            out_s = b.time_s
        total += max(out_s / nic_goodput_fraction, up_s) * whole.repeat
    return total


def _over_seeds(
    fabric: Fabric, t: tr.Traffic, routing: Routing, verify: Verify, run: RunTraffic
) -> tuple[float, FloatArray, int, FloatArray | None, bool, tuple[int, float, float]]:
    """A healthy run under every ECMP hash seed asked for: the median seed's run, and the spread.

    Spraying does not hash, so it runs once. The spread is (seeds, least time, greatest time);
    the median of an even count is the lower middle run (a run that happened, not an average).
    """
    seeds = verify.ecmp_seeds if routing is Routing.ECMP else 1
    runs = [run(fabric, t, routing, verify.seed + k, with_utilisation=True) for k in range(seeds)]
    order = sorted(range(seeds), key=lambda k: runs[k][0])
    total, times, cut, util, exact = runs[order[(seeds - 1) // 2]]
    exact = exact and all(r[4] for r in runs)
    return total, times, cut, util, exact, (seeds, runs[order[0]][0], runs[order[-1]][0])


def _collective_row(
    spec: TrafficSpec,
    t: tr.Traffic,
    routing: Routing,
    scenario: str,
    time_s: float,
    times: FloatArray,
    cut: int,
    ideal_s: float,
    bound_s: float | None,
    exact: bool = True,
    spread: tuple[int, float, float] | None = None,
) -> dict[str, Any]:
    seeds, least, greatest = spread or (1, time_s, time_s)
    ok = math.isfinite(time_s) and time_s > 0
    finite = times[np.isfinite(times)]
    return {
        "pattern": spec.label,
        "collective": t.name,
        "algorithm": t.algorithm,
        "routing": routing.value,
        "scenario": scenario,
        "group_size": t.group_size,
        "groups": t.groups,
        "size_bytes": t.size_bytes,
        "flows": t.flows,
        "time_s": time_s,
        "algbw_gbps": t.algbw_gbps(time_s) if ok else 0.0,
        "busbw_gbps": t.busbw_gbps(time_s) if ok else 0.0,
        "ideal_time_s": ideal_s,
        "fraction_of_ideal": ideal_s / time_s if ok else 0.0,
        "bound_time_s": bound_s,
        "fraction_of_bound": (bound_s / time_s) if (ok and bound_s is not None) else None,
        "p50_fct_s": float(np.percentile(finite, FCT_PERCENTILES[0])) if finite.size else None,
        "p99_fct_s": float(np.percentile(finite, FCT_PERCENTILES[1])) if finite.size else None,
        "disconnected_flows": cut,
        "exact": exact,
        "seeds": seeds,
        "min_time_s": least,
        "max_time_s": greatest,
    }


def _link_rows(
    fabric: Fabric,
    spec: TrafficSpec,
    routing: Routing,
    util: FloatArray,
    scale_up: ScaleUp | None = None,
    histogram: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Utilisation per link class and direction, the scale-up domain's links last.

    'up' is lower -> upper end: on a torus ring, position r -> r + 1; in the scale-up domain
    (tier "gpu-nvswitch"), a GPU's egress into its domain ('up') and its ingress ('down'). With
    a ``scale_up`` domain, ``util`` holds the plane's directed links and then the domain's.
    ``histogram``, when given, receives the ``LINK_HISTOGRAM_SCHEMA`` rows of the same links.
    """
    if scale_up is None:
        return _class_rows(fabric, spec, routing, util, histogram)
    return _class_rows(fabric, spec, routing, util[: fabric.links], histogram) + _class_rows(
        scale_up.fabric, spec, routing, util[fabric.links :], histogram
    )


def utilisation_bins(util: FloatArray) -> IntArray:
    """Links per utilisation bin: idle (exactly 0), then ``UTIL_BINS`` bins ``(lo, hi]`` to 1.

    A utilisation above 1 (the flow solution's tolerance) counts in the last bin.
    """
    k = np.clip(np.ceil(util * UTIL_BINS).astype(np.int64), 1, UTIL_BINS)
    k[util <= 0] = 0
    return np.bincount(k, minlength=UTIL_BINS + 1)


def _class_rows(
    fabric: Fabric,
    spec: TrafficSpec,
    routing: Routing,
    util: FloatArray,
    histogram: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Utilisation per link class and direction of one fabric (``_link_rows``)."""
    rows: list[dict[str, Any]] = []
    cls = fabric.directed_class
    up = np.zeros(fabric.links, dtype=bool)
    up[0::2] = True
    for c in range(fabric.link_classes):
        for direction, mask in (("up", up), ("down", ~up)):
            u = util[(cls == c) & mask & fabric.alive]
            if not u.size:
                continue
            key = {
                "pattern": spec.label,
                "routing": routing.value,
                "tier": fabric.class_name(c),
                "direction": direction,
            }
            rows.append(
                key
                | {
                    "links": int(u.size),
                    "mean_utilisation": float(u.mean()),
                    "p50_utilisation": float(np.percentile(u, PERCENTILES[0])),
                    "p99_utilisation": float(np.percentile(u, PERCENTILES[1])),
                    "max_utilisation": float(u.max()),
                    "idle_fraction": float((u <= 0).mean()),
                }
            )
            if histogram is None:
                continue
            counts = utilisation_bins(u).tolist()
            histogram.extend(
                key | {"bin_low": lo, "bin_high": hi, "links": n}
                for lo, hi, n in zip(UTIL_BIN_LOW, UTIL_BIN_HIGH, counts, strict=True)
            )
    return rows


def simulate(
    design: Design,
    verify: Verify,
    *,
    progress: SimProgress | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> SimResult:
    """Simulate a design under the verify section's traffic, routings and failures.

    Each step (a traffic's bound, a traffic under a routing, a failure scenario, a Monte Carlo
    trial) starts only while ``deadline`` has not passed; the steps left out are listed in
    ``SimResult.cut`` and the verdict is ``incomplete`` unless what did run already fails.

    The design's scale-up domain (``Design.scale_up``) runs beside the fabric
    (``planner.sim.scale_up.scale_up_of``: not for chip tori whose routers are the fabric, nor
    for one-GPU domains), with PXN when ``verify.pxn`` asks or the fabric is rail-only. The
    figures then mean, per phase (summed over phases with their repeats):

    * ``time_s``: the later of the scale-out and scale-up parts, each simulated;
    * ``ideal_time_s``: max(each GPU's own inter-domain bytes at its NIC rate, its scale-up
      bytes, PXN hops included, at its scale-up rate), the busiest GPU (``_ideal_s``);
    * ``bound_time_s``: max(the optimal-routing bound of the scale-out flows, PXN from their
      proxies, the scale-up part's busiest GPU link) (``bound_time_s``);
    * the links table: the fabric's link classes, then "gpu-nvswitch" up (a GPU's scale-up
      egress) and down (its ingress).
    """
    start = time.perf_counter()
    cut_steps: list[str] = []
    # When each step that ran (or started and was stopped) began, and how many were left out
    # (trials one each): what the suggested time limit is estimated from.
    began: list[float] = []
    steps_cut = 0
    over_memory: list[str] = []
    fabric = build_fabric(design)
    nic_gbps = fabric.nic_speed_gbps * fabric.planes
    routings = [Routing(r) for r in verify.routing]
    verdict_routing = Routing(verify.verdict_routing)
    if verdict_routing not in routings:
        routings.append(verdict_routing)
    scenarios = [named_scenario(fabric, f) for f in verify.failures]
    if verify.single_switch_failures:
        scenarios += single_switch_scenarios(fabric, design)
    coll_rows, link_rows, fail_rows = [], [], []
    bin_rows: list[dict[str, Any]] = []
    cache: HealthyCache = {}
    notes: list[str] = []
    told = 0
    healthy_time: dict[tuple[str, str], float] = {}
    fidelity = fidelity_of(fabric, design, verify)
    scale_up = scale_up_of(design, fabric, verify.pxn)
    # Every run of this simulation: the same budget, cache, notes, cap, deadline, fidelity and
    # scale-up domain.
    run: RunTraffic = partial(
        run_traffic,
        memory_budget_gib=verify.memory_budget_gib,
        cache=cache,
        notes=notes,
        max_flows=verify.resharing_max_flows,
        deadline=deadline,
        fidelity=fidelity,
        scale_up=scale_up,
    )
    # The fabric's GPUs: all of the design's, or the slice a torus pod simulates.
    gpus = fabric.gpus
    traffics = [
        (
            spec,
            build_traffic(
                spec, gpus, design.gpus_per_node, verify.seed, domain_gpus=design.scale_up.gpus
            ),
        )
        for spec in verify.traffic
    ]
    for spec, t in traffics:
        ideal = _ideal_s(t, gpus, nic_gbps, scale_up, fidelity)
        bound = None
        if verify.bound_max_variables:
            if deadline.expired:
                cut_steps.append(f"{spec.label}: bound")
                steps_cut += 1
            else:
                began.append(time.perf_counter())
                # At the best goodput (one-way, no ACKs to share with), still a bound.
                goodput = 1.0 if fidelity is None else 1.0 / fidelity.ideal_s(1.0, two_way=False)
                bound = bound_time_s(fabric, t, verify.bound_max_variables, scale_up, goodput)
                if progress:
                    progress(
                        f"{spec.label}: optimal-routing bound "
                        + ("skipped (too large)" if bound is None else f"{bound:.3g} s")
                    )
        for routing in routings:
            if deadline.expired:
                cut_steps.append(f"{spec.label}, {routing.value}")
                steps_cut += 1
                continue
            began.append(time.perf_counter())
            try:
                total, times, cut, util, exact, spread = _over_seeds(
                    fabric, t, routing, verify, run
                )
            except DeadlineExpired:
                cut_steps.append(f"{spec.label}, {routing.value} (stopped while running)")
                steps_cut += 1
                continue
            except OverMemory as exc:
                over_memory.append(f"{spec.label}, {routing.value}: {exc}")
                continue
            healthy_time[spec.label, routing.value] = total
            coll_rows.append(
                _collective_row(
                    spec, t, routing, "healthy", total, times, cut, ideal, bound, exact, spread
                )
            )
            if util is not None:
                link_rows.extend(_link_rows(fabric, spec, routing, util, scale_up, bin_rows))
            if progress:
                told = _tell_notes(progress, notes, told)
                progress(
                    f"{spec.label}, {routing.value}: {ideal / total if total else 0:.3f} of ideal"
                )
        for sc in scenarios:
            if deadline.expired or (spec.label, verdict_routing.value) not in healthy_time:
                cut_steps.append(f"{spec.label}, {sc.name}")
                steps_cut += 1
                continue
            began.append(time.perf_counter())
            try:
                total, times, cut, _, exact = run(fabric, t, verdict_routing, verify.seed, sc)
            except DeadlineExpired:
                cut_steps.append(f"{spec.label}, {sc.name} (stopped while running)")
                steps_cut += 1
                continue
            except OverMemory as exc:
                over_memory.append(f"{spec.label}, {sc.name}: {exc}")
                continue
            coll_rows.append(
                _collective_row(
                    spec, t, verdict_routing, sc.name, total, times, cut, ideal, None, exact
                )
            )
            base = healthy_time[spec.label, verdict_routing.value]
            fail_rows.append(
                _failure_row(
                    sc.name,
                    -1,
                    int(sc.failed_links.size),
                    sc.planes_lost,
                    spec,
                    verdict_routing,
                    total,
                    base,
                    ideal,
                    cut,
                )
            )
            if progress:
                told = _tell_notes(progress, notes, told)
                progress(f"{spec.label}, {sc.name}: {base / total if total else 0:.3f} of healthy")
    trials_began = time.perf_counter()
    trial_s: list[float] = []
    if verify.monte_carlo_trials and traffics:
        spec, t = traffics[0]
        if (spec.label, verdict_routing.value) in healthy_time:
            trials = _monte_carlo(
                fabric,
                design,
                verify,
                spec,
                t,
                verdict_routing,
                healthy_time[spec.label, verdict_routing.value],
                _ideal_s(t, gpus, nic_gbps, scale_up, fidelity),
                progress,
                run,
                deadline,
            )
            fail_rows.extend(trials)
            trial_s = [(time.perf_counter() - trials_began) / max(1, len(trials))] * len(trials)
            if len(trials) < verify.monte_carlo_trials:
                cut_steps.append(
                    f"monte carlo: {verify.monte_carlo_trials - len(trials):,} of "
                    f"{verify.monte_carlo_trials:,} trials"
                )
                steps_cut += verify.monte_carlo_trials - len(trials)
        else:
            cut_steps.append(f"monte carlo: {verify.monte_carlo_trials:,} trials")
            steps_cut += verify.monte_carlo_trials
    collectives = pl.DataFrame(coll_rows, schema=COLLECTIVES_SCHEMA)
    links = pl.DataFrame(link_rows, schema=LINKS_SCHEMA)
    link_histogram = pl.DataFrame(bin_rows, schema=LINK_HISTOGRAM_SCHEMA)
    failures = pl.DataFrame(fail_rows, schema=FAILURES_SCHEMA)
    verdict, reasons, fractions = judge(
        design, verify, collectives, failures, [s for s in scenarios if s.single_switch_tier]
    )
    wall_s = time.perf_counter() - start
    step_s = np.diff(np.append(began, trials_began)).tolist() + trial_s
    hint_s = suggest_time_limit_s(deadline.elapsed_s(), step_s, steps_cut)
    if (cut_steps or over_memory) and verdict != "fails":
        verdict = INCOMPLETE
        reasons = ()
        if cut_steps:
            reasons += (
                f"the time limit passed before {len(cut_steps)} simulation step"
                f"{'s' if len(cut_steps) > 1 else ''} ran: {'; '.join(cut_steps)}",
            )
        if over_memory:
            reasons += (
                f"{len(over_memory)} simulation step{'s' if len(over_memory) > 1 else ''} not "
                f"run for memory (raise verify.memory_budget_gib on a machine that has it): "
                f"{'; '.join(over_memory)}",
            )
    return SimResult(
        collectives,
        links,
        failures,
        verdict,
        reasons,
        fractions,
        wall_s,
        tuple(cut_steps),
        hint_s,
        tuple(over_memory),
        tuple(dict.fromkeys(notes)),
        link_histogram,
    )


def _ideal_s(
    t: tr.Traffic,
    gpus: int,
    nic_gbps: float,
    scale_up: ScaleUp | None,
    fidelity: Fidelity | None,
) -> float:
    """The traffic's ideal time: every GPU at its full rates, no contention, no routing.

    Without a domain: every byte at the NIC rate (``planner.sim.traffic.ideal_time_s``). With
    one: per phase the busier of the GPU's inter-domain bytes at its NIC rate and its scale-up
    bytes at the scale-up rate (``planner.sim.scale_up.ideal_time_s``). With packet fidelity the
    NIC part is at the transport's goodput: its overheads are no fault of the fabric.
    """
    goodput = 1.0 if fidelity is None else 1.0 / fidelity.ideal_s(1.0, two_way_traffic(t))
    if scale_up is None:
        return tr.ideal_time_s(t, gpus, nic_gbps) / goodput
    return scale_up_ideal_time_s(t, scale_up, nic_gbps, goodput)


def _tell_notes(progress: SimProgress, notes: list[str], told: int) -> int:
    """Pass the notes not yet told to ``progress``; returns how many have been told."""
    for note in notes[told:]:
        progress(note)
    return len(notes)


def _failure_row(
    scenario: str,
    trial: int,
    failed_links: int,
    planes_lost: int,
    spec: TrafficSpec,
    routing: Routing,
    time_s: float,
    healthy_s: float,
    ideal_s: float,
    cut: int,
) -> dict[str, Any]:
    ok = math.isfinite(time_s) and time_s > 0
    return {
        "scenario": scenario,
        "trial": trial,
        "failed_links": failed_links,
        "planes_lost": planes_lost,
        "pattern": spec.label,
        "routing": routing.value,
        "time_s": time_s,
        "fraction_of_healthy": healthy_s / time_s if ok else 0.0,
        "fraction_of_ideal": ideal_s / time_s if ok else 0.0,
        "disconnected_flows": cut,
    }


def _monte_carlo(
    fabric: Fabric,
    design: Design,
    verify: Verify,
    spec: TrafficSpec,
    t: tr.Traffic,
    routing: Routing,
    healthy_s: float,
    ideal: float,
    progress: SimProgress | None,
    run: RunTraffic,
    deadline: Deadline = NO_DEADLINE,
) -> list[dict[str, Any]]:
    """Trials of link failures drawn per plane from the media AFRs and the repair time.

    Trials start while ``deadline`` has not passed; fewer rows than trials means it did.
    ``ideal`` is the traffic's ideal time (``_ideal_s``).
    """
    rng = np.random.default_rng(verify.seed)
    rows: list[dict[str, Any]] = []
    for trial in range(verify.monte_carlo_trials):
        if deadline.expired:
            break
        per_plane = draw_failures(fabric, design, verify.mttr_hours, rng)
        worst, cut = healthy_s, 0
        for links in per_plane:
            if links.size:
                try:
                    total, _, c, _, _ = run(fabric, t, routing, verify.seed, Scenario("mc", links))
                except (DeadlineExpired, OverMemory):  # left out: fewer rows than trials
                    return rows
                worst, cut = max(worst, total), max(cut, c)
        n_failed = int(sum(x.size for x in per_plane))
        rows.append(
            _failure_row(
                "monte_carlo", trial, n_failed, 0, spec, routing, worst, healthy_s, ideal, cut
            )
        )
        if progress:
            progress(
                f"Monte Carlo trial {trial + 1}/{verify.monte_carlo_trials}: {n_failed} links down"
            )
    return rows


def _min_or_none(column: pl.Series) -> float | None:
    """Least value of a column, None when it is empty."""
    return float(column.to_numpy().min()) if column.len() else None


def judge(
    design: Design,
    verify: Verify,
    collectives: pl.DataFrame,
    failures: pl.DataFrame,
    single: list[Scenario],
) -> tuple[str, tuple[str, ...], dict[str, float | None]]:
    """The verdict: healthy throughput and single-switch failures against the requirements."""
    reasons = []
    healthy = collectives.filter(pl.col("scenario") == "healthy")
    fractions: dict[str, float | None] = {}
    for routing in ("ecmp", "spray"):
        rows = healthy.filter(pl.col("routing") == routing)
        fractions[f"sim_fraction_{routing}"] = _min_or_none(rows["fraction_of_ideal"])
    for row in healthy.filter(pl.col("routing") == verify.verdict_routing).iter_rows(named=True):
        if row["fraction_of_ideal"] < verify.min_throughput_fraction * (1 - FRACTION_RTOL):
            reasons.append(
                f"{row['pattern']} under {row['routing']} reaches {row['fraction_of_ideal']:.2f} of ideal, "
                f"below verify.min_throughput_fraction = {verify.min_throughput_fraction}"
            )
    named = failures.filter(pl.col("trial") == -1)
    fractions["sim_fraction_after_failure"] = _min_or_none(named["fraction_of_healthy"])
    phi = design.requirements.min_fraction_after_failure
    single_names = {s.name for s in single}
    if phi is not None:
        for row in named.filter(pl.col("scenario").is_in(list(single_names))).iter_rows(named=True):
            if row["fraction_of_healthy"] < phi * (1 - FRACTION_RTOL):
                reasons.append(
                    f"with {row['scenario']}, {row['pattern']} keeps {row['fraction_of_healthy']:.2f} of its healthy "
                    f"throughput, below survive.min_bandwidth_fraction = {phi}"
                )
    return ("fails" if reasons else "meets"), tuple(reasons), fractions


#: Relative slack when a simulated fraction is compared with a required one.
FRACTION_RTOL = 1e-6

COLLECTIVES_SCHEMA: dict[str, Any] = {
    "pattern": pl.Utf8,
    "collective": pl.Utf8,
    "algorithm": pl.Utf8,
    "routing": pl.Utf8,
    "scenario": pl.Utf8,
    "group_size": pl.Int64,
    "groups": pl.Int64,
    "size_bytes": pl.Float64,
    "flows": pl.Int64,
    "time_s": pl.Float64,
    "algbw_gbps": pl.Float64,
    "busbw_gbps": pl.Float64,
    "ideal_time_s": pl.Float64,
    "fraction_of_ideal": pl.Float64,
    "bound_time_s": pl.Float64,
    "fraction_of_bound": pl.Float64,
    "p50_fct_s": pl.Float64,
    "p99_fct_s": pl.Float64,
    "disconnected_flows": pl.Int64,
    "exact": pl.Boolean,
    "seeds": pl.Int64,
    "min_time_s": pl.Float64,
    "max_time_s": pl.Float64,
}
LINKS_SCHEMA: dict[str, Any] = {
    "pattern": pl.Utf8,
    "routing": pl.Utf8,
    "tier": pl.Utf8,
    "direction": pl.Utf8,
    "links": pl.Int64,
    "mean_utilisation": pl.Float64,
    "p50_utilisation": pl.Float64,
    "p99_utilisation": pl.Float64,
    "max_utilisation": pl.Float64,
    "idle_fraction": pl.Float64,
}
LINK_HISTOGRAM_SCHEMA: dict[str, Any] = {
    "pattern": pl.Utf8,
    "routing": pl.Utf8,
    "tier": pl.Utf8,
    "direction": pl.Utf8,
    "bin_low": pl.Float64,
    "bin_high": pl.Float64,
    "links": pl.Int64,
}
#: Utilisation bins of ``sim_link_histogram`` between 0 and 1, after the idle bin.
UTIL_BINS = 20
#: Lower and upper edge of every bin: the idle bin ``[0, 0]``, then ``(k / UTIL_BINS, (k + 1) / UTIL_BINS]``.
UTIL_BIN_LOW = (0.0, *(k / UTIL_BINS for k in range(UTIL_BINS)))
UTIL_BIN_HIGH = (0.0, *((k + 1) / UTIL_BINS for k in range(UTIL_BINS)))
FAILURES_SCHEMA: dict[str, Any] = {
    "scenario": pl.Utf8,
    "trial": pl.Int64,
    "failed_links": pl.Int64,
    "planes_lost": pl.Int64,
    "pattern": pl.Utf8,
    "routing": pl.Utf8,
    "time_s": pl.Float64,
    "fraction_of_healthy": pl.Float64,
    "fraction_of_ideal": pl.Float64,
    "disconnected_flows": pl.Int64,
}
