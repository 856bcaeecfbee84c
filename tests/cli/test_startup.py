"""The command line answers --help, schema errors and bad input before the heavy libraries load.

What a command imports is what its user waits for: ``--help`` under 0.3 s and a bad-input error
under 0.5 s on an idle machine need the solver, table and array libraries to load only once a
command runs on good input (figures in tests/bench/RESULTS_startup.md, measured by
tests/bench/bench_startup.py). Tested by what a fresh interpreter has imported, not by time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Libraries that --help and a bad-input error must not load (top-level package names).
HEAVY = ("polars", "numpy", "scipy", "ortools", "pulp", "highspy", "networkx", "matplotlib")
#: The planner's own modules that load them.
HEAVY_PLANNER = ("planner.api", "planner.planning", "planner.families", "planner.sim")


def imported_after(code: str, cwd: Path) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))\n"
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, check=True
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if m.split(".")[0] in HEAVY or any(m == p or m.startswith(p + ".") for p in HEAVY_PLANNER)
    )


def run_cli(args: list[str]) -> str:
    """Code that runs the CLI in-process on ``args`` and swallows its exit."""
    return (
        "from planner.cli import app\n"
        "try:\n"
        f"    app({args!r}, prog_name='fabric-planner')\n"
        "except SystemExit:\n"
        "    pass\n"
    )


@pytest.mark.parametrize(
    "args",
    [["--help"], ["solve", "--help"], ["sweep", "--help"], ["simulate", "--help"]],
    ids=" ".join,
)
def test_help_loads_no_heavy_library(args: list[str], tmp_path: Path) -> None:
    assert heavy(imported_after(run_cli(args), tmp_path)) == []


#: Bad instance files, by what is wrong with them.
BAD_INSTANCES = {
    "toml-syntax": "name = \n",
    "unknown-field": 'name = "x"\n[cluster]\ngpus = 8\nbogus = 1\n',
    "wrong-type": 'name = "x"\n[cluster]\ngpus = "many"\n',
}


@pytest.mark.parametrize(
    "command", ["solve", "evaluate", "torus", "compare-fabrics", "life", "mix", "sweep"]
)
@pytest.mark.parametrize("name", sorted(BAD_INSTANCES))
def test_a_bad_instance_is_refused_before_any_heavy_library_loads(
    name: str, command: str, tmp_path: Path
) -> None:
    (tmp_path / "bad.toml").write_text(BAD_INSTANCES[name], encoding="utf-8")
    modules = imported_after(run_cli([command, "bad.toml", "-o", "out"]), tmp_path)
    assert "planner.schema.instance" in modules or name == "toml-syntax"
    assert heavy(modules) == []
    assert not (tmp_path / "out").exists()


def test_the_import_check_sees_a_heavy_library(tmp_path: Path) -> None:
    """The check itself: loading the API is caught."""
    assert "planner.api" in heavy(imported_after("import planner.api", tmp_path))
