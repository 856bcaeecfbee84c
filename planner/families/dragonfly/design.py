"""The instance as the dragonfly model's data, and its solution as a ``Design``.

Instance knobs read: the cluster (GPUs, NIC speed and splits), the layout (the length rule,
``layout``), the constraints (``max_oversubscription`` bounds the global and local load ratios,
hops, latency, switch-failure tolerance, power and capex caps), the objective, the search
(allowed switches and media, ``dragonfly_routing``, ``pin.planes``, ``pin.switch_models``, and
the first entry of ``pin.downlinks``, ``pin.switches``, ``pin.uplinks`` and
``pin.parallel_links`` as p, a g, q (a - 1) + h and q: ``model.Pins``) and the [verify]
traffic (``routing_of``). ``pin.tiers`` and ``pin.pods`` do not apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from models.dragonfly import model as dm
from models.dragonfly import structure as st
from planner.families.dragonfly.wiring import DRAGONFLY, ROLE, DragonflyWiring

if TYPE_CHECKING:
    from models import switch_media as sm
    from planner.design import Design, LinkGroup
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance


#: Traffic kinds ``auto`` routes minimally (every [verify] traffic one of these).
UNIFORM_KINDS = frozenset({"uniform_all_to_all"})


def routing_of(inst: Instance) -> str:
    """The routing the design runs: ``search.dragonfly_routing``, ``auto`` resolved.

    ``auto``: minimal when every [verify] traffic is uniform all-to-all (what minimal routing
    carries best, and is sized for), else UGAL-G.
    """
    chosen = inst.search.dragonfly_routing
    if chosen != "auto":
        return chosen
    uniform = all(t.kind in UNIFORM_KINDS for t in inst.verify.traffic)
    return st.MINIMAL if uniform else st.UGAL_G


def pins_of(inst: Instance) -> dm.Pins:
    """The dragonfly's counts ``search.pin`` fixes (``model.Pins``)."""
    pin = inst.search.pin

    def first(values: list[int] | None) -> int | None:
        return values[0] if values else None

    return dm.Pins(
        gpus_per_switch=first(pin.downlinks),
        switches=first(pin.switches),
        switch_ports=first(pin.uplinks),
        local_links_per_pair=first(pin.parallel_links),
    )


def problem_of(
    inst: Instance, catalog: Catalog, planes: int, switch_model: str | None
) -> dm.DragonflyProblem:
    """The model's data for one plane count and switch restriction (None: any allowed)."""
    from planner.sizing import nic_of, nic_port
    from planner.sizing.one_group import failure_fraction, floor_of, media_options, switch_choices

    cl, c, obj = inst.cluster, inst.constraints, inst.objective
    speed = cl.nic_gbps // planes
    return dm.DragonflyProblem(
        gpus=cl.gpus,
        planes=planes,
        speed_gbps=speed,
        switches=switch_choices(inst, catalog, speed, switch_model),
        media=media_options(inst, catalog, speed),
        floor=floor_of(inst),
        requirements=dm.Requirements(
            max_ratio=c.oversubscription(1),
            max_switch_hops=c.max_switch_hops,
            max_latency_ns=c.max_latency_ns,
            min_fraction_after_failure=failure_fraction(inst),
            max_power_w=None if c.max_power_kw is None else c.max_power_kw * 1000.0,
            max_capex_usd=c.max_capex_usd,
            routing=routing_of(inst),
        ),
        energy_usd_per_w=obj.energy_usd_per_w,
        capex_weight=obj.capex_weight,
        energy_weight=obj.energy_weight,
        nic=nic_port(nic_of(inst, catalog)),
        pins=pins_of(inst),
    )


#: What each routing is, and what its links are sized for, in the design's notes.
ROUTING_NOTES = {
    st.MINIMAL: "minimal (local, global, local), links sized for uniform all-to-all",
    st.VALIANT: (
        "Valiant (through a random intermediate group), links sized for the worst case it "
        "leaves, every group sending to the next (twice the global bandwidth of uniform traffic)"
    ),
    st.UGAL_G: (
        "UGAL-G (minimal unless a Valiant path is less loaded, judged from global load), links "
        "sized for the worst case it leaves, every group sending to the next (twice the global "
        "bandwidth of uniform traffic)"
    ),
    st.UGAL_L: (
        "UGAL-L (minimal unless a Valiant path is less loaded, judged from the source switch's "
        "own queues), links sized for the worst case it leaves, every group sending to the next "
        "(twice the global bandwidth of uniform traffic)"
    ),
}


def _groups(
    catalog: Catalog, bands: tuple[sm.Band, ...], ends_k: tuple[int, int]
) -> tuple[LinkGroup, ...]:
    from planner.sizing.designs import medium_group

    return tuple(
        medium_group(
            catalog.medium_named(b.medium), b.links, b.min_length_m, b.max_length_m, b.ends, ends_k
        )
        for b in bands
    )


def design_of(
    inst: Instance, catalog: Catalog, problem: dm.DragonflyProblem, sol: dm.DragonflySolution
) -> Design:
    """The priced design of a solution (``sol.priced`` must be set)."""
    from planner.design import LinkClass
    from planner.sizing import nic_of
    from planner.sizing.designs import family_design, one_tier_requirements, switch_tier

    pr = sol.priced
    assert pr is not None
    c, r = pr.candidate, problem.requirements
    sw = catalog.switch_named(c.switch.name)
    speed = problem.speed_gbps
    nic = nic_of(inst, catalog)
    h = c.h
    tier = switch_tier(
        sw,
        level=1,
        role=ROLE,
        speed_gbps=speed,
        switches=c.a * c.g,
        downlinks=c.p,
        uplinks=c.q * (c.a - 1) + h,
        fanout=(c.a - 1) + (c.g - 1 if c.g > 1 else 0),
        parallel_links=c.q,
        radix=c.switch.radix,
    )
    sk = max(sw.ports_per_cage(speed), 1) if sw.cpo_optics is None else 0
    nic_k = 1 if nic is None else max(nic.ports_per_cage(c.planes), 1)
    bands = ((pr.gpu_bands, (nic_k, sk)), (pr.local_bands, (sk, sk)), (pr.global_bands, (sk, sk)))
    counts = (inst.cluster.gpus, st.local_links(c.a, c.g, c.q), st.global_links(c.g, c.m))
    roles = (("gpu", ROLE), (ROLE, ROLE), (ROLE, ROLE))
    classes = tuple(
        LinkClass(
            index=i,
            lower_role=lo,
            upper_role=up,
            links=n,
            speed_gbps=speed,
            groups=_groups(catalog, b, k),
        )
        for i, ((b, k), n, (lo, up)) in enumerate(zip(bands, counts, roles, strict=True))
    )
    return family_design(
        inst,
        catalog,
        family=DRAGONFLY,
        status=sol.status,
        planes=c.planes,
        link_speed_gbps=speed,
        tiers=(tier,),
        link_classes=classes,
        requirements=one_tier_requirements(
            inst, r.max_ratio, r.min_fraction_after_failure, r.max_power_w, r.max_capex_usd
        ),
        capex_usd=pr.capex_usd,
        power_w=pr.power_w,
        objective_usd=pr.objective_usd,
        bound_usd=sol.bound_usd,
        solve_s=sol.wall_s,
        notes=(
            f"dragonfly of {c.g} groups x {c.a} {sw.name} switches, {c.p} GPUs, "
            f"{c.q * (c.a - 1)} local and {h} global ports per switch, {c.m} global link(s) per "
            f"group pair; link classes: 1 = local (inside a group), 2 = global (between groups)",
            f"routing: {ROUTING_NOTES[r.routing]}",
            "cable lengths: groups as rows of racks, each switch in the rack of its GPUs "
            "(models.dragonfly.layout)",
        ),
        protocol=sw.protocol,
        wiring=DragonflyWiring(c.p, c.a, c.g, c.m, c.q, r.routing, dm.ARRANGEMENT),
    )
