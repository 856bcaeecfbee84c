"""The optimal-routing bound: the max concurrent flow of a traffic phase on one plane.

Given flows (source GPU, destination GPU, Gbit to carry in this plane), the bound is the largest
``lambda`` (per second) such that every flow can carry ``lambda * demand_gbit`` Gb/s at the same
time within link capacities, under *any* routing (fractional, multipath). ``time_s = 1 / lambda``
is then the least time any routing needs to carry the whole phase, and ECMP or spraying can only
be slower.

Formulation
-----------
NIC links are dedicated to one GPU, so the bound splits into two independent parts::

    lambda* = min(lambda_nic, lambda_fabric)

* ``lambda_nic`` is closed-form: for every GPU ``g``,
  ``capacity(up link of g) / Gbit sent by g`` and ``capacity(down link of g) / Gbit received by g``;
  the minimum over GPUs. Flows from a GPU to itself never touch the network and are ignored.
* ``lambda_fabric`` is an LP on the switch-level network. Demands are aggregated by
  (source leaf, destination leaf) as ``D[s, t]`` (flows inside one leaf never enter the fabric),
  and commodities by source leaf: one commodity ``k`` per source leaf, with several sinks.
  Parallel links between two switches are merged into one link with their summed capacity (this
  does not change the LP's optimum: any split over parallel links is feasible). Failed links have
  capacity 0 and are left out::

      max  lambda
      s.t. sum_{e in out(v)} x[k, e] - sum_{e in in(v)} x[k, e] = lambda * b[k, v]   for all k, v
           sum_k x[k, e] <= capacity[e]                                             for all e
           x >= 0, lambda >= 0

  with ``b[k, s_k] = sum_t D[s_k, t]`` at the commodity's source leaf, ``b[k, t] = -D[s_k, t]`` at
  each destination leaf, and 0 at every other switch. The matrix is built with ``scipy.sparse``
  (``kron`` of the switch incidence matrix with an identity over commodities) and solved with
  ``scipy.optimize.linprog`` with HiGHS (``method="highs-ipm"``: the interior-point solver with
  crossover, much faster than the default dual simplex on this degenerate LP).

The LP has ``commodities * merged links + 1`` variables. Above :data:`MAX_LP_VARIABLES` it is not
built: the result has ``status=None`` and a ``skipped_reason``, and still carries ``lambda_nic``.
Demands and capacities are scaled to O(1) before solving and the answer is scaled back.
This LP is the reference (``method="lp"``).

At scale (``method="auto"``, the default; issue 11)
----------------------------------------------------
``planner.sim.bound_scaled`` bounds ``lambda_fabric`` from above without the big LP: leaf and
pod cuts on a folded Clos (exact when its tiers are symmetric, which it checks), the leaf cut
plus a block-level LP on OCS direct-connect fabrics, and a channel-load closed form plus
contractions onto each dimension on tori; its docstring proves each and says when it is exact.
``auto`` takes that bound when it is proven exact, else this LP when it fits in
``max_variables``, else the scaled bound flagged ``exact=False`` (status FEASIBLE): an upper
bound on lambda, so ``time_s`` is still never above the time of any routing. Block-level LPs
above :data:`BLOCK_HIGHS_MAX_VARIABLES` go to PDLP, and the answer is the weak-duality bound of
its dual (``length_bound``), valid however far PDLP converged.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import linprog
from scipy.sparse.csgraph import shortest_path

from models.status import Status, status_of
from planner.sim.bound_scaled import scaled_bound
from planner.sim.bound_types import ScaledBound, SwitchDemand, SwitchLinks
from planner.sim.fabric import Fabric

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Largest LP (variables) the bound builds; above it the result is skipped, not solved. Measured
#: with HiGHS IPM on random permutations: 33k variables (1k GPUs) ~1.5 s, 262k (2k GPUs) ~100 s,
#: 1.1M (4k GPUs, 3 tiers) still running after 6 min; 16k GPUs would need 21M.
MAX_LP_VARIABLES = 300_000
#: HiGHS interior point (with crossover): on a 1k-GPU permutation it solved in ~1 s where HiGHS's
#: default dual simplex took ~9 s (the max-concurrent-flow LP is highly degenerate).
LP_METHOD: Literal["highs-ipm"] = "highs-ipm"
#: Block-level LPs (``block_mcf``) up to this many variables are solved by HiGHS, above by PDLP.
BLOCK_HIGHS_MAX_VARIABLES = 60_000
#: PDLP's relative optimality tolerance: the length bound of its duals is then within about
#: this of the optimum (measured on the 64-block LP of ocs-65k: 2e-6 above HiGHS's optimum).
PDLP_RTOL = 1e-6
#: Wall-time cap of one PDLP solve (the bound stays valid when it stops early, only looser).
PDLP_TIME_LIMIT_S = 60.0
#: Lengths are lifted by this fraction of the largest so that no link is free in shortest paths.
LENGTH_FLOOR_RTOL = 1e-12
#: Relative tolerance under which the NIC bound counts as binding when it ties the fabric bound.
BINDING_RTOL = 1e-9

Binding = Literal["nic", "fabric"]
Method = Literal["auto", "lp", "scaled"]


@dataclass(frozen=True)
class LpSize:
    """Size of the fabric LP (built or not)."""

    commodities: int
    """Source leaves with traffic that crosses the fabric."""
    links: int
    """Alive switch-to-switch directed links after merging parallel links."""
    switches: int
    variables: int
    equality_rows: int
    inequality_rows: int


@dataclass(frozen=True)
class BoundResult:
    """The max concurrent flow of one traffic phase on one plane.

    ``lambda_per_s`` is the largest common rate multiplier: every flow can carry
    ``lambda_per_s * demand_gbit`` Gb/s at once; ``time_s = 1 / lambda_per_s``.
    """

    status: Status | None
    """Solver status of the fabric LP (OPTIMAL when no LP was needed); None when skipped."""
    lambda_per_s: float | None
    """min(lambda_nic, lambda_fabric); None when the LP was skipped."""
    time_s: float | None
    """Least time any routing needs to carry the phase (0 without traffic, inf when cut off)."""
    binding: Binding | None
    """Which constraint binds: NIC links or the switch fabric; None without traffic or when skipped."""
    lambda_nic_per_s: float
    """Bound from NIC links alone (inf without traffic)."""
    lambda_fabric_per_s: float | None
    """Bound from the switch fabric alone (inf when no traffic crosses it; None when skipped)."""
    size: LpSize | None = None
    """LP size, when a fabric LP was considered."""
    solve_s: float = 0.0
    """Wall time spent building and solving the LP."""
    skipped_reason: str = ""
    message: str = ""
    """Solver message, or the scaled bound's reasoning."""
    method: str = "lp"
    """How lambda_fabric was found: 'lp' (reference LP), 'clos', 'ocs', 'torus', 'leaf_cut'
    (``planner.sim.bound_scaled``) or 'nic' (no traffic crosses the fabric)."""
    exact: bool = True
    """Whether lambda is the max concurrent flow itself; False: a valid upper bound on it (so
    ``time_s`` is still a valid lower bound on any routing's time), status FEASIBLE."""

    @property
    def skipped(self) -> bool:
        """Whether the LP was too large to build."""
        return self.status is None

    @property
    def fraction_of_nic(self) -> float | None:
        """Lambda / lambda_nic: 1.0 when the NICs, not the fabric, limit the phase."""
        if self.lambda_per_s is None or not math.isfinite(self.lambda_nic_per_s):
            return None
        return self.lambda_per_s / self.lambda_nic_per_s


# ---- data ------------------------------------------------------------------------------------
def nic_bound(fabric: Fabric, src: IntArray, dst: IntArray, demand_gbit: FloatArray) -> float:
    """Largest lambda the NIC links allow.

    lambda_nic = min_g min(cap_up[g] / sent[g], cap_down[g] / received[g])  over GPUs with traffic
    """
    cap = fabric.capacity_gbps
    sent = np.bincount(src, weights=demand_gbit, minlength=fabric.gpus)
    received = np.bincount(dst, weights=demand_gbit, minlength=fabric.gpus)
    gpus = np.arange(fabric.gpus)
    load = np.concatenate([sent, received])
    nic_cap = np.concatenate([cap[2 * gpus], cap[2 * gpus + 1]])
    busy = load > 0
    if not busy.any():
        return math.inf
    return float(np.min(nic_cap[busy] / load[busy]))


def leaf_demands(
    fabric: Fabric, src: IntArray, dst: IntArray, demand_gbit: FloatArray
) -> tuple[IntArray, IntArray, FloatArray]:
    """Demand aggregated by (source leaf, destination leaf), leaving out flows inside one leaf.

    Returns source leaves, destination leaves (node ids) and Gbit, one entry per pair.
    """
    s_leaf, t_leaf = fabric.leaf_of(src), fabric.leaf_of(dst)
    cross = (s_leaf != t_leaf) & (demand_gbit > 0)
    n = fabric.nodes
    pair, inverse = np.unique(s_leaf[cross] * n + t_leaf[cross], return_inverse=True)
    gbit = np.bincount(inverse.ravel(), weights=demand_gbit[cross], minlength=pair.size).astype(
        np.float64
    )
    return (pair // n).astype(np.int64), (pair % n).astype(np.int64), gbit


def switch_links(fabric: Fabric) -> tuple[IntArray, IntArray, FloatArray]:
    """Alive switch-to-switch directed links with parallel links merged (capacities summed).

    A link is switch-to-switch when neither end is a GPU (on a torus: the torus links).
    """
    src, dst, cap = fabric.src, fabric.dst, fabric.capacity_gbps
    first = fabric.first_switch
    keep = (src >= first) & (dst >= first) & (cap > 0)
    n = fabric.nodes
    key, inverse = np.unique(src[keep] * n + dst[keep], return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=cap[keep], minlength=key.size).astype(np.float64)
    return (key // n).astype(np.int64), (key % n).astype(np.int64), merged


def lp_size(commodities: int, links: int, switches: int) -> LpSize:
    """Size of the fabric LP for these counts."""
    return LpSize(
        commodities=commodities,
        links=links,
        switches=switches,
        variables=commodities * links + 1,
        equality_rows=commodities * switches,
        inequality_rows=links,
    )


# ---- model -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FabricLp:
    """The fabric LP in linprog's form: minimise c @ z s.t. A_ub z <= b_ub, A_eq z = b_eq, z >= 0."""

    c: FloatArray
    a_ub: sp.csr_matrix
    b_ub: FloatArray
    a_eq: sp.csr_matrix
    b_eq: FloatArray
    size: LpSize


def build_fabric_lp(
    switches: int,
    link_tail: IntArray,
    link_head: IntArray,
    capacity: FloatArray,
    supply: FloatArray,
) -> FabricLp:
    """Assemble the max-concurrent-flow LP; variables are x[k, e] (k-major), then lambda.

    Parameters
    ----------
    switches
        Switch count; ``link_tail``/``link_head`` are switch indices ``0 .. switches-1``.
    capacity
        Capacity of every (merged) link, scaled.
    supply
        ``(commodities, switches)``: b[k, v], positive at the source, negative at sinks, scaled.
    """
    k_count, e_count = supply.shape[0], link_tail.size
    size = lp_size(k_count, e_count, switches)
    cols = np.arange(e_count)
    # Flow conservation: for each commodity and switch, out - in = lambda * b[k, v].
    incidence = sp.csr_matrix(
        (
            np.concatenate([np.ones(e_count), -np.ones(e_count)]),
            (np.concatenate([link_tail, link_head]), np.concatenate([cols, cols])),
        ),
        shape=(switches, e_count),
    )
    conservation = sp.kron(sp.identity(k_count, format="csr"), incidence, format="csr")
    lam_col = sp.csr_matrix(-supply.reshape(-1, 1))
    a_eq = sp.hstack([conservation, lam_col], format="csr")
    # Link capacity: the commodities together stay within each link's capacity.
    sharing = sp.kron(sp.csr_matrix(np.ones((1, k_count))), sp.identity(e_count), format="csr")
    a_ub = sp.hstack([sharing, sp.csr_matrix((e_count, 1))], format="csr")
    # Objective: maximise lambda.
    c = np.zeros(size.variables)
    c[-1] = -1.0
    return FabricLp(
        c=c,
        a_ub=a_ub,
        b_ub=np.asarray(capacity, dtype=np.float64),
        a_eq=a_eq,
        b_eq=np.zeros(a_eq.shape[0]),
        size=size,
    )


# ---- solve ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class LpOutcome:
    """What the LP solve returned: lambda (None unless optimal), status, message, size, time."""

    lambda_per_s: float | None
    status: Status
    message: str
    size: LpSize
    solve_s: float


def solve_mcf_lp(
    nodes: int,
    tail: IntArray,
    head: IntArray,
    capacity_gbps: FloatArray,
    src: IntArray,
    dst: IntArray,
    gbit: FloatArray,
) -> LpOutcome:
    """Max concurrent flow on a small graph (nodes ``0 .. nodes-1``), commodities by source.

    Parallel links must be merged already. Demands and capacities are scaled to O(1) before
    solving and the answer is scaled back.
    """
    started = time.perf_counter()
    sources, k_of_pair = np.unique(src, return_inverse=True)
    cap_scale = float(capacity_gbps.max()) if capacity_gbps.size else 1.0
    demand_scale = float(gbit.max())
    supply = np.zeros((sources.size, nodes))
    k_of_pair = k_of_pair.ravel()
    np.add.at(supply, (k_of_pair, src), gbit / demand_scale)
    np.add.at(supply, (k_of_pair, dst), -gbit / demand_scale)
    lp = build_fabric_lp(nodes, tail, head, capacity_gbps / cap_scale, supply)
    res = linprog(
        lp.c,
        A_ub=lp.a_ub,
        b_ub=lp.b_ub,
        A_eq=lp.a_eq,
        b_eq=lp.b_eq,
        bounds=(0, None),
        method=LP_METHOD,
    )
    status = status_of("linprog", res.status)
    lam = None
    if status is Status.OPTIMAL and res.x is not None:
        lam = float(res.x[-1]) * cap_scale / demand_scale
    return LpOutcome(lam, status, str(res.message), lp.size, time.perf_counter() - started)


def block_mcf(
    nodes: int,
    tail: IntArray,
    head: IntArray,
    capacity_gbps: FloatArray,
    src: IntArray,
    dst: IntArray,
    gbit: FloatArray,
) -> tuple[float, int]:
    """An upper bound on the max concurrent flow of a contracted (block-level) graph.

    Used by ``bound_scaled`` (a contracted graph only relaxes the fabric's LP, so its optimum is
    an upper bound on the fabric's lambda). Commodities are aggregated on the side with fewer
    distinct nodes (by source, or by destination on the reversed graph: the same optimum).
    Up to :data:`BLOCK_HIGHS_MAX_VARIABLES` variables HiGHS solves it to optimality; above,
    PDLP runs to :data:`PDLP_RTOL` and the answer is the length-function bound of its duals
    (``pdlp_length_bound``), valid however far PDLP got. Returns (lambda, variables).
    """
    if tail.size == 0:
        return 0.0, 0
    if np.unique(dst).size < np.unique(src).size:
        tail, head, src, dst = head, tail, dst, src
    size = lp_size(np.unique(src).size, tail.size, nodes)
    if size.variables <= BLOCK_HIGHS_MAX_VARIABLES:
        out = solve_mcf_lp(nodes, tail, head, capacity_gbps, src, dst, gbit)
        return (math.inf if out.lambda_per_s is None else out.lambda_per_s), size.variables
    return pdlp_length_bound(nodes, tail, head, capacity_gbps, src, dst, gbit), size.variables


def length_bound(
    nodes: int,
    tail: IntArray,
    head: IntArray,
    capacity_gbps: FloatArray,
    src: IntArray,
    dst: IntArray,
    gbit: FloatArray,
    length: FloatArray,
) -> float:
    """Upper bound on lambda from link lengths (weak duality of max concurrent flow).

    For any lengths l >= 0 on the links::

        lambda* <= sum_e capacity[e] l[e] / sum_pairs gbit * dist_l(src, dst)

    (every unit of flow pays at least dist_l on its way, and no link carries more than its
    capacity). Lengths are lifted by a tiny amount so no link is free; inf when no pair has a
    positive distance, 0 when a pair is disconnected.
    """
    top = float(np.max(length, initial=0.0))
    lift = LENGTH_FLOOR_RTOL * top if top > 0 else 1.0
    lengths = np.maximum(length, 0.0) + lift
    graph = sp.csr_matrix((lengths, (tail, head)), shape=(nodes, nodes))
    sources, row = np.unique(src, return_inverse=True)
    dist = shortest_path(graph, method="D", directed=True, indices=sources)
    paid = float(gbit @ dist[row.ravel(), dst])
    if not math.isfinite(paid):
        return 0.0
    return math.inf if paid <= 0 else float(capacity_gbps @ lengths) / paid


def pdlp_length_bound(
    nodes: int,
    tail: IntArray,
    head: IntArray,
    capacity_gbps: FloatArray,
    src: IntArray,
    dst: IntArray,
    gbit: FloatArray,
) -> float:
    """The max concurrent flow LP solved approximately by PDLP; its capacity duals as lengths.

    PDLP (OR-Tools, a first-order primal-dual method) stops at relative gap :data:`PDLP_RTOL`
    or :data:`PDLP_TIME_LIMIT_S`; whatever its duals, ``length_bound`` turns them into a valid
    upper bound on lambda (it is within about PDLP_RTOL of the optimum when PDLP converged).
    """
    from ortools.pdlp import solvers_pb2
    from ortools.pdlp.python import pdlp

    sources, k_of_pair = np.unique(src, return_inverse=True)
    cap_scale = float(capacity_gbps.max())
    demand_scale = float(gbit.max())
    supply = np.zeros((sources.size, nodes))
    k_of_pair = k_of_pair.ravel()
    np.add.at(supply, (k_of_pair, src), gbit / demand_scale)
    np.add.at(supply, (k_of_pair, dst), -gbit / demand_scale)
    lp = build_fabric_lp(nodes, tail, head, capacity_gbps / cap_scale, supply)
    qp = pdlp.QuadraticProgram()
    qp.objective_vector = lp.c
    qp.constraint_matrix = sp.vstack([lp.a_eq, lp.a_ub], format="csc")
    qp.constraint_lower_bounds = np.concatenate([lp.b_eq, np.full(lp.b_ub.size, -np.inf)])
    qp.constraint_upper_bounds = np.concatenate([lp.b_eq, lp.b_ub])
    qp.variable_lower_bounds = np.zeros(lp.c.size)
    qp.variable_upper_bounds = np.full(lp.c.size, np.inf)
    params = solvers_pb2.PrimalDualHybridGradientParams()
    params.termination_criteria.simple_optimality_criteria.eps_optimal_relative = PDLP_RTOL
    params.termination_criteria.simple_optimality_criteria.eps_optimal_absolute = PDLP_RTOL
    params.termination_criteria.time_sec_limit = PDLP_TIME_LIMIT_S
    params.num_threads = 1
    result = pdlp.primal_dual_hybrid_gradient(qp, params)
    # Duals of the capacity rows (their sign depends on the convention; any l >= 0 is valid).
    length = np.abs(np.asarray(result.dual_solution)[lp.b_eq.size :])
    return length_bound(nodes, tail, head, capacity_gbps, src, dst, gbit, length)


def max_concurrent_flow(
    fabric: Fabric,
    src: npt.ArrayLike,
    dst: npt.ArrayLike,
    demand_gbit: npt.ArrayLike,
    *,
    max_variables: int = MAX_LP_VARIABLES,
    method: Method = "auto",
) -> BoundResult:
    """The largest lambda such that lambda * demand of every flow fits at once (any routing).

    Parameters
    ----------
    fabric
        One plane.
    src, dst
        GPU ids of every flow.
    demand_gbit
        Gbit each flow carries in this plane (a scalar applies to every flow).
    max_variables
        Size guard of the reference LP: larger LPs are not built.
    method
        ``"lp"``: the reference LP on the whole switch graph (skipped above ``max_variables``).
        ``"scaled"``: the bounds of ``planner.sim.bound_scaled`` only (cuts, closed forms and a
        block-level LP; always present, exact where the fabric's symmetry proves it).
        ``"auto"`` (default): the scaled bound when it is exact, else the reference LP when it
        fits in ``max_variables``, else the scaled bound (a valid, possibly loose, upper bound on
        lambda, so a valid lower bound on time; ``exact`` is False).

    Returns
    -------
    BoundResult
        ``lambda_per_s``, ``time_s = 1 / lambda_per_s`` and the binding constraint.
    """
    s = np.asarray(src, dtype=np.int64).ravel()
    t = np.asarray(dst, dtype=np.int64).ravel()
    d = np.broadcast_to(np.asarray(demand_gbit, dtype=np.float64), s.shape).ravel()
    if s.shape != t.shape:
        raise ValueError(f"src has {s.size} flows but dst has {t.size}")
    if s.size and (min(s.min(), t.min()) < 0 or max(s.max(), t.max()) >= fabric.gpus):
        raise ValueError(f"GPU ids must lie in 0 .. {fabric.gpus - 1}")
    if np.any(d < 0) or not np.all(np.isfinite(d)):
        raise ValueError("demand_gbit must be finite and non-negative")
    if method not in ("auto", "lp", "scaled"):
        raise ValueError(f"method must be 'auto', 'lp' or 'scaled'; got {method!r}")
    real = (s != t) & (d > 0)
    s, t, d = s[real], t[real], d[real]

    # No traffic: nothing to carry.
    if s.size == 0:
        return BoundResult(Status.OPTIMAL, math.inf, 0.0, None, math.inf, math.inf)

    lam_nic = nic_bound(fabric, s, t, d)
    s_leaf, t_leaf, pair_gbit = leaf_demands(fabric, s, t, d)

    # Nothing crosses the fabric: the NICs alone decide.
    if pair_gbit.size == 0:
        return _combine(Status.OPTIMAL, lam_nic, math.inf, method="nic")

    tail, head, cap = switch_links(fabric)
    scaled = None
    if method != "lp":
        started = time.perf_counter()
        scaled = scaled_bound(
            fabric,
            SwitchLinks(tail, head, cap),
            SwitchDemand(s_leaf, t_leaf, pair_gbit),
            block_mcf,
        )
        scaled_s = time.perf_counter() - started
        if scaled.exact or method == "scaled":
            return _from_scaled(scaled, lam_nic, tail.size, fabric.switches, scaled_s)

    size = lp_size(np.unique(s_leaf).size, tail.size, fabric.switches)
    if size.variables > max_variables:
        if scaled is not None:  # auto: the LP is too large; report the valid scaled bound
            return _from_scaled(scaled, lam_nic, tail.size, fabric.switches, scaled_s)
        return BoundResult(
            status=None,
            lambda_per_s=None,
            time_s=None,
            binding=None,
            lambda_nic_per_s=lam_nic,
            lambda_fabric_per_s=None,
            size=size,
            skipped_reason=(
                f"fabric LP would have {size.variables:,} variables "
                f"({size.commodities} source leaves x {size.links} links), "
                f"above the limit of {max_variables:,}"
            ),
            method="lp",
        )

    first_switch = fabric.first_switch
    out = solve_mcf_lp(
        fabric.switches,
        tail - first_switch,
        head - first_switch,
        cap,
        s_leaf - first_switch,
        t_leaf - first_switch,
        pair_gbit,
    )
    if out.lambda_per_s is None:
        return BoundResult(
            status=out.status,
            lambda_per_s=None,
            time_s=None,
            binding=None,
            lambda_nic_per_s=lam_nic,
            lambda_fabric_per_s=None,
            size=out.size,
            solve_s=out.solve_s,
            message=out.message,
            method="lp",
        )
    return replace(
        _combine(out.status, lam_nic, out.lambda_per_s, method="lp"),
        size=out.size,
        solve_s=out.solve_s,
        message=out.message,
    )


# ---- results ---------------------------------------------------------------------------------
def _combine(
    status: Status, lam_nic: float, lam_fabric: float, *, method: str, exact: bool = True
) -> BoundResult:
    """Min of the two bounds, the time it implies and which one binds (NIC on a tie)."""
    lam = min(lam_nic, lam_fabric)
    binding: Binding = "nic" if lam_nic <= lam_fabric * (1.0 + BINDING_RTOL) else "fabric"
    time_s = math.inf if lam <= 0 else 1.0 / lam
    # Not "exact or NIC binds": an upper bound on lambda_fabric above lambda_nic does not prove
    # that the fabric can carry lambda_nic.
    return BoundResult(
        status if exact else Status.FEASIBLE,
        lam,
        time_s,
        binding,
        lam_nic,
        lam_fabric,
        method=method,
        exact=exact,
    )


def _from_scaled(
    scaled: ScaledBound, lam_nic: float, links: int, switches: int, solve_s: float
) -> BoundResult:
    """The result of a scaled bound (``status`` FEASIBLE when it is not exact)."""
    out = _combine(
        Status.OPTIMAL, lam_nic, scaled.lambda_per_s, method=scaled.method, exact=scaled.exact
    )
    size = LpSize(0, links, switches, scaled.variables, 0, 0)
    return replace(out, size=size, solve_s=solve_s, message=scaled.reason)
