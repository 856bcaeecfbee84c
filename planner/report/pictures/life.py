"""Cumulative present cost of each family over a planned life (``fabric-planner life``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from planner.report.pictures.common import COLOURS, new_figure, png_svg, style, thousands_axis, usd

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Line colours of the families, in the order they are drawn.
FAMILY_COLOURS = (COLOURS["capex"], COLOURS["OCS"], COLOURS["energy"], COLOURS["muted"], "#75507b")


def figure(curve: pl.DataFrame, phases: pl.DataFrame) -> tuple[bytes, bytes] | None:
    """The life's cumulative cost as PNG and SVG bytes, or None without a priced phase."""
    if curve.is_empty():
        return None
    with style():
        return png_svg(draw(curve, phases))


def draw(curve: pl.DataFrame, phases: pl.DataFrame) -> Figure:
    """One line per family: its present cost so far (``planner.life.plan.cost_curve``).

    Capex and disruption jump at each phase; energy climbs between phases. The first family's
    phases are marked with the GPUs installed after them; the legend gives each family's life.
    """
    fig = new_figure(3.8)
    ax = fig.add_subplot()
    families = curve["family"].unique(maintain_order=True).to_list()
    for k, family in enumerate(families):
        rows = curve.filter(pl.col("family") == family)
        colour = FAMILY_COLOURS[k % len(FAMILY_COLOURS)]
        total = rows["cumulative_present_usd"][-1]
        ax.plot(
            rows["at_years"].to_list(),
            rows["cumulative_present_usd"].to_list(),
            color=colour,
            lw=2,
            label=f"{family}: {usd(total)} over the life",
        )
    first = phases.filter(pl.col("family") == families[0]).sort("phase")
    for a, g in zip(first["at_years"].to_list(), first["gpus"].to_list(), strict=True):
        ax.axvline(a, color=COLOURS["muted"], lw=0.6, ls=":")
        ax.annotate(
            f"{g:,} GPUs",
            (a, 0),
            xytext=(3, 4),
            textcoords="offset points",
            fontsize=8,
            color=COLOURS["muted"],
        )
    ax.set_xlim(0, float(curve["at_years"].max()))  # type: ignore[arg-type]
    ax.set_ylim(0, None)
    ax.set_xlabel("years from the first phase")
    ax.set_ylabel("present cost so far (USD)")
    thousands_axis(ax, "y", money=True)
    ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(
        "Cost over the life: capex and disruption at each phase, energy between, discounted",
        x=0.01,
        ha="left",
        fontweight="bold",
        fontsize="large",
    )
    return fig
