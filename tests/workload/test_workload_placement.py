"""A workload whose groups cannot be placed on the cluster is refused naming workload.parallelism.

Issue 32: 48 GPUs in 6 nodes with pipeline 4 passed the checks (4 x 3 x 4 = 48) and ended in
``error: verify: stages (4) does not divide 6``, a message that names neither the workload nor
its field. The groups are now placed before the solve, with the simulator's own placement, and
a refusal names the parallel degree at fault.
"""

from __future__ import annotations

from typing import Any

import pytest

from planner.checks import check_workload, check_workload_placement
from planner.errors import InputError
from planner.schema.instance import Instance

#: H100-class GPU without memory (the memory rule is not what these cases test).
GPU = {"peak_flops": 989e12, "utilisation": 0.4, "price_usd_per_hour": 2.0}
MODEL = {
    "parameters": 1e9,
    "layers": 8,
    "hidden_size": 1024,
    "sequence_length_tokens": 1024,
    "global_batch_sequences": 144,
}


def _instance(gpus: int, per_node: int, domain: int, **parallelism: int) -> Instance:
    data: dict[str, Any] = {
        "name": "placement",
        "cluster": {
            "gpus": gpus,
            "gpus_per_node": per_node,
            "nic_gbps": 400,
            "scale_up": {"gpus": domain},
        },
        "workload": {"model": MODEL, "parallelism": parallelism, "gpu": GPU},
    }
    return Instance.model_validate(data)


@pytest.mark.parametrize(
    ("gpus", "per_node", "domain", "parallelism", "words"),
    [
        # 6 nodes of 8 in 4 stages: a stage is no whole block of nodes.
        (48, 8, 8, {"tensor": 3, "pipeline": 4, "data": 4}, ("pipeline (4)", "stages")),
        # 9 nodes in 2 stages.
        (72, 8, 8, {"tensor": 3, "pipeline": 2, "data": 12}, ("pipeline (2)", "9 nodes")),
    ],
)
def test_a_workload_that_cannot_be_placed_names_its_parallelism(
    gpus: int, per_node: int, domain: int, parallelism: dict[str, int], words: tuple[str, ...]
) -> None:
    inst = _instance(gpus, per_node, domain, **parallelism)
    with pytest.raises(InputError) as err:
        check_workload(inst)
    message = str(err.value)
    assert "workload.parallelism" in message
    for word in words:
        assert word in message


def test_a_workload_that_fits_passes() -> None:
    inst = _instance(64, 8, 8, tensor=8, pipeline=2, data=4)
    check_workload(inst)
    assert inst.workload is not None
    check_workload_placement(inst.workload, gpus=64, gpus_per_node=8, domain_gpus=8)
