"""Designs from solutions: the Clos adapter's output side, and what every family's design shares.

``design_of`` turns a structure's Clos-model solution into a Design; ``family_design`` and
``one_tier_requirements`` are the construction every family's own model uses (the fields a
design takes from the instance, filled in once), ``switch_tier`` and ``link_groups`` its parts.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from models import cabling as cb
from models import clos_sizing as cs
from models.status import Status
from planner.design import (
    Design,
    EndModule,
    LinkClass,
    LinkGroup,
    Requirements,
    ScaleUpDomain,
    TierDesign,
    length_histogram,
)
from planner.layout import FloatArray, IntArray, LengthDistribution, hall_of
from planner.schema.catalog import Catalog, Medium, Switch
from planner.schema.instance import Instance
from planner.sizing.problems import (
    Structure,
    class_lengths,
    clos_hooks,
    nic_of,
    requirements_of,
)


def design_of(
    inst: Instance,
    structure: Structure,
    sol: cs.SizingSolution,
    catalog: Catalog,
    lengths: dict[int, LengthDistribution] | None = None,
) -> Design:
    """Turn a structure's solution into a Design carrying every unit figure it was priced with.

    ``lengths`` replaces the hall's length distribution of some link classes (a wiring whose
    geometry is not the contiguous one, e.g. rail leaves), by class.
    """
    assert structure.problem is not None
    assert sol.capex_usd is not None
    assert sol.power_w is not None
    p = structure.problem
    speed = inst.cluster.nic_gbps // structure.planes
    family = structure.family
    roles = family.roles(p.tiers)
    tiers = []
    for ts in sol.tier_solutions:
        special = clos_hooks(family).tier_design(catalog, ts, speed)
        if special is not None:
            tiers.append(special)
            continue
        tiers.append(
            switch_tier(
                catalog.switch_named(ts.switch_model),
                level=ts.level,
                role=roles[ts.level - 1],
                speed_gbps=speed,
                switches=ts.switches,
                downlinks=ts.downlinks,
                uplinks=ts.uplinks,
                fanout=ts.fanout,
                parallel_links=ts.parallel_links,
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
                    (lengths or {}).get(c) or class_lengths(hall, c, plan.placement, upper_options),
                    catalog,
                    (lower_k, upper_k),
                ),
                placement=plan.placement or "",
            )
        )
    return family_design(
        inst,
        catalog,
        family=family.name,
        status=sol.status,
        planes=p.planes,
        link_speed_gbps=speed,
        tiers=tuple(tiers),
        link_classes=tuple(classes),
        requirements=_requirements(p.requirements),
        capex_usd=sol.capex_usd,
        power_w=sol.power_w,
        objective_usd=sol.objective_usd or 0.0,
        bound_usd=sol.bound_usd if sol.bound_usd is not None else sol.objective_usd or 0.0,
        solve_s=sol.wall_s,
        gpus=p.endpoints,
        pods=sol.pods,
        leaves_per_pod=sol.leaves_per_pod,
        leaf_placement=sol.placement,
    )


def family_design(
    inst: Instance,
    catalog: Catalog,
    *,
    family: str,
    status: Status,
    planes: int,
    link_speed_gbps: int,
    tiers: tuple[TierDesign, ...],
    link_classes: tuple[LinkClass, ...],
    requirements: Requirements,
    capex_usd: float,
    power_w: float,
    objective_usd: float,
    bound_usd: float | None,
    solve_s: float,
    gpus: int | None = None,
    with_nic: bool = True,
    **rest: Any,
) -> Design:
    """A priced design, with what every family's design takes from the instance filled in.

    The cluster (GPUs unless ``gpus`` says otherwise, GPUs per node, the scale-up domain), the
    objective's weights, the catalog and the NIC (``nic_of``: name, cage, lanes) come from the
    instance; the switches' protocol from the first tier that names one. ``bound_usd`` None: the
    objective (proven optimal). ``with_nic`` False: the design names no NIC (chips whose routers
    are the fabric). ``rest`` are the family's own fields (``wiring``, ``notes``,
    ``pods``, ...).
    """
    nic = nic_of(inst, catalog) if with_nic else None
    obj = inst.objective
    fields: dict[str, Any] = {
        "protocol": next((t.protocol for t in tiers if t.protocol), ""),
        **rest,
    }
    return Design(
        instance=inst.name,
        family=family,
        status=status,
        gpus=inst.cluster.gpus if gpus is None else gpus,
        planes=planes,
        link_speed_gbps=link_speed_gbps,
        tiers=tiers,
        link_classes=link_classes,
        requirements=requirements,
        energy_usd_per_w=obj.energy_usd_per_w,
        capex_weight=obj.capex_weight,
        energy_weight=obj.energy_weight,
        capex_usd=capex_usd,
        power_w=power_w,
        objective_usd=objective_usd,
        bound_usd=objective_usd if bound_usd is None else bound_usd,
        gpus_per_node=inst.cluster.gpus_per_node,
        scale_up=ScaleUpDomain.of(inst.cluster.scale_up, catalog),
        catalog=inst.search.catalog,
        solve_s=solve_s,
        nic="" if nic is None else nic.name,
        nic_form_factor="" if nic is None else nic.cage.form_factor,
        nic_lane_gbps=None if nic is None else nic.cage.lane_gbps,
        nics_per_cage=1 if nic is None else nic.nics_per_cage,
        nic_cages=1 if nic is None else nic.cages,
        **fields,
    )


def one_tier_requirements(
    inst: Instance,
    max_ratio: float | Fraction,
    min_fraction_after_failure: float | Fraction | None,
    max_power_w: float | None,
    max_capex_usd: float | None,
) -> Requirements:
    """The requirements a design of one switch group states (its failure protects that group)."""
    c = inst.constraints
    phi = min_fraction_after_failure
    return Requirements(
        max_oversubscription=(float(max_ratio),),
        max_switch_hops=c.max_switch_hops,
        max_latency_ns=c.max_latency_ns,
        min_fraction_after_failure=None if phi is None else float(phi),
        protected_tiers=(1,) if phi is not None else (),
        max_power_w=max_power_w,
        max_capex_usd=max_capex_usd,
    )


def switch_tier(
    sw: Switch,
    *,
    level: int,
    role: str,
    speed_gbps: int,
    switches: int,
    downlinks: int,
    uplinks: int,
    fanout: int,
    parallel_links: int,
    radix: int | None = None,
) -> TierDesign:
    """A group of catalog switches ``sw`` at ``speed_gbps``, its unit figures copied in.

    ``radix`` defaults to the switch's ports at that speed.
    """
    return TierDesign(
        level=level,
        role=role,
        switch_model=sw.name,
        port_speed_gbps=speed_gbps,
        radix=(sw.radix_at(speed_gbps) or 0) if radix is None else radix,
        switches=switches,
        downlinks=downlinks,
        uplinks=uplinks,
        fanout=fanout,
        parallel_links=parallel_links,
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
        ports_per_cage=sw.ports_per_cage(speed_gbps),
    )


def _requirements(r: cs.Requirements) -> Requirements:
    """The model's requirements as the design's plain numbers."""
    return Requirements(
        max_oversubscription=tuple(float(x) for x in r.max_oversubscription),
        max_switch_hops=r.max_switch_hops,
        max_latency_ns=r.max_latency_ns,
        min_fraction_after_failure=None
        if r.min_fraction_after_failure is None
        else float(r.min_fraction_after_failure),
        protected_tiers=tuple(sorted(r.protected_tiers)),
        max_power_w=r.max_power_w,
        max_capex_usd=r.max_capex_usd,
    )


def design_requirements(inst: Instance, tiers: int) -> Requirements:
    """The instance's constraints for a design of ``tiers`` switch groups, as plain numbers."""
    return _requirements(requirements_of(inst, tiers))


def end_module(m: Medium, name: str) -> EndModule | None:
    """Catalog medium ``m``'s module ``name`` as an end module, its figures copied in.

    None for the medium's own module (or no module: ''), whose figures the group carries.
    """
    mod = m.module_named(name)
    if mod is None:
        return None
    return EndModule(
        name=mod.name,
        cost_usd=mod.cost_usd_per_end,
        power_w=mod.power_w_per_end,
        afr=m.afr if mod.afr is None else mod.afr,
        host_lane_gbps=tuple(mod.host_lane_gbps),
        form_factors=tuple(mod.form_factors),
        line_kind=m.kind,
        line_lanes=m.lanes,
        line_lane_gbps=m.lane_gbps,
        connector=m.connector,
        source=mod.source.get("cost_usd_per_end", ""),
        nic_only=mod.nic_only,
    )


def medium_group(
    m: Medium,
    links: int,
    min_length_m: float,
    max_length_m: float,
    pluggable_ends: int,
    ports_per_module: tuple[int, int],
    histogram: tuple[tuple[float, int], ...] | None = None,
    modules: tuple[str, str] = ("", ""),
) -> LinkGroup:
    """A group of ``links`` links on catalog medium ``m``, its unit figures copied in.

    ``histogram`` is the links per length (``LinkGroup.length_histogram``); None: known only
    when every link has the one length ``min_length_m == max_length_m``, else left unknown.
    ``modules`` names the module at the lower and the upper end: one of the medium's other
    modules, or its own ('' or the medium's name, as where no module sits).
    """
    if histogram is None:
        histogram = ((max_length_m, links),) if min_length_m == max_length_m and links else ()
    return LinkGroup(
        medium=m.name,
        kind=m.kind,
        links=links,
        min_length_m=min_length_m,
        max_length_m=max_length_m,
        pluggable_ends=pluggable_ends,
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
        cable_source=m.source.get("cable_cost_usd", ""),
        lower_ports_per_module=ports_per_module[0],
        upper_ports_per_module=ports_per_module[1],
        host_lane_gbps=m.host_lanes,
        form_factors=tuple(m.form_factors),
        ns_per_m=cb.COPPER_NS_PER_M if m.copper else cb.FIBRE_NS_PER_M,
        length_histogram=histogram,
        lower_module=end_module(m, modules[0]),
        upper_module=end_module(m, modules[1]),
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
    # Consecutive bands on the same medium and modules make one group; one that comes back
    # after another (a cap can make that optimal) starts a new group, so groups never overlap.
    # A run: (medium, ends, modules), links, longest, lengths and links per length.
    Key = tuple[str, int, tuple[str, str]]
    runs: list[tuple[Key, int, float, list[FloatArray], list[IntArray]]] = []
    low = 0.0
    for j, use in enumerate(plan.bands):
        edge = tails.thresholds_m[j]
        lengths, band_links = dist.links_within(low, edge, counts[j])
        low = edge
        if use is None or counts[j] == 0 or lengths.size == 0:
            continue
        key: Key = (use.medium.name, use.ends, use.module_names)
        if runs and runs[-1][0] == key:
            _, count, _, xs, ns = runs[-1]
            runs[-1] = (
                key,
                count + counts[j],
                float(lengths[-1]),
                xs + [lengths],
                ns + [band_links],
            )
        else:
            runs.append((key, counts[j], float(lengths[-1]), [lengths], [band_links]))
    groups = []
    for (name, ends, modules), count, longest, xs, ns in runs:
        m = catalog.medium_named(name)
        histogram = length_histogram(np.concatenate(xs).tolist(), np.concatenate(ns).tolist())
        # The shortest length that got a link (every band's longest gets one, so never empty):
        # the range only narrows when a band holds a single link, which sits at its longest.
        groups.append(
            medium_group(
                m,
                int(count),
                histogram[0][0],
                longest,
                ends,
                (lower_k, upper_k),
                histogram,
                modules,
            )
        )
    return tuple(groups)
