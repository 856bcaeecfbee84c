"""The torus wiring: ring sizes, GPUs per switch and parallel links, and its path figures."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from planner.design import Design

#: The family's name in instances and designs.
TORUS = "torus"
#: The wiring kind of a torus design (design.json's ``wiring.kind``).
TORUS_WIRING = "torus"
#: Role of the torus's one switch group.
ROLE = "switch"
#: Most dimensions a torus wiring may have, and the largest ring and switch count design.json
#: may name (the enumeration never goes near them; they keep hostile input finite).
MAX_DIMS = 3
MAX_RING = 1_000_000
MAX_SWITCHES = 10_000_000
#: Largest switch count whose hop count the validator recomputes by breadth-first search; above
#: it, it walks each ring alone (the torus is a product of rings).
BFS_MAX_SWITCHES = 20_000
#: Slack on a recomputed latency (ns) and on a load ratio against its limit.
LATENCY_TOL_NS = 1e-6
RATIO_RTOL = 1e-12


def ring_degree(k: int) -> int:
    """Distinct ring neighbours of a switch along a dimension of k switches, counted as a set.

    The validator's own count (2, 1 for k = 2, 0 for k = 1), not the model's ``degree``.
    """
    return len({1 % k, (k - 1) % k} - {0})


# ---- the wiring ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TorusWiring:
    """A torus of switches: ring sizes, GPUs per switch, parallel links per ring neighbour.

    Formulas (``models.torus_fabric``): hops = diameter + 1; latency = (D + 1) switches + two GPU
    links + D torus links, each at its class's worst; bisection = the cut halving the largest
    dimension (or the NICs, if fewer); blast radius = the GPUs of one switch.
    """

    kind: ClassVar[str] = TORUS_WIRING
    dims: tuple[int, ...]
    gpus_per_switch: int
    parallel_links: int

    def params(self) -> dict[str, Any]:
        """Ring sizes, GPUs per switch and parallel links."""
        return {
            "dims": list(self.dims),
            "gpus_per_switch": self.gpus_per_switch,
            "parallel_links": self.parallel_links,
        }

    def max_switch_hops(self, d: Design) -> int:
        """Diameter + 1."""
        from models import torus_fabric as tf

        return tf.switch_hops(self.dims)

    def _diameter(self) -> int:
        from models import torus_fabric as tf

        return tf.diameter(self.dims)

    def max_latency_ns(self, d: Design) -> float:
        """(D + 1) switches, two GPU links and D torus links on their worst link."""
        from models import torus_fabric as tf

        gpu, torus = (
            d.link_classes[i].latency_ns if i < len(d.link_classes) else 0.0 for i in (0, 1)
        )
        return tf.path_latency_ns(self.dims, d.tiers[0].latency_ns, gpu, torus)

    def propagation_ns(self, d: Design) -> float:
        """Two GPU links and D torus links, at their class's longest."""
        gpu, torus = (
            d.link_classes[i].propagation_ns if i < len(d.link_classes) else 0.0 for i in (0, 1)
        )
        return 2 * gpu + self._diameter() * torus

    def bisection_gbps(self, d: Design) -> float:
        """Links across the cut halving the largest dimension, or half the NICs, all planes."""
        from models import torus_fabric as tf

        links = tf.bisection_links(self.dims, self.parallel_links)
        return d.planes * d.link_speed_gbps * min(links, d.gpus / 2)

    def blast_radius_gpus(self, d: Design) -> int:
        """The GPUs of one switch."""
        return min(self.gpus_per_switch, d.gpus)

    def oversubscription(self, d: Design) -> float:
        """The load ratio of uniform all-to-all under DOR at line rate (``models.torus_fabric``)."""
        from models import torus_fabric as tf

        return float(tf.load_ratio(self.dims, self.gpus_per_switch, self.parallel_links, d.gpus))

    def shape_errors(self, d: Design) -> list[str]:
        """One switch group and two link classes: gpu up to it, and it to itself."""
        if len(d.tiers) != 1:
            return [f"tiers: a torus has one switch group, got {len(d.tiers)}"]
        role = d.tiers[0].role
        want = [("gpu", role), (role, role)]
        got = [(c.lower_role, c.upper_role) for c in d.link_classes]
        if got != want:
            return [
                f"link_classes: a torus has {want[0][0]}-{role} and {role}-{role} classes, got "
                + (", ".join(f"{a}-{b}" for a, b in got) or "none")
            ]
        return []


def _int(params: dict[str, Any], name: str, low: int, high: int) -> int:
    v = params.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise ValueError(
            f"torus wiring: {name} must be an integer from {low} to {high:,}, got {v!r}"
        )
    return v


def parse_torus_wiring(params: dict[str, Any]) -> TorusWiring:
    """Read a torus wiring's parameters strictly; ValueError names what is wrong."""
    known = {"dims", "gpus_per_switch", "parallel_links"}
    extra = sorted(set(params) - known)
    if extra:
        raise ValueError(
            f"torus wiring: unknown parameters {', '.join(extra)}; known: {', '.join(sorted(known))}"
        )
    missing = sorted(known - set(params))
    if missing:
        raise ValueError(f"torus wiring: missing {', '.join(missing)}")
    dims = params["dims"]
    if (
        not isinstance(dims, list)
        or not 1 <= len(dims) <= MAX_DIMS
        or any(
            isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= MAX_RING for k in dims
        )
    ):
        raise ValueError(
            f"torus wiring: dims must be a list of 1 to {MAX_DIMS} ring sizes, each an integer "
            f"from 2 to {MAX_RING:,}; got {dims!r}"
        )
    if math.prod(dims) > MAX_SWITCHES:
        raise ValueError(
            f"torus wiring: dims {dims} make {math.prod(dims):,} switches, more than {MAX_SWITCHES:,}"
        )
    return TorusWiring(
        tuple(dims),
        _int(params, "gpus_per_switch", 1, 100_000),
        _int(params, "parallel_links", 1, 100_000),
    )
