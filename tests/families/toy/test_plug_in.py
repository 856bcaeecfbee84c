"""A family plugs in with its package, one registry line, its instance and its tests (issue 34).

The leaf mesh (``family.py``) lives in this test folder and nowhere else: registering it is the
one line ``FAMILIES[MESH] = Mesh()``. Then the whole pipeline takes it as it takes the
families that ship: the instance schema accepts its name, the search sizes it, the validator
recomputes its design, design.json round-trips its wiring, the simulator routes its plane, and
``fabric-planner solve`` writes its reports.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.api import load_design, load_instance, validate
from planner.cli import app
from planner.families import FAMILIES, read_design
from planner.planning import plan
from tests.families.toy.family import MESH, Mesh, MeshWiring, load_ratio

INSTANCE = Path(__file__).with_name("leaf-mesh.toml")


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry line, for the length of one test."""
    monkeypatch.setitem(FAMILIES, MESH, Mesh())


def test_an_unregistered_family_is_refused_by_name() -> None:
    with pytest.raises(Exception, match="leaf_mesh"):
        load_instance(INSTANCE)


@pytest.mark.usefixtures("registered")
def test_the_plugged_in_family_is_planned_checked_and_simulated() -> None:
    result = plan(load_instance(INSTANCE), time_limit_s=60.0)
    d = result.design
    assert d is not None
    assert d.family == MESH
    w = d.wiring
    assert isinstance(w, MeshWiring)
    # The model's rules hold on its design: the radix, the GPUs, the ratio.
    t = d.tiers[0]
    assert t.downlinks + t.uplinks <= t.radix
    assert w.leaves * w.gpus_per_leaf >= d.gpus
    assert load_ratio(w.gpus_per_leaf, w.parallel_links, d.gpus) <= 1.0 + 1e-9
    # The validator recomputes its ports, links and totals independently.
    assert validate(d) == []
    # The simulator routed its plane: no routing beats the optimal-routing bound, and spraying
    # over the mesh's q parallel links comes within 5 % of it (ECMP loses more to collisions).
    assert result.sim is not None
    rows = result.sim.collectives.select("routing", "fraction_of_bound").rows()
    assert {r for r, _ in rows} == {"ecmp", "spray"}
    assert all(0.0 < f <= 1.0 + 1e-9 for _, f in rows)
    assert dict(rows)["spray"] >= 0.95
    # design.json round-trips its wiring through the family's own reader.
    again = read_design(d.to_json())
    assert again.wiring == w
    assert math.isclose(again.capex_usd, d.capex_usd)


@pytest.mark.usefixtures("registered")
def test_the_command_writes_the_plugged_in_family_s_reports(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = CliRunner().invoke(app, ["solve", str(INSTANCE), "--output", str(out), "--quiet"])
    assert run.exit_code == 0, run.output
    design = json.loads((out / "design.json").read_text())
    assert design["family"] == MESH
    assert isinstance(load_design(out / "design.json").wiring, MeshWiring)
    assert "leaf_mesh" in (out / "report.md").read_text()
