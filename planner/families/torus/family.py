"""The torus family's roles: its model's structures, its fabric graph and its checks."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planner.families.base import simulated_verify
from planner.families.torus.design import (
    best_of,
    problem_of,
    solve_each_switch,
    torus_design_of,
    torus_table,
)
from planner.families.torus.recount import eccentricity, load_ratio, ring_links, wiring_of
from planner.families.torus.wiring import (
    LATENCY_TOL_NS,
    RATIO_RTOL,
    ROLE,
    TORUS,
    TORUS_WIRING,
    TorusWiring,
    parse_torus_wiring,
    ring_degree,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import polars as pl

    from planner.deadline import Deadline
    from planner.design import Design, LinkGroup
    from planner.family_roles import DemandOf, Sized
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric
    from planner.validation import Violation


# ---- the family ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Torus:
    """A torus of switches sized by ``models.torus_fabric``; no shapes for the Clos model."""

    name: str = TORUS
    wiring_kind: str = TORUS_WIRING

    def read_wiring(self, params: dict[str, Any]) -> TorusWiring:
        """Ring sizes, GPUs per switch and parallel links, every value checked."""
        return parse_torus_wiring(params)

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        """One structure per plane count and restriction: the best torus of the allowed switches.

        Each switch model is enumerated once per plane count (``solve_each_switch``), the plane
        counts taking equal shares of the time left; every restriction then reads the
        enumerations it allows (``best_of``): any switch the best of them all, one model its own.
        """
        from planner.family_roles import Sized

        per_option: dict[str | None, list[Sized]] = {o: [] for o in switch_models}
        planes = (
            [inst.search.pin.planes] if inst.search.pin.planes else sorted(inst.cluster.nic_ports)
        )
        for i, p in enumerate(planes):
            problem = problem_of(inst, catalog, p, None)
            share = deadline.remaining_s() / (len(planes) - i)
            each = solve_each_switch(problem, deadline.sooner(share))
            for option, out in per_option.items():
                sol = best_of(problem, each, option)
                if sol.priced is None:
                    reason = sol.reason or "the time limit ran out before a torus was priced"
                    out.append(
                        Sized(
                            sol.status,
                            p,
                            1,
                            bound_usd=sol.bound_usd,
                            wall_s=sol.wall_s,
                            reason=reason,
                            switch_model=option,
                        )
                    )
                    continue
                design = torus_design_of(inst, catalog, problem, sol)
                out.append(
                    Sized(
                        sol.status,
                        p,
                        1,
                        objective_usd=design.objective_usd,
                        bound_usd=sol.bound_usd,
                        capex_usd=design.capex_usd,
                        power_w=design.power_w,
                        wall_s=sol.wall_s,
                        design=design,
                        switch_model=option,
                    )
                )
        return [sized for out in per_option.values() for sized in out]

    def label(self, planes: int, tiers: int) -> str:
        """``1 plane x torus``."""
        return f"{planes} plane{'s' if planes > 1 else ''} x torus"

    def roles(self, tiers: int) -> tuple[str, ...]:
        """The one switch group."""
        return (ROLE,)

    def table_titles(self) -> dict[str, str]:
        """``torus``."""
        return {TORUS: "Torus"}

    def design_tables(self) -> tuple[str, ...]:
        """``torus``, beside the links it explains."""
        return (TORUS,)

    def picture_notes(self, tables: Mapping[str, pl.DataFrame]) -> list[str]:
        """The ring sizes, from ``torus``."""
        torus = tables.get(TORUS)
        if torus is None or not len(torus) or "ring_switches" not in torus.columns:
            return []
        dims = " × ".join(f"{n:,}" for n in torus["ring_switches"].to_list())
        return [f"switch torus {dims} (ring switches per dimension)"]

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """``torus``: one row per dimension, with the closed-form figures of the whole torus."""
        return {"torus": torus_table(design)}

    def throughput_scale(self, design: Design, inst: Instance, demand_of: DemandOf) -> float | None:
        """The closed form when the [verify] traffic is uniform all-to-all only; else None."""
        from models import torus_fabric as tf

        w = design.wiring
        kinds = {t.kind for t in simulated_verify(inst, design).traffic}
        if not isinstance(w, TorusWiring) or kinds != {"uniform_all_to_all"}:
            return None
        return tf.throughput_fraction(w.dims, w.gpus_per_switch, w.parallel_links, design.gpus)

    def build_fabric(self, design: Design) -> Fabric:
        """One plane of the torus (``planner.families.torus.fabric.torus_fabric``), routed by DOR."""
        from planner.families.torus.fabric import torus_fabric

        w = wiring_of(design)
        return torus_fabric(
            design.gpus,
            design.planes,
            w.dims,
            w.gpus_per_switch,
            w.parallel_links,
            float(design.link_speed_gbps),
            roles=("gpu", design.tiers[0].role),
        )

    def check_structure(self, design: Design) -> list[Violation]:
        """One packet switch group of prod(dims) switches, ports and links as the rings give."""
        from planner.validation import Violation, check_wiring_kind

        d = design
        wrong_kind = check_wiring_kind(d, self.wiring_kind)
        if wrong_kind:
            return wrong_kind
        assert isinstance(d.wiring, TorusWiring)  # the torus kind's parser makes one
        if len(d.tiers) != 1 or d.tiers[0].ocs or d.circuits:
            return [
                Violation("wiring", "a torus design has one packet switch group and no circuits")
            ]
        w, t = d.wiring, d.tiers[0]
        out: list[Violation] = []
        n = 1
        for k in w.dims:
            n *= k
        if t.switches != n:
            out.append(
                Violation("wiring", f"dims {list(w.dims)} make {n} switches, not {t.switches}")
            )
        if t.downlinks != w.gpus_per_switch or n * w.gpus_per_switch < d.gpus:
            out.append(
                Violation(
                    "wiring",
                    f"{n} switches of {w.gpus_per_switch} GPU ports ({t.downlinks} stated) do not "
                    f"hold {d.gpus} GPUs",
                )
            )
        neighbours = sum(ring_degree(k) for k in w.dims)
        if (t.fanout, t.parallel_links, t.uplinks) != (
            neighbours,
            w.parallel_links,
            neighbours * w.parallel_links,
        ):
            out.append(
                Violation(
                    "wiring",
                    f"a switch has {neighbours} ring neighbours x {w.parallel_links} links; it "
                    f"states fanout {t.fanout}, parallel links {t.parallel_links}, uplinks "
                    f"{t.uplinks}",
                )
            )
        if len(d.link_classes) == 2:
            ring = ring_links(w.dims) * w.parallel_links
            for c, want in zip(d.link_classes, (d.gpus, ring), strict=True):
                if c.links != want:
                    out.append(
                        Violation(
                            "wiring",
                            f"{c.lower_role}-{c.upper_role}: {c.links} links, the rings give {want}",
                        )
                    )
        return out

    def check_design(self, design: Design) -> list[Violation]:
        """Hops and latency (recomputed on the rings), bandwidth, failure tolerance."""
        from planner.validation import PROPAGATION_NS_PER_M, Violation

        d, r = design, design.requirements
        w = d.wiring
        if not isinstance(w, TorusWiring) or len(d.tiers) != 1 or len(d.link_classes) != 2:
            return []  # no torus at all: the structural checks say why
        out: list[Violation] = []
        hops = eccentricity(w.dims) + 1
        if r.max_switch_hops is not None and hops > r.max_switch_hops:
            out.append(
                Violation("hops", f"{hops} switches on the longest path > {r.max_switch_hops}")
            )

        def worst(groups: tuple[LinkGroup, ...]) -> float:
            return max(
                (
                    g.latency_ns
                    + g.max_length_m * PROPAGATION_NS_PER_M["copper" if g.copper else "fibre"]
                    for g in groups
                    if g.links
                ),
                default=0.0,
            )

        gpu, ring = (worst(c.groups) for c in d.link_classes)
        latency = hops * d.tiers[0].latency_ns + 2 * gpu + (hops - 1) * ring
        if r.max_latency_ns is not None and latency > r.max_latency_ns + LATENCY_TOL_NS:
            out.append(
                Violation(
                    "latency", f"{latency:,.1f} ns on the longest path > {r.max_latency_ns} ns"
                )
            )
        if not math.isclose(latency, d.max_latency_ns, rel_tol=1e-9, abs_tol=LATENCY_TOL_NS):
            out.append(
                Violation(
                    "latency",
                    f"the design states {d.max_latency_ns:,.1f} ns on the longest path, the links "
                    f"give {latency:,.1f}",
                )
            )
        for c in d.link_classes:
            if c.speed_gbps != d.link_speed_gbps:
                out.append(
                    Violation(
                        "speed",
                        f"class {c.index} runs {c.speed_gbps}G on {d.link_speed_gbps}G links",
                    )
                )
        limit = r.max_oversubscription[0] if r.max_oversubscription else 1.0
        ratio = load_ratio(w, d.gpus)
        if ratio > limit * (1 + RATIO_RTOL):
            out.append(
                Violation(
                    "oversubscription",
                    f"uniform all-to-all under DOR loads the busiest torus link {ratio:.3f}x its "
                    f"capacity > {limit}",
                )
            )
        phi = r.min_fraction_after_failure
        kept = (d.planes - 1) / d.planes
        if phi is not None and kept < phi - 1e-12:
            out.append(
                Violation(
                    "failure",
                    f"a switch failure cuts its GPUs, and the DOR paths through it, off one of "
                    f"{d.planes} planes: {kept:.0%} kept < {phi:.0%}",
                )
            )
        return out
