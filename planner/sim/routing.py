"""Routes of flows over a fabric: per-flow ECMP with a real hash, and packet spraying.

Strategies. Which next hops a switch may take is the fabric's routing strategy
(``Fabric.strategy``, looked up in ``STRATEGIES``). A strategy maps the fabric and a set of
destination leaves (a destination GPU's first switch) to ``NextHops``: the hop distance
``dist(v, l)`` from every switch v to every destination leaf l over the links it may use (alive
ones only), and optionally an ``allowed(link, l)`` rule. The equal-cost next hops of v towards l
are then the alive links v -> w with

    allowed(v -> w, l)  and  dist(w, l) = dist(v, l) - 1       (parallel links are separate hops)

so ECMP and spraying run unchanged on every strategy. Registered strategies:

* ``up_down`` (folded Clos, OCS direct-connect): valley-free. A packet climbs until it reaches a
  switch whose subtree holds the destination leaf, then descends. ``leaf_distances`` computes
  that distance tier by tier from the top: a switch at tier t is t - 1 hops from a leaf below it,
  else one more than its nearest parent. No extra rule.
* ``dimension_order`` (tori, ``Fabric.dims``): DOR. Correct the lowest dimension whose coordinate
  differs first, moving the shorter way round its ring; when both ways are equally short (k even,
  ring distance k / 2) both directions are next hops. ``dist`` is the sum of ring distances when
  every ring segment of some DOR path is alive, else unreachable; the rule allows only links of
  the lowest differing dimension. A failed link thus removes the next hops whose DOR path needs it,
  and a flow with no alive DOR path is cut off.
* ``shortest_path``: minimal hop count over the alive switch-to-switch links (any direction, any
  dimension); no extra rule.

ECMP. Each flow carries a 5-tuple (source GPU, destination GPU, UDP source port from its flow id,
RoCEv2 destination port 4791, protocol 17). Every switch hashes the tuple with its own salt and the
run's seed (a 64-bit finaliser, as switch ASICs do with CRC variants) and takes the next hop at
index hash mod (number of equal-cost next hops). Collisions are the point: two flows can land on
one link while another stays empty.

Spraying. Every switch splits a flow evenly over all its equal-cost next hops (a fluid model of
per-packet spraying). All flows between the same pair of leaves then share one pattern of link
fractions, so the routes keep one column per leaf pair instead of one per flow.

Routes are a sparse matrix (links x flows) of the fraction of each flow on each directed link,
held in two parts: the explicit part (the NIC links of every flow, and for ECMP the whole path)
and, for spraying, a pattern matrix (links x leaf pairs) with the pattern of each flow.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, shortest_path

from planner.deadline import NO_DEADLINE, Deadline, Watch, watch
from planner.sim.ecmp_index import EcmpIndex, ecmp_index, known_picks, row_ids
from planner.sim.fabric import BoolArray, Fabric, FloatArray, IntArray

#: Distance of a leaf that cannot be reached.
UNREACHABLE = np.int16(32_000)
#: Largest number of (switch, destination leaf) candidate entries expanded at once.
EXPAND_CHUNK = 4_000_000
#: RoCEv2 UDP destination port, and the first ephemeral source port.
ROCE_PORT = 4791
SPORT_BASE = 49_152
SPORT_RANGE = 16_384
UDP = 17


class Routing(StrEnum):
    """How switches spread flows over equal-cost next hops."""

    ECMP = "ecmp"
    SPRAY = "spray"


def fmix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The 64-bit finaliser of MurmurHash3: a fast, well-mixing hash of unsigned integers."""
    x = x ^ (x >> np.uint64(33))
    x = x * np.uint64(0xFF51AFD7ED558CCD)
    x = x ^ (x >> np.uint64(33))
    x = x * np.uint64(0xC4CEB9FE1A85EC53)
    return x ^ (x >> np.uint64(33))


def flow_keys(src: IntArray, dst: IntArray, flow_id: IntArray, seed: int) -> npt.NDArray[np.uint64]:
    """Hash of each flow's 5-tuple and the run's seed."""
    sport = SPORT_BASE + (flow_id % SPORT_RANGE)
    with np.errstate(over="ignore"):
        k = fmix64(
            src.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed & 0xFFFFFFFF)
        )
        k = fmix64(k ^ (dst.astype(np.uint64) << np.uint64(20)))
        k = fmix64(k ^ (sport.astype(np.uint64) << np.uint64(16)) ^ np.uint64(ROCE_PORT << 8 | UDP))
    return k


def _parents(fabric: Fabric, tier: int) -> IntArray:
    """Alive distinct parents of every switch of a tier, padded with -1: shape (switches, most)."""
    off = fabric.tier_offsets
    up_alive = fabric.alive[0::2]
    sel = (fabric.link_class == tier) & up_alive
    child = fabric.lower[sel] - off[tier]
    parent = fabric.upper[sel] - off[tier + 1]
    n = off[tier + 1] - off[tier]
    pairs = np.sort(child * (off[tier + 2] - off[tier + 1]) + parent)
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]][: pairs.size]]  # distinct, by sorting
    n_up = off[tier + 2] - off[tier + 1]
    child, parent = pairs // n_up, pairs % n_up
    counts = np.bincount(child, minlength=n)
    width = int(counts.max()) if counts.size and counts.max() > 0 else 0
    out = np.full((n, max(width, 1)), -1, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(child.size) - starts[child]
    out[child, slot] = parent
    return out


def _distinct_rows(block: BoolArray) -> tuple[BoolArray, IntArray]:
    """The distinct rows of a boolean table, and each row's index among them."""
    packed = np.packbits(block, axis=1)
    keys = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return block[first], inverse.ravel().astype(np.int64)


def _down_reach(fabric: Fabric, leaves: IntArray) -> list[BoolArray]:
    """For each tier t >= 1: which of the given destination leaves each tier-t switch reaches going down.

    A switch reaches what its children reach: reach_t = adj_t @ reach_(t-1) as booleans. The
    product runs over the distinct rows of reach_(t-1) only (the spines of a pod reach the same
    leaves), so its work is (switches x distinct children's rows x leaves), not the links'.
    """
    off = fabric.tier_offsets
    n_leaf = off[2] - off[1]
    reach = [np.zeros((0, leaves.size), dtype=bool)]
    eye = np.zeros((n_leaf, leaves.size), dtype=bool)
    eye[leaves - off[1], np.arange(leaves.size)] = True
    reach.append(eye)
    down_alive = fabric.alive[1::2]
    distinct, which = eye, np.arange(n_leaf)
    for t in range(2, fabric.tiers + 1):
        sel = (fabric.link_class == t - 1) & down_alive
        rows = fabric.upper[sel] - off[t]
        cols = fabric.lower[sel] - off[t - 1]
        n_rows = off[t + 1] - off[t]
        if t == 2:  # the tier below is the identity on the chosen leaves: gather columns
            col_of = np.full(n_leaf, -1, dtype=np.int64)
            col_of[leaves - off[1]] = np.arange(leaves.size)
            keep = col_of[cols] >= 0
            r = np.zeros((n_rows, leaves.size), dtype=bool)
            r[rows[keep], col_of[cols[keep]]] = True
        else:
            shape = (n_rows, distinct.shape[0])
            adj = sp.csr_matrix((np.ones(rows.size, dtype=np.float32), (rows, which[cols])), shape)
            adj.sum_duplicates()
            r = np.asarray(adj @ distinct.astype(np.float32)) > 0
        reach.append(r)
        distinct, which = _distinct_rows(r)
    return reach


def leaf_distances(fabric: Fabric, leaves: IntArray) -> npt.NDArray[np.int16]:
    """Up-down hop distance from every switch to each of the given destination leaves (node ids).

    Shape (switches, len(leaves)), row = node id - first leaf id; UNREACHABLE where no
    valley-free path of alive links exists. GPUs are left out: paths start and end at leaves.
    Switches with the same parents get the same minimum over them, computed once per parent set.
    """
    off = fabric.tier_offsets
    leaves = np.asarray(leaves, dtype=np.int64)
    dist = np.full((fabric.nodes - off[1], leaves.size), UNREACHABLE, dtype=np.int16)
    reach = _down_reach(fabric, leaves)
    above: npt.NDArray[np.int16] | None = None
    for t in range(fabric.tiers, 0, -1):
        d = np.where(reach[t], np.int16(t - 1), UNREACHABLE).astype(np.int16)
        if above is not None and t < fabric.tiers:
            parents = _parents(fabric, t)
            sets, inverse = np.unique(parents, axis=0, return_inverse=True)
            padded = np.vstack([above, np.full((1, leaves.size), UNREACHABLE, dtype=np.int16)])
            best = np.full((sets.shape[0], leaves.size), UNREACHABLE, dtype=np.int16)
            for j in range(sets.shape[1]):
                np.minimum(best, padded[sets[:, j]], out=best)
            via_up = np.where(best < UNREACHABLE, best + 1, UNREACHABLE).astype(np.int16)
            d = np.minimum(d, via_up[inverse.ravel()])
        dist[off[t] - off[1] : off[t + 1] - off[1]] = d
        above = d
    return dist


# ---- routing strategies --------------------------------------------------------------------
#: A rule on candidate next hops: (directed link ids, destination leaf node ids) -> allowed.
LinkRule = Callable[[IntArray, IntArray], BoolArray]


@dataclass(frozen=True)
class NextHops:
    """What a strategy tells the switches about a set of destination leaves.

    The next hops of switch v towards leaf l are the alive links v -> w with
    ``allowed(v -> w, l)`` and ``dist[w, l] = dist[v, l] - 1``.
    """

    dist: npt.NDArray[np.int16]
    """Hop distance (switches, leaves), row = node id - first switch; UNREACHABLE when cut off."""
    allowed: LinkRule | None = None
    """Extra rule on next hops; None: every alive link that brings the packet one hop closer."""


#: A routing strategy: (fabric, destination leaves as node ids, sorted and unique) -> NextHops.
Strategy = Callable[[Fabric, IntArray], NextHops]

#: Routing strategies by name (``Fabric.strategy``); add one with ``register_strategy``.
STRATEGIES: dict[str, Strategy] = {}


def register_strategy(name: str) -> Callable[[Strategy], Strategy]:
    """Register a strategy under ``name`` (a decorator); fabrics select it by ``strategy=name``."""

    def add(strategy: Strategy) -> Strategy:
        STRATEGIES[name] = strategy
        return strategy

    return add


def strategy_of(fabric: Fabric) -> Strategy:
    """The strategy a fabric names; ValueError listing the known ones when there is none."""
    try:
        return STRATEGIES[fabric.strategy]
    except KeyError:
        raise ValueError(
            f"unknown routing strategy {fabric.strategy!r}; known: {', '.join(sorted(STRATEGIES))}"
        ) from None


def distances(fabric: Fabric, leaves: IntArray) -> npt.NDArray[np.int16]:
    """Hop distance from every switch to each destination leaf under the fabric's strategy.

    Shape (switches, len(leaves)), row = node id - first switch; UNREACHABLE where cut off.
    """
    leaves = np.asarray(leaves, dtype=np.int64)
    uniq, inverse = np.unique(leaves, return_inverse=True)
    return strategy_of(fabric)(fabric, uniq).dist[:, inverse.ravel()]


@register_strategy("up_down")
def up_down(fabric: Fabric, leaves: IntArray) -> NextHops:
    """Valley-free routing of tiered fabrics (``leaf_distances``), no extra rule."""
    return NextHops(leaf_distances(fabric, leaves))


@register_strategy("shortest_path")
def minimal_hops(fabric: Fabric, leaves: IntArray) -> NextHops:
    """Minimal hop count over alive switch-to-switch links (BFS towards every leaf).

    dist(v, l) = min over alive paths v -> ... -> l of switch hops; GPUs are never transit.
    """
    first = fabric.first_switch
    n = fabric.switches
    src, dst = fabric.src, fabric.dst
    keep = fabric.alive & (src >= first) & (dst >= first)
    # Reversed graph, so a search from each leaf gives the distance *to* it.
    graph = sp.csr_matrix(
        (np.ones(int(keep.sum())), (dst[keep] - first, src[keep] - first)), shape=(n, n)
    )
    d = shortest_path(graph, method="D", unweighted=True, indices=leaves - first)
    d = np.atleast_2d(d).T
    out = np.full(d.shape, UNREACHABLE, dtype=np.int16)
    finite = np.isfinite(d)
    out[finite] = d[finite].astype(np.int16)
    return NextHops(out)


def _ring_hops(fabric: Fabric) -> tuple[IntArray, BoolArray, BoolArray]:
    """Torus structure of the links: their dimensions and the alive ring steps.

    Returns the dimension of every directed link (-1 when it is no ring step), and per dimension
    and switch whether an alive link steps +1 (resp. -1) along that dimension.
    """
    first, coords, dims = fabric.first_switch, fabric.coords, np.asarray(fabric.dims)
    src, dst = fabric.src, fabric.dst
    link_dim = np.full(fabric.links, -1, dtype=np.int64)
    sw = np.flatnonzero((src >= first) & (dst >= first))
    diff = coords[src[sw] - first] != coords[dst[sw] - first]
    one_dim = diff.sum(axis=1) == 1
    sw, d = sw[one_dim], np.argmax(diff[one_dim], axis=1)
    k = dims[d]
    step = (coords[dst[sw] - first, d] - coords[src[sw] - first, d]) % k
    is_plus, is_minus = step == 1, step == k - 1
    ring = is_plus | is_minus
    link_dim[sw[ring]] = d[ring]
    plus = np.zeros((dims.size, fabric.switches), dtype=bool)
    minus = np.zeros_like(plus)
    ok = fabric.alive[sw]
    plus[d[ok & is_plus], src[sw[ok & is_plus]] - first] = True
    minus[d[ok & is_minus], src[sw[ok & is_minus]] - first] = True
    return link_dim, plus, minus


def _runs(coords: IntArray, dims: tuple[int, ...], hop: BoolArray, sign: int) -> IntArray:
    """Per dimension and switch: alive hops in a row from the switch in direction ``sign``.

    Counted up to k // 2, the longest minimal ring segment.
    """
    n = coords.shape[0]
    out = np.zeros((len(dims), n), dtype=np.int64)
    stride = 1
    for d, k in enumerate(dims):
        at = np.arange(n)
        ok = np.ones(n, dtype=bool)
        for _ in range(k // 2):
            ok &= hop[d, at]
            out[d] += ok
            c = (at // stride) % k
            at = at + (((c + sign) % k) - c) * stride
        stride *= k
    return out


@register_strategy("dimension_order")
def dimension_order(fabric: Fabric, leaves: IntArray) -> NextHops:
    """Dimension-order routing on a torus (``Fabric.dims``): see the module docstring.

    With p_0 = v and p_{d+1} = p_d with coordinate d set to l's, and a = p_d[d], b = l[d],
    up = (b - a) mod k_d, down = (a - b) mod k_d:

        dist(v, l) = sum_d min(up, down)   if every d has an alive minimal arc from p_d, else
                     UNREACHABLE,

    where the + arc is alive when run_+(p_d) >= up (alive + hops in a row), the - arc likewise,
    and the minimal arcs are the shorter one, or both on a tie. The rule keeps the links of the
    lowest dimension in which the link's tail and l differ.
    """
    dims = fabric.dims
    if not dims or int(np.prod(dims)) != fabric.switches:
        raise ValueError(
            f"dimension_order routing needs torus dims whose product is the switch count "
            f"({fabric.switches}); got dims={dims}"
        )
    first, coords = fabric.first_switch, fabric.coords
    link_dim, plus, minus = _ring_hops(fabric)
    run_up, run_down = _runs(coords, dims, plus, 1), _runs(coords, dims, minus, -1)
    n, cols = fabric.switches, leaves - first
    dist = np.empty((n, cols.size), dtype=np.int16)
    chunk = max(1, EXPAND_CHUNK // max(n, 1))
    for a0 in range(0, cols.size, chunk):
        c = cols[a0 : a0 + chunk]
        cur = np.repeat(np.arange(n)[:, np.newaxis], c.size, axis=1)
        total = np.zeros(cur.shape, dtype=np.int64)
        ok = np.ones(cur.shape, dtype=bool)
        stride = 1
        for d, k in enumerate(dims):
            a, b = coords[cur, d], coords[c, d][np.newaxis, :]
            up, down = (b - a) % k, (a - b) % k
            up_ok, down_ok = run_up[d, cur] >= up, run_down[d, cur] >= down
            ok &= np.where(up < down, up_ok, np.where(down < up, down_ok, up_ok | down_ok))
            total += np.minimum(up, down)
            cur = cur + (b - a) * stride
            stride *= k
        dist[:, a0 : a0 + chunk] = np.where(ok, total, int(UNREACHABLE)).astype(np.int16)

    src = fabric.src

    def allowed(links: IntArray, dest: IntArray) -> BoolArray:
        """Links in the lowest dimension where the link's tail and the destination differ."""
        tail = src[links]
        to_switch = tail >= first
        lowest = np.full(links.size, -2, dtype=np.int64)
        diff = coords[tail[to_switch] - first] != coords[dest[to_switch] - first]
        lowest[to_switch] = np.argmax(diff, axis=1)
        return link_dim[links] == lowest

    return NextHops(dist, allowed)


#: Values per cell of the space above which ``distinct`` marks a table instead of sorting.
DISTINCT_DENSITY = 1 / 16


def distinct(values: IntArray, space: int) -> IntArray:
    """The distinct values among ``values`` (all in 0..space-1), sorted: ``np.unique``.

    When there are many of them for the space, they are marked in a table of ``space`` cells
    (linear time) instead of sorted.
    """
    if values.size < space * DISTINCT_DENSITY:
        return np.unique(values)
    seen = np.zeros(space, dtype=bool)
    seen[values] = True
    return np.flatnonzero(seen)


def _gather_ranges(ptr: IntArray, which: IntArray) -> IntArray:
    """Positions ptr[w] .. ptr[w+1]-1 for every w in ``which``, concatenated."""
    start, stop = ptr[which], ptr[which + 1]
    lengths = stop - start
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(start - np.cumsum(lengths) + lengths, lengths)
    return offsets + np.arange(total)


@dataclass(frozen=True)
class Routes:
    """Fractions of every flow on every directed link (links x flows), explicit plus patterns."""

    flows: int
    links: int
    explicit: sp.csr_matrix
    """links x flows: the NIC links of every flow and, for ECMP, its whole path."""
    patterns: sp.csr_matrix | None
    """links x leaf pairs: the spraying pattern of every leaf pair."""
    flow_pattern: IntArray
    """Pattern (leaf pair, or the up half of one) of each flow, -1 for none."""
    connected: BoolArray
    """Flows that have a route; the others are cut off by failures."""
    flow_pattern_down: IntArray | None = None
    """Second pattern of each flow (-1 for none), when spraying patterns are held in halves
    (``_spray_halves``): a flow's fractions are then the sum of its two patterns' columns."""

    @cached_property
    def _pattern_entries(self) -> tuple[IntArray, IntArray]:
        """(flow, pattern) of every pattern a flow uses (one or two per flow)."""
        flows = [np.flatnonzero(self.flow_pattern >= 0)]
        pats = [self.flow_pattern[flows[0]]]
        if self.flow_pattern_down is not None:
            flows.append(np.flatnonzero(self.flow_pattern_down >= 0))
            pats.append(self.flow_pattern_down[flows[1]])
        return np.concatenate(flows), np.concatenate(pats).astype(np.int64)

    def _patterns_of(self, flows: IntArray) -> IntArray:
        """Pattern ids (with repeats) used by these flows."""
        pats = [self.flow_pattern[flows]]
        if self.flow_pattern_down is not None:
            pats.append(self.flow_pattern_down[flows])
        out = np.concatenate(pats)
        return out[out >= 0]

    @cached_property
    def _by_flow(self) -> sp.csc_matrix:
        return self.explicit.tocsc()

    @cached_property
    def _flow_ptr(self) -> IntArray:
        return self._by_flow.indptr.astype(np.int64)

    @cached_property
    def _link_ptr(self) -> IntArray:
        return self.explicit.indptr.astype(np.int64)

    @cached_property
    def _pattern_link_ptr(self) -> IntArray:
        """The pattern matrix's row pointer (per link), as int64."""
        assert self.patterns is not None
        return self.patterns.indptr.astype(np.int64)

    @cached_property
    def components(self) -> tuple[IntArray, IntArray, int]:
        """Connected components of the link-flow graph: (component of each link, of each flow, count).

        Flows in different components share no link, so their rates and completions are
        independent; the simulator advances every component on its own clock.
        """
        L, M = self.links, self.flows
        coo = self.explicit.tocoo()
        rows = [coo.row.astype(np.int64)]
        cols = [L + coo.col.astype(np.int64)]
        n = L + M
        if self.patterns is not None:
            P = self.patterns.shape[1]
            pc = self.patterns.tocoo()
            rows.append(pc.row.astype(np.int64))
            cols.append(L + M + pc.col.astype(np.int64))
            has, pats = self._pattern_entries
            rows.append(L + has)
            cols.append(L + M + pats)
            n += P
        r, c = np.concatenate(rows), np.concatenate(cols)
        graph = sp.coo_matrix((np.ones(r.size, dtype=np.int8), (r, c)), shape=(n, n))
        count, label = connected_components(graph, directed=False)
        return label[:L].astype(np.int64), label[L : L + M].astype(np.int64), int(count)

    @cached_property
    def _pattern_flows(self) -> tuple[IntArray, IntArray]:
        """Flows grouped by pattern: (pointer per pattern, flow ids)."""
        n = 0 if self.patterns is None else self.patterns.shape[1]
        has, pats = self._pattern_entries
        order = has[np.argsort(pats, kind="stable")]
        ptr = np.concatenate([[0], np.cumsum(np.bincount(pats, minlength=n))])
        return ptr.astype(np.int64), order

    def _pattern_sum(self, per_flow: FloatArray) -> FloatArray:
        if self.patterns is None:
            return np.zeros(self.links)
        has, pats = self._pattern_entries
        per_pattern = np.bincount(pats, weights=per_flow[has], minlength=self.patterns.shape[1])
        return np.asarray(self.patterns @ per_pattern)

    def load(self, rate: FloatArray) -> FloatArray:
        """Traffic on every link for these flow rates."""
        return np.asarray(self.explicit @ rate) + self._pattern_sum(rate)

    def weight(self, active: BoolArray) -> FloatArray:
        """Sum over active flows of their fraction on every link."""
        return self.load(active.astype(np.float64))

    def square_load(self, per_flow: FloatArray) -> FloatArray:
        """Sum over flows of (fraction on the link)^2 x ``per_flow``, on every link.

        A flow's two halves (``flow_pattern_down``) cover disjoint links (climbs go up, descents
        down), so squaring each matrix's entries squares the flow's fractions.
        """
        out = np.asarray(self.explicit.power(2) @ per_flow)
        if self.patterns is not None:
            has, pats = self._pattern_entries
            per_pattern = np.bincount(pats, weights=per_flow[has], minlength=self.patterns.shape[1])
            out = out + np.asarray(self.patterns.power(2) @ per_pattern)
        return np.asarray(out, dtype=np.float64)

    def path_sum(self, per_link: FloatArray) -> FloatArray:
        """Per flow: the sum over links of its fraction there x ``per_link`` (its path average)."""
        out = np.asarray(self.explicit.T @ per_link, dtype=np.float64)
        if self.patterns is not None:
            per_pattern = np.asarray(self.patterns.T @ per_link)
            for column in (self.flow_pattern, self.flow_pattern_down):
                if column is not None:
                    on = column >= 0
                    out[on] += per_pattern[column[on]]
        return out

    def weight_of(self, flows: IntArray) -> FloatArray:
        """Sum over the given flows of their fraction on every link, touching only their entries."""
        links, fractions = self.entries_of(flows)
        out: FloatArray = np.bincount(links, weights=fractions, minlength=self.links).astype(
            np.float64
        )
        return out

    def entries_of(
        self, flows: IntArray, scale: FloatArray | None = None
    ) -> tuple[IntArray, FloatArray]:
        """(link, fraction) entries of the given flows, each times its ``scale`` (default 1).

        Links may repeat. A pattern that several of the flows share gives its column once,
        times the sum of their scales.
        """
        per_flow = np.ones(flows.size) if scale is None else np.asarray(scale, dtype=np.float64)
        csc = self._by_flow
        ptr = self._flow_ptr
        pos = _gather_ranges(ptr, flows)
        links = [csc.indices[pos].astype(np.int64)]
        fractions = [csc.data[pos] * np.repeat(per_flow, ptr[flows + 1] - ptr[flows])]
        if self.patterns is not None:
            pats = [self.flow_pattern[flows]]
            weights = [per_flow]
            if self.flow_pattern_down is not None:
                pats.append(self.flow_pattern_down[flows])
                weights.append(per_flow)
            pat, weight = np.concatenate(pats), np.concatenate(weights)
            has = pat >= 0
            if has.any():  # only these patterns' columns, each times its flows' scales
                uniq, inverse = np.unique(pat[has], return_inverse=True)
                times = np.bincount(inverse.ravel(), weights=weight[has], minlength=uniq.size)
                cptr, rows, data = self._patterns_by_column
                pos = _gather_ranges(cptr, uniq)
                links.append(rows[pos])
                fractions.append(data[pos] * np.repeat(times, cptr[uniq + 1] - cptr[uniq]))
        return np.concatenate(links), np.concatenate(fractions)

    @cached_property
    def _patterns_by_column(self) -> tuple[IntArray, IntArray, FloatArray]:
        """The pattern matrix by column: (pointer per pattern, link of each entry, fraction)."""
        assert self.patterns is not None
        csc = self.patterns.tocsc()
        csc.sort_indices()
        return csc.indptr.astype(np.int64), csc.indices.astype(np.int64), csc.data

    def flows_on_links(self, links: IntArray) -> IntArray:
        """Flows with a positive fraction on any of these links (unique ids)."""
        csr = self.explicit
        pos = _gather_ranges(self._link_ptr, links)
        parts = [csr.indices[pos][csr.data[pos] > 0].astype(np.int64)]
        if self.patterns is not None:
            p = self.patterns
            ppos = _gather_ranges(self._pattern_link_ptr, links)
            pats = distinct(p.indices[ppos][p.data[ppos] > 0], p.shape[1])
            ptr, flows = self._pattern_flows
            parts.append(flows[_gather_ranges(ptr, pats.astype(np.int64))])
        return distinct(np.concatenate(parts), self.flows)

    def touching(self, links: BoolArray) -> BoolArray:
        """Flows with a positive fraction on any of these links, as a mask."""
        hit = np.zeros(self.flows, dtype=bool)
        hit[self.flows_on_links(np.flatnonzero(links))] = True
        return hit

    def subset(self, flows: IntArray) -> Routes:
        """The routes of these flows only, renumbered 0..len(flows)-1."""
        return Routes(
            flows=int(flows.size),
            links=self.links,
            explicit=self._by_flow[:, flows].tocsr(),
            patterns=self.patterns,
            flow_pattern=self.flow_pattern[flows],
            connected=self.connected[flows],
            flow_pattern_down=(
                None if self.flow_pattern_down is None else self.flow_pattern_down[flows]
            ),
        )

    def flows_on(self) -> FloatArray:
        """Number of flows (by fraction) on every link, all flows counted."""
        return self.weight(self.connected)


def _out_links(fabric: Fabric) -> tuple[IntArray, IntArray]:
    """CSR of alive directed links by tail node: (pointer per node, link ids)."""
    src = fabric.src
    alive = np.flatnonzero(fabric.alive)
    order = alive[np.argsort(src[alive], kind="stable")]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(src[order], minlength=fabric.nodes))])
    return ptr, order


def _candidates(
    fabric: Fabric,
    dist: npt.NDArray[np.int16],
    allowed: LinkRule | None,
    col_of_leaf: IntArray,
    node: IntArray,
    dest_leaf: IntArray,
    out_ptr: IntArray,
    out_links: IntArray,
) -> tuple[IntArray, IntArray]:
    """Equal-cost next-hop links of each (node, destination leaf): (pointer per pair, link ids)."""
    deg = out_ptr[node + 1] - out_ptr[node]
    total = int(deg.sum())
    pair = np.repeat(np.arange(node.size), deg)
    first = np.repeat(out_ptr[node] - np.concatenate([[0], np.cumsum(deg)[:-1]]), deg)
    links = out_links[first + np.arange(total)]
    col = col_of_leaf[dest_leaf]
    first_switch = fabric.tier_offsets[1]
    here = dist[node - first_switch, col].astype(np.int64)
    head = fabric.dst[links]
    to_switch = head >= first_switch  # paths end at the destination leaf, never at a GPU
    there = np.full(links.size, int(UNREACHABLE), dtype=np.int64)
    there[to_switch] = dist[head[to_switch] - first_switch, col[pair[to_switch]]]
    keep = there == here[pair] - 1
    if allowed is not None:
        keep[keep] = allowed(links[keep], dest_leaf[pair[keep]])
    pair, links = pair[keep], links[keep]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(pair, minlength=node.size))])
    return ptr, links


#: Largest table of (major, minor) cells that ``_unique_pairs`` marks instead of sorting keys.
DENSE_CELLS = 1 << 25


def _unique_pairs(
    major: IntArray, minor: IntArray, minor_space: int
) -> tuple[IntArray, IntArray, IntArray]:
    """Distinct (major, minor) pairs in lexicographic order, and each pair's index among them.

    What ``np.unique(major * minor_space + minor, return_inverse=True)`` gives, but when the
    pairs fit a table of at most ``DENSE_CELLS`` cells (both sides renumbered over the values
    present), they are marked in it and counted instead of sorted: linear time.
    """
    if not major.size:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    major_values, major_local = _renumber(major, int(major.max()) + 1)
    minor_values, minor_local = _renumber(minor, minor_space)
    width = minor_values.size
    if major_values.size * width > DENSE_CELLS:
        uniq, inverse = np.unique(major * minor_space + minor, return_inverse=True)
        return uniq // minor_space, uniq % minor_space, inverse.ravel()
    cell = major_local * width + minor_local
    seen = np.zeros(major_values.size * width, dtype=bool)
    seen[cell] = True
    marked = np.flatnonzero(seen)
    rank = np.cumsum(seen) - 1
    return major_values[marked // width], minor_values[marked % width], rank[cell]


def _renumber(values: IntArray, space: int) -> tuple[IntArray, IntArray]:
    """The distinct values (sorted, from 0..space-1) and each value's index among them."""
    present = np.zeros(space, dtype=bool)
    present[values] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[values]


#: Work of finding stand-in leaves for a tier, per (switch of the tier, leaf column), in units
#: of one candidate next hop expanded (``_Walk.stand_ins_for``).
STAND_IN_COST = 4.0


@dataclass(frozen=True)
class _Walk:
    fabric: Fabric
    dist: npt.NDArray[np.int16]
    allowed: LinkRule | None
    col_of_leaf: IntArray
    out_ptr: IntArray
    out_links: IntArray
    check: Watch = field(default_factory=lambda: watch(NO_DEADLINE))
    """The step's deadline, checked once per hop of the walks."""
    stand_ins: dict[int, IntArray] = field(default_factory=dict)
    """Per tier: the destination leaf that stands in for each leaf column (``stand_in``)."""
    indexes: dict[str, EcmpIndex] = field(default_factory=dict)
    """The ``EcmpIndex`` of the walk, once built."""

    def ecmp_index(self) -> EcmpIndex | None:
        """Next hops known from the switch alone (``planner.sim.ecmp_index``); None off up-down."""
        if self.fabric.strategy != "up_down" or self.allowed is not None:
            return None
        if "ecmp" not in self.indexes:
            self.indexes["ecmp"] = ecmp_index(self.fabric, self.dist, self.out_ptr, self.out_links)
        return self.indexes["ecmp"]

    def stand_in(self, tier: int) -> IntArray:
        """For every leaf column, a leaf with the same next hops from every switch of ``tier``.

        The next hops of v towards l are read from dist(v, l) and dist(w, l) over v's heads w
        (and, on up-down fabrics, no rule), so leaves whose distance columns agree over the
        tier's switches and their heads have the same next hops there: towards a leaf of
        another pod, a core of a Clos sees only the pod. The least such leaf stands in.
        """
        if tier not in self.stand_ins:
            fabric = self.fabric
            first, off = fabric.first_switch, fabric.tier_offsets
            tails = np.arange(off[tier], off[tier + 1])
            heads = self.out_links[_gather_ranges(self.out_ptr, tails)]
            heads = fabric.dst[heads]
            if (fabric.tier_of(heads) == 1).any():  # a leaf's own row tells it apart
                self.stand_ins[tier] = np.flatnonzero(self.col_of_leaf >= 0)
                return self.stand_ins[tier]
            rows = np.union1d(tails, heads[heads >= first]) - first
            ids = row_ids(self.dist[rows].T)
            least = np.full(int(ids.max()) + 1 if ids.size else 0, -1, dtype=np.int64)
            least[ids[::-1]] = np.arange(ids.size)[::-1]
            leaves = np.flatnonzero(self.col_of_leaf >= 0)
            self.stand_ins[tier] = leaves[least[ids]]
        return self.stand_ins[tier]

    def stand_ins_for(self, node: IntArray, dest_leaf: IntArray) -> IntArray:
        """Destination leaves with the same next hops from these nodes (up-down fabrics)."""
        fabric = self.fabric
        if fabric.strategy != "up_down" or self.allowed is not None or not node.size:
            return dest_leaf
        tier = fabric.tier_of(node)
        col = self.col_of_leaf[dest_leaf]
        out = dest_leaf.copy()
        off = fabric.tier_offsets
        for t in np.unique(tier).tolist():
            at = tier == t
            switches = off[t + 1] - off[t]
            degree = (self.out_ptr[off[t + 1]] - self.out_ptr[off[t]]) / max(switches, 1)
            # Worth it when the next hops to expand outnumber the distances to compare.
            if t not in self.stand_ins and at.sum() * degree < STAND_IN_COST * (
                switches * self.dist.shape[1]
            ):
                continue
            out[at] = self.stand_in(int(t))[col[at]]
        return out

    def candidates(
        self, node: IntArray, dest_leaf: IntArray
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Candidates per unique (node, leaf) pair, chunked; returns (inverse, ptr, links)."""
        self.check.check()
        un, ul, inverse = _unique_pairs(
            node, self.stand_ins_for(node, dest_leaf), self.fabric.nodes
        )
        cum = np.cumsum(self.out_ptr[un + 1] - self.out_ptr[un])
        total = int(cum[-1]) if cum.size else 0
        cuts = np.searchsorted(cum, np.arange(EXPAND_CHUNK, total, EXPAND_CHUNK), side="right")
        bounds = np.unique(np.concatenate([[0], cuts, [un.size]]))
        ptrs, links, base = [np.zeros(1, dtype=np.int64)], [], 0
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            p, lk = _candidates(
                self.fabric,
                self.dist,
                self.allowed,
                self.col_of_leaf,
                un[a:b],
                ul[a:b],
                self.out_ptr,
                self.out_links,
            )
            ptrs.append(p[1:] + base)
            links.append(lk)
            base += lk.size
        all_links = np.concatenate(links) if links else np.zeros(0, dtype=np.int64)
        return inverse, np.concatenate(ptrs), all_links


#: Walks (distances, out links, stand-in leaves) kept for the fabrics and destination leaves
#: routed last: the traffics and routings of one simulation share them. A walk holds its
#: fabric and a (switches x leaves) int16 table (142 MB on ocs-65k), so only a few are kept:
#: enough for a route and the small one that estimated its size before it.
WALKS_KEPT = 2
_WALKS: OrderedDict[tuple[int, int], tuple[weakref.ref[Fabric], IntArray, _Walk]] = OrderedDict()


def _walker(fabric: Fabric, dest_leaves: IntArray, deadline: Deadline = NO_DEADLINE) -> _Walk:
    """Next-hop data towards these leaves, reused while the same fabric routes to the same set.

    A walk kept for a superset of the leaves serves too: a leaf's distance column and next hops
    do not depend on which other leaves share the table, and lookups go through ``col_of_leaf``.
    """
    leaves = np.unique(dest_leaves)
    key = (id(fabric), hash(leaves.tobytes()))
    kept = _WALKS.get(key)
    if kept is not None and kept[0]() is fabric and np.array_equal(kept[1], leaves):
        _WALKS.move_to_end(key)
        return replace(kept[2], check=watch(deadline))
    for other, (ref, _, walk) in reversed(_WALKS.items()):
        if ref() is fabric and bool(np.all(walk.col_of_leaf[leaves] >= 0)):
            _WALKS.move_to_end(other)
            return replace(walk, check=watch(deadline))
    col_of_leaf = np.full(fabric.nodes, -1, dtype=np.int64)
    col_of_leaf[leaves] = np.arange(leaves.size)
    ptr, links = _out_links(fabric)
    hops = strategy_of(fabric)(fabric, leaves)
    walk = _Walk(fabric, hops.dist, hops.allowed, col_of_leaf, ptr, links, watch(deadline))
    _WALKS[key] = (weakref.ref(fabric), leaves, walk)
    while len(_WALKS) > WALKS_KEPT:
        _WALKS.popitem(last=False)
    return walk


def prepare_routes(fabric: Fabric, dst: IntArray, deadline: Deadline = NO_DEADLINE) -> None:
    """Build (and keep) the next-hop data towards every leaf of ``dst``.

    Routes of any subset of these destinations on this fabric then reuse it: a phase routed in
    chunks (``planner.sim.streamed``) builds its distance table once, not once per chunk.
    """
    leaves = fabric.leaf_of(np.asarray(dst, dtype=np.int64))
    if leaves.size:
        _walker(fabric, leaves, deadline)


def route(
    fabric: Fabric,
    src: IntArray,
    dst: IntArray,
    routing: Routing,
    *,
    seed: int = 0,
    flow_id: IntArray | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> Routes:
    """Route GPU-to-GPU flows over one plane.

    Raises ``DeadlineExpired`` when ``deadline`` passes while the routes are being built.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    m = src.size
    flow_id = (
        np.arange(m, dtype=np.int64) if flow_id is None else np.asarray(flow_id, dtype=np.int64)
    )
    src_leaf, dst_leaf = fabric.leaf_of(src), fabric.leaf_of(dst)
    nic_ok = fabric.alive[2 * src] & fabric.alive[2 * dst + 1]
    rows = [2 * src, 2 * dst + 1]
    cols = [np.arange(m), np.arange(m)]
    vals = [np.ones(m), np.ones(m)]
    cross = np.flatnonzero((src_leaf != dst_leaf) & nic_ok)
    connected = nic_ok.copy()
    patterns: sp.csr_matrix | None = None
    flow_pattern = np.full(m, -1, dtype=np.int64)
    flow_pattern_down: IntArray | None = None
    if cross.size:
        walk = _walker(fabric, dst_leaf[cross], deadline)
        first_switch = fabric.tier_offsets[1]
        reach = (
            walk.dist[src_leaf[cross] - first_switch, walk.col_of_leaf[dst_leaf[cross]]]
            < UNREACHABLE
        )
        connected[cross[~reach]] = False
        cross = cross[reach]
    if cross.size:
        if routing is Routing.ECMP:
            r, c = _ecmp_paths(
                walk,
                cross,
                src_leaf[cross],
                dst_leaf[cross],
                flow_keys(src[cross], dst[cross], flow_id[cross], seed),
                seed,
            )
            rows.append(r)
            cols.append(c)
            vals.append(np.ones(r.size))
        else:
            halves = _spray_halves(walk, src_leaf[cross], dst_leaf[cross])
            if halves is None:
                patterns, flow_pattern[cross] = _spray_patterns(
                    walk, src_leaf[cross], dst_leaf[cross]
                )
            else:
                patterns, flow_pattern[cross], down = halves
                flow_pattern_down = np.full(m, -1, dtype=np.int64)
                flow_pattern_down[cross] = down
    explicit = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(fabric.links, m),
    )
    explicit = explicit.multiply(connected[np.newaxis, :].astype(np.float64)).tocsr()
    return Routes(m, fabric.links, explicit, patterns, flow_pattern, connected, flow_pattern_down)


#: Peak bytes per nonzero of a spraying pattern while it is built and used (index and value
#: arrays, their sorted copies, the CSR/CSC forms): measured on b200-32k-800g, a random permutation
#: of 32,768 flows, 65.2 M pattern nonzeros, 5.1 GiB peak (issue 11).
BYTES_PER_PATTERN_ENTRY = 80.0
#: Peak bytes per explicit route entry (a flow on one link: its NIC links, and for ECMP each hop).
BYTES_PER_ROUTE_ENTRY = 120.0
#: Bytes per flow in the completion-time loop (rates, remaining bytes, masks, ids, ...).
BYTES_PER_FLOW = 200.0
#: Halves per leaf assumed by the estimate when spraying patterns are held in halves.
HALF_KEYS_PER_LEAF = 4
#: Leaf pairs (spraying) or flows (ECMP) routed to estimate the size of a phase's routes.
ESTIMATE_SAMPLE = 64


def estimate_route_bytes(
    fabric: Fabric, src: IntArray, dst: IntArray, routing: Routing, *, seed: int = 0
) -> float:
    """Peak bytes that routing these flows and sharing their rates will take (an estimate).

    Routes a small random sample (``ESTIMATE_SAMPLE`` leaf pairs for spraying, flows for ECMP)
    and scales its size to all of them: spraying holds one pattern per (source leaf, destination
    leaf), ECMP one entry per flow and hop.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    m = src.size
    if m == 0:
        return 0.0
    rng = np.random.default_rng(seed)
    src_leaf, dst_leaf = fabric.leaf_of(src), fabric.leaf_of(dst)
    cross = np.flatnonzero(src_leaf != dst_leaf)
    base = m * (BYTES_PER_FLOW + 2 * BYTES_PER_ROUTE_ENTRY)
    if cross.size == 0:
        return float(base)
    if routing is Routing.SPRAY:
        _, first = np.unique(src_leaf[cross] * fabric.nodes + dst_leaf[cross], return_index=True)
        pairs = cross[first]
        pick = rng.choice(pairs, size=min(ESTIMATE_SAMPLE, pairs.size), replace=False)
        sample = route(fabric, src[pick], dst[pick], routing, seed=seed)
        per_pair = sample.patterns.nnz / pick.size if sample.patterns is not None else 0.0
        patterns = float(pairs.size)
        if pairs.size >= HALVES_MIN_PAIRS and fabric.strategy == "up_down":
            # Held in halves (``_spray_halves``), each about half a pair's pattern (the second
            # / 2): a few climbs per source leaf and descents per destination leaf (2 on a
            # healthy Clos).
            leaves = np.unique(src_leaf[cross]).size + np.unique(dst_leaf[cross]).size
            patterns = min(patterns, HALF_KEYS_PER_LEAF * leaves / 2 / 2)
        return float(base + patterns * per_pair * BYTES_PER_PATTERN_ENTRY)
    pick = rng.choice(cross, size=min(ESTIMATE_SAMPLE, cross.size), replace=False)
    sample = route(fabric, src[pick], dst[pick], routing, seed=seed)
    per_flow = sample.explicit.nnz / pick.size
    return float(base + cross.size * per_flow * BYTES_PER_ROUTE_ENTRY)


def _check_next_hops(walk: _Walk, count: IntArray, node: IntArray, dest: IntArray) -> None:
    """Raise when a strategy leaves a reachable destination without a next hop."""
    if count.size and count.min() == 0:
        i = int(np.argmin(count))
        fabric = walk.fabric
        raise ValueError(
            f"routing strategy {fabric.strategy!r} gives no next hop at "
            f"{fabric.node_name(int(node[i]))} towards {fabric.node_name(int(dest[i]))}, "
            "although its distances say it is reachable"
        )


def _ecmp_paths(
    walk: _Walk,
    flows: IntArray,
    cur: IntArray,
    dest: IntArray,
    keys: npt.NDArray[np.uint64],
    seed: int,
) -> tuple[IntArray, IntArray]:
    """Walk every flow hop by hop, each switch hashing the flow onto one equal-cost next hop.

    Hops whose next hops the switch alone decides (``planner.sim.ecmp_index``) are picked from
    the index; the others list their candidates. Both give the same link.
    """
    rows, cols = [], []
    cur = cur.copy()
    left = np.arange(flows.size)
    dst_of = walk.fabric.dst
    first = walk.fabric.first_switch
    index = walk.ecmp_index()
    salt_base = np.uint64((seed * 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)
    while left.size:
        walk.check.check()
        node, dest_leaf = cur[left], dest[left]
        with np.errstate(over="ignore"):
            salt = fmix64(node.astype(np.uint64) + salt_base)
            hashes = fmix64(keys[left] ^ salt)
        link = np.empty(left.size, dtype=np.int64)
        listed = np.ones(left.size, dtype=bool)
        if index is not None:
            here = walk.dist[node - first, walk.col_of_leaf[dest_leaf]].astype(np.int64)
            known, count, picked = known_picks(index, here, node, dest_leaf, hashes)
            _check_next_hops(walk, count[known], node[known], dest_leaf[known])
            link[known] = picked[known]
            listed = ~known
        if listed.any():
            inverse, ptr, links = walk.candidates(node[listed], dest_leaf[listed])
            count = ptr[inverse + 1] - ptr[inverse]
            _check_next_hops(walk, count, node[listed], dest_leaf[listed])
            with np.errstate(over="ignore"):
                choice = (hashes[listed] % count.astype(np.uint64)).astype(np.int64)
            link[listed] = links[ptr[inverse] + choice]
        rows.append(link)
        cols.append(flows[left])
        cur[left] = dst_of[link]
        left = left[cur[left] != dest[left]]
    return np.concatenate(rows), np.concatenate(cols)


def _spray_patterns(
    walk: _Walk, src_leaf: IntArray, dst_leaf: IntArray
) -> tuple[sp.csr_matrix, IntArray]:
    """One pattern per (source leaf, destination leaf): the even split over every equal-cost path."""
    nodes = walk.fabric.nodes
    pair_key, flow_pattern = np.unique(src_leaf * nodes + dst_leaf, return_inverse=True)
    n_pat = pair_key.size
    rows, cols, vals, *_ = _spread(
        walk, np.arange(n_pat), pair_key // nodes, np.ones(n_pat), pair_key % nodes
    )
    matrix = sp.csr_matrix((vals, (rows, cols)), shape=(walk.fabric.links, n_pat))
    return matrix, flow_pattern.astype(np.int64)


# ---- spraying patterns in halves ---------------------------------------------------------------
#: Fewest distinct leaf pairs for which spraying patterns are built in halves; below it the
#: per-pair walk is cheaper than the checks the halves need.
HALVES_MIN_PAIRS = 2_048


def _spread(
    walk: _Walk,
    pat: IntArray,
    node: IntArray,
    mass: FloatArray,
    pat_dest: IntArray,
    stop: Callable[[IntArray, IntArray], BoolArray] | None = None,
) -> tuple[IntArray, IntArray, FloatArray, IntArray, IntArray, FloatArray]:
    """Spread each pattern's mass from its states over every equal-cost next hop to its leaf.

    States (pattern, node, mass) move one hop per round, every state splitting its mass evenly
    over its next hops and states of one pattern at one node merging (the arithmetic of
    ``_spray_patterns``). States at which ``stop(node, dest)`` holds leave the walk.
    Returns the entries (link, pattern, fraction) and the stopped states (pattern, node, mass).
    """
    nodes = walk.fabric.nodes
    dst_of = walk.fabric.dst
    rows, cols, vals = [], [], []
    s_pat, s_node, s_mass = [], [], []
    while pat.size:
        dest = pat_dest[pat]
        if stop is not None:
            halt = stop(node, dest)
            if halt.any():
                s_pat.append(pat[halt])
                s_node.append(node[halt])
                s_mass.append(mass[halt])
                go = ~halt
                pat, node, mass, dest = pat[go], node[go], mass[go], dest[go]
                if not pat.size:
                    break
        inverse, ptr, links = walk.candidates(node, dest)
        count = ptr[inverse + 1] - ptr[inverse]
        _check_next_hops(walk, count, node, dest)
        entry = np.repeat(np.arange(pat.size), count)
        offset = np.arange(entry.size) - np.repeat(np.cumsum(count) - count, count)
        link = links[ptr[inverse][entry] + offset]
        share = (mass / count)[entry]
        rows.append(link)
        cols.append(pat[entry])
        vals.append(share)
        nxt = dst_of[link]
        moving = nxt != dest[entry]
        pat, node, inv = _unique_pairs(pat[entry][moving], nxt[moving], nodes)
        mass = np.bincount(inv, weights=share[moving]).astype(np.float64, copy=False)

    def cat(parts: list[IntArray] | list[FloatArray], dtype: type) -> Any:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    return (
        cat(rows, np.int64),
        cat(cols, np.int64),
        cat(vals, np.float64),
        cat(s_pat, np.int64),
        cat(s_node, np.int64),
        cat(s_mass, np.float64),
    )


def _no_valleys(walk: _Walk, cols: IntArray) -> bool:
    """True when no switch that must climb towards a leaf has a downward equal-cost next hop.

    Then a walk climbs until it reaches a switch that reaches the leaf going down, and descends
    from there: what the halves assume.
    """
    f = walk.fabric
    first = f.first_switch
    src, dst = f.src, f.dst
    tier = f.tier_of(np.arange(f.nodes))
    down = np.flatnonzero(f.alive & (src >= first) & (dst >= first) & (tier[dst] < tier[src]))
    # Parallel links are one test.
    pairs = np.unique(src[down] * f.nodes + dst[down])
    tails, heads = pairs // f.nodes - first, pairs % f.nodes - first
    dist = walk.dist if cols.size == walk.dist.shape[1] else walk.dist[:, cols]
    turn = (tier[first:] - 1).astype(np.int16)
    step = max(1, EXPAND_CHUNK // max(1, dist.shape[1]))
    for a in range(0, tails.size, step):
        du, dc = dist[tails[a : a + step]], dist[heads[a : a + step]]
        valley = (dc == du - 1) & (du < UNREACHABLE) & (du != turn[tails[a : a + step], None])
        if valley.any():
            return False
    return True


def _ancestors(fabric: Fabric, leaves: IntArray) -> list[IntArray]:
    """Switches above each of these leaves over alive up links (node ids, sorted)."""
    first = fabric.first_switch
    src, dst = fabric.src, fabric.dst
    tier = fabric.tier_of(np.arange(fabric.nodes))
    up = np.flatnonzero(fabric.alive & (src >= first) & (tier[dst] > tier[src]))
    n = fabric.switches
    adj = sp.csr_matrix(
        (np.ones(up.size, dtype=np.float32), (src[up] - first, dst[up] - first)), shape=(n, n)
    )
    reach = sp.csr_matrix(
        (np.ones(leaves.size, dtype=np.float32), (np.arange(leaves.size), leaves - first)),
        shape=(leaves.size, n),
    )
    seen = reach.copy()
    for _ in range(fabric.tiers):
        reach = (reach @ adj).astype(bool).astype(np.float32)
        seen = (seen + reach).astype(bool).astype(np.float32)
    seen = seen.tolil()
    return [first + np.asarray(r, dtype=np.int64) for r in seen.rows]


def _spray_halves(
    walk: _Walk, src_leaf: IntArray, dst_leaf: IntArray
) -> tuple[sp.csr_matrix, IntArray, IntArray] | None:
    """Spraying patterns in two halves shared by many leaf pairs; None when they do not apply.

    On an up-down fabric without valleys (``_no_valleys``) the walk from source leaf a to
    destination leaf b climbs, turns at the switches that reach b going down, and descends.

    * Climbing, the next hops of a switch depend on b only through the distances to b of a's
      ancestors (``_ancestors``). Leaves with the same parents have the same ancestors; per such
      group, destinations with equal distance columns over the ancestors share the climb. The up
      half is keyed by (a, that column): one walk each, stopped at the turning switches, which
      gives the mass arriving at each of them.
    * Descending depends only on the turning switches' masses and b. The down half is keyed by
      (b, those masses): one walk each.

    The pattern of (a, b) is then up half + down half, with the same arithmetic as the per-pair
    walk (``_spray_patterns``): rounding aside, the same fractions on the same links, held in
    about (leaves x climbs + leaves x descents) columns instead of one per leaf pair. Returns the
    pattern matrix (links x halves) and each flow's up and down half.
    """
    fabric = walk.fabric
    if fabric.strategy != "up_down" or walk.allowed is not None:
        return None
    nodes = fabric.nodes
    pair_key, pair_of_flow = np.unique(src_leaf * nodes + dst_leaf, return_inverse=True)
    if pair_key.size < HALVES_MIN_PAIRS:
        return None
    a, b = pair_key // nodes, pair_key % nodes
    col = walk.col_of_leaf[b]
    if not _no_valleys(walk, np.unique(col)):
        return None
    first = fabric.first_switch
    tier = fabric.tier_of(np.arange(nodes))
    # Groups of source leaves with the same parents, counted with parallel links (hence the
    # same ancestors and the same split of their climbs).
    leaves = np.unique(a)
    f_src, f_dst = fabric.src, fabric.dst
    up = np.flatnonzero(fabric.alive & (tier[f_src] == 1) & (tier[f_dst] > 1))
    up = up[np.isin(f_src[up], leaves)]
    srt = np.lexsort((f_dst[up], f_src[up]))
    lo, hi = f_src[up][srt], f_dst[up][srt]
    bounds = np.searchsorted(lo, np.append(leaves, nodes))
    lists: dict[bytes, int] = {}
    group_of_leaf = np.empty(leaves.size, dtype=np.int64)
    for i in range(leaves.size):
        group_of_leaf[i] = lists.setdefault(hi[bounds[i] : bounds[i + 1]].tobytes(), len(lists))
    reps = np.zeros(len(lists), dtype=np.int64)
    reps[group_of_leaf] = leaves
    anc = _ancestors(fabric, reps)
    # Climb key: (group, distance column over the group's ancestors) -> id, per pair.
    pair_group = group_of_leaf[np.searchsorted(leaves, a)]
    gc_key, gc_inv = np.unique(pair_group * (walk.dist.shape[1] + 1) + col, return_inverse=True)
    gc_group, gc_col = gc_key // (walk.dist.shape[1] + 1), gc_key % (walk.dist.shape[1] + 1)
    gc_sig = np.empty(gc_key.size, dtype=np.int64)
    base = 0
    for g in range(len(lists)):
        sel = np.flatnonzero(gc_group == g)
        if not sel.size:
            continue
        block = walk.dist[anc[g] - first][:, gc_col[sel]].T
        sig = row_ids(block)
        gc_sig[sel] = base + sig
        base += int(sig.max()) + 1
    climb = gc_sig[gc_inv]
    # Up halves: one walk per (source leaf, climb).
    up_key, up_of_pair = np.unique(a * (base + 1) + climb, return_inverse=True)
    up_first = np.zeros(up_key.size, dtype=np.int64)
    up_first[up_of_pair[::-1]] = np.arange(pair_key.size)[::-1]  # a representative pair
    rep_dest = b[up_first]

    def turns(node: IntArray, dest: IntArray) -> BoolArray:
        d = walk.dist[node - first, walk.col_of_leaf[dest]]
        return d == tier[node] - 1

    n_up = up_key.size
    r1, c1, v1, t_pat, t_node, t_mass = _spread(
        walk, np.arange(n_up), a[up_first], np.ones(n_up), rep_dest, turns
    )
    # Turning masses of each up half, deduplicated exactly (their bytes).
    srt = np.lexsort((t_node, t_pat))
    t_pat, t_node, t_mass = t_pat[srt], t_node[srt], t_mass[srt]
    tb = np.searchsorted(t_pat, np.arange(n_up + 1))
    dist_id = np.empty(n_up, dtype=np.int64)
    seen: dict[bytes, int] = {}
    for u in range(n_up):
        s_, e_ = tb[u], tb[u + 1]
        dist_id[u] = seen.setdefault(t_node[s_:e_].tobytes() + t_mass[s_:e_].tobytes(), len(seen))
    first_of = np.zeros(len(seen), dtype=np.int64)
    first_of[dist_id[::-1]] = np.arange(n_up)[::-1]
    # Down halves: one walk per (destination leaf, turning masses).
    n_dist = len(seen)
    down_key, down_of_pair = np.unique(b * n_dist + dist_id[up_of_pair], return_inverse=True)
    d_leaf, d_dist = down_key // n_dist, down_key % n_dist
    u_of = first_of[d_dist]
    cnt = tb[u_of + 1] - tb[u_of]
    d_pat = np.repeat(np.arange(down_key.size), cnt)
    pos = np.repeat(tb[u_of] - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()))
    r2, c2, v2, _, _, _ = _spread(walk, d_pat, t_node[pos], t_mass[pos], d_leaf)
    matrix = sp.csr_matrix(
        (np.concatenate([v1, v2]), (np.concatenate([r1, r2]), np.concatenate([c1, n_up + c2]))),
        shape=(fabric.links, n_up + down_key.size),
    )
    return (
        matrix,
        up_of_pair[pair_of_flow].astype(np.int64),
        (n_up + down_of_pair[pair_of_flow]).astype(np.int64),
    )
