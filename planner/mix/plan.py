"""Plan for a job mix: each candidate design run with the mix, and the cheapest one chosen.

Candidates are each family of ``search.families`` planned for the cluster
(``planner.planning.plan``, verification off), at the instance's own ratio caps or at each of
``jobs.oversubscription``, and with the search's planes or each of ``jobs.planes``. On each,
every placement
policy runs the mix (``planner.mix.evaluate``). With v = the GPU-hour's value x the objective's
lifetime hours, the price of a candidate D is

    total(D) = network(D) + v min_policy lost_gpus(D, policy)

(network: the planner's objective, capex and energy; lost GPUs: fragmentation and the work
slowdowns take, under the first routing of ``jobs.routings``). The design for the mix is the
least total; the design for one job is the least network cost, what ``solve`` picks for the
cluster when it runs one job. The two differ when what the mix loses outweighs the difference
in network cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from planner.deadline import Deadline
from planner.design import Design
from planner.errors import InputError
from planner.families import fabric_of, family_of
from planner.mix import jobs_of
from planner.mix.evaluate import MixOutcome, evaluate_mix, sample_mix
from planner.planning import catalog_for, plan
from planner.schema.instance import DEFAULT_TIME_LIMIT_S, Instance
from planner.schema.jobs import Jobs
from planner.sim.fabric import IntArray

#: Columns of ``mix_designs``: one row per candidate and policy.
DESIGNS_SCHEMA: dict[str, Any] = {
    "candidate": pl.Utf8,
    "family": pl.Utf8,
    "ratio_caps": pl.Utf8,
    "planes": pl.Int64,
    "network_usd": pl.Float64,
    "policy": pl.Utf8,
    "used_gpus": pl.Float64,
    "utilisation": pl.Float64,
    "internal_gpus": pl.Float64,
    "stranded_gpus": pl.Float64,
    "fragmentation_gpus": pl.Float64,
    "waiting_gpus": pl.Float64,
    "running_jobs": pl.Int64,
    "mean_slowdown_ecmp": pl.Float64,
    "mean_slowdown_spray": pl.Float64,
    "slowed_gpus": pl.Float64,
    "lost_gpus": pl.Float64,
    "lost_value_usd": pl.Float64,
    "total_usd": pl.Float64,
    "best_policy": pl.Boolean,
    "chosen_for_mix": pl.Boolean,
    "chosen_for_one_job": pl.Boolean,
}
#: Columns of ``mix_jobs``: one row per candidate, policy and job running in the snapshot.
JOBS_SCHEMA: dict[str, Any] = {
    "candidate": pl.Utf8,
    "policy": pl.Utf8,
    "job": pl.Int64,
    "gpus": pl.Int64,
    "allocated_gpus": pl.Int64,
    "first_gpu": pl.Int64,
    "span": pl.Utf8,
    "routing": pl.Utf8,
    "alone_s": pl.Float64,
    "together_s": pl.Float64,
    "slowdown": pl.Float64,
}


@dataclass(frozen=True)
class Candidate:
    """One family planned at one ratio cap, and the mix run on it by each policy."""

    name: str
    family: str
    ratio_caps: str
    """The caps the candidate was planned at ('' for the instance's own)."""
    design: Design
    outcomes: dict[str, MixOutcome]
    """By policy."""


@dataclass(frozen=True)
class MixPlan:
    """The candidates, the mix, the tables and the two choices."""

    instance: Instance
    sizes_gpus: IntArray
    candidates: tuple[Candidate, ...]
    designs: pl.DataFrame
    jobs: pl.DataFrame
    chosen_for_mix: str
    chosen_for_one_job: str
    skipped: tuple[str, ...]
    """Candidates the planner found no design for, with why."""


def gpu_value_usd(inst: Instance) -> float:
    """v: a GPU lost for the cluster's life, the GPU-hour's value x the lifetime hours."""
    jobs = jobs_of(inst)
    price = jobs.gpu_usd_per_hour
    if price is None:
        assert inst.workload is not None  # the schema asks for one or the other
        price = inst.workload.gpu.price_usd_per_hour
    return price * inst.objective.lifetime_hours


def caps_text(caps: float | list[float]) -> str:
    """'2:1', or '1:1,2:1' per tier."""
    per = caps if isinstance(caps, list) else [caps]
    return ",".join(f"{c:g}:1" for c in per)


def _candidate_instances(inst: Instance, jobs: Jobs) -> list[tuple[str, str, str, Instance]]:
    """(name, family, ratio caps, instance) of every candidate."""
    caps: list[float | list[float] | None] = [None]
    if jobs.oversubscription:
        caps = list(jobs.oversubscription)
    planes: list[int | None] = [None]
    if jobs.planes:
        planes = list(jobs.planes)
    out: list[tuple[str, str, str, Instance]] = []
    for family in inst.search.families:
        for cap in caps:
            for p in planes:
                changes: dict[str, Any] = {}
                words = [family]
                if cap is not None:
                    changes["constraints.max_oversubscription"] = cap
                    words.append(caps_text(cap))
                if p is not None:
                    changes["search.pin.planes"] = p
                    words.append(f"{p} plane{'s' if p > 1 else ''}")
                sub = inst.with_families([family])
                if changes:
                    sub = sub.with_changes(changes)
                out.append((" ".join(words), family, "" if cap is None else caps_text(cap), sub))
    return out


def design_rows(inst: Instance, candidates: tuple[Candidate, ...]) -> pl.DataFrame:
    """``mix_designs`` with its totals and both choices (module docstring)."""
    jobs = jobs_of(inst)
    priced = jobs.routings[0]
    value = gpu_value_usd(inst)
    rows = []
    for c in candidates:
        for policy, o in c.outcomes.items():
            q = o.queue
            lost = o.lost_gpus(priced)
            rows.append(
                {
                    "candidate": c.name,
                    "family": c.family,
                    "ratio_caps": c.ratio_caps,
                    "planes": c.design.planes,
                    "network_usd": c.design.objective_usd,
                    "policy": policy,
                    "used_gpus": q.used_gpus,
                    "utilisation": q.utilisation,
                    "internal_gpus": q.internal_gpus,
                    "stranded_gpus": q.stranded_gpus,
                    "fragmentation_gpus": q.fragmentation_gpus,
                    "waiting_gpus": q.waiting_gpus,
                    "running_jobs": len(o.running_jobs),
                    "mean_slowdown_ecmp": o.mean_slowdown("ecmp") if "ecmp" in o.runs else None,
                    "mean_slowdown_spray": o.mean_slowdown("spray") if "spray" in o.runs else None,
                    "slowed_gpus": o.slowed_gpus(priced),
                    "lost_gpus": lost,
                    "lost_value_usd": lost * value,
                    "total_usd": c.design.objective_usd + lost * value,
                }
            )
    best: dict[Any, dict[str, Any]] = {}
    for r in rows:  # a candidate's best policy: the least total, the first listed on a tie
        if r["candidate"] not in best or r["total_usd"] < best[r["candidate"]]["total_usd"]:
            best[r["candidate"]] = r
    mix = min(best.values(), key=lambda r: r["total_usd"])["candidate"]
    one = min(best.values(), key=lambda r: r["network_usd"])["candidate"]
    for r in rows:
        r["best_policy"] = best[r["candidate"]] is r
        r["chosen_for_mix"] = r["best_policy"] and r["candidate"] == mix
        r["chosen_for_one_job"] = r["candidate"] == one
    table = pl.DataFrame(rows, schema=DESIGNS_SCHEMA)
    return table.select(list(DESIGNS_SCHEMA))


def job_rows(candidates: tuple[Candidate, ...]) -> pl.DataFrame:
    """``mix_jobs``: every running job of each snapshot, its place and its slowdown."""
    frames = []
    for c in candidates:
        for policy, o in c.outcomes.items():
            snap, names = o.queue.snapshot, o.locality.hierarchy.names
            jobs = o.running_jobs
            order = np.argsort(snap.job_of_gpu, kind="stable")
            first = order[np.searchsorted(snap.job_of_gpu[order], jobs)]
            for routing, run in o.runs.items():
                frames.append(
                    pl.DataFrame(
                        {
                            "candidate": c.name,
                            "policy": policy,
                            "job": jobs,
                            "gpus": snap.sizes_gpus[jobs],
                            "allocated_gpus": snap.allocated_gpus[jobs],
                            "first_gpu": first,
                            "span": [names[int(k)] for k in snap.span_level[jobs]],
                            "routing": routing,
                            "alone_s": run.alone_s,
                            "together_s": run.together_s,
                            "slowdown": run.slowdown,
                        },
                        schema=JOBS_SCHEMA,
                    )
                )
    return pl.concat(frames) if frames else pl.DataFrame(schema=JOBS_SCHEMA)


def plan_mix(
    inst: Instance,
    *,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    deadline: Deadline | None = None,
    plan_candidate: Callable[[Instance], Design | str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> MixPlan:
    """Plan each candidate, run the mix on it by each policy, and choose (module docstring).

    ``plan_candidate`` (tests) replaces the planner: a design, or why there is none.
    ``progress`` is told, a line each, when a candidate is planned and when a policy has run.
    """
    tell = progress or (lambda _: None)
    jobs = jobs_of(inst)
    deadline = deadline or Deadline.after(time_limit_s)
    catalog = catalog_for(inst)
    sizes = sample_mix(jobs, inst.cluster.gpus)

    def planned(sub: Instance) -> Design | str:
        share = deadline.remaining_s()
        try:
            found = plan(sub, catalog=catalog, time_limit_s=share, alternatives=False, verify=False)
        except InputError as exc:  # a candidate the instance cannot take (planes, ports)
            return str(exc)
        if found.design is None:
            return found.explanation[0] if found.explanation else "no design found"
        return found.design

    planner = plan_candidate or planned
    candidates, skipped = [], []
    for name, family, caps, sub in _candidate_instances(inst, jobs):
        design = planner(sub)
        if isinstance(design, str):
            skipped.append(f"{name}: {design}")
            tell(f"{name}: no design ({design})")
            continue
        tell(f"{name}: planned, network ${design.objective_usd:,.0f}")
        fabric = fabric_of(design)
        fam = family_of(design.family)
        outcomes: dict[str, MixOutcome] = {}
        for p in jobs.policies:
            o = evaluate_mix(design, fam, fabric, sizes.tolist(), jobs, p, deadline=deadline)
            outcomes[p] = o
            tell(
                f"{name}, {p}: {o.queue.fragmentation_gpus:,.0f} GPUs fragmented, "
                f"{len(o.running_jobs):,} running jobs simulated together"
            )
        candidates.append(Candidate(name, family, caps, design, outcomes))
    if not candidates:
        raise InputError("jobs: no candidate has a design: " + "; ".join(skipped))
    cands = tuple(candidates)
    designs = design_rows(inst, cands)
    mix = designs.filter("chosen_for_mix")["candidate"][0]
    one = designs.filter("chosen_for_one_job")["candidate"][0]
    return MixPlan(inst, sizes, cands, designs, job_rows(cands), mix, one, tuple(skipped))
