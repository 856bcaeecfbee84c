"""The Clos adapter, input side: instance and catalog to the model data of each structure."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from models import cabling as cb
from models import clos_sizing as cs
from models.status import Status
from planner.design import Design
from planner.family_roles import ClosModelHooks, ClosShapes
from planner.layout import Hall, LengthDistribution, hall_of
from planner.schema.catalog import Cage, Catalog, Medium, Nic, Switch
from planner.schema.instance import Instance

if TYPE_CHECKING:
    from planner.family_roles import Family

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
    family: Family
    impossible: str | None = None

    @property
    def label(self) -> str:
        """Short name, the family's: 2 planes x 3 tiers, or 1 plane x OCS direct-connect."""
        return self.family.label(self.planes, self.tiers)


@dataclass(frozen=True)
class Outcome:
    """One solved structure under one switch restriction (None = mixed models allowed)."""

    structure: Structure
    switch_model: str | None
    solution: cs.SizingSolution
    design: Design | None = None
    """The priced design, when a family's own model sized the structure (``Family.size``)."""


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


def engine_of(s: Switch) -> cb.PortKind:
    """What a switch's ports take: its module cage, or its co-packaged engine."""
    if s.cpo_optics is not None:
        o = s.cpo_optics
        return cb.CpoEngine(o.lane_gbps, o.connector, o.reach_m)
    return cage_of(s.cage)


def cage_of(cage: Cage | None, nic: bool = False) -> cb.Cage | None:
    """A catalog cage (a NIC's when ``nic``) as the cabling plans see it."""
    return None if cage is None else cb.Cage(cage.form_factor, cage.lane_gbps, nic)


def _switch_option(s: Switch, speed_gbps: int) -> cs.SwitchOption | None:
    radix = s.radix_at(speed_gbps)
    if radix is None:
        return None
    return cs.SwitchOption(
        s.name, radix, s.cost_usd, s.power_w, s.latency_ns, engine_of(s), s.protocol
    )


def nic_of(inst: Instance, catalog: Catalog) -> Nic | None:
    """The instance's NIC, or the catalog's first at its speed when it names none."""
    return catalog.nic_for(inst.cluster.nic, inst.cluster.nic_gbps)


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
        tuple(
            cb.ModuleOption(
                mod.name,
                mod.cost_usd_per_end,
                mod.power_w_per_end,
                tuple(mod.host_lane_gbps),
                tuple(mod.form_factors),
                mod.nic_only,
            )
            for mod in m.modules
        ),
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


def clos_hooks(family: Family) -> ClosModelHooks:
    """The family as the Clos model sees it; TypeError for a family it does not size."""
    if not isinstance(family, ClosModelHooks):
        raise TypeError(f"the Clos model sizes no {family.name} structure (no ClosModelHooks)")
    return family


def structures_of(
    inst: Instance, catalog: Catalog, families: Sequence[Family], hall: Hall | None = None
) -> list[Structure]:
    """Every (planes, tiers) the search considers, with its model data or why it is impossible.

    ``families`` are the instance's, resolved by the caller (``planner.families.search_families``).
    """
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
    for p in planes_options:
        speed = cl.nic_gbps // p
        options = tuple(o for s in switches if (o := _switch_option(s, speed)) is not None)
        media = [medium_option(m) for m in all_media if m.speed_gbps == speed]
        shapes = [
            (family, T, per_tier)
            for family in families
            if isinstance(family, ClosShapes)
            for T, per_tier in family.shapes(catalog, options, tier_options, pin.tiers)
        ]
        for family, T, per_tier in shapes:
            out.append(
                _structure(inst, hall, family, p, T, per_tier, media, criteria, nic_port(nic))
            )
    return out


def nic_port(nic: Nic | None) -> cb.PortKind:
    """The NIC end of the GPU links: the NIC's cage (None: no NIC known, any module fits)."""
    return None if nic is None else cage_of(nic.cage, nic=True)


def _structure(
    inst: Instance,
    hall: Hall,
    family: Family,
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
        what = clos_hooks(family).missing_tier_reason(missing, speed)
        return Structure(planes, tiers, None, family, impossible=f"no {what}")
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
                family,
                impossible=_no_medium(
                    hall, c, tiers, family, speed, media, lower, per_tier[c], placements, nic
                ),
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
        top_ocs=clos_hooks(family).circuit_level(tiers) == tiers,
        ocs_transit=clos_hooks(family).circuit_level(tiers) == tiers and inst.search.ocs_transit,
        nic=nic,
    )
    return Structure(planes, tiers, problem, family)


def _no_medium(
    hall: Hall,
    c: int,
    tiers: int,
    family: Family,
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
    ends = [(e, "lower") for e in lower_ends] + [(e, "upper") for e in cs.engines_of(upper)]

    def owner(side: str) -> str:
        return "NIC" if lower is None and side == "lower" else "switch"

    for end, side in ends:
        if isinstance(end, cb.Cage) and not any(m.fits(end) for m in media):
            lanes = sorted(
                {r for m in media for mod in (m.own_module, *m.modules) for r in mod.host_lane_gbps}
            )
            return (
                f"no allowed {speed}G medium plugs into the {owner(side)} ports of the {name} "
                f"links: they are {end.form_factor} cages of {end.lane_gbps}G lanes, and the "
                f"{speed}G media are made for {', '.join(f'{r}G' for r in lanes) or 'unknown'} "
                f"lanes ({', '.join(m.name for m in media)})"
            )
    lower_cages = [e for e, side in ends if side == "lower" and isinstance(e, cb.Cage)]
    upper_cages = [e for e, side in ends if side == "upper" and isinstance(e, cb.Cage)]
    for lo, hi in ((a, b) for a in lower_cages for b in upper_cages):
        if not any(m.fits(lo) and m.fits(hi) for m in media):
            fit_lo = ", ".join(m.name for m in media if m.fits(lo))
            fit_hi = ", ".join(m.name for m in media if m.fits(hi))
            return (
                f"no allowed {speed}G medium has modules for both ends of the {name} links: "
                f"the {owner('lower')} ends are {lo.form_factor} cages of {lo.lane_gbps}G lanes "
                f"({fit_lo} fit them), the switch ends {hi.form_factor} cages of "
                f"{hi.lane_gbps}G lanes ({fit_hi} fit them); a medium joins them only with a "
                "module for each (a gearbox module: see 'modules' in the catalog)"
            )
    keys = placements if c < 2 else (None,)
    longest = max(class_lengths(hall, c, key, upper).max_m for key in keys)
    reach = max((m.reach_m for m in media), default=0.0)
    through = clos_hooks(family).class_note(c, tiers)
    return (
        f"no allowed medium at {speed}G cables the {name} links{through} that fits both ends "
        f"(up to {longest:.0f} m; the longest reach is {reach:.0f} m)"
    )


def _class_name(c: int, tiers: int, family: Family) -> str:
    roles = ("gpu", *family.roles(tiers))
    return f"{roles[c]}-{roles[c + 1]}"


def restrict_to(
    problem: cs.SizingProblem, switch_model: str, family: Family
) -> cs.SizingProblem | None:
    """The same problem with every packet tier restricted to one switch model.

    None if the model lacks the speed. The family's circuit-switched layer keeps its devices.
    """
    circuits = clos_hooks(family).circuit_level(problem.tiers)
    tiers = []
    for level, opts in enumerate(problem.switch_options, start=1):
        if level == circuits:
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


def _solve(
    problem: cs.SizingProblem, time_limit_s: float, leave_out: frozenset[str] = frozenset()
) -> cs.SizingSolution:
    return cs.solve(cs.build(problem, leave_out), cs.SolveOptions(time_limit_s=time_limit_s))
