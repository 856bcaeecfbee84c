"""An independent validator: recompute a design's ports, wiring, ratios, paths and totals.

It reads the Design alone (and, when given, the catalog to check the unit figures) and shares no
code with the sizing model or with the Design's own table methods, so a bug in either shows up
here as a violation. ``plan`` results, the ``validate`` CLI command and every solve test run it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from models.cabling import OCS_CONNECTOR, OCS_CONNECTORS_LOSS_DB
from planner.design import Design, EndModule, LinkClass, LinkGroup, TierDesign
from planner.schema.catalog import Catalog, Medium

if TYPE_CHECKING:
    from planner.family_roles import Checks

#: Relative tolerance on recomputed money and power totals (CP-SAT rounds each unit to a cent
#: and a milliwatt, so the totals may differ by that much per component).
TOTAL_RTOL = 1e-6
#: Absolute tolerance floor on totals, in dollars or watts.
TOTAL_ATOL = 1.0
#: Propagation delay, ns per metre, by what the signal travels in (public figures: ~4.9 ns/m in
#: silica fibre, 4.5 ns/m in twinax copper), kept apart from the model's own constants.
PROPAGATION_NS_PER_M = {"fibre": 4.9, "copper": 4.5}


@dataclass(frozen=True)
class Violation:
    """One broken rule: which check, and what is wrong in words."""

    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOTAL_RTOL, abs_tol=TOTAL_ATOL)


def check_ports(d: Design) -> list[Violation]:
    """Every switch uses at most its radix: downlinks + uplinks <= radix."""
    out: list[Violation] = []
    for t in d.tiers:
        if t.downlinks + t.uplinks > t.radix:
            out.append(
                Violation(
                    "ports", f"{t.role}: {t.downlinks} down + {t.uplinks} up > radix {t.radix}"
                )
            )
        if t.switches < 1 or t.downlinks < 1:
            out.append(Violation("ports", f"{t.role}: needs at least one switch and one downlink"))
    return out


def check_shape(d: Design) -> list[Violation]:
    """The tiers and link classes are an instance of the design's wiring kind."""
    return [Violation("wiring", e) for e in d.wiring.shape_errors(d)]


def check_wiring_kind(d: Design, kind: str) -> list[Violation]:
    """The design's wiring is of the kind its family wires (a family's first structural check).

    Without it a design could name one family and carry another's wiring (a rail_only design
    wired rail_optimized), and every figure its wiring owns would be the other family's.
    """
    if d.wiring.kind == kind:
        return []
    return [
        Violation(
            "wiring",
            f"wiring.kind: {d.wiring.kind!r}, but the {d.family} family is wired {kind!r} "
            "(family and wiring must agree)",
        )
    ]


def _module_sits(t: TierDesign | None) -> bool:
    """Whether a module (or a cable plug) sits at this end: a NIC's or a switch's cage.

    A co-packaged (CPO) port takes the fibre itself and an OCS port is a mirror: no module.
    """
    return t is None or not (t.cpo or t.ocs)


@dataclass(frozen=True)
class _End:
    """What sits at one end of a group's links, read from the group's own fields."""

    name: str
    cost_usd: float
    power_w: float
    afr: float
    host_lane_gbps: tuple[int, ...]
    form_factors: tuple[str, ...]
    nic_only: bool = False


def _end(g: LinkGroup, upper: bool) -> _End | None:
    """The module at the lower or upper ends (None where the end carries no module).

    An end carries a module where it serves one or more links per module; that module is the
    end's ``*_module`` when the design names one, or else the medium's own (the group's figures).
    """
    k = g.upper_ports_per_module if upper else g.lower_ports_per_module
    if k < 1:
        return None
    m = g.upper_module if upper else g.lower_module
    if m is None:
        return _End(
            g.medium, g.end_cost_usd, g.end_power_w, g.afr, g.host_lane_gbps, g.form_factors
        )
    return _End(m.name, m.cost_usd, m.power_w, m.afr, m.host_lane_gbps, m.form_factors, m.nic_only)


def _link_ends(g: LinkGroup) -> list[_End]:
    """The modules one link of the group pays for, lower end first.

    Its ``pluggable_ends`` say how many; the ends that carry a module say which. Where the two
    disagree (``check_modules`` and ``check_media`` report it), the link pays for its
    ``pluggable_ends`` of the medium's own module, as the totals were priced.
    """
    ends = [e for e in (_end(g, False), _end(g, True)) if e is not None]
    if len(ends) == g.pluggable_ends:
        return ends
    own = _End(g.medium, g.end_cost_usd, g.end_power_w, g.afr, g.host_lane_gbps, g.form_factors)
    return [own] * g.pluggable_ends


def check_modules(d: Design) -> list[Violation]:
    """Every end of a link that sits in a cage has modules carrying its links; no other end has.

    ∀ group, end:  ports_per_module >= 1  if a module sits there (NIC or switch cage),
                   ports_per_module == 0  at a co-packaged port or an OCS mirror.

    Modules at an end are ceil(links / ports_per_module): 0 where a module must sit would leave
    the links out of the bill of materials while capex counts them (links x modules per link),
    and a module at a mirror would be listed and never priced.
    """
    out: list[Violation] = []
    for c in d.link_classes:
        upper = d.tier_with_role(c.upper_role)
        if upper is None:
            continue  # no switch group of that role: check_shape says so
        lower = d.tier_with_role(c.lower_role)
        for j, g in enumerate(c.groups):
            where = f"link_classes.{c.index}.groups.{j}"
            for side, role, tier, k in (
                ("lower", c.lower_role, lower, g.lower_ports_per_module),
                ("upper", c.upper_role, upper, g.upper_ports_per_module),
            ):
                field = f"{where}.{side}_ports_per_module"
                if _module_sits(tier) and k < 1:
                    out.append(
                        Violation(
                            "modules",
                            f"{field}: {k}, but the {g.links} {g.medium} links end in modules at "
                            f"the {role} end: expected 1 or more links per module",
                        )
                    )
                elif tier is not None and not _module_sits(tier) and k != 0:
                    what = "an OCS mirror" if tier.ocs else "a co-packaged port"
                    out.append(
                        Violation(
                            "modules",
                            f"{field}: {k}, but the {role} end of {g.medium} is {what} with no "
                            "module: expected 0",
                        )
                    )
                named = g.upper_module if side == "upper" else g.lower_module
                if named is not None and k < 1:
                    out.append(
                        Violation(
                            "modules",
                            f"{where}.{side}_module: {named.name}, but no module sits at the "
                            f"{role} end of {g.medium} ({side}_ports_per_module {k})",
                        )
                    )
    return out


def check_line_sides(d: Design) -> list[Violation]:
    """The two ends of every link drive the same line side: its medium's.

    ∀ group, end with a module other than the medium's own:
        (kind, lanes x lane rate, lane rate, connector) of the module's line = the group's,
    so both ends put the same PMD on the fibre (each with its own host lanes behind a gearbox).
    A copper or linear-drive (LPO) module has no gearbox: its host lanes are its line lanes.
    """
    out: list[Violation] = []
    for c in d.link_classes:
        for j, g in enumerate(c.groups):
            where = f"link_classes.{c.index}.groups.{j}"
            for side, m in (("lower", g.lower_module), ("upper", g.upper_module)):
                if m is None:
                    continue
                theirs = (m.line_kind, m.line_lane_gbps, m.connector)
                ours = (g.kind, g.lane_gbps, g.connector)
                lanes_ok = m.line_lane_gbps is None or (
                    m.line_lanes is not None and m.line_lanes * m.line_lane_gbps == c.speed_gbps
                )
                if theirs != ours or not lanes_ok:
                    out.append(
                        Violation(
                            "media",
                            f"{where}.{side}_module: {m.name} drives "
                            f"{_line_text(m.line_kind, m.line_lanes, m.line_lane_gbps, m.connector)}"
                            f", the {g.medium} links "
                            f"{_line_text(g.kind, _lanes(c.speed_gbps, g.lane_gbps), g.lane_gbps, g.connector)}"
                            ": both ends of a link must drive the same line side",
                        )
                    )
                if m.line_kind in LANE_MATCHED and m.host_lane_gbps != (m.line_lane_gbps,):
                    out.append(
                        Violation(
                            "media",
                            f"{where}.{side}_module: {m.name} is {m.line_kind}, which has no "
                            f"gearbox: its host lanes {list(m.host_lane_gbps)} must be its line "
                            f"lanes ({m.line_lane_gbps}G)",
                        )
                    )
    return out


#: Media kinds without a gearbox (copper and linear-drive optics): host lanes = line lanes.
LANE_MATCHED = frozenset({"dac", "aec", "lpo"})


def _lanes(speed_gbps: int, lane_gbps: int | None) -> int | None:
    return None if not lane_gbps else speed_gbps // lane_gbps


def _line_text(kind: str, lanes: int | None, lane_gbps: int | None, connector: str) -> str:
    """'dr 4 x 100G on mpo-12'."""
    rate = f"{lanes if lanes is not None else '?'} x {lane_gbps}G" if lane_gbps else "unknown lanes"
    return f"{kind} {rate} on {connector or 'no connector'}"


def check_spread(d: Design) -> list[Violation]:
    """Tiered wiring: uplinks split evenly (uplinks = fanout x parallel links); the top has none."""
    out: list[Violation] = []
    top = d.tiers[-1]
    if top.uplinks:
        out.append(Violation("ports", f"{top.role} is the top tier but has {top.uplinks} uplinks"))
    for t in d.tiers[:-1]:
        if t.uplinks != t.fanout * t.parallel_links:
            out.append(
                Violation(
                    "spread",
                    f"{t.role}: {t.uplinks} uplinks are not {t.fanout} switches x {t.parallel_links} links each",
                )
            )
    return out


def check_wiring(d: Design) -> list[Violation]:
    """The tiers fit together: every GPU has a leaf port, and the ports above receive every uplink."""
    out: list[Violation] = []
    tiers = d.tiers
    leaf = tiers[0]
    if leaf.switches * leaf.downlinks < d.gpus:
        out.append(
            Violation("wiring", f"{leaf.switches} leaves x {leaf.downlinks} ports < {d.gpus} GPUs")
        )
    if (leaf.switches - 1) * leaf.downlinks >= d.gpus:
        out.append(Violation("wiring", f"{leaf.switches} leaves: at least one would serve no GPU"))
    if d.num_tiers == 1 and leaf.switches != 1:
        out.append(Violation("wiring", "a one-tier fabric is a single switch per plane"))
    if d.num_tiers == 2:
        spine = tiers[1]
        if leaf.fanout != spine.switches:
            out.append(
                Violation(
                    "wiring",
                    f"each leaf reaches {leaf.fanout} spines, but there are {spine.switches}",
                )
            )
        if spine.downlinks != leaf.switches * leaf.parallel_links:
            out.append(
                Violation(
                    "wiring",
                    f"a spine receives {leaf.switches} x {leaf.parallel_links} links, not {spine.downlinks}",
                )
            )
    if d.num_tiers == 3:
        agg, core = tiers[1], tiers[2]
        pods, per_pod = d.pods, d.leaves_per_pod
        if agg.switches != pods * leaf.fanout:
            out.append(
                Violation(
                    "wiring", f"{pods} pods x {leaf.fanout} spines per pod != {agg.switches} spines"
                )
            )
        if leaf.switches > pods * per_pod or leaf.switches <= (pods - 1) * per_pod:
            out.append(
                Violation("wiring", f"{leaf.switches} leaves do not fill {pods} pods of {per_pod}")
            )
        if agg.downlinks != per_pod * leaf.parallel_links:
            out.append(
                Violation(
                    "wiring",
                    f"a spine serves {per_pod} leaves x {leaf.parallel_links} links, not {agg.downlinks}",
                )
            )
        if core.switches != leaf.fanout * agg.fanout:
            out.append(
                Violation(
                    "wiring",
                    f"{leaf.fanout} core groups x {agg.fanout} cores != {core.switches} cores",
                )
            )
        if core.downlinks != pods * agg.parallel_links:
            out.append(
                Violation(
                    "wiring",
                    f"a core serves {pods} pods x {agg.parallel_links} links, not {core.downlinks}",
                )
            )
    for c in d.link_classes:
        expected = (
            d.gpus if c.index == 0 else tiers[c.index - 1].switches * tiers[c.index - 1].uplinks
        )
        if c.links != expected:
            out.append(
                Violation(
                    "wiring",
                    f"{c.lower_role}-{c.upper_role}: {c.links} links, the tiers give {expected}",
                )
            )
    return out


def check_oversubscription(d: Design) -> list[Violation]:
    """Down:up ratio of every tier below the top within its limit."""
    out: list[Violation] = []
    limits = d.requirements.max_oversubscription
    for t in d.tiers[:-1]:
        limit = limits[t.level - 1] if t.level - 1 < len(limits) else limits[-1]
        if t.uplinks == 0 or t.downlinks > limit * t.uplinks * (1 + 1e-12):
            out.append(
                Violation(
                    "oversubscription", f"{t.role}: {t.downlinks}:{t.uplinks} exceeds {limit}:1"
                )
            )
    return out


def check_paths(d: Design) -> list[Violation]:
    """Hops and one-way latency of the longest path within their limits; media reach their length."""
    out: list[Violation] = []
    r = d.requirements
    # An optical circuit switch is mirrors, not a hop.
    hops = 2 * len(d.tiers) - 1 - sum(1 for t in d.tiers if t.ocs)
    if r.max_switch_hops is not None and hops > r.max_switch_hops:
        out.append(Violation("hops", f"{hops} switches on the longest path > {r.max_switch_hops}"))
    top = len(d.tiers)
    latency = float(sum(t.latency_ns * (1 if t.level == top else 2) for t in d.tiers))
    # Every class is crossed twice, each time on its worst link: electronics plus propagation.
    latency += sum(
        2 * max((_link_ns(g) for g in c.groups if g.links), default=0.0) for c in d.link_classes
    )
    if r.max_latency_ns is not None and latency > r.max_latency_ns + 1e-6:
        out.append(
            Violation("latency", f"{latency:,.1f} ns on the longest path > {r.max_latency_ns} ns")
        )
    if not math.isclose(latency, d.max_latency_ns, rel_tol=1e-9, abs_tol=1e-6):
        out.append(
            Violation(
                "latency",
                f"the design states {d.max_latency_ns:,.1f} ns on the longest path, the links give {latency:,.1f}",
            )
        )
    for c in d.link_classes:
        if c.speed_gbps != d.link_speed_gbps:
            out.append(
                Violation(
                    "speed", f"class {c.index} runs {c.speed_gbps}G on {d.link_speed_gbps}G links"
                )
            )
    return out


def _link_ns(g: LinkGroup) -> float:
    """One-way latency of the group's longest link."""
    medium = "copper" if g.copper else "fibre"
    return g.latency_ns + g.max_length_m * PROPAGATION_NS_PER_M[medium]


def _fits_cage(e: _End, form_factor: str, lane_gbps: int | None) -> bool:
    return form_factor in e.form_factors and lane_gbps in e.host_lane_gbps


def check_ports_fit(d: Design) -> list[Violation]:
    """Every module plugs into its cage and counts the ports it carries.

    It fits the cage's form factor and lane rate, and a module made for NIC cages only sits at
    a NIC.
    """
    out: list[Violation] = []
    for c in d.link_classes:
        name = f"{c.lower_role}-{c.upper_role}"
        upper = d.tier_with_role(c.upper_role)
        lower = d.tier_with_role(c.lower_role)
        if upper is None:
            continue  # no switch group of that role: check_shape says so
        # (owner, form factor, lane rate, links per module, upper end, a NIC's cage)
        ends: list[tuple[str, str, int | None, int, bool, bool]] = []
        if lower is None:
            if d.nic_form_factor:
                k = d.nics_per_cage * d.planes
                ends.append((f"NIC {d.nic}", d.nic_form_factor, d.nic_lane_gbps, k, False, True))
        elif lower.cage_form_factor:
            ends.append(
                (
                    lower.switch_model,
                    lower.cage_form_factor,
                    lower.cage_lane_gbps,
                    lower.ports_per_cage,
                    False,
                    False,
                )
            )
        if upper.cage_form_factor:
            ends.append(
                (
                    upper.switch_model,
                    upper.cage_form_factor,
                    upper.cage_lane_gbps,
                    upper.ports_per_cage,
                    True,
                    False,
                )
            )
        for g in c.groups:
            for owner, form, lanes, k, side, nic in ends:
                e = _end(g, side)
                if e is None:
                    e = _End(g.medium, 0.0, 0.0, 0.0, g.host_lane_gbps, g.form_factors)
                if not _fits_cage(e, form, lanes):
                    out.append(
                        Violation(
                            "ports",
                            f"{name}: {e.name} (made in {', '.join(e.form_factors) or 'no form factor'} "
                            f"for {', '.join(f'{r}G' for r in e.host_lane_gbps) or 'no'} host lanes) "
                            f"does not plug into the {form} cages of {lanes}G lanes of {owner}",
                        )
                    )
                if e.nic_only and not nic:
                    out.append(
                        Violation(
                            "ports",
                            f"{name}: {e.name} is made for NIC cages only, not the cages of {owner}",
                        )
                    )
                given = g.upper_ports_per_module if side else g.lower_ports_per_module
                if given != k:
                    out.append(
                        Violation(
                            "ports",
                            f"{name}: {g.medium} modules at {owner} carry {given} links, its cages {k}",
                        )
                    )
    return out


def check_protocol(d: Design) -> list[Violation]:
    """A plane speaks one protocol end to end: every packet switch speaks the design's."""
    spoken = {t.protocol for t in d.tiers if not t.ocs}
    if spoken - {d.protocol}:
        return [
            Violation(
                "protocol",
                f"the plane mixes {' and '.join(sorted(spoken | {d.protocol} - {''}))}: "
                + ", ".join(
                    f"{t.role} {t.switch_model} speaks {t.protocol or 'nothing'}"
                    for t in d.tiers
                    if not t.ocs
                ),
            )
        ]
    return []


def _ends(d: Design, c: LinkClass) -> list[TierDesign]:
    """The switch groups at the two ends of a class's links (the GPUs' end is none of them).

    A class joining a group to itself (a torus's switch-to-switch links) has it at both ends.
    """
    ends = (d.tier_with_role(c.upper_role), d.tier_with_role(c.lower_role))
    return [t for t in ends if t is not None]


def _through_ocs(g: LinkGroup, t: TierDesign) -> list[Violation]:
    """A medium into an OCS port must be duplex optics with the loss budget for the circuit."""
    need = (t.insertion_loss_db or 0.0) + OCS_CONNECTORS_LOSS_DB
    if g.copper or g.connector != OCS_CONNECTOR or (g.channel_loss_db or 0.0) < need:
        return [
            Violation(
                "media",
                f"{g.medium} cannot run through {t.switch_model}: it needs duplex optics "
                f"({OCS_CONNECTOR}) with a channel loss budget of at least {need:g} dB",
            )
        ]
    return []


def _length_histogram(name: str, g: LinkGroup) -> list[Violation]:
    """A group's links per length add up to its links and span its shortest to longest link.

    An empty histogram (lengths not known: an older file, a family keeping only the range)
    passes.
    """
    pairs = g.length_histogram
    if not pairs:
        return []
    out = []
    total = sum(n for _, n in pairs)
    if total != g.links:
        out.append(
            Violation(
                "media",
                f"{name}: {g.medium} length histogram counts {total} links, the group {g.links}",
            )
        )
    if (pairs[0][0], pairs[-1][0]) != (g.min_length_m, g.max_length_m):
        out.append(
            Violation(
                "media",
                f"{name}: {g.medium} length histogram runs {pairs[0][0]:g}-{pairs[-1][0]:g} m, "
                f"the group {g.min_length_m:g}-{g.max_length_m:g} m",
            )
        )
    return out


def check_media(d: Design) -> list[Violation]:
    """Every link's medium reaches its length and fits both ends; groups add up to the class."""
    out: list[Violation] = []
    for c in d.link_classes:
        name = f"{c.lower_role}-{c.upper_role}"
        if sum(g.links for g in c.groups) != c.links:
            out.append(
                Violation(
                    "media",
                    f"{name}: {sum(g.links for g in c.groups)} links by medium, {c.links} in the class",
                )
            )
        for before, after in zip(c.groups, c.groups[1:], strict=False):
            if after.min_length_m < before.max_length_m:
                out.append(
                    Violation(
                        "media",
                        f"{name}: {after.medium} from {after.min_length_m:g} m overlaps "
                        f"{before.medium} up to {before.max_length_m:g} m (groups run shortest first)",
                    )
                )
        ends = _ends(d, c)
        cpo = [t for t in ends if t.cpo]
        ocs = [t for t in ends if t.ocs]
        expected = 2 - len(cpo) - len(ocs)
        cpo = list({id(t): t for t in cpo}.values())  # a group at both ends is checked once
        ocs = list({id(t): t for t in ocs}.values())
        for g in c.groups:
            reach = min([g.reach_m] + [t.cpo_reach_m or 0.0 for t in cpo])
            if g.max_length_m > reach:
                out.append(
                    Violation(
                        "reach",
                        f"{name}: {g.max_length_m:.2f} m > {g.medium} reach {reach:g} m",
                    )
                )
            if g.min_length_m > g.max_length_m:
                out.append(Violation("media", f"{name}: {g.medium} lengths out of order"))
            out.extend(_length_histogram(name, g))
            for t in cpo:
                fits = (
                    not g.copper
                    and g.lane_gbps == t.cpo_lane_gbps
                    and g.connector == t.cpo_connector
                )
                if not fits:
                    out.append(
                        Violation(
                            "media",
                            f"{name}: {g.medium} ({g.lane_gbps}G lanes, {g.connector or 'no connector'}) "
                            f"does not plug into the co-packaged ports of {t.switch_model} "
                            f"({t.cpo_lane_gbps}G lanes, {t.cpo_connector})",
                        )
                    )
            for t in ocs:
                out.extend(_through_ocs(g, t))
            if g.pluggable_ends != expected:
                out.append(
                    Violation(
                        "totals",
                        f"{name}: {g.medium} has {g.pluggable_ends} modules per link, expected {expected}",
                    )
                )
    return out


def check_failure_tolerance(d: Design) -> list[Violation]:
    """After any one switch of a protected tier fails, switches below keep the required fraction."""
    out: list[Violation] = []
    phi = d.requirements.min_fraction_after_failure
    if phi is None:
        return out
    for level in d.requirements.protected_tiers:
        if level == 1:
            kept = (d.planes - 1) / d.planes
            if kept < phi - 1e-12:
                out.append(
                    Violation(
                        "failure",
                        f"a leaf failure leaves its GPUs {kept:.0%} (other planes) < {phi:.0%}",
                    )
                )
        elif level <= len(d.tiers):
            below = d.tiers[level - 2]
            kept = (below.fanout - 1) / below.fanout if below.fanout else 0.0
            if kept < phi - 1e-12:
                out.append(
                    Violation(
                        "failure",
                        f"losing one {d.tiers[level - 1].role} leaves a {below.role} {kept:.0%} of its uplinks < {phi:.0%}",
                    )
                )
    return out


def recompute_totals(d: Design) -> tuple[float, float]:
    """Capex and power over all planes, from counts and unit figures only."""
    capex = power = 0.0
    for t in d.tiers:
        capex += d.planes * t.switches * t.unit_cost_usd
        power += d.planes * t.switches * t.unit_power_w
    for c in d.link_classes:
        for g in c.groups:
            links = d.planes * g.links
            ends = _link_ends(g)
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
                e = _end(g, upper)
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
                d.planes * -(-g.links // max(k, 1)) for t, k in ends if _module_sits(t)
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
    if not _close(bom_capex, capex):
        out.append(
            Violation(
                "totals",
                f"the bill of materials costs {bom_capex:,.2f} USD, the parts {capex:,.2f}",
            )
        )
    if not _close(bom_power, power):
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
    if not _close(capex, d.capex_usd):
        out.append(
            Violation("totals", f"capex {d.capex_usd:,.2f} USD, the parts add up to {capex:,.2f}")
        )
    if not _close(power, d.power_w):
        out.append(
            Violation("totals", f"power {d.power_w:,.3f} W, the parts add up to {power:,.3f}")
        )
    objective = d.capex_weight * capex + d.energy_weight * d.energy_usd_per_w * power
    if not _close(objective, d.objective_usd):
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
    if (nic.cage.form_factor, nic.cage.lane_gbps, nic.nics_per_cage) != (
        d.nic_form_factor,
        d.nic_lane_gbps,
        d.nics_per_cage,
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


#: Checks of a tiered (up-down) wiring: the structural ones, and the judgement of a built one.
UP_DOWN_STRUCTURE = (check_spread, check_wiring)
UP_DOWN_DESIGN = (check_oversubscription, check_paths, check_failure_tolerance)

#: Judgements of a buildable design every family shares, after the family's own.
CHECKS = (
    check_media,
    check_line_sides,
    check_ports_fit,
    check_protocol,
    check_totals,
    check_bill_of_materials,
)


def structure_violations(d: Design, family: Checks) -> list[Violation]:
    """The structural checks: a design failing them describes no fabric (design.json refuses it).

    Ports and the wiring's shape, then the family's own (``Family.check_structure``: tiered
    families run ``UP_DOWN_STRUCTURE`` and their circuit checks), then the modules at every end.
    ``family`` is the design's, handed in by the caller.
    """
    return [
        *check_ports(d),
        *check_shape(d),
        *family.check_structure(d),
        *check_modules(d),
    ]


def validate_design(d: Design, family: Checks, catalog: Catalog | None = None) -> list[Violation]:
    """All violations of a design (empty when it is sound); ``family`` is the design's."""
    out = structure_violations(d, family)
    out.extend(family.check_design(d))
    for check in CHECKS:
        out.extend(check(d))
    if catalog is not None:
        out.extend(check_catalog(d, catalog))
    return out
