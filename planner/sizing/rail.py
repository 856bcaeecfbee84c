"""The rail families' adapter: instance to rail structures, their solves, and their designs.

Both rail families size with ``models.rail_sizing`` (the Clos model plus the rail rules) through
``Family.size``: the SU size U is a decision of the model, and the GPU-to-leaf lengths it prices
depend on U, so every candidate U brings its own class 0 plans (``rail_gpu_leaf_lengths``).

Rail count (rail-only). The rail of GPU g is g mod R, its rank in a *rail group* of R
consecutive GPUs (R / n nodes). Rail-optimized: R = n, a group is a node. Rail-only: R is a
decision among ``rail_counts``: a multiple of n that divides the scale-up domain D and the GPU
count G, so every domain holds whole rail groups (every rail) and every rail has G / R GPUs.
Each candidate R is its own ``RailProblem`` (one rail of G / R endpoints, R copies); the family
keeps the cheapest per structure (``size_rail``).

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
import time
from dataclasses import replace

import numpy as np

from models import cabling as cb
from models import clos_sizing as cs
from models import rail_sizing as rs
from models.status import Status
from planner.design import Design, LinkClass, LinkGroup, TierDesign
from planner.families.base import Sized
from planner.layout import LengthDistribution, default_row_columns, hall_of
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
#: A length less than this above a whole centimetre counts as that centimetre (float noise).
ROUND_TOL_CM = 1e-6


def _node_xy(layout: Layout, nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The x, y and rack of every node, as ``planner.layout.hall_of`` places the racks."""
    lay = layout
    racks = math.ceil(nodes / lay.nodes_per_rack)
    per_row = lay.racks_per_row
    rows = math.ceil(racks / per_row)
    columns = lay.row_columns or default_row_columns(rows, per_row)
    rows_per_column = math.ceil(rows / columns)
    row_length = per_row * lay.rack_width_m
    node = np.arange(nodes, dtype=np.int64)
    rack = node // lay.nodes_per_rack
    row = rack // per_row
    x0 = (row // rows_per_column) * (row_length + lay.cross_aisle_m)
    x = x0 + (rack % per_row + 0.5) * lay.rack_width_m
    y = (row % rows_per_column) * lay.row_pitch_m
    return x.astype(np.float64), y.astype(np.float64), rack


def _site_x(layout: Layout, placement: str, rack_x: np.ndarray, rack: np.ndarray) -> np.ndarray:
    """The x of the row site serving a rack at x ``rack_x`` (middle or end of its row)."""
    lay = layout
    row_length = lay.racks_per_row * lay.rack_width_m
    slot = rack % lay.racks_per_row
    x0 = rack_x - (slot + 0.5) * lay.rack_width_m
    rel = row_length / 2 if placement == "middle_of_row" else row_length + lay.rack_width_m / 2
    return np.asarray(x0 + rel, dtype=np.float64)


def rail_gpu_leaf_lengths(
    layout: Layout,
    gpus: int,
    gpus_per_node: int,
    su_groups: int,
    placement: str,
    group_nodes: int = 1,
) -> LengthDistribution:
    """Class 0 lengths of the rail wiring with SUs of ``su_groups`` rail groups (module docstring).

    A rail group is ``group_nodes`` = R / n consecutive nodes (1: rail-optimized, R = n). Rank r
    of group j is in node j R / n + r // n, so SU su holds nodes su U R / n .. (su + 1) U R / n - 1
    and every GPU of a node is cabled to its SU's leaves. Weighted by GPUs (one link per GPU and
    plane); whole centimetres, rounded up.
    """
    nodes = gpus // gpus_per_node
    su_nodes = su_groups * group_nodes
    x, y, rack = _node_xy(layout, nodes)
    node = np.arange(nodes, dtype=np.int64)
    first = (node // su_nodes) * su_nodes
    size = np.minimum(first + su_nodes, nodes) - first
    run = 1.0 + layout.routing_overhead
    if placement == cs.TOP_OF_RACK:
        site = first
        away = run * (np.abs(x - x[site]) + np.abs(y - y[site])) + layout.cable_slack_m
        length = np.where(rack == rack[site], layout.in_rack_cable_m, away)
    else:
        site = first + (size - 1) // 2
        site_x = _site_x(layout, placement, x[site], rack[site])
        length = run * (np.abs(x - site_x) + np.abs(y - y[site])) + layout.cable_slack_m
    cm = np.ceil(length * 100.0 - ROUND_TOL_CM).astype(np.int64)
    counts = np.bincount(cm, weights=np.full(nodes, gpus_per_node)).astype(np.int64)
    where = np.flatnonzero(counts)
    return LengthDistribution(tuple((where / 100.0).tolist()), tuple(counts[where].tolist()))


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
    inst: Instance,
    leaf_options: tuple[cs.SwitchOption, ...],
    media: list[cb.MediumOption],
    criteria: cb.Criteria,
    nic: cb.PortKind,
    rails: int | None = None,
) -> rs.SuCabling:
    """Class 0 plans of every candidate SU size, on the rail geometry (``rail_gpu_leaf_lengths``).

    ``rails``: the rail period R (None: the node's n GPUs); SU sizes count rail groups.
    """
    cl, lay = inst.cluster, inst.layout
    group_nodes = (rails or cl.gpus_per_node) // cl.gpus_per_node
    groups = cl.gpus // cl.gpus_per_node // group_nodes
    thresholds = cs.reach_thresholds(media, None, leaf_options)
    per_su = {}
    for u in su_candidates(groups, leaf_options):
        tails: dict[str | None, cb.LengthTails] = {}
        for placement in lay.leaf_placement:
            dist = rail_gpu_leaf_lengths(lay, cl.gpus, cl.gpus_per_node, u, placement, group_nodes)
            tails[placement] = cb.LengthTails(
                dist.total,
                thresholds,
                tuple(dist.longer_than(r) for r in thresholds),
                max_length_m=dist.max_m,
            )
        per_su[u] = cs.class_cabling(tails, media, None, leaf_options, criteria, nic)
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


def rail_problems(
    inst: Instance, catalog: Catalog, family: str, rail_only: bool
) -> list[tuple[Structure, rs.RailProblem | None]]:
    """Every rail structure (planes x tiers) of the family, with its model data or why none.

    Rail-optimized: one entry per structure. Rail-only: one entry per structure and candidate
    rail count R (``rail_counts``, ascending; ``RailProblem.copies`` = R), each one rail of G / R
    GPUs whose "nodes" are its G / R rail groups.
    """
    cl, lay = inst.cluster, inst.layout
    n = cl.gpus_per_node
    hall = hall_of(lay, cl.gpus, n)
    pin = inst.search.pin
    planes_options = [pin.planes] if pin.planes else sorted(cl.nic_ports)
    tier_options = [pin.tiers] if pin.tiers else list(range(1, inst.search.max_tiers + 1))
    nic = nic_of(inst, catalog)
    switches = [
        s for s in allowed_switches(inst, catalog) if nic is None or s.protocol in nic.protocols
    ]
    all_media = allowed_media(inst, catalog)
    criteria = criteria_of(inst)
    counts = rail_counts(cl.gpus, n, cl.scale_up.gpus) if rail_only else [n]
    out: list[tuple[Structure, rs.RailProblem | None]] = []
    for p in planes_options:
        speed = cl.nic_gbps // p
        options = tuple(o for s in switches if (o := _switch_option(s, speed)) is not None)
        media = [medium_option(m) for m in all_media if m.speed_gbps == speed]
        for T in _tier_counts(family, tier_options):
            per_tier = (options,) * T
            st = _structure(inst, hall, family, p, T, per_tier, media, criteria, nic_port(nic))
            if st.problem is None:
                out.append((st, None))
                continue
            for rails in counts:
                cab0 = _su_cabling(inst, per_tier[0], media, criteria, nic_port(nic), rails)
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


def _tier_counts(family: str, tier_options: list[int]) -> list[int]:
    """The family's tier counts among those allowed (rail-optimized needs a tier above the leaves)."""
    low = 1 if family == "rail_only" else 2
    return [t for t in tier_options if t >= low]


def size_rail(
    inst: Instance,
    catalog: Catalog,
    family: str,
    switch_model: str | None,
    time_limit_s: float,
    *,
    rail_only: bool,
) -> list[Sized]:
    """Size every rail structure of the family, best design of each (``Family.size``).

    Rail-only: every candidate rail count R of a structure is solved and the structure keeps
    the cheapest (``_best_over_rails``; ties go to the smaller R).
    """
    if rail_only:
        why = rail_only_refusal(inst)
        if why:
            tiers = inst.search.pin.tiers or 2
            return [Sized(Status.INFEASIBLE, inst.search.pin.planes or 1, tiers, reason=why)]
    pairs = rail_problems(inst, catalog, family, rail_only)
    pin = inst.search.pin
    per_structure: dict[tuple[int, int], list[tuple[Structure, rs.RailProblem | None, Sized]]] = {}
    jobs: list[tuple[Structure, rs.RailProblem]] = []
    for st, rp in pairs:
        key = (st.planes, st.tiers)
        if rp is None:
            sized = Sized(Status.INFEASIBLE, st.planes, st.tiers, reason=st.impossible or "")
            per_structure.setdefault(key, []).append((st, None, sized))
            continue
        if switch_model is not None:
            if any(pin.model_for(t) not in (None, switch_model) for t in range(1, st.tiers + 1)):
                continue
            restricted = restrict_to(rp.clos, switch_model, family)
            if restricted is None:
                continue
            rp = replace(rp, clos=restricted)
        jobs.append((replace(st, problem=rp.clos), rp))
    start = time.perf_counter()
    for done, (st, rp) in enumerate(jobs):
        left = time_limit_s - (time.perf_counter() - start)
        share = max(0.05, left / (len(jobs) - done))
        canonical = min(CANONICAL_MAX_S, CANONICAL_SHARE * share)
        rsol = rs.solve(rp, cs.SolveOptions(time_limit_s=share - canonical), canonical)
        sol = rsol.solution
        design = None
        if sol.status.has_solution:
            design = rail_design(inst, st, rp, sol, catalog)
        sized = Sized(
            sol.status,
            st.planes,
            st.tiers,
            objective_usd=rsol.total(sol.objective_usd),
            bound_usd=rsol.total(sol.bound_usd),
            capex_usd=rsol.total(sol.capex_usd),
            power_w=rsol.total(sol.power_w),
            wall_s=sol.wall_s,
            design=design,
        )
        per_structure.setdefault((st.planes, st.tiers), []).append((st, rp, sized))
    return [_best_over_rails(tried) for tried in per_structure.values()]


def _best_over_rails(tried: list[tuple[Structure, rs.RailProblem | None, Sized]]) -> Sized:
    """One structure's outcome over its rail counts: the cheapest design, the least bound.

    The structure is optimal when every rail count was solved to optimality or proved
    infeasible; its bound is the least over the rail counts (an infeasible one bounds nothing).
    With no design, an infeasible structure says why for its first rail count (R = n).
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
    reason = first.reason if rp is None else _infeasible_reason(st, rp)
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


def _infeasible_reason(st: Structure, rp: rs.RailProblem) -> str:
    """Why a rail structure has no design: the constraints whose relaxation alone would give one."""
    if st.family == "rail_only":
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
    options = cs.SolveOptions(time_limit_s=DIAGNOSIS_TIME_S)
    freeing = [
        RELAXED_WORDS.get(f, f)
        for f in cs.RELAXABLE
        if cs.solve(rs.build(rp, frozenset({f})), options).status.has_solution
    ]
    if freeing:
        return f"{head}; relaxing {' or '.join(freeing)} alone would allow one"
    return head


def rail_design(
    inst: Instance,
    st: Structure,
    rp: rs.RailProblem,
    sol: cs.SizingSolution,
    catalog: Catalog,
) -> Design:
    """The priced design of a rail solution: class 0 on the rail geometry, rails multiplied."""
    from planner.families.rail_only import RailOnlyWiring
    from planner.families.rail_optimized import RailOptimizedWiring

    su = rs.su_of(rp, sol)
    cl = inst.cluster
    rail_only = st.family == "rail_only"
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
