"""The CP-SAT optimum equals brute-force enumeration over the same design space.

The space is switch model x wiring x leaf placement x the medium of every length band of every
link class; the enumeration (``tests.models.brute_force``) reads the length tails but not the
cabling plans, so it checks the plans' exactness as well as the sizing model.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import pytest

from models import cabling as cb
from models import clos_sizing as cs
from models.status import Status
from tests.models.brute_force import brute_force, canonical

#: Relative tolerance between the solver's and the enumeration's objective (cent rounding).
OBJECTIVE_RTOL = 1e-6
ENERGY_USD_PER_W = 4.56

C32_ENGINE = cb.CpoEngine(100, "mpo-12", 500.0)
S8 = cs.SwitchOption("s8", 8, 4_000.0, 150.0, 300)
S12 = cs.SwitchOption("s12", 12, 5_500.0, 200.0, 350)
S16 = cs.SwitchOption("s16", 16, 9_000.0, 250.0, 400)
S32 = cs.SwitchOption("s32", 32, 20_000.0, 400.0, 500)
S64 = cs.SwitchOption("s64", 64, 30_000.0, 700.0, 600)
C32 = cs.SwitchOption("c32", 32, 30_000.0, 300.0, 500, engine=C32_ENGINE)
F32 = cs.SwitchOption("f32", 32, 35_000.0, 450.0, 150)

DAC = cb.MediumOption("dac", 40.0, 0.1, 0.0, 0, 3.0, True, 100, "osfp")
AEC = cb.MediumOption("aec", 90.0, 2.0, 0.0, 20, 7.0, True, 100, "osfp")
SR = cb.MediumOption("sr", 450.0, 8.0, 60.0, 100, 50.0, False, 100, "mpo-12")
DR = cb.MediumOption("dr", 600.0, 12.0, 80.0, 100, 500.0, False, 100, "mpo-12")
DR_DUPLEX = cb.MediumOption("dr1", 700.0, 10.0, 40.0, 100, 500.0, False, 100, "lc-duplex")
LPO = cb.MediumOption("lpo", 520.0, 6.0, 80.0, 5, 500.0, False, 100, "mpo-16")
FR = cb.MediumOption("fr", 900.0, 14.0, 60.0, 120, 2000.0, False, 100, "lc-duplex")
ALL_MEDIA = (DAC, AEC, SR, DR, DR_DUPLEX, LPO, FR)
OPTICS = (SR, DR, FR)

#: Hand-made length tails: share of links longer than 3, 7, 50, 500 and 2000 m, per placement.
#: (total weight, longer than each threshold)
TAILS: dict[int, dict[str | None, tuple[int, tuple[int, ...]]]] = {
    0: {
        "top_of_rack": (1, (0, 0, 0, 0, 0)),
        "middle_of_row": (10, (3, 0, 0, 0, 0)),
        "end_of_row": (10, (6, 3, 0, 0, 0)),
    },
    1: {
        "top_of_rack": (2, (2, 2, 1, 0, 0)),
        "middle_of_row": (4, (4, 3, 1, 0, 0)),
        "end_of_row": (4, (4, 3, 2, 0, 0)),
    },
    2: {None: (5, (5, 5, 2, 1, 0))},
}
THRESHOLDS_M = (3.0, 7.0, 50.0, 500.0, 2000.0)
ALL_PLACEMENTS = ("top_of_rack", "middle_of_row", "end_of_row")
#: Energy dear enough that low-power LPO beats cheaper SR optics, and a capex cap that undoes it.
DEAR_ENERGY_USD_PER_W = 60.0
CAPEX_CAP_USD = 620_000.0


def problem(
    E: int,
    tiers: int,
    options: tuple[cs.SwitchOption, ...],
    *,
    media: tuple[cb.MediumOption, ...] = ALL_MEDIA,
    placements: tuple[str, ...] = ALL_PLACEMENTS,
    planes: int = 1,
    ratios: tuple[str, ...] = ("1", "1"),
    phi: str | None = None,
    protected: frozenset[int] = frozenset(),
    rack: int = 16,
    hops: int | None = None,
    latency: int | None = None,
    power_w: float | None = None,
    capex_usd: float | None = None,
    energy_usd_per_w: float = ENERGY_USD_PER_W,
) -> tuple[cs.SizingProblem, tuple[cb.MediumOption, ...]]:
    """A sizing problem cabled from the hand-made tails, and the media it may use."""
    criteria = cb.Criteria(
        energy_usd_per_w,
        capex_capped=capex_usd is not None,
        power_capped=power_w is not None,
        latency_capped=latency is not None,
    )
    cabling = []
    for c in range(tiers):
        tails = {
            key: cb.LengthTails(total, THRESHOLDS_M, longer)
            for key, (total, longer) in TAILS[c].items()
            if key is None or key in placements
        }
        lower = None if c == 0 else options
        cabling.append(cs.class_cabling(tails, media, lower, options, criteria))
    p = cs.SizingProblem(
        endpoints=E,
        planes=planes,
        tiers=tiers,
        switch_options=(options,) * tiers,
        cabling=tuple(cabling),
        placements=placements,
        endpoints_per_rack=rack,
        requirements=cs.Requirements(
            max_oversubscription=tuple(Fraction(r) for r in ratios[: tiers - 1]),
            max_switch_hops=hops,
            max_latency_ns=latency,
            min_fraction_after_failure=None if phi is None else Fraction(phi),
            protected_tiers=protected,
            max_power_w=power_w,
            max_capex_usd=capex_usd,
        ),
        energy_usd_per_w=energy_usd_per_w,
    )
    return p, media


CASES: dict[str, tuple[cs.SizingProblem, tuple[cb.MediumOption, ...]]] = {
    "1tier-13": problem(13, 1, (S16,)),
    "1tier-mixed": problem(30, 1, (S16, S32)),
    "2tier-24": problem(24, 2, (S8,)),
    "2tier-31-odd": problem(31, 2, (S8,)),
    "2tier-100-2to1": problem(100, 2, (S16,), ratios=("2",)),
    "2tier-100-3to1": problem(100, 2, (S16,), ratios=("3",)),
    "2tier-250-mixed": problem(250, 2, (S16, S32)),
    "2tier-760": problem(760, 2, (S64,), rack=32),
    "2tier-1016": problem(1016, 2, (S64,), rack=32),
    "2tier-1016-2planes": problem(1016, 2, (S64,), planes=2, rack=32),
    "2tier-760-mixed-cpo": problem(760, 2, (S64, C32), rack=32),
    "2tier-200-cpo-only": problem(200, 2, (C32,)),
    "2tier-300-survive": problem(300, 2, (S32,), phi="0.9", protected=frozenset({2})),
    "2tier-300-leaf-2planes": problem(
        300, 2, (S32,), planes=2, phi="0.5", protected=frozenset({1, 2})
    ),
    "2tier-500-optics-only": problem(500, 2, (S32, S64), media=OPTICS),
    "2tier-300-eor-only": problem(300, 2, (S32,), placements=("end_of_row",)),
    "2tier-300-tor-mor": problem(300, 2, (S32,), placements=("top_of_rack", "middle_of_row")),
    "2tier-500-cpo-tor": problem(500, 2, (C32,), placements=("top_of_rack",)),
    "3tier-300-cpo-mixed": problem(300, 3, (S12, C32)),
    "2tier-200-capex-cap": problem(
        200, 2, (S16, S32), capex_usd=CAPEX_CAP_USD, energy_usd_per_w=DEAR_ENERGY_USD_PER_W
    ),
    "2tier-400-rack-24": problem(400, 2, (S32,), rack=24),
    # Binding caps: the uncapped optimum breaks them (checked in test_caps_bind).
    "2tier-latency": problem(200, 2, (S32, F32), latency=1000),
    "2tier-media-latency": problem(200, 2, (S32,), latency=1700),
    "2tier-power-cap": problem(200, 2, (S16, S32), power_w=11_800.0),
    "3tier-100-k8": problem(100, 3, (S8,)),
    "3tier-128-k8-fat-tree": problem(128, 3, (S8,)),
    "3tier-301-k12": problem(301, 3, (S12,)),
    "3tier-760-k16": problem(760, 3, (S16,)),
    "3tier-500-k16-2to1": problem(500, 3, (S16,), ratios=("2", "1")),
    "3tier-200-mixed": problem(200, 3, (S8, S12)),
    "3tier-150-survive": problem(150, 3, (S12,), phi="0.66", protected=frozenset({2, 3})),
    "3tier-hops-3": problem(100, 3, (S8,), hops=3),
    "3tier-900-k16-2planes": problem(900, 3, (S16,), planes=2),
}


@functools.cache
def oracle(name: str) -> tuple[float, tuple[int, ...]] | None:
    """Brute force's optimum of a case and its least parallel links (enumerated once per case)."""
    return canonical(*CASES[name])


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.slow
def test_solver_matches_brute_force(name: str) -> None:
    p, _ = CASES[name]
    expected = oracle(name)
    sol = cs.solve(cs.build(p), cs.SolveOptions(time_limit_s=60))
    if expected is None:
        assert sol.status is Status.INFEASIBLE
    else:
        assert sol.status is Status.OPTIMAL
        assert sol.objective_usd == pytest.approx(expected[0], rel=OBJECTIVE_RTOL)


@pytest.mark.parametrize("name", ["2tier-760", "3tier-760-k16", "2tier-760-mixed-cpo"])
def test_cuts_do_not_change_the_optimum(name: str) -> None:
    p, _ = CASES[name]
    with_cuts = cs.solve(cs.build(p))
    without = cs.solve(cs.build(p, frozenset({"cuts.port_capacity"})))
    assert with_cuts.status is without.status is Status.OPTIMAL
    assert with_cuts.objective_usd == pytest.approx(without.objective_usd, rel=OBJECTIVE_RTOL)


@pytest.mark.parametrize(
    ("name", "uncapped"),
    [
        ("2tier-latency", problem(200, 2, (S32, F32))),
        ("2tier-media-latency", problem(200, 2, (S32,))),
        ("2tier-power-cap", problem(200, 2, (S16, S32))),
        (
            "2tier-200-capex-cap",
            problem(200, 2, (S16, S32), energy_usd_per_w=DEAR_ENERGY_USD_PER_W),
        ),
    ],
)
def test_caps_bind(
    name: str, uncapped: tuple[cs.SizingProblem, tuple[cb.MediumOption, ...]]
) -> None:
    """The capped cases are not trivially equal to the uncapped optimum."""
    capped = brute_force(*CASES[name])
    free = brute_force(*uncapped)
    assert capped is not None
    assert free is not None
    assert capped > free * (1 + OBJECTIVE_RTOL)


@pytest.mark.parametrize("name", ["2tier-300-eor-only", "2tier-760", "3tier-300-cpo-mixed"])
def test_media_really_mix(name: str) -> None:
    """The cases exercise per-band choice: some class of the optimum uses two or more media."""
    p, _ = CASES[name]
    sol = cs.solve(cs.build(p))
    assert sol.status is Status.OPTIMAL
    assert any(len({u.medium.name for u in plan.bands if u}) >= 2 for plan in sol.plans)


@pytest.mark.parametrize(
    "name",
    [
        # The three-tier oracles take seconds each: those cases are in the slow tier.
        pytest.param(name, marks=pytest.mark.slow) if p.tiers > 2 else name
        for name, (p, _) in CASES.items()
        if p.tiers > 1
    ],
)
def test_ties_go_to_the_fewest_parallel_links(name: str) -> None:
    """Among the optimal designs, the canonical one has brute force's least parallel links."""
    p, _ = CASES[name]
    expected = oracle(name)
    built = cs.build(p)
    sol = cs.solve_canonical(built, cs.solve(built, cs.SolveOptions(time_limit_s=60)))
    if expected is None:
        assert sol.status is Status.INFEASIBLE
        return
    assert sol.status is Status.OPTIMAL
    assert sol.objective_usd == pytest.approx(expected[0], rel=OBJECTIVE_RTOL)
    assert tuple(t.parallel_links for t in sol.tier_solutions[:-1]) == expected[1]
