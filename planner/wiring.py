"""How a design's switches are wired, as far as its paths go: the part of a Design a family owns.

A ``Design`` is topology-neutral: switch groups (``tiers``) and link classes named by the roles at
their two ends, the BOM and the totals. What depends on how those switches are joined (the
longest path in switches, its one-way latency, the bisection and what one switch failure takes
out) lives in the design's ``wiring``, a small frozen value tagged by ``kind``. Each kind has one
formula for each figure; the report, the tables and the alternatives read them from there, and the
validator keeps its own, independent recomputation.

``up_down`` is the tiered wiring of a folded Clos (and of the packet tiers under an OCS layer).
A family with another wiring defines its kind in its own package and reads it back from a
design.json (``Family.wiring_kind``, ``Family.read_wiring``); the reader of design.json is handed
the readers of every family (``planner.families.design_reading``), so nothing here knows which
kinds exist. The rail families define ``rail_optimized`` and ``rail_only``: the up-down figures
with two parameters, the SU size ``su_nodes`` and the ``rails`` (the node's GPUs
for rail-optimized; for rail-only a multiple of them that divides the scale-up domain), which
say which rail leaf every GPU's NIC is on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from models.hops import class_crossings, hops, tier_crossings

if TYPE_CHECKING:
    from planner.design import Design

#: The kind of the tiered (folded Clos) wiring.
UP_DOWN = "up_down"


class Wiring(Protocol):
    """One wiring kind: its parameters, and one formula for each path figure of a design."""

    kind: ClassVar[str]

    def params(self) -> dict[str, Any]:
        """The parameters, JSON-ready (without ``kind``); the kind's parser reads them back."""
        ...

    def max_switch_hops(self, d: Design) -> int:
        """Switches on the longest GPU-to-GPU path (an OCS mirror is not a hop)."""
        ...

    def max_latency_ns(self, d: Design) -> float:
        """One-way latency of the longest path: switches, media electronics and propagation."""
        ...

    def propagation_ns(self, d: Design) -> float:
        """The propagation part of ``max_latency_ns``."""
        ...

    def bisection_gbps(self, d: Design) -> float:
        """Bandwidth, one way, across the narrowest cut that halves the GPUs, over all planes."""
        ...

    def blast_radius_gpus(self, d: Design) -> int:
        """GPUs that lose one plane (or their place in the fabric) when one switch fails."""
        ...

    def oversubscription(self, d: Design) -> float:
        """The fabric's worst ratio of offered load to capacity at line rate (1.0: non-blocking)."""
        ...

    def shape_errors(self, d: Design) -> list[str]:
        """What makes the design's tiers and link classes no instance of this wiring ([] if none)."""
        ...


#: Reader of a wiring kind's parameters: raises ValueError naming what is wrong.
WiringParser = Callable[[dict[str, Any]], Wiring]


def wiring_to_dict(w: Wiring) -> dict[str, Any]:
    """A wiring as design.json holds it: its kind and its parameters."""
    return {"kind": w.kind, **w.params()}


def wiring_from_dict(data: Any, parsers: Mapping[str, WiringParser]) -> Wiring:
    """Read a wiring written by ``wiring_to_dict`` with the parser of its kind.

    ``parsers`` maps every kind the caller knows to its reader; ValueError says what is wrong.
    """
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise ValueError("expected an object with a 'kind' naming the wiring")
    kind = data["kind"]
    parse = parsers.get(kind)
    if parse is None:
        raise ValueError(f"unknown wiring kind {kind!r}; known: {', '.join(sorted(parsers))}")
    return parse({k: v for k, v in data.items() if k != "kind"})


def no_params(kind: str, params: dict[str, Any]) -> None:
    """Refuse parameters for a wiring kind that takes none (ValueError)."""
    if params:
        raise ValueError(f"the {kind} wiring takes no parameters, got {', '.join(sorted(params))}")


# ---- the tiered wiring of a folded Clos ---------------------------------------------------------
@dataclass(frozen=True)
class UpDown:
    """Tiers wired up and down: every path climbs to the lowest common tier and comes back.

    Link class i joins tier i (the GPUs for i = 0) to tier i + 1; the longest path crosses every
    class twice and every tier twice, the top once. An OCS layer on top is mirrors: no hop and no
    switch latency of its own.
    """

    kind: ClassVar[str] = UP_DOWN

    def params(self) -> dict[str, Any]:
        """No parameters: the tiers say everything."""
        return {}

    def max_switch_hops(self, d: Design) -> int:
        """2T - 1 switches, less one per OCS layer, one more per transit block."""
        return hops(d.num_tiers, sum(1 for t in d.tiers if t.ocs), d.transit_blocks)

    def max_latency_ns(self, d: Design) -> float:
        """Up every tier and down again, each link class crossed twice on its worst link.

        A transit block's spine is crossed once more and its circuits twice (``models.hops``).
        """
        top, transit = d.num_tiers, d.transit_blocks
        switch_ns = sum(tier_crossings(top, t.level, transit) * t.latency_ns for t in d.tiers)
        media_ns = sum(
            class_crossings(top, c.index, transit) * c.latency_ns for c in d.link_classes
        )
        return float(switch_ns + media_ns)

    def propagation_ns(self, d: Design) -> float:
        """The longest link of each class, times its ns per metre, as often as the path crosses it."""
        top, transit = d.num_tiers, d.transit_blocks
        return sum(
            class_crossings(top, c.index, transit) * c.propagation_ns for c in d.link_classes
        )

    def bisection_gbps(self, d: Design) -> float:
        """The narrowest of the NIC links and the link classes above, halved, over all planes."""
        s = d.link_speed_gbps
        per_plane = [d.gpus * s] + [c.links * s for c in d.link_classes[1:]]
        return d.planes * min(per_plane) / 2

    def blast_radius_gpus(self, d: Design) -> int:
        """The GPUs of one leaf."""
        return d.tiers[0].downlinks

    def oversubscription(self, d: Design) -> float:
        """The largest down:up ratio of a tier; a single switch has no uplinks: ratio 1."""
        ratios = d.oversubscription()
        return max(ratios) if ratios else 1.0

    def shape_errors(self, d: Design) -> list[str]:
        """One link class per tier, class i up to tier i + 1, roles matching."""
        if len(d.link_classes) != len(d.tiers):
            return [
                f"link_classes: expected one per tier ({len(d.tiers)}), got {len(d.link_classes)}"
            ]
        below = ("gpu", *(t.role for t in d.tiers))
        return [
            f"link_classes.{i}: expected {below[i]} up to the {t.role} tier, got "
            f"{c.lower_role} up to {c.upper_role}"
            for i, (c, t) in enumerate(zip(d.link_classes, d.tiers, strict=True))
            if c.upper_role != t.role or c.lower_role != below[i]
        ]


#: The one up-down wiring (it has no parameters).
UP_DOWN_WIRING = UpDown()


def parse_up_down(params: dict[str, Any]) -> Wiring:
    """The up-down wiring, which takes no parameters."""
    no_params(UP_DOWN, params)
    return UP_DOWN_WIRING
