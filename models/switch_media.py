"""What a switch fabric's links are made of: switch choices, the floor, cable lengths, media.

Shared by the models that size a fabric of packet switches from the floor plan (the switch
torus, ``models.torus_fabric``; the dragonfly, ``models.dragonfly.model``): a switch
model at the plane's speed (``SwitchChoice``), what the length rule needs of the floor
(``Floor``), a cable's length between two racks (``cable_length_m``), the cheapest medium for a
link of any length between two kinds of end (``MediaTable``, ``media_table``) and the links of
one class grouped by medium (``Band``, ``bands``).

Length rule: racks stand ``racks_per_row`` to a row, ``rack_width_m`` apart, rows
``row_pitch_m`` apart. A cable inside a rack is ``in_rack_m`` long; between racks it runs the
Manhattan distance (times ``run_factor``, the trays' overhead) plus ``slack_m``, rounded up to
the centimetre.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models import cabling as cb

#: A length this close above a whole centimetre rounds down to it (float noise), in cm.
ROUND_TOL_CM = 1e-6

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SwitchChoice:
    """A switch model at the plane's port speed."""

    name: str
    radix: int
    cost_usd: float
    power_w: float
    latency_ns: int
    engine: cb.PortKind = None
    """What its ports take: a module cage, a CPO engine, or None (any medium)."""


@dataclass(frozen=True)
class Floor:
    """What the length rule needs of the floor plan (the module docstring's length rule)."""

    gpus_per_rack: int
    racks_per_row: int
    rack_width_m: float
    row_pitch_m: float
    in_rack_m: float
    slack_m: float
    run_factor: float = 1.0
    """Horizontal runs times this: cables follow the trays (1 + routing overhead)."""


@dataclass(frozen=True)
class Band:
    """Links of one class on one medium, per plane: how many, how long."""

    medium: str
    ends: int
    """Pluggable ends per link (2, 1 or 0 with CPO ends)."""
    links: int
    min_length_m: float
    max_length_m: float
    latency_ns: float
    """Worst one-way latency of a link of the band: electronics plus propagation."""


def rack_xy(floor: Floor, rack: IntArray) -> tuple[FloatArray, FloatArray]:
    """Where each rack stands on the floor: (x, y) in metres."""
    x = ((rack % floor.racks_per_row) * floor.rack_width_m).astype(np.float64)
    y = ((rack // floor.racks_per_row) * floor.row_pitch_m).astype(np.float64)
    return x, y


def cable_length_m(floor: Floor, a_rack: IntArray, b_rack: IntArray) -> FloatArray:
    """The length of a cable between racks a and b (the same rack: ``in_rack_m``), in metres."""
    xa, ya = rack_xy(floor, a_rack)
    xb, yb = rack_xy(floor, b_rack)
    run = floor.run_factor * (np.abs(xa - xb) + np.abs(ya - yb)) + floor.slack_m
    m = np.where(a_rack == b_rack, floor.in_rack_m, run)
    return np.asarray(np.ceil(m * 100.0 - ROUND_TOL_CM) / 100.0, dtype=np.float64)


# ---- media --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MediaTable:
    """The medium of least objective value for a link of any length, between two kinds of end.

    ``reach_m[j]`` ascending: a link no longer than ``reach_m[j]`` (and longer than the one
    before) takes ``uses[j]``; a link longer than the last reach has no medium.
    """

    reach_m: tuple[float, ...]
    uses: tuple[cb.Use, ...]
    values: tuple[float, ...]


def media_table(
    media: tuple[cb.MediumOption, ...],
    lower: cb.PortKind,
    upper: cb.PortKind,
    criteria: cb.Criteria,
) -> MediaTable:
    """Build the step function length -> best medium (see ``MediaTable``)."""
    options: list[tuple[float, cb.Use, int]] = []
    for i, m in enumerate(media):
        use = cb.usable(m, lower, upper, 0.0)
        if use is None:
            continue
        reach = m.reach_m
        for end in (lower, upper):
            if isinstance(end, cb.CpoEngine):
                reach = min(reach, end.reach_m)
        options.append((reach, use, i))
    thresholds = sorted({r for r, _, _ in options})
    reach_out, uses, values = [], [], []
    for t in thresholds:
        fits = [(criteria.value_usd(u), u.medium.latency_ns, i, u) for r, u, i in options if r >= t]
        value, _, _, use = min(fits, key=lambda x: x[:3])
        reach_out.append(t)
        uses.append(use)
        values.append(value)
    return MediaTable(tuple(reach_out), tuple(uses), tuple(values))


def bands(table: MediaTable, lengths: FloatArray, copies: int) -> tuple[Band, ...] | None:
    """The links of these lengths (each ``copies`` times) grouped by medium; None if one has none."""
    if lengths.size == 0:
        return ()
    if not table.reach_m or float(lengths.max()) > table.reach_m[-1]:
        return None
    which = np.searchsorted(np.asarray(table.reach_m), lengths, side="left")
    out: list[Band] = []
    for j in np.unique(which).tolist():
        sel = lengths[which == j]
        use = table.uses[j]
        longest = float(sel.max())
        # Consecutive steps on one medium merge: a medium never comes back once passed.
        if out and out[-1].medium == use.medium.name:
            prev = out[-1]
            out[-1] = Band(
                prev.medium,
                prev.ends,
                prev.links + copies * int(sel.size),
                prev.min_length_m,
                longest,
                use.medium.latency_ns + longest * use.medium.ns_per_m,
            )
            continue
        out.append(
            Band(
                use.medium.name,
                use.ends,
                copies * int(sel.size),
                float(sel.min()),
                longest,
                use.medium.latency_ns + longest * use.medium.ns_per_m,
            )
        )
    return tuple(out)
