"""Bandwidth as a constraint: plan, simulate, tighten the binding tier's ratio, plan again.

The sizing model knows bandwidth only as an oversubscription ratio per tier
(``tier.oversubscription``: d[t] den_t <= num_t u[t]); the ``[verify]`` traffic is judged by the
simulator after the choice. Under ``search.until_verified`` the planner closes that loop:

1. plan (the search, as always) and take its design;
2. if a structural bound already shows the design cannot carry the traffic (``structural_cut``),
   tighten the leaf ratio without simulating; otherwise simulate under ``[verify]``;
3. if the verdict fails on a healthy traffic, tighten the binding tier's allowed ratio
   (``simulation_cut``) and plan again; stop when the design meets, when the search finds no
   design (the instance is proven infeasible; the search explains which constraint conflicts),
   when no cut applies, or at the iteration cap.

The cuts only tighten ``constraints.max_oversubscription``, so the feasible set shrinks at each
iteration and the optimum never gets cheaper: the extra cost over the first design is the price
of the traffic.

**Simulation cut.** The failing traffic reaches a fraction f of ideal at the verdict routing,
below the required F. With packet spraying on a tiered Clos, the throughput of traffic that
crosses tier t is its uplink capacity over the load offered to it, so it scales as 1 / r_t
(r_t = d_t / u_t, the tier's down:up ratio) until another tier binds. The binding tier is the
one whose up-links saturate (max utilisation >= 1 - ``SATURATION_TOL`` in the simulation's links
table; the lowest such tier), or, when the simulation reports no utilisation for the traffic,
the tier with the largest ratio above 1. Reaching F needs r_t' <= r_t f / F; the new allowed
ratio is that value rounded down to the model's ratio grid (``RATIO_DENOMINATOR``), so the model
accepts it exactly and it never exceeds what the scaling asks. Where another tier starts binding
first the next iteration's simulation finds it.

**Structural cut.** A uniform all-to-all in groups of g GPUs, on leaves of d1 GPUs (per plane)
and scale-up domains of k GPUs (k = 1: none; flows inside a domain never reach a NIC; k divides
g): each GPU has at most d1 - k group-mates reached through its leaf without crossing its
up-links, so at least the share s = (g - d1) / (g - k) of what it sends through its NIC crosses
the leaf's up-links (with k = 1: (g - d1) / (g - 1); ``leaf_uplink_share`` also counts domains
that straddle two leaves). A leaf then offers at least d1 s of a NIC's load to u1 up-links, so
the fraction of ideal (the NIC time, checked to be the ideal's larger part) is at most
u1 / (d1 s) = 1 / (r1 s), whatever the routing. Meeting F needs r1 <= 1 / (F s): a design
above that fails without simulation. The bound is for leaves of d1 GPUs; a later design with
other leaves is judged again by the same rule.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Generic, TypeVar

from planner.schema.instance import Instance
from planner.schema.verify import TrafficSpec
from planner.sim.verdict import FRACTION_RTOL, required_fractions  # judge as the verdict does
from planner.sizing.problems import RATIO_DENOMINATOR  # the grid the model reads ratios on
from planner.workload.step import verify_with_workload

if TYPE_CHECKING:
    from planner.design import Design
    from planner.sim.sim_tables import SimResult

#: Iterations (plans) the loop runs at most.
MAX_LOOP_ITERATIONS = 6
#: A link class whose most loaded link is at least 1 - this is saturated (binds).
SATURATION_TOL = 1e-3
#: Smallest ratio the instance schema accepts (``Constraints.max_oversubscription``).
MIN_RATIO = 0.1
#: Tiers below the top whose ratio the instance can set (leaf, spine).
RATIO_TIERS = 2
#: Traffic kinds that are a uniform all-to-all among the members of each group.
ALL_TO_ALL_KINDS = frozenset({"all_to_all", "uniform_all_to_all"})

R = TypeVar("R")


class LoopStatus(enum.StrEnum):
    """How the loop ended."""

    MEETS = "meets"
    """The last design meets the [verify] traffic."""
    INFEASIBLE = "infeasible"
    """The search found no design under the tightened ratios (its explanation says why)."""
    ITERATION_CAP = "iteration_cap"
    """The cap was reached with a design that still fails."""
    NO_CUT = "no_cut"
    """The design fails but no ratio cut can help (no tier to tighten, the ratio would fall
    below the schema's minimum, or the failure is not of healthy bandwidth)."""
    INCOMPLETE = "incomplete"
    """The simulation did not finish (time limit): the verdict is unknown."""


@dataclass(frozen=True)
class Planned(Generic[R]):
    """One plan as the loop sees it: the caller's result, its design and the search's words."""

    result: R
    design: Design | None
    explanation: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cut:
    """A tightened ratio: tier ``level`` (1 = leaf) may be at most ``ratio_after``:1."""

    level: int
    tier: str
    """The tier's up-link class, as the simulator names it ('leaf-spine')."""
    ratio_before: float
    """The design's own down:up ratio at the tier."""
    ratio_after: float
    """The new allowed ratio (on the model's grid)."""
    source: str
    """'structural' (closed-form bound) or 'simulation' (the verdict's fraction)."""
    reason: str

    @property
    def text(self) -> str:
        """One line: what was tightened and why."""
        return (
            f"{self.tier} {self.ratio_before:.4g}:1 -> <= {self.ratio_after:.4g}:1 "
            f"({self.source}: {self.reason})"
        )


@dataclass(frozen=True)
class LoopStep:
    """One iteration: the design planned, how it was judged and the cut it led to."""

    iteration: int
    allowed_ratios: tuple[float, ...]
    """The allowed ratio per tier the plan ran under, leaf first."""
    tier_ratios: tuple[float, ...]
    """The design's down:up ratio per tier below the top (empty: no design)."""
    objective_usd: float | None
    capex_usd: float | None
    verdict: str
    """'meets', 'fails', 'incomplete', 'infeasible' (no design) or 'not simulated' (a
    structural cut applied first)."""
    fraction: float | None
    """The worst healthy fraction of ideal at the verdict routing (None: not simulated)."""
    fractions: dict[str, float | None]
    """The simulation's fractions (``SimResult.fractions``)."""
    cut: Cut | None


@dataclass(frozen=True)
class LoopResult(Generic[R]):
    """Where the loop ended: the last plan, its simulation, every iteration and the status."""

    status: LoopStatus
    instance: Instance
    """The instance of the last plan (the ratios tightened)."""
    planned: Planned[R]
    sim: SimResult | None
    steps: tuple[LoopStep, ...]
    message: str


def allowed_ratios(inst: Instance) -> tuple[float, ...]:
    """The instance's allowed ratio at each tier it can set, leaf first."""
    return tuple(inst.constraints.oversubscription(level) for level in range(1, RATIO_TIERS + 1))


def uplink_class(design: Design, level: int) -> str:
    """The simulator's name of tier ``level``'s up-links: 'leaf-spine', 'spine-core'."""
    return f"{design.tiers[level - 1].role}-{design.tiers[level].role}"


def tier_ratios(design: Design) -> tuple[float, ...]:
    """The design's down:up ratio at each tier below the top, leaf first."""
    return tuple(t.downlinks / t.uplinks if t.uplinks else math.inf for t in design.tiers[:-1])


def grid_ratio(ratio: float) -> float:
    """``ratio`` rounded down to the model's grid: a float the model reads as exactly that."""
    return math.floor(ratio * RATIO_DENOMINATOR) / RATIO_DENOMINATOR


def domain_pairs_on_leaf(leaf_gpus: int, domain_gpus: int) -> int:
    """Fewest ordered pairs of GPUs that share a scale-up domain, over the leaves of a plane.

    GPU i sits on leaf i // d1 and in domain i // k (``Family.build_fabric``); a
    leaf holding fragments of m_1, m_2, ... GPUs of its domains holds sum m (m - 1) such pairs:
    d1 (k - 1) when k divides d1, fewer when a domain straddles two leaves.
    """
    d1, k = leaf_gpus, domain_gpus
    least = d1 * (k - 1)
    for leaf in range(k):  # fragments repeat with period k / gcd(d1, k)
        first, end, pairs = leaf * d1, (leaf + 1) * d1, 0
        while first < end:
            m = min(end, (first // k + 1) * k) - first
            pairs += m * (m - 1)
            first += m
        least = min(least, pairs)
    return least


def leaf_uplink_share(group_gpus: int, leaf_gpus: int, domain_gpus: int = 1) -> Fraction:
    """Least share of a leaf's NIC bytes that crosses its up-links in a group all-to-all.

    Groups of g consecutive GPUs (whole domains of k: k divides g), leaves of d1. A GPU sends
    through its NIC to the g - k mates outside its domain; at most d1 - 1 - dm of them sit on its
    leaf (dm: its domain mates there), so the leaf's up-links carry at least
    (d1 (g - k - d1 + 1) + P) / (d1 (g - k)) of what its GPUs' NICs send, P =
    ``domain_pairs_on_leaf``: (g - d1) / (g - k) when k divides d1, (g - d1) / (g - 1) without
    a domain (module docstring); 0 when the bound is empty.
    """
    g, d1, k = group_gpus, leaf_gpus, domain_gpus
    if g <= k:
        return Fraction(0)
    pairs = domain_pairs_on_leaf(d1, k)
    return max(Fraction(0), Fraction(d1 * (g - k - d1 + 1) + pairs, d1 * (g - k)))


def _group_gpus(spec: TrafficSpec, gpus: int) -> int | None:
    """GPUs of one uniform all-to-all group of ``spec``, or None when it is not one."""
    if spec.kind == "uniform_all_to_all":
        return gpus
    if spec.kind == "all_to_all" and spec.groups == "consecutive":
        return spec.group_size
    return None


def structural_cut(inst: Instance, design: Design) -> Cut | None:
    """The leaf cut a uniform all-to-all's closed form asks for, when the design breaks it.

    r1 <= 1 / (F s), s = ``leaf_uplink_share`` (module docstring); None when no traffic of
    the simulated traffic (``[verify]``'s and the workload's, ``verify_with_workload``) is such an
    all-to-all, the design has one tier, or it already complies.
    """
    if design.num_tiers < 2 or not design.tiers[0].uplinks:
        return None
    leaf = design.tiers[0]
    domain = design.scale_up.gpus
    ratio = leaf.downlinks / leaf.uplinks
    nic_gbps = design.planes * design.link_speed_gbps
    best: Cut | None = None
    for spec in verify_with_workload(inst.verify, inst.workload, domain).traffic:
        g = _group_gpus(spec, design.gpus)
        if g is None or g % domain:
            continue  # not a group all-to-all of whole domains: no closed form here
        if (domain - 1) * nic_gbps > (g - domain) * design.scale_up.gbps_per_gpu:
            continue  # the ideal is the domain's time, not the NIC's: the bound is not F's
        share = leaf_uplink_share(g, leaf.downlinks, domain)
        if share <= 0:
            continue
        required = spec.required_fraction(inst.verify.min_throughput_fraction)
        limit = 1.0 / (required * float(share))
        if ratio <= limit * (1 + FRACTION_RTOL):
            continue
        after = grid_ratio(limit)
        if best is None or after < best.ratio_after:
            best = Cut(
                1,
                uplink_class(design, 1),
                ratio,
                after,
                "structural",
                f"{spec.label} sends >= {float(share):.3f} of its NIC bytes over the leaf "
                f"up-links (about (g - d1)/(g - k), g={g}, d1={leaf.downlinks}, k={domain}), so "
                f"{required} of ideal needs r1 <= 1/({required} x {float(share):.3f})",
            )
    return best


def _failing(inst: Instance, sim: SimResult) -> list[tuple[str, float]]:
    """Healthy traffics below the required fraction at the verdict routing: (pattern, fraction)."""
    v = inst.verify
    rows = sim.collectives.filter(
        (sim.collectives["scenario"] == "healthy")
        & (sim.collectives["routing"] == v.verdict_routing)
    )
    required = required_fractions(v)
    default = (v.min_throughput_fraction, "")
    return [
        (str(r["pattern"]), float(r["fraction_of_ideal"]))
        for r in rows.iter_rows(named=True)
        if r["fraction_of_ideal"]
        < required.get(str(r["pattern"]), default)[0] * (1 - FRACTION_RTOL)
    ]


def binding_level(design: Design, sim: SimResult, patterns: list[str], routing: str) -> int | None:
    """The tier whose up-links saturate under the failing traffic (lowest first).

    Without utilisation rows for the traffic, the tier with the largest ratio above 1; None
    when every tier is non-blocking and none saturates.
    """
    links = sim.links.filter(
        sim.links["pattern"].is_in(patterns) & (sim.links["routing"] == routing)
    )
    for level in range(1, design.num_tiers):
        name = uplink_class(design, level)
        rows = links.filter(links["tier"] == name)
        if rows.height and float(rows["max_utilisation"].max()) >= 1 - SATURATION_TOL:  # type: ignore[arg-type]
            return level
    ratios = tier_ratios(design)
    blocking = [(r, -level) for level, r in enumerate(ratios, start=1) if r > 1]
    return -max(blocking)[1] if blocking else None


def simulation_cut(inst: Instance, design: Design, sim: SimResult) -> Cut | None:
    """The binding tier's ratio scaled by f / F (module docstring); None when none applies."""
    failing = _failing(inst, sim)
    if not failing or design.num_tiers < 2:
        return None
    routing = inst.verify.verdict_routing
    level = binding_level(design, sim, [p for p, _ in failing], routing)
    if level is None or level > RATIO_TIERS:
        return None
    pattern, f = min(failing, key=lambda pf: pf[1])
    v = inst.verify
    required = required_fractions(v).get(pattern, (v.min_throughput_fraction, ""))[0]
    ratio = tier_ratios(design)[level - 1]
    after = grid_ratio(ratio * f / required)
    return Cut(
        level,
        uplink_class(design, level),
        ratio,
        after,
        "simulation",
        f"{pattern} reaches {f:.3f} of ideal under {routing}, {required} required: "
        f"r x {f:.3f}/{required}",
    )


def tightened(inst: Instance, cut: Cut) -> Instance:
    """The instance with tier ``cut.level``'s allowed ratio lowered to ``cut.ratio_after``."""
    ratios = list(allowed_ratios(inst))
    ratios[cut.level - 1] = min(ratios[cut.level - 1], cut.ratio_after)
    return inst.with_ratio_caps(ratios)


def run_loop(
    inst: Instance,
    plan_once: Callable[[Instance], Planned[R]],
    simulate: Callable[[Instance, Design], SimResult],
    *,
    max_iterations: int = MAX_LOOP_ITERATIONS,
) -> LoopResult[R]:
    """Plan, judge, cut and plan again until the design meets or the loop must stop."""
    steps: list[LoopStep] = []
    current = inst
    for iteration in range(1, max_iterations + 1):
        planned = plan_once(current)
        allowed = allowed_ratios(current)
        d = planned.design
        if d is None:
            steps.append(LoopStep(iteration, allowed, (), None, None, "infeasible", None, {}, None))
            why = "; ".join(planned.explanation) or "the search found no design"
            return LoopResult(LoopStatus.INFEASIBLE, current, planned, None, tuple(steps), why)
        cut = structural_cut(current, d)
        sim = simulate(current, d) if cut is None else None
        ended = _judge(current, sim, iteration) if cut is None else None
        if sim is not None and ended is None:
            cut = simulation_cut(current, d, sim)
        if cut is not None and cut.ratio_after < MIN_RATIO:
            ended = (
                LoopStatus.NO_CUT,
                f"{cut.tier} would need a ratio of {cut.ratio_after}:1, below the least the "
                f"instance accepts ({MIN_RATIO}:1)",
            )
        elif cut is None and ended is None:
            ended = (LoopStatus.NO_CUT, "fails, and no ratio cut applies (no tier to tighten)")
        elif cut is not None and ended is None and iteration == max_iterations:
            ended = (
                LoopStatus.ITERATION_CAP,
                f"still fails after {iteration} iteration(s); next cut: {cut.text}",
            )
        steps.append(
            LoopStep(
                iteration,
                allowed,
                tier_ratios(d),
                d.objective_usd,
                d.capex_usd,
                "not simulated" if sim is None else sim.verdict,
                _worst(current, sim),
                {} if sim is None else dict(sim.fractions),
                cut,
            )
        )
        if ended is not None:
            return LoopResult(ended[0], current, planned, sim, tuple(steps), ended[1])
        assert cut is not None
        current = tightened(current, cut)
    raise AssertionError("unreachable: the last iteration returns")  # pragma: no cover


def _judge(inst: Instance, sim: SimResult | None, iteration: int) -> tuple[LoopStatus, str] | None:
    """Where a simulated design ends the loop, or None when a cut should follow."""
    if sim is None:
        return None
    if sim.verdict == "meets":
        return LoopStatus.MEETS, f"the design of iteration {iteration} meets [verify]"
    if sim.verdict != "fails":
        return LoopStatus.INCOMPLETE, f"simulation {sim.verdict}: the verdict is unknown"
    if not _failing(inst, sim):
        return LoopStatus.NO_CUT, "fails, but not on healthy bandwidth (a failure scenario)"
    return None


def _worst(inst: Instance, sim: SimResult | None) -> float | None:
    """The worst healthy fraction at the verdict routing (None: not simulated)."""
    if sim is None:
        return None
    return sim.fractions.get(f"sim_fraction_{inst.verify.verdict_routing}")
