"""Why no design exists: the conflicting constraints, the pins that cannot hold, in words."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from models import clos_sizing as cs
from models.hops import hops
from planner.deadline import NO_DEADLINE, Deadline
from planner.design import ROLES
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.sizing.problems import RATIO_DENOMINATOR, Structure, _solve

#: Time given to each re-solve while finding which constraints conflict.
DIAGNOSIS_TIME_S = 2.0


def max_endpoints(radix: int, tiers: int, ratios: tuple[Fraction, ...]) -> int:
    """Most endpoints a Clos of ``tiers`` tiers of ``radix``-port switches serves at these ratios.

    A tier-t switch keeps d = floor(k r / (1 + r)) ports down; the top tier uses all k down.
    One tier: k. Two: k leaves of d. Three: k pods of d_2 leaves of d_1.
    """
    downs = [radix * r.numerator // (r.numerator + r.denominator) for r in ratios]
    total = radix
    for d in downs[: tiers - 1]:
        total *= d
    return total if tiers > 1 else radix


def explain_infeasible(
    inst: Instance,
    catalog: Catalog,
    structures: list[Structure],
    deadline: Deadline = NO_DEADLINE,
) -> list[str]:
    """Name, in a user's words, the constraints that together leave no design.

    The re-solves that find them (``_deletion_filter``, ``explain_pins``) stop at ``deadline``;
    when it cuts them short, a line says so.
    """
    lines: list[str] = []
    for st in structures:
        if st.impossible:
            lines.append(f"{st.label}: {st.impossible}")
    c = inst.constraints
    gpus = inst.cluster.gpus
    if c.max_switch_hops is not None:
        # The most Clos tiers whose longest path fits the limit: hops(T) = 2T - 1 <= max.
        tiers = max((t for t in range(0, 4) if hops(t) <= c.max_switch_hops), default=0)
        if tiers == 0:
            lines.append(
                f"max_switch_hops = {c.max_switch_hops}: no Clos has fewer than one switch on a path"
            )
        for st in structures:
            if st.problem is None or st.tiers != tiers:
                continue
            ratios = st.problem.requirements.max_oversubscription
            best = max(st.problem.switch_options[0], key=lambda o: o.radix)
            if max_endpoints(best.radix, tiers, ratios) >= gpus:
                continue
            need = next(
                k for k in range(best.radix, 1 << 20) if max_endpoints(k, tiers, ratios) >= gpus
            )
            speed = inst.cluster.nic_gbps // st.planes
            lines.append(
                f"{gpus:,} GPUs within {c.max_switch_hops} switch hops ({tiers} tier{'s' if tiers > 1 else ''}) "
                f"with {st.planes} plane{'s' if st.planes > 1 else ''} need switches of radix >= {need} at "
                f"{speed}G; the largest in the catalog at that speed is {best.radix} ({best.name})"
            )
    culprits, untried = _deletion_filter(structures, deadline)
    lines.extend(_describe(inst, family, st, sol, deadline) for family, st, sol in culprits)
    if untried:
        lines.append(
            f"the time limit ran out before every constraint was tried on its own ({untried} "
            "re-solves not run); raise --time-limit for a complete diagnosis"
        )
    if not culprits and not lines:
        lines.append(
            "no single constraint explains it: several conflict together (try relaxing them one by one)"
        )
    return lines


def _deletion_filter(
    structures: list[Structure], deadline: Deadline = NO_DEADLINE
) -> tuple[list[tuple[str, Structure, cs.SizingSolution]], int]:
    """Relaxable families whose removal alone lets some structure find a design.

    Also returns the re-solves ``deadline`` left out.
    """
    found: list[tuple[str, Structure, cs.SizingSolution]] = []
    untried = 0
    for family in cs.RELAXABLE:
        best: tuple[Structure, cs.SizingSolution] | None = None
        for st in structures:
            if st.problem is None:
                continue
            left = deadline.remaining_s()
            if left <= 0:
                untried += 1
                continue
            sol = _solve(st.problem, min(DIAGNOSIS_TIME_S, left), frozenset({family}))
            if sol.status.has_solution and (
                best is None or (sol.objective_usd or 0) < (best[1].objective_usd or 0)
            ):
                best = (st, sol)
        if best is not None:
            found.append((family, *best))
    return found, untried


def explain_pins(problem: cs.SizingProblem, deadline: Deadline = NO_DEADLINE) -> list[str]:
    """Which pinned decisions cannot hold, in words.

    The port arithmetic first (radix, even spread, coverage); failing that, the single pins whose
    release alone lets a design exist (re-solves that stop at ``deadline``).
    """
    pins, T, E = problem.pins, problem.tiers, problem.endpoints
    roles = ROLES.get(T, ("leaf", "spine", "core"))

    def pin(values: tuple[int | None, ...], t: int) -> int | None:
        return values[t - 1] if t - 1 < len(values) else None

    out: list[str] = []
    for t in range(1, T + 1):
        role = roles[t - 1] if t - 1 < len(roles) else f"tier {t}"
        d, u, q = pin(pins.downlinks, t), pin(pins.uplinks, t), pin(pins.parallel_links, t)
        radix = max((o.radix for o in problem.switch_options[t - 1]), default=0)
        if d is not None and u is not None and d + u > radix:
            out.append(f"a {role} cannot use {d} down + {u} up ports: its radix is {radix}")
        if u is not None and q is not None and u % q:
            out.append(f"{u} {role} uplinks are not a whole number of groups of {q} parallel links")
        above = pin(pins.switches, t + 1)
        if T == 2 and t == 1 and u is not None and above is not None:
            if u % above:
                out.append(
                    f"{u} uplinks cannot spread evenly over {above} spines "
                    "(every leaf needs the same number of links to every spine)"
                )
            elif q is not None and u != above * q:
                out.append(f"{u} uplinks are not {above} spines x {q} parallel links")
    n1, d1 = pin(pins.switches, 1), pin(pins.downlinks, 1)
    if n1 is not None and d1 is not None and n1 * d1 < E:
        out.append(f"{n1} leaves x {d1} GPU ports = {n1 * d1:,} < {E:,} GPUs")
    if T == 2 and n1 is not None:
        q1, d2 = pin(pins.parallel_links, 1), pin(pins.downlinks, 2)
        spine_radix = max((o.radix for o in problem.switch_options[1]), default=0)
        if q1 is not None and n1 * q1 > spine_radix:
            out.append(
                f"{n1} leaves x {q1} parallel links = {n1 * q1} ports on each spine > its radix {spine_radix}"
            )
        if q1 is not None and d2 is not None and d2 != n1 * q1:
            out.append(f"a spine's {d2} downlinks are not {n1} leaves x {q1} parallel links")
    if out:
        return out
    return [
        f"releasing {what} alone lets a design exist" for what in _freeing_pins(problem, deadline)
    ]


def _freeing_pins(problem: cs.SizingProblem, deadline: Deadline = NO_DEADLINE) -> list[str]:
    """The single pins whose release makes the structure feasible (a deletion filter).

    A release ``deadline`` leaves no time for is not tried (and so not named).
    """
    pins = problem.pins
    found = []

    def frees(trial: cs.SizingProblem) -> bool:
        left = deadline.remaining_s()
        return left > 0 and _solve(trial, min(DIAGNOSIS_TIME_S, left)).status.has_solution

    for field_name in ("switch_models", "switches", "downlinks", "uplinks", "parallel_links"):
        values = getattr(pins, field_name)
        for i, value in enumerate(values):
            if value is None:
                continue
            freed = values[:i] + (None,) + values[i + 1 :]
            trial = replace(problem, pins=replace(pins, **{field_name: freed}))
            if frees(trial):
                found.append(f"search.pin.{field_name}[{i}] = {value}")
    for field_name, without in (
        ("pods", replace(pins, pods=None)),
        ("leaf_placement", replace(pins, leaf_placement=None)),
    ):
        if getattr(pins, field_name) is not None:
            trial = replace(problem, pins=without)
            if frees(trial):
                found.append(f"search.pin.{field_name} = {getattr(pins, field_name)}")
    return found


def _describe(
    inst: Instance,
    rule: str,
    st: Structure,
    sol: cs.SizingSolution,
    deadline: Deadline = NO_DEADLINE,
) -> str:
    c = inst.constraints
    shape = st.label
    if rule == "tier.oversubscription":
        worst = max((t.downlinks / t.uplinks for t in sol.tier_solutions if t.uplinks), default=0.0)
        return (
            f"max_oversubscription = {c.max_oversubscription} conflicts with the other constraints: "
            f"without it the best design ({shape}) runs at {worst:.2f}:1"
        )
    if rule == "path.hops":
        return (
            f"max_switch_hops = {c.max_switch_hops} is too few: the best design without it ({shape}) "
            f"crosses {cs.switch_hops(st.problem) if st.problem else '?'} switches"
        )
    if rule == "path.latency":
        return f"max_latency_ns = {c.max_latency_ns} is too low for every structure and switch in the catalog"
    if rule == "failure.single_switch":
        s = c.survive
        assert s is not None
        need = cs.min_fanout_for_failure(
            Fraction(s.min_bandwidth_fraction).limit_denominator(RATIO_DENOMINATOR)
        )
        if "leaf" in s.tiers:
            leaf = f"; a leaf failure keeps (planes - 1)/planes, so 'leaf' needs at least {_planes_for(s.min_bandwidth_fraction)} planes"
        else:
            leaf = ""
        spread = (
            f"every switch must spread its uplinks over >= {need} switches above it"
            if need
            else "no number of switches reaches 100 %"
        )
        return (
            f"survive: keeping {s.min_bandwidth_fraction:.0%} of bandwidth after one switch of {', '.join(s.tiers)} fails: "
            f"{spread}{leaf}"
        )
    if rule == "budget.power":
        assert sol.power_w is not None
        return f"max_power_kw = {c.max_power_kw}: the best design without the cap ({shape}) draws {sol.power_w / 1000:,.1f} kW"
    if rule == "budget.capex":
        assert sol.capex_usd is not None
        return f"max_capex_usd = {c.max_capex_usd:,.0f}: the best design without the cap ({shape}) costs ${sol.capex_usd:,.0f}"
    why = explain_pins(st.problem, deadline) if st.problem is not None else []
    return (
        f"the pinned decisions (search.pin) cannot all hold; without them a design exists ({shape})"
        + (": " + "; ".join(why) if why else "")
    )


def _planes_for(fraction: float) -> int:
    """Fewest planes p with (p - 1)/p >= fraction."""
    return cs.min_fanout_for_failure(Fraction(fraction).limit_denominator(RATIO_DENOMINATOR)) or 0
