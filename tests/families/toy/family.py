"""A small family written for the tests alone: a full mesh of leaves (no spines).

It shows what adding a family takes (issue 34): this package (its wiring, its model, its plane
and its checks, built from the shared helpers), one registry line (``FAMILIES[MESH] = Mesh()``,
done by the test with ``monkeypatch``), its instance (``leaf-mesh.toml``) and its tests. Nothing
else in the repository names it.

Model, per plane count P (port speed s = nic / P) and catalog switch of radix k at s: L leaves of
d GPUs each (L d >= E), every leaf pair joined by q links. Constraints: ``d + q (L - 1) <= k``
(fits the radix); the load ratio of a mesh link under uniform all-to-all, ``d^2 / ((E - 1) q)``,
at most ``max_oversubscription``; ``L >= 2``. Objective: P (L switch + links (2 ends + cable)),
the cheapest medium at s that reaches ``MESH_LENGTH_M``. Enumerated exhaustively (d, then the
least q): small, exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from models.status import Status
from planner.family_roles import Sized
from planner.sim.fabric import Fabric, NodeKind
from planner.sim.routing_strategies import SHORTEST_PATH

if TYPE_CHECKING:
    from collections.abc import Sequence

    from planner.deadline import Deadline
    from planner.design import Design
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.violation import Violation

MESH = "leaf_mesh"
ROLE = "leaf"
#: Every mesh link is taken to be this long (the leaves sit in one row of racks).
MESH_LENGTH_M = 3.0


@dataclass(frozen=True)
class MeshWiring:
    """L leaves of d GPUs, q links between every two leaves."""

    leaves: int
    gpus_per_leaf: int
    parallel_links: int
    kind: ClassVar[str] = MESH

    def params(self) -> dict[str, Any]:
        return {
            "leaves": self.leaves,
            "gpus_per_leaf": self.gpus_per_leaf,
            "parallel_links": self.parallel_links,
        }

    def max_switch_hops(self, d: Design) -> int:
        return 2

    def max_latency_ns(self, d: Design) -> float:
        return 2 * d.tiers[0].latency_ns + sum(
            (2 if c.index == 0 else 1) * c.latency_ns for c in d.link_classes
        )

    def propagation_ns(self, d: Design) -> float:
        return sum((2 if c.index == 0 else 1) * c.propagation_ns for c in d.link_classes)

    def bisection_gbps(self, d: Design) -> float:
        half = self.leaves // 2
        return d.planes * half * (self.leaves - half) * self.parallel_links * d.link_speed_gbps

    def blast_radius_gpus(self, d: Design) -> int:
        return self.gpus_per_leaf

    def oversubscription(self, d: Design) -> float:
        return load_ratio(self.gpus_per_leaf, self.parallel_links, d.gpus)

    def shape_errors(self, d: Design) -> list[str]:
        t = d.tiers[0]
        errors = []
        if t.switches != self.leaves or t.downlinks != self.gpus_per_leaf:
            errors.append("tiers.0: expected the wiring's leaves and GPUs per leaf")
        if t.uplinks != self.parallel_links * (self.leaves - 1):
            errors.append("tiers.0: expected q (L - 1) mesh ports")
        return errors


def read_mesh_wiring(params: dict[str, Any]) -> MeshWiring:
    """The wiring from design.json, every value a positive integer."""
    values = {k: params.get(k) for k in ("leaves", "gpus_per_leaf", "parallel_links")}
    bad = [k for k, v in values.items() if not isinstance(v, int) or isinstance(v, bool) or v < 1]
    if bad or set(params) - set(values):
        raise ValueError("a leaf_mesh wiring has positive leaves, gpus_per_leaf, parallel_links")
    return MeshWiring(**values)  # type: ignore[arg-type]


def load_ratio(d: int, q: int, gpus: int) -> float:
    """Busiest mesh link's load over its capacity under uniform all-to-all."""
    return d * d / ((gpus - 1) * q)


@dataclass(frozen=True)
class Mesh:
    """The leaf mesh: sized by its own enumeration, planed and checked here."""

    name: str = MESH
    wiring_kind: str = MESH

    def read_wiring(self, params: dict[str, Any]) -> MeshWiring:
        return read_mesh_wiring(params)

    def roles(self, tiers: int) -> tuple[str, ...]:
        return (ROLE,)

    def label(self, planes: int, tiers: int) -> str:
        return f"{planes} plane{'s' if planes > 1 else ''} x leaf mesh"

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        out = []
        for option in switch_models:
            for planes in sorted(inst.cluster.nic_ports):
                design = cheapest_mesh(inst, catalog, planes, option)
                if design is None:
                    out.append(
                        Sized(
                            Status.INFEASIBLE, planes, 1, reason="no mesh fits", switch_model=option
                        )
                    )
                    continue
                out.append(
                    Sized(
                        Status.OPTIMAL,
                        planes,
                        1,
                        objective_usd=design.objective_usd,
                        bound_usd=design.objective_usd,
                        capex_usd=design.capex_usd,
                        power_w=design.power_w,
                        design=design,
                        switch_model=option,
                    )
                )
        return out

    def build_fabric(self, design: Design) -> Fabric:
        w = design.wiring
        assert isinstance(w, MeshWiring)
        gpus, L, q = design.gpus, w.leaves, w.parallel_links
        a, b = np.triu_indices(L, k=1)
        gpu = np.arange(gpus, dtype=np.int64)
        lower = np.concatenate([gpu, gpus + np.repeat(a, q)]).astype(np.int64)
        upper = np.concatenate([gpus + gpu // w.gpus_per_leaf, gpus + np.repeat(b, q)])
        link_class = np.concatenate([np.zeros(gpus), np.ones(a.size * q)]).astype(np.int64)
        return Fabric(
            gpus=gpus,
            planes=design.planes,
            link_speed_gbps=float(design.link_speed_gbps),
            tier_offsets=(0, gpus, gpus + L),
            lower=lower,
            upper=upper.astype(np.int64),
            link_class=link_class,
            alive=np.ones(2 * lower.size, dtype=bool),
            strategy=SHORTEST_PATH,
            roles=("gpu", ROLE),
            group_kinds=(NodeKind.GPU, NodeKind.SWITCH),
        )

    def check_structure(self, design: Design) -> list[Violation]:
        from planner.validation import Violation, check_wiring_kind

        wrong = check_wiring_kind(design, self.wiring_kind)
        if wrong:
            return wrong
        return [Violation("wiring", e) for e in design.wiring.shape_errors(design)]

    def check_design(self, design: Design) -> list[Violation]:
        from planner.validation import Violation

        w = design.wiring
        assert isinstance(w, MeshWiring)
        t = design.tiers[0]
        out = []
        if t.downlinks + t.uplinks > t.radix:
            out.append(Violation("ports", f"{t.downlinks + t.uplinks} ports used of {t.radix}"))
        if w.leaves * w.gpus_per_leaf < design.gpus:
            out.append(Violation("ports", "the leaves hold fewer GPUs than the cluster"))
        limit = design.requirements.max_oversubscription[0]
        if w.oversubscription(design) > limit * (1 + 1e-9):
            out.append(Violation("ratio", f"mesh load ratio above {limit}"))
        return out


def cheapest_mesh(
    inst: Instance, catalog: Catalog, planes: int, switch_model: str | None
) -> Design | None:
    """The cheapest mesh on one plane count, as a priced design; None when none fits."""
    from planner.design import LinkClass
    from planner.sizing import nic_of
    from planner.sizing.designs import (
        family_design,
        medium_group,
        one_tier_requirements,
        switch_tier,
    )
    from planner.sizing.problems import allowed_media, allowed_switches

    gpus, speed = inst.cluster.gpus, inst.cluster.nic_gbps // planes
    ratio = inst.constraints.max_oversubscription
    limit = float(ratio[0] if isinstance(ratio, list) else ratio)
    nic = nic_of(inst, catalog)
    media = [
        m
        for m in allowed_media(inst, catalog)
        if m.speed_gbps == speed
        and m.reach_m >= MESH_LENGTH_M
        and (nic is None or m.plugs_into(nic.cage))
    ]
    best: tuple[float, Any, int, int, int, Any] | None = None
    for sw in allowed_switches(inst, catalog):
        k = sw.radix_at(speed)
        if not k or sw.cage is None or (switch_model is not None and sw.name != switch_model):
            continue
        fitting = [m for m in media if m.plugs_into(sw.cage)]
        if not fitting:
            continue
        medium = min(fitting, key=lambda m: 2 * m.cost_usd_per_end + m.cable_cost_usd)
        link_usd = 2 * medium.cost_usd_per_end + medium.cable_cost_usd
        for d in range(1, k):
            L = math.ceil(gpus / d)
            if L < 2:
                continue
            q = math.ceil(d * d / ((gpus - 1) * limit))
            if d + q * (L - 1) > k:
                continue
            links = q * L * (L - 1) // 2 + gpus
            capex = planes * (L * sw.cost_usd + links * link_usd)
            if best is None or capex < best[0]:
                best = (capex, sw, d, L, q, medium)
    if best is None:
        return None
    capex, sw, d, L, q, medium = best
    link_w = 2 * medium.power_w_per_end
    power = planes * (L * sw.power_w + (q * L * (L - 1) // 2 + gpus) * link_w)
    obj = inst.objective
    objective = obj.capex_weight * capex + obj.energy_weight * obj.energy_usd_per_w * power
    tier = switch_tier(
        sw,
        level=1,
        role=ROLE,
        speed_gbps=speed,
        switches=L,
        downlinks=d,
        uplinks=q * (L - 1),
        fanout=L - 1,
        parallel_links=q,
    )
    sw_k = max(sw.ports_per_cage(speed), 1)
    nic_k = 1 if nic is None else max(nic.ports_per_cage(planes), 1)
    mesh_links = q * L * (L - 1) // 2
    classes = tuple(
        LinkClass(
            index=i,
            lower_role=lo,
            upper_role=ROLE,
            links=n,
            speed_gbps=speed,
            groups=(medium_group(medium, n, MESH_LENGTH_M, MESH_LENGTH_M, 2, per_module),),
        )
        for i, (lo, n, per_module) in enumerate(
            (("gpu", gpus, (nic_k, sw_k)), (ROLE, mesh_links, (sw_k, sw_k)))
        )
    )
    return family_design(
        inst,
        catalog,
        family=MESH,
        status=Status.OPTIMAL,
        planes=planes,
        link_speed_gbps=speed,
        tiers=(tier,),
        link_classes=classes,
        requirements=one_tier_requirements(inst, limit, None, None, None),
        capex_usd=capex,
        power_w=power,
        objective_usd=objective,
        bound_usd=None,
        solve_s=0.0,
        notes=(f"a full mesh of {L} leaves, {q} link(s) between every two",),
        wiring=MeshWiring(L, d, q),
    )
