"""The uniform mesh placed whole (``models.ocs_assignment.mesh``): units, ports, counts, spread.

Every check here recounts from the rows alone (ports per block and device, circuits per pair and
per spine), and the assignment validator of ``models.ocs_assignment`` judges the same rows.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from models import ocs_assignment as oa
from models.status import Status

#: (blocks, spines, devices per spine, ports per block per device): even and odd block counts,
#: one spine, odd ports with an even block count, fewer uplinks than peers (q = 0), and the
#: layer of the 1,048,576-GPU bench instance (68 blocks, 121 spines of 64 devices, 2 ports).
LAYERS = [
    (2, 1, 1, 1),
    (4, 4, 1, 32),
    (5, 3, 2, 2),
    (8, 32, 2, 16),
    (11, 16, 3, 10),
    (16, 4, 4, 8),
    (21, 32, 5, 6),
    (10, 3, 1, 3),
    (12, 2, 1, 1),
    (47, 2, 16, 2),
    (64, 32, 16, 2),
    (68, 121, 64, 2),
]


def counts(
    placed: np.ndarray, blocks: int, spines: int, per_spine: int
) -> tuple[np.ndarray, dict[tuple[int, int], int], dict[tuple[int, int], list[int]]]:
    """Ports used per (block, device), circuits per pair, and per pair on each spine."""
    used = np.zeros((blocks, spines * per_spine), dtype=np.int64)
    a, b, o, k = placed.T
    np.add.at(used, (a, o), k)
    np.add.at(used, (b, o), k)
    pairs: Counter[tuple[int, int]] = Counter()
    spread: dict[tuple[int, int], list[int]] = {}
    for i, j, device, n in placed.tolist():
        pairs[i, j] += n
        spread.setdefault((i, j), [0] * spines)[device // per_spine] += n
    return used, dict(pairs), spread


@pytest.mark.parametrize("n", [2, 4, 6, 10, 68])
def test_the_circle_method_splits_k_n_into_perfect_matchings(n: int) -> None:
    units = oa.one_factors(n)
    assert units.shape == (n - 1, n // 2, 2)
    assert all(sorted(u.ravel().tolist()) == list(range(n)) for u in units)
    pairs = Counter(map(tuple, units.reshape(-1, 2).tolist()))
    assert pairs == Counter(dict.fromkeys(itertools.combinations(range(n), 2), 1))


@pytest.mark.parametrize("n", [3, 5, 7, 11, 49])
def test_walecki_splits_k_n_into_hamiltonian_cycles(n: int) -> None:
    units = oa.hamiltonian_cycles(n)
    assert units.shape == ((n - 1) // 2, n, 2)
    for cycle in units:
        degree = Counter(cycle.ravel().tolist())
        assert degree == Counter(dict.fromkeys(range(n), 2))
        reached, frontier = {0}, [0]
        while frontier:  # one cycle through every block, not several shorter ones
            v = frontier.pop()
            for a, b in cycle.tolist():
                for u, w in ((a, b), (b, a)):
                    if u == v and w not in reached:
                        reached.add(w)
                        frontier.append(w)
        assert reached == set(range(n))
    pairs = Counter(map(tuple, units.reshape(-1, 2).tolist()))
    assert pairs == Counter(dict.fromkeys(itertools.combinations(range(n), 2), 1))


@pytest.mark.parametrize(("blocks", "spines", "per_spine", "ports"), LAYERS, ids=str)
def test_the_mesh_fits_the_ports_is_balanced_and_spread_evenly(
    blocks: int, spines: int, per_spine: int, ports: int
) -> None:
    placed = oa.factor_mesh(blocks, spines, per_spine, ports)
    assert placed is not None
    used, pairs, spread = counts(placed, blocks, spines, per_spine)
    uplinks = spines * per_spine * ports
    q = uplinks // (blocks - 1)
    assert (used <= ports).all()
    assert all(q <= x <= q + 1 for x in pairs.values())
    if q > 0:
        assert set(pairs) == set(itertools.combinations(range(blocks), 2))
    # Every uplink is used, but one per block when an odd number of blocks meets odd uplinks.
    assert set(used.sum(axis=1).tolist()) == {uplinks - (blocks % 2) * (uplinks % 2)}
    assert all(max(c) - min(c) <= 1 for c in spread.values())


@pytest.mark.parametrize(("blocks", "spines", "per_spine", "ports"), LAYERS[:-1], ids=str)
def test_the_assignment_validator_accepts_the_mesh(
    blocks: int, spines: int, per_spine: int, ports: int
) -> None:
    placed = oa.factor_mesh(blocks, spines, per_spine, ports)
    assert placed is not None
    circuits = tuple(map(tuple, placed.tolist()))
    _, pairs, _ = counts(placed, blocks, spines, per_spine)
    devices = spines * per_spine
    problem = oa.AssignmentProblem(
        blocks,
        devices,
        tuple((ports,) * devices for _ in range(blocks)),
        tuple((i, j, x) for (i, j), x in sorted(pairs.items())),
    )
    total = sum(pairs.values())
    found = oa.Assignment(Status.OPTIMAL, circuits, total, total, 0, total, 0.0)
    assert oa.validate_assignment(problem, found) == []


def test_rows_are_sorted_and_unique() -> None:
    placed = oa.factor_mesh(9, 4, 2, 4)
    assert placed is not None
    rows = list(map(tuple, placed[:, :3].tolist()))
    assert rows == sorted(set(rows))
    assert (placed[:, 3] > 0).all()


def test_odd_blocks_with_odd_ports_have_no_factor_mesh() -> None:
    assert oa.factor_mesh(5, 2, 2, 3) is None


@pytest.mark.parametrize("blocks", [0, 1])
def test_fewer_than_two_blocks_have_no_circuits(blocks: int) -> None:
    placed = oa.factor_mesh(blocks, 2, 2, 2)
    assert placed is not None
    assert placed.shape == (0, 4)
