"""OCS topology engineering: data.

The tolerances and time shares, the problem (``TopologyProblem``), the result (``Topology``),
and the matrix helpers (demand, its scale, usable circuits, circuit lists) every other part uses.

The docstrings here say "module docstring" for the package docstring of ``models.ocs_topology``,
which holds the formulation, the bounds and the constructions in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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
