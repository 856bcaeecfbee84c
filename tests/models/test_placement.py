"""Job placement by locality rule and policy against brute force, and worked queues.

The brute force enumerates every feasible allocation with itertools (subsets of the free GPUs, or
of the entirely free whole domains) and shares no code with the model.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable

import numpy as np
import pytest

from models import placement as pl

#: Small hierarchies for the brute force: four levels, equal sizes at two levels, odd sizes,
#: and four nodes a leaf (slices of two nodes have a choice of leaf and of place).
SMALL = {
    "2-4-8-16": (2, 4, 8, 16),
    "4-8-8-24": (4, 8, 8, 24),
    "3-6-18": (3, 6, 18),
    "2-8-16": (2, 8, 16),
}
#: Rules of the brute force, as (level, contiguous).
RULES = {
    "any": (None, False),
    "level0": (0, False),
    "level1": (1, False),
    "level0-contiguous": (0, True),
    "level1-contiguous": (1, True),
}
SEEDS = range(6)
JOB_SIZES = (1, 2, 3, 5, 7, 9, 12)

Allocation = tuple[int, ...]


def hierarchy(sizes: tuple[int, ...]) -> pl.Hierarchy:
    return pl.Hierarchy(tuple(f"level{k}" for k in range(len(sizes))), sizes)


@functools.cache
def free_state(sizes: tuple[int, ...], seed: int) -> tuple[bool, ...]:
    """A random occupied state: each GPU free with a probability drawn per seed."""
    rng = np.random.default_rng(seed)
    share = rng.uniform(0.35, 0.95)
    return tuple(bool(x) for x in rng.random(sizes[-1]) < share)


# --------------------------------------------------------------------------- brute force


def brute_span(sizes: tuple[int, ...], ids: Allocation) -> int:
    """The lowest level one of whose domains holds every id."""
    return min(k for k, s in enumerate(sizes) if len({i // s for i in ids}) == 1)


def meets_rule(
    sizes: tuple[int, ...], ids: Allocation, n: int, level: int | None, contiguous: bool
) -> bool:
    """Whether ``ids`` is an allocation the rule allows a job of n (free or not)."""
    if level is None or n <= sizes[level]:
        return len(ids) == n and (level is None or len({i // sizes[level] for i in ids}) == 1)
    d = sizes[level]
    domains = sorted({i // d for i in ids})
    whole = sorted(ids) == [i for j in domains for i in range(j * d, (j + 1) * d)]
    consecutive = domains[-1] - domains[0] == len(domains) - 1
    return whole and len(domains) == math.ceil(n / d) and (consecutive or not contiguous)


@functools.cache
def feasible(
    sizes: tuple[int, ...], free: tuple[bool, ...], n: int, level: int | None, contiguous: bool
) -> frozenset[Allocation]:
    """Every allocation meeting the rule, as sorted id tuples."""
    if level is None or n <= sizes[level]:
        ids = [i for i, f in enumerate(free) if f]
        return frozenset(
            combo
            for combo in itertools.combinations(ids, n)
            if level is None or len({i // sizes[level] for i in combo}) == 1
        )
    d = sizes[level]
    whole = [j for j in range(len(free) // d) if all(free[j * d : (j + 1) * d])]
    return frozenset(
        tuple(i for j in combo for i in range(j * d, (j + 1) * d))
        for combo in itertools.combinations(whole, math.ceil(n / d))
        if not contiguous or combo[-1] - combo[0] == len(combo) - 1
    )


def placed_by(
    sizes: tuple[int, ...], seed: int, rule: str, n: int, policy: pl.Policy
) -> tuple[Allocation | None, frozenset[Allocation]]:
    """What ``place`` returns (as a tuple) and every feasible allocation."""
    level, contiguous = RULES[rule]
    free = free_state(sizes, seed)
    array = np.array(free)
    ids = pl.place(array, n, hierarchy(sizes), pl.Rule(level, contiguous), policy)
    assert array.tolist() == list(free)
    got = None if ids is None else tuple(ids.tolist())
    if ids is not None:
        assert ids.dtype == np.int64
    return got, feasible(sizes, free, n, level, contiguous)


def applies(name: str, rule: str) -> bool:
    """Whether the rule's level is below the small hierarchy's top (the top is no rule)."""
    level = RULES[rule][0]
    return level is None or level < len(SMALL[name]) - 1


def whole_domains(name: str, rule: str, n: int) -> bool:
    """Whether a job of n takes whole domains under the rule."""
    level = RULES[rule][0]
    return level is not None and n > SMALL[name][level]


BRUTE_CASES = [
    (name, seed, rule, n)
    for name in SMALL
    for seed in SEEDS
    for rule in RULES
    for n in JOB_SIZES
    if applies(name, rule)
]
#: Seeds the fast tier runs; the others run in the slow tier (the brute force is the same).
FAST_SEEDS = 1
#: ``BRUTE_CASES`` as parameters, the later seeds marked slow.
BRUTE_PARAMS = [
    pytest.param(*case, marks=() if case[1] < FAST_SEEDS else pytest.mark.slow)
    for case in BRUTE_CASES
]


@pytest.mark.parametrize("policy", pl.POLICIES)
@pytest.mark.parametrize(("name", "seed", "rule", "n"), BRUTE_PARAMS)
def test_place_finds_a_feasible_placement_iff_one_exists(
    name: str, seed: int, rule: str, n: int, policy: pl.Policy
) -> None:
    got, every = placed_by(SMALL[name], seed, rule, n, policy)
    assert (got is not None) == bool(every)
    if got is not None:
        assert got in every
        assert list(got) == sorted(got)


@pytest.mark.parametrize(("name", "seed", "rule", "n"), BRUTE_PARAMS)
def test_pack_has_the_least_span_in_the_best_fit_domain(
    name: str, seed: int, rule: str, n: int
) -> None:
    sizes = SMALL[name]
    got, every = placed_by(sizes, seed, rule, n, "pack")
    if got is None:
        return
    span = min(brute_span(sizes, a) for a in every)
    assert brute_span(sizes, got) == span
    s, free = sizes[span], free_state(sizes, seed)
    hosts = {a[0] // s for a in every if brute_span(sizes, a) == span}

    level, contiguous = RULES[rule]
    runs = contiguous and level is not None and n > sizes[level]

    def fit(d: int) -> tuple[int, ...]:
        """Free GPUs of the domain, then (not for runs of whole domains) of each domain above
        it, then its id."""
        above = [sizes[k] for k in range(span, span + 1 if runs else len(sizes))]
        return (*(sum(free[d * s // a * a : (d * s // a + 1) * a]) for a in above), d)

    assert got[0] // s == min(hosts, key=fit)


@pytest.mark.parametrize(("name", "seed", "rule", "n"), BRUTE_PARAMS)
def test_first_fit_is_the_lexicographically_smallest(
    name: str, seed: int, rule: str, n: int
) -> None:
    got, every = placed_by(SMALL[name], seed, rule, n, "first_fit")
    assert got == (min(every) if every else None)


def test_the_brute_force_covers_every_outcome() -> None:
    """The states are rich enough: placements and refusals, of GPUs and of whole domains."""
    outcomes = {
        (whole_domains(name, rule, n), bool(every))
        for name, seed, rule, n in BRUTE_CASES
        for every in [placed_by(SMALL[name], seed, rule, n, "pack")[1]]
    }
    assert outcomes == {(False, False), (False, True), (True, False), (True, True)}


# --------------------------------------------------------------------------- queues

QUEUE_CASES = [
    (name, seed, rule, policy)
    for name in SMALL
    for seed in SEEDS
    for rule in RULES
    for policy in pl.POLICIES
    if applies(name, rule)
]


@pytest.mark.parametrize(("name", "seed", "rule", "policy"), QUEUE_CASES)
def test_place_jobs_accounts_for_every_gpu(
    name: str, seed: int, rule: str, policy: pl.Policy
) -> None:
    """Random queues: allocations meet the rule, sums add up, skipped jobs never fit later."""
    sizes, (level, contiguous) = SMALL[name], RULES[rule]
    jobs = np.random.default_rng(seed).integers(1, 10, size=8).tolist()
    result = pl.place_jobs(jobs, hierarchy(sizes), pl.Rule(level, contiguous), policy)
    g = sizes[-1]
    assert result.used_gpus + result.internal_fragmentation_gpus + result.idle_gpus == g
    assert result.utilisation == pytest.approx(result.used_gpus / g)
    assert result.fragmentation_gpus <= result.idle_gpus + result.internal_fragmentation_gpus
    free = tuple(bool(x) for x in result.job_of_gpu == pl.IDLE)
    for job, n in enumerate(jobs):
        ids = tuple(np.flatnonzero(result.job_of_gpu == job).tolist())
        assert result.placed[job] == bool(ids)
        assert result.allocated_gpus[job] == len(ids)
        if ids:
            assert meets_rule(sizes, ids, n, level, contiguous)
            assert result.span_level[job] == brute_span(sizes, ids)
        else:
            assert result.span_level[job] == pl.NOT_PLACED
            assert not feasible(sizes, free, n, level, contiguous)


RAIL = pl.Hierarchy(("node", "cluster"), (8, 32))


@pytest.mark.parametrize("policy", pl.POLICIES)
def test_rail_only_jobs_round_up_to_whole_domains(policy: pl.Policy) -> None:
    """12-GPU jobs on 8-GPU scale-up domains take 16 each; a third finds nothing."""
    result = pl.place_jobs([12, 12, 12], RAIL, pl.Rule(level=0), policy)
    assert result.placed.tolist() == [True, True, False]
    assert result.allocated_gpus.tolist() == [16, 16, 0]
    assert result.span_level.tolist() == [1, 1, pl.NOT_PLACED]
    assert result.internal_fragmentation_gpus == 8
    assert (result.used_gpus, result.idle_gpus, result.stranded_gpus) == (24, 0, 0)
    assert result.fragmentation_gpus == 8
    assert result.utilisation == pytest.approx(0.75)


@pytest.mark.parametrize("policy", pl.POLICIES)
def test_backfill_places_a_small_job_behind_a_blocked_one(policy: pl.Policy) -> None:
    """The 20-GPU job needs three whole nodes of the two left; the 4-GPU job behind it runs."""
    result = pl.place_jobs([12, 20, 4], RAIL, pl.Rule(level=0), policy)
    assert result.placed.tolist() == [True, False, True]
    assert (result.job_of_gpu == 2).sum() == 4
    assert result.idle_gpus == 12
    assert result.stranded_gpus == 0


@pytest.mark.parametrize(
    ("sizes", "level", "jobs", "idle", "stranded"),
    [
        # two nodes with one GPU left each cannot host a 2-GPU job
        ((4, 8), 0, [3, 3, 2], 2, 2),
        # two leaves with three GPUs left each cannot host a 6-GPU job
        ((4, 8, 16), 1, [5, 5, 6], 6, 6),
        # three GPUs left on node 1 and node 3 empty: a 5-GPU job needs two whole nodes
        ((4, 16), 0, [4, 1, 4, 5], 7, 5),
        # the 9-GPU job waits but is larger than the idle GPUs: not stranded
        ((4, 8, 16), 1, [5, 5, 9], 6, 0),
    ],
)
@pytest.mark.parametrize("policy", pl.POLICIES)
def test_stranded_gpus(
    sizes: tuple[int, ...],
    level: int,
    jobs: list[int],
    idle: int,
    stranded: int,
    policy: pl.Policy,
) -> None:
    result = pl.place_jobs(jobs, hierarchy(sizes), pl.Rule(level=level), policy)
    assert not result.placed[-1]
    assert result.placed[:-1].all()
    assert (result.idle_gpus, result.stranded_gpus) == (idle, stranded)
    assert result.fragmentation_gpus == result.internal_fragmentation_gpus + stranded


def test_pack_keeps_a_whole_node_that_first_fit_splits() -> None:
    """Nodes of 4: first fit puts the 1- and 2-GPU jobs into empty node 2's path, pack does not.

    After [2, 3] node 0 has 2 free, node 1 one. First fit sends 1 to node 0, so 2 must open
    node 2 and the 4-GPU job finds no whole node; pack sends 1 to node 1 and 2 to node 0.
    """
    h = pl.Hierarchy(("node", "cluster"), (4, 12))
    jobs = [2, 3, 1, 2, 4]
    packed = pl.place_jobs(jobs, h, pl.Rule(level=0), "pack")
    first = pl.place_jobs(jobs, h, pl.Rule(level=0), "first_fit")
    assert packed.placed.all()
    assert first.placed.tolist() == [True, True, True, True, False]
    assert np.flatnonzero(packed.job_of_gpu == 4).tolist() == [8, 9, 10, 11]
    assert (first.idle_gpus, first.stranded_gpus) == (4, 4)


def test_pack_fills_partly_used_children_first() -> None:
    """A 12-GPU job in a leaf of nodes with 8, 7, 5, 3 free: 3 + 5, then 4 from the 7 (best fit)."""
    h = pl.Hierarchy(("node", "leaf"), (8, 32))
    free = np.ones(32, dtype=bool)
    free[8] = False
    free[16:19] = False
    free[24:29] = False
    ids = pl.place(free, 12, h, pl.Rule(), "pack")
    assert ids is not None
    assert ids.tolist() == [9, 10, 11, 12, *range(19, 24), *range(29, 32)]


def test_contiguous_pack_takes_the_best_fit_leaf() -> None:
    """Leaf 0 empty, leaf 1 with nodes 4-5 whole and node 6 half free: a 2-node slice takes 4-5."""
    h = pl.Hierarchy(("node", "leaf", "cluster"), (2, 8, 32))
    free = np.ones(32, dtype=bool)
    free[13:16] = False
    free[16:] = False
    rule = pl.Rule(level=0, contiguous=True)
    packed, first = pl.place(free, 4, h, rule, "pack"), pl.place(free, 4, h, rule, "first_fit")
    assert packed is not None
    assert first is not None
    assert packed.tolist() == [8, 9, 10, 11]
    assert first.tolist() == [0, 1, 2, 3]


def test_contiguous_pack_takes_the_shortest_run_that_fits() -> None:
    """Whole free nodes 0-2 and 5-6 in one pod: a 2-node slice takes 5-6, first fit 0-1."""
    h = pl.Hierarchy(("node", "pod"), (2, 16))
    free = np.zeros(16, dtype=bool)
    free[0:6] = True
    free[10:14] = True
    rule = pl.Rule(level=0, contiguous=True)
    packed, first = pl.place(free, 3, h, rule, "pack"), pl.place(free, 3, h, rule, "first_fit")
    assert packed is not None
    assert first is not None
    assert packed.tolist() == [10, 11, 12, 13]
    assert first.tolist() == [0, 1, 2, 3]


# --------------------------------------------------------------------------- data


@pytest.mark.parametrize(
    ("level", "ids", "expected"),
    [(0, [0, 7, 8, 31], [0, 0, 1, 3]), (1, [0, 31, 32], [0, 0, 1]), (2, [16383], [15])],
)
def test_domain_of(level: int, ids: list[int], expected: list[int]) -> None:
    h = pl.Hierarchy(("node", "leaf", "pod", "cluster"), (8, 32, 1024, 16384))
    assert h.domain_of(level, np.array(ids)).tolist() == expected
    assert h.gpus == 16384


@pytest.mark.parametrize(
    ("ids", "expected"),
    [([3], 0), ([4, 7], 0), ([3, 4], 1), ([7, 8], 3), ([8, 15], 1), ([16, 23], 1), ([0, 23], 3)],
)
def test_span_level_with_equal_sizes_is_the_lowest(ids: list[int], expected: int) -> None:
    assert hierarchy((4, 8, 8, 24)).span_level(ids) == expected


@pytest.mark.parametrize(
    ("level", "n", "expected"),
    [(None, 13, 13), (0, 8, 8), (0, 9, 16), (0, 12, 16), (1, 33, 64), (1, 32, 32)],
)
def test_allocated_gpus(level: int | None, n: int, expected: int) -> None:
    assert pl.Rule(level).allocated_gpus(n, RAIL if level == 0 else hierarchy((8, 32, 64))) == (
        expected
    )


ERRORS: dict[str, tuple[Callable[[], object], str]] = {
    "sizes do not divide": (lambda: hierarchy((4, 6, 12)), "divide"),
    "size zero": (lambda: hierarchy((0, 8)), "positive"),
    "names too short": (lambda: pl.Hierarchy(("node",), (4, 8)), "as long"),
    "no levels": (lambda: pl.Hierarchy((), ()), "not empty"),
    "negative rule level": (lambda: pl.Rule(level=-1), "non-negative"),
    "contiguous without level": (lambda: pl.Rule(contiguous=True), "needs a level"),
    "rule level too high": (lambda: pl.Rule(level=2).allocated_gpus(3, RAIL), "level 2"),
    "n zero": (lambda: pl.place(np.ones(32, dtype=bool), 0, RAIL, pl.Rule(), "pack"), "job size"),
    "n above cluster": (
        lambda: pl.place(np.ones(32, dtype=bool), 33, RAIL, pl.Rule(), "first_fit"),
        "job size",
    ),
    "free too short": (
        lambda: pl.place(np.ones(31, dtype=bool), 1, RAIL, pl.Rule(), "pack"),
        "free",
    ),
    "free not bool": (lambda: pl.place(np.ones(32), 1, RAIL, pl.Rule(), "pack"), "free"),
    "place level too high": (
        lambda: pl.place(np.ones(32, dtype=bool), 1, RAIL, pl.Rule(level=5), "pack"),
        "level 5",
    ),
    "unknown policy": (
        lambda: pl.place(np.ones(32, dtype=bool), 1, RAIL, pl.Rule(), "best"),  # type: ignore[arg-type]
        "policy",
    ),
    "queued job too large": (lambda: pl.place_jobs([4, 40], RAIL, pl.Rule(), "pack"), "job 1"),
    "span of nothing": (lambda: RAIL.span_level([]), "span_level"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_input_is_refused(case: str) -> None:
    make, match = ERRORS[case]
    with pytest.raises(ValueError, match=match):
        make()


# --------------------------------------------------------------------------- scale


@pytest.mark.parametrize("rule", [pl.Rule(), pl.Rule(0), pl.Rule(1), pl.Rule(2, True)], ids=str)
@pytest.mark.parametrize("policy", pl.POLICIES)
def test_a_16k_gpu_cluster_with_2000_jobs_accounts_for_every_gpu(
    rule: pl.Rule, policy: pl.Policy
) -> None:
    h = pl.Hierarchy(("node", "leaf", "pod", "cluster"), (8, 32, 1024, 16384))
    jobs = np.random.default_rng(7).choice([1, 2, 4, 8, 12, 16, 24, 64, 96, 256], size=2000)
    result = pl.place_jobs(jobs.tolist(), h, rule, policy)
    counts = np.bincount(result.job_of_gpu[result.job_of_gpu >= 0], minlength=len(jobs))
    assert np.array_equal(counts, result.allocated_gpus)
    assert result.used_gpus + result.internal_fragmentation_gpus + result.idle_gpus == h.gpus
    assert result.placed.sum() > 100


def test_pack_breaks_a_tie_toward_the_fuller_parent() -> None:
    """Every empty node fits an 8-GPU job; pack takes one in the partly used leaf (node 5),
    leaving leaf 0 whole for a 32-GPU job, where first fit takes node 0."""
    h = pl.Hierarchy(("node", "leaf", "cluster"), (8, 32, 64))
    free = np.ones(64, dtype=bool)
    free[32:40] = False
    packed = pl.place(free, 8, h, pl.Rule(), "pack")
    first = pl.place(free, 8, h, pl.Rule(), "first_fit")
    assert packed is not None
    assert first is not None
    assert packed.tolist() == list(range(40, 48))
    assert first.tolist() == list(range(8))
