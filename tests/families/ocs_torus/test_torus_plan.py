"""The torus pod planner: sizing, slices, circuits, a cube failure, prices, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.api import load_instance, plan_torus
from planner.cli import app
from planner.families.ocs_torus.pod import TorusPlan
from planner.loading import load_catalog

INSTANCE = "instances/tpu-pod-4k.toml"


@pytest.fixture(scope="module")
def planned(repo_root: Path) -> TorusPlan:
    return plan_torus(load_instance(repo_root / INSTANCE), catalog=load_catalog("default"))


def test_the_pod_holds_every_slice_and_its_spares(planned: TorusPlan) -> None:
    pod = planned.pod.row(0, named=True)
    assert pod["status"] == "optimal"
    assert pod["slice_cubes"] == int(planned.slices["cubes"].sum())
    assert pod["cubes"] == pod["slice_cubes"] + pod["spares"]
    assert pod["probability"] >= 0.999
    assert pod["ocs_devices"] == 3 * pod["cube"] ** 2
    assert pod["ocs_ports_used"] == 2 * pod["cubes"] <= pod["ocs_ports"]


def test_every_slice_is_a_torus_with_a_circuit_per_face_link_pair(planned: TorusPlan) -> None:
    for r in planned.slices.iter_rows(named=True):
        assert r["torus_ok"]
        # 6 c^2 face ports per cube, two per circuit.
        assert r["circuits"] == r["cubes"] * 6 * 16 // 2
    per_slice = planned.circuits.group_by("slice").len().sort("slice")["len"].to_list()
    assert per_slice == planned.slices["circuits"].to_list()


def test_a_failed_cube_changes_only_its_own_circuits(planned: TorusPlan) -> None:
    (r,) = planned.failure.iter_rows(named=True)
    assert r["torus_ok"]
    assert r["circuits_removed"] == r["circuits_added"] == 6 * 16
    biggest = int(planned.slices["circuits"].max())  # type: ignore[arg-type]
    assert r["circuits_kept"] == biggest - r["circuits_removed"]


def test_prices_come_from_the_catalog(planned: TorusPlan) -> None:
    cat = load_catalog("default")
    pod = planned.pod.row(0, named=True)
    device = cat.ocs_named(pod["ocs_model"])
    medium = cat.medium_named(pod["medium"])
    links = pod["cubes"] * 6 * 16
    assert pod["face_links"] == links
    expected = pod["ocs_devices"] * device.cost_usd + links * (
        medium.cost_usd_per_end + medium.cable_cost_usd
    )
    assert pod["capex_usd"] == pytest.approx(expected)


@pytest.mark.slow
def test_cli_writes_the_tables(repo_root: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["torus", str(repo_root / INSTANCE), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert "torus ok" in result.stdout
    for name in ("torus_pod", "torus_slices", "torus_circuits", "torus_failure"):
        assert (tmp_path / f"{name}.parquet").is_file()


def test_a_shape_that_is_not_made_of_cubes_exits_2(repo_root: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "torus",
            str(repo_root / INSTANCE),
            "-o",
            str(tmp_path),
            "--set",
            "torus.slices=[[4, 4, 6]]",
        ],
    )
    assert result.exit_code == 2
    assert "multiple of the cube" in result.stderr
