"""A plan over several families simulates each family's best design: `alternatives` side by side.

The check is independent: each family's simulated fractions must be those of the same family
planned alone and simulated on its own (same traffic, same seeds, healthy).
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from planner.api import plan
from planner.schema.instance import Instance

#: Relative tolerance between the same simulation run twice (deterministic: equal up to rounding).
RTOL = 1e-9

BASE = {
    "cluster": {"gpus": 512, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
    "search": {"families": ["clos", "ocs_direct"], "switch_models": ["qm9700"]},
    "verify": {"single_switch_failures": False, "ecmp_seeds": 1},
}


def _inst(**search: object) -> Instance:
    data = {**BASE, "name": "families", "search": {**BASE["search"], **search}}
    return Instance.model_validate(data)


@pytest.fixture(scope="module")
def both():  # type: ignore[no-untyped-def]
    return plan(_inst(), time_limit_s=60)


@pytest.mark.slow
def test_every_family_best_row_carries_its_simulation(both) -> None:  # type: ignore[no-untyped-def]
    alt = both.alternatives
    simulated = alt.filter(pl.col("sim_verdict").is_not_null())
    assert sorted(simulated["family"].to_list()) == ["clos", "ocs_direct"]
    sims = both.alternatives_sim
    # Each family: every [verify] traffic under every routing, healthy.
    assert sims.group_by("family").len().sort("family")["len"].to_list() == [4, 4]


@pytest.mark.parametrize("family", ["clos", "ocs_direct"])
@pytest.mark.slow
def test_a_family_simulates_as_it_does_alone(both, family: str) -> None:  # type: ignore[no-untyped-def]
    alone = plan(_inst(families=[family]), time_limit_s=60)
    assert alone.sim is not None
    mine = both.alternatives_sim.filter(pl.col("family") == family).sort("pattern", "routing")
    theirs = alone.sim.collectives.filter(pl.col("scenario") == "healthy").sort(
        "pattern", "routing"
    )
    for a, b in zip(mine["fraction_of_ideal"], theirs["fraction_of_ideal"], strict=True):
        assert math.isclose(a, b, rel_tol=RTOL)


def test_a_single_family_plan_simulates_only_its_design() -> None:
    one = plan(_inst(families=["clos"]), time_limit_s=60)
    assert one.family_sims == {}
    assert one.alternatives["sim_verdict"].null_count() == len(one.alternatives)
