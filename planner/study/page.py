"""A study's ``report.html``: what was swept and ranked, the best scenarios, the front, figures.

Built on ``planner.report.html``'s page (:func:`~planner.report.html.render_page`), as a plan's
page is; ``planner.study.folder`` writes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from planner.report.html import render_page
from planner.report.text import column_label
from planner.study.pareto import (
    GPUS,
    default_objectives,
    ranked_mask,
    ranking_note,
    sizes_vary,
    verified,
)

#: Columns of the study table shown on its page, after the scenario and its swept fields.
STUDY_COLUMNS = (
    "status",
    "plan_status",
    "family",
    "switches",
    "capex_usd",
    "power_kw",
    "tco_usd",
    "capex_usd_per_gpu",
    "power_w_per_gpu",
    "verdict",
    "sim_fraction_spray",
    "sim_fraction_ecmp",
    "step_time_s",
    "idle_fraction",
    "tco_plus_idle_gpus_usd",
    "pareto",
)


#: The best-scenario lines of a study: (column, what, unit, per GPU when the GPU count varies).
STUDY_BEST = (
    ("capex_usd", "least capex", "$", True),
    ("power_kw", "least power", "kW", True),
    ("step_time_s", "shortest step", "s", False),
    ("tco_plus_idle_gpus_usd", "least TCO + idle GPUs", "$", True),
)


def _best_lines(table: pl.DataFrame) -> list[str]:
    """The best ranked scenario on capex, power, step time and total with idle GPUs, when present.

    Only the ranked scenarios compete (``planner.study.pareto.ranked_mask``: those that meet
    their ``[verify]`` requirements in a verified study); capex, power and the total are per GPU
    when the study's GPU count varies. With nothing ranked, one line says so.
    """
    ranked = table.filter(ranked_mask(table))
    if not ranked.height:
        return [
            "best: none, no scenario's design meets its [verify] requirements"
            if verified(table)
            else "best: none, no scenario has a design"
        ]
    per_gpu = sizes_vary(table)
    lines = []
    for column, what, unit, divide in STUDY_BEST:
        if column not in ranked.columns:
            continue
        scale = 1000.0 if unit == "kW" else 1.0  # kW per GPU is shown as W per GPU
        value = pl.col(column).cast(pl.Float64)
        if per_gpu and divide:
            value = value * scale / pl.col(GPUS).cast(pl.Float64)
        rows = ranked.with_columns(value.alias("_figure")).filter(pl.col("_figure").is_not_null())
        if not rows.height:
            continue
        best = rows.sort("_figure").row(0, named=True)
        figure = best["_figure"]
        if per_gpu and divide:
            text = f"${figure:,.0f} per GPU" if unit == "$" else f"{figure:,.1f} W per GPU"
            what += " per GPU"
        else:
            text = f"${figure:,.0f}" if unit == "$" else f"{figure:,.3f} {unit}"
        lines.append(f"{what}: {best['scenario']} ({text})")
    return lines


def study_page(
    instance_name: str,
    description: str,
    keys: Sequence[str],
    table: pl.DataFrame,
    figures: Mapping[str, bytes],
    *,
    computed: int,
    reused: int,
    assumptions_of_base: Sequence[tuple[str, str]] = (),
) -> str:
    """The page of a study: what was swept and ranked, the best scenarios, the front, figures, table.

    ``table`` is the study table with its ``pareto`` flag (``planner.study.folder.flagged``);
    ``figures`` the study's pictures by name (SVG preferred). Only the scenarios the study ranks
    are best or on the front (those that meet, in a verified study); the page says which.
    """
    errors = table.filter(pl.col("status") != "ok").height if "status" in table.columns else 0
    front = table.filter(pl.col("pareto")) if "pareto" in table.columns else table.head(0)
    minimise, maximise = default_objectives(table)
    over = ", ".join([f"min {c}" for c in minimise] + [f"max {c}" for c in maximise])
    headline_lines = [
        f"{table.height:,} scenarios over {', '.join(keys) or 'no field'}: {computed:,} planned "
        f"in this run, {reused:,} read back from an earlier one, {errors:,} ended in error",
        ranking_note(table),
        f"Pareto front{f' over {over}' if over else ''}: {front.height:,} scenario(s): "
        + (", ".join(str(s) for s in front["scenario"].to_list()) or "none"),
        *_best_lines(table),
    ]
    shown_columns = ["scenario", *[k for k in keys if k in table.columns]]
    shown_columns += [c for c in STUDY_COLUMNS if c in table.columns and c not in shown_columns]
    return render_page(
        f"fabric-planner study: {instance_name}",
        headline_lines,
        assumptions_of_base,
        {"study": table.select(shown_columns), "pareto": front.select(shown_columns)},
        figures,
        intro=description,
        notes=[
            "The full study table (every summary column) is study.csv / study.parquet beside "
            "this page; the front alone is pareto.csv / pareto.parquet.",
            "The Pareto picture draws the front on every pair of its figures: filled red points "
            "are beaten by no drawn point on that pair, red rings are on the front through "
            "another figure, grey points are dominated.",
        ],
        titles={"study": "Every scenario", "pareto": "The Pareto front"},
        captions={name: _caption(name) for name in figures},
        max_rows=200,
    )


def _caption(name: str) -> str:
    """A study figure's caption: its file beside the page and what it draws."""
    if name == "pareto":
        return "pareto.png: the Pareto front of the ranked scenarios, on every pair of its figures"
    for metric in ("capex_usd", "step_time_s"):  # planner.study.figures' sweep_<metric>_<key>
        key = name.removeprefix(f"sweep_{metric}_")
        if key != name:
            return f"{name}.png: {column_label(metric)} against {key}, ranked scenarios only"
    return f"{name}.png"
