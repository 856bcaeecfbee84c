"""The unit figures of a design against the catalog it names."""

from __future__ import annotations

from planner.design import Design, EndModule, TierDesign
from planner.schema.catalog import Catalog, Medium
from planner.validation.core import Violation


def check_catalog(d: Design, catalog: Catalog) -> list[Violation]:
    """Unit figures and radices are the catalog's."""
    out: list[Violation] = []
    for t in d.tiers:
        if t.ocs:
            out.extend(_check_ocs_catalog(t, catalog))
            continue
        try:
            sw = catalog.switch_named(t.switch_model)
        except KeyError:
            out.append(
                Violation("catalog", f"{t.role}: switch {t.switch_model!r} is not in the catalog")
            )
            continue
        if sw.radix_at(t.port_speed_gbps) != t.radix:
            out.append(
                Violation(
                    "catalog",
                    f"{t.role}: {sw.name} has radix {sw.radix_at(t.port_speed_gbps)} at {t.port_speed_gbps}G, not {t.radix}",
                )
            )
        engine = sw.cpo_optics
        engine_ours = (t.cpo_lane_gbps, t.cpo_connector, t.cpo_reach_m)
        engine_theirs = (
            (None, "", None)
            if engine is None
            else (engine.lane_gbps, engine.connector, engine.reach_m)
        )
        if (sw.cost_usd, sw.power_w, sw.latency_ns, sw.cpo, engine_theirs) != (
            t.unit_cost_usd,
            t.unit_power_w,
            t.latency_ns,
            t.cpo,
            engine_ours,
        ):
            out.append(Violation("catalog", f"{t.role}: {sw.name} figures differ from the catalog"))
        cage_theirs = (
            ("", None, 0)
            if sw.cage is None
            else (sw.cage.form_factor, sw.cage.lane_gbps, sw.cage.ports_at(t.port_speed_gbps) or 0)
        )
        if (sw.protocol, *cage_theirs) != (
            t.protocol,
            t.cage_form_factor,
            t.cage_lane_gbps,
            t.ports_per_cage,
        ):
            out.append(
                Violation(
                    "catalog",
                    f"{t.role}: {sw.name} protocol or cages differ from the catalog "
                    f"({sw.protocol}, {cage_theirs[0] or 'co-packaged'} of {cage_theirs[1]}G lanes)",
                )
            )
    if d.nic:
        out.extend(_check_nic_catalog(d, catalog))
    for g in (g for c in d.link_classes for g in c.groups):
        try:
            m = catalog.medium_named(g.medium)
        except KeyError:
            out.append(Violation("catalog", f"medium {g.medium!r} is not in the catalog"))
            continue
        figures = (m.cost_usd_per_end, m.power_w_per_end, m.cable_cost_usd, m.reach_m, m.afr)
        ours = (g.end_cost_usd, g.end_power_w, g.cable_cost_usd, g.reach_m, g.afr)
        kinds = (
            m.latency_ns,
            m.copper,
            m.lane_gbps,
            m.connector,
            m.host_lanes,
            tuple(m.form_factors),
        )
        figures_ok = figures == ours and kinds == (
            g.latency_ns,
            g.copper,
            g.lane_gbps,
            g.connector,
            g.host_lane_gbps,
            g.form_factors,
        )
        if not figures_ok or m.speed_gbps != d.link_speed_gbps:
            out.append(Violation("catalog", f"{g.medium}: figures differ from the catalog"))
        for side, named in (("lower", g.lower_module), ("upper", g.upper_module)):
            if named is not None:
                out.extend(_check_module_catalog(m, named, side))
    return out


def _check_module_catalog(m: Medium, e: EndModule, side: str) -> list[Violation]:
    """A module a design names is one of its medium's in the catalog, with the catalog's figures."""
    mod = next((x for x in m.modules if x.name == e.name), None)
    if mod is None:
        known = ", ".join(x.name for x in m.modules) or "none"
        return [
            Violation(
                "catalog",
                f"{m.name}: the {side} module {e.name!r} is not one of its modules in the catalog "
                f"(its modules: {known})",
            )
        ]
    theirs = (
        mod.nic_only,
        mod.cost_usd_per_end,
        mod.power_w_per_end,
        m.afr if mod.afr is None else mod.afr,
        tuple(mod.host_lane_gbps),
        tuple(mod.form_factors),
        (m.kind, m.speed_gbps // m.lane_gbps if m.lane_gbps else None, m.lane_gbps, m.connector),
    )
    ours = (
        e.nic_only,
        e.cost_usd,
        e.power_w,
        e.afr,
        e.host_lane_gbps,
        e.form_factors,
        (e.line_kind, e.line_lanes, e.line_lane_gbps, e.connector),
    )
    if theirs != ours:
        return [Violation("catalog", f"{m.name}: module {e.name} figures differ from the catalog")]
    return []


def _check_nic_catalog(d: Design, catalog: Catalog) -> list[Violation]:
    try:
        nic = catalog.nic_named(d.nic)
    except KeyError:
        return [Violation("catalog", f"NIC {d.nic!r} is not in the catalog")]
    out = []
    if (nic.cage.form_factor, nic.cage.lane_gbps, nic.nics_per_cage, nic.cages) != (
        d.nic_form_factor,
        d.nic_lane_gbps,
        d.nics_per_cage,
        d.nic_cages,
    ):
        out.append(Violation("catalog", f"NIC {nic.name}: its cage differs from the catalog"))
    if d.protocol and d.protocol not in nic.protocols:
        out.append(
            Violation(
                "protocol",
                f"NIC {nic.name} speaks {', '.join(nic.protocols)}, the fabric {d.protocol}",
            )
        )
    return out


def _check_ocs_catalog(t: TierDesign, catalog: Catalog) -> list[Violation]:
    try:
        o = catalog.ocs_named(t.switch_model)
    except KeyError:
        return [Violation("catalog", f"{t.role}: OCS {t.switch_model!r} is not in the catalog")]
    ours = (t.radix, t.unit_cost_usd, t.unit_power_w, t.insertion_loss_db)
    if (o.ports, o.cost_usd, o.power_w, o.insertion_loss_db) != ours:
        return [Violation("catalog", f"{t.role}: {o.name} figures differ from the catalog")]
    return []
