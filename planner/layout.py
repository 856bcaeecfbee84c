"""Link lengths from the floor plan: a length distribution per link class of a folded Clos.

Class 0 links a GPU NIC to its leaf, class 1 a leaf to a spine, class 2 a spine to a core.
:func:`hall_of` places the racks on the floor and returns, for each leaf placement the layout
allows, the distribution of class 0 and class 1 lengths, and the distribution of class 2 lengths.

Geometry
--------
Racks and rows. ``nodes = ceil(gpus / gpus_per_node)``, ``racks = ceil(nodes / nodes_per_rack)``;
racks fill in order, each full rack holding ``nodes_per_rack * gpus_per_node`` GPUs and the last
the rest (so the GPU weights sum to ``gpus``). ``rows = ceil(racks / racks_per_row)``; row ``r``
holds racks ``r * racks_per_row ..``, the last row may be partial.

Columns. Rows stand in ``columns`` columns side by side: ``row_columns`` when given, else
``max(1, min(rows, round(sqrt(rows * DEFAULT_ROW_PITCH_M / (racks_per_row * DEFAULT_RACK_WIDTH_M)))))``
(Python ``round``; ``planner.schema.instance.default_row_columns``, as the schema defines an
absent ``row_columns``), which makes a hall of standard racks near square. It depends on counts only,
so moving racks farther apart never re-arranges the hall. ``rows_per_column = ceil(rows /
columns)``; row ``r`` stands in column ``r // rows_per_column`` at depth ``r % rows_per_column``.

Positions. ``row_length = racks_per_row * rack_width_m``; column ``c`` starts at ``x0 = c *
(row_length + cross_aisle_m)``. The rack in slot ``j`` of its row stands at ``x = x0 + (j + 0.5)
* rack_width_m``, ``y = depth * row_pitch_m``. The hall is ``W = columns * row_length + (columns -
1) * cross_aisle_m`` wide and ``rows_per_column * row_pitch_m`` deep (one pitch per row of GPU
racks, the network rows not counted).

Runs. Every horizontal run is multiplied by ``a = 1 + routing_overhead`` and every cable that
leaves a rack gets ``cable_slack_m`` once. Runs are Manhattan (``|dx| + |dy|``).

Leaf sites. ``top_of_rack``: the leaf is in the GPU rack; ``middle_of_row``: one site per row at
``x0 + row_length / 2``; ``end_of_row``: one site per row at ``x0 + row_length + rack_width_m / 2``
(a network rack just past the row's end); row sites stand at the row's ``y``.

Network rows. Spines stand on a network row at ``y_net = (rows_per_column - 1) * row_pitch_m / 2``
(``centre``) or ``y_net = -row_pitch_m`` (``front``), spread evenly along it, one position in line
with every rack slot of the hall: ``x_s`` runs over the slots' ``x`` in every column (so the
network racks move with the GPU racks when racks or aisles widen, and no run ever gets shorter).
Cores stand on a second network row one row pitch away, at the same positions.

Lengths.

- Class 0: ``top_of_rack``: ``in_rack_cable_m`` for every GPU (no slack, no overhead); row
  placements: ``a * |x_rack - x_site| + cable_slack_m``. Weight: GPUs (one link per GPU and plane).
- Class 1: for each leaf site and spine position, ``a * (|x_site - x_s| + |y_site - y_net|) +
  cable_slack_m``, weighted by the GPUs the site serves (its rack's, or its row's).
- Class 2: for each pair of positions, ``a * (|x_s - x_c| + row_pitch_m) + cable_slack_m``,
  weight 1.

Lengths are rounded up to whole centimetres (a length less than ``ROUND_TOL_CM`` above a whole
centimetre counts as that centimetre, which absorbs floating-point noise) and equal lengths are
merged, their integer weights summed. Class 1 is computed without materialising every
site-position pair: the horizontal runs of the sites sharing a weight pattern are sorted once, and
each depth's histogram is read off them by shifting the centimetre boundaries by that depth's
vertical run.

Which medium each link takes, given these lengths, is the sizing model's choice
(``models.cabling``, ``models.clos_sizing``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import accumulate
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from planner.schema.instance import Layout, default_row_columns

#: Lengths closer than this are equal when compared with a threshold, in metres.
LENGTH_TOL_M = 1e-6

#: A length less than this above a whole centimetre is rounded to that centimetre (float noise).
ROUND_TOL_CM = 1e-6

#: Horizontal runs this close are merged before their histogram is built, in centimetres.
MERGE_TOL_CM = 1e-7

#: Link classes of a folded Clos.
GPU_LEAF, LEAF_SPINE, SPINE_CORE = 0, 1, 2

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.floating[Any]]


@dataclass(frozen=True)
class LengthDistribution:
    """Lengths of one link class's links: distinct lengths ascending and integer weights (shares).

    A weight counts links, or shares of links where positions are sampled (class 1 weighs each
    leaf site and spine position pair by the GPUs the site serves).
    """

    length_m: tuple[float, ...]
    """Distinct lengths in metres, whole centimetres, strictly ascending."""
    weight: tuple[int, ...]
    """Weight of each length, positive."""
    _cum_weight: tuple[int, ...] = field(init=False, repr=False, compare=False)
    """Weight of the lengths before each index (0 first, the total last)."""

    def __post_init__(self) -> None:
        lengths, weights = self.length_m, self.weight
        if not lengths or len(lengths) != len(weights):
            raise ValueError(
                f"a length distribution needs as many weights as lengths, at least one "
                f"(got {len(lengths)} lengths, {len(weights)} weights)"
            )
        if any(b <= a for a, b in zip(lengths, lengths[1:], strict=False)):
            raise ValueError("lengths of a length distribution must be strictly ascending")
        if any(w <= 0 for w in weights):
            raise ValueError("weights of a length distribution must be positive")
        object.__setattr__(self, "_cum_weight", tuple(accumulate(weights, initial=0)))

    @property
    def total(self) -> int:
        """Sum of the weights."""
        return self._cum_weight[-1]

    @property
    def min_m(self) -> float:
        """Shortest length in metres."""
        return self.length_m[0]

    @property
    def max_m(self) -> float:
        """Longest length in metres."""
        return self.length_m[-1]

    @property
    def mean_m(self) -> float:
        """Weighted mean length in metres."""
        moment = math.fsum(n * w for n, w in zip(self.length_m, self.weight, strict=True))
        return moment / self.total

    def longer_than(self, threshold_m: float) -> int:
        """Total weight of the lengths above ``threshold_m + LENGTH_TOL_M``."""
        at_or_below = bisect.bisect_right(self.length_m, threshold_m + LENGTH_TOL_M)
        return self.total - self._cum_weight[at_or_below]

    def within(self, low_m: float, high_m: float) -> tuple[float, float] | None:
        """Shortest and longest length in ``(low_m, high_m]`` (bounds widened by LENGTH_TOL_M).

        Returns
        -------
        tuple[float, float] | None
            The two lengths in metres, or None when no length lies in the interval.
        """
        first = bisect.bisect_right(self.length_m, low_m + LENGTH_TOL_M)
        end = bisect.bisect_right(self.length_m, high_m + LENGTH_TOL_M)
        if first >= end:
            return None
        return self.length_m[first], self.length_m[end - 1]

    def links_within(self, low_m: float, high_m: float, links: int) -> tuple[FloatArray, IntArray]:
        """``links`` links spread over the lengths in ``(low_m, high_m]`` in proportion to weight.

        Largest remainders (ties to the longer length) make the counts sum to ``links``
        exactly; the longest length gets at least one link, and the shortest too when there
        are two links or more, so the range of the links is the range of the lengths (one
        link alone sits at the longest).

        Returns
        -------
        tuple[FloatArray, IntArray]
            The lengths in metres, ascending, and the links at each (some may be 0); empty
            when no length lies in the interval.
        """
        first = bisect.bisect_right(self.length_m, low_m + LENGTH_TOL_M)
        end = bisect.bisect_right(self.length_m, high_m + LENGTH_TOL_M)
        lengths = np.asarray(self.length_m[first:end], dtype=np.float64)
        weights = np.asarray(self.weight[first:end], dtype=np.int64)
        return lengths, _apportion(weights, links)

    def through_ocs(self) -> LengthDistribution:
        """Lengths of circuits through an optical circuit switch, at their worst.

        A circuit runs from a spine to the OCS and on to another spine; each run is one of these
        lengths, so a circuit is taken as its own run plus the longest (never understated).
        """
        longest = self.max_m
        return LengthDistribution(tuple(x + longest for x in self.length_m), self.weight)


@dataclass(frozen=True)
class Hall:
    """The floor of a cluster: racks, rows, columns and the length distribution of each link class."""

    racks: int
    """GPU racks."""
    rows: int
    """Rows of GPU racks."""
    columns: int
    """Columns of rows across the hall (a column may stand empty when ``row_columns`` is large)."""
    rows_per_column: int
    """Rows one behind the other in each column."""
    width_m: float
    """Width of the hall: the columns and the cross aisles between them."""
    depth_m: float
    """Depth of the GPU rows, ``rows_per_column * row_pitch_m`` (network rows not counted)."""
    gpu_leaf: Mapping[str, LengthDistribution] = field(hash=False)
    """Class 0 (GPU to leaf) lengths, per allowed leaf placement."""
    leaf_spine: Mapping[str, LengthDistribution] = field(hash=False)
    """Class 1 (leaf to spine) lengths, per allowed leaf placement."""
    spine_core: LengthDistribution
    """Class 2 (spine to core) lengths."""

    def class_lengths(self, link_class: int, placement: str | None = None) -> LengthDistribution:
        """Lengths of a link class; classes 0 and 1 need a leaf placement, class 2 ignores it.

        Raises
        ------
        ValueError
            For an unknown link class, or a missing or not allowed placement.
        """
        if link_class == SPINE_CORE:
            return self.spine_core
        if link_class not in (GPU_LEAF, LEAF_SPINE):
            raise ValueError(f"link class {link_class}: expected 0, 1 or 2")
        by_placement = self.gpu_leaf if link_class == GPU_LEAF else self.leaf_spine
        if placement is None or placement not in by_placement:
            raise ValueError(
                f"link class {link_class} needs a leaf placement among {list(by_placement)} "
                f"(got {placement!r})"
            )
        return by_placement[placement]


def hall_of(layout: Layout, gpus: int, gpus_per_node: int) -> Hall:
    """Place the racks of ``gpus`` GPUs on the floor and measure every link class.

    Parameters
    ----------
    layout
        The floor plan; its ``leaf_placement`` decides which placements are measured.
    gpus
        GPUs to place (need not fill the last node or rack).
    gpus_per_node
        GPUs per server.

    Returns
    -------
    Hall
        Counts, hall size and the length distributions (see the module docstring).
    """
    if gpus < 1 or gpus_per_node < 1:
        raise ValueError(
            f"hall_of needs gpus >= 1 and gpus_per_node >= 1 (got {gpus}, {gpus_per_node})"
        )
    lay = layout
    rack_gpus = lay.nodes_per_rack * gpus_per_node
    racks = math.ceil(math.ceil(gpus / gpus_per_node) / lay.nodes_per_rack)
    last_rack_gpus = gpus - (racks - 1) * rack_gpus
    per_row = lay.racks_per_row
    rows = math.ceil(racks / per_row)
    columns = lay.row_columns if lay.row_columns is not None else default_row_columns(rows, per_row)
    rows_per_column = math.ceil(rows / columns)
    row_length = per_row * lay.rack_width_m
    column_x0 = np.arange(columns) * (row_length + lay.cross_aisle_m)
    width = columns * row_length + (columns - 1) * lay.cross_aisle_m
    depth_y = np.arange(rows_per_column) * lay.row_pitch_m
    y_net = (
        (rows_per_column - 1) * lay.row_pitch_m / 2
        if lay.network_row == "centre"
        else -lay.row_pitch_m
    )
    run = 1.0 + lay.routing_overhead
    slack = lay.cable_slack_m

    # GPUs per rack, laid out by depth (rows) and x position (column, slot).
    rack = np.arange(racks)
    row = rack // per_row
    gpus_of_rack = np.full(racks, rack_gpus, dtype=np.int64)
    gpus_of_rack[-1] = last_rack_gpus
    rack_weight = np.zeros((rows_per_column, columns * per_row), dtype=np.int64)
    rack_weight[row % rows_per_column, (row // rows_per_column) * per_row + rack % per_row] = (
        gpus_of_rack
    )
    rack_x = (column_x0[:, None] + (np.arange(per_row) + 0.5) * lay.rack_width_m).ravel()
    spine_x = rack_x  # one network position in line with every rack slot
    # GPUs per row by depth and column.
    row_weight = rack_weight.reshape(rows_per_column, columns, per_row).sum(axis=2)
    slot_rel_x = (np.arange(per_row) + 0.5) * lay.rack_width_m
    gpus_of_slot = _gpus_of_slot(racks, per_row, rack_gpus, last_rack_gpus)

    site_rel_x = {"middle_of_row": row_length / 2, "end_of_row": row_length + lay.rack_width_m / 2}
    gpu_leaf: dict[str, LengthDistribution] = {}
    leaf_spine: dict[str, LengthDistribution] = {}
    for placement in lay.leaf_placement:
        if placement == "top_of_rack":
            gpu_leaf[placement] = _merged(_to_cm(np.array([lay.in_rack_cable_m])), np.array([gpus]))
            site_x, site_weight = rack_x, rack_weight
        else:
            rel = site_rel_x[placement]
            lengths = run * np.abs(slot_rel_x - rel) + slack
            gpu_leaf[placement] = _merged(_to_cm(lengths), gpus_of_slot)
            site_x, site_weight = column_x0 + rel, row_weight
        leaf_spine[placement] = _leaf_spine(
            site_x, depth_y, site_weight, spine_x, y_net, run, slack
        )

    # Spine to core: every pair of positions on two rows a pitch apart.
    gaps = np.abs(np.subtract.outer(spine_x, spine_x)).ravel()
    core_lengths = run * (gaps + lay.row_pitch_m) + slack
    core_weight = np.ones(gaps.size, dtype=np.int64)
    return Hall(
        racks=racks,
        rows=rows,
        columns=columns,
        rows_per_column=rows_per_column,
        width_m=width,
        depth_m=rows_per_column * lay.row_pitch_m,
        gpu_leaf=MappingProxyType(gpu_leaf),
        leaf_spine=MappingProxyType(leaf_spine),
        spine_core=_merged(_to_cm(core_lengths), core_weight),
    )


def _apportion(weights: IntArray, links: int) -> IntArray:
    """``links`` split over ``weights`` by largest remainder, the last and the first kept >= 1."""
    n = weights.size
    out = np.zeros(n, dtype=np.int64)
    if n == 0 or links <= 0:
        return out
    reserved = np.zeros(n, dtype=np.int64)
    reserved[-1] = 1
    if links >= 2:
        reserved[0] = 1
    rest = links - int(reserved.sum())
    total = int(weights.sum())
    if rest * total < 2**62:
        share = rest * weights
        quota, remainder = share // total, share % total
    else:  # exact in Python integers (never met at 1M GPUs, kept for safety)
        exact = [rest * int(w) for w in weights.tolist()]
        quota = np.array([e // total for e in exact], dtype=np.int64)
        remainder = np.array([e % total for e in exact], dtype=object)
    short = rest - int(quota.sum())
    if short:
        order = np.lexsort((-np.arange(n), -remainder.astype(np.float64)))
        quota[order[:short]] += 1
    return quota + reserved


def _gpus_of_slot(racks: int, per_row: int, rack_gpus: int, last_rack_gpus: int) -> IntArray:
    """GPUs in the racks of each slot of a row, summed over the rows."""
    slot_racks = np.bincount(np.arange(racks) % per_row, minlength=per_row).astype(np.int64)
    gpus = slot_racks * rack_gpus
    gpus[(racks - 1) % per_row] -= rack_gpus - last_rack_gpus
    return gpus


def _to_cm(length_m: FloatArray) -> IntArray:
    """Lengths rounded up to whole centimetres (less than ROUND_TOL_CM above one counts as it)."""
    return np.ceil(length_m * 100.0 - ROUND_TOL_CM).astype(np.int64)


def _merged(length_cm: IntArray, weight: IntArray) -> LengthDistribution:
    """The distribution of centimetre lengths, equal lengths merged and zero weights dropped."""
    counts = np.zeros(int(length_cm.max()) + 1, dtype=np.int64)
    np.add.at(counts, length_cm, weight.astype(np.int64))
    return _from_counts(counts)


def _from_counts(counts: IntArray) -> LengthDistribution:
    """The distribution of a histogram indexed by centimetres."""
    cm = np.flatnonzero(counts)
    return LengthDistribution(
        length_m=tuple((cm / 100.0).tolist()), weight=tuple(counts[cm].tolist())
    )


def _leaf_spine(
    site_x: FloatArray,
    depth_y: FloatArray,
    weight: IntArray,
    spine_x: FloatArray,
    y_net: float,
    run: float,
    slack: float,
) -> LengthDistribution:
    """Class 1 lengths ``run * (|x_site - x_s| + |y - y_net|) + slack`` over sites and positions.

    ``weight[d, i]`` is the GPUs the site at depth ``d`` and x position ``site_x[i]`` serves (0:
    no site). Depths with the same weights share one sorted array of horizontal runs; the
    vertical run only shifts the centimetre boundaries.
    """
    patterns, which = np.unique(weight, axis=0, return_inverse=True)
    which = which.reshape(-1)
    counts: list[IntArray] = []
    for p, pattern in enumerate(patterns):
        used = np.flatnonzero(pattern)
        if used.size == 0:
            continue
        horizontal_cm = (run * np.abs(site_x[used, None] - spine_x[None, :]) * 100.0).ravel()
        pair_weight = np.repeat(pattern[used], spine_x.size)
        vertical_cm = (run * np.abs(depth_y[which == p] - y_net) + slack) * 100.0
        counts.append(_shifted_counts(horizontal_cm, pair_weight, vertical_cm))
    size = max(c.size for c in counts)
    total = np.zeros(size, dtype=np.int64)
    for c in counts:
        total[: c.size] += c
    return _from_counts(total)


def _shifted_counts(base_cm: FloatArray, weight: IntArray, shifts_cm: FloatArray) -> IntArray:
    """Histogram by whole centimetre of ``base + shift`` for every base value and every shift.

    Exact on integer weights. The bases are sorted once and equal ones merged (bases within
    ``MERGE_TOL_CM`` of each other count as equal: float noise). For each shift the histogram is
    either read off the distinct bases directly (rounded up, then summed per centimetre) or, when
    there are more distinct bases than centimetres spanned, from the cumulative weights at the
    shifted centimetre boundaries ``k + ROUND_TOL_CM - shift``.
    """
    rounded = np.round(base_cm / MERGE_TOL_CM) * MERGE_TOL_CM
    order = np.argsort(rounded, kind="stable")
    ordered = rounded[order]
    first = np.flatnonzero(np.diff(ordered, prepend=-np.inf))
    base = ordered[first]
    base_weight = np.add.reduceat(weight[order], first)
    cum = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(base_weight)))
    counts = np.zeros(math.ceil(base[-1] + shifts_cm.max()) + 2, dtype=np.int64)
    for shift in shifts_cm:
        # No base is at or below lo - 1 and every base is at or below hi once shifted.
        lo = max(math.floor(base[0] + shift) - 1, 0)
        hi = math.ceil(base[-1] + shift) + 1
        if base.size <= hi - lo:
            cm = np.ceil(base + (shift - ROUND_TOL_CM)).astype(np.int64)  # ascending
            starts = np.flatnonzero(np.diff(cm, prepend=-1))
            counts[cm[starts]] += np.add.reduceat(base_weight, starts)
        else:
            edges = np.arange(lo, hi + 1) + (ROUND_TOL_CM - shift)
            at_or_below = cum[np.searchsorted(base, edges, side="right")]
            counts[lo : hi + 1] += np.diff(at_or_below, prepend=0)
    return counts
