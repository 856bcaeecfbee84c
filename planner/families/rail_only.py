"""The rail-only family (Wang et al., 2023): one Clos per rail, no tier joining the rails.

Each rail is a Clos over the gpus / n GPUs of that rail, its leaves rail leaves (leaf (su, r)
takes NIC r of each of the SU's U nodes). The n rails are identical, so one rail is sized with
``models.rail_sizing`` (E = gpus / n endpoints, one rail leaf per SU) and its counts, cost and
power multiplied by n, like planes. A design's tiers hold the totals over the rails.

Cross-rail traffic cannot use the scale-out fabric: it crosses the scale-up domain to the GPU on
the destination's rail first (NCCL PXN). The family may be chosen only when the scale-up domain
can carry that (``planner.sizing.rail.rail_only_refusal``): every node's GPUs are in one scale-up
domain (``scale_up.gpus >= gpus_per_node``, so every domain holds every rail) and a GPU's
scale-up link feeds its NIC at line rate with traffic forwarded from the other rails
(``scale_up.gbps_per_gpu >= nic_gbps``). Otherwise ``size`` returns an infeasible ``Sized`` with
that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from planner.families.rail_optimized import RAILS_TABLE, parse_rail_params, rail_table
from planner.wiring import UpDown, register_wiring

if TYPE_CHECKING:
    import polars as pl

    from models import clos_sizing as cs
    from planner.design import Design, TierDesign
    from planner.families.base import DemandOf, PerTier, Sized
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric
    from planner.validation import Violation

#: The family's name in instances and designs.
RAIL_ONLY = "rail_only"


@dataclass(frozen=True)
class RailOnlyWiring(UpDown):
    """n disjoint rail Clos fabrics; SUs of ``su_nodes`` nodes with one rail leaf per rail each.

    Figures: hops and latency are one rail Clos's (the tiered formulas); the bisection is the sum
    over the rails (the tiered formula on the design's totals, every rail alike); one switch
    takes out at most the GPUs of one leaf.
    """

    kind: ClassVar[str] = RAIL_ONLY
    su_nodes: int = 1
    """U: nodes per scalable unit (a rail leaf's GPU-facing ports)."""
    rails: int = 1
    """n: rails, i.e. GPUs (NICs) per node and identical rail fabrics."""

    def params(self) -> dict[str, Any]:
        """The SU size and the rails."""
        return {"su_nodes": self.su_nodes, "rails": self.rails}

    def shape_errors(self, d: Design) -> list[str]:
        """The tiered shape, every tier a whole number of identical rails, U GPU ports a leaf."""
        out = super().shape_errors(d)
        if d.gpus % self.rails:
            out.append(f"{d.gpus} GPUs are not whole nodes of {self.rails} rails")
        for t in d.tiers:
            if t.switches % self.rails:
                out.append(f"{t.switches} {t.role} switches do not split into {self.rails} rails")
        if d.tiers and d.tiers[0].downlinks != self.su_nodes:
            out.append(
                f"a rail leaf has {d.tiers[0].downlinks} GPU ports, the SU {self.su_nodes} nodes"
            )
        return out


def _parse(params: dict[str, Any]) -> RailOnlyWiring:
    u, n = parse_rail_params(RAIL_ONLY, params)
    return RailOnlyWiring(su_nodes=u, rails=n)


register_wiring(RAIL_ONLY, _parse)


@dataclass(frozen=True)
class RailOnly:
    """Rail-only: n identical rail Clos fabrics, cross-rail traffic over the scale-up domain."""

    name: str = RAIL_ONLY

    def shapes(
        self,
        catalog: Catalog,
        options: tuple[cs.SwitchOption, ...],
        tier_options: list[int],
        pinned_tiers: int | None,
    ) -> list[tuple[int, PerTier]]:
        """None: the structures are sized by ``size`` (the rail model), not the Clos model."""
        return []

    def size(
        self, inst: Instance, catalog: Catalog, switch_model: str | None, time_limit_s: float
    ) -> list[Sized]:
        """One rail sized by the rail model and multiplied by n; refused when PXN cannot work."""
        from planner.sizing.rail import size_rail

        return size_rail(inst, catalog, self.name, switch_model, time_limit_s, rail_only=True)

    def label(self, planes: int, tiers: int) -> str:
        """``1 plane x 2 tiers, rail-only``."""
        p = f"{planes} plane{'s' if planes > 1 else ''}"
        return f"{p} x {tiers} tier{'s' if tiers > 1 else ''}, rail-only"

    def roles(self, tiers: int) -> tuple[str, ...]:
        """Rail leaf, rail spine, rail core: every switch belongs to one rail."""
        return ("rail_leaf", "rail_spine", "rail_core")[:tiers]

    def circuit_level(self, tiers: int) -> int | None:
        """None: every tier is packet switches."""
        return None

    def missing_tier_reason(self, index: int, speed_gbps: int) -> str:
        """No switch at the plane's port speed."""
        return f"allowed switch runs {speed_gbps}G ports"

    def class_note(self, link_class: int, tiers: int) -> str:
        """The GPU links go to the rail leaves of the node's scalable unit."""
        return " (NIC r of each node to rail leaf r of its unit)" if link_class == 0 else ""

    def tier_design(
        self, catalog: Catalog, ts: cs.TierSolution, speed_gbps: int
    ) -> TierDesign | None:
        """None: no special tier."""
        return None

    def after_solve(
        self, design: Design, inst: Instance, time_limit_s: float, demand_of: DemandOf
    ) -> Design:
        """The design as solved."""
        return design

    def search_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """None."""
        return {}

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """``rails``: SU size, rails, and the sentence to check against a reference design."""
        return {RAILS_TABLE: rail_table(design)}

    def throughput_scale(self, design: Design, inst: Instance, demand_of: DemandOf) -> float | None:
        """Not predicted."""
        return None

    def build_fabric(self, design: Design) -> Fabric:
        """N disjoint rail Clos fabrics (``planner.sim.fabric.rail_only_fabric``)."""
        from planner.sim.fabric import rail_only_fabric

        return rail_only_fabric(design)

    def check_structure(self, design: Design) -> list[Violation]:
        """Packet tiers only, even spread, whole rails and SUs, NICs on their rail, rails apart."""
        from planner.validation import RAIL_STRUCTURE, Violation

        if any(t.ocs for t in design.tiers) or design.circuits:
            return [Violation("wiring", "a rail design has no OCS tier and no circuits")]
        return [v for check in RAIL_STRUCTURE for v in check(design)]

    def check_design(self, design: Design) -> list[Violation]:
        """Ratios, paths and failure tolerance (the tiered checks on one rail)."""
        from planner.validation import UP_DOWN_DESIGN

        return [v for check in UP_DOWN_DESIGN for v in check(design)]
