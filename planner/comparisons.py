"""Comparisons that plan an instance several ways: optics scenarios, and OCS against electrical."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import polars as pl

from planner.deadline import Deadline
from planner.errors import InputError
from planner.families import (
    CLOS,
    OCS_DIRECT,
    fabric_of,
    family_of,
)
from planner.families.ocs_direct.family import ONE_BLOCK, OneBlock
from planner.family_roles import Predicts
from planner.planning import catalog_for, plan, verify_demand, verify_for
from planner.report.plan_result import PlanResult
from planner.schema.catalog import Catalog
from planner.schema.instance import DEFAULT_TIME_LIMIT_S, Instance
from planner.solver_parts import load_solvers

if TYPE_CHECKING:
    from planner.sim.simulate import SimProgress
    from planner.sizing import Progress


@dataclass(frozen=True)
class OpticsComparison:
    """The instance planned once per optics scenario: the table and every scenario's result."""

    table: pl.DataFrame
    results: dict[str, PlanResult]


def compare_optics(
    inst: Instance,
    *,
    catalog: Catalog | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    progress: Progress | None = None,
    deadline: Deadline | None = None,
) -> OpticsComparison:
    """Plan the instance with pluggable optics only, with LPO allowed and with CPO allowed.

    Each scenario is a full plan (switches, placement and media chosen together) restricted to
    what it allows; ``table`` has one row per scenario (``planner.optics.COMPARISON_SCHEMA``).
    The scenarios share ``time_limit_s`` (or ``deadline``): each gets an equal part of what is
    left when it starts.
    """
    deadline = deadline or Deadline.after(time_limit_s)
    catalog = catalog or catalog_for(inst)
    load_solvers("search")
    from planner.optics import SCENARIOS, comparison_table, scenario_instance

    results = {}
    for done, name in enumerate(SCENARIOS):
        results[name] = plan(
            scenario_instance(inst, name),
            catalog=catalog,
            time_limit_s=deadline.step_s() / (len(SCENARIOS) - done),
            progress=progress,
            alternatives=False,
            verify=False,
        )
    table = comparison_table({name: r.search for name, r in results.items()})
    return OpticsComparison(table, results)


#: Columns of the electrical-vs-OCS comparison: one row per fabric and traffic.
FABRIC_COMPARISON_SCHEMA: dict[str, Any] = {
    "fabric": pl.Utf8,
    "circuits_for": pl.Utf8,
    "status": pl.Utf8,
    "switch_models": pl.Utf8,
    "switches": pl.Int64,
    "ocs_devices": pl.Int64,
    "capex_usd": pl.Float64,
    "power_kw": pl.Float64,
    "tco_usd": pl.Float64,
    "max_switch_hops": pl.Int64,
    "throughput_scale": pl.Float64,
    "traffic": pl.Utf8,
    "routing": pl.Utf8,
    "fraction_of_ideal": pl.Float64,
}


@dataclass(frozen=True)
class FabricComparison:
    """Electrical spine vs OCS direct-connect: the table and every fabric's result."""

    table: pl.DataFrame
    results: dict[str, PlanResult]


def compare_fabrics(
    inst: Instance,
    *,
    catalog: Catalog | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    progress: Progress | None = None,
    sim_progress: SimProgress | None = None,
) -> FabricComparison:
    """Price and simulate the instance as an electrical Clos and as OCS direct-connect.

    Three fabrics: the best electrical Clos; the best direct-connect design with its circuits
    engineered for uniform demand; and the same devices with the circuits engineered for the
    block-level demand of the instance's ``[verify]`` traffic. Each is simulated under every
    ``[verify]`` traffic (healthy fabric), one row per fabric, traffic and routing.

    ``time_limit_s`` bounds the whole comparison: the two searches and the engineering each get
    an equal part of what is left when they start (at least ``planner.deadline.MIN_STEP_S``),
    and the simulations start only while time is left: a fabric none of whose traffic was
    simulated has one row without traffic or fraction, and each result's ``sim.cut`` lists what
    was left out. A direct-connect design of one aggregation block has nothing for its OCS
    layer to join: its fabric has one row whose status says so (``ONE_BLOCK``), and the
    electrical Clos is compared alone.
    """
    deadline = Deadline.after(time_limit_s)
    catalog = catalog or catalog_for(inst)
    load_solvers("search", "sim", "ocs")
    from planner.families.ocs_direct import circuits as ocs
    from planner.sim.simulate import simulate as _simulate

    fabrics = {
        "electrical": inst.with_families([CLOS]),
        OCS_DIRECT: inst.with_families([OCS_DIRECT], ocs_demand="uniform"),
    }
    results: dict[str, PlanResult] = {}
    # Fabrics that cannot be compared, and why (a direct-connect design of one block).
    refused: dict[str, str] = {}
    # Heavy steps left: the two searches and the engineering of the circuits.
    for done, (name, variant) in enumerate(fabrics.items()):
        try:
            results[name] = plan(
                variant,
                catalog=catalog,
                time_limit_s=deadline.step_s() / (3 - done),
                progress=progress,
                alternatives=False,
                verify=False,
            )
        except OneBlock:
            refused[name] = ONE_BLOCK
    base = results.get(OCS_DIRECT)
    if base is not None and base.design is not None:
        demand = verify_demand(base.design, inst.verify)
        step = deadline.for_step()
        engineered = ocs.engineer(base.design, demand, deadline=step)
        design = ocs.with_circuits(base.design, engineered.circuits)
        design = replace(design, notes=design.notes + engineered.cut)
        results["ocs_engineered"] = replace(
            base, design=design, search=replace(base.search, design=design)
        )
    rows: list[dict[str, Any]] = []
    for name, result in results.items():
        d = result.design
        row: dict[str, Any] = dict.fromkeys(FABRIC_COMPARISON_SCHEMA)
        row.update(fabric=name, status=result.status.value)
        if d is None:
            rows.append(row)
            continue
        try:
            sim = _simulate(
                d,
                verify_for(inst, d).model_copy(
                    update={
                        "failures": [],
                        "single_switch_failures": False,
                        "monte_carlo_trials": 0,
                    }
                ),
                fabric=fabric_of(d),
                progress=sim_progress,
                deadline=deadline,
            )
        except ValueError as exc:  # traffic that does not fit the cluster, as in plan()
            raise InputError(f"verify: {exc}") from None
        results[name] = replace(result, sim=sim)
        row.update(
            circuits_for={"electrical": None, OCS_DIRECT: "uniform"}.get(name, "verify traffic"),
            switch_models=" ".join(f"{t.role}={t.switch_model}" for t in d.tiers),
            switches=d.switches,
            ocs_devices=d.ocs_devices,
            capex_usd=d.capex_usd,
            power_kw=d.power_w / 1000.0,
            tco_usd=d.tco_usd,
            max_switch_hops=d.max_switch_hops,
            throughput_scale=family.throughput_scale(d, inst, verify_demand)
            if isinstance(family := family_of(d.family), Predicts)
            else None,
        )
        healthy = sim.collectives.filter(pl.col("scenario") == "healthy")
        if healthy.is_empty():  # the time limit cut every simulation: the fabric, unsimulated
            rows.append(row)
        for r in healthy.iter_rows(named=True):
            rows.append(
                row
                | {
                    "traffic": r["pattern"],
                    "routing": r["routing"],
                    "fraction_of_ideal": r["fraction_of_ideal"],
                }
            )
    for name, why in refused.items():
        rows.append(dict.fromkeys(FABRIC_COMPARISON_SCHEMA) | {"fabric": name, "status": why})
    return FabricComparison(pl.DataFrame(rows, schema=FABRIC_COMPARISON_SCHEMA), results)
