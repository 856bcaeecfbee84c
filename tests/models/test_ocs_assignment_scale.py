"""OCS circuit assignment at scale: the bulk paths say what the one-by-one paths say.

The validator's bulk check, the churn on arrays, the start's key-by-key bounds and its bulk load
of the circuits in service are each compared with the plain computation they replace (kept here
as a reference), and the long constructions stop when their tick says so.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest

from models import ocs_assignment as oa
from models import ocs_spread as sp
from models.ocs_assignment import validation
from models.ocs_assignment.constructions import _fill, _Layout
from models.ocs_assignment.data import AssignmentProblem, Key
from tests.models.test_ocs_assignment import BREAKERS, VALID, random_topology, solved

SEEDS = range(12)


class Stop(Exception):
    """Raised by a tick to stop a construction."""


def stop_at_once() -> None:
    raise Stop


# --------------------------------------------------------------------------- references


def reference_churn(
    old: tuple[tuple[int, int, int, int], ...], new: tuple[tuple[int, int, int, int], ...]
) -> tuple[int, int]:
    """(removed, added) summed key by key with Counters (the churn before arrays)."""
    before: Counter[Key] = Counter()
    after: Counter[Key] = Counter()
    for i, j, o, y in old:
        before[i, j, o] += y
    for i, j, o, y in new:
        after[i, j, o] += y
    keys = before.keys() | after.keys()
    return (
        sum(max(0, before[k] - after[k]) for k in keys),
        sum(max(0, after[k] - before[k]) for k in keys),
    )


def reference_start(p: AssignmentProblem) -> dict[Key, int]:
    """The start with the full bounds table and the circuits in service loaded one by one."""
    target = p.live_target()
    if not p.current:
        return oa.starting_assignment(p)
    bounds = oa.variable_bounds(p)
    layout = _Layout(p)
    for i, j, o, y0 in sorted(p.current):
        if (i, j, o) in bounds:
            fits = min(layout.free[i][o], layout.free[j][o], target[i, j] - layout.placed[i, j])
            if min(y0, fits) > 0:
                layout.move(i, j, o, min(y0, fits))
    return _fill(p, layout)


def in_service(seed: int, *, overfull: bool, keep: bool) -> AssignmentProblem:
    """A layer with circuits in service, a failed device and a changed target.

    ``overfull``: the circuits in service ask more ports than a device has somewhere (as a
    shrunken cabling would), so they cannot all be kept whole.
    """
    rng = random.Random(seed)
    n, m, ports = rng.randint(4, 9), rng.randint(2, 5), rng.choice((2, 4))
    cabling = tuple((ports,) * m for _ in range(n))
    topology = random_topology(rng, n, m * ports)
    current = oa.starting_assignment(AssignmentProblem(n, m, cabling, topology))
    service = tuple(sorted((i, j, o, k) for (i, j, o), k in current.items() if k > 0))
    if overfull:
        cabling = tuple(tuple(max(0, v - rng.randint(0, 2)) for v in row) for row in cabling)
    target = Counter({(i, j): x for i, j, x in topology})
    for _ in range(rng.randint(0, 3)):
        i, j = sorted(rng.sample(range(n), 2))
        target[i, j] += rng.choice((-1, 1))
    circuits = tuple((i, j, x) for (i, j), x in sorted(target.items()) if x > 0)
    return AssignmentProblem(
        n,
        m,
        cabling,
        circuits,
        current=service,
        failed_devices=frozenset({rng.randrange(m)}),
        min_churn=True,
        keep_surviving=keep,
    )


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("seed", SEEDS)
def test_churn_on_arrays_equals_the_counters(seed: int) -> None:
    rng = random.Random(seed)

    def rows(k: int) -> tuple[tuple[int, int, int, int], ...]:
        return tuple(
            (rng.randrange(3), 3 + rng.randrange(3), rng.randrange(4), rng.randint(1, 3))
            for _ in range(k)
        )

    old, new = rows(rng.randint(0, 12)), rows(rng.randint(0, 12))
    assert oa.churn(old, new) == reference_churn(old, new)


@pytest.mark.parametrize("keep", [False, True], ids=["free", "keep"])
@pytest.mark.parametrize("overfull", [False, True], ids=["fits", "overfull"])
@pytest.mark.parametrize("seed", SEEDS)
def test_the_start_equals_the_one_by_one_start(seed: int, overfull: bool, keep: bool) -> None:
    p = in_service(seed, overfull=overfull, keep=keep)
    expected = reference_start(p)
    assert oa.starting_assignment(p) == expected
    assert oa.starting_assignment(p, oa.variable_bounds(p)) == expected


@pytest.mark.parametrize("case", list(VALID))
def test_the_bulk_check_passes_what_the_walk_passes(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = VALID[case]()
    result = oa.solve(oa.build(problem), time_limit_s=30.0)
    monkeypatch.setattr(validation, "BULK_CHECK_FROM", 0)
    assert validation._clean(problem, result)
    assert oa.validate_assignment(problem, result) == []


@pytest.mark.parametrize("breaker", list(BREAKERS))
def test_the_bulk_check_never_passes_a_broken_assignment(
    breaker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = VALID["even ports"]()
    broken = BREAKERS[breaker](problem, solved(problem))
    walked = oa.validate_assignment(problem, broken)
    monkeypatch.setattr(validation, "BULK_CHECK_FROM", 0)
    assert not validation._clean(problem, broken)
    assert oa.validate_assignment(problem, broken) == walked != []


@pytest.mark.parametrize("failed", ["device", "block", "unkept"])
def test_the_bulk_check_sees_failures_and_unkept_circuits(
    failed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = VALID["keep surviving"]()
    result = solved(problem)
    first = result.circuits[0]
    if failed == "device":
        problem = replace(problem, failed_devices=problem.failed_devices | {first[2]})
    elif failed == "block":
        problem = replace(problem, failed_blocks=frozenset({first[0]}))
    else:
        live = next(c for c in problem.current if c[2] not in problem.failed_devices)
        kept = tuple(c for c in result.circuits if c[:3] != live[:3])
        removed, added = oa.churn(problem.current, kept)
        result = replace(
            result,
            circuits=kept,
            realised=sum(c[3] for c in kept),
            removed=removed,
            added=added,
        )
    walked = oa.validate_assignment(problem, result)
    monkeypatch.setattr(validation, "BULK_CHECK_FROM", 0)
    assert not validation._clean(problem, result)
    assert oa.validate_assignment(problem, result) == walked != []


def test_a_tick_stops_the_two_factor_construction() -> None:
    circuits = random_topology(random.Random(1), 12, 16)
    ports = [[4] * 4 for _ in range(12)]
    assert oa.two_factor_assignment(circuits, ports) is not None
    with pytest.raises(Stop):
        oa.two_factor_assignment(circuits, ports, stop_at_once)


def test_a_tick_stops_the_start_after_a_failure() -> None:
    p = in_service(3, overfull=False, keep=True)
    with pytest.raises(Stop):
        oa.starting_assignment(p, tick=stop_at_once)


def test_a_tick_stops_the_spread() -> None:
    pairs = tuple((i, j, 3) for i in range(6) for j in range(i + 1, 6))
    problem = sp.SpreadProblem(6, 2, 8, pairs)
    assert sp.spread(problem).status.has_solution
    with pytest.raises(Stop):
        sp.spread(problem, tick=stop_at_once)
