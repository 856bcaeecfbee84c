"""One traffic's phases over the planes (and the scale-up domain): times, flows cut off, loads.

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
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from planner.deadline import NO_DEADLINE, Deadline
from planner.sim import traffic as tr
from planner.sim.fabric import Fabric, FloatArray
from planner.sim.flow import Completion, completion_times
from planner.sim.hashed_spray import CHUNK_SUBFLOWS, chunk_for_budget, hashed_times_s
from planner.sim.packet import ROCE_V2, Fidelity, queueing_s
from planner.sim.routing import Routing, route
from planner.sim.scale_up import ScaleUp, Split, joined_times_s
from planner.sim.scenarios import Scenario
from planner.sim.stream_plan import Stream, check_table_memory, plan_stream
from planner.sim.streamed import streamed_phase

#: ``run_traffic`` with a simulation's settings bound (fabric, traffic, routing, seed, scenario
#: and ``with_utilisation`` left to the call).
RunTraffic = Callable[..., tuple[float, FloatArray, int, FloatArray | None, bool]]


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


#: Healthy-plane completions already computed: (phase id, routing, seed, planes up) ->
#: (completion, flows the healthy plane cuts off). Scenarios whose failed plane cuts no flow off
#: reuse them instead of routing the healthy planes again.
HealthyCache = dict[tuple[int, str, int, int], tuple[Completion, int]]


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
    healthy = healthy.adapted(src, dst, size)
    failed = None if failed is None else failed.adapted(src, dst, size)
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
        routes_f = route(
            failed, src, dst, routing, seed=seed, flow_id=phase.flow_id, deadline=deadline
        )
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
        routes_h = route(
            healthy, src, dst, routing, seed=seed, flow_id=phase.flow_id, deadline=deadline
        )
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
    spray_entropies: int = 0,
) -> tuple[float, FloatArray, int, FloatArray | None, bool]:
    """Total time, flows' completion times, flows cut off, first utilisation, and exactness.

    With ``spray_entropies`` N > 0, spraying is by hashed entropies (``planner.sim.hashed_spray``:
    a flow's packets over N entropy values, each hashed by every switch) instead of the even
    split, healthy or failed (a failed plane hashes over its surviving links), and ``notes``
    says so.

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
    failed = None if scenario is None else scenario.failed_fabric(fabric)
    lost = scenario.planes_lost if scenario else 0
    total, times, cut, util, exact = 0.0, [], 0, None, True
    for i, whole in enumerate(traffic.phases):
        split = None if scale_up is None else scale_up.split(whole)
        phase = whole if split is None else split.scale_out
        # Adaptive routing sets its weights for this phase's demand, healthy and failed alike.
        fabric_p = fabric.adapted(phase.src, phase.dst, phase.size_bytes)
        failed_p = (
            None if failed is None else failed.adapted(phase.src, phase.dst, phase.size_bytes)
        )
        check_table_memory(fabric_p, phase, memory_budget_gib)
        hashed = routing is Routing.SPRAY and spray_entropies > 0 and phase.flows > 0
        stream = (
            None
            if hashed
            else plan_stream(fabric_p, phase, routing, seed, memory_budget_gib, max_flows)
        )
        if split is not None and not phase.flows:
            run = _empty_run(fabric_p, with_utilisation and i == 0)
        elif hashed:
            payload = (fidelity.transport if fidelity else ROCE_V2).payload_bytes
            run = _hashed_run(
                fabric_p,
                phase,
                seed,
                spray_entropies,
                payload,
                with_utilisation and i == 0,
                deadline,
                failed=failed_p,
                planes_lost=lost,
                chunk_subflows=chunk_for_budget(fabric, phase, memory_budget_gib),
            )
            _note_once(
                notes,
                f"spraying hashes each flow's packets over {spray_entropies} entropies at every "
                "switch (verify.spray_entropies; planner.sim.hashed_spray), not the even split",
            )
        elif stream is None:
            run = run_phase(
                fabric_p,
                phase,
                routing,
                seed,
                failed=failed_p,
                planes_lost=lost,
                with_utilisation=with_utilisation and i == 0,
                cache=cache,
                deadline=deadline,
                queue_packet_bytes=None if fidelity is None else fidelity.transport.packet_bytes,
            )
        else:
            run = _streamed_run(fabric_p, phase, routing, seed, stream, failed_p, lost, deadline)
            if notes is not None:
                label = f"{traffic.name} phase {i + 1}, {routing.value}" + (
                    f", {scenario.name}" if scenario is not None else ""
                )
                chunks = 0 if run.factored else -(-phase.flows // stream.chunk_flows)
                notes.append(stream.statement(label, phase.flows, chunks, run.exact))
        run = _with_fidelity(fabric_p, phase, run, stream, fidelity)
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


def _note_once(notes: list[str] | None, note: str) -> None:
    if notes is not None and note not in notes:
        notes.append(note)


def _hashed_run(
    healthy: Fabric,
    phase: tr.Phase,
    seed: int,
    entropies: int,
    payload_bytes: int,
    with_utilisation: bool,
    deadline: Deadline,
    failed: Fabric | None = None,
    planes_lost: int = 0,
    chunk_subflows: int = CHUNK_SUBFLOWS,
) -> PhaseRun:
    """A phase sprayed by hashed entropies over the planes that are up, as ``run_phase`` runs one.

    Its sub-flows are routed ``chunk_subflows`` at a time (``chunk_for_budget``: what fits the
    memory budget), which changes no figure.

    Each plane carries 1/p of every flow; a failed plane 0 is hashed over its surviving links,
    a flow it cuts off moves its share to the other planes (or is cut with one plane), and a
    flow ends with its slower part.
    Its utilisation is the healthy plane's mean over the phase: each link's load time over the
    phase's time.
    """
    planes_up = healthy.planes - planes_lost
    if planes_up <= 0:
        return PhaseRun(math.inf, np.full(phase.flows, math.inf), phase.flows)

    def hashed(fabric: Fabric, size: FloatArray) -> tuple[FloatArray, FloatArray]:
        share = tr.Phase(phase.src, phase.dst, size)
        times, link_s, _ = hashed_times_s(
            fabric,
            share,
            seed,
            entropies,
            payload_bytes,
            deadline=deadline,
            chunk_subflows=chunk_subflows,
        )
        return times, link_s

    size = phase.size_bytes / planes_up
    failed_times = np.zeros(phase.flows)
    cut = 0
    if failed is not None:
        failed_times, _ = hashed(failed, size)
        lost = np.isinf(failed_times)
        failed_times[lost] = 0.0
        if lost.any() and planes_up >= 2:  # the cut-off share moves to the other planes
            size = np.where(lost, phase.size_bytes / (planes_up - 1), size)
        elif lost.any():
            failed_times[lost] = math.inf
            cut = int(lost.sum())
    times, link_s = hashed(healthy, size)
    cut += int(np.isinf(times).sum())
    times = np.maximum(times, failed_times)
    time_s = float(times.max()) if times.size else 0.0
    utilisation = None
    if with_utilisation:
        utilisation = link_s / time_s if 0 < time_s < math.inf else np.zeros_like(link_s)
    return PhaseRun(time_s, times, cut, utilisation)


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
