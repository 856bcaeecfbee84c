"""Jobs' traffic run together: per job against the simulator running all of it as one phase."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from planner.families import fabric_of, family_of
from planner.mix.evaluate import MixOutcome, evaluate_mix, rail_rings, sample_mix
from planner.schema.jobs import Jobs
from planner.sim.phase_runs import run_phase
from planner.sim.routing import Routing
from planner.sim.scale_up import scale_up_of
from planner.sim.traffic import Phase
from tests.mix.cases import instance
from tests.mix.test_locality import design

#: Re-sharing merges completions within 1e-4 of each other (``planner.sim.flow.EVENT_RTOL``).
RTOL = 2e-4


def test_a_job_on_two_nodes_sends_one_ring_per_rail() -> None:
    # 16 GPUs on two nodes of 8: eight rings of two, each GPU sends 2 (2 - 1) / 2 S = S.
    phase = rail_rings(np.arange(16), 8, 100.0)
    assert sorted(zip(phase.src.tolist(), phase.dst.tolist(), strict=True)) == sorted(
        [(r, r + 8) for r in range(8)] + [(r + 8, r) for r in range(8)]
    )
    assert np.allclose(phase.size_bytes, 100.0)


def test_a_partial_node_leaves_its_lone_rails_out() -> None:
    # 12 GPUs: 8 on node 0, 4 on node 1; rails 0-3 have two GPUs, rails 4-7 one (no flow).
    phase = rail_rings(np.r_[np.arange(8), np.arange(8, 12)], 8, 100.0)
    assert phase.flows == 8
    assert set(phase.src.tolist()) == {0, 1, 2, 3, 8, 9, 10, 11}


def test_a_three_node_ring_sends_two_thirds_of_twice_the_size() -> None:
    phase = rail_rings(np.array([0, 8, 16]), 8, 300.0)
    assert sorted(zip(phase.src.tolist(), phase.dst.tolist(), strict=True)) == [
        (0, 8),
        (8, 16),
        (16, 0),
    ]
    assert np.allclose(phase.size_bytes, 400.0)  # 2 (3 - 1) / 3 x 300


def test_a_job_inside_one_node_has_no_fabric_traffic() -> None:
    assert rail_rings(np.arange(8), 8, 1.0).flows == 0


def test_sampling_follows_the_gpu_shares() -> None:
    jobs = Jobs(sizes_gpus=[1, 8, 64], gpu_share=[0.2, 0.3, 0.5], source="test", load=100, seed=4)
    sizes = sample_mix(jobs, 8192)
    assert sizes.sum() >= 100 * 8192
    assert sizes.sum() - sizes[-1] < 100 * 8192  # stops at the job that reaches the demand
    share = {s: sizes[sizes == s].sum() / sizes.sum() for s in (1, 8, 64)}
    assert share == pytest.approx({1: 0.2, 8: 0.3, 64: 0.5}, abs=0.02)
    assert np.array_equal(sizes, sample_mix(jobs, 8192))


@cache
def outcome(family: str, policy: str) -> MixOutcome:
    inst = instance(routings=("ecmp", "spray"))
    assert inst.jobs is not None
    d = design(family)
    return evaluate_mix(
        d, family_of(d.family), fabric_of(d), sample_mix(inst.jobs, d.gpus), inst.jobs, policy
    )


@pytest.mark.parametrize("routing", ["ecmp", "spray"])
@pytest.mark.parametrize("policy", ["pack", "first_fit"])
@pytest.mark.parametrize("family", ["clos", "rail_only"])
def test_together_is_the_simulator_running_every_job_as_one(
    family: str, policy: str, routing: str
) -> None:
    """Each job alone is the simulator on its flows; all together, on the union of them."""
    o = outcome(family, policy)
    d = design(family)
    fabric = fabric_of(d)
    scale_up = scale_up_of(d, fabric, pxn=True)
    snap = o.queue.snapshot
    phases = []
    for j in o.running_jobs.tolist():
        ids = np.flatnonzero(snap.job_of_gpu == j)[: int(snap.sizes_gpus[j])]
        phases.append(rail_rings(ids, fabric.rails or d.gpus_per_node, 2.0**30))
    run = o.runs[routing]
    r = Routing(routing)
    for k in np.flatnonzero(run.alone_s > 0)[:5]:
        alone = run_phase(fabric, phases[k], r, 0, scale_up=scale_up).time_s
        assert run.alone_s[k] == pytest.approx(alone, rel=1e-12)
    # Each job's flows keep their ECMP identities (source ports) from running alone.
    union = Phase(
        np.concatenate([p.src for p in phases]),
        np.concatenate([p.dst for p in phases]),
        np.concatenate([p.size_bytes for p in phases]),
        flow_id=np.concatenate([np.arange(p.flows) for p in phases]),
    )
    whole = run_phase(fabric, union, r, 0, scale_up=scale_up)
    assert run.together_s.max() == pytest.approx(whole.time_s, rel=1e-12)
    assert np.all(run.together_s >= run.alone_s * (1 - RTOL))
    assert (run.alone_s > 0).sum() > 3


@pytest.mark.parametrize("policy", ["pack", "first_fit"])
def test_spraying_on_a_non_blocking_clos_slows_no_job(policy: str) -> None:
    """Each GPU sends one flow at most at its NIC's rate; sprayed over a non-blocking Clos, no
    link carries more than its rate, so no job waits for another."""
    run = outcome("clos", policy).runs["spray"]
    assert np.allclose(run.slowdown, 1.0, rtol=RTOL)


def test_first_fit_scatters_jobs_and_ecmp_slows_them_more_than_packing() -> None:
    packed, first = outcome("clos", "pack"), outcome("clos", "first_fit")
    assert first.mean_slowdown("ecmp") > packed.mean_slowdown("ecmp")
    assert packed.mean_slowdown("ecmp") >= 1.0
