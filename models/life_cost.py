r"""The cost of a fabric over its life: capex per phase, energy over the horizon, disruption.

A life is a sequence of phases at times ``t_0 = 0 <= t_1 <= ... <= t_{n-1} < H`` (years, the
horizon H). Phase k buys ``capex_k`` at ``t_k``, leaves the fabric drawing ``power_k`` watts (all
that is installed then, at the wall) until the next phase (or the horizon), and disturbs
``gpu_hours_k`` GPU-hours while it is built (drained or degraded GPUs). With the yearly discount
rate r, continuous compounding of the energy within a period and the discount factor
``v(t) = (1 + r)^{-t}``::

    life_usd = sum_k  capex_k v(t_k)
             + sum_k  power_k  e  A(t_k, t_{k+1})            (t_n = H)
             + sum_k  gpu_hours_k  c  v(t_k)

where e is the energy price per watt-year (USD / (W year)) and ``A(a, b) = integral_a^b v(t) dt``
``= (v(a) - v(b)) / ln(1 + r)`` (``b - a`` when r = 0), the present value of a watt drawn from a to
b; c is the value of one GPU-hour (``planner.idle_pricing``'s idle-GPU value). Disruption is
charged when the phase is built (at ``t_k``). Every term is linear in the phase's figures, so
a model over the life can use ``capex_factor``, ``energy_factor`` and ``disruption_factor`` as
objective coefficients.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Hours in a year (365.25 days), for prices per watt-hour (the value of
#: ``planner.schema.reliability.HOURS_PER_YEAR``; models/ imports nothing from planner/).
HOURS_PER_YEAR = 8766.0


@dataclass(frozen=True)
class Phase:
    """What one phase of the life buys, draws and disturbs."""

    at_years: float
    """When it is built, years from the first phase (the first is at 0)."""
    capex_usd: float
    """What it buys."""
    power_w: float
    """What the whole fabric draws from then until the next phase (all installed, at the wall)."""
    disrupted_gpu_hours: float = 0.0
    """GPU-hours drained or degraded while it is built."""


@dataclass(frozen=True)
class LifeTerms:
    """The life's present cost, by term (USD at the first phase)."""

    capex_usd: float
    energy_usd: float
    disruption_usd: float

    @property
    def total_usd(self) -> float:
        """The three terms together."""
        return self.capex_usd + self.energy_usd + self.disruption_usd


def capex_factor(at_years: float, discount_rate: float) -> float:
    """``v(t) = (1 + r)^{-t}``: the present value of one dollar spent at ``t``."""
    return (1.0 + discount_rate) ** -at_years


def energy_factor(start_years: float, end_years: float, discount_rate: float) -> float:
    """``A(a, b)``: the present value, in years, of a watt drawn from ``a`` to ``b``."""
    if end_years < start_years:
        raise ValueError(f"a period ends ({end_years}) before it starts ({start_years})")
    if discount_rate == 0.0:
        return end_years - start_years
    ln = math.log1p(discount_rate)
    return (capex_factor(start_years, discount_rate) - capex_factor(end_years, discount_rate)) / ln


def disruption_factor(at_years: float, discount_rate: float) -> float:
    """The present value of a disrupted GPU-hour's cost charged at ``t``: ``v(t)``."""
    return capex_factor(at_years, discount_rate)


def phase_terms(
    phase: Phase,
    end_years: float,
    discount_rate: float,
    energy_usd_per_wh: float,
    gpu_hour_usd: float,
) -> LifeTerms:
    """One phase's present cost, by term.

    Its capex and disruption at its date, and the power it leaves installed drawn until
    ``end_years`` (the next phase, or the horizon).
    """
    r = discount_rate
    return LifeTerms(
        capex_usd=phase.capex_usd * capex_factor(phase.at_years, r),
        energy_usd=phase.power_w
        * energy_usd_per_wh
        * HOURS_PER_YEAR
        * energy_factor(phase.at_years, end_years, r),
        disruption_usd=phase.disrupted_gpu_hours
        * gpu_hour_usd
        * disruption_factor(phase.at_years, r),
    )


def life_cost(
    phases: Sequence[Phase],
    horizon_years: float,
    discount_rate: float,
    energy_usd_per_wh: float,
    gpu_hour_usd: float,
) -> LifeTerms:
    """The present cost of a life (module docstring), by term.

    Raises
    ------
    ValueError
        No phase, a first phase not at 0, phases out of order, a phase at or after the horizon,
        a negative figure, or a discount rate at or below -1.
    """
    if not phases:
        raise ValueError("a life has at least one phase")
    if phases[0].at_years != 0.0:
        raise ValueError(f"the first phase is at 0 years, not {phases[0].at_years}")
    times = [p.at_years for p in phases]
    if any(b < a for a, b in zip(times, times[1:], strict=False)):
        raise ValueError(f"phases must be in time order; got {times}")
    if times[-1] >= horizon_years:
        raise ValueError(f"every phase comes before the horizon ({horizon_years} years)")
    if discount_rate <= -1.0:
        raise ValueError(f"a discount rate is above -1; got {discount_rate}")
    if any(min(p.capex_usd, p.power_w, p.disrupted_gpu_hours) < 0 for p in phases):
        raise ValueError("capex, power and disrupted GPU-hours are never negative")
    ends = [*times[1:], horizon_years]
    terms = [
        phase_terms(p, end, discount_rate, energy_usd_per_wh, gpu_hour_usd)
        for p, end in zip(phases, ends, strict=True)
    ]
    return LifeTerms(
        capex_usd=sum(t.capex_usd for t in terms),
        energy_usd=sum(t.energy_usd for t in terms),
        disruption_usd=sum(t.disruption_usd for t in terms),
    )
