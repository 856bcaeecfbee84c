"""The checks of a tiered (up-down) wiring: spread, wiring, ratios, paths and failure tolerance."""

from __future__ import annotations

import math

from planner.design import Design
from planner.validation.core import Violation
from planner.validation.media import link_ns


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
    # An optical circuit switch is mirrors, not a hop. Blocks routed with transit (WCMP) may
    # turn at a third block's spine: one more switch, and two more circuits.
    transit = 1 if d.routing == "wcmp" else 0
    hops = 2 * len(d.tiers) - 1 - sum(1 for t in d.tiers if t.ocs) + transit
    if r.max_switch_hops is not None and hops > r.max_switch_hops:
        out.append(Violation("hops", f"{hops} switches on the longest path > {r.max_switch_hops}"))
    if hops != d.max_switch_hops:
        out.append(
            Violation(
                "hops",
                f"the design states {d.max_switch_hops} switches on the longest path, its tiers give {hops}",
            )
        )
    top = len(d.tiers)
    latency = 0.0
    for t in d.tiers:
        crossed = 1 if t.level == top else 2
        crossed += transit if t.level >= top - 1 else 0
        latency += crossed * t.latency_ns
    # Every class is crossed twice, each time on its worst link (electronics plus propagation);
    # the links into the top tier twice more through a transit block.
    for c in d.link_classes:
        crossed = 2 + (2 * transit if c.index == top - 1 else 0)
        latency += crossed * max((link_ns(g) for g in c.groups if g.links), default=0.0)
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


#: Checks of a tiered (up-down) wiring: the structural ones, and the judgement of a built one.
UP_DOWN_STRUCTURE = (check_spread, check_wiring)
UP_DOWN_DESIGN = (check_oversubscription, check_paths, check_failure_tolerance)
