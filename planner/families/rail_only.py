"""The rail-only family (Wang et al., 2023): one Clos per rail, no tier joining the rails.

The rail of GPU g is g mod R: its rank in a *rail group* of R consecutive GPUs (R / n nodes of
n GPUs), as Wang et al. define a rail by a GPU's rank in its scale-up domain. The rail count R is
a decision: a multiple of n that divides the scale-up domain's D GPUs and the G GPUs
(``planner.sizing.rail.rail_counts``), so every domain holds whole rail groups, i.e. every rail,
and every rail has G / R GPUs. R = n (a node's NIC index) is always a candidate; with an NVL72
domain (D = 72, n = 4) R may be up to 72, each rail tiny.

Each rail is a Clos over its G / R GPUs, its leaves rail leaves (leaf (su, r) takes rank r of
each of the SU's rail groups). The R rails are identical, so one rail is sized with
``models.rail_sizing`` (E = G / R endpoints, one rail leaf per SU) and its counts, cost and power
multiplied by R, like planes; every candidate R is sized and the cheapest kept. A design's tiers
hold the totals over the rails.

Cross-rail traffic cannot use the scale-out fabric: it crosses the scale-up domain to the GPU on
the destination's rail first (NCCL PXN). The family may be chosen only when the scale-up domain
can carry that (``planner.sizing.rail.rail_only_refusal``): every node's GPUs are in one scale-up
domain (``scale_up.gpus >= gpus_per_node``, so with R = n every domain holds every rail) and a GPU's
scale-up link feeds its NIC at line rate with traffic forwarded from the other rails
(``scale_up.gbps_per_gpu >= nic_gbps``). Otherwise ``size`` returns an infeasible ``Sized`` with
that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from planner.families.rail_optimized import (
    RAILS_TABLE,
    RailOptimized,
    parse_rail_params,
    rail_sentence,
    rail_table,
)
from planner.wiring import UpDown, register_wiring

if TYPE_CHECKING:
    from collections.abc import Sequence

    import polars as pl

    from planner.deadline import Deadline
    from planner.design import Design
    from planner.families.base import Sized
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric

#: The family's name in instances and designs.
RAIL_ONLY = "rail_only"


@dataclass(frozen=True)
class RailOnlyWiring(UpDown):
    """R disjoint rail Clos fabrics; SUs of ``su_nodes`` nodes with one rail leaf per rail each.

    GPU g is on rail g mod R and on rail leaf (g // R // U_g) R + g mod R, where U_g =
    ``su_nodes`` n / R is the SU's rail groups (a rail leaf's GPU-facing ports). A design.json
    from before the rail count was a decision has R = n (``rails`` = GPUs per node), where a
    rail group is a node and U_g = ``su_nodes``: it reads as it always did.

    Figures: hops and latency are one rail Clos's (the tiered formulas); the bisection is the sum
    over the rails (the tiered formula on the design's totals, every rail alike); one switch
    takes out at most the GPUs of one leaf.
    """

    kind: ClassVar[str] = RAIL_ONLY
    su_nodes: int = 1
    """Nodes per scalable unit: U_g rail groups of R / n nodes each (U_g = su_nodes n / R)."""
    rails: int = 1
    """R: rails (identical rail fabrics), the period of the rail assignment g mod R; a multiple
    of the node's GPUs that divides the scale-up domain and the GPU count."""

    def params(self) -> dict[str, Any]:
        """The SU size (nodes) and the rails."""
        return {"su_nodes": self.su_nodes, "rails": self.rails}

    def su_groups(self, gpus_per_node: int) -> int:
        """U_g: rail groups per SU, a rail leaf's GPU ports (0 if the SU is not whole groups)."""
        group_nodes = self.rails // gpus_per_node if self.rails % gpus_per_node == 0 else 0
        if group_nodes == 0 or self.su_nodes % group_nodes:
            return 0
        return self.su_nodes // group_nodes

    def shape_errors(self, d: Design) -> list[str]:
        """The tiered shape, every tier a whole number of identical rails, U_g GPU ports a leaf."""
        out = super().shape_errors(d)
        n = d.gpus_per_node
        if self.rails % n:
            out.append(f"{self.rails} rails are not whole nodes of {n} GPUs")
        if d.gpus % self.rails:
            out.append(f"{d.gpus} GPUs do not split into {self.rails} rails")
        for t in d.tiers:
            if t.switches % self.rails:
                out.append(f"{t.switches} {t.role} switches do not split into {self.rails} rails")
        groups = self.su_groups(n)
        if not groups and self.rails % n == 0:
            out.append(
                f"an SU of {self.su_nodes} nodes is not whole rail groups of {self.rails // n} "
                f"nodes"
            )
        if groups and d.tiers and d.tiers[0].downlinks != groups:
            out.append(
                f"a rail leaf has {d.tiers[0].downlinks} GPU ports, the SU {groups} rail groups "
                f"({self.su_nodes} nodes)"
            )
        return out


def _parse(params: dict[str, Any]) -> RailOnlyWiring:
    u, n = parse_rail_params(RAIL_ONLY, params)
    return RailOnlyWiring(su_nodes=u, rails=n)


register_wiring(RAIL_ONLY, _parse)


def rail_only_sentence(d: Design) -> str:
    """The rail-only wiring in one sentence; with R = n the rail-optimized module's words."""
    w = d.wiring
    n = d.gpus_per_node
    rails = getattr(w, "rails", n)
    if rails == n or not isinstance(w, RailOnlyWiring):
        return rail_sentence(d)
    leaf = d.tiers[0]
    units = leaf.switches // rails
    group_nodes = rails // n
    head = (
        f"rail-only: {rails} rails of {d.gpus // rails} GPUs; GPU g is on rail g mod {rails}, "
        f"its rank in a group of {rails} GPUs ({group_nodes} node{'s' if group_nodes != 1 else ''}"
        f" inside one scale-up domain of {d.scale_up.gpus}); {units} scalable "
        f"unit{'s' if units != 1 else ''} of {w.su_nodes} nodes ({d.gpus // n} nodes), rank r "
        f"of every group in a unit goes to rail leaf r of that unit"
    )
    if d.num_tiers == 1:
        return head + "; the rails are joined only through the scale-up domain"
    return f"{head}; no switch joins two rails (cross-rail traffic crosses NVLink)"


def rail_only_table(d: Design) -> pl.DataFrame:
    """``rail_table``'s row with the rail-only sentence (rails = R, SUs = rail leaves / R)."""
    import polars as pl

    table = rail_table(d)
    return table.with_columns(pl.lit(rail_only_sentence(d)).alias("wiring"))


@dataclass(frozen=True)
class RailOnly(RailOptimized):
    """Rail-only: R identical rail Clos fabrics, cross-rail traffic over the scale-up domain.

    The rail-optimized family's hooks, but for its sizing (one rail per rail count, times R),
    its names and sentence, and its fabric (R disjoint rails).
    """

    name: str = RAIL_ONLY

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        """Each rail count R: one rail sized by the rail model, times R; the cheapest R kept.

        Refused when PXN cannot work (``rail_only_refusal``).
        """
        from planner.sizing.rail import size_rails

        return size_rails(inst, catalog, self.name, switch_models, deadline, rail_only=True)

    def label(self, planes: int, tiers: int) -> str:
        """``1 plane x 2 tiers, rail-only``."""
        p = f"{planes} plane{'s' if planes > 1 else ''}"
        return f"{p} x {tiers} tier{'s' if tiers > 1 else ''}, rail-only"

    def roles(self, tiers: int) -> tuple[str, ...]:
        """Rail leaf, rail spine, rail core: every switch belongs to one rail."""
        return ("rail_leaf", "rail_spine", "rail_core")[:tiers]

    def class_note(self, link_class: int, tiers: int) -> str:
        """The GPU links go to the rail leaves of the node's scalable unit."""
        return " (rank r of each rail group to rail leaf r of its unit)" if link_class == 0 else ""

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """``rails``: SU size, rails, and the sentence to check against a reference design."""
        return {RAILS_TABLE: rail_only_table(design)}

    def build_fabric(self, design: Design) -> Fabric:
        """R disjoint rail Clos fabrics (``planner.sim.fabric.rail_only_fabric``)."""
        from planner.sim.fabric import rail_only_fabric

        return rail_only_fabric(design)
