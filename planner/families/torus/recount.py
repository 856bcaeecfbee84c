"""The validator's own recomputations of a torus design (no closed form of the model)."""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

from planner.families.torus.wiring import BFS_MAX_SWITCHES, TorusWiring

if TYPE_CHECKING:
    from planner.design import Design


# ---- the validator's own recomputations (no closed form of the model) ----------------------------
def wiring_of(design: Design) -> TorusWiring:
    """The design's torus wiring; ValueError when it carries another kind."""
    w = design.wiring
    if not isinstance(w, TorusWiring):
        raise ValueError(f"a torus design has a torus wiring, not {w.kind}")
    return w


def ring_links(dims: tuple[int, ...]) -> int:
    """Distinct neighbour pairs of the torus, counted ring by ring (q = 1)."""
    n = math.prod(dims)
    total = 0
    for k in dims:
        pairs = {frozenset((c, (c + 1) % k)) for c in range(k)}
        total += (n // k) * sum(1 for p in pairs if len(p) == 2)
    return total


def _ring_eccentricity(k: int) -> int:
    """Farthest switch of a ring of k from switch 0, by breadth-first search."""
    seen = {0: 0}
    todo = deque([0])
    while todo:
        c = todo.popleft()
        for nxt in ((c + 1) % k, (c - 1) % k):
            if nxt not in seen:
                seen[nxt] = seen[c] + 1
                todo.append(nxt)
    return max(seen.values())


def eccentricity(dims: tuple[int, ...]) -> int:
    """Torus links from switch 0 to the farthest switch (the torus is vertex-transitive).

    Breadth-first search on the whole switch graph when it is small enough, else the sum of the
    rings' (a product graph's distances add up).
    """
    n = math.prod(dims)
    if n > BFS_MAX_SWITCHES:
        return sum(_ring_eccentricity(k) for k in dims)
    strides = [math.prod(dims[:i]) for i in range(len(dims))]
    seen = {0: 0}
    todo = deque([0])
    while todo:
        v = todo.popleft()
        for k, s in zip(dims, strides, strict=True):
            c = (v // s) % k
            for step in (1, -1):
                u = v + (((c + step) % k) - c) * s
                if u not in seen:
                    seen[u] = seen[v] + 1
                    todo.append(u)
    return max(seen.values())


def load_ratio(w: TorusWiring, gpus: int) -> float:
    """Busiest ring link's load / capacity under uniform all-to-all, DOR (an upper bound).

    Ring distances summed one by one (not the closed form): per dimension, traffic between a
    switch pair at most g^2 / (E - 1) (E the design's GPUs), times N sources, times the ring
    distances of one source over the N / k rings' worth of destinations, over the dimension's
    directed links.
    """
    n = math.prod(w.dims)
    g, q = w.gpus_per_switch, w.parallel_links
    e = min(gpus, n * g)
    worst = 0.0
    for k in w.dims:
        hops = sum(min(x, k - x) for x in range(k)) * (n // k)
        directed = 2 * ring_links((k,)) * (n // k) * q
        if e > 1 and directed:
            worst = max(worst, n * hops * g * g / (e - 1) / directed)
    return worst
