"""``clos_sizing.binds``: a relaxable family adds constraints exactly when ``binds`` says so.

A diagnosis skips re-solving a relaxation that ``binds`` calls vacuous (the model without the
family would be the same model). Here every relaxable family is built with and without on
structures with no limits and with every limit and pin, for the Clos and the rail model: the
constraint count changes exactly when ``binds`` is True.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from models import clos_sizing as cs
from models import rail_sizing as rs
from planner.families import family_of, search_families
from planner.families.rail.sizing import rail_problems
from planner.loading import load_catalog
from planner.schema.instance import Instance
from planner.sizing import structures_of

#: Everything a relaxable family can be about: caps, a hop limit a 3-tier Clos breaks, a failure
#: rule, and pins.
LIMITS: dict[str, Any] = {
    "constraints": {
        "max_switch_hops": 3,
        "max_latency_ns": 5000,
        "max_power_kw": 10_000,
        "max_capex_usd": 1e9,
        "survive": {"min_bandwidth_fraction": 0.75, "tiers": ["spine"]},
    },
    "pin": {"downlinks": [32]},
}


@cache
def problems(
    limited: bool, tiers: int, family: str
) -> tuple[cs.SizingProblem, rs.RailProblem | None]:
    """A 1,024-GPU structure of ``tiers`` tiers, with every limit or none; its rail problem."""
    data: dict[str, Any] = {
        "name": f"binds-{family}-{tiers}",
        "cluster": {
            "gpus": 1024,
            "gpus_per_node": 8,
            "nic_gbps": 400,
            "nic_ports": [1],
            "scale_up": {"gpus": 8, "gbps_per_gpu": 3600},
        },
        "search": {"families": [family], "pin": {"tiers": tiers}},
    }
    if limited:
        data["constraints"] = LIMITS["constraints"]
        data["search"]["pin"] |= LIMITS["pin"]
    inst = Instance.model_validate(data)
    catalog = load_catalog("default")
    if family == "clos":
        (st,) = structures_of(inst, catalog, search_families(inst))
        assert st.problem is not None
        return st.problem, None
    _, rp = rail_problems(inst, catalog, family_of(family), family == "rail_only")[0]
    assert rp is not None
    return rp.clos, rp


def constraints(model: cs.BuiltModel) -> int:
    return len(model.model.proto.constraints)


@pytest.mark.parametrize("relaxed", cs.RELAXABLE)
@pytest.mark.parametrize("tiers", [2, 3])
@pytest.mark.parametrize("limited", [False, True], ids=["no-limits", "every-limit"])
def test_a_clos_family_adds_constraints_exactly_when_it_binds(
    relaxed: str, tiers: int, limited: bool
) -> None:
    p, _ = problems(limited, tiers, "clos")
    changed = constraints(cs.build(p)) != constraints(cs.build(p, frozenset({relaxed})))
    assert changed == cs.binds(p, relaxed)


@pytest.mark.parametrize("relaxed", cs.RELAXABLE)
@pytest.mark.parametrize("limited", [False, True], ids=["no-limits", "every-limit"])
def test_a_rail_family_adds_constraints_exactly_when_it_binds(relaxed: str, limited: bool) -> None:
    p, rp = problems(limited, 3, "rail_optimized")
    assert rp is not None
    changed = constraints(rs.build(rp)) != constraints(rs.build(rp, frozenset({relaxed})))
    assert changed == cs.binds(p, relaxed)


@pytest.mark.parametrize("relaxed", cs.RELAXABLE)
def test_every_relaxable_family_binds_under_some_limit(relaxed: str) -> None:
    p, _ = problems(True, 3, "clos")
    assert cs.binds(p, relaxed)
