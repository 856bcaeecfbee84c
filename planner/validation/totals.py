"""The validator's recomputation of the totals and the bill of materials."""

from __future__ import annotations

import polars as pl

from planner.design import Design
from planner.validation.core import TOTAL_ATOL, TOTAL_RTOL, Violation, close_enough
from planner.validation.modules import link_end, link_ends, module_sits


def recompute_totals(d: Design) -> tuple[float, float]:
    """Capex and power over all planes, from counts and unit figures only."""
    capex = power = 0.0
    for t in d.tiers:
        capex += d.planes * t.switches * t.unit_cost_usd
        power += d.planes * t.switches * t.unit_power_w
    for c in d.link_classes:
        for g in c.groups:
            links = d.planes * g.links
            ends = link_ends(g)
            capex += links * (sum(e.cost_usd for e in ends) + g.cable_cost_usd)
            power += links * sum(e.power_w for e in ends)
    return capex, power


def recompute_module_counts(d: Design) -> dict[str, int]:
    """Optical modules by catalog name over all planes: planes x ceil(links / k) per end.

    The two ends of a link may carry different modules; each counts under its own name.
    """
    counts: dict[str, int] = {}
    for c in d.link_classes:
        for g in c.groups:
            if g.copper:
                continue
            for upper, k in ((False, g.lower_ports_per_module), (True, g.upper_ports_per_module)):
                e = link_end(g, upper)
                if e is not None:
                    counts[e.name] = counts.get(e.name, 0) + d.planes * -(-g.links // k)
    return counts


def recompute_modules(d: Design) -> tuple[int, int]:
    """Transceivers and copper cable assemblies over all planes, from the links and their ends.

    transceivers = Σ_{optical groups} Σ_{ends where a module sits} planes x ceil(links / k)
    assemblies   = Σ_{copper groups} planes x ceil(links / max(k_lower, k_upper))

    A module sits at a NIC or a switch cage, never at a co-packaged port or an OCS mirror
    (``check_modules``); k is the end's links per module, at least 1 there.
    """
    transceivers = assemblies = 0
    for c in d.link_classes:
        lower, upper = d.tier_with_role(c.lower_role), d.tier_with_role(c.upper_role)
        for g in c.groups:
            ends = (
                (lower, g.lower_ports_per_module),
                (upper, g.upper_ports_per_module),
            )
            if g.copper:
                per = max(g.lower_ports_per_module, g.upper_ports_per_module, 1)
                assemblies += d.planes * -(-g.links // per)
                continue
            transceivers += sum(
                d.planes * -(-g.links // max(k, 1)) for t, k in ends if module_sits(t)
            )
    return transceivers, assemblies


def check_bill_of_materials(d: Design) -> list[Violation]:
    """The bill of materials lists the modules the links need and adds up to capex and power.

    Its transceivers and cable assemblies are those ``recompute_modules`` counts, and its cost
    and power totals those ``recompute_totals`` gives: a BOM that drops or adds modules while
    capex keeps its own count describes two different fabrics.
    """
    out: list[Violation] = []
    bom = d.bom()
    transceivers, assemblies = recompute_modules(d)
    for component, expected in (("transceiver", transceivers), ("cable assembly", assemblies)):
        listed = int(bom.filter(bom["component"] == component)["count"].sum())
        if listed != expected:
            out.append(
                Violation(
                    "totals",
                    f"the bill of materials lists {listed:,} {component} units, the links need "
                    f"{expected:,}",
                )
            )
    modules = bom.filter(bom["component"] == "transceiver")
    listed_by_name = dict(modules.group_by("model").agg(pl.col("count").sum()).iter_rows())
    for name, expected in sorted(recompute_module_counts(d).items()):
        if listed_by_name.get(name, 0) != expected:
            out.append(
                Violation(
                    "totals",
                    f"the bill of materials lists {listed_by_name.get(name, 0):,} {name} "
                    f"modules, the links' ends need {expected:,}",
                )
            )
    capex, power = recompute_totals(d)
    bom_capex, bom_power = float(bom["total_cost_usd"].sum()), float(bom["total_power_w"].sum())
    if not close_enough(bom_capex, capex):
        out.append(
            Violation(
                "totals",
                f"the bill of materials costs {bom_capex:,.2f} USD, the parts {capex:,.2f}",
            )
        )
    if not close_enough(bom_power, power):
        out.append(
            Violation(
                "totals",
                f"the bill of materials draws {bom_power:,.3f} W, the parts {power:,.3f}",
            )
        )
    return out


def check_totals(d: Design) -> list[Violation]:
    """Stored capex, power and objective equal what the counts and unit figures give; caps hold."""
    out: list[Violation] = []
    capex, power = recompute_totals(d)
    if not close_enough(capex, d.capex_usd):
        out.append(
            Violation("totals", f"capex {d.capex_usd:,.2f} USD, the parts add up to {capex:,.2f}")
        )
    if not close_enough(power, d.power_w):
        out.append(
            Violation("totals", f"power {d.power_w:,.3f} W, the parts add up to {power:,.3f}")
        )
    objective = d.capex_weight * capex + d.energy_weight * d.energy_usd_per_w * power
    if not close_enough(objective, d.objective_usd):
        out.append(
            Violation(
                "totals", f"objective {d.objective_usd:,.2f} USD, the parts give {objective:,.2f}"
            )
        )
    if d.bound_usd > d.objective_usd * (1 + TOTAL_RTOL) + TOTAL_ATOL:
        out.append(
            Violation(
                "totals",
                f"lower bound {d.bound_usd:,.2f} above the objective {d.objective_usd:,.2f}",
            )
        )
    r = d.requirements
    if r.max_power_w is not None and power > r.max_power_w * (1 + TOTAL_RTOL):
        out.append(
            Violation(
                "budget", f"power {power / 1000:,.1f} kW > cap {r.max_power_w / 1000:,.1f} kW"
            )
        )
    if r.max_capex_usd is not None and capex > r.max_capex_usd * (1 + TOTAL_RTOL):
        out.append(Violation("budget", f"capex {capex:,.0f} USD > cap {r.max_capex_usd:,.0f} USD"))
    return out
