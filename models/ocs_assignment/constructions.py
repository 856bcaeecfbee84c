"""OCS circuit assignment: the constructive parts.

Petersen's sufficient condition (``theorem_factors``, ``realisable_by_theorem``), the 2-factor
construction (``two_factor_assignment``) and the starting point (``variable_bounds``,
``starting_assignment``: placement, ejection chains, alternating trails).

The docstrings here say "module docstring" for the package docstring of ``models.ocs_assignment``,
which holds the formulation, the constructions and the theory in full.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence

import networkx as nx
import numpy as np

from models.ocs_assignment.data import AssignmentProblem, Key, Pair, _degrees

#: A check a long construction calls now and then; it raises to stop the construction (a
#: caller's time limit). None: never stopped.
Tick = Callable[[], None] | None
#: Steps of an inner loop between two calls of the tick (a power of two minus one, as a mask).
TICK_MASK = 4095

#: States an ejection-chain search may visit before it gives up (the start's effort per circuit).
MAX_CHAIN_STATES = 20_000
#: Steps past the shortest ejection chain that the search still looks at for a cheaper one.
CHAIN_SLACK = 0


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


def _euler_circuits(
    nodes: int, ends: Sequence[tuple[int, int]], tick: Tick = None
) -> list[list[tuple[int, int]]]:
    """Closed trails covering every edge of a multigraph of even degrees (loops allowed).

    Each trail is a list of arcs (edge id, tail); consecutive arcs share a vertex. Hierholzer's
    algorithm, iterative; ``tick`` is called every ``TICK_MASK + 1`` steps.
    """
    adjacency: list[list[int]] = [[] for _ in range(nodes)]
    for e, (u, w) in enumerate(ends):
        adjacency[u].append(e)
        if u != w:
            adjacency[w].append(e)
    used = [False] * len(ends)
    pointer = [0] * nodes
    trails = []
    steps = 0
    for start in range(nodes):
        stack: list[tuple[int, int, int]] = [(start, -1, -1)]  # (vertex, edge in, tail)
        trail: list[tuple[int, int]] = []
        while stack:
            steps += 1
            if tick is not None and not steps & TICK_MASK:
                tick()
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
    left: int, right: int, arcs: list[tuple[int, int, int]], degree: int, tick: Tick = None
) -> list[list[int]]:
    """Split a degree-regular bipartite multigraph (id, l, r) into ``degree`` perfect matchings."""
    if tick is not None:
        tick()
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
        return [sorted(matching), *_split_regular_bipartite(left, right, rest, degree - 1, tick)]
    ends = [(lo, left + ro) for _, lo, ro in arcs]
    halves: tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]] = ([], [])
    for trail in _euler_circuits(left + right, ends, tick):
        for position, (index, _) in enumerate(trail):
            halves[position % 2].append(arcs[index])
    return [
        *_split_regular_bipartite(left, right, halves[0], degree // 2, tick),
        *_split_regular_bipartite(left, right, halves[1], degree // 2, tick),
    ]


def two_factor_assignment(
    circuits: Sequence[tuple[int, int, int]], ports: Sequence[Sequence[int]], tick: Tick = None
) -> dict[Key, int] | None:
    """An exact realisation by the 2-factor construction, or None when the theorem does not apply.

    Returns y[i,j,o] > 0. See the module docstring for the construction. ``tick`` is called
    now and then (it may raise to stop the construction).
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
    for trail in _euler_circuits(len(vertices), ends, tick):
        for e, tail in trail:
            a, b = ends[e]
            arcs.append((e, tail, b if a == tail else a))
    factors = _split_regular_bipartite(len(vertices), len(vertices), arcs, sum(k), tick)
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
        self._near: defaultdict[tuple[int, int], Counter[int]] | None = None
        self.placed: Counter[Pair] = Counter()
        self.y0: Counter[Key] = Counter(
            {(i, j, o): y0 for i, j, o, y0 in p.current if p.is_live(i, j, o)}
        )
        self.open = [{o for o in self.live if self.free[b][o] > 0} for b in range(p.blocks)]
        """Live OCS on which each block has a free port."""
        self.locked = p.keep_surviving
        """Whether circuits of y0 may not be moved (``keep_surviving``)."""
        self.tick: Tick = None
        """Called now and then by the long searches (it may raise to stop them)."""

    @property
    def near(self) -> defaultdict[tuple[int, int], Counter[int]]:
        """(block u, OCS o) -> circuits of u on o per far end; built from y when first needed.

        Only the ejection chains and the alternating trails read it, so a start whose circuits
        all go in directly (a million-GPU layer re-placing a failed device's) never builds it.
        """
        if self._near is None:
            near: defaultdict[tuple[int, int], Counter[int]] = defaultdict(Counter)
            for (a, b, o), k in self.y.items():
                near[a, o][b] += k
                near[b, o][a] += k
            self._near = near
        return self._near

    def load(self, i: int, j: int, o: int, count: int) -> None:
        """Add circuits known to fit, without the open sets (``reopen`` brings them up to date)."""
        self.y[i, j, o] += count
        self.placed[i, j] += count
        self.free[i][o] -= count
        self.free[j][o] -= count

    def reopen(self) -> None:
        """The open sets from the free ports (after ``load``)."""
        self.open = [{o for o in self.live if self.free[b][o] > 0} for b in range(self.p.blocks)]

    def move(self, i: int, j: int, o: int, count: int) -> None:
        """Add (count > 0) or take away (count < 0) circuits i-j on OCS o."""
        a, b = min(i, j), max(i, j)
        self.y[a, b, o] += count
        if not self.y[a, b, o]:
            del self.y[a, b, o]
        self.placed[a, b] += count
        near = self._near
        for u, w in ((a, b), (b, a)):
            self.free[u][o] -= count
            if self.free[u][o] > 0 and o not in self.p.failed_devices:
                self.open[u].add(o)
            else:
                self.open[u].discard(o)
            if near is not None:
                around = near[u, o]
                around[w] += count
                if not around[w]:
                    del around[w]

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
                for z, count in sorted(self.near[full, d].items()):
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
            for w in sorted(self.near[v, c]):
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
                if self.tick is not None:
                    self.tick()
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


def _fill(p: AssignmentProblem, layout: _Layout, tick: Tick = None) -> dict[Key, int]:
    """Place the missing circuits: where two free ports meet, else by a chain, else a trail."""
    missing = [
        (i, j)
        for (i, j), x in sorted(p.live_target().items(), key=lambda item: (-item[1], item[0]))
        for _ in range(x - layout.placed[i, j])
    ]
    later = []
    for n, pair in enumerate(missing):
        if tick is not None and not n & TICK_MASK:
            tick()
        if not layout.place_directly(*pair):
            later.append(pair)
    for pair in later:
        if tick is not None:
            tick()
        if not (layout.place_directly(*pair) or layout.place_by_chain(*pair)):
            layout.place_by_trail(*pair)
    return dict(layout.y)


def _in_bounds(p: AssignmentProblem) -> Callable[[int, int, int], bool]:
    """Whether the model has a variable y[i,j,o] (a key of ``variable_bounds``), key by key.

    The full table holds pairs x devices entries: 17.6 million at a million GPUs.
    """
    target = p.live_target()
    failed = p.failed_devices
    ports = p.ports

    def has(i: int, j: int, o: int) -> bool:
        x = target.get((i, j), 0)
        return (
            x > 0
            and 0 <= o < p.devices
            and o not in failed
            and min(x, ports[i][o], ports[j][o]) > 0
        )

    return has


def _load_current(
    p: AssignmentProblem, layout: _Layout, has: Callable[[int, int, int], bool]
) -> None:
    """Keep what is still live of y0 and fits, in sorted order (each up to what still fits).

    When everything kept fits whole (no block's ports and no pair's target exceeded by the
    circuits kept), the order cannot matter and the circuits are loaded in bulk; otherwise one
    by one, each cut to what is left of its ports and its pair's target.
    """
    target = p.live_target()
    kept = [(i, j, o, y0) for i, j, o, y0 in p.current if has(i, j, o)]
    if kept and min(y0 for *_, y0 in kept) > 0:
        rows = np.array(kept, dtype=np.int64)
        ports = np.array(p.ports, dtype=np.int64).reshape(p.blocks, p.devices)
        use = np.bincount(
            np.concatenate([rows[:, 0], rows[:, 1]]) * p.devices
            + np.concatenate([rows[:, 2], rows[:, 2]]),
            weights=np.concatenate([rows[:, 3], rows[:, 3]]),
            minlength=p.blocks * p.devices,
        ).reshape(p.blocks, p.devices)
        per_pair: Counter[Pair] = Counter()
        for i, j, _, y0 in kept:
            per_pair[i, j] += y0
        if (use <= ports).all() and all(k <= target[pair] for pair, k in per_pair.items()):
            for i, j, o, y0 in kept:
                layout.load(i, j, o, y0)
            layout.reopen()
            return
    for i, j, o, y0 in sorted(kept):
        fits = min(layout.free[i][o], layout.free[j][o], target[i, j] - layout.placed[i, j])
        if min(y0, fits) > 0:
            layout.move(i, j, o, min(y0, fits))


def starting_assignment(
    p: AssignmentProblem, bounds: Mapping[Key, int] | None = None, tick: Tick = None
) -> dict[Key, int]:
    """A valid (ports never exceeded, y <= x) start, exact whenever the theorem applies.

    With a current assignment: keep what is still live and fits, place what is missing where
    two free ports meet, then by ejection chains, then by alternating trails (circuits of y0
    stay put under ``keep_surviving``). Without: the 2-factor construction on the live OCS and
    blocks when it applies, else the same placement from nothing. Circuits it cannot place stay
    missing. ``bounds``: the model's variable bounds, when built (else each key is checked on
    its own); ``tick`` is called now and then (it may raise to stop the construction).
    """
    target = p.live_target()
    if not p.current:
        live = [
            tuple(0 if o in p.failed_devices else p.ports[b][o] for o in range(p.devices))
            for b in range(p.blocks)
        ]
        built = two_factor_assignment([(i, j, x) for (i, j), x in target.items()], live, tick)
        if built is not None:
            return built
    if bounds is None:
        has = _in_bounds(p)
    else:
        table = bounds

        def has(i: int, j: int, o: int) -> bool:
            return (i, j, o) in table

    layout = _Layout(p)
    layout.tick = tick
    _load_current(p, layout, has)
    return _fill(p, layout, tick)
