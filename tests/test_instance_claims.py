"""Example instances say what they do (issue 9): their descriptions match their content and runs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app

INSTANCES = Path(__file__).resolve().parents[1] / "instances"


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
