"""OCS traffic engineering: the restricted master LP in HiGHS.

The master (``TeMaster``: the HiGHS model and which row and column is what), its variables
(``add_variables``), one constraint family per ``add_*`` function (``CONSTRAINTS``), the path
columns (``add_paths``) and one LP solve (``run_master``). ``build`` and the column generation
are ``models.ocs_te.solver``; which columns enter, ``models.ocs_te.columns``.

The docstrings here say "package docstring" for the docstring of ``models.ocs_te``, which holds
the formulation in full.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import highspy
import numpy as np

from models.ocs_te.data import MIN_LP_TIME_S, PDLP_MIN_COLUMNS, TeProblem

_INF = highspy.kHighsInf


@dataclass(eq=False)
class TeMaster:
    """The restricted master: a HiGHS model that grows by path columns (and their hedge rows)."""

    problem: TeProblem
    highs: highspy.Highs
    pair_a: np.ndarray
    """P pairs with shares (``TeProblem.pairs``); pair p has the pair.split row p."""
    pair_b: np.ndarray
    pair_index: np.ndarray
    """(n x n) pair of (a, b), -1 for none."""
    bundle_u: np.ndarray
    """E directed bundles (u, v) with x_uv > 0; bundle e has the bundle.capacity row P + e."""
    bundle_v: np.ndarray
    bundle_index: np.ndarray
    """(n x n) bundle of (u, v), -1 for none."""
    bundle_gbps: np.ndarray
    """c_e = c_uv x_uv (c x_uv with one rate for every circuit)."""
    transit_ok: np.ndarray
    """(P x n) bool: pair p may go via t (x_at > 0 and x_tb > 0)."""
    have: np.ndarray
    """(P x n) bool: the transit column (p, t) is in the master."""
    rows: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    """Row ranges (first, count) of each constraint family, in the order added."""
    path_first: int = -1
    """Column of the first path; every column from it on is a path, in ``paths`` order."""
    hedge_first: int = -1
    """Column of m_0 (h > 0 only); m_e is column hedge_first + e."""
    build_s: float = 0.0
    """Time ``build`` took (s)."""
    _paths: list[np.ndarray] = field(default_factory=list)
    _hedge: list[np.ndarray] = field(default_factory=list)

    @property
    def pairs(self) -> int:
        """P."""
        return len(self.pair_a)

    @property
    def bundles(self) -> int:
        """E."""
        return len(self.bundle_u)

    def paths(self) -> np.ndarray:
        """(k x 3) (a, b, via) of the path columns, in column order; via == b is direct."""
        if len(self._paths) != 1:
            self._paths = [np.concatenate(self._paths or [np.zeros((0, 3), np.int64)])]
        return self._paths[0]

    def hedge_rows(self) -> np.ndarray:
        """(r x 2) (path, bundle) of the bundle.hedge rows, in row order."""
        if len(self._hedge) != 1:
            self._hedge = [np.concatenate(self._hedge or [np.zeros((0, 2), np.int64)])]
        return self._hedge[0]

    @property
    def transit_columns(self) -> int:
        """Transit paths in the master."""
        p = self.paths()
        return int((p[:, 2] != p[:, 1]).sum())

    def add_rows(
        self,
        family: str,
        lower: np.ndarray,
        upper: np.ndarray,
        width: int = 0,
        index: np.ndarray | None = None,
        values: np.ndarray | None = None,
    ) -> None:
        """Rows of a family, each with ``width`` entries (``index``, ``values`` row by row)."""
        count = len(lower)
        first = self.highs.getNumRow()
        idx = np.zeros(0, np.int32) if index is None else index.astype(np.int32)
        val = np.zeros(0) if values is None else values.astype(float)
        starts = (width * np.arange(count)).astype(np.int32)
        self.highs.addRows(count, lower, upper, width * count, starts, idx, val)
        self.rows.setdefault(family, []).append((first, count))


# --- variables ------------------------------------------------------------------------------------


def add_variables(m: TeMaster) -> None:
    """U >= 0 (column 0, cost 1: minimise u) and, with h > 0, m_e >= 0 for every bundle e.

    The shares s[a,b,p] are the path columns (``add_paths``).
    """
    h = m.highs
    h.addCol(1.0, 0.0, _INF, 0, np.zeros(0, np.int32), np.zeros(0))
    if m.problem.hedged and m.bundles:
        m.hedge_first = h.getNumCol()
        e = m.bundles
        h.addCols(e, np.zeros(e), np.zeros(e), np.full(e, _INF), 0, np.zeros(e, np.int32),
                  np.zeros(0, np.int32), np.zeros(0))  # fmt: skip


# --- constraints: one family per function ---------------------------------------------------------


def add_pair_split(m: TeMaster) -> None:
    """Each pair's shares sum to one.  sum_p s[a,b,p] = 1   for every pair (a, b) with shares.

    Rows 0..P-1, empty here: each path column brings its 1 (``add_paths``).
    """
    if not m.pairs:
        return
    m.add_rows("pair.split", np.ones(m.pairs), np.ones(m.pairs))


def add_bundle_capacity(m: TeMaster) -> None:
    """Forecast load plus the hedge fits u times the bundle, scaled by 1 / c_e.

    sum_{(a,b,p) uses e} (D_ab / c_e) s[a,b,p] + (h / c_e) m_e - u <= 0   for every bundle e.
    Rows P..P+E-1; u and m_e enter here, each path column brings its D_ab / c_e (``add_paths``).
    """
    e = m.bundles
    if not e:
        return
    if m.problem.hedged:  # per row: u (column 0) with -1, m_e with h / c_e
        index = np.stack([np.zeros(e, np.int64), m.hedge_first + np.arange(e)], axis=1).ravel()
        values = np.stack([-np.ones(e), m.problem.hedge_gbps / m.bundle_gbps], axis=1).ravel()
        width = 2
    else:
        index, values, width = np.zeros(e, np.int64), -np.ones(e), 1
    m.add_rows("bundle.capacity", np.full(e, -_INF), np.zeros(e), width, index, values)


def add_bundle_hedge(m: TeMaster, path: np.ndarray, bundle: np.ndarray) -> None:
    """The hedge covers the largest share of one pair on a bundle.

    s[a,b,p] - m_e <= 0   for every path column (a, b, p) and bundle e on p (h > 0 only). A pair
    uses a bundle on one path at most, so m_e is the largest share of one pair on e.
    Added with each batch of path columns: ``path`` (index into ``paths``), ``bundle`` (e).
    """
    r = len(path)
    if r == 0 or not m.problem.hedged:
        return
    index = np.stack([m.path_first + path, m.hedge_first + bundle], axis=1).ravel()
    m.add_rows("bundle.hedge", np.full(r, -_INF), np.zeros(r), 2, index, np.tile([1.0, -1.0], r))
    m._hedge.append(np.stack([path, bundle], axis=1).astype(np.int64))


#: Every constraint family, by name (the rows' family in ``TeMaster.rows``).
CONSTRAINTS: dict[str, Callable[..., None]] = {
    "pair.split": add_pair_split,
    "bundle.capacity": add_bundle_capacity,
    "bundle.hedge": add_bundle_hedge,
}


# --- path columns ---------------------------------------------------------------------------------


def add_paths(m: TeMaster, a: np.ndarray, b: np.ndarray, via: np.ndarray) -> None:
    """Share columns s[a,b,via] >= 0 (via == b: direct), cost 0, and their hedge rows.

    Column entries: 1 in the pair.split row of (a, b); D_ab / c_e in the bundle.capacity row of
    each bundle e on the path (a -> b, or a -> via and via -> b; none when D_ab = 0).
    """
    k = len(a)
    if k == 0:
        return
    if m.path_first < 0:
        m.path_first = m.highs.getNumCol()
    a, b, via = (np.asarray(v, dtype=np.int64) for v in (a, b, via))
    pair = m.pair_index[a, b]
    transit = via != b
    e1 = m.bundle_index[a, via]
    e2 = np.where(transit, m.bundle_index[via, b], 0)
    if (pair < 0).any() or (e1 < 0).any() or (m.bundle_index[via[transit], b[transit]] < 0).any():
        raise ValueError(
            "a path column for a pair without shares or over a bundle without circuits"
        )
    p_rows = m.rows["bundle.capacity"][0][0]
    weight = m.problem.demand_gbps[a, b]
    rows = np.stack([m.rows["pair.split"][0][0] + pair, p_rows + e1, p_rows + e2], axis=1)
    values = np.stack([np.ones(k), weight / m.bundle_gbps[e1], weight / m.bundle_gbps[e2]], axis=1)
    keep = np.stack([np.ones(k, bool), weight > 0, transit & (weight > 0)], axis=1)
    counts = keep.sum(axis=1)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int32)
    m.highs.addCols(k, np.zeros(k), np.zeros(k), np.full(k, _INF), int(counts.sum()), starts,
                    rows[keep].astype(np.int32), values[keep])  # fmt: skip
    before = len(m.paths())
    m._paths.append(np.stack([a, b, via], axis=1))
    m.have[pair[transit], via[transit]] = True
    index = before + np.arange(k)
    add_bundle_hedge(m, np.concatenate([index, index[transit]]), np.concatenate([e1, e2[transit]]))


# --- one solve ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MasterSolution:
    """One optimal solve of the restricted master."""

    u: float
    col_value: np.ndarray
    row_dual: np.ndarray


def run_master(m: TeMaster, deadline: float = math.inf) -> MasterSolution | None:
    """Solve the master once.

    Interior point without crossover below ``PDLP_MIN_COLUMNS`` columns, PDLP (to ``PDLP_TOL``)
    from there; the other, then simplex, if one fails with time left.

    None when no optimal solution came before the deadline. The solution need not be exact:
    ``solve`` certifies u from the splits and repairs the duals before it bounds u.
    """
    h = m.highs
    optimal = highspy.HighsModelStatus.kOptimal
    first, second = ("ipm", "pdlp") if h.getNumCol() < PDLP_MIN_COLUMNS else ("pdlp", "ipm")
    for solver in (first, second, "simplex"):
        left = deadline - time.perf_counter()
        if left < MIN_LP_TIME_S:
            return None
        h.setOptionValue("solver", solver)
        h.setOptionValue("time_limit", left if math.isfinite(left) else _INF)
        h.run()
        if h.getModelStatus() == optimal:
            sol = h.getSolution()
            return MasterSolution(
                float(h.getInfo().objective_function_value),
                np.asarray(sol.col_value),
                np.asarray(sol.row_dual),
            )
    return None
