"""OCS circuit assignment: the CP-SAT model and ``build``.

``BuildOptions``, the variables (``AssignmentVars``), one constraint family per ``add_*``
function (``CONSTRAINTS``), churn, objective and its floor, device symmetry breaking, the hint,
and ``BuiltAssignment``. Solving is ``models.ocs_assignment.solver``.

The docstrings here say "module docstring" for the package docstring of ``models.ocs_assignment``,
which holds the formulation, the constructions and the theory in full.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from models.ocs_assignment.constructions import starting_assignment, variable_bounds
from models.ocs_assignment.data import AssignmentProblem, Key, Pair, _degrees
from models.ocs_assignment.validation import check_problem

#: Largest weight of the symmetry-breaking order (B^t, B = largest domain size + 1): far below
#: CP-SAT's 2^62 so that sums of weighted terms never overflow.
MAX_SYMMETRY_WEIGHT = 2**40


@dataclass(frozen=True)
class BuildOptions:
    """Switchable model extras; neither changes the optimum."""

    symmetry_breaking: bool = True
    hint: bool = True


@dataclass
class AssignmentVars:
    """Decision variables keyed by (i, j, o)."""

    y: dict[Key, cp_model.IntVar]
    ub: dict[Key, int]
    """Upper bound of each y (its domain is [0, ub])."""
    by_pair: dict[Pair, list[cp_model.IntVar]]
    by_port: dict[tuple[int, int], list[cp_model.IntVar]]
    """(block, device) -> the y whose circuits use a port of that block on that device."""
    port_ub: Counter[tuple[int, int]]
    """(block, device) -> sum of the upper bounds of its y: the most ports they could use."""
    excess: dict[Key, cp_model.IntVar] = field(default_factory=dict)
    """e[i,j,o] >= y - y0 where y0 > 0 (min-churn only)."""


@dataclass
class BuiltAssignment:
    """A built, unsolved model; constraints may be added before ``solve``.

    Not an objective: ``floor`` bounds the objective set here.
    """

    problem: AssignmentProblem
    model: cp_model.CpModel
    v: AssignmentVars
    realised: cp_model.LinearExpr
    added: cp_model.LinearExpr
    families: tuple[str, ...]
    start: dict[Key, int] | None
    """The hinted start (None without a hint)."""
    floor: int | None
    """A value no solution's objective goes below (``objective_floor``); None: no objective."""


# --------------------------------------------------------------------------- model


def add_variables(m: cp_model.CpModel, p: AssignmentProblem) -> AssignmentVars:
    """y[i,j,o] in [0, min(x_ij, P[i,o], P[j,o])] for live pairs and OCS; none when the ub is 0."""
    y: dict[Key, cp_model.IntVar] = {}
    by_pair: dict[Pair, list[cp_model.IntVar]] = defaultdict(list)
    by_port: dict[tuple[int, int], list[cp_model.IntVar]] = defaultdict(list)
    port_ub: Counter[tuple[int, int]] = Counter()
    bounds = variable_bounds(p)
    for (i, j, o), ub in bounds.items():
        var = y[i, j, o] = m.new_int_var(0, ub, f"y[{i},{j},{o}]")
        by_pair[i, j].append(var)
        by_port[i, o].append(var)
        by_port[j, o].append(var)
        port_ub[i, o] += ub
        port_ub[j, o] += ub
    return AssignmentVars(y, bounds, dict(by_pair), dict(by_port), port_ub)


def add_realisation(m: cp_model.CpModel, p: AssignmentProblem, v: AssignmentVars) -> None:
    """Each pair gets its circuits.  exact: sum_o y[i,j,o] = x_ij; best effort: <= x_ij."""
    pair_ub: Counter[Pair] = Counter()
    for (i, j, _), ub in v.ub.items():
        pair_ub[i, j] += ub
    for pair, x in p.live_target().items():
        ys = v.by_pair.get(pair, [])
        if p.exact:
            if not ys:
                m.add_bool_or([])  # x_ij > 0 and no OCS joins i and j: infeasible
                continue
            m.add(cp_model.LinearExpr.sum(ys) == x)
        elif pair_ub[pair] > x:
            m.add(cp_model.LinearExpr.sum(ys) <= x)


def add_port_capacity(m: cp_model.CpModel, p: AssignmentProblem, v: AssignmentVars) -> None:
    """Each OCS port carries one circuit.  forall b, o: sum_{j != b} y[{b,j},o] <= P[b,o]."""
    for (b, o), ys in v.by_port.items():
        if v.port_ub[b, o] > p.ports[b][o]:
            m.add(cp_model.LinearExpr.sum(ys) <= p.ports[b][o])


def add_keep_surviving(m: cp_model.CpModel, p: AssignmentProblem, v: AssignmentVars) -> None:
    """Live current circuits stay.  y[i,j,o] >= y0[i,j,o] on live OCS and pairs (if asked)."""
    if not p.keep_surviving:
        return
    for i, j, o, y0 in p.current:
        if not p.is_live(i, j, o):
            continue
        if v.ub.get((i, j, o), 0) >= y0:
            m.add(v.y[i, j, o] >= y0)
        else:
            m.add_bool_or([])  # the target or the cabling no longer allows this circuit


#: Constraint families, in the order they are added.
CONSTRAINTS: dict[str, Callable[[cp_model.CpModel, AssignmentProblem, AssignmentVars], None]] = {
    "pair.realisation": add_realisation,
    "port.capacity": add_port_capacity,
    "circuit.keep": add_keep_surviving,
}


def churn_terms(
    m: cp_model.CpModel, p: AssignmentProblem, v: AssignmentVars
) -> list[cp_model.IntVar]:
    """The terms of A = sum max(0, y - y0): y where y0 = 0, else e >= y - y0 (when ub(y) > y0)."""
    current = {(i, j, o): y0 for i, j, o, y0 in p.current}
    terms = []
    for k, var in v.y.items():
        y0 = current.get(k, 0)
        if y0 == 0:
            terms.append(var)
        elif v.ub[k] > y0:
            e = m.new_int_var(0, v.ub[k] - y0, f"e[{k[0]},{k[1]},{k[2]}]")
            m.add(e >= var - y0)
            v.excess[k] = e
            terms.append(e)
    return terms


def set_objective(
    m: cp_model.CpModel, p: AssignmentProblem, v: AssignmentVars, added: list[cp_model.IntVar]
) -> None:
    """Exact: min A with min_churn, else none. Best effort: min -R, or min A - (X + 1) R.

    Written straight into the proto: the expression API costs ~5 us a term, seconds at 100k.
    """
    if p.exact and not p.min_churn:
        return
    coefficients: Counter[int] = Counter()
    if not p.exact:
        weight = sum(p.live_target().values()) + 1 if p.min_churn else 1
        for var in v.y.values():
            coefficients[var.index] -= weight
    if p.min_churn:
        for var in added:
            coefficients[var.index] += 1
    m.clear_objective()
    objective = m.proto.objective
    objective.vars.extend(coefficients.keys())
    objective.coeffs.extend(coefficients.values())


def objective_floor(p: AssignmentProblem, v: AssignmentVars) -> int | None:
    """A bound on the objective from an upper bound R* on R and A >= max(0, R - S_v).

    R* = min(X', X - L): X' = sum over live pairs of min(x_ij, sum_o ub(y[i,j,o])); X = sum of
    x on live pairs; L = max(max_b d_b, ceil(sum_b d_b / 2)) circuits must go unrealised, where
    d_b = max(0, deg_b - live ports of b) (each lost circuit frees one end at each of its two
    blocks). S_v = sum of y0 where a variable exists: A >= sum (y - y0) there = R - S_v. The
    objectives (A, -R, A - W R with W > 1) are smallest at R = R*. A start that reaches the
    floor is optimal, which settles every failure the survivors and spare ports can absorb.
    None: the model has no objective.
    """
    if p.exact and not p.min_churn:
        return None
    target = p.live_target()
    pair_ub: Counter[Pair] = Counter()
    for (i, j, _), ub in v.ub.items():
        pair_ub[i, j] += ub
    degree = _degrees((i, j, x) for (i, j), x in target.items())
    live = p.live_devices()
    deficit = [max(0, d - sum(p.ports[b][o] for o in live)) for b, d in degree.items()]
    unrealised = max(max(deficit, default=0), (sum(deficit) + 1) // 2)
    total = sum(target.values())
    most = min(sum(min(x, pair_ub[pair]) for pair, x in target.items()), total - unrealised)
    kept = sum(y0 for i, j, o, y0 in p.current if (i, j, o) in v.ub)
    added = max(0, most - kept)
    if p.exact:
        return added
    if not p.min_churn:
        return -most
    return added - (total + 1) * most


def device_symmetry(p: AssignmentProblem) -> tuple[list[list[int]], list[Pair]]:
    """Classes of interchangeable live OCS (size >= 2) and the pairs that order them.

    Devices are interchangeable when their port columns are equal and y0 plays no part. The
    pairs are the first live pairs (sorted) while B^t <= MAX_SYMMETRY_WEIGHT.
    """
    if p.current and (p.min_churn or p.keep_surviving):
        return [], []
    classes: dict[tuple[int, ...], list[int]] = defaultdict(list)
    for o in p.live_devices():
        classes[tuple(p.ports[b][o] for b in range(p.blocks))].append(o)
    groups = [g for g in classes.values() if len(g) > 1]
    target = sorted(p.live_target().items())
    if not groups or not target:
        return [], []
    base = 1 + max(x for _, x in target)
    pairs: list[Pair] = []
    while len(pairs) < len(target) and base ** (len(pairs) + 1) <= MAX_SYMMETRY_WEIGHT:
        pairs.append(target[len(pairs)][0])
    return groups, pairs


def add_device_symmetry_breaking(
    m: cp_model.CpModel, p: AssignmentProblem, v: AssignmentVars
) -> None:
    """Order identical OCS.  sum_r B^(t-1-r) y[e_r,o] >= the same for the next o of the class.

    Valid: permuting identical devices maps solutions to solutions with the same objective, and
    sorting a class by its (lexicographic) prefix vectors gives one that satisfies the order.
    """
    groups, pairs = device_symmetry(p)
    if not pairs:
        return
    base = 1 + max(x for pair, x in p.live_target().items() if pair in set(pairs))
    weights = [base ** (len(pairs) - 1 - r) for r in range(len(pairs))]

    def key(o: int) -> cp_model.LinearExpr:
        return cp_model.LinearExpr.weighted_sum(
            [v.y.get((i, j, o), 0) for i, j in pairs],  # type: ignore[misc]
            weights,
        )

    for group in groups:
        for a, b in zip(group, group[1:], strict=False):
            m.add(key(a) >= key(b))


def symmetric_start(p: AssignmentProblem, start: Mapping[Key, int]) -> dict[Key, int]:
    """Relabel identical OCS in a start so that it meets the symmetry-breaking order."""
    groups, pairs = device_symmetry(p)
    relabel = {}
    for group in groups:
        ranked = sorted(group, key=lambda o: [-start.get((i, j, o), 0) for i, j in pairs])
        relabel.update(dict(zip(ranked, group, strict=True)))
    return {(i, j, relabel.get(o, o)): val for (i, j, o), val in start.items()}


def hint_start(
    m: cp_model.CpModel, p: AssignmentProblem, v: AssignmentVars, start: Mapping[Key, int]
) -> None:
    """Hint every variable: y from the start, e = max(0, y - y0)."""
    current = {(i, j, o): y0 for i, j, o, y0 in p.current}
    hint = m.proto.solution_hint  # filled in bulk: add_hint costs ~10 us a call
    hint.vars.extend([var.index for var in v.y.values()])
    hint.values.extend([start.get(k, 0) for k in v.y])
    hint.vars.extend([e.index for e in v.excess.values()])
    hint.values.extend([max(0, start.get(k, 0) - current[k]) for k in v.excess])


def build(problem: AssignmentProblem, options: BuildOptions = BuildOptions()) -> BuiltAssignment:
    """Build (not solve) the CP-SAT model; raises ValueError on bad data (``check_problem``)."""
    issues = check_problem(problem)
    if issues:
        raise ValueError("; ".join(issues))
    m = cp_model.CpModel()
    v = add_variables(m, problem)
    for add in CONSTRAINTS.values():
        add(m, problem, v)
    families = list(CONSTRAINTS)
    if options.symmetry_breaking:
        add_device_symmetry_breaking(m, problem, v)
        families.append("device.symmetry")
    added = churn_terms(m, problem, v)
    set_objective(m, problem, v, added)
    realised = cp_model.LinearExpr.sum(list(v.y.values()))
    start = None
    if options.hint:
        start = starting_assignment(problem, v.ub)
        if options.symmetry_breaking:
            start = symmetric_start(problem, start)
        hint_start(m, problem, v, start)
    return BuiltAssignment(
        problem,
        m,
        v,
        realised,
        cp_model.LinearExpr.sum(added),
        tuple(families),
        start,
        objective_floor(problem, v),
    )
