"""Cable lengths from the floor plan: a histogram of the links of every class, by medium.

Each ``LinkGroup`` carries its links per length (``length_histogram``, from the floor-plan
distances). The picture has one panel per link class: links (all planes) per length bin,
stacked by medium, the medium's reach marked when it falls inside the panel. A group whose
lengths were not recorded (a design from an older file, a family that keeps only the range) is
spread evenly over its shortest-to-longest range and says so in its legend entry.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from planner.report.pictures.common import (
    COLOURS,
    new_figure,
    png_svg,
    style,
    thousands,
    thousands_axis,
)
from planner.report.text import column_label, count_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from planner.design import Design, LinkClass, LinkGroup
    from planner.layout import FloatArray

#: Colour by medium kind: copper browns, optics oranges and the rest from a fixed cycle.
KIND_COLOURS = {"dac": COLOURS["copper"], "aec": "#c17d11", "acc": "#e9b96e"}
#: Colours of the other media, in the order a panel meets them.
MEDIUM_CYCLE = ("#f57900", "#3465a4", "#4e9a06", "#75507b", "#cc0000", "#555753")
#: Most bars in one panel.
MAX_BARS = 48
#: Bin widths the picture chooses from, in metres.
NICE_WIDTHS_M = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0)


def bin_width_m(span_m: float) -> float:
    """The smallest nice bin width that covers ``span_m`` in at most ``MAX_BARS`` bars."""
    for w in NICE_WIDTHS_M:
        if span_m / w <= MAX_BARS:
            return w
    return math.ceil(span_m / MAX_BARS)


def group_lengths(g: LinkGroup) -> tuple[FloatArray, FloatArray, bool]:
    """Lengths and links per plane of a group; ``True`` when recorded, else a spread over the range."""
    if g.length_histogram:
        pairs = np.asarray(g.length_histogram, dtype=np.float64)
        return pairs[:, 0], pairs[:, 1], True
    steps = 16 if g.max_length_m > g.min_length_m else 1
    x = np.linspace(g.min_length_m, g.max_length_m, steps)
    return x, np.full(steps, g.links / steps), False


def _drawn(c: LinkClass) -> list[tuple[LinkGroup, FloatArray, FloatArray, bool]]:
    """A class's groups with links, each with its lengths, links per length and whether known."""
    return [(g, *group_lengths(g)) for g in c.groups if g.links]


def _bins(series: list[tuple[LinkGroup, FloatArray, FloatArray, bool]]) -> tuple[float, int, int]:
    """Bin width (m), first bin index and number of bins covering every length of a class."""
    low = min(float(x.min()) for _, x, _, _ in series)
    high = max(float(x.max()) for _, x, _, _ in series)
    width = bin_width_m(high - low)
    first = math.floor(low / width + 1e-9)
    return width, first, max(math.floor(high / width + 1e-9) - first + 1, 1)


def _lengths_known(c: LinkClass) -> bool:
    return any(g.links and g.max_length_m > 0 for g in c.groups)


def _one_bar(c: LinkClass) -> bool:
    """Whether every link of the class falls in one bin: a chart of one bar says nothing."""
    return _bins(_drawn(c))[2] == 1


def sentences(design: Design) -> list[str]:
    """The classes a histogram would draw as one bar, in a sentence each (instead of a panel)."""
    out = []
    for c in design.link_classes:
        if not _lengths_known(c) or not _one_bar(c):
            continue
        series = _drawn(c)
        low = min(g.min_length_m for g, *_ in series)
        high = max(g.max_length_m for g, *_ in series)
        span = f"{low:,.2f} m" if low == high else f"{low:,.2f}-{high:,.2f} m"
        media = ", ".join(
            f"{g.medium} ({count_text(g.links * design.planes, 'link')})" for g, *_ in series
        )
        total = sum(g.links for g, *_ in series) * design.planes
        out.append(
            f"cable lengths, {c.lower_role}-{c.upper_role}: all {count_text(total, 'link')} are "
            f"{span} long: {media}"
        )
    return out


def figure(design: Design) -> tuple[bytes, bytes] | None:
    """One histogram panel per link class as PNG and SVG bytes (:func:`draw`); None without one.

    A class whose links all fall in one bin is said in a sentence instead (``sentences``).
    """
    with style():
        fig = draw(design)
        return None if fig is None else png_svg(fig)


def draw(design: Design) -> Figure | None:
    """One histogram panel per link class; None without a class of several lengths.

    Call it inside :func:`planner.report.pictures.common.style`.
    """
    classes = [c for c in design.link_classes if _lengths_known(c) and not _one_bar(c)]
    if not classes:
        return None
    fig = new_figure(0.6 + 2.3 * len(classes))
    axes = fig.subplots(len(classes), 1, squeeze=False)[:, 0]
    for ax, c in zip(axes, classes, strict=True):
        _panel(ax, c.groups, f"{c.lower_role}-{c.upper_role}", design.planes)
    axes[-1].set_xlabel(column_label("cable_length_m"))
    fig.suptitle(
        "Cable lengths from the floor plan: links per length, all planes",
        x=0.01,
        ha="left",
        fontweight="bold",
    )
    return fig


def _panel(ax: object, groups: tuple[LinkGroup, ...], tier: str, planes: int) -> None:
    """One link class: stacked bars by medium over common bins, reach marks, labels."""
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    series = [(g, *group_lengths(g)) for g in groups if g.links]
    low = min(float(x.min()) for _, x, _, _ in series)
    high = max(float(x.max()) for _, x, _, _ in series)
    width, first, bins = _bins(series)
    left = (first + np.arange(bins)) * width
    bottom = np.zeros(bins)
    others = iter(MEDIUM_CYCLE)
    total = 0
    reaches: list[tuple[float, str, str]] = []
    for g, x, n, known in series:
        k = np.clip(np.floor(x / width + 1e-9).astype(np.int64) - first, 0, bins - 1)
        counts = np.bincount(k, weights=n * planes, minlength=bins)
        colour = KIND_COLOURS.get(g.kind) or next(others, COLOURS["muted"])
        label = f"{g.medium}: {thousands(g.links * planes)} links"
        if not known:
            label += " (lengths not recorded: spread over its range)"
        ax.bar(
            left,
            counts,
            width=width * 0.9,
            bottom=bottom,
            align="edge",
            color=colour,
            label=label,
            hatch=None if known else "//",
        )
        bottom += counts
        total += g.links * planes
        if 0 < g.reach_m <= left[-1] + 2 * width:
            reaches.append((g.reach_m, g.medium, colour))
    top = float(bottom.max()) * 1.35
    ax.set_ylim(0, top)
    for reach_m, medium, colour in reaches:
        # The reach is named in the legend, beside the medium's bars: a text on the panel
        # would lie on the legend (or the bars) wherever the reach falls.
        ax.axvline(reach_m, color=colour, ls="--", lw=1.0, label=f"{medium} reach {reach_m:g} m")
    pad = max(width, (high - low) * 0.03, 0.5)
    ax.set_xlim(left[0] - pad, left[-1] + width + pad)
    ax.set_ylabel("links")
    thousands_axis(ax, "y")
    ax.xaxis.set_major_formatter(lambda v, _pos: f"{v:,g}")
    ax.grid(axis="x", visible=False)
    ax.set_title(
        f"{tier}: {thousands(total)} links, {low:,.2f}-{high:,.2f} m (bins of {width:g} m)",
        loc="left",
        fontsize=9,
    )
    ax.legend(fontsize=7, loc="upper right", frameon=False)
