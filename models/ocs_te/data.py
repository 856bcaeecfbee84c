"""OCS traffic engineering: data.

The tolerances, the problem (``TeProblem``), the splits and the result (``Splits``, ``TeResult``),
and what is computed from splits alone: bundle loads, the certified utilisation, the hose bound.
No solver is loaded here.

The docstrings here say "package docstring" for the docstring of ``models.ocs_te``, which holds
the formulation in full.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.status import Status

#: A share below this is dropped from a pair's split, and the pair's other shares renormalised.
SHARE_TOL = 1e-6
#: Column generation stops once the certified u is within this share of the lower bound.
RELATIVE_GAP_TOL = 1e-6
#: A transit column enters when its reduced cost is below minus this share of the largest
#: pair.split dual.
REDUCED_COST_TOL = 1e-9
#: Transit columns in the first restricted master (those with the most room left by the direct
#: routing at the hose bound) per pair whose direct circuits have room for its demand, and per
#: hot pair (no room, or no direct circuit).
INITIAL_TRANSIT = 0
INITIAL_TRANSIT_HOT = 8
#: Largest number of transit columns priced into the master per pair and round.
NEW_TRANSIT_PER_PAIR = 8
#: A round prices in only columns violated by at least 1/PRICE_BAND of the worst violation.
PRICE_BAND = 10.0
#: The master is solved by HiGHS's interior point method below this many columns and by its
#: PDLP (first-order) from there, to this relative tolerance. At 64 blocks under a permutation
#: the master of 33k transit columns took IPX 3.8 s and PDLP 0.3-0.7 s; dual simplex did not
#: finish in 60 s, and simplex column generation stalled (degenerate duals).
PDLP_MIN_COLUMNS = 5_000
PDLP_TOL = 1e-9
#: The shortest time limit handed to HiGHS (s): a run with less time left is not started.
MIN_LP_TIME_S = 0.05
#: Pricing walks the pairs in chunks of about this many (pair, transit block) entries, so its
#: work arrays stay small (8 MB of floats) at 256 blocks, where all of them would be 134 MB.
PRICING_CHUNK_ENTRIES = 1 << 20


# --- the problem ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TeProblem:
    """Blocks, the circuits between them, the forecast demand and the hedge.

    The arrays are checked and stored as read-only copies: ``circuits`` as int64, the demand as
    float64.
    """

    circuits: np.ndarray
    """x (n x n): circuits between blocks a and b; symmetric, non-negative integers, zero diagonal."""
    demand_gbps: np.ndarray
    """D (n x n): the forecast, Gb/s from a to b; non-negative, zero diagonal."""
    capacity_gbps: float | np.ndarray
    """c: what one circuit carries in each direction. A float: every circuit alike; an n x n
    symmetric array: c_ab, what ONE circuit between blocks a and b carries (mixed block
    generations: the slower end's rate), positive wherever x_ab > 0."""
    hedge_gbps: float = 0.0
    """h: the surge over the forecast any ONE pair may bring (package docstring, bundle.hedge)."""

    def __post_init__(self) -> None:
        x_raw = np.asarray(self.circuits)
        if x_raw.ndim != 2 or x_raw.shape[0] != x_raw.shape[1] or x_raw.shape[0] < 2:
            raise ValueError(f"circuits must be an n x n matrix with n >= 2, got {x_raw.shape}")
        n = x_raw.shape[0]
        x_float = x_raw.astype(float)
        if not np.isfinite(x_float).all() or (x_float < 0).any():
            raise ValueError("circuits must be finite and non-negative")
        if not np.array_equal(x_float, np.round(x_float)):
            raise ValueError("circuits must be integers")
        x = x_float.astype(np.int64)
        if not np.array_equal(x, x.T):
            raise ValueError("circuits must be symmetric (a circuit carries both directions)")
        if np.diagonal(x).any():
            raise ValueError("circuits must have a zero diagonal")
        d = np.array(self.demand_gbps, dtype=float)
        if d.shape != (n, n):
            raise ValueError(f"demand_gbps must be {n} x {n}, got {d.shape}")
        if not np.isfinite(d).all() or (d < 0).any():
            raise ValueError("demand_gbps must be finite and non-negative")
        if np.diagonal(d).any():
            raise ValueError("demand_gbps must have a zero diagonal (traffic inside a block)")
        capacity = _checked_capacity(self.capacity_gbps, x)
        if not (math.isfinite(self.hedge_gbps) and self.hedge_gbps >= 0):
            raise ValueError(f"hedge_gbps must be finite and non-negative, got {self.hedge_gbps}")
        x.setflags(write=False)
        d.setflags(write=False)
        object.__setattr__(self, "circuits", x)
        object.__setattr__(self, "demand_gbps", d)
        object.__setattr__(self, "capacity_gbps", capacity)
        object.__setattr__(self, "hedge_gbps", float(self.hedge_gbps))

    @property
    def n(self) -> int:
        """Blocks."""
        return int(self.circuits.shape[0])

    @property
    def per_pair(self) -> bool:
        """Whether ``capacity_gbps`` is a per-pair matrix (else one rate for every circuit)."""
        return isinstance(self.capacity_gbps, np.ndarray)

    def bundle_gbps(self) -> np.ndarray:
        """(n x n) c_ab x_ab: what the bundle a -> b carries (c x_ab with one rate)."""
        return self.capacity_gbps * self.circuits.astype(float)

    @property
    def hedged(self) -> bool:
        """Whether h > 0 (the m variables and bundle.hedge rows exist)."""
        return self.hedge_gbps > 0

    def reachable(self) -> np.ndarray:
        """(n x n) bool: whether a pair has a path (direct, or one transit block)."""
        link = (self.circuits > 0).astype(np.int64)
        return (link > 0) | (link @ link > 0)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(a, b) of the pairs that get shares, row-major.

        D_ab > 0, and with h > 0 every pair with a path (package docstring, Pairs).
        """
        want = self.demand_gbps > 0
        if self.hedged:
            want = want | (self.reachable() & ~np.eye(self.n, dtype=bool))
        a, b = np.nonzero(want)
        return a.astype(np.int64), b.astype(np.int64)

    def unroutable(self) -> list[tuple[int, int]]:
        """Pairs with demand and no path."""
        a, b = np.nonzero((self.demand_gbps > 0) & ~self.reachable())
        return [(int(i), int(j)) for i, j in zip(a, b, strict=True)]


def _checked_capacity(value: float | np.ndarray, x: np.ndarray) -> float | np.ndarray:
    """``TeProblem.capacity_gbps`` checked: a positive float, or a read-only n x n matrix.

    The matrix is finite, non-negative, symmetric, and positive wherever there are circuits.
    """
    if np.ndim(value) == 0:
        c = float(value)
        if not (math.isfinite(c) and c > 0):
            raise ValueError(f"capacity_gbps must be positive, got {value}")
        return c
    n = x.shape[0]
    m = np.array(value, dtype=float)
    if m.shape != (n, n):
        raise ValueError(f"capacity_gbps must be a number or {n} x {n}, got {m.shape}")
    if not np.isfinite(m).all() or (m < 0).any():
        raise ValueError("capacity_gbps must be finite and non-negative")
    if not np.array_equal(m, m.T):
        raise ValueError("capacity_gbps must be symmetric (a circuit runs both ways alike)")
    if (m[x > 0] <= 0).any():
        raise ValueError("capacity_gbps must be positive between blocks with circuits")
    m.setflags(write=False)
    return m


# --- splits and the result ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Splits:
    """WCMP weights: pair (a[k], b[k]) sends share[k] of its traffic via block via[k].

    via == b means the direct circuits. Each listed pair's shares sum to 1.
    """

    a: np.ndarray
    b: np.ndarray
    via: np.ndarray
    share: np.ndarray

    @classmethod
    def empty(cls) -> Splits:
        """No pair."""
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z, np.zeros(0))


@dataclass(frozen=True, eq=False)
class TeResult:
    """Splits of every pair over its paths, and what they achieve."""

    status: Status
    """OPTIMAL (converged), FEASIBLE (cut short, with splits), INFEASIBLE (a pair with demand
    and no path; ``reason`` names it)."""
    max_utilisation: float
    """u of the splits, certified (recomputed from them): max over bundles of (forecast load +
    h x the largest share of one pair on the bundle) / capacity. inf when INFEASIBLE."""
    lower_bound: float
    """A proven lower bound on the optimal u (weak duality); equal to u within
    ``RELATIVE_GAP_TOL`` when OPTIMAL. inf when INFEASIBLE."""
    splits: Splits
    """The shares of every pair that has them; with h = 0 also the pairs without demand that
    have circuits, as direct."""
    loads_gbps: np.ndarray
    """(n x n) forecast load of every directed bundle under the splits (``bundle_loads``)."""
    direct_share: float
    """Share of the demand volume sent direct (1.0 without demand; nan when INFEASIBLE)."""
    mean_block_hops: float
    """Demand-weighted bundles a unit crosses: 1 direct, 2 transit (1.0 without demand)."""
    transit_columns: int
    """Transit columns in the final restricted master."""
    rounds: int
    """Restricted master LPs solved."""
    wall_s: float
    reason: str = ""
    """Why there is no solution (INFEASIBLE)."""


# --- what splits give -----------------------------------------------------------------------------


def bundle_loads(
    n: int,
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    via: npt.ArrayLike,
    share: npt.ArrayLike,
    demand_gbps: np.ndarray,
) -> np.ndarray:
    """(n x n) forecast load of each directed bundle (u, v).

    The sum of D_ab share over the splits whose path uses it (a -> b when via == b, else
    a -> via and via -> b).
    """
    ai, bi, vi = (np.asarray(v, dtype=np.int64) for v in (a, b, via))
    volume = np.asarray(demand_gbps, dtype=float)[ai, bi] * np.asarray(share, dtype=float)
    transit = vi != bi
    load = np.bincount(ai * n + vi, volume, n * n)  # first bundle: a -> b or a -> via
    load += np.bincount(vi[transit] * n + bi[transit], volume[transit], n * n)
    return load.reshape(n, n)


def utilisation(problem: TeProblem, splits: Splits) -> float:
    """U of the splits: max_e (load_e + h max share of a pair on e) / c_e (0 with no bundle used).

    Raises ValueError when a split uses a bundle without circuits.
    """
    n = problem.n
    load = bundle_loads(n, splits.a, splits.b, splits.via, splits.share, problem.demand_gbps)
    first = splits.a * n + splits.via
    transit = splits.via != splits.b
    second = splits.via[transit] * n + splits.b[transit]
    capacity = problem.bundle_gbps().ravel()
    used = np.zeros(n * n, dtype=bool)
    used[first] = True
    used[second] = True
    if (capacity[used] <= 0).any():
        raise ValueError("a split uses a bundle without circuits")
    total = load.ravel()
    if problem.hedged:
        top = np.zeros(n * n)
        np.maximum.at(top, first, splits.share)
        np.maximum.at(top, second, splits.share[transit])
        total = total + problem.hedge_gbps * top
    if not used.any():
        return 0.0
    return float((total[used] / capacity[used]).max())


def hose_bound(problem: TeProblem) -> float:
    """A lower bound on u without an LP (package docstring, Bounds).

    What block a sends leaves on a's bundles, and what b gets arrives on b's:

    u >= (R_a + h [a is the source of a pair with shares]) / (sum_v c_av x_av), the same for
    what arrives at b, and u >= sum_ab D_ab hops_ab / (sum c x), hops_ab = 1 with x_ab > 0, else
    2 (every bundle's load is at most u times its capacity, summed over the bundles).
    """
    x = problem.circuits.astype(float)
    d = problem.demand_gbps
    pa, pb = problem.pairs()
    n = problem.n
    h = problem.hedge_gbps
    sends = np.bincount(pa, minlength=n) > 0
    gets = np.bincount(pb, minlength=n) > 0
    c = problem.capacity_gbps
    out = c * x.sum(axis=1) if isinstance(c, float) else problem.bundle_gbps().sum(axis=1)
    bound = 0.0
    for volume, port, busy in (
        (d.sum(axis=1), out, sends),
        (d.sum(axis=0), out, gets),  # x is symmetric: what arrives at b has the same bundles
    ):
        need = volume + h * busy
        ok = (need > 0) & (port > 0)
        if ok.any():
            bound = max(bound, float((need[ok] / port[ok]).max()))
    if x.sum() > 0:
        hops = np.where(x > 0, 1.0, 2.0)
        total = c * x.sum() if isinstance(c, float) else problem.bundle_gbps().sum()
        bound = max(bound, float((d * hops).sum() / total))
    return bound
