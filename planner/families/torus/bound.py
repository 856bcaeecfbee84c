"""The torus's optimal-routing bound: the channel-load bound and ring contractions.

Set on every plane ``planner.families.torus.fabric.torus_fabric`` builds (``Fabric.bound``) and
asked first by ``planner.sim.bound_scaled``.

``torus`` (k-ary n-cube of ``torus_fabric``, healthy). By LP duality
``lambda* = min_l sum_e c_e l_e / sum_{s,t} D[s, t] dist_l(s, t)`` over link lengths l >= 0;
any l gives an upper bound. Take lengths that depend only on a link's dimension d and
direction: ``t`` on +d links, ``1 - t`` on -d links, 0 elsewhere. Then
``dist = min(t delta_d, (1 - t)(k_d - delta_d))`` with ``delta_d = (x_t - x_s)_d mod k_d``
and, with N switches and c the capacity of a (merged) torus link::

    lambda_torus = min_d  min_{t in (k_d - j) / k_d, j = 1..k_d-1}  N c / sum_{s,t} D[s,t] min(t delta, (1-t)(k_d - delta))

(k_d = 2: one orbit of links, ``N c / sum D [delta_d = 1]``). The denominator is concave and
piecewise linear in t with breakpoints ``(k - delta) / k``, so the inner min is exact over t;
a sum of per-dimension ratios is never below the least of them, so lengths on one dimension
suffice. It is exact when D is invariant under the torus's translations (uniform all-to-all,
a shift by a multiple of the slower dimensions' size): an optimal dual of a translation-
invariant LP can be averaged over the group, so translation-invariant lengths reach the optimum.
This is the classic channel-load (bisection) bound, generalised to any demand.

Tighter, for demands that are not translation invariant: contract the torus onto one dimension
d (all switches with the same coordinate x_d become one node): a ring of k_d nodes whose links
carry ``N / k_d`` torus links each, with the demand projected onto it. Contraction only relaxes,
so its max concurrent flow (a tiny LP: k_d commodities x 2 k_d links) is again an upper bound,
and it is at least as tight as the channel-load bound (whose lengths are feasible for it). Pairs
of dimensions are contracted too when they have at most :data:`TORUS_PAIR_MAX_NODES` nodes;
when that pair is the whole torus it is the switch-level LP itself, hence exact. On the small
tori of ``tests/sim/test_bound_scaled.py`` (4x4, 3x5, 4x4x2, 8x8, 4x4x4) these equal the
reference LP for permutation, all-to-all, ring, incast and shift traffic; measured on random
permutations they also equal it on 4x4x3, 5x5x3, 6x6x3 and 5x5x5, and sit 2.5-8.5 % above it
on 3x3x3 (flagged not exact).

Tolerances: :data:`INVARIANCE_RTOL` for translation invariance, the simulator's
:data:`planner.sim.bound_scaled.SYMMETRY_RTOL` for capacities.
"""

from __future__ import annotations

import math

import numpy as np

from planner.sim.bound_scaled import SYMMETRY_RTOL, contracted_mcf, inexact, ratio_min
from planner.sim.bound_types import BlockSolver, ScaledBound, SwitchDemand, SwitchLinks
from planner.sim.fabric import Fabric, IntArray

#: Relative tolerance under which two pairs' demands count as equal (translation invariance).
INVARIANCE_RTOL = 1e-9
#: Contract a torus onto pairs of dimensions only when the pair has at most this many nodes
#: (its LP has about 4 n^2 variables).
TORUS_PAIR_MAX_NODES = 64


def torus_bound(
    fabric: Fabric,
    links: SwitchLinks,
    demand: SwitchDemand,
    lam_leaf: float,
    solve_mcf: BlockSolver,
) -> ScaledBound | None:
    """Leaf cut and the per-dimension channel-load bound; None when the fabric is not a torus."""
    if not fabric.dims or fabric.tiers != 1:
        return None
    dims = np.asarray(fabric.dims, dtype=np.int64)
    n = int(np.prod(dims))
    first = fabric.first_switch
    if fabric.switches != n:
        return None
    coords = fabric.coords
    ct, ch = coords[links.tail - first], coords[links.head - first]
    disp = (ch - ct) % dims
    moved = disp != 0
    if np.any(moved.sum(axis=1) != 1):
        return inexact(lam_leaf, "torus", "a link that is not a torus link")
    dim = np.argmax(moved, axis=1)
    step = disp[np.arange(disp.shape[0]), dim]
    k_of = dims[dim]
    plus = step == 1
    if np.any(~plus & (step != k_of - 1)):
        return inexact(lam_leaf, "torus", "a link that is not a torus link")
    orbit = 2 * dim + (~plus).astype(np.int64)
    count = np.bincount(orbit, minlength=2 * dims.size)
    cap_max = np.full(2 * dims.size, -np.inf)
    cap_min = np.full(2 * dims.size, np.inf)
    np.maximum.at(cap_max, orbit, links.capacity_gbps)
    np.minimum.at(cap_min, orbit, links.capacity_gbps)
    sd, td = coords[demand.src - first], coords[demand.dst - first]
    delta = (td - sd) % dims
    lam = lam_leaf
    exact = True
    reasons = []
    for d, k in enumerate(int(x) for x in dims):
        if k == 1:
            continue
        orbits = [2 * d] if k == 2 else [2 * d, 2 * d + 1]
        if any(count[o] != n for o in orbits):
            # Missing (failed) links: the bound with every link at the least capacity of its
            # dimension would not be valid; a missing link has capacity 0, so skip the dimension.
            exact = False
            reasons.append(f"dimension {d} is not a full set of rings")
            continue
        if any(cap_max[o] - cap_min[o] > SYMMETRY_RTOL * cap_max[o] for o in orbits):
            exact = False
            reasons.append(f"dimension {d}: links of one direction differ in capacity")
        # Any lengths give a valid bound; with unequal capacities use each orbit's largest.
        c_plus, c_minus = cap_max[orbits[0]], cap_max[orbits[-1]]
        h = np.bincount(delta[:, d], weights=demand.gbit, minlength=k)
        if k == 2:
            if h[1] > 0:
                lam = min(lam, n * c_plus / h[1])
            continue
        if not math.isclose(c_plus, c_minus, rel_tol=SYMMETRY_RTOL):
            exact = False
            reasons.append(f"dimension {d}: + and - links differ in capacity")
        j = np.arange(1, k)
        t = (k - j) / k  # breakpoints of the concave, piecewise-linear denominator
        steps = np.arange(k)
        load = np.minimum(t[:, None] * steps[None, :], (1 - t)[:, None] * (k - steps)[None, :]) @ h
        numerator = n * (c_plus * t + c_minus * (1 - t))
        lam = min(lam, ratio_min(numerator, load))
    if not _translation_invariant(fabric, delta, demand, n):
        exact = False
        reasons.append("the demand is not translation invariant")
    # Rings: contract the torus onto each dimension (onto each pair of dimensions when that LP
    # is small); each is a relaxation, at least as tight as the channel-load bound.
    variables = 0
    for group in _contractions(fabric.dims):
        strides = np.cumprod([1] + [fabric.dims[d] for d in group[:-1]])
        label = (coords[:, list(group)] * strides).sum(axis=1).astype(np.int64)
        size = int(np.prod([fabric.dims[d] for d in group]))
        lam_ring, used = contracted_mcf(label, size, links, demand, first, solve_mcf)
        lam, variables = min(lam, lam_ring), variables + used
        if size == n:  # contracted onto every dimension: the switch-level LP itself
            exact, reasons = True, ["the switch-level LP (the torus is small)"]
    return ScaledBound(
        lam, exact, "torus", variables, reason="; ".join(reasons) or "channel-load bound"
    )


def _contractions(dims: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Dimensions to contract onto: each one alone, and pairs up to TORUS_PAIR_MAX_NODES.

    A pair that is the whole torus (two dimensions) is the switch-level LP itself: exact.
    """
    real = [d for d, k in enumerate(dims) if k >= 2]
    out: list[tuple[int, ...]] = [(d,) for d in real]
    out += [
        (a, b)
        for i, a in enumerate(real)
        for b in real[i + 1 :]
        if dims[a] * dims[b] <= TORUS_PAIR_MAX_NODES
    ]
    return out


def _translation_invariant(fabric: Fabric, delta: IntArray, demand: SwitchDemand, n: int) -> bool:
    """Whether D[s, s + delta] is the same for every switch s, for every delta with demand."""
    strides = np.concatenate([[1], np.cumprod(fabric.dims)[:-1]]).astype(np.int64)
    key = delta @ strides
    uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    if np.any(counts != n):
        return False
    inv = inv.ravel()
    hi = np.full(uniq.size, -np.inf)
    lo = np.full(uniq.size, np.inf)
    np.maximum.at(hi, inv, demand.gbit)
    np.minimum.at(lo, inv, demand.gbit)
    return bool(np.all(hi - lo <= INVARIANCE_RTOL * hi))
