"""OCS circuit assignment: validator, brute force, Petersen's theorem, min-churn re-solves.

The brute force below enumerates every assignment with itertools and checks each rule directly;
it shares no code with the model.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
from ortools.sat.python import cp_model

from models import ocs_assignment as oa
from models.ocs_assignment import Assignment, AssignmentProblem, BuildOptions
from models.status import Status

#: Time limit of every solve in these tests; all of them prove optimality far below it.
TIME_LIMIT_S = 30.0

Circuits = tuple[tuple[int, int, int], ...]
Layout = dict[tuple[int, int, int], int]


# --------------------------------------------------------------------------- helpers


def uniform_ports(blocks: int, devices: int, ports: int) -> tuple[tuple[int, ...], ...]:
    return tuple((ports,) * devices for _ in range(blocks))


def random_topology(rng: random.Random, blocks: int, max_degree: int) -> Circuits:
    """A maximal random x: add one circuit between random pairs until no pair has room."""
    degree = [0] * blocks
    x: Counter[tuple[int, int]] = Counter()
    while True:
        room = [
            (i, j)
            for i in range(blocks)
            for j in range(i + 1, blocks)
            if degree[i] < max_degree and degree[j] < max_degree
        ]
        if not room:
            return tuple((i, j, k) for (i, j), k in sorted(x.items()))
        i, j = rng.choice(room)
        x[i, j] += 1
        degree[i] += 1
        degree[j] += 1


DEFAULT_OPTIONS = BuildOptions()


def solved(problem: AssignmentProblem, options: BuildOptions = DEFAULT_OPTIONS) -> Assignment:
    """Build, solve and validate."""
    result = oa.solve(oa.build(problem, options), time_limit_s=TIME_LIMIT_S)
    assert oa.validate_assignment(problem, result) == []
    return result


def layout(circuits: tuple[tuple[int, int, int, int], ...]) -> Layout:
    return {(i, j, o): y for i, j, o, y in circuits}


def as_assignment(problem: AssignmentProblem, y: Layout) -> Assignment:
    circuits = tuple(sorted((i, j, o, v) for (i, j, o), v in y.items() if v))
    removed, added = oa.churn(problem.current, circuits)
    realised = sum(y.values())
    return Assignment(Status.FEASIBLE, circuits, realised, problem.requested, removed, added, 0.0)


# --------------------------------------------------------------------------- brute force


def compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every way to write total as an ordered sum of ``parts`` non-negative integers."""
    for split in itertools.product(range(total + 1), repeat=parts):
        if sum(split) == total:
            yield split


def all_assignments(problem: AssignmentProblem) -> Iterator[Layout]:
    """Every assignment that satisfies the rules, by enumeration with itertools."""
    partial = problem.best_effort or problem.failed_devices or problem.failed_blocks
    devices = [o for o in range(problem.devices) if o not in problem.failed_devices]
    pairs = [(i, j, x) for i, j, x in problem.circuits if x > 0]
    options = []
    for i, j, x in pairs:
        dead = i in problem.failed_blocks or j in problem.failed_blocks
        totals = [0] if dead else range(x + 1) if partial else [x]
        options.append([split for t in totals for split in compositions(t, len(devices))])
    for choice in itertools.product(*options):
        used: Counter[tuple[int, int]] = Counter()
        y: Layout = {}
        for (i, j, _), split in zip(pairs, choice, strict=True):
            for o, count in zip(devices, split, strict=True):
                if count:
                    y[i, j, o] = count
                    used[i, o] += count
                    used[j, o] += count
        if any(n > problem.ports[b][o] for (b, o), n in used.items()):
            continue
        before = {(i, j, o): v for i, j, o, v in problem.current}
        if problem.keep_surviving and any(
            y.get(k, 0) < v
            for k, v in before.items()
            if k[2] not in problem.failed_devices and not {k[0], k[1]} & problem.failed_blocks
        ):
            continue
        yield y


def brute_best(problem: AssignmentProblem) -> tuple[int, int] | None:
    """(realised, churn) of the best assignment (max realised, then min churn), None if none."""
    before = {(i, j, o): v for i, j, o, v in problem.current}
    best = None
    for y in all_assignments(problem):
        realised = sum(y.values())
        moved = sum(abs(y.get(k, 0) - before.get(k, 0)) for k in y.keys() | before.keys())
        key = (-realised, moved if problem.min_churn else 0)
        if best is None or key < best:
            best = key
    return None if best is None else (-best[0], best[1])


def tiny_problem(seed: int) -> AssignmentProblem:
    """3-4 blocks, 2-3 OCS, 0-2 ports per block and OCS, at most 4 pairs of 1-2 circuits."""
    rng = random.Random(seed)
    n, m = rng.choice((3, 4)), rng.choice((2, 3))
    ports = tuple(tuple(rng.choice((0, 1, 1, 2)) for _ in range(m)) for _ in range(n))
    every = [(i, j) for i in range(n) for j in range(i + 1, n)]
    pairs = rng.sample(every, rng.randint(1, min(4, len(every))))
    circuits = tuple(sorted((i, j, rng.choice((1, 1, 2))) for i, j in pairs))
    return AssignmentProblem(n, m, ports, circuits)


def tiny_in_service(seed: int) -> tuple[AssignmentProblem, random.Random]:
    """A tiny realisable problem with a current assignment drawn from all its assignments."""
    for attempt in itertools.count():
        problem = tiny_problem(1000 * seed + attempt)
        every = list(all_assignments(problem))
        if every:
            rng = random.Random(seed)
            y0 = rng.choice(every)
            current = tuple(sorted((i, j, o, v) for (i, j, o), v in y0.items()))
            return replace(problem, current=current, min_churn=True), rng
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- churn and data


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ((), (), (0, 0)),
        (((0, 1, 0, 2),), ((0, 1, 0, 2),), (0, 0)),
        (((0, 1, 0, 2),), ((0, 1, 1, 2),), (2, 2)),
        (((0, 1, 0, 2),), ((0, 1, 0, 1), (0, 1, 1, 1)), (1, 1)),
        (((0, 1, 0, 1), (1, 2, 0, 1)), ((0, 1, 0, 3),), (1, 2)),
    ],
)
def test_churn_counts_changed_circuits(
    old: tuple[tuple[int, int, int, int], ...],
    new: tuple[tuple[int, int, int, int], ...],
    expected: tuple[int, int],
) -> None:
    assert oa.churn(old, new) == expected


def test_circuits_from_matrix_reads_the_upper_triangle() -> None:
    x = [[0, 2, 0], [2, 0, 1], [0, 1, 0]]
    assert oa.circuits_from_matrix(x) == ((0, 1, 2), (1, 2, 1))


BAD_PROBLEMS = {
    "ports shape": AssignmentProblem(2, 2, ((1, 1),), ((0, 1, 1),)),
    "negative ports": AssignmentProblem(2, 1, ((1,), (-1,)), ((0, 1, 1),)),
    "i >= j": AssignmentProblem(2, 1, ((1,), (1,)), ((1, 0, 1),)),
    "pair twice": AssignmentProblem(2, 1, ((2,), (2,)), ((0, 1, 1), (0, 1, 1))),
    "negative x": AssignmentProblem(2, 1, ((1,), (1,)), ((0, 1, -1),)),
    "current device": AssignmentProblem(2, 1, ((1,), (1,)), ((0, 1, 1),), ((0, 1, 3, 1),)),
    "current zero": AssignmentProblem(2, 1, ((1,), (1,)), ((0, 1, 1),), ((0, 1, 0, 0),)),
    "failed device": AssignmentProblem(
        2, 1, ((1,), (1,)), ((0, 1, 1),), failed_devices=frozenset({4})
    ),
    "failed block": AssignmentProblem(
        2, 1, ((1,), (1,)), ((0, 1, 1),), failed_blocks=frozenset({-1})
    ),
}


@pytest.mark.parametrize("name", list(BAD_PROBLEMS))
def test_bad_data_is_rejected_before_build(name: str) -> None:
    problem = BAD_PROBLEMS[name]
    assert oa.check_problem(problem)
    with pytest.raises(ValueError, match=r"."):
        oa.build(problem)


# --------------------------------------------------------------------------- model structure


def test_variables_exist_only_where_a_circuit_can_go() -> None:
    """Live pairs with x > 0 on live OCS with a non-empty domain min(x, P_i, P_j)."""
    ports = ((2, 1, 2), (3, 0, 2), (1, 1, 2), (2, 2, 2))
    circuits = ((0, 1, 3), (0, 2, 1), (1, 3, 1), (2, 3, 2))
    problem = AssignmentProblem(
        4, 3, ports, circuits, failed_devices=frozenset({2}), failed_blocks=frozenset({3})
    )
    built = oa.build(problem)
    assert built.v.ub == {(0, 1, 0): 2, (0, 2, 0): 1, (0, 2, 1): 1}


def test_port_rows_are_written_only_where_they_can_bind() -> None:
    """With ports to spare, only the realisation rows remain."""
    circuits = ((0, 1, 1), (0, 2, 1), (1, 2, 1))
    plain = BuildOptions(symmetry_breaking=False)
    built = oa.build(AssignmentProblem(3, 2, uniform_ports(3, 2, 4), circuits), plain)
    assert len(built.model.proto.constraints) == len(circuits)
    tight = oa.build(AssignmentProblem(3, 2, uniform_ports(3, 2, 1), circuits), plain)
    assert len(tight.model.proto.constraints) == len(circuits) + 3 * 2


@pytest.mark.parametrize(
    ("min_churn", "keep", "classes"),
    [(False, False, [[0, 1, 2]]), (True, False, []), (False, True, [])],
)
def test_device_symmetry_only_when_y0_plays_no_part(
    min_churn: bool, keep: bool, classes: list[list[int]]
) -> None:
    problem = AssignmentProblem(
        3,
        4,
        ((1, 1, 1, 2),) * 3,
        ((0, 1, 1), (1, 2, 1)),
        current=((0, 1, 0, 1),),
        min_churn=min_churn,
        keep_surviving=keep,
    )
    groups, _ = oa.device_symmetry(problem)
    assert groups == classes


@pytest.mark.parametrize("seed", range(6))
def test_start_meets_the_symmetry_order(seed: int) -> None:
    """The relabelled start satisfies the symmetry-breaking rows: CP-SAT accepts it fixed."""
    rng = random.Random(seed)
    n, m = rng.randint(4, 12), rng.randint(2, 6)
    problem = AssignmentProblem(n, m, uniform_ports(n, m, 2), random_topology(rng, n, 2 * m))
    built = oa.build(problem)
    assert "device.symmetry" in built.families
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    assert solver.solve(built.model) == cp_model.OPTIMAL


# --------------------------------------------------------------------------- validator

TRIANGLE = ((0, 1, 1), (0, 2, 1), (1, 2, 1))
PETERSEN = tuple(
    sorted(
        (min(a, b), max(a, b), 1)
        for a, b in [(i, (i + 1) % 5) for i in range(5)]
        + [(i, i + 5) for i in range(5)]
        + [(5 + i, 5 + (i + 2) % 5) for i in range(5)]
    )
)


def _in_service(problem: AssignmentProblem, **changes: object) -> AssignmentProblem:
    """The problem with its own solution as the current assignment, then the changes."""
    y0 = solved(problem)
    return replace(problem, current=y0.circuits, **changes)  # type: ignore[arg-type]


VALID = {
    "even ports": lambda: AssignmentProblem(
        6, 3, uniform_ports(6, 3, 2), random_topology(random.Random(1), 6, 6)
    ),
    "one port, K4 on 3 OCS": lambda: AssignmentProblem(
        4, 3, uniform_ports(4, 3, 1), tuple((i, j, 1) for i in range(4) for j in range(i + 1, 4))
    ),
    "min churn, new target": lambda: replace(
        _in_service(AssignmentProblem(5, 3, uniform_ports(5, 3, 2), TRIANGLE + ((3, 4, 2),))),
        circuits=TRIANGLE + ((3, 4, 1), (0, 4, 1)),
        min_churn=True,
    ),
    "failed device": lambda: _in_service(
        AssignmentProblem(6, 4, uniform_ports(6, 4, 2), random_topology(random.Random(2), 6, 6)),
        failed_devices=frozenset({1}),
        min_churn=True,
    ),
    "failed block": lambda: _in_service(
        AssignmentProblem(6, 4, uniform_ports(6, 4, 2), random_topology(random.Random(3), 6, 8)),
        failed_blocks=frozenset({0}),
        min_churn=True,
    ),
    "keep surviving": lambda: _in_service(
        AssignmentProblem(6, 4, uniform_ports(6, 4, 2), random_topology(random.Random(4), 6, 8)),
        failed_devices=frozenset({0}),
        min_churn=True,
        keep_surviving=True,
    ),
    "best effort, odd ports": lambda: AssignmentProblem(
        3, 2, uniform_ports(3, 2, 1), TRIANGLE, best_effort=True
    ),
}


@pytest.fixture(params=list(VALID))
def valid(request: pytest.FixtureRequest) -> tuple[AssignmentProblem, Assignment]:
    problem = VALID[request.param]()
    result = oa.solve(oa.build(problem), time_limit_s=TIME_LIMIT_S)
    assert result.status is Status.OPTIMAL
    return problem, result


def test_validator_passes_every_solver_result(valid: tuple[AssignmentProblem, Assignment]) -> None:
    problem, result = valid
    assert oa.validate_assignment(problem, result) == []


def _first(result: Assignment) -> tuple[int, int, int, int]:
    return result.circuits[0]


BREAKERS: dict[str, Callable[[AssignmentProblem, Assignment], Assignment]] = {
    "port used twice": lambda p, r: replace(
        r,
        circuits=tuple(
            (i, j, o, y + p.ports[i][o]) if (i, j, o, y) == _first(r) else (i, j, o, y)
            for i, j, o, y in r.circuits
        ),
    ),
    "circuit dropped": lambda p, r: replace(
        r, circuits=r.circuits[1:], realised=r.realised - _first(r)[3]
    ),
    "pair not asked": lambda p, r: replace(
        r, circuits=((0, p.blocks - 1, 0, 1), *r.circuits), realised=r.realised + 1
    ),
    "listed twice": lambda p, r: replace(
        r, circuits=(_first(r), *r.circuits), realised=r.realised + _first(r)[3]
    ),
    "out of range": lambda p, r: replace(r, circuits=((0, 1, p.devices, 1), *r.circuits)),
    "realised miscounted": lambda p, r: replace(r, realised=r.realised + 1),
    "requested miscounted": lambda p, r: replace(r, requested=r.requested - 1),
    "churn miscounted": lambda p, r: replace(r, added=r.added + 1),
    "status without solution": lambda p, r: replace(r, status=Status.INFEASIBLE),
}


@pytest.mark.parametrize("breaker", list(BREAKERS))
def test_validator_rejects_broken_assignments(breaker: str) -> None:
    problem = VALID["even ports"]()
    result = solved(problem)
    assert oa.validate_assignment(problem, BREAKERS[breaker](problem, result))


def test_validator_rejects_circuits_on_failed_devices_and_blocks() -> None:
    problem = _in_service(
        AssignmentProblem(6, 4, uniform_ports(6, 4, 2), random_topology(random.Random(5), 6, 6)),
        min_churn=True,
    )
    stale = as_assignment(problem, layout(problem.current))
    assert oa.validate_assignment(problem, stale) == []
    device = _first(stale)[2]
    block = _first(stale)[0]
    assert any(
        "failed OCS" in s
        for s in oa.validate_assignment(replace(problem, failed_devices=frozenset({device})), stale)
    )
    assert any(
        "failed block" in s
        for s in oa.validate_assignment(replace(problem, failed_blocks=frozenset({block})), stale)
    )


def test_validator_rejects_an_unkept_surviving_circuit() -> None:
    problem = VALID["keep surviving"]()
    result = solved(problem)
    live = next(c for c in problem.current if c[2] not in problem.failed_devices)
    broken = tuple(c for c in result.circuits if c[:3] != live[:3])
    assert any(
        "not kept" in s
        for s in oa.validate_assignment(problem, as_assignment(problem, layout(broken)))
    )


# --------------------------------------------------------------------------- brute force

OPTIONS = {
    "plain": BuildOptions(symmetry_breaking=False, hint=False),
    "symmetry": BuildOptions(symmetry_breaking=True, hint=False),
    "hint": BuildOptions(symmetry_breaking=False, hint=True),
    "both": BuildOptions(),
}


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("options", list(OPTIONS))
def test_feasibility_matches_brute_force(seed: int, options: str) -> None:
    problem = tiny_problem(seed)
    feasible = brute_best(problem) is not None
    result = solved(problem, OPTIONS[options])
    assert result.status is (Status.OPTIMAL if feasible else Status.INFEASIBLE)


SCENARIOS: dict[str, Callable[[AssignmentProblem, random.Random], AssignmentProblem]] = {
    "unchanged": lambda p, rng: p,
    "new target": lambda p, rng: replace(
        p,
        circuits=tuple(
            (i, j, max(0, x + rng.choice((-1, 1)))) if t == 0 else (i, j, x)
            for t, (i, j, x) in enumerate(p.circuits)
        ),
    ),
    "device fails": lambda p, rng: replace(p, failed_devices=frozenset({rng.randrange(p.devices)})),
    "block fails": lambda p, rng: replace(p, failed_blocks=frozenset({rng.randrange(p.blocks)})),
    "keep surviving": lambda p, rng: replace(
        p, failed_devices=frozenset({rng.randrange(p.devices)}), keep_surviving=True
    ),
    "best effort, no churn": lambda p, rng: replace(
        p, failed_devices=frozenset({rng.randrange(p.devices)}), min_churn=False
    ),
}


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_reassignment_matches_brute_force(seed: int, scenario: str) -> None:
    """Max realised, then min churn: the same optimum as enumeration."""
    base, rng = tiny_in_service(seed)
    problem = SCENARIOS[scenario](base, rng)
    best = brute_best(problem)
    built = oa.build(problem)
    result = oa.solve(built, time_limit_s=TIME_LIMIT_S)
    assert oa.validate_assignment(problem, result) == []
    if best is None:
        assert result.status is Status.INFEASIBLE
        return
    assert result.status is Status.OPTIMAL
    realised, moved = best
    assert result.realised == realised
    if problem.min_churn:
        assert result.removed + result.added == moved
    if built.floor is not None:
        assert built.floor <= objective(problem, result)


def objective(problem: AssignmentProblem, result: Assignment) -> int:
    """The model's objective, from the counts: A, -R or A - (X + 1) R."""
    if problem.exact:
        return result.added
    if not problem.min_churn:
        return -result.realised
    dead = problem.failed_blocks
    live = sum(x for i, j, x in problem.circuits if not {i, j} & dead)
    return result.added - (live + 1) * result.realised


# --------------------------------------------------------------------------- Petersen's theorem


@pytest.mark.parametrize("seed", range(12))
def test_even_ports_always_realise(seed: int) -> None:
    """Random maximal x with P[b,o] >= 2 k_o: the theorem holds, 2-factors and CP-SAT realise x."""
    rng = random.Random(seed)
    n, m = rng.randint(4, 16), rng.randint(2, 8)
    k = [rng.choice((1, 1, 2)) for _ in range(m)]
    ports = tuple(tuple(2 * k[o] + rng.choice((0, 0, 1)) for o in range(m)) for _ in range(n))
    circuits = random_topology(rng, n, 2 * sum(k))
    assert oa.realisable_by_theorem(circuits, ports)
    problem = AssignmentProblem(n, m, ports, circuits)
    start = oa.two_factor_assignment(circuits, ports)
    assert start is not None
    assert oa.validate_assignment(problem, as_assignment(problem, start)) == []
    result = solved(problem)
    assert result.status is Status.OPTIMAL
    assert result.realised == result.requested


def test_even_ports_at_full_degree_realise() -> None:
    """Every block on every port: K_9 doubled (degree 16) on 4 OCS of 4 ports."""
    circuits = tuple((i, j, 2) for i in range(9) for j in range(i + 1, 9))
    ports = uniform_ports(9, 4, 4)
    assert oa.realisable_by_theorem(circuits, ports)
    result = solved(AssignmentProblem(9, 4, ports, circuits))
    assert result.status is Status.OPTIMAL


@pytest.mark.parametrize(
    ("name", "blocks", "devices", "circuits"),
    [("triangle on 2 OCS", 3, 2, TRIANGLE), ("Petersen graph on 3 OCS", 10, 3, PETERSEN)],
)
def test_odd_ports_can_be_infeasible(
    name: str, blocks: int, devices: int, circuits: Circuits
) -> None:
    """One port per block and OCS: edge colouring. Degrees fit (every block has degree = m) yet
    the chromatic index is m + 1, so INFEASIBLE, and the theorem does not claim otherwise."""
    ports = uniform_ports(blocks, devices, 1)
    degree = Counter(b for i, j, _ in circuits for b in (i, j))
    assert set(degree.values()) == {devices}
    assert not oa.realisable_by_theorem(circuits, ports)
    result = solved(AssignmentProblem(blocks, devices, ports, circuits))
    assert result.status is Status.INFEASIBLE


def test_theorem_is_sufficient_not_necessary() -> None:
    """3 ports per OCS count as 2 (k_o = 1), so the guarantee stops at degree 4 on 2 OCS; a star
    of degree 5 is still realisable (3 circuits on one OCS, 2 on the other)."""
    ports = uniform_ports(3, 2, 3)
    assert oa.realisable_by_theorem(((0, 1, 2), (0, 2, 2)), ports)
    star = ((0, 1, 3), (0, 2, 2))
    assert not oa.realisable_by_theorem(star, ports)
    assert oa.two_factor_assignment(star, ports) is None
    assert solved(AssignmentProblem(3, 2, ports, star)).status is Status.OPTIMAL


@pytest.mark.parametrize("seed", range(20))
def test_start_respects_every_port_and_target(seed: int) -> None:
    """The constructive start (hint) never breaks a rule, whatever the data."""
    base, rng = tiny_in_service(seed)
    for scenario in SCENARIOS.values():
        problem = replace(scenario(base, rng), best_effort=True)
        start = oa.starting_assignment(problem)
        assert oa.validate_assignment(problem, as_assignment(problem, start)) == []


# --------------------------------------------------------------------------- min churn at size


def in_service(seed: int, slack: bool) -> AssignmentProblem:
    """8-16 blocks, 4-8 OCS, 2 ports each; x maximal within 2(m - 1) (tight) or m - 1 (slack)."""
    rng = random.Random(seed)
    n, m = rng.randint(8, 16), rng.randint(4, 8)
    circuits = random_topology(rng, n, m - 1 if slack else 2 * (m - 1))
    problem = AssignmentProblem(n, m, uniform_ports(n, m, 2), circuits)
    y0 = solved(problem)
    assert y0.status is Status.OPTIMAL
    return replace(problem, current=y0.circuits, min_churn=True)


def busiest_device(problem: AssignmentProblem) -> int:
    load: Counter[int] = Counter()
    for _, _, o, y in problem.current:
        load[o] += y
    return max(sorted(load), key=lambda o: load[o])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("slack", [True, False], ids=["slack", "tight"])
def test_unchanged_resolve_changes_nothing(seed: int, slack: bool) -> None:
    problem = in_service(seed, slack)
    result = solved(problem)
    assert result.status is Status.OPTIMAL
    assert (result.removed, result.added) == (0, 0)
    assert result.circuits == problem.current


@pytest.mark.parametrize("seed", range(8))
def test_device_failure_with_slack_keeps_every_surviving_circuit(seed: int) -> None:
    """Spare ports: the lost circuits fit around the kept ones, so every optimum keeps them all."""
    problem = in_service(seed, slack=True)
    failed = busiest_device(problem)
    lost = sum(y for _, _, o, y in problem.current if o == failed)
    result = solved(replace(problem, failed_devices=frozenset({failed})))
    assert result.status is Status.OPTIMAL
    assert result.realised == result.requested
    new = layout(result.circuits)
    assert all(new.get((i, j, o), 0) >= y for i, j, o, y in problem.current if o != failed)
    assert (result.removed, result.added) == (lost, lost)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("slack", [True, False], ids=["slack", "tight"])
def test_device_failure_keeps_survivors_iff_keeping_loses_nothing(seed: int, slack: bool) -> None:
    """The exact form of the property (module docstring): the lexicographic optimum keeps every
    surviving circuit if and only if keeping them all still allows the most circuits realised."""
    base = in_service(seed, slack)
    failed = busiest_device(base)
    problem = replace(base, failed_devices=frozenset({failed}))
    free = solved(problem)
    kept = solved(replace(problem, keep_surviving=True))
    assert free.status is Status.OPTIMAL
    assert kept.status is Status.OPTIMAL
    surviving = [(i, j, o, y) for i, j, o, y in base.current if o != failed]
    new = layout(free.circuits)
    keeps_all = all(new.get((i, j, o), 0) >= y for i, j, o, y in surviving)
    assert free.realised >= kept.realised
    assert keeps_all is (free.realised == kept.realised)
    if keeps_all:
        assert free.removed + free.added == kept.removed + kept.added


def test_keeping_survivors_can_cost_a_circuit() -> None:
    """Blocks 0, 1, 2; OCS A = 0, B = 1, F = 2 (fails). 0-1 runs on F, 0-2 on B; block 1 has no
    port on A. Kept, 0-2 leaves 0 only A and 1 only B: 0-1 is lost. Moving 0-2 to A frees B for
    0-1, so the re-solve realises both and must move a surviving circuit."""
    ports = ((1, 1, 1), (0, 1, 1), (1, 1, 0))
    problem = AssignmentProblem(
        3,
        3,
        ports,
        ((0, 1, 1), (0, 2, 1)),
        current=((0, 1, 2, 1), (0, 2, 1, 1)),
        failed_devices=frozenset({2}),
        min_churn=True,
    )
    free = solved(problem)
    kept = solved(replace(problem, keep_surviving=True))
    assert (free.realised, kept.realised) == (2, 1)
    assert free.circuits == ((0, 1, 1, 1), (0, 2, 0, 1))
    assert (free.removed, free.added) == (2, 2)
    assert kept.circuits == ((0, 2, 1, 1),)
    assert (kept.removed, kept.added) == (1, 0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("slack", [True, False], ids=["slack", "tight"])
def test_block_failure_removes_only_its_circuits(seed: int, slack: bool) -> None:
    base = in_service(seed, slack)
    block = busiest_device(base) % base.blocks
    result = solved(replace(base, failed_blocks=frozenset({block})))
    assert result.status is Status.OPTIMAL
    expected = tuple(c for c in base.current if block not in c[:2])
    assert result.circuits == expected
    assert result.added == 0
    assert result.removed == sum(c[3] for c in base.current) - sum(c[3] for c in expected)


#: Time limit of the large re-solve below, which is about validity, not proven optimality.
LARGE_TIME_LIMIT_S = 5.0


@pytest.mark.slow
def test_tight_resolve_at_24_blocks_realises_everything() -> None:
    """x_ij = 2 for all pairs of 24 blocks on 24 OCS of 2 ports (degree 46 of 48); one OCS fails:
    the theorem still holds on 23 OCS, so every circuit must be realised again."""
    n = m = 24
    circuits = tuple((i, j, 2) for i in range(n) for j in range(i + 1, n))
    problem = AssignmentProblem(n, m, uniform_ports(n, m, 2), circuits)
    y0 = solved(problem)
    failed = busiest_device(replace(problem, current=y0.circuits))
    again = replace(
        problem, current=y0.circuits, failed_devices=frozenset({failed}), min_churn=True
    )
    result = oa.solve(oa.build(again), time_limit_s=LARGE_TIME_LIMIT_S)
    assert oa.validate_assignment(again, result) == []
    assert result.status.has_solution
    assert result.realised == result.requested
    lost = sum(y for _, _, o, y in y0.circuits if o == failed)
    assert result.removed >= lost
    assert result.added >= lost


# --------------------------------------------------------------------------- meta

#: Which tests exercise each constraint family.
REGISTER = {
    "pair.realisation": [
        "test_feasibility_matches_brute_force",
        "test_odd_ports_can_be_infeasible",
    ],
    "port.capacity": ["test_port_rows_are_written_only_where_they_can_bind"],
    "circuit.keep": ["test_keeping_survivors_can_cost_a_circuit"],
}


def test_every_constraint_family_has_a_test() -> None:
    assert set(REGISTER) == set(oa.CONSTRAINTS)
    assert all(name in globals() for names in REGISTER.values() for name in names)
