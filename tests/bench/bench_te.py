"""Benchmark: the OCS traffic-engineering LP (``models.ocs_te``) at 64, 128 and 256 blocks.

Run: ``uv run --dev python tests/bench/bench_te.py [--blocks 64 128 256] [--time-limit-s 60]``.
Timings are reported, never asserted; not collected by pytest.

Clusters: 65,536 GPUs in 64 blocks of 1,024; 1,048,576 GPUs in 128 blocks of 8,192 and in 256
blocks of 4,096. A GPU sends at ``--gpu-gbps`` and a circuit carries ``--circuit-gbps`` each way.
Demand (block to block, traffic inside a block dropped):
    permutation  every GPU sends to one GPU, a random permutation of all GPUs;
    all-to-all   every GPU sends evenly to every other GPU.
Circuits, k = floor(GPUs per block x gpu_gbps / circuit_gbps / (n - 1)) per pair, so a block's
circuits carry about what its GPUs send:
    mesh         k circuits between every pair (16 at 64 and 256 blocks, 64 at 128);
    mesh1+extra  1 circuit between every pair plus (k - 1)(n - 1) more per block, laid as random
                 perfect matchings: uneven pairs, so traffic engineering has work to do.
Columns are the transit columns in the final master (of n (n - 1)(n - 2) possible).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from models.ocs_te import TeProblem, build, solve

CLUSTERS = {64: 1024, 128: 8192, 256: 4096}


def permutation_demand(
    n: int, per_block: int, gpu_gbps: float, rng: np.random.Generator
) -> np.ndarray:
    gpus = n * per_block
    dest = rng.permutation(gpus) // per_block
    src = np.arange(gpus) // per_block
    d = np.bincount(src * n + dest, minlength=n * n).reshape(n, n).astype(float) * gpu_gbps
    np.fill_diagonal(d, 0.0)
    return d


def all_to_all_demand(n: int, per_block: int, gpu_gbps: float) -> np.ndarray:
    gpus = n * per_block
    d = np.full((n, n), per_block * per_block * gpu_gbps / (gpus - 1))
    np.fill_diagonal(d, 0.0)
    return d


def mesh(n: int, k: int) -> np.ndarray:
    return k * (np.ones((n, n), dtype=np.int64) - np.eye(n, dtype=np.int64))


def mesh_plus_extra(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    x = mesh(n, 1)
    for _ in range((k - 1) * (n - 1)):
        order = rng.permutation(n)
        a, b = order[0::2], order[1::2]
        x[a, b] += 1
        x[b, a] += 1
    return x


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--blocks", type=int, nargs="+", default=[64, 128, 256], choices=sorted(CLUSTERS)
    )
    parser.add_argument("--time-limit-s", type=float, default=60.0)
    parser.add_argument("--gpu-gbps", type=float, default=400.0)
    parser.add_argument("--circuit-gbps", type=float, default=400.0)
    parser.add_argument("--hedge-gbps", type=float, default=0.0, help="h (default 0: no hedge)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(
        "| blocks | demand | circuits | columns | u | lower bound | direct share | mean block hops "
        "| status | rounds | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in args.blocks:
        per_block = CLUSTERS[n]
        k = math.floor(per_block * args.gpu_gbps / args.circuit_gbps / (n - 1))
        demands = {
            "permutation": permutation_demand(n, per_block, args.gpu_gbps, rng),
            "all-to-all": all_to_all_demand(n, per_block, args.gpu_gbps),
        }
        circuits = {f"mesh {k}": mesh(n, k), f"mesh 1 + extra to {k}": mesh_plus_extra(n, k, rng)}
        for dname, d in demands.items():
            for cname, x in circuits.items():
                start = time.perf_counter()
                problem = TeProblem(x, d, args.circuit_gbps, args.hedge_gbps)
                result = solve(build(problem), deadline=start + args.time_limit_s)
                seconds = time.perf_counter() - start
                print(
                    f"| {n} | {dname} | {cname} | {result.transit_columns:,} "
                    f"| {result.max_utilisation:.4f} | {result.lower_bound:.4f} "
                    f"| {result.direct_share:.4f} | {result.mean_block_hops:.4f} "
                    f"| {result.status} | {result.rounds} | {seconds:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
