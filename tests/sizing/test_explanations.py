"""Infeasibility reasons name the real cause: which pins conflict, and hops by the one formula."""

from __future__ import annotations

import pytest

from models.hops import hops
from models.status import Status
from planner.api import evaluate, plan
from planner.schema.instance import Instance


def _pinned(**pin: object) -> Instance:
    return Instance.model_validate(
        {
            "name": "pins",
            "cluster": {"gpus": 1024, "nic_gbps": 400, "nic": "connectx-7"},
            "search": {
                "switch_models": ["qm9700"],
                "pin": {"planes": 1, "tiers": 2, "switch_models": "qm9700", **pin},
            },
        }
    )


@pytest.mark.parametrize(
    ("pin", "expected"),
    [
        ({"switches": [32, 12], "uplinks": [32]}, "32 uplinks cannot spread evenly over 12 spines"),
        ({"downlinks": [40], "uplinks": [32]}, "cannot use 40 down + 32 up ports: its radix is 64"),
        ({"switches": [30], "downlinks": [32]}, "30 leaves x 32 GPU ports = 960 < 1,024 GPUs"),
        (
            {"uplinks": [30], "parallel_links": [4]},
            "30 leaf uplinks are not a whole number of groups of 4 parallel links",
        ),
    ],
)
def test_evaluate_names_the_pins_that_cannot_hold(pin: dict[str, object], expected: str) -> None:
    result = evaluate(_pinned(**pin), verify=False)
    assert result.status is Status.INFEASIBLE
    assert any(expected in line for line in result.explanation), result.explanation


def test_pinned_leaves_that_overfill_the_spines_are_named() -> None:
    """Leaves pinned at 16 down, 16 up and spines at 8: 64 leaves x 2 links = 128 > 64 spine ports."""
    result = evaluate(
        _pinned(switches=[64, 8], downlinks=[16], uplinks=[16], parallel_links=[2]), verify=False
    )
    assert result.status is Status.INFEASIBLE
    text = " ".join(result.explanation)
    assert "64 leaves x 2 parallel links = 128 ports on each spine > its radix 64" in text


@pytest.mark.parametrize(
    ("tiers", "ocs", "transit", "expected"),
    [(1, 0, 0, 1), (2, 0, 0, 3), (3, 0, 0, 5), (3, 1, 0, 4), (3, 1, 1, 5)],
)
def test_one_hop_formula(tiers: int, ocs: int, transit: int, expected: int) -> None:
    assert hops(tiers, ocs, transit) == expected


@pytest.mark.parametrize(
    ("routing", "crossed"),
    [
        ("direct", 4),  # leaf, spine, mirror, spine, leaf: not the 5 of a 3-tier Clos
        ("wcmp", 5),  # and a transit block's spine between the two spines
    ],
)
def test_hop_reason_for_ocs_direct_counts_what_it_crosses(routing: str, crossed: int) -> None:
    inst = Instance.model_validate(
        {
            "name": "hops",
            "cluster": {"gpus": 4096},
            "constraints": {"max_switch_hops": 3},
            "search": {"families": ["ocs_direct"], "ocs_routing": routing},
        }
    )
    result = plan(inst, verify=False, alternatives=False)
    assert result.status is Status.INFEASIBLE
    text = " ".join(result.explanation)
    assert f"crosses {crossed} switches" in text
    assert f"crosses {9 - crossed}" not in text
