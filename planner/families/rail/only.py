"""The rail-only family (Wang et al., 2023): one Clos per rail, no tier joining the rails.

The rail of GPU g is g mod R: its rank in a *rail group* of R consecutive GPUs (R / n nodes of
n GPUs), as Wang et al. define a rail by a GPU's rank in its scale-up domain. The rail count R is
a decision: a multiple of n that divides the scale-up domain's D GPUs and the G GPUs
(``planner.families.rail.sizing.rail_counts``), so every domain holds whole rail groups, i.e. every rail,
and every rail has G / R GPUs. R = n (a node's NIC index) is always a candidate; with an NVL72
domain (D = 72, n = 4) R may be up to 72, each rail tiny.

Each rail is a Clos over its G / R GPUs, its leaves rail leaves (leaf (su, r) takes rank r of
each of the SU's rail groups). The R rails are identical, so one rail is sized with
``models.rail_sizing`` (E = G / R endpoints, one rail leaf per SU) and its counts, cost and power
multiplied by R, like planes; every candidate R is sized and the cheapest kept. A design's tiers
hold the totals over the rails.

Cross-rail traffic cannot use the scale-out fabric: it crosses the scale-up domain to the GPU on
the destination's rail first (NCCL PXN). The family may be chosen only when the scale-up domain
can carry that (``planner.families.rail.sizing.rail_only_refusal``): every node's GPUs are in one scale-up
domain (``scale_up.gpus >= gpus_per_node``, so with R = n every domain holds every rail) and a GPU's
scale-up link feeds its NIC at line rate with traffic forwarded from the other rails
(``scale_up.gbps_per_gpu >= nic_gbps``). Otherwise ``size`` returns an infeasible ``Sized`` with
that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.families.rail.optimized import (
    RAILS_TABLE,
    RailOptimized,
    rail_sentence,
    rail_table,
)
from planner.families.rail.wiring import RAIL_ONLY, RailOnlyWiring, parse_rail_params

if TYPE_CHECKING:
    from collections.abc import Sequence

    import polars as pl

    from planner.deadline import Deadline
    from planner.design import Design
    from planner.family_roles import Sized
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric


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
    wiring_kind: str = RAIL_ONLY

    def job_domain_gpus(self, design: Design) -> tuple[str, int, bool]:
        """A job spanning scale-up domains takes them whole (its cross-rail traffic crosses them)."""
        return ("scale-up domain", design.scale_up.gpus, False)

    def read_wiring(self, params: dict[str, Any]) -> RailOnlyWiring:  # type: ignore[override]
        """SU size and rail count (``parse_rail_params``)."""
        u, n = parse_rail_params(RAIL_ONLY, params)
        return RailOnlyWiring(su_nodes=u, rails=n)

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
        from planner.families.rail.sizing import size_rails

        return size_rails(inst, catalog, self, switch_models, deadline, rail_only=True)

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
        """R disjoint rail Clos fabrics (``planner.families.rail.fabric.rail_only_fabric``)."""
        from planner.families.rail.fabric import rail_only_fabric

        return rail_only_fabric(design)
