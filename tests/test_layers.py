"""Layering: which modules a planner module may load (issue 10).

Each check runs in a fresh interpreter, so it sees what the module itself loads.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Solver libraries and the modules that hold solver records.
SOLVER_MODULES = (
    "ortools",
    "pulp",
    "highspy",
    "scipy",
    "models.clos_sizing",
    "models.ocs_assignment",
    "models.ocs_topology",
    "planner.sizing",
    "planner.ocs",
)


def loaded_after_import(module: str) -> list[str]:
    """The solver modules loaded once ``module`` is imported in a fresh interpreter."""
    code = (
        f"import sys, {module}; print(' '.join(m for m in {SOLVER_MODULES!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("module", ["planner.report"])
def test_module_loads_no_solver(module: str) -> None:
    assert loaded_after_import(module) == []
