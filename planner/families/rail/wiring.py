"""The rail families' wiring kinds: which rail leaf every GPU's NIC is on.

Both are the up-down wiring (``planner.wiring.UpDown``) with two parameters, the SU size and the
rails; the kind's name is its family's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from planner.wiring import UpDown

if TYPE_CHECKING:
    from planner.design import Design

#: The rail-optimized family's name in instances and designs, and its wiring kind.
RAIL_OPTIMIZED = "rail_optimized"
#: The rail-only family's name in instances and designs, and its wiring kind.
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


@dataclass(frozen=True)
class RailOptimizedWiring(UpDown):
    """Up-down wiring whose leaves are rail leaves: SUs of ``su_nodes`` nodes, ``rails`` leaves each.

    The path figures are the tiered wiring's (a rail leaf is a leaf); the parameters say which
    GPU sits on which leaf: GPU g on leaf (g // rails // su_nodes) * rails + g % rails.
    """

    kind: ClassVar[str] = RAIL_OPTIMIZED
    su_nodes: int = 1
    """U: nodes per scalable unit (a rail leaf's GPU-facing ports)."""
    rails: int = 1
    """n: GPUs (NICs) per node, rail leaves per SU."""

    def params(self) -> dict[str, Any]:
        """The SU size and the rails."""
        return {"su_nodes": self.su_nodes, "rails": self.rails}

    def shape_errors(self, d: Design) -> list[str]:
        """The tiered shape, and whole SUs: a leaf per rail per SU, U GPU ports on each."""
        out = super().shape_errors(d)
        if not d.tiers:
            return out
        leaf = d.tiers[0]
        if d.gpus % self.rails:
            out.append(f"{d.gpus} GPUs are not whole nodes of {self.rails} rails")
        if leaf.switches % self.rails:
            out.append(f"{leaf.switches} leaves are not whole SUs of {self.rails} rail leaves")
        if leaf.downlinks != self.su_nodes:
            out.append(f"a rail leaf has {leaf.downlinks} GPU ports, the SU {self.su_nodes} nodes")
        return out


def parse_rail_params(kind: str, params: dict[str, Any]) -> tuple[int, int]:
    """(su_nodes, rails) of a rail wiring; ValueError names what is wrong."""
    if set(params) != {"su_nodes", "rails"}:
        raise ValueError(f"the {kind} wiring takes su_nodes and rails, got {sorted(params)}")
    values = (params["su_nodes"], params["rails"])
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
        raise ValueError(f"the {kind} wiring needs whole su_nodes and rails >= 1, got {values}")
    return values
