"""Where a job mix runs on the floor plan, one panel per placement policy (``fabric-planner mix``).

Each rack is drawn where it stands: racks side by side along a row, rows one above the other;
inside a rack its nodes are stacked, each node a strip of its GPUs. A GPU takes its job's
colour (neighbouring jobs differ), a GPU no job uses is white, and a GPU a job holds beyond its
size (a whole domain it does not fill) is grey. The panel's title gives the policy, the GPUs
fragmentation takes over the queue's saturated run and the running jobs' mean slowdown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from planner.report.pictures.common import COLOURS, new_figure, png_svg, style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Colours jobs take in turn (qualitative, neighbours apart).
JOB_COLOURS = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#3b6e8f",
    "#a0cbe8",
    "#8cd17d",
)
IDLE_COLOUR = "#ffffff"
HELD_COLOUR = "#b0b0b0"
#: Blank pixels between racks and between rows.
GAP = 1


@dataclass(frozen=True)
class Panel:
    """One policy's snapshot: the job of each GPU, the GPUs held beyond sizes, its figures."""

    title: str
    job_of_gpu: npt.NDArray[np.int64]
    """Job per GPU, -1 idle."""
    held_beyond: npt.NDArray[np.bool_]
    """Per GPU: held by a job beyond its size."""


@dataclass(frozen=True)
class Floor:
    """How GPUs stand on the floor: GPUs per node, nodes per rack, racks per row."""

    gpus_per_node: int
    nodes_per_rack: int
    racks_per_row: int


def image(panel: Panel, floor: Floor) -> npt.NDArray[np.float64]:
    """RGB pixels of one panel: a rack is ``nodes_per_rack`` x ``gpus_per_node`` pixels."""
    from matplotlib.colors import to_rgb

    gpus = panel.job_of_gpu.size
    g = np.arange(gpus)
    node, local = g // floor.gpus_per_node, g % floor.gpus_per_node
    rack, in_rack = node // floor.nodes_per_rack, node % floor.nodes_per_rack
    row, at = rack // floor.racks_per_row, rack % floor.racks_per_row
    rows = int(row.max()) + 1
    height = rows * (floor.nodes_per_rack + GAP) - GAP
    width = floor.racks_per_row * (floor.gpus_per_node + GAP) - GAP
    palette = np.array([to_rgb(c) for c in JOB_COLOURS])
    pixels = np.ones((height, width, 3))
    y = (rows - 1 - row) * (floor.nodes_per_rack + GAP) + in_rack
    x = at * (floor.gpus_per_node + GAP) + local
    jobs = panel.job_of_gpu
    # Jobs take colours in the order they sit on the floor, so neighbours differ.
    colour = np.full(gpus, -1)
    busy = jobs >= 0
    _, first = np.unique(jobs[busy], return_inverse=True)
    colour[busy] = first % len(palette)
    pixels[y[busy], x[busy]] = palette[colour[busy]]
    pixels[y[~busy], x[~busy]] = to_rgb(IDLE_COLOUR)
    pixels[y[panel.held_beyond], x[panel.held_beyond]] = to_rgb(HELD_COLOUR)
    return pixels


def figure(panels: list[Panel], floor: Floor, heading: str) -> tuple[bytes, bytes] | None:
    """The panels as PNG and SVG bytes (None without a panel)."""
    if not panels:
        return None
    with style():
        return png_svg(draw(panels, floor, heading))


def draw(panels: list[Panel], floor: Floor, heading: str) -> Figure:
    """One panel per policy, one above the other (module docstring)."""
    first = image(panels[0], floor)
    aspect = first.shape[0] / first.shape[1]
    panel_in = 8.6 * aspect + 0.45
    fig = new_figure(len(panels) * panel_in + 0.9)
    for k, panel in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, k + 1)
        ax.imshow(image(panel, floor), interpolation="nearest", aspect="equal")
        ax.set_title(panel.title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        for side in ax.spines.values():
            side.set_color(COLOURS["muted"])
    fig.suptitle(heading, fontsize=10)
    fig.text(
        0.5,
        0.01,
        f"rows of racks ({floor.racks_per_row} a row); a rack is {floor.nodes_per_rack} nodes "
        f"of {floor.gpus_per_node} GPUs; a colour per job, white idle, grey held beyond a "
        "job's size",
        ha="center",
        fontsize=8,
        color=COLOURS["muted"],
    )
    return fig
