"""``fabric-planner sweep``: the study folder, resume after SIGKILL, and bad input (exit 2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.study.parts import PARTS_DIR

runner = CliRunner()

TINY_TOML = """\
name = "tiny"

[cluster]
gpus = 64
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1]
"""
GRID = ["--grid", "cluster.gpus=16,64", "--grid", "cluster.nic_gbps=200,400"]


@pytest.fixture
def tiny_toml(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML, encoding="utf-8")
    return path


@pytest.fixture
def swept(tiny_toml: Path, tmp_path: Path) -> Path:
    """A 4-scenario study run to the end in this process (--workers 1): its folder."""
    out = tmp_path / "study"
    args = ["sweep", str(tiny_toml), *GRID, "--workers", "1", "--no-verify", "-q", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def test_sweep_writes_the_study_folder(swept: Path) -> None:
    names = {p.name for p in swept.iterdir()}
    expected = {"study.json", "study.csv", "study.parquet", "pareto.csv", "pareto.parquet"}
    expected |= {"report.html"}
    expected |= {
        f"{stem}.{fmt}"
        for stem in ("sweep_capex_usd_gpus", "sweep_capex_usd_nic_gbps", "pareto")
        for fmt in ("png", "svg")
    }
    assert expected <= names
    assert PARTS_DIR in names
    study = pl.read_parquet(swept / "study.parquet")
    assert study["scenario"].to_list() == [
        "gpus=16+nic_gbps=200",
        "gpus=16+nic_gbps=400",
        "gpus=64+nic_gbps=200",
        "gpus=64+nic_gbps=400",
    ]
    assert study["pareto"].any()
    pareto = pl.read_parquet(swept / "pareto.parquet")
    assert pareto["scenario"].to_list() == study.filter(pl.col("pareto"))["scenario"].to_list()
    record = json.loads((swept / "study.json").read_text())
    assert record["complete"] is True
    assert (record["computed"], record["reused"]) == (4, 0)


def test_csv_and_parquet_hold_the_same_study(swept: Path) -> None:
    csv = pl.read_csv(swept / "study.csv")
    parquet = pl.read_parquet(swept / "study.parquet")
    assert csv["scenario"].to_list() == parquet["scenario"].to_list()
    assert csv["capex_usd"].to_list() == pytest.approx(parquet["capex_usd"].to_list())


def test_the_same_command_again_reuses_every_scenario(swept: Path, tiny_toml: Path) -> None:
    args = ["sweep", str(tiny_toml), *GRID, "--workers", "1", "--no-verify", "-q", "-o", str(swept)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "scenarios: 0 computed, 4 reused" in result.output
    assert json.loads((swept / "study.json").read_text())["reused"] == 4


def test_another_study_in_the_folder_needs_force(swept: Path, tiny_toml: Path) -> None:
    args = [
        "sweep",
        str(tiny_toml),
        "--grid",
        "cluster.gpus=16",
        "--workers",
        "1",
        "--no-verify",
        "-q",
        "-o",
        str(swept),
    ]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2
    assert "another study" in refused.output
    assert "--force" in refused.output
    forced = runner.invoke(app, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    assert pl.read_parquet(swept / "study.parquet")["scenario"].to_list() == ["gpus=16"]


def test_other_settings_in_the_folder_need_force(swept: Path, tiny_toml: Path) -> None:
    args = ["sweep", str(tiny_toml), *GRID, "--workers", "1", "--no-verify", "-q", "-o", str(swept)]
    refused = runner.invoke(app, [*args, "--time-limit", "7"])
    assert refused.exit_code == 2
    assert "under other settings" in refused.output


def test_a_folder_of_another_command_needs_force(tiny_toml: Path, tmp_path: Path) -> None:
    out = tmp_path / "solved"
    solved = runner.invoke(app, ["solve", str(tiny_toml), "--no-verify", "-q", "-o", str(out)])
    assert solved.exit_code == 0, solved.output
    args = [
        "sweep",
        str(tiny_toml),
        "--grid",
        "cluster.gpus=16",
        "--workers",
        "1",
        "-q",
        "-o",
        str(out),
    ]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2
    assert "the output of `solve`" in refused.output


def test_a_scenario_in_error_makes_exit_1_and_is_named(tiny_toml: Path, tmp_path: Path) -> None:
    args = [
        "sweep",
        str(tiny_toml),
        "--grid",
        "cluster.gpus=16,64",
        "--set",
        "cluster.nic=connectx-7",
        "--grid",
        "cluster.nic_gbps=200,400",
    ]
    result = runner.invoke(app, [*args, "--workers", "1", "--no-verify", "-o", str(tmp_path / "o")])
    assert result.exit_code == 1
    assert "2 of 4 scenarios ended in error" in result.output
    assert "gpus=16+nic_gbps=200: InputError" in result.output


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--grid", "cluster.gpuz=1,2"], ["cluster.gpuz", "unknown field"]),
        (["--grid", "cluster.gpus=64,many"], ["scenario gpus=many", "cluster.gpus"]),
        (["--grid", "cluster.gpus=0"], ["cluster.gpus"]),
        ([], ["--grid"]),
        (["--grid", "cluster.gpus="], ["cluster.gpus", "no values"]),
        (["--grid", "cluster.gpus"], ["--grid", "PATH=V1,V2"]),
        (["--grid", "=1,2"], ["--grid", "path is empty"]),
        (["--grid", "cluster.gpus=1", "--grid", "cluster.gpus=2"], ["cluster.gpus", "twice"]),
        (["--grid", "cluster.gpus=16", "--set", "cluster.gpuz=1"], ["cluster.gpuz"]),
        (
            ["--grid", "cluster.gpus=16", "--workers", "2", "--dask", "tcp://127.0.0.1:1"],
            ["--dask", "--workers"],
        ),
        (["--grid", "cluster.gpus=16", "--workers", "0"], ["--workers"]),
        (
            [
                arg
                for k in ("gpus", "nic_gbps", "gpus_per_node")
                for arg in ("--grid", f"cluster.{k}=" + ",".join(map(str, range(1, 101))))
            ],
            ["1,000,000 scenarios", "100 cluster.gpus", "at most 100,000"],
        ),
    ],
    ids=str,
)
def test_bad_input_exits_2_naming_the_field(
    tiny_toml: Path, tmp_path: Path, args: list[str], words: list[str]
) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["sweep", str(tiny_toml), *args, "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output
    assert not out.exists()  # nothing ran, nothing written


def test_a_missing_instance_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["sweep", str(tmp_path / "nope.toml"), "--grid", "cluster.gpus=1"])
    assert result.exit_code == 2
    assert "nope.toml" in result.output


#: The study the kill test interrupts: 30 scenarios, one after the other (--workers 1).
KILL_GRID = [
    "--grid",
    "cluster.gpus=" + ",".join(str(8 * k) for k in range(1, 16)),
    "--grid",
    "cluster.nic_gbps=200,400",
]
KILL_TOTAL = 30
#: Parts to wait for before the kill, and the longest wait for them.
KILL_AFTER_PARTS = 4
KILL_WAIT_S = 120.0


@pytest.mark.slow
def test_a_killed_study_resumes_without_recomputing_finished_scenarios(
    tiny_toml: Path, tmp_path: Path
) -> None:
    out = tmp_path / "study"
    command = [
        sys.executable,
        "-m",
        "planner",
        "sweep",
        str(tiny_toml),
        *KILL_GRID,
        "--workers",
        "1",
        "--no-verify",
        "-q",
        "-o",
        str(out),
    ]
    parts = out / PARTS_DIR
    first = subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + KILL_WAIT_S
        while len(list(parts.glob("*.parquet"))) < KILL_AFTER_PARTS:
            assert first.poll() is None, first.stderr.read() if first.stderr else ""
            assert time.monotonic() < deadline, "no parts appeared"
            time.sleep(0.05)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    assert first.returncode == -signal.SIGKILL
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in parts.glob("*.parquet")}
    assert KILL_AFTER_PARTS <= len(before) < KILL_TOTAL
    assert json.loads((out / "study.json").read_text())["complete"] is False

    second = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in parts.glob("*.parquet")}
    assert {name: after[name] for name in before} == before  # not recomputed, not rewritten
    record = json.loads((out / "study.json").read_text())
    assert record["complete"] is True
    assert (record["reused"], record["computed"]) == (len(before), KILL_TOTAL - len(before))
    study = pl.read_parquet(out / "study.parquet")
    assert study.height == KILL_TOTAL
    assert study["scenario"].n_unique() == KILL_TOTAL
    assert study["status"].to_list() == ["ok"] * KILL_TOTAL
    assert f"{KILL_TOTAL - len(before)} computed, {len(before)} reused" in second.stdout
    # The same rows as a study that was never interrupted (but for wall-clock time).
    from planner.api import load_instance
    from planner.study import SerialExecutor, sweep

    grid = parse_grid_args(KILL_GRID)
    serial = sweep(load_instance(tiny_toml), grid, SerialExecutor(), verify=False)
    assert study.drop("pareto", "solve_s").equals(serial.drop("solve_s"))


def parse_grid_args(args: list[str]) -> dict[str, list[int]]:
    """``--grid PATH=1,2 ...`` arguments as a grid of integers."""
    pairs = [a.split("=", 1) for a in args if a != "--grid"]
    return {key: [int(v) for v in values.split(",")] for key, values in pairs}


@pytest.mark.slow
def test_dask_address_plans_on_that_cluster(swept: Path, tiny_toml: Path, tmp_path: Path) -> None:
    from distributed import LocalCluster

    out = tmp_path / "on-dask"
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        args = ["sweep", str(tiny_toml), *GRID, "--dask", cluster.scheduler_address]
        result = runner.invoke(app, [*args, "--no-verify", "-q", "-o", str(out)])
    assert result.exit_code == 0, result.output
    local = pl.read_parquet(swept / "study.parquet").drop("solve_s")
    assert pl.read_parquet(out / "study.parquet").drop("solve_s").equals(local)


def test_an_unreachable_dask_scheduler_is_bad_input(
    tiny_toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import planner.cli

    monkeypatch.setattr(planner.cli, "DASK_CONNECT_S", 1)
    args = ["sweep", str(tiny_toml), "--grid", "cluster.gpus=16", "--dask", "tcp://127.0.0.1:9"]
    result = runner.invoke(app, [*args, "-q", "-o", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "cannot connect" in result.output
    assert not (tmp_path / "o").exists()


def test_progress_counts_the_scenarios_on_stderr(tiny_toml: Path, tmp_path: Path) -> None:
    args = [
        "sweep",
        str(tiny_toml),
        *GRID,
        "--workers",
        "1",
        "--no-verify",
        "-o",
        str(tmp_path / "o"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert [line.split()[0] for line in lines] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    assert "[1/4]" not in result.stdout
