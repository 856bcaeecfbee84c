"""The torus family: a 1-, 2- or 3-D torus of packet switches, each with its GPUs, routed by DOR.

Sized by its own model (``models.torus_fabric``: closed forms, the length rule, the exact
enumeration); this module turns the instance into that model's data, its solution into a
``Design`` (one switch group of role ``switch``; link classes ``gpu-switch`` and
``switch-switch``), owns the ``torus`` wiring (dims, GPUs per switch, parallel links) and the
validator's independent recomputations. Instance knobs it reads: the cluster, the layout (for the
length rule), the constraints (``max_oversubscription`` bounds the load ratio of uniform
all-to-all under DOR, see the model), the objective and the search (allowed switches and media,
``pin.family``, ``pin.planes``, ``pin.switch_models``); the other pins and ``max_tiers`` are Clos
decisions and do not apply.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from planner.families.base import FamilyBase, simulated_verify

if TYPE_CHECKING:
    from collections.abc import Sequence

    import polars as pl

    from models import clos_sizing as cs
    from models import torus_fabric as tf
    from planner.deadline import Deadline
    from planner.design import Design, LinkGroup, TierDesign
    from planner.family_roles import DemandOf, PerTier, Sized
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance
    from planner.sim.fabric import Fabric
    from planner.validation import Violation

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


def _deg(k: int) -> int:
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


# ---- the family ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Torus(FamilyBase):
    """A torus of switches sized by ``models.torus_fabric``; no shapes for the Clos model."""

    name: str = TORUS
    wiring_kind: str = TORUS_WIRING

    def read_wiring(self, params: dict[str, Any]) -> TorusWiring:
        """Ring sizes, GPUs per switch and parallel links, every value checked."""
        return parse_torus_wiring(params)

    def shapes(
        self,
        catalog: Catalog,
        options: tuple[cs.SwitchOption, ...],
        tier_options: list[int],
        pinned_tiers: int | None,
    ) -> list[tuple[int, PerTier]]:
        """None: the torus has its own model (``size``)."""
        return []

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        """One structure per plane count and restriction: the best torus of the allowed switches.

        Each switch model is enumerated once per plane count (``_solve_each_switch``), the plane
        counts taking equal shares of the time left; every restriction then reads the
        enumerations it allows (``_best_of``): any switch the best of them all, one model its own.
        """
        from planner.family_roles import Sized

        per_option: dict[str | None, list[Sized]] = {o: [] for o in switch_models}
        planes = (
            [inst.search.pin.planes] if inst.search.pin.planes else sorted(inst.cluster.nic_ports)
        )
        for i, p in enumerate(planes):
            problem = _problem(inst, catalog, p, None)
            share = deadline.remaining_s() / (len(planes) - i)
            each = _solve_each_switch(problem, share)
            for option, out in per_option.items():
                sol = _best_of(problem, each, option)
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
                design = _design_of(inst, catalog, problem, sol)
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

    def circuit_level(self, tiers: int) -> int | None:
        """None: packet switches only."""
        return None

    def missing_tier_reason(self, index: int, speed_gbps: int) -> str:
        """No switch at the plane's port speed."""
        return f"allowed switch runs {speed_gbps}G ports"

    def class_note(self, link_class: int, tiers: int) -> str:
        """The torus links follow folded rings (``models.torus_fabric``)."""
        return " (folded rings)" if link_class == 1 else ""

    def tier_design(
        self, catalog: Catalog, ts: cs.TierSolution, speed_gbps: int
    ) -> TierDesign | None:
        """None: no special tier."""
        return None

    def after_solve(
        self, design: Design, inst: Instance, deadline: Deadline, demand_of: DemandOf
    ) -> Design:
        """The design as solved."""
        return design

    def search_tables(self, design: Design, deadline: Deadline) -> dict[str, pl.DataFrame | None]:
        """None."""
        return {}

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
        """One plane of the torus (``planner.sim.fabric.torus_fabric``), routed by DOR."""
        from planner.sim.fabric import torus_fabric

        w = _wiring(design)
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
        neighbours = sum(_deg(k) for k in w.dims)
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
            ring = _ring_links(w.dims) * w.parallel_links
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
        hops = _eccentricity(w.dims) + 1
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
        ratio = _load_ratio(w, d.gpus)
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


# ---- the validator's own recomputations (no closed form of the model) ----------------------------
def _wiring(design: Design) -> TorusWiring:
    w = design.wiring
    if not isinstance(w, TorusWiring):
        raise ValueError(f"a torus design has a torus wiring, not {w.kind}")
    return w


def _ring_links(dims: tuple[int, ...]) -> int:
    """Distinct neighbour pairs of the torus, counted ring by ring (q = 1)."""
    n = math.prod(dims)
    total = 0
    for k in dims:
        pairs = {frozenset((c, (c + 1) % k)) for c in range(k)}
        total += (n // k) * sum(1 for p in pairs if len(p) == 2)
    return total


def _ring_eccentricity(k: int) -> int:
    """Farthest switch of a ring of k from switch 0, by breadth-first search."""
    seen = {0: 0}
    todo = deque([0])
    while todo:
        c = todo.popleft()
        for nxt in ((c + 1) % k, (c - 1) % k):
            if nxt not in seen:
                seen[nxt] = seen[c] + 1
                todo.append(nxt)
    return max(seen.values())


def _eccentricity(dims: tuple[int, ...]) -> int:
    """Torus links from switch 0 to the farthest switch (the torus is vertex-transitive).

    Breadth-first search on the whole switch graph when it is small enough, else the sum of the
    rings' (a product graph's distances add up).
    """
    n = math.prod(dims)
    if n > BFS_MAX_SWITCHES:
        return sum(_ring_eccentricity(k) for k in dims)
    strides = [math.prod(dims[:i]) for i in range(len(dims))]
    seen = {0: 0}
    todo = deque([0])
    while todo:
        v = todo.popleft()
        for k, s in zip(dims, strides, strict=True):
            c = (v // s) % k
            for step in (1, -1):
                u = v + (((c + step) % k) - c) * s
                if u not in seen:
                    seen[u] = seen[v] + 1
                    todo.append(u)
    return max(seen.values())


def _load_ratio(w: TorusWiring, gpus: int) -> float:
    """Busiest ring link's load / capacity under uniform all-to-all, DOR (an upper bound).

    Ring distances summed one by one (not the closed form): per dimension, traffic between a
    switch pair at most g^2 / (E - 1) (E the design's GPUs), times N sources, times the ring
    distances of one source over the N / k rings' worth of destinations, over the dimension's
    directed links.
    """
    n = math.prod(w.dims)
    g, q = w.gpus_per_switch, w.parallel_links
    e = min(gpus, n * g)
    worst = 0.0
    for k in w.dims:
        hops = sum(min(x, k - x) for x in range(k)) * (n // k)
        directed = 2 * _ring_links((k,)) * (n // k) * q
        if e > 1 and directed:
            worst = max(worst, n * hops * g * g / (e - 1) / directed)
    return worst


# ---- solving, one switch model at a time ---------------------------------------------------------
def _solve_each_switch(
    problem: tf.TorusProblem, time_limit_s: float
) -> dict[str | None, tf.TorusSolution]:
    """The model's optimum with each of the problem's switch models alone, in equal time shares.

    Keyed by switch name; with no switch at all, the whole problem under the key None (the
    model says why there is no torus). A model the time did not reach stops at its first lower
    bound (``TIME_LIMIT``, the bound stated).
    """
    import time

    from models import torus_fabric as tf

    (option,) = problem.options
    if not option.switches:
        return {None: tf.solve(tf.build(problem), time_limit_s)}
    end = time.perf_counter() + time_limit_s
    out: dict[str | None, tf.TorusSolution] = {}
    for i, s in enumerate(option.switches):
        share = max(0.0, end - time.perf_counter()) / (len(option.switches) - i)
        alone = replace(problem, options=(replace(option, switches=(s,)),))
        out[s.name] = tf.solve(tf.build(alone), share)
    return out


def _best_of(
    problem: tf.TorusProblem,
    each: dict[str | None, tf.TorusSolution],
    switch_model: str | None,
) -> tf.TorusSolution:
    """The best over the switch models a restriction allows (all for None, else the one named).

    The optimum over several models is the least of the per-model optima; the bound is the least
    of the per-model bounds (an infeasible model bounds nothing), and the design is optimal when
    no model's bound lies below it.
    """
    from models import torus_fabric as tf
    from models.status import Status

    if None in each:
        return each[None]
    subs = [sol for name, sol in each.items() if switch_model in (None, name)]
    if not subs:
        (option,) = problem.options
        return tf.solve(tf.build(replace(problem, options=(replace(option, switches=()),))), 0.0)
    wall = sum(x.wall_s for x in subs)
    examined = sum(x.examined for x in subs)
    found = [x for x in subs if x.priced is not None]
    bounds = [
        math.inf
        if x.status is Status.INFEASIBLE
        else (-math.inf if x.bound_usd is None else x.bound_usd)
        for x in subs
    ]
    if not found:
        if all(x.status is Status.INFEASIBLE for x in subs):
            return tf.TorusSolution(Status.INFEASIBLE, None, None, wall, examined, subs[0].reason)
        low = min(bounds)
        return tf.TorusSolution(
            Status.TIME_LIMIT, None, low if math.isfinite(low) else None, wall, examined
        )
    best = min(found, key=lambda x: (x.priced.objective_usd, x.priced.candidate.switch.name))  # type: ignore[union-attr]
    assert best.priced is not None
    objective = best.priced.objective_usd
    bound = max(0.0, min(objective, *bounds))
    optimal = bound >= objective * (1 - tf.OBJECTIVE_RTOL)
    status = Status.OPTIMAL if optimal else Status.FEASIBLE
    return tf.TorusSolution(status, best.priced, bound, wall, examined)


# ---- the instance as model data, the solution as a Design ----------------------------------------
def _problem(
    inst: Instance, catalog: Catalog, planes: int, switch_model: str | None
) -> tf.TorusProblem:
    from fractions import Fraction

    from models import cabling as cb
    from models import torus_fabric as tf
    from planner.sizing import (
        RATIO_DENOMINATOR,
        allowed_media,
        allowed_switches,
        cage_of,
        medium_option,
        nic_of,
        nic_port,
    )

    cl, c, lay = inst.cluster, inst.constraints, inst.layout
    speed = cl.nic_gbps // planes
    nic = nic_of(inst, catalog)
    pinned = inst.search.pin.model_for(1)
    choices = []
    for s in allowed_switches(inst, catalog):
        radix = s.radix_at(speed)
        if radix is None or (nic is not None and s.protocol not in nic.protocols):
            continue
        if switch_model not in (None, s.name) or pinned not in (None, s.name):
            continue
        engine: cb.PortKind = (
            cb.CpoEngine(s.cpo_optics.lane_gbps, s.cpo_optics.connector, s.cpo_optics.reach_m)
            if s.cpo_optics is not None
            else cage_of(s.cage)
        )
        choices.append(tf.SwitchChoice(s.name, radix, s.cost_usd, s.power_w, s.latency_ns, engine))
    media = tuple(medium_option(m) for m in allowed_media(inst, catalog) if m.speed_gbps == speed)
    survive = c.survive
    phi = None
    if survive is not None and survive.switch_failures > 0:
        phi = Fraction(survive.min_bandwidth_fraction).limit_denominator(RATIO_DENOMINATOR)
    obj = inst.objective
    return tf.TorusProblem(
        gpus=cl.gpus,
        options=(tf.PlaneOption(planes, speed, tuple(choices), media),),
        floor=tf.Floor(
            gpus_per_rack=lay.nodes_per_rack * cl.gpus_per_node,
            racks_per_row=lay.racks_per_row,
            rack_width_m=lay.rack_width_m,
            row_pitch_m=lay.row_pitch_m,
            in_rack_m=lay.in_rack_cable_m,
            slack_m=lay.cable_slack_m,
            run_factor=1.0 + lay.routing_overhead,
        ),
        requirements=tf.Requirements(
            max_load_ratio=Fraction(c.oversubscription(1)).limit_denominator(RATIO_DENOMINATOR),
            max_switch_hops=c.max_switch_hops,
            max_latency_ns=c.max_latency_ns,
            min_fraction_after_failure=phi,
            max_power_w=None if c.max_power_kw is None else c.max_power_kw * 1000.0,
            max_capex_usd=c.max_capex_usd,
        ),
        energy_usd_per_w=obj.energy_usd_per_w,
        capex_weight=obj.capex_weight,
        energy_weight=obj.energy_weight,
        nic=nic_port(nic),
    )


def _groups(
    catalog: Catalog, bands: tuple[tf.Band, ...], ends_k: tuple[int, int]
) -> tuple[LinkGroup, ...]:
    from planner.sizing.designs import medium_group

    return tuple(
        medium_group(
            catalog.medium_named(b.medium),
            b.links,
            b.min_length_m,
            b.max_length_m,
            b.ends,
            ends_k,
        )
        for b in bands
    )


def _design_of(
    inst: Instance, catalog: Catalog, problem: tf.TorusProblem, sol: tf.TorusSolution
) -> Design:
    from models import torus_fabric as tf
    from planner.design import Design, LinkClass, Requirements, ScaleUpDomain
    from planner.sizing import nic_of
    from planner.sizing.designs import switch_tier

    pr = sol.priced
    assert pr is not None
    cand, r = pr.candidate, problem.requirements
    sw = catalog.switch_named(cand.switch.name)
    speed = inst.cluster.nic_gbps // cand.planes
    n = tf.switches(cand.dims)
    nic = nic_of(inst, catalog)
    switch_k = sw.ports_per_cage(speed) if sw.cpo_optics is None else 0
    nic_k = 1 if nic is None else nic.ports_per_cage(cand.planes)
    tier = switch_tier(
        sw,
        level=1,
        role=ROLE,
        speed_gbps=speed,
        switches=n,
        downlinks=cand.gpus_per_switch,
        uplinks=tf.torus_ports(cand.dims, cand.parallel_links),
        fanout=tf.torus_ports(cand.dims, 1),
        parallel_links=cand.parallel_links,
        radix=cand.switch.radix,
    )
    sk = max(switch_k, 1) if sw.cpo_optics is None else 0
    classes = (
        LinkClass(
            index=0,
            lower_role="gpu",
            upper_role=ROLE,
            links=inst.cluster.gpus,
            speed_gbps=speed,
            groups=_groups(catalog, pr.gpu_bands, (max(nic_k, 1), sk)),
        ),
        LinkClass(
            index=1,
            lower_role=ROLE,
            upper_role=ROLE,
            links=tf.torus_links(cand.dims, cand.parallel_links),
            speed_gbps=speed,
            groups=_groups(catalog, pr.torus_bands, (sk, sk)),
        ),
    )
    c = inst.constraints
    dims = " x ".join(str(k) for k in cand.dims)
    theta = tf.throughput_fraction(
        cand.dims, cand.gpus_per_switch, cand.parallel_links, inst.cluster.gpus
    )
    return Design(
        instance=inst.name,
        family=TORUS,
        status=sol.status,
        gpus=inst.cluster.gpus,
        planes=cand.planes,
        link_speed_gbps=speed,
        tiers=(tier,),
        link_classes=classes,
        requirements=Requirements(
            max_oversubscription=(float(r.max_load_ratio),),
            max_switch_hops=c.max_switch_hops,
            max_latency_ns=c.max_latency_ns,
            min_fraction_after_failure=None
            if r.min_fraction_after_failure is None
            else float(r.min_fraction_after_failure),
            protected_tiers=(1,) if r.min_fraction_after_failure is not None else (),
            max_power_w=r.max_power_w,
            max_capex_usd=r.max_capex_usd,
        ),
        energy_usd_per_w=problem.energy_usd_per_w,
        capex_weight=problem.capex_weight,
        energy_weight=problem.energy_weight,
        capex_usd=pr.capex_usd,
        power_w=pr.power_w,
        objective_usd=pr.objective_usd,
        bound_usd=sol.bound_usd if sol.bound_usd is not None else pr.objective_usd,
        gpus_per_node=inst.cluster.gpus_per_node,
        scale_up=ScaleUpDomain.of(inst.cluster.scale_up, catalog),
        catalog=inst.search.catalog,
        solve_s=sol.wall_s,
        notes=(
            f"torus {dims} of {sw.name}, {cand.gpus_per_switch} GPUs per switch, "
            f"{cand.parallel_links} parallel links per ring neighbour; uniform all-to-all under "
            f"dimension-order routing runs at {theta:.2f} of line rate or more",
            "cable lengths: folded rings, switches in the racks of their GPUs "
            "(models.torus_fabric, link_lengths)",
        ),
        nic="" if nic is None else nic.name,
        nic_form_factor="" if nic is None else nic.cage.form_factor,
        nic_lane_gbps=None if nic is None else nic.cage.lane_gbps,
        nics_per_cage=1 if nic is None else nic.nics_per_cage,
        protocol=sw.protocol,
        wiring=TorusWiring(cand.dims, cand.gpus_per_switch, cand.parallel_links),
    )


def torus_table(design: Design) -> pl.DataFrame:
    """One row per dimension: ring size, rings, links; and the whole torus's closed forms."""
    import polars as pl

    from models import torus_fabric as tf

    w = _wiring(design)
    n = tf.switches(w.dims)
    theta = tf.throughput_fraction(w.dims, w.gpus_per_switch, w.parallel_links, design.gpus)
    rows = [
        {
            "dimension": i,
            "ring_switches": k,
            "rings": n // k,
            "links_per_plane": w.parallel_links * n * tf.degree(k) // 2,
            "ports_per_switch": w.parallel_links * tf.degree(k),
            "diameter_links": k // 2,
            "switches": n,
            "gpus_per_switch": w.gpus_per_switch,
            "parallel_links": w.parallel_links,
            "torus_diameter_links": tf.diameter(w.dims),
            "max_switch_hops": tf.switch_hops(w.dims),
            "bisection_links_per_plane": tf.bisection_links(w.dims, w.parallel_links),
            "load_ratio_uniform_dor": float(
                tf.load_ratio(w.dims, w.gpus_per_switch, w.parallel_links, design.gpus)
            ),
            "throughput_fraction_uniform_dor": theta,
        }
        for i, k in enumerate(w.dims)
    ]
    return pl.DataFrame(rows)
