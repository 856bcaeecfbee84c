"""Growing a two-tier Clos (``models.clos_growth``): each decision binds, and the DP is exact."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import pytest

from models.clos_growth import (
    GrowthPhase,
    GrowthProblem,
    cost_of,
    moved_per_leaf,
    solve,
    transition_usd,
)

#: Agreement between two ways of costing the same life.
REL_TOL = 1e-9


def life(**changes: object) -> GrowthProblem:
    """64-port spines, 32 uplinks a leaf; 8 leaves now, 32 in two years (need 4, then 16)."""
    base = GrowthProblem(
        phases=(
            GrowthPhase(0.0, 8, spine_usd=30_000.0, leaf_usd=30_000.0),
            GrowthPhase(2.0, 32, spine_usd=30_000.0, leaf_usd=30_000.0),
        ),
        uplinks_per_leaf=32,
        spine_ports=64,
        spine_w=1_000.0,
        leaf_w=1_000.0,
        gpu_hours_per_moved_link=2.0,
        horizon_years=5.0,
        discount_rate=0.05,
        energy_usd_per_wh=0.08 / 1000,
        gpu_hour_usd=2.5,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def every_sequence(pr: GrowthProblem) -> list[tuple[int, ...]]:
    """Every non-decreasing spine sequence the rules allow (brute force)."""
    top = pr.need(len(pr.phases) - 1)
    ranges = [range(pr.need(j), top + 1) for j in range(len(pr.phases))]
    return [
        s for s in itertools.product(*ranges) if all(a <= b for a, b in zip(s, s[1:], strict=False))
    ]


def test_a_leaf_moves_what_the_new_spines_take() -> None:
    """32 uplinks over 4 spines (8 each) re-spread over 16 (2 each): 24 move."""
    assert moved_per_leaf(32, 4, 16) == 24
    assert moved_per_leaf(32, 16, 16) == 0
    assert moved_per_leaf(32, 0, 16) == 0  # no spine before: nothing to move


def test_building_ahead_wins_when_re_cabling_is_dear() -> None:
    """Disruption at $2.5 x 200 GPU-hours a link, prices flat: all 16 spines at once."""
    pr = life(gpu_hours_per_moved_link=200.0)
    got = solve(pr)
    assert got.spines == (16, 16)
    assert got.moved_links == (0, 0)
    later = cost_of(pr, (4, 16))
    assert later.moved_links == (0, 8 * 24)
    assert got.terms.total_usd < later.terms.total_usd * (1 - 1e-6)


def test_adding_later_wins_when_spines_get_cheaper_and_moves_are_cheap() -> None:
    """Spines at half price in two years, 10 % a year, a moved link nearly free: 4 now, 16 then."""
    phases = (
        GrowthPhase(0.0, 8, spine_usd=30_000.0, leaf_usd=30_000.0),
        GrowthPhase(2.0, 32, spine_usd=15_000.0, leaf_usd=15_000.0),
    )
    pr = life(phases=phases, gpu_hours_per_moved_link=0.1, discount_rate=0.10)
    got = solve(pr)
    assert got.spines == (4, 16)
    assert got.moved_links == (0, 192)
    ahead = cost_of(pr, (16, 16))
    assert got.terms.total_usd < ahead.terms.total_usd * (1 - 1e-6)


@pytest.mark.parametrize("seed", range(12))
def test_the_dp_is_the_best_of_every_sequence(seed: int) -> None:
    """Random small lives (2-4 phases): the DP's cost is the least over all sequences."""
    rng = random.Random(seed)
    n = rng.randint(2, 4)
    leaves = sorted(rng.randint(1, 12) for _ in range(n))
    phases = tuple(
        GrowthPhase(
            float(j) * rng.uniform(0.5, 2.0) + (0.0 if j == 0 else 0.1 * j),
            leaves[j],
            spine_usd=rng.uniform(5_000, 40_000),
            leaf_usd=rng.uniform(5_000, 40_000),
        )
        for j in range(n)
    )
    phases = tuple(
        replace(p, at_years=0.0 if j == 0 else max(p.at_years, phases[j - 1].at_years))
        for j, p in enumerate(phases)
    )
    pr = life(
        phases=phases,
        uplinks_per_leaf=rng.choice([4, 8, 16]),
        spine_ports=rng.choice([8, 16, 32]),
        gpu_hours_per_moved_link=rng.uniform(0.0, 100.0),
        discount_rate=rng.uniform(0.0, 0.15),
        horizon_years=phases[-1].at_years + rng.uniform(1.0, 5.0),
    )
    got = solve(pr)
    brute = min(cost_of(pr, s).terms.total_usd for s in every_sequence(pr))
    assert got.terms.total_usd == pytest.approx(brute, rel=REL_TOL)


@pytest.mark.parametrize("spines", [(4, 16), (8, 16), (16, 16)])
def test_the_transitions_add_up_to_the_life(spines: tuple[int, int]) -> None:
    pr = life()
    by_phase = sum(
        transition_usd(pr, j, before, after)
        for j, (before, after) in enumerate(zip((0, *spines), spines, strict=False))
    )
    assert by_phase == pytest.approx(cost_of(pr, spines).terms.total_usd, rel=REL_TOL)


@pytest.mark.parametrize(
    ("spines", "match"),
    [((3, 16), "needs 4"), ((16, 8), "had 16"), ((4, 17), "to 16"), ((4,), "one spine count")],
)
def test_a_sequence_that_breaks_a_rule_is_refused(spines: tuple[int, ...], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cost_of(life(), spines)


def test_leaves_never_shrink() -> None:
    with pytest.raises(ValueError, match="never shrink"):
        life(phases=(GrowthPhase(0.0, 8, 1.0, 1.0), GrowthPhase(1.0, 4, 1.0, 1.0)))
