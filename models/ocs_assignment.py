r"""OCS circuit assignment: realise a logical topology on optical circuit switches (CP-SAT).

Aggregation blocks b = 0..n-1 reach optical circuit switches (OCS) o = 0..m-1 through fixed
cabling: block b has P[b,o] ports on OCS o. A logical topology x (symmetric, zero diagonal,
non-negative integers; ``circuits`` lists x_ij > 0 with i < j) asks for x_ij circuits between
blocks i and j. An OCS is a crossbar: any pairing of its ports is one configuration, so a circuit
between i and j through o takes one port of i and one port of j on o, and counting is enough.

Data: P[b,o]; x_ij; optionally a current assignment y0[i,j,o]; failed OCS and failed blocks.
Live: an OCS that has not failed; a pair (i,j) whose two blocks have not failed.

Variables (only for live pairs with x_ij > 0 and live OCS with a non-empty domain):
    y[i,j,o] in [0, min(x_ij, P[i,o], P[j,o])]   circuits between i and j through OCS o
    e[i,j,o] in [0, ub(y) - y0]                  circuits added where y0 > 0:  e >= y - y0

Constraints (one family per ``add_*`` function):
    pair.realisation   exact:       sum_o y[i,j,o] = x_ij
                       best effort: sum_o y[i,j,o] <= x_ij   (any failure, or ``best_effort``)
    port.capacity      forall b, o:  sum_{j != b} y[min(b,j), max(b,j), o] <= P[b,o]
                       (written only where the variables' bounds could exceed P[b,o])
    circuit.keep       y[i,j,o] >= y0[i,j,o] on live OCS and pairs   (``keep_surviving`` only)
    failures           y = 0 on failed OCS and blocks: those variables are never created.

Churn: R = sum y (circuits realised), S0 = sum y0 (all of y0, also on failed devices),
added A = sum max(0, y - y0) = sum_{y0 = 0} y + sum_{y0 > 0} e, removed = S0 - R + A, and the
churn sum |y - y0| = removed + added = S0 - R + 2A.

Objective:
    exact:                    none (feasibility); with ``min_churn`` minimise A (R = X is fixed)
    best effort:              maximise R
    best effort + min_churn:  minimise A - W R with W = X + 1, X = sum of x_ij on live pairs.
                              Since 0 <= A <= R <= X, one more circuit realised always outweighs
                              any change in A: the single weighted solve is lexicographic
                              (max R, then min churn).

Switchable extras (never change the optimum; tests check it):
    symmetry breaking  live OCS with identical port columns are interchangeable when y0 plays no
                       part (no ``min_churn``, no ``keep_surviving``): consecutive devices of a
                       class are ordered lexicographically on the circuits of the first pairs.
    hint               a constructive start (``starting_assignment``): without y0 the
                       2-factor construction below when it applies; else y0 kept where still
                       valid, then each missing circuit placed where two free ports meet, else
                       by the cheapest shortest ejection chain (put v-w on an OCS where one end
                       has a port, eject a circuit of the full end, re-place that one, ...),
                       else by a Kempe-style alternating trail between two OCS (never stuck
                       when both OCS give every block the same ports).

Solve: CP-SAT first checks the start with every variable fixed to it. It is the answer, OPTIMAL,
when the model has no objective or the start reaches a floor (``objective_floor``: R <= R* from
pair domains and per-block port deficits, A >= R - S_v); otherwise the full search runs, and if
it holds no solution when the time is up (presolve alone takes seconds at 100k variables) the
checked start comes back FEASIBLE.

Theory. If every OCS o offers every block (with circuits) at least 2 k_o ports, K = sum_o k_o,
then any x with max_b sum_j x_bj <= 2K is realisable (Petersen's 2-factor theorem): complete x to
a 2K-regular multigraph (a dummy edge between blocks of odd deficit, loops for the rest: unused
ports), orient it along Euler circuits (in = out = K everywhere), read the arcs as a K-regular
bipartite multigraph (tail, head), split that into K perfect matchings (Euler splitting while K
is even, one Hopcroft-Karp matching while K is odd); each matching is a 2-factor, which uses at
most 2 ports of each block, and OCS o takes k_o of them. ``realisable_by_theorem`` tests the
condition and ``two_factor_assignment`` builds the assignment. With odd ports it is an edge
colouring problem: a triangle with 1 port per block on each of 2 OCS meets every degree bound
and is infeasible (chromatic index 3).

Re-solve after failures. Let S = sum of y0 on live OCS and pairs (the surviving circuits) and
F = S0 - S. Every solution has churn = F + sum_live |y - y0| >= F + R - S, with equality iff
y >= y0 on every live entry. Hence: if keeping every surviving circuit still allows the maximum R
(``keep_surviving`` realises as much as the free model), then *every* lexicographic optimum keeps
all of them; otherwise every maximum-R solution moves one. Both happen (a 3-block example where
a moved circuit frees the ports a lost circuit needs is in the tests), so keeping is not imposed:
it is the hint, and ``keep_surviving`` is offered as a separate, non-disruptive policy. After a
*block* fails, R <= S (its circuits cannot be realised anywhere), keeping attains it, so the
re-solve removes exactly that block's circuits and adds none.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx
from ortools.sat.python import cp_model

from models.cp_sat import CP_SAT_STATUS
from models.status import Status

#: (i, j) with i < j: a pair of blocks.
Pair = tuple[int, int]
#: (i, j, o): a pair of blocks on one OCS.
Key = tuple[int, int, int]

#: Largest weight of the symmetry-breaking order (B^t, B = largest domain size + 1): far below
#: CP-SAT's 2^62 so that sums of weighted terms never overflow.
MAX_SYMMETRY_WEIGHT = 2**40

#: States an ejection-chain search may visit before it gives up (the start's effort per circuit).
MAX_CHAIN_STATES = 20_000
#: Steps past the shortest ejection chain that the search still looks at for a cheaper one.
CHAIN_SLACK = 0


@dataclass(frozen=True)
class AssignmentProblem:
    """One OCS assignment: cabling, target topology, current state, failures and the goal."""

    blocks: int
    devices: int
    ports: tuple[tuple[int, ...], ...]
    """ports[b][o]: ports of block b cabled to OCS o (fixed)."""
    circuits: tuple[tuple[int, int, int], ...]
    """The logical topology: (i, j, x_ij) with i < j; a pair not listed asks for no circuit."""
    current: tuple[tuple[int, int, int, int], ...] = ()
    """The assignment in service, y0: (i, j, o, y0) with i < j and y0 > 0."""
    failed_devices: frozenset[int] = frozenset()
    failed_blocks: frozenset[int] = frozenset()
    min_churn: bool = False
    """Minimise sum |y - y0| (after realising as many circuits as possible)."""
    best_effort: bool = False
    """Maximise circuits realised instead of requiring all; implied by any failure."""
    keep_surviving: bool = False
    """Never touch a current circuit on a live OCS between live blocks (y >= y0 there);
    infeasible if the target or the cabling no longer allows one of them."""

    @property
    def exact(self) -> bool:
        """Whether every requested circuit must be realised."""
        return not (self.best_effort or self.failed_devices or self.failed_blocks)

    @property
    def requested(self) -> int:
        """Circuits the topology asks for: sum_{i<j} x_ij."""
        return sum(x for _, _, x in self.circuits)

    def live_devices(self) -> tuple[int, ...]:
        """OCS that have not failed."""
        return tuple(o for o in range(self.devices) if o not in self.failed_devices)

    def live_target(self) -> dict[Pair, int]:
        """x_ij > 0 on pairs whose two blocks are live."""
        dead = self.failed_blocks
        return {(i, j): x for i, j, x in self.circuits if x > 0 and i not in dead and j not in dead}

    def is_live(self, i: int, j: int, o: int) -> bool:
        """Whether a circuit i-j through o could exist after the failures."""
        dead = self.failed_blocks
        return o not in self.failed_devices and i not in dead and j not in dead


@dataclass(frozen=True)
class Assignment:
    """Outcome of one solve; counts are circuits."""

    status: Status
    circuits: tuple[tuple[int, int, int, int], ...]
    """(i, j, o, y) with i < j and y > 0, sorted."""
    realised: int
    requested: int
    removed: int
    """sum max(0, y0 - y): current circuits taken down (those on failed devices included)."""
    added: int
    """sum max(0, y - y0): circuits set up."""
    wall_s: float


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


# --------------------------------------------------------------------------- data helpers


def check_problem(p: AssignmentProblem) -> list[str]:
    """Everything wrong with a problem's data (empty when it can be built)."""
    issues: list[str] = []
    n, m = p.blocks, p.devices
    if n < 0 or m < 0:
        return [f"negative size: {n} blocks, {m} devices"]
    if len(p.ports) != n or any(len(row) != m for row in p.ports):
        issues.append(f"ports must be {n} x {m}")
    elif any(v < 0 for row in p.ports for v in row):
        issues.append("ports must be non-negative")
    pairs: set[Pair] = set()
    for i, j, x in p.circuits:
        if not 0 <= i < j < n:
            issues.append(f"circuit pair ({i}, {j}) must have 0 <= i < j < {n}")
        if x < 0:
            issues.append(f"x[{i},{j}] = {x} is negative")
        if (i, j) in pairs:
            issues.append(f"pair ({i}, {j}) listed twice")
        pairs.add((i, j))
    keys: set[Key] = set()
    for i, j, o, y in p.current:
        if not (0 <= i < j < n and 0 <= o < m):
            issues.append(f"current ({i}, {j}, {o}) is out of range")
        if y <= 0:
            issues.append(f"current y0[{i},{j},{o}] = {y} must be positive")
        if (i, j, o) in keys:
            issues.append(f"current ({i}, {j}, {o}) listed twice")
        keys.add((i, j, o))
    issues += [f"failed device {o} out of range" for o in p.failed_devices if not 0 <= o < m]
    issues += [f"failed block {b} out of range" for b in p.failed_blocks if not 0 <= b < n]
    return issues


def circuits_from_matrix(x: Sequence[Sequence[int]]) -> tuple[tuple[int, int, int], ...]:
    """(i, j, x_ij) for i < j and x_ij > 0 from a symmetric matrix (its upper triangle)."""
    return tuple((i, j, x[i][j]) for i in range(len(x)) for j in range(i + 1, len(x)) if x[i][j])


def churn(
    old: Iterable[tuple[int, int, int, int]], new: Iterable[tuple[int, int, int, int]]
) -> tuple[int, int]:
    """(removed, added) = (sum max(0, y0 - y), sum max(0, y - y0)) over (i, j, o)."""
    before: Counter[Key] = Counter()
    after: Counter[Key] = Counter()
    for i, j, o, y in old:
        before[i, j, o] += y
    for i, j, o, y in new:
        after[i, j, o] += y
    keys = before.keys() | after.keys()
    removed = sum(max(0, before[k] - after[k]) for k in keys)
    added = sum(max(0, after[k] - before[k]) for k in keys)
    return removed, added


def _degrees(circuits: Iterable[tuple[int, int, int]]) -> Counter[int]:
    degree: Counter[int] = Counter()
    for i, j, x in circuits:
        degree[i] += x
        degree[j] += x
    return degree


def theorem_factors(
    circuits: Sequence[tuple[int, int, int]], ports: Sequence[Sequence[int]]
) -> tuple[int, ...] | None:
    """k_o per OCS when Petersen's theorem guarantees a realisation, else None.

    k_o = min over blocks with circuits of floor(P[b,o] / 2); the guarantee needs
    max_b sum_j x_bj <= 2 sum_o k_o.
    """
    degree = _degrees(c for c in circuits if c[2] > 0)
    devices = len(ports[0]) if ports else 0
    if not degree:
        return (0,) * devices
    k = tuple(min(ports[b][o] for b in degree) // 2 for o in range(devices))
    return k if max(degree.values()) <= 2 * sum(k) else None


def realisable_by_theorem(
    circuits: Sequence[tuple[int, int, int]], ports: Sequence[Sequence[int]]
) -> bool:
    """Sufficient condition for realisability (Petersen): see ``theorem_factors``.

    With P[b,o] = 2k on every block and OCS this is the classical statement: x is realisable
    whenever every block's degree is at most m * 2k. False means "not guaranteed", not
    "infeasible".
    """
    return theorem_factors(circuits, ports) is not None


# --------------------------------------------------------------------------- 2-factors


def _euler_circuits(nodes: int, ends: Sequence[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Closed trails covering every edge of a multigraph of even degrees (loops allowed).

    Each trail is a list of arcs (edge id, tail); consecutive arcs share a vertex. Hierholzer's
    algorithm, iterative.
    """
    adjacency: list[list[int]] = [[] for _ in range(nodes)]
    for e, (u, w) in enumerate(ends):
        adjacency[u].append(e)
        if u != w:
            adjacency[w].append(e)
    used = [False] * len(ends)
    pointer = [0] * nodes
    trails = []
    for start in range(nodes):
        stack: list[tuple[int, int, int]] = [(start, -1, -1)]  # (vertex, edge in, tail)
        trail: list[tuple[int, int]] = []
        while stack:
            u, e_in, tail = stack[-1]
            edges = adjacency[u]
            while pointer[u] < len(edges) and used[edges[pointer[u]]]:
                pointer[u] += 1
            if pointer[u] == len(edges):
                stack.pop()
                if e_in >= 0:
                    trail.append((e_in, tail))
                continue
            e = edges[pointer[u]]
            used[e] = True
            a, b = ends[e]
            stack.append((b if a == u else a, e, u))
        if trail:
            trails.append(trail)
    return trails


def _split_regular_bipartite(
    left: int, right: int, arcs: list[tuple[int, int, int]], degree: int
) -> list[list[int]]:
    """Split a degree-regular bipartite multigraph (id, l, r) into ``degree`` perfect matchings."""
    if degree == 0:
        return []
    if degree == 1:
        return [[e for e, _, _ in arcs]]
    if degree % 2:
        graph = nx.Graph()
        graph.add_nodes_from(range(left + right))
        edge_of: dict[tuple[int, int], int] = {}
        for e, lo, ro in arcs:
            edge_of.setdefault((lo, left + ro), e)
            graph.add_edge(lo, left + ro)
        mate = nx.bipartite.hopcroft_karp_matching(graph, top_nodes=range(left))
        matching = {edge_of[lo, mate[lo]] for lo in range(left)}
        rest = [a for a in arcs if a[0] not in matching]
        return [sorted(matching), *_split_regular_bipartite(left, right, rest, degree - 1)]
    ends = [(lo, left + ro) for _, lo, ro in arcs]
    halves: tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]] = ([], [])
    for trail in _euler_circuits(left + right, ends):
        for position, (index, _) in enumerate(trail):
            halves[position % 2].append(arcs[index])
    return [
        *_split_regular_bipartite(left, right, halves[0], degree // 2),
        *_split_regular_bipartite(left, right, halves[1], degree // 2),
    ]


def two_factor_assignment(
    circuits: Sequence[tuple[int, int, int]], ports: Sequence[Sequence[int]]
) -> dict[Key, int] | None:
    """An exact realisation by the 2-factor construction, or None when the theorem does not apply.

    Returns y[i,j,o] > 0. See the module docstring for the construction.
    """
    k = theorem_factors(circuits, ports)
    if k is None:
        return None
    degree = _degrees(c for c in circuits if c[2] > 0)
    if not degree:
        return {}
    vertices = sorted(degree)
    index = {b: t for t, b in enumerate(vertices)}
    regular = 2 * sum(k)
    ends = [(index[i], index[j]) for i, j, x in circuits for _ in range(x)]
    real = len(ends)
    deficit = [regular - degree[b] for b in vertices]
    odd = [t for t, d in enumerate(deficit) if d % 2]
    for a, b in zip(odd[::2], odd[1::2], strict=True):
        ends.append((a, b))
        deficit[a] -= 1
        deficit[b] -= 1
    for t, d in enumerate(deficit):
        ends.extend([(t, t)] * (d // 2))
    arcs = []
    for trail in _euler_circuits(len(vertices), ends):
        for e, tail in trail:
            a, b = ends[e]
            arcs.append((e, tail, b if a == tail else a))
    factors = _split_regular_bipartite(len(vertices), len(vertices), arcs, sum(k))
    owner = [o for o, ko in enumerate(k) for _ in range(ko)]
    y: Counter[Key] = Counter()
    for factor, o in zip(factors, owner, strict=True):
        for e in factor:
            if e < real:
                a, b = ends[e]
                i, j = sorted((vertices[a], vertices[b]))
                y[i, j, o] += 1
    return dict(y)


# --------------------------------------------------------------------------- starting point


def variable_bounds(p: AssignmentProblem) -> dict[Key, int]:
    """ub(y[i,j,o]) = min(x_ij, P[i,o], P[j,o]) for the variables the model creates."""
    bounds = {}
    live = p.live_devices()
    for (i, j), x in p.live_target().items():
        for o in live:
            ub = min(x, p.ports[i][o], p.ports[j][o])
            if ub > 0:
                bounds[i, j, o] = ub
    return bounds


class _Layout:
    """A start being built: circuits per (i, j, o), free ports and per-OCS neighbours."""

    def __init__(self, p: AssignmentProblem) -> None:
        self.p = p
        self.live = p.live_devices()
        self.y: Counter[Key] = Counter()
        self.free = [list(row) for row in p.ports]
        self.near: list[list[Counter[int]]] = [
            [Counter() for _ in range(p.devices)] for _ in range(p.blocks)
        ]
        self.placed: Counter[Pair] = Counter()
        self.y0: Counter[Key] = Counter(
            {(i, j, o): y0 for i, j, o, y0 in p.current if p.is_live(i, j, o)}
        )
        self.open = [{o for o in self.live if self.free[b][o] > 0} for b in range(p.blocks)]
        """Live OCS on which each block has a free port."""
        self.locked = p.keep_surviving
        """Whether circuits of y0 may not be moved (``keep_surviving``)."""

    def move(self, i: int, j: int, o: int, count: int) -> None:
        """Add (count > 0) or take away (count < 0) circuits i-j on OCS o."""
        a, b = min(i, j), max(i, j)
        self.y[a, b, o] += count
        if not self.y[a, b, o]:
            del self.y[a, b, o]
        self.placed[a, b] += count
        for u, w in ((a, b), (b, a)):
            self.free[u][o] -= count
            if self.free[u][o] > 0 and o not in self.p.failed_devices:
                self.open[u].add(o)
            else:
                self.open[u].discard(o)
            self.near[u][o][w] += count
            if not self.near[u][o][w]:
                del self.near[u][o][w]

    def place_directly(self, a: int, b: int) -> bool:
        """Put one circuit a-b on the live OCS with the most common free ports, if any."""
        free = self.free
        best = max(
            self.live,
            key=lambda d: (min(free[a][d], free[b][d]), -d),
            default=None,
        )
        if best is None or min(free[a][best], free[b][best]) <= 0:
            return False
        self.move(a, b, best, 1)
        return True

    def chain(self, a: int, b: int) -> list[tuple[int, int, int, int, int]] | None:
        """A cheapest short ejection chain that makes room for a-b, across all OCS.

        Put the homeless circuit v-w on an OCS d where one end has a free port; if the other end
        is full there, eject one of its circuits on d, which becomes the next homeless circuit
        (its far end now has a free port on d). Breadth-first up to ``CHAIN_SLACK`` steps past the
        shortest chain, keeping the one of least churn: a step that puts a circuit back where y0 had it
        saves churn, moving an already moved circuit costs none. Returns steps (v, w, d, x, z):
        v-w goes on d and x-z leaves d (x = -1: nothing leaves), or None when no chain is found
        within ``MAX_CHAIN_STATES`` states.
        """
        queue: deque[tuple[int, int, tuple[tuple[int, int, int, int, int], ...], int]] = deque()
        queue.append((a, b, (), 0))
        seen: set[tuple[int, int, int]] = set()
        best: tuple[int, int, list[tuple[int, int, int, int, int]]] | None = None
        while queue and len(seen) <= MAX_CHAIN_STATES:
            v, w, steps, cost = queue.popleft()
            if best is not None and len(steps) > best[1] + CHAIN_SLACK:
                break
            taken: Counter[tuple[int, int]] = Counter()
            change: Counter[Key] = Counter()
            for s_v, s_w, d, x, z in steps:
                taken[s_v, d] += 1
                taken[s_w, d] += 1
                change[min(s_v, s_w), max(s_v, s_w), d] += 1
                if x >= 0:
                    taken[x, d] -= 1
                    taken[z, d] -= 1
                    change[min(x, z), max(x, z), d] -= 1
            last = steps[-1][2] if steps else -1
            freed = {d for (u, d), n in taken.items() if n < 0 and u in (v, w)}
            for d in sorted(self.open[v] | self.open[w] | freed):
                if d == last:
                    continue
                room_v = self.free[v][d] - taken[v, d]
                room_w = self.free[w][d] - taken[w, d]
                if min(room_v, room_w) < 0 or max(room_v, room_w) <= 0:
                    continue
                put = (min(v, w), max(v, w), d)
                put_cost = 1 if self.y[put] + change[put] >= self.y0[put] else -1
                if room_v > 0 and room_w > 0:
                    total = cost + put_cost
                    if best is None or (total, len(steps)) < best[:2]:
                        best = (total, len(steps), [*steps, (v, w, d, -1, -1)])
                    continue
                full = w if room_v > 0 else v
                for z, count in sorted(self.near[full][d].items()):
                    out = (min(full, z), max(full, z), d)
                    if count + min(0, change[out]) <= 0 or {full, z} == {v, w}:
                        continue
                    if self.locked and self.y[out] + change[out] <= self.y0[out]:
                        continue
                    if (full, z, d) in seen:
                        continue
                    seen.add((full, z, d))
                    out_cost = 1 if self.y[out] + change[out] <= self.y0[out] else -1
                    step = (v, w, d, full, z)
                    queue.append((full, z, (*steps, step), cost + put_cost + out_cost))
        return None if best is None else best[2]

    def place_by_chain(self, a: int, b: int) -> bool:
        """Put one circuit a-b in by the shortest ejection chain."""
        steps = self.chain(a, b)
        if steps is None:
            return False
        for v, w, d, x, z in steps:
            self.move(v, w, d, 1)
            if x >= 0:
                self.move(x, z, d, -1)
        return True

    def trail(self, a: int, b: int, on: int, off: int) -> list[tuple[int, int, int]] | None:
        """The fewest flips that make room for a-b on OCS ``on`` (a has a free port there).

        A Kempe-style alternating trail between two OCS: b, full on ``on``, sends one of its
        circuits there to ``off``; that circuit's far end may then be full on ``off`` and send
        one of its circuits there to ``on``, and so on until a block has room. Breadth-first
        over (block, OCS it is over on); returns the flips (u, w, from) or None when no trail
        gives a valid layout. With equal ports on the two OCS at every block, a trail always
        exists: each visit of a block uses one circuit of each OCS.
        """
        free = self.free
        other = {on: off, off: on}
        start = (b, on)
        parent: dict[tuple[int, int], tuple[int, int] | None] = {start: None}
        queue = deque([start])
        while queue:
            v, c = queue.popleft()
            for w in sorted(self.near[v][c]):
                state = (w, other[c])
                if state in parent:
                    continue
                parent[state] = (v, c)
                if free[w][other[c]] > (w == a and other[c] == on) + (w == b and c == on):
                    flips = []
                    node: tuple[int, int] | None = state
                    while node is not None and parent[node] is not None:
                        prev = parent[node]
                        assert prev is not None
                        flips.append((prev[0], node[0], prev[1]))
                        node = prev
                    flips.reverse()
                    if self._fits(a, b, on, off, flips):
                        return flips
                    continue
                queue.append(state)
        return None

    def _fits(self, a: int, b: int, on: int, off: int, flips: list[tuple[int, int, int]]) -> bool:
        """Whether a-b on ``on`` plus the flips leaves every port count within its block's ports."""
        extra: Counter[tuple[int, int]] = Counter({(a, on): 1})
        extra[b, on] += 1
        taken: Counter[Key] = Counter()
        for u, w, frm in flips:
            to = off if frm == on else on
            k = (min(u, w), max(u, w), frm)
            taken[k] += 1
            if taken[k] > self.y[k] or (self.locked and self.y[k] - taken[k] < self.y0[k]):
                return False
            for z in (u, w):
                extra[z, frm] -= 1
                extra[z, to] += 1
        return all(n <= self.free[z][d] for (z, d), n in extra.items())

    def place_by_trail(self, a: int, b: int) -> bool:
        """Put one circuit a-b in by the shortest alternating trail over all OCS pairs."""
        live = self.live
        best: tuple[int, int, int, list[tuple[int, int, int]]] | None = None
        for u, w in ((a, b), (b, a)):
            for on in (o for o in live if self.free[u][o] > 0):
                for off in (o for o in live if o != on and self.free[w][o] > 0):
                    flips = self.trail(u, w, on, off)
                    if flips is not None and (best is None or len(flips) < len(best[3])):
                        best = (on, off, len(flips), flips)
        if best is None:
            return False
        on, off, _, flips = best
        for u, w, frm in flips:
            self.move(u, w, frm, -1)
            self.move(u, w, off if frm == on else on, 1)
        self.move(a, b, on, 1)
        return True


def _fill(p: AssignmentProblem, layout: _Layout) -> dict[Key, int]:
    """Place the missing circuits: where two free ports meet, else by a chain, else a trail."""
    missing = [
        (i, j)
        for (i, j), x in sorted(p.live_target().items(), key=lambda item: (-item[1], item[0]))
        for _ in range(x - layout.placed[i, j])
    ]
    later = [pair for pair in missing if not layout.place_directly(*pair)]
    for pair in later:
        if not (layout.place_directly(*pair) or layout.place_by_chain(*pair)):
            layout.place_by_trail(*pair)
    return dict(layout.y)


def starting_assignment(
    p: AssignmentProblem, bounds: Mapping[Key, int] | None = None
) -> dict[Key, int]:
    """A valid (ports never exceeded, y <= x) start, exact whenever the theorem applies.

    With a current assignment: keep what is still live and fits, place what is missing where
    two free ports meet, then by ejection chains, then by alternating trails (circuits of y0
    stay put under ``keep_surviving``). Without: the 2-factor construction on the live OCS and
    blocks when it applies, else the same placement from nothing. Circuits it cannot place stay
    missing.
    """
    target = p.live_target()
    if not p.current:
        live = [
            tuple(0 if o in p.failed_devices else p.ports[b][o] for o in range(p.devices))
            for b in range(p.blocks)
        ]
        built = two_factor_assignment([(i, j, x) for (i, j), x in target.items()], live)
        if built is not None:
            return built
    bounds = variable_bounds(p) if bounds is None else bounds
    layout = _Layout(p)
    for i, j, o, y0 in sorted(p.current):
        if (i, j, o) in bounds:
            fits = min(layout.free[i][o], layout.free[j][o], target[i, j] - layout.placed[i, j])
            if min(y0, fits) > 0:
                layout.move(i, j, o, min(y0, fits))
    return _fill(p, layout)


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


def _run(
    built: BuiltAssignment, time_limit_s: float, workers: int, fixed_to_hint: bool
) -> tuple[Status, dict[Key, int], float]:
    """One CP-SAT pass: our status, y (empty without a solution) and the objective value."""
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, time_limit_s)
    solver.parameters.num_workers = workers
    solver.parameters.fix_variables_to_their_hinted_value = fixed_to_hint
    status = CP_SAT_STATUS.get(solver.solve(built.model), Status.ERROR)
    if not status.has_solution:
        return status, {}, math.nan
    y = {k: value for k, var in built.v.y.items() if (value := solver.value(var))}
    return status, y, solver.objective_value


def solve(built: BuiltAssignment, time_limit_s: float = 30.0, workers: int = 2) -> Assignment:
    """Solve a built model and read the circuits out of it.

    With a hint, CP-SAT first checks the start with every variable fixed to it (fast even at
    100k variables, and it checks constraints added after ``build`` too). A start that passes is
    the answer, OPTIMAL, when the model has no objective or the start reaches
    ``built.floor``. Otherwise the full search runs in the time left; if it stops before it
    holds a solution (at 60+ blocks its presolve alone can outlast a short limit), the checked
    start is returned as FEASIBLE.
    """
    p = built.problem
    begin = time.perf_counter()
    checked: dict[Key, int] | None = None
    if built.start is not None:
        status, y, objective = _run(built, time_limit_s, workers, fixed_to_hint=True)
        if status.has_solution:
            checked = y
            if not built.model.has_objective() or (
                built.floor is not None and objective <= built.floor
            ):
                return _assignment(p, Status.OPTIMAL, y, time.perf_counter() - begin)
    left = time_limit_s - (time.perf_counter() - begin)
    status, y, _ = _run(built, left, workers, fixed_to_hint=False)
    if not status.has_solution and checked is not None and status is not Status.INFEASIBLE:
        status, y = Status.FEASIBLE, checked
    return _assignment(p, status, y, time.perf_counter() - begin)


def _assignment(
    p: AssignmentProblem, status: Status, y: Mapping[Key, int], wall_s: float
) -> Assignment:
    if not status.has_solution:
        return Assignment(status, (), 0, p.requested, 0, 0, wall_s)
    circuits = tuple(sorted((i, j, o, v) for (i, j, o), v in y.items() if v))
    removed, added = churn(p.current, circuits)
    realised = sum(c[3] for c in circuits)
    return Assignment(status, circuits, realised, p.requested, removed, added, wall_s)


# --------------------------------------------------------------------------- validation


def validate_assignment(problem: AssignmentProblem, assignment: Assignment) -> list[str]:
    """Everything wrong with an assignment, recomputed from the raw data alone.

    Independent of the model: it uses none of the functions above. Checks indices, that every
    OCS port carries at most one circuit (per block and OCS, the circuits through it are at most
    its ports), that no circuit sits on a failed OCS or block, that no pair gets more circuits
    than asked (exactly as many unless failures or best effort allow fewer), the kept circuits
    under ``keep_surviving``, and the reported counts.
    """
    issues: list[str] = []
    if not assignment.status.has_solution:
        if assignment.circuits:
            issues.append(f"status {assignment.status} comes with circuits")
        return issues
    n, m = problem.blocks, problem.devices
    asked = {(i, j): x for i, j, x in problem.circuits}
    got: Counter[tuple[int, int]] = Counter()
    used: Counter[tuple[int, int]] = Counter()
    seen: set[tuple[int, int, int]] = set()
    for i, j, o, y in assignment.circuits:
        if not (0 <= i < j < n and 0 <= o < m):
            issues.append(f"circuit ({i}, {j}, {o}) is out of range")
            continue
        if y <= 0:
            issues.append(f"circuit ({i}, {j}, {o}) has count {y}")
        if (i, j, o) in seen:
            issues.append(f"circuit ({i}, {j}, {o}) listed twice")
        seen.add((i, j, o))
        if o in problem.failed_devices:
            issues.append(f"{y} circuit(s) {i}-{j} on failed OCS {o}")
        for b in (i, j):
            if b in problem.failed_blocks:
                issues.append(f"{y} circuit(s) {i}-{j} on OCS {o} use failed block {b}")
        got[i, j] += y
        used[i, o] += y
        used[j, o] += y
    for (b, o), count in sorted(used.items()):
        if count > problem.ports[b][o]:
            issues.append(f"block {b} uses {count} ports on OCS {o}, has {problem.ports[b][o]}")
    for pair, count in sorted(got.items()):
        if count > asked.get(pair, 0):
            issues.append(f"pair {pair} has {count} circuits, asked {asked.get(pair, 0)}")
    partial = problem.best_effort or problem.failed_devices or problem.failed_blocks
    if not partial:
        for pair, x in sorted(asked.items()):
            if got[pair] != x:
                issues.append(f"pair {pair} has {got[pair]} circuits, asked exactly {x}")
    realised = sum(got.values())
    requested = sum(asked.values())
    if assignment.realised != realised:
        issues.append(f"realised {assignment.realised} reported, {realised} found")
    if assignment.requested != requested:
        issues.append(f"requested {assignment.requested} reported, {requested} asked")
    if realised > requested:
        issues.append(f"realised {realised} exceeds requested {requested}")
    before = {(i, j, o): y for i, j, o, y in problem.current}
    after = {(i, j, o): y for i, j, o, y in assignment.circuits}
    keys = before.keys() | after.keys()
    removed = sum(max(0, before.get(k, 0) - after.get(k, 0)) for k in keys)
    added = sum(max(0, after.get(k, 0) - before.get(k, 0)) for k in keys)
    if (assignment.removed, assignment.added) != (removed, added):
        issues.append(
            f"churn (removed, added) = ({assignment.removed}, {assignment.added}) reported, "
            f"({removed}, {added}) found"
        )
    if problem.keep_surviving:
        for (i, j, o), y0 in sorted(before.items()):
            alive = o not in problem.failed_devices and not {i, j} & problem.failed_blocks
            if alive and after.get((i, j, o), 0) < y0:
                issues.append(f"surviving circuit(s) {i}-{j} on OCS {o} were not kept")
    return issues
