"""The rail families' fabric graphs for the simulator: rail leaves under the Clos tiers.

Built on ``planner.families.clos.fabric.clos_fabric``: rail-optimized moves each GPU's NIC link to the
rail leaf of its SU; rail-only is R disjoint rail Clos fabrics, flagged ``forced_pxn`` so the
simulator sends cross-rail traffic through the scale-up domain (PXN).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.design import Design
from planner.families.clos.bound import clos_bound
from planner.families.clos.fabric import clos_fabric
from planner.sim.fabric import Fabric, IntArray
from planner.sim.routing_strategies import UP_DOWN


def rail_leaf_of(gpus: IntArray, rails: int, su_nodes: int) -> IntArray:
    """Rail leaf of each GPU: (g // R // U) * R + g % R (leaf first = 0).

    ``rails`` R is the rail period and ``su_nodes`` U the SU in rail groups of R GPUs; with
    R = n (rail-optimized) a group is a node: (node // U) * n + g % n.
    """
    g = np.asarray(gpus, dtype=np.int64)
    return (g // rails // su_nodes) * rails + g % rails


def _rail_params(design: Design) -> tuple[int, int]:
    """(su_nodes, rails) of a rail design's wiring."""
    u = getattr(design.wiring, "su_nodes", None)
    n = getattr(design.wiring, "rails", None)
    if not isinstance(u, int) or not isinstance(n, int):
        raise ValueError(f"a {design.family} design needs a rail wiring (su_nodes and rails)")
    return u, n


def rail_optimized_fabric(design: Design) -> Fabric:
    """One plane of a rail-optimized design: GPU g on rail leaf (node // U) * n + g % n.

    Everything above the leaves is ``clos_fabric``'s wiring (leaf l in pod l // L; a pod holds
    whole SUs, so an SU's rail leaves share a pod). Physical link g stays GPU g's NIC link.
    """
    u, n = _rail_params(design)
    fab = clos_fabric(design)
    upper = fab.upper.copy()
    gpu = np.arange(design.gpus, dtype=np.int64)
    upper[: design.gpus] = fab.tier_offsets[1] + rail_leaf_of(gpu, n, u)
    return replace(fab, upper=upper)


def rail_only_fabric(design: Design) -> Fabric:
    """One plane of a rail-only design: R disjoint rail Clos fabrics, flagged ``forced_pxn``.

    R = the wiring's ``rails``: GPU g is on rail g % R (its rank in a rail group of R GPUs, R / n
    nodes inside one scale-up domain), and an SU is U_g = su_nodes n / R rail groups. Nodes: the
    GPUs, then every rail's leaves, spines and cores by tier. Leaf su * R + r is SU su's leaf of
    rail r (GPU g on leaf (g // R // U_g) * R + g % R; with R = n the rail-optimized rule);
    rail r's spines are r * S + j and its cores r * C + c (S, C: per rail). Within a rail, the
    wiring is ``clos_fabric``'s over the rail's GPUs (its leaf su in pod su // L). Link classes
    by tier; physical link g is GPU g's NIC link. ``Fabric.rails`` = R.
    """
    su_nodes, rails = _rail_params(design)
    n = design.gpus_per_node
    if rails % n or su_nodes * n % rails or design.gpus % rails:
        raise ValueError(
            f"{rails} rails of {design.gpus} GPUs, SUs of {su_nodes} nodes of {n}: not whole "
            f"rail groups"
        )
    per_rail = [replace(t, switches=t.switches // rails) for t in design.tiers]
    members = design.gpus // rails
    one = clos_fabric(
        replace(design, gpus=members, tiers=tuple(per_rail), pods=design.pods // rails)
    )
    counts = [design.gpus] + [t.switches for t in design.tiers]
    offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)]))
    local_tier = one.tier_of(np.arange(one.nodes))
    local_index = np.arange(one.nodes) - np.asarray(one.tier_offsets)[local_tier]
    lowers, uppers, classes = [], [], []
    for r in range(rails):
        # Map rail r's local node ids to global ones: GPU k -> k R + r, leaf su -> su R + r,
        # spine/core j -> r * (per rail) + j.
        glob = np.empty(one.nodes, dtype=np.int64)
        is_gpu = local_tier == 0
        glob[is_gpu] = local_index[is_gpu] * rails + r
        is_leaf = local_tier == 1
        glob[is_leaf] = offsets[1] + local_index[is_leaf] * rails + r
        for t in range(2, len(counts)):
            here = local_tier == t
            glob[here] = offsets[t] + r * per_rail[t - 1].switches + local_index[here]
        lowers.append(glob[one.lower])
        uppers.append(glob[one.upper])
        classes.append(one.link_class)
    lower, upper = np.concatenate(lowers), np.concatenate(uppers)
    link_class = np.concatenate(classes)
    # NIC links first, in GPU order (physical link g is GPU g's), then the rest rail by rail.
    nic = link_class == 0
    order = np.concatenate(
        [np.flatnonzero(nic)[np.argsort(lower[nic], kind="stable")], np.flatnonzero(~nic)]
    )
    # Keep the tiers' links grouped by class, as clos_fabric does.
    rest = order[design.gpus :]
    order[design.gpus :] = rest[np.argsort(link_class[rest], kind="stable")]
    lower, upper, link_class = lower[order], upper[order], link_class[order]
    return Fabric(
        gpus=design.gpus,
        planes=design.planes,
        link_speed_gbps=float(design.link_speed_gbps),
        tier_offsets=offsets,
        lower=lower,
        upper=upper,
        link_class=link_class,
        alive=np.ones(2 * lower.size, dtype=bool),
        roles=("gpu",) + tuple(t.role for t in design.tiers),
        strategy=UP_DOWN,
        bound=clos_bound,
        forced_pxn=True,
        rails=rails,
    )
