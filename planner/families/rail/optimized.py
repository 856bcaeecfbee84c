"""The rail-optimized family (NVIDIA SuperPOD style): rail leaves per scalable unit, a Clos above.

A node has n GPUs, each with its own NIC; the rail of GPU g is g mod n. A scalable unit (SU) is
U consecutive nodes with n rail leaves: leaf (su, r) takes NIC r of each of the SU's U nodes, so
same-rail traffic inside an SU turns at one switch. Spines (and cores) above are wired as in the
folded Clos. The family sizes through ``Family.size`` with ``models.rail_sizing`` (the Clos model
plus the rail rules; the SU size U is the model's decision) and records U and n in its wiring
(``RailOptimizedWiring``), which design.json round-trips.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.families.base import up_down_design
from planner.families.rail.wiring import RAIL_OPTIMIZED, RailOptimizedWiring, parse_rail_params

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import polars as pl

    from models import clos_sizing as cs
    from planner.deadline import Deadline
    from planner.design import Design, TierDesign
    from planner.family_roles import Sized
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric
    from planner.validation import Violation

#: Name of the extra table that says how the rails are wired.
RAILS_TABLE = "rails"


def rail_sentence(d: Design) -> str:
    """What a person checks against a reference architecture, in one sentence."""
    w = d.wiring
    u, n = getattr(w, "su_nodes", 0), getattr(w, "rails", 1)
    leaf = d.tiers[0]
    units = leaf.switches // max(n, 1)
    nodes = d.gpus // max(n, 1)
    what = "rail-only" if d.family != RAIL_OPTIMIZED else "rail-optimized"
    head = (
        f"{what}: {units} scalable unit{'s' if units != 1 else ''} of {u} node"
        f"{'s' if u != 1 else ''} ({nodes} nodes); NIC r of every node in a unit goes to rail "
        f"leaf r of that unit"
    )
    if d.num_tiers == 1:
        return head + "; the rail leaves are joined only through the scale-up domain"
    above = (
        f"every leaf reaches every spine over {leaf.parallel_links} link"
        f"{'s' if leaf.parallel_links != 1 else ''} each"
        if d.num_tiers == 2
        else f"every leaf reaches the {leaf.fanout} spines of its pod over "
        f"{leaf.parallel_links} link{'s' if leaf.parallel_links != 1 else ''} each"
    )
    if d.family != RAIL_OPTIMIZED:
        above = above.replace("every spine", "every spine of its rail")
        above = above.replace("of its pod", "of its rail's pod")
        return f"{head}; {above}; no switch joins two rails (cross-rail traffic crosses NVLink)"
    return f"{head}; {above}"


def rail_table(d: Design) -> pl.DataFrame:
    """One row: SU size, rails, SUs, and the sentence a person checks."""
    import polars as pl

    w = d.wiring
    u, n = getattr(w, "su_nodes", 0), getattr(w, "rails", 1)
    return pl.DataFrame(
        {
            "su_nodes": [u],
            "rails": [n],
            "scalable_units": [d.tiers[0].switches // max(n, 1)],
            "rail_leaves": [d.tiers[0].switches],
            "wiring": [rail_sentence(d)],
        }
    )


@dataclass(frozen=True)
class RailOptimized:
    """Rail-optimized: rail leaves of scalable units under a folded Clos of spines (and cores)."""

    name: str = RAIL_OPTIMIZED
    wiring_kind: str = RAIL_OPTIMIZED

    def read_wiring(self, params: dict[str, Any]) -> RailOptimizedWiring:
        """SU size and rails (``parse_rail_params``)."""
        u, n = parse_rail_params(RAIL_OPTIMIZED, params)
        return RailOptimizedWiring(su_nodes=u, rails=n)

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        """The rail model (``planner.families.rail.sizing``): the Clos model plus the rail rules."""
        from planner.families.rail.sizing import size_rails

        return size_rails(inst, catalog, self, switch_models, deadline, rail_only=False)

    def label(self, planes: int, tiers: int) -> str:
        """``1 plane x 2 tiers, rail-optimized``."""
        p = f"{planes} plane{'s' if planes > 1 else ''}"
        return f"{p} x {tiers} tier{'s' if tiers > 1 else ''}, rail-optimized"

    def roles(self, tiers: int) -> tuple[str, ...]:
        """Rail leaf, spine, core: the BOM and the links tables name the rail leaves."""
        return ("rail_leaf", "spine", "core")[:tiers]

    def circuit_level(self, tiers: int) -> int | None:
        """None: every tier is packet switches (the Clos model sizes its rails)."""
        return None

    def missing_tier_reason(self, index: int, speed_gbps: int) -> str:
        """No switch at the plane's port speed."""
        return f"allowed switch runs {speed_gbps}G ports"

    def tier_design(
        self, catalog: Catalog, ts: cs.TierSolution, speed_gbps: int
    ) -> TierDesign | None:
        """None: no special tier."""
        return None

    def class_note(self, link_class: int, tiers: int) -> str:
        """The GPU links go to the rail leaves of the node's scalable unit."""
        return " (NIC r of each node to rail leaf r of its unit)" if link_class == 0 else ""

    def table_titles(self) -> dict[str, str]:
        """``rails``."""
        return {RAILS_TABLE: "Rails"}

    def design_tables(self) -> tuple[str, ...]:
        """``rails``, beside the links it explains."""
        return (RAILS_TABLE,)

    def picture_notes(self, tables: Mapping[str, pl.DataFrame]) -> list[str]:
        """Rails and scalable units (and their nodes), from ``rails``."""
        rails = tables.get(RAILS_TABLE)
        if rails is None or not len(rails) or not {"rails", "scalable_units"} <= set(rails.columns):
            return []
        r = rails.row(0, named=True)
        nodes = f" of {r['su_nodes']:,} nodes" if "su_nodes" in rails.columns else ""
        return [f"{r['rails']:,} rails × {r['scalable_units']:,} scalable units{nodes}"]

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """``rails``: SU size, rails, and the sentence to check against a reference design."""
        return {RAILS_TABLE: rail_table(design)}

    def build_fabric(self, design: Design) -> Fabric:
        """The rail wiring under the Clos tiers (``planner.families.rail.fabric.rail_optimized_fabric``)."""
        from planner.families.rail.fabric import rail_optimized_fabric

        return rail_optimized_fabric(design)

    def check_design(self, design: Design) -> list[Violation]:
        """Ratios, paths and failure tolerance of its tiers (``up_down_design``)."""
        return up_down_design(design)

    def check_structure(self, design: Design) -> list[Violation]:
        """Packet tiers only, even spread, whole SUs, and every NIC on the leaf of its rail.

        The wiring is the family's own (its kind is the family's name: a rail_only design
        wired rail_optimized is no design of either).
        """
        from planner.families.rail.checks import RAIL_STRUCTURE
        from planner.validation import Violation, check_wiring_kind

        wrong_kind = check_wiring_kind(design, self.wiring_kind)
        if wrong_kind:
            return wrong_kind
        if any(t.ocs for t in design.tiers) or design.circuits:
            return [Violation("wiring", "a rail design has no OCS tier and no circuits")]
        return [v for check in RAIL_STRUCTURE for v in check(design)]
