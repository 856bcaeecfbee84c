"""The dragonfly family (Kim, Dally, Scott, Abts, ISCA 2008): a plug-in in one package.

Its formulation is ``models.dragonfly`` (the wiring rule and closed forms, the cable lengths,
the sizing model). Here: ``design`` instance -> model data -> ``Design`` (and the routing
``auto`` picks); ``wiring`` the ``dragonfly`` wiring kind and its reader; ``fabric`` the simulator's graph and the minimal and Valiant strategies;
``ugal`` the UGAL strategy and its adapt hooks (UGAL-G, UGAL-L); ``routing`` the design's
routing as a strategy and hook; ``checks`` the validator's recomputation; ``family`` the
``Family`` hooks.
"""

from __future__ import annotations

from planner.families.dragonfly.family import Dragonfly
from planner.families.dragonfly.wiring import DRAGONFLY, DragonflyWiring

__all__ = ["DRAGONFLY", "Dragonfly", "DragonflyWiring"]
