"""Figures of a study: a metric against one swept key, and the Pareto front.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no display, no global state).
Each function returns the ``Figure``; :func:`figure_files` renders them to PNG and SVG bytes for
``planner.output.write_set``, and :func:`write_figures` writes them into a folder as one set.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from planner.output import Writer, bytes_writer, write_set
from planner.study.pareto import PARETO, default_objectives, with_pareto

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Size of every figure, in inches, and its resolution in the PNG.
FIGSIZE_IN = (7.0, 4.5)
DPI = 120
#: The metric drawn against the swept key by default, and the Pareto scatter's axes.
DEFAULT_METRIC = "capex_usd"
DEFAULT_SCATTER = ("capex_usd", "power_kw")
#: A numeric key whose largest value is this many times its smallest is drawn on a log axis.
LOG_RATIO = 30.0
#: Most lines on a sweep curve (one per combination of the other keys); the rest are left out.
MAX_LINES = 12
#: Most swept values written out as ticks (more: matplotlib's own ticks).
MAX_TICKS = 10
#: Most points of the front named on the Pareto scatter, and the title's width in characters.
MAX_LABELS = 10
TITLE_CHARS = 70
#: A label's line height, and how far apart (horizontally) two labels may share a line, in points.
LINE_PT = 9.0
LABEL_SPREAD_PT = 150.0
#: Formats :func:`figure_files` writes.
FORMATS = ("png", "svg")


def _figure() -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE_IN, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _thousands(axis: Any) -> None:
    """Tick labels as plain numbers with thousands separators (no ``1e6`` offset)."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(
        FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}")
    )


def _numeric(series: pl.Series) -> bool:
    return series.dtype.is_numeric() and not series.dtype == pl.Boolean


def _label(name: str) -> str:
    """An axis label from a column name: ``capex_usd`` -> ``capex (USD)`` (``column_label``)."""
    from planner.report import column_label

    return column_label(name)


def sweep_curves(
    df: pl.DataFrame,
    keys: Sequence[str],
    metric: str = DEFAULT_METRIC,
    x: str | None = None,
) -> Figure:
    """``metric`` against the swept key ``x`` (default the first), one line per other keys' values.

    Only scenarios that ran and have the metric are drawn; a numeric key spanning more than
    :data:`LOG_RATIO` times is drawn on a log axis, a non-numeric one at evenly spaced positions.
    """
    if not keys:
        raise ValueError("a sweep curve needs at least one swept key")
    x = x or keys[0]
    for name in (x, metric):
        if name not in df.columns:
            raise ValueError(f"no column {name!r} in the study table")
    others = [k for k in keys if k != x]
    ok = df.filter(pl.col(metric).is_not_null() & (pl.col("status") == "ok"))
    fig = _figure()
    ax = fig.add_subplot()
    numeric = _numeric(df[x])
    ticks: list[Any] = df[x].unique(maintain_order=True).to_list()
    position = {v: i for i, v in enumerate(ticks)}
    groups = ok.group_by(others, maintain_order=True) if others else [((), ok)]
    for n, (values, group) in enumerate(groups):
        if n == MAX_LINES:
            break
        xs = group[x].to_list()
        xs_plot = xs if numeric else [position[v] for v in xs]
        order = sorted(range(len(xs_plot)), key=xs_plot.__getitem__)
        # The legend's title names the other keys: one key's lines are labelled by value alone.
        label = ", ".join(
            str(v) if len(others) == 1 else f"{k.split('.')[-1]}={v}"
            for k, v in zip(others, values, strict=True)
        )
        ax.plot(
            [xs_plot[i] for i in order],
            [group[metric][i] for i in order],
            marker="o",
            label=label or None,
        )
    if numeric:
        finite = [float(v) for v in ticks if v is not None and float(v) > 0]
        if finite and max(finite) / min(finite) > LOG_RATIO:
            ax.set_xscale("log")
        if len(ticks) <= MAX_TICKS:  # the swept values themselves, written out
            shown = sorted(v for v in ticks if v is not None)
            ax.set_xticks(shown, [f"{v:,}" for v in shown])
            ax.minorticks_off()
    else:
        ax.set_xticks(range(len(ticks)), [str(t) for t in ticks])
    ax.set_xlabel(x)
    ax.set_ylabel(_label(metric))
    _thousands(ax.yaxis)
    ax.set_title(f"{_label(metric)} against {x}")
    ax.grid(True, alpha=0.3)
    if others and len(ok):
        ax.legend(fontsize="small", title=", ".join(k.split(".")[-1] for k in others))
    return fig


def pareto_scatter(
    df: pl.DataFrame,
    x: str = DEFAULT_SCATTER[0],
    y: str = DEFAULT_SCATTER[1],
    minimise: Sequence[str] | None = None,
    maximise: Sequence[str] | None = None,
) -> Figure:
    """Every scenario at (``x``, ``y``), the Pareto front highlighted and labelled by scenario.

    The front is over ``minimise``/``maximise`` (default: ``with_pareto``'s), which may be more
    figures than the two drawn: the caption names them.
    """
    for name in (x, y):
        if name not in df.columns:
            raise ValueError(f"no column {name!r} in the study table")
    if minimise is None and maximise is None:
        minimise, maximise = default_objectives(df)
    minimise, maximise = list(minimise or ()), list(maximise or ())
    flagged = df if PARETO in df.columns else with_pareto(df, minimise, maximise)
    drawn = flagged.filter(pl.col(x).is_not_null() & pl.col(y).is_not_null())
    front = drawn.filter(pl.col(PARETO)).sort(x)
    rest = drawn.filter(~pl.col(PARETO))
    fig = _figure()
    ax = fig.add_subplot()
    ax.scatter(rest[x], rest[y], color="0.6", s=18, label="dominated")
    ax.scatter(front[x], front[y], color="tab:red", s=36, zorder=3, label="Pareto front")
    if front.height > 1 and sorted([*minimise, *maximise]) == sorted([x, y]):
        ax.plot(front[x], front[y], color="tab:red", alpha=0.4, zorder=2)  # the 2-D front
    _label_points(ax, front, x, y)
    ax.margins(0.12)
    ax.set_xlabel(_label(x))
    ax.set_ylabel(_label(y))
    _thousands(ax.xaxis)
    _thousands(ax.yaxis)
    over = [f"min {c}" for c in minimise] + [f"max {c}" for c in maximise]
    ax.set_title(
        "\n".join(textwrap.wrap("Pareto front over " + ", ".join(over), TITLE_CHARS)),
        fontsize="small",
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def _label_points(ax: Any, front: pl.DataFrame, x: str, y: str) -> None:
    """Name the front's points (those at one spot once, with how many more share it).

    Labels go right of points in the left half and left of those in the right half, so they
    stay inside the axes; past :data:`MAX_LABELS` spots the rest stay unnamed.
    """
    spots: dict[tuple[Any, Any], list[str]] = {}
    for r in front.iter_rows(named=True):
        spots.setdefault((r[x], r[y]), []).append(r["scenario"])
    if not spots:
        return
    xs = [float(px) for px, _ in spots]
    middle = (min(xs) + max(xs)) / 2
    ax.autoscale_view()
    placed: list[tuple[float, float]] = []  # label anchors so far, in points on the figure
    scale = 72.0 / ax.figure.dpi
    for (px, py), names in list(spots.items())[:MAX_LABELS]:
        text = names[0] + (f" (+{len(names) - 1})" if len(names) > 1 else "")
        right = float(px) > middle
        at_x, at_y = (v * scale for v in ax.transData.transform((float(px), float(py))))
        dy = 4.0
        # Step down past labels already placed near this one (greedy, one line per step).
        while any(
            abs(at_x - qx) < LABEL_SPREAD_PT and abs(at_y + dy - qy) < LINE_PT for qx, qy in placed
        ):
            dy -= LINE_PT
        placed.append((at_x, at_y + dy))
        ax.annotate(
            text,
            (px, py),
            fontsize="x-small",
            xytext=(-5 if right else 5, dy),
            textcoords="offset points",
            ha="right" if right else "left",
        )


def render(fig: Figure, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes (the SVG without a date, so equal figures give equal files)."""
    buf = io.BytesIO()
    metadata: dict[str, Any] = {"Date": None} if fmt == "svg" else {}
    fig.savefig(buf, format=fmt, metadata=metadata)
    return buf.getvalue()


def study_figures(df: pl.DataFrame, keys: Sequence[str]) -> dict[str, Figure]:
    """The study's figures by file stem: capex (and step time) against each key, Pareto scatter.

    Step time is drawn when the table has it; the scatter when the front has figures.
    """
    figs: dict[str, Figure] = {}
    metrics = [DEFAULT_METRIC] + (
        ["step_time_s"]
        if "step_time_s" in df.columns and df["step_time_s"].is_not_null().any()
        else []
    )
    for key in keys:
        for metric in metrics:
            stem = f"sweep_{metric}_{key.split('.')[-1]}"
            figs[stem] = sweep_curves(df, keys, metric, key)
    minimise, maximise = default_objectives(df)
    if minimise or maximise:
        figs["pareto"] = pareto_scatter(df, minimise=minimise, maximise=maximise)
    return figs


def figure_files(df: pl.DataFrame, keys: Sequence[str]) -> dict[str, Writer]:
    """Every study figure as PNG and SVG writers (``<stem>.png``, ``<stem>.svg``)."""
    from planner.output import safe_name

    files: dict[str, Writer] = {}
    for stem, fig in study_figures(df, keys).items():
        for fmt in FORMATS:
            files[f"{safe_name(stem)}.{fmt}"] = bytes_writer(render(fig, fmt))
    return files


def write_figures(
    df: pl.DataFrame, keys: Sequence[str], folder: Path, *, force: bool = False
) -> list[Path]:
    """Write the study's figures into ``folder`` as one set (``planner.output.write_set``)."""
    return write_set(folder, figure_files(df, keys), force=force, command="study figures")
