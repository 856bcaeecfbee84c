"""Link utilisation in the simulation: a histogram per traffic pattern and routing.

The simulator bins the utilisation of every directed link (``sim_link_histogram``: an idle bin,
then bins of 5 % up to 1). The picture has one small panel per traffic pattern (rows) and
routing (columns, the verdict routing first): for every tier, the share of its links in each
bin as a step line, up-links solid and down-links dashed, tiers as colours.
"""

from __future__ import annotations

import polars as pl

from planner.pictures.common import COLOURS, new_figure, png_svg, style, thousands

#: Most traffic patterns drawn (rows of panels); the table keeps every one.
MAX_PATTERNS = 10
#: Colours of the tiers, in the order the table meets them.
TIER_COLOURS = (
    COLOURS["switches"],
    COLOURS["optics"],
    COLOURS["OCS"],
    COLOURS["scale-up switches"],
    COLOURS["winner"],
    COLOURS["copper"],
    COLOURS["muted"],
)
#: Width given to the idle bin on the utilisation axis (it has none of its own).
IDLE_WIDTH = 0.05
LINE_STYLES = {"up": "-", "down": "--"}


def figure(
    histogram: pl.DataFrame | None, failures: pl.DataFrame | None = None
) -> tuple[bytes, bytes] | None:
    """Utilisation histograms of the simulated links; None without a simulation's histogram.

    ``failures`` (``sim_failures``) names the verdict routing, whose column comes first.
    """
    need = {"pattern", "routing", "tier", "direction", "bin_low", "bin_high", "links"}
    if histogram is None or not need <= set(histogram.columns) or not len(histogram):
        return None
    patterns = list(dict.fromkeys(histogram["pattern"].to_list()))
    routings = list(dict.fromkeys(histogram["routing"].to_list()))
    verdict_known = False
    if failures is not None and len(failures) and "routing" in failures.columns:
        verdict = failures["routing"][0]
        if verdict in routings:
            verdict_known = True
            routings.remove(verdict)
            routings.insert(0, verdict)
    tiers = list(dict.fromkeys(histogram["tier"].to_list()))
    colour = {t: TIER_COLOURS[k % len(TIER_COLOURS)] for k, t in enumerate(tiers)}
    # Earlier tiers draw wider, so a line lying on another stays visible beside it.
    width = {t: max(3.2 - 0.6 * k, 0.8) for k, t in enumerate(tiers)}
    shown = patterns[:MAX_PATTERNS]
    from matplotlib.lines import Line2D
    from matplotlib.ticker import PercentFormatter

    with style():
        fig = new_figure(1.0 + 1.75 * len(shown))
        axes = fig.subplots(len(shown), len(routings), squeeze=False, sharex=True)
        for i, pattern in enumerate(shown):
            for j, routing in enumerate(routings):
                ax = axes[i][j]
                part = histogram.filter(pl.col("pattern") == pattern, pl.col("routing") == routing)
                _panel(ax, part, colour, width)
                mark = " (verdict)" if j == 0 and verdict_known else ""
                ax.set_title(f"{pattern} · {routing}{mark}", loc="left", fontsize=8.5)
                ax.yaxis.set_major_formatter(PercentFormatter(100, decimals=0))
                if j == 0:
                    ax.set_ylabel("share of links")
        for ax in axes[-1]:
            ax.set_xlabel("utilisation (load / capacity); left of 0: idle")
            ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        handles = [Line2D([], [], color=colour[t], lw=width[t], label=t) for t in tiers]
        handles += [
            Line2D([], [], color="black", ls=LINE_STYLES[d], label=f"{d}-links")
            for d in LINE_STYLES
        ]
        fig.legend(
            handles=handles, loc="outside lower center", fontsize=7.5, ncols=min(len(handles), 6)
        )
        more = (
            f" (first {len(shown)} of {len(patterns)} patterns)"
            if len(patterns) > len(shown)
            else ""
        )
        fig.suptitle(
            f"Simulated link utilisation: share of each tier's links per 5 % bin{more}",
            x=0.01,
            ha="left",
            fontweight="bold",
        )
        return png_svg(fig)


def _panel(ax: object, part: pl.DataFrame, colour: dict[str, str], width: dict[str, float]) -> None:
    """One pattern and routing: a step line per tier and direction, share of its links per bin."""
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    for (tier, direction), rows in part.group_by(["tier", "direction"], maintain_order=True):
        rows = rows.sort("bin_high", "bin_low")
        total = int(rows["links"].sum())
        if not total:
            continue
        share = [100.0 * n / total for n in rows["links"].to_list()]
        edges = [-IDLE_WIDTH] + rows["bin_high"].to_list()
        ax.stairs(
            share,
            edges,
            color=colour[str(tier)],
            ls=LINE_STYLES.get(str(direction), ":"),
            lw=width[str(tier)],
            label=f"{tier} {direction}: {thousands(total)} links",
        )
    ax.axvline(0.0, color=COLOURS["muted"], lw=0.6)
    ax.set_xlim(-IDLE_WIDTH, 1.0)
    ax.set_ylim(0, 105)
