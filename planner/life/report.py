"""The files of a planned life: the phase table, the totals, a picture and ``life.md``."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import polars as pl

from planner.life.plan import LifePlan, cost_curve
from planner.output import Writer, bytes_writer, table_writers, text_writer, write_set
from planner.report.markdown import markdown_table
from planner.report.pictures import file_name
from planner.report.pictures import life as life_picture

#: Name of the picture (``fig_life_cost.png`` and ``.svg``).
PICTURE = "life_cost"
#: Beginnings of the names of the files a life writes (and replaces).
OWN = ("life_", f"fig_{PICTURE}.", "life.md")


def ratios(plan: LifePlan, base: str) -> pl.DataFrame:
    """Each family's life against ``base``'s: capex, present cost, final and mean power."""
    totals = plan.totals
    ref = totals.filter(pl.col("family") == base).row(0, named=True)
    names = {
        "capex_usd": "capex_ratio",
        "total_present_usd": "life_cost_ratio",
        "final_power_kw": "final_power_ratio",
        "mean_power_kw": "mean_power_ratio",
    }
    return totals.select("family", *((pl.col(c) / ref[c]).alias(n) for c, n in names.items()))


def life_markdown(plan: LifePlan) -> str:
    """``life.md``: the instance, each family's life in totals and ratios, and the phases."""
    inst, life = plan.instance, plan.instance.life
    assert life is not None
    families = plan.totals["family"].to_list()
    lines = [
        f"# {inst.name}: the life, planned",
        "",
        f"{len(life.phases)} phases to {inst.cluster.gpus:,} GPUs; horizon "
        f"{life.horizon_years:g} years, discount rate {life.discount_rate:.0%} a year, a "
        f"disturbed GPU-hour at ${life.gpu_hour_usd:,.2f}.",
        "",
        "## Totals",
        "",
        markdown_table(plan.totals),
    ]
    if len(families) > 1:
        lines += ["", f"## Against {families[0]}", "", markdown_table(ratios(plan, families[0]))]
    lines += ["", "## Phases", "", markdown_table(plan.table), ""]
    return "\n".join(lines)


def life_files(plan: LifePlan) -> dict[str, Writer]:
    """Every file of the set (module docstring)."""
    assert plan.instance.life is not None
    files: dict[str, Writer] = {}
    files.update(table_writers("life_phases", plan.table))
    files.update(table_writers("life_totals", plan.totals))
    curve = cost_curve(plan)
    files.update(table_writers("life_cost_curve", curve))
    drawn = life_picture.figure(curve, plan.table)
    if drawn is not None:
        files[file_name(PICTURE, "png")] = bytes_writer(drawn[0])
        files[file_name(PICTURE, "svg")] = bytes_writer(drawn[1])
    files["life.md"] = text_writer(life_markdown(plan))
    return files


def write_life(
    plan: LifePlan, outdir: Path, *, force: bool = False, formats: Collection[str] | None = None
) -> list[Path]:
    """Write the life's files into ``outdir``'s set, replacing an earlier life's.

    The other files of the set (a solve's reports, a comparison's table) stay in it.
    """
    return write_set(
        Path(outdir),
        life_files(plan),
        force=force,
        command="life",
        carry=lambda name: not name.startswith(OWN),
        formats=formats,
    )
