"""The OCS torus family: a TPU-style pod of chip cubes whose faces meet in optical circuit switches.

The pod is sized by ``planner.families.ocs_torus.pod`` (``models.torus_ocs``) from the instance's ``[torus]``
section: enough cubes for every requested slice at once plus the fewest spares that keep them
composable with the target probability, one OCS device per (dimension, face position), one
optical module and fibre per face link at the cube end (the OCS end is a mirror). That choice is
optimal for the family: fewer cubes cannot meet the target, the OCS count is fixed by the cube,
and the face-link medium is the best for the objective of those that run through the OCS.

As a ``Design``: the chips are the endpoints ("gpu"), the OCS devices the one switch group (role
``ocs``), the face links the one link class. The chips route for themselves (no packet switch),
so the path figures live in the ``ocs_torus`` wiring: a path crosses the routers of the chips on
it, at most the diameter of the widest slice plus one, and every link it takes is counted as a
face link. The simulator runs the largest slice as a torus of chips with dimension-order routing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from models.status import Status

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import polars as pl

    from planner.deadline import Deadline
    from planner.design import Design
    from planner.family_roles import Sized
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric
    from planner.validation import Violation

#: The family's name in instances and designs.
OCS_TORUS = "ocs_torus"
#: Torus links per chip: one each way along each of three dimensions.
CHIP_DEGREE = 6
#: Faces of a cube.
CUBE_FACES = 6
#: Propagation delay in fibre, ns per metre: the validator's own figure (face links are optical).
FIBRE_NS_PER_M = 4.9


# ---- the wiring ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class OcsTorusWiring:
    """Slices of a pod of ``cube``-sided chip cubes, each a (twisted) 3-D torus of chips."""

    kind: ClassVar[str] = OCS_TORUS
    cube: int
    slices: tuple[tuple[int, int, int], ...]
    twisted: bool

    def params(self) -> dict[str, Any]:
        """Cube side, slice shapes (chips per dimension) and whether twistable slices twist."""
        return {
            "cube": self.cube,
            "slices": [list(s) for s in self.slices],
            "twisted": self.twisted,
        }

    def diameters(self) -> list[int]:
        """Links on the longest shortest path of each slice."""
        from models import torus_ocs as to

        return [
            to.torus_diameter(s, to.tpu_twists(s) if self.twisted and to.twistable(s) else ())
            for s in self.slices
        ]

    def largest(self) -> tuple[int, int, int]:
        """The slice with the most chips (the first of those)."""
        return max(self.slices, key=math.prod)

    def max_switch_hops(self, d: Design) -> int:
        """Chip routers on the longest path of any slice: its diameter plus one."""
        return max(self.diameters()) + 1

    def max_latency_ns(self, d: Design) -> float:
        """The diameter's links, each counted as a face link (electronics plus propagation).

        Mesh links inside a cube are shorter, so this bounds the longest path from above; the
        chips' router latency is not in the catalog and is not counted.
        """
        return max(self.diameters()) * max(c.latency_ns for c in d.link_classes)

    def propagation_ns(self, d: Design) -> float:
        """The propagation part of ``max_latency_ns``."""
        return max(self.diameters()) * max(c.propagation_ns for c in d.link_classes)

    def bisection_gbps(self, d: Design) -> float:
        """The largest slice's, as a plain torus: 2 N / L_max links across the cut, one way.

        Halving the longest dimension L_max cuts two planes of N / L_max links (the wrap-around
        closes each ring twice). Twisting only adds shorter paths, so a twisted slice has at
        least this.
        """
        shape = self.largest()
        return 2 * math.prod(shape) / max(shape) * d.link_speed_gbps

    def blast_radius_gpus(self, d: Design) -> int:
        """Chips of the largest slice: one failed chip stops its slice until a spare cube stands in."""
        return math.prod(self.largest())

    def oversubscription(self, d: Design) -> float:
        """The tiers' largest down:up ratio, 1 when none has uplinks (as the summary gave it)."""
        ratios = d.oversubscription()
        return max(ratios) if ratios else 1.0

    def shape_errors(self, d: Design) -> list[str]:
        """One OCS group, one link class from the chips to it."""
        out = []
        if len(d.tiers) != 1 or not d.tiers[0].ocs:
            out.append("tiers: an ocs_torus design has one OCS group")
        if len(d.link_classes) != 1 or (
            d.link_classes[0].lower_role,
            d.link_classes[0].upper_role,
        ) != ("gpu", "ocs"):
            out.append("link_classes: an ocs_torus design has one class, gpu to ocs")
        return out


def _parse_wiring(params: dict[str, Any]) -> OcsTorusWiring:
    """An ``ocs_torus`` wiring from design.json, every value checked."""
    if set(params) != {"cube", "slices", "twisted"}:
        raise ValueError("the ocs_torus wiring has exactly cube, slices and twisted")
    cube, slices, twisted = params["cube"], params["slices"], params["twisted"]
    if type(cube) is not int or not 1 <= cube <= 16:
        raise ValueError(f"wiring.cube: expected an integer from 1 to 16, got {cube!r}")
    if type(twisted) is not bool:
        raise ValueError(f"wiring.twisted: expected true or false, got {twisted!r}")
    if not isinstance(slices, list | tuple) or not 1 <= len(slices) <= 64:
        raise ValueError("wiring.slices: expected 1 to 64 slice shapes")
    shapes = []
    for i, s in enumerate(slices):
        if (
            not isinstance(s, list | tuple)
            or len(s) != 3
            or any(type(n) is not int or not 1 <= n <= 1024 or n % cube for n in s)
        ):
            raise ValueError(
                f"wiring.slices.{i}: expected three chip counts, multiples of the cube ({cube}), "
                "each at most 1,024"
            )
        shapes.append((s[0], s[1], s[2]))
    return OcsTorusWiring(cube, tuple(shapes), twisted)


# ---- the family ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class OcsTorus:
    """TPU-style pods: cubes of chips, faces joined into tori by optical circuit switches."""

    name: str = OCS_TORUS
    wiring_kind: str = OCS_TORUS
    solver_groups: tuple[str, ...] = ("torus",)

    def job_domain_gpus(self, design: Design) -> tuple[str, int, bool]:
        """A slice is built of whole cubes, joined by the OCS in any order (a TPU slice)."""
        wiring = design.wiring
        assert isinstance(wiring, OcsTorusWiring)
        return ("cube", wiring.cube**3, False)

    def read_wiring(self, params: dict[str, Any]) -> OcsTorusWiring:
        """Cube, slices and twist, every value checked."""
        return _parse_wiring(params)

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        """The pod of the [torus] section, under the restriction None only (no packet switch).

        The sizing is closed-form (``planner.families.ocs_torus.pod.plan_torus``); it is not started when the
        deadline has passed (``TIME_LIMIT``, no bound). The slices' torus checks it runs stop at
        the deadline; those not run are in the design's notes.
        """
        from planner.errors import InputError
        from planner.families.ocs_torus.pod import plan_torus
        from planner.family_roles import Sized

        if None not in switch_models:
            return []
        if inst.torus is None:
            raise InputError(
                "search.families: ocs_torus sizes a TPU-style pod from a [torus] section, "
                "which this instance lacks"
            )
        if deadline.expired:
            return [Sized(Status.TIME_LIMIT, 1, 1)]
        start = time.perf_counter()
        plan = plan_torus(inst, catalog, deadline)
        wall = time.perf_counter() - start
        sizing = plan.sizing
        if sizing.status is not Status.OPTIMAL or sizing.spares is None:
            return [Sized(Status.INFEASIBLE, 1, 1, wall_s=wall, reason=sizing.reason or "")]
        design = _design(inst, catalog, plan, wall)
        if plan.cut:
            design = replace(design, notes=design.notes + plan.cut)
        return [
            Sized(
                Status.OPTIMAL,
                1,
                1,
                design.objective_usd,
                design.objective_usd,
                design.capex_usd,
                design.power_w,
                wall,
                design,
            )
        ]

    def label(self, planes: int, tiers: int) -> str:
        """``OCS torus pod``."""
        return "OCS torus pod"

    def roles(self, tiers: int) -> tuple[str, ...]:
        """The OCS layer."""
        return ("ocs",)

    def design_tables(self) -> tuple[str, ...]:
        """None shown with the design: its tables come after it."""
        return ()

    def table_titles(self) -> dict[str, str]:
        """Its slices, their circuits, and the pod after a cube fails."""
        return {
            "torus_slices": "Torus slices",
            "torus_circuits": "Torus circuits",
            "torus_failure": "Torus: after a cube fails",
        }

    def picture_notes(self, tables: Mapping[str, pl.DataFrame]) -> list[str]:
        """The first slices' shapes, from ``torus_slices``."""
        slices = tables.get("torus_slices")
        if slices is None or not len(slices) or "shape" not in slices.columns:
            return []
        shapes = ", ".join(
            f"{r['shape']}{' twisted' if r.get('twisted') else ''}"
            for r in slices.head(4).iter_rows(named=True)
        )
        more = f" (+{len(slices) - 4:,} more)" if len(slices) > 4 else ""
        return [f"torus slices {shapes}{more}"]

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """The slices, their circuits, and a cube failure replaced by a spare."""
        from planner.families.ocs_torus.pod import slice_tables

        w = _wiring(design)
        spares = _cubes(design) - _slice_cubes(w)
        return slice_tables(w.cube, [list(s) for s in w.slices], w.twisted, spares)

    def build_fabric(self, design: Design) -> Fabric:
        """The largest slice as a torus of chips, each its own router, dimension-order routed.

        Its twist, if any, is left out: dimension-order routing runs on the plain torus of the
        slice's shape, which the twisted one can only beat. A torus link leaving the last chip
        of a cube along its dimension (``v_d mod c = c - 1``, the wrap-around included) is a face
        link through the OCS, the design's link class 0; mesh links inside a cube and the chips'
        own injection ports are not priced (design class -1: no failure model).
        """
        import numpy as np

        from planner.families.torus.fabric import torus_fabric
        from planner.sim.fabric import NodeKind

        w = _wiring(design)
        shape = w.largest()
        speed = float(design.link_speed_gbps)
        fabric = torus_fabric(
            gpus=math.prod(shape),
            planes=1,
            dims=shape,
            gpus_per_switch=1,
            parallel_links=1,
            link_speed_gbps=speed,
            host_speed_gbps=CHIP_DEGREE * speed,
            roles=("chip", "router"),
            switch_kind=NodeKind.ROUTER,
        )
        first = fabric.first_switch
        lower, upper = fabric.lower - first, fabric.upper - first
        coords = fabric.coords
        torus = fabric.link_class == 1
        differs = coords[upper[torus]] != coords[lower[torus]]
        dim = np.argmax(differs, axis=1)
        at = coords[lower[torus], dim]
        face = np.zeros(fabric.physical_links, dtype=bool)
        face[torus] = at % w.cube == w.cube - 1
        design_class = np.where(face, 0, -1).astype(np.int64)
        return replace(fabric, design_class=design_class)

    def check_structure(self, design: Design) -> list[Violation]:
        """Recount the pod: 3 c^2 devices, 2 ports per cube on each, 6 c^2 face links per cube.

        Then compose every slice from the pod's cubes and check, chip by chip, that its links
        are exactly the torus's (``models.torus_ocs.check_torus``).
        """
        from models import torus_ocs as to
        from planner.families.ocs_torus.pod import compose_slices
        from planner.validation import Violation, check_wiring_kind

        wrong_kind = check_wiring_kind(design, self.wiring_kind)
        if wrong_kind:
            return wrong_kind
        out: list[Violation] = []
        w = _wiring(design)
        c = w.cube
        ocs, cls = design.tiers[0], design.link_classes[0]
        cubes = _cubes(design)
        if design.gpus != cubes * c**3:
            out.append(Violation("wiring", f"{design.gpus} chips are not whole {c}^3 cubes"))
            return out
        if ocs.switches != 3 * c * c:
            out.append(
                Violation("wiring", f"{ocs.switches} OCS devices; {c}^3 cubes need {3 * c * c}")
            )
        if ocs.downlinks != 2 * cubes:
            out.append(
                Violation(
                    "wiring",
                    f"{ocs.downlinks} ports used per device; {cubes} cubes use {2 * cubes}",
                )
            )
        if cls.links != CUBE_FACES * c * c * cubes:
            out.append(
                Violation(
                    "wiring",
                    f"{cls.links} face links; {cubes} cubes have {CUBE_FACES * c * c * cubes}",
                )
            )
        if _slice_cubes(w) > cubes:
            out.append(
                Violation("wiring", f"the slices need {_slice_cubes(w)} cubes, the pod has {cubes}")
            )
            return out
        composed, _ = compose_slices(c, [list(s) for s in w.slices], w.twisted)
        for shape, sl in zip(w.slices, composed, strict=True):
            issues = to.check_torus(sl)
            if issues:
                out.append(Violation("wiring", f"slice {shape}: {issues[0]}"))
        return out

    def check_design(self, design: Design) -> list[Violation]:
        """Routers and latency on the longest path within the requirements.

        The diameter is recomputed independently of the wiring's formula: breadth-first search
        on each slice's chip graph as its circuits build it (``_eccentricity``).
        """
        from planner.families.ocs_torus.pod import compose_slices
        from planner.validation import Violation

        w = _wiring(design)
        out: list[Violation] = []
        composed, _ = compose_slices(w.cube, [list(s) for s in w.slices], w.twisted)
        diameter = max(_eccentricity(sl) for sl in composed)
        r = design.requirements
        routers = diameter + 1
        if r.max_switch_hops is not None and routers > r.max_switch_hops:
            out.append(
                Violation("hops", f"{routers} routers on the longest path > {r.max_switch_hops}")
            )
        if routers != design.max_switch_hops:
            out.append(
                Violation(
                    "hops",
                    f"the design states {design.max_switch_hops} routers on the longest path, "
                    f"its slices give {routers}",
                )
            )
        g0 = design.link_classes[0].groups
        link_ns = max(g.latency_ns + g.max_length_m * FIBRE_NS_PER_M for g in g0 if g.links)
        latency = diameter * link_ns
        if r.max_latency_ns is not None and latency > r.max_latency_ns + 1e-6:
            out.append(
                Violation(
                    "latency", f"{latency:,.1f} ns on the longest path > {r.max_latency_ns} ns"
                )
            )
        return out


def _eccentricity(sl: Any) -> int:
    """Links on the longest shortest path from the slice's first chip, on its chip graph.

    Breadth-first search (scipy) over the links ``models.torus_ocs.chip_graph`` holds, built
    as arrays (``chip_links``), from the graph's first node: the slice's diameter, a torus
    being vertex-transitive.
    """
    import numpy as np
    import scipy.sparse as sparse
    from scipy.sparse.csgraph import shortest_path

    from models import torus_ocs as to

    a, b = to.chip_links(sl)
    chips = len(sl.placement) * sl.cube**3
    graph = sparse.csr_matrix((np.ones(len(a)), (a, b)), shape=(chips, chips))
    hops = shortest_path(graph, directed=False, unweighted=True, indices=0)
    return int(hops[np.isfinite(hops)].max())


def _wiring(design: Design) -> OcsTorusWiring:
    w = design.wiring
    if not isinstance(w, OcsTorusWiring):
        raise ValueError(f"an ocs_torus design has an ocs_torus wiring, not {w.kind}")
    return w


def _cubes(design: Design) -> int:
    """Cubes of the pod: its chips in whole cubes."""
    return design.gpus // _wiring(design).cube ** 3


def _slice_cubes(w: OcsTorusWiring) -> int:
    from models import torus_ocs as to

    return sum(to.slice_cubes(s, w.cube) for s in w.slices)


def _design(inst: Instance, catalog: Catalog, plan: Any, wall_s: float) -> Design:
    """The sized pod as a Design: the OCS group, the face links, their modules and fibres."""
    from planner.design import LinkClass, TierDesign
    from planner.families.ocs_torus.pod import medium_of, ocs_of
    from planner.sizing.designs import design_requirements, family_design, medium_group

    spec = inst.torus
    assert spec is not None
    sizing = plan.sizing
    device = ocs_of(spec, catalog)
    medium = medium_of(inst, catalog, device)
    c, cubes = spec.cube, sizing.cubes
    links = CUBE_FACES * c * c * cubes
    tier = TierDesign(
        level=1,
        role="ocs",
        switch_model=device.name,
        port_speed_gbps=spec.link_gbps,
        radix=device.ports,
        switches=sizing.ocs_devices,
        downlinks=2 * cubes,
        uplinks=0,
        fanout=0,
        parallel_links=0,
        cpo=False,
        unit_cost_usd=device.cost_usd,
        unit_power_w=device.power_w,
        latency_ns=0,
        source=device.source.get("cost_usd", ""),
        ocs=True,
        insertion_loss_db=device.insertion_loss_db,
    )
    # One module per face link at the cube; the OCS end is a mirror.
    group = medium_group(medium, links, 0.0, 0.0, 1, (1, 0))
    face = LinkClass(0, "gpu", "ocs", links, spec.link_gbps, (group,))
    capex = sizing.ocs_devices * device.cost_usd + links * (
        medium.cost_usd_per_end + medium.cable_cost_usd
    )
    power = sizing.ocs_devices * device.power_w + links * medium.power_w_per_end
    obj = inst.objective
    objective = obj.capex_weight * capex + obj.energy_weight * obj.energy_usd_per_w * power
    return family_design(
        inst,
        catalog,
        family=OCS_TORUS,
        status=Status.OPTIMAL,
        gpus=cubes * c**3,
        with_nic=False,
        planes=1,
        link_speed_gbps=spec.link_gbps,
        tiers=(tier,),
        link_classes=(face,),
        requirements=design_requirements(inst, 1),
        capex_usd=capex,
        power_w=power,
        objective_usd=objective,
        bound_usd=objective,
        solve_s=wall_s,
        notes=(
            f"{sizing.slice_cubes} cubes for the slices and {sizing.spares} spares keep every "
            f"slice composable with probability {sizing.probability:.6f}",
            "face-link lengths are not modelled (no floor plan for a torus pod): no propagation",
            "chip router latency is not in the catalog: path latency counts the links only",
        ),
        wiring=OcsTorusWiring(c, tuple((s[0], s[1], s[2]) for s in spec.slices), spec.twisted),
    )
