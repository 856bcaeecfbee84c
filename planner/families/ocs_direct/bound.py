"""The OCS direct-connect optimal-routing bound: the leaf cut and a block-level LP.

Set on the planes of circuit pseudo-nodes (``Fabric.bound``) and asked first by
``planner.sim.bound_scaled``; None once the plane is not blocks joined by circuits.

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
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from planner.sim.bound_scaled import (
    capacity_block,
    close,
    inexact,
    proportional_rows,
    same_up_down,
)
from planner.sim.bound_types import BlockSolver, ScaledBound, SwitchDemand, SwitchLinks
from planner.sim.fabric import Fabric, FloatArray, IntArray
from planner.sim.routing_strategies import is_valley_free


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
    m1 = capacity_block(links, leaves, spines, up=True)
    n_leaf, n_spine = m1.shape
    bip = sp.bmat([[None, m1], [m1.T, None]], format="csr")
    _, comp = connected_components(bip, directed=False)
    block_of_leaf, block_of_spine = comp[:n_leaf], comp[n_leaf:]
    blocks = int(comp.max()) + 1
    # Circuits: each joins two spines; directed capacity = min of its two directed links.
    up = capacity_block(links, spines, circuits, up=True).tocsc()  # spine -> circuit
    down = capacity_block(links, spines, circuits, up=False).tocsc()  # circuit -> spine
    if np.any(np.diff(up.indptr) != 2) or np.any(np.diff(down.indptr) != 2):
        return inexact(lam_leaf, "ocs", "a circuit without exactly two spines")
    up.sort_indices()
    down.sort_indices()
    ends = up.indices.reshape(-1, 2)
    if np.any(down.indices.reshape(-1, 2) != ends):
        return inexact(lam_leaf, "ocs", "a circuit's two directions join different spines")
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
    if not same_up_down(m1, capacity_block(links, leaves, spines, up=False)):
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
    ok, phi = proportional_rows(m1 @ to_plane, np.zeros(m1.shape[0], dtype=np.int64))
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
    if not close(per_plane, np.outer(total, phi_k), float(total.max(initial=0.0))):
        return "planes hold different shares of the circuits between some blocks"
    return ""
