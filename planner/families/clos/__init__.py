"""The folded Clos family: one to several tiers of packet switches, leaf first.

Its model is ``models.clos_sizing`` (the search loop solves its structures); its plane for the
simulator is ``fabric`` and the bound it proves for that plane ``bound``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.families.base import FamilyBase

if TYPE_CHECKING:
    from planner.design import Design
    from planner.sim.fabric import Fabric
    from planner.validation import Violation

#: The family's name in instances and designs.
CLOS = "clos"


@dataclass(frozen=True)
class Clos(FamilyBase):
    """Folded Clos: every tier is packet switches; every role is the default one."""

    name: str = CLOS

    def build_fabric(self, design: Design) -> Fabric:
        """The tiered up-down graph (``planner.families.clos.fabric.clos_fabric``)."""
        from planner.families.clos.fabric import clos_fabric

        return clos_fabric(design)

    def check_structure(self, design: Design) -> list[Violation]:
        """Up-down wiring of packet switches only, and no OCS circuits."""
        from planner.validation import UP_DOWN_STRUCTURE, Violation, check_wiring_kind

        wrong_kind = check_wiring_kind(design, self.wiring_kind)
        if wrong_kind:
            return wrong_kind
        if any(t.ocs for t in design.tiers) or design.circuits:
            return [Violation("wiring", "a clos design has no OCS tier and no circuits")]
        return [v for check in UP_DOWN_STRUCTURE for v in check(design)]
