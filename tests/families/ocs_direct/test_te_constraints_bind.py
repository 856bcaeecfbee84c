"""Every constraint family of the OCS traffic engineering LP binds (Calliope style).

``models.ocs_te.lp.CONSTRAINTS`` (the WCMP splits of the ``ocs_direct`` family): the full LP of a
small problem (every transit column, ``build(all_transit_columns=True)``), solved once with every
family and once with one family's rows freed (bounds -inf..inf: the rows stay, so every column
keeps its place, and bind nothing). u is minimised, so without a family it drops, and the LP's
values break the rule the family states, checked here from the package docstring on the values.
``tests/models/test_ocs_constraints_bind.py`` covers the OCS topology and assignment models.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import highspy
import numpy as np
import pytest

from models import ocs_te
from models.ocs_te import lp

#: Slack on a rule checked on the LP's values (interior point without crossover).
TOL = 1e-6


@dataclass(frozen=True)
class Values:
    """The LP's values: u, and every path column's share and the hedge m_e of every bundle."""

    u: float
    paths: np.ndarray
    """(k x 3) (a, b, via) of the path columns; via == b is direct."""
    share: np.ndarray
    hedge: np.ndarray


def triangle() -> ocs_te.TeProblem:
    """Three blocks, one 100 Gb/s circuit a pair, 150 Gb/s from 0 to 1, a surge of 100 Gb/s.

    Half direct, half via 2: 75 Gb/s and half the surge, 50, on 0 -> 1 and 0 -> 2: u = 1.25
    (``tests/models/test_ocs_te.py::test_hedge_on_triangle``); without the hedge rows 0.75.
    """
    x = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]])
    d = np.zeros((3, 3))
    d[0, 1] = 150.0
    return ocs_te.TeProblem(x, d, capacity_gbps=100.0, hedge_gbps=100.0)


def solve(p: ocs_te.TeProblem, leave_out: frozenset[str] = frozenset()) -> Values:
    """The full LP with the rows of ``leave_out`` freed, solved once."""
    m = ocs_te.build(p, all_transit_columns=True)
    free = highspy.kHighsInf
    for family in leave_out:
        for row in (r for first, count in m.rows[family] for r in range(first, first + count)):
            m.highs.changeRowBounds(row, -free, free)
    sol = lp.run_master(m)
    assert sol is not None, "the LP was not solved"
    k = len(m.paths())
    share = sol.col_value[m.path_first : m.path_first + k]
    hedge = sol.col_value[m.hedge_first : m.hedge_first + m.bundles]
    assert m.rows.keys() == lp.CONSTRAINTS.keys(), "a family writes no row on its problem"
    return Values(sol.u, m.paths(), share, hedge)


# ---- the rules, on the values --------------------------------------------------------------------
def bundles_of(path: np.ndarray) -> list[tuple[int, int]]:
    a, b, via = (int(v) for v in path)
    return [(a, b)] if via == b else [(a, via), (via, b)]


def shares_sum_to_one(p: ocs_te.TeProblem, v: Values) -> bool:
    total: dict[tuple[int, int], float] = {}
    for path, s in zip(v.paths, v.share, strict=True):
        total[int(path[0]), int(path[1])] = total.get((int(path[0]), int(path[1])), 0.0) + s
    return all(abs(t - 1.0) <= TOL for t in total.values())


def bundle_order(p: ocs_te.TeProblem) -> list[tuple[int, int]]:
    u, w = np.nonzero(p.circuits > 0)
    return [(int(i), int(j)) for i, j in zip(u, w, strict=True)]


def within_capacity(p: ocs_te.TeProblem, v: Values) -> bool:
    order = bundle_order(p)
    load = dict.fromkeys(order, 0.0)
    for path, s in zip(v.paths, v.share, strict=True):
        for e in bundles_of(path):
            load[e] += p.demand_gbps[path[0], path[1]] * s
    return all(
        load[e] + p.hedge_gbps * v.hedge[i] <= p.capacity_gbps * p.circuits[e] * v.u + TOL
        for i, e in enumerate(order)
    )


def hedge_covers_every_share(p: ocs_te.TeProblem, v: Values) -> bool:
    index = {e: i for i, e in enumerate(bundle_order(p))}
    return all(
        s <= v.hedge[index[e]] + TOL
        for path, s in zip(v.paths, v.share, strict=True)
        for e in bundles_of(path)
    )


# ---- the table -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """On which problem one family binds, its u with every family, and its rule."""

    problem: Callable[[], ocs_te.TeProblem]
    optimum: float
    rule: Callable[[ocs_te.TeProblem, Values], bool]


CASES: dict[str, Case] = {
    # Without it every share may be 0: nothing is carried, u = 0.
    "pair.split": Case(triangle, 1.25, shares_sum_to_one),
    # Without it u is tied to no load: u = 0.
    "bundle.capacity": Case(triangle, 1.25, within_capacity),
    # Without it m_e = 0 and the surge costs nothing: u = 0.75.
    "bundle.hedge": Case(triangle, 1.25, hedge_covers_every_share),
}

#: The registry these cases cover (``tests/families/test_constraint_registries.py``).
COVERS = ((lp.CONSTRAINTS, CASES),)


def test_every_family_has_a_case() -> None:
    assert set(CASES) == set(lp.CONSTRAINTS)


@pytest.mark.parametrize("family", list(lp.CONSTRAINTS))
def test_the_family_binds(family: str) -> None:
    case = CASES[family]
    p = case.problem()
    kept = solve(p)
    without = solve(p, frozenset({family}))
    assert kept.u == pytest.approx(case.optimum, rel=TOL)
    assert without.u < kept.u - TOL
    assert case.rule(p, kept), "the solution with the family breaks its rule"
    assert not case.rule(p, without), "without the family the rule still holds"
