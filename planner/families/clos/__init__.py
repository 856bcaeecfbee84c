"""The folded Clos family: one to several tiers of packet switches, leaf first.

Its model is ``models.clos_sizing`` (the search loop solves its structures); its plane for the
simulator is ``fabric`` and the bound it proves for that plane ``bound``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.families.base import clos_shapes, tiers_label, up_down_design
from planner.wiring import UP_DOWN, parse_up_down

if TYPE_CHECKING:
    from models import clos_sizing as cs
    from planner.design import Design, TierDesign
    from planner.family_roles import PerTier
    from planner.schema.catalog import Catalog
    from planner.sim.fabric import Fabric
    from planner.validation import Violation
    from planner.wiring import Wiring

#: The family's name in instances and designs.
CLOS = "clos"


@dataclass(frozen=True)
class Clos:
    """Folded Clos: every tier is packet switches, solved by the Clos model (``ClosStructures``)."""

    name: str = CLOS
    wiring_kind: str = UP_DOWN

    def read_wiring(self, params: dict[str, Any]) -> Wiring:
        """The up-down wiring (no parameters)."""
        return parse_up_down(params)

    def shapes(
        self,
        catalog: Catalog,
        options: tuple[cs.SwitchOption, ...],
        tier_options: list[int],
        pinned_tiers: int | None,
    ) -> list[tuple[int, PerTier]]:
        """One structure per allowed tier count for the Clos model (``clos_shapes``)."""
        return clos_shapes(options, tier_options)

    def roles(self, tiers: int) -> tuple[str, ...]:
        """Leaf, spine, core: ``planner.design.ROLES``."""
        from planner.design import ROLES

        return ROLES[tiers]

    def label(self, planes: int, tiers: int) -> str:
        """``2 planes x 3 tiers``."""
        return tiers_label(planes, tiers)

    def circuit_level(self, tiers: int) -> int | None:
        """None: every tier is packet switches."""
        return None

    def missing_tier_reason(self, index: int, speed_gbps: int) -> str:
        """No switch at the plane's port speed."""
        return f"allowed switch runs {speed_gbps}G ports"

    def class_note(self, link_class: int, tiers: int) -> str:
        """Nothing to add: every class is switch to switch."""
        return ""

    def tier_design(
        self, catalog: Catalog, ts: cs.TierSolution, speed_gbps: int
    ) -> TierDesign | None:
        """None: no special tier."""
        return None

    def check_design(self, design: Design) -> list[Violation]:
        """Ratios, paths and failure tolerance (``up_down_design``)."""
        return up_down_design(design)

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
