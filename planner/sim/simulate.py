"""Verify a design by simulation: traffic x routing x failures -> tables and a verdict.

``simulate`` runs every traffic of the verify section (``planner.sim.traffic_kinds``) under every
routing, then under the failure scenarios and Monte Carlo trials (``planner.sim.scenarios``),
each as phases over the planes (``planner.sim.phase_runs``, streamed when large:
``planner.sim.stream_plan``). It returns the tables (``planner.sim.sim_tables``) and the verdict
(``planner.sim.verdict``); a phase's time is set against the ideal time and the optimal-routing
bound (``bound_time_s``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import polars as pl

from planner.deadline import NO_DEADLINE, Deadline, DeadlineExpired
from planner.design import Design
from planner.schema.verify import Together, TrafficSpec, Verify
from planner.sim import traffic as tr
from planner.sim.bound import max_concurrent_flow
from planner.sim.concurrent import run_together
from planner.sim.fabric import Fabric, FloatArray
from planner.sim.flow import BITS_PER_BYTE, GBPS
from planner.sim.packet import Fidelity, fidelity_of, two_way_traffic
from planner.sim.phase_runs import HealthyCache, RunTraffic, run_traffic
from planner.sim.routing import Routing
from planner.sim.scale_up import ScaleUp, scale_up_of, split_ideal_s
from planner.sim.scale_up import ideal_time_s as scale_up_ideal_time_s
from planner.sim.scenarios import Scenario, draw_failures, named_scenario, single_switch_scenarios
from planner.sim.sim_tables import (
    COLLECTIVES_SCHEMA,
    FAILURES_SCHEMA,
    LINK_HISTOGRAM_SCHEMA,
    LINKS_SCHEMA,
    TOGETHER_SCHEMA,
    SimResult,
    collective_row,
    failure_row,
    link_utilisation_rows,
)
from planner.sim.stream_plan import OverMemory
from planner.sim.traffic_kinds import build_traffic
from planner.sim.verdict import INCOMPLETE, judge

#: Called after every simulated (traffic, routing, scenario) with a short label.
SimProgress = Callable[[str], None]


def bound_time_s(
    fabric: Fabric,
    traffic: tr.Traffic,
    max_variables: int,
    scale_up: ScaleUp | None = None,
    nic_goodput_fraction: float = 1.0,
) -> float | None:
    """Least time any routing needs: the optimal-routing bound per phase, summed over phases.

    ``planner.sim.bound.max_concurrent_flow`` (method "auto"): the scaled bound where the
    fabric's symmetry proves it exact, else the reference LP up to ``max_variables``, else the
    scaled bound, which is a valid lower bound on the time (possibly below the true optimum).
    None only when a reference LP fails.

    With a ``scale_up`` domain the bound covers the scale-out flows of each phase (PXN flows
    from their proxies) and the phase's figure is ``max(B_out / goodput, T_up)``: B_out that
    bound, T_up the scale-up part's own time, the busiest GPU's scale-up bytes (out or in) at the
    scale-up rate (a flow's only route in the domain is its two GPU links, so no routing does
    better). ``nic_goodput_fraction`` (packet fidelity): the share of line rate that is payload.
    """
    total = 0.0
    nic_gbps = fabric.nic_rates_gbps * fabric.planes
    for whole in traffic.phases:
        phase, up_s = whole, 0.0
        if scale_up is not None:
            split = scale_up.split(whole)
            phase = split.scale_out
            up_s = split_ideal_s(split, fabric.gpus, nic_gbps, scale_up.gbps_per_gpu)[1]
        out_s = 0.0
        if phase.flows or scale_up is None:
            demand = phase.size_bytes / fabric.planes * BITS_PER_BYTE / GBPS
            b = max_concurrent_flow(
                fabric, phase.src, phase.dst, demand, max_variables=max_variables
            )
            if b.time_s is None:
                return None
            out_s = b.time_s
        total += max(out_s / nic_goodput_fraction, up_s) * whole.repeat
    return total


def _over_seeds(
    fabric: Fabric, t: tr.Traffic, routing: Routing, verify: Verify, run: RunTraffic
) -> tuple[float, FloatArray, int, FloatArray | None, bool, tuple[int, float, float]]:
    """A healthy run under every ECMP hash seed asked for: the median seed's run, and the spread.

    Spraying does not hash, so it runs once. The spread is (seeds, least time, greatest time);
    the median of an even count is the lower middle run (a run that happened, not an average).
    """
    seeds = verify.ecmp_seeds if routing is Routing.ECMP else 1
    runs = [run(fabric, t, routing, verify.seed + k, with_utilisation=True) for k in range(seeds)]
    order = sorted(range(seeds), key=lambda k: runs[k][0])
    total, times, cut, util, exact = runs[order[(seeds - 1) // 2]]
    exact = exact and all(r[4] for r in runs)
    return total, times, cut, util, exact, (seeds, runs[order[0]][0], runs[order[-1]][0])


def simulate(
    design: Design,
    verify: Verify,
    *,
    fabric: Fabric,
    progress: SimProgress | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> SimResult:
    """Simulate a design under the verify section's traffic, routings and failures.

    Each step (a traffic's bound, a traffic under a routing, a failure scenario, a Monte Carlo
    trial) starts only while ``deadline`` has not passed; the steps left out are listed in
    ``SimResult.cut`` and the verdict is ``incomplete`` unless what did run already fails.
    ``fabric`` is one plane of the design, built by its family (``Family.build_fabric``).

    The design's scale-up domain (``Design.scale_up``) runs beside the fabric
    (``planner.sim.scale_up.scale_up_of``: not for chip tori whose routers are the fabric, nor
    for one-GPU domains), with PXN when ``verify.pxn`` asks or the fabric is rail-only. The
    figures then mean, per phase (summed over phases with their repeats):

    * ``time_s``: the later of the scale-out and scale-up parts, each simulated;
    * ``ideal_time_s``: max(each GPU's own inter-domain bytes at its NIC rate, its scale-up
      bytes, PXN hops included, at its scale-up rate), the busiest GPU (``_ideal_s``);
    * ``bound_time_s``: max(the optimal-routing bound of the scale-out flows, PXN from their
      proxies, the scale-up part's busiest GPU link) (``bound_time_s``);
    * the links table: the fabric's link classes, then "gpu-nvswitch" up (a GPU's scale-up
      egress) and down (its ingress).
    """
    start = time.perf_counter()
    cut_steps: list[str] = []
    # When each step that ran (or started and was stopped) began, and how many were left out
    # (trials one each): what the suggested time limit is estimated from.
    began: list[float] = []
    steps_cut = 0
    over_memory: list[str] = []
    nic_gbps = fabric.nic_rates_gbps * fabric.planes
    routings = [Routing(r) for r in verify.routing]
    verdict_routing = Routing(verify.verdict_routing)
    if verdict_routing not in routings:
        routings.append(verdict_routing)
    scenarios = [named_scenario(fabric, f) for f in verify.failures]
    if verify.single_switch_failures:
        scenarios += single_switch_scenarios(fabric, design)
    coll_rows, link_rows, fail_rows = [], [], []
    bin_rows: list[dict[str, Any]] = []
    cache: HealthyCache = {}
    notes: list[str] = []
    told = 0
    healthy_time: dict[tuple[str, str], float] = {}
    fidelity = fidelity_of(fabric, design, verify)
    scale_up = scale_up_of(design, fabric, verify.pxn)
    # Every run of this simulation: the same budget, cache, notes, cap, deadline, fidelity and
    # scale-up domain.
    run: RunTraffic = partial(
        run_traffic,
        memory_budget_gib=verify.memory_budget_gib,
        cache=cache,
        notes=notes,
        max_flows=verify.resharing_max_flows,
        deadline=deadline,
        fidelity=fidelity,
        scale_up=scale_up,
        spray_entropies=verify.spray_entropies,
    )
    # The fabric's GPUs: all of the design's, or the slice a torus pod simulates.
    gpus = fabric.gpus
    traffics = [
        (
            spec,
            build_traffic(
                spec, gpus, design.gpus_per_node, verify.seed, domain_gpus=design.scale_up.gpus
            ),
        )
        for spec in verify.traffic
    ]
    for spec, t in traffics:
        ideal = _ideal_s(t, gpus, nic_gbps, scale_up, fidelity, fabric)
        paths = group_paths(fabric, t, scale_up)
        bound = None
        if verify.bound_max_variables:
            if deadline.expired:
                cut_steps.append(f"{spec.label}: bound")
                steps_cut += 1
            else:
                began.append(time.perf_counter())
                # At the best goodput (one-way, no ACKs to share with), still a bound.
                goodput = 1.0 if fidelity is None else 1.0 / fidelity.ideal_s(1.0, two_way=False)
                bound = bound_time_s(fabric, t, verify.bound_max_variables, scale_up, goodput)
                if progress:
                    progress(
                        f"{spec.label}: optimal-routing bound "
                        + ("skipped (too large)" if bound is None else f"{bound:.3g} s")
                    )
        for routing in routings:
            if deadline.expired:
                cut_steps.append(f"{spec.label}, {routing.value}")
                steps_cut += 1
                continue
            began.append(time.perf_counter())
            try:
                total, times, cut, util, exact, spread = _over_seeds(
                    fabric, t, routing, verify, run
                )
            except DeadlineExpired:
                cut_steps.append(f"{spec.label}, {routing.value} (stopped while running)")
                steps_cut += 1
                continue
            except OverMemory as exc:
                over_memory.append(f"{spec.label}, {routing.value}: {exc}")
                continue
            healthy_time[spec.label, routing.value] = total
            coll_rows.append(
                collective_row(
                    spec,
                    t,
                    routing,
                    "healthy",
                    total,
                    times,
                    cut,
                    ideal,
                    bound,
                    exact,
                    spread,
                    paths,
                )
            )
            if util is not None:
                link_rows.extend(
                    link_utilisation_rows(fabric, spec, routing, util, scale_up, bin_rows)
                )
            if progress:
                told = _tell_notes(progress, notes, told)
                progress(
                    f"{spec.label}, {routing.value}: {ideal / total if total else 0:.3f} of ideal"
                )
        for sc in scenarios:
            if deadline.expired or (spec.label, verdict_routing.value) not in healthy_time:
                cut_steps.append(f"{spec.label}, {sc.name}")
                steps_cut += 1
                continue
            began.append(time.perf_counter())
            try:
                total, times, cut, _, exact = run(fabric, t, verdict_routing, verify.seed, sc)
            except DeadlineExpired:
                cut_steps.append(f"{spec.label}, {sc.name} (stopped while running)")
                steps_cut += 1
                continue
            except OverMemory as exc:
                over_memory.append(f"{spec.label}, {sc.name}: {exc}")
                continue
            after = sc.failed_fabric(fabric)
            coll_rows.append(
                collective_row(
                    spec,
                    t,
                    verdict_routing,
                    sc.name,
                    total,
                    times,
                    cut,
                    ideal,
                    None,
                    exact,
                    paths=None if after is None else group_paths(after, t, scale_up),
                )
            )
            base = healthy_time[spec.label, verdict_routing.value]
            fail_rows.append(
                failure_row(
                    sc.name,
                    -1,
                    int(sc.failed_links.size),
                    sc.planes_lost,
                    spec,
                    verdict_routing,
                    total,
                    base,
                    ideal,
                    cut,
                )
            )
            if progress:
                told = _tell_notes(progress, notes, told)
                progress(f"{spec.label}, {sc.name}: {base / total if total else 0:.3f} of healthy")
    together_rows: list[dict[str, Any]] = []
    for group in verify.together:
        if deadline.expired:
            cut_steps.append(f"together {group.label}")
            steps_cut += 1
            continue
        began.append(time.perf_counter())
        try:
            together_rows += _together_rows(
                fabric, group, traffics, verdict_routing, verify.seed, scale_up, deadline
            )
        except DeadlineExpired:
            cut_steps.append(f"together {group.label} (stopped while running)")
            steps_cut += 1
            continue
        if progress:
            progress(f"together {group.label}: simulated")
    trials_began = time.perf_counter()
    trial_s: list[float] = []
    if verify.monte_carlo_trials and traffics:
        spec, t = traffics[0]
        if (spec.label, verdict_routing.value) in healthy_time:
            trials = _monte_carlo(
                fabric,
                design,
                verify,
                spec,
                t,
                verdict_routing,
                healthy_time[spec.label, verdict_routing.value],
                _ideal_s(t, gpus, nic_gbps, scale_up, fidelity, fabric),
                progress,
                run,
                deadline,
            )
            fail_rows.extend(trials)
            trial_s = [(time.perf_counter() - trials_began) / max(1, len(trials))] * len(trials)
            if len(trials) < verify.monte_carlo_trials:
                cut_steps.append(
                    f"monte carlo: {verify.monte_carlo_trials - len(trials):,} of "
                    f"{verify.monte_carlo_trials:,} trials"
                )
                steps_cut += verify.monte_carlo_trials - len(trials)
        else:
            cut_steps.append(f"monte carlo: {verify.monte_carlo_trials:,} trials")
            steps_cut += verify.monte_carlo_trials
    collectives = pl.DataFrame(coll_rows, schema=COLLECTIVES_SCHEMA)
    links = pl.DataFrame(link_rows, schema=LINKS_SCHEMA)
    link_histogram = pl.DataFrame(bin_rows, schema=LINK_HISTOGRAM_SCHEMA)
    failures = pl.DataFrame(fail_rows, schema=FAILURES_SCHEMA)
    verdict, reasons, fractions = judge(
        design, verify, collectives, failures, [s for s in scenarios if s.single_switch_tier]
    )
    wall_s = time.perf_counter() - start
    step_s = np.diff(np.append(began, trials_began)).tolist() + trial_s
    hint_s = deadline.suggest_time_limit(step_s, steps_cut)
    if (cut_steps or over_memory) and verdict != "fails":
        verdict = INCOMPLETE
        reasons = ()
        if cut_steps:
            reasons += (
                f"the time limit passed before {len(cut_steps)} simulation step"
                f"{'s' if len(cut_steps) > 1 else ''} ran: {'; '.join(cut_steps)}",
            )
        if over_memory:
            reasons += (
                f"{len(over_memory)} simulation step{'s' if len(over_memory) > 1 else ''} not "
                f"run for memory (raise verify.memory_budget_gib on a machine that has it): "
                f"{'; '.join(over_memory)}",
            )
    return SimResult(
        collectives,
        links,
        failures,
        verdict,
        reasons,
        fractions,
        wall_s,
        tuple(cut_steps),
        hint_s,
        tuple(over_memory),
        tuple(dict.fromkeys(notes)),
        link_histogram,
        pl.DataFrame(together_rows, schema=TOGETHER_SCHEMA),
    )


def _together_rows(
    fabric: Fabric,
    group: Together,
    traffics: list[tuple[TrafficSpec, tr.Traffic]],
    routing: Routing,
    seed: int,
    scale_up: ScaleUp | None,
    deadline: Deadline,
) -> list[dict[str, Any]]:
    """One group of ``[verify]`` patterns alone and together (``planner.sim.concurrent``)."""
    scales = group.scales or [1.0] * len(group.traffic)
    members = [traffics[i] for i in group.traffic]
    got = run_together(
        fabric,
        [t for _, t in members],
        routing,
        seed=seed,
        scales=scales,
        scale_up=scale_up,
        deadline=deadline,
    )
    return [
        {
            "group": group.label,
            "pattern": spec.label,
            "routing": routing.value,
            "scale": scale,
            "alone_s": float(got.alone_s[k]),
            "together_s": float(got.together_s[k]),
            "slowdown": float(got.slowdown[k]),
            "group_s": got.phase_s,
        }
        for k, ((spec, _), scale) in enumerate(zip(members, scales, strict=True))
    ]


def _ideal_s(
    t: tr.Traffic,
    gpus: int,
    nic_gbps: tr.NicRate,
    scale_up: ScaleUp | None,
    fidelity: Fidelity | None,
    fabric: Fabric | None = None,
) -> float:
    """The traffic's ideal time: every GPU at its full rates, no contention, no routing.

    Without a domain: every byte at the NIC rate (``planner.sim.traffic.ideal_time_s``). With
    one: per phase the busier of the GPU's inter-domain bytes at its NIC rate and its scale-up
    bytes at the scale-up rate (``planner.sim.scale_up.ideal_time_s``). With packet fidelity the
    NIC part is at the transport's goodput: its overheads are no fault of the fabric; and a
    phase takes at least its slowest flow alone on the fabric (``lone_phase_s``): the path's
    latency is no fault of contention either, so a latency-bound collective is not judged slow
    for it. Every figure is a lower bound on the simulated time.
    """
    goodput = 1.0 if fidelity is None else 1.0 / fidelity.ideal_s(1.0, two_way_traffic(t))
    if fidelity is None or fabric is None:
        if scale_up is None:
            return tr.ideal_time_s(t, gpus, nic_gbps) / goodput
        return scale_up_ideal_time_s(t, scale_up, nic_gbps, goodput)
    total = 0.0
    for phase in t.phases:
        if phase.flows == 0:
            continue
        one = replace(t, phases=(phase,))
        if scale_up is None:
            bytes_s = tr.ideal_time_s(one, gpus, nic_gbps) / goodput
            out = phase
        else:
            bytes_s = scale_up_ideal_time_s(one, scale_up, nic_gbps, goodput)
            out = scale_up.split(phase).scale_out
        lone = lone_phase_s(fidelity, fabric, out, nic_gbps) * phase.repeat
        total += max(bytes_s, lone)
    return total


def group_paths(
    fabric: Fabric, traffic: tr.Traffic, scale_up: ScaleUp | None
) -> tuple[float, float] | None:
    """Share sent straight and mean group path of a traffic under an adaptive routing.

    Each phase's figures come with the weights its routing is set for (``Fabric.adapted``, the
    same call the runs make: an adaptive routing keeps what it computed for a phase, so this
    costs nothing more), weighted by the phase's bytes and repeats. None when the routing does
    not adapt or says nothing of its paths.
    """
    if fabric.adapt is None:
        return None
    volume = direct = mean = 0.0
    for whole in traffic.phases:
        phase = whole if scale_up is None else scale_up.split(whole).scale_out
        if not phase.flows:
            continue
        w = fabric.adapted(phase.src, phase.dst, phase.size_bytes).group_weights
        if w is None or w.direct_share is None or w.mean_path is None:
            continue
        v = float(phase.size_bytes.sum()) * whole.repeat
        volume += v
        direct += v * w.direct_share
        mean += v * w.mean_path
    return None if volume <= 0 else (direct / volume, mean / volume)


def lone_phase_s(
    fidelity: Fidelity, fabric: Fabric, phase: tr.Phase, nic_gbps: tr.NicRate
) -> float:
    """The slowest flow of a fabric phase alone on the fabric: latency + serialisation.

    max_f (latency_f + bytes_f x 8 / (NIC rate x goodput_f)), the packet model's completion time
    of flow f with the whole NIC to itself (the slower end's, when GPUs differ;
    ``Fidelity.times_s`` of its fluid time alone): a
    lower bound on the phase's simulated time, which can only add contention and queueing.
    """
    if phase.flows == 0:
        return 0.0
    if np.ndim(nic_gbps) == 0:
        rate = nic_gbps
    else:  # each flow at the slower of its two NICs
        rates = np.asarray(nic_gbps)
        rate = np.minimum(rates[phase.src], rates[phase.dst])
    alone = phase.size_bytes * BITS_PER_BYTE / (rate * 1e9)
    times = fidelity.times_s(fabric, phase.src, phase.dst, alone)
    return float(np.max(times))


def _tell_notes(progress: SimProgress, notes: list[str], told: int) -> int:
    """Pass the notes not yet told to ``progress``; returns how many have been told."""
    for note in notes[told:]:
        progress(note)
    return len(notes)


def _monte_carlo(
    fabric: Fabric,
    design: Design,
    verify: Verify,
    spec: TrafficSpec,
    t: tr.Traffic,
    routing: Routing,
    healthy_s: float,
    ideal: float,
    progress: SimProgress | None,
    run: RunTraffic,
    deadline: Deadline = NO_DEADLINE,
) -> list[dict[str, Any]]:
    """Trials of link failures drawn per plane from the media AFRs and the repair time.

    Trials start while ``deadline`` has not passed; fewer rows than trials means it did.
    ``ideal`` is the traffic's ideal time (``_ideal_s``).
    """
    rng = np.random.default_rng(verify.seed)
    rows: list[dict[str, Any]] = []
    for trial in range(verify.monte_carlo_trials):
        if deadline.expired:
            break
        per_plane = draw_failures(fabric, design, verify.mttr_hours, rng)
        worst, cut = healthy_s, 0
        for links in per_plane:
            if links.size:
                try:
                    total, _, c, _, _ = run(fabric, t, routing, verify.seed, Scenario("mc", links))
                except (DeadlineExpired, OverMemory):  # left out: fewer rows than trials
                    return rows
                worst, cut = max(worst, total), max(cut, c)
        n_failed = int(sum(x.size for x in per_plane))
        rows.append(
            failure_row(
                "monte_carlo", trial, n_failed, 0, spec, routing, worst, healthy_s, ideal, cut
            )
        )
        if progress:
            progress(
                f"Monte Carlo trial {trial + 1}/{verify.monte_carlo_trials}: {n_failed} links down"
            )
    return rows
