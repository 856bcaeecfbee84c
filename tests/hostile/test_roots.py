"""Root causes found by the hostile-input generator, each pinned by a direct test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.scaling import usd_to_units, w_to_units
from planner import ocs
from planner.api import plan
from planner.errors import InputError
from planner.loading import load_catalog
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.torus import plan_torus


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("default")


def test_demand_that_stays_inside_blocks_engineers_uniform_circuits(catalog: Catalog) -> None:
    # compare-fabrics with consecutive groups of 2 GPUs: no byte leaves a block, and the
    # engineering raised "the demand matrix has no positive entry".
    inst = Instance.model_validate(
        {
            "name": "ocs",
            "cluster": {"gpus": 1024, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["ocs_direct"]},
        }
    )
    result = plan(inst, catalog=catalog, verify=False, alternatives=False, time_limit_s=20)
    assert result.design is not None
    blocks = result.design.pods
    inside = np.diag(np.full(blocks, 1e9))
    got = ocs.engineer(result.design, inside, time_limit_s=10)
    uniform = ocs.engineer(result.design, None, time_limit_s=10)
    assert got.circuits == uniform.circuits


def _torus(**torus: object) -> Instance:
    spec = {"cube": 4, "slices": [[4, 4, 8]], "cube_availability": 0.995} | torus
    return Instance.model_validate({"name": "pod", "cluster": {"gpus": 64}, "torus": spec})


def test_a_slice_with_no_twisted_form_stays_a_plain_torus(catalog: Catalog) -> None:
    # twisted = true on a 4x4x4 slice raised "a twisted torus needs a k x k x 2k ... shape".
    result = plan_torus(_torus(slices=[[4, 4, 4], [4, 4, 8]]), catalog)
    rows = result.slices.to_dicts()
    assert [r["twisted"] for r in rows] == [False, True]
    assert all(r["torus_ok"] for r in rows)


def test_a_pod_too_large_for_the_ocs_is_no_pod(catalog: Catalog) -> None:
    # Spares found but too few OCS ports: the row said spares=N with no price, and the CLI
    # printed a pod and failed formatting its missing capex.
    result = plan_torus(_torus(slices=[[16, 16, 16]] * 3), catalog)
    pod = result.pod.row(0, named=True)
    assert pod["status"] == "infeasible"
    assert pod["spares"] is None
    assert pod["cubes"] is None
    assert pod["capex_usd"] is None
    assert "ports per OCS" in pod["reason"]
    assert result.slices.is_empty()


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 1e300, 1e18])
def test_scaling_refuses_what_cp_sat_cannot_hold(value: float) -> None:
    # A cap of 1e300 became a 300-digit integer that CP-SAT's API refused with a TypeError;
    # inf raised OverflowError.
    with pytest.raises(ValueError, match="beyond what the integer models hold"):
        usd_to_units(value)
    with pytest.raises(ValueError, match="beyond what the integer models hold"):
        w_to_units(value)


def test_scaling_keeps_what_it_can_hold() -> None:
    assert usd_to_units(1e13) == 10**15
    assert w_to_units(1e10) == 10**13


def test_an_ocs_device_can_be_named_in_a_failure(catalog: Catalog) -> None:
    # 'ocsN' is documented for verify.failures, but the name pattern left it out:
    # "unknown switch 'ocs0'; expected one of leafN, spineN, circuitN".
    from planner.schema.verify import FailureSpec
    from planner.sim.fabric import build_fabric
    from planner.sim.scenarios import named_scenario

    inst = Instance.model_validate(
        {
            "name": "ocs",
            "cluster": {"gpus": 1024, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["ocs_direct"]},
        }
    )
    result = plan(inst, catalog=catalog, verify=False, alternatives=False, time_limit_s=20)
    assert result.design is not None
    fabric = build_fabric(result.design)
    scenario = named_scenario(fabric, FailureSpec(switches=["ocs0"]))
    assert scenario.failed_links.size > 0
    with pytest.raises(InputError, match="ocs99.*no such OCS device"):
        named_scenario(fabric, FailureSpec(switches=["ocs99"]))
