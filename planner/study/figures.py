"""Figures of a study: a metric against one swept key, and the Pareto front on each pair of figures.

Only the scenarios the study ranks are drawn (``planner.study.pareto``: those that meet their
``[verify]`` requirements in a verified study); each title says how many were left out and why.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no display, no global state).
Each function returns the ``Figure``; :func:`figure_files` renders them to PNG and SVG bytes for
``planner.output.write_set``, and :func:`write_figures` writes them into a folder as one set.
"""

from __future__ import annotations

import io
import itertools
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from planner.output import Writer, bytes_writer, write_set
from planner.study.pareto import (
    PARETO,
    default_objectives,
    pareto_mask,
    ranked_mask,
    ranking_of,
    with_pareto,
    with_per_gpu,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Size of every figure, in inches, and its resolution in the PNG.
FIGSIZE_IN = (7.0, 4.5)
DPI = 120
#: The metric drawn against the swept key by default.
DEFAULT_METRIC = "capex_usd"
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


def _figure(size_in: tuple[float, float] = FIGSIZE_IN) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size_in, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _thousands(axis: Any) -> None:
    """Tick labels as plain numbers, thousands separated, as precise as the ticks need to differ.

    ``planner.report.pictures.common.plain_ticks``: matplotlib's ``ScalarFormatter`` picks the
    decimals.
    """
    from planner.report.pictures.common import plain_ticks

    plain_ticks(axis)


def _numeric(series: pl.Series) -> bool:
    return series.dtype.is_numeric() and not series.dtype == pl.Boolean


def _label(name: str) -> str:
    """An axis label from a column name: ``capex_usd`` -> ``capex (USD)`` (``column_label``)."""
    from planner.report.text import column_label

    return column_label(name)


def _left_out(df: pl.DataFrame, drawn: int) -> str:
    """``N of M not drawn: ...`` for a title, or an empty text when every scenario is drawn."""
    if drawn == df.height:
        return ""
    r = ranking_of(df)
    reasons = [f"{n} {what}" for what, n in r.left_out.items()]
    missing = df.height - drawn - sum(r.left_out.values())
    if missing > 0:
        reasons.append(f"{missing} missing a figure")
    return f"{df.height - drawn} of {df.height} not drawn: {', '.join(reasons)}"


def _title(ax: Any, text: str, note: str = "") -> None:
    lines = textwrap.wrap(text, TITLE_CHARS) + textwrap.wrap(
        f"({note})" if note else "", TITLE_CHARS
    )
    ax.set_title("\n".join(lines), fontsize="small")


def sweep_curves(
    df: pl.DataFrame,
    keys: Sequence[str],
    metric: str = DEFAULT_METRIC,
    x: str | None = None,
) -> Figure:
    """``metric`` against the swept key ``x`` (default the first), one line per other keys' values.

    Only the ranked scenarios are drawn (``planner.study.pareto.ranked_mask``: those whose design
    meets its ``[verify]`` requirements in a verified study, those with a design otherwise); the
    title says how many were left out and why. A numeric key spanning more than
    :data:`LOG_RATIO` times is drawn on a log axis, a non-numeric one at evenly spaced positions.
    """
    if not keys:
        raise ValueError("a sweep curve needs at least one swept key")
    x = x or keys[0]
    for name in (x, metric):
        if name not in df.columns:
            raise ValueError(f"no column {name!r} in the study table")
    others = [k for k in keys if k != x]
    ok = df.filter(ranked_mask(df)).filter(pl.col(metric).is_not_null())
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
    _title(ax, f"{_label(metric)} against {x}", _left_out(df, ok.height))
    ax.grid(True, alpha=0.3)
    if others and len(ok):
        ax.legend(fontsize="small", title=", ".join(k.split(".")[-1] for k in others))
    return fig


#: Labels of the Pareto picture's three kinds of point (also the collections' labels).
FRONT_HERE = "on the front, beaten by none on this pair"
FRONT_ELSEWHERE = "on the front through another figure"
DOMINATED = "dominated"
#: Most panels in a row of the Pareto picture, and each panel's size in inches.
PANEL_COLUMNS = 3
PANEL_IN = (3.6, 3.1)


def pareto_scatter(
    df: pl.DataFrame,
    minimise: Sequence[str] | None = None,
    maximise: Sequence[str] | None = None,
) -> Figure:
    """The front that was computed, drawn on every pair of its figures (one panel per pair).

    The front is over ``minimise``/``maximise`` (default: ``with_pareto``'s), among the ranked
    scenarios (those that meet, in a verified study), which alone are drawn. Each panel shows
    two of the figures: a front point beaten by no drawn point on those two is filled red (and
    named), a front point some point beats there (it is on the front through another figure,
    named in the title) is a red ring, and a dominated point is grey. So no grey point is ever
    better than a filled red one on both axes of its panel; with two figures, the one panel is
    the whole front. With one figure, the ranked scenarios are drawn along it.
    """
    table = with_per_gpu(df)
    if minimise is None and maximise is None:
        minimise, maximise = default_objectives(table)
    minimise, maximise = list(minimise or ()), list(maximise or ())
    figures = [*minimise, *maximise]
    if not figures:
        raise ValueError("a Pareto picture needs at least one figure to minimise or maximise")
    for name in figures:
        if name not in table.columns:
            raise ValueError(f"no column {name!r} in the study table")
    flagged = table if PARETO in table.columns else with_pareto(table, minimise, maximise)
    drawn = flagged.filter(ranked_mask(flagged)).filter(
        pl.all_horizontal(pl.col(c).is_not_null() for c in figures)
    )
    pairs = list(itertools.combinations(figures, 2)) or [(figures[0], figures[0])]
    columns = min(PANEL_COLUMNS, len(pairs))
    rows = math.ceil(len(pairs) / columns)
    fig = _figure((PANEL_IN[0] * columns + 0.4, PANEL_IN[1] * rows + 1.2))
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax in axes[len(pairs) :]:
        ax.set_visible(False)
    numbers = _front_numbers(drawn, figures)
    for ax, (x, y) in zip(axes, pairs, strict=False):
        if x == y:
            _strip(ax, drawn, x)
        else:
            _panel(ax, drawn, x, y, minimise, maximise)
            _label_points(ax, drawn.filter(pl.col(PARETO)), x, y, numbers, figures)
    over = [f"min {c}" for c in minimise] + [f"max {c}" for c in maximise]
    front = int(drawn[PARETO].sum())
    head = f"Pareto front over {', '.join(over)}: {front} of the {drawn.height} scenarios drawn"
    note = _left_out(table, drawn.height)
    text = "\n".join(textwrap.wrap(head, TITLE_CHARS * columns // 2 + 10))
    fig.suptitle(text + (f"\n({note})" if note else ""), fontsize="small")
    from matplotlib.lines import Line2D

    kinds = (FRONT_HERE, FRONT_ELSEWHERE, DOMINATED)
    handles: list[Any] = [c for c in axes[0].collections if c.get_label() in kinds]
    if pairs[0][0] != pairs[0][1]:  # the numbers of the front's points, named
        key = _front_key(drawn, figures)
        handles += [Line2D([], [], linestyle="none", label=line) for line in key]
    fig.legend(
        handles=handles,
        labels=[h.get_label() for h in handles],
        loc="outside lower center",
        ncols=min(PANEL_COLUMNS, len(handles)),
        fontsize="x-small",
    )
    return fig


def _panel(
    ax: Any, drawn: pl.DataFrame, x: str, y: str, minimise: Sequence[str], maximise: Sequence[str]
) -> None:
    """One pair of the front's figures: filled red beaten by none here, red rings, grey."""
    here = pareto_mask(
        drawn, [c for c in (x, y) if c in minimise], [c for c in (x, y) if c in maximise]
    )
    on_front = drawn[PARETO]
    best = drawn.filter(on_front & here).sort(x)
    elsewhere = drawn.filter(on_front & ~here)
    dominated = drawn.filter(~on_front)
    ax.scatter(dominated[x], dominated[y], color="0.6", s=14, label=DOMINATED)
    ax.scatter(
        elsewhere[x],
        elsewhere[y],
        facecolors="none",
        edgecolors="tab:red",
        s=30,
        zorder=3,
        label=FRONT_ELSEWHERE,
    )
    ax.scatter(best[x], best[y], color="tab:red", s=30, zorder=4, label=FRONT_HERE)
    if best.height > 1:
        ax.plot(best[x], best[y], color="tab:red", alpha=0.4, zorder=2)
    ax.margins(0.12)
    ax.set_xlabel(_label(x), fontsize="small")
    ax.set_ylabel(_label(y), fontsize="small")
    _thousands(ax.xaxis)
    _thousands(ax.yaxis)
    ax.tick_params(labelsize="x-small")
    ax.set_title(
        f"{'min' if x in minimise else 'max'} {x}, {'min' if y in minimise else 'max'} {y}",
        fontsize="x-small",
    )
    ax.grid(True, alpha=0.3)


def _strip(ax: Any, drawn: pl.DataFrame, x: str) -> None:
    """A front of one figure: every ranked scenario along it, the best in red and named."""
    order = drawn.sort(x)
    ys = list(range(order.height))
    flags = order[PARETO].to_list()
    ax.scatter(
        [v for v, f in zip(order[x], flags, strict=True) if not f],
        [y for y, f in zip(ys, flags, strict=True) if not f],
        color="0.6",
        s=14,
        label=DOMINATED,
    )
    ax.scatter(
        [v for v, f in zip(order[x], flags, strict=True) if f],
        [y for y, f in zip(ys, flags, strict=True) if f],
        color="tab:red",
        s=30,
        zorder=3,
        label=FRONT_HERE,
    )
    shown = ys[:MAX_TICKS]
    ax.set_yticks(shown, [str(order["scenario"][i]) for i in shown], fontsize="x-small")
    ax.set_xlabel(_label(x), fontsize="small")
    _thousands(ax.xaxis)
    ax.grid(True, alpha=0.3)


def _front_numbers(drawn: pl.DataFrame, figures: Sequence[str]) -> dict[tuple[Any, ...], int]:
    """A number for each spot of the front (front scenarios with equal figures share one).

    Numbered in the order of the first figure; past :data:`MAX_LABELS` spots, none.
    """
    spots: dict[tuple[Any, ...], int] = {}
    for r in drawn.filter(pl.col(PARETO)).sort(list(figures)).iter_rows(named=True):
        spot = tuple(r[c] for c in figures)
        if spot not in spots and len(spots) < MAX_LABELS:
            spots[spot] = len(spots) + 1
    return spots


def _front_key(drawn: pl.DataFrame, figures: Sequence[str]) -> list[str]:
    """``1: <scenario>`` (``(+n)`` more sharing its figures) for each numbered spot."""
    names: dict[int, list[str]] = {}
    numbers = _front_numbers(drawn, figures)
    for r in drawn.filter(pl.col(PARETO)).iter_rows(named=True):
        number = numbers.get(tuple(r[c] for c in figures))
        if number is not None:
            names.setdefault(number, []).append(str(r["scenario"]))
    return [
        f"{n}: {names[n][0]}" + (f" (+{len(names[n]) - 1})" if len(names[n]) > 1 else "")
        for n in sorted(names)
    ]


def _label_points(
    ax: Any,
    front: pl.DataFrame,
    x: str,
    y: str,
    numbers: dict[tuple[Any, ...], int],
    figures: Sequence[str],
) -> None:
    """Number the front's points (the numbers of every spot drawn at one place, once).

    Labels go right of points in the left half and left of those in the right half, so they
    stay inside the axes; one that would sit on another steps down a line.
    """
    at: dict[tuple[Any, Any], list[int]] = {}
    for r in front.iter_rows(named=True):
        number = numbers.get(tuple(r[c] for c in figures))
        if number is not None and number not in at.setdefault((r[x], r[y]), []):
            at[(r[x], r[y])].append(number)
    at = {spot: sorted(ns) for spot, ns in at.items() if ns}
    if not at:
        return
    xs = [float(px) for px, _ in at]
    middle = (min(xs) + max(xs)) / 2
    ax.autoscale_view()
    placed: list[tuple[float, float]] = []  # label anchors so far, in points on the figure
    scale = 72.0 / ax.figure.dpi
    for (px, py), ns in at.items():
        text = ",".join(map(str, ns))
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

    Step time is drawn when the table has it; the Pareto picture when the front has figures.
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
