"""The layered topology diagram: one box per tier, one bundle per link class, at any scale.

Never one node per switch: a tier of one plane is one box labelled with its role, count and
switch model (a shadow behind it when the fabric has several planes), the GPUs and their
scale-up domain sit at the bottom, and the links between two layers are one line labelled with
every medium they use, its count and its length range. A class whose both ends are the same tier
(a torus's ring links) is drawn as a loop beside the box. Family details the design alone does
not show (rails, torus dimensions) are the family's words on its own tables, handed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.report.pictures.common import COLOURS, new_figure, png_svg, style
from planner.report.text import count_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from planner.design import Design, LinkClass

#: Height of one layer of the diagram, inches.
LAYER_IN = 1.15
#: Box of a layer, in axes fractions: left edge, width, height in layer units.
BOX_X, BOX_W, BOX_H = 0.06, 0.46, 0.5


@dataclass(frozen=True)
class Layer:
    """One horizontal layer: the GPUs or one switch tier (all planes)."""

    role: str
    title: str
    detail: str


def _length_text(low_m: float, high_m: float) -> str:
    if high_m <= 0:
        return "length not modelled"
    if round(low_m, 1) == round(high_m, 1):
        return f"{high_m:,.1f} m"
    return f"{low_m:,.1f}-{high_m:,.1f} m"


def bundle_label(c: LinkClass, planes: int) -> str:
    """One line per medium of a link class: count over all planes, medium, speed, lengths."""
    return "\n".join(
        f"{planes * g.links:,} × {c.speed_gbps}G {g.medium} · {_length_text(g.min_length_m, g.max_length_m)}"
        for g in c.groups
        if g.links
    )


def layers(d: Design) -> list[Layer]:
    """The layers of a design, bottom up: its GPUs, then every tier in order."""
    nodes = -(-d.gpus // d.gpus_per_node)
    out = [
        Layer(
            "gpu",
            f"GPUs · {d.gpus:,}",
            f"{count_text(nodes, 'node')} × {count_text(d.gpus_per_node, 'GPU')}; "
            f"{count_text(d.planes, 'NIC port')} per GPU"
            f" at {d.link_speed_gbps}G",
        )
    ]
    for t in sorted(d.tiers, key=lambda t: t.level):
        total = d.planes * t.switches
        per_plane = f"{d.planes} planes × {t.switches:,}; " if d.planes > 1 else ""
        detail = (
            f"{per_plane}optical circuit switches; {t.downlinks} ports used per device"
            if t.ocs
            else f"{per_plane}radix {t.radix}; {t.downlinks} ports down, {t.uplinks} up per switch"
        )
        out.append(Layer(t.role, f"{t.role} · {total:,} × {t.switch_model}", detail))
    return out


def family_note(d: Design, family_notes: Sequence[str]) -> str:
    """The line under the title: what the family's tables add, then the scale-up domain."""
    notes = list(family_notes)
    if d.scale_up.gpus > 1:
        notes.append(
            f"scale-up domain: {d.scale_up.gpus} GPUs at {d.scale_up.gbps_per_gpu:,.0f} Gb/s per GPU"
        )
    return "; ".join(notes)


def _box(ax: Axes, y: float, layer: Layer, planes: int) -> None:
    from matplotlib.patches import FancyBboxPatch

    shadows = min(planes, 3) - 1 if layer.role != "gpu" else 0
    for k in range(shadows, -1, -1):
        ax.add_patch(
            FancyBboxPatch(
                (BOX_X + 0.008 * k, y - BOX_H / 2 + 0.06 * k),
                BOX_W,
                BOX_H,
                boxstyle="round,pad=0.0,rounding_size=0.04",
                facecolor=COLOURS["box"] if k == 0 else "#dde3ee",
                edgecolor=COLOURS["edge"],
                linewidth=1.2 if k == 0 else 0.6,
                zorder=3 - 0.1 * k,
            )
        )
    cx = BOX_X + BOX_W / 2
    ax.text(
        cx, y + 0.07, layer.title, ha="center", va="center", fontsize=10, weight="bold", zorder=4
    )
    ax.text(
        cx,
        y - 0.13,
        layer.detail,
        ha="center",
        va="center",
        fontsize=8,
        color=COLOURS["muted"],
        zorder=4,
    )


def _scale_up_box(ax: Axes, d: Design) -> None:
    from matplotlib.patches import FancyBboxPatch

    su = d.scale_up
    domains = su.domains(d.gpus)
    x = BOX_X + BOX_W + 0.1
    ax.add_patch(
        FancyBboxPatch(
            (x, -BOX_H / 2),
            0.3,
            BOX_H,
            boxstyle="round,pad=0.0,rounding_size=0.04",
            facecolor="#f3eef5",
            edgecolor=COLOURS["scale-up switches"],
            linewidth=1.2,
            zorder=3,
        )
    )
    switches = (
        f"{su.switches(d.gpus):,} × {su.switch_model}" if su.switch_model else "switches not priced"
    )
    ax.text(
        x + 0.15,
        0.07,
        f"scale-up · {domains:,} domains",
        ha="center",
        va="center",
        fontsize=9,
        weight="bold",
        zorder=4,
    )
    ax.text(
        x + 0.15,
        -0.13,
        f"{su.gpus} GPUs each; {switches}",
        ha="center",
        va="center",
        fontsize=8,
        color=COLOURS["muted"],
        zorder=4,
    )
    ax.plot([BOX_X + BOX_W, x], [0, 0], color=COLOURS["scale-up switches"], lw=3, zorder=2)


def figure(d: Design, family_notes: Sequence[str] = ()) -> tuple[bytes, bytes]:
    """The diagram of a design as PNG and SVG bytes (:func:`draw`, in the house style)."""
    with style():
        return png_svg(draw(d, family_notes))


def draw(d: Design, family_notes: Sequence[str] = ()) -> Figure:
    """The diagram of a design (call it inside :func:`planner.report.pictures.common.style`).

    ``family_notes`` are what the design's family says its tables add (rails and units, torus
    dimensions, OCS circuits: ``Family.picture_notes``), shown under the title.
    """
    stack = layers(d)
    index = {layer.role: i for i, layer in enumerate(stack)}
    fig = new_figure(0.9 + LAYER_IN * len(stack))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.5, len(stack) - 0.5)
    note = family_note(d, family_notes)
    title = (
        f"Topology: {d.family}, {count_text(d.gpus, 'GPU')}, {count_text(d.planes, 'plane')}"
        f" × {count_text(d.num_tiers, 'tier')}"
    )
    ax.set_title(title, loc="left", pad=18 if note else 6)
    if note:
        ax.text(0, 1.0, note, transform=ax.transAxes, fontsize=9, color=COLOURS["muted"])
    for i, layer in enumerate(stack):
        _box(ax, i, layer, d.planes)
    if d.scale_up.gpus > 1:
        _scale_up_box(ax, d)
    # One label per bundle: classes between the same two layers (a dragonfly's local and
    # global links, both inside its one tier) share a line or a loop and one label, a line per
    # medium, so no label is ever drawn over another.
    bundles: dict[tuple[int, int], list[str]] = {}
    for c in d.link_classes:
        lo, hi = index.get(c.lower_role), index.get(c.upper_role)
        label = bundle_label(c, d.planes)
        if lo is not None and hi is not None and label:
            bundles.setdefault((lo, hi), []).append(label)
    for (lo, hi), labels in bundles.items():
        _bundle(ax, lo, hi, "\n".join(labels))
    return fig


def _bundle(ax: Axes, lo: int, hi: int, label: str) -> None:
    """The links between two layers (a line) or inside one (a loop), with their label."""
    if lo == hi:
        # Links inside one tier (a torus's rings, a dragonfly's groups): a loop on the box's right.
        x = BOX_X + BOX_W
        ax.annotate(
            "",
            xy=(x, lo - 0.12),
            xytext=(x, lo + 0.12),
            arrowprops={
                "arrowstyle": "-",
                "connectionstyle": "arc3,rad=-1.6",
                "lw": 2.5,
                "color": COLOURS["optics"],
            },
            zorder=2,
        )
        ax.text(x + 0.05, lo, label, va="center", fontsize=8, zorder=4)
        return
    cx = BOX_X + BOX_W / 2
    ax.plot(
        [cx, cx],
        [lo + BOX_H / 2, hi - BOX_H / 2],
        color=COLOURS["optics"],
        lw=4,
        solid_capstyle="butt",
        zorder=2,
    )
    ax.text(cx + 0.02, (lo + hi) / 2, label, va="center", fontsize=8, zorder=4)
