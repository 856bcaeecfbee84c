"""Link utilisation in the simulation: per traffic, routing, tier and direction.

The simulator reports each group of links by its mean, median, 99th percentile and maximum
utilisation (``sim_links``); the picture draws the mean as a bar and the percentiles as marks.
"""

from __future__ import annotations

import polars as pl

from planner.pictures.common import COLOURS, new_figure, png_svg, style

#: Most rows drawn; the table keeps every one.
MAX_ROWS = 48
ARROWS = {"up": "↑", "down": "↓"}


def figure(sim_links: pl.DataFrame | None) -> tuple[bytes, bytes] | None:
    """The utilisation of every simulated link group; None without a simulation's links."""
    need = {
        "pattern",
        "routing",
        "tier",
        "mean_utilisation",
        "p50_utilisation",
        "p99_utilisation",
        "max_utilisation",
    }
    if sim_links is None or not need <= set(sim_links.columns):
        return None
    rows = sim_links.filter(pl.col("mean_utilisation").is_not_null()).head(MAX_ROWS)
    if not len(rows):
        return None
    labels = [
        f"{r['pattern']} · {r['routing']} · {r['tier']} {ARROWS.get(str(r.get('direction')), '')}".rstrip()
        for r in rows.iter_rows(named=True)
    ]
    ys = list(range(len(rows)))
    from matplotlib.ticker import PercentFormatter

    with style():
        fig = new_figure(1.5 + 0.24 * len(rows))
        ax = fig.add_subplot()
        ax.barh(
            ys, rows["mean_utilisation"].to_list(), color=COLOURS["capex"], height=0.6, label="mean"
        )
        for col, marker, colour in (
            ("p50_utilisation", "|", "black"),
            ("p99_utilisation", "d", COLOURS["optics"]),
            ("max_utilisation", "x", COLOURS["winner"]),
        ):
            ax.plot(
                rows[col].fill_null(float("nan")).to_list(),
                ys,
                linestyle="none",
                marker=marker,
                color=colour,
                markersize=5,
                zorder=3,
                label=col.removesuffix("_utilisation"),
            )
        ax.set_yticks(ys, labels, fontsize=7.5)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.05)
        ax.grid(axis="y", visible=False)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_xlabel("link utilisation (load / capacity, %, at the start of the first phase)")
        more = f" (first {len(rows)} of {len(sim_links):,})" if len(sim_links) > len(rows) else ""
        ax.set_title(f"Simulated link utilisation by traffic, routing and tier{more}", loc="left")
        fig.legend(loc="outside upper right", fontsize=7, ncols=4)
        return png_svg(fig)
