"""Root causes found by the hostile-input generator, each pinned by a direct test."""

from __future__ import annotations

import numpy as np
import pytest

from planner import ocs
from planner.api import plan
from planner.loading import load_catalog
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance


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
