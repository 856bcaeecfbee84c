r"""Growing a two-tier Clos over phases: build the spines ahead, or add them later and re-cable.

A leaf-spine fabric grows from ``L_0`` leaves to ``L_1 <= L_2 <= ...`` at the phases of a life
(``models.life_cost``). Every leaf has ``u`` uplinks spread evenly over all the spines, and a
spine has ``k`` ports, so phase j needs at least ``need_j = ceil(L_j u / k)`` spines. The decision
is the spine count ``S_j`` installed at each phase:

* ``S_j >= need_j`` (every uplink lands on a spine port), ``S_j >= S_{j-1}`` (spines are not
  removed), ``S_j <= need_max`` (the last phase's need: more never helps);
* building ahead (``S_j > need_j``) buys spines earlier, at that phase's price, and draws their
  power from then on, ports reserved for later leaves;
* adding later (``S_j > S_{j-1}`` with leaves installed) re-cables: every leaf already there
  moves ``m_j = ceil(u (S_j - S_{j-1}) / S_j)`` of its uplinks onto the new spines, so that each
  leaf again reaches every spine evenly; the ``L_{j-1} m_j`` moved links disturb ``h`` GPU-hours
  each (the GPUs behind a leaf drained while its links move, or a plane drained).

Objective (present USD, ``models.life_cost``): for every phase, ``(S_j - S_{j-1}) p_j +
(L_j - L_{j-1}) l_j`` of capex at ``t_j`` (p_j, l_j the spine and leaf prices then), the power
``S_j w_s + L_j w_l`` from ``t_j`` to the next phase, and ``L_{j-1} m_j h`` GPU-hours disturbed at
``t_j``. Solved exactly by dynamic programming over ``S`` (the cost of phase j depends only on
``S_{j-1}`` and ``S_j``: ``transition_usd``); ``tests/models/test_clos_growth.py`` checks it
against enumerating every sequence on small lives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models.life_cost import (
    HOURS_PER_YEAR,
    LifeTerms,
    Phase,
    capex_factor,
    disruption_factor,
    energy_factor,
    life_cost,
)


@dataclass(frozen=True)
class GrowthPhase:
    """One phase: when, how many leaves in all, and the prices then."""

    at_years: float
    leaves: int
    spine_usd: float
    leaf_usd: float


@dataclass(frozen=True)
class GrowthProblem:
    """A two-tier fabric's life (module docstring)."""

    phases: tuple[GrowthPhase, ...]
    uplinks_per_leaf: int
    spine_ports: int
    spine_w: float
    leaf_w: float
    gpu_hours_per_moved_link: float
    horizon_years: float
    discount_rate: float
    energy_usd_per_wh: float
    gpu_hour_usd: float

    def __post_init__(self) -> None:
        if not self.phases:
            raise ValueError("a growth has at least one phase")
        if self.uplinks_per_leaf < 1 or self.spine_ports < 1:
            raise ValueError("uplinks per leaf and spine ports are at least 1")
        counts = [p.leaves for p in self.phases]
        if counts[0] < 1 or any(b < a for a, b in zip(counts, counts[1:], strict=False)):
            raise ValueError(f"leaves start at 1 or more and never shrink; got {counts}")

    def need(self, j: int) -> int:
        """Spines phase j needs: ``ceil(L_j u / k)``."""
        return -(-self.phases[j].leaves * self.uplinks_per_leaf // self.spine_ports)


@dataclass(frozen=True)
class Growth:
    """The spine counts chosen per phase and what the life costs with them."""

    spines: tuple[int, ...]
    moved_links: tuple[int, ...]
    """Links re-cabled at each phase (0 at the first)."""
    terms: LifeTerms


def moved_per_leaf(uplinks: int, before: int, after: int) -> int:
    """Uplinks a leaf moves when the spines grow from ``before`` to ``after``: ``ceil(u (a-b)/a)``."""
    if after <= before or before == 0:
        return 0
    return -(-uplinks * (after - before) // after)


def cost_of(problem: GrowthProblem, spines: Sequence[int]) -> Growth:
    """The life of one sequence of spine counts; ValueError when it breaks a rule."""
    pr = problem
    if len(spines) != len(pr.phases):
        raise ValueError("one spine count per phase")
    top = pr.need(len(pr.phases) - 1)
    phases, moved = [], []
    before_s, before_l = 0, 0
    for j, (ph, s) in enumerate(zip(pr.phases, spines, strict=True)):
        if not pr.need(j) <= s <= top or s < before_s:
            raise ValueError(f"phase {j}: {s} spines (needs {pr.need(j)} to {top}, had {before_s})")
        links = before_l * moved_per_leaf(pr.uplinks_per_leaf, before_s, s)
        moved.append(links)
        phases.append(
            Phase(
                at_years=ph.at_years,
                capex_usd=(s - before_s) * ph.spine_usd + (ph.leaves - before_l) * ph.leaf_usd,
                power_w=s * pr.spine_w + ph.leaves * pr.leaf_w,
                disrupted_gpu_hours=links * pr.gpu_hours_per_moved_link,
            )
        )
        before_s, before_l = s, ph.leaves
    terms = life_cost(
        phases, pr.horizon_years, pr.discount_rate, pr.energy_usd_per_wh, pr.gpu_hour_usd
    )
    return Growth(tuple(spines), tuple(moved), terms)


def transition_usd(problem: GrowthProblem, j: int, before: int, after: int) -> float:
    """Present cost of phase j with ``before`` spines installed and ``after`` after it.

    Capex at ``t_j``, the power installed then until the next phase (or the horizon), and the
    re-cabled links' GPU-hours at ``t_j``: the terms of ``cost_of`` for that phase alone.
    """
    pr, ph = problem, problem.phases[j]
    per_watt_year = pr.energy_usd_per_wh * HOURS_PER_YEAR
    end = pr.phases[j + 1].at_years if j + 1 < len(pr.phases) else pr.horizon_years
    leaves_before = pr.phases[j - 1].leaves if j else 0
    capex = (after - before) * ph.spine_usd + (ph.leaves - leaves_before) * ph.leaf_usd
    power = after * pr.spine_w + ph.leaves * pr.leaf_w
    moved = leaves_before * moved_per_leaf(pr.uplinks_per_leaf, before, after)
    return (
        capex * capex_factor(ph.at_years, pr.discount_rate)
        + power * per_watt_year * energy_factor(ph.at_years, end, pr.discount_rate)
        + moved
        * pr.gpu_hours_per_moved_link
        * pr.gpu_hour_usd
        * disruption_factor(ph.at_years, pr.discount_rate)
    )


def solve(problem: GrowthProblem) -> Growth:
    """The cheapest spine counts over the life: dynamic programming over ``S``, exact.

    ``best_j(s) = min over s' <= s of best_{j-1}(s') + transition_usd(j, s', s)`` with
    ``need_j <= s <= need_max``; ties go to the fewer spines earlier (the lexicographically least
    sequence), so the answer does not depend on the order of the loops.
    """
    pr = problem
    top = pr.need(len(pr.phases) - 1)
    best: dict[int, tuple[float, tuple[int, ...]]] = {0: (0.0, ())}
    for j in range(len(pr.phases)):
        nxt: dict[int, tuple[float, tuple[int, ...]]] = {}
        for s in range(pr.need(j), top + 1):
            options = [
                (value + transition_usd(pr, j, prev, s), (*seq, s))
                for prev, (value, seq) in best.items()
                if prev <= s
            ]
            if options:
                nxt[s] = min(options, key=lambda o: (round(o[0] / COST_ATOL_USD), o[1]))
        best = nxt
    _, seq = min(best.values(), key=lambda o: (round(o[0] / COST_ATOL_USD), o[1]))
    return cost_of(pr, seq)


#: Costs that differ by less than this count as equal when breaking ties.
COST_ATOL_USD = 1e-6
