"""Leaf-to-leaf hops from one distance column per parent set (``routing_strategies.leaf_hops``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from planner.families.torus.fabric import torus_fabric
from planner.sim.fabric import Fabric
from planner.sim.routing_strategies import distances, leaf_hops
from tests.sim.test_bound import make_fabric

FABRICS: dict[str, Callable[[], Fabric]] = {
    "2tier": lambda: make_fabric(4, 8, 4),
    "2tier-q2": lambda: make_fabric(4, 8, 2, q1=2),
    "3tier": lambda: make_fabric(4, 16, 2, leaves_per_pod=4, cores_per_group=2),
    # Failures: a leaf loses an uplink (its parent set now differs from its pod's), a leaf
    # loses both (an orphan, cut off), and a spine loses a core link.
    "3tier-failed": lambda: make_fabric(
        4, 16, 2, leaves_per_pod=4, cores_per_group=2
    ).with_failed_links(np.array([64, 66, 67, 100])),
    "torus": lambda: torus_fabric(16, 1, (4, 4), 1, 1, 400.0),
}


def every_pair(fabric: Fabric) -> tuple[np.ndarray, np.ndarray]:
    gpus = np.arange(fabric.gpus)
    leaf = np.unique(fabric.leaf_of(gpus))
    a, b = np.meshgrid(leaf, leaf, indexing="ij")
    keep = a != b
    return a[keep], b[keep]


@pytest.mark.parametrize("name", sorted(FABRICS))
def test_one_column_a_parent_set_gives_every_leafs_distance(name: str) -> None:
    fabric = FABRICS[name]()
    src, dst = every_pair(fabric)
    leaves, col = np.unique(dst, return_inverse=True)
    per_leaf = distances(fabric, leaves)[src - fabric.first_switch, col.ravel()]
    np.testing.assert_array_equal(leaf_hops(fabric, src, dst), per_leaf.astype(np.int64))


def test_the_failures_reach_the_hops() -> None:
    """The failed case is not the intact one: an orphan leaf is cut off, others detour."""
    intact = FABRICS["3tier"]()
    failed = FABRICS["3tier-failed"]()
    src, dst = every_pair(intact)
    assert not np.array_equal(leaf_hops(intact, src, dst), leaf_hops(failed, src, dst))
    assert (leaf_hops(failed, src, dst) >= 32_000).any()
