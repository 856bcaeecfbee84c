"""The dragonfly family: the ``Family`` hooks the planner calls, over this package's parts."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from models.dragonfly import model as dm
from planner.families.dragonfly.wiring import (
    DRAGONFLY,
    ROLE,
    DragonflyWiring,
    parse_dragonfly_wiring,
)

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


def solve_each_switch(
    problem: dm.DragonflyProblem, deadline: Deadline
) -> dict[str | None, dm.DragonflySolution]:
    """The optimum with each switch model alone (None: no switch at all).

    Each model gets an equal share of what is left of ``deadline`` (the command's: one clock
    for the whole command); what one leaves unused goes to the next.
    """
    if not problem.switches:
        return {None: dm.solve(dm.build(problem), deadline)}
    out: dict[str | None, dm.DragonflySolution] = {}
    for i, s in enumerate(problem.switches):
        share = deadline.sooner(deadline.remaining_s() / (len(problem.switches) - i))
        out[s.name] = dm.solve(dm.build(replace(problem, switches=(s,))), share)
    return out


def best_of(
    problem: dm.DragonflyProblem,
    each: dict[str | None, dm.DragonflySolution],
    switch_model: str | None,
) -> dm.DragonflySolution:
    """The best over the switch models a restriction allows; the bound is the least of theirs."""
    from models.status import Status

    if None in each:
        return each[None]
    subs = [x for name, x in each.items() if switch_model in (None, name)]
    if not subs:
        return dm.solve(dm.build(replace(problem, switches=())))
    wall, examined = sum(x.wall_s for x in subs), sum(x.examined for x in subs)
    found = [x for x in subs if x.priced is not None]
    bounds = [
        math.inf
        if x.status is Status.INFEASIBLE
        else (-math.inf if x.bound_usd is None else x.bound_usd)
        for x in subs
    ]
    if not found:
        if all(x.status is Status.INFEASIBLE for x in subs):
            return dm.DragonflySolution(
                Status.INFEASIBLE, None, None, wall, examined, subs[0].reason
            )
        low = min(bounds)
        return dm.DragonflySolution(
            Status.TIME_LIMIT, None, low if math.isfinite(low) else None, wall, examined
        )
    best = found[0]
    for x in found[1:]:
        assert x.priced is not None
        assert best.priced is not None
        if dm.better(x.priced, best.priced):
            best = x
    assert best.priced is not None
    objective = best.priced.objective_usd
    bound = max(0.0, min(objective, *bounds))
    optimal = bound >= objective * (1 - dm.OBJECTIVE_RTOL)
    return dm.DragonflySolution(
        Status.OPTIMAL if optimal else Status.FEASIBLE, best.priced, bound, wall, examined
    )


@dataclass(frozen=True)
class Dragonfly:
    """A dragonfly of packet switches sized by its own model; no shapes for the Clos model."""

    name: str = DRAGONFLY
    wiring_kind: str = DRAGONFLY

    def read_wiring(self, params: dict[str, Any]) -> DragonflyWiring:
        """Groups, switches per group, terminals and global links, every value checked."""
        return parse_dragonfly_wiring(params)

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        """One structure per plane count and restriction: the best dragonfly of its switches."""
        from planner.families.dragonfly.design import design_of, problem_of
        from planner.family_roles import Sized

        out: list[Sized] = []
        planes = (
            [inst.search.pin.planes] if inst.search.pin.planes else sorted(inst.cluster.nic_ports)
        )
        for i, p in enumerate(planes):
            problem = problem_of(inst, catalog, p, None)
            each = solve_each_switch(
                problem, deadline.sooner(deadline.remaining_s() / (len(planes) - i))
            )
            for option in switch_models:
                sol = best_of(problem, each, option)
                if sol.priced is None:
                    reason = sol.reason or "the time limit ran out before a dragonfly was priced"
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
                design = design_of(inst, catalog, problem, sol)
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
        return out

    def label(self, planes: int, tiers: int) -> str:
        """``1 plane x dragonfly``."""
        return f"{planes} plane{'s' if planes > 1 else ''} x dragonfly"

    def roles(self, tiers: int) -> tuple[str, ...]:
        """The one switch group."""
        return (ROLE,)

    def table_titles(self) -> dict[str, str]:
        """``dragonfly``."""
        return {DRAGONFLY: "Dragonfly"}

    def design_tables(self) -> tuple[str, ...]:
        """``dragonfly``, beside the links it explains."""
        return (DRAGONFLY,)

    def picture_notes(self, tables: Mapping[str, pl.DataFrame]) -> list[str]:
        """Groups, switches per group and global links per switch, from ``dragonfly``."""
        table = tables.get(DRAGONFLY)
        if table is None or not len(table) or "groups" not in table.columns:
            return []
        r = table.row(0, named=True)
        return [
            f"{r['groups']:,} groups × {r['switches_per_group']:,} switches, "
            f"{r['global_ports_per_switch']:,} global links per switch"
        ]

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """``dragonfly``: the structure's counts and closed-form figures, one row."""
        return {DRAGONFLY: dragonfly_table(design)}

    def build_fabric(self, design: Design) -> Fabric:
        """One plane, routed as the design's wiring says (minimal, Valiant, UGAL-L or UGAL-G)."""
        from planner.families.dragonfly.routing import routed_fabric

        return routed_fabric(design)

    def check_structure(self, design: Design) -> list[Violation]:
        """Ports, groups, global links and the endpoint count, recounted."""
        from planner.families.dragonfly.checks import check_structure

        return check_structure(design)

    def check_design(self, design: Design) -> list[Violation]:
        """Hops, latency, speeds, ratios and failure tolerance, recomputed."""
        from planner.families.dragonfly.checks import check_design

        return check_design(design)


def dragonfly_table(design: Design) -> pl.DataFrame:
    """One row: the routing, p, a, h, g, m, q, the endpoint figures and the load ratios.

    ``global_load_ratio`` and ``local_load_ratio`` are what the routing is sized for (the worst
    case Valiant and UGAL leave, or uniform traffic under minimal routing); the ``uniform_``
    ones are uniform all-to-all under minimal routing, whatever the routing.
    """
    import polars as pl

    from models.dragonfly import structure as st

    w = design.wiring
    if not isinstance(w, DragonflyWiring):
        raise ValueError(f"a dragonfly design has a dragonfly wiring, not {w.kind}")
    p, a, g = w.gpus_per_switch, w.switches_per_group, w.groups
    m, q, h = w.global_links_per_pair, w.local_links_per_pair, w.global_ports
    r, e = w.routing, design.gpus
    return pl.DataFrame(
        [
            {
                "routing": r,
                "arrangement": w.arrangement,
                "gpus_per_switch": p,
                "switches_per_group": a,
                "global_ports_per_switch": h,
                "groups": g,
                "global_links_per_pair": m,
                "local_links_per_pair": q,
                "ports_per_switch": st.ports_per_switch(p, a, q, h),
                "endpoints": a * p * g,
                "max_groups": st.max_groups(a, h),
                "max_endpoints": st.max_endpoints(p, a, h),
                "local_links_per_plane": st.local_links(a, g, q),
                "global_links_per_plane": st.global_links(g, m),
                "max_switch_hops": w.max_switch_hops(design),
                "minimal_switch_hops": st.switch_hops(a, g, m, w.arrangement),
                "valiant_switch_hops": st.switch_hops(a, g, m, w.arrangement, st.VALIANT),
                "global_load_ratio": st.global_load_ratio(p, a, g, m, e, r),
                "local_load_ratio": st.local_load_ratio(p, a, g, q, m, e, r, w.arrangement),
                "uniform_global_load_ratio": st.global_ratio(p, a, m, e) if g > 1 else 0.0,
                "uniform_local_load_ratio": st.local_ratio(p, a, g, q, m, e),
            }
        ]
    )
