"""A workload runs on the design it is simulated on: ``simulate --instance`` checks the fit.

``solve`` checks that tensor x pipeline x data = cluster.gpus (``planner.checks``), but
``simulate DESIGN --instance I`` paired a saved design with any instance: a workload written for
128 GPUs ran on a 64- or 32,768-GPU design and reported its step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner import api
from planner.cli import app
from planner.design import Design
from planner.errors import InputError
from planner.families import read_design
from planner.schema.instance import Instance
from tests.hostile.family_designs import plan_family_design

#: A 1B dense model: a workload any small cluster can hold.
MODEL: dict[str, Any] = {
    "parameters": 1e9,
    "layers": 4,
    "hidden_size": 1024,
    "sequence_length_tokens": 1024,
    "global_batch_sequences": 640,
}
GPU = {"peak_flops": 1e15, "utilisation": 0.5, "price_usd_per_hour": 2.0}


def _instance(gpus: int, tensor: int, pipeline: int, data: int) -> Instance:
    return Instance.model_validate(
        {
            "name": f"fit-{gpus}",
            "cluster": {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "workload": {
                "model": MODEL,
                "parallelism": {"tensor": tensor, "pipeline": pipeline, "data": data},
                "gpu": GPU,
            },
        }
    )


_DESIGNS: dict[int, Design] = {}


def _design(gpus: int) -> Design:
    """A Clos design of ``gpus`` GPUs (no workload: the design is the workload's stage)."""
    if gpus not in _DESIGNS:
        inst = Instance.model_validate(
            {
                "name": f"fit-design-{gpus}",
                "cluster": {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            }
        )
        design = api.plan(inst, verify=False, alternatives=False).design
        assert design is not None
        _DESIGNS[gpus] = design
    return _DESIGNS[gpus]


@pytest.mark.parametrize(
    ("design_gpus", "parallelism", "product"),
    [
        (64, (8, 4, 4), "8 x 4 x 4 = 128 GPUs"),  # the workload on a smaller design
        (256, (8, 4, 4), "8 x 4 x 4 = 128 GPUs"),  # ... and on a larger one
        (128, (8, 1, 4), "8 x 1 x 4 = 32 GPUs"),
    ],
)
def test_a_workload_that_does_not_fill_the_design_is_refused(
    design_gpus: int, parallelism: tuple[int, int, int], product: str
) -> None:
    t, p, d = parallelism
    inst = _instance(t * p * d, t, p, d)
    design = _design(design_gpus)
    with pytest.raises(InputError) as info:
        api.verify_for(inst, design)
    message = str(info.value)
    assert message.startswith("workload.parallelism: ")
    assert product in message
    assert f"the design has {design_gpus:,} GPUs" in message


@pytest.mark.parametrize("gpus", [64, 128])
def test_a_workload_of_the_designs_gpus_fits(gpus: int) -> None:
    inst = _instance(gpus, 8, 1, gpus // 8)
    verify = api.verify_for(inst, _design(gpus))
    assert verify.traffic  # the workload's collectives, one call each


@pytest.mark.parametrize(("data", "fits"), [(8, True), (10, False)])
def test_a_torus_pod_runs_the_workload_on_its_largest_slice(data: int, fits: bool) -> None:
    # The ocs_torus design holds 80 chips (2 x 2 x 2 cubes, 10 cubes with spares); its
    # simulation runs the 4 x 4 x 4 slice of 64: a workload of 80 would not fit the traffic.
    design = read_design(plan_family_design("ocs_torus"))
    assert design.gpus == 80
    inst = _instance(8 * data, 8, 1, data)
    if fits:
        assert api.verify_for(inst, design).traffic
        return
    with pytest.raises(InputError, match="runs on 64 of its 80 GPUs"):
        api.verify_for(inst, design)


def test_simulate_refuses_a_workload_written_for_other_gpus(tmp_path: Path) -> None:
    design = tmp_path / "design.json"
    design.write_text(json.dumps(_design(256).to_dict()), encoding="utf-8")
    instance = tmp_path / "workload.toml"
    instance.write_text(
        "name = 'workload-128'\n[cluster]\ngpus = 128\n[workload]\n"
        "parallelism = { tensor = 8, pipeline = 4, data = 4 }\n"
        "gpu = { peak_flops = 1e15, price_usd_per_hour = 2.0 }\n"
        "[workload.model]\nparameters = 1e9\nlayers = 4\nhidden_size = 1024\n"
        "sequence_length_tokens = 1024\nglobal_batch_sequences = 640\n",
        encoding="utf-8",
    )
    out = tmp_path / "sim"
    args = ["simulate", str(design), "--instance", str(instance), "-o", str(out), "--quiet"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "error: workload.parallelism: tensor x pipeline x data = 8 x 4 x 4 = 128 GPUs" in (
        result.stderr
    )
    assert "the design has 256 GPUs" in result.stderr
    assert not out.exists()  # refused before the report folder is made
