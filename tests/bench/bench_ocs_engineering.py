"""Benchmark: OCS circuits engineered for a traffic, simulated on that traffic (issue 9).

Run: ``uv run python tests/bench/bench_ocs_engineering.py [gpus ...]`` (default 4,096 and 16,384;
about a minute on 2 cores). Figures are printed as a Markdown table, never asserted; not collected
by pytest. ``tests/bench/RESULTS_ocs_engineering.md`` holds the committed figures.

For each size and traffic (a random permutation, and a shift of one block, ``group_size`` = GPUs
per block), the instance is ``instances/ocs-65k.toml`` at that size with ``ocs_direct`` only and
that one traffic in ``[verify]``, routed by spraying. Two designs, both through ``plan``: the
uniform mesh (``search.ocs_demand = "uniform"``) and the circuits engineered for the traffic
(``search.ocs_demand = "verify"``). For each: the model's predicted fraction of ideal
(``planner.families.ocs_direct.circuits.throughput_fraction``: direct paths, spine granularity, demand scaled by what the
blocks inject) and the simulated one (healthy fabric, spray). Acceptance: engineered >= uniform
when simulated, and predicted within 5 % of simulated.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from planner.api import load_instance, plan, verify_demand
from planner.design import Design
from planner.families import fabric_of
from planner.families.ocs_direct import circuits as ocs
from planner.schema.instance import Instance
from planner.sim.simulate import simulate

SIZES = (4096, 16384)
TRAFFICS = ("random_permutation", "shift")
SIZE_BYTES = 2**28
#: Acceptance: the model's prediction within this share of the simulated fraction.
PREDICTION_RTOL = 0.05
INSTANCE = Path(__file__).parents[2] / "instances" / "ocs-65k.toml"


def variant(gpus: int, kind: str, circuits_for: str, block_gpus: int) -> Instance:
    """ocs-65k at this size, direct-connect only, routed over direct circuits (the model this
    bench measures), one traffic under spraying."""
    spec: dict[str, object] = {"kind": kind, "size_bytes": SIZE_BYTES}
    if kind == "shift":
        spec["group_size"] = block_gpus
    return load_instance(INSTANCE).with_changes(
        {
            "cluster.gpus": gpus,
            "search.families": ["ocs_direct"],
            "search.ocs_demand": circuits_for,
            "search.ocs_routing": "direct",
            "verify.traffic": [spec],
            "verify.routing": ["spray"],
            "verify.single_switch_failures": False,
        }
    )


def planned(inst: Instance) -> tuple[Design, float]:
    start = time.perf_counter()
    d = plan(inst, verify=False, alternatives=False).design
    assert d is not None
    return d, time.perf_counter() - start


def main() -> int:
    sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
    print(
        "| GPUs | blocks | spines | traffic | circuits | predicted | simulated | pred/sim "
        "| plan+engineer s | sim s |"
    )
    print("|---:|---:|---:|---|---|---:|---:|---:|---:|---:|")
    ok = True
    for gpus in sizes:
        probe, _ = planned(variant(gpus, "random_permutation", "uniform", 1))
        block_gpus = probe.gpus // probe.pods
        spines = ocs.layer_of(probe).spines
        for kind in TRAFFICS:
            simulated: dict[str, float] = {}
            for circuits_for in ("uniform", "verify"):
                inst = variant(gpus, kind, circuits_for, block_gpus)
                d, plan_s = planned(inst)
                demand = verify_demand(d, inst.verify)
                predicted = ocs.throughput_fraction(d, demand)
                start = time.perf_counter()
                sim = simulate(d, inst.verify, fabric=fabric_of(d))
                sim_s = time.perf_counter() - start
                fraction = float(sim.collectives["fraction_of_ideal"][0])
                simulated[circuits_for] = fraction
                ok &= abs(predicted - fraction) <= PREDICTION_RTOL * fraction
                name = "uniform mesh" if circuits_for == "uniform" else "engineered"
                print(
                    f"| {gpus:,} | {d.pods} | {spines} | {kind} | {name} | {predicted:.4f} "
                    f"| {fraction:.4f} | {predicted / fraction:.4f} | {plan_s:.1f} "
                    f"| {sim_s:.1f} |",
                    flush=True,
                )
            ok &= simulated["verify"] >= simulated["uniform"] * (1 - 1e-9)
    print()
    print(f"acceptance (engineered >= uniform, |pred - sim| <= 5 %): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
