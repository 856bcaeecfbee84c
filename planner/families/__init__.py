"""Fabric families as plug-ins: the registry the family-agnostic planner looks names up in.

``FAMILIES`` maps every family name of ``planner.schema.instance.FAMILIES`` to the object that
implements ``planner.families.base.Family`` for it (a test checks the two agree).
"""

from __future__ import annotations

from planner.families.base import Family
from planner.families.clos import CLOS, Clos
from planner.families.ocs_direct import OCS_DIRECT, OcsDirect
from planner.families.ocs_torus import OCS_TORUS, OcsTorus
from planner.families.rail_only import RAIL_ONLY, RailOnly
from planner.families.rail_optimized import RAIL_OPTIMIZED, RailOptimized
from planner.families.torus import TORUS, Torus

__all__ = [
    "CLOS",
    "FAMILIES",
    "OCS_DIRECT",
    "OCS_TORUS",
    "RAIL_ONLY",
    "RAIL_OPTIMIZED",
    "TORUS",
    "Family",
    "family_of",
]

_ALL: tuple[Family, ...] = (Clos(), OcsDirect(), OcsTorus(), Torus(), RailOptimized(), RailOnly())

#: Every family the planner sizes, by name.
FAMILIES: dict[str, Family] = {f.name: f for f in _ALL}


def family_of(name: str) -> Family:
    """The family of that name; ValueError when no family has it."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(
            f"unknown fabric family {name!r}; known: {', '.join(sorted(FAMILIES))}"
        ) from None
