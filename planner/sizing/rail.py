"""The rail families' adapter: instance to rail structures, their solves, and their designs.

Both rail families size with ``models.rail_sizing`` (the Clos model plus the rail rules) through
``Family.size``: the SU size U is a decision of the model, and the GPU-to-leaf lengths it prices
depend on U, so every candidate U brings its own class 0 plans (``rail_gpu_leaf_lengths``).

Rail geometry (class 0). Nodes stand in racks as ``planner.layout`` places them: node k in rack
``k // nodes_per_rack``, racks filling rows and rows filling columns. SU ``su`` holds nodes
``su U .. su U + U - 1`` (the last may hold fewer). Its n rail leaves stand together:

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
    layout: Layout, gpus: int, gpus_per_node: int, su_nodes: int, placement: str
) -> LengthDistribution:
    """Class 0 lengths of the rail wiring with SUs of ``su_nodes`` nodes (module docstring).

    Weighted by GPUs (one link per GPU and plane); whole centimetres, rounded up.
    """
    nodes = gpus // gpus_per_node
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


def su_candidates(nodes: int, leaf_options: tuple[cs.SwitchOption, ...]) -> list[int]:
    """Every SU size a leaf can serve: 1 .. min(nodes, largest leaf radix)."""
    radix = max((o.radix for o in leaf_options), default=0)
    return list(range(1, min(nodes, radix) + 1))


def _su_cabling(
    inst: Instance,
    leaf_options: tuple[cs.SwitchOption, ...],
    media: list[cb.MediumOption],
    criteria: cb.Criteria,
    nic: cb.PortKind,
) -> rs.SuCabling:
    """Class 0 plans of every candidate SU size, on the rail geometry (``rail_gpu_leaf_lengths``)."""
    cl, lay = inst.cluster, inst.layout
    nodes = cl.gpus // cl.gpus_per_node
    thresholds = cs.reach_thresholds(media, None, leaf_options)
    per_su = {}
    for u in su_candidates(nodes, leaf_options):
        tails: dict[str | None, cb.LengthTails] = {}
        for placement in lay.leaf_placement:
            dist = rail_gpu_leaf_lengths(lay, cl.gpus, cl.gpus_per_node, u, placement)
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
    traffic forwarded from the other rails (``scale_up.gbps_per_gpu >= nic_gbps``).
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
    """Every rail structure (planes x tiers) of the family, with its model data or why none."""
    cl, lay = inst.cluster, inst.layout
    n = cl.gpus_per_node
    nodes = cl.gpus // n
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
            cab0 = _su_cabling(inst, per_tier[0], media, criteria, nic_port(nic))
            if not cab0.plans:
                why = "no allowed medium cables the GPU links to their rail leaves"
                out.append((replace(st, problem=None, impossible=why), None))
                continue
            clos = replace(
                st.problem,
                cabling=(cab0, *st.problem.cabling[1:]),
                endpoints=nodes if rail_only else cl.gpus,
            )
            rp = rs.RailProblem(
                clos,
                rails=1 if rail_only else n,
                nodes=nodes,
                nodes_per_rack=lay.nodes_per_rack,
                copies=n if rail_only else 1,
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
    """Size every rail structure of the family, best design of each (``Family.size``)."""
    if rail_only:
        why = rail_only_refusal(inst)
        if why:
            tiers = inst.search.pin.tiers or 2
            return [Sized(Status.INFEASIBLE, inst.search.pin.planes or 1, tiers, reason=why)]
    pairs = rail_problems(inst, catalog, family, rail_only)
    pin = inst.search.pin
    out: list[Sized] = []
    jobs: list[tuple[Structure, rs.RailProblem]] = []
    for st, rp in pairs:
        if rp is None:
            out.append(Sized(Status.INFEASIBLE, st.planes, st.tiers, reason=st.impossible or ""))
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
        out.append(
            Sized(
                sol.status,
                st.planes,
                st.tiers,
                objective_usd=rsol.total(sol.objective_usd),
                bound_usd=rsol.total(sol.bound_usd),
                capex_usd=rsol.total(sol.capex_usd),
                power_w=rsol.total(sol.power_w),
                wall_s=sol.wall_s,
                design=design,
                reason="" if sol.status is not Status.INFEASIBLE else _infeasible_reason(st, rp),
            )
        )
    return out


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
    what = "rail-only" if rp.copies > 1 else "rail-optimized"
    head = (
        f"no {what} fabric of {st.planes} plane(s) x {st.tiers} tier(s) meets the constraints "
        f"with whole scalable units of {rp.rails} rail lea{'ves' if rp.rails > 1 else 'f'} each"
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
    lengths = {0: rail_gpu_leaf_lengths(inst.layout, cl.gpus, cl.gpus_per_node, su, sol.placement)}
    d = design_of(inst, st, sol, catalog, lengths=lengths)
    if rp.copies == 1:
        return replace(d, wiring=RailOptimizedWiring(su_nodes=su, rails=rp.rails))
    return times(
        replace(d, wiring=RailOnlyWiring(su_nodes=su, rails=rp.copies)), rp.copies, cl.gpus
    )


def times(d: Design, copies: int, gpus: int) -> Design:
    """A design of ``copies`` identical fabrics side by side (the rails of a rail-only fabric)."""

    def group(g: LinkGroup) -> LinkGroup:
        return replace(g, links=g.links * copies)

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
