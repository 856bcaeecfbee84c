"""The rail wiring's GPU-to-leaf lengths: every node placed once, then every SU size read off it.

The rule is ``planner.families.rail.sizing``'s (module docstring): an SU of ``s`` nodes holds the nodes
``su s ..`` (the last may hold fewer); its rail leaves stand in the rack of its first node
(``top_of_rack``: ``in_rack_cable_m`` inside that rack, ``a (|dx| + |dy|) + cable_slack_m`` from
another) or at the row site of the row holding its middle node ``su s + (size - 1) // 2``
(``middle_of_row`` / ``end_of_row``: ``a (|dx| + |dy|) + cable_slack_m``), whole centimetres
rounded up, one link per GPU.

Where a node stands does not depend on ``s``: ``NodeGeometry`` places the nodes once per layout
and node count (as ``planner.layout.hall_of`` places the racks), and every SU size reads it.

Work per SU size. The nodes of one rack inside one SU share their rack, position and leaf site,
so they share their length: a size is measured on its *pieces*, the runs of consecutive nodes cut
at every SU boundary and every rack boundary (about ``nodes / nodes_per_rack + nodes / s`` of
them), not node by node. A piece's floating-point operations are those of the node-by-node rule
on any one of its nodes, in the same order, so every length is the same to the bit.

The sizing model prices the GPU links of each candidate SU size on length *tails* only (the
links above each reach threshold, and the longest): ``SuLengthTable`` counts them for many SU
sizes, placements and threshold sets in one pass over the sizes, checking a deadline between
sizes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from models import cabling as cb
from models.clos_sizing import TOP_OF_RACK
from planner.deadline import Watch
from planner.layout import (
    LENGTH_TOL_M,
    ROUND_TOL_CM,
    FloatArray,
    IntArray,
    LengthDistribution,
    default_row_columns,
)
from planner.schema.instance import Layout

#: Row placements: the leaf site is on the row of the SU's middle node.
ROW_PLACEMENTS = ("middle_of_row", "end_of_row")
#: A cut-off for a threshold no length reaches (an infinite reach).
NO_CUTOFF_CM = np.iinfo(np.int64).max


@dataclass(frozen=True, eq=False)
class NodeGeometry:
    """Where every node stands: its x, y (metres) and rack, and the row sites serving it.

    Built once per layout and node count (``of``); it does not depend on the SU size.
    """

    layout: Layout
    nodes: int
    x_m: FloatArray
    """x of each node's rack."""
    y_m: FloatArray
    """y of each node's row."""
    rack: IntArray
    """Each node's rack, ``node // nodes_per_rack``."""
    site_x_m: Mapping[str, FloatArray]
    """Per row placement, the x of the row site serving each node's rack."""
    rack_starts: IntArray
    """First node of every rack."""

    @classmethod
    def of(cls, layout: Layout, nodes: int) -> NodeGeometry:
        """Place ``nodes`` nodes as ``planner.layout.hall_of`` places their racks."""
        lay = layout
        racks = math.ceil(nodes / lay.nodes_per_rack)
        per_row = lay.racks_per_row
        rows = math.ceil(racks / per_row)
        columns = lay.row_columns or default_row_columns(rows, per_row)
        rows_per_column = math.ceil(rows / columns)
        row_length = per_row * lay.rack_width_m
        node = np.arange(nodes, dtype=np.int64)
        rack = node // lay.nodes_per_rack
        row = rack // per_row
        x0 = (row // rows_per_column) * (row_length + lay.cross_aisle_m)
        x = (x0 + (rack % per_row + 0.5) * lay.rack_width_m).astype(np.float64)
        y = ((row % rows_per_column) * lay.row_pitch_m).astype(np.float64)
        # The site's x from the rack's x, exactly as the rule computes it for the site's rack.
        slot = rack % per_row
        rack_x0 = x - (slot + 0.5) * lay.rack_width_m
        rel = {"middle_of_row": row_length / 2, "end_of_row": row_length + lay.rack_width_m / 2}
        site_x = {p: np.asarray(rack_x0 + rel[p], dtype=np.float64) for p in ROW_PLACEMENTS}
        starts = np.arange(0, nodes, lay.nodes_per_rack, dtype=np.int64)
        return cls(lay, nodes, x, y, rack, MappingProxyType(site_x), starts)

    def pieces(self, su_nodes: int) -> tuple[IntArray, IntArray]:
        """First node and node count of every run of nodes inside one SU and one rack, in order."""
        cuts = np.concatenate(
            (np.arange(0, self.nodes, su_nodes, dtype=np.int64), self.rack_starts)
        )
        cuts.sort(kind="stable")
        keep = np.empty(cuts.size, dtype=bool)
        keep[:1] = True
        np.not_equal(cuts[1:], cuts[:-1], out=keep[1:])
        starts = cuts[keep]
        return starts, np.diff(starts, append=self.nodes)

    def lengths_cm(self, su_nodes: int, placement: str, node: IntArray) -> IntArray:
        """Whole-centimetre GPU-to-leaf length of each node in ``node`` with SUs of ``su_nodes``."""
        lay = self.layout
        run = 1.0 + lay.routing_overhead
        x, y = self.x_m[node], self.y_m[node]
        first = (node // su_nodes) * su_nodes
        if placement == TOP_OF_RACK:
            away = run * (np.abs(x - self.x_m[first]) + np.abs(y - self.y_m[first])) + (
                lay.cable_slack_m
            )
            length = np.where(self.rack[node] == self.rack[first], lay.in_rack_cable_m, away)
        else:
            size = np.minimum(first + su_nodes, self.nodes) - first
            site = first + (size - 1) // 2
            site_x = self.site_x_m[placement][site]
            length = run * (np.abs(x - site_x) + np.abs(y - self.y_m[site])) + lay.cable_slack_m
        return np.ceil(length * 100.0 - ROUND_TOL_CM).astype(np.int64)

    def distribution(self, su_nodes: int, placement: str, gpus_per_node: int) -> LengthDistribution:
        """The lengths of every GPU link with SUs of ``su_nodes`` nodes, weighted by GPUs."""
        starts, count = self.pieces(su_nodes)
        cm = self.lengths_cm(su_nodes, placement, starts)
        counts = np.bincount(cm, weights=count * gpus_per_node).astype(np.int64)
        where = np.flatnonzero(counts)
        return LengthDistribution(tuple((where / 100.0).tolist()), tuple(counts[where].tolist()))


def cutoff_cm(threshold_m: float) -> int:
    """The longest whole-centimetre length that is not longer than ``threshold_m``.

    "Longer" as ``LengthDistribution.longer_than`` compares: ``cm / 100 > threshold_m +
    LENGTH_TOL_M`` in floating point (monotone in ``cm``, so one cut-off splits the lengths).
    """
    limit = threshold_m + LENGTH_TOL_M
    if not math.isfinite(limit):
        return int(NO_CUTOFF_CM) if limit > 0 else -1
    cm = math.floor(limit * 100.0)
    while (cm + 1) / 100.0 <= limit:
        cm += 1
    while cm / 100.0 > limit:
        cm -= 1
    return cm


@dataclass(frozen=True, eq=False)
class SuLengthTable:
    """Class 0 length tails of many SU sizes and placements, for the thresholds asked.

    ``longer[(s, placement)][i]`` counts the nodes whose links are longer than ``cutoffs_cm[i]``
    and ``longest_cm[(s, placement)]`` is the longest link; ``tails`` turns them into the
    model's ``LengthTails`` (weights are GPUs: ``gpus_per_node`` links per node).
    """

    gpus_per_node: int
    nodes: int
    cutoffs_cm: tuple[int, ...]
    longer: Mapping[tuple[int, str], tuple[int, ...]]
    longest_cm: Mapping[tuple[int, str], int]

    @classmethod
    def measure(
        cls,
        geometry: NodeGeometry,
        su_nodes: Iterable[int],
        placements: Sequence[str],
        thresholds_m: Iterable[float],
        gpus_per_node: int,
        watch: Watch | None = None,
    ) -> SuLengthTable:
        """Measure every SU size in ``su_nodes`` at every placement against every threshold.

        ``watch`` is checked after each SU size (``DeadlineExpired`` when the time is up).
        """
        cutoffs = np.array(sorted({cutoff_cm(t) for t in thresholds_m}), dtype=np.int64)
        longer: dict[tuple[int, str], tuple[int, ...]] = {}
        longest: dict[tuple[int, str], int] = {}
        bins = cutoffs.size + 1
        for s in sorted(set(su_nodes)):
            starts, count = geometry.pieces(s)
            for placement in placements:
                cm = geometry.lengths_cm(s, placement, starts)
                # Bin i holds the pieces above exactly i cut-offs (they are ascending).
                above = np.bincount(
                    np.searchsorted(cutoffs, cm, side="left"), weights=count, minlength=bins
                )
                tail = np.cumsum(above[::-1])[::-1]  # tail[i]: pieces' nodes above >= i cut-offs
                longer[(s, placement)] = tuple(int(round(v)) for v in tail[1:])
                longest[(s, placement)] = int(cm.max())
            if watch is not None:
                watch.check()
        return cls(
            gpus_per_node,
            geometry.nodes,
            tuple(cutoffs.tolist()),
            MappingProxyType(longer),
            MappingProxyType(longest),
        )

    def tails(
        self, su_nodes: int, placement: str, thresholds_m: tuple[float, ...]
    ) -> cb.LengthTails:
        """The tails of SUs of ``su_nodes`` nodes at ``placement`` over ``thresholds_m``."""
        n = self.gpus_per_node
        counts = self.longer[(su_nodes, placement)]
        index = {c: i for i, c in enumerate(self.cutoffs_cm)}
        return cb.LengthTails(
            self.nodes * n,
            thresholds_m,
            tuple(n * counts[index[cutoff_cm(t)]] for t in thresholds_m),
            max_length_m=self.longest_cm[(su_nodes, placement)] / 100.0,
        )
