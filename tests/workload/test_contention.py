"""Collectives in flight together: on one NIC their times add, on different resources they do not.

The step model (``planner.workload.step``) runs the overlappable collectives together: T_O =
max over resources (scale-up link, NIC) of the sum of their times there. The simulator
(``planner.sim.concurrent``) running the same collectives at once on a fabric agrees.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl
import pytest

from planner import api
from planner.schema.instance import Instance
from planner.schema.verify import Verify
from planner.schema.workload import Workload
from planner.sim import collectives as sim_collectives
from planner.sim import traffic_patterns
from planner.sim.concurrent import run_together
from planner.sim.routing import Routing
from planner.workload.iteration import Collective, collectives
from planner.workload.step import (
    SCALE_OUT,
    SCALE_UP,
    CollectiveTime,
    call_times,
    concurrent_s,
    resource_of,
    step_time,
    verify_with_workload,
    workload_traffic,
)
from tests.sim.test_routing import planned

REL = 1e-12
#: A 1B model on 8 GPUs, tensor 2 inside domains of 2, pipeline 2 and data 2 across them (so
#: the data-parallel all-reduce and the pipeline sends both leave through the NIC).
#: Compute: 6 x 1e9 x 64,000 / 8 GPUs / 5e14 FLOP/s = 0.096 s; m = 32; bubble 1/32 of it.
CASE: dict[str, Any] = {
    "model": {
        "parameters": 1e9,
        "layers": 4,
        "hidden_size": 1024,
        "sequence_length_tokens": 1000,
        "global_batch_sequences": 64,
    },
    "parallelism": {"tensor": 2, "pipeline": 2, "data": 2},
    "gpu": {"peak_flops": 1e15, "utilisation": 0.5, "price_usd_per_hour": 3.6},
    "overlap_fraction": 1.0,
    "overlap_pipeline_parallel": True,
}
DOMAIN_GPUS = 2
COMPUTE_S = 0.096
BUBBLE_S = COMPUTE_S / 32
#: Per iteration: DP 0.08 s (1 call), TP 0.0256 s (256 calls), PP 0.064 s (64 calls).
CALL_S = {"dp_all_reduce": 0.08, "tp_all_reduce": 0.0001, "pp_send": 0.001}


def _step(**options: Any) -> Any:
    w = Workload.model_validate(CASE | options)
    times = [CollectiveTime(c, c.name, CALL_S[c.name]) for c in collectives(w, DOMAIN_GPUS)]
    step = step_time(w, times)
    assert step is not None
    return step


def test_the_case_places_dp_and_pp_on_the_nic_and_tp_inside_the_domain() -> None:
    rows = collectives(Workload.model_validate(CASE), DOMAIN_GPUS)
    assert {c.name: resource_of(c) for c in rows} == {
        "dp_all_reduce": SCALE_OUT,
        "tp_all_reduce": SCALE_UP,
        "pp_send": SCALE_OUT,
    }


def test_two_overlapping_collectives_on_one_nic_take_the_sum() -> None:
    step = _step()
    # DP 0.08 + PP 0.064 share the NIC: T_O = 0.144 s, not max(0.08, 0.064) = 0.08.
    assert step.concurrent_comm_s == pytest.approx(0.144, rel=REL)
    # H = min(1.0 x 0.144, 0.096) = 0.096; E = TP 0.0256 + (0.144 - 0.096) = 0.0736.
    assert step.hidden_comm_s == pytest.approx(COMPUTE_S, rel=REL)
    assert step.exposed_comm_s == pytest.approx(0.0736, rel=REL)
    assert step.step_s == pytest.approx(COMPUTE_S + BUBBLE_S + 0.0736, rel=REL)


def test_collectives_on_different_resources_run_side_by_side() -> None:
    step = _step(overlap_pipeline_parallel=False, overlap_tensor_parallel=True)
    # TP 0.0256 on the scale-up link beside DP 0.08 on the NIC: T_O = 0.08 (not 0.1056);
    # all of it hides under 0.096 s of compute; PP 0.064 s stays exposed.
    assert step.overlappable_comm_s == pytest.approx(0.1056, rel=REL)
    assert step.concurrent_comm_s == pytest.approx(0.08, rel=REL)
    assert step.hidden_comm_s == pytest.approx(0.08, rel=REL)
    assert step.exposed_comm_s == pytest.approx(0.064, rel=REL)
    assert step.scale_out_overlappable_comm_s == pytest.approx(0.08, rel=REL)


def _on(placement: Any) -> Collective:
    return Collective("dp_all_reduce", "all_reduce_ring", 4, 1, 64, 1.0, 1, placement)


@pytest.mark.parametrize(
    ("placements", "expected_s"),
    [
        (("same_rail", "consecutive"), 5.0),
        (("tensor_parallel", "tensor_parallel"), 5.0),
        (("tensor_parallel", "same_rail"), 3.0),
        ((), 0.0),
    ],
)
def test_concurrent_time_adds_per_resource(placements: tuple[Any, ...], expected_s: float) -> None:
    running = list(zip([_on(p) for p in placements], [2.0, 3.0], strict=False))
    assert concurrent_s(running) == expected_s


def test_the_simulator_running_them_together_agrees_with_the_sum() -> None:
    """A data-parallel ring and pipeline sends from the same four GPUs, simulated alone and
    together (sprayed on a non-blocking plane, so each NIC is the bottleneck): the analytic
    T_O from the times alone equals the simulated time together."""
    fabric = planned(512)[0]
    gpus = np.array([[0, 64, 128, 192]])
    ring = sim_collectives.ring_all_reduce(gpus, 2.0**26)
    sends = traffic_patterns.point_to_point(gpus[0], gpus[0] + 256, 2.0**24)
    got = run_together(fabric, [ring, sends], Routing.SPRAY)
    dp, pp = _on("same_rail"), _on("same_rail")
    analytic = concurrent_s([(dp, float(got.alone_s[0])), (pp, float(got.alone_s[1]))])
    assert got.phase_s == pytest.approx(analytic, rel=2e-4)
    assert got.phase_s > max(got.alone_s) * 1.1


# ---- the simulator runs the overlapping collectives together ---------------------------------

#: A 20B model on 64 GPUs: tensor 8 inside each node, pipeline 2 and data 4 across nodes, the
#: pipeline sends overlapped (MegaScale): data-parallel gradients and pipeline sends leave the
#: same NICs at the same time.
PIPELINED: dict[str, Any] = {
    "model": {
        "parameters": 20e9,
        "layers": 8,
        "hidden_size": 4096,
        "sequence_length_tokens": 1024,
        "global_batch_sequences": 64,
    },
    "parallelism": {"tensor": 8, "pipeline": 2, "data": 4, "zero_stage": 1},
    "gpu": {"peak_flops": 989e12, "utilisation": 0.4, "price_usd_per_hour": 2.0},
    "overlap_fraction": 0.5,
    "overlap_pipeline_parallel": True,
}


def test_the_overlapping_collectives_form_one_group_at_their_calls() -> None:
    w = Workload.model_validate(PIPELINED)
    verify = verify_with_workload(Verify(), w, 8)
    (group,) = verify.together
    assert group.name == "overlap"
    rows = {c.name: (c, spec) for c, spec in workload_traffic(w, 8)}
    over = ["dp_reduce_scatter", "dp_all_gather", "pp_send"]
    assert [verify.traffic[k] for k in group.traffic] == [rows[n][1] for n in over]
    assert group.scales == [float(rows[n][0].calls) for n in over]


def test_one_overlappable_pattern_makes_no_group() -> None:
    w = Workload.model_validate(
        PIPELINED
        | {"overlap_pipeline_parallel": False}
        | {"parallelism": {"tensor": 8, "pipeline": 2, "data": 4, "zero_stage": 0}}
    )
    assert verify_with_workload(Verify(), w, 8).together == []


@pytest.mark.parametrize("routing", ["spray", "ecmp"])
def test_the_simulated_step_charges_what_running_together_adds(routing: str) -> None:
    """κ = the group's simulated time together over the resource rule on its times alone; the
    step's T_O is κ times the rule on the collectives' own simulated times."""
    inst = Instance.model_validate(
        {
            "name": f"together-{routing}",
            "cluster": {"gpus": 64, "gpus_per_node": 8, "nic_gbps": 400},
            "constraints": {"max_oversubscription": 1.0, "max_switch_hops": 3},
            "verify": {
                "single_switch_failures": False,
                "routing": [routing],
                "verdict_routing": routing,
            },
            "workload": PIPELINED,
        }
    )
    result = api.plan(inst, alternatives=False)
    assert result.sim is not None
    together = result.sim.together.filter(pl.col("group") == "overlap")
    assert together.height == 3
    assert (together["together_s"] >= together["alone_s"] * (1 - 2e-4)).all()
    step = result.step
    assert step is not None
    w = result.instance.workload
    assert w is not None
    pairs = workload_traffic(w, 8)
    times = call_times(pairs, result.sim.collectives, routing)
    group = ("dp_reduce_scatter", "dp_all_gather", "pp_send")
    alone = dict(zip(together["pattern"].to_list(), together["alone_s"].to_list(), strict=True))
    rule_alone = concurrent_s([(c, alone[spec.label]) for c, spec in pairs if c.name in group])
    kappa = float(together["group_s"][0]) / rule_alone
    assert step.contention_factor == pytest.approx(kappa, rel=1e-12)
    running = [(t.collective, t.time_per_iteration_s) for t in times if t.collective.name in group]
    assert step.concurrent_comm_s == pytest.approx(kappa * concurrent_s(running), rel=1e-12)
    # All three leave the NICs: the NIC-sum rule holds to within what the fabric adds.
    assert kappa >= 1 - 2e-4
    if routing == "spray":
        assert kappa == pytest.approx(1.0, rel=2e-3)


@pytest.mark.parametrize(
    ("together", "words"),
    [
        ({"traffic": [0, 2]}, "[verify] lists 2 traffic patterns"),
        ({"traffic": [0, 0]}, "distinct places"),
        ({"traffic": [0, 1], "scales": [1.0, 2.0, 3.0]}, "one per pattern"),
        ({"traffic": [0, 1], "scales": [1.0, 0.0]}, "each above 0"),
        ({"traffic": [0]}, "at least 2"),
    ],
)
def test_a_bad_group_is_refused_with_its_reason(together: dict[str, Any], words: str) -> None:
    two = [
        {"kind": "all_reduce_ring", "size_bytes": 2**20},
        {"kind": "uniform_all_to_all", "size_bytes": 2**20},
    ]
    with pytest.raises(ValueError, match=re.escape(words)):
        Verify.model_validate({"traffic": two, "together": [together]})
