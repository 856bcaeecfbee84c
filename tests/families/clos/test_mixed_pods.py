"""A Clos whose pods are of two generations: each pod's links run at its rate (issue 35).

The core is of the newest generation; a pod of the older one runs its GPU, leaf and spine links
at its own rate, and its GPUs are judged at their own NIC.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from planner.design import Design
from planner.design_file import design_from_dict
from planner.families import FAMILIES, fabric_of
from planner.loading import load_catalog
from planner.planning import plan
from planner.schema.instance import Instance
from planner.schema.verify import Verify
from planner.sim.simulate import simulate

SLOW, FAST = 200, 400


@pytest.fixture(scope="module")
def design() -> Design:
    """2,048 GPUs in a three-tier Clos of 64-port switches."""
    inst = Instance.model_validate(
        {
            "name": "mixed-pods",
            "cluster": {"gpus": 2048, "gpus_per_node": 8, "nic_gbps": FAST, "nic_ports": [1]},
            "search": {
                "families": ["clos"],
                "switch_models": ["qm9700"],
                "pin": {"family": "clos", "planes": 1, "tiers": 3, "switch_models": "qm9700"},
            },
        }
    )
    d = plan(inst, catalog=load_catalog(), verify=False, alternatives=False).design
    assert d is not None
    assert d.num_tiers == 3
    assert d.pods >= 2
    return d


def with_slow(d: Design, *slow: int) -> Design:
    return replace(d, block_speed_gbps=tuple(SLOW if p in slow else FAST for p in range(d.pods)))


@pytest.mark.parametrize("slow", [0, 1])
def test_a_pods_links_run_at_its_rate(design: Design, slow: int) -> None:
    fabric = fabric_of(with_slow(design, slow))
    per_pod = design.gpus // design.pods
    want_gpu = np.where(np.arange(design.gpus) // per_pod == slow, SLOW, FAST)
    assert fabric.gpu_speed_gbps is not None
    np.testing.assert_array_equal(fabric.gpu_speed_gbps, want_gpu)
    assert fabric.nic_speed_gbps == FAST
    speed = fabric.speed_gbps[0::2]
    tier = fabric.design_classes
    np.testing.assert_array_equal(speed[tier == 0], want_gpu)
    # Leaf and spine uplinks: slow exactly for the slow pod's leaves and spines.
    up = np.flatnonzero(tier == 1)
    pod_of_leaf = (fabric.lower[up] - fabric.tier_offsets[1]) // design.leaves_per_pod
    np.testing.assert_array_equal(speed[up], np.where(pod_of_leaf == slow, SLOW, FAST))
    top = np.flatnonzero(tier == 2)
    pod_of_spine = (fabric.lower[top] - fabric.tier_offsets[2]) // design.tiers[0].fanout
    np.testing.assert_array_equal(speed[top], np.where(pod_of_spine == slow, SLOW, FAST))


def test_a_uniform_clos_is_unchanged(design: Design) -> None:
    plain, stated = fabric_of(design), fabric_of(with_slow(design))
    assert stated.class_speed_gbps is None
    assert stated.gpu_speed_gbps is None
    np.testing.assert_array_equal(plain.link_class, stated.link_class)


def shifted(d: Design) -> tuple[float, float]:
    """(ideal s, fraction of ideal) of a shift from each pod to the next, sprayed."""
    per_pod = d.gpus // d.pods
    verify = Verify.model_validate(
        {
            "routing": ["spray"],
            "single_switch_failures": False,
            "traffic": [{"kind": "shift", "group_size": per_pod, "size_bytes": 1 << 24}],
        }
    )
    row = simulate(d, verify, fabric=fabric_of(d)).collectives.row(0, named=True)
    return row["ideal_time_s"], row["fraction_of_ideal"]


def test_a_slow_pod_is_judged_at_its_own_nic(design: Design) -> None:
    """Pod 0 at half rate: its GPUs' ideal doubles, and the non-blocking pods reach it."""
    fast_ideal, fast_fraction = shifted(design)
    ideal, fraction = shifted(with_slow(design, 0))
    assert ideal == pytest.approx(fast_ideal * FAST / SLOW, rel=0.01)
    assert fraction == pytest.approx(fast_fraction, abs=0.02)
    assert fraction > 0.9


def test_pod_rates_travel_in_design_json(design: Design) -> None:
    mixed = with_slow(design, 1)
    again = design_from_dict(json.loads(mixed.to_json()), FAMILIES)
    assert again.block_speed_gbps == mixed.block_speed_gbps
