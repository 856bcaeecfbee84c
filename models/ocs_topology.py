r"""OCS topology engineering: the circuits between aggregation blocks (MILP, PuLP with HiGHS).

Blocks i = 0..n-1 (each a Clos of GPUs) have U_i uplinks into a layer of optical circuit switches.
A circuit joins two blocks directly and carries c Gb/s each way. Choose the logical topology x
(circuits between each pair of blocks) that maximises the scale theta at which the block demand
matrix D (n x n, D >= 0; uniform D_ij = 1 by default) is routable, all pairs at once, over direct
circuits and one-transit paths i -> k -> j (or direct circuits only, ``transit = False``).

Units: theta is a dimensionless fraction of ideal. D may come in any unit (bytes, flows, Gb/s);
the model first scales it so that the busiest block, relative to what it can inject, sends or
receives at exactly its injection rate I_i (Gb/s; ``injection_gbps``, by default c U_i):
    R_i = sum_j D_ij, C_i = sum_j D_ji (the diagonal D_ii, traffic that stays inside block i,
    counts here and nowhere else: it uses no circuit),
    D^ = k D with k = min_i I_i / max(R_i, C_i)   (over blocks with traffic),
and every theta below is the scale of D^ (off its diagonal). So theta = 1 means the demand is
carried at the full rate of its busiest block, theta = 0.5 at half of it; D and 1e6 D give the
same theta. When every GPU of a block sends and receives alike (permutations, shifts) and I_i is
the GPUs' NIC bandwidth, theta is the simulator's fraction of ideal (it caps at 1, the NIC).

Spine granularity (``spines`` = S, direct paths only). A block is a leaf-spine pod; spine g of
every block is cabled to its own OCS devices, a pair's x circuits are spread floor / ceil over the
S spines (``models.ocs_spread``), and a leaf sprays a flow evenly over the spines that have a
circuit to the other block, each spine evenly over its circuits. The spine with the fewest
circuits sets the pace, so a pair's circuits carry only
    usable(x) = x                  if x < S   (one circuit on x of the spines),
              = S floor(x / S)     if x >= S,
circuits' worth of traffic, and without transit the model is theta <= c usable(x_ij) / D^_ij.
With x a multiple of S on every pair with demand every spine carries the same share: the leaf
and spine links never limit a leaf more than its NICs, and under spraying theta is exactly the
simulated fraction of ideal (capped at 1). For 0 < x < S a leaf's traffic to that block uses x
of its S uplinks only, which the block-level model does not see.

The path model (``build``; one family per ``add_*`` function):
    x[i,j] in Z+    circuits between i < j: one variable per unordered pair, so x is symmetric
    theta >= 0      throughput scale
    f[i,j] >= 0     flow i -> j on direct circuits, every pair with D_ij > 0
    t[i,k,j] >= 0   flow i -> k -> j, every such pair and every k not in {i, j} (with transit)
    demand.coverage   f[i,j] + sum_k t[i,k,j] >= theta D_ij
    edge.capacity     f[a,b] + sum_j t[a,b,j] + sum_i t[i,a,b] <= c x[a,b]   every directed a != b
    block.degree      sum_j x[i,j] <= U_i
    maximise theta.
It is exact and has n^3 transit columns, so it is built only up to ``FULL_MODEL_MAX_TRANSIT`` of
them (n <= 28 for dense demand). A version restricted to 4 intermediates per pair was tried at
n = 64: HiGHS found no incumbent above theta = 0 in 40 s, so large instances use the parts below.

Bounds. ``Topology.bound`` is a proven upper bound on theta over *all* integer topologies, the least
of (w = max(D, D^T); R_i, C_i the row and column sums of D):
    hose        c U_i / max(R_i, C_i): i's traffic, and transit through i, uses i's uplinks.
    LP          the LP relaxation (x continuous). For symmetric D it equals the hose bound
                min_i c U_i / R_i, attained by the direct-only x = theta D / c. Otherwise column
                generation; its LP dual is min sum_i U_i lam_i over pi, mu, lam >= 0 with
                sum D_ij mu_ij >= 1, mu_ij <= pi_ij, mu_ij <= pi_ik + pi_kj and
                c (pi_ab + pi_ba) <= lam_a + lam_b, so *any* pi >= 0 certifies (Farley's bound)
                    theta_LP <= sum_i U_i lam_i / sum_ij D_ij d_ij(pi),
                d_ij(pi) = min(pi_ij, min_k pi_ik + pi_kj), lam raised until the x rows hold.
                It is computed from every restricted master's duals, so it stays valid when the
                loop stops early.
    integer     total capacity: every routed unit uses one edge, a transit unit one more, and a
    capacity    pair's direct flow is at most c x_ij, so
                    theta sum D + sum_{i != j} (theta D_ij - c x_ij)^+ <= c sum_i U_i.
                Block i's own best x (sum_j x_ij <= U_i) lower-bounds its pairs' deficits, out and
                in, so the left side is at least theta sum D + 1/2 sum_i (theta (R_i + C_i) -
                best_i(theta)), best_i = max sum_j min(theta D_ij, c x_j) + min(theta D_ji, c x_j)
                (a greedy over unit circuits). The left side grows with theta: bisection. It sees
                integrality: uniform demand, n = 64, U = 128 gives 2.0161 where the LP gives 2.0317.
    MILP        the path MILP's proven bound, when it is built.

Topologies (``solve``): candidates, each evaluated with x fixed, the best kept:
    mesh          ``uniform_mesh``;
    proportional  for alpha in ``ALPHAS``: the exact no-transit optimum for the weights w^alpha,
                  i.e. the largest theta with sum_j ceil(theta w_ij^alpha / c) <= U_i (monotone
                  in theta: a binary search over the values c k / w^alpha), then free uplinks
                  filled one circuit at a time to the pair with the lowest c x_ij / w_ij^alpha.
                  alpha = 1 is the integer counterpart of the LP relaxation's x = theta w / c
                  (symmetric D); smaller alpha leaves capacity for transit, which concentrated
                  demand needs (a full matching of 10x pairs at n = 64: 1.610 at alpha = 1/4 or
                  1/2, 1.000 at 1; the mesh gives 1.585);
    rounding      (asymmetric D) the LP relaxation's x rounded the same way;
    circulant     cyclic instances (equal U; D_ij depends on (j - i) mod n only, e.g. uniform):
                  the circulant MILP, exact over circulant x_ij = y_{(j-i) mod n}. The path
                  model is invariant under i -> i + 1 mod n, so averaging a solution over the
                  rotations gives an invariant one: flows per offset, n^2 columns instead of n^3
                  (``build_circulant``). Large cyclic instances use only circulant candidates;
    path MILP     when built, with a MIP start from the best candidate.
Without transit, the no-transit optimum above (alpha = 1, levels of usable(x) with spines) is
exact: no MILP is needed. The uniform mesh is evaluated under the same model and kept if it is
better (it cannot be: it is feasible; the check keeps the guarantee whatever the construction),
and its theta is reported (``Topology.mesh_theta``).

Evaluation with x fixed (``evaluate``, ``throughput_scale``), an LP: the closed form
min c usable(x_ij) / D^_ij without transit (usable(x) = x with S = 1); the quotient LP when x and D are both circulant; otherwise
column generation over all n^3 paths, priced vectorised with numpy, the restricted master solved
by HiGHS's interior point method without crossover. Its central duals avoid the degenerate stalling
of simplex duals on this max-min LP (simplex column generation on the mesh sat at theta = 2.0 for
500 rounds); a round prices in only the columns within a factor ``PRICE_BAND`` of the worst
violation. For scale: the complete LP at n = 64 (250k transit columns) takes 40-110 s with HiGHS
IPM, 16 s with PDLP, and did not finish in minutes with simplex; column generation converges in
1-4 s on most topologies and in about 10 s on the mesh under a full matching. The theta returned
is *certified achievable*: the master's flows, scaled to fit every capacity. The loop stops when
it is within ``LP_RELATIVE_TOL`` of the fixed-x Farley bound (``Topology.theta_upper``), or at a
deadline. Candidates are compared on a short evaluation (stopped once a round raises theta by less
than ``STALL_TOL`` with the gap below ``STALL_GAP``); the winner is evaluated to the tolerance
with the time left.

Physical realisability (``even_ports_per_device`` = p, even): with m devices and p ports per block
on each, every integer x with sum_j x_ij <= m p is realisable. Pad x to an (m p)-regular multigraph
(self-loops, i.e. dark port pairs, for even deficits; dummy circuits between blocks with odd
deficits, an even number of them); by Petersen's 2-factor theorem it splits into m p / 2
two-factors, and each device takes p / 2 of them, which uses exactly p ports of every block. So the
degree bound U_i = m p is all this model needs; the circuit assignment is a separate model.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import highspy
import numpy as np
import numpy.typing as npt
import pulp

from models.status import Status

#: Column generation stops when the certified theta is within this share of its upper bound.
LP_RELATIVE_TOL = 1e-7
#: A transit column enters when its reduced cost is below minus this share of the largest
#: demand-row dual.
REDUCED_COST_TOL = 1e-9
#: While comparing candidates, an evaluation stops once a round raised theta by less than
#: STALL_TOL while theta is within STALL_GAP of its upper bound.
STALL_TOL = 1e-6
STALL_GAP = 1e-2
#: Circuit counts read from a solver are rounded to the nearest integer within this distance.
INTEGRALITY_TOL = 1e-6
#: Slack on the gap test and on comparisons of theta, for the noise of LP solutions.
OPTIMALITY_TOL = 1e-9
#: Relative precision of the bisection behind the integer capacity bound.
BISECTION_TOL = 1e-10
#: The path model is built (complete, exact) up to this many transit columns.
FULL_MODEL_MAX_TRANSIT = 20_000
#: Transit columns per pair in the first restricted master of a fixed-x evaluation.
INITIAL_TRANSIT = 2
#: Largest number of transit columns priced into the master per pair and round.
NEW_TRANSIT_PER_PAIR = 64
#: A round prices in only columns violated by at least 1/PRICE_BAND of the worst violation: the
#: central duals leave most paths slightly violated, and taking them all (160k columns at n = 64)
#: made one round cost 30 s where the banded rounds converge in 1-4 s.
PRICE_BAND = 10.0
#: Exponents of the proportional candidates (weights max(D_ij, D_ji)^alpha).
ALPHAS = (0.25, 0.5, 0.75, 1.0)
#: Shares of the time limit, counted from the start: LP relaxation (asymmetric D) and circulant
#: MILP, candidate comparison (with and without a path MILP after it), path MILP; the final
#: evaluation has what is left.
LP_TIME_SHARE = 0.2
SELECTION_TIME_SHARE = 0.5
SELECTION_TIME_SHARE_WITHOUT_MILP = 0.8
MILP_TIME_SHARE = 0.85

_INF = highspy.kHighsInf


# --- data -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopologyProblem:
    """Blocks, their uplinks and the demand between them."""

    blocks: int
    uplinks: tuple[int, ...]
    """U_i: circuits block i can terminate."""
    demand: tuple[tuple[float, ...], ...] | None = None
    """D (n x n, >= 0, any unit); None means uniform, D_ij = 1 for i != j. The diagonal is
    traffic inside a block: it only sets the scale of D (module docstring, Units)."""
    circuit_gbps: float = 1.0
    """c: capacity of one circuit in each direction."""
    transit: bool = True
    """Whether traffic may take one-transit paths i -> k -> j."""
    even_ports_per_device: int | None = None
    """p: ports each block has on each OCS (even). Every U_i must then equal m p for one device
    count m, which makes every degree-feasible x realisable (module docstring)."""
    spines: int = 1
    """S: spines per block over which a pair's circuits are spread and a leaf sprays (module
    docstring, Spine granularity). S > 1 needs ``transit = False``."""
    injection_gbps: tuple[float, ...] | None = None
    """I_i: what block i can send and receive (its GPUs' NIC bandwidth); None means c U_i. It
    sets the scale of D, so that theta is a fraction of ideal (module docstring, Units)."""

    def __post_init__(self) -> None:
        n = self.blocks
        if n < 2:
            raise ValueError(f"need at least 2 blocks, got {n}")
        if len(self.uplinks) != n or any(u < 0 for u in self.uplinks):
            raise ValueError("uplinks must hold one non-negative count per block")
        if not self.circuit_gbps > 0:
            raise ValueError(f"circuit_gbps must be positive, got {self.circuit_gbps}")
        if not off_diagonal(demand_matrix(n, self.demand)).any():
            raise ValueError("the demand matrix has no positive entry off its diagonal")
        if self.spines < 1:
            raise ValueError(f"spines must be at least 1, got {self.spines}")
        if self.spines > 1 and self.transit:
            raise ValueError("spine granularity is modelled for direct paths only (transit=False)")
        inj = self.injection_gbps
        if inj is not None and (len(inj) != n or not all(v > 0 for v in inj)):
            raise ValueError("injection_gbps must hold one positive rate per block")
        p = self.even_ports_per_device
        if p is not None:
            if p <= 0 or p % 2:
                raise ValueError(f"even_ports_per_device must be positive and even, got {p}")
            if len(set(self.uplinks)) != 1 or self.uplinks[0] % p:
                raise ValueError("with even_ports_per_device = p every block needs U = m p uplinks")

    @property
    def devices(self) -> int | None:
        """m, the OCS devices implied by ``even_ports_per_device``."""
        p = self.even_ports_per_device
        return None if p is None else self.uplinks[0] // p


@dataclass(frozen=True)
class Topology:
    """An engineered topology, its throughput scale and a proven bound."""

    status: Status
    circuits: tuple[tuple[int, int, int], ...]
    """(i, j, x_ij) for i < j and x_ij > 0."""
    theta: float
    """Throughput scale of these circuits with x fixed, certified achievable (a checked routing):
    a dimensionless fraction of ideal (module docstring, Units)."""
    bound: float
    """Proven upper bound on theta over all integer topologies."""
    wall_s: float
    theta_upper: float
    """Proven upper bound on the theta of *these* circuits; equal to theta, within
    ``LP_RELATIVE_TOL``, when their evaluation converged."""
    lp_bound: float
    """The LP relaxation (or the hose bound, when lower)."""
    source: str
    """Which construction gave the circuits: mesh, proportional_<alpha>, rounding, circulant_milp,
    path_milp or no_transit."""
    mesh_theta: float | None = None
    """Without transit: theta of the uniform mesh under the same model, which the circuits never
    fall below (the mesh is kept when it is at least as good)."""

    @property
    def gap(self) -> float:
        """(bound - theta) / bound."""
        if self.bound <= 0:
            return 0.0
        return max(0.0, (self.bound - self.theta) / self.bound)


def demand_matrix(n: int, demand: Sequence[Sequence[float]] | None) -> np.ndarray:
    """D as an n x n array (uniform when None), diagonal included; checks shape and signs."""
    if demand is None:
        return np.ones((n, n)) - np.eye(n)
    d = np.asarray(demand, dtype=float)
    if d.shape != (n, n):
        raise ValueError(f"demand must be {n} x {n}, got {d.shape}")
    if not np.isfinite(d).all() or (d < 0).any():
        raise ValueError("demand must be finite and non-negative")
    return d


def off_diagonal(d: np.ndarray) -> np.ndarray:
    """D with its diagonal (traffic inside a block) set to zero."""
    out = np.array(d, dtype=float)
    np.fill_diagonal(out, 0.0)
    return out


def demand_scale(d: np.ndarray, injection_gbps: np.ndarray) -> float:
    """The scale k = min_i I_i / max(R_i, C_i) over blocks with traffic, diagonal included.

    Blocks that cannot inject (I_i = 0) are left out: their traffic makes theta 0 by itself.
    """
    load = np.maximum(d.sum(axis=1), d.sum(axis=0))
    busy = (load > 0) & (injection_gbps > 0)
    if not busy.any():
        return 1.0
    return float((injection_gbps[busy] / load[busy]).min())


def normalised_demand(d: np.ndarray, injection_gbps: np.ndarray) -> np.ndarray:
    """D^ = k D off the diagonal: the busiest block at its injection rate (Units)."""
    return demand_scale(d, injection_gbps) * off_diagonal(d)


def usable_circuits(x: npt.ArrayLike, spines: int) -> np.ndarray:
    """Circuits' worth of traffic x circuits carry when spread over S spines and sprayed.

    usable(x) = x for x < S, S floor(x / S) otherwise (module docstring, Spine granularity).
    """
    a = np.asarray(x, dtype=np.int64)
    return np.where(a < spines, a, spines * (a // spines))


def circuits_needed(k: npt.ArrayLike, spines: int) -> np.ndarray:
    """The fewest circuits whose usable capacity is at least k circuits: the inverse of usable."""
    a = np.asarray(k, dtype=np.int64)
    return np.where(a < spines, a, spines * -(-a // spines))


def circuit_matrix(n: int, circuits: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """The symmetric integer matrix x of a circuit list (repeated pairs add up)."""
    x = np.zeros((n, n), dtype=np.int64)
    for i, j, k in circuits:
        if i == j or k < 0:
            raise ValueError(f"bad circuit entry {(i, j, k)}")
        x[i, j] += k
        x[j, i] += k
    return x


def circuits_of(x: np.ndarray) -> tuple[tuple[int, int, int], ...]:
    """(i, j, x_ij) for i < j and x_ij > 0."""
    iu, ju = np.nonzero(np.triu(x, 1))
    return tuple((int(i), int(j), int(x[i, j])) for i, j in zip(iu, ju, strict=True))


def pair_weight(d: np.ndarray) -> np.ndarray:
    """The pair weight w = max(D, D^T): what both directions of a pair's circuits carry."""
    return np.maximum(d, d.T)


def is_cyclic(a: np.ndarray) -> bool:
    """Whether a_ij depends on (j - i) mod n only (invariant under i -> i + 1 mod n)."""
    return bool(np.array_equal(a, np.roll(a, (1, 1), axis=(0, 1))))


# --- bounds ---------------------------------------------------------------------------------------


def hose_bound(uplinks: np.ndarray, d: np.ndarray, c: float) -> float:
    """min_i c U_i / max(R_i, C_i): a bound for any topology and routing."""
    load = np.maximum(d.sum(axis=1), d.sum(axis=0))
    busy = load > 0
    return float((c * uplinks[busy] / load[busy]).min())


def integer_capacity_bound(uplinks: np.ndarray, d: np.ndarray, c: float, upper: float) -> float:
    """The largest theta <= upper passing the integer capacity test (module docstring)."""
    n = len(uplinks)
    total_demand = float(d.sum())
    capacity = c * float(uplinks.sum())
    both = d.sum(axis=1) + d.sum(axis=0)
    levels = c * np.arange(int(uplinks.max()))

    def excess(theta: float) -> float:
        deficit = 0.0
        for i in range(n):
            k = int(uplinks[i])
            out = np.clip(theta * d[i, :, None] - levels[:k], 0.0, c)
            into = np.clip(theta * d[:, i, None] - levels[:k], 0.0, c)
            gain = (out + into).ravel()
            best = float(np.partition(gain, gain.size - k)[gain.size - k :].sum()) if k else 0.0
            deficit += theta * both[i] - best
        return theta * total_demand + 0.5 * deficit - capacity

    if excess(upper) <= 0:
        return upper
    lo, hi = 0.0, upper
    while hi - lo > BISECTION_TOL * upper:
        mid = 0.5 * (lo + hi)
        if excess(mid) <= 0:
            lo = mid
        else:
            hi = mid
    return hi


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


# --- LPs with HiGHS: column generation over the path model ----------------------------------------


@dataclass(frozen=True, eq=False)
class Routing:
    """Flows that route theta D within every capacity of a fixed x (checked when built)."""

    theta: float
    direct: dict[tuple[int, int], float]
    """f[i,j] > 0."""
    transit: dict[tuple[int, int, int], float]
    """t[i,k,j] > 0."""


@dataclass(frozen=True)
class PathLp:
    """Outcome of the path LP: design (x continuous) or evaluation (x fixed)."""

    lower: float
    """Fixed x: a certified achievable theta. Design: the master's theta."""
    upper: float
    """Farley's bound from the duals: a proven upper bound on the LP value."""
    x: np.ndarray | None
    """Design only: the LP's circuits (continuous, symmetric)."""
    converged: bool
    transit_columns: int
    routing: Routing | None = None
    """Fixed x: the flows behind ``lower``."""


def _add_columns(h: highspy.Highs, rows: np.ndarray, values: np.ndarray) -> None:
    """Add one column (cost 0, bounds [0, inf)) per row of ``rows``, which lists its rows."""
    m, k = rows.shape
    if m == 0:
        return
    h.addCols(
        m,
        np.zeros(m),
        np.zeros(m),
        np.full(m, _INF),
        m * k,
        (np.arange(m) * k).astype(np.int32),
        rows.ravel().astype(np.int32),
        np.broadcast_to(values, (m, k)).ravel().astype(float),
    )


def path_lp(
    d: np.ndarray,
    c: float,
    *,
    capacity: np.ndarray | None = None,
    uplinks: np.ndarray | None = None,
    deadline: float = math.inf,
    stop_on_stall: bool = False,
) -> PathLp:
    """Max theta over the path model with x fixed (``capacity`` = c x) or continuous (``uplinks``).

    Rows: demand.coverage, edge.capacity (upper bound c x_ab for fixed x; 0 with the x columns
    otherwise) and block.degree (design only). Transit columns enter while some has a negative
    reduced cost pi_ik + pi_kj - mu_ij, at most ``NEW_TRANSIT_PER_PAIR`` per pair and round. Stops
    when none is left, when lower and upper agree to ``LP_RELATIVE_TOL``, at the deadline, or
    (``stop_on_stall``) when a round raised theta by less than ``STALL_TOL`` and the gap is below
    ``STALL_GAP``.
    """
    n = d.shape[0]
    edge = capacity > 0 if capacity is not None else ~np.eye(n, dtype=bool)
    dem = d > 0
    valid = edge[:, :, None] & edge[None, :, :] & dem[:, None, :]  # (i, k, j)
    if capacity is not None and (dem & ~(edge | valid.any(axis=1))).any():
        return PathLp(0.0, 0.0, None, True, 0)  # a pair with demand and no path
    di, dj = np.nonzero(dem)
    nd = len(di)
    ea, eb = np.nonzero(edge)
    ne = len(ea)
    erow = np.full((n, n), -1, dtype=np.int64)
    erow[ea, eb] = nd + np.arange(ne)
    drow = np.full((n, n), -1, dtype=np.int64)
    drow[di, dj] = np.arange(nd)

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("solver", "ipm")
    h.setOptionValue("run_crossover", "off")
    nrow = nd + ne + (n if capacity is None else 0)
    lo = np.full(nrow, -_INF)
    hi = np.full(nrow, _INF)
    lo[:nd] = 0.0
    hi[nd : nd + ne] = capacity[ea, eb] if capacity is not None else 0.0
    if capacity is None and uplinks is not None:
        hi[nd + ne :] = uplinks
    h.addRows(nrow, lo, hi, 0, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
    h.addCol(-1.0, 0.0, _INF, nd, np.arange(nd, dtype=np.int32), -d[di, dj])  # theta (min -theta)
    iu, ju = np.triu_indices(n, 1)
    if capacity is None:  # x[a,b]: -c on both directed edge rows, +1 on both degree rows
        rows = np.stack([erow[iu, ju], erow[ju, iu], nd + ne + iu, nd + ne + ju], axis=1)
        _add_columns(h, rows, np.array([-c, -c, 1.0, 1.0]))
    direct = np.nonzero(edge[di, dj])[0]
    direct_first = h.getNumCol()
    _add_columns(h, np.stack([direct, erow[di[direct], dj[direct]]], axis=1), np.ones(2))
    have = np.zeros((n, n, n), dtype=bool)
    cols: list[np.ndarray] = []  # (i, k, j) of the transit columns, in column order

    def add_transit(i: np.ndarray, k: np.ndarray, j: np.ndarray) -> None:
        have[i, k, j] = True
        cols.append(np.stack([i, k, j], axis=1))
        _add_columns(h, np.stack([drow[i, j], erow[i, k], erow[k, j]], axis=1), np.ones(3))

    def pick(score: np.ndarray, take: np.ndarray, r: int) -> None:
        """Add, per pair (i, j), the columns (i, k, j) with the r lowest scores where take."""
        r = min(r, n)
        best = np.argpartition(score, r - 1, axis=1)[:, :r, :] if r < n else None
        if best is None:
            add_transit(*np.nonzero(take))
            return
        mask = np.take_along_axis(take, best, axis=1)
        ii = np.broadcast_to(np.arange(n)[:, None, None], best.shape)[mask]
        jj = np.broadcast_to(np.arange(n)[None, None, :], best.shape)[mask]
        add_transit(ii, best[mask], jj)

    if capacity is not None and INITIAL_TRANSIT > 0 and valid.any():
        wide = np.minimum(capacity[:, :, None], capacity[None, :, :])
        pick(np.where(valid, -wide, np.inf), valid, INITIAL_TRANSIT)

    weights = d[di, dj]
    lower, upper, converged = 0.0, math.inf, False
    x_lp: np.ndarray | None = None
    routing: Routing | None = None
    while True:
        h.setOptionValue("time_limit", max(0.1, deadline - time.perf_counter()))
        h.run()
        optimal = highspy.HighsModelStatus.kOptimal
        if h.getModelStatus() != optimal and time.perf_counter() < deadline:
            h.setOptionValue("solver", "simplex")  # numerical trouble in IPM: simplex from here
            h.run()
        if h.getModelStatus() != optimal:
            break
        sol = h.getSolution()
        rd = np.asarray(sol.row_dual)
        cv = np.asarray(sol.col_value)
        mu = np.zeros((n, n))
        mu[di, dj] = np.maximum(rd[:nd], 0.0)
        pi = np.full((n, n), np.inf)
        pi[ea, eb] = np.maximum(-rd[nd : nd + ne], 0.0)
        two_hop = np.where(valid, pi[:, :, None] + pi[None, :, :], np.inf)
        denominator = float((weights * np.minimum(pi, two_hop.min(axis=1))[di, dj]).sum())
        before = lower
        if capacity is not None:
            numerator = float((capacity[ea, eb] * pi[ea, eb]).sum())
            found = _certified_routing(cv, d, capacity, di, dj, direct, direct_first, cols)
            if routing is None or found.theta > routing.theta:
                routing = found
            lower = routing.theta
        else:
            lam = _repair_degree_duals(np.maximum(-rd[nd + ne :], 0.0), pi, c)
            numerator = float((uplinks * lam).sum()) if uplinks is not None else math.inf
            lower = float(cv[0])
            x_lp = np.zeros((n, n))
            x_lp[iu, ju] = cv[1 : 1 + len(iu)]
            x_lp += x_lp.T
        if denominator > 0:
            upper = min(upper, numerator / denominator)
        if math.isfinite(upper) and upper - lower <= LP_RELATIVE_TOL * max(upper, 1e-12):
            converged = True
            break
        reduced = two_hop - mu[:, None, :]
        reduced[have] = np.inf
        enter = reduced < -REDUCED_COST_TOL * max(float(mu.max()), 1e-12)
        if not enter.any():
            converged = True
            break
        stalled = (
            stop_on_stall
            and lower - before <= STALL_TOL * lower
            and upper - lower <= STALL_GAP * upper
        )
        if stalled or time.perf_counter() >= deadline:
            break
        violation = np.where(enter, -reduced, 0.0)
        enter &= violation >= violation.max() / PRICE_BAND
        pick(reduced, enter, NEW_TRANSIT_PER_PAIR)
    count = sum(len(a) for a in cols)
    return PathLp(lower, max(upper, lower), x_lp, converged, count, routing)


def _repair_degree_duals(lam: np.ndarray, pi: np.ndarray, c: float) -> np.ndarray:
    """Raise lam until c (pi_ab + pi_ba) <= lam_a + lam_b for every pair (dual feasibility)."""
    need = c * (pi + pi.T)
    np.fill_diagonal(need, -np.inf)
    lam = lam.copy()
    for a in range(len(lam)):
        lam[a] = max(lam[a], float((need[a] - lam).max()))
    return lam


def _certified_routing(
    cv: np.ndarray,
    d: np.ndarray,
    capacity: np.ndarray,
    di: np.ndarray,
    dj: np.ndarray,
    direct: np.ndarray,
    direct_first: int,
    cols: list[np.ndarray],
) -> Routing:
    """The master's flows scaled to fit every capacity, and the theta they route: achievable."""
    n = d.shape[0]
    f = np.maximum(cv[direct_first : direct_first + len(direct)], 0.0)
    t = np.maximum(cv[direct_first + len(direct) :], 0.0)
    trip = np.concatenate(cols) if cols else np.zeros((0, 3), dtype=np.int64)
    i, k, j = trip[:, 0], trip[:, 1], trip[:, 2]
    fi, fj = di[direct], dj[direct]
    load = np.zeros(n * n)
    load += np.bincount(fi * n + fj, f, n * n) + np.bincount(i * n + k, t, n * n)
    load += np.bincount(k * n + j, t, n * n)
    cap = capacity.ravel()
    used = load > 0
    scale = min(1.0, float((cap[used] / load[used]).min())) if used.any() else 1.0
    got = np.zeros(n * n)
    got += np.bincount(fi * n + fj, f, n * n) + np.bincount(i * n + j, t, n * n)
    theta = scale * float((got[di * n + dj] / d[di, dj]).min())
    direct_flow = {
        (int(a), int(b)): scale * float(v) for a, b, v in zip(fi, fj, f, strict=True) if v > 0
    }
    transit_flow = {
        (int(a), int(m), int(b)): scale * float(v)
        for a, m, b, v in zip(i, k, j, t, strict=True)
        if v > 0
    }
    return Routing(theta, direct_flow, transit_flow)


# --- PuLP plumbing --------------------------------------------------------------------------------


def lp_name(family: str, *index: int) -> str:
    """A PuLP-safe name: the family with dots as underscores, then the indices."""
    return "_".join([family.replace(".", "_"), *(str(i) for i in index)])


#: PuLP solution status -> ours. PuLP reports a MILP stopped by its time limit with a solution
#: as LpStatusOptimal; its ``sol_status`` tells the two apart.
PULP_SOLUTION_STATUS: dict[int, Status] = {
    pulp.LpSolutionOptimal: Status.OPTIMAL,
    pulp.LpSolutionIntegerFeasible: Status.FEASIBLE,
    pulp.LpSolutionNoSolutionFound: Status.TIME_LIMIT,
    pulp.LpSolutionInfeasible: Status.INFEASIBLE,
    pulp.LpSolutionUnbounded: Status.ERROR,
}


class _HiGHSWithStart(pulp.HiGHS):  # type: ignore[misc]
    """PuLP's HiGHS adapter that passes HiGHS a (partial) MIP start before it runs."""

    def __init__(self, start: dict[pulp.LpVariable, float], **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.start = start

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        if self.start:
            index = np.array([v.index for v in self.start], dtype=np.int32)
            value = np.array(list(self.start.values()), dtype=float)
            lp.solverModel.setSolution(len(index), index, value)
        super().callSolver(lp)


@dataclass(frozen=True)
class MilpOutcome:
    """What a MILP solve left: its status, its x (integer) and its proven bound on theta."""

    status: Status
    x: np.ndarray | None
    bound: float


def run_milp(
    model: pulp.LpProblem,
    read_x: Callable[[], np.ndarray],
    start: dict[pulp.LpVariable, float],
    time_limit_s: float,
    relative_gap: float,
) -> MilpOutcome:
    """Solve a max-theta MILP with PuLP's HiGHS adapter, a MIP start, a time limit and a gap."""
    solver = _HiGHSWithStart(
        start, msg=False, timeLimit=max(0.1, time_limit_s), gapRel=relative_gap
    )
    model.solve(solver)
    status = PULP_SOLUTION_STATUS.get(model.sol_status, Status.ERROR)
    bound = -float(model.solverModel.getInfo().mip_dual_bound)  # HiGHS minimised -theta
    bound = bound if math.isfinite(bound) else math.inf
    return MilpOutcome(status, read_x() if status.has_solution else None, bound)


def _integer(value: float | None) -> int:
    return 0 if value is None else int(math.floor(value + 0.5))


# --- the path model (PuLP) ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Instance:
    """The problem as arrays."""

    problem: TopologyProblem
    demand: np.ndarray
    uplinks: np.ndarray

    @classmethod
    def of(cls, problem: TopologyProblem) -> Instance:
        """The arrays of a problem."""
        raw = demand_matrix(problem.blocks, problem.demand)
        u = np.asarray(problem.uplinks, dtype=np.int64)
        inj = problem.injection_gbps
        injection = problem.circuit_gbps * u.astype(float) if inj is None else np.asarray(inj)
        return cls(problem, normalised_demand(raw, injection), u)

    @property
    def n(self) -> int:
        """Blocks."""
        return self.problem.blocks

    @property
    def c(self) -> float:
        """Gb/s per circuit and direction."""
        return self.problem.circuit_gbps

    @property
    def spines(self) -> int:
        """S: spines a pair's circuits are spread over."""
        return self.problem.spines

    @property
    def cyclic(self) -> bool:
        """Equal uplinks and a circulant demand: the circulant model applies."""
        return len(set(self.problem.uplinks)) == 1 and is_cyclic(self.demand)

    @property
    def transit_columns(self) -> int:
        """Columns t[i,k,j] of the complete path model."""
        return int((self.demand > 0).sum()) * (self.n - 2) if self.problem.transit else 0


@dataclass(frozen=True)
class PathVars:
    """Variables of the path model, keyed by index tuples."""

    theta: pulp.LpVariable
    x: dict[tuple[int, int], pulp.LpVariable]
    direct: dict[tuple[int, int], pulp.LpVariable]
    transit: dict[tuple[int, int, int], pulp.LpVariable]


def add_variables(m: pulp.LpProblem, inst: Instance) -> PathVars:
    """Variables: theta >= 0; x[i,j] in 0..min(U_i, U_j), i < j; f, t >= 0 for pairs with demand."""
    n, u = inst.n, inst.uplinks
    pairs = [(int(i), int(j)) for i, j in zip(*np.nonzero(inst.demand > 0), strict=True)]
    theta = m.add_variable("theta", lowBound=0)
    x = {
        (i, j): m.add_variable(
            lp_name("x", i, j), lowBound=0, upBound=int(min(u[i], u[j])), cat=pulp.LpInteger
        )
        for i in range(n)
        for j in range(i + 1, n)
    }
    direct = {(i, j): m.add_variable(lp_name("f", i, j), lowBound=0) for i, j in pairs}
    transit = {
        (i, k, j): m.add_variable(lp_name("t", i, k, j), lowBound=0)
        for i, j in pairs
        for k in range(n)
        if inst.problem.transit and k not in (i, j)
    }
    m += theta  # objective: maximise theta
    return PathVars(theta, x, direct, transit)


def add_demand_coverage(m: pulp.LpProblem, inst: Instance, v: PathVars) -> None:
    """Each pair's demand, scaled by theta, is routed.  f[i,j] + sum_k t[i,k,j] >= theta D_ij."""
    paths: dict[tuple[int, int], list[pulp.LpVariable]] = {p: [f] for p, f in v.direct.items()}
    for (i, _, j), t in v.transit.items():
        paths[i, j].append(t)
    for (i, j), flows in paths.items():
        m += (
            pulp.lpSum(flows) >= float(inst.demand[i, j]) * v.theta,
            lp_name("demand.coverage", i, j),
        )


def add_edge_capacity(m: pulp.LpProblem, inst: Instance, v: PathVars) -> None:
    """Flow on a directed edge fits its circuits.

    f[a,b] + sum_j t[a,b,j] + sum_i t[i,a,b] <= c x[min(a,b), max(a,b)].
    """
    loads: dict[tuple[int, int], list[pulp.LpVariable]] = {}
    for (i, j), f in v.direct.items():
        loads.setdefault((i, j), []).append(f)
    for (i, k, j), t in v.transit.items():
        loads.setdefault((i, k), []).append(t)
        loads.setdefault((k, j), []).append(t)
    for (a, b), flows in sorted(loads.items()):
        x = v.x[min(a, b), max(a, b)]
        m += (pulp.lpSum(flows) <= inst.c * x, lp_name("edge.capacity", a, b))


def add_block_degree(m: pulp.LpProblem, inst: Instance, v: PathVars) -> None:
    """Circuits at a block fit its uplinks.  sum_j x[i,j] <= U_i."""
    n = inst.n
    for i in range(n):
        incident = [v.x[min(i, j), max(i, j)] for j in range(n) if j != i]
        m += (pulp.lpSum(incident) <= int(inst.uplinks[i]), lp_name("block.degree", i))


#: Constraint families of the path model, in the order they are added.
CONSTRAINTS: dict[str, Callable[[pulp.LpProblem, Instance, PathVars], None]] = {
    "demand.coverage": add_demand_coverage,
    "edge.capacity": add_edge_capacity,
    "block.degree": add_block_degree,
}


def build_path(inst: Instance) -> tuple[pulp.LpProblem, PathVars]:
    """The complete path MILP."""
    m = pulp.LpProblem("ocs_topology", pulp.LpMaximize)
    v = add_variables(m, inst)
    for add in CONSTRAINTS.values():
        add(m, inst, v)
    return m, v


def _path_start(
    v: PathVars, x: np.ndarray, routing: Routing | None
) -> dict[pulp.LpVariable, float]:
    """A complete MIP start: x and, when known, a routing (else theta = 0 and no flow).

    HiGHS completes a start with only x by an LP solved with simplex, which takes seconds at
    n = 24 and overruns the time limit; a complete feasible start is taken as it is.
    """
    start = {var: float(x[i, j]) for (i, j), var in v.x.items()}
    start[v.theta] = routing.theta if routing is not None else 0.0
    direct = routing.direct if routing is not None else {}
    transit = routing.transit if routing is not None else {}
    for pair, var in v.direct.items():
        start[var] = direct.get(pair, 0.0)
    for path, var in v.transit.items():
        start[var] = transit.get(path, 0.0)
    return start


def _path_x(n: int, v: PathVars) -> np.ndarray:
    x = np.zeros((n, n), dtype=np.int64)
    for (i, j), var in v.x.items():
        x[i, j] = x[j, i] = _integer(var.value())
    return x


# --- the circulant model (PuLP): cyclic instances -------------------------------------------------


@dataclass(frozen=True)
class CirculantVars:
    """Variables of the circulant model: per offset instead of per pair."""

    theta: pulp.LpVariable
    y: dict[int, pulp.LpVariable]
    """Circuits per pair at offset s = 1..n/2."""
    direct: dict[int, pulp.LpVariable]
    transit: dict[tuple[int, int], pulp.LpVariable]
    """(s, e): pair offset e, first hop at offset s, second at e - s (mod n)."""


def build_circulant(
    n: int, uplinks: int, g: np.ndarray, c: float, fixed: dict[int, int] | None = None
) -> tuple[pulp.LpProblem, CirculantVars]:
    """The path model restricted to circulant x (y per offset) and reduced by rotation.

    Data g_e = D_{0,e}; variables y_s (s = 1..n/2; fixed for an evaluation), f_e, t_{s,e}:
        circulant.demand    f_e + sum_s t_{s,e} >= theta g_e                              (g_e > 0)
        circulant.capacity  f_e + sum_{e'} t_{e,e'} + sum_s t_{s,s+e} <= c y_{min(e, n-e)}
        circulant.degree    sum_{s < n/2} 2 y_s + [n even] y_{n/2} <= U
    A path whose two hops share an offset loads that offset twice.
    """
    m = pulp.LpProblem("ocs_circulant", pulp.LpMaximize)
    theta = m.add_variable("theta", lowBound=0)
    y = {
        s: m.add_variable(
            lp_name("y", s),
            lowBound=0 if fixed is None else fixed.get(s, 0),
            upBound=uplinks if fixed is None else fixed.get(s, 0),
            cat=pulp.LpInteger if fixed is None else pulp.LpContinuous,
        )
        for s in range(1, n // 2 + 1)
    }
    offsets = [e for e in range(1, n) if g[e] > 0]
    direct = {e: m.add_variable(lp_name("f", e), lowBound=0) for e in offsets}
    transit = {
        (s, e): m.add_variable(lp_name("t", s, e), lowBound=0)
        for e in offsets
        for s in range(1, n)
        if s != e
    }
    m += theta
    v = CirculantVars(theta, y, direct, transit)
    add_circulant_demand(m, v, g)
    add_circulant_capacity(m, v, n, c)
    add_circulant_degree(m, v, n, uplinks)
    return m, v


def add_circulant_demand(m: pulp.LpProblem, v: CirculantVars, g: np.ndarray) -> None:
    """f_e + sum_s t_{s,e} >= theta g_e."""
    paths: dict[int, list[pulp.LpVariable]] = {e: [f] for e, f in v.direct.items()}
    for (_, e), t in v.transit.items():
        paths[e].append(t)
    for e, flows in paths.items():
        m += (pulp.lpSum(flows) >= float(g[e]) * v.theta, lp_name("circulant.demand", e))


def add_circulant_capacity(m: pulp.LpProblem, v: CirculantVars, n: int, c: float) -> None:
    """f_e + sum_{e'} t_{e,e'} + sum_s t_{s,s+e} <= c y_{min(e, n-e)}."""
    loads: dict[int, list[pulp.LpVariable]] = {e: [] for e in range(1, n)}
    for e, f in v.direct.items():
        loads[e].append(f)
    for (s, e), t in v.transit.items():
        loads[s].append(t)
        loads[(e - s) % n].append(t)
    for e, flows in loads.items():
        if flows:
            m += (pulp.lpSum(flows) <= c * v.y[min(e, n - e)], lp_name("circulant.capacity", e))


def add_circulant_degree(m: pulp.LpProblem, v: CirculantVars, n: int, uplinks: int) -> None:
    """sum_{s < n/2} 2 y_s + [n even] y_{n/2} <= U."""
    m += (
        pulp.lpSum((1 if 2 * s == n else 2) * y for s, y in v.y.items()) <= uplinks,
        "circulant_degree",
    )


def circulant_matrix(n: int, y: dict[int, int]) -> np.ndarray:
    """x_ij = y_{min(e, n-e)} with e = (j - i) mod n."""
    e = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
    values = np.array([0] + [y.get(s, 0) for s in range(1, n // 2 + 1)], dtype=np.int64)
    return values[np.minimum(e, n - e)]


def _circulant_y(n: int, v: CirculantVars) -> np.ndarray:
    return circulant_matrix(n, {s: _integer(var.value()) for s, var in v.y.items()})


# --- evaluation with x fixed ----------------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """Theta of a fixed topology: certified achievable, and a proven upper bound."""

    theta: float
    upper: float

    @property
    def exact(self) -> bool:
        """Whether the two agree to ``LP_RELATIVE_TOL``."""
        return self.upper - self.theta <= LP_RELATIVE_TOL * max(self.upper, 1e-12)


def evaluate(
    x: np.ndarray,
    d: np.ndarray,
    c: float,
    transit: bool = True,
    deadline: float = math.inf,
    stop_on_stall: bool = False,
    spines: int = 1,
) -> Evaluation:
    """Max theta for a fixed x: a closed form, the quotient LP or column generation.

    Without transit the closed form min c usable(x_ij) / D_ij over pairs with demand; with
    transit, S must be 1 (spine granularity is modelled for direct paths only).
    """
    dem = d > 0
    if not transit:
        value = float((c * usable_circuits(x[dem], spines) / d[dem]).min())
        return Evaluation(value, value)
    if spines != 1:
        raise ValueError("spine granularity is modelled for direct paths only (transit=False)")
    n = x.shape[0]
    if is_cyclic(x) and is_cyclic(d):
        y = {s: int(x[0, s]) for s in range(1, n // 2 + 1)}
        m, v = build_circulant(n, int(x[0].sum()), d[0], c, fixed=y)
        m.solve(pulp.HiGHS(msg=False))
        if m.status != pulp.LpStatusOptimal:
            raise RuntimeError(f"circulant LP: {pulp.LpStatus[m.status]}")
        value = float(v.theta.value() or 0.0)
        return Evaluation(value, value)
    lp = path_lp(d, c, capacity=c * x.astype(float), deadline=deadline, stop_on_stall=stop_on_stall)
    return Evaluation(lp.lower, lp.upper)


def throughput_scale(
    n: int,
    circuits: Sequence[tuple[int, int, int]],
    demand: Sequence[Sequence[float]] | None = None,
    circuit_gbps: float = 1.0,
    transit: bool = True,
    time_limit_s: float | None = None,
    *,
    spines: int = 1,
    injection_gbps: Sequence[float] | None = None,
) -> float:
    """Max theta such that theta D^ is routable on the fixed circuits (an LP; see ``evaluate``).

    Dimensionless: D is scaled first (module docstring, Units), with I_i = ``injection_gbps`` or,
    when None, c times the circuits block i terminates; D and a multiple of D give the same
    value. The value is achievable (a routing checked against every capacity); it is the maximum
    unless a time limit stopped the column generation first.
    """
    x = circuit_matrix(n, circuits)
    raw = demand_matrix(n, demand)
    if not off_diagonal(raw).any():
        raise ValueError("the demand matrix has no positive entry off its diagonal")
    inj = (
        circuit_gbps * x.sum(axis=1).astype(float)
        if injection_gbps is None
        else np.asarray(injection_gbps, dtype=float)
    )
    d = normalised_demand(raw, inj)
    if not d.any():
        return 0.0  # a block with traffic and nothing to inject it with
    deadline = math.inf if time_limit_s is None else time.perf_counter() + time_limit_s
    return evaluate(x, d, circuit_gbps, transit, deadline, spines=spines).theta


# --- build and solve ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BuiltTopology:
    """The models of a problem, built and not solved."""

    instance: Instance
    path: tuple[pulp.LpProblem, PathVars] | None
    """The complete path MILP, when within ``FULL_MODEL_MAX_TRANSIT``."""
    circulant: tuple[pulp.LpProblem, CirculantVars] | None
    """The circulant MILP, for cyclic instances."""

    @property
    def problem(self) -> TopologyProblem:
        """The problem built."""
        return self.instance.problem


def build(problem: TopologyProblem) -> BuiltTopology:
    """Build (not solve) the path MILP (when small enough) and the circulant MILP (if cyclic)."""
    inst = Instance.of(problem)
    if not problem.transit:
        return BuiltTopology(inst, None, None)
    path = build_path(inst) if inst.transit_columns <= FULL_MODEL_MAX_TRANSIT else None
    circulant = None
    if inst.cyclic:
        circulant = build_circulant(inst.n, int(inst.uplinks[0]), inst.demand[0], inst.c)
    return BuiltTopology(inst, path, circulant)


def _degree_ok(x: np.ndarray, uplinks: np.ndarray) -> bool:
    return bool(
        (x >= 0).all()
        and np.array_equal(x, x.T)
        and not np.diag(x).any()
        and (x.sum(axis=1) <= uplinks).all()
    )


def candidates(inst: Instance, x_lp: np.ndarray | None) -> list[tuple[str, np.ndarray]]:
    """The constructions of the module docstring, without duplicates (the MILPs aside)."""
    n, d, u, c = inst.n, inst.demand, inst.uplinks, inst.c
    out = [("mesh", circuit_matrix(n, uniform_mesh(n, u.tolist())))]
    if inst.cyclic and inst.transit_columns > FULL_MODEL_MAX_TRANSIT:
        return out  # non-circulant x are slow to evaluate here, and the circulant MILP covers them
    out += [(f"proportional_{a:g}", proportional(u, d, c, a)) for a in ALPHAS]
    if x_lp is not None:
        out.append(("rounding", round_with_degrees(x_lp, u, pair_weight(d), c)))
    unique: list[tuple[str, np.ndarray]] = []
    for source, x in out:
        if not any(np.array_equal(x, y) for _, y in unique):
            unique.append((source, x))
    return unique


def solve(built: BuiltTopology, time_limit_s: float = 30.0, relative_gap: float = 1e-6) -> Topology:
    """Engineer the topology: candidates evaluated with x fixed, the best kept, a proven bound."""
    began = time.perf_counter()
    inst = built.instance
    n, d, u, c = inst.n, inst.demand, inst.uplinks, inst.c
    hose = hose_bound(u, d, c)

    def at(share: float) -> float:
        return began + share * time_limit_s

    def result(
        status: Status, x: np.ndarray, ev: Evaluation, bound: float, lp: float, source: str
    ) -> Topology:
        bound = max(bound, ev.theta)
        return Topology(
            status,
            circuits_of(x),
            ev.theta,
            bound,
            time.perf_counter() - began,
            max(ev.upper, ev.theta),
            lp,
            source,
        )

    if not inst.problem.transit:  # exact; the LP relaxation is min_i c U_i / sum_j w_ij
        w, s = pair_weight(d), inst.spines
        optimum, x = no_transit_optimum(u, w, c, s)
        ev = evaluate(x, d, c, False, spines=s)
        # Never worse than the uniform mesh under the same model: it is feasible, so the exact
        # optimum is at least as good; the check keeps that true whatever the construction.
        mesh = circuit_matrix(n, uniform_mesh(n, u.tolist()))
        mesh_ev = evaluate(mesh, d, c, False, spines=s)
        source = "no_transit"
        if mesh_ev.theta > ev.theta:
            x, ev, source = mesh, mesh_ev, "mesh"
        load = w.sum(axis=1)
        lp_bound = float((c * u[load > 0] / load[load > 0]).min())
        bound = max(optimum, ev.theta)
        return replace(
            result(Status.OPTIMAL, x, ev, bound, lp_bound, source), mesh_theta=mesh_ev.theta
        )

    # Bounds: hose, LP relaxation, integer capacity.
    x_lp: np.ndarray | None = None
    if np.array_equal(d, d.T):
        lp_bound = hose
    else:
        lp = path_lp(d, c, uplinks=u.astype(float), deadline=at(LP_TIME_SHARE))
        lp_bound, x_lp = min(hose, lp.upper), lp.x
    bound = integer_capacity_bound(u, d, c, lp_bound)

    # Candidates, compared on short evaluations.
    pool = candidates(inst, x_lp)
    if built.circulant is not None:
        model, cv = built.circulant
        mesh = pool[0][1]
        start = {var: float(mesh[0, s]) for s, var in cv.y.items()} if is_cyclic(mesh) else {}
        out = run_milp(
            model,
            lambda: _circulant_y(n, cv),
            start,
            at(LP_TIME_SHARE) - time.perf_counter(),
            relative_gap,
        )
        if out.x is not None and not any(np.array_equal(out.x, y) for _, y in pool):
            pool.append(("circulant_milp", out.x))
    scored: list[tuple[Evaluation, np.ndarray, str]] = []
    selected_by = at(
        SELECTION_TIME_SHARE if built.path is not None else SELECTION_TIME_SHARE_WITHOUT_MILP
    )
    for k, (source, x) in enumerate(pool):
        assert _degree_ok(x, u), source
        share = max(0.0, selected_by - time.perf_counter()) / (len(pool) - k)
        ev = evaluate(x, d, c, True, time.perf_counter() + share, stop_on_stall=True)
        scored.append((ev, x, source))
    top = max(s[0].theta for s in scored)
    ties = [s for s in scored if s[0].theta >= top - LP_RELATIVE_TOL * top]
    ev, x, source = next((s for s in ties if s[0].exact), ties[0])  # prefer a finished one

    def proven(theta: float) -> bool:
        return bound - theta <= relative_gap * bound + OPTIMALITY_TOL * max(1.0, bound)

    # The complete path MILP, started from the best candidate, unless that is proven optimal.
    if built.path is not None and not proven(ev.theta):
        model, pv = built.path
        start = _path_start(pv, x, path_lp(d, c, capacity=c * x.astype(float)).routing)
        out = run_milp(
            model,
            lambda: _path_x(n, pv),
            start,
            at(MILP_TIME_SHARE) - time.perf_counter(),
            relative_gap,
        )
        if out.status.has_solution:
            bound = min(bound, out.bound)
        if out.x is not None and _degree_ok(out.x, u):
            ev_milp = evaluate(out.x, d, c, True, at(1.0))
            if ev_milp.theta > ev.theta + OPTIMALITY_TOL * max(1.0, ev.theta):
                ev, x, source = ev_milp, out.x, "path_milp"

    # The winner evaluated to the tolerance with the time left.
    if not ev.exact and time.perf_counter() < at(1.0):
        again = evaluate(x, d, c, True, at(1.0))
        ev = Evaluation(max(ev.theta, again.theta), min(ev.upper, again.upper))
    status = Status.OPTIMAL if proven(ev.theta) else Status.FEASIBLE
    if ev.theta <= 0 and time.perf_counter() >= at(1.0):
        status = Status.TIME_LIMIT
    return result(status, x, ev, bound, lp_bound, source)
