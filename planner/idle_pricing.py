"""The price of idle GPUs in the objective: plan along a ladder of allowed ratios, simulate each.

The sizing model minimises network cost, capex_weight x capex + energy_weight x energy, subject to
an allowed oversubscription ratio per tier. What a ratio costs the GPUs is not in it: the idle
fraction of a training step comes from the simulation of the workload's traffic on the design
(``planner.workload.step``). With ``objective.idle_gpu_weight = w > 0`` the planner minimises

    total(D) = network(D) + w V(D),    V(D) = N p H i(D)

(N GPUs, p the price of a GPU-hour, H the lifetime's hours, i(D) = E / T_step the idle fraction
of D's step) by decomposition over the network's capacity:

1. **Ladder.** The instance's allowed ratio c_t at each tier t it can set becomes a ladder of
   caps c_t(j) = 1 + (c_t - 1) j / J for j = J, ..., 0 (``LADDER_STEPS`` = J; a tier already at
   or below 1 keeps its cap), rounded down to the model's ratio grid: from what the instance
   allows to non-blocking.
2. **Inner optimum.** At each rung the search gives D_j, the cheapest network whose ratios are
   within c(j) (exact: the MILP's optimum, as in any plan). A rung whose caps D_{j+1} already
   meets has the same optimum, so it is not planned again.
3. **Evaluation.** D_j is simulated under the workload's traffic ([verify]'s too) and its step
   gives i(D_j), hence V(D_j) and total(D_j).
4. **Bound.** The non-blocking rung (j = 0) is planned and simulated first; its value V_0 is a
   floor for every rung (more capacity never makes the step longer: a flow's rate is capped by
   its NIC and the most loaded link on its path, and a lower ratio only adds up-links). Network
   cost grows as the caps tighten, so once network(D_j) + w V_0 reaches the best total found,
   no rung below j can beat it and the walk stops.
5. **Choice.** The least total among the rungs whose simulation does not fail [verify]
   (bandwidth stays a constraint), or among all rungs when every one fails.

The choice is exact over the rungs; between two rungs the network optimum may take ratios the
ladder does not visit (the rung table shows how far apart the rungs' ratios are).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

import polars as pl

from planner.bandwidth_loop import (
    MIN_RATIO,
    Planned,
    allowed_ratios,
    grid_ratio,
    tier_ratios,
)
from planner.schema.instance import Instance

if TYPE_CHECKING:
    from planner.design import Design
    from planner.sim.sim_tables import SimResult
    from planner.workload.step import StepTime

#: Rungs between the instance's allowed ratios and non-blocking (J of the module docstring).
LADDER_STEPS = 4
#: A ratio within this of the cap counts as meeting it (float rounding of d / u).
RATIO_TOL = 1e-9

R = TypeVar("R")


@dataclass(frozen=True)
class Rung(Generic[R]):
    """One rung of the ladder: its caps, its planned design and what the GPUs make of it."""

    rung: int
    """j of the module docstring: LADDER_STEPS for the instance's own caps, 0 for non-blocking."""
    caps: tuple[float, ...]
    """Allowed ratio at each tier the instance can set, leaf first."""
    planned: Planned[R] | None
    """The search at these caps (None: not planned, see ``note``)."""
    sim: SimResult | None
    step: StepTime | None
    idle_gpu_value_usd: float | None
    """V = N p H i over the lifetime (None: the step is unknown)."""
    total_usd: float | None
    """network objective + w V (None: unknown)."""
    note: str
    """Why the rung was skipped, reused or not eligible; empty when it was planned and counted."""

    @property
    def design(self) -> Design | None:
        """The rung's design (None: not planned, or no design under its caps)."""
        return None if self.planned is None else self.planned.design

    @property
    def eligible(self) -> bool:
        """Whether the rung has a total and its simulation does not fail [verify]."""
        return self.total_usd is not None and self.sim is not None and self.sim.verdict != "fails"


@dataclass(frozen=True)
class PricedSearch(Generic[R]):
    """Every rung of the walk and the one chosen."""

    weight: float
    """w: the objective's ``idle_gpu_weight``."""
    rungs: tuple[Rung[R], ...]
    """In the order they were evaluated (the non-blocking rung first)."""
    chosen: Rung[R] | None
    """The rung of least total (None when no rung has a design)."""
    message: str

    @property
    def cheapest(self) -> Rung[R] | None:
        """The rung at the instance's own caps: what network cost alone chooses."""
        return next((r for r in self.rungs if r.rung == LADDER_STEPS), None)


def ladder(inst: Instance, steps: int = LADDER_STEPS) -> list[tuple[float, ...]]:
    """The caps of rungs steps, ..., 0 (index = rung), leaf first, on the model's grid."""
    allowed = allowed_ratios(inst)
    rungs = []
    for j in range(steps + 1):
        rungs.append(
            tuple(
                c if c <= 1.0 else max(MIN_RATIO, grid_ratio(1.0 + (c - 1.0) * j / steps))
                for c in allowed
            )
        )
    return rungs


def caps_text(caps: tuple[float, ...]) -> str:
    """'leaf 2:1, spine 1:1'."""
    return ", ".join(f"{role} {c:g}:1" for role, c in zip(("leaf", "spine"), caps, strict=False))


def idle_gpu_value_usd(inst: Instance, step: StepTime) -> float:
    """V = N p H i: the lifetime value of the GPU time the step leaves idle."""
    w = inst.workload
    assert w is not None
    return (
        inst.cluster.gpus
        * w.gpu.price_usd_per_hour
        * inst.objective.lifetime_hours
        * step.idle_fraction
    )


def _within(design: Design, caps: tuple[float, ...]) -> bool:
    """Whether a design's tier ratios already meet ``caps``."""
    ratios = tier_ratios(design)
    return all(r <= c * (1 + RATIO_TOL) for r, c in zip(ratios, caps, strict=False))


def run_priced(
    inst: Instance,
    plan_once: Callable[[Instance], Planned[R]],
    simulate: Callable[[Instance, Design], SimResult],
    step_of: Callable[[Instance, Design, SimResult], StepTime | None],
    *,
    steps: int = LADDER_STEPS,
) -> PricedSearch[R]:
    """Walk the ladder (module docstring) and choose the rung of least total."""
    weight = inst.objective.idle_gpu_weight
    caps = ladder(inst, steps)

    def at(j: int) -> Instance:
        return inst.with_ratio_caps(caps[j])

    def evaluate(j: int, planned: Planned[R], note: str = "") -> Rung[R]:
        d = planned.design
        if d is None:
            why = "; ".join(planned.explanation) or "the search found no design"
            return Rung(j, caps[j], planned, None, None, None, None, f"no design: {why}")
        sim = simulate(at(j), d)
        step = step_of(at(j), d, sim)
        if step is None:
            return Rung(j, caps[j], planned, sim, None, None, None, "the step was not timed")
        value = idle_gpu_value_usd(inst, step)
        return Rung(j, caps[j], planned, sim, step, value, d.objective_usd + weight * value, note)

    floor = evaluate(0, plan_once(at(0)))
    rungs: list[Rung[R]] = [floor]
    floor_value = floor.idle_gpu_value_usd
    message = f"walked every rung from {caps_text(caps[steps])} to {caps_text(caps[0])}"
    previous: Rung[R] | None = None
    for j in range(steps, 0, -1):
        if caps[j] == caps[0]:
            break  # a ladder with nothing to walk (the instance allows no oversubscription)
        if (
            previous is not None
            and previous.design is not None
            and _within(previous.design, caps[j])
        ):
            rungs.append(
                Rung(
                    j,
                    caps[j],
                    previous.planned,
                    previous.sim,
                    previous.step,
                    previous.idle_gpu_value_usd,
                    previous.total_usd,
                    f"the design of rung {previous.rung} already meets these caps",
                )
            )
            continue
        rung = evaluate(j, plan_once(at(j)))
        rungs.append(rung)
        previous = rung
        d = rung.design
        best = _best(rungs)
        if (
            d is not None
            and floor_value is not None
            and best is not None
            and best.total_usd is not None
            and d.objective_usd + weight * floor_value >= best.total_usd
            and j > 1
        ):
            message = (
                f"stopped after rung {j} ({caps_text(caps[j])}): its network cost "
                f"${d.objective_usd:,.0f} plus the non-blocking rung's idle value "
                f"${weight * floor_value:,.0f} already reaches the best total "
                f"${best.total_usd:,.0f}, which no tighter rung can beat"
            )
            break
    chosen = _best(rungs)
    return PricedSearch(weight, tuple(rungs), chosen, message)


def _best(rungs: list[Rung[R]]) -> Rung[R] | None:
    """The rung of least total among the eligible ones (all with a total when none is)."""
    pool = [r for r in rungs if r.eligible] or [r for r in rungs if r.total_usd is not None]
    pool = pool or [r for r in rungs if r.design is not None]
    if not pool:
        return None
    return min(pool, key=lambda r: (math.inf if r.total_usd is None else r.total_usd, -r.rung))


def priced_table(search: PricedSearch[R]) -> pl.DataFrame:
    """One row per rung, in ladder order (the instance's caps first, non-blocking last)."""
    rows = []
    for r in sorted(search.rungs, key=lambda r: -r.rung):
        d = r.design
        ratios = () if d is None else tier_ratios(d)
        rows.append(
            {
                "rung": r.rung,
                "allowed_leaf": r.caps[0],
                "allowed_spine": r.caps[1] if len(r.caps) > 1 else None,
                "leaf_ratio": ratios[0] if ratios else None,
                "spine_ratio": ratios[1] if len(ratios) > 1 else None,
                "capex_usd": None if d is None else d.capex_usd,
                "network_objective_usd": None if d is None else d.objective_usd,
                "verdict": None if r.sim is None else r.sim.verdict,
                "step_time_s": None if r.step is None else r.step.step_s,
                "idle_fraction": None if r.step is None else r.step.idle_fraction,
                "idle_gpu_value_usd": r.idle_gpu_value_usd,
                "total_usd": r.total_usd,
                "chosen": search.chosen is not None and r.rung == search.chosen.rung,
                "note": r.note,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "rung": pl.Int64,
            "allowed_leaf": pl.Float64,
            "allowed_spine": pl.Float64,
            "leaf_ratio": pl.Float64,
            "spine_ratio": pl.Float64,
            "capex_usd": pl.Float64,
            "network_objective_usd": pl.Float64,
            "verdict": pl.Utf8,
            "step_time_s": pl.Float64,
            "idle_fraction": pl.Float64,
            "idle_gpu_value_usd": pl.Float64,
            "total_usd": pl.Float64,
            "chosen": pl.Boolean,
            "note": pl.Utf8,
        },
    )
