"""A design's locality domains, read off the fabric, and its family's placement rule."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from models.placement import Rule
from planner.design import Design
from planner.families import fabric_of, family_of
from planner.mix.locality import _nested, _runs_of, locality
from planner.planning import plan
from tests.mix.cases import instance


@cache
def design(family: str) -> Design:
    found = plan(instance().with_families([family]), alternatives=False, verify=False).design
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("labels", "size"),
    [
        ([0, 0, 1, 1, 2, 2], 2),
        ([5, 5, 5, 5], 4),
        ([0, 1, 0, 1], None),  # a domain in two runs
        ([0, 0, 0, 1], None),  # runs of two sizes
    ],
)
def test_domains_must_be_equal_runs_of_ids(labels: list[int], size: int | None) -> None:
    assert _runs_of(np.array(labels)) == size


def test_levels_that_do_not_nest_are_dropped_and_the_rule_kept_first() -> None:
    levels = [("node", 8), ("rule", 12), ("leaf", 32), ("pod", 96), ("leaf-again", 32)]
    assert _nested(levels, 384) == [("node", 8), ("leaf", 32), ("pod", 96), ("cluster", 384)]
    assert _nested(levels, 384, first="rule") == [("rule", 12), ("pod", 96), ("cluster", 384)]
    assert _nested([("odd", 24)], 1000) == [("cluster", 1000)]


def test_a_clos_leaf_domain_is_the_gpus_of_one_leaf_switch() -> None:
    d = design("clos")
    fabric = fabric_of(d)
    loc = locality(d, family_of(d.family), fabric)
    assert loc.rule == Rule()
    assert loc.hierarchy.names[0] == "node"
    assert loc.hierarchy.names[-1] == "cluster"
    leaf_level = loc.hierarchy.names.index("leaf")
    size = loc.hierarchy.gpus_per_domain[leaf_level]
    # GPU links: lower = GPU, upper = its leaf.
    gpu_link = np.flatnonzero(np.asarray(fabric.lower) < fabric.gpus)
    leaf_of = np.empty(fabric.gpus, dtype=np.int64)
    leaf_of[np.asarray(fabric.lower)[gpu_link]] = np.asarray(fabric.upper)[gpu_link]
    for start in range(0, fabric.gpus, size):
        assert len(set(leaf_of[start : start + size].tolist())) == 1
    assert len(set(leaf_of.tolist())) == fabric.gpus // size


def test_rail_only_keeps_a_job_inside_a_scale_up_domain_or_takes_them_whole() -> None:
    d = design("rail_only")
    loc = locality(d, family_of(d.family), fabric_of(d))
    assert loc.rule_domain == "scale-up domain"
    assert loc.rule.level is not None
    assert loc.hierarchy.gpus_per_domain[loc.rule.level] == d.scale_up.gpus
    assert loc.rule.allocated_gpus(12, loc.hierarchy) == 16
    assert loc.rule.allocated_gpus(5, loc.hierarchy) == 5
