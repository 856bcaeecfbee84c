"""The CP-SAT optimum equals brute-force enumeration over the same design space."""

from __future__ import annotations

from fractions import Fraction

import pytest

from models import clos_sizing as cs
from models.status import Status
from tests.models.brute_force import brute_force

#: Relative tolerance between the solver's and the enumeration's objective (cent rounding).
OBJECTIVE_RTOL = 1e-6

S8 = cs.SwitchOption("s8", 8, 4_000.0, 150.0, 300)
S12 = cs.SwitchOption("s12", 12, 5_500.0, 200.0, 350)
S16 = cs.SwitchOption("s16", 16, 9_000.0, 250.0, 400)
S32 = cs.SwitchOption("s32", 32, 20_000.0, 400.0, 500)
S64 = cs.SwitchOption("s64", 64, 30_000.0, 700.0, 600)
C32 = cs.SwitchOption("c32", 32, 30_000.0, 300.0, 500, cpo=True)
F32 = cs.SwitchOption("f32", 32, 35_000.0, 450.0, 150)
OPT = cs.MediumOption("opt", 600.0, 12.0, 80.0, 100)
OPT_FAR = cs.MediumOption("opt-far", 900.0, 14.0, 60.0, 120)
DAC = cs.MediumOption("dac", 40.0, 0.1, 0.0, 0)


def problem(
    E: int,
    tiers: int,
    options: tuple[cs.SwitchOption, ...],
    *,
    planes: int = 1,
    ratios: tuple[str, ...] = ("1", "1"),
    phi: str | None = None,
    protected: frozenset[int] = frozenset(),
    copper: bool = True,
    rack: int = 16,
    hops: int | None = None,
    latency: int | None = None,
    power_w: float | None = None,
) -> cs.SizingProblem:
    return cs.SizingProblem(
        endpoints=E,
        planes=planes,
        tiers=tiers,
        switch_options=(options,) * tiers,
        optical=(OPT, OPT, OPT_FAR)[:tiers],
        copper=DAC if copper else None,
        endpoints_per_rack=rack,
        requirements=cs.Requirements(
            max_oversubscription=tuple(Fraction(r) for r in ratios[: tiers - 1]),
            max_switch_hops=hops,
            max_latency_ns=latency,
            min_fraction_after_failure=None if phi is None else Fraction(phi),
            protected_tiers=protected,
            max_power_w=power_w,
        ),
        energy_usd_per_w=4.56,
    )


CASES = {
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
    "2tier-500-no-copper": problem(500, 2, (S32, S64), copper=False),
    "2tier-400-rack-24": problem(400, 2, (S32,), rack=24),
    # Binding caps: the uncapped optimum breaks them (checked in test_caps_bind).
    "2tier-latency": problem(200, 2, (S32, F32), latency=1000),
    "2tier-power-cap": problem(200, 2, (S16, S32), power_w=13_500.0),
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


@pytest.mark.parametrize("name", list(CASES))
def test_solver_matches_brute_force(name: str) -> None:
    p = CASES[name]
    expected = brute_force(p)
    sol = cs.solve(cs.build(p), cs.SolveOptions(time_limit_s=60))
    if expected is None:
        assert sol.status is Status.INFEASIBLE
    else:
        assert sol.status is Status.OPTIMAL
        assert sol.objective_usd == pytest.approx(expected, rel=OBJECTIVE_RTOL)


@pytest.mark.parametrize("name", ["2tier-760", "3tier-760-k16", "2tier-760-mixed-cpo"])
def test_cuts_do_not_change_the_optimum(name: str) -> None:
    p = CASES[name]
    with_cuts = cs.solve(cs.build(p))
    without = cs.solve(cs.build(p, frozenset({"cuts.port_capacity"})))
    assert with_cuts.status is without.status is Status.OPTIMAL
    assert with_cuts.objective_usd == pytest.approx(without.objective_usd, rel=OBJECTIVE_RTOL)


@pytest.mark.parametrize(
    ("name", "uncapped"),
    [
        ("2tier-latency", problem(200, 2, (S32, F32))),
        ("2tier-power-cap", problem(200, 2, (S16, S32))),
    ],
)
def test_caps_bind(name: str, uncapped: cs.SizingProblem) -> None:
    """The capped cases are not trivially equal to the uncapped optimum."""
    capped = brute_force(CASES[name])
    free = brute_force(uncapped)
    assert capped is not None
    assert free is not None
    assert capped > free * (1 + OBJECTIVE_RTOL)
