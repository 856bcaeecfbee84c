"""The torus family: a 1-, 2- or 3-D torus of packet switches, each with its GPUs, routed by DOR.

Sized by its own model (``models.torus_fabric``: closed forms, the length rule, the exact
enumeration); this package turns the instance into that model's data, its solution into a
``Design`` (one switch group of role ``switch``; link classes ``gpu-switch`` and
``switch-switch``), owns the ``torus`` wiring (dims, GPUs per switch, parallel links) and the
validator's independent recomputations. Instance knobs it reads: the cluster, the layout (for the
length rule), the constraints (``max_oversubscription`` bounds the load ratio of uniform
all-to-all under DOR, see the model), the objective and the search (allowed switches and media,
``pin.family``, ``pin.planes``, ``pin.switch_models``); the other pins and ``max_tiers`` are Clos
decisions and do not apply.

The package's parts: ``wiring`` (the wiring kind and its figures), ``family`` (the roles),
``recount`` (the validator's recomputations) and ``design`` (model data in, ``Design`` out).
"""

from __future__ import annotations

from planner.families.torus.design import torus_table
from planner.families.torus.family import Torus
from planner.families.torus.wiring import TORUS, TORUS_WIRING, TorusWiring, parse_torus_wiring

__all__ = ["TORUS", "TORUS_WIRING", "Torus", "TorusWiring", "parse_torus_wiring", "torus_table"]
