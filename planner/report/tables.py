"""Report tables (Polars): the summary row, a design's summary, the workload's step, the loop.

Every figure a report shows is computed here, once, from plain data: the ``Design``, the
simulation's ``SimResult`` and the tables the planner hands over. It imports no solver.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import polars as pl

from models.status import Status
from planner.design import Design
from planner.report.text import count_text
from planner.schema.instance import Instance
from planner.schema.workload import Workload
from planner.workload.step import (
    StepTime,
    call_times,
    contention,
    step_time,
    workload_table,
    workload_traffic,
)

if TYPE_CHECKING:
    from planner.bandwidth_loop import LoopResult
    from planner.reliability import Assessment
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
    "sim_together",
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
    "mfu": pl.Float64,
    "published_mfu": pl.Float64,
    "usd_per_million_tokens": pl.Float64,
    "idle_gpu_value_usd": pl.Float64,
    "tco_plus_idle_gpus_usd": pl.Float64,
    "gpu_power_kw": pl.Float64,
    "network_power_share": pl.Float64,
    "facility_power_kw": pl.Float64,
    "network_interruptions_per_day": pl.Float64,
    "goodput_fraction": pl.Float64,
    "goodput_tokens_per_s": pl.Float64,
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
    reliability: Assessment | None = None,
) -> pl.DataFrame:
    """One row of headline figures; with no design, the row keeps instance, status and GPUs only.

    ``status``, ``bound_usd`` and ``solve_s`` are the search's (``PlanResult.summary`` hands
    them over). With a simulation, the row also gives its verdict and the simulated throughput
    fractions (the least over the traffic of each routing, healthy; the least kept under a
    failure). With a ``[workload]``, the step figures (``planner.workload.step``) when the
    simulation timed every collective of the iteration, and the GPUs' power beside the network's
    when the GPU gives its ``power_w``. With a reliability assessment, the network's
    interruptions a day and the goodput share (and, with the step, goodput in tokens/s).
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
    row = _with_idle_value(row, inst, design, None if step is None else step[1])
    if reliability is None or design is None:
        return row
    g = reliability.closed
    tokens = row["tokens_per_s"][0]
    return row.with_columns(
        network_interruptions_per_day=pl.lit(g.network_interruptions_per_day, pl.Float64),
        goodput_fraction=pl.lit(g.goodput_fraction, pl.Float64),
        goodput_tokens_per_s=pl.lit(
            None if tokens is None else tokens * g.goodput_fraction, pl.Float64
        ),
    )


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
    routing = inst.verify.verdict_routing
    times = call_times(pairs, None if sim is None else sim.collectives, routing)
    kappa = contention(w, times, None if sim is None else sim.together, routing)
    step = step_time(w, times, kappa)
    return workload_table(times, step, w), step


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
            # The pipeline bubble counts as compute time here, so step = compute + exposed
            # communication still reads true; planner.workload.step keeps the two apart.
            compute_s=step.compute_s + step.bubble_s,
            comm_s=step.comm_s,
            exposed_comm_s=step.exposed_comm_s,
            idle_fraction=step.idle_fraction,
            tokens_per_s=step.tokens_per_s,
            mfu=step.mfu,
            usd_per_million_tokens=step.usd_per_million_tokens,
        )
        if workload is not None:
            row.update(published_mfu=workload.published_mfu)
    return pl.DataFrame([row], schema=SUMMARY_SCHEMA)


def value_at(values: tuple[float, ...], i: int) -> float | None:
    """The i-th value, None past the end (a tier the loop did not have)."""
    return values[i] if i < len(values) else None


def bandwidth_loop_table(loop: LoopResult[Any]) -> pl.DataFrame:
    """The bandwidth loop's iterations, one row each (``BANDWIDTH_LOOP_SCHEMA``)."""
    first = next((s.capex_usd for s in loop.steps if s.capex_usd is not None), None)
    rows = [
        {
            "iteration": s.iteration,
            "allowed_leaf_ratio": value_at(s.allowed_ratios, 0),
            "allowed_spine_ratio": value_at(s.allowed_ratios, 1),
            "leaf_ratio": value_at(s.tier_ratios, 0),
            "spine_ratio": value_at(s.tier_ratios, 1),
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
    if par.virtual_stages > 1:
        split += f"; interleaved, {par.virtual_stages} model chunks a stage"
    batch = (
        f"{count_text(w.micro_batch_sequences, 'sequence')}; "
        f"{count_text(w.microbatches, 'microbatch')} per iteration"
    )
    if w.recompute != "none":
        batch += f"; {w.recompute} activation recomputation"
    if w.gpu.memory_gib is not None:
        batch += (
            f"; {w.memory().total_bytes / 2**30:,.1f} GiB a GPU of {w.gpu.memory_gib:g} "
            "(first stage)"
        )
    hidden = "the data-parallel" + "".join(
        f", {name}"
        for name, on in (
            ("tensor-parallel", w.overlap_tensor_parallel),
            ("pipeline", w.overlap_pipeline_parallel),
        )
        if on
    )
    gpu = (
        f"{w.gpu.peak_flops / 1e12:,.4g} TFLOP/s peak at "
        f"{100 * w.gpu.utilisation:.4g} % of peak while computing (utilisation, not MFU: "
        "the step's MFU is the summary's mfu)"
    )
    if w.gpu.power_w is not None:
        gpu += f"; {w.gpu.power_w:,.0f} W"
    years = inst.objective.lifetime_years
    return [
        ("workload model", f"{name}: {size}; {shape}"),
        ("parallelism", split),
        ("microbatch", batch),
        ("GPU", gpu),
        (
            "GPU price",
            f"${w.gpu.price_usd_per_hour:,.2f} per GPU-hour, over {years:g} years",
        ),
        (
            "overlap",
            f"{100 * w.overlap_fraction:.4g} % of {hidden} communication hidden under compute",
        ),
    ]


def workload_text(inst: Instance) -> str | None:
    """The workload assumed in one line (the summary's ``workload`` column); None without one."""
    pairs = workload_assumptions(inst)
    return "; ".join(f"{k}: {v}" for k, v in pairs) if pairs else None
