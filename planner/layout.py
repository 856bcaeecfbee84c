"""Nominal link lengths from the floor plan, and the medium each link class gets.

Issue 2 uses one nominal (worst-case) length per link class; a later issue replaces this with a
length distribution per class and a media model that chooses jointly with the switches.

Where things stand: GPU racks in rows of ``racks_per_row``, the rows laid out so the hall is as
near square as the row length allows (side = sqrt(racks x rack width x row pitch)). A leaf either
sits in the rack it serves (its GPU links are then copper of ``in_rack_cable_m``) or at the end of
its row; a spine is at most half the hall away from its leaves (spines spread over network rows),
a core anywhere in the hall (up to a full side, corner to centre, Manhattan).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.schema.catalog import Catalog, Medium
from planner.schema.instance import Instance


@dataclass(frozen=True)
class Floor:
    """The derived floor: racks, rows and the nominal length of each link class."""

    racks: int
    rows: int
    row_length_m: float
    side_m: float
    """Side of the (near square) hall."""
    class_length_m: tuple[float, float, float]
    """Class 0: GPU to a leaf at the end of its row; 1: leaf to spine; 2: spine to core."""


def floor_of(inst: Instance) -> Floor:
    """Racks, rows and nominal worst-case cable lengths for the instance's cluster."""
    lay, cl = inst.layout, inst.cluster
    nodes = cl.gpus // cl.gpus_per_node
    racks = math.ceil(nodes / lay.nodes_per_rack)
    rows = math.ceil(racks / lay.racks_per_row)
    row_length = min(racks, lay.racks_per_row) * lay.rack_width_m
    side = max(row_length, math.sqrt(racks * lay.rack_width_m * lay.row_pitch_m))
    slack = lay.cable_slack_m
    return Floor(
        racks=racks,
        rows=rows,
        row_length_m=row_length,
        side_m=side,
        class_length_m=(row_length + slack, side / 2 + slack, side + slack),
    )


def medium_value_usd(m: Medium, energy_usd_per_w: float, ends: int = 2) -> float:
    """Capex plus lifetime energy of one link of this medium with ``ends`` pluggable ends."""
    return m.cable_cost_usd + ends * (m.cost_usd_per_end + energy_usd_per_w * m.power_w_per_end)


def cheapest_medium(
    catalog: Catalog, speed_gbps: int, length_m: float, *, copper: bool, energy_usd_per_w: float
) -> Medium | None:
    """The cheapest medium (capex + lifetime energy) of a kind that reaches ``length_m`` at a speed."""
    fits = [
        m
        for m in catalog.medium
        if m.speed_gbps == speed_gbps and m.copper == copper and m.reach_m >= length_m
    ]
    if not fits:
        return None
    return min(fits, key=lambda m: (medium_value_usd(m, energy_usd_per_w), m.name))
