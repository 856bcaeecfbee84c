"""Example instances say what they do (issue 9): their descriptions match their content and runs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from tests.conftest import REPO_ROOT

INSTANCES = REPO_ROOT / "instances"


def test_tpu_pod_description_names_the_slices_it_asks_for() -> None:
    data = tomllib.loads((INSTANCES / "tpu-pod-4k.toml").read_text())
    named = re.findall(r"\b(\d+)x(\d+)x(\d+)\b", data["description"])
    shapes = {tuple(int(v) for v in shape) for shape in named}
    cube = data["torus"]["cube"]
    wanted = {tuple(s) for s in data["torus"]["slices"]}
    assert wanted <= shapes
    assert shapes - wanted <= {(cube, cube, cube)}  # the cube itself may be named


@pytest.mark.slow
def test_oversubscribed_example_meets_its_own_verification(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["solve", str(INSTANCES / "oversubscribed-4k.toml"), "-o", str(tmp_path), "-q"]
    )
    assert result.exit_code == 0, result.output
    assert "simulation: meets" in result.stdout


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("*.toml")), ids=lambda p: p.name)
def test_instances_cite_no_document_the_repository_lacks(path: Path) -> None:
    assert "DESIGN section" not in path.read_text()


@pytest.mark.slow
def test_moe_example_takes_more_rails_with_a_larger_scale_up_domain() -> None:
    """instances/moe-16k.toml (README): 72-GPU domains let rail-only take 12 rails, two-tray
    domains only 8, and the larger domain's design is cheaper (README: $61.12 M vs $61.83 M)."""
    from planner import api

    inst = api.load_instance(INSTANCES / "moe-16k.toml")
    chosen = {}
    for domain in (72, 8):
        variant = inst.with_changes({"cluster.scale_up.gpus": domain})
        d = api.plan(variant, verify=False, alternatives=False).design
        assert d is not None
        assert d.family == "rail_only"
        chosen[domain] = (d.wiring.params()["rails"], d.tco_usd)
    assert chosen[72][0] == 12
    assert chosen[8][0] == 8
    assert chosen[72][1] < chosen[8][1]


#: The README's worked example, as its output block prints it (README, "A worked example").
README_EXAMPLE_LINES = (
    "fabric: clos, 1 plane x 3 tiers at 400G, 2,560 switches (leaf=qm9700 spine=qm9700 "
    "core=qm9700), 62,590 transceivers",
    "tco: $181,114,668 (capex $169,684,500 + lifetime energy $11,430,168)",
    "simulation: meets (throughput of ideal: spray 0.99, ecmp 0.14)",
    "step: 5.064 s = compute 4.619 s + exposed communication 0.445 s (of 0.577 s; 0.132 s hidden); "
    "GPUs idle 8.8% of the step",
)


@pytest.mark.slow
def test_the_readme_worked_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    readme = (INSTANCES.parent / "README.md").read_text()
    result = CliRunner().invoke(
        app, ["solve", str(INSTANCES / "llama3-405b-32k.toml"), "-o", str(tmp_path), "-q"]
    )
    assert result.exit_code == 0, result.output
    for line in README_EXAMPLE_LINES:
        assert line in result.stdout
        assert line in readme
