"""Growing a top layer (``models.layer_growth``): each decision binds, and the DP is exact."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import pytest

from models.layer_growth import (
    GrowthPhase,
    GrowthProblem,
    State,
    TopOption,
    candidate_states,
    cost_of,
    moved_per_spine,
    solve,
    transition_usd,
)

#: Agreement between two ways of costing the same life.
REL_TOL = 1e-9
#: Block price and power in the two-phase lives below (8 blocks now, 32 in two years).
BLOCK_USD, BLOCK_W = 30_000.0, 1_000.0


def device(usd: float = 30_000.0, generation: int = 0, w: float = 1_000.0) -> TopOption:
    return TopOption(generation=generation, unit_usd=usd, unit_w=w, ports=64)


def phase(at: float, blocks: int, before: int, *options: TopOption, floor: int = 0) -> GrowthPhase:
    return GrowthPhase(
        at_years=at,
        blocks=blocks,
        blocks_usd=(blocks - before) * BLOCK_USD,
        blocks_w=blocks * BLOCK_W,
        options=options or (device(),),
        min_generation=floor,
    )


def life(**changes: object) -> GrowthProblem:
    """One spine a block with 32 uplinks into 64-port devices: 8 blocks need 4, 32 need 16."""
    base = GrowthProblem(
        phases=(phase(0.0, 8, 0), phase(2.0, 32, 8)),
        groups=1,
        group_uplinks=32,
        sizes=(1, 2, 4, 8, 16, 32),
        gpu_hours_per_moved_link=2.0,
        horizon_years=5.0,
        discount_rate=0.05,
        energy_usd_per_wh=0.08 / 1000,
        gpu_hour_usd=2.5,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def sizes(growth_states: tuple[State, ...]) -> tuple[int, ...]:
    return tuple(s.size for s in growth_states)


def every_sequence(pr: GrowthProblem) -> list[tuple[State, ...]]:
    """Every sequence of states the rules allow (brute force over all candidate states)."""
    out = []
    for seq in itertools.product(candidate_states(pr), repeat=len(pr.phases)):
        try:
            cost_of(pr, seq)
        except ValueError:
            continue
        out.append(seq)
    return out


def test_a_spine_moves_what_the_new_devices_take() -> None:
    """32 uplinks over 4 devices (8 each) re-spread over 16 (2 each): 24 move."""
    assert moved_per_spine(32, 4, 16) == 24
    assert moved_per_spine(32, 16, 16) == 0
    assert moved_per_spine(32, 0, 16) == 0  # no device before: nothing to move


def test_building_ahead_wins_when_re_cabling_is_dear() -> None:
    """Disruption at $2.5 x 200 GPU-hours a link, prices flat: all 16 devices at once."""
    pr = life(gpu_hours_per_moved_link=200.0)
    got = solve(pr)
    assert sizes(got.states) == (16, 16)
    assert got.moved_links == (0, 0)
    later = cost_of(pr, (State(4, 0), State(16, 0)))
    assert later.moved_links == (0, 8 * 24)
    assert got.terms.total_usd < later.terms.total_usd * (1 - 1e-6)


def test_adding_later_wins_when_devices_get_cheaper_and_moves_are_cheap() -> None:
    """Devices at half price in two years, 10 % a year, a moved link nearly free: 4 now, 16 then."""
    phases = (phase(0.0, 8, 0, device(30_000.0)), phase(2.0, 32, 8, device(15_000.0)))
    pr = life(phases=phases, gpu_hours_per_moved_link=0.1, discount_rate=0.10)
    got = solve(pr)
    assert sizes(got.states) == (4, 16)
    assert got.moved_links == (0, 192)
    ahead = cost_of(pr, (State(16, 0), State(16, 0)))
    assert got.terms.total_usd < ahead.terms.total_usd * (1 - 1e-6)


def test_a_faster_block_forces_a_refresh_that_moves_every_link() -> None:
    """Phase 2's blocks need generation 1: the whole layer is bought again, every link moves."""
    phases = (
        phase(0.0, 8, 0, device()),
        phase(2.0, 32, 8, device(), device(45_000.0, generation=1), floor=1),
    )
    pr = life(phases=phases, gpu_hours_per_moved_link=200.0)
    got = solve(pr)
    # Building gen-0 ahead buys nothing that lasts: the least gen-0 layer, then all of gen 1.
    assert got.states == (State(4, 0), State(16, 1))
    assert got.moved_links == (0, 8 * 32)
    assert got.phases[1].capex_usd == 24 * BLOCK_USD + 16 * 45_000.0
    with pytest.raises(ValueError, match="breaks a rule"):
        cost_of(pr, (State(16, 0), State(16, 0)))


@pytest.mark.parametrize("seed", range(16))
def test_the_dp_is_the_best_of_every_sequence(seed: int) -> None:
    """Random small lives (2-4 phases, 1-2 generations): the DP's cost is the least of all."""
    rng = random.Random(seed)
    n = rng.randint(2, 4)
    blocks = sorted(rng.randint(1, 12) for _ in range(n))
    at = sorted([0.0, *(rng.uniform(0.2, 4.0) for _ in range(n - 1))])
    new_gen = rng.randint(1, n - 1)  # the phase generation 1 comes on offer
    phases = tuple(
        GrowthPhase(
            at_years=at[j],
            blocks=blocks[j],
            blocks_usd=(blocks[j] - (blocks[j - 1] if j else 0)) * rng.uniform(5e3, 4e4),
            blocks_w=blocks[j] * 500.0,
            options=(
                TopOption(0, rng.uniform(5e3, 4e4), rng.uniform(200, 2e3), rng.choice([16, 32])),
                *(
                    (TopOption(1, rng.uniform(5e3, 6e4), rng.uniform(200, 2e3), 32),)
                    if j >= new_gen
                    else ()
                ),
            ),
            min_generation=1 if j >= new_gen and rng.random() < 0.5 else 0,
        )
        for j in range(n)
    )
    pr = life(
        phases=phases,
        groups=rng.randint(1, 3),
        group_uplinks=8,
        sizes=(2, 4, 8),
        gpu_hours_per_moved_link=rng.uniform(0.0, 100.0),
        discount_rate=rng.uniform(0.0, 0.15),
        horizon_years=at[-1] + rng.uniform(1.0, 5.0),
    )
    sequences = every_sequence(pr)
    if not sequences:
        with pytest.raises(ValueError, match="no top layer"):
            solve(pr)
        return
    got = solve(pr)
    brute = min(cost_of(pr, s).terms.total_usd for s in sequences)
    assert got.terms.total_usd == pytest.approx(brute, rel=REL_TOL)


@pytest.mark.parametrize("first", [4, 8, 16])
def test_the_transitions_add_up_to_the_life(first: int) -> None:
    pr = life()
    states = (State(first, 0), State(16, 0))
    by_phase = sum(
        transition_usd(pr, j, before, after)
        for j, (before, after) in enumerate(zip((None, *states), states, strict=False))
    )
    assert by_phase == pytest.approx(cost_of(pr, states).terms.total_usd, rel=REL_TOL)


@pytest.mark.parametrize(
    "states",
    [
        (State(2, 0), State(16, 0)),  # 8 blocks x 16 links do not fit 64 ports
        (State(16, 0), State(8, 0)),  # the layer shrinks
        (State(4, 0), State(12, 0)),  # 12 does not divide the 32 uplinks
        (State(4, 0),),  # one state per phase
    ],
)
def test_a_sequence_that_breaks_a_rule_is_refused(states: tuple[State, ...]) -> None:
    with pytest.raises(ValueError, match="breaks a rule|one state per phase"):
        cost_of(life(), states)


def test_blocks_never_shrink() -> None:
    with pytest.raises(ValueError, match="never shrink"):
        life(phases=(phase(0.0, 8, 0), phase(1.0, 4, 8)))


def test_a_standing_fabric_is_the_state_before_the_first_phase() -> None:
    """8 blocks under 4 devices stand; growing to 32 re-cables them and buys only 12 devices."""
    pr = life(phases=(phase(0.0, 32, 8),), installed=State(4, 0), installed_blocks=8)
    got = solve(pr)
    assert got.states == (State(16, 0),)
    assert got.moved_links == (8 * 24,)
    assert got.phases[0].capex_usd == 24 * BLOCK_USD + 12 * 30_000.0
    # Shrinking what stands is refused, as between two phases.
    with pytest.raises(ValueError, match="breaks a rule"):
        cost_of(replace(pr, installed=State(32, 0)), (State(16, 0),))


@pytest.mark.parametrize(
    ("installed", "blocks", "match"),
    [
        (State(4, 0), 0, "installed top layer"),
        (None, 8, "installed top layer"),
        (State(4, 0), 40, "fewer than"),
    ],
)
def test_a_standing_fabric_must_make_sense(
    installed: State | None, blocks: int, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        life(installed=installed, installed_blocks=blocks)


@pytest.mark.parametrize("seed", range(6))
def test_the_dp_from_a_standing_fabric_is_the_best_of_every_sequence(seed: int) -> None:
    rng = random.Random(seed)
    standing = rng.choice([1, 2, 4])
    pr = life(
        phases=(phase(0.0, 16, standing), phase(2.0, 32, 16, device(rng.uniform(1e4, 4e4)))),
        installed=State(rng.choice([1, 2, 4, 8]), 0),
        installed_blocks=standing,
        gpu_hours_per_moved_link=rng.uniform(0.0, 50.0),
    )
    sequences = every_sequence(pr)
    got = solve(pr)
    brute = min(cost_of(pr, s).terms.total_usd for s in sequences)
    assert got.terms.total_usd == pytest.approx(brute, rel=REL_TOL)
