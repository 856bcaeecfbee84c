"""A queue of jobs run on a shared cluster over time: where fragmentation comes from.

Placed on an empty cluster, jobs whose sizes are powers of two fill it without a hole. Holes come
from jobs finishing: the GPUs they leave are scattered among the jobs still running, and a job
that needs its GPUs inside one domain, or whole domains (``models.placement.Rule``), may find
enough free GPUs but no placement. This module runs the queue:

* every job waits in the queue at time 0, in its order; each runs for a duration drawn from an
  exponential distribution of mean 1 (seeded), whatever its size, so the busy GPUs' shares by
  size are the mix's ``gpu_share`` (Little's law);
* first come, first served, strictly: the head of the queue is placed as soon as the policy
  finds a placement (``models.placement.place``), then the next; when the head cannot be placed,
  nothing behind it starts (no backfill: a job that jumps the queue would delay the head, which
  a scheduler only allows with reservations this model does not make);
* between two completions the state is constant; it is measured from the first time the head
  waits until the queue is empty (the cluster saturated), each state weighted by how long it
  lasts.

What the head's wait leaves idle is of two kinds: when it needs more GPUs than are free, the
cluster is waiting for capacity (``waiting_gpus``: every family would wait); when enough GPUs
are free but no placement meets its rule, they are *stranded* by fragmentation. With the GPUs
jobs hold beyond their size (whole domains), that is the fragmentation the family and policy
cause. The state halfway through the measured time is kept as the snapshot whose jobs'
traffic is simulated (``planner.mix.evaluate``).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.placement import IDLE, NOT_PLACED, Hierarchy, Placement, Policy, Rule, place
from planner.sim.fabric import IntArray

#: Mean of a job's duration (the unit of time).
MEAN_DURATION = 1.0


@dataclass(frozen=True)
class QueueRun:
    """Time-weighted GPU counts over the saturated run, and the snapshot at its middle."""

    used_gpus: float
    """GPUs the running jobs asked for."""
    internal_gpus: float
    """GPUs running jobs hold beyond their size."""
    stranded_gpus: float
    """GPUs free while the head waits though they are enough for it (no placement meets its rule)."""
    waiting_gpus: float
    """GPUs free while the head waits for more than are free."""
    gpus: int
    snapshot: Placement
    """The jobs running at the middle of the measured time (``placed``), and the queue then."""

    @property
    def fragmentation_gpus(self) -> float:
        """Internal fragmentation plus stranded GPUs."""
        return self.internal_gpus + self.stranded_gpus

    @property
    def utilisation(self) -> float:
        """Used over all the cluster's GPUs."""
        return self.used_gpus / self.gpus


def run_queue(
    sizes_gpus: Sequence[int],
    hierarchy: Hierarchy,
    rule: Rule,
    policy: Policy,
    seed: int = 0,
) -> QueueRun:
    """Run the queue (module docstring) and measure it."""
    sizes = np.asarray(sizes_gpus, dtype=np.int64)
    gpus = hierarchy.gpus
    durations = np.random.default_rng(seed).exponential(MEAN_DURATION, sizes.size)
    free = np.ones(gpus, dtype=bool)
    allocated = np.zeros(sizes.size, dtype=np.int64)
    start = np.full(sizes.size, np.inf)
    running: list[tuple[float, int]] = []  # (end time, job)
    held: dict[int, IntArray] = {}
    head, now = 0, 0.0
    states: list[tuple[float, float, float, float, float]] = []  # (t, used, internal, strand, wait)
    while head < sizes.size:
        while head < sizes.size:
            ids = place(free, int(sizes[head]), hierarchy, rule, policy)
            if ids is None:
                break
            free[ids] = False
            allocated[head] = ids.size
            held[head] = ids
            start[head] = now
            heapq.heappush(running, (now + float(durations[head]), head))
            head += 1
        if head >= sizes.size:
            break
        idle = int(free.sum())
        busy = np.fromiter(held, dtype=np.int64, count=len(held))
        used = int(sizes[busy].sum())
        internal = int((allocated[busy] - sizes[busy]).sum())
        fits = int(sizes[head]) <= idle
        states.append((now, used, internal, idle if fits else 0, 0 if fits else idle))
        end, job = heapq.heappop(running)
        now = end
        free[held.pop(job)] = True
    if not states:
        raise ValueError(
            "jobs: the whole queue fits on the cluster at once; ask for more (jobs.load above 1)"
        )
    times = np.array([s[0] for s in states] + [now])
    weight = np.diff(times)
    figures = np.array([s[1:] for s in states], dtype=np.float64)
    total = float(weight.sum())
    mean = (weight[:, None] * figures).sum(axis=0) / total if total > 0 else figures[0]
    middle = times[0] + 0.5 * (times[-1] - times[0])
    at = float(times[max(0, int(np.searchsorted(times[:-1], middle, side="right")) - 1)])
    return QueueRun(
        float(mean[0]),
        float(mean[1]),
        float(mean[2]),
        float(mean[3]),
        gpus,
        _snapshot(at, start, durations, sizes, hierarchy, rule, policy),
    )


def _snapshot(
    at: float,
    start: npt.NDArray[np.float64],
    durations: npt.NDArray[np.float64],
    sizes: IntArray,
    hierarchy: Hierarchy,
    rule: Rule,
    policy: Policy,
) -> Placement:
    """The jobs running at time ``at`` (started by then, not yet ended) as a ``Placement``.

    Replayed: placement is deterministic, so the jobs started before ``at`` are placed again in
    their order, each on the GPUs free once the jobs that ended before its start left.
    """
    began = np.flatnonzero(start <= at)
    end = start + durations
    free = np.ones(hierarchy.gpus, dtype=bool)
    job_of_gpu = np.full(hierarchy.gpus, IDLE, dtype=np.int64)
    allocated = np.zeros(began.size + 1, dtype=np.int64)
    span = np.full(began.size + 1, NOT_PLACED, dtype=np.int64)
    leaving = sorted((float(end[j]), int(j)) for j in began)
    gone = 0
    for j in began.tolist():
        while gone < len(leaving) and leaving[gone][0] <= start[j]:
            left = leaving[gone][1]
            free[job_of_gpu == left] = True
            job_of_gpu[job_of_gpu == left] = IDLE
            gone += 1
        ids = place(free, int(sizes[j]), hierarchy, rule, policy)
        assert ids is not None  # it was placed here before
        free[ids] = False
        job_of_gpu[ids] = j
        allocated[j] = ids.size
        span[j] = hierarchy.span_level(ids)
    for e, j in leaving[gone:]:
        if e <= at:
            job_of_gpu[job_of_gpu == j] = IDLE
            allocated[j], span[j] = 0, NOT_PLACED
    placed = np.zeros(began.size + 1, dtype=bool)
    placed[np.unique(job_of_gpu[job_of_gpu != IDLE])] = True
    allocated[~placed] = 0
    span[~placed] = NOT_PLACED
    return Placement(job_of_gpu, placed, allocated, span, sizes[: began.size + 1])
