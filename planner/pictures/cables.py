"""Cable lengths from the floor plan: the links of every class and medium along a length axis.

The design keeps, for each link class and medium, the count and the shortest and longest link
(``links`` table), not every link's length; the picture shows exactly that: one bar per row
spanning its length range, its count beside it, on a logarithmic metre axis, the medium's
reach marked.
"""

from __future__ import annotations

import polars as pl

from planner.pictures.common import COLOURS, new_figure, png_svg, style

#: Colour by medium kind: copper browns, optics oranges, the rest grey.
KIND_COLOURS = {"dac": COLOURS["copper"], "aec": "#c17d11", "acc": "#c17d11"}


def figure(links: pl.DataFrame) -> tuple[bytes, bytes] | None:
    """One range bar per link class and medium; None without links of a known length."""
    rows = links.filter(pl.col("count") > 0, pl.col("max_length_m") > 0)
    if not len(rows):
        return None
    labels = [f"{r['tier']} · {r['medium']}" for r in rows.iter_rows(named=True)]
    low = [max(v, 0.1) for v in rows["min_length_m"].to_list()]
    high = rows["max_length_m"].to_list()
    with style():
        fig = new_figure(1.3 + 0.38 * len(rows))
        ax = fig.add_subplot()
        for k, r in enumerate(rows.iter_rows(named=True)):
            colour = KIND_COLOURS.get(str(r["kind"]), COLOURS["optics"])
            width = max(high[k] - low[k], high[k] * 0.04)
            ax.barh(
                k,
                width,
                left=low[k] if high[k] > low[k] else high[k] * 0.98,
                color=colour,
                height=0.55,
            )
            ax.text(
                high[k] * 1.08,
                k,
                f"{r['count']:,} links · {low[k]:,.1f}-{high[k]:,.1f} m",
                va="center",
                fontsize=8,
            )
            if r["reach_m"] is not None and r["reach_m"] > 0:
                ax.plot([r["reach_m"]] * 2, [k - 0.32, k + 0.32], color=COLOURS["winner"], lw=1.2)
        ax.set_yticks(range(len(rows)), labels)
        ax.invert_yaxis()
        ax.set_xscale("log")
        from matplotlib.ticker import FuncFormatter, NullLocator

        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda v, _p: f"{v:,.0f}" if v >= 1 else f"{v:g}")
        )
        left = min(low) * 0.7
        right = max(max(high) * 12, max(float(x or 0) for x in rows["reach_m"].to_list()) * 1.3)
        ax.set_xlim(left, right)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("cable length (m, log scale); red tick: the medium's reach")
        ax.set_title(
            "Cable lengths from the floor plan (shortest to longest link, all planes)", loc="left"
        )
        return png_svg(fig)
