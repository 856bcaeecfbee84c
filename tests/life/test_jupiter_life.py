"""The Jupiter-style life of ``instances/jupiter-life-65k.toml``: what issue 35 asks of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.life import LifePlan, plan_life
from planner.loading import load_instance

INSTANCE = Path(__file__).resolve().parents[2] / "instances" / "jupiter-life-65k.toml"


@pytest.fixture(scope="module")
def jupiter() -> LifePlan:
    return plan_life(load_instance(INSTANCE))


@pytest.mark.slow
def test_every_phase_is_validated_and_simulated(jupiter: LifePlan) -> None:
    table = jupiter.table
    assert table.height == 8  # two families, four phases
    assert table["violations"].to_list() == [0] * 8
    assert all(f is not None and f > 0.95 for f in table["fraction_of_ideal"].to_list())


@pytest.mark.slow
def test_the_clos_core_is_refreshed_when_faster_blocks_arrive(jupiter: LifePlan) -> None:
    clos = jupiter.families["clos"].table
    assert clos["top_model"].to_list() == ["tomahawk4-25t"] * 2 + ["sn5600"] * 2
    # The refresh moves every standing block's 64 x 64 uplinks onto the new core.
    assert clos["links_recabled"][2] == 4 * 64 * 64
    # Pods of both generations side by side, each simulated at its own rate.
    design = jupiter.families["clos"].designs[3]
    assert design is not None
    assert design.block_speed_gbps.count(200) == 4
    assert design.block_speed_gbps.count(400) == 12


@pytest.mark.slow
def test_the_ocs_layer_is_kept_and_its_circuits_re_engineered(jupiter: LifePlan) -> None:
    ocs = jupiter.families["ocs_direct"].table
    assert set(ocs["top_model"].to_list()) == {"palomar-136"}
    assert ocs["top_devices"].to_list() == sorted(ocs["top_devices"].to_list())
    assert ocs["circuits_changed"][0] == 0
    assert all(c > 0 for c in ocs["circuits_changed"].to_list()[1:])
    # Blocks of both generations side by side: the newest are simulated at their speed.
    design = jupiter.families["ocs_direct"].designs[2]
    assert design is not None
    assert sorted(set(design.block_speed_gbps)) == [200, 400]
