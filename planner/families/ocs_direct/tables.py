"""The OCS layer of a direct-connect design, read from the ``Design`` alone: no solver.

Its shape (``layer_of``) and its report tables (``circuits_table``, ``ocs_table``) live here so
that the report can show them without loading the circuit engineering of ``planner.families.ocs_direct.circuits``, which
re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from planner.design import Design

#: ``Design.routing`` of a direct-connect design: WCMP over direct and one-transit paths by
#: traffic engineering (``planner.families.ocs_direct.wcmp``), or direct circuits only.
ROUTING_WCMP = "wcmp"
ROUTING_DIRECT = "direct"

Circuit = tuple[int, int, int, int]
"""(block a, block b, device, circuits) with a < b."""

CIRCUITS_SCHEMA = {
    "block_a": pl.Int64,
    "block_b": pl.Int64,
    "device": pl.Int64,
    "circuits": pl.Int64,
}
OCS_SCHEMA = {
    "device": pl.Int64,
    "model": pl.Utf8,
    "ports": pl.Int64,
    "ports_cabled": pl.Int64,
    "ports_used": pl.Int64,
    "ports_spare": pl.Int64,
}


@dataclass(frozen=True)
class OcsLayer:
    """The OCS layer of one plane as the assignment sees it."""

    blocks: int
    devices: int
    ports_per_device: int
    """Ports every block has on every device."""
    spines: int = 1
    """Spines per block; spine g of every block is cabled to devices g * D .. (g + 1) * D - 1."""

    @property
    def uplinks(self) -> int:
        """Ports of one block into the OCS layer: circuits it can take part in."""
        return self.devices * self.ports_per_device

    @property
    def devices_per_spine(self) -> int:
        """D: the devices one spine is cabled to."""
        return self.devices // self.spines


def has_ocs_layer(design: Design) -> bool:
    """Whether the design's top tier is OCS devices (the wiring of a direct-connect design)."""
    return bool(design.tiers) and design.tiers[-1].ocs


def layer_of(design: Design) -> OcsLayer:
    """Blocks, devices and ports per block per device of a direct-connect design."""
    if not has_ocs_layer(design):
        raise ValueError(f"not an OCS direct-connect design: {design.family!r}")
    spine, ocs = design.tiers[1], design.tiers[2]
    return OcsLayer(design.pods, ocs.switches, spine.parallel_links, ocs.switches // spine.fanout)


def circuits_table(design: Design) -> pl.DataFrame:
    """One row per (block pair, device) with circuits, for one plane."""
    rows = [
        {"block_a": a, "block_b": b, "device": o, "circuits": k} for a, b, o, k in design.circuits
    ]
    return pl.DataFrame(rows, schema=CIRCUITS_SCHEMA)


def ocs_table(design: Design) -> pl.DataFrame:
    """Every OCS device of one plane: ports, ports cabled to blocks, used by circuits, spare."""
    if not has_ocs_layer(design):
        return pl.DataFrame(schema=OCS_SCHEMA)
    layer = layer_of(design)
    tier = design.tiers[2]
    used = [0] * layer.devices
    for _, _, o, k in design.circuits:
        used[o] += 2 * k
    cabled = layer.blocks * layer.ports_per_device
    rows = [
        {
            "device": o,
            "model": tier.switch_model,
            "ports": tier.radix,
            "ports_cabled": cabled,
            "ports_used": int(used[o]),
            "ports_spare": tier.radix - int(used[o]),
        }
        for o in range(layer.devices)
    ]
    return pl.DataFrame(rows, schema=OCS_SCHEMA)
