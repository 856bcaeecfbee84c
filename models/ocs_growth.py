r"""OCS fabric growth: add aggregation blocks, re-engineer the mesh, reconfigure few circuits.

A direct-connect fabric grows in phases (Jupiter's OCS layer went 1/8, 1/4, 1/2, full). Blocks
b = 0..k-1 are in service; blocks k..n-1 are added. Block b's uplinks are cabled once, P[b,o]
ports on OCS o, and that fibre never moves at an existing block: the new cabling P' keeps the old
rows (P'[b,o] = P[b,o] for b < k, o < m; P'[b,o] = 0 on devices added, o >= m). Blocks keep their
indices, so old pairs are (i, j) with i < j < k. Counts are circuits throughout.

Uniform mesh (``uniform_mesh``; ``models.ocs_topology.uniform_mesh`` puts q + 2 circuits on some
pairs for n odd and an odd remainder, e.g. n = 9, U = 5, so it is not reused). Layers: every
layer is a simple graph (0 or 1 circuit per pair) and adds to x. While every block has at least
n - 1 free ports the layer is K_n (in bulk: q = floor(min_b U_b / (n - 1)) layers). Then each
layer takes capacities c_b = min(free_b, n - 1), lowers the largest by one if sum_b c_b is odd
(so some edge always fits), and is built by Havel-Hakimi (the block with the most capacity joins
the blocks with the most capacity after it, until none is left), until fewer than two blocks
have a free port. Equal ports U, r = U - q (n - 1): the last layer asks (r, .., r) (n r even) or
(r, .., r, r - 1) (n r odd), both graphic (circulant offsets 1 .. floor(r/2), plus the matching
(a, a + n/2) or alternate edges of the Hamiltonian cycle of offset (n - 1)/2), and Havel-Hakimi
realises any graphic sequence: every pair gets q or q + 1 and every block uses all U ports but
one block when n U is odd. Unequal ports: every block but at most one ends with no free port.

Next topology (``build_next_topology``, CP-SAT). Let M = uniform_mesh(U) for the n blocks,
lo / hi its smallest / largest pair count, d_b = sum_j M_bj, x the k x k previous topology.
Variables, i < j < n:  x'_ij in [lo, hi]; for old pairs c_ij >= |x'_ij - x_ij| and
kept_ij in [0, x_ij], kept_ij <= x'_ij.
    block.degree     forall b:         sum_{j != b} x'_bj = d_b     (as even as the mesh)
    pair.change      forall i<j<k:     c_ij >= x'_ij - x_ij,  c_ij >= x_ij - x'_ij
    pair.kept        forall i<j<k:     kept_ij <= x'_ij
    objective        min  W sum_{i<j<k} c_ij - sum_{i<j<k} kept_ij,  W = sum_{i<j<k} x_ij + 1
Since 0 <= sum kept <= W - 1 the weighted objective is lexicographic: fewest changed circuits
between old blocks, then the most old circuits kept, which among those minimises the whole logical
change L = sum_{i<j<n} |x'_ij - x_ij| (x = 0 on pairs with a new block) = T + X - 2 sum kept,
T = sum_b d_b / 2 and X = sum x both fixed. M is feasible (the hint), so the model always is. It
is a degree-constrained subgraph (b-matching) problem on the non-bipartite K_n, which is not a
plain min-cost flow (odd cycles), hence CP-SAT; at n = 16 it has 120 pair variables.

Physical growth (``grow``): ``models.ocs_assignment`` with the previous assignment as y0
(``current``), the new cabling and x', exact, ``min_churn``: minimise A = sum max(0, y - y0);
churn = removed + added = sum_{ijo} |y - y0| = S0 - R + 2A. Lower bound: for every pair,
sum_o |y_ijo - y0_ijo| >= |x'_ij - x0_ij| with x0_ij = sum_o y0_ijo, so
churn >= L0 = sum_{i<j} |x'_ij - x0_ij| (``changed_circuits_lower_bound``), i.e.
A >= sum_{i<j} max(0, x'_ij - x0_ij): this pair floor is handed to the solver, which stops as soon
as a solution reaches it (a start that keeps min(x', x0) on every pair and places the rest without
moving a kept circuit is optimal on the spot).

Per device group (``by_device_group``, for speed). Devices are sorted by their port column
(identical devices side by side) and bisected down to leaves of at most ``leaf_devices``. At each
split the two halves act as two super-devices (ports summed, y0 summed per half) and the same
min-churn model splits x' between them; each half then gets its share and its own y0, down to
the leaves, which are solved on their devices. The result is OPTIMAL when its added circuits
reach the global pair floor (a proof: nothing can do better), else FEASIBLE; a piece without a
solution sends the step to the exact model. At 8 -> 16 blocks on 256 OCS (8 ports per block on
each) the exact model does not fit a plan (its constructive start alone ran over 10 minutes;
without it, 60 s of search ended 29% above the floor), the grouped solve reaches the floor in
about 4 s.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from ortools.sat.python import cp_model

from models import ocs_assignment as oa
from models.status import Status, status_of

#: Time limit of the topology solve; n = 16 proves optimality in milliseconds.
TOPOLOGY_TIME_LIMIT_S = 10.0
#: Time limit of the physical (assignment) solve, all pieces together.
GROW_TIME_LIMIT_S = 30.0
#: Most devices in a leaf of the grouped solve (``by_device_group``); 8 solved 256 devices
#: (16 blocks) in about 4 s, reaching the pair floor.
LEAF_DEVICES = 8
#: Model extras of every assignment solve (symmetry breaking is inert under min churn).
DEFAULT_BUILD = oa.BuildOptions()

IntMatrix = npt.NDArray[np.int64]
Pair = tuple[int, int]


# --------------------------------------------------------------------------- data checks


def as_topology(x: npt.ArrayLike, name: str = "topology") -> IntMatrix:
    """The topology as a square, symmetric, zero-diagonal, non-negative int matrix; else ValueError."""
    a = np.asarray(x)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {a.shape}")
    if a.size and not np.array_equal(a, np.round(a)):
        raise ValueError(f"{name} must hold integers")
    m = a.astype(np.int64)
    if (m < 0).any() or (np.diag(m) != 0).any() or not np.array_equal(m, m.T):
        raise ValueError(f"{name} must be symmetric, non-negative, with a zero diagonal")
    return m


def as_ports(ports: npt.ArrayLike, name: str = "ports") -> IntMatrix:
    """P as a non-negative integer matrix (blocks x devices); else ValueError."""
    a = np.asarray(ports)
    if a.ndim != 2 or (a.size and not np.array_equal(a, np.round(a))) or (a < 0).any():
        raise ValueError(f"{name} must be a non-negative integer matrix (blocks x devices)")
    return a.astype(np.int64)


# --------------------------------------------------------------------------- uniform mesh


def _layer(capacity: IntMatrix) -> list[Pair]:
    """A simple graph with degrees <= capacity (sum made even), by Havel-Hakimi."""
    n = len(capacity)
    left = np.minimum(capacity, max(n - 1, 0)).astype(np.int64)
    if left.sum() % 2:
        left[int(np.flatnonzero(left == left.max())[-1])] -= 1
    done = np.zeros(n, dtype=bool)
    edges: list[Pair] = []
    while True:
        order = sorted((b for b in range(n) if not done[b] and left[b] > 0), key=lambda b: -left[b])
        if len(order) < 2:
            return edges
        v, rest = order[0], order[1:]
        done[v] = True
        for w in rest[: left[v]]:
            edges.append((min(v, w), max(v, w)))
            left[w] -= 1
        left[v] = 0


def uniform_mesh(ports: Sequence[int]) -> IntMatrix:
    """The most even mesh within the blocks' uplinks (see the module docstring).

    Symmetric, zero diagonal, row b sums to at most ports[b]; equal ports U give every pair
    floor(U / (n-1)) or one more and use every port but one at one block when n U is odd.
    """
    u = np.asarray(ports, dtype=np.int64)
    n = len(u)
    if (u < 0).any():
        raise ValueError("ports must be non-negative")
    x = np.zeros((n, n), dtype=np.int64)
    if n < 2:
        return x
    q = int(u.min()) // (n - 1)
    x += q * (1 - np.eye(n, dtype=np.int64))
    free = u - q * (n - 1)
    while (free > 0).sum() >= 2:
        for i, j in _layer(free):
            x[i, j] += 1
            x[j, i] += 1
            free[i] -= 1
            free[j] -= 1
    return x


def changed_circuits_lower_bound(x_old: npt.ArrayLike, x_new: npt.ArrayLike) -> int:
    """L = sum_{i<j} |x_new_ij - x_old_ij|, x_old padded with zeros (new blocks).

    No physical assignment changes fewer circuits: a pair's circuits summed over the devices
    change by at least the change of their total.
    """
    new = as_topology(x_new, "x_new")
    old = as_topology(x_old, "x_old")
    k = len(old)
    if k > len(new):
        raise ValueError(f"x_old has {k} blocks, x_new only {len(new)}")
    padded = np.zeros_like(new)
    padded[:k, :k] = old
    return int(np.abs(new - padded).sum()) // 2


# --------------------------------------------------------------------------- next topology


@dataclass(frozen=True)
class TopologyVars:
    """x'[i,j] for every pair, and c[i,j] (change) and kept[i,j] for old pairs."""

    x: dict[Pair, cp_model.IntVar]
    change: dict[Pair, cp_model.IntVar]
    kept: dict[Pair, cp_model.IntVar]


@dataclass(frozen=True)
class BuiltTopology:
    """A built, unsolved next-topology model."""

    model: cp_model.CpModel
    v: TopologyVars
    previous: IntMatrix
    mesh: IntMatrix
    """uniform_mesh(ports): its pair range and row sums are the model's bounds; the hint."""
    families: tuple[str, ...]


@dataclass(frozen=True)
class NextTopology:
    """Outcome of a next-topology solve; counts are circuits."""

    status: Status
    x: IntMatrix
    """n x n; all zeros without a solution."""
    old_changed: int
    """sum_{i<j<k} |x'_ij - x_ij| (the primary objective); -1 without a solution."""
    logical_changed: int
    """sum_{i<j<n} |x'_ij - x_ij| with x = 0 on new pairs; -1 without a solution."""
    wall_s: float


def add_topology_variables(
    m: cp_model.CpModel, previous: IntMatrix, mesh: IntMatrix
) -> TopologyVars:
    """x'[i,j] in [lo, hi] (the mesh's pair range); c in [0, |range|]; kept in [0, x_ij]."""
    n, k = len(mesh), len(previous)
    off = mesh[~np.eye(n, dtype=bool)]
    lo, hi = int(off.min()), int(off.max())
    x = {(i, j): m.new_int_var(lo, hi, f"x[{i},{j}]") for i in range(n) for j in range(i + 1, n)}
    change, kept = {}, {}
    for i in range(k):
        for j in range(i + 1, k):
            old = int(previous[i, j])
            most = max(abs(hi - old), abs(lo - old))
            change[i, j] = m.new_int_var(0, most, f"c[{i},{j}]")
            kept[i, j] = m.new_int_var(0, min(old, hi), f"kept[{i},{j}]")
    return TopologyVars(x, change, kept)


def add_block_degree(
    m: cp_model.CpModel, v: TopologyVars, previous: IntMatrix, mesh: IntMatrix
) -> None:
    """Row sums of the mesh.  forall b: sum_{j != b} x'[b,j] = d_b."""
    n = len(mesh)
    for b in range(n):
        row = [v.x[min(b, j), max(b, j)] for j in range(n) if j != b]
        if row:
            m.add(cp_model.LinearExpr.sum(row) == int(mesh[b].sum()))


def add_pair_change(
    m: cp_model.CpModel, v: TopologyVars, previous: IntMatrix, mesh: IntMatrix
) -> None:
    """Changed circuits of an old pair.  c[i,j] >= x'[i,j] - x_ij and c[i,j] >= x_ij - x'[i,j]."""
    for (i, j), c in v.change.items():
        m.add(c >= v.x[i, j] - int(previous[i, j]))
        m.add(c >= int(previous[i, j]) - v.x[i, j])


def add_pair_kept(
    m: cp_model.CpModel, v: TopologyVars, previous: IntMatrix, mesh: IntMatrix
) -> None:
    """Old circuits kept on an old pair.  kept[i,j] <= x'[i,j] (and <= x_ij by its domain)."""
    for (i, j), kept in v.kept.items():
        m.add(kept <= v.x[i, j])


#: Constraint families of the next-topology model, in the order they are added.
TOPOLOGY_CONSTRAINTS: dict[
    str, Callable[[cp_model.CpModel, TopologyVars, IntMatrix, IntMatrix], None]
] = {
    "block.degree": add_block_degree,
    "pair.change": add_pair_change,
    "pair.kept": add_pair_kept,
}


def set_change_objective(m: cp_model.CpModel, v: TopologyVars, previous: IntMatrix) -> None:
    """Minimise W sum c - sum kept, W = sum of old-pair x + 1: fewest changes, then most kept."""
    weight = int(np.triu(previous, 1).sum()) + 1
    m.minimize(
        weight * cp_model.LinearExpr.sum(list(v.change.values()))
        - cp_model.LinearExpr.sum(list(v.kept.values()))
    )


def hint_mesh(m: cp_model.CpModel, v: TopologyVars, previous: IntMatrix, mesh: IntMatrix) -> None:
    """Hint x' = the uniform mesh (feasible), with its c and kept."""
    for (i, j), var in v.x.items():
        m.add_hint(var, int(mesh[i, j]))
    for (i, j), c in v.change.items():
        m.add_hint(c, abs(int(mesh[i, j]) - int(previous[i, j])))
        m.add_hint(v.kept[i, j], min(int(mesh[i, j]), int(previous[i, j])))


def build_next_topology(
    previous: npt.ArrayLike, ports: Sequence[int], hint: bool = True
) -> BuiltTopology:
    """Build (not solve) the next-topology model; ValueError on bad data."""
    old = as_topology(previous, "previous")
    if len(old) > len(ports):
        raise ValueError(f"previous has {len(old)} blocks, ports only {len(ports)}")
    mesh = uniform_mesh(ports)
    m = cp_model.CpModel()
    if len(mesh) < 2:
        return BuiltTopology(m, TopologyVars({}, {}, {}), old, mesh, ())
    v = add_topology_variables(m, old, mesh)
    for add in TOPOLOGY_CONSTRAINTS.values():
        add(m, v, old, mesh)
    set_change_objective(m, v, old)
    if hint:
        hint_mesh(m, v, old, mesh)
    return BuiltTopology(m, v, old, mesh, tuple(TOPOLOGY_CONSTRAINTS))


def solve_next_topology(
    built: BuiltTopology, time_limit_s: float = TOPOLOGY_TIME_LIMIT_S, workers: int = 1
) -> NextTopology:
    """Solve a built next-topology model and read x' out of it.

    One worker by default: the same x' on every run (ties between optima are common).
    """
    begin = time.perf_counter()
    n = len(built.mesh)
    if not built.v.x:
        return NextTopology(Status.OPTIMAL, built.mesh, 0, 0, 0.0)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit_s
    solver.parameters.num_workers = workers
    status = status_of("cp_sat", solver.solve(built.model))
    wall_s = time.perf_counter() - begin
    if not status.has_solution:
        return NextTopology(status, np.zeros((n, n), dtype=np.int64), -1, -1, wall_s)
    x = np.zeros((n, n), dtype=np.int64)
    for (i, j), var in built.v.x.items():
        x[i, j] = x[j, i] = solver.value(var)
    k = len(built.previous)
    old = int(np.abs(x[:k, :k] - built.previous).sum()) // 2
    return NextTopology(status, x, old, changed_circuits_lower_bound(built.previous, x), wall_s)


def next_topology(previous: npt.ArrayLike, ports: Sequence[int]) -> IntMatrix:
    """The as-even-as-the-mesh topology for the grown block set that changes the fewest old circuits.

    ``previous`` is k x k, ``ports`` has n >= k entries; see the module docstring. RuntimeError
    if the solver stops without a solution (it never should: the mesh is one).
    """
    result = solve_next_topology(build_next_topology(previous, ports))
    if not result.status.has_solution:
        raise RuntimeError(f"next topology: {result.status}")
    return result.x


# --------------------------------------------------------------------------- physical growth


@dataclass(frozen=True)
class Growth:
    """Outcome of one growth step; counts are circuits."""

    status: Status
    assignment: oa.Assignment
    circuits_changed: int
    """removed + added at the physical level (sum |y - y0|); -1 without a solution."""
    logical_changed: int
    """L0 = sum_{i<j} |x'_ij - x0_ij|, x0 the previous assignment's pair totals (0 for new pairs):
    the lower bound circuits_changed never goes below."""
    wall_s: float


def pair_totals(circuits: Sequence[tuple[int, int, int, int]], blocks: int) -> IntMatrix:
    """x0_ij = sum_o y_ijo of an assignment's circuits, as a symmetric blocks x blocks matrix."""
    x = np.zeros((blocks, blocks), dtype=np.int64)
    for i, j, _, y in circuits:
        x[i, j] += y
        x[j, i] += y
    return x


def check_growth(
    previous: oa.Assignment, ports_old: IntMatrix, ports_new: IntMatrix, x_new: IntMatrix
) -> list[str]:
    """Everything wrong with a growth step (empty when it can be built).

    The old blocks' fibre never moves: P'[b, o] = P[b, o] for b < k, o < m, and P'[b, o] = 0
    for b < k on the devices added (o >= m).
    """
    (k, m), (n, m_new) = ports_old.shape, ports_new.shape
    issues = []
    if n < k or m_new < m:
        issues.append(f"ports shrink from {k} x {m} to {n} x {m_new}: blocks and devices only grow")
    elif not (np.array_equal(ports_new[:k, :m], ports_old) and not ports_new[:k, m:].any()):
        moved = sorted({int(b) for b in np.flatnonzero((ports_new[:k, :m] != ports_old).any(1))})
        moved += [int(b) for b in np.flatnonzero(ports_new[:k, m:].any(1)) if b not in moved]
        issues.append(f"the fibre of existing block(s) {moved} would move: their ports must stay")
    if len(x_new) != n:
        issues.append(f"x_new is {len(x_new)} x {len(x_new)}, the ports have {n} blocks")
    used = np.zeros((k, m), dtype=np.int64)
    for i, j, o, y in previous.circuits:
        if not (0 <= i < j < k and 0 <= o < m):
            issues.append(f"previous circuit ({i}, {j}, {o}) is outside {k} blocks x {m} devices")
            continue
        used[i, o] += y
        used[j, o] += y
    if (used > ports_old).any():
        issues.append("the previous assignment uses more ports than the old cabling has")
    return issues


def growth_problem(
    previous: oa.Assignment, ports_new: IntMatrix, x_new: IntMatrix
) -> oa.AssignmentProblem:
    """The min-churn assignment problem: P', x', y0 = the previous circuits, exact."""
    n, m = ports_new.shape
    return oa.AssignmentProblem(
        blocks=n,
        devices=m,
        ports=tuple(tuple(int(p) for p in row) for row in ports_new),
        circuits=oa.circuits_from_matrix(x_new.tolist()),
        current=tuple(previous.circuits),
        min_churn=True,
    )


def pair_floor(x0: IntMatrix, x_new: IntMatrix) -> int:
    """A >= sum_{i<j} max(0, x'_ij - x0_ij): circuits a pair gains are added somewhere."""
    return int(np.maximum(0, np.triu(x_new - x0, 1)).sum())


def _solve_exact(
    problem: oa.AssignmentProblem,
    x0: IntMatrix,
    x_new: IntMatrix,
    time_limit_s: float,
    workers: int,
    options: oa.BuildOptions,
) -> oa.Assignment:
    """Build and solve the min-churn model with the pair floor as the stopping floor."""
    built = oa.build(problem, options)
    floor = max(built.floor or 0, pair_floor(x0, x_new))
    return oa.solve(replace(built, floor=floor), time_limit_s=time_limit_s, workers=workers)


Circuit = tuple[int, int, int, int]


def _piece(
    devices: Sequence[Sequence[int]],
    ports_new: IntMatrix,
    x_new: IntMatrix,
    current: Sequence[Circuit],
    deadline: float,
    workers: int,
    options: oa.BuildOptions,
) -> tuple[Status, list[Circuit]]:
    """Min-churn split of x' over groups of devices (each a super-device: ports, y0 summed).

    Returns the status and (i, j, group, y) circuits; ``current`` is on global device indices.
    """
    group = {o: g for g, members in enumerate(devices) for o in members}
    summed: defaultdict[tuple[int, int, int], int] = defaultdict(int)
    for i, j, o, y in current:
        summed[i, j, group[o]] += y
    ports = np.stack([ports_new[:, list(members)].sum(axis=1) for members in devices], axis=1)
    previous = oa.Assignment(
        Status.FEASIBLE, tuple((*k, y) for k, y in sorted(summed.items())), 0, 0, 0, 0, 0.0
    )
    n = len(x_new)
    result = _solve_exact(
        growth_problem(previous, ports, x_new),
        pair_totals(previous.circuits, n),
        x_new,
        max(0.0, deadline - time.perf_counter()),
        workers,
        options,
    )
    return result.status, list(result.circuits)


def grow_by_device_group(
    previous_circuits: Sequence[Circuit],
    ports_new: IntMatrix,
    x_new: IntMatrix,
    devices: Sequence[int],
    deadline: float,
    leaf_devices: int,
    workers: int = 2,
    options: oa.BuildOptions = DEFAULT_BUILD,
) -> tuple[Status, list[Circuit]]:
    """Realise x_new on ``devices`` by bisection (module docstring); circuits on global indices.

    The status is that of the first piece without a solution, else FEASIBLE (the caller proves
    optimality against the pair floor).
    """
    if len(devices) <= leaf_devices:
        status, circuits = _piece(
            [[o] for o in devices], ports_new, x_new, previous_circuits, deadline, workers, options
        )
        return status, [(i, j, devices[g], y) for i, j, g, y in circuits]
    half = len(devices) // 2
    halves = (devices[:half], devices[half:])
    status, split = _piece(halves, ports_new, x_new, previous_circuits, deadline, workers, options)
    if not status.has_solution:
        return status, []
    n = len(x_new)
    out: list[Circuit] = []
    for g, members in enumerate(halves):
        inside = set(members)
        share = pair_totals([c for c in split if c[2] == g], n)
        current = [c for c in previous_circuits if c[2] in inside]
        status, circuits = grow_by_device_group(
            current, ports_new, share, members, deadline, leaf_devices, workers, options
        )
        if not status.has_solution:
            return status, []
        out += circuits
    return Status.FEASIBLE, out


def device_order(ports: IntMatrix) -> list[int]:
    """Devices sorted by their port column, identical devices side by side (stable)."""
    return sorted(range(ports.shape[1]), key=lambda o: tuple(ports[:, o].tolist()))


def grow(
    previous_assignment: oa.Assignment,
    ports_new: npt.ArrayLike,
    x_new: npt.ArrayLike,
    *,
    ports_old: npt.ArrayLike,
    time_limit_s: float = GROW_TIME_LIMIT_S,
    workers: int = 2,
    by_device_group: bool = False,
    leaf_devices: int = LEAF_DEVICES,
    options: oa.BuildOptions = DEFAULT_BUILD,
) -> Growth:
    """Realise x' on the new cabling, keeping as many previous circuits as possible.

    ``previous_assignment`` is in service on ``ports_old`` (k x m); ``ports_new`` (n x m',
    n >= k, m' >= m) must keep the old blocks' rows (ValueError otherwise: their fibre never
    moves). Blocks and devices keep their indices. ``by_device_group``: solve by bisection over
    groups of identical devices (fast at hundreds of devices; optimal when it reaches the pair
    floor), falling back to the exact model if a piece has no solution. See the module docstring.
    """
    begin = time.perf_counter()
    p_old, p_new = as_ports(ports_old, "ports_old"), as_ports(ports_new, "ports_new")
    x = as_topology(x_new, "x_new")
    issues = check_growth(previous_assignment, p_old, p_new, x)
    if issues:
        raise ValueError("; ".join(issues))
    n = len(x)
    x0 = pair_totals(previous_assignment.circuits, n)
    bound = changed_circuits_lower_bound(x0, x)
    problem = growth_problem(previous_assignment, p_new, x)
    result = None
    if by_device_group:
        status, circuits = grow_by_device_group(
            previous_assignment.circuits,
            p_new,
            x,
            device_order(p_new),
            begin + time_limit_s,
            leaf_devices,
            workers,
            options,
        )
        if status.has_solution:
            result = _assignment(problem, circuits, pair_floor(x0, x), time.perf_counter() - begin)
    if result is None:
        left = time_limit_s - (time.perf_counter() - begin)
        result = _solve_exact(problem, x0, x, left, workers, options)
        result = replace(result, wall_s=time.perf_counter() - begin)
    changed = result.removed + result.added if result.status.has_solution else -1
    return Growth(result.status, result, changed, bound, result.wall_s)


def _assignment(
    problem: oa.AssignmentProblem, circuits: Sequence[Circuit], floor: int, wall_s: float
) -> oa.Assignment:
    """The Assignment of a grouped solve: OPTIMAL when its added circuits reach the pair floor."""
    merged: defaultdict[tuple[int, int, int], int] = defaultdict(int)
    for i, j, o, y in circuits:
        merged[i, j, o] += y
    rows = tuple(sorted((*k, y) for k, y in merged.items() if y))
    removed, added = oa.churn(problem.current, rows)
    status = Status.OPTIMAL if added <= floor else Status.FEASIBLE
    realised = sum(r[3] for r in rows)
    return oa.Assignment(status, rows, realised, problem.requested, removed, added, wall_s)
