r"""The dragonfly's wiring rule and its closed forms (one plane; no I/O, no solver).

Kim, Dally, Scott, Abts, "Technology-Driven, Highly-Scalable Dragonfly Topology", ISCA 2008.
``g`` groups of ``a`` switches. Every switch has ``p`` terminal ports (GPU NIC ports), ``q``
parallel local links to each of the ``a - 1`` other switches of its group (all-to-all), and its
share of the group's global links. Every pair of groups is joined by ``m >= 1`` global links (one
when ``g = a h + 1``, the largest dragonfly; several when there are fewer groups: global link
provisioning).

Global wiring: the ``m (g - 1)`` global link ends of group ``i`` are numbered, each for copy
``c < m`` of the link to the group at offset ``o = (j - i) mod g``, and spread over the group's
switches in one of two arrangements (``ARRANGEMENTS``):

* ``blocks`` (every design planned since issue 33; Kim et al.'s, and the palm tree's, shape): end
  ``t = c (g - 1) + (o - 1)`` sits on switch ``floor(t a / (m (g - 1)))``, so a switch's ends
  lead to consecutive groups and the copies of one group pair land ``g - 1`` ends apart, on
  different switches. A packet passing through a group on its way from group ``z`` to group
  ``z + 1`` (Valiant routing of a group shift) arrives on end ``t`` and leaves on end ``t + 1``:
  the same switch but at a block's edge, so the shift's transit crosses few local links.
* ``round_robin`` (designs planned before; read from a design.json without an arrangement): end
  ``t = (o - 1) m + c`` sits on switch ``t mod a``, the copies of one pair on consecutive
  switches. Under a group shift every transit packet at switch ``u`` leaves from ``u + m``: one
  local link per switch carries all of it (``h`` times what a global link carries).

Either way a switch holds ``floor`` or ``ceil(m (g - 1) / a)`` global ends:
``h = ceil(m (g - 1) / a)`` global ports, and the rule is invariant under the rotation
``i -> i + 1`` of the groups, so the switches of group 0 see every path there is to see.

Closed forms: ``N = a p g`` endpoints, ``a g`` switches, ``q g a (a - 1) / 2`` local and
``m g (g - 1) / 2`` global links, ``p + q (a - 1) + h`` ports per switch. With one link per group
pair and ``h`` global ports, ``g <= a h + 1`` and ``N_max = a p (a h + 1)``; the balanced
dragonfly ``a = 2 p = 2 h`` has radix ``k = 4 p - 1`` (radix 64: p = h = 16, a = 32,
N = 262,656).

Routing (``ROUTINGS``): minimal (local, global, local) takes a global link of its own group to
the destination group: at most 3 switch-to-switch links, 4 switches (``routed_links``). Valiant
goes minimally to a switch of a random intermediate group where a link of its own group lands,
then minimally on: at most 5 links (``valiant_routed_links``). UGAL (``ugal_l``, ``ugal_g``)
takes the minimal path unless it is more loaded than a Valiant one, so its uncongested route is
the minimal one. The load ratios each routing is sized for are ``global_load_ratio`` and
``local_load_ratio`` (their derivation in ``shift_global_ratio`` and ``shift_local_ratio``).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

#: Global link arrangements (module docstring): new designs take ``BLOCKS``; a design.json
#: without one was planned with ``ROUND_ROBIN``.
BLOCKS = "blocks"
ROUND_ROBIN = "round_robin"
ARRANGEMENTS = (BLOCKS, ROUND_ROBIN)

#: Routings (``search.dragonfly_routing`` without ``auto``), each with the load ratios it is
#: sized for (``global_load_ratio``, ``local_load_ratio``).
MINIMAL = "minimal"
VALIANT = "valiant"
UGAL_L = "ugal_l"
UGAL_G = "ugal_g"
ROUTINGS = (MINIMAL, VALIANT, UGAL_L, UGAL_G)
#: Routings that send part of the traffic through an intermediate group.
NON_MINIMAL = (VALIANT, UGAL_L, UGAL_G)


def global_ports(a: int, g: int, m: int) -> int:
    """Global ports a switch needs: h = ceil(m (g - 1) / a) (0 for a single group)."""
    return 0 if g < 2 else -(-m * (g - 1) // a)


def ports_per_switch(p: int, a: int, q: int, h: int) -> int:
    """Ports of a switch: p terminals + q (a - 1) local + h global."""
    return p + q * (a - 1) + h


def local_links(a: int, g: int, q: int) -> int:
    """Local links of a plane: q g a (a - 1) / 2."""
    return q * g * a * (a - 1) // 2


def global_links(g: int, m: int) -> int:
    """Global links of a plane: m g (g - 1) / 2."""
    return m * g * (g - 1) // 2


def max_groups(a: int, h: int) -> int:
    """Most groups with one global link per pair: g = a h + 1."""
    return a * h + 1


def max_endpoints(p: int, a: int, h: int) -> int:
    """Endpoints of the largest dragonfly of these switches: N = a p (a h + 1)."""
    return a * p * max_groups(a, h)


def balanced(radix: int) -> tuple[int, int, int]:
    """(p, a, h) of the balanced dragonfly of a radix: a = 2 p = 2 h, 4 p - 1 <= radix."""
    p = (radix + 1) // 4
    return p, 2 * p, p


def end_number(o: IntArray, c: IntArray, g: int, m: int, arrangement: str = BLOCKS) -> IntArray:
    """Number of a group's global end for copy c of its link to the group at offset o."""
    if arrangement == ROUND_ROBIN:
        return (o - 1) * m + c
    return c * (g - 1) + (o - 1)


def end_switch(t: IntArray, a: int, g: int, m: int, arrangement: str = BLOCKS) -> IntArray:
    """The switch (in its group) that holds global end number t (module docstring)."""
    if arrangement == ROUND_ROBIN:
        return t % a
    return (t * a) // (m * (g - 1))


def global_ends(
    a: int, g: int, m: int, arrangement: str = BLOCKS
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Both ends of every global link of a plane: (group i, switch in i, group j, switch in j).

    Links in order of (i, offset o = j - i from 1 to g - 1 with i < j, copy c); end numbers and
    switches as the module docstring gives them for ``arrangement``.
    """
    if g < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    i, j = np.triu_indices(g, k=1)
    i, j = np.repeat(i, m).astype(np.int64), np.repeat(j, m).astype(np.int64)
    c = np.tile(np.arange(m, dtype=np.int64), i.size // m)
    o = j - i
    t_i = end_number(o, c, g, m, arrangement)
    t_j = end_number(g - o, c, g, m, arrangement)
    return i, end_switch(t_i, a, g, m, arrangement), j, end_switch(t_j, a, g, m, arrangement)


def _pair_links(a: int, g: int, m: int, arrangement: str) -> tuple[IntArray, IntArray]:
    """Per offset d = 1 .. g - 1, the m links from group 0 to group d: (switch in 0, in d).

    Shapes (g - 1, m).
    """
    d = np.arange(1, g, dtype=np.int64)[:, None]
    c = np.arange(m, dtype=np.int64)[None, :]
    s = end_switch(end_number(d, c, g, m, arrangement), a, g, m, arrangement)
    t = end_switch(end_number(g - d, c, g, m, arrangement), a, g, m, arrangement)
    return np.broadcast_to(s, (g - 1, m)), np.broadcast_to(t, (g - 1, m))


def _route_links(s: IntArray, t: IntArray, a: int) -> IntArray:
    """Minimal links from every switch of one group to every switch of another.

    ``s``, ``t``: the m links between the two groups (switch at each end). From u to v the route
    takes the link (s', t') of the fewest ``[u != s'] + 1 + [t' != v]``. Shape (a, a).
    """
    u = np.arange(a, dtype=np.int64)
    cost = (u[:, None, None] != s[None, None, :]).astype(np.int64) + (
        t[None, None, :] != u[None, :, None]
    )
    return 1 + cost.min(axis=2)


def routed_links(a: int, g: int, m: int, arrangement: str = BLOCKS) -> int:
    """Switch-to-switch links on the longest minimal (local, global, local) route.

    Per destination group D, seen from group 0: S = switches of group 0 with a link to D,
    T = switches of D where those links land. From s to t the route takes the link (s', t') of
    the fewest ``[s != s'] + 1 + [t' != t]``; the longest is 3 when some s is not in S and some
    t not in T, 2 when only one of them misses, 1 when every (s, t) has its own link. Inside a
    group: 1 local link (0 with a single switch).
    """
    inside = 1 if a > 1 else 0
    if g < 2:
        return inside
    worst = inside
    s_all, t_all = _pair_links(a, g, m, arrangement)
    for d in range(g - 1):
        s, t = s_all[d], t_all[d]
        miss_s, miss_t = np.unique(s).size < a, np.unique(t).size < a
        if miss_s and miss_t:
            return 3
        if miss_s or miss_t or np.unique(s * a + t).size < a * a:
            worst = 2
        else:
            worst = max(worst, 1)
    return worst


def valiant_routed_links(a: int, g: int, m: int, arrangement: str = BLOCKS) -> int:
    """Switch-to-switch links on the longest Valiant route (minimal with fewer than 3 groups).

    Seen from group 0 as the intermediate: a packet from group X lands on a switch w of group 0
    where a link of X lands (leg 1: 1 link when its source switch holds a link landing on w,
    else 2), then takes the minimal route from w to its destination in group D, neither X nor 0
    (leg 2, ``_route_links``). The longest route is the longest leg 1 plus the longest leg 2
    over the landings w of every X and every D.
    """
    if g < 3:
        return routed_links(a, g, m, arrangement)
    s_all, t_all = _pair_links(a, g, m, arrangement)
    # Leg 1, seen from the source group 0 to intermediate d: a landing w of d is one link away
    # from the switches holding a link that lands on w, two from the others.
    d = np.repeat(np.arange(g - 1, dtype=np.int64), m)
    key = np.unique((d * a + t_all.ravel()) * a + s_all.ravel())
    holders = np.bincount(key // a)
    leg1 = 1 if holders[holders > 0].min() == a else 2
    # Leg 2: rows[D - 1, w] = the longest minimal route from switch w of group 0 into group D,
    # from the switches where some other group X (neither 0 nor D) lands: group 0's ends
    # towards X are where X's links land in 0.
    rows = np.stack([_route_links(s_all[d], t_all[d], a).max(axis=1) for d in range(g - 1)])
    ends = np.zeros((g - 1, a), dtype=np.int64)
    ends[np.repeat(np.arange(g - 1), m), s_all.ravel()] = 1
    lands = (ends.sum(axis=0)[None, :] - ends) > 0
    return leg1 + int(rows[lands].max())


def switch_hops(a: int, g: int, m: int, arrangement: str = BLOCKS, routing: str = MINIMAL) -> int:
    """Switches on the longest route: routed links + 1 (Valiant's route under ``valiant``).

    UGAL's uncongested route is the minimal one: it leaves it only when it is more loaded.
    """
    if routing == VALIANT:
        return valiant_routed_links(a, g, m, arrangement) + 1
    return routed_links(a, g, m, arrangement) + 1


def global_hops(g: int, routing: str = MINIMAL) -> int:
    """Global links on the longest route: 2 under Valiant with 3 groups or more, else 1."""
    if g < 2:
        return 0
    return 2 if routing == VALIANT and g >= 3 else 1


def bisection_links(a: int, g: int, q: int, m: int) -> int:
    """Links across the cut between the first floor(g / 2) groups and the rest.

    m floor(g / 2) ceil(g / 2) global links; with one group, the cut halving it crosses
    q floor(a / 2) ceil(a / 2) local links.
    """
    if g < 2:
        return q * (a // 2) * (a - a // 2)
    return m * (g // 2) * (g - g // 2)


def global_ratio(p: int, a: int, m: int, gpus: int) -> float:
    """Load ratio of the busiest global link, uniform all-to-all, minimal routing.

    Two groups of at most a p GPUs send each other (a p)^2 / (E - 1) of a link, over m links:
    lambda_G = (a p)^2 / ((E - 1) m) (about p / h in a full dragonfly).
    """
    n = a * p
    return 0.0 if gpus < 2 or m < 1 else n * n / ((gpus - 1) * m)


def local_ratio(p: int, a: int, g: int, q: int, m: int, gpus: int) -> float:
    """Load ratio of the busiest local link, uniform all-to-all, minimal routing (a bound).

    A local link u -> v carries u's terminals' traffic to the global ends of v (each of v's at
    most h ends carries at most lambda_G, of which u's terminals send at most 1 / a), the
    global traffic arriving at u's at most h ends for v's terminals (again at most lambda_G / a
    each), and u's terminals' traffic to v's (p^2 / (E - 1)); over q parallel links:
    lambda_L = (2 h lambda_G / a + p^2 / (E - 1)) / q  (about 2 p / a in a full dragonfly,
    Kim et al.'s balance a = 2 p).
    """
    if a < 2 or gpus < 2:
        return 0.0
    direct = p * p / (gpus - 1)
    if g < 2:
        return direct / q
    h = global_ports(a, g, m)
    return (2 * h * global_ratio(p, a, m, gpus) / a + direct) / q


def group_gpus(p: int, a: int, gpus: int) -> int:
    """GPUs of a full group: n = min(a p, E) (groups fill in order)."""
    return min(a * p, gpus)


def shift_global_ratio(p: int, a: int, g: int, m: int, gpus: int, routing: str) -> float:
    r"""Load ratio of the busiest global link when every group sends all it has to the next.

    The adversarial permutation (group i to group i + 1, every GPU at line rate; n = a p GPUs
    a group, ``group_gpus``). Under Valiant a packet takes a link to one of the g - 2 other
    groups, then that group's link to its destination: the link i -> j carries 1 / (g - 2) of
    group i's traffic on its first global hop (j != i + 1) and 1 / (g - 2) of group j - 1's on
    its second (i != j - 1), and nothing when j = i + 1:

        lambda_G^V = 2 n / ((g - 2) m)

    UGAL may also send a share alpha of each pair's traffic straight over its m direct links:
    alpha n / m there, 2 (1 - alpha) n / ((g - 2) m) on every other link; the busiest is least
    when both are equal, alpha = 2 / g:

        lambda_G^UGAL = 2 n / (g m)

    twice the uniform ratio n^2 / ((E - 1) m) ~ n / (g m) with E = g n: every packet that does
    not take the direct link crosses two global links. The same bound holds for any permutation
    of the groups (each sends n and receives n; the count of global links the traffic uses is
    the argument). Minimal routing and two groups: all n of a group over its m links, n / m.

    These assume Valiant's traffic spread evenly over a group pair's m links, which it is with
    one link per pair and wherever a switch holds as many ends from one group as towards the
    next. At the edges of ``blocks`` with several copies a switch may hold more ends from group
    z than towards z + 1, and the minimal hop of the transit takes its own link: the simulator
    then puts up to about 1.2 to 1.4 times the ratio on those links (dragonfly-16k: 1.16; the
    Slingshot shape with 34 links a pair: about 1.3).
    """
    n = group_gpus(p, a, gpus)
    if g < 2 or m < 1:
        return 0.0
    if routing == MINIMAL or g < 3:
        return n / m
    return 2 * n / ((g - 2) * m) if routing == VALIANT else 2 * n / (g * m)


def ends_to_one_group(a: int, g: int, m: int, arrangement: str = BLOCKS) -> int:
    """The most global ends one switch holds towards one other group.

    ``blocks``: a switch holds at most h consecutive end numbers, and one group's are g - 1
    apart: ceil(h / (g - 1)). ``round_robin``: a pair's m copies on consecutive switches:
    ceil(m / a).
    """
    if g < 2:
        return 0
    if arrangement == ROUND_ROBIN:
        return -(-m // a)
    return -(-global_ports(a, g, m) // (g - 1))


def shift_local_ratio(
    p: int, a: int, g: int, q: int, m: int, gpus: int, routing: str, arrangement: str = BLOCKS
) -> float:
    r"""Load ratio of the busiest local link under the group shift (a bound).

    A local link u -> v of group X carries (i) the first hop of u's terminals towards v's at
    most h global ends, p / n of what each carries out of X's own traffic, (ii) the transit of X
    as an intermediate, from the end it arrives on to the end it leaves on, and (iii) the last
    hop of what arrives on u's at most h ends for v's terminals, p / n of each.

    Valiant: every global link carries L = n / ((g - 2) m) on each phase; X's own traffic
    leaves on every end but those to X + 1, and what arrives for X came through every end but
    those from X - 1. Under ``blocks`` a packet arriving on end t leaves on end t + 1 (the
    next group), another switch only at the edge of a block: at most one end's L on u -> v.
    Over q parallel links:

        lambda_L^V = (n + 2 h p) / ((g - 2) m q)

    UGAL at its best split (alpha = 2 / g, ``shift_global_ratio``): every global link carries
    n / (g m) on each Valiant phase, and the direct ones 2 n / (g m); a switch holds at most
    k = ``ends_to_one_group`` ends towards X + 1 (or from X - 1), so (i) and (iii) are at most
    p (h + k) / (g m) each and (ii) at most n / (g m):

        lambda_L^UGAL = (n + 2 p (h + k)) / (g m q)

    ``round_robin`` sends the shift's transit at switch u all from u + m: h ends' worth, h n in
    place of n. Minimal routing and two groups: u's terminals to the holders of the direct links
    and back, at most 2 p / q.
    """
    n = group_gpus(p, a, gpus)
    if a < 2 or g < 2 or m < 1:
        return 0.0
    h = global_ports(a, g, m)
    if routing == MINIMAL or g < 3:
        return 2 * p / q
    transit = n if arrangement == BLOCKS else h * n
    if routing == VALIANT:
        return (transit + 2 * h * p) / ((g - 2) * m * q)
    k = ends_to_one_group(a, g, m, arrangement)
    return (transit + 2 * p * (h + k)) / (g * m * q)


def global_load_ratio(p: int, a: int, g: int, m: int, gpus: int, routing: str = MINIMAL) -> float:
    """The global load ratio a routing is sized for.

    Minimal: uniform all-to-all (``global_ratio``). Valiant and UGAL: the larger of uniform
    all-to-all and the group shift (``shift_global_ratio``), the worst case they leave.
    """
    if g < 2:
        return 0.0
    uniform = global_ratio(p, a, m, gpus)
    if routing == MINIMAL:
        return uniform
    return max(uniform, shift_global_ratio(p, a, g, m, gpus, routing))


def local_load_ratio(
    p: int,
    a: int,
    g: int,
    q: int,
    m: int,
    gpus: int,
    routing: str = MINIMAL,
    arrangement: str = BLOCKS,
) -> float:
    """The local load ratio a routing is sized for (as ``global_load_ratio``, local links)."""
    uniform = local_ratio(p, a, g, q, m, gpus)
    if routing == MINIMAL or g < 2:
        return uniform
    return max(uniform, shift_local_ratio(p, a, g, q, m, gpus, routing, arrangement))


def groups_needed(gpus: int, p: int, a: int) -> int:
    """Fewest groups that hold the GPUs: ceil(E / (a p))."""
    return max(1, math.ceil(gpus / (a * p)))
