"""``fabric-planner life``: the set it writes, what it prints, and refusals with status 2."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.life.plan import PHASE_SCHEMA, TOTALS_SCHEMA
from tests.life.test_plan_life import TWO_PHASES

runner = CliRunner()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("life")
    inst = folder / "life.toml"
    inst.write_text(TWO_PHASES.format(rate=0.05, hours=200.0, factor=1.0))
    result = runner.invoke(app, ["life", str(inst), "-o", str(folder / "out")])
    assert result.exit_code == 0, result.output
    return folder / "out", result.stdout


def test_the_set_holds_the_tables_the_picture_and_the_page(written: tuple[Path, str]) -> None:
    out, _ = written
    names = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert {
        "life_phases.csv",
        "life_phases.parquet",
        "life_totals.csv",
        "life_totals.parquet",
        "fig_life_cost.png",
        "fig_life_cost.svg",
        "life.md",
    } <= names
    phases = pl.read_parquet(out / "life_phases.parquet")
    assert dict(phases.schema) == PHASE_SCHEMA
    assert dict(pl.read_parquet(out / "life_totals.parquet").schema) == TOTALS_SCHEMA
    assert phases["top_devices"].to_list() == [32, 32]
    assert (out / "fig_life_cost.png").read_bytes().startswith(b"\x89PNG")


def test_it_prints_each_phase(written: tuple[Path, str]) -> None:
    _, stdout = written
    assert "phase 0 (0 y): 512 GPUs, 32 x qm9700" in stdout
    assert "phase 1 (2 y): 2,048 GPUs, 32 x qm9700, 0 links re-cabled" in stdout


def test_an_instance_without_a_life_exits_2(tmp_path: Path) -> None:
    text = TWO_PHASES.format(rate=0.05, hours=1.0, factor=1.0).split("[life]")[0]
    (tmp_path / "x.toml").write_text(text)
    result = runner.invoke(app, ["life", str(tmp_path / "x.toml"), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "no [life] section" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_a_life_and_a_solve_share_a_folder(tmp_path: Path) -> None:
    """Each keeps the other's files: a life beside the greenfield design of its last phase."""
    inst = tmp_path / "life.toml"
    inst.write_text(TWO_PHASES.format(rate=0.05, hours=200.0, factor=1.0))
    out = tmp_path / "out"
    assert runner.invoke(app, ["solve", str(inst), "-o", str(out), "-q"]).exit_code == 0
    result = runner.invoke(app, ["life", str(inst), "-o", str(out), "--force"])
    assert result.exit_code == 0, result.output
    assert (out / "design.json").exists()
    assert (out / "life_phases.csv").exists()
    again = runner.invoke(app, ["solve", str(inst), "-o", str(out), "-q", "--force"])
    assert again.exit_code == 0, again.output
    assert (out / "life_phases.csv").exists()
    assert (out / "life.md").exists()
