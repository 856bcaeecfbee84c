"""A job mix on one design: sampled, run through the queue, simulated together, and priced.

1. **The mix** (``sample_mix``): a distribution of sizes by share of busy GPUs becomes jobs by
   count, P(size s) ∝ share(s) / s, drawn (seeded) until the jobs ask for ``load`` x the
   cluster's GPUs; or the instance's explicit queue.
2. **The queue** (``planner.mix.schedule.run_queue``): first come, first served over time, each
   job placed (``models.placement.place``) under the design's locality domains and its family's
   rule (``planner.mix.locality``) by the policy. Fragmentation = GPUs a job holds beyond its size
   (whole domains) + GPUs free while the head waits though they would be enough for it.
3. **Interference** (``planner.sim.concurrent``): the jobs running halfway through the queue each
   run their data-parallel all-reduce as NCCL runs it across nodes, one ring per rail (the job's
   GPUs of local index r, in id order: each sends 2 (k - 1) / k x S to the next), as fluid
   flows; all jobs alone and together on the healthy fabric. slowdown_j = together / alone (1
   for a job inside one node).
4. **Price**: a job spends φ of its step in the all-reduce alone, so a slowdown s stretches the
   step to (1 - φ) + φ s and the job loses n (1 - 1 / ((1 - φ) + φ s)) GPUs' worth of work.
   lost GPUs = fragmentation + Σ_j that; lost value = lost GPUs x p x H (the GPU-hour's value,
   the objective's lifetime hours), priced under the first routing listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.placement import Policy
from planner.deadline import NO_DEADLINE, Deadline
from planner.design import Design
from planner.family_roles import Family
from planner.mix.locality import Locality, locality
from planner.mix.schedule import QueueRun, run_queue
from planner.schema.jobs import Jobs
from planner.sim import traffic as tr
from planner.sim.concurrent import Together, run_fluid
from planner.sim.fabric import Fabric, FloatArray, IntArray
from planner.sim.routing import Routing
from planner.sim.scale_up import scale_up_of


def sample_mix(jobs: Jobs, cluster_gpus: int) -> IntArray:
    """The jobs' sizes in queue order (module docstring, step 1)."""
    if jobs.queue is not None:
        return np.asarray(jobs.queue, dtype=np.int64)
    assert jobs.sizes_gpus is not None
    assert jobs.gpu_share is not None
    sizes = np.asarray(jobs.sizes_gpus, dtype=np.int64)
    weight = np.asarray(jobs.gpu_share, dtype=np.float64) / sizes
    p = weight / weight.sum()
    rng = np.random.default_rng(jobs.seed)
    want = jobs.load * cluster_gpus
    out: list[int] = []
    total = 0
    # Draw in batches of the expected count; stop at the job that reaches the demand.
    batch = max(16, int(want / float(p @ sizes)) + 1)
    while total < want:
        draw = rng.choice(sizes, size=batch, p=p)
        need = np.searchsorted(np.cumsum(draw) + total, want) + 1
        taken = draw[:need]
        out.extend(taken.tolist())
        total += int(taken.sum())
    return np.asarray(out, dtype=np.int64)


def rail_rings(gpu_ids: IntArray, rail_period: int, size_bytes: float) -> tr.Phase:
    """A job's all-reduce across nodes as fluid flows: one ring per rail (module docstring).

    Rail r holds the job's GPUs g with g % rail_period = r, in id order; a ring of k >= 2 GPUs
    sends 2 (k - 1) / k x S from each to the next.
    """
    ids = np.sort(np.asarray(gpu_ids, dtype=np.int64))
    rail = ids % rail_period
    order = np.lexsort((ids, rail))
    ids, rail = ids[order], rail[order]
    starts = np.flatnonzero(np.r_[True, rail[1:] != rail[:-1]])
    counts = np.diff(np.r_[starts, ids.size])
    k = np.repeat(counts, counts)
    pos = np.arange(ids.size) - np.repeat(starts, counts)
    nxt = ids[np.repeat(starts, counts) + (pos + 1) % k]
    ring = k >= 2
    size = 2.0 * (k - 1) / np.maximum(k, 1) * size_bytes
    return tr.Phase(ids[ring], nxt[ring], size[ring])


@dataclass(frozen=True)
class MixOutcome:
    """One policy's run of the mix on one design, and its running jobs' slowdowns."""

    policy: str
    locality: Locality
    queue: QueueRun
    runs: dict[str, Together]
    """By routing: the snapshot's running jobs' all-reduces alone and together (in the order of
    ``running_jobs``)."""
    running_jobs: IntArray
    """Queue index of each job running in the snapshot."""
    comm_fraction: float

    def slowdown(self, routing: str) -> FloatArray:
        """Per running job: its all-reduce together over alone."""
        return self.runs[routing].slowdown

    def slowed_gpus(self, routing: str) -> float:
        """Σ_j n_j (1 - 1 / ((1 - φ) + φ s_j)): the GPUs' worth of work slowdowns take."""
        s = self.slowdown(routing)
        phi = self.comm_fraction
        n = self.queue.snapshot.sizes_gpus[self.running_jobs]
        return float(np.sum(n * (1.0 - 1.0 / ((1.0 - phi) + phi * s))))

    def lost_gpus(self, routing: str) -> float:
        """Fragmentation plus the slowed GPUs (module docstring, step 4)."""
        return self.queue.fragmentation_gpus + self.slowed_gpus(routing)

    def mean_slowdown(self, routing: str) -> float:
        """Mean slowdown of the running jobs whose all-reduce crosses the fabric (1 if none)."""
        run = self.runs[routing]
        mask = run.alone_s > 0
        return float(run.slowdown[mask].mean()) if mask.any() else 1.0


def evaluate_mix(
    design: Design,
    family: Family,
    fabric: Fabric,
    sizes_gpus: Sequence[int],
    jobs: Jobs,
    policy: Policy,
    *,
    deadline: Deadline = NO_DEADLINE,
) -> MixOutcome:
    """Run the mix's queue on ``design`` by ``policy`` and simulate its snapshot (steps 2-3)."""
    loc = locality(design, family, fabric)
    queue = run_queue(sizes_gpus, loc.hierarchy, loc.rule, policy, jobs.seed)
    snap = queue.snapshot
    running = np.flatnonzero(snap.placed)
    scale_up = scale_up_of(design, fabric, pxn=True)
    period = fabric.rails or design.gpus_per_node
    holders = snap.job_of_gpu
    order = np.argsort(holders, kind="stable")
    start = np.searchsorted(holders[order], running)
    phases = []
    for j, lo in zip(running.tolist(), start.tolist(), strict=True):
        ids = order[lo : lo + int(snap.allocated_gpus[j])]
        # A job holding whole domains beyond its size runs on its first ``size`` GPUs.
        ids = np.sort(ids)[: int(snap.sizes_gpus[j])]
        phases.append(rail_rings(ids, period, jobs.all_reduce_bytes))
    names = [f"job{j}" for j in running.tolist()]
    runs: dict[str, Together] = {
        r: run_fluid(fabric, phases, names, Routing(r), scale_up=scale_up, deadline=deadline)
        for r in jobs.routings
    }
    return MixOutcome(policy, loc, queue, runs, running, jobs.comm_fraction)
