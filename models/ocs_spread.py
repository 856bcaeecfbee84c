r"""Spread a block topology evenly over the spines of every block (CP-SAT).

In a direct-connect fabric every block (pod) has A spines, and spine g of every block is cabled
to its own group of OCS devices, C ports per block in each group. A circuit between blocks i and
j in group g therefore joins spine g of i to spine g of j. Traffic from i to j leaves i over the
spines that have a circuit to j; spraying evenly over them, the spine with the fewest sets the
pace, so block i reaches j at A min_g y_ijg circuits' worth, not x_ij. A topology is *spread
evenly* when every pair's x_ij circuits are split floor / ceil over the groups; then
min_g y_ijg = floor(x_ij / A), the most any split can give.

Data: A groups; C ports per block per group; the topology x_ij (i < j).
Let base_ij = floor(x_ij / A), r_ij = x_ij - A base_ij, B_b = sum_j base_bj.

Variables:
    z[i,j,g] in {0,1}   for r_ij > 0: the pair has base_ij + 1 circuits in group g

Constraints (one family per ``add_*`` function):
    pair.extras    forall i < j with r_ij > 0:  sum_g z[i,j,g] = r_ij
    group.ports    forall b, g:                 B_b + sum_j z[b,j,g] <= C

The split is y_ijg = base_ij + z_ijg. Solving: a constructive start first (``greedy``: round
robin over the pairs, each extra to the group with the most room at the pair's fuller end, and
the extras that find no room placed by alternating Kempe chains between two groups). When it
places every extra it is the answer. Otherwise, on models of at most ``MAX_MODEL_VARIABLES``, a
single-worker CP-SAT search (the same answer on every run) decides exactly; on larger ones the
few extras left go wherever both ends have room (valid, possibly uneven: FEASIBLE). An even
spread need not exist: with A = 2, C = 1 and one circuit on each side of a triangle, every block
needs its two circuits in different groups, which two colours cannot do on an odd cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from models.status import Status, status_of

Pair = tuple[int, int]
Key = tuple[int, int, int]
"""(i, j, g): pair i < j in group g."""
#: A check called now and then; it raises to stop the search (a caller's time limit).
Tick = Callable[[], None] | None
#: Placements between two calls of the tick (a power of two minus one, as a mask).
TICK_MASK = 1023


@dataclass(frozen=True)
class SpreadProblem:
    """A block topology and the spine groups it is to be spread over."""

    blocks: int
    groups: int
    """A: spines per block, one group of OCS devices each."""
    ports_per_group: int
    """C: ports of one block in one group (on its spine's devices)."""
    circuits: tuple[tuple[int, int, int], ...]
    """The topology: (i, j, x_ij) with i < j."""

    def base(self) -> dict[Pair, int]:
        """floor(x_ij / A) per pair: circuits the pair has in every group."""
        return {(i, j): x // self.groups for i, j, x in self.circuits if x > 0}

    def extras(self) -> dict[Pair, int]:
        """r_ij = x_ij mod A per pair with r_ij > 0: groups that get one circuit more."""
        return {(i, j): x % self.groups for i, j, x in self.circuits if x % self.groups}

    def free_ports(self) -> list[int]:
        """C - B_b per block: ports left in every group once the base circuits are in."""
        free = [self.ports_per_group] * self.blocks
        for (i, j), k in self.base().items():
            free[i] -= k
            free[j] -= k
        return free


@dataclass(frozen=True)
class Spread:
    """The split of a topology over groups."""

    status: Status
    groups: tuple[tuple[tuple[int, int, int], ...], ...]
    """Per group, its topology (i, j, y_ijg) with y > 0; empty unless a split was found."""
    wall_s: float


class _Placement:
    """Extras placed so far: the free ports of every block in every group, and who meets where."""

    def __init__(self, p: SpreadProblem) -> None:
        self.free = [[f] * p.groups for f in p.free_ports()]
        self.where: dict[Pair, set[int]] = {pair: set() for pair in p.extras()}
        self.partners = [[set[int]() for _ in range(p.groups)] for _ in range(p.blocks)]

    def put(self, i: int, j: int, g: int) -> None:
        self.where[min(i, j), max(i, j)].add(g)
        self.free[i][g] -= 1
        self.free[j][g] -= 1
        self.partners[i][g].add(j)
        self.partners[j][g].add(i)

    def take(self, i: int, j: int, g: int) -> None:
        self.where[min(i, j), max(i, j)].discard(g)
        self.free[i][g] += 1
        self.free[j][g] += 1
        self.partners[i][g].discard(j)
        self.partners[j][g].discard(i)

    def kempe(self, i: int, j: int, g: int, h: int) -> bool:
        """Place i-j in group g although j is full there, along an alternating chain.

        j has a free port in h. i-j goes into g; j moves one of its g-extras j-k to h; k, if full
        in h now, moves one of its h-extras to g (where it just got a port back); and so on, until
        a block takes the incoming group on a free port. Every block inside the chain loses a port
        in one group and gains one in the other, so only the last one needs room. Depth first,
        backtracking, within ``MAX_CHAIN_NODES`` moves tried; undone if no chain is found.
        """
        if g in self.where[min(i, j), max(i, j)]:
            return False
        self.put(i, j, g)
        if self._chain(j, g, h, {(min(i, j), max(i, j))}, [MAX_CHAIN_NODES], 0):
            return True
        self.take(i, j, g)
        return False

    def _chain(
        self, v: int, over: int, other: int, seen: set[Pair], budget: list[int], depth: int
    ) -> bool:
        if self.free[v][over] >= 0:
            return True
        if depth >= MAX_CHAIN_DEPTH:
            return False
        for w in sorted(self.partners[v][over]):
            pair = (min(v, w), max(v, w))
            if pair in seen or other in self.where[pair] or budget[0] <= 0:
                continue
            budget[0] -= 1
            seen.add(pair)
            self.take(*pair, over)
            self.put(*pair, other)
            if self._chain(w, other, over, seen, budget, depth + 1):
                return True
            self.take(*pair, other)
            self.put(*pair, over)
            seen.discard(pair)
        return False


#: Longest alternating chain the repair follows.
MAX_CHAIN_DEPTH = 400
#: Moves one repair may try before giving up on a pair of groups.
MAX_CHAIN_NODES = 20_000


def greedy(p: SpreadProblem, tick: Tick = None) -> dict[Key, int]:
    """z[i,j,g] = 1 entries of a constructive start; it may leave extras out (see ``complete``).

    Round robin: every pair still owed extras places one per pass, in the group with the most
    free ports at its fuller end, so no pair runs ahead. An extra that finds no group free at
    both ends is placed by an alternating (Kempe) chain between a group free at one end and a
    group free at the other, when one exists. ``tick`` is called now and then.
    """
    state = _Placement(p)
    owed = dict(p.extras())
    stuck: list[Pair] = []
    placed = 0
    while owed:
        if tick is not None:
            tick()
        for i, j in sorted(owed, key=lambda pair: (-owed[pair], pair)):
            placed += 1
            if tick is not None and not placed & TICK_MASK:
                tick()
            taken = state.where[i, j]
            g = max(
                (g for g in range(p.groups) if g not in taken),
                key=lambda g: (min(state.free[i][g], state.free[j][g]), -g),
            )
            if min(state.free[i][g], state.free[j][g]) > 0:
                state.put(i, j, g)
            else:
                stuck.append((i, j))
            owed[i, j] -= 1
        owed = {pair: k for pair, k in owed.items() if k}
    for i, j in stuck:
        if tick is not None:
            tick()
        _repair(p, state, i, j)
    return {(i, j, g): 1 for (i, j), groups in state.where.items() for g in groups}


def _repair(p: SpreadProblem, state: _Placement, i: int, j: int) -> bool:
    """Place one more extra of i-j by a Kempe chain from either end; False if none is found."""
    for a, b in ((i, j), (j, i)):
        for g in range(p.groups):
            if g in state.where[i, j] or state.free[a][g] <= 0:
                continue
            for h in range(p.groups):
                if h != g and state.free[b][h] > 0 and state.kempe(a, b, g, h):
                    return True
    return False


def complete(p: SpreadProblem, z: dict[Key, int]) -> bool:
    """Whether z places every pair's extras."""
    placed: dict[Pair, int] = {}
    for i, j, _ in z:
        placed[i, j] = placed.get((i, j), 0) + 1
    return placed == p.extras()


@dataclass
class SpreadModel:
    """A built, unsolved spread model."""

    problem: SpreadProblem
    model: cp_model.CpModel
    z: dict[Key, cp_model.IntVar]


def add_pair_extras(m: cp_model.CpModel, p: SpreadProblem, z: dict[Key, cp_model.IntVar]) -> None:
    """Every pair's extras land in distinct groups.  sum_g z[i,j,g] = r_ij."""
    for (i, j), r in p.extras().items():
        m.add(sum(z[i, j, g] for g in range(p.groups)) == r)


def add_group_ports(m: cp_model.CpModel, p: SpreadProblem, z: dict[Key, cp_model.IntVar]) -> None:
    """No block uses more ports in a group than it has.  B_b + sum_j z[b,j,g] <= C."""
    free = p.free_ports()
    touching: dict[int, list[Pair]] = {}
    for i, j in p.extras():
        touching.setdefault(i, []).append((i, j))
        touching.setdefault(j, []).append((i, j))
    for b, pairs in touching.items():
        for g in range(p.groups):
            m.add(sum(z[i, j, g] for i, j in pairs) <= free[b])


def build(p: SpreadProblem) -> SpreadModel:
    """Build (not solve) the model, hinted with the greedy start."""
    m = cp_model.CpModel()
    z = {
        (i, j, g): m.new_bool_var(f"z[{i},{j},{g}]") for i, j in p.extras() for g in range(p.groups)
    }
    add_pair_extras(m, p, z)
    add_group_ports(m, p, z)
    start = greedy(p)
    for key, var in z.items():
        m.add_hint(var, start.get(key, 0))
    return SpreadModel(p, m, z)


def split(p: SpreadProblem, z: dict[Key, int]) -> tuple[tuple[tuple[int, int, int], ...], ...]:
    """The per-group topologies y_ijg = base_ij + z_ijg."""
    base = {pair: k for pair, k in p.base().items() if k}
    groups = [dict(base) for _ in range(p.groups)]
    for (i, j, g), k in z.items():
        groups[g][i, j] = groups[g].get((i, j), 0) + k
    return tuple(tuple(sorted((i, j, k) for (i, j), k in y.items())) for y in groups)


def spread(p: SpreadProblem, time_limit_s: float = 10.0, tick: Tick = None) -> Spread:
    """Split the topology over the groups, evenly if it can be found.

    OPTIMAL: every pair floor / ceil (the constructive start, or CP-SAT when the start falls
    short and the model has at most ``MAX_MODEL_VARIABLES``; INFEASIBLE when CP-SAT proves no
    even split exists). FEASIBLE: too large for the exact model, so the extras the start could
    not place evenly go where both ends still have ports, a pair then possibly having 2 more in
    one group than in another (``uneven_pairs``). INFEASIBLE also when even that finds no room.
    ``tick`` is called now and then during the constructive start (it may raise to stop).
    """
    start = time.perf_counter()
    if any(f < 0 for f in p.free_ports()):
        return Spread(Status.INFEASIBLE, (), time.perf_counter() - start)
    z = greedy(p, tick)
    if complete(p, z):
        return Spread(Status.OPTIMAL, split(p, z), time.perf_counter() - start)
    if len(p.extras()) * p.groups <= MAX_MODEL_VARIABLES:
        built = build(p)
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = max(0.01, time_limit_s)
        solver.parameters.num_workers = 1
        status = status_of("cp_sat", solver.solve(built.model))
        if status.has_solution:
            found = {key: 1 for key, var in built.z.items() if solver.value(var)}
            return Spread(Status.OPTIMAL, split(p, found), time.perf_counter() - start)
        if status is Status.INFEASIBLE:
            return Spread(status, (), time.perf_counter() - start)
    filled = fill_unevenly(p, z)
    if filled is None:
        return Spread(Status.INFEASIBLE, (), time.perf_counter() - start)
    result = Spread(Status.FEASIBLE, split(p, filled), time.perf_counter() - start)
    return replace(result, status=Status.OPTIMAL) if uneven_pairs(result) == 0 else result


#: Largest exact spread model (pairs with extras x groups) handed to CP-SAT; its single-worker
#: search stalls on tight full meshes of about 8,000 variables.
MAX_MODEL_VARIABLES = 5_000


def fill_unevenly(p: SpreadProblem, z: dict[Key, int]) -> dict[Key, int] | None:
    """The start ``z`` with every missing extra placed where both ends have a free port (repeats allowed)."""
    free = [[f] * p.groups for f in p.free_ports()]
    placed: dict[Pair, int] = {}
    for (i, j, g), k in z.items():
        free[i][g] -= k
        free[j][g] -= k
        placed[i, j] = placed.get((i, j), 0) + k
    out = dict(z)
    for (i, j), r in sorted(p.extras().items()):
        for _ in range(r - placed.get((i, j), 0)):
            g = max(range(p.groups), key=lambda g: (min(free[i][g], free[j][g]), -g))
            if min(free[i][g], free[j][g]) <= 0:
                return None
            out[i, j, g] = out.get((i, j, g), 0) + 1
            free[i][g] -= 1
            free[j][g] -= 1
    return out


def uneven_pairs(s: Spread) -> int:
    """Pairs whose circuits differ by more than one between two groups."""
    per: dict[Pair, list[int]] = {}
    for g, topo in enumerate(s.groups):
        for i, j, k in topo:
            per.setdefault((i, j), [0] * len(s.groups))[g] = k
    return sum(1 for counts in per.values() if max(counts) - min(counts) > 1)


def check_spread(p: SpreadProblem, s: Spread) -> list[str]:
    """Everything wrong with a split: sums, group ports, and floor / ceil when OPTIMAL."""
    problems: list[str] = []
    if len(s.groups) != p.groups:
        return [f"{len(s.groups)} groups, expected {p.groups}"]
    total: dict[Pair, list[int]] = {}
    for g, topo in enumerate(s.groups):
        used = [0] * p.blocks
        for i, j, k in topo:
            total.setdefault((i, j), [0] * p.groups)[g] += k
            used[i] += k
            used[j] += k
        problems += [
            f"block {b} uses {u} ports in group {g}, has {p.ports_per_group}"
            for b, u in enumerate(used)
            if u > p.ports_per_group
        ]
    for i, j, x in p.circuits:
        per = total.pop((i, j), [0] * p.groups)
        if sum(per) != x:
            problems.append(f"pair {i}-{j}: {sum(per)} circuits, expected {x}")
        if s.status is Status.OPTIMAL and max(per) - min(per) > 1:
            problems.append(f"pair {i}-{j}: uneven over groups {per}")
    problems += [f"pair {i}-{j}: not in the topology" for i, j in total]
    return problems
