"""OCS direct-connect with one aggregation block: nothing for the OCS layer to join (issue 32).

A direct-connect design whose Clos sizing puts every GPU in one pod (``search.pin.pods = 1``,
or a cluster that fits one block) reached the circuit engineering, whose model needs two
blocks: ``internal error: ValueError: need at least 2 blocks``. ``solve`` now refuses it naming
the pods, and ``compare-fabrics`` compares what can be compared: the electrical Clos, and an
OCS row that says why it has no design.
"""

from __future__ import annotations

import pytest

from planner.api import compare_fabrics, plan
from planner.errors import InputError
from planner.families.ocs_direct.family import ONE_BLOCK
from planner.loading import load_catalog
from planner.schema.instance import Instance

ONE_POD = Instance.model_validate(
    {
        "name": "ocs-one-block",
        "cluster": {"gpus": 256, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
        "search": {"families": ["ocs_direct"], "pin": {"pods": 1}},
    }
)


@pytest.mark.slow
def test_solve_refuses_one_block_naming_the_pods() -> None:
    with pytest.raises(InputError) as err:
        plan(ONE_POD, catalog=load_catalog("default"), verify=False, alternatives=False)
    message = str(err.value)
    assert "one aggregation block" in message
    assert "search.pin.pods" in message


@pytest.mark.slow
def test_compare_fabrics_compares_what_it_can_with_one_block() -> None:
    result = compare_fabrics(ONE_POD, catalog=load_catalog("default"), time_limit_s=30)
    table = result.table
    electrical = table.filter(table["fabric"] == "electrical")
    assert electrical.height >= 1
    assert electrical["fraction_of_ideal"].drop_nulls().len() >= 1
    ocs_rows = table.filter(table["fabric"] != "electrical")
    assert ocs_rows["status"].to_list() == [ONE_BLOCK]
    assert ocs_rows["capex_usd"].null_count() == 1
