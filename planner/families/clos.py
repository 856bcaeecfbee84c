"""The folded Clos family: one to several tiers of packet switches, leaf first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    import polars as pl

    from models import clos_sizing as cs
    from planner.deadline import Deadline
    from planner.design import Design, TierDesign
    from planner.families.base import DemandOf, PerTier, Sized
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric
    from planner.validation import Violation

#: The family's name in instances and designs.
CLOS = "clos"


@dataclass(frozen=True)
class Clos:
    """Folded Clos: every tier is packet switches; no post-solve step and no extra table."""

    name: str = CLOS

    def shapes(
        self,
        catalog: Catalog,
        options: tuple[cs.SwitchOption, ...],
        tier_options: list[int],
        pinned_tiers: int | None,
    ) -> list[tuple[int, PerTier]]:
        """One structure per allowed tier count, every tier with the same options."""
        return [(t, (options,) * t) for t in tier_options]

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        """None: the structures are solved through ``shapes`` and the Clos model."""
        return []

    def label(self, planes: int, tiers: int) -> str:
        """``2 planes x 3 tiers``."""
        p = f"{planes} plane{'s' if planes > 1 else ''}"
        return f"{p} x {tiers} tier{'s' if tiers > 1 else ''}"

    def roles(self, tiers: int) -> tuple[str, ...]:
        """Leaf, spine, core: ``planner.design.ROLES``."""
        from planner.design import ROLES

        return ROLES[tiers]

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

    def after_solve(
        self, design: Design, inst: Instance, deadline: Deadline, demand_of: DemandOf
    ) -> Design:
        """The design as solved."""
        return design

    def search_tables(self, design: Design, deadline: Deadline) -> dict[str, pl.DataFrame | None]:
        """None."""
        return {}

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """None."""
        return {}

    def throughput_scale(self, design: Design, inst: Instance, demand_of: DemandOf) -> float | None:
        """Not predicted."""
        return None

    def build_fabric(self, design: Design) -> Fabric:
        """The tiered up-down graph (``planner.sim.fabric.clos_fabric``)."""
        from planner.sim.fabric import clos_fabric

        return clos_fabric(design)

    def check_structure(self, design: Design) -> list[Violation]:
        """Up-down wiring of packet switches only, and no OCS circuits."""
        from planner.validation import UP_DOWN_STRUCTURE, Violation, check_wiring_kind
        from planner.wiring import UP_DOWN

        wrong_kind = check_wiring_kind(design, UP_DOWN)
        if wrong_kind:
            return wrong_kind
        if any(t.ocs for t in design.tiers) or design.circuits:
            return [Violation("wiring", "a clos design has no OCS tier and no circuits")]
        return [v for check in UP_DOWN_STRUCTURE for v in check(design)]

    def check_design(self, design: Design) -> list[Violation]:
        """Ratios, paths and failure tolerance (the tiered checks)."""
        from planner.validation import UP_DOWN_DESIGN

        return [v for check in UP_DOWN_DESIGN for v in check(design)]
