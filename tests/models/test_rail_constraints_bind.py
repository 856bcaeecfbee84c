"""Every rail rule of ``models.rail_sizing`` binds: left out, the optimum breaks it.

For each family in ``rail_sizing.CONSTRAINTS`` an instance (built by ``planner.families.rail.sizing``
from the default catalog) whose optimum without the family violates the rule the family states,
while the full model's optimum keeps it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

from models import clos_sizing as cs
from models import rail_sizing as rs
from models.status import Status
from planner.families import family_of
from planner.families.rail.sizing import rail_problems
from planner.loading import load_catalog
from planner.schema.instance import Instance

SOLVE = cs.SolveOptions(time_limit_s=30.0)


@functools.cache
def problem(
    family: str, gpus: int, tiers: int, layout: tuple[tuple[str, Any], ...]
) -> rs.RailProblem:
    inst = Instance.model_validate(
        {
            "name": "bind",
            "cluster": {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": [family], "switch_models": ["qm9700"], "pin": {"tiers": tiers}},
            "layout": dict(layout),
        }
    )
    _, rp = rail_problems(inst, load_catalog("default"), family_of(family), family == "rail_only")[
        0
    ]
    assert rp is not None
    return rp


def whole_units(rp: rs.RailProblem, sol: cs.SizingSolution) -> bool:
    leaf = sol.tier_solutions[0]
    return leaf.switches == rp.rails * -(-rp.nodes // leaf.downlinks)


def pod_units(rp: rs.RailProblem, sol: cs.SizingSolution) -> bool:
    return sol.leaves_per_pod % rp.rails == 0


def leaf_placement(rp: rs.RailProblem, sol: cs.SizingSolution) -> bool:
    placement = sol.plans[0].placement
    return placement != cs.TOP_OF_RACK or sol.tier_solutions[0].downlinks <= rp.nodes_per_rack


def su_cabling(rp: rs.RailProblem, sol: cs.SizingSolution) -> bool:
    cab = rp.clos.cabling[0]
    assert isinstance(cab, rs.SuCabling)
    return cab.su_of(sol.plans[0]) == sol.tier_solutions[0].downlinks


#: family -> (instance: family, GPUs, tiers, layout; the rule as a check of a solution).
CASES: dict[
    str,
    tuple[tuple[str, int, int, tuple[tuple[str, Any], ...]], Callable[..., bool]],
] = {
    "rail.whole_units": (("rail_optimized", 64, 2, ()), whole_units),
    "rail.pod_units": (("rail_optimized", 512, 3, (("nodes_per_rack", 2),)), pod_units),
    "rail.leaf_placement": (("rail_optimized", 64, 2, ()), leaf_placement),
    "rail.su_cabling": (
        ("rail_optimized", 512, 2, (("racks_per_row", 1), ("nodes_per_rack", 2))),
        su_cabling,
    ),
}

#: The registry these cases cover (``tests/families/test_constraint_registries.py``).
COVERS = ((rs.CONSTRAINTS, CASES),)


def test_every_rail_rule_has_a_case() -> None:
    assert set(CASES) == set(rs.CONSTRAINTS)


@pytest.mark.parametrize("family", sorted(CASES))
def test_the_rule_binds(family: str) -> None:
    args, rule = CASES[family]
    rp = problem(*args)
    full = cs.solve(rs.build(rp), SOLVE)
    cut = cs.solve(rs.build(rp, frozenset({family})), SOLVE)
    assert full.status is Status.OPTIMAL
    assert cut.status is Status.OPTIMAL
    assert rule(rp, full)
    assert not rule(rp, cut)
    assert cut.objective_usd is not None
    assert full.objective_usd is not None
    assert cut.objective_usd <= full.objective_usd * (1 + 1e-9)
