"""Spreading a block topology over spines: validator, brute force, closed forms."""

from __future__ import annotations

import itertools
import random

import pytest

from models import ocs_spread as sp
from models.ocs_topology import uniform_mesh
from models.status import Status


def brute_force_feasible(p: sp.SpreadProblem) -> bool:
    """Whether any choice of groups for every pair's extras fits every block's ports."""
    free = p.free_ports()
    if min(free) < 0:
        return False
    extras = sorted(p.extras().items())
    choices = [itertools.combinations(range(p.groups), r) for _, r in extras]
    for pick in itertools.product(*choices):
        used = [[0] * p.groups for _ in range(p.blocks)]
        for ((i, j), _), groups in zip(extras, pick, strict=True):
            for g in groups:
                used[i][g] += 1
                used[j][g] += 1
        if all(u <= free[b] for b in range(p.blocks) for u in used[b]):
            return True
    return False


def random_problem(rng: random.Random) -> sp.SpreadProblem:
    blocks = rng.randint(3, 4)
    groups = rng.randint(2, 3)
    ports = rng.randint(1, 3)
    circuits = []
    degree = [0] * blocks
    for i, j in itertools.combinations(range(blocks), 2):
        room = min(groups * ports - degree[i], groups * ports - degree[j])
        x = rng.randint(0, max(0, room))
        if x:
            circuits.append((i, j, x))
            degree[i] += x
            degree[j] += x
    return sp.SpreadProblem(blocks, groups, ports, tuple(circuits))


@pytest.mark.parametrize("seed", range(60))
def test_spread_agrees_with_brute_force(seed: int) -> None:
    p = random_problem(random.Random(seed))
    result = sp.spread(p)
    if brute_force_feasible(p):
        assert result.status is Status.OPTIMAL
        assert sp.check_spread(p, result) == []
    else:
        assert result.status is Status.INFEASIBLE
        assert result.groups == ()


def test_an_odd_cycle_cannot_be_spread_over_two_spines() -> None:
    p = sp.SpreadProblem(3, 2, 1, ((0, 1, 1), (0, 2, 1), (1, 2, 1)))
    assert sp.spread(p).status is Status.INFEASIBLE
    assert not brute_force_feasible(p)


def test_cp_sat_places_what_greedy_cannot() -> None:
    """Some instance in the random family defeats the greedy start; the model still spreads it."""
    rng = random.Random(7)
    for _ in range(2000):
        p = random_problem(rng)
        if not sp.complete(p, sp.greedy(p)) and brute_force_feasible(p):
            result = sp.spread(p)
            assert result.status is Status.OPTIMAL
            assert sp.check_spread(p, result) == []
            return
    pytest.fail("no instance where the greedy start falls short")


@pytest.mark.parametrize(
    ("blocks", "spines", "ports"), [(4, 16, 32), (8, 32, 32), (16, 8, 8), (32, 16, 4)]
)
def test_uniform_meshes_spread_evenly(blocks: int, spines: int, ports: int) -> None:
    """The balanced mesh of full blocks spreads with every pair at floor / ceil per spine."""
    mesh = uniform_mesh(blocks, spines * ports)
    p = sp.SpreadProblem(blocks, spines, ports, mesh)
    result = sp.spread(p)
    assert result.status is Status.OPTIMAL
    assert sp.check_spread(p, result) == []
    assert sp.uneven_pairs(result) == 0


#: Share of block pairs a large spread may leave uneven.
MAX_UNEVEN_SHARE = 0.01


@pytest.mark.parametrize(
    ("blocks", "spines", "ports"), [(64, 16, 8), (64, 64, 2), (64, 16, 16), (128, 32, 8)]
)
def test_large_meshes_spread_validly_and_nearly_evenly(
    blocks: int, spines: int, ports: int
) -> None:
    """Beyond the exact model: every circuit placed within the ports, few pairs uneven."""
    mesh = uniform_mesh(blocks, spines * ports)
    p = sp.SpreadProblem(blocks, spines, ports, mesh)
    assert len(p.extras()) * spines > sp.MAX_MODEL_VARIABLES
    result = sp.spread(p)
    assert result.status.has_solution
    assert sp.check_spread(p, result) == []
    assert sp.uneven_pairs(result) <= MAX_UNEVEN_SHARE * len(mesh)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda g: ((g[0][0][0], g[0][0][1], g[0][0][2] + 1), *g[0][1:]), "circuits, expected"),
        (lambda g: ((g[0][0][0], g[0][0][1], g[0][0][2] + 9), *g[0][1:]), "uses"),
    ],
)
def test_the_validator_rejects_broken_splits(change, message: str) -> None:  # type: ignore[no-untyped-def]
    p = sp.SpreadProblem(4, 2, 4, uniform_mesh(4, 8))
    good = sp.spread(p)
    assert sp.check_spread(p, good) == []
    broken = sp.Spread(good.status, (change(good.groups), *good.groups[1:]), good.wall_s)
    assert any(message in problem for problem in sp.check_spread(p, broken))


def test_the_validator_rejects_an_uneven_split() -> None:
    p = sp.SpreadProblem(2, 2, 4, ((0, 1, 4),))
    uneven = sp.Spread(Status.OPTIMAL, (((0, 1, 3),), ((0, 1, 1),)), 0.0)
    assert any("uneven" in problem for problem in sp.check_spread(p, uneven))
