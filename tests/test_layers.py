"""Layering: which modules a planner module may load (issue 10).

Each check runs in a fresh interpreter, so it sees what the module itself loads.
"""

from __future__ import annotations

import ast
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
    "planner.families.ocs_direct.circuits",
)


def loaded_after_import(module: str) -> list[str]:
    """The solver modules loaded once ``module`` is imported in a fresh interpreter."""
    code = (
        f"import sys, {module}; print(' '.join(m for m in {SOLVER_MODULES!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("module", ["planner.report", "planner.api", "planner.cli"])
@pytest.mark.slow
def test_module_loads_no_solver(module: str) -> None:
    assert loaded_after_import(module) == []


#: What the CLI may import from the planner: the API, and the studies planned through it; and,
#: so that --help and bad input answer before the API loads (tests/cli/test_startup.py), the
#: base layer's light modules the API re-exports: its defaults, errors, Ctrl-C handling, output
#: folder checks, the instance reader (the schema alone) and the shipped JSON Schema files.
CLI_MAY_IMPORT = {
    "planner.api",
    "planner.study",
    "planner.defaults",
    "planner.errors",
    "planner.interrupt",
    "planner.output",
    "planner.loading",
    "planner.schema.files",
}


def cli_files() -> list[Path]:
    """The CLI's source files: the module, or every module of the package."""
    cli = Path(planner.cli.__file__)
    return sorted(cli.parent.glob("*.py")) if cli.name == "__init__.py" else [cli]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_cli_imports_only_the_api_and_the_study_from_the_planner() -> None:
    imported = set()
    for path in cli_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names if a.name.split(".")[0] == "planner"}
            elif (
                isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "planner"
            ):
                names = [f"{node.module}.{a.name}" for a in node.names]
                imported |= set(names) if node.module == "planner" else {node.module or ""}
    # The CLI's own modules importing each other is not the planner.
    imported = {m for m in imported if not _within(m, "planner.cli")}
    assert imported, "the CLI imports nothing from the planner: the check reads the wrong files"
    outside = sorted(m for m in imported if not any(_within(m, a) for a in CLI_MAY_IMPORT))
    assert not outside, outside
    lines = [ln for path in cli_files() for ln in path.read_text().splitlines()]
    assert not [ln for ln in lines if ln.lstrip().startswith(("from models", "import models"))]


#: Libraries a command loads only when it does what needs them (issue: a fast start).
HEAVY_MODULES = (
    "ortools",
    "pulp",
    "highspy",
    "scipy",
    "networkx",
    "matplotlib",
    "distributed",
    "pandas",
    "pyarrow",
    "models.ocs_assignment",
    "models.ocs_topology",
    "models.torus_ocs",
)


def loaded_after(code: str) -> list[str]:
    """The heavy modules loaded after running ``code`` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY_MODULES!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


@pytest.mark.parametrize("module", ["planner.cli", "planner.api", "planner.report"])
@pytest.mark.slow
def test_importing_the_cli_loads_no_heavy_library(module: str) -> None:
    assert loaded_after(f"import {module}") == []


@pytest.mark.parametrize(
    ("parts", "absent"),
    [
        # A Clos search: CP-SAT only (OR-Tools itself imports pandas), no OCS model, no SciPy.
        (
            ("search",),
            (
                "scipy",
                "networkx",
                "matplotlib",
                "distributed",
                "pulp",
                "highspy",
                "models.ocs_assignment",
                "models.ocs_topology",
                "models.torus_ocs",
            ),
        ),
        # The simulator: SciPy's sparse graphs and LPs, but not scipy.stats or networkx.
        (
            ("sim",),
            (
                "scipy.stats",
                "networkx",
                "matplotlib",
                "distributed",
                "ortools",
                "models.ocs_assignment",
            ),
        ),
        # Verifying a Clos plan loads neither the OCS models nor the torus.
        (
            ("search", "sim"),
            (
                "networkx",
                "matplotlib",
                "distributed",
                "pulp",
                "highspy",
                "models.ocs_assignment",
                "models.ocs_topology",
                "models.torus_ocs",
            ),
        ),
    ],
    ids=["search", "sim", "search+sim"],
)
@pytest.mark.slow
def test_a_solver_part_loads_only_what_it_uses(
    parts: tuple[str, ...], absent: tuple[str, ...]
) -> None:
    code = f"import planner.solver_parts as solver_parts\nsolver_parts.load_solvers(*{parts!r})"
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {absent!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == []


@pytest.mark.slow
def test_ocs_part_loads_the_ocs_models() -> None:
    code = "import planner.solver_parts as solver_parts\nsolver_parts.load_solvers('ocs')"
    assert {"models.ocs_assignment", "networkx"} <= set(loaded_after(code))
