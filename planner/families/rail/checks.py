"""The validator's recomputation of the rail families' wiring: SUs, rails, and the fabric graph.

Independent of the sizing model (``planner.families.rail.sizing``): from a design's tiers and its
rail wiring alone it recounts which leaf every GPU's NIC is on, the SUs and pods, and then checks
the simulator's fabric graph against that count.
"""

from __future__ import annotations

from planner.design import Design
from planner.families.rail.wiring import RAIL_ONLY
from planner.validation import Violation, check_spread


def _rail_wiring(d: Design) -> tuple[int, int] | None:
    """(U, R) of a rail design's wiring: SU size in rail groups, rails; None when it has none.

    A rail group is R consecutive GPUs (R / n nodes); rail-optimized has R = n, where U is the
    SU's nodes. Rail-only ``su_nodes`` counts nodes, U = su_nodes n / R (0 when not whole).
    """
    u, r = getattr(d.wiring, "su_nodes", None), getattr(d.wiring, "rails", None)
    if not (isinstance(u, int) and isinstance(r, int) and u >= 1 and r >= 1):
        return None
    if d.family == RAIL_ONLY:
        n = d.gpus_per_node
        u = u * n // r if r % n == 0 and (u * n) % r == 0 else 0
    return u, r


def check_rail_wiring(d: Design) -> list[Violation]:
    """Rail wiring: the rail count, leaves = R x SUs, U GPU ports a leaf, each copy fits together.

    Rail-optimized: R = n (GPUs per node). Rail-only: R is a multiple of n dividing the scale-up
    domain (every domain holds every rail) and the GPU count, and an SU is whole rail groups of
    R / n nodes. N = gpus / R rail groups, s = ceil(N / U) SUs: leaves = R s. A rail-optimized
    design is one Clos over all GPUs (pods hold whole SUs: L divisible by n); a rail-only design
    is R identical rail Clos fabrics, each with s leaves, tiers / R switches and pods / R pods.
    """
    params = _rail_wiring(d)
    if params is None:
        return [Violation("wiring", f"a {d.family} design needs a rail wiring (su_nodes, rails)")]
    u, n = params
    out: list[Violation] = []
    node = d.gpus_per_node
    if d.family != RAIL_ONLY and n != node:
        out.append(Violation("wiring", f"{n} rails, but a node has {node} GPUs"))
    if d.family == RAIL_ONLY:
        domain = d.scale_up.gpus
        if n % node or domain % n:
            out.append(
                Violation(
                    "wiring",
                    f"{n} rails: a rail-only fabric's rails are whole nodes of {node} GPUs "
                    f"dividing the scale-up domain of {domain} GPUs (every domain holds every "
                    f"rail)",
                )
            )
        if u == 0:
            su_nodes = getattr(d.wiring, "su_nodes", 0)
            return [
                *out,
                Violation("wiring", f"an SU of {su_nodes} nodes is not whole groups of {n} GPUs"),
            ]
    if d.gpus % n:
        return [*out, Violation("wiring", f"{d.gpus} GPUs do not split into {n} rails")]
    nodes = d.gpus // n
    units = -(-nodes // u)
    tiers = d.tiers
    leaf = tiers[0]
    if leaf.switches != n * units:
        out.append(
            Violation(
                "wiring",
                f"{leaf.switches} leaves, expected {n} rails x {units} SUs of {u} "
                f"{'nodes' if n == node else 'rail groups'} ({nodes} "
                f"{'nodes' if n == node else 'groups'})",
            )
        )
    if leaf.downlinks != u:
        out.append(Violation("wiring", f"a rail leaf has {leaf.downlinks} GPU ports, not U = {u}"))
    rail_only = d.family == RAIL_ONLY
    copies = n if rail_only else 1
    if any(t.switches % copies for t in tiers) or d.pods % copies:
        return [*out, Violation("wiring", f"the tiers and pods do not split into {n} rails")]
    per = [t.switches // copies for t in tiers]
    pods = d.pods // copies
    if len(tiers) == 1 and not (rail_only and per[0] == 1):
        out.append(Violation("wiring", "a one-tier rail fabric is rail-only, one leaf per rail"))
    if len(tiers) == 2:
        spine = tiers[1]
        if leaf.fanout != per[1]:
            out.append(Violation("wiring", f"a leaf reaches {leaf.fanout} spines of its {per[1]}"))
        if spine.downlinks != per[0] * leaf.parallel_links:
            out.append(
                Violation(
                    "wiring",
                    f"a spine receives {per[0]} x {leaf.parallel_links} links, not "
                    f"{spine.downlinks}",
                )
            )
    if len(tiers) == 3:
        agg, core = tiers[1], tiers[2]
        per_pod = d.leaves_per_pod
        if not rail_only and per_pod % n:
            out.append(Violation("wiring", f"a pod of {per_pod} leaves is not whole SUs of {n}"))
        if per[1] != pods * leaf.fanout:
            out.append(Violation("wiring", f"{pods} pods x {leaf.fanout} spines != {per[1]}"))
        if per[0] > pods * per_pod or per[0] <= (pods - 1) * per_pod:
            out.append(Violation("wiring", f"{per[0]} leaves do not fill {pods} pods of {per_pod}"))
        if agg.downlinks != per_pod * leaf.parallel_links:
            out.append(Violation("wiring", f"a spine serves {per_pod} leaves, not {agg.downlinks}"))
        if per[2] != leaf.fanout * agg.fanout:
            out.append(Violation("wiring", f"{leaf.fanout} x {agg.fanout} cores != {per[2]}"))
        if core.downlinks != pods * agg.parallel_links:
            out.append(Violation("wiring", f"a core serves {pods} pods, not {core.downlinks}"))
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


def check_rail_fabric(d: Design) -> list[Violation]:
    """Every GPU's NIC on the leaf of its rail; rail-only: no switch joins two rails.

    GPU g (rail g % R, rail group g // R) belongs on leaf (g // R // U) R + g % R (R = n for
    rail-optimized: (node // U) n + g % n). Rail-only: every connected part of the switch graph
    holds the GPUs of one rail only.
    """
    params = _rail_wiring(d)
    if params is None or not params[0] or d.gpus % params[1] or check_rail_wiring(d):
        return []  # check_rail_wiring says what is wrong
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    u, n = params
    from planner.families.rail.fabric import rail_only_fabric, rail_optimized_fabric

    fab = rail_only_fabric(d) if d.family == RAIL_ONLY else rail_optimized_fabric(d)
    g = np.arange(d.gpus)
    want = fab.tier_offsets[1] + (g // n // u) * n + g % n
    out: list[Violation] = []
    wrong = np.flatnonzero(fab.upper[: d.gpus] != want)
    if wrong.size or np.any(fab.lower[: d.gpus] != g):
        first = int(wrong[0]) if wrong.size else 0
        out.append(
            Violation(
                "wiring",
                f"{wrong.size} GPUs' NICs are not on the leaf of their rail (first: GPU {first})",
            )
        )
    if d.family == RAIL_ONLY:
        adj = coo_matrix(
            (np.ones(fab.lower.size), (fab.lower, fab.upper)), shape=(fab.nodes, fab.nodes)
        )
        _, label = connected_components(adj, directed=False)
        pairs = np.unique(label[: d.gpus].astype(np.int64) * n + g % n)
        parts, seen = np.unique(pairs // n, return_counts=True)
        mixed = int(np.count_nonzero(seen > 1))
        if mixed:
            out.append(Violation("wiring", f"{mixed} part(s) of the fabric join two rails"))
    return out


#: Structural checks of the rail families' wiring.
RAIL_STRUCTURE = (check_spread, check_rail_wiring, check_rail_fabric)
