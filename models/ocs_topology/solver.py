"""OCS topology engineering: ``solve``.

The candidates evaluated with x fixed, the circulant and path MILPs, the best topology kept
with a proven bound. Building the models is ``models.ocs_topology.model``.

The docstrings here say "module docstring" for the package docstring of ``models.ocs_topology``,
which holds the formulation, the bounds and the constructions in full.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from models.ocs_topology.bounds import hose_bound, integer_capacity_bound
from models.ocs_topology.constructions import (
    no_transit_optimum,
    proportional,
    round_with_degrees,
    uniform_mesh,
)
from models.ocs_topology.data import (
    ALPHAS,
    FULL_MODEL_MAX_TRANSIT,
    LP_RELATIVE_TOL,
    LP_TIME_SHARE,
    MILP_TIME_SHARE,
    OPTIMALITY_TOL,
    SELECTION_TIME_SHARE,
    SELECTION_TIME_SHARE_WITHOUT_MILP,
    Topology,
    circuit_matrix,
    circuits_of,
    is_cyclic,
    pair_weight,
)
from models.ocs_topology.evaluation import Evaluation, evaluate
from models.ocs_topology.lp import path_lp
from models.ocs_topology.model import (
    BuiltTopology,
    Instance,
    _circulant_y,
    _path_start,
    _path_x,
    run_milp,
)
from models.status import Status

# --- solve ------------------------------------------------------------------------------------------


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
