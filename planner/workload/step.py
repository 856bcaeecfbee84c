"""Step time of one training iteration on a design: compute, plus the communication not hidden.

Pure functions of a workload, its collectives (``planner.workload.iteration``) and the
simulated time of one call of each (the ``collectives`` table of a ``SimResult``).

How the traffic is simulated
----------------------------
``verify_with_workload`` gives the ``[verify]`` section a plan is verified under: each collective
of the iteration becomes one traffic spec of **one call** at its nccl-tests size
(``to_verify_traffic``). An instance whose ``[verify]`` names no traffic gets the workload's
traffic *instead of* the default patterns (a random permutation and a 1 GiB all-reduce, which
stand in for a workload the instance did not describe); one whose ``[verify]`` lists traffic
explicitly keeps it, and the workload's is *appended* (specs equal to one already listed are
simulated once). Simulating one call and multiplying by the calls per iteration is exact for a
fluid model of identical, back-to-back calls that do not contend with one another, and costs
one simulation per distinct collective rather than thousands. It ignores contention between
different collectives running at once: tensor-parallel traffic inside a scale-up domain shares
no link with the fabric, but data-parallel gradients, pipeline sends and expert all-to-alls that
all cross the fabric would slow one another if they overlapped in time. Per-call launch latency
counts only as far as the simulator's fidelity charges it.

The step model
--------------
For collective i with time per call t_i (simulated: healthy fabric, the verdict's routing; or the
analytic model of ``planner.workload.analytic``) and c_i calls per iteration::

    T_i      = t_i c_i                                 time per iteration
    C        = Σ_i T_i                                 communication
    C_o      = Σ_{i overlappable} T_i                  communication that can overlap compute
    O_r      = Σ_{i overlappable, on r} T_i            ... of it on resource r
    T_O      = κ max_r O_r                             the overlappable ones run together
    H        = min(f T_O, T_comp)                      communication hidden under compute
    E        = (C - C_o) + (T_O - H)                   exposed communication
    β        = (P - 1) / (v m)                         pipeline bubble (1F1B: v = 1)
    T_bubble = β T_comp
    T_step   = T_comp + T_bubble + E
    idle     = E / T_step                              fraction of the step the GPUs wait
    bubble   = T_bubble / T_step                       fraction of the step in the bubble
    tok/s    = B s / T_step
    MFU      = 6 N_a B s / (G T_step peak)             model FLOPs utilisation of the step
    $/Mtok   = G p / 3600 x T_step / (B s) x 1e6

with T_comp = ``compute_time_s`` (6 N_a tokens, 8 N_a under full recomputation, over the achieved
FLOP/s), f the workload's ``overlap_fraction``, m the microbatches per pipeline, v the model
chunks per stage, G the GPUs and p their price per hour. The bubble is Narayanan et al. 2021's
(https://arxiv.org/abs/2104.04473, section 2.2): (P - 1) microbatch slots of the stage's compute
at the start and end of the schedule, (P - 1) / v with the interleaved schedule. Data-parallel
gradient synchronisation (``dp_*``, ``edp_*``: bucketed and issued during the backward pass, or
prefetched under ZeRO 3) may always overlap; tensor-parallel collectives and pipeline sends only
when the workload says so (``overlap_tensor_parallel``, ``overlap_pipeline_parallel``: MegaScale,
https://arxiv.org/abs/2402.15627, hides both); the expert all-to-alls sit between the router and
the experts and are exposed in full. Hidden communication can never exceed the compute it hides
under (the ``min``). The bubble is charged on compute only (the exposed communication of the
in-pipeline collectives is not stretched by it).

Contention: the overlappable collectives are in flight at the same time (gradient buckets
beside pipeline sends and, when overlapped, tensor-parallel collectives), so they share what
they cross. A GPU has two resources (``resource_of``): its scale-up link (a collective whose
groups sit inside one domain, placement ``tensor_parallel``) and its NIC (every other one).
On one resource their times add, as their bytes queue on one link (O_r: a data-parallel
reduce-scatter and a pipeline send that leave one NIC take the sum of their bytes over its
rate, not the longer of the two); the two resources work side by side (T_O = max_r O_r).
κ is the simulator's word on the rule (``contention``): the overlappable collectives' fluid
flows run together on the fabric (``[verify] together``, group ``overlap``, built by
``verify_with_workload`` at their calls per iteration) over the rule applied to their fluid times
alone; 1 where they share nothing but NICs, above 1 where they also collide inside the fabric
(an ECMP hash, an oversubscribed tier), 1 in the analytic model. Per-call latency stays in each
T_i (each collective's own simulation); κ carries only what sharing adds.
The exposed collectives wait on one another in the schedule (a layer's all-reduce before the
next layer, a stage's send before the next stage), so their times add. Not modelled:
stragglers, imbalance between stages, and contention inside the fabric between collectives on
different NICs; the step time is therefore a lower bound on what the cluster reaches, and the
communication part is the network's share of it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from planner.errors import InputError
from planner.schema.verify import OVERLAP_GROUP, Together, TrafficSpec, Verify
from planner.schema.workload import Workload
from planner.workload.iteration import (
    Collective,
    collectives,
    compute_time_s,
    flops_per_gpu,
    to_verify_traffic,
)

#: Collective names that may always overlap compute (data-parallel gradient synchronisation).
OVERLAPPABLE_PREFIXES = ("dp_", "edp_")
#: Prefixes that may overlap when the workload says so (``overlap_tensor_parallel``, ...).
TENSOR_PREFIX = "tp_"
PIPELINE_PREFIX = "pp_"
#: Relative tolerance matching a simulated row's size to its spec's (sizes pass through floats).
SIZE_REL_TOL = 1e-9
#: The simulation scenario step times are read from.
HEALTHY = "healthy"
SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1e6

#: Columns of the ``workload`` report table: one row per collective of an iteration.
WORKLOAD_SCHEMA: dict[str, Any] = {
    "collective": pl.Utf8,
    "kind": pl.Utf8,
    "pattern": pl.Utf8,
    "placement": pl.Utf8,
    "group_size": pl.Int64,
    "groups": pl.Int64,
    "bytes_per_gpu_per_iteration": pl.Float64,
    "size_bytes": pl.Float64,
    "time_per_call_s": pl.Float64,
    "calls": pl.Int64,
    "time_per_iteration_s": pl.Float64,
    "overlappable": pl.Boolean,
    "share_of_step": pl.Float64,
}


def overlappable(c: Collective, w: Workload | None = None) -> bool:
    """Whether a collective may hide under compute.

    Data-parallel gradient synchronisation always; tensor-parallel collectives and pipeline sends
    when ``w`` allows it (without a workload, only the data-parallel ones).
    """
    prefixes: tuple[str, ...] = OVERLAPPABLE_PREFIXES
    if w is not None and w.overlap_tensor_parallel:
        prefixes += (TENSOR_PREFIX,)
    if w is not None and w.overlap_pipeline_parallel:
        prefixes += (PIPELINE_PREFIX,)
    return c.name.startswith(prefixes)


#: The collectives' resources: a GPU's scale-up link and its NIC (``resource_of``).
SCALE_UP = "scale_up"
SCALE_OUT = "scale_out"
#: The placement of a collective whose groups sit inside one scale-up domain.
IN_DOMAIN = "tensor_parallel"


def resource_of(c: Collective) -> str:
    """What a collective's bytes queue on: the scale-up link inside a domain, else the NIC."""
    return SCALE_UP if c.placement == IN_DOMAIN else SCALE_OUT


def concurrent_s(running: Sequence[tuple[Collective, float]]) -> float:
    """T_O = max_r Σ_{i on r} T_i: collectives in flight together, each with its time alone.

    On one resource (``resource_of``) the times add; the resources run side by side.
    """
    per: dict[str, float] = {}
    for c, t in running:
        per[resource_of(c)] = per.get(resource_of(c), 0.0) + t
    return max(per.values(), default=0.0)


def bubble_fraction(pipeline: int, microbatches: int, virtual_stages: int = 1) -> float:
    """Pipeline bubble over compute, β = (P - 1) / (v m) (Narayanan et al. 2021, section 2.2)."""
    return (pipeline - 1) / (virtual_stages * microbatches)


def workload_traffic(w: Workload, domain_gpus: int) -> list[tuple[Collective, TrafficSpec]]:
    """Each collective of an iteration with the ``[verify]`` spec simulating one call of it."""
    rows = collectives(w, domain_gpus)
    specs = to_verify_traffic(rows, pipeline_stages=w.parallelism.pipeline)
    return list(zip(rows, specs, strict=True))


#: Traffic patterns one [verify] section may hold (the schema's own cap, ``Verify.traffic``).
MAX_TRAFFIC = next(
    m.max_length for m in Verify.model_fields["traffic"].metadata if hasattr(m, "max_length")
)


def verify_with_workload(verify: Verify, w: Workload | None, domain_gpus: int) -> Verify:
    """The ``[verify]`` section a design is simulated under, the workload's traffic included.

    traffic = (explicit [verify] traffic, or none) + the workload's specs not already listed.
    Without a workload, or a workload with no collectives (one GPU), ``verify`` is returned as is.
    """
    if w is None:
        return verify
    ours = [spec for _, spec in workload_traffic(w, domain_gpus)]
    if not ours:
        return verify
    traffic = list(verify.traffic) if "traffic" in verify.model_fields_set else []
    listed = len(traffic)
    for spec in ours:
        if spec not in traffic:
            traffic.append(spec)
    if len(traffic) > MAX_TRAFFIC:
        raise ValueError(
            f"[verify] lists {listed} traffic patterns and the workload adds "
            f"{len(traffic) - listed}: at most {MAX_TRAFFIC} together; list fewer in [verify]"
        )
    groups = [g for g in verify.together if g.label != OVERLAP_GROUP]
    overlap = overlap_group(w, domain_gpus, traffic)
    if overlap is not None:
        groups.append(overlap)
    return verify.model_copy(update={"traffic": traffic, "together": groups})


def overlap_group(w: Workload, domain_gpus: int, traffic: Sequence[TrafficSpec]) -> Together | None:
    """The workload's overlappable collectives as one ``[verify]`` group, each at its calls.

    None when fewer than two distinct patterns overlap (nothing to run together).
    """
    calls: dict[int, int] = {}
    for c, spec in workload_traffic(w, domain_gpus):
        if overlappable(c, w) and spec in traffic:
            k = list(traffic).index(spec)
            calls[k] = calls.get(k, 0) + c.calls
    if len(calls) < 2:
        return None
    places = sorted(calls)
    return Together(traffic=places, scales=[float(calls[k]) for k in places], name=OVERLAP_GROUP)


@dataclass(frozen=True)
class CollectiveTime:
    """One collective of an iteration and its simulated time per call (None: not simulated)."""

    collective: Collective
    pattern: str
    """The ``[verify]`` label of the traffic simulating it (the ``pattern`` of ``sim_collectives``)."""
    time_per_call_s: float | None

    @property
    def time_per_iteration_s(self) -> float | None:
        """T_i = t_i x c_i."""
        if self.time_per_call_s is None:
            return None
        return self.time_per_call_s * self.collective.calls


def call_times(
    pairs: Sequence[tuple[Collective, TrafficSpec]],
    sim_collectives: pl.DataFrame | None,
    routing: str,
) -> list[CollectiveTime]:
    """The healthy simulated time of one call of each collective, under ``routing``.

    A collective's row is the first of ``sim_collectives`` with its spec's label and size, the
    routing given and the healthy scenario; without one (no simulation, or the time limit cut
    it) its time is None.
    """
    rows: list[tuple[str, float, float]] = []
    if sim_collectives is not None:
        healthy = sim_collectives.filter(
            (pl.col("scenario") == HEALTHY) & (pl.col("routing") == routing)
        )
        rows = list(healthy.select("pattern", "size_bytes", "time_s").iter_rows())
    out = []
    for c, spec in pairs:
        found = next(
            (
                t
                for pattern, size, t in rows
                if pattern == spec.label
                and math.isclose(size, spec.size_bytes, rel_tol=SIZE_REL_TOL)
            ),
            None,
        )
        out.append(CollectiveTime(c, spec.label, found))
    return out


@dataclass(frozen=True)
class StepTime:
    """The step of one training iteration (the module docstring gives the model)."""

    compute_s: float
    """T_comp: FLOPs per GPU over the achieved FLOP/s."""
    comm_s: float
    """C: every collective's time per iteration, summed."""
    overlappable_comm_s: float
    """C_o: the part of C that may hide under compute (data-parallel, and TP / PP if allowed)."""
    hidden_comm_s: float
    """H = min(f T_O, T_comp)."""
    exposed_comm_s: float
    """E = (C - C_o) + (T_O - H): communication the GPUs wait for."""
    bubble_s: float
    """T_bubble = β T_comp, β = (P - 1) / (v m)."""
    step_s: float
    """T_step = T_comp + T_bubble + E."""
    idle_fraction: float
    """E / T_step: the share of the step the GPUs wait on the network."""
    bubble_fraction: float
    """T_bubble / T_step."""
    mfu: float
    """Model FLOPs utilisation of the whole step: 6 N_a B s / (G T_step peak)."""
    tokens_per_s: float
    """Global batch tokens / T_step."""
    usd_per_million_tokens: float
    """GPUs x price per hour / 3600 x T_step / tokens x 1e6 (GPU time only; the fabric is in TCO)."""
    concurrent_comm_s: float
    """T_O = max_r O_r: the overlappable collectives run together, adding on a shared resource."""
    scale_out_overlappable_comm_s: float
    """O_out: the overlappable collectives' time on the NIC."""
    contention_factor: float = 1.0
    """κ: the simulator's time for the overlappable collectives run together over the
    resource rule's (1 when they were not simulated together; ``contention``)."""


#: Where each step figure's inputs are given, for a figure that is not finite.
STEP_INPUTS = (
    "workload.gpu.peak_flops and workload.gpu.utilisation (the achieved FLOP/s the compute time "
    "divides by), the model's parameters, sequence_length_tokens and global_batch_sequences "
    "(the FLOPs), workload.gpu.price_usd_per_hour"
)


def _check_times(times: Sequence[CollectiveTime]) -> None:
    """Every simulated time is a finite number of seconds (a simulator's fault otherwise)."""
    for t in times:
        if t.time_per_call_s is not None and not math.isfinite(t.time_per_call_s):
            raise ValueError(
                f"{t.collective.name}: simulated time per call {t.time_per_call_s} is not finite"
            )


def _check_finite(step: StepTime) -> StepTime:
    """``step``, when every figure of it is finite; else the inputs they come from are named."""
    bad = {k: v for k, v in dataclasses.asdict(step).items() if not math.isfinite(v)}
    if bad:
        shown = ", ".join(f"{k} = {v}" for k, v in bad.items())
        raise InputError(
            f"workload: the step's figures are not finite ({shown}): they come from {STEP_INPUTS}"
        )
    return step


def contention(
    w: Workload, times: Sequence[CollectiveTime], together: pl.DataFrame | None, routing: str
) -> float:
    """κ = T_together / max_r Σ_{i on r} T_i,alone, from the simulator's ``overlap`` group.

    ``together`` is a simulation's ``together`` table: each pattern of the group alone and all of
    them at once, as fluid flows, at their calls per iteration. κ is how much more (or less) the
    fabric makes them wait on one another than the resource rule says: 1 where the NIC is the
    only thing they share, above 1 where their flows also collide inside the fabric. 1 without
    the group (fewer than two overlappable patterns, or not simulated).
    """
    if together is None:
        return 1.0
    rows = together.filter((pl.col("group") == OVERLAP_GROUP) & (pl.col("routing") == routing))
    if rows.height < 2:
        return 1.0
    alone = dict(zip(rows["pattern"].to_list(), rows["alone_s"].to_list(), strict=True))
    running = []
    for t in times:
        if overlappable(t.collective, w) and t.pattern in alone:
            running.append((t.collective, float(alone.pop(t.pattern))))
    rule = concurrent_s(running)
    group_s = float(rows["group_s"][0])
    return group_s / rule if rule > 0 else 1.0


def step_time(
    w: Workload, times: Sequence[CollectiveTime], contention_factor: float = 1.0
) -> StepTime | None:
    """The step of ``w`` from its collectives' times; None when one of them was not simulated.

    Raises
    ------
    InputError
        When a figure is not finite: the schema's bounds keep every figure finite
        (``planner.schema.workload.MIN_PEAK_FLOPS``), so only a workload built without
        validation reaches this.
    ValueError
        When a collective's time is not finite.
    """
    _check_times(times)
    per_iteration = [t.time_per_iteration_s for t in times]
    if any(t is None for t in per_iteration):
        return None
    comm = sum(t for t in per_iteration if t is not None)
    running = [
        (t.collective, t.time_per_iteration_s)
        for t in times
        if overlappable(t.collective, w) and t.time_per_iteration_s is not None
    ]
    over = sum(t for _, t in running)
    together = contention_factor * concurrent_s(running)
    out = sum(t for c, t in running if resource_of(c) == SCALE_OUT)
    compute = compute_time_s(w)
    hidden = min(w.overlap_fraction * together, compute)
    exposed = (comm - over) + (together - hidden)
    par = w.parallelism
    bubble = bubble_fraction(par.pipeline, w.microbatches, par.virtual_stages) * compute
    step = compute + bubble + exposed
    tokens = w.spec.global_batch_tokens
    gpu_usd_per_s = w.parallelism.gpus * w.gpu.price_usd_per_hour / SECONDS_PER_HOUR
    return _check_finite(
        StepTime(
            compute_s=compute,
            comm_s=comm,
            overlappable_comm_s=over,
            hidden_comm_s=hidden,
            exposed_comm_s=exposed,
            bubble_s=bubble,
            step_s=step,
            idle_fraction=exposed / step,
            bubble_fraction=bubble / step,
            mfu=flops_per_gpu(w) / (step * w.gpu.peak_flops),
            tokens_per_s=tokens / step,
            usd_per_million_tokens=gpu_usd_per_s * step / tokens * TOKENS_PER_MILLION,
            concurrent_comm_s=together,
            scale_out_overlappable_comm_s=out,
            contention_factor=contention_factor,
        )
    )


def workload_table(
    times: Sequence[CollectiveTime], step: StepTime | None, w: Workload | None = None
) -> pl.DataFrame:
    """One row per collective: its bytes, time per call and per iteration, and share of the step.

    ``share_of_step`` = T_i / T_step (before overlap: the shares of collectives that hide under
    compute may add up to more than they cost the step). ``overlappable`` follows ``w``'s options
    (data-parallel collectives only without it).
    """
    rows = []
    for t in times:
        c = t.collective
        per_iteration = t.time_per_iteration_s
        rows.append(
            {
                "collective": c.name,
                "kind": c.kind,
                "pattern": t.pattern,
                "placement": c.placement,
                "group_size": c.group_size,
                "groups": c.groups,
                "bytes_per_gpu_per_iteration": c.total_bytes,
                "size_bytes": c.size_bytes,
                "time_per_call_s": t.time_per_call_s,
                "calls": c.calls,
                "time_per_iteration_s": per_iteration,
                "overlappable": overlappable(c, w),
                "share_of_step": (
                    None if step is None or per_iteration is None else per_iteration / step.step_s
                ),
            }
        )
    return pl.DataFrame(rows, schema=WORKLOAD_SCHEMA)
