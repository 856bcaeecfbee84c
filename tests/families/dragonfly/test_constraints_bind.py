"""Every constraint family of the dragonfly sizing model binds (Calliope style).

For each family in ``models.dragonfly.model.CONSTRAINTS`` a small problem where leaving
the family out (``DragonflyProblem.leave_out``) changes the outcome: the optimum drops, or an
infeasible problem becomes feasible; and the design found without the family breaks the rule the
family states, checked on the design by the rules written here from the module docstring (not by
the model's predicates). ``reaches_across`` is the exception on purpose: it is a valid cut (a
candidate it cuts has a link no medium reaches, which ``price`` rejects anyway), so its case
shows the optimum is the same without it while more candidates are priced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Literal

import pytest

from models import cabling as cb
from models import switch_media as sm
from models.dragonfly import model as dm
from models.dragonfly import structure as st
from models.status import Status

#: Relative tolerance on two objectives, and on a load ratio against its limit.
OBJECTIVE_RTOL = 1e-9
RATIO_RTOL = 1e-9

Binds = Literal["optimum_drops", "becomes_feasible", "same_optimum"]


# ---- problems ------------------------------------------------------------------------------------
COPPER = cb.MediumOption("copper", 50.0, 0.1, 0.0, 0, 3.0, copper=True)
OPTIC = cb.MediumOption("optic", 400.0, 8.0, 60.0, 100, 500.0)
#: An active copper cable of 7 m: it reaches the next rows of racks, not across a long floor.
AEC = cb.MediumOption("aec", 150.0, 6.0, 0.0, 20, 7.0, copper=True)
FLOOR = sm.Floor(16, 8, 0.6, 2.4, 2.0, 3.0, 1.1)


def problem(gpus: int, radix: int = 16, **req: Any) -> dm.DragonflyProblem:
    """One plane at 400G, a small switch and one of twice the radix, copper and optics."""
    switches = (
        sm.SwitchChoice("small", radix, 10_000.0, 300.0, 300),
        sm.SwitchChoice("big", 2 * radix, 30_000.0, 700.0, 400),
    )
    return dm.DragonflyProblem(
        gpus, 1, 400, switches, (COPPER, OPTIC), FLOOR, dm.Requirements(**req), 5.0
    )


def base() -> dm.DragonflyProblem:
    """96 GPUs, radix 16, ratio 1: 4 small switches of 4 GPUs a group, 6 groups, m = 3, q = 2."""
    return problem(96)


def short_reach() -> dm.DragonflyProblem:
    """48 GPUs, copper and the 7 m cable only, 8 GPUs a rack and 2 racks a row.

    Groups stand in consecutive rows, so the first and last group of a larger dragonfly stand
    further apart than 7 m: ``reaches_across`` cuts those before they are priced.
    """
    pr = problem(48)
    return replace(
        pr, media=(COPPER, AEC), floor=replace(pr.floor, gpus_per_rack=8, racks_per_row=2)
    )


# ---- the rules, on a design ----------------------------------------------------------------------
def holds_gpus(pr: dm.DragonflyProblem, d: dm.Priced) -> bool:
    c = d.candidate
    return c.a * c.p * c.g >= pr.gpus


def fits_radix(pr: dm.DragonflyProblem, d: dm.Priced) -> bool:
    c = d.candidate
    return c.p + c.q * (c.a - 1) + c.h <= c.switch.radix


def within_max_groups(pr: dm.DragonflyProblem, d: dm.Priced) -> bool:
    c = d.candidate
    return c.a >= 2 and c.m >= 1 and 2 <= c.g <= c.a * c.h + 1


def meets_ratios(pr: dm.DragonflyProblem, d: dm.Priced) -> bool:
    c, r = d.candidate, pr.requirements
    limit = r.max_ratio * (1 + RATIO_RTOL)
    glob = st.global_load_ratio(c.p, c.a, c.g, c.m, pr.gpus, r.routing)
    local = st.local_load_ratio(c.p, c.a, c.g, c.q, c.m, pr.gpus, r.routing, dm.ARRANGEMENT)
    return glob <= limit and local <= limit


def meets_hops(pr: dm.DragonflyProblem, d: dm.Priced) -> bool:
    c, r = d.candidate, pr.requirements
    assert r.max_switch_hops is not None
    hops = st.switch_hops(c.a, c.g, c.m, dm.ARRANGEMENT, r.routing)
    return hops <= r.max_switch_hops


def meets_failure(pr: dm.DragonflyProblem, d: dm.Priced) -> bool:
    phi = pr.requirements.min_fraction_after_failure
    assert phi is not None
    return (d.candidate.planes - 1) / d.candidate.planes >= phi


def meets_latency(pr: dm.DragonflyProblem, d: dm.Priced) -> bool:
    cap = pr.requirements.max_latency_ns
    assert cap is not None
    return d.max_latency_ns <= cap


def meets_caps(pr: dm.DragonflyProblem, d: dm.Priced) -> bool:
    cap = pr.requirements.max_capex_usd
    assert cap is not None
    return d.capex_usd <= cap


def meets_pins(pr: dm.DragonflyProblem, d: dm.Priced) -> bool:
    c = d.candidate
    assert pr.pins.switches is not None
    return c.a * c.g == pr.pins.switches


# ---- the table -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """How one family binds: on which problem, and what leaving it out changes."""

    problem: Callable[[], dm.DragonflyProblem]
    binds: Binds
    rule: Callable[[dm.DragonflyProblem, dm.Priced], bool] | None = None
    """The rule the family states, checked on the designs with and without it."""


CASES: dict[str, Case] = {
    # Without it the least g is 2: 4 switches of one GPU each hold 4 of the 96 GPUs.
    "holds_gpus": Case(base, "optimum_drops", holds_gpus),
    # Without it 4 switches of 24 GPUs each, with 56 ports used of 16.
    "fits_radix": Case(base, "optimum_drops", fits_radix),
    # Without it groups of one switch (a = 1): a mesh of switches, not a dragonfly.
    "within_max_groups": Case(base, "optimum_drops", within_max_groups),
    # Ratio 1/2: without it m = q = 1, ratios far above the limit.
    "meets_ratios": Case(lambda: problem(96, max_ratio=0.5), "optimum_drops", meets_ratios),
    # At most 3 switches a route: 8 switches a group, 3 groups; without it the 4-hop optimum.
    "meets_hops": Case(lambda: problem(96, max_switch_hops=3), "optimum_drops", meets_hops),
    # One plane: a switch failure cuts its GPUs off their only plane.
    "meets_failure": Case(
        lambda: problem(96, min_fraction_after_failure=0.5), "becomes_feasible", meets_failure
    ),
    # 1,300 ns: below the free optimum's 1,367 ns, above the 1,164 ns of 8 switches a group.
    "meets_latency": Case(
        lambda: problem(96, max_latency_ns=1300.0), "optimum_drops", meets_latency
    ),
    # Capex below the free optimum's $295,500, and no cheaper dragonfly.
    "meets_caps": Case(
        lambda: problem(96, max_capex_usd=290_000.0), "becomes_feasible", meets_caps
    ),
    # A valid cut: the same optimum without it, but candidates it cut are priced.
    "reaches_across": Case(short_reach, "same_optimum"),
    # 16 switches a plane (the optimum has 24): 8 big ones in groups of 2, dearer.
    "meets_pins": Case(
        lambda: replace(base(), pins=dm.Pins(switches=16)), "optimum_drops", meets_pins
    ),
}

#: The registry these cases cover (``tests/families/test_constraint_registries.py``).
COVERS = ((dm.CONSTRAINTS, CASES),)


@cache
def solve(p: dm.DragonflyProblem) -> dm.DragonflySolution:
    return dm.solve(dm.build(p))


def test_every_family_has_a_case() -> None:
    assert set(CASES) == set(dm.CONSTRAINTS), (
        f"no binding case: {sorted(set(dm.CONSTRAINTS) - set(CASES))}; "
        f"stale cases: {sorted(set(CASES) - set(dm.CONSTRAINTS))}"
    )


def test_every_family_is_a_predicate_of_the_module() -> None:
    assert all(getattr(dm, name) is fn for name, fn in dm.CONSTRAINTS.items())


def test_an_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="no constraint family"):
        replace(base(), leave_out=frozenset({"fits_ports"}))


@pytest.mark.parametrize("family", list(dm.CONSTRAINTS))
def test_the_family_binds(family: str) -> None:
    case = CASES[family]
    p = case.problem()
    kept = solve(p)
    without = solve(replace(p, leave_out=frozenset({family})))
    assert without.status is Status.OPTIMAL, "leaving a family out never makes a problem infeasible"
    assert without.priced is not None
    if case.binds == "becomes_feasible":
        assert kept.status is Status.INFEASIBLE
    else:
        assert kept.status is Status.OPTIMAL
        assert kept.priced is not None
        if case.binds == "optimum_drops":
            assert without.priced.objective_usd < kept.priced.objective_usd * (1 - OBJECTIVE_RTOL)
        else:
            assert without.priced.objective_usd == pytest.approx(
                kept.priced.objective_usd, rel=OBJECTIVE_RTOL
            )
            assert without.examined > kept.examined, "the family cuts no candidate here"
    if case.rule is not None:
        if kept.priced is not None:
            assert case.rule(p, kept.priced), "the design with the family breaks its rule"
        assert not case.rule(p, without.priced), "without the family the rule still holds"
