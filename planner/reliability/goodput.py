"""Interruptions, checkpoints and degraded time: the share of the GPUs' time that trains.

Closed form, for failures that arrive as a Poisson process (exponential times between them).

Interruptions
-------------
Λ = Σ_c n_c AFR_c s_c / 365.25 + planned, a day, over the component classes c of
``planner.reliability.classes`` (s_c the share of a class's failures that stop the job); the
mean time between interruptions is M = 86,400 / Λ seconds.

Checkpoints (Young 1974, Daly 2006)
-----------------------------------
With δ the time to write a checkpoint, R the restart time and τ the compute between two
checkpoints, Daly's expected wall time per unit of work for exponential failures gives the
share of wall time that is committed work::

    E(τ) = τ / (M e^{R/M} (e^{(τ + δ)/M} - 1))

(Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22,
2006, eq. 11). Without failures (M → ∞) it tends to τ / (τ + δ); with δ = 0 and τ → 0 (a free
checkpoint taken continuously) to e^{-R/M}. It is computed as the exponential of its logarithm,
ln τ - ln M - R/M - ln(e^{(τ+δ)/M} - 1), so that a restart or a checkpoint many times longer
than M (the schema allows 10,000 minutes of restart and 1,000 planned stops a day) gives a
share that underflows to 0 rather than an overflow: every figure stays finite. The interval is the
instance's, or Daly's higher-order optimum for δ < 2M::

    τ* = sqrt(2 δ M) [1 + (1/3) sqrt(δ / 2M) + (1/9) (δ / 2M)] - δ,    else τ* = M

which is Young's sqrt(2 δ M) to first order.

Degraded time
-------------
A degrading failure of class c leaves a GPU with 1 - b_c of its scale-out bandwidth for a mean
time r_c. Units of the class are down at once as an M/G/∞ queue: Poisson with mean
u_c = (degradations a day) r_c / 24, so the class degrades the job a share p_c = 1 - e^{-u_c}
of the time. A synchronous job runs at the pace of its slowest GPU; with i_c the share of the
healthy step spent waiting on the exposed communication class c carries (``planner.workload.step``),
losing b of the bandwidth stretches that part by 1 / (1 - b)::

    v_c = 1 / ((1 - i_c) + i_c / (1 - b_c))      speed while class c degrades
    D   = Π_c (1 - p_c (1 - v_c))                classes taken as independent

A network class (a NIC port, a link end, a switch) carries only the scale-out part of the
exposed communication: i_c = E_out / T_step, the collectives whose groups leave a scale-up
domain (``placement`` other than ``tensor_parallel``); tensor-parallel traffic inside a domain
runs over NVLink, which a NIC loss does not touch. The hidden time H covers the overlappable
collectives in proportion, so a collective i exposes T_i (1 - H / C_o) when overlappable and
T_i otherwise (``scale_out_idle_fraction``). A scale-up class would carry the rest, E - E_out.
Without a known step i_c = 1 (the step is all communication): the pessimistic end; with a step
but no split, i_c = E / T_step.

Goodput
-------
G = E(τ) D is the share of the GPUs' time that trains; goodput = tokens/s of the healthy step x
G; the time lost is N x 24 (1 - G) GPU-hours a day.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.reliability.classes import ComponentClass, Group
from planner.schema.reliability import Reliability

if TYPE_CHECKING:
    import polars as pl

    from planner.workload.step import StepTime

SECONDS_PER_DAY = 86_400.0
#: Λ below this (a day) counts as no interruption at all (M infinite).
NO_FAILURE_PER_DAY = 1e-12
#: The ``placement`` of a collective whose groups sit inside one scale-up domain (never a NIC).
IN_DOMAIN = "tensor_parallel"
#: Above this x, ln(e^x - 1) is computed as x + ln(1 - e^{-x}) (e^x would overflow near 709).
LOG_EXPM1_DIRECT_BELOW = 30.0


@dataclass(frozen=True)
class Goodput:
    """What failures leave of the GPUs' time, in closed form (module docstring)."""

    interruptions_per_day: dict[Group | str, float]
    """Λ by origin: 'network', 'scale_up', 'outside' and 'planned'."""
    total_interruptions_per_day: float
    """Λ."""
    mtbi_hours: float
    """M in hours (inf without interruptions)."""
    checkpoint_interval_s: float
    """τ: the instance's, or Daly's optimum."""
    checkpoint_efficiency: float
    """E(τ): share of wall time that is committed work."""
    degraded_speed: float
    """D: the throughput left by degraded time, as a share of the healthy step's."""
    goodput_fraction: float
    """G = E(τ) D."""
    idle_fraction: float
    """i: the healthy step's exposed communication share (1 when unknown)."""
    step_known: bool = False
    """Whether i is the simulated step's (False: the pessimistic 1 stood in for it)."""
    scale_out_idle_fraction: float | None = None
    """E_out / T_step: the scale-out part of i, the only one a network class slows (None: i)."""

    @property
    def network_interruptions_per_day(self) -> float:
        """Interruptions a day the scale-out network causes."""
        return self.interruptions_per_day.get("network", 0.0)

    def class_idle_fraction(self, group: Group) -> float:
        """i_c: the exposed share a degrading class of ``group`` slows (module docstring)."""
        out = self.scale_out_idle_fraction
        return exposed_share(group, self.idle_fraction, self.idle_fraction if out is None else out)

    @property
    def lost_fraction(self) -> float:
        """1 - G: the share of GPU time failures take."""
        return 1.0 - self.goodput_fraction


def daly_interval_s(checkpoint_s: float, mtbi_s: float) -> float:
    """Daly's higher-order optimum checkpoint interval τ* (module docstring)."""
    if math.isinf(mtbi_s):
        return math.inf
    if checkpoint_s <= 0:
        return 0.0
    if checkpoint_s >= 2.0 * mtbi_s:
        return mtbi_s
    x = checkpoint_s / (2.0 * mtbi_s)
    return math.sqrt(2.0 * checkpoint_s * mtbi_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - (
        checkpoint_s
    )


def log_expm1(x: float) -> float:
    """ln(e^x - 1) for x > 0, without overflow for large x."""
    if x < LOG_EXPM1_DIRECT_BELOW:
        return math.log(math.expm1(x))
    return x + math.log1p(-math.exp(-x))


def checkpoint_efficiency(
    interval_s: float, checkpoint_s: float, restart_s: float, mtbi_s: float
) -> float:
    """E(τ) = τ / (M e^{R/M} (e^{(τ+δ)/M} - 1)), from its logarithm (module docstring).

    τ / (τ + δ) without failures; e^{-R/M} at τ = δ = 0 (its limit); 0 at τ = 0 with δ > 0.
    """
    if math.isinf(mtbi_s):
        return 1.0 if math.isinf(interval_s) else interval_s / (interval_s + checkpoint_s)
    m = mtbi_s
    if interval_s <= 0:
        return math.exp(-restart_s / m) if checkpoint_s <= 0 else 0.0
    log_e = (
        math.log(interval_s)
        - math.log(m)
        - restart_s / m
        - log_expm1((interval_s + checkpoint_s) / m)
    )
    return min(math.exp(log_e), 1.0)


def degraded_speed(
    classes: Sequence[ComponentClass],
    idle_fraction: float,
    scale_out_idle_fraction: float | None = None,
) -> float:
    """D = Π_c (1 - p_c (1 - v_c)) over the classes that degrade (module docstring).

    A network class is slowed through ``scale_out_idle_fraction`` (``idle_fraction`` when None),
    any other through the rest of the exposed communication.
    """
    scale_out = idle_fraction if scale_out_idle_fraction is None else scale_out_idle_fraction
    speed = 1.0
    for c in classes:
        if c.degradations_per_day <= 0 or c.bandwidth_loss <= 0:
            continue
        i = exposed_share(c.group, idle_fraction, scale_out)
        p = -math.expm1(-c.mean_down_units)
        v = class_speed(c.bandwidth_loss, i)
        speed *= 1.0 - p * (1.0 - v)
    return speed


def exposed_share(group: Group, idle_fraction: float, scale_out_idle_fraction: float) -> float:
    """i_c: the exposed share a class of ``group`` slows (the scale-out part for the network)."""
    if group == "network":
        return scale_out_idle_fraction
    return max(idle_fraction - scale_out_idle_fraction, 0.0)


def scale_out_idle_fraction(workload: pl.DataFrame, step: StepTime) -> float:
    """E_out / T_step: the exposed communication of the collectives that cross the fabric.

    ``workload`` is the step's ``workload`` table (``planner.workload.step.workload_table``):
    a collective inside one scale-up domain (placement ``tensor_parallel``) touches no NIC; the
    others expose T_i when not overlappable. The overlappable ones run together
    (``planner.workload.step``): the NIC's share of them, O_out, is exposed beyond the hidden H,
    max(0, O_out - H) (with every overlappable collective on the NIC, C_o - H).
    """
    exposed = max(0.0, step.scale_out_overlappable_comm_s - step.hidden_comm_s)
    for placement, per_iteration, over in workload.select(
        "placement", "time_per_iteration_s", "overlappable"
    ).iter_rows():
        if placement == IN_DOMAIN or per_iteration is None or over:
            continue
        exposed += per_iteration
    return min(exposed / step.step_s, step.idle_fraction) if step.step_s > 0 else 0.0


def class_speed(bandwidth_loss: float, idle_fraction: float) -> float:
    """V = 1 / ((1 - i) + i / (1 - b)); 0 when the whole bandwidth is lost and i > 0."""
    if bandwidth_loss >= 1.0:
        return 0.0 if idle_fraction > 0 else 1.0
    return 1.0 / ((1.0 - idle_fraction) + idle_fraction / (1.0 - bandwidth_loss))


def interruptions_by_group(
    classes: Sequence[ComponentClass], reliability: Reliability
) -> dict[Group | str, float]:
    """Λ by origin, planned stops included."""
    out: dict[Group | str, float] = {"network": 0.0, "scale_up": 0.0, "outside": 0.0}
    for c in classes:
        out[c.group] = out.get(c.group, 0.0) + c.interruptions_per_day
    out["planned"] = reliability.planned_interruptions_per_day
    return out


def goodput(
    classes: Sequence[ComponentClass],
    reliability: Reliability,
    idle_fraction: float | None = None,
    scale_out_idle_fraction: float | None = None,
) -> Goodput:
    """The closed form of the module docstring for one design's classes.

    ``idle_fraction`` is the step's E / T_step (None: unknown, 1 stands in), and
    ``scale_out_idle_fraction`` its scale-out part E_out / T_step (None: all of it).
    """
    by_group = interruptions_by_group(classes, reliability)
    rate = sum(by_group.values())
    mtbi_s = math.inf if rate < NO_FAILURE_PER_DAY else SECONDS_PER_DAY / rate
    delta = reliability.checkpoint_write_s
    if reliability.checkpoint_interval_minutes is not None:
        tau = reliability.checkpoint_interval_minutes * 60.0
    else:
        tau = daly_interval_s(delta, mtbi_s)
    efficiency = checkpoint_efficiency(tau, delta, reliability.restart_s, mtbi_s)
    i = 1.0 if idle_fraction is None else idle_fraction
    out = None if idle_fraction is None else scale_out_idle_fraction
    speed = degraded_speed(classes, i, out)
    return Goodput(
        interruptions_per_day=by_group,
        total_interruptions_per_day=rate,
        mtbi_hours=mtbi_s / 3600.0,
        checkpoint_interval_s=tau,
        checkpoint_efficiency=efficiency,
        degraded_speed=speed,
        goodput_fraction=efficiency * speed,
        idle_fraction=i,
        step_known=idle_fraction is not None,
        scale_out_idle_fraction=out,
    )
