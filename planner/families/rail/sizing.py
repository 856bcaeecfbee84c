"""The rail families' adapter: instance to rail structures, their solves, and their designs.

Both rail families size with ``models.rail_sizing`` (the Clos model plus the rail rules) through
``Family.size``: the SU size U is a decision of the model, and the GPU-to-leaf lengths it prices
depend on U, so every candidate U brings its own class 0 plans (``rail_gpu_leaf_lengths``). The
nodes are placed once and every SU size is measured off that placement
(``planner.families.rail.geometry``); ``rail_problems`` prepares the data of every structure once,
and ``size_rails`` restricts it to each switch model and solves within one deadline.

Rail count (rail-only). The rail of GPU g is g mod R, its rank in a *rail group* of R
consecutive GPUs (R / n nodes). Rail-optimized: R = n, a group is a node. Rail-only: R is a
decision among ``rail_counts``: a multiple of n that divides the scale-up domain D and the GPU
count G, so every domain holds whole rail groups (every rail) and every rail has G / R GPUs.
Each candidate R is its own ``RailProblem`` (one rail of G / R endpoints, R copies); the family
keeps the cheapest per structure (``size_rails``).

Rail geometry (class 0). Nodes stand in racks as ``planner.layout`` places them: node k in rack
``k // nodes_per_rack``, racks filling rows and rows filling columns. Rank r of rail group j sits
in node j (R / n) + r // n (= g // n), so an SU of U groups holds the U R / n consecutive nodes
``su U R / n ..`` (the last may hold fewer), and every GPU of those nodes is on one of the SU's
R rail leaves. They stand together:

- ``top_of_rack``: in the rack of the SU's first node; a GPU in that rack takes
  ``in_rack_cable_m``, a GPU in another rack ``a (|dx| + |dy|) + cable_slack_m``;
- ``middle_of_row`` / ``end_of_row``: at the row site (as ``planner.layout``) of the row holding
  the SU's middle node ``su U + (size - 1) // 2``; every GPU takes ``a (|dx| + |dy|) +
  cable_slack_m`` to it (``|dy| = 0`` within the row, so an SU inside one row has the contiguous
  lengths).

Classes 1 and 2 keep the hall's lengths: the rail leaves stand at the leaf sites a Clos's would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from models import cabling as cb
from models import clos_sizing as cs
from models import rail_sizing as rs
from models.status import Status
from planner.deadline import NO_DEADLINE, Deadline, DeadlineExpired, Watch, watch
from planner.design import Design, LinkClass, LinkGroup, TierDesign
from planner.families.rail.geometry import NodeGeometry, SuLengthTable
from planner.families.rail.wiring import RAIL_ONLY, RailOnlyWiring, RailOptimizedWiring
from planner.family_roles import Family, Sized
from planner.layout import LengthDistribution, hall_of
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance, Layout
from planner.sizing.designs import design_of
from planner.sizing.problems import (
    Structure,
    _structure,
    _switch_option,
    allowed_media,
    allowed_switches,
    criteria_of,
    medium_option,
    nic_of,
    nic_port,
    restrict_to,
)

#: Share of a rail structure's time spent choosing the canonical design among optimal ones.
CANONICAL_SHARE = 0.25
#: Cap on that time, in seconds.
CANONICAL_MAX_S = 5.0


def rail_gpu_leaf_lengths(
    layout: Layout,
    gpus: int,
    gpus_per_node: int,
    su_groups: int,
    placement: str,
    group_nodes: int = 1,
    geometry: NodeGeometry | None = None,
) -> LengthDistribution:
    """Class 0 lengths of the rail wiring with SUs of ``su_groups`` rail groups (module docstring).

    A rail group is ``group_nodes`` = R / n consecutive nodes (1: rail-optimized, R = n). Rank r
    of group j is in node j R / n + r // n, so SU su holds nodes su U R / n .. (su + 1) U R / n - 1
    and every GPU of a node is cabled to its SU's leaves. Weighted by GPUs (one link per GPU and
    plane); whole centimetres, rounded up. ``geometry``: the nodes already placed
    (``NodeGeometry.of(layout, gpus // gpus_per_node)``), else placed here.
    """
    nodes = gpus // gpus_per_node
    geometry = geometry or NodeGeometry.of(layout, nodes)
    return geometry.distribution(su_groups * group_nodes, placement, gpus_per_node)


def su_candidates(groups: int, leaf_options: tuple[cs.SwitchOption, ...]) -> list[int]:
    """Every SU size (in rail groups) a leaf can serve: 1 .. min(groups, largest leaf radix)."""
    radix = max((o.radix for o in leaf_options), default=0)
    return list(range(1, min(groups, radix) + 1))


def rail_counts(gpus: int, gpus_per_node: int, domain_gpus: int) -> list[int]:
    """The rail counts R a rail-only fabric may take, ascending (empty when D < n).

    R is a multiple of the node's n GPUs that divides the scale-up domain's D GPUs (every domain
    holds whole rail groups, so every rail) and the G GPUs (every rail has G / R GPUs). R = n is
    one whenever D >= n (D is whole nodes, G whole nodes).
    """
    n = gpus_per_node
    return [r for r in range(n, domain_gpus + 1, n) if domain_gpus % r == 0 and gpus % r == 0]


def _su_cabling(
    table: SuLengthTable,
    placements: tuple[str, ...],
    group_nodes: int,
    groups: int,
    leaf_options: tuple[cs.SwitchOption, ...],
    media: list[cb.MediumOption],
    criteria: cb.Criteria,
    nic: cb.PortKind,
    check: Watch | None = None,
) -> rs.SuCabling:
    """Class 0 plans of every candidate SU size, on the rail geometry's tails (``table``).

    SU sizes count rail groups of ``group_nodes`` nodes (R / n); ``groups`` is their number.
    ``check`` is checked after every SU size (``DeadlineExpired`` when the time is up).
    """
    thresholds = cs.reach_thresholds(media, None, leaf_options)
    per_su = {}
    for u in su_candidates(groups, leaf_options):
        tails: dict[str | None, cb.LengthTails] = {
            placement: table.tails(u * group_nodes, placement, thresholds)
            for placement in placements
        }
        per_su[u] = cs.class_cabling(tails, media, None, leaf_options, criteria, nic)
        if check is not None:
            check.check()
    return rs.su_cabling(per_su)


def rail_only_refusal(inst: Instance) -> str:
    """Why the scale-up domain cannot carry a rail-only fabric's cross-rail traffic ('' if it can).

    Rule: every node's GPUs share one scale-up domain (``scale_up.gpus >= gpus_per_node``, so
    every domain holds every rail) and a GPU's scale-up link feeds its NIC at line rate with
    traffic forwarded from the other rails (``scale_up.gbps_per_gpu >= nic_gbps``). When it
    holds, R = n rails is always possible; larger rail counts R (``rail_counts``: multiples of n
    dividing the domain and the GPU count) are candidates beside it.
    """
    cl = inst.cluster
    su = cl.scale_up
    if su.gpus < cl.gpus_per_node:
        return (
            f"rail-only needs every node's {cl.gpus_per_node} GPUs in one scale-up domain, so "
            f"traffic can change rails over it; the domain holds {su.gpus} GPUs"
        )
    if su.gbps_per_gpu < cl.nic_gbps:
        return (
            f"rail-only sends cross-rail traffic through the scale-up domain at line rate; its "
            f"{su.gbps_per_gpu:g} Gb/s per GPU is below the NIC's {cl.nic_gbps} Gb/s"
        )
    return ""


def _shapes(inst: Instance, family: Family) -> list[tuple[int, int]]:
    """The (planes, tiers) of every rail structure the search considers, in the order tried."""
    cl, pin = inst.cluster, inst.search.pin
    planes_options = [pin.planes] if pin.planes else sorted(cl.nic_ports)
    tier_options = [pin.tiers] if pin.tiers else list(range(1, inst.search.max_tiers + 1))
    return [(p, t) for p in planes_options for t in _tier_counts(family, tier_options)]


def rail_problems(
    inst: Instance,
    catalog: Catalog,
    family: Family,
    rail_only: bool,
    *,
    deadline: Deadline = NO_DEADLINE,
) -> list[tuple[Structure, rs.RailProblem | None]]:
    """Every rail structure (planes x tiers) of the family, with its model data or why none.

    Rail-optimized: one entry per structure. Rail-only: one entry per structure and candidate
    rail count R (``rail_counts``, ascending; ``RailProblem.copies`` = R), each one rail of G / R
    GPUs whose "nodes" are its G / R rail groups.

    The work is done once: the nodes are placed once (``NodeGeometry``), every SU size any
    structure needs is measured once against the reach thresholds of every plane count
    (``SuLengthTable``; an SU of U groups of R / n nodes is the same SU of U R / n nodes at every
    R), and the class 0 plans of a plane count and rail count serve all its tier counts.
    Raises ``DeadlineExpired`` when ``deadline`` passes before the data is complete.
    """
    if deadline.expired:
        raise DeadlineExpired("the time limit passed before the rail data was prepared")
    cl, lay = inst.cluster, inst.layout
    n = cl.gpus_per_node
    check = watch(deadline)
    hall = hall_of(lay, cl.gpus, n)
    nic = nic_of(inst, catalog)
    switches = [
        s for s in allowed_switches(inst, catalog) if nic is None or s.protocol in nic.protocols
    ]
    all_media = allowed_media(inst, catalog)
    criteria = criteria_of(inst)
    counts = rail_counts(cl.gpus, n, cl.scale_up.gpus) if rail_only else [n]
    placements = tuple(lay.leaf_placement)
    # The structures first (the Clos data of each), then the class 0 data they need.
    built: list[tuple[Structure, tuple[cs.SwitchOption, ...], list[cb.MediumOption]]] = []
    for p, T in _shapes(inst, family):
        speed = cl.nic_gbps // p
        options = tuple(o for s in switches if (o := _switch_option(s, speed)) is not None)
        media = [medium_option(m) for m in all_media if m.speed_gbps == speed]
        per_tier = (options,) * T
        st = _structure(inst, hall, family, p, T, per_tier, media, criteria, nic_port(nic))
        built.append((st, options, media))
        check.check()
    needed = [(st.planes, options, media) for st, options, media in built if st.problem]
    su_nodes = {
        u * (rails // n)
        for _, options, _ in needed
        for rails in counts
        for u in su_candidates(cl.gpus // rails, options)
    }
    thresholds = {t for _, o, m in needed for t in cs.reach_thresholds(m, None, o)}
    table = SuLengthTable.measure(
        NodeGeometry.of(lay, cl.gpus // n), su_nodes, placements, thresholds, n, check
    )
    cabling: dict[tuple[int, int], rs.SuCabling] = {}  # by (planes, rails): any tier count
    out: list[tuple[Structure, rs.RailProblem | None]] = []
    for st, options, media in built:
        if st.problem is None:
            out.append((st, None))
            continue
        for rails in counts:
            key = (st.planes, rails)
            if key not in cabling:
                cabling[key] = _su_cabling(
                    table,
                    placements,
                    rails // n,
                    cl.gpus // rails,
                    options,
                    media,
                    criteria,
                    nic_port(nic),
                    check,
                )
            cab0 = cabling[key]
            if not cab0.plans:
                why = "no allowed medium cables the GPU links to their rail leaves"
                out.append((replace(st, problem=None, impossible=why), None))
                continue
            groups = cl.gpus // rails
            clos = replace(
                st.problem,
                cabling=(cab0, *st.problem.cabling[1:]),
                endpoints=groups if rail_only else cl.gpus,
            )
            rp = rs.RailProblem(
                clos,
                rails=1 if rail_only else n,
                nodes=groups,
                nodes_per_rack=lay.nodes_per_rack * n // rails,
                copies=rails if rail_only else 1,
            )
            out.append((replace(st, problem=clos), rp))
    return out


def _tier_counts(family: Family, tier_options: list[int]) -> list[int]:
    """The family's tier counts among those allowed (rail-optimized needs a tier above the leaves)."""
    low = 1 if family.name == RAIL_ONLY else 2
    return [t for t in tier_options if t >= low]


def size_rail(
    inst: Instance,
    catalog: Catalog,
    family: Family,
    switch_model: str | None,
    time_limit_s: float,
    *,
    rail_only: bool,
) -> list[Sized]:
    """Size every rail structure of the family under one switch restriction (``size_rails``)."""
    return size_rails(
        inst, catalog, family, (switch_model,), Deadline.after(time_limit_s), rail_only=rail_only
    )


#: Jobs ahead of the last get at most this many times an even share of the time left (the
#: search loop's rule): early jobs, the decisive ones, may use more, later ones take the rest.
SHARE_FACTOR = 4


def size_rails(
    inst: Instance,
    catalog: Catalog,
    family: Family,
    switch_models: Sequence[str | None],
    deadline: Deadline,
    *,
    rail_only: bool,
) -> list[Sized]:
    """Size every rail structure of the family under each switch restriction (``Family.size``).

    The model data is prepared once (``rail_problems``) and restricted per switch model. Rail-only:
    every candidate rail count R of a structure is solved and the structure keeps the cheapest
    (``_best_over_rails``; ties go to the smaller R).

    ``deadline`` bounds it all. The preparation is cut when it passes (every structure is then
    ``TIME_LIMIT``, no bound); each solve gets a share of the time left, a solve the time did not
    reach is ``TIME_LIMIT`` with no bound, and the diagnosis of an infeasible structure tries
    only the relaxations there is time for, and says so.
    """
    pin = inst.search.pin
    if rail_only:
        why = rail_only_refusal(inst)
        if why:
            tiers = pin.tiers or 2
            return [
                Sized(Status.INFEASIBLE, pin.planes or 1, tiers, reason=why, switch_model=o)
                for o in switch_models
            ]
    try:
        pairs = rail_problems(inst, catalog, family, rail_only, deadline=deadline)
    except DeadlineExpired:
        return [
            Sized(Status.TIME_LIMIT, p, t, switch_model=o)
            for o in switch_models
            for p, t in _shapes(inst, family)
        ]
    Tried = list[tuple[Structure, rs.RailProblem | None, Sized]]
    per_option: list[dict[tuple[int, int], Tried]] = []
    jobs: list[tuple[dict[tuple[int, int], Tried], str | None, Structure, rs.RailProblem]] = []
    for option in switch_models:
        per_structure: dict[tuple[int, int], Tried] = {}
        per_option.append(per_structure)
        for st, rp in pairs:
            if rp is None:
                sized = Sized(
                    Status.INFEASIBLE,
                    st.planes,
                    st.tiers,
                    reason=st.impossible or "",
                    switch_model=option,
                )
                per_structure.setdefault((st.planes, st.tiers), []).append((st, None, sized))
                continue
            if option is not None:
                if any(pin.model_for(t) not in (None, option) for t in range(1, st.tiers + 1)):
                    continue
                restricted = restrict_to(rp.clos, option, family)
                if restricted is None:
                    continue
                rp = replace(rp, clos=restricted)
            jobs.append((per_structure, option, replace(st, problem=rp.clos), rp))
    for done, (per_structure, option, st, rp) in enumerate(jobs):
        left = deadline.remaining_s()
        sized = Sized(Status.TIME_LIMIT, st.planes, st.tiers, switch_model=option)
        if left > 0:
            share = min(left, SHARE_FACTOR * left / (len(jobs) - done + 1))
            sized = _solve_rail(inst, catalog, st, rp, share, option)
        per_structure.setdefault((st.planes, st.tiers), []).append((st, rp, sized))
    return [
        _best_over_rails(tried, deadline)
        for per_structure in per_option
        for tried in per_structure.values()
    ]


def _solve_rail(
    inst: Instance,
    catalog: Catalog,
    st: Structure,
    rp: rs.RailProblem,
    time_limit_s: float,
    switch_model: str | None,
) -> Sized:
    """One rail problem solved in ``time_limit_s`` (a part of it choosing the canonical design)."""
    canonical = min(CANONICAL_MAX_S, CANONICAL_SHARE * time_limit_s)
    rsol = rs.solve(rp, cs.SolveOptions(time_limit_s=time_limit_s - canonical), canonical)
    sol = rsol.solution
    design = None
    if sol.status.has_solution:
        design = rail_design(inst, st, rp, sol, catalog)
    return Sized(
        sol.status,
        st.planes,
        st.tiers,
        objective_usd=rsol.total(sol.objective_usd),
        bound_usd=rsol.total(sol.bound_usd),
        capex_usd=rsol.total(sol.capex_usd),
        power_w=rsol.total(sol.power_w),
        wall_s=sol.wall_s,
        design=design,
        switch_model=switch_model,
    )


def _best_over_rails(
    tried: list[tuple[Structure, rs.RailProblem | None, Sized]],
    deadline: Deadline = NO_DEADLINE,
) -> Sized:
    """One structure's outcome over its rail counts: the cheapest design, the least bound.

    The structure is optimal when every rail count was solved to optimality or proved
    infeasible; its bound is the least over the rail counts (an infeasible one bounds nothing).
    With no design, an infeasible structure says why for its first rail count (R = n), as far
    as ``deadline`` lets the diagnosis go.
    """
    sized = [s for _, _, s in tried]
    if len(sized) == 1 and sized[0].status is not Status.INFEASIBLE:
        return sized[0]
    wall = sum(s.wall_s for s in sized)
    with_design = [s for s in sized if s.design is not None and s.objective_usd is not None]
    if with_design:
        best = min(with_design, key=lambda s: s.objective_usd or 0.0)  # first (smaller R) on ties
        proven = all(s.status in (Status.OPTIMAL, Status.INFEASIBLE) for s in sized)
        bounds = [math.inf if s.status is Status.INFEASIBLE else s.bound_usd for s in sized]
        bound = None if any(b is None for b in bounds) else min(b for b in bounds if b is not None)
        return replace(
            best,
            status=Status.OPTIMAL if proven else Status.FEASIBLE,
            bound_usd=bound,
            wall_s=wall,
        )
    open_ = [s for s in sized if s.status is not Status.INFEASIBLE]
    if open_:
        return replace(open_[0], wall_s=wall)
    st, rp, first = tried[0]
    reason = first.reason if rp is None else _infeasible_reason(st, rp, deadline)
    if len(tried) > 1:
        rails = ", ".join(str(p.copies) for _, p, _ in tried if p is not None)
        reason = f"{reason} (rail counts tried: {rails})"
    return replace(first, reason=reason, wall_s=wall)


#: Time for each trial that relaxes one constraint family of an infeasible rail structure.
DIAGNOSIS_TIME_S = 2.0
#: What each relaxable family is, in a user's words.
RELAXED_WORDS = {
    "tier.oversubscription": "max_oversubscription",
    "path.hops": "max_switch_hops",
    "path.latency": "max_latency_ns",
    "failure.single_switch": "survive",
    "budget.power": "max_power_kw",
    "budget.capex": "max_capex_usd",
    "pins": "search.pin",
}


def _infeasible_reason(st: Structure, rp: rs.RailProblem, deadline: Deadline = NO_DEADLINE) -> str:
    """Why a rail structure has no design: the constraints whose relaxation alone would give one.

    Each relaxation is solved for at most ``DIAGNOSIS_TIME_S`` and never past ``deadline``; the
    relaxations the time did not reach are named as not tried.
    """
    if st.family.name == RAIL_ONLY:
        head = (
            f"no rail-only fabric of {st.planes} plane(s) x {st.tiers} tier(s) meets the "
            f"constraints with {rp.copies} rails of {rp.nodes} GPUs each"
        )
    else:
        head = (
            f"no rail-optimized fabric of {st.planes} plane(s) x {st.tiers} tier(s) meets the "
            f"constraints with whole scalable units of {rp.rails} rail "
            f"lea{'ves' if rp.rails > 1 else 'f'} each"
        )
    freeing: list[str] = []
    untried: list[str] = []
    for f in cs.RELAXABLE:
        if not cs.binds(rp.clos, f):
            continue  # the same model without it: as infeasible as solved
        left = deadline.remaining_s()
        if left <= 0:
            untried.append(RELAXED_WORDS.get(f, f))
            continue
        options = cs.SolveOptions(time_limit_s=min(DIAGNOSIS_TIME_S, left))
        if cs.solve(rs.build(rp, frozenset({f})), options).status.has_solution:
            freeing.append(RELAXED_WORDS.get(f, f))
    if freeing:
        head = f"{head}; relaxing {' or '.join(freeing)} alone would allow one"
    if untried:
        head = (
            f"{head} (the time limit ran out before relaxing {', '.join(untried)} was tried; "
            "raise --time-limit to try them)"
        )
    return head


def rail_design(
    inst: Instance,
    st: Structure,
    rp: rs.RailProblem,
    sol: cs.SizingSolution,
    catalog: Catalog,
) -> Design:
    """The priced design of a rail solution: class 0 on the rail geometry, rails multiplied."""
    su = rs.su_of(rp, sol)
    cl = inst.cluster
    rail_only = st.family.name == RAIL_ONLY
    rails = rp.copies if rail_only else rp.rails
    group_nodes = rails // cl.gpus_per_node
    lengths = {
        0: rail_gpu_leaf_lengths(
            inst.layout, cl.gpus, cl.gpus_per_node, su, sol.placement, group_nodes
        )
    }
    d = design_of(inst, st, sol, catalog, lengths=lengths)
    if not rail_only:
        return replace(d, wiring=RailOptimizedWiring(su_nodes=su, rails=rp.rails))
    wiring = RailOnlyWiring(su_nodes=su * group_nodes, rails=rails)
    return times(replace(d, wiring=wiring), rails, cl.gpus)


def times(d: Design, copies: int, gpus: int) -> Design:
    """A design of ``copies`` identical fabrics side by side (the rails of a rail-only fabric)."""

    def group(g: LinkGroup) -> LinkGroup:
        return replace(
            g,
            links=g.links * copies,
            length_histogram=tuple((x, n * copies) for x, n in g.length_histogram),
        )

    def link_class(c: LinkClass) -> LinkClass:
        return replace(c, links=c.links * copies, groups=tuple(group(g) for g in c.groups))

    def tier(t: TierDesign) -> TierDesign:
        return replace(t, switches=t.switches * copies)

    return replace(
        d,
        gpus=gpus,
        tiers=tuple(tier(t) for t in d.tiers),
        link_classes=tuple(link_class(c) for c in d.link_classes),
        capex_usd=d.capex_usd * copies,
        power_w=d.power_w * copies,
        objective_usd=d.objective_usd * copies,
        bound_usd=d.bound_usd * copies,
        pods=d.pods * copies,
    )
