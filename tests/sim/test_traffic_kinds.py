"""Every traffic kind the schema accepts has one registered builder, and nothing else does."""

from __future__ import annotations

from typing import get_args

import pytest

from planner.schema.verify import GroupsName, TrafficKind, TrafficSpec
from planner.sim.traffic_kinds import GROUP_PLACEMENTS, TRAFFIC_KINDS, build_traffic

GPUS = 64
PER_NODE = 8
#: What each kind builds: (Traffic.name, Traffic.algorithm).
BUILDS = {
    "all_reduce_ring": ("all_reduce", "ring"),
    "all_reduce_tree": ("all_reduce", "tree"),
    "all_reduce_hierarchical": ("all_reduce", "hierarchical"),
    "reduce_scatter": ("reduce_scatter", "ring"),
    "all_gather": ("all_gather", "ring"),
    "all_to_all": ("all_to_all", "direct"),
    "point_to_point": ("point_to_point", "direct"),
    "shift": ("point_to_point", "direct"),
    "uniform_all_to_all": ("uniform_all_to_all", "pattern"),
    "random_permutation": ("random_permutation", "pattern"),
    "incast": ("incast", "pattern"),
}


def test_the_registry_holds_exactly_the_schemas_kinds() -> None:
    assert set(TRAFFIC_KINDS) == set(get_args(TrafficKind))


def test_every_group_placement_the_schema_accepts_is_known() -> None:
    assert set(GROUP_PLACEMENTS) == set(get_args(GroupsName))


@pytest.mark.parametrize("kind", sorted(get_args(TrafficKind)))
def test_every_kind_builds_its_own_traffic(kind: str) -> None:
    spec = TrafficSpec.model_validate({"kind": kind, "group_size": 8, "size_bytes": 1e6})
    traffic = build_traffic(spec, GPUS, PER_NODE, seed=1)
    assert traffic.flows > 0
    assert (traffic.name, traffic.algorithm) == BUILDS[kind]
