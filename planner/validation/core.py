"""The validator's shared parts: a violation, its tolerances, and the checks of ports and shape.

``Violation`` is defined in ``planner.violation`` (the roles a family plays name it too).
"""

from __future__ import annotations

import math

from planner.design import Design
from planner.violation import Violation as Violation

#: Relative tolerance on recomputed money and power totals (CP-SAT rounds each unit to a cent
#: and a milliwatt, so the totals may differ by that much per component).
TOTAL_RTOL = 1e-6
#: Absolute tolerance floor on totals, in dollars or watts.
TOTAL_ATOL = 1.0
#: Propagation delay, ns per metre, by what the signal travels in (public figures: ~4.9 ns/m in
#: silica fibre, 4.5 ns/m in twinax copper), kept apart from the model's own constants.
PROPAGATION_NS_PER_M = {"fibre": 4.9, "copper": 4.5}


def close_enough(a: float, b: float) -> bool:
    """Two recomputed totals agree within ``TOTAL_RTOL`` and ``TOTAL_ATOL``."""
    return math.isclose(a, b, rel_tol=TOTAL_RTOL, abs_tol=TOTAL_ATOL)


def check_ports(d: Design) -> list[Violation]:
    """Every switch uses at most its radix: downlinks + uplinks <= radix."""
    out: list[Violation] = []
    for t in d.tiers:
        if t.downlinks + t.uplinks > t.radix:
            out.append(
                Violation(
                    "ports", f"{t.role}: {t.downlinks} down + {t.uplinks} up > radix {t.radix}"
                )
            )
        if t.switches < 1 or t.downlinks < 1:
            out.append(Violation("ports", f"{t.role}: needs at least one switch and one downlink"))
    return out


def check_shape(d: Design) -> list[Violation]:
    """The tiers and link classes are an instance of the design's wiring kind."""
    return [Violation("wiring", e) for e in d.wiring.shape_errors(d)]


def check_wiring_kind(d: Design, kind: str) -> list[Violation]:
    """The design's wiring is of the kind its family wires (a family's first structural check).

    Without it a design could name one family and carry another's wiring (a rail_only design
    wired rail_optimized), and every figure its wiring owns would be the other family's.
    """
    if d.wiring.kind == kind:
        return []
    return [
        Violation(
            "wiring",
            f"wiring.kind: {d.wiring.kind!r}, but the {d.family} family is wired {kind!r} "
            "(family and wiring must agree)",
        )
    ]
