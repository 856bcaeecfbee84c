"""The solver status tables in ``models.status``: every code is the library's own, every code is mapped."""

from __future__ import annotations

import subprocess
import sys

import pulp
import pytest
from ortools.sat.python import cp_model

from models.status import (
    CP_SAT_STATUS,
    LINPROG_STATUS,
    PULP_SOLUTION_STATUS,
    STATUS_MAPS,
    Solver,
    Status,
    status_of,
)

CP_SAT_CODES = {
    cp_model.OPTIMAL: Status.OPTIMAL,
    cp_model.FEASIBLE: Status.FEASIBLE,
    cp_model.INFEASIBLE: Status.INFEASIBLE,
    cp_model.UNKNOWN: Status.TIME_LIMIT,
    cp_model.MODEL_INVALID: Status.ERROR,
}
PULP_CODES = {
    pulp.LpSolutionOptimal: Status.OPTIMAL,
    pulp.LpSolutionIntegerFeasible: Status.FEASIBLE,
    pulp.LpSolutionNoSolutionFound: Status.TIME_LIMIT,
    pulp.LpSolutionInfeasible: Status.INFEASIBLE,
    pulp.LpSolutionUnbounded: Status.ERROR,
}


@pytest.mark.parametrize(("code", "expected"), list(CP_SAT_CODES.items()), ids=str)
def test_cp_sat_codes_are_the_libraries(code: cp_model.CpSolverStatus, expected: Status) -> None:
    assert status_of("cp_sat", code) is expected


def test_cp_sat_table_has_every_code() -> None:
    assert set(CP_SAT_STATUS) == {int(c) for c in CP_SAT_CODES}


@pytest.mark.parametrize(("code", "expected"), list(PULP_CODES.items()), ids=str)
def test_pulp_codes_are_the_libraries(code: int, expected: Status) -> None:
    assert status_of("pulp", code) is expected


def test_pulp_table_has_every_solution_code() -> None:
    assert set(PULP_SOLUTION_STATUS) == set(PULP_CODES)


@pytest.mark.parametrize("code", range(5))
def test_every_linprog_status_is_mapped(code: int) -> None:
    assert isinstance(LINPROG_STATUS[code], Status)


@pytest.mark.parametrize("solver", sorted(STATUS_MAPS))
def test_an_unknown_code_is_an_error(solver: Solver) -> None:
    assert status_of(solver, 99) is Status.ERROR


def test_the_status_module_loads_no_solver_library() -> None:
    code = (
        "import sys, models.status; "
        "print(sorted(m for m in ('ortools', 'pulp', 'scipy', 'highspy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
