"""Every constraint family of the OCS models has a case that makes it bind (Calliope style).

The companion of ``test_constraints_bind.py`` (the Clos sizing model) for

* the OCS topology MILPs (``models.ocs_topology``, PuLP with HiGHS): the path model's
  ``CONSTRAINTS`` and the circulant model's ``add_circulant_*`` families;
* the OCS circuit assignment (``models.ocs_assignment``, CP-SAT): its ``CONSTRAINTS``, the device
  symmetry breaking and the churn objective.

For each family a small problem where leaving the family out changes the outcome: the optimum
moves, an infeasible problem becomes feasible, or the solution found without it breaks the rule
the family states (checked on the solver's values). ``device.symmetry`` is the exception on
purpose: a valid cut removes no optimum, so its case shows the optimum is the same with and
without. The churn objective cuts off no solution either; its case shows that without it the model
accepts, at the same number of circuits realised, a solution with more churn than the optimum.

Neither module's ``build`` can leave a family out, so the models are rebuilt here from the
per-family ``add_*`` functions; ``test_*_rebuild_is_the_module_build`` checks that the rebuild
with nothing left out is exactly the module's model. A family with no case here fails
``test_every_*_family_has_a_case``. ``models.torus_ocs`` has no solver model (constructions and
closed forms only), so it has no case here.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pulp
import pytest
from ortools.sat.python import cp_model

from models import ocs_assignment as oa
from models import ocs_topology as ot
from models.ocs_assignment import AssignmentProblem
from models.ocs_assignment import model as oa_model
from models.ocs_topology import TopologyProblem
from models.ocs_topology import model as ot_model
from models.status import Status, status_of

#: Time limit per solve; every case here is proven optimal (or infeasible) in well under a second.
TIME_LIMIT_S = 30.0
#: Slack on the rules checked on an LP solver's values (HiGHS's feasibility tolerance is 1e-7).
TOL = 1e-6
#: Relative tolerance when two theta optima are compared.
THETA_RTOL = 1e-6


# ==================================================================================================
# OCS topology: the path and circulant MILPs
# ==================================================================================================

#: The topology models maximise theta, which only the demand rows tie to the flows and only the
#: capacity rows tie to the circuits: without either family theta is unbounded, which HiGHS
#: through PuLP (``run_milp``) reports as infeasible, with no values to read. Every solve here adds
#: the row theta <= THETA_CAP (the test's own, with and without the family alike), so a solve
#: without a family ends OPTIMAL at the cap with values on which to check the rule. The cases'
#: optima are far below it.
THETA_CAP = 100.0

#: The circulant model's families. ``build_circulant`` adds them inline, so they are named here
#: after its ``add_circulant_*`` functions (the guard checks the names against the module).
CIRCULANT: dict[str, Callable[[pulp.LpProblem, ot.CirculantVars, ot.Instance], None]] = {
    "circulant.demand": lambda m, v, inst: ot.add_circulant_demand(m, v, inst.demand[0]),
    "circulant.capacity": lambda m, v, inst: ot.add_circulant_capacity(m, v, inst.n, inst.c),
    "circulant.degree": lambda m, v, inst: ot.add_circulant_degree(
        m, v, inst.n, int(inst.uplinks[0])
    ),
}

Model = Literal["path", "circulant"]
Vars = ot.PathVars | ot.CirculantVars


# ---- problems ------------------------------------------------------------------------------------
def triangle() -> TopologyProblem:
    """3 blocks of 2 uplinks, uniform demand, 1 Gb/s circuits: D^ = 1 off the diagonal.

    The mesh (one circuit per pair) routes theta = 1; two circuits per pair (theta = 2) would
    need 4 uplinks a block. It is cyclic, so both models are built.
    """
    return TopologyProblem(3, (2, 2, 2))


# ---- the models, rebuilt family by family --------------------------------------------------------
def path_model(inst: ot.Instance, leave_out: frozenset[str]) -> tuple[pulp.LpProblem, Vars]:
    """``build_path`` without the families in ``leave_out``."""
    m = pulp.LpProblem("ocs_topology", pulp.LpMaximize)
    v = ot.add_variables(m, inst)
    for family, add in ot.CONSTRAINTS.items():
        if family not in leave_out:
            add(m, inst, v)
    return m, v


def circulant_model(inst: ot.Instance, leave_out: frozenset[str]) -> tuple[pulp.LpProblem, Vars]:
    """``build_circulant`` (not fixed) without the families in ``leave_out``.

    Its variables are created inline there, so they are created here the same way.
    """
    n, u, g = inst.n, int(inst.uplinks[0]), inst.demand[0]
    m = pulp.LpProblem("ocs_circulant", pulp.LpMaximize)
    theta = m.add_variable("theta", lowBound=0)
    y = {
        s: m.add_variable(ot.lp_name("y", s), lowBound=0, upBound=u, cat=pulp.LpInteger)
        for s in range(1, n // 2 + 1)
    }
    offsets = [e for e in range(1, n) if g[e] > 0]
    direct = {e: m.add_variable(ot.lp_name("f", e), lowBound=0) for e in offsets}
    transit = {
        (s, e): m.add_variable(ot.lp_name("t", s, e), lowBound=0)
        for e in offsets
        for s in range(1, n)
        if s != e
    }
    m += theta
    v = ot.CirculantVars(theta, y, direct, transit)
    for family, add in CIRCULANT.items():
        if family not in leave_out:
            add(m, v, inst)
    return m, v


REBUILD: dict[Model, Callable[[ot.Instance, frozenset[str]], tuple[pulp.LpProblem, Vars]]] = {
    "path": path_model,
    "circulant": circulant_model,
}


def value(var: pulp.LpVariable) -> float:
    got = var.value()
    return 0.0 if got is None else float(got)


def circuits(inst: ot.Instance, v: Vars) -> np.ndarray:
    """x (n x n, symmetric) from the solver's values."""
    if isinstance(v, ot.CirculantVars):
        return ot.circulant_matrix(inst.n, {s: round(value(y)) for s, y in v.y.items()})
    x = np.zeros((inst.n, inst.n), dtype=np.int64)
    for (i, j), var in v.x.items():
        x[i, j] = x[j, i] = round(value(var))
    return x


@dataclass(frozen=True, eq=False)
class TopologyOutcome:
    status: Status
    theta: float
    x: np.ndarray
    v: Vars
    rows: int


def solve_topology(
    p: TopologyProblem, model: Model, leave_out: frozenset[str] = frozenset()
) -> TopologyOutcome:
    """Solve the way ``ocs_topology.solve`` runs its MILPs (``run_milp``), here without a start."""
    inst = ot.Instance.of(p)
    m, v = REBUILD[model](inst, leave_out)
    rows = len(m.constraints())
    m += (v.theta <= THETA_CAP, "test_theta_cap")
    out = ot.run_milp(m, lambda: circuits(inst, v), {}, TIME_LIMIT_S, 0.0)
    assert out.status is Status.OPTIMAL, f"not proven: {out.status}"
    assert out.x is not None
    return TopologyOutcome(out.status, value(v.theta), out.x, v, rows)


# ---- rules on the solver's values ----------------------------------------------------------------
TopologyRule = Callable[[ot.Instance, TopologyOutcome], bool]


def demand_covered(inst: ot.Instance, out: TopologyOutcome) -> bool:
    """Every pair with demand gets theta D^_ij over its direct and one-transit paths."""
    theta, v = out.theta, out.v
    got: dict[int | tuple[int, int], float] = {}
    want: dict[int | tuple[int, int], float]
    if isinstance(v, ot.PathVars):
        for pair, f in v.direct.items():
            got[pair] = got.get(pair, 0.0) + value(f)
        for (i, _, j), t in v.transit.items():
            got[i, j] += value(t)
        want = {(i, j): inst.demand[i, j] for i, j in v.direct}
    else:
        for e, f in v.direct.items():
            got[e] = got.get(e, 0.0) + value(f)
        for (_, e), t in v.transit.items():
            got[e] += value(t)
        want = {e: inst.demand[0, e] for e in v.direct}
    assert want
    return all(got[k] >= theta * d - TOL * max(1.0, theta * d) for k, d in want.items())


def within_capacity(inst: ot.Instance, out: TopologyOutcome) -> bool:
    """The flow on every directed edge (offset) fits c times its circuits."""
    v, x, n = out.v, out.x, inst.n
    load: dict[tuple[int, int], float] = {}
    if isinstance(v, ot.PathVars):
        for pair, f in v.direct.items():
            load[pair] = load.get(pair, 0.0) + value(f)
        for (i, k, j), t in v.transit.items():
            for hop in ((i, k), (k, j)):
                load[hop] = load.get(hop, 0.0) + value(t)
    else:  # per offset e: the edges (0, e), every other one a rotation of it
        for e, f in v.direct.items():
            load[0, e] = load.get((0, e), 0.0) + value(f)
        for (s, e), t in v.transit.items():
            for offset in (s, (e - s) % n):
                load[0, offset] = load.get((0, offset), 0.0) + value(t)
    assert load
    return all(f <= inst.c * x[a, b] + TOL * max(1.0, f) for (a, b), f in load.items())


def within_degree(inst: ot.Instance, out: TopologyOutcome) -> bool:
    """Every block terminates at most U_i circuits."""
    return bool((out.x.sum(axis=1) <= inst.uplinks).all())


# ---- the table -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TopologyCase:
    """How one family binds: on which problem and which model, and the rule it states.

    Both models maximise theta, so every case binds the same way: without the family the
    optimum rises, and the solution found breaks the family's rule.
    """

    problem: Callable[[], TopologyProblem]
    model: Model
    rule: TopologyRule


TOPOLOGY_CASES: dict[str, TopologyCase] = {
    # Path model. Without the demand rows theta is tied to no flow; without the capacity rows the
    # flows are tied to no circuit: theta runs to the cap. Without the degree rows every pair may
    # take min(U_i, U_j) = 2 circuits: theta = 2.
    "demand.coverage": TopologyCase(triangle, "path", demand_covered),
    "edge.capacity": TopologyCase(triangle, "path", within_capacity),
    "block.degree": TopologyCase(triangle, "path", within_degree),
    # The circulant model of the same problem, per offset: the same three ways.
    "circulant.demand": TopologyCase(triangle, "circulant", demand_covered),
    "circulant.capacity": TopologyCase(triangle, "circulant", within_capacity),
    "circulant.degree": TopologyCase(triangle, "circulant", within_degree),
}

#: The optimum with every family, per problem (both models agree on it).
TOPOLOGY_OPTIMA = {triangle: 1.0}


def families_of(model: Model) -> set[str]:
    return set(ot.CONSTRAINTS) if model == "path" else set(CIRCULANT)


def test_every_topology_family_has_a_case() -> None:
    """A new family of either topology model without a case here fails the suite."""
    adders = {
        name
        for name, fn in inspect.getmembers(ot_model, inspect.isfunction)
        if name.startswith("add_") and fn.__module__ == ot_model.__name__
    }
    path_adders = {fn.__name__ for fn in ot.CONSTRAINTS.values()}
    circulant = {n for n in adders if n.startswith("add_circulant_")}
    assert adders == path_adders | circulant | {"add_variables"}, "an add_* of no known model"
    assert {f"circulant.{n.removeprefix('add_circulant_')}" for n in circulant} == set(CIRCULANT)
    families = families_of("path") | families_of("circulant")
    assert set(TOPOLOGY_CASES) == families, (
        f"no binding case: {sorted(families - set(TOPOLOGY_CASES))}; "
        f"stale cases: {sorted(set(TOPOLOGY_CASES) - families)}"
    )
    for family, case in TOPOLOGY_CASES.items():
        assert family in families_of(case.model), f"{family} is not a {case.model} family"


def pulp_rows(m: pulp.LpProblem) -> dict[str, tuple[dict[str, float], int, float]]:
    return {
        c.name: ({v.name: float(k) for v, k in c.items()}, c.sense, float(c.constant))
        for c in m.constraints()
    }


def pulp_columns(m: pulp.LpProblem) -> list[tuple[str, object, object, str]]:
    return [(v.name, v.lowBound, v.upBound, v.cat) for v in m.variables()]


@pytest.mark.parametrize("problem", list(TOPOLOGY_OPTIMA), ids=lambda f: f.__name__)
def test_topology_rebuild_is_the_module_build(problem: Callable[[], TopologyProblem]) -> None:
    """With nothing left out, the rebuilt models are ``ot.build``'s, row for row."""
    p = problem()
    built = ot.build(p)
    inst = ot.Instance.of(p)
    assert built.path is not None
    assert built.circulant is not None
    theirs_by_model: dict[Model, pulp.LpProblem] = {
        "path": built.path[0],
        "circulant": built.circulant[0],
    }
    for model, theirs in theirs_by_model.items():
        ours, _ = REBUILD[model](inst, frozenset())
        assert pulp_columns(ours) == pulp_columns(theirs)
        assert pulp_rows(ours) == pulp_rows(theirs)
        assert {v.name: k for v, k in ours.objective.items()} == {
            v.name: k for v, k in theirs.objective.items()
        }
        assert ours.sense == theirs.sense


@pytest.mark.parametrize("family", list(TOPOLOGY_CASES))
def test_the_topology_family_binds(family: str) -> None:
    case = TOPOLOGY_CASES[family]
    p = case.problem()
    inst = ot.Instance.of(p)
    kept = solve_topology(p, case.model)
    without = solve_topology(p, case.model, frozenset({family}))
    assert without.rows < kept.rows, "the family writes no row on its problem"
    assert kept.theta == pytest.approx(TOPOLOGY_OPTIMA[case.problem], rel=THETA_RTOL)
    assert without.theta > kept.theta * (1 + THETA_RTOL)
    assert case.rule(inst, kept), "the solution with the family breaks its rule"
    assert not case.rule(inst, without), "without the family the rule still holds"


# ==================================================================================================
# OCS circuit assignment: the CP-SAT model
# ==================================================================================================

#: Families ``oa.build`` adds outside ``CONSTRAINTS``: the symmetry breaking (a valid cut) and the
#: churn term of the objective (``set_objective`` with ``min_churn``).
SYMMETRY = "device.symmetry"
CHURN = "objective.churn"


# ---- problems ------------------------------------------------------------------------------------
def uniform_ports(blocks: int, devices: int, ports: int) -> tuple[tuple[int, ...], ...]:
    return tuple((ports,) * devices for _ in range(blocks))


def pair_on_two_devices() -> AssignmentProblem:
    """One circuit asked between 2 blocks with a port on each of 2 OCS, best effort (max R)."""
    return AssignmentProblem(2, 2, uniform_ports(2, 2, 1), ((0, 1, 1),), best_effort=True)


def triangle_on_two_devices() -> AssignmentProblem:
    """A triangle on 2 OCS of 1 port a block: every degree fits, yet it needs 3 colours."""
    return AssignmentProblem(3, 2, uniform_ports(3, 2, 1), ((0, 1, 1), (0, 2, 1), (1, 2, 1)))


def survivor_in_the_way() -> AssignmentProblem:
    """Block 1 reaches OCS 0 only, so the new circuit 0-1 needs block 0's port on OCS 0, where
    the circuit 0-2 in service sits: it has to move to OCS 1."""
    return AssignmentProblem(
        3,
        2,
        ((1, 1), (1, 0), (1, 1)),
        ((0, 1, 1), (0, 2, 1)),
        current=((0, 2, 0, 1),),
        keep_surviving=True,
    )


def complete_on_three_devices() -> AssignmentProblem:
    """K4 on 3 identical OCS of 1 port a block, best effort: 3 perfect matchings realise it all."""
    circuits = tuple((i, j, 1) for i in range(4) for j in range(i + 1, 4))
    return AssignmentProblem(4, 3, uniform_ports(4, 3, 1), circuits, best_effort=True)


def triangle_after_a_failure() -> AssignmentProblem:
    """A triangle realised on 3 OCS, one circuit each; OCS 2 fails: 2 circuits at most remain,
    and the two survivors can stay where they are (min churn)."""
    p = AssignmentProblem(3, 3, uniform_ports(3, 3, 1), ((0, 1, 1), (0, 2, 1), (1, 2, 1)))
    return replace(
        p,
        current=((0, 1, 0, 1), (1, 2, 1, 1), (0, 2, 2, 1)),
        failed_devices=frozenset({2}),
        min_churn=True,
    )


# ---- the model, rebuilt family by family ---------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Rebuilt:
    model: cp_model.CpModel
    v: oa.AssignmentVars
    added: list[cp_model.IntVar]


def assignment_model(p: AssignmentProblem, leave_out: frozenset[str] = frozenset()) -> Rebuilt:
    """``oa.build(p, BuildOptions(hint=False))`` without the families in ``leave_out``."""
    assert not oa.check_problem(p)
    m = cp_model.CpModel()
    v = oa.add_variables(m, p)
    for family, add in oa.CONSTRAINTS.items():
        if family not in leave_out:
            add(m, p, v)
    if SYMMETRY not in leave_out:
        oa.add_device_symmetry_breaking(m, p, v)
    added = oa.churn_terms(m, p, v)
    oa.set_objective(m, replace(p, min_churn=False) if CHURN in leave_out else p, v, added)
    return Rebuilt(m, v, added)


Y = dict[oa.Key, int]


@dataclass(frozen=True)
class AssignmentOutcome:
    status: Status
    objective: float | None
    """The model's objective (``set_objective``); None without a solution or an objective."""
    y: Y
    realised: int
    added: int
    """sum max(0, y - y0): circuits set up."""
    written: str
    """The model as built (text of its proto, before any adversary's objective)."""


def solve_assignment(
    p: AssignmentProblem, leave_out: frozenset[str] = frozenset(), worst_churn: bool = False
) -> AssignmentOutcome:
    """Solve the way ``oa.solve`` runs its full search (CP-SAT, 2 workers), without a hint.

    ``worst_churn``: instead of the model's objective, the most churn among the solutions that
    realise ``solve_assignment(p).realised`` circuits (the adversary of the churn case).
    """
    built = assignment_model(p, leave_out)
    written = str(built.model.proto)
    if worst_churn:
        best = solve_assignment(p)
        built.model.add(cp_model.LinearExpr.sum(list(built.v.y.values())) == best.realised)
        built.model.clear_objective()
        built.model.maximize(cp_model.LinearExpr.sum(built.added))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = TIME_LIMIT_S
    solver.parameters.num_workers = 2
    status = status_of("cp_sat", solver.solve(built.model))
    assert status in (Status.OPTIMAL, Status.INFEASIBLE), f"not proven: {status}"
    if status is Status.INFEASIBLE:
        return AssignmentOutcome(status, None, {}, 0, 0, written)
    y = {k: got for k, var in built.v.y.items() if (got := solver.value(var))}
    _, added = oa.churn(p.current, [(i, j, o, n) for (i, j, o), n in y.items()])
    objective = solver.objective_value if built.model.has_objective() else None
    return AssignmentOutcome(status, objective, y, sum(y.values()), added, written)


# ---- rules on the solver's values ----------------------------------------------------------------
def realises_its_target(p: AssignmentProblem, y: Y) -> bool:
    """No live pair gets more circuits than asked; exactly as many when the problem is exact."""
    for (i, j), x in p.live_target().items():
        got = sum(n for (a, b, _), n in y.items() if (a, b) == (i, j))
        if got > x or (p.exact and got != x):
            return False
    return True


def within_ports(p: AssignmentProblem, y: Y) -> bool:
    """Block b uses at most P[b,o] ports on OCS o."""
    used = [[0] * p.devices for _ in range(p.blocks)]
    for (i, j, o), n in y.items():
        used[i][o] += n
        used[j][o] += n
    return all(used[b][o] <= p.ports[b][o] for b in range(p.blocks) for o in range(p.devices))


def survivors_kept(p: AssignmentProblem, y: Y) -> bool:
    """Every current circuit on a live OCS between live blocks stays."""
    return all(y.get((i, j, o), 0) >= y0 for i, j, o, y0 in p.current if p.is_live(i, j, o))


# ---- the table -----------------------------------------------------------------------------------
AssignmentBinds = Literal["optimum_drops", "becomes_feasible", "same_optimum", "more_churn"]


@dataclass(frozen=True)
class AssignmentCase:
    """How one family binds: on which problem, what leaving it out changes, the rule it states."""

    problem: Callable[[], AssignmentProblem]
    binds: AssignmentBinds
    rule: Callable[[AssignmentProblem, Y], bool] | None = None


ASSIGNMENT_CASES: dict[str, AssignmentCase] = {
    # Best effort maximises R: without the row sum_o y <= x the pair takes a circuit on each OCS.
    "pair.realisation": AssignmentCase(pair_on_two_devices, "optimum_drops", realises_its_target),
    # Without the port rows the triangle fits on 2 OCS by putting two circuits on one port.
    "port.capacity": AssignmentCase(triangle_on_two_devices, "becomes_feasible", within_ports),
    # Keeping 0-2 on OCS 0 leaves 0-1 nowhere to go; without the rows 0-2 moves.
    "circuit.keep": AssignmentCase(survivor_in_the_way, "becomes_feasible", survivors_kept),
    # Valid cut: the order on identical OCS removes solutions but never the optimum (all 6).
    SYMMETRY: AssignmentCase(complete_on_three_devices, "same_optimum"),
    # An objective term cuts nothing off; without it the model ranks the re-solve that keeps the
    # two survivors in place no better than one that moves both (same R = 2, two circuits added).
    CHURN: AssignmentCase(triangle_after_a_failure, "more_churn"),
}

#: The registries these cases cover (``tests/families/test_constraint_registries.py``).
COVERS = ((ot.CONSTRAINTS, TOPOLOGY_CASES), (oa.CONSTRAINTS, ASSIGNMENT_CASES))


def assignment_families(p: AssignmentProblem) -> set[str]:
    """What ``oa.build`` adds on ``p``: its families, and the churn term when p asks for it."""
    built = oa.build(p, oa.BuildOptions(hint=False))
    return set(built.families) | ({CHURN} if p.min_churn else set())


def test_every_assignment_family_has_a_case() -> None:
    """A new family of the assignment model without a case here fails the suite."""
    adders = {
        name
        for name, fn in inspect.getmembers(oa_model, inspect.isfunction)
        if name.startswith("add_") and fn.__module__ == oa_model.__name__
    }
    known = {fn.__name__ for fn in oa.CONSTRAINTS.values()}
    assert adders == known | {"add_variables", "add_device_symmetry_breaking"}, (
        f"an add_* in no family: {sorted(adders - known)}"
    )
    families = {*oa.CONSTRAINTS, SYMMETRY, CHURN}
    assert set(ASSIGNMENT_CASES) == families, (
        f"no binding case: {sorted(families - set(ASSIGNMENT_CASES))}; "
        f"stale cases: {sorted(set(ASSIGNMENT_CASES) - families)}"
    )
    for family, case in ASSIGNMENT_CASES.items():
        assert family in assignment_families(case.problem()), f"{family} not built on its case"


@pytest.mark.parametrize("family", list(ASSIGNMENT_CASES))
def test_assignment_rebuild_is_the_module_build(family: str) -> None:
    """With nothing left out, the rebuilt model is ``oa.build``'s (hint aside), proto for proto."""
    p = ASSIGNMENT_CASES[family].problem()
    theirs = oa.build(p, oa.BuildOptions(hint=False)).model.proto
    assert str(assignment_model(p).model.proto) == str(theirs)


@pytest.mark.parametrize("family", list(ASSIGNMENT_CASES))
def test_the_assignment_family_binds(family: str) -> None:
    case = ASSIGNMENT_CASES[family]
    p = case.problem()
    kept = solve_assignment(p)
    without = solve_assignment(p, frozenset({family}))
    assert without.written != kept.written, "the family writes nothing on its problem"
    assert without.status is Status.OPTIMAL, "leaving a family out never makes a problem infeasible"
    if case.binds == "becomes_feasible":
        assert kept.status is Status.INFEASIBLE
    else:
        assert kept.status is Status.OPTIMAL
    if case.binds in ("optimum_drops", "same_optimum"):
        assert kept.objective is not None
        assert without.objective is not None
        if case.binds == "optimum_drops":  # CP-SAT minimises (-R here)
            assert without.objective < kept.objective
        else:
            assert without.objective == kept.objective
    if case.binds == "more_churn":
        worst = solve_assignment(p, frozenset({family}), worst_churn=True)
        assert worst.realised == kept.realised == without.realised
        assert worst.added > kept.added
    if case.rule is not None:
        if kept.status is Status.OPTIMAL:
            assert case.rule(p, kept.y), "the solution with the family breaks its rule"
        assert not case.rule(p, without.y), "without the family the rule still holds"
