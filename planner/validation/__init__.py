"""An independent validator: recompute a design's ports, wiring, ratios, paths and totals.

It reads the Design alone (and, when given, the catalog to check the unit figures) and shares no
code with the sizing model or with the Design's own table methods, so a bug in either shows up
here as a violation. ``plan`` results, the ``validate`` CLI command and every solve test run it.

Its parts: ``core`` (a violation, tolerances, ports and shape), ``modules`` (the module at every
link end), ``tiered`` (the up-down wiring's checks, which the tiered families run), ``media``,
``totals`` (totals and BOM recomputed) and ``catalog`` (unit figures against the catalog). A
family's own checks live in its package and are handed in with the family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.validation.catalog import check_catalog
from planner.validation.core import (
    PROPAGATION_NS_PER_M,
    TOTAL_ATOL,
    TOTAL_RTOL,
    Violation,
    check_ports,
    check_shape,
    check_wiring_kind,
)
from planner.validation.media import check_media, check_ports_fit, check_protocol
from planner.validation.modules import check_line_sides, check_modules
from planner.validation.tiered import (
    UP_DOWN_DESIGN,
    UP_DOWN_STRUCTURE,
    check_failure_tolerance,
    check_oversubscription,
    check_paths,
    check_spread,
    check_wiring,
)
from planner.validation.totals import (
    check_bill_of_materials,
    check_totals,
    recompute_module_counts,
    recompute_modules,
    recompute_totals,
)

if TYPE_CHECKING:
    from planner.design import Design
    from planner.family_roles import Checks
    from planner.schema.catalog import Catalog

__all__ = [
    "CHECKS",
    "PROPAGATION_NS_PER_M",
    "TOTAL_ATOL",
    "TOTAL_RTOL",
    "UP_DOWN_DESIGN",
    "UP_DOWN_STRUCTURE",
    "Violation",
    "check_bill_of_materials",
    "check_catalog",
    "check_failure_tolerance",
    "check_line_sides",
    "check_media",
    "check_modules",
    "check_oversubscription",
    "check_paths",
    "check_ports",
    "check_ports_fit",
    "check_protocol",
    "check_shape",
    "check_spread",
    "check_totals",
    "check_wiring",
    "check_wiring_kind",
    "recompute_module_counts",
    "recompute_modules",
    "recompute_totals",
    "structure_violations",
    "validate_design",
]

#: Judgements of a buildable design every family shares, after the family's own.
CHECKS = (
    check_media,
    check_line_sides,
    check_ports_fit,
    check_protocol,
    check_totals,
    check_bill_of_materials,
)


def structure_violations(d: Design, family: Checks) -> list[Violation]:
    """The structural checks: a design failing them describes no fabric (design.json refuses it).

    Ports and the wiring's shape, then the family's own (``Family.check_structure``: tiered
    families run ``UP_DOWN_STRUCTURE`` and their circuit checks), then the modules at every end.
    ``family`` is the design's, handed in by the caller.
    """
    return [
        *check_ports(d),
        *check_shape(d),
        *family.check_structure(d),
        *check_modules(d),
    ]


def validate_design(d: Design, family: Checks, catalog: Catalog | None = None) -> list[Violation]:
    """All violations of a design (empty when it is sound); ``family`` is the design's."""
    out = structure_violations(d, family)
    out.extend(family.check_design(d))
    for check in CHECKS:
        out.extend(check(d))
    if catalog is not None:
        out.extend(check_catalog(d, catalog))
    return out
