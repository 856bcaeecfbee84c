"""One plane of a dragonfly as the simulator's graph, and its minimal and Valiant strategies.

Nodes: GPUs ``0 .. E-1``, then the ``a g`` switches, switch ``E + G a + u`` being switch u of
group G. Physical links, in this order: class 0, GPU e to switch e // p (link e is GPU e's NIC
link); class 1, the local links (each switch pair of a group, q times); class 2, the global
links (``structure.global_ends``, in the wiring's arrangement).

Strategies (``RoutingStrategy`` objects the planes carry: ``MINIMAL``, ``VALIANT``), both reading the groups off the graph
(the components of the class-1 links; UGAL, which mixes the two, is ``ugal``):

* ``dragonfly_minimal``: Kim et al.'s minimal routing, local, global, local. A packet for group
  D moves over local links of its group and global links into D only, so it takes a direct
  global link of its group to D. (``shortest_path`` would also take two global links through a
  third group when that is as short, which minimal dragonfly routing never does.) Distances are
  breadth-first searches per destination group over those links; the rule keeps the next hops to
  them.
* ``dragonfly_valiant``: Valiant routing. A packet for another group goes first, minimally, to
  a random intermediate group (each other group with weight 1 / (g - 2)), arriving at a switch
  where a global link from its own group lands (weighted by those links), then minimally on to
  its destination: local, global, local, global, local. It needs the two-phase hook
  (``NextHops.via``). Inside a group, and with two groups, it routes minimally.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, shortest_path

from models.dragonfly import layout as ly
from planner.families.dragonfly.wiring import (
    GLOBAL_CLASS,
    GPU_CLASS,
    LOCAL_CLASS,
    ROLE,
    DragonflyWiring,
)
from planner.sim.fabric import Fabric, NodeKind, RoutingStrategy
from planner.sim.routing_strategies import UNREACHABLE, NextHops, ViaRule

if TYPE_CHECKING:
    from planner.design import Design

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def dragonfly_fabric(design: Design, strategy: RoutingStrategy | None = None) -> Fabric:
    """One plane of a dragonfly design, routed by ``strategy`` whatever the design's routing.

    None: ``MINIMAL``. ``planner.families.dragonfly.routing.routed_fabric`` builds it with the design's own.
    """
    w = design.wiring
    if not isinstance(w, DragonflyWiring):
        raise ValueError(f"a dragonfly design has a dragonfly wiring, not {w.kind}")
    return fabric_of(
        design.gpus,
        design.planes,
        w,
        float(design.link_speed_gbps),
        roles=("gpu", design.tiers[0].role if design.tiers else ROLE),
        strategy=strategy,
    )


def fabric_of(
    gpus: int,
    planes: int,
    w: DragonflyWiring,
    link_speed_gbps: float,
    roles: tuple[str, str] = ("gpu", ROLE),
    strategy: RoutingStrategy | None = None,
) -> Fabric:
    """The graph of one plane of a dragonfly wiring (see the module docstring)."""
    p, a, g = w.gpus_per_switch, w.switches_per_group, w.groups
    if gpus > p * a * g:
        raise ValueError(f"{gpus} GPUs do not fit on {a * g} switches of {p} GPUs each")
    e = np.arange(gpus, dtype=np.int64)
    lu, lv = ly.local_pairs(a, g)
    gu, gv = ly.global_pairs(a, g, w.global_links_per_pair, w.arrangement)
    q = w.local_links_per_pair
    lower = np.concatenate([e, gpus + np.repeat(lu, q), gpus + gu])
    upper = np.concatenate([gpus + e // p, gpus + np.repeat(lv, q), gpus + gv])
    link_class = np.concatenate(
        [
            np.full(gpus, GPU_CLASS),
            np.full(lu.size * q, LOCAL_CLASS),
            np.full(gu.size, GLOBAL_CLASS),
        ]
    ).astype(np.int64)
    return Fabric(
        gpus=gpus,
        planes=planes,
        link_speed_gbps=link_speed_gbps,
        tier_offsets=(0, gpus, gpus + a * g),
        lower=lower,
        upper=upper,
        link_class=link_class,
        alive=np.ones(2 * lower.size, dtype=bool),
        roles=roles,
        strategy=strategy or MINIMAL,
        group_kinds=(NodeKind.GPU, NodeKind.SWITCH),
    )


def switch_groups(fabric: Fabric) -> IntArray:
    """Group of every switch (row = node - first switch): components of the local links."""
    first, n = fabric.first_switch, fabric.switches
    local = np.flatnonzero(fabric.link_class == LOCAL_CLASS)
    adj = sp.csr_matrix(
        (np.ones(local.size), (fabric.lower[local] - first, fabric.upper[local] - first)),
        shape=(n, n),
    )
    _, label = connected_components(adj, directed=False)
    return label.astype(np.int64)


def minimal(fabric: Fabric, leaves: IntArray) -> NextHops:
    """Local, global, local: see the module docstring."""
    first, n = fabric.first_switch, fabric.switches
    group = switch_groups(fabric)
    src, dst = fabric.src, fabric.dst
    sw = fabric.alive & (src >= first) & (dst >= first)
    s, d = src[sw] - first, dst[sw] - first
    local = group[s] == group[d]
    dist = np.full((n, leaves.size), UNREACHABLE, dtype=np.int16)
    leaf_group = group[leaves - first]
    for target in np.unique(leaf_group).tolist():
        cols = np.flatnonzero(leaf_group == target)
        keep = local | (group[d] == target)
        reverse = sp.csr_matrix((np.ones(int(keep.sum())), (d[keep], s[keep])), shape=(n, n))
        got = shortest_path(reverse, unweighted=True, indices=leaves[cols] - first)
        got = np.atleast_2d(got).T
        dist[:, cols] = np.where(np.isfinite(got), got, int(UNREACHABLE)).astype(np.int16)

    def allowed(links: IntArray, dest: IntArray) -> BoolArray:
        """Local links, and global links into the destination's group."""
        head = np.maximum(dst[links] - first, 0)
        tail = np.maximum(src[links] - first, 0)
        ok: BoolArray = (group[head] == group[tail]) | (group[head] == group[dest - first])
        return ok

    return NextHops(dist, allowed)


def landings(fabric: Fabric, group: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
    """Per source group X, the switches where its global links land, with their share.

    Returns (pointer per group, landing switch rows, share), sorted by X; the shares of X's
    landings in one group add up to 1.
    """
    first = fabric.first_switch
    gl = np.flatnonzero(fabric.link_class == GLOBAL_CLASS)
    u, v = fabric.lower[gl] - first, fabric.upper[gl] - first
    x, land = np.concatenate([group[u], group[v]]), np.concatenate([v, u])
    n = fabric.switches
    key, count = np.unique(x * n + land, return_counts=True)
    x, land = key // n, key % n
    groups = int(group.max()) + 1
    total = np.bincount(x * groups + group[land], weights=count, minlength=groups * groups)
    share = count / total[x * groups + group[land]]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(x, minlength=groups))]).astype(np.int64)
    return ptr, land.astype(np.int64), share


def valiant_rule(fabric: Fabric) -> ViaRule:
    """Valiant's intermediates of leaf pairs (a, b), node ids (``NextHops.via``).

    A pair in one group, or on a fabric of fewer than 3 groups, goes straight (its own
    destination, weight 1); a pair across groups goes to every switch of another group than
    both of its own where a global link of its source group lands, with weight
    ``share / (g - 2)`` (``landings``).
    """
    first = fabric.first_switch
    group = switch_groups(fabric)
    groups = int(group.max()) + 1
    ptr, land, share = landings(fabric, group)

    def via(a: IntArray, b: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
        ga, gb = group[a - first], group[b - first]
        direct = np.flatnonzero((ga == gb) | (groups < 3))
        cross = np.flatnonzero((ga != gb) & (groups >= 3))
        count = ptr[ga[cross] + 1] - ptr[ga[cross]]
        owner = np.repeat(cross, count)
        pos = np.repeat(ptr[ga[cross]] - np.cumsum(count) + count, count) + np.arange(
            int(count.sum())
        )
        keep = group[land[pos]] != gb[owner]
        owner, pos = owner[keep], pos[keep]
        return (
            np.concatenate([direct, owner]),
            np.concatenate([b[direct], first + land[pos]]),
            np.concatenate([np.ones(direct.size), share[pos] / max(groups - 2, 1)]),
        )

    return via


def valiant(fabric: Fabric, leaves: IntArray) -> NextHops:
    """Minimal next hops, with a random intermediate group first (module docstring)."""
    hops = minimal(fabric, leaves)
    return NextHops(hops.dist, hops.allowed, valiant_rule(fabric))


#: Minimal routing: local-global-local at most.
MINIMAL = RoutingStrategy("dragonfly_minimal", minimal)
#: Valiant routing: through a random intermediate group.
VALIANT = RoutingStrategy("dragonfly_valiant", valiant)
