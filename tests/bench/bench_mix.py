"""Benchmark: a 16k-GPU cluster shared by many jobs (issue 36).

Part 1 times what a user waits for: ``fabric-planner mix INSTANCE`` (default time limit: every
family planned, the queue run by each policy, every running job's all-reduce simulated alone
and together under ECMP and spraying) as a fresh process, wall seconds and peak memory.

Part 2 plans the same mix through the API and prints, per family and policy, the GPUs
fragmentation takes, the running jobs' mean slowdown under each routing, the GPUs lost and the
totals, then the two choices: for the mix, and for one job (least network cost). The choice is
shown under each routing in turn pricing the slowdown.

    uv run --dev python tests/bench/bench_mix.py [--instance instances/mix-16k.toml]

Figures go in tests/bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from planner.loading import load_instance
from planner.mix.plan import MixPlan, design_rows, plan_mix
from tests.bench.bench_life import time_command

REPO = Path(__file__).resolve().parents[2]


def table(plan: MixPlan) -> str:
    """Markdown: per family and policy, fragmentation, slowdowns, lost GPUs, totals."""
    lines = [
        "| family | policy | network | fragmented GPUs (held, stranded) | waiting GPUs | "
        "running jobs | mean slowdown ECMP | mean slowdown spray | lost GPUs | total |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in plan.designs.iter_rows(named=True):
        spray = r["mean_slowdown_spray"]
        ecmp = r["mean_slowdown_ecmp"]
        lines.append(
            f"| {r['candidate']} | {r['policy']} | ${r['network_usd'] / 1e6:,.1f} M | "
            f"{r['fragmentation_gpus']:,.0f} ({r['internal_gpus']:,.0f}, "
            f"{r['stranded_gpus']:,.0f}) | {r['waiting_gpus']:,.0f} | {r['running_jobs']} | "
            f"{'-' if ecmp is None else f'{ecmp:.3f}'} | "
            f"{'-' if spray is None else f'{spray:.3f}'} | {r['lost_gpus']:,.0f} | "
            f"${r['total_usd'] / 1e6:,.1f} M |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", default=str(REPO / "instances" / "mix-16k.toml"))
    parser.add_argument("--skip-command", action="store_true", help="skip part 1")
    args = parser.parse_args()
    path = Path(args.instance)
    if not args.skip_command:
        wall, peak, status = time_command(path, "mix")
        print(f"fabric-planner mix {path.name}: {wall:.1f} s, {peak:,.0f} MiB, exit {status}")
    inst = load_instance(path)
    assert inst.jobs is not None
    plan = plan_mix(inst)
    print(f"{plan.sizes_gpus.size:,} jobs asking for {int(plan.sizes_gpus.sum()):,} GPUs\n")
    print(table(plan))
    print()
    for routing in inst.jobs.routings:
        priced = inst.with_changes(
            {"jobs.routings": [routing, *(r for r in inst.jobs.routings if r != routing)]}
        )
        rows = design_rows(priced, plan.candidates)
        mix = rows.filter("chosen_for_mix")["candidate"][0]
        one = rows.filter("chosen_for_one_job")["candidate"][0]
        print(f"slowdown priced under {routing}: for the mix {mix}, for one job {one}")


if __name__ == "__main__":
    main()
