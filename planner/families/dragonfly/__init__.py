"""The dragonfly family (Kim, Dally, Scott, Abts, ISCA 2008): a plug-in in one package.

``structure`` the wiring rule and closed forms; ``layout`` the cable lengths; ``model`` the
sizing model; ``design`` instance -> model data -> ``Design``; ``wiring`` the ``dragonfly``
wiring kind (registered on import); ``fabric`` the simulator's graph and the minimal and Valiant
strategies; ``checks`` the validator's recomputation; ``family`` the ``Family`` hooks.
"""

from __future__ import annotations

from planner.families.dragonfly.family import Dragonfly
from planner.families.dragonfly.wiring import DRAGONFLY, DragonflyWiring

__all__ = ["DRAGONFLY", "Dragonfly", "DragonflyWiring"]
