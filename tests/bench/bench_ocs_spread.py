"""Benchmark: circuits spread over the spines of OCS direct-connect designs.

Run: ``uv run python tests/bench/bench_ocs_spread.py``. For each size: plan an ``ocs_direct``
design (uniform circuits), engineer circuits for a block shift (block b sends to block b + 1),
and simulate that shift under spraying on both. Prints the simulated fraction of ideal, the upper
bound of the topology (A floor(x / A) / GPUs per block over the shifted pairs, A spines per
block), the pairs whose circuits differ by more than one between two spines, and the time to
engineer and place the circuits. With an even spread the fraction equals the bound.
"""

from __future__ import annotations

import time

import numpy as np

from planner.api import plan
from planner.design import Design
from planner.families import fabric_of
from planner.families.ocs_direct import circuits as ocs
from planner.schema.instance import Instance
from planner.schema.verify import TrafficSpec, Verify
from planner.sim.simulate import simulate

SIZES = (2048, 4096, 8192, 16384)


def instance(gpus: int) -> Instance:
    return Instance.model_validate(
        {
            "name": f"ocs-{gpus}",
            "cluster": {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["ocs_direct"]},
        }
    )


def shift_fraction(d: Design) -> float:
    spec = TrafficSpec(kind="shift", group_size=d.gpus // d.pods, size_bytes=2**26)
    verify = Verify(
        traffic=[spec], routing=["spray"], single_switch_failures=False, bound_max_variables=0
    )
    return float(simulate(d, verify, fabric=fabric_of(d)).collectives["fraction_of_ideal"][0])


def bound(d: Design) -> float:
    spines = d.tiers[0].fanout
    pairs: dict[tuple[int, int], int] = {}
    for a, b, _, k in d.circuits:
        pairs[a, b] = pairs.get((a, b), 0) + k
    per_block = d.gpus // d.pods
    worst = min(
        pairs.get((min(b, (b + 1) % d.pods), max(b, (b + 1) % d.pods)), 0) for b in range(d.pods)
    )
    return min(1.0, spines * (worst // spines) / per_block)


def uneven(d: Design) -> int:
    f2 = d.tiers[1].fanout
    spines = d.tiers[2].switches // f2
    per: dict[tuple[int, int], list[int]] = {}
    for a, b, o, k in d.circuits:
        per.setdefault((a, b), [0] * spines)[o // f2] += k
    return sum(1 for counts in per.values() if max(counts) - min(counts) > 1)


def main() -> None:
    print(
        f"{'GPUs':>7} {'blocks':>6} {'spines':>6}  {'circuits':<10} {'shift':>7} {'bound':>7}"
        f" {'uneven':>7} {'place s':>8}"
    )
    for gpus in SIZES:
        design = plan(instance(gpus), verify=False, alternatives=False).design
        assert design is not None
        start = time.perf_counter()
        mesh = ocs.with_circuits(design, ocs.engineer(design).circuits)
        mesh_s = time.perf_counter() - start
        per_block = design.gpus // design.pods
        src = np.arange(design.gpus)
        demand = ocs.block_demand(design, src, (src + per_block) % design.gpus)
        start = time.perf_counter()
        shifted = ocs.with_circuits(design, ocs.engineer(design, demand).circuits)
        shift_s = time.perf_counter() - start
        for name, d, wall in (("uniform", mesh, mesh_s), ("shift", shifted, shift_s)):
            print(
                f"{gpus:>7,} {d.pods:>6} {d.tiers[0].fanout:>6}  {name:<10}"
                f" {shift_fraction(d):>7.4f} {bound(d):>7.4f} {uneven(d):>7} {wall:>8.2f}"
            )


if __name__ == "__main__":
    main()
