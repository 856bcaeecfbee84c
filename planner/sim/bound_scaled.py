"""The optimal-routing bound at scale: symmetry, cuts and closed forms instead of one big LP.

Every function here returns an UPPER bound ``lambda_up`` on the fabric part of the max
concurrent flow (``planner.sim.bound``): ``lambda* <= lambda_up`` for the switch-level demand
``D[s, t]`` (Gbit from first-tier switch s to first-tier switch t, s != t). The bound time
``1 / lambda_up`` is then never above the time of any routing, so a simulated time can never beat
it. Each also says whether it is *exact* (``lambda_up == lambda*``), with a proof sketch below;
``planner.sim.bound.max_concurrent_flow`` falls back to the reference LP when it is not.

Bounds
------
``leaf cut`` (any fabric, always valid). Everything a first-tier switch v sends to other
switches leaves through v's switch links, so ``lambda <= cap_out(v) / out(v)`` and likewise
``cap_in(v) / in(v)``.

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

``ocs`` (OCS direct-connect: pods, "blocks", whose spines are joined by circuits). Contracting
each block (its leaves and spines) to one node only relaxes the LP, so the max concurrent flow
of the block-level demand on the block graph (capacity a -> b = sum over circuits a-b of
min(spine a -> circuit, circuit -> spine b)) is an upper bound; so is the leaf cut::

    lambda_ocs = min( leaf cut,  max concurrent flow on the block graph (a small LP) )

The block LP has one commodity per source block: ``blocks * block edges + 1`` variables
(64 blocks: 258 k), solved by ``bound.block_mcf`` (HiGHS when small, else PDLP with a weak-
duality certificate). Exact (certified) when every block has one
spine in every *plane* (a connected component of the spine-circuit graph), every leaf of every
block splits its uplinks over the planes in the same proportions ``phi[k]``, and plane k holds
``phi[k]`` of the circuit capacity of every block pair: then the block-level flow split by
``phi`` over the planes (transit stays on a plane's spine: circuit -> spine -> circuit) plus
leaf links loaded ``phi[k] * out(v)`` is feasible at ``lambda_ocs``. The planner's designs
spread a block pair's circuits unevenly over the planes, so this certificate fails on them; the
bound stays valid, and on every OCS design the tests compare it with the reference LP (planned
OCS fabrics of 256-1,024 GPUs, five traffics) it equals the LP.

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

Tolerances: structure checks use :data:`SYMMETRY_RTOL`, translation invariance
:data:`INVARIANCE_RTOL`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from planner.sim.fabric import Fabric, NodeKind
from planner.sim.routing_strategies import is_valley_free

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Relative tolerance under which capacities and proportions count as equal (symmetry checks).
SYMMETRY_RTOL = 1e-9
#: Relative tolerance under which two pairs' demands count as equal (torus translation invariance).
INVARIANCE_RTOL = 1e-9

#: Contract a torus onto pairs of dimensions only when the pair has at most this many nodes
#: (its LP has about 4 n^2 variables).
TORUS_PAIR_MAX_NODES = 64
ScaledMethod = Literal["leaf_cut", "clos", "ocs", "torus", "contracted"]
#: Max concurrent flow on a small graph: (nodes, link tail, link head, capacity_gbps, demand src,
#: demand dst, demand gbit) -> (lambda, LP variables). ``bound.block_mcf`` solves it with HiGHS.
BlockSolver = Callable[
    [int, "IntArray", "IntArray", "FloatArray", "IntArray", "IntArray", "FloatArray"],
    tuple[float, int],
]


@dataclass(frozen=True)
class SwitchLinks:
    """Alive switch-to-switch directed links, parallel links merged (``bound.switch_links``)."""

    tail: IntArray
    head: IntArray
    capacity_gbps: FloatArray


@dataclass(frozen=True)
class SwitchDemand:
    """Gbit between first-tier switches (node ids), one entry per ordered pair, s != t."""

    src: IntArray
    dst: IntArray
    gbit: FloatArray


@dataclass(frozen=True)
class ScaledBound:
    """An upper bound on the fabric's max concurrent flow, and whether it is exact."""

    lambda_per_s: float
    exact: bool
    method: ScaledMethod
    variables: int = 0
    """Variables of the small LP it solved (0 for closed forms)."""
    reason: str = ""
    """Why it is not exact, or which structure it used."""


# ---- helpers ---------------------------------------------------------------------------------
def _ratio_min(capacity: npt.ArrayLike, load: npt.ArrayLike) -> float:
    """Min capacity / load over entries with load > 0 (inf when none)."""
    capacity = np.asarray(capacity, dtype=np.float64)
    load = np.asarray(load, dtype=np.float64)
    busy = load > 0
    if not busy.any():
        return math.inf
    return float(np.min(capacity[busy] / load[busy]))


def _close(a: FloatArray, b: FloatArray, scale: float) -> bool:
    """Whether a == b entrywise within SYMMETRY_RTOL of ``scale``."""
    if a.size == 0:
        return True
    return bool(np.max(np.abs(a - b)) <= SYMMETRY_RTOL * max(scale, 1e-300))


def _block(
    links: SwitchLinks, rows: tuple[int, int], cols: tuple[int, int], *, up: bool
) -> sp.csr_matrix:
    """Capacity matrix (rows x cols groups) of the links rows -> cols (up) or cols -> rows (down)."""
    t, h = (links.tail, links.head) if up else (links.head, links.tail)
    m = (t >= rows[0]) & (t < rows[1]) & (h >= cols[0]) & (h < cols[1])
    return sp.csr_matrix(
        (links.capacity_gbps[m], (t[m] - rows[0], h[m] - cols[0])),
        shape=(rows[1] - rows[0], cols[1] - cols[0]),
    )


def _same_up_down(m_up: sp.csr_matrix, m_down: sp.csr_matrix) -> bool:
    """Whether every link has the same capacity in both directions."""
    diff = abs(m_up - m_down)
    scale = float(m_up.max()) if m_up.nnz else 0.0
    return diff.nnz == 0 or float(diff.max()) <= SYMMETRY_RTOL * max(scale, 1e-300)


def _proportional_rows(m: sp.csr_matrix, group: IntArray) -> tuple[bool, sp.csr_matrix]:
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
    return min(_ratio_min(cap_out, out), _ratio_min(cap_in, into))


# ---- folded Clos ----------------------------------------------------------------------------
def clos_bound(
    fabric: Fabric, links: SwitchLinks, demand: SwitchDemand, lam_leaf: float
) -> ScaledBound | None:
    """Leaf and pod cuts on a folded Clos of 1-3 tiers; None when the fabric is not one."""
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
    m1 = _block(links, leaves, spines, up=True)
    if not _same_up_down(m1, _block(links, leaves, spines, up=False)):
        return _inexact(lam_leaf, "clos", "leaf links differ up and down")
    n_leaf, n_spine = m1.shape
    bip = sp.bmat([[None, m1], [m1.T, None]], format="csr")
    _, comp = connected_components(bip, directed=False)
    pod_of_leaf, pod_of_spine = comp[:n_leaf], comp[n_leaf:]
    ok, phi = _proportional_rows(m1, pod_of_leaf)
    if not ok:
        return _inexact(lam_leaf, "clos", "leaves of a pod split their uplinks differently")
    pods = int(comp.max()) + 1
    if fabric.tiers == 3:
        cores = (off[3], off[4])
        m2 = _block(links, spines, cores, up=True)
        if not _same_up_down(m2, _block(links, spines, cores, up=False)):
            return _inexact(lam_leaf, "clos", "spine links differ up and down")
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
    lam = min(lam_leaf, _ratio_min(u_pod, x), _ratio_min(u_pod, y))
    if fabric.tiers == 2:
        return ScaledBound(lam, True, "clos", reason="2 tiers: leaf cut")
    # (ii) spine j's core capacity is phi[p, j] * U_p, with phi of any leaf of pod p.
    has_leaf = np.zeros(pods, dtype=bool)
    has_leaf[pod_of_leaf] = True
    if not has_leaf[pod_of_spine].all() or np.any(u_pod[pod_of_leaf] <= 0):
        return _inexact(lam, "clos", "a spine without leaves, or a pod without core links")
    first_leaf = np.full(pods, -1, dtype=np.int64)
    first_leaf[pod_of_leaf[::-1]] = np.arange(n_leaf)[::-1]
    phi_spine = np.asarray(
        phi[first_leaf[pod_of_spine], np.arange(n_spine)]
    ).ravel()  # phi[p(j), j]
    if not _close(u_spine / u_pod[pod_of_spine], phi_spine, 1.0):
        return _inexact(lam, "clos", "spines' core capacity is not in proportion to their leaves'")
    # (iii) every pod splits its core capacity over the cores in the same proportions.
    pod_matrix = sp.csr_matrix(
        (np.ones(n_spine), (pod_of_spine, np.arange(n_spine))), shape=(pods, n_spine)
    )
    q = sp.diags(1.0 / u_pod) @ (pod_matrix @ m2)
    ref = q[int(pod_of_leaf[0])]
    diff = abs(q - sp.vstack([ref] * pods))
    if diff.nnz and float(diff.max()) > SYMMETRY_RTOL:
        return _inexact(lam, "clos", "pods split their core capacity differently")
    return ScaledBound(lam, True, "clos", reason="3 tiers: leaf and pod cuts")


def _inexact(lam: float, method: ScaledMethod, reason: str) -> ScaledBound:
    return ScaledBound(lam, False, method, reason=reason)


# ---- OCS direct-connect ---------------------------------------------------------------------
def ocs_bound(
    fabric: Fabric,
    links: SwitchLinks,
    demand: SwitchDemand,
    lam_leaf: float,
    solve_mcf: BlockSolver,
) -> ScaledBound | None:
    """Leaf cut and the block-level max concurrent flow; None when the fabric is not one."""
    if fabric.circuit_device is None or fabric.tiers != 3 or not is_valley_free(fabric):
        return None
    off = fabric.tier_offsets
    ends = np.concatenate([demand.src, demand.dst])
    if np.any((ends < off[1]) | (ends >= off[2])):
        return None  # a GPU hangs off a spine: not the wiring this bound contracts
    leaves, spines, circuits = (off[1], off[2]), (off[2], off[3]), (off[3], off[4])
    m1 = _block(links, leaves, spines, up=True)
    n_leaf, n_spine = m1.shape
    bip = sp.bmat([[None, m1], [m1.T, None]], format="csr")
    _, comp = connected_components(bip, directed=False)
    block_of_leaf, block_of_spine = comp[:n_leaf], comp[n_leaf:]
    blocks = int(comp.max()) + 1
    # Circuits: each joins two spines; directed capacity = min of its two directed links.
    up = _block(links, spines, circuits, up=True).tocsc()  # spine -> circuit
    down = _block(links, spines, circuits, up=False).tocsc()  # circuit -> spine
    if np.any(np.diff(up.indptr) != 2) or np.any(np.diff(down.indptr) != 2):
        return _inexact(lam_leaf, "ocs", "a circuit without exactly two spines")
    up.sort_indices()
    down.sort_indices()
    ends = up.indices.reshape(-1, 2)
    if np.any(down.indices.reshape(-1, 2) != ends):
        return _inexact(lam_leaf, "ocs", "a circuit's two directions join different spines")
    cu, cd = up.data.reshape(-1, 2), down.data.reshape(-1, 2)
    # Directed: spine a -> b (a = ends[:, 0]) and b -> a.
    arc_from = np.concatenate([ends[:, 0], ends[:, 1]])
    arc_to = np.concatenate([ends[:, 1], ends[:, 0]])
    arc_cap = np.concatenate([np.minimum(cu[:, 0], cd[:, 1]), np.minimum(cu[:, 1], cd[:, 0])])
    ba, bb = block_of_spine[arc_from], block_of_spine[arc_to]
    keep = (ba != bb) & (arc_cap > 0)
    key, inv = np.unique(ba[keep] * blocks + bb[keep], return_inverse=True)
    block_cap = np.bincount(inv.ravel(), weights=arc_cap[keep], minlength=key.size).astype(
        np.float64
    )
    # Block-level demand.
    bs = block_of_leaf[demand.src - off[1]]
    bt = block_of_leaf[demand.dst - off[1]]
    cross = bs != bt
    lam = lam_leaf
    variables = 0
    if cross.any():
        pair, pinv = np.unique(bs[cross] * blocks + bt[cross], return_inverse=True)
        gbit = np.bincount(pinv.ravel(), weights=demand.gbit[cross], minlength=pair.size).astype(
            np.float64
        )
        lam_blocks, variables = solve_mcf(
            blocks,
            (key // blocks).astype(np.int64),
            (key % blocks).astype(np.int64),
            block_cap,
            (pair // blocks).astype(np.int64),
            (pair % blocks).astype(np.int64),
            gbit,
        )
        lam = min(lam, lam_blocks)
    reason = _ocs_asymmetry(
        m1, links, leaves, spines, block_of_leaf, block_of_spine, arc_from, arc_to, arc_cap, keep
    )
    return ScaledBound(lam, not reason, "ocs", variables, reason or "leaf cut and block LP")


def _ocs_asymmetry(
    m1: sp.csr_matrix,
    links: SwitchLinks,
    leaves: tuple[int, int],
    spines: tuple[int, int],
    block_of_leaf: IntArray,
    block_of_spine: IntArray,
    arc_from: IntArray,
    arc_to: IntArray,
    arc_cap: FloatArray,
    keep: npt.NDArray[np.bool_],
) -> str:
    """Empty when the block LP plus leaf cut is exact (see the module docstring), else why not."""
    if not _same_up_down(m1, _block(links, leaves, spines, up=False)):
        return "leaf links differ up and down"
    n_spine = m1.shape[1]
    blocks = int(block_of_leaf.max()) + 1
    if np.any(np.bincount(block_of_spine, minlength=blocks) == 0):
        return "a block without spines"
    # Planes: components of the spine-circuit graph; one spine per block in each.
    g = sp.csr_matrix((np.ones(arc_from.size), (arc_from, arc_to)), shape=(n_spine, n_spine))
    planes, plane = connected_components(g, directed=False)
    if planes * blocks != n_spine or np.unique(block_of_spine * planes + plane).size != n_spine:
        return "a block lacks a spine in some plane (or has two)"
    # Every leaf splits its uplinks over the planes in the same proportions phi[k].
    to_plane = sp.csr_matrix(
        (np.ones(n_spine), (np.arange(n_spine), plane)), shape=(n_spine, planes)
    )
    ok, phi = _proportional_rows(m1 @ to_plane, np.zeros(m1.shape[0], dtype=np.int64))
    if not ok:
        return "leaves split their uplinks over the planes differently"
    phi_k = np.asarray(phi[0].todense()).ravel()
    # Plane k holds phi[k] of the circuit capacity of every block pair.
    ba, bb, k = block_of_spine[arc_from[keep]], block_of_spine[arc_to[keep]], plane[arc_from[keep]]
    pair_key, pinv = np.unique(ba * blocks + bb, return_inverse=True)
    total = np.bincount(pinv.ravel(), weights=arc_cap[keep], minlength=pair_key.size)
    per_plane = sp.csr_matrix(
        (arc_cap[keep], (pinv.ravel(), k)), shape=(pair_key.size, planes)
    ).toarray()
    if not _close(per_plane, np.outer(total, phi_k), float(total.max(initial=0.0))):
        return "planes hold different shares of the circuits between some blocks"
    return ""


# ---- torus ------------------------------------------------------------------------------------
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
        return _inexact(lam_leaf, "torus", "a link that is not a torus link")
    dim = np.argmax(moved, axis=1)
    step = disp[np.arange(disp.shape[0]), dim]
    k_of = dims[dim]
    plus = step == 1
    if np.any(~plus & (step != k_of - 1)):
        return _inexact(lam_leaf, "torus", "a link that is not a torus link")
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
        lam = min(lam, _ratio_min(numerator, load))
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


# ---- dispatch -------------------------------------------------------------------------------
def scaled_bound(
    fabric: Fabric, links: SwitchLinks, demand: SwitchDemand, solve_mcf: BlockSolver
) -> ScaledBound:
    """The tightest bound this module knows for the fabric: Clos, OCS, torus, else the leaf cut."""
    lam_leaf = leaf_cut(fabric, links, demand)
    for special in (
        clos_bound(fabric, links, demand, lam_leaf),
        torus_bound(fabric, links, demand, lam_leaf, solve_mcf),
    ):
        if special is not None:
            return special
    ocs = ocs_bound(fabric, links, demand, lam_leaf, solve_mcf)
    if ocs is not None:
        return ocs
    contracted = single_neighbour_bound(fabric, links, demand, lam_leaf, solve_mcf)
    if contracted is not None:
        return contracted
    return _inexact(lam_leaf, "leaf_cut", "no symmetric structure recognised")


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
