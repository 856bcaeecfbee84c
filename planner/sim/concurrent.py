"""Several traffics on one fabric at once: each alone, then all together, as fluid flows.

Collectives that overlap in a training step's schedule, or the jobs of a shared cluster, do not
take turns: they share NICs and links. This module runs them side by side.

Each traffic becomes one *fluid phase* (``fluid_phase``): every (source, destination) pair
carries, as one flow, the bytes of all the traffic's phases with their repeats. A ring's
2 (n - 1) steps of S / n on the same pairs become one flow of 2 (n - 1) S / n per pair: the same
bytes on the same links, without the barrier between steps. The traffics' fluid phases are then
concatenated into one phase and simulated once (``planner.sim.phase_runs.run_phase``: max-min
fair sharing, re-shared at every completion, over the planes and the scale-up domain), and each
traffic's time together is its last flow's completion. Its time alone is the same simulation of
its own flows only. So two traffics whose flows leave one NIC finish together after the sum of
their bytes over the NIC's rate, not after the longer of the two; traffics that share no link
take the longer of their times.

``slowdown = together / alone`` for each traffic (1 when it shares nothing). The fluid phase is
what both runs simulate, so the slowdown compares like with like; it is not the phased time of
``planner.sim.simulate`` (barriers between a ring's steps and per-call latency are left out of
both).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.deadline import NO_DEADLINE, Deadline
from planner.sim import traffic as tr
from planner.sim.fabric import Fabric, FloatArray, IntArray
from planner.sim.phase_runs import run_phase
from planner.sim.routing import Routing
from planner.sim.scale_up import ScaleUp


def fluid_phase(traffic: tr.Traffic, scale: float = 1.0) -> tr.Phase:
    """One flow per (source, destination) pair of ``traffic``, carrying all its bytes x ``scale``.

    bytes(s, d) = scale x Σ_phases repeat x Σ_{flows s -> d} size.
    """
    if scale < 0 or not np.isfinite(scale):
        raise ValueError(f"scale must be finite and non-negative; got {scale}")
    phases = [p for p in traffic.phases if p.flows]
    if not phases:
        return tr.Phase(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    src = np.concatenate([p.src for p in phases])
    dst = np.concatenate([p.dst for p in phases])
    size = np.concatenate([p.size_bytes * p.repeat for p in phases])
    width = int(max(src.max(), dst.max())) + 1
    pair, first = np.unique(src * width + dst, return_inverse=True)
    total = np.bincount(first, weights=size, minlength=pair.size).astype(np.float64) * scale
    return tr.Phase(pair // width, pair % width, total)


@dataclass(frozen=True)
class Together:
    """Each traffic's time alone and with all the others, on one routing."""

    names: tuple[str, ...]
    alone_s: FloatArray
    """Each traffic's fluid phase simulated without the others."""
    together_s: FloatArray
    """Each traffic's last flow's completion when every traffic runs at once."""
    phase_s: float
    """The whole concatenated phase's time (the latest of ``together_s``)."""

    @property
    def slowdown(self) -> FloatArray:
        """Time together over time alone, per traffic (1 for one with no flow on the fabric)."""
        return np.divide(
            self.together_s,
            self.alone_s,
            out=np.ones_like(self.together_s),
            where=self.alone_s > 0,
        )


def _ids(phase: tr.Phase) -> IntArray:
    """The flows' hashing ids: the phase's own, or their index in it (as when run alone)."""
    return np.arange(phase.flows, dtype=np.int64) if phase.flow_id is None else phase.flow_id


def _owner_times(times: FloatArray, owner: IntArray, count: int) -> FloatArray:
    """The latest completion among each owner's flows (0 for an owner with none)."""
    out = np.zeros(count)
    if times.size:
        np.maximum.at(out, owner, times)
    return out


def run_fluid(
    fabric: Fabric,
    phases: Sequence[tr.Phase],
    names: Sequence[str],
    routing: Routing,
    *,
    seed: int = 0,
    scale_up: ScaleUp | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> Together:
    """Simulate fluid ``phases`` (one per traffic) alone and together on the healthy ``fabric``.

    The flows of one phase keep the same hashes alone and together (the same seed and flow ids,
    ``Phase.flow_id``): ECMP puts each on the same path in both runs.
    """
    if len(names) != len(phases):
        raise ValueError(f"{len(names)} names for {len(phases)} phases")
    alone = np.array(
        [
            run_phase(fabric, p, routing, seed, deadline=deadline, scale_up=scale_up).time_s
            if p.flows
            else 0.0
            for p in phases
        ]
    )
    owner = np.repeat(np.arange(len(phases)), [p.flows for p in phases])
    joint = tr.Phase(
        np.concatenate([np.zeros(0, np.int64), *(p.src for p in phases)]),
        np.concatenate([np.zeros(0, np.int64), *(p.dst for p in phases)]),
        np.concatenate([np.zeros(0), *(p.size_bytes for p in phases)]),
        flow_id=np.concatenate([np.zeros(0, np.int64), *(_ids(p) for p in phases)]),
    )
    if not joint.flows:
        return Together(tuple(names), alone, np.zeros(len(phases)), 0.0)
    run = run_phase(fabric, joint, routing, seed, deadline=deadline, scale_up=scale_up)
    together = _owner_times(np.asarray(run.flow_times_s), owner, len(phases))
    return Together(tuple(names), alone, together, float(run.time_s))


def run_together(
    fabric: Fabric,
    traffics: Sequence[tr.Traffic],
    routing: Routing,
    *,
    seed: int = 0,
    scales: Sequence[float] | None = None,
    scale_up: ScaleUp | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> Together:
    """Simulate ``traffics`` alone and together on the healthy ``fabric`` (module docstring).

    ``scales`` multiplies each traffic's bytes (a collective's calls per iteration).
    """
    factors = [1.0] * len(traffics) if scales is None else [float(s) for s in scales]
    if len(factors) != len(traffics):
        raise ValueError(f"{len(factors)} scales for {len(traffics)} traffics")
    phases = [fluid_phase(t, s) for t, s in zip(traffics, factors, strict=True)]
    return run_fluid(
        fabric,
        phases,
        [t.name for t in traffics],
        routing,
        seed=seed,
        scale_up=scale_up,
        deadline=deadline,
    )
