"""The validator's own recomputation of a dragonfly design, from its explicit links.

``check_structure``: the wiring kind, one packet switch group of a g switches, the ports per
switch counted from the global link list (not the closed form), every pair of groups joined,
g <= a h + 1, the GPUs within the endpoints a p g, the link counts of the three classes.
``check_design``: hops (breadth-first over the minimal routes of the fabric graph up to
``BFS_MAX_SWITCHES`` switches; under Valiant, the longest first leg to a landing switch plus the
longest second leg from one), latency, speeds, the load ratios of the design's routing from the
counted links, and the failure rule.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from models.dragonfly import layout as ly
from models.dragonfly import structure as st
from planner.families.dragonfly.wiring import DRAGONFLY, DragonflyWiring

if TYPE_CHECKING:
    from planner.design import Design, LinkGroup
    from planner.validation import Violation

#: Most switches whose routes the validator walks; above it, it trusts the closed form.
BFS_MAX_SWITCHES = 4096
#: Slack on a recomputed latency (ns) and on a load ratio against its limit.
LATENCY_TOL_NS = 1e-6
RATIO_RTOL = 1e-9


def check_structure(d: Design) -> list[Violation]:
    """Ports, groups, global links and the endpoint count, recounted (module docstring)."""
    from planner.validation import Violation, check_wiring_kind

    wrong = check_wiring_kind(d, DRAGONFLY)
    if wrong:
        return wrong
    w = d.wiring
    assert isinstance(w, DragonflyWiring)  # the dragonfly kind's parser makes one
    if len(d.tiers) != 1 or d.tiers[0].ocs or d.circuits:
        return [Violation("wiring", "a dragonfly has one packet switch group and no circuits")]
    t = d.tiers[0]
    p, a, g = w.gpus_per_switch, w.switches_per_group, w.groups
    m, q = w.global_links_per_pair, w.local_links_per_pair
    out: list[Violation] = []
    if t.switches != a * g:
        out.append(
            Violation("wiring", f"{g} groups of {a} make {a * g} switches, not {t.switches}")
        )
    if t.downlinks != p or a * p * g < d.gpus:
        out.append(
            Violation(
                "wiring",
                f"N = a p g = {a} x {p} x {g} = {a * p * g:,} endpoints ({t.downlinks} GPU ports "
                f"stated) for {d.gpus:,} GPUs",
            )
        )
    # The wiring's counts in closed form first: a wiring of more links than the design states
    # (or than its ports hold) is refused before an array of one entry per link is built.
    stated = [c.links for c in d.link_classes]
    counts = {"local": st.local_links(a, g, q), "global": st.global_links(g, m)}
    if len(stated) == 3 and (counts["local"], counts["global"]) != (stated[1], stated[2]):
        return [
            *out,
            Violation(
                "wiring",
                f"the wiring makes {counts['local']:,} local links and {counts['global']:,} "
                f"global links; the design states {stated[1]:,} and {stated[2]:,}",
            ),
        ]
    if p + q * (a - 1) + w.global_ports > t.radix:
        h = w.global_ports
        return [*out, Violation("ports", f"{p} + {q * (a - 1)} + {h} ports > radix {t.radix}")]
    gu, gv = ly.global_pairs(a, g, m, w.arrangement)
    ends = np.bincount(np.concatenate([gu, gv]), minlength=a * g)
    h = int(ends.max()) if ends.size else 0
    if t.uplinks != q * (a - 1) + h or t.parallel_links != q:
        out.append(
            Violation(
                "wiring",
                f"a switch has {q} x {a - 1} local and up to {h} global ports (counted); it "
                f"states {t.uplinks} ports to switches and {t.parallel_links} parallel links",
            )
        )
    if p + q * (a - 1) + h > t.radix:
        out.append(Violation("ports", f"{p} + {q * (a - 1)} + {h} ports > radix {t.radix}"))
    if g > 1:
        pairs = np.unique(np.minimum(gu // a, gv // a) * g + np.maximum(gu // a, gv // a))
        if pairs.size != g * (g - 1) // 2 or bool((gu // a == gv // a).any()):
            out.append(
                Violation("wiring", f"{pairs.size} of {g * (g - 1) // 2} group pairs are joined")
            )
        if g > a * h + 1:
            out.append(Violation("wiring", f"{g} groups > a h + 1 = {a * h + 1}"))
    if len(d.link_classes) == 3:
        want = (d.gpus, q * g * a * (a - 1) // 2, int(gu.size))
        for c, n in zip(d.link_classes, want, strict=True):
            if c.links != n:
                out.append(
                    Violation("wiring", f"link class {c.index}: {c.links} links, the wiring {n}")
                )
    return out


def _routed_hops(d: Design) -> int | None:
    """Switches on the longest route, walked on the fabric graph; None if too large.

    Minimal (and UGAL's uncongested route): the longest minimal route between two switches.
    Valiant: a route goes minimally from its source switch s to a switch w of another group
    where a global link of its group lands, then minimally from w to its destination t in a
    third group; the longest is the longest over w of (longest s -> w) + (longest w -> t).
    """
    from planner.families.dragonfly.fabric import dragonfly_fabric, landings, switch_groups
    from planner.sim.routing_strategies import UNREACHABLE, distances

    if d.tiers[0].switches > BFS_MAX_SWITCHES:
        return None
    fabric = dragonfly_fabric(d)
    dist = distances(fabric, np.arange(fabric.first_switch, fabric.nodes)).astype(np.int64)
    w = d.wiring
    assert isinstance(w, DragonflyWiring)
    if w.routing != st.VALIANT or w.groups < 3:
        finite = dist[dist < UNREACHABLE]
        return int(finite.max()) + 1 if finite.size else 1
    group = switch_groups(fabric)
    ptr, land, _ = landings(fabric, group)
    x = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))  # the source group of each landing
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])  # groups are contiguous
    into = np.maximum.reduceat(dist, starts, axis=0)  # (group, switch): longest from the group
    out = np.maximum.reduceat(dist, starts, axis=1)  # (switch, group): longest into the group
    out[np.arange(group.size), group] = -1  # the intermediate's own group is no destination
    order = np.argsort(out, axis=1)
    best, second = order[:, -1], order[:, -2]
    onward = np.where(best[land] == x, out[land, second[land]], out[land, best[land]])
    return int((into[x, land] + onward).max()) + 1


def check_design(d: Design) -> list[Violation]:
    """Hops, latency, speeds, load ratios and failure tolerance, recomputed."""
    from planner.validation import PROPAGATION_NS_PER_M, Violation

    r, w = d.requirements, d.wiring
    if not isinstance(w, DragonflyWiring) or len(d.tiers) != 1 or len(d.link_classes) != 3:
        return []  # no dragonfly at all: the structural checks say why
    out: list[Violation] = []
    hops = _routed_hops(d)
    hops = d.max_switch_hops if hops is None else hops
    if hops != d.max_switch_hops:
        out.append(
            Violation(
                "hops", f"the routes cross {hops} switches, the design states {d.max_switch_hops}"
            )
        )
    if r.max_switch_hops is not None and hops > r.max_switch_hops:
        out.append(Violation("hops", f"{hops} switches on the longest route > {r.max_switch_hops}"))

    def worst(groups: tuple[LinkGroup, ...]) -> float:
        return max(
            (
                x.latency_ns
                + x.max_length_m * PROPAGATION_NS_PER_M["copper" if x.copper else "fibre"]
                for x in groups
                if x.links
            ),
            default=0.0,
        )

    gpu, local, glob = (worst(c.groups) for c in d.link_classes)
    s = d.tiers[0].latency_ns
    latency = 2 * gpu + (2 * s + local if w.switches_per_group > 1 else s)
    if w.groups > 1:
        globs = st.global_hops(w.groups, w.routing)
        latency = max(latency, hops * s + 2 * gpu + globs * glob + (hops - 1 - globs) * local)
    if r.max_latency_ns is not None and latency > r.max_latency_ns + LATENCY_TOL_NS:
        out.append(
            Violation("latency", f"{latency:,.1f} ns on the longest route > {r.max_latency_ns} ns")
        )
    if not math.isclose(latency, d.max_latency_ns, rel_tol=1e-9, abs_tol=LATENCY_TOL_NS):
        out.append(
            Violation(
                "latency",
                f"the design states {d.max_latency_ns:,.1f} ns on the longest route, the links give "
                f"{latency:,.1f}",
            )
        )
    for c in d.link_classes:
        if c.speed_gbps != d.link_speed_gbps:
            out.append(
                Violation(
                    "speed", f"class {c.index} runs {c.speed_gbps}G on {d.link_speed_gbps}G links"
                )
            )
    out.extend(_ratios(d, w))
    phi = r.min_fraction_after_failure
    kept = (d.planes - 1) / d.planes
    if phi is not None and kept < phi - 1e-12:
        out.append(
            Violation(
                "failure",
                f"a switch failure cuts its GPUs off one of {d.planes} planes: {kept:.0%} kept < {phi:.0%}",
            )
        )
    return out


def _ratios(d: Design, w: DragonflyWiring) -> list[Violation]:
    """The load ratios of the design's routing, from the counted links (``structure``'s bounds).

    Taken on the links as built: the fewest links of a group pair (m), the most global ends on
    a switch (h) and the most on a switch towards one group (k); n = min(a p, E).

    * uniform all-to-all under minimal routing (every routing is sized for it):
      lambda_G = n^2 / ((E - 1) m), lambda_L = (2 h lambda_G / a + p^2 / (E - 1)) / q;
    * Valiant, every group sending to the next: lambda_G = 2 n / ((g - 2) m),
      lambda_L = (n + 2 h p) / ((g - 2) m q);
    * UGAL, the same traffic: lambda_G = 2 n / (g m), lambda_L = (n + 2 p (h + k)) / (g m q);
      two groups (Valiant or UGAL): n / m and 2 p / q. ``round_robin`` wiring: h n for n in
      the local ratios (its transit leaves from one neighbour).
    """
    from planner.validation import Violation

    p, a, g = w.gpus_per_switch, w.switches_per_group, w.groups
    e, q = d.gpus, w.local_links_per_pair
    if e < 2:
        return []
    gu, gv = ly.global_pairs(a, g, w.global_links_per_pair, w.arrangement)
    ratio = 0.0
    if g > 1:
        pair = np.minimum(gu // a, gv // a) * g + np.maximum(gu // a, gv // a)
        fewest = int(
            np.bincount(pair, minlength=g * g)[
                np.triu_indices(g, 1)[0] * g + np.triu_indices(g, 1)[1]
            ].min()
        )
        per_global = (a * p) ** 2 / ((e - 1) * fewest)
        h = int(np.bincount(np.concatenate([gu, gv]), minlength=a * g).max())
        ratio = max(per_global, (2 * h * per_global / a + p * p / (e - 1)) / q if a > 1 else 0.0)
        if w.routing != st.MINIMAL:
            ratio = max(ratio, *_shift_ratios(w, e, gu, gv, fewest, h))
    elif a > 1:
        ratio = p * p / (e - 1) / q
    limit = d.requirements.max_oversubscription[0] if d.requirements.max_oversubscription else 1.0
    if ratio > limit * (1 + RATIO_RTOL):
        traffic = (
            "uniform all-to-all under minimal routing"
            if w.routing == st.MINIMAL
            else f"uniform all-to-all or every group sending to the next under {w.routing}"
        )
        return [
            Violation(
                "oversubscription",
                f"{traffic} loads a link {ratio:.3f}x its capacity > {limit}",
            )
        ]
    return []


def _shift_ratios(
    w: DragonflyWiring, e: int, gu: np.ndarray, gv: np.ndarray, m: int, h: int
) -> tuple[float, float]:
    """(lambda_G, lambda_L) of the group shift under Valiant or UGAL, from counted links."""
    p, a, g, q = w.gpus_per_switch, w.switches_per_group, w.groups, w.local_links_per_pair
    n = min(a * p, e)
    if g < 3:
        return n / m, 2 * p / q
    transit = n if w.arrangement == st.BLOCKS else h * n
    if w.routing == st.VALIANT:
        return 2 * n / ((g - 2) * m), (transit + 2 * h * p) / ((g - 2) * m * q)
    far = np.concatenate([gv // a, gu // a])
    k = int(np.bincount(np.concatenate([gu, gv]) * g + far).max())
    return 2 * n / (g * m), (transit + 2 * p * (h + k)) / (g * m * q)
