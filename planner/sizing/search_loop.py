"""The search loop: solve every structure, pick the best, prove a bound, canonical ties."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from models import clos_sizing as cs
from models.status import Status
from planner.deadline import Deadline
from planner.design import Design
from planner.family_roles import SizesItself
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.sizing.designs import design_of
from planner.sizing.diagnosis import explain_infeasible
from planner.sizing.problems import (
    Outcome,
    Progress,
    SizingResult,
    Structure,
    _solve,
    allowed_switches,
    restrict_to,
    structures_of,
)

if TYPE_CHECKING:
    from planner.family_roles import Family

#: Relative tolerance under which a design's objective counts as equal to the proven bound.
OPTIMALITY_RTOL = 1e-6
#: Time for choosing the canonical design among those of the optimal objective.
TIE_BREAK_TIME_S = 10.0
#: Least time for it, even when the search used up the time limit.
TIE_BREAK_MIN_S = 1.0


def _pin_allows(inst: Instance, switch_model: str, tiers: int) -> bool:
    pin = inst.search.pin
    return all(pin.model_for(t) in (None, switch_model) for t in range(1, tiers + 1))


def search(
    inst: Instance,
    catalog: Catalog,
    families: Sequence[Family],
    *,
    time_limit_s: float = 60.0,
    progress: Progress | None = None,
    alternatives: bool = True,
    deadline: Deadline | None = None,
) -> SizingResult:
    """Solve every structure, pick the best design, prove a bound, and explain infeasibility.

    ``families`` are the ones the instance searches, resolved by the caller
    (``planner.families.search_families``). ``deadline`` is the command's end (one clock for
    the whole command); the search ends at it or ``time_limit_s`` from now, whichever is
    sooner. ``progress(done, total, label)`` is called after every family sized by its own
    model (dragonfly, torus, ...) and every Clos structure solved.
    """
    start = time.perf_counter()
    deadline = Deadline.after(time_limit_s) if deadline is None else deadline.sooner(time_limit_s)
    structures = structures_of(inst, catalog, families)
    mixed = inst.search.mixed_switch_models
    names = [s.name for s in allowed_switches(inst, catalog)]
    main: list[tuple[Structure, str | None, cs.SizingProblem]] = []
    extra: list[tuple[Structure, str | None, cs.SizingProblem]] = []
    for st in structures:
        if st.problem is None:
            continue
        if mixed:
            main.append((st, None, st.problem))
        for model_name in names:
            restricted = restrict_to(st.problem, model_name, st.family)
            if restricted is None or not _pin_allows(inst, model_name, st.tiers):
                continue
            (extra if mixed else main).append((st, model_name, restricted))
    jobs = main + (extra if alternatives or not mixed else [])
    outcomes: list[Outcome] = []
    own_families = [f for f in families if isinstance(f, SizesItself)]
    total = len(own_families) + len(jobs)

    def told(done: int, family: Family, sized: list[Outcome]) -> None:
        if progress is not None:
            progress(done, total, f"{family.name}: {_statuses(sized)}")

    own = _own_outcomes(
        inst,
        catalog,
        own_families,
        names,
        mixed,
        alternatives,
        deadline,
        later=bool(jobs),
        told=told,
    )
    own_outcomes = [o for _, sized in own for o in sized]
    outcomes.extend(own_outcomes)
    for o in own_outcomes:  # the reasons an own-model structure is infeasible, once each
        if o.structure.impossible and o.structure not in structures:
            structures.append(o.structure)
    problems: dict[int, cs.SizingProblem] = {}
    for done, (st, name, problem) in enumerate(jobs, start=1):
        remaining = deadline.remaining_s()
        share = min(remaining, 4 * remaining / (len(jobs) - done + 1))
        if share <= 0:
            sol = cs.SizingSolution(
                Status.TIME_LIMIT, st.planes, st.tiers, None, None, None, None, 0.0
            )
        else:
            sol = _solve(problem, share)
        problems[len(outcomes)] = problem
        outcomes.append(Outcome(st, name, sol))
        if progress is not None:
            label = f"{st.label}, {name or 'any switch'}: {sol.status.value}"
            progress(len(own_families) + done, total, label)
    decisive = [o for o in outcomes if (o.switch_model is None) == mixed]
    best = min(
        (o for o in decisive if o.solution.status.has_solution),
        key=lambda o: o.solution.objective_usd or math.inf,
        default=None,
    )
    bound = _global_bound(decisive)
    wall = time.perf_counter() - start
    if best is None:
        proven = all(o.solution.status is Status.INFEASIBLE for o in decisive)
        status = Status.INFEASIBLE if proven else Status.TIME_LIMIT
        explanation = (
            tuple(explain_infeasible(inst, catalog, structures, deadline))
            if proven
            else ("the time limit ran out before any design was found; raise --time-limit",)
        )
        return SizingResult(
            status, None, bound, tuple(outcomes), explanation, wall, tuple(structures)
        )
    sol = best.solution
    if best.design is not None:  # sized by its family's own model: priced already
        assert sol.objective_usd is not None
        glob = sol.objective_usd if bound is None else min(bound, sol.objective_usd)
        optimal = sol.objective_usd - glob <= OPTIMALITY_RTOL * max(1.0, abs(sol.objective_usd))
        status = Status.OPTIMAL if optimal else Status.FEASIBLE
        design = _with_search_figures(best.design, status, glob, wall)
        return SizingResult(status, design, glob, tuple(outcomes), (), wall, tuple(structures))
    if sol.status is Status.OPTIMAL:
        # Same instance, same design: among equal-cost designs take the canonical one.
        problem = problems[next(i for i, o in enumerate(outcomes) if o is best)]
        left = max(TIE_BREAK_MIN_S, deadline.remaining_s())
        sol = cs.solve_canonical(cs.build(problem), sol, min(TIE_BREAK_TIME_S, left))
    assert sol.objective_usd is not None
    glob = sol.objective_usd if bound is None else min(bound, sol.objective_usd)
    optimal = sol.objective_usd - glob <= OPTIMALITY_RTOL * max(1.0, abs(sol.objective_usd))
    status = Status.OPTIMAL if optimal else Status.FEASIBLE
    design = design_of(inst, best.structure, sol, catalog)
    design = _with_search_figures(design, status, glob, wall)
    return SizingResult(status, design, glob, tuple(outcomes), (), wall, tuple(structures))


def _statuses(outcomes: list[Outcome]) -> str:
    """A family's outcomes in a progress label: how many of each status."""
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.solution.status.value] = counts.get(o.solution.status.value, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in counts.items()) or "no structure"


def _own_outcomes(
    inst: Instance,
    catalog: Catalog,
    own: Sequence[SizesItself],
    names: list[str],
    mixed: bool,
    alternatives: bool,
    deadline: Deadline,
    *,
    later: bool,
    told: Callable[[int, Family, list[Outcome]], None] | None = None,
) -> list[tuple[SizesItself, list[Outcome]]]:
    """The structures of families sized by their own model (``SizesItself.size``), per family.

    The same options as the Clos model's structures: any switch (the decisive search when
    mixed models are allowed) and each switch model alone, all in one call per family. Each
    family gets an even share of the time left, counting the Clos model's structures (solved
    after them, ``later``) as one more when there are any; what a family leaves unused goes to
    the next. ``told(done, family, outcomes)`` is called as each family is sized.
    """
    options: tuple[str | None, ...] = ((None,) if mixed else ()) + tuple(
        names if alternatives or not mixed else ()
    )
    out: list[tuple[SizesItself, list[Outcome]]] = []
    for i, family in enumerate(own):
        share = deadline.remaining_s() / (len(own) - i + int(later))
        mine: list[Outcome] = []
        out.append((family, mine))
        for sized in family.size(inst, catalog, options, deadline.sooner(share)):
            sol = cs.SizingSolution(
                sized.status,
                sized.planes,
                sized.tiers,
                sized.objective_usd,
                sized.bound_usd,
                sized.capex_usd,
                sized.power_w,
                sized.wall_s,
            )
            st = Structure(sized.planes, sized.tiers, None, family, impossible=sized.reason or None)
            mine.append(Outcome(st, sized.switch_model, sol, sized.design))
        if told is not None:
            told(i + 1, family, mine)
    return out


def _global_bound(decisive: list[Outcome]) -> float | None:
    """Min over structures of each structure's proven bound (infeasible ones bound nothing)."""
    per_structure: dict[tuple[int, int], float] = {}
    for o in decisive:
        key = (o.structure.planes, o.structure.tiers)
        sol = o.solution
        if sol.status is Status.INFEASIBLE:
            b = math.inf
        elif sol.bound_usd is None:
            b = -math.inf
        else:
            b = sol.bound_usd
        per_structure[key] = min(per_structure.get(key, math.inf), b)
    if not per_structure:
        return None
    low = min(per_structure.values())
    if low == math.inf:
        return None
    return max(low, 0.0)


def _with_search_figures(d: Design, status: Status, bound: float, wall: float) -> Design:
    return replace(d, status=status, bound_usd=bound, solve_s=wall)
