"""Dimension-order routing (DOR) on a torus, as a routing strategy the torus planes carry.

Correct the lowest dimension whose coordinate differs first, moving the shorter way round its
ring; when both ways are equally short (k even, ring distance k / 2) both directions are next
hops. ``dist`` is the sum of ring distances when every ring segment of some DOR path is alive,
else unreachable; the rule allows only links of the lowest differing dimension. A failed link
thus removes the next hops whose DOR path needs it, and a flow with no alive DOR path is cut
off. The plane's coordinates are ``Fabric.dims`` and ``Fabric.coords``
(``planner.families.torus.fabric``).
"""

from __future__ import annotations

import numpy as np

from planner.sim.fabric import UNREACHABLE, BoolArray, Fabric, IntArray, NextHops, RoutingStrategy
from planner.sim.routing_strategies import EXPAND_CHUNK


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


#: The torus planes' strategy (``planner.families.torus.fabric.torus_fabric``).
DIMENSION_ORDER = RoutingStrategy("dimension_order", dimension_order)
