"""The checks of the media: reach, lengths, ports that fit their cages, protocols."""

from __future__ import annotations

from models.cabling import OCS_CONNECTOR, OCS_CONNECTORS_LOSS_DB
from planner.design import Design, LinkClass, LinkGroup, TierDesign
from planner.validation.core import PROPAGATION_NS_PER_M, Violation
from planner.validation.modules import LinkEnd, link_end


def link_ns(g: LinkGroup) -> float:
    """One-way latency of the group's longest link."""
    medium = "copper" if g.copper else "fibre"
    return g.latency_ns + g.max_length_m * PROPAGATION_NS_PER_M[medium]


def _fits_cage(e: LinkEnd, form_factor: str, lane_gbps: int | None) -> bool:
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
                k = d.nics_per_cage * d.planes // d.nic_cages
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
                e = link_end(g, side)
                if e is None:
                    e = LinkEnd(g.medium, 0.0, 0.0, 0.0, g.host_lane_gbps, g.form_factors)
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
