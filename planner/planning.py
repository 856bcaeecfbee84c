"""Planning an instance: the search, its post-solve steps, the verification, and the loops on them.

``plan`` (behind ``planner.api.plan``) resolves the instance's families once and hands them to
the search; the bandwidth loop (``search.until_verified``) and idle-GPU pricing
(``objective.idle_gpu_weight``) plan and simulate again around it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from models.status import Status
from planner.checks import check_instance, check_run, check_workload_placement
from planner.deadline import MIN_STEP_S, NO_DEADLINE, Deadline, cut_note
from planner.design import Design
from planner.errors import InputError
from planner.families import (
    fabric_of,
    family_of,
    read_design,
)
from planner.family_roles import PostSolves
from planner.loading import load_catalog, read_text
from planner.report.plan_result import PlanResult
from planner.schema.catalog import Catalog
from planner.schema.instance import DEFAULT_TIME_LIMIT_S, Instance
from planner.schema.verify import Verify
from planner.solver_parts import instance_families, load_solvers, parts_for
from planner.workload.parallelism_search import (
    choose,
    instance_bandwidths,
    with_chosen_parallelism,
)
from planner.workload.step import verify_with_workload

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from planner.bandwidth_loop import Planned
    from planner.family_roles import Family
    from planner.sim.sim_tables import SimResult
    from planner.sim.simulate import SimProgress
    from planner.sizing import Progress, SizingResult
    from planner.workload.step import StepTime


def catalog_for(inst: Instance) -> Catalog:
    """The catalog an instance names ('default' or a file path)."""
    return load_catalog(inst.search.catalog)


def load_design(path: Path) -> Design:
    """Read a design.json written by ``solve`` or ``evaluate``; InputError when it is not one."""
    text = read_text(path)
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(
            "expected a JSON object written by fabric-planner (design.json)", source=str(path)
        )
    try:
        return read_design(data)
    except KeyError as exc:
        raise InputError(f"not a design.json: missing field {exc}", source=str(path)) from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"not a design.json: {exc}", source=str(path)) from None


def check_workload_fits(inst: Instance, design: Design) -> None:
    """The instance's workload occupies exactly the GPUs its traffic is simulated on.

    tensor x pipeline x data = the GPUs of the design's simulated fabric

    That is the design's ``gpus`` for every family but a torus pod, whose simulation runs on
    its largest slice. ``planner.checks.check_workload`` holds the same rule against
    ``cluster.gpus`` before a solve; ``simulate --instance`` pairs a saved design with any
    instance, so the rule is checked again against the design: a workload written for 128 GPUs
    on a 256-GPU design would otherwise get a step time it cannot have.
    """
    work = inst.workload
    if work is None:
        return
    par = work.parallelism
    fabric_gpus = family_of(design.family).build_fabric(design).gpus
    if par.gpus == fabric_gpus:
        # The groups placed as the simulation places them (a refusal names the degree).
        check_workload_placement(
            work,
            gpus=fabric_gpus,
            gpus_per_node=design.gpus_per_node,
            domain_gpus=design.scale_up.gpus,
        )
        return
    where = (
        f"the design has {design.gpus:,} GPUs"
        if fabric_gpus == design.gpus
        else f"the design's simulation runs on {fabric_gpus:,} of its {design.gpus:,} GPUs"
    )
    raise InputError(
        f"workload.parallelism: tensor x pipeline x data = {par.tensor} x {par.pipeline} x "
        f"{par.data} = {par.gpus:,} GPUs, but {where} ({design.family}): the parallel degrees "
        "must multiply to the GPUs the workload runs on; give a workload written for this design"
    )


def verify_for(inst: Instance, design: Design) -> Verify:
    """The ``[verify]`` section a design of ``inst`` is simulated under: the workload's included.

    With a ``[workload]``, one call of each collective of its iteration is simulated
    (``planner.workload.step.verify_with_workload``): instead of the default traffic when
    ``[verify]`` lists none, after it when it does. Groups are placed in the design's domain.
    A workload that does not occupy the design's GPUs is bad input (``check_workload_fits``).
    A ``[workload.search]`` is simulated with the layout it chooses (as ``plan`` plans with it).
    """
    inst = with_chosen_parallelism(inst)
    check_workload_fits(inst, design)
    return verify_with_workload(inst.verify, inst.workload, design.scale_up.gpus)


def plan(
    inst: Instance,
    *,
    catalog: Catalog | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    progress: Progress | None = None,
    alternatives: bool = True,
    verify: bool | None = None,
    sim_progress: SimProgress | None = None,
    deadline: Deadline | None = None,
) -> PlanResult:
    """Choose the cheapest fabric (capex + lifetime energy) that meets the instance's constraints.

    The chosen design is then simulated under the instance's ``[verify]`` section, unless
    ``verify`` is False (or None and the instance turns verification off).

    ``time_limit_s`` bounds the whole call: the search, the post-solve steps (at least
    ``planner.deadline.MIN_STEP_S`` each, as the design needs them) and the simulation, whose
    steps not started in time are listed in ``sim.cut`` (verdict ``incomplete``). ``deadline``,
    when given, is a command's shared end instead (the search then gets what is left of it).

    Progress, both optional and called from the calling thread between steps:
    ``progress(done, total, label)`` after every sub-solve of the search (``done`` of ``total``
    structures, the last being ``label``), and ``sim_progress(label)`` after every simulation
    step (a bound, a traffic under a routing, a failure scenario, a Monte Carlo trial). A study
    of many plans (``planner.study.sweep``) reports per scenario instead:
    ``progress(done, total, scenario)``.
    """
    deadline = deadline or Deadline.after(time_limit_s)
    catalog = catalog or catalog_for(inst)
    check_instance(inst, catalog)
    # A [workload.search] plans, and is verified, with the layout it chooses for the cluster
    # (the best it timed before the deadline, which the design's notes then say).
    inst, choice, cut = _chosen_parallelism(inst, deadline, progress)
    verifying = inst.verify.enabled if verify is None else verify
    load_solvers(*parts_for(inst, verifying))
    check_run(inst, verifying)
    run = _Run(catalog, verifying, time_limit_s, progress, alternatives, sim_progress, deadline)
    if failures_priced(inst):
        result = _plan_options(inst, run)
    else:
        result = with_reliability(_plan_core(inst, run), catalog, run.deadline)
    if cut is not None and result.design is not None:
        design = replace(result.design, notes=(*result.design.notes, cut_note(cut)))
        result = replace(result, design=design)
    return result if choice is None else replace(result, parallelism=choice)


def _chosen_parallelism(
    inst: Instance, deadline: Deadline, progress: Progress | None = None
) -> tuple[Instance, pl.DataFrame | None, str | None]:
    """The instance with its [workload.search]'s layout, the choice table and what was cut.

    What the deadline cut of the search is in a user's words (None: nothing). The instance
    returned has no ``[workload.search]`` left (``Choice.workload``): the choice is made once,
    within the command's deadline, and every later step plans with it. ``progress`` is told
    the choice.
    """
    w = inst.workload
    if w is None or w.search is None:
        return inst, None, None
    choice = choose(w, instance_bandwidths(inst), inst.cluster.gpus_per_node, deadline)
    if progress is not None:
        progress(1, 1, f"parallelism search: {choice.label()}")
    return inst.model_copy(update={"workload": choice.workload}), choice.table, choice.note


def failures_priced(inst: Instance) -> bool:
    """Whether the options walk runs: [reliability] with GPU time priced, or an interruption cap."""
    if inst.reliability is None:
        return False
    priced = inst.objective.idle_gpu_weight > 0 and inst.workload is not None
    return priced or inst.constraints.max_interruptions_per_day is not None


def with_reliability(
    result: PlanResult, catalog: Catalog, deadline: Deadline = NO_DEADLINE
) -> PlanResult:
    """The result with its design's reliability assessed, when the instance asks for it.

    Its Monte Carlo stops at ``deadline`` (the command's); a NIC or link loss slows only the
    step's scale-out exposed communication (``scale_out_idle_fraction``).
    """
    from planner.reliability import assess
    from planner.reliability.goodput import scale_out_idle_fraction
    from planner.report.tables import workload_step

    inst = result.instance
    if inst.reliability is None or result.design is None:
        return result
    rates = catalog.reliability or load_catalog().reliability
    assert rates is not None
    step = workload_step(inst, result.design, result.sim)
    known = None if step is None or step[1] is None else (step[0], step[1])
    idle = None if known is None else known[1].idle_fraction
    out = None if known is None else scale_out_idle_fraction(*known)
    a = assess(
        result.design, rates, inst.reliability, idle, scale_out_idle_fraction=out, deadline=deadline
    )
    return replace(result, reliability=a)


@dataclass(frozen=True)
class _Run:
    """What one ``plan`` call runs with, handed as one to the steps that plan again."""

    catalog: Catalog
    verifying: bool
    time_limit_s: float
    progress: Progress | None
    alternatives: bool
    sim_progress: SimProgress | None
    deadline: Deadline


def _plan_options(inst: Instance, run: _Run) -> PlanResult:
    """``plan`` with failures priced or capped: every option planned, the best one's result."""
    from planner.reliability.options import (
        Evaluated,
        Option,
        choose,
        failure_value_usd,
        meets_cap,
        options,
    )

    catalog = run.catalog
    left = [len(options(inst, catalog))]

    def evaluate(sub: Instance, option: Option) -> Evaluated[PlanResult]:
        # Each option gets an even share of what is left of the command's time.
        share_s = run.deadline.remaining_s() / max(1, left[0])
        left[0] -= 1
        mine = replace(
            run,
            time_limit_s=min(run.time_limit_s, share_s),
            deadline=run.deadline.sooner(share_s),
        )
        found = with_reliability(_plan_core(sub, mine), catalog, mine.deadline)
        d, a = found.design, found.reliability
        if d is None or a is None:
            why = found.explanation[0] if found.explanation else "the search found no design"
            if len(found.explanation) > 1:
                why += f" (and {len(found.explanation) - 1} more reasons in its plan)"
            return Evaluated(option, found, None, None, None, None, False, f"no design: {why}")
        network = d.objective_usd
        priced = found.idle_pricing
        if priced is not None and priced.chosen is not None and priced.chosen.total_usd is not None:
            network = priced.chosen.total_usd
        fails = found.sim is not None and found.sim.verdict == "fails"
        capped = not meets_cap(sub, a)
        note = "over the interruption cap" if capped else ("fails [verify]" if fails else "")
        return Evaluated(
            option, found, d, network, a, failure_value_usd(sub, a), not (capped or fails), note
        )

    search = choose(inst, catalog, evaluate)
    if search.chosen is None or search.chosen.result is None:
        base = next((e.result for e in search.evaluated if e.result is not None), None)
        assert base is not None
        return replace(
            base,
            instance=inst,
            status=Status.INFEASIBLE,
            design=None,
            explanation=(search.message,),
            sim=None,
            family_sims={},
            reliability=None,
            reliability_options=search,
            family=None,
        )
    return replace(search.chosen.result, reliability_options=search)


def _plan_core(inst: Instance, run: _Run) -> PlanResult:
    """``plan`` after its checks: the priced walk, the bandwidth loop, or one search."""
    catalog, verifying, time_limit_s = run.catalog, run.verifying, run.time_limit_s
    progress, alternatives = run.progress, run.alternatives
    sim_progress, deadline = run.sim_progress, run.deadline
    if inst.objective.idle_gpu_weight > 0:
        return _plan_priced(
            inst, catalog, time_limit_s, progress, alternatives, sim_progress, deadline
        )
    if verifying and inst.search.until_verified:
        return _plan_until_verified(
            inst, catalog, time_limit_s, progress, alternatives, sim_progress, deadline
        )
    result, reconfiguration = _search(inst, catalog, time_limit_s, progress, alternatives, deadline)
    sim = None
    family_sims: dict[str, SimResult] = {}
    if result.design is not None and verifying:
        sim, family_sims = _verify(inst, catalog, result, sim_progress, deadline)
    return PlanResult(
        inst,
        result.status,
        result.design,
        result.explanation,
        result,
        sim,
        reconfiguration=reconfiguration,
        family_sims=family_sims,
        family=_design_family(result.design),
    )


def _design_family(design: Design | None) -> Family | None:
    """The design's family, resolved once for the result (None without a design)."""
    return None if design is None else family_of(design.family)


def _search(
    inst: Instance,
    catalog: Catalog,
    time_limit_s: float,
    progress: Progress | None,
    alternatives: bool,
    deadline: Deadline,
) -> tuple[SizingResult, pl.DataFrame | None]:
    """The search and the chosen design's post-solve steps: the result and its reconfiguration.

    The post-solve steps and the search tables share ``deadline``: what they cut is said in the
    design's notes (``planner.deadline.cut_notes``), a table left out included.
    """
    from planner.sizing import search

    result = search(
        inst,
        catalog,
        instance_families(inst),
        time_limit_s=min(time_limit_s, deadline.step_s()),
        progress=progress,
        alternatives=alternatives,
        # The command's deadline; when less than MIN_STEP_S is left, MIN_STEP_S from now (a
        # search must run for a result to exist; time_limit_s holds that floor).
        deadline=deadline if deadline.remaining_s() >= MIN_STEP_S else None,
    )
    reconfiguration = None
    if result.design is not None:
        family = family_of(result.design.family)
        if progress is not None:
            progress(1, 1, f"{family.name}: the chosen design's post-solve steps and tables")
        design, tables = result.design, {}
        if isinstance(family, PostSolves):
            design = family.after_solve(design, inst, deadline, verify_demand)
            tables = family.search_tables(design, deadline)
        left_out = tuple(
            cut_note(f"the {name} table was left out: the time limit passed before it was done")
            for name, table in tables.items()
            if table is None
        )
        if left_out:
            design = replace(design, notes=design.notes + left_out)
        result = replace(result, design=design)
        reconfiguration = tables.get("reconfiguration")
    return result, reconfiguration


def _verify(
    inst: Instance,
    catalog: Catalog,
    result: SizingResult,
    sim_progress: SimProgress | None,
    deadline: Deadline,
    sim: SimResult | None = None,
) -> tuple[SimResult, dict[str, SimResult]]:
    """The chosen design simulated under [verify] (unless ``sim`` is given), and the families'."""
    from planner.sim.simulate import simulate as _simulate

    assert result.design is not None
    family_sims: dict[str, SimResult] = {}
    try:
        if sim is None:
            verify = verify_for(inst, result.design)
            sim = _simulate(
                result.design,
                verify,
                fabric=fabric_of(result.design),
                progress=sim_progress,
                deadline=deadline,
            )
        if len(inst.search.families) > 1:
            family_sims, left_out = _family_sims(inst, catalog, result, sim, sim_progress, deadline)
            if left_out:
                note = (
                    f"the time limit passed before the best designs of {', '.join(left_out)} "
                    "were simulated: their rows of the alternatives table have no verdict"
                )
                sim = replace(sim, notes=(*sim.notes, note))
    except ValueError as exc:  # traffic that does not fit the cluster (group sizes, ...)
        raise InputError(f"verify: {exc}") from None
    return sim, family_sims


def _plan_and_simulate(
    catalog: Catalog,
    time_limit_s: float,
    progress: Progress | None,
    alternatives: bool,
    sim_progress: SimProgress | None,
    deadline: Deadline,
) -> tuple[
    Callable[[Instance], Planned[tuple[SizingResult, pl.DataFrame | None]]],
    Callable[[Instance, Design], SimResult],
]:
    """The plan and the simulation of one iteration of a loop over instances.

    Used by the bandwidth loop and the priced ladder; both share the command's deadline.
    """
    from planner.bandwidth_loop import Planned
    from planner.sim.simulate import simulate as _simulate

    def plan_once(current: Instance) -> Planned[tuple[SizingResult, pl.DataFrame | None]]:
        found = _search(current, catalog, time_limit_s, progress, alternatives, deadline)
        return Planned(found, found[0].design, found[0].explanation)

    def simulate_once(current: Instance, design: Design) -> SimResult:
        # Each rung or iteration allows other ratios: its layout is chosen for them.
        current = with_chosen_parallelism(current)
        try:
            verify = verify_for(current, design)
            return _simulate(
                design, verify, fabric=fabric_of(design), progress=sim_progress, deadline=deadline
            )
        except ValueError as exc:  # traffic that does not fit the cluster (group sizes, ...)
            raise InputError(f"verify: {exc}") from None

    return plan_once, simulate_once


def _plan_until_verified(
    inst: Instance,
    catalog: Catalog,
    time_limit_s: float,
    progress: Progress | None,
    alternatives: bool,
    sim_progress: SimProgress | None,
    deadline: Deadline,
) -> PlanResult:
    """``plan`` under ``search.until_verified``: the bandwidth loop, then the last plan's tables.

    Every iteration's search gets what is left of the time limit (capped at ``time_limit_s``);
    the simulations share the same deadline.
    """
    from planner.bandwidth_loop import run_loop

    plan_once, simulate_once = _plan_and_simulate(
        catalog, time_limit_s, progress, alternatives, sim_progress, deadline
    )

    loop = run_loop(inst, plan_once, simulate_once)
    result, reconfiguration = loop.planned.result
    last = with_chosen_parallelism(loop.instance)
    sim: SimResult | None = None
    family_sims: dict[str, SimResult] = {}
    if result.design is not None:
        sim, family_sims = _verify(last, catalog, result, sim_progress, deadline, loop.sim)
    explanation = result.explanation
    if result.design is None:
        explanation = (
            f"bandwidth loop: no design after tightening max_oversubscription to "
            f"{last.constraints.max_oversubscription}",
            *explanation,
        )
    return PlanResult(
        last,
        result.status,
        result.design,
        explanation,
        result,
        sim,
        reconfiguration=reconfiguration,
        family_sims=family_sims,
        bandwidth_loop=loop,
        family=_design_family(result.design),
    )


def _plan_priced(
    inst: Instance,
    catalog: Catalog,
    time_limit_s: float,
    progress: Progress | None,
    alternatives: bool,
    sim_progress: SimProgress | None,
    deadline: Deadline,
) -> PlanResult:
    """``plan`` with idle GPU time priced: the ladder walk, then the chosen rung's tables."""
    from planner.idle_pricing import run_priced
    from planner.report.tables import workload_step

    plan_once, simulate_once = _plan_and_simulate(
        catalog, time_limit_s, progress, alternatives, sim_progress, deadline
    )

    def step_of(current: Instance, design: Design, sim: SimResult) -> StepTime | None:
        found = workload_step(with_chosen_parallelism(current), design, sim)
        return None if found is None else found[1]

    priced = run_priced(inst, plan_once, simulate_once, step_of)
    chosen = priced.chosen
    if chosen is None or chosen.planned is None or chosen.design is None:
        last = priced.rungs[0]
        assert last.planned is not None
        result, reconfiguration = last.planned.result
        return PlanResult(
            inst,
            result.status,
            None,
            result.explanation,
            result,
            reconfiguration=reconfiguration,
            idle_pricing=priced,
        )
    result, reconfiguration = chosen.planned.result
    current = with_chosen_parallelism(inst.with_ratio_caps(chosen.caps))
    sim, family_sims = _verify(current, catalog, result, sim_progress, deadline, chosen.sim)
    return PlanResult(
        current,
        result.status,
        result.design,
        result.explanation,
        result,
        sim,
        reconfiguration=reconfiguration,
        family_sims=family_sims,
        idle_pricing=priced,
        family=_design_family(result.design),
    )


def _family_sims(
    inst: Instance,
    catalog: Catalog,
    result: SizingResult,
    sim: SimResult,
    progress: SimProgress | None,
    deadline: Deadline,
) -> tuple[dict[str, SimResult], list[str]]:
    """The best design of every other family simulated under the [verify] traffic, healthy.

    Failures and Monte Carlo trials are left out (they judge the chosen design); what the time
    limit cuts shows as the family's simulation being incomplete. A family whose turn comes
    after the limit has passed is not built at all (its canonical solve, post-solve steps,
    fabric and traffic take seconds on a large cluster, for a simulation that would be cut
    whole): it is returned in the list of the families left out.
    """
    from planner import alternatives
    from planner.sim.simulate import simulate as _simulate
    from planner.sizing.search_loop import TIE_BREAK_TIME_S

    assert result.design is not None
    healthy_update = {"failures": [], "single_switch_failures": False, "monte_carlo_trials": 0}
    sims = {result.design.family: sim}
    left_out: list[str] = []
    for name, outcome in alternatives.family_bests(result).items():
        if name in sims:
            continue
        if deadline.expired:
            left_out.append(name)
            continue
        time_s = min(TIE_BREAK_TIME_S, deadline.step_s())
        design = alternatives.design_of_outcome(inst, outcome, catalog, time_s)
        family = family_of(name)
        if isinstance(family, PostSolves):
            design = family.after_solve(design, inst, deadline, verify_demand)
        say = None if progress is None else (lambda text, n=name: progress(f"{n}: {text}"))
        healthy = verify_for(inst, design).model_copy(update=healthy_update)
        sims[name] = _simulate(
            design, healthy, fabric=fabric_of(design), progress=say, deadline=deadline
        )
    return sims, left_out


def verify_demand(design: Design, verify: Verify) -> npt.NDArray[np.float64]:
    """Block-level demand of a [verify] section's traffic: bytes from block a to block b.

    The diagonal holds the bytes that stay inside a block: they use no circuit but are part of
    what the block injects, which scales the throughput (``models.ocs_topology``, Units).
    """
    load_solvers("sim", "ocs")
    import numpy as np

    from planner.families.ocs_direct import circuits as ocs
    from planner.sim.traffic_kinds import build_traffic

    n = design.pods
    total = np.zeros((n, n))
    blocks = ocs.block_of_gpus(design)
    for spec in verify.traffic:
        try:
            traffic = build_traffic(
                spec,
                design.gpus,
                design.gpus_per_node,
                verify.seed,
                domain_gpus=design.scale_up.gpus,
            )
        except ValueError as exc:
            raise InputError(f"verify: {exc}") from None
        for phase in traffic.phases:
            a, b = blocks[phase.src], blocks[phase.dst]
            np.add.at(total, (a, b), phase.size_bytes * phase.repeat)
    return total
