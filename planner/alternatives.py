"""The ``alternatives`` table: the best design of every family and switch option of a search.

It reads the search's records (``planner.sizing.Outcome``), so it lives beside them; the report
receives the finished table (``PlanResult.alternatives``) and never a solver record.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import polars as pl

from models.clos_sizing import switch_hops
from models.status import Status
from planner.sizing import Outcome, SizingResult
from planner.sizing.problems import clos_hooks

if TYPE_CHECKING:
    from planner.design import Design
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.sim_tables import SimResult

#: Option name of the search that lets every tier use its own switch model.
MIXED = "mixed"
#: Relative tolerance under which a structure's bound counts as reaching an option's best objective.
BOUND_RTOL = 1e-6

ALTERNATIVES_SCHEMA: dict[str, Any] = {
    "family": pl.Utf8,
    "option": pl.Utf8,
    "status": pl.Utf8,
    "planes": pl.Int64,
    "tiers": pl.Int64,
    "switch_models": pl.Utf8,
    "switches": pl.Int64,
    "capex_usd": pl.Float64,
    "energy_usd": pl.Float64,
    "tco_usd": pl.Float64,
    "power_kw": pl.Float64,
    "max_switch_hops": pl.Int64,
    "delta_tco_usd": pl.Float64,
    "sim_verdict": pl.Utf8,
    "sim_fraction_ecmp": pl.Float64,
    "sim_fraction_spray": pl.Float64,
    "winner": pl.Boolean,
}

#: The simulated fractions of every family's best design, one row per family, traffic and routing.
ALTERNATIVES_SIM_SCHEMA: dict[str, Any] = {
    "family": pl.Utf8,
    "option": pl.Utf8,
    "pattern": pl.Utf8,
    "routing": pl.Utf8,
    "time_s": pl.Float64,
    "fraction_of_ideal": pl.Float64,
    "busbw_gbps": pl.Float64,
}


def _tier_models(pairs: Iterable[tuple[str, str]]) -> str:
    """'leaf=sn5600 spine=sn5600' from (role, model) pairs."""
    return " ".join(f"{role}={model}" for role, model in pairs)


def _option_of(o: Outcome) -> str:
    return o.switch_model if o.switch_model is not None else MIXED


def _option_status(best: Outcome | None, outcomes: list[Outcome]) -> Status:
    """Optimal when every other structure of the option is infeasible or bounded above the best."""
    if best is None:
        statuses = {o.solution.status for o in outcomes}
        if statuses <= {Status.INFEASIBLE}:
            return Status.INFEASIBLE
        return Status.TIME_LIMIT if Status.TIME_LIMIT in statuses else Status.ERROR
    obj = best.solution.objective_usd
    assert obj is not None
    floor = obj - BOUND_RTOL * max(1.0, abs(obj))
    for o in outcomes:
        sol = o.solution
        if sol.status is Status.INFEASIBLE:
            continue
        if o is best:
            if sol.status is not Status.OPTIMAL:
                return Status.FEASIBLE
            continue
        if sol.bound_usd is None or sol.bound_usd < floor:
            return Status.FEASIBLE
    return Status.OPTIMAL


def _winner_option(result: SizingResult) -> tuple[str, str] | None:
    """The (family, option) whose search produced the design (mixed when mixed models were allowed)."""
    d = result.design
    if d is None:
        return None
    if any(o.switch_model is None for o in result.outcomes):
        return d.family, MIXED
    return d.family, d.tiers[0].switch_model


def _figures(o: Outcome) -> dict[str, Any]:
    """The columns of an option's best outcome: from its design, or from the Clos solution."""
    d = o.design
    if d is not None:
        return {
            "planes": d.planes,
            "tiers": d.num_tiers,
            "switch_models": _tier_models((t.role, t.switch_model) for t in d.tiers),
            "switches": d.switches,
            "capex_usd": d.capex_usd,
            "energy_usd": d.energy_usd,
            "tco_usd": d.tco_usd,
            "power_kw": d.power_w / 1000.0,
            "max_switch_hops": d.max_switch_hops,
        }
    sol, problem = o.solution, o.structure.problem
    if sol.capex_usd is None or sol.power_w is None or problem is None:
        return {}
    energy = sol.power_w * problem.energy_usd_per_w
    family = o.structure.family
    roles = family.roles(sol.tiers)
    circuits = clos_hooks(family).circuit_level(sol.tiers)
    packet = [t for t in sol.tier_solutions if t.level != circuits]
    return {
        "planes": sol.planes,
        "tiers": sol.tiers,
        "switch_models": _tier_models(
            (roles[t.level - 1], t.switch_model) for t in sol.tier_solutions
        ),
        "switches": sol.planes * sum(t.switches for t in packet),
        "capex_usd": sol.capex_usd,
        "energy_usd": energy,
        "tco_usd": sol.capex_usd + energy,
        "power_kw": sol.power_w / 1000.0,
        "max_switch_hops": switch_hops(problem),
    }


def _found(outcomes: Iterable[Outcome]) -> list[Outcome]:
    return [
        o
        for o in outcomes
        if o.solution.status.has_solution and o.solution.objective_usd is not None
    ]


def family_bests(result: SizingResult) -> dict[str, Outcome]:
    """The best outcome of every family the search found a design of, by family name."""
    best: dict[str, Outcome] = {}
    for o in _found(result.outcomes):
        family = o.structure.family.name
        held = best.get(family)
        if held is None or (o.solution.objective_usd or math.inf) < (
            held.solution.objective_usd or math.inf
        ):
            best[family] = o
    return best


def design_of_outcome(inst: Instance, o: Outcome, catalog: Catalog, time_limit_s: float) -> Design:
    """The design of one outcome, as the search would give it had the outcome won.

    A family sized by its own model carries its design. A Clos-model outcome proven optimal
    gets the search's canonical tie-break (``models.clos_sizing.solve_canonical``), so the design
    is the one a plan of that family alone chooses, not another of equal cost.
    """
    from models import clos_sizing as cs
    from planner.sizing.designs import design_of
    from planner.sizing.problems import restrict_to

    if o.design is not None:
        return o.design
    sol, problem = o.solution, o.structure.problem
    assert problem is not None
    if o.switch_model is not None:
        problem = restrict_to(problem, o.switch_model, o.structure.family)
    if problem is not None and sol.status is Status.OPTIMAL:
        sol = cs.solve_canonical(cs.build(problem), sol, time_limit_s)
    return design_of(inst, o.structure, sol, catalog)


def alternatives_sim_table(bests: dict[str, Outcome], sims: dict[str, SimResult]) -> pl.DataFrame:
    """The healthy simulated rows of every family's best design (``family_sims`` of a plan)."""
    rows = []
    for family, sim in sims.items():
        o = bests.get(family)
        healthy = sim.collectives.filter(pl.col("scenario") == "healthy")
        for r in healthy.iter_rows(named=True):
            rows.append(
                {
                    "family": family,
                    "option": None if o is None else _option_of(o),
                    "pattern": r["pattern"],
                    "routing": r["routing"],
                    "time_s": r["time_s"],
                    "fraction_of_ideal": r["fraction_of_ideal"],
                    "busbw_gbps": r["busbw_gbps"],
                }
            )
    return pl.DataFrame(rows, schema=ALTERNATIVES_SIM_SCHEMA)


def alternatives_table(
    result: SizingResult, sims: dict[str, SimResult] | None = None
) -> pl.DataFrame:
    """Tabulate the best design of every switch option (each model alone, and mixed).

    With ``sims`` (a plan over several families, verified), each family's best row also gives
    its design's simulated verdict and least fractions of ideal over the [verify] traffic.
    """
    sims = sims or {}
    bests = family_bests(result)
    groups: dict[tuple[str, str], list[Outcome]] = {}
    for o in result.outcomes:
        groups.setdefault((o.structure.family.name, _option_of(o)), []).append(o)
    winner = _winner_option(result)
    rows: list[dict[str, Any]] = []
    for (family, option), outcomes in groups.items():
        found = _found(outcomes)
        best = min(found, key=lambda o: o.solution.objective_usd or math.inf, default=None)
        row: dict[str, Any] = dict.fromkeys(ALTERNATIVES_SCHEMA)
        row.update(
            family=family,
            option=option,
            status=_option_status(best, outcomes).value,
            winner=(family, option) == winner,
        )
        if best is not None:
            row.update(_figures(best))
            sim = sims.get(family)
            if sim is not None and bests.get(family) is best:
                row.update(
                    sim_verdict=sim.verdict,
                    sim_fraction_ecmp=sim.fractions.get("sim_fraction_ecmp"),
                    sim_fraction_spray=sim.fractions.get("sim_fraction_spray"),
                )
        rows.append(row)
    table = pl.DataFrame(rows, schema=ALTERNATIVES_SCHEMA)
    winner_tco = table.filter(pl.col("winner"))["tco_usd"]
    base = winner_tco[0] if len(winner_tco) and winner_tco[0] is not None else None
    table = table.with_columns(
        (pl.col("tco_usd") - base).alias("delta_tco_usd")
        if base is not None
        else pl.lit(None, pl.Float64).alias("delta_tco_usd")
    )
    return table.sort(
        ["tco_usd", "winner", "family", "option"],
        descending=[False, True, False, False],
        nulls_last=True,
    )
