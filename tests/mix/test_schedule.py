"""The queue over time against a reference written from its definition, on small clusters.

The reference places each job by brute force (first fit is the lexicographically smallest
feasible allocation, ``tests/models/test_placement.py`` checks ``place`` gives it) and keeps its
own event list; ``run_queue`` must give the same time-weighted GPU counts.
"""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np
import pytest

from models.placement import Hierarchy, Rule
from planner.mix.schedule import MEAN_DURATION, run_queue

REL = 1e-9


def _first_fit(
    free: list[bool], n: int, sizes: tuple[int, ...], level: int | None
) -> list[int] | None:
    """The lexicographically smallest allocation the rule allows (brute force)."""
    gpus = len(free)
    if level is None or n <= sizes[level]:
        for ids in itertools.combinations([g for g in range(gpus) if free[g]], n):
            if level is None or len({g // sizes[level] for g in ids}) == 1:
                return list(ids)
        return None
    d = sizes[level]
    whole = [k for k in range(gpus // d) if all(free[k * d : (k + 1) * d])]
    m = math.ceil(n / d)
    if len(whole) < m:
        return None
    return [g for k in whole[:m] for g in range(k * d, (k + 1) * d)]


def _reference(
    queue: list[int], sizes: tuple[int, ...], level: int | None, seed: int
) -> tuple[float, float, float, float]:
    """Time-weighted (used, internal, stranded, waiting) from the first wait to the last start."""
    gpus = sizes[-1]
    durations = np.random.default_rng(seed).exponential(MEAN_DURATION, len(queue))
    free = [True] * gpus
    held: dict[int, list[int]] = {}
    ends: list[tuple[float, int]] = []
    head, now, last = 0, 0.0, None
    totals = [0.0, 0.0, 0.0, 0.0]
    while head < len(queue):
        while head < len(queue):
            ids = _first_fit(free, queue[head], sizes, level)
            if ids is None:
                break
            for g in ids:
                free[g] = False
            held[head] = ids
            heapq.heappush(ends, (now + float(durations[head]), head))
            head += 1
        if head == len(queue):
            break
        idle = sum(free)
        state = (
            sum(queue[j] for j in held),
            sum(len(ids) - queue[j] for j, ids in held.items()),
            idle if queue[head] <= idle else 0,
            0 if queue[head] <= idle else idle,
        )
        end, job = heapq.heappop(ends)
        for k in range(4):
            totals[k] += state[k] * (end - now)
        last = last if last is not None else now
        now = end
        for g in held.pop(job):
            free[g] = True
    span = now - (last or 0.0)
    return (totals[0] / span, totals[1] / span, totals[2] / span, totals[3] / span)


CASES = [
    ((2, 4, 8), None),
    ((2, 4, 8), 0),
    ((4, 8, 16), 0),
    ((4, 8, 16), 1),
]


@pytest.mark.parametrize(("sizes", "level"), CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_first_fit_over_time_matches_the_reference(
    sizes: tuple[int, ...], level: int | None, seed: int
) -> None:
    rng = np.random.default_rng(100 + seed)
    queue = rng.choice([1, 2, 3, 4, 6], size=40).tolist()
    h = Hierarchy(tuple(f"l{k}" for k in range(len(sizes))), sizes)
    got = run_queue(queue, h, Rule(level), "first_fit", seed)
    want = _reference(queue, sizes, level, seed)
    assert (got.used_gpus, got.internal_gpus, got.stranded_gpus, got.waiting_gpus) == (
        pytest.approx(want[0], rel=REL),
        pytest.approx(want[1], rel=REL),
        pytest.approx(want[2], rel=REL),
        pytest.approx(want[3], rel=REL),
    )


def test_the_references_see_fragmentation_where_a_rule_binds() -> None:
    """The cases are not vacuous: a rule strands GPUs and holds whole domains; no rule never."""
    queue = np.random.default_rng(101).choice([1, 2, 3, 4, 6], size=40).tolist()
    with_rule = _reference(queue, (4, 8, 16), 0, 1)
    without = _reference(queue, (4, 8, 16), None, 1)
    assert with_rule[1] > 0
    assert with_rule[2] > 0
    assert without[1] == 0
    assert without[2] == 0


@pytest.mark.parametrize("policy", ["pack", "first_fit"])
def test_the_snapshot_holds_the_jobs_running_at_its_time(policy: str) -> None:
    queue = np.random.default_rng(5).choice([1, 2, 4, 8, 16], size=300).tolist()
    h = Hierarchy(("node", "leaf", "cluster"), (8, 32, 128))
    run = run_queue(queue, h, Rule(0), policy, 3)  # type: ignore[arg-type]
    snap = run.snapshot
    held = np.bincount(snap.job_of_gpu[snap.job_of_gpu >= 0], minlength=snap.sizes_gpus.size)
    assert np.array_equal(held, snap.allocated_gpus)
    assert np.all(snap.allocated_gpus[snap.placed] >= snap.sizes_gpus[snap.placed])
    assert snap.placed.sum() > 5
    for j in np.flatnonzero(snap.placed):
        assert h.span_level(np.flatnonzero(snap.job_of_gpu == j)) == snap.span_level[j]


def test_a_queue_that_fits_at_once_is_refused() -> None:
    h = Hierarchy(("node", "cluster"), (8, 64))
    with pytest.raises(ValueError, match="fits on the cluster at once"):
        run_queue([8, 8], h, Rule(), "pack")
