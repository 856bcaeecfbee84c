"""Step time from the workload: the arithmetic of ``planner.workload.step``, and plan + simulate.

The hand-made case's figures are worked out next to each assertion (one pipeline stage: no
bubble; ``tests/workload/test_pipeline_schedule.py`` checks the bubble, recomputation and the overlap
options); the acceptance tests of issue 13 plan and simulate small clusters (64 GPUs) at two NIC
speeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from planner import api
from planner.cli import app
from planner.report.tables import SUMMARY_SCHEMA
from planner.schema.instance import Instance
from planner.schema.verify import TrafficSpec, Verify
from planner.schema.workload import Workload
from planner.workload.iteration import collectives
from planner.workload.step import (
    CollectiveTime,
    StepTime,
    call_times,
    step_time,
    verify_with_workload,
    workload_table,
    workload_traffic,
)

#: Relative tolerance of figures that pass through a few float operations.
REL = 1e-12
#: Step columns of the summary (null without a workload).
STEP_COLUMNS = (
    "step_time_s",
    "compute_s",
    "comm_s",
    "exposed_comm_s",
    "idle_fraction",
    "tokens_per_s",
    "usd_per_million_tokens",
)

# ---- the arithmetic on a hand-made case ------------------------------------------------------

#: A 1B dense model on 8 GPUs: tensor 2 (inside a domain of 8), data 4.
#: Tokens per iteration 64 x 1,000 = 64,000; m = 64 / (1 x 4) = 16 microbatches.
#: Compute: 6 x 1e9 x 64,000 / 8 GPUs = 4.8e13 FLOP per GPU at 1e15 x 0.5 = 5e14 FLOP/s: 0.096 s.
HAND: dict[str, Any] = {
    "model": {
        "parameters": 1e9,
        "layers": 4,
        "hidden_size": 1024,
        "sequence_length_tokens": 1000,
        "global_batch_sequences": 64,
    },
    "parallelism": {"tensor": 2, "data": 4},
    "gpu": {"peak_flops": 1e15, "utilisation": 0.5, "price_usd_per_hour": 3.6},
}
HAND_COMPUTE_S = 0.096
#: Simulated time of one call: the DP all-reduce (1 call), the TP all-reduce (4 x 4 x 16 = 256).
HAND_CALL_S = {"dp_all_reduce": 0.05, "tp_all_reduce": 0.0001}


def _hand(overlap_fraction: float, dp_call_s: float = 0.05) -> StepTime:
    w = Workload.model_validate(HAND | {"overlap_fraction": overlap_fraction})
    calls = HAND_CALL_S | {"dp_all_reduce": dp_call_s}
    times = [CollectiveTime(c, c.name, calls[c.name]) for c in collectives(w, 8)]
    step = step_time(w, times)
    assert step is not None
    return step


def test_hand_case_has_the_two_collectives_assumed() -> None:
    rows = collectives(Workload.model_validate(HAND), 8)
    assert [(c.name, c.calls) for c in rows] == [("dp_all_reduce", 1), ("tp_all_reduce", 256)]


def test_step_arithmetic_with_half_the_gradients_hidden() -> None:
    step = _hand(overlap_fraction=0.5)
    # TP: 0.0001 x 256 = 0.0256 s; DP: 0.05 x 1 = 0.05 s; C = 0.0756 s, C_o = 0.05 s.
    assert step.compute_s == pytest.approx(HAND_COMPUTE_S, rel=REL)
    assert step.comm_s == pytest.approx(0.0756, rel=REL)
    assert step.overlappable_comm_s == pytest.approx(0.05, rel=REL)
    # H = min(0.5 x 0.05, 0.096) = 0.025; E = 0.0756 - 0.025 = 0.0506.
    assert step.hidden_comm_s == pytest.approx(0.025, rel=REL)
    assert step.exposed_comm_s == pytest.approx(0.0506, rel=REL)
    # T_step = 0.096 + 0.0506 = 0.1466 s; idle = 0.0506 / 0.1466.
    assert step.step_s == pytest.approx(0.1466, rel=REL)
    assert step.idle_fraction == pytest.approx(0.0506 / 0.1466, rel=REL)
    # 64,000 tokens / 0.1466 s.
    assert step.tokens_per_s == pytest.approx(64_000 / 0.1466, rel=REL)
    # 8 GPUs x $3.6 / 3,600 s = $0.008 / s; x 0.1466 s / 64,000 tokens x 1e6 = $0.018325.
    assert step.usd_per_million_tokens == pytest.approx(0.018325, rel=REL)


def test_hidden_communication_never_exceeds_compute() -> None:
    step = _hand(overlap_fraction=1.0, dp_call_s=0.2)
    # H = min(1.0 x 0.2, 0.096) = 0.096; E = 0.2 + 0.0256 - 0.096 = 0.1296; T = 0.2256.
    assert step.hidden_comm_s == pytest.approx(HAND_COMPUTE_S, rel=REL)
    assert step.exposed_comm_s == pytest.approx(0.1296, rel=REL)
    assert step.step_s == pytest.approx(0.2256, rel=REL)


def test_tensor_parallel_traffic_never_hides() -> None:
    step = _hand(overlap_fraction=1.0, dp_call_s=0.0)
    # Everything overlappable is hidden, the TP 0.0256 s stays exposed whatever the fraction.
    assert step.exposed_comm_s == pytest.approx(0.0256, rel=REL)


def test_an_untimed_collective_leaves_the_step_unknown() -> None:
    w = Workload.model_validate(HAND)
    times = [CollectiveTime(c, c.name, None) for c in collectives(w, 8)]
    assert step_time(w, times) is None
    table = workload_table(times, None)
    assert table["time_per_call_s"].null_count() == table.height


def test_call_times_reads_the_healthy_row_of_the_routing_and_size() -> None:
    w = Workload.model_validate(HAND)
    pairs = workload_traffic(w, 8)
    (dp, dp_spec), (tp, tp_spec) = pairs
    sim = pl.DataFrame(
        [
            # pattern, size, routing, scenario, time: only the spray healthy rows count.
            (dp_spec.label, dp_spec.size_bytes, "ecmp", "healthy", 9.0),
            (dp_spec.label, dp_spec.size_bytes, "spray", "spine0", 8.0),
            (dp_spec.label, dp_spec.size_bytes * 2, "spray", "healthy", 7.0),
            (dp_spec.label, dp_spec.size_bytes, "spray", "healthy", 0.05),
            (tp_spec.label, tp_spec.size_bytes, "spray", "healthy", 0.0001),
        ],
        schema=["pattern", "size_bytes", "routing", "scenario", "time_s"],
        orient="row",
    )
    times = call_times(pairs, sim, "spray")
    assert [(t.collective, t.time_per_call_s) for t in times] == [(dp, 0.05), (tp, 0.0001)]
    assert [t.time_per_call_s for t in call_times(pairs, sim, "ecmp")] == [9.0, None]


# ---- which traffic is simulated --------------------------------------------------------------

MOE: dict[str, Any] = {
    "preset": "mixtral-8x7b",
    "parallelism": {"data": 64, "expert": 8},
    "gpu": {"peak_flops": 989e12, "price_usd_per_hour": 2.0},
}


def test_workload_traffic_replaces_the_default_traffic() -> None:
    w = Workload.model_validate(HAND)
    verify = verify_with_workload(Verify(), w, 8)
    assert verify.traffic == [spec for _, spec in workload_traffic(w, 8)]


def test_explicit_traffic_is_kept_and_the_workload_appended_once() -> None:
    mine = TrafficSpec(kind="uniform_all_to_all", size_bytes=2**20)
    w = Workload.model_validate(MOE)
    verify = verify_with_workload(Verify(traffic=[mine]), w, 8)
    ours = [spec for _, spec in workload_traffic(w, 8)]
    # ep_dispatch and ep_combine are the same all-to-all: simulated once.
    assert len(set(map(str, ours))) == len(ours) - 1
    assert verify.traffic[0] == mine
    assert len(verify.traffic) == 1 + len(ours) - 1
    assert all(spec in verify.traffic for spec in ours)


def test_too_many_patterns_with_the_workload_are_refused() -> None:
    """The schema caps [verify] at 32 patterns; the workload's appended ones count too."""
    full = [TrafficSpec(kind="uniform_all_to_all", size_bytes=2**20 + i) for i in range(32)]
    w = Workload.model_validate(MOE)
    with pytest.raises(ValueError, match="at most 32 together"):
        verify_with_workload(Verify(traffic=full), w, 8)


def test_without_a_workload_verify_is_unchanged() -> None:
    verify = Verify()
    assert verify_with_workload(verify, None, 8) is verify


# ---- plan + simulate (issue 13 acceptance) ---------------------------------------------------

#: A 20B dense model on 64 GPUs (8 nodes of 8): tensor 8 inside each node, data 8 across nodes.
#: Its gradients, 20e9 / 8 x 2 B = 5 GB a GPU, cross the fabric once an iteration.
BIG_MODEL: dict[str, Any] = {
    "parameters": 20e9,
    "layers": 8,
    "hidden_size": 4096,
    "sequence_length_tokens": 1024,
}
#: Communication-bound: 8 sequences an iteration (one microbatch a replica), nothing hidden.
#: Compute-bound: 1,024 sequences (128 microbatches), half the gradients hidden.
BATCHES = {"communication-bound": (8, 0.0), "compute-bound": (1024, 0.5)}


def _instance(batch: int, overlap: float, nic_gbps: int) -> Instance:
    return Instance.model_validate(
        {
            "name": f"step-{batch}-{nic_gbps}",
            "cluster": {"gpus": 64, "gpus_per_node": 8, "nic_gbps": nic_gbps},
            "constraints": {"max_oversubscription": 1.0, "max_switch_hops": 3},
            "verify": {"single_switch_failures": False},
            "workload": {
                "model": BIG_MODEL | {"global_batch_sequences": batch},
                "parallelism": {"tensor": 8, "data": 8},
                "gpu": {"peak_flops": 989e12, "utilisation": 0.4, "price_usd_per_hour": 2.0},
                "overlap_fraction": overlap,
            },
        }
    )


_PLANS: dict[tuple[str, int], api.PlanResult] = {}


def _plan(case: str, nic_gbps: int) -> api.PlanResult:
    if (case, nic_gbps) not in _PLANS:
        batch, overlap = BATCHES[case]
        _PLANS[case, nic_gbps] = api.plan(_instance(batch, overlap, nic_gbps), alternatives=False)
    return _PLANS[case, nic_gbps]


def _step(case: str, nic_gbps: int) -> StepTime:
    step = _plan(case, nic_gbps).step
    assert step is not None
    return step


def test_communication_bound_workload_is_communication_bound() -> None:
    step = _step("communication-bound", 400)
    assert step.exposed_comm_s > step.compute_s


def test_compute_bound_workload_is_compute_bound() -> None:
    step = _step("compute-bound", 400)
    assert step.compute_s > step.exposed_comm_s


def test_doubling_the_nic_shortens_exposed_communication_when_communication_bound() -> None:
    slow, fast = _step("communication-bound", 400), _step("communication-bound", 800)
    assert fast.exposed_comm_s < slow.exposed_comm_s
    assert fast.step_s < slow.step_s
    assert fast.compute_s == slow.compute_s


def test_doubling_the_nic_changes_a_compute_bound_step_by_less_than_its_communication_share() -> (
    None
):
    slow, fast = _step("compute-bound", 400), _step("compute-bound", 800)
    assert fast.step_s <= slow.step_s
    assert (slow.step_s - fast.step_s) / slow.step_s < slow.comm_s / slow.step_s


def test_plan_simulates_exactly_the_workload_traffic() -> None:
    result = _plan("communication-bound", 400)
    assert result.design is not None
    assert result.sim is not None
    w = result.instance.workload
    assert w is not None
    labels = {spec.label for _, spec in workload_traffic(w, result.design.scale_up.gpus)}
    assert set(result.sim_collectives["pattern"].to_list()) == labels


def test_workload_table_bytes_match_the_iteration() -> None:
    result = _plan("communication-bound", 400)
    w, table = result.instance.workload, result.workload
    assert w is not None
    assert table is not None
    assert result.design is not None
    rows = collectives(w, result.design.scale_up.gpus)
    assert table["collective"].to_list() == [c.name for c in rows]
    assert table["bytes_per_gpu_per_iteration"].to_list() == [c.total_bytes for c in rows]
    assert table["calls"].to_list() == [c.calls for c in rows]
    step = result.step
    assert step is not None
    assert sum(table["time_per_iteration_s"].to_list()) == pytest.approx(step.comm_s, rel=REL)


def test_summary_carries_the_step() -> None:
    result = _plan("communication-bound", 400)
    step = result.step
    assert step is not None
    s = result.summary.row(0, named=True)
    assert s["step_time_s"] == step.step_s
    assert s["exposed_comm_s"] == step.exposed_comm_s
    assert s["usd_per_million_tokens"] == step.usd_per_million_tokens
    assert any(line.startswith("step: ") for line in api.headline(result.summary))


def test_summary_step_columns_are_null_without_a_workload() -> None:
    inst = Instance.model_validate({"name": "plain", "cluster": {"gpus": 64}})
    result = api.plan(inst, alternatives=False, verify=False)
    s = result.summary.row(0, named=True)
    assert list(s) == list(SUMMARY_SCHEMA)
    assert [s[c] for c in STEP_COLUMNS] == [None] * len(STEP_COLUMNS)
    assert result.workload is None
    assert result.step is None


@pytest.mark.slow
def test_simulate_command_with_the_instance_simulates_the_workload_traffic(
    repo_root: Path, tmp_path: Path
) -> None:
    path = repo_root / "instances" / "workload-mixtral-8x7b.toml"
    solved = CliRunner().invoke(app, ["solve", str(path), "-o", str(tmp_path / "s"), "--quiet"])
    assert solved.exit_code == 0, solved.output
    assert "step: " in solved.stdout
    out = tmp_path / "sim"
    design = tmp_path / "s" / "design.json"
    args = ["simulate", str(design), "--instance", str(path), "-o", str(out), "--quiet"]
    simulated = CliRunner().invoke(app, args)
    assert simulated.exit_code == 0, simulated.output
    inst = api.load_instance(path)
    assert inst.workload is not None
    labels = {spec.label for _, spec in workload_traffic(inst.workload, 8)}
    patterns = set(pl.read_parquet(out / "sim_collectives.parquet")["pattern"].to_list())
    assert patterns == labels
    # The step on the saved design is the solve's (same design, same traffic, same simulator).
    steps = ["step_time_s", "exposed_comm_s", "idle_fraction", "idle_gpu_value_usd"]
    after = pl.read_parquet(out / "summary.parquet").select(steps).row(0)
    before = pl.read_parquet(tmp_path / "s" / "summary.parquet").select(steps).row(0)
    assert None not in after
    assert after == pytest.approx(before)
    solved_table = pl.read_parquet(tmp_path / "s" / "workload.parquet")
    assert pl.read_parquet(out / "workload.parquet").equals(solved_table)
    assert "## Workload: one training iteration" in (out / "report.md").read_text()


def test_gpu_power_sits_beside_the_network_power(repo_root: Path) -> None:
    inst = api.load_instance(repo_root / "instances" / "workload-gpt3-175b.toml")
    result = api.plan(inst, alternatives=False, verify=False)
    s = result.summary.row(0, named=True)
    # 128 GPUs x 700 W = 89.6 kW.
    assert s["gpu_power_kw"] == pytest.approx(89.6, rel=REL)
    network_kw = s["interconnect_power_kw"]
    assert s["network_power_share"] == pytest.approx(network_kw / (network_kw + 89.6), rel=REL)
    # The facility: (GPUs + interconnect) x PUE.
    assert s["facility_power_kw"] == pytest.approx((89.6 + network_kw) * inst.objective.pue)
    # Not verified: no simulated times, so no step.
    assert s["step_time_s"] is None


@pytest.mark.slow
def test_summary_compute_includes_the_pipeline_bubble(repo_root: Path) -> None:
    """The GPT-3 example runs P = 4 stages with m = 1,536 / 4 = 384 microbatches (1F1B)."""
    inst = api.load_instance(repo_root / "instances" / "workload-gpt3-175b.toml")
    result = api.plan(inst, alternatives=False)
    step = result.step
    assert step is not None
    # Bubble = (P - 1) / m of compute = 3 / 384; the summary counts it as compute, so the
    # printed step = compute + exposed communication holds.
    assert step.bubble_s == pytest.approx(step.compute_s * 3 / 384, rel=REL)
    s = result.summary.row(0, named=True)
    assert s["compute_s"] == pytest.approx(step.compute_s + step.bubble_s, rel=REL)
    assert s["step_time_s"] == pytest.approx(s["compute_s"] + s["exposed_comm_s"], rel=REL)


@pytest.mark.parametrize(
    "name",
    [pytest.param("workload-mixtral-8x7b", marks=pytest.mark.slow), "workload-gpt3-175b"],
)
def test_families_engineer_for_the_traffic_the_simulator_judges(repo_root: Path, name: str) -> None:
    """OCS circuits and closed-form predictions read [verify] with the workload's traffic."""
    from planner.families.base import simulated_verify

    inst = api.load_instance(repo_root / "instances" / f"{name}.toml")
    # verify_for checks that the workload fits the design: a design of the instance's GPUs.
    design = api.plan(inst, verify=False, alternatives=False).design
    assert design is not None
    assert design.scale_up.gpus == 8
    verify = simulated_verify(inst, design)
    assert verify == api.verify_for(inst, design)
    assert inst.workload is not None
    assert len(verify.traffic) == len({s for _, s in workload_traffic(inst.workload, 8)})
