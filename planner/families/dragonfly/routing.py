"""The routing a dragonfly design names, as the simulator's strategy and adapt hook.

``structure.ROUTINGS`` -> (strategy, adapt): ``minimal`` -> ``dragonfly_minimal``; ``valiant``
-> ``dragonfly_valiant``; ``ugal_g`` and ``ugal_l`` -> ``dragonfly_ugal`` with the splits set
before every phase by ``ugal.adapt_global`` or ``ugal.adapt_local``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from models.dragonfly import structure as st
from planner.families.dragonfly.fabric import MINIMAL, VALIANT, dragonfly_fabric, fabric_of
from planner.families.dragonfly.ugal import UGAL, adapt_global, adapt_local
from planner.families.dragonfly.wiring import DragonflyWiring

if TYPE_CHECKING:
    from planner.design import Design
    from planner.sim.fabric import Adapt, Fabric, RoutingStrategy

#: Strategy and adapt hook (made anew for every plane: it keeps its phases' splits) of every
#: routing.
ROUTED: dict[str, tuple[RoutingStrategy, Callable[[], Adapt] | None]] = {
    st.MINIMAL: (MINIMAL, None),
    st.VALIANT: (VALIANT, None),
    st.UGAL_G: (UGAL, adapt_global),
    st.UGAL_L: (UGAL, adapt_local),
}


def routed(fabric: Fabric, routing: str) -> Fabric:
    """The plane routed by ``routing`` (a ``structure.ROUTINGS`` name)."""
    strategy, hook = ROUTED[routing]
    adapt = None if hook is None else hook()
    return replace(fabric, strategy=strategy, adapt=adapt, group_weights=None)


def routed_fabric(design: Design, routing: str | None = None) -> Fabric:
    """One plane of a dragonfly design, routed as the design says (or by ``routing``)."""
    w = design.wiring
    if not isinstance(w, DragonflyWiring):
        raise ValueError(f"a dragonfly design has a dragonfly wiring, not {w.kind}")
    return routed(dragonfly_fabric(design), routing or w.routing)


def routed_plane(
    w: DragonflyWiring, gpus: int, link_speed_gbps: float, routing: str | None = None
) -> Fabric:
    """One plane of a wiring (no design), routed as the wiring says (or by ``routing``)."""
    return routed(fabric_of(gpus, 1, w, link_speed_gbps), routing or w.routing)
