"""The modules at every link end: each sits in a cage it fits, and both ends drive the same line."""

from __future__ import annotations

from dataclasses import dataclass

from planner.design import Design, LinkGroup, TierDesign
from planner.validation.core import Violation


def module_sits(t: TierDesign | None) -> bool:
    """Whether a module (or a cable plug) sits at this end: a NIC's or a switch's cage.

    A co-packaged (CPO) port takes the fibre itself and an OCS port is a mirror: no module.
    """
    return t is None or not (t.cpo or t.ocs)


@dataclass(frozen=True)
class LinkEnd:
    """What sits at one end of a group's links, read from the group's own fields."""

    name: str
    cost_usd: float
    power_w: float
    afr: float
    host_lane_gbps: tuple[int, ...]
    form_factors: tuple[str, ...]
    nic_only: bool = False


def link_end(g: LinkGroup, upper: bool) -> LinkEnd | None:
    """The module at the lower or upper ends (None where the end carries no module).

    An end carries a module where it serves one or more links per module; that module is the
    end's ``*_module`` when the design names one, or else the medium's own (the group's figures).
    """
    k = g.upper_ports_per_module if upper else g.lower_ports_per_module
    if k < 1:
        return None
    m = g.upper_module if upper else g.lower_module
    if m is None:
        return LinkEnd(
            g.medium, g.end_cost_usd, g.end_power_w, g.afr, g.host_lane_gbps, g.form_factors
        )
    return LinkEnd(
        m.name, m.cost_usd, m.power_w, m.afr, m.host_lane_gbps, m.form_factors, m.nic_only
    )


def link_ends(g: LinkGroup) -> list[LinkEnd]:
    """The modules one link of the group pays for, lower end first.

    Its ``pluggable_ends`` say how many; the ends that carry a module say which. Where the two
    disagree (``check_modules`` and ``check_media`` report it), the link pays for its
    ``pluggable_ends`` of the medium's own module, as the totals were priced.
    """
    ends = [e for e in (link_end(g, False), link_end(g, True)) if e is not None]
    if len(ends) == g.pluggable_ends:
        return ends
    own = LinkEnd(g.medium, g.end_cost_usd, g.end_power_w, g.afr, g.host_lane_gbps, g.form_factors)
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
                if module_sits(tier) and k < 1:
                    out.append(
                        Violation(
                            "modules",
                            f"{field}: {k}, but the {g.links} {g.medium} links end in modules at "
                            f"the {role} end: expected 1 or more links per module",
                        )
                    )
                elif tier is not None and not module_sits(tier) and k != 0:
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
