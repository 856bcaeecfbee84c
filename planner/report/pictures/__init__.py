"""Pictures of a plan: one module per family of picture, each drawn from the report's tables.

:func:`render` returns every picture that has data for the design, as file name -> bytes, in PNG
and SVG (``fig_<name>.png``, ``fig_<name>.svg``); a picture without data is not produced. The
modules draw on matplotlib's Agg canvas and import it only when called.

=================  ============================================  =================================
picture            module                                        drawn from
=================  ============================================  =================================
``topology``       :mod:`planner.report.pictures.topology`       the design; ``rails``, ``torus``,
                                                                 ``circuits`` when present
``costs``          :mod:`planner.report.pictures.costs`          ``bom``, ``summary``
``alternatives``   :mod:`planner.report.pictures.tco`            ``alternatives``
``optics``         :mod:`planner.report.pictures.tco`            ``optics_comparison``
``cable_lengths``  :mod:`planner.report.pictures.cables`         the design's length histograms
``utilisation``    :mod:`planner.report.pictures.utilisation`    ``sim_link_histogram``
=================  ============================================  =================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from collections.abc import Sequence

    from planner.design import Design

#: Every picture a report may hold, in the order a page shows them.
PICTURES = ("topology", "costs", "alternatives", "optics", "cable_lengths", "utilisation")
#: The formats each picture is written in.
FORMATS = ("png", "svg")


def file_name(picture: str, fmt: str) -> str:
    """``fig_<picture>.<fmt>``."""
    return f"fig_{picture}.{fmt}"


def render(
    tables: dict[str, pl.DataFrame], design: Design | None, family_notes: Sequence[str] = ()
) -> dict[str, bytes]:
    """Every picture with data for this plan, as file name -> bytes (PNG and SVG each).

    Without a design, only the alternatives can be drawn. ``family_notes`` are the design's
    family's words on its tables, for the topology's title (``Family.picture_notes``).
    """
    from planner.report.pictures import cables, costs, tco, topology, utilisation

    drawn: dict[str, tuple[bytes, bytes] | None] = {}
    if design is not None:
        drawn["topology"] = topology.figure(design, family_notes)
        drawn["costs"] = costs.figure(tables["bom"], tables["summary"])
    if "alternatives" in tables:
        drawn["alternatives"] = tco.alternatives_figure(tables["alternatives"])
    drawn["optics"] = tco.optics_figure(tables.get("optics_comparison"))
    if design is not None and "links" in tables:
        drawn["cable_lengths"] = cables.figure(design)
    drawn["utilisation"] = utilisation.figure(
        tables.get("sim_link_histogram"), tables.get("sim_failures")
    )
    files: dict[str, bytes] = {}
    for name in PICTURES:
        pair = drawn.get(name)
        if pair is not None:
            files[file_name(name, "png")], files[file_name(name, "svg")] = pair
    return files


def sentences(tables: dict[str, pl.DataFrame], design: Design | None) -> dict[str, list[str]]:
    """What a picture leaves out because it would be a chart of one bar, said in sentences.

    By picture name: the cost breakdown of a single kind of component, the link classes whose
    cables all have one length. The page shows them where the picture (or its panel) would be.
    """
    from planner.report.pictures import cables, costs

    out: dict[str, list[str]] = {}
    if design is not None:
        out["costs"] = costs.sentences(tables["bom"], tables["summary"])
        if "links" in tables:
            out["cable_lengths"] = cables.sentences(design)
    return {name: lines for name, lines in out.items() if lines}
