r"""UGAL on a dragonfly: its routing strategy, and the adapt hooks that set its splits.

UGAL (Singh's universal globally-adaptive load-balanced routing; on the dragonfly Kim, Dally,
Scott, Abts, ISCA 2008, and Jiang, Kim, Dally, ISCA 2009) sends a packet minimally unless the
minimal path is more loaded than a Valiant one. In the fluid simulator that is a split per
(source switch, destination switch) pair: a share alpha goes minimally (local, global, local),
the rest Valiant's way (``fabric.valiant_rule``: to a random other group first). Under packet
spraying the split is a split; under ECMP every flow is hashed onto the minimal path or one
intermediate with those shares as probabilities (``planner.sim.via_routing``).

The strategy ``dragonfly_ugal``: minimal next hops, and a two-phase rule that reads the
fabric's ``group_weights``, a ``GroupWeights`` whose "groups" are the plane's ``a g`` switches
(pair ``s * (a g) + t`` of switch rows, row = node - first switch): an entry ``via == t`` is the
minimal share, an entry ``via == SPREAD`` (-1) the Valiant share, spread over intermediates as
``valiant_rule`` spreads it. A pair without entries goes minimally, and so does every pair of
a fabric whose weights no ``adapt`` has set.

The adapt hooks (``Fabric.adapt``; the simulator runs one before every phase, on the healthy
and on the failed plane) set the splits for the phase's demand. UGAL-L starts minimal (UGAL's
choice on an idle network); UGAL-G, which sees the whole plane, runs once from minimal and once
from Valiant routing and keeps the splits whose busiest link is less loaded (so it never ends
below the better of the two). Each run is rounds of:

1. the link loads of the current splits, in the fluid model: every pair's bytes over the
   minimal spraying pattern of each leg it uses (the minimal path s -> t, and Valiant's
   s -> w and w -> t for every landing w), walked once on the plane's alive links with the
   parallel links of a switch pair as one bundle (``walk_legs``; a leg that cannot be walked is
   dropped with its share, as the simulator drops it), and summed per switch pair
   (``leg_bytes``) so that a round costs a few passes over the switch pairs;
2. every link's price at its utilisation rho (its load over the busiest link's),
   exp(s (rho - 1)): next to nothing on a link far from the busiest, 1 on it, so a path's
   price is about its hop count times that of the busiest link it meets, UGAL's hops x queue
   (the steepness s grows from ``STEEPNESS_START`` to ``STEEPNESS_END`` over the rounds);
3. every pair's decision, minimal or Valiant, whichever costs less: UGAL-G (``adapt_global``)
   prices every link of the path (Valiant's at the mean over its landings); UGAL-L
   (``adapt_local``) only what the source switch sees, its own output towards the path's first
   global hop and, through credit-based flow control, that global link's queue behind it: the
   hops times the price of the busiest of those links, so it sees neither a Valiant path's
   second global hop nor the last local hop of either;
4. every pair's share moved part of the way to its decision (the damping): UGAL-G by the step
   that least loads the busiest link (a line search on the smoothed maximum, ``line_step``),
   UGAL-L by 2 / (round + 3), so each split is an average of the rounds' decisions (a
   Frank-Wolfe iteration on the smoothed busiest load, whose rounds are UGAL's choices).

``ROUNDS_GLOBAL`` and ``ROUNDS_LOCAL`` rounds. Shares below ``MIN_SHARE`` are dropped at the
end, so a pair that stays minimal is routed as cheaply as under minimal routing. Why prices and
not loads: at saturation a path's queueing, not its hop count, decides, and hops x load would
leave a minimal path 5/3 as loaded as a Valiant one at balance (5 links against 3). The splits
of a phase, and the legs of a plane, are kept (``Ugal``): one simulation asks for each several
times (its routings, seeds and report).

Cost: walking the legs is one spraying walk of every switch pair (a g squared legs); a round is
a few passes over the switch pairs and the bundles (dragonfly-16k, 660 switches: about 1.5 s for
the legs and 1.5 s for UGAL-G's splits of a 16,384-GPU permutation).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from planner.families.dragonfly.fabric import (
    MINIMAL,
    landings,
    minimal,
    switch_groups,
    valiant_rule,
)
from planner.families.dragonfly.wiring import GLOBAL_CLASS
from planner.sim.fabric import Fabric, GroupWeights, RoutingStrategy
from planner.sim.route_walk import Walk, check_next_hops, unique_pairs, walker
from planner.sim.routing_strategies import UNREACHABLE, NextHops, ViaRule

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: ``via`` of a pair's Valiant share in the UGAL weights (module docstring).
SPREAD = -1
#: Rounds of the splits' iteration: UGAL-G (a line search sets each round's step) and UGAL-L
#: (each round's decisions weigh 2 / (round + 3)).
ROUNDS_GLOBAL = 30
ROUNDS_LOCAL = 150
#: How steeply a link's price rises with its utilisation, exp(s (rho - 1)): s grows
#: geometrically from the first round's to the last's (smooth first, sharp at the end).
STEEPNESS_START = 10.0
STEEPNESS_END = 50.0
#: Ternary-search steps of UGAL-G's line search (the bracket shrinks to (2/3)^steps).
LINE_SEARCH_STEPS = 30
#: Shares of a pair below this are dropped once the rounds are done (and the rest scaled up).
MIN_SHARE = 0.02


def ugal_rule(fabric: Fabric) -> ViaRule:
    """UGAL's intermediates of leaf pairs (a, b), node ids, from ``fabric.group_weights``."""
    weights = fabric.group_weights
    spread_of = valiant_rule(fabric)
    first = fabric.first_switch

    def via(a: IntArray, b: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
        if weights is None:
            return np.arange(a.size), b.copy(), np.ones(a.size)
        owner, mid, share = weights.entries(a - first, b - first)
        straight = mid != SPREAD
        out_owner, out_mid, out_w = [owner[straight]], [b[owner[straight]]], [share[straight]]
        hop = np.flatnonzero(~straight)
        if hop.size:
            pair, node, w = spread_of(a[owner[hop]], b[owner[hop]])
            out_owner.append(owner[hop][pair])
            out_mid.append(node)
            out_w.append(share[hop][pair] * w)
        return np.concatenate(out_owner), np.concatenate(out_mid), np.concatenate(out_w)

    return via


def ugal(fabric: Fabric, leaves: IntArray) -> NextHops:
    """Minimal next hops, the splits of ``group_weights`` first (module docstring)."""
    hops = minimal(fabric, leaves)
    return NextHops(hops.dist, hops.allowed, ugal_rule(fabric))


#: Minimal next hops with the UGAL splits of ``Fabric.group_weights`` as intermediates.
UGAL = RoutingStrategy("dragonfly_ugal", ugal)


# ---- the splits ---------------------------------------------------------------------------------
def bundle_plane(fabric: Fabric) -> tuple[Fabric, FloatArray, FloatArray]:
    """The plane's switches joined by one link per joined switch pair and class (a bundle).

    Returns the bundle plane (same nodes, the bundles as its links, alive when one of their links
    is), every directed bundle's capacity (its alive links' speeds) and its alive links. Parallel
    links are one entry of a leg's pattern instead of q; ``spread_legs`` splits a hop over the
    bundles by their alive links, as the simulator splits it over the links.
    """
    first = fabric.first_switch
    sw = np.flatnonzero(fabric.lower >= first)
    lo, up = fabric.lower[sw], fabric.upper[sw]
    n = fabric.nodes
    key, which = np.unique((fabric.link_class[sw] * n + lo) * n + up, return_inverse=True)
    which = which.ravel()
    cap, count = np.zeros(2 * key.size), np.zeros(2 * key.size)
    for half in (0, 1):
        directed = 2 * sw + half
        cap[half::2] = np.bincount(which, fabric.capacity_gbps[directed], minlength=key.size)
        count[half::2] = np.bincount(which, fabric.alive[directed], minlength=key.size)
    plane = replace(
        fabric,
        lower=(key // n) % n,
        upper=key % n,
        link_class=key // (n * n),
        alive=count > 0,
        strategy=MINIMAL,
        adapt=None,
        group_weights=None,
        design_class=None,
        class_speed_gbps=None,
    )
    return plane, cap, count


def spread_legs(
    walk: Walk, multiplicity: FloatArray, start: IntArray, dest: IntArray
) -> tuple[IntArray, IntArray, FloatArray]:
    """Spraying patterns of legs ``start -> dest`` (node ids) over weighted bundles.

    ``planner.sim.spray_patterns.spread``'s walk, every state splitting its mass over its
    next-hop bundles in proportion to their alive links. Returns entries (bundle, leg, fraction).
    """
    nodes = walk.fabric.nodes
    head = walk.fabric.dst
    pat, node, mass = np.arange(start.size), start, np.ones(start.size)
    rows, cols, vals = [], [], []
    while pat.size:
        inverse, ptr, links = walk.candidates(node, dest[pat])
        count = ptr[inverse + 1] - ptr[inverse]
        check_next_hops(walk, count, node, dest[pat])
        entry = np.repeat(np.arange(pat.size), count)
        offset = np.arange(entry.size) - np.repeat(np.cumsum(count) - count, count)
        link = links[ptr[inverse][entry] + offset]
        weight = multiplicity[link]
        total = np.bincount(entry, weights=weight, minlength=pat.size)
        share = mass[entry] * weight / total[entry]
        rows.append(link)
        cols.append(pat[entry])
        vals.append(share)
        nxt = head[link]
        moving = nxt != dest[pat[entry]]
        pat, node, inv = unique_pairs(pat[entry][moving], nxt[moving], nodes)
        mass = np.bincount(inv, weights=share[moving]).astype(np.float64, copy=False)
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


@dataclass(frozen=True)
class Legs:
    """Minimal spraying patterns between every two switches of a plane (legs), as columns.

    Column ``u * n + v`` (switch rows, n switches) is the leg u -> v on the bundle plane
    (``bundle_plane``); ``seen`` keeps a leg's entries up to and including its first global
    link (what its source switch sees: UGAL-L); ``hops`` (n, n) is each leg's mean count of
    switch-to-switch links, ``reached`` (n, n) whether it can be walked at all; ``capacity``
    the directed bundles' capacities.
    """

    matrix: sp.csc_matrix
    seen: sp.csc_matrix
    hops: FloatArray
    reached: BoolArray
    capacity: FloatArray


def walk_legs(fabric: Fabric) -> Legs:
    """Every leg of the plane, walked once on its bundles' alive links."""
    plane, capacity, multiplicity = bundle_plane(fabric)
    first, n = plane.first_switch, plane.switches
    walk = walker(plane, first + np.arange(n, dtype=np.int64))
    u, v = np.divmod(np.arange(n * n, dtype=np.int64), n)
    reached = (walk.dist[u, walk.col_of_leaf[first + v]] < UNREACHABLE) & (u != v)
    go = np.flatnonzero(reached)
    rows, legs, vals = spread_legs(walk, multiplicity, first + u[go], first + v[go])
    cols = go[legs]
    shape = (plane.links, n * n)
    matrix = sp.csc_matrix((vals, (rows, cols)), shape=shape)
    own = (plane.src[rows] == first + u[cols]) | (
        np.repeat(plane.link_class, 2)[rows] == GLOBAL_CLASS
    )
    seen = sp.csc_matrix((vals[own], (rows[own], cols[own])), shape=shape)
    hops = np.bincount(cols, weights=vals, minlength=n * n).astype(np.float64).reshape(n, n)
    return Legs(matrix, seen, hops, reached.reshape(n, n), capacity)


def _column_max(m: sp.csc_matrix, values: FloatArray) -> FloatArray:
    """Per column, the largest of ``values`` at its entries' rows (0 for an empty column)."""
    out = np.zeros(m.shape[1])
    filled = np.flatnonzero(np.diff(m.indptr) > 0)
    if filled.size:
        out[filled] = np.maximum.reduceat(values[m.indices], m.indptr[filled])
    return out


@dataclass(frozen=True)
class Demand:
    """A phase's bytes between switch pairs, and what Valiant's spread needs to price them.

    Valiant sends a pair (s, t) of groups X -> D through the landings w of X in every group but
    X and D, landing w with weight ``land[w, X] / (spread[X] - spread_in[X, D])``: ``land[w, X]``
    is w's share of X's links into w's group (``fabric.landings``; 0 on a switch that is down),
    ``spread[X]`` their sum over all groups and ``spread_in`` per group, as the simulator weighs
    them (a landing it cannot reach is dropped and the pair's other weights scaled up).
    """

    s: IntArray
    t: IntArray
    bytes: FloatArray
    source_group: IntArray
    dest_group: IntArray
    choice: BoolArray
    """Pairs that choose: across groups, both minimal and Valiant reachable."""
    alpha: FloatArray
    """Minimal share of the pairs that do not choose (1, or 0 when minimal is cut off)."""
    norm: FloatArray
    """1 / (spread[X] - spread_in[X, D]) of every pair (0 when Valiant has no landing)."""
    group: IntArray
    """Group of every switch."""
    land: sp.csr_matrix
    """(switches, groups): ``land[w, X]``."""
    land_from: FloatArray
    """(switches, switches): ``land[w, group(s)]`` at [s, w], the weight of Valiant's first legs."""
    apart: FloatArray
    """(switches, switches): 1 where the two switches are in different groups, else 0."""
    starts: IntArray
    """First switch of every group (a group's switches are consecutive)."""
    legs: Legs


def demand_of(
    fabric: Fabric, src: IntArray, dst: IntArray, size: FloatArray, legs: Legs | None = None
) -> Demand:
    """The phase's bytes per switch pair, and the plane's legs (walked here when not given)."""
    first, n = fabric.first_switch, fabric.switches
    legs = walk_legs(fabric) if legs is None else legs
    up = np.zeros(n, dtype=bool)  # switches with an alive link to another switch
    alive_links = np.flatnonzero(fabric.alive) // 2
    alive_links = alive_links[fabric.lower[alive_links] >= first]
    up[np.concatenate([fabric.lower[alive_links], fabric.upper[alive_links]]) - first] = True
    s_leaf = fabric.leaf_of(np.asarray(src, dtype=np.int64)) - first
    t_leaf = fabric.leaf_of(np.asarray(dst, dtype=np.int64)) - first
    keep = (s_leaf != t_leaf) & up[s_leaf] & up[t_leaf]
    key, inverse = np.unique(s_leaf[keep] * n + t_leaf[keep], return_inverse=True)
    volume = np.bincount(
        inverse.ravel(), weights=np.asarray(size, dtype=np.float64)[keep], minlength=key.size
    ).astype(np.float64)
    s, t = key // n, key % n
    group = switch_groups(fabric)
    groups = int(group.max()) + 1
    ptr, land_at, share = landings(fabric, group)
    source = np.repeat(np.arange(groups), np.diff(ptr))
    land = np.zeros((n, groups))
    np.add.at(land, (land_at, source), np.where(up[land_at], share, 0.0))
    spread_in = np.zeros((groups, groups))
    np.add.at(spread_in, (source, group[land_at]), np.where(up[land_at], share, 0.0))
    x, d_group = group[s], group[t]
    room = spread_in.sum(axis=1)[x] - spread_in[x, d_group]
    can_valiant = (x != d_group) & (groups >= 3) & (room > 1e-12)
    norm = np.where(can_valiant, 1.0 / np.where(can_valiant, room, 1.0), 0.0)
    has_minimal = legs.reached[s, t]
    return Demand(
        s,
        t,
        volume,
        x,
        d_group,
        can_valiant & has_minimal,
        np.where(has_minimal, 1.0, 0.0),
        norm,
        group,
        sp.csr_matrix(land),
        np.ascontiguousarray(land[:, group].T),
        (group[:, None] != group[None, :]).astype(np.float64),
        np.flatnonzero(np.r_[True, group[1:] != group[:-1]]),
        legs,
    )


def _sums(index: IntArray, values: FloatArray, shape: tuple[int, int]) -> FloatArray:
    """A dense (rows, columns) table of ``values`` added up at flat ``index``."""
    out = np.bincount(index, weights=values, minlength=shape[0] * shape[1])
    return out.astype(np.float64).reshape(shape)


def leg_bytes(d: Demand, alpha: FloatArray) -> FloatArray:
    """Bytes on every leg (n, n) under minimal shares ``alpha`` (step 1).

    Minimal: a pair's share on its own leg. Valiant's first legs s -> w carry, for every pair
    from s whose destination group is not w's, its Valiant bytes times w's weight; its second
    legs w -> t, for every pair into t from a group X that lands on w, the same (``Demand``).
    """
    n, groups = d.land.shape
    out = _sums(d.s * n + d.t, d.bytes * alpha, (n, n))
    valiant = d.bytes * (1.0 - alpha) * d.norm
    to_group = _sums(d.s * groups + d.dest_group, valiant, (n, groups))
    out += d.land_from * (to_group.sum(axis=1)[:, None] - to_group[:, d.group])
    from_group = _sums(d.source_group * n + d.t, valiant, (groups, n))
    out += np.asarray(d.land @ from_group) * d.apart
    return out


def link_loads(d: Demand, alpha: FloatArray) -> FloatArray:
    """Bytes over capacity on every directed bundle under minimal shares ``alpha``."""
    load = d.legs.matrix @ leg_bytes(d, alpha).ravel()
    cap = d.legs.capacity
    return np.where(cap > 0, load / np.where(cap > 0, cap, 1.0), 0.0)


def valiant_mean(d: Demand, first: FloatArray, second: FloatArray | None) -> FloatArray:
    """Per pair, the mean over Valiant's landings w of first[s, w] + second[w, t]."""
    weighted = first * d.land_from  # (s, w): first[s, w] land[w, group(s)]
    by_group = np.add.reduceat(weighted, d.starts, axis=1)
    one = weighted.sum(axis=1)[d.s] - by_group[d.s, d.dest_group]
    if second is None:
        return d.norm * one
    two = np.asarray(d.land.T @ (second * d.apart))[d.source_group, d.t]
    return d.norm * (one + two)


#: A cost rule: (demand, every bundle's load over the busiest's, steepness) -> (minimal,
#: Valiant) cost of every pair.
Costs = Callable[[Demand, FloatArray, float], tuple[FloatArray, FloatArray]]


def price(rho: FloatArray, steepness: float) -> FloatArray:
    """A link's price at utilisation rho (step 2): exp(steepness (rho - 1))."""
    return np.exp(steepness * (rho - 1.0))


def global_costs(d: Demand, rho: FloatArray, steepness: float) -> tuple[FloatArray, FloatArray]:
    """UGAL-G: the sum of the prices of every link of the path (Valiant's mean over landings)."""
    n = d.land.shape[0]
    leg = (d.legs.matrix.T @ price(rho, steepness)).reshape(n, n)
    return leg[d.s, d.t], valiant_mean(d, leg, leg)


def local_costs(d: Demand, rho: FloatArray, steepness: float) -> tuple[FloatArray, FloatArray]:
    """UGAL-L: hops x the price of the busiest link the source sees (up to the first global)."""
    n = d.land.shape[0]
    busy = _column_max(d.legs.seen, price(rho, steepness)).reshape(n, n)
    hops = d.legs.hops
    c_min = hops[d.s, d.t] * busy[d.s, d.t]
    return c_min, valiant_mean(d, hops, hops) * valiant_mean(d, busy, None)


def soft_max(load: FloatArray, scale: float, steepness: float) -> float:
    """The soft maximum of ``load / scale`` (log-sum-exp at ``steepness``).

    The busiest link's utilisation, smoothed: what the line search of UGAL-G's rounds minimises.
    """
    x = load / scale
    top = float(x.max())
    return top + float(np.log(np.exp(steepness * (x - top)).sum())) / steepness


def line_step(load: FloatArray, change: FloatArray, steepness: float) -> float:
    """The share of the way to the round's decisions that least loads the busiest link.

    The soft maximum of ``load + step change`` is convex in the step: a ternary search over
    [0, 1] (``LINE_SEARCH_STEPS`` halvings of the bracket by a third).
    """
    scale = float(load.max())
    lo, hi = 0.0, 1.0
    for _ in range(LINE_SEARCH_STEPS):
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if soft_max(load + a * change, scale, steepness) <= soft_max(
            load + b * change, scale, steepness
        ):
            hi = b
        else:
            lo = a
    return (lo + hi) / 2


def splits(d: Demand, costs: Costs, rounds: int, search: bool) -> FloatArray:
    """Every pair's minimal share after ``rounds`` rounds (module docstring, steps 1-4).

    ``search`` (UGAL-G, which sees the whole plane): each round moves the share of the way to
    its decisions that least loads the busiest link, and the rounds run twice, from minimal and
    from Valiant routing, keeping the splits whose busiest link is less loaded; else (UGAL-L)
    from minimal only, each round moving 2 / (round + 3) of the way.
    """
    minimal = d.alpha.copy()
    minimal[d.choice] = 1.0
    if not search:
        return _rounds(d, costs, rounds, minimal, search)
    valiant = d.alpha.copy()
    valiant[d.choice] = 0.0
    runs = [_rounds(d, costs, rounds, start, search) for start in (minimal, valiant)]
    return min(runs, key=lambda alpha: float(link_loads(d, alpha).max()))


def _rounds(d: Demand, costs: Costs, rounds: int, alpha: FloatArray, search: bool) -> FloatArray:
    """The splits after ``rounds`` rounds from ``alpha`` (``splits``)."""
    alpha = alpha.copy()
    load = link_loads(d, alpha)
    for k in range(rounds):
        top = float(load.max()) if load.size else 0.0
        if top <= 0:
            break
        steepness = STEEPNESS_START * (STEEPNESS_END / STEEPNESS_START) ** (k / max(rounds - 1, 1))
        c_min, c_val = costs(d, load / top, steepness)
        target = alpha.copy()
        target[d.choice] = (c_min[d.choice] <= c_val[d.choice]).astype(np.float64)
        change = link_loads(d, target) - load
        step = line_step(load, change, steepness) if search else 2.0 / (k + 3.0)
        alpha += step * (target - alpha)
        load += step * change
    return np.where(alpha < MIN_SHARE, 0.0, np.where(alpha > 1 - MIN_SHARE, 1.0, alpha))


def weighted(fabric: Fabric, d: Demand, alpha: FloatArray) -> Fabric:
    """The plane routed by UGAL with these minimal shares (``GroupWeights`` over switches).

    The weights also say, of the traffic between groups, the share sent minimally and the mean
    number of global links it crosses (1 minimal, 2 through an intermediate group).
    """
    n = fabric.switches
    part = np.flatnonzero(alpha < 1.0)
    both = part[alpha[part] > 0]
    s = np.concatenate([d.s[part], d.s[both]])
    t = np.concatenate([d.t[part], d.t[both]])
    via = np.concatenate([np.full(part.size, SPREAD), d.t[both]])
    w = np.concatenate([1.0 - alpha[part], alpha[both]])
    across = d.source_group != d.dest_group
    volume = float(d.bytes[across].sum())
    direct = float((d.bytes * alpha)[across].sum()) / volume if volume > 0 else None
    weights = GroupWeights.of(n, s, t, via, w, direct, None if direct is None else 2.0 - direct)
    return replace(fabric, strategy=UGAL, adapt=None, group_weights=weights)


#: Phases whose splits an adapt hook keeps (``Ugal``): the routings, seeds, failures and the
#: report of one simulation ask again for the same few phases; and planes whose legs it keeps.
KEPT_PHASES = 16
KEPT_PLANES = 2


def _digest(*parts: npt.NDArray[np.generic] | bytes) -> bytes:
    """A short hash of arrays (and digests), the key of what ``Ugal`` keeps."""
    key = hashlib.blake2b(digest_size=16)
    for part in parts:
        key.update(part if isinstance(part, bytes) else np.ascontiguousarray(part).tobytes())
    return key.digest()


@dataclass(frozen=True, eq=False)
class Ugal:
    """An adapt hook (``Fabric.adapt``) that sets UGAL's splits by ``costs`` (``splits``).

    The weights of the last ``KEPT_PHASES`` (phase, plane) are kept, keyed by the bytes of the
    flows and of the plane's links and alive mask, so one simulation computes each once.
    """

    costs: Costs
    rounds: int
    search: bool
    kept: OrderedDict[bytes, GroupWeights] = field(default_factory=OrderedDict)
    planes: OrderedDict[bytes, Legs] = field(default_factory=OrderedDict)
    """The legs of the last ``KEPT_PLANES`` planes (healthy, failed): every phase reuses them."""

    def __call__(self, fabric: Fabric, src: IntArray, dst: IntArray, size: FloatArray) -> Fabric:
        """The plane routed by UGAL with splits set for this demand."""
        plane = _digest(fabric.lower, fabric.upper, fabric.alive)
        digest = _digest(src, dst, size, plane)
        if digest not in self.kept:
            if plane not in self.planes:
                self.planes[plane] = walk_legs(fabric)
                while len(self.planes) > KEPT_PLANES:
                    self.planes.popitem(last=False)
            d = demand_of(fabric, src, dst, size, self.planes[plane])
            out = weighted(fabric, d, splits(d, self.costs, self.rounds, self.search))
            assert out.group_weights is not None
            self.kept[digest] = out.group_weights
            while len(self.kept) > KEPT_PHASES:
                self.kept.popitem(last=False)
        self.kept.move_to_end(digest)
        return replace(fabric, strategy=UGAL, adapt=None, group_weights=self.kept[digest])


def adapt_global() -> Ugal:
    """UGAL-G's adapt hook (module docstring)."""
    return Ugal(global_costs, ROUNDS_GLOBAL, search=True)


def adapt_local() -> Ugal:
    """UGAL-L's adapt hook (module docstring)."""
    return Ugal(local_costs, ROUNDS_LOCAL, search=False)
