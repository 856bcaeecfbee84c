"""Pipeline schedules, recomputation and overlap in the step model, and the papers' volumes.

Closed forms: the 1F1B bubble (P - 1) / m and the interleaved (P - 1) / (v m) (Narayanan et al.
2021, https://arxiv.org/abs/2104.04473, sections 2.2.1-2.2.2); full recomputation's 8 N against
6 N FLOPs a token (Korthikanti et al. 2022, https://arxiv.org/abs/2205.05198, section 5); and the
volumes each GPU sends, against the formulas of those papers and ZeRO's (Rajbhandari et al. 2020,
https://arxiv.org/abs/1910.02054, section 7).
"""

from __future__ import annotations

from typing import Any

import pytest

from planner.schema.workload import Workload
from planner.workload.analytic import Bandwidths, analytic_times, wire_factor
from planner.workload.iteration import collectives, compute_time_s
from planner.workload.step import CollectiveTime, bubble_fraction, step_time

REL = 1e-12

#: A 1B model of 8 layers on 16 GPUs: T 2, P 4, D 2; s = 1,000, h = 1,024, B = 64, b = 1, so
#: m = 64 / 2 = 32. Compute: 6 x 1e9 x 64,000 / 16 = 2.4e13 FLOP at 1e15 x 0.5: 0.048 s.
HAND: dict[str, Any] = {
    "model": {
        "parameters": 1e9,
        "layers": 8,
        "hidden_size": 1024,
        "sequence_length_tokens": 1000,
        "global_batch_sequences": 64,
    },
    "parallelism": {"tensor": 2, "pipeline": 4, "data": 2},
    "gpu": {"peak_flops": 1e15, "utilisation": 0.5, "price_usd_per_hour": 3.6},
}
HAND_COMPUTE_S = 0.048


def _hand(**changes: Any) -> Workload:
    par = HAND["parallelism"] | changes.pop("parallelism", {})
    return Workload.model_validate(HAND | {"parallelism": par} | changes)


@pytest.mark.parametrize(
    ("p", "m", "v", "bubble"),
    [
        (1, 8, 1, 0.0),
        (4, 32, 1, 3 / 32),
        (16, 16, 1, 15 / 16),
        (16, 16, 4, 15 / 64),
        (8, 8, 2, 7 / 16),
    ],
)
def test_bubble_closed_form(p: int, m: int, v: int, bubble: float) -> None:
    assert bubble_fraction(p, m, v) == pytest.approx(bubble, rel=REL)


@pytest.mark.parametrize(("v", "bubble"), [(1, 3 / 32), (2, 3 / 64)])
def test_step_adds_the_bubble_to_compute(v: int, bubble: float) -> None:
    w = _hand(parallelism={"virtual_stages": v})
    times = [CollectiveTime(c, c.name, 0.0) for c in collectives(w, 8)]
    step = step_time(w, times)
    assert step is not None
    # No communication: T_step = T_comp (1 + (P - 1) / (v m)); P = 4, m = 32.
    assert step.bubble_s == pytest.approx(HAND_COMPUTE_S * bubble, rel=REL)
    assert step.step_s == pytest.approx(HAND_COMPUTE_S * (1 + bubble), rel=REL)
    assert step.bubble_fraction == pytest.approx(bubble / (1 + bubble), rel=REL)
    # MFU = 6 N tokens / (G T_step peak) = 0.5 / (1 + bubble).
    assert step.mfu == pytest.approx(0.5 / (1 + bubble), rel=REL)


@pytest.mark.parametrize(
    ("recompute", "factor"), [("none", 1.0), ("selective", 1.0), ("full", 8 / 6)]
)
def test_full_recompute_runs_the_forward_pass_again(recompute: str, factor: float) -> None:
    assert compute_time_s(_hand(recompute=recompute)) == pytest.approx(
        HAND_COMPUTE_S * factor, rel=REL
    )


@pytest.mark.parametrize("v", [1, 2])
def test_interleaving_sends_v_times_between_stages(v: int) -> None:
    (pp,) = [
        c for c in collectives(_hand(parallelism={"virtual_stages": v}), 8) if c.name == "pp_send"
    ]
    # 2 m v sends of b s h a / T = 1,000 x 1,024 x 2 / 2 = 1,024,000 B (Narayanan 2021 2.2.2).
    assert pp.calls == 2 * 32 * v
    assert pp.size_bytes == 1_024_000


#: Per-call times: the TP all-reduce 1 ms (4 x 2 layers x 32 = 256 calls: 0.256 s), the pipeline
#: send 0.5 ms (64 calls: 0.032 s), the DP all-reduce 10 ms (1 call).
CALL_S = {"tp_all_reduce": 1e-3, "pp_send": 0.5e-3, "dp_all_reduce": 10e-3}


@pytest.mark.parametrize(
    ("options", "overlappable_s"),
    [
        ({}, 0.010),
        ({"overlap_tensor_parallel": True}, 0.010 + 0.256),
        ({"overlap_pipeline_parallel": True}, 0.010 + 0.032),
        ({"overlap_tensor_parallel": True, "overlap_pipeline_parallel": True}, 0.298),
    ],
)
def test_tensor_and_pipeline_overlap_are_options(
    options: dict[str, bool], overlappable_s: float
) -> None:
    w = _hand(overlap_fraction=0.1, **options)
    step = step_time(w, [CollectiveTime(c, c.name, CALL_S[c.name]) for c in collectives(w, 8)])
    assert step is not None
    assert step.comm_s == pytest.approx(0.298, rel=1e-9)
    assert step.overlappable_comm_s == pytest.approx(overlappable_s, rel=1e-9)
    # H = min(0.1 C_o, T_comp = 0.048).
    assert step.hidden_comm_s == pytest.approx(min(0.1 * overlappable_s, HAND_COMPUTE_S), rel=1e-9)


# ---- the volumes each GPU puts on the wire, against the papers' formulas -----------------------

#: Bandwidths of 1 byte/s and no latency: an analytic time is then the bytes on the wire.
UNIT = Bandwidths(domain_gpus=8, scale_up_bytes_per_s=1.0, nic_bytes_per_s=1.0, latency_s=0.0)


def _wire_bytes(w: Workload, prefix: str) -> float:
    return sum(
        t.time_per_call_s * t.collective.calls
        for t in analytic_times(w, UNIT)
        if t.collective.name.startswith(prefix) and t.time_per_call_s is not None
    )


def test_tensor_parallel_volume_is_narayanan_s() -> None:
    # Narayanan 2021 section 3.2: 4 all-reduces of b s h a a layer and microbatch, each 2 (t-1)/t
    # of it on the wire: 8 (t - 1) / t b s h per layer per microbatch; L_s = 2, m = 32.
    w = _hand()
    expected = 8 * (2 - 1) / 2 * 1000 * 1024 * 2 * 2 * 32
    assert _wire_bytes(w, "tp_") == pytest.approx(expected, rel=REL)
    # Sequence parallelism (Korthikanti 2022 section 4.2.2): the same bytes as all-gathers and
    # reduce-scatters.
    sp = _hand(parallelism={"sequence_parallel": True})
    assert _wire_bytes(sp, "tp_") == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("v", [1, 2])
def test_pipeline_volume_is_narayanan_s(v: int) -> None:
    # Narayanan 2021 section 4.1 (scatter/gather): b s h a / t a send, 2 m v sends.
    w = _hand(parallelism={"virtual_stages": v})
    assert _wire_bytes(w, "pp_") == pytest.approx(2 * 32 * v * 1000 * 1024 * 2 / 2, rel=REL)


@pytest.mark.parametrize(("zero_stage", "ratio"), [(1, 1.0), (2, 1.0), (3, 1.5)])
def test_zero_volumes_are_rajbhandari_s(zero_stage: int, ratio: float) -> None:
    # ZeRO section 7: stages 1 and 2 move what a data-parallel all-reduce moves (2 Psi), stage 3
    # 1.5 times it (3 Psi), with one microbatch (m = 1: b = 32).
    base = _hand(micro_batch_sequences=32)
    zero = _hand(micro_batch_sequences=32, parallelism={"zero_stage": zero_stage})
    assert _wire_bytes(zero, "dp_") == pytest.approx(ratio * _wire_bytes(base, "dp_"), rel=REL)


@pytest.mark.parametrize(
    ("kind", "n", "factor"),
    [("all_reduce_ring", 8, 2 * 7 / 8), ("reduce_scatter", 4, 3 / 4), ("point_to_point", 2, 1.0)],
)
def test_wire_factor(kind: str, n: int, factor: float) -> None:
    (c,) = [c for c in collectives(_hand(), 8) if c.name == "dp_all_reduce"]
    assert wire_factor(c.__class__(**(c.__dict__ | {"kind": kind, "group_size": n}))) == factor


@pytest.mark.parametrize(
    ("kind", "n", "steps"),
    [
        ("all_reduce_ring", 8, 14),
        ("reduce_scatter", 8, 7),
        ("all_gather", 2048, 2047),
        ("all_to_all", 64, 1),
        ("point_to_point", 2, 1),
    ],
)
def test_latency_is_paid_once_a_ring_step(kind: str, n: int, steps: int) -> None:
    """k(kind, n) α: a ring waits on each of its steps; all-to-all and point-to-point once."""
    from planner.workload.analytic import call_time_s, latency_steps
    from planner.workload.iteration import Collective

    c = Collective(
        name="dp_x",
        kind=kind,
        group_size=n,
        groups=1,
        stride_gpus=8,
        size_bytes=0.0,
        calls=1,
        placement="consecutive",
        size_from="",
    )
    assert latency_steps(c) == steps
    bw = Bandwidths(domain_gpus=8, scale_up_bytes_per_s=1.0, nic_bytes_per_s=1.0, latency_s=1e-5)
    assert call_time_s(c, bw) == pytest.approx(steps * 1e-5)
