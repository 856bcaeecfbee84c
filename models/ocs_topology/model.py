"""OCS topology engineering: the MILP formulations (PuLP with HiGHS) and ``build``.

The PuLP plumbing (names, statuses, a HiGHS adapter with a MIP start, ``run_milp``), the path
model (``Instance``, one family per ``add_*`` function, ``CONSTRAINTS``), the circulant model
for cyclic instances, and ``BuiltTopology``. Solving is ``models.ocs_topology.solver``.

The docstrings here say "module docstring" for the package docstring of ``models.ocs_topology``,
which holds the formulation, the bounds and the constructions in full.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pulp

from models.ocs_topology.data import (
    FULL_MODEL_MAX_TRANSIT,
    TopologyProblem,
    demand_matrix,
    is_cyclic,
    normalised_demand,
)
from models.ocs_topology.lp import Routing
from models.status import Status, status_of

# --- PuLP plumbing --------------------------------------------------------------------------------


def lp_name(family: str, *index: int) -> str:
    """A PuLP-safe name: the family with dots as underscores, then the indices."""
    return "_".join([family.replace(".", "_"), *(str(i) for i in index)])


class _HiGHSWithStart(pulp.HiGHS):  # type: ignore[misc]
    """PuLP's HiGHS adapter that passes HiGHS a (partial) MIP start before it runs."""

    def __init__(self, start: dict[pulp.LpVariable, float], **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.start = start

    def callSolver(self, lp: pulp.LpProblem) -> None:  # noqa: N802 (PuLP's name)
        if self.start:
            index = np.array([v.index for v in self.start], dtype=np.int32)
            value = np.array(list(self.start.values()), dtype=float)
            lp.solverModel.setSolution(len(index), index, value)
        super().callSolver(lp)


@dataclass(frozen=True)
class MilpOutcome:
    """What a MILP solve left: its status, its x (integer) and its proven bound on theta."""

    status: Status
    x: np.ndarray | None
    bound: float


def run_milp(
    model: pulp.LpProblem,
    read_x: Callable[[], np.ndarray],
    start: dict[pulp.LpVariable, float],
    time_limit_s: float,
    relative_gap: float,
) -> MilpOutcome:
    """Solve a max-theta MILP with PuLP's HiGHS adapter, a MIP start, a time limit and a gap."""
    solver = _HiGHSWithStart(
        start, msg=False, timeLimit=max(0.1, time_limit_s), gapRel=relative_gap
    )
    model.solve(solver)
    # PuLP reports a MILP stopped by its time limit with a solution as LpStatusOptimal; its
    # ``sol_status`` tells the two apart.
    status = status_of("pulp", model.sol_status)
    bound = -float(model.solverModel.getInfo().mip_dual_bound)  # HiGHS minimised -theta
    bound = bound if math.isfinite(bound) else math.inf
    return MilpOutcome(status, read_x() if status.has_solution else None, bound)


def _integer(value: float | None) -> int:
    return 0 if value is None else int(math.floor(value + 0.5))


# --- the path model (PuLP) ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Instance:
    """The problem as arrays."""

    problem: TopologyProblem
    demand: np.ndarray
    uplinks: np.ndarray

    @classmethod
    def of(cls, problem: TopologyProblem) -> Instance:
        """The arrays of a problem."""
        raw = demand_matrix(problem.blocks, problem.demand)
        u = np.asarray(problem.uplinks, dtype=np.int64)
        inj = problem.injection_gbps
        injection = problem.circuit_gbps * u.astype(float) if inj is None else np.asarray(inj)
        return cls(problem, normalised_demand(raw, injection), u)

    @property
    def n(self) -> int:
        """Blocks."""
        return self.problem.blocks

    @property
    def c(self) -> float:
        """Gb/s per circuit and direction."""
        return self.problem.circuit_gbps

    @property
    def spines(self) -> int:
        """S: spines a pair's circuits are spread over."""
        return self.problem.spines

    @property
    def cyclic(self) -> bool:
        """Equal uplinks and a circulant demand: the circulant model applies."""
        return len(set(self.problem.uplinks)) == 1 and is_cyclic(self.demand)

    @property
    def transit_columns(self) -> int:
        """Columns t[i,k,j] of the complete path model."""
        return int((self.demand > 0).sum()) * (self.n - 2) if self.problem.transit else 0


@dataclass(frozen=True)
class PathVars:
    """Variables of the path model, keyed by index tuples."""

    theta: pulp.LpVariable
    x: dict[tuple[int, int], pulp.LpVariable]
    direct: dict[tuple[int, int], pulp.LpVariable]
    transit: dict[tuple[int, int, int], pulp.LpVariable]


def add_variables(m: pulp.LpProblem, inst: Instance) -> PathVars:
    """Variables: theta >= 0; x[i,j] in 0..min(U_i, U_j), i < j; f, t >= 0 for pairs with demand."""
    n, u = inst.n, inst.uplinks
    pairs = [(int(i), int(j)) for i, j in zip(*np.nonzero(inst.demand > 0), strict=True)]
    theta = m.add_variable("theta", lowBound=0)
    x = {
        (i, j): m.add_variable(
            lp_name("x", i, j), lowBound=0, upBound=int(min(u[i], u[j])), cat=pulp.LpInteger
        )
        for i in range(n)
        for j in range(i + 1, n)
    }
    direct = {(i, j): m.add_variable(lp_name("f", i, j), lowBound=0) for i, j in pairs}
    transit = {
        (i, k, j): m.add_variable(lp_name("t", i, k, j), lowBound=0)
        for i, j in pairs
        for k in range(n)
        if inst.problem.transit and k not in (i, j)
    }
    m += theta  # objective: maximise theta
    return PathVars(theta, x, direct, transit)


def add_demand_coverage(m: pulp.LpProblem, inst: Instance, v: PathVars) -> None:
    """Each pair's demand, scaled by theta, is routed.  f[i,j] + sum_k t[i,k,j] >= theta D_ij."""
    paths: dict[tuple[int, int], list[pulp.LpVariable]] = {p: [f] for p, f in v.direct.items()}
    for (i, _, j), t in v.transit.items():
        paths[i, j].append(t)
    for (i, j), flows in paths.items():
        m += (
            pulp.lpSum(flows) >= float(inst.demand[i, j]) * v.theta,
            lp_name("demand.coverage", i, j),
        )


def add_edge_capacity(m: pulp.LpProblem, inst: Instance, v: PathVars) -> None:
    """Flow on a directed edge fits its circuits.

    f[a,b] + sum_j t[a,b,j] + sum_i t[i,a,b] <= c x[min(a,b), max(a,b)].
    """
    loads: dict[tuple[int, int], list[pulp.LpVariable]] = {}
    for (i, j), f in v.direct.items():
        loads.setdefault((i, j), []).append(f)
    for (i, k, j), t in v.transit.items():
        loads.setdefault((i, k), []).append(t)
        loads.setdefault((k, j), []).append(t)
    for (a, b), flows in sorted(loads.items()):
        x = v.x[min(a, b), max(a, b)]
        m += (pulp.lpSum(flows) <= inst.c * x, lp_name("edge.capacity", a, b))


def add_block_degree(m: pulp.LpProblem, inst: Instance, v: PathVars) -> None:
    """Circuits at a block fit its uplinks.  sum_j x[i,j] <= U_i."""
    n = inst.n
    for i in range(n):
        incident = [v.x[min(i, j), max(i, j)] for j in range(n) if j != i]
        m += (pulp.lpSum(incident) <= int(inst.uplinks[i]), lp_name("block.degree", i))


#: Constraint families of the path model, in the order they are added.
CONSTRAINTS: dict[str, Callable[[pulp.LpProblem, Instance, PathVars], None]] = {
    "demand.coverage": add_demand_coverage,
    "edge.capacity": add_edge_capacity,
    "block.degree": add_block_degree,
}


def build_path(inst: Instance) -> tuple[pulp.LpProblem, PathVars]:
    """The complete path MILP."""
    m = pulp.LpProblem("ocs_topology", pulp.LpMaximize)
    v = add_variables(m, inst)
    for add in CONSTRAINTS.values():
        add(m, inst, v)
    return m, v


def _path_start(
    v: PathVars, x: np.ndarray, routing: Routing | None
) -> dict[pulp.LpVariable, float]:
    """A complete MIP start: x and, when known, a routing (else theta = 0 and no flow).

    HiGHS completes a start with only x by an LP solved with simplex, which takes seconds at
    n = 24 and overruns the time limit; a complete feasible start is taken as it is.
    """
    start = {var: float(x[i, j]) for (i, j), var in v.x.items()}
    start[v.theta] = routing.theta if routing is not None else 0.0
    direct = routing.direct if routing is not None else {}
    transit = routing.transit if routing is not None else {}
    for pair, var in v.direct.items():
        start[var] = direct.get(pair, 0.0)
    for path, var in v.transit.items():
        start[var] = transit.get(path, 0.0)
    return start


def _path_x(n: int, v: PathVars) -> np.ndarray:
    x = np.zeros((n, n), dtype=np.int64)
    for (i, j), var in v.x.items():
        x[i, j] = x[j, i] = _integer(var.value())
    return x


# --- the circulant model (PuLP): cyclic instances -------------------------------------------------


@dataclass(frozen=True)
class CirculantVars:
    """Variables of the circulant model: per offset instead of per pair."""

    theta: pulp.LpVariable
    y: dict[int, pulp.LpVariable]
    """Circuits per pair at offset s = 1..n/2."""
    direct: dict[int, pulp.LpVariable]
    transit: dict[tuple[int, int], pulp.LpVariable]
    """(s, e): pair offset e, first hop at offset s, second at e - s (mod n)."""


def build_circulant(
    n: int, uplinks: int, g: np.ndarray, c: float, fixed: dict[int, int] | None = None
) -> tuple[pulp.LpProblem, CirculantVars]:
    """The path model restricted to circulant x (y per offset) and reduced by rotation.

    Data g_e = D_{0,e}; variables y_s (s = 1..n/2; fixed for an evaluation), f_e, t_{s,e}:
        circulant.demand    f_e + sum_s t_{s,e} >= theta g_e                              (g_e > 0)
        circulant.capacity  f_e + sum_{e'} t_{e,e'} + sum_s t_{s,s+e} <= c y_{min(e, n-e)}
        circulant.degree    sum_{s < n/2} 2 y_s + [n even] y_{n/2} <= U
    A path whose two hops share an offset loads that offset twice.
    """
    m = pulp.LpProblem("ocs_circulant", pulp.LpMaximize)
    theta = m.add_variable("theta", lowBound=0)
    y = {
        s: m.add_variable(
            lp_name("y", s),
            lowBound=0 if fixed is None else fixed.get(s, 0),
            upBound=uplinks if fixed is None else fixed.get(s, 0),
            cat=pulp.LpInteger if fixed is None else pulp.LpContinuous,
        )
        for s in range(1, n // 2 + 1)
    }
    offsets = [e for e in range(1, n) if g[e] > 0]
    direct = {e: m.add_variable(lp_name("f", e), lowBound=0) for e in offsets}
    transit = {
        (s, e): m.add_variable(lp_name("t", s, e), lowBound=0)
        for e in offsets
        for s in range(1, n)
        if s != e
    }
    m += theta
    v = CirculantVars(theta, y, direct, transit)
    add_circulant_demand(m, v, g)
    add_circulant_capacity(m, v, n, c)
    add_circulant_degree(m, v, n, uplinks)
    return m, v


def add_circulant_demand(m: pulp.LpProblem, v: CirculantVars, g: np.ndarray) -> None:
    """f_e + sum_s t_{s,e} >= theta g_e."""
    paths: dict[int, list[pulp.LpVariable]] = {e: [f] for e, f in v.direct.items()}
    for (_, e), t in v.transit.items():
        paths[e].append(t)
    for e, flows in paths.items():
        m += (pulp.lpSum(flows) >= float(g[e]) * v.theta, lp_name("circulant.demand", e))


def add_circulant_capacity(m: pulp.LpProblem, v: CirculantVars, n: int, c: float) -> None:
    """f_e + sum_{e'} t_{e,e'} + sum_s t_{s,s+e} <= c y_{min(e, n-e)}."""
    loads: dict[int, list[pulp.LpVariable]] = {e: [] for e in range(1, n)}
    for e, f in v.direct.items():
        loads[e].append(f)
    for (s, e), t in v.transit.items():
        loads[s].append(t)
        loads[(e - s) % n].append(t)
    for e, flows in loads.items():
        if flows:
            m += (pulp.lpSum(flows) <= c * v.y[min(e, n - e)], lp_name("circulant.capacity", e))


def add_circulant_degree(m: pulp.LpProblem, v: CirculantVars, n: int, uplinks: int) -> None:
    """sum_{s < n/2} 2 y_s + [n even] y_{n/2} <= U."""
    m += (
        pulp.lpSum((1 if 2 * s == n else 2) * y for s, y in v.y.items()) <= uplinks,
        "circulant_degree",
    )


def circulant_matrix(n: int, y: dict[int, int]) -> np.ndarray:
    """x_ij = y_{min(e, n-e)} with e = (j - i) mod n."""
    e = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
    values = np.array([0] + [y.get(s, 0) for s in range(1, n // 2 + 1)], dtype=np.int64)
    return values[np.minimum(e, n - e)]


def _circulant_y(n: int, v: CirculantVars) -> np.ndarray:
    return circulant_matrix(n, {s: _integer(var.value()) for s, var in v.y.items()})


# --- build ------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class BuiltTopology:
    """The models of a problem, built and not solved."""

    instance: Instance
    path: tuple[pulp.LpProblem, PathVars] | None
    """The complete path MILP, when within ``FULL_MODEL_MAX_TRANSIT``."""
    circulant: tuple[pulp.LpProblem, CirculantVars] | None
    """The circulant MILP, for cyclic instances."""

    @property
    def problem(self) -> TopologyProblem:
        """The problem built."""
        return self.instance.problem


def build(problem: TopologyProblem) -> BuiltTopology:
    """Build (not solve) the path MILP (when small enough) and the circulant MILP (if cyclic)."""
    inst = Instance.of(problem)
    if not problem.transit:
        return BuiltTopology(inst, None, None)
    path = build_path(inst) if inst.transit_columns <= FULL_MODEL_MAX_TRANSIT else None
    circulant = None
    if inst.cyclic:
        circulant = build_circulant(inst.n, int(inst.uplinks[0]), inst.demand[0], inst.c)
    return BuiltTopology(inst, path, circulant)
