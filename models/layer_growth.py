r"""Growing a fabric's top layer over phases: build it ahead, add to it later, or refresh it.

Blocks (a Clos's pods, a direct-connect fabric's aggregation blocks) are added over the phases of
a life (``models.life_cost``): ``n_j`` blocks are installed after phase j (never fewer). Every
block has ``G`` spines, and spine g has ``u`` uplinks into top group g: the same group of ``m``
devices for spine g of every block (a Clos's core group, or the OCS devices that spine g of every
block is cabled to), ``u / m`` links to each. The top layer is ``S = G m`` devices. The
decision at each phase is the pair (``m_j``, ``g_j``): devices per group and their generation.

Rules:

* ``m_j`` is one of ``sizes`` (the divisors of ``u`` the wiring and its spread allow);
* the devices have the ports: ``n_j u / m_j <= k_{g_j}`` (each takes ``u / m`` from every block);
* ``g_j >= min_generation_j`` (a Clos core must carry the fastest block's lane rate; an OCS
  passes any rate, so its minimum stays 0), and ``g_j`` is on offer at phase j when devices are
  bought;
* the same generation never shrinks (``m_j >= m_{j-1}``); a new generation replaces the layer;
* a fabric already standing (``installed``: its state over ``installed_blocks`` blocks) is the
  state before the first phase, bought before the life begins (its capex is not counted).

What each phase costs (present USD, ``models.life_cost``):

* capex at ``t_j``: the blocks bought then (``blocks_usd_j``, data), plus ``G (m_j - m_{j-1})``
  devices at the price then, or ``G m_j`` when the generation changes (a refresh; the old
  devices retire with no resale);
* power from ``t_j`` to the next phase: ``blocks_w_j + G m_j w_{g_j}``;
* disruption at ``t_j``: links re-cabled, ``h`` GPU-hours each. Adding devices to a group moves
  ``ceil(u (m_j - m_{j-1}) / m_j)`` uplinks of each installed spine (each old device keeps
  ``u / m_j`` of its ``u / m_{j-1}``); a refresh moves all ``n_{j-1} G u`` of them.

Building ahead (``m_j`` above what phase j needs) buys devices early and powers them with
ports reserved; adding later pays the moves; a refresh pays a new layer and every move. The
cost of phase j depends only on the state before and after it, so dynamic programming over the
states (``m``, ``g``) is exact (``solve``); ``tests/models/test_layer_growth.py`` checks it
against enumerating every sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models.life_cost import LifeTerms, Phase, life_cost, phase_terms

#: Costs that differ by less than this count as equal when breaking ties.
COST_ATOL_USD = 1e-6


@dataclass(frozen=True)
class TopOption:
    """A generation of top-layer device on offer at a phase, at its price then."""

    generation: int
    """Rank of the generation: a larger number is newer (and faster)."""
    unit_usd: float
    unit_w: float
    ports: int
    """Ports of one device that face the blocks."""


@dataclass(frozen=True)
class State:
    """The top layer after a phase: devices per group and their generation."""

    size: int
    generation: int


@dataclass(frozen=True)
class GrowthPhase:
    """One phase: when, how many blocks in all, what they cost, and the devices on offer."""

    at_years: float
    blocks: int
    blocks_usd: float
    """Capex of the blocks bought at this phase (added or refreshed), at the prices then."""
    blocks_w: float
    """Power of every block installed after this phase."""
    options: tuple[TopOption, ...]
    min_generation: int = 0
    """The top layer's generation from this phase on is at least this."""


@dataclass(frozen=True)
class GrowthProblem:
    """A top layer's life (module docstring)."""

    phases: tuple[GrowthPhase, ...]
    groups: int
    """G: spines per block, one top group each."""
    group_uplinks: int
    """u: uplinks of one spine into its group."""
    sizes: tuple[int, ...]
    """Devices per group the wiring allows (each divides ``group_uplinks``)."""
    gpu_hours_per_moved_link: float
    horizon_years: float
    discount_rate: float
    energy_usd_per_wh: float
    gpu_hour_usd: float
    installed: State | None = None
    """The top layer standing before the first phase (a fabric already built); None: nothing."""
    installed_blocks: int = 0
    """Blocks standing before the first phase, under ``installed``."""

    def __post_init__(self) -> None:
        if not self.phases:
            raise ValueError("a growth has at least one phase")
        if self.groups < 1 or self.group_uplinks < 1:
            raise ValueError("groups and uplinks per group are at least 1")
        if not self.sizes or any(m < 1 or self.group_uplinks % m for m in self.sizes):
            raise ValueError(
                f"sizes must divide the {self.group_uplinks} uplinks; got {self.sizes}"
            )
        counts = [p.blocks for p in self.phases]
        if counts[0] < 1 or any(b < a for a, b in zip(counts, counts[1:], strict=False)):
            raise ValueError(f"blocks start at 1 or more and never shrink; got {counts}")
        if any(not p.options for p in self.phases):
            raise ValueError("every phase offers at least one generation of device")
        if (self.installed is None) != (self.installed_blocks == 0):
            raise ValueError("an installed top layer stands over at least one installed block")
        if self.installed_blocks > counts[0]:
            raise ValueError(
                f"the first phase holds {counts[0]} blocks, fewer than the "
                f"{self.installed_blocks} installed"
            )

    def blocks_before(self, j: int) -> int:
        """Blocks standing when phase j starts."""
        return self.phases[j - 1].blocks if j else self.installed_blocks

    def option(self, j: int, generation: int) -> TopOption | None:
        """The device of this generation on offer at phase j, if any."""
        return next((o for o in self.phases[j].options if o.generation == generation), None)

    def fits(self, j: int, size: int, option: TopOption) -> bool:
        """Whether ``size`` devices a group of this option hold phase j's blocks."""
        return self.phases[j].blocks * (self.group_uplinks // size) <= option.ports


@dataclass(frozen=True)
class Growth:
    """The states chosen per phase and what the life costs with them."""

    states: tuple[State, ...]
    devices: tuple[int, ...]
    """Top devices installed after each phase (``G m_j``)."""
    moved_links: tuple[int, ...]
    """Links re-cabled at each phase (0 at the first)."""
    phases: tuple[Phase, ...]
    terms: LifeTerms


def moved_per_spine(uplinks: int, before: int, after: int) -> int:
    """Uplinks a spine moves when its group grows from ``before`` to ``after`` devices."""
    if after <= before or before == 0:
        return 0
    return -(-uplinks * (after - before) // after)


def _step(pr: GrowthProblem, j: int, before: State | None, after: State) -> Phase | None:
    """Phase j's capex, power and disruption going from ``before`` to ``after``; None: not allowed."""
    ph = pr.phases[j]
    held = pr.option(j, after.generation)
    kept = before is not None and before.generation == after.generation
    if after.size not in pr.sizes or after.generation < ph.min_generation:
        return None
    if before is not None and after.generation < before.generation:
        return None
    if kept and after.size < before.size:  # type: ignore[union-attr]
        return None
    bought = after.size - before.size if kept else after.size  # type: ignore[union-attr]
    if bought > 0 and held is None:  # devices bought must be on offer
        return None
    device = held or _installed_option(pr, j, after.generation)
    if device is None or not pr.fits(j, after.size, device):
        return None
    moved = _moved_links(pr, pr.blocks_before(j), before, after)
    return Phase(
        at_years=ph.at_years,
        capex_usd=ph.blocks_usd + pr.groups * bought * (held.unit_usd if held else 0.0),
        power_w=ph.blocks_w + pr.groups * after.size * device.unit_w,
        disrupted_gpu_hours=moved * pr.gpu_hours_per_moved_link,
    )


def _installed_option(pr: GrowthProblem, j: int, generation: int) -> TopOption | None:
    """The device of a generation bought at an earlier phase (for its ports and power)."""
    for i in range(j, -1, -1):
        found = pr.option(i, generation)
        if found is not None:
            return found
    return None


def cost_of(problem: GrowthProblem, states: Sequence[State]) -> Growth:
    """The life of one sequence of states; ValueError when it breaks a rule."""
    pr = problem
    if len(states) != len(pr.phases):
        raise ValueError("one state per phase")
    phases: list[Phase] = []
    moved: list[int] = []
    before = pr.installed
    for j, s in enumerate(states):
        step = _step(pr, j, before, s)
        if step is None:
            raise ValueError(f"phase {j}: {s} breaks a rule after {before}")
        moved.append(_moved_links(pr, pr.blocks_before(j), before, s))
        phases.append(step)
        before = s
    terms = life_cost(
        phases, pr.horizon_years, pr.discount_rate, pr.energy_usd_per_wh, pr.gpu_hour_usd
    )
    devices = tuple(pr.groups * s.size for s in states)
    return Growth(tuple(states), devices, tuple(moved), tuple(phases), terms)


def _moved_links(pr: GrowthProblem, installed: int, before: State | None, after: State) -> int:
    if before is None:
        return 0
    if before.generation != after.generation:
        return installed * pr.groups * pr.group_uplinks
    return installed * pr.groups * moved_per_spine(pr.group_uplinks, before.size, after.size)


def transition_usd(problem: GrowthProblem, j: int, before: State | None, after: State) -> float:
    """Present cost of phase j from ``before`` to ``after`` (inf when not allowed).

    Capex at ``t_j``, the power installed then until the next phase (or the horizon), and the
    re-cabled links' GPU-hours at ``t_j``: the terms of ``cost_of`` for that phase alone.
    """
    pr = problem
    step = _step(pr, j, before, after)
    if step is None:
        return float("inf")
    end = pr.phases[j + 1].at_years if j + 1 < len(pr.phases) else pr.horizon_years
    return phase_terms(step, end, pr.discount_rate, pr.energy_usd_per_wh, pr.gpu_hour_usd).total_usd


def candidate_states(problem: GrowthProblem) -> list[State]:
    """Every (size, generation) any phase offers."""
    generations = sorted({o.generation for p in problem.phases for o in p.options})
    return [State(m, g) for g in generations for m in sorted(problem.sizes)]


def solve(problem: GrowthProblem) -> Growth:
    """The cheapest states over the life: dynamic programming over (``m``, ``g``), exact.

    ``best_j(s) = min over s' of best_{j-1}(s') + transition_usd(j, s', s)``; ties go to the
    lexicographically least sequence (fewer, older devices earlier), so the answer does not
    depend on the order of the loops. ValueError when no sequence meets the rules (the
    devices on offer cannot hold the blocks).
    """
    pr = problem
    states = candidate_states(pr)
    best: dict[State | None, tuple[float, tuple[State, ...]]] = {pr.installed: (0.0, ())}
    for j in range(len(pr.phases)):
        nxt: dict[State | None, tuple[float, tuple[State, ...]]] = {}
        for s in states:
            options = [
                (value + cost, (*seq, s))
                for prev, (value, seq) in best.items()
                if (cost := transition_usd(pr, j, prev, s)) < float("inf")
            ]
            if options:
                nxt[s] = min(options, key=_rank)
        if not nxt:
            raise ValueError(
                f"phase {j}: no top layer on offer holds {pr.phases[j].blocks} blocks "
                f"(sizes {pr.sizes}, ports {[o.ports for o in pr.phases[j].options]})"
            )
        best = nxt
    _, seq = min(best.values(), key=_rank)
    return cost_of(pr, seq)


def _rank(option: tuple[float, tuple[State, ...]]) -> tuple[float, tuple[tuple[int, int], ...]]:
    value, seq = option
    return round(value / COST_ATOL_USD), tuple((s.generation, s.size) for s in seq)
