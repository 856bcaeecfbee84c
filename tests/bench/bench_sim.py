"""Benchmark: the flow simulator on Clos fabrics from 1k to 131k GPUs.

Run: ``uv run python tests/bench/bench_sim.py [max_gpus]``. Each case runs in its own process so
its peak memory (max RSS) is measured alone. Cases (issue 3): expert-parallel all-to-all in
groups of 64 and data-parallel ring all-reduce across all nodes, each under ECMP and spraying,
on a 3-tier non-blocking Clos. Target at 131,072 GPUs: <= 60 s and <= 8 GiB per case, 2 cores.

``uv run python tests/bench/bench_sim.py --torus`` runs the torus cases instead (issue 10): a
random permutation and all-to-all in groups of 64 under dimension-order ECMP and spraying, on
3-D tori of switches (``TORUS_SHAPES``: dims, GPUs per switch) with 400G torus links and 800G
injection, timing routing plus completion times (``run_traffic``), without the bound.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time

SIZES = (1024, 8192, 32768, 131_072)
CASES = (
    ("ep_all_to_all_64", "ecmp"),
    ("ep_all_to_all_64", "spray"),
    ("dp_ring_all_reduce", "ecmp"),
    ("dp_ring_all_reduce", "spray"),
)


def one_case(gpus: int, pattern: str, routing: str) -> dict[str, float]:
    """Plan a 3-tier Clos for ``gpus``, then simulate one traffic under one routing."""
    from planner.api import plan, simulate
    from planner.schema.instance import Instance
    from planner.schema.verify import TrafficSpec, Verify

    inst = Instance.model_validate(
        {
            "name": f"bench-{gpus}",
            "cluster": {"gpus": gpus, "nic_gbps": 400},
            "constraints": {"survive": {"min_bandwidth_fraction": 0.75}},
            "search": {"pin": {"tiers": 3, "planes": 1}},
        }
    )
    design = plan(inst, alternatives=False, verify=False).design
    assert design is not None
    if pattern == "ep_all_to_all_64":
        spec = TrafficSpec(
            kind="all_to_all", groups="consecutive", group_size=64, size_bytes=64 * 2**20
        )
    else:
        spec = TrafficSpec(kind="all_reduce_ring", groups="data_parallel", size_bytes=2**30)
    verify = Verify(
        routing=[routing],
        verdict_routing=routing,
        traffic=[spec],
        single_switch_failures=False,
        bound_max_variables=0,
    )
    start = time.perf_counter()
    sim = simulate(design, verify)
    wall = time.perf_counter() - start
    row = sim.collectives.row(0, named=True)
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux
    return {
        "wall_s": wall,
        "peak_gib": peak_gib,
        "flows": row["flows"],
        "fraction_of_ideal": row["fraction_of_ideal"],
    }


#: (dims, GPUs per switch) of the torus cases.
TORUS_SHAPES = (((8, 8, 8), 1), ((16, 16, 16), 1), ((16, 16, 16), 4))
TORUS_CASES = tuple((t, r) for t in ("permutation", "ep_all_to_all_64") for r in ("ecmp", "spray"))


def torus_case(shape: int, pattern: str, routing: str) -> dict[str, float]:
    """Simulate one traffic on one torus of ``TORUS_SHAPES`` under one routing."""
    from planner.families.torus.fabric import torus_fabric
    from planner.sim import collectives, gpu_groups, traffic_patterns
    from planner.sim import traffic as tr
    from planner.sim.phase_runs import run_traffic
    from planner.sim.routing import Routing

    dims, per_switch = TORUS_SHAPES[shape]
    gpus = math.prod(dims) * per_switch
    fabric = torus_fabric(gpus, 1, dims, per_switch, 1, 400.0, host_speed_gbps=800.0)
    if pattern == "permutation":
        t = traffic_patterns.random_permutation(gpus, 64 * 2**20, seed=0)
    else:
        t = collectives.all_to_all(gpu_groups.consecutive_groups(gpus, 64), 64 * 2**20)
    start = time.perf_counter()
    total, *_ = run_traffic(fabric, t, Routing(routing), 0)
    wall = time.perf_counter() - start
    ideal = tr.ideal_time_s(t, gpus, fabric.nic_speed_gbps)
    return {
        "wall_s": wall,
        "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        "flows": t.flows,
        "fraction_of_ideal": ideal / total,
    }


def torus_main() -> int:
    print(
        f"{'torus':>14} {'GPUs':>7} {'traffic':>17} {'routing':>7} {'flows':>9} {'wall s':>7}"
        f" {'peak GiB':>9} {'of ideal':>9}"
    )
    for shape, (dims, per_switch) in enumerate(TORUS_SHAPES):
        for pattern, routing in TORUS_CASES:
            proc = subprocess.run(
                [sys.executable, __file__, "--torus-case", str(shape), pattern, routing],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            gpus = math.prod(dims) * per_switch
            name = "x".join(map(str, dims)) + f" g{per_switch}"
            print(
                f"{name:>14} {gpus:>7,} {pattern:>17} {routing:>7} {r['flows']:>9,}"
                f" {r['wall_s']:>7.1f} {r['peak_gib']:>9.2f} {r['fraction_of_ideal']:>9.3f}",
                flush=True,
            )
    return 0


def main() -> int:
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else SIZES[-1]
    print(
        f"{'GPUs':>8} {'traffic':>20} {'routing':>7} {'flows':>10} {'wall s':>8} {'peak GiB':>9} {'of ideal':>9}"
    )
    for gpus in (g for g in SIZES if g <= limit):
        for pattern, routing in CASES:
            proc = subprocess.run(
                [sys.executable, __file__, "--case", str(gpus), pattern, routing],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(
                f"{gpus:>8,} {pattern:>20} {routing:>7} {r['flows']:>10,} {r['wall_s']:>8.1f}"
                f" {r['peak_gib']:>9.2f} {r['fraction_of_ideal']:>9.3f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--case":
        print(json.dumps(one_case(int(sys.argv[2]), sys.argv[3], sys.argv[4])))
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--torus-case":
        print(json.dumps(torus_case(int(sys.argv[2]), sys.argv[3], sys.argv[4])))
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--torus":
        sys.exit(torus_main())
    sys.exit(main())
