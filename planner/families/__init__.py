"""Fabric families as plug-ins: the one registry, read at the top and handed down.

``FAMILIES`` maps every family's name to the object that plays its roles
(``planner.family_roles.Family``); the instance schema's list of family names is this registry's
keys, handed to the schema when an instance is read (``planner.loading``). Only the layers above
the families (the API, the CLI, the design.json reader below) look a name up here; everything
below receives the family itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from planner.families.clos import CLOS, Clos
from planner.families.dragonfly import Dragonfly
from planner.families.ocs_direct import OCS_DIRECT, OcsDirect
from planner.families.ocs_torus import OCS_TORUS, OcsTorus
from planner.families.rail.only import RailOnly
from planner.families.rail.optimized import RailOptimized
from planner.families.rail.wiring import RAIL_ONLY, RAIL_OPTIMIZED
from planner.families.torus import TORUS, Torus
from planner.family_roles import Family
from planner.sim.fabric import BuildsFabric

if TYPE_CHECKING:
    from planner.design import Design
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric

__all__ = [
    "CLOS",
    "FAMILIES",
    "OCS_DIRECT",
    "OCS_TORUS",
    "RAIL_ONLY",
    "RAIL_OPTIMIZED",
    "TORUS",
    "fabric_of",
    "family_of",
    "read_design",
    "search_families",
]


class PluggedFamily(Family, BuildsFabric, Protocol):
    """A family as the registry holds it: its roles below the simulator, and its plane."""


#: Every family the planner sizes, by name, in the order the search takes them.
FAMILIES: dict[str, PluggedFamily] = {
    f.name: f
    for f in (Clos(), OcsDirect(), OcsTorus(), Torus(), RailOptimized(), RailOnly(), Dragonfly())
}


def family_of(name: str) -> PluggedFamily:
    """The family of that name; ValueError when no family has it."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(
            f"unknown fabric family {name!r}; known: {', '.join(sorted(FAMILIES))}"
        ) from None


def search_families(inst: Instance) -> list[Family]:
    """The families an instance's search sizes: the pinned one, or ``search.families``."""
    pin = inst.search.pin
    names = [pin.family] if pin.family else list(inst.search.families)
    return [family_of(name) for name in names]


def read_design(data: dict[str, Any] | str) -> Design:
    """A design from design.json data (``Design.to_dict``) or text (``Design.to_json``).

    Its family is resolved from the registry and handed to the reader. DesignFileError (an
    InputError and a ValueError) names every field at fault; ValueError for text that is not JSON.
    """
    import json

    from planner.design_file import design_from_dict

    return design_from_dict(json.loads(data) if isinstance(data, str) else data, FAMILIES)


def fabric_of(design: Design) -> Fabric:
    """The simulator's graph of one plane of the design, built by the design's family."""
    return family_of(design.family).build_fabric(design)
