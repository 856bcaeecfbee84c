"""The files of a planned job mix: per design, per job, a picture on the floor plan, ``mix.md``.

* ``mix_designs``: per candidate and policy, the queue's GPUs (used, held beyond sizes,
  stranded, waiting), the running jobs' mean slowdown per routing, the GPUs lost and their
  value, the total, and the two choices (``planner.mix.plan``);
* ``mix_jobs``: per candidate, policy and routing, each job running in the snapshot, where it
  sits (first GPU, the domain level it spans) and its all-reduce alone, together and slowed;
* ``fig_mix_placement``: the design chosen for the mix, its snapshot by each policy on the
  floor plan (``planner.report.pictures.mix``);
* ``mix.md``: the choices, the designs table and the mix's source.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

from planner.mix.plan import MixPlan, gpu_value_usd
from planner.output import Writer, bytes_writer, table_writers, text_writer, write_set
from planner.report.markdown import markdown_table
from planner.report.pictures import file_name
from planner.report.pictures import mix as mix_picture

#: Name of the picture (``fig_mix_placement.png`` and ``.svg``).
PICTURE = "mix_placement"
#: Beginnings of the names of the files a mix writes (and replaces).
OWN = ("mix_", f"fig_{PICTURE}.", "mix.md")
#: Columns ``mix.md`` shows of ``mix_designs``.
SHOWN = (
    "candidate",
    "policy",
    "network_usd",
    "fragmentation_gpus",
    "waiting_gpus",
    "mean_slowdown_ecmp",
    "mean_slowdown_spray",
    "lost_gpus",
    "total_usd",
    "chosen_for_mix",
    "chosen_for_one_job",
)


def panels(plan: MixPlan) -> list[mix_picture.Panel]:
    """The chosen-for-mix candidate's snapshot by each policy."""
    cand = next(c for c in plan.candidates if c.name == plan.chosen_for_mix)
    priced = plan.instance.jobs.routings[0] if plan.instance.jobs else "ecmp"
    out = []
    for policy, o in cand.outcomes.items():
        snap = o.queue.snapshot
        jobs = snap.job_of_gpu
        held = np.zeros(jobs.size, dtype=bool)
        busy = np.flatnonzero(jobs >= 0)
        order = busy[np.argsort(jobs[busy], kind="stable")]
        starts = np.searchsorted(jobs[order], np.unique(jobs[order]))
        for j, lo in zip(np.unique(jobs[order]).tolist(), starts.tolist(), strict=True):
            size, alloc = int(snap.sizes_gpus[j]), int(snap.allocated_gpus[j])
            held[order[lo + size : lo + alloc]] = True
        title = (
            f"{policy}: {o.queue.fragmentation_gpus:,.0f} GPUs fragmented, "
            f"mean slowdown {o.mean_slowdown(priced):.2f} ({priced})"
        )
        out.append(mix_picture.Panel(title, jobs, held))
    return out


def mix_markdown(plan: MixPlan) -> str:
    """``mix.md``: the instance, the two choices, the designs and where the mix comes from."""
    inst, jobs = plan.instance, plan.instance.jobs
    assert jobs is not None
    sizes = plan.sizes_gpus
    lines = [
        f"# {inst.name}: a cluster shared by many jobs",
        "",
        f"{sizes.size:,} jobs asking for {int(sizes.sum()):,} GPUs in all, on "
        f"{inst.cluster.gpus:,} GPUs, run through one queue (first come, first served) by "
        f"{', '.join(jobs.policies)}; each running job's all-reduce of "
        f"{jobs.all_reduce_bytes / 2**30:g} GiB simulated alone and beside the others "
        f"({', '.join(jobs.routings)}; the first prices the slowdown). A lost GPU is worth "
        f"${gpu_value_usd(inst):,.0f} over the life.",
        "",
        f"- Chosen for the mix: **{plan.chosen_for_mix}**.",
        f"- Chosen for one job (least network cost): **{plan.chosen_for_one_job}**.",
        "",
        "## Designs",
        "",
        markdown_table(plan.designs.select(SHOWN)),
        "",
    ]
    if plan.skipped:
        lines += ["Not planned: " + "; ".join(plan.skipped) + ".", ""]
    if jobs.source:
        lines += ["## The mix", "", " ".join(jobs.source.split()), ""]
    return "\n".join(lines)


def mix_files(plan: MixPlan) -> dict[str, Writer]:
    """Every file of the set (module docstring)."""
    inst = plan.instance
    files: dict[str, Writer] = {}
    files.update(table_writers("mix_designs", plan.designs))
    files.update(table_writers("mix_jobs", plan.jobs))
    floor = mix_picture.Floor(
        inst.cluster.gpus_per_node, inst.layout.nodes_per_rack, inst.layout.racks_per_row
    )
    drawn = mix_picture.figure(
        panels(plan), floor, f"{plan.chosen_for_mix}: jobs halfway through the queue"
    )
    if drawn is not None:
        files[file_name(PICTURE, "png")] = bytes_writer(drawn[0])
        files[file_name(PICTURE, "svg")] = bytes_writer(drawn[1])
    files["mix.md"] = text_writer(mix_markdown(plan))
    return files


def write_mix(
    plan: MixPlan, outdir: Path, *, force: bool = False, formats: Collection[str] | None = None
) -> list[Path]:
    """Write the mix's files into ``outdir``'s set, replacing an earlier mix's (others stay)."""
    return write_set(
        Path(outdir),
        mix_files(plan),
        force=force,
        command="mix",
        carry=lambda name: not name.startswith(OWN),
        formats=formats,
    )
