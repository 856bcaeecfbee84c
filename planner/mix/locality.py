"""Where a design's GPUs sit, as nested locality domains, and what its family lets a job take.

The domains come from the fabric the simulator runs (``planner.sim.fabric.Fabric``), not from a
table per family: level k groups the GPUs that reach one another through the scale-up domain
and the switches of tiers 1 .. k alone (connected components of that subgraph). On a Clos these
are the node, the leaf (or, rail-optimized, the scalable unit whose rail leaves a node's NICs
share), the pod and the cluster; on a dragonfly the router and the group. A level whose
domains are not equal runs of consecutive GPU ids is left out (a job placed by id could not
use it), and so is one the same size as the level below. A family that restricts placement
(``planner.family_roles.PlacesJobs``: rail-only, TPU-style pods) adds its domain as a level,
and the rule (``models.placement.Rule``) says a job must stay inside one or take whole ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from models.placement import Hierarchy, Rule
from planner.design import Design
from planner.family_roles import Family, PlacesJobs
from planner.sim.fabric import Fabric, IntArray


@dataclass(frozen=True)
class Locality:
    """A design's locality domains and its family's placement rule."""

    hierarchy: Hierarchy
    rule: Rule
    rule_domain: str
    """The domain the rule names ('' when the family has no rule)."""


def _runs_of(labels: IntArray) -> int | None:
    """The size of the equal consecutive runs ``labels`` forms (GPU g's domain), else None."""
    gpus = labels.size
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    if np.unique(labels).size != starts.size:  # a domain split in two runs
        return None
    sizes = np.diff(np.r_[starts, gpus])
    if not np.all(sizes == sizes[0]):
        return None
    return int(sizes[0])


def tier_domains(fabric: Fabric, domain_gpus: int) -> list[tuple[str, int]]:
    """(name, GPUs) of each tier's domains that are equal runs of ids, innermost first.

    Level k: components of the GPUs, the scale-up domains (``domain_gpus`` consecutive GPUs)
    and the nodes of the first k switch groups, joined by the links among them.
    """
    gpus, nodes = fabric.gpus, fabric.nodes
    ids = np.arange(gpus)
    # The scale-up domain joins its GPUs: each to the domain's first.
    dom_src, dom_dst = ids, ids - ids % domain_gpus
    lower, upper = np.asarray(fabric.lower), np.asarray(fabric.upper)
    group = np.searchsorted(np.asarray(fabric.tier_offsets[1:]), np.arange(nodes), side="right")
    out: list[tuple[str, int]] = []
    for k in range(1, len(fabric.tier_offsets) - 1):
        keep = (group[lower] <= k) & (group[upper] <= k)
        src = np.r_[dom_src, lower[keep]]
        dst = np.r_[dom_dst, upper[keep]]
        graph = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(nodes, nodes))
        _, label = connected_components(graph, directed=False)
        size = _runs_of(label[:gpus])
        role = fabric.roles[1] if k == 1 else ("pod" if k == 2 else f"tier-{k} domain")
        if size is not None:
            out.append((role, size))
    return out


def _nested(levels: list[tuple[str, int]], gpus: int, first: str = "") -> list[tuple[str, int]]:
    """The levels that nest: each size divides the next, no size twice, the cluster last.

    The level named ``first`` (a family's rule) is kept before any other is tried.
    """
    order = sorted(levels, key=lambda x: (x[0] != first, x[1]))
    kept: dict[int, str] = {gpus: "cluster"}
    for name, size in order:
        if size in kept or gpus % size:
            continue
        if all(size % k == 0 or k % size == 0 for k in kept):
            kept[size] = name
    return sorted(((n, s) for s, n in kept.items()), key=lambda x: x[1])


def locality(design: Design, family: Family, fabric: Fabric) -> Locality:
    """The domains of ``design`` (module docstring) and its family's placement rule."""
    gpus = design.gpus
    levels = [("node", design.gpus_per_node), ("scale-up domain", design.scale_up.gpus)]
    levels += tier_domains(fabric, design.scale_up.gpus)
    rule_name, contiguous = "", False
    if isinstance(family, PlacesJobs):
        rule_name, size, contiguous = family.job_domain_gpus(design)
        levels = [(n, s) for n, s in levels if s != size] + [(rule_name, size)]
    nested = _nested(levels, gpus, rule_name)
    hierarchy = Hierarchy(tuple(n for n, _ in nested), tuple(s for _, s in nested))
    if not rule_name or rule_name not in hierarchy.names:  # a domain the size of the cluster
        return Locality(hierarchy, Rule(), "")
    level = hierarchy.names.index(rule_name)
    return Locality(hierarchy, Rule(level, contiguous), rule_name)
