"""CP-SAT adapter facts: how its status codes map to ours."""

from __future__ import annotations

from ortools.sat.python import cp_model

from models.status import Status

#: CP-SAT status code -> our status. FEASIBLE means a solution without a proof of optimality,
#: which with a time limit set is what CP-SAT returns when the limit stops it.
CP_SAT_STATUS: dict[cp_model.CpSolverStatus | int, Status] = {
    cp_model.OPTIMAL: Status.OPTIMAL,
    cp_model.FEASIBLE: Status.FEASIBLE,
    cp_model.INFEASIBLE: Status.INFEASIBLE,
    cp_model.UNKNOWN: Status.TIME_LIMIT,
    cp_model.MODEL_INVALID: Status.ERROR,
}
