"""Default output never reports a time below a lone flow's latency plus serialisation (issue 25).

The floor is computed here from first principles, not from ``planner.sim.packet``: a flow of S
bytes alone on the fabric needs at least S x 8 / (its NIC rate) to leave its GPU, and its last
byte then crosses at least one switch (two GPUs on one leaf) of the design's first-tier latency.
Every time the default verification reports (the collective's time, its flow completion
percentiles, the least and greatest over ECMP seeds) must be at or above the floor of its flows;
the fluid model, which the default used to be, reports a 64 KiB flow below it.
"""

from __future__ import annotations

import pytest

from planner.api import plan, simulate
from planner.schema.instance import Instance
from planner.schema.verify import TrafficSpec, Verify
from planner.sim.traffic_kinds import build_traffic

NIC_GBPS = 400
GPUS = 64
#: Time columns of ``sim_collectives`` that must stay above the floor.
TIME_COLUMNS = ("time_s", "p50_fct_s", "p99_fct_s", "min_time_s", "max_time_s")


@pytest.fixture(scope="module")
def design():  # type: ignore[no-untyped-def]
    inst = Instance.model_validate(
        {
            "name": "floor",
            # One GPU a domain: every flow crosses the fabric (a scale-up flow has no NIC floor).
            "cluster": {
                "gpus": GPUS,
                "nic_gbps": NIC_GBPS,
                "nic_ports": [1],
                "gpus_per_node": 1,
                "scale_up": {"gpus": 1},
            },
            "search": {"pin": {"tiers": 2, "switch_models": "qm9700"}},
        }
    )
    d = plan(inst, alternatives=False, verify=False).design
    assert d is not None
    return d


def _floors_s(spec: dict[str, object], leaf_latency_ns: float) -> tuple[float, float]:
    """(the collective's floor, one flow's floor) from the phases the traffic is built of.

    A phase lasts at least its largest flow's serialisation at the NIC rate plus one switch,
    repeated as often as it repeats; a single flow at least the smallest flow's.
    """
    t = build_traffic(TrafficSpec.model_validate(spec), GPUS, 1, 1, domain_gpus=1)
    assert t.phases
    switch_s = leaf_latency_ns * 1e-9
    bits = NIC_GBPS * 1e9 / 8
    whole = sum(p.repeat * (float(p.size_bytes.max()) / bits + switch_s) for p in t.phases)
    one = min(float(p.size_bytes.min()) for p in t.phases) / bits + switch_s
    return whole, one


SPECS = [
    {"kind": "random_permutation", "size_bytes": 64 * 2**10},
    {"kind": "random_permutation", "size_bytes": 32 * 2**20},
    {"kind": "all_reduce_ring", "size_bytes": 2**20, "group_size": GPUS},
    {"kind": "all_to_all", "size_bytes": 2**20, "group_size": 16},
]


@pytest.mark.parametrize("spec", SPECS)
def test_default_times_stay_above_a_lone_flow(design, spec) -> None:  # type: ignore[no-untyped-def]
    verify = Verify.model_validate(
        {"traffic": [spec], "single_switch_failures": False, "bound_max_variables": 0}
    )
    assert verify.fidelity == "packet"
    rows = simulate(design, verify).collectives.filter(scenario="healthy")
    assert rows.height >= 1
    whole, one = _floors_s(spec, design.tiers[0].latency_ns)
    assert one > 0
    for row in rows.iter_rows(named=True):
        for column in TIME_COLUMNS:
            value = row[column]
            if value is None:
                continue
            least = one if column.endswith("_fct_s") else whole
            assert value >= least * (1 - 1e-9), (spec, row["routing"], column, value, least)


def test_the_fluid_model_reports_below_the_floor(design) -> None:  # type: ignore[no-untyped-def]
    """The check can fail: a 64 KiB flow in the fluid model is its serialisation alone."""
    spec = SPECS[0]
    verify = Verify.model_validate(
        {
            "traffic": [spec],
            "fidelity": "fluid",
            "single_switch_failures": False,
            "bound_max_variables": 0,
        }
    )
    rows = simulate(design, verify).collectives.filter(scenario="healthy")
    _, one = _floors_s(spec, design.tiers[0].latency_ns)
    assert any(
        row["p50_fct_s"] is not None and row["p50_fct_s"] < one
        for row in rows.iter_rows(named=True)
    )
