"""report.md: the headline, the assumptions, the design, the simulation and the loops, in words.

The same lines head report.html (``planner.report.html``), so both reports say the same.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import polars as pl

from models.status import Status
from planner.deadline import HINT_MARGIN, cut_notes
from planner.design import Design
from planner.report.tables import (
    BANDWIDTH_LOOP_TABLE,
    IDLE_PRICING_TABLE,
    OPTICS_TABLE,
    value_at,
    workload_assumptions,
)
from planner.report.text import column_label, column_texts, count_text
from planner.schema.instance import Instance

if TYPE_CHECKING:
    from planner.bandwidth_loop import LoopResult
    from planner.idle_pricing import PricedSearch
    from planner.report.plan_result import PlanResult
    from planner.sim.sim_tables import SimResult


def _ratio_text(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.4g}:1"


def bandwidth_loop_lines(loop: LoopResult[Any]) -> list[str]:
    """One line per iteration of the bandwidth loop and one for how it ended (CLI, report.md)."""
    lines = []
    for s in loop.steps:
        design = (
            "no design"
            if s.capex_usd is None
            else f"leaf {_ratio_text(value_at(s.tier_ratios, 0))}, capex {_money(s.capex_usd)}"
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


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


#: Widest a markdown table may be, in characters (polars' limit): wider ones wrap no cell.
MARKDOWN_WIDTH_CHARS = 65_535


def markdown_table(df: pl.DataFrame, columns: list[str] | None = None) -> str:
    """Render a DataFrame as a GitHub markdown table, through polars' own ``MARKDOWN`` format.

    Headings read as words with units (``column_label``) and cells as the reports write them
    (``column_texts``); polars lays the table out, every cell whole and padded so its columns
    line up in the file too.
    """
    columns = columns or df.columns
    labels: list[str] = []
    for c in columns:
        label = column_label(c)
        while label in labels:  # two names that read alike stay two columns
            label += " "
        labels.append(label)
    texts = {
        label: [_md_cell(t) for t in column_texts(c, df[c].to_list())]
        for label, c in zip(labels, columns, strict=True)
    }
    shown = pl.DataFrame(texts, schema=dict.fromkeys(labels, pl.Utf8))
    longest = max([len(t) for cells in texts.values() for t in cells] + [len(x) for x in labels])
    with pl.Config(
        tbl_formatting="MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        tbl_rows=-1,
        tbl_cols=-1,
        fmt_str_lengths=longest + 1,
        tbl_width_chars=MARKDOWN_WIDTH_CHARS,
        tbl_cell_alignment="LEFT",
    ):
        return str(shown)


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
            f"throughput: {s['tokens_per_s']:,.0f} tokens/s, MFU {s['mfu']:.1%}"
            + (
                ""
                if s.get("published_mfu") is None
                else f" (published for this run: {s['published_mfu']:.1%})"
            )
            + f", ${s['usd_per_million_tokens']:,.3f} per million tokens (GPU time)",
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
    coll = tables["sim_collectives"]
    # An adaptive routing's paths (traffic engineering on OCS, UGAL): sent straight, mean path.
    cols += [
        c
        for c in ("direct_share", "mean_group_path")
        if c in coll.columns and coll[c].is_not_null().any()
    ]
    out += [markdown_table(coll, cols), ""]
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
    if "parallelism" in tables:
        out += [
            "## Parallelism: the given layout and the one chosen",
            "",
            "Both timed by the analytic model of `planner/workload/analytic.py`; the design is "
            "planned, and verified when verification is on, with the chosen one.",
            "",
            markdown_table(tables["parallelism"]),
            "",
        ]
    if plan_result.bandwidth_loop is not None:
        out += _bandwidth_loop_section(plan_result.bandwidth_loop, tables)
    if plan_result.idle_pricing is not None:
        out += _idle_pricing_section(plan_result.idle_pricing, tables)
    if plan_result.reliability is not None or plan_result.reliability_options is not None:
        out += _failures_section(plan_result, tables)
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


def _failures_section(plan_result: PlanResult, tables: dict[str, pl.DataFrame]) -> list[str]:
    """Interruptions, goodput and (when failures are priced) the options walked."""
    from planner.reliability.text import failure_lines, options_lines

    out = ["## Failures and goodput", ""]
    if plan_result.reliability is not None:
        out += [f"- {line}" for line in failure_lines(plan_result.reliability)] + [""]
    for name in ("goodput", "reliability"):
        if name in tables:
            out += [markdown_table(tables[name]), ""]
    if plan_result.reliability_options is not None:
        out += ["### Options walked (`planner/reliability/options.py`)", ""]
        out += [f"- {line}" for line in options_lines(plan_result.reliability_options)] + [""]
        if "reliability_options" in tables:
            out += [markdown_table(tables["reliability_options"]), ""]
    return out
