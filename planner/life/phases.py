"""Each phase of a planned life: its design built and checked, its row in the phase table."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl

from models import layer_growth as lg
from models.life_cost import Phase, phase_terms
from planner.deadline import Deadline
from planner.design import Design
from planner.families import fabric_of, family_of
from planner.life.blocks import Inventory
from planner.life.shape import BlockShape
from planner.planning import plan, verify_for
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.validation import validate_design

#: Columns of the phase table.
PHASE_SCHEMA: dict[str, Any] = {
    "family": pl.Utf8,
    "phase": pl.Int64,
    "at_years": pl.Float64,
    "gpus": pl.Int64,
    "generation": pl.Utf8,
    "blocks": pl.Int64,
    "blocks_added": pl.Int64,
    "blocks_refreshed": pl.Int64,
    "top_devices": pl.Int64,
    "top_devices_added": pl.Int64,
    "top_model": pl.Utf8,
    "capex_usd": pl.Float64,
    "power_kw": pl.Float64,
    "links_recabled": pl.Int64,
    "circuits_changed": pl.Int64,
    "gpu_hours_disturbed": pl.Float64,
    "present_cost_usd": pl.Float64,
    "cumulative_present_usd": pl.Float64,
    "violations": pl.Int64,
    "fraction_of_ideal": pl.Float64,
}


def energy_usd_per_wh(inst: Instance) -> float:
    """Energy price of one watt-hour drawn by the network, the facility's overhead included."""
    return inst.objective.energy_usd_per_kwh * inst.objective.pue / 1000.0


def phase_instance(
    inst: Instance, family: str, final: Design, shape: BlockShape, blocks: int, top_size: int
) -> Instance:
    """The instance pricing one phase: its blocks and top devices pinned in ``final``'s models."""
    three = final.num_tiers == 3
    below = final.tiers[:-1]
    per_block = [t.switches // (final.pods if three else below[-1].switches) for t in below]
    switches = [n * blocks for n in per_block] + [shape.groups * top_size]
    models = [t.switch_model for t in (final.tiers if not final.tiers[-1].ocs else below)]
    pin: dict[str, Any] = {
        "family": family,
        "planes": 1,
        "tiers": final.num_tiers,
        "switch_models": models,
        "switches": switches,
    }
    if three:
        pin["pods"] = blocks
    return inst.with_changes(
        {
            "cluster.gpus": blocks * shape.gpus,
            "cluster.nic_gbps": final.link_speed_gbps,
            "cluster.nic": final.nic or None,
            "search.families": [family],
            "search.pin": pin,
            "life": None,
        }
    )


def phase_designs(
    inst: Instance,
    family: str,
    finals: dict[str, Design],
    shapes: dict[str, BlockShape],
    growth: lg.Growth,
    inv: Inventory,
    catalog: Catalog,
    deadline: Deadline,
) -> list[Design | None]:
    """Each phase's design, in the newest installed generation's models (module docstring)."""
    assert inst.life is not None
    names = [g.name for g in inst.life.generations]
    speeds = [g.nic_gbps for g in inst.life.generations]
    out: list[Design | None] = []
    for j, state in enumerate(growth.states):
        newest = names[inv.newest(j)]
        final, shape = finals[newest], shapes[newest]
        result = plan(
            phase_instance(inst, family, final, shape, inv.blocks(j), state.size),
            catalog=catalog,
            time_limit_s=deadline.step_s() / (2 * (len(growth.states) - j)),
            alternatives=False,
            verify=False,
        )
        d = result.design
        mixed = len({speeds[g] for g, n in enumerate(inv.by_generation[j]) if n > 0}) > 1
        if d is not None and d.num_tiers == 3 and mixed:  # each pod or block at its own rate
            rates = [speeds[g] for g, n in enumerate(inv.by_generation[j]) for _ in range(n)]
            d = replace(d, block_speed_gbps=tuple(rates))
        out.append(d)
    return out


def circuits_changed(blocks: list[int], uplinks: int, installed: Design | None = None) -> list[int]:
    """Circuits each phase changes as blocks join a direct-connect fabric: the fewest the rules allow.

    Each phase's block topology is the even mesh of its blocks (``uplinks`` circuits each)
    that changes the fewest circuits of the one before (``models.ocs_growth.next_topology``,
    exact); the count is the logical change between the two, which no assignment of circuits
    to devices can beat (``changed_circuits_lower_bound``) and which the device-group solve of
    ``models.ocs_growth.grow`` reaches on a 256-OCS step. The first phase changes the standing
    fabric's circuits (``installed``), if any, else builds its mesh from nothing (0 changed).
    """
    from models import ocs_growth

    out: list[int] = []
    x = None if installed is None else _topology(installed)
    for n in blocks:
        ports = [uplinks] * n
        grown = ocs_growth.uniform_mesh(ports) if x is None else ocs_growth.next_topology(x, ports)
        out.append(0 if x is None else ocs_growth.changed_circuits_lower_bound(x, grown))
        x = grown
    return out


def _topology(d: Design) -> np.ndarray | None:
    if not d.circuits:
        return None
    x = np.zeros((d.pods, d.pods), dtype=np.int64)
    for a, b, _, k in d.circuits:
        x[a, b] += k
        x[b, a] += k
    return x


def fraction(inst: Instance, d: Design | None, deadline: Deadline) -> float | None:
    """Least fraction of ideal over the healthy ``[verify]`` traffic (None: not simulated)."""
    if d is None or deadline.expired:
        return None
    from planner.sim.simulate import simulate

    verify = verify_for(inst.with_changes({"life": None}), d).model_copy(
        update={"failures": [], "single_switch_failures": False, "monte_carlo_trials": 0}
    )
    sim = simulate(d, verify, fabric=fabric_of(d), deadline=deadline.for_step())
    healthy = sim.collectives.filter(pl.col("scenario") == "healthy")
    least = healthy["fraction_of_ideal"].min()
    return None if least is None else float(least)  # type: ignore[arg-type]


def phase_table(
    inst: Instance,
    family: str,
    growth: lg.Growth,
    inv: Inventory,
    phases: list[Phase],
    circuits: list[int],
    designs: list[Design | None],
    fractions: list[float | None],
    top_models: list[str],
    catalog: Catalog,
) -> pl.DataFrame:
    """One row per phase (``planner.life.plan.PHASE_SCHEMA``)."""
    life = inst.life
    assert life is not None
    r, usd_per_wh = life.discount_rate, energy_usd_per_wh(inst)
    rows, cumulative, before = [], 0.0, 0
    for j, (p, ph, state) in enumerate(zip(life.phases, phases, growth.states, strict=True)):
        end = life.phases[j + 1].at_years if j + 1 < len(life.phases) else life.horizon_years
        present = phase_terms(ph, end, r, usd_per_wh, life.gpu_hour_usd).total_usd
        cumulative += present
        d = designs[j]
        devices = growth.devices[j]
        refreshed = j > 0 and state.generation != growth.states[j - 1].generation
        rows.append(
            {
                "family": family,
                "phase": j,
                "at_years": p.at_years,
                "gpus": p.gpus,
                "generation": p.generation,
                "blocks": inv.blocks(j),
                "blocks_added": inv.added[j],
                "blocks_refreshed": inv.refreshed[j],
                "top_devices": devices,
                "top_devices_added": devices if refreshed else devices - before,
                "top_model": top_models[j],
                "capex_usd": ph.capex_usd,
                "power_kw": ph.power_w / 1e3,
                "links_recabled": growth.moved_links[j],
                "circuits_changed": circuits[j],
                "gpu_hours_disturbed": ph.disrupted_gpu_hours,
                "present_cost_usd": present,
                "cumulative_present_usd": cumulative,
                "violations": None
                if d is None
                else len(validate_design(d, family_of(d.family), catalog)),
                "fraction_of_ideal": fractions[j],
            }
        )
        before = devices
    return pl.DataFrame(rows, schema=PHASE_SCHEMA)
