"""Closed forms: a k-ary fat tree is what the planner builds for k^3/4 GPUs on k-port switches."""

from __future__ import annotations

import pytest

from models.status import Status
from planner.api import validate
from planner.families import search_families
from planner.schema.instance import Instance
from planner.sizing import search
from tests.models.catalogs import catalog, switch


def fat_tree_instance(k: int) -> Instance:
    return Instance.model_validate(
        {
            "name": f"fat-tree-{k}",
            "cluster": {
                "gpus": k**3 // 4,
                "gpus_per_node": 4 if k == 4 else 8,
                "nic_gbps": 400,
                "nic_ports": [1],
            },
            "search": {"pin": {"planes": 1, "tiers": 3, "switch_models": f"k{k}"}},
        }
    )


@pytest.mark.parametrize("k", [4, 8, 16, 48, 64])
def test_k_ary_fat_tree(k: int) -> None:
    cat = catalog([switch(f"k{k}", k)], speeds=(400,))
    inst = fat_tree_instance(k)
    result = search(inst, cat, search_families(inst), alternatives=False)
    d = result.design
    assert result.status is Status.OPTIMAL
    assert d is not None
    assert d.switches == 5 * k * k // 4
    assert [c.links for c in d.link_classes] == [k**3 // 4] * 3
    assert [t.switches for t in d.tiers] == [k * k // 2, k * k // 2, k * k // 4]
    assert validate(d, cat) == []


@pytest.mark.parametrize("k", [8, 16, 64])
def test_two_tier_leaf_spine(k: int) -> None:
    """k^2/2 GPUs on k-port switches: k leaves and k/2 spines, one link each, 1:1."""
    cat = catalog([switch(f"k{k}", k)], speeds=(400,), copper=False)
    inst = Instance.model_validate(
        {
            "name": "leaf-spine",
            "cluster": {"gpus": k * k // 2, "gpus_per_node": 4, "nic_gbps": 400},
            "search": {"pin": {"tiers": 2}},
        }
    )
    d = search(inst, cat, search_families(inst), alternatives=False).design
    assert d is not None
    assert (d.tiers[0].switches, d.tiers[1].switches) == (k, k // 2)
    assert d.tiers[0].downlinks == d.tiers[0].uplinks == k // 2
