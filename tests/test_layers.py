"""Layering: which modules a planner module may load (issue 10).

Each check runs in a fresh interpreter, so it sees what the module itself loads.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import planner.cli

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


@pytest.mark.parametrize("module", ["planner.report", "planner.api", "planner.cli"])
def test_module_loads_no_solver(module: str) -> None:
    assert loaded_after_import(module) == []


def test_cli_imports_only_the_api_from_the_planner() -> None:
    lines = Path(planner.cli.__file__).read_text().splitlines()
    imports = [
        ln.strip() for ln in lines if ln.lstrip().startswith(("from planner", "import planner"))
    ]
    assert all(
        ln.startswith(("from planner import api", "from planner.api import")) for ln in imports
    )
    assert not [ln for ln in lines if ln.lstrip().startswith(("from models", "import models"))]
