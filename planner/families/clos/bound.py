"""The folded Clos's optimal-routing bound: leaf and pod cuts, exact on symmetric planes.

Set on every plane ``planner.families.clos.fabric.clos_fabric`` builds (``Fabric.bound``) and
asked first by ``planner.sim.bound_scaled``; it returns None once the plane is not a folded Clos.

``clos`` (folded Clos, 1-3 tiers, healthy and symmetric). Pods are the connected components
of the leaf-spine graph; ``U_p`` is pod p's spine-to-core capacity, ``X_p`` / ``Y_p`` the Gbit
pod p sends to / receives from other pods::

    lambda_clos = min( min_v C_v / max(out(v), in(v)),  min_p U_p / max(X_p, Y_p) )

Both terms are cuts, so it is valid. It is exact when (checked on the arrays, to
:data:`SYMMETRY_RTOL`): every link has the same capacity up and down; (i) within a pod every
leaf splits its uplink capacity over the pod's spines in the same proportions ``phi[p, j]``;
(ii) spine j's core capacity is ``phi[p, j] * U_p``; (iii) every pod splits its core capacity
over the cores in the same proportions ``theta[c]``. Then the routing that sends every leaf's
traffic up in proportion ``phi``, every spine's in proportion of its core links, and down the
mirror image loads leaf link (v, j) with ``phi[p, j] * out(v)`` (<= its capacity iff the leaf
cut holds), spine-core link (j, c) with ``X_p * M2[j, c] / U_p`` (iff the pod cut holds), and the
down links alike: a feasible routing at ``lambda_clos``, so it is the optimum.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from planner.sim.bound_scaled import (
    SYMMETRY_RTOL,
    capacity_block,
    close,
    inexact,
    proportional_rows,
    ratio_min,
    same_up_down,
)
from planner.sim.bound_types import BlockSolver, ScaledBound, SwitchDemand, SwitchLinks
from planner.sim.fabric import Fabric, NodeKind
from planner.sim.routing_strategies import is_valley_free


def clos_bound(
    fabric: Fabric,
    links: SwitchLinks,
    demand: SwitchDemand,
    lam_leaf: float,
    solve_mcf: BlockSolver | None = None,
) -> ScaledBound | None:
    """Leaf and pod cuts on a folded Clos of 1-3 tiers; None when the fabric is not one.

    Closed forms only: ``solve_mcf`` (the ``StructureBound`` signature) is not used.
    """
    kinds = fabric.node_kind[fabric.first_switch :]
    if (
        fabric.dims
        or fabric.circuit_device is not None
        or not is_valley_free(fabric)
        or fabric.tiers > 3
        or np.any(kinds != NodeKind.SWITCH)
    ):
        return None
    tier_t, tier_h = fabric.tier_of(links.tail), fabric.tier_of(links.head)
    if np.any(np.abs(tier_t - tier_h) != 1):
        return None  # a link skips a tier or joins two switches of one tier: not a folded Clos
    off = fabric.tier_offsets
    ends = np.concatenate([demand.src, demand.dst])
    if np.any((ends < off[1]) | (ends >= off[2])):
        return None  # a GPU hangs off a switch above the leaves: not the wiring proven here
    if fabric.tiers == 1:
        return ScaledBound(lam_leaf, True, "clos", reason="one tier: leaves are not connected")
    leaves, spines = (off[1], off[2]), (off[2], off[3])
    m1 = capacity_block(links, leaves, spines, up=True)
    if not same_up_down(m1, capacity_block(links, leaves, spines, up=False)):
        return inexact(lam_leaf, "clos", "leaf links differ up and down")
    n_leaf, n_spine = m1.shape
    bip = sp.bmat([[None, m1], [m1.T, None]], format="csr")
    _, comp = connected_components(bip, directed=False)
    pod_of_leaf, pod_of_spine = comp[:n_leaf], comp[n_leaf:]
    ok, phi = proportional_rows(m1, pod_of_leaf)
    if not ok:
        return inexact(lam_leaf, "clos", "leaves of a pod split their uplinks differently")
    pods = int(comp.max()) + 1
    if fabric.tiers == 3:
        cores = (off[3], off[4])
        m2 = capacity_block(links, spines, cores, up=True)
        if not same_up_down(m2, capacity_block(links, spines, cores, up=False)):
            return inexact(lam_leaf, "clos", "spine links differ up and down")
    else:
        m2 = sp.csr_matrix((n_spine, 0))
    # Pod cut (2 tiers: pods are not connected at all): valid whatever the symmetry.
    u_spine = np.asarray(m2.sum(axis=1)).ravel()
    u_pod = np.bincount(pod_of_spine, weights=u_spine, minlength=pods)
    pod_s = pod_of_leaf[demand.src - off[1]]
    pod_t = pod_of_leaf[demand.dst - off[1]]
    cross = pod_s != pod_t
    x = np.bincount(pod_s[cross], weights=demand.gbit[cross], minlength=pods)
    y = np.bincount(pod_t[cross], weights=demand.gbit[cross], minlength=pods)
    lam = min(lam_leaf, ratio_min(u_pod, x), ratio_min(u_pod, y))
    if fabric.tiers == 2:
        return ScaledBound(lam, True, "clos", reason="2 tiers: leaf cut")
    # (ii) spine j's core capacity is phi[p, j] * U_p, with phi of any leaf of pod p.
    has_leaf = np.zeros(pods, dtype=bool)
    has_leaf[pod_of_leaf] = True
    if not has_leaf[pod_of_spine].all() or np.any(u_pod[pod_of_leaf] <= 0):
        return inexact(lam, "clos", "a spine without leaves, or a pod without core links")
    first_leaf = np.full(pods, -1, dtype=np.int64)
    first_leaf[pod_of_leaf[::-1]] = np.arange(n_leaf)[::-1]
    phi_spine = np.asarray(
        phi[first_leaf[pod_of_spine], np.arange(n_spine)]
    ).ravel()  # phi[p(j), j]
    if not close(u_spine / u_pod[pod_of_spine], phi_spine, 1.0):
        return inexact(lam, "clos", "spines' core capacity is not in proportion to their leaves'")
    # (iii) every pod splits its core capacity over the cores in the same proportions.
    pod_matrix = sp.csr_matrix(
        (np.ones(n_spine), (pod_of_spine, np.arange(n_spine))), shape=(pods, n_spine)
    )
    q = sp.diags(1.0 / u_pod) @ (pod_matrix @ m2)
    ref = q[int(pod_of_leaf[0])]
    diff = abs(q - sp.vstack([ref] * pods))
    if diff.nnz and float(diff.max()) > SYMMETRY_RTOL:
        return inexact(lam, "clos", "pods split their core capacity differently")
    return ScaledBound(lam, True, "clos", reason="3 tiers: leaf and pod cuts")
