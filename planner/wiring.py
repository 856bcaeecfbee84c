"""How a design's switches are wired, as far as its paths go: the part of a Design a family owns.

A ``Design`` is topology-neutral: switch groups (``tiers``) and link classes named by the roles at
their two ends, the BOM and the totals. What depends on how those switches are joined (the
longest path in switches, its one-way latency, the bisection and what one switch failure takes
out) lives in the design's ``wiring``, a small frozen value tagged by ``kind``. Each kind has one
formula for each figure; the report, the tables and the alternatives read them from there, and the
validator keeps its own, independent recomputation.

``up_down`` is the tiered wiring of a folded Clos (and of the packet tiers under an OCS layer).
A family with another wiring defines its kind in its own package and reads it back from a
design.json (``Family.wiring_kind``, ``Family.read_wiring``); the reader of design.json is handed
the readers of every family (``planner.families.design_reading``), so nothing here knows which
kinds exist. The rail families define ``rail_optimized`` and ``rail_only``: the up-down figures
with two parameters, the SU size ``su_nodes`` and the ``rails`` (the node's GPUs
for rail-optimized; for rail-only a multiple of them that divides the scale-up domain), which
say which rail leaf every GPU's NIC is on.

The ``Wiring`` protocol and the up-down kind (``UpDown``, ``UP_DOWN_WIRING``) are defined in
``planner.design`` beside the ``Design`` that holds one and that their formulas read, and are
named here too; this module adds what reads a wiring back from design.json.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from planner.design import UP_DOWN as UP_DOWN
from planner.design import UP_DOWN_WIRING as UP_DOWN_WIRING
from planner.design import UpDown as UpDown
from planner.design import Wiring as Wiring
from planner.design import wiring_to_dict as wiring_to_dict

#: Reader of a wiring kind's parameters: raises ValueError naming what is wrong.
WiringParser = Callable[[dict[str, Any]], Wiring]


def wiring_from_dict(data: Any, parsers: Mapping[str, WiringParser]) -> Wiring:
    """Read a wiring written by ``wiring_to_dict`` with the parser of its kind.

    ``parsers`` maps every kind the caller knows to its reader; ValueError says what is wrong.
    """
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise ValueError("expected an object with a 'kind' naming the wiring")
    kind = data["kind"]
    parse = parsers.get(kind)
    if parse is None:
        raise ValueError(f"unknown wiring kind {kind!r}; known: {', '.join(sorted(parsers))}")
    return parse({k: v for k, v in data.items() if k != "kind"})


def no_params(kind: str, params: dict[str, Any]) -> None:
    """Refuse parameters for a wiring kind that takes none (ValueError)."""
    if params:
        raise ValueError(f"the {kind} wiring takes no parameters, got {', '.join(sorted(params))}")


def parse_up_down(params: dict[str, Any]) -> Wiring:
    """The up-down wiring, which takes no parameters."""
    no_params(UP_DOWN, params)
    return UP_DOWN_WIRING
