r"""Rail-optimized sizing: the Clos model (``models.clos_sizing``) plus the rail rules.

A node has ``n`` GPUs, each with its own NIC; the rail of GPU g is r = g mod n. A *scalable
unit* (SU) is U consecutive nodes and owns n rail leaves: leaf (su, r) takes NIC r of each of the
SU's U nodes, so a leaf's GPU-facing ports are d[1] = U and same-rail traffic inside an SU turns
at one switch. The tiers above are the Clos's. The SU size U is a decision of the model.

A rail-only fabric (one Clos per rail, no tier joining the rails) is the same model with n = 1
over the E = gpus / R GPUs of one rail, its counts, cost and power multiplied by the ``copies``
(the R identical rails); see ``RailProblem.copies``. Its rail period R is the rank of a GPU in a
*rail group* of R consecutive GPUs: the rail of GPU g is g mod R. Rule for R (the adapter,
``planner.families.rail.sizing.rail_counts``, makes one problem per candidate and keeps the cheapest): R
is a multiple of the node's GPUs that divides the scale-up domain's GPUs (every domain holds
whole rail groups, hence every rail, so cross-rail traffic can cross the domain) and the GPU
count (every rail has gpus / R GPUs); R = n is always a candidate. In this model a rail-only
problem's "nodes" are its rail groups (N = gpus / R: each holds one GPU of the rail), U counts
rail groups, and R_n is the rail groups one rack holds (floor(nodes_per_rack n / R)); with
R = n they are nodes.

Data (beyond the Clos model's): n rails, N nodes, R_n nodes per rack, the copies c of the sized
fabric, and for every candidate U the class 0 (GPU to leaf) cabling plans priced on the rail
wiring's geometry (``SuCabling``: plan g assumes SU size U_g).

Variables: the Clos model's, with d[1] = U; s whole SUs (an integer variable), k SUs per pod.

Constraints (one family per ``add_*`` function; they replace ``clos.coverage``,
``layout.leaf_placement`` and the budgets of the Clos model, which assume contiguous leaves):
    rail.whole_units      n[1] = n s;  s d[1] >= N;  (s - 1) d[1] < N   (no SU wholly empty)
    rail.pod_units        T = 3: L = n k   (a pod holds whole SUs)
    rail.leaf_placement   sum_pi y[pi] = 1;  y[top_of_rack] => d[1] <= R_n
                          (a rail leaf serves d[1] different nodes: it stands in a rack only when
                          one rack holds them)
    rail.su_cabling       z[0,g] => d[1] = U_g   (the GPU links are priced on the geometry of
                          the SU size chosen)
    rail.budget           c p power <= cap;  c p capex <= cap

The objective, latency, hops, failure and oversubscription rules are the Clos model's: the
objective of one copy is the Clos objective (its class 0 term prices the plan of the chosen U),
and the whole fabric's is c times it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from models import clos_sizing as cs
from models.cabling import CablePlan, LengthTails
from models.scaling import usd_to_units, w_to_units
from models.status import Status

#: Constraint families of the Clos model the rail rules replace.
REPLACED = frozenset({"clos.coverage", "layout.leaf_placement", "budget.power", "budget.capex"})


@dataclass(frozen=True)
class SuCabling(cs.ClassCabling):
    """Class 0 cabling of a rail fabric: the plans of every candidate SU size, each on its tails.

    ``plans[g]`` assumes an SU of ``su_nodes[g]`` nodes and is priced on ``plan_tails[g]``, the
    rail wiring's GPU-to-leaf lengths at that SU size and the plan's leaf placement.
    """

    su_nodes: tuple[int, ...] = ()
    plan_tails: tuple[LengthTails, ...] = ()

    def tails_for(self, plan: CablePlan) -> LengthTails:
        """The tails the plan was made on (its SU size's), found by identity, then equality."""
        for g, q in enumerate(self.plans):
            if q is plan:
                return self.plan_tails[g]
        return self.plan_tails[self.plans.index(plan)]

    def tails_at(self, g: int) -> LengthTails:
        """The tails plan ``g`` was made on, by position (no search)."""
        return self.plan_tails[g]

    def su_of(self, plan: CablePlan) -> int:
        """The SU size a plan assumes."""
        for g, q in enumerate(self.plans):
            if q is plan:
                return self.su_nodes[g]
        return self.su_nodes[self.plans.index(plan)]


def su_cabling(per_su: dict[int, cs.ClassCabling]) -> SuCabling:
    """One class 0 cabling of every candidate SU size's plans (``per_su``: U -> its cabling)."""
    plans: list[CablePlan] = []
    sus: list[int] = []
    tails: list[LengthTails] = []
    for u, cab in sorted(per_su.items()):
        for plan in cab.plans:
            plans.append(plan)
            sus.append(u)
            tails.append(cab.tails_for(plan))
    first = next(iter(per_su.values()), None)
    return SuCabling(
        tails=dict(first.tails) if first is not None else {},
        plans=tuple(plans),
        su_nodes=tuple(sus),
        plan_tails=tuple(tails),
    )


@dataclass(frozen=True)
class RailProblem:
    """One rail structure: the Clos problem (class 0 cabling a ``SuCabling``) and the rail data."""

    clos: cs.SizingProblem
    rails: int
    """Rail leaves per SU, n (1 for one rail of a rail-only fabric)."""
    nodes: int
    """Nodes N whose NICs the leaves take (each node has one GPU on every rail); rail-only: the
    rail groups of R GPUs (each has one GPU on the rail)."""
    nodes_per_rack: int
    """Nodes one rack holds, R_n (rail-only: whole rail groups one rack holds, may be 0)."""
    copies: int = 1
    """Identical fabrics the sized one stands for (rail-only: the R rails)."""


@dataclass
class RailVars:
    """The rail model's own variables."""

    units: cp_model.IntVar
    """s: scalable units."""
    units_per_pod: cp_model.IntVar | None
    """k: SUs per pod (three tiers)."""


def add_variables(m: cp_model.CpModel, r: RailProblem, v: cs.ClosVars) -> RailVars:
    """S in [1, N] whole SUs; k in [1, ub(L) / n] SUs per pod with three tiers."""
    units = m.new_int_var(1, max(1, r.nodes), "rail_units")
    per_pod = None
    if r.clos.tiers == 3:
        ub = max(1, cs.var_upper_bound(v.leaves_per_pod) // r.rails)
        per_pod = m.new_int_var(1, ub, "rail_units_per_pod")
    return RailVars(units, per_pod)


def add_whole_units(m: cp_model.CpModel, r: RailProblem, v: cs.ClosVars, w: RailVars) -> None:
    """Leaves come in whole SUs of n rail leaves.  n[1] = n s;  s d[1] >= N;  (s - 1) d[1] < N."""
    m.add(v.n[1] == r.rails * w.units)
    covered = m.new_int_var(0, max(1, r.nodes) * cs.var_upper_bound(v.d[1]), "rail_covered")
    m.add_multiplication_equality(covered, [w.units, v.d[1]])
    m.add(covered >= r.nodes)
    m.add(covered - v.d[1] < r.nodes)


def add_pod_units(m: cp_model.CpModel, r: RailProblem, v: cs.ClosVars, w: RailVars) -> None:
    """With three tiers a pod holds whole SUs.  L = n k."""
    if w.units_per_pod is None:
        return
    m.add(v.leaves_per_pod == r.rails * w.units_per_pod)


def add_leaf_placement(m: cp_model.CpModel, r: RailProblem, v: cs.ClosVars, w: RailVars) -> None:
    """One leaf placement; a rail leaf stands in a rack only when the rack holds its d[1] nodes.

    sum_pi y[pi] = 1;  y[top_of_rack] => d[1] <= R_n.
    """
    m.add_exactly_one(v.placement.values())
    if cs.TOP_OF_RACK in v.placement:
        m.add(v.d[1] <= r.nodes_per_rack).only_enforce_if(v.placement[cs.TOP_OF_RACK])


def add_su_cabling(m: cp_model.CpModel, r: RailProblem, v: cs.ClosVars, w: RailVars) -> None:
    """The GPU links are priced on the chosen SU size's geometry.  z[0,g] => d[1] = U_g."""
    cab = r.clos.cabling[0]
    if not isinstance(cab, SuCabling):
        return
    for g, u in enumerate(cab.su_nodes):
        m.add(v.d[1] == u).only_enforce_if(v.plan[0, g])


def add_budget(
    m: cp_model.CpModel,
    r: RailProblem,
    capex: cp_model.LinearExpr,
    power: cp_model.LinearExpr,
) -> None:
    """Caps over every plane and every copy.  c p power <= cap_w;  c p capex <= cap_usd."""
    req = r.clos.requirements
    factor = r.copies * r.clos.planes
    if req.max_power_w is not None:
        m.add(factor * power <= w_to_units(req.max_power_w))
    if req.max_capex_usd is not None:
        m.add(factor * capex <= usd_to_units(req.max_capex_usd))


#: The rail rules, in the order they are added; each can be left out by name.
CONSTRAINTS: dict[str, Callable[[cp_model.CpModel, RailProblem, cs.ClosVars, RailVars], None]] = {
    "rail.whole_units": add_whole_units,
    "rail.pod_units": add_pod_units,
    "rail.leaf_placement": add_leaf_placement,
    "rail.su_cabling": add_su_cabling,
}


def build(r: RailProblem, leave_out: frozenset[str] = frozenset()) -> cs.BuiltModel:
    """Build (not solve) the Clos model of one rail structure with the rail rules added."""
    built = cs.build(r.clos, leave_out | REPLACED)
    w = add_variables(built.model, r, built.v)
    for family, add in CONSTRAINTS.items():
        if family not in leave_out:
            add(built.model, r, built.v, w)
    budgets = ("budget.power", "budget.capex")
    if not all(b in leave_out for b in budgets):
        kept = r.clos.requirements
        cut = replace(
            kept,
            max_power_w=None if "budget.power" in leave_out else kept.max_power_w,
            max_capex_usd=None if "budget.capex" in leave_out else kept.max_capex_usd,
        )
        add_budget(built.model, replace(r, clos=replace(r.clos, requirements=cut)), *_totals(built))
    families = tuple(f for f in built.families if f not in REPLACED) + tuple(
        f for f in (*CONSTRAINTS, *budgets) if f not in leave_out
    )
    return cs.BuiltModel(
        built.problem, built.model, built.v, built.capex_units, built.power_units, families
    )


def _totals(built: cs.BuiltModel) -> tuple[cp_model.LinearExpr, cp_model.LinearExpr]:
    return built.capex_units, built.power_units


@dataclass(frozen=True)
class RailSolution:
    """A rail structure's outcome: the Clos solution of one copy, and the SU size it chose."""

    solution: cs.SizingSolution
    """Figures of one copy (all planes)."""
    su_nodes: int
    """U, nodes per scalable unit (0 when no design)."""
    copies: int

    @property
    def status(self) -> Status:
        """The solve's status."""
        return self.solution.status

    def total(self, value: float | None) -> float | None:
        """A figure of one copy times the copies."""
        return None if value is None else value * self.copies


def solve(
    r: RailProblem, options: cs.SolveOptions | None = None, canonical_s: float = 5.0
) -> RailSolution:
    """Solve one rail structure, then pick the canonical design among its optimal ones."""
    options = options or cs.SolveOptions()
    built = build(r)
    sol = cs.solve(built, options)
    if sol.status is Status.OPTIMAL and canonical_s > 0:
        sol = cs.solve_canonical(built, sol, canonical_s)
    return RailSolution(sol, su_of(r, sol), r.copies)


def su_of(r: RailProblem, sol: cs.SizingSolution) -> int:
    """The SU size of a solution: its leaves' GPU-facing ports (0 without a design)."""
    if not sol.tier_solutions:
        return 0
    return sol.tier_solutions[0].downlinks
