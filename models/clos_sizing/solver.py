"""Clos sizing: build the model, set the objective, solve it.

The formulation in full is the package docstring (``models.clos_sizing``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from fractions import Fraction

from ortools.sat.python import cp_model

from models.clos_sizing.constraints import (
    CONSTRAINTS,
    add_budgets,
    add_variables,
    cost_and_power,
    var_upper_bound,
)
from models.clos_sizing.problem import (
    BuiltModel,
    ClosVars,
    Requirements,
    SizingProblem,
    SizingSolution,
    TierSolution,
)
from models.scaling import units_to_usd, units_to_w, usd_to_units, w_to_units
from models.status import Status, status_of


def build(problem: SizingProblem, leave_out: frozenset[str] = frozenset()) -> BuiltModel:
    """Build (not solve) the CP-SAT model of one structure."""
    m = cp_model.CpModel()
    v = add_variables(m, problem)
    for family, add in CONSTRAINTS.items():
        if family not in leave_out:
            add(m, problem, v)
    capex, power = cost_and_power(m, problem, v)
    r = problem.requirements
    budget_req = Requirements(
        max_oversubscription=r.max_oversubscription,
        max_power_w=None if "budget.power" in leave_out else r.max_power_w,
        max_capex_usd=None if "budget.capex" in leave_out else r.max_capex_usd,
    )
    add_budgets(m, _with_requirements(problem, budget_req), v, capex, power)
    set_objective(m, problem, capex, power)
    families = tuple(
        f for f in (*CONSTRAINTS, "budget.power", "budget.capex") if f not in leave_out
    )
    return BuiltModel(problem, m, v, capex, power, families)


def _with_requirements(p: SizingProblem, r: Requirements) -> SizingProblem:
    return replace(p, requirements=r)


def objective_coefficients(p: SizingProblem) -> tuple[int, int, float]:
    """Integer weights (a, b) of capex and power units, and dollars per objective unit.

    The objective is p (w_capex capex_usd + w_energy energy_usd_per_w power_w). In CP-SAT
    units (cents, milliwatts) the exact ratio b/a of the two weights is approximated by a fraction
    with denominator at most ``MAX_WEIGHT_DENOMINATOR`` (relative error below 1e-6), which keeps
    the objective's integer range far from overflow at a million GPUs.
    """
    per_capex = p.planes * p.capex_weight / usd_to_units(1)  # dollars per cent unit
    per_power = p.planes * p.energy_weight * p.energy_usd_per_w / w_to_units(1)  # dollars per mW
    if per_capex <= 0:
        return 0, 1, per_power
    ratio = Fraction(per_power / per_capex).limit_denominator(MAX_WEIGHT_DENOMINATOR)
    return ratio.denominator, ratio.numerator, per_capex / ratio.denominator


#: Largest denominator of the rational weight between capex and power in the objective.
MAX_WEIGHT_DENOMINATOR = 1000


def set_objective(
    m: cp_model.CpModel, p: SizingProblem, capex: cp_model.LinearExpr, power: cp_model.LinearExpr
) -> None:
    """Minimise p (w_capex capex + w_energy energy_usd_per_w power) as a + b integer weights."""
    a, b, _ = objective_coefficients(p)
    m.minimize(a * capex + b * power)


def objective_usd(p: SizingProblem, capex_usd: float, power_w: float) -> float:
    """The objective in dollars from the totals of all planes."""
    return p.capex_weight * capex_usd + p.energy_weight * p.energy_usd_per_w * power_w


def tie_break(p: SizingProblem, v: ClosVars) -> cp_model.LinearExpr:
    """Preference among designs of equal objective (lower is better).

    sum_{t<T} W_t q[t] with W_{T-1} = 1 and W_t = W_{t+1} (ub q[t+1] + 1): lexicographic in the
    parallel links per switch pair, leaf tier first. Fewer parallel links means each switch's
    uplinks reach more switches above: more equal-cost paths, and less of a switch's uplink
    bandwidth lost when one switch above it fails.
    """
    weights: list[int] = []
    weight = 1
    for t in range(p.tiers - 1, 0, -1):
        weights.append(weight)
        weight *= var_upper_bound(v.q[t]) + 1
    return cp_model.LinearExpr.weighted_sum([v.q[t] for t in range(p.tiers - 1, 0, -1)], weights)


@dataclass(frozen=True)
class SolveOptions:
    """How to solve: time limit and workers; a hint is optional."""

    time_limit_s: float = 30.0
    workers: int = 2
    relative_gap: float = 0.0


def solve(built: BuiltModel, options: SolveOptions = SolveOptions()) -> SizingSolution:
    """Solve a built model and read the design of one plane out of it."""
    p = built.problem
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, options.time_limit_s)
    solver.parameters.num_workers = options.workers
    solver.parameters.relative_gap_limit = options.relative_gap
    start = time.perf_counter()
    code = solver.solve(built.model)
    wall = time.perf_counter() - start
    status = status_of("cp_sat", code)
    _, _, usd_per_unit = objective_coefficients(p)
    if status is Status.INFEASIBLE:
        return SizingSolution(status, p.planes, p.tiers, None, None, None, None, wall)
    bound = solver.best_objective_bound * usd_per_unit
    if not status.has_solution:
        return SizingSolution(status, p.planes, p.tiers, None, bound, None, None, wall)
    return _read(built, solver, status, bound, wall)


def solve_canonical(
    built: BuiltModel, solution: SizingSolution, time_limit_s: float = 10.0
) -> SizingSolution:
    """The design ``tie_break`` prefers among all designs of ``solution``'s proven-optimal objective.

    Re-solves with the objective capped at its optimum (so held there: nothing is below it) and
    ``tie_break`` as objective, with one worker so the search (and the pick among any remaining
    ties) is the same on every run. A cap rather than an equality: it propagates far better (on
    small models 0.01 s against seconds). Returns
    ``solution`` unchanged when it is not proven optimal or nothing is found in the time given.
    """
    if solution.status is not Status.OPTIMAL or solution.objective_units is None:
        return solution
    p = built.problem
    a, b, _ = objective_coefficients(p)
    model = built.model.clone()
    model.clear_objective()
    model.add(a * built.capex_units + b * built.power_units <= solution.objective_units)
    model.minimize(tie_break(p, built.v))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, time_limit_s)
    solver.parameters.num_workers = 1
    start = time.perf_counter()
    code = solver.solve(model)
    wall = time.perf_counter() - start
    if not status_of("cp_sat", code).has_solution:
        return solution
    return _read(built, solver, Status.OPTIMAL, solution.bound_usd, solution.wall_s + wall)


def _read(
    built: BuiltModel,
    solver: cp_model.CpSolver,
    status: Status,
    bound: float | None,
    wall: float,
) -> SizingSolution:
    """The design of one plane in a solver's current solution."""
    p = built.problem
    v = built.v
    tiers = []
    for t in range(1, p.tiers + 1):
        opts = p.switch_options[t - 1]
        chosen = next(o for i, o in enumerate(opts) if solver.value(v.x[t, i]))
        tiers.append(
            TierSolution(
                level=t,
                switch_model=chosen.name,
                switches=solver.value(v.n[t]),
                downlinks=solver.value(v.d[t]),
                uplinks=solver.value(v.u[t]),
                fanout=solver.value(v.f[t]) if t < p.tiers else 0,
                parallel_links=solver.value(v.q[t]) if t < p.tiers else 0,
            )
        )
    capex_units, power_units = solver.value(built.capex_units), solver.value(built.power_units)
    a, b, _ = objective_coefficients(p)
    capex_usd = p.planes * units_to_usd(capex_units)
    power_w = p.planes * units_to_w(power_units)
    objective = objective_usd(p, capex_usd, power_w)
    if status is Status.OPTIMAL or bound is None:
        bound = objective
    return SizingSolution(
        status=status,
        planes=p.planes,
        tiers=p.tiers,
        objective_usd=objective,
        bound_usd=min(bound, objective),
        capex_usd=capex_usd,
        power_w=power_w,
        wall_s=wall,
        tier_solutions=tuple(tiers),
        pods=solver.value(v.pods) if p.tiers == 3 else 1,
        leaves_per_pod=solver.value(v.leaves_per_pod) if p.tiers == 3 else solver.value(v.n[1]),
        placement=next(pi for pi, y in v.placement.items() if solver.value(y)),
        plans=tuple(
            next(plan for g, plan in enumerate(cab.plans) if solver.value(v.plan[c, g]))
            for c, cab in enumerate(p.cabling)
        ),
        objective_units=a * capex_units + b * power_units,
    )
