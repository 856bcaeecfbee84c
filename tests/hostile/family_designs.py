"""A small real design of every family, for the hostile-input generator and the design checks.

Each instance plans in well under a second once the solvers are loaded (the whole set in about
three seconds on two cores); the designs are what ``solve`` writes to design.json, as data.
"""

from __future__ import annotations

import json
from typing import Any

#: A small instance of each family (as ``tests/families/test_conformance.py``'s, smaller where it can be).
FAMILY_INSTANCES: dict[str, dict[str, Any]] = {
    "clos": {
        "cluster": {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
        "search": {"pin": {"tiers": 2}},
    },
    "ocs_direct": {
        "cluster": {"gpus": 256, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
        "search": {"families": ["ocs_direct"]},
    },
    "ocs_torus": {
        # 2 x 2 x 2 cubes: the simulated slice is a 4 x 4 x 4 torus of 64 chips.
        "cluster": {"gpus": 64, "gpus_per_node": 4},
        "search": {"families": ["ocs_torus"]},
        "torus": {"cube": 2, "slices": [[4, 4, 4]], "cube_availability": 0.99},
    },
    "torus": {
        "cluster": {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
        "constraints": {"max_oversubscription": 2.0},
        "search": {"families": ["torus"]},
    },
    "rail_optimized": {
        "cluster": {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
        "search": {"families": ["rail_optimized"], "pin": {"tiers": 2}},
    },
    "rail_only": {
        "cluster": {"gpus": 512, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
        "search": {"families": ["rail_only"], "pin": {"tiers": 2}},
    },
    "dragonfly": {
        "cluster": {"gpus": 512, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
        "search": {"families": ["dragonfly"], "switch_models": ["tomahawk4-25t"]},
    },
}


def plan_family_design(family: str) -> dict[str, Any]:
    """The design.json data of ``family``'s instance."""
    from planner.api import plan
    from planner.schema.instance import Instance

    name = f"hostile-{family.replace('_', '-')}"
    inst = Instance.model_validate({"name": name, **FAMILY_INSTANCES[family]})
    result = plan(inst, verify=False, alternatives=False, time_limit_s=30)
    assert result.design is not None, f"{family}: no design ({result.status})"
    assert result.design.family == family
    data: dict[str, Any] = json.loads(result.design.to_json())
    return data


def plan_family_designs() -> dict[str, dict[str, Any]]:
    """The design.json data of every family's instance, by family name."""
    return {family: plan_family_design(family) for family in FAMILY_INSTANCES}
