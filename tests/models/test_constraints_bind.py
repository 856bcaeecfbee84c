"""Every constraint family of the Clos sizing model has a case that makes it bind (Calliope style).

For each family in ``models.clos_sizing.CONSTRAINTS`` (and the budget pair built in ``build``) a
small problem where leaving the family out changes the outcome: the optimum drops, an infeasible
problem becomes feasible, or the solution found without it breaks the rule the family states
(checked on the solver's values). ``cuts.port_capacity`` is the exception on purpose: valid
inequalities cut off no solution, so its case shows the optimum is the same with and without.
A family with no case here fails ``test_every_family_has_a_case``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from typing import Literal

import pytest
from ortools.sat.python import cp_model

from models import clos_sizing as cs
from models.status import Status, status_of
from planner.families import search_families
from planner.loading import load_catalog
from planner.schema.instance import Instance
from planner.sizing import structures_of

#: Relative tolerance when two optima are compared (CP-SAT objectives are integers in units, so
#: equal optima are exactly equal; the slack only guards the float conversion).
OBJECTIVE_RTOL = 1e-9
#: Time limit per solve; every case here is proven optimal (or infeasible) in well under a second.
TIME_LIMIT_S = 30.0
#: Families built by ``cs.build`` outside ``CONSTRAINTS``.
BUDGETS = ("budget.power", "budget.capex")

Binds = Literal["optimum_drops", "becomes_feasible", "breaks_rule", "same_optimum"]
Values = dict[str, int]


# ---- problems ------------------------------------------------------------------------------------
@cache
def problem(gpus: int, tiers: int, family: str = "clos") -> cs.SizingProblem:
    """The one-plane structure of a small instance built in code (default catalog, 400G NIC)."""
    inst = Instance.model_validate(
        {
            "name": f"bind-{gpus}-{tiers}-{family}",
            "cluster": {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": [family], "pin": {"tiers": tiers}}
            if family == "clos"
            else {"families": [family]},
        }
    )
    (st,) = [
        s
        for s in structures_of(inst, load_catalog(), search_families(inst))
        if s.problem is not None
    ]
    assert st.problem is not None
    return st.problem


def base() -> cs.SizingProblem:
    """256 GPUs, two tiers, 1:1: eight qm9700 leaves under four spines at the optimum."""
    return problem(256, 2)


def with_requirements(p: cs.SizingProblem, **changes: object) -> cs.SizingProblem:
    return replace(p, requirements=replace(p.requirements, **changes))  # type: ignore[arg-type]


def options(p: cs.SizingProblem, tier: int, *names: str) -> tuple[cs.SwitchOption, ...]:
    by_name = {o.name: o for o in p.switch_options[tier - 1]}
    return tuple(by_name[n] for n in names)


def too_wide_for_one_model() -> cs.SizingProblem:
    """4,096 endpoints on two tiers of 64-port switches (at most 64 x 32 = 2,048 at 1:1).

    Each tier may use qm9700 or an identical copy of it; a switch that were both would have 128
    ports, enough for 4,096 endpoints.
    """
    p = base()
    (qm,) = options(p, 1, "qm9700")
    pair = (qm, replace(qm, name="qm9700-copy"))
    return replace(p, endpoints=4096, switch_options=(pair, pair))


def mixed_protocols() -> cs.SizingProblem:
    """Ethernet is the only leaf, InfiniBand the only spine."""
    p = base()
    return replace(p, switch_options=(options(p, 1, "tomahawk4-25t"), options(p, 2, "qm9700")))


def prime_racks() -> cs.SizingProblem:
    """31 endpoints per rack: a top-of-rack leaf may only serve 1 or 31 of them."""
    return replace(base(), endpoints=248, endpoints_per_rack=31)


def ocs_pinned_odd() -> cs.SizingProblem:
    """OCS direct-connect blocks whose spines are pinned to one port per OCS device."""
    p = problem(512, 2, "ocs_direct")
    assert p.top_ocs
    q: list[int | None] = [None] * (p.tiers - 1)
    q[-1] = 1
    return replace(p, pins=replace(p.pins, parallel_links=tuple(q)))


def ocs_small_spines() -> cs.SizingProblem:
    """2,048 GPUs on 16-port switches under an OCS layer, routed with transit.

    A leaf serves 8 GPUs, a block at most 8 leaves (64 GPUs): at least 32 blocks, and a spine
    has at most 8 uplinks, so no spine can reach every other block.
    """
    p = problem(2048, 3, "ocs_direct")
    assert p.top_ocs
    assert p.ocs_transit
    small = tuple(
        tuple(replace(o, radix=16) for o in opts if o.name == "qm9700") or opts
        for opts in p.switch_options[:2]
    )
    return replace(p, switch_options=(*small, p.switch_options[2]))


# ---- rules on the solver's values ----------------------------------------------------------------
def chosen(p: cs.SizingProblem, values: Values, t: int) -> list[cs.SwitchOption]:
    return [o for o in p.switch_options[t - 1] if values[f"x[{t},{o.name}]"]]


def one_model_per_tier(p: cs.SizingProblem, values: Values) -> bool:
    return all(len(chosen(p, values, t)) == 1 for t in range(1, p.tiers + 1))


def spread_evenly(p: cs.SizingProblem, values: Values) -> bool:
    return all(
        values[f"u[{t}]"] == values[f"f[{t}]"] * values[f"q[{t}]"] for t in range(1, p.tiers)
    )


def wired_as_a_clos(p: cs.SizingProblem, values: Values) -> bool:
    assert p.tiers == 2
    return values["f[1]"] == values["n[2]"] and values["d[2]"] == values["n[1]"] * values["q[1]"]


def one_placement_dividing_the_rack(p: cs.SizingProblem, values: Values) -> bool:
    placed = [pi for pi in p.placements if values[f"y[{pi}]"]]
    if len(placed) != 1:
        return False
    return placed[0] != cs.TOP_OF_RACK or p.endpoints_per_rack % values["d[1]"] == 0


def one_protocol(p: cs.SizingProblem, values: Values) -> bool:
    return len({o.protocol for t in range(1, p.tiers + 1) for o in chosen(p, values, t)}) == 1


def even_ocs_ports(p: cs.SizingProblem, values: Values) -> bool:
    return values[f"q[{p.tiers - 1}]"] % 2 == 0


def spines_reach_every_block(p: cs.SizingProblem, values: Values) -> bool:
    return values["u[2]"] >= values["pods"] - 1


# ---- the table -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """How one family binds: on which problem, and what leaving it out changes."""

    problem: Callable[[], cs.SizingProblem]
    binds: Binds
    rule: Callable[[cs.SizingProblem, Values], bool] | None = None
    """The rule the family states, checked on the solutions with and without it."""
    also_leave_out: frozenset[str] = frozenset()
    """Families left out with it: ``cuts.port_capacity`` restates the port budget and the
    oversubscription in aggregate (its inequalities follow from them), so on its own the
    family's absence is masked by the cuts; without both, the family's own effect shows."""


#: The valid inequalities that restate some families in aggregate.
CUTS = frozenset({"cuts.port_capacity"})


CASES: dict[str, Case] = {
    "switch.model_choice": Case(too_wide_for_one_model, "becomes_feasible", one_model_per_tier),
    "switch.port_budget": Case(base, "optimum_drops", also_leave_out=CUTS),
    "clos.coverage": Case(base, "optimum_drops"),
    "clos.even_spread": Case(base, "breaks_rule", spread_evenly),
    "clos.wiring": Case(base, "breaks_rule", wired_as_a_clos),
    "tier.oversubscription": Case(base, "optimum_drops", also_leave_out=CUTS),
    "path.hops": Case(lambda: with_requirements(base(), max_switch_hops=1), "becomes_feasible"),
    "ocs.even_ports": Case(ocs_pinned_odd, "becomes_feasible", even_ocs_ports),
    "ocs.spine_reach": Case(ocs_small_spines, "becomes_feasible", spines_reach_every_block),
    "path.latency": Case(lambda: with_requirements(base(), max_latency_ns=1), "becomes_feasible"),
    "failure.single_switch": Case(
        lambda: with_requirements(
            base(), min_fraction_after_failure=Fraction(9, 10), protected_tiers=frozenset({2})
        ),
        "optimum_drops",
    ),
    "layout.leaf_placement": Case(prime_racks, "breaks_rule", one_placement_dividing_the_rack),
    "plane.protocol": Case(mixed_protocols, "becomes_feasible", one_protocol),
    "media.plan": Case(base, "optimum_drops"),
    "media.length_tails": Case(base, "optimum_drops"),
    "pins": Case(
        lambda: replace(base(), pins=cs.Pins(switches=(16, None))), "optimum_drops"
    ),  # twice the leaves the optimum uses
    # Valid inequalities: they cut off no solution, so leaving them out must change NOTHING.
    "cuts.port_capacity": Case(base, "same_optimum"),
    "budget.power": Case(lambda: with_requirements(base(), max_power_w=1.0), "becomes_feasible"),
    "budget.capex": Case(lambda: with_requirements(base(), max_capex_usd=1.0), "becomes_feasible"),
}

#: The registry these cases cover (``tests/families/test_constraint_registries.py``).
COVERS = ((cs.CONSTRAINTS, CASES),)


# ---- solving -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """A solve read straight from the solver (``cs.solve`` assumes the structural rules hold)."""

    status: Status
    objective: float | None
    """The model's objective in its integer units (same weights with and without a family)."""
    values: Values


def solve(p: cs.SizingProblem, leave_out: frozenset[str] = frozenset()) -> Outcome:
    built = cs.build(p, leave_out)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = TIME_LIMIT_S
    solver.parameters.num_workers = 2
    status = status_of("cp_sat", solver.solve(built.model))
    assert status in (Status.OPTIMAL, Status.INFEASIBLE), f"not proven: {status}"
    if status is Status.INFEASIBLE:
        return Outcome(status, None, {})
    solution = solver.response_proto.solution
    names = [v.name for v in built.model.proto.variables]
    values = {name: int(solution[i]) for i, name in enumerate(names) if name}
    return Outcome(status, solver.objective_value, values)


def test_every_family_has_a_case() -> None:
    """A new constraint family without a case here fails the suite."""
    families = (*cs.CONSTRAINTS, *BUDGETS)
    assert set(families) == set(cs.build(base()).families)
    assert set(CASES) == set(families), (
        f"no binding case: {sorted(set(families) - set(CASES))}; "
        f"stale cases: {sorted(set(CASES) - set(families))}"
    )


@pytest.mark.parametrize("family", list(CASES))
def test_the_family_binds(family: str) -> None:
    case = CASES[family]
    p = case.problem()
    kept = solve(p, case.also_leave_out)
    without = solve(p, case.also_leave_out | {family})
    assert without.status is Status.OPTIMAL, "leaving a family out never makes a problem infeasible"
    if case.binds == "becomes_feasible":
        assert kept.status is Status.INFEASIBLE
    else:
        assert kept.status is Status.OPTIMAL
        assert kept.objective is not None
        assert without.objective is not None
        if case.binds == "optimum_drops":
            assert without.objective < kept.objective * (1 - OBJECTIVE_RTOL)
        elif case.binds == "same_optimum":
            assert without.objective == pytest.approx(kept.objective, rel=OBJECTIVE_RTOL)
    if case.rule is not None:
        if kept.status is Status.OPTIMAL:
            assert case.rule(p, kept.values), "the solution with the family breaks its rule"
        assert not case.rule(p, without.values), "without the family the rule still holds"
