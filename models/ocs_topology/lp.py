"""OCS topology engineering: LPs with HiGHS, column generation over the path model.

``path_lp`` serves the LP relaxation (x continuous) and the evaluation with x fixed; it gives
Farley's bound from the duals and, with x fixed, a certified routing.

The docstrings here say "module docstring" for the package docstring of ``models.ocs_topology``,
which holds the formulation, the bounds and the constructions in full.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import highspy
import numpy as np

from models.ocs_topology.data import (
    INITIAL_TRANSIT,
    LP_RELATIVE_TOL,
    NEW_TRANSIT_PER_PAIR,
    PRICE_BAND,
    REDUCED_COST_TOL,
    STALL_GAP,
    STALL_TOL,
)

_INF = highspy.kHighsInf


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
