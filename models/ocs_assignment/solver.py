"""OCS circuit assignment: ``solve``.

CP-SAT run on a built model: the start checked with every variable fixed to it, then the full
search, and the circuits read out into an ``Assignment``. Building is
``models.ocs_assignment.model``.

The docstrings here say "module docstring" for the package docstring of ``models.ocs_assignment``,
which holds the formulation, the constructions and the theory in full.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

from ortools.sat.python import cp_model

from models.ocs_assignment.data import Assignment, AssignmentProblem, Key, churn
from models.ocs_assignment.model import BuiltAssignment
from models.status import Status, status_of

# --------------------------------------------------------------------------- solve


def _run(
    built: BuiltAssignment, time_limit_s: float, workers: int, fixed_to_hint: bool
) -> tuple[Status, dict[Key, int], float]:
    """One CP-SAT pass: our status, y (empty without a solution) and the objective value."""
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, time_limit_s)
    solver.parameters.num_workers = workers
    solver.parameters.fix_variables_to_their_hinted_value = fixed_to_hint
    status = status_of("cp_sat", solver.solve(built.model))
    if not status.has_solution:
        return status, {}, math.nan
    y = {k: value for k, var in built.v.y.items() if (value := solver.value(var))}
    return status, y, solver.objective_value


def solve(built: BuiltAssignment, time_limit_s: float = 30.0, workers: int = 2) -> Assignment:
    """Solve a built model and read the circuits out of it.

    With a hint, CP-SAT first checks the start with every variable fixed to it (fast even at
    100k variables, and it checks constraints added after ``build`` too). A start that passes is
    the answer, OPTIMAL, when the model has no objective or the start reaches
    ``built.floor``. Otherwise the full search runs in the time left; if it stops before it
    holds a solution (at 60+ blocks its presolve alone can outlast a short limit), the checked
    start is returned as FEASIBLE.
    """
    p = built.problem
    begin = time.perf_counter()
    checked: dict[Key, int] | None = None
    if built.start is not None:
        status, y, objective = _run(built, time_limit_s, workers, fixed_to_hint=True)
        if status.has_solution:
            checked = y
            if not built.model.has_objective() or (
                built.floor is not None and objective <= built.floor
            ):
                return _assignment(p, Status.OPTIMAL, y, time.perf_counter() - begin)
    left = time_limit_s - (time.perf_counter() - begin)
    status, y, _ = _run(built, left, workers, fixed_to_hint=False)
    if not status.has_solution and checked is not None and status is not Status.INFEASIBLE:
        status, y = Status.FEASIBLE, checked
    return _assignment(p, status, y, time.perf_counter() - begin)


def _assignment(
    p: AssignmentProblem, status: Status, y: Mapping[Key, int], wall_s: float
) -> Assignment:
    if not status.has_solution:
        return Assignment(status, (), 0, p.requested, 0, 0, wall_s)
    circuits = tuple(sorted((i, j, o, v) for (i, j, o), v in y.items() if v))
    removed, added = churn(p.current, circuits)
    realised = sum(c[3] for c in circuits)
    return Assignment(status, circuits, realised, p.requested, removed, added, wall_s)
