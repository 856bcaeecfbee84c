"""What every picture shares: the Agg figure, the house style, number formats, PNG and SVG bytes.

matplotlib is imported inside the functions (importing ``planner`` stays fast), and only its
object-oriented API is used (``matplotlib.figure.Figure`` on an Agg canvas, never ``pyplot``), so
drawing keeps no global state and no GUI backend is ever touched.
"""

from __future__ import annotations

import io
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

#: Resolution of the PNG files, dots per inch.
PNG_DPI = 110
#: Width of every picture, inches.
WIDTH_IN = 9.0
#: Colours by component (switches, optics, copper, scale-up switches, OCS) and accents.
COLOURS = {
    "switches": "#3465a4",
    "optics": "#f57900",
    "copper": "#8f5902",
    "scale-up switches": "#75507b",
    "OCS": "#4e9a06",
    "capex": "#3465a4",
    "energy": "#f57900",
    "winner": "#cc0000",
    "box": "#eef2f8",
    "edge": "#3465a4",
    "muted": "#555753",
}
#: matplotlib settings of every picture; SVG text stays text (searchable, small files).
STYLE: dict[str, Any] = {
    "svg.fonttype": "none",
    # Names come from inputs (catalog models, instance options): '$' is a dollar, never TeX.
    "text.parse_math": False,
    "svg.hashsalt": "fabric-planner",
    "font.size": 9.0,
    "axes.titlesize": 11.0,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": PNG_DPI,
}


def style() -> AbstractContextManager[Any]:
    """A context in which matplotlib draws in the house style (and only on the Agg backend)."""
    import matplotlib

    return matplotlib.rc_context(cast(Any, STYLE))


def new_figure(height_in: float, width_in: float = WIDTH_IN) -> Figure:
    """A figure on an Agg canvas, not registered with ``pyplot``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png_svg(fig: Figure) -> tuple[bytes, bytes]:
    """The figure as PNG and SVG bytes (SVG without a date, so equal designs give equal files)."""
    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", dpi=PNG_DPI, metadata={"Software": None})
    # The layout is done: the SVG keeps it rather than laying the figure out a second time.
    fig.set_layout_engine("none")
    fig.savefig(svg, format="svg", metadata={"Date": None})
    return png.getvalue(), svg.getvalue()


def thousands(value: float) -> str:
    """``1,234,567`` for whole numbers, ``1,234.5`` otherwise."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


def usd(value: float) -> str:
    """``$123,456``; millions and billions shortened (``$5.95M``, ``$12.3M``, ``$1.23B``).

    Every amount of a million or more reads in millions, so the labels of one picture never mix
    ``$5,946,300`` with ``$61.3M``.
    """
    size = abs(value)
    if size >= 1e9:
        return f"${value / 1e9:,.2f}B"
    if size >= 1e7:
        return f"${value / 1e6:,.1f}M"
    if size >= 1e6:
        return f"${value / 1e6:,.2f}M"
    return f"${value:,.0f}"


def thousands_axis(ax: Axes, axis: str = "x", *, money: bool = False) -> None:
    """Tick labels of one axis with thousands separators (and a dollar sign for money)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    fmt = FuncFormatter(lambda v, _pos: usd_tick(v) if money else thousands(v))
    which = ax.xaxis if axis == "x" else ax.yaxis
    which.set_major_formatter(fmt)
    which.set_major_locator(MaxNLocator(nbins=5))


def usd_tick(value: float) -> str:
    """A short dollar tick label: ``$0``, ``$500k``, ``$2.5M``, ``$1.2B``."""
    size = abs(value)
    if size >= 1e9:
        return f"${value / 1e9:,.3g}B"
    if size >= 1e6:
        return f"${value / 1e6:,.3g}M"
    if size >= 1e3:
        return f"${value / 1e3:,.3g}k"
    return f"${value:,.0f}"


def plain_ticks(axis: Axis) -> None:
    """Tick labels as plain numbers with thousands separators, as many decimals as they need.

    matplotlib's own ``ScalarFormatter`` writes the labels, with the decimals neighbouring ticks
    need to differ (0.9996, 0.9998, 1.0000), kept from an offset (``+1e6``) and from scientific
    notation; its figures are then grouped by thousands (``1,250,000``).
    """
    import re

    from matplotlib.ticker import ScalarFormatter

    def grouped(text: str) -> str:
        return re.sub(r"\d+", lambda m: f"{int(m.group()):,}", text, count=1)

    class Grouped(ScalarFormatter):
        def __init__(self) -> None:
            super().__init__(useOffset=False, useMathText=False)
            self.set_scientific(False)

        def __call__(self, x: float, pos: int | None = None) -> str:
            return grouped(super().__call__(x, pos))

    axis.set_major_formatter(Grouped())
