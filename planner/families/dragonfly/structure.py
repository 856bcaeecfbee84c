r"""The dragonfly's wiring rule and its closed forms (one plane; no I/O, no solver).

Kim, Dally, Scott, Abts, "Technology-Driven, Highly-Scalable Dragonfly Topology", ISCA 2008.
``g`` groups of ``a`` switches. Every switch has ``p`` terminal ports (GPU NIC ports), ``q``
parallel local links to each of the ``a - 1`` other switches of its group (all-to-all), and its
share of the group's global links. Every pair of groups is joined by ``m >= 1`` global links (one
when ``g = a h + 1``, the largest dragonfly; several when there are fewer groups: global link
provisioning).

Global wiring (the "consecutive" arrangement): the global link ends of group ``i`` are numbered
``t = (o - 1) m + c`` for copy ``c < m`` of the link to the group at offset
``o = (j - i) mod g``, and end ``t`` sits on switch ``t mod a`` of the group (the copies of one
group pair land on consecutive switches). A switch therefore
holds ``floor`` or ``ceil(m (g - 1) / a)`` global ends: ``h = ceil(m (g - 1) / a)`` global ports.
The rule is invariant under the rotation ``i -> i + 1`` of the groups, so the switches of group 0
see every path there is to see.

Closed forms: ``N = a p g`` endpoints, ``a g`` switches, ``q g a (a - 1) / 2`` local and
``m g (g - 1) / 2`` global links, ``p + q (a - 1) + h`` ports per switch. With one link per group
pair and ``h`` global ports, ``g <= a h + 1`` and ``N_max = a p (a h + 1)``; the balanced
dragonfly ``a = 2 p = 2 h`` has radix ``k = 4 p - 1`` (radix 64: p = h = 16, a = 32,
N = 262,656).

Minimal routing (local, global, local): a packet for another group takes a global link of its own
group to the destination group; at most 3 switch-to-switch links, 4 switches (``routed_links``).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


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


def end_switch(t: IntArray | int, a: int) -> IntArray | int:
    """The switch (in its group) that holds global end number t: t mod a."""
    return t % a


def global_ends(a: int, g: int, m: int) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Both ends of every global link of a plane: (group i, switch in i, group j, switch in j).

    Links in order of (i, offset o = j - i from 1 to g - 1 with i < j, copy c); end numbers as
    the module docstring gives them.
    """
    if g < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    i, j = np.triu_indices(g, k=1)
    i, j = np.repeat(i, m).astype(np.int64), np.repeat(j, m).astype(np.int64)
    c = np.tile(np.arange(m, dtype=np.int64), i.size // m)
    o = j - i
    t_i = (o - 1) * m + c
    t_j = (g - o - 1) * m + c
    return i, t_i % a, j, t_j % a


def routed_links(a: int, g: int, m: int) -> int:
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
    c = np.arange(m, dtype=np.int64)
    for d in range(1, g):
        s = ((d - 1) * m + c) % a
        t = ((g - d - 1) * m + c) % a
        miss_s, miss_t = np.unique(s).size < a, np.unique(t).size < a
        if miss_s and miss_t:
            return 3
        if miss_s or miss_t or np.unique(s * a + t).size < a * a:
            worst = 2
        else:
            worst = max(worst, 1)
    return worst


def switch_hops(a: int, g: int, m: int) -> int:
    """Switches on the longest minimal route: routed links + 1."""
    return routed_links(a, g, m) + 1


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


def groups_needed(gpus: int, p: int, a: int) -> int:
    """Fewest groups that hold the GPUs: ceil(E / (a p))."""
    return max(1, math.ceil(gpus / (a * p)))
