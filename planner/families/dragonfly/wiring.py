"""The ``dragonfly`` wiring kind: its parameters, one formula per path figure, its shape.

Read back by the family (``Dragonfly.read_wiring``). The five counts, the routing the design
was sized for and runs (``structure.ROUTINGS``) and the arrangement of its global links
(``structure.ARRANGEMENTS``); a design.json written before issue 33 names neither, and was
planned minimal and ``round_robin``. The formulas are ``structure``'s closed forms (Kim et
al., ISCA 2008): minimal routing (local, global, local) has at most 3 switch-to-switch links, 4
switches, Valiant at most 5 and 6 (UGAL's uncongested route is the minimal one); the bisection
is the cut between the first half of the groups and the rest; one switch failure takes its GPUs
off one plane.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from models.dragonfly import structure as st

if TYPE_CHECKING:
    from planner.design import Design

#: The wiring kind (design.json's ``wiring.kind``) and the family's name.
DRAGONFLY = "dragonfly"
#: Role of the one switch group; the link classes are gpu-switch, local and global switch-switch.
ROLE = "switch"
#: Link class indices.
GPU_CLASS, LOCAL_CLASS, GLOBAL_CLASS = 0, 1, 2
#: Largest counts design.json may name (hostile input stays finite).
MAX_COUNT = 100_000
MAX_PARALLEL = 1_000_000
MAX_SWITCHES = 10_000_000


#: The parameters a design.json may leave out, and what they were before they existed.
DEFAULTS: dict[str, str] = {"routing": st.MINIMAL, "arrangement": st.ROUND_ROBIN}


@dataclass(frozen=True)
class DragonflyWiring:
    """g groups of a switches, p GPUs each, q links per local pair, m per group pair."""

    kind: ClassVar[str] = DRAGONFLY
    gpus_per_switch: int
    switches_per_group: int
    groups: int
    global_links_per_pair: int
    local_links_per_pair: int
    routing: str = st.MINIMAL
    """How the fabric routes, and so what it was sized for (``structure.ROUTINGS``)."""
    arrangement: str = st.ROUND_ROBIN
    """Which switch holds each global end (``structure.ARRANGEMENTS``)."""

    @property
    def global_ports(self) -> int:
        """h: global ports per switch."""
        return st.global_ports(self.switches_per_group, self.groups, self.global_links_per_pair)

    def params(self) -> dict[str, Any]:
        """The five counts, the routing and the arrangement."""
        return {
            "gpus_per_switch": self.gpus_per_switch,
            "switches_per_group": self.switches_per_group,
            "groups": self.groups,
            "global_links_per_pair": self.global_links_per_pair,
            "local_links_per_pair": self.local_links_per_pair,
            "routing": self.routing,
            "arrangement": self.arrangement,
        }

    def _routed(self) -> int:
        a, g, m = self.switches_per_group, self.groups, self.global_links_per_pair
        return st.switch_hops(a, g, m, self.arrangement, self.routing) - 1

    def max_switch_hops(self, d: Design) -> int:
        """Routed links + 1: 4 switches for local, global, local (6 for Valiant's route)."""
        return self._routed() + 1

    def _class(self, d: Design, i: int, what: str) -> float:
        c = d.link_classes[i] if i < len(d.link_classes) else None
        return 0.0 if c is None else float(getattr(c, what))

    def _path(self, d: Design, what: str, switch_ns: float) -> float:
        gpu, local, glob = (self._class(d, i, what) for i in range(3))
        a, g = self.switches_per_group, self.groups
        inside = 2 * gpu + (2 * switch_ns + local if a > 1 else switch_ns)
        if g < 2:
            return inside
        links, globs = self._routed(), st.global_hops(g, self.routing)
        across = (links + 1) * switch_ns + 2 * gpu + globs * glob + (links - globs) * local
        return max(inside, across)

    def max_latency_ns(self, d: Design) -> float:
        """The longest route: switches, two GPU links, its local and global links."""
        return self._path(d, "latency_ns", float(d.tiers[0].latency_ns))

    def propagation_ns(self, d: Design) -> float:
        """The propagation part of the longest route."""
        return self._path(d, "propagation_ns", 0.0)

    def bisection_gbps(self, d: Design) -> float:
        """Global links between the first half of the groups and the rest (or half the NICs)."""
        links = st.bisection_links(
            self.switches_per_group,
            self.groups,
            self.local_links_per_pair,
            self.global_links_per_pair,
        )
        return d.planes * d.link_speed_gbps * min(links, d.gpus / 2)

    def blast_radius_gpus(self, d: Design) -> int:
        """The GPUs of one switch."""
        return min(self.gpus_per_switch, d.gpus)

    def oversubscription(self, d: Design) -> float:
        """The larger of the global and local load ratios the routing is sized for."""
        p, a, g = self.gpus_per_switch, self.switches_per_group, self.groups
        m, q, r = self.global_links_per_pair, self.local_links_per_pair, self.routing
        glob = st.global_load_ratio(p, a, g, m, d.gpus, r)
        return max(glob, st.local_load_ratio(p, a, g, q, m, d.gpus, r, self.arrangement))

    def shape_errors(self, d: Design) -> list[str]:
        """One switch group; classes gpu-switch, switch-switch (local), switch-switch (global)."""
        if len(d.tiers) != 1:
            return [f"tiers: a dragonfly has one switch group, got {len(d.tiers)}"]
        role = d.tiers[0].role
        want = [("gpu", role), (role, role), (role, role)]
        got = [(c.lower_role, c.upper_role) for c in d.link_classes]
        if got != want:
            return [
                "link_classes: a dragonfly has gpu-switch, local and global switch-switch "
                "classes, got " + (", ".join(f"{x}-{y}" for x, y in got) or "none")
            ]
        return []


def _int(params: dict[str, Any], name: str, low: int, high: int) -> int:
    v = params.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ValueError(
            f"dragonfly wiring: {name} must be an integer from {low} to {high:,}, got {v!r}"
        )
    return v


def _name(params: dict[str, Any], name: str, allowed: tuple[str, ...]) -> str:
    v = params.get(name, DEFAULTS[name])
    if v not in allowed:
        raise ValueError(f"dragonfly wiring: {name} must be one of {', '.join(allowed)}, got {v!r}")
    return str(v)


def parse_dragonfly_wiring(params: dict[str, Any]) -> DragonflyWiring:
    """Read a dragonfly wiring's parameters strictly; ValueError names what is wrong.

    ``routing`` and ``arrangement`` may be absent (a design.json written before issue 33):
    they then read as ``DEFAULTS``, what that design was planned with.
    """
    known = set(DragonflyWiring(1, 2, 2, 1, 1).params())
    extra = sorted(set(params) - known)
    if extra:
        raise ValueError(
            f"dragonfly wiring: unknown parameters {', '.join(extra)}; known: "
            f"{', '.join(sorted(known))}"
        )
    missing = sorted(known - set(params) - set(DEFAULTS))
    if missing:
        raise ValueError(f"dragonfly wiring: missing {', '.join(missing)}")
    w = DragonflyWiring(
        _int(params, "gpus_per_switch", 1, MAX_COUNT),
        _int(params, "switches_per_group", 2, MAX_COUNT),
        _int(params, "groups", 2, MAX_COUNT),
        _int(params, "global_links_per_pair", 1, MAX_PARALLEL),
        _int(params, "local_links_per_pair", 1, MAX_COUNT),
        _name(params, "routing", st.ROUTINGS),
        _name(params, "arrangement", st.ARRANGEMENTS),
    )
    if w.switches_per_group * w.groups > MAX_SWITCHES:
        raise ValueError(
            f"dragonfly wiring: {w.groups:,} groups of {w.switches_per_group:,} switches are "
            f"more than {MAX_SWITCHES:,}"
        )
    if w.global_links_per_pair * w.groups * (w.groups - 1) // 2 > MAX_SWITCHES * 64:
        raise ValueError("dragonfly wiring: too many global links")
    return w
