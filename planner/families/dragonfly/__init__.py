"""The dragonfly family (Kim, Dally, Scott, Abts, ISCA 2008): a plug-in in one package.

``structure`` the wiring rule, its closed forms and the load ratios each routing is sized for;
``layout`` the cable lengths; ``model`` the sizing model; ``design`` instance -> model data ->
``Design`` (and the routing ``auto`` picks); ``wiring`` the ``dragonfly`` wiring kind
(registered on import); ``fabric`` the simulator's graph and the minimal and Valiant strategies;
``ugal`` the UGAL strategy and its adapt hooks (UGAL-G, UGAL-L); ``routing`` the design's
routing as a strategy and hook; ``checks`` the validator's recomputation; ``family`` the
``Family`` hooks.
"""

from __future__ import annotations

from planner.families.dragonfly.family import Dragonfly
from planner.families.dragonfly.wiring import DRAGONFLY, DragonflyWiring

__all__ = ["DRAGONFLY", "Dragonfly", "DragonflyWiring"]
