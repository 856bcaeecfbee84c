"""Benchmark: a cluster's whole life planned, and what makes the OCS-vs-Clos ratios (issue 35).

Part 1 times what a user waits for: ``fabric-planner life INSTANCE`` (default time limit,
every phase validated and simulated) as a fresh process, wall seconds and peak memory.

Part 2 plans the same life through the API and sets its ratios (OCS direct-connect over the
electrical Clos: capex over the life, power at the end) beside Jupiter's published 0.70 and 0.59
(Poutievski et al., SIGCOMM 2022), then changes one premise at a time, each re-solved by the
growth model (``models.layer_growth``) from the same planned blocks:

* *as planned*: the instance as written (the planner chooses build-ahead, add-later, refresh);
* *above the leaves*: the GPU links and the leaf tier left out of both (they are the same in
  both fabrics; Jupiter's figures compare the fabric above its top-of-rack switches);
* *spine blocks*: the Clos's top layer built of two-stage spine blocks (three switch chips per
  external port instead of one, as a block of merchant chips is built), price and power x 3;
* *spine built for the end on day one*: the Clos's top layer of each generation bought for the
  full cluster when that generation arrives (no add-later), as a spine sized up front is.

    uv run --dev python tests/bench/bench_life.py [--instance instances/jupiter-life-65k.toml]

Figures go in tests/bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from models import layer_growth as lg
from planner.design import Design
from planner.life import FamilyLife, plan_life
from planner.life.plan import growth_problem
from planner.loading import load_instance
from planner.schema.instance import Instance

REPO = Path(__file__).resolve().parents[2]
#: Jupiter's published ratios of direct-connect over a Clos with a spine layer.
PUBLISHED = {"capex": 0.70, "power": 0.59}


def time_command(instance: Path, command: str = "life") -> tuple[float, float, int]:
    """(wall seconds, peak MiB, exit status) of ``fabric-planner COMMAND`` as a fresh process."""
    script = Path(sys.executable).with_name("fabric-planner")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        done = subprocess.run(
            [str(script), command, str(instance), "-o", str(Path(tmp) / "out")],
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if done.returncode:
        print(done.stderr, file=sys.stderr)
    return wall, peak_mib, done.returncode


def gpu_side(d: Design) -> tuple[float, float]:
    """Capex and power of one block's GPU links and leaf switches (the same in both fabrics)."""
    leaf = d.tiers[0]
    blocks = d.pods if d.num_tiers == 3 else d.tiers[-2].switches
    links = d.link_classes[0].groups
    usd = leaf.switches * leaf.unit_cost_usd + sum(
        g.links * (g.pluggable_ends * g.end_cost_usd + g.cable_cost_usd) for g in links
    )
    watts = leaf.switches * leaf.unit_power_w + sum(
        g.links * g.pluggable_ends * g.end_power_w for g in links
    )
    return usd / blocks, watts / blocks


def one_life(
    inst: Instance, family: FamilyLife, above_leaves: bool, spine_x: float, up_front: bool
) -> tuple[float, float]:
    """(capex over the life, power at the end) of one family's life under the premises."""
    ocs = family.designs[0] is not None and family.designs[0].tiers[-1].ocs
    shapes = {}
    for gen, shape in family.shapes.items():
        usd, watts = gpu_side(family.finals[gen]) if above_leaves else (0.0, 0.0)
        x = 1.0 if ocs else spine_x
        shapes[gen] = replace(
            shape,
            block_usd=shape.block_usd - usd,
            block_w=shape.block_w - watts,
            top_usd=shape.top_usd * x,
            top_w=shape.top_w * x,
        )
    problem, _ = growth_problem(inst, shapes, ocs=ocs)
    growth = lg.solve(problem)
    if up_front and not ocs:
        last = len(problem.phases) - 1
        states = []
        for s in growth.states:
            option = problem.option(last, s.generation) or problem.phases[last].options[-1]
            size = min(m for m in problem.sizes if problem.fits(last, m, option))
            states.append(lg.State(size, s.generation))
        growth = lg.cost_of(problem, tuple(states))
    return sum(p.capex_usd for p in growth.phases), growth.phases[-1].power_w


#: The premises, each with (above the leaves, spine price and power factor, built up front).
PREMISES = {
    "as planned": (False, 1.0, False),
    "above the leaves": (True, 1.0, False),
    "above the leaves, spine blocks": (True, 3.0, False),
    "above the leaves, spine blocks, spine built for the end": (True, 3.0, True),
}


def premises(instance: Path) -> list[tuple[str, float, float]]:
    """(premise, capex ratio over the life, power ratio at the end) for each premise."""
    inst = load_instance(instance)
    plan = plan_life(inst, time_limit_s=120)
    clos, ocs = plan.families["clos"], plan.families["ocs_direct"]
    rows = []
    for name, (above, x, up_front) in PREMISES.items():
        c_usd, c_w = one_life(inst, clos, above, x, up_front)
        o_usd, o_w = one_life(inst, ocs, above, x, up_front)
        rows.append((name, o_usd / c_usd, o_w / c_w))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", type=Path, default=REPO / "instances/jupiter-life-65k.toml")
    parser.add_argument("--skip-command", action="store_true", help="only the premises")
    args = parser.parse_args()
    if not args.skip_command:
        wall, peak, status = time_command(args.instance)
        name = args.instance.name
        print(f"fabric-planner life {name}: {wall:.1f} s, {peak:,.0f} MiB, exit {status}")
    print("| premise | capex ratio (OCS / Clos) | power ratio at the end |")
    print("|---|---:|---:|")
    for name, capex, power in premises(args.instance):
        print(f"| {name} | {capex:.2f} | {power:.2f} |")
    print(f"| published (Jupiter) | {PUBLISHED['capex']:.2f} | {PUBLISHED['power']:.2f} |")


if __name__ == "__main__":
    main()
