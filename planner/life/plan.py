"""Plan a cluster's life per family: the top layer over the phases, each phase built and checked.

For each family of ``[life]`` (or ``search``):

1. **Generations.** Each generation the phases use is planned at the cluster's full size
   (``planner.planning.plan``: its NIC speed and switch models); its design gives the block
   and the top device (``planner.life.shape``). Blocks of every generation must share one
   wiring (GPUs, uplinked switches and uplinks per block), as blocks under one top layer do.
2. **Growth.** The phases' blocks (added, and refreshed oldest first), their prices then and
   the top devices on offer make a ``models.layer_growth`` problem; its exact DP chooses the
   top layer at each phase: built ahead, added to (links re-cabled) or refreshed. A top layer
   of switches must carry the fastest installed block's lane rate within the top tier's
   allowed ratio (``constraints.max_oversubscription``); an OCS passes any rate.
3. **Each phase built and checked.** The phase's design is priced with its blocks and top
   devices pinned (``search.pin``) in the newest installed generation's switch models, checked
   by the independent validator and simulated under ``[verify]`` (healthy fabric); an older
   block (a pod, or a direct-connect fabric's block) keeps its own generation's rate
   (``Design.block_speed_gbps``), so a circuit runs at its slower end's rate and each GPU is
   judged at its own NIC. A two-tier design's leaves are simulated at the newest rate.
4. **Circuits.** On a direct-connect fabric, the circuits between phases change as blocks join;
   the phase table counts the fewest changes an even mesh of the new blocks allows
   (``planner.life.phases.circuits_changed``), priced per circuit.

The phase table has one row per family and phase; every cost in it comes from the growth
model (present values from ``models.life_cost``), every fraction from the simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from models import layer_growth as lg
from models.life_cost import HOURS_PER_YEAR, LifeTerms, Phase, energy_factor, life_cost
from planner.deadline import Deadline
from planner.design import Design
from planner.errors import InputError
from planner.life.blocks import Inventory, inventory_of
from planner.life.phases import (
    PHASE_SCHEMA as PHASE_SCHEMA,
)
from planner.life.phases import (
    circuits_changed,
    energy_usd_per_wh,
    fraction,
    phase_designs,
    phase_table,
)
from planner.life.shape import BlockShape, block_shape
from planner.planning import catalog_for, load_design, plan
from planner.schema.catalog import Catalog
from planner.schema.instance import DEFAULT_TIME_LIMIT_S, Instance
from planner.schema.life import NO_LIFE, Life
from planner.solver_parts import load_solvers

#: Columns of the cost curve: each family's present cost so far at points of the life.
CURVE_SCHEMA: dict[str, Any] = {
    "family": pl.Utf8,
    "at_years": pl.Float64,
    "cumulative_present_usd": pl.Float64,
}
#: Points per phase on the cost curve (energy accrues between phases).
CURVE_STEPS = 24

#: Columns of the life totals: one row per family.
TOTALS_SCHEMA: dict[str, Any] = {
    "family": pl.Utf8,
    "capex_usd": pl.Float64,
    "capex_present_usd": pl.Float64,
    "energy_present_usd": pl.Float64,
    "disruption_present_usd": pl.Float64,
    "total_present_usd": pl.Float64,
    "final_power_kw": pl.Float64,
    "mean_power_kw": pl.Float64,
}


@dataclass(frozen=True)
class FamilyLife:
    """One family's life: its shapes, the growth chosen, each phase's design and the table."""

    family: str
    finals: dict[str, Design]
    """Each generation's design at the cluster's full size, by generation name."""
    shapes: dict[str, BlockShape]
    growth: lg.Growth
    terms: LifeTerms
    designs: tuple[Design | None, ...]
    table: pl.DataFrame


@dataclass(frozen=True)
class LifePlan:
    """Every family's life, their phase tables stacked, and one row of totals per family."""

    instance: Instance
    families: dict[str, FamilyLife]
    table: pl.DataFrame
    totals: pl.DataFrame


def generation_instance(inst: Instance, family: str, generation: str) -> Instance:
    """The instance at full size in one generation: its NIC, its switches, one family."""
    life = life_of(inst)
    gen = next(g for g in life.generations if g.name == generation)
    changes: dict[str, Any] = {
        "search.families": [family],
        "cluster.nic_gbps": gen.nic_gbps,
        "cluster.nic": gen.nic,
    }
    if gen.switch_models is not None:
        changes["search.switch_models"] = list(gen.switch_models)
    return inst.with_changes(changes)


def plan_life(
    inst: Instance,
    *,
    catalog: Catalog | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    deadline: Deadline | None = None,
    simulate: bool = True,
) -> LifePlan:
    """Plan the instance's ``[life]`` for each of its families (module docstring)."""
    life = life_of(inst)
    deadline = deadline or Deadline.after(time_limit_s)
    catalog = catalog or catalog_for(inst)
    load_solvers("search", "sim")
    families = list(life.families or inst.search.families)
    installed = None if life.installed is None else load_design(Path(life.installed))
    if installed is not None:
        families = [check_installed(life, installed)]  # the families listed do not apply
    lives = {}
    for done, family in enumerate(families):
        share = deadline.step_s() / (len(families) - done)
        lives[family] = _family_life(
            inst, family, catalog, Deadline.after(share), simulate, installed
        )
    table = pl.concat([f.table for f in lives.values()], how="vertical")
    totals = pl.DataFrame([_totals_row(inst, f) for f in lives.values()], schema=TOTALS_SCHEMA)
    return LifePlan(inst, lives, table, totals)


def life_of(inst: Instance) -> Life:
    """The instance's ``[life]``; InputError when it has none."""
    if inst.life is None:
        raise InputError(NO_LIFE)
    return inst.life


def _family_life(
    inst: Instance,
    family: str,
    catalog: Catalog,
    deadline: Deadline,
    simulate: bool,
    installed: Design | None,
) -> FamilyLife:
    life = life_of(inst)
    first_gen = [life.generations[0].name] if installed is not None else []
    used = list(dict.fromkeys([*first_gen, *(p.generation for p in life.phases)]))
    finals: dict[str, Design] = {}
    for done, gen in enumerate(used):
        result = plan(
            generation_instance(inst, family, gen),
            catalog=catalog,
            time_limit_s=deadline.step_s() / (2 * (len(used) - done)),
            alternatives=False,
            verify=False,
        )
        if result.design is None:
            raise InputError(
                f"life: {family} has no design at {inst.cluster.gpus:,} GPUs in generation "
                f"{gen!r}: " + "; ".join(result.explanation)
            )
        finals[gen] = result.design
    shapes = {gen: block_shape(d) for gen, d in finals.items()}
    first = shapes[used[0]]
    for gen, shape in shapes.items():
        if not shape.same_wiring(first):
            raise InputError(
                f"life: {family}'s blocks differ between generations {used[0]!r} and {gen!r} "
                f"({first.gpus} GPUs, {first.groups} x {first.group_uplinks} uplinks against "
                f"{shape.gpus}, {shape.groups} x {shape.group_uplinks}); blocks under one top "
                "layer share their wiring: give the generations switch models of one radix"
            )
    ocs = finals[used[0]].tiers[-1].ocs
    standing = None if installed is None else standing_of(inst, installed, first)
    problem, inventory = growth_problem(inst, shapes, ocs=ocs, standing=standing)
    growth = lg.solve(problem)
    designs = phase_designs(inst, family, finals, shapes, growth, inventory, catalog, deadline)
    blocks = [inventory.blocks(j) for j in range(len(life.phases))]
    uplinks = first.groups * first.group_uplinks
    circuits = circuits_changed(blocks, uplinks, installed) if ocs else [0] * len(blocks)
    phases = _with_other_disruption(inst, growth, inventory, circuits, first)
    terms = life_cost(
        phases, life.horizon_years, life.discount_rate, energy_usd_per_wh(inst), life.gpu_hour_usd
    )
    fractions = [fraction(inst, d, deadline) if simulate else None for d in designs]
    names = [g.name for g in life.generations]
    top_models = [shapes[names[s.generation]].top_model for s in growth.states]
    table = phase_table(
        inst, family, growth, inventory, phases, circuits, designs, fractions, top_models, catalog
    )
    return FamilyLife(family, finals, shapes, growth, terms, tuple(designs), table)


def check_installed(life: Life, installed: Design) -> str:
    """The family a standing fabric's life is planned for: its own, it grows as what it is.

    InputError, before anything is planned, when the life cannot start from it.
    """
    gen = life.generations[0]
    if installed.link_speed_gbps != gen.nic_gbps:
        raise InputError(
            f"life.installed: its links run at {installed.link_speed_gbps}G; the first "
            f"generation ({gen.name!r}) is {gen.nic_gbps}G"
        )
    return installed.family


def standing_of(inst: Instance, installed: Design, shape: BlockShape) -> tuple[int, lg.State]:
    """The blocks and top layer of a standing fabric, as the growth model's start.

    InputError unless it is the first generation's kind of fabric: its blocks wired as the
    first generation's (``BlockShape.same_wiring``), its top devices that generation's model,
    and no more blocks than the first phase holds (its speed: ``check_installed``).
    """
    life = life_of(inst)
    own = block_shape(installed)
    where = "life.installed"
    if not own.same_wiring(shape) or own.top_model != shape.top_model:
        raise InputError(
            f"{where}: its blocks ({own.gpus} GPUs, {own.groups} x {own.group_uplinks} uplinks, "
            f"top {own.top_model}) are not the first generation's ({shape.gpus} GPUs, "
            f"{shape.groups} x {shape.group_uplinks}, top {shape.top_model}): give the first "
            "generation the standing fabric's switch models"
        )
    blocks = installed.gpus // own.gpus
    size = installed.tiers[-1].switches // own.groups
    if size not in shape.sizes:
        raise InputError(f"{where}: {size} top devices a group is not a size its wiring allows")
    if blocks > math.ceil(life.phases[0].gpus / shape.gpus):
        raise InputError(
            f"{where}: {installed.gpus:,} GPUs stand, more than the first phase's "
            f"{life.phases[0].gpus:,}"
        )
    return blocks, lg.State(size, 0)


def growth_problem(
    inst: Instance,
    shapes: dict[str, BlockShape],
    *,
    ocs: bool,
    standing: tuple[int, lg.State] | None = None,
) -> tuple[lg.GrowthProblem, Inventory]:
    """The top layer's growth problem of one family's life (module docstring, step 2).

    ``standing``: the blocks and top layer of a fabric standing before the first phase.
    """
    life = life_of(inst)
    names = [g.name for g in life.generations]
    first = next(iter(shapes.values()))
    inv = inventory_of(life, first.gpus, standing[0] if standing else 0)
    speeds = [g.nic_gbps for g in life.generations]
    cap = _top_cap(inst)
    phases = []
    for j, p in enumerate(life.phases):
        gen = names.index(p.generation)
        shape = shapes[p.generation]
        bought = inv.added[j] + inv.refreshed[j]
        offered = sorted({names.index(n) for n in shapes if names.index(n) <= gen})
        newest = inv.newest(j)
        floor = 0 if ocs else min(r for r in offered if speeds[newest] / speeds[r] <= cap + 1e-9)
        phases.append(
            lg.GrowthPhase(
                at_years=p.at_years,
                blocks=inv.blocks(j),
                blocks_usd=bought * shape.block_usd * p.price_factor,
                blocks_w=sum(n * shapes[names[g]].block_w for g, n in _counts(inv, j)),
                options=tuple(shapes[names[r]].option(r, p.price_factor) for r in offered),
                min_generation=floor,
            )
        )
    problem = lg.GrowthProblem(
        phases=tuple(phases),
        groups=first.groups,
        group_uplinks=first.group_uplinks,
        sizes=first.sizes,
        gpu_hours_per_moved_link=life.gpu_hours_per_moved_link,
        horizon_years=life.horizon_years,
        discount_rate=life.discount_rate,
        energy_usd_per_wh=energy_usd_per_wh(inst),
        gpu_hour_usd=life.gpu_hour_usd,
        installed=None if standing is None else standing[1],
        installed_blocks=0 if standing is None else standing[0],
    )
    return problem, inv


def _counts(inv: Inventory, j: int) -> list[tuple[int, int]]:
    return [(g, n) for g, n in enumerate(inv.by_generation[j]) if n > 0]


def _top_cap(inst: Instance) -> float:
    caps = inst.constraints.max_oversubscription
    return float(caps[-1] if isinstance(caps, list) else caps)


def _with_other_disruption(
    inst: Instance, growth: lg.Growth, inv: Inventory, circuits: list[int], shape: BlockShape
) -> list[Phase]:
    """The growth's phases with refreshed blocks and changed circuits added to their GPU-hours."""
    life = life_of(inst)
    return [
        replace(
            ph,
            disrupted_gpu_hours=ph.disrupted_gpu_hours
            + inv.refreshed[j] * shape.gpus * life.gpu_hours_per_refreshed_gpu
            + circuits[j] * life.gpu_hours_per_changed_circuit,
        )
        for j, ph in enumerate(growth.phases)
    ]


def cost_curve(plan: LifePlan) -> pl.DataFrame:
    """Each family's present cost so far, from the first phase to the horizon (``CURVE_SCHEMA``).

    Capex and disruption arrive at their phase's date (two points there: before and after);
    energy accrues between phases as its discounted annuity (``models.life_cost``). The last
    point of a family is its whole life (``LifePlan.totals``).
    """
    life = life_of(plan.instance)
    r, per_wh = life.discount_rate, energy_usd_per_wh(plan.instance)
    dates = [p.at_years for p in life.phases] + [life.horizon_years]
    rows = []
    for family, f in plan.families.items():
        phases, total = f.table, 0.0
        for j, row in enumerate(phases.iter_rows(named=True)):
            start, end = dates[j], dates[j + 1]
            rows.append((family, start, total))
            energy_w = row["power_kw"] * 1e3 * per_wh * HOURS_PER_YEAR
            total += row["present_cost_usd"] - energy_w * energy_factor(start, end, r)
            for k in range(CURVE_STEPS + 1):
                t = start + (end - start) * k / CURVE_STEPS
                rows.append((family, t, total + energy_w * energy_factor(start, t, r)))
            total += energy_w * energy_factor(start, end, r)
    return pl.DataFrame(rows, schema=CURVE_SCHEMA, orient="row")


def _totals_row(inst: Instance, f: FamilyLife) -> dict[str, Any]:
    life = life_of(inst)
    at = [p.at_years for p in life.phases] + [life.horizon_years]
    powers = f.table["power_kw"].to_list()
    span = life.horizon_years - at[0]
    mean = sum(w * (b - a) for w, a, b in zip(powers, at, at[1:], strict=False)) / span
    return {
        "family": f.family,
        "capex_usd": float(f.table["capex_usd"].sum()),
        "capex_present_usd": f.terms.capex_usd,
        "energy_present_usd": f.terms.energy_usd,
        "disruption_present_usd": f.terms.disruption_usd,
        "total_present_usd": f.terms.total_usd,
        "final_power_kw": powers[-1],
        "mean_power_kw": mean,
    }
