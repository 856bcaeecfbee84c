"""OCS traffic engineering (``models.ocs_te``): hand optima, an independent LP, brute force.

The independent LP is written here from the package docstring with scipy's ``linprog`` over every
path (no column generation); the brute force walks a grid of splits on three blocks. The column
generation must meet both, certify what it reports, and keep its bound below it.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from scipy.optimize import linprog

from models import ocs_te
from models.status import Status

#: Agreement asked of two LP optima (relative).
LP_TOL = 1e-6


def full_lp(problem: ocs_te.TeProblem) -> float:
    """min u over every path of every pair, with the hedge, by scipy (independent of the package)."""
    n, x, d = problem.n, problem.circuits, problem.demand_gbps
    c, h = problem.capacity_gbps, problem.hedge_gbps
    want = d > 0
    if h > 0:
        reach = (x > 0) | ((x > 0).astype(int) @ (x > 0).astype(int) > 0)
        want = want | (reach & ~np.eye(n, dtype=bool))
    pairs = [(a, b) for a in range(n) for b in range(n) if want[a, b]]
    bundles = [(u, v) for u in range(n) for v in range(n) if x[u, v] > 0]
    bundle_of = {e: i for i, e in enumerate(bundles)}
    paths: list[tuple[int, list[int]]] = []  # (pair index, bundles on the path)
    for k, (a, b) in enumerate(pairs):
        if x[a, b] > 0:
            paths.append((k, [bundle_of[a, b]]))
        for t in range(n):
            if t not in (a, b) and x[a, t] > 0 and x[t, b] > 0:
                paths.append((k, [bundle_of[a, t], bundle_of[t, b]]))
    s0, m0, ncol = 1, 1 + len(paths), 1 + len(paths) + (len(bundles) if h > 0 else 0)
    cost = np.zeros(ncol)
    cost[0] = 1.0
    a_eq = np.zeros((len(pairs), ncol))
    a_ub_rows: list[np.ndarray] = []
    cap = [np.zeros(ncol) for _ in bundles]
    for j, (k, on) in enumerate(paths):
        a_eq[k, s0 + j] = 1.0
        a, b = pairs[k]
        for e in on:
            cap[e][s0 + j] += d[a, b]
            if h > 0:
                row = np.zeros(ncol)
                row[s0 + j], row[m0 + e] = 1.0, -1.0
                a_ub_rows.append(row)
    for e, (u, v) in enumerate(bundles):
        cap[e][0] = -c * x[u, v]
        if h > 0:
            cap[e][m0 + e] = h
    a_ub = np.array(cap + a_ub_rows) if cap or a_ub_rows else None
    b_ub = np.zeros(len(cap) + len(a_ub_rows)) if a_ub is not None else None
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.ones(len(pairs)), method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def random_problem(n: int, seed: int, hedge_gbps: float = 0.0) -> ocs_te.TeProblem:
    """A connected, uneven circuit matrix and a sparse, lumpy demand."""
    rng = np.random.default_rng(seed)
    x = np.triu(rng.integers(0, 4, size=(n, n)), 1)
    for a in range(n - 1):  # a path through every block
        x[a, a + 1] = max(x[a, a + 1], 1)
    x = x + x.T
    d = rng.exponential(100.0, size=(n, n)) * (rng.random((n, n)) < 0.6)
    np.fill_diagonal(d, 0.0)
    reach = (x > 0) | ((x > 0).astype(int) @ (x > 0).astype(int) > 0)
    d = np.where(reach, d, 0.0)
    return ocs_te.TeProblem(x, d, capacity_gbps=100.0, hedge_gbps=hedge_gbps)


def check_result(problem: ocs_te.TeProblem, result: ocs_te.TeResult) -> None:
    """What any solution must satisfy: shares sum to 1 per pair, u recomputes, loads recompute,
    the bound is below u."""
    s = result.splits
    n = problem.n
    total = np.zeros((n, n))
    np.add.at(total, (s.a, s.b), s.share)
    pa, pb = problem.pairs()
    np.testing.assert_allclose(total[pa, pb], 1.0, atol=1e-9)
    assert (s.share > 0).all()
    assert result.max_utilisation == pytest.approx(ocs_te.utilisation(problem, s), rel=1e-12)
    loads = np.zeros((n, n))  # by hand, path by path
    for a, b, via, share in zip(s.a, s.b, s.via, s.share, strict=True):
        volume = problem.demand_gbps[a, b] * share
        if via == b:
            loads[a, b] += volume
        else:
            loads[a, via] += volume
            loads[via, b] += volume
    np.testing.assert_allclose(result.loads_gbps, loads, rtol=1e-12, atol=1e-9)
    assert result.lower_bound <= result.max_utilisation * (1 + 1e-9)


# --- hand optima -----------------------------------------------------------------------------------


def test_triangle_splits_half_over_transit() -> None:
    """Three blocks, one circuit each (100 Gb/s), 150 Gb/s from 0 to 1: half direct, half via 2,
    so every bundle on the way carries 75 Gb/s and u = 0.75."""
    x = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    d = np.zeros((3, 3))
    d[0, 1] = 150.0
    problem = ocs_te.TeProblem(x, d, capacity_gbps=100.0)
    result = ocs_te.solve(ocs_te.build(problem))
    assert result.status is Status.OPTIMAL
    assert result.max_utilisation == pytest.approx(0.75, rel=LP_TOL)
    assert result.direct_share == pytest.approx(0.5, abs=1e-6)
    assert result.mean_block_hops == pytest.approx(1.5, abs=1e-6)
    check_result(problem, result)


def test_no_direct_circuit_goes_all_transit() -> None:
    """A line 0 - 1 - 2 with 2 circuits per link: 0 -> 2 must go via 1, two block hops."""
    x = np.array([[0, 2, 0], [2, 0, 2], [0, 2, 0]])
    d = np.zeros((3, 3))
    d[0, 2] = 100.0
    problem = ocs_te.TeProblem(x, d, capacity_gbps=100.0)
    result = ocs_te.solve(ocs_te.build(problem))
    assert result.status is Status.OPTIMAL
    assert result.max_utilisation == pytest.approx(0.5, rel=LP_TOL)
    assert result.direct_share == 0.0
    assert result.mean_block_hops == pytest.approx(2.0)
    check_result(problem, result)


def test_uniform_mesh_stays_direct() -> None:
    """On a uniform mesh with uniform demand, direct routing is optimal: transit costs two
    bundles for one unit."""
    n = 6
    x = 2 * (1 - np.eye(n, dtype=int))
    d = 100.0 * (1 - np.eye(n))
    problem = ocs_te.TeProblem(x, d, capacity_gbps=100.0)
    result = ocs_te.solve(ocs_te.build(problem))
    assert result.status is Status.OPTIMAL
    assert result.max_utilisation == pytest.approx(0.5, rel=LP_TOL)
    assert result.direct_share == pytest.approx(1.0, abs=1e-6)


def test_hedge_on_triangle() -> None:
    """The triangle with h = 100: the pair's surge lands on the bundle of its largest share, so
    the LP balances 150 s + 100 max(s, 1 - s) over the three bundles, and with every other pair
    now holding shares too, the optimum is the scipy LP's."""
    x = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    d = np.zeros((3, 3))
    d[0, 1] = 150.0
    problem = ocs_te.TeProblem(x, d, capacity_gbps=100.0, hedge_gbps=100.0)
    result = ocs_te.solve(ocs_te.build(problem))
    assert result.status is Status.OPTIMAL
    # s = 1/2 puts 75 + 50 on 0 -> 1 and 0 -> 2: u = 1.25; any other split is worse.
    assert result.max_utilisation == pytest.approx(1.25, rel=LP_TOL)
    assert result.max_utilisation == pytest.approx(full_lp(problem), rel=LP_TOL)
    check_result(problem, result)


# --- against the independent LP and brute force --------------------------------------------------


@pytest.mark.parametrize(("n", "seed"), [(4, 0), (4, 1), (5, 2), (6, 3), (7, 4), (8, 5)])
@pytest.mark.parametrize("hedge_gbps", [0.0, 60.0])
def test_column_generation_meets_full_lp(n: int, seed: int, hedge_gbps: float) -> None:
    problem = random_problem(n, seed, hedge_gbps)
    expected = full_lp(problem)
    result = ocs_te.solve(ocs_te.build(problem))
    assert result.status is Status.OPTIMAL
    assert result.max_utilisation == pytest.approx(expected, rel=1e-5)
    full = ocs_te.solve(ocs_te.build(problem, all_transit_columns=True))
    assert full.max_utilisation == pytest.approx(expected, rel=1e-5)
    check_result(problem, result)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hedge_covers_any_one_surge(seed: int) -> None:
    """The hedge's meaning: any one pair sending h more than forecast, split the same way,
    leaves every bundle at or below c_e u."""
    problem = random_problem(5, seed, hedge_gbps=80.0)
    result = ocs_te.solve(ocs_te.build(problem))
    s = result.splits
    capacity = problem.capacity_gbps * problem.circuits
    pa, pb = problem.pairs()
    worst = 0.0
    for a, b in zip(pa, pb, strict=True):
        d = problem.demand_gbps.copy()
        d[a, b] += problem.hedge_gbps
        load = ocs_te.bundle_loads(problem.n, s.a, s.b, s.via, s.share, d)
        used = capacity > 0
        worst = max(worst, float((load[used] / capacity[used]).max()))
    assert worst <= result.max_utilisation * (1 + 1e-9)


def test_brute_force_grid_on_three_blocks() -> None:
    """Two pairs compete on a triangle with uneven circuits; a 1/200 grid over their splits
    finds nothing better than the LP, and something within a grid step of it."""
    x = np.array([[0, 3, 1], [3, 0, 2], [1, 2, 0]])
    d = np.zeros((3, 3))
    d[0, 1], d[0, 2], d[2, 1] = 500.0, 180.0, 90.0
    problem = ocs_te.TeProblem(x, d, capacity_gbps=100.0)
    result = ocs_te.solve(ocs_te.build(problem))
    # Loads are affine in each pair's direct share s: direct + (1 - s) (transit - direct).
    pairs, third = [(0, 1), (0, 2), (2, 1)], {(0, 1): 2, (0, 2): 1, (2, 1): 0}
    direct, transit = [], []
    for a, b in pairs:
        one = (np.array([a]), np.array([b]), np.array([1.0]))
        direct.append(ocs_te.bundle_loads(3, one[0], one[1], one[1], one[2], d).ravel())
        via = np.array([third[a, b]])
        transit.append(ocs_te.bundle_loads(3, one[0], one[1], via, one[2], d).ravel())
    capacity = (100.0 * x).ravel()
    used = capacity > 0
    grid = np.linspace(0.0, 1.0, 201)
    s1, s2 = np.meshgrid(grid, grid, indexing="ij")
    best = math.inf
    for s0 in grid:
        load = sum(
            (dk + np.multiply.outer(1.0 - s, tk - dk))
            for dk, tk, s in zip(direct, transit, (np.full_like(s1, s0), s1, s2), strict=True)
        )
        best = min(best, float((load[..., used] / capacity[used]).max(axis=-1).min()))
    assert result.max_utilisation <= best + 1e-9
    assert best - result.max_utilisation < 0.02


# --- edges -----------------------------------------------------------------------------------------


def test_pair_without_path_is_infeasible() -> None:
    x = np.zeros((4, 4), dtype=int)
    x[0, 1] = x[1, 0] = 1
    x[2, 3] = x[3, 2] = 1
    d = np.zeros((4, 4))
    d[0, 3] = 10.0
    result = ocs_te.solve(ocs_te.build(ocs_te.TeProblem(x, d, capacity_gbps=100.0)))
    assert result.status is Status.INFEASIBLE
    assert "0->3" in result.reason
    assert math.isinf(result.max_utilisation)


def test_passed_deadline_returns_the_starting_splits() -> None:
    problem = random_problem(6, 7)
    optimum = full_lp(problem)
    result = ocs_te.solve(ocs_te.build(problem), deadline=time.perf_counter() - 1.0)
    assert result.status is Status.FEASIBLE
    assert result.rounds == 0
    assert result.max_utilisation >= optimum * (1 - 1e-9)
    check_result(problem, result)


def test_no_demand_is_idle() -> None:
    x = 1 - np.eye(3, dtype=int)
    result = ocs_te.solve(ocs_te.build(ocs_te.TeProblem(x, np.zeros((3, 3)), capacity_gbps=1.0)))
    assert result.status is Status.OPTIMAL
    assert result.max_utilisation == 0.0
    assert result.direct_share == 1.0


@pytest.mark.parametrize(
    ("circuits", "demand", "capacity", "message"),
    [
        ([[0, 1], [2, 0]], [[0, 1], [1, 0]], 1.0, "symmetric"),
        ([[0, -1], [-1, 0]], [[0, 1], [1, 0]], 1.0, "non-negative"),
        ([[0, 0.5], [0.5, 0]], [[0, 1], [1, 0]], 1.0, "integers"),
        ([[1, 1], [1, 0]], [[0, 1], [1, 0]], 1.0, "zero diagonal"),
        ([[0, 1], [1, 0]], [[0, 1, 0], [1, 0, 0]], 1.0, "demand_gbps must be 2 x 2"),
        ([[0, 1], [1, 0]], [[0, math.nan], [1, 0]], 1.0, "finite"),
        ([[0, 1], [1, 0]], [[0, 1], [1, 0]], 0.0, "capacity_gbps"),
        ([[0]], [[0]], 1.0, "n >= 2"),
    ],
)
def test_problem_refuses_bad_data(
    circuits: list[list[float]], demand: list[list[float]], capacity: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ocs_te.TeProblem(np.array(circuits), np.array(demand), capacity_gbps=capacity)


def test_hose_bound_is_a_bound() -> None:
    for seed in range(5):
        problem = random_problem(6, seed)
        assert ocs_te.hose_bound(problem) <= full_lp(problem) * (1 + 1e-9)
