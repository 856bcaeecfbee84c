"""The report folder: every table, report.md, the pictures and report.html, written as one set.

The tables are ``planner.report.tables``' (and ``planner.catalog_tables``'), the words
``planner.report.markdown``'s; nothing here imports a solver. ``write_reports`` writes the
summary, the alternatives, the BOM and the link table as CSV and Parquet, with ``design.json``,
a human summary ``report.md``, the pictures (``planner.report.pictures``) and one
self-contained page ``report.html`` (``planner.report.html``), into one folder as one set,
through ``planner.output`` (staging folder, manifest, lock; CSV rounded, Parquet exact).

The package is the reports' layer: ``text`` (the wording) and ``tables`` (the figures) at the
bottom, ``plan_result`` (what a plan is, read by every report) and ``pictures`` above them, then
``markdown`` and ``html``, and this module, the report folder, on top. Nothing in the package
imports this module back.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from planner.design import Design
from planner.family_roles import Tables
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
from planner.report.markdown import (
    headline,
    instance_lines,
    render_markdown,
    render_sim_markdown,
    tiers_table,
)
from planner.report.tables import (
    BANDWIDTH_LOOP_TABLE,
    IDLE_PRICING_TABLE,
    OPTICS_TABLE,
    bandwidth_loop_table,
    design_summary,
    workload_assumptions,
    workload_step,
)
from planner.schema.instance import Instance

if TYPE_CHECKING:
    from planner.family_roles import Family, Tables
    from planner.report.plan_result import PlanResult
    from planner.sim.sim_tables import SimResult


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
        if not plan_result.sim.together.is_empty():
            tables["sim_together"] = plan_result.sim.together
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
    if plan_result.parallelism is not None:
        tables["parallelism"] = plan_result.parallelism
    if plan_result.reliability is not None:
        from planner.reliability.tables import classes_table, goodput_table

        tables["reliability"] = classes_table(plan_result.reliability)
        tables["goodput"] = goodput_table(plan_result.reliability)
    if plan_result.reliability_options is not None:
        from planner.reliability.options import options_table

        tables["reliability_options"] = options_table(plan_result.reliability_options)
    return tables


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
    ``.svg``, ``planner.report.pictures``; skipped with ``pictures=False``) and ``report.html``,
    one self-contained page of it all (``planner.report.html``). The set replaces the folder's
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
        from planner.report.pictures import render

        family = plan_result.family
        notes: list[str] = family.picture_notes(tables) if isinstance(family, Tables) else []
        figures = render(tables, plan_result.design, notes)
    files, embedded = _figure_writers(figures)
    files["report.html"] = text_writer(solve_html(plan_result, tables, embedded))
    return files


def solve_html(
    plan_result: PlanResult, tables: dict[str, pl.DataFrame], figures: dict[str, bytes]
) -> str:
    """``report.html`` of a plan: its page, with report.md's headline, workload and tiers."""
    from planner.report.html import solve_page

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
    design: Design, sim: SimResult, tables: dict[str, pl.DataFrame], family: Tables | None
) -> dict[str, Writer]:
    """The pictures of a simulated design (PNG and SVG) and its ``report.html``.

    ``family`` is the design's (its words on its tables and their titles), handed in.
    """
    from planner.report.html import simulation_page
    from planner.report.pictures import render

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
ANALYSIS_PREFIXES = ("fabric_comparison.", "torus_", "life_", "fig_life_cost.", "life.md")


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
    if not sim.together.is_empty():
        tables["sim_together"] = sim.together
    tables.update(family.extra_tables(design) if isinstance(family, Tables) else {})
    step = None if instance is None else workload_step(instance, design, sim)
    if step is not None:
        tables["workload"] = step[0]
    carried = _carried(outdir, design)
    if "alternatives.parquet" in carried:  # same design: report.md shows the search's options too
        tables["alternatives"] = pl.read_parquet(outdir / "alternatives.parquet")
    if "alternatives_sim.parquet" in carried:
        tables["alternatives_sim"] = pl.read_parquet(outdir / "alternatives_sim.parquet")
    files = set_files(tables, design, render_sim_markdown(design, sim, tables))
    files.update(
        sim_picture_files(design, sim, tables, family if isinstance(family, Tables) else None)
    )
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
