"""Report tables (Polars) and the report folder: every figure a report shows is computed here, once.

The report reads only plain data: the ``Design``, the simulation's ``SimResult`` and tables
handed over by ``planner.api`` (``alternatives`` is computed from the search's records by
``planner.alternatives``); it imports no solver. ``write_reports`` writes the summary, the
alternatives, the BOM and the link table as CSV and Parquet, with
``design.json``, a human summary ``report.md``, the pictures (``planner.pictures``) and one
self-contained page ``report.html`` (``planner.report_html``), into one folder as one set, through
``planner.output`` (staging folder, manifest, lock; CSV rounded, Parquet exact).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from models.status import Status
from planner.deadline import HINT_MARGIN, cut_notes
from planner.design import Design
from planner.output import MARKER as MARKER
from planner.output import (
    Writer,
    bytes_writer,
    check_folder,
    is_complete,
    read_manifest,
    table_writers,
    text_writer,
    write_set,
)
from planner.report_text import column_label, column_texts, count_text
from planner.schema.catalog import Cage, Catalog
from planner.schema.instance import Instance
from planner.schema.workload import Workload
from planner.workload.step import (
    StepTime,
    call_times,
    step_time,
    workload_table,
    workload_traffic,
)

if TYPE_CHECKING:
    from planner.api import PlanResult
    from planner.bandwidth_loop import LoopResult
    from planner.family_roles import Family, Presentation
    from planner.idle_pricing import PricedSearch
    from planner.sim.sim_tables import SimResult

#: Report tables written as CSV and Parquet, in this order.
TABLES = ("summary", "alternatives", "bom", "links")
#: Simulation tables, written when the design was verified.
SIM_TABLES = ("sim_collectives", "sim_links", "sim_link_histogram", "sim_failures")
#: The optics comparison (pluggable only, LPO allowed, CPO allowed), when asked for.
OPTICS_TABLE = "optics_comparison"
#: Tables written only when they apply (a stale one from an earlier run is removed).
#: The bandwidth loop's iterations (``search.until_verified``).
BANDWIDTH_LOOP_TABLE = "bandwidth_loop"
#: The ladder of allowed ratios walked when idle GPU time is priced (``planner.idle_pricing``).
IDLE_PRICING_TABLE = "idle_pricing"
OPTIONAL_TABLES = (
    OPTICS_TABLE,
    "alternatives_sim",
    BANDWIDTH_LOOP_TABLE,
    "workload",
)
#: One row per iteration of the bandwidth loop; ratios are down:up per tier (leaf, spine), the
#: allowed ones those the plan ran under, ``extra_capex_usd`` the capex over the first design's.
BANDWIDTH_LOOP_SCHEMA: dict[str, Any] = {
    "iteration": pl.Int64,
    "allowed_leaf_ratio": pl.Float64,
    "allowed_spine_ratio": pl.Float64,
    "leaf_ratio": pl.Float64,
    "spine_ratio": pl.Float64,
    "objective_usd": pl.Float64,
    "capex_usd": pl.Float64,
    "extra_capex_usd": pl.Float64,
    "verdict": pl.Utf8,
    "fraction_of_ideal": pl.Float64,
    "sim_fraction_ecmp": pl.Float64,
    "sim_fraction_spray": pl.Float64,
    "cut_tier": pl.Utf8,
    "cut_source": pl.Utf8,
    "cut_ratio": pl.Float64,
    "cut": pl.Utf8,
}

SUMMARY_SCHEMA: dict[str, Any] = {
    "instance": pl.Utf8,
    "family": pl.Utf8,
    "status": pl.Utf8,
    "gap": pl.Float64,
    "bound_usd": pl.Float64,
    "gpus": pl.Int64,
    "scale_up_gpus": pl.Int64,
    "scale_up_gbps_per_gpu": pl.Float64,
    "scale_up_switches": pl.Int64,
    "scale_up_capex_usd": pl.Float64,
    "scale_up_power_kw": pl.Float64,
    "interconnect_capex_usd": pl.Float64,
    "interconnect_power_kw": pl.Float64,
    "planes": pl.Int64,
    "tiers": pl.Int64,
    "link_speed_gbps": pl.Int64,
    "switch_models": pl.Utf8,
    "switches": pl.Int64,
    "ocs_devices": pl.Int64,
    "leaf_placement": pl.Utf8,
    "transceivers": pl.Int64,
    "transceiver_ports": pl.Int64,
    "capex_usd": pl.Float64,
    "energy_usd": pl.Float64,
    "tco_usd": pl.Float64,
    "objective_usd": pl.Float64,
    "power_kw": pl.Float64,
    "optics_power_kw": pl.Float64,
    "optics_power_share": pl.Float64,
    "oversubscription": pl.Float64,
    "bisection_gbps": pl.Float64,
    "max_switch_hops": pl.Int64,
    "max_latency_ns": pl.Float64,
    "expected_link_failures_per_day": pl.Float64,
    "blast_radius_gpus": pl.Int64,
    "solve_s": pl.Float64,
    "verdict": pl.Utf8,
    "sim_fraction_ecmp": pl.Float64,
    "sim_fraction_spray": pl.Float64,
    "sim_fraction_after_failure": pl.Float64,
    "sim_steps_cut": pl.Int64,
    "time_limit_hint_s": pl.Float64,
    "workload": pl.Utf8,
    "step_time_s": pl.Float64,
    "compute_s": pl.Float64,
    "comm_s": pl.Float64,
    "exposed_comm_s": pl.Float64,
    "idle_fraction": pl.Float64,
    "tokens_per_s": pl.Float64,
    "usd_per_million_tokens": pl.Float64,
    "idle_gpu_value_usd": pl.Float64,
    "tco_plus_idle_gpus_usd": pl.Float64,
    "gpu_power_kw": pl.Float64,
    "network_power_share": pl.Float64,
    "facility_power_kw": pl.Float64,
}


# ---- tables --------------------------------------------------------------------------------
def _tier_models(pairs: Iterable[tuple[str, str]]) -> str:
    """'leaf=sn5600 spine=sn5600' from (role, model) pairs."""
    return " ".join(f"{role}={model}" for role, model in pairs)


def summary_table(
    inst: Instance,
    status: Status,
    design: Design | None,
    bound_usd: float | None,
    solve_s: float | None,
    sim: SimResult | None = None,
) -> pl.DataFrame:
    """One row of headline figures; with no design, the row keeps instance, status and GPUs only.

    ``status``, ``bound_usd`` and ``solve_s`` are the search's (``PlanResult.summary`` hands
    them over). With a simulation, the row also gives its verdict and the simulated throughput
    fractions (the least over the traffic of each routing, healthy; the least kept under a
    failure). With a ``[workload]``, the step figures (``planner.workload.step``) when the
    simulation timed every collective of the iteration, and the GPUs' power beside the network's
    when the GPU gives its ``power_w``.
    """
    step = workload_step(inst, design, sim)
    row = _summary(
        inst.name,
        status,
        inst.cluster.gpus,
        bound_usd,
        solve_s,
        design,
        sim,
        inst.workload,
        None if step is None else step[1],
    )
    return _with_idle_value(row, inst, design, None if step is None else step[1])


def _with_workload(row: pl.DataFrame, inst: Instance) -> pl.DataFrame:
    """The summary row with the workload it assumed (``workload_text``), when there is one."""
    return row.with_columns(workload=pl.lit(workload_text(inst), pl.Utf8))


def _with_idle_value(
    row: pl.DataFrame, inst: Instance, design: Design | None, step: StepTime | None
) -> pl.DataFrame:
    """The summary row with the figures that need the instance's objective.

    The lifetime value of idle GPU time when the step is known; the facility's power,
    (GPUs + interconnect) x PUE, when the GPU gives its power.
    """
    row = _with_workload(row, inst)
    if design is None:
        return row
    gpu_kw = row["gpu_power_kw"][0]
    if gpu_kw is not None:
        it_kw = gpu_kw + design.interconnect_power_w / 1000.0
        row = row.with_columns(facility_power_kw=pl.lit(it_kw * inst.objective.pue, pl.Float64))
    if step is None:
        return row
    from planner.idle_pricing import idle_gpu_value_usd  # its loop imports the sizing model

    idle_usd = idle_gpu_value_usd(inst, step)
    return row.with_columns(
        idle_gpu_value_usd=pl.lit(idle_usd, pl.Float64),
        tco_plus_idle_gpus_usd=pl.lit(design.tco_usd + idle_usd, pl.Float64),
    )


def workload_step(
    inst: Instance, design: Design | None, sim: SimResult | None
) -> tuple[pl.DataFrame, StepTime | None] | None:
    """The ``workload`` table and the step of an instance's workload on a design.

    None without a workload or a design; the step is None (and the table's times null) until the
    simulation has timed every collective of the iteration, healthy, under the verdict's routing.
    """
    w = inst.workload
    if w is None or design is None:
        return None
    pairs = workload_traffic(w, design.scale_up.gpus)
    times = call_times(pairs, None if sim is None else sim.collectives, inst.verify.verdict_routing)
    step = step_time(w, times)
    return workload_table(times, step), step


def design_summary(
    design: Design, sim: SimResult | None = None, inst: Instance | None = None
) -> pl.DataFrame:
    """The summary row of a saved design (``simulate``): its status, bound and solve time as saved.

    With the instance (``simulate --instance``), its workload's step figures as well.
    """
    step = None if inst is None else workload_step(inst, design, sim)
    row = _summary(
        design.instance,
        design.status,
        design.gpus,
        design.bound_usd,
        design.solve_s,
        design,
        sim,
        None if inst is None else inst.workload,
        None if step is None else step[1],
    )
    if inst is None:
        return row
    return _with_idle_value(row, inst, design, None if step is None else step[1])


def _summary(
    name: str,
    status: Status,
    gpus: int,
    bound_usd: float | None,
    solve_s: float | None,
    d: Design | None,
    sim: SimResult | None,
    workload: Workload | None = None,
    step: StepTime | None = None,
) -> pl.DataFrame:
    row: dict[str, Any] = dict.fromkeys(SUMMARY_SCHEMA)
    row["verdict"] = "not verified"
    if sim is not None:
        row.update(verdict=sim.verdict, **sim.fractions)
        row.update(sim_steps_cut=len(sim.cut), time_limit_hint_s=sim.time_limit_hint_s)
    row.update(instance=name, status=status.value, gpus=gpus, bound_usd=bound_usd, solve_s=solve_s)
    if d is not None:
        row.update(
            family=d.family,
            gap=d.gap,
            bound_usd=d.bound_usd,
            gpus=d.gpus,
            scale_up_gpus=d.scale_up.gpus,
            scale_up_gbps_per_gpu=d.scale_up.gbps_per_gpu,
            scale_up_switches=d.scale_up.switches(d.gpus),
            scale_up_capex_usd=d.scale_up.capex_usd(d.gpus),
            scale_up_power_kw=d.scale_up.power_w(d.gpus) / 1000.0,
            interconnect_capex_usd=d.interconnect_capex_usd,
            interconnect_power_kw=d.interconnect_power_w / 1000.0,
            planes=d.planes,
            tiers=d.num_tiers,
            link_speed_gbps=d.link_speed_gbps,
            switch_models=_tier_models((t.role, t.switch_model) for t in d.tiers),
            switches=d.switches,
            ocs_devices=d.ocs_devices,
            leaf_placement=d.leaf_placement,
            transceivers=d.transceivers,
            transceiver_ports=d.transceiver_ports,
            capex_usd=d.capex_usd,
            energy_usd=d.energy_usd,
            tco_usd=d.tco_usd,
            objective_usd=d.objective_usd,
            power_kw=d.power_w / 1000.0,
            optics_power_kw=d.optics_power_w / 1000.0,
            optics_power_share=d.optics_power_share,
            oversubscription=d.wiring.oversubscription(d),
            bisection_gbps=d.bisection_gbps,
            max_switch_hops=d.max_switch_hops,
            max_latency_ns=d.max_latency_ns,
            expected_link_failures_per_day=d.expected_link_failures_per_day,
            blast_radius_gpus=d.blast_radius_gpus,
        )
        if workload is not None and workload.gpu.power_w is not None:
            # The network is the whole interconnect (scale-out fabric and scale-up switches).
            gpu_w = workload.gpu.power_w * d.gpus
            row.update(
                gpu_power_kw=gpu_w / 1000.0,
                network_power_share=d.interconnect_power_w / (d.interconnect_power_w + gpu_w),
            )
    if step is not None:
        row.update(
            step_time_s=step.step_s,
            compute_s=step.compute_s,
            comm_s=step.comm_s,
            exposed_comm_s=step.exposed_comm_s,
            idle_fraction=step.idle_fraction,
            tokens_per_s=step.tokens_per_s,
            usd_per_million_tokens=step.usd_per_million_tokens,
        )
    return pl.DataFrame([row], schema=SUMMARY_SCHEMA)


def _cage_text(cage: Cage | None, count: int | None) -> str:
    """'32 x osfp (8 x 100G lanes)', or 'co-packaged' for a switch without cages."""
    if cage is None:
        return "co-packaged"
    lanes = f"{cage.form_factor} ({cage.lanes} x {cage.lane_gbps}G lanes)"
    return lanes if count is None else f"{count} x {lanes}"


def catalog_table(catalog: Catalog, kind: str) -> pl.DataFrame:
    """Tabulate one kind of component ('switch', 'medium', 'nic', 'ocs'): key figures, price source.

    ``cost_source`` is the price's source in full; ``catalog_entries`` gives every source.
    """
    if kind == "switch":
        return pl.DataFrame(
            [
                {
                    "name": s.name,
                    "ports": " ".join(f"{pc.ports}x{pc.speed_gbps}G" for pc in s.port_configs),
                    "capacity_gbps": s.capacity_gbps,
                    "cost_usd": s.cost_usd,
                    "power_w": s.power_w,
                    "latency_ns": s.latency_ns,
                    "cpo": s.cpo,
                    "protocol": s.protocol,
                    "cages": _cage_text(s.cage, s.cages),
                    "cost_source": s.source.get("cost_usd", ""),
                }
                for s in catalog.switch
            ]
        )
    if kind == "medium":
        return pl.DataFrame(
            [
                {
                    "name": m.name,
                    "kind": m.kind,
                    "speed_gbps": m.speed_gbps,
                    "reach_m": m.reach_m,
                    "cost_usd_per_end": m.cost_usd_per_end,
                    "power_w_per_end": m.power_w_per_end,
                    "cable_cost_usd": m.cable_cost_usd,
                    "latency_ns": m.latency_ns,
                    "afr": m.afr,
                    "lane_gbps": m.lane_gbps,
                    "host_lane_gbps": " ".join(str(r) for r in m.host_lanes),
                    "form_factors": " ".join(m.form_factors),
                    "connector": m.connector,
                    "cost_source": m.source.get("cost_usd_per_end", ""),
                }
                for m in catalog.medium
            ]
        )
    if kind == "nic":
        return pl.DataFrame(
            [
                {
                    "name": n.name,
                    "speed_gbps": n.speed_gbps,
                    "port_splits": " ".join(str(p) for p in n.port_splits),
                    "cage": _cage_text(n.cage, None)
                    + (f" shared by {n.nics_per_cage}" if n.nics_per_cage > 1 else ""),
                    "protocols": " ".join(n.protocols),
                    "cost_usd": n.cost_usd,
                    "power_w": n.power_w,
                    "cost_source": n.source.get("cost_usd", ""),
                }
                for n in catalog.nic
            ],
            schema={
                "name": pl.Utf8,
                "speed_gbps": pl.Int64,
                "port_splits": pl.Utf8,
                "cage": pl.Utf8,
                "protocols": pl.Utf8,
                "cost_usd": pl.Float64,
                "power_w": pl.Float64,
                "cost_source": pl.Utf8,
            },
        )
    if kind == "ocs":
        return pl.DataFrame(
            [
                {
                    "name": o.name,
                    "ports": o.ports,
                    "cost_usd": o.cost_usd,
                    "power_w": o.power_w,
                    "insertion_loss_db": o.insertion_loss_db,
                    "reconfiguration_ms": o.reconfiguration_ms,
                    "cost_source": o.source.get("cost_usd", ""),
                }
                for o in catalog.ocs
            ],
            schema={
                "name": pl.Utf8,
                "ports": pl.Int64,
                "cost_usd": pl.Float64,
                "power_w": pl.Float64,
                "insertion_loss_db": pl.Float64,
                "reconfiguration_ms": pl.Float64,
                "cost_source": pl.Utf8,
            },
        )
    raise ValueError(f"unknown component kind {kind!r}")


def catalog_entries(catalog: Catalog, kind: str) -> list[dict[str, Any]]:
    """Every entry of one kind with all its figures and the full source of each (``--json``)."""
    if kind not in ("switch", "medium", "nic", "ocs"):
        raise ValueError(f"unknown component kind {kind!r}")
    return [entry.model_dump(mode="json") for entry in getattr(catalog, kind)]


def catalog_csv(catalog: Catalog, kinds: list[str]) -> str:
    """``catalog --format csv``: one kind's table, or every kind's with a kind column."""
    tables = [catalog_table(catalog, k) for k in kinds]
    if len(kinds) == 1:
        return tables[0].write_csv()
    return pl.concat(
        [
            t.select(pl.lit(k).alias("kind_of_component"), pl.all())
            for k, t in zip(kinds, tables, strict=True)
        ],
        how="diagonal_relaxed",
    ).write_csv()


def catalog_lines(catalog: Catalog, kinds: list[str]) -> list[str]:
    """``catalog --format table``: each kind's name and aligned table, a blank line between."""
    lines: list[str] = []
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=60_000,
        fmt_str_lengths=60_000,
        fmt_table_cell_list_len=-1,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_formatting="ASCII_MARKDOWN",
    ):
        for i, k in enumerate(kinds):
            if i:
                lines.append("")
            lines.append(f"{k}:")
            lines.append(str(catalog_table(catalog, k)))
    return lines


# ---- the report folder ---------------------------------------------------------------------
def prepare_outdir(outdir: Path, *, force: bool = False) -> None:
    """Refuse a folder that is a file or holds someone else's files (unless ``force``) early."""
    check_folder(Path(outdir), force=force)


def plan_tables(plan_result: PlanResult) -> dict[str, pl.DataFrame]:
    """Every table of a plan's report set, by name, in the order they are written."""
    tables = {
        "summary": plan_result.summary,
        "alternatives": plan_result.alternatives,
        "bom": plan_result.bom,
        "links": plan_result.links,
    }
    if plan_result.sim is not None:
        tables.update(
            sim_collectives=plan_result.sim_collectives,
            sim_links=plan_result.sim_links,
            sim_link_histogram=plan_result.sim_link_histogram,
            sim_failures=plan_result.sim_failures,
        )
    if plan_result.optics_comparison is not None:
        tables[OPTICS_TABLE] = plan_result.optics_comparison
    tables.update(plan_result.family_tables)
    if plan_result.reconfiguration is not None:
        tables["reconfiguration"] = plan_result.reconfiguration
    if plan_result.family_sims:
        tables["alternatives_sim"] = plan_result.alternatives_sim
    if plan_result.bandwidth_loop is not None:
        tables[BANDWIDTH_LOOP_TABLE] = bandwidth_loop_table(plan_result.bandwidth_loop)
    if plan_result.idle_pricing is not None:
        from planner.idle_pricing import priced_table  # its loop imports the sizing model

        tables[IDLE_PRICING_TABLE] = priced_table(plan_result.idle_pricing)
    step = workload_step(plan_result.instance, plan_result.design, plan_result.sim)
    if step is not None:
        tables["workload"] = step[0]
    return tables


def _at(values: tuple[float, ...], i: int) -> float | None:
    return values[i] if i < len(values) else None


def bandwidth_loop_table(loop: LoopResult[Any]) -> pl.DataFrame:
    """The bandwidth loop's iterations, one row each (``BANDWIDTH_LOOP_SCHEMA``)."""
    first = next((s.capex_usd for s in loop.steps if s.capex_usd is not None), None)
    rows = [
        {
            "iteration": s.iteration,
            "allowed_leaf_ratio": _at(s.allowed_ratios, 0),
            "allowed_spine_ratio": _at(s.allowed_ratios, 1),
            "leaf_ratio": _at(s.tier_ratios, 0),
            "spine_ratio": _at(s.tier_ratios, 1),
            "objective_usd": s.objective_usd,
            "capex_usd": s.capex_usd,
            "extra_capex_usd": None
            if s.capex_usd is None or first is None
            else s.capex_usd - first,
            "verdict": s.verdict,
            "fraction_of_ideal": s.fraction,
            "sim_fraction_ecmp": s.fractions.get("sim_fraction_ecmp"),
            "sim_fraction_spray": s.fractions.get("sim_fraction_spray"),
            "cut_tier": None if s.cut is None else s.cut.tier,
            "cut_source": None if s.cut is None else s.cut.source,
            "cut_ratio": None if s.cut is None else s.cut.ratio_after,
            "cut": None if s.cut is None else s.cut.text,
        }
        for s in loop.steps
    ]
    return pl.DataFrame(rows, schema=BANDWIDTH_LOOP_SCHEMA)


def _ratio_text(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.4g}:1"


def bandwidth_loop_lines(loop: LoopResult[Any]) -> list[str]:
    """One line per iteration of the bandwidth loop and one for how it ended (CLI, report.md)."""
    lines = []
    for s in loop.steps:
        design = (
            "no design"
            if s.capex_usd is None
            else f"leaf {_ratio_text(_at(s.tier_ratios, 0))}, capex {_money(s.capex_usd)}"
        )
        judged = s.verdict if s.fraction is None else f"{s.verdict} ({s.fraction:.3f} of ideal)"
        cut = "" if s.cut is None else f" -> {s.cut.text}"
        allowed = ", ".join(_ratio_text(r) for r in s.allowed_ratios)
        lines.append(f"iteration {s.iteration} (allowed {allowed}): {design}, {judged}{cut}")
    capex = [s.capex_usd for s in loop.steps if s.capex_usd is not None]
    extra = (
        f"; capex {_money(capex[-1] - capex[0])} over the first design"
        if len(capex) > 1 and loop.status == "meets"
        else ""
    )
    lines.append(f"ended ({loop.status}): {loop.message}{extra}")
    return lines


def set_files(
    tables: dict[str, pl.DataFrame], design: Design | None, markdown: str | None
) -> dict[str, Writer]:
    """The files of a report set: every table as CSV and Parquet, design.json, report.md."""
    files: dict[str, Writer] = {}
    for name, df in tables.items():
        files.update(table_writers(name, df))
    if design is not None:
        files["design.json"] = text_writer(design.to_json() + "\n")
    if markdown is not None:
        files["report.md"] = text_writer(markdown)
    return files


def write_reports(
    plan_result: PlanResult,
    outdir: Path,
    *,
    force: bool = False,
    extra: dict[str, Writer] | None = None,
    pictures: bool = True,
    formats: Collection[str] | None = None,
) -> list[Path]:
    """Write every report of a plan into ``outdir`` as one set; returns the files written.

    Writes ``summary``, ``alternatives``, ``bom`` and ``links`` (and the ``sim_*``, optics and
    OCS tables when they apply) as ``.csv`` and ``.parquet``, ``design.json`` when a design
    exists, ``report.md``, the pictures that have data for this plan (``fig_<name>.png`` and
    ``.svg``, ``planner.pictures``; skipped with ``pictures=False``) and ``report.html``, one
    self-contained page of it all (``planner.report_html``). The set replaces the folder's
    previous one whole (``planner.output.write_set``): files of the previous set that this one
    lacks are removed. ``formats`` (e.g. ``{"csv", "png"}``) keeps only those table and picture
    formats (``planner.output.write_set``); ``report.html`` embeds the pictures either way.
    """
    tables = plan_tables(plan_result)
    files = set_files(tables, plan_result.design, render_markdown(plan_result, tables))
    files.update(picture_files(plan_result, tables, pictures=pictures))
    files.update(extra or {})
    return write_set(
        Path(outdir), files, force=force, command="solve", carry=_is_analysis, formats=formats
    )


def picture_files(
    plan_result: PlanResult, tables: dict[str, pl.DataFrame], *, pictures: bool = True
) -> dict[str, Writer]:
    """The pictures of a plan (PNG and SVG) and ``report.html``, which embeds the SVGs."""
    figures: dict[str, bytes] = {}
    if pictures:
        from planner.pictures import render

        family = plan_result.family
        notes = [] if family is None else family.picture_notes(tables)
        figures = render(tables, plan_result.design, notes)
    files, embedded = _figure_writers(figures)
    files["report.html"] = text_writer(solve_html(plan_result, tables, embedded))
    return files


def solve_html(
    plan_result: PlanResult, tables: dict[str, pl.DataFrame], figures: dict[str, bytes]
) -> str:
    """``report.html`` of a plan: its page, with report.md's headline, workload and tiers."""
    from planner.report_html import solve_page

    inst, design = plan_result.instance, plan_result.design
    return solve_page(
        plan_result,
        tables,
        figures,
        lines=[*instance_lines(inst), *headline(tables["summary"])],
        workload=workload_assumptions(inst),
        tiers=None if design is None else tiers_table(design),
    )


def _figure_writers(figures: dict[str, bytes]) -> tuple[dict[str, Writer], dict[str, bytes]]:
    """Writers of the picture files, and the SVGs by picture name for the page to embed."""
    files = {name: bytes_writer(data) for name, data in figures.items()}
    embedded = {
        name.removeprefix("fig_").removesuffix(".svg"): data
        for name, data in figures.items()
        if name.endswith(".svg")
    }
    return files, embedded


def sim_picture_files(
    design: Design, sim: SimResult, tables: dict[str, pl.DataFrame], family: Presentation | None
) -> dict[str, Writer]:
    """The pictures of a simulated design (PNG and SVG) and its ``report.html``.

    ``family`` is the design's (its words on its tables and their titles), handed in.
    """
    from planner.pictures import render
    from planner.report_html import simulation_page

    figures = render(tables, design, [] if family is None else family.picture_notes(tables))
    files, embedded = _figure_writers(figures)
    page = simulation_page(
        design,
        sim,
        tables,
        embedded,
        lines=headline(tables["summary"]),
        tiers=tiers_table(design),
        family=family,
    )
    files["report.html"] = text_writer(page)
    return files


#: Tables of ``compare-fabrics`` and ``torus``: analyses of their own, kept beside a design's set.
ANALYSIS_PREFIXES = ("fabric_comparison.", "torus_")


def _is_analysis(name: str) -> bool:
    return name.startswith(ANALYSIS_PREFIXES)


def write_table(
    table: pl.DataFrame | dict[str, pl.DataFrame],
    outdir: Path,
    name: str = "",
    *,
    force: bool = False,
    command: str = "",
    formats: Collection[str] | None = None,
) -> list[Path]:
    """Write one table (or several, by name) as CSV and Parquet, into the folder's set.

    The other files of the folder's set (a solve's reports, another analysis) stay in it; earlier
    versions of these tables (and of any table sharing their prefix) are replaced or removed.
    """
    tables = table if isinstance(table, dict) else {name: table}
    own = {n.split("_")[0] + "_" if n.startswith("torus_") else n + "." for n in tables}
    return write_set(
        Path(outdir),
        set_files(tables, None, None),
        force=force,
        command=command,
        carry=lambda n: not n.startswith(tuple(own)),
        formats=formats,
    )


def write_sim_reports(
    sim: SimResult,
    outdir: Path,
    design: Design,
    *,
    force: bool = False,
    extra: dict[str, Writer] | None = None,
    instance: Instance | None = None,
    formats: Collection[str] | None = None,
    family: Family | None = None,
) -> list[Path]:
    """Write a simulation of a design as a whole set; returns the files written.

    The set is the design's own (``design.json``, ``summary`` with the simulation's verdict and
    fractions, ``bom``, ``links``, and ``circuits``/``ocs`` for OCS designs), the ``sim_*``
    tables and a ``report.md`` of both. When the folder held a set of the same design (a
    solve's), its search tables (``alternatives``, ``optics_comparison``, ``reconfiguration``)
    are carried over unchanged; every other file of the old set is replaced or removed. With
    ``instance`` (``simulate --instance``), its workload's step is in the summary and a
    ``workload`` table. ``family`` is the design's, handed in by the caller: its own tables
    (``Family.extra_tables``), their titles and its words on them.
    """
    outdir = Path(outdir)
    tables: dict[str, pl.DataFrame] = {
        "summary": design_summary(design, sim, instance),
        "bom": design.bom(),
        "links": design.links_table(),
        "sim_collectives": sim.collectives,
        "sim_links": sim.links,
        "sim_link_histogram": sim.link_histogram,
        "sim_failures": sim.failures,
    }
    tables.update({} if family is None else family.extra_tables(design))
    step = None if instance is None else workload_step(instance, design, sim)
    if step is not None:
        tables["workload"] = step[0]
    carried = _carried(outdir, design)
    if "alternatives.parquet" in carried:  # same design: report.md shows the search's options too
        tables["alternatives"] = pl.read_parquet(outdir / "alternatives.parquet")
    if "alternatives_sim.parquet" in carried:
        tables["alternatives_sim"] = pl.read_parquet(outdir / "alternatives_sim.parquet")
    files = set_files(tables, design, render_sim_markdown(design, sim, tables))
    files.update(sim_picture_files(design, sim, tables, family))
    files.update(carried)
    files.update(extra or {})
    return write_set(
        outdir, files, force=force, command="simulate", carry=_is_analysis, formats=formats
    )


#: Tables of a solve that depend on the search, not on the simulation (kept by ``simulate``).
CARRIED = ("alternatives", "alternatives_sim", OPTICS_TABLE, "reconfiguration")


def _carried(outdir: Path, design: Design) -> dict[str, Writer]:
    """The search tables of the folder's set, when that set is of the same design."""
    m = read_manifest(outdir)
    if m is None or not is_complete(outdir) or "design.json" not in m.files:
        return {}
    try:
        same = (outdir / "design.json").read_text(encoding="utf-8") == design.to_json() + "\n"
    except (OSError, UnicodeDecodeError):
        return {}
    if not same:
        return {}
    out: dict[str, Writer] = {}
    for name in CARRIED:
        for ext in ("csv", "parquet"):
            if f"{name}.{ext}" in m.files:
                out[f"{name}.{ext}"] = bytes_writer((outdir / f"{name}.{ext}").read_bytes())
    return out


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pl.DataFrame, columns: list[str] | None = None) -> str:
    """Render a DataFrame as a GitHub markdown table."""
    columns = columns or df.columns
    lines = [
        "| " + " | ".join(column_label(c) for c in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    texts = [[_md_cell(t) for t in column_texts(c, df[c].to_list())] for c in columns]
    for row in zip(*texts, strict=True):
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _signed_money(x: float) -> str:
    """'+$1,234' or '-$1,234'."""
    return f"{'-' if x < 0 else '+'}${abs(x):,.0f}"


def _money(x: float | None) -> str:
    return "n/a" if x is None else f"${x:,.0f}"


def _scale_up_line(s: dict[str, Any]) -> str:
    """The scale-up domain, and the whole interconnect when its switches are priced."""
    line = (
        f"scale-up: {count_text(s['scale_up_gpus'], 'GPU')} per domain at "
        f"{s['scale_up_gbps_per_gpu']:,.0f} Gb/s"
        " per GPU each way (traffic inside a domain never touches a NIC)"
    )
    if not s["scale_up_switches"]:
        return line + "; its switches are not priced (no cluster.scale_up.switch)"
    return (
        line + f"; {count_text(s['scale_up_switches'], 'scale-up switch')}"
        f" ({_money(s['scale_up_capex_usd'])}, {s['scale_up_power_kw']:,.1f} kW);"
        f" whole interconnect {_money(s['interconnect_capex_usd'])},"
        f" {s['interconnect_power_kw']:,.1f} kW"
    )


def instance_lines(inst: Instance) -> list[str]:
    """Which instance a plan answers: when ``--set`` derived it, its base and the changes."""
    if inst.derived_from is None:
        return []
    from planner.loading import changes_text

    base, changes = inst.derived_from
    return [f"instance: {inst.name} = {base} with {changes_text(changes)}"]


def _quantity_text(n: float) -> str:
    """``405B``, ``1.8T``, ``37B``, ``46.7B``: a parameter count as people write it."""
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:,.0f}"


def workload_assumptions(inst: Instance) -> list[tuple[str, str]]:
    """The workload a plan assumed, as (what, value) pairs; empty without a ``[workload]``.

    The one place that says it: report.md's and report.html's assumptions read these pairs,
    and the summary's ``workload`` column joins them.
    """
    w = inst.workload
    if w is None:
        return []
    m, par = w.spec, w.parallelism
    name = f"{w.preset} (preset)" if w.preset is not None else "own model ([workload.model])"
    size = f"{_quantity_text(m.parameters)} parameters"
    if m.experts > 1:
        size += (
            f" ({_quantity_text(m.active)} active; {count_text(m.experts, 'expert')}, "
            f"top-{m.top_k}, {count_text(m.moe_layers, 'MoE layer')})"
        )
    else:
        size += " (dense)"
    shape = (
        f"{count_text(m.layers, 'layer')}, hidden size {m.hidden_size:,}, "
        f"{count_text(m.sequence_length_tokens, 'token')} per sequence, "
        f"{count_text(m.global_batch_sequences, 'sequence')} per batch"
    )
    split = (
        f"tp {par.tensor:,} x pp {par.pipeline:,} x dp {par.data:,} = "
        f"{count_text(par.gpus, 'GPU')}; ep {par.expert:,}"
    )
    if par.sequence_parallel:
        split += "; sequence parallel"
    if par.zero_stage:
        split += f"; ZeRO stage {par.zero_stage}"
    gpu = (
        f"{w.gpu.peak_flops / 1e12:,.4g} TFLOP/s peak at "
        f"{100 * w.gpu.utilisation:.4g} % model FLOPs utilisation (MFU)"
    )
    if w.gpu.power_w is not None:
        gpu += f"; {w.gpu.power_w:,.0f} W"
    years = inst.objective.lifetime_years
    return [
        ("workload model", f"{name}: {size}; {shape}"),
        ("parallelism", split),
        (
            "microbatch",
            f"{count_text(w.micro_batch_sequences, 'sequence')}; "
            f"{count_text(w.microbatches, 'microbatch')} per iteration",
        ),
        ("GPU", gpu),
        (
            "GPU price",
            f"${w.gpu.price_usd_per_hour:,.2f} per GPU-hour, over {years:g} years",
        ),
        (
            "overlap",
            f"{100 * w.overlap_fraction:.4g} % of the data-parallel communication "
            "hidden under compute",
        ),
    ]


def workload_text(inst: Instance) -> str | None:
    """The workload assumed in one line (the summary's ``workload`` column); None without one."""
    pairs = workload_assumptions(inst)
    return "; ".join(f"{k}: {v}" for k, v in pairs) if pairs else None


def headline(summary: pl.DataFrame) -> list[str]:
    """Give the headline figures of a summary row, one short line each (report.md and the CLI)."""
    s = summary.row(0, named=True)
    lines = [f"status: {s['status']}"]
    if s["tco_usd"] is None:
        return lines
    lines += [
        f"tco: {_money(s['tco_usd'])} (capex {_money(s['capex_usd'])}"
        f" + lifetime energy {_money(s['energy_usd'])})",
        f"power: {s['power_kw']:,.1f} kW",
        f"fabric: {s['family']}, {count_text(s['planes'], 'plane')} x "
        f"{count_text(s['tiers'], 'tier')} at {s['link_speed_gbps']}G, "
        f"{count_text(s['switches'], 'switch')} ({s['switch_models']}), "
        f"{count_text(s['transceivers'], 'transceiver')}",
        _scale_up_line(s),
        f"paths: {count_text(s['max_switch_hops'], 'switch hop')}, {s['max_latency_ns']:,.0f} ns, "
        f"oversubscription {s['oversubscription']:.2f}:1,"
        f" bisection {s['bisection_gbps']:,.0f} Gb/s",
        f"optimality gap: {s['gap']:.2%} (lower bound {_money(s['bound_usd'])})",
    ]
    if s["verdict"] != "not verified":
        parts = [
            f"{name} {s[f'sim_fraction_{name}']:.2f}"
            for name in ("spray", "ecmp")
            if s[f"sim_fraction_{name}"] is not None
        ]
        after = s["sim_fraction_after_failure"]
        tail = f"; after a failure {after:.2f} of healthy" if after is not None else ""
        figures = ", ".join(parts) + tail
        lines.append(
            f"simulation: {s['verdict']} (throughput of ideal: {figures})"
            if figures
            else f"simulation: {s['verdict']} (no throughput figure: no traffic was simulated)"
        )
    if s["sim_steps_cut"]:
        hint = s["time_limit_hint_s"]
        lines.append(
            f"time limit: {s['sim_steps_cut']:,} simulation step"
            f"{'s' if s['sim_steps_cut'] != 1 else ''} cut"
            + ("" if hint is None else f"; re-run with --time-limit {hint:g} or more to run them")
        )
    return lines + _workload_lines(s)


def _workload_lines(s: dict[str, Any]) -> list[str]:
    """The step of the workload and the GPUs' power, when the summary row has them."""
    lines = []
    if s["step_time_s"] is not None:
        hidden = s["comm_s"] - s["exposed_comm_s"]
        lines += [
            f"step: {s['step_time_s']:,.3f} s = compute {s['compute_s']:,.3f} s + exposed "
            f"communication {s['exposed_comm_s']:,.3f} s (of {s['comm_s']:,.3f} s; "
            f"{hidden:,.3f} s hidden); GPUs idle {s['idle_fraction']:.1%} of the step",
            f"throughput: {s['tokens_per_s']:,.0f} tokens/s, "
            f"${s['usd_per_million_tokens']:,.3f} per million tokens (GPU time)",
        ]
    if s["idle_gpu_value_usd"] is not None:
        lines.append(
            f"idle GPUs: ${s['idle_gpu_value_usd']:,.0f} of GPU time over the lifetime; network "
            f"TCO + idle GPUs ${s['tco_plus_idle_gpus_usd']:,.0f}"
        )
    if s["gpu_power_kw"] is not None:
        lines.append(
            f"power beside the GPUs: GPUs {s['gpu_power_kw']:,.1f} kW, whole interconnect "
            f"{s['interconnect_power_kw']:,.1f} kW ({s['network_power_share']:.1%} of the two)"
            + (
                ""
                if s["facility_power_kw"] is None
                else f"; facility {s['facility_power_kw']:,.1f} kW with cooling (PUE)"
            )
        )
    return lines


def tiers_table(d: Design) -> pl.DataFrame:
    """The design tier by tier: model, switches per plane and in all planes, ports, fan-out."""
    return pl.DataFrame(
        [
            {
                "tier": t.role,
                "switch_model": t.switch_model,
                "switches_per_plane": t.switches,
                "switches": d.planes * t.switches,
                "radix": t.radix,
                "downlinks": t.downlinks,
                "uplinks": t.uplinks,
                "fanout": t.fanout,
                "parallel_links": t.parallel_links,
            }
            for t in d.tiers
        ]
    )


#: Column of a family's extra table holding the one sentence a person checks the wiring by.
WIRING_COLUMN = "wiring"


def _wiring_lines(tables: dict[str, pl.DataFrame]) -> list[str]:
    """The wiring sentence a family's extra table carries (its ``wiring`` column), if any.

    The hook for families whose wiring a person checks against a reference architecture (the
    rail families' ``rails`` table): one line each, under "Wiring".
    """
    sentences = [
        str(sentence)
        for name, table in tables.items()
        if name not in ("summary", "alternatives", "bom", "links")
        and WIRING_COLUMN in table.columns
        for sentence in table[WIRING_COLUMN].to_list()
    ]
    if not sentences:
        return []
    return ["## Wiring", "", *(f"- {s}" for s in sentences), ""]


def _design_section(d: Design, tables: dict[str, pl.DataFrame]) -> list[str]:
    out = [
        "## Design, tier by tier (per plane unless noted)",
        "",
        markdown_table(tiers_table(d)),
        "",
    ]
    out += ["## Bill of materials (all planes)", "", markdown_table(tables["bom"]), ""]
    out += ["## Links", "", markdown_table(tables["links"]), ""]
    out += _wiring_lines(tables)
    if "ocs" in tables:
        dev = tables["ocs"]
        circuits = int(tables["circuits"]["circuits"].sum()) if len(tables["circuits"]) else 0
        out += [
            "## OCS layer (per plane)",
            "",
            f"- {dev.height} devices of {dev['ports'][0]} ports; {circuits:,} circuits use "
            f"{int(dev['ports_used'].sum()):,} ports, {int(dev['ports_spare'].sum()):,} spare",
            "- every circuit is in `circuits.csv`; ports per device in `ocs.csv`",
            "",
        ]
    if "reconfiguration" in tables:
        out += ["### After a device fails", "", markdown_table(tables["reconfiguration"]), ""]
    cut = cut_notes(d.notes)
    if cut:
        out += ["## Left out or cut by the time limit", "", *(f"- {n}" for n in cut), ""]
    return out


def _sim_section(sim: SimResult, tables: dict[str, pl.DataFrame]) -> list[str]:
    out = ["## Verification by simulation", ""]
    out += [f"- verdict: **{sim.verdict}**"] + [f"- {r}" for r in sim.reasons] + [""]
    cols = [
        "pattern",
        "routing",
        "scenario",
        "time_s",
        "busbw_gbps",
        "fraction_of_ideal",
        "fraction_of_bound",
        "p99_fct_s",
        "disconnected_flows",
    ]
    out += [markdown_table(tables["sim_collectives"], cols), ""]
    if any(t == math.inf for t in tables["sim_collectives"]["time_s"].to_list()):
        out += [
            "A time of `never` means a failure cut some of the traffic's flows off entirely "
            "(`disconnected_flows`): it never completes, and its throughput is 0.",
            "",
        ]
    if len(tables["sim_failures"]):
        out += ["### Failures", "", markdown_table(tables["sim_failures"]), ""]
    if sim.notes:
        out += ["### What the figures rest on", ""] + [f"- {n}" for n in sim.notes] + [""]
    if sim.over_memory:
        out += ["### Not simulated (memory)", ""] + [f"- {c}" for c in sim.over_memory] + [""]
    if sim.cut:
        out += ["### Not simulated (time limit)", ""] + [f"- {c}" for c in sim.cut] + [""]
        advice = time_limit_advice(sim, workload="workload" in tables, steps=False)
        out += [advice[0].upper() + advice[1:], ""]
    return out


def time_limit_advice(sim: SimResult, workload: bool = False, steps: bool = True) -> str:
    """What a cut simulation means and the ``--time-limit`` that would let it finish.

    Shared by stderr and report.md. ``workload``: the instance has a ``[workload]``, whose step
    needs every collective of the iteration timed; ``steps``: name the cut steps (report.md
    lists them above instead).
    """
    n = len(sim.cut)
    listed = f" ({'; '.join(sim.cut)})" if steps else ""
    text = (
        f"the time limit cut {n} simulation step{'s' if n != 1 else ''}{listed}: the verdict "
        f"is '{sim.verdict}', not 'meets', and the tables lack {'their' if n != 1 else 'its'} rows"
    )
    if workload:
        text += "; the workload's step time needs every collective timed and may be missing"
    if sim.time_limit_hint_s is not None:
        text += (
            f". Re-run with --time-limit {sim.time_limit_hint_s:g} or more (this run's time "
            f"plus {HINT_MARGIN:g} x the cut steps at the longest time a step took here: an "
            "estimate, which a step heavier than those that ran, or a busier machine, exceeds)"
        )
    return text + "."


def render_sim_markdown(design: Design, sim: SimResult, tables: dict[str, pl.DataFrame]) -> str:
    """Render the human summary of ``simulate``: the design's headline, design and verification."""
    out = [f"# fabric-planner simulation: {design.instance}", ""]
    out += [f"{design.gpus:,} GPUs, {design.planes} plane(s) at {design.link_speed_gbps}G.", ""]
    out += ["## Result", ""] + [f"- {line}" for line in headline(tables["summary"])] + [""]
    out += _design_section(design, tables)
    out += _sim_section(sim, tables)
    if "workload" in tables:
        out += _workload_section(tables["workload"])
    out += _alternatives_section(tables)
    return "\n".join(out)


def render_markdown(plan_result: PlanResult, tables: dict[str, pl.DataFrame]) -> str:
    """Render the human summary: headline, the design tier by tier, BOM, links, alternatives."""
    inst = plan_result.instance
    out = [f"# fabric-planner report: {inst.name}", ""]
    if inst.description:
        out += [inst.description, ""]
    out += [f"{inst.cluster.gpus:,} GPUs, {inst.cluster.nic_gbps}G scale-out NIC per GPU.", ""]
    result = [*instance_lines(inst), *headline(tables["summary"])]
    out += ["## Result", ""] + [f"- {line}" for line in result] + [""]
    assumed = workload_assumptions(inst)
    if assumed:
        out += ["## Workload assumed", ""] + [f"- {k}: {v}" for k, v in assumed] + [""]
    d = plan_result.design
    if d is None:
        title = (
            "No design meets the constraints"
            if plan_result.status is Status.INFEASIBLE
            else "No design found"
        )
        out += [f"## {title}", ""] + [f"- {line}" for line in plan_result.explanation] + [""]
    else:
        out += _design_section(d, tables)
    if plan_result.sim is not None:
        out += _sim_section(plan_result.sim, tables)
    if "workload" in tables:
        out += _workload_section(tables["workload"])
    if plan_result.bandwidth_loop is not None:
        out += _bandwidth_loop_section(plan_result.bandwidth_loop, tables)
    if plan_result.idle_pricing is not None:
        out += _idle_pricing_section(plan_result.idle_pricing, tables)
    if OPTICS_TABLE in tables:
        cols = [
            "scenario",
            "status",
            "switch_models",
            "leaf_placement",
            "capex_usd",
            "energy_usd",
            "power_kw",
            "optics_power_share",
            "transceivers",
            "expected_link_failures_per_day",
            "delta_tco_usd",
        ]
        out += [
            "## Optics: pluggable only, LPO allowed, CPO allowed",
            "",
            markdown_table(tables[OPTICS_TABLE], cols),
            "",
        ]
    out += _alternatives_section(tables)
    return "\n".join(out)


def _workload_section(table: pl.DataFrame) -> list[str]:
    """The collectives of one training iteration: bytes, simulated time and share of the step."""
    cols = [
        "collective",
        "kind",
        "group_size",
        "bytes_per_gpu_per_iteration",
        "time_per_call_s",
        "calls",
        "time_per_iteration_s",
        "overlappable",
        "share_of_step",
    ]
    return [
        "## Workload: one training iteration",
        "",
        "Each collective simulated once (one call, healthy, the verdict's routing) and multiplied "
        "by its calls per iteration; only data-parallel collectives may hide under compute "
        "(`overlap_fraction`), the rest are exposed in full (`planner/workload/step.py`).",
        "",
        markdown_table(table, cols),
        "",
    ]


def idle_pricing_lines(search: PricedSearch[Any]) -> list[str]:
    """The priced walk in a few lines: each rung's ratio, network cost and idle GPU value."""
    lines = []
    for r in sorted(search.rungs, key=lambda r: -r.rung):
        d = r.design
        allowed = ", ".join(f"{c:g}:1" for c in r.caps)
        if d is None or r.total_usd is None or r.idle_gpu_value_usd is None:
            lines.append(f"rung {r.rung} (allowed {allowed}): {r.note}")
            continue
        ratio = _ratio_text(
            d.tiers[0].downlinks / d.tiers[0].uplinks if d.tiers[0].uplinks else None
        )
        mark = "  <- chosen" if search.chosen is not None and r.rung == search.chosen.rung else ""
        verdict = "" if r.sim is None else f", {r.sim.verdict}"
        reused = f" ({r.note})" if r.note else ""
        lines.append(
            f"rung {r.rung} (allowed {allowed}): leaf {ratio}, network ${d.objective_usd:,.0f} + "
            f"idle GPUs ${search.weight * r.idle_gpu_value_usd:,.0f} "
            f"({r.step.idle_fraction:.1%} idle{verdict}) = ${r.total_usd:,.0f}{reused}{mark}"
            if r.step is not None
            else f"rung {r.rung}: {r.note}"
        )
    cheapest, chosen = search.cheapest, search.chosen
    if (
        cheapest is not None
        and chosen is not None
        and cheapest.total_usd is not None
        and chosen.total_usd is not None
        and cheapest.design is not None
        and chosen.design is not None
    ):
        idle_change = (chosen.idle_gpu_value_usd or 0.0) - (cheapest.idle_gpu_value_usd or 0.0)
        lines.append(
            f"against the design network cost alone chooses (rung {cheapest.rung}): network "
            f"{_signed_money(chosen.design.objective_usd - cheapest.design.objective_usd)}, idle "
            f"GPUs {_signed_money(search.weight * idle_change)}, total "
            f"{_signed_money(chosen.total_usd - cheapest.total_usd)}; {search.message}"
        )
    return lines


def _idle_pricing_section(search: PricedSearch[Any], tables: dict[str, pl.DataFrame]) -> list[str]:
    """The ladder walked when idle GPU time is priced (``planner.idle_pricing``)."""
    table = tables[IDLE_PRICING_TABLE]
    return (
        [
            "## Idle GPU time priced: network cost + the GPU time it leaves idle",
            "",
            f"total = network objective + {search.weight:g} x GPUs x price per GPU-hour x "
            "lifetime hours x the simulated idle fraction of the step, at each rung of allowed "
            "ratios from the instance's to non-blocking (`planner/idle_pricing.py`).",
            "",
            markdown_table(table),
            "",
        ]
        + [f"- {line}" for line in idle_pricing_lines(search)]
        + [""]
    )


def _bandwidth_loop_section(loop: LoopResult[Any], tables: dict[str, pl.DataFrame]) -> list[str]:
    """The iterations of ``search.until_verified``: plan, simulate, tighten the binding tier."""
    table = tables[BANDWIDTH_LOOP_TABLE]
    cols = [c for c in table.columns if c not in ("cut", "sim_fraction_ecmp", "sim_fraction_spray")]
    return (
        [
            "## Bandwidth loop: planned until the [verify] traffic is met",
            "",
            markdown_table(table, cols),
            "",
        ]
        + [f"- {line}" for line in bandwidth_loop_lines(loop)]
        + [""]
    )


def _alternatives_section(tables: dict[str, pl.DataFrame]) -> list[str]:
    alt = tables.get("alternatives")
    if alt is None or not len(alt):
        return []
    out = [
        "## Alternatives: the best design of every switch option",
        "",
        markdown_table(alt, [c for c in alt.columns if c != "winner"] + ["winner"]),
        "",
    ]
    sims = tables.get("alternatives_sim")
    if sims is not None and len(sims):
        out += [
            "### Each family's best design, simulated (healthy)",
            "",
            markdown_table(sims, sims.columns),
            "",
        ]
    return out
