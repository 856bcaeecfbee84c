"""OCS traffic engineering: ``build`` the restricted master, ``solve`` it by column generation.

The docstrings here say "package docstring" for the docstring of ``models.ocs_te``, which holds
the formulation in full.
"""

from __future__ import annotations

import math
import time

import highspy
import numpy as np

from models.ocs_te.columns import all_transit, initial_transit, price
from models.ocs_te.data import (
    INITIAL_TRANSIT,
    INITIAL_TRANSIT_HOT,
    PDLP_TOL,
    RELATIVE_GAP_TOL,
    SHARE_TOL,
    Splits,
    TeProblem,
    TeResult,
    bundle_loads,
    hose_bound,
    utilisation,
)
from models.ocs_te.lp import (
    TeMaster,
    add_bundle_capacity,
    add_pair_split,
    add_paths,
    add_variables,
    run_master,
)
from models.status import Status


def build(problem: TeProblem, *, all_transit_columns: bool = False) -> TeMaster:
    """The restricted master, built and not solved.

    The direct path of every pair with circuits, and ``INITIAL_TRANSIT`` transit paths per pair
    (``INITIAL_TRANSIT_HOT`` for a pair without circuits or without room on them at the hose
    bound); every transit path with ``all_transit_columns`` (the full LP).
    """
    start = time.perf_counter()
    n = problem.n
    pa, pb = problem.pairs()
    pair_index = np.full((n, n), -1, dtype=np.int64)
    pair_index[pa, pb] = np.arange(len(pa))
    link = problem.circuits > 0
    bu, bv = np.nonzero(link)
    bundle_index = np.full((n, n), -1, dtype=np.int64)
    bundle_index[bu, bv] = np.arange(len(bu))
    transit_ok = link[pa] & link[:, pb].T
    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("run_crossover", "off")
    highs.setOptionValue("pdlp_optimality_tolerance", PDLP_TOL)
    m = TeMaster(
        problem=problem,
        highs=highs,
        pair_a=pa,
        pair_b=pb,
        pair_index=pair_index,
        bundle_u=bu.astype(np.int64),
        bundle_v=bv.astype(np.int64),
        bundle_index=bundle_index,
        bundle_gbps=problem.bundle_gbps()[bu, bv],
        transit_ok=transit_ok,
        have=np.zeros_like(transit_ok),
    )
    add_variables(m)
    add_pair_split(m)
    add_bundle_capacity(m)
    direct = link[pa, pb]
    add_paths(m, pa[direct], pb[direct], pb[direct])
    pick = all_transit if all_transit_columns else initial_transit
    target = hose_bound(problem)
    room = target * problem.capacity_gbps * problem.circuits - problem.demand_gbps  # c may be c_ab
    hot = ~direct | (room[pa, pb] < 0)
    per_pair = np.where(hot, INITIAL_TRANSIT_HOT, INITIAL_TRANSIT)
    p, t = pick(transit_ok, pa, pb, room, per_pair)
    add_paths(m, pa[p], pb[p], t)
    m.build_s = time.perf_counter() - start
    return m


def solve(m: TeMaster, *, deadline: float = math.inf) -> TeResult:
    """Column generation on the master.

    OPTIMAL once the certified u meets the lower bound within ``RELATIVE_GAP_TOL`` or no
    transit column prices out; FEASIBLE at ``deadline`` (``time.perf_counter()`` seconds) with
    the best splits so far (at worst the starting splits) and the best bound; INFEASIBLE when a
    pair with demand has no path.
    """
    start = time.perf_counter()
    p = m.problem
    bad = p.unroutable()
    if bad:
        return _infeasible(m, bad, start)
    best = _starting_splits(m)
    best_u = utilisation(p, best)
    lower = hose_bound(p)
    rounds = 0
    converged = m.pairs == 0
    while not converged and time.perf_counter() < deadline:
        sol = run_master(m, deadline)
        if sol is None:
            break
        rounds += 1
        splits = _master_splits(m, sol.col_value)
        if splits is not None:
            u = utilisation(p, splits)
            if u < best_u:
                best, best_u = splits, u
        priced = price(m, sol)
        lower = max(lower, priced.bound)
        if best_u - lower <= RELATIVE_GAP_TOL * best_u or len(priced.pair) == 0:
            converged = True
            break
        if time.perf_counter() >= deadline:
            break
        add_paths(m, m.pair_a[priced.pair], m.pair_b[priced.pair], priced.via)
    return _result(
        m,
        Status.OPTIMAL if converged else Status.FEASIBLE,
        best,
        best_u,
        min(lower, best_u),
        rounds,
        start,
    )


# --- splits ---------------------------------------------------------------------------------------


def _starting_splits(m: TeMaster) -> Splits:
    """The splits before any LP.

    Every pair direct where it has circuits, else evenly over its transit columns in the
    master (there is one for every pair with a path).
    """
    paths = m.paths()
    a, b, via = paths[:, 0], paths[:, 1], paths[:, 2]
    pair = m.pair_index[a, b]
    has_direct = np.zeros(m.pairs, dtype=bool)
    has_direct[pair[via == b]] = True
    use = (via == b) | ~has_direct[pair]
    count = np.bincount(pair[use], minlength=m.pairs)
    return Splits(a[use], b[use], via[use], 1.0 / count[pair[use]])


def _master_splits(m: TeMaster, col_value: np.ndarray) -> Splits | None:
    """The master's shares, shares below ``SHARE_TOL`` dropped, each pair renormalised to 1.

    None if some pair is left with nothing (a master solution off its pair.split rows).
    """
    paths = m.paths()
    a, b, via = paths[:, 0], paths[:, 1], paths[:, 2]
    pair = m.pair_index[a, b]
    value = np.maximum(col_value[m.path_first : m.path_first + len(paths)], 0.0)
    total = np.bincount(pair, value, m.pairs)
    if (total <= 0).any():
        return None
    share = value / total[pair]
    keep = share >= SHARE_TOL
    total = np.bincount(pair[keep], share[keep], m.pairs)
    if (total <= 0).any():
        return None
    k = keep
    return Splits(a[k], b[k], via[k], share[k] / total[pair[k]])


def _with_idle_pairs(m: TeMaster, splits: Splits) -> Splits:
    """With h = 0: the pairs without demand that have circuits, added as direct."""
    p = m.problem
    if p.hedged:
        return splits
    idle = (p.demand_gbps == 0) & (p.circuits > 0)
    ia, ib = np.nonzero(idle)
    return Splits(
        np.concatenate([splits.a, ia]).astype(np.int64),
        np.concatenate([splits.b, ib]).astype(np.int64),
        np.concatenate([splits.via, ib]).astype(np.int64),
        np.concatenate([splits.share, np.ones(len(ia))]),
    )


# --- the result -----------------------------------------------------------------------------------


def _result(
    m: TeMaster,
    status: Status,
    splits: Splits,
    u: float,
    lower: float,
    rounds: int,
    start: float,
) -> TeResult:
    p = m.problem
    out = _with_idle_pairs(m, splits)
    d = p.demand_gbps
    volume = d[out.a, out.b] * out.share
    total = float(volume.sum())
    direct = float(volume[out.via == out.b].sum())
    direct_share = direct / total if total > 0 else 1.0
    hops = (direct + 2.0 * (total - direct)) / total if total > 0 else 1.0
    return TeResult(
        status=status,
        max_utilisation=u,
        lower_bound=lower,
        splits=out,
        loads_gbps=bundle_loads(p.n, out.a, out.b, out.via, out.share, d),
        direct_share=direct_share,
        mean_block_hops=hops,
        transit_columns=m.transit_columns,
        rounds=rounds,
        wall_s=m.build_s + time.perf_counter() - start,
    )


def _infeasible(m: TeMaster, bad: list[tuple[int, int]], start: float) -> TeResult:
    n = m.problem.n
    shown = ", ".join(f"{a}->{b}" for a, b in bad[:5]) + (" ..." if len(bad) > 5 else "")
    return TeResult(
        status=Status.INFEASIBLE,
        max_utilisation=math.inf,
        lower_bound=math.inf,
        splits=Splits.empty(),
        loads_gbps=np.zeros((n, n)),
        direct_share=math.nan,
        mean_block_hops=math.nan,
        transit_columns=m.transit_columns,
        rounds=0,
        wall_s=m.build_s + time.perf_counter() - start,
        reason=f"{len(bad)} pair(s) with demand and no path (no circuit, no transit block): {shown}",
    )
