"""OCS traffic engineering: the transit columns of the master, and the bound from its duals.

Which transit columns the master starts with (``initial_transit``), which enter it (``price``),
and the lower bound on u the duals certify (``_dual_bound``).

The docstrings here say "package docstring" for the docstring of ``models.ocs_te``, which holds
the formulation in full.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from models.ocs_te.data import (
    NEW_TRANSIT_PER_PAIR,
    PRICE_BAND,
    PRICING_CHUNK_ENTRIES,
    REDUCED_COST_TOL,
)
from models.ocs_te.lp import MasterSolution, TeMaster


def _chunks(pairs: int, n: int) -> Iterator[slice]:
    """Slices of the pairs, about ``PRICING_CHUNK_ENTRIES`` (pair, block) entries each."""
    step = max(1, PRICING_CHUNK_ENTRIES // max(n, 1))
    for first in range(0, pairs, step):
        yield slice(first, min(first + step, pairs))


def _lowest(
    key: np.ndarray, take: np.ndarray, r: int | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of each row's up to r entries with the lowest key where take.

    r is one count, or one per row.
    """
    rows, n = key.shape
    most = int(np.max(r, initial=0))
    if most <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if most >= n:
        best = np.argsort(np.where(take, key, np.inf), axis=1, kind="stable")
    else:
        best = np.argpartition(np.where(take, key, np.inf), most - 1, axis=1)[:, :most]
        order = np.argsort(np.take_along_axis(key, best, axis=1), axis=1, kind="stable")
        best = np.take_along_axis(best, order, axis=1)
    keep = np.take_along_axis(take, best, axis=1)
    keep &= np.arange(best.shape[1])[None, :] < np.broadcast_to(r, (rows,))[:, None]
    row = np.broadcast_to(np.arange(rows)[:, None], best.shape)[keep]
    return row, best[keep]


def initial_transit(
    transit_ok: np.ndarray,
    pa: np.ndarray,
    pb: np.ndarray,
    room_gbps: np.ndarray,
    per_pair: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(pair, t): per pair p, the ``per_pair[p]`` transit blocks t with the most room.

    Room is min(room_at, room_tb) (``room_gbps``: n x n, what each bundle has left); ties are
    broken by the rotation (t - a - b) mod n, so that the pairs of a uniform mesh spread their
    transit.
    """
    pairs, n = transit_ok.shape
    out_p: list[np.ndarray] = []
    out_t: list[np.ndarray] = []
    tie = 1e-9 * (float(np.abs(room_gbps).max(initial=0.0)) + 1.0) / n
    for ch in _chunks(pairs, n):
        a, b = pa[ch], pb[ch]
        wide = np.minimum(room_gbps[a], room_gbps[:, b].T)
        rotation = (np.arange(n)[None, :] - a[:, None] - b[:, None]) % n
        row, t = _lowest(tie * rotation - wide, transit_ok[ch], per_pair[ch])
        out_p.append(ch.start + row)
        out_t.append(t)
    if not out_p:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_p).astype(np.int64), np.concatenate(out_t).astype(np.int64)


def all_transit(
    transit_ok: np.ndarray,
    pa: np.ndarray,
    pb: np.ndarray,
    room_gbps: np.ndarray,
    per_pair: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(pair, t) of every transit path (the full LP); same signature as ``initial_transit``."""
    p, t = np.nonzero(transit_ok)
    return p.astype(np.int64), t.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Priced:
    """The transit columns to add, and the lower bound the duals certify."""

    pair: np.ndarray
    via: np.ndarray
    bound: float


def price(m: TeMaster, sol: MasterSolution) -> Priced:
    """Price the transit columns not in the master with the master's duals, and bound u.

    Duals (HiGHS signs: a binding <= row has a dual <= 0): sigma_ab of pair.split, y_e >= 0 of
    bundle.capacity (scaled rows, so w_e = y_e / c_e per Gb/s), z >= 0 of bundle.hedge. A missing
    column a -> t -> b has no hedge rows yet, so z = 0 for it and its reduced cost is
        D_ab (w_at + w_tb) - sigma_ab.
    It enters when that is below -``REDUCED_COST_TOL`` max |sigma|: up to
    ``NEW_TRANSIT_PER_PAIR`` per pair (the cheapest w_at + w_tb, which for D_ab = 0 ranks
    columns whose reduced costs tie), and only if violated by at least 1/``PRICE_BAND`` of the
    worst violation. The bound is the package docstring's (Bounds, weak duality).
    """
    p = m.problem
    n = p.n
    split0 = m.rows["pair.split"][0][0]
    cap0 = m.rows["bundle.capacity"][0][0]
    dual = sol.row_dual
    sigma = dual[split0 : split0 + m.pairs]
    y = np.maximum(-dual[cap0 : cap0 + m.bundles], 0.0)
    w = np.zeros((n, n))
    w[m.bundle_u, m.bundle_v] = y / m.bundle_gbps
    weight = p.demand_gbps[m.pair_a, m.pair_b]
    tol = REDUCED_COST_TOL * max(float(np.abs(sigma).max(initial=0.0)), 1e-300)

    free_best = np.full(m.pairs, np.inf)  # min over missing transit paths of D_ab (w_at + w_tb)
    cand_p: list[np.ndarray] = []
    cand_t: list[np.ndarray] = []
    cand_v: list[np.ndarray] = []
    for ch in _chunks(m.pairs, n):
        path_price = w[m.pair_a[ch]] + w[:, m.pair_b[ch]].T
        free = m.transit_ok[ch] & ~m.have[ch]
        cost = np.where(free, weight[ch, None] * path_price, np.inf)
        free_best[ch] = cost.min(axis=1, initial=np.inf)
        reduced = cost - sigma[ch, None]
        enter = reduced < -tol
        busy = np.nonzero(enter.any(axis=1))[0]
        if len(busy) == 0:
            continue
        row, t = _lowest(path_price[busy], enter[busy], NEW_TRANSIT_PER_PAIR)
        cand_p.append(ch.start + busy[row])
        cand_t.append(t)
        cand_v.append(-reduced[busy[row], t])

    bound = _dual_bound(m, sol, w, y, weight, free_best)
    if not cand_p:
        return Priced(np.zeros(0, np.int64), np.zeros(0, np.int64), bound)
    pair, via, violation = (np.concatenate(v) for v in (cand_p, cand_t, cand_v))
    keep = violation >= violation.max() / PRICE_BAND
    return Priced(pair[keep].astype(np.int64), via[keep].astype(np.int64), bound)


def _dual_bound(
    m: TeMaster,
    sol: MasterSolution,
    w: np.ndarray,
    y: np.ndarray,
    weight: np.ndarray,
    free_best: np.ndarray,
) -> float:
    """Weak duality from the master's duals, repaired to be feasible for the full LP.

    z of each bundle.hedge row is scaled down on bundle e until sum z <= (h / c_e) y_e (m_e's
    dual row); sigma'_ab = min over every path of (a, b) of D_ab sum_e w_e + sum_e z_e,p (z = 0
    for a path not in the master); the bound is sum sigma' / max(1, sum y) (u's dual row).
    """
    paths = m.paths()
    a, b, via = paths[:, 0], paths[:, 1], paths[:, 2]
    pair = m.pair_index[a, b]
    transit = via != b
    cost = weight[pair] * (w[a, via] + np.where(transit, w[via, b], 0.0))
    hedge = m.hedge_rows()
    if m.problem.hedged and len(hedge):
        rows = np.concatenate([np.arange(f, f + k) for f, k in m.rows["bundle.hedge"]])
        z = np.maximum(-sol.row_dual[rows], 0.0)
        limit = m.problem.hedge_gbps / m.bundle_gbps * y
        total = np.bincount(hedge[:, 1], z, m.bundles)
        factor = np.where(total > limit, limit / np.where(total > 0, total, 1.0), 1.0)
        z = z * factor[hedge[:, 1]]
        cost = cost + np.bincount(hedge[:, 0], z, len(paths))
    sigma = free_best.copy()
    np.minimum.at(sigma, pair, cost)
    if not np.isfinite(sigma).all():
        return 0.0
    return float(sigma.sum() / max(1.0, float(y.sum())))
