"""The torus family's adapter: the instance as the model's data, a solution as a ``Design``."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from planner.families.torus.recount import wiring_of
from planner.families.torus.wiring import ROLE, TORUS, TorusWiring

if TYPE_CHECKING:
    import polars as pl

    from models import torus_fabric as tf
    from planner.deadline import Deadline
    from planner.design import Design, LinkGroup
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance


# ---- solving, one switch model at a time ---------------------------------------------------------
def solve_each_switch(
    problem: tf.TorusProblem, deadline: Deadline
) -> dict[str | None, tf.TorusSolution]:
    """The model's optimum with each of the problem's switch models alone, in equal time shares.

    Keyed by switch name; with no switch at all, the whole problem under the key None (the
    model says why there is no torus). The shares are of what is left of ``deadline`` (the
    command's: one clock for the whole command), read again before each model, so what one
    leaves unused goes to the next. A model the time did not reach stops at its first lower
    bound (``TIME_LIMIT``, the bound stated).
    """
    from models import torus_fabric as tf

    (option,) = problem.options
    if not option.switches:
        return {None: tf.solve(tf.build(problem), deadline.remaining_s())}
    out: dict[str | None, tf.TorusSolution] = {}
    for i, s in enumerate(option.switches):
        share = deadline.remaining_s() / (len(option.switches) - i)
        alone = replace(problem, options=(replace(option, switches=(s,)),))
        out[s.name] = tf.solve(tf.build(alone), share)
    return out


def best_of(
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
def problem_of(
    inst: Instance, catalog: Catalog, planes: int, switch_model: str | None
) -> tf.TorusProblem:
    """The torus model's data for the instance: planes, allowed switches (or one), media, rules."""
    from fractions import Fraction

    from models import torus_fabric as tf
    from planner.sizing import RATIO_DENOMINATOR, nic_of, nic_port
    from planner.sizing.one_group import failure_fraction, floor_of, media_options, switch_choices

    cl, c, obj = inst.cluster, inst.constraints, inst.objective
    speed = cl.nic_gbps // planes
    choices = switch_choices(inst, catalog, speed, switch_model)
    media = media_options(inst, catalog, speed)
    phi = failure_fraction(inst)
    return tf.TorusProblem(
        gpus=cl.gpus,
        options=(tf.PlaneOption(planes, speed, choices, media),),
        floor=floor_of(inst),
        requirements=tf.Requirements(
            max_load_ratio=Fraction(c.oversubscription(1)).limit_denominator(RATIO_DENOMINATOR),
            max_switch_hops=c.max_switch_hops,
            max_latency_ns=c.max_latency_ns,
            min_fraction_after_failure=None
            if phi is None
            else Fraction(phi).limit_denominator(RATIO_DENOMINATOR),
            max_power_w=None if c.max_power_kw is None else c.max_power_kw * 1000.0,
            max_capex_usd=c.max_capex_usd,
        ),
        energy_usd_per_w=obj.energy_usd_per_w,
        capex_weight=obj.capex_weight,
        energy_weight=obj.energy_weight,
        nic=nic_port(nic_of(inst, catalog)),
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


def torus_design_of(
    inst: Instance, catalog: Catalog, problem: tf.TorusProblem, sol: tf.TorusSolution
) -> Design:
    """A torus solution as a priced ``Design``: one switch group, its two link classes, wiring."""
    from models import torus_fabric as tf
    from planner.design import LinkClass
    from planner.sizing import nic_of
    from planner.sizing.designs import family_design, one_tier_requirements, switch_tier

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
    dims = " x ".join(str(k) for k in cand.dims)
    theta = tf.throughput_fraction(
        cand.dims, cand.gpus_per_switch, cand.parallel_links, inst.cluster.gpus
    )
    return family_design(
        inst,
        catalog,
        family=TORUS,
        status=sol.status,
        planes=cand.planes,
        link_speed_gbps=speed,
        tiers=(tier,),
        link_classes=classes,
        requirements=one_tier_requirements(
            inst, r.max_load_ratio, r.min_fraction_after_failure, r.max_power_w, r.max_capex_usd
        ),
        capex_usd=pr.capex_usd,
        power_w=pr.power_w,
        objective_usd=pr.objective_usd,
        bound_usd=sol.bound_usd,
        solve_s=sol.wall_s,
        notes=(
            f"torus {dims} of {sw.name}, {cand.gpus_per_switch} GPUs per switch, "
            f"{cand.parallel_links} parallel links per ring neighbour; uniform all-to-all under "
            f"dimension-order routing runs at {theta:.2f} of line rate or more",
            "cable lengths: folded rings, switches in the racks of their GPUs "
            "(models.torus_fabric, link_lengths)",
        ),
        protocol=sw.protocol,
        wiring=TorusWiring(cand.dims, cand.gpus_per_switch, cand.parallel_links),
    )


def torus_table(design: Design) -> pl.DataFrame:
    """One row per dimension: ring size, rings, links; and the whole torus's closed forms."""
    import polars as pl

    from models import torus_fabric as tf

    w = wiring_of(design)
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
