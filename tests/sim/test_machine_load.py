"""What a loaded machine changes: only how much of the verification fits the time limit (issue 22).

A clock that runs ten times faster than real time stands for a machine ten times busier: every
step takes ten times as long against the limit. The search proves the same optimum (its model
needs far less than the floor a search always gets), so the design is the same; the simulation
runs fewer steps, says which it left out, and names a ``--time-limit`` under which they run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.api import PlanResult, plan, write_reports
from planner.cli import app
from planner.deadline import HINT_FALLBACK_FACTOR, HINT_MARGIN, Deadline, nice_ceil
from planner.deadline import suggest_time_limit_s as suggest
from planner.schema.instance import Instance

INSTANCE = {
    "name": "loaded",
    "cluster": {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
    "search": {"pin": {"tiers": 2}},
    "verify": {
        "traffic": [
            {"kind": "random_permutation", "size_bytes": 1e7},
            {"kind": "uniform_all_to_all", "size_bytes": 1e7},
        ],
        "routing": ["ecmp", "spray"],
        "monte_carlo_trials": 4,
    },
}


def busy(factor: float) -> Callable[[], float]:
    """A clock running ``factor`` times faster than ``time.perf_counter``."""
    zero = time.perf_counter()
    return lambda: zero + factor * (time.perf_counter() - zero)


@cache
def idle_result() -> PlanResult:
    return plan(Instance.model_validate(INSTANCE), verify=True)


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(0.2, 1.0), (1.0, 1.0), (8.7, 8.7), (87.0, 87.0), (123.4, 130.0), (1001.0, 1100.0)],
)
def test_nice_ceil_rounds_up_to_two_significant_digits(seconds: float, expected: float) -> None:
    assert nice_ceil(seconds) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("elapsed_s", "step_s", "cut", "expected"),
    [
        (10.0, [1.0, 3.0, 2.0], 0, None),  # nothing cut: no suggestion
        (10.0, [1.0, 3.0, 2.0], 4, nice_ceil(10.0 + HINT_MARGIN * 4 * 3.0)),  # the longest step
        (60.0, [12.5], 1, nice_ceil(60.0 + HINT_MARGIN * 12.5)),
        (30.0, [], 5, nice_ceil(HINT_FALLBACK_FACTOR * 30.0)),  # no step ran: twice the time
        (0.1, [], 1, nice_ceil(HINT_FALLBACK_FACTOR * 1.0)),  # never under the step floor
    ],
)
def test_the_suggested_limit_is_the_time_taken_plus_the_cut_steps(
    elapsed_s: float, step_s: list[float], cut: int, expected: float | None
) -> None:
    assert suggest(elapsed_s, step_s, cut) == expected


@pytest.mark.slow
def test_a_busy_machine_keeps_the_design_and_cuts_the_verification() -> None:
    idle = idle_result()
    assert idle.sim is not None
    assert idle.sim.verdict in ("meets", "fails")
    assert idle.sim.cut == ()
    assert idle.sim.time_limit_hint_s is None
    inst = Instance.model_validate(INSTANCE)
    # The idle run's own time, on a clock ten times faster: the busy run cannot finish in it.
    limit_s = max(idle.sim.wall_s, 0.05)
    loaded = plan(inst, verify=True, deadline=Deadline.after(limit_s, busy(10.0)))
    assert loaded.design is not None
    assert idle.design is not None
    # The same design; only the search's wall time differs.
    assert replace(loaded.design, solve_s=0.0) == replace(idle.design, solve_s=0.0)
    assert loaded.sim is not None
    assert loaded.sim.verdict == "incomplete"
    assert loaded.sim.cut
    assert loaded.sim.time_limit_hint_s is not None
    assert loaded.sim.time_limit_hint_s >= 1.0
    row = loaded.summary.row(0, named=True)
    assert row["verdict"] == "incomplete"
    assert row["sim_steps_cut"] == len(loaded.sim.cut)
    assert row["time_limit_hint_s"] == loaded.sim.time_limit_hint_s
    assert idle.summary["sim_steps_cut"][0] == 0
    assert idle.summary["time_limit_hint_s"][0] is None


@pytest.mark.slow
def test_the_report_lists_the_cut_steps_and_the_limit_to_give(tmp_path: Path) -> None:
    inst = Instance.model_validate(INSTANCE)
    loaded = plan(inst, verify=True, deadline=Deadline(at_s=-1.0))
    assert loaded.sim is not None
    assert loaded.sim.time_limit_hint_s is not None
    write_reports(loaded, tmp_path / "out")
    text = (tmp_path / "out" / "report.md").read_text()
    assert "### Not simulated (time limit)" in text
    assert all(f"- {step}" in text for step in loaded.sim.cut)
    assert f"Re-run with --time-limit {loaded.sim.time_limit_hint_s:g} or more" in text
    assert f"re-run with --time-limit {loaded.sim.time_limit_hint_s:g} or more" in text


TOML = """
name = "loaded"
[cluster]
gpus = 128
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1]
[search.pin]
tiers = 2
[verify]
routing = ["ecmp", "spray"]
monte_carlo_trials = 4
[[verify.traffic]]
kind = "random_permutation"
size_bytes = 10000000
[[verify.traffic]]
kind = "uniform_all_to_all"
size_bytes = 10000000
"""


def test_the_toml_is_the_instance_above() -> None:
    import tomllib

    assert Instance.model_validate(tomllib.loads(TOML)) == Instance.model_validate(INSTANCE)


@pytest.mark.slow
def test_the_command_says_on_stderr_what_was_cut_and_what_limit_to_give(
    write_instance: Callable[..., Path], tmp_path: Path
) -> None:
    path = write_instance(TOML, "loaded")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["solve", str(path), "-o", str(out), "--time-limit", "0.1"])
    assert res.exit_code == 0, res.output
    assert "verification: incomplete: the time limit cut " in res.stderr
    assert "or more (this run's time" in res.stderr
    assert "time limit: " in res.stdout
