"""Benchmark: OCS circuit assignment at 64 blocks x 64 OCS, from scratch and after a failure.

Run: ``uv run python tests/bench/bench_ocs_assignment.py [re-solve time limit s]``.
Each block has 128 uplinks, 2 ports on each of 64 OCS. Two logical topologies: uniform
(x_ij = 2 for every pair: 126 of 128 ports) and skewed (every pair one circuit plus a gravity
model, x_ij = 1 + floor(c w_i w_j) with log-normal weights w, c as large as 128 uplinks allow). Steps: assign from
scratch; fail the busiest OCS and re-solve with the fewest changes; the same with every surviving
circuit kept (``keep_surviving``); fail one block. Targets: from scratch a few seconds (30 s with
topology engineering), re-solve <= 5 s. Churn LB = F + R - S (lost circuits + circuits realised
beyond the survivors) is the least churn any assignment realising R can have. Timings are
reported, never asserted; not part of the test run.
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections import Counter
from dataclasses import replace

from models import ocs_assignment as oa
from models.ocs_assignment import Assignment, AssignmentProblem

BLOCKS = 64
DEVICES = 64
PORTS_PER_DEVICE = 2
SCRATCH_TIME_LIMIT_S = 30.0
RESOLVE_TIME_LIMIT_S = 3.0


def uniform() -> tuple[tuple[int, int, int], ...]:
    return tuple((i, j, 2) for i in range(BLOCKS) for j in range(i + 1, BLOCKS))


def skewed(seed: int = 0) -> tuple[tuple[int, int, int], ...]:
    """x_ij = 1 + floor(c w_i w_j), c as large as the busiest block's uplinks allow."""
    rng = random.Random(seed)
    w = [math.exp(rng.gauss(0.0, 0.8)) for _ in range(BLOCKS)]
    uplinks = PORTS_PER_DEVICE * DEVICES

    def x(c: float) -> dict[tuple[int, int], int]:
        return {
            (i, j): 1 + math.floor(c * w[i] * w[j])
            for i in range(BLOCKS)
            for j in range(i + 1, BLOCKS)
        }

    def fits(c: float) -> bool:
        degree: Counter[int] = Counter()
        for (i, j), k in x(c).items():
            degree[i] += k
            degree[j] += k
        return max(degree.values()) <= uplinks

    lo, hi = 0.0, 1.0
    while fits(hi):
        hi *= 2
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return tuple((i, j, k) for (i, j), k in sorted(x(lo).items()) if k)


def timed(problem: AssignmentProblem, time_limit_s: float) -> tuple[Assignment, float, float]:
    start = time.perf_counter()
    built = oa.build(problem)
    build_s = time.perf_counter() - start
    result = oa.solve(built, time_limit_s=time_limit_s)
    return result, build_s, time.perf_counter() - start - build_s


def churn_bound(problem: AssignmentProblem, realised: int) -> int:
    """F + R - S: circuits lost to failures plus circuits realised beyond the survivors."""
    surviving = sum(y for i, j, o, y in problem.current if problem.is_live(i, j, o))
    lost = sum(y for _, _, _, y in problem.current) - surviving
    return lost + max(0, realised - surviving)


def row(
    name: str,
    step: str,
    problem: AssignmentProblem,
    result: Assignment,
    build_s: float,
    solve_s: float,
) -> str:
    valid = "yes" if not oa.validate_assignment(problem, result) else "NO"
    bound = churn_bound(problem, result.realised) if problem.current else 0
    return (
        f"{name:>8} {step:<22} {result.status.value:>10} {result.realised:>5}/{result.requested:<5}"
        f" {result.removed:>7} {result.added:>6} {bound:>6} {valid:>6}"
        f" {build_s:7.2f} {solve_s:7.2f} {build_s + solve_s:7.2f}"
    )


def main() -> int:
    resolve_limit = float(sys.argv[1]) if len(sys.argv) > 1 else RESOLVE_TIME_LIMIT_S
    ports = tuple((PORTS_PER_DEVICE,) * DEVICES for _ in range(BLOCKS))
    print(
        f"{BLOCKS} blocks, {DEVICES} OCS, {PORTS_PER_DEVICE} ports per block and OCS; "
        f"re-solve time limit {resolve_limit:g} s"
    )
    print(
        f"{'x':>8} {'step':<22} {'status':>10} {'realised':>11} {'removed':>7} {'added':>6}"
        f" {'LB':>6} {'valid':>6} {'build s':>7} {'solve s':>7} {'total s':>7}"
    )
    for name, circuits in (("uniform", uniform()), ("skewed", skewed())):
        problem = AssignmentProblem(BLOCKS, DEVICES, ports, circuits)
        first, build_s, solve_s = timed(problem, SCRATCH_TIME_LIMIT_S)
        print(row(name, "from scratch", problem, first, build_s, solve_s))
        if not first.status.has_solution:
            continue
        load: Counter[int] = Counter()
        for _, _, o, y in first.circuits:
            load[o] += y
        busiest = max(sorted(load), key=lambda o: load[o])
        in_service = replace(problem, current=first.circuits, min_churn=True)
        steps = (
            (f"OCS {busiest} fails", replace(in_service, failed_devices=frozenset({busiest}))),
            (
                f"OCS {busiest} fails, keep",
                replace(in_service, failed_devices=frozenset({busiest}), keep_surviving=True),
            ),
            ("block 0 fails", replace(in_service, failed_blocks=frozenset({0}))),
        )
        for step, again in steps:
            result, build_s, solve_s = timed(again, resolve_limit)
            print(row(name, step, again, result, build_s, solve_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
