"""What a planned design says about growing it: its blocks, its top layer, their prices.

A life (``planner.schema.life``) adds whole blocks under one top layer (``models.layer_growth``).
A three-tier design's block is a pod (its leaves and spines, ``G`` spines each with ``u``
uplinks into top group g); a two-tier design's block is a leaf (``G = 1``, its uplinks spread
over all the spines). What a block costs and draws is the design's total less its top layer,
per block: the block's switches, its GPU links, and its links to the top layer with both ends
(bought when the block is, so ports built ahead carry no optics). Cable lengths are those of the
full-size floor plan, where each block stands from the day it is installed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from models.layer_growth import TopOption
from planner.design import Design
from planner.errors import InputError


@dataclass(frozen=True)
class BlockShape:
    """One generation's block and top device, read from its full-size design."""

    gpus: int
    """GPUs under one block."""
    groups: int
    """G: uplinked switches per block (spines of a pod; 1 for a leaf)."""
    group_uplinks: int
    """u: uplinks of each of them into its top group."""
    sizes: tuple[int, ...]
    """Devices per top group the wiring allows (divisors of u that meet the spread rule)."""
    block_usd: float
    block_w: float
    top_usd: float
    top_w: float
    top_ports: int
    top_model: str
    final_devices: int
    """Top devices of the full-size design (G x its group size)."""

    def option(self, generation: int, price_factor: float) -> TopOption:
        """The top device of generation ``generation`` at a phase's prices."""
        return TopOption(generation, self.top_usd * price_factor, self.top_w, self.top_ports)

    def same_wiring(self, other: BlockShape) -> bool:
        """Whether blocks of the two generations fit under one top layer."""
        return (self.gpus, self.groups, self.group_uplinks) == (
            other.gpus,
            other.groups,
            other.group_uplinks,
        )


def min_spread(design: Design) -> int:
    """Fewest devices an uplinked switch spreads over so one failure keeps the asked fraction."""
    phi = design.requirements.min_fraction_after_failure
    if phi is None or not design.requirements.protected_tiers:
        return 1
    return max(1, math.ceil(1.0 / (1.0 - phi) - 1e-9))


def block_shape(design: Design) -> BlockShape:
    """The block and top layer of a full-size design (module docstring)."""
    if design.num_tiers not in (2, 3) or design.planes != 1:
        raise InputError(
            f"life: a {design.family} design of {design.num_tiers} tier(s) and {design.planes} "
            "plane(s) has no single top layer to grow; a life plans two- or three-tier designs "
            "of one plane (search.pin.planes = 1)"
        )
    top = design.tiers[-1]
    below = design.tiers[-2]
    blocks = design.pods if design.num_tiers == 3 else below.switches
    groups = below.switches // blocks
    u = below.uplinks
    floor = min_spread(design)
    sizes = tuple(m for m in range(1, u + 1) if u % m == 0 and m >= floor)
    final = top.switches // groups
    if final not in sizes:
        sizes = tuple(sorted({*sizes, final}))
    top_usd = top.switches * top.unit_cost_usd
    top_w = top.switches * top.unit_power_w
    return BlockShape(
        gpus=design.gpus // blocks,
        groups=groups,
        group_uplinks=u,
        sizes=sizes,
        block_usd=(design.capex_usd - top_usd) / blocks,
        block_w=(design.power_w - top_w) / blocks,
        top_usd=top.unit_cost_usd,
        top_w=top.unit_power_w,
        top_ports=blocks * u // final,
        top_model=top.switch_model,
        final_devices=top.switches,
    )
