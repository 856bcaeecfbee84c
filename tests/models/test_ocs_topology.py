"""OCS topology engineering: closed forms, brute force and an independent LP.

The oracle is a different formulation in a different solver wrapper: an edge-based multi-commodity
max-concurrent-flow, one commodity per *source*, on a layered graph with a 2-hop limit (hop-1 arc
flows, hop-2 arc flows, conservation at the middle layer), solved by ``scipy.optimize.linprog``.
With x continuous and degree rows it gives the LP relaxation bound.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest
from scipy import sparse
from scipy.optimize import linprog

from models.ocs_topology import (
    CONSTRAINTS,
    Instance,
    Topology,
    TopologyProblem,
    build,
    build_path,
    circuit_matrix,
    circuits_needed,
    circuits_of,
    circulant_matrix,
    demand_matrix,
    evaluate,
    hose_bound,
    integer_capacity_bound,
    is_cyclic,
    no_transit_optimum,
    pair_weight,
    path_lp,
    solve,
    throughput_scale,
    uniform_mesh,
    usable_circuits,
)
from models.status import Status

#: Agreement between two exact LP values.
LP_REL = 1e-6
#: "Within 1%" of the continuous-x bound (uniform demand with a small integrality effect).
NEAR_REL = 0.01
#: The engineered topology must beat the uniform mesh by at least this share on skewed demand.
MIN_MARGIN = 0.05


# --- the independent oracle -----------------------------------------------------------------------


def oracle(
    d: np.ndarray,
    c: float = 1.0,
    x: np.ndarray | None = None,
    uplinks: np.ndarray | None = None,
    transit: bool = True,
) -> float:
    """Max theta, edge-based and source-aggregated, with x fixed or (uplinks) continuous."""
    n = d.shape[0]
    names: dict[tuple, int] = {("theta",): 0}

    def var(*key: object) -> int:
        return names.setdefault(key, len(names))

    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    if x is None:
        for a, b in pairs:
            var("x", a, b)
    for s in range(n):
        for v in range(n):
            if v != s:
                var("hop1", s, v)
                var("end1", s, v)
    if transit:
        for s, u, v in itertools.permutations(range(n), 3):
            var("hop2", s, u, v)
    eq_rows: list[dict[int, float]] = []
    ub_rows: list[tuple[dict[int, float], float]] = []
    for s in range(n):
        for u in range(n):
            if u == s:
                continue
            # conservation at the middle layer: hop1 = delivered there + sent on
            row = {var("hop1", s, u): 1.0, var("end1", s, u): -1.0}
            if transit:
                for v in range(n):
                    if v not in (s, u):
                        row[var("hop2", s, u, v)] = -1.0
            eq_rows.append(row)
            # delivery: theta D_su <= delivered after hop 1 + arriving on hop 2
            row = {0: float(d[s, u]), var("end1", s, u): -1.0}
            if transit:
                for w in range(n):
                    if w not in (s, u):
                        row[var("hop2", s, w, u)] = -1.0
            ub_rows.append((row, 0.0))
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            row = {var("hop1", a, b): 1.0}
            if transit:
                for s in range(n):
                    if s not in (a, b):
                        row[var("hop2", s, a, b)] = 1.0
            if x is None:
                row[var("x", min(a, b), max(a, b))] = -c
                ub_rows.append((row, 0.0))
            else:
                ub_rows.append((row, c * float(x[a, b])))
    if x is None:
        assert uplinks is not None
        for a in range(n):
            row = {var("x", min(a, b), max(a, b)): 1.0 for b in range(n) if b != a}
            ub_rows.append((row, float(uplinks[a])))

    def matrix(rows: list[dict[int, float]]) -> sparse.csr_matrix:
        r = [i for i, row in enumerate(rows) for _ in row]
        k = [j for row in rows for j in row]
        v = [val for row in rows for val in row.values()]
        return sparse.csr_matrix((v, (r, k)), shape=(len(rows), len(names)))

    cost = np.zeros(len(names))
    cost[0] = -1.0
    res = linprog(
        cost,
        A_ub=matrix([row for row, _ in ub_rows]),
        b_ub=np.array([rhs for _, rhs in ub_rows]),
        A_eq=matrix(eq_rows),
        b_eq=np.zeros(len(eq_rows)),
        bounds=(0, None),
        method="highs",
    )
    assert res.status == 0, res.message
    return float(-res.fun)


def maximal_topologies(uplinks: tuple[int, ...]) -> Iterator[np.ndarray]:
    """Every integer x within the degrees to which no circuit can be added (theta is monotone)."""
    n = len(uplinks)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]

    def rec(k: int, x: np.ndarray, free: list[int]) -> Iterator[np.ndarray]:
        if k == len(pairs):
            if not any(free[a] > 0 and free[b] > 0 for a, b in pairs):
                yield x.copy()
            return
        a, b = pairs[k]
        for m in range(min(free[a], free[b]) + 1):
            x[a, b] = x[b, a] = m
            free[a] -= m
            free[b] -= m
            yield from rec(k + 1, x, free)
            free[a] += m
            free[b] += m
        x[a, b] = x[b, a] = 0

    yield from rec(0, np.zeros((n, n), dtype=np.int64), list(uplinks))


# --- helpers --------------------------------------------------------------------------------------


def degree_violations(
    problem: TopologyProblem, circuits: tuple[tuple[int, int, int], ...]
) -> list[str]:
    """Independent check of a returned topology: pairs, symmetry, zero diagonal, degrees."""
    issues = []
    seen = set()
    for i, j, k in circuits:
        if not 0 <= i < j < problem.blocks:
            issues.append(f"pair {(i, j)} not i < j within range")
        if k <= 0:
            issues.append(f"pair {(i, j)} lists {k} circuits")
        if (i, j) in seen:
            issues.append(f"pair {(i, j)} listed twice")
        seen.add((i, j))
    x = np.zeros((problem.blocks, problem.blocks), dtype=np.int64)
    for i, j, k in circuits:
        x[i, j] += k
        x[j, i] += k
    if not np.array_equal(x, x.T) or np.diag(x).any():
        issues.append("x not symmetric with a zero diagonal")
    for i, used in enumerate(x.sum(axis=1)):
        if used > problem.uplinks[i]:
            issues.append(f"block {i} uses {used} > {problem.uplinks[i]} uplinks")
    return issues


def hot_demand(n: int, pairs: list[tuple[int, int]], factor: float = 10.0) -> np.ndarray:
    d = np.ones((n, n)) - np.eye(n)
    for a, b in pairs:
        d[a, b] = d[b, a] = factor
    return d


def as_tuple(d: np.ndarray) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(v) for v in row) for row in d)


def normalised(d: np.ndarray, injection: npt.ArrayLike) -> np.ndarray:
    """D at the scale the model reports theta in (written out here, not the model's helper):
    k D off the diagonal, k = min_i I_i / max(row sum, column sum) over busy blocks."""
    inj = np.broadcast_to(np.asarray(injection, dtype=float), (d.shape[0],))
    sent, received = d.sum(axis=1), d.sum(axis=0)
    k = min(
        inj[i] / max(sent[i], received[i])
        for i in range(d.shape[0])
        if max(sent[i], received[i]) > 0 and inj[i] > 0
    )
    out = k * d
    np.fill_diagonal(out, 0.0)
    return out


def degrees(x: np.ndarray, c: float = 1.0) -> np.ndarray:
    """c times the circuits at every block: the injection ``throughput_scale`` assumes."""
    return c * x.sum(axis=1).astype(float)


def solved(problem: TopologyProblem, time_limit_s: float = 20.0) -> Topology:
    result = solve(build(problem), time_limit_s=time_limit_s)
    assert degree_violations(problem, result.circuits) == []
    assert result.theta <= result.bound * (1 + LP_REL)
    assert result.theta <= result.theta_upper * (1 + LP_REL)
    return result


# --- uniform demand -------------------------------------------------------------------------------

#: (n, U, theta within 1% of the continuous-x LP bound): (n-1) | U, or U >> n.
UNIFORM = [
    (4, 6, True),
    (5, 8, True),
    (7, 30, True),
    (8, 14, True),
    (10, 45, True),
    (6, 201, True),
    (7, 121, True),
    (6, 7, False),
    (5, 6, False),
    (8, 10, False),
]


@pytest.mark.parametrize(("n", "u", "near"), UNIFORM, ids=lambda v: str(v))
@pytest.mark.slow
def test_uniform_matches_independent_lp(n: int, u: int, near: bool) -> None:
    problem = TopologyProblem(n, (u,) * n)
    result = solved(problem, time_limit_s=3.0)
    d = normalised(demand_matrix(n, None), u)
    x = circuit_matrix(n, result.circuits)
    assert result.theta == pytest.approx(oracle(d, x=x), rel=LP_REL)
    continuous = oracle(d, uplinks=np.full(n, u))
    assert result.bound <= continuous * (1 + LP_REL)
    assert result.lp_bound == pytest.approx(continuous, rel=LP_REL)
    if near:
        assert result.theta >= continuous * (1 - NEAR_REL)


@pytest.mark.parametrize(("n", "u"), [(3, 4), (4, 6), (5, 8), (8, 14), (10, 45), (12, 33)])
def test_uniform_closed_form_when_n_minus_1_divides_u(n: int, u: int) -> None:
    """400 U / (n - 1) Gb/s per pair; each block injects 400 U, (n - 1) pairs' worth: 1.0."""
    result = solved(TopologyProblem(n, (u,) * n, circuit_gbps=400.0))
    assert result.status is Status.OPTIMAL
    assert result.theta == pytest.approx(1.0, rel=LP_REL)
    assert result.bound == pytest.approx(1.0, rel=LP_REL)
    assert {k for _, _, k in result.circuits} == {u // (n - 1)}


@pytest.mark.slow
@pytest.mark.parametrize(("n", "u"), [(16, 30), (24, 46)])
def test_uniform_closed_form_larger(n: int, u: int) -> None:
    result = solved(TopologyProblem(n, (u,) * n))
    assert result.theta == pytest.approx(1.0, rel=LP_REL)


@pytest.mark.slow
def test_uniform_64_blocks() -> None:
    """n = 64, U = 128: at least the mesh, within the integer capacity bound 250/124."""
    n, u = 64, 128
    result = solved(TopologyProblem(n, (u,) * n, even_ports_per_device=2), time_limit_s=30.0)
    assert result.wall_s < 30.0
    assert result.theta >= throughput_scale(n, uniform_mesh(n, u)) * (1 - LP_REL)
    assert result.bound == pytest.approx(250 / 124 * (n - 1) / u, rel=1e-6)
    assert result.lp_bound == pytest.approx(1.0, rel=1e-9)


# --- skewed demand --------------------------------------------------------------------------------

#: (n, U, 10x pairs, transit): one hot pair (0, 1) plus hot blocks 2..5 paired with each other.
SKEWED = [
    (8, 7, [(0, 1), (2, 3), (4, 5)], True),
    (8, 14, [(0, 1), (2, 3), (4, 5)], True),
    (6, 10, [(0, 1), (2, 3)], True),
    (10, 18, [(0, 1), (2, 3), (4, 5)], True),
    (8, 14, [(0, 1)], False),
    (6, 10, [(0, 1), (2, 3)], False),
]


@pytest.mark.parametrize(("n", "u", "hot", "transit"), SKEWED, ids=lambda v: str(v))
def test_skewed_beats_uniform_mesh(
    n: int, u: int, hot: list[tuple[int, int]], transit: bool
) -> None:
    d = hot_demand(n, hot)
    problem = TopologyProblem(n, (u,) * n, demand=as_tuple(d), transit=transit)
    result = solved(problem)
    mesh = throughput_scale(
        n, uniform_mesh(n, u), as_tuple(d), transit=transit, injection_gbps=(float(u),) * n
    )
    assert result.theta > mesh * (1 + MIN_MARGIN)
    assert result.theta <= result.bound * (1 + LP_REL)
    x = circuit_matrix(n, result.circuits)
    dn = normalised(d, u)
    assert result.theta == pytest.approx(oracle(dn, x=x, transit=transit), rel=LP_REL)
    assert mesh == pytest.approx(
        oracle(dn, x=circuit_matrix(n, uniform_mesh(n, u)), transit=transit), rel=LP_REL
    )


@pytest.mark.slow
def test_skewed_32_blocks_against_mesh() -> None:
    n, u = 32, 64
    d = hot_demand(n, [(2 * a, 2 * a + 1) for a in range(n // 2)])
    problem = TopologyProblem(n, (u,) * n, demand=as_tuple(d))
    result = solved(problem, time_limit_s=30.0)
    mesh = throughput_scale(n, uniform_mesh(n, u), as_tuple(d))
    assert result.theta > mesh * (1 + 0.01)
    assert result.bound <= hose_bound(np.full(n, u), normalised(d, u), 1.0) * (1 + LP_REL)


# --- brute force on tiny instances ----------------------------------------------------------------

UPLINKS = [
    (1, 1, 1),
    (2, 2, 2),
    (3, 3, 3),
    (1, 2, 3),
    (2, 3, 3),
    (3, 3, 3, 3),
    (2, 2, 2, 2),
    (1, 2, 3, 3),
]


def tiny_demand(n: int, kind: str) -> np.ndarray:
    d = np.ones((n, n)) - np.eye(n)
    if kind == "hot":
        d[0, 1] = d[1, 0] = 5.0
    elif kind == "asymmetric":
        d[0, 1], d[1, 0], d[2, 0] = 4.0, 0.5, 2.0
    return d


@pytest.mark.parametrize("transit", [True, False], ids=["transit", "direct"])
@pytest.mark.parametrize("kind", ["uniform", "hot", "asymmetric"])
@pytest.mark.parametrize("uplinks", UPLINKS, ids=str)
def test_brute_force(uplinks: tuple[int, ...], kind: str, transit: bool) -> None:
    n = len(uplinks)
    d = tiny_demand(n, kind)
    dn = normalised(d, uplinks)
    best = max(oracle(dn, x=x, transit=transit) for x in maximal_topologies(uplinks))
    problem = TopologyProblem(n, uplinks, demand=as_tuple(d), transit=transit)
    result = solved(problem)
    assert result.status is Status.OPTIMAL
    assert result.theta == pytest.approx(best, rel=LP_REL, abs=1e-9)
    assert result.bound >= best * (1 - LP_REL)
    assert result.lp_bound >= best * (1 - LP_REL)


@pytest.mark.parametrize("uplinks", UPLINKS, ids=str)
def test_integer_capacity_bound_is_valid(uplinks: tuple[int, ...]) -> None:
    n = len(uplinks)
    d = tiny_demand(n, "hot")
    u = np.array(uplinks)
    best = max(oracle(d, x=x) for x in maximal_topologies(uplinks))
    assert integer_capacity_bound(u, d, 1.0, hose_bound(u, d, 1.0)) >= best * (1 - LP_REL)


# --- degrees --------------------------------------------------------------------------------------

DEGREE_CASES = [
    TopologyProblem(5, (4, 4, 4, 4, 4)),
    TopologyProblem(5, (1, 5, 2, 7, 3)),
    TopologyProblem(6, (9, 9, 9, 9, 9, 9), demand=as_tuple(hot_demand(6, [(0, 1)]))),
    TopologyProblem(7, (6, 6, 6, 6, 6, 6, 5), transit=False),
    TopologyProblem(2, (5, 3)),
    TopologyProblem(4, (0, 3, 3, 3)),
]


@pytest.mark.parametrize("problem", DEGREE_CASES, ids=lambda p: f"{p.blocks}-{p.uplinks}")
def test_degrees_symmetry_and_diagonal(problem: TopologyProblem) -> None:
    result = solve(build(problem), time_limit_s=10.0)
    assert result.status.has_solution
    assert degree_violations(problem, result.circuits) == []


@pytest.mark.parametrize(("n", "u"), [(2, 3), (3, 5), (6, 7), (6, 8), (7, 9), (8, 21), (9, 9)])
def test_uniform_mesh_spreads_the_remainder(n: int, u: int) -> None:
    x = circuit_matrix(n, uniform_mesh(n, u))
    q = u // (n - 1)
    assert degree_violations(TopologyProblem(n, (u,) * n), uniform_mesh(n, u)) == []
    off = ~np.eye(n, dtype=bool)
    assert x[off].min() >= q
    assert x[off].max() <= q + 1
    assert (u - x.sum(axis=1)).sum() <= 1  # every uplink used, but one when n and U are odd
    if (n * u) % 2 == 0:
        assert is_cyclic(x)


# --- without transit ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 5, 8])
def test_missing_pair_without_transit_is_zero(n: int) -> None:
    x = circuit_matrix(n, uniform_mesh(n, 2 * (n - 1)))
    x[0, 1] = x[1, 0] = 0
    circuits = circuits_of(x)
    d = np.zeros((n, n))
    d[0, 1] = 1.0
    assert throughput_scale(n, circuits, as_tuple(d), transit=False) == 0.0
    assert throughput_scale(n, circuits, as_tuple(d), transit=True) == pytest.approx(
        oracle(normalised(d, degrees(x)), x=x), rel=LP_REL
    )
    assert throughput_scale(n, circuits, as_tuple(d), transit=True) > 0.0


@pytest.mark.parametrize("seed", range(4))
def test_without_transit_closed_form(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 5
    x = rng.integers(1, 4, size=(n, n))
    x = np.triu(x, 1) + np.triu(x, 1).T
    d = rng.uniform(0.5, 3.0, size=(n, n)) * (1 - np.eye(n))
    dn = normalised(d, degrees(x, 2.0))
    expected = min(2.0 * x[i, j] / dn[i, j] for i in range(n) for j in range(n) if i != j)
    got = throughput_scale(n, circuits_of(x), as_tuple(d), circuit_gbps=2.0, transit=False)
    assert got == pytest.approx(expected, rel=1e-12)
    assert got == pytest.approx(oracle(dn, c=2.0, x=x, transit=False), rel=LP_REL)


def test_no_transit_optimum_is_exact() -> None:
    """Hot pair 10x, U = 14 at n = 8: the best is theta = 0.8 (8 circuits on the hot pair)."""
    n, u = 8, 14
    d = hot_demand(n, [(0, 1)])
    theta, x = no_transit_optimum(np.full(n, u), pair_weight(d), 1.0)
    assert theta == pytest.approx(0.8)
    assert x[0, 1] >= 8


# --- spine granularity (direct paths) -------------------------------------------------------------


def sprayed(x: int, spines: int) -> int:
    """Circuits' worth a leaf's spray gets from x circuits spread floor / ceil over the spines.

    Written from the mechanism: the leaf splits evenly over the spines that have a circuit to the
    other block, so the one with the fewest circuits sets the pace for all of them.
    """
    per_spine = [x // spines + (1 if g < x % spines else 0) for g in range(spines)]
    used = [k for k in per_spine if k > 0]
    return len(used) * min(used) if used else 0


@pytest.mark.parametrize("spines", [1, 2, 3, 4, 8])
def test_usable_circuits_are_what_a_spray_over_the_spines_gets(spines: int) -> None:
    xs = list(range(5 * spines + 3))
    assert usable_circuits(np.array(xs), spines).tolist() == [sprayed(x, spines) for x in xs]
    for level in range(4 * spines):  # circuits_needed: the fewest circuits reaching the level
        need = int(circuits_needed(level, spines))
        assert sprayed(need, spines) >= level
        assert need == 0 or sprayed(need - 1, spines) < level


#: (uplinks, spines, demand kind): small enough to enumerate every maximal topology.
SPINE_CASES = [
    ((6, 6, 6), 2, "hot"),
    ((6, 6, 6), 4, "uniform"),
    ((8, 6, 7, 8), 2, "asymmetric"),
    ((6, 6, 6, 6), 3, "hot"),
    ((8, 8, 8, 8), 4, "hot"),
]


@pytest.mark.parametrize(("uplinks", "spines", "kind"), SPINE_CASES, ids=str)
def test_brute_force_with_spines(uplinks: tuple[int, ...], spines: int, kind: str) -> None:
    """Without transit, theta = min over pairs with demand of c sprayed(x_ij) / D^_ij."""
    n = len(uplinks)
    d = tiny_demand(n, kind)
    dn = normalised(d, uplinks)
    pairs = [(i, j) for i in range(n) for j in range(n) if dn[i, j] > 0]
    best = max(
        min(sprayed(int(x[i, j]), spines) / dn[i, j] for i, j in pairs)
        for x in maximal_topologies(uplinks)
    )
    problem = TopologyProblem(n, uplinks, demand=as_tuple(d), transit=False, spines=spines)
    result = solved(problem)
    assert result.status is Status.OPTIMAL
    assert result.theta == pytest.approx(best, rel=LP_REL)
    assert result.bound == pytest.approx(best, rel=LP_REL)
    assert result.mesh_theta is not None
    assert result.mesh_theta <= result.theta * (1 + LP_REL)


@pytest.mark.parametrize("spines", [2, 4, 8])
@pytest.mark.parametrize("seed", range(4))
def test_engineered_is_never_below_the_uniform_mesh(seed: int, spines: int) -> None:
    """Random permutations of GPUs, counted per block pair: the demand of issue 9's case."""
    rng = np.random.default_rng(400 + seed)
    n, gpus_per_block = 8, 8 * spines
    perm = rng.permutation(n * gpus_per_block)
    blocks = np.arange(n * gpus_per_block) // gpus_per_block
    d = np.zeros((n, n))
    np.add.at(d, (blocks, blocks[perm]), 1.0)
    u, inj = gpus_per_block, (float(gpus_per_block),) * n
    problem = TopologyProblem(
        n, (u,) * n, demand=as_tuple(d), transit=False, spines=spines, injection_gbps=inj
    )
    result = solved(problem)
    mesh = throughput_scale(
        n, uniform_mesh(n, u), as_tuple(d), transit=False, spines=spines, injection_gbps=inj
    )
    assert result.mesh_theta == pytest.approx(mesh, rel=LP_REL)
    assert result.theta >= mesh * (1 - LP_REL)
    assert result.theta <= 1.0 + LP_REL  # a fraction of ideal: no block beats its NICs


@pytest.mark.parametrize("transit", [True, False], ids=["transit", "direct"])
@pytest.mark.parametrize("unit", [1e-6, 8.0, 1e6, 2.0**28])
def test_theta_does_not_depend_on_the_demand_unit(unit: float, transit: bool) -> None:
    """Bytes, bits or flows: the same fraction of ideal (issue 9: 1e-6 values, and transit
    below direct-only with the demand in bytes)."""
    n, u = 6, 10
    d = hot_demand(n, [(0, 1), (2, 3)], factor=4.0)
    mesh = uniform_mesh(n, u)
    base = throughput_scale(n, mesh, as_tuple(d), circuit_gbps=400.0, transit=transit)
    scaled = throughput_scale(n, mesh, as_tuple(unit * d), circuit_gbps=400.0, transit=transit)
    assert scaled == pytest.approx(base, rel=LP_REL)
    direct = throughput_scale(n, mesh, as_tuple(unit * d), circuit_gbps=400.0, transit=False)
    assert scaled >= direct * (1 - LP_REL)  # transit paths only add to the direct ones
    assert 0.1 < scaled <= 1.0 + LP_REL
    problem = TopologyProblem(n, (u,) * n, demand=as_tuple(unit * d), circuit_gbps=400.0)
    assert solved(replace(problem, transit=transit)).theta == pytest.approx(
        solved(replace(problem, demand=as_tuple(d), transit=transit)).theta, rel=LP_REL
    )


def test_the_diagonal_only_sets_the_scale() -> None:
    """Traffic inside a block uses no circuit; it counts towards what the block injects."""
    n, u = 4, 6
    d = np.ones((n, n)) - np.eye(n)
    inside = d + 3.0 * np.eye(n)  # each block keeps as much again inside as it sends out
    a = throughput_scale(n, uniform_mesh(n, u), as_tuple(d), transit=False)
    b = throughput_scale(n, uniform_mesh(n, u), as_tuple(inside), transit=False)
    assert a == pytest.approx(1.0, rel=LP_REL)
    assert b == pytest.approx(2.0, rel=LP_REL)  # ideal is half as fast: the circuits do 2x


# --- evaluation with x fixed ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_throughput_scale_matches_oracle_on_random_topologies(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(4, 8))
    x = rng.integers(0, 4, size=(n, n))
    x = np.triu(x, 1) + np.triu(x, 1).T
    d = rng.uniform(0.0, 3.0, size=(n, n)) * (rng.random((n, n)) < 0.7) * (1 - np.eye(n))
    d[0, 1] = max(d[0, 1], 1.0)
    got = throughput_scale(n, circuits_of(x), as_tuple(d))
    assert got == pytest.approx(oracle(normalised(d, degrees(x)), x=x), rel=LP_REL, abs=1e-12)


@pytest.mark.parametrize(
    ("n", "y"),
    [(6, {1: 2, 2: 1}), (7, {1: 1, 3: 2}), (8, {1: 1, 2: 2, 4: 1}), (10, {1: 3, 4: 1, 5: 1})],
)
@pytest.mark.parametrize("kind", ["uniform", "ring"])
def test_circulant_quotient_equals_full_lp(n: int, y: dict[int, int], kind: str) -> None:
    x = circulant_matrix(n, y)
    d = np.ones((n, n)) - np.eye(n)
    if kind == "ring":
        d = d + 3.0 * np.roll(np.eye(n), 1, axis=1)
    assert is_cyclic(x)
    assert is_cyclic(d)
    quotient = evaluate(x, d, 1.0)
    full = path_lp(d, 1.0, capacity=x.astype(float))
    assert quotient.theta == pytest.approx(oracle(d, x=x), rel=LP_REL)
    assert full.lower == pytest.approx(quotient.theta, rel=LP_REL)
    assert full.converged


@pytest.mark.parametrize("seed", range(3))
def test_design_lp_farley_bound_on_asymmetric_demand(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    n = 6
    d = rng.uniform(0.0, 4.0, size=(n, n)) * (1 - np.eye(n))
    u = rng.integers(3, 9, size=n)
    lp = path_lp(d, 1.0, uplinks=u.astype(float))
    continuous = oracle(d, uplinks=u)
    assert lp.converged
    assert lp.upper >= continuous * (1 - LP_REL)
    assert lp.upper == pytest.approx(continuous, rel=1e-5)


# --- the path model's families, without solving ---------------------------------------------------


def family_row(name: str) -> tuple[dict[str, float], int, float]:
    problem = TopologyProblem(
        3, (2, 3, 4), demand=((0, 1, 2), (1, 0, 0), (3, 1, 0)), circuit_gbps=5.0
    )
    model, _ = build_path(Instance.of(problem))
    con = model.get_constraint_by_name(name)
    return {v.name: float(k) for v, k in con.items()}, con.sense, float(con.constant)


#: family -> (constraint name, coefficients, sense (1 >=, -1 <=), constant on the left side)
FAMILY_ROWS = {
    "demand.coverage": (
        "demand_coverage_2_0",
        {"f_2_0": 1.0, "t_2_1_0": 1.0, "theta": -7.5},  # D_20 = 3 scaled by k = 10 / 4
        1,
        0.0,
    ),
    "edge.capacity": (
        "edge_capacity_2_0",
        {"f_2_0": 1.0, "t_2_0_1": 1.0, "t_1_2_0": 1.0, "x_0_2": -5.0},
        -1,
        0.0,
    ),
    "block.degree": ("block_degree_1", {"x_0_1": 1.0, "x_1_2": 1.0}, -1, -3.0),
}


@pytest.mark.parametrize("family", sorted(FAMILY_ROWS))
def test_family_rows(family: str) -> None:
    name, coefficients, sense, constant = FAMILY_ROWS[family]
    got_coefficients, got_sense, got_constant = family_row(name)
    assert got_coefficients == coefficients
    assert (got_sense, got_constant) == (sense, constant)


def test_every_family_has_a_row_test() -> None:
    assert set(CONSTRAINTS) <= set(FAMILY_ROWS)


# --- metamorphic properties and inputs ------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_relabelling_blocks_keeps_theta(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    n = 5
    d = hot_demand(n, [(0, 1)], factor=4.0)
    u = tuple(int(v) for v in rng.integers(2, 6, size=n))
    perm = rng.permutation(n)
    a = solved(TopologyProblem(n, u, demand=as_tuple(d)))
    b = solved(
        TopologyProblem(n, tuple(u[i] for i in perm), demand=as_tuple(d[np.ix_(perm, perm)]))
    )
    assert a.status is Status.OPTIMAL
    assert b.status is Status.OPTIMAL
    assert a.theta == pytest.approx(b.theta, rel=LP_REL)


@pytest.mark.parametrize("extra", [1, 2, 5])
def test_more_uplinks_never_hurt(extra: int) -> None:
    n = 5
    d = hot_demand(n, [(0, 1), (2, 3)], factor=3.0)
    inj = (4.0,) * n  # the same ideal for both: more uplinks, the same GPUs
    base = solved(TopologyProblem(n, (4,) * n, demand=as_tuple(d), injection_gbps=inj))
    more = solved(TopologyProblem(n, (4 + extra,) * n, demand=as_tuple(d), injection_gbps=inj))
    assert more.theta >= base.theta * (1 - LP_REL)


@pytest.mark.slow
def test_tiny_time_limit_still_returns_a_valid_topology() -> None:
    problem = TopologyProblem(
        12, (11,) * 12, demand=as_tuple(hot_demand(12, [(2 * a, 2 * a + 1) for a in range(6)]))
    )
    result = solve(build(problem), time_limit_s=0.5)
    assert degree_violations(problem, result.circuits) == []
    assert result.status in (Status.FEASIBLE, Status.OPTIMAL, Status.TIME_LIMIT)
    assert result.theta <= result.bound * (1 + LP_REL)


def test_even_ports_per_device_gives_the_device_count() -> None:
    assert TopologyProblem(64, (128,) * 64, even_ports_per_device=2).devices == 64
    assert TopologyProblem(4, (3,) * 4).devices is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"blocks": 1, "uplinks": (3,)}, "at least 2 blocks"),
        ({"blocks": 3, "uplinks": (3, 3)}, "one non-negative count"),
        ({"blocks": 3, "uplinks": (3, -1, 3)}, "one non-negative count"),
        ({"blocks": 2, "uplinks": (3, 3), "demand": ((0, -1), (1, 0))}, "non-negative"),
        ({"blocks": 2, "uplinks": (3, 3), "demand": ((1, 0), (0, 0))}, "off its diagonal"),
        ({"blocks": 2, "uplinks": (3, 3), "demand": ((0, 0), (0, 0))}, "no positive entry"),
        ({"blocks": 2, "uplinks": (3, 3), "spines": 0}, "at least 1"),
        ({"blocks": 2, "uplinks": (3, 3), "spines": 2}, "direct paths only"),
        ({"blocks": 2, "uplinks": (3, 3), "injection_gbps": (1.0,)}, "one positive rate"),
        ({"blocks": 2, "uplinks": (3, 3), "injection_gbps": (1.0, 0.0)}, "one positive rate"),
        ({"blocks": 2, "uplinks": (3, 3), "demand": ((0, 1, 0), (1, 0, 0))}, "must be 2 x 2"),
        ({"blocks": 2, "uplinks": (3, 3), "circuit_gbps": 0.0}, "must be positive"),
        ({"blocks": 2, "uplinks": (6, 6), "even_ports_per_device": 3}, "positive and even"),
        ({"blocks": 2, "uplinks": (6, 4), "even_ports_per_device": 2}, "U = m p"),
        ({"blocks": 2, "uplinks": (6, 6), "even_ports_per_device": 4}, "U = m p"),
    ],
    ids=lambda v: str(v),
)
def test_bad_problems_are_rejected(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TopologyProblem(**kwargs)


def test_bound_is_finite_and_gap_reported() -> None:
    result = solved(TopologyProblem(6, (7,) * 6), time_limit_s=10.0)
    assert math.isfinite(result.bound)
    assert 0.0 <= result.gap < 0.2
