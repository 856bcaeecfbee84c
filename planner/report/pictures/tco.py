"""TCO (capex plus lifetime energy) of the search's alternatives and of the optics comparison."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from planner.report.pictures.common import COLOURS, new_figure, png_svg, style, thousands_axis, usd
from planner.report.text import column_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Most alternatives drawn (the cheapest); the table keeps every one.
MAX_BARS = 25


def _bars(
    title: str,
    labels: list[str],
    capex: list[float],
    energy: list[float],
    best: list[bool],
    note: str,
) -> Figure:
    """Horizontal bars of capex plus lifetime energy, the chosen one marked (inside ``style``)."""
    fig = new_figure(1.3 + 0.3 * len(labels))
    ax = fig.add_subplot()
    ax.barh(labels, capex, color=COLOURS["capex"], label="capex")
    ax.barh(labels, energy, left=capex, color=COLOURS["energy"], label="lifetime energy")
    ax.invert_yaxis()
    ax.grid(axis="y", visible=False)
    # The figure's title, not the axes': it starts at the figure's left edge, whatever width
    # the bar labels take, and constrained layout keeps it inside the figure.
    fig.suptitle(title, x=0.01, ha="left", fontweight="bold", fontsize="large")
    ax.set_xlabel(column_label("tco_usd") + (f"; {note}" if note else ""))
    thousands_axis(ax, "x", money=True)
    top = max(c + e for c, e in zip(capex, energy, strict=True))
    ax.set_xlim(0, top * 1.3)
    for k, (c, e, b) in enumerate(zip(capex, energy, best, strict=True)):
        ax.text(
            c + e,
            k,
            f" {usd(c + e)}" + ("  ★ chosen" if b else ""),
            va="center",
            fontsize=8,
            color=COLOURS["winner"] if b else "black",
            weight="bold" if b else "normal",
        )
    fig.legend(loc="outside upper right", fontsize=8, ncols=2)
    return fig


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _drawn(fig: Figure | None) -> tuple[bytes, bytes] | None:
    return None if fig is None else png_svg(fig)


def alternatives_figure(alternatives: pl.DataFrame) -> tuple[bytes, bytes] | None:
    """The priced alternatives as PNG and SVG bytes (:func:`alternatives_draw`), or None."""
    with style():
        return _drawn(alternatives_draw(alternatives))


def alternatives_draw(alternatives: pl.DataFrame) -> Figure | None:
    """The priced alternatives, cheapest first; None when fewer than two were priced."""
    if "tco_usd" not in alternatives.columns:
        return None
    priced = alternatives.filter(pl.col("tco_usd").is_not_null()).sort("tco_usd")
    if len(priced) < 2:
        return None
    shown = priced.head(MAX_BARS)
    labels = [
        f"{r['family']} · {r['option']} ({_count(r['planes'], 'plane')}, {_count(r['tiers'], 'tier')})"
        for r in shown.iter_rows(named=True)
    ]
    note = f"cheapest {len(shown)} of {len(priced):,} priced" if len(priced) > len(shown) else ""
    return _bars(
        "TCO of the alternatives (best design per family and switch option)",
        labels,
        shown["capex_usd"].fill_null(0.0).to_list(),
        shown["energy_usd"].fill_null(0.0).to_list(),
        [bool(w) for w in shown["winner"].fill_null(False).to_list()]
        if "winner" in shown.columns
        else [False] * len(shown),
        note,
    )


def optics_figure(optics: pl.DataFrame | None) -> tuple[bytes, bytes] | None:
    """The optics comparison as PNG and SVG bytes (:func:`optics_draw`), or None."""
    with style():
        return _drawn(optics_draw(optics))


def optics_draw(optics: pl.DataFrame | None) -> Figure | None:
    """The optics comparison's scenarios; None without the table or a priced scenario."""
    if optics is None or not {"scenario", "capex_usd", "energy_usd"} <= set(optics.columns):
        return None
    priced = optics.filter(pl.col("capex_usd").is_not_null())
    if not len(priced):
        return None
    tco = [
        c + (e or 0.0)
        for c, e in zip(priced["capex_usd"].to_list(), priced["energy_usd"].to_list(), strict=True)
    ]
    best = min(tco)
    return _bars(
        "TCO with pluggable optics only, LPO allowed, CPO allowed",
        [str(s) for s in priced["scenario"].to_list()],
        priced["capex_usd"].to_list(),
        priced["energy_usd"].fill_null(0.0).to_list(),
        [t == best for t in tco],
        "",
    )
