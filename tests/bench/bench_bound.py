"""Benchmark: the optimal-routing bound (``max_concurrent_flow``, method "auto") at 1k-131k GPUs.

Run: ``uv run python tests/bench/bench_bound.py [--quick]``. Each case runs in its own process so
its peak memory (max RSS: imports, design, fabric, traffic and bound together) is measured alone.

Designs: the example instances' own (``instances/h100-1k``, ``b200-8k``, ``h100-32k``,
``cluster-131k``, solved as ``fabric-planner solve --no-verify`` would), ``ocs-65k`` with its
search pinned to the OCS direct-connect family, and tori of chips (``torus_fabric``, one GPU per
router, 400G links, 2.4T injection, as the ocs_torus family builds them) of 1k-131k chips.
Traffic: the simulator's own builders (``simulate.build_traffic``). Timed: the bound of every
phase of the traffic (what ``simulate.bound_time_s`` does), after the traffic is built.
``--quick`` runs only the 1k and 8k cases.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLOS = (("h100-1k", 1016), ("b200-8k", 8192), ("h100-32k", 32768), ("cluster-131k", 131_072))
OCS = (("ocs-65k", 65536),)
#: Torus shapes (chips = product), one GPU per router.
TORI = ((16, 8, 8), (32, 16, 16), (32, 32, 32), (64, 64, 32))
CLOS_TRAFFIC = ("random_permutation", "all_reduce_ring/dp", "all_to_all/groups-of-64", "incast")
OCS_TRAFFIC = ("random_permutation", "shift/4096", "all_reduce_ring/dp")
TORUS_TRAFFIC = ("random_permutation", "all_reduce_ring/dp", "shift/slab")


def spec_of(label: str, gpus: int, dims: tuple[int, ...] = ()) -> Any:
    """The TrafficSpec of a label."""
    from planner.schema.verify import TrafficSpec

    if label == "random_permutation":
        return TrafficSpec(kind="random_permutation", size_bytes=256 * 2**20)
    if label == "all_reduce_ring/dp":
        return TrafficSpec(kind="all_reduce_ring", size_bytes=2**30)
    if label == "all_to_all/groups-of-64":
        return TrafficSpec(
            kind="all_to_all", groups="consecutive", group_size=64, size_bytes=64 * 2**20
        )
    if label == "incast":
        return TrafficSpec(kind="incast", fan_in=64, size_bytes=64 * 2**20)
    if label == "shift/4096":
        return TrafficSpec(kind="shift", group_size=4096, size_bytes=256 * 2**20)
    if label == "shift/slab":  # one step along the slowest dimension: translation invariant
        return TrafficSpec(kind="shift", group_size=gpus // dims[-1], size_bytes=256 * 2**20)
    raise KeyError(label)


def design_of(name: str) -> Any:
    """The design ``fabric-planner solve --no-verify`` finds for an example instance."""
    from planner.api import load_instance, plan

    inst = load_instance(ROOT / "instances" / f"{name}.toml")
    if name == "ocs-65k":
        data = inst.model_dump(exclude_unset=True)
        data["search"]["families"] = ["ocs_direct"]
        inst = type(inst).model_validate(data)
    design = plan(inst, verify=False, alternatives=False).design
    assert design is not None
    return design


def one_case(kind: str, name: str, label: str) -> dict[str, Any]:
    """Build the fabric and traffic, then time the bound of every phase."""
    from planner.families import fabric_of
    from planner.families.torus.fabric import torus_fabric
    from planner.sim.bound import max_concurrent_flow
    from planner.sim.fabric import NodeKind
    from planner.sim.flow import BITS_PER_BYTE, GBPS
    from planner.sim.traffic_kinds import build_traffic

    if kind == "torus":
        dims = tuple(int(x) for x in name.split("x"))
        gpus = math.prod(dims)
        fabric = torus_fabric(
            gpus,
            1,
            dims,
            1,
            1,
            400.0,
            host_speed_gbps=2400.0,
            roles=("chip", "router"),
            switch_kind=NodeKind.ROUTER,
        )
        per_node = 4
    else:
        dims = ()
        design = design_of(name)
        fabric = fabric_of(design)
        per_node = design.gpus_per_node
    traffic = build_traffic(spec_of(label, fabric.gpus, dims), fabric.gpus, per_node, 1)
    started = time.perf_counter()
    results = []
    for phase in traffic.phases:
        demand = phase.size_bytes / fabric.planes * BITS_PER_BYTE / GBPS
        results.append(max_concurrent_flow(fabric, phase.src, phase.dst, demand))
    seconds = time.perf_counter() - started
    first = results[0]
    return {
        "gpus": fabric.gpus,
        "fabric": name,
        "traffic": label,
        "phases": len(traffic.phases),
        "flows": traffic.flows,
        "method": first.method,
        "exact": all(r.exact for r in results),
        "binding": first.binding,
        "variables": max((r.size.variables if r.size else 0) for r in results),
        "fraction_of_nic": first.fraction_of_nic,
        "seconds": seconds,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def cases(quick: bool) -> list[tuple[str, str, str]]:
    out = []
    for name, gpus in CLOS:
        if not quick or gpus <= 8192:
            out += [
                ("clos", name, t)
                for t in CLOS_TRAFFIC
                if not (t.startswith("all_to_all") and gpus % 64)  # groups must divide
            ]
    if not quick:
        out += [("ocs", name, t) for name, _ in OCS for t in OCS_TRAFFIC]
    for dims in TORI:
        if not quick or math.prod(dims) <= 8192:
            out += [("torus", "x".join(map(str, dims)), t) for t in TORUS_TRAFFIC]
    return out


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        print(json.dumps(one_case(sys.argv[2], sys.argv[3], sys.argv[4])))
        return
    quick = "--quick" in sys.argv
    print(
        "| GPUs | fabric | traffic | flows | method | exact | binding | LP variables | "
        "bound s | max RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, name, label in cases(quick):
        out = subprocess.run(
            [sys.executable, __file__, "--one", kind, name, label],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            print(f"| - | {name} | {label} | failed: {out.stderr.strip().splitlines()[-1]} |")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"| {r['gpus']:,} | {r['fabric']} | {r['traffic']} | {r['flows']:,} | {r['method']} | "
            f"{'yes' if r['exact'] else 'no'} | {r['binding']} | {r['variables']:,} | "
            f"{r['seconds']:.2f} | {r['max_rss_mb']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
