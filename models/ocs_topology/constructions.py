"""OCS topology engineering: topologies without a solver.

The uniform mesh, degree-preserving rounding, the exact no-transit optimum (with spine levels)
and the proportional candidates.

The docstrings here say "module docstring" for the package docstring of ``models.ocs_topology``,
which holds the formulation, the bounds and the constructions in full.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from models.ocs_topology.data import (
    INTEGRALITY_TOL,
    circuits_needed,
    circuits_of,
    pair_weight,
    usable_circuits,
)

# --- topologies without a solver ------------------------------------------------------------------


def uniform_mesh(n: int, uplinks: int | Sequence[int]) -> tuple[tuple[int, int, int], ...]:
    """The balanced mesh: floor(min U / (n-1)) circuits per pair, then the remainder spread.

    The remainder r_i = U_i - q (n-1) goes in layers of offsets: the pairs (a, a+n/2) first when n
    is even and every r_i is odd (a perfect matching), then rings (a, a+1), (a, a+2), ..., one
    circuit per pair and pass while both blocks have free uplinks. With equal U it is circulant.
    """
    u = np.full(n, uplinks, dtype=np.int64) if isinstance(uplinks, int) else np.array(uplinks)
    q = int(u.min()) // (n - 1)
    x = q * (np.ones((n, n), dtype=np.int64) - np.eye(n, dtype=np.int64))
    free = u - q * (n - 1)

    def link(a: int, b: int) -> bool:
        if free[a] > 0 and free[b] > 0:
            x[a, b] += 1
            x[b, a] += 1
            free[a] -= 1
            free[b] -= 1
            return True
        return False

    if n % 2 == 0 and (free % 2 == 1).all():
        for a in range(n // 2):
            link(a, a + n // 2)
    added = True
    while added:
        added = False
        for s in range(1, n // 2 + 1):
            for a in range(n if 2 * s < n else n // 2):
                added |= link(a, (a + s) % n)
    return circuits_of(x)


def round_with_degrees(
    x_lp: np.ndarray, uplinks: np.ndarray, w: np.ndarray, c: float
) -> np.ndarray:
    """Degree-preserving rounding: floor(x_lp), then fill free uplinks circuit by circuit.

    Each step adds a circuit to the pair, among those whose two blocks both have free uplinks,
    with the lowest c x_ij / w_ij (pairs with w_ij = 0 last, fewest circuits first). It stops with
    at most one block left with free uplinks.
    """
    n = len(uplinks)
    x = np.floor(np.maximum(x_lp, 0.0) + INTEGRALITY_TOL).astype(np.int64)
    np.fill_diagonal(x, 0)
    x = np.minimum(x, x.T)
    for i in range(n):  # only LP noise can overfill a block: drop circuits of its widest pairs
        while x[i].sum() > uplinks[i]:
            j = int(np.argmax(x[i]))
            x[i, j] -= 1
            x[j, i] -= 1
    free = uplinks - x.sum(axis=1)

    def key(i: int, j: int) -> tuple[int, float, int, int]:
        if w[i, j] > 0:
            return (0, c * x[i, j] / w[i, j], i, j)
        return (1, float(x[i, j]), i, j)

    heap = [key(i, j) for i in range(n) for j in range(i + 1, n)]
    heapq.heapify(heap)
    while heap and (free > 0).sum() >= 2:
        _, _, i, j = heapq.heappop(heap)
        if free[i] > 0 and free[j] > 0:
            x[i, j] += 1
            x[j, i] += 1
            free[i] -= 1
            free[j] -= 1
            heapq.heappush(heap, key(i, j))
    return x


def no_transit_optimum(
    uplinks: np.ndarray, w: np.ndarray, c: float, spines: int = 1
) -> tuple[float, np.ndarray]:
    """Max theta with c usable(x_ij) >= theta w_ij for all pairs (w symmetric), and its x.

    Pair ij needs need_ij(theta) = circuits_needed(ceil(theta w_ij / c)) circuits (with S = 1
    simply ceil(theta w_ij / c)), and any x reaching theta has x_ij >= need_ij(theta). So theta
    is feasible iff sum_j need_ij(theta) <= U_i for every i: monotone in theta and changing only
    at the values c L / w_ij for the usable levels L (1 .. S-1 and the multiples of S), so a
    binary search over them finds the optimum. Free uplinks are then filled level by level
    (``fill_levels``), then circuit by circuit as in ``round_with_degrees``.
    """
    iu, ju = np.nonzero(np.triu(w, 1))
    weights = w[iu, ju]

    def need(theta: float) -> np.ndarray:
        x = np.zeros(w.shape, dtype=np.int64)
        k = np.ceil(theta * weights / c - INTEGRALITY_TOL).astype(np.int64)
        x[iu, ju] = circuits_needed(k, spines)
        return x + x.T

    top = int(uplinks.max())
    levels = np.unique(usable_circuits(np.arange(1, top + 1), spines))
    levels = levels[levels > 0]
    values = np.unique((c * levels[:, None] / weights[None, :]).ravel())
    lo, hi = 0, len(values)  # values[:lo] feasible, values[hi:] infeasible
    while lo < hi:
        mid = (lo + hi) // 2
        if (need(float(values[mid])).sum(axis=1) <= uplinks).all():
            lo = mid + 1
        else:
            hi = mid
    theta = float(values[lo - 1]) if lo > 0 else 0.0
    x = need(theta) if theta > 0 else np.zeros(w.shape, dtype=np.int64)
    if spines > 1:
        x = fill_levels(x, uplinks, w, c, spines)
    return theta, round_with_degrees(x.astype(float), uplinks, w, c)


def fill_levels(
    x: np.ndarray, uplinks: np.ndarray, w: np.ndarray, c: float, spines: int
) -> np.ndarray:
    """Raise pairs with demand to their next usable level while both blocks have the ports.

    Each step takes the pair with the lowest c usable(x_ij) / w_ij and adds the circuits that
    lift usable(x_ij) by one level (one below S, up to the next multiple of S above); a pair
    that does not fit is dropped, since free uplinks only shrink.
    """
    x = x.copy()
    free = uplinks - x.sum(axis=1)

    def key(i: int, j: int) -> tuple[float, int, int]:
        return (c * float(usable_circuits(x[i, j], spines)) / w[i, j], i, j)

    iu, ju = np.nonzero(np.triu(w, 1))
    heap = [key(int(i), int(j)) for i, j in zip(iu, ju, strict=True)]
    heapq.heapify(heap)
    while heap:
        _, i, j = heapq.heappop(heap)
        nxt = int(circuits_needed(usable_circuits(x[i, j], spines) + 1, spines))
        step = nxt - int(x[i, j])
        if free[i] >= step and free[j] >= step:
            x[i, j] = x[j, i] = nxt
            free[i] -= step
            free[j] -= step
            heapq.heappush(heap, key(i, j))
    return x


def proportional(uplinks: np.ndarray, d: np.ndarray, c: float, alpha: float) -> np.ndarray:
    """The no-transit optimum for the weights max(D_ij, D_ji)^alpha (alpha = 0: balanced)."""
    w = pair_weight(d)
    return no_transit_optimum(uplinks, np.where(w > 0, w**alpha, 0.0), c)[1]
