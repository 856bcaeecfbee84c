"""A step whose routing table cannot fit the memory budget is not run, and says so (issue 22).

At a million GPUs an OCS direct-connect plane's distance table (switches x destination leaves)
is tens of GiB: streaming splits flows, not that table, so the step ran out of memory and the
command ended in an internal error. It is now left out before anything is allocated, and the
verdict is ``incomplete`` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from planner.api import plan
from planner.cli import app
from planner.design import Design
from planner.families import fabric_of
from planner.schema.instance import Instance
from planner.schema.verify import Verify
from planner.sim import traffic as tr
from planner.sim import traffic_patterns
from planner.sim.simulate import simulate
from planner.sim.stream_plan import (
    BUDGET_SAFETY,
    BYTES_PER_GIB,
    TABLE_BYTES_PER_ENTRY,
    OverMemory,
    check_table_memory,
)
from planner.sim.verdict import INCOMPLETE

SMALL = {
    "name": "memory",
    "cluster": {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
    "search": {"pin": {"tiers": 2}},
}


@cache
def design() -> Design:
    result = plan(Instance.model_validate(SMALL), verify=False)
    assert result.design is not None
    return result.design


def _permutation(gpus: int) -> tr.Phase:
    src = np.arange(gpus)
    return traffic_patterns.point_to_point(src, (src + gpus // 2) % gpus, 1e6).phases[0]


@pytest.mark.parametrize("share", [0.5, 0.99, 1.01, 4.0])
def test_the_table_is_refused_exactly_when_it_passes_the_room(share: float) -> None:
    fabric = fabric_of(design())
    phase = _permutation(fabric.gpus)
    leaves = np.unique(fabric.leaf_of(phase.dst)).size
    need = fabric.switches * leaves * TABLE_BYTES_PER_ENTRY
    budget_gib = need / share / BUDGET_SAFETY / BYTES_PER_GIB
    if share > 1:
        with pytest.raises(OverMemory, match="verify.memory_budget_gib"):
            check_table_memory(fabric, phase, budget_gib)
    else:
        check_table_memory(fabric, phase, budget_gib)  # fits: nothing raised
    check_table_memory(fabric, phase, None)  # no budget: never refused


def test_a_step_over_the_budget_is_left_out_and_said() -> None:
    verify = Verify.model_validate(
        {
            "traffic": [{"kind": "random_permutation", "size_bytes": 1e7}],
            "routing": ["ecmp", "spray"],
            "single_switch_failures": False,
            "memory_budget_gib": 1e-9,
        }
    )
    sim = simulate(design(), verify, fabric=fabric_of(design()))
    assert sim.verdict == INCOMPLETE
    assert len(sim.over_memory) == 2  # both routings
    assert sim.collectives.height == 0
    assert sim.cut == ()  # nothing was cut by time
    assert any("not run for memory" in r for r in sim.reasons)


def test_the_command_exits_0_and_names_the_budget(
    write_instance: Callable[..., Path], tmp_path: Path
) -> None:
    path = write_instance(
        """
        name = "memory"
        [cluster]
        gpus = 128
        gpus_per_node = 8
        nic_gbps = 400
        nic_ports = [1]
        [verify]
        memory_budget_gib = 1e-9
        """
    )
    res = CliRunner().invoke(app, ["solve", str(path), "-o", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.output
    assert "verification: not simulated for memory:" in res.stderr
    assert "verify.memory_budget_gib" in res.stderr
    assert "### Not simulated (memory)" in (tmp_path / "out" / "report.md").read_text()
