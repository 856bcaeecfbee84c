"""The optimal-routing bound at scale: cuts and small contracted LPs instead of one big LP.

Every function here returns an UPPER bound ``lambda_up`` on the fabric part of the max
concurrent flow (``planner.sim.bound``): ``lambda* <= lambda_up`` for the switch-level demand
``D[s, t]`` (Gbit from first-tier switch s to first-tier switch t, s != t). The bound time
``1 / lambda_up`` is then never above the time of any routing, so a simulated time can never beat
it. Each also says whether it is *exact* (``lambda_up == lambda*``);
``planner.sim.bound.max_concurrent_flow`` falls back to the reference LP when it is not.

Bounds
------
``leaf cut`` (any fabric, always valid). Everything a first-tier switch v sends to other
switches leaves through v's switch links, so ``lambda <= cap_out(v) / out(v)`` and likewise
``cap_in(v) / in(v)``.

The family's own (``Fabric.bound``, asked first). A family that proves a bound for the
structure of its planes sets it when it builds them: the folded Clos's leaf and pod cuts
(``planner.families.clos.bound``), the OCS direct-connect block LP
(``planner.families.ocs_direct.bound``), the torus's channel-load bound and ring contractions
(``planner.families.torus.bound``), each with its proof in its docstring. None of them is
assumed here: this module knows no family's geometry.

``contracted`` (a fabric where most switches hang off one neighbour, such as the merged slices
of an OCS fabric routed by traffic engineering): contract each such switch into its neighbour
and solve the max concurrent flow of the contracted graph (``single_neighbour_bound``).
Contraction only relaxes the LP, so it is an upper bound; not exact in general.

Tolerances: structure checks use :data:`SYMMETRY_RTOL`.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from planner.sim.bound_types import BlockSolver, ScaledBound, SwitchDemand, SwitchLinks
from planner.sim.fabric import Fabric

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Relative tolerance under which capacities and proportions count as equal (symmetry checks).
SYMMETRY_RTOL = 1e-9


# ---- helpers ---------------------------------------------------------------------------------
def ratio_min(capacity: npt.ArrayLike, load: npt.ArrayLike) -> float:
    """Min capacity / load over entries with load > 0 (inf when none)."""
    capacity = np.asarray(capacity, dtype=np.float64)
    load = np.asarray(load, dtype=np.float64)
    busy = load > 0
    if not busy.any():
        return math.inf
    return float(np.min(capacity[busy] / load[busy]))


def close(a: FloatArray, b: FloatArray, scale: float) -> bool:
    """Whether a == b entrywise within SYMMETRY_RTOL of ``scale``."""
    if a.size == 0:
        return True
    return bool(np.max(np.abs(a - b)) <= SYMMETRY_RTOL * max(scale, 1e-300))


def capacity_block(
    links: SwitchLinks, rows: tuple[int, int], cols: tuple[int, int], *, up: bool
) -> sp.csr_matrix:
    """Capacity matrix (rows x cols groups) of the links rows -> cols (up) or cols -> rows (down)."""
    t, h = (links.tail, links.head) if up else (links.head, links.tail)
    m = (t >= rows[0]) & (t < rows[1]) & (h >= cols[0]) & (h < cols[1])
    return sp.csr_matrix(
        (links.capacity_gbps[m], (t[m] - rows[0], h[m] - cols[0])),
        shape=(rows[1] - rows[0], cols[1] - cols[0]),
    )


def same_up_down(m_up: sp.csr_matrix, m_down: sp.csr_matrix) -> bool:
    """Whether every link has the same capacity in both directions."""
    diff = abs(m_up - m_down)
    scale = float(m_up.max()) if m_up.nnz else 0.0
    return diff.nnz == 0 or float(diff.max()) <= SYMMETRY_RTOL * max(scale, 1e-300)


def proportional_rows(m: sp.csr_matrix, group: IntArray) -> tuple[bool, sp.csr_matrix]:
    """Row-normalised m, and whether rows of one group are equal (all rows must be non-zero)."""
    total = np.asarray(m.sum(axis=1)).ravel()
    if np.any(total <= 0):
        return False, m
    phi = sp.diags(1.0 / total) @ m
    first = np.full(int(group.max()) + 1, -1, dtype=np.int64)
    first[group[::-1]] = np.arange(group.size)[::-1]
    diff = abs(phi - phi[first[group]])
    return (diff.nnz == 0 or float(diff.max()) <= SYMMETRY_RTOL), phi


# ---- leaf cut (any fabric) --------------------------------------------------------------------
def leaf_cut(fabric: Fabric, links: SwitchLinks, demand: SwitchDemand) -> float:
    """Min over first-tier switches v of cap_out(v) / out(v) and cap_in(v) / in(v)."""
    n = fabric.nodes
    cap_out = np.bincount(links.tail, weights=links.capacity_gbps, minlength=n)
    cap_in = np.bincount(links.head, weights=links.capacity_gbps, minlength=n)
    out = np.bincount(demand.src, weights=demand.gbit, minlength=n)
    into = np.bincount(demand.dst, weights=demand.gbit, minlength=n)
    return min(ratio_min(cap_out, out), ratio_min(cap_in, into))


def inexact(lam: float, method: str, reason: str) -> ScaledBound:
    """A bound that is valid but not proven exact, and why."""
    return ScaledBound(lam, False, method, reason=reason)


# ---- contraction ------------------------------------------------------------------------------------
def contracted_mcf(
    label: IntArray,
    groups: int,
    links: SwitchLinks,
    demand: SwitchDemand,
    first: int,
    solve_mcf: BlockSolver,
) -> tuple[float, int]:
    """Max concurrent flow after contracting the switches of each label into one node.

    ``label[v - first]`` in ``0 .. groups-1`` for every switch v. Contraction only relaxes the LP
    (links inside a group become free), so the result is an upper bound on lambda.
    Returns (lambda, LP variables); inf when no demand crosses groups.
    """
    lt, lh = label[links.tail - first], label[links.head - first]
    keep = lt != lh
    key, inv = np.unique(lt[keep] * groups + lh[keep], return_inverse=True)
    cap = np.bincount(inv.ravel(), weights=links.capacity_gbps[keep], minlength=key.size)
    ds, dt = label[demand.src - first], label[demand.dst - first]
    cross = ds != dt
    if not cross.any():
        return math.inf, 0
    pair, pinv = np.unique(ds[cross] * groups + dt[cross], return_inverse=True)
    gbit = np.bincount(pinv.ravel(), weights=demand.gbit[cross], minlength=pair.size)
    return solve_mcf(
        groups,
        (key // groups).astype(np.int64),
        (key % groups).astype(np.int64),
        cap.astype(np.float64),
        (pair // groups).astype(np.int64),
        (pair % groups).astype(np.int64),
        gbit.astype(np.float64),
    )


# ---- dispatch -------------------------------------------------------------------------------
def scaled_bound(
    fabric: Fabric, links: SwitchLinks, demand: SwitchDemand, solve_mcf: BlockSolver
) -> ScaledBound:
    """The family's bound for its structure when it has one, else contracted, else the leaf cut."""
    lam_leaf = leaf_cut(fabric, links, demand)
    if fabric.bound is not None:
        own = fabric.bound(fabric, links, demand, lam_leaf, solve_mcf)
        if own is not None:
            return own
    contracted = single_neighbour_bound(fabric, links, demand, lam_leaf, solve_mcf)
    if contracted is not None:
        return contracted
    return inexact(lam_leaf, "leaf_cut", "no symmetric structure recognised")


#: Least share of a fabric's switches that must hang off one neighbour for
#: ``single_neighbour_bound`` to contract them (below it the LP would barely shrink).
MIN_CONTRACTED_SHARE = 0.5


def single_neighbour_bound(
    fabric: Fabric,
    links: SwitchLinks,
    demand: SwitchDemand,
    lam_leaf: float,
    solve_mcf: BlockSolver,
) -> ScaledBound | None:
    """Leaf cut and the max concurrent flow with every one-neighbour switch contracted into it.

    A switch whose links all go to one other switch (a leaf of the merged slices of an OCS
    fabric routed by traffic engineering, ``planner.families.ocs_direct.wcmp``) becomes part of
    that switch: contraction only relaxes the LP, so the contracted LP is an upper bound on
    lambda, and so is the leaf cut. Not exact in general (flagged). None when fewer than
    ``MIN_CONTRACTED_SHARE`` of the switches hang off one neighbour.
    """
    first, n = fabric.first_switch, fabric.switches
    if not links.tail.size or n < 2:
        return None
    t, h = links.tail - first, links.head - first
    key = np.unique(np.minimum(t, h) * n + np.maximum(t, h))
    a, b = key // n, key % n
    degree = np.bincount(np.concatenate([a, b]), minlength=n)
    lonely = degree == 1
    if lonely.sum() < MIN_CONTRACTED_SHARE * n:
        return None
    label = np.arange(n, dtype=np.int64)
    one = lonely[a] & ~lonely[b]
    label[a[one]] = b[one]
    other = lonely[b] & ~lonely[a]
    label[b[other]] = a[other]
    _, label = np.unique(label, return_inverse=True)
    lam, variables = contracted_mcf(
        label.astype(np.int64), int(label.max()) + 1, links, demand, first, solve_mcf
    )
    return ScaledBound(
        min(lam_leaf, lam), False, "contracted", variables, "leaf cut and contracted LP"
    )
