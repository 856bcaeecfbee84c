"""Link utilisation in the simulation: a histogram per traffic pattern, routing and tier.

The simulator bins the utilisation of every directed link (``sim_link_histogram``: an idle bin,
then bins of 5 % up to 1). The picture is small multiples: one panel per traffic pattern and
tier (rows) and routing (columns, the verdict routing first), each the share of the tier's
links in every bin as bars, its up-links and down-links side by side in each bin (one bar when
the two are the same), so no series is ever drawn over another.
"""

from __future__ import annotations

import polars as pl

from planner.report.pictures.common import COLOURS, new_figure, png_svg, style
from planner.report.text import column_label, count_text

#: Most rows of panels (patterns x tiers); the table keeps every pattern.
MAX_ROWS = 12
#: Height of one row of panels, inches.
ROW_IN = 1.05
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
#: How each direction's bars are drawn: up-links solid, down-links hatched and lighter.
#: (alpha, hatch) by direction.
DIRECTION_STYLE: dict[str, tuple[float, str | None]] = {"up": (1.0, None), "down": (0.45, "////")}
#: Share of a bin's width the bars of a bin fill together.
BAR_FILL = 0.9


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
    shown = patterns[: max(MAX_ROWS // len(tiers), 1)]
    rows = [(p, t) for p in shown for t in tiers]
    from matplotlib.patches import Patch
    from matplotlib.ticker import PercentFormatter

    with style():
        fig = new_figure(1.1 + ROW_IN * len(rows))
        axes = fig.subplots(len(rows), len(routings), squeeze=False, sharex=True, sharey=True)
        for i, (pattern, tier) in enumerate(rows):
            for j, routing in enumerate(routings):
                ax = axes[i][j]
                part = histogram.filter(
                    pl.col("pattern") == pattern,
                    pl.col("routing") == routing,
                    pl.col("tier") == tier,
                )
                _panel(ax, part, colour[tier])
                mark = " (verdict)" if j == 0 and verdict_known else ""
                ax.set_title(f"{pattern} · {routing}{mark}: {tier}", loc="left", fontsize=8)
                ax.yaxis.set_major_formatter(PercentFormatter(100, decimals=0))
                ax.set_yticks([0, 50, 100])
                if j == 0:
                    ax.set_ylabel("links", fontsize=7.5)
        for ax in axes[-1]:
            ax.set_xlabel(f"{column_label('utilisation')} (load / capacity); left of 0: idle")
            ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        handles = [Patch(color=colour[t], label=t) for t in tiers]
        handles += [
            Patch(
                facecolor=COLOURS["muted"],
                alpha=DIRECTION_STYLE[d][0],
                hatch=DIRECTION_STYLE[d][1],
                label=label,
            )
            for d, label in (("up", "up-links (or both, when alike)"), ("down", "down-links"))
        ]
        fig.legend(
            handles=handles, loc="outside lower center", fontsize=7.5, ncols=min(len(handles), 6)
        )
        more = (
            f" (first {len(shown)} of {count_text(len(patterns), 'pattern')})"
            if len(patterns) > len(shown)
            else ""
        )
        fig.suptitle(
            f"Simulated link utilisation: share of a tier's links per 5 % bin{more}",
            x=0.01,
            ha="left",
            fontweight="bold",
        )
        return png_svg(fig)


def _shares(rows: pl.DataFrame) -> tuple[list[float], list[float], int]:
    """Share of the links in each bin (percent), the bins' left edges, and the links."""
    rows = rows.sort("bin_high", "bin_low")
    total = int(rows["links"].sum())
    share = [100.0 * n / total for n in rows["links"].to_list()] if total else []
    lefts = [
        -IDLE_WIDTH if hi == 0 else lo for lo, hi in rows.select("bin_low", "bin_high").iter_rows()
    ]
    return share, lefts, total


def _panel(ax: object, part: pl.DataFrame, colour: str) -> None:
    """One pattern, routing and tier: up- and down-links side by side in every bin."""
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    series = []
    for (direction,), rows in part.group_by(["direction"], maintain_order=True):
        share, lefts, total = _shares(rows)
        if total:
            series.append((str(direction), share, lefts, total))
    if len(series) == 2 and series[0][1] == series[1][1]:
        # Up and down alike (the usual case for symmetric traffic): one bar says both.
        d, share, lefts, total = series[0]
        series = [("up and down", share, lefts, total)]
    width = IDLE_WIDTH * BAR_FILL / max(len(series), 1)
    for k, (direction, share, lefts, total) in enumerate(series):
        alpha, hatch = DIRECTION_STYLE.get(direction, DIRECTION_STYLE["up"])
        # Only bins with links get a bar: most are empty, and every bar costs drawing time.
        filled = [(x, y) for x, y in zip(lefts, share, strict=True) if y > 0]
        ax.bar(
            [x + IDLE_WIDTH * (1 - BAR_FILL) / 2 + k * width for x, _ in filled],
            [y for _, y in filled],
            width=width,
            align="edge",
            color=colour,
            alpha=alpha,
            hatch=hatch,
            edgecolor=colour,
            linewidth=0.4,
            label=f"{direction}: {count_text(total, 'link')}",
        )
    ax.axvline(0.0, color=COLOURS["muted"], lw=0.6)
    ax.set_xlim(-IDLE_WIDTH, 1.0 + 0.005)
    ax.set_ylim(0, 105)
    ax.grid(axis="x", visible=False)
