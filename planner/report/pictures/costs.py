"""Capex and power by kind of component: switches, optics, copper, scale-up switches, OCS.

Read from the ``bom`` table (all planes) and, for the scale-up switches, which the BOM does not
list, from the ``summary`` row. A kind the design does not use gets no bar.
"""

from __future__ import annotations

import polars as pl

from planner.report.pictures.common import (
    COLOURS,
    new_figure,
    png_svg,
    style,
    thousands,
    thousands_axis,
    usd,
)
from planner.report.text import column_label

#: BOM component -> kind of component shown.
KINDS = {
    "switch": "switches",
    "transceiver": "optics",
    "fibre": "optics",
    "cable assembly": "copper",
    "ocs": "OCS",
}


def breakdown(bom: pl.DataFrame, summary: pl.DataFrame) -> pl.DataFrame:
    """Capex (USD) and power (kW) by kind, kinds without cost or power left out."""
    by_kind = (
        bom.with_columns(pl.col("component").replace_strict(KINDS, default="other").alias("kind"))
        .group_by("kind", maintain_order=True)
        .agg(
            pl.col("total_cost_usd").sum().alias("capex_usd"),
            (pl.col("total_power_w").sum() / 1000.0).alias("power_kw"),
        )
    )
    s = summary.row(0, named=True)
    if s.get("scale_up_switches"):
        by_kind = pl.concat(
            [
                by_kind,
                pl.DataFrame(
                    {
                        "kind": ["scale-up switches"],
                        "capex_usd": [float(s["scale_up_capex_usd"] or 0.0)],
                        "power_kw": [float(s["scale_up_power_kw"] or 0.0)],
                    }
                ),
            ]
        )
    return by_kind.filter((pl.col("capex_usd") > 0) | (pl.col("power_kw") > 0))


def sentences(bom: pl.DataFrame, summary: pl.DataFrame) -> list[str]:
    """One kind of component only: its capex and power in a sentence (a chart of one bar each)."""
    data = breakdown(bom, summary)
    if data.height != 1:
        return []
    row = data.row(0, named=True)
    return [
        f"capex and power: all {usd(row['capex_usd'])} of capex and "
        f"{thousands(round(row['power_kw'], 1))} kW of power are {row['kind']}"
    ]


def figure(bom: pl.DataFrame, summary: pl.DataFrame) -> tuple[bytes, bytes] | None:
    """Two bar charts side by side, capex and power by kind; None with fewer than two kinds.

    One kind alone is said in a sentence instead (``sentences``).
    """
    data = breakdown(bom, summary)
    if data.height < 2:
        return None
    kinds = data["kind"].to_list()
    colours = [COLOURS.get(k, COLOURS["muted"]) for k in kinds]
    with style():
        fig = new_figure(1.4 + 0.45 * len(kinds))
        fig.suptitle(
            "Capex and power by component (whole interconnect, all planes)",
            weight="bold",
            x=0.02,
            ha="left",
        )
        axes = fig.subplots(1, 2, sharey=True)
        for ax, col, unit, money in (
            (axes[0], "capex_usd", column_label("capex_usd"), True),
            (axes[1], "power_kw", column_label("power_kw"), False),
        ):
            values = data[col].to_list()
            total = sum(values) or 1.0
            ax.barh(kinds, values, color=colours)
            ax.invert_yaxis()
            ax.set_xlabel(unit)
            ax.grid(axis="y", visible=False)
            thousands_axis(ax, "x", money=money)
            ax.set_xlim(0, max(values) * 1.45 if max(values) > 0 else 1)
            for k, v in enumerate(values):
                text = usd(v) if money else f"{thousands(round(v, 1))} kW"
                ax.text(v, k, f" {text} ({v / total:.0%})", va="center", fontsize=8)
        return png_svg(fig)
