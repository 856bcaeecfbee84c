"""Pictures without faults (issue 32): distinct ticks, no label on another, nothing cut off.

Each picture is drawn (``draw`` of its module, in the house style) and its texts measured on the
Agg canvas after the layout: the Pareto picture's tick labels differ along every axis, the
topology's labels never overlap, a cable panel's reach is in its legend and no text lies on the
legend, and the alternatives' title and x label lie inside the figure.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations
from typing import TYPE_CHECKING, Any

import polars as pl
import pytest

from planner.api import load_instance, plan
from planner.report.pictures import cables, tco, topology
from planner.report.pictures.common import style
from planner.study.figures import pareto_scatter, sweep_curves

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.transforms import Bbox

    from planner.design import Design

#: Pixels two boxes may share at their edges (anti-aliasing), and a text may pass the figure's.
EDGE_PX = 1.0


def laid_out(fig: Figure) -> Any:
    """Draw the figure (its layout engine runs) and return its renderer."""
    fig.canvas.draw()
    return fig.canvas.get_renderer()  # type: ignore[attr-defined]


def overlap(a: Bbox, b: Bbox) -> bool:
    """Whether two boxes share more than their edges."""
    return (
        min(a.x1, b.x1) - max(a.x0, b.x0) > EDGE_PX and min(a.y1, b.y1) - max(a.y0, b.y0) > EDGE_PX
    )


def inside(box: Bbox, fig: Figure) -> bool:
    """Whether a box lies inside the figure."""
    f = fig.bbox
    return (
        box.x0 >= f.x0 - EDGE_PX
        and box.x1 <= f.x1 + EDGE_PX
        and box.y0 >= f.y0 - EDGE_PX
        and box.y1 <= f.y1 + EDGE_PX
    )


# ---- the study's Pareto picture: every tick label differs ------------------------------------
def study_table() -> pl.DataFrame:
    """Four ranked scenarios whose spray fractions differ in the fourth decimal (as docs/studies.md's)."""
    return pl.DataFrame(
        {
            "scenario": ["a", "b", "c", "d"],
            "status": ["ok"] * 4,
            "verdict": ["meets"] * 4,
            "gpus": [256, 256, 512, 1024],
            "capex_usd": [487_680.0, 440_050.0, 1_276_480.0, 2_776_480.0],
            "power_kw": [6.6, 6.1, 21.5, 43.9],
            "sim_fraction_ecmp": [1.0, 0.17, 0.2, 0.5],
            "sim_fraction_spray": [1.0, 0.99985, 0.99962, 0.99971],
        }
    )


def tick_texts(fig: Figure) -> list[list[str]]:
    """The tick labels of every visible axis of a figure, after its layout."""
    laid_out(fig)
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            labels = [
                t.get_text()
                for t, v in zip(axis.get_ticklabels(), axis.get_ticklocs(), strict=True)
                if lo <= v <= hi and t.get_text()
            ]
            out.append(labels)
    return out


@pytest.mark.parametrize("draw", [pytest.param("pareto", marks=pytest.mark.slow), "sweep"])
def test_tick_labels_of_a_study_figure_differ(draw: str) -> None:
    table = study_table()
    fig = (
        pareto_scatter(table)
        if draw == "pareto"
        else sweep_curves(table, ["gpus"], metric="sim_fraction_spray")
    )
    axes = tick_texts(fig)
    assert [labels for labels in axes if len(labels) > 1]
    for labels in axes:
        assert len(set(labels)) == len(labels), labels
        assert not [t for t in labels if "e" in t.lower()], labels  # no 1e6, no offset


# ---- a plan's pictures: labels apart, titles inside ------------------------------------------
@pytest.fixture(scope="module")
def design() -> Design:
    result = plan(load_instance("instances/small-256.toml"), verify=False)
    assert result.design is not None
    return result.design


def with_loops(d: Design) -> Design:
    """The design with two classes of links inside its top tier (a dragonfly's local and global)."""
    top = max(d.tiers, key=lambda t: t.level).role
    c = d.link_classes[-1]
    extra = tuple(
        replace(c, index=len(d.link_classes) + k, lower_role=top, upper_role=top) for k in range(2)
    )
    return replace(d, link_classes=(*d.link_classes, *extra))


@pytest.mark.slow
@pytest.mark.parametrize("loops", [False, True], ids=["layers", "loops"])
def test_the_topologys_labels_never_lie_on_each_other(design: Design, loops: bool) -> None:
    d = with_loops(design) if loops else design
    with style():
        fig = topology.draw(d)
        renderer = laid_out(fig)
        texts = [t for ax in fig.axes for t in ax.texts if t.get_text().strip()]
        boxes = [t.get_window_extent(renderer) for t in texts]
    assert len(texts) >= 2 * len(topology.layers(d))
    for (ta, a), (tb, b) in combinations(zip(texts, boxes, strict=True), 2):
        assert not overlap(a, b), (ta.get_text(), tb.get_text())
    for t, box in zip(texts, boxes, strict=True):
        assert inside(box, fig), t.get_text()


@pytest.mark.slow
def test_a_cable_panels_reach_is_in_its_legend_clear_of_every_text(design: Design) -> None:
    c = design.link_classes[-1]
    g = c.groups[0]
    reach = 50.0
    lengths = tuple((float(m), 40) for m in range(4, 70, 2))
    long = replace(
        g,
        reach_m=reach,
        links=sum(n for _, n in lengths),
        min_length_m=lengths[0][0],
        max_length_m=lengths[-1][0],
        length_histogram=lengths,
    )
    d = replace(design, link_classes=(replace(c, groups=(long,), links=long.links),))
    with style():
        fig = cables.draw(d)
        assert fig is not None
        renderer = laid_out(fig)
        (ax,) = fig.axes
        legend = ax.get_legend()
        assert legend is not None
        entries = [t.get_text() for t in legend.get_texts()]
        assert f"{g.medium} reach {reach:g} m" in entries
        legend_box = legend.get_window_extent(renderer)
        for t in ax.texts:
            assert not overlap(t.get_window_extent(renderer), legend_box), t.get_text()
        assert inside(legend_box, fig)


def test_the_alternatives_title_and_x_label_are_inside_the_figure() -> None:
    """Long option names (b200-32k-800g's) leave the title and the x label whole."""
    from matplotlib.text import Text

    options = ["mixed", "spectrum-x-photonics-102t", "sn5600", "quantum-x-photonics", "q3400"]
    n = len(options) * 2
    alternatives = pl.DataFrame(
        {
            "family": ["clos"] * n,
            "option": [f"{o}-{k}" for k in range(2) for o in options],
            "planes": [1] * n,
            "tiers": [3] * n,
            "capex_usd": [360e6 + 1e6 * k for k in range(n)],
            "energy_usd": [15e6] * n,
            "tco_usd": [375e6 + 1e6 * k for k in range(n)],
            "winner": [k == 0 for k in range(n)],
        }
    )
    with style():
        fig = tco.alternatives_draw(alternatives)
        assert fig is not None
        renderer = laid_out(fig)
        (ax,) = fig.axes
        title = [t for t in fig.findobj(Text) if t.get_text().startswith("TCO of the alternatives")]
        assert len(title) == 1
        wanted = [*title, ax.xaxis.label]
        assert ax.xaxis.label.get_text()
        for t in wanted:
            assert inside(t.get_window_extent(renderer), fig), t.get_text()
        own = ax.get_legend()
        legends = [*fig.legends, *([] if own is None else [own])]
        for legend in legends:
            for t in wanted:
                assert not overlap(
                    legend.get_window_extent(renderer), t.get_window_extent(renderer)
                )
