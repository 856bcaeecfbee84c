"""Plan a folded-Clos fabric: turn an instance and a catalog into sizing models, solve, and design.

The search runs over *structures* (planes x tiers). Each structure is one CP-SAT model of
``models.clos_sizing`` whose switch model per tier is a decision; the best structure is the
design, and the smallest proven bound over all structures is the global lower bound. The same
models, restricted to one switch model for every tier, give the ``alternatives`` table.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction

from models import clos_sizing as cs
from models.status import Status
from planner.design import ROLES, Design, LinkClass, Requirements, TierDesign
from planner.layout import Floor, cheapest_medium, floor_of
from planner.schema.catalog import Catalog, Medium, Switch
from planner.schema.instance import Instance

#: Called after every sub-solve with (solves done, solves planned, what was solved).
Progress = Callable[[int, int, str], None]

#: Denominator limit when a float ratio or fraction from the instance becomes a Fraction.
RATIO_DENOMINATOR = 1000
ROLE_LEVEL = {"leaf": 1, "spine": 2, "core": 3}


@dataclass(frozen=True)
class Structure:
    """A priced structure: its problem data, or why it cannot be built at all."""

    planes: int
    tiers: int
    problem: cs.SizingProblem | None
    media: tuple[Medium, ...] = ()
    copper: Medium | None = None
    impossible: str | None = None

    @property
    def label(self) -> str:
        """Short name: 2 planes x 3 tiers."""
        return f"{self.planes} plane{'s' if self.planes > 1 else ''} x {self.tiers} tier{'s' if self.tiers > 1 else ''}"


@dataclass(frozen=True)
class Outcome:
    """One solved structure under one switch restriction (None = mixed models allowed)."""

    structure: Structure
    switch_model: str | None
    solution: cs.SizingSolution


@dataclass(frozen=True)
class SizingResult:
    """Everything the search found."""

    status: Status
    design: Design | None
    bound_usd: float | None
    outcomes: tuple[Outcome, ...]
    explanation: tuple[str, ...] = ()
    wall_s: float = 0.0
    structures: tuple[Structure, ...] = field(default_factory=tuple)


def requirements_of(inst: Instance, tiers: int) -> cs.Requirements:
    """The instance's constraints as model data for a structure of ``tiers`` tiers."""
    c = inst.constraints
    survive = c.survive
    phi = None
    protected: frozenset[int] = frozenset()
    if survive is not None and survive.switch_failures > 0:
        phi = Fraction(survive.min_bandwidth_fraction).limit_denominator(RATIO_DENOMINATOR)
        protected = frozenset(ROLE_LEVEL[r] for r in survive.tiers if ROLE_LEVEL[r] <= tiers)
    return cs.Requirements(
        max_oversubscription=tuple(
            Fraction(c.oversubscription(t)).limit_denominator(RATIO_DENOMINATOR)
            for t in range(1, tiers)
        ),
        max_switch_hops=c.max_switch_hops,
        max_latency_ns=None if c.max_latency_ns is None else math.floor(c.max_latency_ns),
        min_fraction_after_failure=phi,
        protected_tiers=protected,
        max_power_w=None if c.max_power_kw is None else c.max_power_kw * 1000.0,
        max_capex_usd=c.max_capex_usd,
    )


def allowed_switches(inst: Instance, catalog: Catalog) -> list[Switch]:
    """Catalog switches the search may use."""
    names = inst.search.switch_models
    if names is None:
        return list(catalog.switch)
    return [catalog.switch_named(n) for n in names]


def _switch_option(s: Switch, speed_gbps: int) -> cs.SwitchOption | None:
    radix = s.radix_at(speed_gbps)
    if radix is None:
        return None
    return cs.SwitchOption(s.name, radix, s.cost_usd, s.power_w, s.latency_ns, s.cpo)


def _medium_option(m: Medium) -> cs.MediumOption:
    return cs.MediumOption(
        m.name, m.cost_usd_per_end, m.power_w_per_end, m.cable_cost_usd, m.latency_ns
    )


def pins_of(inst: Instance, tiers: int) -> cs.Pins:
    """The instance's pins as model data."""
    pin = inst.search.pin

    def per_tier(values: list[int] | None) -> tuple[int | None, ...]:
        return tuple(values) if values is not None else ()

    return cs.Pins(
        switch_models=tuple(pin.model_for(t) for t in range(1, tiers + 1)),
        switches=per_tier(pin.switches),
        downlinks=per_tier(pin.downlinks),
        uplinks=per_tier(pin.uplinks),
        parallel_links=per_tier(pin.parallel_links),
        pods=pin.pods,
        endpoint_copper=pin.endpoint_copper,
    )


def structures_of(inst: Instance, catalog: Catalog, floor: Floor | None = None) -> list[Structure]:
    """Every (planes, tiers) the search considers, with its model data or why it is impossible."""
    floor = floor or floor_of(inst)
    pin = inst.search.pin
    cl, obj = inst.cluster, inst.objective
    planes_options = [pin.planes] if pin.planes else sorted(cl.nic_ports)
    tier_options = [pin.tiers] if pin.tiers else list(range(1, inst.search.max_tiers + 1))
    switches = allowed_switches(inst, catalog)
    out = []
    for p in planes_options:
        speed = cl.nic_gbps // p
        options = tuple(o for s in switches if (o := _switch_option(s, speed)) is not None)
        for T in tier_options:
            if not options:
                out.append(
                    Structure(p, T, None, impossible=f"no allowed switch runs {speed}G ports")
                )
                continue
            media = []
            for c in range(T):
                med = cheapest_medium(
                    catalog,
                    speed,
                    floor.class_length_m[c],
                    copper=False,
                    energy_usd_per_w=obj.energy_usd_per_w,
                )
                if med is None:
                    break
                media.append(med)
            if len(media) < T:
                out.append(
                    Structure(
                        p,
                        T,
                        None,
                        impossible=f"no optical medium at {speed}G reaches {floor.class_length_m[len(media)]:.0f} m",
                    )
                )
                continue
            copper = cheapest_medium(
                catalog,
                speed,
                inst.layout.in_rack_cable_m,
                copper=True,
                energy_usd_per_w=obj.energy_usd_per_w,
            )
            problem = cs.SizingProblem(
                endpoints=cl.gpus,
                planes=p,
                tiers=T,
                switch_options=(options,) * T,
                optical=tuple(_medium_option(m) for m in media),
                copper=_medium_option(copper) if copper else None,
                endpoints_per_rack=inst.layout.nodes_per_rack * cl.gpus_per_node,
                requirements=requirements_of(inst, T),
                energy_usd_per_w=obj.energy_usd_per_w,
                capex_weight=obj.capex_weight,
                energy_weight=obj.energy_weight,
                pins=pins_of(inst, T),
            )
            out.append(Structure(p, T, problem, tuple(media), copper))
    return out


def restrict_to(problem: cs.SizingProblem, switch_model: str) -> cs.SizingProblem | None:
    """The same problem with every tier restricted to one switch model (None if it lacks the speed)."""
    tiers = []
    for opts in problem.switch_options:
        only = tuple(o for o in opts if o.name == switch_model)
        if not only:
            return None
        tiers.append(only)
    return _replace_switches(problem, tuple(tiers))


def _replace_switches(
    p: cs.SizingProblem, switch_options: tuple[tuple[cs.SwitchOption, ...], ...]
) -> cs.SizingProblem:
    return cs.SizingProblem(
        p.endpoints,
        p.planes,
        p.tiers,
        switch_options,
        p.optical,
        p.copper,
        p.endpoints_per_rack,
        p.requirements,
        p.energy_usd_per_w,
        p.capex_weight,
        p.energy_weight,
        p.pins,
    )


def design_of(
    inst: Instance, structure: Structure, sol: cs.SizingSolution, catalog: Catalog
) -> Design:
    """Turn a structure's solution into a Design carrying every unit figure it was priced with."""
    assert structure.problem is not None
    assert sol.capex_usd is not None
    assert sol.power_w is not None
    p = structure.problem
    speed = inst.cluster.nic_gbps // structure.planes
    roles = ROLES[p.tiers]
    tiers = []
    for ts in sol.tier_solutions:
        sw = catalog.switch_named(ts.switch_model)
        tiers.append(
            TierDesign(
                level=ts.level,
                role=roles[ts.level - 1],
                switch_model=sw.name,
                port_speed_gbps=speed,
                radix=sw.radix_at(speed) or 0,
                switches=ts.switches,
                downlinks=ts.downlinks,
                uplinks=ts.uplinks,
                fanout=ts.fanout,
                parallel_links=ts.parallel_links,
                cpo=sw.cpo,
                unit_cost_usd=sw.cost_usd,
                unit_power_w=sw.power_w,
                latency_ns=sw.latency_ns,
                source=sw.source.get("cost_usd", ""),
            )
        )
    floor = floor_of(inst)
    classes = []
    for c in range(p.tiers):
        lower = "gpu" if c == 0 else roles[c - 1]
        upper = roles[c]
        copper = c == 0 and sol.endpoint_copper and structure.copper is not None
        med = structure.copper if copper else structure.media[c]
        assert med is not None
        if copper:
            ends, length = 2, inst.layout.in_rack_cable_m
        else:
            lower_cpo = c > 0 and tiers[c - 1].cpo
            ends, length = 2 - int(lower_cpo) - int(tiers[c].cpo), floor.class_length_m[c]
        links = p.endpoints if c == 0 else tiers[c - 1].switches * tiers[c - 1].uplinks
        classes.append(
            LinkClass(
                index=c,
                lower_role=lower,
                upper_role=upper,
                links=links,
                medium=med.name,
                kind=med.kind,
                speed_gbps=speed,
                length_m=length,
                pluggable_ends=ends,
                end_cost_usd=med.cost_usd_per_end,
                end_power_w=med.power_w_per_end,
                cable_cost_usd=med.cable_cost_usd,
                latency_ns=med.latency_ns,
                reach_m=med.reach_m,
                afr=med.afr,
                copper=med.copper,
                source=med.source.get("cost_usd_per_end", ""),
            )
        )
    r = p.requirements
    return Design(
        instance=inst.name,
        family="clos",
        status=sol.status,
        gpus=p.endpoints,
        planes=p.planes,
        link_speed_gbps=speed,
        tiers=tuple(tiers),
        link_classes=tuple(classes),
        requirements=Requirements(
            max_oversubscription=tuple(float(x) for x in r.max_oversubscription),
            max_switch_hops=r.max_switch_hops,
            max_latency_ns=r.max_latency_ns,
            min_fraction_after_failure=None
            if r.min_fraction_after_failure is None
            else float(r.min_fraction_after_failure),
            protected_tiers=tuple(sorted(r.protected_tiers)),
            max_power_w=r.max_power_w,
            max_capex_usd=r.max_capex_usd,
        ),
        energy_usd_per_w=p.energy_usd_per_w,
        capex_weight=p.capex_weight,
        energy_weight=p.energy_weight,
        capex_usd=sol.capex_usd,
        power_w=sol.power_w,
        objective_usd=sol.objective_usd or 0.0,
        bound_usd=sol.bound_usd if sol.bound_usd is not None else sol.objective_usd or 0.0,
        pods=sol.pods,
        leaves_per_pod=sol.leaves_per_pod,
        gpus_per_node=inst.cluster.gpus_per_node,
        catalog=inst.search.catalog,
        solve_s=sol.wall_s,
    )


#: Relative tolerance under which a design's objective counts as equal to the proven bound.
OPTIMALITY_RTOL = 1e-6
#: Time given to each re-solve while finding which constraints conflict.
DIAGNOSIS_TIME_S = 2.0


def _pin_allows(inst: Instance, switch_model: str, tiers: int) -> bool:
    pin = inst.search.pin
    return all(pin.model_for(t) in (None, switch_model) for t in range(1, tiers + 1))


def _solve(
    problem: cs.SizingProblem, time_limit_s: float, leave_out: frozenset[str] = frozenset()
) -> cs.SizingSolution:
    return cs.solve(cs.build(problem, leave_out), cs.SolveOptions(time_limit_s=time_limit_s))


def search(
    inst: Instance,
    catalog: Catalog,
    *,
    time_limit_s: float = 60.0,
    progress: Progress | None = None,
    alternatives: bool = True,
) -> SizingResult:
    """Solve every structure, pick the best design, prove a bound, and explain infeasibility."""
    start = time.perf_counter()
    deadline = start + time_limit_s
    structures = structures_of(inst, catalog)
    mixed = inst.search.mixed_switch_models
    names = [s.name for s in allowed_switches(inst, catalog)]
    main: list[tuple[Structure, str | None, cs.SizingProblem]] = []
    extra: list[tuple[Structure, str | None, cs.SizingProblem]] = []
    for st in structures:
        if st.problem is None:
            continue
        if mixed:
            main.append((st, None, st.problem))
        for model_name in names:
            restricted = restrict_to(st.problem, model_name)
            if restricted is None or not _pin_allows(inst, model_name, st.tiers):
                continue
            (extra if mixed else main).append((st, model_name, restricted))
    jobs = main + (extra if alternatives or not mixed else [])
    outcomes: list[Outcome] = []
    for done, (st, name, problem) in enumerate(jobs, start=1):
        remaining = deadline - time.perf_counter()
        share = min(remaining, 4 * remaining / (len(jobs) - done + 1))
        if share <= 0:
            sol = cs.SizingSolution(
                Status.TIME_LIMIT, st.planes, st.tiers, None, None, None, None, 0.0
            )
        else:
            sol = _solve(problem, share)
        outcomes.append(Outcome(st, name, sol))
        if progress is not None:
            progress(done, len(jobs), f"{st.label}, {name or 'any switch'}: {sol.status.value}")
    decisive = [o for o in outcomes if (o.switch_model is None) == mixed]
    best = min(
        (o for o in decisive if o.solution.status.has_solution),
        key=lambda o: o.solution.objective_usd or math.inf,
        default=None,
    )
    bound = _global_bound(decisive)
    wall = time.perf_counter() - start
    if best is None:
        proven = all(o.solution.status is Status.INFEASIBLE for o in decisive)
        status = Status.INFEASIBLE if proven else Status.TIME_LIMIT
        explanation = (
            tuple(explain_infeasible(inst, catalog, structures))
            if proven
            else ("the time limit ran out before any design was found; raise --time-limit",)
        )
        return SizingResult(
            status, None, bound, tuple(outcomes), explanation, wall, tuple(structures)
        )
    sol = best.solution
    assert sol.objective_usd is not None
    glob = sol.objective_usd if bound is None else min(bound, sol.objective_usd)
    optimal = sol.objective_usd - glob <= OPTIMALITY_RTOL * max(1.0, abs(sol.objective_usd))
    status = Status.OPTIMAL if optimal else Status.FEASIBLE
    design = design_of(inst, best.structure, sol, catalog)
    design = _with_search_figures(design, status, glob, wall)
    return SizingResult(status, design, glob, tuple(outcomes), (), wall, tuple(structures))


def _global_bound(decisive: list[Outcome]) -> float | None:
    """Min over structures of each structure's proven bound (infeasible ones bound nothing)."""
    per_structure: dict[tuple[int, int], float] = {}
    for o in decisive:
        key = (o.structure.planes, o.structure.tiers)
        sol = o.solution
        if sol.status is Status.INFEASIBLE:
            b = math.inf
        elif sol.bound_usd is None:
            b = -math.inf
        else:
            b = sol.bound_usd
        per_structure[key] = min(per_structure.get(key, math.inf), b)
    if not per_structure:
        return None
    low = min(per_structure.values())
    if low == math.inf:
        return None
    return max(low, 0.0)


def _with_search_figures(d: Design, status: Status, bound: float, wall: float) -> Design:
    return replace(d, status=status, bound_usd=bound, solve_s=wall)


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


def explain_infeasible(inst: Instance, catalog: Catalog, structures: list[Structure]) -> list[str]:
    """Name, in a user's words, the constraints that together leave no design."""
    lines: list[str] = []
    for st in structures:
        if st.impossible:
            lines.append(f"{st.label}: {st.impossible}")
    c = inst.constraints
    gpus = inst.cluster.gpus
    if c.max_switch_hops is not None:
        tiers = (c.max_switch_hops + 1) // 2
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
    culprits = _deletion_filter(structures)
    lines.extend(_describe(inst, family, sol) for family, sol in culprits)
    if not culprits and not lines:
        lines.append(
            "no single constraint explains it: several conflict together (try relaxing them one by one)"
        )
    return lines


def _deletion_filter(structures: list[Structure]) -> list[tuple[str, cs.SizingSolution]]:
    """Relaxable families whose removal alone lets some structure find a design."""
    found: list[tuple[str, cs.SizingSolution]] = []
    for family in cs.RELAXABLE:
        best: cs.SizingSolution | None = None
        for st in structures:
            if st.problem is None:
                continue
            sol = _solve(st.problem, DIAGNOSIS_TIME_S, frozenset({family}))
            if sol.status.has_solution and (
                best is None or (sol.objective_usd or 0) < (best.objective_usd or 0)
            ):
                best = sol
        if best is not None:
            found.append((family, best))
    return found


def _describe(inst: Instance, family: str, sol: cs.SizingSolution) -> str:
    c = inst.constraints
    shape = f"{sol.planes} plane(s) x {sol.tiers} tier(s)"
    if family == "tier.oversubscription":
        worst = max((t.downlinks / t.uplinks for t in sol.tier_solutions if t.uplinks), default=0.0)
        return (
            f"max_oversubscription = {c.max_oversubscription} conflicts with the other constraints: "
            f"without it the best design ({shape}) runs at {worst:.2f}:1"
        )
    if family == "path.hops":
        return (
            f"max_switch_hops = {c.max_switch_hops} is too few: the best design without it ({shape}) "
            f"crosses {2 * sol.tiers - 1} switches"
        )
    if family == "path.latency":
        return f"max_latency_ns = {c.max_latency_ns} is too low for every structure and switch in the catalog"
    if family == "failure.single_switch":
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
    if family == "budget.power":
        assert sol.power_w is not None
        return f"max_power_kw = {c.max_power_kw}: the best design without the cap ({shape}) draws {sol.power_w / 1000:,.1f} kW"
    if family == "budget.capex":
        assert sol.capex_usd is not None
        return f"max_capex_usd = {c.max_capex_usd:,.0f}: the best design without the cap ({shape}) costs ${sol.capex_usd:,.0f}"
    return (
        f"the pinned decisions (search.pin) cannot all hold; without them a design exists ({shape})"
    )


def _planes_for(fraction: float) -> int:
    """Fewest planes p with (p - 1)/p >= fraction."""
    return cs.min_fanout_for_failure(Fraction(fraction).limit_denominator(RATIO_DENOMINATOR)) or 0
