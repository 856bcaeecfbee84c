"""The one status vocabulary of every formulation, and the table that maps solver codes to it."""

from __future__ import annotations

from enum import StrEnum

from ortools.sat.python import cp_model


class Status(StrEnum):
    """Outcome of a solve, shared by every model, the API, the reports and the CLI."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIME_LIMIT = "time_limit"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        """Whether a design comes with this status."""
        return self in (Status.OPTIMAL, Status.FEASIBLE)


#: CP-SAT status code -> our status. FEASIBLE means a solution without a proof of optimality,
#: which with a time limit set is what CP-SAT returns when the limit stops it.
CP_SAT_STATUS: dict[cp_model.CpSolverStatus | int, Status] = {
    cp_model.OPTIMAL: Status.OPTIMAL,
    cp_model.FEASIBLE: Status.FEASIBLE,
    cp_model.INFEASIBLE: Status.INFEASIBLE,
    cp_model.UNKNOWN: Status.TIME_LIMIT,
    cp_model.MODEL_INVALID: Status.ERROR,
}
