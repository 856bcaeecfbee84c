"""``fabric-planner sweep``: the study folder, resume after SIGKILL, and bad input (exit 2)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


@pytest.mark.slow
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


@pytest.mark.slow
def test_csv_and_parquet_hold_the_same_study(swept: Path) -> None:
    csv = pl.read_csv(swept / "study.csv")
    parquet = pl.read_parquet(swept / "study.parquet")
    assert csv["scenario"].to_list() == parquet["scenario"].to_list()
    assert csv["capex_usd"].to_list() == pytest.approx(parquet["capex_usd"].to_list())


@pytest.mark.slow
def test_the_same_command_again_reuses_every_scenario(swept: Path, tiny_toml: Path) -> None:
    args = ["sweep", str(tiny_toml), *GRID, "--workers", "1", "--no-verify", "-q", "-o", str(swept)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "scenarios: 0 computed, 4 reused" in result.output
    assert json.loads((swept / "study.json").read_text())["reused"] == 4


@pytest.mark.slow
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


@pytest.mark.slow
def test_other_settings_resume_the_study_and_plan_it_again(swept: Path, tiny_toml: Path) -> None:
    args = ["sweep", str(tiny_toml), *GRID, "--workers", "1", "--no-verify", "-q", "-o", str(swept)]
    again = runner.invoke(app, [*args, "--time-limit", "7"])
    assert again.exit_code == 0, again.output
    assert "4 of 4 scenarios planned again: --time-limit or --no-verify changed" in again.stderr
    assert "scenarios: 4 computed, 0 reused" in again.stdout


@pytest.mark.slow
def test_the_study_of_another_instance_needs_force(swept: Path, tiny_toml: Path) -> None:
    args = ["sweep", str(tiny_toml), *GRID, "--workers", "1", "--no-verify", "-q", "-o", str(swept)]
    refused = runner.invoke(app, [*args, "--set", "cluster.gpus_per_node=4"])
    assert refused.exit_code == 2
    assert "this study's scenarios of another instance" in refused.output
    assert "--force" in refused.output


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_scenario_in_error_makes_exit_1_and_is_named(
    tiny_toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planner import api

    real = api.plan

    def plan(inst: Any, **kwargs: Any) -> Any:  # a bug in the planner, for 16 GPUs only
        if inst.cluster.gpus == 16:
            raise RuntimeError("no plan today")
        return real(inst, **kwargs)

    monkeypatch.setattr(api, "plan", plan)
    out = tmp_path / "o"
    result = runner.invoke(
        app, ["sweep", str(tiny_toml), *GRID, "--workers", "1", "--no-verify", "-o", str(out)]
    )
    assert result.exit_code == 1
    assert "2 of 4 scenarios ended in error" in result.output
    assert "gpus=16+nic_gbps=200: RuntimeError: no plan today" in result.output
    assert "not kept" in result.output
    assert len(list((out / PARTS_DIR).glob("*.parquet"))) == 2
    assert json.loads((out / "study.json").read_text())["complete"] is False


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
        # Text after a closing bracket, a comment or a line break is never dropped silently.
        (["--grid", "cluster.gpus=[16,32] junk"], ["--grid cluster.gpus", "cannot read"]),
        (["--grid", "cluster.gpus=16,32]"], ["--grid cluster.gpus", "cannot read '32]'"]),
        (["--grid", "cluster.gpus=16,32 # 64"], ["--grid cluster.gpus", "cannot read"]),
        (["--grid", "cluster.gpus=16\n32"], ["--grid cluster.gpus", "line break"]),
        (["--grid", "cluster.gpus=16]\nx = [1"], ["--grid cluster.gpus", "line break"]),
        (["--grid", "cluster.gpus=16,,32"], ["--grid cluster.gpus", "empty value"]),
        # The checks solve makes, for every scenario, before the first one runs.
        (
            ["--grid", 'search.switch_models=["sn5600"],["nope"]'],
            ["scenario switch_models=nope", "search.switch_models", "unknown switch model"],
        ),
        (
            ["--grid", "cluster.nic_gbps=400,200", "--set", "cluster.nic=connectx-7"],
            ["scenario nic_gbps=200", "cluster.nic_gbps", "connectx-7"],
        ),
        (
            ["--grid", "search.catalog=default,nope.toml"],
            ["scenario catalog=nope.toml", "search.catalog", "nope.toml", "not found"],
        ),
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
    written = ("pareto", "capex_usd_per_gpu", "power_w_per_gpu")  # added to the study's files
    assert study.drop(*written, "solve_s").equals(serial.drop("solve_s"))


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


#: How long a --dask test lets the command run before it counts as hanging (the connect limit
#: is set to DASK_TEST_CONNECT_S; the bound only keeps a hang from hanging the suite).
DASK_BOUND_S = 60.0
DASK_TEST_CONNECT_S = 1.0
#: How often the loopback server looks for a new connection or its end, in seconds.
SERVER_POLL_S = 0.05
#: What an HTTP server answers to bytes that are not HTTP.
HTTP_REPLY = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@contextmanager
def loopback_server(reply: bytes | None) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts every connection and sends ``reply`` after the
    first bytes it reads, or never answers (None); its ``host:port``. Closed on exit."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(SERVER_POLL_S)
    stop = threading.Event()
    accepted: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(conn)
            if reply is not None:
                conn.settimeout(DASK_BOUND_S)
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                    conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(DASK_BOUND_S)
        server.close()
        for conn in accepted:
            conn.close()


def invoke_bounded(args: list[str]) -> Any:
    """``runner.invoke(app, args)`` in a thread; fails the test if it is still running after
    DASK_BOUND_S (a hang), instead of hanging the suite."""
    box: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: box.update(result=runner.invoke(app, args)), daemon=True
    )
    thread.start()
    thread.join(DASK_BOUND_S)
    assert not thread.is_alive(), f"sweep still running after {DASK_BOUND_S:g} s: it hangs"
    return box["result"]


@pytest.mark.parametrize(
    ("scheme", "reply", "words"),
    [
        ("tcp", None, ["no answer within 1 s"]),
        ("tcp", HTTP_REPLY, ["does not speak Dask's protocol"]),
        ("ucx", None, ["cannot connect over ucx://"]),
        ("nope", None, ["unknown address scheme 'nope'"]),
    ],
    ids=["accepts-and-never-answers", "http-server", "ucx-without-transport", "unknown-scheme"],
)
@pytest.mark.slow
def test_a_dask_address_that_is_no_scheduler_exits_2_in_time(
    tiny_toml: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    scheme: str,
    reply: bytes | None,
    words: list[str],
) -> None:
    import planner.cli.study_commands

    monkeypatch.setattr(planner.cli.study_commands, "DASK_CONNECT_S", DASK_TEST_CONNECT_S)
    out = tmp_path / "o"
    with loopback_server(reply) as address:
        args = [
            "sweep",
            str(tiny_toml),
            "--grid",
            "cluster.gpus=16",
            "--dask",
            f"{scheme}://{address}",
        ]
        result = invoke_bounded([*args, "-q", "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert f"error: cannot connect to the scheduler at {scheme}://{address}: " in result.output
    for word in words:
        assert word in result.output
    assert "internal error" not in result.output
    assert not out.exists()


@pytest.mark.slow
def test_an_unreachable_dask_scheduler_is_bad_input(
    tiny_toml: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import planner.cli.study_commands

    monkeypatch.setattr(planner.cli.study_commands, "DASK_CONNECT_S", DASK_TEST_CONNECT_S)
    args = ["sweep", str(tiny_toml), "--grid", "cluster.gpus=16", "--dask", "tcp://127.0.0.1:9"]
    result = invoke_bounded([*args, "-q", "-o", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "cannot connect to the scheduler at tcp://127.0.0.1:9" in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_values_the_same_once_validated_are_one_scenario_and_said(
    tiny_toml: Path, tmp_path: Path
) -> None:
    out = tmp_path / "o"
    args = ["sweep", str(tiny_toml), "--grid", "cluster.gpus=16,16.0,32", "--workers", "1"]
    result = runner.invoke(app, [*args, "--no-verify", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "merged: cluster.gpus = 16.0 is the same as cluster.gpus = 16" in result.stderr
    assert pl.read_parquet(out / "study.parquet")["scenario"].to_list() == ["gpus=16", "gpus=32"]


@pytest.mark.parametrize(
    ("requested", "cores", "shown"),
    [
        ("10000", 1, "--workers 10000: 1 process, since this machine has 1 core"),
        ("3", 1, "--workers 3: 1 process, since this machine has 1 core"),
    ],
    ids=str,
)
@pytest.mark.slow
def test_more_workers_than_cores_are_capped_and_said(
    tiny_toml: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    requested: str,
    cores: int,
    shown: str,
) -> None:
    monkeypatch.setattr("planner.study.run.default_workers", lambda: cores)
    args = ["sweep", str(tiny_toml), *GRID, "--workers", requested, "--no-verify"]
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert shown in result.stderr


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_grid_that_leaves_no_scenario_a_design_exits_1_and_says_so(
    tiny_toml: Path, tmp_path: Path
) -> None:
    out = tmp_path / "none"
    args = ["sweep", str(tiny_toml), "--grid", "constraints.max_switch_hops=1"]
    args += ["--grid", "cluster.gpus=2048,4096", "--workers", "1", "--no-verify", "-q"]
    result = runner.invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert "no scenario has a design: the plans of all 2 found none" in result.stderr
    assert "constraints.max_switch_hops = 1 in every scenario" in result.stderr
    assert "fabric-planner solve" in result.stderr
    assert "--set constraints.max_switch_hops=1 --set cluster.gpus=2048" in result.stderr
    # The study is written all the same: it is a finding, not bad input.
    assert json.loads((out / "study.json").read_text())["complete"] is True
