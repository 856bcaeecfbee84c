"""The one status vocabulary of every module, and the one table per solver that maps to it.

The tables are plain data keyed by the solvers' integer codes, so this module loads no solver
library (the CLI imports it before it knows the input is good); ``tests/models/test_status.py``
checks every code against the library's own constant.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, SupportsInt


class Status(StrEnum):
    """Outcome of a solve."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIME_LIMIT = "time_limit"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        """Whether a design comes with this status."""
        return self in (Status.OPTIMAL, Status.FEASIBLE)


#: CP-SAT ``CpSolverStatus`` -> ours. FEASIBLE means a solution without a proof of optimality,
#: which with a time limit set is what CP-SAT returns when the limit stops it (UNKNOWN: stopped
#: before any solution).
CP_SAT_STATUS: dict[int, Status] = {
    4: Status.OPTIMAL,  # cp_model.OPTIMAL
    2: Status.FEASIBLE,  # cp_model.FEASIBLE
    3: Status.INFEASIBLE,  # cp_model.INFEASIBLE
    0: Status.TIME_LIMIT,  # cp_model.UNKNOWN
    1: Status.ERROR,  # cp_model.MODEL_INVALID
}

#: PuLP solution status (``LpProblem.sol_status``) -> ours. PuLP reports a MILP stopped by its
#: time limit with a solution as LpStatusOptimal; its ``sol_status`` tells the two apart.
PULP_SOLUTION_STATUS: dict[int, Status] = {
    1: Status.OPTIMAL,  # pulp.LpSolutionOptimal
    2: Status.FEASIBLE,  # pulp.LpSolutionIntegerFeasible
    0: Status.TIME_LIMIT,  # pulp.LpSolutionNoSolutionFound
    -1: Status.INFEASIBLE,  # pulp.LpSolutionInfeasible
    -2: Status.ERROR,  # pulp.LpSolutionUnbounded
}

#: scipy.optimize.linprog status code -> ours (linprog has no code for "skipped").
LINPROG_STATUS: dict[int, Status] = {
    0: Status.OPTIMAL,
    1: Status.TIME_LIMIT,  # iteration or time limit reached
    2: Status.INFEASIBLE,
    3: Status.ERROR,  # unbounded: impossible with positive demand, so a modelling error
    4: Status.ERROR,  # numerical difficulties
}

Solver = Literal["cp_sat", "pulp", "linprog"]

#: Every solver's table, by solver.
STATUS_MAPS: dict[Solver, dict[int, Status]] = {
    "cp_sat": CP_SAT_STATUS,
    "pulp": PULP_SOLUTION_STATUS,
    "linprog": LINPROG_STATUS,
}


def status_of(solver: Solver, code: SupportsInt) -> Status:
    """Our status for a solver's code; ERROR for a code the table does not know."""
    return STATUS_MAPS[solver].get(int(code), Status.ERROR)
