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

from models import cabling as cb
from models import clos_sizing as cs
from models.hops import hops
from models.status import Status
from planner.design import ROLES, Design, LinkClass, LinkGroup, Requirements, TierDesign
from planner.layout import Hall, LengthDistribution, hall_of
from planner.schema.catalog import Cage, Catalog, Medium, Nic, Ocs, Switch
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
    impossible: str | None = None
    family: str = "clos"

    @property
    def label(self) -> str:
        """Short name: 2 planes x 3 tiers, or 1 plane x OCS direct-connect."""
        planes = f"{self.planes} plane{'s' if self.planes > 1 else ''}"
        if self.family == "ocs_direct":
            return f"{planes} x OCS direct-connect"
        return f"{planes} x {self.tiers} tier{'s' if self.tiers > 1 else ''}"


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
    chosen = list(catalog.switch) if names is None else [catalog.switch_named(n) for n in names]
    return [s for s in chosen if inst.search.cpo or not s.cpo]


def allowed_media(inst: Instance, catalog: Catalog) -> list[Medium]:
    """Catalog media the search may use."""
    kinds = inst.search.media_kinds
    return [m for m in catalog.medium if kinds is None or m.kind in kinds]


def _engine(s: Switch) -> cb.PortKind:
    """What a switch's ports take: its module cage, or its co-packaged engine."""
    if s.cpo_optics is not None:
        o = s.cpo_optics
        return cb.CpoEngine(o.lane_gbps, o.connector, o.reach_m)
    return cage_of(s.cage)


def cage_of(cage: Cage | None) -> cb.Cage | None:
    """A catalog cage as the cabling plans see it."""
    return None if cage is None else cb.Cage(cage.form_factor, cage.lane_gbps)


def _switch_option(s: Switch, speed_gbps: int) -> cs.SwitchOption | None:
    radix = s.radix_at(speed_gbps)
    if radix is None:
        return None
    return cs.SwitchOption(
        s.name, radix, s.cost_usd, s.power_w, s.latency_ns, _engine(s), s.protocol
    )


def nic_of(inst: Instance, catalog: Catalog) -> Nic | None:
    """The instance's NIC, or the catalog's first at its speed when it names none."""
    return catalog.nic_for(inst.cluster.nic, inst.cluster.nic_gbps)


def _ocs_option(o: Ocs) -> cs.SwitchOption:
    return cs.SwitchOption(
        o.name, o.ports, o.cost_usd, o.power_w, 0, cb.OcsPort(o.insertion_loss_db)
    )


def medium_option(m: Medium) -> cb.MediumOption:
    """A catalog medium as the cabling plans see it."""
    return cb.MediumOption(
        m.name,
        m.cost_usd_per_end,
        m.power_w_per_end,
        m.cable_cost_usd,
        m.latency_ns,
        m.reach_m,
        m.copper,
        m.lane_gbps,
        m.connector,
        m.channel_loss_db,
        m.host_lanes,
        tuple(m.form_factors),
    )


def criteria_of(inst: Instance) -> cb.Criteria:
    """What the choice between media must respect: the objective, and the caps present."""
    c, obj = inst.constraints, inst.objective
    return cb.Criteria(
        energy_usd_per_w=obj.energy_usd_per_w,
        capex_weight=obj.capex_weight,
        energy_weight=obj.energy_weight,
        capex_capped=c.max_capex_usd is not None,
        power_capped=c.max_power_kw is not None,
        latency_capped=c.max_latency_ns is not None,
    )


def cabling_of(
    hall: Hall,
    link_class: int,
    placements: tuple[str, ...],
    media: list[cb.MediumOption],
    lower: tuple[cs.SwitchOption, ...] | None,
    upper: tuple[cs.SwitchOption, ...],
    criteria: cb.Criteria,
    nic: cb.PortKind = None,
) -> cs.ClassCabling:
    """Length tails (from the hall) and cabling plans of one link class (``lower`` None: the NIC)."""
    thresholds = cs.reach_thresholds(media, lower, upper)
    keys: tuple[str | None, ...] = placements if link_class < 2 else (None,)
    tails = {}
    for key in keys:
        dist = class_lengths(hall, link_class, key, upper)
        tails[key] = cb.LengthTails(
            dist.total,
            thresholds,
            tuple(dist.longer_than(r) for r in thresholds),
            max_length_m=dist.max_m,
        )
    return cs.class_cabling(tails, media, lower, upper, criteria, nic)


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
        leaf_placement=pin.leaf_placement,
    )


def class_lengths(
    hall: Hall, link_class: int, placement: str | None, upper: tuple[cs.SwitchOption, ...]
) -> LengthDistribution:
    """A link class's lengths; links into an OCS layer are circuits from spine to spine."""
    dist = hall.class_lengths(link_class, placement)
    if any(isinstance(o.engine, cb.OcsPort) for o in upper):
        return dist.through_ocs()
    return dist


def structures_of(inst: Instance, catalog: Catalog, hall: Hall | None = None) -> list[Structure]:
    """Every (planes, tiers) the search considers, with its model data or why it is impossible."""
    cl, lay = inst.cluster, inst.layout
    hall = hall or hall_of(lay, cl.gpus, cl.gpus_per_node)
    pin = inst.search.pin
    planes_options = [pin.planes] if pin.planes else sorted(cl.nic_ports)
    tier_options = [pin.tiers] if pin.tiers else list(range(1, inst.search.max_tiers + 1))
    nic = nic_of(inst, catalog)
    switches = [
        s for s in allowed_switches(inst, catalog) if nic is None or s.protocol in nic.protocols
    ]
    all_media = allowed_media(inst, catalog)
    criteria = criteria_of(inst)
    out = []
    families = [pin.family] if pin.family else list(inst.search.families)
    for p in planes_options:
        speed = cl.nic_gbps // p
        options = tuple(o for s in switches if (o := _switch_option(s, speed)) is not None)
        media = [medium_option(m) for m in all_media if m.speed_gbps == speed]
        shapes: list[tuple[str, int, tuple[tuple[cs.SwitchOption, ...], ...]]] = []
        if "clos" in families:
            shapes += [("clos", T, (options,) * T) for T in tier_options]
        if "ocs_direct" in families and (pin.tiers in (None, 3)):
            ocs = tuple(_ocs_option(o) for o in catalog.ocs)
            shapes.append(("ocs_direct", 3, (options, options, ocs)))
        for family, T, per_tier in shapes:
            out.append(
                _structure(inst, hall, family, p, T, per_tier, media, criteria, nic_port(nic))
            )
    return out


def nic_port(nic: Nic | None) -> cb.PortKind:
    """The NIC end of the GPU links: the NIC's cage (None: no NIC known, any module fits)."""
    return None if nic is None else cage_of(nic.cage)


def _structure(
    inst: Instance,
    hall: Hall,
    family: str,
    planes: int,
    tiers: int,
    per_tier: tuple[tuple[cs.SwitchOption, ...], ...],
    media: list[cb.MediumOption],
    criteria: cb.Criteria,
    nic: cb.PortKind = None,
) -> Structure:
    """One structure's model data, or why it cannot be built."""
    cl, obj, lay = inst.cluster, inst.objective, inst.layout
    speed = cl.nic_gbps // planes
    missing = next((t for t, opts in enumerate(per_tier) if not opts), None)
    if missing is not None:
        what = (
            "optical circuit switch in the catalog"
            if family == "ocs_direct" and missing == 2
            else f"allowed switch runs {speed}G ports"
        )
        return Structure(planes, tiers, None, impossible=f"no {what}", family=family)
    placements = tuple(lay.leaf_placement)
    cabling = []
    for c in range(tiers):
        lower = None if c == 0 else per_tier[c - 1]
        cab = cabling_of(hall, c, placements, media, lower, per_tier[c], criteria, nic)
        if not cab.plans:
            return Structure(
                planes,
                tiers,
                None,
                impossible=_no_medium(
                    hall, c, tiers, family, speed, media, lower, per_tier[c], placements, nic
                ),
                family=family,
            )
        cabling.append(cab)
    problem = cs.SizingProblem(
        endpoints=cl.gpus,
        planes=planes,
        tiers=tiers,
        switch_options=per_tier,
        cabling=tuple(cabling),
        placements=placements,
        endpoints_per_rack=lay.nodes_per_rack * cl.gpus_per_node,
        requirements=requirements_of(inst, tiers),
        energy_usd_per_w=obj.energy_usd_per_w,
        capex_weight=obj.capex_weight,
        energy_weight=obj.energy_weight,
        pins=pins_of(inst, tiers),
        top_ocs=family == "ocs_direct",
        nic=nic,
    )
    return Structure(planes, tiers, problem, family=family)


def _no_medium(
    hall: Hall,
    c: int,
    tiers: int,
    family: str,
    speed: int,
    media: list[cb.MediumOption],
    lower: tuple[cs.SwitchOption, ...] | None,
    upper: tuple[cs.SwitchOption, ...],
    placements: tuple[str, ...],
    nic: cb.PortKind,
) -> str:
    """Why no medium cables a link class: none at the speed, none that plugs in, or none reaches."""
    name = _class_name(c, tiers, family)
    if not media:
        return f"no allowed medium runs {speed}G (the {name} links)"
    lower_ends = [nic] if lower is None else cs.engines_of(lower)
    for end, side in [(e, "lower") for e in lower_ends] + [
        (e, "upper") for e in cs.engines_of(upper)
    ]:
        if isinstance(end, cb.Cage) and not any(m.plugs_into(end) for m in media):
            owner = "NIC" if lower is None and side == "lower" else "switch"
            lanes = sorted({r for m in media for r in m.host_lane_gbps})
            return (
                f"no allowed {speed}G medium plugs into the {owner} ports of the {name} links: "
                f"they are {end.form_factor} cages of {end.lane_gbps}G lanes, and the {speed}G "
                f"media are made for {', '.join(f'{r}G' for r in lanes) or 'unknown'} lanes "
                f"({', '.join(m.name for m in media)})"
            )
    keys = placements if c < 2 else (None,)
    longest = max(class_lengths(hall, c, key, upper).max_m for key in keys)
    reach = max((m.reach_m for m in media), default=0.0)
    through = (
        " through the OCS (duplex optics with the loss budget)"
        if family == "ocs_direct" and c == 2
        else ""
    )
    return (
        f"no allowed medium at {speed}G cables the {name} links{through} that fits both ends "
        f"(up to {longest:.0f} m; the longest reach is {reach:.0f} m)"
    )


def roles_of(family: str, tiers: int) -> tuple[str, ...]:
    """Role of each tier, leaf first: the top of a direct-connect fabric is its OCS layer."""
    if family == "ocs_direct":
        return ("leaf", "spine", "ocs")
    return ROLES[tiers]


def _class_name(c: int, tiers: int, family: str = "clos") -> str:
    roles = ("gpu", *roles_of(family, tiers))
    return f"{roles[c]}-{roles[c + 1]}"


def restrict_to(problem: cs.SizingProblem, switch_model: str) -> cs.SizingProblem | None:
    """The same problem with every tier restricted to one switch model (None if it lacks the speed)."""
    tiers = []
    for level, opts in enumerate(problem.switch_options, start=1):
        if problem.top_ocs and level == problem.tiers:
            tiers.append(opts)  # the OCS layer keeps its devices
            continue
        only = tuple(o for o in opts if o.name == switch_model)
        if not only:
            return None
        tiers.append(only)
    return _replace_switches(problem, tuple(tiers))


def _replace_switches(
    p: cs.SizingProblem, switch_options: tuple[tuple[cs.SwitchOption, ...], ...]
) -> cs.SizingProblem:
    return replace(p, switch_options=switch_options)


def design_of(
    inst: Instance, structure: Structure, sol: cs.SizingSolution, catalog: Catalog
) -> Design:
    """Turn a structure's solution into a Design carrying every unit figure it was priced with."""
    assert structure.problem is not None
    assert sol.capex_usd is not None
    assert sol.power_w is not None
    p = structure.problem
    speed = inst.cluster.nic_gbps // structure.planes
    roles = roles_of(structure.family, p.tiers)
    tiers = []
    for ts in sol.tier_solutions:
        if p.top_ocs and ts.level == p.tiers:
            tiers.append(_ocs_tier(catalog.ocs_named(ts.switch_model), ts, speed))
            continue
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
                cpo_lane_gbps=sw.cpo_optics.lane_gbps if sw.cpo_optics else None,
                cpo_connector=sw.cpo_optics.connector if sw.cpo_optics else "",
                cpo_reach_m=sw.cpo_optics.reach_m if sw.cpo_optics else None,
                protocol=sw.protocol,
                cage_form_factor=sw.cage.form_factor if sw.cage else "",
                cage_lane_gbps=sw.cage.lane_gbps if sw.cage else None,
                ports_per_cage=sw.ports_per_cage(speed),
            )
        )
    hall = hall_of(inst.layout, inst.cluster.gpus, inst.cluster.gpus_per_node)
    nic = nic_of(inst, catalog)
    nic_k = 1 if nic is None else nic.ports_per_cage(structure.planes)
    classes = []
    for c, plan in enumerate(sol.plans):
        upper_options = p.switch_options[c]
        links = p.endpoints if c == 0 else tiers[c - 1].switches * tiers[c - 1].uplinks
        lower_k = nic_k if c == 0 else tiers[c - 1].ports_per_cage
        upper_k = tiers[c].ports_per_cage
        classes.append(
            LinkClass(
                index=c,
                lower_role="gpu" if c == 0 else roles[c - 1],
                upper_role=roles[c],
                links=links,
                speed_gbps=speed,
                groups=link_groups(
                    p.cabling[c],
                    plan,
                    links,
                    class_lengths(hall, c, plan.placement, upper_options),
                    catalog,
                    (lower_k, upper_k),
                ),
                placement=plan.placement or "",
            )
        )
    r = p.requirements
    return Design(
        instance=inst.name,
        family=structure.family,
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
        leaf_placement=sol.placement,
        catalog=inst.search.catalog,
        solve_s=sol.wall_s,
        nic="" if nic is None else nic.name,
        nic_form_factor="" if nic is None else nic.cage.form_factor,
        nic_lane_gbps=None if nic is None else nic.cage.lane_gbps,
        nics_per_cage=1 if nic is None else nic.nics_per_cage,
        protocol=next((t.protocol for t in tiers if t.protocol), ""),
    )


def _ocs_tier(o: Ocs, ts: cs.TierSolution, speed: int) -> TierDesign:
    """The OCS layer of a direct-connect design as a tier: devices, ports used per device."""
    return TierDesign(
        level=ts.level,
        role="ocs",
        switch_model=o.name,
        port_speed_gbps=speed,
        radix=o.ports,
        switches=ts.switches,
        downlinks=ts.downlinks,
        uplinks=0,
        fanout=0,
        parallel_links=0,
        cpo=False,
        unit_cost_usd=o.cost_usd,
        unit_power_w=o.power_w,
        latency_ns=0,
        source=o.source.get("cost_usd", ""),
        ocs=True,
        insertion_loss_db=o.insertion_loss_db,
    )


def link_groups(
    cab: cs.ClassCabling,
    plan: cb.CablePlan,
    links: int,
    dist: LengthDistribution,
    catalog: Catalog,
    ports_per_module: tuple[int, int] = (1, 1),
) -> tuple[LinkGroup, ...]:
    """The links of one class by medium: the plan's bands with their counts, merged by medium.

    ``ports_per_module`` gives the logical links one module carries at the lower and the upper
    end (the cage's ports at the link speed); an end without a module (CPO, OCS) gets 0.
    """
    lower_k = max(ports_per_module[0], 1) if cb.pluggable(plan.lower_engine) else 0
    upper_k = max(ports_per_module[1], 1) if cb.pluggable(plan.upper_engine) else 0
    tails = cab.tails_for(plan)
    counts = cb.band_counts(tails, links)
    # Consecutive bands on the same medium make one group; a medium that comes back after
    # another (a cap can make that optimal) starts a new group, so groups never overlap.
    runs: list[tuple[str, int, int, float, float]] = []
    low = 0.0
    for j, use in enumerate(plan.bands):
        edge = tails.thresholds_m[j]
        span = dist.within(low, edge)
        low = edge
        if use is None or counts[j] == 0 or span is None:
            continue
        key = (use.medium.name, use.ends)
        if runs and runs[-1][:2] == key:
            name, ends, count, shortest, _ = runs[-1]
            runs[-1] = (name, ends, count + counts[j], shortest, span[1])
        else:
            runs.append((*key, counts[j], span[0], span[1]))
    groups = []
    for name, ends, count, shortest, longest in runs:
        m = catalog.medium_named(name)
        groups.append(
            LinkGroup(
                medium=m.name,
                kind=m.kind,
                links=int(count),
                min_length_m=float(shortest),
                max_length_m=float(longest),
                pluggable_ends=ends,
                end_cost_usd=m.cost_usd_per_end,
                end_power_w=m.power_w_per_end,
                cable_cost_usd=m.cable_cost_usd,
                latency_ns=m.latency_ns,
                reach_m=m.reach_m,
                afr=m.afr,
                copper=m.copper,
                lane_gbps=m.lane_gbps,
                connector=m.connector,
                channel_loss_db=m.channel_loss_db,
                source=m.source.get("cost_usd_per_end", ""),
                lower_ports_per_module=lower_k,
                upper_ports_per_module=upper_k,
                host_lane_gbps=m.host_lanes,
                form_factors=tuple(m.form_factors),
                ns_per_m=cb.COPPER_NS_PER_M if m.copper else cb.FIBRE_NS_PER_M,
            )
        )
    return tuple(groups)


#: Relative tolerance under which a design's objective counts as equal to the proven bound.
OPTIMALITY_RTOL = 1e-6
#: Time for choosing the canonical design among those of the optimal objective.
TIE_BREAK_TIME_S = 10.0
#: Least time for it, even when the search used up the time limit.
TIE_BREAK_MIN_S = 1.0
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
    problems: dict[int, cs.SizingProblem] = {}
    for done, (st, name, problem) in enumerate(jobs, start=1):
        remaining = deadline - time.perf_counter()
        share = min(remaining, 4 * remaining / (len(jobs) - done + 1))
        if share <= 0:
            sol = cs.SizingSolution(
                Status.TIME_LIMIT, st.planes, st.tiers, None, None, None, None, 0.0
            )
        else:
            sol = _solve(problem, share)
        problems[len(outcomes)] = problem
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
    if sol.status is Status.OPTIMAL:
        # Same instance, same design: among equal-cost designs take the canonical one.
        problem = problems[next(i for i, o in enumerate(outcomes) if o is best)]
        left = max(TIE_BREAK_MIN_S, deadline - time.perf_counter())
        sol = cs.solve_canonical(cs.build(problem), sol, min(TIE_BREAK_TIME_S, left))
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
    culprits = _deletion_filter(structures)
    lines.extend(_describe(inst, family, st, sol) for family, st, sol in culprits)
    if not culprits and not lines:
        lines.append(
            "no single constraint explains it: several conflict together (try relaxing them one by one)"
        )
    return lines


def _deletion_filter(
    structures: list[Structure],
) -> list[tuple[str, Structure, cs.SizingSolution]]:
    """Relaxable families whose removal alone lets some structure find a design."""
    found: list[tuple[str, Structure, cs.SizingSolution]] = []
    for family in cs.RELAXABLE:
        best: tuple[Structure, cs.SizingSolution] | None = None
        for st in structures:
            if st.problem is None:
                continue
            sol = _solve(st.problem, DIAGNOSIS_TIME_S, frozenset({family}))
            if sol.status.has_solution and (
                best is None or (sol.objective_usd or 0) < (best[1].objective_usd or 0)
            ):
                best = (st, sol)
        if best is not None:
            found.append((family, *best))
    return found


def explain_pins(problem: cs.SizingProblem) -> list[str]:
    """Which pinned decisions cannot hold, in words.

    The port arithmetic first (radix, even spread, coverage); failing that, the single pins whose
    release alone lets a design exist.
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
    return [f"releasing {what} alone lets a design exist" for what in _freeing_pins(problem)]


def _freeing_pins(problem: cs.SizingProblem) -> list[str]:
    """The single pins whose release makes the structure feasible (a deletion filter)."""
    pins = problem.pins
    found = []
    for field_name in ("switch_models", "switches", "downlinks", "uplinks", "parallel_links"):
        values = getattr(pins, field_name)
        for i, value in enumerate(values):
            if value is None:
                continue
            freed = values[:i] + (None,) + values[i + 1 :]
            trial = replace(problem, pins=replace(pins, **{field_name: freed}))
            if _solve(trial, DIAGNOSIS_TIME_S, frozenset()).status.has_solution:
                found.append(f"search.pin.{field_name}[{i}] = {value}")
    for field_name, without in (
        ("pods", replace(pins, pods=None)),
        ("leaf_placement", replace(pins, leaf_placement=None)),
    ):
        if getattr(pins, field_name) is not None:
            trial = replace(problem, pins=without)
            if _solve(trial, DIAGNOSIS_TIME_S, frozenset()).status.has_solution:
                found.append(f"search.pin.{field_name} = {getattr(pins, field_name)}")
    return found


def _describe(inst: Instance, family: str, st: Structure, sol: cs.SizingSolution) -> str:
    c = inst.constraints
    shape = st.label
    if family == "tier.oversubscription":
        worst = max((t.downlinks / t.uplinks for t in sol.tier_solutions if t.uplinks), default=0.0)
        return (
            f"max_oversubscription = {c.max_oversubscription} conflicts with the other constraints: "
            f"without it the best design ({shape}) runs at {worst:.2f}:1"
        )
    if family == "path.hops":
        return (
            f"max_switch_hops = {c.max_switch_hops} is too few: the best design without it ({shape}) "
            f"crosses {cs.switch_hops(st.problem) if st.problem else '?'} switches"
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
    why = explain_pins(st.problem) if st.problem is not None else []
    return (
        f"the pinned decisions (search.pin) cannot all hold; without them a design exists ({shape})"
        + (": " + "; ".join(why) if why else "")
    )


def _planes_for(fraction: float) -> int:
    """Fewest planes p with (p - 1)/p >= fraction."""
    return cs.min_fanout_for_failure(Fraction(fraction).limit_denominator(RATIO_DENOMINATOR)) or 0
